// The Mann-Whitney U test, two-sided, as scipy.stats.mannwhitneyu computes
// it with method="auto" and use_continuity=True (SciPy 1.10; the comparison
// on 1,000 generated pairs is tests/stats/scipy_compare.py).
#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "ki/stats.h"

namespace ki::stats {
namespace {

__extension__ typedef __int128 I128;  // GCC/Clang extension; quiet under -Wpedantic

// Average ranks (1-based) of xy, as scipy.stats.rankdata's default; also
// the tie term sum(t^3 - t) over groups of equal values.
std::vector<double> AverageRanks(const std::vector<double>& xy, double* tie_term) {
  std::vector<size_t> order(xy.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::sort(order.begin(), order.end(), [&](size_t i, size_t j) { return xy[i] < xy[j]; });
  std::vector<double> ranks(xy.size());
  *tie_term = 0;
  for (size_t i = 0; i < order.size();) {
    size_t j = i + 1;
    while (j < order.size() && xy[order[j]] == xy[order[i]]) ++j;
    // Ranks i+1 .. j share their mean.
    const double r = 0.5 * double(i + 1 + j);
    for (size_t k = i; k < j; ++k) ranks[order[k]] = r;
    const double t = double(j - i);
    *tie_term += t * t * t - t;
    i = j;
  }
  return ranks;
}

// P(U >= u) under the null for samples of m and n values without ties, from
// the Gaussian binomial coefficient [m+n choose m]_q, whose coefficient of
// q^k counts the arrangements with U = k. It is built as the product over
// j = 1..m of (1 - q^(n+j)) / (1 - q^j), each step an exact integer
// polynomial, so the counts are exact. nullopt when they could overflow.
std::optional<double> ExactSf(int64_t u, size_t m, size_t n) {
  if (m > n) std::swap(m, n);  // the distribution is symmetric in m and n
  // C(m+n, m) < 2^126 keeps every intermediate coefficient (at most twice
  // a final one) inside a signed 128-bit integer.
  long double log2_total = 0;
  for (size_t j = 1; j <= m; ++j) log2_total += std::log2((long double)(n + j)) - std::log2((long double)j);
  if (log2_total > 124) return std::nullopt;
  const size_t degree = m * n;
  // Before step j's division the product has degree j*n + j: room for m more.
  std::vector<I128> c(degree + m + 1, 0);
  c[0] = 1;
  size_t deg = 0;  // current degree of the product
  for (size_t j = 1; j <= m; ++j) {
    // Multiply by (1 - q^(n+j)).
    const size_t shift = n + j;
    const size_t new_deg = deg + shift;
    for (size_t k = new_deg + 1; k-- > shift;) c[k] -= c[k - shift];
    // Divide by (1 - q^j): the quotient's coefficients are running sums.
    const size_t quot_deg = new_deg - j;
    for (size_t k = j; k <= quot_deg; ++k) c[k] += c[k - j];
    for (size_t k = quot_deg + 1; k <= new_deg; ++k) c[k] = 0;  // the remainder is zero
    deg = quot_deg;
  }
  if (u <= 0) return 1.0;
  if (size_t(u) > degree) return 0.0;
  I128 total = 0, tail = 0;
  for (size_t k = 0; k <= degree; ++k) {
    total += c[k];
    if (k >= size_t(u)) tail += c[k];
  }
  return double((long double)tail / (long double)total);
}

}  // namespace

std::string_view UMethodName(UMethod m) { return m == UMethod::kExact ? "exact" : "asymptotic"; }

double Median(std::span<const double> v) {
  if (v.empty()) return NAN;
  std::vector<double> s(v.begin(), v.end());
  const size_t h = s.size() / 2;
  std::nth_element(s.begin(), s.begin() + h, s.end());
  const double hi = s[h];
  if (s.size() % 2) return hi;
  const double lo = *std::max_element(s.begin(), s.begin() + h);
  return 0.5 * (lo + hi);
}

std::optional<UTest> MannWhitneyU(std::span<const double> x, std::span<const double> y) {
  if (x.empty() || y.empty()) return std::nullopt;
  for (auto s : {x, y})
    for (double v : s)
      if (!std::isfinite(v)) return std::nullopt;
  const size_t n1 = x.size(), n2 = y.size();
  std::vector<double> xy(x.begin(), x.end());
  xy.insert(xy.end(), y.begin(), y.end());
  double tie_term = 0;
  const std::vector<double> ranks = AverageRanks(xy, &tie_term);
  double r1 = 0;
  for (size_t i = 0; i < n1; ++i) r1 += ranks[i];
  UTest t;
  t.u1 = r1 - double(n1) * double(n1 + 1) / 2;
  const double u2 = double(n1) * double(n2) - t.u1;
  const double u = std::max(t.u1, u2);
  t.ties = tie_term > 0;
  t.method = (n1 > 8 && n2 > 8) || t.ties ? UMethod::kAsymptotic : UMethod::kExact;
  if (t.method == UMethod::kExact) {
    // No ties: U is an integer. SciPy: p = 2 * P(U' >= max(U1, U2)).
    if (auto sf = ExactSf(std::llround(u), n1, n2)) {
      t.p_value = std::clamp(2 * *sf, 0.0, 1.0);
      return t;
    }
    t.method = UMethod::kAsymptotic;
  }
  const double n = double(n1 + n2);
  const double mu = double(n1) * double(n2) / 2;
  const double s = std::sqrt(double(n1) * double(n2) / 12 * ((n + 1) - tie_term / (n * (n - 1))));
  // The continuity correction moves U half a step toward the mean; the
  // survival function is always the one taken (u >= mu), so it subtracts.
  const double num = u - mu - 0.5;
  if (!(s > 0)) {
    // Every value equal: SciPy's z is -inf, its p 2 clipped to 1.
    t.p_value = 1;
    return t;
  }
  const double z = num / s;
  t.p_value = std::clamp(std::erfc(z / std::sqrt(2.0)), 0.0, 1.0);  // 2 * norm.sf(z)
  return t;
}

}  // namespace ki::stats
