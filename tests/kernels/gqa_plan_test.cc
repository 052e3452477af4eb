// The fast GQA decode kernel's launch planner (kernels/gqa_paged_decode/plan.h),
// host only: no GPU, no CUDA. The plans of the definition's workload shapes
// on an H200 are pinned to what the planner chose before it moved out of
// fast.cu, and the planner's contract with the kernel (the launch covers any
// lengths, clusters fit, the workspace holds the layout) is checked on them.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "gqa_paged_decode/plan.h"
#include "testutil/testutil.h"

namespace ki::gqa {
namespace {

// What fast.cu read of an NVIDIA H200 (132 SMs, cc 9.0, driver 580.159.04,
// CUDA 13.0) on 2026-12-03 through ReadDeviceLimits at e8bb555, whose
// kernels' SASS is main's at e61e81c (bench/results/device-check-2026-12-03-b.md). A change of the kernels'
// registers or shared memory changes these on the device; the recorded
// plans are then what the planner makes of these limits, no longer the
// device's plans.
DeviceLimits H200() {
  DeviceLimits d;
  d.num_sms = 132;
  d.cc_major = 9;
  const int blocks_per_sm[4][3] = {{0, 0, 0}, {3, 2, 1}, {3, 2, 1}, {2, 1, 1}};  // stages 2, 3, 4
  const int active[3][kMaxCluster + 1] = {
      {0, 264, 132, 79, 62, 47, 39, 32, 30, 23, 21, 16, 16, 14, 14, 14, 14},
      {0, 132, 66, 39, 30, 22, 17, 15, 15, 9, 7, 7, 7, 7, 7, 7, 7},
      {0, 132, 66, 39, 30, 22, 17, 15, 15, 9, 7, 7, 7, 7, 7, 7, 7}};
  for (int s = 2; s <= 4; ++s) {
    for (int m = 1; m <= 3; ++m) d.blocks_per_sm[m][s] = blocks_per_sm[m][s - 2];
    d.max_cluster[s] = 16;
    for (int c = 0; c <= kMaxCluster; ++c) d.active_clusters[s][c] = active[s - 2][c];
  }
  return d;
}

// One plan PlanFast made on that H200 before the split (main at e61e81c,
// fast.cu), one line of tests/data/gqa-plan-h200/plans.txt: the definition's
// 48 workload shapes and synthetic ones, under the automatic tuning and
// some forced ones (the plans after the split were the same lines).
struct Recorded {
  std::string tuning;
  long long batch = 0, tokens = 0;
  int rc = -1, mode = 0, cluster = 0, predict = 0, evict_first = 0, pdl = 0, lean = 0, chunk = 0, chunk_any = 0,
      max_work = 0, stages = 0, num_sms = 0, blocks_per_sm = 0;
  unsigned long long workspace = 0;
};

std::vector<Recorded> ReadRecorded() {
  std::vector<Recorded> rows;
  std::istringstream in(test::ReadFileOrDie(test::DataPath("gqa-plan-h200/plans.txt")));
  std::string line;
  while (std::getline(in, line)) {
    Recorded r;
    char tuning[64] = {};
    const int n = std::sscanf(line.c_str(),
                              "%63s %lldx%lld: rc %d mode %d cluster %d predict %d evict_first %d pdl %d lean %d "
                              "chunk %d chunk_any %d max_work %d stages %d num_sms %d blocks_per_sm %d workspace %llu",
                              tuning, &r.batch, &r.tokens, &r.rc, &r.mode, &r.cluster, &r.predict, &r.evict_first,
                              &r.pdl, &r.lean, &r.chunk, &r.chunk_any, &r.max_work, &r.stages, &r.num_sms,
                              &r.blocks_per_sm, &r.workspace);
    EXPECT_EQ(n, 17) << line;
    r.tuning = tuning;
    rows.push_back(r);
  }
  EXPECT_EQ(rows.size(), 840u);  // 12 tunings x 70 shapes
  return rows;
}

// The tunings the lines name (FastTuning's fields, as ki-kernel-bench --tune
// spells them).
FastTuning Tuning(const std::string& name) {
  FastTuning t;
  if (name == "mode=1") t.mode = 1;
  else if (name == "mode=2") t.mode = 2;
  else if (name == "mode=3") t.mode = 3;
  else if (name == "mode=3,cluster=4") t.mode = 3, t.cluster = 4;
  else if (name == "stages=4") t.stages = 4;
  else if (name == "chunk=256") t.chunk_tokens = 256;
  else if (name == "waves=2") t.waves = 2;
  else if (name == "per_sm=2") t.per_sm = 2;
  else if (name == "predict=2") t.predict = 2;
  else if (name == "miss_waves=2") t.miss_waves = 2;
  else if (name == "lean=1,pdl=2,evict_first=2") t.lean = 1, t.pdl = 2, t.evict_first = 2;
  else EXPECT_EQ(name, "auto");
  return t;
}

std::string Name(const Recorded& r) { return r.tuning + " " + std::to_string(r.batch) + "x" + std::to_string(r.tokens); }

TEST(GqaPlan, PlansOnAnH200AreThoseRecordedBeforeTheSplit) {
  const DeviceLimits d = H200();
  int cluster = 0, split = 0, per_head = 0;
  for (const Recorded& r : ReadRecorded()) {
    FastPlan p;
    ASSERT_EQ(r.rc, KI_OK) << Name(r);
    ASSERT_EQ(ChooseFastPlan(d, Tuning(r.tuning), r.batch, r.tokens, &p), KI_OK) << Name(r);
    EXPECT_EQ(p.mode, r.mode) << Name(r);
    EXPECT_EQ(p.cluster, r.cluster) << Name(r);
    EXPECT_EQ(p.predict ? 1 : 0, r.predict) << Name(r);
    EXPECT_EQ(p.evict_first ? 1 : 0, r.evict_first) << Name(r);
    EXPECT_EQ(p.pdl ? 1 : 0, r.pdl) << Name(r);
    EXPECT_EQ(p.lean, r.lean) << Name(r);
    EXPECT_EQ(p.chunk, r.chunk) << Name(r);
    EXPECT_EQ(p.chunk_any, r.chunk_any) << Name(r);
    EXPECT_EQ(p.max_work, r.max_work) << Name(r);
    EXPECT_EQ(p.stages, r.stages) << Name(r);
    EXPECT_EQ(p.num_sms, r.num_sms) << Name(r);
    EXPECT_EQ(p.blocks_per_sm, r.blocks_per_sm) << Name(r);
    EXPECT_EQ(p.workspace_bytes, r.workspace) << Name(r);
    if (r.tuning == "auto") {
      cluster += p.mode == kModeCluster;
      split += p.mode == kModeSplit;
      per_head += p.mode == kModeLegacy;
    }
  }
  // The automatic plans of the table use all three layouts.
  EXPECT_GT(cluster, 0);
  EXPECT_GT(split + cluster, 16);
  EXPECT_GT(per_head, 0);
}

// Work items that lengths `lens` need with chunks of `chunk` tokens (as the
// kernel's FindWork counts them: an empty sequence is one item).
int64_t WorkItems(const std::vector<int64_t>& lens, int64_t chunk) {
  int64_t n = 0;
  for (int64_t len : lens) n += len <= 0 ? 1 : (len + chunk - 1) / chunk;
  return n;
}

// The kernel reads no lengths on the host: the grid (max_work work items)
// must hold every split of the tokens over the batch, both under the
// prediction's chunk and under chunk_any (a miss), or sequences go unread.
TEST(GqaPlan, LaunchCoversAnyLengthsOfTheBatch) {
  const DeviceLimits d = H200();
  std::mt19937_64 rng(20261203);
  for (const Recorded& r : ReadRecorded()) {
    FastPlan p;
    ASSERT_EQ(ChooseFastPlan(d, Tuning(r.tuning), r.batch, r.tokens, &p), KI_OK) << Name(r);
    for (int trial = 0; trial < 20; ++trial) {
      // Random cut points: lengths from 0 to all the tokens in one sequence.
      std::vector<int64_t> cuts = {0, r.tokens};
      for (int64_t i = 1; i < r.batch; ++i)
        cuts.push_back(trial == 0 ? r.tokens * i / r.batch : static_cast<int64_t>(rng() % (r.tokens + 1)));
      std::sort(cuts.begin(), cuts.end());
      std::vector<int64_t> lens;
      for (size_t i = 1; i < cuts.size(); ++i) lens.push_back(cuts[i] - cuts[i - 1]);
      if (r.batch == 1) {
        // One sequence: at most the total, under either chunk.
        EXPECT_LE(WorkItems(lens, p.chunk), p.max_work) << Name(r);
        EXPECT_LE(WorkItems(lens, p.chunk_any), p.max_work) << Name(r);
        break;
      }
      EXPECT_LE(WorkItems(lens, p.chunk_any), p.max_work) << Name(r) << " trial " << trial;
      if (trial == 0) {
        EXPECT_LE(WorkItems(lens, p.chunk), p.max_work) << Name(r) << " (the equal split)";
      }
    }
  }
}

TEST(GqaPlan, ClustersFitTheDeviceAndTheWorkspaceHoldsTheLayout) {
  const DeviceLimits d = H200();
  for (const Recorded& r : ReadRecorded()) {
    FastPlan p;
    ASSERT_EQ(ChooseFastPlan(d, Tuning(r.tuning), r.batch, r.tokens, &p), KI_OK) << Name(r);
    if (p.mode == kModeCluster) {
      EXPECT_GE(p.cluster, 1) << Name(r);
      EXPECT_LE(p.cluster, d.max_cluster[p.stages]) << Name(r);
      EXPECT_GT(d.active_clusters[p.stages][p.cluster], 0) << Name(r);
    }
    EXPECT_GE(p.stages, 2) << Name(r);
    EXPECT_LE(p.stages, 4) << Name(r);
    EXPECT_GE(p.chunk, 1) << Name(r);
    const WorkspaceLayout l = Layout(p.mode, r.batch, p.max_work);
    EXPECT_EQ(p.workspace_bytes, l.total) << Name(r);
    // Counters first, each part 256-aligned, the partials of 32 heads of
    // 128 floats (and their lse) per work item.
    const uint64_t counters = static_cast<uint64_t>(r.batch) * (p.mode == kModeLegacy ? kNumKvHeads : 1) * 4;
    EXPECT_EQ(l.counters, 0u) << Name(r);
    EXPECT_EQ(l.part_lse % 256, 0u) << Name(r);
    EXPECT_EQ(l.part_o % 256, 0u) << Name(r);
    EXPECT_GE(l.part_lse, counters) << Name(r);
    EXPECT_GE(l.part_o - l.part_lse, static_cast<uint64_t>(p.max_work) * kNumQoHeads * 4) << Name(r);
    EXPECT_EQ(l.total - l.part_o, static_cast<uint64_t>(p.max_work) * kNumQoHeads * kHeadDim * 4) << Name(r);
  }
}

// Before sm_90 there are no thread-block clusters: the automatic plan of one
// short sequence is per-head, and asking for cluster mode gets split.
TEST(GqaPlan, NoClustersBeforeSm90) {
  DeviceLimits d = H200();
  d.cc_major = 8;
  FastPlan p;
  ASSERT_EQ(ChooseFastPlan(d, FastTuning{}, 1, 362, &p), KI_OK);
  EXPECT_EQ(p.mode, kModeLegacy);
  EXPECT_FALSE(p.pdl);  // programmatic dependent launch needs sm_90 too
  ASSERT_EQ(ChooseFastPlan(d, FastTuning{}, 16, 16 * 4096, &p), KI_OK);
  EXPECT_EQ(p.mode, kModeSplit);  // on the H200: clusters of 8
  FastTuning t;
  t.mode = kModeCluster;
  ASSERT_EQ(ChooseFastPlan(d, t, 4, 4000, &p), KI_OK);
  EXPECT_EQ(p.mode, kModeSplit);
}

// A launch of more work items than a grid holds is refused, not truncated.
TEST(GqaPlan, MoreWorkItemsThanAGridHoldsIsUnsupported) {
  const DeviceLimits d = H200();
  FastTuning t;
  t.chunk_tokens = 1;
  FastPlan p;
  EXPECT_EQ(ChooseFastPlan(d, t, 1, int64_t{1} << 31, &p), KI_ERR_UNSUPPORTED);  // per-head: 2^31 + 1 items
  t.mode = kModeSplit;
  EXPECT_EQ(ChooseFastPlan(d, t, 2, int64_t{1} << 31, &p), KI_ERR_UNSUPPORTED);
  EXPECT_EQ(ChooseFastPlan(d, t, 2, (int64_t{1} << 31) - 3, &p), KI_OK);
  EXPECT_EQ(p.max_work, (int64_t{1} << 31) - 1);
}

}  // namespace
}  // namespace ki::gqa
