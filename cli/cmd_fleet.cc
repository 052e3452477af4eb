// ki fleet submit | status | collect | task: re-runs of many runs on a Slurm
// cluster (docs/fleet.md). The library (ki/fleet.h) builds the batch
// script, reads the scheduler and the remote; this file parses and prints.
#include <cstdlib>
#include <iomanip>
#include <iostream>
#include <map>
#include <sstream>

#include "command.h"
#include "ki/fleet.h"
#include "ki/evidence.h"
#include "ki/sign.h"

namespace ki::cli {
namespace {

struct FleetOptions {
  // submit
  fleet::RunSelection sel;
  std::string runs_from;
  fleet::SubmitRequest submit;
  double timeout = 0;
  bool no_push = false;
  // status, collect
  std::string set;
  // task
  std::string task_runs, scratch, machine, context;
  uint64_t array_id = 0;
  int replicas = 1;
  fleet::TaskSettings task;
  bool insecure = false;
  bool json = false;
};

// One digest or REF a line ('#' starts a comment), from FILE or '-'.
Result<std::vector<std::string>> ReadRefList(const std::string& from) {
  std::string text;
  if (from == "-") {
    std::ostringstream ss;
    ss << std::cin.rdbuf();
    text = ss.str();
  } else {
    // The CLI is the process: its own files go through the process's Env.
    KI_ASSIGN_OR_RETURN(text, Env::Default()->ReadFile(from, 64ull << 20));
  }
  std::vector<std::string> out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    line = line.substr(0, line.find('#'));
    size_t a = line.find_first_not_of(" \t\r"), b = line.find_last_not_of(" \t\r");
    if (a == std::string::npos) continue;
    // `ki ls` prints DIGEST<TAB>...: the first field is the ref.
    line = line.substr(a, b - a + 1);
    out.push_back(line.substr(0, line.find_first_of(" \t")));
  }
  return out;
}

void AddSlurmOptions(CLI::App* s, FleetOptions* o) {
  fleet::SlurmOptions& sl = o->submit.slurm;
  s->add_option("--partition,-p", sl.partition, "Slurm partition");
  s->add_option("--gpus", sl.gpus, "GPUs per task, as --gres=gpu:VALUE (\"1\", \"h200:1\"); default none");
  s->add_option("--constraint", sl.constraint, "node features, e.g. a GPU model (Slurm --constraint)");
  s->add_option("--time,-t", sl.time, "time limit per task (Slurm --time)");
  s->add_option("--account,-A", sl.account, "Slurm account");
  s->add_option("--qos", sl.qos, "Slurm QOS");
  s->add_option("--job-name", sl.job_name, "job name (default ki-fleet-<12 hex of the set>)");
  s->add_option("--output", sl.output, "task log pattern (default ki-fleet-%A_%a.out)");
  s->add_option("--cpus-per-task", sl.cpus_per_task, "CPUs per task")->check(CLI::Range(1, 4096));
  s->add_option("--max-parallel", sl.max_parallel, "at most this many tasks at once (the array's %N)")
      ->check(CLI::Range(1, 1000000));
  s->add_option("--sbatch-arg", sl.extra, "a further #SBATCH argument, verbatim (repeatable)");
}

Status Report(const fleet::SubmitOutcome& r, bool dry_run, bool json) {
  if (json) {
    Json tasks = Json::array();
    for (const auto& t : r.plan.tasks)
      tasks.push_back({{"arrayTask", t.array_id}, {"run", r.set.runs[t.index].str()}, {"replica", t.replica}});
    Json missing = Json::array();
    for (const auto& d : r.plan.missing_runs) missing.push_back(d.str());
    PrintJson({{"set", r.set.id.str()},
               {"runs", r.set.runs.size()},
               {"runsDone", r.plan.runs_done},
               {"tasks", tasks},
               {"notOnRemote", missing},
               {"pushed", r.pushed},
               {"job", r.job.empty() ? Json(nullptr) : Json(r.job)},
               {"dryRun", dry_run},
               {"script", dry_run ? Json(r.script) : Json(nullptr)},
               {"kiSeconds", r.ki_seconds},
               {"sbatchSeconds", r.sbatch_seconds}});
    return Status::OK();
  }
  if (dry_run) {
    std::cout << r.script;
    std::cerr << "ki: dry run: set " << r.set.id.str() << ", " << r.plan.tasks.size() << " tasks, "
              << r.plan.runs_done << " of " << r.set.runs.size() << " runs have their results";
    if (!r.plan.missing_runs.empty())
      std::cerr << "; " << r.plan.missing_runs.size() << " runs are not on the remote yet (submit pushes them)";
    std::cerr << "; nothing submitted\n";
    return Status::OK();
  }
  std::cout << "set       " << r.set.id.str() << "\n"
            << "runs      " << r.set.runs.size() << " (" << r.plan.runs_done << " with their results already)\n";
  if (r.pushed) std::cout << "pushed    " << r.pushed << " runs the remote lacked\n";
  if (r.job.empty()) {
    std::cout << "job       none: every run has its results (--force re-runs them)\n";
  } else {
    std::cout << "job       " << r.job << " (" << r.plan.tasks.size() << " array tasks)\n";
  }
  return Status::OK();
}

std::string StateCounts(const std::map<std::string, size_t>& m) {
  std::string out;
  for (const auto& [k, n] : m) out += (out.empty() ? "" : ", ") + std::to_string(n) + " " + k;
  return out.empty() ? "none" : out;
}

void PrintStatus(const fleet::StatusReport& rep, bool json) {
  const size_t want = size_t(rep.record.replicas);
  if (json) {
    Json runs = Json::array();
    for (const auto& r : rep.runs) {
      Json tasks = Json::array();
      for (const auto& t : r.tasks)
        tasks.push_back({{"job", t.job}, {"arrayTask", t.array_id}, {"state", fleet::TaskStateName(t.state)},
                         {"detail", t.detail}});
      runs.push_back({{"run", r.run.str()}, {"index", r.index}, {"results", r.result_keys}, {"tasks", tasks}});
    }
    PrintJson({{"set", rep.record.set.id.str()}, {"remote", rep.record.remote}, {"replicas", rep.record.replicas},
               {"jobs", rep.record.jobs}, {"source", rep.source}, {"notes", rep.notes}, {"runs", runs}});
    return;
  }
  size_t complete = 0, results = 0;
  std::map<std::string, size_t> states;
  for (const auto& r : rep.runs) {
    results += r.result_keys.size();
    if (r.result_keys.size() >= want) ++complete;
    // The latest job's word per array task.
    std::map<uint64_t, const fleet::JobTask*> last;
    for (const auto& t : r.tasks) last[t.array_id] = &t;
    for (const auto& [id, t] : last) ++states[std::string(fleet::TaskStateName(t->state))];
  }
  std::cout << "set       " << rep.record.set.id.str() << "\n"
            << "remote    " << rep.record.remote << "\n"
            << "jobs      " << (rep.record.jobs.empty() ? "none" : "") ;
  for (size_t i = 0; i < rep.record.jobs.size(); ++i) std::cout << (i ? ", " : "") << rep.record.jobs[i];
  std::cout << "\n"
            << "runs      " << rep.runs.size() << ", " << complete << " with " << want << " result"
            << (want == 1 ? "" : "s") << " (" << results << " results on the remote)\n"
            << "tasks     " << StateCounts(states) << " (from " << rep.source << ")\n";
  for (const auto& n : rep.notes) std::cout << "note      " << n << "\n";
  for (const auto& r : rep.runs) {
    if (r.result_keys.size() >= want) continue;
    std::string state = "no task known";
    if (!r.tasks.empty()) state = std::string(fleet::TaskStateName(r.tasks.back().state));
    std::cout << "  missing " << r.run.str() << "  " << r.result_keys.size() << "/" << want << " results, task "
              << state << "\n";
  }
}

void PrintCollect(const fleet::CollectReport& rep, bool json) {
  if (json) {
    Json runs = Json::array();
    for (const auto& r : rep.runs) {
      Json results = Json::array();
      for (const auto& c : r.results) {
        Json j = fleet::ResultToJson(c.result);
        j["tag"] = c.tag;
        j["signedByTrustedRunner"] = c.signed_by_trusted_runner;
        j["signer"] = c.signer;
        results.push_back(j);
      }
      runs.push_back({{"run", r.run.str()},
                      {"evidenceBefore", r.label_before},
                      {"evidenceAfter", r.label_after},
                      {"results", results}});
    }
    PrintJson({{"set", rep.record.set.id.str()}, {"results", rep.results}, {"missing", rep.missing},
               {"objectsReceived", rep.pull.blobs_received}, {"warnings", rep.warnings}, {"runs", runs}});
    return;
  }
  for (const auto& w : rep.warnings) std::cerr << "ki: warning: " << w << "\n";
  std::cout << "set       " << rep.record.set.id.str() << "\n"
            << "results   " << rep.results << " collected, " << rep.missing << " missing ("
            << rep.pull.blobs_received << " objects received)\n\n";
  for (const auto& r : rep.runs) {
    std::cout << Short(r.run) << "  evidence " << r.label_before;
    if (r.label_after != r.label_before) std::cout << " -> " << r.label_after;
    std::cout << "\n";
    for (const auto& c : r.results) {
      const fleet::FleetResult& f = c.result;
      std::string what;
      if (f.outcome == "failed") {
        what = "failed at " + f.failure_step + ": " + f.failure;
      } else if (f.verdict) {
        what = f.verdict->value("words", f.verdict->value("outcome", ""));
      } else {
        what = f.status + (f.note.empty() ? "" : " (" + f.note + ")");
      }
      if (f.outcome == "rerun" && f.status != "passed") {
        what = "re-run " + f.status + (f.note.empty() ? "" : " (" + f.note + ")");
      }
      std::cout << "  " << std::left << std::setw(12) << (c.signer.empty() ? f.runner : c.signer) << " "
                << std::setw(18) << f.machine.substr(0, 18) << " " << what
                << (c.signed_by_trusted_runner ? "" : " [result not signed by a trusted runner]") << "\n";
      if (f.log) std::cout << "  " << std::string(12, ' ') << " log " << f.log->str() << "\n";
    }
  }
}

Result<int> RunTaskCommand(FleetOptions& o) {
  fleet::TaskRequest req;
  KI_ASSIGN_OR_RETURN(auto refs, ReadRefList(o.task_runs));
  for (const auto& r : refs) {
    KI_ASSIGN_OR_RETURN(Digest d, Digest::Parse(r));
    req.runs.push_back(d);
  }
  req.array_id = o.array_id;
  req.replicas = o.replicas;
  req.scratch = o.scratch;
  req.settings = o.task;
  req.machine = o.machine;
  if (!o.context.empty()) {
    KI_ASSIGN_OR_RETURN(Digest c, Digest::Parse(o.context));
    req.context = c;
  }
  KI_ASSIGN_OR_RETURN(fleet::TaskOutcome out, fleet::RunTask(req));
  const fleet::FleetResult& r = out.result;
  if (out.skipped) {
    std::cout << "skipped\t" << out.tag << "\tthis runner has a result for " << r.run.str() << " already\n";
    return 0;
  }
  if (o.json) {
    Json j = fleet::ResultToJson(r);
    j["tag"] = out.tag;
    PrintJson(j);
  } else {
    std::cout << (out.tag.empty() ? "not pushed" : "pushed") << "\t" << (out.tag.empty() ? "-" : out.tag) << "\t"
              << r.outcome << (r.status.empty() ? "" : " " + r.status) << "\n";
  }
  if (!out.push_status.ok()) return out.push_status.WithContext("pushing the result of " + r.run.str());
  return r.outcome == "rerun" && r.status == "passed" && r.failure_step.empty() ? 0 : 1;
}

RunFn SetupFleet(CLI::App* sub, GlobalOptions* g) {
  auto o = std::make_shared<FleetOptions>();
  sub->require_subcommand(1);

  CLI::App* submit = sub->add_subcommand("submit", "Re-run a set of runs as one Slurm job array");
  submit->add_option("runs", o->sel.refs, "BenchmarkRuns to re-run (REF)");
  submit->add_option("--group", o->sel.groups, "the runs of this comparison group (repeatable)");
  submit->add_option("--operation", o->sel.operation, "runs of operations matching this (as ki ls)");
  submit->add_option("--hardware", o->sel.hardware, "runs on hardware matching this (as ki ls)");
  submit->add_option("--implementation", o->sel.implementation, "runs of implementations matching this (as ki ls)");
  submit->add_option("--runs-from", o->runs_from, "REFs one a line from FILE ('-': stdin; `ki ls` output works)");
  submit->add_option("--remote", o->submit.remote, "the remote the nodes pull from and push to (name or URL)")
      ->required();
  submit->add_flag("--insecure", o->submit.insecure, "plain http (loopback registries only)");
  submit->add_option("--replicas", o->submit.replicas, "results wanted per run, by distinct runner keys (default 1)")
      ->check(CLI::Range(1, 64));
  submit->add_flag("--force", o->submit.force, "submit every task, even for runs that have their results");
  submit->add_flag("--no-push", o->no_push, "refuse, instead of pushing, runs the remote lacks");
  submit->add_flag("--dry-run", o->submit.dry_run, "print the batch script; submit and record nothing");
  submit->add_option("--sbatch", o->submit.sbatch, "the sbatch command (default sbatch)");
  submit->add_option("--device", o->submit.task.device, "rerun --device on the nodes (default: the original's)");
  submit->add_option("--timeout", o->timeout, "rerun --timeout on the nodes, seconds")->check(CLI::PositiveNumber);
  submit->add_option("--tolerance", o->submit.task.tolerance, "rerun --tolerance (default 0.10)")
      ->check(CLI::Range(0.0, 10.0));
  submit->add_option("--key", o->submit.task.key, "runner key name on the nodes (default: each node's $KI_RUNNER_KEY)");
  submit->add_option("--ki", o->submit.task.ki, "the ki command on the nodes (default ki)");
  submit->add_option("--scratch", o->submit.task.scratch,
                     "node-local directory for scratch stores (default $KI_FLEET_SCRATCH, $TMPDIR, /tmp)");
  submit->add_flag("--json", o->json, "print the plan (and with --dry-run the script) as JSON");
  AddSlurmOptions(submit, o.get());

  CLI::App* status = sub->add_subcommand("status", "The state of a submitted set's tasks and results");
  status->add_option("set", o->set, "the set (a digest prefix; default: the latest submitted)");
  status->add_flag("--json", o->json, "print every run's tasks and results as JSON");
  CLI::App* collect = sub->add_subcommand("collect", "Pull a set's results; print each run's verdict and evidence");
  collect->add_option("set", o->set, "the set (a digest prefix; default: the latest submitted)");
  collect->add_flag("--json", o->json, "print every run's results and evidence as JSON");
  CLI::App* task = sub->add_subcommand("task", "One array task on its node (what the batch script runs)");
  task->add_option("--remote", o->task.remote, "the remote's URL")->required();
  task->add_flag("--insecure", o->task.insecure, "plain http (loopback registries only)");
  task->add_option("--array-id", o->array_id, "this task's $SLURM_ARRAY_TASK_ID")->required();
  task->add_option("--replicas", o->replicas, "replicas per run of the set")->check(CLI::Range(1, 64));
  task->add_option("--scratch", o->scratch, "a node-local directory of this task's own")->required();
  task->add_option("--runs", o->task_runs, "the set's runs, one a line, from FILE ('-': stdin)")->required();
  task->add_option("--device", o->task.device, "rerun --device");
  task->add_option("--timeout", o->task.timeout_s, "rerun --timeout, seconds")->check(CLI::PositiveNumber);
  task->add_option("--tolerance", o->task.tolerance, "rerun --tolerance")->check(CLI::Range(0.0, 10.0));
  task->add_option("--key", o->task.key, "the runner key (default $KI_RUNNER_KEY)");
  task->add_option("--context", o->context, "the fleet context blob to pull beside the run (sha256:...)");
  task->add_option("--machine", o->machine, "the machine id the verdict names (default $KI_MACHINE_ID, else the host)");
  task->add_flag("--json", o->json, "print the result record as JSON");

  return [o, g, submit, status, collect, task]() -> Result<int> {
    if (task->parsed()) return RunTaskCommand(*o);
    if (status->parsed()) {
      KI_ASSIGN_OR_RETURN(auto store, OpenStore(*g, OpenMode::kReadOnly));
      KI_ASSIGN_OR_RETURN(fleet::SetRecord rec, fleet::FindSet(*store, o->set));
      KI_ASSIGN_OR_RETURN(fleet::StatusReport rep, fleet::ReadStatus(*store, rec, TransferOptions{}));
      PrintStatus(rep, o->json);
      return 0;
    }
    if (collect->parsed()) {
      KI_ASSIGN_OR_RETURN(auto store, OpenStore(*g, OpenMode::kReadWrite));
      KI_ASSIGN_OR_RETURN(fleet::SetRecord rec, fleet::FindSet(*store, o->set));
      KI_ASSIGN_OR_RETURN(EvidenceEvaluator ev, EvidenceEvaluator::OpenDefault());
      KI_ASSIGN_OR_RETURN(fleet::CollectReport rep, fleet::Collect(*store, rec, TransferOptions{}, ev));
      PrintCollect(rep, o->json);
      return rep.missing == 0 ? 0 : 1;
    }
    if (submit->parsed()) {
      if (!o->runs_from.empty()) {
        KI_ASSIGN_OR_RETURN(auto refs, ReadRefList(o->runs_from));
        o->sel.refs.insert(o->sel.refs.end(), refs.begin(), refs.end());
      }
      if (o->sel.refs.empty() && o->sel.groups.empty() && o->sel.operation.empty() && o->sel.hardware.empty() &&
          o->sel.implementation.empty()) {
        return Status::Usage("name the runs: REFs, --group, --runs-from, or --operation/--hardware/--implementation");
      }
      KI_ASSIGN_OR_RETURN(auto store, OpenStore(*g, o->submit.dry_run ? OpenMode::kReadOnly : OpenMode::kReadWrite));
      KI_ASSIGN_OR_RETURN(o->submit.runs, fleet::SelectRuns(*store, o->sel));
      if (o->submit.runs.empty()) return Status::NotFound("the selection names no runs");
      o->submit.task.timeout_s = o->timeout;
      o->submit.push_missing = !o->no_push;
      KI_ASSIGN_OR_RETURN(fleet::SubmitOutcome r, fleet::Submit(*store, o->submit));
      KI_RETURN_IF_ERROR(Report(r, o->submit.dry_run, o->json));
      return 0;
    }
    return Status::Usage("unknown fleet subcommand");
  };
}

KI_REGISTER_COMMAND(fleet, {"fleet", "Re-run many runs on a Slurm cluster (submit, status, collect)", SetupFleet, 72});

}  // namespace
}  // namespace ki::cli
