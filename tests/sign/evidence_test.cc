// Evidence levels: reported -> reproducible -> verified -> replicated, and
// disputes beside them (src/evidence/).
#include "ki/evidence.h"

#include "ki/manifest.h"
#include "testutil/testutil.h"

namespace ki {
namespace {

using test::TempDir;

class EvidenceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto s = Store::Init(dir_.path());
    ASSERT_OK(s);
    store_ = std::move(s).value();
    auto t = TrustStore::Load(dir_.Join("trust.json"));
    ASSERT_OK(t);
    KeySources keys;
    keys.trust = std::move(t).value();
    ASSERT_OK(keys.trust.Add(runner1_.public_key(), "runner1", Role::kRunner));
    ASSERT_OK(keys.trust.Add(runner2_.public_key(), "runner2", Role::kRunner));
    ASSERT_OK(keys.trust.Add(reviewer_.public_key(), "reviewer", Role::kReviewer));
    eval_ = std::make_unique<EvidenceEvaluator>(std::move(keys));
  }

  // An ImplementationRevision whose source is `source`, and a run of it whose
  // log is `log` (bytes are stored only when asked).
  Digest AddRun(bool store_source, bool store_log) {
    std::string source = "__global__ void k() {}", log = "run log: passed";
    auto impl_doc = ParseDocument(test::ReadFileOrDie(test::DataPath("kernelindex/examples/implementation-revision.yaml")),
                                  DocFormat::kYaml, "impl");
    EXPECT_OK(impl_doc);
    (*impl_doc)["spec"]["source"]["contentDigest"] = Sha256Of(source).str();
    auto impl = ManifestFromJson(*impl_doc, "impl");
    EXPECT_OK(impl);
    auto run_doc = ParseDocument(test::ReadFileOrDie(test::DataPath("kernelindex/examples/benchmark-run.yaml")),
                                 DocFormat::kYaml, "run");
    EXPECT_OK(run_doc);
    (*run_doc)["spec"]["implementationDigest"] = impl->digest.str();
    (*run_doc)["spec"]["timing"]["samples"] = 200 + runs_++;  // a distinct run each call
    (*run_doc)["spec"]["evidence"] = {
        {"logs", {{"uri", "kernelindex:artifact/" + Sha256Of(log).str()}, {"digest", Sha256Of(log).str()}}}};
    auto run = ManifestFromJson(*run_doc, "run");
    EXPECT_OK(run);
    auto batch = store_->NewBatch();
    EXPECT_OK(batch);
    EXPECT_OK((*batch)->PutManifest(*impl, std::nullopt, kDocumentMediaTypeJson));
    EXPECT_OK((*batch)->PutManifest(*run, std::nullopt, kDocumentMediaTypeJson));
    if (store_source) EXPECT_OK((*batch)->PutBlob(source, "text/x-cuda"));
    if (store_log) EXPECT_OK((*batch)->PutBlob(log, "text/plain"));
    EXPECT_OK((*batch)->Commit());
    return run->digest;
  }

  void Reproduce(const SigningKey& key, const Digest& run, const std::string& machine, bool passed = true,
                 PredicateKind kind = PredicateKind::kReproduced) {
    AttestationRequest req;
    req.subject = run;
    req.predicate = kind;
    req.note = "re-run";
    req.rerun = RerunResult{run, 8100, 0.997, passed, machine, std::nullopt};
    ASSERT_OK(CreateAttestation(*store_, key, req));
  }

  EvidenceLevel Level(const Digest& d) {
    auto l = eval_->Level(*store_, d);
    EXPECT_OK(l);
    return l.ok() ? *l : EvidenceLevel::kReported;
  }

  TempDir dir_;
  int runs_ = 0;
  std::unique_ptr<Store> store_;
  std::unique_ptr<EvidenceEvaluator> eval_;
  SigningKey runner1_ = SigningKey::Generate("runner1"), runner2_ = SigningKey::Generate("runner2"),
             reviewer_ = SigningKey::Generate("reviewer"), stranger_ = SigningKey::Generate("stranger");
};

TEST_F(EvidenceTest, ReproducibleNeedsSourceAndRawEvidenceInTheStore) {
  EXPECT_EQ(Level(AddRun(false, false)), EvidenceLevel::kReported);
  EXPECT_EQ(Level(AddRun(true, false)), EvidenceLevel::kReported);
  Digest both = AddRun(true, true);
  auto ev = eval_->Evaluate(*store_, both);
  ASSERT_OK(ev);
  EXPECT_TRUE(ev->source_present);
  EXPECT_TRUE(ev->raw_evidence_present);
  EXPECT_EQ(ev->level, EvidenceLevel::kReproducible);
}

TEST_F(EvidenceTest, OnlyATrustedRunnersPassingReproductionVerifies) {
  Digest run = AddRun(false, false);
  Reproduce(stranger_, run, "m1");
  EXPECT_EQ(Level(run), EvidenceLevel::kReported);
  Reproduce(reviewer_, run, "m1");  // trusted, but not a runner
  EXPECT_EQ(Level(run), EvidenceLevel::kReported);
  Reproduce(runner1_, run, "m1", /*passed=*/false);
  EXPECT_EQ(Level(run), EvidenceLevel::kReported);
  AttestationRequest reviewed;
  reviewed.subject = run;
  reviewed.note = "lgtm";
  ASSERT_OK(CreateAttestation(*store_, runner1_, reviewed));
  EXPECT_EQ(Level(run), EvidenceLevel::kReported);
  Reproduce(runner1_, run, "m1");
  EXPECT_EQ(Level(run), EvidenceLevel::kVerified);
}

TEST_F(EvidenceTest, ReplicationNeedsDifferentKeysAndMachines) {
  Digest run = AddRun(true, true);
  Reproduce(runner1_, run, "m1");
  Reproduce(runner1_, run, "m2");  // same key, another machine
  EXPECT_EQ(Level(run), EvidenceLevel::kVerified);
  Reproduce(runner2_, run, "m1");  // another key, same machine as one of them...
  // ...but runner1 on m2 and runner2 on m1 differ in both.
  EXPECT_EQ(Level(run), EvidenceLevel::kReplicated);
  Digest other = AddRun(false, false);
  Reproduce(runner1_, other, "m1");
  Reproduce(runner2_, other, "m1");
  EXPECT_EQ(Level(other), EvidenceLevel::kVerified);
}

// A reproduction whose envelope carries the signatures of all `keys` (the
// first builds the statement; the others sign the same PAE).
void ReproduceSignedByAll(Store& store, const std::vector<const SigningKey*>& keys, const Digest& run,
                          const std::string& machine) {
  AttestationRequest req;
  req.subject = run;
  req.predicate = PredicateKind::kReproduced;
  req.rerun = RerunResult{run, 8100, 0.997, true, machine, std::nullopt};
  auto bytes = BuildAttestation(store, *keys[0], req);
  ASSERT_OK(bytes);
  auto env = ParseEnvelope(*bytes);
  ASSERT_OK(env);
  for (size_t i = 1; i < keys.size(); ++i) {
    env->signatures.push_back(
        {keys[i]->public_key().KeyId(), keys[i]->Sign(PreAuthEncoding(env->payload_type, env->payload))});
  }
  KeySources none;
  auto imported = ImportAttestation(store, SerializeEnvelope(*env), run, none);
  ASSERT_OK(imported);
}

// Regression: replication counted any two different keys across two
// reproductions, so two re-runs co-signed by one runner counted as two
// independent ones.
TEST_F(EvidenceTest, ReplicationNeedsDisjointRunnerKeysWhenEnvelopesHaveSeveral) {
  SigningKey runner3 = SigningKey::Generate("runner3");
  KeySources keys = eval_->keys();
  ASSERT_OK(keys.trust.Add(runner3.public_key(), "runner3", Role::kRunner));
  EvidenceEvaluator eval(std::move(keys));
  auto level = [&](const Digest& d) {
    auto l = eval.Level(*store_, d);
    EXPECT_OK(l);
    return l.ok() ? *l : EvidenceLevel::kReported;
  };

  Digest run = AddRun(false, false);
  ReproduceSignedByAll(*store_, {&runner1_, &runner2_}, run, "m1");
  ReproduceSignedByAll(*store_, {&runner2_}, run, "m2");  // runner2 vouched for both
  EXPECT_EQ(level(run), EvidenceLevel::kVerified);
  ReproduceSignedByAll(*store_, {&runner2_, &runner3}, run, "m3");  // still runner2 in each
  EXPECT_EQ(level(run), EvidenceLevel::kVerified);
  // An untrusted co-signer does not make keys overlap: only trusted runners count.
  Digest other = AddRun(false, false);
  ReproduceSignedByAll(*store_, {&runner1_, &stranger_}, other, "m1");
  ReproduceSignedByAll(*store_, {&runner3, &stranger_}, other, "m2");
  EXPECT_EQ(level(other), EvidenceLevel::kReplicated);
  // Disjoint key sets on different machines replicate.
  ReproduceSignedByAll(*store_, {&runner3}, run, "m4");
  auto ev = eval.Evaluate(*store_, run);
  ASSERT_OK(ev);
  EXPECT_EQ(ev->reproductions.size(), 4u);
  EXPECT_EQ(ev->level, EvidenceLevel::kReplicated);  // {runner1, runner2} on m1 and {runner3} on m4
}

TEST_F(EvidenceTest, DisputesAreShownBesideTheLevel) {
  Digest run = AddRun(false, false);
  Reproduce(runner1_, run, "m1");
  Reproduce(stranger_, run, "m9", false, PredicateKind::kDisputed);
  auto ev = eval_->Evaluate(*store_, run);
  ASSERT_OK(ev);
  EXPECT_FALSE(ev->disputed());  // untrusted disputes are listed, not counted
  Reproduce(reviewer_, run, "m3", false, PredicateKind::kDisputed);
  ev = eval_->Evaluate(*store_, run);
  ASSERT_OK(ev);
  EXPECT_TRUE(ev->disputed());
  EXPECT_EQ(ev->level, EvidenceLevel::kVerified);
  EXPECT_EQ(ev->Label(), "verified, disputed");
  EXPECT_EQ(ev->attestations.size(), 3u);
  Json j = ev->ToJson();
  EXPECT_EQ(j["level"], "verified");
  EXPECT_EQ(j["disputed"], true);
}

// ki rerun signs its verdict (docs/format.md, "Rerun verdicts"): only a
// reproduced verdict verifies; a trusted runner's not-reproduced verdict
// disputes the run, whether signed as `disputed` (what ki rerun writes) or
// inside a `reproduced` statement; an inconclusive one does neither.
TEST_F(EvidenceTest, RerunVerdictsDecideVerifiedAndDisputed) {
  auto attest = [&](const SigningKey& key, const Digest& run, const std::string& outcome, PredicateKind kind) {
    AttestationRequest req;
    req.subject = run;
    req.predicate = kind;
    req.note = "ki rerun";
    req.rerun = RerunResult{run, 8100, 1.3, true, "m1", std::nullopt};
    req.rerun->verdict = Json{{"outcome", outcome}, {"test", "bootstrap-median-ratio"}, {"tolerance", 0.1}};
    ASSERT_OK(CreateAttestation(*store_, key, req));
  };
  Digest inconclusive = AddRun(false, false);
  attest(runner1_, inconclusive, "inconclusive", PredicateKind::kReproduced);
  auto ev = eval_->Evaluate(*store_, inconclusive);
  ASSERT_OK(ev);
  EXPECT_EQ(ev->level, EvidenceLevel::kReported);
  EXPECT_FALSE(ev->disputed());

  Digest held = AddRun(false, false);
  attest(runner1_, held, "reproduced", PredicateKind::kReproduced);
  EXPECT_EQ(Level(held), EvidenceLevel::kVerified);

  Digest failed = AddRun(false, false);
  attest(runner1_, failed, "not-reproduced", PredicateKind::kDisputed);
  ev = eval_->Evaluate(*store_, failed);
  ASSERT_OK(ev);
  EXPECT_EQ(ev->level, EvidenceLevel::kReported);
  EXPECT_TRUE(ev->disputed());

  Digest odd = AddRun(false, false);  // a `reproduced` statement saying it was not
  attest(runner2_, odd, "not-reproduced", PredicateKind::kReproduced);
  ev = eval_->Evaluate(*store_, odd);
  ASSERT_OK(ev);
  EXPECT_EQ(ev->level, EvidenceLevel::kReported);
  EXPECT_TRUE(ev->disputed());
  // By a stranger (no trusted key), the same statement disputes nothing.
  Digest other = AddRun(false, false);
  attest(stranger_, other, "not-reproduced", PredicateKind::kReproduced);
  ev = eval_->Evaluate(*store_, other);
  ASSERT_OK(ev);
  EXPECT_FALSE(ev->disputed());

  // A verdict of another shape is a fault of the predicate check.
  AttestationRequest bad;
  bad.subject = held;
  bad.predicate = PredicateKind::kReproduced;
  bad.rerun = RerunResult{held, 8100, 1.0, true, "m1", std::nullopt};
  bad.rerun->verdict = Json{{"outcome", "held"}, {"test", "x"}, {"tolerance", 0.1}};
  EXPECT_FALSE(CreateAttestation(*store_, runner1_, bad).ok());
}

TEST_F(EvidenceTest, LevelGoesDownWhenTheRunnerIsRevoked) {
  Digest run = AddRun(false, false);
  Reproduce(runner1_, run, "m1");
  EXPECT_EQ(Level(run), EvidenceLevel::kVerified);
  KeySources keys = eval_->keys();
  ASSERT_OK(keys.trust.Remove("runner1"));
  EvidenceEvaluator after(std::move(keys));
  auto l = after.Level(*store_, run);
  ASSERT_OK(l);
  EXPECT_EQ(*l, EvidenceLevel::kReported);
}

TEST_F(EvidenceTest, ATamperedReproductionNeverCounts) {
  Digest run = AddRun(false, false);
  AttestationRequest req;
  req.subject = run;
  req.predicate = PredicateKind::kReproduced;
  req.rerun = RerunResult{run, 8100, 0.997, false, "m1", std::nullopt};
  auto bytes = BuildAttestation(*store_, runner1_, req);
  ASSERT_OK(bytes);
  auto env = ParseEnvelope(*bytes);
  ASSERT_OK(env);
  size_t p = env->payload.find("\"passed\":false");
  ASSERT_NE(p, std::string::npos);
  env->payload.replace(p, 14, "\"passed\":true ");
  std::string forged = SerializeEnvelope(*env);
  auto batch = store_->NewBatch();
  ASSERT_OK(batch);
  auto put = (*batch)->PutBlob(forged, kEnvelopeMediaType);
  ASSERT_OK(put);
  ASSERT_OK((*batch)->Put(kAttestationTable, std::string(run.raw()) + std::string(put->digest.raw()), ""));
  ASSERT_OK((*batch)->Commit());
  auto ev = eval_->Evaluate(*store_, run);
  ASSERT_OK(ev);
  EXPECT_EQ(ev->level, EvidenceLevel::kReported);
  ASSERT_EQ(ev->attestations.size(), 1u);
  EXPECT_TRUE(ev->attestations[0].fault());
}

TEST(EvidenceLevel, NamesAndOrder) {
  EXPECT_EQ(EvidenceLevelName(EvidenceLevel::kReported), "reported");
  EXPECT_EQ(EvidenceLevelName(EvidenceLevel::kReproducible), "reproducible");
  EXPECT_EQ(EvidenceLevelName(EvidenceLevel::kVerified), "verified");
  EXPECT_EQ(EvidenceLevelName(EvidenceLevel::kReplicated), "replicated");
  EXPECT_LT(EvidenceLevel::kReported, EvidenceLevel::kReplicated);
}

}  // namespace
}  // namespace ki
