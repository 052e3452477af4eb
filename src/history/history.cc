// ReadHistory: a series' points from the catalog's ranking (a comparison
// group) or the store's reverse references (a workload), their names and
// evidence, then stats' change points over the timed values.
#include "ki/history.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "ki/catalog.h"
#include "ki/evidence.h"

namespace ki::history {
namespace {

// A point and the run's manifest when the store holds it (read once, for
// the point's fields and again for its evidence).
struct Read {
  Point point;
  std::optional<Manifest> manifest;
};

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

// A WorkloadCase's runs across environments: the BenchmarkRuns whose
// workloadDigest references it.
Result<std::vector<Read>> WorkloadRuns(Store& store, const Digest& workload) {
  std::vector<Read> out;
  KI_ASSIGN_OR_RETURN(auto refs, store.Referrers(workload));
  std::set<Digest> seen;
  for (const auto& [run, field] : refs) {
    // The field is where the reference sits (a JSON pointer into the spec).
    const std::string_view f = field;
    if (f.size() < 14 || f.substr(f.size() - 14) != "workloadDigest" || !seen.insert(run).second) continue;
    KI_ASSIGN_OR_RETURN(auto ri, store.Stat(run));
    if (!ri || ri->kind != Kind::kBenchmarkRun) continue;
    KI_ASSIGN_OR_RETURN(Manifest m, store.ReadManifest(run));
    Read r;
    r.point.run = run;
    // The name from the index ("BenchmarkRun/<name>"): no document to parse.
    KI_ASSIGN_OR_RETURN(auto names, store.NamesOf(run));
    if (!names.empty()) r.point.name = names.back().substr(names.back().find('/') + 1);
    FillFromSpec(m.spec, &r.point);
    r.manifest = std::move(m);
    out.push_back(std::move(r));
  }
  return out;
}

// A comparison group's runs, ranked and not eligible.
Result<std::vector<Read>> GroupRuns(Store& store, const Digest& cohort) {
  std::vector<Read> out;
  KI_ASSIGN_OR_RETURN(catalog::Ranking ranking, catalog::RankCohort(store, cohort));
  for (const auto* list : {&ranking.ranked, &ranking.ineligible}) {
    for (const catalog::RankEntry& e : *list) {
      Read r;
      Point& p = r.point;
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
        r.manifest = std::move(*m);
      }
      if (p.observed_at.empty()) p.observed_at = e.observed_at;
      if (p.status.empty()) p.status = e.status;
      out.push_back(std::move(r));
    }
  }
  return out;
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

void FindChangePoints(double threshold, History* h) {
  std::vector<double> values;
  for (size_t i : h->timed) values.push_back(*h->points[i].value);
  h->segmentation = stats::DetectChangePoints(values);
  if (!h->segmentation) return;
  const auto& changes = h->segmentation->changes;
  for (const auto& c : changes) h->change_at[h->timed[c.index]] = c;
  if (!changes.empty() && changes.back().index + 1 == values.size() && changes.back().ratio > 1 + threshold)
    h->regression_at_newest = changes.back();
}

}  // namespace

Result<History> ReadHistory(Store& store, const std::string& ref, const Options& options) {
  History h;
  std::vector<Read> reads;
  auto d = store.Resolve(ref);
  std::optional<ObjectInfo> info;
  if (d.ok()) {
    KI_ASSIGN_OR_RETURN(info, store.Stat(*d));
  }
  if (info && info->kind == Kind::kWorkloadCase) {
    h.what = "workload " + d->str() + " (its runs in every environment)";
    KI_ASSIGN_OR_RETURN(reads, WorkloadRuns(store, *d));
  } else {
    if (!d.ok() && !d.status().IsNotFound() && !d.status().IsInvalidInput()) return d.status();
    KI_ASSIGN_OR_RETURN(Digest cohort, catalog::ResolveCohort(store, ref));
    h.what = "comparison group " + cohort.str();
    KI_ASSIGN_OR_RETURN(reads, GroupRuns(store, cohort));
  }
  if (!options.implementation.empty()) {
    KI_ASSIGN_OR_RETURN(auto revs, Revisions(store, options.implementation));
    std::erase_if(reads, [&](const Read& r) { return !revs.count(r.point.implementation); });
  }
  // Time order; the digest breaks ties so that the order is stable.
  std::sort(reads.begin(), reads.end(), [](const Read& a, const Read& b) {
    return a.point.observed_at != b.point.observed_at ? a.point.observed_at < b.point.observed_at
                                                      : a.point.run < b.point.run;
  });
  KI_ASSIGN_OR_RETURN(EvidenceEvaluator ev, EvidenceEvaluator::OpenDefault());
  Names names(store);
  for (Read& r : reads) {
    Point& p = r.point;
    KI_ASSIGN_OR_RETURN(Evidence e, r.manifest ? ev.EvaluateRun(store, *r.manifest) : ev.Evaluate(store, p.run));
    p.evidence = e.Label();
    if (!p.implementation.empty()) {
      const std::string& n = names.Implementation(p.implementation);
      if (!n.empty()) p.implementation_name = n;
    }
    if (!p.environment.empty()) p.environment_name = names.Environment(p.environment);
    h.points.push_back(std::move(p));
  }
  // The series the change points are found in: the timed runs of one unit.
  for (size_t i = 0; i < h.points.size(); ++i) {
    const Point& p = h.points[i];
    if (p.value && *p.value > 0 && std::isfinite(*p.value) && (h.timed.empty() || p.unit == h.points[h.timed[0]].unit))
      h.timed.push_back(i);
  }
  if (options.change_points) FindChangePoints(options.threshold, &h);
  return h;
}

}  // namespace ki::history
