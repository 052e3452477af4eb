#!/usr/bin/env bash
# ki import kernelindex: the slice imports with every key recomputed, twice
# adds nothing, stdin and zstd work, a forged key stores nothing (exit 4)
# unless --keep-going (exit 1), a malformed line is named by file:line, and
# kill -9 mid-import leaves a clean store.
source "$(dirname "$0")/failfast.bash" "$@"
SLICE=$DATA/kernelindex-export/catalog-2026-08-16-0022af0b.slice.jsonl
FULL=$DATA/kernelindex-export/catalog-2026-08-16-0022af0b.jsonl.zst

"$KI" init "$T/a" >/dev/null || fail init
expect_rc 0 "import slice" "$KI" --store "$T/a" import kernelindex "$SLICE"
grep -q "mismatches: 0" "$T/out" || fail "no 'mismatches: 0' in: $(cat "$T/out")"
grep -Eq "BenchmarkRun +8 +0" "$T/out" || fail "8 new runs expected: $(cat "$T/out")"
grep -Eq "missing artifacts +6 +0" "$T/out" || fail "6 missing artifacts expected"
expect_rc 0 "import again" "$KI" --store "$T/a" import kernelindex "$SLICE"
grep -Eq "BenchmarkRun +0 +8" "$T/out" || fail "second import must add nothing: $(cat "$T/out")"
expect_rc 0 "import --json" "$KI" --store "$T/a" import kernelindex --json "$SLICE"
grep -q '"stored": true' "$T/out" || fail "--json summary"
expect_rc 0 "audit after import" "$KI" --store "$T/a" audit

# Standard input, zstd-compressed.
if command -v zstd >/dev/null; then
  "$KI" init "$T/z" >/dev/null
  zstd -q -c "$SLICE" >"$T/slice.jsonl.zst"
  "$KI" --store "$T/z" import kernelindex - <"$T/slice.jsonl.zst" >"$T/out" 2>"$T/err" || fail "stdin zstd import: $(cat "$T/err")"
  grep -Eq "BenchmarkRun +8 +0" "$T/out" || fail "stdin import counts"
fi

# A forged comparison key: reported with table, row, stored and computed.
KEY=$(grep -o '"comparisonKey":"sha256:[0-9a-f]*"' "$SLICE" | head -1 | cut -d'"' -f4)
sed "0,/$KEY/s//sha256:$(printf '0%.0s' {1..64})/" "$SLICE" >"$T/forged.jsonl"
"$KI" init "$T/f" >/dev/null
expect_rc 4 "forged import" "$KI" --store "$T/f" import kernelindex "$T/forged.jsonl"
grep -P "^mismatch\tbenchmark_runs\t[0-9a-f-]+\tcomparisonKey\tstored sha256:0{64}\tcomputed $KEY$" "$T/out" >/dev/null ||
  fail "mismatch line: $(grep mismatch "$T/out")"
[ -z "$("$KI" --store "$T/f" ls)" ] || fail "a forged import stored something"
expect_rc 1 "forged --keep-going" "$KI" --store "$T/f" import kernelindex --keep-going "$T/forged.jsonl"
[ "$("$KI" --store "$T/f" ls --kind BenchmarkRun | wc -l)" = 8 ] || fail "--keep-going stores the runs"

# A malformed line: reported as malformed with file:line, and the final error
# says so (it used to read "mismatch ... stored (unreadable)" and "1 stored
# digests or keys do not recompute").
{ head -3 "$SLICE"; echo '{"table":"sources","row":{"id":"x"'; tail -n +4 "$SLICE"; } >"$T/malformed.jsonl"
"$KI" init "$T/m" >/dev/null
expect_rc 4 "malformed line" "$KI" --store "$T/m" import kernelindex "$T/malformed.jsonl"
grep -qF "$(printf 'malformed\t%s:4\t(line)\t%s:4:' "$T/malformed.jsonl" "$T/malformed.jsonl")" "$T/out" ||
  fail "malformed line: $(head -3 "$T/out")"
! grep -q "^mismatch" "$T/out" || fail "a malformed line reported as a mismatch: $(grep mismatch "$T/out")"
grep -qF "1 malformed line (first: $T/malformed.jsonl:4:" "$T/err" || fail "malformed error: $(cat "$T/err")"
! grep -q "recompute" "$T/err" || fail "malformed error speaks of keys: $(cat "$T/err")"
[ -z "$("$KI" --store "$T/m" ls)" ] || fail "an import with a malformed line stored something"
expect_rc 1 "malformed --keep-going" "$KI" --store "$T/m" import kernelindex --keep-going "$T/malformed.jsonl"
[ "$("$KI" --store "$T/m" ls --kind BenchmarkRun | wc -l)" = 8 ] || fail "--keep-going stores the other lines"
# The stored import summary counts the skipped line (catalog.imports), and
# rank and records say that a group may lack a run (they could not know).
expect_rc 0 "rank after a skipped line" "$KI" --store "$T/m" rank ae5aacaf
grep -qF "note: the import of $T/malformed.jsonl (sha256:" "$T/out" || fail "rank names the import: $(head -12 "$T/out")"
grep -qF "skipped 1 malformed line; a run on such a line is missing here" "$T/out" || fail "rank note: $(head -12 "$T/out")"
expect_rc 0 "records --json after a skipped line" "$KI" --store "$T/m" records ae5aacaf --json
grep -q '"malformedLines": 1' "$T/out" || fail "records --json incompleteImports: $(cat "$T/out")"
expect_rc 0 "rank --json, clean import" "$KI" --store "$T/a" rank ae5aacaf --json
grep -q '"incompleteImports": \[\]' "$T/out" || fail "a clean import is no incomplete one: $(tail -5 "$T/out")"
expect_rc 0 "rank, clean import" "$KI" --store "$T/a" rank ae5aacaf
! grep -q "note:" "$T/out" || fail "a clean import has no note: $(head -12 "$T/out")"

# A row id longer than LMDB's key limit is imported, not refused at the end
# of the import with "index put: MDB_BAD_VALSIZE" (exit 5).
printf '{"table":"sources","row":{"id":"%s"}}\n' "$(printf 'x%.0s' {1..600})" >"$T/longid.jsonl"
"$KI" init "$T/l" >/dev/null
expect_rc 0 "long row id" "$KI" --store "$T/l" import kernelindex "$T/longid.jsonl"
expect_rc 0 "long row id again" "$KI" --store "$T/l" import kernelindex "$T/longid.jsonl"

# Usage and missing files.
expect_rc 2 "no source" "$KI" --store "$T/a" import
expect_rc 3 "missing file" "$KI" --store "$T/a" import kernelindex "$T/none.jsonl"

# kill -9 in the middle of the whole export: the store stays clean, a rerun completes it.
"$KI" init "$T/k" >/dev/null
"$KI" --store "$T/k" import kernelindex "$FULL" >/dev/null 2>&1 &
PID=$!
sleep 0.7
kill -9 "$PID" 2>/dev/null
wait "$PID" 2>/dev/null
expect_rc 0 "audit after kill -9" "$KI" --store "$T/k" audit
expect_rc 0 "rerun after kill -9" "$KI" --store "$T/k" import kernelindex "$FULL"
grep -q "mismatches: 0" "$T/out" || fail "rerun summary"
[ "$("$KI" --store "$T/k" ls --kind BenchmarkRun | wc -l)" = 7857 ] || fail "7857 runs after the rerun"

# Run names are editorial and the export shares 325 of them among 770 runs.
# Every run keeps its name, and a shared name resolves to none of its runs
# silently: it is ambiguous (exit 3) and lists them.
"$KI" --store "$T/k" ls --kind BenchmarkRun >"$T/runs"
[ "$(awk -F'\t' '$3 == "-"' "$T/runs" | wc -l)" = 0 ] || fail "runs listed without their name: $(awk -F'\t' '$3 == "-"' "$T/runs" | head -3)"
[ "$(cut -f3 "$T/runs" | sort | uniq -d | wc -l)" = 325 ] || fail "325 shared run names expected"
[ "$(cut -f3 "$T/runs" | sort | uniq -D | wc -l)" = 770 ] || fail "770 runs under shared names expected"
for ref in kernelbot-32750-leaderboard BenchmarkRun/kernelbot-32750-leaderboard; do
  expect_rc 3 "shared name $ref" "$KI" --store "$T/k" show "$ref"
  [ "$(grep -c '^  sha256:' "$T/err")" = 3 ] || fail "$ref lists its 3 runs: $(cat "$T/err")"
  grep -q "is ambiguous" "$T/err" || fail "$ref: $(cat "$T/err")"
done
expect_rc 0 "a name one run carries" "$KI" --store "$T/k" resolve sol-trace-sparse-gemm-nvfp4-n2048-k2048-61362746
# The seed record shares its name with an export run of another kernel.
SEED=$DATA/kernelindex/fixtures/gpt-o3_cuda_5548d0.gqa_paged_decode_h32_kv4_d128_ps1.manifest.json
expect_rc 0 "add the seed" "$KI" --store "$T/k" add "$SEED"
expect_rc 3 "the seed's name" "$KI" --store "$T/k" show sol-trace-gqa-paged-decode-h32-kv4-d128-ps1-27ef153a
grep -q "sha256:215ac4f9a26728e6.*gpt-o3_cuda_5548d0" "$T/err" || fail "the seed run and its title: $(cat "$T/err")"
grep -q "sha256:a5a8d99f2ccf69da.*flashinfer_wrapper_78fd04" "$T/err" || fail "the export run and its title: $(cat "$T/err")"
expect_rc 0 "audit with shared names" "$KI" --store "$T/k" audit
echo "ok"
