// Writing a KernelIndex catalog export (`ki export kernelindex`).
//
// Shape of the work: choose the runs (all, or those the REFs name), follow
// their references to every manifest they reach, check that each run's
// keys can be computed here (a run whose workload is not held has no
// comparison key: its row could not be imported), then write the tables in
// the order KernelIndex's export writes them, each table's rows in digest
// order, so that one store always gives the same bytes. What each column
// holds and where it comes from: docs/format.md, "Catalog export".
#include <zstd.h>

#include <algorithm>
#include <map>
#include <memory>
#include <set>
#include <unordered_map>

#include "catalog/tables.h"
#include "json/dump.h"
#include "json/fields.h"
#include "ki/catalog.h"
#include "ki/export.h"
#include "ki/store_env.h"

namespace ki::catalog {

// ---------------------------------------------------------------- ExportLine

ExportLine& ExportLine::Set(std::string_view field, Json value) {
  fields_.push_back({std::string(field), std::move(value), {}, false});
  return *this;
}

ExportLine& ExportLine::SetRaw(std::string_view field, std::string json) {
  fields_.push_back({std::string(field), nullptr, std::move(json), true});
  return *this;
}

Status ExportLine::AppendTo(std::string* out) const {
  const size_t mark = out->size();
  auto fail = [&](Status st) {
    out->resize(mark);
    return st;
  };
  out->append("{\"table\":");
  if (Status st = json_internal::AppendDump(Json(table_), out); !st.ok()) return fail(st);
  out->append(",\"row\":{");
  for (size_t i = 0; i < fields_.size(); ++i) {
    const Value& v = fields_[i];
    if (i) out->push_back(',');
    if (Status st = json_internal::AppendDump(Json(v.field), out); !st.ok()) return fail(st);
    out->push_back(':');
    if (v.is_raw) {
      if (v.raw.empty() || v.raw.find('\n') != std::string::npos) {
        return fail(Status::InvalidInput(table_ + " row: the value of `" + v.field + "` is not one line of JSON"));
      }
      out->append(v.raw);
    } else if (Status st = json_internal::AppendDump(v.json, out); !st.ok()) {
      return fail(Status::InvalidInput(table_ + " row, `" + v.field + "`: " + st.message()));
    }
  }
  out->append("}}\n");
  return Status::OK();
}

namespace {

// The export's tables, in the order KernelIndex writes them. Protocols and
// environments have no table: they travel inside their runs' bundles.
constexpr std::pair<Kind, std::string_view> kExportTables[] = {
    {Kind::kSoftwareProject, "projects"},
    {Kind::kOperationSpec, "operations"},
    {Kind::kWorkloadCase, "workloads"},
    {Kind::kWorkloadSuite, "workloads"},  // a run's workload may be a suite (KernelIndex's leaderboard scores)
    {Kind::kImplementationRevision, "implementations"},
    {Kind::kModelRevision, "model_revisions"},
    {Kind::kServingStackRevision, "serving_stack_revisions"},
    {Kind::kServingConfiguration, "serving_configurations"},
    {Kind::kServingWorkload, "serving_workloads"},
};

bool HasTable(Kind k) {
  for (const auto& [kind, table] : kExportTables)
    if (kind == k) return true;
  return false;
}

bool IsRun(Kind k) { return k == Kind::kBenchmarkRun || k == Kind::kServingRun; }

// The id a row of a manifest ki keeps no export id for: its digest's hex,
// as catalog.runs names a run without facts. References between rows
// (workloadId, operationId, ...) use the same ids.
Json IdOf(std::string_view digest) {
  auto d = Digest::Parse(digest);
  return d.ok() ? Json(d->hex()) : Json(nullptr);
}
Json IdAt(const Json& digest) { return digest.is_string() ? IdOf(digest.get<std::string>()) : Json(nullptr); }

Json Get(const Json& obj, std::string_view key) {
  if (!obj.is_object()) return nullptr;
  auto it = obj.find(key);
  return it != obj.end() ? *it : Json(nullptr);
}

Json Path(const Json& obj, std::initializer_list<std::string_view> keys) {
  const Json* cur = &obj;
  for (std::string_view k : keys) {
    if (!cur->is_object()) return nullptr;
    auto it = cur->find(k);
    if (it == cur->end()) return nullptr;
    cur = &*it;
  }
  return *cur;
}

// The major version of a "13.0"-style version string, else null.
Json Major(const Json& version) {
  if (!version.is_string()) return nullptr;
  const std::string s = version.get<std::string>();
  size_t n = 0;
  while (n < s.size() && n < 9 && s[n] >= '0' && s[n] <= '9') ++n;
  if (n == 0 || (n < s.size() && s[n] != '.')) return nullptr;
  return std::stoi(s.substr(0, n));
}

// One measurement as KernelIndex's measurements tables hold it.
struct Measurement {
  Json metric, statistic, unit, value, samples;
};

// A kernel run's measurements: each statistic of its timing (latency, ns;
// `minimum`/`maximum` spelled `min`/`max`, as KernelIndex's tables do),
// then its `measurements` entries.
std::vector<Measurement> MeasurementsOf(const Json& spec) {
  std::vector<Measurement> out;
  if (auto t = spec.find("timing"); t != spec.end() && t->is_object()) {
    const Json samples = Get(*t, "samples");
    if (auto lat = t->find("latencyNs"); lat != t->end() && lat->is_object()) {
      // The order KernelIndex lists them in; others after, by name.
      static const std::vector<std::string> kOrder = {"mean", "median", "p05", "p95", "minimum", "maximum"};
      std::vector<std::string> keys;
      for (const auto& k : kOrder)
        if (lat->contains(k)) keys.push_back(k);
      for (auto it = lat->begin(); it != lat->end(); ++it)
        if (std::find(kOrder.begin(), kOrder.end(), it.key()) == kOrder.end()) keys.push_back(it.key());
      for (const auto& k : keys) {
        const Json& v = (*lat)[k];
        if (!v.is_number()) continue;  // confidence95 is an interval, not a statistic
        std::string stat = k == "minimum" ? "min" : k == "maximum" ? "max" : k;
        out.push_back({"latency", stat, "ns", v, samples});
      }
    }
  }
  if (auto ms = spec.find("measurements"); ms != spec.end() && ms->is_array()) {
    for (const Json& m : *ms) {
      out.push_back({Get(m, "metric"), Get(m, "statistic"), Get(m, "unit"), Get(m, "value"), Get(m, "sampleCount")});
    }
  }
  return out;
}

// What an artifacts row says of a digest a manifest names that is no
// manifest: a blob held here, or one the store knows of without its bytes.
struct Artifact {
  std::string kind;  // "source", "log", or "" (not said)
  std::string uri;   // from the reference
};

std::string ArtifactKind(std::string_view field) {
  if (field == "/spec/source/contentDigest") return "source";
  if (field.rfind("/spec/evidence/logs", 0) == 0) return "log";
  return "";
}

class Exporter {
 public:
  Exporter(Store& store, const ExportOptions& opts, ExportReport* report)
      : store_(store), opts_(opts), report_(report) {}

  Status Prepare() {
    KI_RETURN_IF_ERROR(opts_.refs.empty() ? SelectAll() : SelectRefs());
    KI_RETURN_IF_ERROR(Close());
    for (const Digest& run : runs_) KI_RETURN_IF_ERROR(CheckRun(run));
    return Status::OK();
  }

  // Appends every line to *text.
  Status Write(std::string* text) {
    text_ = text;
    KI_RETURN_IF_ERROR(Sources());
    for (const auto& [kind, table] : kExportTables) {
      if (kind == Kind::kModelRevision) {
        // KernelIndex writes the kernel runs and their tables before the
        // serving chain.
        KI_RETURN_IF_ERROR(KernelRuns());
      }
      for (const Digest& d : manifests_[kind]) KI_RETURN_IF_ERROR(ManifestRow(kind, table, d));
    }
    KI_RETURN_IF_ERROR(ServingRuns());
    return Status::OK();
  }

 private:
  // ---- choosing what goes out

  Status AddRun(const Digest& d, Kind k) {
    if (runs_.insert(d).second) kind_of_run_[d] = k;
    return Status::OK();
  }

  Status SelectAll() {
    for (Kind k : AllKinds()) {
      KI_RETURN_IF_ERROR(store_.ForEachOfKind(k, [&](const Digest& d) {
        if (IsRun(k)) {
          runs_.insert(d);
          kind_of_run_[d] = k;
        } else if (HasTable(k)) {
          manifests_[k].insert(d);
        } else {
          unplaced_[d] = k;  // a protocol or an environment: placed if a run names it
        }
        return true;
      }));
    }
    return Status::OK();
  }

  Status SelectRefs() {
    for (const std::string& ref : opts_.refs) {
      auto d = store_.Resolve(ref);
      std::optional<ObjectInfo> info;
      if (d.ok()) {
        KI_ASSIGN_OR_RETURN(info, store_.Stat(*d));
        if (info && info->kind && IsRun(*info->kind)) {
          KI_RETURN_IF_ERROR(AddRun(*d, *info->kind));
          continue;
        }
      }
      // A comparison group's key (not an object: the store cannot resolve it).
      KI_ASSIGN_OR_RETURN(std::vector<Digest> groups, GroupsMatching(ref));
      if (groups.size() > 1) {
        std::string msg = "'" + ref + "' is ambiguous; it matches the comparison groups:";
        for (const auto& g : groups) msg += "\n  " + g.str();
        return Status::Ambiguous(msg);
      }
      if (groups.size() == 1) {
        KI_ASSIGN_OR_RETURN(auto members, tables::CohortEntries(store_, groups[0]));
        for (const RankEntry& e : members) {
          KI_ASSIGN_OR_RETURN(auto mi, store_.Stat(e.run));
          if (mi && mi->kind && IsRun(*mi->kind)) KI_RETURN_IF_ERROR(AddRun(e.run, *mi->kind));
        }
        continue;
      }
      if (!d.ok()) return d.status();
      std::string what = info && info->kind ? std::string(KindName(*info->kind)) : "blob";
      return Status::InvalidInput("'" + ref + "' names a " + what + " (" + d->str() +
                                  "), not a run or a comparison group");
    }
    return Status::OK();
  }

  Result<std::vector<Digest>> GroupsMatching(std::string_view ref) {
    std::vector<Digest> found;
    auto prefix = DigestPrefix::Parse(ref);
    if (!prefix || prefix->digits() < 4) return found;
    KI_RETURN_IF_ERROR(store_.Scan(tables::kCohorts, prefix->key(), [&](std::string_view k, std::string_view) {
      if (k.size() == 32 && prefix->Matches(k)) found.push_back(Digest::FromRaw(k));
      return found.size() < 20;
    }));
    return found;
  }

  // Every manifest the runs reach through references, and the artifacts
  // (digests that are no manifest) every exported manifest names.
  Status Close() {
    std::vector<Digest> work(runs_.begin(), runs_.end());
    for (const auto& [kind, set] : manifests_) work.insert(work.end(), set.begin(), set.end());
    std::set<Digest> seen(work.begin(), work.end());
    while (!work.empty()) {
      Digest d = work.back();
      work.pop_back();
      KI_ASSIGN_OR_RETURN(const Manifest* m, ManifestOf(d));
      for (const Reference& r : ExtractReferences(*m)) {
        if (auto a = artifacts_.find(r.target); a != artifacts_.end()) {
          // Named again (a source by two implementations): the first field
          // that says what it is, and the first uri, stand.
          if (a->second.kind.empty()) a->second.kind = ArtifactKind(r.field);
          if (a->second.uri.empty()) a->second.uri = r.uri;
          continue;
        }
        if (!seen.insert(r.target).second) continue;  // a manifest already followed
        KI_ASSIGN_OR_RETURN(auto info, store_.Stat(r.target));
        if (info && info->type == ObjectType::kManifest && info->kind) {
          const Kind k = *info->kind;
          if (IsRun(k)) continue;  // a run names another: not exported unless chosen
          if (HasTable(k)) manifests_[k].insert(r.target);
          unplaced_.erase(r.target);
          work.push_back(r.target);
          continue;
        }
        artifacts_[r.target] = {ArtifactKind(r.field), r.uri};
      }
    }
    for (const auto& [d, k] : unplaced_) report_->left_out[std::string(KindName(k))]++;
    return Status::OK();
  }

  // A run's row needs its comparison key (kernel) or cohort key (serving),
  // and a kernel run's bundle its protocol and environment.
  Status CheckRun(const Digest& run) {
    KI_ASSIGN_OR_RETURN(auto cohort, CohortOfRun(store_, run));
    if (!cohort) {
      KI_ASSIGN_OR_RETURN(auto missing, MissingForGroup(store_, run));
      std::string msg = "run " + run.str() + " cannot be exported: ";
      if (missing.empty()) return Status::NotFound(msg + "it is in no comparison group");
      msg += "this store lacks its ";
      for (size_t i = 0; i < missing.size(); ++i) msg += (i ? " and its " : "") + missing[i].first + " " + missing[i].second;
      return Status::NotFound(msg + ", which its comparison key needs (ki pull or ki add it)");
    }
    cohort_[run] = *cohort;
    if (kind_of_run_[run] != Kind::kBenchmarkRun) return Status::OK();
    KI_ASSIGN_OR_RETURN(const Manifest* m, ManifestOf(run));
    for (const char* part : {"protocolDigest", "environmentDigest"}) {
      const std::string digest = StringOr(m->spec, part);
      auto d = Digest::Parse(digest);
      std::optional<ObjectInfo> info;
      if (d.ok()) {
        KI_ASSIGN_OR_RETURN(info, store_.Stat(*d));
      }
      if (!info || info->type != ObjectType::kManifest) {
        return Status::NotFound("run " + run.str() + " cannot be exported: this store lacks its " +
                                (std::string_view(part) == "protocolDigest" ? "BenchmarkProtocol " : "ExecutionEnvironment ") +
                                digest + ", which its row's bundle carries (ki pull or ki add it)");
      }
    }
    return Status::OK();
  }

  // ---- reading

  Result<const Manifest*> ManifestOf(const Digest& d) {
    if (auto it = manifests_read_.find(d); it != manifests_read_.end()) return &it->second;
    KI_ASSIGN_OR_RETURN(Manifest m, store_.ReadManifest(d));
    return &manifests_read_.emplace(d, std::move(m)).first->second;
  }
  Result<const Json*> SpecOf(const std::string& digest) {
    constexpr const Json* kNone = nullptr;
    auto d = Digest::Parse(digest);
    if (!d.ok()) return kNone;
    KI_ASSIGN_OR_RETURN(auto info, store_.Stat(*d));
    if (!info || info->type != ObjectType::kManifest) return kNone;
    KI_ASSIGN_OR_RETURN(const Manifest* m, ManifestOf(*d));
    return &m->spec;
  }

  // The manifest as the export carries it: its stored document (metadata
  // included) as one line of JSON, as it is when it already is one (what
  // an import stores), else re-serialised; without a document, the
  // canonical body (no metadata: no name travels).
  Result<std::string> DocumentJson(const Digest& d) {
    KI_ASSIGN_OR_RETURN(auto doc, store_.DocumentOf(d));
    if (doc) {
      KI_ASSIGN_OR_RETURN(auto info, store_.Stat(*doc));
      if (info) {
        KI_ASSIGN_OR_RETURN(std::string bytes, store_.Read(*doc));
        const bool json = info->media_type == kDocumentMediaTypeJson;
        if (json && !bytes.empty() && bytes.front() == '{' && bytes.find('\n') == std::string::npos) return bytes;
        ParseLimits limits;
        limits.max_bytes = bytes.size() + 1;
        KI_ASSIGN_OR_RETURN(Json j, ParseDocument(bytes, json ? DocFormat::kJson : DocFormat::kYaml, doc->str(), limits));
        std::string out;
        KI_RETURN_IF_ERROR(json_internal::AppendDump(j, &out));
        return out;
      }
    }
    KI_ASSIGN_OR_RETURN(const Manifest* m, ManifestOf(d));
    return m->canonical;
  }

  // The facts about a run (the last facts object in key order, as the
  // group index reads them), nullopt when none.
  Result<std::optional<RunFactsObject>> FactsOf(const Digest& run) {
    std::vector<Digest> facts;
    KI_RETURN_IF_ERROR(FactsAbout(store_, run, &facts));
    if (facts.empty()) return std::optional<RunFactsObject>();
    KI_ASSIGN_OR_RETURN(std::string bytes, store_.Read(facts.back()));
    KI_ASSIGN_OR_RETURN(RunFactsObject f, ParseFactsObject(bytes, facts.back().str()));
    return std::optional<RunFactsObject>(std::move(f));
  }

  // ---- writing

  Status Emit(const ExportLine& row, std::string_view table) {
    KI_RETURN_IF_ERROR(row.AppendTo(text_));
    report_->rows[std::string(table)]++;
    report_->lines++;
    return Status::OK();
  }

  Status Sources() {
    // Read every run's facts once, here: sources come first in the export.
    std::map<std::string, Json> sources;
    for (const Digest& run : runs_) {
      KI_ASSIGN_OR_RETURN(auto f, FactsOf(run));
      if (!f) {
        report_->runs_without_facts++;
        continue;
      }
      if (f->source.is_object() && f->source.contains("id")) sources[StringOr(f->source, "id")] = f->source;
      facts_.emplace(run, std::move(*f));
    }
    for (const auto& [id, s] : sources) {
      ExportLine row("sources");
      for (const char* field : {"id", "slug", "kind", "name"})
        if (s.contains(field)) row.Set(field, s[field]);
      KI_RETURN_IF_ERROR(Emit(row, "sources"));
    }
    return Status::OK();
  }

  Status ManifestRow(Kind kind, std::string_view table, const Digest& d) {
    KI_ASSIGN_OR_RETURN(const Manifest* m, ManifestOf(d));
    KI_ASSIGN_OR_RETURN(std::string doc, DocumentJson(d));
    const Json& spec = m->spec;
    // The names a row carries are its document's (a manifest read from its
    // canonical bytes has no metadata).
    const Json doc_meta = Get(Json::parse(doc, nullptr, /*allow_exceptions=*/false), "metadata");
    const Json name = Get(doc_meta, "name"), title = Get(doc_meta, "title");
    const std::string api(kApiVersion);
    ExportLine row(table);
    row.Set("id", d.hex());
    switch (kind) {
      case Kind::kSoftwareProject:
        row.Set("slug", name);  // its `name` is the project's display name, which ki does not keep
        break;
      case Kind::kOperationSpec:
        row.Set("slug", name).Set("family", Get(spec, "family")).Set("name", title).Set("schemaVersion", api);
        row.Set("semanticDigest", d.str());
        break;
      case Kind::kWorkloadCase:
      case Kind::kWorkloadSuite:
        row.Set("operationId", IdOf(StringOr(spec, "operationSpecDigest"))).Set("workloadDigest", d.str());
        row.Set("schemaVersion", api);
        break;
      case Kind::kImplementationRevision:
        row.Set("operationId", IdAt(Path(spec, {"operation", "specDigest"})));
        row.Set("implementationDigest", d.str())
            .Set("language", Path(spec, {"callable", "language"}))
            .Set("framework", Path(spec, {"callable", "framework"}))
            .Set("targetArchitectures", Path(spec, {"support", "hardwareArchitectures"}))
            .Set("sourceAvailable", spec.contains("source"))
            .Set("title", title);
        break;
      case Kind::kModelRevision:
        row.Set("slug", name).Set("modelDigest", d.str()).Set("name", Get(spec, "model")).Set("schemaVersion", api);
        break;
      case Kind::kServingStackRevision:
        row.Set("slug", name).Set("stackDigest", d.str());
        row.Set("name", Path(spec, {"revision", "version"})).Set("version", Path(spec, {"revision", "version"}));
        row.Set("schemaVersion", api);
        break;
      case Kind::kServingConfiguration:
        row.Set("stackRevisionId", IdOf(StringOr(spec, "stackDigest"))).Set("configurationDigest", d.str());
        row.Set("dtype", Get(spec, "dtype")).Set("schemaVersion", api);
        break;
      case Kind::kServingWorkload:
        row.Set("workloadDigest", d.str()).Set("slug", name).Set("name", title);
        row.Set("streaming", Get(spec, "streaming")).Set("loadGeneration", Get(spec, "loadGeneration"));
        row.Set("schemaVersion", api);
        break;
      default:
        break;
    }
    row.SetRaw("manifest", std::move(doc));
    return Emit(row, table);
  }

  // The facts columns of a run row: the facts object's, else those of a
  // published record (KernelIndex exports published records: each has
  // publishedAt, reported, no verification, no replications); ki keeps no
  // publication time for a run it stored, so its observedAt stands in.
  Json Fact(const Digest& run, const Json& spec, std::string_view field) {
    if (auto it = facts_.find(run); it != facts_.end()) return Get(it->second.row, field);
    if (field == "id") return run.hex();
    if (field == "publishedAt") return Get(spec, "observedAt");
    if (field == "reported") return true;
    if (field == "reproducedByKernelindex") return false;
    if (field == "independentReplicationCount") return 0;
    return nullptr;
  }
  std::string RunId(const Digest& run, const Json& spec) {
    Json id = Fact(run, spec, "id");
    return id.is_string() && !id.get<std::string>().empty() ? id.get<std::string>() : run.hex();
  }

  Status KernelRuns() {
    std::vector<std::pair<Digest, std::string>> kernel;  // digest, row id
    for (const Digest& run : runs_) {
      if (kind_of_run_[run] != Kind::kBenchmarkRun) continue;
      KI_ASSIGN_OR_RETURN(const Manifest* m, ManifestOf(run));
      kernel.emplace_back(run, RunId(run, m->spec));
      KI_RETURN_IF_ERROR(KernelRun(run, *m, kernel.back().second));
    }
    for (const auto& [run, id] : kernel) {
      KI_ASSIGN_OR_RETURN(const Manifest* m, ManifestOf(run));
      for (const Measurement& x : MeasurementsOf(m->spec)) {
        ExportLine row("measurements");
        row.Set("runId", id).Set("metric", x.metric).Set("statistic", x.statistic).Set("unit", x.unit);
        row.Set("value", x.value).Set("sampleCount", x.samples);
        KI_RETURN_IF_ERROR(Emit(row, "measurements"));
      }
    }
    // Record events of every run, kernel or serving (KernelIndex's ranking
    // events are of kernel groups), in each facts object's order.
    for (const Digest& run : runs_) {
      auto it = facts_.find(run);
      if (it == facts_.end()) continue;
      for (const Json& ev : it->second.events) {
        // The facts object keeps the export's row whole, its columns in key
        // order: KernelIndex's order first, any others after.
        static const std::vector<std::string> kOrder = {"id",           "comparisonKey", "runId", "previousRunId",
                                                        "policyVersion", "cause",         "at",    "createdAt"};
        ExportLine row("record_events");
        for (const auto& k : kOrder)
          if (ev.contains(k)) row.Set(k, ev[k]);
        for (auto f = ev.begin(); f != ev.end(); ++f)
          if (std::find(kOrder.begin(), kOrder.end(), f.key()) == kOrder.end()) row.Set(f.key(), f.value());
        KI_RETURN_IF_ERROR(Emit(row, "record_events"));
      }
    }
    return Artifacts();
  }

  Status KernelRun(const Digest& run, const Manifest& m, const std::string& id) {
    const Json& spec = m.spec;
    const std::string workload = StringOr(spec, "workloadDigest"), impl = StringOr(spec, "implementationDigest");
    KI_ASSIGN_OR_RETURN(const Json* wl, SpecOf(workload));
    KI_ASSIGN_OR_RETURN(const Json* env, SpecOf(StringOr(spec, "environmentDigest")));
    KI_ASSIGN_OR_RETURN(const Json* impl_spec, SpecOf(impl));
    if (!wl || !env) return Status::Corruption("run " + run.str() + ": its workload or environment went missing");
    Json wspec = Json::object();
    if (wl->contains("correctness")) wspec["correctness"] = (*wl)["correctness"];
    KI_ASSIGN_OR_RETURN(Digest correctness, CorrectnessKey(wspec));

    // The primary value, as ranking-v1 reads it (catalog.runs' `v`).
    Json metric = "none", value = nullptr, unit = nullptr, stat = nullptr, samples = nullptr, low = nullptr,
         high = nullptr;
    if (auto t = spec.find("timing"); t != spec.end() && t->is_object()) {
      metric = "latency";
      stat = Get(*t, "primaryStatistic");
      unit = "ns";
      samples = Get(*t, "samples");
      const Json lat = Get(*t, "latencyNs");
      if (stat.is_string()) value = Get(lat, stat.get<std::string>());
      const Json ci = Get(lat, "confidence95");
      if (ci.is_array() && ci.size() == 2) {
        low = ci[0];
        high = ci[1];
      }
    } else if (auto ms = spec.find("measurements"); ms != spec.end() && ms->is_array() && !ms->empty()) {
      const Json& first = (*ms)[0];
      metric = Get(first, "metric");
      stat = Get(first, "statistic");
      unit = Get(first, "unit");
      value = Get(first, "value");
      samples = Get(first, "sampleCount");
    }
    if (!value.is_number()) value = nullptr;
    const bool raw = spec.contains("evidence") && spec["evidence"].is_object() && !spec["evidence"].empty();

    ExportLine row("benchmark_runs");
    row.Set("id", id)
        .Set("runDigest", run.str())
        .Set("implementationId", IdOf(impl))
        .Set("workloadId", IdOf(workload))
        .Set("sourceId", Fact(run, spec, "sourceId"))
        .Set("status", Get(spec, "status"))
        .Set("observedAt", Get(spec, "observedAt"))
        .Set("publishedAt", Fact(run, spec, "publishedAt"))
        .Set("hardwareVendor", Path(*env, {"hardware", "vendor"}))
        .Set("hardwareModel", Path(*env, {"hardware", "product"}))
        .Set("hardwareArchitecture", Path(*env, {"hardware", "architecture"}))
        .Set("cudaMajor", Major(Path(*env, {"software", "cudaToolkit"})))
        .Set("protocolKey", Get(spec, "protocolDigest"))
        .Set("environmentKey", Get(spec, "environmentDigest"))
        .Set("correctnessKey", correctness.str())
        .Set("comparisonKey", cohort_[run].str())
        .Set("primaryMetric", metric)
        .Set("primaryValue", value)
        .Set("primaryUnit", unit)
        .Set("sampleCount", samples)
        .Set("uncertaintyLow", low)
        .Set("uncertaintyHigh", high)
        .Set("reported", Fact(run, spec, "reported"))
        .Set("reproducedByKernelindex", Fact(run, spec, "reproducedByKernelindex"))
        .Set("independentReplicationCount", Fact(run, spec, "independentReplicationCount"))
        .Set("sourceAvailable", impl_spec != nullptr && impl_spec->contains("source"))
        .Set("primaryStatistic", stat)
        .Set("hasRawEvidence", raw)
        .Set("sourceNative", spec.contains("sourceNative"));
    KI_ASSIGN_OR_RETURN(std::string run_doc, DocumentJson(run));
    KI_ASSIGN_OR_RETURN(std::string protocol_doc, DocumentJson(*Digest::Parse(StringOr(spec, "protocolDigest"))));
    KI_ASSIGN_OR_RETURN(std::string env_doc, DocumentJson(*Digest::Parse(StringOr(spec, "environmentDigest"))));
    row.SetRaw("manifest", "{\"run\":" + run_doc + ",\"protocol\":" + protocol_doc + ",\"environment\":" + env_doc + "}");
    row.Set("supersedesId", Fact(run, spec, "supersedesId"))
        .Set("retractedAt", Fact(run, spec, "retractedAt"))
        .Set("retractionReason", Fact(run, spec, "retractionReason"));
    report_->runs++;
    return Emit(row, "benchmark_runs");
  }

  Status Artifacts() {
    for (const auto& [d, a] : artifacts_) {
      KI_ASSIGN_OR_RETURN(auto info, store_.Stat(d));
      Json media = nullptr, size = nullptr, uri = nullptr;
      if (info) {
        // Held here: what the store knows of the blob, and where the
        // manifest says it lives.
        if (info->type == ObjectType::kManifest) continue;
        media = info->media_type;
        size = info->size;
        if (!a.uri.empty()) uri = a.uri;
        report_->artifacts_held++;
      } else {
        // Known absent: the record as it is, so that an import records the
        // same (its uri too, which the manifest's reference may not share).
        KI_ASSIGN_OR_RETURN(auto absent, store_.StatAbsent(d));
        if (!absent) continue;  // named, but nothing is known of it: nothing to say
        if (!absent->media_type.empty()) media = absent->media_type;
        if (absent->size) size = *absent->size;
        if (!absent->uri.empty()) uri = absent->uri;
      }
      ExportLine row("artifacts");
      row.Set("contentDigest", d.str());
      if (!a.kind.empty()) row.Set("kind", a.kind);
      row.Set("mediaType", media).Set("sizeBytes", size).Set("uri", uri);
      KI_RETURN_IF_ERROR(Emit(row, "artifacts"));
    }
    return Status::OK();
  }

  Status ServingRuns() {
    std::vector<std::pair<Digest, std::string>> serving;
    for (const Digest& run : runs_) {
      if (kind_of_run_[run] != Kind::kServingRun) continue;
      KI_ASSIGN_OR_RETURN(const Manifest* m, ManifestOf(run));
      const Json& spec = m->spec;
      const std::string id = RunId(run, spec);
      serving.emplace_back(run, id);
      KI_ASSIGN_OR_RETURN(const Json* ws, SpecOf(StringOr(spec, "workloadDigest")));
      if (!ws) return Status::Corruption("serving run " + run.str() + ": its workload went missing");
      const Json top = Get(spec, "topology");
      Json total = nullptr;
      if (Get(top, "acceleratorsPerNode").is_number_unsigned() && Get(top, "nodeCount").is_number_unsigned()) {
        total = Get(top, "acceleratorsPerNode").get<uint64_t>() * Get(top, "nodeCount").get<uint64_t>();
      }
      ExportLine row("serving_runs");
      row.Set("id", id)
          .Set("runDigest", run.str())
          .Set("modelRevisionId", IdOf(StringOr(spec, "modelDigest")))
          .Set("configurationId", IdOf(StringOr(spec, "configurationDigest")))
          .Set("workloadId", IdOf(StringOr(spec, "workloadDigest")))
          .Set("sourceId", Fact(run, spec, "sourceId"))
          .Set("status", Get(spec, "status"))
          .Set("observedAt", Get(spec, "observedAt"))
          .Set("publishedAt", Fact(run, spec, "publishedAt"))
          .Set("cohortKey", cohort_[run].str())
          .Set("protocolKey", ServingProtocolKey(spec, *ws))
          .Set("qualityPolicy", Get(spec, "qualityPolicy"))
          .Set("metricSetKey", MetricSetKey(spec))
          .Set("acceleratorVendor", Get(top, "acceleratorVendor"))
          .Set("acceleratorModel", Get(top, "acceleratorModel"))
          .Set("acceleratorCount", Get(top, "acceleratorsPerNode"))
          .Set("nodeCount", Get(top, "nodeCount"))
          .Set("totalAccelerators", total)
          .Set("reported", Fact(run, spec, "reported"))
          .Set("schemaVersion", std::string(kApiVersion));
      KI_ASSIGN_OR_RETURN(std::string doc, DocumentJson(run));
      row.SetRaw("manifest", std::move(doc));
      row.Set("supersedesId", Fact(run, spec, "supersedesId"))
          .Set("retractedAt", Fact(run, spec, "retractedAt"))
          .Set("retractionReason", Fact(run, spec, "retractionReason"));
      report_->serving_runs++;
      KI_RETURN_IF_ERROR(Emit(row, "serving_runs"));
    }
    for (const auto& [run, id] : serving) {
      KI_ASSIGN_OR_RETURN(const Manifest* m, ManifestOf(run));
      const Json ms = Get(m->spec, "measurements");
      if (!ms.is_array()) continue;
      for (const Json& x : ms) {
        ExportLine row("serving_measurements");
        row.Set("runId", id).Set("metric", Get(x, "metric")).Set("statistic", Get(x, "statistic"));
        row.Set("unit", Get(x, "unit")).Set("value", Get(x, "value")).Set("sampleCount", Get(x, "sampleCount"));
        KI_RETURN_IF_ERROR(Emit(row, "serving_measurements"));
      }
    }
    return Status::OK();
  }

  Store& store_;
  const ExportOptions& opts_;
  ExportReport* report_;
  std::string* text_ = nullptr;
  std::set<Digest> runs_;
  std::map<Digest, Kind> kind_of_run_;
  std::map<Kind, std::set<Digest>> manifests_;
  std::map<Digest, Kind> unplaced_;
  std::map<Digest, Artifact> artifacts_;
  std::map<Digest, Digest> cohort_;
  std::unordered_map<Digest, RunFactsObject> facts_;
  std::unordered_map<Digest, Manifest> manifests_read_;
};

struct CCtxDeleter {
  void operator()(ZSTD_CCtx* c) const { ZSTD_freeCCtx(c); }
};

// The whole text as one zstd frame that declares its size (the import's
// reader then decompresses it in one allocation).
Result<std::string> Compress(std::string_view text, int level) {
  std::unique_ptr<ZSTD_CCtx, CCtxDeleter> c(ZSTD_createCCtx());
  if (!c) return Status::IOError("zstd: out of memory");
  ZSTD_CCtx_setParameter(c.get(), ZSTD_c_compressionLevel, level);
  ZSTD_CCtx_setParameter(c.get(), ZSTD_c_checksumFlag, 1);
  std::string out(ZSTD_compressBound(text.size()), '\0');
  size_t n = ZSTD_compress2(c.get(), out.data(), out.size(), text.data(), text.size());
  if (ZSTD_isError(n)) return Status::IOError(std::string("zstd: ") + ZSTD_getErrorName(n));
  out.resize(n);
  return out;
}

bool EndsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

std::string DirOf(const std::string& path) {
  size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

// Every line, in memory: the export is checked whole before a byte goes
// out, and a compressed one is one frame that declares its size.
Result<std::string> ExportText(Store& store, const ExportOptions& opts, ExportReport* report) {
  std::string text;
  Exporter x(store, opts, report);
  KI_RETURN_IF_ERROR(x.Prepare());
  KI_RETURN_IF_ERROR(x.Write(&text));
  report->text_bytes = text.size();
  report->content = Sha256Of(text);
  return text;
}

}  // namespace

Result<ExportReport> ExportKernelIndex(Store& store, const ExportOptions& opts,
                                       const std::function<Status(std::string_view)>& out) {
  ExportReport report;
  report.file = "-";
  KI_ASSIGN_OR_RETURN(std::string text, ExportText(store, opts, &report));
  // In pieces: a pipe's reader starts on the first lines while ki writes.
  constexpr size_t kPiece = 1 << 20;
  for (size_t pos = 0; pos < text.size(); pos += kPiece) {
    KI_RETURN_IF_ERROR(out(std::string_view(text).substr(pos, kPiece)));
  }
  report.bytes = text.size();
  return report;
}

Result<ExportReport> ExportKernelIndexFile(Store& store, const std::string& path, const ExportOptions& opts, Env* env) {
  ExportReport report;
  report.file = path;
  KI_ASSIGN_OR_RETURN(std::string text, ExportText(store, opts, &report));
  report.compressed = EndsWith(path, ".zst");
  if (report.compressed) {
    KI_ASSIGN_OR_RETURN(text, Compress(text, opts.zstd_level));
  }
  // A scratch file beside FILE, renamed over it once synced: a failure at
  // any point leaves FILE as it was (the scratch file is removed).
  if (env == nullptr) env = &EnvOf(store);
  KI_ASSIGN_OR_RETURN(auto file, env->NewAtomicFile(path));
  KI_RETURN_IF_ERROR(file->Append(text));
  KI_RETURN_IF_ERROR(file->Commit(Durability::kSync));
  KI_RETURN_IF_ERROR(env->SyncDir(DirOf(path)));
  report.bytes = text.size();
  return report;
}

}  // namespace ki::catalog
