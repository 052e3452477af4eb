// The ABI entry symbol of libki_gqa_kernels.so, the built-in kernels packaged
// the way a user's kernel library is: ki loads it with dlopen and finds
// KI_KERNEL_ENTRY_SYMBOL. Tests use it to exercise that path end to end.
#include "gqa_paged_decode/launch.h"

extern "C" __attribute__((visibility("default"))) const ki_kernel* ki_kernel_get(uint32_t abi_version,
                                                                               int32_t index) {
  if (abi_version != KI_ABI_VERSION) return nullptr;
  return ki::gqa::BuiltinCudaKernel(index);
}
