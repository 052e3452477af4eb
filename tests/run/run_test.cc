// src/fib and src/run: the flashinfer-bench mapping against KernelIndex's
// digests, source bundles, and a CPU run end to end through the library.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>

#include "ki/env.h"
#include "ki/flashinfer.h"
#include "ki/harness.h"
#include "ki/manifest.h"
#include "ki/run.h"
#include "ki/sign.h"
#include "run/process.h"
#include "testutil/fault_env.h"

namespace ki {
namespace {

const std::string kRunData = std::string(KI_TEST_DATA_DIR) + "/run";
const std::string kDef = kRunData + "/flashinfer-trace/definitions/gqa_paged/gqa_paged_decode_h32_kv4_d128_ps1.json";
const std::string kWorkloads = kRunData + "/flashinfer-trace/workloads/gqa_paged/gqa_paged_decode_h32_kv4_d128_ps1.jsonl";

std::string Slurp(const std::string& p) {
  std::ifstream f(p);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

TEST(FlashinferMapping, OperationDigestEqualsTheExport) {
  auto doc = fib::OperationDocument(Slurp(kDef), "def");
  ASSERT_TRUE(doc.ok()) << doc.status().message();
  auto m = ManifestFromJson(*doc, "def");
  ASSERT_TRUE(m.ok()) << m.status().message();
  EXPECT_EQ(m->digest.str(), "sha256:aa3e71334e9e611281084843cf42058bed78031fcf7c794707a4446d3156e354");
  EXPECT_EQ(m->name(), "gqa-paged-decode-h32-kv4-d128-ps1");
}

TEST(FlashinferMapping, SeedWorkloadDigestEqualsTheExport) {
  auto op = Digest::Parse("sha256:aa3e71334e9e611281084843cf42058bed78031fcf7c794707a4446d3156e354");
  std::istringstream lines(Slurp(kWorkloads));
  bool found = false;
  for (std::string line; std::getline(lines, line);) {
    if (line.find("27ef153a-4d10-402a-998b-1922904e94b2") == std::string::npos) continue;
    auto doc = fib::WorkloadDocument(Slurp(kDef), line, *op, "wl");
    ASSERT_TRUE(doc.ok()) << doc.status().message();
    auto m = ManifestFromJson(*doc, "wl");
    ASSERT_TRUE(m.ok()) << m.status().message();
    EXPECT_EQ(m->digest.str(), "sha256:fcf16458148fc0adb1372367ac83b468de3af7a4009854a2980b9096ec1e0088");
    EXPECT_EQ(m->name(), "gqa-paged-decode-h32-kv4-d128-ps1-27ef153a");
    EXPECT_EQ((*doc)["metadata"]["title"],
              "gqa_paged_decode_h32_kv4_d128_ps1 · batch_size=1, num_pages=412, len_indptr=2, num_kv_indices=362");
    found = true;
  }
  EXPECT_TRUE(found);
}

TEST(FlashinferMapping, Dtypes) {
  EXPECT_EQ(fib::KernelIndexDtype("bfloat16"), "bf16");
  EXPECT_EQ(fib::KernelIndexDtype("float32"), "fp32");
  EXPECT_EQ(fib::KernelIndexDtype("int32"), "int32");
}

TEST(Sources, BundleCollectsIncludesAndRoundTrips) {
  std::vector<std::string> unresolved;
  auto b = run::CollectSources(kRunData + "/gqa_decode_wrong.cc", {}, {std::string(KI_SOURCE_DIR) + "/include"},
                               &unresolved);
  ASSERT_TRUE(b.ok()) << b.status().message();
  EXPECT_TRUE(unresolved.empty());
  EXPECT_EQ(b->main, "gqa_decode_wrong.cc");
  EXPECT_TRUE(b->files.count("gqa_decode_cpu.h"));
  EXPECT_TRUE(b->files.count("ki/kernel_abi.h"));
  EXPECT_TRUE(b->files.count("ki/gqa_paged_decode.h"));
  std::string media;
  auto enc = run::EncodeBundle(*b, &media);
  ASSERT_TRUE(enc.ok());
  EXPECT_EQ(media, run::kBundleMediaType);
  auto dec = run::DecodeBundle(*enc, "x");
  ASSERT_TRUE(dec.ok());
  EXPECT_EQ(dec->files, b->files);
  EXPECT_EQ(dec->units, b->units);
  // Encoding is deterministic (canonical JSON).
  EXPECT_EQ(*run::EncodeBundle(*dec, nullptr), *enc);
}

TEST(Sources, SingleFileStoredAsItself) {
  auto dec = run::DecodeBundle("int x;", "k.cu");
  ASSERT_TRUE(dec.ok());
  EXPECT_EQ(dec->main, "k.cu");
  std::string media;
  EXPECT_EQ(*run::EncodeBundle(*dec, &media), "int x;");
  EXPECT_EQ(media, "text/x-cuda");
}

TEST(Sources, Languages) {
  EXPECT_EQ(run::LanguageOfFile("a.cu"), run::Language::kCuda);
  EXPECT_EQ(run::LanguageOfFile("a.cc"), run::Language::kCpp);
  EXPECT_EQ(run::LanguageOfFile("a.py"), std::nullopt);
}

class RunOnCpu : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("ki-run-test-" + std::to_string(::getpid()));
    std::filesystem::remove_all(dir_);
    auto s = Store::Init(dir_.string());
    ASSERT_TRUE(s.ok()) << s.status().message();
    store_ = std::move(*s);
    ASSERT_TRUE(fib::ImportDataset(*store_, kRunData + "/flashinfer-trace").ok());
  }
  void TearDown() override {
    store_.reset();
    std::filesystem::remove_all(dir_);
  }
  Digest Add(const std::string& variant) {
    run::ImplementationOptions o;
    o.main = kRunData + "/gqa_decode_" + variant + ".cc";
    o.include_dirs = {std::string(KI_SOURCE_DIR) + "/include"};
    o.operation = "gqa-paged-decode-h32-kv4-d128-ps1";
    o.symbol = "test.gqa_decode." + variant;
    o.name = "t-" + variant;
    auto a = run::AddImplementation(*store_, o);
    EXPECT_TRUE(a.ok()) << a.status().message();
    return a.ok() ? a->digest : Digest{};
  }
  std::filesystem::path dir_;
  std::unique_ptr<Store> store_;
};

TEST_F(RunOnCpu, PassesVerifiesAndReruns) {
  Digest impl = Add("cpu");
  run::RunRequest req;
  req.implementation = impl.str();
  req.workload = "gqa-paged-decode-h32-kv4-d128-ps1-27ef153a";
  req.seed = 3;
  auto r = run::Run(*store_, req);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->status, "passed") << r->message;
  ASSERT_TRUE(r->latency_ns.has_value());
  auto v = store_->Verify(r->run);
  ASSERT_TRUE(v.ok());
  EXPECT_FALSE(v->HasFaults());
  for (const auto& e : v->entries) EXPECT_EQ(e.state, CheckState::kOk) << e.digest.str() << " " << e.via;
  // The hardware is this machine's CPU, as the run's child read it.
  auto cpu = harness::ReadCpuInfo(*Env::Default());
  ASSERT_TRUE(cpu.ok()) << cpu.status().message();
  const Json& hw = r->environment_spec["hardware"];
  EXPECT_EQ(hw.value("product", ""), cpu->model_name.empty() ? "unknown" : cpu->model_name);
  EXPECT_EQ(hw.value("vendor", ""), cpu->vendor_id == "AuthenticAMD"   ? "amd"
                                    : cpu->vendor_id == "GenuineIntel" ? "intel"
                                                                       : "unknown");

  run::RerunRequest rr;
  rr.run = r->run.str();
  auto re = run::Rerun(*store_, rr);
  ASSERT_TRUE(re.ok()) << re.status().message();
  EXPECT_EQ(re->fresh.status, "passed");
  ASSERT_TRUE(re->ratio.has_value());
  EXPECT_TRUE(re->environment_differences.empty());
  EXPECT_EQ(re->fresh.cohort, r->cohort);  // same machine, same group
  auto reruns = run::RerunsOf(*store_, r->run);
  ASSERT_TRUE(reruns.ok());
  ASSERT_EQ(reruns->size(), 1u);
  EXPECT_EQ((*reruns)[0], re->fresh.run);
  auto orig = run::OriginalOf(*store_, re->fresh.run);
  ASSERT_TRUE(orig.ok() && orig->has_value());
  EXPECT_EQ(**orig, r->run);
  // The verdict, judged from both runs' raw samples, is stored with the rerun.
  ASSERT_TRUE(re->verdict.has_value());
  auto stored = run::VerdictOf(*store_, re->fresh.run);
  ASSERT_TRUE(stored.ok() && stored->has_value());
  EXPECT_EQ((**stored)["outcome"], (*re->verdict)["outcome"]);
  EXPECT_EQ((**stored)["test"], "bootstrap-median-ratio");
  EXPECT_EQ((**stored)["original"], r->run.str());
  EXPECT_EQ(re->matched, (*re->verdict)["outcome"] == "reproduced");
  auto samples = run::SamplesOfRun(*store_, re->fresh.spec);
  ASSERT_TRUE(samples.ok() && samples->has_value());
  EXPECT_EQ((*samples)->size(), 150u);  // 3 trials of 50 calls, pooled
}

// `ki rerun --key`: the key is loaded (its passphrase asked) before anything
// runs, so a key that cannot be loaded costs no run and stores nothing; a
// loadable one signs the match.
TEST_F(RunOnCpu, RerunLoadsItsSigningKeyBeforeRunning) {
  const std::string home = (dir_ / "home").string();
  ASSERT_EQ(::setenv("KI_HOME", home.c_str(), 1), 0);
  ASSERT_EQ(::setenv("KI_PASSPHRASE", "not-the-passphrase", 1), 0);
  struct Unset {
    ~Unset() {
      ::unsetenv("KI_HOME");
      ::unsetenv("KI_PASSPHRASE");
    }
  } unset;
  const auto fixed = [](std::string phrase) {
    return [phrase](std::string_view, bool) -> Result<SecretBytes> {
      SecretBytes b(phrase.size() + 1);
      std::memcpy(b.data(), phrase.data(), phrase.size());
      b.Truncate(phrase.size());
      return b;
    };
  };
  auto ring = Keyring::Default();
  ASSERT_TRUE(ring.ok()) << ring.status().message();
  ASSERT_TRUE(ring->Generate("runner", KeyProtection::kPassphrase, fixed("s3cret")).ok());

  run::RunRequest req;
  req.implementation = Add("cpu").str();
  req.workload = "gqa-paged-decode-h32-kv4-d128-ps1-27ef153a";
  auto r = run::Run(*store_, req);
  ASSERT_TRUE(r.ok()) << r.status().message();
  const auto reruns = [&] {
    auto v = run::RerunsOf(*store_, r->run);
    EXPECT_TRUE(v.ok());
    return v.ok() ? v->size() : size_t{999};
  };

  run::RerunRequest rr;
  rr.run = r->run.str();
  rr.match_tolerance = 10.0;  // any passing re-run matches: this test is about the key
  rr.sign_key = "nobody";
  auto re = run::Rerun(*store_, rr);
  ASSERT_FALSE(re.ok());
  EXPECT_TRUE(re.status().IsNotFound()) << re.status().message();
  EXPECT_EQ(reruns(), 0u) << "an unknown key must fail before the re-run runs and is stored";

  rr.sign_key = "runner";  // wrong passphrase in KI_PASSPHRASE
  re = run::Rerun(*store_, rr);
  ASSERT_FALSE(re.ok());
  EXPECT_TRUE(re.status().IsInvalidInput()) << re.status().message();
  EXPECT_EQ(reruns(), 0u) << "a wrong passphrase must fail before the re-run runs and is stored";

  ASSERT_EQ(::setenv("KI_PASSPHRASE", "s3cret", 1), 0);
  re = run::Rerun(*store_, rr);
  ASSERT_TRUE(re.ok()) << re.status().message();
  EXPECT_TRUE(re->sign_status.ok()) << re->sign_status.message();
  ASSERT_TRUE(re->matched) << re->attestation_note;
  ASSERT_TRUE(re->attestation.has_value()) << re->attestation_note;
  EXPECT_EQ(reruns(), 1u);
  auto v = store_->Verify(r->run);
  ASSERT_TRUE(v.ok()) << v.status().message();
  EXPECT_FALSE(v->HasFaults());
}

TEST_F(RunOnCpu, WrongOutputsAreIncorrectNumerical) {
  run::RunRequest req;
  req.implementation = Add("wrong").str();
  req.workload = "gqa-paged-decode-h32-kv4-d128-ps1-27ef153a";
  auto r = run::Run(*store_, req);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->status, "incorrect_numerical");
  EXPECT_FALSE(r->spec.contains("timing"));
}

TEST_F(RunOnCpu, MissingWorkloadIsNotFound) {
  run::RunRequest req;
  req.implementation = Add("cpu").str();
  req.workload = "no-such-workload";
  auto r = run::Run(*store_, req);
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(r.status().IsNotFound());
}

// A fresh build cache directory (with its build/ folder) under the test's
// temporary directory, one per test and process.
std::filesystem::path EmptyCache(const std::string& prefix) {
  const std::filesystem::path cache =
      std::filesystem::path(::testing::TempDir()) / (prefix + std::to_string(::getpid()));
  std::filesystem::remove_all(cache);
  std::filesystem::create_directories(cache / "build");
  return cache;
}

// A one-file C++ kernel library exporting `symbol` (returning `value`): a
// build whose cache key no other test shares.
run::BuildRequest OneFileRequest(const std::string& symbol, int value) {
  run::BuildRequest req;
  req.language = run::Language::kCpp;
  req.sources.main = "k.cc";
  req.sources.units = {"k.cc"};
  req.sources.files["k.cc"] = "extern \"C\" int " + symbol + "() { return " + std::to_string(value) + "; }\n";
  req.source_digest = Sha256Of(req.sources.files["k.cc"]);
  req.timeout_s = 120;
  return req;
}

// A build cache entry a power loss damaged: its `ok` marker gone, empty or
// cut short, or its library cut short under an intact marker. Each used to
// make the next build's rename onto the entry fail ("cannot move the build
// into ...") until .ki/cache/build was deleted by hand, or (the library)
// be loaded as it was; each is now discarded and built again.
TEST(BuildCache, DamagedEntryIsDiscardedAndRebuilt) {
  const std::filesystem::path cache = EmptyCache("ki-build-cache-");
  const run::BuildRequest req = OneFileRequest("ki_build_cache_test", 7);
  auto first = run::Build(*Env::Default(), cache.string(), req);
  ASSERT_TRUE(first.ok()) << first.status().message();
  ASSERT_TRUE(first->ok) << first->log;
  ASSERT_FALSE(first->cached);
  const std::filesystem::path entry = cache / "build" / first->key;
  const std::string marker = Slurp((entry / "ok").string());
  EXPECT_EQ(marker.substr(marker.find('\n') + 1), Sha256Of(Slurp(first->library)).str() + "\n")
      << "the marker names the library it vouches for";
  auto again = run::Build(*Env::Default(), cache.string(), req);
  ASSERT_TRUE(again.ok() && again->ok && again->cached) << "a whole entry is used";

  const std::string library = Slurp((entry / "libkernel.so").string());
  auto damage_and_rebuild = [&](const char* what, const std::function<void()>& damage) {
    damage();
    auto b = run::Build(*Env::Default(), cache.string(), req);
    ASSERT_TRUE(b.ok()) << what << ": " << b.status().message();
    EXPECT_TRUE(b->ok) << what;
    EXPECT_FALSE(b->cached) << what << ": built again, not taken from the damaged entry";
    EXPECT_EQ(Slurp((entry / "ok").string()), marker) << what;
    EXPECT_EQ(Slurp((entry / "libkernel.so").string()), library) << what;
    auto c = run::Build(*Env::Default(), cache.string(), req);
    ASSERT_TRUE(c.ok() && c->ok) << what;
    EXPECT_TRUE(c->cached) << what << ": the rebuilt entry is whole";
  };
  damage_and_rebuild("no ok marker", [&] { std::filesystem::remove(entry / "ok"); });
  damage_and_rebuild("an empty ok marker", [&] { std::ofstream(entry / "ok", std::ios::trunc); });
  damage_and_rebuild("a partial ok marker", [&] { std::ofstream(entry / "ok", std::ios::trunc) << marker.substr(0, 5); });
  damage_and_rebuild("a library cut short", [&] {
    std::filesystem::resize_file(entry / "libkernel.so", library.size() / 2);
  });
  damage_and_rebuild("no library", [&] { std::filesystem::remove(entry / "libkernel.so"); });
  std::filesystem::remove_all(cache);
}

// The cache's writes went through Env::Default() (and libkernel.so was
// copied through the Env only to be fsynced), so their order was never
// tested under faults. Now the build takes the Env: every step that makes
// the entry durable or visible (format.md, "Build cache") is failed in
// turn. The build fails, and leaves either no entry (the next build makes
// it) or, failing only after the rename, a whole one (the next build takes
// it); an `ok` marker is never written before the library, the log and the
// command are synced and their directory is.
TEST(BuildCache, EachFailedSyncOrRenameLeavesNoEntryOrAWholeOne) {
  const std::filesystem::path cache = EmptyCache("ki-build-steps-");
  const run::BuildRequest req = OneFileRequest("ki_build_steps_test", 8);
  test::FaultInjectionEnv env;

  auto index_of = [](const std::vector<std::string>& steps, const std::string& step, size_t from = 0) {
    for (size_t i = from; i < steps.size(); ++i)
      if (steps[i] == step) return static_cast<int>(i);
    return -1;
  };
  std::string tmp, entry, marker;
  // What the cache promises whatever failed: a marker (or the rename) only
  // after everything it vouches for is synced.
  auto check_order = [&](const std::vector<std::string>& steps, const std::string& what) {
    const int ok = index_of(steps, "commit " + tmp + "/ok");
    if (ok >= 0) {
      const int lib = index_of(steps, "syncfile " + tmp + "/libkernel.so");
      const int log = index_of(steps, "commit " + tmp + "/build.log");
      const int cmd = index_of(steps, "commit " + tmp + "/command");
      EXPECT_TRUE(lib >= 0 && log >= 0 && cmd >= 0 && lib < ok && log < ok && cmd < ok) << what;
      const int dir = index_of(steps, "syncdir " + tmp, static_cast<size_t>(std::max({lib, log, cmd})));
      EXPECT_TRUE(dir >= 0 && dir < ok) << what << ": the directory is synced between the files and the marker";
    }
    const int rename = index_of(steps, "rename " + tmp + " -> " + entry);
    if (rename >= 0) {
      const int dir = ok < 0 ? -1 : index_of(steps, "syncdir " + tmp, static_cast<size_t>(ok));
      EXPECT_TRUE(ok >= 0 && dir >= 0 && dir < rename) << what << ": the marker is synced before the rename";
    }
  };

  env.FailStep(-1);
  auto clean = run::Build(env, cache.string(), req);
  ASSERT_TRUE(clean.ok()) << clean.status().message();
  ASSERT_TRUE(clean->ok && !clean->cached) << clean->log;
  entry = (cache / "build" / clean->key).string();
  tmp = (cache / "build" / ("tmp-" + clean->key.substr(0, 16) + "-" + std::to_string(::getpid()))).string();
  marker = Slurp(entry + "/ok");
  const std::vector<std::string> steps = env.steps();
  ASSERT_GE(index_of(steps, "syncfile " + tmp + "/libkernel.so"), 0) << "the compiler's library is synced where it is";
  EXPECT_EQ(index_of(steps, "commit " + tmp + "/libkernel.so"), -1) << "not copied through the Env";
  check_order(steps, "a build without faults");
  ASSERT_GE(steps.size(), 2u);
  EXPECT_EQ(steps[steps.size() - 2], "rename " + tmp + " -> " + entry);
  EXPECT_EQ(steps.back(), "syncdir " + (cache / "build").string()) << "the rename is made durable last";

  for (size_t i = 0; i < steps.size(); ++i) {
    std::filesystem::remove_all(entry);
    const std::string what = "step " + std::to_string(i) + " (" + steps[i] + ") failing";
    env.FailStep(static_cast<int>(i));
    auto failed = run::Build(env, cache.string(), req);
    EXPECT_FALSE(failed.ok()) << what;
    if (!failed.ok()) {
      EXPECT_NE(failed.status().message().find("Input/output error"), std::string::npos) << what;
    }
    const std::vector<std::string> got = env.steps();
    ASSERT_EQ(got.size(), i + 1) << what << ": nothing is done after the failed step";
    EXPECT_EQ(got[i], steps[i] + " FAILED") << what;
    check_order(got, what);
    const bool kept = std::filesystem::exists(entry);
    EXPECT_EQ(kept, i == steps.size() - 1) << what << ": only a failed sync after the rename leaves the entry";
    if (kept) {
      EXPECT_EQ(Slurp(entry + "/ok"), marker) << what;
      EXPECT_EQ(marker.substr(marker.find('\n') + 1), Sha256Of(Slurp(entry + "/libkernel.so")).str() + "\n") << what;
    }
    // The next build: the entry kept is taken as it is, else it is built.
    env.FailStep(-1);
    auto next = run::Build(env, cache.string(), req);
    ASSERT_TRUE(next.ok()) << what << ": " << next.status().message();
    EXPECT_TRUE(next->ok) << what;
    EXPECT_EQ(next->cached, kept) << what;
    EXPECT_EQ(Slurp(entry + "/ok"), marker) << what;
    check_order(env.steps(), what + ", then the next build");
  }
  std::filesystem::remove_all(cache);
}

// A log past the cap once came back empty (Env::ReadFile refuses a file over
// its limit), dropping the compiler's or the kernel's output whole.
TEST(ReadLog, KeepsHeadAndTailOfALogPastTheCap) {
  const std::string path = ::testing::TempDir() + "/ki-readlog-" + std::to_string(::getpid()) + ".log";
  auto write = [&](const std::string& text) { std::ofstream(path, std::ios::binary) << text; };
  write("");
  EXPECT_EQ(run::internal::ReadLog(*Env::Default(), path, 1024), "");
  std::string exact;
  while (exact.size() < 1024) exact += "0123456789abcde\n";
  write(exact);
  EXPECT_EQ(run::internal::ReadLog(*Env::Default(), path, 1024), exact) << "at the cap: whole";
  // 200 KiB of numbered 16-byte lines through a 1 KiB cap: the first and the
  // last 512 bytes, cut at line ends, and how much is left out.
  std::string big;
  for (int i = 0; big.size() < (200u << 10); ++i) {
    char line[17];
    std::snprintf(line, sizeof line, "line %010d\n", i);
    big += line;
  }
  write(big);
  const std::string kept = run::internal::ReadLog(*Env::Default(), path, 1024);
  EXPECT_EQ(kept.substr(0, 512), big.substr(0, 512));
  EXPECT_EQ(kept.substr(kept.size() - 512), big.substr(big.size() - 512));
  EXPECT_NE(kept.find("[... " + std::to_string(big.size() - 1024) + " bytes of output left out by ki, of " +
                      std::to_string(big.size()) + " ...]\n"),
            std::string::npos)
      << kept.substr(500, 100);
  EXPECT_EQ(run::internal::ReadLog(*Env::Default(), path + ".absent", 1024), "");
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace ki
