#!/usr/bin/env bash
# A store of format 11 (tests/data/store-format11, made by ki at e86bae3: the
# slice of the export imported, the seed run added, a one-line log blob and
# a loose blob nothing references; objects keyed by digest, refs' keys
# holding their referrers' digests) reads as it is with today's ki and
# audits clean as it is; the first write makes it format 12 (objects keyed
# by object number, each row the digest and the frame, a loose object's the
# digest alone; refs' referrers numbers): rank, groups, records, ls, show
# (its referrers, read back through the numbers), the export and cat print
# what format 11's ki printed, and audit and reindex are clean.
source "$(dirname "$0")/old_store.bash" 11 "$@"
LOOSE=sha256:ce471ad1fbd3179b54a0be7a9c64fe59e79ac59c1707a1fc32131e1c2cd9696a
entries() { mdb_stat -s "$1" "$T/.ki/index" | awk '/Entries:/{print $2}'; }
# A table's keys, one a line (hex), and a set table's joined (its LMDB key
# and each duplicate).
keys() { mdb_dump -s "$1" "$T/.ki/index" | sed '1,/^HEADER=END/d' | sed '/^DATA=END/d' | sed -n '1~2p' | tr -d ' '; }
set_keys() { mdb_dump -s "$1" "$T/.ki/index" | sed '1,/^HEADER=END/d' | sed '/^DATA=END/d' | paste - - | awk '{print $1 $2}'; }
key_lengths() { awk '{print length($0) / 2}' | sort -n | uniq -c | awk '{print $2 ":" $1}' | tr '\n' ' '; }
check_cat() {
  expect_rc 0 "cat the loose blob ($1)" K cat $LOOSE
  [ "sha256:$(sha256sum <"$T/out" | cut -d' ' -f1)" = $LOOSE ] || fail "cat of the loose blob ($1): other bytes"
  expect_rc 0 "cat the seed ($1)" K cat $SEED
  [ "sha256:$(sha256sum <"$T/out" | cut -d' ' -f1)" = $SEED ] || fail "cat of the seed ($1): other bytes"
}

# 1. Read as it is: FORMAT left alone; audit clean.
check_printed "format 11"
check_cat "format 11"
expect_rc 0 "export (format 11)" K export kernelindex "$T/before.jsonl.zst" ae5aacaf
expect_rc 0 "audit (format 11)" K audit
grep -q " 0 faults" "$T/out" || fail "audit of the format-11 store as it is: $(tail -3 "$T/out")"
grep -qx "ki-store 11" "$T/.ki/FORMAT" || fail "reading rewrote FORMAT"
if command -v mdb_dump >/dev/null; then
  OBJECTS=$(entries objects)
  [ "$(keys objects | key_lengths)" = "32:$OBJECTS " ] || fail "the fixture's objects keys: $(keys objects | key_lengths)"
  REFS=$(set_keys refs | wc -l)
  [ "$REFS" -gt 50 ] || fail "the fixture holds $REFS references"
  set_keys refs | cut -c1-64 | sort >"$T/targets.before"
fi

# 2. A write: FORMAT becomes 12; every object has a row keyed by its number.
echo "a second log line" >"$T/log2.txt"
expect_rc 0 "add" K add "$T/log2.txt"
ADDED=$(sha256sum "$T/log2.txt" | cut -d' ' -f1)
grep -qx "ki-store $NOW_FORMAT" "$T/.ki/FORMAT" || fail "the first write makes the store format $NOW_FORMAT: $(cat "$T/.ki/FORMAT")"
check_rows() {
  command -v mdb_dump >/dev/null || return 0
  # The rows: every object kept in LMDB, the loose blob and the one added.
  [ "$(entries objects)" = $((OBJECTS + 2)) ] || fail "objects holds $(entries objects) rows ($1), not $((OBJECTS + 2))"
  [ "$(keys objects | key_lengths)" = "4:$((OBJECTS + 2)) " ] || fail "objects keys ($1): $(keys objects | key_lengths)"
  # The loose blob's row: its digest alone.
  mdb_dump -s objects "$T/.ki/index" | sed '1,/^HEADER=END/d' | sed -n '2~2p' | tr -d ' ' |
    grep -qx "${LOOSE#sha256:}" || fail "no row holds the loose blob's digest alone ($1)"
  [ "$(set_keys refs | wc -l)" = "$REFS" ] || fail "refs holds $(set_keys refs | wc -l) keys ($1), not $REFS"
  set_keys refs | cut -c1-64 | sort >"$T/targets.after"
  cmp "$T/targets.before" "$T/targets.after" >/dev/null || fail "refs' targets differ ($1)"
  # target + number + field code: 37 bytes, but for the few text fields.
  local coded
  coded=$(set_keys refs | awk 'length($0) == 74' | wc -l)
  [ "$coded" -gt $((REFS * 9 / 10)) ] || fail "only $coded of $REFS refs keys are 37 bytes ($1): $(set_keys refs | key_lengths)"
}
check_rows "upgraded"
check_printed "upgraded"
check_cat "upgraded"
expect_rc 0 "export (upgraded)" K export kernelindex "$T/after.jsonl.zst" ae5aacaf
cmp <(zstd -dc "$T/before.jsonl.zst") <(zstd -dc "$T/after.jsonl.zst") >/dev/null ||
  fail "the export of the upgraded store differs from format 11's"
[ "$(zstd -dc "$T/after.jsonl.zst" | wc -l)" -gt 5 ] || fail "the export is nearly empty"
expect_rc 0 "audit" K audit
grep -q " 0 faults" "$T/out" || fail "audit: $(tail -3 "$T/out")"
expect_rc 0 "audit --reindex" K audit --reindex
grep -q " 0 faults" "$T/out" || fail "audit --reindex: $(tail -1 "$T/out")"
check_rows "after reindex"
check_printed "after reindex"
check_cat "after reindex"
# 3. Killed after the upgrade's batch committed but before FORMAT said 12:
# the store is read as the format-12 store it is, and the next write only
# rewrites FORMAT.
printf 'ki-store 11\n' >"$T/.ki/FORMAT"
check_printed "format 12's layout, FORMAT 11"
check_cat "format 12's layout, FORMAT 11"
expect_rc 0 "audit (format 12's layout, FORMAT 11)" K audit
grep -q " 0 faults" "$T/out" || fail "audit of format 12's layout under FORMAT 11: $(tail -3 "$T/out")"
echo "a third log line" >"$T/log3.txt"
expect_rc 0 "add (format 12's layout, FORMAT 11)" K add "$T/log3.txt"
grep -qx "ki-store $NOW_FORMAT" "$T/.ki/FORMAT" || fail "the write did not rewrite FORMAT: $(cat "$T/.ki/FORMAT")"
OBJECTS=$((OBJECTS + 1))
check_rows "FORMAT rewritten"
expect_rc 0 "audit (FORMAT rewritten)" K audit
grep -q " 0 faults" "$T/out" || fail "audit after FORMAT was rewritten: $(tail -3 "$T/out")"
echo "store_format11: ok"
