// Change points of a series: penalised optimal partitioning of log-values
// (docs/statistics.md, "Change points", says why this method).
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "ki/stats.h"

namespace ki::stats {

std::optional<Segmentation> DetectChangePoints(std::span<const double> series, const ChangePointOptions& opts) {
  for (double v : series)
    if (!std::isfinite(v) || !(v > 0)) return std::nullopt;
  Segmentation out;
  const size_t n = series.size();
  if (n < 3) return out;
  // Log-values: a step of 5% is the same size at 10 us and at 10 ms, and
  // timing noise is multiplicative.
  std::vector<double> y(n);
  for (size_t i = 0; i < n; ++i) y[i] = std::log(series[i]);
  // Noise from successive differences (robust to the steps themselves,
  // which are few): sigma = 1.4826 * MAD(diff) / sqrt(2).
  std::vector<double> d(n - 1);
  for (size_t i = 0; i + 1 < n; ++i) d[i] = y[i + 1] - y[i];
  const double md = Median(d);
  for (double& x : d) x = std::fabs(x - md);
  const double sigma = std::max(1.4826 * Median(d) / std::sqrt(2.0), std::log1p(opts.min_noise));
  out.noise = sigma;
  const double beta = opts.penalty * sigma * sigma * std::log(double(n));
  // Prefix sums make a segment's cost (sum of squared deviations from its
  // mean) O(1): cost(s, t) over [s, t) = S2 - S1^2 / len.
  std::vector<double> s1(n + 1, 0), s2(n + 1, 0);
  for (size_t i = 0; i < n; ++i) {
    s1[i + 1] = s1[i] + y[i];
    s2[i + 1] = s2[i] + y[i] * y[i];
  }
  auto cost = [&](size_t s, size_t t) {
    const double a = s1[t] - s1[s], b = s2[t] - s2[s];
    return std::max(0.0, b - a * a / double(t - s));
  };
  // F[t]: the least penalised cost of y[0, t); last[t]: where its final
  // segment starts. PELT's pruning keeps only starts that can still win,
  // which makes a long series with steps close to linear.
  std::vector<double> f(n + 1, 0);
  std::vector<size_t> last(n + 1, 0);
  std::vector<size_t> candidates = {0};
  f[0] = -beta;
  for (size_t t = 1; t <= n; ++t) {
    double best = std::numeric_limits<double>::infinity();
    size_t arg = 0;
    for (size_t s : candidates) {
      const double c = f[s] + cost(s, t) + beta;
      if (c < best) best = c, arg = s;
    }
    f[t] = best;
    last[t] = arg;
    std::vector<size_t> keep;
    keep.reserve(candidates.size() + 1);
    for (size_t s : candidates)
      if (f[s] + cost(s, t) <= best) keep.push_back(s);
    keep.push_back(t);
    candidates.swap(keep);
  }
  std::vector<size_t> starts;  // segment starts, after the first
  for (size_t t = n; t > 0; t = last[t])
    if (last[t] > 0) starts.push_back(last[t]);
  std::reverse(starts.begin(), starts.end());
  for (size_t k = 0; k < starts.size(); ++k) {
    const size_t begin = k == 0 ? 0 : starts[k - 1];
    const size_t mid = starts[k];
    const size_t end = k + 1 < starts.size() ? starts[k + 1] : n;
    // The level either side is that of the runs next to the change: at most
    // opts.window of each segment. A long history's old runs say little
    // about the level just before a step, and the bootstrap's cost stays
    // bounded (2,000 resamples of 1,000 runs cost more than `ki log` itself).
    const size_t w = std::max<size_t>(1, opts.window);
    const size_t b0 = mid - begin > w ? mid - w : begin, e0 = end - mid > w ? mid + w : end;
    auto before = series.subspan(b0, mid - b0), after = series.subspan(mid, e0 - mid);
    ChangePoint c;
    c.index = mid;
    c.before = Median(before);
    c.after = Median(after);
    c.ratio = c.after / c.before;
    c.before_points = before.size();
    c.after_points = after.size();
    if (auto ci = BootstrapMedianRatio(before, after, opts.bootstrap)) {
      c.low = ci->low;
      c.high = ci->high;
    } else {
      c.low = c.high = c.ratio;
    }
    out.changes.push_back(c);
  }
  return out;
}

}  // namespace ki::stats
