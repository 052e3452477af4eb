#!/bin/bash
# One exploration call (issue 23, part 2, lead 1 of gqa-balance-h200-2026-12-02.md):
# what 16x4096 could gain from a partition with no SM running two blocks, told
# by plans the bench can already launch (no kernel change), before writing one.
#
# - The lever's own bound: 15 clusters of 8 (the most that are resident at one
#   block per SM on this H200) carrying the 16th sequence's tokens spread over
#   them is at best 15 sequences of 4096 * 16 / 15 = 4370 tokens (the same
#   65,536 tokens and bytes, the same 546 tokens a block, no second work item
#   and no global merge of the 16th sequence): 15x4370 at 4, 3 and 2 stages.
#   15x4096 beside it (15/16 of the bytes).
# - No stacking with every SM's neighbour used but a global merge per sequence:
#   16x4096 in clusters of 2 or 4 (4 or 2 work items of 1024 / 2048 tokens a
#   sequence, 128 blocks at one per SM) and plain split at 512 tokens a block.
# Every arm is checked against ki's CUDA reference (equal and random lengths)
# before it is timed; cold CUPTI medians (zeroing flush) and per call in a CUDA
# graph, arms alternating in every repetition. Then the KI_GQA_TIMELINE build
# on the main arms (timeline.py) and the read floor (stream-probe). Lands in OUTDIR.
#
#   bench/gpu/clusters_explore.sh OUTDIR [REPS]
set -u
OUTDIR=${1:?usage: clusters_explore.sh OUTDIR [REPS]}
REPS=${2:-3}
exec > >(tee "$OUTDIR/clusters-explore.log") 2>&1
B=build-clusters
BT=build-clusters-tl
DEF=tests/data/flashinfer-bench/gqa_paged_decode_h32_kv4_d128_ps1.json
T0=$(date +%s)
stamp() { echo "== $1 (t=$(( $(date +%s) - T0 ))s)"; }
clocks() { nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,clocks.max.sm,clocks.max.mem,temperature.gpu,power.draw --format=csv,noheader; }
stamp machine
git log -1 --format="tree: %h %s" 2>/dev/null | cut -c1-100
date -u
clocks
nvcc --version | tail -1
stamp build
GEN=""
command -v ninja >/dev/null && GEN="-G Ninja"
DEPS="-DKI_DEPS_DIR=$PWD/.cache/deps"
{ cmake -S bench/gpu -B $B $GEN -DKI_CUDA_ARCHS=90a $DEPS >/tmp/ki-build.log 2>&1 &&
  cmake --build $B -j12 --target ki-kernel-bench stream-probe >>/tmp/ki-build.log 2>&1; echo $? >/tmp/ki-build.rc; } &
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
# shape:tune (tune "-": the automatic plan)
ARMS=${ARMS:-"16x4096:- 15x4370:- 15x4370:mode=3,cluster=8,stages=3,chunk=560 15x4370:mode=3,cluster=8,stages=2,chunk=560
15x4096:- 16x4096:mode=3,cluster=2,stages=4,chunk=512 16x4096:mode=3,cluster=2,stages=3,chunk=512
16x4096:mode=3,cluster=4,stages=4,chunk=512 16x4096:mode=2,stages=4,chunk=512"}
tuneopt() { [ "${1#*:}" != - ] && echo --tune "${1#*:}"; }
stamp "correctness: every arm against the CUDA reference, equal and random lengths, two seeds"
for arm in $ARMS; do
  r=$(for l in equal random; do for s in 1 2; do
    bench --synthetic "${arm%%:*}" --lengths $l --seed $s --no-time $(tuneopt "$arm") --json /dev/null |
      grep -E "synthetic" | awk -v l=$l -v s=$s '{printf "%s/%s/%s:%s ", $2, l, s, $5}'
  done; done)
  echo "$arm: $r"
done
stamp "plans"
for arm in $ARMS; do
  echo "$arm: $(bench --synthetic "${arm%%:*}" --no-time --show-plan $(tuneopt "$arm") --json /dev/null | grep plan: | sed 's/.*plan: //' | cut -c1-150)"
done
stamp "cold CUPTI (3 trials of 50) and per call in a graph (20 calls), arms alternating"
clocks
for r in $(seq "$REPS"); do
  for arm in $ARMS; do
    printf "rep %s %-50s " $r "$arm"
    bench --synthetic "${arm%%:*}" --no-check --trials 3 --graph-calls 20 $(tuneopt "$arm") --json /dev/null |
      grep synthetic | cut -c1-170
  done
done
clocks
stamp "random lengths, cold CUPTI 2 trials (the arms of 16x4096)"
for r in 1 2; do
  for arm in $ARMS; do
    [ "${arm%%:*}" = 16x4096 ] || continue
    printf "rep %s %-50s " $r "$arm"
    bench --synthetic 16x4096 --lengths random --no-check --trials 2 $(tuneopt "$arm") --json /dev/null |
      grep synthetic | cut -c1-170
  done
done
if [ "$(cat /tmp/ki-tl.rc)" = 0 ]; then
  stamp "timeline build: two launches per arm (stamping syncs: read the shape, not the totals)"
  mkdir -p /tmp/tl
  for arm in 16x4096:- 15x4370:- 15x4370:mode=3,cluster=8,stages=3,chunk=560 15x4096:- \
             16x4096:mode=3,cluster=2,stages=4,chunk=512 16x4096:mode=2,stages=4,chunk=512; do
    name=$(echo "$arm" | sed 's/[:,=]/_/g; s/_-$//')
    for k in 1 2; do
      KI_TIMELINE_OUT=/tmp/tl/$name-$k timeout 60 $BT/ki-kernel-bench --definition $DEF --synthetic "${arm%%:*}" \
        --no-check --warmup 0 --iters 2 --trials 1 $(tuneopt "$arm") --json /dev/null </dev/null | grep synthetic | cut -c1-80
    done
    for f in /tmp/tl/$name-1.${arm%%:*} /tmp/tl/$name-2.${arm%%:*}; do
      [ -f "$f" ] && { echo "-- $(basename "$f")"; python3 bench/gpu/timeline.py "$f" | sed -n 1,10p; }
    done
  done
else
  tail -20 /tmp/ki-tl.log
fi
stamp "read floor (stream-probe, zero flush, median CUPTI span)"
timeout 120 $B/stream-probe --flush zero --iters 20 | grep -E "^(way|plain|head)"
clocks
stamp done
