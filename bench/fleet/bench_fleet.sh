#!/bin/bash
# How long `ki fleet submit` of 1,000 runs takes in ki (issue 22's target:
# at most 10 s), with a simulated sbatch (it saves the script it is given
# and prints a job id, as `sbatch --parsable` does), and `ki fleet collect`
# of 1,000 results in one pull, with Debian's docker-registry on loopback
# as the remote. The results are made here, not by tasks: records of a
# failed pull, each signed by a runner key and pushed as its own bundle
# under its result tag, as a task pushes one (without a re-run in it).
#
#   bench/fleet/bench_fleet.sh BUILD_DIR [N] [collect|no-collect]
#
# Prints one line per measurement; bench/results/fleet-*.md records them.
# The runs are N copies of the seed record's run that differ in observedAt
# (distinct digests; submit needs BenchmarkRuns, not runnable ones: no
# task runs here).
set -euo pipefail
BUILD=$(readlink -f "$1")
N=${2:-1000}
KI="$BUILD/ki"
HERE=$(dirname "$(readlink -f "$0")")
ROOT=$(readlink -f "$HERE/../..")
SEED="$ROOT/tests/data/kernelindex/fixtures/gpt-o3_cuda_5548d0.gqa_paged_decode_h32_kv4_d128_ps1.manifest.json"
SEED_RUN=sha256:215ac4f9a26728e69bfeb464d46e76004c0f51a7b4a665eeed074888b5a99e7f
TMP=$(mktemp -d)
source "$ROOT/tests/cli/registry.bash"
trap 'registry_stop; rm -rf "$TMP"' EXIT
registry_start "$TMP" "$TMP/registry"
export KI_STORE="$TMP/store" KI_HOME="$TMP/home"
"$KI" init "$KI_STORE" >/dev/null
"$KI" add "$SEED" >/dev/null
"$KI" show "$SEED_RUN" --json >"$TMP/run.json"
mkdir "$TMP/runs"
python3 - "$TMP/run.json" "$TMP/runs" "$N" <<'PY'
import json, sys
base = json.load(open(sys.argv[1])); del base["ki"]
for i in range(int(sys.argv[3])):
    j = json.loads(json.dumps(base))
    j["metadata"]["name"] = "bench-fleet-%04d" % i
    j["spec"]["observedAt"] = "2026-11-01T00:%02d:%02d.%03dZ" % (i // 3600 % 60, i // 60 % 60, i % 1000)
    json.dump(j, open("%s/run-%04d.json" % (sys.argv[2], i), "w"))
PY
"$KI" add "$TMP"/runs/*.json >/dev/null
"$KI" ls --kind BenchmarkRun | cut -f1 | grep -v "$SEED_RUN" >"$TMP/refs"
[ "$(wc -l <"$TMP/refs")" = "$N" ] || { echo "expected $N runs, got $(wc -l <"$TMP/refs")" >&2; exit 1; }
"$KI" remote add origin "oci://127.0.0.1:$REG_PORT/ki/bench" --insecure

cat >"$TMP/sbatch" <<SH
#!/bin/bash
# A simulated sbatch: keeps the script, prints a job id.
n=\$(cat "$TMP/jobs" 2>/dev/null || echo 100)
n=\$((n + 1)); echo \$n >"$TMP/jobs"
cat >"$TMP/script-\$n.sh"
echo "\$n"
SH
chmod +x "$TMP/sbatch"

measure() {  # measure LABEL ARGS...: wall seconds of ki fleet submit and its own kiSeconds
  local label=$1 t0 t1
  shift
  t0=$(date +%s.%N)
  "$KI" fleet submit --remote origin --sbatch "$TMP/sbatch" --runs-from "$TMP/refs" --json "$@" >"$TMP/out.json"
  t1=$(date +%s.%N)
  python3 - "$TMP/out.json" "$label" "$t0" "$t1" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
print("%-44s wall %6.2f s  ki %6.2f s  sbatch %5.3f s  tasks %4d  pushed %4d  job %s" % (
    sys.argv[2], float(sys.argv[4]) - float(sys.argv[3]), j["kiSeconds"], j["sbatchSeconds"], len(j["tasks"]),
    j["pushed"], j["job"]))
PY
}
echo "ki fleet submit of $N runs ($(nproc) cores, $(date -u +%Y-%m-%d))"
measure "dry run, runs not on the remote" --dry-run
measure "runs not on the remote (submit pushes them)"
measure "resubmit, --replicas 2 --force" --replicas 2 --force
measure "resubmit, all on the remote, --force"  --force
S=$(ls -t "$TMP"/script-*.sh | head -1)
echo "last script: $(wc -c <"$S") bytes, $(grep -c '^sha256:' "$S") runs, $(grep '^#SBATCH --array' "$S")"

[ "${3:-collect}" = collect ] || exit 0
# ---- collect: N results, one per run, each its own bundle on the remote.
export KI_HOME="$TMP/runner-home"
"$KI" key generate runner --no-passphrase >/dev/null
KEYID=$("$KI" key export runner --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["keyid"])')
"$KI" init "$TMP/runner" >/dev/null
mkdir "$TMP/records"
python3 - "$TMP/refs" "$TMP/records" "$KEYID" <<'PY'
import json, sys
for i, run in enumerate(open(sys.argv[1]).read().split()):
    rec = {"format": "ki.fleet-result/v1", "run": run,
           "runner": {"keyid": sys.argv[3], "name": "runner", "machine": "bench-node"},
           "outcome": "failed", "status": "", "rerun": None, "verdict": None, "attestation": None,
           "attestationPredicate": "", "note": "", "failure": {"step": "pull", "message": "made by the bench"},
           "log": None, "slurm": {"job": "101", "arrayTask": i, "node": "bench-node"},
           "startedAt": "2026-12-01T00:00:00Z", "finishedAt": "2026-12-01T00:00:01Z"}
    open("%s/%04d %s %s" % (sys.argv[2], i, run, "kifleet-%s-%s" % (run[7:39], sys.argv[3][:16])), "w").write(
        json.dumps(rec, sort_keys=True, separators=(",", ":")))
PY
"$KI" --store "$TMP/runner" remote add origin "oci://127.0.0.1:$REG_PORT/ki/bench" --insecure
t0=$(date +%s.%N)
for f in "$TMP"/records/*; do
  tag=${f##* }
  d=$("$KI" --store "$TMP/runner" add --blob --media-type application/vnd.ki.fleet-result+json "$f" | cut -f1)
  "$KI" --store "$TMP/runner" sign "$d" --key runner --predicate reviewed >/dev/null
  "$KI" --store "$TMP/runner" push origin --bundle "$tag" "$d" >/dev/null
done
t1=$(date +%s.%N)
echo "made and pushed $N result bundles in $(python3 -c "print('%.1f' % ($t1 - $t0))") s (setup, not ki fleet)"
export KI_HOME="$TMP/home"
"$KI" trust add "$(KI_HOME="$TMP/runner-home" "$KI" key export runner)" --name bench-runner --role runner >/dev/null
for pass in first second; do
  t0=$(date +%s.%N)
  "$KI" fleet collect --json >"$TMP/collect.json" || true
  t1=$(date +%s.%N)
  python3 - "$TMP/collect.json" "$pass" "$t0" "$t1" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
signed = sum(1 for r in j["runs"] for x in r["results"] if x["signedByTrustedRunner"])
print("collect, %-6s wall %6.2f s  results %4d  signed by a trusted runner %4d  missing %d  objects received %d" % (
    sys.argv[2], float(sys.argv[4]) - float(sys.argv[3]), j["results"], signed, j["missing"], j["objectsReceived"]))
PY
done
