// Python and Triton implementations in `ki run` (flashinfer-bench solutions
// and definitions' references): which python3 to use, what it has, and the
// implementation's files on disk. Internal to src/run.
#pragma once

#include <string>

#include "ki/env.h"
#include "ki/harness.h"
#include "ki/json.h"
#include "ki/run.h"

namespace ki::run::internal {

// What ki learnt of the python3 it asked (KI_PYTHON, else python3 on PATH).
struct PythonFacts {
  harness::PythonRuntime runtime;
  std::string executable;  // sys.executable
  std::string version;     // "3.11.2"
  std::string torch;       // torch.__version__
  std::string triton;      // "" when triton cannot be imported
};

// Runs the interpreter once to learn its library, home, sys.path and the
// versions of torch and triton. NotFound naming exactly what is missing: no
// python3, no shared libpython beside it, torch not importable (with the
// import error), triton not importable when `need_triton`. `scratch` is a
// directory for the probe's output.
Result<PythonFacts> FindPython(Env& env, const std::string& scratch, bool need_triton);

// How an implementation in Python is called: the file (relative to its
// sources) and function of its entry point, and its calling style.
struct PythonEntry {
  std::string file;      // "main.py"
  std::string function;  // "run"
  bool destination_passing = true;  // flashinfer-bench's default
};
inline constexpr std::string_view kInterfaceDps = "flashinfer_bench_destination_passing";
inline constexpr std::string_view kInterfaceReturning = "flashinfer_bench_returning";
// From an ImplementationRevision's callable (path, symbol, interface);
// `fallback_dps` when the interface does not say (a record from KernelIndex).
Result<PythonEntry> PythonEntryOf(const Json& callable, bool fallback_dps);

// Writes the sources under cache/py/<source digest hex>/ (once: a whole
// directory is renamed into place) and returns that directory.
Result<std::string> MaterializeSources(Env& env, const std::string& cache_dir, const Digest& source,
                                       const SourceBundle& bundle);

// The compiler line that ExecutionEnvironment.software.compiler records for
// a run on this kind of device (nvcc's release line, or the C++ compiler's
// version), whatever the implementation's language: the field describes
// the machine's toolchain, so runs of C-ABI and Python implementations on
// one machine share an environment (and a comparison group).
std::string ToolchainLine(Env& env, bool cuda);

}  // namespace ki::run::internal
