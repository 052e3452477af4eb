// Export: a store's runs as a KernelIndex catalog export.
//
// `ExportKernelIndex` writes the store's BenchmarkRuns and ServingRuns (all
// of them, or those named and the members of the comparison groups named)
// and every manifest they reach as KernelIndex export lines
// (`{"table": T, "row": {...}}`, docs/format.md, "Catalog export"), in the
// tables and column order of KernelIndex's own export, so that
// `ImportKernelIndex` of the result recomputes every digest and key equal to
// this store's. The export's facts about a run (publication, retraction,
// supersession, verification, record events, its source) come from the
// run's catalog facts object; a run without one (stored by `ki add` or
// `ki run`) gets the facts a KernelIndex export gives a published record.
//
// Kept apart from catalog.h so that the many files including that header
// do not rebuild for this one.
//
// Thread-safety: as the Store's reads (no writes are made).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "ki/digest.h"
#include "ki/env.h"
#include "ki/json.h"
#include "ki/status.h"
#include "ki/store.h"

namespace ki::catalog {

struct ExportOptions {
  // Runs (any REF naming a BenchmarkRun or ServingRun) and comparison
  // groups (a group key or a prefix of at least 4 hex digits: every run of
  // the group). Empty: every run of the store, and every other manifest of
  // a kind the export has a table for (projects, operations, workloads,
  // implementations, the serving chain), reached or not.
  std::vector<std::string> refs;
  int zstd_level = 3;  // for a FILE ending in .zst
};

struct ExportReport {
  std::string file;          // as given; "-" for standard output
  bool compressed = false;   // zstd (the name ends in .zst)
  uint64_t runs = 0;         // benchmark_runs rows
  uint64_t serving_runs = 0;  // serving_runs rows
  uint64_t lines = 0;
  uint64_t text_bytes = 0;   // the JSON lines
  uint64_t bytes = 0;        // written (compressed when `compressed`)
  Digest content;            // SHA-256 of the JSON lines: what their import reports as `content`
  std::map<std::string, uint64_t> rows;  // per export table
  uint64_t runs_without_facts = 0;       // given a published record's defaults
  uint64_t artifacts_held = 0;  // artifacts rows of blobs held here (an export carries no bytes)
  // Whole-store export: manifests the format has no row for (a protocol or
  // environment no run names), by kind.
  std::map<std::string, uint64_t> left_out;
};

// Writes the export's lines to `out`, in pieces, in order. Every run is
// checked before the first piece goes out: a run whose comparison key
// cannot be computed here (its WorkloadCase, ModelRevision or
// ServingWorkload is not held: NotFound naming it) or whose bundle is not
// complete (its protocol or environment not held) fails the export.
Result<ExportReport> ExportKernelIndex(Store& store, const ExportOptions& opts,
                                       const std::function<Status(std::string_view)>& out);

// The same into FILE, atomically (a scratch file renamed over FILE once
// everything is written and synced: a failure leaves no FILE, or the old
// one), zstd-compressed when FILE ends in ".zst". `env` (nullptr: the
// Env the store was opened with, EnvOf(store)) writes FILE, so a
// fault-injection Env handed to the store reaches the export too.
Result<ExportReport> ExportKernelIndexFile(Store& store, const std::string& path, const ExportOptions& opts,
                                           Env* env = nullptr);

// One export line: `{"table":T,"row":{...}}` and a newline, its fields in
// the order they were set (KernelIndex's column order), each value
// compact JSON. Exposed for tests.
class ExportLine {
 public:
  explicit ExportLine(std::string_view table) : table_(table) {}
  ExportLine& Set(std::string_view field, Json value);
  // A value already serialised as one line of JSON (a stored document).
  ExportLine& SetRaw(std::string_view field, std::string json);
  // InvalidInput when a value is not valid UTF-8 or a raw value holds a
  // newline (the line would split); `out` is then as it was.
  Status AppendTo(std::string* out) const;

 private:
  std::string table_;
  struct Value {
    std::string field;
    Json json;
    std::string raw;
    bool is_raw = false;
  };
  std::vector<Value> fields_;
};

}  // namespace ki::catalog
