// Sets, result tags, which array tasks a submission needs, and which runs
// a selection names.
#include <algorithm>
#include <map>
#include <set>

#include "ki/catalog.h"
#include "ki/fleet.h"
#include "ki/run.h"

namespace ki::fleet {

namespace {

constexpr std::string_view kResultTagPrefix = "kifleet-";
constexpr size_t kRunHex = 32, kKeyHex = 16;

bool IsLowerHex(std::string_view s) {
  return std::all_of(s.begin(), s.end(), [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

}  // namespace

RunSet MakeRunSet(std::vector<Digest> runs) {
  std::sort(runs.begin(), runs.end(), [](const Digest& a, const Digest& b) { return a.raw() < b.raw(); });
  runs.erase(std::unique(runs.begin(), runs.end()), runs.end());
  std::string text = std::string(kSetFormat) + "\n";
  for (const Digest& d : runs) text += d.str() + "\n";
  return RunSet{Sha256Of(text), std::move(runs)};
}

std::string ResultTag(const Digest& run, std::string_view keyid) {
  return std::string(kResultTagPrefix) + run.hex().substr(0, kRunHex) + "-" + std::string(keyid.substr(0, kKeyHex));
}

std::optional<ResultTagParts> ParseResultTag(std::string_view tag) {
  if (tag.substr(0, kResultTagPrefix.size()) != kResultTagPrefix) return std::nullopt;
  tag.remove_prefix(kResultTagPrefix.size());
  if (tag.size() != kRunHex + 1 + kKeyHex || tag[kRunHex] != '-') return std::nullopt;
  ResultTagParts p{std::string(tag.substr(0, kRunHex)), std::string(tag.substr(kRunHex + 1))};
  if (!IsLowerHex(p.run_prefix) || !IsLowerHex(p.keyid_prefix)) return std::nullopt;
  return p;
}

std::string RunTag(const Digest& run) { return "ki-" + run.hex(); }

Plan PlanTasks(const RunSet& set, int replicas, const std::vector<std::string>& remote_tags, bool force) {
  replicas = std::max(replicas, 1);
  // Runner keys with a result, by run prefix; and the runs the remote holds.
  std::map<std::string, std::set<std::string>> keys;
  std::set<std::string> held;
  for (const std::string& t : remote_tags) {
    if (auto p = ParseResultTag(t)) {
      keys[p->run_prefix].insert(p->keyid_prefix);
    } else if (t.size() == 3 + 64 && t.compare(0, 3, "ki-") == 0) {
      held.insert(t.substr(3));
    }
  }
  Plan plan;
  plan.results_per_run.reserve(set.runs.size());
  for (size_t i = 0; i < set.runs.size(); ++i) {
    const std::string hex = set.runs[i].hex();
    auto it = keys.find(hex.substr(0, kRunHex));
    const size_t have = it == keys.end() ? 0 : it->second.size();
    plan.results_per_run.push_back(have);
    if (!held.count(hex)) plan.missing_runs.push_back(set.runs[i]);
    const int from = force ? 0 : int(std::min<size_t>(have, size_t(replicas)));
    if (from == replicas) ++plan.runs_done;
    for (int r = from; r < replicas; ++r) plan.tasks.push_back({i, r, uint64_t(i) * uint64_t(replicas) + uint64_t(r)});
  }
  return plan;
}

std::string ArraySpec(const std::vector<uint64_t>& ids, int max_parallel) {
  std::string out;
  for (size_t i = 0; i < ids.size();) {
    size_t j = i;
    while (j + 1 < ids.size() && ids[j + 1] == ids[j] + 1) ++j;
    if (!out.empty()) out += ',';
    out += std::to_string(ids[i]);
    if (j > i) {
      out += '-';
      out += std::to_string(ids[j]);
    }
    i = j + 1;
  }
  if (max_parallel > 0) {
    out += '%';
    out += std::to_string(max_parallel);
  }
  return out;
}

std::optional<TaskSlot> SlotOfArrayId(uint64_t array_id, size_t runs, int replicas) {
  if (replicas < 1) return std::nullopt;
  const uint64_t index = array_id / uint64_t(replicas);
  if (index >= runs) return std::nullopt;
  return TaskSlot{size_t(index), int(array_id % uint64_t(replicas)), array_id};
}

}  // namespace ki::fleet

// ------------------------------------------------------------ selection

namespace ki::fleet {

Result<std::vector<Digest>> SelectRuns(Store& store, const RunSelection& sel) {
  std::vector<Digest> out;
  for (const std::string& ref : sel.refs) {
    KI_ASSIGN_OR_RETURN(Digest d, store.Resolve(ref));
    KI_ASSIGN_OR_RETURN(auto info, store.Stat(d));
    if (!info || info->type != ObjectType::kManifest || info->kind != Kind::kBenchmarkRun) {
      return Status::InvalidInput(ref + " is not a BenchmarkRun (" + d.str() + ")");
    }
    out.push_back(d);
  }
  auto original = [&](const Digest& d) -> Result<bool> {
    KI_ASSIGN_OR_RETURN(auto o, run::OriginalOf(store, d));
    return !o.has_value();
  };
  for (const std::string& g : sel.groups) {
    KI_ASSIGN_OR_RETURN(Digest cohort, catalog::ResolveCohort(store, g));
    KI_ASSIGN_OR_RETURN(catalog::Ranking r, catalog::RankCohort(store, cohort));
    for (const auto* list : {&r.ranked, &r.ineligible}) {
      for (const auto& e : *list) {
        KI_ASSIGN_OR_RETURN(bool keep, original(e.run));
        if (keep) out.push_back(e.run);
      }
    }
  }
  if (!sel.operation.empty() || !sel.hardware.empty() || !sel.implementation.empty()) {
    catalog::RunFilter f{sel.operation, sel.hardware, sel.implementation, ""};
    Status st;
    KI_RETURN_IF_ERROR(store.ForEachOfKind(Kind::kBenchmarkRun, [&](const Digest& d) {
      auto m = catalog::RunMatches(store, d, f);
      auto keep = m.ok() && *m ? original(d) : Result<bool>(false);
      if (!m.ok() || !keep.ok()) {
        st = !m.ok() ? m.status() : keep.status();
        return false;
      }
      if (*keep) out.push_back(d);
      return true;
    }));
    KI_RETURN_IF_ERROR(st);
  }
  return out;
}

}  // namespace ki::fleet
