// What the report shows, gathered from the store before any page is
// rendered: the comparison groups with their rankings and records, the
// runs with the place each holds in its group, the operations and the
// groups of each. Internal to report.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <set>
#include <unordered_set>
#include <string>
#include <vector>

#include "ki/catalog.h"
#include "ki/evidence.h"
#include "ki/store.h"

namespace ki::report {

struct GroupView {
  catalog::GroupSummary summary;
  std::optional<catalog::Ranking> ranking;         // kernel groups
  std::vector<catalog::RankEntry> members;         // serving groups (not ranked)
  std::optional<catalog::RecordHistory> records;   // kernel groups
  Json axes;                                       // the workload's spec.axes (object) or null
  std::string page;                                // "group/<hex>.html"
};

struct RunPlace {
  const GroupView* group = nullptr;           // nullptr: in no comparison group
  const catalog::RankEntry* entry = nullptr;  // its entry there (ranked, ineligible or member)
  Kind kind = Kind::kBenchmarkRun;
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
  std::unordered_set<std::string> pages;            // every page the site holds
  std::set<Digest> disputed;                        // runs a trusted key disputes (ApplyAttestedEvidence)

  bool Has(const std::string& page) const { return pages.count(page) > 0; }
};

std::string GroupPage(const Digest& cohort);
std::string RunPage(const Digest& run);
std::string OperationPage(std::string_view operation_digest);  // "sha256:…"
std::string SettingPage(Kind kind, const Digest& d);  // a protocol's or environment's page

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
