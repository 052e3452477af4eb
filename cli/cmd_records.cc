// ki records COHORT [--json]: the record history of a comparison group.
#include <iostream>
#include <map>

#include "command.h"
#include "ki/catalog.h"
#include "ki/human.h"

namespace ki::cli {
namespace {

std::string RecordValue(double v, const std::string& unit) {
  return human::Quantity(v, unit);
}

RunFn SetupRecords(CLI::App* sub, GlobalOptions* g) {
  auto ref = std::make_shared<std::string>();
  auto json = std::make_shared<bool>(false);
  sub->add_option("cohort", *ref, "a comparison key or prefix, or a run (its comparison group)")->required();
  sub->add_flag("--json", *json, "print the history as JSON");
  return [ref, json, g]() -> Result<int> {
    KI_ASSIGN_OR_RETURN(auto store, OpenStore(*g, OpenMode::kReadOnly));
    // Exit 1 here means "an export event is not reproduced". A damaged
    // catalog or index entry would be 1 by the common table, and a script
    // would take damage for a finding about the export: it is trouble,
    // exit 5, as for ki diff (docs/cli.md).
    auto damaged = [](const Status& s, const std::string& where) {
      return s.IsCorruption() ? Status::IOError(where + s.message() + " (the store is damaged)") : s;
    };
    auto resolved = catalog::ResolveCohort(*store, *ref);
    if (!resolved.ok()) return damaged(resolved.status(), "");
    const Digest cohort = *resolved;
    const std::string where = "comparison group " + cohort.str() + ": ";
    auto history = catalog::Records(*store, cohort);
    if (!history.ok()) return damaged(history.status(), where);
    auto ranking = catalog::RankCohort(*store, cohort);
    if (!ranking.ok()) return damaged(ranking.status(), where);
    auto stored_imports = catalog::StoredImports(*store);
    if (!stored_imports.ok()) return damaged(stored_imports.status(), "");
    const catalog::RecordHistory& h = *history;
    const catalog::Ranking& r = *ranking;
    // Imports that skipped malformed lines (--keep-going): a run on such a
    // line is missing from the history, and it cannot say which.
    std::vector<catalog::ImportSummary> incomplete;
    for (const auto& i : *stored_imports)
      if (i.malformed.value_or(0) > 0) incomplete.push_back(i);
    std::string unit = r.ranked.empty() ? "" : r.ranked[0].unit;
    std::map<Digest, std::string> names;
    for (const auto& e : r.ranked) names[e.run] = e.name;
    if (*json) {
      Json events = Json::array();
      for (const auto& e : h.events) {
        events.push_back({{"run", e.run.str()},
                          {"runId", e.run_id},
                          {"previous", e.previous ? Json(e.previous->str()) : Json(nullptr)},
                          {"previousRunId", e.previous ? Json(e.previous_id) : Json(nullptr)},
                          {"at", e.at},
                          {"value", e.value},
                          {"previousValue", e.previous_value ? Json(*e.previous_value) : Json(nullptr)},
                          {"policyVersion", catalog::kRankingPolicy},
                          {"inExport", e.in_export}});
      }
      Json skipped = Json::array();
      for (const auto& i : incomplete)
        skipped.push_back({{"source", i.source}, {"content", i.content.str()}, {"malformedLines", *i.malformed}});
      PrintJson({{"cohort", cohort.str()}, {"events", events}, {"notReproduced", h.not_reproduced},
                 {"unchecked", h.unchecked}, {"incompleteImports", skipped}});
      return h.not_reproduced.empty() ? 0 : 1;
    }
    std::string out = "Record history of " + cohort.str() + " (" + std::string(catalog::kRankingPolicy) + ")\n";
    for (const auto& i : incomplete) {
      out += "  note: the import of " + i.source + " (" + Short(i.content) + ") skipped " +
             std::to_string(*i.malformed) + " malformed line" + (*i.malformed == 1 ? "" : "s") +
             "; a run on such a line is missing here\n";
    }
    // One aligned row per event: when, the new best, its run, what it beat.
    human::Table events({{}, {"", human::Table::Align::kRight}, {}, {}});
    for (const auto& e : h.events) {
      events.AddRow({e.at, RecordValue(e.value, unit), Short(e.run) + " " + names[e.run],
                     e.previous ? "beat " + Short(*e.previous) + " " + names[*e.previous] + " (" +
                                      RecordValue(*e.previous_value, unit) + ")"
                                : "first record"});
    }
    out += events.Render();
    if (h.events.empty()) out += "  no eligible runs\n";
    for (const auto& x : h.not_reproduced) out += "  not reproduced: export event " + x.dump() + "\n";
    std::cout << out;
    // A published event ki cannot derive is a fault the user should see.
    return h.not_reproduced.empty() ? 0 : 1;
  };
}

KI_REGISTER_COMMAND(records, {"records", "Record history of a comparison group", SetupRecords, 71});

}  // namespace
}  // namespace ki::cli
