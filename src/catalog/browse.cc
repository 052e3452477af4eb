// Browsing comparison groups (`ki groups`) and filtering runs (`ki ls`):
// read-only views over the derived catalog tables and the manifests.
#include <algorithm>
#include <cctype>
#include <fnmatch.h>

#include "catalog/compact_json.h"
#include "catalog/tables.h"
#include "catalog/time.h"
#include "json/fields.h"
#include "ki/catalog.h"

namespace ki::catalog {

namespace {

std::string Lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return char(std::tolower(c)); });
  return s;
}

// A filter value matches a name (glob, any case) or a digest (prefix of at
// least 4 hex digits, with or without `sha256:`).
bool Matches(const std::string& want, const std::string& name, const std::string& digest) {
  if (want.empty()) return true;
  std::string w = Lower(want);
  if (!name.empty()) {
    std::string n = Lower(name);
    const bool glob = w.find_first_of("*?[") != std::string::npos;
    if (glob ? fnmatch(w.c_str(), n.c_str(), 0) == 0 : n.find(w) != std::string::npos) return true;
  }
  std::string hex = w.rfind("sha256:", 0) == 0 ? w.substr(7) : w;
  return hex.size() >= 4 && digest.size() > 7 && digest.compare(7, hex.size(), hex) == 0;
}

class Names {
 public:
  explicit Names(Store& store) : store_(store) {}
  // metadata.name of a manifest (its first stored name), "" when none.
  std::string Of(const std::string& digest) {
    auto it = cache_.find(digest);
    if (it != cache_.end()) return it->second;
    std::string name;
    if (auto d = Digest::Parse(digest); d.ok()) {
      auto names = store_.NamesOf(*d);
      if (names.ok() && !names->empty()) name = names->front().substr(names->front().find('/') + 1);
    }
    return cache_[digest] = name;
  }
  // hardware.product of an environment (or serving run topology), "" when unknown.
  std::string Hardware(const std::string& environment) {
    auto it = hw_.find(environment);
    if (it != hw_.end()) return it->second;
    std::string hw;
    if (auto d = Digest::Parse(environment); d.ok()) {
      auto m = store_.ReadManifest(*d);
      if (m.ok() && m->spec.contains("hardware")) hw = StringOr(m->spec["hardware"], "product");
    }
    return hw_[environment] = hw;
  }

 private:
  Store& store_;
  std::unordered_map<std::string, std::string> cache_, hw_;
};

}  // namespace

Result<std::vector<GroupSummary>> ListGroups(Store& store, const GroupFilter& filter) {
  std::vector<GroupSummary> out;
  std::vector<std::pair<Digest, Json>> groups;
  KI_RETURN_IF_ERROR(store.Scan(tables::kCohorts, "", [&](std::string_view k, std::string_view v) {
    if (k.size() != 32) return true;
    Json j;
    if (tables::DecodeStoredJson(v, &j) && j.is_object()) groups.emplace_back(Digest::FromRaw(k), std::move(j));
    return true;
  }));
  Names names(store);
  tables::ObjectParts<Store> parts(store);
  for (auto& [cohort, desc] : groups) {
    GroupSummary g;
    g.cohort = cohort;
    g.kind = StringOr(desc, "kind");
    if (!filter.kind.empty() && g.kind != filter.kind) continue;
    g.runs = desc.value("runs", uint64_t{0});
    g.metric = StringOr(desc, "metric");
    g.workload = StringOr(desc, "workload");
    g.workload_name = names.Of(g.workload);
    if (g.kind == "kernel") {
      g.operation = StringOr(desc, "operation");
      g.operation_name = names.Of(g.operation);
      g.hardware = names.Hardware(StringOr(desc, "environment"));
    } else {
      g.operation = StringOr(desc, "model");
      g.operation_name = names.Of(g.operation);
      g.hardware = StringOr(desc, "topology");
    }
    if (!Matches(filter.operation, g.operation_name, g.operation)) continue;
    if (!filter.hardware.empty() && Lower(g.hardware).find(Lower(filter.hardware)) == std::string::npos) continue;
    if (!filter.pattern.empty() && !Matches(filter.pattern, g.operation_name, g.cohort.str()) &&
        !Matches(filter.pattern, g.workload_name, g.workload)) {
      continue;
    }
    if (g.kind == "kernel") {
      KI_ASSIGN_OR_RETURN(auto ranks, store.Get(tables::kRanks, cohort.raw()));
      tables::RankRecord rec;
      if (ranks && tables::FindInRanking(*ranks, "", &rec)) {
        g.ranked = rec.ranked;
        if (rec.first) {
          KI_ASSIGN_OR_RETURN(auto run, parts.DigestOf(*rec.first));
          KI_ASSIGN_OR_RETURN(auto e, store.Get(tables::kRuns, *rec.first));
          RankEntry first;
          if (run && e && tables::EntryFromStored(*run, *e, &first)) g.first = std::move(first);
        }
      }
    }
    out.push_back(std::move(g));
  }
  return out;
}

Result<std::vector<RankEntry>> GroupMembers(Store& store, const Digest& cohort) {
  return tables::CohortEntries(store, cohort);
}

Result<bool> RunMatches(Store& store, const Digest& run, const RunFilter& filter) {
  const bool wants_run_fields = !filter.operation.empty() || !filter.hardware.empty() ||
                                !filter.implementation.empty() || !filter.since.empty();
  if (!wants_run_fields) return true;
  KI_ASSIGN_OR_RETURN(auto info, store.Stat(run));
  if (!info || info->type != ObjectType::kManifest) return false;
  if (!info->kind || *info->kind != Kind::kBenchmarkRun) return false;
  KI_ASSIGN_OR_RETURN(Manifest m, store.ReadManifest(run));
  Names names(store);
  if (!filter.since.empty()) {
    const std::string at = StringOr(m.spec, "observedAt");
    if (at.empty() || CompareTimes(at, filter.since) < 0) return false;
  }
  if (!filter.implementation.empty()) {
    const std::string impl = StringOr(m.spec, "implementationDigest");
    if (!Matches(filter.implementation, names.Of(impl), impl)) return false;
  }
  if (!filter.hardware.empty()) {
    const std::string hw = names.Hardware(StringOr(m.spec, "environmentDigest"));
    if (Lower(hw).find(Lower(filter.hardware)) == std::string::npos) return false;
  }
  if (!filter.operation.empty()) {
    std::string op;
    if (auto w = Digest::Parse(StringOr(m.spec, "workloadDigest")); w.ok()) {
      auto wm = store.ReadManifest(*w);
      if (wm.ok()) op = StringOr(wm->spec, "operationSpecDigest");
    }
    if (op.empty() || !Matches(filter.operation, names.Of(op), op)) return false;
  }
  return true;
}

}  // namespace ki::catalog
