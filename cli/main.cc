// ki: the command-line client of the ki library.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <map>

#include "command.h"

namespace ki::cli {

namespace {
std::vector<CommandSpec>& Registry() {
  static std::vector<CommandSpec> r;
  return r;
}
std::vector<std::pair<int, ShowSection>>& SectionRegistry() {
  static std::vector<std::pair<int, ShowSection>> r;
  return r;
}
std::vector<ShowJsonField>& JsonFieldRegistry() {
  static std::vector<ShowJsonField> r;
  return r;
}
}  // namespace

int RegisterCommand(CommandSpec spec) {
  Registry().push_back(std::move(spec));
  return 0;
}
const std::vector<CommandSpec>& Commands() { return Registry(); }

int RegisterShowSection(int order, ShowSection fn) {
  SectionRegistry().emplace_back(order, std::move(fn));
  std::stable_sort(SectionRegistry().begin(), SectionRegistry().end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  return 0;
}
const std::vector<std::pair<int, ShowSection>>& ShowSections() { return SectionRegistry(); }
int RegisterShowJsonField(ShowJsonField fn) {
  JsonFieldRegistry().push_back(std::move(fn));
  return 0;
}
const std::vector<ShowJsonField>& ShowJsonFields() { return JsonFieldRegistry(); }

Result<std::unique_ptr<Store>> OpenStore(const GlobalOptions& g, OpenMode mode) {
  std::string dir = g.store;
  if (dir.empty()) {
    if (const char* e = std::getenv("KI_STORE"); e && *e) dir = e;
  }
  std::string ki_dir;
  if (!dir.empty()) {
    // --store names the directory holding .ki, or the .ki directory itself.
    Env* env = Env::Default();
    if (env->IsDirectory(dir + "/.ki")) {
      ki_dir = dir + "/.ki";
    } else if (env->Exists(dir + "/FORMAT")) {
      ki_dir = dir;
    } else {
      return Status::IOError("no ki store at " + dir + " (run `ki init " + dir + "`)");
    }
  } else {
    KI_ASSIGN_OR_RETURN(ki_dir, Store::Discover("."));
  }
  KI_ASSIGN_OR_RETURN(StoreOptions opts, StoreOptionsFromEnvironment());
  // A command that only reads shows one state of the store, even while
  // another ki commits (a run beside its rank from the same commit).
  opts.snapshot_reads = mode == OpenMode::kReadOnly;
  return Store::Open(ki_dir, mode, opts);
}

Result<StoreOptions> StoreOptionsFromEnvironment() {
  StoreOptions opts;
  const char* v = std::getenv("KI_LMDB_MAP_SIZE");
  if (v == nullptr || *v == '\0') return opts;
  char* end = nullptr;
  unsigned long long n = std::strtoull(v, &end, 10);
  int shift = 0;
  if (*end == 'K' || *end == 'k') shift = 10;
  else if (*end == 'M' || *end == 'm') shift = 20;
  else if (*end == 'G' || *end == 'g') shift = 30;
  if (shift) ++end;
  if (end == v || *end != '\0' || n == 0 || n > (uint64_t(1) << (50 - shift))) {
    return Status::InvalidInput(std::string("KI_LMDB_MAP_SIZE: '") + v + "' is not a size (bytes, or a number with K, M or G)");
  }
  opts.map_size = uint64_t(n) << shift;
  return opts;
}

bool StdoutIsTerminal() { return ::isatty(STDOUT_FILENO) == 1; }

std::string FormatNs(double ns) {
  char buf[64];
  if (ns < 1e3) {
    std::snprintf(buf, sizeof buf, "%.0f ns", ns);
  } else if (ns < 1e6) {
    std::snprintf(buf, sizeof buf, "%.1f µs", ns / 1e3);
  } else if (ns < 1e9) {
    std::snprintf(buf, sizeof buf, "%.2f ms", ns / 1e6);
  } else {
    std::snprintf(buf, sizeof buf, "%.3f s", ns / 1e9);
  }
  return buf;
}

std::string Short(const Digest& d) { return d.str().substr(0, 23) + "…"; }

void PrintJson(const Json& j) { std::cout << j.dump(2, ' ', false, Json::error_handler_t::replace) << "\n"; }

// The subcommand named on the command line: the first argument that is
// neither a global option nor the value of one. Empty when there is none.
std::string CommandName(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    std::string_view a = argv[i];
    if (a == "--store") {
      ++i;
      continue;
    }
    if (a == "--") return "";
    if (!a.empty() && a[0] == '-') continue;
    return std::string(a);
  }
  return "";
}

}  // namespace ki::cli

int main(int argc, char** argv) {
  using namespace ki::cli;
  CLI::App app{"ki: a content-addressed store for GPU-kernel benchmark evidence"};
  app.set_version_flag("--version", std::string("ki ") + KI_VERSION);
  app.require_subcommand(1);
  app.fallthrough();
  GlobalOptions global;
  app.add_option("--store", global.store, "store directory (default: $KI_STORE, else the nearest .ki upward)");

  std::vector<CommandSpec> specs = Commands();
  std::stable_sort(specs.begin(), specs.end(), [](const auto& a, const auto& b) { return a.order < b.order; });
  // Setting up all ~25 subcommands' options costs about a millisecond, a
  // tenth of a `ki show`. When the command is recognisable from argv, only
  // it is set up; otherwise (help, a typo, no command) all are, so that
  // CLI11's help and errors list every command.
  const std::string chosen = CommandName(argc, argv);
  const bool known = std::any_of(specs.begin(), specs.end(), [&](const auto& s) { return chosen == s.name; });
  std::map<CLI::App*, RunFn> runs;
  for (const auto& spec : specs) {
    if (known && chosen != spec.name) continue;
    if (known && spec.big_heap_min_args >= 0 && argc > spec.big_heap_min_args) UseHugePageHeap(argv);
    CLI::App* sub = app.add_subcommand(spec.name, spec.help);
    runs[sub] = spec.setup(sub, &global);
  }

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int rc = app.exit(e);
    // Help and version are successes; every other parse error is usage (2).
    return rc == 0 ? 0 : 2;
  }

  for (auto& [sub, run] : runs) {
    if (!sub->parsed()) continue;
    try {
      ki::Result<int> r = run();
      std::cout.flush();
      if (r.ok()) return *r;
      std::cerr << "ki: error: " << r.status().message() << "\n";
      return r.status().ExitCode();
    } catch (const std::exception& e) {
      // The outermost catch: library code reports with Status, so reaching
      // here is a bug or an exhausted resource.
      std::cerr << "ki: error: " << e.what() << "\n";
      return 5;
    }
  }
  return 2;
}
