// stream-probe: how fast can this GPU read the GQA decode's K/V bytes under
// the bench's protocol, with no attention arithmetic at all? It streams the
// K and V rows of a paged cache (page_size 1, 4 KV heads x 128 x bf16 = 1 KiB
// per token and cache) the way a decode kernel would and touches one word per
// tile, so its time is a floor for any kernel that reads those bytes that way.
// Pages are drawn at random (the bench's inputs) and, with PROBE_ALL set, also
// in order (a contiguous cache). Ways to move the bytes, one block per SM
// (shared memory sized so), each block a contiguous chunk of tokens as ki's
// plans do:
//   head     warp w copies KV head w's 256 B of every token by 16-byte
//            cp.async (ki's split and cluster layout, but with each tile's
//            page indices loaded into registers one tile ahead, where ki's
//            KvStream rings them 2 x STAGES ahead: that costs 4-7% here, see
//            paged_sweep.cu and gqa-floor-h200-2026-12-02-b.md); headEF: with
//            an L2 evict-first policy;
//   steal    head, but each warp claims its tiles one at a time from an atomic
//            counter and, once its chunk is drained, takes tiles from the
//            chunk with the most left (work stealing); stealEF likewise;
//   rows     (PROBE_ALL) the block copies whole 1 KiB rows by cp.async;
//   bulk     (PROBE_ALL) whole rows by the bulk copy engine (cp.async.bulk,
//            one 1 KiB copy per row and cache, an mbarrier per stage);
// and `plain` / `plainEF`, a contiguous grid-stride read of the same byte
// count by 8 blocks per SM (the device's read bandwidth, balanced by the
// block scheduler). Timed like ki-kernel-bench: the L2 flush kernel before
// every iteration (zero, read or none), CUPTI kernel spans, median of the
// iterations; per-block start/end from %globaltimer give the launch skew and
// the spread of block times.
// --gpc: finds which SMs share a GPC (the blocks of a thread-block cluster
// do) and prints the block times of an equal split grouped by GPC.
// Results: bench/results/gqa-floor-h200-2026-11-30.md.
//
//   stream-probe [--flush zero|read|none] [--iters N] [--gpc]
#include <cuda_runtime.h>
#include <stdint.h>

#include <algorithm>
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

constexpr int kRowBytes = 1024;  // one token of one cache: 4 KV heads x 128 x bf16
constexpr int kTile = 16;        // tokens per tile
constexpr int kThreads = 128;
constexpr int kForceSmem = 132 * 1024;  // one block per SM (over half the SM's 228 KiB), room for every depth

struct Probe {
  const uint8_t* k;
  const uint8_t* v;
  const int32_t* idx;
  int ntok;
  int chunk;           // tokens per block
  unsigned* sink;      // written only if the touched words sum to a magic value
  unsigned long long* times;  // [2 * block]: globaltimer at start, at end
  int* counters;       // steal: [block][4] tiles claimed, zero at launch
  const int2* ranges;  // head: when set, the block's tokens by its SM ([smid] = begin, end), one block per SM
};

__device__ __forceinline__ unsigned long long GlobalTimer() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}
__device__ __forceinline__ uint32_t Smem(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}
__device__ __forceinline__ void CpAsync16(uint32_t dst, const void* src, int n) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(n));
}
__device__ __forceinline__ void Commit() { asm volatile("cp.async.commit_group;\n" ::); }
__device__ __forceinline__ void CpAsyncCommitAll() { Commit(); }
template <int N>
__device__ __forceinline__ void WaitGroup() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
}
__device__ __forceinline__ uint32_t LdShared(uint32_t a) {
  uint32_t x;
  asm volatile("ld.shared.u32 %0, [%1];\n" : "=r"(x) : "r"(a));
  return x;
}
__device__ __forceinline__ unsigned SmId() {
  unsigned sm;
  asm volatile("mov.u32 %0, %%smid;" : "=r"(sm));
  return sm;
}
// times[3 * block]: start, end, SM.
__device__ __forceinline__ void Stamp(const Probe& p, int which) {
  if (threadIdx.x == 0) p.times[3 * blockIdx.x + which] = GlobalTimer();
  if (threadIdx.x == 0 && which == 0) p.times[3 * blockIdx.x + 2] = SmId();
}
__device__ __forceinline__ void Sink(const Probe& p, unsigned acc) {
  if (acc == 0x9e3779b9u) *p.sink = acc;  // keeps the touches alive
}

// head: warp w = KV head w; tile = 16 tokens x 256 B of K and of V (8 KiB).
__device__ __forceinline__ void CpAsync16Hint(uint32_t dst, const void* src, int n, uint64_t pol) {
  asm volatile("cp.async.cg.shared.global.L2::cache_hint [%0], [%1], 16, %2, %3;\n" ::"r"(dst), "l"(src), "r"(n),
               "l"(pol));
}
__device__ __forceinline__ uint64_t EvictFirst() {
  uint64_t pol;
  asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;\n" : "=l"(pol));
  return pol;
}
// One 16-byte copy of K and of V, with the evict-first policy if kEF.
template <bool kEF>
__device__ __forceinline__ void CopyKV(uint32_t kdst, uint32_t vdst, const uint8_t* k, const uint8_t* v, int n,
                                       uint64_t pol) {
  if (kEF) {
    CpAsync16Hint(kdst, k, n, pol);
    CpAsync16Hint(vdst, v, n, pol);
  } else {
    CpAsync16(kdst, k, n);
    CpAsync16(vdst, v, n);
  }
}

template <int S, bool kEF = false>
__global__ void __launch_bounds__(kThreads) ProbeHead(Probe p) {
  extern __shared__ __align__(128) uint8_t sm[];
  Stamp(p, 0);
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  int t0 = blockIdx.x * p.chunk, t1 = min(p.ntok, t0 + p.chunk);
  if (p.ranges) {
    const int2 r = p.ranges[SmId()];
    t0 = r.x;
    t1 = r.y;
  }
  if (t0 >= t1) return;
  const int ntiles = (t1 - t0 + kTile - 1) / kTile;
  const uint32_t base = Smem(sm) + warp * S * 8192;
  const uint64_t pol = EvictFirst();
  auto index = [&](int k) {
    const int t = t0 + k * kTile + (lane & 15);
    return t < t1 ? __ldg(p.idx + t) : 0;
  };
  auto issue = [&](int k, int page) {
    const uint32_t dst = base + (k % S) * 8192;
    const int cc = lane & 15;
#pragma unroll
    for (int i = 0; i < kTile / 2; ++i) {
      const int r = (lane >> 4) + 2 * i;
      const int pg = __shfl_sync(0xffffffffu, page, r);
      const int n = t0 + k * kTile + r < t1 ? 16 : 0;
      const size_t off = static_cast<size_t>(pg) * kRowBytes + warp * 256 + cc * 16;
      CopyKV<kEF>(dst + r * 256 + cc * 16, dst + 4096 + r * 256 + cc * 16, p.k + off, p.v + off, n, pol);
    }
  };
  int pidx[S];
#pragma unroll
  for (int s = 0; s < S; ++s) pidx[s] = index(s);
#pragma unroll
  for (int s = 0; s < S; ++s) {
    if (s < ntiles) issue(s, pidx[s]);
    Commit();
  }
  int pnext = index(S);
  unsigned acc = 0;
  for (int k = 0; k < ntiles; ++k) {
    WaitGroup<S - 1>();
    __syncwarp();
    acc += LdShared(base + (k % S) * 8192 + lane * 4);
    __syncwarp();
    if (k + S < ntiles) issue(k + S, pnext);
    Commit();
    pnext = index(k + S + 1);
  }
  WaitGroup<0>();
  Sink(p, acc);
  __syncthreads();
  Stamp(p, 1);
}

// steal: head's layout, but every warp claims its tiles one at a time from
// its (chunk, head) counter, and when its own chunk is drained, takes tiles
// from the chunk of its head with the most unclaimed ones (a work-stealing
// bound on the spread of block times). Claims run one step ahead of the
// page-index loads, which run one step ahead of the copies.
template <int S, bool kEF = false>
__global__ void __launch_bounds__(kThreads) ProbeSteal(Probe p) {
  extern __shared__ __align__(128) uint8_t sm[];
  Stamp(p, 0);
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int nchunks = gridDim.x;
  auto ntiles_of = [&](int v) {
    const int b = v * p.chunk, e = min(p.ntok, b + p.chunk);
    return e > b ? (e - b + kTile - 1) / kTile : 0;
  };
  const uint32_t base = Smem(sm) + warp * S * 8192;
  const uint64_t pol = EvictFirst();
  int cur = blockIdx.x;  // the chunk claimed from
  auto claim = [&](int v) { return lane == 0 ? atomicAdd(p.counters + v * 4 + warp, 1) : 0; };
  // A claim's answer: tile (v, t), or a search for the fullest chunk (blocking; only at the end).
  auto resolve = [&](int raw, int* v_out) -> int {
    int t = __shfl_sync(0xffffffffu, raw, 0);
    for (int round = 0; round < 8; ++round) {
      if (t < ntiles_of(cur)) {
        *v_out = cur;
        return t;
      }
      int best = -1, most = 1;  // steal only from chunks with 2+ unclaimed tiles
      for (int j = lane; j < nchunks; j += 32) {
        const int rem = ntiles_of(j) - __ldcg(p.counters + j * 4 + warp);
        if (rem > most) {
          most = rem;
          best = j;
        }
      }
#pragma unroll
      for (int o = 16; o > 0; o >>= 1) {
        const int om = __shfl_xor_sync(0xffffffffu, most, o);
        const int ob = __shfl_xor_sync(0xffffffffu, best, o);
        if (om > most || (om == most && ob > best)) {
          most = om;
          best = ob;
        }
      }
      if (best < 0) return -1;
      cur = best;
      t = __shfl_sync(0xffffffffu, claim(cur), 0);
    }
    return -1;
  };
  auto index = [&](int v, int t) {
    if (t < 0) return 0;
    const int tok = v * p.chunk + t * kTile + (lane & 15);
    return tok < min(p.ntok, (v + 1) * p.chunk) ? __ldg(p.idx + tok) : 0;
  };
  auto issue = [&](int slot, int v, int t, int page) {
    const uint32_t dst = base + (slot % S) * 8192;
    const int cc = lane & 15;
    const int end = min(p.ntok, (v + 1) * p.chunk);
#pragma unroll
    for (int i = 0; i < kTile / 2; ++i) {
      const int r = (lane >> 4) + 2 * i;
      const int pg = __shfl_sync(0xffffffffu, page, r);
      const int n = v * p.chunk + t * kTile + r < end ? 16 : 0;
      const size_t off = static_cast<size_t>(pg) * kRowBytes + warp * 256 + cc * 16;
      CopyKV<kEF>(dst + r * 256 + cc * 16, dst + 4096 + r * 256 + cc * 16, p.k + off, p.v + off, n, pol);
    }
  };
  // Prologue: S tiles claimed and copied, then one claim resolved with its index loaded, one claim in flight.
  int issued = 0;
  for (int s = 0; s < S; ++s) {
    int v, t = resolve(claim(cur), &v);
    if (t >= 0) {
      issue(issued, v, t, index(v, t));
      ++issued;
    }
    CpAsyncCommitAll();
  }
  int nv, nt = resolve(claim(cur), &nv);
  int npage = index(nv, nt);
  int raw = claim(cur);
  unsigned acc = 0;
  for (int k = 0; k < issued; ++k) {
    WaitGroup<S - 1>();
    __syncwarp();
    acc += LdShared(base + (k % S) * 8192 + lane * 4);
    __syncwarp();
    if (nt >= 0) {
      issue(issued, nv, nt, npage);
      ++issued;
      nt = resolve(raw, &nv);
      npage = index(nv, nt);
      if (nt >= 0) raw = claim(cur);
    }
    CpAsyncCommitAll();
  }
  WaitGroup<0>();
  Sink(p, acc);
  __syncthreads();
  Stamp(p, 1);
}

// rows: the block copies whole rows; tile = 16 tokens x 1 KiB of K and of V
// (32 KiB); thread t copies 16-byte chunk t % 64 of rows 2j + t / 64.
template <int S>
__global__ void __launch_bounds__(kThreads) ProbeRows(Probe p) {
  extern __shared__ __align__(128) uint8_t sm[];
  Stamp(p, 0);
  const int tid = threadIdx.x, lane = tid & 31;
  const int t0 = blockIdx.x * p.chunk, t1 = min(p.ntok, t0 + p.chunk);
  if (t0 >= t1) return;
  const int ntiles = (t1 - t0 + kTile - 1) / kTile;
  const uint32_t base = Smem(sm);
  auto index = [&](int k) {
    const int t = t0 + k * kTile + (lane & 15);
    return t < t1 ? __ldg(p.idx + t) : 0;
  };
  auto issue = [&](int k, int page) {
    const uint32_t dst = base + (k % S) * 32768;
    const int cc = tid & 63;
#pragma unroll
    for (int j = 0; j < kTile / 2; ++j) {
      const int r = 2 * j + (tid >> 6);
      const int pg = __shfl_sync(0xffffffffu, page, r);
      const int n = t0 + k * kTile + r < t1 ? 16 : 0;
      const size_t off = static_cast<size_t>(pg) * kRowBytes + cc * 16;
      CpAsync16(dst + r * kRowBytes + cc * 16, p.k + off, n);
      CpAsync16(dst + 16384 + r * kRowBytes + cc * 16, p.v + off, n);
    }
  };
  int pidx[S];
#pragma unroll
  for (int s = 0; s < S; ++s) pidx[s] = index(s);
#pragma unroll
  for (int s = 0; s < S; ++s) {
    if (s < ntiles) issue(s, pidx[s]);
    Commit();
  }
  int pnext = index(S);
  unsigned acc = 0;
  for (int k = 0; k < ntiles; ++k) {
    WaitGroup<S - 1>();
    __syncthreads();
    acc += LdShared(base + (k % S) * 32768 + tid * 4);
    __syncthreads();
    if (k + S < ntiles) issue(k + S, pnext);
    Commit();
    pnext = index(k + S + 1);
  }
  WaitGroup<0>();
  Sink(p, acc);
  __syncthreads();
  Stamp(p, 1);
}

// bulk: warp 0's lanes 0-15 each copy one row of K and of V per tile with
// cp.async.bulk (1 KiB each) onto the stage's mbarrier; all threads wait on
// it, touch, and release the stage with a block barrier.
__device__ __forceinline__ void BarInit(uint32_t bar, int count) {
  asm volatile("mbarrier.init.shared.b64 [%0], %1;\n" ::"r"(bar), "r"(count));
}
__device__ __forceinline__ void BarExpect(uint32_t bar, uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared.b64 _, [%0], %1;\n" ::"r"(bar), "r"(bytes) : "memory");
}
__device__ __forceinline__ void BarWait(uint32_t bar, uint32_t parity) {
  asm volatile(
      "{\n .reg .pred P;\n WAIT:\n"
      " mbarrier.try_wait.parity.shared.b64 P, [%0], %1;\n"
      " @!P bra WAIT;\n}\n" ::"r"(bar),
      "r"(parity)
      : "memory");
}
__device__ __forceinline__ void Bulk(uint32_t dst, const void* src, uint32_t bytes, uint32_t bar) {
  asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\n" ::"r"(dst),
               "l"(src), "r"(bytes), "r"(bar)
               : "memory");
}
template <int S>
__global__ void __launch_bounds__(kThreads) ProbeBulk(Probe p) {
  extern __shared__ __align__(128) uint8_t sm[];
  __shared__ __align__(8) uint64_t bars[S];
  Stamp(p, 0);
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int t0 = blockIdx.x * p.chunk, t1 = min(p.ntok, t0 + p.chunk);
  if (t0 >= t1) return;
  const int ntiles = (t1 - t0 + kTile - 1) / kTile;
  const uint32_t base = Smem(sm);
  const uint32_t bar0 = Smem(bars);
  if (tid == 0) {
    for (int s = 0; s < S; ++s) BarInit(bar0 + 8 * s, 1);
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
  }
  __syncthreads();
  auto index = [&](int k) {
    const int t = t0 + k * kTile + (lane & 15);
    return t < t1 ? __ldg(p.idx + t) : -1;
  };
  auto issue = [&](int k, int page) {  // warp 0 only
    const int rows = min(kTile, t1 - t0 - k * kTile);
    const uint32_t bar = bar0 + 8 * (k % S);
    if (lane == 0) BarExpect(bar, rows * 2 * kRowBytes);
    __syncwarp();
    if (lane < rows) {
      const uint32_t dst = base + (k % S) * 32768 + lane * kRowBytes;
      const size_t off = static_cast<size_t>(page) * kRowBytes;
      Bulk(dst, p.k + off, kRowBytes, bar);
      Bulk(dst + 16384, p.v + off, kRowBytes, bar);
    }
  };
  int pnext = 0;
  if (warp == 0) {
    for (int s = 0; s < S && s < ntiles; ++s) issue(s, index(s));
    pnext = index(S);
  }
  unsigned acc = 0;
  for (int k = 0; k < ntiles; ++k) {
    BarWait(bar0 + 8 * (k % S), (k / S) & 1);
    acc += LdShared(base + (k % S) * 32768 + tid * 4);
    __syncthreads();
    if (warp == 0) {
      if (k + S < ntiles) issue(k + S, pnext);
      pnext = index(k + S + 1);
    }
  }
  Sink(p, acc);
  __syncthreads();
  Stamp(p, 1);
}

// plain: contiguous grid-stride read of the K then V bytes (no paging), 4
// 16-byte loads in flight per thread.
__device__ __forceinline__ uint4 LoadEF(const uint4* x, uint64_t pol) {
  uint4 r;
  asm volatile("ld.global.L2::cache_hint.v4.u32 {%0,%1,%2,%3}, [%4], %5;\n"
               : "=r"(r.x), "=r"(r.y), "=r"(r.z), "=r"(r.w)
               : "l"(x), "l"(pol));
  return r;
}
template <bool kEF = false>
__global__ void __launch_bounds__(256) ProbePlain(const uint4* a, const uint4* b, uint64_t n, unsigned* sink) {
  const uint64_t pol = EvictFirst();
  const uint64_t stride = static_cast<uint64_t>(gridDim.x) * blockDim.x;
  unsigned acc = 0;
  for (int half = 0; half < 2; ++half) {
    const uint4* x = half ? b : a;
    uint64_t i = blockIdx.x * static_cast<uint64_t>(blockDim.x) + threadIdx.x;
    for (; i + 3 * stride < n; i += 4 * stride) {
      uint4 v[4];
#pragma unroll
      for (int u = 0; u < 4; ++u) v[u] = kEF ? LoadEF(x + i + u * stride, pol) : __ldcs(x + i + u * stride);
#pragma unroll
      for (int u = 0; u < 4; ++u) acc += v[u].x ^ v[u].w;
    }
    for (; i < n; i += stride) acc += __ldcs(x + i).y;
  }
  if (acc == 0x9e3779b9u) *sink = acc;
}

// GPC discovery: the blocks of one thread-block cluster share a GPC. Each
// block records its SM and stays a while, so that the clusters resident at
// once cover every GPC; over many clusters, SMs seen together are merged.
__global__ void GpcDiscover(int* sm_of_block, unsigned long long stay_ns) {
  if (threadIdx.x == 0) sm_of_block[blockIdx.x] = static_cast<int>(SmId());
  const unsigned long long t0 = GlobalTimer();
  while (GlobalTimer() - t0 < stay_ns) {
  }
}

#define CHECK(x)                                                                      \
  do {                                                                                \
    cudaError_t e_ = (x);                                                             \
    if (e_ != cudaSuccess) {                                                          \
      std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
      std::exit(1);                                                                   \
    }                                                                                 \
  } while (0)

double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  std::string flush = "zero";
  int iters = 30;
  bool gpc_mode = false;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--gpc")) gpc_mode = true;
    else if (!std::strcmp(argv[i], "--flush") && i + 1 < argc) flush = argv[++i];
    else if (!std::strcmp(argv[i], "--iters") && i + 1 < argc) iters = std::atoi(argv[++i]);
    else {
      std::fprintf(stderr, "usage: stream-probe [--flush zero|read|none] [--iters N] [--gpc]\n");
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

  const int kMaxTok = 64 * 8192;
  uint8_t *k = nullptr, *v = nullptr;
  CHECK(cudaMalloc(&k, static_cast<size_t>(kMaxTok) * kRowBytes));
  CHECK(cudaMalloc(&v, static_cast<size_t>(kMaxTok) * kRowBytes));
  CHECK(cudaMemset(k, 1, static_cast<size_t>(kMaxTok) * kRowBytes));
  CHECK(cudaMemset(v, 2, static_cast<size_t>(kMaxTok) * kRowBytes));
  int32_t* idx = nullptr;
  CHECK(cudaMalloc(&idx, kMaxTok * sizeof(int32_t)));
  unsigned* sink = nullptr;
  CHECK(cudaMalloc(&sink, 4));
  unsigned long long* times = nullptr;
  CHECK(cudaMalloc(&times, 3 * 4096 * sizeof(unsigned long long)));
  int* counters = nullptr;
  CHECK(cudaMalloc(&counters, 4096 * 4 * sizeof(int)));

  auto set_smem = [&](auto f) {
    CHECK(cudaFuncSetAttribute(f, cudaFuncAttributeMaxDynamicSharedMemorySize, kForceSmem));
  };
  set_smem(ProbeHead<2>); set_smem(ProbeHead<3>); set_smem(ProbeHead<4>); set_smem(ProbeHead<4, true>);
  set_smem(ProbeSteal<3>); set_smem(ProbeSteal<4>); set_smem(ProbeSteal<4, true>);
  set_smem(ProbeRows<2>); set_smem(ProbeRows<3>);
  set_smem(ProbeBulk<2>); set_smem(ProbeBulk<3>);

  auto do_flush = [&] {
    if (flush == "zero") gi::LaunchL2Flush(flush_buf, flush_bytes, gi::FlushAccess::kWriteZeros, 0);
    else if (flush == "read") gi::LaunchL2Flush(flush_buf, flush_bytes, gi::FlushAccess::kRead, 0);
    else gi::LaunchL2Flush(flush_buf, 0, gi::FlushAccess::kWriteZeros, 0);  // the empty marker only
  };
  std::vector<unsigned long long> last_times;  // the last timed launch's stamps
  // Median CUPTI span of the non-flush kernel over `iters` iterations, and the
  // last iteration's block timeline.
  auto time = [&](auto launch, int blocks, double* skew_us, double* dmin, double* dmed, double* dmax) {
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
    if (blocks > 0) {
      std::vector<unsigned long long> t(3 * blocks);
      CHECK(cudaMemcpy(t.data(), times, t.size() * 8, cudaMemcpyDeviceToHost));
      unsigned long long s0 = ~0ull, s1 = 0;
      std::vector<double> d;
      last_times = t;
      for (int b = 0; b < blocks; ++b) {
        if (t[3 * b + 1] < t[3 * b]) continue;  // empty block (no end stamp this call)
        s0 = std::min(s0, t[3 * b]);
        s1 = std::max(s1, t[3 * b]);
        d.push_back((t[3 * b + 1] - t[3 * b]) / 1000.0);
      }
      std::sort(d.begin(), d.end());
      *skew_us = (s1 - s0) / 1000.0;
      *dmin = d.empty() ? 0 : d.front();
      *dmed = Median(d);
      *dmax = d.empty() ? 0 : d.back();
    }
    return Median(us);
  };

  std::printf("stream-probe: %d SMs, L2 %d B, flush %s (%llu B), %d iterations, median CUPTI span\n", sms, l2,
              flush.c_str(), static_cast<unsigned long long>(flush_bytes), iters);
  std::printf("%-8s %-7s %6s %6s %3s %7s %9s %7s %8s %8s %8s %8s\n", "way", "pages", "tokens", "blocks", "S",
              "chunk", "us", "TB/s", "skew_us", "blk_min", "blk_med", "blk_max");
  std::mt19937 rng0(777);
  if (gpc_mode) {
    // Which SMs share a GPC: clusters of the largest size that launches, 1 block per SM.
    std::vector<std::pair<int, std::vector<int>>> seen_sets;  // (cluster size, SM of each block)
    for (int c : {16, 8, 4}) {
      if (c > 8 && cudaFuncSetAttribute(GpcDiscover, cudaFuncAttributeNonPortableClusterSizeAllowed, 1) != cudaSuccess) {
        (void)cudaGetLastError();
        continue;
      }
      CHECK(cudaFuncSetAttribute(GpcDiscover, cudaFuncAttributeMaxDynamicSharedMemorySize, kForceSmem));
      const int nclusters = 96;
      int* d_sm = nullptr;
      CHECK(cudaMalloc(&d_sm, c * nclusters * sizeof(int)));
      cudaLaunchConfig_t cfg = {};
      cfg.gridDim = dim3(c * nclusters);
      cfg.blockDim = dim3(32);
      cfg.dynamicSmemBytes = kForceSmem;
      cudaLaunchAttribute attr;
      attr.id = cudaLaunchAttributeClusterDimension;
      attr.val.clusterDim.x = c;
      attr.val.clusterDim.y = 1;
      attr.val.clusterDim.z = 1;
      cfg.attrs = &attr;
      cfg.numAttrs = 1;
      if (cudaLaunchKernelEx(&cfg, GpcDiscover, d_sm, 20000ull) != cudaSuccess || cudaDeviceSynchronize() != cudaSuccess) {
        (void)cudaGetLastError();
        cudaFree(d_sm);
        continue;
      }
      std::vector<int> smo(c * nclusters);
      CHECK(cudaMemcpy(smo.data(), d_sm, smo.size() * sizeof(int), cudaMemcpyDeviceToHost));
      cudaFree(d_sm);
      seen_sets.emplace_back(c, std::move(smo));
    }
    if (seen_sets.empty()) {
      std::fprintf(stderr, "no cluster launch worked\n");
      return 1;
    }
    std::vector<int> parent(sms);
    for (int i = 0; i < sms; ++i) parent[i] = i;
    std::function<int(int)> find = [&](int x) { return parent[x] == x ? x : parent[x] = find(parent[x]); };
    for (const auto& [csize, smo] : seen_sets)
      for (size_t b = 0; b < smo.size(); b += csize)
        for (int j = 1; j < csize; ++j) parent[find(smo[b + j])] = find(smo[b]);
    std::vector<int> gpc_of(sms, -1), gpc_size;
    std::vector<int> root_id(sms, -1);
    for (int i = 0; i < sms; ++i) {
      const int r = find(i);
      if (root_id[r] < 0) {
        root_id[r] = static_cast<int>(gpc_size.size());
        gpc_size.push_back(0);
      }
      gpc_of[i] = root_id[r];
      ++gpc_size[root_id[r]];
    }
    const int G = static_cast<int>(gpc_size.size());
    std::printf("GPCs (SMs seen together in clusters of");
    for (const auto& cs : seen_sets) std::printf(" %d", cs.first);
    std::printf(" merged): %d:", G);
    for (int g = 0; g < G; ++g) std::printf(" %d", gpc_size[g]);
    std::printf("\nSM -> GPC:");
    for (int i = 0; i < sms; ++i) std::printf(" %d", gpc_of[i]);
    std::printf("\n");
    int2* d_ranges = nullptr;
    CHECK(cudaMalloc(&d_ranges, sms * sizeof(int2)));
    for (int ntok : {65536, 524288}) {
      std::vector<int32_t> h(ntok);
      for (int i = 0; i < ntok; ++i) h[i] = i;
      std::shuffle(h.begin(), h.end(), rng0);
      CHECK(cudaMemcpy(idx, h.data(), ntok * 4, cudaMemcpyHostToDevice));
      const double bytes = 2.0 * ntok * kRowBytes;
      // Equal tokens per SM (132 blocks, one per SM, placed by SM id), then the
      // block times grouped by GPC: a per-GPC bandwidth limit would show as
      // slower blocks in the larger GPCs. (A first version also gave every GPC
      // an equal share; it was moot once the per-GPC means came out equal, and
      // the 8 SMs never seen in a cluster made its shares wrong: removed.)
      std::vector<int2> rr(sms);
      for (int i = 0; i < sms; ++i)
        rr[i] = make_int2(static_cast<int>(static_cast<long long>(ntok) * i / sms),
                          static_cast<int>(static_cast<long long>(ntok) * (i + 1) / sms));
      CHECK(cudaMemcpy(d_ranges, rr.data(), rr.size() * sizeof(int2), cudaMemcpyHostToDevice));
      for (int rep = 0; rep < 3; ++rep) {
        for (int ef = 0; ef < 2; ++ef) {
          Probe p{k, v, idx, ntok, 0, sink, times, counters, d_ranges};
          double skew, dmin, dmed, dmax;
          const double us = time(
              [&] {
                if (ef) ProbeHead<4, true><<<sms, kThreads, kForceSmem>>>(p);
                else ProbeHead<4><<<sms, kThreads, kForceSmem>>>(p);
              },
              sms, &skew, &dmin, &dmed, &dmax);
          std::vector<double> sum(G, 0), mx(G, 0);
          for (int b = 0; b < sms; ++b) {
            const double d = (last_times[3 * b + 1] - last_times[3 * b]) / 1000.0;
            const int g = gpc_of[last_times[3 * b + 2] % sms];
            sum[g] += d;
            mx[g] = std::max(mx[g], d);
          }
          std::printf("per-SM %s tokens %6d: %8.2f us %6.3f TB/s  blocks min/med/max %.1f/%.1f/%.1f  per GPC (size:mean/max)",
                      ef ? "EF" : "  ", ntok, us, bytes / us / 1e6, dmin, dmed, dmax);
          for (int g = 0; g < G; ++g) std::printf(" %d:%.1f/%.1f", gpc_size[g], sum[g] / gpc_size[g], mx[g]);
          std::printf("\n");
        }
      }
    }
    return 0;
  }

  std::mt19937 rng(12345);
  const bool all_ways = getenv("PROBE_ALL") != nullptr;  // also rows, bulk and contiguous pages
  for (int ntok : {65536, 524288}) {
    const double bytes = 2.0 * ntok * kRowBytes;
    for (int ef = 0; ef < 2; ++ef) {
      const uint64_t n = static_cast<uint64_t>(ntok) * kRowBytes / 16;
      double x;
      const double us = time(
          [&] {
            if (ef) ProbePlain<true><<<sms * 8, 256>>>((const uint4*)k, (const uint4*)v, n, sink);
            else ProbePlain<false><<<sms * 8, 256>>>((const uint4*)k, (const uint4*)v, n, sink);
          },
          0, &x, &x, &x, &x);
      std::printf("%-8s %-7s %6d %6d %3s %7s %9.2f %7.3f\n", ef ? "plainEF" : "plain", "contig", ntok, sms * 8, "-",
                  "-", us, bytes / us / 1e6);
    }
    for (const char* pages : {"random", "contig"}) {
      if (!all_ways && !std::strcmp(pages, "contig")) continue;
      std::vector<int32_t> h(ntok);
      for (int i = 0; i < ntok; ++i) h[i] = i;
      if (!std::strcmp(pages, "random")) std::shuffle(h.begin(), h.end(), rng);
      CHECK(cudaMemcpy(idx, h.data(), ntok * 4, cudaMemcpyHostToDevice));
      for (int blocks : {sms - 4, sms}) {
        Probe p{k, v, idx, ntok, (ntok + blocks - 1) / blocks, sink, times, counters, nullptr};
        auto row = [&](const char* way, int S, auto launch) {
          double skew, dmin, dmed, dmax;
          const double us = time(launch, blocks, &skew, &dmin, &dmed, &dmax);
          std::printf("%-8s %-7s %6d %6d %3d %7d %9.2f %7.3f %8.2f %8.2f %8.2f %8.2f\n", way, pages, ntok, blocks, S,
                      p.chunk, us, bytes / us / 1e6, skew, dmin, dmed, dmax);
        };
        auto steal = [&](auto kernel) {
          cudaMemsetAsync(counters, 0, blocks * 4 * sizeof(int));
          kernel<<<blocks, kThreads, kForceSmem>>>(p);
        };
        row("head", 3, [&] { ProbeHead<3><<<blocks, kThreads, kForceSmem>>>(p); });
        row("head", 4, [&] { ProbeHead<4><<<blocks, kThreads, kForceSmem>>>(p); });
        row("headEF", 4, [&] { ProbeHead<4, true><<<blocks, kThreads, kForceSmem>>>(p); });
        row("steal", 3, [&] { steal(ProbeSteal<3>); });
        row("steal", 4, [&] { steal(ProbeSteal<4>); });
        row("stealEF", 4, [&] { steal(ProbeSteal<4, true>); });
        if (all_ways) {
          row("head", 2, [&] { ProbeHead<2><<<blocks, kThreads, kForceSmem>>>(p); });
          row("rows", 2, [&] { ProbeRows<2><<<blocks, kThreads, kForceSmem>>>(p); });
          row("rows", 3, [&] { ProbeRows<3><<<blocks, kThreads, kForceSmem>>>(p); });
          row("bulk", 2, [&] { ProbeBulk<2><<<blocks, kThreads, kForceSmem>>>(p); });
          row("bulk", 3, [&] { ProbeBulk<3><<<blocks, kThreads, kForceSmem>>>(p); });
        }
      }
    }
  }
  CHECK(cudaGetLastError());
  return 0;
}
