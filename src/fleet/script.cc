// The batch script of a set: #SBATCH lines for the array and its resources,
// then one `ki fleet task` per array task, the set's runs on its stdin.
//
// The script is self-contained (`ki fleet submit --dry-run > job.sh; sbatch
// job.sh` submits the same job): the runs travel inside it, so the nodes
// need no shared filesystem, only the remote and their own disk.
#include <cstdio>
#include <sstream>

#include "ki/fleet.h"

namespace ki::fleet {

namespace {

// One argument for bash, in single quotes.
std::string Quote(std::string_view s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out += c;
    }
  }
  return out + "'";
}

bool HasControl(std::string_view s) {
  for (unsigned char c : s)
    if (c < 0x20 || c == 0x7f) return true;
  return false;
}

// sbatch reads an #SBATCH line's value up to white space: refuse what it
// would cut, rather than submit another job than the one asked for.
Status CheckDirectiveValue(std::string_view option, std::string_view v) {
  if (HasControl(v) || v.find(' ') != std::string_view::npos) {
    return Status::InvalidInput("--" + std::string(option) + " '" + std::string(v) +
                                "': a value for an #SBATCH line has no spaces or control characters");
  }
  return Status::OK();
}

Status CheckShellValue(std::string_view option, std::string_view v) {
  if (HasControl(v)) {
    return Status::InvalidInput("--" + std::string(option) + ": the value has a control character (a newline?)");
  }
  return Status::OK();
}

std::string Number(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.15g", v);  // 0.1, not 0.10000000000000001
  return buf;
}

}  // namespace

Result<std::string> BatchScript(const BatchSpec& spec) {
  const SlurmOptions& s = spec.slurm;
  const TaskSettings& t = spec.task;
  if (spec.set.runs.empty()) return Status::InvalidInput("the set has no runs");
  if (spec.array.empty()) return Status::InvalidInput("the array has no tasks");
  if (t.remote.empty()) return Status::InvalidInput("the tasks need a remote");
  const std::string job_name = s.job_name.empty() ? "ki-fleet-" + spec.set.id.hex().substr(0, 12) : s.job_name;
  const std::string output = s.output.empty() ? "ki-fleet-%A_%a.out" : s.output;
  const std::pair<const char*, const std::string*> directives[] = {
      {"partition", &s.partition}, {"constraint", &s.constraint}, {"time", &s.time},
      {"account", &s.account},     {"qos", &s.qos},               {"job-name", &job_name},
      {"output", &output},         {"gpus", &s.gpus},             {"array", &spec.array}};
  for (const auto& [name, value] : directives) KI_RETURN_IF_ERROR(CheckDirectiveValue(name, *value));
  for (const auto& e : s.extra) {
    if (HasControl(e) || e.empty()) return Status::InvalidInput("--sbatch '" + e + "': an empty value or a control character");
  }
  const std::pair<const char*, const std::string*> values[] = {
      {"remote", &t.remote}, {"device", &t.device}, {"key", &t.key}, {"ki", &t.ki}, {"scratch", &t.scratch}};
  for (const auto& [name, value] : values) KI_RETURN_IF_ERROR(CheckShellValue(name, *value));

  std::ostringstream o;
  o << "#!/bin/bash\n"
    << "# ki fleet: re-runs of set " << spec.set.id.str() << "\n"
    << "# " << spec.set.runs.size() << (spec.set.runs.size() == 1 ? " run, " : " runs, ") << spec.replicas << " replica" << (spec.replicas == 1 ? "" : "s")
    << " each; array task i re-runs run i / " << spec.replicas << " (docs/fleet.md).\n"
    << "#SBATCH --job-name=" << job_name << "\n"
    << "#SBATCH --array=" << spec.array << "\n"
    << "#SBATCH --output=" << output << "\n";
  if (!s.partition.empty()) o << "#SBATCH --partition=" << s.partition << "\n";
  if (!s.gpus.empty()) o << "#SBATCH --gres=gpu:" << s.gpus << "\n";
  if (!s.constraint.empty()) o << "#SBATCH --constraint=" << s.constraint << "\n";
  if (!s.time.empty()) o << "#SBATCH --time=" << s.time << "\n";
  if (!s.account.empty()) o << "#SBATCH --account=" << s.account << "\n";
  if (!s.qos.empty()) o << "#SBATCH --qos=" << s.qos << "\n";
  if (s.cpus_per_task > 0) o << "#SBATCH --cpus-per-task=" << s.cpus_per_task << "\n";
  for (const auto& e : s.extra) o << "#SBATCH " << e << "\n";
  o << "set -u\n"
    << "# The scratch store is on the node's own disk (LMDB never goes on a shared\n"
    << "# filesystem) and goes when the task ends, however it ends; a TERM (scancel,\n"
    << "# the time limit) ends the task before its result's tag is written, so the\n"
    << "# remote holds the whole result or none of it.\n";
  if (t.scratch.empty()) {
    o << "scratch_parent=${KI_FLEET_SCRATCH:-${TMPDIR:-/tmp}}\n";
  } else {
    o << "scratch_parent=" << Quote(t.scratch) << "\n";
  }
  o << "scratch=$(mktemp -d \"$scratch_parent/ki-fleet-task.XXXXXXXX\") || exit 5\n"
    << "trap 'rm -rf -- \"$scratch\"' EXIT\n"
    << "trap 'exit 143' TERM\n"
    << Quote(t.ki) << " fleet task --remote " << Quote(t.remote);
  if (t.insecure) o << " --insecure";
  o << " --array-id \"$SLURM_ARRAY_TASK_ID\" --replicas " << spec.replicas << " --scratch \"$scratch\"";
  if (!t.device.empty()) o << " --device " << Quote(t.device);
  if (t.timeout_s > 0) o << " --timeout " << Number(t.timeout_s);
  o << " --tolerance " << Number(t.tolerance);
  if (!t.key.empty()) o << " --key " << Quote(t.key);
  if (!spec.context.empty()) o << " --context " << Quote(spec.context);
  o << " --runs - <<'KI_FLEET_RUNS' &\n";
  for (const Digest& d : spec.set.runs) o << d.str() << "\n";
  // In the background and waited for: bash runs a trap only between
  // commands, so a TERM reaches the shell's trap while ki (which gets its
  // own TERM from Slurm) ends.
  o << "KI_FLEET_RUNS\n"
    << "wait $!\n";
  return o.str();
}

}  // namespace ki::fleet
