#!/bin/bash
# One exploration call on the H200: build standalone (and, when .base/ holds
# an older snapshot of kernels/, src/harness, src/util, include/ and bench/gpu,
# that one too, for a same-machine before/after), run the GPU tests, compare
# base and new on the three target shapes and the 48 workloads (alternating
# runs), time the cold-L2 diagnostics (--flush kinds), sweep plan variants,
# and read DRAM traffic with ncu in application replay (so each pass sees the
# real flush before the kernel, dirty lines included).
#
#   bench/gpu/explore.sh OUTDIR [SWEEP_FILE]
# SWEEP_FILE: one --tune spec per line ("" for defaults). NCU_TUNES: specs
# (';'-separated) to read with ncu; NCU=0 skips ncu. AB_ROUNDS: alternations.
# VARIANTS: compile-time variants of the new tree, 'name:CUDA flags' entries
# (';'-separated), each built as its own ki-kernel-bench and timed in turn
# with the new one (the kernels read no such macro between experiments: add
# it for one, take it out with the result). RAGGED_TUNES: specs (';'-separated) for the ragged runs.
# SANITIZE=1: compute-sanitizer memcheck over two GPU tests. EXTRA_SHAPES:
# more synthetic shapes (BxT,...), timed with equal and random lengths under
# each of EXTRA_TUNES (';'-separated) and the base.
set -u
OUTDIR=${1:?usage: explore.sh OUTDIR [SWEEP_FILE]}
SWEEPS=${2:-}
exec > >(tee "$OUTDIR/run.log") 2>&1
export PYTHONUNBUFFERED=1
B=build-h200
BB=build-base
DEF=tests/data/flashinfer-bench/gqa_paged_decode_h32_kv4_d128_ps1.json
WL=tests/data/flashinfer-bench/gqa_paged_decode_h32_kv4_d128_ps1.jsonl
T3=1x362,16x4096,64x8192
T0=$(date +%s)
stamp() { echo "== $1 (t=$(( $(date +%s) - T0 ))s)"; }
# Target shapes, CUPTI, 2 trials, no check: "name=median" per shape.
targets() {
  local bin=$1
  shift
  timeout 90 $bin --definition $DEF --synthetic ${SHAPES:-$T3} --no-check --trials 2 --json /dev/null "$@" |
    awk '/synthetic/ {printf " %s=%s", $2, $10} /FAILED|error/ {printf " %s", $0} END {print ""}'
}

stamp machine
date -u
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,clocks.max.sm,clocks.max.mem --format=csv,noheader

stamp build
GEN=""
command -v ninja >/dev/null && GEN="-G Ninja"
DEPS="-DKI_DEPS_DIR=$PWD/.cache/deps"
{ cmake -S bench/gpu -B $B $GEN -DKI_CUDA_ARCHS=90a $DEPS -DCMAKE_CUDA_FLAGS="-Xptxas=-v" >/tmp/ki-build.log 2>&1 &&
  cmake --build $B -j12 >>/tmp/ki-build.log 2>&1; echo $? >/tmp/ki-build.rc; } &
PIDS=$!
HAVE_BASE=0
if [ -d .base/bench/gpu ]; then
  # Always from scratch: `git archive` gives the snapshot its commit's file times, older than
  # a build left by an earlier call on a warm machine, which ninja would then call up to date
  # (a before/after of 2026-11-30 compared the wrong "before" that way).
  rm -rf $BB
  { cmake -S .base/bench/gpu -B $BB $GEN -DKI_CUDA_ARCHS=90a $DEPS >/tmp/ki-base.log 2>&1 &&
    cmake --build $BB -j4 --target ki-kernel-bench >>/tmp/ki-base.log 2>&1; echo $? >/tmp/ki-base.rc; } &
  PIDS="$PIDS $!"
  HAVE_BASE=1
fi
IFS=';' read -ra VARS <<<"${VARIANTS:-}"
for v in "${VARS[@]}"; do
  { cmake -S bench/gpu -B build-var-${v%%:*} $GEN -DKI_CUDA_ARCHS=90a $DEPS "-DCMAKE_CUDA_FLAGS=${v#*:}" \
      >/tmp/ki-var-${v%%:*}.log 2>&1 &&
    cmake --build build-var-${v%%:*} -j4 --target ki-kernel-bench >>/tmp/ki-var-${v%%:*}.log 2>&1 ||
    tail -20 /tmp/ki-var-${v%%:*}.log; } &
  PIDS="$PIDS $!"
done
wait $PIDS  # by pid: a bare wait also waits for the tee of the process substitution above
if [ "$(cat /tmp/ki-build.rc)" != 0 ]; then
  grep -E "error" /tmp/ki-build.log | head -30
  tail -30 /tmp/ki-build.log
  exit 1
fi
grep -A1 "Compiling entry.*GqaDecode" /tmp/ki-build.log | grep -E "registers" | sort | uniq -c | head
if [ $HAVE_BASE = 1 ] && [ "$(cat /tmp/ki-base.rc)" != 0 ]; then
  tail -20 /tmp/ki-base.log
  HAVE_BASE=0
fi

stamp "GPU tests"
timeout 300 $B/test_gpu >"$OUTDIR/gpu-tests.log" 2>&1
echo "test_gpu exit $?"
grep -E "^\[  (PASSED|FAILED) |^\[  FAILED|Failure|GPU:|timer:|worst|tests? ran|Expected|Which is" \
  "$OUTDIR/gpu-tests.log" | head -40

stamp "plans"
$B/ki-kernel-bench --definition $DEF --synthetic $T3 --no-check --no-time --show-plan | grep -E "plan:|synthetic"

if [ $HAVE_BASE = 1 ]; then
  stamp "base vs new, target shapes (CUPTI, cold L2, mean of 2 trial medians, us), alternating"
  for r in $(seq 1 ${AB_ROUNDS:-3}); do
    printf "%-8s" "base"; targets $BB/ki-kernel-bench
    printf "%-8s" "new"; targets $B/ki-kernel-bench
  done | tee "$OUTDIR/ab.txt"
  stamp "base vs new, 48 workloads (CUPTI, cold, 2 trials), alternating"
  for r in 1 2; do
    for side in base new; do
      bin=$B/ki-kernel-bench
      [ $side = base ] && bin=$BB/ki-kernel-bench
      timeout 120 $bin --definition $DEF --workloads $WL --trials 2 --no-samples --json /tmp/w48-$side-$r.json \
        >/tmp/w48-$side-$r.txt 2>&1
      echo "[$side $r] exit $? $(grep -c passed /tmp/w48-$side-$r.txt) passed"
    done
  done
  python3 - <<'PY' | tee -a "$OUTDIR/ab.txt"
import json
runs = {k: json.load(open(f"/tmp/w48-{k}.json")) for k in ["base-1", "new-1", "base-2", "new-2"]}
def key(r, i):
    w = r.get("workload")
    return w["uuid"] if isinstance(w, dict) else r.get("workload_uuid", str(i))
rows = {}
for k, rs in runs.items():
    for i, r in enumerate(rs):
        u = key(r, i)
        rows.setdefault(u, {"batch": r.get("axes", {}).get("batch_size"), "tokens": r.get("axes", {}).get("num_kv_indices")})
        rows[u][k] = r.get("timing", {}).get("latency_us", float("nan"))
print(f"{'workload':22} {'batch':>5} {'tokens':>7} {'base-1':>8} {'new-1':>8} {'base-2':>8} {'new-2':>8}")
groups = {}
for u, v in rows.items():
    print(f"{u[:22]:22} {v['batch']:5} {v['tokens']:7} " + " ".join(f"{v.get(k, float('nan')):8.2f}" for k in runs))
    g = groups.setdefault(v["batch"], {k: 0.0 for k in runs})
    for k in runs: g[k] += v.get(k, 0.0)
for b, g in sorted(groups.items()):
    print(f"sum batch {b:<3}" + " " * 23 + " ".join(f"{g[k]:8.1f}" for k in runs))
PY
fi

if [ ${#VARS[@]} -gt 0 ]; then
  stamp "compile-time variants against new, alternating (CUPTI, cold L2, mean of 2 trial medians, us)"
  for r in $(seq 1 ${AB_ROUNDS:-3}); do
    printf "%-12s" "new"; targets $B/ki-kernel-bench
    for v in "${VARS[@]}"; do
      printf "%-12s" "${v%%:*}"; targets build-var-${v%%:*}/ki-kernel-bench
    done
  done | tee -a "$OUTDIR/tables.txt"
  for v in "${VARS[@]}"; do
    printf "%-12s" "${v%%:*} ragged"; targets build-var-${v%%:*}/ki-kernel-bench --lengths random
  done | tee -a "$OUTDIR/tables.txt"
  # The 48 workloads, summed by batch size, new and each variant in turn.
  for r in 1 2; do
    for v in "new:" "${VARS[@]}"; do
      bin=build-var-${v%%:*}/ki-kernel-bench
      [ "${v%%:*}" = new ] && bin=$B/ki-kernel-bench
      timeout 120 $bin --definition $DEF --workloads $WL --trials 2 --no-samples --no-check --json /tmp/v48.json >/dev/null 2>&1
      python3 -c "
import json, sys
s = {}
for r in json.load(open('/tmp/v48.json')):
    b = r['axes']['batch_size']; s[b] = s.get(b, 0.0) + r['timing']['latency_us']
print('%-12s 48 workloads: ' % sys.argv[1] + '  '.join('batch %d %.1f us' % (b, t) for b, t in sorted(s.items())))
" "${v%%:*}"
    done
  done | tee -a "$OUTDIR/tables.txt"
fi

if [ "${SANITIZE:-0}" = 1 ]; then
  stamp "compute-sanitizer memcheck over the prediction and empty-sequence tests"
  timeout 120 compute-sanitizer --tool memcheck --error-exitcode 9 $B/test_gpu \
    --gtest_filter='GpuFast.PredictionMissIsRedone:GpuFast.EmptySequences' 2>&1 |
    grep -E "ERROR SUMMARY|PASSED|FAILED|Invalid|out of bounds" | head -8
  echo "[memcheck] exit ${PIPESTATUS[0]}"
fi

stamp "L2 flush kinds (new, default plan)"
for kind in zero read zero-read none; do
  printf "%-12s" "[$kind]"
  if [ $kind = none ]; then targets $B/ki-kernel-bench --no-flush; else targets $B/ki-kernel-bench --flush $kind; fi
done | tee -a "$OUTDIR/tables.txt"
for tune in "evict_first=1" "evict_first=2"; do
  for kind in zero read; do
    printf "%-12s" "[$kind] [$tune]"
    targets $B/ki-kernel-bench --flush $kind --tune $tune
  done
done | tee -a "$OUTDIR/tables.txt"

stamp "ragged lengths (--lengths random), auto against plain split and per-head"
IFS=';' read -ra RT <<<"${RAGGED_TUNES:-;mode=2;mode=1}"
for tune in "${RT[@]}"; do
  printf "%-24s" "[$tune]"
  targets $B/ki-kernel-bench --lengths random --tune "$tune"
done | tee -a "$OUTDIR/tables.txt"
if [ $HAVE_BASE = 1 ]; then printf "%-12s" "[base]"; targets $BB/ki-kernel-bench --lengths random | tee -a "$OUTDIR/tables.txt"; fi

if [ -n "${EXTRA_SHAPES:-}" ]; then
  stamp "more shapes ($EXTRA_SHAPES), equal and random lengths, by tune"
  IFS=';' read -ra XT <<<"${EXTRA_TUNES:-}"
  [ ${#XT[@]} = 0 ] && XT=("")
  for lengths in equal random; do
    for tune in "${XT[@]}"; do
      printf "%-30s" "[$tune] $lengths"
      SHAPES=$EXTRA_SHAPES targets $B/ki-kernel-bench --lengths $lengths --tune "$tune"
    done
    if [ $HAVE_BASE = 1 ]; then printf "%-30s" "[base] $lengths"; SHAPES=$EXTRA_SHAPES targets $BB/ki-kernel-bench --lengths $lengths; fi
  done | tee -a "$OUTDIR/tables.txt"
fi

if [ -n "$SWEEPS" ]; then
  stamp "sweep: targets (CUPTI, cold L2, mean of 2 trial medians, us)"
  mapfile -t TUNES <"$SWEEPS"
  for tune in "${TUNES[@]}"; do
    printf "%-40s" "[$tune]"
    targets $B/ki-kernel-bench --tune "$tune"
  done | tee -a "$OUTDIR/tables.txt"
fi

NCU_BIN=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
if [ "${NCU:-1}" != 0 ] && [ -n "$NCU_BIN" ]; then
  stamp "ncu, application replay: DRAM bytes during the kernel after each flush kind"
  IFS=';' read -ra NT <<<"${NCU_TUNES:-}"
  [ ${#NT[@]} = 0 ] && NT=("")
  for tune in "${NT[@]}"; do
    for shape in 16x4096 64x8192; do
      for kind in zero read; do
        echo "--- [$tune] $shape flush=$kind"
        timeout 120 $NCU_BIN --replay-mode application --clock-control none --cache-control none -k regex:GqaDecode -c 1 \
          --metrics gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,lts__t_sector_hit_rate.pct \
          $B/ki-kernel-bench --definition $DEF --synthetic $shape --no-check --warmup 0 --iters 1 --trials 1 --events \
          --flush $kind --tune "$tune" --json /dev/null 2>&1 | grep -E "gpu__time|dram__|lts__|==ERROR|==WARNING" | tail -5
      done
    done
  done 2>&1 | tee "$OUTDIR/ncu.txt"
fi
nvidia-smi --query-gpu=clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv,noheader
stamp done
