#include "report/inputs.h"

#include "ki/catalog.h"
#include "ki/human.h"
#include "report/pages.h"

namespace ki::report {

namespace {

// Length-prefixed fields: no two different inputs hash alike.
class Hasher {
 public:
  void Add(std::string_view s) {
    h_.Update(std::to_string(s.size()));
    h_.Update(":");
    h_.Update(s);
  }
  void Add(const Digest& d) { Add(d.raw()); }
  std::string Finish() { return h_.Finish().str(); }

 private:
  Sha256 h_;
};

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

Result<std::string> RunInputs(Store& store, const Model& m, const Digest& run, const RunPlace& place,
                              const std::vector<Digest>& watched, const std::string& salt) {
  Hasher h;
  h.Add(salt);
  h.Add(run);
  KI_ASSIGN_OR_RETURN(auto doc, store.DocumentOf(run));
  h.Add(doc ? doc->raw() : "no document");
  if (place.group) {
    const GroupView& g = *place.group;
    h.Add(g.summary.cohort);
    h.Add(g.summary.operation_name);
    h.Add(m.Has(g.page) ? "group page" : "");
    h.Add(m.Has(OperationPage(g.summary.operation)) ? "operation page" : "");
    if (place.entry) {
      h.Add(std::to_string(place.entry->rank) + (place.entry->tied_with_previous ? "=" : ""));
      for (const auto& r : place.entry->reasons) h.Add(r);
    }
    if (g.ranking) {
      h.Add(std::to_string(g.ranking->ranked.size()) + (g.ranking->source_native ? " source-native" : " strict"));
      if (!g.ranking->ranked.empty()) {
        const auto& first = g.ranking->ranked.front();
        h.Add(first.run);
        h.Add(ValueText(first));
        h.Add(m.Has(RunPage(first.run)) ? "first page" : "");
      }
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
  h.Add("watched");
  for (const auto& w : watched) {
    h.Add(w);
    KI_ASSIGN_OR_RETURN(auto info, store.Stat(w));
    if (info) {
      h.Add("held");
      h.Add(info->media_type);
      KI_ASSIGN_OR_RETURN(auto names, store.NamesOf(w));
      h.Add(names.empty() ? "" : names.front());
    } else {
      KI_ASSIGN_OR_RETURN(auto absent, store.StatAbsent(w));
      h.Add(absent ? "absent " + absent->media_type : "missing");
    }
    h.Add(m.Has(RunPage(w)) ? "run page" : "");
    h.Add(m.Has(SettingPage(Kind::kBenchmarkProtocol, w)) || m.Has(SettingPage(Kind::kExecutionEnvironment, w)) ? "setting page" : "");
  }
  return h.Finish();
}

}  // namespace ki::report
