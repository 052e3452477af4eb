// Child processes for builds and isolated kernel runs: fork, optional exec,
// output to a file, a wall-clock limit enforced with SIGKILL on the child's
// whole process group.
#pragma once

#include <functional>
#include <string>
#include <vector>

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

// Forks; the child runs fn (stdout/stderr to log_path) and _exits with its
// return value, never returning into the caller's stack or touching the
// parent's resources (the store's LMDB environment) on its way out.
Result<ProcessEnd> RunForked(const std::function<int()>& fn, const std::string& log_path, double timeout_s);

// The first line a command prints (e.g. `c++ --version`); empty on failure.
std::string FirstLineOf(const std::vector<std::string>& argv, const std::string& match = "");

}  // namespace ki::run::internal
