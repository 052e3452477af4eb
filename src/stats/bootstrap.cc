// Percentile bootstrap of a ratio of medians, seeded and counter-based.
#include <algorithm>
#include <cmath>
#include <vector>

#include "ki/counter_rng.h"
#include "ki/stats.h"

namespace ki::stats {
namespace {

// Draws one resample of `sorted` (n values, ascending) and returns its
// median. A resample is only needed up to its order statistics, so draws
// are counted per index and the middle found by a running sum: O(n) per
// resample, no copy and no sort. Draw i of resample r of sample s is
// rng::Bits(key, ...) of a fixed counter, so the result depends on the
// seed and the inputs only.
double ResampledMedian(const std::vector<double>& sorted, uint64_t key, uint64_t first_counter,
                       std::vector<uint32_t>& counts) {
  const size_t n = sorted.size();
  std::fill(counts.begin(), counts.end(), 0u);
  for (size_t i = 0; i < n; ++i) ++counts[rng::Below(rng::Bits(key, first_counter + i), n)];
  // 1-based ranks of the middle value(s).
  const size_t lo_rank = (n + 1) / 2, hi_rank = n / 2 + 1;
  size_t seen = 0;
  double lo = NAN;
  for (size_t j = 0; j < n; ++j) {
    seen += counts[j];
    if (std::isnan(lo) && seen >= lo_rank) lo = sorted[j];
    if (seen >= hi_rank) return n % 2 ? lo : 0.5 * (lo + sorted[j]);
  }
  return lo;  // not reached: the counts sum to n
}

// numpy.quantile's default (linear interpolation between order statistics).
double Quantile(const std::vector<double>& sorted, double q) {
  const double h = (double(sorted.size()) - 1) * q;
  const size_t i = size_t(std::floor(h));
  if (i + 1 >= sorted.size()) return sorted.back();
  return sorted[i] + (h - double(i)) * (sorted[i + 1] - sorted[i]);
}

}  // namespace

std::optional<RatioInterval> BootstrapMedianRatio(std::span<const double> a, std::span<const double> b,
                                                  const BootstrapOptions& opts) {
  if (a.empty() || b.empty() || opts.resamples < 1 || !(opts.confidence > 0 && opts.confidence < 1))
    return std::nullopt;
  std::vector<double> sa(a.begin(), a.end()), sb(b.begin(), b.end());
  for (const auto* s : {&sa, &sb})
    for (double v : *s)
      if (!std::isfinite(v)) return std::nullopt;
  std::sort(sa.begin(), sa.end());
  std::sort(sb.begin(), sb.end());
  const double ma = Median(sa), mb = Median(sb);
  if (!(ma > 0) || !(mb > 0)) return std::nullopt;
  RatioInterval out;
  out.ratio = mb / ma;
  out.resamples = opts.resamples;
  out.confidence = opts.confidence;
  out.seed = opts.seed;
  // One stream per sample; resample r uses counters [r*n, (r+1)*n).
  const uint64_t key_a = rng::StreamKey(opts.seed, 0), key_b = rng::StreamKey(opts.seed, 1);
  std::vector<uint32_t> ca(sa.size()), cb(sb.size());
  std::vector<double> ratios;
  ratios.reserve(size_t(opts.resamples));
  for (int r = 0; r < opts.resamples; ++r) {
    const double ra = ResampledMedian(sa, key_a, uint64_t(r) * sa.size(), ca);
    const double rb = ResampledMedian(sb, key_b, uint64_t(r) * sb.size(), cb);
    // Medians of positive-median samples can still be <= 0 in a resample
    // (samples with negative values); such a ratio has no meaning as a
    // speed-up and is kept as is: the interval then shows it.
    ratios.push_back(ra != 0 ? rb / ra : (rb > 0 ? INFINITY : -INFINITY));
  }
  std::sort(ratios.begin(), ratios.end());
  const double tail = (1 - opts.confidence) / 2;
  out.low = Quantile(ratios, tail);
  out.high = Quantile(ratios, 1 - tail);
  return out;
}

}  // namespace ki::stats
