// ki gc (src/odb/gc.cc) and tags (src/odb/tags.cc): what is kept, what
// goes, the grace period, unknown ages, the table check, compaction, and
// tag names and references.
#include "ki/gc.h"

#include <chrono>
#include <random>
#include <unordered_set>

#include "ki/catalog.h"
#include "ki/json.h"
#include "ki/manifest.h"
#include "ki/remote.h"
#include "ki/sign.h"
#include "ki/tag.h"
#include "ki/tag_sync.h"
#include "odb/frame.h"
#include "odb/tables.h"
#include "testutil/fault_env.h"
#include "testutil/testutil.h"

namespace ki {
namespace {

using test::TempDir;

constexpr int64_t kWeek = 7 * 86400;

int64_t Now() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string RandomBytes(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::string s(n, '\0');
  for (auto& c : s) c = char(rng());
  return s;
}

class GcTest : public ::testing::Test {
 protected:
  void SetUp() override {
    catalog::RegisterGroupIndex();
    RegisterAttestationIndex();
    RegisterAllGcRoots();
    ki_dir_ = dir_.Join(".ki");
    auto s = Store::Init(dir_.path());
    ASSERT_OK(s);
    store_ = std::move(s).value();
  }

  Store& store() { return *store_; }

  Digest PutBlob(const std::string& bytes, const std::string& media_type = "text/plain") {
    auto batch = store_->NewBatch();
    EXPECT_OK(batch);
    auto put = (*batch)->PutBlob(bytes, media_type);
    EXPECT_OK(put);
    EXPECT_OK((*batch)->Commit());
    return put->digest;
  }

  // Sets the time d's meta entry records for its first indexing (format 6;
  // 0: unknown, as objects of stores older than the added time are).
  void SetAdded(const Digest& d, int64_t t) {
    auto v = store_->Get(odb::kMeta, d.raw());
    ASSERT_OK(v);
    ASSERT_TRUE(v->has_value());
    ObjectInfo info;
    ASSERT_TRUE(odb::UnpackMeta(d.raw(), **v, &info));
    auto batch = store_->NewBatch();
    ASSERT_OK(batch);
    ASSERT_OK((*batch)->Put(odb::kMeta, d.raw(), odb::PackMeta(info, t)));
    ASSERT_OK((*batch)->Commit());
  }
  std::optional<int64_t> AddedOf(const Digest& d) {
    auto v = store_->Get(odb::kMeta, d.raw());
    EXPECT_OK(v);
    ObjectInfo info;
    std::optional<int64_t> added;
    if (v.ok() && *v) EXPECT_TRUE(odb::UnpackMeta(d.raw(), **v, &info, &added));
    return added;
  }

  Manifest FromExample(const std::string& file, const std::function<void(Json&)>& edit, std::string* text = nullptr) {
    auto doc = ParseDocument(test::ReadFileOrDie(test::DataPath("kernelindex/examples/" + file)), DocFormat::kYaml,
                             file);
    EXPECT_OK(doc);
    edit(*doc);
    if (text) *text = doc->dump();
    auto m = ManifestFromJson(*doc, file);
    EXPECT_OK(m);
    return *m;
  }

  // Runs gc on a store closed first, then reopens it.
  GcReport Gc(int64_t grace, int64_t now, bool dry_run = false) {
    GcOptions opts;
    opts.grace_seconds = grace;
    opts.now = now;
    opts.dry_run = dry_run;
    auto r = CollectGarbage(std::move(store_), opts);
    EXPECT_OK(r);
    Reopen();
    return r.ok() ? *r : GcReport{};
  }

  void Reopen() {
    store_.reset();
    auto s = Store::Open(ki_dir_, OpenMode::kReadWrite);
    ASSERT_OK(s);
    store_ = std::move(s).value();
  }

  bool Held(const Digest& d) {
    auto info = store_->Stat(d);
    EXPECT_OK(info);
    return info.ok() && info->has_value();
  }

  void ExpectAuditClean() {
    auto a = store_->Audit();
    ASSERT_OK(a);
    for (const auto& f : a->faults) ADD_FAILURE() << "audit fault: " << f.what << " " << f.digest.str() << ": " << f.detail;
  }

  TempDir dir_;
  std::string ki_dir_;
  std::unique_ptr<Store> store_;
};

TEST_F(GcTest, RemovesTheUnreachableAndKeepsWhatIsKeptAlive) {
  const Digest junk = PutBlob("junk nobody names");
  const Digest tagged = PutBlob("tagged blob");
  ASSERT_OK(SetTag(store(), "keep-me", tagged));
  const std::string big = RandomBytes(200000, 1);  // a loose file
  const Digest loose_junk = PutBlob(big, "application/octet-stream");
  // A named manifest (stored with its document) and the source it references.
  const std::string source = "__global__ void k() {}";
  const Digest source_d = PutBlob(source, "text/x-cuda");
  std::string impl_text;
  Manifest impl = FromExample("implementation-revision.yaml",
                              [&](Json& j) { j["spec"]["source"]["contentDigest"] = Sha256Of(source).str(); },
                              &impl_text);
  // An unnamed run (no document) and the log only it references.
  const std::string log = "a log only an unnamed run references";
  const Digest log_d = PutBlob(log);
  Manifest run = FromExample("benchmark-run.yaml", [&](Json& j) {
    j["spec"]["implementationDigest"] = impl.digest.str();
    j["spec"]["evidence"] = {{"logs", {{"uri", "ki:blob/" + log_d.str()}, {"digest", log_d.str()}}}};
  });
  run.metadata = Json::object();  // metadata is not identity: stored under no name
  {
    auto batch = store_->NewBatch();
    ASSERT_OK(batch);
    ASSERT_OK((*batch)->PutManifest(impl, impl_text, kDocumentMediaTypeJson));
    ASSERT_OK((*batch)->PutManifest(run, std::nullopt, kDocumentMediaTypeJson));
    ASSERT_OK((*batch)->Commit());
  }
  // An attested blob nothing else names: the envelope and its subject stay.
  const Digest attested = PutBlob("reviewed, though nothing references it");
  SigningKey key = SigningKey::Generate("reviewer");
  AttestationRequest req;
  req.subject = attested;
  req.note = "checked";
  auto envelope = CreateAttestation(store(), key, req);
  ASSERT_OK(envelope);
  ASSERT_TRUE(Held(run.digest));
  ASSERT_FALSE(store_->Referrers(log_d)->empty());

  // Young: nothing goes.
  GcReport young = Gc(2 * kWeek, Now());
  EXPECT_TRUE(young.removed.empty());
  EXPECT_EQ(young.young, 4u);  // junk, loose junk, run, log
  // A dry run three weeks on lists them and removes nothing.
  GcReport dry = Gc(2 * kWeek, Now() + 3 * kWeek, /*dry_run=*/true);
  EXPECT_EQ(dry.removed.size(), 4u);
  EXPECT_TRUE(Held(junk) && Held(loose_junk) && Held(run.digest) && Held(log_d));
  EXPECT_EQ(dry.after.index_bytes, dry.before.index_bytes);

  GcReport r = Gc(2 * kWeek, Now() + 3 * kWeek);
  std::unordered_set<Digest> removed;
  for (const auto& x : r.removed) removed.insert(x.digest);
  EXPECT_EQ(removed, (std::unordered_set<Digest>{junk, loose_junk, run.digest, log_d}));
  EXPECT_FALSE(Held(junk));
  EXPECT_FALSE(Held(loose_junk));
  EXPECT_FALSE(Env::Default()->Exists(ki_dir_ + "/objects/" + loose_junk.hex().substr(0, 2) + "/" +
                                      loose_junk.hex().substr(2)));
  EXPECT_FALSE(Held(run.digest));
  EXPECT_FALSE(Held(log_d));
  EXPECT_TRUE(Held(tagged));
  EXPECT_TRUE(Held(impl.digest));
  EXPECT_TRUE(Held(source_d));
  EXPECT_TRUE(Held(attested));
  EXPECT_TRUE(Held(envelope->digest));
  EXPECT_TRUE(store_->Referrers(log_d)->empty());  // the removed run's refs went with it
  EXPECT_TRUE(r.compacted);
  ExpectAuditClean();
  // And the next gc finds nothing more.
  GcReport again = Gc(2 * kWeek, Now() + 3 * kWeek);
  EXPECT_TRUE(again.removed.empty());
  ExpectAuditClean();
}

// A document kept as a frame based on its manifest (format.md, "Based
// frames") reads the manifest's bytes: while the document stays, its
// manifest stays too, even when nothing else keeps it alive.
TEST_F(GcTest, KeepsTheManifestAKeptDocumentIsBasedOn) {
  std::string text;
  Manifest run = FromExample("benchmark-run.yaml", [&](Json&) {}, &text);
  // Stored under no name, its document giving none: nothing keeps it alive.
  run.metadata = Json::object();
  Json doc_json = Json::parse(text);
  doc_json["metadata"] = {{"title", "a run stored under no name"}};
  text = doc_json.dump();
  {
    auto batch = store_->NewBatch();
    ASSERT_OK(batch);
    ASSERT_OK((*batch)->PutManifest(run, text, kDocumentMediaTypeJson));
    ASSERT_OK((*batch)->Commit());
  }
  const Digest doc = Sha256Of(text);
  auto info = store_->Stat(doc);
  ASSERT_OK(info);
  ASSERT_TRUE(info->has_value());
  auto row = store_->Get(odb::kObjects, odb::NumberKey((*info)->number));
  ASSERT_OK(row);
  ASSERT_TRUE(row->has_value());
  ASSERT_TRUE(odb::FrameIsBased(std::string_view(**row).substr(32))) << "the document is not based on its manifest";
  // The run old, its document young: the run is kept, as the document's base.
  SetAdded(run.digest, Now() - 4 * kWeek);
  GcReport r = Gc(2 * kWeek, Now());
  EXPECT_TRUE(r.removed.empty()) << r.removed.front().what;
  EXPECT_TRUE(Held(run.digest));
  EXPECT_TRUE(Held(doc));
  auto read = store_->Read(doc);
  ASSERT_OK(read);
  EXPECT_EQ(*read, text);
  ExpectAuditClean();
  // Both old: both go.
  SetAdded(doc, Now() - 4 * kWeek);
  GcReport both = Gc(2 * kWeek, Now());
  std::unordered_set<Digest> removed;
  for (const auto& x : both.removed) removed.insert(x.digest);
  EXPECT_EQ(removed, (std::unordered_set<Digest>{run.digest, doc}));
  EXPECT_FALSE(Held(run.digest));
  EXPECT_FALSE(Held(doc));
  ExpectAuditClean();
}

TEST_F(GcTest, AnObjectOfUnknownAgeIsDatedNotRemoved) {
  const Digest old = PutBlob("from a store older than the added table");
  SetAdded(old, 0);
  ASSERT_FALSE(AddedOf(old).has_value());
  GcReport r = Gc(2 * kWeek, Now() + 3 * kWeek);
  EXPECT_TRUE(r.removed.empty());
  EXPECT_EQ(r.undated, 1u);
  EXPECT_TRUE(Held(old));
  // Dated by that gc: gone two weeks after it, not before.
  EXPECT_TRUE(Gc(2 * kWeek, Now() + 4 * kWeek).removed.empty());
  EXPECT_EQ(Gc(2 * kWeek, Now() + 6 * kWeek).removed.size(), 1u);
  EXPECT_FALSE(Held(old));
}

TEST_F(GcTest, GraceZeroRemovesObjectsOfUnknownAge) {
  const Digest old = PutBlob("undated");
  SetAdded(old, 0);
  GcReport r = Gc(0, Now());
  ASSERT_EQ(r.removed.size(), 1u);
  EXPECT_FALSE(r.removed[0].added.has_value());
  EXPECT_FALSE(Held(old));
}

TEST_F(GcTest, ReindexKeepsAgesAndTags) {
  const Digest d = PutBlob("kept through reindex");
  ASSERT_OK(SetTag(store(), "v1", d));
  // A time no reindex could make up (it would write now's).
  SetAdded(d, 1764633600);
  ASSERT_OK(store_->Reindex());
  EXPECT_EQ(AddedOf(d), 1764633600);
  auto t = LookupTag(store(), "v1");
  ASSERT_OK(t);
  EXPECT_EQ(*t, d);
}

TEST_F(GcTest, RefusesAStoreWithATableItDoesNotKnow) {
  const Digest junk = PutBlob("junk");
  {
    auto batch = store_->NewBatch();
    ASSERT_OK(batch);
    ASSERT_OK((*batch)->Put("future.module", junk.raw(), ""));
    ASSERT_OK((*batch)->Commit());
  }
  GcOptions opts;
  opts.grace_seconds = 0;
  auto r = CollectGarbage(std::move(store_), opts);
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(r.status().IsInvalidInput()) << r.status().ToString();
  EXPECT_NE(r.status().message().find("future.module"), std::string::npos);
  Reopen();
  EXPECT_TRUE(Held(junk));
}

TEST_F(GcTest, CompactionGivesTheSpaceBack) {
  std::vector<Digest> blobs;
  {
    auto batch = store_->NewBatch();
    ASSERT_OK(batch);
    for (int i = 0; i < 3000; ++i) {
      auto put = (*batch)->PutBlob(RandomBytes(3000, 100 + i), "application/octet-stream");
      ASSERT_OK(put);
      blobs.push_back(put->digest);
    }
    ASSERT_OK((*batch)->Commit());
  }
  ASSERT_OK(SetTag(store(), "survivor", blobs[7]));
  GcReport r = Gc(2 * kWeek, Now() + 3 * kWeek);
  EXPECT_EQ(r.removed.size(), 2999u);
  std::cout << "data.mdb " << r.before.index_bytes << " -> " << r.after.index_bytes << " bytes\n";
  EXPECT_GT(r.before.index_bytes, 8u << 20);
  EXPECT_LT(r.after.index_bytes, r.before.index_bytes / 20);
  EXPECT_TRUE(Held(blobs[7]));
  auto bytes = store_->Read(blobs[7]);
  ASSERT_OK(bytes);
  EXPECT_EQ(*bytes, RandomBytes(3000, 107));
  ExpectAuditClean();
  // The compacted store takes writes as before.
  const Digest next = PutBlob("after compaction");
  EXPECT_TRUE(Held(next));
  ExpectAuditClean();
}

// Every step of a gc that makes something durable or visible (fsync,
// rename) failing in turn: the gc fails or goes on, and either way the
// store holds what was kept alive and its audit is clean.
TEST_F(GcTest, AFailureAtAnyStepLosesNothingReachable) {
  const Digest kept = PutBlob("kept");
  const Digest kept_loose = PutBlob(RandomBytes(100000, 7), "application/octet-stream");
  ASSERT_OK(SetTag(store(), "kept", kept));
  ASSERT_OK(SetTag(store(), "kept-loose", kept_loose));
  int n = 0, failed = 0;
  for (; n < 50; ++n) {
    const Digest junk = PutBlob("junk " + std::to_string(n));
    const Digest junk_loose = PutBlob(RandomBytes(100000, 1000 + n), "application/octet-stream");
    store_.reset();
    test::FaultInjectionEnv fenv;
    StoreOptions o;
    o.env = &fenv;
    auto s = Store::Open(ki_dir_, OpenMode::kReadWrite, o);
    ASSERT_OK(s);
    fenv.FailStep(n);
    GcOptions opts;
    opts.grace_seconds = 0;
    auto r = CollectGarbage(std::move(s).value(), opts);
    Reopen();
    EXPECT_TRUE(Held(kept) && Held(kept_loose)) << "step " << n;
    EXPECT_EQ(*store_->Read(kept_loose), RandomBytes(100000, 7));
    ExpectAuditClean();
    if (!r.ok()) failed++;
    bool injected = false;
    for (const auto& step : fenv.steps()) injected = injected || step.find(" FAILED") != std::string::npos;
    if (!injected) {  // past the last step: a whole gc
      ASSERT_OK(r);
      EXPECT_FALSE(Held(junk) || Held(junk_loose));
      break;
    }
  }
  EXPECT_GE(failed, 2);  // at least the copy's fsync and the rename fail a gc
  EXPECT_LT(n, 50);
}

// Compaction restarts LMDB's transaction count (the store generation of
// ki/generation.h), so the rows that hold one go: a later push must not
// take a new generation for the one it recorded.
TEST_F(GcTest, DropsTheRemoteStateRowsThatHoldAGeneration) {
  const std::string prefix = "\x01\x02\x03\x04\x05\x06\x07\x08";
  {
    auto batch = store_->NewBatch();
    ASSERT_OK(batch);
    ASSERT_OK((*batch)->Put(kRemoteStateTable, prefix + "u" + "bundle-tag", "generation 7"));
    ASSERT_OK((*batch)->Put(kRemoteStateTable, prefix + "b" + std::string(32, 'x'), ""));
    ASSERT_OK((*batch)->Commit());
  }
  Gc(2 * kWeek, Now());
  EXPECT_FALSE(store_->Get(kRemoteStateTable, prefix + "u" + "bundle-tag")->has_value());
  EXPECT_TRUE(store_->Get(kRemoteStateTable, prefix + "b" + std::string(32, 'x'))->has_value());
}

TEST(TagName, RemoteTagsRoundTrip) {
  for (const char* name : {"v1", "rel/v1+x@y", "a_b", "a__b/_c", "x"}) {
    auto remote = RemoteTagOf(name);
    ASSERT_OK(remote);
    EXPECT_EQ(remote->rfind("kitag-", 0), 0u);
    for (char c : *remote) {
      EXPECT_TRUE(isalnum(uint8_t(c)) || c == '.' || c == '_' || c == '-') << *remote;  // the OCI tag grammar
    }
    EXPECT_EQ(TagNameOfRemote(*remote), std::optional<std::string>(name));
  }
  EXPECT_OK(RemoteTagOf("x" + std::string(60, '_')));    // 127 characters encoded
  EXPECT_FALSE(RemoteTagOf("x" + std::string(70, '_')).ok());  // 147: too long once encoded
  EXPECT_FALSE(RemoteTagOf("bad name").ok());
  for (const char* other : {"ki-listing", "kitag-", "kitag-a_", "kitag-a_z", "kitag-..x", "v1"}) {
    EXPECT_FALSE(TagNameOfRemote(other).has_value()) << other;
  }
}

TEST(GcDuration, Parses) {
  EXPECT_EQ(*ParseGcDuration("2w"), 14 * 86400);
  EXPECT_EQ(*ParseGcDuration("36h"), 36 * 3600);
  EXPECT_EQ(*ParseGcDuration("90m"), 5400);
  EXPECT_EQ(*ParseGcDuration("45s"), 45);
  EXPECT_EQ(*ParseGcDuration("3d"), 3 * 86400);
  EXPECT_EQ(*ParseGcDuration("0"), 0);
  EXPECT_EQ(*ParseGcDuration("120"), 120);
  for (const char* bad : {"", "w", "2x", "-1d", "1.5d", "2 w", "1w2d", "9999999999999d"}) {
    EXPECT_FALSE(ParseGcDuration(bad).ok()) << bad;
  }
}

TEST(TagName, Rules) {
  for (const char* good : {"v1", "release/2026-12", "run_7+fast@h200", "A.b-c", "x"}) {
    EXPECT_OK(CheckTagName(good));
  }
  for (const char* bad : {"", "-v1", ".v1", "/v1", "has space", "a..b", "a//b", "a/.b", "a@{1}", "v1/", "v1.",
                          "v1.lock", "cafe", "0123abcd", "BenchmarkRun/x", "benchmarkrun/x", "a:b", "a\tb",
                          "a~1", "a^", "a*", "a?b", "a[b", "a\\b"}) {
    Status s = CheckTagName(bad);
    EXPECT_TRUE(s.IsInvalidInput()) << "'" << bad << "' accepted";
  }
  EXPECT_FALSE(CheckTagName(std::string(129, 'x')).ok());
  EXPECT_OK(CheckTagName(std::string(128, 'x')));
}

TEST_F(GcTest, TagsNameObjectsAndResolve) {
  const Digest a = PutBlob("a");
  const Digest b = PutBlob("b");
  ASSERT_OK(SetTag(store(), "first", a));
  EXPECT_EQ(*store_->Resolve("tag:first"), a);
  EXPECT_EQ(*store_->Resolve("first"), a);
  // An existing tag is replaced only when asked.
  auto again = SetTag(store(), "first", b);
  EXPECT_TRUE(again.status().IsInvalidInput());
  auto replaced = SetTag(store(), "first", b, TagReplace::kYes);
  ASSERT_OK(replaced);
  EXPECT_EQ(**replaced, a);
  EXPECT_EQ(*store_->Resolve("tag:first"), b);
  // An object the store does not hold cannot be tagged.
  auto absent = SetTag(store(), "ghost", Sha256Of("never stored"));
  EXPECT_TRUE(absent.status().IsNotFound());
  // Listing, deleting, deleting again.
  ASSERT_OK(SetTag(store(), "second", a));
  auto list = ListTags(store());
  ASSERT_OK(list);
  ASSERT_EQ(list->size(), 2u);
  EXPECT_EQ((*list)[0].first, "first");
  EXPECT_EQ((*list)[1].second, a);
  auto gone = DeleteTag(store(), "second");
  ASSERT_OK(gone);
  EXPECT_EQ(*gone, a);
  EXPECT_TRUE(DeleteTag(store(), "second").status().IsNotFound());
  EXPECT_TRUE(store_->Resolve("tag:second").status().IsNotFound());
  // A tag named like a manifest's name, naming another object: ambiguous.
  std::string text;
  Manifest project = FromExample("software-project.yaml", [](Json&) {}, &text);
  {
    auto batch = store_->NewBatch();
    ASSERT_OK(batch);
    ASSERT_OK((*batch)->PutManifest(project, text, kDocumentMediaTypeJson));
    ASSERT_OK((*batch)->Commit());
  }
  auto doc = ParseDocument(text, DocFormat::kJson, "project");
  ASSERT_OK(doc);
  const std::string name = (*doc)["metadata"]["name"].get<std::string>();
  EXPECT_EQ(*store_->Resolve(name), project.digest);
  ASSERT_OK(SetTag(store(), name, a));
  EXPECT_EQ(store_->Resolve(name).status().code(), Code::kAmbiguous);
  EXPECT_EQ(*store_->Resolve("tag:" + name), a);
  // The same object under both: not ambiguous.
  ASSERT_OK(SetTag(store(), name, project.digest, TagReplace::kYes));
  EXPECT_EQ(*store_->Resolve(name), project.digest);
}

}  // namespace
}  // namespace ki
