// The launch planner of the fast GQA paged-decode kernel (fast.cu): which
// layout (per-head, split, cluster), how many tokens per work item, how many
// blocks, which pipeline depth, and the workspace that needs. Plain C++, no
// CUDA: the plan is a pure function of the shapes the host knows (batch and
// the total token count), the tuning and what the device fits, so it is
// tested on machines without a GPU (tests/kernels) against plans recorded on
// an H200.
//
// Thread-safety: ChooseFastPlan and Layout are pure; SetFastTuning and
// GetFastTuning (launch.h) lock.
#pragma once

#include <stdint.h>

#include "gqa_paged_decode/launch.h"

namespace ki::gqa {

// Shared with the kernels: the plan's arithmetic and the kernels' indexing
// must agree on these.
constexpr int kTile = 16;        // tokens per warp tile
constexpr int kMaxCluster = 16;  // largest thread-block cluster (non-portable sizes past 8)
// kv_indptr is predicted as the equal split up to this many sequences: every
// warp checks all batch + 1 entries itself, 4 per lane (fast.cu, IndptrCheck).
constexpr int kPredMaxBatch = 127;
// The kLean bits of the one-work-item instance (FastPlan::lean; fast.cu says
// what each saves): sums by mma, one tile per warp.
constexpr int kLeanSumMma = 1, kLeanOneTile = 2;

// What the planner needs to know of the device, read once per device by
// fast.cu (cudaOccupancy* on the kernel instances themselves, so a change of
// the kernels' registers or shared memory reaches the plan).
struct DeviceLimits {
  int num_sms = 0;
  int cc_major = 0;
  int blocks_per_sm[4][5] = {};  // resident blocks per SM, by FastMode (1..3) and stages (2..4)
  int max_cluster[5] = {};       // cluster mode: largest cluster that fits, by stages (0: none)
  int active_clusters[5][kMaxCluster + 1] = {};  // cluster mode: co-resident clusters, by stages and size
};

// The limits of the current CUDA device (fast.cu; read once per device, then
// cached). KI_ERR_LAUNCH when they cannot be read.
int32_t ReadDeviceLimits(DeviceLimits* limits);

// The plan for `batch` sequences of `num_kv_indices` tokens in all. KI_OK,
// or KI_ERR_UNSUPPORTED when the launch would need more work items than a
// grid holds.
int32_t ChooseFastPlan(const DeviceLimits& device, const FastTuning& tuning, int64_t batch,
                       int64_t num_kv_indices, FastPlan* plan);

// Where the workspace's parts start (bytes; each 256-aligned) and its size.
// Per-head: partials of 8 heads per (work item, KV head) and a counter per
// (sequence, KV head); split and cluster: partials of 32 heads per work item
// and a counter per sequence.
struct WorkspaceLayout {
  uint64_t counters = 0, part_lse = 0, part_o = 0, total = 0;
};
WorkspaceLayout Layout(int mode, int64_t batch, int64_t max_work);

}  // namespace ki::gqa
