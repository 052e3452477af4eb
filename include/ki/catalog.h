// Catalog: the KernelIndex catalog export inside a ki store.
//
// `ImportKernelIndex` reads an export (JSON lines `{"table": T, "row": {...}}`,
// plain or zstd-compressed), recomputes every digest and key it carries
// (docs/kernelindex-identity.md), stores its manifests through one Batch and
// keeps the export's own facts (sources, publication, retraction,
// supersession, measurements, record events) in `catalog.*` tables
// (docs/format.md, "Catalog tables"). Cohorts, ranks (policy ranking-v1) and
// record histories are answered from those tables; `JsonPatch` and
// `FieldDiffs` compare two manifests.
//
// Thread-safety: functions taking a Store follow the Store's rules (one
// writer); the pure functions are safe to call from any thread.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ki/digest.h"
#include "ki/env.h"
#include "ki/json.h"
#include "ki/manifest.h"
#include "ki/status.h"
#include "ki/store.h"

namespace ki::catalog {

inline constexpr std::string_view kRankingPolicy = "ranking-v1";

// ---------------------------------------------------------------- keys

// digest of JCS({"correctness": <workload spec.correctness, or null>}).
Result<Digest> CorrectnessKey(const Json& workload_spec);
// `latency:<primaryStatistic>:ns` when the run has timing, else the first
// measurement as `<metric>:<statistic>:<unit>`, else `none`.
std::string MetricKey(const Json& run_spec);

struct ComparisonParts {
  std::string operation;    // the workload's spec.operationSpecDigest
  std::string workload;     // the run's workloadDigest
  std::string protocol;     // spec digest of the run's protocol
  std::string environment;  // spec digest of the run's environment
  std::string correctness;  // CorrectnessKey of the workload
  std::string metric;       // MetricKey of the run
};
Result<Digest> ComparisonKey(const ComparisonParts& parts);

// Serving (policy serving-v1): the cohort of a ServingRun.
std::string ServingProtocolKey(const Json& run_spec, const Json& workload_spec);
std::string ServingTopologyKey(const Json& run_spec);
std::string MetricSetKey(const Json& run_spec);
struct ServingCohortParts {
  std::string model;  // modelDigest
  std::optional<std::string> tokenizer;
  std::string workload;  // serving workloadDigest
  std::string protocol, topology, quality_policy, metric_set;
};
Result<Digest> ServingCohortKey(const ServingCohortParts& parts);

// ---------------------------------------------------------------- catalog objects

// What a catalog export says about a run beyond its manifests (publication,
// retraction, supersession, verification, record events), kept as a blob
// of its own so that it is content-addressed, checked, and travels with
// push and pull (docs/format.md, "Catalog objects").
inline constexpr std::string_view kFactsMediaType = "application/vnd.ki.catalog.facts.v1+json";
inline constexpr std::string_view kFactsType = "ki.catalog.facts/v1";
// One stored import: its summary and the facts objects it brought.
inline constexpr std::string_view kImportMediaType = "application/vnd.ki.catalog.import.v1+json";
inline constexpr std::string_view kImportType = "ki.catalog.import/v1";

struct RunFactsObject {
  Digest subject;             // the run
  std::string table;          // "benchmark_runs" or "serving_runs"
  Json row;                   // the export row's facts (format.md lists the fields)
  std::vector<Json> events;   // the export's record_events rows naming this run
  Json source;                // the export's sources row of the run, or null
};
Result<RunFactsObject> ParseFactsObject(std::string_view bytes, const std::string& where);
// RFC 8785 canonical JSON: the same facts always make the same object.
Result<std::string> EncodeFactsObject(const RunFactsObject& f);

// The facts objects about `d` (a run), appended to `out`.
Status FactsAbout(Store& store, const Digest& d, std::vector<Digest>* out);
// What a catalog object names, appended to `out`: an import object's facts,
// a facts object's run. Nothing for other objects.
Status ObjectsNamedBy(Store& store, const ObjectInfo& info, std::vector<Digest>* out);

// Registers the comparison-group index (catalog's derived tables) with the
// store module: every batch of this process then keeps the groups. Done
// before main in any program that links the catalog; calling it again is
// harmless.
void RegisterGroupIndex();

// What a run needs before it can join a comparison group, when the store
// lacks it: e.g. {"WorkloadCase", "sha256:…"}. Empty when the run is in
// its group (or is no run).
Result<std::vector<std::pair<std::string, std::string>>> MissingForGroup(Store& store, const Digest& run);

// ---------------------------------------------------------------- import

struct ImportProgress {
  uint64_t lines_done = 0;
  uint64_t lines_total = 0;  // known once the input is decompressed
  std::string_view phase;    // "reading", "checking", "storing", "indexing"
};

struct ImportOptions {
  bool keep_going = false;  // store even when stored keys do not recompute
  int threads = 2;          // parsing threads (the writer is one more)
  std::function<void(const ImportProgress&)> progress;
  // For tests: called on the parsing thread before each line (1-based) is
  // read; an exception it throws is handled as one from reading that line.
  std::function<void(uint64_t line)> before_line;
};

// A stored digest or key that did not recompute.
struct Mismatch {
  std::string table;     // export table, e.g. "benchmark_runs"
  std::string row_id;    // the row's id
  std::string field;     // e.g. "comparisonKey"
  std::string stored;    // the export's value
  std::string computed;  // ki's value (or why it could not be computed)
};

// A line that could not be read as an export row: not JSON, not
// {"table", "row"}, a row without its manifest, a manifest that does not
// parse or validate. Nothing on it was recomputed, so it is no mismatch.
struct MalformedLine {
  uint64_t line = 0;      // 1-based line of the export
  std::string table;      // when the line got that far, else ""
  std::string row_id;     // likewise
  std::string field;      // "(line)", "manifest", "manifest.run", ...
  std::string message;    // what is wrong, starting "<source>:<line>"
};

struct KindCount {
  uint64_t added = 0;     // not in the store before this import
  uint64_t existing = 0;  // already there
};

struct ImportReport {
  std::string source;        // file name or "-"
  Digest content;            // SHA-256 of the decompressed export
  uint64_t lines = 0;
  std::map<std::string, uint64_t> rows;  // per export table
  std::map<std::string, KindCount> kinds;  // per manifest kind (unique digests)
  KindCount absent;           // artifacts recorded as known-but-missing
  uint64_t keys_checked = 0;  // digests and keys recomputed
  uint64_t cohorts = 0, serving_cohorts = 0;  // kernel comparison groups; serving cohorts
  uint64_t record_events = 0, record_events_reproduced = 0;
  // Events naming a run (or previous run) that neither the export nor the
  // store holds (a partial export, like the test slice): not checkable.
  uint64_t record_events_unchecked = 0;
  std::vector<Mismatch> mismatches;
  std::vector<MalformedLine> malformed;  // in line order
  bool stored = false;  // false when mismatches or malformed lines stopped the import
};

// Reads a whole export from a file ("-" for standard input); zstd input is
// recognised by its magic number and decompressed as a stream.
Result<std::string> ReadExport(const std::string& path, Env* env = Env::Default());

// Imports export text (JSON lines). Everything goes into one Batch: an
// interrupted import stores nothing, and importing the same text again adds
// nothing. With mismatches or malformed lines and !keep_going, nothing is
// stored and the report lists them (the caller decides the exit status);
// with keep_going, a malformed line is skipped.
Result<ImportReport> ImportKernelIndex(Store& store, std::string_view text, std::string_view source,
                                       const ImportOptions& opts = {});

// ---------------------------------------------------------------- ranks

enum class Evidence : uint8_t { kReported = 1, kReproducible = 2, kVerified = 3, kReplicated = 4 };
std::string_view EvidenceName(Evidence e);

// One run of a cohort, as ranking-v1 sees it.
struct RankEntry {
  Digest run;
  std::string id;        // the export's row id (display order in ties)
  std::string name;      // the run's metadata.name
  std::string implementation;  // the implementation's metadata.name, when known
  std::optional<double> value;  // primary value, lower is better
  std::string unit;             // "ns", "s", ...
  std::optional<std::pair<double, double>> interval;  // confidence95
  Evidence evidence = Evidence::kReported;
  std::string observed_at;  // RFC 3339
  std::string status;
  bool published = false, retracted = false, superseded = false;
  // Filled by RankV1:
  int rank = 0;  // 1-based dense rank; 0 when ineligible
  bool tied_with_previous = false;
  std::vector<std::string> reasons;  // why ineligible (UNPUBLISHED, STATUS_*, ...)
};

std::vector<std::string> EligibilityReasons(const RankEntry& e);

struct Ranking {
  Digest cohort;
  bool source_native = false;
  std::string metric;
  Json description;  // the cohort's parts (operation, workload, protocol, ...)
  std::vector<RankEntry> ranked;      // display order
  std::vector<RankEntry> ineligible;  // by id
};

// ranking-v1 over one cohort's runs: eligibility, ascending sort, tie
// chains (equal values; outside source-native cohorts also overlapping
// confidence intervals, with every member of the chain), dense ranks, and
// display order inside a tie (evidence, newer observedAt, id).
Ranking RankV1(std::vector<RankEntry> runs, bool source_native);

struct RecordEvent {
  Digest run;
  std::string run_id;
  std::optional<Digest> previous;
  std::string previous_id;
  std::string at;  // the run's observedAt
  double value = 0;
  std::optional<double> previous_value;
  bool in_export = false;  // the export's record_events has this event
};

struct RecordHistory {
  Digest cohort;
  std::vector<RecordEvent> events;   // oldest first
  std::vector<Json> not_reproduced;  // export events ki does not derive
  std::vector<Json> unchecked;       // export events naming runs this store lacks
};

// --- reading the catalog tables of a store

// True when the store holds an imported catalog.
Result<bool> HasCatalog(Store& store);

// What catalog.imports keeps of one stored import (docs/format.md).
struct ImportSummary {
  Digest object;       // the import object (catalog.imports' key)
  std::string source;  // file name or "-", as given to the import
  Digest content;      // SHA-256 of the decompressed export
  uint64_t lines = 0, keys_checked = 0, mismatches = 0, cohorts = 0, serving_cohorts = 0;
  // Malformed lines skipped (--keep-going). nullopt for a summary written
  // before ki recorded it: such an import counted them among `mismatches`.
  std::optional<uint64_t> malformed;
};
// Every stored import, by content digest. A summary that is not the JSON
// format.md describes is Corruption naming its content digest; with
// `damaged`, each such summary's message is appended there instead and the
// rest are read (audit reports every one).
Result<std::vector<ImportSummary>> StoredImports(Store& store, std::vector<std::string>* damaged = nullptr);
// Every entry of every catalog table checked against its format
// (docs/format.md, "Catalog tables"), and every run digest an entry names
// looked up in the store: what `ki audit` adds to the store's own audit.
// A fault's `what` is `<table> <key>` (KeyText) and its digest the run or
// cohort the key names (all zero for a catalog.rows key); a missing run is
// a CheckEntry of state kMissing whose `via` is the entry naming it.
struct TableCheck {
  uint64_t entries = 0;
  std::vector<CheckEntry> faults;
  std::vector<CheckEntry> missing;
};
Result<TableCheck> CheckTables(Store& store);
// The cohort a run belongs to, when it was imported from a catalog.
Result<std::optional<Digest>> CohortOfRun(Store& store, const Digest& run);
// REF is a cohort key (full or a prefix of at least 4 hex digits) or any
// object REF naming a run (its cohort).
Result<Digest> ResolveCohort(Store& store, std::string_view ref);
Result<Ranking> RankCohort(Store& store, const Digest& cohort);
Result<RecordHistory> Records(Store& store, const Digest& cohort);
// Where one run stands in its comparison group: what `ki show` says.
struct RunStanding {
  Digest cohort;
  size_t of = 0;  // runs ranked in the group
  int rank = 0;   // 1-based; 0 when the run is not ranked
  bool tied_with_previous = false;
  std::vector<std::string> ineligible;  // why not ranked (EligibilityReasons)
  std::optional<RankEntry> first;       // #1 of the group, when any run is ranked
};
// nullopt when `run` is not a kernel run of an imported catalog or indexed
// by ki run. Reads the stored ranking (catalog.ranks) rather than ranking
// the cohort; equal to RankCohort's answer (tests/catalog).
Result<std::optional<RunStanding>> StandingOfRun(Store& store, const Digest& run);
// The export's facts about a run (its row, without the manifest), if any.
Result<std::optional<Json>> RunFacts(Store& store, const Digest& run);

// --- browsing

struct GroupFilter {
  std::string operation;  // operation name (substring or glob, any case) or digest prefix
  std::string hardware;   // substring of the hardware product (any case)
  std::string kind;       // "kernel", "serving", or "" for both
  std::string pattern;    // operation or workload name (glob), or a group key prefix
};
struct GroupSummary {
  Digest cohort;
  std::string kind, metric;
  std::string operation, operation_name;  // serving groups: the model
  std::string workload, workload_name;
  std::string hardware;   // environment's hardware.product; serving: topology key
  uint64_t runs = 0;      // members
  size_t ranked = 0;      // kernel groups: runs ranked under ranking-v1
  std::optional<RankEntry> first;  // #1, when any run is ranked
};
// Every comparison group of the store that passes `filter`, by group key.
Result<std::vector<GroupSummary>> ListGroups(Store& store, const GroupFilter& filter);
// Every run of a group as its entry (kernel or serving), unranked, in run
// digest order: what a serving group, which ranking-v1 does not rank, holds.
Result<std::vector<RankEntry>> GroupMembers(Store& store, const Digest& cohort);

struct RunFilter {
  std::string operation, hardware, implementation;  // as GroupFilter's fields
  std::string since;  // RFC 3339: observedAt at or after
};
// Whether `run` passes `filter` (an empty filter passes every object; a
// non-empty one only BenchmarkRuns).
Result<bool> RunMatches(Store& store, const Digest& run, const RunFilter& filter);

// ---------------------------------------------------------------- diff

// RFC 6902 JSON Patch turning `a` into `b` (add / remove / replace; arrays
// element-wise, extra elements added or removed at the end).
Json JsonPatch(const Json& a, const Json& b);

struct FieldDiff {
  std::string path;  // dotted path, e.g. "spec.timing.latencyNs.mean", "spec.x[2]"
  std::optional<Json> a, b;  // absent on one side for added / removed fields
};
std::vector<FieldDiff> FieldDiffs(const Json& a, const Json& b, const std::string& prefix = "");

}  // namespace ki::catalog
