// Catalog facts objects: what an export says about a run beyond its
// manifests, as content-addressed blobs (docs/format.md, "Catalog
// objects"), and the upgrade of a store whose catalog kept those facts in
// tables (format 1) to objects (format 2).
#include <algorithm>
#include <map>
#include <unordered_map>

#include "catalog/tables.h"
#include "json/fields.h"
#include "ki/catalog.h"

namespace ki::catalog {

namespace {

constexpr const char* kKernelFactFields[] = {"id",          "sourceId",         "publishedAt",
                                             "retractedAt", "retractionReason", "supersedesId",
                                             "reproducedByKernelindex", "independentReplicationCount", "reported"};
constexpr const char* kServingFactFields[] = {"id",          "sourceId",         "publishedAt", "retractedAt",
                                              "retractionReason", "supersedesId", "reported"};
constexpr const char* kSourceFields[] = {"id", "slug", "kind", "name"};

template <size_t N>
Json Pick(const Json& row, const char* const (&fields)[N]) {
  Json out = Json::object();
  if (!row.is_object()) return out;
  for (const char* f : fields)
    if (auto it = row.find(f); it != row.end() && !it->is_null()) out[f] = *it;
  return out;
}

}  // namespace

Json tables::RunFactFields(const Json& row, bool kernel) {
  return kernel ? Pick(row, kKernelFactFields) : Pick(row, kServingFactFields);
}

// ---------------------------------------------------------------- facts objects

Result<RunFactsObject> ParseFactsObject(std::string_view bytes, const std::string& where) {
  Json j = Json::parse(bytes, nullptr, /*allow_exceptions=*/false);
  auto bad = [&](const std::string& what) {
    return Status::Corruption(where + ": not a catalog facts object: " + what +
                              " (docs/format.md, \"Catalog objects\")");
  };
  if (!j.is_object() || j.value("type", Json()) != Json(kFactsType)) return bad("wrong `type`");
  RunFactsObject f;
  auto subject = Digest::Parse(StringOr(j, "subject"));
  if (!subject.ok()) return bad("`subject` is not a digest");
  f.subject = *subject;
  f.table = StringOr(j, "table");
  if (f.table != "benchmark_runs" && f.table != "serving_runs") return bad("`table` is neither benchmark_runs nor serving_runs");
  if (!j.contains("row") || !j["row"].is_object()) return bad("`row` is not an object");
  f.row = std::move(j["row"]);
  if (j.contains("events")) {
    if (!j["events"].is_array()) return bad("`events` is not an array");
    for (auto& ev : j["events"]) {
      if (!ev.is_object()) return bad("an event is not an object");
      f.events.push_back(std::move(ev));
    }
  }
  if (j.contains("source") && j["source"].is_object()) f.source = std::move(j["source"]);
  return f;
}

Result<std::string> EncodeFactsObject(const RunFactsObject& f) {
  Json j = {{"type", kFactsType}, {"subject", f.subject.str()}, {"table", f.table}, {"row", f.row}};
  if (!f.events.empty()) j["events"] = f.events;
  if (!f.source.is_null()) j["source"] = f.source;
  return Canonicalize(j);
}

// ---------------------------------------------------------------- upgrade from format 1

// Format 1 kept an export's rows in catalog.rows ("<table>\0<id>" -> row
// without its manifest) and the import summaries in catalog.imports
// (content digest -> summary). Each imported run's row becomes its facts
// object (with its record events and source), each summary an import
// object listing them; catalog.rows is retired. One batch: all or nothing.
Status tables::UpgradeCatalogV1(Batch& b) {
  constexpr std::string_view kRowsV1 = "catalog.rows";
  std::unordered_map<std::string, Json> sources;
  std::unordered_map<std::string, std::vector<Json>> events;
  std::map<std::string, std::pair<bool, Json>> runs;  // id -> (kernel, row)
  Status bad;
  KI_RETURN_IF_ERROR(b.Scan(kRowsV1, "", [&](std::string_view k, std::string_view v) {
    const size_t nul = k.find('\0');
    if (nul == std::string_view::npos) return true;
    const std::string_view table = k.substr(0, nul);
    if (table != "sources" && table != "record_events" && table != "benchmark_runs" && table != "serving_runs")
      return true;
    Json row = Json::parse(v, nullptr, /*allow_exceptions=*/false);
    if (!row.is_object()) return true;  // damaged in format 1: nothing to carry over
    const std::string id = StringOr(row, "id");
    if (table == "sources") sources[id] = Pick(row, kSourceFields);
    else if (table == "record_events") events[StringOr(row, "runId")].push_back(std::move(row));
    else runs[id] = {table == "benchmark_runs", std::move(row)};
    return true;
  }));
  // Run digests come from catalog.runs (id -> digest): rows carry the
  // export's digest only as a column that the import checked.
  std::unordered_map<std::string, Digest> digest_of;
  KI_RETURN_IF_ERROR(b.Scan(tables::kRuns, "", [&](std::string_view k, std::string_view v) {
    if (k.size() != 32) return true;
    Json j = Json::parse(v, nullptr, /*allow_exceptions=*/false);
    if (j.is_object()) digest_of[StringOr(j, "id")] = Digest::FromRaw(k);
    return true;
  }));
  std::vector<std::string> facts;
  for (auto& [id, kr] : runs) {
    auto it = digest_of.find(id);
    if (it == digest_of.end()) continue;
    RunFactsObject f;
    f.subject = it->second;
    f.table = kr.first ? "benchmark_runs" : "serving_runs";
    f.row = tables::RunFactFields(kr.second, kr.first);
    if (auto e = events.find(id); e != events.end()) f.events = e->second;
    if (auto src = sources.find(StringOr(f.row, "sourceId")); src != sources.end()) f.source = src->second;
    KI_ASSIGN_OR_RETURN(std::string bytes, EncodeFactsObject(f));
    KI_ASSIGN_OR_RETURN(PutResult put, b.PutBlob(bytes, kFactsMediaType));
    facts.push_back(put.digest.str());
  }
  std::sort(facts.begin(), facts.end());
  // Format 1 did not say which import brought which run: with one import
  // (the common case) the list is exact; with several, each lists them all.
  std::vector<std::pair<std::string, std::string>> imports;
  KI_RETURN_IF_ERROR(b.Scan(tables::kImports, "", [&](std::string_view k, std::string_view v) {
    imports.emplace_back(std::string(k), std::string(v));
    return true;
  }));
  for (const auto& [k, v] : imports) {
    Json j = Json::parse(v, nullptr, /*allow_exceptions=*/false);
    if (!j.is_object() || k.size() != 32) continue;
    if (!j.contains("content")) j["content"] = Digest::FromRaw(k).str();
    j["type"] = kImportType;
    j["facts"] = facts;
    KI_ASSIGN_OR_RETURN(std::string bytes, Canonicalize(j));
    KI_RETURN_IF_ERROR(b.PutBlob(bytes, kImportMediaType).status());
  }
  return b.DropTable(kRowsV1);
}

}  // namespace ki::catalog
