#!/usr/bin/env bash
# A store of format 8 (tests/data/store-format8, made by ki at 0432b1f: the
# slice of the export imported, the seed run added, one unreferenced log
# blob) reads as it is with today's ki, and audits clean as it is (its
# catalog.cohorts and catalog.events values are JSON text); the first write
# makes it format 9 (each of those values compact binary JSON): rank,
# groups, records, ls and the export print what format 8's ki printed, and
# audit and reindex are clean.
source "$(dirname "$0")/old_store.bash" 8 "$@"
# The first byte of every value of a table: `{` (JSON text) or 0x02.
first_bytes() {
  mdb_dump -s "$1" "$T/.ki/index" | python3 -c '
import sys
lines = [l.strip() for l in sys.stdin if l.startswith(" ")]
print(" ".join(sorted({v[:2] for v in lines[1::2]})), len(lines) // 2)'
}
check_all() {  # $1: when
  expect_rc 0 "rank ($1)" K rank ae5aacaf --json
  same_json rank_ae5.json
  expect_rc 0 "groups ($1)" K groups --json
  same_json groups.json
  expect_rc 0 "records ($1)" K records ae5aacaf --json
  same_json records_ae5.json
  expect_rc 0 "show the seed ($1)" K show $SEED
  grep -q "ae5aacaf\|rank" "$T/out" || fail "show of the seed ($1): $(cat "$T/out")"
}

# 1. Read as it is: FORMAT left alone, the JSON values read; audit clean.
check_all "format 8"
expect_rc 0 "ls" K ls --kind BenchmarkRun
cp "$T/out" "$T/ls_before"
expect_rc 0 "export (format 8)" K export kernelindex "$T/before.jsonl.zst" ae5aacaf
expect_rc 0 "audit (format 8)" K audit
grep -q " 0 faults" "$T/out" || fail "audit of the format-8 store as it is: $(tail -3 "$T/out")"
grep -qx "ki-store 8" "$T/.ki/FORMAT" || fail "reading rewrote FORMAT"
if command -v mdb_dump >/dev/null; then
  [ "$(first_bytes catalog.cohorts)" = "7b 6" ] || fail "catalog.cohorts of the fixture: $(first_bytes catalog.cohorts)"
fi

# 2. A write: FORMAT becomes 9 and every cohorts and events value is binary.
echo "a second log line" >"$T/log2.txt"
expect_rc 0 "add" K add "$T/log2.txt"
grep -qx "ki-store $NOW_FORMAT" "$T/.ki/FORMAT" || fail "the first write makes the store format $NOW_FORMAT (today's): $(cat "$T/.ki/FORMAT")"
if command -v mdb_dump >/dev/null; then
  [ "$(first_bytes catalog.cohorts)" = "02 6" ] || fail "catalog.cohorts after the upgrade: $(first_bytes catalog.cohorts)"
  [ "$(first_bytes catalog.events)" = "02 7" ] || fail "catalog.events after the upgrade: $(first_bytes catalog.events)"
fi
check_all "upgraded"
expect_rc 0 "ls (upgraded)" K ls --kind BenchmarkRun
cmp "$T/out" "$T/ls_before" >/dev/null || fail "ls differs after the upgrade"
expect_rc 0 "export (upgraded)" K export kernelindex "$T/after.jsonl.zst" ae5aacaf
cmp <(zstd -dc "$T/before.jsonl.zst") <(zstd -dc "$T/after.jsonl.zst") >/dev/null ||
  fail "the export of the upgraded store differs from format 8's"
[ "$(zstd -dc "$T/after.jsonl.zst" | wc -l)" -gt 5 ] || fail "the export is nearly empty"
expect_rc 0 "audit" K audit
grep -q " 0 faults" "$T/out" || fail "audit: $(tail -3 "$T/out")"
expect_rc 0 "audit --reindex" K audit --reindex
grep -q " 0 faults" "$T/out" || fail "audit --reindex: $(tail -1 "$T/out")"
check_all "after reindex"
echo "store_format8: ok"
