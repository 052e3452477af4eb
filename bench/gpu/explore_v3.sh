#!/bin/bash
# One device call for the v3 pass: build standalone, run the GPU tests, sweep
# plan variants on the three target shapes (cold L2, and a few without the
# flush), compare plans on the 48 workloads, and read DRAM counters with ncu.
#
#   bench/gpu/explore_v3.sh OUTDIR [SWEEP_FILE [W48_TUNES]]
# SWEEP_FILE: one --tune spec per line ("" for defaults). W48_TUNES: the
# specs compared on the 48 workloads, separated by ';' (default "auto;mode=1").
set -u
OUTDIR=${1:?usage: explore_v3.sh OUTDIR [SWEEP_FILE [W48_TUNES]]}
SWEEPS=${2:-}
W48=${3:-";mode=1"}
exec > >(tee "$OUTDIR/run.log") 2>&1
B=build-h200
DEF=tests/data/flashinfer-bench/gqa_paged_decode_h32_kv4_d128_ps1.json
WL=tests/data/flashinfer-bench/gqa_paged_decode_h32_kv4_d128_ps1.jsonl
T0=$(date +%s)
stamp() { echo "== $1 (t=$(( $(date +%s) - T0 ))s)"; }

stamp machine
date -u
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,clocks.max.sm,clocks.max.mem --format=csv,noheader

stamp build
GEN=""
command -v ninja >/dev/null && GEN="-G Ninja"
if ! { cmake -S bench/gpu -B $B $GEN -DKI_CUDA_ARCHS=90a -DKI_DEPS_DIR="$PWD/.cache/deps" \
         -DCMAKE_CUDA_FLAGS="-Xptxas=-v" >/tmp/ki-build.log 2>&1 &&
       cmake --build $B -j16 >>/tmp/ki-build.log 2>&1; }; then
  grep -E "error" /tmp/ki-build.log | head -30
  tail -30 /tmp/ki-build.log
  exit 1
fi

stamp "GPU tests"
timeout 300 $B/test_gpu >"$OUTDIR/gpu-tests.log" 2>&1
echo "test_gpu exit $?"
grep -E "^\[  (PASSED|FAILED) |^\[  FAILED|Failure|GPU:|timer:|worst|tests? ran|Expected|Which is|cluster|split|legacy|flat" \
  "$OUTDIR/gpu-tests.log" | head -40

stamp "sweep: targets (CUPTI, cold L2, mean of 2 trial medians, us)"
if [ -n "$SWEEPS" ]; then mapfile -t TUNES <"$SWEEPS"; else TUNES=("" "mode=1" "mode=2"); fi
for tune in "${TUNES[@]}"; do
  printf "%-40s" "[$tune]"
  timeout 60 $B/ki-kernel-bench --definition $DEF --synthetic 1x362,16x4096,64x8192 --no-check --trials 2 \
    --tune "$tune" --json /dev/null | awk '/synthetic/ {printf " %s=%s", $2, $10} /FAILED|error/ {printf " %s", $0} END {print ""}'
done | tee "$OUTDIR/sweep.txt"

stamp "no flush (L2 as the previous iteration left it)"
for tune in "" "mode=2" "mode=4"; do
  printf "%-40s" "[$tune] no-flush"
  timeout 60 $B/ki-kernel-bench --definition $DEF --synthetic 1x362,16x4096,64x8192 --no-check --trials 2 --no-flush \
    --tune "$tune" --json /dev/null | awk '/synthetic/ {printf " %s=%s", $2, $10} END {print ""}'
done

stamp "48 workloads (CUPTI, cold, 2 trials)"
IFS=';' read -ra W48T <<<"$W48"
names=()
for tune in "${W48T[@]}"; do
  name=${tune:-auto}
  name=${name//=/-}
  name=${name//,/_}
  names+=("$name")
  timeout 120 $B/ki-kernel-bench --definition $DEF --workloads $WL --trials 2 --tune "$tune" --no-samples \
    --json "/tmp/w48-$name.json" >"/tmp/w48-$name.txt" 2>&1
  echo "[$tune] exit $? $(grep -c passed "/tmp/w48-$name.txt") passed"
done
python3 - "${names[@]}" <<'PY' | tee "$OUTDIR/w48.txt"
import json, sys
names = sys.argv[1:]
runs = {}
for k in names:
    rows = json.load(open(f"/tmp/w48-{k}.json"))
    runs[k] = {(r["workload"]["uuid"] if isinstance(r.get("workload"), dict) else r.get("workload_uuid", str(i))): r
               for i, r in enumerate(rows)}
def lat(r):
    return r.get("timing", {}).get("latency_us", float("nan"))
print(f"{'workload':22} {'batch':>5} {'tokens':>7} " + " ".join(f"{n[:14]:>14}" for n in names))
tot = {n: 0.0 for n in names}
for u, r in runs[names[0]].items():
    ax = r.get("axes", {})
    vals = [lat(runs[n].get(u, {})) for n in names]
    for n, v in zip(names, vals): tot[n] += v
    print(f"{u[:22]:22} {ax.get('batch_size', -1):5} {ax.get('num_kv_indices', -1):7} " + " ".join(f"{v:14.2f}" for v in vals))
print("sum" + " " * 33 + " ".join(f"{tot[n]:14.1f}" for n in names))
PY

stamp "ncu: DRAM bytes and time (cold L2 from the bench's flush, no cache control)"
NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
if [ -n "$NCU" ] && [ -n "${NCU_TUNES:-}" ]; then
  IFS=';' read -ra NT <<<"$NCU_TUNES"
  for tune in "${NT[@]}"; do
    for shape in 16x4096 64x8192; do
      echo "--- [$tune] $shape"
      timeout 90 $NCU --clock-control none --cache-control none -k regex:GqaDecode \
        --metrics gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,lts__t_sector_hit_rate.pct \
        $B/ki-kernel-bench --definition $DEF --synthetic $shape --no-check --warmup 1 --iters 2 --trials 1 --events \
        --tune "$tune" --json /dev/null 2>&1 | grep -E "gpu__time|dram__|lts__|GqaDecode" | tail -6
    done
  done 2>&1 | tee "$OUTDIR/ncu.txt" | head -60
fi
stamp done
