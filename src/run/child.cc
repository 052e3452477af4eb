// The child of ki run (child.h).
#include "run/child.h"

#include <unistd.h>

#include <charconv>
#include <cstdio>

#include "ki/gpu_backend.h"
#include "util/process.h"

namespace ki::run::internal {

std::string ReferenceResultPath(const std::string& result_path) { return result_path + ".reference"; }

int ChildMain(Env& env, const std::string& library, const std::string& symbol, const Task& task, const Device& dev,
              const HarnessSettings& s, uint64_t seed, double timeout_s, const std::string& result_path,
              const ChildPython* py) {
  std::unique_ptr<harness::KernelLibrary> lib;
  const ki_kernel* k = nullptr;
  if (py && py->implementation) {
    auto loaded = harness::LoadPythonKernel(py->runtime, *py->implementation, task.def);
    if (!loaded.ok()) {
      std::fprintf(stderr, "ki: %s\n", loaded.status().message().c_str());
      return 3;
    }
    k = *loaded;
  } else {
    auto opened = harness::KernelLibrary::Open(library);
    if (!opened.ok()) {
      std::fprintf(stderr, "ki: %s\n", opened.status().message().c_str());
      return 3;
    }
    lib = std::move(*opened);
    if (!symbol.empty()) {
      k = lib->Find(symbol);
    } else if (lib->kernels().size() == 1) {
      k = lib->kernels()[0];
    }
    if (!k) {
      std::string names;
      for (const auto* x : lib->kernels()) names += std::string(" ") + x->info.name;
      std::fprintf(stderr, "ki: kernel '%s' not in the library (it has:%s)\n", symbol.c_str(), names.c_str());
      return 3;
    }
  }
  if (dev.cuda) {
    gpu::Backend* be = gpu::CudaBackend();
    if (!be || be->DeviceCount() == 0) {
      std::fprintf(stderr, "ki: no CUDA device (or ki was built without CUDA)\n");
      return 4;
    }
    if (Status st = be->SetDevice(dev.index); !st.ok()) {
      std::fprintf(stderr, "ki: %s\n", st.message().c_str());
      return 4;
    }
  }
  harness::RunOptions opt;
  opt.generator.seed = seed;
  opt.tolerance = {s.atol, s.rtol};
  opt.timing.warmup = s.warmup;
  opt.timing.iterations = s.iterations;
  opt.timing.trials = s.trials;
  opt.timing.flush_l2 = s.flush_l2;
  opt.timing.timeout_s = timeout_s;
  opt.timeout_s = timeout_s;
  harness::RunResult r = harness::RunWorkload(*k, task.def, task.workload, opt);
  std::fprintf(stderr, "ki: harness: %s%s%s\n", harness::RunStatusName(r.status), r.message.empty() ? "" : ": ",
               r.message.c_str());
  if (!env.WriteFileAtomic(result_path, harness::ToJson(r), Durability::kNone).ok()) return 5;
  // The definition's reference, timed under the same protocol on the same
  // inputs (the generator is a function of the seed): flashinfer-bench's
  // reference latency. Only after a passing run, as flashinfer-bench
  // reports a speedup only for a correct solution.
  if (py && py->reference && r.status == harness::RunStatus::kPassed) {
    auto ref = harness::LoadPythonKernel(py->runtime, *py->reference, task.def);
    harness::RunResult rr;
    if (ref.ok()) {
      rr = harness::RunWorkload(**ref, task.def, task.workload, opt);
    } else {
      rr.message = ref.status().message();
    }
    std::fprintf(stderr, "ki: reference: %s%s%s\n", harness::RunStatusName(rr.status),
                 rr.message.empty() ? "" : ": ", rr.message.c_str());
    if (!env.WriteFileAtomic(ReferenceResultPath(result_path), harness::ToJson(rr), Durability::kNone).ok())
      return 5;
  }
  return 0;
}

void RemoveLeftovers(Env* env, const std::string& cache) {
  auto dead = [](std::string_view pid_text) {
    int64_t pid = 0;
    auto [end, ec] = std::from_chars(pid_text.data(), pid_text.data() + pid_text.size(), pid);
    return ec == std::errc() && end == pid_text.data() + pid_text.size() && ProcessIsGone(pid);
  };
  if (auto names = env->ListDir(cache + "/runs"); names.ok()) {
    for (const std::string& n : *names) {  // run-<pid>-<steady clock>.log / .json
      if (n.rfind("run-", 0) != 0) continue;
      const size_t dash = n.find('-', 4);
      if (dash != std::string::npos && dead(std::string_view(n).substr(4, dash - 4)))
        (void)env->RemoveFile(cache + "/runs/" + n);
    }
  }
  if (auto names = env->ListDir(cache + "/build"); names.ok()) {
    for (const std::string& n : *names) {  // tmp-<16 hex of the key>-<pid>
      if (n.rfind("tmp-", 0) != 0 || n.size() < 22 || n[20] != '-') continue;
      if (dead(std::string_view(n).substr(21))) (void)env->RemoveTree(cache + "/build/" + n);
    }
  }
}

}  // namespace ki::run::internal
