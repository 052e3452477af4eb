// ki fleet submit: plan from the remote's tags, push the runs it lacks,
// one sbatch for the whole array, and the submission recorded in the store.
#include <chrono>
#include <cstdio>
#include <ctime>
#include <set>

#include "fleet/internal.h"
#include "ki/flashinfer.h"
#include "ki/utc.h"

namespace ki::fleet {

namespace internal {

double Seconds(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count();
}

Json SetRecordJson(const SetRecord& r, const Json& jobs) {
  Json runs = Json::array();
  for (const Digest& d : r.set.runs) runs.push_back(d.str());
  return {{"format", kSetFormat}, {"set", r.set.id.str()}, {"runs", runs},     {"replicas", r.replicas},
          {"remote", r.remote},   {"insecure", r.insecure}, {"jobs", jobs}};
}

Result<SetRecord> SetRecordFromJson(const Json& j, const std::string& where) {
  if (!j.is_object() || !j.contains("runs") || !j["runs"].is_array() || !j.contains("set") || !j["set"].is_string()) {
    return Status::Corruption(where + " is not a fleet set record");
  }
  SetRecord r;
  std::vector<Digest> runs;
  for (const Json& d : j["runs"]) {
    if (!d.is_string()) return Status::Corruption(where + ": a run is not a digest string");
    KI_ASSIGN_OR_RETURN(Digest x, Digest::Parse(d.get<std::string>()));
    runs.push_back(x);
  }
  r.set = MakeRunSet(std::move(runs));
  if (r.set.id.str() != j["set"].get<std::string>()) return Status::Corruption(where + ": its runs are not its set");
  r.replicas = j.value("replicas", 1);
  r.remote = j.value("remote", "");
  r.insecure = j.value("insecure", false);
  if (j.contains("jobs") && j["jobs"].is_array()) {
    for (const Json& job : j["jobs"])
      if (job.is_object() && job.contains("job") && job["job"].is_string()) r.jobs.push_back(job["job"]);
  }
  return r;
}

}  // namespace internal

namespace {

using internal::Seconds;

// "1234" or "1234;cluster" (sbatch --parsable).
Result<std::string> JobIdOf(const std::string& out) {
  std::string id = out.substr(0, out.find_first_of(";\n"));
  if (id.empty() || id.find_first_not_of("0123456789") != std::string::npos) {
    return Status::IOError("sbatch --parsable printed '" + out.substr(0, 200) + "', not a job id");
  }
  return id;
}

Status RecordSubmission(Store& store, const SetRecord& rec, const std::string& job, const std::string& array) {
  const std::string key(rec.set.id.raw());
  KI_ASSIGN_OR_RETURN(auto old, store.Get(kSetsTable, key));
  Json jobs = Json::array();
  if (old) {
    Json o = Json::parse(*old, nullptr, false);
    if (o.is_object() && o.contains("jobs") && o["jobs"].is_array()) jobs = o["jobs"];
  }
  // Milliseconds: `ki fleet status` with no SET takes the latest
  // submission, and two can fall in one second.
  jobs.push_back({{"job", job}, {"array", array}, {"submittedAt", UtcNow(UtcForm::kMillis)}});
  KI_ASSIGN_OR_RETURN(auto batch, store.NewBatch());
  KI_RETURN_IF_ERROR(batch->Put(kSetsTable, key, internal::SetRecordJson(rec, jobs).dump()));
  return batch->Commit();
}

struct Context {
  std::string bytes;          // canonical JSON; "" when the runs need none
  std::vector<Digest> blobs;  // the definition and reference blobs its rows name
};

// The fib.operations rows of the runs' operations (run -> workload ->
// operation), and the blobs they name.
Result<Context> BuildContext(Store& store, const RunSet& set) {
  Json ops = Json::object();
  Context c;
  for (const Digest& run : set.runs) {
    KI_ASSIGN_OR_RETURN(Manifest m, store.ReadManifest(run));
    auto wl = Digest::Parse(m.spec.value("workloadDigest", ""));
    if (!wl.ok()) continue;
    KI_ASSIGN_OR_RETURN(auto wi, store.Stat(*wl));
    if (!wi) continue;
    KI_ASSIGN_OR_RETURN(Manifest w, store.ReadManifest(*wl));
    auto op = Digest::Parse(w.spec.value("operationSpecDigest", ""));
    if (!op.ok() || ops.contains(op->str())) continue;
    KI_ASSIGN_OR_RETURN(auto row, fib::OperationFactsRow(store, *op));
    KI_ASSIGN_OR_RETURN(auto facts, fib::LookupOperation(store, *op));
    if (!row || !facts) continue;
    ops[op->str()] = *row;
    c.blobs.push_back(facts->definition_blob);
    if (facts->reference_blob) c.blobs.push_back(*facts->reference_blob);
  }
  if (ops.empty()) return c;
  KI_ASSIGN_OR_RETURN(c.bytes, Canonicalize(Json{{"format", kContextFormat}, {"operations", ops}}));
  return c;
}

}  // namespace

Result<SubmitOutcome> Submit(Store& store, const SubmitRequest& req) {
  const auto start = std::chrono::steady_clock::now();
  if (req.runs.empty()) return Status::InvalidInput("no runs to submit");
  if (req.replicas < 1 || req.replicas > 64) return Status::Usage("--replicas must be 1 to 64");
  KI_ASSIGN_OR_RETURN(RemoteUrl url, LookupRemote(store, req.remote, req.insecure));
  SubmitOutcome out;
  out.set = MakeRunSet(req.runs);
  KI_ASSIGN_OR_RETURN(std::vector<std::string> tags, ListTags(url, req.transfer));
  out.plan = PlanTasks(out.set, req.replicas, tags, req.force);

  KI_ASSIGN_OR_RETURN(Context ctx, BuildContext(store, out.set));
  std::vector<std::string> extra;  // the context and its blobs, when the remote lacks them
  if (!ctx.bytes.empty()) {
    out.context = Sha256Of(ctx.bytes);
    const std::set<std::string> have(tags.begin(), tags.end());
    if (!have.count(RunTag(*out.context))) extra.push_back(out.context->str());
    for (const Digest& b : ctx.blobs)
      if (!have.count(RunTag(b))) extra.push_back(b.str());
    if (!req.dry_run && !extra.empty()) {
      KI_ASSIGN_OR_RETURN(auto batch, store.NewBatch());
      KI_RETURN_IF_ERROR(batch->PutBlob(ctx.bytes, kContextMediaType).status());
      KI_RETURN_IF_ERROR(batch->Commit());
    }
  }
  if (!out.plan.missing_runs.empty() && !req.dry_run && !req.push_missing) {
    return Status::NotFound(url.str() + " lacks " + std::to_string(out.plan.missing_runs.size()) +
                            " of the runs (first: " + out.plan.missing_runs[0].str() +
                            "); push them with `ki push --digest-tags` or leave out --no-push");
  }
  if ((!out.plan.missing_runs.empty() || !extra.empty()) && !req.dry_run) {
    std::vector<std::string> refs = extra;
    for (const Digest& d : out.plan.missing_runs) refs.push_back(d.str());
    TransferOptions t = req.transfer;
    t.digest_tags = true;  // a task pulls its run as ki-<hex>
    KI_RETURN_IF_ERROR(Push(store, url, refs, t).status());
    out.pushed = out.plan.missing_runs.size();
  }
  if (out.plan.tasks.empty()) {
    out.ki_seconds = Seconds(start);
    return out;
  }
  std::vector<uint64_t> ids;
  ids.reserve(out.plan.tasks.size());
  for (const TaskSlot& s : out.plan.tasks) ids.push_back(s.array_id);
  BatchSpec spec;
  spec.set = out.set;
  spec.replicas = req.replicas;
  spec.array = ArraySpec(ids, req.slurm.max_parallel);
  spec.slurm = req.slurm;
  spec.task = req.task;
  spec.task.remote = url.str();
  spec.task.insecure = url.insecure;
  if (out.context) spec.context = out.context->str();
  KI_ASSIGN_OR_RETURN(out.script, BatchScript(spec));
  if (req.dry_run) {
    out.ki_seconds = Seconds(start);
    return out;
  }

  const auto sb = std::chrono::steady_clock::now();
  KI_ASSIGN_OR_RETURN(CommandOutput so, RunCommand({req.sbatch, "--parsable"}, out.script));
  out.sbatch_seconds = Seconds(sb);
  if (so.exit_code != 0) {
    std::string msg = so.err.substr(0, so.err.find('\n'));
    return Status::IOError(req.sbatch + " failed (exit " + std::to_string(so.exit_code) + ")" +
                           (msg.empty() ? "" : ": " + msg));
  }
  KI_ASSIGN_OR_RETURN(out.job, JobIdOf(so.out));
  SetRecord rec{out.set, req.replicas, url.str(), url.insecure, {}};
  KI_RETURN_IF_ERROR(RecordSubmission(store, rec, out.job, spec.array)
                         .WithContext("job " + out.job + " was submitted, but recording it failed"));
  out.ki_seconds = Seconds(start) - out.sbatch_seconds;
  return out;
}

Result<SetRecord> FindSet(Store& store, std::string_view prefix) {
  std::string want(prefix);
  if (want.rfind("sha256:", 0) == 0) want = want.substr(7);
  if (!want.empty() && (want.size() < 4 || want.find_first_not_of("0123456789abcdef") != std::string::npos)) {
    std::string msg = "'";
    msg += prefix;
    msg += "' is not a set digest (at least 4 hex digits)";
    return Status::InvalidInput(msg);
  }
  std::vector<SetRecord> found;
  std::string latest_at;
  std::optional<SetRecord> latest;
  Status bad;
  KI_RETURN_IF_ERROR(store.Scan(kSetsTable, "", [&](std::string_view k, std::string_view v) {
    if (k.size() != 32) return true;
    const Digest d = Digest::FromRaw(k);
    if (!want.empty() && d.hex().compare(0, want.size(), want) != 0) return true;
    Json j = Json::parse(v, nullptr, false);
    auto r = internal::SetRecordFromJson(j, "fleet set " + d.str());
    if (!r.ok()) {
      bad = r.status();
      return false;
    }
    std::string at;
    if (j.contains("jobs") && j["jobs"].is_array() && !j["jobs"].empty()) at = j["jobs"].back().value("submittedAt", "");
    if (!latest || at >= latest_at) latest = *r, latest_at = at;
    found.push_back(std::move(*r));
    return true;
  }));
  KI_RETURN_IF_ERROR(bad);
  if (found.empty()) {
    return Status::NotFound(want.empty() ? "no fleet submission is recorded in this store"
                                         : "no fleet submission's set starts with " + want);
  }
  if (want.empty()) return *latest;
  if (found.size() > 1) {
    std::string list;
    for (const auto& f : found) list += "\n  " + f.set.id.str();
    return Status::Ambiguous("set prefix " + want + " names " + std::to_string(found.size()) + " submissions:" + list);
  }
  return found[0];
}

}  // namespace ki::fleet
