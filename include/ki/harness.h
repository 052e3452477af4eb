// The measurement harness: runs one kernel on one workload of a definition
// and says, honestly, whether it is right and how long it takes.
//
// - Definitions and workloads are flashinfer-bench's JSON formats.
// - Inputs come from a counter-based generator (ki/counter_rng.h): the same
//   (workload, seed) gives the same bytes on the CPU and on any GPU. Random
//   tensors are never zero; index tensors are valid for the axes.
// - Correctness follows flashinfer-bench: shape, dtype, no NaN/Inf, then
//   every element within atol or rtol, rel = |a-b| / (|ref| + 1e-8). Outputs
//   are poisoned (all bytes 0xFF, a NaN in every float type) before each
//   checked call, so an unwritten element fails.
// - Timing follows flashinfer-bench: an L2 flush before every iteration,
//   warm-up and timed iterations, several trials, the mean of the trial
//   medians as the headline, every raw sample kept; the timer used is named.
// - A kernel is anything with a ki_kernel table (ki/kernel_abi.h): a
//   built-in, or one found in a shared library with KernelLibrary.
//
// The harness includes no CUDA header: GPU work goes through
// ki/gpu_backend.h, which is null in a build without CUDA.
//
// Thread-safety: functions are reentrant except RunWorkload on a CUDA kernel,
// which uses the process's one CUDA backend: call it from one thread.
#pragma once

#include <stdint.h>

#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "ki/gpu_backend.h"
#include "ki/kernel_abi.h"
#include "ki/status.h"

namespace ki {
class Env;
}  // namespace ki

namespace ki::harness {

// ---------------------------------------------------------------- dtypes
size_t DtypeSize(ki_dtype dtype);          // 0 for KI_DTYPE_INVALID
const char* DtypeName(ki_dtype dtype);     // "bfloat16", "float32", "int32", ...
ki_dtype ParseDtype(std::string_view name);  // KI_DTYPE_INVALID when unknown
float Bf16ToFloat(uint16_t bits);
uint16_t FloatToBf16(float value);         // round to nearest even; NaN stays NaN
float F16ToFloat(uint16_t bits);
double ElementAsDouble(ki_dtype dtype, const void* element);

// ---------------------------------------------------- definitions, workloads
struct TensorSpec {
  std::string name;
  std::vector<std::string> shape;  // axis names; empty for a scalar
  ki_dtype dtype = KI_DTYPE_INVALID;
};

struct Definition {
  std::string name;
  std::string op_type;
  std::map<std::string, int64_t> const_axes;
  std::vector<std::string> var_axes;
  std::vector<TensorSpec> inputs;
  std::vector<TensorSpec> outputs;
  // flashinfer-bench's `constraints`, verbatim ("len_indptr == batch_size + 1");
  // CheckConstraints evaluates those over axes alone.
  std::vector<std::string> constraints;
  std::string reference;  // the definition's reference code (Python), verbatim
};
Result<Definition> ParseDefinition(std::string_view json_text, std::string_view source);
Result<Definition> LoadDefinition(const std::string& path);

struct InputSource {
  enum class Kind { kRandom, kScalar, kSafetensors, kValues };
  Kind kind = Kind::kRandom;
  double scalar = 0.0;              // kScalar
  std::string path, tensor_key;     // kSafetensors (recorded; ki generates these itself)
  std::vector<int64_t> values;      // kValues: explicit contents (tests, hand-made workloads)
};

struct Workload {
  std::string uuid;
  std::map<std::string, int64_t> axes;           // the var axes
  std::map<std::string, InputSource> inputs;
};
// Accepts a flashinfer-bench trace line ({"definition":..,"workload":{..}})
// or a bare workload object.
Result<Workload> ParseWorkload(std::string_view json_text, std::string_view source);
Result<std::vector<Workload>> LoadWorkloads(const std::string& jsonl_path);
// A workload for the GQA paged-decode family with `batch` sequences of
// `tokens_per_sequence` tokens each and num_pages == total tokens (bench).
Workload MakePagedDecodeWorkload(const std::string& uuid, int64_t batch, int64_t tokens_per_sequence,
                                 double sm_scale);
// Every axis of the definition, const and var, with its value.
Result<std::map<std::string, int64_t>> ResolveAxes(const Definition& def, const Workload& workload);

// ----------------------------------------------------------- constraints
// A definition's constraint is evaluated when it is a comparison (chained as
// in Python: `a < b <= c`) of integer expressions over axis names and
// integer literals: `==, !=, <, <=, >, >=`, `+ - * // %` (Python's floor
// division and modulo), unary `+ -` and parentheses, in int64 with every
// step overflow-checked. Anything else is not evaluated: a constraint on
// tensor values (`num_kv_indices == kv_indptr[-1].item()`: any `[`, `(` of a
// call, `.`), a name that is not an axis of `axes`, syntax outside the above
// (flashinfer-bench may add some).
struct ConstraintCheck {
  enum class Outcome { kHolds, kBroken, kNotEvaluated };
  Outcome outcome = Outcome::kNotEvaluated;
  // kBroken: the axes it reads, in order of first use ("len_indptr = 5, batch_size = 3").
  std::string values;
};
// InvalidInput when an evaluated constraint cannot be decided: its
// arithmetic passes int64, or divides by zero (Python raises there too);
// the message names the constraint and the axis values. A chain stops at its
// first false comparison, as Python's does: what follows is parsed (a syntax
// error still leaves the constraint not evaluated) but not evaluated, so an
// overflow there is no error and an unknown name there is not read.
Result<ConstraintCheck> EvaluateConstraint(std::string_view constraint, const std::map<std::string, int64_t>& axes);
// OK when every evaluated constraint of `def` holds; else InvalidInput naming
// the first that does not and its axis values ("constraint 'len_indptr ==
// batch_size + 1' does not hold: len_indptr = 5, batch_size = 3"). RunWorkload
// and ki run call it once the axes are resolved, before anything is sized or
// generated.
Status CheckConstraints(const Definition& def, const std::map<std::string, int64_t>& axes);

// --------------------------------------------------------------- inputs
enum class LengthSplit {
  kRandom,  // B-1 cut points uniform over [0, total]: random lengths, empty sequences possible
  kEqual    // total/B each (the remainder spread over the first sequences)
};
struct GeneratorOptions {
  uint64_t seed = 0;
  LengthSplit lengths = LengthSplit::kRandom;
};

// How to produce one input tensor: random contents from a stream key, or
// explicit bytes (index tensors, scalars).
struct TensorPlan {
  std::string name;
  ki_dtype dtype = KI_DTYPE_INVALID;
  std::vector<int64_t> shape;
  bool random = false;
  uint64_t key = 0;            // random: element i is rng::*Bits(rng::Bits(key, i))
  std::vector<uint8_t> bytes;  // !random: the contents
  int64_t numel() const;
  uint64_t nbytes() const;
};
Result<std::vector<TensorPlan>> PlanInputs(const Definition& def, const Workload& workload,
                                           const GeneratorOptions& options);

struct HostTensor {
  std::string name;
  ki_dtype dtype = KI_DTYPE_INVALID;
  std::vector<int64_t> shape;
  std::vector<uint8_t> bytes;
  int64_t numel() const;
};
// The element count of a tensor of the definition (`role`: "input" or
// "output") for these axes, checked: a negative axis, or a count or byte
// size past 2^63 - 1, is InvalidInput naming the tensor, its shape and the
// axis values ("input k_cache [num_pages, ...] = [1099511627776, ...]: ...").
// PlanInputs and MakeOutputs check every tensor through it.
Result<int64_t> TensorElements(std::string_view role, const TensorSpec& spec,
                               const std::map<std::string, int64_t>& axes);
HostTensor Materialize(const TensorPlan& plan);  // random contents computed on the CPU
// Output tensors of the right shapes and dtypes, filled with `byte`.
Result<std::vector<HostTensor>> MakeOutputs(const Definition& def, const std::map<std::string, int64_t>& axes,
                                            uint8_t byte);
// The fewest bytes a kernel must move: every input and output once, except
// that a paged cache (first axis num_pages) counts only the pages that
// num_kv_indices * page_size addresses.
uint64_t MinimumBytes(const Definition& def, const std::map<std::string, int64_t>& axes);

// What RunWorkload allocates at its peak for one workload, so that a
// workload larger than the machine is refused before anything is generated
// (it was std::bad_alloc, or a child killed by the OOM killer). Counted from
// the harness's own buffers (runner.cc), not MinimumBytes: whole tensors
// (a paged cache's unaddressed pages too), the index generator's scratch,
// the outputs held several times while checking (reference, result, the
// guard-zoned copy with its 2 x 4 KiB zones), and on a GPU the L2 flush
// buffers. A kernel's workspace is not counted: the ABI asks workspace_size
// with the call's tensors in place, so RunWorkload checks it against the
// free memory when it asks, before allocating it (insufficient_memory past
// it); what a kernel allocates itself inside run is not seen at all.
// RunWorkload compares host_bytes with
// AvailableHostMemory and device_bytes with the device's free memory
// (gpu::Backend::MemoryInfo), not its total: a shared GPU's other tenants
// hold part of it.
struct MemoryNeed {
  uint64_t host_bytes = 0;
  uint64_t device_bytes = 0;  // CUDA kernels only
  uint64_t device_flush_bytes = 0;  // of device_bytes: the L2 flush buffers (the backend keeps them)
  std::string host_parts;     // "inputs 1.0 GiB, outputs 3 x 16.0 MiB, ..."
  std::string device_parts;
};
struct MemoryNeedOptions {
  bool cuda_kernel = false;
  bool cuda_reference = false;   // the reference runs on the device (else on the host)
  bool check = true;             // RunOptions::check
  bool flush_l2 = false;         // RunOptions::time && timing.flush_l2
  int flush_buffers = 1;         // 2 for FlushKind::kRead and kZeroThenRead
  uint64_t l2_bytes = 0;
};
// InvalidInput (from TensorElements) when a tensor's size passes int64.
Result<MemoryNeed> EstimateMemoryNeed(const Definition& def, const std::map<std::string, int64_t>& axes,
                                      const MemoryNeedOptions& options);
// Host memory this process can still use: MemAvailable of /proc/meminfo,
// lowered to what the cgroup v2 limit (memory.max less memory.current)
// leaves, read through `env`.
Result<uint64_t> AvailableHostMemory(Env& env);
// "1.5 GiB": a byte count for messages.
std::string FormatBytes(uint64_t bytes);

// ----------------------------------------------------------- correctness
struct Tolerance {
  double atol = 1e-2;
  double rtol = 1e-2;
};
struct TensorCheck {
  std::string name;
  bool shape_ok = false;
  bool dtype_ok = false;
  int64_t numel = 0;
  int64_t nonfinite = 0;   // NaN/Inf where the reference has no identical non-finite value
  int64_t mismatched = 0;  // elements outside both tolerances (non-finite ones included)
  double max_abs_error = 0.0;
  double max_rel_error = 0.0;
  double matched_ratio = 0.0;
  bool passed() const { return shape_ok && dtype_ok && nonfinite == 0 && mismatched == 0; }
};
// An element matches when |a-b| <= atol or |a-b| / (|ref| + 1e-8) <= rtol.
// A non-finite output matches only the identical non-finite reference value
// (an empty sequence's lse is -inf in both); anything else non-finite fails.
TensorCheck CompareTensors(const HostTensor& got, const HostTensor& ref, const Tolerance& tol);

// ------------------------------------------------------------ statistics
struct SampleStats {
  size_t count = 0;
  double median = 0, mean = 0, min = 0, max = 0, p05 = 0, p95 = 0, stddev = 0;
  double ci95_low = 0, ci95_high = 0;  // 95% confidence interval of the mean (Student t)
};
SampleStats Summarize(std::vector<double> samples);
// Linear interpolation between order statistics (numpy's default); q in [0, 1].
double Percentile(const std::vector<double>& sorted, double q);
double Median(std::vector<double> samples);

// --------------------------------------------------------------- kernels
// Kernels from a shared library exporting KI_KERNEL_ENTRY_SYMBOL. The
// library stays loaded as long as this object lives; its ki_kernel
// pointers are valid until then.
class KernelLibrary {
 public:
  static Result<std::unique_ptr<KernelLibrary>> Open(const std::string& path);
  ~KernelLibrary();
  KernelLibrary(const KernelLibrary&) = delete;
  KernelLibrary& operator=(const KernelLibrary&) = delete;
  const std::vector<const ki_kernel*>& kernels() const { return kernels_; }
  const ki_kernel* Find(std::string_view name) const;  // nullptr when absent
  const std::string& path() const { return path_; }

 private:
  KernelLibrary() = default;
  void* handle_ = nullptr;
  std::string path_;
  std::vector<const ki_kernel*> kernels_;
};

// The fp64 CPU reference of a definition, or nullptr if ki has none.
const ki_kernel* CpuReferenceKernel(std::string_view definition);
// ki's built-in kernels: the CPU references, plus the CUDA kernels when
// ki was built with CUDA (whether or not a GPU is present).
std::vector<const ki_kernel*> BuiltinKernels();
const ki_kernel* FindBuiltinKernel(std::string_view name);

// --------------------------------------------------------- Python kernels
// A Python function (a flashinfer-bench solution in Python or Triton, or a
// definition's reference) seen as a ki_kernel, so that it runs through the
// same RunWorkload as a C-ABI kernel: the same generated inputs, L2 flush,
// warm-up, timed calls, CUPTI spans and comparator.
//
// The Python runtime is loaded only here, with dlopen (RTLD_GLOBAL, so that
// torch's extension modules find its symbols), in the process that runs the
// kernel (ki run's child); ki links nothing of Python. Tensors reach the
// function as torch tensors made by torch.utils.dlpack.from_dlpack from a
// DLManagedTensor capsule over the harness's own buffers: no copies. Scalars
// (host memory by the ABI) become Python floats or ints. On CUDA the call
// runs under torch.cuda.ExternalStream(call->stream), so that everything it
// launches (Triton kernels, torch operators) goes on the harness's stream.
// Destination passing (flashinfer-bench's destination_passing_style: true)
// calls fn(*inputs, *outputs); otherwise fn(*inputs) returns the outputs
// (one tensor or a tuple), which are checked for count, shape and dtype and
// copied into the harness's outputs with Tensor.copy_ (a device-to-device
// copy, which CUPTI's kernel spans do not count).
//
// Thread-safety: one interpreter per process, used from one thread.
struct PythonRuntime {
  std::string library;             // libpython3.X.so to dlopen
  std::string home;                // PYTHONHOME (the interpreter's sys.base_prefix)
  std::vector<std::string> path;   // sys.path of the python3 that was asked (its site-packages)
};
struct PythonKernelSpec {
  std::string name;         // the kernel's name, for messages
  std::string definition;   // the definition it implements
  std::string source_dir;   // where its files are (put first on sys.path)
  std::string entry_file;   // relative to source_dir: "main.py", "pkg/kernel.py"
  std::string function;     // "run"
  bool destination_passing = false;
  int32_t device = KI_DEVICE_CPU;
  int device_index = 0;
  // Not empty: the sources are C++/CUDA for torch's binding (flashinfer-bench
  // `binding: torch`), built here by torch.utils.cpp_extension.load into a
  // pybind11 module whose `function` is called like a Python one.
  std::string torch_extension_dir;
};
// Loads the interpreter once (later calls must name the same runtime),
// imports the entry file as a module and finds the function. Up to 4 Python
// kernels may be loaded in one process. Errors name what failed: the
// library, the interpreter's start, an import (with the exception).
// `def` gives the inputs' count and the outputs' names.
Result<const ki_kernel*> LoadPythonKernel(const PythonRuntime& runtime, const PythonKernelSpec& spec,
                                          const Definition& def);

// ----------------------------------------------------------- environment
// What ki records of /proc/cpuinfo: the first processor's fields, each ""
// when the file has none (ARM kernels write neither), each as written after
// ": ". One read, through `env`; a read error is returned (the callers then
// record "unknown").
struct CpuInfo {
  std::string model_name;  // "model name"
  std::string vendor_id;   // "vendor_id": GenuineIntel, AuthenticAMD, ...
};
Result<CpuInfo> ReadCpuInfo(Env& env);

struct Environment {
  std::string captured_at;  // UTC, ISO 8601
  std::string host;
  std::string cpu_model;
  std::string cpu_vendor;   // cpuinfo's vendor_id ("" when it has none)
  int cpu_count = 0;
  std::string ki_version;
  bool gpu = false;
  gpu::DeviceEnvironment device;  // clocks at the start of the run
  gpu::ClockReading clocks_end;   // clocks at the end of the run
};
Environment CaptureHostEnvironment();

// ------------------------------------------------------------------ runs
enum class RunStatus {
  kPassed,
  kIncorrectShape,
  kIncorrectDtype,
  kIncorrectNumerical,
  kRuntimeError,
  kTimeout,
  kInvalidWorkload,
  // The workload needs more memory than the machine has (MemoryNeed): refused
  // before any input was generated; not a result of the kernel.
  kInsufficientMemory,
};
const char* RunStatusName(RunStatus status);  // "passed", "incorrect_numerical", ...

struct Correctness {
  bool checked = false;
  std::string reference;  // the reference kernel's name
  Tolerance tolerance;
  int runs = 0;           // checked calls, each on poisoned outputs
  std::vector<TensorCheck> tensors;  // the worst run's checks
  double max_abs_error = 0, max_rel_error = 0, matched_ratio = 0;
};

struct Timing {
  bool measured = false;
  std::string timer;  // "cupti_activity", "cuda_event" or "host_steady_clock"
  std::string timer_note;
  int warmup = 0, iterations = 0, trials = 0;
  bool l2_flush = false;
  uint64_t flush_bytes = 0;
  std::vector<std::vector<double>> samples_us;  // every sample, per trial
  std::vector<double> trial_medians_us;
  double latency_us = 0;  // mean of the trial medians: the headline
  SampleStats stats;      // over all samples
  double graph_per_call_us = -1;  // < 0: not measured
  int graph_calls = 0;
  std::string graph_note;
};

struct RunOptions {
  GeneratorOptions generator;
  Tolerance tolerance;
  bool check = true;
  int check_runs = 2;
  bool time = true;
  gpu::TimingOptions timing;
  // The reference to check against; nullptr picks ki's built-in CUDA
  // reference for CUDA kernels when there is one, else the CPU reference.
  const ki_kernel* reference = nullptr;
  double timeout_s = 60.0;
  // The GPU backend CUDA kernels run through; nullptr: gpu::CudaBackend().
  // Tests give a fake one to drive the device checks without a GPU.
  gpu::Backend* backend = nullptr;
};

struct RunResult {
  RunStatus status = RunStatus::kRuntimeError;
  std::string message;
  std::string kernel;
  std::string definition;
  std::string workload_uuid;
  uint64_t seed = 0;
  std::map<std::string, int64_t> axes;
  uint64_t minimum_bytes = 0;
  Correctness correctness;
  Timing timing;
  Environment environment;
};

// Runs `kernel` (CUDA through the CUDA backend, CPU in-process) on one
// workload: inputs, reference, poisoned checked calls, then timing. Never
// throws; every failure is a status in the result.
RunResult RunWorkload(const ki_kernel& kernel, const Definition& def, const Workload& workload,
                      const RunOptions& options);

// The result as JSON text (samples included unless include_samples is false).
std::string ToJson(const RunResult& result, bool include_samples = true, int indent = 2);

}  // namespace ki::harness
