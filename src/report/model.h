// What the report shows, gathered from the store before any page is
// rendered: the comparison groups with their rankings and records, the
// runs with the place each holds in its group, the operations and the
// groups of each. Internal to report.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <unordered_set>
#include <string>
#include <vector>

#include "ki/catalog.h"
#include "ki/evidence.h"
#include "ki/stats.h"
#include "ki/store.h"

namespace ki::report {

struct SeriesView;

struct GroupView {
  catalog::GroupSummary summary;
  std::optional<catalog::Ranking> ranking;         // kernel groups
  std::vector<catalog::RankEntry> members;         // serving groups (not ranked)
  std::optional<catalog::RecordHistory> records;   // kernel groups
  std::string page;                                // "group/<hex>.html"
  std::vector<const SeriesView*> series;           // its series, most runs first
};

// A run's history: the runs of one implementation in one comparison group
// in time order, what `ki log GROUP --implementation X --regressions`
// lists (ranked and ineligible runs alike); where the store lacks a run's
// implementation, the runs of the same metadata.name. A series has a page
// when at least kMinSeriesRuns of its runs are timed.
inline constexpr size_t kMinSeriesRuns = 3;
struct SeriesView {
  const GroupView* group = nullptr;
  std::string label;               // the implementation's name, or the runs'
  bool by_implementation = false;  // label is an implementation's name
  std::vector<const catalog::RankEntry*> runs;   // observedAt order, then digest
  // Indexes into `runs` of the values the change points are found in: a
  // positive value in the unit of the first such run, at a readable time.
  std::vector<size_t> timed;
  std::string page;  // "series/<hex>.html"

  // The change points of the timed values (nullopt: none can be found),
  // found once per render by whichever page asks first (the bootstrap of
  // each change's interval is the costly part); safe from several threads.
  const std::optional<stats::Segmentation>& Changes() const;

 private:
  struct Memo {
    std::once_flag once;
    std::optional<stats::Segmentation> seg;
  };
  std::shared_ptr<Memo> memo_ = std::make_shared<Memo>();
};

// A re-run (`ki rerun`) of a run of the site: the verdict ki rerun stored.
struct RerunView {
  Digest original, rerun;
  std::optional<Json> verdict;  // run.verdicts; none for a re-run of another implementation
  std::string page;             // "rerun/<rerun hex>.html"
};

struct RunPlace {
  const GroupView* group = nullptr;           // nullptr: in no comparison group
  const catalog::RankEntry* entry = nullptr;  // its entry there (ranked, ineligible or member)
  Kind kind = Kind::kBenchmarkRun;
  const SeriesView* series = nullptr;         // the series it is in, when that has a page
  const RerunView* rerun_of = nullptr;        // this run re-ran another
  std::vector<const RerunView*> reruns;       // re-runs of this run
};

struct OperationView {
  std::string digest, name;
  std::vector<const GroupView*> groups;  // kernel groups of the operation, by key
  std::string page;                      // "op/<hex>.html"
};

// A protocol or an execution environment: the groups measured under it.
struct SettingView {
  Digest digest;
  Kind kind = Kind::kBenchmarkProtocol;
  std::vector<const GroupView*> groups;  // kernel groups, by key
  std::string page;                      // "protocol/<hex>.html", "env/<hex>.html"
};

struct Model {
  std::vector<GroupView> groups;                    // by group key
  std::map<Digest, RunPlace> runs;                  // every run with a page
  std::map<std::string, OperationView> operations;  // by operation digest
  std::map<Digest, SettingView> settings;           // protocols and environments of kernel groups
  std::vector<SeriesView> series;                   // by group, then implementation
  std::map<Digest, RerunView> reruns;               // by re-run: those whose re-run has a page
  std::unordered_set<std::string> pages;            // every page the site holds
  std::set<Digest> disputed;                        // runs a trusted key disputes (ApplyAttestedEvidence)

  bool Has(const std::string& page) const { return pages.count(page) > 0; }
};

std::string GroupPage(const Digest& cohort);
std::string RunPage(const Digest& run);
std::string OperationPage(std::string_view operation_digest);  // "sha256:…"
std::string SettingPage(Kind kind, const Digest& d);  // a protocol's or environment's page
std::string SeriesPage(const Digest& cohort, bool by_implementation, std::string_view label);
std::string RerunPage(const Digest& rerun);
// The outcome of a stored verdict as people read it: "reproduced", "not
// reproduced", "inconclusive"; "" when the verdict has none.
std::string OutcomeText(const std::optional<Json>& verdict);

// Everything, or the groups and runs `refs` name (a run brings its group,
// a group its runs), reading the groups on `threads` threads. `tick` is
// called once per group read, one call at a time.
Result<Model> Collect(Store& store, const std::vector<std::string>& refs, int threads,
                      const std::function<void(uint64_t, uint64_t)>& tick);

// Raises each ranked and ineligible entry's evidence to what `ki rank`
// shows (EvidenceEvaluator::ShownLevel: trusted runners' re-runs make a
// run verified or replicated) and notes the disputed runs, so a group page
// and `ki rank` agree.
Status ApplyAttestedEvidence(Store& store, const EvidenceEvaluator& evidence, Model* m);

// `<a href="ROOT+page">text_html</a>` when the site holds `page`, else the
// text alone: no link of the site points at a page it lacks.
std::string Link(const Model& m, const std::string& root, const std::string& page, const std::string& text_html,
                 const std::string& attrs = "");

}  // namespace ki::report
