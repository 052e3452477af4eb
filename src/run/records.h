// The manifests and tables a run writes (docs/format.md, "Run records").
// Internal to src/run.
#pragma once

#include <optional>
#include <string>

#include "ki/catalog.h"
#include "ki/harness.h"
#include "ki/json.h"
#include "ki/run.h"
#include "ki/store.h"

namespace ki::run::internal {

inline constexpr std::string_view kRunsTable = "run.runs";        // run (32) -> facts JSON
inline constexpr std::string_view kRerunsTable = "run.reruns";    // original (32) + rerun (32) -> ""
inline constexpr std::string_view kOriginalTable = "run.original";  // rerun (32) -> original digest text
inline constexpr std::string_view kVerdictsTable = "run.verdicts";  // rerun (32) -> verdict JSON
inline constexpr std::string_view kSamplesMediaType = "application/vnd.ki.run-samples+json";
inline constexpr std::string_view kSamplesFormat = "ki.run-samples/v1";
inline constexpr std::string_view kComparator = "ki_atol_rtol";

// BenchmarkProtocol spec of ki's harness with these settings.
Json ProtocolSpec(const HarnessSettings& s, bool cuda, const std::string& timer);
// Settings back from a ki protocol; InvalidInput for another harness's.
Result<HarnessSettings> SettingsFromProtocol(const Json& protocol_spec);

// ExecutionEnvironment spec: from the harness's capture when there is one,
// else from the host (and nvidia-smi for a GPU).
Json EnvironmentSpec(Env& env, const Json* harness_environment, bool cuda, int device, const std::string& compiler);

// The BenchmarkRun's timing from the harness's result (its `timing`).
Json TimingJson(const Json& harness_result);
// The artifact URI of an object of this store's: ki:blob/sha256:<hex>.
std::string Artifact(const Digest& d);

// The comparison key of a run (docs/kernelindex-identity.md, "Comparison key").
Result<Digest> CohortKeyOf(const Json& run_spec, const Json& workload_spec);
// The ranking facts of a run, as the catalog keeps them.
catalog::RankEntry EntryOf(const Digest& run, const Json& run_spec, const std::string& run_name,
                           const std::string& implementation_name, catalog::Evidence evidence);

// Indexes a stored run in its comparison group (the catalog's tables), so
// `ki rank` lists it beside imported runs of the same group.
Result<Digest> IndexInCohort(Batch& batch, const Manifest& run, const Json& workload_spec,
                             const std::string& run_name, const std::string& implementation_name);

}  // namespace ki::run::internal
