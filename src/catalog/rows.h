// The rows of a KernelIndex export that the import keeps for the checks
// that need several rows (cross_rows.cc), and the two readers of an
// export row's fields both files use. Internal to catalog.
#pragma once

#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "ki/catalog.h"
#include "ki/json.h"
#include "ki/store.h"

namespace ki::catalog {

// An export row's string field, "" when absent or not a string.
std::string Str(const Json& obj, std::string_view field);
// An export row's field, null when absent.
Json Field(const Json& obj, std::string_view field);

// What each line's worker extracted for the cross-row check (import.cc,
// LineProcessor): workloads, implementations, models and serving workloads
// by digest, sources by id, and every run, serving run and record event.
struct ExportRows {
  std::unordered_map<std::string, Json> workloads, impls, models, serving_workloads, sources;
  std::vector<Json> runs, serving_runs, events;
};

// Checks every key and fact of the export that needs several rows: a
// run's comparison key needs its workload and implementation, a serving
// cohort the model and workload, supersession and the record events the
// whole run table (recomputed by ranking-v1). A part not in the export is
// read from the store. Mismatches, keys checked, cohort counts and
// reproduced record events go into `report`. It writes nothing: the groups
// are derived from the stored objects when the import's batch commits
// (groups.cc), so it can run beside the batch's writes (import.cc, Finish).
Status CheckCrossRows(Store& store, const ExportRows& rows, ImportReport* report);

}  // namespace ki::catalog
