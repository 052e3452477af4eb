#include "report/model.h"

#include <algorithm>
#include <cmath>
#include <mutex>

#include "catalog/time.h"
#include "ki/run.h"
#include "json/fields.h"
#include "report/parallel.h"

namespace ki::report {

std::string GroupPage(const Digest& cohort) { return "group/" + cohort.hex() + ".html"; }
std::string RunPage(const Digest& run) { return "run/" + run.hex() + ".html"; }
std::string OperationPage(std::string_view operation_digest) {
  std::string_view hex = operation_digest.substr(operation_digest.rfind(':') + 1);
  return "op/" + std::string(hex) + ".html";
}

std::string SettingPage(Kind kind, const Digest& d) {
  return (kind == Kind::kExecutionEnvironment ? "env/" : "protocol/") + d.hex() + ".html";
}

Status ApplyAttestedEvidence(Store& store, const EvidenceEvaluator& evidence, Model* m) {
  for (auto& g : m->groups) {
    if (!g.ranking) continue;
    for (auto* list : {&g.ranking->ranked, &g.ranking->ineligible}) {
      for (auto& e : *list) {
        // EvidenceLevel counts from 0 (reported), catalog::Evidence from 1.
        const auto indexed = static_cast<EvidenceLevel>(static_cast<uint8_t>(e.evidence) - 1);
        KI_ASSIGN_OR_RETURN(auto shown, evidence.ShownLevel(store, e.run, indexed));
        e.evidence = static_cast<catalog::Evidence>(static_cast<uint8_t>(shown.level) + 1);
        if (shown.disputed) m->disputed.insert(e.run);
      }
    }
  }
  return Status::OK();
}

std::string SeriesPage(const Digest& cohort, bool by_implementation, std::string_view label) {
  // The name may hold anything: the page is named by a digest of it.
  Sha256 h;
  h.Update(cohort.raw());
  h.Update(by_implementation ? "implementation\n" : "run\n");
  h.Update(label);
  return "series/" + h.Finish().hex() + ".html";
}

std::string RerunPage(const Digest& rerun) { return "rerun/" + rerun.hex() + ".html"; }

std::string OutcomeText(const std::optional<Json>& verdict) {
  if (!verdict || !verdict->is_object()) return "";
  const std::string o = StringOr(*verdict, "outcome");
  if (o == "not-reproduced") return "not reproduced";
  if (o == "reproduced" || o == "inconclusive") return o;
  return "";
}

const std::optional<stats::Segmentation>& SeriesView::Changes() const {
  std::call_once(memo_->once, [&] {
    std::vector<double> values;
    for (size_t i : timed) values.push_back(*runs[i]->value);
    memo_->seg = stats::DetectChangePoints(values);
  });
  return memo_->seg;
}

std::string Link(const Model& m, const std::string& root, const std::string& page, const std::string& text_html,
                 const std::string& attrs) {
  if (!m.Has(page)) return text_html;
  return "<a href=\"" + root + page + "\"" + (attrs.empty() ? "" : " " + attrs) + ">" + text_html + "</a>";
}

namespace {

// The series of a kernel group: its runs by implementation name (by run
// name where the store lacks the implementation), each in time order (as
// ki log sorts them, instants compared), with the runs whose values change
// points are found in.
void SeriesOfGroup(const GroupView& g, std::vector<SeriesView>* out) {
  std::map<std::pair<bool, std::string>, std::vector<const catalog::RankEntry*>> by_label;
  for (const auto* list : {&g.ranking->ranked, &g.ranking->ineligible})
    for (const auto& e : *list) {
      if (!e.implementation.empty()) by_label[{true, e.implementation}].push_back(&e);
      else if (!e.name.empty()) by_label[{false, e.name}].push_back(&e);
    }
  for (auto& [key, runs] : by_label) {
    const auto& [by_implementation, label] = key;
    if (runs.size() < kMinSeriesRuns) continue;
    std::stable_sort(runs.begin(), runs.end(), [](const catalog::RankEntry* a, const catalog::RankEntry* b) {
      if (int c = catalog::CompareTimes(a->observed_at, b->observed_at); c != 0) return c < 0;
      return a->run < b->run;
    });
    SeriesView s;
    s.group = &g;
    s.label = label;
    s.by_implementation = by_implementation;
    for (size_t i = 0; i < runs.size(); ++i) {
      const auto* e = runs[i];
      if (!e->value || !(*e->value > 0) || !std::isfinite(*e->value) || std::isnan(catalog::ParseTime(e->observed_at)))
        continue;
      if (!s.timed.empty() && e->unit != runs[s.timed.front()]->unit) continue;
      s.timed.push_back(i);
    }
    if (s.timed.size() < kMinSeriesRuns) continue;
    s.runs = std::move(runs);
    s.page = SeriesPage(g.summary.cohort, by_implementation, label);
    out->push_back(std::move(s));
  }
}

bool IsRunKind(const std::optional<Kind>& k) { return k && (*k == Kind::kBenchmarkRun || *k == Kind::kServingRun); }

// What the REFs ask for: groups shown with all their runs, and single runs
// (each with its group's page).
struct Wanted {
  bool everything = true;
  std::set<Digest> full_groups, groups, runs;
};

Result<Wanted> ResolveRefs(Store& store, const std::vector<std::string>& refs) {
  Wanted w;
  w.everything = refs.empty();
  for (const auto& ref : refs) {
    if (auto d = store.Resolve(ref); d.ok()) {
      KI_ASSIGN_OR_RETURN(auto info, store.Stat(*d));
      if (info && IsRunKind(info->kind)) {
        w.runs.insert(*d);
        KI_ASSIGN_OR_RETURN(auto cohort, catalog::CohortOfRun(store, *d));
        if (cohort) w.groups.insert(*cohort);
        continue;
      }
    }
    KI_ASSIGN_OR_RETURN(Digest cohort, catalog::ResolveCohort(store, ref));
    w.full_groups.insert(cohort);
    w.groups.insert(cohort);
  }
  return w;
}

}  // namespace

Result<Model> Collect(Store& store, const std::vector<std::string>& refs, int threads,
                      const std::function<void(uint64_t, uint64_t)>& tick) {
  KI_ASSIGN_OR_RETURN(Wanted want, ResolveRefs(store, refs));
  KI_ASSIGN_OR_RETURN(auto summaries, catalog::ListGroups(store, {}));
  Model m;
  m.pages.insert("index.html");
  std::vector<size_t> chosen;
  for (size_t i = 0; i < summaries.size(); ++i)
    if (want.everything || want.groups.count(summaries[i].cohort)) chosen.push_back(i);
  m.groups.resize(chosen.size());
  // Each group's ranking, records and members, on `threads` threads (the
  // store's reads are safe from several).
  std::mutex mu;
  uint64_t done = 0;
  KI_RETURN_IF_ERROR(ParallelFor(chosen.size(), threads, [&](size_t i, int) -> Status {
    catalog::GroupSummary& s = summaries[chosen[i]];
    GroupView& g = m.groups[i];
    g.page = GroupPage(s.cohort);
    if (s.kind == "kernel") {
      KI_ASSIGN_OR_RETURN(auto r, catalog::RankCohort(store, s.cohort));
      g.ranking = std::move(r);
      KI_ASSIGN_OR_RETURN(auto h, catalog::Records(store, s.cohort));
      g.records = std::move(h);
    } else {
      KI_ASSIGN_OR_RETURN(g.members, catalog::GroupMembers(store, s.cohort));
    }
    g.summary = std::move(s);
    std::lock_guard<std::mutex> lock(mu);
    if (tick) tick(++done, chosen.size());
    return Status::OK();
  }));
  // Pointers into m.groups are taken once it no longer grows.
  for (const GroupView& g : m.groups) {
    m.pages.insert(g.page);
    const bool all_runs = want.everything || want.full_groups.count(g.summary.cohort);
    auto place = [&](const catalog::RankEntry& e, Kind kind) {
      if (!all_runs && !want.runs.count(e.run)) return;
      m.runs[e.run] = RunPlace{&g, &e, kind};
    };
    if (g.ranking) {
      for (const auto& e : g.ranking->ranked) place(e, Kind::kBenchmarkRun);
      for (const auto& e : g.ranking->ineligible) place(e, Kind::kBenchmarkRun);
      OperationView& op = m.operations[g.summary.operation];
      op.digest = g.summary.operation;
      op.name = g.summary.operation_name;
      op.groups.push_back(&g);
      op.page = OperationPage(g.summary.operation);
      for (auto [part, kind] : {std::pair{"protocol", Kind::kBenchmarkProtocol},
                                std::pair{"environment", Kind::kExecutionEnvironment}}) {
        auto d = Digest::Parse(StringOr(g.ranking->description, part));
        if (!d.ok()) continue;
        KI_ASSIGN_OR_RETURN(auto info, store.Stat(*d));
        if (!info) continue;  // not held: no page to show it on
        SettingView& v = m.settings[*d];
        v.digest = *d;
        v.kind = kind;
        v.page = SettingPage(kind, *d);
        v.groups.push_back(&g);
      }
    } else {
      for (const auto& e : g.members) place(e, Kind::kServingRun);
    }
  }
  // Runs in no group yet (waiting for their workload), and runs named alone.
  for (Kind kind : {Kind::kBenchmarkRun, Kind::kServingRun}) {
    KI_RETURN_IF_ERROR(store.ForEachOfKind(kind, [&](const Digest& d) {
      if ((want.everything || want.runs.count(d)) && !m.runs.count(d)) m.runs[d] = RunPlace{nullptr, nullptr, kind};
      return true;
    }));
  }
  // Series, once m.groups and the runs' entries no longer move.
  std::vector<GroupView*> owner;  // of each series
  for (GroupView& g : m.groups) {
    if (!g.ranking) continue;
    SeriesOfGroup(g, &m.series);
    owner.resize(m.series.size(), &g);
  }
  for (size_t i = 0; i < m.series.size(); ++i) {
    const SeriesView& s = m.series[i];
    m.pages.insert(s.page);
    owner[i]->series.push_back(&s);
    for (const auto* e : s.runs)
      if (auto it = m.runs.find(e->run); it != m.runs.end()) it->second.series = &s;
  }
  for (GroupView& g : m.groups)
    std::stable_sort(g.series.begin(), g.series.end(),
                     [](const SeriesView* a, const SeriesView* b) { return a->timed.size() > b->timed.size(); });
  // Re-runs (ki rerun): a page for each re-run the site shows.
  for (auto& [d, place] : m.runs) {
    if (place.kind != Kind::kBenchmarkRun) continue;
    KI_ASSIGN_OR_RETURN(auto original, run::OriginalOf(store, d));
    if (!original) continue;
    KI_ASSIGN_OR_RETURN(auto verdict, run::VerdictOf(store, d));
    RerunView& r = m.reruns[d];
    r.original = *original;
    r.rerun = d;
    r.verdict = std::move(verdict);
    r.page = RerunPage(d);
  }
  for (const auto& [d, r] : m.reruns) {
    m.pages.insert(r.page);
    m.runs[d].rerun_of = &r;
    if (auto it = m.runs.find(r.original); it != m.runs.end()) it->second.reruns.push_back(&r);
  }
  for (const auto& [d, place] : m.runs) m.pages.insert(RunPage(d));
  for (const auto& [digest, op] : m.operations) m.pages.insert(op.page);
  for (const auto& [digest, v] : m.settings) m.pages.insert(v.page);
  return m;
}

}  // namespace ki::report
