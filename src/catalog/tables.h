// Names and layouts of the catalog's LMDB tables (docs/format.md, "Catalog
// tables"). Keys are byte strings; digests are their 32 raw bytes.
#pragma once

#include <string>
#include <string_view>

#include "ki/catalog.h"

namespace ki::catalog::tables {

// "<export table>\0<row id>" -> the row as exported, without its manifest
// column (compact JSON). operation_aliases rows: "<operationId>\0<alias>".
inline constexpr std::string_view kRows = "catalog.rows";
// run digest -> RunValue JSON: {"cohort": "sha256:…", "kind": "kernel"|"serving", ...entry}
inline constexpr std::string_view kRuns = "catalog.runs";
// cohort (32) + run digest (32) -> entry JSON (the ranking facts of one run)
inline constexpr std::string_view kCohortRuns = "catalog.cohort";
// cohort (32) -> cohort JSON {kind, parts..., sourceNative, runs}
inline constexpr std::string_view kCohorts = "catalog.cohorts";
// cohort (32) + run digest (32) -> the export's record_events row (JSON)
inline constexpr std::string_view kEvents = "catalog.events";
// content digest (32) of an imported export -> import summary JSON
inline constexpr std::string_view kImports = "catalog.imports";

inline std::string RowKey(std::string_view table, std::string_view id) {
  std::string k(table);
  k.push_back('\0');
  k.append(id);
  return k;
}

inline std::string PairKey(const Digest& a, const Digest& b) {
  std::string k(a.raw());
  k.append(b.raw());
  return k;
}

// Entry <-> JSON (short field names: one per run in two tables).
Json EntryToJson(const RankEntry& e);
// EntryFromJson is the reference reading of an entry (its field rules and
// defaults); the read paths use EntryFromStored, which must agree with it
// on every input (tests/catalog: CatalogTables.StoredEntriesDecodeAsTheirJson).
RankEntry EntryFromJson(const Digest& run, const Json& j);
// EntryFromJson of the stored bytes, without a Json tree (the hot path).
bool EntryFromStored(const Digest& run, std::string_view stored, RankEntry* out);

}  // namespace ki::catalog::tables
