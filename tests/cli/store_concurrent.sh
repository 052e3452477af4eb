#!/usr/bin/env bash
# Several ki processes writing one store at once (issue 25.4): two imports
# into a fresh store failed with "LMDB cursor: Invalid argument" (exit 5).
# Every writer must succeed (LMDB's write lock makes them take turns), and
# the store must end as the same writes made one after another leave it.
source "$(dirname "$0")/testlib.bash" "$@"
SLICE=$DATA/kernelindex-export/catalog-2026-08-16-0022af0b.slice.jsonl
FULL=$DATA/kernelindex-export/catalog-2026-08-16-0022af0b.jsonl.zst
EXAMPLES=$DATA/kernelindex/examples

mkdir files
for i in $(seq 1 200); do echo "small file $i" >files/s$i.txt; done
for i in $(seq 1 20); do head -c 100000 /dev/urandom >files/b$i.bin; done  # loose objects

# Writers started together; each must exit 0. $1: the store; then one
# command per argument, run by `ki --store $1`.
together() {
  local store=$1 n=0 pids=() cmd
  shift
  ki init "$store" >/dev/null
  for cmd in "$@"; do
    n=$((n + 1))
    # shellcheck disable=SC2086
    "$KI_BIN" --store "$store" $cmd >/dev/null 2>"$store.$n.err" &
    pids+=($!)
  done
  n=0
  for pid in "${pids[@]}"; do
    n=$((n + 1))
    wait "$pid" || fail "$store: writer $n of $# ($(echo "${!n}" | cut -c1-60)) failed: $(grep -m1 error "$store.$n.err")"
  done
  expect_exit 0 ki --store "$store" audit
}

# The same writes, one after another: what `ls` must say after `together`.
sequential() {
  local store=$1 cmd
  shift
  ki init "$store" >/dev/null
  for cmd in "$@"; do
    # shellcheck disable=SC2086
    "$KI_BIN" --store "$store" $cmd >/dev/null 2>&1 || fail "$store: sequential $cmd failed"
  done
  "$KI_BIN" --store "$store" ls >"$store.ls"
}

same_ls() {  # same_ls STORE REFERENCE-LS
  "$KI_BIN" --store "$1" ls >"$1.ls"
  cmp -s "$1.ls" "$2" || fail "$1: ls differs from the sequential store's ($(wc -l <"$1.ls") lines, want $(wc -l <"$2"))"
}

IMPORT="import kernelindex $SLICE"
ADD_SMALL="add $(echo files/s*.txt)"
ADD_BIG="add --blob $(echo files/b*.bin)"
ADD_DOCS="add $(echo "$EXAMPLES"/*.yaml)"

sequential seq-import "$IMPORT"
for trial in 1 2 3 4 5; do
  together imp$trial "$IMPORT" "$IMPORT"
  same_ls imp$trial seq-import.ls
done

sequential seq-all "$IMPORT" "$ADD_SMALL" "$ADD_BIG" "$ADD_DOCS"
for trial in 1 2 3; do
  together add$trial "$ADD_SMALL" "$ADD_BIG" "$ADD_DOCS" "$ADD_SMALL"
  together mix$trial "$IMPORT" "$ADD_SMALL" "$ADD_BIG" "$ADD_DOCS" "$IMPORT"
  same_ls mix$trial seq-all.ls
done

# The full export (48,109 objects), as the issue measured it.
together full "import kernelindex $FULL" "import kernelindex $FULL"

finish
