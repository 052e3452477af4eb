// The "Rank" section of `ki show` for runs imported from a catalog.
#include <ostream>

#include "command.h"
#include "ki/catalog.h"

namespace ki::cli {
namespace {

std::string Val(const catalog::RankEntry& e) {
  if (!e.value) return "-";
  return e.unit == "ns" ? FormatNs(*e.value) : FormatJcsNumber(*e.value) + (e.unit.empty() ? "" : " " + e.unit);
}

// The run's ranking, or nullopt when the run is not in an imported catalog.
Result<std::optional<catalog::Ranking>> RankingOf(Store& store, const Digest& d, const Manifest& m) {
  if (m.kind != Kind::kBenchmarkRun) return std::optional<catalog::Ranking>();
  KI_ASSIGN_OR_RETURN(auto cohort, catalog::CohortOfRun(store, d));
  if (!cohort) return std::optional<catalog::Ranking>();
  KI_ASSIGN_OR_RETURN(auto r, catalog::RankCohort(store, *cohort));
  return std::optional<catalog::Ranking>(std::move(r));
}

Status Section(Store& store, const Digest& d, const Manifest& m, std::ostream& out) {
  KI_ASSIGN_OR_RETURN(auto r, RankingOf(store, d, m));
  if (!r) return Status::OK();
  out << "\nRank (" << catalog::kRankingPolicy << ")\n";
  const catalog::RankEntry* me = nullptr;
  for (const auto& e : r->ranked)
    if (e.run == d) me = &e;
  if (me) {
    out << "  Rank " << me->rank << " of " << r->ranked.size() << " in its comparison group"
        << (me->tied_with_previous ? " (tied)" : "") << "\n";
  } else {
    for (const auto& e : r->ineligible) {
      if (e.run != d) continue;
      std::string reasons;
      for (const auto& x : e.reasons) reasons += (reasons.empty() ? "" : ", ") + x;
      out << "  Not ranked in its comparison group of " << r->ranked.size() << " (" << reasons << ")\n";
    }
  }
  if (!r->ranked.empty()) {
    const auto& first = r->ranked.front();
    out << "  #1  " << Val(first) << "  " << first.run.str() << " " << first.name
        << (first.run == d ? " (this run)" : "") << "\n";
  }
  out << "  group " << r->cohort.str() << " (ki rank " << r->cohort.str().substr(7, 12) << ")\n";
  return Status::OK();
}

Status JsonField(Store& store, const Digest& d, const Manifest& m, Json& ki) {
  KI_ASSIGN_OR_RETURN(auto r, RankingOf(store, d, m));
  if (!r) return Status::OK();
  Json j = {{"policy", catalog::kRankingPolicy}, {"cohort", r->cohort.str()}, {"of", r->ranked.size()}};
  for (const auto& e : r->ranked) {
    if (e.run == d) {
      j["rank"] = e.rank;
      j["tiedWithPrevious"] = e.tied_with_previous;
    }
  }
  for (const auto& e : r->ineligible)
    if (e.run == d) j["ineligible"] = e.reasons;
  if (!r->ranked.empty()) {
    const auto& first = r->ranked.front();
    j["first"] = {{"run", first.run.str()}, {"name", first.name}, {"value", first.value ? Json(*first.value) : Json()}};
  }
  ki["rank"] = j;
  return Status::OK();
}

[[maybe_unused]] const int kSection = RegisterShowSection(50, Section);
[[maybe_unused]] const int kJson = RegisterShowJsonField(JsonField);

}  // namespace
}  // namespace ki::cli
