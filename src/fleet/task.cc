// ki fleet task: one array task on its node. A scratch store, one pull, the
// re-run signed with the node's runner key, and one push of the result.
//
// Order is what makes a cancelled task harmless: everything is pushed as
// one bundle whose tag (the result's name on the remote) is written after
// every object it names, so a task killed before that leaves unnamed
// blobs and no result, and the next submission of the set re-runs it.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include "fleet/internal.h"
#include "ki/flashinfer.h"
#include "ki/run.h"
#include "ki/sign.h"
#include "ki/utc.h"

namespace ki::fleet {

namespace {

std::string EnvOr(const char* name, const std::string& fallback = "") {
  const char* v = std::getenv(name);
  return v && *v ? std::string(v) : fallback;
}

// The task's own log: what it did, step by step, with the time of each.
// Each line also goes to stderr as it happens (the task's Slurm output
// file), so a task that is killed still says how far it got.
class TaskLog {
 public:
  void Line(const std::string& s) {
    std::string line = UtcNow(UtcForm::kMillis) + " " + s + "\n";
    std::fputs(line.c_str(), stderr);
    text_ += line;
  }
  const std::string& text() const { return text_; }

 private:
  std::string text_;
};

struct Identity {
  std::string key_name, keyid;
  std::optional<SigningKey> key;
};

Result<Identity> LoadRunner(const TaskSettings& s) {
  Identity id;
  id.key_name = s.key.empty() ? EnvOr("KI_RUNNER_KEY") : s.key;
  if (id.key_name.empty()) {
    return Status::Usage("no runner key: give --key NAME or set KI_RUNNER_KEY on the node (docs/fleet.md, \"Set-up\")");
  }
  KI_ASSIGN_OR_RETURN(Keyring ring, Keyring::Default());
  KI_ASSIGN_OR_RETURN(SigningKey key, ring.Load(id.key_name, DefaultPassphrase));
  id.keyid = key.public_key().KeyId();
  id.key.emplace(std::move(key));
  return id;
}

// Stores the task's log and the record, signs the record with the runner
// key, and pushes the bundle (the record, the re-run, the original with its
// attestations) under the result's tag.
Status StoreAndPush(Store& store, const TaskRequest& req, const RemoteUrl& url, const Identity& id,
                    TaskLog& log, TaskOutcome& out) {
  FleetResult& r = out.result;
  r.finished_at = UtcNow(UtcForm::kMillis);
  log.Line("result: " + r.outcome + (r.status.empty() ? "" : " " + r.status) +
           (r.failure.empty() ? "" : ", " + r.failure_step + ": " + r.failure));
  out.log = log.text();
  KI_ASSIGN_OR_RETURN(auto batch, store.NewBatch());
  KI_ASSIGN_OR_RETURN(PutResult lp, batch->PutBlob(out.log, "text/plain; charset=utf-8"));
  r.log = lp.digest;
  KI_ASSIGN_OR_RETURN(std::string record, Canonicalize(ResultToJson(r)));
  KI_ASSIGN_OR_RETURN(PutResult rp, batch->PutBlob(record, kResultMediaType));
  KI_RETURN_IF_ERROR(batch->Commit());
  AttestationRequest ar;
  ar.subject = rp.digest;
  ar.predicate = PredicateKind::kReviewed;
  ar.note = "ki fleet result of " + r.run.str() + " by runner " + id.key_name + " on " + r.machine;
  KI_RETURN_IF_ERROR(CreateAttestation(store, *id.key, ar).status().WithContext("signing the result"));

  std::vector<std::string> refs = {rp.digest.str()};
  if (r.rerun) refs.push_back(r.rerun->str());
  KI_ASSIGN_OR_RETURN(auto have_run, store.Stat(r.run));
  if (have_run) refs.push_back(r.run.str());  // its attestations (the verdict) travel with it
  TransferOptions t = req.transfer;
  t.bundle_tag = ResultTag(r.run, id.keyid);
  auto pushed = Push(store, url, refs, t);
  if (!pushed.ok()) {
    out.push_status = pushed.status();
    return Status::OK();
  }
  out.tag = t.bundle_tag;
  return Status::OK();
}

// The context's facts of the run's operation into the scratch store, with
// the blobs they name (pulled by digest).
Status ApplyContext(Store& store, const RemoteUrl& url, const TransferOptions& pull, const Digest& context,
                    const Digest& run) {
  KI_ASSIGN_OR_RETURN(std::string bytes, store.Read(context));
  Json c = Json::parse(bytes, nullptr, false);
  if (!c.is_object() || c.value("format", "") != kContextFormat || !c.contains("operations") ||
      !c["operations"].is_object()) {
    return Status::InvalidInput("fleet context " + context.str() + " is not a " + std::string(kContextFormat));
  }
  KI_ASSIGN_OR_RETURN(Manifest m, store.ReadManifest(run));
  KI_ASSIGN_OR_RETURN(Digest wl, Digest::Parse(m.spec.value("workloadDigest", "")));
  KI_ASSIGN_OR_RETURN(Manifest w, store.ReadManifest(wl));
  const std::string op = w.spec.value("operationSpecDigest", "");
  if (!c["operations"].contains(op) || !c["operations"][op].is_string()) return Status::OK();
  const std::string row = c["operations"][op];
  KI_ASSIGN_OR_RETURN(Digest opd, Digest::Parse(op));
  Json r = Json::parse(row, nullptr, false);
  std::vector<std::string> blobs;
  for (const char* k : {"definitionBlob", "referenceBlob"})
    if (r.is_object() && r.contains(k) && r[k].is_string()) blobs.push_back(r[k]);
  if (!blobs.empty()) KI_RETURN_IF_ERROR(Pull(store, url, blobs, pull).status());
  KI_ASSIGN_OR_RETURN(auto batch, store.NewBatch());
  KI_RETURN_IF_ERROR(fib::PutOperationFactsRow(*batch, opd, row));
  return batch->Commit();
}

}  // namespace

Result<TaskOutcome> RunTask(const TaskRequest& req) {
  TaskOutcome out;
  FleetResult& r = out.result;
  TaskLog log;
  r.started_at = UtcNow(UtcForm::kMillis);
  auto slot = SlotOfArrayId(req.array_id, req.runs.size(), req.replicas);
  if (!slot) {
    return Status::InvalidInput("array task " + std::to_string(req.array_id) + " is past the set's " +
                                std::to_string(req.runs.size()) + " runs x " + std::to_string(req.replicas) +
                                " replicas");
  }
  r.run = req.runs[slot->index];
  r.array_id = req.array_id;
  r.job = EnvOr("SLURM_ARRAY_JOB_ID", EnvOr("SLURM_JOB_ID"));
  char host[256] = {0};
  ::gethostname(host, sizeof host - 1);
  r.node = EnvOr("SLURMD_NODENAME", host);
  r.machine = req.machine.empty() ? EnvOr("KI_MACHINE_ID") : req.machine;
  KI_ASSIGN_OR_RETURN(RemoteUrl url, ParseRemoteUrl(req.settings.remote, req.settings.insecure));
  KI_ASSIGN_OR_RETURN(Identity id, LoadRunner(req.settings));
  r.keyid = id.keyid;
  r.runner = id.key_name;
  log.Line("ki fleet task " + std::to_string(req.array_id) + ": run " + r.run.str() + " (index " +
           std::to_string(slot->index) + ", replica " + std::to_string(slot->replica) + ") on " + r.node +
           ", runner " + id.key_name + " " + ShortKeyId(id.keyid));

  // A runner's second result for a run is no replica: a task that lands
  // on a node whose key has one already records nothing new.
  const std::string tag = ResultTag(r.run, id.keyid);
  KI_ASSIGN_OR_RETURN(auto tags, ListTags(url, req.transfer));
  if (std::find(tags.begin(), tags.end(), tag) != tags.end()) {
    out.skipped = true;
    out.tag = tag;
    return out;
  }

  KI_ASSIGN_OR_RETURN(auto store, Store::Init(req.scratch + "/store"));
  KI_ASSIGN_OR_RETURN(KeySources keys, KeySources::LoadDefault());
  TransferOptions pull = req.transfer;
  pull.attestation_keys = &keys;
  log.Line("pull " + r.run.str() + " from " + url.str());
  std::vector<std::string> refs = {r.run.str()};
  if (req.context) refs.push_back(req.context->str());
  Status pulled = Pull(*store, url, refs, pull).status();
  if (pulled.ok() && req.context) pulled = ApplyContext(*store, url, pull, *req.context, r.run);
  if (!pulled.ok()) {
    r.outcome = "failed";
    r.failure_step = "pull";
    r.failure = pulled.message();
  } else {
    run::RerunRequest rr;
    rr.run = r.run.str();
    rr.device = req.settings.device;
    if (req.settings.timeout_s > 0) rr.timeout_s = req.settings.timeout_s;
    rr.sign_key = id.key_name;
    rr.match_tolerance = req.settings.tolerance;
    rr.machine = r.machine;
    rr.dispute_on_failure = false;
    log.Line("rerun" + (rr.device.empty() ? std::string() : " on " + rr.device));
    auto rerun = run::Rerun(*store, rr);
    if (!rerun.ok()) {
      r.outcome = "failed";
      r.failure_step = "rerun";
      r.failure = rerun.status().message();
    } else {
      r.outcome = "rerun";
      r.status = rerun->fresh.status;
      r.rerun = rerun->fresh.run;
      r.verdict = rerun->verdict;
      r.attestation = rerun->attestation;
      r.attestation_kind = rerun->attestation_kind;
      r.note = rerun->attestation_note;
      if (r.machine.empty()) r.machine = std::string(host) + " " + rerun->fresh.device_name;
      if (!rerun->fresh.message.empty()) log.Line("rerun: " + rerun->fresh.status + ": " + rerun->fresh.message);
      if (r.verdict) log.Line("verdict: " + r.verdict->value("words", ""));
      if (!rerun->sign_status.ok()) {
        r.failure_step = "sign";
        r.failure = rerun->sign_status.message();
      }
    }
  }
  if (r.machine.empty()) r.machine = host;
  KI_RETURN_IF_ERROR(StoreAndPush(*store, req, url, id, log, out));
  return out;
}

}  // namespace ki::fleet
