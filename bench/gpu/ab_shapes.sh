#!/bin/bash
# Same-call A/B of two ki-kernel-bench builds on synthetic shapes: alternating
# runs, each the mean of 2 trial medians (CUPTI, cold L2, zero flush), equal
# lengths and then random ones; prints one line per shape with every run and
# the plans of both sides.
#
#   bench/gpu/ab_shapes.sh BASE_BUILD NEW_BUILD SHAPES [REPS]
set -u
BASE=${1:?usage: ab_shapes.sh BASE_BUILD NEW_BUILD SHAPES [REPS]}
NEW=${2:?}
SHAPES=${3:?}
REPS=${4:-3}
DEF=tests/data/flashinfer-bench/gqa_paged_decode_h32_kv4_d128_ps1.json
one() {
  timeout 60 $1/ki-kernel-bench --definition $DEF --synthetic "$2" --no-check --trials 2 --json /dev/null --lengths "$3" |
    awk '/synthetic/ {printf "%s", $10}'
}
plan() {
  $1/ki-kernel-bench --definition $DEF --synthetic "$2" --no-check --no-time --show-plan | awk '/plan:/ {$1=""; print}' |
    cut -c1-70
}
for lengths in equal random; do
  echo "== $lengths lengths: base runs | new runs (us)"
  for shape in ${SHAPES//,/ }; do
    b="" n=""
    for r in $(seq $REPS); do
      b="$b $(one $BASE $shape $lengths)"
      n="$n $(one $NEW $shape $lengths)"
    done
    printf "%-9s base%s | new%s\n" "$shape" "$b" "$n"
    [ $lengths = equal ] && printf "          base plan:%s\n          new plan: %s\n" "$(plan $BASE $shape)" "$(plan $NEW $shape)"
  done
done
