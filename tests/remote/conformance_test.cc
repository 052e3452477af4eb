// One suite over both kinds of remote (issue 19): what a push writes a
// pull gets back byte for byte, by every name ki prints, whether the remote
// is a registry (the in-process FakeRegistry, over HTTP) or an OCI image
// layout directory; a bundle whole and one root out of it; the listing;
// and a copy registry -> layout -> registry that keeps every digest.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "ki/catalog.h"
#include "ki/dictionary.h"
#include "ki/ingest.h"
#include "ki/remote.h"
#include "ki/sign.h"
#include "remote/fake_registry.h"
#include "testutil/testutil.h"

namespace ki {
namespace {

using test::FakeRegistry;
using test::TempDir;

enum class Kind2 { kRegistry, kLayout };

// A remote of either kind, alive as long as the object.
class AnyRemote {
 public:
  AnyRemote(Kind2 kind, const TempDir& dir, const std::string& name) : kind_(kind) {
    if (kind == Kind2::kRegistry) {
      reg_ = std::make_unique<FakeRegistry>();
      auto u = ParseRemoteUrl("oci://" + reg_->host() + "/ki/" + name, true);
      EXPECT_OK(u);
      url_ = *u;
    } else {
      auto u = ParseRemoteUrl("oci-layout:" + dir.Join(name), false);
      EXPECT_OK(u);
      url_ = *u;
    }
  }
  const RemoteUrl& url() const { return url_; }

 private:
  Kind2 kind_;
  std::unique_ptr<FakeRegistry> reg_;
  RemoteUrl url_;
};

class ConformanceTest : public ::testing::TestWithParam<Kind2> {
 protected:
  void SetUp() override {
    src_ = NewStore();
    AddInput seed;
    seed.source = "seed.json";
    seed.bytes = test::ReadFileOrDie(test::DataPath(
        "kernelindex/fixtures/gpt-o3_cuda_5548d0.gqa_paged_decode_h32_kv4_d128_ps1.manifest.json"));
    ASSERT_OK(AddInputs(*src_, {seed}));
    const std::string slice = test::ReadFileOrDie(test::DataPath("kernelindex-export/catalog-2026-08-16-0022af0b.slice.jsonl"));
    ASSERT_OK(catalog::ImportKernelIndex(*src_, slice, "slice.jsonl"));
    auto run = src_->Resolve(kRun);
    ASSERT_OK(run);
    run_ = *run;
  }

  TransferOptions Opts() {
    TransferOptions o;
    o.credentials = Credentials{};
    o.backoff_initial_ms = 1;
    o.max_attempts = 3;
    return o;
  }

  Store* NewStore() {
    auto s = Store::Init(dir_.Join("store" + std::to_string(stores_.size())));
    EXPECT_OK(s);
    stores_.push_back(std::move(s).value());
    return stores_.back().get();
  }

  std::vector<Digest> Runs(Store& s) {
    std::vector<Digest> out;
    EXPECT_OK(s.ForEachObject([&](const ObjectInfo& i) {
      if (i.kind == Kind::kBenchmarkRun) out.push_back(i.digest);
      return true;
    }));
    return out;
  }

  // Every object of `from`'s closure of `root` is in `to` with the same bytes.
  void ExpectSameClosure(Store& from, Store& to, const Digest& root) {
    auto c = from.Read(root);
    ASSERT_OK(c);
    auto d = to.Read(root);
    ASSERT_OK(d);
    EXPECT_EQ(*c, *d);
  }

  static constexpr const char* kRun = "BenchmarkRun/sol-trace-gqa-paged-decode-h32-kv4-d128-ps1-27ef153a";
  TempDir dir_;
  std::vector<std::unique_ptr<Store>> stores_;
  Store* src_ = nullptr;
  Digest run_;
};

TEST_P(ConformanceTest, PullByEveryNameKiPrints) {
  AnyRemote remote(GetParam(), dir_, "names");
  ASSERT_OK(Push(*src_, remote.url(), {kRun}, Opts()));
  const std::string bare = std::string(kRun).substr(std::string("BenchmarkRun/").size());
  for (const std::string& name : {run_.str(), run_.str().substr(0, 11), run_.hex().substr(0, 8), std::string(kRun), bare}) {
    Store* dst = NewStore();
    auto pulled = Pull(*dst, remote.url(), {name}, Opts());
    ASSERT_OK(pulled);
    ASSERT_TRUE(pulled->refs[0].root) << name;
    EXPECT_EQ(*pulled->refs[0].root, run_) << name;
    auto back = dst->Resolve(kRun);
    ASSERT_OK(back);
    EXPECT_EQ(*back, run_);
  }
  Store* dst = NewStore();
  auto none = Pull(*dst, remote.url(), {"BenchmarkRun/no-such-run"}, Opts());
  EXPECT_TRUE(none.status().IsNotFound()) << none.status().ToString();
}

TEST_P(ConformanceTest, BundleWholeAndOneRootOutOfIt) {
  AnyRemote remote(GetParam(), dir_, "bundle");
  std::vector<std::string> refs;
  for (const Digest& d : Runs(*src_)) refs.push_back(d.str());
  ASSERT_GE(refs.size(), 2u);
  TransferOptions o = Opts();
  o.bundle_tag = "catalog";
  auto pushed = Push(*src_, remote.url(), refs, o);
  ASSERT_OK(pushed);
  ASSERT_TRUE(pushed->pack);
  // Unchanged: nothing is sent again.
  auto again = Push(*src_, remote.url(), refs, o);
  ASSERT_OK(again);
  EXPECT_EQ(again->blobs_sent, 0u);
  EXPECT_FALSE(again->pack->sent);

  Store* whole = NewStore();
  auto all = Pull(*whole, remote.url(), {"catalog"}, Opts());
  ASSERT_OK(all);
  EXPECT_EQ(all->packs_received, 1u);
  EXPECT_EQ(Runs(*whole).size(), refs.size());
  for (const Digest& d : Runs(*src_)) ExpectSameClosure(*src_, *whole, d);

  // One run out of the bundle: its closure, not the others.
  Digest other = Runs(*src_)[0] == run_ ? Runs(*src_)[1] : Runs(*src_)[0];
  Store* one = NewStore();
  auto single = Pull(*one, remote.url(), {other.str()}, Opts());
  ASSERT_OK(single);
  ASSERT_TRUE(single->refs[0].root);
  EXPECT_EQ(*single->refs[0].root, other);
  EXPECT_EQ(Runs(*one).size(), 1u);
  ExpectSameClosure(*src_, *one, other);
  auto verified = VerifyAttestations(*one, other, KeySources{});
  EXPECT_OK(verified);
}

TEST_P(ConformanceTest, ListingNamesRootsAndBundles) {
  AnyRemote remote(GetParam(), dir_, "listing");
  ASSERT_OK(Push(*src_, remote.url(), {kRun}, Opts()));
  std::vector<std::string> refs;
  for (const Digest& d : Runs(*src_)) refs.push_back(d.str());
  TransferOptions o = Opts();
  o.bundle_tag = "catalog";
  ASSERT_OK(Push(*src_, remote.url(), refs, o));
  auto listing = ListRemote(remote.url(), Opts());
  ASSERT_OK(listing);
  size_t own = 0, bundles = 0, inside = 0;
  for (const RemoteEntry& e : listing->entries) {
    if (e.bundle) {
      bundles++;
      EXPECT_EQ(e.tag, "catalog");
      EXPECT_EQ(e.roots, refs.size());
    } else if (e.in_bundle) {
      inside++;
    } else {
      own++;
      EXPECT_EQ(e.root, run_);
      EXPECT_EQ(e.name, kRun);
      EXPECT_FALSE(e.pushed_at.empty());
    }
  }
  EXPECT_EQ(own, 1u);
  EXPECT_EQ(bundles, 1u);
  EXPECT_EQ(inside, refs.size());
  EXPECT_TRUE(listing->unlisted.empty());
  // Bounded: the listing (2), one bundle's index, pack manifest and table (3), the tags.
  EXPECT_LE(listing->http_requests, 8u);
  auto amb = ResolveOnRemote(*listing, run_.hex().substr(0, 4), remote.url().str());
  EXPECT_TRUE(amb.ok() || amb.status().code() == Code::kAmbiguous);
}

TEST_P(ConformanceTest, CopyThroughTheOtherKindKeepsEveryDigest) {
  // this kind -> the other kind -> this kind again, through ki: the image
  // manifest and every object come out as they went in.
  const Kind2 other = GetParam() == Kind2::kRegistry ? Kind2::kLayout : Kind2::kRegistry;
  AnyRemote first(GetParam(), dir_, "first"), middle(other, dir_, "middle"), last(GetParam(), dir_, "last");
  auto p1 = Push(*src_, first.url(), {kRun}, Opts());
  ASSERT_OK(p1);
  Store* a = NewStore();
  ASSERT_OK(Pull(*a, first.url(), {kRun}, Opts()));
  auto p2 = Push(*a, middle.url(), {kRun}, Opts());
  ASSERT_OK(p2);
  Store* b = NewStore();
  ASSERT_OK(Pull(*b, middle.url(), {kRun}, Opts()));
  auto p3 = Push(*b, last.url(), {kRun}, Opts());
  ASSERT_OK(p3);
  EXPECT_EQ(p1->refs[0].manifest, p2->refs[0].manifest);
  EXPECT_EQ(p1->refs[0].manifest, p3->refs[0].manifest);
  EXPECT_EQ(p1->refs[0].objects, p3->refs[0].objects);
  Store* c = NewStore();
  ASSERT_OK(Pull(*c, last.url(), {run_.str()}, Opts()));
  std::vector<Digest> objs;
  ASSERT_OK(src_->ForEachObject([&](const ObjectInfo& i) {
    if (!IsDictionary(i)) objs.push_back(i.digest);  // the store's own: not carried
    return true;
  }));
  size_t same = 0;
  for (const Digest& d : objs) {
    auto x = c->Stat(d);
    ASSERT_OK(x);
    if (!*x) continue;
    auto l = src_->Read(d);
    auto r = c->Read(d);
    ASSERT_OK(l);
    ASSERT_OK(r);
    EXPECT_EQ(*l, *r) << d.str();
    same++;
  }
  EXPECT_EQ(same, p1->refs[0].objects);
}

INSTANTIATE_TEST_SUITE_P(BothTargets, ConformanceTest, ::testing::Values(Kind2::kRegistry, Kind2::kLayout),
                         [](const ::testing::TestParamInfo<Kind2>& i) {
                           return i.param == Kind2::kRegistry ? std::string("Registry") : std::string("Layout");
                         });

}  // namespace
}  // namespace ki
