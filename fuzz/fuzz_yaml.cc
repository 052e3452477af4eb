// The YAML adapter (src/json/yaml.cc): any bytes give documents or an
// InvalidInput; aliases stay within the node and byte budgets; every string
// that comes out is UTF-8 (so its canonical form exists).
#include "fuzz.h"
#include "ki/json.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace ki;
  ParseLimits limits;
  // Small budgets: a fuzzer finds bombs fast, and an input that expands to
  // the budget costs time in proportion (fuzz_manifest.cc has figures).
  limits.max_yaml_nodes = 1 << 12;
  limits.max_bytes = 1 << 14;  // and 4 x this many bytes of scalars
  auto r = ParseDocuments(fuzz::Bytes(data, size), DocFormat::kYaml, "fuzz.yaml", limits);
  if (!r.ok()) {
    KI_FUZZ_CHECK(r.status().IsInvalidInput(), r.status().message());
    return 0;
  }
  for (const Json& doc : *r) {
    // Canonicalize refuses only floats it cannot write (none come out of
    // the parser) and strings that are not UTF-8.
    auto c = Canonicalize(doc);
    KI_FUZZ_CHECK(c.ok(), c.status().message());
    KI_FUZZ_CHECK(c->size() <= (std::size_t(1) << 24), "");
  }
  return 0;
}
