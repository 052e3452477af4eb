#!/bin/bash
# Time and peak memory of `ki push` and `ki pull` of one large blob (a
# stand-in for a tensor): SIZE MiB of incompressible bytes, added with
# `ki add --blob`, pushed to a local registry (Debian's docker-registry on
# 127.0.0.1) and to an OCI image layout, and pulled from each into a fresh
# store, each command under /usr/bin/time (wall time, maximum resident set
# size); then `ki verify` of each pulled copy.
#
# Usage: bash bench/remote/stream_large.sh [KI_BINARY] [SIZE_MIB]
# Needs about 6 x SIZE of free disk under $TMPDIR.
set -euo pipefail
HERE=$(cd "$(dirname "$0")/../.." && pwd)
KI=${1:-$HERE/build/ki}
MIB=${2:-1024}
source "$HERE/tests/cli/registry.bash"
TMP=$(mktemp -d)
cleanup() {
  registry_stop || true
  rm -rf "$TMP"
}
trap cleanup EXIT
registry_start "$TMP" "$TMP/storage"
URL=oci://127.0.0.1:$REG_PORT/ki/large

# One row: what, exit status, wall seconds, peak RSS in MiB.
measure() {
  local what=$1 rc=0
  shift
  /usr/bin/time -f '%e %M' -o "$TMP/time" "$KI" "$@" >"$TMP/out" 2>"$TMP/err" || rc=$?
  read -r wall rss <"$TMP/time" || true
  rss=${rss:-0}
  printf '| %s | %s | %s s | %d MiB |%s\n' "$what" "$rc" "${wall:-?}" $((rss / 1024)) \
    "$([ $rc -eq 0 ] || echo " $(grep -v '^Command exited' "$TMP/err" | head -1 | cut -c1-100)")"
}

"$KI" init "$TMP/src" >/dev/null
head -c $((MIB << 20)) /dev/urandom >"$TMP/blob.bin"
D=$("$KI" --store "$TMP/src" add --blob "$TMP/blob.bin" | cut -f1)
rm "$TMP/blob.bin"
echo "ki: $KI ($("$KI" --version 2>/dev/null || echo unknown)); blob: $MIB MiB, $D"
echo
echo "| step | exit | wall | peak RSS |"
echo "|---|---|---|---|"
measure "push to the registry" --store "$TMP/src" push --insecure "$URL" "$D"
"$KI" init "$TMP/dst" >/dev/null
measure "pull from the registry" --store "$TMP/dst" pull --insecure "$URL" "$D"
measure "verify the pulled copy" --store "$TMP/dst" verify "$D"
rm -rf "$TMP/dst" "$TMP/storage"
measure "push to a layout" --store "$TMP/src" push "oci-layout:$TMP/layout" "$D"
"$KI" init "$TMP/dst2" >/dev/null
measure "pull from the layout" --store "$TMP/dst2" pull "oci-layout:$TMP/layout" "$D"
measure "verify the pulled copy" --store "$TMP/dst2" verify "$D"
