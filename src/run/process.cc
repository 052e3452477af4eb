#include "run/process.h"

#include <fcntl.h>
#include <sys/resource.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <sstream>
#include <thread>

#include "ki/env.h"

namespace ki::run::internal {
namespace {

// Waits for pid, killing its process group after timeout_s.
ProcessEnd Wait(pid_t pid, double timeout_s) {
  ProcessEnd end;
  const auto t0 = std::chrono::steady_clock::now();
  int status = 0;
  bool reaped = false;
  auto sleep_for = std::chrono::microseconds(200);
  for (;;) {
    pid_t r = ::waitpid(pid, &status, WNOHANG);
    if (r == pid) {
      reaped = true;
      break;
    }
    if (r < 0 && errno != EINTR) break;  // its end is unknown: not "exit 0"
    double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (timeout_s > 0 && elapsed > timeout_s) {
      ::kill(-pid, SIGKILL);
      ::kill(pid, SIGKILL);
      while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
      }
      end.timed_out = true;
      break;
    }
    std::this_thread::sleep_for(sleep_for);
    if (sleep_for < std::chrono::milliseconds(20)) sleep_for *= 2;
  }
  end.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (!end.timed_out && reaped) {
    if (WIFEXITED(status)) end.exit_code = WEXITSTATUS(status);
    if (WIFSIGNALED(status)) {
      end.signaled = true;
      end.signal = WTERMSIG(status);
    }
  }
  return end;
}

// Forks a child in its own process group (so a timeout kills all it
// started) with stdout and stderr appended to log_path and files limited to
// max_file_bytes (0: as inherited), runs `child` there and exits with what
// it returns; the parent waits. The log is opened here,
// not through Env: the child needs a descriptor to dup2, which Env's files
// deliberately do not expose.
Result<ProcessEnd> ForkLogged(const std::string& log_path, double timeout_s, uint64_t max_file_bytes,
                              const std::function<int()>& child) {
  int fd = ::open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) return ErrnoStatus("open", log_path, errno);
  // A SIGCHLD ignored by whoever started ki (SIG_IGN, or SA_NOCLDWAIT,
  // survives exec) has the system reap children unasked: waitpid then fails
  // with ECHILD and the child's end is lost (a crashed kernel read as
  // "exit 0", a failed compile as a success). ki waits for its children.
  struct sigaction chld = {};
  chld.sa_handler = SIG_DFL;
  ::sigemptyset(&chld.sa_mask);
  ::sigaction(SIGCHLD, &chld, nullptr);
  std::fflush(nullptr);  // nothing buffered is written twice
  const pid_t parent = ::getpid();
  pid_t pid = ::fork();
  if (pid < 0) {
    int err = errno;
    ::close(fd);
    return Status::IOError(std::string("fork: ") + std::strerror(err));
  }
  if (pid == 0) {
    ::setpgid(0, 0);
    // Only the parent enforces the timeout, and in its own process group the
    // child never gets the terminal's Ctrl-C: were the parent killed (Ctrl-C,
    // kill -9), a hung kernel would spin on for ever. It dies with the
    // parent instead (the setting survives exec: a compiler driver too).
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) _exit(1);  // the parent died before prctl
    ::dup2(fd, 1);
    ::dup2(fd, 2);
    // A guard against a runaway print loop, not a sandbox: only the soft
    // limit is lowered (a hard limit would need privilege to lift later).
    struct rlimit lim;
    if (max_file_bytes && ::getrlimit(RLIMIT_FSIZE, &lim) == 0 &&
        (lim.rlim_cur == RLIM_INFINITY || lim.rlim_cur > max_file_bytes)) {
      lim.rlim_cur = max_file_bytes;
      ::setrlimit(RLIMIT_FSIZE, &lim);
    }
    int rc = 1;
    try {
      rc = child();
    } catch (const std::exception& e) {
      std::fprintf(stderr, "ki: run child: %s\n", e.what());
    }
    std::fflush(nullptr);
    _exit(rc);
  }
  ::setpgid(pid, pid);
  ::close(fd);
  return Wait(pid, timeout_s);
}

}  // namespace

std::string ProcessEnd::Describe() const {
  char buf[128];
  if (timed_out) {
    std::snprintf(buf, sizeof buf, "timed out after %.0f s", seconds);
  } else if (signaled) {
    const char* abbrev = sigabbrev_np(signal);
    std::snprintf(buf, sizeof buf, "killed by SIG%s (%s)", abbrev ? abbrev : "?", strsignal(signal));
  } else {
    std::snprintf(buf, sizeof buf, "exit %d", exit_code);
  }
  return buf;
}

Result<ProcessEnd> RunCommand(const std::vector<std::string>& argv, const std::string& log_path,
                              const std::string& cwd, double timeout_s) {
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  return ForkLogged(log_path, timeout_s, 0, [&]() -> int {
    if (!cwd.empty() && ::chdir(cwd.c_str()) != 0) return 126;
    ::execvp(args[0], args.data());
    std::fprintf(stderr, "ki: cannot run %s: %s\n", args[0], std::strerror(errno));
    return 127;
  });
}

Result<ProcessEnd> RunForked(const std::function<int()>& fn, const std::string& log_path, double timeout_s) {
  return ForkLogged(log_path, timeout_s, kMaxChildFileBytes, fn);
}

std::string ReadLog(Env& env, const std::string& path, uint64_t keep_bytes) {
  auto file = env.NewSequentialFile(path);
  if (!file.ok()) return "";
  const uint64_t half = keep_bytes / 2;
  std::string head, tail;  // the first `half` bytes; what follows, trimmed to its last `half`
  uint64_t total = 0;
  std::string buf(64 << 10, '\0');
  for (;;) {
    auto n = (*file)->Read(buf.data(), buf.size());
    if (!n.ok() || *n == 0) break;  // keep what was read: a log is evidence, not data to verify
    std::string_view chunk(buf.data(), *n);
    total += chunk.size();
    const size_t to_head = std::min<uint64_t>(chunk.size(), half - head.size());
    head.append(chunk.substr(0, to_head));
    tail.append(chunk.substr(to_head));
    // Amortised: an erase once per `half` bytes read. One byte more than
    // `half` is kept, to tell whether the tail starts at a line.
    if (tail.size() > keep_bytes) tail.erase(0, tail.size() - half - 1);
  }
  if (total <= keep_bytes) return head + tail;
  const bool tail_at_line = tail[tail.size() - half - 1] == '\n';  // tail.size() > half here: total > 2 * half
  tail.erase(0, tail.size() - half);
  // Cut at line ends, so that neither side starts or ends in half a line.
  if (size_t nl = head.rfind('\n'); nl != std::string::npos) head.resize(nl + 1);
  if (size_t nl = tail.find('\n'); !tail_at_line && nl != std::string::npos && nl + 1 < tail.size())
    tail.erase(0, nl + 1);
  // (Not "ki: ...": run.cc takes the child's last such line as its message.)
  return head + "[... " + std::to_string(total - head.size() - tail.size()) + " bytes of output left out by ki, of " +
         std::to_string(total) + " ...]\n" + tail;
}

std::string FirstLineOf(Env& env, const std::vector<std::string>& argv, const std::string& match) {
  char tmpl[] = "/tmp/ki-version-XXXXXX";
  int fd = ::mkstemp(tmpl);
  if (fd < 0) return "";
  ::close(fd);
  auto end = RunCommand(argv, tmpl, "", 30);
  auto text = env.ReadFile(tmpl, 1 << 20);
  std::istringstream lines(text.ok() ? *text : std::string());
  std::string out;
  for (std::string s; std::getline(lines, s);) {
    while (!s.empty() && s.back() == '\r') s.pop_back();
    if (s.empty()) continue;
    if (match.empty() || s.find(match) != std::string::npos) {
      out = s;
      break;
    }
  }
  (void)env.RemoveFile(tmpl);
  if (!end.ok() || end->exit_code != 0) return "";
  return out;
}

}  // namespace ki::run::internal
