// A batch writes every table in key order at commit (staged writes): what
// it reads back inside the batch, and the page fill that the order gives.
#include <lmdb.h>

#include <algorithm>
#include <random>
#include <vector>

#include "index/lmdb.h"
#include "ki/store.h"
#include "odb/tables.h"
#include "testutil/testutil.h"

namespace ki {
namespace {

using test::TempDir;

std::unique_ptr<Store> InitStore(const TempDir& dir) {
  auto s = Store::Init(dir.path());
  EXPECT_OK(s);
  return std::move(s).value();
}

std::string RandomKey(std::mt19937_64& rng) {
  std::string k(32, '\0');
  for (char& c : k) c = char(rng());
  return k;
}

TEST(BatchOrder, ABatchReadsWhatItStagedAndDropsWhatItsTableDrops) {
  TempDir dir;
  auto store = InitStore(dir);
  auto b = store->NewBatch();
  ASSERT_OK(b);
  Batch& batch = **b;
  ASSERT_OK(batch.Put("test.t", "b", "1"));
  ASSERT_OK(batch.Put("test.t", "a", "2"));
  ASSERT_OK(batch.Put("test.t", "b", "3"));  // the later put wins
  auto got = batch.Get("test.t", "b");
  ASSERT_OK(got);
  ASSERT_TRUE(got->has_value());
  EXPECT_EQ(**got, "3");
  ASSERT_OK(batch.Delete("test.t", "a"));
  got = batch.Get("test.t", "a");
  ASSERT_OK(got);
  EXPECT_FALSE(got->has_value());
  ASSERT_OK(batch.Put("test.t", "c", "4"));
  std::vector<std::string> seen;
  ASSERT_OK(batch.Scan("test.t", "", [&](std::string_view k, std::string_view v) {
    seen.push_back(std::string(k) + "=" + std::string(v));
    return true;
  }));
  EXPECT_EQ(seen, (std::vector<std::string>{"b=3", "c=4"}));
  // Writes after a scan (which wrote the staged ones) are staged again.
  ASSERT_OK(batch.Put("test.t", "a", "5"));
  ASSERT_OK(batch.Delete("test.t", "c"));
  ASSERT_OK(batch.Put("test.u", "x", "6"));
  ASSERT_OK(batch.DropTable("test.u"));
  ASSERT_OK(batch.Put("test.u", "y", "7"));
  ASSERT_OK(batch.Commit());
  for (auto [table, key, want] : std::vector<std::tuple<std::string, std::string, std::string>>{
           {"test.t", "a", "5"}, {"test.t", "b", "3"}, {"test.t", "c", ""}, {"test.u", "x", ""},
           {"test.u", "y", "7"}}) {
    auto v = store->Get(table, key);
    ASSERT_OK(v);
    EXPECT_EQ(v->value_or(""), want) << table << " " << key;
  }
}

// Keys put in random order into one batch end up on full pages: before
// staged writes, each put that fell inside a full page split it in half
// (barenames was 51% full after an import, catalog.events 62%).
TEST(BatchOrder, KeysPutInRandomOrderFillTheirPages) {
  TempDir dir;
  constexpr size_t kEntries = 20000, kValue = 16;
  {
    auto store = InitStore(dir);
    std::mt19937_64 rng(17);
    auto b = store->NewBatch();
    ASSERT_OK(b);
    for (size_t i = 0; i < kEntries; ++i) ASSERT_OK((*b)->Put("test.random", RandomKey(rng), std::string(kValue, 'v')));
    ASSERT_OK((*b)->Commit());
  }
  lmdb::Environment env;
  ASSERT_OK(env.Open(odb::IndexDir(dir.path() + "/.ki"), 1ull << 30, /*read_only=*/true));
  auto txn = lmdb::Txn::Begin(env, false);
  ASSERT_OK(txn);
  auto dbi = env.Table(*txn, "test.random");
  ASSERT_OK(dbi);
  ASSERT_TRUE(dbi->has_value());
  MDB_stat st{};
  ASSERT_EQ(mdb_stat(txn->get(), **dbi, &st), 0);
  EXPECT_EQ(st.ms_entries, kEntries);
  // A leaf node: an 8-byte header, the key and the value, and a 2-byte
  // pointer; a page: 4,096 bytes less a 16-byte header.
  const double fill = double(kEntries * (8 + 32 + kValue + 2)) / double(st.ms_leaf_pages * (4096 - 16));
  EXPECT_GT(fill, 0.9) << st.ms_leaf_pages << " leaf pages";
}

}  // namespace
}  // namespace ki
