#!/usr/bin/env bash
# A store of format 10 (tests/data/store-format10, made by ki at 50803e1: the
# slice of the export imported, the seed run added, one unreferenced log
# blob; refs a plain table whose values are artifact URIs, names a table of
# its own) reads as it is with today's ki and audits clean as it is; the
# first write makes it format 12 (refs a set table of as many keys, their
# referrers numbered (format 12: store_format11.sh checks the keys), the
# latest holder of each name marked in nameset, names emptied): rank,
# groups, records, ls, show (its referrers) and the export print what
# format 10's ki printed, names resolve as before, and audit and reindex
# are clean.
source "$(dirname "$0")/old_store.bash" 10 "$@"
# A table's mdb_dump header line "duplicates=1" says it is a set table.
is_set_table() { mdb_dump -s "$1" "$T/.ki/index" | sed '/^HEADER=END/q' | grep -qx "duplicates=1"; }
entries() { mdb_stat -s "$1" "$T/.ki/index" | awk '/Entries:/{print $2}'; }
# 1. Read as it is: FORMAT left alone; audit clean.
check_printed "format 10"
expect_rc 0 "export (format 10)" K export kernelindex "$T/before.jsonl.zst" ae5aacaf
expect_rc 0 "audit (format 10)" K audit
grep -q " 0 faults" "$T/out" || fail "audit of the format-10 store as it is: $(tail -3 "$T/out")"
grep -qx "ki-store 10" "$T/.ki/FORMAT" || fail "reading rewrote FORMAT"
if command -v mdb_dump >/dev/null; then
  ! is_set_table refs || fail "the fixture's refs is already a set table"
  mdb_dump -s refs "$T/.ki/index" | sed '1,/^HEADER=END/d' | sed '/^DATA=END/d' | sed -n '1~2p' | tr -d ' ' |
    sort >"$T/refs.before"
  REFS=$(entries refs)
  [ "$REFS" -gt 50 ] || fail "the fixture holds $REFS references"
  NAMES=$(entries names)
  [ "$NAMES" -gt 10 ] || fail "the fixture holds $NAMES names"
fi
# The values of nameset's entries, one a line (hex; a holder's is empty).
nameset_values() { mdb_dump -s nameset "$T/.ki/index" | sed '1,/^HEADER=END/d' | sed '/^DATA=END/d' | sed -n '2~2p' | tr -d ' '; }

# 2. A write: FORMAT becomes 12; refs holds as many keys as a set table,
# each the target, the referrer's number and the field's code (37 bytes).
echo "a second log line" >"$T/log2.txt"
expect_rc 0 "add" K add "$T/log2.txt"
ADDED=$(sha256sum "$T/log2.txt" | cut -d' ' -f1)
grep -qx "ki-store $NOW_FORMAT" "$T/.ki/FORMAT" || fail "the first write makes the store format $NOW_FORMAT: $(cat "$T/.ki/FORMAT")"
if command -v mdb_dump >/dev/null; then
  is_set_table refs || fail "refs is not a set table after the upgrade"
  [ "$(entries refs)" = "$REFS" ] || fail "refs holds $(entries refs) keys after the upgrade, not $REFS"
  # Each key of a set table is its LMDB key and a duplicate: joined, the
  # target (32 bytes) and the rest, which begins with the referrer's number.
  mdb_dump -s refs "$T/.ki/index" | sed '1,/^HEADER=END/d' | sed '/^DATA=END/d' |
    paste - - | awk '{print $1 $2}' | sort >"$T/refs.after"
  [ "$(wc -l <"$T/refs.after")" = "$REFS" ] || fail "refs dumps $(wc -l <"$T/refs.after") keys, not $REFS"
  cut -c1-64 "$T/refs.before" | sort >"$T/targets.before"
  cut -c1-64 "$T/refs.after" | sort >"$T/targets.after"
  cmp "$T/targets.before" "$T/targets.after" >/dev/null || fail "refs' targets differ after the upgrade"
  # Every name's latest holder marked (0x01) in nameset, names emptied.
  [ "$(nameset_values | grep -c '^01$')" = "$NAMES" ] || fail "nameset marks $(nameset_values | grep -c '^01$') latest holders, not $NAMES"
  [ "$(nameset_values | grep -vc '^01$\|^$')" = 0 ] || fail "a nameset value is neither empty nor the mark"
  [ "$(entries names)" = 0 ] || fail "names holds $(entries names) entries after the upgrade"
fi
check_printed "upgraded"
expect_rc 0 "export (upgraded)" K export kernelindex "$T/after.jsonl.zst" ae5aacaf
cmp <(zstd -dc "$T/before.jsonl.zst") <(zstd -dc "$T/after.jsonl.zst") >/dev/null ||
  fail "the export of the upgraded store differs from format 10's"
[ "$(zstd -dc "$T/after.jsonl.zst" | wc -l)" -gt 5 ] || fail "the export is nearly empty"
expect_rc 0 "audit" K audit
grep -q " 0 faults" "$T/out" || fail "audit: $(tail -3 "$T/out")"
expect_rc 0 "audit --reindex" K audit --reindex
grep -q " 0 faults" "$T/out" || fail "audit --reindex: $(tail -1 "$T/out")"
if command -v mdb_dump >/dev/null; then
  is_set_table refs || fail "refs is not a set table after reindex"
  [ "$(entries refs)" = "$REFS" ] || fail "refs holds $(entries refs) keys after reindex, not $REFS"
  [ "$(nameset_values | grep -c '^01$')" = "$NAMES" ] || fail "after reindex nameset marks $(nameset_values | grep -c '^01$') latest holders, not $NAMES"
fi
check_printed "after reindex"
echo "store_format10: ok"
