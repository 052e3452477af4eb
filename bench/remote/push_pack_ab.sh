#!/bin/bash
# Push of the KernelIndex export as one bundle, with and without its pack,
# alternated ABBA (pack, no pack, no pack, pack) so that the machine's drift
# weighs on both alike; each push into a fresh registry (tuned as in
# bench_remote.sh: storage on tmpfs, GOGC=400, blob descriptor cache).
#
# Usage: bash bench/remote/push_pack_ab.sh [KI_BINARY] [EXPORT.jsonl.zst]
# Prints, per push: wall time, ki CPU (user+system), registry CPU, HTTP
# requests and the load average; `uptime` before and after.
set -euo pipefail
HERE=$(cd "$(dirname "$0")/../.." && pwd)
KI=${1:-$HERE/build/ki}
EXPORT=${2:-$HERE/tests/data/kernelindex-export/catalog-2026-08-16-0022af0b.jsonl.zst}
source "$HERE/tests/cli/registry.bash"
TMP=$(mktemp -d)
STORAGE=""
cleanup() {
  registry_stop || true
  rm -rf "$TMP" ${STORAGE:+"$STORAGE"}
}
trap cleanup EXIT
"$KI" init "$TMP/src" >/dev/null
"$KI" --store "$TMP/src" import kernelindex "$EXPORT" >/dev/null 2>&1
for k in BenchmarkRun ServingRun WorkloadSuite SoftwareProject OperationSpec ModelRevision; do
  "$KI" --store "$TMP/src" ls --kind "$k" | cut -f1
done >"$TMP/refs"
echo "before: $(uptime)"
for mode in pack no-pack no-pack pack; do
  STORAGE=$(mktemp -d /dev/shm/ki-bench-ab.XXXXXX)
  registry_start "$TMP" "$STORAGE/storage" inmemory 400
  extra=()
  [ "$mode" = no-pack ] && extra=(--no-pack)
  r0=$(awk '{print ($14 + $15) / 100}' "/proc/$REG_PID/stat")
  t0=$(date +%s.%N)
  /usr/bin/time -f "%U+%S" -o "$TMP/time" "$KI" --store "$TMP/src" push --insecure --json --bundle export "${extra[@]}" \
    "oci://127.0.0.1:$REG_PORT/ki/bundle" $(cat "$TMP/refs") >"$TMP/out.json"
  t1=$(date +%s.%N)
  r1=$(awk '{print ($14 + $15) / 100}' "/proc/$REG_PID/stat")
  requests=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["httpRequests"])' "$TMP/out.json")
  printf '%-8s wall %6.1f s  ki cpu %s s  registry cpu %5.1f s  requests %s  load %s\n' "$mode" \
    "$(echo "$t1 - $t0" | bc)" "$(tail -1 "$TMP/time")" "$(echo "$r1 - $r0" | bc)" "$requests" "$(cut -d' ' -f1-3 /proc/loadavg)"
  registry_stop
  rm -rf "$STORAGE"
  STORAGE=""
done
echo "after: $(uptime)"
