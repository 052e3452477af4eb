// Importing a KernelIndex catalog export (`ki import kernelindex`).
//
// Shape of the work: the export is split into lines; worker threads parse
// lines and build manifests (schema check, normalisation, canonical bytes,
// digest: the costly part), while the calling thread is the single writer
// that puts their results into one Batch in line order. A final pass checks
// what needs several rows (comparison keys need the run's workload, serving
// cohorts the model and workload, supersession and record events the whole
// run table) and writes the cohort index. One Batch means one LMDB commit:
// kill -9 at any point leaves the store as it was, and a rerun completes it.
#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <condition_variable>
#include <mutex>
#include <set>
#include <thread>
#include <unordered_map>
#include <unordered_set>

#include "catalog/rows.h"
#include "catalog/tables.h"
#include "catalog/time.h"
#include "json/dump.h"
#include "ki/catalog.h"

namespace ki::catalog {

namespace {

// Tables whose rows carry one manifest, and the column holding its digest.
struct ManifestTable {
  std::string_view table;
  std::string_view digest_field;  // empty: the export stores no digest
};
constexpr ManifestTable kManifestTables[] = {
    {"projects", ""},
    {"operations", "semanticDigest"},
    {"workloads", "workloadDigest"},
    {"implementations", "implementationDigest"},
    {"model_revisions", "modelDigest"},
    {"serving_stack_revisions", "stackDigest"},
    {"serving_configurations", "configurationDigest"},
    {"serving_workloads", "workloadDigest"},
    {"serving_runs", "runDigest"},
};

// A manifest to store, encoded (frames, digests, references) by the worker
// that built it; its document is the row's as exported, metadata included.
using PutItem = EncodedManifest;

// What a worker makes of one line.
struct LineResult {
  size_t line_no = 0;
  std::string table, id;
  std::vector<PutItem> puts;     // manifests to store
  std::vector<Digest> repeated;  // manifests this worker already produced (by digest)
  std::vector<Mismatch> mismatches;
  std::vector<MalformedLine> malformed;
  uint64_t keys_checked = 0;
  Json extract;  // what the cross-row pass needs (see ProcessLine)
};


// Per-worker cache of protocol and environment documents (thousands of runs
// share a handful). A hit is safe to skip: this worker's earlier lines are
// written before its later ones, so the manifest is stored by then.
using DocCache = std::unordered_map<std::string, Digest>;

class LineProcessor {
 public:
  LineProcessor(const Store& store, DocCache* cache, std::string_view source)
      : store_(store), cache_(cache), source_(source) {}

  // "<source>:<line>", as messages name a line.
  std::string Where(size_t line_no) const { return source_ + ":" + std::to_string(line_no); }

  // After an exception part-way through a line whose results are dropped:
  // the cache may name manifests that line encoded and nobody will store.
  void ForgetCache() { cache_->clear(); }

  void Process(std::string_view line, size_t line_no, LineResult* out) {
    out->line_no = line_no;
    std::string where = Where(line_no);
    ParseLimits limits;
    limits.max_bytes = 64 << 20;  // a row; each manifest inside is KernelIndex-capped
    limits.max_depth = 72;
    auto parsed = ParseDocument(line, DocFormat::kJson, where, limits);
    if (!parsed.ok()) {
      Fail(out, "(line)", parsed.status().message());
      return;
    }
    Json doc = std::move(parsed).value();
    if (!doc.is_object() || !doc.contains("table") || !doc["table"].is_string() || !doc.contains("row") ||
        !doc["row"].is_object()) {
      Fail(out, "(line)", where + ": expected {\"table\": ..., \"row\": {...}}");
      return;
    }
    out->table = doc["table"].get<std::string>();
    Json row = std::move(doc["row"]);
    out->id = Str(row, "id");
    if (out->table == "operation_aliases") out->id = Str(row, "operationId") + std::string(1, '\0') + Str(row, "alias");
    where += " (" + out->table + " " + out->id + ")";

    if (out->table == "benchmark_runs") {
      Run(row, where, out);
    } else {
      for (const auto& mt : kManifestTables) {
        if (mt.table != out->table) continue;
        Single(row, mt, where, out);
      }
    }
    if (out->table == "artifacts") {
      out->extract = {{"digest", Str(row, "contentDigest")}, {"mediaType", Field(row, "mediaType")},
                      {"size", Field(row, "sizeBytes")}, {"uri", Field(row, "uri")}};
    } else if (out->table == "record_events") {
      out->extract = row;
    } else if (out->table == "sources") {
      out->extract = Json::object();
      for (const char* f : {"id", "slug", "kind", "name"})
        if (row.contains(f) && !row[f].is_null()) out->extract[f] = row[f];
    }
  }

 private:
  // The line could not be read (as opposed to Check: read, but a stored
  // value did not recompute).
  static void Fail(LineResult* out, std::string field, std::string message) {
    out->malformed.push_back({out->line_no, out->table, out->id, std::move(field), std::move(message)});
  }

  void Check(LineResult* out, std::string_view field, const std::string& stored, const Digest& computed) {
    out->keys_checked++;
    if (stored != computed.str()) out->mismatches.push_back({out->table, out->id, std::string(field), stored, computed.str()});
  }

  // Builds one manifest; returns its digest, or nullopt after recording why
  // not. The manifest itself is kept in *keep when asked for (its spec),
  // and handed to the batch with it.
  std::optional<Digest> Build(Json&& doc, const std::string& where, std::string_view field, bool cacheable,
                              LineResult* out, std::shared_ptr<const Manifest>* keep = nullptr) {
    std::string text;
    text.reserve(4096);
    if (Status st = json_internal::AppendDump(doc, &text); !st.ok()) {
      Fail(out, std::string(field), where + " " + std::string(field) + ": " + st.message());
      return std::nullopt;
    }
    if (cacheable) {
      if (auto it = cache_->find(text); it != cache_->end()) {
        out->repeated.push_back(it->second);
        return it->second;
      }
    }
    auto m = ManifestFromJson(std::move(doc), where + " " + std::string(field));
    if (!m.ok()) {
      Fail(out, std::string(field), m.status().message());
      return std::nullopt;
    }
    Digest d = m->digest;
    out->puts.push_back(store_.EncodeManifest(*m, text, kDocumentMediaTypeJson));
    if (cacheable) cache_->emplace(std::move(text), d);
    if (keep) {
      // Handed to the batch too: the group index reads it as parsed here
      // (Batch::ViewManifest) instead of decoding and parsing it again.
      *keep = std::make_shared<const Manifest>(std::move(m).value());
      out->puts.back().parsed = *keep;
    }
    return d;
  }

  void Single(Json& row, const ManifestTable& mt, const std::string& where, LineResult* out) {
    if (!row.contains("manifest") || !row["manifest"].is_object()) {
      Fail(out, "manifest", where + ": the row has no manifest");
      return;
    }
    std::shared_ptr<const Manifest> kept;
    auto d = Build(std::move(row["manifest"]), where, "manifest", false, out, &kept);
    if (!d) return;
    if (!mt.digest_field.empty()) Check(out, mt.digest_field, Str(row, mt.digest_field), *d);
    const Manifest& m = *kept;
    const Json* spec = &m.spec;
    Json x = {{"digest", d->str()}, {"id", out->id}, {"name", m.name()}};
    if (out->table == "workloads") {
      x["op"] = Field(*spec, "operationSpecDigest");
      x["correctness"] = Field(*spec, "correctness");
    } else if (out->table == "implementations") {
      x["source"] = spec->contains("source");
    } else if (out->table == "model_revisions") {
      x["tokenizer"] = spec->contains("tokenizer") ? Field((*spec)["tokenizer"], "name") : Json(nullptr);
    } else if (out->table == "serving_workloads") {
      x["spec"] = {{"streaming", Field(*spec, "streaming")}, {"loadGeneration", Field(*spec, "loadGeneration")}};
    } else if (out->table == "serving_runs") {
      x["facts"] = tables::RunFactFields(row, false);
      x["spec"] = m.spec;  // a copy: the batch's group index reads the manifest too
      for (const char* f : {"protocolKey", "metricSetKey", "cohortKey", "publishedAt", "retractedAt", "supersedesId"})
        x[f] = Field(row, f);
    }
    out->extract = std::move(x);
  }

  void Run(Json& row, const std::string& where, LineResult* out) {
    if (!row.contains("manifest") || !row["manifest"].is_object()) {
      Fail(out, "manifest", where + ": the row has no manifest");
      return;
    }
    Json& bundle = row["manifest"];
    for (const char* part : {"run", "protocol", "environment"}) {
      if (!bundle.contains(part) || !bundle[part].is_object()) {
        Fail(out, std::string("manifest.") + part, where + ": the bundle has no " + part);
        return;
      }
    }
    auto protocol = Build(std::move(bundle["protocol"]), where, "manifest.protocol", true, out);
    auto environment = Build(std::move(bundle["environment"]), where, "manifest.environment", true, out);
    std::shared_ptr<const Manifest> kept;
    auto run = Build(std::move(bundle["run"]), where, "manifest.run", false, out, &kept);
    if (!protocol || !environment || !run) return;
    const Manifest& m = *kept;
    const Json* spec = &m.spec;
    Check(out, "runDigest", Str(row, "runDigest"), *run);
    Check(out, "protocolKey", Str(row, "protocolKey"), *protocol);
    Check(out, "environmentKey", Str(row, "environmentKey"), *environment);
    // The bundle rule: the run names its embedded protocol and environment.
    Check(out, "manifest.run.spec.protocolDigest", Str(*spec, "protocolDigest"), *protocol);
    Check(out, "manifest.run.spec.environmentDigest", Str(*spec, "environmentDigest"), *environment);

    Json x = {{"digest", run->str()},
              {"id", out->id},
              {"name", m.name()},
              {"protocol", protocol->str()},
              {"environment", environment->str()},
              {"workload", Field(*spec, "workloadDigest")},
              {"implementation", Field(*spec, "implementationDigest")},
              {"metric", MetricKey(*spec)},
              {"status", Field(*spec, "status")},
              {"observedAt", Field(*spec, "observedAt")},
              {"sourceNative", spec->contains("sourceNative")},
              {"evidence", spec->contains("evidence") && (*spec)["evidence"].is_object() && !(*spec)["evidence"].empty()}};
    // Primary value: the timing's primary statistic, else the first measurement.
    Json value = nullptr, unit = nullptr, ci = nullptr;
    if (auto t = spec->find("timing"); t != spec->end() && t->is_object()) {
      std::string stat = Str(*t, "primaryStatistic");
      const Json lat = Field(*t, "latencyNs");
      value = Field(lat, stat);
      unit = "ns";
      ci = Field(lat, "confidence95");
    } else if (auto ms = spec->find("measurements"); ms != spec->end() && ms->is_array() && !ms->empty()) {
      value = Field((*ms)[0], "value");
      unit = Field((*ms)[0], "unit");
    }
    x["value"] = value.is_number() ? value : Json(nullptr);
    x["unit"] = unit;
    x["ci"] = ci;
    for (const char* f : {"correctnessKey", "comparisonKey", "publishedAt", "retractedAt", "supersedesId",
                          "sourceAvailable", "hasRawEvidence", "reproducedByKernelindex",
                          "independentReplicationCount"}) {
      x[f] = Field(row, f);
    }
    x["facts"] = tables::RunFactFields(row, true);
    out->extract = std::move(x);
  }

  const Store& store_;
  DocCache* cache_;
  std::string source_;
};

std::vector<std::string_view> SplitLines(std::string_view text) {
  std::vector<std::string_view> lines;
  lines.reserve(text.size() / 1024 + 16);
  size_t pos = 0;
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    if (nl == std::string_view::npos) nl = text.size();
    std::string_view l = text.substr(pos, nl - pos);
    if (!l.empty() && l.back() == '\r') l.remove_suffix(1);
    lines.push_back(l);
    pos = nl + 1;
  }
  return lines;
}

bool IsBlank(std::string_view l) {
  return std::all_of(l.begin(), l.end(), [](char c) { return c == ' ' || c == '\t'; });
}

// The single writer and the cross-row pass.
class Importer {
 public:
  Importer(Store& store, const ImportOptions& opts, ImportReport* report)
      : store_(store), opts_(opts), report_(report) {}

  Status Begin() {
    // Workaround (see the report on src/index/lmdb.cc): while a write
    // transaction holds a table handle it opened itself, a read transaction
    // of the same process that opens that table gets the same handle slot,
    // and aborting the read closes it under the writer (MDB_BAD_DBI). So
    // every store table this import reads through the Store during the batch
    // is opened by a read first, before the batch begins.
    Digest none;
    KI_RETURN_IF_ERROR(store_.Stat(none).status());
    KI_RETURN_IF_ERROR(store_.StatAbsent(none).status());
    KI_RETURN_IF_ERROR(store_.Get("objects", none.raw()).status());
    KI_ASSIGN_OR_RETURN(batch_, store_.NewBatch());
    return Status::OK();
  }

  bool storing() const { return opts_.keep_going || (report_->mismatches.empty() && report_->malformed.empty()); }

  Status Write(LineResult& r) {
    report_->lines++;
    report_->keys_checked += r.keys_checked;
    for (auto& m : r.mismatches) report_->mismatches.push_back(std::move(m));
    // A line that could not be read is skipped whole (with --keep-going;
    // otherwise nothing is stored anyway).
    if (!r.malformed.empty()) {
      for (auto& m : r.malformed) report_->malformed.push_back(std::move(m));
      return Status::OK();
    }
    if (r.table.empty()) return Status::OK();
    report_->rows[r.table]++;
    for (auto& p : r.puts) {
      // Stored at the end, all at once (Batch::PutEncodedManifests writes
      // each table in key order: appends instead of page splits).
      if (storing()) {
        pending_.push_back(std::move(p));
        continue;
      }
      if (seen_.insert(p.digest).second) {
        KI_ASSIGN_OR_RETURN(auto info, store_.Stat(p.digest));
        Count(p.kind, info.has_value());
      }
    }
    Collect(r);
    if (r.table == "artifacts") KI_RETURN_IF_ERROR(Artifact(r.extract));
    return Status::OK();
  }

  Status Finish(const Digest& content, std::string_view source) {
    if (opts_.progress) opts_.progress({report_->lines, report_->lines, "indexing"});
    // The manifests go into the batch on this thread (the batch's), while
    // the cross-row pass computes beside it: it reads only this importer's
    // tables and the committed store, and touches no field of the report
    // that this thread does until the join.
    const bool bulk = storing();
    Status cross_status, put_status;
    std::vector<PutResult> put;
    // The facts objects are encoded on that thread too, after the pass (whose
    // mismatches decide whether anything is stored): it finishes well before
    // the manifests' writes do, and the writer then only puts their bytes.
    std::vector<std::string> facts_objects;
    std::thread cross([&] {
      try {
        cross_status = CheckCrossRows(store_, rows_, report_);
        if (cross_status.ok() && storing()) {
          auto encoded = EncodeFacts();
          if (encoded.ok()) facts_objects = std::move(encoded).value();
          else cross_status = encoded.status();
        }
      } catch (const std::exception& e) {  // a JSON type error: a bug
        cross_status = Status::InvalidInput(std::string("cross-row pass: ") + e.what());
      }
    });
    if (bulk) {
      auto r = batch_->PutEncodedManifests(pending_);
      if (r.ok()) put = std::move(r).value();
      else put_status = r.status();
    }
    cross.join();
    KI_RETURN_IF_ERROR(put_status);
    KI_RETURN_IF_ERROR(cross_status);
    for (size_t i = 0; i < pending_.size(); ++i) {
      if (!seen_.insert(pending_[i].digest).second) continue;
      bool existed;
      if (bulk) {
        existed = put[i].existed;
      } else {
        KI_ASSIGN_OR_RETURN(auto info, store_.Stat(pending_[i].digest));
        existed = info.has_value();
      }
      Count(pending_[i].kind, existed);
    }
    std::vector<EncodedManifest>().swap(pending_);
    if (!storing()) return Status::OK();
    // The export's facts as objects; the comparison groups are derived from
    // them and the manifests when the batch commits (groups.cc).
    KI_ASSIGN_OR_RETURN(Json facts, PutFacts(facts_objects));
    Json summary = {{"type", kImportType},
                    {"source", source},
                    {"content", content.str()},
                    {"lines", report_->lines},
                    {"keysChecked", report_->keys_checked},
                    {"mismatches", report_->mismatches.size()},
                    {"malformed", report_->malformed.size()},
                    {"cohorts", report_->cohorts},
                    {"servingCohorts", report_->serving_cohorts},
                    {"facts", std::move(facts)}};
    KI_ASSIGN_OR_RETURN(std::string import_object, Canonicalize(summary));
    KI_RETURN_IF_ERROR(batch_->PutBlob(import_object, kImportMediaType).status());
    KI_RETURN_IF_ERROR(batch_->Commit());
    report_->stored = true;
    return Status::OK();
  }

 private:
  // One facts object per run row: its facts, its record events and its
  // source, encoded (EncodeFactsObject), in run order. Reads rows_ only.
  Result<std::vector<std::string>> EncodeFacts() const {
    std::vector<std::string> out;
    out.reserve(rows_.runs.size() + rows_.serving_runs.size());
    std::unordered_map<std::string, std::vector<Json>> events_by_run;
    for (const Json& ev : rows_.events) events_by_run[Str(ev, "runId")].push_back(ev);
    for (const auto* list : {&rows_.runs, &rows_.serving_runs}) {
      const bool kernel = list == &rows_.runs;
      for (const Json& r : *list) {
        auto run = Digest::Parse(Str(r, "digest"));
        if (!run.ok() || !r.contains("facts")) continue;
        RunFactsObject f;
        f.subject = *run;
        f.table = kernel ? "benchmark_runs" : "serving_runs";
        f.row = r["facts"];
        if (auto it = events_by_run.find(Str(r, "id")); it != events_by_run.end()) f.events = it->second;
        if (auto it = rows_.sources.find(Str(f.row, "sourceId")); it != rows_.sources.end()) f.source = it->second;
        KI_ASSIGN_OR_RETURN(std::string bytes, EncodeFactsObject(f));
        out.push_back(std::move(bytes));
      }
    }
    return out;
  }

  // Stores the encoded facts objects; returns their digests, sorted (the
  // import object lists them).
  Result<Json> PutFacts(const std::vector<std::string>& objects) {
    std::vector<std::string> digests;
    digests.reserve(objects.size());
    for (const std::string& bytes : objects) {
      KI_ASSIGN_OR_RETURN(PutResult put, batch_->PutBlob(bytes, kFactsMediaType));
      digests.push_back(put.digest.str());
    }
    std::sort(digests.begin(), digests.end());
    digests.erase(std::unique(digests.begin(), digests.end()), digests.end());
    return Json(digests);
  }

  void Count(Kind k, bool existed) {
    auto& c = report_->kinds[std::string(KindName(k))];
    (existed ? c.existing : c.added)++;
  }

  void Collect(LineResult& r) {
    if (r.extract.is_null()) return;
    // (The key is taken before the move: in `m[k] = std::move(x)` the right
    // side is evaluated first.)
    std::string key = Str(r.extract, "digest");
    if (r.table == "workloads") {
      rows_.workloads[key] = std::move(r.extract);
    } else if (r.table == "implementations") {
      rows_.impls[key] = std::move(r.extract);
    } else if (r.table == "benchmark_runs") {
      rows_.runs.push_back(std::move(r.extract));
    } else if (r.table == "model_revisions") {
      rows_.models[key] = std::move(r.extract);
    } else if (r.table == "serving_workloads") {
      rows_.serving_workloads[key] = std::move(r.extract);
    } else if (r.table == "serving_runs") {
      rows_.serving_runs.push_back(std::move(r.extract));
    } else if (r.table == "record_events") {
      rows_.events.push_back(std::move(r.extract));
    } else if (r.table == "sources") {
      // Its id taken first, as `key` above: `rows_.sources[Str(r.extract,
      // "id")] = std::move(r.extract)` moved the row out before reading its
      // id, so every source was filed under "" and no facts object had its
      // source.
      std::string id = Str(r.extract, "id");
      rows_.sources[id] = std::move(r.extract);
    }
  }

  Status Artifact(const Json& a) {
    auto d = Digest::Parse(Str(a, "digest"));
    if (!d.ok()) {
      report_->mismatches.push_back({"artifacts", "", "contentDigest", Str(a, "digest"), "(not a sha256 digest)"});
      return Status::OK();
    }
    if (!absent_seen_.insert(*d).second) return Status::OK();
    KI_ASSIGN_OR_RETURN(auto info, store_.Stat(*d));
    if (info) return Status::OK();  // the bytes are here: nothing is missing
    KI_ASSIGN_OR_RETURN(auto known, store_.StatAbsent(*d));
    (known ? report_->absent.existing : report_->absent.added)++;
    if (!storing()) return Status::OK();
    AbsentInfo ai;
    ai.digest = *d;
    ai.media_type = Str(a, "mediaType");
    if (a.contains("size") && a["size"].is_number_unsigned()) ai.size = a["size"].get<uint64_t>();
    ai.uri = Str(a, "uri");
    return batch_->RecordAbsent(ai);
  }


  Store& store_;
  const ImportOptions& opts_;
  ImportReport* report_;
  std::unique_ptr<Batch> batch_;
  std::unordered_set<Digest> seen_, absent_seen_;
  ExportRows rows_;  // what the cross-row check reads (cross_rows.cc)
  std::vector<EncodedManifest> pending_;  // manifests, stored at the end
};

}  // namespace

Result<ImportReport> ImportKernelIndex(Store& store, std::string_view text, std::string_view source,
                                       const ImportOptions& opts) {
  RegisterGroupIndex();  // the groups are derived from what the import stores
  ImportReport report;
  report.source = std::string(source);
  report.content = Sha256Of(text);
  std::vector<std::string_view> lines = SplitLines(text);
  const uint64_t total = lines.size();
  if (opts.progress) opts.progress({0, total, "storing"});

  Importer importer(store, opts, &report);
  KI_RETURN_IF_ERROR(importer.Begin());

  // Workers fill chunks of lines; the writer (this thread) consumes them in
  // order. A window bounds how far workers run ahead (memory).
  constexpr size_t kChunk = 128;
  constexpr size_t kWindow = 32;
  const size_t nchunks = (lines.size() + kChunk - 1) / kChunk;
  std::vector<std::vector<LineResult>> results(nchunks);
  std::vector<char> ready(nchunks, 0);
  std::mutex mu;
  std::condition_variable cv_ready, cv_space;
  size_t next = 0, written = 0;
  bool stop = false;

  auto process_chunk = [&](size_t c, LineProcessor& proc) {
    std::vector<LineResult> out;
    size_t begin = c * kChunk, end = std::min(lines.size(), begin + kChunk);
    out.reserve(end - begin);
    for (size_t i = begin; i < end; ++i) {
      if (IsBlank(lines[i])) continue;
      out.emplace_back();
      try {
        if (opts.before_line) opts.before_line(i + 1);
        proc.Process(lines[i], i + 1, &out.back());
      } catch (const std::exception& e) {
        // A JSON type error the checks missed (a bug): this line is reported
        // as malformed with its place; the chunk's other lines stand.
        LineResult bad;
        bad.line_no = i + 1;
        bad.malformed.push_back({i + 1, "", "", "(exception)", proc.Where(i + 1) + ": " + e.what()});
        out.back() = std::move(bad);
        proc.ForgetCache();
      }
    }
    return out;
  };

  int nthreads = std::max(1, opts.threads);
  std::vector<std::thread> workers;
  std::vector<std::unique_ptr<DocCache>> caches;
  if (nchunks > 1 && nthreads > 0) {
    for (int t = 0; t < nthreads; ++t) {
      caches.push_back(std::make_unique<DocCache>());
      workers.emplace_back([&, cache = caches.back().get()] {
        LineProcessor proc(store, cache, source);
        for (;;) {
          size_t c;
          {
            std::unique_lock<std::mutex> lock(mu);
            cv_space.wait(lock, [&] { return stop || next < written + kWindow; });
            if (stop || next >= nchunks) return;
            c = next++;
          }
          std::vector<LineResult> out;
          try {
            out = process_chunk(c, proc);
          } catch (const std::exception& e) {
            // Out of memory outside any line (lines catch their own): the
            // chunk is reported by its range, so an escaping exception does
            // not end the process.
            const size_t first = c * kChunk + 1, last = std::min(lines.size(), (c + 1) * kChunk);
            out.clear();
            out.emplace_back();
            out.back().line_no = first;
            out.back().malformed.push_back({first, "", "", "(exception)",
                                            proc.Where(first) + "-" + std::to_string(last) + ": " + e.what()});
            proc.ForgetCache();
          }
          {
            std::lock_guard<std::mutex> lock(mu);
            results[c] = std::move(out);
            ready[c] = 1;
          }
          cv_ready.notify_all();
        }
      });
    }
  }
  auto join = [&] {
    {
      std::lock_guard<std::mutex> lock(mu);
      stop = true;
    }
    cv_space.notify_all();
    for (auto& w : workers) w.join();
    workers.clear();
  };

  Status st;
  DocCache inline_cache;
  LineProcessor inline_proc(store, &inline_cache, source);
  for (size_t c = 0; c < nchunks && st.ok(); ++c) {
    std::vector<LineResult> chunk;
    if (workers.empty()) {
      chunk = process_chunk(c, inline_proc);
    } else {
      std::unique_lock<std::mutex> lock(mu);
      cv_ready.wait(lock, [&] { return ready[c] != 0; });
      chunk = std::move(results[c]);
    }
    for (auto& r : chunk) {
      try {
        st = importer.Write(r);
      } catch (const std::exception& e) {  // a JSON type error: a bug, reported with where
        st = Status::InvalidInput(inline_proc.Where(r.line_no) + ": " + e.what());
      }
      if (!st.ok()) break;
    }
    {
      std::lock_guard<std::mutex> lock(mu);
      written = c + 1;
    }
    cv_space.notify_all();
    if (opts.progress && (c % 8 == 7 || c + 1 == nchunks)) {
      opts.progress({std::min<uint64_t>(total, (c + 1) * kChunk), total, "storing"});
    }
  }
  join();
  KI_RETURN_IF_ERROR(st);
  KI_RETURN_IF_ERROR(importer.Finish(report.content, source));
  return report;
}

}  // namespace ki::catalog
