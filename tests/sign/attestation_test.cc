// Attestations: DSSE envelopes over stored subjects, how they verify, and every way one is a fault (src/sign/).
#include "ki/sign.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <functional>
#include <future>
#include <optional>

#include "testutil/fault_env.h"
#include "testutil/testutil.h"

namespace ki {
namespace {

using test::TempDir;

// ---------------------------------------------------------------- attestations

class AttestationTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto s = Store::Init(dir_.path());
    ASSERT_OK(s);
    store_ = std::move(s).value();
    auto batch = store_->NewBatch();
    ASSERT_OK(batch);
    auto a = (*batch)->PutBlob("subject A", "text/plain");
    auto b = (*batch)->PutBlob("subject B", "text/plain");
    ASSERT_OK(a);
    ASSERT_OK(b);
    ASSERT_OK((*batch)->Commit());
    subject_a_ = a->digest;
    subject_b_ = b->digest;
    auto t = TrustStore::Load(dir_.Join("trust.json"));
    ASSERT_OK(t);
    keys_.trust = std::move(t).value();
    ASSERT_OK(keys_.trust.Add(runner_.public_key(), "runner", Role::kRunner));
  }

  AttestationRequest Reviewed(const Digest& d) {
    AttestationRequest r;
    r.subject = d;
    r.predicate = PredicateKind::kReviewed;
    r.note = "fine";
    return r;
  }

  // Files raw envelope bytes under `subject`, bypassing every check (what a
  // damaged or malicious store could hold).
  Digest FileRaw(const Digest& subject, const std::string& bytes) {
    auto batch = store_->NewBatch();
    EXPECT_OK(batch);
    auto put = (*batch)->PutBlob(bytes, kEnvelopeMediaType);
    EXPECT_OK(put);
    EXPECT_OK((*batch)->Put(kAttestationTable, std::string(subject.raw()) + std::string(put->digest.raw()), ""));
    EXPECT_OK((*batch)->Commit());
    return put->digest;
  }

  AttestationReport Only(const Digest& subject) {
    auto r = VerifyAttestations(*store_, subject, keys_);
    EXPECT_OK(r);
    EXPECT_EQ(r->size(), 1u);
    return r->empty() ? AttestationReport{} : (*r)[0];
  }

  std::string GoodEnvelope() {
    auto b = BuildAttestation(*store_, runner_, Reviewed(subject_a_));
    EXPECT_OK(b);
    return *b;
  }

  TempDir dir_;
  std::unique_ptr<Store> store_;
  Digest subject_a_, subject_b_;
  SigningKey runner_ = SigningKey::Generate("runner");
  KeySources keys_;
};

TEST_F(AttestationTest, CreateStoresAndVerifies) {
  auto put = CreateAttestation(*store_, runner_, Reviewed(subject_a_));
  ASSERT_OK(put);
  auto info = store_->Stat(put->digest);
  ASSERT_OK(info);
  ASSERT_TRUE(info->has_value());
  EXPECT_EQ((*info)->media_type, kEnvelopeMediaType);
  AttestationReport r = Only(subject_a_);
  EXPECT_FALSE(r.fault()) << r.problem();
  EXPECT_TRUE(r.TrustedBy(Role::kRunner));
  ASSERT_EQ(r.signatures.size(), 1u);
  EXPECT_EQ(r.signatures[0].signer, "runner");
  EXPECT_EQ(r.predicate, PredicateKind::kReviewed);
  EXPECT_EQ(r.predicate_body["note"], "fine");
  // The envelope is what DSSE says: canonical JSON with a base64 statement.
  auto bytes = store_->Read(put->digest);
  ASSERT_OK(bytes);
  auto env = ParseEnvelope(*bytes);
  ASSERT_OK(env);
  EXPECT_EQ(env->payload_type, kInTotoPayloadType);
  auto st = ParseDocument(env->payload, DocFormat::kJson, "t");
  ASSERT_OK(st);
  EXPECT_EQ((*st)["_type"], kInTotoStatementType);
  EXPECT_EQ((*st)["subject"][0]["digest"]["sha256"], subject_a_.hex());
  EXPECT_EQ((*st)["predicateType"], PredicateTypeUri(PredicateKind::kReviewed));
  // Nothing under the other subject.
  auto none = VerifyAttestations(*store_, subject_b_, keys_);
  ASSERT_OK(none);
  EXPECT_TRUE(none->empty());
}

TEST_F(AttestationTest, UntrustedRevokedAndUnknownKeys) {
  SigningKey stranger = SigningKey::Generate("stranger");
  ASSERT_OK(CreateAttestation(*store_, stranger, Reviewed(subject_a_)));
  AttestationReport r = Only(subject_a_);
  EXPECT_FALSE(r.fault());
  EXPECT_FALSE(r.TrustedBy());
  EXPECT_EQ(r.signatures[0].state, SignatureState::kUntrusted);
  EXPECT_EQ(r.signatures[0].key_source, "statement");
  EXPECT_EQ(r.signatures[0].signer, "self-declared:stranger");

  ASSERT_OK(CreateAttestation(*store_, runner_, Reviewed(subject_b_)));
  ASSERT_OK(keys_.trust.Remove("runner"));
  r = Only(subject_b_);
  EXPECT_FALSE(r.fault());
  EXPECT_EQ(r.signatures[0].state, SignatureState::kRevoked);
  EXPECT_FALSE(r.TrustedBy());

  // A key id nobody knows and no signer key in the statement: unknown. (A
  // predicate of another tool's type: ki's own must name their signer.)
  auto env = ParseEnvelope(GoodEnvelope());
  ASSERT_OK(env);
  Json st = *ParseDocument(env->payload, DocFormat::kJson, "t");
  st["predicate"].erase("signer");
  st["predicateType"] = "https://example.com/other-tool/v1";
  env->payload = *Canonicalize(st);
  env->signatures[0].keyid = std::string(64, 'a');
  env->signatures[0].sig = runner_.Sign(PreAuthEncoding(env->payload_type, env->payload));
  std::string bytes = SerializeEnvelope(*env);
  AttestationReport u = CheckEnvelope(bytes, Sha256Of(bytes), subject_a_, keys_);
  EXPECT_FALSE(u.fault());
  EXPECT_EQ(u.signatures[0].state, SignatureState::kUnknownKey);
}

TEST_F(AttestationTest, TamperedPayloadIsAFault) {
  auto env = ParseEnvelope(GoodEnvelope());
  ASSERT_OK(env);
  size_t p = env->payload.find("fine");
  env->payload.replace(p, 4, "FINE");
  FileRaw(subject_a_, SerializeEnvelope(*env));
  AttestationReport r = Only(subject_a_);
  EXPECT_TRUE(r.fault());
  EXPECT_EQ(r.signatures[0].state, SignatureState::kInvalid);
  EXPECT_NE(r.problem().find("does not verify"), std::string::npos);
}

TEST_F(AttestationTest, TamperedSignatureIsAFault) {
  auto env = ParseEnvelope(GoodEnvelope());
  ASSERT_OK(env);
  env->signatures[0].sig[10] ^= 0x01;
  FileRaw(subject_a_, SerializeEnvelope(*env));
  AttestationReport r = Only(subject_a_);
  EXPECT_TRUE(r.fault());
  EXPECT_EQ(r.signatures[0].state, SignatureState::kInvalid);
}

TEST_F(AttestationTest, SignatureMovedOntoAnotherSubjectIsAFault) {
  // The same valid envelope filed under B...
  FileRaw(subject_b_, GoodEnvelope());
  AttestationReport r = Only(subject_b_);
  EXPECT_TRUE(r.fault());
  EXPECT_NE(r.problem().find("subject: the statement is about " + subject_a_.str()), std::string::npos);
  EXPECT_EQ(r.signatures[0].state, SignatureState::kTrusted);  // valid, yet never counted
  EXPECT_FALSE(r.TrustedBy());
  // ...or its signature put on a statement about B.
  auto env = ParseEnvelope(GoodEnvelope());
  ASSERT_OK(env);
  std::string payload = env->payload;
  size_t p = payload.find(subject_a_.hex());
  payload.replace(p, 64, subject_b_.hex());
  env->payload = payload;
  std::string bytes = SerializeEnvelope(*env);
  AttestationReport moved = CheckEnvelope(bytes, Sha256Of(bytes), subject_b_, keys_);
  EXPECT_TRUE(moved.fault());
  EXPECT_EQ(moved.signatures[0].state, SignatureState::kInvalid);
}

TEST_F(AttestationTest, WrongPayloadTypeIsAFault) {
  auto env = ParseEnvelope(GoodEnvelope());
  ASSERT_OK(env);
  env->payload_type = "application/json";
  // Re-signed properly over the new type: still refused, for its type.
  env->signatures[0].sig = runner_.Sign(PreAuthEncoding(env->payload_type, env->payload));
  FileRaw(subject_a_, SerializeEnvelope(*env));
  AttestationReport r = Only(subject_a_);
  EXPECT_TRUE(r.fault());
  EXPECT_EQ(r.problem().rfind("payloadType:", 0), 0u) << r.problem();
}

TEST_F(AttestationTest, MalformedFieldsAreFaults) {
  Json good = *ParseDocument(GoodEnvelope(), DocFormat::kJson, "t");
  struct Case {
    const char* what;
    std::function<void(Json&)> edit;
    const char* check;
  } cases[] = {
      {"truncated sig", [](Json& j) { j["signatures"][0]["sig"] = j["signatures"][0]["sig"].get<std::string>().substr(0, 40); }, "encoding"},
      {"non-base64 sig", [](Json& j) { j["signatures"][0]["sig"] = "%%%%"; }, "encoding"},
      {"non-base64 payload", [](Json& j) { j["payload"] = std::string("!").append(j["payload"].get<std::string>()); }, "encoding"},
      {"truncated payload", [](Json& j) { j["payload"] = j["payload"].get<std::string>().substr(0, 21); }, "encoding"},
      {"no signatures", [](Json& j) { j["signatures"] = Json::array(); }, "signatures"},
      {"signatures missing", [](Json& j) { j.erase("signatures"); }, "envelope"},
      {"payloadType missing", [](Json& j) { j.erase("payloadType"); }, "envelope"},
      {"not an object", [](Json& j) { j = Json::array(); }, "envelope"},
  };
  for (const auto& c : cases) {
    Json j = good;
    c.edit(j);
    std::string bytes = j.dump();
    AttestationReport r = CheckEnvelope(bytes, Sha256Of(bytes), subject_a_, keys_);
    EXPECT_TRUE(r.fault()) << c.what;
    EXPECT_EQ(r.problem().rfind(std::string(c.check) + ":", 0), 0u) << c.what << ": " << r.problem();
  }
  std::string not_json = "{\"payload\": ";
  EXPECT_TRUE(CheckEnvelope(not_json, Sha256Of(not_json), subject_a_, keys_).fault());
}

TEST_F(AttestationTest, MissingOrCorruptEnvelopeIsAFault) {
  Digest ghost = Sha256Of("never stored");
  auto batch = store_->NewBatch();
  ASSERT_OK(batch);
  ASSERT_OK((*batch)->Put(kAttestationTable, std::string(subject_a_.raw()) + std::string(ghost.raw()), ""));
  ASSERT_OK((*batch)->Commit());
  AttestationReport r = Only(subject_a_);
  EXPECT_TRUE(r.fault());
  EXPECT_EQ(r.problem().rfind("stored:", 0), 0u);
  auto audit = AuditAttestations(*store_, keys_);
  ASSERT_OK(audit);
  EXPECT_EQ(audit->faults(), 1u);
}

TEST_F(AttestationTest, ImportChecksBeforeStoring) {
  std::string good = GoodEnvelope();
  // Filed under the wrong subject: VerifyFailed, nothing stored.
  auto wrong = ImportAttestation(*store_, good, subject_b_, keys_);
  EXPECT_EQ(wrong.status().code(), Code::kVerifyFailed);
  auto env = ParseEnvelope(good);
  env->signatures.clear();
  Json j = *ParseDocument(SerializeEnvelope(*env), DocFormat::kJson, "t");
  EXPECT_TRUE(ImportAttestation(*store_, j.dump(), std::nullopt, keys_).status().IsInvalidInput());
  EXPECT_TRUE(ListAttestations(*store_, subject_a_)->empty());
  EXPECT_TRUE(ListAttestations(*store_, subject_b_)->empty());
  // The subject is read from the statement.
  auto ok = ImportAttestation(*store_, good, std::nullopt, keys_);
  ASSERT_OK(ok);
  EXPECT_EQ(ok->second.subject, subject_a_);
  EXPECT_EQ(ListAttestations(*store_, subject_a_)->size(), 1u);
}

TEST_F(AttestationTest, RequestsAreValidated) {
  AttestationRequest r = Reviewed(subject_a_);
  r.predicate = PredicateKind::kReproduced;
  EXPECT_TRUE(CreateAttestation(*store_, runner_, r).status().IsInvalidInput());
  r.rerun = RerunResult{subject_a_, 100, 1.0, true, "", std::nullopt};
  EXPECT_TRUE(CreateAttestation(*store_, runner_, r).status().IsInvalidInput());  // no machine
  r.rerun->machine = "m";
  r.rerun->latency_ns = std::nan("");
  EXPECT_TRUE(CreateAttestation(*store_, runner_, r).status().IsInvalidInput());
  AttestationRequest absent = Reviewed(Sha256Of("absent"));
  EXPECT_TRUE(CreateAttestation(*store_, runner_, absent).status().IsNotFound());
  AttestationRequest dispute = Reviewed(subject_a_);
  dispute.predicate = PredicateKind::kDisputed;
  dispute.note.clear();
  EXPECT_TRUE(CreateAttestation(*store_, runner_, dispute).status().IsInvalidInput());
  EXPECT_TRUE(ListAttestations(*store_, subject_a_)->empty());
}

// A statement whose `_type` is there but not a string made CheckEnvelope
// call nlohmann's value(), which throws: `ki verify` and `ki audit` of a
// store holding such an envelope (a pull stored one unchecked) ended with
// exit 5 and a raw library message, and so did `ki sign --envelope` of it.
// It is a fault of the statement, reported as any other.
TEST_F(AttestationTest, StatementTypeThatIsNotAStringIsAFaultNotAnException) {
  for (Json type : {Json(5), Json::object(), Json::array({std::string(kInTotoStatementType)}), Json(nullptr)}) {
    SCOPED_TRACE(type.dump());
    Json statement = {{"_type", type},
                      {"subject", Json::array({{{"name", "a"}, {"digest", {{"sha256", subject_a_.hex()}}}}})},
                      {"predicateType", PredicateTypeUri(PredicateKind::kReviewed)},
                      {"predicate", {{"note", "fine"}}}};
    DsseEnvelope env;
    env.payload_type = std::string(kInTotoPayloadType);
    env.payload = *Canonicalize(statement);
    env.signatures.push_back({runner_.public_key().KeyId(), runner_.Sign(PreAuthEncoding(env.payload_type, env.payload))});
    std::string bytes = SerializeEnvelope(env);
    AttestationReport direct = CheckEnvelope(bytes, Sha256Of(bytes), subject_a_, keys_);
    EXPECT_TRUE(direct.fault());
    EXPECT_EQ(direct.problem().rfind("statement:", 0), 0u) << direct.problem();
    // `ki sign --envelope` refuses it as malformed, with or without REF.
    EXPECT_TRUE(ImportAttestation(*store_, bytes, subject_a_, keys_).status().IsInvalidInput());
    EXPECT_TRUE(ImportAttestation(*store_, bytes, std::nullopt, keys_).status().IsInvalidInput());
  }
  // Filed regardless (what a store written by an older pull may hold):
  // verify and audit report it as a fault, from the library and the CLI.
  Json statement = {{"_type", 5},
                    {"subject", Json::array({{{"digest", {{"sha256", subject_a_.hex()}}}}})},
                    {"predicateType", PredicateTypeUri(PredicateKind::kReviewed)},
                    {"predicate", Json::object()}};
  DsseEnvelope env;
  env.payload_type = std::string(kInTotoPayloadType);
  env.payload = *Canonicalize(statement);
  env.signatures.push_back({runner_.public_key().KeyId(), runner_.Sign(PreAuthEncoding(env.payload_type, env.payload))});
  std::string bytes = SerializeEnvelope(env);
  FileRaw(subject_a_, bytes);
  AttestationReport r = Only(subject_a_);
  EXPECT_TRUE(r.fault());
  auto audit = AuditAttestations(*store_, keys_);
  ASSERT_OK(audit);
  EXPECT_EQ(audit->faults(), 1u);

  TempDir home;
  const std::string env_prefix = "KI_HOME=" + home.path();
  const std::string store = "--store " + dir_.path() + " ";
  auto verify = test::RunKi(store + "verify " + subject_a_.str(), env_prefix);
  EXPECT_EQ(verify.exit_code, 1) << verify.err;
  EXPECT_NE(verify.out.find("`_type` is not"), std::string::npos) << verify.out << verify.err;
  auto audit_cli = test::RunKi(store + "audit", env_prefix);
  EXPECT_EQ(audit_cli.exit_code, 1) << audit_cli.err;
  EXPECT_EQ(audit_cli.err.find("json.exception"), std::string::npos) << audit_cli.err;
  test::WriteFileOrDie(home.Join("env.json"), bytes);
  auto sign = test::RunKi(store + "sign " + subject_b_.str() + " --envelope " + home.Join("env.json"), env_prefix);
  EXPECT_EQ(sign.exit_code, 4) << sign.err;
  EXPECT_NE(sign.err.find("statement"), std::string::npos) << sign.err;
}

// Every ki predicate says when it was signed, as an RFC 3339 UTC time.
// signedAt was not checked: a statement with none, a number or "yesterday"
// counted like any other, and verify --json passed whatever it held on.
// Every ki predicate names its signer: {keyid, publicKey, name}, the key id
// that of the public key, and that key one of the envelope's signers. None
// of it was checked: a statement without a signer, with a key id of another
// key, or naming someone who never signed it counted like any other.
TEST_F(AttestationTest, SignerMustNameTheKeyThatSigned) {
  SigningKey other = SigningKey::Generate("other");
  const Json good_signer = {{"keyid", runner_.public_key().KeyId()},
                            {"publicKey", runner_.public_key().ToString()},
                            {"name", "runner"}};
  // The statement with `signer` set by `edit`, signed by `signers`.
  auto envelope_with = [&](const std::function<void(Json&)>& edit, std::vector<const SigningKey*> signers) {
    Json predicate = {{"note", "fine"}, {"signedAt", "2026-08-16T12:00:00Z"}, {"signer", good_signer}};
    edit(predicate);
    Json statement = {{"_type", kInTotoStatementType},
                      {"subject", Json::array({{{"name", "a"}, {"digest", {{"sha256", subject_a_.hex()}}}}})},
                      {"predicateType", PredicateTypeUri(PredicateKind::kReviewed)},
                      {"predicate", predicate}};
    DsseEnvelope env;
    env.payload_type = std::string(kInTotoPayloadType);
    env.payload = *Canonicalize(statement);
    for (const SigningKey* k : signers)
      env.signatures.push_back({k->public_key().KeyId(), k->Sign(PreAuthEncoding(env.payload_type, env.payload))});
    return SerializeEnvelope(env);
  };
  struct Bad {
    std::string what, message;
    std::function<void(Json&)> edit;
    std::vector<const SigningKey*> signers;
  };
  const std::vector<Bad> bad = {
      {"absent", "`signer` is missing", [](Json& p) { p.erase("signer"); }, {&runner_}},
      {"a string", "`signer` is not an object", [](Json& p) { p["signer"] = "runner"; }, {&runner_}},
      {"no keyid", "`signer.keyid` is missing", [](Json& p) { p["signer"].erase("keyid"); }, {&runner_}},
      {"no publicKey", "`signer.publicKey` is missing", [](Json& p) { p["signer"].erase("publicKey"); }, {&runner_}},
      {"name a number", "`signer.name` is missing or not a string", [](Json& p) { p["signer"]["name"] = 7; }, {&runner_}},
      {"empty name", "`signer.name` is empty", [](Json& p) { p["signer"]["name"] = ""; }, {&runner_}},
      {"bad publicKey", "`signer.publicKey` is not an Ed25519", [](Json& p) { p["signer"]["publicKey"] = "ed25519:AAAA"; },
       {&runner_}},
      {"keyid of another key", "`signer.keyid` is not the key id of `signer.publicKey`",
       [&](Json& p) { p["signer"]["keyid"] = other.public_key().KeyId(); }, {&runner_}},
      // Consistent, but `other` never signed: the statement misnames who vouches.
      {"a signer who did not sign", "which made none of the envelope's signatures",
       [&](Json& p) {
         p["signer"] = {{"keyid", other.public_key().KeyId()}, {"publicKey", other.public_key().ToString()},
                        {"name", "other"}};
       },
       {&runner_}},
  };
  for (const Bad& b : bad) {
    SCOPED_TRACE(b.what);
    std::string bytes = envelope_with(b.edit, b.signers);
    AttestationReport r = CheckEnvelope(bytes, Sha256Of(bytes), subject_a_, keys_);
    EXPECT_TRUE(r.fault());
    EXPECT_EQ(r.problem().rfind("predicate: ", 0), 0u) << r.problem();
    EXPECT_NE(r.problem().find(b.message), std::string::npos) << r.problem();
    EXPECT_FALSE(r.TrustedBy());
    EXPECT_TRUE(ImportAttestation(*store_, bytes, subject_a_, keys_).status().IsInvalidInput());
  }
  // The signer with co-signers, in any order, is fine.
  std::string bytes = envelope_with([](Json&) {}, {&other, &runner_});
  AttestationReport r = CheckEnvelope(bytes, Sha256Of(bytes), subject_a_, keys_);
  EXPECT_FALSE(r.fault()) << r.problem();
  EXPECT_TRUE(r.TrustedBy());
  // A signature without a key id (DSSE allows it) that verifies with the signer's key.
  auto env = ParseEnvelope(envelope_with([](Json&) {}, {&runner_}));
  ASSERT_OK(env);
  env->signatures[0].keyid.clear();
  bytes = SerializeEnvelope(*env);
  r = CheckEnvelope(bytes, Sha256Of(bytes), subject_a_, keys_);
  EXPECT_FALSE(r.fault()) << r.problem();
  // ...but not one that verifies only with another key.
  env = ParseEnvelope(envelope_with([](Json&) {}, {&other}));
  ASSERT_OK(env);
  env->signatures[0].keyid.clear();
  bytes = SerializeEnvelope(*env);
  r = CheckEnvelope(bytes, Sha256Of(bytes), subject_a_, keys_);
  EXPECT_TRUE(r.fault());
  EXPECT_NE(r.problem().find("which made none of the envelope's signatures"), std::string::npos) << r.problem();
}

TEST_F(AttestationTest, SignedAtMustBeAnRfc3339UtcTime) {
  auto envelope_with = [&](const std::optional<Json>& signed_at) {
    Json predicate = {{"note", "fine"},
                      {"signer", {{"keyid", runner_.public_key().KeyId()},
                                  {"publicKey", runner_.public_key().ToString()},
                                  {"name", "runner"}}}};
    if (signed_at) predicate["signedAt"] = *signed_at;
    Json statement = {{"_type", kInTotoStatementType},
                      {"subject", Json::array({{{"name", "a"}, {"digest", {{"sha256", subject_a_.hex()}}}}})},
                      {"predicateType", PredicateTypeUri(PredicateKind::kReviewed)},
                      {"predicate", predicate}};
    DsseEnvelope env;
    env.payload_type = std::string(kInTotoPayloadType);
    env.payload = *Canonicalize(statement);
    env.signatures.push_back(
        {runner_.public_key().KeyId(), runner_.Sign(PreAuthEncoding(env.payload_type, env.payload))});
    return SerializeEnvelope(env);
  };
  for (const std::optional<Json>& bad :
       {std::optional<Json>(), std::optional<Json>(Json(1786881600)), std::optional<Json>(Json("yesterday")),
        std::optional<Json>(Json("2026-13-01T00:00:00Z")), std::optional<Json>(Json("2026-08-16T24:00:00Z")),
        std::optional<Json>(Json("2026-08-16 12:00:00Z")), std::optional<Json>(Json("2026-08-16T12:00:00")),
        std::optional<Json>(Json("2026-08-16T12:00:00+02:00")), std::optional<Json>(Json("2026-08-16T12:00:00.Z")),
        std::optional<Json>(Json("2026-08-16T12:00:00Zjunk"))}) {
    SCOPED_TRACE(bad ? bad->dump() : "absent");
    std::string bytes = envelope_with(bad);
    AttestationReport r = CheckEnvelope(bytes, Sha256Of(bytes), subject_a_, keys_);
    EXPECT_TRUE(r.fault());
    EXPECT_EQ(r.problem().rfind("predicate: `signedAt`", 0), 0u) << r.problem();
    EXPECT_FALSE(r.TrustedBy());
    EXPECT_TRUE(ImportAttestation(*store_, bytes, subject_a_, keys_).status().IsInvalidInput());
  }
  for (const char* good : {"2026-08-16T12:00:00Z", "2026-08-16T12:00:00.123456Z", "2016-12-31T23:59:60Z"}) {
    SCOPED_TRACE(good);
    std::string bytes = envelope_with(Json(good));
    AttestationReport r = CheckEnvelope(bytes, Sha256Of(bytes), subject_a_, keys_);
    EXPECT_FALSE(r.fault()) << r.problem();
    EXPECT_TRUE(r.TrustedBy());
  }
  // What ki writes passes, with its own clock and with a given time.
  AttestationRequest req = Reviewed(subject_a_);
  EXPECT_OK(CreateAttestation(*store_, runner_, req));
  req.signed_at = "2026-08-16T12:00:00Z";
  EXPECT_OK(CreateAttestation(*store_, runner_, req));
  req.signed_at = "noon";
  EXPECT_TRUE(CheckAttestationRequest(req).IsInvalidInput());
  EXPECT_TRUE(CreateAttestation(*store_, runner_, req).status().IsInvalidInput());
}

// The attestation index is derived (issue 25.2): an envelope stored by any
// path is filed under its statement's subject; an entry deleted from the
// table is a store audit fault, and reindex files the envelope again.
TEST_F(AttestationTest, EnvelopesAreFiledByTheIndexAndAuditFindsALostEntry) {
  Digest envelope;
  {
    auto batch = store_->NewBatch();
    ASSERT_OK(batch);
    auto put = (*batch)->PutBlob(GoodEnvelope(), kEnvelopeMediaType);
    ASSERT_OK(put);
    envelope = put->digest;
    ASSERT_OK((*batch)->Commit());
  }
  auto listed = ListAttestations(*store_, subject_a_);
  ASSERT_OK(listed);
  EXPECT_EQ(*listed, std::vector<Digest>{envelope});
  auto audit = AuditAttestations(*store_, keys_);
  ASSERT_OK(audit);
  EXPECT_EQ(audit->reports.size(), 1u);
  EXPECT_TRUE(audit->notes.empty());

  const std::string key = std::string(subject_a_.raw()) + std::string(envelope.raw());
  {
    auto batch = store_->NewBatch();
    ASSERT_OK(batch);
    ASSERT_OK((*batch)->Delete(kAttestationTable, key));
    ASSERT_OK((*batch)->Commit());
  }
  auto damaged = store_->Audit();
  ASSERT_OK(damaged);
  ASSERT_EQ(damaged->faults.size(), 1u);
  EXPECT_EQ(damaged->faults[0].what,
            std::string(kAttestationTable) + " " + subject_a_.str() + " envelope " + envelope.str());
  EXPECT_NE(damaged->faults[0].detail.find("--reindex restores"), std::string::npos) << damaged->faults[0].detail;
  auto rebuilt = store_->Reindex();
  ASSERT_OK(rebuilt);
  EXPECT_TRUE(rebuilt->faults.empty());
  listed = ListAttestations(*store_, subject_a_);
  ASSERT_OK(listed);
  EXPECT_EQ(*listed, std::vector<Digest>{envelope});
}

}  // namespace
}  // namespace ki
