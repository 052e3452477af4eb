// The seam between ki's host code and the CUDA runtime.
//
// The harness (src/harness) measures kernels through this interface and
// never includes a CUDA header; kernels/runtime implements it when ki is
// built with CUDA. CudaBackend() returns nullptr in a build without CUDA, and
// DeviceCount() is 0 on a machine without a driver or GPU (the binary links
// the CUDA runtime statically and the driver, CUPTI and NVML are loaded at
// run time, so ki starts everywhere).
//
// Thread-safety: one Backend per process, used from one thread at a time.
#pragma once

#include <stdint.h>

#include <string>
#include <vector>

#include "ki/kernel_abi.h"
#include "ki/status.h"

namespace ki::gpu {

// Clocks and throttling read through NVML at one moment.
struct ClockReading {
  bool valid = false;          // false when NVML is absent or refused
  uint32_t sm_mhz = 0;
  uint32_t mem_mhz = 0;
  uint32_t max_sm_mhz = 0;
  uint32_t max_mem_mhz = 0;
  uint32_t app_sm_mhz = 0;     // applications-clock target
  uint32_t default_app_sm_mhz = 0;
  uint32_t temperature_c = 0;
  uint32_t power_mw = 0;
  uint64_t event_reasons = 0;  // nvmlClocksEventReasons bit mask
};

struct DeviceEnvironment {
  int device = 0;
  std::string name;
  int cc_major = 0;
  int cc_minor = 0;
  int sm_count = 0;
  uint64_t memory_bytes = 0;
  uint64_t l2_bytes = 0;
  int memory_bus_bits = 0;
  int driver_api_version = 0;   // cudaDriverGetVersion, e.g. 13000
  int runtime_version = 0;      // cudaRuntimeGetVersion of the runtime ki links
  std::string driver_version;   // NVML's driver string, e.g. "580.159.04"; empty without NVML
  std::string pci_bus_id;
  bool nvml = false;
  std::string clocks_locked = "unknown";  // "yes", "no" or "unknown" (no NVML)
  ClockReading clocks;          // at the time of the reading
};

// The device's memory as the driver counts it now (cudaMemGetInfo). A
// shared GPU's other processes, and every CUDA context on it (this one's
// too), hold part of the total: a run that fits the total but not what is
// free fails inside the run as an allocation error.
struct DeviceMemory {
  uint64_t free_bytes = 0;
  uint64_t total_bytes = 0;
  // What the backend itself holds for reuse between runs (its L2 flush
  // buffers, allocated at the first timed run of the process): not free,
  // yet available to a run that needs those same buffers.
  uint64_t held_flush_bytes = 0;
};

// How one call ended on the device.
struct CallOutcome {
  enum class Kind { kOk, kKernelError, kDeviceError, kTimeout };
  Kind kind = Kind::kOk;
  int32_t kernel_status = KI_OK;  // what ki_kernel::run returned
  std::string message;
  bool ok() const { return kind == Kind::kOk; }
};

// How the L2 is emptied before each timed iteration (when flush_l2). kZero is
// the flashinfer-bench protocol and the one results report; the others are
// diagnostics that tell the cost of the dirty lines kZero leaves behind from
// the cost of a cold L2.
enum class FlushKind {
  kZero,          // write zeros over a buffer twice the L2 size (leaves L2 full of dirty lines)
  kRead,          // read a buffer twice the L2 size (L2 cold and clean)
  kZeroThenRead,  // kZero, then kRead of a second buffer (the zeros written back before the call)
};

struct TimingOptions {
  int warmup = 10;
  int iterations = 50;
  int trials = 3;
  bool flush_l2 = true;         // empty the L2 before every iteration (flush_kind says how)
  FlushKind flush_kind = FlushKind::kZero;
  bool prefer_cupti = true;     // CUPTI activity records; CUDA events when unavailable
  int graph_calls = 0;          // > 0: also time back-to-back calls captured in a CUDA graph
  int graph_replays = 5;
  double timeout_s = 60.0;      // per synchronisation
};

struct TimingSamples {
  CallOutcome outcome;
  std::string timer;                       // "cupti_activity" or "cuda_event"
  std::string timer_note;                  // why the fallback was taken, if it was
  std::vector<std::vector<double>> trials_us;  // every sample, microseconds, per trial
  uint64_t flush_bytes = 0;
  double graph_per_call_us = -1.0;         // < 0: not measured
  int graph_calls = 0;
  std::string graph_note;
};

class Backend {
 public:
  virtual ~Backend() = default;
  // Devices visible now; 0 without a driver or GPU (never an error).
  virtual int DeviceCount() = 0;
  virtual Status SetDevice(int device) = 0;
  virtual Result<DeviceEnvironment> Environment() = 0;
  virtual ClockReading ReadClocks() = 0;
  // Free and total memory of the current device, read now (not cached: it
  // changes as other processes allocate).
  virtual Result<DeviceMemory> MemoryInfo() = 0;

  virtual Result<void*> Alloc(uint64_t bytes) = 0;  // zero bytes gives nullptr
  virtual void Free(void* ptr) = 0;
  virtual Status CopyToDevice(void* dst, const void* src, uint64_t bytes) = 0;
  virtual Status CopyToHost(void* dst, const void* src, uint64_t bytes) = 0;
  virtual Status Fill(void* dst, uint8_t byte, uint64_t bytes) = 0;
  // The counter-based generator of ki/counter_rng.h, on the device:
  // element i of the tensor is a function of (key, i) alone.
  virtual Status FillRandom(void* dst, int32_t dtype, uint64_t count, uint64_t key) = 0;

  // One call on the backend's stream, then a synchronisation (with timeout).
  // The call's stream field is replaced by the backend's stream.
  virtual CallOutcome Run(const ki_kernel& kernel, const ki_call& call, double timeout_s) = 0;
  // The flashinfer-bench protocol: per trial, warm-up calls, then timed
  // calls, each preceded by an L2 flush; see TimingOptions.
  virtual TimingSamples Time(const ki_kernel& kernel, const ki_call& call, const TimingOptions& options) = 0;

  // ki's built-in CUDA kernels, index 0.. (nullptr past the end).
  virtual const ki_kernel* BuiltinKernel(int index) = 0;
};

// The process's CUDA backend, or nullptr when ki was built without CUDA.
Backend* CudaBackend();

}  // namespace ki::gpu
