// The fast kernel's launch planner (plan.h). Every threshold here was
// measured on an H200 (bench/results/gqa-decode-h200-*.md and the files
// named beside each choice); the comments say what each choice bought.
#include "gqa_paged_decode/plan.h"

#include <algorithm>
#include <mutex>

namespace ki::gqa {
namespace {

constexpr int kMinChunkSplit = 32;                // smallest automatic split chunk (2 tiles per warp)
constexpr int64_t kEvictFirstMaxTokens = 131072;  // automatic L2 evict-first hint up to this many tokens
constexpr int64_t kClusterMaxTokens = 2048;       // auto: cluster mode for one sequence up to this long
constexpr int64_t kClusterSoloTokens = 64;        // auto cluster size 1 (no merge) up to this long
constexpr int64_t kSplitMinAvgTokens = 2048;      // auto: split from this mean sequence length
constexpr int64_t kMaxChunk = int64_t{1} << 30;   // tokens per work item at most (fits Params::chunk)
constexpr int64_t kMaxInt = (int64_t{1} << 31) - 1;  // int fields of Params; a grid's x dimension

std::mutex g_tuning_mu;
FastTuning g_tuning;

uint64_t AlignUp(uint64_t x, uint64_t a) { return (x + a - 1) / a * a; }
int64_t RoundUpToTile(int64_t tokens) { return (tokens + kTile - 1) / kTile * kTile; }
int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }
int TuningStages(const FastTuning& t, int automatic) { return (t.stages >= 2 && t.stages <= 4) ? t.stages : automatic; }

// Thread-block clusters need sm_90. The batch bound is the first cluster
// mode's, whose grid was (C, batch) and a grid's y holds 65535 (cff1c0f);
// today's cluster grid is one-dimensional, but the bound still decides
// plans above 65535 sequences, so it stays until that is measured.
bool ClustersPossible(const DeviceLimits& d, int64_t batch) { return d.cc_major >= 9 && batch <= 65535; }

// The layout, from what the host knows (batch, total tokens), by
// measurements on an H200 (bench/results/gqa-decode-h200-2026-11-29-v2.md,
// -v3.md, -11-30.md):
// - one short sequence: a cluster of blocks shares it and merges on chip;
// - long sequences on average: split, its chunks grouped in clusters where
//   they fit (SplitPlanner::GroupIntoClusters);
// - otherwise (many short or ragged sequences, one long one): per-head,
//   whose per-KV-head merge stays cheap with many chunks per sequence.
int ChooseMode(const DeviceLimits& d, const FastTuning& t, int64_t batch, int64_t total) {
  const bool clusters = ClustersPossible(d, batch);
  int mode = t.mode;
  if (mode < kModeAuto || mode > kModeCluster) mode = kModeAuto;
  if (mode == kModeAuto) {
    const int64_t avg = total / std::max<int64_t>(1, batch);
    if (batch == 1 && total <= kClusterMaxTokens && clusters && d.max_cluster[2] > 0)
      mode = kModeCluster;
    else if (batch > 1 && avg >= kSplitMinAvgTokens)
      mode = kModeSplit;
    else
      mode = kModeLegacy;
  }
  if (mode == kModeCluster && !clusters) mode = kModeSplit;
  return mode;
}

// The launch options every layout takes: the L2 policy of the K/V copies,
// programmatic dependent launch, and the one-work-item instance.
void ChooseOptions(const DeviceLimits& d, const FastTuning& t, int mode, int64_t batch, int64_t total,
                   FastPlan* plan) {
  // Evict-first K/V copies (split and cluster): measured (H200, cold L2 after
  // the bench's zeroing flush) faster up to 16x4096 tokens and slower at
  // 64x8192; on up to 128 Ki tokens. Per-head mode takes it only when asked.
  // A fractional policy (evict-first on 1/4, 1/2 or 3/4 of the accesses, the
  // rest unchanged) was no middle way: 16x4096 44.3-45.8 us like no hint
  // (26.7-27.4 MB written back, against 4.8 with the full hint), 64x8192
  // 253.4-255.2 against 252.8 with none (gqa-decode-h200-2026-11-30-b.md).
  plan->evict_first =
      t.evict_first == 1 || (t.evict_first == 0 && mode != kModeLegacy && total <= kEvictFirstMaxTokens);
  // Programmatic dependent launch: on by default for one sequence only. In a
  // CUDA graph of back-to-back calls it took 0.3 us off every batch-1
  // workload (1x2..1x14: 2.53-2.69 -> 2.27-2.38 us per call; 1x362 5.57 ->
  // 5.11-5.44; 1x4096 9.49-9.79 -> 9.37-9.64) and nothing off the cold-L2
  // CUPTI medians, but made 16x4096 33% slower in the graph (38.2 -> 50.6 us)
  // and 64x8192 1% slower: the next call's blocks then become resident while
  // this one's still run (bench/results/gqa-pdl-h200-2026-12-01.md).
  plan->pdl = t.pdl == 1 || (t.pdl == 0 && d.cc_major >= 9 && batch == 1);
  // The instance for one sequence in one work item (kLean bits): sums by
  // mma, and one tile per warp up to 16 tokens.
  plan->lean = t.lean == 1 ? 0 : kLeanSumMma | (total <= kTile && t.lean != 2 ? kLeanOneTile : 0);
}

// Per-head: one block per (work item, KV head).
int32_t PlanPerHead(const DeviceLimits& d, const FastTuning& t, int64_t batch, int64_t total, FastPlan* plan) {
  // One wave of blocks at 2 stages (3 blocks fit an SM), chunks of at
  // least 128 tokens: fewer, longer blocks, each paying the first tile's
  // round trips once. Measured on the definition's 48 workloads (H200,
  // same call, 2026-11-30, bench/results/gqa-floor-h200-2026-11-30.md,
  // workloads_sweep.sh): batch 16 summed 275.7 us against 316.4 with
  // two waves at 3 stages and 64-token chunks (small batches 25-30%
  // faster: 4284 tokens 10.1-10.7 against 14.3), batch 64 608.0 against
  // 634.3.
  const int stages = TuningStages(t, 2);
  const int per_sm = std::max(1, d.blocks_per_sm[kModeLegacy][stages]);
  int64_t chunk = t.chunk_tokens;
  if (chunk <= 0) {
    const int64_t waves = t.waves > 0 ? t.waves : 1;
    const int64_t min_chunk = t.min_chunk > 0 ? t.min_chunk : 128;
    const int64_t blocks = static_cast<int64_t>(d.num_sms) * per_sm * waves / kNumKvHeads;
    // As in split mode: sum_b ceil(len_b / chunk) <= total / chunk + batch,
    // so aiming at blocks - batch keeps ragged lengths inside the wave
    // (batch 16 of the 48 workloads: 259.1 us against 275.9; 32x1024 27.9
    // against 30.9, random lengths 28.7 against 32.2; same call, 2026-11-30).
    const int64_t aim = blocks > 2 * batch ? blocks - batch : blocks;
    chunk = (total + aim - 1) / std::max<int64_t>(1, aim);
    chunk = std::max<int64_t>(min_chunk, RoundUpToTile(chunk));
  }
  chunk = std::min<int64_t>(chunk, kMaxChunk);
  const int64_t max_work = CeilDiv(total, chunk) + batch;
  if (max_work > kMaxInt) return KI_ERR_UNSUPPORTED;
  plan->mode = kModeLegacy;
  plan->chunk = static_cast<int>(chunk);
  plan->chunk_any = static_cast<int>(chunk);
  plan->max_work = static_cast<int>(max_work);
  plan->stages = stages;
  plan->blocks_per_sm = per_sm;
  plan->workspace_bytes = Layout(kModeLegacy, batch, max_work).total;
  return KI_OK;
}

// Split and cluster: blocks cover all 4 KV heads of their tokens. The plan
// is made in steps over this state, in the order Plan calls them; each step
// may revise what an earlier one chose (the automatic split may become
// cluster mode, at another depth).
class SplitPlanner {
 public:
  SplitPlanner(const DeviceLimits& d, const FastTuning& t, int64_t batch, int64_t total, int mode)
      : d_(d),
        t_(t),
        batch_(batch),
        total_(total),
        avg_(total / std::max<int64_t>(1, batch)),
        one_short_(mode == kModeCluster && batch == 1 && t.chunk_tokens <= 0),
        mode_(mode),
        // Depth: 3 stages for split (v3 sweeps: 16x4096 and 64x8192 0.6-1.2%
        // faster than 4 in the same calls), 2 for one short sequence (each warp
        // has two 16-token tiles: 1x362 5.96-6.00 us against 6.03-6.09 at 3);
        // the automatic cluster grouping may pick another.
        stages_(TuningStages(t, one_short_ ? 2 : 3)),
        chunk_(t.chunk_tokens) {}

  int32_t Plan(FastPlan* plan) {
    if (chunk_ <= 0 && !one_short_) ChooseChunks();
    if (mode_ == kModeCluster)
      SizeCluster();
    else if (AutomaticSplit())
      GroupIntoClusters();
    return Finish(plan);
  }

 private:
  // Tokens per block (a cluster's work item is cs_ times that), from the
  // blocks aimed for; and the chunk for lengths other than the prediction.
  void ChooseChunks() {
    const int64_t waves = t_.waves > 0 ? t_.waves : 1;
    const int64_t min_chunk = t_.min_chunk > 0 ? t_.min_chunk : kMinChunkSplit;
    // One block per SM unless asked (two 3-stage blocks per SM measured slower:
    // their chunks are half as long and each sequence has twice the partials).
    const int64_t aim_per_sm = t_.per_sm > 0 ? std::min(t_.per_sm, d_.blocks_per_sm[kModeSplit][stages_]) : 1;
    const int64_t blocks = static_cast<int64_t>(d_.num_sms) * aim_per_sm * waves;
    // sum_b ceil(len_b / chunk) <= total / chunk + batch: aiming at blocks - batch
    // keeps the launch within `blocks` whatever the lengths (when batch is small
    // against it), so one wave is one wave.
    const int64_t aim = blocks > 2 * batch_ ? blocks - batch_ : blocks;
    chunk_ = (total_ + aim - 1) / std::max<int64_t>(1, aim);
    chunk_ = std::max<int64_t>(min_chunk, RoundUpToTile(chunk_));
    // Lengths other than the predicted equal split (the kernel re-plans after
    // a miss): with many sequences against the blocks, one wave bounded that
    // way makes chunks up to blocks / (blocks - batch) times the mean block's
    // work (1.9x at batch 64 on 132 SMs), and a ragged batch's long sequences
    // run that long on few SMs. Two waves bound it by 2 blocks / (2 blocks -
    // batch) (1.3x). Measured (same call, 2026-11-30, random lengths): 64x8192
    // 284 us against 348 with one wave, 48x8192 217 against 240, 64x2048 86
    // against 97, 100x4000 224 against 231; equal lengths unchanged.
    const int64_t miss_waves = t_.miss_waves > 0 ? t_.miss_waves : (4 * batch_ > blocks ? 2 : 1);
    if (miss_waves > 1) {
      const int64_t aim_any = std::max<int64_t>(1, miss_waves * blocks - batch_);
      chunk_any_ = std::max<int64_t>(min_chunk, RoundUpToTile(CeilDiv(total_, aim_any)));
    }
  }

  // Cluster mode (automatic for one short sequence, or asked for): blocks
  // per cluster.
  void SizeCluster() {
    cs_ = t_.cluster;
    if (cs_ <= 0 && one_short_) {
      // One short sequence: about tpb tokens per block (each warp: its KV head
      // over them); up to kClusterSoloTokens one block takes it (no merge).
      const int64_t tpb = t_.min_chunk > 0 ? t_.min_chunk : 32;
      cs_ = total_ <= kClusterSoloTokens ? 1 : CeilDiv(total_, tpb);
    } else if (cs_ <= 0) {
      cs_ = CeilDiv(avg_, chunk_);  // the chunks of a sequence of average length
    }
    cs_ = std::max<int64_t>(1, std::min<int64_t>(cs_, d_.max_cluster[stages_]));
    if (one_short_) chunk_ = CeilDiv(std::max<int64_t>(1, total_), cs_);  // one work item: the whole sequence
  }

  // Split chosen by the planner with no knob set that fixes its shape: it
  // may then group chunks into clusters.
  bool AutomaticSplit() const {
    return t_.mode == kModeAuto && ClustersPossible(d_, batch_) && t_.cluster != 1 && t_.chunk_tokens <= 0 &&
           t_.stages == 0 && t_.per_sm <= 0 && t_.waves <= 0;
  }

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
  void GroupIntoClusters() {
    const int64_t c = std::min<int64_t>(8, CeilDiv(avg_, chunk_));
    const int64_t need = batch_ * CeilDiv(avg_, c * chunk_);
    if (need > batch_) GroupWholeSequences();
    if (c > 1 && !whole_sequences_) {
      for (int s : {4, 3, 2}) {
        if (d_.active_clusters[s][c] >= need) {
          mode_ = kModeCluster;
          cs_ = c;
          stages_ = s;
          break;
        }
      }
    }
  }

  // One cluster per sequence where that keeps most SMs busy: when an average
  // sequence would span several clusters (a global merge per sequence, and
  // more clusters than fit at one block per SM, so some SMs run two), take
  // clusters of SMs / batch blocks (8 at most) whose work item is a whole
  // sequence of up to avg + 1 tokens, if they occupy at least 70% of the SMs
  // and batch of them are resident at once at one block per SM (3 or 4
  // stages: so none has to share an SM). The launch stays at 2 stages with
  // the previous chunk for a prediction miss (chunk_any, Finish): ragged
  // lengths keep the plan that suits them, and the 2-stage launch has room
  // for its clusters. Measured (H200, same call, 2026-11-30, equal / random
  // lengths, bench/results/gqa-floor-h200-2026-11-30.md): 12x4096 32.7 /
  // 36.7 us against 36.8 / 37.3; 12x2048 19.2 / 24.2 against 23.3 / 24.8;
  // 13x4096 34.8 against 38.9; 12x8192 59.4 against 64.4; with the same
  // clusters at 4 stages for both, random lengths lost up to 22% (12x4096
  // 45.6 against 37.3: the miss plan's clusters did not fit at once).
  // Unchanged: 16x4096 (one cluster of 8 per sequence already), 8x8192
  // (clusters of 8 would occupy 64 SMs: 46.2 us against 44.4).
  void GroupWholeSequences() {
    for (int64_t c1 = std::min<int64_t>(8, d_.num_sms / batch_); c1 >= 2 && !whole_sequences_; --c1) {
      if (10 * c1 * batch_ < 7 * static_cast<int64_t>(d_.num_sms)) break;
      const int64_t miss_clusters = CeilDiv(total_, c1 * chunk_) + batch_;
      for (int s : {4, 3}) {
        if (d_.blocks_per_sm[kModeCluster][s] == 1 && d_.active_clusters[s][c1] >= batch_ &&
            d_.active_clusters[2][c1] >= miss_clusters) {
          mode_ = kModeCluster;
          cs_ = c1;
          stages_ = 2;
          chunk_miss_ = chunk_;
          chunk_ = RoundUpToTile((avg_ + c1) / c1);  // c1 * chunk >= avg + 1
          whole_sequences_ = true;
          break;
        }
      }
    }
  }

  // The prediction, the miss chunk, the work items and the workspace.
  int32_t Finish(FastPlan* plan) {
    // kv_indptr predicted (checked in the kernel) up to kPredMaxBatch sequences.
    const bool predict = t_.predict != 2 && batch_ <= kPredMaxBatch && total_ <= kMaxInt;
    // The re-plan's launch is larger (surplus blocks when the prediction holds).
    // Only where one block fits an SM: with two, forced split on 64x8192 took
    // 282 us with it against 258 without (the surplus blocks, resident at once,
    // likely pushed real ones onto shared SMs; same call, 2026-11-30).
    if (!predict || chunk_any_ <= 0 || d_.blocks_per_sm[mode_][stages_] > 1) chunk_any_ = chunk_;
    if (whole_sequences_ && predict) chunk_any_ = chunk_miss_;  // the 2-stage launch has room for both plans
    const int64_t chunk = std::min<int64_t>(chunk_ * cs_, kMaxChunk);  // tokens per work item
    const int64_t chunk_any = std::min<int64_t>(chunk_any_ * cs_, kMaxChunk);
    // sum_b max(1, ceil(len_b / chunk)) <= total / chunk + batch; one sequence:
    // max(1, ceil(total / chunk)) (no surplus blocks on the latency-bound path).
    // The launch covers both plans (surplus blocks exit at once).
    const int64_t max_work = batch_ == 1 ? std::max<int64_t>(1, CeilDiv(total_, chunk))
                                         : CeilDiv(total_, std::min(chunk, chunk_any)) + batch_;
    if (max_work * cs_ > kMaxInt) return KI_ERR_UNSUPPORTED;
    plan->mode = mode_;
    plan->cluster = static_cast<int>(cs_);
    plan->predict = predict;
    plan->chunk = static_cast<int>(chunk);
    plan->chunk_any = static_cast<int>(chunk_any);
    plan->max_work = static_cast<int>(max_work);
    plan->stages = stages_;
    plan->blocks_per_sm = std::max(1, d_.blocks_per_sm[mode_][stages_]);
    plan->workspace_bytes = Layout(kModeSplit, batch_, max_work).total;
    return KI_OK;
  }

  const DeviceLimits& d_;
  const FastTuning& t_;
  const int64_t batch_, total_, avg_;
  const bool one_short_;  // one sequence in cluster mode, no chunk asked: one work item
  int mode_;
  int stages_;
  int64_t chunk_;           // tokens per block
  int64_t chunk_any_ = 0;   // tokens per block after a prediction miss (0: chunk_)
  int64_t cs_ = 1;          // blocks per cluster
  bool whole_sequences_ = false;  // one cluster per sequence (GroupWholeSequences)
  int64_t chunk_miss_ = 0;        // whole_sequences_: the chunk after a prediction miss
};

}  // namespace

void SetFastTuning(const FastTuning& tuning) {
  std::lock_guard<std::mutex> lock(g_tuning_mu);
  g_tuning = tuning;
}
FastTuning GetFastTuning() {
  std::lock_guard<std::mutex> lock(g_tuning_mu);
  return g_tuning;
}

int32_t ChooseFastPlan(const DeviceLimits& device, const FastTuning& tuning, int64_t batch,
                       int64_t num_kv_indices, FastPlan* plan) {
  *plan = FastPlan{};
  plan->num_sms = device.num_sms;
  const int mode = ChooseMode(device, tuning, batch, num_kv_indices);
  ChooseOptions(device, tuning, mode, batch, num_kv_indices, plan);
  if (mode == kModeLegacy) return PlanPerHead(device, tuning, batch, num_kv_indices, plan);
  return SplitPlanner(device, tuning, batch, num_kv_indices, mode).Plan(plan);
}

WorkspaceLayout Layout(int mode, int64_t batch, int64_t max_work) {
  const int64_t counters_per_seq = mode == kModeLegacy ? kNumKvHeads : 1;
  const int64_t heads_per_work = kNumQoHeads;
  WorkspaceLayout l;
  l.counters = 0;
  l.part_lse = AlignUp(static_cast<uint64_t>(batch) * counters_per_seq * 4, 256);
  l.part_o = l.part_lse + AlignUp(static_cast<uint64_t>(max_work) * heads_per_work * 4, 256);
  l.total = l.part_o + static_cast<uint64_t>(max_work) * heads_per_work * kHeadDim * 4;
  return l;
}

}  // namespace ki::gqa
