// One-off: the planner before the split (fast.cu at main, verbatim but for
// the device query) against ChooseFastPlan, over random limits and tunings.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <algorithm>
#include "gqa_paged_decode/plan.h"
namespace ki::gqa { namespace old_impl {
constexpr int kWarps = 4;
constexpr int kThreads = kWarps * 32;
constexpr int kTile = 16;                          // tokens per warp tile
constexpr int kRowBytes = kHeadDim * 2;            // one token of one KV head: 256 B
constexpr int kTileBytes = kTile * kRowBytes;      // 4 KiB
constexpr int kMergeStride = kHeadDim + 4;         // floats per head row in the staging buffer (bank padding)
constexpr int kRing = 16;                          // index ring slots (tiles) per warp; >= 2*STAGES+1
constexpr int kRingBytes = kRing * kTile * 4;      // 1 KiB
constexpr int kPageElems = kNumKvHeads * kHeadDim; // elements of one page of one cache
constexpr int kMaxCluster = 16;
constexpr int kMinChunkSplit = 32;                 // smallest automatic split chunk (2 tiles per warp)
constexpr int64_t kEvictFirstMaxTokens = 131072;   // automatic L2 evict-first hint up to this many tokens
constexpr int64_t kClusterMaxTokens = 2048;        // auto: cluster mode for one sequence up to this long
constexpr int64_t kClusterSoloTokens = 64;         // auto cluster size 1 (no merge) up to this long
constexpr int64_t kSplitMinAvgTokens = 2048;       // auto: split from this mean sequence length
constexpr float kLog2e = 1.4426950408889634f;
constexpr unsigned kFull = 0xffffffffu;
constexpr int kPredMaxBatch = 127;
constexpr int kLeanSumMma = 1, kLeanOneTile = 2;
struct DeviceInfo {
  int num_sms = 0;
  int cc_major = 0;
  int blocks_per_sm[4][5] = {};
  int max_cluster[5] = {};
  int active_clusters[5][kMaxCluster + 1] = {};
};
const DeviceInfo* g_info;
FastTuning g_t;
uint64_t AlignUp(uint64_t x, uint64_t a) { return (x + a - 1) / a * a; }

struct WorkspaceLayout {
  uint64_t counters = 0, part_lse = 0, part_o = 0, total = 0;
};
// Per-head: partials of 8 heads per (work item, KV head), a counter per
// (sequence, KV head); split: partials of 32 heads per work item, a counter
// per sequence.
WorkspaceLayout OldLayout(int mode, int64_t batch, int64_t max_work) {
  const int64_t counters_per_seq = mode == kModeLegacy ? kNumKvHeads : 1;
  const int64_t heads_per_work = kNumQoHeads;
  WorkspaceLayout l;
  l.counters = 0;
  l.part_lse = AlignUp(static_cast<uint64_t>(batch) * counters_per_seq * 4, 256);
  l.part_o = l.part_lse + AlignUp(static_cast<uint64_t>(max_work) * heads_per_work * 4, 256);
  l.total = l.part_o + static_cast<uint64_t>(max_work) * heads_per_work * kHeadDim * 4;
  return l;
}
int32_t PlanFast(const Args& args, FastPlan* plan) {
  int device = 0;
  const DeviceInfo* info = g_info; (void)device;
  if (!info) return KI_ERR_LAUNCH;
  const FastTuning t = g_t;
  const int64_t total = args.num_kv_indices;
  const int64_t batch = args.batch;
  const int64_t avg = total / std::max<int64_t>(1, batch);
  *plan = FastPlan{};
  plan->num_sms = info->num_sms;
  const bool clusters = info->cc_major >= 9 && batch <= 65535;

  int mode = t.mode;
  if (mode < kModeAuto || mode > kModeCluster) mode = kModeAuto;
  if (mode == kModeAuto) {
    // Chosen from what the host knows (batch, total tokens) by measurements on
    // an H200 (bench/results/gqa-decode-h200-2026-11-29-v2.md, -v3.md, -11-30.md):
    // - one short sequence: a cluster of blocks shares it and merges on chip;
    // - long sequences on average: split, its chunks grouped in clusters
    //   where they fit (below);
    // - otherwise (many short or ragged sequences, one long one): per-head,
    //   whose per-KV-head merge stays cheap with many chunks per sequence.
    if (batch == 1 && total <= kClusterMaxTokens && clusters && info->max_cluster[2] > 0)
      mode = kModeCluster;
    else if (batch > 1 && avg >= kSplitMinAvgTokens)
      mode = kModeSplit;
    else
      mode = kModeLegacy;
  }
  if (mode == kModeCluster && !clusters) mode = kModeSplit;
  // Evict-first K/V copies (split and cluster): measured (H200, cold L2 after
  // the bench's zeroing flush) faster up to 16x4096 tokens and slower at
  // 64x8192; on up to 128 Ki tokens. Per-head mode takes it only when asked.
  // A fractional policy (evict-first on 1/4, 1/2 or 3/4 of the accesses, the
  // rest unchanged) was no middle way: 16x4096 44.3-45.8 us like no hint
  // (26.7-27.4 MB written back, against 4.8 with the full hint), 64x8192
  // 253.4-255.2 against 252.8 with none (gqa-decode-h200-2026-11-30-b.md).
  plan->evict_first = t.evict_first == 1 || (t.evict_first == 0 && mode != kModeLegacy && total <= kEvictFirstMaxTokens);
  // Programmatic dependent launch: on by default for one sequence only. In a
  // CUDA graph of back-to-back calls it took 0.3 us off every batch-1
  // workload (1x2..1x14: 2.53-2.69 -> 2.27-2.38 us per call; 1x362 5.57 ->
  // 5.11-5.44; 1x4096 9.49-9.79 -> 9.37-9.64) and nothing off the cold-L2
  // CUPTI medians, but made 16x4096 33% slower in the graph (38.2 -> 50.6 us)
  // and 64x8192 1% slower: the next call's blocks then become resident while
  // this one's still run (bench/results/gqa-pdl-h200-2026-12-01.md).
  plan->pdl = t.pdl == 1 || (t.pdl == 0 && info->cc_major >= 9 && batch == 1);
  // The instance for one sequence in one work item (kLean bits, see
  // GqaDecode): sums by mma, and one tile per warp up to 16 tokens.
  plan->lean = t.lean == 1 ? 0 : kLeanSumMma | (total <= kTile && t.lean != 2 ? kLeanOneTile : 0);

  if (mode == kModeLegacy) {
    // One wave of blocks at 2 stages (3 blocks fit an SM), chunks of at
    // least 128 tokens: fewer, longer blocks, each paying the first tile's
    // round trips once. Measured on the definition's 48 workloads (H200,
    // same call, 2026-11-30, bench/results/gqa-floor-h200-2026-11-30.md,
    // workloads_sweep.sh): batch 16 summed 275.7 us against 316.4 with
    // two waves at 3 stages and 64-token chunks (small batches 25-30%
    // faster: 4284 tokens 10.1-10.7 against 14.3), batch 64 608.0 against
    // 634.3.
    const int stages = (t.stages >= 2 && t.stages <= 4) ? t.stages : 2;
    const int per_sm = std::max(1, info->blocks_per_sm[kModeLegacy][stages]);
    int64_t chunk = t.chunk_tokens;
    if (chunk <= 0) {
      const int64_t waves = t.waves > 0 ? t.waves : 1;
      const int64_t min_chunk = t.min_chunk > 0 ? t.min_chunk : 128;
      const int64_t blocks = static_cast<int64_t>(info->num_sms) * per_sm * waves / kNumKvHeads;
      // As in split mode: sum_b ceil(len_b / chunk) <= total / chunk + batch,
      // so aiming at blocks - batch keeps ragged lengths inside the wave
      // (batch 16 of the 48 workloads: 259.1 us against 275.9; 32x1024 27.9
      // against 30.9, random lengths 28.7 against 32.2; same call, 2026-11-30).
      const int64_t aim = blocks > 2 * batch ? blocks - batch : blocks;
      chunk = (total + aim - 1) / std::max<int64_t>(1, aim);
      chunk = std::max<int64_t>(min_chunk, (chunk + kTile - 1) / kTile * kTile);
    }
    chunk = std::min<int64_t>(chunk, int64_t{1} << 30);
    const int64_t max_work = (total + chunk - 1) / chunk + batch;
    if (max_work > (int64_t{1} << 31) - 1) return KI_ERR_UNSUPPORTED;
    plan->mode = kModeLegacy;
    plan->chunk = static_cast<int>(chunk);
    plan->chunk_any = static_cast<int>(chunk);
    plan->max_work = static_cast<int>(max_work);
    plan->stages = stages;
    plan->blocks_per_sm = per_sm;
    plan->workspace_bytes = OldLayout(kModeLegacy, batch, max_work).total;
    return KI_OK;
  }

  // Split and cluster modes: blocks cover all 4 KV heads of their tokens.
  const bool one_short = mode == kModeCluster && batch == 1 && t.chunk_tokens <= 0;
  // Depth: 3 stages for split (v3 sweeps: 16x4096 and 64x8192 0.6-1.2%
  // faster than 4 in the same calls), 2 for one short sequence (each warp
  // has two 16-token tiles: 1x362 5.96-6.00 us against 6.03-6.09 at 3); the
  // automatic cluster grouping below may pick another.
  int stages = (t.stages >= 2 && t.stages <= 4) ? t.stages : (one_short ? 2 : 3);
  // Tokens per block (a cluster's work item: C times that).
  int64_t chunk = t.chunk_tokens;
  int64_t chunk_any = 0;  // 0: chunk
  bool whole_sequences = false;  // automatic split: one cluster per sequence (below)
  int64_t chunk_miss = 0;        // whole_sequences: the chunk after a prediction miss
  if (chunk <= 0 && !one_short) {
    const int64_t waves = t.waves > 0 ? t.waves : 1;
    const int64_t min_chunk = t.min_chunk > 0 ? t.min_chunk : kMinChunkSplit;
    // One block per SM unless asked (two 3-stage blocks per SM measured slower:
    // their chunks are half as long and each sequence has twice the partials).
    const int64_t aim_per_sm = t.per_sm > 0 ? std::min(t.per_sm, info->blocks_per_sm[kModeSplit][stages]) : 1;
    const int64_t blocks = static_cast<int64_t>(info->num_sms) * aim_per_sm * waves;
    // sum_b ceil(len_b / chunk) <= total / chunk + batch: aiming at blocks - batch
    // keeps the launch within `blocks` whatever the lengths (when batch is small
    // against it), so one wave is one wave.
    const int64_t aim = blocks > 2 * batch ? blocks - batch : blocks;
    chunk = (total + aim - 1) / std::max<int64_t>(1, aim);
    chunk = std::max<int64_t>(min_chunk, (chunk + kTile - 1) / kTile * kTile);
    // Lengths other than the predicted equal split (the kernel re-plans after
    // a miss): with many sequences against the blocks, one wave bounded that
    // way makes chunks up to blocks / (blocks - batch) times the mean block's
    // work (1.9x at batch 64 on 132 SMs), and a ragged batch's long sequences
    // run that long on few SMs. Two waves bound it by 2 blocks / (2 blocks -
    // batch) (1.3x). Measured (same call, 2026-11-30, random lengths): 64x8192
    // 284 us against 348 with one wave, 48x8192 217 against 240, 64x2048 86
    // against 97, 100x4000 224 against 231; equal lengths unchanged.
    const int64_t miss_waves = t.miss_waves > 0 ? t.miss_waves : (4 * batch > blocks ? 2 : 1);
    if (miss_waves > 1) {
      const int64_t aim_any = std::max<int64_t>(1, miss_waves * blocks - batch);
      chunk_any = std::max<int64_t>(min_chunk, ((total + aim_any - 1) / aim_any + kTile - 1) / kTile * kTile);
    }
  }
  int64_t cs = 1;
  if (mode == kModeCluster) {
    cs = t.cluster;
    if (cs <= 0 && one_short) {
      // One short sequence: about tpb tokens per block (each warp: its KV head
      // over them); up to kClusterSoloTokens one block takes it (no merge).
      const int64_t tpb = t.min_chunk > 0 ? t.min_chunk : 32;
      cs = total <= kClusterSoloTokens ? 1 : (total + tpb - 1) / tpb;
    } else if (cs <= 0) {
      cs = (avg + chunk - 1) / chunk;  // the chunks of a sequence of average length
    }
    cs = std::max<int64_t>(1, std::min<int64_t>(cs, info->max_cluster[stages]));
    if (one_short) chunk = (std::max<int64_t>(1, total) + cs - 1) / cs;  // one work item: the whole sequence
  } else if (t.mode == kModeAuto && clusters && t.cluster != 1 && t.chunk_tokens <= 0 && t.stages == 0 &&
             t.per_sm <= 0 && t.waves <= 0) {
    // Automatic split: the chunks of an average sequence (8 at most: portable
    // clusters) form one cluster and merge on chip, when that many clusters
    // can be resident at once at 4 stages, else 3, else 2 (two blocks fit on
    // an SM); otherwise plain split. Equal lengths then need no global merge;
    // a longer sequence spans several clusters, merged globally. Measured
    // (H200, bench/results/gqa-decode-h200-2026-11-30.md, same call): 16x4096
    // 42.1 us (clusters of 8, 2 stages; 8 at 3 stages do not all fit: 60.8)
    // against 44.8 split; 64x8192 252.9 (clusters of 2, 4 stages) and 254.0
    // (3 stages) against 260.8 split; random lengths 47.0 / 341 against
    // 50.7 / 404 split.
    const int64_t c = std::min<int64_t>(8, (avg + chunk - 1) / chunk);
    const int64_t need = batch * ((avg + c * chunk - 1) / (c * chunk));
    // One cluster per sequence where that keeps most SMs busy: when an average
    // sequence would span several clusters (a global merge per sequence, and
    // more clusters than fit at one block per SM, so some SMs run two), take
    // clusters of SMs / batch blocks (8 at most) whose work item is a whole
    // sequence of up to avg + 1 tokens, if they occupy at least 70% of the SMs
    // and batch of them are resident at once at one block per SM (3 or 4
    // stages: so none has to share an SM). The launch stays at 2 stages with
    // the previous chunk for a prediction miss (chunk_any, below): ragged
    // lengths keep the plan that suits them, and the 2-stage launch has room
    // for its clusters. Measured (H200, same call, 2026-11-30, equal / random
    // lengths, bench/results/gqa-floor-h200-2026-11-30.md): 12x4096 32.7 /
    // 36.7 us against 36.8 / 37.3; 12x2048 19.2 / 24.2 against 23.3 / 24.8;
    // 13x4096 34.8 against 38.9; 12x8192 59.4 against 64.4; with the same
    // clusters at 4 stages for both, random lengths lost up to 22% (12x4096
    // 45.6 against 37.3: the miss plan's clusters did not fit at once).
    // Unchanged: 16x4096 (one cluster of 8 per sequence already), 8x8192
    // (clusters of 8 would occupy 64 SMs: 46.2 us against 44.4).
    if (need > batch) {
      for (int64_t c1 = std::min<int64_t>(8, info->num_sms / batch); c1 >= 2 && !whole_sequences; --c1) {
        if (10 * c1 * batch < 7 * static_cast<int64_t>(info->num_sms)) break;
        const int64_t miss_clusters = (total + c1 * chunk - 1) / (c1 * chunk) + batch;
        for (int s : {4, 3}) {
          if (info->blocks_per_sm[kModeCluster][s] == 1 && info->active_clusters[s][c1] >= batch &&
              info->active_clusters[2][c1] >= miss_clusters) {
            mode = kModeCluster;
            cs = c1;
            stages = 2;
            chunk_miss = chunk;
            chunk = ((avg + c1) / c1 + kTile - 1) / kTile * kTile;  // c1 * chunk >= avg + 1
            whole_sequences = true;
            break;
          }
        }
      }
    }
    if (c > 1 && !whole_sequences) {
      for (int s : {4, 3, 2}) {
        if (info->active_clusters[s][c] >= need) {
          mode = kModeCluster;
          cs = c;
          stages = s;
          break;
        }
      }
    }
  }
  // kv_indptr predicted (checked in the kernel) up to kPredMaxBatch sequences.
  const bool predict = t.predict != 2 && batch <= kPredMaxBatch && total <= (int64_t{1} << 31) - 1;
  // The re-plan's launch is larger (surplus blocks when the prediction holds).
  // Only where one block fits an SM: with two, forced split on 64x8192 took
  // 282 us with it against 258 without (the surplus blocks, resident at once,
  // likely pushed real ones onto shared SMs; same call, 2026-11-30).
  if (!predict || chunk_any <= 0 || info->blocks_per_sm[mode][stages] > 1) chunk_any = chunk;
  if (whole_sequences && predict) chunk_any = chunk_miss;  // the 2-stage launch has room for both plans
  chunk = std::min<int64_t>(chunk * cs, int64_t{1} << 30);  // tokens per work item
  chunk_any = std::min<int64_t>(chunk_any * cs, int64_t{1} << 30);
  // sum_b max(1, ceil(len_b / chunk)) <= total / chunk + batch; one sequence:
  // max(1, ceil(total / chunk)) (no surplus blocks on the latency-bound path).
  // The launch covers both plans (surplus blocks exit at once).
  const int64_t max_work = batch == 1 ? std::max<int64_t>(1, (total + chunk - 1) / chunk)
                                      : (total + std::min(chunk, chunk_any) - 1) / std::min(chunk, chunk_any) + batch;
  if (max_work * cs > (int64_t{1} << 31) - 1) return KI_ERR_UNSUPPORTED;
  plan->mode = mode;
  plan->cluster = static_cast<int>(cs);
  plan->predict = predict;
  plan->chunk = static_cast<int>(chunk);
  plan->chunk_any = static_cast<int>(chunk_any);
  plan->max_work = static_cast<int>(max_work);
  plan->stages = stages;
  plan->blocks_per_sm = std::max(1, info->blocks_per_sm[mode][stages]);
  plan->workspace_bytes = OldLayout(kModeSplit, batch, max_work).total;
  return KI_OK;
}
}}
using namespace ki::gqa;
int main(int argc, char** argv) {
  const long iters = argc > 1 ? atol(argv[1]) : 2000;
  std::mt19937_64 rng(12345);
  auto R = [&](int lo, int hi) { return (int)(lo + rng() % (uint64_t)(hi - lo + 1)); };
  std::vector<std::pair<int64_t,int64_t>> shapes;
  for (int64_t b : {1, 2, 3, 7, 8, 12, 13, 16, 17, 32, 48, 64, 65, 100, 127, 128, 129, 200, 1000, 65535, 65536, 70000})
    for (int64_t tok : {0, 1, 2, 7, 14, 16, 17, 31, 32, 33, 63, 64, 65, 100, 362, 546, 1000, 2047, 2048, 2049, 4096, 8192, 16384, 100000})
      shapes.push_back({b, b * tok});
  for (int64_t b : {1, 16, 64}) for (int64_t t : {7, 9, 11, 14, 2, 141, 252, 362, 436, 40, 546, 50, 64, 72, 87, 102, 1020, 2108, 15463, 16551, 17639, 18727, 19815, 20903, 21991, 23079, 3196, 4284, 5372, 6460, 7548, 8636, 28815, 30991, 33167, 35343, 37519, 39695, 41871, 44047, 46287, 48463, 50639, 52815, 54991, 57167, 59343, 61519}) shapes.push_back({b, t});
  shapes.push_back({1, int64_t{1} << 31}); shapes.push_back({64, int64_t{3} << 31}); shapes.push_back({1, (int64_t{1} << 31) - 1});
  long compared = 0, diffs = 0, unsupported = 0; int modes[4] = {};
  for (long it = 0; it < iters; ++it) {
    old_impl::DeviceInfo oi; DeviceLimits nl;
    const int sms[] = {1, 2, 8, 78, 108, 114, 132, 148, 170};
    oi.num_sms = it == 0 ? 132 : sms[R(0, 8)];
    oi.cc_major = it == 0 ? 9 : R(7, 10);
    for (int m = 0; m < 4; ++m) for (int s = 0; s < 5; ++s) oi.blocks_per_sm[m][s] = R(0, 2) == 0 ? 1 : R(0, 4);
    for (int s = 0; s < 5; ++s) { oi.max_cluster[s] = R(0, 3) == 0 ? 0 : R(1, 16);
      for (int c = 0; c <= kMaxCluster; ++c) oi.active_clusters[s][c] = R(0, 1) ? R(0, 200) : R(0, 20); }
    nl.num_sms = oi.num_sms; nl.cc_major = oi.cc_major;
    std::memcpy(nl.blocks_per_sm, oi.blocks_per_sm, sizeof nl.blocks_per_sm);
    std::memcpy(nl.max_cluster, oi.max_cluster, sizeof nl.max_cluster);
    std::memcpy(nl.active_clusters, oi.active_clusters, sizeof nl.active_clusters);
    FastTuning t;
    if (it % 3 != 0) {  // a third with the default tuning
      auto pick = [&](std::initializer_list<int> v) { return *(v.begin() + R(0, (int)v.size() - 1)); };
      t.chunk_tokens = R(0, 3) ? 0 : pick({-5, 1, 16, 64, 100, 512, 4096, 1 << 30});
      t.waves = R(0, 3) ? 0 : pick({-1, 1, 2, 3});
      t.min_chunk = R(0, 3) ? 0 : pick({-1, 1, 16, 32, 64, 128, 1000});
      t.stages = R(0, 3) ? 0 : pick({-1, 1, 2, 3, 4, 5});
      t.mode = R(0, 2) ? 0 : pick({-1, 0, 1, 2, 3, 4});
      t.cluster = R(0, 3) ? 0 : pick({-1, 1, 2, 3, 8, 16, 17});
      t.evict_first = R(0, 3) ? 0 : pick({0, 1, 2, 3});
      t.per_sm = R(0, 3) ? 0 : pick({-1, 1, 2, 5});
      t.predict = R(0, 3) ? 0 : pick({0, 1, 2});
      t.miss_waves = R(0, 3) ? 0 : pick({-1, 1, 2, 3});
      t.pdl = R(0, 3) ? 0 : pick({0, 1, 2});
      t.lean = R(0, 3) ? 0 : pick({0, 1, 2, 3});
    }
    old_impl::g_info = &oi; old_impl::g_t = t;
    for (auto [b, tok] : shapes) {
      Args a; a.batch = b; a.num_kv_indices = tok;
      FastPlan po, pn; std::memset((void*)&po, 0x5a, sizeof po); std::memset((void*)&pn, 0x5a, sizeof pn);
      const int32_t ro = old_impl::PlanFast(a, &po);
      const int32_t rn = ChooseFastPlan(nl, t, b, tok, &pn);
      ++compared;
      if (ro != KI_OK) { ++unsupported; }
      else if (po.mode >= 0 && po.mode < 4) ++modes[po.mode];
      const bool same = ro == rn && (ro != KI_OK || (po.mode == pn.mode && po.cluster == pn.cluster && po.predict == pn.predict &&
          po.evict_first == pn.evict_first && po.pdl == pn.pdl && po.lean == pn.lean && po.chunk == pn.chunk &&
          po.chunk_any == pn.chunk_any && po.max_work == pn.max_work && po.stages == pn.stages && po.num_sms == pn.num_sms &&
          po.blocks_per_sm == pn.blocks_per_sm && po.workspace_bytes == pn.workspace_bytes));
      if (!same && ++diffs <= 20)
        std::printf("DIFF it %ld %lldx%lld: rc %d/%d mode %d/%d cs %d/%d chunk %d/%d any %d/%d work %d/%d st %d/%d\n", it, (long long)b, (long long)tok,
                    ro, rn, po.mode, pn.mode, po.cluster, pn.cluster, po.chunk, pn.chunk, po.chunk_any, pn.chunk_any, po.max_work, pn.max_work, po.stages, pn.stages);
    }
  }
  std::printf("compared %ld plans (%ld limits x tunings, %zu shapes): %ld differ; old plans: %ld unsupported, per-head %d, split %d, cluster %d\n",
              compared, iters, shapes.size(), diffs, unsupported, modes[1], modes[2], modes[3]);
  return diffs ? 1 : 0;
}
