// Evidence levels: how much stands behind a record, derived from stored
// facts and trusted signatures, never chosen by a submitter.
//
// The ladder is KernelIndex's (../shared/docs/kernelindex-identity.md):
//   reported      the default: a source published it;
//   reproducible  a BenchmarkRun whose source and raw evidence are present in
//                 this store: its ImplementationRevision and that revision's
//                 spec.source.contentDigest, and at least one of
//                 spec.evidence.logs / spec.evidence.rawSamples;
//   verified      at least one valid `reproduced` attestation, signed by a
//                 trusted key of role runner, whose re-run passed and whose
//                 verdict (`ki rerun`'s rerun.verdict, when it carries one)
//                 is `reproduced`;
//   replicated    two or more such attestations on different machines whose
//                 trusted runner keys are disjoint (no runner signed both).
// A valid `disputed` attestation by any trusted key, or a trusted runner's
// `not-reproduced` verdict, is reported beside the level (disputed()),
// never hidden. Because the level is recomputed from what
// the store and the trust list hold now, it goes down when a runner key is
// removed from the trust list or evidence leaves the store
// (docs/format.md, "Evidence levels").
//
// Thread-safety: an EvidenceEvaluator may be shared by readers once built.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "ki/digest.h"
#include "ki/json.h"
#include "ki/sign.h"
#include "ki/status.h"
#include "ki/store.h"

namespace ki {

// Ordered: a higher value is stronger evidence (ranking sorts by it).
enum class EvidenceLevel : uint8_t { kReported = 0, kReproducible = 1, kVerified = 2, kReplicated = 3 };
std::string_view EvidenceLevelName(EvidenceLevel level);  // "reported", ...

struct Evidence {
  EvidenceLevel level = EvidenceLevel::kReported;
  bool source_present = false;        // BenchmarkRun: implementation + its source bytes held
  bool raw_evidence_present = false;  // BenchmarkRun: a log or raw samples held
  std::vector<AttestationReport> attestations;  // every attestation of the object, checked
  std::vector<size_t> reproductions;  // indices into attestations that count toward verified
  std::vector<size_t> disputes;       // indices of valid disputes by trusted keys
  std::string reason;                 // one line: why this level

  bool disputed() const { return !disputes.empty(); }
  // "verified", or "verified, disputed".
  std::string Label() const;
  // {level, disputed, reason, sourcePresent, rawEvidencePresent, attestations: [...]}
  Json ToJson() const;
};

// Loads the trust list and local keys once; then evaluates many objects
// (what `ki ls` and `ki rank` call per record).
class EvidenceEvaluator {
 public:
  explicit EvidenceEvaluator(KeySources keys) : keys_(std::move(keys)) {}
  // $KI_HOME's trust list and keys.
  static Result<EvidenceEvaluator> OpenDefault();

  Result<Evidence> Evaluate(Store& store, const Digest& d) const;
  // The same for a BenchmarkRun the caller has read already (`ki log` of a
  // long series: one manifest read per run instead of two).
  Result<Evidence> EvaluateRun(Store& store, const Manifest& run) const;
  Result<EvidenceLevel> Level(Store& store, const Digest& d) const;

  // What a ranking shows for a run its comparison group's index puts at
  // `indexed` (from the objects alone: source, raw evidence, the export's
  // facts): the stronger of that and what the run's attestations attest
  // under the trust list as it is now (a trusted runner's reproduction
  // makes it verified, two independent runners' replicated), and whether
  // a trusted key disputes it. A run without attestations keeps `indexed`
  // and is not evaluated, so a whole imported catalog costs one index
  // lookup a run. `ki rank`, `ki show`'s rank section and the report's
  // group pages call this, so they agree.
  struct Shown {
    EvidenceLevel level = EvidenceLevel::kReported;
    bool disputed = false;
  };
  Result<Shown> ShownLevel(Store& store, const Digest& run, EvidenceLevel indexed) const;

  const KeySources& keys() const { return keys_; }

 private:
  // The level from the attestations of `d` and what `ev` holds so far.
  Result<Evidence> Decide(Store& store, const Digest& d, bool held, bool is_run, Evidence ev) const;
  KeySources keys_;
};

// One-off convenience: OpenDefault() + Level().
Result<EvidenceLevel> EvidenceLevelOf(Store& store, const Digest& d);

}  // namespace ki
