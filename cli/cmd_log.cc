// ki log REF [--implementation REF] [--regressions] [--threshold F] [--json]:
// the history of a benchmark, one run a line in time order, and its change
// points (docs/statistics.md, "Change points").
//
// A thin client of history::ReadHistory (include/ki/history.h): this file
// only prints the series, as text or JSON.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <map>
#include <set>

#include "command.h"
#include "ki/history.h"
#include "ki/human.h"

namespace ki::cli {
namespace {

struct LogOptions {
  std::string ref, implementation;
  bool regressions = false, json = false;
  double threshold = 0.05;
};

using history::Point;

std::string PointValue(const Point& p) {
  if (!p.value) return "-";
  return p.unit == "ns" ? FormatNs(*p.value) : FormatJcsNumber(*p.value) + (p.unit.empty() ? "" : " " + p.unit);
}

std::string IntervalText(const Point& p) {
  if (!p.interval) return "-";
  if (p.unit == "ns") return FormatNs(p.interval->first) + " – " + FormatNs(p.interval->second);
  return FormatJcsNumber(p.interval->first) + " – " + FormatJcsNumber(p.interval->second);
}

std::string Pct(double ratio) { return human::PercentChange(ratio); }
std::string F3(double v) { return human::Fixed(v, 3); }

Json PointJson(const Point& p) {
  return {{"run", p.run.str()},
          {"name", p.name},
          {"observedAt", p.observed_at},
          {"status", p.status},
          {"value", p.value ? Json(*p.value) : Json(nullptr)},
          {"unit", p.unit},
          {"interval", p.interval ? Json{p.interval->first, p.interval->second} : Json(nullptr)},
          {"implementation", p.implementation.empty() ? Json(nullptr) : Json(p.implementation)},
          {"implementationName", p.implementation_name},
          {"environment", p.environment.empty() ? Json(nullptr) : Json(p.environment)},
          {"environmentName", p.environment_name},
          {"evidence", p.evidence}};
}

RunFn SetupLog(CLI::App* sub, GlobalOptions* g) {
  auto o = std::make_shared<LogOptions>();
  sub->add_option("ref", o->ref,
                  "a run or comparison key (its comparison group), or a WorkloadCase (its runs in every environment)")
      ->required();
  sub->add_option("--implementation", o->implementation,
                  "only the runs of this implementation (REF: any of its revisions; all revisions of its name)");
  sub->add_flag("--regressions", o->regressions,
                "mark change points; exit 1 when the newest run starts a level slower by more than --threshold");
  sub->add_option("--threshold", o->threshold, "regression size that fails --regressions (default 0.05)")
      ->check(CLI::Range(0.0, 10.0));
  sub->add_flag("--json", o->json, "print the series (and change points) as JSON");
  return [o, g]() -> Result<int> {
    KI_ASSIGN_OR_RETURN(auto store, OpenStore(*g, OpenMode::kReadOnly));
    KI_ASSIGN_OR_RETURN(history::History h,
                        history::ReadHistory(*store, o->ref,
                                             {.implementation = o->implementation,
                                              .change_points = o->regressions,
                                              .threshold = o->threshold}));
    const std::vector<Point>& pts = h.points;
    const auto& seg = h.segmentation;
    const auto& change_at = h.change_at;
    const auto& newest = h.regression_at_newest;
    const std::string& what = h.what;
    auto change_json = [](const stats::ChangePoint& c) {
      return Json{{"index", c.index},   {"before", c.before}, {"after", c.after}, {"ratio", c.ratio},
                  {"interval", Json{c.low, c.high}}, {"beforePoints", c.before_points},
                  {"afterPoints", c.after_points}, {"direction", c.ratio > 1 ? "slower" : "faster"}};
    };
    if (o->json) {
      Json runs = Json::array();
      for (size_t i = 0; i < pts.size(); ++i) {
        Json j = PointJson(pts[i]);
        if (auto it = change_at.find(i); it != change_at.end()) j["changePoint"] = change_json(it->second);
        runs.push_back(j);
      }
      Json out = {{"series", what}, {"runs", runs}};
      if (o->regressions) {
        Json cps = Json::array();
        if (seg)
          for (const auto& c : seg->changes) {
            Json j = change_json(c);
            j["run"] = pts[h.timed[c.index]].run.str();
            cps.push_back(j);
          }
        out["changePoints"] = cps;
        out["noise"] = seg ? Json(seg->noise) : Json(nullptr);
        out["threshold"] = o->threshold;
        out["regressionAtNewest"] = bool(newest);
      }
      PrintJson(out);
      return newest ? 1 : 0;
    }
    std::string text = what + ": " + std::to_string(pts.size()) + " runs\n";
    for (size_t i = 0; i < pts.size(); ++i) {
      const Point& p = pts[i];
      if (auto it = change_at.find(i); it != change_at.end()) {
        const auto& c = it->second;
        text += "-- change point: " + Pct(c.ratio) + " (" + std::string(c.ratio > 1 ? "slower" : "faster") +
                "; median " + PointValue(Point{.unit = p.unit, .value = c.before}) + " -> " +
                PointValue(Point{.unit = p.unit, .value = c.after}) + ", ratio " + F3(c.ratio) + ", 95% interval " +
                F3(c.low) + "-" + F3(c.high) + ")\n";
      }
      std::string impl = p.implementation.empty() ? "-" : p.implementation.substr(7, 12);
      if (!p.implementation_name.empty()) impl += " " + p.implementation_name;
      std::string env = p.environment_name.empty() ? (p.environment.empty() ? "-" : p.environment.substr(7, 12))
                                                   : p.environment_name;
      text += p.observed_at + "  " + Short(p.run) + "  " + PointValue(p) + "  [" + IntervalText(p) + "]  " + impl +
              "  " + env + "  " + p.evidence + (p.status != "passed" && !p.status.empty() ? "  " + p.status : "") +
              "\n";
    }
    if (o->regressions) {
      if (!seg) {
        text += "no change points: the series has non-positive values\n";
      } else {
        char noise[64];
        std::snprintf(noise, sizeof noise, "%.2f%%", seg->noise * 100);
        text += std::to_string(seg->changes.size()) + " change point" + (seg->changes.size() == 1 ? "" : "s") +
                " in " + std::to_string(h.timed.size()) + " timed runs (noise " + noise + ")\n";
      }
      if (newest)
        text += "regression at the newest run: " + Pct(newest->ratio) + " (ratio " + F3(newest->ratio) +
                ", 95% interval " + F3(newest->low) + "-" + F3(newest->high) + "), beyond the " +
                Pct(1 + o->threshold).substr(1) + " threshold\n";
    }
    std::cout << text;
    return newest ? 1 : 0;
  };
}

KI_REGISTER_COMMAND(log, {"log", "The runs of a benchmark in time order, and its change points", SetupLog, 73});

}  // namespace
}  // namespace ki::cli
