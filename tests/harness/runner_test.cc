// RunWorkload on CPU kernels: the checked-run protocol and its statuses.
#include <gtest/gtest.h>

#include <cstring>

#include "ki/gpu_backend.h"
#include "ki/gqa_paged_decode.h"
#include "ki/harness.h"
#include "testutil/testutil.h"

namespace ki::harness {
namespace {

Definition Def() {
  auto d = LoadDefinition(test::DataPath("flashinfer-bench/gqa_paged_decode_h32_kv4_d128_ps1.json"));
  EXPECT_TRUE(d.ok());
  return *d;
}

RunOptions Quick() {
  RunOptions o;
  o.timing.warmup = 1;
  o.timing.iterations = 3;
  o.timing.trials = 2;
  return o;
}

// Kernels that get it wrong in the ways a harness must catch.
int32_t RunReference(const ki_call* c) { return CpuReferenceKernel(gqa::kDefinitionName)->run(c); }
int32_t SkipsLastElement(const ki_call* c) {
  // Computes the right answer into the outputs, then "forgets" one element
  // by restoring what was there before (the poison).
  const ki_tensor& out = c->outputs[0];
  const size_t n = out.shape[0] * out.shape[1] * out.shape[2];
  uint16_t* o = static_cast<uint16_t*>(out.data);
  const uint16_t before = o[n - 1];
  const int32_t rc = RunReference(c);
  o[n - 1] = before;
  return rc;
}
int32_t Perturbs(const ki_call* c) {
  const int32_t rc = RunReference(c);
  float* lse = static_cast<float*>(c->outputs[1].data);
  lse[0] += 0.5f;
  return rc;
}
int32_t Refuses(const ki_call*) { return KI_ERR_UNSUPPORTED; }
// Right answers, and then 4 bytes written just past the end of `output`
// (or 2 just before the start of `lse`): nothing the comparison sees.
int32_t WritesPastTheEnd(const ki_call* c) {
  const int32_t rc = RunReference(c);
  const ki_tensor& out = c->outputs[0];
  const size_t bytes = out.shape[0] * out.shape[1] * out.shape[2] * 2;
  std::memset(static_cast<uint8_t*>(out.data) + bytes, 0, 4);
  return rc;
}
int32_t WritesBeforeTheStart(const ki_call* c) {
  const int32_t rc = RunReference(c);
  std::memset(static_cast<uint8_t*>(c->outputs[1].data) - 2, 0, 2);
  return rc;
}

ki_kernel Make(const char* name, int32_t (*run)(const ki_call*)) {
  return ki_kernel{{KI_ABI_VERSION, KI_DEVICE_CPU, name, gqa::kDefinitionName, "test"}, nullptr, run};
}

Workload Tiny() {
  Workload w = MakePagedDecodeWorkload("tiny", 3, 5, 0.0883883);
  w.axes["num_pages"] = 40;
  return w;
}

TEST(Runner, CpuReferencePassesAgainstItselfAndIsTimed) {
  const RunResult r = RunWorkload(*CpuReferenceKernel(gqa::kDefinitionName), Def(), Tiny(), Quick());
  ASSERT_EQ(r.status, RunStatus::kPassed) << r.message;
  EXPECT_TRUE(r.correctness.checked);
  EXPECT_EQ(r.correctness.runs, 2);
  EXPECT_EQ(r.correctness.max_abs_error, 0.0);
  EXPECT_EQ(r.correctness.matched_ratio, 1.0);
  EXPECT_EQ(r.timing.timer, "host_steady_clock");
  ASSERT_EQ(r.timing.samples_us.size(), 2u);
  EXPECT_EQ(r.timing.samples_us[0].size(), 3u);
  EXPECT_EQ(r.timing.stats.count, 6u);
  EXPECT_GT(r.timing.latency_us, 0);
  EXPECT_FALSE(r.environment.captured_at.empty());
}

TEST(Runner, UnwrittenElementIsCaughtByThePoison) {
  const ki_kernel k = Make("skips", SkipsLastElement);
  const RunResult r = RunWorkload(k, Def(), Tiny(), Quick());
  EXPECT_EQ(r.status, RunStatus::kIncorrectNumerical);
  ASSERT_EQ(r.correctness.tensors.size(), 2u);
  EXPECT_EQ(r.correctness.tensors[0].nonfinite, 1);
  EXPECT_FALSE(r.timing.measured) << "incorrect kernels are not timed";
}

TEST(Runner, NumericalErrorReportsMagnitudes) {
  const ki_kernel k = Make("perturbs", Perturbs);
  const RunResult r = RunWorkload(k, Def(), Tiny(), Quick());
  EXPECT_EQ(r.status, RunStatus::kIncorrectNumerical);
  EXPECT_NEAR(r.correctness.max_abs_error, 0.5, 1e-3);
  EXPECT_NEAR(r.correctness.matched_ratio, 1.0 - 1.0 / 96, 1e-9);
}

TEST(Runner, WritesOutsideAnOutputAreRuntimeErrors) {
  RunResult r = RunWorkload(Make("past", WritesPastTheEnd), Def(), Tiny(), Quick());
  EXPECT_EQ(r.status, RunStatus::kRuntimeError);
  EXPECT_NE(r.message.find("past wrote outside its output `output`: the byte 1 past its end changed"), std::string::npos)
      << r.message;
  EXPECT_FALSE(r.timing.measured);
  r = RunWorkload(Make("before", WritesBeforeTheStart), Def(), Tiny(), Quick());
  EXPECT_EQ(r.status, RunStatus::kRuntimeError);
  EXPECT_NE(r.message.find("before wrote outside its output `lse`: the byte 1 before its start changed"), std::string::npos)
      << r.message;
}

TEST(Runner, KernelErrorIsARuntimeError) {
  const ki_kernel k = Make("refuses", Refuses);
  EXPECT_EQ(RunWorkload(k, Def(), Tiny(), Quick()).status, RunStatus::kRuntimeError);
}

TEST(Runner, WrongDefinitionAndMissingAxis) {
  ki_kernel k = Make("other", RunReference);
  k.info.definition = "something_else";
  EXPECT_EQ(RunWorkload(k, Def(), Tiny(), Quick()).status, RunStatus::kInvalidWorkload);
  Workload w = Tiny();
  w.axes.erase("num_pages");
  EXPECT_EQ(RunWorkload(*CpuReferenceKernel(gqa::kDefinitionName), Def(), w, Quick()).status,
            RunStatus::kInvalidWorkload);
}

// len_indptr != batch_size + 1 breaks the definition's constraint: it
// reached the kernel ("kv_indptr: wrong shape", a runtime_error). Now it is
// refused before anything is sized or generated, naming the constraint.
int kCalls = 0;
int32_t Counts(const ki_call* c) { return ++kCalls, RunReference(c); }
TEST(Runner, AWorkloadBreakingAConstraintIsInvalidBeforeAnyInput) {
  Workload w = Tiny();
  w.axes["len_indptr"] = 5;  // batch_size 3
  kCalls = 0;
  const RunResult r = RunWorkload(Make("counts", Counts), Def(), w, Quick());
  EXPECT_EQ(r.status, RunStatus::kInvalidWorkload);
  EXPECT_EQ(r.message, "constraint 'len_indptr == batch_size + 1' does not hold: len_indptr = 5, batch_size = 3");
  EXPECT_EQ(kCalls, 0);
  EXPECT_EQ(r.minimum_bytes, 0u) << "refused before the workload was sized";
  EXPECT_FALSE(r.correctness.checked);
  EXPECT_FALSE(r.timing.measured);
  // Generation itself would have gone ahead: the constraint is the refusal.
  EXPECT_OK(PlanInputs(Def(), w, {}));
  kCalls = 0;
  EXPECT_EQ(RunWorkload(Make("counts", Counts), Def(), Tiny(), Quick()).status, RunStatus::kPassed);
  EXPECT_GT(kCalls, 0);
}

// Axes far past any machine (2^40 pages of 1 KiB) ended in std::bad_alloc
// (a runtime_error saying only that) or a child the OOM killer took: the
// harness now refuses before generating anything, saying what the workload
// needs and what the machine has.
TEST(Runner, WorkloadLargerThanTheMachineIsRefusedBeforeGenerating) {
  Workload w = Tiny();
  w.uuid = "absurd";
  w.axes["num_pages"] = int64_t{1} << 40;
  const RunResult r = RunWorkload(*CpuReferenceKernel(gqa::kDefinitionName), Def(), w, Quick());
  EXPECT_EQ(r.status, RunStatus::kInsufficientMemory) << r.message;
  EXPECT_STREQ(RunStatusName(r.status), "insufficient_memory");
  EXPECT_NE(r.message.find("workload absurd needs 2.0 PiB of host memory (inputs 2.0 PiB"), std::string::npos)
      << r.message;
  EXPECT_NE(r.message.find("this machine has available"), std::string::npos) << r.message;
  EXPECT_FALSE(r.correctness.checked);
  EXPECT_FALSE(r.timing.measured);
}

// A product of axes past int64 was a wrapped (small or negative) size.
TEST(Runner, SizesPastInt64AreInvalidWorkloadsNamingTheTensor) {
  Workload w = Tiny();
  w.axes["num_pages"] = int64_t{1} << 60;  // x 1 x 4 x 128 elements
  const RunResult r = RunWorkload(*CpuReferenceKernel(gqa::kDefinitionName), Def(), w, Quick());
  EXPECT_EQ(r.status, RunStatus::kInvalidWorkload);
  EXPECT_EQ(r.message,
            "input k_cache [num_pages, page_size, num_kv_heads, head_dim] = [1152921504606846976, 1, 4, 128]: "
            "the element count passes 2^63 - 1");
  w.axes["num_pages"] = int64_t{1} << 53;  // 2^62 elements fit; their 2^63 bytes do not
  auto need = EstimateMemoryNeed(Def(), *ResolveAxes(Def(), w), {});
  ASSERT_FALSE(need.ok());
  EXPECT_EQ(need.status().message(),
            "input k_cache [num_pages, page_size, num_kv_heads, head_dim] = [9007199254740992, 1, 4, 128]: "
            "4611686018427387904 elements of 2 bytes pass 2^63 - 1 bytes");
  Workload wide = Tiny();
  wide.axes["batch_size"] = int64_t{1} << 60;  // q: 2^72 bytes
  EXPECT_EQ(MinimumBytes(Def(), *ResolveAxes(Def(), wide)), UINT64_MAX) << "saturates, not wraps";
}

// The figure the check compares is what the CPU path holds at its peak.
TEST(Runner, MemoryNeedCountsWhatTheHarnessHolds) {
  const Definition def = Def();
  auto axes = ResolveAxes(def, Tiny());  // batch 3, 15 indices, 40 pages
  ASSERT_OK(axes);
  const uint64_t q = 3 * 32 * 128 * 2, kv = 40 * 1 * 4 * 128 * 2, indptr = 4 * 4, indices = 15 * 4, scale = 4;
  const uint64_t inputs = q + 2 * kv + indptr + indices + scale;
  const uint64_t outputs = 3 * 32 * 128 * 2 + 3 * 32 * 4, guards = 2 * 2 * 4096;
  auto need = EstimateMemoryNeed(def, *axes, {});
  ASSERT_OK(need);
  EXPECT_EQ(need->host_bytes, inputs + (indptr + indices + scale) + 40 * 4 + 3 * outputs + guards);
  EXPECT_EQ(need->device_bytes, 0u);
  MemoryNeedOptions gpu;
  gpu.cuda_kernel = gpu.cuda_reference = gpu.flush_l2 = true;
  gpu.l2_bytes = 50 << 20;
  need = EstimateMemoryNeed(def, *axes, gpu);
  ASSERT_OK(need);
  EXPECT_EQ(need->device_bytes, (inputs - scale) + outputs + guards + outputs + (100u << 20));
}

// A GPU that is not there: one device whose free and total memory the test
// sets, which runs nothing and allocates nothing (every Alloc fails) or,
// with `allocate`, hands out addresses nothing reads, as long as a request
// is within what is free.
class FakeGpu final : public gpu::Backend {
 public:
  gpu::DeviceMemory memory;
  uint64_t l2_bytes = 0;
  bool allocate = false;
  int allocs = 0;
  int calls = 0;
  int DeviceCount() override { return 1; }
  Status SetDevice(int) override { return Status::OK(); }
  Result<gpu::DeviceEnvironment> Environment() override {
    gpu::DeviceEnvironment e;
    e.name = "Fake GPU";
    e.memory_bytes = memory.total_bytes;
    e.l2_bytes = l2_bytes;
    return e;
  }
  gpu::ClockReading ReadClocks() override { return {}; }
  Result<gpu::DeviceMemory> MemoryInfo() override { return memory; }
  Result<void*> Alloc(uint64_t bytes) override {
    ++allocs;
    if (!allocate) return Status::IOError("the fake GPU allocates nothing");
    if (bytes > memory.free_bytes) return Status::IOError("cudaMalloc: out of memory");
    return reinterpret_cast<void*>(uintptr_t{4096} * static_cast<uintptr_t>(allocs));
  }
  void Free(void*) override {}
  Status Done() const { return allocate ? Status::OK() : Status::IOError("fake"); }
  Status CopyToDevice(void*, const void*, uint64_t) override { return Done(); }
  Status CopyToHost(void*, const void*, uint64_t) override { return Status::IOError("fake"); }
  Status Fill(void*, uint8_t, uint64_t) override { return Done(); }
  Status FillRandom(void*, int32_t, uint64_t, uint64_t) override { return Done(); }
  gpu::CallOutcome Run(const ki_kernel&, const ki_call&, double) override {
    ++calls;
    return {gpu::CallOutcome::Kind::kDeviceError, KI_ERR_LAUNCH, "fake"};
  }
  gpu::TimingSamples Time(const ki_kernel&, const ki_call&, const gpu::TimingOptions&) override {
    ++calls;
    gpu::TimingSamples t;
    t.outcome = {gpu::CallOutcome::Kind::kDeviceError, KI_ERR_LAUNCH, "fake"};
    return t;
  }
  const ki_kernel* BuiltinKernel(int) override { return nullptr; }
};

// The device check compared a workload's need with the device's total
// memory: on a shared GPU one that fit the total but not what other
// processes left failed later, in the run's child, as a bare cudaMalloc
// out-of-memory (a runtime_error). It is now compared with the free memory
// and refused before any input exists (insufficient_memory: ki run's exit
// 5), naming both figures.
TEST(Runner, WorkloadWithinTheGpuTotalButNotItsFreeMemoryIsRefused) {
  FakeGpu gpu;
  gpu.memory.total_bytes = uint64_t{80} << 30;
  gpu.memory.free_bytes = uint64_t{4} << 20;
  Workload w = Tiny();
  w.uuid = "shared-gpu";
  w.axes["num_pages"] = 4096;  // K and V caches: 4 MiB each
  RunOptions opt = Quick();
  opt.backend = &gpu;
  ki_kernel k = Make("cuda", RunReference);
  k.info.device = KI_DEVICE_CUDA;
  RunResult r = RunWorkload(k, Def(), w, opt);
  EXPECT_EQ(r.status, RunStatus::kInsufficientMemory) << r.message;
  EXPECT_NE(r.message.find("workload shared-gpu needs 8.1 MiB of device memory (inputs 8.0 MiB"), std::string::npos)
      << r.message;
  EXPECT_NE(r.message.find("more than the 4.0 MiB free of the 80.0 GiB of cuda:0 (Fake GPU)"), std::string::npos)
      << r.message;
  EXPECT_EQ(gpu.allocs, 0) << "refused before anything is allocated";
  EXPECT_EQ(gpu.calls, 0);
  EXPECT_TRUE(r.environment.gpu);

  // All of it free: the check lets it through, to the (fake) allocation.
  gpu.memory.free_bytes = gpu.memory.total_bytes;
  r = RunWorkload(k, Def(), w, opt);
  EXPECT_EQ(r.status, RunStatus::kRuntimeError) << r.message;
  EXPECT_EQ(r.message, "the fake GPU allocates nothing");
  EXPECT_GT(gpu.allocs, 0);

  // The L2 flush buffers the backend already holds (from an earlier timed
  // run in the process) are in the need but not free: available up to what
  // this run needs of them, no more.
  gpu.l2_bytes = 1 << 20;  // flush buffer: 2 MiB
  auto need = EstimateMemoryNeed(Def(), *ResolveAxes(Def(), w),
                                 {.cuda_kernel = true, .check = true, .flush_l2 = true, .l2_bytes = 1 << 20});
  ASSERT_OK(need);
  ASSERT_EQ(need->device_flush_bytes, 2u << 20);
  gpu.memory.free_bytes = need->device_bytes - (1 << 20);
  gpu.memory.held_flush_bytes = 0;
  gpu.allocs = 0;
  r = RunWorkload(k, Def(), w, opt);
  EXPECT_EQ(r.status, RunStatus::kInsufficientMemory) << r.message;
  gpu.memory.held_flush_bytes = 4 << 20;  // both flush buffers of FlushKind::kRead; this run needs one
  r = RunWorkload(k, Def(), w, opt);
  EXPECT_EQ(r.status, RunStatus::kRuntimeError) << "held flush buffers count as available: " << r.message;
  gpu.memory.free_bytes = need->device_bytes - (3 << 20);
  r = RunWorkload(k, Def(), w, opt);
  EXPECT_EQ(r.status, RunStatus::kInsufficientMemory) << "only the 2 MiB this run needs: " << r.message;
  EXPECT_NE(r.message.find("more than the " + FormatBytes(need->device_bytes - (1 << 20)) + " free of the 80.0 GiB"),
            std::string::npos)
      << r.message;
}

// A kernel's workspace (ki_kernel::workspace_size) is not in the check
// before the inputs: the ABI asks for it with the call's tensors in place.
// One larger than what is free then was a bare cudaMalloc out-of-memory
// (runtime_error, a stored result); it is now checked when asked for, and
// refused as insufficient_memory naming it, before it is allocated.
int32_t OneTebibyteOfWorkspace(const ki_call*, uint64_t* bytes) {
  *bytes = uint64_t{1} << 40;
  return KI_OK;
}
TEST(Runner, WorkspaceLargerThanTheFreeMemoryIsInsufficientMemory) {
  FakeGpu gpu;
  gpu.allocate = true;
  gpu.memory.total_bytes = uint64_t{80} << 30;
  gpu.memory.free_bytes = uint64_t{1} << 30;
  RunOptions opt = Quick();
  opt.backend = &gpu;
  ki_kernel k = Make("greedy", RunReference);
  k.info.device = KI_DEVICE_CUDA;
  k.workspace_size = OneTebibyteOfWorkspace;
  const RunResult r = RunWorkload(k, Def(), Tiny(), opt);
  EXPECT_EQ(r.status, RunStatus::kInsufficientMemory) << r.message;
  EXPECT_EQ(r.message,
            "greedy asks for a workspace of 1.0 TiB, more than the 1.0 GiB free of the 80.0 GiB of cuda:0 once the "
            "run's inputs and outputs are there");
  EXPECT_EQ(gpu.calls, 0);
}

TEST(Runner, CudaKernelWithoutDeviceIsARuntimeError) {
  gpu::Backend* be = gpu::CudaBackend();
  if (be && be->DeviceCount() > 0) GTEST_SKIP() << "a GPU is present; tests/gpu covers this path";
  ki_kernel k = Make("cuda", RunReference);
  k.info.device = KI_DEVICE_CUDA;
  const RunResult r = RunWorkload(k, Def(), Tiny(), Quick());
  EXPECT_EQ(r.status, RunStatus::kRuntimeError);
  EXPECT_FALSE(r.message.empty());
}

TEST(Runner, BuiltinsAreListed) {
  EXPECT_NE(FindBuiltinKernel("ki.gqa_paged_decode.cpu_reference"), nullptr);
  if (gpu::CudaBackend()) {
    EXPECT_NE(FindBuiltinKernel("ki.gqa_paged_decode.fast"), nullptr);
    EXPECT_NE(FindBuiltinKernel("ki.gqa_paged_decode.cuda_reference"), nullptr);
  }
  EXPECT_FALSE(KernelLibrary::Open("/nonexistent/libnothing.so").ok());
}

}  // namespace
}  // namespace ki::harness
