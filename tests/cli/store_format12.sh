#!/usr/bin/env bash
# A store of format 12 (tests/data/store-format12, made by ki at 234abdb: the
# slice of the export imported, the seed run added, a one-line log blob and
# a loose blob nothing references; every frame of version 2 to 4) reads as
# it is with today's ki and audits clean as it is; the first write makes it
# today's format (FORMAT rewritten; 15 rebuilds the derived tables): the frames already there keep
# their versions and bytes, an object written after is a version 5 frame
# (a varint raw size, a one-byte media type code, a zstd payload without
# magic, content size or dictionary ID), and rank, groups, records, ls,
# show, the export and cat print what format 12's ki printed; audit and
# reindex are clean, and reindex keeps every frame as it was.
source "$(dirname "$0")/old_store.bash" 12 "$@"
LOOSE=sha256:ce471ad1fbd3179b54a0be7a9c64fe59e79ac59c1707a1fc32131e1c2cd9696a
# Each objects row: its key (the number, hex) and the version byte of its
# frame (after the 32-byte digest), "-" for a loose object's digest-only row.
row_versions() {
  mdb_dump -s objects "$T/.ki/index" | sed '1,/^HEADER=END/d' | sed '/^DATA=END/d' | paste - - |
    awk '{v = length($2) > 64 ? substr($2, 73, 2) : "-"; print $1 " " v}'
}
check_cat() {
  expect_rc 0 "cat the loose blob ($1)" K cat $LOOSE
  [ "sha256:$(sha256sum <"$T/out" | cut -d' ' -f1)" = $LOOSE ] || fail "cat of the loose blob ($1): other bytes"
  expect_rc 0 "cat the seed ($1)" K cat $SEED
  [ "sha256:$(sha256sum <"$T/out" | cut -d' ' -f1)" = $SEED ] || fail "cat of the seed ($1): other bytes"
}

# 1. Read as it is: FORMAT left alone; audit clean.
check_printed "format 12"
check_cat "format 12"
expect_rc 0 "export (format 12)" K export kernelindex "$T/before.jsonl.zst" ae5aacaf
expect_rc 0 "audit (format 12)" K audit
grep -q " 0 faults" "$T/out" || fail "audit of the format-12 store as it is: $(tail -3 "$T/out")"
grep -qx "ki-store 12" "$T/.ki/FORMAT" || fail "reading rewrote FORMAT"
HAVE_DUMP=0
if command -v mdb_dump >/dev/null; then
  HAVE_DUMP=1
  row_versions >"$T/rows.before"
  grep -q " 05$" "$T/rows.before" && fail "the format-12 fixture holds a version 5 frame"
  [ "$(grep -c " 04$" "$T/rows.before")" -gt 100 ] || fail "the fixture's frames: $(cut -d' ' -f2 "$T/rows.before" | sort | uniq -c)"
  mdb_dump -s objects "$T/.ki/index" >"$T/objects.before"
fi

# 2. A write: FORMAT becomes 13; the frames there are untouched, the new
# object's frame is version 5 and shorter than what format 12 wrote.
expect_rc 0 "add" K add "$DATA/kernelindex/examples/software-project.yaml"
grep -qx "ki-store $NOW_FORMAT" "$T/.ki/FORMAT" || fail "the first write makes the store format $NOW_FORMAT: $(cat "$T/.ki/FORMAT")"
check_rows() {
  [ $HAVE_DUMP = 1 ] || return 0
  row_versions >"$T/rows.now"
  # Every row that was there, with its frame version as it was.
  comm -23 <(sort "$T/rows.before") <(sort "$T/rows.now") | head -3 >"$T/lost"
  [ -s "$T/lost" ] && fail "rows changed or lost ($1): $(cat "$T/lost")"
  local added
  added=$(comm -13 <(sort "$T/rows.before") <(sort "$T/rows.now"))
  [ "$(echo "$added" | wc -l)" = 2 ] || fail "the write added rows ($1): $added"
  echo "$added" | grep -qv " 05$" && fail "a new frame is not version 5 ($1): $added"
  return 0
}
check_rows "upgraded"
if [ $HAVE_DUMP = 1 ]; then
  # The frames already there are byte for byte what format 12 wrote.
  mdb_dump -s objects "$T/.ki/index" | sed '1,/^HEADER=END/d' | paste - - | sort >"$T/o.after"
  sed '1,/^HEADER=END/d' "$T/objects.before" | paste - - | sort >"$T/o.before"
  [ -z "$(comm -23 "$T/o.before" "$T/o.after" | head -1)" ] || fail "a frame format 12 wrote was rewritten"
fi
# The added manifest and its document read back.
expect_rc 0 "show the added project" K show SoftwareProject/meridian-kernels
grep -q "meridian-kernels" "$T/out" || fail "show of the added project: $(cat "$T/out")"
expect_rc 0 "resolve the added project" K resolve SoftwareProject/meridian-kernels
M=$(cut -f1 "$T/out" | head -1)
expect_rc 0 "ls blobs" K ls --kind blob
DOC=$(cut -f1 "$T/out" | grep -vxFf <(cut -f1 "$F/ls.txt") | head -1)
[ -n "$DOC" ] || fail "the added project's document is not listed"
# check_printed's ls leaves out the two added objects (a BRE alternation).
ADDED="\(${M#sha256:}\|${DOC#sha256:}\)"
check_printed "upgraded"
check_cat "upgraded"
expect_rc 0 "export (upgraded)" K export kernelindex "$T/after.jsonl.zst" ae5aacaf
cmp <(zstd -dc "$T/before.jsonl.zst") <(zstd -dc "$T/after.jsonl.zst") >/dev/null ||
  fail "the export of the upgraded store differs from format 12's"
[ "$(zstd -dc "$T/after.jsonl.zst" | wc -l)" -gt 5 ] || fail "the export is nearly empty"
expect_rc 0 "audit" K audit
grep -q " 0 faults" "$T/out" || fail "audit: $(tail -3 "$T/out")"
expect_rc 0 "audit --reindex" K audit --reindex
grep -q " 0 faults" "$T/out" || fail "audit --reindex: $(tail -1 "$T/out")"
check_rows "after reindex"
check_cat "after reindex"
echo "store_format12: ok"
