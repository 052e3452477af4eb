#!/bin/bash
# One device call (issue 23, part 2): programmatic dependent launch in ki's
# fast decode kernel, before/after in one binary (--tune pdl=2 is the kernel
# as it was: no launch attribute; the griddepcontrol instructions are no-ops
# without it), alternating, on the five tiny batch-1 workloads in a CUDA
# graph and cold-L2 CUPTI medians of the target shapes; then every
# workload of the definition checked and timed with the new default, random
# lengths, and the read floor of 16x4096 (stream-probe). Lands in OUTDIR.
#
#   bench/gpu/pdl_ab.sh OUTDIR [REPS]
set -u
OUTDIR=${1:?usage: pdl_ab.sh OUTDIR [REPS]}
REPS=${2:-3}
exec > >(tee "$OUTDIR/pdl-ab.log") 2>&1
B=build-pdl
DEF=tests/data/flashinfer-bench/gqa_paged_decode_h32_kv4_d128_ps1.json
WL=tests/data/flashinfer-bench/gqa_paged_decode_h32_kv4_d128_ps1.jsonl
T0=$(date +%s)
stamp() { echo "== $1 (t=$(( $(date +%s) - T0 ))s)"; }
stamp machine
date -u
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,clocks.max.sm,clocks.max.mem --format=csv
stamp build
GEN=""
command -v ninja >/dev/null && GEN="-G Ninja"
if ! { cmake -S bench/gpu -B $B $GEN -DKI_CUDA_ARCHS=90a -DKI_DEPS_DIR="$PWD/.cache/deps" >/tmp/ki-build.log 2>&1 &&
       cmake --build $B -j14 --target ki-kernel-bench stream-probe test_gpu >>/tmp/ki-build.log 2>&1; }; then
  tail -60 /tmp/ki-build.log
  exit 1
fi
bench() { timeout 300 $B/ki-kernel-bench --definition $DEF "$@"; }
TINY=1x2,1x7,1x9,1x11,1x14
TARGETS=1x362,1x4096,16x4096,64x8192,128x2048
stamp "A/B: tiny batch-1 shapes, per call in a CUDA graph (100 back-to-back calls) and cold CUPTI"
for r in $(seq "$REPS"); do
  for tune in pdl=2 default; do
    echo "-- rep $r tune $tune"
    bench --synthetic $TINY --no-check --trials 3 --graph-calls 100 ${tune:+--tune} ${tune/default/pdl=0} --json /dev/null | grep synthetic
  done
done
stamp "A/B: target shapes, cold L2 CUPTI (and graph)"
for r in $(seq "$REPS"); do
  for tune in pdl=2 default; do
    echo "-- rep $r tune $tune"
    bench --synthetic $TARGETS --no-check --trials 3 --graph-calls 20 ${tune:+--tune} ${tune/default/pdl=0} --json /dev/null | grep synthetic
  done
done
stamp "new default (pdl auto): all 48 workloads checked against the CUDA reference, cold CUPTI and graph"
bench --workloads $WL --graph-calls 50 --json "$OUTDIR/workloads-pdl.json" | tail -52
stamp "random lengths (prediction misses), checked"
bench --synthetic 16x4096,64x8192,128x2048,7x1000 --lengths random --json /dev/null | grep -E "synthetic|FAIL|incorrect"
stamp "GPU tests (tests/gpu) with the new default"
timeout 300 $B/test_gpu 2>&1 | tail -15
stamp "read floor (stream-probe, zero flush, median CUPTI span)"
timeout 120 $B/stream-probe --flush zero --iters 20 | grep -E "^(way|plain|head|steal)"
stamp done
