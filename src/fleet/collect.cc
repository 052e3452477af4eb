// ki fleet status and ki fleet collect: the scheduler's view of a set's
// tasks and the remote's, and one pull of every result.
#include <map>
#include <set>

#include "fleet/internal.h"
#include "ki/sign.h"

namespace ki::fleet {

namespace {

// Result tags on the remote, by the run prefix they name.
std::map<std::string, std::vector<std::string>> ResultTagsByRun(const std::vector<std::string>& tags) {
  std::map<std::string, std::vector<std::string>> out;
  for (const std::string& t : tags)
    if (auto p = ParseResultTag(t)) out[p->run_prefix].push_back(t);
  return out;
}

// squeue, then sacct for what squeue no longer lists, else scontrol where
// accounting is off (its records last MinJobAge after a task ends).
Result<std::vector<JobTask>> SchedulerTasks(const std::string& job, const std::string& squeue, const std::string& sacct,
                                            const std::string& scontrol, std::set<std::string>* sources,
                                            std::vector<std::string>* notes) {
  std::vector<JobTask> tasks;
  auto q = RunCommand({squeue, "-h", "-r", "-j", job, "-o", "%i|%T|%r"}, "");
  if (!q.ok()) {
    notes->push_back(q.status().message() + ": the scheduler is not asked, the remote alone says what is done");
    return tasks;
  }
  // squeue answers a job it no longer knows with an error: none is live.
  if (q->exit_code == 0) {
    KI_ASSIGN_OR_RETURN(tasks, ParseSqueue(q->out));
    sources->insert("squeue");
  }
  std::set<uint64_t> live;
  for (const auto& t : tasks) live.insert(t.array_id);
  std::vector<JobTask> done;
  auto a = RunCommand({sacct, "-n", "-P", "-X", "-j", job, "-o", "JobID,State,ExitCode"}, "");
  if (a.ok() && a->exit_code == 0) {
    KI_ASSIGN_OR_RETURN(done, ParseSacct(a->out));
    sources->insert("sacct");
  } else {
    if (a.ok()) notes->push_back("sacct: " + a->err.substr(0, a->err.find('\n')));
    auto c = RunCommand({scontrol, "-o", "show", "job", job}, "");
    if (c.ok() && c->exit_code == 0) {
      KI_ASSIGN_OR_RETURN(done, ParseScontrol(c->out));
      sources->insert("scontrol");
    }
  }
  for (auto& t : done)
    if (!live.count(t.array_id)) tasks.push_back(std::move(t));
  return tasks;
}

}  // namespace

Result<StatusReport> ReadStatus(Store& store, const SetRecord& record, const TransferOptions& transfer,
                                const std::string& squeue, const std::string& sacct, const std::string& scontrol) {
  (void)store;
  StatusReport rep;
  rep.record = record;
  KI_ASSIGN_OR_RETURN(RemoteUrl url, ParseRemoteUrl(record.remote, record.insecure));
  KI_ASSIGN_OR_RETURN(auto tags, ListTags(url, transfer));
  auto by_run = ResultTagsByRun(tags);
  rep.runs.resize(record.set.runs.size());
  for (size_t i = 0; i < record.set.runs.size(); ++i) {
    RunStatus& rs = rep.runs[i];
    rs.run = record.set.runs[i];
    rs.index = i;
    auto it = by_run.find(rs.run.hex().substr(0, 32));
    if (it != by_run.end())
      for (const auto& t : it->second) rs.result_keys.push_back(ParseResultTag(t)->keyid_prefix);
  }
  std::set<std::string> sources = {"remote"};
  for (const std::string& job : record.jobs) {
    KI_ASSIGN_OR_RETURN(auto tasks, SchedulerTasks(job, squeue, sacct, scontrol, &sources, &rep.notes));
    for (auto& t : tasks) {
      auto slot = SlotOfArrayId(t.array_id, record.set.runs.size(), record.replicas);
      if (slot) rep.runs[slot->index].tasks.push_back(std::move(t));
    }
  }
  for (const auto& s : sources) rep.source += (rep.source.empty() ? "" : "+") + s;
  return rep;
}

Result<CollectReport> Collect(Store& store, const SetRecord& record, const TransferOptions& transfer,
                              const EvidenceEvaluator& evaluator) {
  CollectReport rep;
  rep.record = record;
  KI_ASSIGN_OR_RETURN(RemoteUrl url, ParseRemoteUrl(record.remote, record.insecure));
  std::map<std::string, size_t> index;  // run prefix -> position in the set
  rep.runs.resize(record.set.runs.size());
  for (size_t i = 0; i < record.set.runs.size(); ++i) {
    CollectedRun& cr = rep.runs[i];
    cr.run = record.set.runs[i];
    index[cr.run.hex().substr(0, 32)] = i;
    KI_ASSIGN_OR_RETURN(Evidence ev, evaluator.Evaluate(store, cr.run));
    cr.before = ev.level;
    cr.disputed_before = ev.disputed();
    cr.label_before = ev.Label();
  }
  KI_ASSIGN_OR_RETURN(auto tags, ListTags(url, transfer));
  std::vector<std::string> wanted;
  for (const std::string& t : tags) {
    auto p = ParseResultTag(t);
    if (p && index.count(p->run_prefix)) wanted.push_back(t);
  }
  if (!wanted.empty()) {
    TransferOptions t = transfer;
    t.attestation_keys = &evaluator.keys();
    KI_ASSIGN_OR_RETURN(rep.pull, Pull(store, url, wanted, t));
  }
  const std::set<std::string> wanted_set(wanted.begin(), wanted.end());

  // The records are blobs of their own media type: find them among the
  // store's objects, keep those of this set's runs whose tag is on the
  // remote (the latest record per run and runner).
  std::vector<Digest> records;
  KI_RETURN_IF_ERROR(store.ForEachObject([&](const ObjectInfo& info) {
    if (info.type == ObjectType::kBlob && info.media_type == kResultMediaType) records.push_back(info.digest);
    return true;
  }));
  std::map<std::string, std::pair<FleetResult, Digest>> latest;  // tag -> record
  for (const Digest& d : records) {
    KI_ASSIGN_OR_RETURN(std::string bytes, store.Read(d));
    Json j = Json::parse(bytes, nullptr, false);
    auto r = ResultFromJson(j, "fleet result " + d.str());
    if (!r.ok()) {
      rep.warnings.push_back(r.status().message());
      continue;
    }
    const std::string tag = ResultTag(r->run, r->keyid);
    if (!wanted_set.count(tag)) continue;
    auto it = latest.find(tag);
    if (it == latest.end() || it->second.first.finished_at < r->finished_at) latest[tag] = {std::move(*r), d};
  }
  for (auto& [tag, rd] : latest) {
    CollectedResult c;
    c.result = std::move(rd.first);
    c.tag = tag;
    KI_ASSIGN_OR_RETURN(auto atts, VerifyAttestations(store, rd.second, evaluator.keys()));
    for (const auto& a : atts) {
      for (const auto* s : a.TrustedSignatures(Role::kRunner)) {
        if (!a.fault() && s->keyid == c.result.keyid) {
          c.signed_by_trusted_runner = true;
          c.signer = s->signer;
        }
      }
    }
    auto pos = index.find(c.result.run.hex().substr(0, 32));
    if (pos == index.end()) continue;
    rep.runs[pos->second].results.push_back(std::move(c));
    ++rep.results;
  }
  for (CollectedRun& cr : rep.runs) {
    if (cr.results.size() < size_t(record.replicas)) rep.missing += size_t(record.replicas) - cr.results.size();
    KI_ASSIGN_OR_RETURN(Evidence ev, evaluator.Evaluate(store, cr.run));
    cr.after = ev.level;
    cr.disputed_after = ev.disputed();
    cr.label_after = ev.Label();
  }
  return rep;
}

}  // namespace ki::fleet
