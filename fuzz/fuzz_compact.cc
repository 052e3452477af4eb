// The catalog's stored JSON values (src/catalog/compact_json.cc: the binary
// form of catalog.cohorts and catalog.events since store format 9, or JSON
// text before): bytes from a damaged index file are read as a tree or
// refused, never a crash; a tree read from the binary form is written again
// to bytes that read back as the same tree. (A tree read from JSON text is
// not round-tripped: text may nest deeper than the binary form's 32 levels,
// and catalog values never do.)
#include "catalog/compact_json.h"
#include "fuzz.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace ki;
  std::string_view bytes = fuzz::Bytes(data, size);
  Json tree;
  if (!catalog::tables::DecodeStoredJson(bytes, &tree)) return 0;
  if (bytes.empty() || bytes[0] != '\x02') return 0;
  const std::string again = catalog::tables::EncodeCompactJson(tree);
  Json back;
  KI_FUZZ_CHECK(catalog::tables::DecodeStoredJson(again, &back), "re-encoded value does not decode");
  KI_FUZZ_CHECK(back == tree, tree.dump());
  return 0;
}
