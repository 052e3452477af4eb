// Built-in kernels and kernels loaded from shared libraries.
#include <dlfcn.h>

#include "ki/gpu_backend.h"
#include "ki/harness.h"

namespace ki::harness {

const ki_kernel* GqaPagedDecodeCpuReference();  // gqa_paged_decode_cpu.cc

const ki_kernel* CpuReferenceKernel(std::string_view definition) {
  const ki_kernel* k = GqaPagedDecodeCpuReference();
  return definition == k->info.definition ? k : nullptr;
}

std::vector<const ki_kernel*> BuiltinKernels() {
  std::vector<const ki_kernel*> out = {GqaPagedDecodeCpuReference()};
  if (gpu::Backend* b = gpu::CudaBackend())
    for (int i = 0; const ki_kernel* k = b->BuiltinKernel(i); ++i) out.push_back(k);
  return out;
}

const ki_kernel* FindBuiltinKernel(std::string_view name) {
  for (const ki_kernel* k : BuiltinKernels())
    if (name == k->info.name) return k;
  return nullptr;
}

Result<std::unique_ptr<KernelLibrary>> KernelLibrary::Open(const std::string& path) {
  // RTLD_LOCAL: two kernel libraries may export the same entry symbol.
  void* h = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    const char* e = dlerror();
    return Status::IOError("cannot load kernel library " + path + ": " + (e ? e : "unknown error"));
  }
  auto get = reinterpret_cast<ki_kernel_get_fn>(dlsym(h, KI_KERNEL_ENTRY_SYMBOL));
  if (!get) {
    dlclose(h);
    return Status::InvalidInput(path + " does not export " KI_KERNEL_ENTRY_SYMBOL);
  }
  std::unique_ptr<KernelLibrary> lib(new KernelLibrary());
  lib->handle_ = h;
  lib->path_ = path;
  for (int32_t i = 0; i < 4096; ++i) {
    const ki_kernel* k = get(KI_ABI_VERSION, i);
    if (!k) break;
    if (k->info.abi_version != KI_ABI_VERSION || !k->run || !k->info.name)
      return Status::InvalidInput(path + ": kernel " + std::to_string(i) + " has an incompatible table");
    lib->kernels_.push_back(k);
  }
  if (lib->kernels_.empty())
    return Status::InvalidInput(path + ": no kernels for ABI version " + std::to_string(KI_ABI_VERSION));
  return lib;
}

KernelLibrary::~KernelLibrary() {
  if (handle_) dlclose(handle_);
}

const ki_kernel* KernelLibrary::Find(std::string_view name) const {
  for (const ki_kernel* k : kernels_)
    if (name == k->info.name) return k;
  return nullptr;
}

}  // namespace ki::harness
