// DSSE envelopes: the pre-authentication encoding and the JSON envelope
// (docs/format.md, "Envelope").
#include "ki/sign.h"
#include "sign/internal.h"

namespace ki {

std::string PreAuthEncoding(std::string_view payload_type, std::string_view payload) {
  std::string out;
  out.reserve(payload_type.size() + payload.size() + 32);
  out += "DSSEv1 ";
  out += std::to_string(payload_type.size());  // bytes, not characters
  out += ' ';
  out += payload_type;
  out += ' ';
  out += std::to_string(payload.size());
  out += ' ';
  out += payload;
  return out;
}

std::string SerializeEnvelope(const DsseEnvelope& env) {
  Json sigs = Json::array();
  for (const auto& s : env.signatures) sigs.push_back({{"keyid", s.keyid}, {"sig", Base64Encode(s.sig)}});
  Json j = {{"payload", Base64Encode(env.payload)}, {"payloadType", env.payload_type}, {"signatures", sigs}};
  // Canonical bytes make the envelope's digest a function of its content.
  // The values are plain ASCII strings, so canonicalisation cannot fail.
  auto c = Canonicalize(j);
  return c.ok() ? *c : j.dump();
}

Result<DsseEnvelope> ParseEnvelope(std::string_view json) {
  std::string ignored;
  return sign_internal::ParseEnvelopeStaged(json, &ignored);
}

Result<DsseEnvelope> sign_internal::ParseEnvelopeStaged(std::string_view json, std::string* stage) {
  *stage = "envelope";
  auto parsed = ParseDocument(json, DocFormat::kJson, "envelope");
  if (!parsed.ok()) return Status::InvalidInput("the envelope is not valid JSON: " + parsed.status().message());
  const Json& j = *parsed;
  if (!j.is_object()) return Status::InvalidInput("the envelope is not a JSON object");
  DsseEnvelope env;
  if (!j.contains("payloadType") || !j["payloadType"].is_string()) {
    return Status::InvalidInput("the envelope has no string `payloadType`");
  }
  env.payload_type = j["payloadType"].get<std::string>();
  if (!j.contains("payload") || !j["payload"].is_string()) {
    return Status::InvalidInput("the envelope has no string `payload`");
  }
  *stage = "encoding";
  KI_ASSIGN_OR_RETURN(env.payload, Base64Decode(j["payload"].get<std::string>(), "the envelope's `payload`"));
  *stage = "envelope";
  if (!j.contains("signatures") || !j["signatures"].is_array()) {
    return Status::InvalidInput("the envelope has no `signatures` array");
  }
  *stage = "signatures";
  if (j["signatures"].empty()) return Status::InvalidInput("the envelope has no signatures");
  size_t i = 0;
  for (const Json& s : j["signatures"]) {
    std::string where = "signature " + std::to_string(i++);
    if (!s.is_object() || !s.contains("sig") || !s["sig"].is_string()) {
      return Status::InvalidInput(where + " has no string `sig`");
    }
    DsseSignature sig;
    *stage = "envelope";
    if (s.contains("keyid")) {
      if (!s["keyid"].is_string()) return Status::InvalidInput(where + ": `keyid` is not a string");
      sig.keyid = s["keyid"].get<std::string>();
    }
    *stage = "encoding";
    KI_ASSIGN_OR_RETURN(sig.sig, Base64Decode(s["sig"].get<std::string>(), where + "'s `sig`"));
    if (sig.sig.size() != 64) {
      return Status::InvalidInput(where + "'s `sig` has " + std::to_string(sig.sig.size()) +
                                  " bytes; an Ed25519 signature has 64 (truncated?)");
    }
    env.signatures.push_back(std::move(sig));
  }
  return env;
}

}  // namespace ki
