#!/bin/bash
# What CI cannot run, on a GPU machine that lacks ki's build dependencies:
# the GPU tests (test_gpu), the CLI's GPU test (tests/cli/run_gpu.sh: ki
# add --implementation, ki run, ki rerun, ki rank, ki verify) and the fleet's
# GPU path (tests/cli/fleet_gpu.sh: two runners' re-runs through the batch
# script and a registry on loopback, collected as replicated), with binaries
# built elsewhere by the CI configuration and carried here. ki and test_gpu
# link their dependencies statically; `ki run` needs nvcc on this machine.
#
#   bench/gpu/device_check.sh BINDIR OUTDIR [LABEL]
#
# LABEL (e.g. the commit the binaries were built from) heads machine.txt:
# the device's copy of the tree need not carry git history.
# BINDIR holds ki, test_gpu and libki_gqa_kernels.so (from build/,
# build/tests/ and build/kernels/), and docker-registry (Debian's
# /usr/bin/docker-registry: a static Go binary, it runs anywhere) for the
# fleet test, which skips without it. The test binary's compiled-in paths are
# replaced through KI_TEST_DATA_DIR and KI_GQA_KERNELS_SO. Writes
# machine.txt, gpu-tests.log, run-gpu.log and fleet-gpu.log (plus the tests' result
# files) to OUTDIR; exits non-zero when a test failed.
set -u
BIN=$(readlink -f "${1:?usage: device_check.sh BINDIR OUTDIR}")
OUTDIR=$(readlink -f "${2:?usage: device_check.sh BINDIR OUTDIR}")
cd "$(dirname "$0")/../.."
mkdir -p "$OUTDIR"
{
  date -u
  echo "ki: ${3:-(unlabelled build)}"
  nvidia-smi --query-gpu=name,driver_version,compute_cap,clocks.sm,clocks.max.sm,clocks.mem --format=csv
  nvcc --version | tail -2
  for f in ki test_gpu libki_gqa_kernels.so; do
    echo "$f: $(sha256sum "$BIN/$f" | cut -c1-16) $(ldd "$BIN/$f" 2>/dev/null | grep -c '=>') shared libraries"
  done
} >"$OUTDIR/machine.txt" 2>&1
cat "$OUTDIR/machine.txt"

rc=0
KI_TEST_DATA_DIR="$PWD/tests/data" KI_GQA_KERNELS_SO="$BIN/libki_gqa_kernels.so" \
  "$BIN/test_gpu" >"$OUTDIR/gpu-tests.log" 2>&1 || rc=1
tail -5 "$OUTDIR/gpu-tests.log"

KI_RESULTS_DIR="$OUTDIR" bash tests/cli/run_gpu.sh "$BIN/ki" "$PWD/tests/data" >"$OUTDIR/run-gpu.log" 2>&1 || rc=1
tail -5 "$OUTDIR/run-gpu.log"

PATH="$BIN:$PATH" KI_RESULTS_DIR="$OUTDIR" bash tests/cli/fleet_gpu.sh "$BIN/ki" "$PWD/tests/data" >"$OUTDIR/fleet-gpu.log" 2>&1 || rc=1
tail -5 "$OUTDIR/fleet-gpu.log"
echo "device_check: $([ $rc = 0 ] && echo passed || echo FAILED)"
exit $rc
