// Child processes for builds and isolated kernel runs: fork, optional exec,
// output to a file, a wall-clock limit enforced with SIGKILL on the child's
// whole process group.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "ki/env.h"
#include "ki/status.h"

namespace ki::run::internal {

struct ProcessEnd {
  bool timed_out = false;
  bool signaled = false;
  int signal = 0;
  int exit_code = -1;
  double seconds = 0;
  std::string Describe() const;  // "exit 1", "killed by SIGSEGV (Segmentation fault)", "timed out after 5 s"
};

// Runs `argv` (argv[0] looked up in PATH) with stdout and stderr appended to
// `log_path`, in `cwd` when not empty.
Result<ProcessEnd> RunCommand(const std::vector<std::string>& argv, const std::string& log_path,
                              const std::string& cwd, double timeout_s);

// The largest file a forked run child may write (RLIMIT_FSIZE): its log and
// its result. A kernel that prints without end is killed by SIGXFSZ there
// instead of filling the disk until its timeout.
constexpr uint64_t kMaxChildFileBytes = 256ull << 20;

// Forks; the child runs fn (stdout/stderr to log_path, no file over
// kMaxChildFileBytes) and _exits with its return value, never returning into
// the caller's stack or touching the parent's resources (the store's LMDB
// environment) on its way out.
Result<ProcessEnd> RunForked(const std::function<int()>& fn, const std::string& log_path, double timeout_s);

// The log a child wrote, for storing: whole when it is at most keep_bytes,
// else its first and last keep_bytes / 2 around a line saying how much was
// left out (the start says what ran, the end how it ended), cut at line
// ends. Empty when the file cannot be read.
std::string ReadLog(Env& env, const std::string& path, uint64_t keep_bytes);

// What a build's or a run's log blob keeps of the compiler's or the kernel's
// output (ReadLog's keep_bytes).
constexpr uint64_t kMaxStoredLogBytes = 16ull << 20;

// The first line a command prints (e.g. `c++ --version`); empty on failure.
// The command writes to a temporary file of /tmp itself; `env` reads it.
std::string FirstLineOf(Env& env, const std::vector<std::string>& argv, const std::string& match = "");

}  // namespace ki::run::internal
