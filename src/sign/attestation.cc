// Attestations: in-toto statements about store objects, in signed DSSE
// envelopes, stored as blobs and indexed by subject (docs/format.md,
// "Attestations").
#include <sodium.h>

#include <algorithm>
#include <cmath>
#include <set>

#include "json/fields.h"
#include "ki/sign.h"
#include "sign/internal.h"
#include "ki/utc.h"

namespace ki {

using sign_internal::EnsureSodium;

// ---------------------------------------------------------------- predicates

namespace {

struct PredicateDef {
  PredicateKind kind;
  std::string_view name;
  std::string_view uri;
};

// The URIs are identifiers (in-toto TypeURIs); they need not resolve.
constexpr PredicateDef kPredicates[] = {
    {PredicateKind::kReviewed, "reviewed", "https://kernelindex.dev/ki/attestation/reviewed/v1"},
    {PredicateKind::kReproduced, "reproduced", "https://kernelindex.dev/ki/attestation/reproduced/v1"},
    {PredicateKind::kDisputed, "disputed", "https://kernelindex.dev/ki/attestation/disputed/v1"},
};

bool FiniteNumber(const Json& j) { return j.is_number() && std::isfinite(j.get<double>()); }

}  // namespace

std::string_view PredicateName(PredicateKind p) {
  for (const auto& d : kPredicates)
    if (d.kind == p) return d.name;
  return "?";
}
std::string_view PredicateTypeUri(PredicateKind p) {
  for (const auto& d : kPredicates)
    if (d.kind == p) return d.uri;
  return "";
}
std::optional<PredicateKind> ParsePredicateName(std::string_view name) {
  for (const auto& d : kPredicates)
    if (d.name == name) return d.kind;
  return std::nullopt;
}
std::optional<PredicateKind> PredicateFromUri(std::string_view uri) {
  for (const auto& d : kPredicates)
    if (d.uri == uri) return d.kind;
  return std::nullopt;
}

std::string_view SignatureStateName(SignatureState s) {
  switch (s) {
    case SignatureState::kTrusted: return "trusted";
    case SignatureState::kUntrusted: return "untrusted";
    case SignatureState::kRevoked: return "revoked";
    case SignatureState::kUnknownKey: return "unknown-key";
    case SignatureState::kInvalid: return "invalid";
  }
  return "?";
}

Result<KeySources> KeySources::LoadDefault() {
  KeySources k;
  KI_ASSIGN_OR_RETURN(k.trust, TrustStore::LoadDefault());
  if (auto ring = Keyring::Default(); ring.ok()) {
    KI_ASSIGN_OR_RETURN(k.local, ring->List());
  }
  return k;
}

// ---------------------------------------------------------------- building

namespace {

Status ValidateRerun(const RerunResult& r) {
  if (!std::isfinite(r.latency_ns) || r.latency_ns <= 0) {
    return Status::InvalidInput("the re-run's latency must be a positive number of nanoseconds");
  }
  if (!std::isfinite(r.ratio) || r.ratio <= 0) return Status::InvalidInput("the re-run's ratio must be a positive number");
  if (r.machine.empty()) return Status::InvalidInput("the re-run must name the machine it ran on");
  return Status::OK();
}

Json RerunJson(const RerunResult& r) {
  Json j = {{"runDigest", r.run.str()},
            {"latencyNs", r.latency_ns},
            {"ratio", r.ratio},
            {"passed", r.passed},
            {"machine", r.machine}};
  if (r.environment) j["environmentDigest"] = r.environment->str();
  if (r.verdict) j["verdict"] = *r.verdict;
  return j;
}

// An RFC 3339 date-time in UTC, as ki writes it: YYYY-MM-DDTHH:MM:SS, an
// optional fraction of a second, then Z (a leap second's :60 allowed).
bool IsRfc3339Utc(std::string_view t) {
  auto num = [&](size_t at, size_t n, int lo, int hi) {
    if (at + n > t.size()) return false;
    int v = 0;
    for (size_t i = at; i < at + n; ++i) {
      if (t[i] < '0' || t[i] > '9') return false;
      v = v * 10 + (t[i] - '0');
    }
    return v >= lo && v <= hi;
  };
  if (t.size() < 20 || t[4] != '-' || t[7] != '-' || t[10] != 'T' || t[13] != ':' || t[16] != ':') return false;
  if (!num(0, 4, 0, 9999) || !num(5, 2, 1, 12) || !num(8, 2, 1, 31) || !num(11, 2, 0, 23) || !num(14, 2, 0, 59) ||
      !num(17, 2, 0, 60)) {
    return false;
  }
  size_t i = 19;
  if (t[i] == '.') {
    size_t digits = 0;
    while (++i < t.size() && t[i] >= '0' && t[i] <= '9') ++digits;
    if (digits == 0) return false;
  }
  return i + 1 == t.size() && t[i] == 'Z';
}

// Checks the predicate of a ki predicate type; "" when it is well-formed.
std::string PredicateProblem(PredicateKind kind, const Json& p) {
  if (!p.is_object()) return "the predicate is not an object";
  // Every ki predicate names its signer (docs/format.md, "Statement"): the
  // signing key, its key id, and the name it was made under. Shown and used
  // to check signatures, so it must say one thing and say it consistently.
  if (!p.contains("signer")) return "`signer` is missing";
  const Json& signer = p["signer"];
  if (!signer.is_object()) return "`signer` is not an object";
  for (const char* f : {"keyid", "publicKey", "name"})
    if (!signer.contains(f) || !signer[f].is_string())
      return std::string("`signer.") + f + "` is missing or not a string";
  auto signer_key = PublicKey::Parse(signer["publicKey"].get<std::string>());
  if (!signer_key.ok()) return "`signer.publicKey` is not an Ed25519 public key (ed25519:<base64 of 32 bytes>)";
  if (signer["keyid"].get<std::string>() != signer_key->KeyId())
    return "`signer.keyid` is not the key id of `signer.publicKey` (" + ShortKeyId(signer_key->KeyId()) + "…)";
  if (signer["name"].get<std::string>().empty()) return "`signer.name` is empty";
  // Every ki predicate says when it was signed (docs/format.md, "Predicates");
  // it is shown and passed on by verify --json, so it is one thing only.
  if (!p.contains("signedAt")) return "`signedAt` is missing";
  if (!p["signedAt"].is_string() || !IsRfc3339Utc(p["signedAt"].get<std::string>()))
    return "`signedAt` is not an RFC 3339 UTC time (YYYY-MM-DDTHH:MM:SSZ)";
  if (p.contains("note") && !p["note"].is_string()) return "`note` is not a string";
  if (p.contains("rerun") || kind == PredicateKind::kReproduced) {
    if (!p.contains("rerun") || !p["rerun"].is_object()) return "a `reproduced` predicate needs a `rerun` object";
    const Json& r = p["rerun"];
    if (!r.contains("runDigest") || !r["runDigest"].is_string() ||
        !Digest::IsValid(r["runDigest"].get<std::string>())) {
      return "`rerun.runDigest` is not a digest";
    }
    if (!r.contains("latencyNs") || !FiniteNumber(r["latencyNs"]) || r["latencyNs"].get<double>() <= 0)
      return "`rerun.latencyNs` is not a positive number";
    if (!r.contains("ratio") || !FiniteNumber(r["ratio"]) || r["ratio"].get<double>() <= 0)
      return "`rerun.ratio` is not a positive number";
    if (!r.contains("passed") || !r["passed"].is_boolean()) return "`rerun.passed` is not a boolean";
    if (!r.contains("machine") || !r["machine"].is_string() || r["machine"].get<std::string>().empty())
      return "`rerun.machine` is not a non-empty string";
    if (r.contains("verdict")) {
      const Json& v = r["verdict"];
      const std::string outcome = v.is_object() && v.contains("outcome") && v["outcome"].is_string()
                                      ? v["outcome"].get<std::string>() : "";
      if (outcome != "reproduced" && outcome != "not-reproduced" && outcome != "inconclusive")
        return "`rerun.verdict.outcome` is not reproduced, not-reproduced or inconclusive";
      if (!v.contains("test") || !v["test"].is_string()) return "`rerun.verdict.test` is not a string";
      if (!v.contains("tolerance") || !FiniteNumber(v["tolerance"]) || v["tolerance"].get<double>() < 0)
        return "`rerun.verdict.tolerance` is not a number >= 0";
    }
  }
  if (p.contains("evidence")) {
    if (!p["evidence"].is_array()) return "`evidence` is not an array";
    for (const Json& e : p["evidence"])
      if (!e.is_object() || !e.contains("digest") || !e["digest"].is_string() ||
          !Digest::IsValid(e["digest"].get<std::string>()))
        return "an `evidence` entry has no digest";
  }
  return "";
}

}  // namespace

Status CheckAttestationRequest(const AttestationRequest& req) {
  if (req.predicate == PredicateKind::kReproduced && !req.rerun) {
    return Status::InvalidInput("a `reproduced` attestation needs the re-run's result (run digest, latency, ratio, machine)");
  }
  if (req.predicate == PredicateKind::kDisputed && req.note.empty() && req.evidence.empty() && !req.rerun) {
    return Status::InvalidInput("a `disputed` attestation needs evidence: a note, evidence objects, or a re-run result");
  }
  if (!req.signed_at.empty() && !IsRfc3339Utc(req.signed_at)) {
    return Status::InvalidInput("signedAt `" + req.signed_at + "` is not an RFC 3339 UTC time (YYYY-MM-DDTHH:MM:SSZ)");
  }
  if (req.rerun) return ValidateRerun(*req.rerun);
  return Status::OK();
}

Result<std::string> BuildAttestation(Store& store, const SigningKey& key, const AttestationRequest& req) {
  KI_RETURN_IF_ERROR(CheckAttestationRequest(req));
  KI_ASSIGN_OR_RETURN(auto info, store.Stat(req.subject));
  if (!info) {
    return Status::NotFound("cannot attest " + req.subject.str() + ": this store does not hold its bytes");
  }
  Json predicate = {{"signer", {{"keyid", key.public_key().KeyId()},
                                {"publicKey", key.public_key().ToString()},
                                {"name", key.name()}}},
                    {"signedAt", req.signed_at.empty() ? UtcNow() : req.signed_at}};
  if (!req.note.empty()) predicate["note"] = req.note;
  if (req.rerun) predicate["rerun"] = RerunJson(*req.rerun);
  if (!req.evidence.empty()) {
    Json ev = Json::array();
    for (const Digest& d : req.evidence) ev.push_back({{"digest", d.str()}});
    predicate["evidence"] = ev;
  }
  std::string name;
  std::string kind = info->type == ObjectType::kBlob ? "blob" : std::string(KindName(*info->kind));
  KI_ASSIGN_OR_RETURN(auto names, store.NamesOf(req.subject));
  name = names.empty() ? kind : names.front();
  Json statement = {{"_type", kInTotoStatementType},
                    {"subject", Json::array({{{"name", name},
                                              {"digest", {{"sha256", req.subject.hex()}}},
                                              {"annotations", {{"kind", kind}}}}})},
                    {"predicateType", PredicateTypeUri(req.predicate)},
                    {"predicate", predicate}};
  auto payload = Canonicalize(statement);
  if (!payload.ok()) return payload.status().WithContext("the statement");
  DsseEnvelope env;
  env.payload_type = std::string(kInTotoPayloadType);
  env.payload = std::move(payload).value();
  env.signatures.push_back({key.public_key().KeyId(), key.Sign(PreAuthEncoding(env.payload_type, env.payload))});
  return SerializeEnvelope(env);
}

Result<PutResult> CreateAttestation(Store& store, const SigningKey& key, const AttestationRequest& req) {
  KI_ASSIGN_OR_RETURN(std::string bytes, BuildAttestation(store, key, req));
  // Check what is about to be written (as restic verifies before upload):
  // a fault here is a bug, and nothing is stored.
  KeySources self;
  self.local.push_back({key.name(), key.public_key(), KeyProtection::kNone, ""});
  AttestationReport check = CheckEnvelope(bytes, Sha256Of(bytes), req.subject, self);
  if (check.fault()) return Status::VerifyFailed("the new attestation does not verify: " + check.problem());
  KI_ASSIGN_OR_RETURN(auto batch, store.NewBatch());
  // Filed under its subject by the attestation index at Commit.
  KI_ASSIGN_OR_RETURN(PutResult put, batch->PutBlob(bytes, kEnvelopeMediaType));
  KI_RETURN_IF_ERROR(batch->Commit());
  return put;
}

// ---------------------------------------------------------------- checking

bool AttestationReport::fault() const {
  for (const auto& c : checks)
    if (!c.ok) return true;
  for (const auto& s : signatures)
    if (s.state == SignatureState::kInvalid) return true;
  return false;
}

std::string AttestationReport::problem() const {
  for (const auto& c : checks)
    if (!c.ok) return c.name + ": " + c.detail;
  for (const auto& s : signatures)
    if (s.state == SignatureState::kInvalid)
      return "signature by " + (s.signer.empty() ? "key " + ShortKeyId(s.keyid) : s.signer) +
             " does not verify (payload or signature altered)";
  return "";
}

std::vector<const SignatureCheck*> AttestationReport::TrustedSignatures(std::optional<Role> role) const {
  std::vector<const SignatureCheck*> out;
  if (fault()) return out;
  for (const auto& s : signatures)
    if (s.state == SignatureState::kTrusted && (!role || s.role == role)) out.push_back(&s);
  return out;
}

bool AttestationReport::TrustedBy(std::optional<Role> role) const { return !TrustedSignatures(role).empty(); }

Json AttestationReport::ToJson() const {
  Json checks_j = Json::array(), sigs = Json::array();
  for (const auto& c : checks) {
    Json j = {{"check", c.name}, {"ok", c.ok}};
    if (!c.detail.empty()) j["detail"] = c.detail;
    checks_j.push_back(j);
  }
  for (const auto& s : signatures) {
    Json j = {{"keyid", s.keyid}, {"state", std::string(SignatureStateName(s.state))}};
    if (!s.signer.empty()) j["signer"] = s.signer;
    if (s.role) j["role"] = std::string(RoleName(*s.role));
    if (!s.key_source.empty()) j["keySource"] = s.key_source;
    sigs.push_back(j);
  }
  Json j = {{"envelope", envelope.str()}, {"subject", subject.str()}, {"ok", !fault()},
            {"trusted", TrustedBy()},     {"checks", checks_j},       {"signatures", sigs}};
  if (predicate) j["predicate"] = std::string(PredicateName(*predicate));
  if (!predicate_type.empty()) j["predicateType"] = predicate_type;
  if (predicate_body.is_object()) {
    for (const char* f : {"signedAt", "note", "rerun", "evidence"})
      if (predicate_body.contains(f)) j[f] = predicate_body[f];
  }
  if (fault()) j["problem"] = problem();
  return j;
}

namespace {

bool VerifySig(const PublicKey& key, const std::string& pae, const std::string& sig) {
  return sig.size() == crypto_sign_BYTES &&
         crypto_sign_verify_detached(reinterpret_cast<const unsigned char*>(sig.data()),
                                     reinterpret_cast<const unsigned char*>(pae.data()), pae.size(),
                                     key.bytes.data()) == 0;
}

struct Candidate {
  PublicKey key;
  SignatureState state;
  std::string signer, source;
  std::optional<Role> role;
};

// Keys that could have made a signature with this key id, most
// authoritative first. An empty key id (DSSE allows it) tries them all.
std::vector<Candidate> CandidatesFor(const std::string& keyid, const KeySources& keys,
                                     const std::optional<PublicKey>& stated, const std::string& stated_name) {
  std::vector<Candidate> out;
  auto match = [&](const std::string& id) { return keyid.empty() || keyid == id; };
  for (const auto& e : keys.trust.trusted())
    if (match(e.keyid)) out.push_back({e.key, SignatureState::kTrusted, e.name, "trust", e.role});
  for (const auto& e : keys.trust.revoked())
    if (match(e.keyid)) out.push_back({e.key, SignatureState::kRevoked, e.name, "revoked", std::nullopt});
  for (const auto& k : keys.local)
    if (match(k.key.KeyId())) out.push_back({k.key, SignatureState::kUntrusted, k.name, "keyring", std::nullopt});
  // A name the statement gives itself proves nothing: it is shown as such.
  if (stated && match(stated->KeyId()))
    out.push_back({*stated, SignatureState::kUntrusted, stated_name.empty() ? "" : "self-declared:" + stated_name,
                   "statement", std::nullopt});
  return out;
}

// Each signature against the keys that could have made it.
std::vector<SignatureCheck> CheckSignatures(const DsseEnvelope& env, const std::string& pae,
                                            const KeySources& keys, const std::optional<PublicKey>& stated,
                                            const std::string& stated_name) {
  std::vector<SignatureCheck> out;
  for (const auto& sig : env.signatures) {
    SignatureCheck c;
    c.keyid = sig.keyid;
    std::vector<Candidate> cands = CandidatesFor(sig.keyid, keys, stated, stated_name);
    if (cands.empty()) {
      c.state = SignatureState::kUnknownKey;
    } else {
      bool found = false;
      for (const auto& k : cands) {
        if (!VerifySig(k.key, pae, sig.sig)) continue;
        c.state = k.state;
        c.signer = k.signer;
        c.role = k.role;
        c.key_source = k.source;
        if (c.keyid.empty()) c.keyid = k.key.KeyId();
        found = true;
        break;
      }
      if (!found) {
        // With a key id the key is known and the signature is wrong; with no
        // key id we only know that none of our keys made it.
        c.state = sig.keyid.empty() ? SignatureState::kUnknownKey : SignatureState::kInvalid;
        c.signer = cands.front().signer;
        c.key_source = cands.front().source;
      }
    }
    out.push_back(std::move(c));
  }
  return out;
}

bool AnyInvalid(const std::vector<SignatureCheck>& sigs) {
  for (const auto& s : sigs)
    if (s.state == SignatureState::kInvalid) return true;
  return false;
}

}  // namespace

AttestationReport CheckEnvelope(std::string_view bytes, const Digest& envelope, const Digest& subject,
                                const KeySources& keys) {
  EnsureSodium();
  AttestationReport r;
  r.envelope = envelope;
  r.subject = subject;
  auto fail = [&](std::string name, std::string detail) { r.checks.push_back({std::move(name), false, std::move(detail)}); };
  auto pass = [&](std::string name, std::string detail = "") { r.checks.push_back({std::move(name), true, std::move(detail)}); };

  std::string stage;
  auto parsed = sign_internal::ParseEnvelopeStaged(bytes, &stage);
  if (!parsed.ok()) {
    // Every stage before the failing one passed.
    if (stage != "envelope") pass("envelope");
    if (stage == "signatures") pass("encoding");
    fail(stage, parsed.status().message());
    return r;
  }
  const DsseEnvelope& env = *parsed;
  pass("envelope");
  pass("encoding");
  pass("signatures", std::to_string(env.signatures.size()));

  // DSSE's order: the signatures are checked over the exact PAE bytes
  // first, and the payload is read only when no key we know says it was
  // altered. A payload (or payloadType, which PAE covers) edited into
  // something that no longer parses, or that lacks a predicate field, is
  // reported as the failed signature it is.
  const std::string pae = PreAuthEncoding(env.payload_type, env.payload);
  r.signatures = CheckSignatures(env, pae, keys, std::nullopt, "");
  if (AnyInvalid(r.signatures)) return r;
  if (env.payload_type != kInTotoPayloadType) {
    fail("payloadType", "`" + env.payload_type + "`, expected `" + std::string(kInTotoPayloadType) + "`");
  } else {
    pass("payloadType");
  }

  // The statement. Its content is only believed once a signature verifies;
  // the signer key it names is used to check signatures, never to trust them
  // (when no key we hold made a signature, the statement is read for the
  // key it names, and its signatures are checked again with that key).
  const size_t first_statement_check = r.checks.size();
  std::optional<PublicKey> stated;
  std::string stated_name;
  auto doc = ParseDocument(env.payload, DocFormat::kJson, "statement");
  const Json* statement = nullptr;
  if (!doc.ok()) {
    fail("statement", "the payload is not JSON: " + doc.status().message());
  } else if (StringOr(*doc, "_type") != kInTotoStatementType) {  // a `_type` of 5 is no Statement (and must not throw)
    fail("statement", "the payload is not an in-toto Statement v1 (`_type` is not " +
                          std::string(kInTotoStatementType) + ")");
  } else if (!(*doc).contains("subject") || !(*doc)["subject"].is_array() || (*doc)["subject"].empty()) {
    fail("statement", "the statement has no subject");
  } else if (!(*doc).contains("predicateType") || !(*doc)["predicateType"].is_string()) {
    fail("statement", "the statement has no predicateType");
  } else {
    statement = &*doc;
    pass("statement");
  }
  if (statement) {
    const Json& st = *statement;
    bool match = false;
    std::string named;
    for (const Json& s : st["subject"]) {
      if (!s.is_object() || !s.contains("digest") || !s["digest"].is_object()) continue;
      const Json& d = s["digest"];
      if (d.contains("sha256") && d["sha256"].is_string()) {
        std::string hex = d["sha256"].get<std::string>();
        if (named.empty()) named = "sha256:" + hex;
        if (hex == subject.hex()) match = true;
      }
    }
    if (match) {
      pass("subject", subject.str());
    } else {
      fail("subject", "the statement is about " + (named.empty() ? std::string("no sha256 digest") : named) +
                          ", not " + subject.str() + " (a signature moved onto another subject?)");
    }
    r.predicate_type = st["predicateType"].get<std::string>();
    r.predicate = PredicateFromUri(r.predicate_type);
    r.predicate_body = st.contains("predicate") ? st["predicate"] : Json();
    if (r.predicate) {
      std::string problem = PredicateProblem(*r.predicate, r.predicate_body);
      if (problem.empty()) {
        // The signer is the key that signed: one of the signatures carries
        // its key id (or, with no key id, verifies with it). A statement
        // naming someone who did not sign it misstates who vouches.
        const PublicKey key = *PublicKey::Parse(r.predicate_body["signer"]["publicKey"].get<std::string>());
        const std::string id = key.KeyId();
        bool signed_it = false;
        for (const auto& sig : env.signatures)
          signed_it = signed_it || sig.keyid == id || (sig.keyid.empty() && VerifySig(key, pae, sig.sig));
        if (!signed_it)
          problem = "`signer` names key " + ShortKeyId(id) + ", which made none of the envelope's signatures";
      }
      if (problem.empty()) pass("predicate", std::string(PredicateName(*r.predicate)));
      else fail("predicate", problem);
    } else {
      pass("predicate", "not a ki predicate type: shown, never counted");
    }
    if (r.predicate_body.is_object() && r.predicate_body.contains("signer") &&
        r.predicate_body["signer"].is_object()) {
      const Json& s = r.predicate_body["signer"];
      if (s.contains("publicKey") && s["publicKey"].is_string()) {
        if (auto pk = PublicKey::Parse(s["publicKey"].get<std::string>()); pk.ok()) stated = *pk;
      }
      if (s.contains("name") && s["name"].is_string()) stated_name = s["name"].get<std::string>();
    }
  }

  if (stated) {
    r.signatures = CheckSignatures(env, pae, keys, stated, stated_name);
    if (AnyInvalid(r.signatures)) {
      // Everything read from the statement above came from bytes that no
      // key vouches for: none of it is reported.
      r.checks.resize(first_statement_check);
      r.predicate.reset();
      r.predicate_type.clear();
      r.predicate_body = Json();
    }
  }
  return r;
}

// ---------------------------------------------------------------- store

Result<std::vector<Digest>> ListAttestations(Store& store, const Digest& subject) {
  std::vector<Digest> out;
  KI_RETURN_IF_ERROR(store.Scan(kAttestationTable, subject.raw(), [&](std::string_view k, std::string_view) {
    if (k.size() == 64) out.push_back(Digest::FromRaw(k.substr(32)));
    return true;
  }));
  return out;
}

Result<std::vector<std::pair<Digest, std::string>>> ListAttestationRows(Store& store, const Digest& subject) {
  std::vector<std::pair<Digest, std::string>> out;
  KI_RETURN_IF_ERROR(store.Scan(kAttestationTable, subject.raw(), [&](std::string_view k, std::string_view v) {
    if (k.size() == 64) out.emplace_back(Digest::FromRaw(k.substr(32)), std::string(v));
    return true;
  }));
  return out;
}

Status FileAttestationRow(Batch& batch, const Digest& subject, const Digest& envelope, std::string_view value) {
  // The attestation index (index.cc) files every envelope a batch stores
  // under its statement's subjects, with "": a row is derived from the
  // envelope, so what a remote's row said beside it is not kept (audit
  // would find it differing from what the objects give). Filed here too,
  // for an envelope the store held already.
  (void)value;
  std::string key(subject.raw());
  key.append(envelope.raw());
  KI_ASSIGN_OR_RETURN(auto have, batch.Get(kAttestationTable, key));
  if (have) return Status::OK();
  return batch.Put(kAttestationTable, key, "");
}

namespace {

AttestationReport CheckStored(Store& store, const Digest& subject, const Digest& envelope, const KeySources& keys) {
  auto bytes = store.Read(envelope);
  if (!bytes.ok()) {
    AttestationReport r;
    r.envelope = envelope;
    r.subject = subject;
    r.checks.push_back({"stored", false,
                        bytes.status().IsNotFound() ? "the envelope is not in this store"
                                                    : bytes.status().message()});
    return r;
  }
  AttestationReport r = CheckEnvelope(*bytes, envelope, subject, keys);
  r.checks.insert(r.checks.begin(), CheckItem{"stored", true, ""});
  return r;
}

}  // namespace

Result<std::vector<AttestationReport>> VerifyAttestations(Store& store, const Digest& subject,
                                                          const KeySources& keys) {
  KI_ASSIGN_OR_RETURN(auto envelopes, ListAttestations(store, subject));
  std::vector<AttestationReport> out;
  for (const Digest& e : envelopes) out.push_back(CheckStored(store, subject, e, keys));
  return out;
}

Result<std::pair<PutResult, AttestationReport>> ImportAttestation(Store& store, std::string_view bytes,
                                                                 std::optional<Digest> subject,
                                                                 const KeySources& keys) {
  KI_ASSIGN_OR_RETURN(DsseEnvelope env, ParseEnvelope(bytes));
  if (!subject) {
    // Signatures before payload (DSSE), here too: the subject is read from
    // the statement only when no key we know says the payload was altered.
    EnsureSodium();
    AttestationReport pre;
    pre.signatures = CheckSignatures(env, PreAuthEncoding(env.payload_type, env.payload), keys, std::nullopt, "");
    if (AnyInvalid(pre.signatures)) return Status::VerifyFailed("not stored: " + pre.problem());
    auto subjects = StatementSubjects(env.payload);
    if (!subjects.empty()) subject = subjects.front();
    if (!subject) return Status::InvalidInput("the envelope's statement names no sha256 subject");
  }
  Digest digest = Sha256Of(bytes);
  AttestationReport r = CheckEnvelope(bytes, digest, *subject, keys);
  if (r.fault()) {
    bool structural = false;
    for (const auto& c : r.checks)
      if (!c.ok && c.name != "subject") structural = true;
    std::string msg = "not stored: " + r.problem();
    return structural ? Status::InvalidInput(msg) : Status::VerifyFailed(msg);
  }
  KI_ASSIGN_OR_RETURN(auto info, store.Stat(*subject));
  if (!info) return Status::NotFound("not stored: this store does not hold the subject " + subject->str());
  KI_ASSIGN_OR_RETURN(auto batch, store.NewBatch());
  // Filed under its subject by the attestation index at Commit.
  KI_ASSIGN_OR_RETURN(PutResult put, batch->PutBlob(bytes, kEnvelopeMediaType));
  KI_RETURN_IF_ERROR(batch->Commit());
  return std::make_pair(put, std::move(r));
}

size_t AttestationAudit::faults() const {
  return size_t(std::count_if(reports.begin(), reports.end(), [](const auto& r) { return r.fault(); }));
}

Result<AttestationAudit> AuditAttestations(Store& store, const KeySources& keys) {
  AttestationAudit audit;
  std::vector<std::pair<Digest, Digest>> entries;
  std::vector<std::string> bad_keys;
  KI_RETURN_IF_ERROR(store.Scan(kAttestationTable, "", [&](std::string_view k, std::string_view) {
    if (k.size() == 64) entries.emplace_back(Digest::FromRaw(k.substr(0, 32)), Digest::FromRaw(k.substr(32)));
    else bad_keys.push_back(std::string(k));
    return true;
  }));
  std::set<Digest> filed;
  for (const auto& [subject, envelope] : entries) {
    filed.insert(envelope);
    audit.reports.push_back(CheckStored(store, subject, envelope, keys));
    KI_ASSIGN_OR_RETURN(auto held, store.Stat(subject));
    if (!held) {
      KI_ASSIGN_OR_RETURN(auto absent, store.StatAbsent(subject));
      audit.notes.push_back("attestation " + envelope.str() + " is about " + subject.str() +
                            (absent ? ", which this store knows of but does not hold"
                                    : ", which this store does not know"));
    }
  }
  for (const auto& k : bad_keys) {
    AttestationReport r;
    r.checks.push_back({"index", false, "malformed entry in " + std::string(kAttestationTable) + " (" +
                                            std::to_string(k.size()) + "-byte key)"});
    audit.reports.push_back(std::move(r));
  }
  std::vector<Digest> envelopes;
  KI_RETURN_IF_ERROR(store.ForEachObject([&](const ObjectInfo& info) {
    if (info.type == ObjectType::kBlob && info.media_type == kEnvelopeMediaType) envelopes.push_back(info.digest);
    return true;
  }));
  for (const Digest& e : envelopes) {
    if (!filed.count(e)) audit.notes.push_back("envelope " + e.str() + " is not filed as an attestation of any object");
  }
  return audit;
}

}  // namespace ki
