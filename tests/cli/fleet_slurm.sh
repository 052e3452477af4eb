# ki fleet on a real one-node Slurm cluster (Debian's slurm-wlm and munge,
# started here on 127.0.0.1 and stopped after) with Debian's docker-registry
# as the exchange point, CPU implementations, and two runner keys.
#
# The cluster has one node. Two nodes are simulated as two runner
# identities: Slurm's TaskProlog (a real Slurm hook whose `export` lines
# set a task's environment) gives even array tasks node A's KI_HOME, runner
# key and machine id, odd ones node B's; with --replicas 2, task 2i + r is
# replica r of run i, so each run is re-run once as A and once as B. A
# marker file makes a node slow (KI_TEST_PACE_FACTOR, read by the paced
# test kernel) or its compiler broken (CXX), the node-local faults.
#
# Cases: a 20-task array end to end (10 runs x 2 runners: reproducible ->
# replicated, and a reviewer's store that only had the reported number);
# two runners that disagree (disputed); a task cancelled mid-run, then the
# set resubmitted (only that task runs again); a node-local build failure
# recorded with its log.
#
# Exit 77 (skipped) when slurm-wlm, munge or docker-registry is not
# installed (scripts/install-deps.sh installs them) or Slurm cannot start
# here (the reason is printed).
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/testlib.bash" "$@"
for tool in slurmctld slurmd munged sbatch docker-registry; do
  if ! command -v "$tool" >/dev/null; then
    echo "skipped: $tool is not installed (apt-get install slurm-wlm munge docker-registry)"
    exit 77
  fi
done
ROOT=$(readlink -f "$DATA/../..")
RUN="$DATA/run"
OP=gqa-paged-decode-h32-kv4-d128-ps1
WL=gqa-paged-decode-h32-kv4-d128-ps1-27ef153a

source "$HERE/registry.bash"
source "$HERE/slurm.bash"
cleanup() {
  slurm_stop
  registry_stop
  chmod -R u+w "$WORK" 2>/dev/null
  rm -rf "$WORK"
}
trap cleanup EXIT

registry_start "$WORK" "$WORK/registry" || { fail "docker-registry did not start"; finish; }
REMOTE="oci://127.0.0.1:$REG_PORT/ki/fleet"

# ---- two simulated nodes, each with its own runner key (made there; the
# curator only ever sees the public half).
for n in a b; do
  mkdir -p "$WORK/node-$n"
  KI_HOME="$WORK/node-$n/home" ki key generate "runner-$n" --no-passphrase >/dev/null || fail "key on node $n"
done
printf '#!/bin/sh\necho "simulated: this node'"'"'s compiler is broken" >&2\nexit 1\n' >"$WORK/broken-cc"
chmod +x "$WORK/broken-cc"
cat >"$WORK/taskprolog.sh" <<EOF
#!/bin/bash
node=a
[ \$((SLURM_ARRAY_TASK_ID % 2)) = 1 ] && node=b
dir=$WORK/node-\$node
echo "export KI_HOME=\$dir/home"
echo "export KI_RUNNER_KEY=runner-\$node"
echo "export KI_MACHINE_ID=simulated-node-\$node"
[ -f \$dir/slow ] && echo "export KI_TEST_PACE_FACTOR=\$(cat \$dir/slow)"
[ -f \$dir/broken-cc ] && echo "export CXX=$WORK/broken-cc"
exit 0
EOF
chmod +x "$WORK/taskprolog.sh"
if ! slurm_start "$WORK/slurm" 2 "$WORK/taskprolog.sh" 2>"$WORK/slurm-start.err"; then
  echo "skipped: Slurm did not start here:"
  cat "$WORK/slurm-start.err"
  exit 77
fi

# ---- the curator: trusts both runners' public keys, role runner.
export KI_HOME="$WORK/curator"
for n in a b; do
  expect_exit 0 ki trust add "$(KI_HOME="$WORK/node-$n/home" ki key export "runner-$n")" --name "node-$n" --role runner
done
ki init "$WORK/store" >/dev/null
expect_exit 0 ki import flashinfer-bench "$RUN/flashinfer-trace"
expect_exit 0 ki add --implementation "$RUN/gqa_decode_paced.cc" -I "$ROOT/include" --operation $OP \
  --symbol test.gqa_decode.paced --name test-paced
expect_exit 0 ki remote add origin "$REMOTE" --insecure
# Each timed call takes 20 ms by construction (the paced test kernel).
mkruns() {  # mkruns FIRST LAST: runs with seeds FIRST..LAST, digests on stdout
  local s
  for s in $(seq "$1" "$2"); do
    ki run --implementation test-paced --workload $WL --seed "$s" | head -1
  done
}
mapfile -t RUNS < <(mkruns 1 10)
[ "${#RUNS[@]}" = 10 ] || fail "ten runs made: ${RUNS[*]}"

wait_job() {  # wait_job JOB [SECONDS]
  local _
  for _ in $(seq $((${2:-400} * 2))); do
    [ -z "$(squeue -h -j "$1" 2>/dev/null)" ] && return 0
    sleep 0.5
  done
  fail "job $1 did not end: $(squeue -h -j "$1")"
  scancel "$1"
  return 1
}
submit() {  # submit ARGS...: ki fleet submit with the test's settings; sets JOB
  # A band of 50%: this test checks the mechanism, not the machine, whose
  # load (builds beside it) moves a paced kernel's median by up to ~10%.
  expect_exit 0 ki fleet submit --remote origin --device cpu --tolerance 0.5 --ki "$KI_BIN" --scratch "$WORK/scratch" \
    --output "$WORK/logs/%A_%a.out" --json "$@"
  JOB=$(python3 -c 'import json,sys; j=json.loads(sys.argv[1]); print(j["job"] or "")' "$OUT")
}
mkdir -p "$WORK/scratch" "$WORK/logs"

# ---- dry run: the script, nothing submitted.
expect_exit 0 ki fleet submit --remote origin --replicas 2 --device cpu --dry-run "${RUNS[@]}"
expect_contains "$OUT" "#SBATCH --array=0-19" "one array of 20 tasks"
expect_contains "$OUT" "fleet task --remote '$REMOTE' --insecure --array-id \"\$SLURM_ARRAY_TASK_ID\" --replicas 2" "the task line"
expect_contains "$ERR" "nothing submitted" "a dry run says so"
[ -z "$(squeue -h)" ] || fail "a dry run submitted nothing"
expect_exit 3 ki fleet status

# ---- 20 tasks: every run re-run by both runners.
T0=$(date +%s)
submit --replicas 2 "${RUNS[@]}"
SET=$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["set"])' "$OUT")
expect_contains "$OUT" '"pushed": 10' "the runs the remote lacked were pushed first"
[ -n "$JOB" ] && wait_job "$JOB"
echo "20 tasks: $(($(date +%s) - T0)) s" >&2
expect_exit 0 ki fleet status
expect_contains "$OUT" "runs      10, 10 with 2 results (20 results on the remote)" "status: every result is on the remote"
expect_contains "$OUT" "20 completed" "status: twenty completed tasks"
expect_exit 0 ki fleet collect
COLLECT=$OUT
expect_contains "$COLLECT" "results   20 collected, 0 missing" "collect: twenty results"
n_repl=$(grep -c "evidence reproducible -> replicated" <<<"$COLLECT")
[ "$n_repl" = 10 ] || fail "collect: 10 runs reproducible -> replicated, got $n_repl: $COLLECT"
grep -q "result not signed" <<<"$COLLECT" && fail "every result is signed by a trusted runner: $COLLECT"
expect_exit 0 ki show "${RUNS[0]}" --json
python3 - "$OUT" <<'PY' || fail "show: replicated by two runner keys on two machines"
import json, sys
ev = json.loads(sys.argv[1])["ki"]["evidence"]
assert ev["level"] == "replicated" and not ev["disputed"], ev
signers = {s["signer"] for a in ev["attestations"] for s in a["signatures"] if s["state"] == "trusted"}
assert signers == {"node-a", "node-b"}, signers
PY
expect_exit 0 ki rank "${RUNS[0]}"
expect_contains "$OUT" "replicated" "rank shows the replicated level"
# Collect again: one pull that finds everything present.
expect_exit 0 ki fleet collect --json
python3 -c 'import json,sys; j=json.loads(sys.argv[1]); assert j["results"] == 20 and j["objectsReceived"] == 0, j' "$OUT" ||
  fail "a second collect receives nothing: ${OUT:0:400}"
# Resubmitting the whole set: nothing to do.
submit --replicas 2 "${RUNS[@]}"
[ -z "$JOB" ] || fail "a resubmission of a finished set submits no job"
expect_contains "$OUT" '"runsDone": 10' "every run has its results"

# A reviewer who only had the reported number (the run's manifest, no
# source, no samples) pulls the results and sees it replicated.
ki show "${RUNS[1]}" --json | python3 -c 'import json,sys; j=json.load(sys.stdin); del j["ki"]; print(json.dumps(j))' >reported.json
ki init "$WORK/reviewer" >/dev/null
expect_exit 0 ki --store "$WORK/reviewer" add reported.json
expect_exit 0 ki --store "$WORK/reviewer" show "${RUNS[1]}" --json
expect_contains "$OUT" '"level": "reported"' "the reviewer's copy is reported"
TAGS=()
for n in a b; do
  kid=$(KI_HOME="$WORK/node-$n/home" ki key export "runner-$n" --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["keyid"][:16])')
  TAGS+=("kifleet-$(echo "${RUNS[1]}" | cut -c8-39)-$kid")
done
expect_exit 0 ki --store "$WORK/reviewer" pull --insecure "$REMOTE" "${TAGS[@]}"
expect_exit 0 ki --store "$WORK/reviewer" show "${RUNS[1]}" --json
expect_contains "$OUT" '"level": "replicated"' "reported -> replicated for the reviewer"

# ---- two runners that disagree: node B is three times slower.
mapfile -t DRUN < <(mkruns 11 11)
echo 3 >"$WORK/node-b/slow"
submit --replicas 2 "${DRUN[0]}"
[ -n "$JOB" ] && wait_job "$JOB"
rm -f "$WORK/node-b/slow"
expect_exit 0 ki fleet collect
expect_contains "$OUT" "evidence reproducible -> verified, disputed" "one reproduces, one does not: disputed"
expect_contains "$OUT" "not reproduced" "node B's verdict is shown"

# ---- a task cancelled mid-run, then the set resubmitted: only it re-runs.
# These runs take 60 ms a call (here and on the nodes), long enough to cancel.
export KI_TEST_PACE_FACTOR=3
mapfile -t CRUNS < <(mkruns 21 23)
submit "${CRUNS[@]}"
CJOB=$JOB
# Task 1 (node B) is cancelled once its re-run has begun.
for _ in $(seq 600); do
  grep -qs "rerun on cpu" "$WORK/logs/${CJOB}_1.out" && break
  sleep 0.2
done
grep -qs "rerun on cpu" "$WORK/logs/${CJOB}_1.out" || fail "task 1 began its re-run: $(cat "$WORK/logs/${CJOB}_1.out" 2>&1)"
scancel "${CJOB}_1"
wait_job "$CJOB"
expect_exit 0 ki fleet status --json
# Task 1 re-runs the set's run 1 (the set is sorted by digest).
CANCELLED=$(python3 - "$OUT" "$CJOB" <<'PY'
import json, sys
j = json.loads(sys.argv[1]); job = sys.argv[2]
res = [len(r["results"]) for r in j["runs"]]
assert res == [1, 0, 1], res
t = [x for x in j["runs"][1]["tasks"] if x["job"] == job]
assert t and t[0]["state"] == "cancelled", t
print(j["runs"][1]["run"])
PY
) || fail "status after the cancel: ${OUT:0:1500}"
expect_exit 0 ki fleet status
expect_contains "$OUT" "missing $CANCELLED  0/1 results, task cancelled" "status names the run without a result"
# Nothing of the cancelled task is named on the remote.
KB=$(KI_HOME="$WORK/node-b/home" ki key export "runner-b" --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["keyid"][:16])')
expect_exit 3 ki pull --insecure "$REMOTE" "kifleet-$(echo "$CANCELLED" | cut -c8-39)-$KB"
submit "${CRUNS[@]}"
python3 -c 'import json,sys; j=json.loads(sys.argv[1]); t=j["tasks"]; assert [x["arrayTask"] for x in t] == [1], t' "$OUT" ||
  fail "the resubmission has the one missing task: ${OUT:0:600}"
[ -n "$JOB" ] && wait_job "$JOB"
expect_exit 0 ki fleet collect
expect_contains "$OUT" "results   3 collected, 0 missing" "after the resubmission every run has its result"
unset KI_TEST_PACE_FACTOR

# ---- a node-local failure: node B's compiler is broken.
mapfile -t FRUN < <(mkruns 31 31)
touch "$WORK/node-b/broken-cc"
submit --replicas 2 "${FRUN[0]}"
[ -n "$JOB" ] && wait_job "$JOB"
rm -f "$WORK/node-b/broken-cc"
expect_exit 0 ki fleet status
expect_contains "$OUT" "1 completed, 1 failed" "Slurm says one task failed"
expect_exit 0 ki fleet collect --json
python3 - "$OUT" <<'PY' >failed-log.txt || fail "the failure is recorded: ${OUT:0:1500}"
import json, sys
j = json.loads(sys.argv[1])
rs = {r["runner"]["name"]: r for r in j["runs"][0]["results"]}
assert set(rs) == {"runner-a", "runner-b"}, rs
a, b = rs["runner-a"], rs["runner-b"]
assert a["status"] == "passed" and a["signedByTrustedRunner"], a
assert b["outcome"] == "rerun" and b["status"] == "compile_error" and b["signedByTrustedRunner"], b
assert b["attestation"] is None, b
print(b["rerun"])
PY
FAILED_RERUN=$(cat failed-log.txt)
LOG=$(ki show "$FAILED_RERUN" --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["spec"]["evidence"]["logs"]["digest"])')
expect_exit 0 ki cat "$LOG"
expect_contains "$OUT" "simulated: this node's compiler is broken" "the failed build's log came back"
expect_exit 0 ki fleet collect
expect_contains "$OUT" "re-run compile_error" "collect shows the failure"

# ---- bad input
expect_exit 2 ki fleet submit --remote origin
expect_exit 3 ki fleet status 0000ffff
expect_exit 4 ki fleet submit --remote origin --dry-run --force --partition "a b" "${RUNS[0]}"
expect_exit 5 ki fleet submit --remote origin --sbatch "$WORK/no-such-sbatch" --force "${RUNS[0]}"
finish
