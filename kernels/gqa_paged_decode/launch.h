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

// Knobs of the split-KV plan. Zero means "choose automatically".
struct FastTuning {
  int chunk_tokens = 0;  // tokens per block (upper bound; chunks of a sequence are balanced)
  int waves = 0;         // blocks to aim for, in units of resident blocks on the whole GPU
  int min_chunk = 0;     // lower bound of the automatic chunk
  int stages = 0;        // cp.async pipeline depth per warp: 2, 3 or 4
};
void SetFastTuning(const FastTuning& tuning);
FastTuning GetFastTuning();

// What one launch of the fast kernel will do; a pure function of the shapes,
// the device and the tuning.
struct FastPlan {
  int chunk = 0;          // max tokens per block
  int max_work = 0;       // blocks along x: an upper bound of sum(max(1, ceil(len_b / chunk)))
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
