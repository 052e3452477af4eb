#!/bin/bash
# Issue 19: pull by every name ki prints (full ki digest, unique prefix,
# Kind/name, bare name, bundle tag; ambiguity listed), one run out of a
# pushed bundle, `ki remote ls` (registry and layout), `ki remote show` and
# `set-url`, and a registry -> layout -> registry copy through ki that keeps
# every digest, read back by skopeo.
#
# Usage (ctest): bash remote_names.sh KI_BINARY TESTS_DATA_DIR
# Exit 77 (skipped) only when docker-registry or skopeo is not installed.
set -euo pipefail
KI=$1
DATA=$2
for tool in docker-registry skopeo; do
  if ! command -v "$tool" >/dev/null; then
    echo "skipped: $tool is not installed (apt-get install docker-registry skopeo)"
    exit 77
  fi
done
source "$(dirname "$0")/registry.bash"
TMP=$(mktemp -d)
cleanup() {
  registry_stop
  rm -rf "$TMP"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
registry_start "$TMP" "$TMP/registry" || fail "docker-registry did not start"
REG=127.0.0.1:$REG_PORT

SRC=$TMP/src
S() { "$KI" --store "$SRC" "$@"; }
"$KI" init "$SRC" >/dev/null
S add "$DATA"/kernelindex/fixtures/*.manifest.json >/dev/null
S import kernelindex "$DATA/kernelindex-export/catalog-2026-08-16-0022af0b.slice.jsonl" >/dev/null 2>&1
RUN=BenchmarkRun/sol-trace-gqa-paged-decode-h32-kv4-d128-ps1-27ef153a
RUN_DIGEST=$(S resolve "$RUN")
BARE=${RUN#BenchmarkRun/}
TEAM=oci://$REG/ki/team
S remote add team "$TEAM" --insecure

# ---- remote show / set-url
S remote show team >"$TMP/show" || fail "remote show"
grep -q "^url	oci://$REG/ki/team$" "$TMP/show" || fail "show url: $(cat "$TMP/show")"
grep -q "^kind	registry$" "$TMP/show" || fail "show kind"
grep -q "^transport	http (insecure, loopback only)$" "$TMP/show" || fail "show transport"
grep -q "^auth	anonymous$" "$TMP/show" || fail "show auth: $(cat "$TMP/show")"
S remote set-url team "oci://$REG/ki/other" --insecure || fail "set-url"
S remote show --json team | python3 -c 'import json,sys; d=json.load(sys.stdin); sys.exit(not (d["url"].endswith("/ki/other") and d["insecure"]))' ||
  fail "set-url did not take"
S remote set-url team "oci://$REG/ki/team" --insecure
set +e
S remote set-url nosuch "oci://$REG/x" --insecure 2>"$TMP/err"; rc=$?
set -e
[ $rc -eq 3 ] || fail "set-url of an unknown remote: exit $rc"
grep -q "no remote named 'nosuch'" "$TMP/err" || fail "set-url unknown message: $(cat "$TMP/err")"

# ---- the run pushed alone, pulled back by every name ki prints (no --digest-tags)
S push team "$RUN" >/dev/null || fail "push the run"
for name in "$RUN_DIGEST" "${RUN_DIGEST:0:13}" "${RUN_DIGEST#sha256:}" "$RUN" "$BARE"; do
  D=$TMP/by-$RANDOM
  "$KI" init "$D" >/dev/null
  "$KI" --store "$D" pull --insecure "$TEAM" "$name" >"$TMP/pull.out" 2>"$TMP/pull.err" ||
    fail "pull by '$name': $(cat "$TMP/pull.err")"
  [ "$("$KI" --store "$D" resolve "$RUN")" = "$RUN_DIGEST" ] || fail "pull by '$name' did not bring the run"
  "$KI" --store "$D" verify "$RUN" >/dev/null || fail "verify after pull by '$name'"
done

# ---- a bundle of every BenchmarkRun; one run out of it by name, and the bundle by its tag
S ls --kind BenchmarkRun | cut -f1 >"$TMP/runs"
S push team --bundle catalog $(cat "$TMP/runs") >"$TMP/bpush.out" || fail "push the bundle"
[ "$(wc -l <"$TMP/bpush.out")" -le 2 ] || fail "a bundle push printed a line per root: $(head -5 "$TMP/bpush.out")"
OTHER=$(grep -v "$RUN_DIGEST" "$TMP/runs" | head -1)
D=$TMP/one-run
"$KI" init "$D" >/dev/null
"$KI" --store "$D" pull --insecure --json "$TEAM" "$OTHER" >"$TMP/one.json" || fail "pull one run out of the bundle by its digest"
python3 - "$TMP/one.json" "$OTHER" <<'PY' || fail "one run out of the bundle: $(cat "$TMP/one.json")"
import json, sys
d = json.load(open(sys.argv[1]))
r = d["refs"][0]
assert r["root"] == sys.argv[2], r
assert 0 < r["objects"] < 200, r   # its closure, not the whole bundle
assert d["packsReceived"] == 1, d
PY
"$KI" --store "$D" verify "$OTHER" >/dev/null || fail "verify the run pulled out of the bundle"
[ "$("$KI" --store "$D" ls | wc -l)" -lt "$(S ls | wc -l)" ] || fail "one run out of the bundle brought everything"
D=$TMP/whole
"$KI" init "$D" >/dev/null
"$KI" --store "$D" pull --insecure "$TEAM" catalog >"$TMP/whole.out" || fail "pull the bundle by its tag"
[ "$("$KI" --store "$D" ls --kind BenchmarkRun | wc -l)" = "$(wc -l <"$TMP/runs")" ] || fail "the bundle did not bring every run"

# ---- ambiguity: a bare name two roots carry (a run in the bundle, its
# implementation pushed on its own) is listed as ki resolve lists candidates
SHARED=sol-submission-35815
S resolve "BenchmarkRun/$SHARED" >/dev/null || fail "fixture: no run $SHARED"
S push team "ImplementationRevision/$SHARED" >/dev/null || fail "push the implementation"
set +e
"$KI" --store "$TMP/one-run" pull --insecure "$TEAM" "$SHARED" >/dev/null 2>"$TMP/amb.err"; rc=$?
set -e
[ $rc -eq 3 ] || fail "an ambiguous name: exit $rc ($(cat "$TMP/amb.err"))"
grep -q "'$SHARED' is ambiguous on $TEAM; it matches:" "$TMP/amb.err" || fail "ambiguity message: $(cat "$TMP/amb.err")"
grep -q "^  $(S resolve "BenchmarkRun/$SHARED")  BenchmarkRun/$SHARED  (in bundle catalog)$" "$TMP/amb.err" ||
  fail "ambiguity lacks the run: $(cat "$TMP/amb.err")"
grep -q "^  $(S resolve "ImplementationRevision/$SHARED")  ImplementationRevision/$SHARED  (tag ImplementationRevision.$SHARED)$" "$TMP/amb.err" ||
  fail "ambiguity lacks the implementation: $(cat "$TMP/amb.err")"
# Kind/name picks one of them.
D=$TMP/by-kind-name
"$KI" init "$D" >/dev/null
"$KI" --store "$D" pull --insecure "$TEAM" "BenchmarkRun/$SHARED" >/dev/null || fail "pull BenchmarkRun/$SHARED out of the bundle"
"$KI" --store "$D" verify "BenchmarkRun/$SHARED" >/dev/null || fail "verify BenchmarkRun/$SHARED"
set +e
"$KI" --store "$TMP/one-run" pull --insecure "$TEAM" abc >/dev/null 2>"$TMP/short.err"; rc=$?
"$KI" --store "$TMP/one-run" pull --insecure "$TEAM" BenchmarkRun/no-such-run >/dev/null 2>"$TMP/none.err"; rc2=$?
set -e
[ $rc -eq 3 ] || [ $rc -eq 4 ] || fail "a 3-digit prefix: exit $rc"
[ $rc2 -eq 3 ] || fail "an unknown name: exit $rc2 ($(cat "$TMP/none.err"))"
grep -q "holds nothing that 'BenchmarkRun/no-such-run' names" "$TMP/none.err" || fail "unknown name message: $(cat "$TMP/none.err")"

# ---- progress: a bar on a terminal (script(1) gives the push one), nothing
# on a pipe for a transfer shorter than 5 s, and a one-line summary either way
script -qec "$KI --store $SRC push oci-layout:$TMP/progress-layout --bundle catalog $(tr '\n' ' ' <"$TMP/runs")" /dev/null >"$TMP/tty.out" ||
  fail "push under a terminal: $(cat "$TMP/tty.out")"
grep -q "push \[#*\.*\] [0-9]*/[0-9]* objects, [0-9.]* MB, [0-9.]* MB/s" "$TMP/tty.out" || fail "no progress bar on a terminal: $(cat -A "$TMP/tty.out" | head -3)"
grep -q "^pushed	catalog	sha256:[0-9a-f]*	$(wc -l <"$TMP/runs") roots: " "$TMP/tty.out" || fail "no bundle summary: $(cat "$TMP/tty.out")"
S push "oci-layout:$TMP/progress-layout2" --bundle catalog $(cat "$TMP/runs") >"$TMP/pipe.out" 2>"$TMP/pipe.err" || fail "push to a pipe"
[ ! -s "$TMP/pipe.err" ] || fail "a short push without a terminal printed progress: $(cat "$TMP/pipe.err")"
S push -v "oci-layout:$TMP/progress-layout2" --bundle catalog $(cat "$TMP/runs") >"$TMP/verbose.out" || fail "push -v"
[ "$(grep -c "^pushed	" "$TMP/verbose.out")" = "$(($(wc -l <"$TMP/runs") + 1))" ] || fail "push -v: not a line per root: $(cat "$TMP/verbose.out")"

# ---- ki remote ls: the run, the bundle, its roots; a pattern; JSON; bounded requests
S remote ls team >"$TMP/ls" || fail "remote ls"
grep -q "^BenchmarkRun	$RUN	$RUN_DIGEST	BenchmarkRun\.$BARE	20[0-9-]*T[0-9:]*Z$" "$TMP/ls" || fail "ls lacks the run: $(head -5 "$TMP/ls")"
grep -q "^bundle	catalog	$(wc -l <"$TMP/runs") roots	sha256:[0-9a-f]*	20" "$TMP/ls" || fail "ls lacks the bundle: $(grep bundle "$TMP/ls")"
[ "$(grep -c "	bundle:catalog	" "$TMP/ls")" = "$(wc -l <"$TMP/runs")" ] || fail "ls lacks the bundle's roots"
S remote ls team "$BARE" | grep -q "$RUN_DIGEST" || fail "ls with a pattern"
S remote ls team "no-such-*" | grep -q . && fail "ls with a pattern that matches nothing printed rows"
S remote ls --json team >"$TMP/ls.json"
python3 - "$TMP/ls.json" <<'PY' || fail "ls --json: $(head -c 400 "$TMP/ls.json")"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["httpRequests"] <= 12, d["httpRequests"]  # listing, one bundle's table, the tag list: not one per root
assert any(e.get("bundle") for e in d["entries"])
PY

# ---- copy between remotes: registry -> layout -> registry through ki keeps every digest
S push "oci-layout:$TMP/copy-src" "$RUN" >/dev/null
M=$TMP/middle
"$KI" init "$M" >/dev/null
"$KI" --store "$M" pull --insecure "$TEAM" "$RUN" >/dev/null || fail "pull for the copy"
"$KI" --store "$M" push "oci-layout:$TMP/mid-layout" "$RUN" >/dev/null || fail "push to the layout"
M2=$TMP/middle2
"$KI" init "$M2" >/dev/null
"$KI" --store "$M2" pull "oci-layout:$TMP/mid-layout" "$RUN" >/dev/null || fail "pull from the layout"
"$KI" --store "$M2" push --insecure "oci://$REG/ki/copy" "$RUN" >/dev/null || fail "push to the second registry"
TAG=BenchmarkRun.$BARE
A=$(skopeo inspect --raw --tls-verify=false "docker://$REG/ki/team:$TAG" | sha256sum | cut -d' ' -f1)
B=$(skopeo inspect --raw --tls-verify=false "docker://$REG/ki/copy:$TAG" | sha256sum | cut -d' ' -f1)
C=$(skopeo inspect --raw "oci:$TMP/mid-layout:$TAG" | sha256sum | cut -d' ' -f1)
[ "$A" = "$B" ] && [ "$A" = "$C" ] || fail "the copy changed the image manifest: $A / $C / $B"
skopeo inspect --raw --tls-verify=false "docker://$REG/ki/copy:$TAG" |
  python3 -c 'import json,sys; [print(l["digest"]) for l in json.load(sys.stdin)["layers"]]' >"$TMP/copy.layers"
while read -r d; do
  "$KI" --store "$SRC" cat "$d" | cmp -s - <("$KI" --store "$M2" cat "$d") || fail "object $d differs after the copy"
done <"$TMP/copy.layers"
[ -s "$TMP/copy.layers" ] || fail "no layers read back"
# ki remote ls of a layout reads its index.json
S remote ls "oci-layout:$TMP/mid-layout" | grep -q "$RUN_DIGEST" || fail "ls of a layout"
echo "ok"
