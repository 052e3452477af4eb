#!/usr/bin/env bash
# One device call (issue 23 part 2), after gap_explore.sh placed 16x4096's
# gap: the fast kernel's compile-time variants against the base build,
# alternating in the same call. base = bench/gpu of BASE_SRC (default: the
# repository root the device call runs in, i.e. main); the variants are this
# tree built with VARIANTS' flags ("name:-DFLAG -DFLAG;name:..."). Every variant is
# checked against ki's CUDA reference (equal and random lengths, every mode);
# then cold CUPTI and graph medians on the target shapes, other shapes of
# every mode (equal and random lengths), batch-1 shapes in a CUDA graph, the
# 48 workloads of the definition (checked) for base and the last variant,
# test_gpu on the last variant's build, its -DKI_GQA_TIMELINE build on 16x4096
# (timeline.py) and the read floor. Clocks sampled, never set.
#   [KI_DEPS_DIR=DIR] [BASE_SRC=DIR] [VARIANTS="a:-Dx;b:-Dx -Dy"] bench/gpu/early_ab.sh OUTDIR [REPS]
set -uo pipefail
out=${1:?OUTDIR}; reps=${2:-3}
src=$(cd "$(dirname "$0")/../.." && pwd)
base_src=${BASE_SRC:-$PWD}
variants=${VARIANTS:-"new:"}  # default: this tree as it is against the root's
b=/tmp/ki-ab
mkdir -p "$out"
exec > >(tee "$out/ab.log") 2>&1
T0=$(date +%s)
stamp() { echo "== $1 (t=$(( $(date +%s) - T0 ))s)"; }
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,clocks.max.sm,temperature.gpu,power.draw --format=csv; nvcc --version | tail -1; } | tee "$out/machine.txt"
echo "base: $base_src (git: $(git -C "$base_src" log -1 --format=%h 2>/dev/null || echo '?')); variants: $variants"
deps=${KI_DEPS_DIR:+-DKI_DEPS_DIR=$KI_DEPS_DIR}
GEN=""; command -v ninja >/dev/null && GEN="-G Ninja"
build() {  # name source "cuda flags" targets...
  local name=$1 from=$2 flags=$3; shift 3
  { cmake -S "$from/bench/gpu" -B "$b-$name" $GEN -DKI_CUDA_ARCHS=90a $deps ${flags:+"-DCMAKE_CUDA_FLAGS=$flags"} &&
    cmake --build "$b-$name" -j4 --target "$@"; } >"/tmp/ki-ab-build-$name.log" 2>&1
  echo $? >"/tmp/ki-ab-build-$name.rc"
}
stamp build
names=(base)
build base "$base_src" "" ki-kernel-bench & pids=($!)
last=""; last_flags=""
IFS=';' read -r -a specs <<<"$variants"
for spec in "${specs[@]}"; do
  name=${spec%%:*}; flags=${spec#*:}
  names+=("$name"); last=$name; last_flags=$flags
done
for spec in "${specs[@]}"; do
  name=${spec%%:*}; flags=${spec#*:}
  if [ "$name" = "$last" ]; then
    build "$name" "$src" "$flags" ki-kernel-bench test_gpu stream-probe & pids+=($!)
  else
    build "$name" "$src" "$flags" ki-kernel-bench & pids+=($!)
  fi
done
build tl "$src" "-DKI_GQA_TIMELINE $last_flags" ki-kernel-bench & pids+=($!)
build tlbase "$base_src" "-DKI_GQA_TIMELINE" ki-kernel-bench & pids+=($!)
wait "${pids[@]}"
for n in "${names[@]}" tl tlbase; do
  [ "$(cat /tmp/ki-ab-build-$n.rc)" = 0 ] || { echo "build $n failed"; tail -40 /tmp/ki-ab-build-$n.log; exit 1; }
done
stamp "SASS: the first memory instructions of 16x4096's instance (GqaDecode<2, cluster, false, 0>), base and $last"
for n in base "$last"; do
  obj=$(find "$b-$n" -name 'fast.cu.o' | head -1)
  echo "-- $n: $(cuobjdump -sass "$obj" | awk '/Function :/ { keep = $3 ~ /GqaDecodeILi2ELi3ELb0ELi0E/ } keep' | grep -c '/\*[0-9a-f]*\*/') instructions"
  cuobjdump -sass "$obj" | awk '/Function :/ { keep = $3 ~ /GqaDecodeILi2ELi3ELb0ELi0E/ } keep' |
    grep -E 'LDG|LDGSTS|UCGABAR|BAR|DEPBAR' | head -24 | sed 's/^ *//; s/ *\/\* 0x[0-9a-f]* \*\/ *$//'
done
nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv -lms 200 >"$out/clocks.csv" 2>&1 &
smi=$!
def="$src/tests/data/flashinfer-bench/gqa_paged_decode_h32_kv4_d128_ps1.json"
wl="$src/tests/data/flashinfer-bench/gqa_paged_decode_h32_kv4_d128_ps1.jsonl"
kb() { local n=$1; shift; timeout 300 "$b-$n/ki-kernel-bench" --definition "$def" "$@" </dev/null; }
rc=0
CHECK=16x4096,64x8192,128x2048,12x4096,8x8192,15x4370,100x4000,7x1000,3x50,1x362,1x4096,1x7
stamp "correctness: base and every variant, equal and random lengths, seeds 1 and 2 (arm shape result)"
for n in "${names[@]}"; do
  for l in equal random; do
    for seed in 1 2; do
      printf "%s %s seed %s: " "$n" "$l" "$seed"
      kb "$n" --synthetic $CHECK --lengths $l --seed $seed --no-time --json /dev/null |
        awk '/synthetic/ {printf "%s:%s:%s ", $2, $5, $6; if ($5 != "passed") bad = 1} END {print ""; exit bad}' || rc=1
    done
  done
done
stamp "correctness: the 48 workloads, every arm, seeds 1 and 2 (status count, worst max_abs)"
for n in "${names[@]}"; do
  for seed in 1 2; do
    printf "%s workloads seed %s: " "$n" "$seed"
    kb "$n" --workloads "$wl" --seed $seed --no-time --json /dev/null |
      awk '$1 ~ /^[0-9]+$/ && NF > 8 {n[$5]++; if ($6 + 0 > w) w = $6 + 0; if ($5 != "passed") bad = 1}
           END {for (s in n) printf "%s %d ", s, n[s]; printf "worst max_abs %.3e\n", w; exit bad}' || rc=1
  done
done
TARGETS=1x362,1x4096,16x4096,64x8192,128x2048
stamp "A/B: target shapes, cold CUPTI (3 trials) and graph (20 calls), alternating"
for r in $(seq "$reps"); do
  for n in "${names[@]}"; do
    echo "-- rep $r arm $n"
    kb "$n" --synthetic $TARGETS --no-check --trials 3 --graph-calls 20 --json /dev/null | grep synthetic
  done
done
OTHER=7x1000,8x8192,12x4096,12x2048,32x2048,15x4370,48x8192,256x256,128x1024,64x512,2x17,3x50
stamp "A/B: other shapes of every mode, cold CUPTI (2 trials), equal lengths (and random: base, $last)"
for r in 1 2; do
  for n in "${names[@]}"; do
    echo "-- rep $r arm $n"
    kb "$n" --synthetic $OTHER --no-check --trials 2 --json /dev/null | grep synthetic
    [ "$n" = base ] || [ "$n" = "$last" ] || continue
    kb "$n" --synthetic $OTHER --lengths random --no-check --trials 2 --json /dev/null | grep synthetic | sed 's/synthetic-/random-/'
  done
done
TINY=1x2,1x7,1x11,1x14,1x16,1x17,1x64,1x362,1x2048
stamp "A/B: batch-1 shapes, cold and per call in a CUDA graph (100 calls): base, $last"
for r in 1 2; do
  for n in base "$last"; do
    echo "-- rep $r arm $n"
    kb "$n" --synthetic $TINY --no-check --trials 3 --graph-calls 100 --json /dev/null | grep synthetic
  done
done
stamp "the 48 workloads, checked, cold CUPTI and graph (50 calls): base, $last, base, $last"
for r in 1 2; do
  for n in base "$last"; do
    echo "-- rep $r arm $n"
    kb "$n" --workloads "$wl" --graph-calls 50 --json "$out/workloads-$n-$r.json" --no-samples | tail -49 || rc=1
  done
done
stamp "GPU tests (tests/gpu), $last"
timeout 300 "$b-$last/test_gpu" 2>&1 | grep -E "OK \]|FAILED|PASSED|Failure" || rc=1
stamp "timeline builds of base and $last on 16x4096 (3 launches each, alternating, each its own run)"
mkdir -p /tmp/ki-ab-stamps
for k in 1 2 3; do
  for t in tlbase tl; do
    echo "-- timeline $t launch $k"
    KI_TIMELINE_OUT=/tmp/ki-ab-stamps/$t-$k kb $t --synthetic 16x4096 --no-check --warmup 0 --iters 2 --trials 1 --json /dev/null | grep synthetic | cut -c1-60
    python3 "$src/bench/gpu/timeline.py" /tmp/ki-ab-stamps/$t-$k.16x4096 | sed 1d
  done
done
tar -C /tmp/ki-ab-stamps -czf "$out/stamps.tgz" . 2>/dev/null
stamp "read floor (stream-probe, zero flush, median CUPTI span)"
timeout 120 "$b-$last/stream-probe" --flush zero --iters 20 | grep -E "^(way|plain|head)"
kill "$smi"
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
