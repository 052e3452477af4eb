#!/bin/bash
# ki push / ki pull against a real registry (Debian's docker-registry, the
# CNCF distribution registry) and an OCI image layout, and skopeo copying
# what ki pushed to a layout and back unchanged.
#
# Usage (ctest): bash remote_registry.sh KI_BINARY TESTS_DATA_DIR
# Exit 77 (skipped) only when docker-registry or skopeo is not installed
# (scripts/install-deps.sh installs both).
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
fail() { echo "FAIL: $*" >&2; [ -f "$TMP/registry.log" ] && tail -20 "$TMP/registry.log" >&2; exit 1; }

registry_start "$TMP" "$TMP/registry" || fail "docker-registry did not start"
REG=127.0.0.1:$REG_PORT

# ---- a source store: the seed record and some generated blobs
SRC=$TMP/src
"$KI" init "$SRC" >/dev/null
"$KI" --store "$SRC" add "$DATA"/kernelindex/fixtures/*.manifest.json >/dev/null
RUN=BenchmarkRun/sol-trace-gqa-paged-decode-h32-kv4-d128-ps1-27ef153a
RUN_DIGEST=$("$KI" --store "$SRC" resolve "$RUN")
BLOBS=()
for i in 1 2 3; do
  head -c $((i * 70000)) /dev/urandom >"$TMP/blob$i.bin"
  BLOBS+=("$("$KI" --store "$SRC" add --blob "$TMP/blob$i.bin" | cut -f1)")
done
echo "kernel log line" >"$TMP/log.txt"
BLOBS+=("$("$KI" --store "$SRC" add --blob "$TMP/log.txt" | cut -f1)")

# Every object of store $1 must be in store $2 with the same bytes, and verify clean.
compare() {
  local a=$1 b=$2 d
  for d in $("$KI" --store "$a" ls | cut -f1); do
    cmp -s <("$KI" --store "$a" cat "$d") <("$KI" --store "$b" cat "$d") || fail "$d differs between $a and $b"
  done
  "$KI" --store "$b" verify "$RUN" >/dev/null || fail "ki verify of $RUN in $b"
  for d in "${BLOBS[@]}"; do "$KI" --store "$b" verify "$d" >/dev/null || fail "ki verify of $d in $b"; done
}
pull_refs() { echo "$RUN"; for d in "${BLOBS[@]}"; do echo "$d"; done; }

# ---- registry: push, pull into a fresh store, compare
"$KI" --store "$SRC" remote add origin "oci://$REG/ki/evidence" --insecure
"$KI" --store "$SRC" remote list | grep -q "^origin	oci://$REG/ki/evidence	insecure$" || fail "remote list"
# --digest-tags: the run is pulled by its ki digest below.
"$KI" --store "$SRC" push origin --digest-tags "$RUN" "${BLOBS[@]}" >"$TMP/push1.out" || fail "push"
grep -q "^pushed	BenchmarkRun.sol-trace-gqa-paged-decode-h32-kv4-d128-ps1-27ef153a	sha256:" "$TMP/push1.out" || fail "push output: $(cat "$TMP/push1.out")"
"$KI" --store "$SRC" push origin "$RUN" "${BLOBS[@]}" >"$TMP/push2.out"
[ "$(awk -F'\t' '$4 !~ /^0 sent/' "$TMP/push2.out")" = "" ] || fail "second push sent again: $(cat "$TMP/push2.out")"
# remote.state: a third push asks the registry about no blob; --recheck asks about each.
"$KI" --store "$SRC" push origin --json "$RUN" "${BLOBS[@]}" >"$TMP/push3.json"
python3 -c 'import json,sys; b=json.load(open(sys.argv[1]))["blobs"]; sys.exit(not (b["checked"] == 0 and b["sent"] == 0 and b["known"] > 0))' "$TMP/push3.json" ||
  fail "third push asked again: $(cat "$TMP/push3.json")"
"$KI" --store "$SRC" push origin --recheck --json "$RUN" "${BLOBS[@]}" >"$TMP/push4.json"
python3 -c 'import json,sys; b=json.load(open(sys.argv[1]))["blobs"]; sys.exit(not (b["known"] == 0 and b["sent"] == 0 and b["checked"] > 0))' "$TMP/push4.json" ||
  fail "push --recheck: $(cat "$TMP/push4.json")"
MANIFEST=$(head -1 "$TMP/push1.out" | cut -f3)
TAG=$(head -1 "$TMP/push1.out" | cut -f2)

DST=$TMP/dst
"$KI" init "$DST" >/dev/null
mapfile -t REFS < <(pull_refs)
"$KI" --store "$DST" pull --insecure "oci://$REG/ki/evidence" "${REFS[@]}" >"$TMP/pull1.out" || fail "pull"
compare "$SRC" "$DST"
"$KI" --store "$DST" resolve "$RUN" >/dev/null || fail "the name $RUN was not restored"
# Pulling again transfers nothing.
"$KI" --store "$DST" pull --insecure --json "oci://$REG/ki/evidence" "${REFS[@]}" >"$TMP/pull2.json"
grep -q '"received": 0' "$TMP/pull2.json" && ! grep '"received"' "$TMP/pull2.json" | grep -vq '"received": 0' ||
  fail "second pull received objects: $(cat "$TMP/pull2.json")"
# By ki digest and by OCI manifest digest too.
for ref in "$RUN_DIGEST" "$MANIFEST"; do
  D=$TMP/by-$RANDOM
  "$KI" init "$D" >/dev/null
  "$KI" --store "$D" pull --insecure "oci://$REG/ki/evidence" "$ref" >/dev/null || fail "pull $ref"
  "$KI" --store "$D" verify "$RUN" >/dev/null || fail "verify after pull $ref"
done

# ---- an OCI image layout as the remote
"$KI" --store "$SRC" push "oci-layout:$TMP/layout" "$RUN" "${BLOBS[@]}" >/dev/null || fail "push to layout"
[ -f "$TMP/layout/oci-layout" ] && [ -f "$TMP/layout/index.json" ] || fail "layout files"
DST2=$TMP/dst2
"$KI" init "$DST2" >/dev/null
"$KI" --store "$DST2" pull "oci-layout:$TMP/layout" "${REFS[@]}" >/dev/null || fail "pull from layout"
compare "$SRC" "$DST2"

# ---- skopeo: registry -> layout -> registry, unchanged
skopeo copy -q --src-tls-verify=false "docker://$REG/ki/evidence:$TAG" "oci:$TMP/skopeo:$TAG" || fail "skopeo copy to layout"
skopeo copy -q --dest-tls-verify=false "oci:$TMP/skopeo:$TAG" "docker://$REG/ki/copy:$TAG" || fail "skopeo copy back"
BACK=sha256:$(skopeo inspect --raw --tls-verify=false "docker://$REG/ki/copy:$TAG" | sha256sum | cut -d' ' -f1)
[ "$BACK" = "$MANIFEST" ] || fail "skopeo round trip changed the manifest: $MANIFEST -> $BACK"
for hex in $(ls "$TMP/layout/blobs/sha256"); do
  if [ -f "$TMP/skopeo/blobs/sha256/$hex" ]; then
    cmp -s "$TMP/layout/blobs/sha256/$hex" "$TMP/skopeo/blobs/sha256/$hex" || fail "skopeo changed blob $hex"
  fi
done
# What skopeo wrote is a remote for ki as well.
DST3=$TMP/dst3
"$KI" init "$DST3" >/dev/null
"$KI" --store "$DST3" pull "oci-layout:$TMP/skopeo" "$TAG" >/dev/null || fail "pull from skopeo's layout"
"$KI" --store "$DST3" verify "$RUN" >/dev/null || fail "verify after pull from skopeo's layout"
DST4=$TMP/dst4
"$KI" init "$DST4" >/dev/null
"$KI" --store "$DST4" pull --insecure "oci://$REG/ki/copy" "$TAG" >/dev/null || fail "pull what skopeo copied back"
"$KI" --store "$DST4" verify "$RUN" >/dev/null || fail "verify after pull of skopeo's copy"

# ---- a bundle with its pack: registry and layout round trips, per-object path, standard tools
"$KI" --store "$SRC" push origin --bundle everything "$RUN" "${BLOBS[@]}" >"$TMP/bpush.out" || fail "push --bundle"
grep -q "^pack	sha256:[0-9a-f]*	[0-9]* objects in [0-9]* bytes, sent$" "$TMP/bpush.out" || fail "bundle push output: $(cat "$TMP/bpush.out")"
BUNDLE=$(head -1 "$TMP/bpush.out" | cut -f3)
"$KI" --store "$SRC" push origin --bundle everything "$RUN" "${BLOBS[@]}" | grep -q "^pack	.*, already there$" || fail "bundle re-push"
sorted_ls() { "$KI" --store "$1" ls | sort; }
DB=$TMP/dst-bundle
"$KI" init "$DB" >/dev/null
"$KI" --store "$DB" pull --insecure "oci://$REG/ki/evidence" everything >"$TMP/bpull.out" || fail "pull bundle"
grep -q "^pulled	everything	-	[0-9]* received ([0-9]* bytes; [0-9]* from the pack), 0 already here$" "$TMP/bpull.out" ||
  fail "bundle pull did not use the pack: $(cat "$TMP/bpull.out")"
compare "$SRC" "$DB"
[ "$(sorted_ls "$SRC")" = "$(sorted_ls "$DB")" ] || fail "ki ls differs after the bundle pull"
"$KI" --store "$DB" pull --insecure --json "oci://$REG/ki/evidence" everything >"$TMP/bpull2.json"
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); sys.exit(not (d["blobsReceived"] == 0 and d["packsReceived"] == 0))' "$TMP/bpull2.json" ||
  fail "second bundle pull transferred: $(cat "$TMP/bpull2.json")"
# A bundle pushed with --no-pack is format 1: every object its own blob, no pack.
"$KI" --store "$SRC" push origin --bundle plain --no-pack "$RUN" "${BLOBS[@]}" >"$TMP/ppush.out" || fail "push --no-pack"
grep -q "^pack" "$TMP/ppush.out" && fail "push --no-pack wrote a pack"
DN=$TMP/dst-nopack
"$KI" init "$DN" >/dev/null
"$KI" --store "$DN" pull --insecure --no-pack "oci://$REG/ki/evidence" plain >"$TMP/npull.out" || fail "pull --no-pack"
grep -q "from the pack" "$TMP/npull.out" && fail "pull --no-pack used the pack"
[ "$(sorted_ls "$SRC")" = "$(sorted_ls "$DN")" ] || fail "ki ls differs after pull --no-pack"
# --buffer-mib 0: every verified blob is written as soon as it arrives (the
# memory bound of a pull of large blobs); the store ends up the same.
DZ=$TMP/dst-buffer0
"$KI" init "$DZ" >/dev/null
"$KI" --store "$DZ" pull --insecure --no-pack --buffer-mib 0 --json "oci://$REG/ki/evidence" plain >"$TMP/zpull.json" ||
  fail "pull --buffer-mib 0"
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); sys.exit(not (d["blobsWrittenEarly"] > 0))' "$TMP/zpull.json" ||
  fail "pull --buffer-mib 0 wrote no blob early: $(cat "$TMP/zpull.json")"
[ "$(sorted_ls "$SRC")" = "$(sorted_ls "$DZ")" ] || fail "ki ls differs after pull --buffer-mib 0"
"$KI" --store "$DZ" verify "$RUN" >/dev/null || fail "verify after pull --buffer-mib 0"
DP=$TMP/dst-plain
"$KI" init "$DP" >/dev/null
"$KI" --store "$DP" pull --insecure "oci://$REG/ki/evidence" plain | grep -q "from the pack" && fail "a pack-less bundle pulled from a pack"
[ "$(sorted_ls "$SRC")" = "$(sorted_ls "$DP")" ] || fail "ki ls differs after a pack-less bundle pull"

# Through an image layout; the pack is a plain tar in a zstd frame.
"$KI" --store "$SRC" push "oci-layout:$TMP/blayout" --bundle everything "$RUN" "${BLOBS[@]}" >"$TMP/lpush.out" || fail "bundle to layout"
PACK=$(grep "^pack" "$TMP/lpush.out" | cut -f2)
[ "$(head -1 "$TMP/lpush.out" | cut -f3)" = "$BUNDLE" ] || fail "the layout's bundle index differs from the registry's"
DL=$TMP/dst-blayout
"$KI" init "$DL" >/dev/null
"$KI" --store "$DL" pull "oci-layout:$TMP/blayout" everything | grep -q "from the pack" || fail "layout bundle pull did not use the pack"
[ "$(sorted_ls "$SRC")" = "$(sorted_ls "$DL")" ] || fail "ki ls differs after the layout bundle pull"
PACKFILE=$TMP/blayout/blobs/sha256/${PACK#sha256:}
if command -v zstd >/dev/null; then
  zstd -dcq "$PACKFILE" | tar -t | sed 's|^sha256/|sha256:|' | sort >"$TMP/pack.list"
  "$KI" --store "$SRC" ls | cut -f1 | sort >"$TMP/src.list"
  cmp -s "$TMP/pack.list" "$TMP/src.list" || fail "tar -t of the pack does not list the bundle's objects"
fi
# A damaged pack in the layout: refused, said so; a packed bundle's small
# objects have no other copy, so the pull fails and stores nothing.
cp "$PACKFILE" "$PACKFILE.orig"
chmod u+w "$PACKFILE"
printf 'X' | dd of="$PACKFILE" bs=1 seek=100 conv=notrunc status=none
DX=$TMP/dst-damaged
"$KI" init "$DX" >/dev/null
"$KI" --store "$DX" pull "oci-layout:$TMP/blayout" everything >"$TMP/xpull.out" 2>"$TMP/xpull.err" && fail "pull with a damaged pack succeeded"
grep -q "^ki: error: pull from oci-layout:.* failed (nothing was stored; a packed bundle's objects of at most 1 MiB have no other copy on the remote than its pack): pack $PACK of everything refused: .*hashes to" "$TMP/xpull.err" ||
  fail "damaged pack message: $(cat "$TMP/xpull.err")"
[ -z "$("$KI" --store "$DX" ls)" ] || fail "a pull with a damaged pack stored objects"
cp "$PACKFILE.orig" "$PACKFILE"
"$KI" --store "$DX" pull "oci-layout:$TMP/blayout" everything >/dev/null || fail "pull once the pack is whole again"
compare "$SRC" "$DX"

# skopeo carries the bundle (index, parts, pack manifest and pack) registry -> layout -> registry. The
# parts, the pack manifest and the pack arrive unchanged; skopeo 1.9.3 re-serialises the image index
# without its artifactType fields (it predates them), so the copy's index is not byte-identical; ki
# reads it as the same bundle (docs/format.md, "Bundles").
skopeo copy -q --all --src-tls-verify=false "docker://$REG/ki/evidence:everything" "oci:$TMP/skopeo-bundle:everything" ||
  fail "skopeo copy of the bundle to a layout"
skopeo copy -q --all --dest-tls-verify=false "oci:$TMP/skopeo-bundle:everything" "docker://$REG/ki/bundle-copy:everything" ||
  fail "skopeo copy of the bundle back"
skopeo inspect --raw --tls-verify=false "docker://$REG/ki/evidence:everything" >"$TMP/index.ours"
skopeo inspect --raw --tls-verify=false "docker://$REG/ki/bundle-copy:everything" >"$TMP/index.copy"
python3 - "$TMP/index.ours" "$TMP/index.copy" <<'PY' || fail "skopeo changed more of the bundle index than its artifactType fields"
import json, sys
ours, copy = (json.load(open(p)) for p in sys.argv[1:3])
def strip(j):
    j.pop("artifactType", None)
    for m in j["manifests"]:
        m.pop("artifactType", None)
    return j
sys.exit(strip(ours) != strip(copy))
PY
for d in $(python3 -c 'import json,sys; print(" ".join(m["digest"] for m in json.load(open(sys.argv[1]))["manifests"]))' "$TMP/index.ours"); do
  BACK=sha256:$(skopeo inspect --raw --tls-verify=false "docker://$REG/ki/bundle-copy@$d" | sha256sum | cut -d' ' -f1)
  [ "$BACK" = "$d" ] || fail "skopeo changed the bundle manifest $d"
done
cmp -s "$PACKFILE.orig" "$TMP/skopeo-bundle/blobs/sha256/${PACK#sha256:}" || fail "skopeo changed the pack"
DS=$TMP/dst-skopeo-bundle
"$KI" init "$DS" >/dev/null
"$KI" --store "$DS" pull --insecure "oci://$REG/ki/bundle-copy" everything | grep -q "from the pack" ||
  fail "pull of skopeo's copy of the bundle did not use the pack"
[ "$(sorted_ls "$SRC")" = "$(sorted_ls "$DS")" ] || fail "ki ls differs after pulling skopeo's copy of the bundle"

# ---- errors: an unknown tag is not found (3); a dead registry is an I/O error (5)
set +e
"$KI" --store "$DST" pull --insecure "oci://$REG/ki/evidence" no-such-tag 2>/dev/null; rc=$?
[ $rc -eq 3 ] || fail "unknown tag: exit $rc, want 3"
"$KI" --store "$DST" pull "oci://$REG/ki/evidence" "$TAG" 2>"$TMP/tls.err"; rc=$?   # https to a plain-http registry
[ $rc -eq 5 ] || fail "https to an http registry: exit $rc, want 5"
grep -q "$REG answers plain http, not https. For a loopback registry without TLS pass --insecure" "$TMP/tls.err" ||
  fail "https to an http registry does not name the fix: $(cat "$TMP/tls.err")"
"$KI" --store "$SRC" remote add plain "oci://$REG/ki/evidence"
"$KI" --store "$SRC" push plain "$RUN" 2>"$TMP/tls.err"; rc=$?
[ $rc -eq 5 ] || fail "push over https to an http registry: exit $rc, want 5"
grep -q "pass --insecure" "$TMP/tls.err" || fail "push over https names no fix: $(cat "$TMP/tls.err")"
grep -q "run the same ki push again" "$TMP/tls.err" && fail "a TLS failure advises a re-run: $(cat "$TMP/tls.err")"
"$KI" --store "$SRC" push "oci://example.com/ki/x" --insecure "$RUN" 2>/dev/null; rc=$?
[ $rc -eq 2 ] || fail "--insecure off loopback: exit $rc, want 2"
set -e
echo "remote_registry: ok"
