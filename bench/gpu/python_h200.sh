#!/bin/bash
# One device call (issue 23): flashinfer-bench solutions in Triton and torch,
# the definition's reference and ki's fast kernel, each run by `ki run` under
# ki's harness (same inputs, cold L2, CUPTI spans, same comparator) with
# --speedup, in one `ki run` per workload and ranked in one group; then the
# CPU test of Python kernels (tests/cli/run_python.sh) against this machine's
# torch. Everything lands in OUTDIR.
#
#   bench/gpu/python_h200.sh OUTDIR KI [WORKLOAD-UUID-PREFIX ...]
set -u
OUTDIR=${1:?usage: python_h200.sh OUTDIR KI [WL ...]}
KI=$(readlink -f "${2:?usage: python_h200.sh OUTDIR KI [WL ...]}")
shift 2
WLS=("$@")
[ ${#WLS[@]} -eq 0 ] && WLS=(27ef153a 7a7fc288)
exec > >(tee "$OUTDIR/python-h200.log") 2>&1
export PYTHONUNBUFFERED=1
ROOT=$(pwd)
T0=$(date +%s)
stamp() { echo "== $1 (t=$(( $(date +%s) - T0 ))s)"; }
OP=gqa-paged-decode-h32-kv4-d128-ps1
K=kernels/gqa_paged_decode

stamp machine
date -u
nvidia-smi --query-gpu=name,driver_version,compute_cap,clocks.sm,clocks.mem,clocks.max.sm,clocks.max.mem --format=csv
nvcc --version | tail -2
python3 -c 'import sys, torch, triton; print(sys.executable, sys.version.split()[0], "torch", torch.__version__, "triton", triton.__version__)'

S=$(mktemp -d)
export KI_STORE="$S/store"
"$KI" init "$S/store" >/dev/null
stamp import
"$KI" import flashinfer-bench tests/data/run/flashinfer-trace
"$KI" import flashinfer-bench tests/data/run/fib-solutions
"$KI" add --implementation $K/fast.cu --source $K/reference.cu --source $K/plan.cc --source $K/abi.cc --source $K/export.cc \
  -I kernels -I include --operation $OP --symbol ki.gqa_paged_decode.fast --arch 90a --name ki-gqa-decode-fast
for wl in "${WLS[@]}"; do
  stamp "ki run on $OP-$wl"
  "$KI" run --implementation ki-triton-gqa-decode --implementation $OP.reference \
    --implementation ki-gqa-decode-fast --implementation ki-torch-gqa-decode-dps \
    --implementation ki-torch-gqa-decode-returning \
    --workload "$OP-$wl" --device cuda:0 --speedup --timeout 300 | tee "$S/run-$wl.txt"
  first=$(head -1 "$S/run-$wl.txt")
  stamp "ki rank $first"
  "$KI" rank "$first"
  "$KI" rank "$first" --json > "$OUTDIR/rank-$wl.json"
done
stamp "ki rerun of the Triton run"
"$KI" rerun "$(head -1 "$S/run-${WLS[0]}.txt")" --timeout 300
stamp "run logs"
for d in $("$KI" ls --kind BenchmarkRun | awk '{print $1}' | head -3); do
  "$KI" show "$d" | head -60
done
stamp "tests/cli/run_python.sh with this machine's torch"
bash tests/cli/run_python.sh "$KI" "$ROOT/tests/data"
echo "run_python.sh exit $?"
stamp done
