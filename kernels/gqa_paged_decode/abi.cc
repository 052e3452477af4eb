// The ki_kernel tables of the built-in GQA paged-decode kernels: argument
// checks (shared with the CPU reference through ki/gqa_paged_decode.h),
// workspace sizing and launch.
#include "gqa_paged_decode/launch.h"

namespace ki::gqa {
namespace {

int32_t FastWorkspace(const ki_call* call, uint64_t* bytes) {
  Args args;
  int32_t rc = Unpack(call, KI_DEVICE_CUDA, &args);
  if (rc != KI_OK) return rc;
  FastPlan plan;
  rc = PlanFast(args, &plan);
  if (rc != KI_OK) return detail::Fail(call, rc, "cannot plan the launch on this device", "fast");
  *bytes = plan.workspace_bytes;
  return KI_OK;
}

int32_t FastRun(const ki_call* call) {
  Args args;
  int32_t rc = Unpack(call, KI_DEVICE_CUDA, &args);
  if (rc != KI_OK) return rc;
  FastPlan plan;
  rc = PlanFast(args, &plan);
  if (rc != KI_OK) return detail::Fail(call, rc, "cannot plan the launch on this device", "fast");
  rc = LaunchFast(args, plan, call->workspace, call->workspace_bytes, call->stream);
  if (rc == KI_ERR_WORKSPACE_TOO_SMALL) return detail::Fail(call, rc, "workspace too small", "fast");
  if (rc != KI_OK) return detail::Fail(call, rc, "launch failed", "fast");
  return KI_OK;
}

int32_t ReferenceRun(const ki_call* call) {
  Args args;
  int32_t rc = Unpack(call, KI_DEVICE_CUDA, &args);
  if (rc != KI_OK) return rc;
  rc = LaunchReference(args, call->stream);
  if (rc != KI_OK) return detail::Fail(call, rc, "launch failed", "reference");
  return KI_OK;
}

const ki_kernel kFast = {
    {KI_ABI_VERSION, KI_DEVICE_CUDA, "ki.gqa_paged_decode.fast", kDefinitionName,
     "split-KV tensor-core decode, 8 heads share each K/V tile, cp.async pipeline, in-launch merge; "
     "blocks per (chunk, KV head), per chunk over all KV heads, or per chunk in thread-block clusters "
     "merging in distributed shared memory first (one barrier, partials pushed to their owners); "
     "workspace zeroed once, its counters reset by the kernel"},
    FastWorkspace,
    FastRun,
};

const ki_kernel kReference = {
    {KI_ABI_VERSION, KI_DEVICE_CUDA, "ki.gqa_paged_decode.cuda_reference", kDefinitionName,
     "fp32 reference: block per (sequence, query head), two passes, no tensor cores"},
    nullptr,
    ReferenceRun,
};

}  // namespace

const ki_kernel* BuiltinCudaKernel(int32_t index) {
  switch (index) {
    case 0: return &kFast;
    case 1: return &kReference;
    default: return nullptr;
  }
}

}  // namespace ki::gqa
