// What Slurm says about a job array's tasks (squeue, sacct, scontrol), and
// running those commands.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <sstream>

#include "ki/fleet.h"

extern char** environ;

namespace ki::fleet {

namespace {

std::vector<std::string_view> Split(std::string_view s, char sep) {
  std::vector<std::string_view> out;
  size_t start = 0;
  for (;;) {
    size_t p = s.find(sep, start);
    out.push_back(s.substr(start, p == std::string_view::npos ? std::string_view::npos : p - start));
    if (p == std::string_view::npos) return out;
    start = p + 1;
  }
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\r')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

std::optional<uint64_t> ParseU64(std::string_view s) {
  if (s.empty() || s.size() > 18) return std::nullopt;
  uint64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return std::nullopt;
    v = v * 10 + uint64_t(c - '0');
  }
  return v;
}

// "12_3" -> one task; "12_[4-9,11%2]" -> tasks 4..9 and 11; "12" -> none
// (not an array task: the array's own line before it is split).
Status ParseJobId(std::string_view id, std::string_view where, TaskState state, std::string_view detail,
                  std::vector<JobTask>* out) {
  size_t us = id.find('_');
  if (us == std::string_view::npos) return Status::OK();
  std::string job(id.substr(0, us));
  std::string_view rest = id.substr(us + 1);
  auto bad = [&] { return Status::InvalidInput(std::string(where) + ": '" + std::string(id) + "' is not a job array task id"); };
  if (!ParseU64(job)) return bad();
  if (rest.size() >= 2 && rest.front() == '[' && rest.back() == ']') {
    rest = rest.substr(1, rest.size() - 2);
    rest = rest.substr(0, rest.find('%'));
    for (std::string_view part : Split(rest, ',')) {
      size_t dash = part.find('-');
      auto a = ParseU64(part.substr(0, dash));
      auto b = dash == std::string_view::npos ? a : ParseU64(part.substr(dash + 1));
      if (!a || !b || *b < *a || *b - *a > 1000000) return bad();
      for (uint64_t i = *a; i <= *b; ++i) out->push_back({job, i, state, std::string(detail)});
    }
    return Status::OK();
  }
  auto i = ParseU64(rest);
  if (!i) return bad();
  out->push_back({job, *i, state, std::string(detail)});
  return Status::OK();
}

}  // namespace

std::string_view TaskStateName(TaskState s) {
  switch (s) {
    case TaskState::kPending: return "pending";
    case TaskState::kRunning: return "running";
    case TaskState::kCompleted: return "completed";
    case TaskState::kFailed: return "failed";
    case TaskState::kCancelled: return "cancelled";
    case TaskState::kTimeout: return "timeout";
    case TaskState::kNodeFail: return "node-fail";
    case TaskState::kOutOfMemory: return "out-of-memory";
    case TaskState::kPreempted: return "preempted";
    case TaskState::kUnknown: break;
  }
  return "unknown";
}

TaskState TaskStateFromSlurm(std::string_view word) {
  word = Trim(word);
  word = word.substr(0, word.find(' '));  // "CANCELLED by 0"
  struct Name {
    std::string_view full, brief;
    TaskState state;
  };
  static constexpr Name kNames[] = {
      {"PENDING", "PD", TaskState::kPending},         {"REQUEUED", "RQ", TaskState::kPending},
      {"CONFIGURING", "CF", TaskState::kRunning},     {"RUNNING", "R", TaskState::kRunning},
      {"COMPLETING", "CG", TaskState::kRunning},      {"SUSPENDED", "S", TaskState::kRunning},
      {"COMPLETED", "CD", TaskState::kCompleted},     {"FAILED", "F", TaskState::kFailed},
      {"BOOT_FAIL", "BF", TaskState::kNodeFail},      {"DEADLINE", "DL", TaskState::kTimeout},
      {"CANCELLED", "CA", TaskState::kCancelled},     {"TIMEOUT", "TO", TaskState::kTimeout},
      {"NODE_FAIL", "NF", TaskState::kNodeFail},      {"OUT_OF_MEMORY", "OOM", TaskState::kOutOfMemory},
      {"PREEMPTED", "PR", TaskState::kPreempted},     {"REVOKED", "RV", TaskState::kCancelled},
      {"SPECIAL_EXIT", "SE", TaskState::kFailed},
  };
  for (const Name& n : kNames)
    if (word == n.full || word == n.brief) return n.state;
  return TaskState::kUnknown;
}

bool IsFinal(TaskState s) {
  return s != TaskState::kPending && s != TaskState::kRunning && s != TaskState::kUnknown;
}

namespace {

// squeue's and sacct's `--parsable2`-style output: one task a line,
// ID|STATE|DETAIL (squeue's REASON, sacct's ExitCode). `tool` and
// `columns` name them in errors; sacct also lists each job's steps
// (`123_4.batch`, `123_4.extern`), which are not tasks.
enum class Steps { kNone, kSkip };
Result<std::vector<JobTask>> ParsePipeLines(std::string_view text, std::string_view tool, std::string_view columns,
                                            Steps steps) {
  std::vector<JobTask> out;
  int n = 0;
  for (std::string_view line : Split(text, '\n')) {
    ++n;
    line = Trim(line);
    if (line.empty()) continue;
    auto f = Split(line, '|');
    const std::string where = std::string(tool) + " output line " + std::to_string(n);
    if (f.size() < 2) return Status::InvalidInput(where + ": expected " + std::string(columns));
    std::string_view id = Trim(f[0]);
    if (steps == Steps::kSkip && id.find('.') != std::string_view::npos) continue;
    KI_RETURN_IF_ERROR(ParseJobId(id, where, TaskStateFromSlurm(f[1]), f.size() > 2 ? Trim(f[2]) : "", &out));
  }
  return out;
}

}  // namespace

Result<std::vector<JobTask>> ParseSqueue(std::string_view text) {
  return ParsePipeLines(text, "squeue", "JOBID|STATE|REASON", Steps::kNone);
}

Result<std::vector<JobTask>> ParseSacct(std::string_view text) {
  return ParsePipeLines(text, "sacct", "JobID|State|ExitCode", Steps::kSkip);
}

Result<std::vector<JobTask>> ParseScontrol(std::string_view text) {
  std::vector<JobTask> out;
  for (std::string_view line : Split(text, '\n')) {
    line = Trim(line);
    if (line.empty()) continue;
    std::string job, task, state, exit_code;
    for (std::string_view word : Split(line, ' ')) {
      size_t eq = word.find('=');
      if (eq == std::string_view::npos) continue;
      std::string_view k = word.substr(0, eq), v = word.substr(eq + 1);
      if (k == "ArrayJobId") job = v;
      if (k == "ArrayTaskId") task = v;
      if (k == "JobState") state = v;
      if (k == "ExitCode") exit_code = v;
    }
    if (job.empty() || task.empty()) continue;
    KI_RETURN_IF_ERROR(ParseJobId(job + "_" + (task.find_first_of("-,") != std::string::npos ? "[" + task + "]" : task),
                                  "scontrol output", TaskStateFromSlurm(state), exit_code, &out));
  }
  return out;
}

Result<CommandOutput> RunCommand(const std::vector<std::string>& argv, std::string_view input) {
  if (argv.empty()) return Status::InvalidInput("no command to run");
  int in[2], out[2], err[2];
  if (pipe2(in, O_CLOEXEC) != 0) return Status::IOError(std::string("pipe: ") + std::strerror(errno));
  if (pipe2(out, O_CLOEXEC) != 0 || pipe2(err, O_CLOEXEC) != 0) {
    close(in[0]), close(in[1]);
    return Status::IOError(std::string("pipe: ") + std::strerror(errno));
  }
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, in[0], 0);
  posix_spawn_file_actions_adddup2(&fa, out[1], 1);
  posix_spawn_file_actions_adddup2(&fa, err[1], 2);
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = 0;
  int rc = posix_spawnp(&pid, args[0], &fa, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  close(in[0]), close(out[1]), close(err[1]);
  if (rc != 0) {
    close(in[1]), close(out[0]), close(err[0]);
    return Status::IOError("cannot run " + argv[0] + ": " + std::strerror(rc));
  }
  // Feed stdin and drain both outputs together: a child that writes much
  // before it reads all its input must not block on a full pipe.
  CommandOutput res;
  size_t fed = 0;
  if (input.empty()) {
    close(in[1]);
    in[1] = -1;
  } else {
    // Non-blocking: a write the pipe cannot take whole must not wait while
    // the child, its output pipe full, waits for us to read.
    fcntl(in[1], F_SETFL, fcntl(in[1], F_GETFL) | O_NONBLOCK);
  }
  // A child that exits before reading all its input: EPIPE, not SIGPIPE.
  struct sigaction ignore = {}, old_pipe = {};
  ignore.sa_handler = SIG_IGN;
  sigaction(SIGPIPE, &ignore, &old_pipe);
  int open_fds = 2;
  while (open_fds > 0 || in[1] >= 0) {
    pollfd fds[3];
    int nf = 0;
    if (out[0] >= 0) fds[nf++] = {out[0], POLLIN, 0};
    if (err[0] >= 0) fds[nf++] = {err[0], POLLIN, 0};
    if (in[1] >= 0) fds[nf++] = {in[1], POLLOUT, 0};
    if (poll(fds, nf, -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    for (int i = 0; i < nf; ++i) {
      if (!fds[i].revents) continue;
      if (fds[i].fd == in[1]) {
        ssize_t w = write(in[1], input.data() + fed, input.size() - fed);
        if (w > 0) fed += size_t(w);
        if ((w < 0 && errno != EAGAIN && errno != EINTR) || fed == input.size()) {
          close(in[1]);
          in[1] = -1;
        }
        continue;
      }
      char buf[65536];
      ssize_t r = read(fds[i].fd, buf, sizeof buf);
      if (r > 0) {
        (fds[i].fd == out[0] ? res.out : res.err).append(buf, size_t(r));
      } else if (r == 0 || errno != EINTR) {
        close(fds[i].fd);
        (fds[i].fd == out[0] ? out[0] : err[0]) = -1;
        --open_fds;
      }
    }
  }
  sigaction(SIGPIPE, &old_pipe, nullptr);
  int st = 0;
  while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
  }
  res.exit_code = WIFEXITED(st) ? WEXITSTATUS(st) : WIFSIGNALED(st) ? 128 + WTERMSIG(st) : -1;
  return res;
}

}  // namespace ki::fleet
