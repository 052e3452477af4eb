// ki report DIR [REF...] [--json]: a static web site of the store.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <iostream>

#include "command.h"
#include "ki/human.h"
#include "ki/report.h"

namespace ki::cli {
namespace {

struct ReportCliOptions {
  std::string dir;
  std::vector<std::string> refs;
  bool json = false;
};

// A bar on standard error when it is a terminal; nothing otherwise (the
// summary line says what was done).
class ReportProgressLine {
 public:
  ReportProgressLine() : tty_(::isatty(STDERR_FILENO) == 1) {}
  ~ReportProgressLine() { Done(); }
  void Update(const report::ReportProgress& p) {
    if (!tty_ || p.total == 0) return;
    const int pct = int(100 * p.done / p.total), width = 30, filled = width * pct / 100;
    std::fprintf(stderr, "\r%-9s [%s%s] %3d%%  %llu/%llu", std::string(p.phase).c_str(),
                 std::string(filled, '#').c_str(), std::string(width - filled, ' ').c_str(), pct,
                 (unsigned long long)p.done, (unsigned long long)p.total);
    std::fflush(stderr);
    drawn_ = true;
  }
  void Done() {
    if (drawn_) std::fprintf(stderr, "\r\033[K");
    drawn_ = false;
  }

 private:
  bool tty_;
  bool drawn_ = false;
};

RunFn SetupReport(CLI::App* sub, GlobalOptions* g) {
  auto o = std::make_shared<ReportCliOptions>();
  sub->add_option("dir", o->dir, "directory of the site (created; a directory ki report wrote is brought up to date)")
      ->required();
  sub->add_option("refs", o->refs, "comparison groups or runs to show (default: the whole store)");
  sub->add_flag("--json", o->json, "print a JSON summary");
  return [o, g]() -> Result<int> {
    KI_ASSIGN_OR_RETURN(auto store, OpenStore(*g, OpenMode::kReadOnly));
    report::ReportOptions opts;
    opts.refs = o->refs;
    if (const char* p = std::getenv("KI_CHARTJS"); p && *p) opts.chartjs_path = p;
    // This binary's digest: a rebuilt ki renders every page again. (The
    // process's Env: the file is the process's own.)
    if (auto exe = Env::Default()->ReadFile("/proc/self/exe", 1ull << 30); exe.ok()) {
      Sha256 h;
      h.Update(*exe);
      opts.renderer += " " + h.Finish().str();
    }
    ReportProgressLine progress;
    opts.progress = [&](const report::ReportProgress& p) { progress.Update(p); };
    auto summary = report::WriteReport(*store, o->dir, opts);
    progress.Done();
    KI_RETURN_IF_ERROR(summary.status());
    const report::ReportSummary& s = *summary;
    if (o->json) {
      PrintJson({{"dir", s.dir},
                 {"index", s.index},
                 {"pages", s.pages},
                 {"written", s.written},
                 {"unchanged", s.unchanged},
                 {"kept", s.kept},
                 {"removed", s.removed},
                 {"bytes", s.bytes},
                 {"groups", s.groups},
                 {"runs", s.runs},
                 {"operations", s.operations}});
      return 0;
    }
    std::cout << "report of " << s.groups << " groups, " << s.runs << " runs, " << s.operations << " operations: "
              << s.pages << " pages (" << human::Bytes(s.bytes) << "), " << s.written << " written, " << s.unchanged
              << " unchanged, " << s.removed << " removed\n"
              << "open " << s.index << "\n";
    return 0;
  };
}

KI_REGISTER_COMMAND(report, {"report", "Write a static web site of the store (index, groups, runs, plots)", SetupReport, 75,
                            /*big_heap_min_args=*/0});

}  // namespace
}  // namespace ki::cli
