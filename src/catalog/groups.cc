// Comparison groups as a derived index: every catalog table is a function
// of the objects (docs/format.md, "Catalog tables"). The store calls
// GroupIndex::Update from every batch with the objects it stored, so a run
// joins its group however it arrives (add, pull, import, run, rerun) and
// whatever came first: a run whose WorkloadCase is not held waits in
// catalog.pending and joins when the workload arrives.
//
// What the index reads, per run: the run manifest; its WorkloadCase
// (kernel) or ModelRevision and ServingWorkload (serving), which the group
// key needs; its ImplementationRevision (name, whether source is held: the
// evidence level); the name of its linked document; and the catalog facts
// objects about it (publication, retraction, supersession, record events).
#include <algorithm>
#include <map>
#include <set>
#include <unordered_map>

#include "catalog/compact_json.h"
#include "catalog/tables.h"
#include "json/fields.h"
#include "ki/catalog.h"

namespace ki::catalog {

namespace {

using tables::PairKey;

std::string IdKey(std::string_view id) { return std::string(Sha256Of(id).raw()); }

bool IsRunKind(const std::optional<Kind>& k) {
  return k && (*k == Kind::kBenchmarkRun || *k == Kind::kServingRun);
}

// One Update: caches what many runs share (a workload, an implementation,
// a protocol), and collects the groups whose counts and ranks it changed.
class GroupUpdate {
 public:
  explicit GroupUpdate(Batch& b) : b_(b), parts_(b) {}

  Status Run(const std::vector<ObjectInfo>& arrived) {
    std::set<Digest> runs;
    // Facts and imports first: a run indexed below reads its facts.
    for (const ObjectInfo& info : arrived) {
      if (info.type != ObjectType::kBlob) continue;
      if (info.media_type == kFactsMediaType) KI_RETURN_IF_ERROR(Facts(info, &runs));
      else if (info.media_type == kImportMediaType) KI_RETURN_IF_ERROR(Import(info.digest));
    }
    // Facts that came before their run are keyed by its digest (it had no
    // number): now that it is held, they are keyed again by its number.
    if (parts_.numbered()) {
      for (const ObjectInfo& info : arrived)
        if (info.type == ObjectType::kManifest && IsRunKind(info.kind)) KI_RETURN_IF_ERROR(RekeyFactsOf(info, &runs));
    }
    for (const ObjectInfo& info : arrived) {
      if (info.type != ObjectType::kManifest || !info.kind) continue;
      switch (*info.kind) {
        case Kind::kBenchmarkRun:
        case Kind::kServingRun:
          runs.insert(info.digest);
          break;
        case Kind::kWorkloadCase:
        case Kind::kImplementationRevision:
        case Kind::kModelRevision:
        case Kind::kServingWorkload:
          KI_RETURN_IF_ERROR(RunsNaming(info.digest, &runs));
          break;
        default:
          break;
      }
    }
    for (const Digest& run : runs) KI_RETURN_IF_ERROR(IndexRun(run));
    for (const Digest& cohort : touched_) KI_RETURN_IF_ERROR(Recount(cohort));
    return Status::OK();
  }

 private:
  // Runs that reference `d` (the store's refs, as this batch sees them).
  Status RunsNaming(const Digest& d, std::set<Digest>* runs) {
    KI_ASSIGN_OR_RETURN(std::vector<Digest> referrers, b_.ReferrersOf(d));
    for (const Digest& r : referrers) {
      KI_ASSIGN_OR_RETURN(auto info, b_.Stat(r));
      if (info && IsRunKind(info->kind)) runs->insert(r);
    }
    return Status::OK();
  }

  // `rekey`: the facts object was indexed before its subject was held, under
  // the subject's digest; those keys are replaced by its number's.
  Status Facts(const ObjectInfo& info, std::set<Digest>* runs, bool rekey = false) {
    const Digest& d = info.digest;
    KI_ASSIGN_OR_RETURN(std::string bytes, b_.Read(d));
    KI_ASSIGN_OR_RETURN(RunFactsObject parsed, ParseFactsObject(bytes, d.str()));
    // Kept for IndexRun (FactsOf), which would otherwise read and parse
    // each facts object a second time: an import brings one per run.
    const RunFactsObject& f = facts_.insert_or_assign(d, std::move(parsed)).first->second;
    KI_ASSIGN_OR_RETURN(const std::string subject, parts_.Of(f.subject));
    const std::string_view was = f.subject.raw();
    KI_RETURN_IF_ERROR(b_.Put(tables::kFacts, PairKey(subject, parts_.Of(info)), ""));
    if (rekey && subject != was) KI_RETURN_IF_ERROR(b_.Delete(tables::kFacts, PairKey(was, parts_.Of(info))));
    runs->insert(f.subject);
    // Supersession: the run this one names is superseded once this one is
    // published. Whichever of the two arrives first, the other finds it.
    const std::string supersedes = StringOr(f.row, "supersedesId");
    if (!supersedes.empty() && f.row.contains("publishedAt") && f.row["publishedAt"].is_string()) {
      std::string key = IdKey(supersedes);
      KI_RETURN_IF_ERROR(b_.Put(tables::kSupersededBy, key + subject, ""));
      if (rekey && subject != was) KI_RETURN_IF_ERROR(b_.Delete(tables::kSupersededBy, key + std::string(was)));
      KI_ASSIGN_OR_RETURN(auto target, b_.Get(tables::kIds, key));
      if (target && target->size() == parts_.held_size()) {
        KI_ASSIGN_OR_RETURN(auto run, parts_.DigestOf(*target));
        if (run) runs->insert(*run);
      }
    }
    for (const Json& ev : f.events) {
      auto cohort = Digest::Parse(StringOr(ev, "comparisonKey"));
      if (!cohort.ok()) continue;
      KI_RETURN_IF_ERROR(b_.Put(tables::kEvents, PairKey(*cohort, subject), tables::EncodeCompactJson(ev)));
      if (rekey && subject != was) KI_RETURN_IF_ERROR(b_.Delete(tables::kEvents, PairKey(*cohort, was)));
    }
    return Status::OK();
  }

  // The facts about `run` that are keyed by its digest (they came first).
  Status RekeyFactsOf(const ObjectInfo& run, std::set<Digest>* runs) {
    std::vector<std::string> facts;
    const std::string_view prefix = run.digest.raw();
    KI_RETURN_IF_ERROR(b_.Scan(tables::kFacts, prefix, [&](std::string_view k, std::string_view) {
      if (k.size() == prefix.size() + parts_.held_size()) facts.emplace_back(k.substr(prefix.size()));
      return true;
    }));
    for (const std::string& part : facts) {
      KI_ASSIGN_OR_RETURN(auto d, parts_.DigestOf(part));
      if (!d) continue;  // a number no object has: audit reports the entry
      KI_ASSIGN_OR_RETURN(auto info, b_.Stat(*d));
      if (info) KI_RETURN_IF_ERROR(Facts(*info, runs, /*rekey=*/true));
    }
    return Status::OK();
  }

  Status Import(const Digest& d) {
    KI_ASSIGN_OR_RETURN(std::string bytes, b_.Read(d));
    Json j = Json::parse(bytes, nullptr, /*allow_exceptions=*/false);
    if (!j.is_object() || j.value("type", "") != kImportType) {
      return Status::Corruption(d.str() + ": not a catalog import object (docs/format.md, \"Catalog objects\")");
    }
    j.erase("facts");
    j.erase("type");
    return b_.Put(tables::kImports, d.raw(), j.dump());
  }

  // The spec of a manifest the store holds, nullptr when it does not.
  Result<const Json*> Spec(const Digest& d) {
    if (auto it = specs_.find(d); it != specs_.end()) return it->second ? &it->second->spec : nullptr;
    KI_ASSIGN_OR_RETURN(auto info, b_.Stat(d));
    std::shared_ptr<const Manifest> m;
    // Viewed, not read: an import's batch holds what its workers parsed,
    // audit's what its pass parsed.
    if (info && info->type == ObjectType::kManifest) {
      KI_ASSIGN_OR_RETURN(m, b_.ViewManifest(d));
    }
    auto& slot = specs_[d];
    slot = std::move(m);
    return slot ? &slot->spec : nullptr;
  }
  Result<const Json*> SpecOf(const std::string& digest) {
    auto d = Digest::Parse(digest);
    if (!d.ok()) return nullptr;
    return Spec(*d);
  }

  // metadata.name of a manifest: the one name it is stored under, else the
  // name in its linked document (the document that travels with it).
  Result<std::string> NameOf(const Digest& d) {
    if (auto it = names_.find(d); it != names_.end()) return it->second;
    std::vector<std::string> names;
    KI_ASSIGN_OR_RETURN(std::vector<std::string> held, b_.NamesOf(d));
    for (std::string_view n : held)
      if (auto slash = n.find('/'); slash != std::string_view::npos) names.emplace_back(n.substr(slash + 1));
    std::string name = names.size() == 1 ? names[0] : "";
    if (names.size() > 1) {
      KI_ASSIGN_OR_RETURN(auto doc, b_.DocumentOf(d));
      if (doc) {
        KI_ASSIGN_OR_RETURN(auto info, b_.Stat(*doc));
        if (info) {
          KI_ASSIGN_OR_RETURN(std::string text, b_.Read(*doc));
          DocFormat fmt = info->media_type == kDocumentMediaTypeYaml ? DocFormat::kYaml : DocFormat::kJson;
          auto parsed = ParseDocument(text, fmt, doc->str());
          if (parsed.ok() && parsed->is_object() && parsed->contains("metadata")) {
            name = StringOr((*parsed)["metadata"], "name");
          }
        }
      }
      if (name.empty()) name = names[0];
    }
    names_[d] = name;
    return name;
  }

  // The facts about `run` (the last facts object in key order when there
  // are several: two exports of one run), nullopt when none.
  Result<std::optional<RunFactsObject>> FactsOf(const ObjectInfo& run) {
    std::optional<Digest> last;
    const std::string prefix = parts_.Of(run);
    std::vector<std::string> parts;
    KI_RETURN_IF_ERROR(b_.Scan(tables::kFacts, prefix, [&](std::string_view k, std::string_view) {
      if (k.size() == prefix.size() + parts_.held_size()) parts.emplace_back(k.substr(prefix.size()));
      return true;
    }));
    for (const std::string& part : parts) {
      KI_ASSIGN_OR_RETURN(auto d, parts_.DigestOf(part));
      if (d && (!last || *last < *d)) last = *d;  // the last in digest order
    }
    if (!last) return std::optional<RunFactsObject>();
    if (auto it = facts_.find(*last); it != facts_.end()) {
      // Parsed by Facts() in this update, and needed by this run alone.
      std::optional<RunFactsObject> f(std::move(it->second));
      facts_.erase(it);
      return f;
    }
    KI_ASSIGN_OR_RETURN(std::string bytes, b_.Read(*last));
    KI_ASSIGN_OR_RETURN(RunFactsObject f, ParseFactsObject(bytes, last->str()));
    return std::optional<RunFactsObject>(std::move(f));
  }

  Status Pending(std::string_view run, const std::vector<std::pair<std::string, std::string>>& missing) {
    Json list = Json::array();
    for (const auto& [kind, digest] : missing) list.push_back({{"kind", kind}, {"digest", digest}});
    return b_.Put(tables::kPending, run, Json({{"missing", list}}).dump());
  }

  Status IndexRun(const Digest& run) {
    KI_ASSIGN_OR_RETURN(auto info, b_.Stat(run));
    if (!info || !IsRunKind(info->kind)) return Status::OK();  // facts about a run not held
    KI_ASSIGN_OR_RETURN(const Json* spec_p, Spec(run));
    if (!spec_p) return Status::OK();
    const Json& spec = *spec_p;
    const bool kernel = *info->kind == Kind::kBenchmarkRun;
    const std::string part = parts_.Of(*info);
    KI_ASSIGN_OR_RETURN(auto facts, FactsOf(*info));

    RankEntry e;
    e.run = run;
    e.id = facts ? StringOr(facts->row, "id") : "";
    if (e.id.empty()) e.id = run.hex();
    KI_ASSIGN_OR_RETURN(e.name, NameOf(run));
    e.observed_at = StringOr(spec, "observedAt");
    e.status = StringOr(spec, "status");
    // A run without catalog facts was published to this store by whoever
    // stored it (ki add, ki run); ranking-v1 needs that.
    e.published = facts ? facts->row.contains("publishedAt") && facts->row["publishedAt"].is_string() : true;
    e.retracted = facts && facts->row.contains("retractedAt") && facts->row["retractedAt"].is_string();
    {
      bool superseded = false;
      KI_RETURN_IF_ERROR(b_.Scan(tables::kSupersededBy, IdKey(e.id), [&](std::string_view, std::string_view) {
        superseded = true;
        return false;
      }));
      e.superseded = superseded;
    }
    KI_RETURN_IF_ERROR(b_.Put(tables::kIds, IdKey(e.id), part));

    Digest cohort;
    Json desc;
    if (kernel) {
      const std::string workload = StringOr(spec, "workloadDigest");
      KI_ASSIGN_OR_RETURN(const Json* wl, SpecOf(workload));
      if (!wl) return Pending(part, {{"WorkloadCase", workload}});
      auto ck = correctness_.find(workload);
      if (ck == correctness_.end()) {  // thousands of runs share a few hundred workloads
        Json wspec = Json::object();
        if (wl->contains("correctness")) wspec["correctness"] = (*wl)["correctness"];
        KI_ASSIGN_OR_RETURN(Digest key, CorrectnessKey(wspec));
        ck = correctness_.emplace(workload, key).first;
      }
      const Digest& correctness = ck->second;
      ComparisonParts parts{StringOr(*wl, "operationSpecDigest"), workload, StringOr(spec, "protocolDigest"),
                            StringOr(spec, "environmentDigest"), correctness.str(), MetricKey(spec)};
      KI_ASSIGN_OR_RETURN(cohort, ComparisonKey(parts));
      desc = {{"kind", "kernel"},           {"operation", parts.operation},     {"workload", parts.workload},
              {"protocol", parts.protocol}, {"environment", parts.environment}, {"correctness", parts.correctness},
              {"metric", parts.metric},     {"sourceNative", spec.contains("sourceNative")}};
      // Evidence (docs/kernelindex-identity.md): source held and raw
      // evidence reported make a run reproducible; the export's own
      // verification and replication facts go further.
      bool source = false;
      const std::string impl = StringOr(spec, "implementationDigest");
      KI_ASSIGN_OR_RETURN(const Json* impl_spec, SpecOf(impl));
      if (impl_spec) {
        source = impl_spec->contains("source");
        if (auto d = Digest::Parse(impl); d.ok()) {
          KI_ASSIGN_OR_RETURN(e.implementation, NameOf(*d));
        }
      }
      const bool raw = spec.contains("evidence") && spec["evidence"].is_object() && !spec["evidence"].empty();
      e.evidence = source && raw ? Evidence::kReproducible : Evidence::kReported;
      if (facts) {
        const Json& row = facts->row;
        if (auto it = row.find("independentReplicationCount"); it != row.end() && it->is_number() &&
                                                               it->get<double>() >= 2) {
          e.evidence = Evidence::kReplicated;
        } else if (row.value("reproducedByKernelindex", Json(false)) == Json(true)) {
          e.evidence = Evidence::kVerified;
        }
      }
      // Primary value: the timing's primary statistic, else the first measurement.
      if (auto t = spec.find("timing"); t != spec.end() && t->is_object()) {
        const std::string stat = StringOr(*t, "primaryStatistic");
        if (auto lat = t->find("latencyNs"); lat != t->end() && lat->is_object()) {
          if (auto v = lat->find(stat); v != lat->end() && v->is_number()) e.value = v->get<double>();
          if (auto ci = lat->find("confidence95"); ci != lat->end() && ci->is_array() && ci->size() == 2 &&
                                                   (*ci)[0].is_number() && (*ci)[1].is_number()) {
            e.interval = std::make_pair((*ci)[0].get<double>(), (*ci)[1].get<double>());
          }
        }
        e.unit = "ns";
      } else if (auto ms = spec.find("measurements"); ms != spec.end() && ms->is_array() && !ms->empty()) {
        if (auto v = (*ms)[0].find("value"); v != (*ms)[0].end() && v->is_number()) e.value = v->get<double>();
        e.unit = StringOr((*ms)[0], "unit");
      }
    } else {
      const std::string model = StringOr(spec, "modelDigest"), workload = StringOr(spec, "workloadDigest");
      KI_ASSIGN_OR_RETURN(const Json* ms, SpecOf(model));
      KI_ASSIGN_OR_RETURN(const Json* ws, SpecOf(workload));
      std::vector<std::pair<std::string, std::string>> missing;
      if (!ms) missing.emplace_back("ModelRevision", model);
      if (!ws) missing.emplace_back("ServingWorkload", workload);
      if (!missing.empty()) return Pending(part, missing);
      std::optional<std::string> tokenizer;
      if (auto t = ms->find("tokenizer"); t != ms->end() && t->is_object() && t->contains("name")) {
        tokenizer = StringOr(*t, "name");
      }
      const std::string metric_set = MetricSetKey(spec);
      ServingCohortParts parts{model,
                               tokenizer,
                               workload,
                               ServingProtocolKey(spec, *ws),
                               ServingTopologyKey(spec),
                               StringOr(spec, "qualityPolicy"),
                               metric_set};
      KI_ASSIGN_OR_RETURN(cohort, ServingCohortKey(parts));
      desc = {{"kind", "serving"},
              {"model", model},
              {"tokenizer", tokenizer ? Json(*tokenizer) : Json(nullptr)},
              {"workload", workload},
              {"protocol", parts.protocol},
              {"topology", parts.topology},
              {"qualityPolicy", parts.quality_policy},
              {"metric", metric_set}};
      if (auto m = spec.find("measurements"); m != spec.end() && m->is_array() && !m->empty()) {
        if (auto v = (*m)[0].find("value"); v != (*m)[0].end() && v->is_number()) e.value = v->get<double>();
        e.unit = StringOr((*m)[0], "unit");
      }
    }

    KI_RETURN_IF_ERROR(b_.Delete(tables::kPending, part));
    KI_RETURN_IF_ERROR(b_.Put(tables::kRuns, part, tables::EncodeRunValue(e, cohort, kernel)));
    // Membership only: the entry is catalog.runs' (one copy per run).
    KI_RETURN_IF_ERROR(b_.Put(tables::kCohortRuns, PairKey(cohort, part), ""));
    // A group's description is a function of its key's parts, but for
    // sourceNative: any source-native member makes the group source-native.
    // Members never leave a group (a run's group is fixed by its manifests).
    auto& known = descs_[cohort];
    if (known.is_null()) {
      KI_ASSIGN_OR_RETURN(auto stored, b_.Get(tables::kCohorts, cohort.raw()));
      if (stored && !tables::DecodeStoredJson(*stored, &known)) known = Json();
      if (!known.is_object()) known = Json();
    }
    if (known.is_null()) {
      known = std::move(desc);
    } else if (kernel && desc.value("sourceNative", false)) {
      known["sourceNative"] = true;
    }
    touched_.insert(cohort);
    return Status::OK();
  }

  // Member count and, for a kernel group, its stored ranking.
  Status Recount(const Digest& cohort) {
    Json& desc = descs_[cohort];
    std::vector<std::string> parts;
    KI_ASSIGN_OR_RETURN(auto entries, tables::CohortEntries(b_, cohort, &parts));
    desc["runs"] = entries.size();
    KI_RETURN_IF_ERROR(b_.Put(tables::kCohorts, cohort.raw(), tables::EncodeCompactJson(desc)));
    if (desc.value("kind", "kernel") != "kernel") return Status::OK();
    std::unordered_map<Digest, std::string> part_of;
    for (size_t i = 0; i < entries.size(); ++i) part_of.emplace(entries[i].run, std::move(parts[i]));
    Ranking r = RankV1(std::move(entries), desc.value("sourceNative", false));
    return b_.Put(tables::kRanks, cohort.raw(), tables::EncodeRanking(r, parts_.numbered(), [&](const Digest& d) {
                    return part_of[d];
                  }));
  }

  Batch& b_;
  tables::ObjectParts<Batch> parts_;  // how keys name held objects (format 15: numbers)
  std::unordered_map<Digest, std::shared_ptr<const Manifest>> specs_;  // nullptr: not held
  std::unordered_map<Digest, std::string> names_;
  // Facts objects this update stored, parsed, until their run is indexed.
  std::unordered_map<Digest, RunFactsObject> facts_;
  std::unordered_map<std::string, Digest> correctness_;
  std::map<Digest, Json> descs_;
  std::set<Digest> touched_;
};

class GroupIndex final : public DerivedIndex {
 public:
  std::vector<std::string_view> Tables() const override {
    return {tables::kRuns,  tables::kCohortRuns, tables::kCohorts,      tables::kEvents,  tables::kRanks,
            tables::kImports, tables::kFacts,    tables::kSupersededBy, tables::kIds,     tables::kPending};
  }
  // catalog.runs' keys say whether the tables hold numbers (ObjectParts).
  int HeldFormat(Store& store) const override {
    const int format = store.format_version();
    if (format >= kFormatCatalogNumbers) return format;
    return tables::ObjectParts<Store>(store).numbered() ? kFormatCatalogNumbers : format;
  }
  std::string DescribeKey(std::string_view table, std::string_view key) const override {
    return tables::KeyText(table, key);
  }
  // A store of format 8 or before holds catalog.cohorts and catalog.events
  // values as JSON text until it is upgraded.
  bool SameValue(std::string_view table, std::string_view stored, std::string_view want) const override {
    if (stored == want) return true;
    if ((table != tables::kCohorts && table != tables::kEvents) || stored.empty() || stored.front() != '{')
      return false;
    Json a, b;
    return tables::DecodeStoredJson(stored, &a) && tables::DecodeStoredJson(want, &b) && a == b;
  }
  Status Upgrade(Batch& batch, int from) override {
    if (from == 1) return tables::UpgradeCatalogV1(batch);
    if (from == 2) {
      // Format 2 kept a second copy of each run entry in catalog.cohort;
      // format 3 keeps its members only (the entries are catalog.runs').
      std::vector<std::string> keys;
      KI_RETURN_IF_ERROR(batch.Scan(tables::kCohortRuns, "", [&](std::string_view k, std::string_view v) {
        if (!v.empty()) keys.emplace_back(k);
        return true;
      }));
      for (const std::string& k : keys) KI_RETURN_IF_ERROR(batch.Put(tables::kCohortRuns, k, ""));
    }
    if (from <= 4) {
      // Format 5: catalog.runs values are binary (EncodeRunValue) instead
      // of JSON; each is decoded and encoded again, nothing else changes.
      // One that does not decode is left for audit to report.
      std::vector<std::pair<std::string, std::string>> converted;
      KI_RETURN_IF_ERROR(batch.Scan(tables::kRuns, "", [&](std::string_view k, std::string_view v) {
        if (k.size() != 32 || v.empty() || v.front() != '{') return true;
        RankEntry e;
        tables::RunEntryExtra x;
        if (!tables::EntryFromStored(Digest::FromRaw(k), v, &e, &x)) return true;
        auto cohort = Digest::Parse(x.cohort.value_or(""));
        if (!cohort.ok() || !x.kind || (*x.kind != "kernel" && *x.kind != "serving")) return true;
        converted.emplace_back(std::string(k), tables::EncodeRunValue(e, *cohort, *x.kind == "kernel"));
        return true;
      }));
      for (const auto& [k, v] : converted) KI_RETURN_IF_ERROR(batch.Put(tables::kRuns, k, v));
    }
    if (from == 8) {
      // Format 9: catalog.cohorts and catalog.events values are compact
      // binary JSON; each JSON one is parsed and encoded again. One that
      // does not parse is left for audit to report.
      for (std::string_view table : {tables::kCohorts, tables::kEvents}) {
        std::vector<std::pair<std::string, std::string>> converted;
        KI_RETURN_IF_ERROR(batch.Scan(table, "", [&](std::string_view k, std::string_view v) {
          if (v.empty() || v.front() != '{') return true;  // binary already
          Json j;
          if (tables::DecodeStoredJson(v, &j) && j.is_object())
            converted.emplace_back(std::string(k), tables::EncodeCompactJson(j));
          return true;
        }));
        for (const auto& [k, v] : converted) KI_RETURN_IF_ERROR(batch.Put(table, k, v));
      }
    }
    return Status::OK();
  }
  Status Update(Batch& batch, const std::vector<ObjectInfo>& arrived) override {
    try {
      return GroupUpdate(batch).Run(arrived);
    } catch (const std::exception& e) {  // a JSON type error: a bug, said as such
      return Status::Corruption(std::string("catalog index: ") + e.what());
    }
  }
};

}  // namespace

void RegisterGroupIndex() {
  static GroupIndex index;
  RegisterDerivedIndex(&index);
}

namespace {
// Every program that links the catalog keeps its groups: registered before
// main, so no store of the process is opened without it.
const bool kRegistered = (RegisterGroupIndex(), true);
}  // namespace

}  // namespace ki::catalog
