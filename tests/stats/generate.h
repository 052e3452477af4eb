// Generated data for the statistics tests: normal and log-normal samples
// from ki's counter-based generator, so every run of a test sees the same
// numbers.
#pragma once

#include <cmath>
#include <cstdint>
#include <vector>

#include "ki/counter_rng.h"

namespace ki::stats::testing {

class Generator {
 public:
  explicit Generator(uint64_t seed, uint64_t stream = 0) : key_(rng::StreamKey(seed, stream)) {}
  // Uniform in (0, 1): 53 random bits, never 0.
  double Uniform() { return (double(rng::Bits(key_, next_++) >> 11) + 0.5) * 0x1.0p-53; }
  // Standard normal, by Box-Muller.
  double Normal() {
    const double u = Uniform(), v = Uniform();
    return std::sqrt(-2 * std::log(u)) * std::cos(2 * M_PI * v);
  }
  uint64_t Below(uint64_t n) { return rng::Below(rng::Bits(key_, next_++), n); }
  // n values exp(mu + sigma * N(0, 1)): median exp(mu).
  std::vector<double> LogNormal(size_t n, double mu, double sigma) {
    std::vector<double> v(n);
    for (double& x : v) x = std::exp(mu + sigma * Normal());
    return v;
  }

 private:
  uint64_t key_;
  uint64_t next_ = 0;
};

}  // namespace ki::stats::testing
