#!/bin/bash
# One device call (issue 23, part 2): which parts of the batch-1 instance's
# kLean bits help, one tile (<= 16 tokens) and more, per call in a CUDA graph
# and cold CUPTI, alternating with the build of .base/ ("base") in the same
# call. --tune lean=N takes the instance with bits N - 1 (kernels/
# gqa_paged_decode/fast.cu: 1 index first, 2 sums by mma, 4 direct stores,
# 8 one tile, 16 four chains, 32 approximate rcp/lg2 and no run-time test
# in the final store, 64 an empty body after the PDL wait: the launch
# chain's own cost, not a kernel, 128 byte addressing of the copies). Every
# arm is checked first. NCU_CASES="SHAPE:LEAN ..." adds ncu warp states and
# stall samples (every 32 cycles) of those calls, warm.
#
#   bench/gpu/lean_bits.sh OUTDIR [REPS]
set -u
OUTDIR=${1:?usage: lean_bits.sh OUTDIR [REPS]}
REPS=${2:-5}
exec > >(tee "$OUTDIR/lean-bits.log") 2>&1
B=build-lean
DEF=tests/data/flashinfer-bench/gqa_paged_decode_h32_kv4_d128_ps1.json
T0=$(date +%s)
stamp() { echo "== $1 (t=$(( $(date +%s) - T0 ))s)"; }
clocks() { nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,clocks.max.sm,clocks.max.mem,temperature.gpu,power.draw --format=csv,noheader; }
stamp machine
date -u
clocks
stamp build
GEN=""
command -v ninja >/dev/null && GEN="-G Ninja"
HAVE_BASE=0
if [ -d .base/bench/gpu ]; then
  rm -rf build-base
  { cmake -S .base/bench/gpu -B build-base $GEN -DKI_CUDA_ARCHS=90a -DKI_DEPS_DIR="$PWD/.cache/deps" >/tmp/ki-base.log 2>&1 &&
    cmake --build build-base -j4 --target ki-kernel-bench >>/tmp/ki-base.log 2>&1; echo $? >/tmp/ki-base.rc; } &
  BASE_PID=$!
  HAVE_BASE=1
fi
if ! { cmake -S bench/gpu -B $B $GEN -DKI_CUDA_ARCHS=90a -DKI_DEPS_DIR="$PWD/.cache/deps" >/tmp/ki-build.log 2>&1 &&
       cmake --build $B -j12 --target ki-kernel-bench >>/tmp/ki-build.log 2>&1; }; then
  tail -60 /tmp/ki-build.log
  exit 1
fi
if [ $HAVE_BASE = 1 ]; then
  wait $BASE_PID
  [ "$(cat /tmp/ki-base.rc)" = 0 ] || { tail -20 /tmp/ki-base.log; HAVE_BASE=0; }
fi
echo "base build: $HAVE_BASE"
OBJ=$(find $B -name 'fast.cu.o' | head -1)
cuobjdump -sass "$OBJ" | awk '
  /Function :/ { name = $3; keep = name ~ /GqaDecodeILi2ELi3ELb1ELi/ }
  keep && /\/\*[0-9a-f]+\*\// { n[name]++ }
  END { for (k in n) printf "%s: %d instructions\n", k, n[k] }' | sed 's/.*GqaDecode/GqaDecode/' | sort
bench() { local bin=$1; shift; timeout 300 $bin --definition $DEF "$@" </dev/null; }
NEW=$B/ki-kernel-bench
BASE=build-base/ki-kernel-bench
TINY_ARMS=${TINY_ARMS:-"b0 b2 b8 b10 b32 b128 b160 b42 b138 b170 b64"}
MID_ARMS=${MID_ARMS:-"b0 b2 b7 b32 b128 b160 b162 b167 b163"}
tune_of() { echo "lean=$(( ${1#b} + 1 ))"; }
stamp "correctness: batch-1 lengths, every arm but b64"
ONE=1x1,1x2,1x7,1x14,1x16,1x17,1x31,1x33,1x64,1x65,1x362,1x2048
for arm in $(echo $TINY_ARMS $MID_ARMS | tr ' ' '\n' | sort -u); do
  [ $arm = b64 ] && continue
  echo "$arm: $(bench $NEW --synthetic $ONE --seed 3 --no-time --tune $(tune_of $arm) --json /dev/null |
    awk '/synthetic/ {n++; if ($5 == "passed") ok++; else bad = bad " " $2} END {printf "%d/%d passed%s", ok, n, bad}')"
done
row() {  # arm shapes -> "arm shape cold graph" lines
  local arm=$1 bin=$NEW t=""
  if [ $arm = base ]; then bin=$BASE; else t="--tune $(tune_of $arm)"; fi
  bench $bin --synthetic $2 --no-check --trials 3 --graph-calls 100 $t --json /dev/null |
    awk -v a=$arm '/synthetic/ {sub("synthetic-", "", $2); print a, $2, $10, $13}'
}
TINY=1x1,1x2,1x7,1x9,1x11,1x14,1x16
MID=1x17,1x33,1x64,1x65,1x362,1x1024,1x2048
stamp "A/B, up to 16 tokens: arm shape cold_us graph_us"
clocks
for r in $(seq "$REPS"); do
  [ $HAVE_BASE = 1 ] && row base $TINY
  for arm in $TINY_ARMS; do row $arm $TINY; done
done
stamp "A/B, 17 to 2048 tokens"
for r in $(seq "$REPS"); do
  [ $HAVE_BASE = 1 ] && row base $MID
  for arm in $MID_ARMS; do row $arm $MID; done
done
clocks
for c in ${NCU_CASES:-}; do
  shape=${c%:*}; lean=${c#*:}
  rep="$OUTDIR/ncu-$shape-lean$lean"
  stamp "ncu $shape lean=$lean"
  timeout 240 ncu --clock-control none --cache-control none --replay-mode kernel -k regex:GqaDecode --launch-skip 4 \
    --launch-count 1 --section WarpStateStats --section SourceCounters --sampling-interval 0 --import-source no -o "$rep" \
    $NEW --definition $DEF --synthetic $shape --no-check --no-flush --warmup 2 --iters 4 --trials 1 --tune lean=$lean \
    --json /dev/null >/tmp/ncu.out 2>&1 || tail -20 /tmp/ncu.out
  ncu --import "$rep.ncu-rep" --page source --print-source sass --csv > "$rep-sass.csv" 2>&1
  rm -f "$rep.ncu-rep"
done
stamp done
