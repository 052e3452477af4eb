// ki push / pull against a hostile in-process registry (fake_registry.h)
// and an OCI image layout. Each case of issue 6's "hostile or broken
// registry" list is one test here; each checks that nothing unverified
// entered the store.
#include <atomic>
#include <chrono>
#include <filesystem>
#include <functional>
#include <random>
#include <set>
#include <thread>

#include "ki/dictionary.h"
#include "ki/ingest.h"
#include "ki/json.h"
#include "ki/remote.h"
#include "ki/sign.h"
#include "odb/tables.h"
#include "remote/fake_registry.h"
#include "remote/mapping.h"
#include "remote/pack.h"
#include "remote/pack_testutil.h"
#include "remote/target.h"
#include "testutil/fault_env.h"
#include "testutil/testutil.h"

namespace ki {
namespace {

using test::FakeRegistry;
using test::HttpReply;
using test::HttpReq;
using test::TempDir;

constexpr const char* kRunName = "BenchmarkRun/sol-trace-gqa-paged-decode-h32-kv4-d128-ps1-27ef153a";

std::string Statement(const Digest& subject) {
  std::string payload = R"({"_type":"https://in-toto.io/Statement/v1","predicate":{},"predicateType":"https://kernelindex.dev/ki/reviewed/v1","subject":[{"digest":{"sha256":")" +
                        subject.hex() + R"("},"name":"run"}]})";
  // base64 by hand (the test does not reach into src/remote).
  static const char* a = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string b64;
  size_t i = 0;
  for (; i + 2 < payload.size(); i += 3) {
    uint32_t v = uint8_t(payload[i]) << 16 | uint8_t(payload[i + 1]) << 8 | uint8_t(payload[i + 2]);
    b64 += {a[v >> 18], a[(v >> 12) & 63], a[(v >> 6) & 63], a[v & 63]};
  }
  if (i + 1 == payload.size()) {
    uint32_t v = uint8_t(payload[i]) << 16;
    b64 += {a[v >> 18], a[(v >> 12) & 63], '=', '='};
  } else if (i + 2 == payload.size()) {
    uint32_t v = uint8_t(payload[i]) << 16 | uint8_t(payload[i + 1]) << 8;
    b64 += {a[v >> 18], a[(v >> 12) & 63], a[(v >> 6) & 63], '='};
  }
  // A 64-byte signature by a key nobody knows: not checkable, not a fault
  // (pull stores it, as `ki sign --envelope` would).
  return R"({"payload":")" + b64 + R"(","payloadType":"application/vnd.in-toto+json","signatures":[{"keyid":"k","sig":")" +
         std::string(86, 'A') + R"(=="}]})";
}

// The objects a user stored: the store's own zstd dictionaries are not
// carried by a push (each store holds those its frames use).
uint64_t CountObjects(Store& s) {
  uint64_t n = 0;
  EXPECT_OK(s.ForEachObject([&](const ObjectInfo& i) { return n += !IsDictionary(i), true; }));
  return n;
}

// 40 generated blobs of 50 KB beside the fixture's objects, pushed with
// them as one bundle; returns the refs and adds their bytes to *total.
std::vector<std::string> AddManyBlobs(Store& s, uint64_t* total) {
  std::vector<std::string> refs;
  auto b = s.NewBatch();
  EXPECT_OK(b);
  for (int j = 0; j < 40; ++j) {
    std::string x(50000, '\0');
    for (size_t i = 0; i < x.size(); ++i) x[i] = char('a' + (i * 31 + j * 7 + i / 97) % 26);
    x.replace(0, 8, "blob " + std::to_string(100 + j));  // 40 different blobs
    auto put = (*b)->PutBlob(x, "application/octet-stream");
    EXPECT_OK(put);
    refs.push_back(put->digest.str());
    *total += x.size();
  }
  EXPECT_OK((*b)->Commit());
  return refs;
}

class RemoteTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto s = Store::Init(dir_.Join("src"));
    ASSERT_OK(s);
    src_ = std::move(s).value();
    auto d = Store::Init(dir_.Join("dst"));
    ASSERT_OK(d);
    dst_ = std::move(d).value();
    std::string seed = test::ReadFileOrDie(test::DataPath(
        "kernelindex/fixtures/gpt-o3_cuda_5548d0.gqa_paged_decode_h32_kv4_d128_ps1.manifest.json"));
    AddInput in;
    in.source = "seed.json";
    in.bytes = seed;
    auto added = AddInputs(*src_, {in});
    ASSERT_OK(added);
    run_ = (*added)[0].digest;
    // A generated blob big enough to need several PATCH chunks.
    std::string big;
    for (uint32_t i = 0; i < 300000; ++i) big.push_back(char('a' + (i * 7919u + i / 13) % 26));
    auto b = src_->NewBatch();
    ASSERT_OK(b);
    auto put = (*b)->PutBlob(big, "text/plain");
    ASSERT_OK(put);
    blob_ = put->digest;
    envelope_ = Statement(run_);
    auto env = (*b)->PutBlob(envelope_, kDsseMediaType);
    ASSERT_OK(env);
    env_digest_ = env->digest;
    std::string key(run_.raw());
    key.append(env_digest_.raw());
    ASSERT_OK((*b)->Put(kAttestationTable, key, ""));
    ASSERT_OK((*b)->Commit());
  }

  TransferOptions Opts() {
    TransferOptions o;
    o.credentials = Credentials{};
    o.backoff_initial_ms = 1;
    o.max_attempts = 3;
    o.timeouts.low_speed_time_s = 5;
    o.timeouts.connect_s = 5;
    // The bundles of these tests are format 1 (every object also its own
    // blob, the pack optional): the pull paths that read remotes written
    // before packed bundles. conformance_test.cc covers format 2.
    o.bundle_format = 1;
    return o;
  }

  RemoteUrl Url(const std::string& host) {
    auto u = ParseRemoteUrl("oci://" + host + "/ki/test", true);
    EXPECT_OK(u);
    return *u;
  }

  void ExpectSameObjects(Store& a, Store& b, const std::vector<Digest>& ds) {
    for (const Digest& d : ds) {
      auto x = a.Read(d);
      auto y = b.Read(d);
      ASSERT_OK(x);
      ASSERT_OK(y);
      EXPECT_EQ(*x, *y) << d.str();
    }
  }

  // A fresh empty store beside src_ and dst_, kept until the test ends.
  Store& NewStore() {
    auto s = Store::Init(dir_.Join("store" + std::to_string(extra_.size())));
    if (!s.ok()) {
      ADD_FAILURE() << s.status().ToString();
      std::abort();
    }
    extra_.push_back(std::move(s).value());
    return *extra_.back();
  }

  // From now on `reg` answers every `method` request whose path contains
  // `path_part` with `reply` (the hostile cases); everything else as usual.
  static void Answer(FakeRegistry& reg, std::string method, std::string path_part, HttpReply reply) {
    reg.SetIntercept([=](const HttpReq& r) -> std::optional<HttpReply> {
      if (r.method == method && r.path.find(path_part) != std::string::npos) return reply;
      return std::nullopt;
    });
  }

  // An image manifest served as `body` with these headers.
  static HttpReply ManifestReply(std::string body, std::vector<std::pair<std::string, std::string>> headers) {
    HttpReply x;
    x.body = std::move(body);
    x.headers = std::move(headers);
    return x;
  }

  std::vector<Digest> AllObjects(Store& s) {
    std::vector<Digest> out;
    EXPECT_OK(s.ForEachObject([&](const ObjectInfo& i) { return out.push_back(i.digest), true; }));
    return out;
  }

  TempDir dir_;
  std::unique_ptr<Store> src_, dst_;
  std::vector<std::unique_ptr<Store>> extra_;
  Digest run_, blob_, env_digest_;
  std::string envelope_;
};

// ------------------------------------------------------------ happy paths

TEST_F(RemoteTest, PushPullRoundTripRestoresObjectsNamesAndAttestations) {
  FakeRegistry reg;
  auto pushed = Push(*src_, Url(reg.host()), {kRunName, blob_.str()}, Opts());
  ASSERT_OK(pushed);
  ASSERT_EQ(pushed->refs.size(), 2u);
  EXPECT_EQ(pushed->refs[0].tag, "BenchmarkRun.sol-trace-gqa-paged-decode-h32-kv4-d128-ps1-27ef153a");
  EXPECT_EQ(pushed->refs[0].attestations, 1u);
  EXPECT_TRUE(reg.HasTag(pushed->refs[0].tag));
  // One tag per root: the name when there is one, else the ki digest.
  EXPECT_FALSE(reg.HasTag("ki-" + run_.hex()));
  EXPECT_TRUE(reg.HasTag("ki-" + blob_.hex()));
  // Debian's registry has no referrers API: the attestation is listed
  // under the sha256-<hex> fallback tag of the record's manifest.
  auto fallback = reg.Manifest("sha256-" + pushed->refs[0].manifest.hex());
  ASSERT_TRUE(fallback.has_value());
  EXPECT_NE(fallback->find(kDsseMediaType), std::string::npos);

  auto pulled = Pull(*dst_, Url(reg.host()), {kRunName, "ki-" + blob_.hex()}, Opts());
  ASSERT_OK(pulled);
  EXPECT_EQ(pulled->refs[0].root, run_);
  EXPECT_EQ(pulled->refs[0].attestations, 1u);
  ExpectSameObjects(*src_, *dst_, AllObjects(*src_));
  EXPECT_EQ(CountObjects(*src_), CountObjects(*dst_));
  auto named = dst_->Resolve(kRunName);
  ASSERT_OK(named);
  EXPECT_EQ(*named, run_);
  std::string key(run_.raw());
  key.append(env_digest_.raw());
  auto row = dst_->Get(kAttestationTable, key);
  ASSERT_OK(row);
  EXPECT_TRUE(row->has_value());
  auto v = dst_->Verify(run_);
  ASSERT_OK(v);
  EXPECT_FALSE(v->HasFaults());

  // A second pull transfers no blob; a second push uploads nothing.
  reg.ClearLog();
  auto again = Pull(*dst_, Url(reg.host()), {kRunName}, Opts());
  ASSERT_OK(again);
  EXPECT_EQ(again->refs[0].received, 0u);
  EXPECT_EQ(reg.Count("GET", "/blobs/"), 0u);
  reg.ClearLog();
  auto repush = Push(*src_, Url(reg.host()), {kRunName}, Opts());
  ASSERT_OK(repush);
  EXPECT_EQ(repush->refs[0].sent, 0u);
  EXPECT_EQ(reg.Count("POST", "/blobs/uploads/"), 0u);
  // remote.state knew every blob and the tag: no blob was asked about, and
  // the manifest was confirmed with a HEAD instead of written again.
  EXPECT_EQ(reg.Count("HEAD", "/blobs/"), 0u);
  EXPECT_EQ(repush->blobs_known, repush->refs[0].objects + 1);
  EXPECT_EQ(reg.Count("PUT", "/manifests/"), 0u);
  EXPECT_EQ(reg.Count("HEAD", "/manifests/" + pushed->refs[0].tag), 1u);
  // What the pull saw is known too: pushing it back from the pulled store
  // asks nothing about blobs either.
  reg.ClearLog();
  auto back = Push(*dst_, Url(reg.host()), {kRunName}, Opts());
  ASSERT_OK(back);
  EXPECT_EQ(back->refs[0].sent, 0u);
  EXPECT_EQ(reg.Count("HEAD", "/blobs/"), 0u);
  // --recheck asks again.
  reg.ClearLog();
  auto o = Opts();
  o.use_remote_state = false;
  auto rechecked = Push(*src_, Url(reg.host()), {kRunName}, o);
  ASSERT_OK(rechecked);
  EXPECT_EQ(rechecked->refs[0].sent, 0u);
  EXPECT_EQ(reg.Count("HEAD", "/blobs/"), rechecked->refs[0].objects + 1);
}

TEST_F(RemoteTest, PullAsksForFallbackReferrersOnlyWhereTheTagExists) {
  FakeRegistry reg;
  auto pushed = Push(*src_, Url(reg.host()), {kRunName, blob_.str()}, Opts());
  ASSERT_OK(pushed);
  reg.ClearLog();
  auto o = Opts();
  o.tag_list_min_refs = 2;
  o.tag_page = 2;
  auto pulled = Pull(*dst_, Url(reg.host()), {kRunName, "ki-" + blob_.hex()}, o);
  ASSERT_OK(pulled);
  EXPECT_EQ(pulled->refs[0].attestations, 1u);
  // One tags/list (several pages), one GET of the run's sha256-<hex> index,
  // none for the blob's manifest, which has no referrers.
  EXPECT_GE(reg.Count("GET", "/tags/list"), 2u);
  EXPECT_EQ(reg.Count("GET", "/manifests/sha256-"), 1u);
  EXPECT_EQ(reg.Count("GET", "/manifests/sha256-" + pushed->refs[0].manifest.hex()), 1u);
  // Fewer refs than tag_list_min_refs: no tags/list, a GET per manifest.
  reg.ClearLog();
  Store& s = NewStore();
  auto few = Pull(s, Url(reg.host()), {kRunName, "ki-" + blob_.hex()}, Opts());
  ASSERT_OK(few);
  EXPECT_EQ(few->refs[0].attestations, 1u);
  EXPECT_EQ(reg.Count("GET", "/tags/list"), 0u);
  EXPECT_EQ(reg.Count("GET", "/manifests/sha256-"), 2u);
}

TEST_F(RemoteTest, FreshRegistryGetsUploadsWithoutHeadsAndAFullOneGetsNone) {
  // 60 distinct small blobs, each its own ref.
  std::vector<std::string> refs;
  {
    auto b = src_->NewBatch();
    ASSERT_OK(b);
    for (int i = 0; i < 60; ++i) {
      auto put = (*b)->PutBlob("blob number " + std::to_string(i), "text/plain");
      ASSERT_OK(put);
      refs.push_back(put->digest.str());
    }
    ASSERT_OK((*b)->Commit());
  }
  FakeRegistry reg;
  auto o = Opts();
  o.push_jobs = 1;
  auto pushed = Push(*src_, Url(reg.host()), refs, o);
  ASSERT_OK(pushed);
  EXPECT_EQ(pushed->blobs_sent, 61u);  // and the empty config
  EXPECT_EQ(pushed->blobs_checked + pushed->blobs_sent_unasked, 61u);
  EXPECT_LT(reg.Count("HEAD", "/blobs/"), 30u);
  EXPECT_EQ(reg.blob_count(), 62u);  // and the listing
  for (const auto& r : refs) EXPECT_TRUE(reg.HasTag("ki-" + r.substr(7)));

  // A store that has never talked to this registry asks first, finds every
  // blob there, and uploads nothing.
  Store& s = NewStore();
  auto pulled = Pull(s, Url(reg.host()), {"ki-" + refs[0].substr(7)}, Opts());
  ASSERT_OK(pulled);
  {
    auto b = s.NewBatch();
    ASSERT_OK(b);
    for (int i = 0; i < 60; ++i) ASSERT_OK((*b)->PutBlob("blob number " + std::to_string(i), "text/plain"));
    ASSERT_OK((*b)->Commit());
  }
  reg.ClearLog();
  auto again = Push(s, Url(reg.host()), refs, o);
  ASSERT_OK(again);
  EXPECT_EQ(again->blobs_sent, 0u);
  EXPECT_EQ(reg.Count("POST", "/blobs/uploads/"), 0u);
  EXPECT_EQ(again->blobs_known, 2u);  // the pulled blob and the config
  EXPECT_EQ(reg.Count("HEAD", "/blobs/"), 59u);
}

TEST_F(RemoteTest, StaleRemoteStateIsNoticedAndRepaired) {
  FakeRegistry reg;
  ASSERT_OK(Push(*src_, Url(reg.host()), {kRunName}, Opts()));
  // The registry is re-created empty at the same address: remote.state
  // now claims blobs and a tag that are gone.
  reg.Wipe();
  reg.ClearLog();
  auto again = Push(*src_, Url(reg.host()), {kRunName}, Opts());
  ASSERT_OK(again);
  EXPECT_GT(again->blobs_known, 0u);
  EXPECT_EQ(again->refs[0].sent, again->refs[0].objects);
  EXPECT_TRUE(reg.HasTag(again->refs[0].tag));
  ASSERT_OK(Pull(*dst_, Url(reg.host()), {kRunName}, Opts()));
  auto v = dst_->Verify(run_);
  ASSERT_OK(v);
  EXPECT_FALSE(v->HasFaults());
  // The re-uploaded blobs are recorded as held again: the next push asks nothing.
  reg.ClearLog();
  auto third = Push(*src_, Url(reg.host()), {kRunName}, Opts());
  ASSERT_OK(third);
  EXPECT_EQ(third->blobs_known, third->refs[0].objects + 1);
  EXPECT_EQ(reg.Count("HEAD", "/blobs/"), 0u);
}

TEST_F(RemoteTest, BundleRoundTripInSeveralParts) {
  FakeRegistry reg;
  auto o = Opts();
  o.bundle_tag = "everything";
  o.bundle_part_bytes = 1500;  // a few layers per part
  auto pushed = Push(*src_, Url(reg.host()), {kRunName, blob_.str()}, o);
  ASSERT_OK(pushed);
  ASSERT_EQ(pushed->refs.size(), 2u);
  EXPECT_EQ(pushed->refs[0].tag, "everything");
  EXPECT_EQ(pushed->refs[0].manifest, pushed->refs[1].manifest);
  EXPECT_TRUE(reg.HasTag("everything"));
  EXPECT_FALSE(reg.HasTag("ki-" + blob_.hex()));  // one tag for the bundle
  auto index = reg.Manifest("everything");
  ASSERT_TRUE(index.has_value());
  EXPECT_NE(index->find(kOciBundleType), std::string::npos);
  EXPECT_GE(reg.Count("PUT", "/manifests/sha256:"), 3u);  // parts, by digest

  auto pulled = Pull(*dst_, Url(reg.host()), {"everything"}, Opts());
  ASSERT_OK(pulled);
  EXPECT_FALSE(pulled->refs[0].root.has_value());
  EXPECT_EQ(pulled->refs[0].attestations, 1u);
  ExpectSameObjects(*src_, *dst_, AllObjects(*src_));
  EXPECT_EQ(CountObjects(*src_), CountObjects(*dst_));
  auto named = dst_->Resolve(kRunName);
  ASSERT_OK(named);
  EXPECT_EQ(*named, run_);
  std::string key(run_.raw());
  key.append(env_digest_.raw());
  auto row = dst_->Get(kAttestationTable, key);
  ASSERT_OK(row);
  EXPECT_TRUE(row->has_value());

  // Again: nothing moves, and a re-push only confirms the tag.
  reg.ClearLog();
  auto again = Pull(*dst_, Url(reg.host()), {"everything"}, Opts());
  ASSERT_OK(again);
  EXPECT_EQ(again->blobs_received, 0u);
  EXPECT_EQ(reg.Count("GET", "/blobs/"), 0u);
  reg.ClearLog();
  ASSERT_OK(Push(*src_, Url(reg.host()), {kRunName, blob_.str()}, o));
  EXPECT_EQ(reg.log().size(), 1u);
  EXPECT_EQ(reg.Count("HEAD", "/manifests/everything"), 1u);

  // The same bundle through an image layout.
  TempDir lay;
  auto lurl = ParseRemoteUrl("oci-layout:" + lay.path(), false);
  ASSERT_OK(lurl);
  auto lpushed = Push(*src_, *lurl, {kRunName, blob_.str()}, o);
  ASSERT_OK(lpushed);
  ASSERT_TRUE(lpushed->pack.has_value());  // a layout gets the pack too
  EXPECT_TRUE(std::filesystem::exists(lay.Join("blobs/sha256/" + lpushed->pack->digest.hex())));
  Store& s = NewStore();
  auto lpulled = Pull(s, *lurl, {"everything"}, Opts());
  ASSERT_OK(lpulled);
  EXPECT_EQ(lpulled->blobs_from_pack, lpulled->blobs_received);
  ExpectSameObjects(*src_, s, AllObjects(*src_));
}

TEST_F(RemoteTest, BundlePartsThatLieAreRefused) {
  FakeRegistry reg;
  auto o = Opts();
  o.bundle_tag = "everything";
  o.bundle_part_bytes = 1500;
  ASSERT_OK(Push(*src_, Url(reg.host()), {kRunName}, o));
  std::string index = *reg.Manifest("everything");
  // 1. A part whose size in the index is not its size.
  auto at = index.find("\"size\":");
  ASSERT_NE(at, std::string::npos);
  std::string wrong_size = index;
  wrong_size.insert(at + 7, "1");
  reg.PutManifestDirect("wrong-size", wrong_size, "application/vnd.oci.image.index.v1+json");
  auto r = Pull(*dst_, Url(reg.host()), {"wrong-size"}, Opts());
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(r.status().IsCorruption()) << r.status().ToString();
  // 2. An index of something else (an image index of ordinary images).
  std::string other = index;
  auto art = other.find(std::string(kOciBundleType));
  other.replace(art, kOciBundleType.size(), "application/vnd.example+json");
  reg.PutManifestDirect("not-ki", other, "application/vnd.oci.image.index.v1+json");
  r = Pull(*dst_, Url(reg.host()), {"not-ki"}, Opts());
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(r.status().IsInvalidInput()) << r.status().ToString();
  // 3. A part whose bytes are not what its digest names.
  std::string part_digest = index.substr(index.find("sha256:"), 71);
  Answer(reg, "GET", "/manifests/" + part_digest,
         ManifestReply("{\"schemaVersion\":2}", {{"Content-Type", "application/vnd.oci.image.manifest.v1+json"}}));
  r = Pull(*dst_, Url(reg.host()), {"everything"}, Opts());
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(r.status().IsCorruption()) << r.status().ToString();
  EXPECT_EQ(CountObjects(*dst_), 0u);
  // 4. A bad tag is refused before anything is sent.
  o.bundle_tag = "no/slashes";
  reg.ClearLog();
  EXPECT_FALSE(Push(*src_, Url(reg.host()), {kRunName}, o).ok());
  EXPECT_EQ(reg.log().size(), 0u);
}

// ------------------------------------------------------------ packs

// remote.state keeps the digest of the pack it built for a bundle (row
// `p`), so that pushing the same bundle again does not build the pack just
// to learn the index. The row only recognises the index the tag names: a
// wrong row, a moved tag or other objects get a pack built from the store.
TEST_F(RemoteTest, UnchangedBundleRePushTakesItsPackFromRemoteState) {
  FakeRegistry reg;
  auto o = Opts();
  o.bundle_tag = "everything";
  o.bundle_part_bytes = 1500;
  const std::vector<std::string> refs{kRunName, blob_.str()};
  auto first = Push(*src_, Url(reg.host()), refs, o);
  ASSERT_OK(first);
  ASSERT_TRUE(first->pack.has_value());
  EXPECT_TRUE(first->pack->built);
  const Digest index = first->refs[0].manifest;

  // Nothing changed: the pack is not built, one HEAD confirms the tag.
  reg.ClearLog();
  auto again = Push(*src_, Url(reg.host()), refs, o);
  ASSERT_OK(again);
  ASSERT_TRUE(again->pack.has_value());
  EXPECT_FALSE(again->pack->built);
  EXPECT_FALSE(again->pack->sent);
  EXPECT_EQ(again->pack->digest, first->pack->digest);
  EXPECT_EQ(again->pack->size, first->pack->size);
  EXPECT_EQ(again->pack->objects, first->pack->objects);
  EXPECT_EQ(again->refs[0].manifest, index);
  EXPECT_EQ(reg.log().size(), 1u);
  EXPECT_EQ(reg.Count("HEAD", "/manifests/everything"), 1u);

  // The row (docs/format.md, "Remote state"): 8 bytes naming the registry,
  // 'p', the tag -> pack key, pack digest, size, entries.
  const std::string key = std::string(Sha256Of(Url(reg.host()).str()).raw().substr(0, 8)) + "p" + "everything";
  auto row = src_->Get(kRemoteStateTable, key);
  ASSERT_OK(row);
  ASSERT_TRUE(row->has_value());
  const std::string good = **row;
  ASSERT_EQ(good.size(), 80u);
  EXPECT_EQ(good.substr(32, 32), first->pack->digest.raw());
  auto put_row = [&](const std::string& v) {
    auto b = src_->NewBatch();
    ASSERT_OK(b);
    ASSERT_OK((*b)->Put(kRemoteStateTable, key, v));
    ASSERT_OK((*b)->Commit());
  };

  // A wrong row (another pack digest under the same key): its index is not
  // the tag's, so the pack is built; that index is the tag's, so nothing
  // is written; the row is mended.
  std::string wrong = good;
  wrong.replace(32, 32, Sha256Of("not the pack").raw());
  put_row(wrong);
  reg.ClearLog();
  auto mended = Push(*src_, Url(reg.host()), refs, o);
  ASSERT_OK(mended);
  ASSERT_TRUE(mended->pack.has_value());
  EXPECT_TRUE(mended->pack->built);
  EXPECT_EQ(mended->pack->digest, first->pack->digest);
  EXPECT_EQ(mended->refs[0].manifest, index);
  EXPECT_EQ(reg.Count("PUT", "/manifests/"), 0u);
  EXPECT_EQ(Sha256Of(*reg.Manifest("everything")), index);
  EXPECT_EQ(**src_->Get(kRemoteStateTable, key), good);

  // The same wrong row, and the tag moved: the index is written again,
  // from the pack built, never from the row.
  put_row(wrong);
  reg.PutManifestDirect("everything", "{\"schemaVersion\":2}", "application/vnd.oci.image.index.v1+json");
  auto rewritten = Push(*src_, Url(reg.host()), refs, o);
  ASSERT_OK(rewritten);
  EXPECT_TRUE(rewritten->pack->built);
  EXPECT_EQ(rewritten->refs[0].manifest, index);
  EXPECT_EQ(Sha256Of(*reg.Manifest("everything")), index);
  EXPECT_EQ(**src_->Get(kRemoteStateTable, key), good);
  Store& s = NewStore();
  auto pulled = Pull(s, Url(reg.host()), {"everything"}, Opts());
  ASSERT_OK(pulled);
  EXPECT_EQ(pulled->blobs_from_pack, pulled->blobs_received);
  ExpectSameObjects(*src_, s, AllObjects(*src_));

  // Another object in the bundle: another key, a pack built.
  Digest tiny;
  {
    auto b = src_->NewBatch();
    ASSERT_OK(b);
    auto t = (*b)->PutBlob("tiny", "text/plain");
    ASSERT_OK(t);
    tiny = t->digest;
    ASSERT_OK((*b)->Commit());
  }
  auto more = Push(*src_, Url(reg.host()), {kRunName, blob_.str(), tiny.str()}, o);
  ASSERT_OK(more);
  EXPECT_TRUE(more->pack->built);
  EXPECT_EQ(more->pack->objects, first->pack->objects + 1);
  EXPECT_NE(more->refs[0].manifest, index);
  // Back to the first set of refs: the row is the new bundle's, so the
  // pack is built again and the tag rewritten.
  auto back = Push(*src_, Url(reg.host()), refs, o);
  ASSERT_OK(back);
  EXPECT_TRUE(back->pack->built);
  EXPECT_EQ(Sha256Of(*reg.Manifest("everything")), index);
  // --recheck (use_remote_state off) ignores the row.
  auto ro = o;
  ro.use_remote_state = false;
  auto rechecked = Push(*src_, Url(reg.host()), refs, ro);
  ASSERT_OK(rechecked);
  EXPECT_TRUE(rechecked->pack->built);
  // A row of another length (a later format) is ignored.
  put_row(good + "x");
  auto longer = Push(*src_, Url(reg.host()), refs, o);
  ASSERT_OK(longer);
  EXPECT_TRUE(longer->pack->built);
  EXPECT_EQ(longer->refs[0].manifest, index);
}

TEST_F(RemoteTest, BundlePackIsUsedWhereItPaysAndSkippedWhereNot) {
  FakeRegistry reg;
  auto o = Opts();
  o.bundle_tag = "everything";
  o.bundle_part_bytes = 1500;
  auto pushed = Push(*src_, Url(reg.host()), {kRunName, blob_.str()}, o);
  ASSERT_OK(pushed);
  ASSERT_TRUE(pushed->pack.has_value());
  EXPECT_TRUE(pushed->pack->sent);
  EXPECT_EQ(pushed->pack->objects, CountObjects(*src_));  // every object is under kPackEntryMax
  // The index lists the pack manifest once, after the parts; it names the pack blob.
  Json index = Json::parse(*reg.Manifest("everything"));
  ASSERT_EQ(index["manifests"].back()["artifactType"], kOciPackType);
  auto pm = reg.Manifest(index["manifests"].back()["digest"].get<std::string>());
  ASSERT_TRUE(pm.has_value());
  EXPECT_NE(pm->find(pushed->pack->digest.str()), std::string::npos);
  EXPECT_NE(pm->find(std::string(kOciPackMediaType)), std::string::npos);
  // Deterministic: the same store and refs give the same pack and index elsewhere.
  FakeRegistry other;
  auto pushed2 = Push(*src_, Url(other.host()), {kRunName, blob_.str()}, o);
  ASSERT_OK(pushed2);
  EXPECT_EQ(pushed2->pack->digest, pushed->pack->digest);
  EXPECT_EQ(pushed2->refs[0].manifest, pushed->refs[0].manifest);

  // A fresh store: one blob GET (the pack) instead of one per object.
  reg.ClearLog();
  auto pulled = Pull(*dst_, Url(reg.host()), {"everything"}, Opts());
  ASSERT_OK(pulled);
  EXPECT_EQ(pulled->refs[0].from_pack, pulled->refs[0].objects);
  EXPECT_EQ(pulled->blobs_from_pack, pulled->blobs_received);
  EXPECT_EQ(pulled->packs_received, 1u);
  EXPECT_EQ(pulled->pack_bytes_received, pushed->pack->size);
  EXPECT_TRUE(pulled->refs[0].warnings.empty());
  EXPECT_EQ(reg.Count("GET", "/blobs/"), 1u);
  EXPECT_EQ(reg.Count("GET", "/blobs/" + pushed->pack->digest.str()), 1u);
  ExpectSameObjects(*src_, *dst_, AllObjects(*src_));
  EXPECT_EQ(CountObjects(*src_), CountObjects(*dst_));
  ASSERT_OK(dst_->Resolve(kRunName));
  auto v = dst_->Verify(run_);
  ASSERT_OK(v);
  EXPECT_FALSE(v->HasFaults());
  // Everything present: neither the pack nor its manifest is asked for.
  reg.ClearLog();
  auto again = Pull(*dst_, Url(reg.host()), {"everything"}, Opts());
  ASSERT_OK(again);
  EXPECT_EQ(again->blobs_received, 0u);
  EXPECT_EQ(reg.Count("GET", "/blobs/"), 0u);
  EXPECT_EQ(reg.Count("GET", "/manifests/" + index["manifests"].back()["digest"].get<std::string>()), 0u);

  // use_pack off (ki pull --no-pack): one GET per object.
  Store& s = NewStore();
  reg.ClearLog();
  auto po = Opts();
  po.use_pack = false;
  auto per_object = Pull(s, Url(reg.host()), {"everything"}, po);
  ASSERT_OK(per_object);
  EXPECT_EQ(per_object->blobs_from_pack, 0u);
  EXPECT_EQ(reg.Count("GET", "/blobs/"), per_object->blobs_received);
  ExpectSameObjects(*src_, s, AllObjects(*src_));

  // push --no-pack: an index without a pack; pulls go object by object.
  FakeRegistry plain;
  auto np = o;
  np.use_pack = false;
  auto pushed3 = Push(*src_, Url(plain.host()), {kRunName, blob_.str()}, np);
  ASSERT_OK(pushed3);
  EXPECT_FALSE(pushed3->pack.has_value());
  EXPECT_EQ(plain.Manifest("everything")->find(std::string(kOciPackType)), std::string::npos);
  Store& s3 = NewStore();
  auto p3 = Pull(s3, Url(plain.host()), {"everything"}, Opts());
  ASSERT_OK(p3);
  EXPECT_EQ(p3->blobs_from_pack, 0u);
  EXPECT_EQ(p3->blobs_received, CountObjects(*src_));
  ExpectSameObjects(*src_, s3, AllObjects(*src_));

  // A store that lacks one small object of a bundle whose pack is large
  // (96 KiB of incompressible bytes inside) fetches that object alone: the
  // pack costs more than its bytes + 32 KiB for the request.
  std::string noise;
  for (uint32_t i = 0; noise.size() < (96u << 10); ++i) noise += std::string(Sha256Of(std::to_string(i)).raw());
  Digest noise_d, tiny_d;
  {
    auto b = src_->NewBatch();
    ASSERT_OK(b);
    auto n = (*b)->PutBlob(noise, "application/octet-stream");
    ASSERT_OK(n);
    noise_d = n->digest;
    auto t = (*b)->PutBlob("tiny", "text/plain");
    ASSERT_OK(t);
    tiny_d = t->digest;
    ASSERT_OK((*b)->Commit());
  }
  auto wo = o;
  wo.bundle_tag = "plus-noise";
  ASSERT_OK(Push(*src_, Url(reg.host()), {kRunName, blob_.str(), noise_d.str()}, wo));
  ASSERT_OK(Pull(*dst_, Url(reg.host()), {"plus-noise"}, Opts()));
  wo.bundle_tag = "plus-tiny";
  auto pushed4 = Push(*src_, Url(reg.host()), {kRunName, blob_.str(), noise_d.str(), tiny_d.str()}, wo);
  ASSERT_OK(pushed4);
  ASSERT_GT(pushed4->pack->size, 64u << 10);
  reg.ClearLog();
  auto partial = Pull(*dst_, Url(reg.host()), {"plus-tiny"}, Opts());
  ASSERT_OK(partial);
  EXPECT_EQ(partial->blobs_received, 1u);
  EXPECT_EQ(partial->packs_received, 0u);
  EXPECT_EQ(reg.Count("GET", "/blobs/"), 1u);
  EXPECT_EQ(reg.Count("GET", "/blobs/" + tiny_d.str()), 1u);
  ExpectSameObjects(*src_, *dst_, {tiny_d, noise_d});
}

// skopeo 1.9.3 copies a bundle's manifests byte for byte but re-serialises
// the index without artifactType fields: ki still reads it as a bundle (by
// its annotations), tells the pack's manifest by its own artifactType, and
// still refuses an index whose artifactType names something else.
TEST_F(RemoteTest, BundleIndexReserialisedWithoutArtifactTypesIsRead) {
  FakeRegistry reg;
  auto o = Opts();
  o.bundle_tag = "everything";
  o.bundle_part_bytes = 1500;
  auto pushed = Push(*src_, Url(reg.host()), {kRunName, blob_.str()}, o);
  ASSERT_OK(pushed);
  Json idx = Json::parse(*reg.Manifest("everything"));
  idx.erase("artifactType");
  for (Json& m : idx["manifests"]) m.erase("artifactType");
  reg.PutManifestDirect("copied", idx.dump(), "application/vnd.oci.image.index.v1+json");
  reg.ClearLog();
  auto pulled = Pull(*dst_, Url(reg.host()), {"copied"}, Opts());
  ASSERT_OK(pulled);
  EXPECT_EQ(pulled->blobs_from_pack, pulled->blobs_received);
  EXPECT_EQ(pulled->packs_received, 1u);
  ExpectSameObjects(*src_, *dst_, AllObjects(*src_));
  // Each entry is fetched once: the pack's manifest, read to tell it from
  // the parts, is not fetched again to find the pack.
  ASSERT_GE(idx["manifests"].size(), 3u);
  for (const Json& m : idx["manifests"])
    EXPECT_EQ(reg.Count("GET", "/manifests/" + m["digest"].get<std::string>()), 1u) << m.dump();
  // Without the ki annotations it is somebody else's index.
  idx["annotations"].erase(std::string(kAnnRoots));
  reg.PutManifestDirect("foreign", idx.dump(), "application/vnd.oci.image.index.v1+json");
  Store& s = NewStore();
  auto r = Pull(s, Url(reg.host()), {"foreign"}, Opts());
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(r.status().IsInvalidInput()) << r.status().ToString();
}

// ------------------------------------------------------------ bundle limits

constexpr const char* kIndexType = "application/vnd.oci.image.index.v1+json";

// Part `i` of `n`, listing no layer: only its digest and size matter here.
std::string EmptyPart(size_t i, size_t n) {
  Json m = {{"schemaVersion", 2},
            {"mediaType", "application/vnd.oci.image.manifest.v1+json"},
            {"artifactType", kOciBundleType},
            {"layers", Json::array()},
            {"annotations",
             {{std::string(kAnnFormat), "1"}, {std::string(kAnnPart), std::to_string(i) + "/" + std::to_string(n)}}}};
  return m.dump();
}

std::vector<std::string> EmptyParts(size_t n) {
  std::vector<std::string> parts;
  for (size_t i = 1; i <= n; ++i) parts.push_back(EmptyPart(i, n));
  return parts;
}

// An index as skopeo 1.9.3 re-serialises it: no artifactType anywhere.
std::string Untyped(const std::string& index) {
  Json j = Json::parse(index);
  j.erase("artifactType");
  for (Json& m : j["manifests"]) m.erase("artifactType");
  return j.dump();
}

TEST(BundleIndexTest, AtMost10000PartsAndOnePack) {
  static_assert(remote::kBundleMaxParts == 10000 && remote::kBundleMaxEntries == 10001);
  TransferOptions opts;
  const std::vector<std::string> parts = EmptyParts(10001);
  const std::vector<std::string> most(parts.begin(), parts.end() - 1);
  const std::string pack = remote::PackManifest(Sha256Of("pack"), 4, 1);
  // 10,000 parts, with or without the pack: accepted.
  auto r = remote::ParseBundleIndex(remote::BundleIndex(most, 1, &pack), kIndexType, opts);
  ASSERT_OK(r);
  EXPECT_EQ(r->parts.size(), 10000u);
  ASSERT_TRUE(r->pack.has_value());
  EXPECT_EQ(r->pack->digest, Sha256Of(pack));
  ASSERT_OK(remote::ParseBundleIndex(remote::BundleIndex(most, 1), kIndexType, opts));
  // 10,001 parts: refused, without or with the pack.
  r = remote::ParseBundleIndex(remote::BundleIndex(parts, 1), kIndexType, opts);
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(r.status().IsInvalidInput());
  EXPECT_NE(r.status().message().find("10001 parts, more than 10000"), std::string::npos) << r.status().ToString();
  r = remote::ParseBundleIndex(remote::BundleIndex(parts, 1, &pack), kIndexType, opts);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("10002 entries, more than 10000 parts and a pack manifest"), std::string::npos)
      << r.status().ToString();
  // Untyped, 10,000 parts and the pack are 10,001 entries that do not say
  // which is the pack: accepted here (Pull counts them once fetched).
  r = remote::ParseBundleIndex(Untyped(remote::BundleIndex(most, 1, &pack)), kIndexType, opts);
  ASSERT_OK(r);
  EXPECT_EQ(r->parts.size(), 10001u);
  EXPECT_FALSE(r->pack.has_value());
  r = remote::ParseBundleIndex(Untyped(remote::BundleIndex(parts, 1, &pack)), kIndexType, opts);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("10002 entries"), std::string::npos) << r.status().ToString();
}

// The same limit through Pull for an index without artifactType fields:
// 10,000 parts and the pack's manifest pull; 10,001 parts are refused once
// each said what it is, and nothing is stored.
TEST_F(RemoteTest, UntypedBundleIndexOf10000PartsAndAPackPullsAnd10001PartsAreRefused) {
  FakeRegistry reg;
  const std::vector<std::string> parts = EmptyParts(10001);
  for (const std::string& p : parts) reg.PutManifestDirect(Sha256Of(p).str(), p, "application/vnd.oci.image.manifest.v1+json");
  const std::string pack = remote::PackManifest(Sha256Of("pack"), 4, 1);
  reg.PutManifestDirect(Sha256Of(pack).str(), pack, "application/vnd.oci.image.manifest.v1+json");
  const std::vector<std::string> most(parts.begin(), parts.end() - 1);
  reg.PutManifestDirect("fits", Untyped(remote::BundleIndex(most, 1, &pack)), kIndexType);
  reg.PutManifestDirect("too-many", Untyped(remote::BundleIndex(parts, 1)), kIndexType);
  auto o = Opts();
  o.pull_jobs = 8;
  auto fits = Pull(*dst_, Url(reg.host()), {"fits"}, o);
  ASSERT_OK(fits);
  EXPECT_EQ(fits->refs[0].objects, 0u);
  auto too_many = Pull(*dst_, Url(reg.host()), {"too-many"}, o);
  ASSERT_FALSE(too_many.ok());
  EXPECT_TRUE(too_many.status().IsInvalidInput());
  EXPECT_NE(too_many.status().message().find("10001 parts, more than 10000"), std::string::npos)
      << too_many.status().ToString();
  EXPECT_EQ(CountObjects(*dst_), 0u);
}

// The layer limit bounds a whole bundle, not only each of its parts.
TEST_F(RemoteTest, BundleOfMoreLayersInAllThanTheLimitIsRefused) {
  uint64_t total = 0;
  std::vector<std::string> refs = AddManyBlobs(*src_, &total);
  refs.insert(refs.begin(), {kRunName, blob_.str()});
  FakeRegistry reg;
  auto o = Opts();
  o.bundle_tag = "everything";
  o.bundle_part_bytes = 1500;  // a few layers per part
  o.use_pack = false;
  ASSERT_OK(Push(*src_, Url(reg.host()), refs, o));
  const uint64_t objects = CountObjects(*src_);
  ASSERT_GT(objects, 40u);
  auto po = Opts();
  po.max_layers = 30;  // more than any part lists, fewer than the bundle
  auto r = Pull(*dst_, Url(reg.host()), {"everything"}, po);
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(r.status().IsInvalidInput());
  EXPECT_NE(r.status().message().find("lists more than 30 objects in its parts"), std::string::npos)
      << r.status().ToString();
  EXPECT_EQ(CountObjects(*dst_), 0u);
  po.max_layers = objects + 1;
  ASSERT_OK(Pull(*dst_, Url(reg.host()), {"everything"}, po));
  EXPECT_EQ(CountObjects(*src_), CountObjects(*dst_));
}

// Push refuses, before any request, a bundle a pull would refuse.
TEST_F(RemoteTest, PushRefusesABundleOfMoreThan10000Parts) {
  Store& s = NewStore();
  std::vector<std::string> refs;
  {
    auto b = s.NewBatch();
    ASSERT_OK(b);
    for (int i = 0; i < 10001; ++i) {
      auto put = (*b)->PutBlob("object " + std::to_string(i), "text/plain");
      ASSERT_OK(put);
      refs.push_back(put->digest.str());
    }
    ASSERT_OK((*b)->Commit());
  }
  FakeRegistry reg;
  auto o = Opts();
  o.bundle_tag = "huge";
  o.bundle_part_bytes = 1;  // one object per part
  auto r = Push(s, Url(reg.host()), refs, o);
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(r.status().IsInvalidInput());
  EXPECT_NE(r.status().message().find("10001 parts"), std::string::npos) << r.status().ToString();
  EXPECT_EQ(reg.log().size(), 0u);
}

// Each hostile pack is served as the pack of a copy of a genuine bundle:
// the pull must store exactly the source's objects, taking from the pack
// only entries that were verified, and say why a pack was refused.
TEST_F(RemoteTest, PacksThatLieAreRefusedAndTheObjectsFetchedOneByOne) {
  FakeRegistry reg;
  auto o = Opts();
  o.bundle_tag = "everything";
  auto pushed = Push(*src_, Url(reg.host()), {kRunName, blob_.str()}, o);
  ASSERT_OK(pushed);
  ASSERT_TRUE(pushed->pack.has_value());
  const std::string original = *reg.Manifest("everything");
  // The genuine entries, in pack order.
  std::vector<std::pair<Digest, std::string>> entries;
  std::string genuine;  // the pack as uploaded
  for (const auto& r : reg.log())
    if (r.method == "PUT" && r.body.size() == pushed->pack->size) genuine = r.body;
  ASSERT_EQ(Sha256Of(genuine), pushed->pack->digest);
  {
    remote::PackReadLimits limits;
    limits.max_tar_bytes = 1ull << 30;
    ASSERT_OK(remote::ReadPack(
        genuine, limits,
        [&](const Digest& d) -> std::optional<uint64_t> {
          auto info = src_->Stat(d);
          if (!info.ok() || !*info) return std::nullopt;
          return (**info).size;
        },
        [&](const Digest& d, std::string&& bytes) -> Status {
          entries.emplace_back(d, std::move(bytes));
          return Status::OK();
        }));
  }
  ASSERT_GE(entries.size(), 4u);
  auto tar_of = [](const std::vector<std::pair<Digest, std::string>>& es) {
    std::string tar;
    for (const auto& [d, b] : es) tar += test::TarEntry("sha256/" + d.hex(), b);
    return tar;
  };
  const std::string end(1024, '\0');
  // Serves `pack` as the pack of a copy of the bundle tagged `tag`.
  auto publish = [&](const std::string& tag, const std::string& pack) {
    reg.PutBlobDirect(pack);
    std::string pm = remote::PackManifest(Sha256Of(pack), pack.size(), entries.size());
    reg.PutManifestDirect("pm-" + tag, pm, "application/vnd.oci.image.manifest.v1+json");
    Json idx = Json::parse(original);
    idx["manifests"].back()["digest"] = Sha256Of(pm).str();
    idx["manifests"].back()["size"] = pm.size();
    reg.PutManifestDirect(tag, idx.dump(), "application/vnd.oci.image.index.v1+json");
  };
  auto wrong = entries;
  wrong[1].second[0] ^= 1;
  auto half = std::vector<std::pair<Digest, std::string>>(entries.begin(), entries.begin() + entries.size() / 2);
  auto stranger = entries;
  stranger.insert(stranger.begin() + 1, {Sha256Of("not in the bundle"), "not in the bundle"});
  std::string good_tar = tar_of(entries);
  std::string escape = test::TarEntry("../" + entries[0].first.hex(), entries[0].second) + tar_of(entries);
  std::string full = test::ZstdFrame(good_tar + end);
  struct Case {
    std::string tag, pack, warning;  // warning "": none (a pack may lack objects)
  };
  std::vector<Case> cases = {
      {"wrong-bytes", test::ZstdFrame(tar_of(wrong) + end), "hashes to"},
      {"escaping-name", test::ZstdFrame(escape + end), "is not sha256/<64 hex>"},
      {"truncated", full.substr(0, full.size() * 2 / 3), "truncated"},
      {"lacking-objects", test::ZstdFrame(tar_of(half) + end), ""},
      {"stranger", test::ZstdFrame(tar_of(stranger) + end), "is not an object of this bundle"},
      {"larger-than-the-objects", test::ZstdFrame(good_tar + end + std::string(64 << 10, '\0')), "more than"},
  };
  for (const Case& c : cases) {
    publish(c.tag, c.pack);
    Store& s = NewStore();
    auto r = Pull(s, Url(reg.host()), {c.tag}, Opts());
    SCOPED_TRACE(c.tag);
    ASSERT_OK(r);
    if (c.warning.empty()) {
      EXPECT_TRUE(r->refs[0].warnings.empty()) << c.tag;
    } else {
      ASSERT_EQ(r->refs[0].warnings.size(), 1u) << c.tag;
      EXPECT_NE(r->refs[0].warnings[0].find(c.warning), std::string::npos) << c.tag << ": " << r->refs[0].warnings[0];
      EXPECT_NE(r->refs[0].warnings[0].find("fetched one by one"), std::string::npos) << r->refs[0].warnings[0];
    }
    EXPECT_LT(r->blobs_from_pack, r->blobs_received) << c.tag;
    ExpectSameObjects(*src_, s, AllObjects(*src_));
    EXPECT_EQ(CountObjects(s), CountObjects(*src_)) << c.tag;
    auto v = s.Verify(run_);
    ASSERT_OK(v);
    EXPECT_FALSE(v->HasFaults()) << c.tag;
  }
  // A pack blob larger than its manifest announces is cut off at the first extra byte.
  std::string pack_path = "/blobs/" + pushed->pack->digest.str();
  HttpReply longer;
  longer.body = genuine + "more";
  Answer(reg, "GET", pack_path, longer);
  Store& s = NewStore();
  auto r = Pull(s, Url(reg.host()), {"everything"}, Opts());
  ASSERT_OK(r);
  ASSERT_EQ(r->refs[0].warnings.size(), 1u);
  EXPECT_NE(r->refs[0].warnings[0].find("larger than"), std::string::npos) << r->refs[0].warnings[0];
  EXPECT_EQ(r->blobs_from_pack, 0u);
  ExpectSameObjects(*src_, s, AllObjects(*src_));
  // A bad pack and a bad blob behind it: the pull fails and stores nothing.
  publish("bad-twice", test::ZstdFrame(tar_of(wrong) + end));
  HttpReply bad_blob;
  bad_blob.body = std::string(entries[1].second.size(), 'x');
  Answer(reg, "GET", "/blobs/" + entries[1].first.str(), bad_blob);
  Store& s2 = NewStore();
  auto failed = Pull(s2, Url(reg.host()), {"bad-twice"}, Opts());
  ASSERT_FALSE(failed.ok());
  EXPECT_TRUE(failed.status().IsCorruption()) << failed.status().ToString();
  EXPECT_EQ(CountObjects(s2), 0u);
}

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

TEST_F(RemoteTest, PullBringsTheDocumentOfAManifestTheStoreHasWithoutIt) {
  FakeRegistry reg;
  ASSERT_OK(Push(*src_, Url(reg.host()), {kRunName}, Opts()));
  // dst holds the run's manifest object, but not its document (so not its name).
  auto canonical = src_->Read(run_);
  ASSERT_OK(canonical);
  auto m = ManifestFromCanonical(*canonical, "run");
  ASSERT_OK(m);
  {
    auto b = dst_->NewBatch();
    ASSERT_OK(b);
    ASSERT_OK((*b)->PutManifest(*m, std::nullopt, ""));
    ASSERT_OK((*b)->Commit());
  }
  EXPECT_FALSE(dst_->Resolve(kRunName).ok());
  auto pulled = Pull(*dst_, Url(reg.host()), {kRunName}, Opts());
  ASSERT_OK(pulled);
  EXPECT_GE(pulled->refs[0].present, 1u);
  auto named = dst_->Resolve(kRunName);
  ASSERT_OK(named);
  EXPECT_EQ(*named, run_);
  auto v = dst_->Verify(run_);
  ASSERT_OK(v);
  EXPECT_FALSE(v->HasFaults());
}

// Two runs carry one name (the seed's, and a second run of its workload
// added after it): only the latest holder is pushed under the name's tag;
// the earlier one is tagged by its digest, so the two never share a tag.
TEST_F(RemoteTest, ANameTwoRunsCarryTagsOnlyItsLatestHolder) {
  Json bundle = Json::parse(test::ReadFileOrDie(test::DataPath(
      "kernelindex/fixtures/gpt-o3_cuda_5548d0.gqa_paged_decode_h32_kv4_d128_ps1.manifest.json")));
  bundle["run"]["spec"]["timing"]["latencyNs"]["mean"] = 350000;
  AddInput in;
  in.source = "second.json";
  in.bytes = bundle.dump();
  auto added = AddInputs(*src_, {in});
  ASSERT_OK(added);
  const Digest second = (*added)[0].digest;
  ASSERT_NE(second, run_);
  FakeRegistry reg;
  auto pushed = Push(*src_, Url(reg.host()), {run_.str(), second.str()}, Opts());
  ASSERT_OK(pushed);
  ASSERT_EQ(pushed->refs.size(), 2u);
  EXPECT_EQ(pushed->refs[0].tag, "ki-" + run_.hex());
  EXPECT_EQ(pushed->refs[1].tag, "BenchmarkRun.sol-trace-gqa-paged-decode-h32-kv4-d128-ps1-27ef153a");
  // Both come back, each under its own tag, with its name.
  ASSERT_OK(Pull(*dst_, Url(reg.host()), {pushed->refs[0].tag, pushed->refs[1].tag}, Opts()));
  for (const Digest& d : {run_, second}) {
    auto names = dst_->NamesOf(d);
    ASSERT_OK(names);
    EXPECT_EQ(*names, std::vector<std::string>{"BenchmarkRun/sol-trace-gqa-paged-decode-h32-kv4-d128-ps1-27ef153a"});
  }
}

TEST_F(RemoteTest, PullByKiDigestAndByManifestDigest) {
  FakeRegistry reg;
  auto pushed = Push(*src_, Url(reg.host()), {kRunName}, Opts());
  ASSERT_OK(pushed);
  // A named root pushed without --digest-tags has no ki-<hex> tag: the
  // remote's listing names its manifest.
  EXPECT_FALSE(reg.HasTag("ki-" + run_.hex()));
  auto by_digest = Pull(*dst_, Url(reg.host()), {run_.str()}, Opts());
  ASSERT_OK(by_digest);
  EXPECT_EQ(by_digest->refs[0].root, run_);
  auto o = Opts();
  o.digest_tags = true;
  ASSERT_OK(Push(*src_, Url(reg.host()), {kRunName}, o));
  EXPECT_TRUE(reg.HasTag("ki-" + run_.hex()));
  ASSERT_OK(Pull(*dst_, Url(reg.host()), {run_.str()}, Opts()));
  Store& s = NewStore();
  auto r = Pull(s, Url(reg.host()), {pushed->refs[0].manifest.str()}, Opts());
  ASSERT_OK(r);
  EXPECT_EQ(r->refs[0].root, run_);
}

TEST_F(RemoteTest, ChunkedUploadWhenMonolithicPutIsRefused) {
  FakeRegistry reg;
  // The registry refuses any PUT that carries a body over 64 KiB.
  reg.SetIntercept([](const HttpReq& r) -> std::optional<HttpReply> {
    if (r.method == "PUT" && r.path.find("/blobs/uploads/") != std::string::npos && r.body.size() > 65536) {
      HttpReply x;
      x.status = 413;
      return x;
    }
    return std::nullopt;
  });
  auto o = Opts();
  o.chunk_size = 50000;
  ASSERT_OK(Push(*src_, Url(reg.host()), {blob_.str()}, o));
  EXPECT_GE(reg.Count("PATCH", "/blobs/uploads/"), 6u);
  ASSERT_OK(Pull(*dst_, Url(reg.host()), {blob_.str()}, Opts()));
  ExpectSameObjects(*src_, *dst_, {blob_});
}

TEST_F(RemoteTest, SingleRequestUploadsWhereTheRegistryTakesThem) {
  // A registry that takes POST ?digest= with the body: one request per blob.
  auto o = Opts();
  o.push_jobs = 1;  // the first upload (the 2-byte config) probes
  FakeRegistry reg;
  reg.AcceptSingleRequestUploads(true);
  auto pushed = Push(*src_, Url(reg.host()), {kRunName, blob_.str()}, o);
  ASSERT_OK(pushed);
  EXPECT_EQ(reg.Count("POST", "/blobs/uploads/"), pushed->blobs_sent + 1);  // and the listing
  EXPECT_EQ(reg.Count("PUT", "/blobs/uploads/"), 0u);
  ASSERT_OK(Pull(*dst_, Url(reg.host()), {kRunName, "ki-" + blob_.hex()}, Opts()));
  ExpectSameObjects(*src_, *dst_, AllObjects(*src_));

  // One that ignores the digest and opens a session (distribution 2.8):
  // POST then PUT for every blob, a body in the POST only while probing.
  FakeRegistry old;
  Store& s = NewStore();
  auto again = Push(*src_, Url(old.host()), {kRunName, blob_.str()}, o);
  ASSERT_OK(again);
  EXPECT_EQ(old.Count("POST", "/blobs/uploads/"), again->blobs_sent + 1);  // and the listing
  EXPECT_EQ(old.Count("PUT", "/blobs/uploads/"), again->blobs_sent + 1);
  size_t with_body = 0;
  for (const auto& r : old.log()) with_body += r.method == "POST" && !r.body.empty();
  EXPECT_EQ(with_body, 1u);
  ASSERT_OK(Pull(s, Url(old.host()), {kRunName, "ki-" + blob_.hex()}, Opts()));
  ExpectSameObjects(*src_, s, AllObjects(*src_));

  // One that refuses it outright: the two-request upload at once.
  FakeRegistry strict;
  strict.SetIntercept([](const HttpReq& r) -> std::optional<HttpReply> {
    if (r.method != "POST" || r.query.find("digest=") == std::string::npos) return std::nullopt;
    HttpReply x;
    x.status = 405;
    return x;
  });
  ASSERT_OK(Push(*src_, Url(strict.host()), {blob_.str()}, o));
  EXPECT_TRUE(strict.HasTag("ki-" + blob_.hex()));
}

// ------------------------------------------------------------ hostile registry

TEST_F(RemoteTest, WrongBytesForADigestAreRefused) {
  FakeRegistry reg;
  ASSERT_OK(Push(*src_, Url(reg.host()), {kRunName, blob_.str()}, Opts()));
  HttpReply wrong;
  wrong.body = std::string(300000, 'x');  // right size, wrong bytes
  Answer(reg, "GET", "/blobs/" + blob_.str(), wrong);
  auto r = Pull(*dst_, Url(reg.host()), {kRunName, "ki-" + blob_.hex()}, Opts());
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(r.status().IsCorruption()) << r.status().ToString();
  EXPECT_NE(r.status().message().find("hash"), std::string::npos);
  EXPECT_EQ(CountObjects(*dst_), 0u);  // nothing, not even the good objects
}

TEST_F(RemoteTest, BodyLargerThanAnnouncedIsRefused) {
  FakeRegistry reg;
  ASSERT_OK(Push(*src_, Url(reg.host()), {blob_.str()}, Opts()));
  auto good = src_->Read(blob_);
  ASSERT_OK(good);
  HttpReply longer;
  longer.body = *good + "and then some more";
  Answer(reg, "GET", "/blobs/" + blob_.str(), longer);
  auto r = Pull(*dst_, Url(reg.host()), {blob_.str()}, Opts());
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("larger than"), std::string::npos) << r.status().ToString();
  EXPECT_EQ(CountObjects(*dst_), 0u);
}

// ------------------------------------------------------------ streamed blobs
// Blobs over TransferOptions::stream_above (1 MiB) are never held whole:
// push reads them from the store into the upload, pull downloads them into
// a scratch file under objects/incoming and stores that.

// `bytes` of generated text (compressible: stored as a zstd frame), or of
// random bytes (stored raw, so a flipped byte is found only by the hash at
// the end), added to `s` through the streaming write path.
Digest AddLargeBlob(Store& s, const TempDir& dir, uint64_t bytes, bool random, uint32_t seed) {
  std::string x(bytes, '\0');
  std::mt19937 rng(seed);
  for (size_t i = 0; i < x.size(); ++i) x[i] = random ? char(rng()) : char('a' + (i * 7919u + i / 13 + seed) % 26);
  std::string path = dir.Join("large-" + std::to_string(seed));
  test::WriteFileOrDie(path, x);
  auto in = Env::Default()->NewSequentialFile(path);
  EXPECT_OK(in);
  auto b = s.NewBatch();
  EXPECT_OK(b);
  auto put = (*b)->PutBlobStream(**in, "application/octet-stream", path);
  EXPECT_OK(put);
  EXPECT_OK((*b)->Commit());
  return put->digest;
}

// Files left in a store's objects/incoming (scratch files of streamed writes).
size_t IncomingFiles(Store& s) {
  std::error_code ec;
  size_t n = 0;
  for (auto it = std::filesystem::directory_iterator(s.path() + "/objects/incoming", ec);
       !ec && it != std::filesystem::directory_iterator(); ++it)
    n++;
  return n;
}

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
// error (the scratch file's own name, `<pid>-pull-<n>`), nothing stored and
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
  EXPECT_NE(r.status().message().find("-pull-"), std::string::npos) << r.status().ToString();
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

TEST_F(RemoteTest, BlobOverTheSizeLimitIsNeverRequested) {
  FakeRegistry reg;
  ASSERT_OK(Push(*src_, Url(reg.host()), {blob_.str()}, Opts()));
  reg.ClearLog();
  auto o = Opts();
  o.max_blob_size = 1000;
  auto r = Pull(*dst_, Url(reg.host()), {blob_.str()}, o);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("over the limit"), std::string::npos) << r.status().ToString();
  EXPECT_EQ(reg.Count("GET", "/blobs/"), 0u);
  EXPECT_EQ(CountObjects(*dst_), 0u);
}

TEST_F(RemoteTest, TruncatedBodyIsRefused) {
  FakeRegistry reg;
  ASSERT_OK(Push(*src_, Url(reg.host()), {blob_.str()}, Opts()));
  auto good = src_->Read(blob_);
  ASSERT_OK(good);
  HttpReply truncated;
  truncated.body = good->substr(0, 1000);
  truncated.declared_length = long(good->size());  // then the connection closes
  Answer(reg, "GET", "/blobs/" + blob_.str(), truncated);
  auto r = Pull(*dst_, Url(reg.host()), {blob_.str()}, Opts());
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("truncated"), std::string::npos) << r.status().ToString();
  EXPECT_NE(r.status().message().find("gave up after 3 attempts"), std::string::npos);
  EXPECT_EQ(CountObjects(*dst_), 0u);
}

TEST_F(RemoteTest, TransientServerErrorsAreRetried) {
  FakeRegistry reg;
  std::atomic<int> failures{0};
  reg.SetIntercept([&](const HttpReq& r) -> std::optional<HttpReply> {
    if (r.method == "PUT" && r.path.find("/blobs/uploads/") != std::string::npos && failures < 2) {
      failures++;
      HttpReply x;
      x.status = 503;
      return x;
    }
    return std::nullopt;
  });
  ASSERT_OK(Push(*src_, Url(reg.host()), {kRunName}, Opts()));
  EXPECT_EQ(failures.load(), 2);
}

TEST_F(RemoteTest, ServerErrorMidPushFailsClearlyAndARerunResumes) {
  FakeRegistry reg;
  std::atomic<int> puts{0};
  reg.SetIntercept([&](const HttpReq& r) -> std::optional<HttpReply> {
    // Every upload after the third fails for good.
    if (r.method == "PUT" && r.path.find("/blobs/uploads/") != std::string::npos && ++puts > 3) {
      HttpReply x;
      x.status = 500;
      x.body = "{\"errors\":[{\"code\":\"UNKNOWN\"}]}";
      return x;
    }
    return std::nullopt;
  });
  auto o = Opts();
  o.push_jobs = 1;
  auto r = Push(*src_, Url(reg.host()), {kRunName}, o);
  ASSERT_FALSE(r.ok());
  const std::string& msg = r.status().message();
  EXPECT_NE(msg.find("incomplete"), std::string::npos) << msg;
  EXPECT_NE(msg.find("no manifest or tag was written"), std::string::npos) << msg;
  EXPECT_NE(msg.find("again to resume"), std::string::npos) << msg;
  EXPECT_NE(msg.find("HTTP 500"), std::string::npos) << msg;
  EXPECT_FALSE(reg.HasTag("BenchmarkRun.sol-trace-gqa-paged-decode-h32-kv4-d128-ps1-27ef153a"));
  size_t uploaded = reg.blob_count();
  EXPECT_EQ(uploaded, 3u);

  reg.SetIntercept(nullptr);
  auto again = Push(*src_, Url(reg.host()), {kRunName}, o);
  ASSERT_OK(again);
  EXPECT_TRUE(reg.HasTag(again->refs[0].tag));
  // The blobs that made it the first time were not sent again.
  EXPECT_EQ(again->refs[0].sent + 1, again->refs[0].objects + 1 - (uploaded - 1));
  EXPECT_GE(again->refs[0].skipped, uploaded - 1);
}

TEST_F(RemoteTest, ManifestMediaTypeLiesAreRefused) {
  FakeRegistry reg;
  auto pushed = Push(*src_, Url(reg.host()), {kRunName}, Opts());
  ASSERT_OK(pushed);
  std::string tag = pushed->refs[0].tag;
  std::string body = *reg.Manifest(tag);
  // 1. The header claims an index.
  Answer(reg, "GET", "/manifests/" + tag,
         ManifestReply(body, {{"Content-Type", "application/vnd.oci.image.index.v1+json"}}));
  auto r = Pull(*dst_, Url(reg.host()), {tag}, Opts());
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(r.status().IsInvalidInput()) << r.status().ToString();
  EXPECT_NE(r.status().message().find("index"), std::string::npos);
  // 2. The header says OCI manifest; the body says Docker schema 2.
  std::string docker = body;
  auto at = docker.find("application/vnd.oci.image.manifest.v1+json");
  docker.replace(at, std::strlen("application/vnd.oci.image.manifest.v1+json"),
                 "application/vnd.docker.distribution.manifest.v2+json");
  reg.PutManifestDirect("liar", docker, "application/vnd.oci.image.manifest.v1+json");
  reg.SetIntercept(nullptr);
  r = Pull(*dst_, Url(reg.host()), {"liar"}, Opts());
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("mediaType field"), std::string::npos) << r.status().ToString();
  EXPECT_EQ(CountObjects(*dst_), 0u);
}

TEST_F(RemoteTest, DigestHeaderThatDisagreesWithTheBodyIsRefused) {
  FakeRegistry reg;
  auto pushed = Push(*src_, Url(reg.host()), {kRunName}, Opts());
  ASSERT_OK(pushed);
  std::string tag = pushed->refs[0].tag;
  std::string body = *reg.Manifest(tag);
  Answer(reg, "GET", "/manifests/" + tag,
         ManifestReply(body, {{"Content-Type", "application/vnd.oci.image.manifest.v1+json"},
                              {"Docker-Content-Digest", "sha256:" + std::string(64, '0')}}));
  auto r = Pull(*dst_, Url(reg.host()), {tag}, Opts());
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(r.status().IsCorruption()) << r.status().ToString();
  EXPECT_EQ(CountObjects(*dst_), 0u);
}

TEST_F(RemoteTest, TagMovingDuringPullKeepsTheFirstManifestAndSaysSo) {
  FakeRegistry reg;
  auto first = Push(*src_, Url(reg.host()), {kRunName}, Opts());
  ASSERT_OK(first);
  std::string tag = first->refs[0].tag;
  // As soon as the manifest has been read, someone re-tags it.
  std::string other = "sha256:" + std::string(64, 'e');
  Answer(reg, "HEAD", "/manifests/" + tag,
         ManifestReply("", {{"Docker-Content-Digest", other},
                            {"Content-Type", "application/vnd.oci.image.manifest.v1+json"}}));
  auto r = Pull(*dst_, Url(reg.host()), {tag}, Opts());
  ASSERT_OK(r);
  ASSERT_EQ(r->refs[0].warnings.size(), 1u);
  EXPECT_NE(r->refs[0].warnings[0].find("moved"), std::string::npos);
  EXPECT_EQ(r->refs[0].manifest, first->refs[0].manifest);
  auto v = dst_->Verify(run_);
  ASSERT_OK(v);
  EXPECT_FALSE(v->HasFaults());
}

TEST_F(RemoteTest, TitlesThatEscapeADirectoryAreRefused) {
  for (const char* bad : {"../../etc/passwd", "/etc/passwd", "a/../../b", "a\\..\\b", "", "./x", "a//b", "x\n"}) {
    EXPECT_FALSE(IsSafeTitle(bad)) << bad;
  }
  EXPECT_TRUE(IsSafeTitle("BenchmarkRun-abc.json"));
  EXPECT_TRUE(IsSafeTitle("logs/run.txt"));

  FakeRegistry reg;
  auto pushed = Push(*src_, Url(reg.host()), {kRunName}, Opts());
  ASSERT_OK(pushed);
  std::string body = *reg.Manifest(pushed->refs[0].tag);
  auto at = body.find("\"org.opencontainers.image.title\":\"");
  ASSERT_NE(at, std::string::npos);
  at += std::strlen("\"org.opencontainers.image.title\":\"");
  body.replace(at, body.find('"', at) - at, "../../../../tmp/evil");
  reg.PutManifestDirect("evil", body, "application/vnd.oci.image.manifest.v1+json");
  auto r = Pull(*dst_, Url(reg.host()), {"evil"}, Opts());
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("safe relative file name"), std::string::npos) << r.status().ToString();
  EXPECT_EQ(CountObjects(*dst_), 0u);

  // A layout only ever gets files named by digests.
  TempDir lay;
  auto url = ParseRemoteUrl("oci-layout:" + lay.path(), false);
  ASSERT_OK(url);
  ASSERT_OK(Push(*src_, *url, {kRunName}, Opts()));
  for (const auto& e : std::filesystem::recursive_directory_iterator(lay.path())) {
    std::string rel = e.path().string().substr(lay.path().size() + 1);
    bool ok = rel == "oci-layout" || rel == "index.json" || rel == "blobs" || rel == "blobs/sha256" ||
              (rel.rfind("blobs/sha256/", 0) == 0 && Digest::IsValid("sha256:" + rel.substr(13)));
    EXPECT_TRUE(ok) << rel;
  }
}

TEST_F(RemoteTest, CredentialsNeverFollowARedirectToAnotherHost) {
  FakeRegistry reg;
  std::string basic = "Basic dXNlcjpwYXNz";  // user:pass
  reg.RequireAuth(basic, "Basic realm=\"fake\"");
  auto o = Opts();
  o.credentials = Credentials{"user", "pass"};
  ASSERT_OK(Push(*src_, Url(reg.host()), {blob_.str()}, o));
  auto good = src_->Read(blob_);
  ASSERT_OK(good);

  // Blob downloads are redirected to a storage host on another port.
  std::mutex mu;
  std::vector<std::string> seen_auth;
  test::HttpServer storage([&](const HttpReq& r) {
    std::lock_guard<std::mutex> l(mu);
    seen_auth.push_back(r.Header("authorization"));
    HttpReply x;
    x.body = *good;
    return x;
  });
  reg.SetIntercept([&](const HttpReq& r) -> std::optional<HttpReply> {
    if (r.method == "GET" && r.path.find("/blobs/sha256:") != std::string::npos && r.Header("authorization") == basic) {
      HttpReply x;
      x.status = 307;
      x.headers.emplace_back("Location", "http://" + storage.host() + "/storage/blob");
      return x;
    }
    return std::nullopt;
  });
  auto pulled = Pull(*dst_, Url(reg.host()), {blob_.str()}, o);
  ASSERT_OK(pulled);
  ASSERT_FALSE(seen_auth.empty());
  for (const auto& a : seen_auth) EXPECT_EQ(a, "");
  ExpectSameObjects(*src_, *dst_, {blob_});

  // An upload Location that names another host gets no credentials either.
  seen_auth.clear();
  test::HttpServer sink([&](const HttpReq& r) {
    std::lock_guard<std::mutex> l(mu);
    seen_auth.push_back(r.Header("authorization"));
    HttpReply x;
    x.status = 201;
    return x;
  });
  reg.SetIntercept([&](const HttpReq& r) -> std::optional<HttpReply> {
    if (r.method == "POST" && r.Header("authorization") == basic) {
      HttpReply x;
      x.status = 202;
      x.headers.emplace_back("Location", "http://" + sink.host() + "/upload/1");
      return x;
    }
    return std::nullopt;
  });
  Store& s2 = NewStore();
  auto b = s2.NewBatch();
  ASSERT_OK(b);
  auto fresh = (*b)->PutBlob("a blob the registry has not seen", "text/plain");
  ASSERT_OK(fresh);
  ASSERT_OK((*b)->Commit());
  (void)Push(s2, Url(reg.host()), {fresh->digest.str()}, o);
  ASSERT_FALSE(seen_auth.empty());
  for (const auto& a : seen_auth) EXPECT_EQ(a, "");
}

TEST_F(RemoteTest, BearerTokenHandshake) {
  FakeRegistry reg;
  reg.RequireAuth("Bearer tok-123", "Bearer realm=\"http://" + reg.host() +
                                         "/token\",service=\"fake\",scope=\"repository:ki/test:pull\"");
  reg.ServeToken("Basic dXNlcjpwYXNz", "tok-123");
  auto o = Opts();
  o.credentials = Credentials{"user", "pass"};
  ASSERT_OK(Push(*src_, Url(reg.host()), {kRunName}, o));
  ASSERT_OK(Pull(*dst_, Url(reg.host()), {kRunName}, o));
  int push_tokens = 0, pull_tokens = 0;
  for (const auto& r : reg.log()) {
    if (r.path == "/token") {
      EXPECT_NE(r.query.find("service=fake"), std::string::npos);
      push_tokens += r.query.find("scope=repository%3Aki%2Ftest%3Apull%2Cpush") != std::string::npos;
      pull_tokens += r.query.ends_with("scope=repository%3Aki%2Ftest%3Apull");
    } else {
      // The registry itself only ever sees the token, never the password.
      EXPECT_NE(r.Header("authorization"), "Basic dXNlcjpwYXNz");
    }
  }
  EXPECT_EQ(push_tokens, 1);
  EXPECT_EQ(pull_tokens, 1);
  // Without credentials the token endpoint refuses, and the error says how to log in.
  Store& s3 = NewStore();
  auto r = Pull(s3, Url(reg.host()), {kRunName}, Opts());
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("401"), std::string::npos) << r.status().ToString();
}

// ------------------------------------------------------------ layouts

TEST_F(RemoteTest, LayoutRoundTripAndCorruptBlobInLayout) {
  TempDir lay;
  auto url = ParseRemoteUrl("oci-layout:" + lay.path(), false);
  ASSERT_OK(url);
  ASSERT_OK(Push(*src_, *url, {kRunName, blob_.str()}, Opts()));
  EXPECT_TRUE(std::filesystem::exists(lay.Join("oci-layout")));
  EXPECT_TRUE(std::filesystem::exists(lay.Join("index.json")));
  ASSERT_OK(Pull(*dst_, *url, {kRunName, blob_.str()}, Opts()));
  ExpectSameObjects(*src_, *dst_, AllObjects(*src_));

  // Flip a byte of a blob in the layout: a pull into a fresh store refuses it.
  std::string path = lay.Join("blobs/sha256/" + blob_.hex());
  std::string bytes = test::ReadFileOrDie(path);
  bytes[100] ^= 1;
  std::filesystem::permissions(path, std::filesystem::perms::owner_all);
  test::WriteFileOrDie(path, bytes);
  Store& s2 = NewStore();
  auto r = Pull(s2, *url, {blob_.str()}, Opts());
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(r.status().IsCorruption());
  EXPECT_EQ(CountObjects(s2), 0u);
}

// A layout's index.json or a remote's manifest whose fields have other types
// than the image-spec's (a number where a string belongs) used to reach
// nlohmann's value(), which throws: on a pull worker thread that ended the
// process (SIGABRT), on the main thread it ended the command with a raw
// library message (exit 5). Now each is invalid input naming the field.
TEST_F(RemoteTest, PullOfRemoteJsonWithUnexpectedTypesIsInvalidInputNotACrash) {
  TempDir lay;
  auto url = ParseRemoteUrl("oci-layout:" + lay.path(), false);
  ASSERT_OK(url);
  ASSERT_OK(Push(*src_, *url, {kRunName, blob_.str()}, Opts()));
  const std::string index_path = lay.Join("index.json");
  const std::string index = test::ReadFileOrDie(index_path);
  auto rewrite = [&](const std::function<void(Json&)>& change) {
    Json j = Json::parse(index);
    change(j);
    std::filesystem::permissions(index_path, std::filesystem::perms::owner_all);
    test::WriteFileOrDie(index_path, j.dump());
  };
  std::string dst = dir_.Join("dst");
  std::string pull = "--store " + dst + " pull oci-layout:" + lay.path() + " ";

  // 1. Every entry's mediaType a number.
  rewrite([](Json& j) {
    for (Json& m : j["manifests"]) m["mediaType"] = 5;
  });
  auto r = Pull(*dst_, *url, {kRunName, blob_.str()}, Opts());
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(r.status().IsInvalidInput()) << r.status().ToString();
  EXPECT_NE(r.status().message().find("index.json: manifests[0]: `mediaType` is a number, not a string"),
            std::string::npos)
      << r.status().ToString();
  // Two refs: two workers; one ref: the main thread. Both exit 4.
  for (std::string refs : {std::string(kRunName) + " " + blob_.str(), blob_.str()}) {
    auto k = test::RunKi(pull + refs);
    EXPECT_EQ(k.exit_code, 4) << k.err;
    EXPECT_EQ(k.err.find("json.exception"), std::string::npos) << k.err;
    EXPECT_NE(k.err.find("`mediaType` is a number"), std::string::npos) << k.err;
  }
  // 2. schemaVersion "2" (a string) is not 2.
  rewrite([](Json& j) { j["schemaVersion"] = "2"; });
  r = Pull(*dst_, *url, {kRunName}, Opts());
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(r.status().IsInvalidInput()) << r.status().ToString();
  // 3. A ref.name annotation that is not a string, a digest that is not one.
  rewrite([](Json& j) { j["manifests"][1]["annotations"]["org.opencontainers.image.ref.name"] = 7; });
  r = Pull(*dst_, *url, {kRunName}, Opts());
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("manifests[1].annotations: `org.opencontainers.image.ref.name` is a number"),
            std::string::npos)
      << r.status().ToString();
  rewrite([](Json& j) { j["manifests"][0]["digest"] = Json::array(); });
  r = Pull(*dst_, *url, {kRunName}, Opts());
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(r.status().IsInvalidInput()) << r.status().ToString();
  EXPECT_EQ(CountObjects(*dst_), 0u);
}

TEST_F(RemoteTest, BundleIndexAndLayerFieldsOfOtherTypesAreRefusedByName) {
  FakeRegistry reg;
  auto o = Opts();
  o.bundle_tag = "everything";
  ASSERT_OK(Push(*src_, Url(reg.host()), {kRunName}, o));
  Json index = Json::parse(*reg.Manifest("everything"));
  for (auto [field, value] : {std::pair<std::string, Json>{"artifactType", 5}, {"mediaType", true},
                              {"digest", Json::object()}, {"size", "12"}}) {
    Json bad = index;
    bad["manifests"][0][field] = value;
    reg.PutManifestDirect("bad-" + field, bad.dump(), "application/vnd.oci.image.index.v1+json");
    auto r = Pull(*dst_, Url(reg.host()), {"bad-" + field}, Opts());
    ASSERT_FALSE(r.ok()) << field;
    EXPECT_TRUE(r.status().IsInvalidInput()) << r.status().ToString();
    EXPECT_NE(r.status().message().find("remote bundle index: manifests[0]: `" + field + "`"), std::string::npos)
        << r.status().ToString();
  }
  // A layer annotation of another type is refused, not read as absent.
  FakeRegistry reg2;
  ASSERT_OK(Push(*src_, Url(reg2.host()), {kRunName}, Opts()));
  std::string tag = SanitizeTag(kRunName);
  Json m = Json::parse(*reg2.Manifest(tag));
  m["layers"][0]["annotations"][std::string(kAnnRole)] = 5;
  reg2.PutManifestDirect("bad-role", m.dump(), "application/vnd.oci.image.manifest.v1+json");
  auto r = Pull(*dst_, Url(reg2.host()), {"bad-role"}, Opts());
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("layer 0: annotations: `dev.kernelindex.ki.role` is a number"), std::string::npos)
      << r.status().ToString();
  EXPECT_EQ(CountObjects(*dst_), 0u);
}

// A pulled attestation used to be stored when its statement named its
// subject, whatever else it held: one with a `_type` of 5 made `ki verify`
// and `ki audit` of the store fail (exit 5, a raw library message), and
// one whose signature does not verify was filed though `ki sign
// --envelope` refuses it. Pull now runs that check: faulty envelopes are
// left out with a warning, the rest of the pull goes on.
TEST_F(RemoteTest, PulledAttestationsAreCheckedAsSignEnvelopeChecksThem) {
  SigningKey alice = SigningKey::Generate("alice");
  AttestationRequest req;
  req.subject = run_;
  req.predicate = PredicateKind::kReviewed;
  req.note = "fine";
  auto good = BuildAttestation(*src_, alice, req);
  ASSERT_OK(good);
  // The signature altered (the statement names alice's key, so the
  // signature is checked, and fails, without any key of ours).
  auto env = ParseEnvelope(*good);
  ASSERT_OK(env);
  env->signatures[0].sig[10] ^= 1;
  const std::string bad_signature = SerializeEnvelope(*env);
  // A statement whose `_type` is a number, validly signed.
  Json statement = {{"_type", 5},
                    {"subject", Json::array({{{"digest", {{"sha256", run_.hex()}}}}})},
                    {"predicateType", "https://example.com/other/v1"},
                    {"predicate", Json::object()}};
  DsseEnvelope typed;
  typed.payload_type = std::string(kInTotoPayloadType);
  typed.payload = *Canonicalize(statement);
  typed.signatures.push_back({alice.public_key().KeyId(), alice.Sign(PreAuthEncoding(typed.payload_type, typed.payload))});
  const std::string bad_type = SerializeEnvelope(typed);
  std::vector<Digest> filed;
  auto b = src_->NewBatch();
  ASSERT_OK(b);
  for (const std::string* e : std::initializer_list<const std::string*>{&*good, &bad_signature, &bad_type}) {
    auto put = (*b)->PutBlob(*e, kDsseMediaType);
    ASSERT_OK(put);
    filed.push_back(put->digest);
    ASSERT_OK((*b)->Put(kAttestationTable, std::string(run_.raw()) + std::string(put->digest.raw()), ""));
  }
  ASSERT_OK((*b)->Commit());

  TempDir lay;
  auto url = ParseRemoteUrl("oci-layout:" + lay.path(), false);
  ASSERT_OK(url);
  ASSERT_OK(Push(*src_, *url, {kRunName}, Opts()));
  auto pulled = Pull(*dst_, *url, {kRunName}, Opts());
  ASSERT_OK(pulled);
  ASSERT_EQ(pulled->refs.size(), 1u);
  EXPECT_EQ(pulled->refs[0].attestations, 2u);  // the fixture's and alice's sound one
  const auto& warnings = pulled->refs[0].warnings;
  ASSERT_EQ(warnings.size(), 2u);
  std::string all = warnings[0] + "\n" + warnings[1];
  EXPECT_NE(all.find("attestation " + filed[1].str() + " of " + run_.str() + " not stored: signature by"),
            std::string::npos)
      << all;
  EXPECT_NE(all.find("attestation " + filed[2].str() + " of " + run_.str() + " not stored: statement:"),
            std::string::npos)
      << all;
  auto listed = ListAttestations(*dst_, run_);
  ASSERT_OK(listed);
  std::set<Digest> have(listed->begin(), listed->end());
  EXPECT_EQ(have, (std::set<Digest>{env_digest_, filed[0]}));
  for (size_t i : {1, 2}) {
    auto info = dst_->Stat(filed[i]);
    ASSERT_OK(info);
    EXPECT_FALSE(info->has_value()) << "faulty envelope " << i << " was stored";
  }
  // The store stays auditable: no fault, no exception.
  auto verified = VerifyAttestations(*dst_, run_, KeySources{});
  ASSERT_OK(verified);
  for (const auto& r : *verified) EXPECT_FALSE(r.fault()) << r.problem();
  auto audit = AuditAttestations(*dst_, KeySources{});
  ASSERT_OK(audit);
  EXPECT_EQ(audit->faults(), 0u);
}

// remote.h: Push writes remote.state when the store is writable; from a
// store opened read-only it pushes anyway and says that it could not
// record what the registry holds (`ki push` opens such a store read-only:
// tests/cli/store_badinput.sh).
TEST_F(RemoteTest, PushFromAReadOnlyStoreWorksAndWarnsThatRemoteStateWasNotWritten) {
  std::string path = src_->path();
  src_.reset();
  auto ro = Store::Open(path, OpenMode::kReadOnly);
  ASSERT_OK(ro);
  FakeRegistry reg;
  auto pushed = Push(**ro, Url(reg.host()), {kRunName}, Opts());
  ASSERT_OK(pushed);
  ASSERT_FALSE(pushed->warnings.empty());
  EXPECT_NE(pushed->warnings[0].find("could not record what oci://" + reg.host() + "/ki/test holds"), std::string::npos)
      << pushed->warnings[0];
  ASSERT_OK(Pull(*dst_, Url(reg.host()), {kRunName}, Opts()));
  auto run = dst_->Stat(run_);
  ASSERT_OK(run);
  EXPECT_TRUE(run->has_value());
  ExpectSameObjects(**ro, *dst_, AllObjects(*dst_));
}

// `ki add --blob --media-type "text/plain; charset=utf-8"` stored a blob
// that push carried verbatim (in the layer's ki annotation) and pull then
// refused ("layer 0: unusable media type"): parameters are part of a media
// type (RFC 6838, RFC 9110). Pull now takes exactly what `ki add` takes,
// and `ki add` refuses what could never come back.
TEST_F(RemoteTest, BlobMediaTypesWithParametersRoundTrip) {
  const std::vector<std::string> types = {"text/plain; charset=utf-8", "text/plain;charset=\"utf-8\"",
                                          "application/vnd.example+json ; version=2;q=\"a \\\"b\\\"\""};
  std::vector<AddInput> inputs;
  for (size_t i = 0; i < types.size(); ++i) {
    AddInput in;
    // Appended, not `"l" + std::to_string(i)`: GCC 12 warns falsely (-Wrestrict) on that.
    in.source = std::string("l").append(std::to_string(i)).append(".txt");
    in.bytes = std::string("log line ").append(std::to_string(i)).append("\n");
    in.type = InputType::kBlob;
    in.media_type = types[i];
    inputs.push_back(in);
  }
  // A blob an older ki stored with a media type that is none (no check
  // then): pushed as application/octet-stream rather than refused by pulls.
  auto b = src_->NewBatch();
  ASSERT_OK(b);
  auto legacy = (*b)->PutBlob("legacy bytes", "not a media type");
  ASSERT_OK(legacy);
  ASSERT_OK((*b)->Commit());
  auto added = AddInputs(*src_, inputs);
  ASSERT_OK(added);
  std::vector<std::string> refs;
  for (const auto& a : *added) refs.push_back(a.digest.str());
  refs.push_back(legacy->digest.str());

  TempDir lay;
  auto layout = ParseRemoteUrl("oci-layout:" + lay.path(), false);
  ASSERT_OK(layout);
  FakeRegistry reg;
  for (const RemoteUrl& url : {*layout, Url(reg.host())}) {
    SCOPED_TRACE(url.str());
    ASSERT_OK(Push(*src_, url, refs, Opts()));
    Store& dst = NewStore();
    ASSERT_OK(Pull(dst, url, refs, Opts()));
    for (size_t i = 0; i < types.size(); ++i) {
      auto info = dst.Stat((*added)[i].digest);
      ASSERT_OK(info);
      ASSERT_TRUE(info->has_value());
      EXPECT_EQ((*info)->media_type, types[i]);
    }
    auto info = dst.Stat(legacy->digest);
    ASSERT_OK(info);
    ASSERT_TRUE(info->has_value());
    EXPECT_EQ((*info)->media_type, "application/octet-stream");
  }
}

TEST(MediaTypeTest, AddRefusesWhatPullWouldRefuse) {
  for (std::string ok : std::initializer_list<std::string>{"text/plain", "application/vnd.kernelindex.manifest+json", "text/plain; charset=utf-8",
                         "text/plain;charset=utf-8", "Text/Plain ;\tA=b; c=\"x y\\\"z\"", "text/plain;",
                         "application/x-npy", "a/b"}) {
    EXPECT_TRUE(IsValidMediaType(ok)) << ok;
  }
  for (std::string bad : std::initializer_list<std::string>{"", "text", "text/", "/plain", "text/plain/x", "text/plain; charset", "text/plain; =x",
                          "text/plain charset=utf-8", "text/pl ain", "text/plain; a=\"open", "text/plain ",
                          "text/plain\n", "t\xc3\xa9xt/plain", "text/plain; a=b c", "text/plain; a=\"\x01\"",
                          "-text/plain", std::string(250, 'a') + "/plain"}) {
    EXPECT_FALSE(IsValidMediaType(bad)) << bad;
  }
  TempDir dir;
  auto s = Store::Init(dir.path());
  ASSERT_OK(s);
  AddInput good, bad;
  good.source = "a.txt";
  good.bytes = "a";
  good.type = InputType::kBlob;
  bad = good;
  bad.source = "b.txt";
  bad.media_type = "text/plain charset=utf-8";
  auto r = AddInputs(**s, {good, bad});
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(r.status().IsInvalidInput());
  EXPECT_NE(r.status().message().find("b.txt: media type 'text/plain charset=utf-8' is not"), std::string::npos)
      << r.status().ToString();
  EXPECT_EQ(CountObjects(**s), 0u);
}

// RunParallel is the last line of defence: an exception out of a worker
// fails the run with a Status instead of calling std::terminate.
namespace {
class NoConn final : public remote::Conn {
 public:
  Result<bool> HasBlob(const Digest&, uint64_t) override { return false; }
  Status PutBlob(const Digest&, std::string_view) override { return Status::OK(); }
  Result<std::string> GetBlob(const Digest&, uint64_t) override { return Status::NotFound("none"); }
  Status PutBlobFrom(const Digest&, uint64_t, remote::BlobSource&) override { return Status::OK(); }
  Status GetBlobTo(const Digest&, uint64_t, remote::BlobSink&) override { return Status::NotFound("none"); }
  Result<remote::FetchedManifest> GetManifest(std::string_view) override { return Status::NotFound("none"); }
  Result<std::optional<Digest>> ResolveTag(std::string_view) override { return std::optional<Digest>(); }
  Status PutManifest(std::string_view, std::string_view, std::string_view, bool*) override { return Status::OK(); }
  Result<std::optional<std::string>> Referrers(const Digest&) override { return std::optional<std::string>(); }
};
class NoTarget final : public remote::Target {
 public:
  explicit NoTarget(bool throw_on_connect) : throw_(throw_on_connect) {}
  Result<std::unique_ptr<remote::Conn>> Connect() override {
    if (throw_) throw std::runtime_error("connect threw");
    return std::unique_ptr<remote::Conn>(new NoConn);
  }
  uint64_t requests() const override { return 0; }
  std::string describe() const override { return "none"; }
  Status Finish() override { return Status::OK(); }

 private:
  bool throw_;
};
}  // namespace

TEST(RunParallelTest, AWorkerThatThrowsFailsTheRunInsteadOfTheProcess) {
  NoTarget target(false);
  std::atomic<int> ran{0};
  Status st = remote::RunParallel(target, 4, 200, [&](remote::Conn&, size_t i) -> Status {
    ran++;
    if (i == 7) {
      const Json j = {{"mediaType", 5}};
      return Status::NotFound(j.value("mediaType", std::string()));  // throws type_error 302
    }
    return Status::OK();
  });
  ASSERT_FALSE(st.ok());
  EXPECT_TRUE(st.IsIOError()) << st.ToString();
  EXPECT_NE(st.message().find("internal error in a transfer worker"), std::string::npos) << st.ToString();
  EXPECT_LE(ran.load(), 200);
  NoTarget throwing(true);
  st = remote::RunParallel(throwing, 3, 10, [&](remote::Conn&, size_t) { return Status::OK(); });
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("connect threw"), std::string::npos) << st.ToString();
}

// ------------------------------------------------------------ config

TEST(RemoteConfigTest, UrlsTagsAndCredentials) {
  auto u = ParseRemoteUrl("oci://registry.example.com:5000/team/evidence", false);
  ASSERT_OK(u);
  EXPECT_EQ(u->host, "registry.example.com:5000");
  EXPECT_EQ(u->repository, "team/evidence");
  EXPECT_EQ(u->base(), "https://registry.example.com:5000");
  EXPECT_FALSE(ParseRemoteUrl("oci://registry.example.com/team", true).ok());  // http off loopback
  EXPECT_TRUE(ParseRemoteUrl("oci://127.0.0.1:5000/team", true).ok());
  EXPECT_TRUE(ParseRemoteUrl("oci://localhost/team", true).ok());
  EXPECT_FALSE(ParseRemoteUrl("oci://host/Team", false).ok());  // repository names are lower-case
  EXPECT_FALSE(ParseRemoteUrl("https://host/team", false).ok());
  EXPECT_FALSE(ParseRemoteUrl("oci://user@host/team", false).ok());
  EXPECT_FALSE(IsLoopbackHost("127.0.0.1.evil.com"));

  EXPECT_EQ(SanitizeTag("BenchmarkRun/a b:c"), "BenchmarkRun.a_b_c");
  EXPECT_EQ(SanitizeTag(".hidden"), "_hidden");
  std::string long_name = "BenchmarkRun/" + std::string(300, 'x');
  std::string t = SanitizeTag(long_name);
  EXPECT_EQ(t.size(), 128u);
  EXPECT_TRUE(IsValidTag(t));
  EXPECT_NE(t, SanitizeTag(long_name + "y"));

  auto c = CredentialsFromDockerConfig(R"({"auths":{"127.0.0.1:5000":{"auth":"dXNlcjpwYXNz"}}})", "127.0.0.1:5000");
  ASSERT_OK(c);
  EXPECT_EQ(c->username, "user");
  EXPECT_EQ(c->password, "pass");
  c = CredentialsFromDockerConfig(R"({"auths":{"https://ghcr.io":{"username":"u","password":"p"}}})", "ghcr.io");
  ASSERT_OK(c);
  EXPECT_EQ(c->username, "u");
  c = CredentialsFromDockerConfig(R"({"auths":{"other":{"auth":"dXNlcjpwYXNz"}}})", "ghcr.io");
  ASSERT_OK(c);
  EXPECT_TRUE(c->empty());
  EXPECT_FALSE(CredentialsFromDockerConfig(R"({"auths":{"h":{"auth":"!!"}}})", "h").ok());
}

TEST(RemoteConfigTest, RemotesAreKeptInTheStore) {
  TempDir dir;
  auto opened = Store::Init(dir.path());
  ASSERT_OK(opened);
  Store& s = **opened;
  ASSERT_OK(AddRemote(s, {"origin", "oci://127.0.0.1:5000/ki/x", true}));
  EXPECT_FALSE(AddRemote(s, {"origin", "oci://127.0.0.1:5000/ki/x", true}).ok());
  EXPECT_FALSE(AddRemote(s, {"bad/name", "oci://127.0.0.1:5000/ki/x", true}).ok());
  ASSERT_OK(AddRemote(s, {"usb", "oci-layout:/media/usb/ki", false}));
  auto list = ListRemotes(s);
  ASSERT_OK(list);
  ASSERT_EQ(list->size(), 2u);
  auto u = LookupRemote(s, "origin", false);
  ASSERT_OK(u);
  EXPECT_TRUE(u->insecure);
  ASSERT_OK(RemoveRemote(s, "origin"));
  EXPECT_TRUE(RemoveRemote(s, "origin").IsNotFound());
  EXPECT_TRUE(LookupRemote(s, "origin", false).status().IsNotFound());
}

}  // namespace
}  // namespace ki
