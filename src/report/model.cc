#include "report/model.h"

#include <mutex>

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

std::string Link(const Model& m, const std::string& root, const std::string& page, const std::string& text_html,
                 const std::string& attrs) {
  if (!m.Has(page)) return text_html;
  return "<a href=\"" + root + page + "\"" + (attrs.empty() ? "" : " " + attrs) + ">" + text_html + "</a>";
}

namespace {

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
      if (auto d = Digest::Parse(s.workload); d.ok()) {
        auto w = store.ReadManifest(*d);
        if (w.ok() && w->spec.contains("axes") && w->spec["axes"].is_object()) g.axes = w->spec["axes"];
      }
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
  for (const auto& [d, place] : m.runs) m.pages.insert(RunPage(d));
  for (const auto& [digest, op] : m.operations) m.pages.insert(op.page);
  for (const auto& [digest, v] : m.settings) m.pages.insert(v.page);
  return m;
}

}  // namespace ki::report
