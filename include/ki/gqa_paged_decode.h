// The definition gqa_paged_decode_h32_kv4_d128_ps1 as C++ constants, and the
// one place that checks a ki_call against it (kernels and the CPU reference
// share it, so they refuse the same calls with the same messages).
//
// Batch decode attention over a paged KV cache: 32 query heads, 4 KV heads
// (8 query heads per KV head), head_dim 128, page_size 1, bf16 data, int32
// kv_indptr [batch+1] / kv_indices [num_kv_indices], float32 sm_scale.
// Outputs: output bf16 [batch, 32, 128] and lse float32 [batch, 32], the
// base-2 log-sum-exp of the scaled logits; an empty sequence gives output 0
// and lse -inf.
//
// Thread-safety: pure functions.
#pragma once

#include <stdint.h>
#include <stdio.h>

#include "ki/kernel_abi.h"

namespace ki::gqa {

inline constexpr const char* kDefinitionName = "gqa_paged_decode_h32_kv4_d128_ps1";
inline constexpr int kNumQoHeads = 32;
inline constexpr int kNumKvHeads = 4;
inline constexpr int kGroup = kNumQoHeads / kNumKvHeads;
inline constexpr int kHeadDim = 128;
inline constexpr int kPageSize = 1;

// Input and output positions in a ki_call (the definition's order).
enum Input { kQ = 0, kKCache, kVCache, kKvIndptr, kKvIndices, kSmScale, kNumInputs };
enum Output { kOut = 0, kLse, kNumOutputs };

// A call's tensors, unpacked.
struct Args {
  int64_t batch = 0;
  int64_t num_pages = 0;
  int64_t num_kv_indices = 0;
  float sm_scale = 0.f;
  const void* q = nullptr;        // bf16 [batch, 32, 128]
  const void* k_cache = nullptr;  // bf16 [num_pages, 1, 4, 128]
  const void* v_cache = nullptr;
  const int32_t* kv_indptr = nullptr;  // [batch + 1]
  const int32_t* kv_indices = nullptr; // [num_kv_indices]
  void* out = nullptr;            // bf16 [batch, 32, 128]
  float* lse = nullptr;           // f32 [batch, 32]
};

namespace detail {
inline int32_t Fail(const ki_call* call, int32_t code, const char* msg, const char* name) {
  if (call && call->error && call->error_capacity > 0)
    snprintf(call->error, call->error_capacity, "%s: %s", name ? name : "?", msg);
  return code;
}
inline bool ShapeIs(const ki_tensor& t, int ndim, const int64_t* dims) {
  if (t.ndim != ndim) return false;
  for (int i = 0; i < ndim; ++i)
    if (dims[i] >= 0 && t.shape[i] != dims[i]) return false;
  return true;
}
}  // namespace detail

// Checks counts, ABI version, dtypes, shapes and devices and fills *args.
// `device` is where tensor data must live (KI_DEVICE_CPU or KI_DEVICE_CUDA);
// sm_scale is a host scalar in either case.
inline int32_t Unpack(const ki_call* call, int32_t device, Args* args) {
  using detail::Fail;
  if (!call || !args) return KI_ERR_INVALID_ARGUMENT;
  if (call->abi_version != KI_ABI_VERSION) return Fail(call, KI_ERR_ABI_VERSION, "ABI version mismatch", "call");
  if (call->num_inputs != kNumInputs || call->num_outputs != kNumOutputs || !call->inputs || !call->outputs)
    return Fail(call, KI_ERR_INVALID_ARGUMENT, "expected 6 inputs and 2 outputs", "call");
  const ki_tensor* in = call->inputs;
  const ki_tensor* out = call->outputs;
  const int64_t batch = in[kQ].ndim == 3 ? in[kQ].shape[0] : -1;
  const int64_t pages = in[kKCache].ndim == 4 ? in[kKCache].shape[0] : -1;
  const int64_t nidx = in[kKvIndices].ndim == 1 ? in[kKvIndices].shape[0] : -1;
  if (batch < 0 || pages < 0 || nidx < 0) return Fail(call, KI_ERR_INVALID_ARGUMENT, "bad rank", "q/k_cache/kv_indices");
  const int64_t q_shape[3] = {batch, kNumQoHeads, kHeadDim};
  const int64_t kv_shape[4] = {pages, kPageSize, kNumKvHeads, kHeadDim};
  const int64_t indptr_shape[1] = {batch + 1};
  const int64_t lse_shape[2] = {batch, kNumQoHeads};
  struct Check { const ki_tensor* t; int32_t dtype; int ndim; const int64_t* dims; int32_t dev; };
  const Check checks[] = {
      {&in[kQ], KI_DTYPE_BF16, 3, q_shape, device},
      {&in[kKCache], KI_DTYPE_BF16, 4, kv_shape, device},
      {&in[kVCache], KI_DTYPE_BF16, 4, kv_shape, device},
      {&in[kKvIndptr], KI_DTYPE_I32, 1, indptr_shape, device},
      {&in[kKvIndices], KI_DTYPE_I32, 1, nullptr, device},
      {&in[kSmScale], KI_DTYPE_F32, 0, nullptr, KI_DEVICE_CPU},
      {&out[kOut], KI_DTYPE_BF16, 3, q_shape, device},
      {&out[kLse], KI_DTYPE_F32, 2, lse_shape, device},
  };
  for (const Check& c : checks) {
    if (c.t->dtype != c.dtype) return Fail(call, KI_ERR_INVALID_ARGUMENT, "wrong dtype", c.t->name);
    if (c.dims && !detail::ShapeIs(*c.t, c.ndim, c.dims))
      return Fail(call, KI_ERR_INVALID_ARGUMENT, "wrong shape", c.t->name);
    if (!c.dims && c.t->ndim != c.ndim) return Fail(call, KI_ERR_INVALID_ARGUMENT, "wrong rank", c.t->name);
    if (c.t->device != c.dev) return Fail(call, KI_ERR_INVALID_ARGUMENT, "tensor on the wrong device", c.t->name);
    int64_t numel = 1;
    for (int i = 0; i < c.t->ndim; ++i) numel *= c.t->shape[i];
    if (!c.t->data && numel > 0) return Fail(call, KI_ERR_INVALID_ARGUMENT, "null data", c.t->name);
  }
  if (batch > (int64_t{1} << 30) || nidx > (int64_t{1} << 31) - 1 || pages > (int64_t{1} << 31) - 1)
    return Fail(call, KI_ERR_UNSUPPORTED, "sizes beyond int32 indexing", "call");
  args->batch = batch;
  args->num_pages = pages;
  args->num_kv_indices = nidx;
  args->sm_scale = *static_cast<const float*>(in[kSmScale].data);
  args->q = in[kQ].data;
  args->k_cache = in[kKCache].data;
  args->v_cache = in[kVCache].data;
  args->kv_indptr = static_cast<const int32_t*>(in[kKvIndptr].data);
  args->kv_indices = static_cast<const int32_t*>(in[kKvIndices].data);
  args->out = out[kOut].data;
  args->lse = static_cast<float*>(out[kLse].data);
  return KI_OK;
}

}  // namespace ki::gqa
