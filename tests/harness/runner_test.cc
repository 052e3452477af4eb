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
