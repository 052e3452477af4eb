// The verdict of a rerun: did the original's number hold (docs/format.md,
// "Rerun verdicts"; the statistics are docs/statistics.md's).
#include "run/verdict.h"

#include <cstdio>

namespace ki::run::internal {
namespace {

std::optional<double> PrimaryLatency(const Json& spec) {
  if (!spec.contains("timing") || !spec["timing"].is_object()) return std::nullopt;
  const Json& t = spec["timing"];
  std::string stat = t.value("primaryStatistic", "mean");
  if (!t.contains("latencyNs") || !t["latencyNs"].is_object()) return std::nullopt;
  const Json& l = t["latencyNs"];
  if (!l.contains(stat) || !l[stat].is_number()) return std::nullopt;
  return l[stat].get<double>();
}

std::string Hex64(uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

}  // namespace

Result<stats::ReproductionVerdict> JudgeRerun(Store& store, const Json& original_spec, const RunOutcome& fresh,
                                              double tolerance) {
  // The re-run is stored by now and must still be linked: samples that
  // cannot be read (a damaged or hand-made blob) leave the recorded value
  // to judge by, and the verdict's test says so (value-ratio).
  auto read = [&](const Json& spec) -> std::optional<std::vector<double>> {
    auto r = SamplesOfRun(store, spec);
    return r.ok() ? *r : std::nullopt;
  };
  std::optional<std::vector<double>> orig_samples = read(original_spec), fresh_samples;
  if (fresh.status == "passed") fresh_samples = read(fresh.spec);
  stats::ReproductionInput in;
  in.original_passed = original_spec.value("status", "") == "passed";
  in.fresh_passed = fresh.status == "passed";
  in.original_value = PrimaryLatency(original_spec);
  in.fresh_value = fresh.latency_ns;
  if (orig_samples) in.original_samples = *orig_samples;
  if (fresh_samples) in.fresh_samples = *fresh_samples;
  in.tolerance = tolerance;
  return stats::JudgeReproduction(in);
}

Json VerdictJson(const stats::ReproductionVerdict& v) {
  Json j = {{"outcome", std::string(stats::ReproductionName(v.outcome))},
            {"test", v.test},
            {"tolerance", v.tolerance},
            {"ratio", v.ratio ? Json(*v.ratio) : Json(nullptr)},
            {"words", v.words}};
  if (v.interval) {
    j["interval"] = Json::array({v.interval->low, v.interval->high});
    j["confidence"] = v.interval->confidence;
    j["resamples"] = v.interval->resamples;
    j["seed"] = Hex64(v.interval->seed);
  }
  if (v.u_test)
    j["uTest"] = {{"u1", v.u_test->u1}, {"pValue", v.u_test->p_value},
                  {"method", std::string(stats::UMethodName(v.u_test->method))}};
  return j;
}

}  // namespace ki::run::internal
