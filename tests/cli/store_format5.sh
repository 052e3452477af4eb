#!/usr/bin/env bash
# A store of format 5 (tests/data/store-format5, made by ki at 9065fbb: the
# slice of the export imported, the seed run added, one unreferenced log
# blob) reads as it is with today's ki; the first write makes it format 9
# (meta values packed again with each object's added time, `added`
# emptied; refs keys end in their field's code; kinds emptied): audit,
# reindex, rank, groups, the export and the ages ki gc sees agree with
# what format 5's ki printed.
source "$(dirname "$0")/old_store.bash" 5 "$@"
# The unreachable objects and when each was added, as format 5's ki's
# `ki gc --dry-run --grace 0 --json` listed them (store sizes left out:
# the upgrade changes them).
same_ages() {
  python3 - "$T/out" "$F/gc_ages.json" <<'PY' || fail "gc ages ($1): not as format 5's ki saw them"
import json, sys
got = sorted((r["digest"], r["addedAt"]) for r in json.load(open(sys.argv[1]))["removed"])
want = sorted((r["digest"], r["addedAt"]) for r in json.load(open(sys.argv[2]))["removed"])
assert got == want and all(a for _, a in got), (got, want)
PY
}

# 1. Read as it is: FORMAT left alone, the added times read from `added`.
expect_rc 0 "show the seed" K show $SEED
expect_rc 0 "rank" K rank ae5aacaf --json
same_json rank_ae5.json
expect_rc 0 "groups" K groups --json
same_json groups.json
expect_rc 0 "export (format 5, read as it is)" K export kernelindex "$T/before.jsonl.zst" ae5aacaf
expect_rc 0 "gc --dry-run (format 5)" K gc --dry-run --grace 0 --json
same_ages "format 5"
grep -qx "ki-store 5" "$T/.ki/FORMAT" || fail "reading rewrote FORMAT"

# 2. A write: FORMAT becomes today's, every meta value is format 6's (bit 7 of
# its first byte), `added` is empty and refs keys of a coded field are 37
# bytes (when lmdb-utils is there to look); the referrers ki show lists
# keep their fields.
echo "a second log line" >"$T/log2.txt"
expect_rc 0 "add" K add "$T/log2.txt"
grep -qx "ki-store $NOW_FORMAT" "$T/.ki/FORMAT" || fail "the first write makes the store format $NOW_FORMAT (today's): $(cat "$T/.ki/FORMAT")"
if command -v mdb_dump >/dev/null; then
  n=$(mdb_stat -s added "$T/.ki/index" 2>/dev/null | awk '/Entries/{print $2}')
  [ "${n:-0}" = 0 ] || fail "added still holds $n entries after the upgrade"
  mdb_dump -s meta "$T/.ki/index" | python3 -c '
import sys
lines = [l.strip() for l in sys.stdin if l.startswith(" ")]
values = lines[1::2]
assert len(values) > 100, len(values)
old = [v for v in values if int(v[:2], 16) < 0x80]
assert not old, "%d of %d meta values are not format 6" % (len(old), len(values))
' || fail "meta values after the upgrade"
  mdb_dump -s refs "$T/.ki/index" | python3 -c '
import sys
# A set table (format 11) dumps each key as its first 32 bytes and the rest;
# the referrer is its 4-byte number (format 12).
lines = [bytes.fromhex(l.strip()) for l in sys.stdin if l.startswith(" ")]
keys = [a + b for a, b in zip(lines[0::2], lines[1::2])]
fixed = {b"/spec/workloadDigest", b"/spec/implementationDigest", b"/spec/protocolDigest", b"/spec/environmentDigest",
         b"/spec/operationSpecDigest", b"/spec/operation/specDigest", b"/spec/source/contentDigest",
         b"/spec/configurationDigest", b"/spec/modelDigest", b"/spec/stackDigest"}
coded = [k for k in keys if len(k) == 37 and 0 < k[36] < 0x20]
text = [k for k in keys if k[36:] in fixed]
assert len(coded) > 20 and not text, "%d refs keys coded, %d of a coded field as text" % (len(coded), len(text))
' || fail "refs keys after the upgrade"
  n=$(mdb_stat -s kinds "$T/.ki/index" 2>/dev/null | awk '/Entries/{print $2}')
  [ "${n:-0}" = 0 ] || fail "kinds still holds $n entries after the upgrade"
fi
# Each kind's manifests, read from meta now: the export is what it was.
expect_rc 0 "export (upgraded)" K export kernelindex "$T/after.jsonl.zst" ae5aacaf
cmp <(zstd -dc "$T/before.jsonl.zst") <(zstd -dc "$T/after.jsonl.zst") >/dev/null ||
  fail "the export of the upgraded store differs from format 5's"
[ "$(zstd -dc "$T/after.jsonl.zst" | wc -l)" -gt 5 ] || fail "the export is nearly empty"
expect_rc 0 "show the protocol" K show BenchmarkProtocol/flashinfer-bench-trace
grep -q "/spec/protocolDigest" "$T/out" || fail "the referrers of the protocol lost their field: $(cat "$T/out")"
expect_rc 0 "rank after the upgrade" K rank ae5aacaf --json
same_json rank_ae5.json
expect_rc 0 "gc --dry-run (upgraded)" K gc --dry-run --grace 0 --json
python3 - "$T/out" "$F/gc_ages.json" <<'PY' || fail "gc ages after the upgrade: $(cat "$T/out")"
import json, sys
got = {r["digest"]: r["addedAt"] for r in json.load(open(sys.argv[1]))["removed"]}
want = {r["digest"]: r["addedAt"] for r in json.load(open(sys.argv[2]))["removed"]}
# The log blob added by this test is unreachable too, added now.
assert len(got) == len(want) + 1 and all(got[d] == a for d, a in want.items()), (got, want)
PY
expect_rc 0 "audit" K audit
grep -q " 0 faults" "$T/out" || fail "audit: $(tail -1 "$T/out")"
expect_rc 0 "audit --reindex" K audit --reindex
grep -q " 0 faults" "$T/out" || fail "audit --reindex: $(tail -1 "$T/out")"
expect_rc 0 "groups after reindex" K groups --json
same_json groups.json
expect_rc 0 "gc --dry-run (after reindex)" K gc --dry-run --grace 0 --json
python3 - "$T/out" "$F/gc_ages.json" <<'PY' || fail "gc ages after reindex: $(cat "$T/out")"
import json, sys
got = {r["digest"]: r["addedAt"] for r in json.load(open(sys.argv[1]))["removed"]}
want = {r["digest"]: r["addedAt"] for r in json.load(open(sys.argv[2]))["removed"]}
assert all(got.get(d) == a for d, a in want.items()), (got, want)
PY
echo "store_format5: ok"
