// Correctness as flashinfer-bench judges it.
#include <cmath>

#include "ki/harness.h"

namespace ki::harness {

TensorCheck CompareTensors(const HostTensor& got, const HostTensor& ref, const Tolerance& tol) {
  TensorCheck c;
  c.name = ref.name;
  c.dtype_ok = got.dtype == ref.dtype;
  c.shape_ok = got.shape == ref.shape && got.bytes.size() == ref.bytes.size();
  c.numel = ref.numel();
  if (!c.dtype_ok || !c.shape_ok) {
    c.mismatched = c.numel;
    return c;
  }
  const size_t es = DtypeSize(ref.dtype);
  int64_t matched = 0;
  for (int64_t i = 0; i < c.numel; ++i) {
    const double a = ElementAsDouble(got.dtype, got.bytes.data() + i * es);
    const double b = ElementAsDouble(ref.dtype, ref.bytes.data() + i * es);
    if (!std::isfinite(a) || !std::isfinite(b)) {
      // Equal infinities match (an empty sequence's lse is -inf on both
      // sides); NaN never matches, and a finite-vs-infinite pair fails.
      if (std::isinf(a) && std::isinf(b) && a == b) {
        ++matched;
      } else {
        if (!std::isfinite(a)) ++c.nonfinite;
        ++c.mismatched;
        c.max_abs_error = INFINITY;
        c.max_rel_error = INFINITY;
      }
      continue;
    }
    const double abs_err = std::fabs(a - b);
    const double rel_err = abs_err / (std::fabs(b) + 1e-8);
    if (abs_err > c.max_abs_error) c.max_abs_error = abs_err;
    if (rel_err > c.max_rel_error) c.max_rel_error = rel_err;
    if (abs_err <= tol.atol || rel_err <= tol.rtol) ++matched;
    else ++c.mismatched;
  }
  c.matched_ratio = c.numel > 0 ? static_cast<double>(matched) / static_cast<double>(c.numel) : 1.0;
  return c;
}

}  // namespace ki::harness
