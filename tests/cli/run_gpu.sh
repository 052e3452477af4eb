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
  step 0 ki add --implementation "$K/fast.cu" --source "$K/reference.cu" --source "$K/abi.cc" --source "$K/export.cc" \
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
  step 3 ki rerun $SEED_RUN
  step 0 ki rerun $SEED_RUN --implementation ki-gqa-decode-fast
  expect_contains "$OUT" "would rank" "placed in the seed's group"
  step 0 ki rerun "$RUN1" --json
  printf '%s\n' "$OUT" > "$WORK/rerun.json"
} 2>&1 | tee "$WORK/transcript.txt"
FAILS=$(grep -c '^FAIL' "$WORK/transcript.txt")
if [ -n "$RESULTS" ]; then
  cp "$WORK/transcript.txt" "$RESULTS/run_gpu_transcript.txt"
  [ -f "$WORK/rerun.json" ] && cp "$WORK/rerun.json" "$RESULTS/run_gpu_rerun.json"
fi
finish
