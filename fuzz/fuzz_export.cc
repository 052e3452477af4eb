// The export reader (src/catalog/reader.cc): plain or zstd JSON lines, the
// 64 MiB line limit, the zstd frame size checks; then each line as the
// import parses a row (strict JSON, 64 MiB, depth 72). Any bytes give the
// text or an error, never a crash, an escaped exception, or memory beyond
// the limits. (The import's manifest rebuilding is reached through
// fuzz_manifest; the whole import needs a store, which this build leaves
// out to keep the instrumented build small.) The input reaches the reader
// through an in-memory Env, not a file written per execution.
#include <string>

#include "fuzz.h"
#include "ki/catalog.h"
#include "ki/json.h"
#include "memory_env.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace ki;
  static fuzz::MemoryEnv* env = new fuzz::MemoryEnv;  // never destroyed: no exit-time order to mind
  const std::string file = "fuzz/export.jsonl";
  env->Put(file, std::string(fuzz::Bytes(data, size)));
  auto text = catalog::ReadExport(file, env);
  if (!text.ok()) {
    KI_FUZZ_CHECK(text.status().IsInvalidInput() || text.status().IsIOError(), text.status().message());
    return 0;
  }
  ParseLimits limits;  // as ImportKernelIndex parses a row
  limits.max_bytes = 64 << 20;
  limits.max_depth = 72;
  std::string_view rest = *text;
  size_t line = 0;
  while (!rest.empty()) {
    size_t nl = rest.find('\n');
    std::string_view l = rest.substr(0, nl);
    KI_FUZZ_CHECK(l.size() <= (size_t(64) << 20), "a line over the limit came through");
    ++line;
    auto row = ParseDocument(l, DocFormat::kJson, "fuzz.jsonl:" + std::to_string(line), limits);
    if (!row.ok()) KI_FUZZ_CHECK(row.status().IsInvalidInput(), row.status().message());
    if (nl == std::string_view::npos) break;
    rest.remove_prefix(nl + 1);
  }
  return 0;
}
