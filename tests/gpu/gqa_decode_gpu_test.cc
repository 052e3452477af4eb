// GPU tests of the GQA paged-decode kernels and the CUDA side of the
// harness. Without a CUDA device every test is skipped and the binary says
// so on one line (ctest's SKIP_REGULAR_EXPRESSION reads it).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "ki/gpu_backend.h"
#include "ki/gqa_paged_decode.h"
#include "ki/harness.h"

#if defined(KI_HAVE_CUDA_BACKEND)
#include "gqa_paged_decode/launch.h"
#endif

#ifndef KI_TEST_DATA_DIR
#error "KI_TEST_DATA_DIR must name tests/data"
#endif

namespace ki::harness {
namespace {

bool HaveGpu() {
  gpu::Backend* be = gpu::CudaBackend();
  return be && be->DeviceCount() > 0;
}

class GpuEnvironment : public ::testing::Environment {
 public:
  void SetUp() override {
    if (!HaveGpu()) {
      std::printf("GPU tests skipped: no CUDA device\n");
      std::fflush(stdout);
      GTEST_SKIP();
    }
    auto env = gpu::CudaBackend()->Environment();
    if (env.ok())
      std::printf("GPU: %s, cc %d.%d, %d SMs, driver %s, runtime %d\n", env->name.c_str(), env->cc_major,
                  env->cc_minor, env->sm_count, env->driver_version.c_str(), env->runtime_version);
  }
};
const auto* const kEnv = ::testing::AddGlobalTestEnvironment(new GpuEnvironment);

#define REQUIRE_GPU() \
  if (!HaveGpu()) GTEST_SKIP() << "no CUDA device"

// The build's paths, unless the environment names others: a test binary
// carried to a GPU machine without the build tree (bench/gpu/device_check.sh)
// points them at the copies it carried.
std::string PathFromEnv(const char* var, const char* built) {
  const char* v = std::getenv(var);
  return v && *v ? std::string(v) : std::string(built);
}

std::string Data(const std::string& rel) { return PathFromEnv("KI_TEST_DATA_DIR", KI_TEST_DATA_DIR) + "/" + rel; }

const Definition& Def() {
  static const Definition d = [] {
    auto r = LoadDefinition(Data("flashinfer-bench/gqa_paged_decode_h32_kv4_d128_ps1.json"));
    if (!r.ok()) std::abort();
    return *r;
  }();
  return d;
}

const ki_kernel& Fast() { return *FindBuiltinKernel("ki.gqa_paged_decode.fast"); }
const ki_kernel& CudaRef() { return *FindBuiltinKernel("ki.gqa_paged_decode.cuda_reference"); }

RunOptions CheckOnly(uint64_t seed) {
  RunOptions o;
  o.generator.seed = seed;
  o.check_runs = 2;
  o.time = false;
  return o;
}

std::string Describe(const RunResult& r) {
  return std::string(RunStatusName(r.status)) + " " + r.message + " max_abs=" +
         std::to_string(r.correctness.max_abs_error) + " matched=" + std::to_string(r.correctness.matched_ratio);
}

#if defined(KI_HAVE_CUDA_BACKEND)
// Forces a split plan for the length of a scope (restores auto after).
struct TuningScope {
  explicit TuningScope(gqa::FastTuning t) { gqa::SetFastTuning(t); }
  ~TuningScope() { gqa::SetFastTuning({}); }
};
#endif

TEST(GpuGenerator, DeviceBytesEqualHostBytes) {
  REQUIRE_GPU();
  gpu::Backend* be = gpu::CudaBackend();
  Workload w = MakePagedDecodeWorkload("gen", 4, 100, 0.088);
  auto plans = PlanInputs(Def(), w, {1234, LengthSplit::kRandom});
  ASSERT_TRUE(plans.ok());
  for (const TensorPlan& p : *plans) {
    if (!p.random) continue;
    auto buf = be->Alloc(p.nbytes());
    ASSERT_TRUE(buf.ok());
    ASSERT_TRUE(be->FillRandom(*buf, p.dtype, p.numel(), p.key).ok());
    std::vector<uint8_t> got(p.nbytes());
    ASSERT_TRUE(be->CopyToHost(got.data(), *buf, got.size()).ok());
    be->Free(*buf);
    EXPECT_EQ(got, Materialize(p).bytes) << p.name;
  }
}

TEST(GpuReference, CudaReferenceMatchesCpuFp64) {
  REQUIRE_GPU();
  auto ws = LoadWorkloads(Data("flashinfer-bench/gqa_paged_decode_h32_kv4_d128_ps1.jsonl"));
  ASSERT_TRUE(ws.ok());
  // Small and medium shapes: the CPU reference is slow on the largest.
  for (size_t i : {0u, 1u, 5u, 15u, 32u}) {
    RunOptions o = CheckOnly(7);
    o.reference = CpuReferenceKernel(Def().name);
    const RunResult r = RunWorkload(CudaRef(), Def(), (*ws)[i], o);
    EXPECT_EQ(r.status, RunStatus::kPassed) << "workload " << i << ": " << Describe(r);
    EXPECT_LT(r.correctness.max_abs_error, 5e-3) << i;
  }
}

TEST(GpuFast, MatchesReferenceOnEveryWorkloadShape) {
  REQUIRE_GPU();
  auto ws = LoadWorkloads(Data("flashinfer-bench/gqa_paged_decode_h32_kv4_d128_ps1.jsonl"));
  ASSERT_TRUE(ws.ok());
  ASSERT_EQ(ws->size(), 48u);
  double worst = 0;
  for (uint64_t seed : {0ull, 1ull, 2ull}) {
    for (size_t i = 0; i < ws->size(); ++i) {
      const RunResult r = RunWorkload(Fast(), Def(), (*ws)[i], CheckOnly(seed));
      EXPECT_EQ(r.status, RunStatus::kPassed) << "workload " << i << " seed " << seed << ": " << Describe(r);
      worst = std::max(worst, r.correctness.max_abs_error);
    }
  }
  std::printf("fast vs cuda_reference over 48 workloads x 3 seeds: worst max_abs_error %.3e\n", worst);
}

TEST(GpuFast, MatchesCpuFp64Directly) {
  REQUIRE_GPU();
  auto ws = LoadWorkloads(Data("flashinfer-bench/gqa_paged_decode_h32_kv4_d128_ps1.jsonl"));
  ASSERT_TRUE(ws.ok());
  for (size_t i : {1u, 9u, 32u}) {
    RunOptions o = CheckOnly(11);
    o.reference = CpuReferenceKernel(Def().name);
    const RunResult r = RunWorkload(Fast(), Def(), (*ws)[i], o);
    EXPECT_EQ(r.status, RunStatus::kPassed) << "workload " << i << ": " << Describe(r);
  }
}

TEST(GpuFast, EmptySequences) {
  REQUIRE_GPU();
  struct Case {
    std::vector<int64_t> indptr;
  };
  const std::vector<Case> cases = {
      {{0, 0}},                       // one empty sequence
      {{0, 0, 0, 0}},                 // all empty
      {{0, 0, 300, 300, 301, 301}},   // empty first, middle and last
      {{0, 5000, 5000, 5003}},        // a long one (split) next to an empty one
  };
  for (const Case& c : cases) {
    const int64_t batch = static_cast<int64_t>(c.indptr.size()) - 1;
    const int64_t total = c.indptr.back();
    Workload w = MakePagedDecodeWorkload("empty", batch, 1, 0.0883883);
    w.axes["num_kv_indices"] = total;
    w.axes["num_pages"] = total + 17;
    w.inputs["kv_indptr"].kind = InputSource::Kind::kValues;
    w.inputs["kv_indptr"].values = c.indptr;
    for (uint64_t seed : {0ull, 5ull}) {
      const RunResult r = RunWorkload(Fast(), Def(), w, CheckOnly(seed));
      EXPECT_EQ(r.status, RunStatus::kPassed) << "indptr ending " << total << ": " << Describe(r);
    }
  }
}

TEST(GpuFast, RaggedAndSplitPlans) {
  REQUIRE_GPU();
#if defined(KI_HAVE_CUDA_BACKEND)
  Workload w = MakePagedDecodeWorkload("ragged", 7, 1, 0.0883883);
  w.axes["num_kv_indices"] = 4099;
  w.axes["num_pages"] = 5000;
  // Every plan shape: one chunk per sequence, many small chunks, odd sizes,
  // each pipeline depth.
  const gqa::FastTuning tunings[] = {
      {0, 0, 0, 0}, {16, 0, 0, 0}, {48, 0, 0, 2}, {1000000, 0, 0, 0}, {0, 8, 16, 4}, {333, 0, 0, 3},
  };
  for (const gqa::FastTuning& t : tunings) {
    TuningScope scope(t);
    for (uint64_t seed : {3ull, 4ull}) {
      const RunResult r = RunWorkload(Fast(), Def(), w, CheckOnly(seed));
      EXPECT_EQ(r.status, RunStatus::kPassed)
          << "chunk " << t.chunk_tokens << " waves " << t.waves << " stages " << t.stages << ": " << Describe(r);
    }
  }
#endif
}

#if defined(KI_HAVE_CUDA_BACKEND)
// A workload with explicit sequence lengths (pages drawn at random).
Workload WithLengths(const char* name, const std::vector<int64_t>& lens) {
  std::vector<int64_t> indptr(1, 0);
  for (int64_t l : lens) indptr.push_back(indptr.back() + l);
  Workload w = MakePagedDecodeWorkload(name, static_cast<int64_t>(lens.size()), 1, 0.0883883);
  w.axes["num_kv_indices"] = indptr.back();
  w.axes["num_pages"] = indptr.back() + 29;
  w.inputs["kv_indptr"].kind = InputSource::Kind::kValues;
  w.inputs["kv_indptr"].values = indptr;
  return w;
}
#endif

TEST(GpuFast, EveryModeDepthAndClusterSize) {
  REQUIRE_GPU();
#if defined(KI_HAVE_CUDA_BACKEND)
  // Short and long single sequences (cluster mode's home, with its kv_indptr
  // prediction), ragged batches with empty sequences, a batch of equal ones.
  const std::vector<Workload> ws = {
      WithLengths("one-1", {1}),
      WithLengths("one-17", {17}),
      WithLengths("one-362", {362}),
      WithLengths("one-3001", {3001}),
      WithLengths("ragged", {0, 700, 5, 0, 2100, 33, 16, 0}),
      WithLengths("equal", {512, 512, 512, 512}),
      // Long and ragged (many chunks per sequence, several waves; the
      // automatic plan groups chunks in clusters and the 9000-token
      // sequences span several), equal lengths (automatic: one cluster per
      // sequence), many ragged sequences (split and cluster: the prediction
      // misses and the blocks re-plan; at depths where one block fits an SM,
      // with chunk_any shorter than chunk).
      WithLengths("long-ragged", {9000, 300, 0, 9000, 7}),
      WithLengths("equal-16", std::vector<int64_t>(16, 2100)),
      WithLengths("ragged-40", {900, 15, 3000, 0, 1200, 64, 700, 2500, 33, 1000, 1000, 1, 4000, 800, 650, 1300, 0, 2200,
                                90, 1700, 1100, 350, 5000, 17, 600, 1500, 2400, 80, 999, 1001, 3100, 40, 700, 700,
                                1800, 260, 1400, 5, 3333, 1234}),
  };
  struct Variant {
    gqa::FastTuning t;
    const char* what;
  };
  std::vector<Variant> vs;
  vs.push_back({{}, "auto"});
  for (int stages : {2, 3, 4}) {
    vs.push_back({{0, 0, 0, stages, gqa::kModeLegacy, 0, 0}, "legacy"});
    vs.push_back({{0, 0, 0, stages, gqa::kModeSplit, 0, 0}, "split"});
    vs.push_back({{0, 0, 0, stages, gqa::kModeSplit, 0, 2}, "split, no L2 hint"});
    vs.push_back({{16, 0, 0, stages, gqa::kModeSplit, 0, 0}, "split, chunk 16"});
    vs.push_back({{0, 0, 0, stages, gqa::kModeSplit, 0, 1}, "split, L2 hint"});
    vs.push_back({{0, 0, 0, stages, gqa::kModeSplit, 0, 0, 1}, "split, 1 block per SM"});
    vs.push_back({{0, 4, 16, stages, gqa::kModeSplit, 0, 0}, "split, 4 waves"});
    for (int cs : {1, 2, 3, 8, 12, 16}) vs.push_back({{0, 0, 0, stages, gqa::kModeCluster, cs, 0}, "cluster"});
    for (int cs : {5, 7}) vs.push_back({{0, 0, 0, stages, gqa::kModeCluster, cs, 2}, "cluster, no L2 hint"});
    // Clusters of small work items: several clusters per sequence, merged globally.
    vs.push_back({{16, 0, 0, stages, gqa::kModeCluster, 4, 0}, "cluster, 16 tokens per block"});
    vs.push_back({{100, 0, 0, stages, gqa::kModeCluster, 3, 0}, "cluster, 100 tokens per block"});
    vs.push_back({{0, 0, 0, stages, gqa::kModeLegacy, 0, 1}, "legacy, L2 hint"});
    vs.push_back({{16, 0, 0, stages, gqa::kModeLegacy, 0, 0}, "legacy, chunk 16"});
    vs.push_back({{0, 0, 0, stages, gqa::kModeCluster, 0, 0}, "cluster auto"});
  }
  for (const Variant& v : vs) {
    TuningScope scope(v.t);
    for (const Workload& w : ws) {
      const RunResult r = RunWorkload(Fast(), Def(), w, CheckOnly(13));
      EXPECT_EQ(r.status, RunStatus::kPassed) << w.uuid << " " << v.what << " stages " << v.t.stages << " cluster "
                                              << v.t.cluster << ": " << Describe(r);
    }
  }
#endif
}

TEST(GpuFast, WholeSequenceClustersAndTheirMissPlan) {
  REQUIRE_GPU();
#if defined(KI_HAVE_CUDA_BACKEND)
  // 12 sequences of 2048 tokens: where one cluster per sequence fills most
  // SMs (H100/H200: clusters of 8 on 96 of 132), the automatic plan makes
  // each sequence one cluster's work item and keeps a shorter chunk for a
  // prediction miss. Both paths against the reference: the equal lengths the
  // prediction expects, and ragged lengths with the same batch and total
  // (so the same plan, a missed prediction and the re-plan).
  std::vector<int64_t> ragged;
  for (int i = 0; i < 12; ++i) ragged.push_back(i % 3 == 0 ? 4000 : (i % 3 == 1 ? 100 : 2044));
  const std::vector<Workload> ws = {WithLengths("equal-12", std::vector<int64_t>(12, 2048)),
                                    WithLengths("ragged-12", ragged)};
  gqa::Args a;
  a.batch = 12;
  a.num_kv_indices = 12 * 2048;
  gqa::FastPlan plan;
  ASSERT_EQ(gqa::PlanFast(a, &plan), KI_OK);
  std::printf("auto plan for 12 x 2048: mode %d, cluster %d, chunk %d, after a miss %d, %d stages\n", plan.mode,
              plan.cluster, plan.chunk, plan.chunk_any, plan.stages);
  if (plan.mode == gqa::kModeCluster && plan.chunk > plan.chunk_any) {
    EXPECT_GE(plan.chunk, 2049);  // a work item holds a whole sequence of avg + 1 tokens
  }
  for (const Workload& w : ws) {
    for (uint64_t seed : {21ull, 22ull}) {
      const RunResult r = RunWorkload(Fast(), Def(), w, CheckOnly(seed));
      EXPECT_EQ(r.status, RunStatus::kPassed) << w.uuid << " seed " << seed << ": " << Describe(r);
    }
  }
#endif
}

TEST(GpuFast, PredictionMissIsRedone) {
  REQUIRE_GPU();
#if defined(KI_HAVE_CUDA_BACKEND)
  // Split and cluster modes predict kv_indptr as the equal split of
  // num_kv_indices over the batch. Calls whose kv_indptr says otherwise (the
  // harness never makes a batch-1 one) must still be right, whichever entry
  // differs: compare with the CUDA reference on the same buffers.
  gpu::Backend* be = gpu::CudaBackend();
  const int64_t n = 700, pages = 1000, max_batch = 4;
  auto q = be->Alloc(max_batch * 32 * 128 * 2);
  auto k = be->Alloc(pages * 4 * 128 * 2);
  auto v = be->Alloc(pages * 4 * 128 * 2);
  auto ind = be->Alloc(n * 4);
  auto ptr = be->Alloc((max_batch + 1) * 4);
  auto out_f = be->Alloc(max_batch * 32 * 128 * 2), out_r = be->Alloc(max_batch * 32 * 128 * 2);
  auto lse_f = be->Alloc(max_batch * 32 * 4), lse_r = be->Alloc(max_batch * 32 * 4);
  ASSERT_TRUE(q.ok() && k.ok() && v.ok() && ind.ok() && ptr.ok() && out_f.ok() && out_r.ok() && lse_f.ok() && lse_r.ok());
  ASSERT_TRUE(be->FillRandom(*q, KI_DTYPE_BF16, max_batch * 32 * 128, 101).ok());
  ASSERT_TRUE(be->FillRandom(*k, KI_DTYPE_BF16, pages * 512, 102).ok());
  ASSERT_TRUE(be->FillRandom(*v, KI_DTYPE_BF16, pages * 512, 103).ok());
  std::vector<int32_t> idx(n);
  for (int64_t i = 0; i < n; ++i) idx[i] = static_cast<int32_t>((i * 379 + 11) % pages);
  ASSERT_TRUE(be->CopyToDevice(*ind, idx.data(), n * 4).ok());
  struct Variant {
    int mode, cluster, chunk;
  };
  const Variant variants[] = {{gqa::kModeCluster, 1, 0},  {gqa::kModeCluster, 4, 0},  {gqa::kModeCluster, 16, 0},
                              {gqa::kModeCluster, 2, 64}, {gqa::kModeSplit, 0, 0},    {gqa::kModeSplit, 0, 64},
                              {gqa::kModeSplit, 0, 100000}};
  // The predicted splits ({0, 700}, {0, 234, 467, 700}, {0, 175, 350, 525, 700})
  // and misses: in the first, a middle or the last entry, and sequences
  // whose chunk counts differ from the prediction's.
  const std::vector<std::vector<int32_t>> indptrs = {
      {0, 695}, {5, 700}, {3, 3}, {0, 700},
      {0, 234, 467, 700}, {0, 233, 467, 700}, {0, 0, 700, 700}, {1, 234, 467, 700},
      {0, 175, 350, 525, 700}, {0, 175, 350, 525, 699}, {0, 10, 20, 690, 700}, {0, 600, 610, 620, 700},
  };
  for (const Variant& var : variants) {
    const int cs = var.cluster;
    for (const std::vector<int32_t>& hp : indptrs) {
      const int64_t batch = static_cast<int64_t>(hp.size()) - 1;
      ASSERT_TRUE(be->CopyToDevice(*ptr, hp.data(), hp.size() * 4).ok());
      gqa::Args a;
      a.batch = batch;
      a.num_pages = pages;
      a.num_kv_indices = n;
      a.sm_scale = 0.0883883f;
      a.q = *q;
      a.k_cache = *k;
      a.v_cache = *v;
      a.kv_indptr = static_cast<const int32_t*>(*ptr);
      a.kv_indices = static_cast<const int32_t*>(*ind);
      a.lse = static_cast<float*>(*lse_f);
      a.out = *out_f;
      gqa::SetFastTuning({var.chunk, 0, 0, 0, var.mode, cs, 0});
      gqa::FastPlan plan;
      ASSERT_EQ(gqa::PlanFast(a, &plan), KI_OK);
      gqa::SetFastTuning({});
      ASSERT_EQ(plan.mode, var.mode);
      ASSERT_TRUE(plan.predict);
      void* ws = nullptr;
      if (plan.workspace_bytes > 0) {
        auto w = be->Alloc(plan.workspace_bytes);
        ASSERT_TRUE(w.ok());
        ws = *w;
        ASSERT_TRUE(be->Fill(ws, 0, plan.workspace_bytes).ok());
      }
      ASSERT_EQ(gqa::LaunchFast(a, plan, ws, plan.workspace_bytes, nullptr), KI_OK);
      // Twice: the counters must be back to zero after the first call.
      ASSERT_EQ(gqa::LaunchFast(a, plan, ws, plan.workspace_bytes, nullptr), KI_OK);
      a.lse = static_cast<float*>(*lse_r);
      a.out = *out_r;
      ASSERT_EQ(gqa::LaunchReference(a, nullptr), KI_OK);
      const size_t rows = static_cast<size_t>(batch) * 32;
      std::vector<uint16_t> of(rows * 128), orf(rows * 128);
      std::vector<float> lf(rows), lr(rows);
      ASSERT_TRUE(be->CopyToHost(of.data(), *out_f, of.size() * 2).ok());
      ASSERT_TRUE(be->CopyToHost(orf.data(), *out_r, orf.size() * 2).ok());
      ASSERT_TRUE(be->CopyToHost(lf.data(), *lse_f, rows * 4).ok());
      ASSERT_TRUE(be->CopyToHost(lr.data(), *lse_r, rows * 4).ok());
      auto bf = [](uint16_t x) {
        const uint32_t u = static_cast<uint32_t>(x) << 16;
        float f;
        std::memcpy(&f, &u, 4);
        return f;
      };
      double worst = 0;
      for (size_t i = 0; i < of.size(); ++i) worst = std::max(worst, static_cast<double>(std::fabs(bf(of[i]) - bf(orf[i]))));
      if (ws) be->Free(ws);
      std::string what = "mode " + std::to_string(var.mode) + " cluster " + std::to_string(cs) + " chunk " +
                         std::to_string(var.chunk) + " indptr {";
      for (int32_t x : hp) what += std::to_string(x) + ",";
      what += "}";
      EXPECT_LT(worst, 1e-2) << what;
      for (size_t h = 0; h < rows; ++h) {
        if (std::isinf(lr[h])) {
          EXPECT_TRUE(std::isinf(lf[h]) && lf[h] < 0) << what << " row " << h;
        } else {
          EXPECT_NEAR(lf[h], lr[h], 1e-2) << what << " row " << h;
        }
      }
    }
  }
  for (void* p : {*q, *k, *v, *ind, *ptr, *out_f, *out_r, *lse_f, *lse_r}) be->Free(p);
#endif
}

TEST(GpuFast, RepeatedCallsReuseTheWorkspace) {
  REQUIRE_GPU();
  // Checked calls after timing (and after graph replays) prove the kernel
  // left its workspace reusable.
  Workload w = MakePagedDecodeWorkload("repeat", 3, 2000, 0.0883883);
  RunOptions o;
  o.check_runs = 3;
  o.timing.warmup = 2;
  o.timing.iterations = 5;
  o.timing.trials = 2;
  o.timing.graph_calls = 4;
  o.timing.graph_replays = 2;
  const RunResult r = RunWorkload(Fast(), Def(), w, o);
  ASSERT_EQ(r.status, RunStatus::kPassed) << Describe(r);
  EXPECT_TRUE(r.timing.timer == "cupti_activity" || r.timing.timer == "cuda_event") << r.timing.timer;
  std::printf("timer: %s %s\n", r.timing.timer.c_str(), r.timing.timer_note.c_str());
  ASSERT_EQ(r.timing.samples_us.size(), 2u);
  for (const auto& trial : r.timing.samples_us) {
    ASSERT_EQ(trial.size(), 5u);
    for (double s : trial) EXPECT_GT(s, 0.0);
  }
  EXPECT_GT(r.timing.graph_per_call_us, 0.0) << r.timing.graph_note;
  // And once more, checked, after all of that in the same process.
  const RunResult again = RunWorkload(Fast(), Def(), w, CheckOnly(9));
  EXPECT_EQ(again.status, RunStatus::kPassed) << Describe(again);
  EXPECT_FALSE(r.environment.device.name.empty());
}

// The fast kernel's right answer, then 4 bytes written just past the end of
// its first output (`output`), on the call's stream: nothing the comparison
// sees, so only the harness's guard zones can catch it.
int32_t FastThenPastTheEnd(const ki_call* c) {
  const int32_t rc = Fast().run(c);
  if (rc != KI_OK) return rc;
  const ki_tensor& o = c->outputs[0];
  const uint64_t bytes = static_cast<uint64_t>(o.shape[0] * o.shape[1] * o.shape[2]) * 2;
  return gpu::CudaBackend()->Fill(static_cast<uint8_t*>(o.data) + bytes, 0, 4).ok() ? KI_OK : KI_ERR_LAUNCH;
}

TEST(GpuHarness, WritesPastAnOutputAreRuntimeErrors) {
  REQUIRE_GPU();
  ki_kernel k = Fast();
  k.info.name = "past-the-end";
  k.run = FastThenPastTheEnd;
  const Workload w = MakePagedDecodeWorkload("guard", 3, 100, 0.0883883);
  RunResult r = RunWorkload(k, Def(), w, CheckOnly(5));
  EXPECT_EQ(r.status, RunStatus::kRuntimeError) << Describe(r);
  EXPECT_NE(r.message.find("past-the-end wrote outside its output `output`: the byte 1 past its end changed"),
            std::string::npos)
      << r.message;
  RunOptions timed_only;  // unchecked timing runs are guarded too
  timed_only.check = false;
  timed_only.timing.warmup = 1;
  timed_only.timing.iterations = 2;
  timed_only.timing.trials = 1;
  r = RunWorkload(k, Def(), w, timed_only);
  EXPECT_EQ(r.status, RunStatus::kRuntimeError) << Describe(r);
  EXPECT_NE(r.message.find("timing: past-the-end wrote outside"), std::string::npos) << r.message;
  // The kernel itself, unwrapped, passes with the same guards.
  EXPECT_EQ(RunWorkload(Fast(), Def(), w, CheckOnly(5)).status, RunStatus::kPassed);
}

// The device check compared a workload's need with the device's total
// memory; on a shared GPU one within the total but not within what was free
// failed inside the run as a cudaMalloc out-of-memory. Here this process
// plays the other tenant: it holds all but 4 GiB of the free memory, and a
// workload needing about 8 GiB (K and V caches of 2^22 pages) is refused
// before anything is allocated, naming what is free and the total; once
// the memory is given back, the same workload runs and passes.
TEST(GpuHarness, WorkloadWithinTotalButNotFreeMemoryIsRefused) {
  REQUIRE_GPU();
  gpu::Backend* be = gpu::CudaBackend();
  auto env = be->Environment();
  ASSERT_TRUE(env.ok()) << env.status().message();
  auto mem = be->MemoryInfo();
  ASSERT_TRUE(mem.ok()) << mem.status().message();
  EXPECT_LE(mem->free_bytes, mem->total_bytes);
  EXPECT_EQ(mem->total_bytes, env->memory_bytes);
  constexpr uint64_t kLeft = uint64_t{4} << 30;
  if (mem->free_bytes < 3 * kLeft) GTEST_SKIP() << "less than 12 GiB free on this GPU";
  Workload w = MakePagedDecodeWorkload("shared-gpu", 4, 100, 0.0883883);
  w.axes["num_pages"] = int64_t{1} << 22;  // 4 GiB each of K and V
  auto hog = be->Alloc(mem->free_bytes - kLeft);
  ASSERT_TRUE(hog.ok()) << hog.status().message();
  RunResult r = RunWorkload(Fast(), Def(), w, CheckOnly(3));
  auto after = be->MemoryInfo();
  be->Free(*hog);
  EXPECT_EQ(r.status, RunStatus::kInsufficientMemory) << Describe(r);
  EXPECT_NE(r.message.find("of device memory (inputs 8.0 GiB"), std::string::npos) << r.message;
  ASSERT_TRUE(after.ok());
  EXPECT_NE(r.message.find(" free of the " + FormatBytes(mem->total_bytes) + " of cuda:"), std::string::npos)
      << r.message;
  EXPECT_LE(after->free_bytes, kLeft + (uint64_t{256} << 20)) << "the hog held what it should";
  r = RunWorkload(Fast(), Def(), w, CheckOnly(3));
  EXPECT_EQ(r.status, RunStatus::kPassed) << Describe(r);
}

TEST(GpuAbi, SharedLibraryKernelsRunThroughDlopen) {
  REQUIRE_GPU();
#if defined(KI_GQA_KERNELS_SO)
  auto lib = KernelLibrary::Open(PathFromEnv("KI_GQA_KERNELS_SO", KI_GQA_KERNELS_SO));
  ASSERT_TRUE(lib.ok()) << lib.status().ToString();
  const ki_kernel* k = (*lib)->Find("ki.gqa_paged_decode.fast");
  ASSERT_NE(k, nullptr);
  Workload w = MakePagedDecodeWorkload("dlopen", 5, 700, 0.0883883);
  const RunResult r = RunWorkload(*k, Def(), w, CheckOnly(21));
  EXPECT_EQ(r.status, RunStatus::kPassed) << Describe(r);
#else
  GTEST_SKIP() << "libki_gqa_kernels.so path not configured";
#endif
}

TEST(GpuAbi, RefusesBadCalls) {
  REQUIRE_GPU();
  ki_call c;
  std::memset(&c, 0, sizeof(c));
  c.abi_version = KI_ABI_VERSION + 1;
  EXPECT_EQ(Fast().run(&c), KI_ERR_ABI_VERSION);
  c.abi_version = KI_ABI_VERSION;
  EXPECT_EQ(Fast().run(&c), KI_ERR_INVALID_ARGUMENT);
}

}  // namespace
}  // namespace ki::harness
