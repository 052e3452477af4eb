// ki export kernelindex, the library half: the line writer, and round trips
// of the 72-line slice of the real export (tests/cli/export_kernelindex.sh
// takes the whole export through the command).
#include <set>
#include <sstream>

#include "json/fields.h"
#include "ki/catalog.h"
#include "ki/export.h"
#include "testutil/fault_env.h"
#include "testutil/testutil.h"

namespace ki::catalog {
namespace {

using test::DataPath;
using test::TempDir;

const char* kSlice = "kernelindex-export/catalog-2026-08-16-0022af0b.slice.jsonl";

std::unique_ptr<Store> NewStore(const std::string& dir) {
  RegisterGroupIndex();
  auto s = Store::Init(dir);
  EXPECT_TRUE(s.ok()) << test::StatusText(s);
  return std::move(s).value();
}

// Every object of a store but its import objects (which name the file
// imported and its digest: an export's import differs from the original's).
std::set<std::string> Objects(Store& s) {
  std::set<std::string> out;
  EXPECT_OK(s.ForEachObject([&](const ObjectInfo& i) {
    if (i.media_type != kImportMediaType) out.insert(i.digest.str());
    return true;
  }));
  return out;
}

std::string ExportToString(Store& s, const ExportOptions& opts = {}) {
  std::string text;
  auto r = ExportKernelIndex(s, opts, [&](std::string_view piece) {
    text.append(piece);
    return Status::OK();
  });
  EXPECT_TRUE(r.ok()) << test::StatusText(r);
  return text;
}

void ImportClean(Store& s, const std::string& text) {
  auto r = ImportKernelIndex(s, text, "export");
  ASSERT_OK(r);
  for (const auto& m : r->mismatches) ADD_FAILURE() << m.table << " " << m.row_id << " " << m.field << " " << m.stored << " " << m.computed;
  for (const auto& m : r->malformed) ADD_FAILURE() << m.message;
  EXPECT_TRUE(r->stored);
}

TEST(ExportLine, FieldsInOrderValuesCompactRawVerbatim) {
  ExportLine row("benchmark_runs");
  row.Set("id", "a\"b").Set("zeta", 1).Set("alpha", nullptr).SetRaw("manifest", R"({"run":{"k":1}})");
  row.Set("v", 0.1).Set("list", Json::array({1, "x"}));
  std::string out = "before\n";
  ASSERT_OK(row.AppendTo(&out));
  EXPECT_EQ(out, "before\n{\"table\":\"benchmark_runs\",\"row\":{\"id\":\"a\\\"b\",\"zeta\":1,\"alpha\":null,"
                 "\"manifest\":{\"run\":{\"k\":1}},\"v\":0.1,\"list\":[1,\"x\"]}}\n");
}

TEST(ExportLine, ARawValueOfSeveralLinesIsRefusedAndNothingAppended) {
  ExportLine row("projects");
  row.Set("id", "x").SetRaw("manifest", "{\n}");
  std::string out = "kept";
  Status st = row.AppendTo(&out);
  EXPECT_TRUE(st.IsInvalidInput()) << st.ToString();
  EXPECT_EQ(out, "kept");
  ExportLine bad("projects");
  bad.Set("name", std::string("\xff\xfe"));
  EXPECT_TRUE(bad.AppendTo(&out).IsInvalidInput());
  EXPECT_EQ(out, "kept");
}

// Slice -> A -> export -> B: every object but the import objects equal,
// and B's export is A's byte for byte (nothing is lost or made up on the
// way back).
TEST(ExportKernelIndex, SliceRoundTripsWithEveryObjectEqual) {
  TempDir dir;
  auto a = NewStore(dir.Join("a"));
  ImportClean(*a, test::ReadFileOrDie(DataPath(kSlice)));
  const std::string text = ExportToString(*a);
  auto b = NewStore(dir.Join("b"));
  ImportClean(*b, text);
  EXPECT_EQ(Objects(*a), Objects(*b));
  EXPECT_EQ(ExportToString(*b), text);
  // Every run row and its facts went out; the slice's 8 + 1 runs.
  std::istringstream in(text);
  std::map<std::string, int> tables;
  for (std::string line; std::getline(in, line);) tables[Json::parse(line)["table"]]++;
  EXPECT_EQ(tables["benchmark_runs"], 8);
  EXPECT_EQ(tables["serving_runs"], 1);
  EXPECT_EQ(tables["record_events"], 7);
  EXPECT_EQ(tables["artifacts"], 6);
  EXPECT_EQ(tables.count("operation_aliases"), 0u);  // not kept by an import
  EXPECT_EQ(tables["sources"], 4);
}

// The import filed every source under "" (the row was moved out before its
// id was read), so no facts object had its source and no export could give
// the sources back.
TEST(CatalogImport, FactsObjectsCarryTheirRunsSource) {
  TempDir dir;
  auto a = NewStore(dir.Join("a"));
  ImportClean(*a, test::ReadFileOrDie(DataPath(kSlice)));
  int with_source = 0, facts = 0;
  ASSERT_OK(a->ForEachObject([&](const ObjectInfo& i) {
    if (i.media_type != kFactsMediaType) return true;
    ++facts;
    auto bytes = a->Read(i.digest);
    EXPECT_TRUE(bytes.ok());
    auto f = ParseFactsObject(*bytes, i.digest.str());
    EXPECT_TRUE(f.ok());
    if (f->source.is_object() && f->source.value("id", "") == StringOr(f->row, "sourceId")) ++with_source;
    return true;
  }));
  EXPECT_EQ(facts, 9);
  EXPECT_EQ(with_source, 9);
}

TEST(ExportKernelIndex, ZstdFileReadsBackAsThePlainText) {
  TempDir dir;
  auto a = NewStore(dir.Join("a"));
  ImportClean(*a, test::ReadFileOrDie(DataPath(kSlice)));
  auto plain = ExportKernelIndexFile(*a, dir.Join("x.jsonl"), {});
  ASSERT_OK(plain);
  auto packed = ExportKernelIndexFile(*a, dir.Join("x.jsonl.zst"), {});
  ASSERT_OK(packed);
  EXPECT_FALSE(plain->compressed);
  EXPECT_TRUE(packed->compressed);
  EXPECT_LT(packed->bytes, plain->bytes);
  EXPECT_EQ(packed->content, plain->content);
  auto read = ReadExport(dir.Join("x.jsonl.zst"));
  ASSERT_OK(read);
  EXPECT_EQ(*read, test::ReadFileOrDie(dir.Join("x.jsonl")));
  EXPECT_EQ(Sha256Of(*read), plain->content);
}

// A failed write leaves FILE as it was (absent, or its old bytes) and no
// scratch file beside it.
TEST(ExportKernelIndex, AFailedWriteLeavesNoPartialFile) {
  TempDir dir;
  auto a = NewStore(dir.Join("a"));
  ImportClean(*a, test::ReadFileOrDie(DataPath(kSlice)));
  test::FaultInjectionEnv env;
  for (auto fault : {test::FaultInjectionEnv::CommitFault::kFsync, test::FaultInjectionEnv::CommitFault::kRename}) {
    env.FailCommits(fault);
    auto r = ExportKernelIndexFile(*a, dir.Join("new.jsonl"), {}, &env);
    EXPECT_TRUE(r.status().IsIOError()) << test::StatusText(r);
    EXPECT_FALSE(Env::Default()->Exists(dir.Join("new.jsonl")));
    test::WriteFileOrDie(dir.Join("old.jsonl"), "old\n");
    r = ExportKernelIndexFile(*a, dir.Join("old.jsonl"), {}, &env);
    EXPECT_FALSE(r.ok());
    EXPECT_EQ(test::ReadFileOrDie(dir.Join("old.jsonl")), "old\n");
  }
  env.FailCommits(test::FaultInjectionEnv::CommitFault::kNone);
  env.SetWriteBudget(1000);  // a full disk part-way through
  auto r = ExportKernelIndexFile(*a, dir.Join("new.jsonl"), {}, &env);
  EXPECT_TRUE(r.status().IsIOError()) << test::StatusText(r);
  EXPECT_FALSE(Env::Default()->Exists(dir.Join("new.jsonl")));
  auto names = Env::Default()->ListDir(dir.path());
  ASSERT_OK(names);
  for (const auto& n : *names) EXPECT_EQ(n.find(".tmp-"), std::string::npos) << n;
}

// With no Env named, the export writes through the Env the store was opened
// with, so a fault-injection Env given to the store reaches FILE too.
TEST(ExportKernelIndex, WritesThroughTheStoresEnv) {
  TempDir dir;
  RegisterGroupIndex();
  test::FaultInjectionEnv env;
  StoreOptions o;
  o.env = &env;
  auto s = Store::Init(dir.Join("a"), o);
  ASSERT_OK(s);
  auto& a = *s;
  ImportClean(*a, test::ReadFileOrDie(DataPath(kSlice)));
  env.FailCommits(test::FaultInjectionEnv::CommitFault::kFsync);
  auto r = ExportKernelIndexFile(*a, dir.Join("x.jsonl"), {});
  EXPECT_TRUE(r.status().IsIOError()) << test::StatusText(r);
  EXPECT_FALSE(Env::Default()->Exists(dir.Join("x.jsonl")));
  env.FailCommits(test::FaultInjectionEnv::CommitFault::kNone);
  ASSERT_OK(ExportKernelIndexFile(*a, dir.Join("x.jsonl"), {}));
  EXPECT_TRUE(Env::Default()->Exists(dir.Join("x.jsonl")));
}

// Runs stored without catalog facts (ki add, ki run) go out as published
// records: id = the digest's hex, publishedAt = observedAt, reported, not
// verified, no replications; imported back they rank as they did.
TEST(ExportKernelIndex, RunsWithoutFactsGetAPublishedRecordsDefaults) {
  TempDir dir;
  auto a = NewStore(dir.Join("a"));
  // The slice's manifests without its facts: every row's manifest(s) added.
  {
    auto batch = a->NewBatch();
    ASSERT_OK(batch);
    std::istringstream in(test::ReadFileOrDie(DataPath(kSlice)));
    for (std::string line; std::getline(in, line);) {
      Json j = Json::parse(line);
      if (!j["row"].contains("manifest")) continue;
      std::vector<Json> docs;
      if (j["table"] == "benchmark_runs") {
        for (const char* p : {"protocol", "environment", "run"}) docs.push_back(j["row"]["manifest"][p]);
      } else {
        docs.push_back(j["row"]["manifest"]);
      }
      for (const Json& doc : docs) {
        auto m = ManifestFromJson(doc, "slice");
        ASSERT_OK(m);
        ASSERT_OK((*batch)->PutManifest(*m, doc.dump(), kDocumentMediaTypeJson));
      }
    }
    ASSERT_OK((*batch)->Commit());
  }
  auto report = ExportKernelIndex(*a, {}, [](std::string_view) { return Status::OK(); });
  ASSERT_OK(report);
  EXPECT_EQ(report->runs_without_facts, 9u);
  const std::string text = ExportToString(*a);
  std::istringstream in(text);
  int runs = 0;
  for (std::string line; std::getline(in, line);) {
    Json j = Json::parse(line);
    if (j["table"] != "benchmark_runs") continue;
    ++runs;
    const Json& row = j["row"];
    EXPECT_EQ("sha256:" + row["id"].get<std::string>(), row["runDigest"]);
    EXPECT_EQ(row["publishedAt"], row["observedAt"]);
    EXPECT_EQ(row["reported"], true);
    EXPECT_EQ(row["reproducedByKernelindex"], false);
    EXPECT_EQ(row["independentReplicationCount"], 0);
    EXPECT_TRUE(row["retractedAt"].is_null());
    EXPECT_TRUE(row["sourceId"].is_null());
  }
  EXPECT_EQ(runs, 8);
  auto b = NewStore(dir.Join("b"));
  ImportClean(*b, text);
  auto groups_a = ListGroups(*a, {});
  auto groups_b = ListGroups(*b, {});
  ASSERT_OK(groups_a);
  ASSERT_OK(groups_b);
  ASSERT_EQ(groups_a->size(), groups_b->size());
  for (size_t i = 0; i < groups_a->size(); ++i) {
    EXPECT_EQ((*groups_a)[i].cohort, (*groups_b)[i].cohort);
    EXPECT_EQ((*groups_a)[i].ranked, (*groups_b)[i].ranked);
    if ((*groups_a)[i].kind != "kernel") continue;
    auto ra = RankCohort(*a, (*groups_a)[i].cohort);
    auto rb = RankCohort(*b, (*groups_a)[i].cohort);
    ASSERT_OK(ra);
    ASSERT_OK(rb);
    ASSERT_EQ(ra->ranked.size(), rb->ranked.size());
    for (size_t k = 0; k < ra->ranked.size(); ++k) {
      EXPECT_EQ(ra->ranked[k].run, rb->ranked[k].run);
      EXPECT_EQ(ra->ranked[k].id, rb->ranked[k].id);
      EXPECT_EQ(ra->ranked[k].rank, rb->ranked[k].rank);
      EXPECT_EQ(ra->ranked[k].evidence, rb->ranked[k].evidence);
    }
  }
}

TEST(ExportKernelIndex, RefsChooseRunsAndGroupsAndRefuseTheRest) {
  TempDir dir;
  auto a = NewStore(dir.Join("a"));
  ImportClean(*a, test::ReadFileOrDie(DataPath(kSlice)));
  auto groups = ListGroups(*a, {});
  ASSERT_OK(groups);
  ASSERT_FALSE(groups->empty());
  const GroupSummary& g = groups->front();
  ExportOptions by_group;
  by_group.refs = {g.cohort.hex().substr(0, 12)};
  auto r = ExportKernelIndex(*a, by_group, [](std::string_view) { return Status::OK(); });
  ASSERT_OK(r);
  EXPECT_EQ(r->runs + r->serving_runs, g.runs);
  auto members = GroupMembers(*a, g.cohort);
  ASSERT_OK(members);
  ExportOptions by_run;
  by_run.refs = {members->front().run.str()};
  r = ExportKernelIndex(*a, by_run, [](std::string_view) { return Status::OK(); });
  ASSERT_OK(r);
  EXPECT_EQ(r->runs + r->serving_runs, 1u);

  ExportOptions not_a_run;
  auto m = a->ReadManifest(members->front().run);
  ASSERT_OK(m);
  not_a_run.refs = {StringOr(m->spec, "workloadDigest")};
  r = ExportKernelIndex(*a, not_a_run, [](std::string_view) { return Status::OK(); });
  EXPECT_TRUE(r.status().IsInvalidInput()) << test::StatusText(r);
  EXPECT_NE(r.status().message().find("names a " + std::string(g.kind == "kernel" ? "WorkloadCase" : "ServingWorkload")),
            std::string::npos)
      << r.status().message();
  EXPECT_NE(r.status().message().find("not a run or a comparison group"), std::string::npos) << r.status().message();
  ExportOptions nothing;
  nothing.refs = {"sha256:" + std::string(64, 'f')};
  r = ExportKernelIndex(*a, nothing, [](std::string_view) { return Status::OK(); });
  EXPECT_TRUE(r.status().IsNotFound()) << test::StatusText(r);
}

// A run whose WorkloadCase is not held has no comparison key here: its row
// could not be imported, so the export refuses it rather than write it.
TEST(ExportKernelIndex, ARunWithoutItsWorkloadIsRefusedByName) {
  TempDir dir;
  auto a = NewStore(dir.Join("a"));
  std::istringstream in(test::ReadFileOrDie(DataPath(kSlice)));
  Json bundle;
  for (std::string line; std::getline(in, line);) {
    Json j = Json::parse(line);
    if (j["table"] == "benchmark_runs") {
      bundle = j["row"]["manifest"];
      break;
    }
  }
  auto batch = a->NewBatch();
  ASSERT_OK(batch);
  for (const char* p : {"protocol", "environment", "run"}) {
    auto m = ManifestFromJson(bundle[p], "slice");
    ASSERT_OK(m);
    ASSERT_OK((*batch)->PutManifest(*m, bundle[p].dump(), kDocumentMediaTypeJson));
  }
  ASSERT_OK((*batch)->Commit());
  std::string text;
  auto r = ExportKernelIndexFile(*a, dir.Join("x.jsonl"), {});
  EXPECT_TRUE(r.status().IsNotFound()) << test::StatusText(r);
  EXPECT_NE(r.status().message().find("lacks its WorkloadCase " + bundle["run"]["spec"]["workloadDigest"].get<std::string>()),
            std::string::npos)
      << r.status().message();
  EXPECT_FALSE(Env::Default()->Exists(dir.Join("x.jsonl")));
}

}  // namespace
}  // namespace ki::catalog
