// ki run and ki rerun: build, run in a child process, store the records.
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <filesystem>

#include "ki/catalog.h"
#include "ki/flashinfer.h"
#include "ki/harness.h"
#include "ki/manifest.h"
#include "ki/run.h"
#include "ki/sign.h"
#include "ki/store_env.h"
#include "json/fields.h"
#include "run/process.h"
#include "run/python.h"
#include "run/records.h"
#include "run/verdict.h"
#include "util/utf8.h"
#include "ki/utc.h"

namespace ki::run {
namespace {

namespace fs = std::filesystem;
using internal::kRunsTable;

Result<Manifest> ReadKind(Store& store, const Digest& d, Kind kind, std::string_view ref) {
  KI_ASSIGN_OR_RETURN(auto info, store.Stat(d));
  if (!info) return Status::NotFound(std::string(ref) + " (" + d.str() + ") is not in the store");
  if (info->kind != kind)
    return Status::InvalidInput(std::string(ref) + " is a " + (info->kind ? std::string(KindName(*info->kind)) : "blob") +
                                ", not a " + std::string(KindName(kind)));
  return store.ReadManifest(d);
}

Result<Digest> ResolveKind(Store& store, std::string_view ref, Kind kind, Manifest* m) {
  KI_ASSIGN_OR_RETURN(Digest d, store.Resolve(ref));
  KI_ASSIGN_OR_RETURN(*m, ReadKind(store, d, kind, ref));
  return d;
}

std::string NameOf(Store& store, const Digest& d) {
  auto doc = store.ReadDocument(d);
  if (doc.ok() && *doc && (**doc).contains("metadata")) return (**doc)["metadata"].value("name", "");
  return "";
}

// The schemas' maxLength for metadata.name and metadata.title.
constexpr size_t kMaxNameBytes = 200;

std::string Lower(std::string s) {
  for (char& c : s)
    if (c >= 'A' && c <= 'Z') c = char(c - 'A' + 'a');
  return s;
}

// What the harness needs about a workload: the definition and the workload
// in flashinfer-bench's form, and which inputs ki generates for lack of files.
struct Task {
  harness::Definition def;
  harness::Workload workload;
  Json workload_spec;
  std::vector<std::string> generated;  // inputs the dataset stores as files ki does not have
};

// The definition an operation was imported from, and the workload in the
// harness's form (from the imported workload object, else rebuilt from the
// WorkloadCase, which says the same: axes, scalars and generators).
Result<Task> LoadTask(Store& store, const Digest& workload, const Manifest& wm, std::vector<std::string>* missing) {
  Task t;
  t.workload_spec = wm.spec;
  auto op = Digest::Parse(wm.spec.value("operationSpecDigest", ""));
  if (!op.ok()) return Status::InvalidInput("workload " + workload.str() + " names no operation");
  KI_ASSIGN_OR_RETURN(auto facts, fib::LookupOperation(store, *op));
  if (!facts) {
    missing->push_back("the flashinfer-bench definition of operation " + op->str() +
                       " (ki runs need it: `ki import flashinfer-bench DIR`)");
    return Status::NotFound("");
  }
  auto def_text = store.Read(facts->definition_blob);
  if (!def_text.ok()) {
    missing->push_back("the definition file " + facts->definition_blob.str() + " of " + facts->definition);
    return Status::NotFound("");
  }
  KI_ASSIGN_OR_RETURN(t.def, harness::ParseDefinition(*def_text, facts->definition));
  KI_ASSIGN_OR_RETURN(auto wfacts, fib::LookupWorkload(store, workload));
  std::string wtext;
  if (wfacts) {
    auto b = store.Read(wfacts->workload_blob);
    if (b.ok()) wtext = *b;
  }
  if (wtext.empty()) {
    Json w = {{"uuid", NameOf(store, workload)}, {"axes", wm.spec.value("axes", Json::object())}};
    Json inputs = Json::object();
    // (Named copies: items() of a temporary would dangle.)
    const Json scalars = wm.spec.value("scalars", Json::object()), tensors = wm.spec.value("tensors", Json::object());
    for (const auto& [name, s] : scalars.items())
      inputs[name] = {{"type", "scalar"}, {"value", s["value"]}};
    for (const auto& [name, s] : tensors.items())
      inputs[name] = {{"type", s.value("/data/generator"_json_pointer, std::string("random"))}};
    w["inputs"] = inputs;
    wtext = w.dump();
  }
  KI_ASSIGN_OR_RETURN(t.workload, harness::ParseWorkload(wtext, "workload " + workload.str()));
  for (const auto& [name, src] : t.workload.inputs)
    if (src.kind == harness::InputSource::Kind::kSafetensors) t.generated.push_back(name);
  return t;
}

struct Device {
  bool cuda = false;
  int index = 0;
  std::string str() const { return cuda ? "cuda:" + std::to_string(index) : "cpu"; }
};

Result<Device> ParseDevice(const std::string& text, Language lang) {
  Device d;
  // Python defaults to the GPU, as flashinfer-bench runs it; it may run on
  // the CPU too (torch on the CPU). Triton needs a GPU.
  d.cuda = lang != Language::kCpp;
  if (!text.empty()) {
    if (text == "cpu") {
      d.cuda = false;
    } else if (text.rfind("cuda", 0) == 0) {
      d.cuda = true;
      if (text.size() > 4) {
        // from_chars, not stoi: an index past int's range is a usage error
        // naming the option, not an out_of_range exception (exit 5).
        const char* first = text.data() + 5;
        const char* last = text.data() + text.size();
        auto [end, ec] = std::from_chars(first, last, d.index);
        if (text[4] != ':' || first == last || *first == '-' || *first == '+' || ec != std::errc() || end != last)
          return Status::Usage("--device: expected cpu or cuda:N with N a device index, got '" + text + "'");
      }
    } else {
      return Status::Usage("--device: expected cpu or cuda:N, got '" + text + "'");
    }
  }
  if (lang == Language::kPython) return d;
  if (d.cuda != (lang == Language::kCuda || lang == Language::kTriton))
    return Status::Usage(std::string("a ") + std::string(LanguageName(lang)) + " implementation runs on " +
                         (lang != Language::kCpp ? "a CUDA device" : "the CPU") + ", not on " + d.str());
  return d;
}

// The child: load the library, find the kernel, run the harness, write its
// result. Runs in a fresh process; never returns into the parent's code.
// What a child needs for Python: the interpreter, the implementation when it
// is Python, the definition's reference when it is timed too (--speedup).
struct ChildPython {
  harness::PythonRuntime runtime;
  std::optional<harness::PythonKernelSpec> implementation;
  std::optional<harness::PythonKernelSpec> reference;
};

// Where the child writes the reference's result (--speedup), beside its own.
std::string ReferenceResultPath(const std::string& result_path) { return result_path + ".reference"; }

int ChildMain(Env& env, const std::string& library, const std::string& symbol, const Task& task, const Device& dev,
              const HarnessSettings& s, uint64_t seed, double timeout_s, const std::string& result_path,
              const ChildPython* py) {
  std::unique_ptr<harness::KernelLibrary> lib;
  const ki_kernel* k = nullptr;
  if (py && py->implementation) {
    auto loaded = harness::LoadPythonKernel(py->runtime, *py->implementation, task.def);
    if (!loaded.ok()) {
      std::fprintf(stderr, "ki: %s\n", loaded.status().message().c_str());
      return 3;
    }
    k = *loaded;
  } else {
    auto opened = harness::KernelLibrary::Open(library);
    if (!opened.ok()) {
      std::fprintf(stderr, "ki: %s\n", opened.status().message().c_str());
      return 3;
    }
    lib = std::move(*opened);
    if (!symbol.empty()) {
      k = lib->Find(symbol);
    } else if (lib->kernels().size() == 1) {
      k = lib->kernels()[0];
    }
    if (!k) {
      std::string names;
      for (const auto* x : lib->kernels()) names += std::string(" ") + x->info.name;
      std::fprintf(stderr, "ki: kernel '%s' not in the library (it has:%s)\n", symbol.c_str(), names.c_str());
      return 3;
    }
  }
  if (dev.cuda) {
    gpu::Backend* be = gpu::CudaBackend();
    if (!be || be->DeviceCount() == 0) {
      std::fprintf(stderr, "ki: no CUDA device (or ki was built without CUDA)\n");
      return 4;
    }
    if (Status st = be->SetDevice(dev.index); !st.ok()) {
      std::fprintf(stderr, "ki: %s\n", st.message().c_str());
      return 4;
    }
  }
  harness::RunOptions opt;
  opt.generator.seed = seed;
  opt.tolerance = {s.atol, s.rtol};
  opt.timing.warmup = s.warmup;
  opt.timing.iterations = s.iterations;
  opt.timing.trials = s.trials;
  opt.timing.flush_l2 = s.flush_l2;
  opt.timing.timeout_s = timeout_s;
  opt.timeout_s = timeout_s;
  harness::RunResult r = harness::RunWorkload(*k, task.def, task.workload, opt);
  std::fprintf(stderr, "ki: harness: %s%s%s\n", harness::RunStatusName(r.status), r.message.empty() ? "" : ": ",
               r.message.c_str());
  if (!env.WriteFileAtomic(result_path, harness::ToJson(r), Durability::kNone).ok()) return 5;
  // The definition's reference, timed under the same protocol on the same
  // inputs (the generator is a function of the seed): flashinfer-bench's
  // reference latency. Only after a passing run, as flashinfer-bench
  // reports a speedup only for a correct solution.
  if (py && py->reference && r.status == harness::RunStatus::kPassed) {
    auto ref = harness::LoadPythonKernel(py->runtime, *py->reference, task.def);
    harness::RunResult rr;
    if (ref.ok()) {
      rr = harness::RunWorkload(**ref, task.def, task.workload, opt);
    } else {
      rr.message = ref.status().message();
    }
    std::fprintf(stderr, "ki: reference: %s%s%s\n", harness::RunStatusName(rr.status),
                 rr.message.empty() ? "" : ": ", rr.message.c_str());
    if (!env.WriteFileAtomic(ReferenceResultPath(result_path), harness::ToJson(rr), Durability::kNone).ok())
      return 5;
  }
  return 0;
}

int64_t Ns(double us) { return std::llround(std::max(0.0, us) * 1000.0); }

// The BenchmarkRun's timing from the harness's result.
Json TimingJson(const Json& h) {
  const Json& t = h["timing"];
  const Json& st = t["stats_us"];
  auto num = [](const Json& j, const char* k) { return j.contains(k) && j[k].is_number() ? j[k].get<double>() : 0.0; };
  Json lat = {{"mean", Ns(num(t, "latency_us"))}, {"median", Ns(num(st, "median"))},
              {"minimum", Ns(num(st, "min"))},    {"maximum", Ns(num(st, "max"))},
              {"p05", Ns(num(st, "p05"))},        {"p95", Ns(num(st, "p95"))}};
  Json out = {{"primaryStatistic", "mean"}, {"latencyNs", lat}};
  if (st.value("count", 0) > 0) out["samples"] = st["count"];
  if (st.contains("ci95_low") && st["ci95_low"].is_number() && st["ci95_high"].is_number()) {
    // The harness's interval is around the mean of all samples; shift it
    // onto the headline so it brackets the value ranking compares.
    double half = (num(st, "ci95_high") - num(st, "ci95_low")) / 2;
    double mid = num(t, "latency_us");
    out["latencyNs"]["confidence95"] = {Ns(mid - half), Ns(mid + half)};
  }
  return out;
}

std::string Artifact(const Digest& d) { return "ki:blob/" + d.str(); }

// Files a ki run that was killed (kill -9, a crash) left in the cache: its
// child's log and result (cache/runs/run-<pid>-<t>.*, up to
// kMaxChildFileBytes each) and its build directory (cache/build/
// tmp-<key>-<pid>). Each name carries the pid of the ki that made it; a
// pid no longer alive made a leftover. Best effort: whatever cannot be
// removed stays for the next run. (A store shared by ki processes in
// different pid namespaces would see each other's pids as dead: one store,
// one machine, as LMDB's lock file also assumes.)
void RemoveLeftovers(Env* env, const std::string& cache) {
  auto dead = [](std::string_view pid_text) {
    int pid = 0;
    auto [end, ec] = std::from_chars(pid_text.data(), pid_text.data() + pid_text.size(), pid);
    return ec == std::errc() && end == pid_text.data() + pid_text.size() && pid > 0 && pid != ::getpid() &&
           ::kill(pid, 0) != 0 && errno == ESRCH;
  };
  if (auto names = env->ListDir(cache + "/runs"); names.ok()) {
    for (const std::string& n : *names) {  // run-<pid>-<steady clock>.log / .json
      if (n.rfind("run-", 0) != 0) continue;
      const size_t dash = n.find('-', 4);
      if (dash != std::string::npos && dead(std::string_view(n).substr(4, dash - 4)))
        (void)env->RemoveFile(cache + "/runs/" + n);
    }
  }
  if (auto names = env->ListDir(cache + "/build"); names.ok()) {
    for (const std::string& n : *names) {  // tmp-<16 hex of the key>-<pid>
      if (n.rfind("tmp-", 0) != 0 || n.size() < 22 || n[20] != '-') continue;
      if (dead(std::string_view(n).substr(21))) (void)env->RemoveTree(cache + "/build/" + n);
    }
  }
}

}  // namespace

// ------------------------------------------------------------------ Run

Result<RunOutcome> Run(Store& store, const RunRequest& req) {
  RunOutcome out;
  // The run's cache, its child's result and log, its sources: all through
  // the store's Env (the child is forked, so it has the same one).
  Env* env = &EnvOf(store);
  Manifest im, wm;
  KI_ASSIGN_OR_RETURN(out.implementation, ResolveKind(store, req.implementation, Kind::kImplementationRevision, &im));
  KI_ASSIGN_OR_RETURN(out.workload, ResolveKind(store, req.workload, Kind::kWorkloadCase, &wm));
  const Json& callable = im.spec["callable"];
  auto lang = LanguageNamed(callable.value("language", ""));
  if (!lang)
    return Status::InvalidInput("ki runs cuda, cpp, python and triton implementations, not '" +
                                callable.value("language", "") + "'");
  // flashinfer-bench C++/CUDA solutions are built for a binding, not for
  // ki's kernel ABI: `torch` is built by torch's own extension builder in the
  // run's child and called like a Python function; TVM-FFI's runtime is not
  // packaged here.
  const std::string iface = callable.value("interface", "");
  const bool torch_binding = iface == "flashinfer_bench_binding_torch";
  if (iface.rfind("flashinfer_bench_binding_", 0) == 0 && !torch_binding)
    return Status::InvalidInput("implementation " + req.implementation + " is a flashinfer-bench " +
                                std::string(LanguageName(*lang)) + " solution with binding `" + iface.substr(25) +
                                "`: ki runs C++/CUDA through its kernel ABI (docs/kernel-abi.md) or torch's "
                                "extension builder (binding torch); " +
                                (iface.substr(25) == "tvm_ffi" ? "the TVM-FFI runtime is not packaged with ki"
                                                               : "this binding is unknown to ki"));
  const bool python = *lang == Language::kPython || *lang == Language::kTriton || torch_binding;
  // The implementation must be for the workload's operation.
  if (im.spec.value("/operation/specDigest"_json_pointer, std::string()) != wm.spec.value("operationSpecDigest", ""))
    return Status::InvalidInput("implementation " + req.implementation + " is for operation " +
                                im.spec.value("/operation/specDigest"_json_pointer, std::string()) + ", workload " +
                                req.workload + " for " + wm.spec.value("operationSpecDigest", ""));
  std::vector<std::string> missing;
  auto src = Digest::Parse(im.spec.value("/source/contentDigest"_json_pointer, std::string()));
  std::string source_bytes;
  if (!src.ok()) {
    missing.push_back("implementation " + req.implementation + " names no source");
  } else if (auto b = store.Read(*src); b.ok()) {
    source_bytes = std::move(*b);
  } else if (b.status().IsNotFound()) {
    missing.push_back("the source " + src->str() + " of implementation " + req.implementation);
  } else {
    return b.status();
  }
  auto task = LoadTask(store, out.workload, wm, &missing);
  if (!missing.empty()) {
    std::string msg = "cannot run: the store lacks";
    for (const auto& m : missing) msg += "\n  - " + m;
    return Status::NotFound(msg);
  }
  KI_RETURN_IF_ERROR(task.status());
  KI_ASSIGN_OR_RETURN(Device dev, ParseDevice(req.device, *lang));
  // An infinite time limit (`--timeout inf` passes CLI11's PositiveNumber)
  // was no limit at all, and NaN never expires either.
  if (!(req.timeout_s > 0) || !std::isfinite(req.timeout_s))
    return Status::Usage("--timeout: expected a positive, finite number of seconds, got " + std::to_string(req.timeout_s));
  {
    // A workload whose axes are missing, negative, break a constraint of the
    // definition, or make a tensor pass int64 bytes is invalid input, refused
    // before anything is built (the child would only store it as a
    // runtime_error). Whether it fits in memory is the child's question:
    // only it may ask the GPU.
    auto fail = [&](const Status& st) {
      return Status::InvalidInput("workload " + req.workload + " (" + out.workload.str() + "): " + st.message());
    };
    auto axes = harness::ResolveAxes(task->def, task->workload);
    if (!axes.ok()) return fail(axes.status());
    if (Status st = harness::CheckConstraints(task->def, *axes); !st.ok()) return fail(st);
    if (auto need = harness::EstimateMemoryNeed(task->def, *axes, {}); !need.ok()) return fail(need.status());
  }
  out.device = dev.str();
  HarnessSettings settings = req.settings;
  if (!req.protocol.empty()) {
    Manifest pm;
    KI_RETURN_IF_ERROR(ResolveKind(store, req.protocol, Kind::kBenchmarkProtocol, &pm).status());
    KI_ASSIGN_OR_RETURN(settings, internal::SettingsFromProtocol(pm.spec));
  }
  for (const auto& g : task->generated)
    out.notes.push_back("input " + g + ": the dataset keeps it in a safetensors file this store lacks; generated from seed " +
                        std::to_string(req.seed) + " (valid for the workload's axes)");

  if (req.speedup && task->def.reference.empty())
    return Status::InvalidInput("--speedup: the definition " + task->def.name + " has no reference code to time");

  // Build.
  KI_ASSIGN_OR_RETURN(SourceBundle bundle, DecodeBundle(source_bytes, im.spec.value("/source/fileName"_json_pointer, std::string())));
  BuildRequest br;
  br.language = *lang;
  br.sources = bundle;
  br.source_digest = *src;
  if (*lang == Language::kCuda) {
    for (const auto& a : im.spec.value("/support/hardwareArchitectures"_json_pointer, Json::array())) {
      std::string s = a.get<std::string>();
      if (s.rfind("sm_", 0) == 0) br.archs.push_back(s.substr(3));
    }
    if (br.archs.empty()) br.archs = DefaultCudaArchs();
  }
  const std::string cache = store.path() + "/cache";
  KI_RETURN_IF_ERROR(env->CreateDirs(cache + "/build"));
  KI_RETURN_IF_ERROR(env->CreateDirs(cache + "/runs"));
  RemoveLeftovers(env, cache);
  // Python: the interpreter first (what is missing is said before anything
  // runs), then the sources on disk; nothing to compile.
  std::optional<internal::PythonFacts> pyfacts;
  ChildPython child_py;
  if (python || req.speedup) {
    auto f = internal::FindPython(*env, cache + "/runs", *lang == Language::kTriton);
    if (!f.ok())  // NotFound (exit 3): what is missing, as for a missing object
      return Status::NotFound("cannot run " + req.implementation + (python ? "" : " with --speedup") + ": " +
                              f.status().message());
    pyfacts = *f;
    child_py.runtime = f->runtime;
  }
  const std::string impl_name = NameOf(store, out.implementation);
  BuildResult build;
  if (python) {
    auto facts = fib::LookupSolution(store, *src);
    bool dps = true;
    if (facts.ok() && *facts) dps = (*facts)->destination_passing;
    internal::PythonEntry entry;
    if (torch_binding) {  // the entry file is C++/CUDA; its function is the module's
      entry.file = callable.value("path", "");
      entry.function = callable.value("symbol", "run");
      entry.destination_passing = dps;
    } else {
      KI_ASSIGN_OR_RETURN(entry, internal::PythonEntryOf(callable, dps));
    }
    if (!bundle.files.count(entry.file))
      return Status::InvalidInput("implementation " + req.implementation + ": its entry file " + entry.file +
                                  " is not among its sources");
    KI_ASSIGN_OR_RETURN(std::string dir, internal::MaterializeSources(*env, cache, *src, bundle));
    harness::PythonKernelSpec ps;
    ps.name = impl_name.empty() ? entry.file : impl_name;
    ps.definition = task->def.name;
    ps.source_dir = dir;
    ps.entry_file = entry.file;
    ps.function = entry.function;
    ps.destination_passing = entry.destination_passing;
    ps.device = dev.cuda ? KI_DEVICE_CUDA : KI_DEVICE_CPU;
    ps.device_index = dev.index;
    if (torch_binding) ps.torch_extension_dir = cache + "/torch-ext/" + src->hex();
    child_py.implementation = ps;
    build.ok = true;
    build.cached = true;
    build.key = src->hex();
    build.library = dir;
    build.compiler = internal::ToolchainLine(*env, dev.cuda);
    build.command = std::string(torch_binding ? "torch extension: " : "python: ") + entry.file + "::" + entry.function + " (" +
                    (entry.destination_passing ? "destination passing" : "returns its outputs") + ")";
  } else {
    KI_ASSIGN_OR_RETURN(build, Build(*env, cache, br));
  }
  // The definition's reference, for --speedup: its code as one file. Not when
  // the implementation is that same code (its own latency is the reference's).
  const Digest reference_digest = Sha256Of(task->def.reference);
  const bool is_reference = python && *src == reference_digest;
  if (req.speedup && !is_reference) {
    SourceBundle rb;
    rb.main = "reference.py";
    rb.units = {rb.main};
    rb.files[rb.main] = task->def.reference;
    KI_ASSIGN_OR_RETURN(std::string dir, internal::MaterializeSources(*env, cache, reference_digest, rb));
    harness::PythonKernelSpec ps;
    ps.name = task->def.name + " reference";
    ps.definition = task->def.name;
    ps.source_dir = dir;
    ps.entry_file = rb.main;
    ps.function = "run";
    ps.destination_passing = false;  // a definition's reference returns its outputs
    ps.device = dev.cuda ? KI_DEVICE_CUDA : KI_DEVICE_CPU;
    ps.device_index = dev.index;
    child_py.reference = ps;
  }
  out.build_cached = build.cached;
  std::string log = "== build " + build.key.substr(0, 16) + (build.cached ? " (cached)" : "") + " ==\n" +
                    build.compiler + "\n" + build.command + "\n" + build.log;

  // Run in a child process.
  Json hres;  // the harness's result, when the child wrote one
  Json reference_result;  // --speedup: the reference's
  std::string child_end;
  std::string status, message;
  if (!build.ok) {
    status = "compile_error";
    message = "the compiler failed (" + build.compiler + ")";
  } else {
    char tmpl[64];
    std::snprintf(tmpl, sizeof tmpl, "/run-%d-%lld", int(::getpid()), (long long)std::chrono::steady_clock::now().time_since_epoch().count());
    const std::string base = cache + "/runs" + tmpl;
    const std::string result_path = base + ".json", log_path = base + ".log";
    const std::string symbol = callable.value("symbol", "");
    const Task& t = *task;
    const ChildPython* cp = pyfacts ? &child_py : nullptr;
    // The reference is timed in the same child: it gets a limit of its own.
    const double child_limit = child_py.reference ? 2 * req.timeout_s : req.timeout_s;
    KI_ASSIGN_OR_RETURN(internal::ProcessEnd end,
                        internal::RunForked([&] { return ChildMain(*env, build.library, symbol, t, dev, settings, req.seed,
                                                                   req.timeout_s, result_path, cp); },
                                            log_path, child_limit));
    child_end = end.Describe();
    // At most kMaxStoredLogBytes of it, head and tail: a log past the cap was
    // once dropped whole, losing the very output that said what went wrong.
    const std::string rl = internal::ReadLog(*env, log_path, internal::kMaxStoredLogBytes);
    log += "== run on " + dev.str() + " ==\n" + rl + "ki: child " + child_end + "\n";
    auto rj = env->ReadFile(result_path, 256 << 20);
    if (auto refj = env->ReadFile(ReferenceResultPath(result_path), 256 << 20); refj.ok()) {
      reference_result = Json::parse(*refj, nullptr, false);
      if (!reference_result.is_object()) reference_result = nullptr;
    }
    std::error_code ec;
    fs::remove(ReferenceResultPath(result_path), ec);
    fs::remove(result_path, ec);
    fs::remove(log_path, ec);
    if (end.timed_out) {
      status = "timeout";
      char limit[64];  // %g: int() of a timeout past int's range was undefined
      std::snprintf(limit, sizeof limit, "%g", req.timeout_s);
      message = std::string("no result within the ") + limit + " s limit (--timeout)";
    } else if (end.signaled) {
      status = "runtime_error";
      message = "the kernel's process was " + child_end;
    } else if (!rj.ok() || end.exit_code != 0) {
      status = "runtime_error";
      message = "the kernel's process ended with " + child_end;
      // The child's own last message says why (kernel not found, no device).
      size_t p = rl.rfind("ki: ");
      if (p != std::string::npos) message = rl.substr(p + 4, rl.find('\n', p) - p - 4);
    } else {
      hres = Json::parse(*rj, nullptr, false);
      if (!hres.is_object()) return Status::Corruption("the run's child wrote an unreadable result");
      status = hres.value("status", "runtime_error");
      message = hres.value("message", "");
      // More memory than this machine has: no result of the kernel, which
      // never ran, so nothing is stored. An environment error (exit 5), as a
      // full disk is: the same run fits on a larger machine.
      if (status == "insufficient_memory")
        return Status::IOError("cannot run " + req.implementation + " on " + dev.str() + ": " + message +
                               " (nothing was stored)");
      if (status == "invalid_workload") status = "runtime_error";  // not a KernelIndex status
    }
  }
  out.status = status;
  out.message = message;

  // Records.
  const bool timed = status == "passed" && hres.is_object() && hres["timing"].value("measured", false);
  out.timer = timed ? hres["timing"].value("timer", "") : (dev.cuda ? "cupti_activity" : "host_steady_clock");
  Json protocol = {{"apiVersion", kApiVersion}, {"kind", "BenchmarkProtocol"},
                   {"metadata", {{"name", "ki-" + std::string(dev.cuda ? (settings.flush_l2 ? "cold-l2" : "warm-l2") : "cpu") +
                                              "-" + Lower(out.timer)}}},
                   {"spec", internal::ProtocolSpec(settings, dev.cuda, out.timer)}};
  for (char& c : protocol["metadata"]["name"].get_ref<std::string&>())
    if (c == '_') c = '-';
  const Json* henv = hres.is_object() && hres.contains("environment") ? &hres["environment"] : nullptr;
  out.environment_spec = internal::EnvironmentSpec(*env, henv, dev.cuda, dev.index, build.compiler);
  if (pyfacts) {
    // torch ran in this process (a Python implementation, or the reference
    // timed beside a C-ABI kernel): its versions are part of the machine's
    // software, as flashinfer-bench's traces record them.
    Json& sw = out.environment_spec["software"];
    sw["framework"] = {{"name", "pytorch"}, {"version", pyfacts->torch}};
    sw["libraries"]["python"] = pyfacts->version;
    if (!pyfacts->triton.empty()) sw["libraries"]["triton"] = pyfacts->triton;
  }
  out.device_name = out.environment_spec["hardware"].value("product", "");
  Json envdoc = {{"apiVersion", kApiVersion}, {"kind", "ExecutionEnvironment"},
                 {"metadata", {{"name", "ki-" + Lower(out.device_name)}}}, {"spec", out.environment_spec}};
  {
    std::string& n = envdoc["metadata"]["name"].get_ref<std::string&>();
    for (char& c : n)
      if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '-')) c = '-';
    if (n.size() > 200) n.resize(200);
  }
  KI_ASSIGN_OR_RETURN(Manifest pman, ManifestFromJson(protocol, "protocol"));
  KI_ASSIGN_OR_RETURN(Manifest eman, ManifestFromJson(envdoc, "environment"));
  out.protocol = pman.digest;
  out.environment = eman.digest;

  Json samples = {{"format", internal::kSamplesFormat},
                  {"implementation", out.implementation.str()},
                  {"workload", out.workload.str()},
                  {"kernel", callable.value("symbol", "")},
                  {"seed", req.seed},
                  {"device", dev.str()},
                  {"timeoutS", req.timeout_s},
                  {"settings", {{"warmup", settings.warmup}, {"iterations", settings.iterations}, {"trials", settings.trials},
                                {"flushL2", settings.flush_l2}, {"atol", settings.atol}, {"rtol", settings.rtol}}},
                  {"generatedInputs", task->generated},
                  {"speedup", req.speedup},
                  {"python", pyfacts ? Json{{"executable", pyfacts->executable}, {"version", pyfacts->version},
                                            {"torch", pyfacts->torch}, {"triton", pyfacts->triton},
                                            {"library", pyfacts->runtime.library}}
                                     : Json(nullptr)},
                  {"reference", reference_result},
                  {"build", {{"key", build.key}, {"compiler", build.compiler}, {"command", build.command}, {"cached", build.cached}, {"ok", build.ok}}},
                  {"child", child_end},
                  {"harness", hres.is_object() ? hres : Json(nullptr)}};
  const std::string samples_text = samples.dump();
  const Digest samples_digest = Sha256Of(samples_text), log_digest = Sha256Of(log);

  Json spec = {{"implementationDigest", out.implementation.str()},
               {"workloadDigest", out.workload.str()},
               {"protocolDigest", out.protocol.str()},
               {"environmentDigest", out.environment.str()},
               {"status", status},
               {"observedAt", UtcNow(UtcForm::kMillis)},
               {"evidence", {{"logs", {{"uri", Artifact(log_digest)}, {"digest", log_digest.str()}}},
                             {"rawSamples", {{"uri", Artifact(samples_digest)}, {"digest", samples_digest.str()}}}}}};
  if (hres.is_object() && hres["correctness"].value("checked", false)) {
    const Json& c = hres["correctness"];
    Json cj = {{"comparator", internal::kComparator}};
    for (auto [from, to] : {std::pair{"max_abs_error", "maximumAbsoluteError"}, {"max_rel_error", "maximumRelativeError"},
                            {"matched_ratio", "matchedRatio"}}) {
      if (c.contains(from) && c[from].is_number() && std::isfinite(c[from].get<double>()) && c[from].get<double>() >= 0)
        cj[to] = c[from];
    }
    spec["correctness"] = cj;
  }
  if (timed) {
    spec["timing"] = TimingJson(hres);
    spec["timing"]["rawSamples"] = {{"uri", Artifact(samples_digest)}, {"digest", samples_digest.str()}};
    out.latency_ns = spec["timing"]["latencyNs"]["mean"].get<double>();
  }
  // flashinfer-bench's speedup: the reference's latency over the
  // implementation's, both the mean of trial medians of one protocol, named
  // as its traces name them (evaluation.performance).
  if (req.speedup && timed) {
    std::optional<double> ref_us;
    if (is_reference) {
      ref_us = hres["timing"].value("latency_us", 0.0);
      out.reference_status = "passed";
    } else if (reference_result.is_object()) {
      out.reference_status = reference_result.value("status", "runtime_error");
      const Json& t = reference_result["timing"];
      if (out.reference_status == "passed" && t.is_object() && t.value("measured", false) &&
          t.value("latency_us", 0.0) > 0)
        ref_us = t.value("latency_us", 0.0);
      else if (std::string m = reference_result.value("message", ""); !m.empty())
        out.reference_status += ": " + m;
    } else {
      out.reference_status = "no result (see the run's log)";
    }
    const double impl_us = hres["timing"].value("latency_us", 0.0);
    if (ref_us && impl_us > 0) {
      out.reference_latency_ns = *ref_us * 1000.0;
      out.speedup_factor = *ref_us / impl_us;
      spec["measurements"] = Json::array(
          {{{"metric", "latency_ms"}, {"unit", "ms"}, {"statistic", "mean"}, {"value", impl_us / 1000.0}},
           {{"metric", "reference_latency_ms"}, {"unit", "ms"}, {"statistic", "mean"}, {"value", *ref_us / 1000.0}},
           {{"metric", "speedup_factor"}, {"unit", "ratio"}, {"statistic", "mean"}, {"value", *out.speedup_factor}}});
    }
  }
  std::string stamp = spec["observedAt"];
  std::string digits;
  for (char c : stamp)
    if (std::isdigit(static_cast<unsigned char>(c))) digits.push_back(c);
  // Name and title within the schema's 200 characters. The implementation's
  // name (itself up to 200) is what gets shortened, from its end: the run's
  // name used to be cut from its front, which could leave a leading '-' the
  // name pattern refuses, failing the run after it had run.
  const std::string impl_part = impl_name.empty() ? "impl" : impl_name;
  const size_t room = kMaxNameBytes - std::string_view("run-").size() - 1 - std::min(digits.size(), size_t(100));
  const std::string run_name = "run-" + impl_part.substr(0, room) + "-" + digits.substr(0, 100);
  Json rundoc = {{"apiVersion", kApiVersion}, {"kind", "BenchmarkRun"},
                 {"metadata", {{"name", run_name}, {"title", std::string(Utf8WholePrefix(impl_name + " on " + out.device_name, kMaxNameBytes))}}},
                 {"spec", spec}};
  KI_ASSIGN_OR_RETURN(Manifest rman, ManifestFromJson(rundoc, "run"));
  out.spec = rman.spec;
  out.run = rman.digest;

  KI_ASSIGN_OR_RETURN(auto batch, store.NewBatch());
  KI_RETURN_IF_ERROR(batch->PutBlob(log, "text/plain").status());
  KI_RETURN_IF_ERROR(batch->PutBlob(samples_text, internal::kSamplesMediaType).status());
  KI_RETURN_IF_ERROR(batch->PutManifest(pman, protocol.dump(), kDocumentMediaTypeJson).status());
  KI_RETURN_IF_ERROR(batch->PutManifest(eman, envdoc.dump(), kDocumentMediaTypeJson).status());
  KI_RETURN_IF_ERROR(batch->PutManifest(rman, rundoc.dump(), kDocumentMediaTypeJson).status());
  KI_ASSIGN_OR_RETURN(Digest cohort, internal::IndexInCohort(*batch, rman, wm.spec, run_name, impl_name));
  out.cohort = cohort;
  Json facts = {{"seed", req.seed}, {"device", dev.str()}, {"kernel", callable.value("symbol", "")}, {"speedup", req.speedup},
                {"samples", samples_digest.str()}, {"log", log_digest.str()}, {"build", build.key}};
  KI_RETURN_IF_ERROR(batch->Put(kRunsTable, rman.digest.raw(), facts.dump()));
  KI_RETURN_IF_ERROR(batch->Commit());
  return out;
}

// ---------------------------------------------------------------- Rerun

Result<std::vector<Digest>> RerunsOf(Store& store, const Digest& run) {
  std::vector<Digest> out;
  KI_RETURN_IF_ERROR(store.Scan(internal::kRerunsTable, run.raw(), [&](std::string_view k, std::string_view) {
    if (k.size() == 64) out.push_back(Digest::FromRaw(k.substr(32)));
    return true;
  }));
  return out;
}

Result<std::optional<Digest>> OriginalOf(Store& store, const Digest& rerun) {
  KI_ASSIGN_OR_RETURN(auto v, store.Get(internal::kOriginalTable, rerun.raw()));
  if (!v) return std::optional<Digest>();
  KI_ASSIGN_OR_RETURN(Digest d, Digest::Parse(*v));
  return std::optional<Digest>(d);
}

Result<RerunOutcome> Rerun(Store& store, const RerunRequest& req) {
  RerunOutcome out;
  Manifest rm;
  KI_ASSIGN_OR_RETURN(out.original, ResolveKind(store, req.run, Kind::kBenchmarkRun, &rm));
  out.original_spec = rm.spec;
  const Json& s = rm.spec;
  std::vector<std::string> missing;

  // The original's run facts (seed, device, kernel) from its raw samples.
  // They are a blob like any other (pulled, or added by hand), so their
  // fields are type-checked: value() threw type_error on a `seed` that was a
  // string (exit 5, nlohmann's message), and a `timeoutS` of 0 or less
  // re-ran the kernel with no time limit at all.
  Json facts;
  std::string facts_where;
  if (auto d = Digest::Parse(s.value("/evidence/rawSamples/digest"_json_pointer, std::string())); d.ok()) {
    auto b = store.Read(*d);
    if (b.ok()) {
      Json j = Json::parse(*b, nullptr, false);
      if (StringOr(j, "format") == internal::kSamplesFormat) facts = j, facts_where = "the raw samples " + d->str();
    }
  }
  // Its protocol: ki's settings are repeated; another harness's protocol
  // cannot be, and ki's cold-L2 protocol (flashinfer-bench's method) stands in.
  RunRequest rr;
  if (facts.contains("seed")) {
    KI_ASSIGN_OR_RETURN(rr.seed, GetUnsigned(facts, "seed", facts_where));
  }
  if (!req.device.empty()) {
    rr.device = req.device;
  } else {
    KI_ASSIGN_OR_RETURN(rr.device, GetString(facts, "device", facts_where));
  }
  rr.timeout_s = 120.0;
  // The original's reference timing is repeated with it.
  if (facts.contains("speedup") && facts["speedup"].is_boolean()) rr.speedup = facts["speedup"].get<bool>();
  if (req.timeout_s) {
    rr.timeout_s = *req.timeout_s;
  } else if (facts.contains("timeoutS")) {
    const Json& t = facts["timeoutS"];
    if (!t.is_number() || !(t.get<double>() > 0) || !std::isfinite(t.get<double>()))
      return Status::InvalidInput(facts_where + ": `timeoutS` is " +
                                  (t.is_number() ? t.dump() : std::string(JsonTypeName(t))) +
                                  ", not a positive number of seconds (give --timeout)");
    rr.timeout_s = t.get<double>();
  }
  if (auto pd = Digest::Parse(s.value("protocolDigest", "")); pd.ok()) {
    auto pm = store.ReadManifest(*pd);
    if (pm.ok() && internal::SettingsFromProtocol(pm->spec).ok()) rr.protocol = pd->str();
  }
  if (auto ed = Digest::Parse(s.value("environmentDigest", "")); ed.ok()) {
    auto em = store.ReadManifest(*ed);
    if (em.ok()) out.original_environment = em->spec;
  }

  // What the rerun needs, each checked so that the message can list them all.
  const std::string wl = s.value("workloadDigest", "");
  auto wd = Digest::Parse(wl);
  Manifest wm;
  bool have_workload = false;
  if (wd.ok()) {
    auto m = store.ReadManifest(*wd);
    if (m.ok()) {
      wm = *m;
      have_workload = true;
    } else if (m.status().IsNotFound()) {
      missing.push_back("the workload " + wl);
    } else {
      return m.status();
    }
  }
  if (have_workload) {
    std::vector<std::string> tm;
    (void)LoadTask(store, *wd, wm, &tm);
    missing.insert(missing.end(), tm.begin(), tm.end());
  }
  const std::string impl = req.implementation.empty() ? s.value("implementationDigest", "") : req.implementation;
  if (req.implementation.empty()) {
    auto id = Digest::Parse(impl);
    auto im = id.ok() ? store.ReadManifest(*id) : Result<Manifest>(Status::NotFound(""));
    if (!im.ok()) {
      missing.push_back("the implementation " + impl + " (its ImplementationRevision)");
    } else {
      auto src = im->spec.value("/source/contentDigest"_json_pointer, std::string());
      auto sd = Digest::Parse(src);
      if (!sd.ok()) {
        missing.push_back("the source code of implementation " + impl + " (its ImplementationRevision names none)");
      } else if (auto st = store.Stat(*sd); !st.ok() || !*st) {
        missing.push_back("the source code " + src + " of implementation " + impl);
      }
      std::string lang = im->spec.value("/callable/language"_json_pointer, std::string());
      if (!LanguageNamed(lang))
        missing.push_back("a build recipe for implementation " + impl + " (language '" + lang +
                          "'; ki runs cuda, cpp, python and triton sources)");
    }
  }
  if (!missing.empty()) {
    std::string msg = "cannot re-run " + out.original.str() + ": the store lacks";
    for (const auto& m : missing) msg += "\n  - " + m;
    if (req.implementation.empty())
      msg += "\n`ki rerun REF --implementation IMPL` runs another implementation on the same workload and "
             "shows where it would rank among the original's comparison group";
    return Status::NotFound(msg);
  }
  // The signing key before the run: a wrong key name or passphrase (or no
  // way to ask for one) then fails in seconds, before a GPU run is spent
  // and stored, instead of after it with the comparison lost.
  std::optional<SigningKey> key;
  if (!req.sign_key.empty()) {
    KI_ASSIGN_OR_RETURN(Keyring ring, Keyring::Default());
    KI_ASSIGN_OR_RETURN(SigningKey k, ring.Load(req.sign_key, DefaultPassphrase));
    key.emplace(std::move(k));
  }
  out.same_implementation = req.implementation.empty();
  rr.implementation = impl;
  rr.workload = wl;
  if (!out.same_implementation) rr.device = req.device;  // another implementation: its own device kind
  KI_ASSIGN_OR_RETURN(out.fresh, Run(store, rr));
  // The verdict (same implementation only: another one's run is a new
  // measurement, not a reproduction).
  std::optional<stats::ReproductionVerdict> verdict;
  if (out.same_implementation) {
    KI_ASSIGN_OR_RETURN(verdict, internal::JudgeRerun(store, s, out.fresh, req.match_tolerance));
    out.verdict = internal::VerdictJson(*verdict);
  }

  // The link and the verdict, in ki's tables: the schema has no field for
  // them, and the run record must not change its digest for being re-run.
  {
    KI_ASSIGN_OR_RETURN(auto batch, store.NewBatch());
    std::string k(out.original.raw());
    k.append(out.fresh.run.raw());
    KI_RETURN_IF_ERROR(batch->Put(internal::kRerunsTable, k, out.same_implementation ? "rerun" : "other-implementation"));
    KI_RETURN_IF_ERROR(batch->Put(internal::kOriginalTable, out.fresh.run.raw(), out.original.str()));
    if (out.verdict) {
      Json stored = *out.verdict;
      stored["original"] = out.original.str();
      KI_RETURN_IF_ERROR(batch->Put(internal::kVerdictsTable, out.fresh.run.raw(), stored.dump()));
    }
    KI_RETURN_IF_ERROR(batch->Commit());
  }

  // Compare.
  std::optional<double> orig;
  if (s.contains("timing")) {
    std::string stat = s["timing"].value("primaryStatistic", "mean");
    const Json& l = s["timing"]["latencyNs"];
    if (l.contains(stat) && l[stat].is_number()) orig = l[stat].get<double>();
  }
  if (orig && out.fresh.latency_ns && *orig > 0) out.ratio = *out.fresh.latency_ns / *orig;
  out.matched = verdict && verdict->outcome == stats::Reproduction::kReproduced;
  if (out.original_environment.is_object()) {
    for (const auto& d : catalog::FieldDiffs(out.original_environment, out.fresh.environment_spec)) {
      out.environment_differences.push_back(d.path + ": " + (d.a ? d.a->dump() : "(none)") + " -> " +
                                            (d.b ? d.b->dump() : "(none)"));
    }
  }

  // Where it would rank in the original's group: the group's runs as the
  // store knows them, the original itself (a run added with `ki add` is in
  // no imported group), and this run.
  if (!out.same_implementation && out.fresh.latency_ns && have_workload) {
    KI_ASSIGN_OR_RETURN(auto cohort, catalog::CohortOfRun(store, out.original));
    if (!cohort) {
      auto k = internal::CohortKeyOf(s, wm.spec);
      if (k.ok()) cohort = *k;
    }
    if (cohort) {
      RankPlace p;
      std::vector<catalog::RankEntry> all;
      bool source_native = s.contains("sourceNative");
      if (auto r = catalog::RankCohort(store, *cohort); r.ok()) {
        all = r->ranked;
        all.insert(all.end(), r->ineligible.begin(), r->ineligible.end());
        source_native = r->source_native;
        p.metric = r->metric;
      }
      if (p.metric.empty()) p.metric = catalog::MetricKey(s);
      if (std::none_of(all.begin(), all.end(), [&](const auto& e) { return e.run == out.original; })) {
        std::string impl_name;
        if (auto id = Digest::Parse(s.value("implementationDigest", "")); id.ok()) impl_name = NameOf(store, *id);
        all.push_back(internal::EntryOf(out.original, s, NameOf(store, out.original), impl_name,
                                        catalog::Evidence::kReported));
      }
      catalog::RankEntry e = internal::EntryOf(out.fresh.run, out.fresh.spec, "(this run)",
                                               NameOf(store, out.fresh.implementation), catalog::Evidence::kReproducible);
      e.interval.reset();  // compared by value with runs measured elsewhere
      all.push_back(e);
      catalog::Ranking nr = catalog::RankV1(std::move(all), source_native);
      for (const auto& x : nr.ranked) {
        if (x.run == out.fresh.run) p.rank = x.rank;
        p.of = std::max(p.of, x.rank);
        if (x.rank == 1 && x.run != out.fresh.run && p.best_name.empty()) {
          p.best_name = x.implementation.empty() ? x.name : x.implementation;
          p.best_value = x.value.value_or(0);
        }
      }
      p.of = int(nr.ranked.size());
      if (p.best_name.empty()) {  // this run is #1 alone
        p.best_name = "this run";
        p.best_value = *out.fresh.latency_ns;
      }
      out.place = p;
    }
  }

  // With a key, the verdict is signed: `reproduced` when the number held,
  // `disputed` (carrying the re-run and the verdict) when it did not;
  // inconclusive is not signed. The run is stored by now: a failure here is
  // reported beside the comparison (sign_status), not instead of it.
  if (key) {
    const bool machine_fault = out.fresh.status == "compile_error" || out.fresh.status == "runtime_error" ||
                               out.fresh.status == "timeout";
    if (!verdict || verdict->outcome == stats::Reproduction::kInconclusive) {
      out.attestation_note = verdict ? "not signed: the verdict is inconclusive (" + verdict->words + ")"
                                     : "not signed: another implementation's run is no re-run of the original";
    } else if (machine_fault && !req.dispute_on_failure) {
      out.attestation_note = "not signed: the re-run ended " + out.fresh.status +
                             " on this machine, a fault of the machine rather than evidence about the run";
    } else {
      const bool held = verdict->outcome == stats::Reproduction::kReproduced;
      AttestationRequest ar;
      ar.subject = out.original;
      ar.predicate = held ? PredicateKind::kReproduced : PredicateKind::kDisputed;
      ar.note = "ki rerun on " + out.fresh.device + ": " + verdict->words;
      if (out.fresh.latency_ns && out.ratio && *out.ratio > 0) {
        RerunResult res;
        res.run = out.fresh.run;
        res.latency_ns = *out.fresh.latency_ns;
        res.ratio = *out.ratio;
        res.passed = out.fresh.status == "passed";
        char host[256] = {0};
        ::gethostname(host, sizeof host - 1);
        res.machine = req.machine.empty() ? std::string(host) + " " + out.fresh.device_name : req.machine;
        res.environment = out.fresh.environment;
        res.verdict = out.verdict;
        ar.rerun = res;
      } else {
        ar.evidence.push_back(out.fresh.run);  // a re-run that did not pass: its record is the evidence
      }
      auto pr = CreateAttestation(store, *key, ar);
      if (pr.ok()) {
        out.attestation = pr->digest;
        out.attestation_kind = std::string(PredicateName(ar.predicate));
      } else {
        out.sign_status = pr.status();
        out.attestation_note = "not signed: " + pr.status().message();
      }
    }
  }
  return out;
}

}  // namespace ki::run
