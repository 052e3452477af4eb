// Manifest input (src/manifest): envelope, kind, schema (patterns, lengths,
// durations), normalisation, identity. Any bytes, JSON or YAML, give
// manifests or an InvalidInput; a manifest's canonical bytes parse again to
// the same manifest digest.
#include "fuzz.h"
#include "ki/manifest.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace ki;
  auto r = ParseManifestInput(fuzz::Bytes(data, size), DocFormat::kAuto, "fuzz.manifest");
  if (!r.ok()) {
    KI_FUZZ_CHECK(r.status().IsInvalidInput(), r.status().message());
    return 0;
  }
  for (const Manifest& m : r->manifests) {
    KI_FUZZ_CHECK(Sha256Of(m.canonical) == m.digest, m.canonical);
  }
  return 0;
}
