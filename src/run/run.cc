// ki run: resolve what runs, build it, run it in a child process, store the
// records. One RunJob a run; its phases run in order, each reading what the
// ones before it set.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>

#include "ki/catalog.h"
#include "ki/flashinfer.h"
#include "ki/harness.h"
#include "ki/manifest.h"
#include "ki/run.h"
#include "ki/store_env.h"
#include "ki/utc.h"
#include "json/fields.h"
#include "run/child.h"
#include "run/process.h"
#include "run/python.h"
#include "run/records.h"
#include "run/task.h"
#include "util/utf8.h"

namespace ki::run {
namespace {

namespace fs = std::filesystem;
using namespace internal;

class RunJob {
 public:
  RunJob(Store& store, const RunRequest& req) : store_(store), req_(req), env_(&EnvOf(store)) {}

  Result<RunOutcome> Go() {
    KI_RETURN_IF_ERROR(Resolve());
    KI_RETURN_IF_ERROR(CheckInputs());
    KI_RETURN_IF_ERROR(Prepare());
    KI_RETURN_IF_ERROR(RunChild());
    KI_RETURN_IF_ERROR(Record());
    KI_RETURN_IF_ERROR(Save());
    return std::move(out_);
  }

 private:
  // The implementation and the workload, and whether one may run on the other.
  Status Resolve();
  // What the run reads: the source, the workload's task, the device, the
  // time limit, the workload's axes, the protocol's settings.
  Status CheckInputs();
  // The cache; the Python runtime when one is needed; the build (or the
  // Python entry), and the definition's reference for --speedup.
  Status Prepare();
  // The child process, and what it said.
  Status RunChild();
  // The manifests and blobs that record the run.
  Status Record();
  // All of it in one batch.
  Status Save();

  Status ResolvePythonEntry();
  Status PrepareReference();
  void MeasureSpeedup(Json& spec);

  ki::Store& store_;
  const RunRequest& req_;
  // The run's cache, its child's result and log, its sources: all through
  // the store's Env (the child is forked, so it has the same one).
  Env* env_;
  RunOutcome out_;

  // Resolve
  Manifest im_, wm_;
  Json callable_;
  Language lang_ = Language::kCpp;
  bool torch_binding_ = false;
  bool python_ = false;
  // CheckInputs
  Digest src_;
  std::string source_bytes_;
  Task task_;
  Device dev_;
  HarnessSettings settings_;
  // Prepare
  std::string cache_;
  SourceBundle bundle_;
  std::optional<PythonFacts> pyfacts_;
  ChildPython child_py_;
  std::string impl_name_;
  BuildResult build_;
  bool is_reference_ = false;
  std::string log_;
  // RunChild
  Json hres_;              // the harness's result, when the child wrote one
  Json reference_result_;  // --speedup: the reference's
  std::string child_end_;
  std::string status_, message_;
  // Record
  Json protocol_, envdoc_, rundoc_;
  Manifest pman_, eman_, rman_;
  std::string samples_text_, run_name_;
  Digest samples_digest_, log_digest_;
};

Status RunJob::Resolve() {
  KI_ASSIGN_OR_RETURN(out_.implementation, ResolveKind(store_, req_.implementation, Kind::kImplementationRevision, &im_));
  KI_ASSIGN_OR_RETURN(out_.workload, ResolveKind(store_, req_.workload, Kind::kWorkloadCase, &wm_));
  callable_ = im_.spec.value("callable", Json::object());
  auto lang = LanguageNamed(callable_.value("language", ""));
  if (!lang)
    return Status::InvalidInput("ki runs cuda, cpp, python and triton implementations, not '" +
                                callable_.value("language", "") + "'");
  lang_ = *lang;
  // flashinfer-bench C++/CUDA solutions are built for a binding, not for
  // ki's kernel ABI: `torch` is built by torch's own extension builder in the
  // run's child and called like a Python function; TVM-FFI's runtime is not
  // packaged here.
  const std::string iface = callable_.value("interface", "");
  torch_binding_ = iface == "flashinfer_bench_binding_torch";
  if (iface.rfind("flashinfer_bench_binding_", 0) == 0 && !torch_binding_)
    return Status::InvalidInput("implementation " + req_.implementation + " is a flashinfer-bench " +
                                std::string(LanguageName(lang_)) + " solution with binding `" + iface.substr(25) +
                                "`: ki runs C++/CUDA through its kernel ABI (docs/kernel-abi.md) or torch's "
                                "extension builder (binding torch); " +
                                (iface.substr(25) == "tvm_ffi" ? "the TVM-FFI runtime is not packaged with ki"
                                                               : "this binding is unknown to ki"));
  python_ = lang_ == Language::kPython || lang_ == Language::kTriton || torch_binding_;
  // The implementation must be for the workload's operation.
  if (im_.spec.value("/operation/specDigest"_json_pointer, std::string()) != wm_.spec.value("operationSpecDigest", ""))
    return Status::InvalidInput("implementation " + req_.implementation + " is for operation " +
                                im_.spec.value("/operation/specDigest"_json_pointer, std::string()) + ", workload " +
                                req_.workload + " for " + wm_.spec.value("operationSpecDigest", ""));
  return Status::OK();
}

Status RunJob::CheckInputs() {
  // Everything the store lacks is listed in one message.
  std::vector<std::string> missing;
  auto src = Digest::Parse(im_.spec.value("/source/contentDigest"_json_pointer, std::string()));
  if (!src.ok()) {
    missing.push_back("implementation " + req_.implementation + " names no source");
  } else if (auto b = store_.Read(*src); b.ok()) {
    source_bytes_ = std::move(*b);
  } else if (b.status().IsNotFound()) {
    missing.push_back("the source " + src->str() + " of implementation " + req_.implementation);
  } else {
    return b.status();
  }
  auto task = LoadTask(store_, out_.workload, wm_, &missing);
  if (!missing.empty()) {
    std::string msg = "cannot run: the store lacks";
    for (const auto& m : missing) msg += "\n  - " + m;
    return Status::NotFound(msg);
  }
  KI_RETURN_IF_ERROR(task.status());
  src_ = *src;
  task_ = std::move(*task);
  KI_ASSIGN_OR_RETURN(dev_, ParseDevice(req_.device, lang_));
  // An infinite time limit (`--timeout inf` passes CLI11's PositiveNumber)
  // was no limit at all, and NaN never expires either.
  if (!(req_.timeout_s > 0) || !std::isfinite(req_.timeout_s))
    return Status::Usage("--timeout: expected a positive, finite number of seconds, got " + std::to_string(req_.timeout_s));
  {
    // A workload whose axes are missing, negative, break a constraint of the
    // definition, or make a tensor pass int64 bytes is invalid input, refused
    // before anything is built (the child would only store it as a
    // runtime_error). Whether it fits in memory is the child's question:
    // only it may ask the GPU.
    auto fail = [&](const Status& st) {
      return Status::InvalidInput("workload " + req_.workload + " (" + out_.workload.str() + "): " + st.message());
    };
    auto axes = harness::ResolveAxes(task_.def, task_.workload);
    if (!axes.ok()) return fail(axes.status());
    if (Status st = harness::CheckConstraints(task_.def, *axes); !st.ok()) return fail(st);
    if (auto need = harness::EstimateMemoryNeed(task_.def, *axes, {}); !need.ok()) return fail(need.status());
  }
  out_.device = dev_.str();
  settings_ = req_.settings;
  if (!req_.protocol.empty()) {
    Manifest pm;
    KI_RETURN_IF_ERROR(ResolveKind(store_, req_.protocol, Kind::kBenchmarkProtocol, &pm).status());
    KI_ASSIGN_OR_RETURN(settings_, SettingsFromProtocol(pm.spec));
  }
  for (const auto& g : task_.generated)
    out_.notes.push_back("input " + g + ": the dataset keeps it in a safetensors file this store lacks; generated from seed " +
                         std::to_string(req_.seed) + " (valid for the workload's axes)");
  if (req_.speedup && task_.def.reference.empty())
    return Status::InvalidInput("--speedup: the definition " + task_.def.name + " has no reference code to time");
  return Status::OK();
}

Status RunJob::Prepare() {
  KI_ASSIGN_OR_RETURN(bundle_, DecodeBundle(source_bytes_, im_.spec.value("/source/fileName"_json_pointer, std::string())));
  cache_ = store_.path() + "/cache";
  KI_RETURN_IF_ERROR(env_->CreateDirs(cache_ + "/build"));
  KI_RETURN_IF_ERROR(env_->CreateDirs(cache_ + "/runs"));
  RemoveLeftovers(env_, cache_);
  // Python: the interpreter first (what is missing is said before anything
  // runs), then the sources on disk; nothing to compile.
  if (python_ || req_.speedup) {
    auto f = FindPython(*env_, cache_ + "/runs", lang_ == Language::kTriton);
    if (!f.ok())  // NotFound (exit 3): what is missing, as for a missing object
      return Status::NotFound("cannot run " + req_.implementation + (python_ ? "" : " with --speedup") + ": " +
                              f.status().message());
    pyfacts_ = *f;
    child_py_.runtime = f->runtime;
  }
  impl_name_ = NameOf(store_, out_.implementation);
  if (python_) {
    KI_RETURN_IF_ERROR(ResolvePythonEntry());
  } else {
    BuildRequest br;
    br.language = lang_;
    br.sources = bundle_;
    br.source_digest = src_;
    if (lang_ == Language::kCuda) {
      for (const auto& a : im_.spec.value("/support/hardwareArchitectures"_json_pointer, Json::array())) {
        std::string s = a.get<std::string>();
        if (s.rfind("sm_", 0) == 0) br.archs.push_back(s.substr(3));
      }
      if (br.archs.empty()) br.archs = DefaultCudaArchs();
    }
    KI_ASSIGN_OR_RETURN(build_, Build(*env_, cache_, br));
  }
  // The definition's reference, for --speedup: its code as one file. Not when
  // the implementation is that same code (its own latency is the reference's).
  is_reference_ = python_ && src_ == Sha256Of(task_.def.reference);
  if (req_.speedup && !is_reference_) KI_RETURN_IF_ERROR(PrepareReference());
  out_.build_cached = build_.cached;
  log_ = "== build " + build_.key.substr(0, 16) + (build_.cached ? " (cached)" : "") + " ==\n" + build_.compiler + "\n" +
         build_.command + "\n" + build_.log;
  return Status::OK();
}

// A Python, Triton or torch-binding implementation: its sources on disk and
// the function the child calls; nothing is compiled here.
Status RunJob::ResolvePythonEntry() {
  auto facts = fib::LookupSolution(store_, src_);
  bool dps = true;
  if (facts.ok() && *facts) dps = (*facts)->destination_passing;
  PythonEntry entry;
  if (torch_binding_) {  // the entry file is C++/CUDA; its function is the module's
    entry.file = callable_.value("path", "");
    entry.function = callable_.value("symbol", "run");
    entry.destination_passing = dps;
  } else {
    KI_ASSIGN_OR_RETURN(entry, PythonEntryOf(callable_, dps));
  }
  if (!bundle_.files.count(entry.file))
    return Status::InvalidInput("implementation " + req_.implementation + ": its entry file " + entry.file +
                                " is not among its sources");
  KI_ASSIGN_OR_RETURN(std::string dir, MaterializeSources(*env_, cache_, src_, bundle_));
  harness::PythonKernelSpec ps;
  ps.name = impl_name_.empty() ? entry.file : impl_name_;
  ps.definition = task_.def.name;
  ps.source_dir = dir;
  ps.entry_file = entry.file;
  ps.function = entry.function;
  ps.destination_passing = entry.destination_passing;
  ps.device = dev_.cuda ? KI_DEVICE_CUDA : KI_DEVICE_CPU;
  ps.device_index = dev_.index;
  if (torch_binding_) ps.torch_extension_dir = cache_ + "/torch-ext/" + src_.hex();
  child_py_.implementation = ps;
  build_.ok = true;
  build_.cached = true;
  build_.key = src_.hex();
  build_.library = dir;
  build_.compiler = ToolchainLine(*env_, dev_.cuda);
  build_.command = std::string(torch_binding_ ? "torch extension: " : "python: ") + entry.file + "::" + entry.function +
                   " (" + (entry.destination_passing ? "destination passing" : "returns its outputs") + ")";
  return Status::OK();
}

// The definition's reference code as a one-file Python kernel, timed by the
// same child after the implementation.
Status RunJob::PrepareReference() {
  SourceBundle rb;
  rb.main = "reference.py";
  rb.units = {rb.main};
  rb.files[rb.main] = task_.def.reference;
  KI_ASSIGN_OR_RETURN(std::string dir, MaterializeSources(*env_, cache_, Sha256Of(task_.def.reference), rb));
  harness::PythonKernelSpec ps;
  ps.name = task_.def.name + " reference";
  ps.definition = task_.def.name;
  ps.source_dir = dir;
  ps.entry_file = rb.main;
  ps.function = "run";
  ps.destination_passing = false;  // a definition's reference returns its outputs
  ps.device = dev_.cuda ? KI_DEVICE_CUDA : KI_DEVICE_CPU;
  ps.device_index = dev_.index;
  child_py_.reference = ps;
  return Status::OK();
}

Status RunJob::RunChild() {
  if (!build_.ok) {
    status_ = "compile_error";
    message_ = "the compiler failed (" + build_.compiler + ")";
    return Status::OK();
  }
  char tmpl[64];
  std::snprintf(tmpl, sizeof tmpl, "/run-%d-%lld", int(::getpid()),
                (long long)std::chrono::steady_clock::now().time_since_epoch().count());
  const std::string base = cache_ + "/runs" + tmpl;
  const std::string result_path = base + ".json", log_path = base + ".log";
  const std::string symbol = callable_.value("symbol", "");
  const ChildPython* cp = pyfacts_ ? &child_py_ : nullptr;
  // The reference is timed in the same child: it gets a limit of its own.
  const double child_limit = child_py_.reference ? 2 * req_.timeout_s : req_.timeout_s;
  KI_ASSIGN_OR_RETURN(ProcessEnd end, RunForked(
                                          [&] {
                                            return ChildMain(*env_, build_.library, symbol, task_, dev_, settings_,
                                                             req_.seed, req_.timeout_s, result_path, cp);
                                          },
                                          log_path, child_limit));
  child_end_ = end.Describe();
  // At most kMaxStoredLogBytes of it, head and tail: a log past the cap was
  // once dropped whole, losing the very output that said what went wrong.
  const std::string rl = ReadLog(*env_, log_path, kMaxStoredLogBytes);
  log_ += "== run on " + dev_.str() + " ==\n" + rl + "ki: child " + child_end_ + "\n";
  auto rj = env_->ReadFile(result_path, 256 << 20);
  if (auto refj = env_->ReadFile(ReferenceResultPath(result_path), 256 << 20); refj.ok()) {
    reference_result_ = Json::parse(*refj, nullptr, false);
    if (!reference_result_.is_object()) reference_result_ = nullptr;
  }
  std::error_code ec;
  fs::remove(ReferenceResultPath(result_path), ec);
  fs::remove(result_path, ec);
  fs::remove(log_path, ec);
  if (end.timed_out) {
    status_ = "timeout";
    char limit[64];  // %g: int() of a timeout past int's range was undefined
    std::snprintf(limit, sizeof limit, "%g", req_.timeout_s);
    message_ = std::string("no result within the ") + limit + " s limit (--timeout)";
  } else if (end.signaled) {
    status_ = "runtime_error";
    message_ = "the kernel's process was " + child_end_;
  } else if (!rj.ok() || end.exit_code != 0) {
    status_ = "runtime_error";
    message_ = "the kernel's process ended with " + child_end_;
    // The child's own last message says why (kernel not found, no device).
    size_t p = rl.rfind("ki: ");
    if (p != std::string::npos) message_ = rl.substr(p + 4, rl.find('\n', p) - p - 4);
  } else {
    hres_ = Json::parse(*rj, nullptr, false);
    if (!hres_.is_object()) return Status::Corruption("the run's child wrote an unreadable result");
    status_ = hres_.value("status", "runtime_error");
    message_ = hres_.value("message", "");
    // More memory than this machine has: no result of the kernel, which
    // never ran, so nothing is stored. An environment error (exit 5), as a
    // full disk is: the same run fits on a larger machine.
    if (status_ == "insufficient_memory")
      return Status::IOError("cannot run " + req_.implementation + " on " + dev_.str() + ": " + message_ +
                             " (nothing was stored)");
    if (status_ == "invalid_workload") status_ = "runtime_error";  // not a KernelIndex status
  }
  return Status::OK();
}

Status RunJob::Record() {
  out_.status = status_;
  out_.message = message_;
  const bool timed = status_ == "passed" && hres_.is_object() && hres_["timing"].value("measured", false);
  out_.timer = timed ? hres_["timing"].value("timer", "") : (dev_.cuda ? "cupti_activity" : "host_steady_clock");
  protocol_ = {{"apiVersion", kApiVersion}, {"kind", "BenchmarkProtocol"},
               {"metadata", {{"name", "ki-" + std::string(dev_.cuda ? (settings_.flush_l2 ? "cold-l2" : "warm-l2") : "cpu") +
                                          "-" + Lower(out_.timer)}}},
               {"spec", ProtocolSpec(settings_, dev_.cuda, out_.timer)}};
  for (char& c : protocol_["metadata"]["name"].get_ref<std::string&>())
    if (c == '_') c = '-';
  const Json* henv = hres_.is_object() && hres_.contains("environment") ? &hres_["environment"] : nullptr;
  out_.environment_spec = EnvironmentSpec(*env_, henv, dev_.cuda, dev_.index, build_.compiler);
  if (pyfacts_) {
    // torch ran in this process (a Python implementation, or the reference
    // timed beside a C-ABI kernel): its versions are part of the machine's
    // software, as flashinfer-bench's traces record them.
    Json& sw = out_.environment_spec["software"];
    sw["framework"] = {{"name", "pytorch"}, {"version", pyfacts_->torch}};
    sw["libraries"]["python"] = pyfacts_->version;
    if (!pyfacts_->triton.empty()) sw["libraries"]["triton"] = pyfacts_->triton;
  }
  out_.device_name = out_.environment_spec["hardware"].value("product", "");
  envdoc_ = {{"apiVersion", kApiVersion}, {"kind", "ExecutionEnvironment"},
             {"metadata", {{"name", "ki-" + Lower(out_.device_name)}}}, {"spec", out_.environment_spec}};
  {
    std::string& n = envdoc_["metadata"]["name"].get_ref<std::string&>();
    for (char& c : n)
      if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '-')) c = '-';
    if (n.size() > 200) n.resize(200);
  }
  KI_ASSIGN_OR_RETURN(pman_, ManifestFromJson(protocol_, "protocol"));
  KI_ASSIGN_OR_RETURN(eman_, ManifestFromJson(envdoc_, "environment"));
  out_.protocol = pman_.digest;
  out_.environment = eman_.digest;

  Json samples = {{"format", kSamplesFormat},
                  {"implementation", out_.implementation.str()},
                  {"workload", out_.workload.str()},
                  {"kernel", callable_.value("symbol", "")},
                  {"seed", req_.seed},
                  {"device", dev_.str()},
                  {"timeoutS", req_.timeout_s},
                  {"settings", {{"warmup", settings_.warmup}, {"iterations", settings_.iterations}, {"trials", settings_.trials},
                                {"flushL2", settings_.flush_l2}, {"atol", settings_.atol}, {"rtol", settings_.rtol}}},
                  {"generatedInputs", task_.generated},
                  {"speedup", req_.speedup},
                  {"python", pyfacts_ ? Json{{"executable", pyfacts_->executable}, {"version", pyfacts_->version},
                                             {"torch", pyfacts_->torch}, {"triton", pyfacts_->triton},
                                             {"library", pyfacts_->runtime.library}}
                                      : Json(nullptr)},
                  {"reference", reference_result_},
                  {"build", {{"key", build_.key}, {"compiler", build_.compiler}, {"command", build_.command},
                             {"cached", build_.cached}, {"ok", build_.ok}}},
                  {"child", child_end_},
                  {"harness", hres_.is_object() ? hres_ : Json(nullptr)}};
  samples_text_ = samples.dump();
  samples_digest_ = Sha256Of(samples_text_);
  log_digest_ = Sha256Of(log_);

  Json spec = {{"implementationDigest", out_.implementation.str()},
               {"workloadDigest", out_.workload.str()},
               {"protocolDigest", out_.protocol.str()},
               {"environmentDigest", out_.environment.str()},
               {"status", status_},
               {"observedAt", UtcNow(UtcForm::kMillis)},
               {"evidence", {{"logs", {{"uri", Artifact(log_digest_)}, {"digest", log_digest_.str()}}},
                             {"rawSamples", {{"uri", Artifact(samples_digest_)}, {"digest", samples_digest_.str()}}}}}};
  if (hres_.is_object() && hres_["correctness"].value("checked", false)) {
    const Json& c = hres_["correctness"];
    Json cj = {{"comparator", kComparator}};
    for (auto [from, to] : {std::pair{"max_abs_error", "maximumAbsoluteError"}, {"max_rel_error", "maximumRelativeError"},
                            {"matched_ratio", "matchedRatio"}}) {
      if (c.contains(from) && c[from].is_number() && std::isfinite(c[from].get<double>()) && c[from].get<double>() >= 0)
        cj[to] = c[from];
    }
    spec["correctness"] = cj;
  }
  if (timed) {
    spec["timing"] = TimingJson(hres_);
    spec["timing"]["rawSamples"] = {{"uri", Artifact(samples_digest_)}, {"digest", samples_digest_.str()}};
    out_.latency_ns = spec["timing"]["latencyNs"]["mean"].get<double>();
    if (req_.speedup) MeasureSpeedup(spec);
  }
  std::string stamp = spec["observedAt"];
  std::string digits;
  for (char c : stamp)
    if (std::isdigit(static_cast<unsigned char>(c))) digits.push_back(c);
  // Name and title within the schema's 200 characters. The implementation's
  // name (itself up to 200) is what gets shortened, from its end: the run's
  // name used to be cut from its front, which could leave a leading '-' the
  // name pattern refuses, failing the run after it had run.
  const std::string impl_part = impl_name_.empty() ? "impl" : impl_name_;
  const size_t room = kMaxNameBytes - std::string_view("run-").size() - 1 - std::min(digits.size(), size_t(100));
  run_name_ = "run-" + impl_part.substr(0, room) + "-" + digits.substr(0, 100);
  rundoc_ = {{"apiVersion", kApiVersion}, {"kind", "BenchmarkRun"},
             {"metadata", {{"name", run_name_},
                           {"title", std::string(Utf8WholePrefix(impl_name_ + " on " + out_.device_name, kMaxNameBytes))}}},
             {"spec", spec}};
  KI_ASSIGN_OR_RETURN(rman_, ManifestFromJson(rundoc_, "run"));
  out_.spec = rman_.spec;
  out_.run = rman_.digest;
  return Status::OK();
}

// flashinfer-bench's speedup: the reference's latency over the
// implementation's, both the mean of trial medians of one protocol, named
// as its traces name them (evaluation.performance).
void RunJob::MeasureSpeedup(Json& spec) {
  std::optional<double> ref_us;
  if (is_reference_) {
    ref_us = hres_["timing"].value("latency_us", 0.0);
    out_.reference_status = "passed";
  } else if (reference_result_.is_object()) {
    out_.reference_status = reference_result_.value("status", "runtime_error");
    const Json& t = reference_result_["timing"];
    if (out_.reference_status == "passed" && t.is_object() && t.value("measured", false) && t.value("latency_us", 0.0) > 0)
      ref_us = t.value("latency_us", 0.0);
    else if (std::string m = reference_result_.value("message", ""); !m.empty())
      out_.reference_status += ": " + m;
  } else {
    out_.reference_status = "no result (see the run's log)";
  }
  const double impl_us = hres_["timing"].value("latency_us", 0.0);
  if (ref_us && impl_us > 0) {
    out_.reference_latency_ns = *ref_us * 1000.0;
    out_.speedup_factor = *ref_us / impl_us;
    spec["measurements"] = Json::array(
        {{{"metric", "latency_ms"}, {"unit", "ms"}, {"statistic", "mean"}, {"value", impl_us / 1000.0}},
         {{"metric", "reference_latency_ms"}, {"unit", "ms"}, {"statistic", "mean"}, {"value", *ref_us / 1000.0}},
         {{"metric", "speedup_factor"}, {"unit", "ratio"}, {"statistic", "mean"}, {"value", *out_.speedup_factor}}});
  }
}

Status RunJob::Save() {
  KI_ASSIGN_OR_RETURN(auto batch, store_.NewBatch());
  KI_RETURN_IF_ERROR(batch->PutBlob(log_, "text/plain").status());
  KI_RETURN_IF_ERROR(batch->PutBlob(samples_text_, kSamplesMediaType).status());
  KI_RETURN_IF_ERROR(batch->PutManifest(pman_, protocol_.dump(), kDocumentMediaTypeJson).status());
  KI_RETURN_IF_ERROR(batch->PutManifest(eman_, envdoc_.dump(), kDocumentMediaTypeJson).status());
  KI_RETURN_IF_ERROR(batch->PutManifest(rman_, rundoc_.dump(), kDocumentMediaTypeJson).status());
  KI_ASSIGN_OR_RETURN(out_.cohort, IndexInCohort(*batch, rman_, wm_.spec, run_name_, impl_name_));
  Json facts = {{"seed", req_.seed}, {"device", dev_.str()}, {"kernel", callable_.value("symbol", "")},
                {"speedup", req_.speedup}, {"samples", samples_digest_.str()}, {"log", log_digest_.str()},
                {"build", build_.key}};
  KI_RETURN_IF_ERROR(batch->Put(kRunsTable, rman_.digest.raw(), facts.dump()));
  return batch->Commit();
}

}  // namespace

Result<RunOutcome> Run(Store& store, const RunRequest& req) { return RunJob(store, req).Go(); }

}  // namespace ki::run
