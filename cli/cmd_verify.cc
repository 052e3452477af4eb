// ki verify REF [--json]; ki audit [--json] [--reindex] [--summary]: the
// checks are the library's (Store::Verify, AuditWholeStore); this prints.
#include <algorithm>
#include <iostream>
#include <map>
#include <tuple>

#include "command.h"
#include "store_open.h"
#include "ki/audit.h"
#include "ki/index_rebuild.h"
#include "ki/sign.h"

namespace ki::cli {
namespace {

Json CheckEntryJson(const CheckEntry& e) {
  Json j = {{"digest", e.digest.str()}, {"state", std::string(CheckStateName(e.state))}, {"what", e.what}};
  if (!e.via.empty()) j["via"] = e.via;
  if (!e.detail.empty()) j["detail"] = e.detail;
  return j;
}

void PrintEntry(const CheckEntry& e) {
  std::cout << CheckStateName(e.state) << "\t" << e.digest.str() << "\t" << e.what;
  if (!e.via.empty()) std::cout << "\t(" << e.via << ")";
  if (!e.detail.empty()) std::cout << "\t" << e.detail;
  std::cout << "\n";
}

// `ki audit --summary`: one line per state, what and referring field
// (`missing\t3077\tunknown\t/spec/evidence/rawTraceDigest`), most first.
void PrintGrouped(const std::vector<CheckEntry>& entries) {
  std::map<std::tuple<std::string, std::string, std::string>, size_t> counts;
  for (const auto& e : entries) {
    // "<referrer digest> /spec/field" and "<table> <key>": the part after
    // the first space says how they were reached, without the instance.
    std::string via = e.via;
    if (size_t sp = via.find(' '); sp != std::string::npos && via.rfind("sha256:", 0) == 0) via = via.substr(sp + 1);
    else if (sp != std::string::npos) via = via.substr(0, sp);
    ++counts[{std::string(CheckStateName(e.state)), e.what, via}];
  }
  std::vector<std::pair<size_t, std::tuple<std::string, std::string, std::string>>> rows;
  for (const auto& [k, n] : counts) rows.emplace_back(n, k);
  std::stable_sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  for (const auto& [n, k] : rows) {
    std::cout << std::get<0>(k) << "\t" << n << "\t" << std::get<1>(k);
    if (!std::get<2>(k).empty()) std::cout << "\t" << std::get<2>(k);
    std::cout << "\n";
  }
}

// Attestations (docs/cli.md, "Signing"): one line each, printed after the
// digest checks so that their output stays as it was.
std::string AttestationState(const AttestationReport& a) {
  if (a.fault()) return "fault";
  if (a.TrustedBy()) return "trusted";
  return "untrusted";
}

void PrintAttestation(const AttestationReport& a) {
  std::string pred = a.predicate ? std::string(PredicateName(*a.predicate))
                                 : (a.predicate_type.empty() ? "?" : a.predicate_type);
  std::cout << "attestation\t" << AttestationState(a) << "\t" << a.envelope.str() << "\t" << pred << "\t"
            << a.subject.str();
  for (const auto& s : a.signatures) {
    std::cout << "\t" << SignatureStateName(s.state) << " " << (s.signer.empty() ? "-" : s.signer) << " "
              << ShortKeyId(s.keyid);
    if (s.role) std::cout << " " << RoleName(*s.role);
  }
  if (a.fault()) std::cout << "\t" << a.problem();
  std::cout << "\n";
}

struct AttestationCounts {
  size_t trusted = 0, untrusted = 0, faults = 0;
  void Add(const AttestationReport& a) {
    if (a.fault()) ++faults;
    else if (a.TrustedBy()) ++trusted;
    else ++untrusted;
  }
  Json ToJson() const { return {{"trusted", trusted}, {"untrusted", untrusted}, {"fault", faults}}; }
};

void PrintAttestationSummary(size_t n, const AttestationCounts& c) {
  std::cout << n << " attestations: " << c.trusted << " trusted, " << c.untrusted << " not trusted, " << c.faults
            << " faults\n";
}

RunFn SetupVerify(CLI::App* sub, GlobalOptions* g) {
  auto ref = std::make_shared<std::string>();
  auto json = std::make_shared<bool>(false);
  sub->add_option("ref", *ref, "the object to verify, with everything it reaches")->required();
  sub->add_flag("--json", *json, "print the checks as JSON");
  return [ref, json, g]() -> Result<int> {
    KI_ASSIGN_OR_RETURN(auto store, OpenStore(*g, OpenMode::kReadOnly));
    KI_ASSIGN_OR_RETURN(Digest d, store->Resolve(*ref));
    KI_ASSIGN_OR_RETURN(VerifyReport report, store->Verify(d));
    size_t n[3] = {0, 0, 0};
    for (const auto& e : report.entries) n[int(e.state)]++;
    // Keys and trust are only loaded when there is something signed.
    std::vector<AttestationReport> atts;
    KI_ASSIGN_OR_RETURN(auto envelopes, ListAttestations(*store, d));
    if (!envelopes.empty()) {
      KI_ASSIGN_OR_RETURN(KeySources keys, KeySources::LoadDefault());
      KI_ASSIGN_OR_RETURN(atts, VerifyAttestations(*store, d, keys));
    }
    AttestationCounts ac;
    for (const auto& a : atts) ac.Add(a);
    bool faults = report.HasFaults() || ac.faults > 0;
    if (*json) {
      Json arr = Json::array(), att_arr = Json::array();
      for (const auto& e : report.entries) arr.push_back(CheckEntryJson(e));
      for (const auto& a : atts) att_arr.push_back(a.ToJson());
      Json counts = {{"ok", n[0]}, {"corrupt", n[1]}, {"missing", n[2]}};
      PrintJson({{"root", d.str()}, {"ok", !faults}, {"objects", arr}, {"counts", counts},
                 {"attestations", att_arr}, {"attestationCounts", ac.ToJson()}});
    } else {
      for (const auto& e : report.entries) PrintEntry(e);
      std::cout << n[0] << " ok, " << n[2] << " missing, " << n[1] << " corrupt\n";
      for (const auto& a : atts) PrintAttestation(a);
      if (!atts.empty()) PrintAttestationSummary(atts.size(), ac);
    }
    return faults ? 1 : 0;
  };
}

RunFn SetupAudit(CLI::App* sub, GlobalOptions* g) {
  auto json = std::make_shared<bool>(false);
  auto reindex = std::make_shared<bool>(false);
  sub->add_flag("--json", *json, "print the report as JSON");
  sub->add_flag("--reindex", *reindex, "rebuild the index from the objects first");
  auto summary = std::make_shared<bool>(false);
  sub->add_flag("--summary", *summary, "count faults and missing references by kind instead of listing each");
  return [json, reindex, summary, g]() -> Result<int> {
    // A damaged index file (empty, truncated, not LMDB) cannot be opened:
    // --reindex builds a new one from the frames still whole in it first.
    std::optional<IndexRebuild> rebuilt;
    if (*reindex) {
      KI_ASSIGN_OR_RETURN(std::string ki_dir, StoreDirectory(*g));
      KI_ASSIGN_OR_RETURN(StoreOptions opts, CliStoreOptions(OpenMode::kReadWrite));
      KI_ASSIGN_OR_RETURN(rebuilt, RebuildDamagedIndex(ki_dir, opts));
    }
    KI_ASSIGN_OR_RETURN(auto store, OpenStore(*g, *reindex ? OpenMode::kReadWrite : OpenMode::kReadOnly));
    KI_ASSIGN_OR_RETURN(WholeStoreAudit audit, AuditWholeStore(*store, *reindex));
    if (rebuilt) {
      audit.store.notes.insert(
          audit.store.notes.begin(),
          rebuilt->damage + ": moved to " + rebuilt->moved_to + "; the index was built again from the " +
              std::to_string(rebuilt->recovered) + " objects found whole in it (" +
              std::to_string(rebuilt->unreadable) +
              " more frame headers there began no whole frame: stale bytes of reused pages, or damage) and the "
              "loose objects. Objects that were in its lost "
              "pages, and what only the index recorded (tags, records of absent objects, when objects were "
              "added, other modules' recorded tables), are not in the store now: `ki pull` them from a remote that "
              "has them, or add or import them again; delete the moved file once the store is whole");
    }
    const AuditReport& report = audit.store;
    const AttestationAudit& att = audit.attestations;
    AttestationCounts ac;
    for (const auto& a : att.reports) ac.Add(a);
    // A rebuilt index is a fault found, however clean the store is now:
    // what was lost with the damaged pages is not known.
    const bool faults = audit.HasFaults() || rebuilt.has_value();
    if (*json) {
      Json faults_j = Json::array(), missing = Json::array(), atts = Json::array();
      for (const auto& e : report.faults) faults_j.push_back(CheckEntryJson(e));
      for (const auto& e : report.missing) missing.push_back(CheckEntryJson(e));
      for (const auto& a : att.reports) atts.push_back(a.ToJson());
      PrintJson({{"ok", !faults}, {"objects", report.objects}, {"bytes", report.bytes},
                 {"faults", faults_j}, {"missing", missing}, {"notes", report.notes},
                 {"attestations", atts}, {"attestationCounts", ac.ToJson()}, {"attestationNotes", att.notes}});
    } else {
      if (*summary) {
        PrintGrouped(report.faults);
        PrintGrouped(report.missing);
        if (!report.notes.empty()) std::cout << "note\t" << report.notes.size() << "\n";
      } else {
        for (const auto& e : report.faults) PrintEntry(e);
        for (const auto& e : report.missing) PrintEntry(e);
        for (const auto& n : report.notes) std::cout << "note\t" << n << "\n";
      }
      for (const auto& a : att.reports)
        if (a.fault() && !*summary) PrintAttestation(a);
      if (!*summary)
        for (const auto& n : att.notes) std::cout << "note\t" << n << "\n";
      // The counts come last, after every line they count.
      std::cout << report.objects << " objects (" << report.bytes << " bytes) checked: " << report.faults.size()
                << " faults, " << report.missing.size() << " missing references\n";
      if (!att.reports.empty() || !att.notes.empty()) PrintAttestationSummary(att.reports.size(), ac);
    }
    return faults ? 1 : 0;
  };
}

KI_REGISTER_COMMAND(verify, {"verify", "Re-hash an object and everything it reaches", SetupVerify, 60});
KI_REGISTER_COMMAND(audit, {"audit", "Check the whole store offline", SetupAudit, 65, /*big_heap_min_args=*/0});

}  // namespace
}  // namespace ki::cli
