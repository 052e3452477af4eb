// The export reader (src/catalog/reader.cc: plain or zstd JSON lines, the
// line-length limit) and the import of its lines (src/catalog/import.cc:
// row parsing, manifest rebuilding, key recomputation) into a store made
// once. Any bytes give a report or an error, never a crash, an escaped
// exception or memory beyond the limits.
#include <unistd.h>

#include <cstdlib>
#include <string>

#include "fuzz.h"
#include "ki/catalog.h"
#include "ki/env.h"
#include "ki/store.h"

namespace {

struct Fixture {
  std::string dir, file;
  std::unique_ptr<ki::Store> store;
};

// Made once and never destroyed (the atexit handler still needs it).
Fixture& Get() {
  static Fixture* f = [] {
    char tmpl[] = "/tmp/ki-fuzz-export-XXXXXX";
    const char* d = ::mkdtemp(tmpl);
    if (!d) ki::fuzz::Die("mkdtemp");
    auto* x = new Fixture;
    x->dir = d;
    x->file = x->dir + "/export.jsonl";
    ki::StoreOptions opts;
    opts.map_size = 1ull << 30;
    auto s = ki::Store::Init(x->dir + "/store", opts);
    if (!s.ok()) ki::fuzz::Die("store", s.status().message());
    x->store = std::move(s).value();
    return x;
  }();
  static const bool cleanup = [] {
    std::atexit([] {
      f->store.reset();
      (void)ki::Env::Default()->RemoveTree(f->dir);
    });
    return true;
  }();
  (void)cleanup;
  return *f;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace ki;
  Fixture& f = Get();
  if (!Env::Default()->WriteFileAtomic(f.file, fuzz::Bytes(data, size), Durability::kNone).ok()) return 0;
  auto text = catalog::ReadExport(f.file);
  if (!text.ok()) return 0;
  catalog::ImportOptions opts;
  opts.threads = 1;
  (void)catalog::ImportKernelIndex(*f.store, *text, "fuzz.jsonl", opts);
  return 0;
}
