// ki-kernel-bench: runs one kernel on one workload, a whole workloads file,
// or synthetic paged-decode shapes, through the harness (ki/harness.h), and
// prints a table plus JSON.
//
//   ki-kernel-bench --definition DEF.json --workloads WL.jsonl [--workload N|UUID]
//                   [--synthetic 1x362,16x4096] [--kernel NAME] [--library LIB.so]
//                   [--seed N] [--lengths random|equal] [--json OUT.json] ...
//
// Exit status: 0 when every run passed, 1 when one did not, 2 on usage errors.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "ki/harness.h"

#if defined(KI_HAVE_CUDA_BACKEND)
#include "gqa_paged_decode/launch.h"
#endif

namespace {

using namespace ki::harness;

constexpr const char* kUsage = R"(usage: ki-kernel-bench --definition DEF.json (--workloads FILE.jsonl | --synthetic BxT[,BxT...]) [options]
  --workload N|UUID     only this workload of the file (index from 0, or uuid prefix)
  --synthetic LIST      paged-decode shapes: B sequences of T tokens each, e.g. 1x362,16x4096
  --kernel NAME         kernel to run (default ki.gqa_paged_decode.fast); --list shows them
  --library PATH        load kernels from this shared library (ki_kernel_get)
  --reference NAME      reference kernel (default: the built-in CUDA reference, else the CPU one)
  --seed N              input seed (default 0)
  --lengths MODE        random | equal sequence lengths (default random; synthetic: equal)
  --check-runs N        checked calls on poisoned outputs (default 2); --no-check skips
  --no-time             correctness only
  --warmup N --iters N --trials N   timing protocol (default 10, 50, 3)
  --graph-calls N       also time N back-to-back calls in a CUDA graph (default 0)
  --no-flush            no L2 flush between iterations
  --flush KIND          zero (default, the flashinfer-bench protocol: zeros over twice the L2), read (a
                        read sweep of twice the L2: cold and clean), zero-read (zero, then the read
                        sweep of a second buffer: the zeros written back before the call); the
                        last two are diagnostics of the cold-L2 cost
  --events              CUDA events instead of CUPTI
  --tune k=v,...        fast-kernel plan: chunk, waves, min_chunk, stages, mode (1 per-head, 2 split,
                        3 cluster), cluster (blocks per sequence), evict_first (1 on, 2 off), per_sm
                        (split: blocks per SM aimed for), predict (kv_indptr as the equal split: 1 on, 2 off),
                        miss_waves (waves after a prediction miss), pdl (programmatic dependent
                        launch: 1 on, 2 off), lean (batch 1 in one work item: 1 plain, 2 sums by
                        mma only) (CUDA builds)
  --show-plan           print the fast kernel's plan under each row (CUDA builds)
  --json PATH           write the results as a JSON array (default: print after the table)
  --no-samples          leave raw samples out of the JSON
  --list                list the kernels and exit
)";

struct Args {
  std::string definition, workloads, workload, synthetic, kernel = "ki.gqa_paged_decode.fast", library,
      reference, json, tune, lengths, flush_kind = "zero";
  uint64_t seed = 0;
  int check_runs = 2, warmup = 10, iters = 50, trials = 3, graph_calls = 0;
  bool check = true, time = true, flush = true, events = false, samples = true, list = false, show_plan = false;
};

bool ParseArgs(int argc, char** argv, Args* a, std::string* err) {
  for (int i = 1; i < argc; ++i) {
    const std::string k = argv[i];
    auto val = [&](std::string* out) {
      if (i + 1 >= argc) {
        *err = k + " needs a value";
        return false;
      }
      *out = argv[++i];
      return true;
    };
    auto ival = [&](int* out) {
      std::string s;
      if (!val(&s)) return false;
      *out = std::atoi(s.c_str());
      return true;
    };
    std::string s;
    if (k == "--definition") { if (!val(&a->definition)) return false; }
    else if (k == "--workloads") { if (!val(&a->workloads)) return false; }
    else if (k == "--workload") { if (!val(&a->workload)) return false; }
    else if (k == "--synthetic") { if (!val(&a->synthetic)) return false; }
    else if (k == "--kernel") { if (!val(&a->kernel)) return false; }
    else if (k == "--library") { if (!val(&a->library)) return false; }
    else if (k == "--reference") { if (!val(&a->reference)) return false; }
    else if (k == "--json") { if (!val(&a->json)) return false; }
    else if (k == "--tune") { if (!val(&a->tune)) return false; }
    else if (k == "--lengths") { if (!val(&a->lengths)) return false; }
    else if (k == "--flush") { if (!val(&a->flush_kind)) return false; }
    else if (k == "--seed") { if (!val(&s)) return false; a->seed = std::strtoull(s.c_str(), nullptr, 10); }
    else if (k == "--check-runs") { if (!ival(&a->check_runs)) return false; }
    else if (k == "--warmup") { if (!ival(&a->warmup)) return false; }
    else if (k == "--iters") { if (!ival(&a->iters)) return false; }
    else if (k == "--trials") { if (!ival(&a->trials)) return false; }
    else if (k == "--graph-calls") { if (!ival(&a->graph_calls)) return false; }
    else if (k == "--no-check") a->check = false;
    else if (k == "--no-time") a->time = false;
    else if (k == "--no-flush") a->flush = false;
    else if (k == "--events") a->events = true;
    else if (k == "--no-samples") a->samples = false;
    else if (k == "--list") a->list = true;
    else if (k == "--show-plan") a->show_plan = true;
    else if (k == "-h" || k == "--help") { *err = ""; return false; }
    else { *err = "unknown option " + k; return false; }
  }
  if (a->list) return true;
  if (a->definition.empty()) { *err = "--definition is required"; return false; }
  if (a->workloads.empty() && a->synthetic.empty()) { *err = "--workloads or --synthetic is required"; return false; }
  if (!a->lengths.empty() && a->lengths != "random" && a->lengths != "equal") { *err = "--lengths: random or equal"; return false; }
  if (a->flush_kind != "zero" && a->flush_kind != "read" && a->flush_kind != "zero-read") {
    *err = "--flush: zero, read or zero-read";
    return false;
  }
  if (a->iters < 1 || a->trials < 1 || a->warmup < 0) { *err = "bad timing counts"; return false; }
  return true;
}

bool ApplyTune(const std::string& spec, std::string* err) {
  if (spec.empty()) return true;
#if defined(KI_HAVE_CUDA_BACKEND)
  ki::gqa::FastTuning t;
  std::stringstream ss(spec);
  for (std::string kv; std::getline(ss, kv, ',');) {
    const size_t eq = kv.find('=');
    if (eq == std::string::npos) { *err = "--tune: expected key=value, got " + kv; return false; }
    const std::string key = kv.substr(0, eq);
    const int v = std::atoi(kv.c_str() + eq + 1);
    if (key == "chunk") t.chunk_tokens = v;
    else if (key == "waves") t.waves = v;
    else if (key == "min_chunk") t.min_chunk = v;
    else if (key == "stages") t.stages = v;
    else if (key == "mode") t.mode = v;
    else if (key == "cluster") t.cluster = v;
    else if (key == "evict_first") t.evict_first = v;
    else if (key == "per_sm") t.per_sm = v;
    else if (key == "predict") t.predict = v;
    else if (key == "miss_waves") t.miss_waves = v;
    else if (key == "pdl") t.pdl = v;
    else if (key == "lean") t.lean = v;
    else { *err = "--tune: unknown key " + key; return false; }
  }
  ki::gqa::SetFastTuning(t);
  return true;
#else
  *err = "--tune needs a CUDA build";
  return false;
#endif
}

// The fast kernel's plan for a shape (PlanFast reads only batch and the
// token count).
void PrintPlan(long long batch, long long tokens) {
#if defined(KI_HAVE_CUDA_BACKEND)
  ki::gqa::Args args;
  args.batch = batch;
  args.num_kv_indices = tokens;
  ki::gqa::FastPlan p;
  if (ki::gqa::PlanFast(args, &p) != KI_OK) {
    std::printf("    plan: none\n");
    return;
  }
  static const char* const kModes[] = {"auto", "per-head", "split", "cluster"};
  std::printf("    plan: %s, cluster %d, chunk %d (after a miss %d), %d work items, %d stages, %d blocks/SM fit, %d SMs, evict_first %d, "
              "predict %d, pdl %d, lean %d, workspace %llu B\n",
              p.mode >= 0 && p.mode <= 3 ? kModes[p.mode] : "?", p.cluster, p.chunk, p.chunk_any, p.max_work, p.stages,
              p.blocks_per_sm, p.num_sms, p.evict_first ? 1 : 0, p.predict ? 1 : 0, p.pdl ? 1 : 0, p.lean, static_cast<unsigned long long>(p.workspace_bytes));
#else
  (void)batch;
  (void)tokens;
#endif
}

std::string Fmt(double v, int prec = 2) {
  if (std::isnan(v) || v < 0) return "-";
  char b[64];
  std::snprintf(b, sizeof(b), "%.*f", prec, v);
  return b;
}
std::string Sci(double v) {
  if (std::isnan(v)) return "-";
  char b[64];
  std::snprintf(b, sizeof(b), "%.2e", v);
  return b;
}

}  // namespace

int main(int argc, char** argv) {
  Args a;
  std::string err;
  if (!ParseArgs(argc, argv, &a, &err)) {
    if (!err.empty()) std::cerr << "ki-kernel-bench: " << err << "\n";
    std::cerr << kUsage;
    return 2;
  }
  std::unique_ptr<KernelLibrary> lib;
  if (!a.library.empty()) {
    auto l = KernelLibrary::Open(a.library);
    if (!l.ok()) {
      std::cerr << "ki-kernel-bench: " << l.status().message() << "\n";
      return 2;
    }
    lib = std::move(*l);
  }
  if (a.list) {
    for (const ki_kernel* k : BuiltinKernels())
      std::printf("%-40s %-6s %s\n", k->info.name, k->info.device == KI_DEVICE_CUDA ? "cuda" : "cpu",
                  k->info.definition);
    if (lib)
      for (const ki_kernel* k : lib->kernels())
        std::printf("%-40s %-6s %s (%s)\n", k->info.name, k->info.device == KI_DEVICE_CUDA ? "cuda" : "cpu",
                    k->info.definition, lib->path().c_str());
    return 0;
  }
  const ki_kernel* kernel = lib ? lib->Find(a.kernel) : FindBuiltinKernel(a.kernel);
  if (!kernel && lib && lib->kernels().size() == 1 && a.kernel == "ki.gqa_paged_decode.fast")
    kernel = lib->kernels()[0];
  if (!kernel) {
    std::cerr << "ki-kernel-bench: no kernel named " << a.kernel << " (try --list)\n";
    return 2;
  }
  const ki_kernel* reference = nullptr;
  if (!a.reference.empty() && !(reference = FindBuiltinKernel(a.reference))) {
    std::cerr << "ki-kernel-bench: no reference kernel named " << a.reference << "\n";
    return 2;
  }
  if (!ApplyTune(a.tune, &err)) {
    std::cerr << "ki-kernel-bench: " << err << "\n";
    return 2;
  }
  auto def = LoadDefinition(a.definition);
  if (!def.ok()) {
    std::cerr << "ki-kernel-bench: " << def.status().message() << "\n";
    return 2;
  }

  struct Item {
    Workload w;
    LengthSplit split;
  };
  std::vector<Item> items;
  const LengthSplit file_split = a.lengths == "equal" ? LengthSplit::kEqual : LengthSplit::kRandom;
  if (!a.workloads.empty()) {
    auto ws = LoadWorkloads(a.workloads);
    if (!ws.ok()) {
      std::cerr << "ki-kernel-bench: " << ws.status().message() << "\n";
      return 2;
    }
    const bool by_index = !a.workload.empty() && a.workload.find_first_not_of("0123456789") == std::string::npos;
    for (size_t i = 0; i < ws->size(); ++i) {
      const Workload& w = (*ws)[i];
      if (by_index && a.workload != std::to_string(i)) continue;
      if (!by_index && !a.workload.empty() && w.uuid.rfind(a.workload, 0) != 0) continue;
      items.push_back({w, file_split});
    }
    if (items.empty()) {
      std::cerr << "ki-kernel-bench: no workload matches " << a.workload << "\n";
      return 2;
    }
  }
  if (!a.synthetic.empty()) {
    std::stringstream ss(a.synthetic);
    for (std::string spec; std::getline(ss, spec, ',');) {
      const size_t x = spec.find('x');
      const long long b = std::atoll(spec.c_str());
      const long long t = x == std::string::npos ? 0 : std::atoll(spec.c_str() + x + 1);
      if (b <= 0 || t < 0) {
        std::cerr << "ki-kernel-bench: bad --synthetic entry " << spec << "\n";
        return 2;
      }
      items.push_back({MakePagedDecodeWorkload("synthetic-" + spec, b, t, 1.0 / std::sqrt(128.0)),
                       a.lengths == "random" ? LengthSplit::kRandom : LengthSplit::kEqual});
    }
  }

  RunOptions opt;
  opt.generator.seed = a.seed;
  opt.check = a.check;
  opt.check_runs = a.check_runs;
  opt.time = a.time;
  opt.reference = reference;
  opt.timing.warmup = a.warmup;
  opt.timing.iterations = a.iters;
  opt.timing.trials = a.trials;
  opt.timing.flush_l2 = a.flush;
  opt.timing.flush_kind = a.flush_kind == "read"        ? ki::gpu::FlushKind::kRead
                          : a.flush_kind == "zero-read" ? ki::gpu::FlushKind::kZeroThenRead
                                                        : ki::gpu::FlushKind::kZero;
  opt.timing.prefer_cupti = !a.events;
  opt.timing.graph_calls = a.graph_calls;

  std::printf("kernel %s, definition %s, seed %llu, L2 flush %s\n", kernel->info.name, def->name.c_str(),
              static_cast<unsigned long long>(a.seed), a.flush ? a.flush_kind.c_str() : "none");
  std::printf("%3s %-22s %5s %7s %-20s %9s %9s %8s %-14s %9s %9s %9s %9s %7s\n", "#", "workload", "batch", "tokens",
              "status", "max_abs", "max_rel", "matched", "timer", "median_us", "p05_us", "p95_us", "graph_us", "TB/s");
  std::vector<std::string> json;
  bool all_passed = true;
  for (size_t i = 0; i < items.size(); ++i) {
    opt.generator.lengths = items[i].split;
    const RunResult r = RunWorkload(*kernel, *def, items[i].w, opt);
    all_passed = all_passed && r.status == RunStatus::kPassed;
    auto ax = [&](const char* n) -> long long {
      auto it = r.axes.find(n);
      return it == r.axes.end() ? -1 : it->second;
    };
    const double tbs = r.timing.measured && r.timing.latency_us > 0
                           ? static_cast<double>(r.minimum_bytes) / (r.timing.latency_us * 1e-6) / 1e12
                           : -1;
    std::printf("%3zu %-22.22s %5lld %7lld %-20s %9s %9s %8s %-14s %9s %9s %9s %9s %7s\n", i,
                items[i].w.uuid.c_str(), ax("batch_size"), ax("num_kv_indices"), RunStatusName(r.status),
                r.correctness.checked ? Sci(r.correctness.max_abs_error).c_str() : "-",
                r.correctness.checked ? Sci(r.correctness.max_rel_error).c_str() : "-",
                r.correctness.checked ? Fmt(r.correctness.matched_ratio, 4).c_str() : "-",
                r.timing.measured ? r.timing.timer.c_str() : "-", Fmt(r.timing.latency_us).c_str(),
                r.timing.measured ? Fmt(r.timing.stats.p05).c_str() : "-",
                r.timing.measured ? Fmt(r.timing.stats.p95).c_str() : "-", Fmt(r.timing.graph_per_call_us).c_str(),
                Fmt(tbs).c_str());
    if (r.status != RunStatus::kPassed) std::printf("    %s\n", r.message.c_str());
    if (a.show_plan) PrintPlan(ax("batch_size"), ax("num_kv_indices"));
    if (!r.timing.timer_note.empty() && i == 0) std::printf("    timer note: %s\n", r.timing.timer_note.c_str());
    std::fflush(stdout);
    json.push_back(ToJson(r, a.samples, 2));
  }
  std::string out = "[\n";
  for (size_t i = 0; i < json.size(); ++i) out += json[i] + (i + 1 < json.size() ? ",\n" : "\n");
  out += "]\n";
  if (a.json.empty()) {
    std::cout << out;
  } else {
    std::ofstream f(a.json);
    f << out;
    if (!f) {
      std::cerr << "ki-kernel-bench: cannot write " << a.json << "\n";
      return 2;
    }
  }
  std::printf("%s\n", all_passed ? "all passed" : "FAILED");
  return all_passed ? 0 : 1;
}
