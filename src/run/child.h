// The child process of ki run: it loads the kernel (a library, or Python),
// runs the harness and writes its result where the parent reads it; and the
// files a killed run leaves in the cache. Internal to src/run.
#pragma once

#include <optional>
#include <string>

#include "ki/env.h"
#include "ki/harness.h"
#include "run/task.h"

namespace ki::run::internal {

// What a child needs for Python: the interpreter, the implementation when it
// is Python, the definition's reference when it is timed too (--speedup).
struct ChildPython {
  harness::PythonRuntime runtime;
  std::optional<harness::PythonKernelSpec> implementation;
  std::optional<harness::PythonKernelSpec> reference;
};

// Where the child writes the reference's result (--speedup), beside its own.
std::string ReferenceResultPath(const std::string& result_path);

// The child: load the library, find the kernel, run the harness, write its
// result. Runs in a fresh process; never returns into the parent's code.
// Its exit code: 0, 3 (no such kernel), 4 (no device), 5 (result unwritten).
int ChildMain(Env& env, const std::string& library, const std::string& symbol, const Task& task, const Device& dev,
              const HarnessSettings& s, uint64_t seed, double timeout_s, const std::string& result_path,
              const ChildPython* py);

// Files a ki run that was killed (kill -9, a crash) left in the cache: its
// child's log and result (cache/runs/run-<pid>-<t>.*, up to
// kMaxChildFileBytes each) and its build directory (cache/build/
// tmp-<key>-<pid>). Each name carries the pid of the ki that made it; a
// pid no longer alive made a leftover. Best effort: whatever cannot be
// removed stays for the next run. (A store shared by ki processes in
// different pid namespaces would see each other's pids as dead: one store,
// one machine, as LMDB's lock file also assumes.)
void RemoveLeftovers(Env* env, const std::string& cache);

}  // namespace ki::run::internal
