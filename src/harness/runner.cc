// RunWorkload: inputs, reference, poisoned checked calls, timing.
#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>

#include "ki/env.h"
#include "ki/harness.h"

namespace ki::harness {
namespace {

constexpr uint8_t kPoison = 0xFF;  // all-ones: NaN in bf16, f16, f32 and f64; -1 in integers

// Guard zones around each output of a checked call. The ABI hands a kernel
// preallocated outputs; one that writes past an output's end (or before its
// start) changes whatever lies next to it, another tensor or nothing that
// anyone reads, and could still be judged correct. Each output of a checked
// call sits between two zones of a byte the poison is not, and a changed
// zone fails the run (runtime_error) saying where.
constexpr uint64_t kGuardBytes = 4096;  // a multiple of 256: the output keeps its alignment
constexpr uint8_t kGuardByte = 0x5A;

// "" when both zones of an output are intact, else what the kernel did,
// naming the changed byte nearest the output (1: adjacent).
std::string GuardFault(const uint8_t* before, const uint8_t* after, const char* kernel, const std::string& output) {
  for (uint64_t i = 0; i < kGuardBytes; ++i) {  // nearest the output first
    if (before[kGuardBytes - 1 - i] != kGuardByte)
      return std::string(kernel) + " wrote outside its output `" + output + "`: the byte " + std::to_string(i + 1) +
             " before its start changed";
  }
  for (uint64_t i = 0; i < kGuardBytes; ++i) {
    if (after[i] != kGuardByte)
      return std::string(kernel) + " wrote outside its output `" + output + "`: the byte " + std::to_string(i + 1) +
             " past its end changed";
  }
  return "";
}

std::string Lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

ki_tensor Describe(const std::string& name, ki_dtype dtype, const std::vector<int64_t>& shape, void* data,
                   int32_t device) {
  ki_tensor t;
  std::memset(&t, 0, sizeof(t));
  t.name = name.c_str();
  t.data = data;
  t.dtype = dtype;
  t.device = device;
  t.ndim = static_cast<int32_t>(shape.size());
  for (size_t i = 0; i < shape.size() && i < KI_MAX_DIMS; ++i) t.shape[i] = shape[i];
  return t;
}

ki_call MakeCall(const std::vector<ki_tensor>& in, const std::vector<ki_tensor>& out) {
  ki_call c;
  std::memset(&c, 0, sizeof(c));
  c.abi_version = KI_ABI_VERSION;
  c.struct_size = sizeof(ki_call);
  c.inputs = in.data();
  c.num_inputs = static_cast<int32_t>(in.size());
  c.outputs = out.data();
  c.num_outputs = static_cast<int32_t>(out.size());
  return c;
}

// Device memory owned for the length of one run.
class DeviceBuffers {
 public:
  explicit DeviceBuffers(gpu::Backend* be) : be_(be) {}
  ~DeviceBuffers() {
    for (void* p : ptrs_) be_->Free(p);
  }
  DeviceBuffers(const DeviceBuffers&) = delete;
  DeviceBuffers& operator=(const DeviceBuffers&) = delete;
  Result<void*> Alloc(uint64_t bytes) {
    KI_ASSIGN_OR_RETURN(void* p, be_->Alloc(bytes));
    if (p) ptrs_.push_back(p);
    return p;
  }

 private:
  gpu::Backend* be_;
  std::vector<void*> ptrs_;
};

void Fail(RunResult* r, RunStatus s, std::string msg) {
  r->status = s;
  r->message = std::move(msg);
}

RunStatus FromOutcome(const gpu::CallOutcome& o) {
  return o.kind == gpu::CallOutcome::Kind::kTimeout ? RunStatus::kTimeout : RunStatus::kRuntimeError;
}

// Folds one checked run into the result; returns false when it failed.
bool Judge(const std::vector<HostTensor>& got, const std::vector<HostTensor>& ref, const Tolerance& tol,
           RunResult* r) {
  std::vector<TensorCheck> checks;
  for (size_t i = 0; i < ref.size(); ++i) checks.push_back(CompareTensors(got[i], ref[i], tol));
  Correctness& c = r->correctness;
  auto badness = [](const std::vector<TensorCheck>& v) {
    int64_t m = 0;
    double e = 0;
    for (const auto& t : v) {
      m += t.mismatched + (t.shape_ok && t.dtype_ok ? 0 : 1);
      e = std::max(e, t.max_abs_error);
    }
    return std::make_pair(m, e);
  };
  if (c.runs == 0 || badness(checks) > badness(c.tensors)) c.tensors = checks;
  ++c.runs;
  c.max_abs_error = c.max_rel_error = 0;
  c.matched_ratio = 1.0;
  for (const auto& t : c.tensors) {
    c.max_abs_error = std::max(c.max_abs_error, t.max_abs_error);
    c.max_rel_error = std::max(c.max_rel_error, t.max_rel_error);
    c.matched_ratio = std::min(c.matched_ratio, t.matched_ratio);
  }
  for (const auto& t : checks) {
    if (!t.shape_ok) return Fail(r, RunStatus::kIncorrectShape, t.name + ": wrong shape"), false;
    if (!t.dtype_ok) return Fail(r, RunStatus::kIncorrectDtype, t.name + ": wrong dtype"), false;
  }
  for (const auto& t : checks) {
    if (!t.passed()) {
      Fail(r, RunStatus::kIncorrectNumerical,
           t.name + ": " + std::to_string(t.mismatched) + " of " + std::to_string(t.numel) +
               " elements outside tolerance (" + std::to_string(t.nonfinite) + " non-finite)");
      return false;
    }
  }
  return true;
}

void FillTiming(const gpu::TimingOptions& opt, std::vector<std::vector<double>> samples, const std::string& timer,
                Timing* t) {
  t->measured = true;
  t->timer = timer;
  t->warmup = opt.warmup;
  t->iterations = opt.iterations;
  t->trials = opt.trials;
  t->samples_us = std::move(samples);
  std::vector<double> all;
  double sum = 0;
  for (const auto& trial : t->samples_us) {
    const double m = Median(trial);
    t->trial_medians_us.push_back(m);
    sum += m;
    all.insert(all.end(), trial.begin(), trial.end());
  }
  t->latency_us = t->trial_medians_us.empty() ? NAN : sum / static_cast<double>(t->trial_medians_us.size());
  t->stats = Summarize(std::move(all));
}

gpu::Backend* BackendOf(const RunOptions& opt) { return opt.backend ? opt.backend : gpu::CudaBackend(); }

const ki_kernel* PickReference(const ki_kernel& kernel, const Definition& def, const RunOptions& opt) {
  if (opt.reference) return opt.reference;
  if (kernel.info.device == KI_DEVICE_CUDA) {
    if (gpu::Backend* be = BackendOf(opt))
      for (int i = 0; const ki_kernel* k = be->BuiltinKernel(i); ++i)
        if (def.name == k->info.definition && Lower(k->info.name).find("reference") != std::string::npos &&
            k != &kernel)
          return k;
  }
  return CpuReferenceKernel(def.name);
}

// Runs a CPU kernel on host inputs into fresh poisoned outputs, each
// between guard zones.
Result<std::vector<HostTensor>> RunOnHost(const ki_kernel& k, const Definition& def,
                                          const std::map<std::string, int64_t>& axes,
                                          std::vector<HostTensor>& inputs) {
  KI_ASSIGN_OR_RETURN(auto outputs, MakeOutputs(def, axes, kPoison));
  std::vector<std::vector<uint8_t>> guarded;  // zone, output, zone
  for (const HostTensor& t : outputs) {
    std::vector<uint8_t> g(t.bytes.size() + 2 * kGuardBytes, kGuardByte);
    std::memcpy(g.data() + kGuardBytes, t.bytes.data(), t.bytes.size());
    guarded.push_back(std::move(g));
  }
  std::vector<ki_tensor> in, out;
  for (auto& t : inputs) in.push_back(Describe(t.name, t.dtype, t.shape, t.bytes.data(), KI_DEVICE_CPU));
  for (size_t i = 0; i < outputs.size(); ++i) {
    const HostTensor& t = outputs[i];
    out.push_back(Describe(t.name, t.dtype, t.shape, guarded[i].data() + kGuardBytes, KI_DEVICE_CPU));
  }
  ki_call call = MakeCall(in, out);
  char err[512] = {0};
  call.error = err;
  call.error_capacity = sizeof(err);
  const int32_t rc = k.run(&call);
  if (rc != KI_OK)
    return Status::InvalidInput(std::string(k.info.name) + " failed (" + std::to_string(rc) + "): " + err);
  for (size_t i = 0; i < outputs.size(); ++i) {
    HostTensor& t = outputs[i];
    const uint8_t* g = guarded[i].data();
    if (std::string f = GuardFault(g, g + kGuardBytes + t.bytes.size(), k.info.name, t.name); !f.empty())
      return Status::InvalidInput(f);
    std::memcpy(t.bytes.data(), g + kGuardBytes, t.bytes.size());
  }
  return outputs;
}

void RunCuda(const ki_kernel& kernel, const Definition& def, const std::map<std::string, int64_t>& axes,
             std::vector<TensorPlan>& plans, const RunOptions& opt, RunResult* r) {
  gpu::Backend* be = BackendOf(opt);  // present: RunWorkload checked it

  DeviceBuffers mem(be);
  std::vector<ki_tensor> in, out;
  for (TensorPlan& p : plans) {
    if (p.shape.empty()) {  // scalars stay in host memory (the ABI's rule)
      in.push_back(Describe(p.name, p.dtype, p.shape, p.bytes.data(), KI_DEVICE_CPU));
      continue;
    }
    auto buf = mem.Alloc(p.nbytes());
    if (!buf.ok()) return Fail(r, RunStatus::kRuntimeError, buf.status().message());
    Status s = p.random ? be->FillRandom(*buf, p.dtype, static_cast<uint64_t>(p.numel()), p.key)
                        : be->CopyToDevice(*buf, p.bytes.data(), p.nbytes());
    if (!s.ok()) return Fail(r, RunStatus::kRuntimeError, p.name + ": " + s.message());
    in.push_back(Describe(p.name, p.dtype, p.shape, *buf, KI_DEVICE_CUDA));
  }
  auto host_out = MakeOutputs(def, axes, kPoison);
  if (!host_out.ok()) return Fail(r, RunStatus::kInvalidWorkload, host_out.status().message());
  for (HostTensor& t : *host_out) {  // each between guard zones
    auto buf = mem.Alloc(t.bytes.size() + 2 * kGuardBytes);
    if (!buf.ok()) return Fail(r, RunStatus::kRuntimeError, buf.status().message());
    uint8_t* base = static_cast<uint8_t*>(*buf);
    Status s = be->Fill(base, kGuardByte, kGuardBytes);
    if (s.ok()) s = be->Fill(base + kGuardBytes + t.bytes.size(), kGuardByte, kGuardBytes);
    if (!s.ok()) return Fail(r, RunStatus::kRuntimeError, s.message());
    out.push_back(Describe(t.name, t.dtype, t.shape, base + kGuardBytes, KI_DEVICE_CUDA));
  }
  ki_call call = MakeCall(in, out);
  // "" when every output's zones are intact after the calls so far.
  auto guard_fault = [&]() -> Result<std::string> {
    std::vector<uint8_t> before(kGuardBytes), after(kGuardBytes);
    for (size_t i = 0; i < out.size(); ++i) {
      const uint8_t* data = static_cast<const uint8_t*>(out[i].data);
      KI_RETURN_IF_ERROR(be->CopyToHost(before.data(), data - kGuardBytes, kGuardBytes));
      KI_RETURN_IF_ERROR(be->CopyToHost(after.data(), data + (*host_out)[i].bytes.size(), kGuardBytes));
      if (std::string f = GuardFault(before.data(), after.data(), kernel.info.name, (*host_out)[i].name); !f.empty())
        return f;
    }
    return std::string();
  };

  bool workspace_too_big = false;  // the Status with_workspace returned says why
  auto with_workspace = [&](const ki_kernel& k, ki_call* c) -> Status {
    c->workspace = nullptr;
    c->workspace_bytes = 0;
    if (!k.workspace_size) return Status::OK();
    uint64_t bytes = 0;
    char err[512] = {0};
    ki_call q = *c;
    q.error = err;
    q.error_capacity = sizeof(err);
    if (const int32_t rc = k.workspace_size(&q, &bytes); rc != KI_OK)
      return Status::InvalidInput(std::string(k.info.name) + ": workspace_size failed (" + std::to_string(rc) +
                                  "): " + err);
    // Not in the memory check before the inputs (EstimateMemoryNeed): the
    // ABI asks workspace_size with the call's tensors in place. Checked
    // here instead, against what is free now, so that a workspace larger
    // than the device is refused as such (insufficient_memory), not a bare
    // cudaMalloc out-of-memory.
    if (bytes > 0) {
      auto free_now = be->MemoryInfo();
      if (free_now.ok() && bytes > free_now->free_bytes) {
        workspace_too_big = true;
        return Status::IOError(std::string(k.info.name) + " asks for a workspace of " + FormatBytes(bytes) +
                               ", more than the " + FormatBytes(free_now->free_bytes) + " free of the " +
                               FormatBytes(free_now->total_bytes) + " of cuda:" +
                               std::to_string(r->environment.device.device) +
                               " once the run's inputs and outputs are there");
      }
    }
    KI_ASSIGN_OR_RETURN(void* ws, mem.Alloc(bytes));
    KI_RETURN_IF_ERROR(be->Fill(ws, 0, bytes));  // zeroed once; kernels leave it zeroed
    c->workspace = ws;
    c->workspace_bytes = bytes;
    return Status::OK();
  };
  if (Status s = with_workspace(kernel, &call); !s.ok())
    return Fail(r, workspace_too_big ? RunStatus::kInsufficientMemory : RunStatus::kRuntimeError, s.message());

  auto download = [&](const std::vector<ki_tensor>& dev) -> Result<std::vector<HostTensor>> {
    KI_ASSIGN_OR_RETURN(auto host, MakeOutputs(def, axes, 0));
    for (size_t i = 0; i < host.size(); ++i)
      KI_RETURN_IF_ERROR(be->CopyToHost(host[i].bytes.data(), dev[i].data, host[i].bytes.size()));
    return host;
  };

  if (opt.check) {
    const ki_kernel* ref = PickReference(kernel, def, opt);
    if (!ref) return Fail(r, RunStatus::kRuntimeError, "no reference kernel for " + def.name);
    r->correctness.checked = true;
    r->correctness.reference = ref->info.name;
    r->correctness.tolerance = opt.tolerance;
    std::vector<HostTensor> ref_out;
    if (ref->info.device == KI_DEVICE_CUDA) {
      std::vector<ki_tensor> rout;
      for (const HostTensor& t : *host_out) {
        auto buf = mem.Alloc(t.bytes.size());
        if (!buf.ok()) return Fail(r, RunStatus::kRuntimeError, buf.status().message());
        if (Status s = be->Fill(*buf, kPoison, t.bytes.size()); !s.ok())
          return Fail(r, RunStatus::kRuntimeError, s.message());
        rout.push_back(Describe(t.name, t.dtype, t.shape, *buf, KI_DEVICE_CUDA));
      }
      ki_call rc = MakeCall(in, rout);
      if (Status s = with_workspace(*ref, &rc); !s.ok())
        return Fail(r, workspace_too_big ? RunStatus::kInsufficientMemory : RunStatus::kRuntimeError, s.message());
      const gpu::CallOutcome o = be->Run(*ref, rc, opt.timeout_s);
      if (!o.ok()) return Fail(r, RunStatus::kRuntimeError, "reference " + std::string(ref->info.name) + ": " + o.message);
      auto got = download(rout);
      if (!got.ok()) return Fail(r, RunStatus::kRuntimeError, got.status().message());
      ref_out = std::move(*got);
    } else {
      std::vector<HostTensor> host_in;
      for (const TensorPlan& p : plans) host_in.push_back(Materialize(p));
      auto got = RunOnHost(*ref, def, axes, host_in);
      if (!got.ok()) return Fail(r, RunStatus::kRuntimeError, got.status().message());
      ref_out = std::move(*got);
    }
    for (int i = 0; i < std::max(1, opt.check_runs); ++i) {
      for (const ki_tensor& t : out) {
        Status s = be->Fill(t.data, kPoison, (*host_out)[&t - out.data()].bytes.size());
        if (!s.ok()) return Fail(r, RunStatus::kRuntimeError, s.message());
      }
      const gpu::CallOutcome o = be->Run(kernel, call, opt.timeout_s);
      if (!o.ok()) return Fail(r, FromOutcome(o), o.message);
      auto fault = guard_fault();
      if (!fault.ok()) return Fail(r, RunStatus::kRuntimeError, fault.status().message());
      if (!fault->empty()) return Fail(r, RunStatus::kRuntimeError, *fault);
      auto got = download(out);
      if (!got.ok()) return Fail(r, RunStatus::kRuntimeError, got.status().message());
      if (!Judge(*got, ref_out, opt.tolerance, r)) return;
    }
  }

  if (opt.time) {
    gpu::TimingOptions topt = opt.timing;
    topt.timeout_s = opt.timeout_s;
    gpu::TimingSamples ts = be->Time(kernel, call, topt);
    if (!ts.outcome.ok()) return Fail(r, FromOutcome(ts.outcome), "timing: " + ts.outcome.message);
    auto fault = guard_fault();  // also when nothing was checked (--no-check)
    if (!fault.ok()) return Fail(r, RunStatus::kRuntimeError, fault.status().message());
    if (!fault->empty()) return Fail(r, RunStatus::kRuntimeError, "timing: " + *fault);
    FillTiming(topt, std::move(ts.trials_us), ts.timer, &r->timing);
    r->timing.timer_note = ts.timer_note;
    r->timing.l2_flush = topt.flush_l2;
    r->timing.flush_bytes = ts.flush_bytes;
    r->timing.graph_per_call_us = ts.graph_per_call_us;
    r->timing.graph_calls = ts.graph_calls;
    r->timing.graph_note = ts.graph_note;
  }
  r->environment.clocks_end = be->ReadClocks();
  r->status = RunStatus::kPassed;
}

void RunCpu(const ki_kernel& kernel, const Definition& def, const std::map<std::string, int64_t>& axes,
            std::vector<TensorPlan>& plans, const RunOptions& opt, RunResult* r) {
  std::vector<HostTensor> inputs;
  for (const TensorPlan& p : plans) inputs.push_back(Materialize(p));
  if (kernel.workspace_size) {
    // CPU kernels get no workspace in ABI v1 (they can allocate outside `run`).
    return Fail(r, RunStatus::kRuntimeError, "CPU kernels with a workspace are not supported");
  }
  if (opt.check) {
    const ki_kernel* ref = opt.reference ? opt.reference : CpuReferenceKernel(def.name);
    if (!ref || ref->info.device != KI_DEVICE_CPU)
      return Fail(r, RunStatus::kRuntimeError, "no CPU reference kernel for " + def.name);
    r->correctness.checked = true;
    r->correctness.reference = ref->info.name;
    r->correctness.tolerance = opt.tolerance;
    auto ref_out = RunOnHost(*ref, def, axes, inputs);
    if (!ref_out.ok()) return Fail(r, RunStatus::kRuntimeError, ref_out.status().message());
    for (int i = 0; i < std::max(1, opt.check_runs); ++i) {
      auto got = RunOnHost(kernel, def, axes, inputs);  // fresh poisoned outputs each run
      if (!got.ok()) return Fail(r, RunStatus::kRuntimeError, got.status().message());
      if (!Judge(*got, *ref_out, opt.tolerance, r)) return;
    }
  }
  if (opt.time) {
    auto outputs = MakeOutputs(def, axes, kPoison);
    if (!outputs.ok()) return Fail(r, RunStatus::kInvalidWorkload, outputs.status().message());
    std::vector<ki_tensor> in, out;
    for (auto& t : inputs) in.push_back(Describe(t.name, t.dtype, t.shape, t.bytes.data(), KI_DEVICE_CPU));
    for (auto& t : *outputs) out.push_back(Describe(t.name, t.dtype, t.shape, t.bytes.data(), KI_DEVICE_CPU));
    const ki_call call = MakeCall(in, out);
    std::vector<std::vector<double>> trials;
    for (int trial = 0; trial < opt.timing.trials; ++trial) {
      for (int i = 0; i < opt.timing.warmup; ++i) kernel.run(&call);
      std::vector<double> s;
      for (int i = 0; i < opt.timing.iterations; ++i) {
        const auto t0 = std::chrono::steady_clock::now();
        const int32_t rc = kernel.run(&call);
        const auto t1 = std::chrono::steady_clock::now();
        if (rc != KI_OK) return Fail(r, RunStatus::kRuntimeError, "kernel returned " + std::to_string(rc));
        s.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
      }
      trials.push_back(std::move(s));
    }
    FillTiming(opt.timing, std::move(trials), "host_steady_clock", &r->timing);
    r->timing.timer_note = "CPU kernel: wall clock around each call, no cache flush";
  }
  r->status = RunStatus::kPassed;
}

}  // namespace

std::string FormatBytes(uint64_t bytes) {
  static const char* const kUnits[] = {"bytes", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  if (bytes < 1024) return std::to_string(bytes) + " bytes";
  double v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 1024 && u < 6) v /= 1024, ++u;
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.1f %s", v, kUnits[u]);
  return buf;
}

// Keep in step with RunCpu, RunCuda, RunOnHost and PlanInputs: each term
// below is a buffer one of them holds at the peak.
Result<MemoryNeed> EstimateMemoryNeed(const Definition& def, const std::map<std::string, int64_t>& axes,
                                      const MemoryNeedOptions& o) {
  // Saturating: the sums are compared with what the machine has, and each
  // tensor is already known to fit in int64.
  auto add = [](uint64_t a, uint64_t b) {
    uint64_t c = 0;
    return __builtin_add_overflow(a, b, &c) ? UINT64_MAX : c;
  };
  auto times = [](uint64_t k, uint64_t a) {
    uint64_t c = 0;
    return __builtin_mul_overflow(k, a, &c) ? UINT64_MAX : c;
  };
  uint64_t inputs = 0, device_inputs = 0, generated = 0, scratch = 0, outputs = 0;
  for (const TensorSpec& spec : def.inputs) {
    KI_ASSIGN_OR_RETURN(int64_t n, TensorElements("input", spec, axes));
    const uint64_t b = static_cast<uint64_t>(n) * DtypeSize(spec.dtype);
    inputs = add(inputs, b);
    if (!spec.shape.empty()) device_inputs = add(device_inputs, b);  // scalars stay on the host
    const bool random = spec.dtype == KI_DTYPE_BF16 || spec.dtype == KI_DTYPE_F16 || spec.dtype == KI_DTYPE_F32;
    if (!random || spec.shape.empty()) generated = add(generated, b);  // a plan holds their bytes beside the tensor
    auto pages = axes.find("num_pages");
    if (spec.name.size() > 8 && spec.name.ends_with("_indices") && pages != axes.end() && pages->second > 0)
      scratch = add(scratch, times(sizeof(int32_t), static_cast<uint64_t>(pages->second)));  // the permutation drawn from
  }
  uint64_t guards = 0;
  for (const TensorSpec& spec : def.outputs) {
    KI_ASSIGN_OR_RETURN(int64_t n, TensorElements("output", spec, axes));
    outputs = add(outputs, static_cast<uint64_t>(n) * DtypeSize(spec.dtype));
    guards = add(guards, 2 * kGuardBytes);
  }
  MemoryNeed need;
  std::string& hp = need.host_parts;
  auto part = [](std::string* text, const std::string& what, uint64_t bytes) {
    if (bytes == 0) return;
    *text += (text->empty() ? "" : ", ") + what + " " + FormatBytes(bytes);
  };
  if (!o.cuda_kernel) {
    // Inputs materialised; while checking, the reference's outputs, the
    // kernel's and their guard-zoned copy; timing, one set of outputs.
    const uint64_t held = o.check ? add(times(3, outputs), guards) : outputs;
    need.host_bytes = add(add(add(inputs, generated), scratch), held);
    part(&hp, "inputs", inputs);
    part(&hp, "generated index tensors (a second copy)", generated);
    part(&hp, "index generation", scratch);
    part(&hp, o.check ? "outputs x 3 (reference, result, guard-zoned copy)" : "outputs", held);
    return need;
  }
  // On a GPU the host holds the poisoned outputs' template and, while
  // checking, the downloaded result and the reference's (a CPU reference
  // also needs the inputs materialised and its own guard-zoned outputs).
  uint64_t checking = 0;
  if (o.check) checking = o.cuda_reference ? times(2, outputs) : add(add(inputs, times(2, outputs)), guards);
  need.host_bytes = add(add(add(generated, scratch), outputs), checking);
  part(&hp, "generated index tensors", generated);
  part(&hp, "index generation", scratch);
  part(&hp, "outputs", outputs);
  part(&hp, o.cuda_reference ? "result and reference outputs" : "CPU reference: inputs and outputs", checking);
  const uint64_t flush = o.flush_l2 ? times(static_cast<uint64_t>(std::max(1, o.flush_buffers)),
                                            (2 * o.l2_bytes + 15) / 16 * 16)
                                    : 0;
  const uint64_t dev_outputs = add(outputs, guards);
  const uint64_t dev_reference = o.check && o.cuda_reference ? outputs : 0;
  need.device_bytes = add(add(add(device_inputs, dev_outputs), dev_reference), flush);
  need.device_flush_bytes = flush;
  std::string& dp = need.device_parts;
  part(&dp, "inputs", device_inputs);
  part(&dp, "outputs with guard zones", dev_outputs);
  part(&dp, "reference outputs", dev_reference);
  part(&dp, "L2 flush", flush);
  return need;
}

const char* RunStatusName(RunStatus s) {
  switch (s) {
    case RunStatus::kPassed: return "passed";
    case RunStatus::kIncorrectShape: return "incorrect_shape";
    case RunStatus::kIncorrectDtype: return "incorrect_dtype";
    case RunStatus::kIncorrectNumerical: return "incorrect_numerical";
    case RunStatus::kRuntimeError: return "runtime_error";
    case RunStatus::kTimeout: return "timeout";
    case RunStatus::kInvalidWorkload: return "invalid_workload";
    case RunStatus::kInsufficientMemory: return "insufficient_memory";
  }
  return "unknown";
}

RunResult RunWorkload(const ki_kernel& kernel, const Definition& def, const Workload& workload,
                      const RunOptions& opt) {
  RunResult r;
  r.kernel = kernel.info.name ? kernel.info.name : "";
  r.definition = def.name;
  r.workload_uuid = workload.uuid;
  r.seed = opt.generator.seed;
  r.environment = CaptureHostEnvironment();
  if (kernel.info.abi_version != KI_ABI_VERSION || !kernel.run) {
    Fail(&r, RunStatus::kRuntimeError, "kernel table has another ABI version");
    return r;
  }
  if (kernel.info.definition && def.name != kernel.info.definition) {
    Fail(&r, RunStatus::kInvalidWorkload,
         "kernel " + r.kernel + " implements " + kernel.info.definition + ", not " + def.name);
    return r;
  }
  auto axes = ResolveAxes(def, workload);
  if (!axes.ok()) {
    Fail(&r, RunStatus::kInvalidWorkload, axes.status().message());
    return r;
  }
  r.axes = *axes;
  // The definition's own rules about its axes (len_indptr == batch_size + 1)
  // come first: a workload that breaks one reached the kernel and was its
  // runtime_error ("kv_indptr: wrong shape").
  if (Status st = CheckConstraints(def, *axes); !st.ok())
    return Fail(&r, RunStatus::kInvalidWorkload, st.message()), r;
  const bool cuda = kernel.info.device == KI_DEVICE_CUDA;
  gpu::Backend* be = cuda ? BackendOf(opt) : nullptr;
  if (cuda) {
    if (!be) return Fail(&r, RunStatus::kRuntimeError, "ki was built without CUDA"), r;
    if (be->DeviceCount() == 0) return Fail(&r, RunStatus::kRuntimeError, "no CUDA device"), r;
    auto env = be->Environment();
    if (!env.ok()) return Fail(&r, RunStatus::kRuntimeError, env.status().message()), r;
    r.environment.gpu = true;
    r.environment.device = *env;
  }
  // Sizes, then memory, before any input exists: a workload whose axes ask
  // for more than the machine has (2^40 pages) is refused saying so, instead
  // of ending in std::bad_alloc, an allocation the OOM killer answers, or a
  // size that wrapped around.
  MemoryNeedOptions mo;
  mo.cuda_kernel = cuda;
  mo.check = opt.check;
  if (cuda) {
    const ki_kernel* ref = opt.check ? PickReference(kernel, def, opt) : nullptr;
    mo.cuda_reference = ref && ref->info.device == KI_DEVICE_CUDA;
    mo.flush_l2 = opt.time && opt.timing.flush_l2;
    mo.flush_buffers = opt.timing.flush_kind == gpu::FlushKind::kZero ? 1 : 2;
    mo.l2_bytes = r.environment.device.l2_bytes;
  }
  auto need = EstimateMemoryNeed(def, *axes, mo);
  if (!need.ok()) return Fail(&r, RunStatus::kInvalidWorkload, need.status().message()), r;
  r.minimum_bytes = MinimumBytes(def, *axes);
  const std::string who = "workload " + (workload.uuid.empty() ? std::string("(no uuid)") : workload.uuid);
  // An unreadable /proc/meminfo leaves the host unchecked: the run child
  // still contains what follows. Read through the process's Env: it is a
  // fact of the machine, not a file ki writes, and the tests that fake it
  // call AvailableHostMemory with an Env of their own.
  if (auto avail = AvailableHostMemory(*Env::Default()); avail.ok() && need->host_bytes > *avail) {
    Fail(&r, RunStatus::kInsufficientMemory,
         who + " needs " + FormatBytes(need->host_bytes) + " of host memory (" + need->host_parts +
             "), more than the " + FormatBytes(*avail) + " this machine has available");
    return r;
  }
  if (cuda) {
    // Compared with what is free now, not the device's total: on a shared
    // GPU a workload within the total but not within what others left
    // failed later, inside the run, as a bare cudaMalloc out-of-memory. The
    // flush buffers the backend already holds are part of the need but not
    // free; they are counted as available up to what this run needs of them.
    auto mem = be->MemoryInfo();
    if (!mem.ok())
      return Fail(&r, RunStatus::kRuntimeError, "device memory of cuda:" + std::to_string(r.environment.device.device) +
                                                    ": " + mem.status().message()),
             r;
    const uint64_t held = std::min(mem->held_flush_bytes, need->device_flush_bytes);
    const uint64_t avail = mem->free_bytes > UINT64_MAX - held ? UINT64_MAX : mem->free_bytes + held;
    if (need->device_bytes > avail) {
      Fail(&r, RunStatus::kInsufficientMemory,
           who + " needs " + FormatBytes(need->device_bytes) + " of device memory (" + need->device_parts +
               "), more than the " + FormatBytes(avail) + " free of the " + FormatBytes(mem->total_bytes) +
               " of cuda:" + std::to_string(r.environment.device.device) + " (" + r.environment.device.name + ")");
      return r;
    }
  }
  auto plans = PlanInputs(def, workload, opt.generator);
  if (!plans.ok()) {
    Fail(&r, RunStatus::kInvalidWorkload, plans.status().message());
    return r;
  }
  if (cuda) RunCuda(kernel, def, *axes, *plans, opt, &r);
  else if (kernel.info.device == KI_DEVICE_CPU) RunCpu(kernel, def, *axes, *plans, opt, &r);
  else Fail(&r, RunStatus::kRuntimeError, "unknown kernel device");
  return r;
}

}  // namespace ki::harness
