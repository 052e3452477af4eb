#!/usr/bin/env bash
# A damaged index file (issue 25.1): data.mdb empty, cut to one page, to
# four pages, to half, or with its meta pages overwritten. Every command
# that opens the store exits 1 (a fault, never a signal: reading past the
# file's end through LMDB's map was a SIGBUS) and says what is wrong and
# what to run; `ki audit --reindex` moves the file aside and builds the
# index again from the frames still whole in it and the loose objects.
source "$(dirname "$0")/testlib.bash" "$@"
SLICE=$DATA/kernelindex-export/catalog-2026-08-16-0022af0b.slice.jsonl

ki init orig >/dev/null
"$KI_BIN" --store orig import kernelindex "$SLICE" >/dev/null 2>&1 || fail "the slice did not import"
head -c 300000 /dev/urandom >big.bin  # a loose object: its frame is over 64 KiB
expect_exit 0 ki --store orig add --blob big.bin
BIG=$(printf '%s' "$OUT" | grep -o 'sha256:[0-9a-f]*' | head -1)
[ -n "$BIG" ] || fail "no digest from ki add: $OUT"
"$KI_BIN" --store orig ls >ls.orig || fail "ls of the original store"
RUN=$(grep -m1 $'\tBenchmarkRun\t' ls.orig | cut -f1)
[ -n "$RUN" ] || fail "the slice holds no BenchmarkRun"
"$KI_BIN" --store orig show "$RUN" >show.orig || fail "show of the original store"
"$KI_BIN" --store orig cat "$RUN" >cat.orig || fail "cat of the original store"
[ -f orig/.ki/index/data.mdb ] || fail "no data.mdb"
SIZE=$(stat -c %s orig/.ki/index/data.mdb)
[ "$SIZE" -gt 65536 ] || fail "data.mdb is only $SIZE bytes: too small to cut in half meaningfully"

# The original's outputs, from store `s` (ls, show and cat of the run).
same_as_orig() {  # same_as_orig LABEL
  "$KI_BIN" --store s ls >ls.now 2>&1 || fail "$1: ls failed: $(head -c 300 ls.now)"
  cmp -s ls.orig ls.now || fail "$1: ls differs from the original's ($(wc -l <ls.now) lines, want $(wc -l <ls.orig))"
  "$KI_BIN" --store s show "$RUN" >show.now 2>&1 || fail "$1: show failed: $(head -c 300 show.now)"
  cmp -s show.orig show.now || fail "$1: show differs from the original's: $(diff show.orig show.now | head -5)"
  "$KI_BIN" --store s cat "$RUN" >cat.now 2>&1 || fail "$1: cat failed"
  cmp -s cat.orig cat.now || fail "$1: cat differs from the original's"
}

for cut in 0 4096 16384 $((SIZE / 2)); do
  rm -rf s && cp -a orig s
  truncate -s "$cut" s/.ki/index/data.mdb
  case $cut in
    0) what="the file is empty" ;;
    4096) what="MDB_INVALID: File is not an LMDB file" ;;  # one meta page of two
    *) what="the file has $cut bytes, but its pages in use end at $SIZE (truncated or damaged)" ;;
  esac
  for cmd in "ls" "audit" "cat $RUN" "show $RUN" "ls --kind BenchmarkRun"; do
    # shellcheck disable=SC2086
    expect_exit 1 ki --store s $cmd
    expect_contains "$ERR" "ki: error: index s/.ki/index/data.mdb: $what" "cut $cut, $cmd: what is wrong"
    expect_contains "$ERR" 'run `ki audit --reindex`, which moves it aside' "cut $cut, $cmd: what to run"
  done
  [ "$(stat -c %s s/.ki/index/data.mdb)" = "$cut" ] || fail "cut $cut: a command that failed changed data.mdb"
  # The rebuild: a fault found (exit 1), what was done said in a note.
  expect_exit 1 ki --store s audit --reindex
  expect_contains "$OUT" "note	index s/.ki/index/data.mdb: $what" "cut $cut, reindex: the damage"
  expect_contains "$OUT" "moved to s/.ki/index/data.mdb.damaged-" "cut $cut, reindex: where the file went"
  expect_contains "$OUT" "the index was built again from the" "cut $cut, reindex: what was done"
  expect_contains "$OUT" '`ki pull` them from a remote that has them, or add or import them again' "cut $cut: what to run"
  moved=(s/.ki/index/data.mdb.damaged-*)
  [ -f "${moved[0]}" ] || fail "cut $cut: the damaged file was not kept"
  [ "$(stat -c %s "${moved[0]}")" = "$cut" ] || fail "cut $cut: the kept file is not the damaged one"
  ls -d s/.ki/index/rebuild-* >/dev/null 2>&1 && fail "cut $cut: the scratch directory was left"
  # A working, consistent store, holding what survived: at least the loose blob.
  expect_exit 0 ki --store s audit
  "$KI_BIN" --store s cat "$BIG" >big.now || fail "cut $cut: cat of the loose blob failed"
  cmp -s big.now big.bin || fail "cut $cut: the loose blob's bytes differ"
  # Another reindex finds nothing to rebuild.
  expect_exit 0 ki --store s audit --reindex
  case "$OUT" in *"moved to"*) fail "cut $cut: a second reindex rebuilt again" ;; esac
  # What the lost pages held comes back from its source: the same import.
  "$KI_BIN" --store s import kernelindex "$SLICE" >/dev/null 2>err.txt || fail "cut $cut: re-import: $(head -c 300 err.txt)"
  same_as_orig "cut $cut, after re-import"
done

# Half the file kept: the frames in it are recovered without a re-import.
rm -rf s && cp -a orig s
truncate -s $((SIZE / 2)) s/.ki/index/data.mdb
expect_exit 1 ki --store s audit --reindex
recovered=$(printf '%s' "$OUT" | grep -o 'built again from the [0-9]* objects' | grep -o '[0-9]*')
[ "${recovered:-0}" -gt 0 ] || fail "half cut: no object recovered from the damaged file: ${OUT:0:400}"

# Every object intact, only the meta pages overwritten: the rebuilt store
# says what the original said.
rm -rf s && cp -a orig s
dd if=/dev/zero of=s/.ki/index/data.mdb bs=4096 count=2 conv=notrunc 2>/dev/null
expect_exit 1 ki --store s ls
expect_contains "$ERR" "File is not an LMDB file" "meta pages overwritten"
expect_exit 1 ki --store s audit --reindex
expect_contains "$OUT" "moved to s/.ki/index/data.mdb.damaged-" "meta pages overwritten: reindex"
same_as_orig "meta pages overwritten, after reindex"
expect_exit 0 ki --store s audit

# Single flipped bytes in the pages (the file's length intact, so the open
# passes): LMDB trusts what it reads, and a damaged page number, size or
# node flag sent it past the file's end (SIGBUS), through a null pointer
# inside LMDB (SIGSEGV) or into one of its assertions (SIGABRT); 21 of 300
# such flips did on the slice's store. Each must end as a fault (exit 1)
# saying what to run, and `ki audit --reindex` must find the damage (its
# check reads every page in a child process) and rebuild the store whole.
python3 - "$SIZE" >flips.txt <<'PY'
import random, sys
random.seed(7)
size = int(sys.argv[1])
for _ in range(300):
    page = random.randrange(2, size // 4096)
    print(page * 4096 + random.choice([random.randrange(0, 24), random.randrange(16, 4096)]), random.randrange(1, 256))
PY
faulted=0
while read -r off byte; do
  rm -rf s && cp -a orig s
  printf "$(printf '\\x%02x' "$byte")" | dd of=s/.ki/index/data.mdb bs=1 seek="$off" conv=notrunc 2>/dev/null
  for cmd in ls audit; do
    "$KI_BIN" --store s $cmd >/dev/null 2>flip.err
    rc=$?
    [ "$rc" -lt 128 ] || fail "flip at $off: ki $cmd died with signal $((rc - 128))"
    if grep -q "reading a page of it faulted" flip.err; then
      [ "$rc" = 1 ] || fail "flip at $off: ki $cmd faulted with exit $rc, want 1"
      expect_contains "$(cat flip.err)" 'run `ki audit --reindex`, which moves it aside' "flip at $off: what to run"
      hit=1
    fi
  done
  if [ "${hit:-0}" = 1 ]; then
    faulted=$((faulted + 1))
    hit=0
    expect_exit 1 ki --store s audit --reindex
    # Its check finds the damage by a signal ("a page is damaged") or by an
    # LMDB error on the way (MDB_PAGE_NOTFOUND, ...): either way the file is
    # moved aside and the index built again.
    expect_contains "$OUT" ": moved to s/.ki/index/data.mdb.damaged-" "flip at $off: reindex found the damage"
    expect_contains "$OUT" "the index was built again from the" "flip at $off: reindex rebuilt the index"
    same_as_orig "flip at $off, after reindex"
  fi
done <flips.txt
# The flips must still reach the guarded faults (else this part tests
# nothing: change the seed).
[ "$faulted" -gt 0 ] || fail "none of the 300 flips made a read of the index fault"

# A healthy store: --reindex rebuilds nothing and moves nothing.
rm -rf s && cp -a orig s
expect_exit 0 ki --store s audit --reindex
ls s/.ki/index/data.mdb.damaged-* >/dev/null 2>&1 && fail "healthy store: reindex moved data.mdb"
same_as_orig "healthy store, after reindex"

finish
