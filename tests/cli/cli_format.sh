#!/usr/bin/env bash
# Golden outputs of ki's human pages (docs/cli.md, "Reading human output"):
# four significant digits with scaled units, columns from their content
# and fitted to $COLUMNS, shortest decimals for document numbers, no empty
# headings. Each case's standard output must equal tests/cli/golden/CASE.out
# byte for byte. KI_UPDATE_GOLDEN=1 rewrites the files (then read the diff).
GOLDEN=$(cd "$(dirname "$0")" && pwd)/golden
source "$(dirname "$0")/testlib.bash" "$@"
SLICE=$DATA/kernelindex-export/catalog-2026-08-16-0022af0b.slice.jsonl

golden() {  # golden CASE CMD...
  local name=$1
  shift
  expect_exit 0 "$@" || return
  if [ "${KI_UPDATE_GOLDEN:-}" = 1 ]; then
    printf '%s\n' "$OUT" >"$GOLDEN/$name.out"
    return
  fi
  local want
  want=$(cat "$GOLDEN/$name.out" 2>/dev/null) || { fail "$name: no golden file"; return; }
  if [ "$OUT" != "$want" ]; then
    fail "$name: output differs from golden/$name.out"
    diff <(printf '%s\n' "$want") <(printf '%s\n' "$OUT") | head -20 >&2
  fi
}

expect_exit 0 ki init store
expect_exit 0 ki add "$SEED"
expect_exit 0 ki add "$DATA"/kernelindex/examples/*.yaml
# The seed run: latency in µs, document numbers as they are, no empty sections.
unset COLUMNS
golden show-seed-run ki show "$SEED_RUN_DIGEST"
case "$OUT" in *"{}"*) fail "show prints an empty object" ;; esac
# A manifest's spec fields.
golden show-protocol ki show BenchmarkProtocol/flashinfer-bench-trace
printf 'x%.0s' $(seq 1 3000) >blob.txt
expect_exit 0 ki add blob.txt
golden show-blob ki show "$(ki ls --kind blob | grep -v '^$' | cut -f1 | while read -r d; do
  [ "$(ki cat "$d" | wc -c)" = 3000 ] && echo "$d"; done)"

# The catalog slice: a source-native cohort ranked in ns, and one in seconds.
expect_exit 0 ki import kernelindex "$SLICE"
golden rank-ns ki rank ae5aacaf
golden records-ns ki records ae5aacaf
# Fitted to a narrow terminal: the run column is cut with "…", the others keep their width.
COLUMNS=90 golden rank-ns-90 ki rank ae5aacaf
while IFS= read -r line; do
  [ "$(printf '%s' "$line" | wc -m)" -le 90 ] || fail "rank at COLUMNS=90: a line of $(printf '%s' "$line" | wc -m) columns"
done < <(COLUMNS=90 ki rank ae5aacaf | sed -n '/^  *rank/,$p')
# A cohort measured in seconds (values in s: µs, never 0.0000699…).
SEC=$(ki rank ae5aacaf --json >/dev/null; "$KI_BIN" ls --kind BenchmarkRun --json | grep -o '"digest": "sha256:[0-9a-f]*"' | cut -d'"' -f4 | while read -r d; do
  "$KI_BIN" rank "$d" --json 2>/dev/null | grep -q '"unit": "s"' && { echo "$d"; break; }; done)
if [ -n "$SEC" ]; then
  golden rank-seconds ki rank "$SEC"
  case "$OUT" in *0.0000*) fail "rank in seconds prints a raw decimal" ;; esac
  golden show-seconds-run ki show "$SEC"
else
  fail "the slice has no cohort measured in seconds"
fi

# --json keeps full precision: the slice's own digits come back.
expect_exit 0 ki rank ae5aacaf --json
expect_contains "$OUT" '"value": 5642' "rank --json keeps the value"

finish
