#!/bin/bash
# Peak memory of `ki pull` against what it fetches: N generated blobs of MIB
# MiB each (incompressible, like tensors) are added as blobs, pushed as one
# bundle to a local registry (Debian's docker-registry on 127.0.0.1), and
# pulled into fresh stores with several --buffer-mib values, each under
# /usr/bin/time (maximum resident set size, wall time). A buffer larger than
# all the blobs holds every one of them until the single write at the end,
# which is how every pull behaved before the buffer existed; that row is the
# anchor the others are compared with.
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
"$KI" --store "$TMP/src" push --insecure "$URL" --bundle big "${REFS[@]}" >/dev/null
TOTAL=$((N * MIB))
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
