#include "runtime/device_ops.h"

#include "ki/counter_rng.h"
#include "ki/kernel_abi.h"

// extern "C" so that CUPTI reports the plain name kFlushKernelName.
// read == 0: zeros written over buf[0, n). read != 0: buf[0, n) read through
// L2 (volatile loads, so none is dropped) and nothing written unless the
// bytes are not the zeros they were set to (never).
extern "C" __global__ void ki_l2_flush(uint4* buf, uint64_t n, int read) {
  const uint64_t stride = static_cast<uint64_t>(gridDim.x) * blockDim.x;
  const uint64_t i0 = blockIdx.x * static_cast<uint64_t>(blockDim.x) + threadIdx.x;
  if (!read) {
    const uint4 zero = make_uint4(0, 0, 0, 0);
    for (uint64_t i = i0; i < n; i += stride) buf[i] = zero;
    return;
  }
  uint32_t acc = 0;
  for (uint64_t i = i0; i < n; i += stride) {
    uint32_t a, b, c, d;
    asm volatile("ld.global.cg.v4.u32 {%0,%1,%2,%3}, [%4];\n" : "=r"(a), "=r"(b), "=r"(c), "=r"(d) : "l"(buf + i));
    acc |= a | b | c | d;
  }
  if (acc != 0) buf[i0] = make_uint4(0, 0, 0, 0);
}

namespace ki::gpu::internal {
namespace {

template <typename T, T (*Gen)(uint64_t)>
__global__ void FillRandomKernel(T* dst, uint64_t count, uint64_t key) {
  for (uint64_t i = blockIdx.x * static_cast<uint64_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<uint64_t>(gridDim.x) * blockDim.x)
    dst[i] = Gen(rng::Bits(key, i));
}

__device__ uint16_t GenBf16(uint64_t b) { return rng::Bf16Bits(b); }
__device__ uint16_t GenF16(uint64_t b) { return rng::F16Bits(b); }
__device__ uint32_t GenF32(uint64_t b) { return rng::F32Bits(b); }

unsigned GridFor(uint64_t n) {
  const uint64_t blocks = (n + 255) / 256;
  return static_cast<unsigned>(blocks < 65536 ? (blocks == 0 ? 1 : blocks) : 65536);
}

}  // namespace

cudaError_t LaunchFillRandom(void* dst, int32_t dtype, uint64_t count, uint64_t key, cudaStream_t stream) {
  if (count == 0) return cudaSuccess;
  switch (dtype) {
    case KI_DTYPE_BF16:
      FillRandomKernel<uint16_t, GenBf16><<<GridFor(count), 256, 0, stream>>>(static_cast<uint16_t*>(dst), count, key);
      break;
    case KI_DTYPE_F16:
      FillRandomKernel<uint16_t, GenF16><<<GridFor(count), 256, 0, stream>>>(static_cast<uint16_t*>(dst), count, key);
      break;
    case KI_DTYPE_F32:
      FillRandomKernel<uint32_t, GenF32><<<GridFor(count), 256, 0, stream>>>(static_cast<uint32_t*>(dst), count, key);
      break;
    default:
      return cudaErrorInvalidValue;
  }
  return cudaGetLastError();
}

cudaError_t LaunchL2Flush(void* buf, uint64_t bytes, FlushAccess access, cudaStream_t stream) {
  const uint64_t n = bytes / 16;
  ki_l2_flush<<<n == 0 ? 1 : GridFor(n) < 1024 ? GridFor(n) : 1024, 256, 0, stream>>>(
      static_cast<uint4*>(buf), n, access == FlushAccess::kRead ? 1 : 0);
  return cudaGetLastError();
}

}  // namespace ki::gpu::internal
