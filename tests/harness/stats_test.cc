// Summary statistics of timing samples.
#include <gtest/gtest.h>

#include <cmath>

#include "ki/harness.h"

namespace ki::harness {
namespace {

TEST(Stats, PercentileInterpolatesLikeNumpy) {
  const std::vector<double> s = {1, 2, 3, 4};
  EXPECT_DOUBLE_EQ(Percentile(s, 0.5), 2.5);
  EXPECT_DOUBLE_EQ(Percentile(s, 0.0), 1);
  EXPECT_DOUBLE_EQ(Percentile(s, 1.0), 4);
  EXPECT_DOUBLE_EQ(Percentile(s, 0.05), 1.15);   // numpy.percentile([1,2,3,4], 5)
  EXPECT_DOUBLE_EQ(Percentile(s, 0.95), 3.85);
}

TEST(Stats, MedianOddEven) {
  EXPECT_DOUBLE_EQ(Median({5, 1, 3}), 3);
  EXPECT_DOUBLE_EQ(Median({4, 1, 3, 2}), 2.5);
}

TEST(Stats, SummaryOfKnownSample) {
  // mean 5, sample stddev sqrt(32/7); t(0.975, 7) = 2.365.
  const SampleStats s = Summarize({2, 4, 4, 4, 5, 5, 7, 9});
  EXPECT_EQ(s.count, 8u);
  EXPECT_DOUBLE_EQ(s.mean, 5);
  EXPECT_DOUBLE_EQ(s.median, 4.5);
  EXPECT_DOUBLE_EQ(s.min, 2);
  EXPECT_DOUBLE_EQ(s.max, 9);
  EXPECT_NEAR(s.stddev, std::sqrt(32.0 / 7.0), 1e-12);
  const double half = 2.365 * std::sqrt(32.0 / 7.0) / std::sqrt(8.0);
  EXPECT_NEAR(s.ci95_low, 5 - half, 1e-9);
  EXPECT_NEAR(s.ci95_high, 5 + half, 1e-9);
}

TEST(Stats, LargeSampleUsesNormalQuantile) {
  std::vector<double> v;
  for (int i = 0; i < 150; ++i) v.push_back(i % 2 ? 1.0 : 3.0);
  const SampleStats s = Summarize(v);
  const double half = (s.ci95_high - s.ci95_low) / 2;
  EXPECT_NEAR(half / (s.stddev / std::sqrt(150.0)), 1.976, 0.01);
}

TEST(Stats, EmptyAndSingle) {
  EXPECT_TRUE(std::isnan(Summarize({}).median));
  const SampleStats one = Summarize({3.5});
  EXPECT_DOUBLE_EQ(one.median, 3.5);
  EXPECT_DOUBLE_EQ(one.ci95_low, 3.5);
  EXPECT_DOUBLE_EQ(one.stddev, 0);
}

}  // namespace
}  // namespace ki::harness
