#include "ki/store.h"

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <functional>
#include <map>
#include <thread>

#include "index/lmdb.h"
#include "ki/ingest.h"
#include "ki/manifest.h"
#include "odb/dict.h"
#include "odb/frame.h"
#include "odb/store_fixture.h"
#include "odb/tables.h"
#include "testutil/fault_env.h"
#include "testutil/string_file.h"
#include "testutil/testutil.h"

namespace ki {
namespace {

using test::SeedTest;
using test::StoreTest;

// The part of a docs or namesof key that stands for a held object: its
// number (store format 10).
std::string KeyPartOf(Store& store, const Digest& d) {
  auto info = store.Stat(d);
  EXPECT_TRUE(info.ok() && info->has_value()) << d.str();
  return info.ok() && *info ? odb::ObjectKeyPart(**info) : std::string();
}
using test::TempDir;

TEST_F(StoreTest, BlobRoundTripSmallAndLoose) {
  std::string small = "hello, kernel";
  std::string big = RandomText(100000, 1);  // incompressible enough to be loose
  Digest a = PutBlob(small);
  Digest b = PutBlob(big, "application/octet-stream");
  EXPECT_EQ(a, Sha256Of(small));
  auto ra = store_->Read(a);
  ASSERT_OK(ra);
  EXPECT_EQ(*ra, small);
  auto rb = store_->Read(b);
  ASSERT_OK(rb);
  EXPECT_EQ(*rb, big);
  auto ib = store_->Stat(b);
  ASSERT_OK(ib);
  ASSERT_TRUE(ib->has_value());
  EXPECT_EQ((*ib)->location, Location::kLoose);
  EXPECT_EQ((*ib)->media_type, "application/octet-stream");
  EXPECT_EQ((*ib)->size, big.size());
  EXPECT_TRUE(std::filesystem::exists(odb::LoosePath(store_->path(), b)));
  auto ia = store_->Stat(a);
  EXPECT_EQ((*ia)->location, Location::kIndex);
}

TEST_F(StoreTest, SecondPutReportsExisted) {
  auto b = store_->NewBatch();
  ASSERT_OK(b);
  auto r1 = (*b)->PutBlob("same", "text/plain");
  auto r2 = (*b)->PutBlob("same", "text/plain");
  ASSERT_OK(r1);
  ASSERT_OK(r2);
  EXPECT_FALSE(r1->existed);
  EXPECT_TRUE(r2->existed);
  ASSERT_OK((*b)->Commit());
  EXPECT_EQ(CountObjects(), 1u);
}

TEST_F(StoreTest, UncommittedBatchStoresNothing) {
  std::string big = RandomText(50000, 2);
  Digest d = Sha256Of(big);
  {
    auto b = store_->NewBatch();
    ASSERT_OK(b);
    ASSERT_OK((*b)->PutBlob("small", "text/plain"));
    ASSERT_OK((*b)->PutBlob(big, "text/plain"));
    // Destroyed without Commit().
  }
  EXPECT_EQ(CountObjects(), 0u);
  EXPECT_FALSE(std::filesystem::exists(odb::LoosePath(store_->path(), d)));
  auto audit = store_->Audit();
  ASSERT_OK(audit);
  EXPECT_FALSE(audit->HasFaults());
  EXPECT_TRUE(audit->notes.empty());
}

TEST_F(StoreTest, DiskFullDuringWriteStoresNothing) {
  Digest keep = PutBlob("already here");
  test::FaultInjectionEnv env;
  Reopen(&env);
  env.SetWriteBudget(1000);
  auto b = store_->NewBatch();
  ASSERT_OK(b);
  ASSERT_OK((*b)->PutBlob("fits in the index", "text/plain"));
  auto r = (*b)->PutBlob(RandomText(80000, 3), "text/plain");
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(r.status().IsIOError());
  EXPECT_NE(r.status().message().find("No space left on device"), std::string::npos) << r.status().ToString();
  b->reset();
  env.SetWriteBudget(-1);
  EXPECT_EQ(CountObjects(), 1u);
  auto read = store_->Read(keep);
  ASSERT_OK(read);
  EXPECT_EQ(*read, "already here");
  auto audit = store_->Audit();
  ASSERT_OK(audit);
  EXPECT_FALSE(audit->HasFaults());
  EXPECT_TRUE(audit->notes.empty()) << audit->notes.front();
}

TEST_F(StoreTest, FailedDirectorySyncFailsTheCommit) {
  test::FaultInjectionEnv env;
  Reopen(&env);
  env.FailSyncDir(true);
  auto b = store_->NewBatch();
  ASSERT_OK(b);
  ASSERT_OK((*b)->PutBlob(RandomText(80000, 4), "text/plain"));
  Status s = (*b)->Commit();
  EXPECT_TRUE(s.IsIOError());
  b->reset();
  env.FailSyncDir(false);
  EXPECT_EQ(CountObjects(), 0u);
}

TEST_F(StoreTest, ResolveByDigestPrefixAndAmbiguity) {
  std::map<std::string, std::vector<Digest>> by_prefix;
  {
    auto b = store_->NewBatch();
    ASSERT_OK(b);
    for (int i = 0; i < 1500; ++i) {
      auto r = (*b)->PutBlob("blob number " + std::to_string(i), "text/plain");
      ASSERT_OK(r);
      by_prefix[r->digest.hex().substr(0, 4)].push_back(r->digest);
    }
    ASSERT_OK((*b)->Commit());
  }
  const Digest* unique = nullptr;
  std::string ambiguous;
  for (auto& [p, ds] : by_prefix) {
    if (ds.size() == 1 && !unique) unique = &ds[0];
    if (ds.size() > 1 && ambiguous.empty()) ambiguous = p;
  }
  ASSERT_NE(unique, nullptr);
  ASSERT_FALSE(ambiguous.empty()) << "1500 blobs should share some 4-digit prefix";

  for (std::string ref : {unique->str(), unique->hex(), unique->hex().substr(0, 12),
                          "sha256:" + unique->hex().substr(0, 9)}) {
    auto r = store_->Resolve(ref);
    ASSERT_OK(r);
    EXPECT_EQ(*r, *unique) << ref;
  }
  auto amb = store_->Resolve(ambiguous);
  EXPECT_EQ(amb.status().code(), Code::kAmbiguous);
  for (const Digest& d : by_prefix[ambiguous]) EXPECT_NE(amb.status().message().find(d.str()), std::string::npos);

  auto short_prefix = store_->Resolve(unique->hex().substr(0, 3));
  EXPECT_TRUE(short_prefix.status().IsInvalidInput());
  EXPECT_NE(short_prefix.status().message().find("at least 4"), std::string::npos);
  EXPECT_TRUE(store_->Resolve("sha256:abc").status().IsInvalidInput());
  EXPECT_TRUE(store_->Resolve("sha256:" + std::string(64, '0')).status().IsNotFound());
  EXPECT_TRUE(store_->Resolve("no-such-name").status().IsNotFound());
}

TEST_F(StoreTest, AuditReindexRebuildsDerivedTables) {
  Digest a = PutBlob("one");
  Digest b = PutBlob(RandomText(90000, 6));
  // Wipe a derived table: audit then finds objects without index entries.
  {
    auto batch = store_->NewBatch();
    ASSERT_OK(batch);
    ASSERT_OK((*batch)->Delete(odb::kMeta, a.raw()));
    ASSERT_OK((*batch)->Delete(odb::kMeta, b.raw()));
    ASSERT_OK((*batch)->Commit());
  }
  auto before = store_->Audit();
  ASSERT_OK(before);
  EXPECT_TRUE(before->HasFaults());
  auto after = store_->Reindex();
  ASSERT_OK(after);
  EXPECT_FALSE(after->HasFaults());
  EXPECT_EQ(after->objects, 2u);
  EXPECT_EQ(*store_->Read(a), "one");
  auto info = store_->Stat(b);
  ASSERT_OK(info);
  ASSERT_TRUE(info->has_value());
  EXPECT_EQ((*info)->location, Location::kLoose);
}

// A valid WorkloadCase whose tensor names (no length limit in the schema)
// make reference keys longer than LMDB's 511 bytes: stored, each reference
// kept apart, reindexed. It failed with "index put: MDB_BAD_VALSIZE" (exit 5).
TEST_F(StoreTest, ReferenceKeysOverLmdbsLimitAreFitted) {
  const std::string artifact = "sha256:" + std::string(64, 'a');
  const std::string a = "t" + std::string(600, 'x') + "a", b = "t" + std::string(600, 'x') + "b";
  Json tensor = {{"shape", {2}}, {"dtype", "bf16"},
                 {"data", {{"generator", "file"}, {"artifact", {{"uri", "https://example.com/x"}, {"digest", artifact}}}}}};
  Json doc = {{"apiVersion", "kernelindex.dev/v1alpha1"},
              {"kind", "WorkloadCase"},
              {"metadata", {{"name", "long-tensor-names"}}},
              {"spec", {{"operationSpecDigest", "sha256:" + std::string(64, 'b')},
                        {"axes", {{"n", 2}}},
                        {"tensors", {{a, tensor}, {b, tensor}}},
                        {"correctness", {{"comparator", "elementwise_close"}}}}}};
  auto m = ManifestFromJson(doc, "long.json");
  ASSERT_OK(m);
  {
    auto batch = store_->NewBatch();
    ASSERT_OK(batch);
    ASSERT_OK((*batch)->PutManifest(*m, std::nullopt, ""));
    ASSERT_OK((*batch)->Commit());
  }
  auto check = [&] {
    auto refs = store_->Referrers(*Digest::Parse(artifact));
    ASSERT_OK(refs);
    ASSERT_EQ(refs->size(), 2u);  // the two keys differ only past the kept prefix
    for (const auto& [from, field] : *refs) {
      EXPECT_EQ(from, m->digest);
      EXPECT_EQ(field.rfind("/spec/tensors/t" + std::string(100, 'x'), 0), 0u) << field;
      EXPECT_EQ(field.substr(field.size() - 3), "\u2026") << field;
    }
  };
  check();
  auto audit = store_->Audit();
  ASSERT_OK(audit);
  EXPECT_FALSE(audit->HasFaults());
  auto re = store_->Reindex();
  ASSERT_OK(re);
  EXPECT_FALSE(re->HasFaults());
  check();
}

TEST(FitKey, ShortKeysStayLongKeysAreCutAndHashed) {
  EXPECT_EQ(lmdb::FitKey("abc"), "abc");
  const std::string fits(lmdb::kMaxKeyBytes, 'k');
  EXPECT_EQ(lmdb::FitKey(fits), fits);
  const std::string k1 = fits + "1", k2 = fits + "2";
  const std::string f1 = lmdb::FitKey(k1), f2 = lmdb::FitKey(k2);
  EXPECT_EQ(f1.size(), lmdb::kMaxKeyBytes);
  EXPECT_NE(f1, f2);
  EXPECT_EQ(f1.substr(0, lmdb::kFitKeyPrefixBytes), k1.substr(0, lmdb::kFitKeyPrefixBytes));
  EXPECT_EQ(f1.substr(lmdb::kFitKeyPrefixBytes + 1), Sha256Of(k1).raw());
  EXPECT_EQ(lmdb::KeyText("plain"), "plain");
  // A cut through a 3-byte character (U+20AC) drops the partial character.
  std::string euro;
  for (size_t i = 0; i < 200; ++i) euro += "\u20ac";
  const std::string shown = lmdb::KeyText(lmdb::FitKey(euro));
  EXPECT_EQ(shown, std::string(euro.substr(0, lmdb::kFitKeyPrefixBytes / 3 * 3)) + "\u2026");
}

TEST_F(StoreTest, ReindexAdoptsOrphanLooseFileAndDropsTemporaries) {
  // What a kill -9 between the loose file's rename and the index commit leaves.
  std::string big = RandomText(70000, 7);
  Digest d = Sha256Of(big);
  {
    auto b = store_->NewBatch();
    ASSERT_OK(b);
    ASSERT_OK((*b)->PutBlob(big, "text/plain"));
    // Keep the file: copy it aside before the batch is dropped, then restore it.
    std::string frame = test::ReadFileOrDie(odb::LoosePath(store_->path(), d));
    b->reset();
    test::WriteFileOrDie(odb::LoosePath(store_->path(), d), frame);
    test::WriteFileOrDie(odb::LoosePath(store_->path(), d) + ".tmp-1-0", "partial");
  }
  auto audit = store_->Audit();
  ASSERT_OK(audit);
  EXPECT_FALSE(audit->HasFaults());
  EXPECT_EQ(audit->notes.size(), 2u);
  auto re = store_->Reindex();
  ASSERT_OK(re);
  EXPECT_FALSE(re->HasFaults());
  EXPECT_TRUE(re->notes.empty());
  EXPECT_EQ(*store_->Read(d), big);
}

// A full disk (or another write error) at each step of writing a loose
// object: the data, its fsync, its rename, the directory fsync. The batch
// fails with an IOError that names the step, the objects stored before are
// intact, the audit is clean with nothing left behind, and a retry stores it.
TEST_F(StoreTest, WriteErrorAtEachStepOfALooseObjectStoresNothingAndARetryWorks) {
  using Fault = test::FaultInjectionEnv::CommitFault;
  const std::string small = "already here", earlier_big = RandomText(60000, 11);
  Digest keep_small = PutBlob(small), keep_big = PutBlob(earlier_big);
  test::FaultInjectionEnv env;
  Reopen(&env);
  struct Step {
    const char* name;
    std::function<void()> arm;
    const char* message;  // the step and its error, as the IOError says them
  } steps[] = {
      {"data", [&] { env.SetWriteBudget(100); }, "No space left on device"},
      {"fsync", [&] { env.FailCommits(Fault::kFsync); }, ".tmp: No space left on device"},
      {"rename", [&] { env.FailCommits(Fault::kRename); }, "rename "},
      {"directory fsync", [&] { env.FailSyncDir(true); }, "Input/output error"},
  };
  size_t held = 2;
  uint32_t seed = 20;
  for (const auto& step : steps) {
    SCOPED_TRACE(step.name);
    const std::string big = RandomText(80000, seed++);
    const Digest d = Sha256Of(big);
    step.arm();
    {
      auto b = store_->NewBatch();
      ASSERT_OK(b);
      ASSERT_OK((*b)->PutBlob("fits in the index " + std::string(step.name), "text/plain"));
      auto put = (*b)->PutBlob(big, "text/plain");
      Status s = put.ok() ? (*b)->Commit() : put.status();
      EXPECT_TRUE(s.IsIOError()) << s.ToString();
      EXPECT_NE(s.message().find(step.message), std::string::npos) << s.message();
    }
    env.SetWriteBudget(-1);
    env.FailCommits(Fault::kNone);
    env.FailSyncDir(false);
    EXPECT_EQ(CountObjects(), held);
    EXPECT_FALSE(std::filesystem::exists(odb::LoosePath(store_->path(), d)));
    EXPECT_EQ(*store_->Read(keep_small), small);
    EXPECT_EQ(*store_->Read(keep_big), earlier_big);
    auto audit = store_->Audit();
    ASSERT_OK(audit);
    EXPECT_FALSE(audit->HasFaults());
    EXPECT_TRUE(audit->notes.empty()) << audit->notes.front();
    // The retry, with the disk writable again.
    auto b = store_->NewBatch();
    ASSERT_OK(b);
    ASSERT_OK((*b)->PutBlob(big, "text/plain"));
    ASSERT_OK((*b)->Commit());
    b->reset();
    ++held;
    EXPECT_EQ(*store_->Read(d), big);
  }
}

// A loose file a killed writer renamed into place, adopted by a later
// batch that stores the same object, is synced into its directory before
// the index names it: the batch used to skip the directory fsync for a file
// it found already there, so a crash after its commit could leave the index
// naming a file whose directory entry was never made durable.
TEST_F(StoreTest, AdoptedOrphanLooseFileIsSyncedBeforeTheIndexNamesIt) {
  const std::string big = RandomText(70000, 9);
  const Digest d = Sha256Of(big);
  const std::string path = odb::LoosePath(store_->path(), d);
  {
    auto b = store_->NewBatch();
    ASSERT_OK(b);
    ASSERT_OK((*b)->PutBlob(big, "text/plain"));
    std::string frame = test::ReadFileOrDie(path);
    b->reset();
    test::WriteFileOrDie(path, frame);  // as a kill -9 before the commit leaves it
  }
  test::FaultInjectionEnv env;
  Reopen(&env);
  env.FailSyncDir(true);
  {
    auto b = store_->NewBatch();
    ASSERT_OK(b);
    ASSERT_OK((*b)->PutBlob(big, "text/plain"));
    EXPECT_TRUE((*b)->Commit().IsIOError());
  }
  EXPECT_EQ(CountObjects(), 0u);
  env.FailSyncDir(false);
  auto b = store_->NewBatch();
  ASSERT_OK(b);
  ASSERT_OK((*b)->PutBlob(big, "text/plain"));
  ASSERT_OK((*b)->Commit());
  const auto synced = env.synced_dirs();
  EXPECT_NE(std::find(synced.begin(), synced.end(), path.substr(0, path.rfind('/'))), synced.end());
  EXPECT_EQ(*store_->Read(d), big);
}

// A streamed `ki add` reads its input through the store's Env (it read it
// through Env::Default(), where a fault-injection Env never reached): a
// read error part way through the input fails the add with that error, and
// nothing is stored and no scratch file is left.
TEST_F(StoreTest, StreamedAddReadsItsInputThroughTheStoresEnv) {
  const std::string big = RandomText(3 << 20, 31);
  const std::string input = dir_.Join("input-to-stream.bin");
  test::WriteFileOrDie(input, big);
  test::FaultInjectionEnv env;
  Reopen(&env);
  const size_t before = CountObjects();
  env.FailReads("input-to-stream.bin", 1 << 20);
  AddInput in;
  in.source = input;
  in.type = InputType::kBlob;
  in.stream = true;
  auto added = AddInputs(*store_, {in});
  ASSERT_FALSE(added.ok());
  EXPECT_TRUE(added.status().IsIOError()) << added.status().ToString();
  EXPECT_NE(added.status().message().find("input-to-stream.bin"), std::string::npos) << added.status().ToString();
  EXPECT_NE(added.status().message().find("Input/output error"), std::string::npos) << added.status().ToString();
  EXPECT_EQ(CountObjects(), before);
  EXPECT_FALSE(store_->Stat(Sha256Of(big))->has_value());
  std::error_code ec;
  size_t incoming = 0;
  for (auto it = std::filesystem::directory_iterator(store_->path() + "/objects/incoming", ec);
       !ec && it != std::filesystem::directory_iterator(); ++it)
    ++incoming;
  EXPECT_EQ(incoming, 0u);
  env.FailReads("", 0);
  auto again = AddInputs(*store_, {in});
  ASSERT_OK(again);
  EXPECT_EQ(*store_->Read((*again)[0].digest), big);
}

// ki init on a full disk: FORMAT's write, fsync or rename, or the store
// directory's fsync fails; the error is an IOError and init run again
// (the disk writable) makes a store that works.
TEST(StoreInit, WriteErrorAtEachStepThenARetryWorks) {
  using Fault = test::FaultInjectionEnv::CommitFault;
  for (int step = 0; step < 4; ++step) {
    SCOPED_TRACE(step);
    TempDir dir;
    test::FaultInjectionEnv env;
    StoreOptions o;
    o.env = &env;
    if (step == 0) env.SetWriteBudget(0);
    if (step == 1) env.FailCommits(Fault::kFsync);
    if (step == 2) env.FailCommits(Fault::kRename);
    if (step == 3) env.FailSyncDir(true);
    auto failed = Store::Init(dir.path(), o);
    ASSERT_FALSE(failed.ok());
    EXPECT_TRUE(failed.status().IsIOError()) << failed.status().ToString();
    if (step < 3) {
      EXPECT_NE(failed.status().message().find("No space left on device"), std::string::npos);
      // No FORMAT: the directory is not a store, and says so.
      EXPECT_FALSE(Store::Open(dir.Join(".ki"), OpenMode::kReadOnly).ok());
    }
    env.SetWriteBudget(-1);
    env.FailCommits(Fault::kNone);
    env.FailSyncDir(false);
    auto s = Store::Init(dir.path(), o);
    ASSERT_OK(s);
    auto b = (*s)->NewBatch();
    ASSERT_OK(b);
    ASSERT_OK((*b)->PutBlob("after the retry", "text/plain"));
    ASSERT_OK((*b)->Commit());
    auto audit = (*s)->Audit();
    ASSERT_OK(audit);
    EXPECT_FALSE(audit->HasFaults());
  }
}

// Init made .ki durable inside itself but never synced .ki's parent (a
// crash could lose the whole store) nor index/ after LMDB created its files
// there. Both are synced now, after FORMAT, on every init (a retry after a
// failed sync redoes them), and a failed one is an IOError.
TEST(StoreInit, SyncsTheParentOfKiAndTheIndexDirectory) {
  TempDir dir;
  const std::string parent = dir.Join("work"), ki_dir = parent + "/.ki", index_dir = ki_dir + "/index";
  {
    test::FaultInjectionEnv env;
    StoreOptions o;
    o.env = &env;
    auto s = Store::Init(parent, o);
    ASSERT_OK(s);
    const auto synced = env.synced_dirs();
    auto at = [&](const std::string& d) { return std::find(synced.begin(), synced.end(), d) - synced.begin(); };
    const long n = long(synced.size());
    EXPECT_LT(at(ki_dir), n);
    EXPECT_LT(at(parent), n) << "the parent of .ki is not synced";
    EXPECT_LT(at(index_dir), n) << "index/ is not synced after LMDB made its files";
    EXPECT_LT(at(ki_dir), at(parent));
    EXPECT_TRUE(std::filesystem::exists(index_dir + "/data.mdb"));
  }
  // An existing store: init again still syncs them (the retry of a failed one).
  {
    test::FaultInjectionEnv env;
    StoreOptions o;
    o.env = &env;
    ASSERT_OK(Store::Init(ki_dir, o));  // DIR naming .ki itself
    const auto synced = env.synced_dirs();
    for (const std::string& d : {ki_dir, parent, index_dir})
      EXPECT_NE(std::find(synced.begin(), synced.end(), d), synced.end()) << d;
  }
  // A failed sync is reported.
  {
    TempDir other;
    test::FaultInjectionEnv env;
    StoreOptions o;
    o.env = &env;
    env.FailSyncDir(true);
    auto failed = Store::Init(other.path(), o);
    ASSERT_FALSE(failed.ok());
    EXPECT_TRUE(failed.status().IsIOError()) << failed.status().ToString();
  }
}

TEST_F(StoreTest, AbsentObjectsAreKnownButNotReadable) {
  Digest d = Sha256Of("never published");
  {
    auto b = store_->NewBatch();
    ASSERT_OK(b);
    ASSERT_OK((*b)->RecordAbsent({d, "text/plain", 15, "kernelindex:artifact/" + d.str()}));
    ASSERT_OK((*b)->Commit());
  }
  auto r = store_->Resolve(d.hex().substr(0, 8));
  ASSERT_OK(r);
  EXPECT_EQ(*r, d);
  EXPECT_TRUE(store_->Read(d).status().IsNotFound());
  auto a = store_->StatAbsent(d);
  ASSERT_OK(a);
  ASSERT_TRUE(a->has_value());
  EXPECT_EQ((*a)->media_type, "text/plain");
  EXPECT_EQ(*(*a)->size, 15u);
}

TEST_F(StoreTest, UnsupportedFormatVersionIsRefused) {
  store_.reset();
  // One past this ki's format (odb/tables.h).
  const std::string next = "ki-store " + std::to_string(odb::kFormatVersion + 1);
  test::WriteFileOrDie(dir_.Join(".ki/FORMAT"), next + "\n");
  auto s = Store::Open(dir_.Join(".ki"), OpenMode::kReadOnly);
  EXPECT_TRUE(s.status().IsInvalidInput());
  EXPECT_NE(s.status().message().find(next), std::string::npos) << s.status().message();
}

TEST_F(StoreTest, DiscoverFindsNearestStoreUpward) {
  std::filesystem::create_directories(dir_.Join("a/b/c"));
  auto found = Store::Discover(dir_.Join("a/b/c"));
  ASSERT_OK(found);
  EXPECT_EQ(std::filesystem::canonical(*found), std::filesystem::canonical(dir_.Join(".ki")));
}

// ---- manifests (seed record) ----


// metadata is editorial: several manifests may carry one name (the
// KernelIndex export has 325 run names shared by 770 runs). The name must
// then resolve to none of them silently, and every holder keeps its name.
TEST_F(SeedTest, ANameSeveralManifestsCarryIsAmbiguousAndEachKeepsIt) {
  const std::string name = "sol-trace-gqa-paged-decode-h32-kv4-d128-ps1-27ef153a";
  auto added = AddSeed();
  ASSERT_EQ(added.size(), 3u);
  const Digest first = added[0].digest;

  // Another run under the same name: other latency, other title.
  Json bundle = Json::parse(test::ReadFileOrDie(
      test::DataPath("kernelindex/fixtures/gpt-o3_cuda_5548d0.gqa_paged_decode_h32_kv4_d128_ps1.manifest.json")));
  bundle["run"]["spec"]["timing"]["latencyNs"]["mean"] = 350000;
  bundle["run"]["metadata"]["title"] = "a second run of the seed's workload";
  AddInput in;
  in.source = "second.manifest.json";
  in.bytes = bundle.dump();
  auto r = AddInputs(*store_, {in});
  ASSERT_OK(r);
  const Digest second = (*r)[0].digest;
  ASSERT_NE(first, second);

  auto all = store_->LookupName(Kind::kBenchmarkRun, name);
  ASSERT_OK(all);
  EXPECT_EQ(*all, (std::vector<Digest>{second, first}));  // the latest first
  for (const std::string& ref : {"BenchmarkRun/" + name, "benchmarkrun/" + name, name}) {
    auto res = store_->Resolve(ref);
    ASSERT_TRUE(res.status().code() == Code::kAmbiguous) << ref << ": " << res.status().ToString();
    const std::string& msg = res.status().message();
    EXPECT_NE(msg.find(first.str()), std::string::npos) << msg;
    EXPECT_NE(msg.find(second.str()), std::string::npos) << msg;
    EXPECT_NE(msg.find("gpt-o3_cuda_5548d0"), std::string::npos) << msg;  // titles tell them apart
    EXPECT_NE(msg.find("a second run"), std::string::npos) << msg;
  }
  // A name that starts with this one is another name.
  EXPECT_TRUE(store_->Resolve("BenchmarkRun/sol-trace-gqa-paged-decode-h32-kv4-d128-ps1-27ef153").status().IsNotFound());
  for (const Digest& d : {first, second}) {
    auto names = store_->NamesOf(d);
    ASSERT_OK(names);
    EXPECT_EQ(*names, std::vector<std::string>{"BenchmarkRun/" + name}) << d.str();
  }
  // The unchanged protocol is still one manifest under its name.
  auto protocol = store_->Resolve("flashinfer-bench-trace");
  ASSERT_OK(protocol);
  EXPECT_EQ(*protocol, added[1].digest);
  auto audit = store_->Audit();
  ASSERT_OK(audit);
  EXPECT_FALSE(audit->HasFaults());

  // A store written before `nameset` existed knew only the latest holder
  // (upgraded, that one's nameset entry, marked): the earlier one's entries
  // are gone. Reindex records them again from the documents.
  {
    auto b = store_->NewBatch();
    ASSERT_OK(b);
    std::string set_key = "BenchmarkRun/" + name;
    ASSERT_OK((*b)->Delete(odb::kNameSet, set_key + std::string(first.raw())));
    ASSERT_OK((*b)->Delete(odb::kNamesOf, KeyPartOf(*store_, first) + set_key));
    ASSERT_OK((*b)->Commit());
  }
  auto legacy = store_->Resolve("BenchmarkRun/" + name);
  ASSERT_OK(legacy);
  EXPECT_EQ(*legacy, second);
  auto reindexed = store_->Reindex();
  ASSERT_OK(reindexed);
  EXPECT_FALSE(reindexed->HasFaults());
  EXPECT_TRUE(store_->Resolve("BenchmarkRun/" + name).status().code() == Code::kAmbiguous);
  auto names = store_->NamesOf(first);
  ASSERT_OK(names);
  EXPECT_EQ(*names, std::vector<std::string>{"BenchmarkRun/" + name});

  // A name set entry for an object the store does not hold is a fault.
  {
    auto b = store_->NewBatch();
    ASSERT_OK(b);
    Digest ghost = Sha256Of("not stored");
    ASSERT_OK((*b)->Put(odb::kNameSet, "BenchmarkRun/ghost" + std::string(ghost.raw()), ""));
    ASSERT_OK((*b)->Commit());
  }
  auto faulty = store_->Audit();
  ASSERT_OK(faulty);
  ASSERT_TRUE(faulty->HasFaults());
  bool named = false;
  for (const auto& e : faulty->faults) named = named || e.what.find("BenchmarkRun/ghost") != std::string::npos;
  EXPECT_TRUE(named);
}

TEST_F(SeedTest, BundleSplitsNamesResolveAndMissingRefsAreMissing) {
  auto added = AddSeed();
  ASSERT_EQ(added.size(), 3u);
  EXPECT_EQ(added[0].kind, "BenchmarkRun");
  EXPECT_EQ(added[1].digest.str(), "sha256:7d44d206ad086b4bece35ce31f6531ebb11f07e0d9dcfb74c75be86d3ec02095");
  EXPECT_EQ(added[2].digest.str(), "sha256:f4292a8be127b7230cd3995c1d605fb6c644e2c2f94566e1d28cc1be766ca5d5");
  Digest run = added[0].digest;

  auto byname = store_->Resolve("BenchmarkRun/sol-trace-gqa-paged-decode-h32-kv4-d128-ps1-27ef153a");
  ASSERT_OK(byname);
  EXPECT_EQ(*byname, run);
  auto bare = store_->Resolve("flashinfer-bench-trace");
  ASSERT_OK(bare);
  EXPECT_EQ(*bare, added[1].digest);

  // Stored bytes re-hash to the digest.
  auto bytes = store_->Read(run);
  ASSERT_OK(bytes);
  EXPECT_EQ(Sha256Of(*bytes), run);
  auto doc = store_->ReadDocument(run);
  ASSERT_OK(doc);
  ASSERT_TRUE(doc->has_value());
  EXPECT_EQ((**doc)["metadata"]["name"], "sol-trace-gqa-paged-decode-h32-kv4-d128-ps1-27ef153a");

  auto v = store_->Verify(run);
  ASSERT_OK(v);
  EXPECT_FALSE(v->HasFaults());
  std::set<std::string> missing;
  for (const auto& e : v->entries)
    if (e.state == CheckState::kMissing) missing.insert(e.digest.str());
  EXPECT_EQ(missing, (std::set<std::string>{
                         "sha256:9065668f65f0c70486702b4d7105d2a2da70e1aebd03314d68ffce9743ed081e",
                         "sha256:fcf16458148fc0adb1372367ac83b468de3af7a4009854a2980b9096ec1e0088",
                         "sha256:7e90ce0aebbdc3c556c70bd8bc23755a6ced33f9edacfdd06be74d2c2515a872"}));

  auto refs = store_->Referrers(added[1].digest);
  ASSERT_OK(refs);
  ASSERT_EQ(refs->size(), 1u);
  EXPECT_EQ((*refs)[0].first, run);
  EXPECT_EQ((*refs)[0].second, "/spec/protocolDigest");

  auto audit = store_->Audit();
  ASSERT_OK(audit);
  EXPECT_FALSE(audit->HasFaults());
  EXPECT_EQ(audit->missing.size(), 3u);

  // Adding again stores nothing new.
  auto again = AddSeed();
  ASSERT_EQ(again.size(), 3u);
  for (const auto& a : again) EXPECT_TRUE(a.existed);
}

TEST_F(SeedTest, MismatchedBundleStoresNothing) {
  std::string text = test::ReadFileOrDie(
      test::DataPath("kernelindex/fixtures/gpt-o3_cuda_5548d0.gqa_paged_decode_h32_kv4_d128_ps1.manifest.json"));
  auto pos = text.find("\"cudaToolkit\": \"12.8\"");
  ASSERT_NE(pos, std::string::npos);
  text.replace(pos, 21, "\"cudaToolkit\": \"12.9\"");
  AddInput in{"bad.json", text};
  auto r = AddInputs(*store_, {in});
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(r.status().IsInvalidInput());
  EXPECT_NE(r.status().message().find("sha256:f4292a8be127b7230cd3995c1d605fb6c644e2c2f94566e1d28cc1be766ca5d5"),
            std::string::npos)
      << r.status().message();
  EXPECT_EQ(CountObjects(), 0u);
}

TEST_F(SeedTest, ReindexKeepsManifestsAndReferences) {
  auto added = AddSeed();
  ASSERT_EQ(added.size(), 3u);
  auto re = store_->Reindex();
  ASSERT_OK(re);
  EXPECT_FALSE(re->HasFaults());
  EXPECT_EQ(re->missing.size(), 3u);
  size_t runs = 0;
  ASSERT_OK(store_->ForEachOfKind(Kind::kBenchmarkRun, [&](const Digest&) { return ++runs, true; }));
  EXPECT_EQ(runs, 1u);
  auto refs = store_->Referrers(added[2].digest);
  ASSERT_OK(refs);
  EXPECT_EQ(refs->size(), 1u);
}

}  // namespace
}  // namespace ki

namespace ki {
namespace {

TEST(PosixEnv, AtomicFileModeAndNoReplace) {
  test::TempDir dir;
  Env* env = Env::Default();
  const std::string path = dir.path() + "/secret";
  ::mode_t old_mask = ::umask(0022);
  {
    auto f = env->NewAtomicFile(path, AtomicFileOptions{.mode = 0600, .replace = false});
    ASSERT_OK(f);
    ASSERT_OK((*f)->Append("first"));
    ASSERT_OK((*f)->Commit(Durability::kSync));
  }
  struct stat st{};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  {
    // A second writer must not replace the file, and leaves no temporary.
    auto f = env->NewAtomicFile(path, AtomicFileOptions{.mode = 0600, .replace = false});
    ASSERT_OK(f);
    ASSERT_OK((*f)->Append("second"));
    Status s = (*f)->Commit(Durability::kSync);
    EXPECT_EQ(s.code(), Code::kInvalidInput) << s.message();
    EXPECT_NE(s.message().find(path), std::string::npos);
  }
  EXPECT_EQ(*env->ReadFile(path, 100), "first");
  auto names = env->ListDir(dir.path());
  ASSERT_OK(names);
  EXPECT_EQ(*names, std::vector<std::string>{"secret"});
  // The default still replaces, with the default mode under the umask.
  ASSERT_OK(env->WriteFileAtomic(path, "third", Durability::kNone));
  EXPECT_EQ(*env->ReadFile(path, 100), "third");
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0644u);
  ::umask(old_mask);
}

// Issue 25.4: two imports into a fresh store, one failing with "LMDB cursor:
// Invalid argument". The mechanism, made deterministic: another process
// creates a table after this one opened the store; this one begins a write
// batch, reads that table (a read transaction beside the batch, which opens
// the table's handle), then writes it. A handle opened in a transaction
// that began after the batch's is not valid in the batch (LMDB checks the
// handle against the tables the transaction knew when it began: EINVAL),
// so every existing table's handle is opened before a write transaction
// begins (lmdb::Environment::BeginWrite).
TEST_F(StoreTest, WriteToATableAnotherProcessCreatedAfterOpen) {
  pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    // The child must not return into the test runner.
    auto w = Store::Open(dir_.Join(".ki"), OpenMode::kReadWrite);
    if (!w.ok()) ::_exit(2);
    auto b = (*w)->NewBatch();
    if (!b.ok() || !(*b)->Put("test.elsewhere", "from the child", "1").ok() || !(*b)->Commit().ok()) ::_exit(3);
    ::_exit(0);
  }
  int wstatus = 0;
  ASSERT_EQ(::waitpid(pid, &wstatus, 0), pid);
  ASSERT_TRUE(WIFEXITED(wstatus));
  ASSERT_EQ(WEXITSTATUS(wstatus), 0);

  auto batch = store_->NewBatch();
  ASSERT_OK(batch);
  auto seen = store_->Get("test.elsewhere", "from the child");
  ASSERT_OK(seen);
  EXPECT_EQ(seen->value_or(""), "1");
  ASSERT_OK((*batch)->Put("test.elsewhere", "from the parent", "2"));
  ASSERT_OK((*batch)->Commit());
  auto mine = store_->Get("test.elsewhere", "from the parent");
  ASSERT_OK(mine);
  EXPECT_EQ(mine->value_or(""), "2");
}

// A snapshot store reads one commit: what another process commits after it
// opened is not seen on the opening thread, and is seen on other threads and
// by a store opened later. (LMDB allows one environment per process and
// file, hence the writer in a child process.)
TEST_F(StoreTest, SnapshotReadsSeeOneCommit) {
  Digest before = PutBlob("committed before the snapshot");
  store_.reset();
  StoreOptions o;
  o.snapshot_reads = true;
  auto snap = Store::Open(dir_.Join(".ki"), OpenMode::kReadOnly, o);
  ASSERT_OK(snap);

  const std::string later_bytes = "committed after the snapshot";
  pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    // The child must not return into the test runner.
    auto w = Store::Open(dir_.Join(".ki"), OpenMode::kReadWrite);
    if (!w.ok()) ::_exit(2);
    auto b = (*w)->NewBatch();
    if (!b.ok() || !(*b)->PutBlob(later_bytes, "text/plain").ok() || !(*b)->Commit().ok()) ::_exit(3);
    ::_exit(0);
  }
  int wstatus = 0;
  ASSERT_EQ(::waitpid(pid, &wstatus, 0), pid);
  ASSERT_TRUE(WIFEXITED(wstatus));
  ASSERT_EQ(WEXITSTATUS(wstatus), 0);
  Digest later = Sha256Of(later_bytes);

  auto seen = (*snap)->Stat(before);
  ASSERT_OK(seen);
  EXPECT_TRUE(seen->has_value());
  auto unseen = (*snap)->Stat(later);
  ASSERT_OK(unseen);
  EXPECT_FALSE(unseen->has_value()) << "the snapshot saw a later commit";
  auto read = (*snap)->Read(later);
  EXPECT_TRUE(read.status().IsNotFound());

  bool other_thread_saw = false;
  std::thread t([&] {
    auto r = (*snap)->Read(later);
    other_thread_saw = r.ok() && *r == later_bytes;
  });
  t.join();
  EXPECT_TRUE(other_thread_saw) << "another thread should read the latest commit";

  snap->reset();
  auto fresh = Store::Open(dir_.Join(".ki"), OpenMode::kReadOnly, o);
  ASSERT_OK(fresh);
  auto now = (*fresh)->Read(later);
  ASSERT_OK(now);
  EXPECT_EQ(*now, later_bytes);
}

TEST_F(StoreTest, SnapshotReadsRefusedForAWriter) {
  store_.reset();
  StoreOptions o;
  o.snapshot_reads = true;
  auto s = Store::Open(dir_.Join(".ki"), OpenMode::kReadWrite, o);
  ASSERT_FALSE(s.ok());
  EXPECT_TRUE(s.status().IsInvalidInput()) << s.status().ToString();
}

}  // namespace
}  // namespace ki

namespace ki {
namespace {

// Format 8 keeps no kinds table: the manifests of a kind come from meta,
// each once, in digest order, and no blob among them.
TEST_F(SeedTest, ForEachOfKindReadsEachManifestsKindFromMeta) {
  const auto added = AddSeed();
  ASSERT_EQ(added.size(), 3u);
  const Digest blob = PutBlob("a log line\n");
  std::map<std::string, std::vector<Digest>> want;
  for (const auto& a : added) want[a.kind].push_back(a.digest);
  for (Kind k : {Kind::kBenchmarkRun, Kind::kBenchmarkProtocol, Kind::kExecutionEnvironment, Kind::kOperationSpec}) {
    std::vector<Digest> got;
    ASSERT_OK(store_->ForEachOfKind(k, [&](const Digest& d) {
      got.push_back(d);
      return true;
    }));
    EXPECT_EQ(got, want[std::string(KindName(k))]) << KindName(k);
    EXPECT_TRUE(std::find(got.begin(), got.end(), blob) == got.end());
  }
  // The kinds table is not written.
  auto kinds = store_->Get(odb::kKinds, odb::KindKey(Kind::kBenchmarkRun, want.at("BenchmarkRun").at(0)));
  ASSERT_OK(kinds);
  EXPECT_FALSE(kinds->has_value());
}

}  // namespace
}  // namespace ki
