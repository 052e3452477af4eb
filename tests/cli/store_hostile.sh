#!/usr/bin/env bash
# Hostile inputs and a damaged index (issues 18 and 25): each case is refused
# with its message and documented exit code, or handled, never a crash, and
# in bounded memory. Each case is a regression test named by its item.
source "$(dirname "$0")/testlib.bash" "$@"
SLICE=$DATA/kernelindex-export/catalog-2026-08-16-0022af0b.slice.jsonl
RUN_YAML=$DATA/kernelindex/examples/benchmark-run.yaml

expect_exit 0 ki init store

# ---- 18.1: a date-time with 100,000 / 900,000 fraction digits (the pattern
# check recursed once per digit in std::regex and ran out of stack).
for n in 100000 900000; do
  python3 - "$RUN_YAML" "$n" >run-$n.yaml <<'PY'
import sys
text = open(sys.argv[1]).read()
print(text.replace("observedAt: 2026-08-01T12:00:00Z", "observedAt: 2026-08-01T12:00:00." + "7" * int(sys.argv[2]) + "Z"), end="")
PY
  grep -q "observedAt: 2026-08-01T12:00:00.777" run-$n.yaml || fail "18.1: the fixture edit did not apply"
  expect_exit 0 ki add run-$n.yaml  # a valid date-time: stored
done
# The same in an export line: recomputed keys then differ (a mismatch, exit
# 4), but nothing crashes.
python3 - "$SLICE" >long-time.jsonl <<'PY'
import json, sys
for line in open(sys.argv[1]):
    row = json.loads(line)
    if row["table"] == "benchmark_runs":
        r = row["row"]
        r["manifest"]["run"]["spec"]["observedAt"] = "2026-03-15T01:10:48." + "3" * 900000 + "Z"
    print(json.dumps(row, separators=(",", ":")))
PY
ki init s181 >/dev/null
"$KI_BIN" --store s181 import kernelindex long-time.jsonl >/dev/null 2>err.txt
rc=$?
[ "$rc" -lt 128 ] || fail "18.1: import of a 900,000-digit observedAt died with signal $((rc - 128))"
[ "$rc" = 4 ] || fail "18.1: import exit $rc, want 4 (mismatched keys): $(head -c 300 err.txt)"

# ---- 18.4: an export line longer than the limit, in bounded memory: 4 GiB
# of NULs without a newline, as a small zstd stream.
if command -v zstd >/dev/null; then
  head -c 4294967296 /dev/zero | zstd -q --no-check -o nul.jsonl.zst
  ki init s184 >/dev/null
  ( ulimit -v 2000000; KI_LMDB_MAP_SIZE=256M "$KI_BIN" --store s184 import kernelindex nul.jsonl.zst ) >/dev/null 2>err.txt
  rc=$?
  [ "$rc" = 4 ] || fail "18.4: exit $rc, want 4: $(head -c 300 err.txt)"
  expect_contains "$(cat err.txt)" "nul.jsonl.zst:1: line longer than 67108864 bytes" "18.4: the line and the limit named"
  # A second line that is too long is named by its number.
  { head -n 3 "$SLICE"; head -c 70000000 /dev/zero; } | zstd -q -o second.jsonl.zst
  ( ulimit -v 2000000; KI_LMDB_MAP_SIZE=256M "$KI_BIN" --store s184 import kernelindex second.jsonl.zst ) >/dev/null 2>err.txt
  expect_contains "$(cat err.txt)" "second.jsonl.zst:4: line longer than" "18.4: line number of a later line"
else
  fail "18.4: zstd(1) is not installed (scripts/install-deps.sh)"
fi

# ---- 18.4: YAML whose aliases repeat a 300 KiB string: refused, bounded.
python3 - >bomb.yaml <<'PY'
print("apiVersion: kernelindex.dev/v1alpha1\nkind: SoftwareProject\nmetadata:\n  name: bomb\nspec:")
print('  name: &s "' + "x" * (300 << 10) + '"')
print("  list: [" + ",".join(["*s"] * 185318) + "]")
PY
[ "$(stat -c %s bomb.yaml)" -le $((1 << 20)) ] || fail "18.4: bomb.yaml is over 1 MiB"
( ulimit -v 1000000; KI_LMDB_MAP_SIZE=256M "$KI_BIN" add bomb.yaml ) >/dev/null 2>err.txt
rc=$?
[ "$rc" = 4 ] || fail "18.4: YAML alias bomb exit $rc, want 4: $(head -c 300 err.txt)"
expect_contains "$(cat err.txt)" "bytes of scalars (alias bomb?)" "18.4: YAML expansion budget named"

# ---- 18.6: YAML strings that are not UTF-8; an empty media type.
for bad in '\xff' '\xed\xa0\x80'; do
  printf "apiVersion: kernelindex.dev/v1alpha1\nkind: SoftwareProject\nmetadata:\n  name: u8\n  title: \"t${bad}t\"\nspec:\n  name: u8\n" >bad-utf8.yaml
  expect_exit 4 ki add bad-utf8.yaml
  expect_contains "$ERR" "bad-utf8.yaml:5:" "18.6: the place of the bad bytes"
  expect_contains "$ERR" "invalid UTF-8" "18.6: what is wrong"
done
echo data >blob.txt
expect_exit 4 ki add --blob --media-type '' blob.txt
expect_contains "$ERR" "media type ''" "18.6: empty media type refused"

# ---- 25.1: a damaged data.mdb: store_index_damage.sh.

# ---- 25.4: concurrent writers: store_concurrent.sh.

# ---- 18.8: a write that fails on a full disk gives back the space it took.
# A file size limit stands in for the full disk: data.mdb may not grow past
# 2 MiB, and the full export needs far more.
ki init s188 >/dev/null
size() { stat -c %s s188/.ki/index/data.mdb; }
before=$(size)
( trap '' XFSZ; ulimit -f 2048; "$KI_BIN" --store s188 import kernelindex "$DATA/kernelindex-export/catalog-2026-08-16-0022af0b.jsonl.zst" ) >/dev/null 2>err.txt
rc=$?
[ "$rc" = 5 ] || fail "18.8: import under a file size limit: exit $rc, want 5: $(grep error err.txt | head -c 300)"
after=$(size)
[ "$after" -le "$before" ] || fail "18.8: data.mdb kept $after bytes after the rolled-back import (was $before)"
expect_exit 0 ki --store s188 audit

finish
