// The fp64 CPU reference of gqa_paged_decode_h32_kv4_d128_ps1, behind the
// same ABI as every kernel. It follows the definition's reference code: for
// each sequence and query head, logits = q . k * sm_scale over the
// sequence's pages, lse = logsumexp(logits) / ln 2, output = softmax . v;
// an empty sequence gives output 0 and lse -inf.
#include <cmath>
#include <cstring>
#include <vector>

#include "ki/gqa_paged_decode.h"
#include "ki/harness.h"

namespace ki::harness {
namespace {

using namespace ki::gqa;

double Bf16At(const void* base, size_t i) {
  uint16_t b;
  std::memcpy(&b, static_cast<const uint8_t*>(base) + 2 * i, 2);
  return Bf16ToFloat(b);
}

int32_t Run(const ki_call* call) {
  Args a;
  const int32_t rc = Unpack(call, KI_DEVICE_CPU, &a);
  if (rc != KI_OK) return rc;
  auto* out = static_cast<uint16_t*>(a.out);
  std::vector<double> logits, acc(kHeadDim);
  for (int64_t b = 0; b < a.batch; ++b) {
    const int64_t start = a.kv_indptr[b], end = a.kv_indptr[b + 1];
    if (start < 0 || end > a.num_kv_indices || end < start)
      return detail::Fail(call, KI_ERR_INVALID_ARGUMENT, "kv_indptr out of range", "kv_indptr");
    for (int h = 0; h < kNumQoHeads; ++h) {
      const size_t row = static_cast<size_t>(b) * kNumQoHeads + h;
      if (end == start) {
        for (int d = 0; d < kHeadDim; ++d) out[row * kHeadDim + d] = FloatToBf16(0.f);
        a.lse[row] = -INFINITY;
        continue;
      }
      const int kvh = h / kGroup;
      logits.assign(static_cast<size_t>(end - start), 0.0);
      double mx = -INFINITY;
      for (int64_t t = start; t < end; ++t) {
        const int64_t page = a.kv_indices[t];
        if (page < 0 || page >= a.num_pages)
          return detail::Fail(call, KI_ERR_INVALID_ARGUMENT, "page index out of range", "kv_indices");
        const size_t kv = (static_cast<size_t>(page) * kNumKvHeads + kvh) * kHeadDim;
        double dot = 0;
        for (int d = 0; d < kHeadDim; ++d) dot += Bf16At(a.q, row * kHeadDim + d) * Bf16At(a.k_cache, kv + d);
        logits[t - start] = dot * static_cast<double>(a.sm_scale);
        mx = std::max(mx, logits[t - start]);
      }
      double sum = 0;
      std::fill(acc.begin(), acc.end(), 0.0);
      for (int64_t t = start; t < end; ++t) {
        const double e = std::exp(logits[t - start] - mx);
        sum += e;
        const size_t kv = (static_cast<size_t>(a.kv_indices[t]) * kNumKvHeads + kvh) * kHeadDim;
        for (int d = 0; d < kHeadDim; ++d) acc[d] += e * Bf16At(a.v_cache, kv + d);
      }
      for (int d = 0; d < kHeadDim; ++d) out[row * kHeadDim + d] = FloatToBf16(static_cast<float>(acc[d] / sum));
      a.lse[row] = static_cast<float>((mx + std::log(sum)) / std::log(2.0));
    }
  }
  return KI_OK;
}

const ki_kernel kCpuReference = {
    {KI_ABI_VERSION, KI_DEVICE_CPU, "ki.gqa_paged_decode.cpu_reference", kDefinitionName,
     "fp64 CPU reference following the definition's reference code"},
    nullptr,
    Run,
};

}  // namespace

const ki_kernel* GqaPagedDecodeCpuReference() { return &kCpuReference; }

}  // namespace ki::harness
