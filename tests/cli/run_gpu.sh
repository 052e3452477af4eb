# ki run / ki rerun on a GPU (label gpu through ctest's cli label; skips with
# 77 without a CUDA device): ki's GQA decode kernel on the seed record's
# workload, a rerun of that run, `ki rank` showing both in one comparison
# group, and the kernel placed in the seed's group. This is also the worked
# example of docs/worked-example.md. KI_RESULTS_DIR, when set, receives the
# outputs.
RESULTS=${KI_RESULTS_DIR:-}
source "$(dirname "$0")/testlib.bash" "$@"
if ! command -v nvidia-smi >/dev/null 2>&1 || ! nvidia-smi -L 2>/dev/null | grep -q GPU; then
  echo "GPU tests skipped: no CUDA device"
  exit 77
fi
ROOT=$(readlink -f "$DATA/../..")
RUN="$DATA/run"
K="$ROOT/kernels/gqa_paged_decode"
WL=gqa-paged-decode-h32-kv4-d128-ps1-27ef153a
# Build for this GPU only: "9.0" -> 90a.
CC=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader -i 0 | head -1 | tr -d ' .')
ARCH="${CC}a"
log() { echo "$ $*"; }
step() {  # step WANT CMD...: run, print, keep the output
  log "${@:2}"
  expect_exit "$@"
  printf '%s\n' "$OUT"
  [ -n "$ERR" ] && printf '%s\n' "$ERR"
}
{
  nvidia-smi --query-gpu=name,driver_version,compute_cap,clocks.sm,clocks.max.sm --format=csv
  step 0 ki init "$WORK/store"
  step 0 ki import flashinfer-bench "$RUN/flashinfer-trace"
  step 0 ki import kernelindex "$RUN/seed-cohort.jsonl"
  step 0 ki add "$SEED"
  step 0 ki add --implementation "$K/fast.cu" --source "$K/reference.cu" --source "$K/plan.cc" --source "$K/abi.cc" --source "$K/export.cc" \
    -I "$ROOT/kernels" -I "$ROOT/include" --operation gqa-paged-decode-h32-kv4-d128-ps1 \
    --symbol ki.gqa_paged_decode.fast --arch "$ARCH" --name ki-gqa-decode-fast
  step 0 ki run --implementation ki-gqa-decode-fast --workload $WL --device cuda:0
  expect_contains "$OUT" "status       passed" "GPU run passes"
  RUN1=$(echo "$OUT" | head -1)
  step 0 ki rerun "$RUN1"
  expect_contains "$OUT" "status        passed                            passed" "rerun passes"
  step 0 ki rank "$RUN1"
  expect_contains "$OUT" "2 ranked" "run and rerun in one comparison group"
  step 0 ki verify "$RUN1"
  step 3 ki rerun $SEED_RUN_DIGEST
  step 0 ki rerun $SEED_RUN_DIGEST --implementation ki-gqa-decode-fast
  expect_contains "$OUT" "would rank" "placed in the seed's group"
  step 0 ki rerun "$RUN1" --json
  printf '%s\n' "$OUT" > "$WORK/rerun.json"
  # A workload whose K/V cache is larger than the GPU (2^28 pages: 256 GiB
  # each for K and V) while the host's share is small (1 GiB of index
  # scratch): refused by the device check, naming the device, before any
  # input is generated; nothing stored.
  mkdir -p "$WORK/huge/definitions/gqa_paged" "$WORK/huge/workloads/gqa_paged"
  cp "$RUN/flashinfer-trace/definitions/gqa_paged/gqa_paged_decode_h32_kv4_d128_ps1.json" "$WORK/huge/definitions/gqa_paged/"
  python3 -c '
import json, sys
w = json.loads(open(sys.argv[1]).readline())
w["workload"]["uuid"] = "c0000000-0000-4000-8000-000000000003"; w["workload"]["axes"]["num_pages"] = 2**28
open(sys.argv[2], "w").write(json.dumps(w) + "\n")
' "$RUN/flashinfer-trace/workloads/gqa_paged/gqa_paged_decode_h32_kv4_d128_ps1.jsonl" \
    "$WORK/huge/workloads/gqa_paged/gqa_paged_decode_h32_kv4_d128_ps1.jsonl"
  step 0 ki import flashinfer-bench "$WORK/huge"
  RUNS_BEFORE=$(ki ls --kind BenchmarkRun | wc -l)
  step 5 ki run --implementation ki-gqa-decode-fast --workload gqa-paged-decode-h32-kv4-d128-ps1-c0000000 --device cuda:0
  expect_contains "$ERR" "of device memory (inputs 512.0 GiB" "a workload larger than the GPU names the device memory it needs"
  [ "$(ki ls --kind BenchmarkRun | wc -l)" = "$RUNS_BEFORE" ] || fail "a workload larger than the GPU stores no run"
} 2>&1 | tee "$WORK/transcript.txt"
FAILS=$(grep -c '^FAIL' "$WORK/transcript.txt")
if [ -n "$RESULTS" ]; then
  cp "$WORK/transcript.txt" "$RESULTS/run_gpu_transcript.txt"
  [ -f "$WORK/rerun.json" ] && cp "$WORK/rerun.json" "$RESULTS/run_gpu_rerun.json"
fi
finish
