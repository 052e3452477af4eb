// Prints 1,000 generated pairs of samples and ki's Mann-Whitney U test of
// each, one JSON object a line ({"x", "y", "u1", "p", "method"}), for
// scipy_compare.py to recompute with scipy.stats.mannwhitneyu. Sizes run
// from 1 to 200 (both sides of SciPy's exact/asymptotic rule), a third of
// the pairs are whole numbers from a short range (many ties), and half of
// the pairs have a shift between x and y (small p-values as well as large).
#include <cstdio>
#include <string>

#include "ki/stats.h"
#include "stats/generate.h"

namespace {

std::string List(const std::vector<double>& v) {
  std::string s = "[";
  char buf[40];
  for (size_t i = 0; i < v.size(); ++i) {
    std::snprintf(buf, sizeof buf, "%s%.17g", i ? "," : "", v[i]);
    s += buf;
  }
  return s + "]";
}

}  // namespace

int main() {
  for (int i = 0; i < 1000; ++i) {
    ki::stats::testing::Generator g(77, uint64_t(i));
    auto size = [&]() -> size_t {
      switch (g.Below(4)) {
        case 0: return 1 + g.Below(8);    // exact territory
        case 1: return 9 + g.Below(22);   // asymptotic, small
        case 2: return 1 + g.Below(40);
        default: return 100 + g.Below(101);  // ki's run sizes
      }
    };
    const size_t n1 = size(), n2 = size();
    const int kind = int(g.Below(3));
    const double shift = g.Below(2) ? 0.3 * g.Uniform() : 0;
    auto draw = [&](size_t n, double mu) {
      std::vector<double> v(n);
      for (double& x : v) {
        if (kind == 0) x = std::exp(mu + 0.1 * g.Normal());               // continuous
        else if (kind == 1) x = double(g.Below(6)) + (mu > 0 ? 1 : 0);    // ties
        else x = std::round(100 * std::exp(mu + 0.05 * g.Normal())) / 10;  // some ties
      }
      return v;
    };
    auto x = draw(n1, 0), y = draw(n2, shift);
    auto t = ki::stats::MannWhitneyU(x, y);
    if (!t) return 1;
    std::printf("{\"x\":%s,\"y\":%s,\"u1\":%.17g,\"p\":%.17g,\"method\":\"%s\"}\n", List(x).c_str(),
                List(y).c_str(), t->u1, t->p_value, std::string(ki::stats::UMethodName(t->method)).c_str());
  }
  return 0;
}
