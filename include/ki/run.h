// Run: turning an implementation and a stored workload into a run record
// (`ki add --implementation`, `ki run`, `ki rerun`).
//
// - An implementation is source code following ki's kernel ABI
//   (docs/kernel-abi.md): CUDA (.cu, built with nvcc, run on a GPU) or C++
//   (.cc/.cpp, built with the system compiler, run on the CPU). Its files are
//   stored as one blob (the file itself, or a source bundle when it includes
//   local headers or has several translation units) named by an
//   ImplementationRevision.
// - Builds are cached under the store (`cache/build/<key>/`), keyed by the
//   source digest, the compiler's version line, the flags and the target
//   architectures: a second run of the same source compiles nothing.
// - A run executes in a child process, so a fault, an abort or a hang
//   becomes a stored run with status runtime_error or timeout, not a crash
//   of ki. Compile failures are stored as compile_error runs with the log.
// - Every run stores a BenchmarkProtocol, an ExecutionEnvironment, the raw
//   samples (the harness's whole result plus the facts a rerun needs: seed,
//   device, kernel symbol) and the build and run log as blobs, and a
//   BenchmarkRun naming all of them; it is indexed in its comparison group,
//   so `ki rank` shows it (docs/format.md, "Run records").
//
// Thread-safety: functions taking a Store follow the Store's rules. Run and
// Rerun fork; call them from a single-threaded process (the `ki` command).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "ki/digest.h"
#include "ki/json.h"
#include "ki/status.h"
#include "ki/store.h"

namespace ki::run {

// ------------------------------------------------------------- sources
// kPython and kTriton: flashinfer-bench solutions (and a definition's
// reference), run through an embedded interpreter with torch
// (harness.h, "Python kernels"); nothing is compiled by ki for them.
enum class Language { kCuda, kCpp, kPython, kTriton };
std::string_view LanguageName(Language l);  // "cuda", "cpp", "python", "triton"
std::optional<Language> LanguageNamed(std::string_view name);
std::optional<Language> LanguageOfFile(std::string_view filename);

// The files of an implementation. Paths are relative and normalised;
// `units` are the translation units to compile, `main` the first of them.
struct SourceBundle {
  std::string main;
  std::vector<std::string> units;
  std::map<std::string, std::string> files;  // path -> bytes
};
inline constexpr std::string_view kBundleMediaType = "application/vnd.ki.source-bundle+json";
inline constexpr std::string_view kBundleFormat = "ki.source-bundle/v1";

// Reads `main` and `extra_units`, and every header they include with
// #include "..." that resolves next to the including file or under one of
// `include_dirs` (recursively). Quoted includes found nowhere are listed in
// *unresolved (the compiler may still find them).
Result<SourceBundle> CollectSources(const std::string& main, const std::vector<std::string>& extra_units,
                                    const std::vector<std::string>& include_dirs,
                                    std::vector<std::string>* unresolved);
// The stored form: the single file's bytes when the bundle is one file with
// no headers, else canonical JSON {format, main, units, files: {path: text}}.
Result<std::string> EncodeBundle(const SourceBundle& b, std::string* media_type);
// Reads either stored form back (`file_name` names a single file).
Result<SourceBundle> DecodeBundle(std::string_view bytes, std::string_view file_name);

struct ImplementationOptions {
  std::string main;                       // FILE.cu / FILE.cc
  std::vector<std::string> extra_units;   // further translation units
  std::vector<std::string> include_dirs;  // where quoted includes are looked up
  std::string operation;                  // REF of the OperationSpec
  std::string symbol;                     // the kernel's name in its ki_kernel table
  std::string name;                       // metadata.name (default: from the file and the symbol)
  std::vector<std::string> archs;         // CUDA: e.g. {"90a", "100a"}; default: the build's KI_CUDA_ARCHS
};
struct AddedImplementation {
  Digest digest;
  Digest source;
  std::string name;
  std::string language;
  bool existed = false;
  std::vector<std::string> unresolved;
};
Result<AddedImplementation> AddImplementation(Store& store, const ImplementationOptions& opts);

// The CUDA architectures ki's own kernels were built for (KI_CUDA_ARCHS).
std::vector<std::string> DefaultCudaArchs();

// --------------------------------------------------------------- builds
struct BuildRequest {
  Language language = Language::kCpp;
  SourceBundle sources;
  Digest source_digest;
  std::vector<std::string> archs;  // CUDA only
  double timeout_s = 600;
};
struct BuildResult {
  bool ok = false;
  bool cached = false;
  std::string key;       // hex of the cache key
  std::string library;   // path of the shared library (when ok)
  std::string compiler;  // first line of `<compiler> --version` (nvcc: its release line)
  std::string command;   // the compile command, for the log
  std::string log;       // what the compiler printed
};
// Builds (or finds in the cache under cache_dir) the shared library. The
// cache is read and written through `env` (tests inject faults there); the
// compiler writes its output itself. Errors are for ki's own failures; a
// source that does not compile is BuildResult{ok = false} with the log.
Result<BuildResult> Build(Env& env, const std::string& cache_dir, const BuildRequest& req);

// ----------------------------------------------------------------- runs
struct HarnessSettings {
  int warmup = 10;
  int iterations = 50;
  int trials = 3;
  bool flush_l2 = true;
  double atol = 1e-2, rtol = 1e-2;
};

struct RunRequest {
  std::string implementation;  // REF
  std::string workload;        // REF
  std::string protocol;        // REF of a ki BenchmarkProtocol whose settings to use; empty: defaults
  uint64_t seed = 0;
  std::string device;          // "cpu" or "cuda:N"; empty: from the implementation's language
  double timeout_s = 120;      // the whole child run (inputs, checks, timing)
  HarnessSettings settings;
  // Also time the definition's own reference (Python, with torch) in the
  // same child, on the same inputs and protocol, and record flashinfer-bench's
  // reference_latency_ms and speedup_factor with the run.
  bool speedup = false;
};

struct RunOutcome {
  Digest run;
  std::string status;        // passed, incorrect_numerical, compile_error, runtime_error, timeout, ...
  std::string message;       // one line: why, when it did not pass
  Json spec;                 // the BenchmarkRun spec
  Digest protocol, environment, implementation, workload;
  Json environment_spec;
  std::optional<double> latency_ns;  // the primary statistic, when timed
  std::optional<Digest> cohort;
  std::string device;        // "cpu" / "cuda:0"
  std::string device_name;   // "NVIDIA H200", CPU model
  std::string timer;
  bool build_cached = false;
  std::vector<std::string> notes;  // e.g. generated inputs that the dataset lacks
  std::optional<double> reference_latency_ns;  // --speedup: the reference, timed alike
  std::optional<double> speedup_factor;        // reference / implementation latency
  std::string reference_status;                // --speedup: how the reference's run ended
};

Result<RunOutcome> Run(Store& store, const RunRequest& req);

// ---------------------------------------------------------------- reruns
struct RerunRequest {
  std::string run;             // REF of the run to re-run
  std::string implementation;  // REF: run this one instead, on the same workload
  std::string device;          // empty: the original's device kind
  std::optional<double> timeout_s;
  std::string sign_key;        // local key to sign a `reproduced` attestation with (empty: none)
  // The band of a reproduced verdict: the ratio new/original (its 95%
  // interval, with samples) within [1 - t, 1 + t], and both passed.
  double match_tolerance = 0.10;
  // What the signed attestation names as the re-run's machine (replication
  // needs two); empty: this host's name and the device's. `ki fleet` gives
  // each node's own id (KI_MACHINE_ID).
  std::string machine;
  // false: a re-run that failed to build or run here (compile_error,
  // runtime_error, timeout) is not signed as a dispute, since a node's broken
  // compiler or full disk says nothing about the number (`ki fleet` records
  // it as that node's failure instead). A wrong result is signed either way.
  bool dispute_on_failure = true;
};

struct RankPlace {
  int rank = 0, of = 0;          // where the new value would rank among the eligible runs
  std::string best_name;          // the cohort's #1
  double best_value = 0;
  std::string metric;
};

struct RerunOutcome {
  Digest original;
  Json original_spec;
  Json original_environment;
  RunOutcome fresh;
  bool same_implementation = true;
  std::optional<double> ratio;   // fresh / original latency
  // Same implementation: did the number hold (docs/statistics.md, "The
  // verdict of ki rerun"); stored in run.verdicts and signed with --key.
  std::optional<Json> verdict;   // {outcome, test, tolerance, ratio, interval, ...}
  bool matched = false;          // the verdict is `reproduced`
  std::vector<std::string> environment_differences;  // "hardware.product: NVIDIA B200 -> NVIDIA H200"
  std::optional<RankPlace> place;  // --implementation: in the original's comparison group
  std::optional<Digest> attestation;
  std::string attestation_kind;    // "reproduced" or "disputed", when one was signed
  std::string attestation_note;    // why none was made, when a key was given
  // Signing failed after a matching re-run (the run and its link are stored):
  // the comparison stands and the caller reports this after it.
  Status sign_status;
};

// NotFound (exit 3) naming exactly what is missing when the original's
// implementation source, workload or definition are not in the store and
// no --implementation was given. With a signing key, the key is loaded (its
// passphrase asked) before anything runs; a key that cannot be loaded fails
// the rerun before it starts.
Result<RerunOutcome> Rerun(Store& store, const RerunRequest& req);

// --------------------------------------------------------------- samples
// The timed samples of a run, in ns, every trial's pooled in order, read
// from its raw-samples blob (`ki.run-samples/v1`). nullopt when the run
// names none, the store does not hold it, it is another harness's, or the
// run was not timed; InvalidInput naming the blob when its samples are not
// numbers.
Result<std::optional<std::vector<double>>> SamplesOfRun(Store& store, const Json& run_spec);

// The verdict `ki rerun` stored for a rerun (table run.verdicts): the
// JSON of docs/format.md, "Rerun verdicts".
Result<std::optional<Json>> VerdictOf(Store& store, const Digest& rerun);

// Reruns of a run, and the run a rerun re-ran (table run.reruns).
Result<std::vector<Digest>> RerunsOf(Store& store, const Digest& run);
Result<std::optional<Digest>> OriginalOf(Store& store, const Digest& rerun);

}  // namespace ki::run
