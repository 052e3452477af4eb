// The "Rank" section of `ki show` for runs imported from a catalog.
#include <ostream>

#include "command.h"
#include "ki/catalog.h"
#include "ki/human.h"

namespace ki::cli {
namespace {

std::string RankEntryValue(const catalog::RankEntry& e) {
  if (!e.value) return "-";
  return human::Quantity(*e.value, e.unit);
}

// Where the run stands, or nullopt when it is not in an imported catalog.
Result<std::optional<catalog::RunStanding>> StandingOf(Store& store, const Digest& d, const Manifest& m) {
  if (m.kind != Kind::kBenchmarkRun) return std::optional<catalog::RunStanding>();
  return catalog::StandingOfRun(store, d);
}

Status RankSection(Store& store, const Digest& d, const Manifest& m, std::ostream& out) {
  KI_ASSIGN_OR_RETURN(auto s, StandingOf(store, d, m));
  if (!s) {
    if (m.kind != Kind::kBenchmarkRun && m.kind != Kind::kServingRun) return Status::OK();
    KI_ASSIGN_OR_RETURN(auto missing, catalog::MissingForGroup(store, d));
    if (missing.empty()) return Status::OK();
    out << "\nRank (" << catalog::kRankingPolicy << ")\n  In no comparison group yet: this store lacks its";
    for (size_t i = 0; i < missing.size(); ++i) out << (i ? " and its " : " ") << missing[i].first << " " << missing[i].second;
    out << "\n  (ki pull or ki add it: the run joins its group when it arrives)\n";
    return Status::OK();
  }
  out << "\nRank (" << catalog::kRankingPolicy << ")\n";
  if (s->rank > 0) {
    out << "  Rank " << s->rank << " of " << s->of << " in its comparison group"
        << (s->tied_with_previous ? " (tied)" : "") << "\n";
  } else {
    std::string reasons;
    for (const auto& x : s->ineligible) reasons += (reasons.empty() ? "" : ", ") + x;
    // `of` counts the ranked runs, which may be none.
    out << "  Not ranked (" << reasons << "); "
        << (s->of == 0 ? std::string("no run of its comparison group is ranked")
                       : "its comparison group ranks " + std::to_string(s->of) + (s->of == 1 ? " run" : " runs"))
        << "\n";
  }
  if (s->first) {
    const auto& first = *s->first;
    out << "  #1  " << RankEntryValue(first) << "  " << first.run.str() << " " << first.name
        << (first.run == d ? " (this run)" : "") << "\n";
  }
  out << "  group " << s->cohort.str() << " (ki rank " << s->cohort.str().substr(7, 12) << ")\n";
  return Status::OK();
}

Status RankJsonField(Store& store, const Digest& d, const Manifest& m, Json& ki) {
  KI_ASSIGN_OR_RETURN(auto s, StandingOf(store, d, m));
  if (!s) {
    if (m.kind != Kind::kBenchmarkRun && m.kind != Kind::kServingRun) return Status::OK();
    KI_ASSIGN_OR_RETURN(auto missing, catalog::MissingForGroup(store, d));
    if (missing.empty()) return Status::OK();
    Json list = Json::array();
    for (const auto& [kind, digest] : missing) list.push_back({{"kind", kind}, {"digest", digest}});
    ki["rank"] = {{"policy", catalog::kRankingPolicy}, {"missing", list}};
    return Status::OK();
  }
  Json j = {{"policy", catalog::kRankingPolicy}, {"cohort", s->cohort.str()}, {"of", s->of}};
  if (s->rank > 0) {
    j["rank"] = s->rank;
    j["tiedWithPrevious"] = s->tied_with_previous;
  } else {
    j["ineligible"] = s->ineligible;
  }
  if (s->first) {
    const auto& first = *s->first;
    j["first"] = {{"run", first.run.str()}, {"name", first.name}, {"value", first.value ? Json(*first.value) : Json()}};
  }
  ki["rank"] = j;
  return Status::OK();
}

[[maybe_unused]] const int kRankSection = RegisterShowSection(50, RankSection);
[[maybe_unused]] const int kRankJson = RegisterShowJsonField(RankJsonField);

}  // namespace
}  // namespace ki::cli
