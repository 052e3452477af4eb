#!/bin/bash
# One exploration call: the pipeline depth of the automatic cluster plans.
# The automatic split plan groups an average sequence's chunks into clusters at
# 4 stages if enough of them are resident at once, else 3, else 2; on
# 2026-12-02 15x4370 in 15 clusters of 8 measured 40.6 us at 2 stages against
# 41.2-41.3 at 3 and 4 (gqa-clusters-h200-2026-12-02.md). For each shape whose
# automatic plan is clusters of C > 1, the automatic plan against the same
# clusters and work items forced to 2, 3 and 4 stages (equal lengths: the
# predicted plan; a forced depth keeps the launch's chunk after a miss, so
# random lengths are not compared here). Every arm checked first; cold CUPTI
# medians, arms alternating. Then the timeline build on 15x4370 at 2 and 4 stages.
#
#   bench/gpu/depth_explore.sh OUTDIR [REPS] [SHAPES]
set -u
OUTDIR=${1:?usage: depth_explore.sh OUTDIR [REPS] [SHAPES]}
REPS=${2:-2}
SHAPES=${3:-15x4096,15x4370,8x8192,13x4096,12x4096,32x2048,32x4096,48x8192,64x8192,16x8192,4x16384}
exec > >(tee "$OUTDIR/depth-explore.log") 2>&1
B=build-depth
BT=build-depth-tl
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
DEPS="-DKI_DEPS_DIR=$PWD/.cache/deps"
{ cmake -S bench/gpu -B $B $GEN -DKI_CUDA_ARCHS=90a $DEPS >/tmp/ki-build.log 2>&1 &&
  cmake --build $B -j12 --target ki-kernel-bench >>/tmp/ki-build.log 2>&1; echo $? >/tmp/ki-build.rc; } &
P1=$!
{ cmake -S bench/gpu -B $BT $GEN -DKI_CUDA_ARCHS=90a $DEPS -DCMAKE_CUDA_FLAGS=-DKI_GQA_TIMELINE >/tmp/ki-tl.log 2>&1 &&
  cmake --build $BT -j4 --target ki-kernel-bench >>/tmp/ki-tl.log 2>&1; echo $? >/tmp/ki-tl.rc; } &
P2=$!
wait $P1 $P2
if [ "$(cat /tmp/ki-build.rc)" != 0 ]; then
  tail -40 /tmp/ki-build.log
  exit 1
fi
bench() { timeout 120 $B/ki-kernel-bench --definition $DEF "$@" </dev/null; }
tuneopt() { [ "${1#*:}" != - ] && echo --tune "${1#*:}"; }
stamp "automatic plans, and the arms of the cluster plans"
ARMS=""
for shape in ${SHAPES//,/ }; do
  plan=$(bench --synthetic $shape --no-time --show-plan --json /dev/null | grep plan: | sed 's/.*plan: //')
  echo "$shape: $(echo "$plan" | cut -c1-120)"
  c=$(echo "$plan" | sed -n 's/^cluster, cluster \([0-9]*\), chunk \([0-9]*\) .*/\1/p')
  w=$(echo "$plan" | sed -n 's/^cluster, cluster \([0-9]*\), chunk \([0-9]*\) .*/\2/p')
  [ -n "$c" ] && [ "$c" -gt 1 ] || continue
  ARMS="$ARMS $shape:-"
  for s in 2 3 4; do ARMS="$ARMS $shape:mode=3,cluster=$c,chunk=$((w / c)),stages=$s"; done
done
stamp "correctness: every arm, equal and random lengths"
for arm in $ARMS; do
  r=$(for l in equal random; do
    bench --synthetic "${arm%%:*}" --lengths $l --seed 3 --no-time $(tuneopt "$arm") --json /dev/null |
      grep -E "synthetic" | awk -v l=$l '{printf "%s/%s:%s ", $2, l, $5}'
  done)
  echo "$arm: $r"
done
for arm in $ARMS; do
  echo "$arm: $(bench --synthetic "${arm%%:*}" --no-time --show-plan $(tuneopt "$arm") --json /dev/null | grep plan: | sed 's/.*plan: //' | cut -c1-110)"
done
stamp "cold CUPTI (2 trials of 50), arms alternating"
clocks
for r in $(seq "$REPS"); do
  for arm in $ARMS; do
    printf "rep %s %-50s " $r "$arm"
    bench --synthetic "${arm%%:*}" --no-check --trials 2 $(tuneopt "$arm") --json /dev/null | grep synthetic | cut -c1-150
  done
done
clocks
if [ "$(cat /tmp/ki-tl.rc)" = 0 ]; then
  stamp "timeline build, 15x4370 at 2 and 4 stages (stamping syncs: read the shape, not the totals)"
  mkdir -p /tmp/tl
  for s in 2 4; do
    for k in 1 2; do
      KI_TIMELINE_OUT=/tmp/tl/s$s-$k timeout 60 $BT/ki-kernel-bench --definition $DEF --synthetic 15x4370 --no-check \
        --warmup 0 --iters 2 --trials 1 --tune mode=3,cluster=8,chunk=560,stages=$s --json /dev/null </dev/null >/dev/null
      echo "-- stages $s launch $k"
      python3 bench/gpu/timeline.py /tmp/tl/s$s-$k.15x4370 | sed -n 1,10p
    done
  done
fi
stamp done
