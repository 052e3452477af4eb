#!/bin/bash
# One device call (issue 23): a flashinfer-bench C++ solution with binding
# torch (tests/data/run/fib-torch-ext), built by torch's extension builder in
# `ki run`'s child, run on the GPU beside ki's fast kernel with --speedup, and
# ranked in one group; then its rerun (the built extension reused).
#
#   bench/gpu/torch_ext_h200.sh OUTDIR KI [WORKLOAD-UUID-PREFIX]
set -u
OUTDIR=${1:?usage: torch_ext_h200.sh OUTDIR KI [WL]}
KI=$(readlink -f "${2:?usage: torch_ext_h200.sh OUTDIR KI [WL]}")
WLID=${3:-27ef153a}
exec > >(tee "$OUTDIR/torch-ext-h200.log") 2>&1
OP=gqa-paged-decode-h32-kv4-d128-ps1
K=kernels/gqa_paged_decode
T0=$(date +%s)
stamp() { echo "== $1 (t=$(( $(date +%s) - T0 ))s)"; }
stamp machine
date -u
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv
python3 -c 'import sys, torch; print(sys.version.split()[0], "torch", torch.__version__)'
S=$(mktemp -d)
export KI_STORE="$S/store"
"$KI" init "$S/store" >/dev/null
"$KI" import flashinfer-bench tests/data/run/flashinfer-trace >/dev/null
"$KI" import flashinfer-bench tests/data/run/fib-torch-ext
"$KI" add --implementation $K/fast.cu --source $K/reference.cu --source $K/plan.cc --source $K/abi.cc --source $K/export.cc \
  -I kernels -I include --operation $OP --symbol ki.gqa_paged_decode.fast --arch 90a --name ki-gqa-decode-fast
stamp "ki run (the extension is built in the child)"
"$KI" run --implementation ki-torch-ext-gqa-decode --implementation ki-gqa-decode-fast --workload "$OP-$WLID" \
  --device cuda:0 --speedup --timeout 600 | tee "$S/run.txt"
first=$(head -1 "$S/run.txt")
stamp "ki rank"
"$KI" rank "$first"
stamp "ki rerun (extension cached)"
"$KI" rerun "$first" --timeout 600
stamp done
