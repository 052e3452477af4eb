// ki sign REF --key NAME --predicate reviewed|reproduced|disputed [--note TEXT] [re-run facts]
// ki sign [REF] --envelope FILE   (files an envelope made elsewhere)
#include <cmath>
#include <iostream>

#include "command.h"
#include "ki/sign.h"

namespace ki::cli {
namespace {

struct SignOptions {
  std::string ref, key, predicate, note, envelope;
  std::string run_digest, machine, environment;
  double latency_ns = NAN, ratio = NAN;
  bool failed = false, json = false;
  std::vector<std::string> evidence;
};

Result<Digest> ParseDigestOpt(const std::string& text, const char* what) {
  auto d = Digest::Parse(text);
  if (!d.ok()) return Status::InvalidInput(std::string(what) + ": " + d.status().message());
  return d;
}

void Print(const SignOptions& o, const Digest& env, const Digest& subject, const AttestationReport& r) {
  std::string signer;
  for (const auto& s : r.signatures) {
    signer += (signer.empty() ? "" : ", ") + (s.signer.empty() ? ShortKeyId(s.keyid) : s.signer) + " (" +
              std::string(SignatureStateName(s.state)) + ")";
  }
  std::string pred = r.predicate ? std::string(PredicateName(*r.predicate)) : r.predicate_type;
  if (o.json) {
    Json j = r.ToJson();
    j["envelope"] = env.str();
    PrintJson(j);
  } else {
    std::cout << env.str() << "\t" << pred << "\t" << subject.str() << "\t" << signer << "\n";
  }
}

RunFn SetupSign(CLI::App* sub, GlobalOptions* g) {
  auto o = std::make_shared<SignOptions>();
  sub->add_option("ref", o->ref, "the object to sign: digest, prefix, KIND/NAME or name");
  sub->add_option("--key", o->key, "the local key to sign with (ki key list)");
  sub->add_option("--predicate", o->predicate, "what the signature says")
      ->check(CLI::IsMember({"reviewed", "reproduced", "disputed"}));
  sub->add_option("--note", o->note, "free text carried in the statement");
  sub->add_option("--run-digest", o->run_digest, "reproduced/disputed: the re-run's BenchmarkRun digest");
  sub->add_option("--latency-ns", o->latency_ns, "reproduced/disputed: the re-run's measured latency (ns)");
  sub->add_option("--ratio", o->ratio, "reproduced/disputed: re-run latency / recorded latency");
  sub->add_option("--machine", o->machine, "reproduced/disputed: the machine the re-run ran on");
  sub->add_option("--environment", o->environment, "the re-run's ExecutionEnvironment digest");
  sub->add_flag("--failed", o->failed, "the re-run's correctness checks failed (disputed)");
  sub->add_option("--evidence", o->evidence, "disputed: digests of objects that back the dispute");
  sub->add_option("--envelope", o->envelope, "file an existing DSSE envelope instead of signing");
  sub->add_flag("--json", o->json, "print the new attestation's checks as JSON");

  return [o, g]() -> Result<int> {
    if (!o->envelope.empty()) {
      if (!o->key.empty() || !o->predicate.empty()) return Status::Usage("--envelope files an existing envelope: no --key or --predicate");
      KI_ASSIGN_OR_RETURN(auto store, OpenStore(*g, OpenMode::kReadWrite));
      std::optional<Digest> subject;
      if (!o->ref.empty()) {
        KI_ASSIGN_OR_RETURN(subject, store->Resolve(o->ref));
      }
      std::string bytes;
      // One limit for a file and a pipe: an endless pipe fails at 1 MiB
      // instead of filling memory.
      constexpr uint64_t kMaxEnvelope = 1 << 20;
      // The CLI is the process: its own files go through the process's Env.
      if (o->envelope == "-") {
        KI_ASSIGN_OR_RETURN(bytes, ReadAll(*Env::Default()->StandardInput(), "standard input", kMaxEnvelope));
      } else {
        KI_ASSIGN_OR_RETURN(bytes, Env::Default()->ReadFile(o->envelope, kMaxEnvelope));
      }
      KI_ASSIGN_OR_RETURN(KeySources keys, KeySources::LoadDefault());
      KI_ASSIGN_OR_RETURN(auto res, ImportAttestation(*store, bytes, subject, keys));
      Print(*o, res.first.digest, res.second.subject, res.second);
      return 0;
    }
    if (o->ref.empty() || o->key.empty() || o->predicate.empty()) {
      return Status::Usage("ki sign REF --key NAME --predicate reviewed|reproduced|disputed (or --envelope FILE)");
    }
    AttestationRequest req;
    req.predicate = *ParsePredicateName(o->predicate);
    req.note = o->note;
    bool any_rerun = !o->run_digest.empty() || !std::isnan(o->latency_ns) || !std::isnan(o->ratio) ||
                     !o->machine.empty() || o->failed;
    if (req.predicate == PredicateKind::kReviewed && any_rerun) {
      return Status::Usage("re-run facts (--run-digest, --latency-ns, --ratio, --machine) belong to reproduced or disputed");
    }
    if (any_rerun || req.predicate == PredicateKind::kReproduced) {
      if (o->run_digest.empty() || std::isnan(o->latency_ns) || std::isnan(o->ratio) || o->machine.empty()) {
        return Status::Usage("a re-run result needs --run-digest, --latency-ns, --ratio and --machine");
      }
      if (req.predicate == PredicateKind::kReproduced && o->failed) {
        return Status::Usage("a failed re-run is not a reproduction: sign it as disputed");
      }
      RerunResult r;
      KI_ASSIGN_OR_RETURN(r.run, ParseDigestOpt(o->run_digest, "--run-digest"));
      r.latency_ns = o->latency_ns;
      r.ratio = o->ratio;
      r.machine = o->machine;
      r.passed = !o->failed;
      if (!o->environment.empty()) {
        KI_ASSIGN_OR_RETURN(r.environment, ParseDigestOpt(o->environment, "--environment"));
      }
      req.rerun = r;
    }
    for (const auto& e : o->evidence) {
      KI_ASSIGN_OR_RETURN(Digest d, ParseDigestOpt(e, "--evidence"));
      req.evidence.push_back(d);
    }
    // Everything that can fail cheaply fails before the passphrase prompt:
    // the request's own facts (a usage error: they are the options), then
    // the store, REF and the key's name.
    if (Status s = CheckAttestationRequest(req); !s.ok()) return Status::Usage(s.message());
    KI_ASSIGN_OR_RETURN(auto store, OpenStore(*g, OpenMode::kReadWrite));
    KI_ASSIGN_OR_RETURN(req.subject, store->Resolve(o->ref));
    KI_ASSIGN_OR_RETURN(auto held, store->Stat(req.subject));
    if (!held) return Status::NotFound("cannot sign " + req.subject.str() + ": this store does not hold its bytes");
    KI_ASSIGN_OR_RETURN(Keyring ring, Keyring::Default());
    KI_ASSIGN_OR_RETURN(KeyInfo info, ring.Info(o->key));
    (void)info;
    KI_ASSIGN_OR_RETURN(SigningKey key, ring.Load(o->key, DefaultPassphrase));
    KI_ASSIGN_OR_RETURN(PutResult put, CreateAttestation(*store, key, req));
    KI_ASSIGN_OR_RETURN(KeySources keys, KeySources::LoadDefault());
    KI_ASSIGN_OR_RETURN(std::string bytes, store->Read(put.digest));
    Print(*o, put.digest, req.subject, CheckEnvelope(bytes, put.digest, req.subject, keys));
    return 0;
  };
}

KI_REGISTER_COMMAND(sign, {"sign", "Sign a statement about an object (a DSSE attestation)", SetupSign, 72});

}  // namespace
}  // namespace ki::cli
