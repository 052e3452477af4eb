// Where host code meets the optional CUDA build: ki_kernels_host defines
// KI_HAVE_CUDA_BACKEND for its users (kicore) and provides the instance.
#include "ki/gpu_backend.h"

namespace ki::gpu {

#if defined(KI_HAVE_CUDA_BACKEND)
namespace internal {
Backend* CudaBackendInstance();  // kernels/runtime/cuda_backend.cc
}
Backend* CudaBackend() { return internal::CudaBackendInstance(); }
#else
Backend* CudaBackend() { return nullptr; }
#endif

}  // namespace ki::gpu
