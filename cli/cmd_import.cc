// ki import SOURCE ...: bring a published catalog into the store.
//
// Each source is one entry of kImporters below (its options and its run
// step); adding a source is adding an entry.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <iostream>

#include "command.h"
#include "ki/catalog.h"
#include "ki/flashinfer.h"

namespace ki::cli {
namespace {

// --- progress on standard error: a bar on a terminal, plain lines otherwise.
class ImportProgressLine {
 public:
  ImportProgressLine() : tty_(::isatty(STDERR_FILENO) == 1) {}
  ~ImportProgressLine() { Done(); }
  void Update(const catalog::ImportProgress& p) {
    if (p.lines_total == 0) return;
    int pct = int(100 * p.lines_done / p.lines_total);
    if (tty_) {
      int width = 30, filled = width * pct / 100;
      std::fprintf(stderr, "\r%-9s [%s%s] %3d%%  %llu/%llu lines", std::string(p.phase).c_str(),
                   std::string(filled, '#').c_str(), std::string(width - filled, ' ').c_str(), pct,
                   (unsigned long long)p.lines_done, (unsigned long long)p.lines_total);
      std::fflush(stderr);
      drawn_ = true;
    } else if (pct >= next_pct_ || p.phase != last_phase_) {
      std::fprintf(stderr, "import: %s %llu/%llu lines (%d%%)\n", std::string(p.phase).c_str(),
                   (unsigned long long)p.lines_done, (unsigned long long)p.lines_total, pct);
      next_pct_ = (pct / 25 + 1) * 25;
      last_phase_ = std::string(p.phase);
    }
  }
  void Done() {
    if (tty_ && drawn_) std::fprintf(stderr, "\r\033[K");
    drawn_ = false;
  }

 private:
  bool tty_;
  bool drawn_ = false;
  int next_pct_ = 0;
  std::string last_phase_;
};

std::string WithCommas(uint64_t n) {
  // Built forwards (not by insert(), which GCC 12 misreads as an
  // overlapping memcpy under -Wrestrict).
  const std::string digits = std::to_string(n);
  std::string s;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) s.push_back(',');
    s.push_back(digits[i]);
  }
  return s;
}

Json ReportJson(const catalog::ImportReport& r, double seconds) {
  Json kinds = Json::object();
  for (const auto& [k, c] : r.kinds) kinds[k] = {{"new", c.added}, {"existing", c.existing}};
  Json mism = Json::array();
  for (const auto& m : r.mismatches)
    mism.push_back({{"table", m.table}, {"rowId", m.row_id}, {"field", m.field}, {"stored", m.stored},
                    {"computed", m.computed}});
  Json malformed = Json::array();
  for (const auto& m : r.malformed)
    malformed.push_back({{"line", m.line}, {"table", m.table}, {"rowId", m.row_id}, {"field", m.field},
                         {"message", m.message}});
  return {{"source", r.source},
          {"content", r.content.str()},
          {"lines", r.lines},
          {"rows", r.rows},
          {"kinds", kinds},
          {"missingArtifacts", {{"new", r.absent.added}, {"existing", r.absent.existing}}},
          {"keysChecked", r.keys_checked},
          {"cohorts", r.cohorts},
          {"servingCohorts", r.serving_cohorts},
          {"recordEvents", r.record_events},
          {"recordEventsReproduced", r.record_events_reproduced},
          {"recordEventsUnchecked", r.record_events_unchecked},
          {"mismatches", mism},
          {"malformed", malformed},
          {"stored", r.stored},
          {"seconds", seconds}};
}

void PrintReport(const catalog::ImportReport& r, double seconds) {
  std::string out;
  for (const auto& m : r.malformed)
    out += "malformed\t" + r.source + ":" + std::to_string(m.line) + "\t" + m.field + "\t" + m.message + "\n";
  for (const auto& m : r.mismatches) {
    out += "mismatch\t" + m.table + "\t" + m.row_id + "\t" + m.field + "\tstored " + m.stored + "\tcomputed " +
           m.computed + "\n";
  }
  char buf[256];
  std::snprintf(buf, sizeof buf, "%s: %s lines in %.2f s\n", r.source.c_str(), WithCommas(r.lines).c_str(), seconds);
  out += buf;
  std::snprintf(buf, sizeof buf, "  %-24s %8s %9s\n", "kind", "new", "existing");
  out += buf;
  for (const auto& [k, c] : r.kinds) {
    std::snprintf(buf, sizeof buf, "  %-24s %8s %9s\n", k.c_str(), WithCommas(c.added).c_str(),
                  WithCommas(c.existing).c_str());
    out += buf;
  }
  std::snprintf(buf, sizeof buf, "  %-24s %8s %9s\n", "missing artifacts", WithCommas(r.absent.added).c_str(),
                WithCommas(r.absent.existing).c_str());
  out += buf;
  out += "  keys recomputed: " + WithCommas(r.keys_checked) + ", mismatches: " + WithCommas(r.mismatches.size()) + "\n";
  if (!r.malformed.empty()) out += "  malformed lines: " + WithCommas(r.malformed.size()) + "\n";
  out += "  comparison groups: " + WithCommas(r.cohorts) + " kernel, " +
         WithCommas(r.serving_cohorts) + " serving\n";
  out += "  record events reproduced: " + WithCommas(r.record_events_reproduced) + " of " +
         WithCommas(r.record_events) +
         (r.record_events_unchecked ? " (" + WithCommas(r.record_events_unchecked) + " name runs not in the store)" : "") +
         "\n";
  out += r.stored ? "  stored\n" : "  nothing stored\n";
  std::cout << out;
}

// --- ki import kernelindex FILE

// A KernelIndex manifest (or bundle) given where an export goes would be
// read line by line and refused as that many malformed lines; say what it
// is instead. An export is JSON lines, so a whole input that parses as one
// document with apiVersion and kind (or a bundle's run) is a manifest.
Status RefuseManifest(std::string_view text, const std::string& file) {
  auto doc = ParseDocument(text, DocFormat::kAuto, file);
  if (!doc.ok() || !doc->is_object()) return Status::OK();
  const bool manifest = doc->contains("apiVersion") && doc->contains("kind");
  const bool bundle = doc->contains("run") && (*doc)["run"].is_object() && (*doc)["run"].contains("kind");
  if (!manifest && !bundle) return Status::OK();
  return Status::InvalidInput(file + " is a KernelIndex " + (manifest ? "manifest" : "bundle") +
                              ", not a catalog export: use `ki add " + (file == "-" ? std::string("-") : file) + "`");
}
struct KernelIndexOptions {
  std::string file;
  bool keep_going = false;
  bool json = false;
  int threads = 2;
};

RunFn SetupImportKernelIndex(CLI::App* sub, GlobalOptions* g) {
  auto o = std::make_shared<KernelIndexOptions>();
  sub->add_option("file", o->file, "catalog export: .jsonl.zst, .jsonl, or - for standard input")->required();
  sub->add_flag("--keep-going", o->keep_going, "store the export even when stored digests or keys do not recompute");
  sub->add_flag("--json", o->json, "print the summary as JSON");
  sub->add_option("--threads", o->threads, "parsing threads (default 2)")->check(CLI::Range(1, 64));
  return [o, g]() -> Result<int> {
    auto t0 = std::chrono::steady_clock::now();
    KI_ASSIGN_OR_RETURN(auto store, OpenStore(*g, OpenMode::kReadWrite));
    KI_ASSIGN_OR_RETURN(std::string text, catalog::ReadExport(o->file));
    KI_RETURN_IF_ERROR(RefuseManifest(text, o->file));
    ImportProgressLine progress;
    catalog::ImportOptions opts;
    opts.keep_going = o->keep_going;
    opts.threads = o->threads;
    opts.progress = [&](const catalog::ImportProgress& p) { progress.Update(p); };
    KI_ASSIGN_OR_RETURN(auto report, catalog::ImportKernelIndex(*store, text, o->file, opts));
    progress.Done();
    double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (o->json) PrintJson(ReportJson(report, secs));
    else PrintReport(report, secs);
    if (report.mismatches.empty() && report.malformed.empty()) return 0;
    if (!report.stored) {
      std::string what;
      if (!report.malformed.empty())
        what = std::to_string(report.malformed.size()) + " malformed line" + (report.malformed.size() == 1 ? "" : "s") +
               " (first: " + report.malformed[0].message + ")";
      if (!report.mismatches.empty())
        what += std::string(what.empty() ? "" : " and ") + std::to_string(report.mismatches.size()) +
                " stored digests or keys that do not recompute";
      return Status::InvalidInput(what + "; nothing was stored (--keep-going stores the rest anyway)");
    }
    return 1;  // stored with --keep-going, but a check found faults
  };
}

// --- ki import flashinfer-bench DIR (src/fib)
RunFn SetupFlashinferBench(CLI::App* sub, GlobalOptions* g) {
  auto dir = std::make_shared<std::string>();
  auto json = std::make_shared<bool>(false);
  sub->add_option("dir", *dir, "dataset root (definitions/, workloads/, traces/)")->required();
  sub->add_flag("--json", *json, "print the summary as JSON");
  return [dir, json, g]() -> Result<int> {
    KI_ASSIGN_OR_RETURN(auto store, OpenStore(*g, OpenMode::kReadWrite));
    KI_ASSIGN_OR_RETURN(auto r, fib::ImportDataset(*store, *dir));
    Json ops = Json::object();
    for (const auto& [name, d] : r.operations) ops[name] = d.str();
    if (*json) {
      PrintJson({{"root", r.root}, {"definitions", r.definitions}, {"workloadLines", r.workloads},
                 {"traceLines", r.traces}, {"operations", {{"new", r.operations_new}, {"existing", r.operations_existing}}},
                 {"workloads", {{"new", r.workloads_new}, {"existing", r.workloads_existing}}},
                 {"missingInputs", r.missing_inputs}, {"skippedLines", r.skipped_lines},
                 {"solutions", r.solutions}, {"skippedSolutions", r.skipped_solutions},
                 {"implementations", {{"new", r.implementations_new}, {"existing", r.implementations_existing}}},
                 {"tracesLinked", r.traces_linked}, {"operationDigests", ops}});
      return 0;
    }
    std::string out = r.root + ": " + std::to_string(r.definitions) + " definitions, " + std::to_string(r.workloads) +
                      " workload lines, " + std::to_string(r.traces) + " trace lines\n";
    out += "  OperationSpec            " + std::to_string(r.operations_new) + " new, " +
           std::to_string(r.operations_existing) + " existing\n";
    out += "  WorkloadCase             " + std::to_string(r.workloads_new) + " new, " +
           std::to_string(r.workloads_existing) + " existing\n";
    out += "  missing input files      " + std::to_string(r.missing_inputs) +
           " (safetensors not in the tree; ki run generates these inputs)\n";
    if (r.skipped_lines) out += "  skipped lines            " + std::to_string(r.skipped_lines) + " (definition not in the tree)\n";
    out += "  ImplementationRevision   " + std::to_string(r.implementations_new) + " new, " +
           std::to_string(r.implementations_existing) + " existing (" + std::to_string(r.solutions) +
           " solutions, and each definition's reference)\n";
    if (r.skipped_solutions)
      out += "  skipped solutions        " + std::to_string(r.skipped_solutions) + " (definition not in the tree)\n";
    if (r.traces) out += "  traces linked            " + std::to_string(r.traces_linked) + " of " + std::to_string(r.traces) +
                         " lines name a solution ki has\n";
    for (const auto& [name, d] : r.operations) out += "  " + d.str() + "  " + name + "\n";
    std::cout << out;
    return 0;
  };
}

// Sources `ki import` knows. A new one is a setup function and a line here.
struct Importer {
  const char* name;
  const char* help;
  RunFn (*setup)(CLI::App*, GlobalOptions*);
};
const Importer kImporters[] = {
    {"kernelindex", "Import a KernelIndex catalog export (JSON lines, plain or zstd)", SetupImportKernelIndex},
    {"flashinfer-bench", "Import a flashinfer-bench dataset: definitions, workloads, solutions, traces", SetupFlashinferBench},
};

RunFn SetupImport(CLI::App* sub, GlobalOptions* g) {
  sub->require_subcommand(1);
  auto runs = std::make_shared<std::vector<std::pair<CLI::App*, RunFn>>>();
  for (const auto& imp : kImporters) {
    CLI::App* s = sub->add_subcommand(imp.name, imp.help);
    runs->emplace_back(s, imp.setup(s, g));
  }
  return [runs]() -> Result<int> {
    for (auto& [s, run] : *runs)
      if (s->parsed()) return run();
    return Status::Usage("ki import: name a source (" + std::string(kImporters[0].name) + ")");
  };
}

KI_REGISTER_COMMAND(import, {"import", "Import a published catalog into the store", SetupImport, 60,
                             /*big_heap_min_args=*/0});

}  // namespace
}  // namespace ki::cli
