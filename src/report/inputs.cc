#include "report/inputs.h"

#include <cstring>

#include "ki/catalog.h"
#include "ki/human.h"
#include "report/pages.h"

namespace ki::report {

namespace {

// Length-prefixed fields: no two different inputs hash alike. Gathered in
// one buffer and hashed once.
class Hasher {
 public:
  void Add(std::string_view s) {
    buf_ += std::to_string(s.size());
    buf_ += ':';
    buf_ += s;
  }
  void Add(const char* s) { Add(std::string_view(s)); }  // not as a bool
  void Add(const std::string& s) { Add(std::string_view(s)); }
  void Add(const Digest& d) { Add(d.raw()); }
  void Add(bool b) { Add(b ? std::string_view("1") : std::string_view("0")); }
  void Add(double v) {  // bit-exact
    char raw[sizeof v];
    std::memcpy(raw, &v, sizeof v);
    Add(std::string_view(raw, sizeof raw));
  }
  void Add(uint64_t v) { Add(std::to_string(v)); }
  void Add(const std::optional<double>& v) {
    Add(bool(v));
    if (v) Add(*v);
  }
  std::string Finish() {
    Sha256 h;
    h.Update(buf_);
    return h.Finish().str();
  }

 private:
  std::string buf_;
};

// Every field of an entry, and whether its run's page is in the site.
void AddEntry(Hasher& h, const Model& m, const catalog::RankEntry& e) {
  h.Add(e.run);
  h.Add(e.id);
  h.Add(e.name);
  h.Add(e.implementation);
  h.Add(e.value);
  h.Add(e.unit);
  h.Add(bool(e.interval));
  if (e.interval) {
    h.Add(e.interval->first);
    h.Add(e.interval->second);
  }
  h.Add(uint64_t(e.evidence));
  h.Add(e.observed_at);
  h.Add(e.status);
  h.Add(e.published);
  h.Add(e.retracted);
  h.Add(e.superseded);
  h.Add(uint64_t(int64_t(e.rank)));
  h.Add(e.tied_with_previous);
  h.Add(uint64_t(e.reasons.size()));
  for (const auto& r : e.reasons) h.Add(r);
  h.Add(m.disputed.count(e.run) > 0);
  h.Add(m.Has(RunPage(e.run)));
}

void AddSummary(Hasher& h, const Model& m, const catalog::GroupSummary& s) {
  h.Add(s.cohort);
  h.Add(s.kind);
  h.Add(s.metric);
  h.Add(s.operation);
  h.Add(s.operation_name);
  h.Add(s.workload);
  h.Add(s.workload_name);
  h.Add(s.hardware);
  h.Add(s.runs);
  h.Add(uint64_t(s.ranked));
  h.Add(bool(s.first));
  if (s.first) AddEntry(h, m, *s.first);
  h.Add(m.Has(GroupPage(s.cohort)));
  h.Add(m.Has(OperationPage(s.operation)));
}

}  // namespace

std::string TrustFingerprint(const KeySources& keys) {
  Hasher h;
  for (const auto* list : {&keys.trust.trusted(), &keys.trust.revoked()}) {
    h.Add("list");
    for (const auto& e : *list) {
      h.Add(e.keyid);
      h.Add(e.name);
      h.Add(RoleName(e.role));
    }
  }
  h.Add("local");
  for (const auto& k : keys.local) {
    h.Add(k.name);
    h.Add(k.key.KeyId());
  }
  return h.Finish();
}

std::vector<Digest> WatchedObjects(Store& store, const Manifest& run) {
  std::vector<Digest> out;
  for (const Reference& r : ExtractReferences(run)) out.push_back(r.target);
  if (auto d = Digest::Parse(run.spec.value("implementationDigest", "")); d.ok()) {
    if (auto impl = store.ReadManifest(*d); impl.ok()) {
      for (const Reference& r : ExtractReferences(*impl))
        if (r.field.rfind("/spec/source", 0) == 0) out.push_back(r.target);
    }
  }
  return out;
}

std::string RunGroupPart(const Model& m, const GroupView& g) {
  Hasher h;
  h.Add(g.summary.cohort);
  h.Add(g.summary.operation_name);
  h.Add(m.Has(g.page) ? "group page" : "");
  h.Add(m.Has(OperationPage(g.summary.operation)) ? "operation page" : "");
  if (g.ranking) {
    h.Add(std::to_string(g.ranking->ranked.size()) + (g.ranking->source_native ? " source-native" : " strict"));
    if (!g.ranking->ranked.empty()) {
      const auto& first = g.ranking->ranked.front();
      h.Add(first.run);
      h.Add(ValueText(first));
      h.Add(m.Has(RunPage(first.run)) ? "first page" : "");
    }
  }
  return h.Finish();
}

Result<std::string> RunInputs(Store& store, const Model& m, const Digest& run, const RunPlace& place,
                              const std::string& group_part, const std::vector<Digest>& watched,
                              const std::string& salt, WatchedCache& cache) {
  Hasher h;
  h.Add(salt);
  h.Add(run);
  KI_ASSIGN_OR_RETURN(auto doc, store.DocumentOf(run));
  h.Add(doc ? doc->raw() : "no document");
  if (place.group) {
    h.Add(group_part);
    if (place.entry) {
      h.Add(std::to_string(place.entry->rank) + (place.entry->tied_with_previous ? "=" : ""));
      for (const auto& r : place.entry->reasons) h.Add(r);
    }
  } else {
    h.Add("no group");
  }
  std::vector<Digest> facts;
  KI_RETURN_IF_ERROR(catalog::FactsAbout(store, run, &facts));
  h.Add("facts");
  for (const auto& f : facts) h.Add(f);
  KI_ASSIGN_OR_RETURN(auto attestations, ListAttestations(store, run));
  h.Add("attestations");
  for (const auto& a : attestations) h.Add(a);
  h.Add("series");
  if (place.series) {
    h.Add(place.series->page);
    h.Add(place.series->label);
    h.Add(place.series->by_implementation);
    h.Add(uint64_t(place.series->runs.size()));
    h.Add(m.Has(place.series->page));
  }
  h.Add("reruns");
  auto add_rerun = [&](const RerunView& r) {
    h.Add(r.original);
    h.Add(r.rerun);
    h.Add(r.verdict ? r.verdict->dump() : "no verdict");
    h.Add(m.Has(r.page));
    h.Add(m.Has(RunPage(r.original)));
    h.Add(m.Has(RunPage(r.rerun)));
  };
  if (place.rerun_of) add_rerun(*place.rerun_of);
  h.Add(uint64_t(place.reruns.size()));
  for (const RerunView* r : place.reruns) add_rerun(*r);
  h.Add("watched");
  for (const auto& w : watched) {
    h.Add(w);
    auto it = cache.state.find(w);
    if (it == cache.state.end()) {
      Hasher s;
      KI_ASSIGN_OR_RETURN(auto info, store.Stat(w));
      if (info) {
        s.Add("held");
        s.Add(info->media_type);
        KI_ASSIGN_OR_RETURN(auto names, store.NamesOf(w));
        s.Add(names.empty() ? "" : names.front());
      } else {
        KI_ASSIGN_OR_RETURN(auto absent, store.StatAbsent(w));
        s.Add(absent ? "absent " + absent->media_type : "missing");
      }
      s.Add(m.Has(RunPage(w)));
      s.Add(m.Has(SettingPage(Kind::kBenchmarkProtocol, w)) || m.Has(SettingPage(Kind::kExecutionEnvironment, w)));
      it = cache.state.emplace(w, s.Finish()).first;
    }
    h.Add(it->second);
  }
  return h.Finish();
}

std::string GroupInputs(const Model& m, const GroupView& g, const std::string& salt) {
  Hasher h;
  h.Add(salt);
  h.Add("group");
  AddSummary(h, m, g.summary);
  h.Add(bool(g.ranking));
  if (g.ranking) {
    const auto& r = *g.ranking;
    h.Add(r.source_native);
    h.Add(r.metric);
    h.Add(r.description.dump(-1, ' ', false, Json::error_handler_t::replace));
    h.Add(uint64_t(r.ranked.size()));
    for (const auto& e : r.ranked) AddEntry(h, m, e);
    h.Add(uint64_t(r.ineligible.size()));
    for (const auto& e : r.ineligible) AddEntry(h, m, e);
  }
  h.Add(uint64_t(g.members.size()));
  for (const auto& e : g.members) AddEntry(h, m, e);
  h.Add(bool(g.records));
  if (g.records) {
    h.Add(uint64_t(g.records->events.size()));
    for (const auto& ev : g.records->events) {
      h.Add(ev.run);
      h.Add(bool(ev.previous));
      if (ev.previous) {
        h.Add(*ev.previous);
        h.Add(m.Has(RunPage(*ev.previous)));
      }
      h.Add(ev.at);
      h.Add(ev.value);
      h.Add(ev.previous_value);
      h.Add(ev.in_export);
    }
  }
  // The series are the entries' (model.h); their pages are linked.
  h.Add(uint64_t(g.series.size()));
  for (const SeriesView* s : g.series) {
    h.Add(s->page);
    h.Add(m.Has(s->page));
  }
  return h.Finish();
}

std::string OperationInputs(const Model& m, const OperationView& op, const std::string& salt) {
  Hasher h;
  h.Add(salt);
  h.Add("operation");
  h.Add(op.digest);
  h.Add(op.name);
  h.Add(uint64_t(op.groups.size()));
  for (const GroupView* g : op.groups) {
    AddSummary(h, m, g->summary);
    // Its axes are its workload's, named by digest in the summary.
    h.Add(uint64_t(g->ranking ? g->ranking->ranked.size() : 0));
    if (g->ranking)
      for (const auto& e : g->ranking->ranked) AddEntry(h, m, e);
  }
  return h.Finish();
}

Result<std::string> SettingInputs(Store& store, const Model& m, const SettingView& v, const std::string& salt) {
  Hasher h;
  h.Add(salt);
  h.Add("setting");
  h.Add(v.digest);
  h.Add(uint64_t(v.kind));
  KI_ASSIGN_OR_RETURN(auto doc, store.DocumentOf(v.digest));
  h.Add(doc ? doc->raw() : "no document");
  h.Add(uint64_t(v.groups.size()));
  for (const GroupView* g : v.groups) AddSummary(h, m, g->summary);
  return h.Finish();
}

std::string SeriesInputs(const Model& m, const SeriesView& s, const std::string& salt) {
  Hasher h;
  h.Add(salt);
  h.Add("series");
  h.Add(s.label);
  h.Add(s.by_implementation);
  AddSummary(h, m, s.group->summary);
  h.Add(uint64_t(s.runs.size()));
  for (const auto* e : s.runs) AddEntry(h, m, *e);
  h.Add(uint64_t(s.timed.size()));
  for (size_t i : s.timed) h.Add(uint64_t(i));
  return h.Finish();
}

}  // namespace ki::report
