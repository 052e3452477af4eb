// Fast GQA paged decode for sm_90a / sm_100a (any sm_80+ part runs it; cluster
// mode needs sm_90+).
//
// Four ways to run (FastMode): v1 ("legacy", below), v2 split and v2 cluster
// (further down), chosen by PlanFast from batch and total tokens, and v3
// flat (stream-K, last), which only --tune mode=4 selects (measured slower,
// see bench/results/gqa-decode-h200-2026-11-29-v3.md). Design of v1
// (see docs/kernel-abi.md for the calling convention):
// - One block per (work item, KV head). A work item is one chunk of one
//   sequence; a sequence of len tokens gets n = max(1, ceil(len / chunk))
//   balanced chunks. The host knows only batch and the total token count
//   (num_kv_indices), so it launches an upper bound of work items
//   (ceil(total / chunk) + batch) and each block finds its (sequence, chunk)
//   by scanning kv_indptr; surplus blocks exit at once. No host reads of
//   device data, no memset, no allocation: the call is graph-capturable.
// - The 8 query heads of a KV head share every K/V tile, read once from
//   memory. Each of the 4 warps streams its own 16-token tiles through a
//   private cp.async pipeline (16-byte copies, STAGES deep), with the page
//   indices of the tile after next already in registers.
// - Tensor cores with the 8 heads as the narrow (n = 8) dimension:
//   S^T[16 tokens x 8 heads] = K[16 x 128] * Q^T, and
//   O^T[128 x 8] += V^T[128 x 16] * P^T[16 x 8], via mma.m16n8k16 (bf16 in,
//   fp32 accumulate). P^T's B fragment comes from S^T's accumulator
//   fragment by an in-register transpose (movmatrix), so P never touches
//   shared memory. Shared tiles are XOR-swizzled per 16-byte chunk so
//   ldmatrix is free of bank conflicts.
// - Base-2 online softmax: logits are scaled by sm_scale * log2(e) once, and
//   exp2 is a single ex2.approx instruction.
// - Split-KV merge in the same launch: a block of a split sequence writes its
//   normalised partial output and lse to the workspace, fences, and bumps the
//   sequence's counter; the block that sees the count complete merges all
//   partials and resets the counter to zero, so every counter is zero again
//   after every launch (the ABI's workspace contract: no memset between calls).
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <mutex>

#include "gqa_paged_decode/launch.h"

namespace ki::gqa {
namespace {

constexpr int kWarps = 4;
constexpr int kThreads = kWarps * 32;
constexpr int kTile = 16;                          // tokens per warp tile
constexpr int kRowBytes = kHeadDim * 2;            // one token of one KV head: 256 B
constexpr int kTileBytes = kTile * kRowBytes;      // 4 KiB
constexpr int kMergeStride = kHeadDim + 4;         // floats per head row in the merge buffer (bank padding)
constexpr float kLog2e = 1.4426950408889634f;

struct Params {
  const __nv_bfloat16* q;
  const __nv_bfloat16* k;
  const __nv_bfloat16* v;
  const int32_t* indptr;
  const int32_t* indices;
  __nv_bfloat16* out;
  float* lse;
  float* part_o;      // [max_work * 4][8][128]
  float* part_lse;    // [max_work * 4][8]
  int32_t* counters;  // [batch * 4]
  int batch;
  int chunk;
  float scale_log2;
};

__device__ __forceinline__ uint32_t SmemAddr(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

__device__ __forceinline__ void CpAsync16(uint32_t dst, const void* src, int src_bytes) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(src_bytes));
}
__device__ __forceinline__ void CpAsyncCommit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N>
__device__ __forceinline__ void CpAsyncWait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
}

__device__ __forceinline__ void LdMatrixX4(uint32_t (&r)[4], uint32_t addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}
__device__ __forceinline__ void LdMatrixX4Trans(uint32_t (&r)[4], uint32_t addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}
__device__ __forceinline__ uint32_t MovMatrixTrans(uint32_t x) {
  uint32_t y;
  asm volatile("movmatrix.sync.aligned.m8n8.trans.b16 %0, %1;\n" : "=r"(y) : "r"(x));
  return y;
}
// D += A * B, m16n8k16, bf16 inputs, fp32 accumulators.
__device__ __forceinline__ void Mma16816(float (&d)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%0,%1,%2,%3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}
// Release/acquire fence at GPU scope: orders this thread's partial writes
// before the arrival counter (writer) and the counter before the partial
// reads (last block). Cheaper than __threadfence(), which is sequentially
// consistent.
__device__ __forceinline__ void FenceAcqRel() { asm volatile("fence.acq_rel.gpu;\n" ::: "memory"); }
__device__ __forceinline__ float Exp2(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
  return y;
}
__device__ __forceinline__ uint32_t PackBf16(float lo, float hi) {
  __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
  return *reinterpret_cast<uint32_t*>(&v);
}
// Byte offset of 16-byte chunk `chunk` of row `row` in a swizzled tile.
__device__ __forceinline__ uint32_t Swz(int row, int chunk) {
  return static_cast<uint32_t>(row * kRowBytes + ((chunk ^ (row & 7)) << 4));
}

template <int STAGES>
__global__ void __launch_bounds__(kThreads) GqaDecodeV1(Params p) {
  extern __shared__ __align__(128) uint8_t smem[];
  __shared__ int s_scan[kWarps];
  __shared__ int s_work[4];  // sequence, chunk, chunks of the sequence, first work item of the sequence
  __shared__ int s_last;

  const int tid = threadIdx.x;
  const int lane = tid & 31;
  const int warp = tid >> 5;
  const int work = blockIdx.x;
  const int kvh = blockIdx.y;
  const int g = lane >> 2;  // accumulator row group
  const int c = lane & 3;   // accumulator column pair
  constexpr unsigned kFull = 0xffffffffu;

  // ---- which (sequence, chunk) is this block? ----
  if (tid == 0) s_work[0] = -1;
  int base_work = 0;
  for (int base = 0; base < p.batch; base += kThreads) {
    const int i = base + tid;
    int cnt = 0;
    if (i < p.batch) {
      const int len = __ldg(p.indptr + i + 1) - __ldg(p.indptr + i);
      cnt = len <= 0 ? 1 : (len + p.chunk - 1) / p.chunk;
    }
    int x = cnt;
#pragma unroll
    for (int o = 1; o < 32; o <<= 1) {
      const int y = __shfl_up_sync(kFull, x, o);
      if (lane >= o) x += y;
    }
    if (lane == 31) s_scan[warp] = x;
    __syncthreads();
    int warp_off = 0, total = 0;
#pragma unroll
    for (int k = 0; k < kWarps; ++k) {
      const int t = s_scan[k];
      warp_off += k < warp ? t : 0;
      total += t;
    }
    const int incl = base_work + warp_off + x;
    const int excl = incl - cnt;
    if (i < p.batch && work >= excl && work < incl) {
      s_work[0] = i;
      s_work[1] = work - excl;
      s_work[2] = cnt;
      s_work[3] = excl;
    }
    __syncthreads();
    base_work += total;
    if (s_work[0] >= 0 || work < base_work) break;
  }
  const int b = s_work[0];
  if (b < 0) return;  // surplus block: uniform exit
  const int chunk_idx = s_work[1];
  const int nchunks = s_work[2];
  const int first_work = s_work[3];

  const int seq_start = __ldg(p.indptr + b);
  const int len = max(0, __ldg(p.indptr + b + 1) - seq_start);
  const int c_begin = static_cast<int>(static_cast<long long>(len) * chunk_idx / nchunks);
  const int c_end = static_cast<int>(static_cast<long long>(len) * (chunk_idx + 1) / nchunks);
  const int ntok = c_end - c_begin;
  const int ntiles = (ntok + kTile - 1) / kTile;
  const int32_t* idx = p.indices + seq_start + c_begin;
  const int my_tiles = ntiles > warp ? (ntiles - warp + kWarps - 1) / kWarps : 0;

  // Page index of row (lane % 16) of this warp's k-th tile, or -1.
  auto load_index = [&](int k) -> int {
    const int t = (warp + k * kWarps) * kTile + (lane & 15);
    return (k < my_tiles && t < ntok) ? __ldg(idx + t) : -1;
  };

  int pidx[STAGES];
#pragma unroll
  for (int s = 0; s < STAGES; ++s) pidx[s] = load_index(s);

  // Q^T as B fragments: b0 = Q[head g][16ks + 2c .. +1], b1 = the same + 8.
  uint32_t qf[kHeadDim / 16][2];
  {
    const uint32_t* qrow = reinterpret_cast<const uint32_t*>(
        p.q + (static_cast<size_t>(b) * kNumQoHeads + kvh * kGroup + g) * kHeadDim + 2 * c);
#pragma unroll
    for (int ks = 0; ks < kHeadDim / 16; ++ks) {
      qf[ks][0] = __ldg(qrow + ks * 8);
      qf[ks][1] = __ldg(qrow + ks * 8 + 4);
    }
  }

  uint8_t* wsm = smem + warp * (STAGES * 2 * kTileBytes);
  const uint32_t wsm_addr = SmemAddr(wsm);
  const __nv_bfloat16* kbase = p.k + kvh * kHeadDim;
  const __nv_bfloat16* vbase = p.v + kvh * kHeadDim;

  // Copies the warp's tile whose row pages are in `page` (row = lane % 16)
  // into stage `stage`. Rows past the chunk are zero-filled, so their
  // (zero) probabilities never meet garbage.
  auto issue = [&](int stage, int page) {
    const uint32_t kdst = wsm_addr + stage * 2 * kTileBytes;
    const uint32_t vdst = kdst + kTileBytes;
    const int cc = lane & 15;
#pragma unroll
    for (int i = 0; i < kTile / 2; ++i) {
      const int r = (lane >> 4) + 2 * i;
      const int pg = __shfl_sync(kFull, page, r);
      const bool valid = pg >= 0;
      const size_t off = valid ? static_cast<size_t>(pg) * (kNumKvHeads * kHeadDim) + cc * 8 : 0;
      CpAsync16(kdst + Swz(r, cc), kbase + off, valid ? 16 : 0);
      CpAsync16(vdst + Swz(r, cc), vbase + off, valid ? 16 : 0);
    }
  };

#pragma unroll
  for (int s = 0; s < STAGES; ++s) {
    if (s < my_tiles) issue(s, pidx[s]);
    CpAsyncCommit();
  }
  int pnext = load_index(STAGES);

  float m0 = -INFINITY, m1 = -INFINITY;  // running max of heads 2c, 2c+1 (log2 units)
  float l0 = 0.f, l1 = 0.f;              // this thread's share of the running sums
  float acc[kHeadDim / 16][4];
#pragma unroll
  for (int mt = 0; mt < kHeadDim / 16; ++mt) acc[mt][0] = acc[mt][1] = acc[mt][2] = acc[mt][3] = 0.f;

  const int krow = (lane & 7) | (((lane >> 3) & 1) << 3);  // ldmatrix row for K (non-transposed)
  const int khalf = lane >> 4;
  const int vrow = (lane & 7) | ((lane >> 4) << 3);     // ldmatrix row for V (transposed)
  const int vhalf = (lane >> 3) & 1;

  for (int k = 0; k < my_tiles; ++k) {
    const int stage = k % STAGES;
    CpAsyncWait<STAGES - 1>();
    __syncwarp();
    const uint32_t ks_addr = wsm_addr + stage * 2 * kTileBytes;
    const uint32_t vs_addr = ks_addr + kTileBytes;

    // S^T = K Q^T: rows = tokens, columns = heads.
    float s[4] = {0.f, 0.f, 0.f, 0.f};
#pragma unroll
    for (int ks = 0; ks < kHeadDim / 16; ++ks) {
      uint32_t a[4];
      LdMatrixX4(a, ks_addr + Swz(krow, 2 * ks + khalf));
      Mma16816(s, a, qf[ks][0], qf[ks][1]);
    }
    const int t0 = (warp + k * kWarps) * kTile;
    const bool lo_ok = t0 + g < ntok;
    const bool hi_ok = t0 + g + 8 < ntok;
    s[0] = lo_ok ? s[0] * p.scale_log2 : -INFINITY;
    s[1] = lo_ok ? s[1] * p.scale_log2 : -INFINITY;
    s[2] = hi_ok ? s[2] * p.scale_log2 : -INFINITY;
    s[3] = hi_ok ? s[3] * p.scale_log2 : -INFINITY;
    float mx0 = fmaxf(s[0], s[2]);
    float mx1 = fmaxf(s[1], s[3]);
#pragma unroll
    for (int o = 4; o < 32; o <<= 1) {
      mx0 = fmaxf(mx0, __shfl_xor_sync(kFull, mx0, o));
      mx1 = fmaxf(mx1, __shfl_xor_sync(kFull, mx1, o));
    }
    // Row 0 of every tile is a real token, so mx0 and mx1 are finite.
    const float n0 = fmaxf(m0, mx0), n1 = fmaxf(m1, mx1);
    const float al0 = Exp2(m0 - n0), al1 = Exp2(m1 - n1);
    const float p0 = Exp2(s[0] - n0), p1 = Exp2(s[1] - n1);
    const float p2 = Exp2(s[2] - n0), p3 = Exp2(s[3] - n1);
    l0 = l0 * al0 + p0 + p2;
    l1 = l1 * al1 + p1 + p3;
    m0 = n0;
    m1 = n1;
#pragma unroll
    for (int mt = 0; mt < kHeadDim / 16; ++mt) {
      acc[mt][0] *= al0;
      acc[mt][1] *= al1;
      acc[mt][2] *= al0;
      acc[mt][3] *= al1;
    }
    // P^T as the B fragment: transpose each 8x8 bf16 quarter in registers.
    const uint32_t b0 = MovMatrixTrans(PackBf16(p0, p1));
    const uint32_t b1 = MovMatrixTrans(PackBf16(p2, p3));
#pragma unroll
    for (int mt = 0; mt < kHeadDim / 16; ++mt) {
      uint32_t a[4];
      LdMatrixX4Trans(a, vs_addr + Swz(vrow, 2 * mt + vhalf));
      Mma16816(acc[mt], a, b0, b1);
    }
    __syncwarp();
    if (k + STAGES < my_tiles) issue(stage, pnext);
    CpAsyncCommit();
    pnext = load_index(k + STAGES + 1);
  }
  CpAsyncWait<0>();
#pragma unroll
  for (int o = 4; o < 32; o <<= 1) {
    l0 += __shfl_xor_sync(kFull, l0, o);
    l1 += __shfl_xor_sync(kFull, l1, o);
  }

  // ---- merge the 4 warps (each writes into its own pipeline region) ----
  float* mo = reinterpret_cast<float*>(wsm);  // [8 heads][kMergeStride]
  float* mm = mo + kGroup * kMergeStride;     // [8] max
  float* ml = mm + kGroup;                    // [8] sum
  __syncwarp();
#pragma unroll
  for (int mt = 0; mt < kHeadDim / 16; ++mt) {
    const int d = mt * 16 + g;
    mo[(2 * c) * kMergeStride + d] = acc[mt][0];
    mo[(2 * c + 1) * kMergeStride + d] = acc[mt][1];
    mo[(2 * c) * kMergeStride + d + 8] = acc[mt][2];
    mo[(2 * c + 1) * kMergeStride + d + 8] = acc[mt][3];
  }
  if (g == 0) {
    mm[2 * c] = m0;
    mm[2 * c + 1] = m1;
    ml[2 * c] = l0;
    ml[2 * c + 1] = l1;
  }
  __syncthreads();

  const int hd = tid >> 4;         // head within the group
  const int d0 = (tid & 15) * 8;   // 8 dimensions per thread
  constexpr int kRegion = STAGES * 2 * kTileBytes / 4;  // floats per warp region
  const float* all = reinterpret_cast<const float*>(smem);
  float M = -INFINITY;
#pragma unroll
  for (int w = 0; w < kWarps; ++w) M = fmaxf(M, all[w * kRegion + kGroup * kMergeStride + hd]);
  float L = 0.f;
  float o[8] = {0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f};
#pragma unroll
  for (int w = 0; w < kWarps; ++w) {
    const float* reg = all + w * kRegion;
    const float mw = reg[kGroup * kMergeStride + hd];
    if (mw == -INFINITY) continue;
    const float f = Exp2(mw - M);
    L += f * reg[kGroup * kMergeStride + kGroup + hd];
    const float4 x0 = *reinterpret_cast<const float4*>(reg + hd * kMergeStride + d0);
    const float4 x1 = *reinterpret_cast<const float4*>(reg + hd * kMergeStride + d0 + 4);
    o[0] += f * x0.x; o[1] += f * x0.y; o[2] += f * x0.z; o[3] += f * x0.w;
    o[4] += f * x1.x; o[5] += f * x1.y; o[6] += f * x1.z; o[7] += f * x1.w;
  }
  const float inv = L > 0.f ? 1.f / L : 0.f;
  const float my_lse = L > 0.f ? M + __log2f(L) : -INFINITY;
  const size_t row = static_cast<size_t>(b) * kNumQoHeads + kvh * kGroup + hd;

  auto store_out = [&](const float (&v)[8], float scale, float lse_value) {
    uint4 packed;
    packed.x = PackBf16(v[0] * scale, v[1] * scale);
    packed.y = PackBf16(v[2] * scale, v[3] * scale);
    packed.z = PackBf16(v[4] * scale, v[5] * scale);
    packed.w = PackBf16(v[6] * scale, v[7] * scale);
    *reinterpret_cast<uint4*>(p.out + row * kHeadDim + d0) = packed;
    if ((tid & 15) == 0) p.lse[row] = lse_value;
  };

  if (nchunks == 1) {
    store_out(o, inv, my_lse);
    return;
  }

  // ---- split sequence: publish the partial, the last block merges ----
  {
    const size_t slot = static_cast<size_t>(work) * kNumKvHeads + kvh;
    float* po = p.part_o + (slot * kGroup + hd) * kHeadDim + d0;
    *reinterpret_cast<float4*>(po) = make_float4(o[0] * inv, o[1] * inv, o[2] * inv, o[3] * inv);
    *reinterpret_cast<float4*>(po + 4) = make_float4(o[4] * inv, o[5] * inv, o[6] * inv, o[7] * inv);
    if ((tid & 15) == 0) p.part_lse[slot * kGroup + hd] = my_lse;
  }
  __threadfence();
  __syncthreads();
  if (tid == 0) {
    const int prev = atomicAdd(p.counters + b * kNumKvHeads + kvh, 1);
    s_last = prev == nchunks - 1;
  }
  __syncthreads();
  if (!s_last) return;
  __threadfence();

  float Mp = -INFINITY;
  for (int j = 0; j < nchunks; ++j) {
    const size_t slot = static_cast<size_t>(first_work + j) * kNumKvHeads + kvh;
    Mp = fmaxf(Mp, __ldcg(p.part_lse + slot * kGroup + hd));
  }
  float Lp = 0.f;
  float r[8] = {0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f};
#pragma unroll 4
  for (int j = 0; j < nchunks; ++j) {
    const size_t slot = static_cast<size_t>(first_work + j) * kNumKvHeads + kvh;
    const float lj = __ldcg(p.part_lse + slot * kGroup + hd);
    const float f = lj == -INFINITY ? 0.f : Exp2(lj - Mp);
    const float4* src = reinterpret_cast<const float4*>(p.part_o + (slot * kGroup + hd) * kHeadDim + d0);
    const float4 x0 = __ldcg(src);
    const float4 x1 = __ldcg(src + 1);
    Lp += f;
    r[0] += f * x0.x; r[1] += f * x0.y; r[2] += f * x0.z; r[3] += f * x0.w;
    r[4] += f * x1.x; r[5] += f * x1.y; r[6] += f * x1.z; r[7] += f * x1.w;
  }
  store_out(r, Lp > 0.f ? 1.f / Lp : 0.f, Lp > 0.f ? Mp + __log2f(Lp) : -INFINITY);
  if (tid == 0) p.counters[b * kNumKvHeads + kvh] = 0;  // counters zero again for the next call
}

// ============================================================================
// v2: one block per (work item) covering all 4 KV heads, warp w = KV head w.
// - The 4 warps stream the same tokens, so each page's K and V rows (1 KiB
//   each, all 4 heads) are read whole and at about the same time.
// - Page indices travel ahead of the data through a per-warp shared ring
//   filled by 4-byte cp.async: the indices of tile t + 2*STAGES are requested
//   with the data of tile t + STAGES, so no tile copy waits on an index load.
// - K/V copies carry an L2 evict-first policy: streamed once, they should
//   not push anything else (dirty lines included) out of L2.
// - Two ways to cover a sequence:
//   split   (kCluster = false) token-balanced work items found by a scan of
//           kv_indptr, partials merged through global memory by the last
//           block of the sequence (counter per sequence, reset by it);
//   cluster (kCluster = true) grid (C, batch), one thread-block cluster of
//           C blocks per sequence, partials merged through distributed
//           shared memory (no global round trip, no counters): each block
//           pushes the rows other blocks own into their receive areas and
//           one cluster barrier follows (Params2::push; the older pull merge,
//           two barriers, stays behind --tune merge=1). With batch 1
//           the block predicts kv_indptr = {0, num_kv_indices} and requests
//           its indices before kv_indptr arrives (checked, redone if wrong).
// ============================================================================

constexpr int kRing = 16;                             // index ring slots (tiles) per warp; >= 2*STAGES+1
constexpr int kRingBytes = kRing * kTile * 4;         // 1 KiB
constexpr int kPageElems = kNumKvHeads * kHeadDim;    // elements of one page of one cache
constexpr int kMaxCluster = 16;
constexpr int kMinChunkV2 = 32;                       // smallest automatic split chunk (2 tiles per warp)
constexpr int64_t kEvictFirstMaxTokens = 131072;      // automatic L2 evict-first hint up to this many tokens
constexpr int64_t kClusterMaxTokens = 2048;           // auto: cluster mode for one sequence up to this long
constexpr int64_t kClusterSoloTokens = 64;            // auto cluster size 1 (no merge) up to this long
constexpr int64_t kSplitMinAvgTokens = 2048;          // auto: v2 split from this mean sequence length

struct Params2 {
  const __nv_bfloat16* q;
  const __nv_bfloat16* k;
  const __nv_bfloat16* v;
  const int32_t* indptr;
  const int32_t* indices;
  __nv_bfloat16* out;
  float* lse;
  float* part_o;      // [max_work][32][128] (split)
  float* part_lse;    // [max_work][32]
  int32_t* counters;  // [batch]
  int batch;
  int chunk;
  float scale_log2;
  int spec_len;     // batch 1: predicted kv_indptr[1] (kv_indptr[0] = 0), checked; -1 = no prediction
  int evict_first;  // K/V copies with an L2 evict-first policy
  int push;         // cluster merge: partials pushed into their owners' shared memory (else pulled)
  int debug;        // tuning experiments (FastTuning::debug)
};

__host__ __device__ constexpr int WarpBytesV2(int stages) { return stages * 2 * kTileBytes + kRingBytes; }
// Cluster mode, push merge: each block receives, from every block of the
// cluster, the items (8 dimensions of one query head) it owns, and every lse.
constexpr int kMergeItems = kNumQoHeads * kHeadDim / 8;  // 512
constexpr int kRecvItems = kMergeItems + kMaxCluster - 1;  // >= C * ceil(512 / C) for C <= 16
constexpr int kRecvBytes = kRecvItems * 32 + kMaxCluster * kNumQoHeads * 4;

__device__ __forceinline__ void CpAsync16Hint(uint32_t dst, const void* src, int src_bytes, uint64_t pol) {
  asm volatile("cp.async.cg.shared.global.L2::cache_hint [%0], [%1], 16, %2, %3;\n" ::"r"(dst), "l"(src),
               "r"(src_bytes), "l"(pol));
}
__device__ __forceinline__ void CpAsync4(uint32_t dst, const void* src) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4;\n" ::"r"(dst), "l"(src));
}
__device__ __forceinline__ uint64_t EvictFirstPolicy() {
  uint64_t pol;
  asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;\n" : "=l"(pol));
  return pol;
}

// Thread-block cluster primitives (sm_90+; the host uses cluster mode only there).
__device__ __forceinline__ uint32_t ClusterMap(uint32_t addr, uint32_t rank) {
  uint32_t r = 0;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;\n" : "=r"(r) : "r"(addr), "r"(rank));
#else
  __trap();
#endif
  return r;
}
__device__ __forceinline__ float4 LdCluster4(uint32_t addr) {
  float4 v = make_float4(0.f, 0.f, 0.f, 0.f);
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("ld.shared::cluster.v4.f32 {%0,%1,%2,%3}, [%4];\n"
               : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w)
               : "r"(addr)
               : "memory");
#endif
  return v;
}
__device__ __forceinline__ float LdCluster1(uint32_t addr) {
  float v = 0.f;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("ld.shared::cluster.f32 %0, [%1];\n" : "=f"(v) : "r"(addr) : "memory");
#endif
  return v;
}
__device__ __forceinline__ void StCluster4(uint32_t addr, float4 v) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("st.shared::cluster.v4.f32 [%0], {%1,%2,%3,%4};\n" ::"r"(addr), "f"(v.x), "f"(v.y), "f"(v.z),
               "f"(v.w)
               : "memory");
#endif
}
__device__ __forceinline__ void StCluster1(uint32_t addr, float v) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("st.shared::cluster.f32 [%0], %1;\n" ::"r"(addr), "f"(v) : "memory");
#endif
}
__device__ __forceinline__ void ClusterArriveRelaxed() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("barrier.cluster.arrive.relaxed.aligned;\n" ::: "memory");
#endif
}
__device__ __forceinline__ void ClusterArrive() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("barrier.cluster.arrive.release.aligned;\n" ::: "memory");
#endif
}
__device__ __forceinline__ void ClusterWait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("barrier.cluster.wait.acquire.aligned;\n" ::: "memory");
#endif
}

__device__ __forceinline__ uint4 PackBf16x8(const float (&v)[8], float scale) {
  uint4 r;
  r.x = PackBf16(v[0] * scale, v[1] * scale);
  r.y = PackBf16(v[2] * scale, v[3] * scale);
  r.z = PackBf16(v[4] * scale, v[5] * scale);
  r.w = PackBf16(v[6] * scale, v[7] * scale);
  return r;
}

// One warp merges n normalised partials of its 8 query heads (split-KV):
// o_of(j) -> 8 x 128 floats (head-major), lse_of(j) -> 8 base-2 lse. The
// partials travel by cp.async into shared memory, cap at a time (buf: cap
// records of kRecBytes, 16-byte aligned), the first batch requested before
// the lse pass so that both are in flight together; the weights are fixed
// after the lse pass, so the batches need no rescaling. Writes the 8 output
// rows (out: row 0 of the 8, bf16) and their lse.
constexpr int kRecFloatsM = kGroup * kHeadDim + kGroup;  // o[8][128], lse[8]
constexpr int kRecBytesM = kRecFloatsM * 4;
template <class OFn, class LFn>
__device__ __forceinline__ void WarpMerge(int n, OFn o_of, LFn lse_of, float* buf, int cap, __nv_bfloat16* out,
                                          float* lse_out, int lane) {
  constexpr unsigned kFull = 0xffffffffu;
  const uint32_t buf_addr = SmemAddr(buf);
  auto fetch = [&](int j0) {
    const int cnt = min(cap, n - j0);
    for (int r = 0; r < cnt; ++r) {
      const float* o = o_of(j0 + r);
      const float* l = lse_of(j0 + r);
      const uint32_t dst = buf_addr + r * kRecBytesM;
      for (int i = lane; i < kGroup * kHeadDim / 4; i += 32) CpAsync16(dst + i * 16, o + i * 4, 16);
      if (lane < 2) CpAsync16(dst + kGroup * kHeadDim * 4 + lane * 16, l + lane * 4, 16);
    }
    CpAsyncCommit();
  };
  fetch(0);
  // Max and sum of 2^lse per head; lane = (partial j mod 4, head h), four
  // loads in flight per lane.
  float mh = -INFINITY, lh = 0.f;
  for (int j0 = lane >> 3; j0 < n; j0 += 16) {
    float x[4];
#pragma unroll
    for (int u = 0; u < 4; ++u) x[u] = j0 + 4 * u < n ? __ldcg(lse_of(j0 + 4 * u) + (lane & 7)) : -INFINITY;
#pragma unroll
    for (int u = 0; u < 4; ++u) {
      const float nm = fmaxf(mh, x[u]);
      if (nm != -INFINITY) {
        lh = lh * Exp2(mh - nm) + Exp2(x[u] - nm);
        mh = nm;
      }
    }
  }
#pragma unroll
  for (int o = 8; o < 32; o <<= 1) {
    const float om = __shfl_xor_sync(kFull, mh, o);
    const float ol = __shfl_xor_sync(kFull, lh, o);
    const float nm = fmaxf(mh, om);
    if (nm != -INFINITY) {
      lh = lh * Exp2(mh - nm) + ol * Exp2(om - nm);
      mh = nm;
    }
  }
  // Lane: heads (lane >> 4) + 2jj, dims d0..d0+7.
  const int d0 = (lane & 15) * 8;
  float M[4], W[4], acc[4][8];
#pragma unroll
  for (int jj = 0; jj < 4; ++jj) {
    const int h = (lane >> 4) + 2 * jj;
    M[jj] = __shfl_sync(kFull, mh, h);
    const float L = __shfl_sync(kFull, lh, h);
    W[jj] = L > 0.f ? 1.f / L : 0.f;
#pragma unroll
    for (int e = 0; e < 8; ++e) acc[jj][e] = 0.f;
  }
  for (int j0 = 0; j0 < n; j0 += cap) {
    if (j0 > 0) fetch(j0);
    CpAsyncWait<0>();
    __syncwarp();
    const int cnt = min(cap, n - j0);
    for (int r = 0; r < cnt; ++r) {
      const float* rec = buf + r * kRecFloatsM;
#pragma unroll
      for (int jj = 0; jj < 4; ++jj) {
        const int h = (lane >> 4) + 2 * jj;
        const float lj = rec[kGroup * kHeadDim + h];
        const float f = lj == -INFINITY ? 0.f : Exp2(lj - M[jj]) * W[jj];
        const float4 x0 = *reinterpret_cast<const float4*>(rec + h * kHeadDim + d0);
        const float4 x1 = *reinterpret_cast<const float4*>(rec + h * kHeadDim + d0 + 4);
        acc[jj][0] += f * x0.x; acc[jj][1] += f * x0.y; acc[jj][2] += f * x0.z; acc[jj][3] += f * x0.w;
        acc[jj][4] += f * x1.x; acc[jj][5] += f * x1.y; acc[jj][6] += f * x1.z; acc[jj][7] += f * x1.w;
      }
    }
    __syncwarp();  // the next batch overwrites buf
  }
#pragma unroll
  for (int jj = 0; jj < 4; ++jj) {
    const int h = (lane >> 4) + 2 * jj;
    *reinterpret_cast<uint4*>(out + h * kHeadDim + d0) = PackBf16x8(acc[jj], 1.f);
    if ((lane & 15) == 0) lse_out[h] = W[jj] > 0.f ? M[jj] - __log2f(W[jj]) : -INFINITY;
  }
}

template <int STAGES, bool kCluster>
__global__ void __launch_bounds__(kThreads) GqaDecodeV2(Params2 p) {
  static_assert(2 * STAGES + 1 <= kRing, "index ring too small for the pipeline depth");
  extern __shared__ __align__(128) uint8_t smem[];
  __shared__ int s_scan[kWarps];
  __shared__ int s_work[4];  // sequence, chunk, chunks of the sequence, first work item of the sequence
  __shared__ int s_last;

  const int tid = threadIdx.x;
  const int lane = tid & 31;
  const int warp = tid >> 5;  // = KV head
  const int g = lane >> 2;
  const int c = lane & 3;
  constexpr unsigned kFull = 0xffffffffu;

  int b, chunk_idx, nchunks, first_work = 0;
  if constexpr (kCluster) {
    // Push merge: this block's arrival says it has started (remote blocks may
    // write into its shared memory only after that); waited for at the merge.
    if (p.push && gridDim.x > 1) ClusterArriveRelaxed();
    b = blockIdx.y;
    chunk_idx = blockIdx.x;  // cluster dims (C, 1, 1) and gridDim.x == C: the rank in the cluster
    nchunks = gridDim.x;
  } else if (p.spec_len >= 0) {
    // Batch 1: the sequence is predicted to be all of kv_indices (checked below).
    b = 0;
    chunk_idx = blockIdx.x;
    nchunks = p.spec_len <= 0 ? 1 : (p.spec_len + p.chunk - 1) / p.chunk;
    if (chunk_idx >= nchunks) return;  // surplus block (a shorter real sequence has no more chunks)
  } else {
    const int work = blockIdx.x;
    if (tid == 0) s_work[0] = -1;
    int base_work = 0;
    for (int base = 0; base < p.batch; base += kThreads) {
      const int i = base + tid;
      int cnt = 0;
      if (i < p.batch) {
        const int len = __ldg(p.indptr + i + 1) - __ldg(p.indptr + i);
        cnt = len <= 0 ? 1 : (len + p.chunk - 1) / p.chunk;
      }
      int x = cnt;
#pragma unroll
      for (int o = 1; o < 32; o <<= 1) {
        const int y = __shfl_up_sync(kFull, x, o);
        if (lane >= o) x += y;
      }
      if (lane == 31) s_scan[warp] = x;
      __syncthreads();
      int warp_off = 0, total = 0;
#pragma unroll
      for (int k = 0; k < kWarps; ++k) {
        const int t = s_scan[k];
        warp_off += k < warp ? t : 0;
        total += t;
      }
      const int incl = base_work + warp_off + x;
      const int excl = incl - cnt;
      if (i < p.batch && work >= excl && work < incl) {
        s_work[0] = i;
        s_work[1] = work - excl;
        s_work[2] = cnt;
        s_work[3] = excl;
      }
      __syncthreads();
      base_work += total;
      if (s_work[0] >= 0 || work < base_work) break;
    }
    b = s_work[0];
    if (b < 0) return;  // surplus block: uniform exit
    chunk_idx = s_work[1];
    nchunks = s_work[2];
    first_work = s_work[3];
  }

  // Q^T of this warp's 8 query heads as B fragments (independent of kv_indptr).
  uint32_t qf[kHeadDim / 16][2];
  {
    const uint32_t* qrow = reinterpret_cast<const uint32_t*>(
        p.q + (static_cast<size_t>(b) * kNumQoHeads + warp * kGroup + g) * kHeadDim + 2 * c);
#pragma unroll
    for (int ks = 0; ks < kHeadDim / 16; ++ks) {
      qf[ks][0] = __ldg(qrow + ks * 8);
      qf[ks][1] = __ldg(qrow + ks * 8 + 4);
    }
  }

  const bool spec = p.spec_len >= 0;
  int seq_start, len;
  int a0 = 0, a1 = 0;
  if (spec) {
    a0 = __ldg(p.indptr);
    a1 = __ldg(p.indptr + 1);
    seq_start = 0;
    len = p.spec_len;
  } else {
    seq_start = __ldg(p.indptr + b);
    len = max(0, __ldg(p.indptr + b + 1) - seq_start);
  }
  int c_begin = static_cast<int>(static_cast<long long>(len) * chunk_idx / nchunks);
  int ntok = static_cast<int>(static_cast<long long>(len) * (chunk_idx + 1) / nchunks) - c_begin;

  uint8_t* wsm = smem + warp * WarpBytesV2(STAGES);
  const uint32_t wsm_addr = SmemAddr(wsm);
  const uint32_t ring_addr = wsm_addr + STAGES * 2 * kTileBytes;
  const int32_t* ring = reinterpret_cast<const int32_t*>(wsm + STAGES * 2 * kTileBytes);
  const __nv_bfloat16* kbase = p.k + warp * kHeadDim;
  const __nv_bfloat16* vbase = p.v + warp * kHeadDim;
  const uint64_t pol = EvictFirstPolicy();
  const bool hint = p.evict_first != 0;
  const int32_t* idx = p.indices + seq_start + c_begin;

  // Lanes 0..15 copy the page indices of tile t into ring slot t % kRing.
  auto issue_idx = [&](int t) {
    const int tok = t * kTile + lane;
    if (lane < kTile && tok < ntok) CpAsync4(ring_addr + ((t & (kRing - 1)) * kTile + lane) * 4, idx + tok);
  };
  // Copies tile t (rows = tokens, pages from the ring) into stage t % STAGES;
  // rows past the chunk are zero-filled.
  auto issue_data = [&](int t) {
    const uint32_t kdst = wsm_addr + (t % STAGES) * 2 * kTileBytes;
    const uint32_t vdst = kdst + kTileBytes;
    const int32_t* slot = ring + (t & (kRing - 1)) * kTile;
    const int cc = lane & 15;
#pragma unroll
    for (int i = 0; i < kTile / 2; ++i) {
      const int r = (lane >> 4) + 2 * i;
      const bool valid = t * kTile + r < ntok;
      const int pg = valid ? slot[r] : 0;
      const size_t off = static_cast<size_t>(pg) * kPageElems + cc * 8;
      const int n = valid ? 16 : 0;
      if (hint) {
        CpAsync16Hint(kdst + Swz(r, cc), kbase + off, n, pol);
        CpAsync16Hint(vdst + Swz(r, cc), vbase + off, n, pol);
      } else {
        CpAsync16(kdst + Swz(r, cc), kbase + off, n);
        CpAsync16(vdst + Swz(r, cc), vbase + off, n);
      }
    }
  };

#pragma unroll
  for (int s = 0; s < STAGES; ++s) issue_idx(s);
  CpAsyncCommit();
  if (spec && (a0 != 0 || a1 != p.spec_len)) {  // prediction wrong: redo with the real bounds
    CpAsyncWait<0>();
    __syncwarp();
    seq_start = a0;
    len = max(0, a1 - a0);
    if constexpr (!kCluster) {
      nchunks = len <= 0 ? 1 : (len + p.chunk - 1) / p.chunk;
      if (chunk_idx >= nchunks) return;  // uniform over the block, before any block barrier
    }
    c_begin = static_cast<int>(static_cast<long long>(len) * chunk_idx / nchunks);
    ntok = static_cast<int>(static_cast<long long>(len) * (chunk_idx + 1) / nchunks) - c_begin;
    idx = p.indices + seq_start + c_begin;
#pragma unroll
    for (int s = 0; s < STAGES; ++s) issue_idx(s);
    CpAsyncCommit();
  }
  const int ntiles = (ntok + kTile - 1) / kTile;
  CpAsyncWait<0>();
  __syncwarp();
#pragma unroll
  for (int s = 0; s < STAGES; ++s) {
    if (s < ntiles) issue_data(s);
    issue_idx(STAGES + s);
    CpAsyncCommit();
  }

  float m0 = -INFINITY, m1 = -INFINITY;
  float l0 = 0.f, l1 = 0.f;
  float acc[kHeadDim / 16][4];
#pragma unroll
  for (int mt = 0; mt < kHeadDim / 16; ++mt) acc[mt][0] = acc[mt][1] = acc[mt][2] = acc[mt][3] = 0.f;

  const int krow = (lane & 7) | (((lane >> 3) & 1) << 3);
  const int khalf = lane >> 4;
  const int vrow = (lane & 7) | ((lane >> 4) << 3);
  const int vhalf = (lane >> 3) & 1;

  for (int k = 0; k < ntiles; ++k) {
    CpAsyncWait<STAGES - 1>();
    __syncwarp();
    const uint32_t ks_addr = wsm_addr + (k % STAGES) * 2 * kTileBytes;
    const uint32_t vs_addr = ks_addr + kTileBytes;

    // S^T = K Q^T in two independent accumulation chains.
    float sa[4] = {0.f, 0.f, 0.f, 0.f};
    float sb[4] = {0.f, 0.f, 0.f, 0.f};
#pragma unroll
    for (int ks = 0; ks < kHeadDim / 16; ks += 2) {
      uint32_t a[4], a2[4];
      LdMatrixX4(a, ks_addr + Swz(krow, 2 * ks + khalf));
      LdMatrixX4(a2, ks_addr + Swz(krow, 2 * (ks + 1) + khalf));
      Mma16816(sa, a, qf[ks][0], qf[ks][1]);
      Mma16816(sb, a2, qf[ks + 1][0], qf[ks + 1][1]);
    }
    float s[4];
    const int t0 = k * kTile;
    const bool lo_ok = t0 + g < ntok;
    const bool hi_ok = t0 + g + 8 < ntok;
    s[0] = lo_ok ? (sa[0] + sb[0]) * p.scale_log2 : -INFINITY;
    s[1] = lo_ok ? (sa[1] + sb[1]) * p.scale_log2 : -INFINITY;
    s[2] = hi_ok ? (sa[2] + sb[2]) * p.scale_log2 : -INFINITY;
    s[3] = hi_ok ? (sa[3] + sb[3]) * p.scale_log2 : -INFINITY;
    float mx0 = fmaxf(s[0], s[2]);
    float mx1 = fmaxf(s[1], s[3]);
#pragma unroll
    for (int o = 4; o < 32; o <<= 1) {
      mx0 = fmaxf(mx0, __shfl_xor_sync(kFull, mx0, o));
      mx1 = fmaxf(mx1, __shfl_xor_sync(kFull, mx1, o));
    }
    const float n0 = fmaxf(m0, mx0), n1 = fmaxf(m1, mx1);
    const float al0 = Exp2(m0 - n0), al1 = Exp2(m1 - n1);
    const float p0 = Exp2(s[0] - n0), p1 = Exp2(s[1] - n1);
    const float p2 = Exp2(s[2] - n0), p3 = Exp2(s[3] - n1);
    l0 = l0 * al0 + p0 + p2;
    l1 = l1 * al1 + p1 + p3;
    m0 = n0;
    m1 = n1;
#pragma unroll
    for (int mt = 0; mt < kHeadDim / 16; ++mt) {
      acc[mt][0] *= al0;
      acc[mt][1] *= al1;
      acc[mt][2] *= al0;
      acc[mt][3] *= al1;
    }
    const uint32_t b0 = MovMatrixTrans(PackBf16(p0, p1));
    const uint32_t b1 = MovMatrixTrans(PackBf16(p2, p3));
#pragma unroll
    for (int mt = 0; mt < kHeadDim / 16; ++mt) {
      uint32_t a[4];
      LdMatrixX4Trans(a, vs_addr + Swz(vrow, 2 * mt + vhalf));
      Mma16816(acc[mt], a, b0, b1);
    }
    __syncwarp();
    if (k + STAGES < ntiles) issue_data(k + STAGES);
    issue_idx(k + 2 * STAGES);
    CpAsyncCommit();
  }
  CpAsyncWait<0>();
  __syncwarp();
#pragma unroll
  for (int o = 4; o < 32; o <<= 1) {
    l0 += __shfl_xor_sync(kFull, l0, o);
    l1 += __shfl_xor_sync(kFull, l1, o);
  }

  // This warp's normalised result for its 8 heads, in its own region:
  // F[head][kMergeStride] floats, then FL[8] base-2 lse.
  float* F = reinterpret_cast<float*>(wsm);
  float* FL = F + kGroup * kMergeStride;
  {
    const float inv0 = l0 > 0.f ? 1.f / l0 : 0.f;
    const float inv1 = l1 > 0.f ? 1.f / l1 : 0.f;
#pragma unroll
    for (int mt = 0; mt < kHeadDim / 16; ++mt) {
      const int d = mt * 16 + g;
      F[(2 * c) * kMergeStride + d] = acc[mt][0] * inv0;
      F[(2 * c + 1) * kMergeStride + d] = acc[mt][1] * inv1;
      F[(2 * c) * kMergeStride + d + 8] = acc[mt][2] * inv0;
      F[(2 * c + 1) * kMergeStride + d + 8] = acc[mt][3] * inv1;
    }
    if (g == 0) {
      FL[2 * c] = l0 > 0.f ? m0 + __log2f(l0) : -INFINITY;
      FL[2 * c + 1] = l1 > 0.f ? m1 + __log2f(l1) : -INFINITY;
    }
  }
  __syncwarp();
  const size_t row0 = static_cast<size_t>(b) * kNumQoHeads + warp * kGroup;  // the warp's first query row

  if (nchunks == 1) {
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const int item = lane + 32 * j;
      const int hd = item >> 4;
      const int d0 = (item & 15) * 8;
      const float4 x0 = *reinterpret_cast<const float4*>(F + hd * kMergeStride + d0);
      const float4 x1 = *reinterpret_cast<const float4*>(F + hd * kMergeStride + d0 + 4);
      const float v[8] = {x0.x, x0.y, x0.z, x0.w, x1.x, x1.y, x1.z, x1.w};
      *reinterpret_cast<uint4*>(p.out + (row0 + hd) * kHeadDim + d0) = PackBf16x8(v, 1.f);
    }
    if (lane < kGroup) p.lse[row0 + lane] = FL[lane];
    return;
  }

  if constexpr (kCluster) {
    if (p.push) {
      // ---- push merge: one cluster barrier after the pushes ----
      // Block r owns items [r*512/C, (r+1)*512/C) (item = 8 dims of one
      // query head); every block stores its F rows of those items and its 32
      // lse into r's receive area (slot = its rank), then all arrive (release)
      // and wait (acquire); each block merges what it owns from its own
      // shared memory. Nothing remote is read, so no second barrier.
      const int C = nchunks;
      const int per = (kMergeItems + C - 1) / C;
      float* R = reinterpret_cast<float*>(smem + kWarps * WarpBytesV2(STAGES));
      float* RL = R + kRecvItems * 8;
      const uint32_t r_addr = SmemAddr(R);
      const uint32_t rl_addr = SmemAddr(RL);
      ClusterWait();  // every block of the cluster has started
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        const int il = lane + 32 * j;
        const int hd = il >> 4;
        const int d0 = (il & 15) * 8;
        const int item = (warp * kGroup + hd) * 16 + (il & 15);
        const int owner = ((item + 1) * C + kMergeItems - 1) / kMergeItems - 1;
        const int ib = owner * kMergeItems / C;
        const uint32_t dst = ClusterMap(r_addr + ((chunk_idx * per + item - ib) * 8) * 4, owner);
        StCluster4(dst, *reinterpret_cast<const float4*>(F + hd * kMergeStride + d0));
        StCluster4(dst + 16, *reinterpret_cast<const float4*>(F + hd * kMergeStride + d0 + 4));
      }
      for (int r = lane >> 3; r < C; r += 4)
        StCluster1(ClusterMap(rl_addr + (chunk_idx * kNumQoHeads + warp * kGroup + (lane & 7)) * 4, r), FL[lane & 7]);
      __syncwarp();
      ClusterArrive();
      ClusterWait();  // every push into this block is visible
      const int ib = chunk_idx * kMergeItems / C;
      const int ie = (chunk_idx + 1) * kMergeItems / C;
      for (int item = ib + tid; item < ie; item += kThreads) {
        const int row = item >> 4;
        const int d0 = (item & 15) * 8;
        float M = -INFINITY;
        for (int q = 0; q < C; ++q) M = fmaxf(M, RL[q * kNumQoHeads + row]);
        float L = 0.f;
        float o[8] = {0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f};
        for (int q = 0; q < C; ++q) {
          const float lq = RL[q * kNumQoHeads + row];
          const float f = lq == -INFINITY ? 0.f : Exp2(lq - M);
          const float* x = R + (q * per + item - ib) * 8;
          const float4 x0 = *reinterpret_cast<const float4*>(x);
          const float4 x1 = *reinterpret_cast<const float4*>(x + 4);
          L += f;
          o[0] += f * x0.x; o[1] += f * x0.y; o[2] += f * x0.z; o[3] += f * x0.w;
          o[4] += f * x1.x; o[5] += f * x1.y; o[6] += f * x1.z; o[7] += f * x1.w;
        }
        const size_t orow = static_cast<size_t>(b) * kNumQoHeads + row;
        *reinterpret_cast<uint4*>(p.out + orow * kHeadDim + d0) = PackBf16x8(o, L > 0.f ? 1.f / L : 0.f);
        if ((item & 15) == 0) p.lse[orow] = L > 0.f ? M + __log2f(L) : -INFINITY;
      }
      return;
    }
    // ---- merge the C partials of the sequence through distributed shared memory ----
    ClusterArrive();
    ClusterWait();  // every block's F / FL are written
    const int C = nchunks;
    const int i_begin = chunk_idx * (kNumQoHeads * 16) / C;
    const int i_end = (chunk_idx + 1) * (kNumQoHeads * 16) / C;
    const uint32_t smem_base = SmemAddr(smem);
    for (int item = i_begin + tid; item < i_end; item += kThreads) {
      const int row = item >> 4;  // query head 0..31
      const int d0 = (item & 15) * 8;
      const uint32_t region = smem_base + (row >> 3) * WarpBytesV2(STAGES);
      const uint32_t lo = region + ((row & 7) * kMergeStride + d0) * 4;
      const uint32_t ll = region + (kGroup * kMergeStride + (row & 7)) * 4;
      float4 x0[kMaxCluster], x1[kMaxCluster];
      float xl[kMaxCluster];
#pragma unroll
      for (int q = 0; q < kMaxCluster; ++q) {
        if (q < C) {
          const uint32_t ro = ClusterMap(lo, q);
          x0[q] = LdCluster4(ro);
          x1[q] = LdCluster4(ro + 16);
          xl[q] = LdCluster1(ClusterMap(ll, q));
        }
      }
      float M = -INFINITY;
#pragma unroll
      for (int q = 0; q < kMaxCluster; ++q)
        if (q < C) M = fmaxf(M, xl[q]);
      float L = 0.f;
      float o[8] = {0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f};
#pragma unroll
      for (int q = 0; q < kMaxCluster; ++q) {
        if (q < C) {
          const float f = xl[q] == -INFINITY ? 0.f : Exp2(xl[q] - M);
          L += f;
          o[0] += f * x0[q].x; o[1] += f * x0[q].y; o[2] += f * x0[q].z; o[3] += f * x0[q].w;
          o[4] += f * x1[q].x; o[5] += f * x1[q].y; o[6] += f * x1[q].z; o[7] += f * x1[q].w;
        }
      }
      const size_t orow = static_cast<size_t>(b) * kNumQoHeads + row;
      *reinterpret_cast<uint4*>(p.out + orow * kHeadDim + d0) = PackBf16x8(o, L > 0.f ? 1.f / L : 0.f);
      if ((item & 15) == 0) p.lse[orow] = L > 0.f ? M + __log2f(L) : -INFINITY;
    }
    ClusterArrive();
    ClusterWait();  // no block leaves while another may still read its shared memory
    return;
  } else {
    // ---- split sequence: publish the partial, the last block merges ----
    const size_t slot = blockIdx.x;
    float* po = p.part_o + (slot * kNumQoHeads + warp * kGroup) * kHeadDim;
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const int item = lane + 32 * j;
      const int hd = item >> 4;
      const int d0 = (item & 15) * 8;
      const float4 x0 = *reinterpret_cast<const float4*>(F + hd * kMergeStride + d0);
      const float4 x1 = *reinterpret_cast<const float4*>(F + hd * kMergeStride + d0 + 4);
      *reinterpret_cast<float4*>(po + hd * kHeadDim + d0) = x0;
      *reinterpret_cast<float4*>(po + hd * kHeadDim + d0 + 4) = x1;
    }
    if (lane < kGroup) p.part_lse[slot * kNumQoHeads + warp * kGroup + lane] = FL[lane];
    if (p.debug & 2) FenceAcqRel();
    else __threadfence();
    __syncthreads();
    if (tid == 0) {
      const int prev = atomicAdd(p.counters + b, 1);
      s_last = prev == nchunks - 1;
    }
    __syncthreads();
    if (!s_last) return;
    if (p.debug & 2) FenceAcqRel();
    else __threadfence();
    // Warp = KV head: its 8 heads over the nchunks partials, batched through
    // the warp's pipeline buffers (free now).
    WarpMerge(
        nchunks,
        [&](int q) { return p.part_o + (static_cast<size_t>(first_work + q) * kNumQoHeads + warp * kGroup) * kHeadDim; },
        [&](int q) { return p.part_lse + static_cast<size_t>(first_work + q) * kNumQoHeads + warp * kGroup; },
        reinterpret_cast<float*>(wsm), (STAGES * 2 * kTileBytes + kRingBytes) / kRecBytesM,
        p.out + (static_cast<size_t>(b) * kNumQoHeads + warp * kGroup) * kHeadDim,
        p.lse + static_cast<size_t>(b) * kNumQoHeads + warp * kGroup, lane);
    if (tid == 0) p.counters[b] = 0;  // zero again for the next call
  }
}

// ============================================================================
// v3 "flat" (stream-K): kv_indices is cut into nblocks equal token ranges
// whatever the sequence boundaries, block i taking [total*i/n, total*(i+1)/n).
// - Every block has the same number of tokens (one wave of equal work), and
//   its first index and K/V copies depend on nothing but its block number: the
//   kv_indptr copy (into shared memory) travels with the first index copies
//   instead of before them.
// - Warp w = KV head w over the block's tokens (as v2), one pipeline running
//   through every sequence the range touches. A sequence ending inside a tile
//   ends a segment: the warp finishes it (output, or a partial), reloads the
//   softmax state and Q (prefetched in registers) and takes the same tile
//   again, masked to the next sequence.
// - A sequence wholly inside a block is written directly. Only the first and
//   last segment of a block can be partials (slots 2i and 2i+1); the
//   contributors of sequence b are the blocks from BlockOf(start) to
//   BlockOf(end - 1), each (sequence, KV head) counts arrivals, and the last
//   warp to arrive merges its KV head: lse first (max and sum over the
//   contributors, lanes in parallel), then the partials pulled into shared
//   memory with cp.async, several at once, and summed with fixed weights.
// - Empty sequences are written by block b mod nblocks.
// ============================================================================

constexpr int kFlatMaxBatch = 1024;                           // kv_indptr lives in shared memory
constexpr int kRecFloats = kGroup * kHeadDim + kGroup;        // a partial of one KV head: o[8][128], lse[8]
constexpr int kRecBytes = kRecFloats * 4;                     // 4128 (16-byte multiple)
// Staging of one warp's result (>= kRecBytes). Unpadded: with 2 stages two
// blocks fit on an SM (clusters of 8 need that to be co-resident).
constexpr int kFBytes = (kGroup * kMergeStride + kGroup) * 4;
constexpr int kPtrBytes = ((kFlatMaxBatch + 1) * 4 + 127) / 128 * 128;
static_assert(kFBytes >= kRecBytes && kRecBytes % 16 == 0, "flat merge buffers");

struct Params3 {
  const __nv_bfloat16* q;
  const __nv_bfloat16* k;
  const __nv_bfloat16* v;
  const int32_t* indptr;
  const int32_t* indices;
  __nv_bfloat16* out;
  float* lse;
  float* part;        // [2 * nblocks][4][kRecFloats]
  int32_t* counters;  // [batch][4]
  int batch;
  int total;
  int nblocks;
  int cluster;             // blocks per thread-block cluster (1: none); nblocks is a multiple
  double inv_nblocks;      // 1 / nblocks
  double blocks_per_token; // nblocks / total
  float scale_log2;
  int evict_first;
  int debug;  // tuning experiments (FastTuning::debug)
};

// Per warp: pipeline stages, index ring, F (staging of segments after the
// first; slot B) and F1 (the block's first segment; slot A).
__host__ __device__ constexpr int WarpBytesFlat(int stages) {
  return stages * 2 * kTileBytes + kRingBytes + 2 * kFBytes;
}

// floor(total * i / nblocks): a double-precision estimate (inv = 1 / nblocks)
// corrected with exact integer products. A 64-bit integer division is a long
// subroutine, and one warp alone on its scheduler pays all of its latency.
__device__ __forceinline__ int FlatBlockStart(int i, int total, int nblocks, double inv) {
  const int64_t num = static_cast<int64_t>(total) * i;
  int64_t q = static_cast<int64_t>(static_cast<double>(num) * inv);
  while (q * nblocks > num) --q;
  while ((q + 1) * nblocks <= num) ++q;
  return static_cast<int>(q);
}
// The block whose range holds token x (0 <= x < total): the largest i with
// FlatBlockStart(i) <= x. ratio = nblocks / total.
__device__ __forceinline__ int FlatBlockOf(int x, int total, int nblocks, double inv, double ratio) {
  int i = min(nblocks - 1, static_cast<int>(static_cast<double>(x) * ratio));
  while (i > 0 && FlatBlockStart(i, total, nblocks, inv) > x) --i;
  while (i + 1 < nblocks && FlatBlockStart(i + 1, total, nblocks, inv) <= x) ++i;
  return i;
}
// The sequence holding token pos (0 <= pos < total): the largest b < batch
// with indptr[b] <= pos (empty sequences before it have indptr[b+1] <= pos).
__device__ __forceinline__ int FlatSeqAt(const int32_t* ptr, int batch, int pos) {
  int lo = 0, hi = batch - 1;
  while (lo < hi) {
    const int mid = (lo + hi + 1) >> 1;
    if (ptr[mid] <= pos) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}

template <int STAGES>
__global__ void __launch_bounds__(kThreads) GqaDecodeFlat(Params3 p) {
  static_assert(2 * STAGES + 1 <= kRing, "index ring too small for the pipeline depth");
  extern __shared__ __align__(128) uint8_t smem[];
  const int tid = threadIdx.x;
  const int lane = tid & 31;
  const int warp = tid >> 5;  // = KV head
  const int g = lane >> 2;
  const int c = lane & 3;
  constexpr unsigned kFull = 0xffffffffu;

  const int blk = blockIdx.x;
  const int bs = FlatBlockStart(blk, p.total, p.nblocks, p.inv_nblocks);
  const int ntok = FlatBlockStart(blk + 1, p.total, p.nblocks, p.inv_nblocks) - bs;
  const int ntiles = (ntok + kTile - 1) / kTile;

  uint8_t* wsm = smem + warp * WarpBytesFlat(STAGES);
  const uint32_t wsm_addr = SmemAddr(wsm);
  const uint32_t ring_addr = wsm_addr + STAGES * 2 * kTileBytes;
  const int32_t* ring = reinterpret_cast<const int32_t*>(wsm + STAGES * 2 * kTileBytes);
  float* F = reinterpret_cast<float*>(wsm + STAGES * 2 * kTileBytes + kRingBytes);
  float* F1 = F + kFBytes / 4;
  int32_t* sptr = reinterpret_cast<int32_t*>(smem + kWarps * WarpBytesFlat(STAGES));
  const int C = p.cluster;
  // The sequence whose on-chip merge this block owns (cluster mode): its
  // first segment, when the sequence started in an earlier block of the same
  // cluster. -1: none.
  int own_b = -1, own_s = 0, own_i0 = 0, own_n = 0;
  const __nv_bfloat16* kbase = p.k + warp * kHeadDim;
  const __nv_bfloat16* vbase = p.v + warp * kHeadDim;
  const uint64_t pol = EvictFirstPolicy();
  const bool hint = p.evict_first != 0;
  const int32_t* idx = p.indices + bs;

  auto issue_idx = [&](int t) {
    const int tok = t * kTile + lane;
    if (lane < kTile && tok < ntok) CpAsync4(ring_addr + ((t & (kRing - 1)) * kTile + lane) * 4, idx + tok);
  };
  auto issue_data = [&](int t) {
    const uint32_t kdst = wsm_addr + (t % STAGES) * 2 * kTileBytes;
    const uint32_t vdst = kdst + kTileBytes;
    const int32_t* slot = ring + (t & (kRing - 1)) * kTile;
    const int cc = lane & 15;
#pragma unroll
    for (int i = 0; i < kTile / 2; ++i) {
      const int r = (lane >> 4) + 2 * i;
      const bool valid = t * kTile + r < ntok;
      const int pg = valid ? slot[r] : 0;
      const size_t off = static_cast<size_t>(pg) * kPageElems + cc * 8;
      const int n = valid ? 16 : 0;
      if (hint) {
        CpAsync16Hint(kdst + Swz(r, cc), kbase + off, n, pol);
        CpAsync16Hint(vdst + Swz(r, cc), vbase + off, n, pol);
      } else {
        CpAsync16(kdst + Swz(r, cc), kbase + off, n);
        CpAsync16(vdst + Swz(r, cc), vbase + off, n);
      }
    }
  };

  // The first index copies and kv_indptr (into shared memory) in one group.
#pragma unroll
  for (int s = 0; s < STAGES; ++s) issue_idx(s);
  for (int i = tid; i <= p.batch; i += kThreads) CpAsync4(SmemAddr(sptr + i), p.indptr + i);
  CpAsyncCommit();
  CpAsyncWait<0>();
  __syncthreads();  // kv_indptr copied by every thread; the only block-wide barrier
#pragma unroll
  for (int s = 0; s < STAGES; ++s) {
    if (s < ntiles) issue_data(s);
    issue_idx(STAGES + s);
    CpAsyncCommit();
  }

  // Empty sequences: output 0, lse -inf, by block b mod nblocks.
  for (int b = blk; b < p.batch; b += p.nblocks) {
    if (sptr[b + 1] > sptr[b]) continue;
    uint4* o = reinterpret_cast<uint4*>(p.out + static_cast<size_t>(b) * kNumQoHeads * kHeadDim);
    for (int i = tid; i < kNumQoHeads * kHeadDim / 8; i += kThreads) o[i] = make_uint4(0u, 0u, 0u, 0u);
    if (tid < kNumQoHeads) p.lse[static_cast<size_t>(b) * kNumQoHeads + tid] = -INFINITY;
  }
  if (ntok <= 0) return;  // no barrier follows

  auto load_q = [&](uint32_t (&qf)[kHeadDim / 16][2], int b) {
    const uint32_t* qrow = reinterpret_cast<const uint32_t*>(
        p.q + (static_cast<size_t>(b) * kNumQoHeads + warp * kGroup + g) * kHeadDim + 2 * c);
#pragma unroll
    for (int ks = 0; ks < kHeadDim / 16; ++ks) {
      qf[ks][0] = __ldg(qrow + ks * 8);
      qf[ks][1] = __ldg(qrow + ks * 8 + 4);
    }
  };

  // Current segment: sequence b, tokens [lo, hi) of the block's range.
  int b = FlatSeqAt(sptr, p.batch, bs);
  int lo = 0;
  int hi = min(sptr[b + 1] - bs, ntok);
  int nb = hi < ntok ? FlatSeqAt(sptr, p.batch, bs + hi) : b;
  uint32_t qf[kHeadDim / 16][2], qn[kHeadDim / 16][2];
  load_q(qf, b);
  load_q(qn, nb);

  float m0 = -INFINITY, m1 = -INFINITY;
  float l0 = 0.f, l1 = 0.f;
  float acc[kHeadDim / 16][4];
#pragma unroll
  for (int mt = 0; mt < kHeadDim / 16; ++mt) acc[mt][0] = acc[mt][1] = acc[mt][2] = acc[mt][3] = 0.f;

  // Merges the partials of (sequence sb, this KV head) once all arrived.
  // buf/cap: shared memory for cap partials (the pipeline buffers at the end
  // of the stream, the staging area F mid-stream).
  auto merge = [&](int sb, int s_abs, int i0, int n, float* buf, int cap) {
    const int slot0 = 2 * i0 + (s_abs == FlatBlockStart(i0, p.total, p.nblocks, p.inv_nblocks) ? 0 : 1);
    auto rec_of = [&](int j) -> const float* {
      const int slot = j == 0 ? slot0 : 2 * (i0 + j);
      return p.part + (static_cast<size_t>(slot) * kWarps + warp) * kRecFloats;
    };
    WarpMerge(n, [&](int j) { return rec_of(j); }, [&](int j) { return rec_of(j) + kGroup * kHeadDim; }, buf, cap,
              p.out + (static_cast<size_t>(sb) * kNumQoHeads + warp * kGroup) * kHeadDim,
              p.lse + static_cast<size_t>(sb) * kNumQoHeads + warp * kGroup, lane);
  };

  // Ends segment [lo, hi) of sequence b: output, or partial (+ merge if last).
  auto finish = [&](bool at_end) {
    float* Fs = lo == 0 ? F1 : F;  // slot A for the block's first segment, B otherwise
    float* FLs = Fs + kGroup * kMergeStride;
    float L0 = l0, L1 = l1;
#pragma unroll
    for (int o = 4; o < 32; o <<= 1) {
      L0 += __shfl_xor_sync(kFull, L0, o);
      L1 += __shfl_xor_sync(kFull, L1, o);
    }
    const float inv0 = L0 > 0.f ? 1.f / L0 : 0.f;
    const float inv1 = L1 > 0.f ? 1.f / L1 : 0.f;
#pragma unroll
    for (int mt = 0; mt < kHeadDim / 16; ++mt) {
      const int d = mt * 16 + g;
      Fs[(2 * c) * kMergeStride + d] = acc[mt][0] * inv0;
      Fs[(2 * c + 1) * kMergeStride + d] = acc[mt][1] * inv1;
      Fs[(2 * c) * kMergeStride + d + 8] = acc[mt][2] * inv0;
      Fs[(2 * c + 1) * kMergeStride + d + 8] = acc[mt][3] * inv1;
    }
    if (g == 0) {
      FLs[2 * c] = L0 > 0.f ? m0 + __log2f(L0) : -INFINITY;
      FLs[2 * c + 1] = L1 > 0.f ? m1 + __log2f(L1) : -INFINITY;
    }
    __syncwarp();
    const int s_abs = sptr[b], e_abs = sptr[b + 1];
    const bool complete = (bs + lo == s_abs && bs + hi == e_abs) || (p.debug & 1);  // debug 1: timing only
    if (complete) {
      const size_t row0 = static_cast<size_t>(b) * kNumQoHeads + warp * kGroup;
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        const int item = lane + 32 * j;
        const int hd = item >> 4;
        const int d0 = (item & 15) * 8;
        const float4 x0 = *reinterpret_cast<const float4*>(Fs + hd * kMergeStride + d0);
        const float4 x1 = *reinterpret_cast<const float4*>(Fs + hd * kMergeStride + d0 + 4);
        const float v[8] = {x0.x, x0.y, x0.z, x0.w, x1.x, x1.y, x1.z, x1.w};
        *reinterpret_cast<uint4*>(p.out + (row0 + hd) * kHeadDim + d0) = PackBf16x8(v, 1.f);
      }
      if (lane < kGroup) p.lse[row0 + lane] = FLs[lane];
      __syncwarp();  // F is rewritten by the next segment
      return;
    }
    const int i0 = FlatBlockOf(s_abs, p.total, p.nblocks, p.inv_nblocks, p.blocks_per_token);
    const int n = FlatBlockOf(e_abs - 1, p.total, p.nblocks, p.inv_nblocks, p.blocks_per_token) - i0 + 1;
    if (C > 1 && i0 / C == (i0 + n - 1) / C) {
      // Every contributor is in this cluster: the partial stays in shared
      // memory (slot A or B) and block i0 + n - 1 merges it after the stream.
      if (blk == i0 + n - 1) {
        own_b = b;
        own_s = s_abs;
        own_i0 = i0;
        own_n = n;
      }
      return;
    }
    const int slot = 2 * blk + (lo == 0 ? 0 : 1);
    float* rec = p.part + (static_cast<size_t>(slot) * kWarps + warp) * kRecFloats;
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const int item = lane + 32 * j;
      const int hd = item >> 4;
      const int d0 = (item & 15) * 8;
      const float4 x0 = *reinterpret_cast<const float4*>(Fs + hd * kMergeStride + d0);
      const float4 x1 = *reinterpret_cast<const float4*>(Fs + hd * kMergeStride + d0 + 4);
      *reinterpret_cast<float4*>(rec + hd * kHeadDim + d0) = x0;
      *reinterpret_cast<float4*>(rec + hd * kHeadDim + d0 + 4) = x1;
    }
    if (lane < kGroup) rec[kGroup * kHeadDim + lane] = FLs[lane];
    if (p.debug & 2) FenceAcqRel();
    else __threadfence();
    __syncwarp();
    int last = 0;
    if (lane == 0) last = atomicAdd(p.counters + b * kWarps + warp, 1) == n - 1;
    last = __shfl_sync(kFull, last, 0);
    if (!last) return;
    if (p.debug & 2) FenceAcqRel();
    else __threadfence();
    // At the end of the stream the pipeline stages and the index ring are free.
    if (at_end) merge(b, s_abs, i0, n, reinterpret_cast<float*>(wsm), (STAGES * 2 * kTileBytes + kRingBytes) / kRecBytes);
    else merge(b, s_abs, i0, n, F, 1);
    if (lane == 0) p.counters[b * kWarps + warp] = 0;  // zero again for the next call
  };

  // Owner block, one warp per KV head: merges the n partials of sequence sb
  // held in the shared memory of cluster blocks i0 .. i0 + n - 1 (slot B of
  // block i0 when the sequence starts inside it, slot A otherwise).
  auto MergeLocal = [&](int sb, int s_abs, int i0, int n) {
    const bool b_first = s_abs != FlatBlockStart(i0, p.total, p.nblocks, p.inv_nblocks);
    const uint32_t a_addr = SmemAddr(F1), b_addr = SmemAddr(F);
    auto src = [&](int j) -> uint32_t { return ClusterMap(j == 0 && b_first ? b_addr : a_addr, (i0 + j) % C); };
    // lse: lane (j = lane >> 3 and j + 4, head h = lane & 7); n <= C <= 8.
    const float x_lo = (lane >> 3) < n ? LdCluster1(src(lane >> 3) + (kGroup * kMergeStride + (lane & 7)) * 4) : -INFINITY;
    const float x_hi = (lane >> 3) + 4 < n ? LdCluster1(src((lane >> 3) + 4) + (kGroup * kMergeStride + (lane & 7)) * 4)
                                           : -INFINITY;
    float mh = fmaxf(x_lo, x_hi);
    float lh = mh == -INFINITY ? 0.f : Exp2(x_lo - mh) + Exp2(x_hi - mh);
#pragma unroll
    for (int o = 8; o < 32; o <<= 1) {
      const float om = __shfl_xor_sync(kFull, mh, o);
      const float ol = __shfl_xor_sync(kFull, lh, o);
      const float nm = fmaxf(mh, om);
      if (nm != -INFINITY) {
        lh = lh * Exp2(mh - nm) + ol * Exp2(om - nm);
        mh = nm;
      }
    }
    const int d0 = (lane & 15) * 8;
    float M[4], W[4], o[4][8];
#pragma unroll
    for (int jj = 0; jj < 4; ++jj) {
      const int h = (lane >> 4) + 2 * jj;
      M[jj] = __shfl_sync(kFull, mh, h);
      const float L = __shfl_sync(kFull, lh, h);
      W[jj] = L > 0.f ? 1.f / L : 0.f;
#pragma unroll
      for (int e = 0; e < 8; ++e) o[jj][e] = 0.f;
    }
    for (int j = 0; j < n; ++j) {
      const uint32_t base = src(j);
      float4 x0[4], x1[4];
      float f[4];
#pragma unroll
      for (int jj = 0; jj < 4; ++jj) {
        const int h = (lane >> 4) + 2 * jj;
        const float xl = __shfl_sync(kFull, j < 4 ? x_lo : x_hi, ((j & 3) << 3) | h);
        f[jj] = xl == -INFINITY ? 0.f : Exp2(xl - M[jj]) * W[jj];
        x0[jj] = LdCluster4(base + (h * kMergeStride + d0) * 4);
        x1[jj] = LdCluster4(base + (h * kMergeStride + d0 + 4) * 4);
      }
#pragma unroll
      for (int jj = 0; jj < 4; ++jj) {
        o[jj][0] += f[jj] * x0[jj].x; o[jj][1] += f[jj] * x0[jj].y; o[jj][2] += f[jj] * x0[jj].z;
        o[jj][3] += f[jj] * x0[jj].w; o[jj][4] += f[jj] * x1[jj].x; o[jj][5] += f[jj] * x1[jj].y;
        o[jj][6] += f[jj] * x1[jj].z; o[jj][7] += f[jj] * x1[jj].w;
      }
    }
#pragma unroll
    for (int jj = 0; jj < 4; ++jj) {
      const size_t orow = static_cast<size_t>(sb) * kNumQoHeads + warp * kGroup + (lane >> 4) + 2 * jj;
      *reinterpret_cast<uint4*>(p.out + orow * kHeadDim + d0) = PackBf16x8(o[jj], 1.f);
      if ((lane & 15) == 0) p.lse[orow] = W[jj] > 0.f ? M[jj] - __log2f(W[jj]) : -INFINITY;
    }
  };

  const int krow = (lane & 7) | (((lane >> 3) & 1) << 3);
  const int khalf = lane >> 4;
  const int vrow = (lane & 7) | ((lane >> 4) << 3);
  const int vhalf = (lane >> 3) & 1;

  int k = 0;
  while (k < ntiles) {
    CpAsyncWait<STAGES - 1>();
    __syncwarp();
    const uint32_t ks_addr = wsm_addr + (k % STAGES) * 2 * kTileBytes;
    const uint32_t vs_addr = ks_addr + kTileBytes;
    float sa[4] = {0.f, 0.f, 0.f, 0.f};
    float sb[4] = {0.f, 0.f, 0.f, 0.f};
#pragma unroll
    for (int ks = 0; ks < kHeadDim / 16; ks += 2) {
      uint32_t a[4], a2[4];
      LdMatrixX4(a, ks_addr + Swz(krow, 2 * ks + khalf));
      LdMatrixX4(a2, ks_addr + Swz(krow, 2 * (ks + 1) + khalf));
      Mma16816(sa, a, qf[ks][0], qf[ks][1]);
      Mma16816(sb, a2, qf[ks + 1][0], qf[ks + 1][1]);
    }
    const int t0 = k * kTile;
    const bool lo_ok = t0 + g >= lo && t0 + g < hi;
    const bool hi_ok = t0 + g + 8 >= lo && t0 + g + 8 < hi;
    float s[4];
    s[0] = lo_ok ? (sa[0] + sb[0]) * p.scale_log2 : -INFINITY;
    s[1] = lo_ok ? (sa[1] + sb[1]) * p.scale_log2 : -INFINITY;
    s[2] = hi_ok ? (sa[2] + sb[2]) * p.scale_log2 : -INFINITY;
    s[3] = hi_ok ? (sa[3] + sb[3]) * p.scale_log2 : -INFINITY;
    float mx0 = fmaxf(s[0], s[2]);
    float mx1 = fmaxf(s[1], s[3]);
#pragma unroll
    for (int o = 4; o < 32; o <<= 1) {
      mx0 = fmaxf(mx0, __shfl_xor_sync(kFull, mx0, o));
      mx1 = fmaxf(mx1, __shfl_xor_sync(kFull, mx1, o));
    }
    // The segment has a token in this tile, so mx0 and mx1 are finite.
    const float n0 = fmaxf(m0, mx0), n1 = fmaxf(m1, mx1);
    const float al0 = Exp2(m0 - n0), al1 = Exp2(m1 - n1);
    const float p0 = Exp2(s[0] - n0), p1 = Exp2(s[1] - n1);
    const float p2 = Exp2(s[2] - n0), p3 = Exp2(s[3] - n1);
    l0 = l0 * al0 + p0 + p2;
    l1 = l1 * al1 + p1 + p3;
    m0 = n0;
    m1 = n1;
#pragma unroll
    for (int mt = 0; mt < kHeadDim / 16; ++mt) {
      acc[mt][0] *= al0;
      acc[mt][1] *= al1;
      acc[mt][2] *= al0;
      acc[mt][3] *= al1;
    }
    const uint32_t b0 = MovMatrixTrans(PackBf16(p0, p1));
    const uint32_t b1 = MovMatrixTrans(PackBf16(p2, p3));
#pragma unroll
    for (int mt = 0; mt < kHeadDim / 16; ++mt) {
      uint32_t a[4];
      LdMatrixX4Trans(a, vs_addr + Swz(vrow, 2 * mt + vhalf));
      Mma16816(acc[mt], a, b0, b1);
    }
    const int t_end = t0 + kTile;
    if (hi < ntok && hi <= t_end) {
      // The segment ends in this tile and the next one starts at hi.
      finish(false);
      b = nb;
      lo = hi;
      hi = min(sptr[b + 1] - bs, ntok);
      nb = hi < ntok ? FlatSeqAt(sptr, p.batch, bs + hi) : b;
#pragma unroll
      for (int ks = 0; ks < kHeadDim / 16; ++ks) {
        qf[ks][0] = qn[ks][0];
        qf[ks][1] = qn[ks][1];
      }
      load_q(qn, nb);
      m0 = m1 = -INFINITY;
      l0 = l1 = 0.f;
#pragma unroll
      for (int mt = 0; mt < kHeadDim / 16; ++mt) acc[mt][0] = acc[mt][1] = acc[mt][2] = acc[mt][3] = 0.f;
      if (lo < t_end) continue;  // the next segment starts inside this tile: take it again
    }
    __syncwarp();
    if (k + STAGES < ntiles) issue_data(k + STAGES);
    issue_idx(k + 2 * STAGES);
    CpAsyncCommit();
    ++k;
  }
  CpAsyncWait<0>();
  __syncwarp();
  finish(true);
  if (C > 1) {
    // ---- on-chip merges: every block's slot A / B partials are in place ----
    ClusterArrive();
    ClusterWait();
    if (own_b >= 0) MergeLocal(own_b, own_s, own_i0, own_n);
    ClusterArrive();
    ClusterWait();  // no block leaves while another may still read its shared memory
  }
}

// ---- host side ----

std::mutex g_tuning_mu;
FastTuning g_tuning;

constexpr int kMaxDevices = 64;
struct DeviceInfo {
  std::once_flag once;
  int num_sms = 0;
  int cc_major = 0;
  int blocks_per_sm[5] = {0, 0, 0, 0, 0};     // v1, by stages
  int blocks_per_sm_v2[5] = {0, 0, 0, 0, 0};  // v2 (split), by stages
  int max_cluster[5] = {0, 0, 0, 0, 0};       // v2 cluster mode: largest cluster that fits, by stages (0: none)
  int blocks_per_sm_flat[5] = {0, 0, 0, 0, 0};  // flat, by stages
  int flat_clusters[5][9] = {};                 // flat: co-resident clusters, by stages and size (2, 4, 8)
  cudaError_t error = cudaSuccess;
};
DeviceInfo g_devices[kMaxDevices];

size_t SmemBytes(int stages) { return static_cast<size_t>(kWarps) * stages * 2 * kTileBytes; }
size_t SmemBytesV2(int stages) { return static_cast<size_t>(kWarps) * WarpBytesV2(stages); }
size_t SmemBytesCluster(int stages) { return SmemBytesV2(stages) + kRecvBytes; }
size_t SmemBytesFlat(int stages) { return static_cast<size_t>(kWarps) * WarpBytesFlat(stages) + kPtrBytes; }

template <int S>
cudaError_t ConfigureFlat(int cc_major, int* blocks_per_sm, int* clusters) {
  cudaError_t e = cudaFuncSetAttribute(GqaDecodeFlat<S>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                       static_cast<int>(SmemBytesFlat(S)));
  if (e != cudaSuccess) return e;
  e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(blocks_per_sm, GqaDecodeFlat<S>, kThreads, SmemBytesFlat(S));
  if (e != cudaSuccess || cc_major < 9) return e;
  for (int cs : {2, 4, 8}) {
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = dim3(cs, 1, 1);
    cfg.blockDim = dim3(kThreads, 1, 1);
    cfg.dynamicSmemBytes = SmemBytesFlat(S);
    cudaLaunchAttribute attr;
    attr.id = cudaLaunchAttributeClusterDimension;
    attr.val.clusterDim.x = cs;
    attr.val.clusterDim.y = 1;
    attr.val.clusterDim.z = 1;
    cfg.attrs = &attr;
    cfg.numAttrs = 1;
    int n = 0;
    if (cudaOccupancyMaxActiveClusters(&n, GqaDecodeFlat<S>, &cfg) != cudaSuccess) {
      (void)cudaGetLastError();
      n = 0;
    }
    clusters[cs] = n;
  }
  return cudaSuccess;
}

template <int S>
cudaError_t Configure(int* blocks_per_sm) {
  cudaError_t e = cudaFuncSetAttribute(GqaDecodeV1<S>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                       static_cast<int>(SmemBytes(S)));
  if (e != cudaSuccess) return e;
  return cudaOccupancyMaxActiveBlocksPerMultiprocessor(blocks_per_sm, GqaDecodeV1<S>, kThreads, SmemBytes(S));
}

template <int S>
cudaError_t ConfigureV2(int cc_major, int* blocks_per_sm, int* max_cluster) {
  cudaError_t e = cudaFuncSetAttribute(GqaDecodeV2<S, false>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                       static_cast<int>(SmemBytesV2(S)));
  if (e != cudaSuccess) return e;
  e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(blocks_per_sm, GqaDecodeV2<S, false>, kThreads, SmemBytesV2(S));
  if (e != cudaSuccess) return e;
  *max_cluster = 0;
  if (cc_major < 9) return cudaSuccess;
  e = cudaFuncSetAttribute(GqaDecodeV2<S, true>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                           static_cast<int>(SmemBytesCluster(S)));
  if (e != cudaSuccess) return e;
  if (cudaFuncSetAttribute(GqaDecodeV2<S, true>, cudaFuncAttributeNonPortableClusterSizeAllowed, 1) != cudaSuccess)
    (void)cudaGetLastError();  // portable sizes (<= 8) only
  for (int cs : {kMaxCluster, 8, 4, 2}) {
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = dim3(cs, 1, 1);
    cfg.blockDim = dim3(kThreads, 1, 1);
    cfg.dynamicSmemBytes = SmemBytesCluster(S);
    cudaLaunchAttribute attr;
    attr.id = cudaLaunchAttributeClusterDimension;
    attr.val.clusterDim.x = cs;
    attr.val.clusterDim.y = 1;
    attr.val.clusterDim.z = 1;
    cfg.attrs = &attr;
    cfg.numAttrs = 1;
    int n = 0;
    if (cudaOccupancyMaxActiveClusters(&n, GqaDecodeV2<S, true>, &cfg) != cudaSuccess) {
      (void)cudaGetLastError();
      continue;
    }
    if (n > 0) {
      *max_cluster = cs;
      break;
    }
  }
  return cudaSuccess;
}

const DeviceInfo* GetDeviceInfo(int* device) {
  if (cudaGetDevice(device) != cudaSuccess || *device < 0 || *device >= kMaxDevices) return nullptr;
  DeviceInfo& d = g_devices[*device];
  std::call_once(d.once, [&] {
    d.error = cudaDeviceGetAttribute(&d.num_sms, cudaDevAttrMultiProcessorCount, *device);
    if (d.error == cudaSuccess) d.error = cudaDeviceGetAttribute(&d.cc_major, cudaDevAttrComputeCapabilityMajor, *device);
    if (d.error == cudaSuccess) d.error = Configure<2>(&d.blocks_per_sm[2]);
    if (d.error == cudaSuccess) d.error = Configure<3>(&d.blocks_per_sm[3]);
    if (d.error == cudaSuccess) d.error = Configure<4>(&d.blocks_per_sm[4]);
    if (d.error == cudaSuccess) d.error = ConfigureV2<2>(d.cc_major, &d.blocks_per_sm_v2[2], &d.max_cluster[2]);
    if (d.error == cudaSuccess) d.error = ConfigureV2<3>(d.cc_major, &d.blocks_per_sm_v2[3], &d.max_cluster[3]);
    if (d.error == cudaSuccess) d.error = ConfigureV2<4>(d.cc_major, &d.blocks_per_sm_v2[4], &d.max_cluster[4]);
    if (d.error == cudaSuccess) d.error = ConfigureFlat<2>(d.cc_major, &d.blocks_per_sm_flat[2], d.flat_clusters[2]);
    if (d.error == cudaSuccess) d.error = ConfigureFlat<3>(d.cc_major, &d.blocks_per_sm_flat[3], d.flat_clusters[3]);
    if (d.error == cudaSuccess) d.error = ConfigureFlat<4>(d.cc_major, &d.blocks_per_sm_flat[4], d.flat_clusters[4]);
  });
  return d.error == cudaSuccess ? &d : nullptr;
}

uint64_t AlignUp(uint64_t x, uint64_t a) { return (x + a - 1) / a * a; }

struct WorkspaceLayout {
  uint64_t counters = 0, part_lse = 0, part_o = 0, total = 0;
};
// Partials of `heads_per_work` query heads per work item; counters: one per (sequence, counter_per_seq).
WorkspaceLayout Layout(int64_t batch, int64_t max_work, int64_t counters_per_seq, int64_t heads_per_work) {
  WorkspaceLayout l;
  l.counters = 0;
  l.part_lse = AlignUp(static_cast<uint64_t>(batch) * counters_per_seq * 4, 256);
  l.part_o = l.part_lse + AlignUp(static_cast<uint64_t>(max_work) * heads_per_work * 4, 256);
  l.total = l.part_o + static_cast<uint64_t>(max_work) * heads_per_work * kHeadDim * 4;
  return l;
}
WorkspaceLayout LayoutV1(int64_t batch, int64_t max_work) { return Layout(batch, max_work, kNumKvHeads, kNumKvHeads * kGroup); }
WorkspaceLayout LayoutV2(int64_t batch, int64_t max_work) { return Layout(batch, max_work, 1, kNumQoHeads); }
// Flat: counters [batch][4], then 2 partial records per block and KV head.
uint64_t FlatPartOffset(int64_t batch) { return AlignUp(static_cast<uint64_t>(batch) * kNumKvHeads * 4, 256); }
uint64_t FlatWorkspaceBytes(int64_t batch, int64_t nblocks) {
  return FlatPartOffset(batch) + static_cast<uint64_t>(nblocks) * 2 * kNumKvHeads * kRecBytes;
}

}  // namespace

void SetFastTuning(const FastTuning& tuning) {
  std::lock_guard<std::mutex> lock(g_tuning_mu);
  g_tuning = tuning;
}
FastTuning GetFastTuning() {
  std::lock_guard<std::mutex> lock(g_tuning_mu);
  return g_tuning;
}

int32_t PlanFast(const Args& args, FastPlan* plan) {
  int device = 0;
  const DeviceInfo* info = GetDeviceInfo(&device);
  if (!info) return KI_ERR_LAUNCH;
  const FastTuning t = GetFastTuning();
  const int64_t total = args.num_kv_indices;
  const int64_t batch = args.batch;
  *plan = FastPlan{};
  plan->num_sms = info->num_sms;
  // Evict-first K/V copies: measured (H200, cold L2 after the bench's flush)
  // faster up to 16x4096 tokens and slower at 64x8192; on up to 128 Ki tokens.
  plan->evict_first = t.evict_first == 1 || (t.evict_first == 0 && total <= kEvictFirstMaxTokens);

  int mode = t.mode;
  if (mode < kModeAuto || mode > kModeFlat) mode = kModeAuto;
  if (mode == kModeAuto) {
    // Chosen from what the host knows (batch, total tokens) by measurements on
    // an H200 (bench/results/gqa-decode-h200-2026-11-29-v2.md, -v3.md):
    // - one short sequence: a cluster of blocks shares it and merges on chip;
    // - long sequences on average: v2 split (whole 1 KiB page rows, index ring);
    // - otherwise (many short or ragged sequences, one long one): v1, whose
    //   per-KV-head merge stays cheap with many chunks per sequence.
    // Flat (stream-K) is never chosen: it balances ragged batches exactly but
    // streamed 2-6% slower than split and its global merges cost more (v3).
    const int64_t avg = total / std::max<int64_t>(1, batch);
    if (batch == 1 && total <= kClusterMaxTokens && info->cc_major >= 9 && info->max_cluster[2] > 0)
      mode = kModeCluster;
    else if (batch > 1 && avg >= kSplitMinAvgTokens)
      mode = kModeSplit;
    else
      mode = kModeLegacy;
  }
  if (mode == kModeCluster && (batch > 65535 || info->cc_major < 9)) mode = kModeSplit;
  if (mode == kModeFlat && (batch > kFlatMaxBatch || total > (int64_t{1} << 31) - 1)) mode = kModeLegacy;

  if (mode == kModeFlat) {
    const int stages = (t.stages >= 2 && t.stages <= 4) ? t.stages : 2;
    const int occ = std::max(1, info->blocks_per_sm_flat[stages]);
    const int64_t per_sm = t.per_sm > 0 ? std::min(t.per_sm, occ) : 1;
    const int64_t waves = t.waves > 0 ? t.waves : 1;
    const int64_t min_tokens = t.min_chunk > 0 ? t.min_chunk : 32;
    int64_t nblocks = static_cast<int64_t>(info->num_sms) * per_sm * waves;
    if (t.chunk_tokens > 0) nblocks = (total + t.chunk_tokens - 1) / t.chunk_tokens;
    nblocks = std::max<int64_t>(1, std::min<int64_t>(nblocks, (total + min_tokens - 1) / min_tokens));
    nblocks = std::min<int64_t>(nblocks, int64_t{1} << 24);
    // Thread-block clusters of C consecutive blocks merge the sequences that
    // lie inside one cluster on chip. With batch <= clusters, the number of
    // clusters is a multiple of batch, so equal-length sequences fall inside
    // clusters; any other sequence takes the global path. All clusters must
    // be co-resident (one wave).
    int cluster = 1;
    if (info->cc_major >= 9 && t.cluster != 1 && t.chunk_tokens <= 0 && waves == 1) {
      for (int cs : {8, 4, 2}) {
        if (t.cluster > 1 && cs != t.cluster) continue;
        int64_t ncl = nblocks / cs;
        if (batch <= ncl) ncl = batch * (ncl / batch);
        if (ncl < 1 || ncl > info->flat_clusters[stages][cs]) continue;
        cluster = cs;
        nblocks = ncl * cs;
        break;
      }
    }
    plan->cluster = cluster;
    plan->mode = kModeFlat;
    plan->chunk = static_cast<int>((total + nblocks - 1) / nblocks);
    plan->max_work = static_cast<int>(nblocks);
    plan->stages = stages;
    plan->blocks_per_sm = occ;
    plan->workspace_bytes = FlatWorkspaceBytes(batch, nblocks);
    return KI_OK;
  }

  if (mode == kModeLegacy) {
    const int stages = (t.stages >= 2 && t.stages <= 4) ? t.stages : 3;
    const int per_sm = std::max(1, info->blocks_per_sm[stages]);
    int64_t chunk = t.chunk_tokens;
    if (chunk <= 0) {
      const int64_t waves = t.waves > 0 ? t.waves : 2;
      const int64_t min_chunk = t.min_chunk > 0 ? t.min_chunk : 64;
      const int64_t blocks = static_cast<int64_t>(info->num_sms) * per_sm * waves / kNumKvHeads;
      chunk = (total + blocks - 1) / std::max<int64_t>(1, blocks);
      chunk = std::max<int64_t>(min_chunk, (chunk + kTile - 1) / kTile * kTile);
    }
    chunk = std::min<int64_t>(chunk, int64_t{1} << 30);
    const int64_t max_work = (total + chunk - 1) / chunk + batch;
    if (max_work > (int64_t{1} << 31) - 1) return KI_ERR_UNSUPPORTED;
    plan->mode = kModeLegacy;
    plan->chunk = static_cast<int>(chunk);
    plan->max_work = static_cast<int>(max_work);
    plan->stages = stages;
    plan->blocks_per_sm = per_sm;
    plan->workspace_bytes = LayoutV1(batch, max_work).total;
    return KI_OK;
  }

  // v2 depth: split 3 stages with one block per SM (v3 sweeps, same call:
  // 16x4096 44.65/45.16 us against 45.51/45.55 at 4 stages, 64x8192
  // 260.1/265.4 against 263.2/267.5); cluster mode (one short sequence, two
  // 16-token tiles per warp) 2 (1x362 5.96-6.00 us, 6.03-6.09 at 3).
  const int stages = (t.stages >= 2 && t.stages <= 4) ? t.stages : (mode == kModeSplit ? 3 : 2);
  if (mode == kModeCluster) {
    int cmax = info->max_cluster[stages];
    if (cmax <= 0) return KI_ERR_UNSUPPORTED;
    int64_t cs = t.cluster;
    if (cs <= 0) {
      // About tpb tokens per block (each warp: its KV head over them); up to
      // kClusterSoloTokens one block takes the sequence (no merge at all).
      const int64_t tpb = t.min_chunk > 0 ? t.min_chunk : 32;
      const int64_t avg = (total + batch - 1) / std::max<int64_t>(1, batch);
      cs = avg <= kClusterSoloTokens ? 1 : (avg + tpb - 1) / tpb;
    }
    cs = std::max<int64_t>(1, std::min<int64_t>(cs, cmax));
    plan->mode = kModeCluster;
    plan->push = t.cluster_merge != 1;
    plan->cluster = static_cast<int>(cs);
    plan->chunk = 0;
    plan->max_work = static_cast<int>(cs * batch);
    plan->stages = stages;
    plan->blocks_per_sm = std::max(1, info->blocks_per_sm_v2[stages]);
    plan->spec_len = (batch == 1 && total <= (int64_t{1} << 31) - 1) ? static_cast<int>(total) : -1;
    plan->workspace_bytes = 0;
    return KI_OK;
  }

  // Split mode (v2): blocks cover all 4 KV heads of their chunk.
  const int per_sm = std::max(1, info->blocks_per_sm_v2[stages]);
  int64_t chunk = t.chunk_tokens;
  if (chunk <= 0) {
    const int64_t waves = t.waves > 0 ? t.waves : 1;
    const int64_t min_chunk = t.min_chunk > 0 ? t.min_chunk : kMinChunkV2;
    // One block per SM unless asked (two 3-stage blocks per SM measured slower:
    // their chunks are half as long and each sequence has twice the partials).
    const int64_t aim_per_sm = t.per_sm > 0 ? std::min(t.per_sm, per_sm) : 1;
    const int64_t blocks = static_cast<int64_t>(info->num_sms) * aim_per_sm * waves;
    // sum_b ceil(len_b / chunk) <= total / chunk + batch: aiming at blocks - batch
    // keeps the launch within `blocks` whatever the lengths (when batch is small
    // against it), so one wave is one wave.
    const int64_t aim = blocks > 2 * batch ? blocks - batch : blocks;
    chunk = (total + aim - 1) / std::max<int64_t>(1, aim);
    chunk = std::max<int64_t>(min_chunk, (chunk + kTile - 1) / kTile * kTile);
  }
  chunk = std::min<int64_t>(chunk, int64_t{1} << 30);
  const int64_t max_work = (total + chunk - 1) / chunk + batch;
  if (max_work > (int64_t{1} << 31) - 1) return KI_ERR_UNSUPPORTED;
  plan->mode = kModeSplit;
  plan->spec_len = (batch == 1 && total <= (int64_t{1} << 31) - 1) ? static_cast<int>(total) : -1;
  plan->chunk = static_cast<int>(chunk);
  plan->max_work = static_cast<int>(max_work);
  plan->stages = stages;
  plan->blocks_per_sm = per_sm;
  plan->workspace_bytes = LayoutV2(batch, max_work).total;
  return KI_OK;
}

namespace {

int32_t LaunchLegacy(const Args& args, const FastPlan& plan, void* workspace, cudaStream_t s) {
  const WorkspaceLayout l = LayoutV1(args.batch, plan.max_work);
  uint8_t* ws = static_cast<uint8_t*>(workspace);
  Params p;
  p.q = static_cast<const __nv_bfloat16*>(args.q);
  p.k = static_cast<const __nv_bfloat16*>(args.k_cache);
  p.v = static_cast<const __nv_bfloat16*>(args.v_cache);
  p.indptr = args.kv_indptr;
  p.indices = args.kv_indices;
  p.out = static_cast<__nv_bfloat16*>(args.out);
  p.lse = args.lse;
  p.counters = reinterpret_cast<int32_t*>(ws + l.counters);
  p.part_lse = reinterpret_cast<float*>(ws + l.part_lse);
  p.part_o = reinterpret_cast<float*>(ws + l.part_o);
  p.batch = static_cast<int>(args.batch);
  p.chunk = plan.chunk;
  p.scale_log2 = args.sm_scale * kLog2e;
  const dim3 grid(static_cast<unsigned>(plan.max_work), kNumKvHeads);
  switch (plan.stages) {
    case 2: GqaDecodeV1<2><<<grid, kThreads, SmemBytes(2), s>>>(p); break;
    case 3: GqaDecodeV1<3><<<grid, kThreads, SmemBytes(3), s>>>(p); break;
    case 4: GqaDecodeV1<4><<<grid, kThreads, SmemBytes(4), s>>>(p); break;
    default: return KI_ERR_INTERNAL;
  }
  return cudaGetLastError() == cudaSuccess ? KI_OK : KI_ERR_LAUNCH;
}

template <int S>
cudaError_t LaunchV2(const Params2& p, const FastPlan& plan, cudaStream_t s) {
  if (plan.mode == kModeSplit) {
    GqaDecodeV2<S, false><<<dim3(static_cast<unsigned>(plan.max_work)), kThreads, SmemBytesV2(S), s>>>(p);
    return cudaGetLastError();
  }
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = dim3(static_cast<unsigned>(plan.cluster), static_cast<unsigned>(p.batch), 1);
  cfg.blockDim = dim3(kThreads, 1, 1);
  cfg.dynamicSmemBytes = SmemBytesCluster(S);
  cfg.stream = s;
  cudaLaunchAttribute attr;
  attr.id = cudaLaunchAttributeClusterDimension;
  attr.val.clusterDim.x = static_cast<unsigned>(plan.cluster);
  attr.val.clusterDim.y = 1;
  attr.val.clusterDim.z = 1;
  cfg.attrs = &attr;
  cfg.numAttrs = plan.cluster > 1 ? 1 : 0;
  return cudaLaunchKernelEx(&cfg, GqaDecodeV2<S, true>, p);
}

int32_t LaunchFlat(const Args& args, const FastPlan& plan, void* workspace, cudaStream_t s) {
  uint8_t* ws = static_cast<uint8_t*>(workspace);
  Params3 p;
  p.q = static_cast<const __nv_bfloat16*>(args.q);
  p.k = static_cast<const __nv_bfloat16*>(args.k_cache);
  p.v = static_cast<const __nv_bfloat16*>(args.v_cache);
  p.indptr = args.kv_indptr;
  p.indices = args.kv_indices;
  p.out = static_cast<__nv_bfloat16*>(args.out);
  p.lse = args.lse;
  p.counters = reinterpret_cast<int32_t*>(ws);
  p.part = reinterpret_cast<float*>(ws + FlatPartOffset(args.batch));
  p.batch = static_cast<int>(args.batch);
  p.total = static_cast<int>(args.num_kv_indices);
  p.nblocks = plan.max_work;
  p.cluster = plan.cluster > 1 ? plan.cluster : 1;
  p.inv_nblocks = 1.0 / plan.max_work;
  p.blocks_per_token = args.num_kv_indices > 0 ? static_cast<double>(plan.max_work) / args.num_kv_indices : 0.0;
  p.scale_log2 = args.sm_scale * kLog2e;
  p.evict_first = plan.evict_first ? 1 : 0;
  p.debug = GetFastTuning().debug;
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = dim3(static_cast<unsigned>(plan.max_work), 1, 1);
  cfg.blockDim = dim3(kThreads, 1, 1);
  cfg.dynamicSmemBytes = SmemBytesFlat(plan.stages);
  cfg.stream = s;
  cudaLaunchAttribute attr;
  attr.id = cudaLaunchAttributeClusterDimension;
  attr.val.clusterDim.x = static_cast<unsigned>(p.cluster);
  attr.val.clusterDim.y = 1;
  attr.val.clusterDim.z = 1;
  cfg.attrs = &attr;
  cfg.numAttrs = p.cluster > 1 ? 1 : 0;
  cudaError_t e;
  switch (plan.stages) {
    case 2: e = cudaLaunchKernelEx(&cfg, GqaDecodeFlat<2>, p); break;
    case 3: e = cudaLaunchKernelEx(&cfg, GqaDecodeFlat<3>, p); break;
    case 4: e = cudaLaunchKernelEx(&cfg, GqaDecodeFlat<4>, p); break;
    default: return KI_ERR_INTERNAL;
  }
  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    return KI_ERR_LAUNCH;
  }
  return KI_OK;
}

}  // namespace

int32_t LaunchFast(const Args& args, const FastPlan& plan, void* workspace, uint64_t workspace_bytes,
                   void* stream) {
  if (args.batch == 0) return KI_OK;
  if (workspace_bytes < plan.workspace_bytes || (!workspace && plan.workspace_bytes > 0))
    return KI_ERR_WORKSPACE_TOO_SMALL;
  cudaStream_t s = static_cast<cudaStream_t>(stream);
  if (plan.mode == kModeLegacy) return LaunchLegacy(args, plan, workspace, s);
  if (plan.mode == kModeFlat) return LaunchFlat(args, plan, workspace, s);
  if (plan.mode != kModeSplit && plan.mode != kModeCluster) return KI_ERR_INTERNAL;
  Params2 p;
  p.q = static_cast<const __nv_bfloat16*>(args.q);
  p.k = static_cast<const __nv_bfloat16*>(args.k_cache);
  p.v = static_cast<const __nv_bfloat16*>(args.v_cache);
  p.indptr = args.kv_indptr;
  p.indices = args.kv_indices;
  p.out = static_cast<__nv_bfloat16*>(args.out);
  p.lse = args.lse;
  p.counters = nullptr;
  p.part_lse = nullptr;
  p.part_o = nullptr;
  if (plan.mode == kModeSplit) {
    const WorkspaceLayout l = LayoutV2(args.batch, plan.max_work);
    uint8_t* ws = static_cast<uint8_t*>(workspace);
    p.counters = reinterpret_cast<int32_t*>(ws + l.counters);
    p.part_lse = reinterpret_cast<float*>(ws + l.part_lse);
    p.part_o = reinterpret_cast<float*>(ws + l.part_o);
  }
  p.batch = static_cast<int>(args.batch);
  p.chunk = plan.chunk;
  p.scale_log2 = args.sm_scale * kLog2e;
  p.spec_len = plan.spec_len;
  p.evict_first = plan.evict_first ? 1 : 0;
  p.push = plan.push ? 1 : 0;
  p.debug = GetFastTuning().debug;
  cudaError_t e;
  switch (plan.stages) {
    case 2: e = LaunchV2<2>(p, plan, s); break;
    case 3: e = LaunchV2<3>(p, plan, s); break;
    case 4: e = LaunchV2<4>(p, plan, s); break;
    default: return KI_ERR_INTERNAL;
  }
  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    return KI_ERR_LAUNCH;
  }
  return KI_OK;
}

}  // namespace ki::gqa
