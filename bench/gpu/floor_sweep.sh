#!/usr/bin/env bash
# One device call: the read floor of the GQA decode's random pages, every way
# paged-sweep knows (paged_sweep.cu's head) against the plain contiguous read,
# alternating over REPS repetitions, at 16x4096's and 64x8192's bytes; then
# stream-probe as before, for continuity. Clocks are sampled, never set.
# KERNEL=1: ki's fast kernel on 16x4096 and 64x8192 too (checked against the
# CUDA reference first, then cold CUPTI), one run of each between one-rep
# sweeps, so its distance from every arm comes from the same call.
# NOMATH=1 (with KERNEL=1): also the -DKI_GQA_NO_MATH build of the kernel (its
# loop touches every tile but does no arithmetic; outputs wrong, not checked)
# beside it, to split the kernel's time into streaming and the rest.
#   [KERNEL=1 [NOMATH=1]] [KI_DEPS_DIR=DIR] bench/gpu/floor_sweep.sh OUTDIR [REPS]
set -uo pipefail
out=${1:?OUTDIR}; reps=${2:-3}
src=$(cd "$(dirname "$0")/../.." && pwd)
b=${BUILD:-/tmp/ki-floor-sweep}
mkdir -p "$out"
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,clocks.max.sm,temperature.gpu,power.draw --format=csv; } | tee "$out/machine.txt"
targets="paged-sweep stream-probe"
[ "${KERNEL:-0}" = 1 ] && targets="$targets ki-kernel-bench"
if [ "${NOMATH:-0}" = 1 ]; then
  { cmake -S "$src/bench/gpu" -B "$b-nomath" -DKI_CUDA_ARCHS=90a ${KI_DEPS_DIR:+-DKI_DEPS_DIR=$KI_DEPS_DIR} \
      -DCMAKE_CUDA_FLAGS=-DKI_GQA_NO_MATH >"$out/build-nomath.log" 2>&1 &&
    cmake --build "$b-nomath" -j8 --target ki-kernel-bench >>"$out/build-nomath.log" 2>&1; echo $? >"$out/nomath.rc"; } &
  nm=$!
fi
cmake -S "$src/bench/gpu" -B "$b" -DKI_CUDA_ARCHS=90a ${KI_DEPS_DIR:+-DKI_DEPS_DIR=$KI_DEPS_DIR} >"$out/build.log" 2>&1 &&
  cmake --build "$b" -j16 --target $targets >>"$out/build.log" 2>&1 || { tail -40 "$out/build.log"; exit 1; }
if [ "${NOMATH:-0}" = 1 ]; then
  wait "$nm"
  [ "$(cat "$out/nomath.rc")" = 0 ] || { tail -40 "$out/build-nomath.log"; exit 1; }
fi
nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv -lms 100 >"$out/clocks.csv" 2>&1 &
smi=$!
rc=0
if [ "${KERNEL:-0}" = 1 ]; then
  def="$src/tests/data/flashinfer-bench/gqa_paged_decode_h32_kv4_d128_ps1.json"
  kb() { timeout 120 "$b/ki-kernel-bench" --definition "$def" "$@" </dev/null; }
  for shape in 16x4096 64x8192; do
    for l in equal random; do
      kb --synthetic $shape --lengths $l --seed 1 --no-time --json /dev/null | grep synthetic || rc=1
    done
    kb --synthetic $shape --no-time --show-plan --json /dev/null | grep plan: | cut -c1-160
  done 2>&1 | tee "$out/kernel-check.log"
  for r in $(seq "$reps"); do
    for shape in 16x4096 64x8192; do
      printf "rep %s ki %s " "$r" "$shape"
      kb --synthetic $shape --no-check --trials 3 --json /dev/null | grep synthetic | cut -c1-170
      if [ "${NOMATH:-0}" = 1 ]; then
        printf "rep %s ki-nomath %s " "$r" "$shape"
        timeout 120 "$b-nomath/ki-kernel-bench" --definition "$def" --synthetic $shape --no-check --trials 3 \
          --json /dev/null </dev/null | grep synthetic | cut -c1-170
      fi
    done
    "$b/paged-sweep" --reps 1 --tokens 65536,524288 2>&1 || rc=1
  done 2>&1 | tee "$out/paged-sweep.log"
else
  "$b/paged-sweep" --reps "$reps" --tokens 65536,524288 2>&1 | tee "$out/paged-sweep.log"
  rc=${PIPESTATUS[0]}
fi
"$b/stream-probe" --flush zero --iters 30 >"$out/stream-probe.log" 2>&1
kill "$smi"
python3 - "$out/clocks.csv" <<'PY' | tee -a "$out/machine.txt"
import sys, csv
rows = [r for r in csv.reader(open(sys.argv[1])) if r and r[0][:1].isdigit()]
sm = [int(r[1].split()[0]) for r in rows]; mem = [int(r[2].split()[0]) for r in rows]
busy = [s for s in sm if s > 1000]
print(f"clock samples {len(sm)}: SM {min(sm)}-{max(sm)} MHz (busy {min(busy) if busy else '-'}-{max(busy) if busy else '-'}), memory {min(mem)}-{max(mem)} MHz")
PY
date -u | tee -a "$out/machine.txt"
exit $rc
