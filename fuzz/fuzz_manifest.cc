// Manifest input (src/manifest): envelope, kind, schema (patterns, lengths,
// durations), normalisation, identity. Any bytes, JSON or YAML, give
// manifests or an InvalidInput; a manifest's canonical bytes parse again to
// the same manifest digest.
#include "fuzz.h"
#include "ki/manifest.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace ki;
  // Small budgets, as fuzz_yaml's: with the defaults (2^20 nodes after
  // alias expansion) the corpus fills with YAML that expands to the budget,
  // and one such input of 393 bytes took 4.6 s under the sanitizers on the
  // shared 2-core machine (15 ms with these budgets). The checks that are
  // fuzzed are the same at any budget.
  ParseLimits limits;
  limits.max_yaml_nodes = 1 << 12;
  limits.max_bytes = 1 << 14;  // and 4 x this many bytes of scalars
  auto r = ParseManifestInput(fuzz::Bytes(data, size), DocFormat::kAuto, "fuzz.manifest", limits);
  if (!r.ok()) {
    KI_FUZZ_CHECK(r.status().IsInvalidInput(), r.status().message());
    return 0;
  }
  for (const Manifest& m : r->manifests) {
    KI_FUZZ_CHECK(Sha256Of(m.canonical) == m.digest, m.canonical);
  }
  return 0;
}
