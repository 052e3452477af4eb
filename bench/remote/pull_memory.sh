#!/bin/bash
# Peak memory of `ki push` and `ki pull` against the bytes they move. N
# generated blobs of MIB MiB each (incompressible, like tensors) are added as
# blobs, pushed as one bundle to a local registry (Debian's docker-registry on
# 127.0.0.1) and pulled into fresh stores, each run under /usr/bin/time
# (maximum resident set size, wall time), with several --buffer-mib values.
# A buffer larger than all the blobs does not limit anything: every upload
# worker holds its object at once, and a pull holds every blob until its
# single write at the end, which is how both behaved before the buffers
# existed; those rows are the anchors the others are compared with.
#
# Usage: bash bench/remote/pull_memory.sh [KI_BINARY] [N] [MIB]
set -euo pipefail
HERE=$(cd "$(dirname "$0")/../.." && pwd)
KI=${1:-$HERE/build/ki}
N=${2:-16}
MIB=${3:-32}
source "$HERE/tests/cli/registry.bash"
TMP=$(mktemp -d)
cleanup() {
  registry_stop || true
  rm -rf "$TMP"
}
trap cleanup EXIT
registry_start "$TMP" "$TMP/storage"
URL=oci://127.0.0.1:$REG_PORT/ki/memory

"$KI" init "$TMP/src" >/dev/null
for i in $(seq "$N"); do head -c $((MIB << 20)) /dev/urandom >"$TMP/blob$i.bin"; done
"$KI" --store "$TMP/src" add --blob --json "$TMP"/blob*.bin >"$TMP/added.json"
mapfile -t REFS < <(python3 -c 'import json,sys; [print(o["digest"]) for o in json.load(open(sys.argv[1]))]' "$TMP/added.json")
rm -f "$TMP"/blob*.bin
TOTAL=$((N * MIB))
# The push itself, under /usr/bin/time too: its 8 upload workers read at most
# --buffer-mib of objects at once (an object larger than that alone).
echo "ki push of $N blobs of $MIB MiB ($TOTAL MiB) to a local registry (8 upload jobs)"
printf "%-14s %10s %9s\n" "--buffer-mib" "peak RSS" "wall s"
for buf in $((TOTAL * 2)) 64; do
  registry_stop
  rm -rf "$TMP/storage"
  registry_start "$TMP" "$TMP/storage"
  URL=oci://127.0.0.1:$REG_PORT/ki/memory
  /usr/bin/time -f "%M %e" -o "$TMP/time" "$KI" --store "$TMP/src" push --insecure --recheck --buffer-mib "$buf" \
    "$URL" --bundle big "${REFS[@]}" >/dev/null
  read -r rss wall <"$TMP/time"
  printf "%-14s %7d MiB %9s\n" "$buf" $((rss / 1024)) "$wall"
done
echo "ki pull of $N blobs of $MIB MiB ($TOTAL MiB) from a local registry; $(nproc) cores; $(date -u +%FT%TZ)"
printf "%-14s %10s %9s %12s\n" "--buffer-mib" "peak RSS" "wall s" "written early"
for buf in $((TOTAL * 2)) 256 64 0; do
  "$KI" init "$TMP/dst" >/dev/null
  /usr/bin/time -f "%M %e" -o "$TMP/time" "$KI" --store "$TMP/dst" pull --insecure --json --buffer-mib "$buf" "$URL" big \
    >"$TMP/pull.json"
  read -r rss wall <"$TMP/time"
  early=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["blobsWrittenEarly"])' "$TMP/pull.json")
  "$KI" --store "$TMP/dst" verify "${REFS[0]}" >/dev/null
  printf "%-14s %7d MiB %9s %12s\n" "$buf" $((rss / 1024)) "$wall" "$early"
  rm -rf "$TMP/dst"
done
