// The evidence level and attestations of an object, in `ki show` and
// `ki show --json` (under "ki": {"evidence": ...}).
#include <iostream>

#include "command.h"
#include "ki/evidence.h"
#include "ki/human.h"

namespace ki::cli {
namespace {

void EvidenceRow(std::ostream& out, const std::string& k, const std::string& v) {
  out << "  " << k << std::string(k.size() < 22 ? 22 - k.size() : 1, ' ') << v << "\n";
}

std::string Describe(const AttestationReport& a) {
  std::string s;
  if (a.fault()) return "FAULT: " + a.problem();
  for (const auto& sig : a.signatures) {
    if (!s.empty()) s += "; ";
    std::string who = sig.signer.empty() ? "key " + ShortKeyId(sig.keyid) : sig.signer;
    switch (sig.state) {
      case SignatureState::kTrusted: s += "by " + who + " (trusted " + std::string(RoleName(*sig.role)) + ")"; break;
      case SignatureState::kUntrusted: s += "by " + who + " (valid, not trusted)"; break;
      case SignatureState::kRevoked: s += "by " + who + " (valid, key revoked)"; break;
      case SignatureState::kUnknownKey: s += "by unknown key " + ShortKeyId(sig.keyid) + " (not checked)"; break;
      case SignatureState::kInvalid: s += "by " + who + " (INVALID)"; break;
    }
  }
  const Json& p = a.predicate_body;
  if (p.is_object()) {
    if (p.contains("signedAt") && p["signedAt"].is_string()) s += " · " + p["signedAt"].get<std::string>();
    if (p.contains("rerun") && p["rerun"].is_object()) {
      const Json& r = p["rerun"];
      if (r.contains("latencyNs") && r["latencyNs"].is_number()) s += " · " + FormatNs(r["latencyNs"].get<double>());
      if (r.contains("ratio") && r["ratio"].is_number()) {
        s += " · ratio " + human::Fixed(r["ratio"].get<double>(), 3);
      }
      if (r.contains("machine") && r["machine"].is_string()) s += " · on " + r["machine"].get<std::string>();
      if (r.contains("passed") && r["passed"] == false) s += " · re-run FAILED";
    }
    if (p.contains("note") && p["note"].is_string()) s += " · \"" + p["note"].get<std::string>() + "\"";
  }
  return s;
}

Status EvidenceSection(Store& store, const Digest& d, const Manifest&, std::ostream& out) {
  KI_ASSIGN_OR_RETURN(EvidenceEvaluator eval, EvidenceEvaluator::OpenDefault());
  KI_ASSIGN_OR_RETURN(Evidence ev, eval.Evaluate(store, d));
  out << "\nEvidence\n";
  EvidenceRow(out, "level", ev.Label());
  EvidenceRow(out, "why", ev.reason);
  if (ev.attestations.empty()) {
    EvidenceRow(out, "attestations", "none");
    return Status::OK();
  }
  out << "\nAttestations\n";
  for (const auto& a : ev.attestations) {
    std::string pred = a.predicate ? std::string(PredicateName(*a.predicate))
                                   : (a.predicate_type.empty() ? "?" : a.predicate_type);
    EvidenceRow(out, pred, Short(a.envelope) + "  " + Describe(a));
  }
  return Status::OK();
}

Status EvidenceJsonField(Store& store, const Digest& d, const Manifest&, Json& ki) {
  KI_ASSIGN_OR_RETURN(EvidenceEvaluator eval, EvidenceEvaluator::OpenDefault());
  KI_ASSIGN_OR_RETURN(Evidence ev, eval.Evaluate(store, d));
  ki["evidence"] = ev.ToJson();
  return Status::OK();
}

const int kEvidenceSection = RegisterShowSection(50, EvidenceSection);
const int kEvidenceJson = RegisterShowJsonField(EvidenceJsonField);

}  // namespace
}  // namespace ki::cli
