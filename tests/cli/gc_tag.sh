#!/usr/bin/env bash
# ki tag (set, list, delete, resolve, errors with their exit codes) and ki gc:
# it removes an unreferenced blob older than the grace period and keeps a
# tagged blob, a named manifest and what it reaches, and an attested blob;
# --dry-run removes nothing; the index file shrinks after a gc of many
# objects (figures printed); gc beside a loop of `ki add` loses no added
# object; kill -9 of gc at several moments loses nothing reachable, and
# audit is clean after each.
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/testlib.bash" "$@"
export KI_HOME="$WORK/home"

digest_of() { "$KI_BIN" add --blob "$@" | cut -f1; }

expect_exit 0 ki init store
echo "hello" >a.txt
echo "other" >b.txt
A=$(digest_of a.txt)
B=$(digest_of b.txt)

# --- tags
expect_exit 0 ki tag v1 "$A" && expect_contains "$OUT" "tag v1 -> $A" "tag set"
expect_exit 0 ki resolve tag:v1 && [ "$OUT" = "$A" ] || fail "resolve tag:v1: $OUT"
expect_exit 0 ki resolve v1 && [ "$OUT" = "$A" ] || fail "resolve v1: $OUT"
expect_exit 0 ki cat v1 && [ "$OUT" = "hello" ] || fail "cat v1: $OUT"
expect_exit 4 ki tag "bad name" "$A" && expect_contains "$ERR" "ki: error: tag name 'bad name' contains a space" "space"
expect_exit 4 ki tag "a..b" "$A" && expect_contains "$ERR" "contains '..'" "dots"
expect_exit 4 ki tag -- -x "$A" && expect_contains "$ERR" "must start with a letter or a digit" "dash"
expect_exit 4 ki tag "cafe" "$A" && expect_contains "$ERR" "looks like a digest prefix" "hex"
expect_exit 4 ki tag "BenchmarkRun/x" "$A" && expect_contains "$ERR" "manifest kind" "kind"
expect_exit 4 ki tag "$(printf 'a\tb')" "$A" && expect_contains "$ERR" "control character" "control"
expect_exit 3 ki tag v2 "sha256:$(printf '%064d' 0)" && expect_contains "$ERR" "not in the store" "unknown ref"
expect_exit 3 ki tag v2 no-such-name
expect_exit 4 ki tag v1 "$B" && expect_contains "$ERR" "tag 'v1' exists" "exists"
expect_exit 0 ki tag -f v1 "$B" && expect_contains "$OUT" "(was $A)" "replace"
expect_exit 0 ki tag v0 "$A"
expect_exit 0 ki tag -l
expect_contains "$OUT" "v0  $A  blob text/plain" "list v0"
expect_contains "$OUT" "v1  $B  blob text/plain" "list v1"
expect_exit 0 ki tag -l --json
python3 -c 'import json,sys; t=json.loads(sys.argv[1]); assert [x["tag"] for x in t]==["v0","v1"] and t[1]["digest"]==sys.argv[2], t' "$OUT" "$B" \
  || fail "tag -l --json"
expect_exit 3 ki tag -d missing && expect_contains "$ERR" "no tag named 'missing'" "delete missing"
expect_exit 0 ki tag -d v0 && expect_contains "$OUT" "deleted tag v0 (was $A)" "delete"
expect_exit 3 ki resolve tag:v0
expect_exit 2 ki tag
expect_exit 2 ki tag v3
expect_exit 2 ki tag -l v3
expect_exit 0 ki audit

# --- gc: what stays and what goes
expect_exit 0 ki add "$SEED"
echo "junk nobody names" >junk.txt
J=$(digest_of junk.txt)
echo "kept by a tag" >keep.txt
K=$(digest_of keep.txt)
expect_exit 0 ki tag keep "$K"
echo "reviewed but unreferenced" >signed.txt
S=$(digest_of signed.txt)
expect_exit 0 ki key generate alice --no-passphrase
expect_exit 0 ki sign "$S" --key alice --predicate reviewed --note "looked at it"
expect_exit 0 ki gc --dry-run
expect_contains "$OUT" "would remove 0 of" "young: nothing goes by default"
sleep 2
expect_exit 0 ki gc --dry-run --grace 1s
expect_contains "$OUT" "would remove $J  blob text/plain" "dry run lists the junk"
expect_contains "$OUT" "would remove 2 of" "dry run: junk and a.txt (untagged by -f)"
expect_exit 0 ki cat "$J"   # a dry run removes nothing
expect_exit 0 ki gc --grace 1s
expect_contains "$OUT" "removed $J" "gc removes the junk"
expect_contains "$OUT" "store before: index" "sizes before"
expect_contains "$OUT" "store after:  index" "sizes after"
expect_exit 3 ki cat "$J"
expect_exit 3 ki cat "$A"
expect_exit 0 ki cat "$K" && [ "$OUT" = "kept by a tag" ] || fail "tagged blob kept"
expect_exit 0 ki cat "$B"
expect_exit 0 ki cat "$S" && [ "$OUT" = "reviewed but unreferenced" ] || fail "attested blob kept"
expect_exit 0 ki verify "$SEED_RUN"
expect_exit 0 ki audit
expect_contains "$OUT" "0 faults" "audit after gc"
expect_exit 4 ki gc --grace 2x && expect_contains "$ERR" "not a duration" "bad grace"
expect_exit 4 ki gc --grace -1d

# --- the index file shrinks when many objects go
python3 - <<'PY'
import os
os.mkdir("many")
for i in range(2500):
    open("many/b%04d.bin" % i, "wb").write(os.urandom(3000))
for i in range(8):
    open("many/big%02d.bin" % i, "wb").write(os.urandom(300000))
PY
expect_exit 0 ki add --blob many/*
expect_exit 0 ki gc --grace 0 --json
printf '%s' "$OUT" >gc.json
python3 - <<'PY' || fail "gc of 2508 objects: index file did not shrink"
import json
r = json.load(open("gc.json"))
b, a = r["before"], r["after"]
print("gc of %d objects: data.mdb %d -> %d bytes, loose %d files %d -> %d files %d bytes" % (
    len(r["removed"]), b["indexBytes"], a["indexBytes"], b["looseFiles"], b["looseBytes"], a["looseFiles"], a["looseBytes"]))
assert len(r["removed"]) == 2508, len(r["removed"])
assert a["indexBytes"] * 4 < b["indexBytes"], (a, b)
assert a["looseFiles"] == b["looseFiles"] - 8, (a, b)
PY
expect_exit 0 ki audit
expect_exit 0 ki cat "$K"

# --- gc beside a writer: every object the loop added is still there
python3 - <<'PY'
import json, os
os.mkdir("projects")
for i in range(60):
    doc = {"apiVersion": "kernelindex.dev/v1alpha1", "kind": "SoftwareProject",
           "metadata": {"name": "gc-project-%d" % i},
           "spec": {"name": "Project %d" % i, "repository": "https://example.invalid/p/%d" % i}}
    open("projects/p%02d.json" % i, "w").write(json.dumps(doc))
PY
expect_exit 0 ki add --blob many/*   # garbage for the gcs to remove meanwhile
(
  for f in projects/*.json; do
    "$KI_BIN" add "$f" >>added.txt 2>>writer.err || echo "add $f failed" >>writer.err
  done
) &
writer=$!
gcs=0
while kill -0 "$writer" 2>/dev/null; do
  "$KI_BIN" gc --grace 0 >/dev/null 2>gc.last || echo "gc failed: $(cat gc.last)" >>gc.err
  gcs=$((gcs + 1))
done
wait "$writer"
echo "gc ran $gcs times beside the writer"
[ "$gcs" -ge 1 ] || fail "no gc ran beside the writer"
[ -s writer.err ] && fail "writer: $(cat writer.err)"
[ -s gc.err ] && fail "gc beside the writer: $(cat gc.err)"
[ "$(wc -l <added.txt)" = 60 ] || fail "writer added $(wc -l <added.txt) of 60"
while read -r d _; do
  expect_exit 0 ki cat "$d" >/dev/null || fail "added object $d lost"
done <added.txt
expect_exit 0 ki ls --kind SoftwareProject --name 'gc-project-*'
[ "$(echo "$OUT" | wc -l)" = 60 ] || fail "60 projects listed: $(echo "$OUT" | wc -l)"
expect_exit 0 ki audit
expect_contains "$OUT" "0 faults" "audit after gc beside a writer"

# --- kill -9 of gc at several moments
for delay in 0.05 0.1 0.2 0.3 0.5 0.8; do
  expect_exit 0 ki add --blob many/*
  "$KI_BIN" gc --grace 0 >/dev/null 2>&1 &
  pid=$!
  sleep "$delay"
  kill -9 "$pid" 2>/dev/null
  wait "$pid" 2>/dev/null
  expect_exit 0 ki audit || echo "after gc killed at ${delay}s" >&2
  expect_contains "$OUT" "0 faults" "audit after gc killed at ${delay}s"
  expect_exit 0 ki cat "$K" >/dev/null || echo "tagged blob after kill at ${delay}s" >&2
  expect_exit 0 ki cat "$S" >/dev/null || echo "attested blob after kill at ${delay}s" >&2
  expect_exit 0 ki verify "$SEED_RUN" >/dev/null || echo "seed run after kill at ${delay}s" >&2
done
expect_exit 0 ki gc --grace 0
expect_exit 0 ki audit
expect_contains "$OUT" "0 faults" "final audit"
expect_exit 0 ki ls --kind SoftwareProject --name 'gc-project-*'
[ "$(echo "$OUT" | wc -l)" = 60 ] || fail "60 projects after the kills"

# --- tags over push and pull: an OCI layout, and a registry when installed
tags_round_trip() {  # tags_round_trip NAME URL [--insecure]
  local name=$1 url=$2 dst="$WORK/dst-$1"
  shift 2
  expect_exit 0 ki remote add "$name" "$url" "$@"
  expect_exit 0 ki push "$name" --tags
  expect_contains "$OUT" "tag	rel/v1+x@y	kitag-rel_sv1_px_ay	$K" "push --tags ($url)"
  expect_contains "$OUT" "tag	seed	kitag-seed	$SEED_RUN_DIGEST" "push --tags seed ($url)"
  expect_exit 0 "$KI_BIN" init "$dst"
  expect_exit 0 "$KI_BIN" --store "$dst" remote add origin "$url" "$@"
  expect_exit 0 "$KI_BIN" --store "$dst" tag seed "$("$KI_BIN" --store "$dst" add --blob "$WORK/b.txt" | cut -f1)"
  expect_exit 0 "$KI_BIN" --store "$dst" pull origin --tags
  expect_contains "$OUT" "tag	rel/v1+x@y	kitag-rel_sv1_px_ay	$K" "pull --tags ($url)"
  expect_contains "$ERR" "tag seed names another object here; kept" "pull keeps a local tag ($url)"
  expect_exit 0 "$KI_BIN" --store "$dst" cat tag:rel/v1+x@y && [ "$OUT" = "kept by a tag" ] || fail "pulled tag's object"
  expect_exit 0 "$KI_BIN" --store "$dst" pull origin --tags -f --json
  expect_exit 0 "$KI_BIN" --store "$dst" resolve tag:seed && [ "$OUT" = "$SEED_RUN_DIGEST" ] || fail "pull -f: $OUT"
  expect_exit 0 "$KI_BIN" --store "$dst" verify tag:seed
  expect_exit 0 "$KI_BIN" --store "$dst" audit
}
expect_exit 0 ki tag rel/v1+x@y "$K"
expect_exit 0 ki tag seed "$SEED_RUN_DIGEST"
tags_round_trip layout "oci-layout:$WORK/layout"
expect_exit 2 ki push layout
expect_exit 2 ki pull layout
if command -v docker-registry >/dev/null; then
  source "$HERE/registry.bash"
  trap 'registry_stop; chmod -R u+w "$WORK" 2>/dev/null; rm -rf "$WORK"' EXIT
  if registry_start "$WORK" "$WORK/registry"; then
    tags_round_trip registry "oci://127.0.0.1:$REG_PORT/ki/tags" --insecure
  else
    fail "docker-registry did not start"
  fi
else
  echo "no docker-registry: tags over a registry not tried"
fi

finish
