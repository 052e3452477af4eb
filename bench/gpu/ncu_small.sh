#!/bin/bash
# One device call (issue 23, part 2): where a batch-1 call's time goes, warm
# (ncu, kernel replay with --cache-control none and --clock-control none):
# warp states and per-instruction stall samples of the fast kernel on small
# shapes, for kLean arms (--tune lean=N, see lean_bits.sh). Lands in OUTDIR.
#
#   bench/gpu/ncu_small.sh OUTDIR "SHAPE:LEAN ..."
set -u
OUTDIR=${1:?usage: ncu_small.sh OUTDIR "SHAPE:LEAN ..."}
CASES=${2:-"1x7:1 1x7:11"}
exec > >(tee "$OUTDIR/ncu-small.log") 2>&1
B=build-lean
DEF=tests/data/flashinfer-bench/gqa_paged_decode_h32_kv4_d128_ps1.json
NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
echo "ncu: $NCU"; $NCU --version | tail -1
GEN=""
command -v ninja >/dev/null && GEN="-G Ninja"
cmake -S bench/gpu -B $B $GEN -DKI_CUDA_ARCHS=90a -DKI_DEPS_DIR="$PWD/.cache/deps" >/tmp/ki-build.log 2>&1 &&
  cmake --build $B -j12 --target ki-kernel-bench >>/tmp/ki-build.log 2>&1 || { tail -40 /tmp/ki-build.log; exit 1; }
for c in $CASES; do
  shape=${c%:*}; lean=${c#*:}
  rep="$OUTDIR/ncu-$shape-lean$lean"
  echo "== $shape lean=$lean"
  timeout 240 $NCU --clock-control none --cache-control none --replay-mode kernel -k regex:GqaDecode --launch-skip 4 --launch-count 1 \
    --section WarpStateStats --section SourceCounters --section LaunchStats --section SpeedOfLight --import-source no \
    -o "$rep" $B/ki-kernel-bench --definition $DEF --synthetic $shape --no-check --no-flush --warmup 2 --iters 4 --trials 1 \
    --tune lean=$lean --json /dev/null >/tmp/ncu.out 2>&1 || tail -20 /tmp/ncu.out
  $NCU --import "$rep.ncu-rep" --page details --section WarpStateStats --section SpeedOfLight 2>&1 | grep -vE "^\s*$" | head -60
  $NCU --import "$rep.ncu-rep" --page source --print-source sass --csv > "$rep-sass.csv" 2>&1
  wc -l "$rep-sass.csv"
done
