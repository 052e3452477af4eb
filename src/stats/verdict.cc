// The verdicts of `ki diff` (is B different from A) and `ki rerun` (did the
// number hold), in numbers and in words.
#include <cmath>
#include <cstdio>

#include "ki/stats.h"

namespace ki::stats {
namespace {

std::string Percent(double ratio) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f%%", std::fabs(ratio - 1) * 100);
  return buf;
}

std::string Fixed(double v, int digits = 3) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

std::string PValue(double p) {
  char buf[32];
  if (p < 1e-4) std::snprintf(buf, sizeof buf, "%.1e", p);
  else std::snprintf(buf, sizeof buf, "%.4f", p);
  return buf;
}

}  // namespace

std::string_view VerdictName(Verdict v) {
  switch (v) {
    case Verdict::kFaster: return "faster";
    case Verdict::kSlower: return "slower";
    case Verdict::kNoDifference: return "no-difference";
    case Verdict::kBelowNoiseFloor: return "below-noise-floor";
    case Verdict::kUntested: return "untested";
  }
  return "?";
}

std::string_view ReproductionName(Reproduction r) {
  switch (r) {
    case Reproduction::kReproduced: return "reproduced";
    case Reproduction::kNotReproduced: return "not-reproduced";
    case Reproduction::kInconclusive: return "inconclusive";
  }
  return "?";
}

std::optional<Comparison> CompareSamples(std::span<const double> a, std::span<const double> b,
                                         const CompareOptions& opts) {
  auto interval = BootstrapMedianRatio(a, b, opts.bootstrap);
  auto test = MannWhitneyU(a, b);
  if (!interval || !test) return std::nullopt;
  Comparison c;
  c.ratio = interval->ratio;
  c.interval = interval;
  c.test = test;
  c.n_a = a.size();
  c.n_b = b.size();
  c.alpha = opts.alpha;
  c.noise_floor = opts.noise_floor;
  const std::string p = "p = " + PValue(test->p_value);
  const std::string ci = "95% interval " + Fixed(interval->low) + "-" + Fixed(interval->high);
  if (!(test->p_value < opts.alpha)) {
    c.verdict = Verdict::kNoDifference;
    c.words = "no difference ki can detect at alpha " + Fixed(opts.alpha, 2) + " (" + p + ", B/A " +
              Fixed(c.ratio) + ", " + ci + ")";
  } else if (std::fabs(c.ratio - 1) < opts.noise_floor) {
    c.verdict = Verdict::kBelowNoiseFloor;
    c.words = "a difference of " + Percent(c.ratio) + ", below the " + Percent(1 + opts.noise_floor) +
              " noise floor (" + p + ", " + ci + ")";
  } else {
    c.verdict = c.ratio < 1 ? Verdict::kFaster : Verdict::kSlower;
    c.words = "B is " + std::string(c.ratio < 1 ? "faster" : "slower") + " by " + Percent(c.ratio) + " (B/A " +
              Fixed(c.ratio) + ", " + ci + ", " + p + ")";
  }
  return c;
}

Comparison CompareSummaries(const Summary& a, const Summary& b, const CompareOptions& opts) {
  Comparison c;
  c.verdict = Verdict::kUntested;
  c.alpha = opts.alpha;
  c.noise_floor = opts.noise_floor;
  c.ratio = a.value > 0 ? b.value / a.value : NAN;
  if (a.interval95 && b.interval95) {
    const auto [alo, ahi] = *a.interval95;
    const auto [blo, bhi] = *b.interval95;
    c.intervals_overlap = !(ahi < blo || bhi < alo);
    c.words = std::string("cannot test without raw samples; the runs' 95% intervals ") +
              (*c.intervals_overlap ? "overlap" : "do not overlap");
  } else {
    c.words = "cannot test without raw samples, and " +
              std::string(!a.interval95 && !b.interval95 ? "neither run records" : !a.interval95 ? "A records" : "B records") +
              (!a.interval95 && !b.interval95 ? " a 95% interval" : " no 95% interval");
  }
  return c;
}

ReproductionVerdict JudgeReproduction(const ReproductionInput& in) {
  ReproductionVerdict v;
  v.tolerance = in.tolerance;
  const std::string band = "within " + Percent(1 + in.tolerance);
  if (in.original_value && in.fresh_value && *in.original_value > 0) v.ratio = *in.fresh_value / *in.original_value;
  if (!in.original_passed || !in.fresh_passed) {
    v.test = "status";
    v.outcome = Reproduction::kNotReproduced;
    v.words = std::string(!in.fresh_passed ? "the re-run" : "the original") + " did not pass";
    return v;
  }
  const double lo_band = 1 - in.tolerance, hi_band = 1 + in.tolerance;
  if (!in.original_samples.empty() && !in.fresh_samples.empty()) {
    auto ci = BootstrapMedianRatio(in.original_samples, in.fresh_samples, in.bootstrap);
    if (ci) {
      v.test = "bootstrap-median-ratio";
      v.interval = ci;
      v.u_test = MannWhitneyU(in.original_samples, in.fresh_samples);
      v.ratio = ci->ratio;
      const std::string what = "median ratio " + Fixed(ci->ratio) + ", 95% interval " + Fixed(ci->low) + "-" +
                               Fixed(ci->high);
      if (ci->low >= lo_band && ci->high <= hi_band) {
        v.outcome = Reproduction::kReproduced;
        v.words = "reproduced: " + what + " lies " + band;
      } else if (ci->high < lo_band || ci->low > hi_band) {
        v.outcome = Reproduction::kNotReproduced;
        v.words = "not reproduced: " + what + " lies outside " + band.substr(7);
      } else {
        v.outcome = Reproduction::kInconclusive;
        v.words = "inconclusive: " + what + " straddles the edge of " + band.substr(7);
      }
      return v;
    }
  }
  v.test = "value-ratio";
  if (!v.ratio) {
    v.outcome = Reproduction::kInconclusive;
    v.words = "inconclusive: no latency to compare";
    return v;
  }
  const bool inside = *v.ratio >= lo_band && *v.ratio <= hi_band;
  v.outcome = inside ? Reproduction::kReproduced : Reproduction::kNotReproduced;
  v.words = std::string(inside ? "reproduced" : "not reproduced") + ": ratio " + Fixed(*v.ratio) + " (no samples of the original: the recorded value)" +
            (inside ? " lies " + band : " lies outside " + band.substr(7));
  return v;
}

}  // namespace ki::stats
