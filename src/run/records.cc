// Protocol, environment and cohort records of ki runs.
#include "run/records.h"

#include <sys/utsname.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <limits>
#include <sstream>

#include "ki/catalog.h"
#include "ki/env.h"
#include "run/process.h"

namespace ki::run::internal {
namespace {

std::string OsPrettyName(Env& env) {
  auto text = env.ReadFile("/etc/os-release", 1 << 20);
  std::istringstream f(text.ok() ? *text : std::string());
  for (std::string line; std::getline(f, line);) {
    if (line.rfind("PRETTY_NAME=", 0) == 0) {
      std::string v = line.substr(12);
      if (v.size() >= 2 && v.front() == '"' && v.back() == '"') v = v.substr(1, v.size() - 2);
      return v;
    }
  }
  return "";
}

// ExecutionEnvironment's hardware vendor of a CPU, from cpuinfo's vendor_id.
std::string CpuVendor(std::string_view vendor_id) {
  if (vendor_id == "GenuineIntel") return "intel";
  if (vendor_id == "AuthenticAMD") return "amd";
  return "unknown";
}

std::string Machine() {
  struct utsname u {};
  if (uname(&u) != 0) return "unknown";
  std::string m = u.machine;
  for (char& c : m)
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_')) c = '_';
  return m.empty() || !(m[0] >= 'a' && m[0] <= 'z') ? "unknown" : m;
}

std::string KernelRelease() {
  struct utsname u {};
  return uname(&u) == 0 ? std::string(u.release) : "";
}

// "Cuda compilation tools, release 12.8, V12.8.93" -> "12.8".
std::string CudaRelease(const std::string& nvcc_line) {
  size_t p = nvcc_line.find("release ");
  if (p == std::string::npos) return "";
  size_t e = nvcc_line.find(',', p);
  return nvcc_line.substr(p + 8, e == std::string::npos ? std::string::npos : e - p - 8);
}

}  // namespace

Json ProtocolSpec(const HarnessSettings& s, bool cuda, const std::string& timer) {
  // The L2 policy decides comparability (a warm-L2 number is not a cold-L2
  // number), so it is the family; the schema has no field of its own for it.
  std::string family = !cuda ? "ki_cpu_wall_clock" : (s.flush_l2 ? "ki_cold_l2" : "ki_warm_l2");
  char notes[256];
  std::snprintf(notes, sizeof notes,
                "%s; %d trials of %d timed calls after %d warm-up calls; headline: mean of the trial medians; "
                "atol %g, rtol %g",
                !cuda ? "CPU: wall clock around each call" : (s.flush_l2 ? "L2 flushed before every call" : "L2 not flushed"),
                s.trials, s.iterations, s.warmup, s.atol, s.rtol);
  return Json{{"harness", {{"name", "ki"}, {"version", KI_VERSION}}},
              {"measurement",
               {{"timer", timer},
                {"synchronization", cuda ? "per_trial" : "none"},
                {"compileIncluded", false},
                {"setupIncluded", false},
                {"warmupIterations", s.warmup},
                {"measuredIterations", s.iterations},
                {"samples", s.iterations * s.trials},
                {"inputRegeneration", "none"},
                {"outlierPolicy", "none; mean of per-trial medians"},
                {"primaryStatistic", "mean"}}},
              {"correctness", {{"reference", cuda ? "ki CUDA reference (fp32 accumulation), else the fp64 CPU reference"
                                                  : "ki fp64 CPU reference"},
                               {"comparator", kComparator}}},
              {"comparability", {{"family", family}, {"notes", notes}}}};
}

Result<HarnessSettings> SettingsFromProtocol(const Json& spec) {
  if (spec.value("/harness/name"_json_pointer, std::string()) != "ki")
    return Status::InvalidInput("the protocol's harness is not ki's; ki can only repeat its own settings");
  HarnessSettings s;
  const Json& m = spec["measurement"];
  // The schema allows counts up to 2^53; the harness counts in int. Read
  // with value<int>, 2^32 - 1 iterations became -1: the run ran nothing and
  // its protocol then failed validation (exit 4 after the build and run).
  auto count = [&](const char* field, int fallback) -> Result<int> {
    if (!m.is_object() || !m.contains(field)) return fallback;
    const Json& v = m[field];
    if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() > std::numeric_limits<int>::max())
      return Status::InvalidInput("protocol: measurement." + std::string(field) + " is " + v.dump() +
                                  ", not a count ki can run (0 to " +
                                  std::to_string(std::numeric_limits<int>::max()) + ")");
    return int(v.get<int64_t>());
  };
  KI_ASSIGN_OR_RETURN(s.warmup, count("warmupIterations", s.warmup));
  KI_ASSIGN_OR_RETURN(s.iterations, count("measuredIterations", s.iterations));
  KI_ASSIGN_OR_RETURN(int samples, count("samples", int(std::min<int64_t>(int64_t(s.iterations) * s.trials,
                                                                          std::numeric_limits<int>::max()))));
  s.trials = s.iterations > 0 ? std::max(1, samples / s.iterations) : s.trials;
  std::string family = spec.value("/comparability/family"_json_pointer, std::string());
  s.flush_l2 = family != "ki_warm_l2";
  // atol/rtol live in the notes text; parse them back when present.
  std::string notes = spec.value("/comparability/notes"_json_pointer, std::string());
  if (size_t p = notes.find("atol "); p != std::string::npos) s.atol = std::atof(notes.c_str() + p + 5);
  if (size_t p = notes.find("rtol "); p != std::string::npos) s.rtol = std::atof(notes.c_str() + p + 5);
  // A NaN or negative tolerance failed every element of a right kernel.
  for (auto [name, v] : {std::pair{"atol", s.atol}, {"rtol", s.rtol}}) {
    if (!std::isfinite(v) || v < 0)
      return Status::InvalidInput("protocol: comparability.notes gives " + std::string(name) + " " +
                                  std::to_string(v) + ", not a tolerance ki can use (a finite number >= 0)");
  }
  return s;
}

Json EnvironmentSpec(Env& env, const Json* h, bool cuda, int device, const std::string& compiler) {
  Json hw, sw = Json::object(), settings = Json::object();
  if (std::string os = OsPrettyName(env); !os.empty()) sw["operatingSystem"] = os;
  if (std::string k = KernelRelease(); !k.empty()) sw["kernel"] = k;
  if (!compiler.empty()) sw["compiler"] = compiler;
  if (cuda) {
    if (std::string r = CudaRelease(compiler); !r.empty()) sw["cudaToolkit"] = r;
    std::string name, cc, driver, locked;
    uint64_t mem = 0;
    if (h && h->contains("device")) {
      const Json& d = (*h)["device"];
      name = d.value("name", "");
      cc = d.value("compute_capability", "");
      driver = d.value("driver_version", "");
      mem = d.value("memory_bytes", uint64_t{0});
      locked = d.value("clocks_locked", "unknown");
    } else {
      // No capture (the kernel crashed or hung first): ask nvidia-smi.
      std::string line = FirstLineOf(env, {"nvidia-smi", "--query-gpu=name,compute_cap,driver_version",
                                           "--format=csv,noheader", "-i", std::to_string(device)});
      size_t a = line.find(", "), b = a == std::string::npos ? a : line.find(", ", a + 2);
      if (b != std::string::npos) {
        name = line.substr(0, a);
        cc = line.substr(a + 2, b - a - 2);
        driver = line.substr(b + 2);
      }
    }
    std::string arch = "unknown";
    if (!cc.empty()) {
      arch = "sm_";
      for (char c : cc)
        if (c != '.') arch.push_back(c);
    }
    hw = {{"vendor", "nvidia"}, {"product", name.empty() ? "unknown" : name}, {"architecture", arch}, {"count", 1}};
    if (mem > 0) hw["memoryBytes"] = mem;
    if (!driver.empty()) sw["driver"] = driver;
    if (locked == "yes" || locked == "no") settings["clocksLocked"] = locked == "yes";
  } else {
    // The harness's child read cpuinfo; read it here only without its
    // capture (the kernel crashed first).
    std::string model, vendor_id;
    if (h && h->contains("cpu_vendor")) {
      model = h->value("cpu_model", "");
      vendor_id = h->value("cpu_vendor", "");
    } else if (auto cpu = harness::ReadCpuInfo(env); cpu.ok()) {
      model = cpu->model_name;
      vendor_id = cpu->vendor_id;
    }
    hw = {{"vendor", CpuVendor(vendor_id)}, {"product", model.empty() ? "unknown" : model}, {"architecture", Machine()},
          {"count", 1}};
  }
  Json spec = {{"hardware", hw}, {"software", sw}};
  if (!settings.empty()) spec["settings"] = settings;
  return spec;
}

Result<Digest> CohortKeyOf(const Json& run_spec, const Json& workload_spec) {
  catalog::ComparisonParts parts;
  parts.operation = workload_spec.value("operationSpecDigest", "");
  parts.workload = run_spec.value("workloadDigest", "");
  parts.protocol = run_spec.value("protocolDigest", "");
  parts.environment = run_spec.value("environmentDigest", "");
  KI_ASSIGN_OR_RETURN(Digest corr, catalog::CorrectnessKey(workload_spec));
  parts.correctness = corr.str();
  parts.metric = catalog::MetricKey(run_spec);
  return catalog::ComparisonKey(parts);
}

catalog::RankEntry EntryOf(const Digest& run, const Json& spec, const std::string& run_name,
                           const std::string& implementation_name, catalog::Evidence evidence) {
  catalog::RankEntry e;
  e.run = run;
  e.id = run.hex();
  e.name = run_name;
  e.implementation = implementation_name;
  e.status = spec.value("status", "");
  e.observed_at = spec.value("observedAt", "");
  e.evidence = evidence;
  // A run stored here is published to this store; ranking-v1 needs that.
  e.published = true;
  if (spec.contains("timing")) {
    const Json& tm = spec["timing"];
    std::string stat = tm.value("primaryStatistic", "mean");
    if (tm["latencyNs"].contains(stat) && tm["latencyNs"][stat].is_number()) {
      e.value = tm["latencyNs"][stat].get<double>();
      e.unit = "ns";
    }
    const Json& ci = tm["latencyNs"].value("confidence95", Json::array());
    if (ci.size() == 2 && ci[0].is_number() && ci[1].is_number())
      e.interval = std::make_pair(ci[0].get<double>(), ci[1].get<double>());
  }
  return e;
}

// The run joins its group when the batch that stores it commits (the
// catalog's derived index, catalog/groups.cc); this says which group.
Result<Digest> IndexInCohort(Batch&, const Manifest& run, const Json& workload_spec, const std::string&,
                             const std::string&) {
  catalog::RegisterGroupIndex();
  return CohortKeyOf(run.spec, workload_spec);
}

namespace {
// Harness microseconds as the schema's whole nanoseconds (never negative).
int64_t Ns(double us) { return std::llround(std::max(0.0, us) * 1000.0); }
}  // namespace

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

}  // namespace ki::run::internal
