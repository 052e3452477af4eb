#!/bin/bash
# Cluster size sweep for the automatic split plan: for each shape BxT (equal
# lengths), the default plan against clusters of C blocks per sequence
# (C * B <= SMs), each at the given depth with the chunk that makes one
# sequence one cluster (ceil(T / C) rounded up to 16 tokens). Alternating
# repetitions; CUPTI, cold L2 (zero flush), mean of 2 trial medians.
#
#   bench/gpu/cluster_sweep.sh BUILD_DIR [REPS] [SHAPES] [STAGES]
set -u
B=${1:?usage: cluster_sweep.sh BUILD_DIR [REPS] [SHAPES] [STAGES]}
REPS=${2:-2}
SHAPES=${3:-8x8192,12x4096,16x4096,16x8192,24x2048,32x2048,32x4096}
STAGES=${4:-4}
DEF=tests/data/flashinfer-bench/gqa_paged_decode_h32_kv4_d128_ps1.json
SMS=132
one() {
  timeout 60 $B/ki-kernel-bench --definition $DEF --synthetic "$1" --no-check --trials 2 --json /dev/null --tune "$2" |
    awk '/synthetic/ {printf "%s", $10}'
}
for shape in ${SHAPES//,/ }; do
  b=${shape%x*}
  t=${shape#*x}
  tunes=("")
  for c in 2 3 4 5 6 7 8; do
    [ $((c * b)) -le $SMS ] || continue
    chunk=$(( (t + c - 1) / c ))
    chunk=$(( (chunk + 15) / 16 * 16 ))
    tunes+=("mode=3,cluster=$c,stages=$STAGES,chunk=$chunk")
  done
  for tune in "${tunes[@]}"; do
    printf "%-10s %-40s" "$shape" "[${tune:-default}]"
    for r in $(seq $REPS); do printf " %8s" "$(one "$shape" "$tune")"; done
    echo
  done
done
