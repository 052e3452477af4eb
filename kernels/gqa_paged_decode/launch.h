// Host launchers of the GQA paged-decode kernels. Plain C++: no CUDA types,
// so the ABI glue and the bench include it without the CUDA headers. Each
// launcher returns a ki_status code and never exits or throws.
//
// Thread-safety: launchers are reentrant; SetFastTuning is for the bench
// and must not race with launches.
#pragma once

#include <stdint.h>

#include "ki/gqa_paged_decode.h"
#include "ki/kernel_abi.h"

namespace ki::gqa {

// How the fast kernel covers the sequences (FastTuning::mode, FastPlan::mode).
enum FastMode : int {
  kModeAuto = 0,     // tuning only: let the plan choose
  kModeLegacy = 1,   // per-head ("v1"): block per (chunk, KV head), 4 warps split the chunk's tiles
  kModeSplit = 2,    // block per chunk covering all 4 KV heads (warp = KV head), global merge
  kModeCluster = 3,  // cluster of C blocks per sequence, merge through distributed shared memory
};

// Knobs of the plan. Zero means "choose automatically".
struct FastTuning {
  int chunk_tokens = 0;  // tokens per block (upper bound; chunks of a sequence are balanced)
  int waves = 0;         // blocks to aim for, in units of resident blocks on the whole GPU
  int min_chunk = 0;     // lower bound of the automatic chunk (cluster mode: tokens per block aimed for)
  int stages = 0;        // cp.async pipeline depth per warp: 2, 3 or 4
  int mode = 0;          // FastMode
  int cluster = 0;       // cluster mode: blocks per sequence (1..16, clamped to what the device fits)
  int evict_first = 0;   // K/V copies with an L2 evict-first policy: 0 auto (split and cluster, by size), 1 on, 2 off
  int per_sm = 0;        // split: blocks per SM aimed for (at most what fits; 0: one)
  int predict = 0;       // split, cluster: predict kv_indptr as the equal split (0 auto, 1 on, 2 off)
  int miss_waves = 0;    // split, cluster: waves aimed for when the prediction misses (0 auto)
  int pdl = 0;           // programmatic dependent launch: 0 auto (on from sm_90), 1 on, 2 off
  int lean = 0;          // batch 1 in one work item: 0 auto (sums by mma; one tile up to 16 tokens),
                         // 1 neither, 2 sums by mma only
};
void SetFastTuning(const FastTuning& tuning);
FastTuning GetFastTuning();

// What one launch of the fast kernel will do; a pure function of the shapes,
// the device and the tuning.
struct FastPlan {
  int mode = 0;           // FastMode (never kModeAuto)
  int cluster = 0;        // cluster mode: blocks per sequence
  bool predict = false;   // the kernel predicts kv_indptr as the equal split of the tokens (checked; redone if wrong)
  bool evict_first = true;
  bool pdl = false;       // launched with programmatic stream serialization (griddepcontrol in the kernel)
  int lean = 0;           // one sequence in one work item: the instance's kLean bits (fast.cu)
  int chunk = 0;          // max tokens per work item (the predicted equal split's, when predicting)
  int chunk_any = 0;      // max tokens per work item for lengths read from kv_indptr (a miss; 0: chunk)
  int max_work = 0;       // work items: an upper bound of sum(max(1, ceil(len_b / chunk))); cluster: C * batch
  int stages = 0;
  int num_sms = 0;
  int blocks_per_sm = 0;
  uint64_t workspace_bytes = 0;
};
int32_t PlanFast(const Args& args, FastPlan* plan);
int32_t LaunchFast(const Args& args, const FastPlan& plan, void* workspace, uint64_t workspace_bytes,
                   void* stream);

// Simple fp32 reference: one block per (sequence, query head), two passes.
int32_t LaunchReference(const Args& args, void* stream);

// The ki_kernel tables of ki's built-in CUDA kernels (index 0: fast,
// 1: reference); NULL past the end.
const ki_kernel* BuiltinCudaKernel(int32_t index);

}  // namespace ki::gqa
