# ki fleet's GPU path (label gpu through the _gpu suffix; exit 77, saying
# so, without a CUDA device or Debian's docker-registry): ki's GQA decode
# kernel run on the GPU, then re-run by two runner identities through
# `ki fleet submit`'s batch script, with a registry on 127.0.0.1 as the
# exchange point, and collected as replicated.
#
# tests/cli/fleet_slurm.sh runs the same mechanism on a real one-node Slurm
# with CPU implementations (CI has no GPU). GPU machines ki is checked on
# have no Slurm, so here `--sbatch` names a stand-in that does what sbatch
# and the cluster would: it reads the script on stdin, prints a job id,
# and runs every array task in turn with SLURM_ARRAY_TASK_ID set and the
# node's environment (a node's KI_HOME with its own runner key and
# machine id, even tasks node A, odd ones node B, as fleet_slurm.sh's
# TaskProlog gives them). What is under test is everything after sbatch:
# the script, `ki fleet task` on a GPU (pull into a scratch store, nvcc
# build, CUDA re-run, signing, push), and collect.
#
# KI_RESULTS_DIR, when set, receives the transcript and the JSON outputs.
RESULTS=${KI_RESULTS_DIR:-}
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/testlib.bash" "$@"
if ! command -v nvidia-smi >/dev/null 2>&1 || ! nvidia-smi -L 2>/dev/null | grep -q GPU; then
  echo "GPU tests skipped: no CUDA device"
  exit 77
fi
if ! command -v docker-registry >/dev/null; then
  echo "skipped: docker-registry is not installed (apt-get install docker-registry)"
  exit 77
fi
ROOT=$(readlink -f "$DATA/../..")
RUN="$DATA/run"
K="$ROOT/kernels/gqa_paged_decode"
OP=gqa-paged-decode-h32-kv4-d128-ps1
WL=gqa-paged-decode-h32-kv4-d128-ps1-27ef153a
CC=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader -i 0 | head -1 | tr -d ' .')
ARCH="${CC}a"

source "$HERE/registry.bash"
cleanup() {
  registry_stop
  chmod -R u+w "$WORK" 2>/dev/null
  rm -rf "$WORK"
}
trap cleanup EXIT
registry_start "$WORK" "$WORK/registry" || { fail "docker-registry did not start"; finish; }
REMOTE="oci://127.0.0.1:$REG_PORT/ki/fleet-gpu"

log() { echo "$ $*"; }
step() {  # step WANT CMD...: run, print, keep the output
  log "${@:2}"
  expect_exit "$@"
  printf '%s\n' "$OUT"
  [ -n "$ERR" ] && printf '%s\n' "$ERR"
}

for n in a b; do
  mkdir -p "$WORK/node-$n"
  KI_HOME="$WORK/node-$n/home" ki key generate "runner-$n" --no-passphrase >/dev/null || fail "key on node $n"
done

# The stand-in for sbatch (see the header).
mkdir -p "$WORK/bin" "$WORK/scratch" "$WORK/logs"
cat >"$WORK/bin/sbatch" <<EOF
#!/bin/bash
[ "\$1" = --parsable ] || { echo "stand-in sbatch: expected --parsable" >&2; exit 2; }
cat >"$WORK/job.sh"
range=\$(sed -n 's/^#SBATCH --array=\([0-9-]*\).*/\1/p' "$WORK/job.sh")
[ -n "\$range" ] || { echo "stand-in sbatch: no --array line" >&2; exit 2; }
first=\${range%-*}; last=\${range#*-}
echo 4242
for i in \$(seq "\$first" "\$last"); do
  node=a; [ \$((i % 2)) = 1 ] && node=b
  env SLURM_ARRAY_JOB_ID=4242 SLURM_ARRAY_TASK_ID=\$i SLURM_JOB_ID=\$((4243 + i)) \\
    KI_HOME="$WORK/node-\$node/home" KI_RUNNER_KEY="runner-\$node" KI_MACHINE_ID="h200-node-\$node" \\
    bash "$WORK/job.sh" >"$WORK/logs/4242_\$i.out" 2>&1
  echo "task \$i (node \$node): exit \$?" >>"$WORK/logs/tasks.txt"
done >/dev/null
EOF
chmod +x "$WORK/bin/sbatch"

{
  nvidia-smi --query-gpu=name,driver_version,compute_cap,clocks.sm,clocks.max.sm,clocks.mem --format=csv
  export KI_HOME="$WORK/curator"
  for n in a b; do
    step 0 ki trust add "$(KI_HOME="$WORK/node-$n/home" ki key export "runner-$n")" --name "node-$n" --role runner
  done
  step 0 ki init "$WORK/store"
  step 0 ki import flashinfer-bench "$RUN/flashinfer-trace"
  step 0 ki add --implementation "$K/fast.cu" --source "$K/reference.cu" --source "$K/plan.cc" --source "$K/abi.cc" --source "$K/export.cc" \
    -I "$ROOT/kernels" -I "$ROOT/include" --operation $OP \
    --symbol ki.gqa_paged_decode.fast --arch "$ARCH" --name ki-gqa-decode-fast
  step 0 ki run --implementation ki-gqa-decode-fast --workload $WL --device cuda:0
  expect_contains "$OUT" "status       passed" "the GPU run passes"
  RUN1=$(echo "$OUT" | head -1)
  step 0 ki remote add origin "$REMOTE" --insecure

  # The dry run's script asks for a GPU per task and names the re-run's device.
  step 0 ki fleet submit --remote origin --replicas 2 --gpus 1 --device cuda:0 --dry-run "$RUN1"
  expect_contains "$OUT" "#SBATCH --array=0-1" "one array of two tasks"
  expect_contains "$OUT" "#SBATCH --gres=gpu:1" "a GPU per task"
  expect_contains "$OUT" "--device 'cuda:0'" "the nodes re-run on the GPU"

  # Two GPU re-runs, one per runner identity. A 25% band: the H200 repeats
  # this kernel within a few per cent (tests/cli/run_gpu.sh's rerun), the
  # band is for the check, not the machine.
  T0=$(date +%s)
  step 0 ki fleet submit --remote origin --replicas 2 --gpus 1 --device cuda:0 --tolerance 0.25 \
    --ki "$KI_BIN" --scratch "$WORK/scratch" --sbatch "$WORK/bin/sbatch" --json "$RUN1"
  echo "two GPU tasks: $(($(date +%s) - T0)) s"
  cat "$WORK/logs/tasks.txt"
  python3 -c 'import json,sys; j=json.loads(sys.argv[1]); assert j["job"] == "4242", j' "$OUT" || fail "submitted as job 4242"
  expect_contains "$(cat "$WORK/logs/tasks.txt")" "task 0 (node a): exit 0" "node A's task succeeded"
  expect_contains "$(cat "$WORK/logs/tasks.txt")" "task 1 (node b): exit 0" "node B's task succeeded"
  for i in 0 1; do
    echo "--- task $i's log"
    cat "$WORK/logs/4242_$i.out"
    expect_contains "$(cat "$WORK/logs/4242_$i.out")" "cuda" "task $i re-ran on the GPU"
  done
  [ -z "$(ls -A "$WORK/scratch")" ] || fail "the tasks removed their scratch stores: $(ls -A "$WORK/scratch")"

  step 0 ki fleet collect
  expect_contains "$OUT" "results   2 collected, 0 missing" "collect: both results"
  expect_contains "$OUT" "-> replicated" "reproducible -> replicated by two GPU runners"
  step 0 ki fleet collect --json
  printf '%s\n' "$OUT" >"$WORK/collect.json"
  python3 - "$WORK/collect.json" <<'PY' || fail "both results are passed GPU re-runs signed by trusted runners"
import json, sys
j = json.load(open(sys.argv[1]))
rs = j["runs"][0]["results"]
assert len(rs) == 2, rs
for r in rs:
    assert r["status"] == "passed" and r["signedByTrustedRunner"], r
assert {r["runner"]["name"] for r in rs} == {"runner-a", "runner-b"}, rs
PY
  step 0 ki show "$RUN1" --json
  python3 - "$OUT" <<'PY' || fail "show: replicated by two runner keys on two machines"
import json, sys
ev = json.loads(sys.argv[1])["ki"]["evidence"]
assert ev["level"] == "replicated" and not ev["disputed"], ev
signers = {s["signer"] for a in ev["attestations"] for s in a["signatures"] if s["state"] == "trusted"}
assert signers == {"node-a", "node-b"}, signers
PY
  step 0 ki rank "$RUN1"
  expect_contains "$OUT" "replicated" "rank shows the replicated level"
  step 0 ki audit
} >"$WORK/transcript.txt" 2>&1
cat "$WORK/transcript.txt"
if [ -n "$RESULTS" ]; then
  mkdir -p "$RESULTS"
  cp "$WORK/transcript.txt" "$RESULTS/fleet_gpu_transcript.txt"
  cp "$WORK/collect.json" "$RESULTS/fleet_gpu_collect.json" 2>/dev/null
  cp "$WORK/job.sh" "$RESULTS/fleet_gpu_job.sh" 2>/dev/null
fi
finish
