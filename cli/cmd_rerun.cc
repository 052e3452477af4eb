// ki rerun REF [--implementation REF] [--device D] [--timeout S] [--key NAME] [--machine ID] [--json]
#include <cstdlib>
#include <iomanip>
#include <iostream>
#include <sstream>

#include "command.h"
#include "ki/run.h"

namespace ki::cli {

void PrintRunSummary(const run::RunOutcome& r, std::ostream& out);
Json RunOutcomeJson(const run::RunOutcome& r);

namespace {

struct RerunOptions {
  run::RerunRequest req;
  double timeout = 0;
  bool json = false;
};

std::string Latency(const Json& spec) {
  if (!spec.contains("timing")) return "-";
  std::string stat = spec["timing"].value("primaryStatistic", "mean");
  const Json& l = spec["timing"]["latencyNs"];
  if (!l.contains(stat) || !l[stat].is_number()) return "-";
  return FormatNs(l[stat].get<double>()) + " (" + stat + ")";
}

std::string Errors(const Json& spec) {
  if (!spec.contains("correctness")) return "-";
  const Json& c = spec["correctness"];
  char buf[96];
  std::snprintf(buf, sizeof buf, "abs %.3g, rel %.3g", c.value("maximumAbsoluteError", 0.0),
                c.value("maximumRelativeError", 0.0));
  return buf;
}

std::string Device(const Json& env) {
  if (!env.is_object()) return "(not in the store)";
  return env["hardware"].value("product", "?") + " (" + env["hardware"].value("architecture", "?") + ")";
}

void RerunRow(std::ostream& out, const std::string& k, const std::string& a, const std::string& b) {
  out << "  " << std::left << std::setw(14) << k << std::setw(34) << a << b << "\n";
}

RunFn SetupRerun(CLI::App* sub, GlobalOptions* g) {
  auto o = std::make_shared<RerunOptions>();
  sub->add_option("run", o->req.run, "the BenchmarkRun to re-run (REF)")->required();
  sub->add_option("--implementation", o->req.implementation,
                  "run this implementation instead, on the same workload, and rank it in the original's group");
  sub->add_option("--device", o->req.device, "cuda:N or cpu (default: the original's)");
  sub->add_option("--timeout", o->timeout, "seconds the kernel's process may take (default: the original's)")
      ->check(CLI::PositiveNumber);
  sub->add_option("--key", o->req.sign_key,
                  "sign the verdict with this local key: `reproduced` when the number held, `disputed` "
                  "when it did not (default: $KI_RUNNER_KEY)");
  sub->add_option("--tolerance", o->req.match_tolerance, "the band of a reproduced verdict: new/original (its 95% interval) within 1 +/- F (default 0.10)")
      ->check(CLI::Range(0.0, 10.0));
  sub->add_option("--machine", o->req.machine,
                  "the machine id the signed verdict names (default: $KI_MACHINE_ID, else host name and device)");
  sub->add_flag("--json", o->json, "print the comparison as JSON");
  return [o, g]() -> Result<int> {
    if (o->timeout > 0) o->req.timeout_s = o->timeout;
    if (o->req.sign_key.empty())
      if (const char* k = std::getenv("KI_RUNNER_KEY"); k && *k) o->req.sign_key = k;
    if (o->req.machine.empty())
      if (const char* m = std::getenv("KI_MACHINE_ID"); m && *m) o->req.machine = m;
    KI_ASSIGN_OR_RETURN(auto store, OpenStore(*g, OpenMode::kReadWrite));
    KI_ASSIGN_OR_RETURN(run::RerunOutcome r, run::Rerun(*store, o->req));
    const run::RunOutcome& f = r.fresh;
    if (o->json) {
      Json j = {{"original", r.original.str()},
                {"originalSpec", r.original_spec},
                {"rerun", RunOutcomeJson(f)},
                {"sameImplementation", r.same_implementation},
                {"ratio", r.ratio ? Json(*r.ratio) : Json(nullptr)},
                {"matched", r.matched},
                {"verdict", r.verdict ? *r.verdict : Json(nullptr)},
                {"environmentDifferences", r.environment_differences},
                {"attestation", r.attestation ? Json(r.attestation->str()) : Json(nullptr)},
                {"attestationPredicate", r.attestation ? Json(r.attestation_kind) : Json(nullptr)},
                {"attestationNote", r.attestation_note.empty() ? Json(nullptr) : Json(r.attestation_note)}};
      if (r.place)
        j["wouldRank"] = {{"rank", r.place->rank}, {"of", r.place->of}, {"best", r.place->best_name},
                          {"bestValue", r.place->best_value}, {"metric", r.place->metric}};
      PrintJson(j);
      if (!r.sign_status.ok()) return r.sign_status;  // after the comparison: the run is stored
      return f.status == "passed" ? 0 : 1;
    }
    std::ostringstream out;
    out << (r.same_implementation ? "re-ran " : "ran another implementation on the workload of ") << r.original.str()
        << "\n\n";
    RerunRow(out, "", "original", r.same_implementation ? "re-run" : "this implementation");
    RerunRow(out, "run", Short(r.original), Short(f.run));
    RerunRow(out, "status", r.original_spec.value("status", "?"), f.status);
    RerunRow(out, "latency", Latency(r.original_spec), Latency(f.spec));
    RerunRow(out, "errors", Errors(r.original_spec), Errors(f.spec));
    RerunRow(out, "device", Device(r.original_environment), Device(f.environment_spec));
    RerunRow(out, "observed", r.original_spec.value("observedAt", "?"), f.spec.value("observedAt", "?"));
    if (r.ratio) {
      char buf[128];
      std::snprintf(buf, sizeof buf, "%.3f (%s)", *r.ratio,
                    *r.ratio < 1 ? "the new run is faster" : *r.ratio > 1 ? "the new run is slower" : "equal");
      RerunRow(out, "ratio", "new / original", buf);
    }
    if (r.environment_differences.empty()) {
      out << "  environment   same\n";
    } else {
      out << "  environment differences:\n";
      for (const auto& d : r.environment_differences) out << "    " << d << "\n";
    }
    if (r.place) {
      out << "  would rank    " << r.place->rank << " of " << r.place->of << " in the original's group ("
          << r.place->metric << "; #1 " << r.place->best_name << ", " << FormatNs(r.place->best_value) << ")\n";
    }
    if (r.verdict) out << "  verdict       " << r.verdict->value("words", "") << "\n";
    if (r.attestation) out << "  attestation   " << r.attestation_kind << ", " << r.attestation->str() << "\n";
    if (!r.attestation_note.empty()) out << "  attestation   " << r.attestation_note << "\n";
    out << "\nnew run:\n";
    std::cout << out.str();
    PrintRunSummary(f, std::cout);
    if (!r.sign_status.ok()) return r.sign_status;  // after the comparison: the run is stored
    return f.status == "passed" ? 0 : 1;
  };
}

KI_REGISTER_COMMAND(rerun, {"rerun", "Re-run a stored run here and compare", SetupRerun, 71});

}  // namespace
}  // namespace ki::cli
