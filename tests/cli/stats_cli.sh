# ki diff's judgement, ki log and ki log --regressions on synthetic runs
# with raw samples (tests/stats/make_runs.py), and ki log of a comparison
# group of the real export slice (docs/cli.md; methods: docs/statistics.md).
source "$(dirname "$0")/testlib.bash" "$@"
ROOT=$(readlink -f "$DATA/../..")
MAKE="$ROOT/tests/stats/make_runs.py"
EX="$DATA/kernelindex/examples"
py() { python3 "$MAKE" "$@" || fail "make_runs $*"; }
json_get() {  # json_get JSON PYTHON-EXPR (j is the document)
  python3 -c 'import json,sys; j=json.loads(sys.argv[1]); print(eval(sys.argv[2]))' "$1" "$2"
}

ki init "$WORK/store" >/dev/null
expect_exit 0 ki add "$EX/workload-case.yaml"
WL=$(echo "$OUT" | cut -f1)
# Two more workloads (a different generator seed, so a different digest).
sed 's/seed: 230485/seed: 230486/' "$EX/workload-case.yaml" >"$WORK/wl2.yaml"
sed 's/seed: 230485/seed: 230487/' "$EX/workload-case.yaml" >"$WORK/wl3.yaml"
expect_exit 0 ki add "$WORK/wl2.yaml"
WL2=$(echo "$OUT" | cut -f1)
expect_exit 0 ki add "$WORK/wl3.yaml"
WL3=$(echo "$OUT" | cut -f1)

# ---- ki diff: runs with 150 raw samples each
py "$WORK/d" --workload "$WL" --median 1000 --seed 1 --prefix a --noise 0
py "$WORK/d" --workload "$WL" --median 950 --seed 2 --prefix b --noise 0 --start-hour 1
py "$WORK/d" --workload "$WL" --median 1000 --seed 3 --prefix c --noise 0 --start-hour 2
py "$WORK/d" --workload "$WL" --median 1000 --seed 4 --prefix e --spread 0.002 --noise 0 --start-hour 3
py "$WORK/d" --workload "$WL" --median 1005 --seed 5 --prefix f --spread 0.002 --noise 0 --start-hour 4
py "$WORK/d" --workload "$WL" --median 1000 --seed 6 --prefix g --no-samples --start-hour 5
expect_exit 0 ki add "$WORK"/d/*.samples "$WORK"/d/*.json
A=BenchmarkRun/a-0000 B=BenchmarkRun/b-0000 C=BenchmarkRun/c-0000 E=BenchmarkRun/e-0000 F=BenchmarkRun/f-0000
G=BenchmarkRun/g-0000

expect_exit 1 ki diff $A $B
expect_contains "$OUT" "Judgement (150 and 150 raw samples)" "judgement header"
expect_contains "$OUT" "95% interval" "interval printed"
expect_contains "$OUT" "Mann-Whitney U p = " "p-value printed"
expect_contains "$OUT" "faster: B is faster by" "verdict faster"
expect_exit 1 ki diff --json $A $B
J1=$OUT
[ "$(json_get "$J1" 'j["comparison"]["verdict"]')" = faster ] || fail "json verdict: $J1"
json_get "$J1" 'j["comparison"]["interval"][0] < j["comparison"]["ratio"] < j["comparison"]["interval"][1] < 1' | grep -q True \
  || fail "interval around the ratio, below 1: $J1"
json_get "$J1" 'j["comparison"]["uTest"]["pValue"] < 0.05 and j["comparison"]["samples"] == {"a": 150, "b": 150}' | grep -q True \
  || fail "p-value and sample counts: $J1"
json_get "$J1" 'isinstance(j["patch"], list) and len(j["patch"]) > 0' | grep -q True || fail "patch carried"
expect_exit 1 ki diff --json $A $B
[ "$OUT" = "$J1" ] || fail "the same inputs give the same interval"
# Gates.
expect_exit 0 ki diff --fail-on slower $A $B
expect_exit 1 ki diff --fail-on faster $A $B
expect_exit 1 ki diff --fail-on different $A $B
expect_exit 1 ki diff --fail-on slower $B $A
expect_contains "$OUT" "slower: B is slower by" "reversed: slower"
# Same level: nothing detectable.
expect_exit 1 ki diff $A $C
expect_contains "$OUT" "no-difference: no difference ki can detect at alpha 0.05" "no difference"
expect_exit 0 ki diff --fail-on different $A $C
# 0.5% with 0.2% spread: significant, below the 1% floor; beyond a 0.1% one.
expect_exit 1 ki diff --json $E $F
[ "$(json_get "$OUT" 'j["comparison"]["verdict"]')" = below-noise-floor ] || fail "below the floor: $OUT"
expect_exit 0 ki diff --fail-on slower $E $F
expect_exit 1 ki diff --fail-on slower --noise-floor 0.001 $E $F
expect_exit 1 ki diff --noise-floor 0.001 --alpha 1e-6 --json $E $F
[ "$(json_get "$OUT" 'j["comparison"]["alpha"]')" = 1e-06 ] || fail "alpha carried: $OUT"
# Summary statistics only: untested, said so; a gate cannot pass on it.
expect_exit 1 ki diff $A $G
expect_contains "$OUT" "untested: cannot test without raw samples; the runs' 95% intervals" "untested"
expect_contains "$OUT" "(B has none)" "says whose samples are missing"
expect_exit 4 ki diff --fail-on slower $A $G
expect_contains "$ERR" "ki: error: --fail-on slower needs raw samples of both runs" "gate without samples"
expect_exit 1 ki diff --json $G $A
[ "$(json_get "$OUT" 'j["comparison"]["verdict"], j["comparison"]["uTest"], j["comparison"]["samplesMissing"]')" = "('untested', None, 'A')" ] \
  || fail "untested json: $OUT"
# Same identity: exit 0, and a gate on it passes.
expect_exit 0 ki diff $A $A
expect_exit 0 ki diff --fail-on different $A $A
# Not runs: no gate; bad option values are usage errors.
expect_exit 4 ki diff --fail-on slower "$WL" "$WL2"
expect_exit 2 ki diff --fail-on sideways $A $B
expect_exit 2 ki diff --noise-floor -1 $A $B

# ---- ki log: a workload's runs in time order
expect_exit 0 ki log "$WL"
expect_contains "$OUT" "workload $WL (its runs in every environment): 6 runs" "header"
[ "$(echo "$OUT" | grep -c '^2026-01-01T0')" = 6 ] || fail "one line a run: $OUT"
[ "$(echo "$OUT" | sed -n 2p | cut -c1-20)" = "2026-01-01T00:00:00Z" ] || fail "oldest first: $OUT"
expect_contains "$OUT" "reported" "evidence level"
expect_exit 0 ki log --json "$WL"
[ "$(json_get "$OUT" '[r["name"] for r in j["runs"]]')" = "['a-0000', 'b-0000', 'c-0000', 'e-0000', 'f-0000', 'g-0000']" ] \
  || fail "log --json order: $OUT"

# ---- regressions: 50 runs, 1% noise, an 8% step at the newest run
py "$WORK/s2" --workload "$WL2" --runs 50 --step-at 49 --step 0.08 --seed 21 --no-samples --prefix s
expect_exit 0 ki add "$WORK"/s2/*.json
expect_exit 0 ki log "$WL2"
expect_exit 1 ki log --regressions "$WL2"
expect_contains "$OUT" "regression at the newest run: +" "the gate says why"
expect_contains "$OUT" "-- change point: +" "the change point is marked"
[ "$(echo "$OUT" | grep -A1 -- '-- change point' | tail -1 | cut -c1-20)" = "2026-01-03T01:00:00Z" ] \
  || fail "marked above the 50th run: $OUT"
expect_exit 1 ki log --regressions --json "$WL2"
[ "$(json_get "$OUT" 'j["regressionAtNewest"], j["changePoints"][-1]["index"], j["changePoints"][-1]["direction"]')" = "(True, 49, 'slower')" ] \
  || fail "regression json: $OUT"
expect_exit 0 ki log --regressions --threshold 0.2 "$WL2"
# A 5% step in the middle is marked, and does not fail the newest point.
py "$WORK/s3" --workload "$WL3" --runs 50 --step-at 25 --step 0.05 --seed 22 --no-samples --prefix t
expect_exit 0 ki add "$WORK"/s3/*.json
expect_exit 0 ki log --regressions --json "$WL3"
[ "$(json_get "$OUT" '[c["index"] for c in j["changePoints"]], j["regressionAtNewest"]')" = "([25], False)" ] \
  || fail "mid-series step: $OUT"
json_get "$OUT" '1.03 < j["changePoints"][0]["ratio"] < 1.07 and j["changePoints"][0]["interval"][0] < j["changePoints"][0]["ratio"] < j["changePoints"][0]["interval"][1]' \
  | grep -q True || fail "step size and interval: $OUT"

# ---- --implementation follows one implementation's revisions
expect_exit 0 ki add "$EX/implementation-revision.yaml"
IMPL=$(echo "$OUT" | cut -f1)
py "$WORK/s4" --workload "$WL3" --runs 3 --seed 23 --no-samples --prefix u --start-hour 100 --implementation "$IMPL"
expect_exit 0 ki add "$WORK"/s4/*.json
expect_exit 0 ki log --json --implementation "$IMPL" "$WL3"
[ "$(json_get "$OUT" '[r["name"] for r in j["runs"]]')" = "['u-0000', 'u-0001', 'u-0002']" ] || fail "--implementation: $OUT"
expect_exit 4 ki log --implementation "$WL" "$WL3"
expect_exit 3 ki log "sha256:$(printf 'e%.0s' {1..64})"

# ---- a comparison group of the export slice (the catalog's group reader)
ki init "$WORK/cat" >/dev/null
expect_exit 0 ki --store "$WORK/cat" import kernelindex "$DATA/kernelindex-export/catalog-2026-08-16-0022af0b.slice.jsonl"
expect_exit 0 ki --store "$WORK/cat" log ae5aacaf
expect_contains "$OUT" "comparison group sha256:ae5aacaf" "cohort header"
[ "$(echo "$OUT" | grep -c '^20')" = 3 ] || fail "three runs of the group: $OUT"
expect_exit 0 ki --store "$WORK/cat" log --json ae5aacaf
json_get "$OUT" 'sorted(r["observedAt"] for r in j["runs"]) == [r["observedAt"] for r in j["runs"]] and len(j["runs"]) == 3' \
  | grep -q True || fail "time order: $OUT"

finish
