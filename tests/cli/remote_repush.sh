#!/bin/bash
# Issue 19: a re-push of an unchanged bundle is one request. While nothing
# was committed to the store since the last push of the same refs (its
# generation) and the tag still names that bundle, ki push answers from
# remote.state's 'u' row with the report a full push would give. Anything
# else goes the full way: a commit that changes no closure (same report),
# a new attestation of a root (sent), the tag moved by another store
# (written again), other refs (another key).
#
# Usage (ctest): bash remote_repush.sh KI_BINARY TESTS_DATA_DIR
# Exit 77 (skipped) only when docker-registry is not installed.
set -euo pipefail
KI=$1
DATA=$2
if ! command -v docker-registry >/dev/null; then
  echo "skipped: docker-registry is not installed (apt-get install docker-registry)"
  exit 77
fi
source "$(dirname "$0")/registry.bash"
TMP=$(mktemp -d)
cleanup() {
  registry_stop
  rm -rf "$TMP"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
registry_start "$TMP" "$TMP/registry" || fail "docker-registry did not start"
TEAM=oci://127.0.0.1:$REG_PORT/ki/team
export KI_HOME=$TMP/home

S() { "$KI" --store "$TMP/src" "$@"; }
"$KI" init "$TMP/src" >/dev/null
S add "$DATA"/kernelindex/fixtures/*.manifest.json >/dev/null
S import kernelindex "$DATA/kernelindex-export/catalog-2026-08-16-0022af0b.slice.jsonl" >/dev/null 2>&1
S remote add team "$TEAM" --insecure
S ls --kind BenchmarkRun | cut -f1 >"$TMP/runs"
[ "$(wc -l <"$TMP/runs")" -ge 3 ] || fail "the slice has runs: $(cat "$TMP/runs")"
push() { S push team --bundle catalog --json $(cat "$TMP/runs"); }
# The report without the request count (the one field a short cut changes).
body() { python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); j.pop("httpRequests"); print(json.dumps(j, sort_keys=True))' "$1"; }
requests() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["httpRequests"])' "$1"; }

push >"$TMP/first.json" || fail "first push"
[ "$(requests "$TMP/first.json")" -gt 3 ] || fail "the first push wrote the bundle: $(cat "$TMP/first.json")"

# A commit that changes no closure (a blob nothing names): the full way,
# nothing sent. This is the report an unchanged push gives.
echo "unrelated" >"$TMP/note.txt"
S add --blob "$TMP/note.txt" >/dev/null
push >"$TMP/full.json" || fail "push after an unrelated commit"
python3 - "$TMP/full.json" <<'PY' || fail "an unchanged bundle sends nothing: $(cat "$TMP/full.json")"
import json, sys
j = json.load(open(sys.argv[1]))
assert j["blobs"]["sent"] == 0 and j["blobs"]["checked"] == 0 and not j["pack"]["sent"], j
assert all(r["sent"] == 0 and r["skipped"] == r["objects"] for r in j["refs"]), j["refs"]
PY

# Nothing committed since: one request, the same report.
push >"$TMP/short.json" || fail "push of the unchanged store"
[ "$(requests "$TMP/short.json")" = 1 ] || fail "an unchanged re-push is one request: $(requests "$TMP/short.json")"
[ "$(body "$TMP/short.json")" = "$(body "$TMP/full.json")" ] ||
  fail "the short cut reports what the full push does: $(diff <(body "$TMP/full.json") <(body "$TMP/short.json"))"
# The text output is the same as well.
S push team --bundle catalog $(cat "$TMP/runs") >"$TMP/short.txt" || fail "text push"
grep -q "^pushed	catalog	$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["refs"][0]["manifest"])' "$TMP/full.json")	" "$TMP/short.txt" ||
  fail "text output of the short cut: $(cat "$TMP/short.txt")"

# Other refs (one run fewer): another bundle, written.
head -n -1 "$TMP/runs" >"$TMP/fewer"
S push team --bundle catalog --json $(cat "$TMP/fewer") >"$TMP/fewer.json" || fail "push of fewer runs"
[ "$(requests "$TMP/fewer.json")" -gt 1 ] || fail "other refs go the full way"
push >"$TMP/back.json" || fail "push back"
[ "$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["refs"][0]["manifest"])' "$TMP/back.json")" = \
  "$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["refs"][0]["manifest"])' "$TMP/full.json")" ] ||
  fail "the tag names the whole bundle again"

# A new attestation of a root: the full way, and the envelope is sent.
S key generate alice --no-passphrase >/dev/null
FIRST=$(head -1 "$TMP/runs")
S sign "$FIRST" --key alice --predicate reviewed --note "looked at it" >/dev/null
push >"$TMP/signed.json" || fail "push after signing"
python3 - "$TMP/signed.json" "$TMP/full.json" "$FIRST" <<'PY' || fail "the attestation travels: $(cat "$TMP/signed.json")"
import json, sys
j, before, first = json.load(open(sys.argv[1])), json.load(open(sys.argv[2])), sys.argv[3]
assert j["refs"][0]["manifest"] != before["refs"][0]["manifest"], "a new bundle"
r = [x for x in j["refs"] if x["root"] == first][0]
assert r["attestations"] == 1 and r["sent"] >= 1, r
PY
push >"$TMP/signed2.json" || fail "re-push after signing"
[ "$(requests "$TMP/signed2.json")" = 1 ] || fail "then unchanged again: $(requests "$TMP/signed2.json") requests"

# --all: every object as a root. Unchanged since the last --all push:
# one request, and the store is not scanned; a push of some refs under
# the same tag is another bundle, so --all goes the full way after it.
S push team --bundle everything --all --json >"$TMP/all.json" || fail "push --all"
[ "$(requests "$TMP/all.json")" -gt 3 ] || fail "the first --all push wrote the bundle"
S push team --bundle everything --all --json >"$TMP/all2.json" || fail "push --all again"
[ "$(requests "$TMP/all2.json")" = 1 ] || fail "an unchanged --all re-push is one request: $(requests "$TMP/all2.json")"
python3 - "$TMP/all.json" "$TMP/all2.json" <<'PY' || fail "the --all short cut reports the bundle, nothing sent: $(cat "$TMP/all2.json")"
import json, sys
full, short = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
assert len(full["refs"]) > 10 and len(short["refs"]) == len(full["refs"]), (len(full["refs"]), len(short["refs"]))
assert {r["manifest"] for r in short["refs"]} == {full["refs"][0]["manifest"]}, "the same bundle index"
assert sorted(r["root"] for r in short["refs"]) == sorted(r["root"] for r in full["refs"])
assert all(r["sent"] == 0 and r["skipped"] == r["objects"] for r in short["refs"])
PY
S push team --bundle everything --json "$FIRST" >"$TMP/one.json" || fail "push one ref under the --all tag"
S push team --bundle everything --all --json >"$TMP/all3.json" || fail "push --all after a push of one ref"
[ "$(requests "$TMP/all3.json")" -gt 1 ] || fail "--all after another bundle under its tag goes the full way"

# The tag moved: another store pushes its own bundle under it; the short
# cut's HEAD sees it and the full push writes the tag back.
"$KI" init "$TMP/other" >/dev/null
"$KI" --store "$TMP/other" add "$DATA"/kernelindex/fixtures/*.manifest.json >/dev/null
OTHER_RUN=$("$KI" --store "$TMP/other" ls --kind BenchmarkRun | head -1 | cut -f1)
"$KI" --store "$TMP/other" push --insecure "$TEAM" --bundle catalog "$OTHER_RUN" >/dev/null || fail "the other store's push"
push >"$TMP/moved.json" || fail "push after the tag moved"
[ "$(requests "$TMP/moved.json")" -gt 1 ] || fail "a moved tag goes the full way"
"$KI" init "$TMP/check" >/dev/null
"$KI" --store "$TMP/check" pull --insecure "$TEAM" catalog >/dev/null || fail "pull the bundle"
for r in $(cat "$TMP/runs"); do
  "$KI" --store "$TMP/check" verify "$r" >/dev/null || fail "the bundle under the tag is this store's again: $r"
done
echo "ok"
