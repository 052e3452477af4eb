#!/usr/bin/env bash
# Configures and builds ki (Release) in build/. Used by quickstart.sh and test.sh.
#
#   scripts/build.sh [--quick] [CMAKE_ARGS...]
#
# --quick builds the `ki` command alone: no tests, no benches, and no CUDA
# kernels unless KI_WITH_CUDA=ON is in the environment (the quick start runs
# none of them). Without it, everything is built, the GPU kernels included
# when CMake finds a CUDA compiler (KI_WITH_CUDA=OFF in the environment
# leaves them out). Both use the same build/ directory, so the test command
# after a quick start compiles only what the quick start left out.
set -euo pipefail
cd "$(dirname "$0")/.."
quick=0
if [ "${1:-}" = "--quick" ]; then
  quick=1
  shift
fi
jobs=$(nproc 2>/dev/null || echo 2)
if [ $quick = 1 ]; then
  cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DKI_WITH_CUDA="${KI_WITH_CUDA:-OFF}" "$@" >/dev/null
  cmake --build build -j"$jobs" --target ki
else
  cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DKI_WITH_CUDA="${KI_WITH_CUDA:-ON}" "$@" >/dev/null
  cmake --build build -j"$jobs"
fi
