#!/usr/bin/env bash
# A store of format 13 (tests/data/store-format13, made by ki at 2420404: the
# slice of the export imported, the seed run added, a one-line log blob and
# a loose blob nothing references; every frame of version 5, each document a
# frame of its own) reads as it is with today's ki and audits clean as it
# is; the first write makes it format 14 (FORMAT rewritten, nothing else):
# the frames already there keep their bytes, a document written after is a
# frame based on its manifest (format.md, "Based frames": flags bit 2) when
# it is its manifest's JSON with metadata, and rank, groups, records, ls,
# show, the export and cat print what format 13's ki printed; audit and
# reindex are clean, reindex keeps every frame as it was, and gc keeps the
# manifest a kept document is based on.
source "$(dirname "$0")/old_store.bash" 13 "$@"
LOOSE=sha256:ce471ad1fbd3179b54a0be7a9c64fe59e79ac59c1707a1fc32131e1c2cd9696a
# Each objects row: its key (the number, hex) and its frame's flags byte
# (after the 32-byte digest), "-" for a loose object's digest-only row.
row_flags() {
  mdb_dump -s objects "$T/.ki/index" | sed '1,/^HEADER=END/d' | sed '/^DATA=END/d' | paste - - |
    awk '{v = length($2) > 64 ? substr($2, 79, 2) : "-"; print $1 " " v}'
}
check_cat() {
  expect_rc 0 "cat the loose blob ($1)" K cat $LOOSE
  [ "sha256:$(sha256sum <"$T/out" | cut -d' ' -f1)" = $LOOSE ] || fail "cat of the loose blob ($1): other bytes"
  expect_rc 0 "cat the seed ($1)" K cat $SEED
  [ "sha256:$(sha256sum <"$T/out" | cut -d' ' -f1)" = $SEED ] || fail "cat of the seed ($1): other bytes"
}
based() { case $1 in 04|05|06|07) return 0 ;; *) return 1 ;; esac; }

# 1. Read as it is: FORMAT left alone; audit clean.
check_printed "format 13"
check_cat "format 13"
expect_rc 0 "export (format 13)" K export kernelindex "$T/before.jsonl.zst" ae5aacaf
expect_rc 0 "audit (format 13)" K audit
grep -q " 0 faults" "$T/out" || fail "audit of the format-13 store as it is: $(tail -3 "$T/out")"
grep -qx "ki-store 13" "$T/.ki/FORMAT" || fail "reading rewrote FORMAT"
HAVE_DUMP=0
if command -v mdb_dump >/dev/null; then
  HAVE_DUMP=1
  row_flags >"$T/rows.before"
  while read -r _ f; do based "$f" && fail "the format-13 fixture holds a based frame"; done <"$T/rows.before"
  mdb_dump -s objects "$T/.ki/index" >"$T/objects.before"
fi

# 2. A write: FORMAT becomes 14; the frames there are untouched. The write
# is a new protocol given as an export gives its documents: the manifest's
# canonical JSON (ki cat) with metadata put back, and a spec value changed.
expect_rc 0 "cat the protocol" K cat 7d44d206
python3 - "$T/out" "$T/protocol.json" <<'PY' || fail "could not write the new protocol's document"
import sys
body = open(sys.argv[1]).read()
at = body.index(',"spec":')
doc = body[:at] + ',"metadata":{"name":"flashinfer-bench-trace-copy","title":"a copy for the upgrade test"}' + body[at:]
assert '"reference":"definition reference implementation"' in doc
doc = doc.replace('"reference":"definition reference implementation"', '"reference":"a copy of the reference"', 1)
open(sys.argv[2], "w").write(doc)
PY
expect_rc 0 "add" K add "$T/protocol.json"
grep -qx "ki-store $NOW_FORMAT" "$T/.ki/FORMAT" || fail "the first write makes the store format $NOW_FORMAT: $(cat "$T/.ki/FORMAT")"
DOC=sha256:$(sha256sum <"$T/protocol.json" | cut -d' ' -f1)
expect_rc 0 "resolve the added protocol" K resolve BenchmarkProtocol/flashinfer-bench-trace-copy
M=$(cut -f1 "$T/out" | head -1)
[ -n "$M" ] || fail "the added protocol does not resolve"
check_rows() {
  [ $HAVE_DUMP = 1 ] || return 0
  row_flags >"$T/rows.now"
  comm -23 <(sort "$T/rows.before") <(sort "$T/rows.now") | head -3 >"$T/lost"
  [ -s "$T/lost" ] && fail "rows changed or lost ($1): $(cat "$T/lost")"
  local added n_based=0
  added=$(comm -13 <(sort "$T/rows.before") <(sort "$T/rows.now"))
  [ "$(echo "$added" | wc -l)" = 2 ] || fail "the write added rows ($1): $added"
  while read -r _ f; do based "$f" && n_based=$((n_based + 1)); done <<<"$added"
  [ $n_based = 1 ] || fail "the added document is not a based frame ($1): $added"
}
check_rows "upgraded"
if [ $HAVE_DUMP = 1 ]; then
  # The frames already there are byte for byte what format 13 wrote.
  mdb_dump -s objects "$T/.ki/index" | sed '1,/^HEADER=END/d' | paste - - | sort >"$T/o.after"
  sed '1,/^HEADER=END/d' "$T/objects.before" | paste - - | sort >"$T/o.before"
  [ -z "$(comm -23 "$T/o.before" "$T/o.after" | head -1)" ] || fail "a frame format 13 wrote was rewritten"
fi
expect_rc 0 "cat the added document" K cat $DOC
cmp "$T/out" "$T/protocol.json" >/dev/null || fail "cat of the based document gives other bytes"
expect_rc 0 "show the added protocol" K show $M
grep -q "flashinfer-bench-trace-copy" "$T/out" || fail "show of the added protocol: $(cat "$T/out")"
# check_printed's ls leaves out the two added objects (a BRE alternation).
ADDED="\(${M#sha256:}\|${DOC#sha256:}\)"
check_printed "upgraded"
check_cat "upgraded"
expect_rc 0 "export (upgraded)" K export kernelindex "$T/after.jsonl.zst" ae5aacaf
cmp <(zstd -dc "$T/before.jsonl.zst") <(zstd -dc "$T/after.jsonl.zst") >/dev/null ||
  fail "the export of the upgraded store differs from format 13's"
[ "$(zstd -dc "$T/after.jsonl.zst" | wc -l)" -gt 5 ] || fail "the export is nearly empty"
expect_rc 0 "audit" K audit
grep -q " 0 faults" "$T/out" || fail "audit: $(tail -3 "$T/out")"
expect_rc 0 "verify the document" K verify $DOC
expect_rc 0 "audit --reindex" K audit --reindex
grep -q " 0 faults" "$T/out" || fail "audit --reindex: $(tail -1 "$T/out")"
check_rows "after reindex"
check_cat "after reindex"
expect_rc 0 "cat the added document (after reindex)" K cat $DOC
cmp "$T/out" "$T/protocol.json" >/dev/null || fail "cat of the based document after reindex gives other bytes"
echo "store_format13: ok"
