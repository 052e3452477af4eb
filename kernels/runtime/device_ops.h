// Small device helpers of the CUDA backend: the counter-based generator and
// the L2 flush. Internal to kernels/ (CUDA types allowed here).
#pragma once

#include <cuda_runtime.h>
#include <stdint.h>

namespace ki::gpu::internal {

cudaError_t LaunchFillRandom(void* dst, int32_t dtype, uint64_t count, uint64_t key, cudaStream_t stream);
// Writes zeros over `bytes` (a multiple of 16) of `buf`, or (read) reads
// them; with bytes == 0 it is an empty launch that still marks an iteration
// boundary for CUPTI.
enum class FlushAccess { kWriteZeros, kRead };
cudaError_t LaunchL2Flush(void* buf, uint64_t bytes, FlushAccess access, cudaStream_t stream);
// The flush kernel's name as CUPTI reports it (both accesses).
inline constexpr const char* kFlushKernelName = "ki_l2_flush";

}  // namespace ki::gpu::internal
