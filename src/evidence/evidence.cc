// Evidence levels (include/ki/evidence.h; docs/format.md, "Evidence levels").
#include "ki/evidence.h"

#include <algorithm>
#include <set>

namespace ki {

std::string_view EvidenceLevelName(EvidenceLevel level) {
  switch (level) {
    case EvidenceLevel::kReported: return "reported";
    case EvidenceLevel::kReproducible: return "reproducible";
    case EvidenceLevel::kVerified: return "verified";
    case EvidenceLevel::kReplicated: return "replicated";
  }
  return "?";
}

std::string Evidence::Label() const {
  return std::string(EvidenceLevelName(level)) + (disputed() ? ", disputed" : "");
}

Json Evidence::ToJson() const {
  Json atts = Json::array();
  for (const auto& a : attestations) atts.push_back(a.ToJson());
  return {{"level", std::string(EvidenceLevelName(level))},
          {"disputed", disputed()},
          {"reason", reason},
          {"sourcePresent", source_present},
          {"rawEvidencePresent", raw_evidence_present},
          {"attestations", atts}};
}

namespace {

// True when the store holds the bytes of the digest string `text`.
bool Holds(Store& store, const Json& text) {
  if (!text.is_string()) return false;
  auto d = Digest::Parse(text.get<std::string>());
  if (!d.ok()) return false;
  auto info = store.Stat(*d);
  return info.ok() && info->has_value();
}

// KernelIndex's "reproducible": source available and raw evidence present,
// judged by what this store holds.
void CheckReproducible(Store& store, const Manifest& run, Evidence* ev) {
  const Json& s = run.spec;
  if (s.contains("implementationDigest") && s["implementationDigest"].is_string()) {
    auto impl_digest = Digest::Parse(s["implementationDigest"].get<std::string>());
    if (impl_digest.ok()) {
      auto impl = store.ReadManifest(*impl_digest);
      if (impl.ok() && impl->spec.contains("source") && impl->spec["source"].is_object() &&
          impl->spec["source"].contains("contentDigest")) {
        ev->source_present = Holds(store, impl->spec["source"]["contentDigest"]);
      }
    }
  }
  if (s.contains("evidence") && s["evidence"].is_object()) {
    for (const char* f : {"logs", "rawSamples"}) {
      const Json& e = s["evidence"];
      if (e.contains(f) && e[f].is_object() && e[f].contains("digest") && Holds(store, e[f]["digest"])) {
        ev->raw_evidence_present = true;
      }
    }
  }
}

}  // namespace

Result<EvidenceEvaluator> EvidenceEvaluator::OpenDefault() {
  KI_ASSIGN_OR_RETURN(KeySources keys, KeySources::LoadDefault());
  return EvidenceEvaluator(std::move(keys));
}

Result<Evidence> EvidenceEvaluator::Evaluate(Store& store, const Digest& d) const {
  KI_ASSIGN_OR_RETURN(auto info, store.Stat(d));
  if (info && info->type == ObjectType::kManifest && info->kind == Kind::kBenchmarkRun) {
    KI_ASSIGN_OR_RETURN(Manifest run, store.ReadManifest(d));
    return EvaluateRun(store, run);
  }
  return Decide(store, d, info.has_value(), false, Evidence());
}

Result<Evidence> EvidenceEvaluator::EvaluateRun(Store& store, const Manifest& run) const {
  Evidence ev;
  CheckReproducible(store, run, &ev);
  return Decide(store, run.digest, true, true, std::move(ev));
}

Result<Evidence> EvidenceEvaluator::Decide(Store& store, const Digest& d, bool held, bool is_run, Evidence ev) const {
  KI_ASSIGN_OR_RETURN(ev.attestations, VerifyAttestations(store, d, keys_));

  struct Reproduction {
    std::set<std::string> keyids;
    std::string machine;
  };
  std::vector<Reproduction> counted;
  for (size_t i = 0; i < ev.attestations.size(); ++i) {
    const AttestationReport& a = ev.attestations[i];
    if (a.fault() || !a.predicate) continue;
    if (*a.predicate == PredicateKind::kDisputed && a.TrustedBy()) ev.disputes.push_back(i);
    if (*a.predicate != PredicateKind::kReproduced) continue;
    auto runners = a.TrustedSignatures(Role::kRunner);
    const Json& rerun = a.predicate_body["rerun"];  // shape checked by CheckEnvelope
    if (runners.empty() || !rerun.value("passed", false)) continue;
    // `ki rerun` signs its verdict; a `reproduced` statement whose verdict
    // says otherwise does not verify, and a trusted runner's
    // not-reproduced verdict disputes the run whatever the predicate type.
    // A statement without a verdict (signed by hand with `ki sign`, or by an
    // older ki) is its signer's word that the number held.
    const std::string outcome = rerun.contains("verdict") ? rerun["verdict"].value("outcome", "") : "reproduced";
    if (outcome == "not-reproduced") ev.disputes.push_back(i);
    if (outcome != "reproduced") continue;
    Reproduction r;
    for (const auto* s : runners) r.keyids.insert(s->keyid);
    r.machine = rerun.value("machine", "");
    counted.push_back(std::move(r));
    ev.reproductions.push_back(i);
  }
  // Replicated: two reproductions that share neither a trusted runner key
  // nor the machine. An envelope may carry several runners' signatures, so
  // "different keys" means disjoint key sets: one runner who co-signed both
  // re-runs has vouched for both, and that is not independent replication.
  auto share_a_key = [](const Reproduction& x, const Reproduction& y) {
    for (const auto& k : x.keyids)
      if (y.keyids.count(k)) return true;
    return false;
  };
  bool replicated = false;
  for (size_t i = 0; i < counted.size() && !replicated; ++i) {
    for (size_t j = i + 1; j < counted.size() && !replicated; ++j) {
      replicated = counted[i].machine != counted[j].machine && !share_a_key(counted[i], counted[j]);
    }
  }
  if (replicated) {
    ev.level = EvidenceLevel::kReplicated;
    ev.reason = std::to_string(counted.size()) + " passing re-runs by trusted runners on different machines";
  } else if (!counted.empty()) {
    ev.level = EvidenceLevel::kVerified;
    ev.reason = "a passing re-run attested by a trusted runner";
  } else if (ev.source_present && ev.raw_evidence_present) {
    ev.level = EvidenceLevel::kReproducible;
    ev.reason = "source and raw evidence are in this store";
  } else {
    ev.level = EvidenceLevel::kReported;
    if (held && is_run) {
      ev.reason = !ev.source_present && !ev.raw_evidence_present ? "no source and no raw evidence in this store"
                  : !ev.source_present                           ? "the source is not in this store"
                                                                 : "no raw evidence (log, samples) in this store";
    } else {
      ev.reason = "no passing re-run attested by a trusted runner";
    }
  }
  return ev;
}

Result<EvidenceLevel> EvidenceEvaluator::Level(Store& store, const Digest& d) const {
  KI_ASSIGN_OR_RETURN(Evidence ev, Evaluate(store, d));
  return ev.level;
}

Result<EvidenceEvaluator::Shown> EvidenceEvaluator::ShownLevel(Store& store, const Digest& run,
                                                              EvidenceLevel indexed) const {
  KI_ASSIGN_OR_RETURN(auto atts, ListAttestations(store, run));
  if (atts.empty()) return Shown{indexed, false};
  KI_ASSIGN_OR_RETURN(Evidence ev, Evaluate(store, run));
  return Shown{std::max(indexed, ev.level), ev.disputed()};
}

Result<EvidenceLevel> EvidenceLevelOf(Store& store, const Digest& d) {
  KI_ASSIGN_OR_RETURN(EvidenceEvaluator e, EvidenceEvaluator::OpenDefault());
  return e.Level(store, d);
}

}  // namespace ki
