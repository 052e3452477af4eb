// ki log REF [--implementation REF] [--regressions] [--threshold F] [--json]:
// the history of a benchmark, one run a line in time order, and its change
// points (docs/statistics.md, "Change points").
//
// A thin client of the library's readers: a comparison group's runs come
// from catalog::RankCohort, a workload's from the store's reverse
// references, evidence from EvidenceEvaluator, steps from stats.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <map>
#include <set>

#include "command.h"
#include "ki/catalog.h"
#include "ki/evidence.h"
#include "ki/stats.h"

namespace ki::cli {
namespace {

struct LogOptions {
  std::string ref, implementation;
  bool regressions = false, json = false;
  double threshold = 0.05;
};

struct Point {
  Digest run;
  std::string name, observed_at, status, unit;
  std::optional<double> value;
  std::optional<std::pair<double, double>> interval;
  std::string implementation;  // revision digest
  std::string implementation_name;
  std::string environment;  // environment digest
  std::string environment_name;  // hardware product, when the store holds it
  std::string evidence;
  std::optional<Manifest> manifest;  // when the store holds the run
};

std::string PointValue(const Point& p) {
  if (!p.value) return "-";
  return p.unit == "ns" ? FormatNs(*p.value) : FormatJcsNumber(*p.value) + (p.unit.empty() ? "" : " " + p.unit);
}

std::string IntervalText(const Point& p) {
  if (!p.interval) return "-";
  if (p.unit == "ns") return FormatNs(p.interval->first) + " – " + FormatNs(p.interval->second);
  return FormatJcsNumber(p.interval->first) + " – " + FormatJcsNumber(p.interval->second);
}

std::string Pct(double ratio) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%+.1f%%", (ratio - 1) * 100);
  return buf;
}

std::string F3(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f", v);
  return buf;
}

// Names of manifests, read once each (a series repeats its few
// implementations and environments over many runs).
class Names {
 public:
  explicit Names(Store& store) : store_(store) {}
  const std::string& Implementation(const std::string& digest) {
    return Cached(impl_, digest, [&](const Digest& d) {
      auto doc = store_.ReadDocument(d);
      return doc.ok() && *doc && (**doc).contains("metadata") ? (**doc)["metadata"].value("name", "") : std::string();
    });
  }
  const std::string& Environment(const std::string& digest) {
    return Cached(env_, digest, [&](const Digest& d) {
      auto m = store_.ReadManifest(d);
      return m.ok() ? m->spec.value("/hardware/product"_json_pointer, std::string()) : std::string();
    });
  }

 private:
  template <typename F>
  const std::string& Cached(std::map<std::string, std::string>& cache, const std::string& digest, F read) {
    auto it = cache.find(digest);
    if (it != cache.end()) return it->second;
    auto d = Digest::Parse(digest);
    return cache[digest] = d.ok() ? read(*d) : std::string();
  }
  Store& store_;
  std::map<std::string, std::string> impl_, env_;
};

// The primary value and interval of a run manifest (what ranking reads).
void FillFromSpec(const Json& spec, Point* p) {
  p->status = spec.value("status", "");
  p->observed_at = spec.value("observedAt", "");
  p->implementation = spec.value("implementationDigest", "");
  p->environment = spec.value("environmentDigest", "");
  if (!p->value && spec.contains("timing") && spec["timing"].is_object()) {
    const Json& t = spec["timing"];
    const std::string stat = t.value("primaryStatistic", "mean");
    if (t.contains("latencyNs") && t["latencyNs"].is_object()) {
      const Json& l = t["latencyNs"];
      if (l.contains(stat) && l[stat].is_number()) p->value = l[stat].get<double>(), p->unit = "ns";
      const Json& ci = l.value("confidence95", Json::array());
      if (ci.is_array() && ci.size() == 2 && ci[0].is_number() && ci[1].is_number())
        p->interval = std::make_pair(ci[0].get<double>(), ci[1].get<double>());
    }
  }
}

// The series REF names: a WorkloadCase's runs across environments, else a
// comparison group's (REF a run or a comparison key).
Result<std::vector<Point>> Series(Store& store, const std::string& ref, std::string* what) {
  std::vector<Point> pts;
  auto d = store.Resolve(ref);
  std::optional<ObjectInfo> info;
  if (d.ok()) {
    KI_ASSIGN_OR_RETURN(info, store.Stat(*d));
  }
  if (info && info->kind == Kind::kWorkloadCase) {
    *what = "workload " + d->str() + " (its runs in every environment)";
    KI_ASSIGN_OR_RETURN(auto refs, store.Referrers(*d));
    std::set<Digest> seen;
    for (const auto& [run, field] : refs) {
      // The field is where the reference sits (a JSON pointer into the spec).
      const std::string_view f = field;
      if (f.size() < 14 || f.substr(f.size() - 14) != "workloadDigest" || !seen.insert(run).second) continue;
      KI_ASSIGN_OR_RETURN(auto ri, store.Stat(run));
      if (!ri || ri->kind != Kind::kBenchmarkRun) continue;
      KI_ASSIGN_OR_RETURN(Manifest m, store.ReadManifest(run));
      Point p;
      p.run = run;
      // The name from the index ("BenchmarkRun/<name>"): no document to parse.
      KI_ASSIGN_OR_RETURN(auto names, store.NamesOf(run));
      if (!names.empty()) p.name = names.back().substr(names.back().find('/') + 1);
      FillFromSpec(m.spec, &p);
      p.manifest = std::move(m);
      pts.push_back(std::move(p));
    }
    return pts;
  }
  if (!d.ok() && !d.status().IsNotFound() && !d.status().IsInvalidInput()) return d.status();
  KI_ASSIGN_OR_RETURN(Digest cohort, catalog::ResolveCohort(store, ref));
  *what = "comparison group " + cohort.str();
  KI_ASSIGN_OR_RETURN(catalog::Ranking r, catalog::RankCohort(store, cohort));
  for (const auto* list : {&r.ranked, &r.ineligible}) {
    for (const catalog::RankEntry& e : *list) {
      Point p;
      p.run = e.run;
      p.name = e.name;
      p.value = e.value;
      p.unit = e.unit;
      p.interval = e.interval;
      p.implementation_name = e.implementation;
      // The run's own manifest names its revision and environment; a run
      // the catalog lists but the store lacks keeps the catalog's facts.
      auto m = store.ReadManifest(e.run);
      if (m.ok()) {
        FillFromSpec(m->spec, &p);
        p.manifest = std::move(*m);
      }
      if (p.observed_at.empty()) p.observed_at = e.observed_at;
      if (p.status.empty()) p.status = e.status;
      pts.push_back(std::move(p));
    }
  }
  return pts;
}

// The revisions of the implementation REF names: every ImplementationRevision
// stored under the same metadata.name.
Result<std::set<std::string>> Revisions(Store& store, const std::string& ref) {
  KI_ASSIGN_OR_RETURN(Digest d, store.Resolve(ref));
  KI_ASSIGN_OR_RETURN(auto info, store.Stat(d));
  if (!info || info->kind != Kind::kImplementationRevision)
    return Status::InvalidInput("--implementation " + ref + " is not an ImplementationRevision");
  std::set<std::string> out = {d.str()};
  KI_ASSIGN_OR_RETURN(auto names, store.NamesOf(d));
  for (const std::string& n : names) {
    const std::string bare = n.substr(n.find('/') + 1);
    KI_ASSIGN_OR_RETURN(auto all, store.LookupName(Kind::kImplementationRevision, bare));
    for (const Digest& x : all) out.insert(x.str());
  }
  return out;
}

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
    std::string what;
    KI_ASSIGN_OR_RETURN(std::vector<Point> pts, Series(*store, o->ref, &what));
    if (!o->implementation.empty()) {
      KI_ASSIGN_OR_RETURN(auto revs, Revisions(*store, o->implementation));
      std::erase_if(pts, [&](const Point& p) { return !revs.count(p.implementation); });
    }
    // Time order; the digest breaks ties so that the order is stable.
    std::sort(pts.begin(), pts.end(), [](const Point& a, const Point& b) {
      return a.observed_at != b.observed_at ? a.observed_at < b.observed_at : a.run < b.run;
    });
    KI_ASSIGN_OR_RETURN(EvidenceEvaluator ev, EvidenceEvaluator::OpenDefault());
    Names names(*store);
    for (Point& p : pts) {
      KI_ASSIGN_OR_RETURN(Evidence e, p.manifest ? ev.EvaluateRun(*store, *p.manifest) : ev.Evaluate(*store, p.run));
      p.manifest.reset();
      p.evidence = e.Label();
      if (!p.implementation.empty()) {
        const std::string& n = names.Implementation(p.implementation);
        if (!n.empty()) p.implementation_name = n;
      }
      if (!p.environment.empty()) p.environment_name = names.Environment(p.environment);
    }
    // The series the change points are found in: the timed runs of one unit.
    std::vector<size_t> timed;
    std::vector<double> values;
    for (size_t i = 0; i < pts.size(); ++i) {
      if (pts[i].value && *pts[i].value > 0 && std::isfinite(*pts[i].value) &&
          (timed.empty() || pts[i].unit == pts[timed[0]].unit)) {
        timed.push_back(i);
        values.push_back(*pts[i].value);
      }
    }
    std::map<size_t, stats::ChangePoint> change_at;  // index into pts
    std::optional<stats::Segmentation> seg;
    if (o->regressions) {
      seg = stats::DetectChangePoints(values);
      if (seg)
        for (const auto& c : seg->changes) change_at[timed[c.index]] = c;
    }
    // The gate: the newest timed run starts a level slower beyond the threshold.
    std::optional<stats::ChangePoint> newest;
    if (seg && !seg->changes.empty() && seg->changes.back().index + 1 == values.size() &&
        seg->changes.back().ratio > 1 + o->threshold)
      newest = seg->changes.back();
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
            j["run"] = pts[timed[c.index]].run.str();
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
                " in " + std::to_string(values.size()) + " timed runs (noise " + noise + ")\n";
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
