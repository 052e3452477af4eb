// The reference GQA paged decode: simple and obviously correct, fp32
// accumulation, no tensor cores, no shared tiles. One block per (sequence,
// query head), one thread per head dimension; two passes over the sequence
// (max, then sum and weighted V), each logit a block-wide sum. Slow on
// purpose: it exists to check the fast kernel on the GPU (the CPU fp64
// reference in src/harness checks this one).
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cmath>

#include "gqa_paged_decode/launch.h"

namespace ki::gqa {
namespace {

__device__ float BlockSum(float x, float* scratch) {
  for (int o = 16; o > 0; o >>= 1) x += __shfl_xor_sync(0xffffffffu, x, o);
  const int warp = threadIdx.x >> 5;
  __syncthreads();  // scratch is reused by consecutive calls
  if ((threadIdx.x & 31) == 0) scratch[warp] = x;
  __syncthreads();
  float total = 0.f;
  for (int w = 0; w < kHeadDim / 32; ++w) total += scratch[w];  // same order in every thread
  return total;
}

__global__ void __launch_bounds__(kHeadDim) GqaDecodeReference(const __nv_bfloat16* q, const __nv_bfloat16* k,
                                                               const __nv_bfloat16* v, const int32_t* indptr,
                                                               const int32_t* indices, float sm_scale,
                                                               __nv_bfloat16* out, float* lse) {
  __shared__ float scratch[kHeadDim / 32];
  const int b = blockIdx.x / kNumQoHeads;
  const int head = blockIdx.x % kNumQoHeads;
  const int kvh = head / kGroup;
  const int d = threadIdx.x;
  const size_t row = static_cast<size_t>(b) * kNumQoHeads + head;
  const float qd = __bfloat162float(q[row * kHeadDim + d]);
  const int start = indptr[b];
  const int end = indptr[b + 1];

  float mx = -INFINITY;
  for (int t = start; t < end; ++t) {
    const size_t kv = (static_cast<size_t>(indices[t]) * kNumKvHeads + kvh) * kHeadDim + d;
    mx = fmaxf(mx, BlockSum(qd * __bfloat162float(k[kv]), scratch) * sm_scale);
  }
  float sum = 0.f, acc = 0.f;
  for (int t = start; t < end; ++t) {
    const size_t kv = (static_cast<size_t>(indices[t]) * kNumKvHeads + kvh) * kHeadDim + d;
    const float e = expf(BlockSum(qd * __bfloat162float(k[kv]), scratch) * sm_scale - mx);
    sum += e;
    acc += e * __bfloat162float(v[kv]);
  }
  if (end <= start) {
    out[row * kHeadDim + d] = __float2bfloat16(0.f);
    if (d == 0) lse[row] = -INFINITY;
    return;
  }
  out[row * kHeadDim + d] = __float2bfloat16(acc / sum);
  if (d == 0) lse[row] = (mx + logf(sum)) * 1.4426950408889634f;  // natural log -> base 2
}

}  // namespace

int32_t LaunchReference(const Args& args, void* stream) {
  if (args.batch == 0) return KI_OK;
  const unsigned blocks = static_cast<unsigned>(args.batch * kNumQoHeads);
  GqaDecodeReference<<<blocks, kHeadDim, 0, static_cast<cudaStream_t>(stream)>>>(
      static_cast<const __nv_bfloat16*>(args.q), static_cast<const __nv_bfloat16*>(args.k_cache),
      static_cast<const __nv_bfloat16*>(args.v_cache), args.kv_indptr, args.kv_indices, args.sm_scale,
      static_cast<__nv_bfloat16*>(args.out), args.lse);
  return cudaGetLastError() == cudaSuccess ? KI_OK : KI_ERR_LAUNCH;
}

}  // namespace ki::gqa
