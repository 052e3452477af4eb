// Summary statistics of timing samples.
#include <algorithm>
#include <cmath>
#include <numeric>

#include "ki/harness.h"

namespace ki::harness {
namespace {

// Two-sided 97.5% quantile of Student's t with df degrees of freedom: a
// table to 30, then the normal quantile with a first-order correction.
double TQuantile975(size_t df) {
  static const double kTable[] = {0,      12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
                                  2.201,  2.179,  2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
                                  2.080,  2.074,  2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042};
  if (df == 0) return INFINITY;
  if (df <= 30) return kTable[df];
  const double z = 1.959964;
  return z + (z * z * z + z) / (4.0 * static_cast<double>(df));
}

}  // namespace

double Percentile(const std::vector<double>& sorted, double q) {
  if (sorted.empty()) return NAN;
  if (q <= 0) return sorted.front();
  if (q >= 1) return sorted.back();
  const double pos = q * static_cast<double>(sorted.size() - 1);
  const size_t lo = static_cast<size_t>(std::floor(pos));
  const size_t hi = std::min(lo + 1, sorted.size() - 1);
  const double frac = pos - static_cast<double>(lo);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * frac;
}

double Median(std::vector<double> samples) {
  std::sort(samples.begin(), samples.end());
  return Percentile(samples, 0.5);
}

SampleStats Summarize(std::vector<double> s) {
  SampleStats r;
  r.count = s.size();
  if (s.empty()) {
    r.median = r.mean = r.min = r.max = r.p05 = r.p95 = r.stddev = r.ci95_low = r.ci95_high = NAN;
    return r;
  }
  std::sort(s.begin(), s.end());
  r.min = s.front();
  r.max = s.back();
  r.median = Percentile(s, 0.5);
  r.p05 = Percentile(s, 0.05);
  r.p95 = Percentile(s, 0.95);
  r.mean = std::accumulate(s.begin(), s.end(), 0.0) / static_cast<double>(s.size());
  double ss = 0;
  for (double x : s) ss += (x - r.mean) * (x - r.mean);
  r.stddev = s.size() > 1 ? std::sqrt(ss / static_cast<double>(s.size() - 1)) : 0.0;
  const double half = s.size() > 1 ? TQuantile975(s.size() - 1) * r.stddev / std::sqrt(static_cast<double>(s.size()))
                                   : 0.0;
  r.ci95_low = r.mean - half;
  r.ci95_high = r.mean + half;
  return r;
}

}  // namespace ki::harness
