// Report: a static web site of a store (`ki report DIR`).
//
// The site shows what the catalog already answers (comparison groups,
// ranking-v1, record histories, evidence levels) as pages a browser opens
// from `file://` or any static host with no network: an index with
// client-side filtering, one page per comparison group (its ranking table
// and a plot of every ranked value with its interval), one per run (the
// sections of KernelIndex's run page), one per operation (value against
// workload size, one line per implementation), one per series (a run's
// history: one implementation's runs in a group over time, with their
// change points, as `ki log` lists them) and one per re-run (its verdict and
// both runs' raw samples side by side). Plots are drawn by Chart.js
// (Debian's libjs-chart.js), copied into the site; the pages carry their
// data as JSON inside the page, so nothing is fetched.
//
// Every string taken from a manifest is escaped for the context it lands
// in (HTML text, attribute, or JSON inside a script element); the pages set
// a Content-Security-Policy that runs only the site's own script files.
//
// Writing is incremental: DIR keeps a list of the pages it holds and the
// SHA-256 of each (`.ki-report`, docs/format.md "Report page list"; not a ki
// object), and a page whose bytes are unchanged is not written again. A run
// page also records a digest of its inputs (its place in its group, facts,
// attestations, trust, the presence of what it references), and a group,
// operation, series, protocol or environment page a digest of the entries
// it shows: when they are unchanged it is not rendered at all. Pages the list names that the store
// no longer gives are removed.
//
// Thread-safety: WriteReport reads the store from its calling thread and
// ReportOptions::threads - 1 threads of its own (the Store's read calls are
// safe from several threads); one WriteReport per DIR at a time.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "ki/env.h"
#include "ki/status.h"
#include "ki/store.h"

namespace ki::report {

// Where Debian's libjs-chart.js puts the one file the site needs.
inline constexpr std::string_view kChartJsPath = "/usr/share/javascript/chart.js/chart.min.js";

struct ReportProgress {
  std::string_view phase;  // "reading", "rendering", "writing"
  uint64_t done = 0, total = 0;
};

struct ReportOptions {
  Env* env = nullptr;  // nullptr: the store's (EnvOf, ki/store_env.h)
  // Groups or runs to show (REFs as `ki rank` takes them: a group key or
  // prefix, or any object REF naming a run); empty: the whole store.
  std::vector<std::string> refs;
  std::string chartjs_path{kChartJsPath};
  // Names the code that renders the pages (ki's version and a digest of
  // its binary, for the command): part of every run page's inputs, so a
  // different ki renders every page again rather than trust pages an older
  // one wrote.
  std::string renderer = KI_VERSION;
  // Threads that render run pages (store reads are safe from several).
  int threads = 2;
  // Called from the rendering threads, one call at a time.
  std::function<void(const ReportProgress&)> progress;
};

struct ReportSummary {
  std::string dir;
  std::string index;  // DIR/index.html
  uint64_t pages = 0;       // pages of the site, assets included
  uint64_t written = 0;     // new or changed, written now
  uint64_t unchanged = 0;   // same bytes as on disk: not written
  uint64_t kept = 0;        // of those, not even rendered: their inputs were the list's
  uint64_t removed = 0;     // named by the previous list, no longer given
  uint64_t bytes = 0;       // size of every page of the site
  uint64_t groups = 0, runs = 0, operations = 0;
};

// Writes (or brings up to date) the site of `store` in `dir`, created when
// absent. A `dir` that exists, is not empty and holds no page list is
// refused (InvalidInput): ki overwrites only a site it wrote. NotFound when
// a REF names nothing; IOError (naming the path) when Chart.js is missing
// or a page cannot be written.
Result<ReportSummary> WriteReport(Store& store, const std::string& dir, const ReportOptions& opts = {});

}  // namespace ki::report
