// Cohort keys: the comparison key of a BenchmarkRun (ranking-v1's cohorts)
// and the cohort key of a ServingRun (serving-v1), exactly as
// docs/kernelindex-identity.md and KernelIndex define them.
#include <algorithm>
#include <set>

#include "ki/catalog.h"

namespace ki::catalog {

namespace {

Result<Digest> DigestOfJcs(const Json& value) {
  KI_ASSIGN_OR_RETURN(std::string canonical, Canonicalize(value));
  return Sha256Of(canonical);
}

std::string StringOr(const Json& obj, const char* field, std::string_view fallback) {
  if (obj.is_object()) {
    auto it = obj.find(field);
    if (it != obj.end() && it->is_string()) return it->get<std::string>();
  }
  return std::string(fallback);
}

// A JSON number as ECMAScript's String(n) writes it (template literals).
std::string JsNumber(const Json& v) {
  if (v.is_number()) return FormatJcsNumber(v.get<double>());
  if (v.is_string()) return v.get<std::string>();
  return "undefined";
}

}  // namespace

Result<Digest> CorrectnessKey(const Json& workload_spec) {
  Json correctness = nullptr;
  if (workload_spec.is_object()) {
    auto it = workload_spec.find("correctness");
    if (it != workload_spec.end()) correctness = *it;
  }
  return DigestOfJcs(Json{{"correctness", correctness}});
}

std::string MetricKey(const Json& run_spec) {
  if (!run_spec.is_object()) return "none";
  if (auto t = run_spec.find("timing"); t != run_spec.end() && t->is_object()) {
    return "latency:" + StringOr(*t, "primaryStatistic", "undefined") + ":ns";
  }
  if (auto m = run_spec.find("measurements"); m != run_spec.end() && m->is_array() && !m->empty()) {
    const Json& first = (*m)[0];
    return StringOr(first, "metric", "undefined") + ":" + StringOr(first, "statistic", "undefined") + ":" +
           StringOr(first, "unit", "undefined");
  }
  return "none";
}

Result<Digest> ComparisonKey(const ComparisonParts& p) {
  return DigestOfJcs(Json{{"v", 1},
                          {"operation", p.operation},
                          {"workload", p.workload},
                          {"protocol", p.protocol},
                          {"environment", p.environment},
                          {"correctness", p.correctness},
                          {"metric", p.metric}});
}

std::string ServingProtocolKey(const Json& run_spec, const Json& workload_spec) {
  const Json empty = Json::object();
  const Json& harness = run_spec.contains("harness") ? run_spec["harness"] : empty;
  bool streaming = workload_spec.is_object() && workload_spec.value("streaming", false);
  return StringOr(harness, "name", "undefined") + "/" + StringOr(harness, "version", "undefined") + "/" +
         StringOr(run_spec, "placement", "unspecified") + "/" + (streaming ? "streaming" : "non_streaming") + "/" +
         StringOr(workload_spec, "loadGeneration", "undefined");
}

std::string ServingTopologyKey(const Json& run_spec) {
  const Json empty = Json::object();
  const Json& t = run_spec.contains("topology") ? run_spec["topology"] : empty;
  auto num = [&](const char* f) { return t.contains(f) ? JsNumber(t[f]) : std::string("undefined"); };
  return StringOr(t, "acceleratorVendor", "unknown") + "/" + StringOr(t, "acceleratorModel", "undefined") + "/" +
         num("acceleratorsPerNode") + "x" + num("nodeCount") + "/" + StringOr(t, "interconnect", "unspecified");
}

std::string MetricSetKey(const Json& run_spec) {
  // Distinct `metric·statistic` pairs sorted as JavaScript sorts strings
  // (UTF-16 code units), joined by commas.
  std::vector<std::string> pairs;
  if (auto m = run_spec.find("measurements"); m != run_spec.end() && m->is_array()) {
    std::set<std::string> seen;
    for (const Json& e : *m) {
      std::string p = StringOr(e, "metric", "undefined") + "\xC2\xB7" + StringOr(e, "statistic", "undefined");
      if (seen.insert(p).second) pairs.push_back(std::move(p));
    }
  }
  std::sort(pairs.begin(), pairs.end(), [](const std::string& a, const std::string& b) { return Utf16Less(a, b); });
  std::string out;
  for (const auto& p : pairs) out += (out.empty() ? "" : ",") + p;
  return out;
}

Result<Digest> ServingCohortKey(const ServingCohortParts& p) {
  return DigestOfJcs(Json{{"modelDigest", p.model},
                          {"tokenizer", p.tokenizer ? Json(*p.tokenizer) : Json(nullptr)},
                          {"workloadDigest", p.workload},
                          {"protocolKey", p.protocol},
                          {"topologyKey", p.topology},
                          {"qualityPolicy", p.quality_policy},
                          {"metricSetKey", p.metric_set}});
}

}  // namespace ki::catalog
