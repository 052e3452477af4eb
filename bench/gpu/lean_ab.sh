#!/bin/bash
# One device call (issue 23, part 2): before/after in the same call,
# alternating. "base" is the GPU half of an older commit built from .base/
# (see README.md); in the new binary, --tune lean=1 takes the batch-1
# instance's kLean bits back (lean=2: sums by mma only). Batch-1 lengths
# checked on every arm, then batch-1 shapes, the target shapes, other shapes
# of every mode, the 48 workloads of the definition (both builds, checked),
# random lengths, test_gpu and the read floor (stream-probe). Lands in OUTDIR.
#
#   bench/gpu/lean_ab.sh OUTDIR [REPS]
set -u
OUTDIR=${1:?usage: lean_ab.sh OUTDIR [REPS]}
REPS=${2:-3}
exec > >(tee "$OUTDIR/lean-ab.log") 2>&1
B=build-lean
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
stamp "SASS size of the 2-stage cluster instances (GqaDecode<2, 3, whole, kLean>)"
OBJ=$(find $B -name 'fast.cu.o' | head -1)
cuobjdump -sass "$OBJ" | awk '
  /Function :/ { name = $3; keep = name ~ /GqaDecodeILi2ELi3E/ }
  keep && /\/\*[0-9a-f]+\*\// { n[name]++ }
  END { for (k in n) printf "%s: %d instructions\n", k, n[k] }' | sed 's/.*GqaDecode/GqaDecode/' | sort
bench() { local bin=$1; shift; timeout 300 $bin --definition $DEF "$@" </dev/null; }
NEW=$B/ki-kernel-bench
BASE=build-base/ki-kernel-bench
arms() {  # "name binary tune" lines
  [ $HAVE_BASE = 1 ] && echo "base $BASE -"
  echo "new $NEW -"
  echo "lean1 $NEW lean=1"
}
stamp "correctness: batch-1 lengths on every arm of the new binary, 2 seeds"
ONE=1x1,1x2,1x7,1x9,1x11,1x14,1x15,1x16,1x17,1x31,1x32,1x33,1x63,1x64,1x65,1x100,1x362,1x1000,1x2047,1x2048,1x2049,1x4096
for tune in - lean=1 lean=2 pdl=2; do
  for seed in 1 2; do
    echo "-- tune $tune seed $seed"
    bench $NEW --synthetic $ONE --seed $seed --no-time $( [ "$tune" != - ] && echo --tune $tune) --json /dev/null |
      grep -E "synthetic" | awk '{printf "%s:%s ", $2, $5} END {print ""}'
  done
done
TINY=1x2,1x7,1x9,1x11,1x14,1x1,1x16,1x17,1x33,1x64,1x65,1x141,1x362,1x546,1x1024,1x2048,1x4096
stamp "A/B: batch-1 shapes, cold CUPTI median and per call in a CUDA graph (100 calls)"
clocks
for r in $(seq "$REPS"); do
  while read -r name bin tune; do
    echo "-- rep $r arm $name"
    bench $bin --synthetic $TINY --no-check --trials 3 --graph-calls 100 $( [ "$tune" != - ] && echo --tune $tune) --json /dev/null |
      grep synthetic
  done < <(arms)
done
clocks
TARGETS=1x362,1x4096,16x4096,64x8192,128x2048
stamp "A/B: target shapes, cold CUPTI and graph (20 calls)"
for r in $(seq "$REPS"); do
  while read -r name bin tune; do
    [ "$name" = base ] || [ "$name" = new ] || continue
    echo "-- rep $r arm $name"
    bench $bin --synthetic $TARGETS --no-check --trials 3 --graph-calls 20 --json /dev/null | grep synthetic
  done < <(arms)
done
stamp "A/B: other shapes of every mode, cold CUPTI (2 trials)"
OTHER=7x1000,8x8192,12x4096,12x2048,32x2048,256x256,128x1024,64x512,2x17,3x50
for r in 1 2; do
  while read -r name bin tune; do
    [ "$name" = base ] || [ "$name" = new ] || continue
    echo "-- rep $r arm $name"
    bench $bin --synthetic $OTHER --no-check --trials 2 --json /dev/null | grep synthetic
    bench $bin --synthetic $OTHER --lengths random --no-check --trials 2 --json /dev/null | grep synthetic | sed 's/synthetic-/random-/'
  done < <(arms)
done
stamp "the 48 workloads, checked, cold CUPTI and graph (50 calls): base, new, base, new"
for r in 1 2; do
  for name in base new; do
    [ $name = base ] && [ $HAVE_BASE = 0 ] && continue
    bin=$NEW; [ $name = base ] && bin=$BASE
    echo "-- rep $r arm $name"
    bench $bin --workloads $WL --graph-calls 50 --json "$OUTDIR/workloads-$name-$r.json" --no-samples | tail -49
  done
done
stamp "random lengths (prediction misses), checked, new"
bench $NEW --synthetic 16x4096,64x8192,128x2048,7x1000,3x50,2x17 --lengths random --json /dev/null | grep -E "synthetic|FAIL|incorrect"
stamp "GPU tests (tests/gpu), new"
timeout 300 $B/test_gpu 2>&1 | grep -E "OK \]|FAILED|PASSED|auto plan|Failure"
stamp "read floor (stream-probe, zero flush, median CUPTI span)"
timeout 120 $B/stream-probe --flush zero --iters 20 | grep -E "^(way|plain|head)"
clocks
stamp done
