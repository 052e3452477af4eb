// Fleet: re-runs of many runs on a Slurm cluster, one job array for a set,
// each result signed by the runner that made it and exchanged through an
// OCI remote (docs/fleet.md).
//
// The pieces, and where each runs:
// - the curator's machine: `ki fleet submit` (MakeRunSet, PlanTasks,
//   BatchScript, Submit: one `sbatch --array` for the whole set),
//   `ki fleet status` (Status: squeue / sacct / scontrol, and the remote's
//   tags) and `ki fleet collect` (Collect: one pull of every result);
// - each array task on a node: `ki fleet task` (RunTask): a scratch store
//   on node-local disk (LMDB is never put on a shared filesystem), a pull of
//   the one run it re-runs from the remote, `ki rerun` signed with the
//   node's runner key, and one push of the result as a bundle whose tag is
//   written last, so a task killed at any point leaves either a whole
//   result on the remote or none.
//
// A result is a record (kResultMediaType, docs/format.md "Fleet results")
// with the re-run's BenchmarkRun, its verdict and its log, or the failure
// that stopped the task with the task's log; it is signed by the runner
// (a `reviewed` attestation of the record by the runner key), and the
// verdict is the `reproduced` / `disputed` attestation `ki rerun` makes.
// Its tag names the run and the runner key (ResultTag), so the remote's
// tag list alone says which runs still lack a result, for resubmission and
// for status where the cluster keeps no accounting.
//
// Thread-safety: pure functions are safe anywhere; Submit, Status and
// Collect follow the Store's rules; RunTask forks (through Rerun) and must
// be called from a single-threaded process.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ki/digest.h"
#include "ki/evidence.h"
#include "ki/json.h"
#include "ki/remote.h"
#include "ki/status.h"
#include "ki/store.h"

namespace ki::fleet {

inline constexpr std::string_view kResultMediaType = "application/vnd.ki.fleet-result+json";
inline constexpr std::string_view kResultFormat = "ki.fleet-result/v1";
inline constexpr std::string_view kSetFormat = "ki.fleet-set/v1";
// What a node needs beside a run's closure: the flashinfer-bench facts of
// its operation (a table row, no object a pull brings) and the blobs they
// name. A blob, canonical JSON {format, operations: {digest: row}}.
inline constexpr std::string_view kContextMediaType = "application/vnd.ki.fleet-context+json";
inline constexpr std::string_view kContextFormat = "ki.fleet-context/v1";
// The curator's submissions: set digest (32 raw bytes) -> JSON
// {set, runs, replicas, remote, insecure, jobs: [{job, array, submittedAt}]}.
inline constexpr std::string_view kSetsTable = "fleet.sets";

// ------------------------------------------------------------------ sets

// The runs to re-run, sorted by digest and each once, so that the same
// runs given in any order (a ref list, a group, a filter) are the same set
// and a resubmission finds its earlier submission. A task's index is its
// run's position here.
struct RunSet {
  Digest id;  // SHA-256 of "ki.fleet-set/v1\n" + one digest a line
  std::vector<Digest> runs;
};
RunSet MakeRunSet(std::vector<Digest> runs);

// Which runs: REFs (each must be a BenchmarkRun), the runs of comparison
// groups (a group key or prefix, or any run of the group), and runs that
// pass a filter (as `ki ls`'s). Groups and filters leave out runs that are
// themselves re-runs of another (run.original): a fleet re-runs originals.
struct RunSelection {
  std::vector<std::string> refs;
  std::vector<std::string> groups;
  std::string operation, hardware, implementation;  // catalog::RunFilter's fields
};
Result<std::vector<Digest>> SelectRuns(Store& store, const RunSelection& sel);

// ------------------------------------------------------------------ tags

// The tag of one runner's result for one run:
// "kifleet-<first 32 hex of the run>-<first 16 hex of the runner's key id>".
std::string ResultTag(const Digest& run, std::string_view keyid);
struct ResultTagParts {
  std::string run_prefix;    // 32 hex
  std::string keyid_prefix;  // 16 hex
};
std::optional<ResultTagParts> ParseResultTag(std::string_view tag);
// The tag a task pulls its run by: push --digest-tags gives it ("ki-<hex>").
std::string RunTag(const Digest& run);

// --------------------------------------------------------------- planning

// One array task: run `index` of the set, replica `replica` of `replicas`;
// its Slurm array index is index * replicas + replica.
struct TaskSlot {
  size_t index = 0;
  int replica = 0;
  uint64_t array_id = 0;
};
struct Plan {
  std::vector<TaskSlot> tasks;          // what to submit, in array order
  size_t runs_done = 0;                 // runs with `replicas` results already
  std::vector<size_t> results_per_run;  // distinct runner keys with a result, per run
  std::vector<Digest> missing_runs;     // runs the remote has no ki-<hex> tag of
};
// Which tasks a submission needs, from the remote's tags: a run with
// results by k distinct runner keys gets replicas - k tasks (replicas k..),
// none when it has enough; `force` submits every replica again.
Plan PlanTasks(const RunSet& set, int replicas, const std::vector<std::string>& remote_tags, bool force);
// Slurm's --array value for sorted ids: "0-9,12,15-19", with "%N" when
// max_parallel > 0.
std::string ArraySpec(const std::vector<uint64_t>& ids, int max_parallel);
// The array task id -> (index, replica) again; nullopt when out of the set.
std::optional<TaskSlot> SlotOfArrayId(uint64_t array_id, size_t runs, int replicas);

// ----------------------------------------------------------- batch script

struct SlurmOptions {
  std::string partition;    // -p
  std::string gpus;         // --gres=gpu[:TYPE]:N: "1", "h200:1"; empty: no GPU asked for
  std::string constraint;   // --constraint (a GPU model feature, e.g. "h200")
  std::string time;         // --time ("30:00", "1-00:00:00")
  std::string account;      // --account
  std::string qos;          // --qos
  std::string job_name;     // default "ki-fleet-<12 hex of the set>"
  std::string output;       // --output pattern (default "ki-fleet-%A_%a.out" in sbatch's cwd)
  int cpus_per_task = 0;    // 0: Slurm's default
  int max_parallel = 0;     // the array's %N throttle; 0: none
  std::vector<std::string> extra;  // further #SBATCH arguments, verbatim ("--exclusive")
};

// What every task does, the same for all of them.
struct TaskSettings {
  std::string remote;      // the remote's URL
  bool insecure = false;   // plain http (loopback registries only)
  std::string device;      // rerun --device; empty: the original's
  double timeout_s = 0;    // rerun --timeout; 0: the original's
  double tolerance = 0.10; // rerun --tolerance
  std::string key;         // runner key name on the nodes; empty: the node's $KI_RUNNER_KEY
  std::string ki = "ki";   // the ki command on the nodes
  std::string scratch;     // parent of the scratch store; empty: $TMPDIR, else /tmp
};

struct BatchSpec {
  RunSet set;
  int replicas = 1;
  std::string array;  // ArraySpec of the tasks
  std::string context;  // the context blob's digest, "" when none
  SlurmOptions slurm;
  TaskSettings task;
};
// The sbatch script. InvalidInput naming the option when a value holds a
// character that would break out of its line or its quoting (newlines,
// NUL); the script quotes every value it passes to the shell.
Result<std::string> BatchScript(const BatchSpec& spec);

// ------------------------------------------------------------- job state

enum class TaskState { kPending, kRunning, kCompleted, kFailed, kCancelled, kTimeout, kNodeFail, kOutOfMemory, kPreempted, kUnknown };
std::string_view TaskStateName(TaskState s);  // "pending", "running", ...
// Slurm's state words ("PENDING", "CANCELLED by 0", "CA", "OUT_OF_MEMORY").
TaskState TaskStateFromSlurm(std::string_view word);
bool IsFinal(TaskState s);

struct JobTask {
  std::string job;       // the array's job id
  uint64_t array_id = 0;
  TaskState state = TaskState::kUnknown;
  std::string detail;    // squeue's reason, sacct's exit code
};
// `squeue -h -r -j JOB -o %i|%T|%r` output ("12_3|RUNNING|None"; a pending
// range "12_[4-9%2]|PENDING|Resources" is expanded). Lines of other jobs or
// without an array index are skipped; a malformed line is InvalidInput.
Result<std::vector<JobTask>> ParseSqueue(std::string_view text);
// `sacct -n -P -X -j JOB -o JobID,State,ExitCode` output.
Result<std::vector<JobTask>> ParseSacct(std::string_view text);
// `scontrol -o show job JOB` output (one line per task, as long as the
// controller keeps finished jobs: MinJobAge).
Result<std::vector<JobTask>> ParseScontrol(std::string_view text);

// ---------------------------------------------------------- result records

struct FleetResult {
  Digest run;                // the original
  std::string keyid;         // the runner key's id (64 hex)
  std::string runner;        // its local name on the node
  std::string machine;       // what the re-run names as its machine
  std::string outcome;       // "rerun" (a re-run record exists) or "failed" (none: see failure)
  std::string status;        // the re-run's status (passed, compile_error, ...); "" when failed before
  std::optional<Digest> rerun;        // the re-run's BenchmarkRun
  std::optional<Json> verdict;        // `ki rerun`'s verdict (same implementation, timed)
  std::optional<Digest> attestation;  // the signed verdict, when one was made
  std::string attestation_kind;       // "reproduced" / "disputed"
  std::string note;                   // why no attestation, when none
  std::string failure_step;           // "init", "pull", "rerun", "sign"; "" when none
  std::string failure;                // the error, one line
  std::optional<Digest> log;          // the task's own log (text/plain)
  std::string job;                    // SLURM_ARRAY_JOB_ID, SLURM_ARRAY_TASK_ID, node
  uint64_t array_id = 0;
  std::string node;
  std::string started_at, finished_at;  // RFC 3339 UTC
};
Json ResultToJson(const FleetResult& r);
// Strict: format, types, digests; InvalidInput naming `where` and the field.
Result<FleetResult> ResultFromJson(const Json& j, std::string_view where);

// --------------------------------------------------------------- commands

// Runs a command without a shell, with `input` on its stdin; its stdout
// and stderr come back. Errors only when it cannot be started.
struct CommandOutput {
  int exit_code = -1;  // 128 + signal when killed
  std::string out, err;
};
Result<CommandOutput> RunCommand(const std::vector<std::string>& argv, std::string_view input);

struct SubmitRequest {
  std::vector<Digest> runs;
  std::string remote;        // a configured remote's name or a URL
  bool insecure = false;
  int replicas = 1;
  bool force = false;        // submit every replica, results or not
  bool push_missing = true;  // push runs the remote lacks (with digest tags) first
  bool dry_run = false;      // build the script, submit nothing, record nothing
  std::string sbatch = "sbatch";
  SlurmOptions slurm;
  TaskSettings task;         // task.remote is filled from `remote`
  TransferOptions transfer;
};
struct SubmitOutcome {
  RunSet set;
  Plan plan;
  std::string script;
  std::string job;           // the array's job id ("" when nothing was submitted)
  std::optional<Digest> context;  // the context blob the tasks pull
  size_t pushed = 0;         // runs pushed first
  double ki_seconds = 0;     // time spent in ki (everything but sbatch)
  double sbatch_seconds = 0;
};
// Plans from the remote's tags (one tags/list), pushes what is missing,
// writes the script, runs `sbatch --parsable` once with it on stdin and
// records the job in kSetsTable. Nothing to submit (every run has its
// results) is an outcome with no job. IOError with sbatch's message when
// it fails.
Result<SubmitOutcome> Submit(Store& store, const SubmitRequest& req);

struct TaskRequest {
  std::vector<Digest> runs;  // the set, as the script lists it
  std::optional<Digest> context;
  uint64_t array_id = 0;
  int replicas = 1;
  std::string scratch;       // a directory of this task's own (created; left for the script to remove)
  TaskSettings settings;
  TransferOptions transfer;
  std::string machine;       // the re-run's machine id; empty: the host's name
};
struct TaskOutcome {
  FleetResult result;
  std::string tag;           // where it was pushed ("" when it was not)
  bool skipped = false;      // this runner has a result for the run already
  Status push_status;        // the push of the result, when it failed
  std::string log;           // the task's log, as stored
};
// One array task. Every failure after the scratch store exists becomes a
// result with its step, message and log, pushed like a re-run's; an error
// is returned only when nothing could be recorded or pushed.
Result<TaskOutcome> RunTask(const TaskRequest& req);

struct SetRecord {
  RunSet set;
  int replicas = 1;
  std::string remote;
  bool insecure = false;
  std::vector<std::string> jobs;
};
// The submission recorded for a set (a digest prefix of at least 4 hex
// digits, or empty for the latest); NotFound / Ambiguous.
Result<SetRecord> FindSet(Store& store, std::string_view prefix);

struct RunStatus {
  Digest run;
  size_t index = 0;
  std::vector<std::string> result_keys;  // key id prefixes with a result on the remote
  std::vector<JobTask> tasks;            // the scheduler's view of its tasks
};
struct StatusReport {
  SetRecord record;
  std::vector<RunStatus> runs;
  std::string source;                    // "squeue+sacct", "squeue+scontrol", "remote"
  std::vector<std::string> notes;        // e.g. accounting is off
};
// The scheduler's state of every task (squeue for live ones, then sacct, or
// scontrol where accounting is off) and the results on the remote.
Result<StatusReport> ReadStatus(Store& store, const SetRecord& record, const TransferOptions& transfer,
                                const std::string& squeue = "squeue", const std::string& sacct = "sacct",
                                const std::string& scontrol = "scontrol");

struct CollectedResult {
  FleetResult result;
  std::string tag;
  bool signed_by_trusted_runner = false;  // the record's `reviewed` attestation
  std::string signer;
};
struct CollectedRun {
  Digest run;
  EvidenceLevel before = EvidenceLevel::kReported, after = EvidenceLevel::kReported;
  bool disputed_before = false, disputed_after = false;
  std::string label_before, label_after;
  std::vector<CollectedResult> results;
};
struct CollectReport {
  SetRecord record;
  std::vector<CollectedRun> runs;
  size_t results = 0, missing = 0;
  PullReport pull;
  std::vector<std::string> warnings;  // results that could not be read
};
// One pull of every result tag of the set's runs, then each run's results
// and its evidence before and after, with `evaluator`'s keys.
Result<CollectReport> Collect(Store& store, const SetRecord& record, const TransferOptions& transfer,
                              const EvidenceEvaluator& evaluator);

}  // namespace ki::fleet
