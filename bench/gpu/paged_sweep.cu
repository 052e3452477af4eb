// paged-sweep: is there any way to read the GQA decode's random K/V pages
// (page_size 1, 1 KiB per token and cache) under the bench's zeroing flush
// that comes within 1.05x of a plain contiguous read of the same bytes?
// stream-probe measured the kernel's own pattern (warp per KV head, cp.async,
// 4 stages, evict-first, one block per SM) at 1.066-1.078x; this sweeps what
// it had not tried, one generic kernel with compile-time knobs:
//   layout   head: warp w copies KV head w's 256 B of every token of the tile
//            (ki's split and cluster modes); token: warp w copies whole 1 KiB
//            K and V rows of its quarter of the tile's tokens;
//   S, T     stages of T tokens (a warp's stage is T x 512 B either way);
//   blocks   1, 2 or 8 per SM (smem sized so), each a contiguous chunk;
//   EF       the L2 evict-first policy on the copies, or none;
//   sidx     the block's page indices read at its start in one wide load into
//            shared memory (else one tile ahead by the lanes, as ki does);
//   PF, PD   L2 prefetch of the pages PD tiles past the copies in flight:
//            prefetch.global.L2 per 128 B line, or cp.async.bulk.prefetch.L2
//            per row piece;
// and pplain: a grid-stride read of the pages by 8 blocks of 256 threads per
// SM with plain 16-byte loads (the contiguous read's shape, paged). Every arm
// is checked first: the bytes its copies moved (summed on the device in a
// separate launch) must equal 2 x tokens x 1 KiB. Arms alternate within each
// repetition. Timed as stream-probe: flush before every iteration, CUPTI
// kernel spans, median. Results: bench/results/gqa-floor-h200-2026-12-02-b.md.
//
//   paged-sweep [--iters N] [--reps N] [--tokens N[,N]]
#include <cuda_runtime.h>
#include <stdint.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "runtime/cupti_trace.h"
#include "runtime/device_ops.h"

namespace {

constexpr int kRowBytes = 1024;
constexpr int kThreads = 128;

struct Args {
  const uint8_t* k;
  const uint8_t* v;
  const int32_t* idx;
  int ntok;
  int chunk;                   // tokens per block
  unsigned* sink;              // written only if the touched words sum to a magic value
  unsigned long long* bytes;   // check launch only: bytes the copies moved
  unsigned long long* stamps;  // --timeline launches only: per block, kTlCols stamps (TlMark)
};

// --timeline: %globaltimer stamps per block in the fast kernel's timeline
// format (KI_GQA_TIMELINE, bench/gpu/timeline.py): start, warp 0's first tile
// in, warp 0's loop end, end, SM, sequence (-1: surplus), the end barrier
// passed (cluster arms; else the loop end).
constexpr int kTlCols = 7;
__device__ __forceinline__ unsigned long long GlobalTimer() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}
__device__ __forceinline__ void TlMark(const Args& a, int col, unsigned long long v) {
  if (a.stamps && threadIdx.x == 0) a.stamps[blockIdx.x * kTlCols + col] = v;
}
__device__ __forceinline__ void ClusterArriveRelaxed() { asm volatile("barrier.cluster.arrive.relaxed.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void ClusterArrive() { asm volatile("barrier.cluster.arrive.release.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void ClusterWait() { asm volatile("barrier.cluster.wait.acquire.aligned;\n" ::: "memory"); }

__device__ __forceinline__ uint32_t Smem(const void* p) { return static_cast<uint32_t>(__cvta_generic_to_shared(p)); }
__device__ __forceinline__ void CpAsync16(uint32_t dst, const void* src, int n) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(n));
}
__device__ __forceinline__ void CpAsync16Hint(uint32_t dst, const void* src, int n, uint64_t pol) {
  asm volatile("cp.async.cg.shared.global.L2::cache_hint [%0], [%1], 16, %2, %3;\n" ::"r"(dst), "l"(src), "r"(n),
               "l"(pol));
}
__device__ __forceinline__ void CpAsync4(uint32_t dst, const void* src) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4;\n" ::"r"(dst), "l"(src));
}
__device__ __forceinline__ void Commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N>
__device__ __forceinline__ void WaitGroup() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
}
__device__ __forceinline__ uint32_t LdShared(uint32_t a) {
  uint32_t x;
  asm volatile("ld.shared.u32 %0, [%1];\n" : "=r"(x) : "r"(a));
  return x;
}
__device__ __forceinline__ uint64_t EvictFirst() {
  uint64_t pol;
  asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;\n" : "=l"(pol));
  return pol;
}
__device__ __forceinline__ void PrefetchLine(const void* p) { asm volatile("prefetch.global.L2 [%0];\n" ::"l"(p)); }
__device__ __forceinline__ void PrefetchBulk(const void* p, uint32_t n) {
  asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;\n" ::"l"(p), "r"(n) : "memory");
}
__device__ __forceinline__ void CountBytes(const Args& a, unsigned long long n) {
  if (!a.bytes) return;
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) n += __shfl_xor_sync(0xffffffffu, n, o);
  if ((threadIdx.x & 31) == 0) atomicAdd(a.bytes, n);
}

enum Layout { kHead = 0, kToken = 1 };
enum Prefetch { kNoPf = 0, kPfLine = 1, kPfBulk = 2 };

// One block: a contiguous chunk of tokens, tiles of T tokens, S stages per warp.
// RING: the indices as ki's KvStream moves them: a per-warp ring of 16 tiles
// filled by 4-byte cp.async, tile k + 2S's requested with tile k + S's data.
// CL (launched as clusters of CL blocks, the fast kernel's 16x4096 launch
// shape): every block arrives on the cluster barrier at its start and, after
// its loop, waits for that arrival, then arrives and waits again (the
// kernel's cluster merge without the merge); a surplus block waits for one
// global load (the kernel's surplus blocks wait for kv_indptr) and exits.
constexpr int kRing = 16;
template <int L, int S, int T, bool EF, bool SIDX, int PF, int PD, bool RING, int CL = 0>
__global__ void __launch_bounds__(kThreads) Paged(Args a) {
  static_assert(!RING || (!SIDX && 2 * S + 1 <= kRing && T == 16), "ring: T 16, S <= 7, no sidx");
  static_assert(T % 4 == 0 && T <= 32, "T: 4..32, a multiple of 4");
  static_assert(PF == kNoPf || SIDX, "prefetch reads the indices ahead from shared memory");
  extern __shared__ __align__(128) uint8_t sm[];
  constexpr int kStage = T * 512;  // a warp's stage: T x 256 B of K and of V
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int t0 = blockIdx.x * a.chunk, t1 = min(a.ntok, t0 + a.chunk);
  TlMark(a, 0, GlobalTimer());
  if (a.stamps && threadIdx.x == 0) {
    unsigned smid;
    asm volatile("mov.u32 %0, %%smid;" : "=r"(smid));
    TlMark(a, 4, smid);
    TlMark(a, 5, t0 >= t1 ? ~0ull : static_cast<unsigned long long>(blockIdx.x / (CL > 0 ? CL : 8)));
  }
  if (CL > 0) ClusterArriveRelaxed();
  if (t0 >= t1) {
    if (CL > 0 && __ldg(a.idx + (threadIdx.x & 31)) == -1) *a.sink = 1;  // never: pages are >= 0
    TlMark(a, 1, 0);
    TlMark(a, 2, 0);
    TlMark(a, 3, GlobalTimer());
    return;
  }
  const int ntiles = (t1 - t0 + T - 1) / T;
  const uint32_t base = Smem(sm) + warp * S * kStage;
  int32_t* sidx = reinterpret_cast<int32_t*>(sm + 4 * S * kStage);
  const uint32_t ring = Smem(sm) + 4 * S * kStage + warp * kRing * T * 4;  // RING: the warp's slots
  auto issue_idx = [&](int k) {
    const int t = t0 + k * T + lane;
    if (RING && lane < T && t < t1) CpAsync4(ring + ((k & (kRing - 1)) * T + lane) * 4, a.idx + t);
  };
  if (SIDX) {  // the chunk's indices at once: every load issued before any is used
    const int n = t1 - t0;
    constexpr int kPer = 32;  // up to 4096 tokens a chunk
    int32_t r[kPer];
#pragma unroll
    for (int j = 0; j < kPer; ++j) {
      const int i = threadIdx.x + j * kThreads;
      r[j] = i < n ? __ldg(a.idx + t0 + i) : 0;
    }
#pragma unroll
    for (int j = 0; j < kPer; ++j) {
      const int i = threadIdx.x + j * kThreads;
      if (i < n) sidx[i] = r[j];
    }
    __syncthreads();
  }
  const uint64_t pol = EvictFirst();
  unsigned long long moved = 0;
  // Page of token j of tile k (lane j holds it; j < T), or 0 past the end.
  auto index = [&](int k) {
    const int j = lane % T;
    const int t = t0 + k * T + j;
    if (t >= t1) return 0;
    return SIDX ? sidx[t - t0] : __ldg(a.idx + t);
  };
  auto issue = [&](int k, int page) {
    const uint32_t dst = base + (k % S) * kStage;
#pragma unroll
    for (int i = 0; i < T / 2; ++i) {
      int r, off, sdst;  // token within the tile, byte offset within the row, smem offset within the K half
      if (L == kHead) {
        r = (lane >> 4) + 2 * i;
        off = warp * 256 + (lane & 15) * 16;
        sdst = r * 256 + (lane & 15) * 16;
      } else {
        const int row = i / 2;  // the warp's row, T/4 of them
        r = warp * (T / 4) + row;
        off = (i & 1) * 512 + lane * 16;
        sdst = row * 1024 + off;
      }
      const int n = t0 + k * T + r < t1 ? 16 : 0;
      int pg = __shfl_sync(0xffffffffu, page, r);
      if (RING) pg = n ? static_cast<int>(LdShared(ring + ((k & (kRing - 1)) * T + r) * 4)) : 0;
      const size_t src = static_cast<size_t>(pg) * kRowBytes + off;
      if (EF) {
        CpAsync16Hint(dst + sdst, a.k + src, n, pol);
        CpAsync16Hint(dst + T * 256 + sdst, a.v + src, n, pol);
      } else {
        CpAsync16(dst + sdst, a.k + src, n);
        CpAsync16(dst + T * 256 + sdst, a.v + src, n);
      }
      moved += 2 * n;
    }
  };
  auto prefetch = [&](int k) {  // the warp's bytes of tile k into L2
    if (PF == kNoPf || k >= ntiles) return;
    if (PF == kPfLine) {
      for (int l = lane; l < 2 * T; l += 32) {  // 2T lines of 128 B per cache
        int r, off;
        if (L == kHead) {
          r = l / 2;
          off = warp * 256 + (l & 1) * 128;
        } else {
          r = warp * (T / 4) + l / 8;
          off = (l % 8) * 128;
        }
        const int t = t0 + k * T + r;
        if (t < t1) {
          const size_t src = static_cast<size_t>(sidx[t - t0]) * kRowBytes + off;
          PrefetchLine(a.k + src);
          PrefetchLine(a.v + src);
        }
      }
    } else {
      const int nr = L == kHead ? T : T / 4;
      if (lane < nr) {
        const int r = L == kHead ? lane : warp * (T / 4) + lane;
        const int t = t0 + k * T + r;
        if (t < t1) {
          const size_t src = static_cast<size_t>(sidx[t - t0]) * kRowBytes + (L == kHead ? warp * 256 : 0);
          const uint32_t n = L == kHead ? 256 : 1024;
          PrefetchBulk(a.k + src, n);
          PrefetchBulk(a.v + src, n);
        }
      }
    }
  };
  int pidx[S];
  if (RING) {
#pragma unroll
    for (int s = 0; s < S; ++s) issue_idx(s);
    Commit();
    WaitGroup<0>();
    __syncwarp();
  } else {
#pragma unroll
    for (int s = 0; s < S; ++s) pidx[s] = index(s);
  }
#pragma unroll
  for (int s = 0; s < S; ++s) {
    if (s < ntiles) issue(s, RING ? 0 : pidx[s]);
    issue_idx(S + s);
    Commit();
  }
  for (int d = 0; d < PD; ++d) prefetch(S + d);
  int pnext = RING ? 0 : index(S);
  unsigned acc = 0;
  for (int k = 0; k < ntiles; ++k) {
    WaitGroup<S - 1>();
    __syncwarp();
    if (k == 0) TlMark(a, 1, GlobalTimer());
    acc += LdShared(base + (k % S) * kStage + lane * 4);
    __syncwarp();
    if (k + S < ntiles) issue(k + S, pnext);
    issue_idx(k + 2 * S);
    Commit();
    prefetch(k + S + PD);
    if (!RING) pnext = index(k + S + 1);
  }
  TlMark(a, 2, GlobalTimer());
  WaitGroup<0>();
  if (CL > 0) {
    ClusterWait();  // every block of the cluster has started
    __syncwarp();
    ClusterArrive();
    ClusterWait();  // every block of the cluster has ended its loop
  }
  TlMark(a, 6, GlobalTimer());
  if (acc == 0x9e3779b9u) *a.sink = acc;
  CountBytes(a, moved);
  TlMark(a, 3, GlobalTimer());
}

__device__ __forceinline__ uint4 LoadEF(const uint4* x, uint64_t pol) {
  uint4 r;
  asm volatile("ld.global.L2::cache_hint.v4.u32 {%0,%1,%2,%3}, [%4], %5;\n"
               : "=r"(r.x), "=r"(r.y), "=r"(r.z), "=r"(r.w)
               : "l"(x), "l"(pol));
  return r;
}
// plain: stream-probe's contiguous grid-stride read (4 loads in flight a
// thread), with the byte count; pplain: the same over the pages (16-byte
// piece u of the cache is piece u % 64 of token u / 64's page).
template <bool PAGED, bool EF>
__global__ void __launch_bounds__(256) Grid(Args a) {
  const uint64_t pol = EvictFirst();
  const uint64_t n = static_cast<uint64_t>(a.ntok) * (kRowBytes / 16);
  const uint64_t stride = static_cast<uint64_t>(gridDim.x) * blockDim.x;
  unsigned acc = 0;
  unsigned long long moved = 0;
  auto addr = [&](const uint8_t* c, uint64_t u) {
    if (!PAGED) return reinterpret_cast<const uint4*>(c) + u;
    const int pg = __ldg(a.idx + (u >> 6));
    return reinterpret_cast<const uint4*>(c + static_cast<size_t>(pg) * kRowBytes) + (u & 63);
  };
  for (int half = 0; half < 2; ++half) {
    const uint8_t* c = half ? a.v : a.k;
    uint64_t i = blockIdx.x * static_cast<uint64_t>(blockDim.x) + threadIdx.x;
    for (; i + 3 * stride < n; i += 4 * stride) {
      uint4 x[4];
#pragma unroll
      for (int u = 0; u < 4; ++u) x[u] = EF ? LoadEF(addr(c, i + u * stride), pol) : __ldcs(addr(c, i + u * stride));
#pragma unroll
      for (int u = 0; u < 4; ++u) acc += x[u].x ^ x[u].w;
      moved += 64;
    }
    for (; i < n; i += stride) {
      acc += __ldcs(addr(c, i)).y;
      moved += 16;
    }
  }
  if (acc == 0x9e3779b9u) *a.sink = acc;
  CountBytes(a, moved);
}

#define CHECK(x)                                                                                   \
  do {                                                                                             \
    cudaError_t e_ = (x);                                                                          \
    if (e_ != cudaSuccess) {                                                                       \
      std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_));     \
      std::exit(1);                                                                                \
    }                                                                                              \
  } while (0)

struct Arm {
  std::string name;
  int per_sm;     // blocks per SM (grid = per_sm x SMs)
  int threads;
  size_t stages;  // dynamic shared memory of the stages
  bool sidx;      // plus 4 bytes a token of the chunk
  void (*kernel)(Args);
  int blocks = 0;  // when set, the grid (else per_sm x SMs)
  int cluster = 0;       // when set, launched as clusters of this many blocks
  size_t smem_ask = 0;   // when set, the dynamic shared memory a block asks for
  int chunk_tokens = 0;  // when set, tokens per block (else spread over the grid)
  // What a block asks for: one block per SM asks for over half the SM so no
  // second one fits, the others exactly what they need.
  size_t Smem(int chunk) const {
    if (threads != kThreads) return 0;
    if (smem_ask) return smem_ask;
    size_t s = stages + (sidx ? 4 * static_cast<size_t>(chunk) + 16 : 0);
    return per_sm == 1 ? std::max<size_t>(s, 132 * 1024) : s;
  }
};

// The fast kernel's 16x4096 launch (PlanFast: clusters of 8 blocks of 512
// tokens, 2 stages, 31 work items of which 15 are surplus when kv_indptr is
// the predicted equal split) asks for 4 x (2 x 8 KiB + 1 KiB) + the cluster
// merge's receive area per block (fast.cu SmemBytes(2, kModeCluster)), so two
// blocks fit an SM.
constexpr size_t kKernelSmemS2 = 4 * (2 * 8192 + 1024) + (512 + 15) * 32 + 16 * 32 * 4;
template <int CL>
Arm KernelShapeArm(const char* what, int blocks, size_t smem, int chunk = 512) {
  Arm a = {std::string("kshape S2 ring EF ") + what, 1, kThreads, 4ull * 2 * 16 * 512 + 4 * kRing * 16 * 4, false,
           Paged<kHead, 2, 16, true, false, kNoPf, 0, true, CL>, blocks};
  a.cluster = CL;
  a.smem_ask = smem;
  a.chunk_tokens = chunk;
  return a;
}

template <int L, int S, int T, bool EF, bool SIDX, int PF = kNoPf, int PD = 0, bool RING = false>
Arm MakeArm(int per_sm, int blocks_override = 0) {
  std::string n = std::string(L == kHead ? "head" : "token") + " S" + std::to_string(S) + " T" + std::to_string(T) +
                  (EF ? " EF" : " --") + (SIDX ? " sidx" : " ----");
  if (PF == kPfLine) n += " pfL" + std::to_string(PD);
  if (PF == kPfBulk) n += " pfB" + std::to_string(PD);
  if (RING) n += " ring";
  n += " x" + std::to_string(per_sm);
  if (blocks_override) n += " b" + std::to_string(blocks_override);
  return Arm{n, per_sm, kThreads, 4ull * S * T * 512 + (RING ? 4 * kRing * T * 4 : 0), SIDX,
             Paged<L, S, T, EF, SIDX, PF, PD, RING>, blocks_override};
}

void Launch(const Arm& arm, int blocks, size_t smem, const Args& p) {
  if (arm.cluster <= 0) {
    arm.kernel<<<blocks, arm.threads, smem>>>(p);
    return;
  }
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = dim3(blocks, 1, 1);
  cfg.blockDim = dim3(arm.threads, 1, 1);
  cfg.dynamicSmemBytes = smem;
  cudaLaunchAttribute attr;
  attr.id = cudaLaunchAttributeClusterDimension;
  attr.val.clusterDim.x = arm.cluster;
  attr.val.clusterDim.y = 1;
  attr.val.clusterDim.z = 1;
  cfg.attrs = &attr;
  cfg.numAttrs = 1;
  CHECK(cudaLaunchKernelEx(&cfg, arm.kernel, p));
}

double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  int iters = 50, reps = 3;
  std::vector<int> tokens = {65536};
  std::vector<std::string> only;  // --only: arms whose name holds one of these (the plain read always runs)
  std::string timeline_dir;       // --timeline: stamps of 2 launches of every arm run, after the reps
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--iters") && i + 1 < argc) iters = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--reps") && i + 1 < argc) reps = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--tokens") && i + 1 < argc) {
      tokens.clear();
      for (char* s = std::strtok(argv[++i], ","); s; s = std::strtok(nullptr, ",")) tokens.push_back(std::atoi(s));
    } else if (!std::strcmp(argv[i], "--only") && i + 1 < argc) {
      for (char* s = std::strtok(argv[++i], ","); s; s = std::strtok(nullptr, ",")) only.push_back(s);
    } else if (!std::strcmp(argv[i], "--timeline") && i + 1 < argc) {
      timeline_dir = argv[++i];
    } else {
      std::fprintf(stderr, "usage: paged-sweep [--iters N] [--reps N] [--tokens N[,N]] [--only S[,S]] [--timeline DIR]\n");
      return 2;
    }
  }
  int sms = 0, l2 = 0;
  CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  CHECK(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, 0));
  namespace gi = ki::gpu::internal;
  std::string why;
  gi::CuptiTrace* cupti = gi::CuptiTrace::Get(&why);
  if (!cupti) {
    std::fprintf(stderr, "CUPTI: %s\n", why.c_str());
    return 1;
  }
  const uint64_t flush_bytes = (2 * static_cast<uint64_t>(l2) + 15) / 16 * 16;
  void* flush_buf = nullptr;
  CHECK(cudaMalloc(&flush_buf, flush_bytes));
  CHECK(cudaMemset(flush_buf, 0, flush_bytes));
  int max_tok = 0;
  for (int t : tokens) max_tok = std::max(max_tok, t);
  uint8_t *k = nullptr, *v = nullptr;
  CHECK(cudaMalloc(&k, static_cast<size_t>(max_tok) * kRowBytes));
  CHECK(cudaMalloc(&v, static_cast<size_t>(max_tok) * kRowBytes));
  CHECK(cudaMemset(k, 1, static_cast<size_t>(max_tok) * kRowBytes));
  CHECK(cudaMemset(v, 2, static_cast<size_t>(max_tok) * kRowBytes));
  int32_t* idx = nullptr;
  CHECK(cudaMalloc(&idx, max_tok * sizeof(int32_t)));
  unsigned* sink = nullptr;
  CHECK(cudaMalloc(&sink, 4));
  unsigned long long* dbytes = nullptr;
  CHECK(cudaMalloc(&dbytes, 8));
  constexpr int kTlMax = 4096;
  unsigned long long* dstamps = nullptr;
  CHECK(cudaMalloc(&dstamps, kTlMax * kTlCols * 8));

  std::vector<Arm> arms = {
      {"plain contig x8", 8, 256, 0, false, Grid<false, false>},
      {"plainEF contig x8", 8, 256, 0, false, Grid<false, true>},
      {"pplain x8", 8, 256, 0, false, Grid<true, false>},
      {"pplainEF x8", 8, 256, 0, false, Grid<true, true>},
      MakeArm<kHead, 4, 16, true, false>(1),  // the kernel's pattern (stream-probe's headEF)
      MakeArm<kHead, 4, 16, false, false>(1),
      MakeArm<kHead, 6, 16, true, false>(1),
      MakeArm<kHead, 6, 16, false, false>(1),
      MakeArm<kHead, 8, 8, true, false>(1),
      MakeArm<kHead, 8, 8, false, false>(1),
      MakeArm<kHead, 3, 16, true, false>(2),
      MakeArm<kHead, 4, 8, true, false>(2),
      MakeArm<kHead, 3, 4, true, false>(8),
      MakeArm<kHead, 3, 4, false, false>(8),
      MakeArm<kHead, 3, 4, true, true>(8),
      MakeArm<kHead, 4, 16, true, true>(1),
      MakeArm<kHead, 6, 16, true, true>(1),
      MakeArm<kHead, 4, 16, true, true, kPfLine, 2>(1),
      MakeArm<kHead, 4, 16, true, true, kPfLine, 4>(1),
      MakeArm<kHead, 4, 16, true, true, kPfBulk, 4>(1),
      MakeArm<kHead, 4, 16, false, true, kPfBulk, 4>(1),
      MakeArm<kToken, 4, 16, true, false>(1),
      MakeArm<kToken, 4, 16, false, false>(1),
      MakeArm<kToken, 4, 16, true, true>(1),
      MakeArm<kToken, 6, 16, true, true>(1),
      MakeArm<kToken, 4, 16, true, true, kPfBulk, 4>(1),
      MakeArm<kToken, 3, 4, true, true>(8),
      // ki's own index ring, and its 16x4096 plan's depth (2) and grid (128 blocks of 512 tokens)
      MakeArm<kHead, 4, 16, true, false, kNoPf, 0, true>(1),
      MakeArm<kHead, 4, 16, false, false, kNoPf, 0, true>(1),
      MakeArm<kHead, 2, 16, true, false, kNoPf, 0, true>(1),
      MakeArm<kHead, 2, 16, true, false, kNoPf, 0, true>(1, 128),
      MakeArm<kHead, 2, 16, true, true>(1),
      MakeArm<kHead, 2, 16, true, true>(1, 128),
      MakeArm<kHead, 2, 16, false, true>(1),
      MakeArm<kHead, 4, 16, false, true>(1),
      MakeArm<kHead, 4, 16, true, true>(1, 128),
      MakeArm<kHead, 3, 16, true, true>(2),
      // The ring arm at 16x4096's plan, one step at a time towards the kernel's launch:
      // the kernel's shared memory (two blocks fit an SM), clusters of 8, the
      // 15 surplus clusters, the cluster barriers.
      KernelShapeArm<0>("b128 smem2", 128, kKernelSmemS2),
      KernelShapeArm<8>("b128 smem2 c8", 128, kKernelSmemS2),
      KernelShapeArm<8>("b248 smem2 c8", 248, kKernelSmemS2),
      // 15 clusters of 8 (no SM runs two blocks; 7% longer blocks): the bound of
      // gqa-clusters-h200-2026-12-02.md, read alone.
      KernelShapeArm<8>("b120 smem2 c8 ch547", 120, kKernelSmemS2, 547),
  };
  if (!only.empty()) {
    std::vector<Arm> kept = {arms[0]};
    for (size_t i = 1; i < arms.size(); ++i)
      for (const std::string& o : only)
        if (arms[i].name.find(o) != std::string::npos) {
          kept.push_back(arms[i]);
          break;
        }
    arms = kept;
  }
  for (const Arm& a : arms)
    if (a.threads == kThreads)
      CHECK(cudaFuncSetAttribute(a.kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, 227 * 1024));

  auto do_flush = [&] { gi::LaunchL2Flush(flush_buf, flush_bytes, gi::FlushAccess::kWriteZeros, 0); };
  auto time = [&](const std::function<void()>& launch) {
    for (int i = 0; i < 5; ++i) {
      do_flush();
      launch();
    }
    CHECK(cudaDeviceSynchronize());
    std::string w;
    if (!cupti->Start(&w)) std::fprintf(stderr, "CUPTI start: %s\n", w.c_str());
    for (int i = 0; i < iters; ++i) {
      do_flush();
      launch();
    }
    CHECK(cudaDeviceSynchronize());
    std::vector<gi::KernelSpan> spans;
    if (!cupti->Stop(&spans, &w)) std::fprintf(stderr, "CUPTI stop: %s\n", w.c_str());
    std::vector<double> us;
    for (const auto& s : spans)
      if (s.name != gi::kFlushKernelName) us.push_back((s.end_ns - s.start_ns) / 1000.0);
    if (static_cast<int>(us.size()) != iters) std::fprintf(stderr, "CUPTI: %zu spans for %d\n", us.size(), iters);
    return Median(us);
  };

  std::printf("paged-sweep: %d SMs, L2 %d B, zero flush (%llu B), %d iterations, %d reps, median CUPTI span\n", sms,
              l2, static_cast<unsigned long long>(flush_bytes), iters, reps);
  std::mt19937 rng(12345);
  int failures = 0;
  for (int ntok : tokens) {
    std::vector<int32_t> h(ntok);
    for (int i = 0; i < ntok; ++i) h[i] = i;
    std::shuffle(h.begin(), h.end(), rng);  // random pages, each once (the bench's inputs)
    CHECK(cudaMemcpy(idx, h.data(), ntok * 4, cudaMemcpyHostToDevice));
    const double bytes = 2.0 * ntok * kRowBytes;
    std::vector<std::vector<double>> us(arms.size());
    for (int rep = 0; rep < reps; ++rep) {
      for (size_t ai = 0; ai < arms.size(); ++ai) {
        const Arm& arm = arms[ai];
        const int blocks = arm.blocks ? arm.blocks : arm.per_sm * sms;
        const int chunk = arm.chunk_tokens ? arm.chunk_tokens : (ntok + blocks - 1) / blocks;
        const size_t smem = arm.Smem(chunk);
        if (arm.sidx && chunk > 4096) {
          std::fprintf(stderr, "%s: chunk %d over the index room (4096)\n", arm.name.c_str(), chunk);
          return 1;
        }
        if (static_cast<int64_t>(chunk) * blocks < ntok) {
          std::fprintf(stderr, "%s: %d blocks of %d tokens do not cover %d\n", arm.name.c_str(), blocks, chunk, ntok);
          return 1;
        }
        Args p{k, v, idx, ntok, chunk, sink, nullptr, nullptr};
        auto launch = [&] { Launch(arm, blocks, smem, p); };
        if (rep == 0) {  // the check: every byte once
          CHECK(cudaMemset(dbytes, 0, 8));
          p.bytes = dbytes;
          launch();
          CHECK(cudaGetLastError());
          CHECK(cudaDeviceSynchronize());
          unsigned long long got = 0;
          CHECK(cudaMemcpy(&got, dbytes, 8, cudaMemcpyDeviceToHost));
          p.bytes = nullptr;
          if (got != static_cast<unsigned long long>(bytes)) {
            std::printf("CHECK FAILED %s tokens %d: %llu bytes moved, %.0f expected\n", arm.name.c_str(), ntok, got,
                        bytes);
            ++failures;
          }
          int nb = 0;
          CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&nb, arm.kernel, arm.threads, smem));
          if (nb < arm.per_sm) {
            std::printf("CHECK FAILED %s: %d blocks fit an SM, %d wanted\n", arm.name.c_str(), nb, arm.per_sm);
            ++failures;
          }
        }
        us[ai].push_back(time(launch));
        CHECK(cudaGetLastError());
        std::printf("rep %d tokens %6d %-34s blocks %5d chunk %5d %9.2f us %6.3f TB/s\n", rep, ntok,
                    arm.name.c_str(), blocks, chunk, us[ai].back(), bytes / us[ai].back() / 1e6);
        std::fflush(stdout);
      }
    }
    // The timeline: two launches of every arm, each after the flush and a sync
    // (as the kernel's KI_GQA_TIMELINE build: read the shape, not the totals).
    if (!timeline_dir.empty()) {
      for (const Arm& arm : arms) {
        const int blocks = arm.blocks ? arm.blocks : arm.per_sm * sms;
        if (arm.threads != kThreads || blocks > kTlMax) continue;
        const int chunk = arm.chunk_tokens ? arm.chunk_tokens : (ntok + blocks - 1) / blocks;
        Args p{k, v, idx, ntok, chunk, sink, nullptr, dstamps};
        std::string file = arm.name;
        for (char& c : file)
          if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
        for (int n = 1; n <= 2; ++n) {
          CHECK(cudaMemset(dstamps, 0, kTlMax * kTlCols * 8));
          do_flush();
          CHECK(cudaDeviceSynchronize());
          Launch(arm, blocks, arm.Smem(chunk), p);
          CHECK(cudaGetLastError());
          CHECK(cudaDeviceSynchronize());
          std::vector<unsigned long long> h(static_cast<size_t>(blocks) * kTlCols);
          CHECK(cudaMemcpy(h.data(), dstamps, h.size() * 8, cudaMemcpyDeviceToHost));
          const std::string path = timeline_dir + "/" + file + "-" + std::to_string(n) + "." + std::to_string(ntok);
          if (FILE* f = std::fopen(path.c_str(), "w")) {
            for (int b = 0; b < blocks; ++b) {
              const unsigned long long* r = &h[static_cast<size_t>(b) * kTlCols];
              std::fprintf(f, "%d %llu %llu %llu %llu %llu %lld %llu\n", b, r[0], r[1], r[2], r[3], r[4],
                           static_cast<long long>(r[5]), r[6]);
            }
            std::fclose(f);
          }
        }
      }
    }
    // The table: every rep, and each arm against the plain read of the same rep.
    std::printf("\ntokens %d (%.0f MB), zero flush, CUPTI median of %d, µs per rep; ratio = arm / plain contig (same rep)\n",
                ntok, bytes / 1e6, iters);
    std::printf("%-34s %s | %s\n", "arm", "us (reps)", "ratio (reps)");
    for (size_t ai = 0; ai < arms.size(); ++ai) {
      std::printf("%-34s", arms[ai].name.c_str());
      for (double x : us[ai]) std::printf(" %7.2f", x);
      std::printf(" |");
      for (size_t r = 0; r < us[ai].size(); ++r) std::printf(" %6.3f", us[ai][r] / us[0][r]);
      std::printf("\n");
    }
  }
  std::printf("checks: %s\n", failures ? "FAILED" : "all passed");
  return failures ? 1 : 0;
}
