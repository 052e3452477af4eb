// RFC 8785 canonical JSON (src/json/canonical.cc): for every JSON value the
// parser accepts, the canonical form parses back to a value with the same
// canonical form (canonicalisation is idempotent), and is valid JSON.
#include "fuzz.h"
#include "ki/json.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace ki;
  auto v = ParseDocument(fuzz::Bytes(data, size), DocFormat::kJson, "fuzz.json");
  if (!v.ok()) return 0;
  auto c1 = Canonicalize(*v);
  if (!c1.ok()) {
    KI_FUZZ_CHECK(c1.status().IsInvalidInput(), c1.status().message());
    return 0;
  }
  ParseLimits roomy;
  roomy.max_bytes = c1->size() + 1;
  auto back = ParseDocument(*c1, DocFormat::kJson, "canonical", roomy);
  KI_FUZZ_CHECK(back.ok(), *c1 + " :: " + back.status().message());
  auto c2 = Canonicalize(*back);
  KI_FUZZ_CHECK(c2.ok() && *c2 == *c1, *c1);
  return 0;
}
