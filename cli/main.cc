// ki: the command-line client of the ki library.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <map>

#include "command.h"
#include "store_open.h"
#include "help_pages.h"
#include "usage.h"
#include "ki/human.h"
#include "ki/catalog.h"
#include "ki/sign.h"

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

Result<std::string> StoreDirectory(const GlobalOptions& g) {
  std::string dir = g.store;
  if (dir.empty()) {
    if (const char* e = std::getenv("KI_STORE"); e && *e) dir = e;
  }
  if (dir.empty()) return Store::Discover(".");
  // --store names the directory holding .ki, or the .ki directory itself.
  // The process's Env, the one every store the CLI opens uses (StoreOptions'
  // null env): the CLI chooses no other.
  Env* env = Env::Default();
  if (env->IsDirectory(dir + "/.ki")) return dir + "/.ki";
  if (env->Exists(dir + "/FORMAT")) return dir;
  return Status::IOError("no ki store at " + dir + " (run `ki init " + dir + "`)");
}

Result<StoreOptions> CliStoreOptions(OpenMode mode) {
  KI_ASSIGN_OR_RETURN(StoreOptions opts, StoreOptionsFromEnvironment());
  // Every store ki writes keeps its comparison groups and its attestation
  // index (derived indexes).
  catalog::RegisterGroupIndex();
  RegisterAttestationIndex();
  // A command that only reads shows one state of the store, even while
  // another ki commits (a run beside its rank from the same commit).
  opts.snapshot_reads = mode == OpenMode::kReadOnly;
  return opts;
}

Result<std::unique_ptr<Store>> OpenStore(const GlobalOptions& g, OpenMode mode) {
  KI_ASSIGN_OR_RETURN(std::string ki_dir, StoreDirectory(g));
  KI_ASSIGN_OR_RETURN(StoreOptions opts, CliStoreOptions(mode));
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

std::string FormatNs(double ns) { return human::Duration(ns); }

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


namespace {

// `ki --help` lists the commands in groups, in the order a new user meets
// them (git's help does the same); a command not listed here comes after
// them, by its CommandSpec::order, under "Other commands".
struct Placement {
  const char* name;
  const char* group;
};
constexpr Placement kPlacements[] = {
    {"init", "Start a store"},      {"add", "Start a store"},         {"import", "Start a store"},
    {"ls", "Look at objects"},      {"show", "Look at objects"},      {"cat", "Look at objects"},
    {"resolve", "Look at objects"}, {"diff", "Look at objects"},      {"tag", "Look at objects"},
    {"rank", "Compare runs"},       {"records", "Compare runs"},      {"run", "Run kernels"},
    {"rerun", "Run kernels"},       {"verify", "Check and sign"},     {"audit", "Check and sign"},
    {"sign", "Check and sign"},     {"key", "Check and sign"},        {"trust", "Check and sign"},
    {"remote", "Share"},            {"push", "Share"},                {"pull", "Share"},
    {"export", "Share"},            {"gc", "Maintain the store"},
};

int OrderOf(const CommandSpec& spec) {
  for (size_t i = 0; i < std::size(kPlacements); ++i)
    if (std::string_view(kPlacements[i].name) == spec.name) return static_cast<int>(i);
  return 1000 + spec.order;
}

std::string GroupOf(std::string_view name) {
  for (const auto& p : kPlacements)
    if (name == p.name) return p.group;
  return "Other commands";
}

// The subcommands of `app` that were named on the command line, outermost
// first ("key", "generate"): where a parse error arose.
std::vector<CLI::App*> ParsedPath(CLI::App& app) {
  std::vector<CLI::App*> path;
  CLI::App* cur = &app;
  while (true) {
    auto subs = cur->get_subcommands([](CLI::App* s) { return s->parsed() > 0; });
    if (subs.empty()) break;
    cur = subs.front();
    path.push_back(cur);
  }
  return path;
}

std::string PathName(const std::vector<CLI::App*>& path) {
  std::string name;
  for (CLI::App* a : path) name += (name.empty() ? "" : " ") + a->get_name();
  return name;
}

std::vector<std::string> SubcommandNames(CLI::App& app) {
  std::vector<std::string> names;
  for (CLI::App* s : app.get_subcommands([](CLI::App*) { return true; })) names.push_back(s->get_name());
  return names;
}

int UsageError(const std::string& what, const std::string& where) {
  std::cerr << "ki: error: " << what << " (see `ki " << (where.empty() ? "" : where + " ") << "--help`)\n";
  return 2;
}

// `ki help [CMD [SUB]]`: the --help page of ki or of that command.
int Help(CLI::App& app, const std::vector<std::string>& topic) {
  CLI::App* cur = &app;
  std::string where;
  for (const auto& word : topic) {
    auto subs = cur->get_subcommands([&](CLI::App* s) { return s->get_name() == word; });
    if (subs.empty() || word == "help") {
      std::cerr << "ki: error: " << UnknownCommandMessage(word, where, SubcommandNames(*cur)) << "\n";
      return 2;
    }
    cur = subs.front();
    where += (where.empty() ? "" : " ") + word;
  }
  std::cout << HelpPage(*cur);
  return 0;
}

}  // namespace
}  // namespace ki::cli

int main(int argc, char** argv) {
  using namespace ki::cli;
  CLI::App app{"ki: a content-addressed store for GPU-kernel benchmark evidence"};
  app.set_version_flag("--version", std::string("ki ") + KI_VERSION);
  app.require_subcommand(1);
  app.formatter(HelpFormatter());
  app.fallthrough();
  GlobalOptions global;
  app.add_option("--store", global.store, "store directory (default: $KI_STORE, else the nearest .ki upward)");

  std::vector<CommandSpec> specs = Commands();
  std::stable_sort(specs.begin(), specs.end(), [](const auto& a, const auto& b) {
    return std::pair(OrderOf(a), std::string_view(a.name)) < std::pair(OrderOf(b), std::string_view(b.name));
  });
  // Setting up all ~25 subcommands' options costs about a millisecond, a
  // tenth of a `ki show`. When the command is recognisable from argv, only
  // it is set up; otherwise (help, a typo, no command) all are, so that
  // CLI11's help and errors list every command.
  const std::string chosen = CommandName(argc, argv);
  const bool known = std::any_of(specs.begin(), specs.end(), [&](const auto& s) { return chosen == s.name; });
  // An unknown command is refused before anything is parsed, with the
  // nearest names (`ki shwo`: did you mean show?).
  std::vector<std::string> names;
  for (const auto& spec : specs) names.push_back(spec.name);
  names.push_back("help");
  // Hidden commands over the whole command tree (cli/help_pages.h).
  const bool hidden = chosen == "__manpages" || chosen == "__completion" || chosen == "__complete";
  if (!chosen.empty() && !known && chosen != "help" && !hidden) {
    std::cerr << "ki: error: " << UnknownCommandMessage(chosen, "", names) << "\n";
    return 2;
  }
  std::map<CLI::App*, RunFn> runs;
  for (const auto& spec : specs) {
    if (known && chosen != spec.name) continue;  // `ki help` sets up every command
    if (known && spec.big_heap_min_args >= 0 && argc > spec.big_heap_min_args) UseBigHeap(argv);
    CLI::App* sub = app.add_subcommand(spec.name, spec.help);
    runs[sub] = spec.setup(sub, &global);
    // After setup: a subcommand copies its parent's group when it is added.
    sub->group(GroupOf(spec.name));
  }

  if (hidden) {
    // Their arguments are not parsed by CLI11: `__complete` gets the words
    // of a command line being typed, options included.
    std::vector<std::string> args;
    bool after = false;
    for (int i = 1; i < argc; ++i) {
      if (after) args.push_back(argv[i]);
      else if (argv[i] == chosen) after = true;
    }
    ki::Result<int> r = chosen == "__complete"    ? PrintCompletions(app, args, global)
                        : chosen == "__manpages"  ? (args.size() == 1 ? WriteManPages(app, args[0])
                                                                      : ki::Status::Usage("__manpages DIR"))
                        : args.size() == 1 || args.size() == 2
                            ? PrintCompletionScript(args[0], args.size() == 2 ? args[1] : "")
                            : ki::Status::Usage("__completion bash|zsh [FILE]");
    std::cout.flush();
    if (r.ok()) return *r;
    std::cerr << "ki: error: " << r.status().message() << "\n";
    return r.status().ExitCode();
  }

  std::vector<std::string> help_topic;
  CLI::App* help = app.add_subcommand("help", "Show the help of ki or of one command: ki help [CMD [SUBCMD]]");
  help->add_option("command", help_topic, "a command, and a subcommand of it");
  help->group("Help");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // Help and version are successes, printed as CLI11 prints them.
    if (e.get_exit_code() == 0) return app.exit(e);
    // Every other parse error is usage (2), in ki's voice.
    std::vector<CLI::App*> path = ParsedPath(app);
    const std::string where = PathName(path);
    CLI::App* at = path.empty() ? &app : path.back();
    const std::string message = e.what();
    std::vector<std::string> subs = SubcommandNames(*at);
    if (!path.empty() && !subs.empty() && message == "A subcommand is required") {
      // `ki key` or `ki key bogus`: name the subcommands.
      std::string word;
      for (int i = 1; i < argc; ++i)
        if (argv[i] == at->get_name() && i + 1 < argc && argv[i + 1][0] != '-') word = argv[i + 1];
      if (!word.empty()) {
        std::cerr << "ki: error: " << UnknownCommandMessage(word, where, subs) << "\n";
        return 2;
      }
      std::string list;
      for (const auto& n : subs) list += (list.empty() ? "" : ", ") + n;
      return UsageError("ki " + where + " needs a subcommand: " + list, where);
    }
    if (path.empty() && message == "A subcommand is required") return UsageError("a command is required", "");
    return UsageError(RephraseParseError(message), where);
  }
  if (help->parsed()) return Help(app, help_topic);

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
