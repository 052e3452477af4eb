// The comparator's rules (flashinfer-bench's): atol or rtol, non-finite values.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "ki/harness.h"

namespace ki::harness {
namespace {

HostTensor F32(std::vector<float> v, std::vector<int64_t> shape = {}) {
  HostTensor t;
  t.name = std::string(1, 'x');  // not = "x": GCC 12 -Wrestrict false positive
  t.dtype = KI_DTYPE_F32;
  t.shape = shape.empty() ? std::vector<int64_t>{static_cast<int64_t>(v.size())} : shape;
  t.bytes.resize(v.size() * 4);
  std::memcpy(t.bytes.data(), v.data(), t.bytes.size());
  return t;
}

TEST(Compare, AbsoluteToleranceForSmallValues) {
  // |a-b| = 0.009 <= atol although rel is huge.
  const TensorCheck c = CompareTensors(F32({0.0095f}), F32({0.0005f}), {});
  EXPECT_TRUE(c.passed());
  EXPECT_NEAR(c.max_abs_error, 0.009, 1e-6);
  EXPECT_GT(c.max_rel_error, 10);
}

TEST(Compare, RelativeToleranceForLargeValues) {
  // |a-b| = 0.5 > atol but rel = 0.5 / 100 = 0.005 <= rtol.
  EXPECT_TRUE(CompareTensors(F32({100.5f}), F32({100.f}), {}).passed());
  // rel = 2 / 100 = 0.02: fails both.
  const TensorCheck c = CompareTensors(F32({102.f, 1.f}), F32({100.f, 1.f}), {});
  EXPECT_FALSE(c.passed());
  EXPECT_EQ(c.mismatched, 1);
  EXPECT_DOUBLE_EQ(c.matched_ratio, 0.5);
}

TEST(Compare, RelativeErrorUsesEpsilonDenominator) {
  const TensorCheck c = CompareTensors(F32({0.f}), F32({0.f}), {});
  EXPECT_TRUE(c.passed());
  EXPECT_EQ(c.max_rel_error, 0.0);
  // rel = 1e-9 / (0 + 1e-8) = 0.1: passes rtol 0.5, fails rtol 0.05 (atol 0).
  EXPECT_TRUE(CompareTensors(F32({1e-9f}), F32({0.f}), {0.0, 0.5}).passed());
  EXPECT_FALSE(CompareTensors(F32({1e-9f}), F32({0.f}), {0.0, 0.05}).passed());
}

TEST(Compare, NaNNeverMatches) {
  const TensorCheck c = CompareTensors(F32({NAN, 1.f}), F32({1.f, 1.f}), {});
  EXPECT_FALSE(c.passed());
  EXPECT_EQ(c.nonfinite, 1);
  EXPECT_EQ(c.mismatched, 1);
  EXPECT_FALSE(CompareTensors(F32({NAN}), F32({NAN}), {}).passed());
}

TEST(Compare, EqualInfinitiesMatchOthersDoNot) {
  EXPECT_TRUE(CompareTensors(F32({-INFINITY}), F32({-INFINITY}), {}).passed());
  EXPECT_FALSE(CompareTensors(F32({INFINITY}), F32({-INFINITY}), {}).passed());
  EXPECT_FALSE(CompareTensors(F32({-INFINITY}), F32({-3.f}), {}).passed());
  EXPECT_FALSE(CompareTensors(F32({-3.f}), F32({-INFINITY}), {}).passed());
}

TEST(Compare, ShapeAndDtypeMismatch) {
  EXPECT_FALSE(CompareTensors(F32({1, 2, 3, 4}, {2, 2}), F32({1, 2, 3, 4}, {4}), {}).shape_ok);
  HostTensor b = F32({1.f});
  b.dtype = KI_DTYPE_I32;
  const TensorCheck c = CompareTensors(b, F32({1.f}), {});
  EXPECT_FALSE(c.dtype_ok);
  EXPECT_FALSE(c.passed());
}

TEST(Compare, Bf16Elements) {
  HostTensor a, b;
  a.name = b.name = "o";
  a.dtype = b.dtype = KI_DTYPE_BF16;
  a.shape = b.shape = {2};
  const uint16_t av[2] = {FloatToBf16(1.0f), 0xFFFF};  // 0xFFFF: the poison (NaN)
  const uint16_t bv[2] = {FloatToBf16(1.0f), FloatToBf16(2.f)};
  a.bytes.assign(reinterpret_cast<const uint8_t*>(av), reinterpret_cast<const uint8_t*>(av) + 4);
  b.bytes.assign(reinterpret_cast<const uint8_t*>(bv), reinterpret_cast<const uint8_t*>(bv) + 4);
  const TensorCheck c = CompareTensors(a, b, {});
  EXPECT_EQ(c.nonfinite, 1) << "an unwritten (poisoned) element must fail";
}

TEST(Bf16, RoundsToNearestEven) {
  EXPECT_EQ(FloatToBf16(1.0f), 0x3f80);
  EXPECT_EQ(Bf16ToFloat(0x3f80), 1.0f);
  // 1 + 2^-8 is halfway between 1 and 1 + 2^-7: ties to even (1.0).
  EXPECT_EQ(FloatToBf16(1.0f + 1.0f / 256), 0x3f80);
  // 1 + 3 * 2^-8 is halfway between 1 + 2^-7 and 1 + 2^-6: ties to even (1 + 2^-6).
  EXPECT_EQ(FloatToBf16(1.0f + 3.0f / 256), 0x3f82);
  EXPECT_TRUE(std::isnan(Bf16ToFloat(FloatToBf16(NAN))));
  EXPECT_EQ(FloatToBf16(-INFINITY), 0xff80);
}

}  // namespace
}  // namespace ki::harness
