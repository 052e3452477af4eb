#!/usr/bin/env bash
# A store of format 13 (tests/data/store-format13, made by ki at 2420404: the
# slice of the export imported, the seed run added, a one-line log blob and
# a loose blob nothing references) reads as it is with today's ki, its
# catalog tables keyed by digests, and audits clean as it is; the first
# write makes it format 15: every derived index rebuilt, the catalog's
# tables keyed by object numbers (catalog.runs keys of 4 bytes, KIR2
# rankings), and rank, groups, records, ls and show print what format 13's
# ki printed; audit and reindex are clean. An upgrade killed after its batch
# committed, before FORMAT said 15 (FORMAT put back to 13 here), reads the
# same, and the next write finishes it.
source "$(dirname "$0")/old_store.bash" 13 "$@"
LOOSE=sha256:ce471ad1fbd3179b54a0be7a9c64fe59e79ac59c1707a1fc32131e1c2cd9696a
HAVE_DUMP=0
command -v mdb_dump >/dev/null && HAVE_DUMP=1
# The distinct key sizes (bytes) of a table, one per line.
key_sizes() {
  mdb_dump -s "$1" "$T/.ki/index" | sed '1,/^HEADER=END/d' | sed '/^DATA=END/d' | paste - - |
    awk '{print length($1) / 2}' | sort -un
}
# The first four bytes (hex) of each catalog.ranks value, distinct.
rank_magics() {
  mdb_dump -s catalog.ranks "$T/.ki/index" | sed '1,/^HEADER=END/d' | sed '/^DATA=END/d' | paste - - |
    awk '{print substr($2, 1, 8)}' | sort -u
}
check_show_seed() {
  expect_rc 0 "show the seed --json ($1)" K show $SEED --json
  # The seed waits for its WorkloadCase (catalog.pending, keyed by its
  # number once upgraded): what show says of its rank.
  python3 - "$T/out" <<'PY' || fail "show of the seed ($1): not the rank it waits for"
import json, sys
j = json.load(open(sys.argv[1]))
assert j["ki"]["rank"]["missing"][0]["kind"] == "WorkloadCase", j["ki"]["rank"]
PY
  cp "$T/out" "$T/show_seed.$2"
}

# 1. Read as it is: FORMAT left alone; the catalog keyed by digests; audit clean.
check_printed "format 13"
check_show_seed "format 13" before
expect_rc 0 "audit (format 13)" K audit
grep -q " 0 faults" "$T/out" || fail "audit of the format-13 store as it is: $(tail -3 "$T/out")"
grep -qx "ki-store 13" "$T/.ki/FORMAT" || fail "reading rewrote FORMAT"
if [ $HAVE_DUMP = 1 ]; then
  [ "$(key_sizes catalog.runs)" = 32 ] || fail "catalog.runs keys of the fixture: $(key_sizes catalog.runs)"
  [ "$(key_sizes catalog.cohort)" = 64 ] || fail "catalog.cohort keys of the fixture: $(key_sizes catalog.cohort)"
  [ "$(rank_magics)" = 4b495231 ] || fail "catalog.ranks of the fixture: $(rank_magics)"
fi

# 2. A write: FORMAT becomes 15 and the catalog is keyed by numbers.
expect_rc 0 "add" K add "$DATA/kernelindex/examples/software-project.yaml"
grep -qx "ki-store 15" "$T/.ki/FORMAT" || fail "the first write makes the store format 15: $(cat "$T/.ki/FORMAT")"
if [ $HAVE_DUMP = 1 ]; then
  [ "$(key_sizes catalog.runs)" = 4 ] || fail "catalog.runs keys after the upgrade: $(key_sizes catalog.runs)"
  [ "$(key_sizes catalog.cohort)" = 36 ] || fail "catalog.cohort keys after the upgrade: $(key_sizes catalog.cohort)"
  [ "$(key_sizes catalog.facts)" = 8 ] || fail "catalog.facts keys after the upgrade: $(key_sizes catalog.facts)"
  [ "$(key_sizes catalog.pending | wc -l)" -le 1 ] || fail "catalog.pending keys: $(key_sizes catalog.pending)"
  [ "$(rank_magics)" = 4b495232 ] || fail "catalog.ranks after the upgrade: $(rank_magics)"
fi
expect_rc 0 "resolve the added project" K resolve SoftwareProject/meridian-kernels
M=$(cut -f1 "$T/out" | head -1)
expect_rc 0 "ls blobs" K ls --kind blob
DOC=$(cut -f1 "$T/out" | grep -vxFf <(cut -f1 "$F/ls.txt") | head -1)
[ -n "$DOC" ] || fail "the added project's document is not listed"
ADDED="\(${M#sha256:}\|${DOC#sha256:}\)"
check_printed "upgraded"
check_show_seed "upgraded" after
cmp "$T/show_seed.before" "$T/show_seed.after" >/dev/null || fail "show of the seed changed: $(diff "$T/show_seed.before" "$T/show_seed.after" | head -5)"
expect_rc 0 "cat the loose blob" K cat $LOOSE
[ "sha256:$(sha256sum <"$T/out" | cut -d' ' -f1)" = $LOOSE ] || fail "cat of the loose blob: other bytes"
expect_rc 0 "audit" K audit
grep -q " 0 faults" "$T/out" || fail "audit: $(tail -3 "$T/out")"
expect_rc 0 "audit --reindex" K audit --reindex
grep -q " 0 faults" "$T/out" || fail "audit --reindex: $(tail -1 "$T/out")"
check_printed "after reindex"

# 3. Killed after the upgrade's batch committed, before FORMAT was
# rewritten: the tables hold numbers under a FORMAT that says 13. Read
# as what it holds; the next write rebuilds again and rewrites FORMAT.
printf 'ki-store 13\n' >"$T/.ki/FORMAT"
check_printed "numbered under FORMAT 13"
check_show_seed "numbered under FORMAT 13" window
cmp "$T/show_seed.before" "$T/show_seed.window" >/dev/null || fail "show of the seed in the window changed"
expect_rc 0 "audit (numbered under FORMAT 13)" K audit
grep -q " 0 faults" "$T/out" || fail "audit of the numbered tables under FORMAT 13: $(tail -3 "$T/out")"
grep -qx "ki-store 13" "$T/.ki/FORMAT" || fail "reading rewrote FORMAT"
expect_rc 0 "a write finishes the upgrade" K add "$DATA/kernelindex/examples/software-project.yaml"
grep -qx "ki-store 15" "$T/.ki/FORMAT" || fail "the write did not rewrite FORMAT: $(cat "$T/.ki/FORMAT")"
check_printed "finished"
expect_rc 0 "audit (finished)" K audit
grep -q " 0 faults" "$T/out" || fail "audit after the finished upgrade: $(tail -3 "$T/out")"
echo "store_format13: ok"
