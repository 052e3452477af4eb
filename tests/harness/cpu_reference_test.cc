// The fp64 CPU reference against hand-computed cases.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "ki/gqa_paged_decode.h"
#include "ki/harness.h"

namespace ki::harness {
namespace {

using namespace ki::gqa;

// A hand-made problem in host memory, zero-initialised.
struct Problem {
  int64_t batch, pages;
  std::vector<uint16_t> q, k, v, out;
  std::vector<int32_t> indptr, indices;
  std::vector<float> lse;
  float scale;
  Problem(int64_t b, int64_t p, std::vector<int32_t> ptr, std::vector<int32_t> idx, float s)
      : batch(b), pages(p), q(b * kNumQoHeads * kHeadDim, FloatToBf16(0.f)),
        k(p * kNumKvHeads * kHeadDim, FloatToBf16(0.f)), v(k), out(q.size(), 0xFFFF),
        indptr(std::move(ptr)), indices(std::move(idx)), lse(b * kNumQoHeads, NAN), scale(s) {}
  void SetQ(int64_t b, int h, int d, float x) { q[(b * kNumQoHeads + h) * kHeadDim + d] = FloatToBf16(x); }
  void SetK(int64_t p, int kvh, int d, float x) { k[(p * kNumKvHeads + kvh) * kHeadDim + d] = FloatToBf16(x); }
  void SetV(int64_t p, int kvh, int d, float x) { v[(p * kNumKvHeads + kvh) * kHeadDim + d] = FloatToBf16(x); }
  float Out(int64_t b, int h, int d) const { return Bf16ToFloat(out[(b * kNumQoHeads + h) * kHeadDim + d]); }
  float Lse(int64_t b, int h) const { return lse[b * kNumQoHeads + h]; }

  int32_t Run(ki_dtype q_dtype = KI_DTYPE_BF16) {
    auto t = [](const char* name, void* data, ki_dtype dt, std::vector<int64_t> shape) {
      ki_tensor x;
      std::memset(&x, 0, sizeof(x));
      x.name = name;
      x.data = data;
      x.dtype = dt;
      x.device = KI_DEVICE_CPU;
      x.ndim = static_cast<int32_t>(shape.size());
      for (size_t i = 0; i < shape.size(); ++i) x.shape[i] = shape[i];
      return x;
    };
    std::vector<ki_tensor> in = {
        t("q", q.data(), q_dtype, {batch, kNumQoHeads, kHeadDim}),
        t("k_cache", k.data(), KI_DTYPE_BF16, {pages, 1, kNumKvHeads, kHeadDim}),
        t("v_cache", v.data(), KI_DTYPE_BF16, {pages, 1, kNumKvHeads, kHeadDim}),
        t("kv_indptr", indptr.data(), KI_DTYPE_I32, {batch + 1}),
        t("kv_indices", indices.data(), KI_DTYPE_I32, {static_cast<int64_t>(indices.size())}),
        t("sm_scale", &scale, KI_DTYPE_F32, {}),
    };
    std::vector<ki_tensor> o = {t("output", out.data(), KI_DTYPE_BF16, {batch, kNumQoHeads, kHeadDim}),
                                t("lse", lse.data(), KI_DTYPE_F32, {batch, kNumQoHeads})};
    ki_call c;
    std::memset(&c, 0, sizeof(c));
    c.abi_version = KI_ABI_VERSION;
    c.struct_size = sizeof(c);
    c.inputs = in.data();
    c.num_inputs = 6;
    c.outputs = o.data();
    c.num_outputs = 2;
    return CpuReferenceKernel(kDefinitionName)->run(&c);
  }
};

TEST(CpuReference, OneTokenGivesItsValueRow) {
  Problem p(1, 3, {0, 1}, {2}, 0.5f);
  for (int d = 0; d < kHeadDim; ++d) {
    p.SetQ(0, 0, d, 1.f);
    p.SetK(2, 0, d, 0.25f);
    p.SetV(2, 0, d, static_cast<float>(d) / 64.f);
  }
  ASSERT_EQ(p.Run(), KI_OK);
  for (int d = 0; d < kHeadDim; ++d) EXPECT_FLOAT_EQ(p.Out(0, 0, d), static_cast<float>(d) / 64.f);
  // logit = 128 * 0.25 * 0.5 = 16; lse2 = 16 / ln 2
  EXPECT_NEAR(p.Lse(0, 0), 16.0 / std::log(2.0), 1e-4);
  // Head 1 has q = 0: logit 0, lse 0.
  EXPECT_FLOAT_EQ(p.Lse(0, 1), 0.f);
}

TEST(CpuReference, TwoTokensWeightTwoToOne) {
  // logits ln 2 and 0: softmax weights 2/3 and 1/3; values 1 and -0.5 give 0.5.
  Problem p(1, 2, {0, 2}, {1, 0}, static_cast<float>(std::log(2.0)));
  p.SetQ(0, 3, 0, 1.f);
  p.SetK(1, 0, 0, 1.f);
  for (int d = 0; d < kHeadDim; ++d) {
    p.SetV(1, 0, d, 1.f);
    p.SetV(0, 0, d, -0.5f);
  }
  ASSERT_EQ(p.Run(), KI_OK);
  for (int d = 0; d < kHeadDim; ++d) EXPECT_FLOAT_EQ(p.Out(0, 3, d), 0.5f);
  EXPECT_NEAR(p.Lse(0, 3), std::log2(3.0), 1e-6);
  // Heads with q = 0 average the two values equally: 0.25, lse log2(2) = 1.
  EXPECT_FLOAT_EQ(p.Out(0, 0, 5), 0.25f);
  EXPECT_NEAR(p.Lse(0, 0), 1.0, 1e-6);
}

TEST(CpuReference, QueryHeadsShareTheirGroupsKvHead) {
  Problem p(1, 1, {0, 1}, {0}, 1.f);
  for (int kvh = 0; kvh < kNumKvHeads; ++kvh)
    for (int d = 0; d < kHeadDim; ++d) p.SetV(0, kvh, d, static_cast<float>(kvh + 1));
  ASSERT_EQ(p.Run(), KI_OK);
  for (int h = 0; h < kNumQoHeads; ++h) EXPECT_FLOAT_EQ(p.Out(0, h, 7), static_cast<float>(h / kGroup + 1)) << h;
}

TEST(CpuReference, EmptySequenceGivesZeroAndMinusInfinity) {
  Problem p(3, 4, {0, 0, 2, 2}, {3, 1}, 1.f);
  for (int d = 0; d < kHeadDim; ++d) p.SetV(3, 0, d, 1.f), p.SetV(1, 0, d, 1.f);
  ASSERT_EQ(p.Run(), KI_OK);
  for (int64_t b : {0, 2}) {
    for (int h = 0; h < kNumQoHeads; ++h) {
      EXPECT_EQ(p.Lse(b, h), -INFINITY);
      EXPECT_EQ(p.Out(b, h, 0), 0.f);
      EXPECT_FALSE(std::signbit(p.Out(b, h, 0)));
    }
  }
  EXPECT_FLOAT_EQ(p.Out(1, 0, 0), 1.f);
}

TEST(CpuReference, RefusesWrongDtypeAndBadIndices) {
  Problem p(1, 2, {0, 1}, {0}, 1.f);
  EXPECT_EQ(p.Run(KI_DTYPE_F16), KI_ERR_INVALID_ARGUMENT);
  Problem bad(1, 2, {0, 1}, {5}, 1.f);
  EXPECT_EQ(bad.Run(), KI_ERR_INVALID_ARGUMENT);
}

}  // namespace
}  // namespace ki::harness
