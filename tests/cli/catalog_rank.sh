#!/usr/bin/env bash
# ki rank / records / show / diff on the slice of the real export.
source "$(dirname "$0")/failfast.bash" "$@"
SLICE=$DATA/kernelindex-export/catalog-2026-08-16-0022af0b.slice.jsonl
"$KI" init "$T/s" >/dev/null
"$KI" --store "$T/s" import kernelindex "$SLICE" >/dev/null 2>&1 || fail import
K() { "$KI" --store "$T/s" "$@"; }

# The SOL-ExecBench cohort: three source-native runs, 5642 < 6134 < 6326 ns.
expect_rc 0 "rank cohort prefix" K rank ae5aacaf
grep -q "3 ranked, 0 ineligible" "$T/out" || fail "rank header: $(cat "$T/out")"
grep -q "source-native" "$T/out" || fail "profile"
expect_rc 0 "rank --json" K rank ae5aacaf --json
RUNS=($(grep -o '"run": "sha256:[0-9a-f]*"' "$T/out" | cut -d'"' -f4))
[ "${#RUNS[@]}" = 3 ] || fail "three runs in --json"
grep -q '"policy": "ranking-v1"' "$T/out" || fail "policy in --json"
grep -q '"value": 5642' "$T/out" || fail "best value 5642"
FIRST=${RUNS[0]} LAST=${RUNS[2]}
expect_rc 0 "rank by run" K rank "$LAST"
grep -q "^>     3 " "$T/out" || fail "REF marked at rank 3: $(cat "$T/out")"
expect_rc 0 "show run" K show "$LAST"
grep -q "Rank 3 of 3 in its comparison group" "$T/out" || fail "show rank line: $(tail -5 "$T/out")"
grep -q "#1 .*$FIRST" "$T/out" || fail "show names #1"
expect_rc 0 "show --json" K show "$FIRST" --json
grep -q '"rank": 1' "$T/out" || fail "show --json rank"

# Record history: three events, each in the export.
expect_rc 0 "records" K records ae5aacaf
[ "$(grep -c "sha256:" "$T/out")" = 4 ] || fail "records lines: $(cat "$T/out")"
grep -q "first record" "$T/out" || fail "first record"
expect_rc 0 "records --json" K records ae5aacaf --json
[ "$(grep -c '"inExport": true' "$T/out")" = 3 ] || fail "3 events in the export"

# The runtime_error run is listed apart with its reason.
ERR=$(grep -o '"runDigest":"sha256:[0-9a-f]*","implementationId":"[^"]*","workloadId":"[^"]*","sourceId":"[^"]*","status":"runtime_error"' "$SLICE" | head -1 | cut -d'"' -f4)
if [ -n "$ERR" ]; then
  expect_rc 0 "rank ineligible" K rank "$ERR"
  grep -q "STATUS_RUNTIME_ERROR" "$T/out" || fail "ineligible reason: $(cat "$T/out")"
fi

# diff of two real runs.
expect_rc 1 "diff runs" K diff "$FIRST" "$LAST"
grep -q "^Primary measurement" "$T/out" || fail "diff leads with the measurement: $(head -5 "$T/out")"
grep -q "B/A = 1.121: A is 1.12x faster" "$T/out" || fail "diff ratio: $(grep B/A "$T/out")"
grep -q "^Workload: same" "$T/out" && grep -q "^Implementation: differs" "$T/out" || fail "implementation differs, workload same"
expect_rc 1 "diff --json" K diff "$FIRST" "$LAST" --json
grep -q '"op": "replace"' "$T/out" || fail "JSON Patch ops"
grep -q '"path": "/spec/' "$T/out" || fail "JSON Patch paths"
expect_rc 0 "diff same" K diff "$FIRST" "$FIRST"
grep -q "same identity" "$T/out" || fail "same identity"
expect_rc 0 "diff same --json" K diff "$FIRST" "$FIRST" --json
# Two runs: an object with the judged comparison and the patch (empty here).
python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); assert j["patch"] == [] and j["sameIdentity"]' "$T/out" \
  || fail "empty patch: $(cat "$T/out")"
grep -q '"verdict": "untested"' "$T/out" || fail "imported runs have no samples: untested"
WL=$(grep -o '"workloadDigest":"sha256:[0-9a-f]*"' "$SLICE" | head -1 | cut -d'"' -f4)
expect_rc 4 "diff of two kinds" K diff "$FIRST" "$WL"
# records, like rank, follows ranking-v1: a serving cohort is exit 4.
expect_rc 4 "records of a serving cohort" K records mlperf-v5-1-5-1-0001
grep -q "is a serving cohort" "$T/err" || fail "records of a serving cohort says so: $(cat "$T/err")"
expect_rc 3 "diff unknown" K diff "$FIRST" "sha256:$(printf 'f%.0s' {1..64})"
expect_rc 3 "rank unknown" K rank deadbeefdead

# ki ls --kind takes a kind in any capitalisation, as a REF's <Kind>/<name>
# does (it was exit 2 for "benchmarkrun").
expect_rc 0 "ls --kind BenchmarkRun" K ls --kind BenchmarkRun
cp "$T/out" "$T/ls.exact"
[ "$(wc -l <"$T/ls.exact")" = 8 ] || fail "8 runs: $(cat "$T/ls.exact")"
expect_rc 0 "ls --kind benchmarkrun" K ls --kind benchmarkrun
cmp -s "$T/out" "$T/ls.exact" || fail "ls --kind benchmarkrun differs from BenchmarkRun: $(head -3 "$T/out")"
expect_rc 0 "ls --kind BENCHMARKRUN --json" K ls --kind BENCHMARKRUN --json
[ "$(grep -c '"kind": "BenchmarkRun"' "$T/out")" = 8 ] || fail "ls --kind BENCHMARKRUN --json"
expect_rc 2 "ls --kind unknown" K ls --kind benchmarkruns
grep -q "unknown kind 'benchmarkruns'" "$T/err" || fail "unknown kind named: $(cat "$T/err")"

# ki audit checks the catalog tables too: the imported slice has no fault,
# and no catalog entry names a run the store lacks (the 6 missing references
# are artifacts the export left out, named by the manifests).
expect_rc 0 "audit of the imported slice" K audit
grep -q " 0 faults, 6 missing references" "$T/out" || fail "slice audits clean: $(cat "$T/out")"
! grep -q "(catalog\." "$T/out" || fail "no catalog entry names a missing run: $(cat "$T/out")"

# A damaged catalog entry (the cohort's catalog.cohorts value, its leading
# 0x02 of the binary form made an X: neither form): rank exits 1 (a corrupt entry, as verify's 1); records exits 5, not
# 1, which for records means "an export event is not reproduced".
COHORT=$(K rank ae5aacaf --json | grep -o '"cohort": "sha256:[0-9a-f]*"' | cut -d'"' -f4)
[ -n "$COHORT" ] || fail "cohort of ae5aacaf"
python3 - "$T/s/.ki/index/data.mdb" "$COHORT" <<'PY' || fail "could not damage the cohort's entry"
import sys
path, cohort = sys.argv[1], sys.argv[2]
key = bytes.fromhex(cohort[7:])
b = bytearray(open(path, "rb").read())
i = b.find(key + b"\x02\x0c")  # the binary form's magic, then an object's tag
assert i >= 0 and b.find(key + b"\x02\x0c", i + 1) < 0, "one catalog.cohorts value of the cohort in data.mdb"
b[i + 32] = ord("X")
open(path, "wb").write(bytes(b))
PY
expect_rc 1 "rank of a damaged group" K rank ae5aacaf
grep -q "malformed catalog entry in catalog.cohorts at key $COHORT" "$T/err" ||
  fail "rank names the damaged table and key: $(cat "$T/err")"
expect_rc 5 "records of a damaged group" K records ae5aacaf
grep -q "comparison group $COHORT: malformed catalog entry in catalog.cohorts" "$T/err" ||
  fail "records names the group and the table: $(cat "$T/err")"
expect_rc 5 "records --json of a damaged group" K records "$LAST" --json
# ki audit finds it without anyone ranking the group: a fault naming the
# table and the key, in the text and the --json output.
expect_rc 1 "audit of a damaged catalog.cohorts entry" K audit
# Found twice, by its format and against what the objects give (derived):
# one damaged entry, one fault, both details.
grep -q "^corrupt	$COHORT	catalog.cohorts $COHORT	.*differs from what the objects give.*value is not a JSON object$" "$T/out" ||
  fail "audit names the table and key, and both findings: $(cat "$T/out")"
grep -q " 1 faults, 6 missing references" "$T/out" || fail "audit counts one fault: $(cat "$T/out")"
expect_rc 1 "audit --json of a damaged catalog.cohorts entry" K audit --json
python3 - "$T/out" "$COHORT" <<'PY' || fail "audit --json: $(cat "$T/out")"
import json, sys
r = json.load(open(sys.argv[1]))
assert r["ok"] is False and len(r["missing"]) == 6, r
f = r["faults"]
assert len(f) == 1 and f[0]["digest"] == sys.argv[2] and f[0]["what"] == "catalog.cohorts " + sys.argv[2], f
assert "differs from what the objects give" in f[0]["detail"] and "value is not a JSON object" in f[0]["detail"], f
PY
echo "ok"
