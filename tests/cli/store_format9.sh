#!/usr/bin/env bash
# A store of format 9 (tests/data/store-format9, made by ki at e4e586d: the
# slice of the export imported, the seed run added, one unreferenced log
# blob; docs and namesof keyed by digest) reads as it is with today's ki and
# audits clean as it is; the first write makes it today's format (10 and on: every object
# numbered in digest order, docs and namesof keyed by number): rank, groups,
# records, ls, show (its referrers) and the export print what format 9's ki
# printed, and audit and reindex are clean and keep every number.
source "$(dirname "$0")/old_store.bash" 9 "$@"
# Key lengths of a table, "length:count ...".
key_lengths() {
  mdb_dump -s "$1" "$T/.ki/index" | python3 -c '
import sys, collections
lines = [l.strip() for l in sys.stdin if l.startswith(" ")]
c = collections.Counter(len(k) // 2 for k in lines[0::2])
print(" ".join("%d:%d" % kv for kv in sorted(c.items())))'
}
# 1. Read as it is: FORMAT left alone; audit clean.
check_printed "format 9"
expect_rc 0 "export (format 9)" K export kernelindex "$T/before.jsonl.zst" ae5aacaf
expect_rc 0 "audit (format 9)" K audit
grep -q " 0 faults" "$T/out" || fail "audit of the format-9 store as it is: $(tail -3 "$T/out")"
grep -qx "ki-store 9" "$T/.ki/FORMAT" || fail "reading rewrote FORMAT"
if command -v mdb_dump >/dev/null; then
  [ "$(key_lengths docs)" = "32:48" ] || fail "docs keys of the fixture: $(key_lengths docs)"
fi

# 2. A write: FORMAT becomes 10, docs and namesof keys hold 4-byte numbers.
echo "a second log line" >"$T/log2.txt"
expect_rc 0 "add" K add "$T/log2.txt"
ADDED=$(sha256sum "$T/log2.txt" | cut -d' ' -f1)
grep -qx "ki-store $NOW_FORMAT" "$T/.ki/FORMAT" || fail "the first write makes the store format $NOW_FORMAT (today's): $(cat "$T/.ki/FORMAT")"
if command -v mdb_dump >/dev/null; then
  [ "$(key_lengths docs)" = "4:48" ] || fail "docs keys after the upgrade: $(key_lengths docs)"
  mdb_dump -s namesof "$T/.ki/index" >"$T/namesof.dump"
  python3 - "$T/namesof.dump" <<'PY' || fail "namesof keys after the upgrade do not start with a number"
import sys
lines = [l.strip() for l in open(sys.argv[1]) if l.startswith(" ")]
keys = [bytes.fromhex(k) for k in lines[0::2]]
assert keys and all(k[0] == 0 and k[4:5].isalpha() for k in keys), keys[:3]
PY
  # Numbered in digest order: meta's first key has number 1.
  [ "$(mdb_dump -s seq "$T/.ki/index" | sed -n '/^ /p' | tail -1)" != "" ] || fail "no seq entry"
fi
check_printed "upgraded"
expect_rc 0 "export (upgraded)" K export kernelindex "$T/after.jsonl.zst" ae5aacaf
cmp <(zstd -dc "$T/before.jsonl.zst") <(zstd -dc "$T/after.jsonl.zst") >/dev/null ||
  fail "the export of the upgraded store differs from format 9's"
[ "$(zstd -dc "$T/after.jsonl.zst" | wc -l)" -gt 5 ] || fail "the export is nearly empty"
expect_rc 0 "audit" K audit
grep -q " 0 faults" "$T/out" || fail "audit: $(tail -3 "$T/out")"
if command -v mdb_dump >/dev/null; then mdb_dump -s meta "$T/.ki/index" >"$T/meta.before"; fi
expect_rc 0 "audit --reindex" K audit --reindex
grep -q " 0 faults" "$T/out" || fail "audit --reindex: $(tail -1 "$T/out")"
if command -v mdb_dump >/dev/null; then
  mdb_dump -s meta "$T/.ki/index" >"$T/meta.after"
  cmp "$T/meta.before" "$T/meta.after" >/dev/null || fail "reindex changed meta (the numbers are recorded)"
fi
check_printed "after reindex"
echo "store_format9: ok"
