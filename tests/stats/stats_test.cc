// The statistics module on generated data: the U test's exact and
// asymptotic p-values on cases worked by hand, the bootstrap's determinism
// and its coverage at nominal 95%, the verdicts, and change-point detection
// of planted steps (tests/stats/scipy_compare.py checks the U test against
// SciPy on 1,000 pairs).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>

#include "ki/stats.h"
#include "stats/generate.h"

namespace ki::stats {
namespace {

using testing::Generator;

TEST(Median, OddEvenEmpty) {
  std::vector<double> odd = {3, 1, 2}, even = {4, 1, 3, 2};
  EXPECT_EQ(Median(odd), 2);
  EXPECT_EQ(Median(even), 2.5);
  EXPECT_TRUE(std::isnan(Median(std::vector<double>{})));
}

// Exact: x = {1,2,3}, y = {4,5,6}: U1 = 0, U2 = 9; of the C(6,3) = 20
// arrangements one has U = 9, so p = 2 * 1/20.
TEST(MannWhitney, ExactByHand) {
  std::vector<double> x = {1, 2, 3}, y = {4, 5, 6};
  auto t = MannWhitneyU(x, y);
  ASSERT_TRUE(t);
  EXPECT_EQ(t->method, UMethod::kExact);
  EXPECT_EQ(t->u1, 0);
  EXPECT_DOUBLE_EQ(t->p_value, 0.1);
  // Interleaved: x = {1,3,5}, y = {2,4,6}: U1 = 3, max(U1, U2) = 6;
  // counts of U = 0..9 are 1,1,2,3,3,3,3,2,1,1, so P(U >= 6) = 7/20.
  std::vector<double> a = {1, 3, 5}, b = {2, 4, 6};
  t = MannWhitneyU(a, b);
  ASSERT_TRUE(t);
  EXPECT_EQ(t->u1, 3);
  EXPECT_DOUBLE_EQ(t->p_value, 0.7);
  // Swapping the samples mirrors U and keeps p.
  auto s = MannWhitneyU(b, a);
  EXPECT_EQ(s->u1, 6);
  EXPECT_DOUBLE_EQ(s->p_value, 0.7);
}

// Asymptotic with ties: x = {1,1,2}, y = {1,2,2,3,3,3,3,3,3} (n = 12).
// Average ranks: the three 1s share 2, the three 2s share 5, the six 3s
// share 9.5; R1 = 2+2+5 = 9, U1 = 9 - 6 = 3, U2 = 24; tie term =
// 3 * (27 - 3) ... = 24 + 24 + 210 = 258. s = sqrt(27/12 * (13 - 258/132)),
// z = (24 - 13.5 - 0.5) / s, p = erfc(z / sqrt 2).
TEST(MannWhitney, AsymptoticWithTiesByHand) {
  std::vector<double> x = {1, 1, 2}, y = {1, 2, 2, 3, 3, 3, 3, 3, 3};
  auto t = MannWhitneyU(x, y);
  ASSERT_TRUE(t);
  EXPECT_EQ(t->method, UMethod::kAsymptotic);
  EXPECT_TRUE(t->ties);
  EXPECT_EQ(t->u1, 3);
  const double s = std::sqrt(27.0 / 12 * (13 - 258.0 / 132));
  EXPECT_NEAR(t->p_value, std::erfc((24 - 13.5 - 0.5) / s / std::sqrt(2.0)), 1e-15);
}

TEST(MannWhitney, AllEqualIsOneAndEmptyIsRefused) {
  std::vector<double> x(10, 5.0), y(12, 5.0), none;
  auto t = MannWhitneyU(x, y);
  ASSERT_TRUE(t);
  EXPECT_EQ(t->p_value, 1);
  EXPECT_FALSE(MannWhitneyU(x, none));
  std::vector<double> bad = {1, NAN};
  EXPECT_FALSE(MannWhitneyU(x, bad));
}

// One sample of 8 beside a large one still takes the exact path (SciPy's
// rule); its p-value must agree with the normal approximation roughly.
TEST(MannWhitney, ExactWithALargeSample) {
  Generator g(11);
  auto x = g.LogNormal(8, 0, 0.1), y = g.LogNormal(3000, 0.05, 0.1);
  auto t = MannWhitneyU(x, y);
  ASSERT_TRUE(t);
  EXPECT_EQ(t->method, UMethod::kExact);
  EXPECT_GT(t->p_value, 0);
  EXPECT_LE(t->p_value, 1);
}

TEST(Bootstrap, SameInputsSameInterval) {
  Generator g(1);
  auto a = g.LogNormal(150, std::log(1000), 0.03), b = g.LogNormal(150, std::log(1020), 0.03);
  auto x = BootstrapMedianRatio(a, b), y = BootstrapMedianRatio(a, b);
  ASSERT_TRUE(x && y);
  EXPECT_EQ(x->low, y->low);
  EXPECT_EQ(x->high, y->high);
  EXPECT_LT(x->low, x->ratio);
  EXPECT_GT(x->high, x->ratio);
  BootstrapOptions other;
  other.seed = 99;
  auto z = BootstrapMedianRatio(a, b, other);
  ASSERT_TRUE(z);
  EXPECT_EQ(z->ratio, x->ratio);
  EXPECT_TRUE(z->low != x->low || z->high != x->high) << "the seed changes the resamples";
  // Refused: empty, non-positive median.
  std::vector<double> none, neg(5, -1.0);
  EXPECT_FALSE(BootstrapMedianRatio(none, b));
  EXPECT_FALSE(BootstrapMedianRatio(neg, b));
}

// Over 1,000 simulated pairs of 150 log-normal samples (3% spread, as GPU
// timings), the 95% interval holds the true ratio of medians 93-97% of the
// time; and again with a skewed sample (a slow tail on 10% of the calls).
double Coverage(bool skewed, size_t n) {
  int covered = 0;
  const int pairs = 1000;
  for (int i = 0; i < pairs; ++i) {
    Generator g(1000 + uint64_t(i), skewed ? 1 : 0);
    const double true_ratio = 0.9 + 0.2 * g.Uniform();
    auto draw = [&](double median) {
      std::vector<double> v = g.LogNormal(n, std::log(median), 0.03);
      if (skewed)  // a heavy upper tail that leaves the median where it was:
        for (double& x : v)  // values above the median are stretched
          if (x > median) x = median + (x - median) * 4;
      return v;
    };
    auto a = draw(1000), b = draw(1000 * true_ratio);
    BootstrapOptions o;
    o.seed = uint64_t(i);
    auto ci = BootstrapMedianRatio(a, b, o);
    if (ci && ci->low <= true_ratio && true_ratio <= ci->high) ++covered;
  }
  return double(covered) / pairs;
}

TEST(Bootstrap, CoverageAtNominal95) {
  const double c = Coverage(false, 150);
  std::printf("coverage, log-normal, n = 150: %.3f\n", c);
  EXPECT_GE(c, 0.93);
  EXPECT_LE(c, 0.97);
  const double s = Coverage(true, 150);
  std::printf("coverage, skewed, n = 150: %.3f\n", s);
  EXPECT_GE(s, 0.93);
  EXPECT_LE(s, 0.97);
}

TEST(Compare, Verdicts) {
  Generator g(5);
  auto a = g.LogNormal(150, std::log(1000), 0.01);
  auto faster = g.LogNormal(150, std::log(950), 0.01), slower = g.LogNormal(150, std::log(1050), 0.01);
  auto same = g.LogNormal(150, std::log(1000), 0.01), tiny = g.LogNormal(150, std::log(1004), 0.01);
  EXPECT_EQ(CompareSamples(a, faster)->verdict, Verdict::kFaster);
  EXPECT_EQ(CompareSamples(a, slower)->verdict, Verdict::kSlower);
  auto c = CompareSamples(a, same);
  EXPECT_EQ(c->verdict, Verdict::kNoDifference) << c->words;
  // 0.4% with 1% noise and 150 samples is significant, yet below the floor.
  c = CompareSamples(a, tiny);
  EXPECT_LT(c->test->p_value, 0.05);
  EXPECT_EQ(c->verdict, Verdict::kBelowNoiseFloor) << c->words;
  CompareOptions strict;
  strict.noise_floor = 0.001;
  EXPECT_EQ(CompareSamples(a, tiny, strict)->verdict, Verdict::kSlower);
  EXPECT_NE(CompareSamples(a, slower)->words.find("B is slower by"), std::string::npos);
}

TEST(Compare, SummariesAreUntested) {
  Summary a{100, std::make_pair(95.0, 105.0)}, b{120, std::make_pair(110.0, 130.0)}, c{101, std::nullopt};
  auto x = CompareSummaries(a, b);
  EXPECT_EQ(x.verdict, Verdict::kUntested);
  EXPECT_DOUBLE_EQ(x.ratio, 1.2);
  ASSERT_TRUE(x.intervals_overlap);
  EXPECT_FALSE(*x.intervals_overlap);
  EXPECT_NE(x.words.find("cannot test without raw samples"), std::string::npos);
  auto y = CompareSummaries(a, c);
  EXPECT_FALSE(y.intervals_overlap);
  EXPECT_NE(y.words.find("B records no 95% interval"), std::string::npos);
}

TEST(Reproduction, Outcomes) {
  Generator g(8);
  auto orig = g.LogNormal(150, std::log(1000), 0.02);
  auto held = g.LogNormal(150, std::log(1010), 0.02), off = g.LogNormal(150, std::log(1300), 0.02),
       edge = g.LogNormal(150, std::log(1100), 0.02);
  ReproductionInput in;
  in.original_passed = in.fresh_passed = true;
  in.original_samples = orig;
  in.fresh_samples = held;
  EXPECT_EQ(JudgeReproduction(in).outcome, Reproduction::kReproduced);
  in.fresh_samples = off;
  EXPECT_EQ(JudgeReproduction(in).outcome, Reproduction::kNotReproduced);
  in.fresh_samples = edge;  // the median ratio sits on the 10% edge
  auto v = JudgeReproduction(in);
  EXPECT_EQ(v.outcome, Reproduction::kInconclusive) << v.words;
  EXPECT_EQ(v.test, "bootstrap-median-ratio");
  // Without the original's samples: its recorded value.
  ReproductionInput s;
  s.original_passed = s.fresh_passed = true;
  s.original_value = 1000;
  s.fresh_value = 1080;
  v = JudgeReproduction(s);
  EXPECT_EQ(v.outcome, Reproduction::kReproduced);
  EXPECT_EQ(v.test, "value-ratio");
  s.fresh_value = 1200;
  EXPECT_EQ(JudgeReproduction(s).outcome, Reproduction::kNotReproduced);
  s.fresh_passed = false;
  v = JudgeReproduction(s);
  EXPECT_EQ(v.outcome, Reproduction::kNotReproduced);
  EXPECT_EQ(v.test, "status");
}

std::vector<double> Series(Generator& g, size_t n, size_t step_at, double step) {
  std::vector<double> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = 1000 * (i >= step_at ? 1 + step : 1) * std::exp(0.01 * g.Normal());
  return v;
}

// 1,000 series of 50 points with 1% noise and a 5% step at a random place
// (up or down): at least 95% found at the right point; 1,000 without a
// step: at most 5% raise any change point.
TEST(ChangePoints, PlantedStepsAndFalseAlarms) {
  int found = 0, alarms = 0, exact_place = 0;
  for (int i = 0; i < 1000; ++i) {
    Generator g(5000 + uint64_t(i));
    const size_t at = 1 + g.Below(49);  // the new level starts at point 1..49
    const double step = g.Uniform() < 0.5 ? 0.05 : -0.05;
    auto seg = DetectChangePoints(Series(g, 50, at, step));
    ASSERT_TRUE(seg);
    for (const auto& c : seg->changes) {
      if (c.index + 1 >= at && c.index <= at + 1 && (c.ratio > 1) == (step > 0)) {
        ++found;
        exact_place += c.index == at;
        break;
      }
    }
    Generator h(9000 + uint64_t(i));
    auto flat = DetectChangePoints(Series(h, 50, 50, 0));
    ASSERT_TRUE(flat);
    alarms += !flat->changes.empty();
  }
  std::printf("planted 5%% steps found: %d / 1000 (%d at the exact point); false alarms: %d / 1000\n", found,
              exact_place, alarms);
  EXPECT_GE(found, 950);
  EXPECT_LE(alarms, 50);
}

TEST(ChangePoints, SizeIntervalAndNewestPoint) {
  Generator g(3);
  auto v = Series(g, 50, 30, 0.05);
  auto seg = DetectChangePoints(v);
  ASSERT_TRUE(seg);
  ASSERT_EQ(seg->changes.size(), 1u);
  const ChangePoint& c = seg->changes[0];
  EXPECT_EQ(c.index, 30u);
  EXPECT_NEAR(c.ratio, 1.05, 0.01);
  EXPECT_LT(c.low, 1.05);
  EXPECT_GT(c.high, 1.04);
  EXPECT_EQ(c.before_points, 30u);
  EXPECT_EQ(c.after_points, 20u);
  EXPECT_NEAR(seg->noise, 0.01, 0.003);
  // A regression at the newest point alone is a change point there.
  Generator h(4);
  auto last = Series(h, 50, 49, 0.08);
  seg = DetectChangePoints(last);
  ASSERT_EQ(seg->changes.size(), 1u);
  EXPECT_EQ(seg->changes[0].index, 49u);
  // Refused: a zero or negative value.
  v[3] = 0;
  EXPECT_FALSE(DetectChangePoints(v));
  // Short series have none; identical values have none.
  std::vector<double> two = {1, 2}, flat(40, 7.0);
  EXPECT_TRUE(DetectChangePoints(two)->changes.empty());
  EXPECT_TRUE(DetectChangePoints(flat)->changes.empty());
}

}  // namespace
}  // namespace ki::stats
