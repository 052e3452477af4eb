// ki run --implementation REF [--implementation REF ...] --workload REF
//        [--protocol REF] [--seed N] [--device cuda:N|cpu] [--timeout S]
//        [--speedup] [--json]
#include <iostream>

#include "command.h"
#include "ki/run.h"

namespace ki::cli {

// Shared with cmd_rerun.cc: the summary of one run.
void PrintRunSummary(const run::RunOutcome& r, std::ostream& out);
Json RunOutcomeJson(const run::RunOutcome& r);

void PrintRunSummary(const run::RunOutcome& r, std::ostream& out) {
  out << r.run.str() << "\n";
  out << "  status       " << r.status << (r.message.empty() || r.status == "passed" ? "" : ": " + r.message) << "\n";
  out << "  device       " << r.device << " (" << r.device_name << ")\n";
  if (r.spec.contains("correctness")) {
    const Json& c = r.spec["correctness"];
    char buf[160];
    std::snprintf(buf, sizeof buf, "max abs error %.3g, max rel error %.3g, matched %.4f",
                  c.value("maximumAbsoluteError", 0.0), c.value("maximumRelativeError", 0.0), c.value("matchedRatio", 0.0));
    out << "  correctness  " << buf << "\n";
  }
  if (r.latency_ns) {
    const Json& l = r.spec["timing"]["latencyNs"];
    out << "  latency      " << FormatNs(*r.latency_ns) << " (mean of trial medians; median "
        << FormatNs(l.value("median", 0.0)) << ", p05 " << FormatNs(l.value("p05", 0.0)) << ", p95 "
        << FormatNs(l.value("p95", 0.0)) << ", " << r.spec["timing"].value("samples", 0) << " samples, " << r.timer
        << ")\n";
  }
  if (r.speedup_factor && r.reference_latency_ns) {
    char buf[160];
    std::snprintf(buf, sizeof buf, "%.2fx (reference %s, same protocol)", *r.speedup_factor,
                  FormatNs(*r.reference_latency_ns).c_str());
    out << "  speedup      " << buf << "\n";
  } else if (!r.reference_status.empty()) {
    out << "  speedup      none: the reference's run: " << r.reference_status << "\n";
  }
  out << "  build        " << (r.build_cached ? "cached" : "compiled") << "\n";
  for (const auto& n : r.notes) out << "  note         " << n << "\n";
  out << "  records      implementation " << Short(r.implementation) << ", workload " << Short(r.workload)
      << ", protocol " << Short(r.protocol) << ", environment " << Short(r.environment) << "\n";
  if (r.cohort) out << "  group        " << r.cohort->str() << "  (ki rank " << r.run.hex().substr(0, 12) << ")\n";
}

Json RunOutcomeJson(const run::RunOutcome& r) {
  Json j = {{"run", r.run.str()},         {"status", r.status},
            {"message", r.message},        {"device", r.device},
            {"deviceName", r.device_name}, {"implementation", r.implementation.str()},
            {"workload", r.workload.str()}, {"protocol", r.protocol.str()},
            {"environment", r.environment.str()}, {"buildCached", r.build_cached},
            {"notes", r.notes},            {"spec", r.spec}};
  j["latencyNs"] = r.latency_ns ? Json(*r.latency_ns) : Json(nullptr);
  j["comparisonKey"] = r.cohort ? Json(r.cohort->str()) : Json(nullptr);
  j["referenceLatencyNs"] = r.reference_latency_ns ? Json(*r.reference_latency_ns) : Json(nullptr);
  j["speedupFactor"] = r.speedup_factor ? Json(*r.speedup_factor) : Json(nullptr);
  return j;
}

namespace {

struct RunCliOptions {
  run::RunRequest req;
  std::vector<std::string> implementations;
  bool json = false;
};

RunFn SetupRun(CLI::App* sub, GlobalOptions* g) {
  auto o = std::make_shared<RunCliOptions>();
  sub->add_option("--implementation", o->implementations,
                  "the ImplementationRevision to run (REF); several run one after another on the same inputs")
      ->required();
  sub->add_option("--workload", o->req.workload, "the WorkloadCase to run it on (REF)")->required();
  sub->add_option("--protocol", o->req.protocol, "repeat the settings of this ki BenchmarkProtocol (REF)");
  sub->add_option("--seed", o->req.seed, "seed of the generated inputs (default 0)");
  sub->add_option("--device", o->req.device, "cuda:N or cpu (default: from the implementation's language)");
  sub->add_option("--timeout", o->req.timeout_s, "seconds the kernel's process may take (default 120)")
      ->check(CLI::PositiveNumber);
  sub->add_flag("--speedup", o->req.speedup,
                "also time the definition's reference (Python, torch) and record the speedup factor");
  sub->add_flag("--json", o->json, "print the outcome as JSON (an array with several --implementation)");
  return [o, g]() -> Result<int> {
    KI_ASSIGN_OR_RETURN(auto store, OpenStore(*g, OpenMode::kReadWrite));
    // Each implementation in its own child process, in the order given; an
    // error of ki stops the command, a failing run does not.
    Json all = Json::array();
    bool passed = true;
    for (size_t i = 0; i < o->implementations.size(); ++i) {
      run::RunRequest req = o->req;
      req.implementation = o->implementations[i];
      KI_ASSIGN_OR_RETURN(run::RunOutcome r, run::Run(*store, req));
      passed = passed && r.status == "passed";
      if (o->json) {
        all.push_back(RunOutcomeJson(r));
      } else {
        if (i > 0) std::cout << "\n";
        PrintRunSummary(r, std::cout);
        std::cout.flush();
      }
    }
    if (o->json) PrintJson(o->implementations.size() == 1 ? all[0] : all);
    // A stored failing run is a result, not an error of ki: exit 0 when every
    // run passed, 1 when a kernel failed (so scripts can tell).
    return passed ? 0 : 1;
  };
}

KI_REGISTER_COMMAND(run, {"run", "Build an implementation and run it on a stored workload", SetupRun, 70});

}  // namespace
}  // namespace ki::cli
