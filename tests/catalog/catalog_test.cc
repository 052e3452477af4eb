// The catalog module on the 72-line slice of the real KernelIndex export:
// every stored digest and key recomputes, import is atomic and idempotent,
// ranking-v1 and record history, JSON Patch.
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zstd.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <sstream>
#include <stdexcept>

#include "catalog/tables.h"
#include "ki/catalog.h"
#include "ki/ingest.h"
#include "ki/store.h"
#include "testutil/fault_env.h"
#include "testutil/testutil.h"

namespace ki::catalog {
namespace {

using test::DataPath;
using test::TempDir;

const char* kSlice = "kernelindex-export/catalog-2026-08-16-0022af0b.slice.jsonl";

std::vector<Json> SliceRows(const std::string& table) {
  std::vector<Json> out;
  std::istringstream in(test::ReadFileOrDie(DataPath(kSlice)));
  for (std::string line; std::getline(in, line);) {
    Json j = Json::parse(line);
    if (j["table"] == table) out.push_back(j["row"]);
  }
  return out;
}

std::unique_ptr<Store> NewStore(const TempDir& dir) {
  RegisterGroupIndex();
  auto s = Store::Init(dir.path());
  EXPECT_TRUE(s.ok()) << test::StatusText(s);
  return std::move(s).value();
}

std::unique_ptr<Store> Reopen(const TempDir& dir) {
  auto s = Store::Open(dir.path() + "/.ki", OpenMode::kReadWrite);
  EXPECT_TRUE(s.ok()) << test::StatusText(s);
  return std::move(s).value();
}

std::string Digest_(const Json& manifest) {
  auto m = ManifestFromJson(manifest, "test");
  EXPECT_TRUE(m.ok()) << test::StatusText(m);
  return m.ok() ? m->digest.str() : "";
}

// Each digest and key of the slice, recomputed by the public functions.
TEST(CatalogKeys, EverySliceDigestAndKeyRecomputes) {
  std::map<std::string, Json> workloads, models, serving_workloads;
  int checked = 0;
  for (auto& [table, field] : std::vector<std::pair<std::string, std::string>>{
           {"operations", "semanticDigest"},          {"workloads", "workloadDigest"},
           {"implementations", "implementationDigest"}, {"model_revisions", "modelDigest"},
           {"serving_stack_revisions", "stackDigest"},  {"serving_configurations", "configurationDigest"},
           {"serving_workloads", "workloadDigest"},     {"serving_runs", "runDigest"}}) {
    auto rows = SliceRows(table);
    EXPECT_FALSE(rows.empty()) << table;
    for (const Json& r : rows) {
      EXPECT_EQ(Digest_(r["manifest"]), r[field].get<std::string>()) << table << " " << r["id"];
      ++checked;
      if (table == "workloads") workloads[r[field]] = r["manifest"]["spec"];
      if (table == "model_revisions") models[r[field]] = r["manifest"]["spec"];
      if (table == "serving_workloads") serving_workloads[r[field]] = r["manifest"]["spec"];
    }
  }
  auto runs = SliceRows("benchmark_runs");
  ASSERT_EQ(runs.size(), 8u);
  for (const Json& r : runs) {
    const Json& b = r["manifest"];
    std::string protocol = Digest_(b["protocol"]), environment = Digest_(b["environment"]);
    EXPECT_EQ(Digest_(b["run"]), r["runDigest"]);
    EXPECT_EQ(protocol, r["protocolKey"]);
    EXPECT_EQ(environment, r["environmentKey"]);
    const Json& spec = b["run"]["spec"];
    const Json& wl = workloads.at(spec["workloadDigest"]);
    auto corr = CorrectnessKey(wl);
    ASSERT_OK(corr);
    EXPECT_EQ(corr->str(), r["correctnessKey"]);
    auto key = ComparisonKey({wl["operationSpecDigest"], spec["workloadDigest"], protocol, environment, corr->str(),
                              MetricKey(spec)});
    ASSERT_OK(key);
    EXPECT_EQ(key->str(), r["comparisonKey"]) << r["id"] << " metric " << MetricKey(spec);
    checked += 6;
  }
  auto sruns = SliceRows("serving_runs");
  ASSERT_EQ(sruns.size(), 1u);
  for (const Json& r : sruns) {
    const Json& spec = r["manifest"]["spec"];
    const Json& model = models.at(spec["modelDigest"]);
    std::string protocol = ServingProtocolKey(spec, serving_workloads.at(spec["workloadDigest"]));
    EXPECT_EQ(protocol, r["protocolKey"]);
    EXPECT_EQ(MetricSetKey(spec), r["metricSetKey"]);
    std::optional<std::string> tok;
    if (model.contains("tokenizer")) tok = model["tokenizer"]["name"];
    auto key = ServingCohortKey({spec["modelDigest"], tok, spec["workloadDigest"], protocol, ServingTopologyKey(spec),
                                 spec["qualityPolicy"], MetricSetKey(spec)});
    ASSERT_OK(key);
    EXPECT_EQ(key->str(), r["cohortKey"]);
    checked += 3;
  }
  EXPECT_GT(checked, 40);
}

TEST(CatalogKeys, MetricKeyForms) {
  EXPECT_EQ(MetricKey(Json::parse(R"({"timing":{"primaryStatistic":"mean"}})")), "latency:mean:ns");
  EXPECT_EQ(MetricKey(Json::parse(R"({"measurements":[{"metric":"score","statistic":"geomean","unit":"s"}]})")),
            "score:geomean:s");
  EXPECT_EQ(MetricKey(Json::parse(R"({"status":"runtime_error"})")), "none");
}

TEST(CatalogImport, SliceImportsWithEveryKeyRecomputed) {
  TempDir dir;
  auto store = NewStore(dir);
  std::string text = test::ReadFileOrDie(DataPath(kSlice));
  auto r = ImportKernelIndex(*store, text, "slice");
  ASSERT_OK(r);
  for (const auto& m : r->mismatches) ADD_FAILURE() << m.table << " " << m.row_id << " " << m.field << " " << m.stored << " " << m.computed;
  EXPECT_TRUE(r->stored);
  EXPECT_EQ(r->lines, 72u);
  EXPECT_EQ(r->rows["benchmark_runs"], 8u);
  EXPECT_EQ(r->rows["record_events"], 7u);
  EXPECT_EQ(r->kinds["BenchmarkRun"].added, 8u);
  EXPECT_EQ(r->kinds["OperationSpec"].added, 6u);
  EXPECT_EQ(r->kinds["ServingRun"].added, 1u);
  EXPECT_EQ(r->absent.added, 6u);
  // The slice holds every event's run but not every previous run.
  EXPECT_EQ(r->record_events_reproduced + r->record_events_unchecked, 7u);
  EXPECT_GE(r->record_events_reproduced, 3u);
  EXPECT_GE(r->keys_checked, 8u * 7 + 6 + 5 + 7 + 5);

  // Names are set from the documents; absent artifacts are known.
  auto run = store->Resolve("BenchmarkRun/" + SliceRows("benchmark_runs")[0]["manifest"]["run"]["metadata"]["name"].get<std::string>());
  ASSERT_OK(run);
  EXPECT_EQ(run->str(), SliceRows("benchmark_runs")[0]["runDigest"]);
  auto art = Digest::Parse(SliceRows("artifacts")[0]["contentDigest"].get<std::string>());
  ASSERT_OK(art);
  auto absent = store->StatAbsent(*art);
  ASSERT_OK(absent);
  EXPECT_TRUE(absent->has_value());

  // Twice: nothing new.
  auto again = ImportKernelIndex(*store, text, "slice");
  ASSERT_OK(again);
  EXPECT_TRUE(again->mismatches.empty());
  for (const auto& [kind, c] : again->kinds) EXPECT_EQ(c.added, 0u) << kind;
  EXPECT_EQ(again->absent.added, 0u);

  auto audit = store->Audit();
  ASSERT_OK(audit);
  EXPECT_FALSE(audit->HasFaults());
}

TEST(CatalogImport, MismatchStoresNothingUnlessKeepGoing) {
  std::string text = test::ReadFileOrDie(DataPath(kSlice));
  std::string stored = SliceRows("benchmark_runs")[0]["comparisonKey"];
  std::string forged = "sha256:" + std::string(64, '0');
  size_t at = text.find(stored);
  ASSERT_NE(at, std::string::npos);
  text.replace(at, stored.size(), forged);
  {
    TempDir dir;
    auto store = NewStore(dir);
    auto r = ImportKernelIndex(*store, text, "forged");
    ASSERT_OK(r);
    ASSERT_EQ(r->mismatches.size(), 1u);
    EXPECT_EQ(r->mismatches[0].table, "benchmark_runs");
    EXPECT_EQ(r->mismatches[0].row_id, SliceRows("benchmark_runs")[0]["id"]);
    EXPECT_EQ(r->mismatches[0].field, "comparisonKey");
    EXPECT_EQ(r->mismatches[0].stored, forged);
    EXPECT_EQ(r->mismatches[0].computed, stored);
    EXPECT_FALSE(r->stored);
    store.reset();
    auto reopened = Reopen(dir);
    int objects = 0;
    ASSERT_OK(reopened->ForEachObject([&](const ObjectInfo&) { return ++objects, true; }));
    EXPECT_EQ(objects, 0);
    auto has = HasCatalog(*reopened);
    ASSERT_OK(has);
    EXPECT_FALSE(*has);
  }
  {
    TempDir dir;
    auto store = NewStore(dir);
    ImportOptions opts;
    opts.keep_going = true;
    auto r = ImportKernelIndex(*store, text, "forged", opts);
    ASSERT_OK(r);
    EXPECT_EQ(r->mismatches.size(), 1u);
    EXPECT_TRUE(r->stored);
    // ki indexes the run under the key it computed, not the forged one.
    auto run = Digest::Parse(SliceRows("benchmark_runs")[0]["runDigest"].get<std::string>());
    auto cohort = CohortOfRun(*store, *run);
    ASSERT_OK(cohort);
    ASSERT_TRUE(cohort->has_value());
    EXPECT_EQ((*cohort)->str(), stored);
  }
}

TEST(CatalogImport, ThreadCountsAgree) {
  std::string text = test::ReadFileOrDie(DataPath(kSlice));
  std::string a, b;
  for (int threads : {1, 3}) {
    TempDir dir;
    auto store = NewStore(dir);
    ImportOptions opts;
    opts.threads = threads;
    auto r = ImportKernelIndex(*store, text, "slice", opts);
    ASSERT_OK(r);
    Json counts = Json::object();
    for (auto& [k, c] : r->kinds) counts[k] = c.added;
    (threads == 1 ? a : b) = counts.dump() + std::to_string(r->keys_checked);
  }
  EXPECT_EQ(a, b);
}

// A line that is not an export row is malformed, named by file:line; it
// used to be reported as a key mismatch ("stored (unreadable)").
TEST(CatalogImport, BadLinesAreReportedWithTheirLine) {
  TempDir dir;
  auto store = NewStore(dir);
  auto r = ImportKernelIndex(*store, "{\"table\":\"sources\",\"row\":{\"id\":\"x\"}}\n{not json\n[1]\n", "bad.jsonl");
  ASSERT_OK(r);
  EXPECT_TRUE(r->mismatches.empty());
  ASSERT_EQ(r->malformed.size(), 2u);
  EXPECT_EQ(r->malformed[0].line, 2u);
  EXPECT_EQ(r->malformed[0].message.rfind("bad.jsonl:2:", 0), 0u) << r->malformed[0].message;
  EXPECT_EQ(r->malformed[1].line, 3u);
  EXPECT_EQ(r->malformed[1].message.rfind("bad.jsonl:3: expected", 0), 0u) << r->malformed[1].message;
  EXPECT_FALSE(r->stored);
}

// An exception while a worker reads a line is that line's, by its number:
// the rest of its chunk of 128 lines is read as usual. It used to drop the
// whole chunk under one entry without a line.
TEST(CatalogImport, WorkerExceptionKeepsItsLine) {
  std::string text;
  for (int i = 1; i <= 300; ++i) text += "{\"table\":\"sources\",\"row\":{\"id\":\"s" + std::to_string(i) + "\"}}\n";
  for (bool keep_going : {false, true}) {
    TempDir dir;
    auto store = NewStore(dir);
    ImportOptions opts;
    opts.threads = 2;
    opts.keep_going = keep_going;
    opts.before_line = [](uint64_t line) {
      if (line == 200) throw std::runtime_error("injected");
    };
    auto r = ImportKernelIndex(*store, text, "many.jsonl", opts);
    ASSERT_OK(r);
    EXPECT_TRUE(r->mismatches.empty());
    ASSERT_EQ(r->malformed.size(), 1u);
    EXPECT_EQ(r->malformed[0].line, 200u);
    EXPECT_EQ(r->malformed[0].message, "many.jsonl:200: injected");
    EXPECT_EQ(r->lines, 300u);
    EXPECT_EQ(r->rows["sources"], 299u);
    EXPECT_EQ(r->stored, keep_going);
  }
}

// catalog.imports records the malformed lines an import skipped
// (--keep-going); a summary written before that field existed still reads,
// its count unknown; a summary that is not one is Corruption naming its key.
TEST(CatalogImport, StoredSummaryCountsMalformedLinesAndOlderOnesRead) {
  TempDir dir;
  auto store = NewStore(dir);
  const std::string text = "{\"table\":\"sources\",\"row\":{\"id\":\"x\"}}\n{not json\n[1]\n";
  ImportOptions opts;
  opts.keep_going = true;
  auto r = ImportKernelIndex(*store, text, "bad.jsonl", opts);
  ASSERT_OK(r);
  ASSERT_TRUE(r->stored);
  auto imports = StoredImports(*store);
  ASSERT_OK(imports);
  ASSERT_EQ(imports->size(), 1u);
  const ImportSummary& s = (*imports)[0];
  EXPECT_EQ(s.source, "bad.jsonl");
  EXPECT_EQ(s.content, Sha256Of(text));
  EXPECT_EQ(s.lines, 3u);
  EXPECT_EQ(s.mismatches, 0u);
  ASSERT_TRUE(s.malformed.has_value());
  EXPECT_EQ(*s.malformed, 2u);

  // The summary is an import object: a blob that re-hashes, listed in the table.
  auto info = store->Stat(s.object);
  ASSERT_OK(info);
  ASSERT_TRUE(info->has_value());
  EXPECT_EQ((*info)->media_type, kImportMediaType);

  // A damaged summary in the table: Corruption naming its key.
  const Digest older = Sha256Of("an older export");
  for (const char* bad : {R"({"cohorts":3,"keysChecked":40,"lines":72,"malformed":"2","mismatches":1,"servingCohorts":0,"source":"x","content":"sha256:0000000000000000000000000000000000000000000000000000000000000000"})",
                          R"({"cohorts":3,"keysChecked":40,"lines":72,"mismatches":1,"servingCohorts":0,"source":"x"})",
                          "not json"}) {
    auto batch = store->NewBatch();
    ASSERT_OK(batch);
    ASSERT_OK((*batch)->Put(tables::kImports, older.raw(), bad));
    ASSERT_OK((*batch)->Commit());
    auto damaged = StoredImports(*store);
    ASSERT_FALSE(damaged.ok()) << bad;
    EXPECT_TRUE(damaged.status().IsCorruption());
    EXPECT_NE(damaged.status().message().find("catalog.imports entry " + older.str()), std::string::npos)
        << damaged.status().message();
  }
}

TEST(CatalogRead, ZstdAndPlainExportsReadTheSame) {
  TempDir dir;
  std::string text = test::ReadFileOrDie(DataPath(kSlice));
  std::string z(ZSTD_compressBound(text.size()), '\0');
  z.resize(ZSTD_compress(z.data(), z.size(), text.data(), text.size(), 3));
  test::WriteFileOrDie(dir.Join("x.jsonl.zst"), z);
  auto r = ReadExport(dir.Join("x.jsonl.zst"));
  ASSERT_OK(r);
  EXPECT_EQ(*r, text);
  auto p = ReadExport(DataPath(kSlice));
  ASSERT_OK(p);
  EXPECT_EQ(*p, text);
  test::WriteFileOrDie(dir.Join("t.zst"), z.substr(0, z.size() / 2));
  auto t = ReadExport(dir.Join("t.zst"));
  EXPECT_FALSE(t.ok());
  EXPECT_TRUE(t.status().IsInvalidInput());
  EXPECT_TRUE(ReadExport(dir.Join("none.jsonl")).status().IsNotFound());
}

// A 18-byte frame that declares 3 GiB of content: the read fails at once,
// with memory following the real data; it used to allocate and zero-fill
// the declared size before the decoder found the frame corrupt. Read in a
// child process, so that its peak RSS is this read's alone.
TEST(CatalogRead, DeclaredSizeIsNotTrustedBeyondTheInput) {
  TempDir dir;
  const uint64_t declared = 3ull << 30;
  std::string frame("\x28\xB5\x2F\xFD", 4);  // magic
  frame += '\xC0';                             // 8-byte content size, window descriptor follows
  frame += '\x00';                             // 1 KiB window
  for (int i = 0; i < 8; ++i) frame += char((declared >> (8 * i)) & 0xff);
  frame += std::string("\x0B\x00\x00", 3);     // last block, RLE, 1 byte
  frame += 'x';
  ASSERT_EQ(ZSTD_getFrameContentSize(frame.data(), frame.size()), declared);
  test::WriteFileOrDie(dir.Join("huge.jsonl.zst"), frame);

  pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    auto r = ReadExport(dir.Join("huge.jsonl.zst"));
    ::_exit(!r.ok() && r.status().IsInvalidInput() ? 0 : 1);
  }
  int status = 0;
  struct rusage ru{};
  ASSERT_EQ(::wait4(pid, &status, 0, &ru), pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "the corrupt frame is not reported as invalid input";
  EXPECT_LT(ru.ru_maxrss, 256 * 1024) << "peak RSS " << ru.ru_maxrss << " KiB: the declared size was allocated";
}

// A read error part-way through an export is an I/O error naming the file,
// not a truncated export parsed as if whole.
TEST(CatalogRead, ReadErrorIsReported) {
  TempDir dir;
  std::string text = test::ReadFileOrDie(DataPath(kSlice));
  ASSERT_GT(text.size(), 60000u);
  test::WriteFileOrDie(dir.Join("x.jsonl"), text);
  test::FaultInjectionEnv env;
  env.FailReads("x.jsonl", 40000);  // fails on the second read
  auto r = ReadExport(dir.Join("x.jsonl"), &env);
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(r.status().IsIOError()) << r.status().ToString();
  EXPECT_NE(r.status().message().find("x.jsonl"), std::string::npos) << r.status().message();
  env.FailReads("", 0);
  auto ok = ReadExport(dir.Join("x.jsonl"), &env);
  ASSERT_OK(ok);
  EXPECT_EQ(*ok, text);
}

// ---------------------------------------------------------------- ranking-v1

RankEntry E(std::string id, double v, std::optional<std::pair<double, double>> ci = std::nullopt,
            Evidence ev = Evidence::kReported, std::string obs = "2026-01-01T00:00:00.000Z") {
  RankEntry e;
  e.id = std::move(id);
  e.value = v;
  e.interval = ci;
  e.evidence = ev;
  e.observed_at = std::move(obs);
  e.status = "passed";
  e.published = true;
  return e;
}

std::string Order(const Ranking& r) {
  std::string s;
  for (const auto& e : r.ranked) s += (s.empty() ? "" : " ") + e.id + "=" + std::to_string(e.rank) + (e.tied_with_previous ? "t" : "");
  return s;
}

TEST(RankingV1, DenseRanksAndIntervalTies) {
  // b overlaps a; c overlaps b but not a: c starts a new chain.
  auto r = RankV1({E("a", 10, {{9, 11}}), E("b", 11.5, {{10.5, 12.5}}), E("c", 13, {{12, 14}}), E("d", 20, {{19, 21}})},
                  false);
  EXPECT_EQ(Order(r), "a=1 b=1t c=2 d=3");
  // Source-native cohorts tie on equal values only.
  r = RankV1({E("a", 10, {{9, 11}}), E("b", 11.5, {{10.5, 12.5}}), E("c", 10)}, true);
  EXPECT_EQ(Order(r), "a=1 c=1t b=2");
  // Without intervals, unequal values never tie.
  r = RankV1({E("a", 10), E("b", 10.5)}, false);
  EXPECT_EQ(Order(r), "a=1 b=2");
}

TEST(RankingV1, DisplayOrderInsideATie) {
  auto r = RankV1({E("x1", 10, std::nullopt, Evidence::kReported, "2026-05-01T00:00:00Z"),
                   E("x2", 10, std::nullopt, Evidence::kReproducible, "2026-01-01T00:00:00Z"),
                   E("x3", 10, std::nullopt, Evidence::kReported, "2026-06-01T00:00:00.500Z"),
                   E("x0", 10, std::nullopt, Evidence::kReported, "2026-05-01T00:00:00.000Z")},
                  false);
  // Evidence first, then newer observation, then id.
  EXPECT_EQ(Order(r), "x2=1 x3=1t x0=1t x1=1t");
}

TEST(RankingV1, IneligibleRunsAreListedApartWithReasons) {
  RankEntry failed = E("f", 1), unpublished = E("u", 2), retracted = E("r", 3), superseded = E("s", 4), none = E("n", 0);
  failed.status = "runtime_error";
  unpublished.published = false;
  retracted.retracted = true;
  superseded.superseded = true;
  none.value.reset();
  auto r = RankV1({failed, unpublished, retracted, superseded, none, E("ok", 5)}, false);
  EXPECT_EQ(Order(r), "ok=1");
  ASSERT_EQ(r.ineligible.size(), 5u);
  std::map<std::string, std::vector<std::string>> reasons;
  for (const auto& e : r.ineligible) reasons[e.id] = e.reasons;
  EXPECT_EQ(reasons["f"], std::vector<std::string>{"STATUS_RUNTIME_ERROR"});
  EXPECT_EQ(reasons["u"], std::vector<std::string>{"UNPUBLISHED"});
  EXPECT_EQ(reasons["r"], std::vector<std::string>{"RETRACTED"});
  EXPECT_EQ(reasons["s"], std::vector<std::string>{"SUPERSEDED"});
  EXPECT_EQ(reasons["n"], std::vector<std::string>{"MISSING_PRIMARY_METRIC"});
}

bool SameEntry(const RankEntry& a, const RankEntry& b) {
  return a.run == b.run && a.id == b.id && a.name == b.name && a.implementation == b.implementation &&
         a.value == b.value && a.unit == b.unit && a.interval == b.interval && a.evidence == b.evidence &&
         a.observed_at == b.observed_at && a.status == b.status && a.published == b.published &&
         a.retracted == b.retracted && a.superseded == b.superseded;
}

TEST(CatalogTables, StoredEntriesDecodeAsTheirJson) {
  // The tree-free decoder of ki rank / ki show must read every stored form
  // exactly as EntryFromJson does.
  Digest run = Sha256Of("run");
  RankEntry full = E("r1", 353000.5, {{352000, 354000.25}}, Evidence::kVerified, "2026-05-01T00:00:00Z");
  full.name = "gqa \"decode\" é";
  full.implementation = "impl";
  full.unit = "ns";
  full.retracted = true;
  RankEntry bare;
  bare.id = "r2";
  std::vector<std::string> stored = {
      tables::EntryToJson(full).dump(), tables::EntryToJson(bare).dump(),
      R"({"id":"r3","v":12,"ev":9,"ci":[1,2,3],"x":{"v":5,"id":"nested"},"pub":true})",
      R"({"id":"r4","v":1e300,"ci":[1,"a"],"ev":2,"sup":true,"unit":"s","st":"passed"})",
      R"({"id":"r5","ci":[[1],2],"obs":"2026-01-01T00:00:00Z","ev":4})",
      R"({"id":"r6","ci":[[5],1,2],"v":3,"v":[4],"ev":2.5})",
      R"({"id":"r7","ci":[1,2],"ci":5,"pub":true,"pub":false,"name":"a","name":"b"})",
      R"({"id":"r8","ci":{"a":1,"b":2},"v":null})",
  };
  for (const auto& v : stored) {
    RankEntry got;
    ASSERT_TRUE(tables::EntryFromStored(run, v, &got)) << v;
    RankEntry want = tables::EntryFromJson(run, Json::parse(v));
    EXPECT_TRUE(SameEntry(got, want)) << v;
  }
  RankEntry got;
  EXPECT_TRUE(tables::EntryFromStored(run, stored[0], &got));
  EXPECT_TRUE(SameEntry(got, [&] { RankEntry f = full; f.run = run; return f; }()));
  EXPECT_FALSE(tables::EntryFromStored(run, "", &got));
  EXPECT_FALSE(tables::EntryFromStored(run, "[1]", &got));
  EXPECT_FALSE(tables::EntryFromStored(run, R"({"id":"r9")", &got));
}

// catalog.runs values of store format 5 (EncodeRunValue) decode to the
// entry and its cohort and kind; a cut or padded one is refused.
TEST(CatalogTables, BinaryRunValuesDecodeToTheirEntry) {
  Digest run = Sha256Of("run"), cohort = Sha256Of("cohort");
  RankEntry full = E("r1", 353000.5, {{352000, 354000.25}}, Evidence::kVerified, "2026-05-01T00:00:00Z");
  full.run = run;
  full.name = "gqa \"decode\" é" + std::string(200, 'n');  // a length of two LEB128 bytes
  full.implementation = "impl";
  full.unit = "ns";
  full.retracted = true;
  full.superseded = true;
  RankEntry bare;
  bare.run = run;
  bare.id = "r2";
  for (bool kernel : {true, false}) {
    for (const RankEntry& want : {full, bare}) {
      const std::string v = tables::EncodeRunValue(want, cohort, kernel);
      RankEntry got;
      tables::RunEntryExtra x;
      ASSERT_TRUE(tables::EntryFromStored(run, v, &got, &x));
      EXPECT_TRUE(SameEntry(got, want)) << want.id;
      EXPECT_EQ(x.cohort.value_or(""), cohort.str());
      EXPECT_EQ(x.kind.value_or(""), kernel ? "kernel" : "serving");
      // Shorter than its JSON (the reason for it).
      Json j = tables::EntryToJson(want);
      j["cohort"] = cohort.str();
      j["kind"] = kernel ? "kernel" : "serving";
      EXPECT_LT(v.size(), j.dump().size());
      for (size_t cut = 0; cut < v.size(); ++cut) EXPECT_FALSE(tables::EntryFromStored(run, v.substr(0, cut), &got));
      EXPECT_FALSE(tables::EntryFromStored(run, v + "x", &got));
    }
  }
}

// ki audit's pass over the catalog tables: an imported slice is clean; a
// malformed entry is a fault naming its table and key; a run an entry names
// that the store lacks is a missing reference.
TEST(CatalogTables, CheckTablesFindsMalformedEntriesAndMissingRuns) {
  TempDir dir;
  auto store = NewStore(dir);
  auto r = ImportKernelIndex(*store, test::ReadFileOrDie(DataPath(kSlice)), "slice", ImportOptions{});
  ASSERT_OK(r);
  auto clean = CheckTables(*store);
  ASSERT_OK(clean);
  EXPECT_GT(clean->entries, 30u);  // runs, cohorts, ranks, events, facts of the slice
  EXPECT_TRUE(clean->faults.empty()) << clean->faults[0].what << ": " << clean->faults[0].detail;
  EXPECT_TRUE(clean->missing.empty()) << clean->missing[0].digest.str() << " " << clean->missing[0].via;

  // One member of catalog.cohort (format 3: members only, the entry is
  // catalog.runs'), copied with its catalog.runs entry under an object
  // number no held object has (format 15: a held run is named by its
  // number): a fault of both tables.
  std::string key, value, run_value;
  ASSERT_OK(store->Scan(tables::kCohortRuns, "", [&](std::string_view k, std::string_view v) {
    key = k;
    value = v;
    return false;
  }));
  ASSERT_EQ(key.size(), 36u);
  const Digest cohort = Digest::FromRaw(key.substr(0, 32));
  const std::string absent("\x00\xff\xff\xff", 4);
  {
    auto v = store->Get(tables::kRuns, key.substr(32));
    ASSERT_OK(v);
    ASSERT_TRUE(v->has_value());
    run_value = **v;
  }
  // Two catalog.runs entries of other cohorts, one whose cohort is not a
  // string and one whose kind is neither kernel nor serving (a repeated key:
  // the last one counts, as in a parsed document).
  std::vector<std::pair<std::string, std::string>> runs;
  // Written as the JSON of stores before format 5, which ki still reads.
  ASSERT_OK(store->Scan(tables::kRuns, "", [&](std::string_view k, std::string_view v) {
    RankEntry e;
    tables::RunEntryExtra x;
    EXPECT_TRUE(tables::EntryFromStored(Digest{}, v, &e, &x));
    Json j = tables::EntryToJson(e);
    j["cohort"] = x.cohort.value_or("");
    j["kind"] = x.kind.value_or("");
    if (j["cohort"] != cohort.str()) runs.emplace_back(k, j.dump());
    return runs.size() < 2;
  }));
  ASSERT_EQ(runs.size(), 2u);
  Json no_cohort = Json::parse(runs[0].second), bad_kind = Json::parse(runs[1].second);
  no_cohort["cohort"] = 5;
  std::string bad_kind_text = bad_kind.dump();
  bad_kind_text.insert(bad_kind_text.size() - 1, ",\"kind\":\"gpu\"");
  const Digest import_a = Sha256Of("export a"), import_b = Sha256Of("export b");
  {
    auto batch = store->NewBatch();
    ASSERT_OK(batch);
    ASSERT_OK((*batch)->Put(tables::kCohortRuns, tables::PairKey(cohort, absent), value));
    ASSERT_OK((*batch)->Put(tables::kRuns, absent, run_value));
    ASSERT_OK((*batch)->Put(tables::kRanks, std::string("\x01\x02\0", 3), "KIR1"));
    ASSERT_OK((*batch)->Put(tables::kCohorts, cohort.raw(), "{\"kind\":\"kernel\""));
    ASSERT_OK((*batch)->Put(tables::kRuns, runs[0].first, no_cohort.dump()));
    ASSERT_OK((*batch)->Put(tables::kRuns, runs[1].first, bad_kind_text));
    ASSERT_OK((*batch)->Put(tables::kImports, import_a.raw(), "not json"));
    ASSERT_OK((*batch)->Put(tables::kImports, import_b.raw(), "{\"source\":\"b.jsonl\"}"));
    ASSERT_OK((*batch)->Commit());
  }
  auto found = CheckTables(*store);
  ASSERT_OK(found);
  EXPECT_TRUE(found->missing.empty()) << found->missing[0].via;
  std::vector<std::string> faults;
  for (const auto& f : found->faults) {
    EXPECT_EQ(f.state, CheckState::kCorrupt);
    faults.push_back(f.what + ": " + f.detail);
  }
  std::sort(faults.begin(), faults.end());
  // catalog.runs entries of the damaged cohort are not faults: they ask
  // only that catalog.cohorts has an entry for it.
  // Every damaged import summary is a fault of its own.
  const std::string summary = " is not an import summary (docs/format.md, \"Catalog tables\")";
  std::vector<std::string> want = {
      "catalog.cohorts " + cohort.str() + ": value is not a JSON object",
      "catalog.imports: catalog.imports entry " + import_a.str() + summary,
      "catalog.imports: catalog.imports entry " + import_b.str() + summary,
      "catalog.cohort " + cohort.str() + " run #16777215: names object number #16777215, which no object the "
      "store holds has",
      "catalog.ranks 0x010200 (3 bytes): key is not a cohort digest (32 bytes)",
      "catalog.runs #16777215: names object number #16777215, which no object the store holds has",
      "catalog.runs " + tables::KeyText(tables::kRuns, runs[0].first) + ": `cohort` is not a digest",
      "catalog.runs " + tables::KeyText(tables::kRuns, runs[1].first) + ": `kind` is not \"kernel\" or \"serving\"",
  };
  std::sort(want.begin(), want.end());
  EXPECT_EQ(faults, want);
}

// catalog.events values are syntax-checked without Json::accept (check.cc):
// the walk must refuse what accept refuses and take what it takes.
TEST(CatalogTables, CheckTablesRowSyntaxAgreesWithJsonAccept) {
  TempDir dir;
  auto store = NewStore(dir);
  const std::vector<std::string> values = {
      R"({})", R"({"a":1})", R"({"a":[1,-2.5e+3,true,false,null,{"b":"\u00e9\n\"q\""}]})",
      "{\"a\":\"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\"}", R"( { "a" : [ ] } )",
      R"({"a":1,})", R"({"a":01})", R"({"a":1.})", R"({"a":"x)", R"({"a":"\x"})", R"({"a":tru})",
      R"({a:1})", R"({"a":1}x)", R"({"a":"\u12g4"})", "{\"a\":\"\xff\"}", "{\"a\":\"\xc3\"}",
      "{\"a\":\"\x01\"}", R"({"a":[1,]})", R"({"a":-})", R"({"a":1e})", R"([1])", ""};
  {
    auto batch = store->NewBatch();
    ASSERT_OK(batch);
    for (size_t i = 0; i < values.size(); ++i)
      ASSERT_OK((*batch)->Put(tables::kEvents, tables::PairKey(Sha256Of("c"), Sha256Of("r" + std::to_string(i))), values[i]));
    ASSERT_OK((*batch)->Commit());
  }
  auto found = CheckTables(*store);
  ASSERT_OK(found);
  std::set<std::string> faulty;
  for (const auto& f : found->faults) faulty.insert(f.what);
  for (size_t i = 0; i < values.size(); ++i) {
    const bool accepted = Json::accept(values[i]) && Json::parse(values[i]).is_object();
    EXPECT_EQ(faulty.count("catalog.events " + Sha256Of("c").str() + " run " + Sha256Of("r" + std::to_string(i)).str()),
              accepted ? 0u : 1u)
        << values[i];
  }
}

// The seed record (ki add) and the export rows of its comparison group
// (tests/data/run/seed-cohort.jsonl), stored in either order: the seed
// joins the group at rank 2, behind the FlashInfer baseline (18.1 us).
const char* kSeed = "kernelindex/fixtures/gpt-o3_cuda_5548d0.gqa_paged_decode_h32_kv4_d128_ps1.manifest.json";
const char* kSeedCohort = "run/seed-cohort.jsonl";
const char* kSeedRun = "sha256:215ac4f9a26728e69bfeb4";

Digest AddSeed(Store& store) {
  AddInput in;
  in.source = DataPath(kSeed);
  in.bytes = test::ReadFileOrDie(in.source);
  auto added = AddInputs(store, {in});
  EXPECT_TRUE(added.ok()) << test::StatusText(added);
  for (const auto& a : *added)
    if (a.kind == "BenchmarkRun") return a.digest;
  ADD_FAILURE() << "the seed has no run";
  return Digest{};
}

TEST(CatalogGroups, RunJoinsItsGroupInEitherOrder) {
  std::string rankings[2];
  for (int order = 0; order < 2; ++order) {
    TempDir dir;
    auto store = NewStore(dir);
    const std::string cohort_rows = test::ReadFileOrDie(DataPath(kSeedCohort));
    Digest seed;
    if (order == 0) {
      ASSERT_OK(ImportKernelIndex(*store, cohort_rows, "seed-cohort"));
      seed = AddSeed(*store);
    } else {
      seed = AddSeed(*store);
      // Its WorkloadCase is not held yet: it waits, saying what it lacks.
      auto missing = MissingForGroup(*store, seed);
      ASSERT_OK(missing);
      ASSERT_EQ(missing->size(), 1u);
      EXPECT_EQ((*missing)[0].first, "WorkloadCase");
      auto cohort = ResolveCohort(*store, seed.str());
      ASSERT_FALSE(cohort.ok());
      EXPECT_TRUE(cohort.status().IsNotFound());
      EXPECT_NE(cohort.status().message().find("lacks its WorkloadCase " + (*missing)[0].second), std::string::npos)
          << cohort.status().message();
      ASSERT_OK(ImportKernelIndex(*store, cohort_rows, "seed-cohort"));
    }
    EXPECT_EQ(seed.str().substr(0, 29), kSeedRun);
    auto cohort = ResolveCohort(*store, seed.str());
    ASSERT_OK(cohort);
    EXPECT_EQ(cohort->str().substr(0, 23), "sha256:2b2fc4c48f98b72d");
    auto r = RankCohort(*store, *cohort);
    ASSERT_OK(r);
    ASSERT_EQ(r->ranked.size(), 2u);
    EXPECT_EQ(r->ranked[0].run.str(), "sha256:02a189b787e72f5ffd387e6056e9de197925b534680084f0a1c614ef1a99ffc2");
    EXPECT_NEAR(*r->ranked[0].value, 18100, 100);
    EXPECT_EQ(r->ranked[1].run, seed);
    EXPECT_EQ(r->ranked[1].rank, 2);
    EXPECT_EQ(r->description.value("runs", 0), 2);
    auto s = StandingOfRun(*store, seed);
    ASSERT_OK(s);
    ASSERT_TRUE(s->has_value());
    EXPECT_EQ((*s)->rank, 2);
    EXPECT_EQ((*s)->of, 2u);
    // Importing again changes nothing: the seed keeps its place, counted once.
    ASSERT_OK(ImportKernelIndex(*store, cohort_rows, "seed-cohort"));
    auto again = RankCohort(*store, *cohort);
    ASSERT_OK(again);
    EXPECT_EQ(Order(*again), Order(*r));
    EXPECT_EQ(again->description.value("runs", 0), 2);
    rankings[order] = Order(*r) + " " + r->description.dump();
    auto audit = store->Audit();
    ASSERT_OK(audit);
    EXPECT_FALSE(audit->HasFaults()) << audit->faults[0].what << ": " << audit->faults[0].detail;
  }
  EXPECT_EQ(rankings[0], rankings[1]);
}

// Format 15 names a held run by its number; facts that arrive before their
// run (a pull of the facts first) are keyed by its digest, and the batch
// that stores the run keys them again by its number: the tables then hold
// what a rebuild from the objects gives (audit), and rank, records and the
// facts read as in a store that got everything at once.
TEST(CatalogGroups, FactsBeforeTheirRunsAreKeyedByNumberWhenTheRunsArrive) {
  TempDir whole_dir, split_dir;
  auto whole = NewStore(whole_dir);
  ASSERT_OK(ImportKernelIndex(*whole, test::ReadFileOrDie(DataPath(kSlice)), "slice"));
  auto split = NewStore(split_dir);
  std::vector<ObjectInfo> runs, others;
  ASSERT_OK(whole->ForEachObject([&](const ObjectInfo& info) {
    const bool run = info.kind && (*info.kind == Kind::kBenchmarkRun || *info.kind == Kind::kServingRun);
    (run ? runs : others).push_back(info);
    return true;
  }));
  ASSERT_GT(runs.size(), 5u);
  auto copy = [&](const std::vector<ObjectInfo>& infos) {
    auto batch = split->NewBatch();
    ASSERT_OK(batch);
    for (const ObjectInfo& info : infos) {
      if (info.type == ObjectType::kManifest) {
        auto m = whole->ReadManifest(info.digest);
        ASSERT_OK(m);
        ASSERT_OK((*batch)->PutManifest(*m, std::nullopt, "").status());
      } else {
        auto bytes = whole->Read(info.digest);
        ASSERT_OK(bytes);
        ASSERT_OK((*batch)->PutBlob(*bytes, info.media_type).status());
      }
    }
    ASSERT_OK((*batch)->Commit());
  };
  copy(others);  // the facts objects, without their runs
  size_t by_digest = 0;
  ASSERT_OK(split->Scan(tables::kFacts, "", [&](std::string_view k, std::string_view) {
    by_digest += k.size() == 36;
    return true;
  }));
  EXPECT_GT(by_digest, 5u);
  copy(runs);
  ASSERT_OK(split->Scan(tables::kFacts, "", [&](std::string_view k, std::string_view) {
    EXPECT_EQ(k.size(), 8u) << tables::KeyText(tables::kFacts, k);
    return true;
  }));
  auto audit = split->Audit();
  ASSERT_OK(audit);
  // (The documents were copied as blobs, unlinked: the name tables' faults
  // are this copy's, not the catalog's.)
  for (const auto& f : audit->faults)
    EXPECT_NE(f.what.rfind("catalog.", 0), 0u) << f.what << ": " << f.detail;
  std::vector<std::string> cohorts;
  ASSERT_OK(whole->Scan(tables::kCohorts, "", [&](std::string_view k, std::string_view) {
    cohorts.emplace_back(k);
    return true;
  }));
  for (const std::string& c : cohorts) {
    const Digest cohort = Digest::FromRaw(c);
    auto a = RankCohort(*whole, cohort), b = RankCohort(*split, cohort);
    ASSERT_EQ(a.ok(), b.ok());
    if (!a.ok()) continue;  // a serving cohort
    std::vector<std::string> ids_a, ids_b;
    for (const auto& e : a->ranked) ids_a.push_back(e.id + " " + std::to_string(e.rank) + " " + e.run.str());
    for (const auto& e : b->ranked) ids_b.push_back(e.id + " " + std::to_string(e.rank) + " " + e.run.str());
    EXPECT_EQ(ids_a, ids_b) << cohort.str();
    auto ra = Records(*whole, cohort), rb = Records(*split, cohort);
    ASSERT_OK(ra);
    ASSERT_OK(rb);
    EXPECT_EQ(ra->events.size(), rb->events.size());
    EXPECT_EQ(ra->not_reproduced.size(), rb->not_reproduced.size());
  }
  for (const ObjectInfo& run : runs) {
    auto fa = RunFacts(*whole, run.digest), fb = RunFacts(*split, run.digest);
    ASSERT_OK(fa);
    ASSERT_OK(fb);
    EXPECT_EQ(*fa, *fb) << run.digest.str();
  }
}

// Every catalog table is derived: audit compares each entry with what the
// objects give, and reindex rebuilds them.
TEST(CatalogGroups, AuditFindsEveryDamagedTableAndReindexRestoresIt) {
  TempDir dir;
  auto store = NewStore(dir);
  ASSERT_OK(ImportKernelIndex(*store, test::ReadFileOrDie(DataPath(kSlice)), "slice"));
  ASSERT_OK(ImportKernelIndex(*store, test::ReadFileOrDie(DataPath(kSeedCohort)), "seed-cohort"));
  AddSeed(*store);
  auto clean = store->Audit();
  ASSERT_OK(clean);
  ASSERT_FALSE(clean->HasFaults()) << clean->faults[0].what << ": " << clean->faults[0].detail;
  auto before = RankCohort(*store, *ResolveCohort(*store, "2b2fc4c48f98b72d"));
  ASSERT_OK(before);
  for (std::string_view table : {tables::kRuns, tables::kCohortRuns, tables::kCohorts, tables::kEvents,
                                 tables::kRanks, tables::kImports, tables::kFacts, tables::kIds}) {
    for (int damage = 0; damage < 3; ++damage) {  // deleted, changed, added
      std::string key, value;
      ASSERT_OK(store->Scan(table, "", [&](std::string_view k, std::string_view v) {
        key = k;
        value = v;
        return false;
      }));
      ASSERT_FALSE(key.empty()) << table;
      {
        auto batch = store->NewBatch();
        ASSERT_OK(batch);
        if (damage == 0) ASSERT_OK((*batch)->Delete(table, key));
        if (damage == 1) ASSERT_OK((*batch)->Put(table, key, value + " "));
        if (damage == 2) {
          // A key no object gives: another digest, or (a held object's
          // number, format 15) another number.
          std::string extra = key.size() >= 32 ? std::string(Sha256Of("extra").raw()) + key.substr(32) : key;
          if (key.size() < 32) extra[0] = char(extra[0] ^ 0x5a);
          ASSERT_OK((*batch)->Put(table, extra, value));
        }
        ASSERT_OK((*batch)->Commit());
      }
      auto found = store->Audit();
      ASSERT_OK(found);
      bool named = false;
      for (const auto& f : found->faults) named = named || f.what.rfind(std::string(table) + " ", 0) == 0;
      EXPECT_TRUE(named) << table << " damage " << damage;
      auto rebuilt = store->Reindex();
      ASSERT_OK(rebuilt);
      auto after = store->Audit();
      ASSERT_OK(after);
      EXPECT_FALSE(after->HasFaults()) << table << " damage " << damage << ": " << after->faults[0].what;
    }
  }
  auto after = RankCohort(*store, *ResolveCohort(*store, "2b2fc4c48f98b72d"));
  ASSERT_OK(after);
  EXPECT_EQ(Order(*after), Order(*before));
}

// StandingOfRun (ki show's rank line) of `run` equals what RankCohort of
// its cohort says.
void ExpectStandingAsRanked(Store& store, const Digest& run) {
  auto cohort = CohortOfRun(store, run);
  ASSERT_OK(cohort);
  ASSERT_TRUE(cohort->has_value());
  auto r = RankCohort(store, **cohort);
  ASSERT_OK(r);
  auto s = StandingOfRun(store, run);
  ASSERT_OK(s);
  ASSERT_TRUE(s->has_value());
  EXPECT_EQ((*s)->cohort, **cohort);
  EXPECT_EQ((*s)->of, r->ranked.size());
  int rank = 0;
  bool tied = false;
  std::vector<std::string> reasons;
  for (const auto& e : r->ranked)
    if (e.run == run) rank = e.rank, tied = e.tied_with_previous;
  for (const auto& e : r->ineligible)
    if (e.run == run) reasons = e.reasons;
  EXPECT_EQ((*s)->rank, rank) << run.str();
  EXPECT_EQ((*s)->tied_with_previous, tied) << run.str();
  EXPECT_EQ((*s)->ineligible, reasons) << run.str();
  ASSERT_EQ((*s)->first.has_value(), !r->ranked.empty());
  if (!r->ranked.empty()) {
    EXPECT_EQ((*s)->first->run, r->ranked[0].run);
    EXPECT_EQ((*s)->first->name, r->ranked[0].name);
    EXPECT_EQ((*s)->first->value, r->ranked[0].value);
  }
}

TEST(CatalogRanks, StandingOfEveryRunIsItsRankInItsCohort) {
  TempDir dir;
  auto store = NewStore(dir);
  ASSERT_OK(ImportKernelIndex(*store, test::ReadFileOrDie(DataPath(kSlice)), "slice"));
  std::vector<Digest> runs;
  for (const Json& r : SliceRows("benchmark_runs")) runs.push_back(*Digest::Parse(r["runDigest"].get<std::string>()));
  ASSERT_GT(runs.size(), 5u);
  // Read from catalog.ranks, which the import wrote for each kernel cohort.
  for (const auto& run : runs) {
    auto cohort = CohortOfRun(*store, run);
    ASSERT_OK(cohort);
    ASSERT_TRUE(cohort->has_value());
    auto stored = store->Get(tables::kRanks, (*cohort)->raw());
    ASSERT_OK(stored);
    ASSERT_TRUE(stored->has_value()) << run.str();
    tables::RankRecord rec;
    tables::ObjectParts<Store> parts(*store);
    ASSERT_TRUE(parts.numbered());
    auto part = parts.Of(run);
    ASSERT_OK(part);
    ASSERT_EQ(part->size(), 4u);
    ASSERT_TRUE(tables::FindInRanking(**stored, *part, &rec));
    EXPECT_TRUE(rec.found) << run.str();
    ExpectStandingAsRanked(*store, run);
  }
  // Without catalog.ranks (a store imported before it existed) or with a
  // damaged value, the answer is the same, computed by ranking the cohort.
  for (std::string damage : {"", "KIR1 short"}) {
    auto batch = store->NewBatch();
    ASSERT_OK(batch);
    for (const auto& run : runs) {
      auto cohort = CohortOfRun(*store, run);
      ASSERT_OK(cohort);
      if (damage.empty()) ASSERT_OK((*batch)->Delete(tables::kRanks, (*cohort)->raw()));
      else ASSERT_OK((*batch)->Put(tables::kRanks, (*cohort)->raw(), damage));
    }
    ASSERT_OK((*batch)->Commit());
    for (const auto& run : runs) ExpectStandingAsRanked(*store, run);
  }
  // Not a catalog run: no standing.
  auto none = StandingOfRun(*store, Sha256Of("not a run"));
  ASSERT_OK(none);
  EXPECT_FALSE(none->has_value());
}

TEST(CatalogRanks, SliceCohortsRankAndRecordsMatchTheExport) {
  TempDir dir;
  auto store = NewStore(dir);
  ASSERT_OK(ImportKernelIndex(*store, test::ReadFileOrDie(DataPath(kSlice)), "slice"));
  // The SOL-ExecBench cohort: three suite runs, means 6326 / 6134 / 5642 ns,
  // source-native, three record events.
  std::string sol;
  for (const Json& r : SliceRows("benchmark_runs"))
    if (r["comparisonKey"].get<std::string>().rfind("sha256:ae5aacaf", 0) == 0) sol = r["comparisonKey"];
  ASSERT_FALSE(sol.empty());
  auto cohort = ResolveCohort(*store, "ae5aacaf");
  ASSERT_OK(cohort);
  EXPECT_EQ(cohort->str(), sol);
  auto ranking = RankCohort(*store, *cohort);
  ASSERT_OK(ranking);
  EXPECT_TRUE(ranking->source_native);
  ASSERT_EQ(ranking->ranked.size(), 3u);
  EXPECT_EQ(*ranking->ranked[0].value, 5642);
  EXPECT_EQ(ranking->ranked[2].rank, 3);
  auto history = Records(*store, *cohort);
  ASSERT_OK(history);
  EXPECT_TRUE(history->not_reproduced.empty());
  size_t exported = 0;
  for (const Json& ev : SliceRows("record_events")) exported += ev["comparisonKey"] == sol;
  EXPECT_EQ(exported, 3u);
  ASSERT_EQ(history->events.size(), 3u);
  for (const auto& e : history->events) EXPECT_TRUE(e.in_export) << e.run_id;
  // Every export event of the slice, through each cohort.
  for (const Json& ev : SliceRows("record_events")) {
    auto c = ResolveCohort(*store, ev["comparisonKey"].get<std::string>());
    ASSERT_OK(c);
    auto h = Records(*store, *c);
    ASSERT_OK(h);
    EXPECT_TRUE(h->not_reproduced.empty()) << ev.dump();
  }
  // A run REF resolves to its cohort; the runtime_error run is ineligible.
  for (const Json& r : SliceRows("benchmark_runs")) {
    if (r["status"] == "passed") continue;
    auto c = ResolveCohort(*store, r["runDigest"].get<std::string>());
    ASSERT_OK(c);
    auto rk = RankCohort(*store, *c);
    ASSERT_OK(rk);
    ASSERT_EQ(rk->ineligible.size(), 1u);
    EXPECT_EQ(rk->ineligible[0].reasons.front(), "STATUS_RUNTIME_ERROR");
  }
}

// ---------------------------------------------------------------- diff

TEST(CatalogDiff, PatchTurnsOneRealRunIntoAnother) {
  auto runs = SliceRows("benchmark_runs");
  for (size_t i = 0; i + 1 < runs.size(); ++i) {
    auto a = ManifestFromJson(runs[i]["manifest"]["run"], "a");
    auto b = ManifestFromJson(runs[i + 1]["manifest"]["run"], "b");
    ASSERT_OK(a);
    ASSERT_OK(b);
    Json ba = {{"apiVersion", kApiVersion}, {"kind", "BenchmarkRun"}, {"spec", a->spec}};
    Json bb = {{"apiVersion", kApiVersion}, {"kind", "BenchmarkRun"}, {"spec", b->spec}};
    Json patch = JsonPatch(ba, bb);
    EXPECT_FALSE(patch.empty());
    EXPECT_EQ(ba.patch(patch), bb) << patch.dump();
    EXPECT_TRUE(JsonPatch(ba, ba).empty());
    EXPECT_FALSE(FieldDiffs(ba, bb).empty());
  }
}

TEST(CatalogDiff, PointersAreEscapedAndArraysShrinkFromTheEnd) {
  Json a = Json::parse(R"({"a/b":1,"t~":[1,2,3,4],"gone":true})");
  Json b = Json::parse(R"({"a/b":2,"t~":[1,5],"new":null})");
  Json p = JsonPatch(a, b);
  EXPECT_EQ(a.patch(p), b);
  EXPECT_EQ(p.dump(),
            R"([{"op":"remove","path":"/gone"},{"op":"replace","path":"/a~1b","value":2},{"op":"add","path":"/new","value":null},{"op":"replace","path":"/t~0/1","value":5},{"op":"remove","path":"/t~0/3"},{"op":"remove","path":"/t~0/2"}])");
  auto f = FieldDiffs(a, b);
  ASSERT_EQ(f.size(), 4u);
  EXPECT_EQ(f[0].path, "a/b");
  EXPECT_EQ(f[1].path, "gone");
  EXPECT_FALSE(f[1].b.has_value());
}

}  // namespace
}  // namespace ki::catalog
