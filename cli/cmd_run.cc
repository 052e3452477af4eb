// ki run --implementation REF --workload REF [--protocol REF] [--seed N]
//        [--device cuda:N|cpu] [--timeout S] [--json]
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
  return j;
}

namespace {

struct Options {
  run::RunRequest req;
  bool json = false;
};

RunFn Setup(CLI::App* sub, GlobalOptions* g) {
  auto o = std::make_shared<Options>();
  sub->add_option("--implementation", o->req.implementation, "the ImplementationRevision to run (REF)")->required();
  sub->add_option("--workload", o->req.workload, "the WorkloadCase to run it on (REF)")->required();
  sub->add_option("--protocol", o->req.protocol, "repeat the settings of this ki BenchmarkProtocol (REF)");
  sub->add_option("--seed", o->req.seed, "seed of the generated inputs (default 0)");
  sub->add_option("--device", o->req.device, "cuda:N or cpu (default: from the implementation's language)");
  sub->add_option("--timeout", o->req.timeout_s, "seconds the kernel's process may take (default 120)")
      ->check(CLI::PositiveNumber);
  sub->add_flag("--json", o->json, "print the outcome as JSON");
  return [o, g]() -> Result<int> {
    KI_ASSIGN_OR_RETURN(auto store, OpenStore(*g, OpenMode::kReadWrite));
    KI_ASSIGN_OR_RETURN(run::RunOutcome r, run::Run(*store, o->req));
    if (o->json) PrintJson(RunOutcomeJson(r));
    else PrintRunSummary(r, std::cout);
    // A stored failing run is a result, not an error of ki: exit 0 when it
    // passed, 1 when the kernel failed (so scripts can tell).
    return r.status == "passed" ? 0 : 1;
  };
}

KI_REGISTER_COMMAND(run, {"run", "Build an implementation and run it on a stored workload", Setup, 70});

}  // namespace
}  // namespace ki::cli
