// ki verify REF [--json]; ki audit [--json] [--reindex]
#include <iostream>

#include "command.h"

namespace ki::cli {
namespace {

Json EntryJson(const CheckEntry& e) {
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
    if (*json) {
      Json arr = Json::array();
      for (const auto& e : report.entries) arr.push_back(EntryJson(e));
      PrintJson({{"root", d.str()}, {"ok", !report.HasFaults()}, {"objects", arr},
                 {"counts", {{"ok", n[0]}, {"corrupt", n[1]}, {"missing", n[2]}}}});
    } else {
      for (const auto& e : report.entries) PrintEntry(e);
      std::cout << n[0] << " ok, " << n[2] << " missing, " << n[1] << " corrupt\n";
    }
    return report.HasFaults() ? 1 : 0;
  };
}

RunFn SetupAudit(CLI::App* sub, GlobalOptions* g) {
  auto json = std::make_shared<bool>(false);
  auto reindex = std::make_shared<bool>(false);
  sub->add_flag("--json", *json, "print the report as JSON");
  sub->add_flag("--reindex", *reindex, "rebuild the index from the objects first");
  return [json, reindex, g]() -> Result<int> {
    KI_ASSIGN_OR_RETURN(auto store, OpenStore(*g, *reindex ? OpenMode::kReadWrite : OpenMode::kReadOnly));
    Result<AuditReport> r = *reindex ? store->Reindex() : store->Audit();
    if (!r.ok()) return r.status();
    const AuditReport& report = *r;
    if (*json) {
      Json faults = Json::array(), missing = Json::array();
      for (const auto& e : report.faults) faults.push_back(EntryJson(e));
      for (const auto& e : report.missing) missing.push_back(EntryJson(e));
      PrintJson({{"ok", !report.HasFaults()}, {"objects", report.objects}, {"bytes", report.bytes},
                 {"faults", faults}, {"missing", missing}, {"notes", report.notes}});
    } else {
      for (const auto& e : report.faults) PrintEntry(e);
      for (const auto& e : report.missing) PrintEntry(e);
      for (const auto& n : report.notes) std::cout << "note\t" << n << "\n";
      std::cout << report.objects << " objects (" << report.bytes << " bytes) checked: " << report.faults.size()
                << " faults, " << report.missing.size() << " missing references\n";
    }
    return report.HasFaults() ? 1 : 0;
  };
}

KI_REGISTER_COMMAND(verify, {"verify", "Re-hash an object and everything it reaches", SetupVerify, 60});
KI_REGISTER_COMMAND(audit, {"audit", "Check the whole store offline", SetupAudit, 65});

}  // namespace
}  // namespace ki::cli
