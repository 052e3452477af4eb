#!/bin/bash
# One exploration call (issue 23, part 2): tiles shared out over a cluster's
# blocks while they stream (--tune balance=1, FastPlan::balance), against the
# equal parts, on 16x4096 under the cold-L2 protocol and in a CUDA graph, for
# the default plan's clusters and the cluster sizes and depths that fit one
# block per SM; then other cluster-mode shapes with equal and random lengths,
# test_gpu and the read floor (stream-probe). Lands in OUTDIR.
#
#   bench/gpu/balance_explore.sh OUTDIR [REPS]
set -u
OUTDIR=${1:?usage: balance_explore.sh OUTDIR [REPS]}
REPS=${2:-2}
exec > >(tee "$OUTDIR/balance-explore.log") 2>&1
B=build-balance
DEF=tests/data/flashinfer-bench/gqa_paged_decode_h32_kv4_d128_ps1.json
T0=$(date +%s)
stamp() { echo "== $1 (t=$(( $(date +%s) - T0 ))s)"; }
clocks() { nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,clocks.max.sm,clocks.max.mem,temperature.gpu,power.draw --format=csv,noheader; }
stamp machine
git log -1 --format="tree: %h %s" | cut -c1-100; grep -c balance_share kernels/gqa_paged_decode/launch.h
date -u
clocks
nvcc --version | tail -1
stamp build
GEN=""
command -v ninja >/dev/null && GEN="-G Ninja"
if ! { cmake -S bench/gpu -B $B $GEN -DKI_CUDA_ARCHS=90a -DKI_DEPS_DIR="$PWD/.cache/deps" >/tmp/ki-build.log 2>&1 &&
       cmake --build $B -j16 --target ki-kernel-bench stream-probe test_gpu >>/tmp/ki-build.log 2>&1; }; then
  tail -60 /tmp/ki-build.log
  exit 1
fi
grep -E "spill|stack frame" /tmp/ki-build.log | sort | uniq -c | head -5
bench() { timeout 300 $B/ki-kernel-bench --definition $DEF "$@" </dev/null; }
C6S3=mode=3,cluster=6,stages=3,chunk=688
C6S4=mode=3,cluster=6,stages=4,chunk=688
C5S4=mode=3,cluster=5,stages=4,chunk=832
C7S2=mode=3,cluster=7,stages=2,chunk=592
ARMS=${ARMS:-"- balance=1 balance=1,balance_claim=2 balance=1,balance_claim=4 balance=1,balance_claim=8
balance=1,balance_share=48,balance_claim=4 balance=1,balance_share=16,balance_claim=8
$C6S3 $C6S3,balance=1,balance_claim=4 $C6S3,balance=1,balance_share=48,balance_claim=8"}
stamp "correctness: 16x4096 and others on every arm, equal and random lengths"
for tune in $ARMS; do
  r=$(for l in equal random; do
    bench --synthetic 16x4096,12x4096,8x8192 --lengths $l --no-time $( [ "$tune" != - ] && echo --tune $tune) --json /dev/null |
      grep -E "synthetic" | awk -v l=$l '{printf "%s/%s:%s ", $2, l, $5}'
  done)
  echo "$tune: $r"
done
stamp "16x4096 plans"
for tune in $ARMS; do
  echo "$tune: $(bench --synthetic 16x4096 --no-time --show-plan $( [ "$tune" != - ] && echo --tune $tune) --json /dev/null | grep plan:)"
done
stamp "16x4096: cold CUPTI (3 trials) and per call in a graph (20 calls), arms alternating"
clocks
for r in $(seq "$REPS"); do
  for tune in $ARMS; do
    printf "rep %s %-52s " $r "$tune"
    bench --synthetic 16x4096 --no-check --trials 3 --graph-calls 20 $( [ "$tune" != - ] && echo --tune $tune) --json /dev/null |
      grep synthetic | cut -c1-160
  done
done
clocks
stamp "other shapes, default against balance=1 (equal / random lengths), cold CUPTI 2 trials"
OTHER=12x4096,12x2048,8x8192,32x2048,64x8192,13x4096,4x16384,1x8192
for r in 1 2; do
  for tune in - ${BAL:-balance=1,balance_claim=4}; do
    for l in equal random; do
      echo "-- rep $r tune $tune lengths $l"
      bench --synthetic $OTHER --lengths $l --no-check --trials 2 $( [ "$tune" != - ] && echo --tune $tune) --json /dev/null | grep synthetic | cut -c1-160
    done
  done
done
for tune in - ${BAL:-balance=1,balance_claim=4}; do
  echo "$tune: $(bench --synthetic $OTHER --no-time --show-plan $( [ "$tune" != - ] && echo --tune $tune) --json /dev/null | grep plan: | sed 's/.*plan: //' | cut -d, -f1-6 | tr '\n' '|')"
done
stamp "GPU tests (tests/gpu)"
timeout 300 $B/test_gpu 2>&1 | grep -E "OK \]|FAILED|PASSED|auto plan|Failure" | tail -30
stamp "read floor (stream-probe, zero flush, median CUPTI span)"
timeout 120 $B/stream-probe --flush zero --iters 20 | grep -E "^(way|plain|head)"
clocks
stamp done
