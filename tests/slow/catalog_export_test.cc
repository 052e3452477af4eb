// The whole KernelIndex catalog export (40,795 lines): every digest and key
// recomputes, counts match, ranks agree with ranking-v1 computed from the
// export's own columns, and every record_events row is reproduced.
#include <map>
#include <sstream>

#include "ki/catalog.h"
#include "ki/store.h"
#include "testutil/testutil.h"

namespace ki::catalog {
namespace {

TEST(CatalogExport, WholeExportImportsAndAgrees) {
  test::TempDir dir;
  auto store_r = Store::Init(dir.path());
  ASSERT_OK(store_r);
  auto& store = *store_r;
  auto text = ReadExport(test::DataPath("kernelindex-export/catalog-2026-08-16-0022af0b.jsonl.zst"));
  ASSERT_OK(text);
  EXPECT_EQ(Sha256Of(*text).str(), "sha256:5f6532658c130ab48d0a1e7c2b68325023485c8fca0ebf9e355a179656c772f0");
  auto r = ImportKernelIndex(*store, *text, "export");
  ASSERT_OK(r);
  for (const auto& m : r->mismatches) ADD_FAILURE() << m.table << " " << m.row_id << " " << m.field;
  EXPECT_TRUE(r->stored);
  EXPECT_EQ(r->lines, 40795u);
  EXPECT_EQ(r->rows["benchmark_runs"], 7857u);
  EXPECT_EQ(r->rows["measurements"], 13853u);
  EXPECT_EQ(r->kinds["BenchmarkRun"].added, 7857u);
  EXPECT_EQ(r->kinds["WorkloadCase"].added + r->kinds["WorkloadSuite"].added, 5627u);
  EXPECT_EQ(r->kinds["ImplementationRevision"].added, 4250u);
  EXPECT_EQ(r->kinds["OperationSpec"].added, 449u);
  EXPECT_EQ(r->kinds["ServingRun"].added, 722u);
  EXPECT_EQ(r->absent.added, 3074u);
  EXPECT_EQ(r->record_events, 2948u);
  EXPECT_EQ(r->record_events_reproduced, 2948u);
  // Digests and keys: 9 per run (3 manifests, 3 keys + bundle links + 2 cross-row keys), ...
  EXPECT_GT(r->keys_checked, 7857u * 7 + 5627 + 4250 + 449 + 722 * 4);

  // Ranks from the export's own columns (primaryValue, uncertainty,
  // sourceNative, evidence facts) under RankV1 equal the store's ranks.
  std::map<std::string, std::vector<RankEntry>> cohorts;
  std::map<std::string, bool> source_native;
  std::istringstream in(*text);
  for (std::string line; std::getline(in, line);) {
    if (line.find("\"table\":\"benchmark_runs\"") == std::string::npos) continue;
    Json row = Json::parse(line)["row"];
    RankEntry e;
    e.run = *Digest::Parse(row["runDigest"].get<std::string>());
    e.id = row["id"];
    if (row["primaryValue"].is_number()) e.value = row["primaryValue"].get<double>();
    if (row["uncertaintyLow"].is_number() && row["uncertaintyHigh"].is_number())
      e.interval = std::make_pair(row["uncertaintyLow"].get<double>(), row["uncertaintyHigh"].get<double>());
    e.evidence = row["independentReplicationCount"].get<int>() >= 2 ? Evidence::kReplicated
                 : row["reproducedByKernelindex"].get<bool>()       ? Evidence::kVerified
                 : row["sourceAvailable"].get<bool>() && row["hasRawEvidence"].get<bool>() ? Evidence::kReproducible
                                                                                              : Evidence::kReported;
    e.observed_at = row["observedAt"];
    e.status = row["status"];
    e.published = row["publishedAt"].is_string();
    e.retracted = row["retractedAt"].is_string();
    std::string key = row["comparisonKey"];
    if (row["sourceNative"].get<bool>()) source_native[key] = true;
    cohorts[key].push_back(std::move(e));
  }
  EXPECT_EQ(cohorts.size(), r->cohorts);
  EXPECT_EQ(r->serving_cohorts, 341u);
  size_t compared = 0;
  for (auto& [key, runs] : cohorts) {
    Ranking want = RankV1(runs, source_native[key]);
    auto got = RankCohort(*store, *Digest::Parse(key));
    ASSERT_OK(got);
    ASSERT_EQ(got->ranked.size(), want.ranked.size()) << key;
    ASSERT_EQ(got->ineligible.size(), want.ineligible.size()) << key;
    for (size_t i = 0; i < want.ranked.size(); ++i) {
      EXPECT_EQ(got->ranked[i].run, want.ranked[i].run) << key << " #" << i;
      EXPECT_EQ(got->ranked[i].rank, want.ranked[i].rank) << key << " #" << i;
      // What ki show says (read from catalog.ranks) agrees too.
      auto s = StandingOfRun(*store, want.ranked[i].run);
      ASSERT_OK(s);
      ASSERT_TRUE(s->has_value()) << key;
      EXPECT_EQ((*s)->rank, want.ranked[i].rank) << key << " #" << i;
      EXPECT_EQ((*s)->tied_with_previous, want.ranked[i].tied_with_previous) << key << " #" << i;
      EXPECT_EQ((*s)->of, want.ranked.size()) << key;
      ASSERT_TRUE((*s)->first.has_value()) << key;
      EXPECT_EQ((*s)->first->run, want.ranked[0].run) << key;
      ++compared;
    }
    for (const auto& e : want.ineligible) {
      auto s = StandingOfRun(*store, e.run);
      ASSERT_OK(s);
      ASSERT_TRUE(s->has_value()) << key;
      EXPECT_EQ((*s)->rank, 0) << key;
      EXPECT_EQ((*s)->ineligible, e.reasons) << key;
    }
    auto h = Records(*store, *Digest::Parse(key));
    ASSERT_OK(h);
    EXPECT_TRUE(h->not_reproduced.empty()) << key;
    EXPECT_TRUE(h->unchecked.empty()) << key;
    for (const auto& ev : h->events) EXPECT_TRUE(ev.in_export) << key << " " << ev.run_id;
  }
  EXPECT_GT(compared, 7700u);

  // Idempotent.
  auto again = ImportKernelIndex(*store, *text, "export");
  ASSERT_OK(again);
  for (const auto& [kind, c] : again->kinds) EXPECT_EQ(c.added, 0u) << kind;
  EXPECT_EQ(again->absent.added, 0u);
}

}  // namespace
}  // namespace ki::catalog
