// ki rank REF [--json]: a comparison group ranked under ranking-v1.
#include <algorithm>
#include <cstdio>
#include <iostream>
#include <map>
#include <optional>

#include "command.h"
#include "ki/catalog.h"
#include "ki/evidence.h"
#include "ki/human.h"

namespace ki::cli {
namespace {

std::string RankValue(const catalog::RankEntry& e) {
  if (!e.value) return "-";
  return human::Quantity(*e.value, e.unit);
}

std::string Interval(const catalog::RankEntry& e) {
  if (!e.interval) return "";
  return human::Quantity(e.interval->first, e.unit) + " – " + human::Quantity(e.interval->second, e.unit);
}

// flashinfer-bench's speedup factor of a run, when its record carries one:
// a ki run with --speedup (measurements), or an imported trace's
// (sourceNative.metrics). Shown beside the ranked value, never ranked on.
std::optional<double> SpeedupOf(Store& store, const Digest& run) {
  auto m = store.ReadManifest(run);
  if (!m.ok()) return std::nullopt;
  const Json& spec = m->spec;
  if (auto ms = spec.find("measurements"); ms != spec.end() && ms->is_array())
    for (const auto& x : *ms)
      if (x.is_object() && x.value("metric", "") == "speedup_factor" && x.contains("value") && x["value"].is_number())
        return x["value"].get<double>();
  const Json v = spec.value("/sourceNative/metrics/speedup_factor"_json_pointer, Json());
  if (v.is_number()) return v.get<double>();
  return std::nullopt;
}

std::string SpeedupText(const std::optional<double>& s) {
  if (!s) return "-";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2fx", *s);
  return buf;
}

// The level each run shows: EvidenceEvaluator::ShownLevel, for the runs
// that have attestations (the evaluator opens only when one does).
struct Attested {
  catalog::Evidence level;
  bool disputed = false;
};
Result<std::map<Digest, Attested>> AttestedEvidence(Store& store, const catalog::Ranking& r) {
  std::map<Digest, Attested> out;
  std::optional<EvidenceEvaluator> eval;
  for (const auto* list : {&r.ranked, &r.ineligible}) {
    for (const auto& e : *list) {
      KI_ASSIGN_OR_RETURN(auto atts, ListAttestations(store, e.run));
      if (atts.empty()) continue;
      if (!eval) {
        KI_ASSIGN_OR_RETURN(EvidenceEvaluator ev, EvidenceEvaluator::OpenDefault());
        eval.emplace(std::move(ev));
      }
      // EvidenceLevel counts from 0 (reported), catalog::Evidence from 1.
      const auto indexed = static_cast<EvidenceLevel>(static_cast<uint8_t>(e.evidence) - 1);
      KI_ASSIGN_OR_RETURN(auto shown, eval->ShownLevel(store, e.run, indexed));
      out[e.run] = {static_cast<catalog::Evidence>(static_cast<uint8_t>(shown.level) + 1), shown.disputed};
    }
  }
  return out;
}

std::string EvidenceText(const catalog::RankEntry& e, const std::map<Digest, Attested>& attested) {
  auto it = attested.find(e.run);
  if (it == attested.end()) return std::string(catalog::EvidenceName(e.evidence));
  return std::string(catalog::EvidenceName(it->second.level)) + (it->second.disputed ? ", disputed" : "");
}

Json RankEntryJson(const catalog::RankEntry& e, const std::map<Digest, Attested>& attested) {
  Json j = {{"run", e.run.str()},
            {"id", e.id},
            {"name", e.name.empty() ? Json(nullptr) : Json(e.name)},
            {"implementation", e.implementation.empty() ? Json(nullptr) : Json(e.implementation)},
            {"value", e.value ? Json(*e.value) : Json(nullptr)},
            {"unit", e.unit},
            {"interval", e.interval ? Json{e.interval->first, e.interval->second} : Json(nullptr)},
            {"evidence", attested.count(e.run) ? catalog::EvidenceName(attested.at(e.run).level)
                                               : catalog::EvidenceName(e.evidence)},
            {"disputed", attested.count(e.run) && attested.at(e.run).disputed},
            {"observedAt", e.observed_at},
            {"status", e.status}};
  if (e.rank > 0) {
    j["rank"] = e.rank;
    j["tiedWithPrevious"] = e.tied_with_previous;
  } else {
    j["reasons"] = e.reasons;
  }
  return j;
}

RunFn SetupRank(CLI::App* sub, GlobalOptions* g) {
  auto ref = std::make_shared<std::string>();
  auto json = std::make_shared<bool>(false);
  sub->add_option("ref", *ref, "a run (its comparison group), or a comparison key or prefix")->required();
  sub->add_flag("--json", *json, "print the ranking as JSON");
  return [ref, json, g]() -> Result<int> {
    KI_ASSIGN_OR_RETURN(auto store, OpenStore(*g, OpenMode::kReadOnly));
    KI_ASSIGN_OR_RETURN(Digest cohort, catalog::ResolveCohort(*store, *ref));
    // REF marks a run when it names one (not when it is the cohort key).
    std::optional<Digest> marked;
    if (auto d = store->Resolve(*ref); d.ok()) marked = *d;
    KI_ASSIGN_OR_RETURN(catalog::Ranking r, catalog::RankCohort(*store, cohort));
    KI_ASSIGN_OR_RETURN(auto attested, AttestedEvidence(*store, r));
    std::map<Digest, std::optional<double>> speedups;
    bool any_speedup = false;
    for (const auto& e : r.ranked) any_speedup |= (speedups[e.run] = SpeedupOf(*store, e.run)).has_value();
    // Imports that skipped malformed lines (--keep-going): a run on such a
    // line is missing here, and the ranking cannot say which.
    KI_ASSIGN_OR_RETURN(auto imports, catalog::StoredImports(*store));
    std::erase_if(imports, [](const catalog::ImportSummary& i) { return i.malformed.value_or(0) == 0; });
    if (*json) {
      Json ranked = Json::array(), inel = Json::array();
      for (const auto& e : r.ranked) {
        ranked.push_back(RankEntryJson(e, attested));
        ranked.back()["speedupFactor"] = speedups[e.run] ? Json(*speedups[e.run]) : Json(nullptr);
      }
      for (const auto& e : r.ineligible) inel.push_back(RankEntryJson(e, attested));
      Json out = {{"cohort", r.cohort.str()},
                  {"policy", catalog::kRankingPolicy},
                  {"profile", r.source_native ? "source_native" : "strict_exact"},
                  {"metric", r.metric},
                  {"parts", r.description},
                  {"ranked", ranked},
                  {"ineligible", inel},
                  {"ref", marked ? Json(marked->str()) : Json(nullptr)},
                  {"incompleteImports", Json::array()}};
      for (const auto& i : imports)
        out["incompleteImports"].push_back(
            {{"source", i.source}, {"content", i.content.str()}, {"malformedLines", *i.malformed}});
      PrintJson(out);
      return 0;
    }
    std::string out;
    out += "Comparison group " + r.cohort.str() + "\n";
    out += "  policy " + std::string(catalog::kRankingPolicy) + " · " +
           (r.source_native ? "source-native (ties on equal values only)" : "strict (overlapping 95% intervals tie)") +
           " · metric " + r.metric + "\n";
    for (const char* part : {"operation", "workload", "protocol", "environment", "correctness"}) {
      if (r.description.contains(part)) {
        std::string v = r.description[part].is_string() ? r.description[part].get<std::string>() : "";
        char line[256];
        std::snprintf(line, sizeof line, "  %-12s %s\n", part, v.c_str());
        out += line;
      }
    }
    out += "  " + std::to_string(r.ranked.size()) + " ranked, " + std::to_string(r.ineligible.size()) +
           " ineligible\n";
    for (const auto& i : imports) {
      out += "  note: the import of " + i.source + " (" + Short(i.content) + ") skipped " +
             std::to_string(*i.malformed) + " malformed line" + (*i.malformed == 1 ? "" : "s") +
             "; a run on such a line is missing here\n";
    }
    out += "\n";
    // Columns sized from their content and fitted to the terminal (the
    // run's name is cut first); the first column marks REF's run.
    using human::Table;
    Table table({{""},
                 {"rank", Table::Align::kRight},
                 {"value", Table::Align::kRight},
                 {"speedup", Table::Align::kRight},  // left out when no run has one
                 {"95% interval"},
                 {"evidence"},
                 {"observed"},
                 {"run", Table::Align::kLeft, true, 24}});
    for (const auto& e : r.ranked) {
      bool mark = marked && *marked == e.run;
      std::string rank = (e.tied_with_previous ? "=" : "") + std::to_string(e.rank);
      std::string who = Short(e.run) + " " + (e.name.empty() ? e.id : e.name);
      table.AddRow({mark ? ">" : " ", rank, RankValue(e), any_speedup ? SpeedupText(speedups[e.run]) : "", Interval(e),
                    EvidenceText(e, attested),
                    e.observed_at.substr(0, 10), who});
    }
    if (!table.empty()) out += table.Render(human::TerminalWidth(), "");
    if (!r.ineligible.empty()) {
      out += "\nIneligible\n";
      for (const auto& e : r.ineligible) {
        bool mark = marked && *marked == e.run;
        std::string reasons;
        for (const auto& x : e.reasons) reasons += (reasons.empty() ? "" : ",") + x;
        out += std::string(mark ? ">" : " ") + " " + Short(e.run) + " " + (e.name.empty() ? e.id : e.name) + "  " +
               reasons + "\n";
      }
    }
    std::cout << out;
    return 0;
  };
}

KI_REGISTER_COMMAND(rank, {"rank", "Rank a run's comparison group (ranking-v1)", SetupRank, 70});

}  // namespace
}  // namespace ki::cli
