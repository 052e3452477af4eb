// ki push / pull through the in-process registry (fake_registry.h) and an
// OCI image layout: round trips that restore objects, names and
// attestations, remote.state, how uploads are made, pull by digest,
// documents, media types, a read-only store.
#include "remote/remote_fixture.h"

namespace ki {
namespace {

using namespace remote_test;

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

}  // namespace
}  // namespace ki
