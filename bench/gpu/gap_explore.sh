#!/usr/bin/env bash
# One device call (issue 23 part 2): where do the ~3.5 us that 16x4096's fast
# kernel without arithmetic (-DKI_GQA_NO_MATH) spends over its own read
# pattern go? Four builds of bench/gpu (shipped, no-math, and both with
# -DKI_GQA_TIMELINE); cold CUPTI medians alternating over REPS repetitions of
# the shipped and no-math kernels against paged-sweep's ring arm at the
# plan's depth and grid and the "kshape" arms that add, one at a time, the
# kernel's launch (its shared memory: two blocks fit an SM; clusters of 8;
# the 15 surplus clusters; the cluster barriers); then per-block %globaltimer
# stamps (timeline.py) of both kernel builds and of those probe arms, the
# stamping launches each after the flush and a sync. Clocks sampled, never set.
#   [KI_DEPS_DIR=DIR] bench/gpu/gap_explore.sh OUTDIR [REPS]
set -uo pipefail
out=${1:?OUTDIR}; reps=${2:-3}
src=$(cd "$(dirname "$0")/../.." && pwd)
b=${BUILD:-/tmp/ki-gap}
tl=/tmp/ki-gap-stamps  # not under a build folder: timeline.py reads every file in it
mkdir -p "$out" "$tl"
exec > >(tee "$out/gap.log") 2>&1
T0=$(date +%s)
stamp() { echo "== $1 (t=$(( $(date +%s) - T0 ))s)"; }
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,clocks.max.sm,temperature.gpu,power.draw --format=csv; nvcc --version | tail -1; } | tee "$out/machine.txt"
deps=${KI_DEPS_DIR:+-DKI_DEPS_DIR=$KI_DEPS_DIR}
build() {  # name "cuda flags" targets...
  local name=$1 flags=$2; shift 2
  { cmake -S "$src/bench/gpu" -B "$b-$name" -DKI_CUDA_ARCHS=90a $deps ${flags:+"-DCMAKE_CUDA_FLAGS=$flags"} &&
    cmake --build "$b-$name" -j4 --target "$@"; } >"/tmp/ki-gap-build-$name.log" 2>&1
  echo $? >"/tmp/ki-gap-build-$name.rc"
}
stamp build
build main "" ki-kernel-bench paged-sweep & p1=$!
build nomath "-DKI_GQA_NO_MATH" ki-kernel-bench & p2=$!
build tl "-DKI_GQA_TIMELINE" ki-kernel-bench & p3=$!
build tlnm "-DKI_GQA_TIMELINE -DKI_GQA_NO_MATH" ki-kernel-bench & p4=$!
wait $p1 $p2 $p3 $p4
for n in main nomath tl tlnm; do
  [ "$(cat /tmp/ki-gap-build-$n.rc)" = 0 ] || { echo "build $n failed"; tail -30 /tmp/ki-gap-build-$n.log; exit 1; }
done
nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv -lms 100 >"$out/clocks.csv" 2>&1 &
smi=$!
def="$src/tests/data/flashinfer-bench/gqa_paged_decode_h32_kv4_d128_ps1.json"
kb() { local bin=$1; shift; timeout 120 "$b-$bin/ki-kernel-bench" --definition "$def" "$@" </dev/null; }
rc=0
stamp "check: the shipped build on 16x4096, equal and random lengths; its plan"
for l in equal random; do kb main --synthetic 16x4096 --lengths $l --seed 1 --no-time --json /dev/null | grep synthetic || rc=1; done
kb main --synthetic 16x4096 --no-time --show-plan --json /dev/null | grep plan: | cut -c1-200
ONLY="ring x1 b128,kshape"
stamp "cold CUPTI, alternating: ki shipped, ki no-math, paged-sweep arms ($ONLY)"
for r in $(seq "$reps"); do
  printf "rep %s ki        " "$r"; kb main --synthetic 16x4096 --no-check --trials 3 --json /dev/null | grep synthetic | cut -c1-120
  printf "rep %s ki-nomath " "$r"; kb nomath --synthetic 16x4096 --no-check --trials 3 --json /dev/null | grep synthetic | cut -c1-120
  timeout 120 "$b-main/paged-sweep" --reps 1 --tokens 65536 --only "$ONLY" | grep -E "^rep|CHECK|checks" || rc=1
done
stamp "timeline: 3 launches of each kernel build (each its own run: the stamps are the next-to-last launch's)"
for bin in tl tlnm; do
  for k in 1 2 3; do
    KI_TIMELINE_OUT=$tl/ki-$bin-$k kb $bin --synthetic 16x4096 --no-check --warmup 0 --iters 2 --trials 1 --json /dev/null | grep synthetic | cut -c1-80
  done
done
stamp "timeline: paged-sweep arms, 2 launches each"
timeout 120 "$b-main/paged-sweep" --reps 1 --tokens 65536 --only "$ONLY" --timeline "$tl" | grep -E "^rep|CHECK|checks" || rc=1
for f in "$tl"/*; do
  echo "-- $(basename "$f")"
  python3 "$src/bench/gpu/timeline.py" "$f" | sed 1d
done
kill "$smi"
tar -czf "$out/timeline-stamps.tgz" -C "$tl" .
python3 - "$out/clocks.csv" <<'PY' | tee -a "$out/machine.txt"
import sys, csv
rows = [r for r in csv.reader(open(sys.argv[1])) if r and r[0][:1].isdigit()]
sm = [int(r[1].split()[0]) for r in rows]; mem = [int(r[2].split()[0]) for r in rows]
busy = [s for s in sm if s > 1000]
print(f"clock samples {len(sm)}: SM {min(sm)}-{max(sm)} MHz (busy {min(busy) if busy else '-'}-{max(busy) if busy else '-'}), memory {min(mem)}-{max(mem)} MHz")
PY
date -u | tee -a "$out/machine.txt"
stamp done
exit $rc
