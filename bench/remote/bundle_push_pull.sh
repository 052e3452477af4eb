#!/bin/bash
# The whole catalog as one bundle, pushed and pulled side by side against a
# loopback docker-registry (issue 19's target: push <= 3x pull, a re-push of
# unchanged content <= 1 s).
#
# Usage: bash bench/remote/bundle_push_pull.sh [KI_BINARY] [EXPORT.jsonl.zst] [ROUNDS]
# Imports the KernelIndex export into a store, then per round, into a fresh
# registry (storage on /dev/shm when it exists): the README's push of every
# BenchmarkRun as the bundle `catalog`, the same push again (nothing
# changed), the pull of `catalog` into an empty store, then `ki push --bundle
# catalog --all` into another fresh registry and its pull. Prints wall time,
# ki CPU and HTTP requests per step, then the ratios. `uptime` before and
# after: other work on the machine shows in every number. KI_BENCH_ALL=0
# skips the --all steps.
set -euo pipefail
HERE=$(cd "$(dirname "$0")/../.." && pwd)
KI=${1:-$HERE/build/ki}
EXPORT=${2:-$HERE/tests/data/kernelindex-export/catalog-2026-08-16-0022af0b.jsonl.zst}
ROUNDS=${3:-1}
source "$HERE/tests/cli/registry.bash"
TMP=$(mktemp -d)
SHM=${TMPDIR:-/tmp}
[ -d /dev/shm ] && SHM=/dev/shm
STORAGE=$(mktemp -d "$SHM/ki-bench-bundle.XXXXXX")
cleanup() {
  registry_stop || true
  rm -rf "$TMP" "$STORAGE"
}
trap cleanup EXIT

fresh_registry() {
  registry_stop || true
  rm -rf "$STORAGE/storage"
  registry_start "$TMP" "$STORAGE/storage" inmemory
  URL=oci://127.0.0.1:$REG_PORT/ki/catalog
}

# step NAME CMD...: runs CMD with --json output into $TMP/NAME.json; sets WALL.
step() {
  local name=$1
  shift
  local t0 t1
  t0=$(date +%s.%N)
  /usr/bin/time -f "%U %S" -o "$TMP/$name.time" "$@" >"$TMP/$name.json"
  t1=$(date +%s.%N)
  WALL=$(echo "$t1 - $t0" | bc)
  local req cpu
  req=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1])).get("httpRequests", "?"))' "$TMP/$name.json")
  cpu=$(awk '{printf "%.2f", $1 + $2}' "$TMP/$name.time")
  printf '%-22s wall %7.2f s  ki cpu %6s s  requests %6s\n' "$name" "$WALL" "$cpu" "$req"
}

"$KI" init "$TMP/src" >/dev/null
"$KI" --store "$TMP/src" import kernelindex "$EXPORT" >/dev/null 2>&1
"$KI" --store "$TMP/src" ls --kind BenchmarkRun | cut -f1 >"$TMP/runs"
echo "ki $("$KI" --version 2>/dev/null | head -1); $(wc -l <"$TMP/runs") BenchmarkRuns; $(nproc) cores; registry $(docker-registry --version | awk '{print $NF}') storage on $(df --output=fstype "$STORAGE" | tail -1)"
echo "before: $(uptime)"
for round in $(seq "$ROUNDS"); do
  echo "round $round"
  fresh_registry
  step push-runs "$KI" --store "$TMP/src" push --insecure --json --bundle catalog "$URL" $(cat "$TMP/runs")
  PUSH=$WALL
  step repush-runs "$KI" --store "$TMP/src" push --insecure --json --bundle catalog "$URL" $(cat "$TMP/runs")
  REPUSH=$WALL
  rm -rf "$TMP/dst"
  "$KI" init "$TMP/dst" >/dev/null
  step pull-runs "$KI" --store "$TMP/dst" pull --insecure --json "$URL" catalog
  PULL=$WALL
  [ "${KI_BENCH_ALL:-1}" = 0 ] && continue
  fresh_registry
  step push-all "$KI" --store "$TMP/src" push --insecure --json --bundle catalog --all "$URL"
  PUSHALL=$WALL
  step repush-all "$KI" --store "$TMP/src" push --insecure --json --bundle catalog --all "$URL"
  REPUSHALL=$WALL
  rm -rf "$TMP/dst"
  "$KI" init "$TMP/dst" >/dev/null
  step pull-all "$KI" --store "$TMP/dst" pull --insecure --json "$URL" catalog
  PULLALL=$WALL
  printf 'runs bundle: push/pull %.2f (push %.2f s, pull %.2f s), unchanged re-push %.2f s\n' \
    "$(echo "$PUSH / $PULL" | bc -l)" "$PUSH" "$PULL" "$REPUSH"
  printf 'whole store (--all): push/pull %.2f (push %.2f s, pull %.2f s), unchanged re-push %.2f s\n' \
    "$(echo "$PUSHALL / $PULLALL" | bc -l)" "$PUSHALL" "$PULLALL" "$REPUSHALL"
done
echo "after: $(uptime)"
