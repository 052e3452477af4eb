#!/usr/bin/env bash
# Configures and builds ki (Release) in build/. Used by quickstart.sh and test.sh.
#
#   scripts/build.sh [--quick] [CMAKE_ARGS...]
#
# --quick builds the `ki` command alone: no tests, no benches, and no CUDA
# kernels unless KI_WITH_CUDA=ON is in the environment (the quick start runs
# none of them), compiled the cheap way (KI_QUICK: unity batches at -O1,
# CMakeLists.txt). Without it, everything is built file by file at -O3, the
# GPU kernels included when CMake finds a CUDA compiler (KI_WITH_CUDA=OFF in
# the environment leaves them out). Both use the same build/ directory: the
# test command after a quick start recompiles kicore and ki its own way
# (ccache keeps both ways, so switching back and forth is cheap after once).
set -euo pipefail
cd "$(dirname "$0")/.."
quick=0
if [ "${1:-}" = "--quick" ]; then
  quick=1
  shift
fi
jobs=$(nproc 2>/dev/null || echo 2)
if [ $quick = 1 ]; then
  cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DKI_QUICK=ON -DKI_WITH_CUDA="${KI_WITH_CUDA:-OFF}" "$@" >/dev/null
  cmake --build build -j"$jobs" --target ki
else
  cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DKI_QUICK=OFF -DKI_WITH_CUDA="${KI_WITH_CUDA:-ON}" "$@" >/dev/null
  cmake --build build -j"$jobs"
fi
