// ki export FORMAT ...: write the store out in another tool's format.
//
// One format so far, `kernelindex` (src/catalog/export.cc): the runs and
// what they reach as a KernelIndex catalog export that `ki import
// kernelindex` reads back with every key equal.
#include <chrono>
#include <cstdio>
#include <iostream>

#include "command.h"
#include "ki/export.h"
#include "ki/human.h"

namespace ki::cli {
namespace {

struct ExportCliOptions {
  std::string file;
  std::vector<std::string> refs;
  bool json = false;
};

Json SummaryJson(const catalog::ExportReport& r, double seconds) {
  return {{"file", r.file},
          {"runs", r.runs},
          {"servingRuns", r.serving_runs},
          {"lines", r.lines},
          {"bytes", r.bytes},
          {"textBytes", r.text_bytes},
          {"compressed", r.compressed},
          {"content", r.content.str()},
          {"rows", r.rows},
          {"runsWithoutFacts", r.runs_without_facts},
          {"artifactsHeld", r.artifacts_held},
          {"leftOut", r.left_out},
          {"seconds", seconds}};
}

std::string SummaryText(const catalog::ExportReport& r, double seconds) {
  char secs[32];
  std::snprintf(secs, sizeof secs, "%.2f s", seconds);
  std::string out = "exported " + std::to_string(r.runs) + " benchmark runs and " + std::to_string(r.serving_runs) +
                    " serving runs: " + std::to_string(r.lines) + " lines, " + human::Bytes(r.bytes);
  if (r.compressed) out += " (zstd; " + human::Bytes(r.text_bytes) + " of JSON lines)";
  out += " to " + r.file + " in " + secs + "\n";
  out += "  content " + r.content.str() + "\n";
  if (r.runs_without_facts)
    out += "  " + std::to_string(r.runs_without_facts) +
           " runs without catalog facts written as published records (docs/format.md, \"Catalog export\")\n";
  if (r.artifacts_held)
    out += "  " + std::to_string(r.artifacts_held) + " artifacts held here are listed without their bytes\n";
  for (const auto& [kind, n] : r.left_out)
    out += "  left out: " + std::to_string(n) + " " + kind + " (no run exported names it; the format has no table for it)\n";
  return out;
}

RunFn SetupExportKernelIndex(CLI::App* sub, GlobalOptions* g) {
  auto o = std::make_shared<ExportCliOptions>();
  sub->add_option("file", o->file, "where to write: .jsonl, .jsonl.zst (zstd), or - for standard output")->required();
  sub->add_option("refs", o->refs, "runs or comparison groups to export (default: the whole store)");
  sub->add_flag("--json", o->json, "print the summary as JSON");
  return [o, g]() -> Result<int> {
    const auto t0 = std::chrono::steady_clock::now();
    KI_ASSIGN_OR_RETURN(auto store, OpenStore(*g, OpenMode::kReadOnly));
    catalog::ExportOptions opts;
    opts.refs = o->refs;
    auto write = [&]() -> Result<catalog::ExportReport> {
      if (o->file != "-") return catalog::ExportKernelIndexFile(*store, o->file, opts);
      return catalog::ExportKernelIndex(*store, opts, [](std::string_view piece) -> Status {
        if (std::fwrite(piece.data(), 1, piece.size(), stdout) != piece.size() || std::fflush(stdout) != 0) {
          return Status::IOError("write to standard output failed");
        }
        return Status::OK();
      });
    };
    KI_ASSIGN_OR_RETURN(catalog::ExportReport report, write());
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    // With `-` the export owns standard output; the summary goes beside it.
    std::ostream& out = o->file == "-" ? std::cerr : std::cout;
    if (o->json) {
      out << SummaryJson(report, secs).dump(2) << "\n";
    } else {
      out << SummaryText(report, secs);
    }
    return 0;
  };
}

// Formats `ki export` writes. A new one is a setup function and a line here.
struct Exporter {
  const char* name;
  const char* help;
  RunFn (*setup)(CLI::App*, GlobalOptions*);
};
const Exporter kExporters[] = {
    {"kernelindex", "Write the store's runs as a KernelIndex catalog export (JSON lines, zstd for .zst)",
     SetupExportKernelIndex},
};

RunFn SetupExport(CLI::App* sub, GlobalOptions* g) {
  sub->require_subcommand(1);
  auto runs = std::make_shared<std::vector<std::pair<CLI::App*, RunFn>>>();
  for (const auto& x : kExporters) {
    CLI::App* s = sub->add_subcommand(x.name, x.help);
    runs->emplace_back(s, x.setup(s, g));
  }
  return [runs]() -> Result<int> {
    for (auto& [s, run] : *runs)
      if (s->parsed()) return run();
    return Status::Usage("ki export: name a format (" + std::string(kExporters[0].name) + ")");
  };
}

KI_REGISTER_COMMAND(export, {"export", "Write the store's runs in another tool's format (KernelIndex)", SetupExport, 95,
                            /*big_heap_min_args=*/0});

}  // namespace
}  // namespace ki::cli
