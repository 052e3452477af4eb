#!/bin/bash
# One device call for tuning the fast kernel: build standalone, run the GPU
# tests, sweep plan variants (mode, depth, cluster size, L2 hint) on the three
# target shapes and on the 48 workloads, and read DRAM counters with ncu.
#
#   bench/gpu/explore_h200.sh OUTDIR [SWEEP_FILE]
# SWEEP_FILE: one --tune spec per line ("" for defaults); default: the list below.
set -u
OUTDIR=${1:?usage: explore_h200.sh OUTDIR [SWEEP_FILE]}
SWEEPS=${2:-}
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
  tail -60 /tmp/ki-build.log
  exit 1
fi
grep -E "Compiling entry|registers|spill" /tmp/ki-build.log | grep -B1 -A0 "registers" | grep -oE "GqaDecodeV[12]ILi[0-9](ELb[01])?|Used [0-9]+ registers" | paste - - | sort -u | head -12

stamp "GPU tests"
timeout 300 $B/test_gpu >"$OUTDIR/gpu-tests.log" 2>&1
echo "test_gpu exit $?"
grep -E "^\[  (PASSED|FAILED) |^\[  FAILED|Failure|GPU:|timer:|worst|tests? ran|Expected|Which is|cluster|split|legacy" "$OUTDIR/gpu-tests.log" | head -40

stamp "sweep: targets (CUPTI, cold L2, mean of 2 trial medians, us)"
if [ -n "$SWEEPS" ]; then mapfile -t TUNES <"$SWEEPS"; else
TUNES=("mode=1" "" "mode=2,stages=2" "mode=2,stages=3" "mode=2,stages=4" "mode=2,waves=2" "mode=2,stages=2,waves=2"
       "mode=2,waves=3" "mode=2,evict_first=2" "mode=2,stages=2,evict_first=2" "mode=3,cluster=4" "mode=3,cluster=8"
       "mode=3,cluster=12" "mode=3,cluster=16" "mode=3,cluster=16,stages=2" "mode=3,cluster=8,stages=2"
       "mode=3,cluster=16,evict_first=2" "mode=3,cluster=12,stages=4"); fi
for tune in "${TUNES[@]}"; do
  printf "%-34s" "[$tune]"
  timeout 60 $B/ki-kernel-bench --definition $DEF --synthetic 1x362,16x4096,64x8192 --no-check --trials 2 \
    --tune "$tune" --json /dev/null | awk '/synthetic/ {printf " %s=%s", $2, $10} /FAILED|error/ {printf " %s", $0} END {print ""}'
done | tee "$OUTDIR/sweep.txt"

stamp "48 workloads: auto vs legacy vs split (CUPTI, cold, 2 trials)"
for tune in "" "mode=1" "mode=2"; do
  name=${tune:-auto}
  name=${name//=/-}  # only letters, digits, '.', '_' and '-' come back from the device
  timeout 120 $B/ki-kernel-bench --definition $DEF --workloads $WL --trials 2 --tune "$tune" --no-samples \
    --json "$OUTDIR/w48-$name.json" >"$OUTDIR/w48-$name.txt" 2>&1
  echo "[$tune] exit $? $(grep -c passed "$OUTDIR/w48-$name.txt") passed"
done
python3 - "$OUTDIR" <<'PY'
import json, sys
d = sys.argv[1]
runs = {k: {r["workload"]["uuid"] if isinstance(r.get("workload"), dict) else r.get("workload_uuid", str(i)): r
            for i, r in enumerate(json.load(open(f"{d}/w48-{k}.json")))} for k in ("auto", "mode-1", "mode-2")}
def lat(r):
    t = r.get("timing", {})
    return t.get("latency_us", float("nan"))
print(f"{'workload':22} {'batch':>5} {'tokens':>7} {'auto':>8} {'legacy':>8} {'split':>8}")
for u, r in runs["auto"].items():
    ax = r.get("axes", {})
    print(f"{u[:22]:22} {ax.get('batch_size', -1):5} {ax.get('num_kv_indices', -1):7} {lat(r):8.2f} "
          f"{lat(runs['mode-1'].get(u, {})):8.2f} {lat(runs['mode-2'].get(u, {})):8.2f}")
PY

stamp "ncu: DRAM bytes and time (cold L2 from the bench's flush, no cache control)"
NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
if [ -n "$NCU" ]; then
  for tune in "mode=1" "mode=2"; do
    for shape in 16x4096 64x8192; do
      echo "--- [$tune] $shape"
      timeout 90 $NCU --clock-control none --cache-control none -k regex:GqaDecode \
        --metrics gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,lts__t_sector_hit_rate.pct,sm__warps_active.avg.pct_of_peak_sustained_active \
        $B/ki-kernel-bench --definition $DEF --synthetic $shape --no-check --warmup 1 --iters 2 --trials 1 --events \
        --tune "$tune" --json /dev/null 2>&1 | grep -E "gpu__time|dram__|lts__|sm__warps|GqaDecode" | tail -14
    done
  done 2>&1 | tee "$OUTDIR/ncu.txt" | head -80
fi
stamp done
