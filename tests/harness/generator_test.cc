// The counter-based input generator: determinism, validity, never zeros.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <set>

#include "ki/counter_rng.h"
#include "ki/harness.h"
#include "testutil/testutil.h"

namespace ki::harness {
namespace {

Definition Def() {
  auto d = LoadDefinition(test::DataPath("flashinfer-bench/gqa_paged_decode_h32_kv4_d128_ps1.json"));
  EXPECT_TRUE(d.ok()) << d.status().ToString();
  return *d;
}

std::vector<int32_t> Ints(const TensorPlan& p) {
  std::vector<int32_t> v(p.bytes.size() / 4);
  std::memcpy(v.data(), p.bytes.data(), p.bytes.size());
  return v;
}

const TensorPlan& Find(const std::vector<TensorPlan>& plans, const std::string& name) {
  for (const auto& p : plans)
    if (p.name == name) return p;
  ADD_FAILURE() << "no plan " << name;
  return plans.front();
}

Workload Small(int64_t batch, int64_t pages, int64_t tokens) {
  Workload w = MakePagedDecodeWorkload("w-small", batch, 1, 0.088388);
  w.axes["num_pages"] = pages;
  w.axes["num_kv_indices"] = tokens;
  return w;
}

TEST(CounterRng, PinnedValues) {
  // Pinned so that a change to the generator (which would silently change
  // every recorded input) fails loudly.
  const uint64_t key = rng::StreamKey(0, 0);
  EXPECT_EQ(rng::Bits(key, 0), rng::Bits(key, 0));
  EXPECT_NE(rng::Bits(key, 0), rng::Bits(key, 1));
  EXPECT_EQ(rng::Mix64(0), 0u);
  EXPECT_EQ(rng::Mix64(1), 0x5692161d100b05e5ull);
  EXPECT_EQ(key, 0x8359fff62713a185ull);
  // Computed independently (Python, same definition).
  const uint16_t want[4] = {0x3f3c, 0x3f4c, 0x3eca, 0xbda2};
  for (int i = 0; i < 4; ++i) EXPECT_EQ(rng::Bf16Bits(rng::Bits(key, i)), want[i]) << i;
}

TEST(CounterRng, Bf16NeverZeroAndBounded) {
  const uint64_t key = rng::StreamKey(7, 3);
  for (uint64_t i = 0; i < 100000; ++i) {
    const float v = Bf16ToFloat(rng::Bf16Bits(rng::Bits(key, i)));
    ASSERT_NE(v, 0.f);
    ASSERT_GE(std::fabs(v), 0.0625f);
    ASSERT_LT(std::fabs(v), 1.0f);
  }
}

TEST(CounterRng, SignsAndExponentsBalanced) {
  const uint64_t key = rng::StreamKey(1, 1);
  int neg = 0;
  int exps[4] = {0, 0, 0, 0};
  const int n = 40000;
  for (int i = 0; i < n; ++i) {
    const uint16_t b = rng::Bf16Bits(rng::Bits(key, i));
    neg += b >> 15;
    ++exps[((b >> 7) & 0xff) - 123];
  }
  EXPECT_NEAR(neg, n / 2, n / 50);
  for (int e : exps) EXPECT_NEAR(e, n / 4, n / 50);
}

TEST(Generator, SameSeedSameBytes) {
  const Definition def = Def();
  const Workload w = Small(8, 300, 200);
  auto a = PlanInputs(def, w, {42, LengthSplit::kRandom});
  auto b = PlanInputs(def, w, {42, LengthSplit::kRandom});
  ASSERT_OK(a);
  ASSERT_OK(b);
  for (size_t i = 0; i < a->size(); ++i) {
    EXPECT_EQ(Materialize((*a)[i]).bytes, Materialize((*b)[i]).bytes) << (*a)[i].name;
  }
}

TEST(Generator, DifferentSeedOrWorkloadDifferentBytes) {
  const Definition def = Def();
  Workload w = Small(4, 100, 80);
  auto a = PlanInputs(def, w, {1, LengthSplit::kRandom});
  auto b = PlanInputs(def, w, {2, LengthSplit::kRandom});
  w.uuid = "another";
  auto c = PlanInputs(def, w, {1, LengthSplit::kRandom});
  ASSERT_OK(a);
  ASSERT_OK(b);
  ASSERT_OK(c);
  EXPECT_NE(Materialize(Find(*a, "q")).bytes, Materialize(Find(*b, "q")).bytes);
  EXPECT_NE(Materialize(Find(*a, "q")).bytes, Materialize(Find(*c, "q")).bytes);
  EXPECT_NE(Find(*a, "kv_indices").bytes, Find(*b, "kv_indices").bytes);
}

TEST(Generator, RandomTensorsAreNeverZero) {
  const Definition def = Def();
  auto plans = PlanInputs(def, Small(2, 64, 50), {3, LengthSplit::kRandom});
  ASSERT_OK(plans);
  for (const char* name : {"q", "k_cache", "v_cache"}) {
    const HostTensor t = Materialize(Find(*plans, name));
    ASSERT_EQ(t.bytes.size(), Find(*plans, name).nbytes());
    for (int64_t i = 0; i < t.numel(); ++i) ASSERT_NE(ElementAsDouble(t.dtype, t.bytes.data() + 2 * i), 0.0);
  }
}

TEST(Generator, IndexTensorsAreValid) {
  const Definition def = Def();
  for (uint64_t seed = 0; seed < 20; ++seed) {
    const int64_t batch = 1 + static_cast<int64_t>(seed % 9), pages = 800, tokens = 37 * static_cast<int64_t>(seed) + 3;
    auto plans = PlanInputs(def, Small(batch, pages, tokens), {seed, LengthSplit::kRandom});
    ASSERT_OK(plans);
    const auto ptr = Ints(Find(*plans, "kv_indptr"));
    const auto idx = Ints(Find(*plans, "kv_indices"));
    ASSERT_EQ(static_cast<int64_t>(ptr.size()), batch + 1);
    EXPECT_EQ(ptr.front(), 0);
    EXPECT_EQ(ptr.back(), tokens);
    EXPECT_TRUE(std::is_sorted(ptr.begin(), ptr.end()));
    ASSERT_EQ(static_cast<int64_t>(idx.size()), tokens);
    EXPECT_EQ(std::set<int32_t>(idx.begin(), idx.end()).size(), idx.size()) << "pages drawn twice";
    for (int32_t p : idx) {
      EXPECT_GE(p, 0);
      EXPECT_LT(p, pages);
    }
  }
}

TEST(Generator, EqualSplit) {
  const Definition def = Def();
  auto plans = PlanInputs(def, Small(4, 30, 10), {0, LengthSplit::kEqual});
  ASSERT_OK(plans);
  EXPECT_EQ(Ints(Find(*plans, "kv_indptr")), (std::vector<int32_t>{0, 3, 6, 8, 10}));
}

TEST(Generator, ExplicitIndptrAndTooFewPages) {
  const Definition def = Def();
  Workload w = Small(3, 10, 6);
  w.inputs["kv_indptr"].kind = InputSource::Kind::kValues;
  w.inputs["kv_indptr"].values = {0, 0, 6, 6};
  auto plans = PlanInputs(def, w, {});
  ASSERT_OK(plans);
  EXPECT_EQ(Ints(Find(*plans, "kv_indptr")), (std::vector<int32_t>{0, 0, 6, 6}));
  w.inputs["kv_indptr"].values = {0, 5, 4, 6};
  EXPECT_FALSE(PlanInputs(def, w, {}).ok());
  EXPECT_FALSE(PlanInputs(def, Small(1, 5, 6), {}).ok()) << "6 distinct pages out of 5";
}

TEST(Generator, ScalarFromWorkload) {
  const Definition def = Def();
  auto plans = PlanInputs(def, Small(1, 4, 4), {});
  ASSERT_OK(plans);
  const TensorPlan& s = Find(*plans, "sm_scale");
  ASSERT_EQ(s.bytes.size(), 4u);
  float v;
  std::memcpy(&v, s.bytes.data(), 4);
  EXPECT_FLOAT_EQ(v, 0.088388f);
  EXPECT_TRUE(s.shape.empty());
}

}  // namespace
}  // namespace ki::harness
