// Fast GQA paged decode for sm_90a / sm_100a (any sm_80+ part runs it; cluster
// mode needs sm_90+). See docs/kernel-abi.md for the calling convention.
//
// One kernel template, GqaDecode<STAGES, MODE>, in three layouts (FastMode),
// chosen by the planner (plan.cc: ChooseFastPlan) from batch and total tokens:
// - per-head (kModeLegacy, "v1"): one block per (work item, KV head); its 4
//   warps take turns over the chunk's 16-token tiles of that head and merge
//   in shared memory.
// - split (kModeSplit): one block per work item covering all 4 KV heads, warp
//   w = KV head w, so the 4 warps read each page's K and V rows (1 KiB each)
//   whole and at about the same time.
// - cluster (kModeCluster): split whose work items are C times longer and
//   taken by a thread-block cluster of C blocks (equal parts), merged on chip
//   through distributed shared memory: each block pushes the rows (as bf16) other
//   blocks own into their receive areas, then one cluster barrier. A
//   sequence that spans several work items is then merged globally as in
//   split. One short sequence is one work item (the small case); the
//   automatic split plan groups the chunks of an average sequence into one
//   cluster, so equal lengths need no global merge.
// Common to all:
// - A work item is one chunk of one sequence; a sequence of len tokens gets
//   n = max(1, ceil(len / chunk)) balanced chunks. The host knows only batch
//   and the total token count (num_kv_indices), so it launches an upper bound
//   of work items (ceil(total / chunk) + batch) and each block finds its
//   (sequence, chunk) by scanning kv_indptr; surplus blocks exit at once. No
//   host reads of device data, no memset, no allocation: graph-capturable.
// - Split and cluster (up to 127 sequences) predict kv_indptr as the equal
//   split of the tokens: a block requests its Q rows and page indices before
//   kv_indptr arrives, then checks the whole kv_indptr and, on a miss, scans
//   it and starts again with chunk_any, a plan for any lengths (two waves of
//   shorter chunks when the batch is large against the SMs). The launch
//   covers both plans.
// - The 8 query heads of a KV head share every K/V tile, read once from
//   memory. Each warp streams its tiles through a private cp.async pipeline
//   (KvStream: 16-byte copies, STAGES deep); page indices travel ahead of the
//   data through a per-warp shared ring filled by 4-byte cp.async, the
//   indices of tile t + 2*STAGES requested with the data of tile t + STAGES,
//   so no tile copy waits on an index load.
// - Tensor cores with the 8 heads as the narrow (n = 8) dimension
//   (WarpSoftmax::Tile): S^T[16 tokens x 8 heads] = K[16 x 128] * Q^T, and
//   O^T[128 x 8] += V^T[128 x 16] * P^T[16 x 8], via mma.m16n8k16 (bf16 in,
//   fp32 accumulate). P^T's B fragment comes from S^T's accumulator fragment
//   by an in-register transpose (movmatrix), so P never touches shared
//   memory. Shared tiles are XOR-swizzled per 16-byte chunk so ldmatrix is
//   free of bank conflicts.
// - Base-2 online softmax: logits are scaled by sm_scale * log2(e) once, and
//   exp2 is a single ex2.approx instruction.
// - Split-KV merge in the same launch (per-head and split): a block of a
//   split sequence writes its normalised partial output and lse to the
//   workspace, fences, and bumps the sequence's counter; the block that sees
//   the count complete merges all partials and resets the counter to zero,
//   so every counter is zero again after every launch (the ABI's workspace
//   contract: no memset between calls).
// - Programmatic dependent launch for one sequence (FastPlan::pdl): the
//   launch allows the next grid in the stream to start early, the kernel
//   waits for the previous one (griddepcontrol.wait) before touching memory
//   and lets the next one launch at once; back-to-back calls in a CUDA graph
//   then hide the launch latency (bench/results/gqa-pdl-h200-2026-12-01.md).
// Measurements behind the plan: bench/results/gqa-decode-h200-*.md. The host
// side here reads what the device fits (DeviceLimits, by occupancy queries
// on these kernels), hands it to the planner, and launches the plan.
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <mutex>
#include <type_traits>
#include <utility>
#ifdef KI_GQA_TIMELINE
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>
#endif

#include "gqa_paged_decode/plan.h"

namespace ki::gqa {
namespace {

constexpr int kWarps = 4;
constexpr int kThreads = kWarps * 32;
constexpr int kRowBytes = kHeadDim * 2;            // one token of one KV head: 256 B
constexpr int kTileBytes = kTile * kRowBytes;      // 4 KiB
constexpr int kMergeStride = kHeadDim + 4;         // floats per head row in the staging buffer (bank padding)
constexpr int kRing = 16;                          // index ring slots (tiles) per warp; >= 2*STAGES+1
constexpr int kRingBytes = kRing * kTile * 4;      // 1 KiB
constexpr int kPageElems = kNumKvHeads * kHeadDim; // elements of one page of one cache
constexpr float kLog2e = 1.4426950408889634f;
constexpr unsigned kFull = 0xffffffffu;


struct Params {
  const __nv_bfloat16* q;
  const __nv_bfloat16* k;
  const __nv_bfloat16* v;
  const int32_t* indptr;
  const int32_t* indices;
  __nv_bfloat16* out;
  float* lse;
  float* part_o;      // per-head: [max_work][4][8][128]; split, cluster: [max_work][32][128]
  float* part_lse;    // per-head: [max_work][4][8];      split, cluster: [max_work][32]
  int32_t* counters;  // per-head: [batch][4];             split, cluster: [batch]
  int batch;
  int chunk;          // tokens per work item at most (cluster mode: per cluster, C times a block's)
  int chunk_any;      // the same for lengths found by FindWork (split, cluster: after a prediction miss)
  float scale_log2;
  // Split and cluster: kv_indptr predicted as the equal split of the tokens
  // (kv_indptr[i] = i * pred_len + min(i, pred_long)), checked, redone if
  // wrong; pred_chunks (_long): work items of a pred_len (+1) token sequence.
  int predict;
  int pred_len, pred_long, pred_chunks, pred_chunks_long;
  int evict_first;  // K/V copies with an L2 evict-first policy
  int cluster;      // cluster mode: blocks per thread-block cluster (= per work item)
};

// Programmatic dependent launch (sm_90+). The wait returns once the grid
// before this one in the stream has completed and its writes are visible (at
// once for a grid launched without the attribute), so every read of the
// inputs and every write of the outputs and the workspace come after it.
// The trigger lets the next grid in the stream be launched while this one
// runs, hiding its launch latency (back-to-back calls in a CUDA graph); the
// next grid then sits in its own wait until this one is done.
__device__ __forceinline__ void GridDependencyWait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;\n" ::: "memory");
#endif
}
__device__ __forceinline__ void LaunchDependents() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
#endif
}

__device__ __forceinline__ uint32_t SmemAddr(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

// No L2 prefetch-size qualifier: .L2::128B measured the same as none and
// .L2::256B 7% slower on 64x8192 (271 against 253 us, same call, 2026-11-30).
__device__ __forceinline__ void CpAsync16(uint32_t dst, const void* src, int src_bytes) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(src_bytes));
}
__device__ __forceinline__ void CpAsync16Hint(uint32_t dst, const void* src, int src_bytes, uint64_t pol) {
  asm volatile("cp.async.cg.shared.global.L2::cache_hint [%0], [%1], 16, %2, %3;\n" ::"r"(dst), "l"(src),
               "r"(src_bytes), "l"(pol));
}
__device__ __forceinline__ void CpAsync4(uint32_t dst, const void* src) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4;\n" ::"r"(dst), "l"(src));
}
__device__ __forceinline__ void CpAsyncCommit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N>
__device__ __forceinline__ void CpAsyncWait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
}
__device__ __forceinline__ uint64_t EvictNormalPolicy() {
  uint64_t pol;
  asm volatile("createpolicy.fractional.L2::evict_normal.b64 %0, 1.0;\n" : "=l"(pol));
  return pol;
}
__device__ __forceinline__ uint64_t EvictFirstPolicy() {
  uint64_t pol;
  asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;\n" : "=l"(pol));
  return pol;
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
__device__ __forceinline__ float Exp2(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
  return y;
}
// Approximate reciprocal and log2 (one instruction each, no IEEE slow path
// with its range tests and branches: about 40 instructions fewer on a
// batch-1 call's critical path; 0.1-0.15 us per call): for softmax sums of
// at least 1 (the largest term is 2^0) and their reciprocals.
__device__ __forceinline__ float FastRcp(float x) {
  float y;
  asm("rcp.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
  return y;
}
__device__ __forceinline__ float FastLog2(float x) {
  float y;
  asm("lg2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
  return y;
}
__device__ __forceinline__ uint32_t PackBf16(float lo, float hi) {
  __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
  return *reinterpret_cast<uint32_t*>(&v);
}
__device__ __forceinline__ uint4 PackBf16x8(const float (&v)[8], float scale) {
  uint4 r;
  r.x = PackBf16(v[0] * scale, v[1] * scale);
  r.y = PackBf16(v[2] * scale, v[3] * scale);
  r.z = PackBf16(v[4] * scale, v[5] * scale);
  r.w = PackBf16(v[6] * scale, v[7] * scale);
  return r;
}
// Byte offset of 16-byte chunk `chunk` of row `row` in a swizzled tile.
__device__ __forceinline__ uint32_t Swz(int row, int chunk) {
  return static_cast<uint32_t>(row * kRowBytes + ((chunk ^ (row & 7)) << 4));
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
__device__ __forceinline__ void StCluster4(uint32_t addr, uint4 v) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("st.shared::cluster.v4.b32 [%0], {%1,%2,%3,%4};\n" ::"r"(addr), "r"(v.x), "r"(v.y), "r"(v.z),
               "r"(v.w)
               : "memory");
#endif
}
__device__ __forceinline__ void StCluster1(uint32_t addr, float v) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("st.shared::cluster.f32 [%0], %1;\n" ::"r"(addr), "f"(v) : "memory");
#endif
}
__device__ __forceinline__ int ClusterRank() {
  uint32_t r = 0;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm("mov.u32 %0, %%cluster_ctarank;\n" : "=r"(r));
#endif
  return static_cast<int>(r);
}
__device__ __forceinline__ int ClusterIdX() {
  uint32_t r = 0;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm("mov.u32 %0, %%clusterid.x;\n" : "=r"(r));
#endif
  return static_cast<int>(r);
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

// Shared memory of one warp: STAGES (K tile, V tile) pairs, then the index ring.
__host__ __device__ constexpr int WarpBytes(int stages) { return stages * 2 * kTileBytes + kRingBytes; }
// Cluster mode: each block receives, from every block of the cluster, the
// items (8 dimensions of one query head) it owns, and every lse. An item
// travels as 8 bf16 (16 bytes; the lse stay fp32): half the bytes of fp32
// pushed and read by the merge. A partial is a weighted mean of V rows, so
// its rounding adds at most 2^-9 of the largest partial's magnitude to an
// output, the size of the output's own bf16 rounding unless the partials
// cancel. Against ki's CUDA reference (atol = rtol = 1e-2) the max_abs error
// moved by at most one bf16 step (64x8192 random lengths 9.8e-4 -> 2.0e-3;
// the 48 workloads' worst unchanged, 3.9e-3). H200, same call, 2026-12-03:
// 16x4096 40.66 -> 40.31 us cold, 1x362 5.57 -> 4.96, 1x2048 10.64 -> 10.18,
// the 48 workloads summed 924.6 -> 920.6, nothing slower beyond spread
// (bench/results/gqa-gap-h200-2026-12-03.md). The area keeps its fp32 size:
// half of it would let two 3-stage cluster blocks fit an SM, a change of
// plans not measured.
constexpr int kMergeItems = kNumQoHeads * kHeadDim / 8;    // 512
constexpr int kRecvItems = kMergeItems + kMaxCluster - 1;  // >= C * ceil(512 / C) for C <= 16
constexpr int kRecvItemBytes = 16;                         // one item as it travels: 8 bf16
constexpr int kRecvBytes = kRecvItems * 32 + kMaxCluster * kNumQoHeads * 4;

// Which (sequence, chunk) work item `work` is, for chunks of at most `chunk`
// tokens: a block-wide scan of the chunk counts of kv_indptr. Every thread
// calls it; false for a surplus block (then every thread returns false).
struct WorkItem {
  int b, chunk_idx, nchunks, first_work;
};
__device__ __forceinline__ bool FindWork(const int32_t* indptr, int batch, int chunk, int work, WorkItem* w) {
  __shared__ int s_scan[kWarps];
  __shared__ int s_work[4];
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  if (tid == 0) s_work[0] = -1;
  int base_work = 0;
  for (int base = 0; base < batch; base += kThreads) {
    const int i = base + tid;
    int cnt = 0;
    if (i < batch) {
      const int len = __ldg(indptr + i + 1) - __ldg(indptr + i);
      cnt = len <= 0 ? 1 : (len + chunk - 1) / chunk;
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
    if (i < batch && work >= excl && work < incl) {
      s_work[0] = i;
      s_work[1] = work - excl;
      s_work[2] = cnt;
      s_work[3] = excl;
    }
    __syncthreads();
    base_work += total;
    if (s_work[0] >= 0 || work < base_work) break;
  }
  *w = {s_work[0], s_work[1], s_work[2], s_work[3]};
  return w->b >= 0;
}

// Prediction of kv_indptr (split and cluster modes): the equal split of the
// tokens over the batch. A block that trusts it requests its Q rows and page
// indices at once, while kv_indptr is read to check it, instead of after a
// round trip for kv_indptr (16x4096: 41.66 / 42.18 us against 42.28 / 42.52
// without, two calls, 2026-11-30; random lengths no slower). Every warp
// reads all batch + 1 entries (at most kPredMaxBatch + 1: 4 per lane), so
// every warp of every block reaches the same verdict without a barrier.
__device__ __forceinline__ int PredictedIndptr(const Params& p, int i) { return i * p.pred_len + min(i, p.pred_long); }
// The work item `work` is under the prediction (b = -1: surplus).
__device__ __forceinline__ WorkItem PredictWork(const Params& p, int work) {
  const int n1 = p.pred_chunks_long, n0 = p.pred_chunks;
  const int long_work = p.pred_long * n1;  // the longer sequences come first
  if (work < long_work) {
    const int b = work / n1;
    return {b, work - b * n1, n1, b * n1};
  }
  const int rest = work - long_work;
  const int b = p.pred_long + rest / n0;
  if (b >= p.batch) return {-1, 0, 0, 0};
  const int first = long_work + (b - p.pred_long) * n0;
  return {b, work - first, n0, first};
}
struct IndptrCheck {
  int v[4];  // entries lane + 32k
  __device__ __forceinline__ void Load(const Params& p, int lane) {
#pragma unroll
    for (int k = 0; k < 4; ++k) v[k] = lane + 32 * k <= p.batch ? __ldg(p.indptr + lane + 32 * k) : 0;
  }
  __device__ __forceinline__ bool Holds(const Params& p, int lane) const {
    bool bad = false;
#pragma unroll
    for (int k = 0; k < 4; ++k) bad |= lane + 32 * k <= p.batch && v[k] != PredictedIndptr(p, lane + 32 * k);
    return !__any_sync(kFull, bad);
  }
};

// Q^T of the 8 query heads from query row `row0` on, as mma B fragments:
// qf[ks][0] = Q[head g][16ks + 2c .. +1], qf[ks][1] = the same + 8.
__device__ __forceinline__ void LoadQ(uint32_t (&qf)[kHeadDim / 16][2], const __nv_bfloat16* q, size_t row0,
                                      int lane) {
  const uint32_t* qrow = reinterpret_cast<const uint32_t*>(q + (row0 + (lane >> 2)) * kHeadDim + 2 * (lane & 3));
#pragma unroll
  for (int ks = 0; ks < kHeadDim / 16; ++ks) {
    qf[ks][0] = __ldg(qrow + ks * 8);
    qf[ks][1] = __ldg(qrow + ks * 8 + 4);
  }
}

// One warp's K/V stream of one KV head: tile k holds the 16 tokens from
// first + k * stride on of the chunk idx[0, ntok), copied into stage
// k % STAGES of the warp's shared memory (rows past the chunk zero-filled, so
// their zero probabilities never meet garbage). Page indices travel either
// through the shared ring (slot k % kRing, requested 2*STAGES tiles ahead by
// 4-byte cp.async) or, kRegIdx, in registers (lane l holds row l % 16 of a
// tile, loaded STAGES + 1 tiles ahead): per-head blocks, which have few tiles
// per warp, measured 2-7% faster on the definition's batch-16/64 workloads
// with registers (their first copies wait on one global load, not on a
// cp.async round trip through shared memory), and so did the one-sequence
// kWhole instance (two tiles per warp: 1x362 5.89 us against 5.99 with the
// ring, same call, 2026-11-30). Those copies always carry an L2 policy
// (evict-normal unless evict-first is asked): with that, the batch-16/64
// workloads summed 315 / 636 us against 328 / 662 with plain cp.async (same
// call, 2026-11-30); split and cluster keep plain copies without the hint (an
// evict-normal policy there made 64x8192 289 us against 258).
template <int STAGES, bool kRegIdx>
struct KvStream {
  static_assert(2 * STAGES + 1 <= kRing, "index ring too small for the pipeline depth");
  uint32_t smem;  // the warp's WarpBytes(STAGES) region
  const int32_t* ring;
  const __nv_bfloat16* kbase;
  const __nv_bfloat16* vbase;
  const int32_t* idx;
  int ntok, first, stride, ntiles;
  uint64_t pol;
  bool hint;
  int lane;
  int pidx[STAGES];  // kRegIdx: the first STAGES tiles' indices
  int pnext;         // kRegIdx: the indices of the next tile to copy

  __device__ __forceinline__ int TileStart(int k) const { return first + k * stride; }
  __device__ __forceinline__ uint32_t Stage(int k) const { return smem + (k % STAGES) * 2 * kTileBytes; }
  __device__ __forceinline__ int LoadIndex(int k) const {
    const int t = TileStart(k) + (lane & 15);  // past the last tile, t >= ntok
    return t < ntok ? __ldg(idx + t) : 0;
  }
  __device__ __forceinline__ void IssueIdx(int k) const {
    const int tok = TileStart(k) + lane;
    if (lane < kTile && tok < ntok)
      CpAsync4(smem + STAGES * 2 * kTileBytes + ((k & (kRing - 1)) * kTile + lane) * 4, idx + tok);
  }
  // Copies tile k; page: this lane's register index (kRegIdx), else unused.
  __device__ __forceinline__ void IssueData(int k, int page) const {
    const uint32_t kdst = Stage(k);
    const uint32_t vdst = kdst + kTileBytes;
    const int32_t* slot = ring + (k & (kRing - 1)) * kTile;
    const int t0 = TileStart(k);
    const int cc = lane & 15;
    // Byte addresses from one 32x32->64-bit multiply per row (page indices
    // are non-negative): half the address arithmetic of an element offset
    // (size_t(page) * 512 + 8 cc, scaled and added per cache), which sits on
    // the path from the index to the copies (batch 1, up to 16 tokens: part
    // of 0.1 us per call in a CUDA graph, bench/results/gpu-2026-12-01.md).
    const char* kl = reinterpret_cast<const char*>(kbase + cc * 8);
    const char* vl = reinterpret_cast<const char*>(vbase + cc * 8);
#pragma unroll
    for (int i = 0; i < kTile / 2; ++i) {
      const int r = (lane >> 4) + 2 * i;
      const bool valid = t0 + r < ntok;
      int pg;
      if constexpr (kRegIdx) pg = __shfl_sync(kFull, page, r);
      else pg = valid ? slot[r] : 0;
      const uint64_t off = static_cast<uint64_t>(static_cast<uint32_t>(pg)) * (kPageElems * 2);
      const void* ksrc = kl + off;
      const void* vsrc = vl + off;
      const int n = valid ? 16 : 0;
      if (kRegIdx || hint) {
        CpAsync16Hint(kdst + Swz(r, cc), ksrc, n, pol);
        CpAsync16Hint(vdst + Swz(r, cc), vsrc, n, pol);
      } else {
        CpAsync16(kdst + Swz(r, cc), ksrc, n);
        CpAsync16(vdst + Swz(r, cc), vsrc, n);
      }
    }
  }
  // The indices of the first STAGES tiles (ring: one commit group).
  __device__ __forceinline__ void IssueFirstIndices() {
    if constexpr (kRegIdx) {
#pragma unroll
      for (int s = 0; s < STAGES; ++s) pidx[s] = LoadIndex(s);
    } else {
#pragma unroll
      for (int s = 0; s < STAGES; ++s) IssueIdx(s);
      CpAsyncCommit();
    }
  }
  // Once those indices are there: the first STAGES tiles' data (ring: each
  // with the indices STAGES tiles further on).
  __device__ __forceinline__ void StartData() {
    if constexpr (kRegIdx) {
#pragma unroll
      for (int s = 0; s < STAGES; ++s) {
        if (s < ntiles) IssueData(s, pidx[s]);
        CpAsyncCommit();
      }
      pnext = LoadIndex(STAGES);
    } else {
      CpAsyncWait<0>();
      __syncwarp();
#pragma unroll
      for (int s = 0; s < STAGES; ++s) {
        if (s < ntiles) IssueData(s, 0);
        IssueIdx(STAGES + s);
        CpAsyncCommit();
      }
    }
  }
  // Tile k is in shared memory (returns its K tile; V follows).
  __device__ __forceinline__ uint32_t Wait(int k) const {
    CpAsyncWait<STAGES - 1>();
    __syncwarp();
    return Stage(k);
  }
  // Tile k is consumed: its stage takes tile k + STAGES.
  __device__ __forceinline__ void Next(int k) {
    __syncwarp();
    if (k + STAGES < ntiles) IssueData(k + STAGES, kRegIdx ? pnext : 0);
    if constexpr (kRegIdx) {
      CpAsyncCommit();
      pnext = LoadIndex(k + STAGES + 1);
    } else {
      IssueIdx(k + 2 * STAGES);
      CpAsyncCommit();
    }
  }
};

// One warp's online softmax over 8 query heads x 128 dimensions (base 2).
// Thread (g = lane / 4, c = lane % 4) holds the running max and its share
// of the sum of heads 2c and 2c + 1, and acc[mt] = O^T rows 16mt + g (+8).
// kSumByMma (the lean batch-1 instance): the sums come from one more mma per
// tile, an all-ones A against P^T (every row of the result is the sum of the
// tile's bf16 probabilities per head, the same rounded values the output's
// numerator uses), so every thread holds its heads' whole sums and the
// three-shuffle reduction after the loop is gone from the critical path.
template <bool kSumByMma = false>
struct WarpSoftmax {
  __device__ __forceinline__ static float Inv(float l) { return l > 0.f ? FastRcp(l) : 0.f; }
  __device__ __forceinline__ static float Lse(float m, float l) { return l > 0.f ? m + FastLog2(l) : -INFINITY; }
  float m0, m1, l0, l1;
  float acc[kHeadDim / 16][4];
  float lacc[4];  // kSumByMma: [0] = sum of head 2c, [1] = of head 2c + 1 ([2], [3]: the same again)

  __device__ __forceinline__ void Init() {
    m0 = m1 = -INFINITY;
    l0 = l1 = 0.f;
    lacc[0] = lacc[1] = lacc[2] = lacc[3] = 0.f;
#pragma unroll
    for (int mt = 0; mt < kHeadDim / 16; ++mt) acc[mt][0] = acc[mt][1] = acc[mt][2] = acc[mt][3] = 0.f;
  }

  // Folds in the tile at ks_addr (K, then V) whose row r is token t0 + r;
  // tokens at or past ntok are masked. Row 0 must be a token (t0 < ntok).
  // kFirst: the first tile (the state is Init's), no rescaling.
  template <bool kFirst = false>
  __device__ __forceinline__ void Tile(uint32_t ks_addr, const uint32_t (&qf)[kHeadDim / 16][2], int t0, int ntok,
                                       float scale_log2, int lane) {
    const int g = lane >> 2;
    const int krow = (lane & 7) | (((lane >> 3) & 1) << 3);  // ldmatrix row for K (non-transposed)
    const int khalf = lane >> 4;
    const int vrow = (lane & 7) | ((lane >> 4) << 3);  // ldmatrix row for V (transposed)
    const int vhalf = (lane >> 3) & 1;
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
    const bool lo_ok = t0 + g < ntok;
    const bool hi_ok = t0 + g + 8 < ntok;
    float s[4];
    s[0] = lo_ok ? (sa[0] + sb[0]) * scale_log2 : -INFINITY;
    s[1] = lo_ok ? (sa[1] + sb[1]) * scale_log2 : -INFINITY;
    s[2] = hi_ok ? (sa[2] + sb[2]) * scale_log2 : -INFINITY;
    s[3] = hi_ok ? (sa[3] + sb[3]) * scale_log2 : -INFINITY;
    float mx0 = fmaxf(s[0], s[2]);
    float mx1 = fmaxf(s[1], s[3]);
#pragma unroll
    for (int o = 4; o < 32; o <<= 1) {
      mx0 = fmaxf(mx0, __shfl_xor_sync(kFull, mx0, o));
      mx1 = fmaxf(mx1, __shfl_xor_sync(kFull, mx1, o));
    }
    // Row 0 is a real token, so mx0 and mx1 are finite.
    const float n0 = kFirst ? mx0 : fmaxf(m0, mx0), n1 = kFirst ? mx1 : fmaxf(m1, mx1);
    const float p0 = Exp2(s[0] - n0), p1 = Exp2(s[1] - n1);
    const float p2 = Exp2(s[2] - n0), p3 = Exp2(s[3] - n1);
    if constexpr (kFirst) {
      if constexpr (!kSumByMma) {
        l0 = p0 + p2;
        l1 = p1 + p3;
      }
      m0 = n0;
      m1 = n1;
    } else {
      const float al0 = Exp2(m0 - n0), al1 = Exp2(m1 - n1);
      if constexpr (kSumByMma) {
        lacc[0] *= al0;
        lacc[1] *= al1;
        lacc[2] *= al0;
        lacc[3] *= al1;
      } else {
        l0 = l0 * al0 + p0 + p2;
        l1 = l1 * al1 + p1 + p3;
      }
      m0 = n0;
      m1 = n1;
#pragma unroll
      for (int mt = 0; mt < kHeadDim / 16; ++mt) {
        acc[mt][0] *= al0;
        acc[mt][1] *= al1;
        acc[mt][2] *= al0;
        acc[mt][3] *= al1;
      }
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
    if constexpr (kSumByMma) {
      constexpr uint32_t kOnes = 0x3F803F80u;  // two bf16 1.0
      const uint32_t ones[4] = {kOnes, kOnes, kOnes, kOnes};
      Mma16816(lacc, ones, b0, b1);
    }
  }

  // The warp's whole sums (kSumByMma: already in every thread).
  __device__ __forceinline__ void ReduceSums() {
    if constexpr (kSumByMma) {
      l0 = lacc[0];
      l1 = lacc[1];
    } else {
#pragma unroll
      for (int o = 4; o < 32; o <<= 1) {
        l0 += __shfl_xor_sync(kFull, l0, o);
        l1 += __shfl_xor_sync(kFull, l1, o);
      }
    }
  }

  // Writes the normalised result: F[head][kMergeStride] floats, then the 8
  // base-2 lse (-inf for a head that saw no token, whose row is 0).
  __device__ __forceinline__ void Stage(float* F, int lane) {
    const int g = lane >> 2, c = lane & 3;
    ReduceSums();
    const float inv0 = Inv(l0);
    const float inv1 = Inv(l1);
#pragma unroll
    for (int mt = 0; mt < kHeadDim / 16; ++mt) {
      const int d = mt * 16 + g;
      F[(2 * c) * kMergeStride + d] = acc[mt][0] * inv0;
      F[(2 * c + 1) * kMergeStride + d] = acc[mt][1] * inv1;
      F[(2 * c) * kMergeStride + d + 8] = acc[mt][2] * inv0;
      F[(2 * c + 1) * kMergeStride + d + 8] = acc[mt][3] * inv1;
    }
    float* FL = F + kGroup * kMergeStride;
    if (g == 0) {
      FL[2 * c] = Lse(m0, l0);
      FL[2 * c + 1] = Lse(m1, l1);
    }
    __syncwarp();
  }
};

// Accumulates f * x[0..7] into o.
__device__ __forceinline__ void Axpy8(float (&o)[8], float f, const float4& x0, const float4& x1) {
  o[0] += f * x0.x; o[1] += f * x0.y; o[2] += f * x0.z; o[3] += f * x0.w;
  o[4] += f * x1.x; o[5] += f * x1.y; o[6] += f * x1.z; o[7] += f * x1.w;
}

// One warp merges n normalised partials of its 8 query heads (split-KV):
// o_of(j) -> 8 x 128 floats (head-major), lse_of(j) -> 8 base-2 lse. The
// partials travel by cp.async into shared memory, cap at a time (buf: cap
// records of kRecBytesM, 16-byte aligned), the first batch requested before
// the lse pass so that both are in flight together; the weights are fixed
// after the lse pass, so the batches need no rescaling. Writes the 8 output
// rows (out: row 0 of the 8, bf16) and their lse.
constexpr int kRecFloatsM = kGroup * kHeadDim + kGroup;  // o[8][128], lse[8]
constexpr int kRecBytesM = kRecFloatsM * 4;
template <class OFn, class LFn>
__device__ __forceinline__ void WarpMerge(int n, OFn o_of, LFn lse_of, float* buf, int cap, __nv_bfloat16* out,
                                          float* lse_out, int lane) {
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
    W[jj] = L > 0.f ? FastRcp(L) : 0.f;
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
        Axpy8(acc[jj], f, *reinterpret_cast<const float4*>(rec + h * kHeadDim + d0),
              *reinterpret_cast<const float4*>(rec + h * kHeadDim + d0 + 4));
      }
    }
    __syncwarp();  // the next batch overwrites buf
  }
#pragma unroll
  for (int jj = 0; jj < 4; ++jj) {
    const int h = (lane >> 4) + 2 * jj;
    *reinterpret_cast<uint4*>(out + h * kHeadDim + d0) = PackBf16x8(acc[jj], 1.f);
    if ((lane & 15) == 0) lse_out[h] = W[jj] > 0.f ? M[jj] - FastLog2(W[jj]) : -INFINITY;
  }
}

// Writes one warp's staged rows (F, see WarpSoftmax::Stage) to 8 rows of
// 128: bf16 output rows (out) or fp32 partial rows (part), and the 8 lse.
template <int kTo = 0>  // 0: out if non-null, else part; 1: out (no run-time test)
__device__ __forceinline__ void StoreStaged(const float* F, __nv_bfloat16* out, float* part, float* lse, int lane) {
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    const int item = lane + 32 * j;
    const int hd = item >> 4;
    const int d0 = (item & 15) * 8;
    const float4 x0 = *reinterpret_cast<const float4*>(F + hd * kMergeStride + d0);
    const float4 x1 = *reinterpret_cast<const float4*>(F + hd * kMergeStride + d0 + 4);
    if (kTo == 1 || out) {
      const float v[8] = {x0.x, x0.y, x0.z, x0.w, x1.x, x1.y, x1.z, x1.w};
      *reinterpret_cast<uint4*>(out + hd * kHeadDim + d0) = PackBf16x8(v, 1.f);
    } else {
      *reinterpret_cast<float4*>(part + hd * kHeadDim + d0) = x0;
      *reinterpret_cast<float4*>(part + hd * kHeadDim + d0 + 4) = x1;
    }
  }
  if (lane < kGroup) lse[lane] = F[kGroup * kMergeStride + lane];
}

// Arrival of a split block's partial: fence, count, and true in every thread
// of the block that completed the count (the counter is reset to zero).
__device__ __forceinline__ bool ArriveLast(int32_t* counter, int n) {
  __shared__ int s_last;
  __threadfence();
  __syncthreads();
  if (threadIdx.x == 0) s_last = atomicAdd(counter, 1) == n - 1;
  __syncthreads();
  if (!s_last) return false;
  __threadfence();
  if (threadIdx.x == 0) *counter = 0;  // zero again for the next call (no other block touches it now)
  return true;
}

// The cluster merge's loops over the C partials of an item, unrolled so that
// several partials' shared-memory loads are in flight together: 1x362 (12
// partials) 5.76 us unrolled by 4 against 5.94 by 2, 5.85 by 8, 6.20 by 16
// (likely the longer code, fetched from DRAM after the flush) and 6.27 not
// unrolled (same calls, 2026-11-30).
constexpr int kMergeUnroll = 4;

// Diagnostics only (a variant build with -DKI_GQA_NO_MATH, never the shipped
// kernel, wrong outputs: time it with --no-check): the loop waits for and
// touches every tile but does no arithmetic on it, so the kernel's time
// splits into its streaming loop and the rest (the first tile, merge and
// stores): bench/results/gqa-floor-h200-2026-12-02-b.md.
// Diagnostics only (a variant build with -DKI_GQA_TIMELINE, never the shipped
// kernel): every block stamps %globaltimer at its start, when warp 0's first
// tile is in, after warp 0's loop and at its exit, with its SM and sequence,
// once warp 0's result is staged and (cluster mode) once its pushes are
// issued and once the merge's cluster barrier has let it through, and when
// warp 0 had requested its first page indices;
// LaunchFast writes the previous launch's stamps to $KI_TIMELINE_OUT.
#ifdef KI_GQA_TIMELINE
constexpr int kTimelineCols = 10;
constexpr int kTimelineMax = 8192;
// start, first tile, loop end, end, smid, sequence, merge barrier passed, staged, pushed, indices requested
__device__ unsigned long long g_ki_timeline[kTimelineMax][kTimelineCols];
__device__ __forceinline__ unsigned long long GlobalTimerNs() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}
__device__ __forceinline__ void TimelineMark(int slot, unsigned long long value) {
  if (threadIdx.x == 0 && blockIdx.x < kTimelineMax) g_ki_timeline[blockIdx.x][slot] = value;
}
struct TimelineBlock {
  __device__ TimelineBlock() {
    unsigned smid;
    asm volatile("mov.u32 %0, %%smid;" : "=r"(smid));
    TimelineMark(1, 0);
    TimelineMark(2, 0);
    TimelineMark(4, smid);
    TimelineMark(5, ~0ull);
    TimelineMark(6, 0);
    TimelineMark(7, 0);
    TimelineMark(8, 0);
    TimelineMark(9, 0);
    TimelineMark(0, GlobalTimerNs());
  }
  __device__ ~TimelineBlock() { TimelineMark(3, GlobalTimerNs()); }
};
#define KI_TIMELINE(slot, value) TimelineMark(slot, value)
#else
#define KI_TIMELINE(slot, value) \
  do {                           \
  } while (0)
#endif

// kWhole (cluster mode, batch 1 planned as one work item): the global merge
// is compiled out; the small case's instance stays short (a 24% larger
// kernel measured 0.5 us slower on every batch-1 workload after the flush).
// kLean (bits, a kWhole instance's, FastPlan::lean): kLeanSumMma takes the
// softmax sums from the tensor cores (WarpSoftmax<true>: no shuffle
// reduction after the loop); kLeanOneTile (up to 16 tokens: one tile per
// warp) drops the loop and the first tile's rescaling. A batch-1 call is
// bound by one warp's instruction latencies (about 750 instructions at 4.4
// cycles each for 7 tokens, ncu), so fewer instructions on its path are what
// pays. Per call in a CUDA graph, medians (H200, same call, 2026-12-01):
// 1x2..1x14 2.21-2.32 -> 1.98-2.07 us with the byte addressing and the
// approximate reciprocal beside these bits; these bits alone: 2.07-2.19 ->
// 1.98-2.07 (bench/results/gpu-2026-12-01.md). The bits are in plan.h: the
// planner picks them.
template <int STAGES, int MODE, bool kWhole = false, int kLean = 0>
__global__ void __launch_bounds__(kThreads) GqaDecode(Params p) {
  constexpr bool kPerHead = MODE == kModeLegacy;
  constexpr bool kCluster = MODE == kModeCluster;
  static_assert(!kWhole || kCluster, "kWhole is a cluster-mode instance");
  static_assert(kLean == 0 || kWhole, "kLean is a kWhole instance");
  extern __shared__ __align__(128) uint8_t smem[];
  const int tid = threadIdx.x;
  const int lane = tid & 31;
  const int warp = tid >> 5;
  // Per-head: the block's KV head; the warps take turns over its tiles.
  // Split and cluster: warp = KV head, each warp over all the tiles.
  const int kvh = kPerHead ? blockIdx.y : warp;
  // Cluster mode: the C blocks of a cluster share one work item (a super-chunk
  // of up to C * chunk tokens) and take equal parts of it; rank = place in it.
  // (Special registers, not divisions: one warp alone pays a division's whole
  // latency on the small case's critical path.)
  const int C = kCluster ? p.cluster : 1;
  const int rank = kCluster && C > 1 ? ClusterRank() : 0;
  const int work = kCluster && C > 1 ? ClusterIdX() : static_cast<int>(blockIdx.x);
  // This block's arrival says it has started (other blocks of the cluster may
  // write into its shared memory only after that); waited for at the merge.
  if (kCluster && C > 1) ClusterArriveRelaxed();
  GridDependencyWait();
  LaunchDependents();
#ifdef KI_GQA_TIMELINE
  TimelineBlock timeline_block;
#endif

  // ---- which (sequence, chunk) is this block? ----
  // Every block of a cluster finds the same work item, so exits are uniform
  // over the cluster. Predicted (see IndptrCheck): the work item, Q and the
  // page indices are requested before kv_indptr is known, and redone on a miss.
  const bool predict = kWhole || (!kPerHead && p.predict);
  bool unchecked = predict;
  IndptrCheck chk;
  WorkItem w;
  if (kWhole) {
    w = {0, 0, 1, 0};
  } else if (predict) {
    w = PredictWork(p, work);
    chk.Load(p, lane);
    if (w.b < 0) {  // surplus if the prediction holds: nothing to request before the check
      if (chk.Holds(p, lane) || !FindWork(p.indptr, p.batch, p.chunk_any, work, &w)) return;
      unchecked = false;
    }
  } else if (!FindWork(p.indptr, p.batch, p.chunk_any, work, &w)) {
    return;  // surplus: uniform exit
  }

  KI_TIMELINE(5, static_cast<unsigned long long>(w.b));
  uint32_t qf[kHeadDim / 16][2];  // independent of kv_indptr: requested first
  LoadQ(qf, p.q, static_cast<size_t>(w.b) * kNumQoHeads + kvh * kGroup, lane);

  // Batch 1 (kWhole) checks both ends of its one sequence: uniform loads, no
  // vote (a first version that ran IndptrCheck here, with a run-time L2
  // policy choice beside it, measured 0.3 us slower on every batch-1 workload).
  int a0 = 0, a1 = 0;
  if constexpr (kWhole) {
    a0 = __ldg(p.indptr);
    a1 = __ldg(p.indptr + 1);
  }
  int seq_start, len;
  if (unchecked) {
    seq_start = PredictedIndptr(p, w.b);
    len = p.pred_len + (w.b < p.pred_long ? 1 : 0);
  } else {
    seq_start = __ldg(p.indptr + w.b);
    len = max(0, __ldg(p.indptr + w.b + 1) - seq_start);
  }
  // Chunk w.chunk_idx of w.nchunks balanced ones, then (cluster) part `rank` of C.
  // (64-bit divisions only where the products need them.)
  auto bounds = [&](int* begin, int* ntok) {
    int cb = 0, ce = len;
    if (w.nchunks > 1) {
      cb = static_cast<int>(static_cast<long long>(len) * w.chunk_idx / w.nchunks);
      ce = static_cast<int>(static_cast<long long>(len) * (w.chunk_idx + 1) / w.nchunks);
    }
    const unsigned span = static_cast<unsigned>(ce - cb);
    if (C == 1) {
      *begin = cb;
      *ntok = static_cast<int>(span);
    } else if (span < (1u << 27)) {  // span * 16 fits in 32 bits
      const unsigned b0 = span * rank / C, b1 = span * (rank + 1) / C;
      *begin = cb + static_cast<int>(b0);
      *ntok = static_cast<int>(b1 - b0);
    } else {
      *begin = cb + static_cast<int>(static_cast<long long>(span) * rank / C);
      *ntok = cb + static_cast<int>(static_cast<long long>(span) * (rank + 1) / C) - *begin;
    }
  };
  int c_begin, ntok;
  bounds(&c_begin, &ntok);

  uint8_t* wsm = smem + warp * WarpBytes(STAGES);
  KvStream<STAGES, kPerHead || kWhole> st;
  st.smem = SmemAddr(wsm);
  st.ring = reinterpret_cast<const int32_t*>(wsm + STAGES * 2 * kTileBytes);
  st.kbase = p.k + kvh * kHeadDim;
  st.vbase = p.v + kvh * kHeadDim;
  st.idx = p.indices + seq_start + c_begin;
  st.ntok = ntok;
  st.first = kPerHead ? warp * kTile : 0;
  st.stride = kPerHead ? kWarps * kTile : kTile;
  st.ntiles = kPerHead ? (ntok > warp * kTile ? (ntok - warp * kTile + st.stride - 1) / st.stride : 0)
                       : (ntok + kTile - 1) / kTile;
  st.pol = p.evict_first != 0 ? EvictFirstPolicy() : EvictNormalPolicy();
  st.hint = p.evict_first != 0;
  st.lane = lane;

  st.IssueFirstIndices();
  KI_TIMELINE(9, GlobalTimerNs());
  if (unchecked && (kWhole ? a0 != 0 || a1 != p.pred_len : !chk.Holds(p, lane))) {  // wrong: redo with the real bounds
    CpAsyncWait<0>();
    __syncwarp();
    if constexpr (kWhole) {
      // One work item: the real sequence (valid kv_indptr: no longer than
      // the predicted one, which the launch's chunk covers).
      seq_start = a0;
      len = max(0, a1 - a0);
    } else {
      const int b = w.b;
      if (!FindWork(p.indptr, p.batch, p.chunk_any, work, &w)) return;  // uniform over the block (and cluster)
      if (w.b != b) LoadQ(qf, p.q, static_cast<size_t>(w.b) * kNumQoHeads + kvh * kGroup, lane);
      seq_start = __ldg(p.indptr + w.b);
      len = max(0, __ldg(p.indptr + w.b + 1) - seq_start);
    }
    bounds(&c_begin, &ntok);
    st.idx = p.indices + seq_start + c_begin;
    st.ntok = ntok;
    st.ntiles = (ntok + kTile - 1) / kTile;
    st.IssueFirstIndices();
  }
  st.StartData();

  WarpSoftmax<(kLean & kLeanSumMma) != 0> sm;
  sm.Init();
  if constexpr ((kLean & kLeanOneTile) != 0) {
    if (st.ntiles > 0) sm.template Tile<true>(st.Wait(0), qf, 0, ntok, p.scale_log2, lane);
  } else {
#ifdef KI_GQA_NO_MATH
    uint32_t touched = 0;
#endif
    for (int k = 0; k < st.ntiles; ++k) {
      const uint32_t tile = st.Wait(k);
      if (k == 0) KI_TIMELINE(1, GlobalTimerNs());
#ifdef KI_GQA_NO_MATH
      uint32_t x;
      asm volatile("ld.shared.u32 %0, [%1];\n" : "=r"(x) : "r"(tile + lane * 4));
      touched += x;
#else
      sm.Tile(tile, qf, st.TileStart(k), ntok, p.scale_log2, lane);
#endif
      st.Next(k);
    }
#ifdef KI_GQA_NO_MATH
    if (touched == 0x9e3779b9u) sm.l0 = 1.f;  // keeps the touches alive
#endif
  }
  KI_TIMELINE(2, GlobalTimerNs());
  CpAsyncWait<0>();
  __syncwarp();
  // This warp's normalised result for its 8 heads, in its own region.
  float* F = reinterpret_cast<float*>(wsm);
  sm.Stage(F, lane);
  KI_TIMELINE(7, GlobalTimerNs());

  if constexpr (kPerHead) {
    // ---- merge the 4 warps (same 8 heads, other tiles), weights 2^(lse - max) ----
    __syncthreads();
    const int hd = tid >> 4;        // head within the group
    const int d0 = (tid & 15) * 8;  // 8 dimensions per thread
    constexpr int kRegion = WarpBytes(STAGES) / 4;  // floats per warp region
    const float* all = reinterpret_cast<const float*>(smem);
    float M = -INFINITY;
#pragma unroll
    for (int v = 0; v < kWarps; ++v) M = fmaxf(M, all[v * kRegion + kGroup * kMergeStride + hd]);
    float L = 0.f;
    float o[8] = {0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f};
#pragma unroll
    for (int v = 0; v < kWarps; ++v) {
      const float* reg = all + v * kRegion;
      const float lv = reg[kGroup * kMergeStride + hd];
      if (lv == -INFINITY) continue;
      const float f = Exp2(lv - M);
      L += f;
      Axpy8(o, f, *reinterpret_cast<const float4*>(reg + hd * kMergeStride + d0),
            *reinterpret_cast<const float4*>(reg + hd * kMergeStride + d0 + 4));
    }
    const float inv = L > 0.f ? FastRcp(L) : 0.f;
    const float my_lse = L > 0.f ? M + FastLog2(L) : -INFINITY;
    const size_t row = static_cast<size_t>(w.b) * kNumQoHeads + kvh * kGroup + hd;
    auto store_out = [&](const float (&v)[8], float scale, float lse_value) {
      *reinterpret_cast<uint4*>(p.out + row * kHeadDim + d0) = PackBf16x8(v, scale);
      if ((tid & 15) == 0) p.lse[row] = lse_value;
    };
    if (w.nchunks == 1) {
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
    if (!ArriveLast(p.counters + w.b * kNumKvHeads + kvh, w.nchunks)) return;
    float Mp = -INFINITY;
    for (int j = 0; j < w.nchunks; ++j) {
      const size_t slot = static_cast<size_t>(w.first_work + j) * kNumKvHeads + kvh;
      Mp = fmaxf(Mp, __ldcg(p.part_lse + slot * kGroup + hd));
    }
    float Lp = 0.f;
    float r[8] = {0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f};
#pragma unroll 4
    for (int j = 0; j < w.nchunks; ++j) {
      const size_t slot = static_cast<size_t>(w.first_work + j) * kNumKvHeads + kvh;
      const float lj = __ldcg(p.part_lse + slot * kGroup + hd);
      const float f = lj == -INFINITY ? 0.f : Exp2(lj - Mp);
      const float4* src = reinterpret_cast<const float4*>(p.part_o + (slot * kGroup + hd) * kHeadDim + d0);
      Lp += f;
      Axpy8(r, f, __ldcg(src), __ldcg(src + 1));
    }
    store_out(r, Lp > 0.f ? FastRcp(Lp) : 0.f, Lp > 0.f ? Mp + FastLog2(Lp) : -INFINITY);
    return;
  }

  // Split and cluster: the work item's result is final when the sequence is
  // one work item, else a partial (slot = work item) merged by the last
  // block of the sequence to arrive.
  const bool whole = kWhole || w.nchunks == 1;
  const size_t row0 = static_cast<size_t>(w.b) * kNumQoHeads + warp * kGroup;  // the warp's first query row
  float* part_o = p.part_o + static_cast<size_t>(work) * kNumQoHeads * kHeadDim;
  float* part_lse = p.part_lse + static_cast<size_t>(work) * kNumQoHeads;
  if (C == 1) {
    if (whole) {
      StoreStaged<1>(F, p.out + row0 * kHeadDim, nullptr, p.lse + row0, lane);
      return;
    }
    StoreStaged(F, nullptr, part_o + warp * kGroup * kHeadDim, part_lse + warp * kGroup, lane);
  } else {
    // ---- push merge over the cluster: one cluster barrier after the pushes ----
    // Block r owns items [r*512/C, (r+1)*512/C) (item = 8 dims of one query
    // head); every block stores its F rows of those items and its 32 lse into
    // r's receive area (slot = its rank), then all arrive (release) and wait
    // (acquire); each block merges what it owns from its own shared memory.
    // Nothing remote is read, so no second barrier.
    const int per = (kMergeItems + C - 1) / C;
    float* R = reinterpret_cast<float*>(smem + kWarps * WarpBytes(STAGES));
    float* RL = R + kRecvItems * 8;
    const uint32_t r_addr = SmemAddr(R);
    const uint32_t rl_addr = SmemAddr(RL);
    const float* FL = F + kGroup * kMergeStride;
    ClusterWait();  // every block of the cluster has started
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const int il = lane + 32 * j;
      const int hd = il >> 4;
      const int d0 = (il & 15) * 8;
      const int item = (warp * kGroup + hd) * 16 + (il & 15);
      const int owner = ((item + 1) * C + kMergeItems - 1) / kMergeItems - 1;
      const int ib = owner * kMergeItems / C;
      const uint32_t dst = ClusterMap(r_addr + (rank * per + item - ib) * kRecvItemBytes, owner);
      const float4 x0 = *reinterpret_cast<const float4*>(F + hd * kMergeStride + d0);
      const float4 x1 = *reinterpret_cast<const float4*>(F + hd * kMergeStride + d0 + 4);
      StCluster4(dst, make_uint4(PackBf16(x0.x, x0.y), PackBf16(x0.z, x0.w), PackBf16(x1.x, x1.y), PackBf16(x1.z, x1.w)));
    }
    for (int r = lane >> 3; r < C; r += 4)
      StCluster1(ClusterMap(rl_addr + (rank * kNumQoHeads + warp * kGroup + (lane & 7)) * 4, r), FL[lane & 7]);
    __syncwarp();
    KI_TIMELINE(8, GlobalTimerNs());
    ClusterArrive();
    ClusterWait();  // every push into this block is visible
    KI_TIMELINE(6, GlobalTimerNs());
    const int ib = rank * kMergeItems / C;
    const int ie = (rank + 1) * kMergeItems / C;
    // Each thread merges one item (8 dimensions), or half an item (4) where
    // a block owns at most 64 items (clusters of 8 or more): then all 128
    // threads are busy and each one's chain of loads is half as long (H200,
    // same call, 2026-12-02: 1x362 5.73 -> 5.70 us cold, 4.82-4.92 -> 4.75-4.81
    // in a graph; 1x2048 10.71 -> 10.67, 9.11 -> 8.97-9.00; 16x4096 41.44-41.56
    // -> 41.30-41.48; the rest unchanged). Half items for every cluster size
    // made clusters of 2 and 3 slower (128x2048 +0.25%, the definition's 1x87
    // +4%): bench/results/gqa-gap-h200-2026-12-02-c.md.
    auto merge = [&](auto half_items) {
      constexpr bool kHalf = decltype(half_items)::value;
      constexpr int kDims = kHalf ? 4 : 8;
      constexpr int kShift = kHalf ? 1 : 0;
      for (int hi = (ib << kShift) + tid; hi < (ie << kShift); hi += kThreads) {
        const int item = hi >> kShift;
        const int row = item >> 4;
        const int d0 = (item & 15) * 8 + (hi & kShift) * 4;
        float M = -INFINITY;
#pragma unroll kMergeUnroll
        for (int q = 0; q < C; ++q) M = fmaxf(M, RL[q * kNumQoHeads + row]);
        float L = 0.f;
        float o[8] = {0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f};
#pragma unroll kMergeUnroll
        for (int q = 0; q < C; ++q) {
          const float lq = RL[q * kNumQoHeads + row];
          const float f = lq == -INFINITY ? 0.f : Exp2(lq - M);
          // The item's bf16 pairs (the low half is the lower dimension).
          const uint8_t* x = reinterpret_cast<const uint8_t*>(R) + (q * per + item - ib) * kRecvItemBytes + (d0 & 4) * 2;
          L += f;
          uint32_t u[kDims / 2];
          if constexpr (kHalf) {
            const uint2 v = *reinterpret_cast<const uint2*>(x);
            u[0] = v.x; u[1] = v.y;
          } else {
            const uint4 v = *reinterpret_cast<const uint4*>(x);
            u[0] = v.x; u[1] = v.y; u[2] = v.z; u[3] = v.w;
          }
#pragma unroll
          for (int e = 0; e < kDims / 2; ++e) {
            o[2 * e] += f * __uint_as_float(u[e] << 16);
            o[2 * e + 1] += f * __uint_as_float(u[e] & 0xffff0000u);
          }
        }
        const float inv = L > 0.f ? FastRcp(L) : 0.f;
        const float lse = L > 0.f ? M + FastLog2(L) : -INFINITY;
        const bool first = (hi & ((16 << kShift) - 1)) == 0;  // the row's first item (and half)
        if (whole) {
          const size_t orow = static_cast<size_t>(w.b) * kNumQoHeads + row;
          __nv_bfloat16* dst = p.out + orow * kHeadDim + d0;
          if constexpr (kHalf) {
            *reinterpret_cast<uint2*>(dst) = make_uint2(PackBf16(o[0] * inv, o[1] * inv), PackBf16(o[2] * inv, o[3] * inv));
          } else {
            *reinterpret_cast<uint4*>(dst) = PackBf16x8(o, inv);
          }
          if (first) p.lse[orow] = lse;
        } else {
          float* dst = part_o + row * kHeadDim + d0;
#pragma unroll
          for (int e = 0; e < kDims; e += 4)
            *reinterpret_cast<float4*>(dst + e) = make_float4(o[e] * inv, o[e + 1] * inv, o[e + 2] * inv, o[e + 3] * inv);
          if (first) part_lse[row] = lse;
        }
      }
    };
    if (2 * per <= kThreads) merge(std::true_type{});
    else merge(std::false_type{});
    if (whole) return;
  }
  // ---- global merge: every block of every work item of the sequence arrives ----
  if constexpr (kWhole) return;
  if (!ArriveLast(p.counters + w.b, w.nchunks * C)) return;
  // Warp = KV head: its 8 heads over the nchunks partials, batched through
  // the warp's pipeline buffers (free now).
  WarpMerge(
      w.nchunks,
      [&](int q) { return p.part_o + (static_cast<size_t>(w.first_work + q) * kNumQoHeads + warp * kGroup) * kHeadDim; },
      [&](int q) { return p.part_lse + static_cast<size_t>(w.first_work + q) * kNumQoHeads + warp * kGroup; },
      reinterpret_cast<float*>(wsm), WarpBytes(STAGES) / kRecBytesM, p.out + row0 * kHeadDim, p.lse + row0, lane);
}

// ---- host side ----

constexpr int kMaxDevices = 64;
// What each device fits, read at the first plan on it.
struct DeviceInfo {
  std::once_flag once;
  DeviceLimits limits;
  cudaError_t error = cudaSuccess;
};
DeviceInfo g_devices[kMaxDevices];

size_t SmemBytes(int stages, int mode) {
  return static_cast<size_t>(kWarps) * WarpBytes(stages) + (mode == kModeCluster ? kRecvBytes : 0);
}

template <int S, int MODE>
cudaError_t Configure(int* blocks_per_sm) {
  cudaError_t e = cudaFuncSetAttribute(GqaDecode<S, MODE>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                       static_cast<int>(SmemBytes(S, MODE)));
  if (e != cudaSuccess) return e;
  return cudaOccupancyMaxActiveBlocksPerMultiprocessor(blocks_per_sm, GqaDecode<S, MODE>, kThreads,
                                                       SmemBytes(S, MODE));
}

// The kWhole instances, by kLean bits (FastTuning::lean picks one).
using WholeBits = std::integer_sequence<int, 0, kLeanSumMma, kLeanSumMma | kLeanOneTile>;
template <int S, class F, int... kBits>
cudaError_t ForEachWholeImpl(F f, std::integer_sequence<int, kBits...>) {
  cudaError_t e = cudaSuccess;
  ((e = e == cudaSuccess ? f(GqaDecode<S, kModeCluster, true, kBits>) : e), ...);
  return e;
}
template <int S, class F>
cudaError_t ForEachWhole(F f) {
  return ForEachWholeImpl<S>(f, WholeBits{});
}
template <int S, int... kBits>
cudaError_t LaunchWholeImpl(int bits, const cudaLaunchConfig_t& cfg, const Params& p,
                            std::integer_sequence<int, kBits...>) {
  cudaError_t e = cudaErrorInvalidValue;
  ((bits == kBits ? (e = cudaLaunchKernelEx(&cfg, GqaDecode<S, kModeCluster, true, kBits>, p), 0) : 0), ...);
  return e;
}
template <int S>
cudaError_t LaunchWhole(int bits, const cudaLaunchConfig_t& cfg, const Params& p) {
  return LaunchWholeImpl<S>(bits, cfg, p, WholeBits{});
}

// How many clusters of each size can be resident at once (cudaOccupancyMaxActiveClusters;
// clusters live inside one GPC, so this is not num_sms * blocks_per_sm / size).
template <int S>
cudaError_t ConfigureCluster(int* blocks_per_sm, int* max_cluster, int* active) {
  cudaError_t e = Configure<S, kModeCluster>(blocks_per_sm);
  if (e != cudaSuccess) return e;
  e = ForEachWhole<S>([](auto f) {
    cudaError_t r = cudaFuncSetAttribute(f, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                         static_cast<int>(SmemBytes(S, kModeCluster)));
    if (r == cudaSuccess && cudaFuncSetAttribute(f, cudaFuncAttributeNonPortableClusterSizeAllowed, 1) != cudaSuccess)
      (void)cudaGetLastError();  // portable sizes (<= 8) only
    return r;
  });
  if (e != cudaSuccess) return e;
  if (cudaFuncSetAttribute(GqaDecode<S, kModeCluster, false>, cudaFuncAttributeNonPortableClusterSizeAllowed, 1) !=
      cudaSuccess)
    (void)cudaGetLastError();
  *max_cluster = 0;
  for (int cs = 1; cs <= kMaxCluster; ++cs) {
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = dim3(cs, 1, 1);
    cfg.blockDim = dim3(kThreads, 1, 1);
    cfg.dynamicSmemBytes = SmemBytes(S, kModeCluster);
    cudaLaunchAttribute attr;
    attr.id = cudaLaunchAttributeClusterDimension;
    attr.val.clusterDim.x = cs;
    attr.val.clusterDim.y = 1;
    attr.val.clusterDim.z = 1;
    cfg.attrs = &attr;
    cfg.numAttrs = 1;
    int n = 0;
    if (cudaOccupancyMaxActiveClusters(&n, GqaDecode<S, kModeCluster>, &cfg) != cudaSuccess) {
      (void)cudaGetLastError();
      n = 0;
    }
    active[cs] = n;
    if (n > 0) *max_cluster = cs;
  }
  return cudaSuccess;
}

template <int S>
cudaError_t ConfigureDepth(DeviceLimits& d) {
  cudaError_t e = Configure<S, kModeLegacy>(&d.blocks_per_sm[kModeLegacy][S]);
  if (e == cudaSuccess) e = Configure<S, kModeSplit>(&d.blocks_per_sm[kModeSplit][S]);
  if (e == cudaSuccess && d.cc_major >= 9)
    e = ConfigureCluster<S>(&d.blocks_per_sm[kModeCluster][S], &d.max_cluster[S], d.active_clusters[S]);
  return e;
}

const DeviceLimits* GetDeviceLimits() {
  int device = 0;
  if (cudaGetDevice(&device) != cudaSuccess || device < 0 || device >= kMaxDevices) return nullptr;
  DeviceInfo& d = g_devices[device];
  std::call_once(d.once, [&] {
    DeviceLimits& l = d.limits;
    d.error = cudaDeviceGetAttribute(&l.num_sms, cudaDevAttrMultiProcessorCount, device);
    if (d.error == cudaSuccess) d.error = cudaDeviceGetAttribute(&l.cc_major, cudaDevAttrComputeCapabilityMajor, device);
    if (d.error == cudaSuccess) d.error = ConfigureDepth<2>(l);
    if (d.error == cudaSuccess) d.error = ConfigureDepth<3>(l);
    if (d.error == cudaSuccess) d.error = ConfigureDepth<4>(l);
  });
  return d.error == cudaSuccess ? &d.limits : nullptr;
}

}  // namespace

int32_t ReadDeviceLimits(DeviceLimits* limits) {
  const DeviceLimits* l = GetDeviceLimits();
  if (!l) return KI_ERR_LAUNCH;
  *limits = *l;
  return KI_OK;
}

int32_t PlanFast(const Args& args, FastPlan* plan) {
  const DeviceLimits* limits = GetDeviceLimits();
  if (!limits) return KI_ERR_LAUNCH;
  return ChooseFastPlan(*limits, GetFastTuning(), args.batch, args.num_kv_indices, plan);
}

namespace {

template <int S>
cudaError_t Launch(const Params& p, const FastPlan& plan, cudaStream_t s) {
  cudaLaunchConfig_t cfg = {};
  cfg.blockDim = dim3(kThreads, 1, 1);
  cfg.stream = s;
  cudaLaunchAttribute attrs[2];
  cfg.attrs = attrs;
  cfg.numAttrs = 0;
  if (plan.pdl) {
    attrs[cfg.numAttrs].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attrs[cfg.numAttrs].val.programmaticStreamSerializationAllowed = 1;
    ++cfg.numAttrs;
  }
  if (plan.mode == kModeLegacy) {
    cfg.gridDim = dim3(static_cast<unsigned>(plan.max_work), kNumKvHeads, 1);
    cfg.dynamicSmemBytes = SmemBytes(S, kModeLegacy);
    return cudaLaunchKernelEx(&cfg, GqaDecode<S, kModeLegacy>, p);
  }
  if (plan.mode == kModeSplit) {
    cfg.gridDim = dim3(static_cast<unsigned>(plan.max_work), 1, 1);
    cfg.dynamicSmemBytes = SmemBytes(S, kModeSplit);
    return cudaLaunchKernelEx(&cfg, GqaDecode<S, kModeSplit>, p);
  }
  // Cluster: C consecutive blocks per work item.
  cfg.gridDim = dim3(static_cast<unsigned>(plan.cluster) * static_cast<unsigned>(plan.max_work), 1, 1);
  cfg.dynamicSmemBytes = SmemBytes(S, kModeCluster);
  if (plan.cluster > 1) {
    attrs[cfg.numAttrs].id = cudaLaunchAttributeClusterDimension;
    attrs[cfg.numAttrs].val.clusterDim.x = static_cast<unsigned>(plan.cluster);
    attrs[cfg.numAttrs].val.clusterDim.y = 1;
    attrs[cfg.numAttrs].val.clusterDim.z = 1;
    ++cfg.numAttrs;
  }
  // One sequence in one work item (chunk covers the predicted length, which
  // valid kv_indptr never exceeds): no global merge in the instance.
  if (p.batch == 1 && p.predict && plan.chunk >= p.pred_len)
    return LaunchWhole<S>(plan.lean, cfg, p);
  return cudaLaunchKernelEx(&cfg, GqaDecode<S, kModeCluster, false>, p);
}

}  // namespace

#ifdef KI_GQA_TIMELINE
namespace {
// Writes the stamps of the previous launch (grid blocks) to
// $KI_TIMELINE_OUT.<batch>x<tokens>, one line per block: start, first tile,
// loop end, end (ns), SM, sequence, merge barrier passed, staged, pushed,
// first indices requested (ns; 0: none).
// Synchronises the device.
void DumpTimeline(int grid, int64_t batch, int64_t tokens) {
  const char* out = std::getenv("KI_TIMELINE_OUT");
  if (!out || grid <= 0) return;
  grid = std::min(grid, kTimelineMax);
  std::vector<unsigned long long> h(static_cast<size_t>(grid) * kTimelineCols);
  // The launch may be on a non-blocking stream, which a copy on the default
  // stream does not wait for: without this, half-written stamps of a launch
  // still running were read (2026-12-02).
  if (cudaDeviceSynchronize() != cudaSuccess) return;
  if (cudaMemcpyFromSymbol(h.data(), g_ki_timeline, h.size() * sizeof(h[0])) != cudaSuccess) return;
  const std::string path = std::string(out) + "." + std::to_string(batch) + "x" + std::to_string(tokens / batch);
  if (FILE* f = std::fopen(path.c_str(), "w")) {
    for (int b = 0; b < grid; ++b) {
      const unsigned long long* r = &h[static_cast<size_t>(b) * kTimelineCols];
      std::fprintf(f, "%d %llu %llu %llu %llu %llu %lld %llu %llu %llu %llu\n", b, r[0], r[1], r[2], r[3], r[4],
                   static_cast<long long>(r[5]), r[6], r[7], r[8], r[9]);
    }
    std::fclose(f);
  }
}
int g_timeline_grid = 0;
int64_t g_timeline_batch = 0, g_timeline_tokens = 0;
}  // namespace
#endif

int32_t LaunchFast(const Args& args, const FastPlan& plan, void* workspace, uint64_t workspace_bytes,
                   void* stream) {
  if (args.batch == 0) return KI_OK;
#ifdef KI_GQA_TIMELINE
  DumpTimeline(g_timeline_grid, g_timeline_batch, g_timeline_tokens);
  g_timeline_grid = plan.max_work * (plan.mode == kModeCluster ? std::max(1, plan.cluster) : 1);
  g_timeline_batch = args.batch;
  g_timeline_tokens = args.num_kv_indices;
#endif
  if (workspace_bytes < plan.workspace_bytes || (!workspace && plan.workspace_bytes > 0))
    return KI_ERR_WORKSPACE_TOO_SMALL;
  if (plan.mode != kModeLegacy && plan.mode != kModeSplit && plan.mode != kModeCluster) return KI_ERR_INTERNAL;
  Params p;
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
  {
    const WorkspaceLayout l = Layout(plan.mode, args.batch, plan.max_work);
    uint8_t* ws = static_cast<uint8_t*>(workspace);
    p.counters = reinterpret_cast<int32_t*>(ws + l.counters);
    p.part_lse = reinterpret_cast<float*>(ws + l.part_lse);
    p.part_o = reinterpret_cast<float*>(ws + l.part_o);
  }
  p.batch = static_cast<int>(args.batch);
  p.chunk = plan.chunk;
  p.chunk_any = plan.chunk_any > 0 ? plan.chunk_any : plan.chunk;
  p.scale_log2 = args.sm_scale * kLog2e;
  p.predict = plan.mode != kModeLegacy && plan.predict ? 1 : 0;
  {
    const int64_t q = args.num_kv_indices / args.batch;
    const auto chunks = [&](int64_t len) { return len <= 0 ? 1 : static_cast<int>((len + plan.chunk - 1) / plan.chunk); };
    p.pred_len = static_cast<int>(q);
    p.pred_long = static_cast<int>(args.num_kv_indices % args.batch);
    p.pred_chunks = chunks(q);
    p.pred_chunks_long = chunks(q + 1);
  }
  p.evict_first = plan.evict_first ? 1 : 0;
  p.cluster = std::max(1, plan.cluster);
  cudaError_t e;
  cudaStream_t s = static_cast<cudaStream_t>(stream);
  switch (plan.stages) {
    case 2: e = Launch<2>(p, plan, s); break;
    case 3: e = Launch<3>(p, plan, s); break;
    case 4: e = Launch<4>(p, plan, s); break;
    default: return KI_ERR_INTERNAL;
  }
  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    return KI_ERR_LAUNCH;
  }
  return KI_OK;
}

}  // namespace ki::gqa
