#!/bin/bash
# One device call (issue 23, part 2): programmatic dependent launch on every
# batch, batch > 1 with the late trigger (a block lets the next launch start
# once its last K/V tile is requested), before/after in the same call,
# alternating: "base" is the GPU half of an older commit built from .base/
# (see README.md), "new" the tree, "nopdl" the tree with --tune pdl=2 (batch
# > 1: launched as before). Batch > 1 shapes of every mode checked with the
# new default (equal and random lengths), the target shapes and other shapes
# cold (CUPTI) and per call in a CUDA graph, the tiny batch-1 shapes in a
# graph, the 48 workloads of the definition (both builds, checked), test_gpu
# and the read floor (stream-probe). Lands in OUTDIR.
#
#   bench/gpu/pdl_late_ab.sh OUTDIR [REPS]
set -u
OUTDIR=${1:?usage: pdl_late_ab.sh OUTDIR [REPS]}
REPS=${2:-3}
exec > >(tee "$OUTDIR/pdl-late-ab.log") 2>&1
B=build-pdl-late
DEF=tests/data/flashinfer-bench/gqa_paged_decode_h32_kv4_d128_ps1.json
WL=tests/data/flashinfer-bench/gqa_paged_decode_h32_kv4_d128_ps1.jsonl
T0=$(date +%s)
stamp() { echo "== $1 (t=$(( $(date +%s) - T0 ))s)"; }
clocks() { nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,clocks.max.sm,clocks.max.mem,temperature.gpu,power.draw --format=csv,noheader; }
stamp machine
date -u
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,clocks.max.sm,clocks.max.mem,temperature.gpu,power.draw --format=csv
nvcc --version | tail -1
stamp build
GEN=""
command -v ninja >/dev/null && GEN="-G Ninja"
HAVE_BASE=0
if [ -d .base/bench/gpu ]; then
  rm -rf build-base  # from scratch: .base's file times are its commit's (see run_h200.sh)
  { cmake -S .base/bench/gpu -B build-base $GEN -DKI_CUDA_ARCHS=90a -DKI_DEPS_DIR="$PWD/.cache/deps" >/tmp/ki-base.log 2>&1 &&
    cmake --build build-base -j4 --target ki-kernel-bench >>/tmp/ki-base.log 2>&1; echo $? >/tmp/ki-base.rc; } &
  BASE_PID=$!
  HAVE_BASE=1
fi
if ! { cmake -S bench/gpu -B $B $GEN -DKI_CUDA_ARCHS=90a -DKI_DEPS_DIR="$PWD/.cache/deps" >/tmp/ki-build.log 2>&1 &&
       cmake --build $B -j12 --target ki-kernel-bench stream-probe test_gpu >>/tmp/ki-build.log 2>&1; }; then
  tail -60 /tmp/ki-build.log
  exit 1
fi
if [ $HAVE_BASE = 1 ]; then
  wait $BASE_PID
  [ "$(cat /tmp/ki-base.rc)" = 0 ] || { tail -20 /tmp/ki-base.log; HAVE_BASE=0; }
fi
echo "base build: $HAVE_BASE"
grep -iE "spill|stack frame" /tmp/ki-build.log | sort | uniq -c | head -5
bench() { local bin=$1; shift; timeout 300 $bin --definition $DEF "$@" </dev/null; }
NEW=$B/ki-kernel-bench
BASE=build-base/ki-kernel-bench
arms() {  # "name binary tune" lines
  [ $HAVE_BASE = 1 ] && echo "base $BASE -"
  echo "new $NEW -"
  echo "nopdl $NEW pdl=2"
}
tuned() { [ "$1" != - ] && echo --tune $1; }
MULTI=16x4096,64x8192,128x2048,7x1000,8x8192,12x4096,12x2048,32x2048,256x256,128x1024,64x512,2x17,3x50,16x1024
stamp "correctness: batch > 1 shapes of every mode with the new default, equal and random lengths, 2 seeds"
for l in equal random; do
  for seed in 1 2; do
    echo "-- lengths $l seed $seed: $(bench $NEW --synthetic $MULTI --lengths $l --seed $seed --no-time --json /dev/null |
      grep -E "synthetic" | awk '{printf "%s:%s ", $2, $5}')"
  done
done
echo "plans: $(bench $NEW --synthetic 16x4096,64x8192,1x4096,1x7 --no-time --show-plan --json /dev/null | grep plan: | sed 's/.*plan: //' | cut -d, -f1,6,11,12 | tr '\n' '|')"
TARGETS=1x362,1x4096,16x4096,64x8192,128x2048
stamp "A/B: target shapes, cold CUPTI (3 trials) and per call in a CUDA graph (20 calls)"
clocks
for r in $(seq "$REPS"); do
  while read -r name bin tune; do
    echo "-- rep $r arm $name"
    bench $bin --synthetic $TARGETS --no-check --trials 3 --graph-calls 20 $(tuned $tune) --json /dev/null | grep synthetic
  done < <(arms)
done
stamp "A/B: other shapes of every mode, cold CUPTI (2 trials) and graph (50 calls)"
OTHER=7x1000,8x8192,12x4096,12x2048,32x2048,256x256,128x1024,64x512,2x17,3x50,16x1024
for r in 1 2; do
  while read -r name bin tune; do
    echo "-- rep $r arm $name"
    bench $bin --synthetic $OTHER --no-check --trials 2 --graph-calls 50 $(tuned $tune) --json /dev/null | grep synthetic
  done < <(arms)
done
stamp "A/B: tiny batch-1 shapes, cold CUPTI and per call in a CUDA graph (100 calls)"
TINY=1x2,1x7,1x9,1x11,1x14
for r in $(seq "$REPS"); do
  while read -r name bin tune; do
    [ "$name" = nopdl ] && continue
    echo "-- rep $r arm $name"
    bench $bin --synthetic $TINY --no-check --trials 3 --graph-calls 100 $(tuned $tune) --json /dev/null | grep synthetic
  done < <(arms)
done
clocks
stamp "the 48 workloads, checked, cold CUPTI and graph (50 calls): base, new, nopdl, base, new, nopdl"
for r in 1 2; do
  while read -r name bin tune; do
    echo "-- rep $r arm $name"
    bench $bin --workloads $WL --graph-calls 50 $(tuned $tune) --json "$OUTDIR/workloads-$name-$r.json" --no-samples | tail -49
  done < <(arms)
done
stamp "GPU tests (tests/gpu), new"
timeout 300 $B/test_gpu 2>&1 | grep -E "OK \]|FAILED|PASSED|auto plan|Failure"
stamp "read floor (stream-probe, zero flush, median CUPTI span)"
timeout 120 $B/stream-probe --flush zero --iters 20 | grep -E "^(way|plain|head)"
clocks
stamp done
