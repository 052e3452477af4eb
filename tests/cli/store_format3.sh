#!/usr/bin/env bash
# A store of format 3 (tests/data/store-format3, made by ki at 65064a6:
# barenames kept a copy of names) reads as it is with today's ki, bare
# names included; the first write makes it format 9 (barenames emptied,
# catalog.runs values encoded again as binary);
# audit, reindex, rank and groups agree with what format 3's ki printed.
source "$(dirname "$0")/old_store.bash" 3 "$@"
OP=sha256:7a3b25630f0628b21ed74b6adb588d28f7e29191f9038bed6f56ed393deefb5b
bare_names() {  # a bare name and a Kind/name resolve as before
  expect_rc 0 "resolve a bare name ($1)" K resolve rmsnorm-h4096
  grep -q "$OP" "$T/out" || fail "rmsnorm-h4096 ($1): $(cat "$T/out")"
  expect_rc 0 "resolve Kind/name ($1)" K resolve OperationSpec/rmsnorm-h4096
  grep -q "$OP" "$T/out" || fail "OperationSpec/rmsnorm-h4096 ($1): $(cat "$T/out")"
  expect_rc 3 "resolve an unknown bare name ($1)" K resolve no-such-name-anywhere
}

# 1. Read as it is: FORMAT left alone, bare names resolve through names.
bare_names "format 3"
expect_rc 0 "show the seed" K show $SEED
expect_rc 0 "rank" K rank ae5aacaf --json
same_json rank_ae5.json
expect_rc 0 "groups" K groups --json
same_json groups.json
grep -qx "ki-store 3" "$T/.ki/FORMAT" || fail "reading rewrote FORMAT"

# 2. A write: FORMAT becomes 4, barenames is emptied (when lmdb-utils is
# there to look), and nothing else changes.
echo "a log line" >"$T/log.txt"
expect_rc 0 "add" K add "$T/log.txt"
grep -qx "ki-store $NOW_FORMAT" "$T/.ki/FORMAT" || fail "the first write makes the store format $NOW_FORMAT (today's): $(cat "$T/.ki/FORMAT")"
if command -v mdb_stat >/dev/null; then
  n=$(mdb_stat -s barenames "$T/.ki/index" 2>/dev/null | awk '/Entries/{print $2}')
  [ "${n:-0}" = 0 ] || fail "barenames still holds $n entries after the upgrade"
fi
bare_names "upgraded"
expect_rc 0 "rank after the upgrade" K rank ae5aacaf --json
same_json rank_ae5.json
expect_rc 0 "audit" K audit
grep -q " 0 faults" "$T/out" || fail "audit: $(tail -1 "$T/out")"
expect_rc 0 "audit --reindex" K audit --reindex
grep -q " 0 faults" "$T/out" || fail "audit --reindex: $(tail -1 "$T/out")"
bare_names "after reindex"
expect_rc 0 "groups after reindex" K groups --json
same_json groups.json
echo "store_format3: ok"
