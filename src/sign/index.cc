// The attestation index (sign.attestations) as a derived index: every DSSE
// envelope the store holds is filed under each sha256 subject its in-toto
// statement names, by whatever path the envelope arrived (ki sign, ki sign
// --envelope, ki pull, ki rerun). So reindex rebuilds the table from the
// objects and audit compares it entry by entry, as it does the catalog's.
//
// Filing reads the statement without checking signatures: the index only
// says where to look, and every read of an attestation checks the
// signatures over the exact payload bytes before it trusts a field
// (CheckEnvelope). The parse is the strict JSON parser, bounded in size.
#include <algorithm>

#include "ki/json.h"
#include "ki/sign.h"

namespace ki {

std::vector<Digest> StatementSubjects(std::string_view payload) {
  std::vector<Digest> out;
  ParseLimits limits;
  auto doc = ParseDocument(payload, DocFormat::kJson, "statement", limits);
  if (!doc.ok() || !doc->is_object()) return out;
  auto subjects = doc->find("subject");
  if (subjects == doc->end() || !subjects->is_array()) return out;
  for (const Json& s : *subjects) {
    if (!s.is_object()) continue;
    auto digest = s.find("digest");
    if (digest == s.end() || !digest->is_object()) continue;
    auto sha = digest->find("sha256");
    if (sha == digest->end() || !sha->is_string()) continue;
    auto d = Digest::Parse("sha256:" + sha->get<std::string>());
    if (d.ok() && std::find(out.begin(), out.end(), *d) == out.end()) out.push_back(*d);
  }
  return out;
}

namespace {

class AttestationIndex final : public DerivedIndex {
 public:
  std::vector<std::string_view> Tables() const override { return {kAttestationTable}; }
  std::string DescribeKey(std::string_view, std::string_view key) const override {
    if (key.size() != 64) return DerivedIndex::DescribeKey(kAttestationTable, key);
    return Digest::FromRaw(key.substr(0, 32)).str() + " envelope " + Digest::FromRaw(key.substr(32)).str();
  }
  Status Update(Batch& batch, const std::vector<ObjectInfo>& arrived) override {
    for (const ObjectInfo& info : arrived) {
      if (info.type != ObjectType::kBlob || info.media_type != kEnvelopeMediaType) continue;
      KI_ASSIGN_OR_RETURN(std::string bytes, batch.Read(info.digest));
      auto env = ParseEnvelope(bytes);
      if (!env.ok() || env->payload_type != kInTotoPayloadType) continue;  // audit's attestation check says why
      for (const Digest& subject : StatementSubjects(env->payload)) {
        std::string key(subject.raw());
        key.append(info.digest.raw());
        KI_RETURN_IF_ERROR(batch.Put(kAttestationTable, key, ""));
      }
    }
    return Status::OK();
  }
};

}  // namespace

void RegisterAttestationIndex() {
  static AttestationIndex index;
  RegisterDerivedIndex(&index);
}

namespace {
// Before main in every program that links sign: attestation.cc calls
// StatementSubjects, so this file is linked wherever attestations are made.
const bool kRegistered = (RegisterAttestationIndex(), true);
}  // namespace

}  // namespace ki
