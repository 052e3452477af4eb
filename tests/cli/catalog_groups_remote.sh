#!/usr/bin/env bash
# A clone answers what the original answers (issue 17): a whole store pushed
# as one bundle to Debian's docker-registry on loopback and pulled into an
# empty store gives byte-identical ki groups / rank / records --json for
# every group; a single run pushed alone carries its catalog facts.
set -u
KI=$1
DATA=$2
HERE=$(cd "$(dirname "$0")" && pwd)
SEED=$DATA/kernelindex/fixtures/gpt-o3_cuda_5548d0.gqa_paged_decode_h32_kv4_d128_ps1.manifest.json
COHORT=$DATA/run/seed-cohort.jsonl
SLICE=$DATA/kernelindex-export/catalog-2026-08-16-0022af0b.slice.jsonl
T=$(mktemp -d)
source "$HERE/registry.bash"
trap 'registry_stop; rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
if ! command -v docker-registry >/dev/null; then echo "SKIP: docker-registry is not installed"; exit 0; fi
registry_start "$T" "$T/storage" || fail "registry did not start"
URL=oci://127.0.0.1:$REG_PORT/ki/catalog

"$KI" init "$T/a" >/dev/null
A() { "$KI" --store "$T/a" "$@"; }
A import kernelindex "$SLICE" >/dev/null 2>&1 || fail "import slice"
A import kernelindex "$COHORT" >/dev/null 2>&1 || fail "import seed cohort"
A add "$SEED" >/dev/null || fail "add seed"
A push --insecure "$URL" --bundle everything --all >"$T/push" 2>&1 || { cat "$T/push"; fail "push --all"; }

"$KI" init "$T/c" >/dev/null
C() { "$KI" --store "$T/c" "$@"; }
C pull --insecure "$URL" everything >"$T/pull" 2>&1 || { cat "$T/pull"; fail "pull bundle"; }
[ "$(A ls | wc -l)" = "$(C ls | wc -l)" ] || fail "the clone holds every object: $(A ls | wc -l) vs $(C ls | wc -l)"
A groups --json >"$T/ga"; C groups --json >"$T/gc"
cmp -s "$T/ga" "$T/gc" || { diff "$T/ga" "$T/gc" | head -40; cp -r "$T" /tmp/remote_dbg; fail "groups --json equal"; }
n=0
for g in $(python3 -c 'import json,sys; [print(g["cohort"]) for g in json.load(open(sys.argv[1])) if g["kind"]=="kernel"]' "$T/ga"); do
  A rank "$g" --json >"$T/ra"; C rank "$g" --json >"$T/rc"
  cmp -s "$T/ra" "$T/rc" || { diff "$T/ra" "$T/rc" | head; fail "rank --json of $g equal"; }
  A records "$g" --json >"$T/ra"; C records "$g" --json >"$T/rc"
  cmp -s "$T/ra" "$T/rc" || { diff "$T/ra" "$T/rc" | head; fail "records --json of $g equal"; }
  n=$((n + 1))
done
[ "$n" -ge 3 ] || fail "compared $n kernel groups"
A show 215ac4f9 --json >"$T/sa"; C show 215ac4f9 --json >"$T/sc"
cmp -s "$T/sa" "$T/sc" || fail "show --json of the seed equal"
C rank 215ac4f9 | grep -q "2 ranked" || fail "the seed ranks in the clone"
C audit >/dev/null || fail "the clone audits clean"

# One run alone: its facts travel with it, so it ranks as published there.
BASE=sha256:02a189b787e72f5ffd387e6056e9de197925b534680084f0a1c614ef1a99ffc2
A push --insecure "$URL" "$BASE" >/dev/null 2>&1 || fail "push one run"
"$KI" init "$T/d" >/dev/null
D() { "$KI" --store "$T/d" "$@"; }
D pull --insecure "$URL" "$BASE" >"$T/pull1" 2>&1 || D pull --insecure "$URL" "ki-${BASE#sha256:}" >"$T/pull1" 2>&1 || { cat "$T/pull1"; fail "pull one run"; }
D show "$BASE" --json | grep -q '"rank": 1' || fail "the pulled run ranks (its facts say it is published)"
echo "ok ($n groups compared)"
