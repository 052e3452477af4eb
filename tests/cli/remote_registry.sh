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

# ---- errors: an unknown tag is not found (3); a dead registry is an I/O error (5)
set +e
"$KI" --store "$DST" pull --insecure "oci://$REG/ki/evidence" no-such-tag 2>/dev/null; rc=$?
[ $rc -eq 3 ] || fail "unknown tag: exit $rc, want 3"
"$KI" --store "$DST" pull "oci://$REG/ki/evidence" "$TAG" 2>/dev/null; rc=$?   # https to a plain-http registry
[ $rc -eq 5 ] || fail "https to an http registry: exit $rc, want 5"
"$KI" --store "$SRC" push "oci://example.com/ki/x" --insecure "$RUN" 2>/dev/null; rc=$?
[ $rc -eq 2 ] || fail "--insecure off loopback: exit $rc, want 2"
set -e
echo "remote_registry: ok"
