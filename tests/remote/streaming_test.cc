// Bounded memory: a pull past its buffer writes verified blobs early, push
// reads within its budget, and blobs over 1 MiB are streamed both ways
// through the store's blob readers and writers, never held whole.
#include "remote/remote_fixture.h"

namespace ki {
namespace {

using namespace remote_test;

TEST_F(RemoteTest, PullPastItsBufferWritesBlobsEarlyAndStoresTheSame) {
  uint64_t total = 300000;  // the fixture's big blob
  std::vector<std::string> refs = AddManyBlobs(*src_, &total);
  refs.insert(refs.begin(), {kRunName, blob_.str()});
  FakeRegistry reg;
  auto o = Opts();
  o.bundle_tag = "everything";
  ASSERT_OK(Push(*src_, Url(reg.host()), refs, o));
  // One by one and from the pack; one download at a time, a 100 KB buffer.
  for (bool pack : {false, true}) {
    Store& dst = NewStore();
    auto po = Opts();
    po.use_pack = pack;
    po.pull_jobs = 1;
    po.pull_buffer_bytes = 100000;
    auto r = Pull(dst, Url(reg.host()), {"everything"}, po);
    ASSERT_OK(r);
    EXPECT_EQ(r->blobs_from_pack > 0, pack);
    EXPECT_GT(r->blobs_written_early, 30u) << pack;
    // At most the buffer and the blob that crossed it: never all of them.
    EXPECT_LE(r->peak_blob_bytes_held, 100000u + 300000u) << pack;
    EXPECT_LT(r->peak_blob_bytes_held, total / 4) << pack;
    ExpectSameObjects(*src_, dst, AllObjects(*src_));
    EXPECT_EQ(CountObjects(*src_), CountObjects(dst));
    auto named = dst.Resolve(kRunName);
    ASSERT_OK(named);
    EXPECT_EQ(*named, run_);
    auto v = dst.Verify(run_);
    ASSERT_OK(v);
    EXPECT_FALSE(v->HasFaults());
  }
  // The default buffer holds everything until the one batch at the end.
  auto all = Pull(*dst_, Url(reg.host()), {"everything"}, Opts());
  ASSERT_OK(all);
  EXPECT_EQ(all->blobs_written_early, 0u);
  EXPECT_GE(all->peak_blob_bytes_held, total);
}

// Downloads outrun fsynced writes: with several workers, those that fill
// the buffer while a write runs must wait for it, not each pile up a buffer
// of their own (a first version held 1072 MiB for a 256 MiB buffer on a
// 1 GiB pull). Every early batch here is slowed by a directory sync.
class SlowSyncEnv : public test::FaultInjectionEnv {
 public:
  Status SyncDir(const std::string& p) override {
    std::this_thread::sleep_for(std::chrono::milliseconds(40));
    return FaultInjectionEnv::SyncDir(p);
  }
};

TEST_F(RemoteTest, PullWorkersWaitForASlowWriteInsteadOfPilingUpBlobs) {
  uint64_t total = 300000;
  std::vector<std::string> refs = AddManyBlobs(*src_, &total);
  refs.insert(refs.begin(), {kRunName, blob_.str()});
  FakeRegistry reg;
  auto o = Opts();
  o.bundle_tag = "everything";
  ASSERT_OK(Push(*src_, Url(reg.host()), refs, o));
  SlowSyncEnv env;
  StoreOptions so;
  so.env = &env;
  so.loose_threshold = 1024;  // every blob a loose file: each early batch syncs its directories
  auto dst = Store::Init(dir_.Join("slow"), so);
  ASSERT_OK(dst);
  auto po = Opts();
  po.use_pack = false;
  po.pull_jobs = 4;
  po.pull_buffer_bytes = 150000;
  auto r = Pull(**dst, Url(reg.host()), {"everything"}, po);
  ASSERT_OK(r);
  EXPECT_GT(r->blobs_written_early, 20u);
  // The buffer, and one more blob per worker at the most (the largest is 300 KB).
  EXPECT_LE(r->peak_blob_bytes_held, 150000u + 4 * 300000u);
  EXPECT_LT(r->peak_blob_bytes_held, total / 2);
  ExpectSameObjects(*src_, **dst, AllObjects(*src_));
  EXPECT_EQ(CountObjects(*src_), CountObjects(**dst));
}

// Push reads objects for upload within a byte budget across its workers:
// 8 workers on large objects do not each hold one.
TEST_F(RemoteTest, PushReadsObjectsWithinItsBudget) {
  uint64_t total = 300000;
  std::vector<std::string> refs = AddManyBlobs(*src_, &total);
  refs.insert(refs.begin(), {kRunName, blob_.str()});
  FakeRegistry reg;
  auto o = Opts();
  o.push_jobs = 8;
  o.push_buffer_bytes = 120000;
  auto pushed = Push(*src_, Url(reg.host()), refs, o);
  ASSERT_OK(pushed);
  EXPECT_GE(pushed->blobs_sent, 41u);
  // Two 50 KB objects at once at the most, or the 300 KB one alone.
  EXPECT_LE(pushed->peak_bytes_in_flight, 300000u);
  EXPECT_GT(pushed->peak_bytes_in_flight, 0u);
  // Everything arrived: a pull brings back the same objects.
  auto pulled = Pull(*dst_, Url(reg.host()), refs, Opts());
  ASSERT_OK(pulled);
  ExpectSameObjects(*src_, *dst_, AllObjects(*src_));
}

TEST_F(RemoteTest, PullThatFailsAfterWritingBlobsEarlyKeepsOnlyThoseAndARerunResumes) {
  uint64_t total = 300000;
  std::vector<std::string> refs = AddManyBlobs(*src_, &total);
  refs.insert(refs.begin(), {kRunName, blob_.str()});
  FakeRegistry reg;
  auto o = Opts();
  o.bundle_tag = "everything";
  ASSERT_OK(Push(*src_, Url(reg.host()), refs, o));
  // From the 26th blob GET on, the registry fails.
  auto gets = std::make_shared<std::atomic<int>>(0);
  reg.SetIntercept([gets](const HttpReq& r) -> std::optional<HttpReply> {
    if (r.method != "GET" || r.path.find("/blobs/") == std::string::npos) return std::nullopt;
    if (++*gets <= 25) return std::nullopt;
    HttpReply down;
    down.status = 500;
    return down;
  });
  auto po = Opts();
  po.use_pack = false;
  po.pull_jobs = 1;
  po.pull_buffer_bytes = 100000;
  auto r = Pull(*dst_, Url(reg.host()), {"everything"}, po);
  ASSERT_FALSE(r.ok());
  const std::string& msg = r.status().message();
  EXPECT_NE(msg.find("no manifest, name or attestation was stored"), std::string::npos) << msg;
  EXPECT_NE(msg.find("verified blobs written before the failure stay"), std::string::npos) << msg;
  // Only verified blobs of the source were kept: no manifest, no name.
  EXPECT_FALSE(dst_->Resolve(kRunName).ok());
  auto has_run = dst_->Stat(run_);
  ASSERT_OK(has_run);
  EXPECT_FALSE(has_run->has_value());
  const std::vector<Digest> kept = AllObjects(*dst_);
  EXPECT_GT(kept.size(), 10u);
  EXPECT_LT(kept.size(), 26u);
  ExpectSameObjects(*src_, *dst_, kept);
  // A re-run fetches only what is still missing.
  reg.SetIntercept(nullptr);
  reg.ClearLog();
  auto again = Pull(*dst_, Url(reg.host()), {"everything"}, po);
  ASSERT_OK(again);
  EXPECT_EQ(again->blobs_received + kept.size(), CountObjects(*src_));
  EXPECT_EQ(reg.Count("GET", "/blobs/"), again->blobs_received);
  ExpectSameObjects(*src_, *dst_, AllObjects(*src_));
  auto named = dst_->Resolve(kRunName);
  ASSERT_OK(named);
  EXPECT_EQ(*named, run_);
}

// ------------------------------------------------------------ streamed blobs
// Blobs over TransferOptions::stream_above (1 MiB) are never held whole:
// push reads them from the store into the upload, pull downloads them into
// a scratch file under objects/incoming and stores that.
TEST_F(RemoteTest, LargeBlobStreamsBothWaysThroughARegistry) {
  FakeRegistry reg;
  Digest big = AddLargeBlob(*src_, dir_, 6 << 20, true, 1);  // random: a loose file
  auto pushed = Push(*src_, Url(reg.host()), {big.str()}, Opts());
  ASSERT_OK(pushed);
  EXPECT_EQ(pushed->blobs_streamed, 1u);
  EXPECT_LT(pushed->peak_bytes_in_flight, uint64_t(6 << 20));  // its pipe, not the blob
  EXPECT_TRUE(reg.HasBlob(big.str()));
  auto pulled = Pull(*dst_, Url(reg.host()), {big.str()}, Opts());
  ASSERT_OK(pulled);
  EXPECT_EQ(pulled->blobs_streamed, 1u);
  EXPECT_EQ(pulled->peak_blob_bytes_held, 0u);
  ExpectSameObjects(*src_, *dst_, {big});
  auto info = dst_->Stat(big);
  ASSERT_OK(info);
  ASSERT_TRUE(info->has_value());
  EXPECT_EQ((*info)->location, Location::kLoose);
  EXPECT_EQ(IncomingFiles(*dst_), 0u);
  auto v = dst_->Verify(big);
  ASSERT_OK(v);
  EXPECT_FALSE(v->HasFaults());
}

TEST_F(RemoteTest, LargeBlobStreamsInPatchChunks) {
  FakeRegistry reg;
  Digest big = AddLargeBlob(*src_, dir_, 5 << 20, false, 2);
  auto o = Opts();
  o.force_chunked = true;
  o.chunk_size = 1 << 20;
  auto pushed = Push(*src_, Url(reg.host()), {big.str()}, o);
  ASSERT_OK(pushed);
  EXPECT_EQ(pushed->blobs_streamed, 1u);
  EXPECT_EQ(reg.Count("PATCH", "/blobs/uploads/"), 7u);  // five of the blob, one of the empty config, one of the listing
  ASSERT_OK(Pull(*dst_, Url(reg.host()), {big.str()}, Opts()));
  ExpectSameObjects(*src_, *dst_, {big});
}

TEST_F(RemoteTest, LargeBlobStreamsBothWaysThroughALayout) {
  Digest big = AddLargeBlob(*src_, dir_, 6 << 20, false, 3);
  auto url = ParseRemoteUrl("oci-layout:" + dir_.Join("layout"), false);
  ASSERT_OK(url);
  auto pushed = Push(*src_, *url, {big.str()}, Opts());
  ASSERT_OK(pushed);
  EXPECT_EQ(pushed->blobs_streamed, 1u);
  std::string file = test::ReadFileOrDie(dir_.Join("layout/blobs/sha256/" + big.hex()));
  EXPECT_EQ(Sha256Of(file), big);
  auto pulled = Pull(*dst_, *url, {big.str()}, Opts());
  ASSERT_OK(pulled);
  EXPECT_EQ(pulled->blobs_streamed, 1u);
  ExpectSameObjects(*src_, *dst_, {big});
  EXPECT_EQ(IncomingFiles(*dst_), 0u);
}

// A registry that serves a large blob wrongly: the pull fails saying how,
// stores nothing and leaves no scratch file.
TEST_F(RemoteTest, LargeBlobServedWronglyStoresNothingAndLeavesNoScratchFile) {
  FakeRegistry reg;
  Digest big = AddLargeBlob(*src_, dir_, 3 << 20, false, 4);
  ASSERT_OK(Push(*src_, Url(reg.host()), {big.str()}, Opts()));
  auto good = src_->Read(big);
  ASSERT_OK(good);
  struct Case {
    const char* name;
    HttpReply reply;
    Code code;
    const char* message;
  };
  std::vector<Case> cases;
  HttpReply more;
  more.body = *good + "and then some more";
  cases.push_back({"more bytes than announced", more, Code::kCorruption, "larger than the limit"});
  HttpReply fewer;
  fewer.body = good->substr(0, good->size() - 1000);
  cases.push_back({"fewer bytes (a complete response)", fewer, Code::kCorruption, "received 3144728 bytes, the manifest announces 3145728"});
  HttpReply cut;
  cut.body = good->substr(0, 2 << 20);
  cut.declared_length = long(good->size());  // then the connection closes
  cases.push_back({"fewer bytes (the connection closes)", cut, Code::kIOError, "truncated"});
  HttpReply wrong;
  wrong.body = *good;
  wrong.body[wrong.body.size() - 1] ^= 1;
  cases.push_back({"other bytes", wrong, Code::kCorruption, "received bytes that hash to"});
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    Store& dst = NewStore();
    Answer(reg, "GET", "/blobs/" + big.str(), c.reply);
    auto r = Pull(dst, Url(reg.host()), {big.str()}, Opts());
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), c.code) << r.status().ToString();
    EXPECT_NE(r.status().message().find(c.message), std::string::npos) << r.status().ToString();
    EXPECT_NE(r.status().message().find("nothing was stored"), std::string::npos) << r.status().ToString();
    EXPECT_EQ(CountObjects(dst), 0u);
    EXPECT_EQ(IncomingFiles(dst), 0u);
  }
}

TEST_F(RemoteTest, LargeBlobDamagedInALayoutStoresNothing) {
  Digest big = AddLargeBlob(*src_, dir_, 3 << 20, false, 5);
  auto url = ParseRemoteUrl("oci-layout:" + dir_.Join("layout"), false);
  ASSERT_OK(url);
  ASSERT_OK(Push(*src_, *url, {big.str()}, Opts()));
  std::string path = dir_.Join("layout/blobs/sha256/" + big.hex());
  std::string good = test::ReadFileOrDie(path);
  std::filesystem::permissions(path, std::filesystem::perms::owner_write, std::filesystem::perm_options::add);
  for (const auto& [bytes, message] : std::vector<std::pair<std::string, std::string>>{
           // A file of another size is refused from its fstat, before it is read.
           {good + "x", "has 3145729 bytes, its descriptor announces 3145728"},
           {good.substr(0, good.size() - 1), "has 3145727 bytes, its descriptor announces 3145728"},
           {std::string(good).replace(100, 1, good[100] == 'a' ? "b" : "a"), "received bytes that hash to"}}) {
    SCOPED_TRACE(message);
    test::WriteFileOrDie(path, bytes);
    Store& dst = NewStore();
    auto r = Pull(dst, *url, {big.str()}, Opts());
    ASSERT_FALSE(r.ok());
    EXPECT_TRUE(r.status().IsCorruption()) << r.status().ToString();
    EXPECT_NE(r.status().message().find(message), std::string::npos) << r.status().ToString();
    EXPECT_EQ(CountObjects(dst), 0u);
    EXPECT_EQ(IncomingFiles(dst), 0u);
  }
}

// The pull's scratch download and a layout's files go through the store's
// Env (they went through Env::Default(), out of a fault-injection Env's
// reach): a scratch download whose commit fails stops the pull with that
// error (naming the store's scratch file under objects/incoming), nothing stored and
// no scratch file left; a push to a layout from a store whose Env reports a
// full disk fails at the layout's first file.
TEST_F(RemoteTest, PullScratchDownloadAndLayoutFilesGoThroughTheStoresEnv) {
  using Fault = test::FaultInjectionEnv::CommitFault;
  test::FaultInjectionEnv src_env, dst_env;
  StoreOptions so, dso;
  so.env = &src_env;
  dso.env = &dst_env;
  auto src = Store::Init(dir_.Join("fault-src"), so);
  ASSERT_OK(src);
  auto dst = Store::Init(dir_.Join("fault-dst"), dso);
  ASSERT_OK(dst);
  Digest big = AddLargeBlob(**src, dir_, 3 << 20, false, 6);
  auto url = ParseRemoteUrl("oci-layout:" + dir_.Join("fault-layout"), false);
  ASSERT_OK(url);

  src_env.SetWriteBudget(0);
  auto full = Push(**src, *url, {big.str()}, Opts());
  ASSERT_FALSE(full.ok());
  EXPECT_NE(full.status().message().find("No space left on device"), std::string::npos) << full.status().ToString();
  EXPECT_NE(full.status().message().find("fault-layout"), std::string::npos) << full.status().ToString();
  src_env.SetWriteBudget(-1);
  ASSERT_OK(Push(**src, *url, {big.str()}, Opts()));

  dst_env.FailCommits(Fault::kFsync, EIO);
  auto r = Pull(**dst, *url, {big.str()}, Opts());
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("objects/incoming/"), std::string::npos) << r.status().ToString();
  EXPECT_NE(r.status().message().find("Input/output error"), std::string::npos) << r.status().ToString();
  EXPECT_EQ(CountObjects(**dst), 0u);
  EXPECT_EQ(IncomingFiles(**dst), 0u);
  dst_env.FailCommits(Fault::kNone);
  ASSERT_OK(Pull(**dst, *url, {big.str()}, Opts()));
  auto got = (*dst)->Stat(big);
  ASSERT_OK(got);
  EXPECT_TRUE(got->has_value());
}

// A stored object damaged where only its content hash can tell (a raw
// frame, one payload byte flipped): the streamed upload fails before its
// request completes, so neither remote ends up with the damaged bytes.
TEST_F(RemoteTest, DamagedLargeObjectIsNeverUploaded) {
  Digest big = AddLargeBlob(*src_, dir_, 3 << 20, true, 6);
  std::string loose = odb::LoosePath(src_->path(), big);
  std::string frame = test::ReadFileOrDie(loose);
  ASSERT_GT(frame.size(), uint64_t(3 << 20));  // stored raw: random bytes do not compress
  frame[frame.size() - 10] ^= 1;
  std::filesystem::permissions(loose, std::filesystem::perms::owner_write, std::filesystem::perm_options::add);
  test::WriteFileOrDie(loose, frame);
  for (bool chunked : {false, true}) {
    SCOPED_TRACE(chunked ? "PATCH chunks" : "one PUT");
    FakeRegistry reg;
    auto o = Opts();
    o.force_chunked = chunked;
    o.chunk_size = 1 << 20;
    auto r = Push(*src_, Url(reg.host()), {big.str()}, o);
    ASSERT_FALSE(r.ok());
    EXPECT_TRUE(r.status().IsCorruption()) << r.status().ToString();
    EXPECT_NE(r.status().message().find("hashes to"), std::string::npos) << r.status().ToString();
    EXPECT_FALSE(reg.HasBlob(big.str()));
    // Not even refused by the registry's own digest check: the PUT that
    // would have completed the upload never reached it.
    for (const HttpReq& q : reg.log()) EXPECT_FALSE(q.method == "PUT" && q.query.find(big.hex()) != std::string::npos);
  }
  auto url = ParseRemoteUrl("oci-layout:" + dir_.Join("layout"), false);
  ASSERT_OK(url);
  auto r = Push(*src_, *url, {big.str()}, Opts());
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(r.status().IsCorruption()) << r.status().ToString();
  EXPECT_FALSE(std::filesystem::exists(dir_.Join("layout/blobs/sha256/" + big.hex())));
}

}  // namespace
}  // namespace ki
