// ki::gpu::Backend on the CUDA runtime (linked statically; the driver,
// CUPTI and NVML are found at run time).
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "gqa_paged_decode/launch.h"
#include "ki/gpu_backend.h"
#include "runtime/cupti_trace.h"
#include "runtime/device_ops.h"
#include "runtime/nvml_probe.h"

namespace ki::gpu {
namespace internal {
namespace {

std::string CudaText(cudaError_t e) { return std::string(cudaGetErrorName(e)) + ": " + cudaGetErrorString(e); }

Status CudaStatus(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return Status::OK();
  return Status::IOError(std::string(what) + ": " + CudaText(e));
}

class CudaEvent {
 public:
  CudaEvent() { cudaEventCreate(&e_); }
  ~CudaEvent() {
    if (e_) cudaEventDestroy(e_);
  }
  CudaEvent(const CudaEvent&) = delete;
  CudaEvent& operator=(const CudaEvent&) = delete;
  cudaEvent_t get() const { return e_; }

 private:
  cudaEvent_t e_ = nullptr;
};

class CudaBackendImpl final : public Backend {
 public:
  ~CudaBackendImpl() override {
    // Process teardown: the runtime may already be gone; release best-effort.
    if (flush_buf_) cudaFree(flush_buf_);
    if (read_buf_) cudaFree(read_buf_);
    if (stream_) cudaStreamDestroy(stream_);
  }

  int DeviceCount() override {
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess) {
      cudaGetLastError();  // clear "no driver" so later calls start clean
      return 0;
    }
    return n;
  }

  Status SetDevice(int device) override {
    if (stream_ && device == device_) return Status::OK();
    KI_RETURN_IF_ERROR(CudaStatus(cudaSetDevice(device), "cudaSetDevice"));
    if (stream_) {
      cudaStreamDestroy(stream_);
      stream_ = nullptr;
    }
    if (flush_buf_) {
      cudaFree(flush_buf_);
      flush_buf_ = nullptr;
    }
    if (read_buf_) {
      cudaFree(read_buf_);
      read_buf_ = nullptr;
    }
    device_ = device;
    KI_RETURN_IF_ERROR(CudaStatus(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreate"));
    char bus[32] = {0};
    if (cudaDeviceGetPCIBusId(bus, sizeof(bus), device) == cudaSuccess) {
      pci_bus_id_ = bus;
      nvml_ = NvmlProbe();
      nvml_.Open(pci_bus_id_);
    }
    return Status::OK();
  }

  Result<DeviceEnvironment> Environment() override {
    KI_RETURN_IF_ERROR(EnsureDevice());
    cudaDeviceProp prop;
    KI_RETURN_IF_ERROR(CudaStatus(cudaGetDeviceProperties(&prop, device_), "cudaGetDeviceProperties"));
    DeviceEnvironment env;
    env.device = device_;
    env.name = prop.name;
    env.cc_major = prop.major;
    env.cc_minor = prop.minor;
    env.sm_count = prop.multiProcessorCount;
    env.memory_bytes = prop.totalGlobalMem;
    env.l2_bytes = static_cast<uint64_t>(prop.l2CacheSize);
    env.memory_bus_bits = prop.memoryBusWidth;
    cudaDriverGetVersion(&env.driver_api_version);
    cudaRuntimeGetVersion(&env.runtime_version);
    env.pci_bus_id = pci_bus_id_;
    env.nvml = nvml_.available();
    env.driver_version = nvml_.DriverVersion();
    env.clocks = nvml_.Read();
    env.clocks_locked = nvml_.ClocksLocked(env.clocks);
    return env;
  }

  ClockReading ReadClocks() override { return nvml_.Read(); }

  Result<DeviceMemory> MemoryInfo() override {
    KI_RETURN_IF_ERROR(EnsureDevice());  // the context exists first: its own memory is not free
    size_t free = 0, total = 0;
    KI_RETURN_IF_ERROR(CudaStatus(cudaMemGetInfo(&free, &total), "cudaMemGetInfo"));
    DeviceMemory m;
    m.free_bytes = free;
    m.total_bytes = total;
    m.held_flush_bytes = (flush_buf_ ? flush_bytes_ : 0) + (read_buf_ ? flush_bytes_ : 0);
    return m;
  }

  Result<void*> Alloc(uint64_t bytes) override {
    KI_RETURN_IF_ERROR(EnsureDevice());
    if (bytes == 0) return static_cast<void*>(nullptr);
    void* p = nullptr;
    KI_RETURN_IF_ERROR(CudaStatus(cudaMalloc(&p, bytes), "cudaMalloc"));
    return p;
  }
  void Free(void* ptr) override {
    if (ptr) cudaFree(ptr);
  }
  Status CopyToDevice(void* dst, const void* src, uint64_t bytes) override {
    if (bytes == 0) return Status::OK();
    return CudaStatus(cudaMemcpy(dst, src, bytes, cudaMemcpyHostToDevice), "cudaMemcpy to device");
  }
  Status CopyToHost(void* dst, const void* src, uint64_t bytes) override {
    if (bytes == 0) return Status::OK();
    return CudaStatus(cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToHost), "cudaMemcpy to host");
  }
  Status Fill(void* dst, uint8_t byte, uint64_t bytes) override {
    if (bytes == 0) return Status::OK();
    KI_RETURN_IF_ERROR(CudaStatus(cudaMemsetAsync(dst, byte, bytes, stream_), "cudaMemset"));
    return CudaStatus(cudaStreamSynchronize(stream_), "cudaStreamSynchronize");
  }
  Status FillRandom(void* dst, int32_t dtype, uint64_t count, uint64_t key) override {
    KI_RETURN_IF_ERROR(EnsureDevice());
    KI_RETURN_IF_ERROR(CudaStatus(LaunchFillRandom(dst, dtype, count, key, stream_), "fill random"));
    return CudaStatus(cudaStreamSynchronize(stream_), "cudaStreamSynchronize");
  }

  CallOutcome Run(const ki_kernel& kernel, const ki_call& call, double timeout_s) override {
    CallOutcome out;
    if (Status s = EnsureDevice(); !s.ok()) return DeviceError(s.message());
    ki_call c = call;
    c.stream = stream_;
    out = Launch(kernel, c);
    if (!out.ok()) return out;
    return Wait(timeout_s);
  }

  TimingSamples Time(const ki_kernel& kernel, const ki_call& call, const TimingOptions& opt) override {
    TimingSamples ts;
    if (Status s = EnsureDevice(); !s.ok()) {
      ts.outcome = DeviceError(s.message());
      return ts;
    }
    ki_call c = call;
    c.stream = stream_;
    if (opt.flush_l2) {
      if (Status s = EnsureFlushBuffers(opt.flush_kind); !s.ok()) {
        ts.outcome = DeviceError(s.message());
        return ts;
      }
      ts.flush_bytes = flush_bytes_;
    }
    const uint64_t flush = opt.flush_l2 ? flush_bytes_ : 0;

    CuptiTrace* cupti = nullptr;
    if (opt.prefer_cupti) {
      std::string why;
      cupti = CuptiTrace::Get(&why);
      if (!cupti) ts.timer_note = why;
    } else {
      ts.timer_note = "CUPTI not requested";
    }
    bool use_cupti = cupti != nullptr;
    std::vector<double> event_us;
    std::vector<std::unique_ptr<CudaEvent>> starts, ends;
    for (int i = 0; i < opt.iterations; ++i) {
      starts.push_back(std::make_unique<CudaEvent>());
      ends.push_back(std::make_unique<CudaEvent>());
    }

    std::vector<std::vector<double>> cupti_trials, event_trials;
    for (int trial = 0; trial < opt.trials; ++trial) {
      for (int i = 0; i < opt.warmup; ++i) {
        Flush(flush, opt.flush_kind);
        ts.outcome = Launch(kernel, c);
        if (!ts.outcome.ok()) return ts;
      }
      ts.outcome = Wait(opt.timeout_s);
      if (!ts.outcome.ok()) return ts;
      std::string why;
      const bool tracing = use_cupti && cupti->Start(&why);
      if (use_cupti && !tracing) {
        use_cupti = false;
        ts.timer_note = why;
      }
      for (int i = 0; i < opt.iterations; ++i) {
        Flush(flush, opt.flush_kind);
        cudaEventRecord(starts[i]->get(), stream_);
        ts.outcome = Launch(kernel, c);
        cudaEventRecord(ends[i]->get(), stream_);
        if (!ts.outcome.ok()) return ts;
      }
      ts.outcome = Wait(opt.timeout_s);
      if (!ts.outcome.ok()) return ts;
      std::vector<double> ev(opt.iterations);
      for (int i = 0; i < opt.iterations; ++i) {
        float ms = 0.f;
        cudaEventElapsedTime(&ms, starts[i]->get(), ends[i]->get());
        ev[i] = ms * 1000.0;
      }
      event_trials.push_back(std::move(ev));
      if (tracing) {
        std::vector<KernelSpan> spans;
        std::vector<double> cu;
        if (!cupti->Stop(&spans, &why) || !SpansPerIteration(spans, opt.iterations, &cu, &why)) {
          use_cupti = false;
          ts.timer_note = why;
        } else {
          cupti_trials.push_back(std::move(cu));
        }
      }
    }
    if (use_cupti && static_cast<int>(cupti_trials.size()) == opt.trials) {
      ts.timer = "cupti_activity";
      ts.trials_us = std::move(cupti_trials);
    } else {
      ts.timer = "cuda_event";
      ts.trials_us = std::move(event_trials);
    }
    if (opt.graph_calls > 0) TimeGraph(kernel, c, opt, &ts);
    return ts;
  }

  const ki_kernel* BuiltinKernel(int index) override { return gqa::BuiltinCudaKernel(index); }

 private:
  Status EnsureDevice() {
    if (stream_) return Status::OK();
    if (DeviceCount() == 0) return Status::IOError("no CUDA device");
    return SetDevice(0);
  }

  // The zeroing buffer, and for the read kinds a second one of the same size
  // (zeros, so the read sweep's never-taken store stays never taken).
  Status EnsureFlushBuffers(FlushKind kind) {
    if (!flush_buf_) {
      int l2 = 0;
      KI_RETURN_IF_ERROR(CudaStatus(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, device_), "L2 size"));
      flush_bytes_ = (2 * static_cast<uint64_t>(l2) + 15) / 16 * 16;
      KI_RETURN_IF_ERROR(CudaStatus(cudaMalloc(&flush_buf_, flush_bytes_), "cudaMalloc flush buffer"));
    }
    if (kind != FlushKind::kZero && !read_buf_) {
      KI_RETURN_IF_ERROR(CudaStatus(cudaMalloc(&read_buf_, flush_bytes_), "cudaMalloc flush buffer"));
      KI_RETURN_IF_ERROR(CudaStatus(cudaMemset(read_buf_, 0, flush_bytes_), "cudaMemset flush buffer"));
    }
    return Status::OK();
  }

  // One iteration's flush; bytes == 0 launches only the empty marker kernel
  // that separates iterations in the CUPTI records.
  void Flush(uint64_t bytes, FlushKind kind) {
    if (bytes == 0 || kind != FlushKind::kRead) LaunchL2Flush(flush_buf_, bytes, FlushAccess::kWriteZeros, stream_);
    if (bytes > 0 && kind != FlushKind::kZero) LaunchL2Flush(read_buf_, bytes, FlushAccess::kRead, stream_);
  }

  static CallOutcome DeviceError(std::string msg) {
    CallOutcome o;
    o.kind = CallOutcome::Kind::kDeviceError;
    o.message = std::move(msg);
    return o;
  }

  CallOutcome Launch(const ki_kernel& kernel, ki_call& c) {
    CallOutcome o;
    char err[512] = {0};
    char* saved = c.error;
    uint32_t saved_cap = c.error_capacity;
    if (!c.error) {
      c.error = err;
      c.error_capacity = sizeof(err);
    }
    const int32_t rc = kernel.run(&c);
    if (rc != KI_OK) {
      o.kind = CallOutcome::Kind::kKernelError;
      o.kernel_status = rc;
      o.message = c.error[0] ? c.error : ("kernel returned status " + std::to_string(rc));
    }
    c.error = saved;
    c.error_capacity = saved_cap;
    return o;
  }

  // Synchronises the stream, polling so that a runaway kernel becomes a
  // timeout instead of a hang (the kernel itself cannot be stopped; the
  // caller should treat the device as unusable afterwards).
  CallOutcome Wait(double timeout_s) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
    for (;;) {
      const cudaError_t e = cudaStreamQuery(stream_);
      if (e == cudaSuccess) break;
      if (e != cudaErrorNotReady) return DeviceError(CudaText(e));
      if (std::chrono::steady_clock::now() > deadline) {
        CallOutcome o;
        o.kind = CallOutcome::Kind::kTimeout;
        o.message = "no completion within " + std::to_string(timeout_s) + " s";
        return o;
      }
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
    const cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess) return DeviceError(CudaText(e));
    return CallOutcome();
  }

  // Groups kernel records by the flush kernel that precedes every timed
  // call; an iteration's span runs from the first start to the last end of
  // the call's own kernels.
  static bool SpansPerIteration(const std::vector<KernelSpan>& spans, int iterations, std::vector<double>* out,
                                std::string* why) {
    out->clear();
    bool open = false;
    uint64_t lo = 0, hi = 0;
    int flushes = 0;
    for (const KernelSpan& s : spans) {
      if (s.name == kFlushKernelName) {
        if (open) out->push_back((hi - lo) / 1000.0);
        open = false;
        ++flushes;
        continue;
      }
      if (flushes == 0) continue;
      if (!open) {
        lo = s.start_ns;
        hi = s.end_ns;
        open = true;
      } else {
        lo = std::min(lo, s.start_ns);
        hi = std::max(hi, s.end_ns);
      }
    }
    if (open) out->push_back((hi - lo) / 1000.0);
    if (static_cast<int>(out->size()) != iterations) {
      *why = "CUPTI returned " + std::to_string(out->size()) + " kernel spans for " + std::to_string(iterations) +
             " iterations (" + std::to_string(spans.size()) + " records)";
      return false;
    }
    return true;
  }

  void TimeGraph(const ki_kernel& kernel, ki_call& c, const TimingOptions& opt, TimingSamples* ts) {
    cudaGraph_t graph = nullptr;
    cudaGraphExec_t exec = nullptr;
    auto fail = [&](const std::string& why) {
      ts->graph_note = why;
      cudaGetLastError();
      if (exec) cudaGraphExecDestroy(exec);
      if (graph) cudaGraphDestroy(graph);
    };
    if (cudaStreamBeginCapture(stream_, cudaStreamCaptureModeThreadLocal) != cudaSuccess)
      return fail("cudaStreamBeginCapture failed");
    bool launched = true;
    for (int i = 0; i < opt.graph_calls && launched; ++i) launched = Launch(kernel, c).ok();
    const cudaError_t ec = cudaStreamEndCapture(stream_, &graph);
    if (!launched || ec != cudaSuccess) return fail("capture failed: " + CudaText(ec));
    if (cudaGraphInstantiate(&exec, graph, 0) != cudaSuccess) return fail("cudaGraphInstantiate failed");
    cudaGraphLaunch(exec, stream_);  // warm-up replay (uploads the graph)
    CallOutcome o = Wait(opt.timeout_s);
    if (!o.ok()) return fail("graph replay: " + o.message);
    CudaEvent a, b;
    cudaEventRecord(a.get(), stream_);
    for (int r = 0; r < opt.graph_replays; ++r) cudaGraphLaunch(exec, stream_);
    cudaEventRecord(b.get(), stream_);
    o = Wait(opt.timeout_s);
    if (!o.ok()) return fail("graph replay: " + o.message);
    float ms = 0.f;
    cudaEventElapsedTime(&ms, a.get(), b.get());
    ts->graph_calls = opt.graph_calls;
    ts->graph_per_call_us = ms * 1000.0 / (static_cast<double>(opt.graph_replays) * opt.graph_calls);
    ts->graph_note = "warm L2, " + std::to_string(opt.graph_calls) + " back-to-back calls per graph, " +
                     std::to_string(opt.graph_replays) + " replays, CUDA events";
    cudaGraphExecDestroy(exec);
    cudaGraphDestroy(graph);
  }

  int device_ = -1;
  cudaStream_t stream_ = nullptr;
  void* flush_buf_ = nullptr;
  void* read_buf_ = nullptr;  // the read sweep's buffer (FlushKind::kRead, kZeroThenRead)
  uint64_t flush_bytes_ = 0;
  std::string pci_bus_id_;
  NvmlProbe nvml_;
};

}  // namespace

Backend* CudaBackendInstance() {
  static CudaBackendImpl* instance = new CudaBackendImpl();  // never destroyed: outlives static teardown
  return instance;
}

}  // namespace internal
}  // namespace ki::gpu
