// The fixtures of the store's tests (store_test.cc, store_damage_test.cc):
// a fresh store per test, with a small loose threshold so that tests reach
// loose files too; SeedTest adds the seed record's manifests.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ki/ingest.h"
#include "ki/store.h"
#include "testutil/testutil.h"

namespace ki::test {

class StoreTest : public ::testing::Test {
 protected:
  void SetUp() override { Reopen(); }
  void Reopen(Env* env = nullptr) {
    store_.reset();
    StoreOptions o;
    o.env = env;
    o.loose_threshold = 4096;  // small, so tests exercise loose files too
    auto s = Store::Init(dir_.path(), o);
    ASSERT_OK(s);
    store_ = std::move(s).value();
  }
  Digest PutBlob(const std::string& bytes, const std::string& mt = "text/plain") {
    auto b = store_->NewBatch();
    EXPECT_OK(b);
    auto r = (*b)->PutBlob(bytes, mt);
    EXPECT_OK(r);
    EXPECT_OK((*b)->Commit());
    return r->digest;
  }
  size_t CountObjects() {
    size_t n = 0;
    EXPECT_OK(store_->ForEachObject([&](const ObjectInfo&) { return ++n, true; }));
    return n;
  }
  std::string RandomText(size_t n, uint32_t seed) {
    std::string s(n, ' ');
    uint32_t x = seed * 2654435761u + 1;
    for (auto& c : s) {
      x ^= x << 13, x ^= x >> 17, x ^= x << 5;
      c = char('a' + x % 26);
    }
    return s;
  }

  test::TempDir dir_;
  std::unique_ptr<Store> store_;
};

class SeedTest : public StoreTest {
 protected:
  std::vector<AddedObject> AddSeed() {
    AddInput in;
    in.source = "seed.manifest.json";
    in.bytes = test::ReadFileOrDie(
        test::DataPath("kernelindex/fixtures/gpt-o3_cuda_5548d0.gqa_paged_decode_h32_kv4_d128_ps1.manifest.json"));
    auto r = AddInputs(*store_, {in});
    EXPECT_OK(r);
    return r.ok() ? *r : std::vector<AddedObject>{};
  }
  // The seed, a YAML operation spec and a log blob: every store table then
  // has entries (the damage tests change one and compare). Returns the blob.
  Digest AddSeedYamlAndBlob() {
    EXPECT_EQ(AddSeed().size(), 3u);
    AddInput yaml;
    yaml.source = "operation-spec.yaml";
    yaml.bytes = test::ReadFileOrDie(test::DataPath("kernelindex/examples/operation-spec.yaml"));
    EXPECT_OK(AddInputs(*store_, {yaml}));
    return PutBlob("a log line\n");
  }
};

}  // namespace ki::test
