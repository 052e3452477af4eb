// Reading a run's timed samples back from its raw-samples blob, and the
// verdict table of reruns (docs/format.md, "Run records").
#include <cmath>

#include "ki/run.h"
#include "json/fields.h"
#include "run/records.h"

namespace ki::run {

Result<std::optional<std::vector<double>>> SamplesOfRun(Store& store, const Json& run_spec) {
  using None = std::optional<std::vector<double>>;
  std::string ref = run_spec.value("/timing/rawSamples/digest"_json_pointer, std::string());
  if (ref.empty()) ref = run_spec.value("/evidence/rawSamples/digest"_json_pointer, std::string());
  auto d = Digest::Parse(ref);
  if (!d.ok()) return None();
  KI_ASSIGN_OR_RETURN(auto info, store.Stat(*d));
  if (!info) return None();  // named, not held (a pulled record without its blobs)
  KI_ASSIGN_OR_RETURN(std::string bytes, store.Read(*d));
  Json j = Json::parse(bytes, nullptr, false);
  // Another harness's raw samples: ki does not know their layout.
  if (!j.is_object() || StringOr(j, "format") != internal::kSamplesFormat) return None();
  const std::string where = "the raw samples " + d->str();
  const Json* trials = nullptr;
  if (j.contains("harness") && j["harness"].is_object() && j["harness"].contains("timing") &&
      j["harness"]["timing"].is_object() && j["harness"]["timing"].contains("samples_us"))
    trials = &j["harness"]["timing"]["samples_us"];
  if (!trials) return None();  // the run was not timed (it failed)
  if (!trials->is_array()) return Status::InvalidInput(where + ": `harness.timing.samples_us` is not an array");
  std::vector<double> out;
  for (const Json& t : *trials) {
    if (!t.is_array()) return Status::InvalidInput(where + ": a trial of `harness.timing.samples_us` is not an array");
    for (const Json& v : t) {
      // The harness writes null for a value that was not finite.
      if (!v.is_number() || !std::isfinite(v.get<double>()) || v.get<double>() < 0)
        return Status::InvalidInput(where + ": a sample of `harness.timing.samples_us` is " + v.dump() +
                                    ", not a time in microseconds");
      out.push_back(v.get<double>() * 1000);  // ns, the unit of latencyNs
    }
  }
  if (out.empty()) return None();
  return std::optional<std::vector<double>>(std::move(out));
}

Result<std::optional<Json>> VerdictOf(Store& store, const Digest& rerun) {
  KI_ASSIGN_OR_RETURN(auto v, store.Get(internal::kVerdictsTable, rerun.raw()));
  if (!v) return std::optional<Json>();
  Json j = Json::parse(*v, nullptr, false);
  if (!j.is_object()) return Status::Corruption("run.verdicts entry of " + rerun.str() + " is not a JSON object");
  return std::optional<Json>(std::move(j));
}

}  // namespace ki::run
