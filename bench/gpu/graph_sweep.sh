#!/bin/bash
# Plan sweep for one shape, measured both ways issue 7 names: the CUPTI
# median under the cold-L2 protocol (zero flush) and the per-call time of
# back-to-back calls in a CUDA graph (warm, as the peers' figures were
# taken). For each tune the default plan is rerun alongside, alternating, so
# that drift between machines and minutes shows up as drift of the default.
#
#   bench/gpu/graph_sweep.sh BUILD_DIR SHAPE [REPS] [TUNE...]
#
# Without TUNEs: clusters of C blocks per sequence (C * batch <= SMs) at 2, 3
# and 4 stages, and split mode at one chunk per SM, each chunk the equal
# split rounded up to 16 tokens. Prints "shape tune cold_us graph_us" per run.
set -u
B=${1:?usage: graph_sweep.sh BUILD_DIR SHAPE [REPS] [TUNE...]}
SHAPE=${2:?usage: graph_sweep.sh BUILD_DIR SHAPE [REPS] [TUNE...]}
REPS=${3:-2}
shift 3 2>/dev/null || shift $#
DEF=tests/data/flashinfer-bench/gqa_paged_decode_h32_kv4_d128_ps1.json
SMS=132
b=${SHAPE%x*}
t=${SHAPE#*x}
tunes=("$@")
if [ ${#tunes[@]} = 0 ]; then
  for c in 4 5 6 7 8; do
    [ $((c * b)) -le $SMS ] || continue
    chunk=$(( ((t + c - 1) / c + 15) / 16 * 16 ))
    for s in 2 3 4; do tunes+=("mode=3,cluster=$c,stages=$s,chunk=$chunk"); done
  done
  per=$(( (SMS / b) > 0 ? SMS / b : 1 ))
  chunk=$(( ((t + per - 1) / per + 15) / 16 * 16 ))
  for s in 2 3 4; do tunes+=("mode=2,stages=$s,chunk=$chunk"); done
fi
one() {  # tune -> "cold graph"
  timeout 120 $B/ki-kernel-bench --definition $DEF --synthetic "$SHAPE" --no-check --trials 2 --graph-calls 100 \
    --json /dev/null ${1:+--tune "$1"} | awk '/synthetic/ {printf "%s %s", $10, $13}'
}
printf "%-10s %-40s %9s %9s\n" shape tune cold_us graph_us
for tune in "${tunes[@]}"; do
  for r in $(seq "$REPS"); do
    printf "%-10s %-40s %9s %9s\n" "$SHAPE" "[default]" $(one "")
    printf "%-10s %-40s %9s %9s\n" "$SHAPE" "[$tune]" $(one "$tune")
  done
done
