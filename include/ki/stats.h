// Statistics: is a difference between two benchmark measurements real?
//
// Pure functions of numbers, no I/O (docs/statistics.md gives the methods
// and why they were chosen):
//   - MannWhitneyU: the two-sided Mann-Whitney U test with tie correction,
//     computed as scipy.stats.mannwhitneyu(x, y, method="auto") does
//     (SciPy 1.10): the exact null distribution when one sample has at most
//     8 values and no value is tied, else the normal approximation with tie
//     correction and continuity correction;
//   - BootstrapMedianRatio: a percentile-bootstrap interval of
//     median(b) / median(a), resampled with a counter-based generator
//     (include/ki/counter_rng.h), so the same inputs and seed give the same
//     interval on every machine;
//   - CompareSamples / CompareSummaries: the verdict of `ki diff` (faster,
//     slower, no difference detectable, below the noise floor; untested
//     without samples);
//   - JudgeReproduction: the verdict of `ki rerun` (did the number hold
//     within a tolerance);
//   - DetectChangePoints: steps in a series of values (`ki log --regressions`),
//     by penalised optimal partitioning of log-values.
//
// Lower values are better throughout (latencies): "faster" means B's
// median is lower than A's.
//
// Thread-safety: every function is pure and may be called from any thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace ki::stats {

// Median of the values (the mean of the two middle ones for an even count);
// NaN for none.
double Median(std::span<const double> v);

// ---------------------------------------------------------------- U test

enum class UMethod { kExact, kAsymptotic };
std::string_view UMethodName(UMethod m);  // "exact", "asymptotic"

struct UTest {
  double u1 = 0;       // U of the first sample (SciPy's statistic)
  double p_value = 1;  // two-sided
  UMethod method = UMethod::kAsymptotic;
  bool ties = false;   // some value occurs more than once in x and y together
};

// Two-sided Mann-Whitney U test of x against y. Both must hold at least one
// finite value (the caller checks; nullopt otherwise). As SciPy's "auto":
// exact when min(|x|, |y|) <= 8 and there are no ties, else asymptotic. The
// exact distribution is computed in 128-bit integers; when its size would
// overflow them (the larger sample over ~100,000 values beside one of at
// most 8) the asymptotic p-value is returned and `method` says so.
std::optional<UTest> MannWhitneyU(std::span<const double> x, std::span<const double> y);

// ---------------------------------------------------------------- bootstrap

// The seed `ki diff` and `ki rerun` use unless told otherwise: fixed, so the
// interval is a function of the samples alone.
inline constexpr uint64_t kDefaultSeed = 0x6b692d7374617473ull;  // "ki-stats"

struct BootstrapOptions {
  int resamples = 2000;
  double confidence = 0.95;
  uint64_t seed = kDefaultSeed;
};

struct RatioInterval {
  double ratio = 0;  // median(b) / median(a) of the samples themselves
  double low = 0, high = 0;  // percentile interval of the resampled ratios
  int resamples = 0;
  double confidence = 0;
  uint64_t seed = 0;
};

// Percentile bootstrap of median(b) / median(a): each resample draws |a|
// values from a and |b| from b with replacement; the interval is the
// (1-confidence)/2 and (1+confidence)/2 quantiles (linear interpolation
// between order statistics, numpy's default) of the resampled ratios. Both
// samples non-empty and their medians positive, else nullopt.
std::optional<RatioInterval> BootstrapMedianRatio(std::span<const double> a, std::span<const double> b,
                                                  const BootstrapOptions& opts = {});

// ---------------------------------------------------------------- ki diff

enum class Verdict {
  kFaster,           // B is faster than A: significant and beyond the noise floor
  kSlower,           // B is slower than A
  kNoDifference,     // the test cannot tell them apart at alpha
  kBelowNoiseFloor,  // significant, but smaller than the noise floor
  kUntested,         // no raw samples on one side: nothing to test
};
std::string_view VerdictName(Verdict v);  // "faster", "slower", "no-difference", "below-noise-floor", "untested"

struct CompareOptions {
  double alpha = 0.05;
  double noise_floor = 0.01;  // relative: |ratio - 1| below this is noise
  BootstrapOptions bootstrap;
};

struct Comparison {
  Verdict verdict = Verdict::kUntested;
  double ratio = 0;  // B / A: of medians with samples, of the primary values without
  std::optional<RatioInterval> interval;  // with samples
  std::optional<UTest> test;              // with samples
  size_t n_a = 0, n_b = 0;                // sample counts (0 without samples)
  // Without samples: whether the two runs' own 95% intervals overlap, when
  // both have one.
  std::optional<bool> intervals_overlap;
  double alpha = 0, noise_floor = 0;
  std::string words;  // one line: the verdict in words
};

// B against A from their raw samples. Both need at least one value and
// positive medians, else nullopt.
std::optional<Comparison> CompareSamples(std::span<const double> a, std::span<const double> b,
                                         const CompareOptions& opts = {});

struct Summary {
  double value = 0;  // the primary statistic
  std::optional<std::pair<double, double>> interval95;
};
// B against A from summary statistics only: the ratio, whether the 95%
// intervals overlap where both are given, and the verdict kUntested.
Comparison CompareSummaries(const Summary& a, const Summary& b, const CompareOptions& opts = {});

// ---------------------------------------------------------------- ki rerun

enum class Reproduction { kReproduced, kNotReproduced, kInconclusive };
std::string_view ReproductionName(Reproduction r);  // "reproduced", "not-reproduced", "inconclusive"

struct ReproductionVerdict {
  Reproduction outcome = Reproduction::kInconclusive;
  // "bootstrap-median-ratio" (both sides have samples: the interval of the
  // ratio of medians against the band) or "value-ratio" (the recorded
  // primary values, when the original has no samples), or "status" (a
  // side did not pass).
  std::string test;
  double tolerance = 0;  // the band is [1 - tolerance, 1 + tolerance]
  std::optional<double> ratio;  // fresh / original
  std::optional<RatioInterval> interval;
  std::optional<UTest> u_test;  // reported beside, never decisive
  std::string words;            // one line: why
};

// Did the re-run hold the original's number? With samples on both sides:
// reproduced when the bootstrap interval of median(fresh)/median(original)
// lies inside the band, not reproduced when it lies wholly outside it,
// inconclusive when it straddles an edge. With only the original's recorded
// value: reproduced when fresh/original is inside the band, else not
// reproduced. A side that did not pass: not reproduced (status test).
struct ReproductionInput {
  bool original_passed = false, fresh_passed = false;
  std::optional<double> original_value, fresh_value;  // primary statistics
  std::span<const double> original_samples, fresh_samples;  // empty: none
  double tolerance = 0.10;
  BootstrapOptions bootstrap;
};
ReproductionVerdict JudgeReproduction(const ReproductionInput& in);

// ---------------------------------------------------------------- series

struct ChangePointOptions {
  // Penalty per change point, in units of sigma^2 * ln(n), sigma the noise
  // of the log-values estimated from successive differences (docs/statistics.md).
  double penalty = 4.0;
  // Noise below this relative level is taken as this level, so that a
  // series of identical (quantised) values does not make every tiny step a
  // change point.
  double min_noise = 1e-3;
  // A change's size and interval come from at most this many points of
  // the segments either side, the nearest to the change.
  size_t window = 100;
  BootstrapOptions bootstrap;
};

struct ChangePoint {
  size_t index = 0;  // the first point of the new level
  double before = 0, after = 0;  // medians either side (at most `window` points of each segment)
  double ratio = 0;               // after / before
  double low = 0, high = 0;       // bootstrap interval of the ratio of the two segments' medians
  size_t before_points = 0, after_points = 0;  // the points those medians are of
};

struct Segmentation {
  std::vector<ChangePoint> changes;  // in series order
  double noise = 0;                  // the estimated relative noise (sigma of log-values)
};

// Steps in a series of positive values in time order. Non-positive or
// non-finite values are refused (nullopt); fewer than 3 values have no
// change point.
std::optional<Segmentation> DetectChangePoints(std::span<const double> series, const ChangePointOptions& opts = {});

}  // namespace ki::stats
