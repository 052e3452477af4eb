// catalog::CheckTables: ki audit's pass over the catalog tables. The read
// paths (rank, records, show) find a damaged entry only when they read it;
// this reads every entry once, so a damaged group is found before anyone
// ranks it.
#include <cctype>
#include <cstring>

#include "catalog/compact_json.h"
#include "catalog/tables.h"
#include "ki/catalog.h"
#include "util/coding.h"

namespace ki::catalog {

std::string tables::KeyText(std::string_view table, std::string_view key) {
  // A held object's number as audit prints one (docs/format.md, "Index").
  auto number = [](std::string_view part) { return "#" + std::to_string(coding::DecodeBigEndian32(part.data())); };
  const std::string_view second = table == kFacts ? " facts " : " run ";
  if (key.size() == 4) return number(key);
  if (key.size() == 32) return Digest::FromRaw(key).str();
  if (key.size() == 8 && table == kFacts) return number(key.substr(0, 4)) + std::string(second) + number(key.substr(4));
  if (key.size() == 36)
    return Digest::FromRaw(key.substr(0, 32)).str() + std::string(second) + number(key.substr(32));
  if (key.size() == 64)
    return Digest::FromRaw(key.substr(0, 32)).str() + std::string(second) + Digest::FromRaw(key.substr(32)).str();
  std::string out = "0x" + HexEncode(key.substr(0, 16));
  if (key.size() > 16) out += "...";
  return out + " (" + std::to_string(key.size()) + " bytes)";
}

namespace {

class Checker {
 public:
  explicit Checker(Store& store) : store_(store), parts_(store) {}

  Status Run() {
    const size_t held = parts_.held_size();
    const std::string part_is = parts_.numbered() ? "an object number (4 bytes)" : "a digest (32 bytes)";
    KI_RETURN_IF_ERROR(Each(tables::kRuns, [&](std::string_view k, std::string_view v) -> Status {
      if (k.size() != held) return Fault(tables::kRuns, k, "key is not a run's part: " + part_is);
      KI_ASSIGN_OR_RETURN(auto held_run, HeldObject(tables::kRuns, k));
      if (!held_run) return Status::OK();
      const Digest run = *held_run;
      RankEntry e;
      tables::RunEntryExtra x;  // cohort and kind, from the same pass
      if (!tables::EntryFromStored(run, v, &e, &x)) return Fault(tables::kRuns, k, "value is not a run entry");
      auto cohort = x.cohort ? Digest::Parse(*x.cohort) : Result<Digest>(Status::Corruption(""));
      if (!cohort.ok()) return Fault(tables::kRuns, k, "`cohort` is not a digest");
      if (!x.kind || (*x.kind != "kernel" && *x.kind != "serving"))
        return Fault(tables::kRuns, k, "`kind` is not \"kernel\" or \"serving\"");
      KI_ASSIGN_OR_RETURN(auto desc, store_.Get(tables::kCohorts, cohort->raw()));
      if (!desc) return Fault(tables::kRuns, k, "names comparison group " + cohort->str() + ", which catalog.cohorts lacks");
      return NeedObject(run, tables::kRuns, k);
    }));
    KI_RETURN_IF_ERROR(Each(tables::kCohortRuns, [&](std::string_view k, std::string_view v) -> Status {
      if (k.size() != 32 + held)
        return Fault(tables::kCohortRuns, k, "key is not a cohort digest and a run's part: " + part_is);
      if (!v.empty()) return Fault(tables::kCohortRuns, k, "value is not empty");
      KI_ASSIGN_OR_RETURN(auto run, HeldObject(tables::kCohortRuns, k, k.substr(32)));
      if (!run) return Status::OK();
      KI_ASSIGN_OR_RETURN(auto entry, store_.Get(tables::kRuns, k.substr(32)));
      if (!entry) return Fault(tables::kCohortRuns, k, "names a run that catalog.runs lacks");
      return NeedObject(*run, tables::kCohortRuns, k);
    }));
    KI_RETURN_IF_ERROR(Each(tables::kCohorts, [&](std::string_view k, std::string_view v) -> Status {
      if (k.size() != 32) return Fault(tables::kCohorts, k, "key is not a cohort digest (32 bytes)");
      Json j;
      if (!tables::DecodeStoredJson(v, &j) || !j.is_object())
        return Fault(tables::kCohorts, k, "value is not a JSON object");
      auto kind = j.find("kind");
      if (kind == j.end() || !kind->is_string() || (*kind != "kernel" && *kind != "serving"))
        return Fault(tables::kCohorts, k, "`kind` is not \"kernel\" or \"serving\"");
      auto runs = j.find("runs");
      if (runs == j.end() || !runs->is_number_unsigned()) return Fault(tables::kCohorts, k, "`runs` is not a count");
      return Status::OK();
    }));
    KI_RETURN_IF_ERROR(Each(tables::kEvents, [&](std::string_view k, std::string_view v) -> Status {
      if (k.size() != 64 && k.size() != 32 + held)
        return Fault(tables::kEvents, k, "key is not a cohort digest and a run's part (its digest when not held)");
      Json j;
      if (!tables::DecodeStoredJson(v, &j) || !j.is_object())
        return Fault(tables::kEvents, k, "value is not a JSON object");
      // An event may name a run neither the export nor the store holds
      // (format.md): its run is not looked up.
      return Status::OK();
    }));
    KI_RETURN_IF_ERROR(Each(tables::kRanks, [&](std::string_view k, std::string_view v) -> Status {
      if (k.size() != 32) return Fault(tables::kRanks, k, "key is not a cohort digest (32 bytes)");
      tables::RankRecord rec;
      // FindInRanking checks the magic and that the length matches the counts.
      if (!tables::FindInRanking(v, "", &rec)) return Fault(tables::kRanks, k, "value is not a KIR1 or KIR2 ranking");
      for (std::string_view run : tables::RankingParts(v)) {
        if (run.size() != held) return Fault(tables::kRanks, k, "its records do not name runs by " + part_is);
        KI_ASSIGN_OR_RETURN(auto entry, store_.Get(tables::kCohortRuns, tables::PairKey(k, run)));
        if (!entry)
          return Fault(tables::kRanks, k,
                       "ranks " + tables::KeyText(tables::kRuns, run) + ", which catalog.cohort lacks in this group");
      }
      return Status::OK();
    }));
    KI_RETURN_IF_ERROR(Each(tables::kImports, [&](std::string_view, std::string_view) -> Status { return Status::OK(); }));
    // Import summaries have one reader with the field rules; each damaged
    // summary is a fault of its own.
    std::vector<std::string> damaged;
    KI_RETURN_IF_ERROR(StoredImports(store_, &damaged).status());
    for (std::string& d : damaged) {
      CheckEntry e;
      e.state = CheckState::kCorrupt;
      e.what = std::string(tables::kImports);
      e.detail = std::move(d);
      out_.faults.push_back(std::move(e));
    }
    return Status::OK();
  }

  TableCheck Take() { return std::move(out_); }

 private:
  template <typename Fn>
  Status Each(std::string_view table, Fn&& fn) {
    Status err;
    KI_RETURN_IF_ERROR(store_.Scan(table, "", [&](std::string_view k, std::string_view v) {
      ++out_.entries;
      err = fn(k, v);
      return err.ok();
    }));
    return err;
  }

  Status Fault(std::string_view table, std::string_view key, std::string detail) {
    CheckEntry e;
    // The digest the key holds last (a run's, or a cohort's before a number).
    if (key.size() == 32 || key.size() == 64) e.digest = Digest::FromRaw(key.substr(key.size() - 32));
    else if (key.size() == 36) e.digest = Digest::FromRaw(key.substr(0, 32));
    e.state = CheckState::kCorrupt;
    e.what = std::string(table) + " " + tables::KeyText(table, key);
    e.detail = std::move(detail);
    out_.faults.push_back(std::move(e));
    return Status::OK();
  }

  // The run a number names (a digest's part is the digest); nullopt, after
  // a fault, when no held object has that number.
  Result<std::optional<Digest>> HeldObject(std::string_view table, std::string_view key, std::string_view part = {}) {
    if (part.empty()) part = key;
    KI_ASSIGN_OR_RETURN(auto d, parts_.DigestOf(part));
    if (!d) KI_RETURN_IF_ERROR(Fault(table, key, "names object number " + tables::KeyText(tables::kRuns, part) +
                                                     ", which no object the store holds has"));
    return d;
  }

  Status NeedObject(const Digest& d, std::string_view table, std::string_view key) {
    KI_ASSIGN_OR_RETURN(auto info, store_.Stat(d));
    if (info) return Status::OK();
    CheckEntry e;
    e.digest = d;
    e.state = CheckState::kMissing;
    e.what = "unknown";
    e.via = std::string(table) + " " + tables::KeyText(table, key);
    out_.missing.push_back(std::move(e));
    return Status::OK();
  }

  Store& store_;
  tables::ObjectParts<Store> parts_;
  TableCheck out_;
};

}  // namespace

Result<TableCheck> CheckTables(Store& store) {
  Checker c(store);
  KI_RETURN_IF_ERROR(c.Run());
  return c.Take();
}

}  // namespace ki::catalog
