// Bundles: parts, packs (used where they pay, taken from remote.state when
// unchanged, refused when they lie) and the limits on both.
#include "remote/remote_fixture.h"

namespace ki {
namespace {

using namespace remote_test;

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

}  // namespace
}  // namespace ki
