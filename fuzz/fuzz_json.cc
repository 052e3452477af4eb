// Strict JSON parsing (src/json/parse.cc): any bytes give a value or an
// InvalidInput with a position, never a crash, an exception or unbounded
// recursion (depth limit).
#include "fuzz.h"
#include "ki/json.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace ki;
  auto r = ParseDocument(fuzz::Bytes(data, size), DocFormat::kJson, "fuzz.json");
  if (!r.ok()) {
    KI_FUZZ_CHECK(r.status().IsInvalidInput(), r.status().message());
    KI_FUZZ_CHECK(r.status().message().rfind("fuzz.json", 0) == 0, r.status().message());
  }
  return 0;
}
