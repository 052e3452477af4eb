// A benchmark's history: the runs of one series in time order, each with its
// primary value, interval, implementation, environment and evidence level,
// and the change points in their values (docs/statistics.md, "Change
// points"). What `ki log` prints; the series is one of
//   - a comparison group's runs (REF a run or a comparison key), the runs the
//     catalog ranks there and those it lists as not eligible;
//   - a WorkloadCase's runs in every environment (REF the workload).
//
// Thread-safety: ReadHistory reads the store only; its result is a value.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ki/stats.h"
#include "ki/store.h"

namespace ki::history {

struct Point {
  Digest run;
  std::string name;         // the run's metadata.name
  std::string observed_at;  // RFC 3339, as the run records it
  std::string status;       // "passed", ...
  std::string unit;         // "ns" for latencies
  std::optional<double> value;
  std::optional<std::pair<double, double>> interval;  // 95%
  std::string implementation;       // revision digest ("" when the run names none)
  std::string implementation_name;  // its metadata.name, when the store holds it
  std::string environment;          // environment digest
  std::string environment_name;     // hardware product, when the store holds it
  std::string evidence;             // the evidence level's label
};

struct Options {
  // Only the runs of this implementation: any of its revisions names all
  // the revisions stored under the same metadata.name. Empty: every run.
  std::string implementation;
  bool change_points = false;  // run the change-point detection
  double threshold = 0.05;     // what counts as a regression at the newest run
};

struct History {
  std::string what;           // "comparison group sha256:...", "workload sha256:... (...)"
  std::vector<Point> points;  // time order; the run digest breaks ties
  // The points change points are looked for in: indexes into `points` of the
  // runs with a finite positive value in the first such run's unit.
  std::vector<size_t> timed;
  // With Options::change_points: the segmentation of the timed values
  // (nullopt when stats could not segment them), each change point keyed by
  // the index into `points` of the run that starts its new level, and the
  // last change point when it starts at the newest timed run and is slower
  // by more than the threshold (what `ki log --regressions` fails on).
  std::optional<stats::Segmentation> segmentation;
  std::map<size_t, stats::ChangePoint> change_at;
  std::optional<stats::ChangePoint> regression_at_newest;
};

// InvalidInput when `options.implementation` names no ImplementationRevision;
// NotFound when REF is neither a workload nor a group the store knows.
Result<History> ReadHistory(Store& store, const std::string& ref, const Options& options = {});

}  // namespace ki::history
