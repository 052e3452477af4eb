#!/bin/bash
# One device call: build the GPU half standalone, run the GPU tests, sweep the
# fast kernel's plan, bench the issue's three target shapes and all 48
# workloads (CUPTI and CUDA events), run the PyTorch peers side by side, and
# print the joined tables. With .base/ holding an older snapshot of the GPU
# half (kernels, src/harness, src/util, include, bench/gpu, tests/gpu), that
# is built too and compared in the same call (ab.txt). Also the cold-L2
# diagnostics (--flush read / zero-read), random (ragged) lengths, and the read
# floor of the same bytes (stream-probe).
# Everything lands in OUTDIR (at most 8 files).
#
# The snapshot (ignored by git, so the device tool's call must carry it, with
# .cache for the carried dependencies):
#   mkdir .base && git archive REV kernels bench/gpu src/harness src/util include tests/gpu | tar -x -C .base
#
#   bench/gpu/run_h200.sh OUTDIR [--no-sweep] [--no-torch]
set -u
OUTDIR=${1:?usage: run_h200.sh OUTDIR}
shift
SWEEP=1
TORCH=1
for a in "$@"; do
  case $a in
    --no-sweep) SWEEP=0 ;;
    --no-torch) TORCH=0 ;;
  esac
done
exec > >(tee "$OUTDIR/run.log") 2>&1
export PYTHONUNBUFFERED=1
B=build-h200
DEF=tests/data/flashinfer-bench/gqa_paged_decode_h32_kv4_d128_ps1.json
WL=tests/data/flashinfer-bench/gqa_paged_decode_h32_kv4_d128_ps1.jsonl
T0=$(date +%s)
stamp() { echo "== $1 (t=$(( $(date +%s) - T0 ))s)"; }

stamp machine
date -u
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,clocks.max.sm,clocks.max.mem,power.limit,persistence_mode --format=csv
nvcc --version | tail -2
cmake --version | head -1
python3 -c "import torch; print('torch', torch.__version__, torch.version.cuda)"
echo -n "full-build deps: "
for p in libssl-dev libsodium-dev libzstd-dev liblmdb-dev nlohmann-json3-dev libyaml-cpp-dev libcli11-dev libgtest-dev libcurl4-openssl-dev; do
  dpkg -s $p >/dev/null 2>&1 && echo -n "$p=yes " || echo -n "$p=no "
done
echo
ls /usr/local/cuda/extras/CUPTI/lib64/libcupti.so* /usr/local/cuda/lib64/libcupti.so* 2>/dev/null | head -3

stamp build
GEN=""
command -v ninja >/dev/null && GEN="-G Ninja"
HAVE_BASE=0
if [ -d .base/bench/gpu ]; then
  # Always from scratch: `git archive` gives the snapshot its commit's file times, older than
  # a build left by an earlier call on a warm machine, which ninja would then call up to date
  # (a before/after of 2026-11-30 compared the wrong "before" that way).
  rm -rf build-base
  { cmake -S .base/bench/gpu -B build-base $GEN -DKI_CUDA_ARCHS=90a -DKI_DEPS_DIR="$PWD/.cache/deps" >/tmp/ki-base.log 2>&1 &&
    cmake --build build-base -j4 --target ki-kernel-bench >>/tmp/ki-base.log 2>&1; echo $? >/tmp/ki-base.rc; } &
  BASE_PID=$!
  HAVE_BASE=1
fi
if ! { cmake -S bench/gpu -B $B $GEN -DKI_CUDA_ARCHS=90a -DKI_DEPS_DIR="$PWD/.cache/deps" >/tmp/ki-build.log 2>&1 &&
       cmake --build $B -j12 >>/tmp/ki-build.log 2>&1; }; then
  tail -60 /tmp/ki-build.log
  exit 1
fi
grep -E "registers|spill" /tmp/ki-build.log | head -8
if [ $HAVE_BASE = 1 ]; then
  wait $BASE_PID  # by pid: a bare wait also waits for the tee above
  [ "$(cat /tmp/ki-base.rc)" = 0 ] || { tail -20 /tmp/ki-base.log; HAVE_BASE=0; }
fi
targets() {
  local bin=$1
  shift
  timeout 90 $bin --definition $DEF --synthetic 1x362,16x4096,64x8192 --no-check --trials 2 --json /dev/null "$@" |
    awk '/synthetic/ {printf " %s=%s", $2, $10} /FAILED|error/ {printf " %s", $0} END {print ""}'
}

stamp "GPU tests"
timeout 300 $B/test_gpu >"$OUTDIR/gpu-tests.log" 2>&1
echo "test_gpu exit $?"
grep -E "^\[  (PASSED|FAILED) |^\[  FAILED|Failure|GPU:|timer:|worst|tests? ran" "$OUTDIR/gpu-tests.log" | head -40

stamp plans
$B/ki-kernel-bench --definition $DEF --synthetic 1x362,16x4096,64x8192 --no-check --no-time --show-plan | grep "plan:"

if [ $HAVE_BASE = 1 ]; then
  stamp "before (.base) and after, same call, alternating (CUPTI, cold L2, mean of 2 trial medians, us)"
  {
    for r in 1 2 3; do
      printf "%-8s" "before"; targets build-base/ki-kernel-bench
      printf "%-8s" "after"; targets $B/ki-kernel-bench
    done
    for side in before after; do
      bin=$B/ki-kernel-bench
      [ $side = before ] && bin=build-base/ki-kernel-bench
      timeout 120 $bin --definition $DEF --workloads $WL --trials 2 --no-samples --no-check --json /tmp/w48-$side.json >/dev/null 2>&1
    done
    python3 - <<'PY'
import json
sums = {}
for side in ["before", "after"]:
    for r in json.load(open(f"/tmp/w48-{side}.json")):
        b = r.get("axes", {}).get("batch_size")
        sums.setdefault(b, {}).setdefault(side, 0.0)
        sums[b][side] += r.get("timing", {}).get("latency_us", 0.0)
for b, v in sorted(sums.items()):
    print(f"48 workloads, batch {b}: sum before {v['before']:.1f} us, after {v['after']:.1f} us ({100 * (v['after'] / v['before'] - 1):+.1f}%)")
PY
    printf "%-16s" "ragged before"; targets build-base/ki-kernel-bench --lengths random
    printf "%-16s" "ragged after"; targets $B/ki-kernel-bench --lengths random
    # Shapes around the targets whose plans differ more often (equal and random lengths).
    bench/gpu/ab_shapes.sh build-base $B 12x4096,12x2048,13x4096,12x8192,8x8192,32x2048 2
  } | tee "$OUTDIR/ab.txt"
fi

if [ $SWEEP = 1 ]; then
  stamp "plan sweep (CUPTI, cold L2, no check)"
  for tune in "" "mode=1" "mode=2" "mode=2,stages=4" "mode=3,cluster=8,stages=2" "mode=3,cluster=2,stages=4" \
              "evict_first=1" "evict_first=2" "predict=2"; do
    printf "%-30s" "[$tune]"
    targets $B/ki-kernel-bench --tune "$tune"
  done
  stamp "random (ragged) lengths"
  for tune in "" "mode=1" "mode=2" "miss_waves=1"; do
    printf "%-30s" "[$tune] ragged"
    targets $B/ki-kernel-bench --tune "$tune" --lengths random
  done
fi

stamp "cold-L2 diagnostics: L2 flush by a read sweep (clean), zero then read, and no flush"
for kind in read zero-read; do
  printf "%-30s" "[flush $kind]"
  targets $B/ki-kernel-bench --flush $kind
done
printf "%-30s" "[no flush]"
targets $B/ki-kernel-bench --no-flush

stamp "read floor: the same bytes read with no arithmetic (stream-probe, zero flush, median CUPTI span)"
timeout 120 $B/stream-probe --flush zero --iters 20 | grep -E "^(way|plain|head|steal)"

stamp "targets"
timeout 120 $B/ki-kernel-bench --definition $DEF --synthetic 1x362,16x4096,64x8192 --graph-calls 20 \
  --json "$OUTDIR/ki-targets.json" ${KI_TUNE:+--tune $KI_TUNE}
timeout 120 $B/ki-kernel-bench --definition $DEF --synthetic 1x362,16x4096,64x8192 --events --no-check \
  --json "$OUTDIR/ki-targets-events.json" ${KI_TUNE:+--tune $KI_TUNE} | tail -5

stamp "48 workloads"
timeout 200 $B/ki-kernel-bench --definition $DEF --workloads $WL --graph-calls 20 --json "$OUTDIR/ki-48.json" \
  ${KI_TUNE:+--tune $KI_TUNE}
timeout 120 $B/ki-kernel-bench --definition $DEF --workloads $WL --events --no-check \
  --json "$OUTDIR/ki-48-events.json" ${KI_TUNE:+--tune $KI_TUNE} | tail -2

if [ $TORCH = 1 ]; then
  stamp "PyTorch side by side"
  timeout 240 python3 bench/gpu/torch_side_by_side.py $DEF --synthetic 1x362,16x4096,64x8192 --workloads $WL \
    --out "$OUTDIR/torch.json" | tail -60
fi

stamp report
python3 bench/gpu/report.py --targets --ki-cupti "$OUTDIR/ki-targets.json" --ki-events "$OUTDIR/ki-targets-events.json" \
  --torch "$OUTDIR/torch.json" 2>&1
python3 bench/gpu/report.py --ki-cupti "$OUTDIR/ki-48.json" --ki-events "$OUTDIR/ki-48-events.json" \
  --torch "$OUTDIR/torch.json" 2>&1 | head -4
nvidia-smi --query-gpu=clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv
stamp done
