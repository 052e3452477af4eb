// The cross-row check of a KernelIndex export import (rows.h).
#include <set>
#include <tuple>
#include <unordered_map>
#include <unordered_set>

#include "catalog/rows.h"
#include "catalog/tables.h"
#include "catalog/time.h"

namespace ki::catalog {

std::string Str(const Json& obj, std::string_view field) {
  if (!obj.is_object()) return "";
  auto it = obj.find(field);
  return it != obj.end() && it->is_string() ? it->get<std::string>() : "";
}

Json Field(const Json& obj, std::string_view field) {
  if (!obj.is_object()) return nullptr;
  auto it = obj.find(field);
  return it != obj.end() ? *it : Json(nullptr);
}

namespace {

class CrossRowCheck {
 public:
  CrossRowCheck(Store& store, const ExportRows& rows, ImportReport* report)
      : store_(store), rows_(rows), report_(report) {}

  Status Run() {
    // Supersession: a run is superseded once a published run names it.
    std::unordered_set<std::string> superseded;
    for (const auto* list : {&rows_.runs, &rows_.serving_runs}) {
      for (const Json& r : *list) {
        if (Field(r, "supersedesId").is_string() && Field(r, "publishedAt").is_string()) {
          superseded.insert(Str(r, "supersedesId"));
        }
      }
    }
    std::unordered_map<std::string, Digest> run_by_id;
    std::unordered_map<std::string, Json> cohorts;  // key str -> description
    struct Member {
      Digest cohort;
      RankEntry entry;
    };
    std::vector<Member> members;
    members.reserve(rows_.runs.size() + rows_.serving_runs.size());
    std::unordered_map<std::string, std::string> correctness_by_workload;
    std::unordered_map<std::string, Digest> cohort_by_parts;

    for (const Json& r : rows_.runs) {
      std::string id = Str(r, "id");
      auto run = Digest::Parse(Str(r, "digest"));
      if (!run.ok()) continue;
      run_by_id[id] = *run;
      std::string workload = Str(r, "workload");
      const Json* wl = nullptr;
      std::optional<Json> stored_wl;
      if (auto it = rows_.workloads.find(workload); it != rows_.workloads.end()) {
        wl = &it->second;
      } else {
        KI_ASSIGN_OR_RETURN(auto spec, StoredSpec(workload));
        if (spec) {
          stored_wl = Json{{"op", Field(*spec, "operationSpecDigest")}, {"correctness", Field(*spec, "correctness")}};
          wl = &*stored_wl;
        }
      }
      if (!wl) {
        std::string why = "(workload " + workload + " is neither in the export nor in the store)";
        Mismatch_("benchmark_runs", id, "correctnessKey", Str(r, "correctnessKey"), why);
        Mismatch_("benchmark_runs", id, "comparisonKey", Str(r, "comparisonKey"), why);
        continue;
      }
      // Keys are computed once per workload and once per set of parts:
      // thousands of runs share a few hundred of each.
      auto ck = correctness_by_workload.find(workload);
      if (ck == correctness_by_workload.end()) {
        Json wspec = Json::object();
        if (wl->contains("correctness")) wspec["correctness"] = (*wl)["correctness"];
        KI_ASSIGN_OR_RETURN(Digest correctness, CorrectnessKey(wspec));
        ck = correctness_by_workload.emplace(workload, correctness.str()).first;
      }
      CheckKey("benchmark_runs", r, "correctnessKey", ck->second);
      ComparisonParts parts{Str(*wl, "op"), workload, Str(r, "protocol"), Str(r, "environment"), ck->second,
                            Str(r, "metric")};
      std::string parts_key;  // each part length-prefixed: no two sets of parts collide
      for (const std::string* part : {&parts.operation, &parts.workload, &parts.protocol, &parts.environment,
                                      &parts.correctness, &parts.metric}) {
        parts_key += std::to_string(part->size());
        parts_key += ':';
        parts_key += *part;
      }
      auto cc = cohort_by_parts.find(parts_key);
      if (cc == cohort_by_parts.end()) {
        KI_ASSIGN_OR_RETURN(Digest computed, ComparisonKey(parts));
        cc = cohort_by_parts.emplace(std::move(parts_key), computed).first;
      }
      const Digest cohort = cc->second;
      CheckKey("benchmark_runs", r, "comparisonKey", cohort.str());

      // Evidence level, derived from stored facts (docs/kernelindex-identity.md).
      bool source = false;
      std::string impl_name;
      if (auto it = rows_.impls.find(Str(r, "implementation")); it != rows_.impls.end()) {
        source = it->second.value("source", false);
        impl_name = Str(it->second, "name");
      } else {
        KI_ASSIGN_OR_RETURN(auto spec, StoredSpec(Str(r, "implementation")));
        source = spec && spec->contains("source");
      }
      bool raw = r.value("evidence", false);
      CheckFact("benchmark_runs", r, "sourceAvailable", source);
      CheckFact("benchmark_runs", r, "hasRawEvidence", raw);
      Evidence ev = Evidence::kReported;
      const Json replications = Field(r, "independentReplicationCount");
      if (replications.is_number() && replications.get<double>() >= 2) ev = Evidence::kReplicated;
      else if (Field(r, "reproducedByKernelindex") == Json(true)) ev = Evidence::kVerified;
      else if (source && raw) ev = Evidence::kReproducible;

      RankEntry e;
      e.run = *run;
      e.id = id;
      e.name = Str(r, "name");
      e.implementation = impl_name;
      if (r["value"].is_number()) e.value = r["value"].get<double>();
      e.unit = Str(r, "unit");
      const Json ci = Field(r, "ci");
      if (ci.is_array() && ci.size() == 2 && ci[0].is_number() && ci[1].is_number()) {
        e.interval = std::make_pair(ci[0].get<double>(), ci[1].get<double>());
      }
      e.evidence = ev;
      e.observed_at = Str(r, "observedAt");
      e.status = Str(r, "status");
      e.published = Field(r, "publishedAt").is_string();
      e.retracted = Field(r, "retractedAt").is_string();
      e.superseded = superseded.count(id) > 0;

      Json& desc = cohorts[cohort.str()];
      if (desc.is_null()) {
        desc = {{"kind", "kernel"},          {"operation", parts.operation},   {"workload", parts.workload},
                {"protocol", parts.protocol}, {"environment", parts.environment}, {"correctness", parts.correctness},
                {"metric", parts.metric},     {"sourceNative", false},          {"runs", 0}};
      }
      if (r.value("sourceNative", false)) desc["sourceNative"] = true;
      desc["runs"] = desc["runs"].get<uint64_t>() + 1;
      members.push_back({cohort, std::move(e)});
    }
    report_->cohorts = cohorts.size();

    for (const Json& r : rows_.serving_runs) {
      std::string id = Str(r, "id");
      auto run = Digest::Parse(Str(r, "digest"));
      if (!run.ok()) continue;
      run_by_id[id] = *run;
      const Json& spec = r["spec"];
      std::string model = Str(spec, "modelDigest"), workload = Str(spec, "workloadDigest");
      std::optional<std::string> tokenizer;
      bool have_model = false, have_workload = false;
      if (auto it = rows_.models.find(model); it != rows_.models.end()) {
        have_model = true;
        if (it->second["tokenizer"].is_string()) tokenizer = it->second["tokenizer"].get<std::string>();
      } else {
        KI_ASSIGN_OR_RETURN(auto ms, StoredSpec(model));
        if (ms) {
          have_model = true;
          if (ms->contains("tokenizer") && (*ms)["tokenizer"].contains("name")) tokenizer = Str((*ms)["tokenizer"], "name");
        }
      }
      Json wspec;
      if (auto it = rows_.serving_workloads.find(workload); it != rows_.serving_workloads.end()) {
        have_workload = true;
        wspec = it->second["spec"];
      } else {
        KI_ASSIGN_OR_RETURN(auto ws, StoredSpec(workload));
        if (ws) {
          have_workload = true;
          wspec = std::move(*ws);
        }
      }
      std::string metric_set = MetricSetKey(spec);
      CheckKey("serving_runs", r, "metricSetKey", metric_set);
      if (!have_model || !have_workload) {
        Mismatch_("serving_runs", id, "cohortKey", Str(r, "cohortKey"),
                  "(model or serving workload is neither in the export nor in the store)");
        continue;
      }
      std::string protocol = ServingProtocolKey(spec, wspec);
      CheckKey("serving_runs", r, "protocolKey", protocol);
      ServingCohortParts parts{model,    tokenizer,  workload, protocol, ServingTopologyKey(spec),
                               Str(spec, "qualityPolicy"), metric_set};
      KI_ASSIGN_OR_RETURN(Digest cohort, ServingCohortKey(parts));
      CheckKey("serving_runs", r, "cohortKey", cohort.str());

      RankEntry e;
      e.run = *run;
      e.id = id;
      e.name = Str(r, "name");
      if (auto ms = spec.find("measurements"); ms != spec.end() && ms->is_array() && !ms->empty()) {
        if ((*ms)[0].contains("value") && (*ms)[0]["value"].is_number()) e.value = (*ms)[0]["value"].get<double>();
        e.unit = Str((*ms)[0], "unit");
      }
      e.observed_at = Str(spec, "observedAt");
      e.status = Str(spec, "status");
      e.published = Field(r, "publishedAt").is_string();
      e.retracted = Field(r, "retractedAt").is_string();
      e.superseded = superseded.count(id) > 0;
      Json& desc = cohorts[cohort.str()];
      if (desc.is_null()) {
        report_->serving_cohorts++;
        desc = {{"kind", "serving"},
                {"model", model},
                {"tokenizer", tokenizer ? Json(*tokenizer) : Json(nullptr)},
                {"workload", workload},
                {"protocol", protocol},
                {"topology", parts.topology},
                {"qualityPolicy", parts.quality_policy},
                {"metric", metric_set},
                {"runs", 0}};
      }
      desc["runs"] = desc["runs"].get<uint64_t>() + 1;
      members.push_back({cohort, std::move(e)});
    }

    // Record history per kernel cohort, checked against the export's events.
    std::unordered_map<std::string, std::vector<const Member*>> by_cohort;
    for (const auto& m : members) {
      if (cohorts[m.cohort.str()].value("kind", "") == "kernel" && EligibilityReasons(m.entry).empty()) {
        by_cohort[m.cohort.str()].push_back(&m);
      }
    }
    std::set<std::tuple<std::string, std::string, std::string>> derived;  // cohort, run id, previous id
    std::unordered_map<std::string, std::string> derived_at;
    for (auto& [key, list] : by_cohort) {
      std::sort(list.begin(), list.end(), [](const Member* a, const Member* b) {
        if (int c = CompareTimes(a->entry.observed_at, b->entry.observed_at); c != 0) return c < 0;
        return a->entry.id < b->entry.id;
      });
      const RankEntry* best = nullptr;
      for (const Member* m : list) {
        if (best && !(*m->entry.value < *best->value)) continue;
        derived.insert({key, m->entry.id, best ? best->id : ""});
        derived_at[key + "/" + m->entry.id] = m->entry.observed_at;
        best = &m->entry;
      }
    }
    for (const Json& ev : rows_.events) {
      report_->record_events++;
      std::string key = Str(ev, "comparisonKey"), run_id = Str(ev, "runId"), prev = Str(ev, "previousRunId");
      if (!run_by_id.count(run_id) || (!prev.empty() && !run_by_id.count(prev))) {
        report_->record_events_unchecked++;
        continue;
      }
      bool ok = derived.count({key, run_id, prev}) && CompareTimes(derived_at[key + "/" + run_id], Str(ev, "at")) == 0;
      if (ok) {
        report_->record_events_reproduced++;
      } else {
        Mismatch_("record_events", Str(ev, "id"), "recordEvent",
                  "run " + run_id + " beats " + (prev.empty() ? "nothing" : prev) + " at " + Str(ev, "at"),
                  "(not derived by ranking-v1 from the export's runs)");
      }
    }

    return Status::OK();
  }

 private:
  // A manifest's spec from this export, else from the store.
  Result<std::optional<Json>> StoredSpec(const std::string& digest) {
    auto d = Digest::Parse(digest);
    if (!d.ok()) return std::optional<Json>();
    KI_ASSIGN_OR_RETURN(auto info, store_.Stat(*d));
    if (!info) return std::optional<Json>();
    KI_ASSIGN_OR_RETURN(Manifest m, store_.ReadManifest(*d));
    return std::optional<Json>(std::move(m.spec));
  }

  void Mismatch_(std::string table, std::string id, std::string field, std::string stored, std::string computed) {
    report_->mismatches.push_back({std::move(table), std::move(id), std::move(field), std::move(stored), std::move(computed)});
  }

  void CheckKey(const char* table, const Json& row, const char* field, const std::string& computed) {
    report_->keys_checked++;
    std::string stored = Str(row, field);
    if (stored != computed) Mismatch_(table, Str(row, "id"), field, stored, computed);
  }

  void CheckFact(const char* table, const Json& row, const char* field, bool computed) {
    const Json v = Field(row, field);
    if (v.is_boolean() && v.get<bool>() != computed) {
      Mismatch_(table, Str(row, "id"), field, v.dump(), computed ? "true" : "false");
    }
  }


  Store& store_;
  const ExportRows& rows_;
  ImportReport* report_;
};

}  // namespace

Status CheckCrossRows(Store& store, const ExportRows& rows, ImportReport* report) {
  return CrossRowCheck(store, rows, report).Run();
}

}  // namespace ki::catalog
