# The preamble of the tests of a store made by an earlier ki
# (store_formatN.sh), first thing in such a script:
#   source "$(dirname "$0")/old_store.bash" N "$@"
# Sources failfast.bash (KI, DATA, T, fail, expect_rc), unpacks
# tests/data/store-formatN/store-vN.tar.gz into $T and checks that its
# FORMAT says N, and sets F (that folder) and SEED (the seed run). Defines
# K (ki on the unpacked store), same_json FILE and same_text FILE (the last
# command's output, $T/out, against FILE of $F: what format N's ki printed)
# and check_printed WHEN (what the fixtures of formats 9 and on recorded:
# rank, groups, records, ls, show of the protocol and of the seed, a name
# resolved bare and as Kind/name; ls less the blob $ADDED, when set).
OLD_FORMAT=$1
shift
source "$(dirname "${BASH_SOURCE[0]}")/failfast.bash" "$@"
SEED=sha256:215ac4f9a26728e69bfeb464d46e76004c0f51a7b4a665eeed074888b5a99e7f
F=$DATA/store-format$OLD_FORMAT
tar xzf "$F/store-v$OLD_FORMAT.tar.gz" -C "$T"
grep -qx "ki-store $OLD_FORMAT" "$T/.ki/FORMAT" || fail "the fixture is format $OLD_FORMAT"
K() { "$KI" --store "$T/.ki" "$@"; }
same_json() {
  python3 - "$T/out" "$F/$1" <<'PY' || fail "$1: not as format $OLD_FORMAT's ki printed it"
import json, sys
assert json.load(open(sys.argv[1])) == json.load(open(sys.argv[2]))
PY
}
same_text() {
  cmp "$T/out" "$F/$1" >/dev/null ||
    fail "$1: not as format $OLD_FORMAT's ki printed it: $(diff "$T/out" "$F/$1" | head -5)"
}
check_printed() {
  expect_rc 0 "rank ($1)" K rank ae5aacaf --json
  same_json rank_ae5.json
  expect_rc 0 "groups ($1)" K groups --json
  same_json groups.json
  expect_rc 0 "records ($1)" K records ae5aacaf --json
  same_json records_ae5.json
  expect_rc 0 "ls ($1)" K ls
  grep -v "^sha256:${ADDED:-none}" "$T/out" >"$T/out.ls" && mv "$T/out.ls" "$T/out"
  same_text ls.txt
  expect_rc 0 "show the protocol ($1)" K show 7d44d206
  same_text show_protocol.txt
  expect_rc 0 "show the seed ($1)" K show $SEED
  grep -q "ae5aacaf\|rank" "$T/out" || fail "show of the seed ($1): $(cat "$T/out")"
  expect_rc 0 "resolve a name ($1)" K resolve flashinfer-bench-trace
  grep -q "^sha256:7d44d206" "$T/out" || fail "resolve of a protocol's name ($1): $(cat "$T/out")"
  expect_rc 0 "resolve Kind/name ($1)" K resolve BenchmarkProtocol/flashinfer-bench-trace
  grep -q "^sha256:7d44d206" "$T/out" || fail "resolve of Kind/name ($1): $(cat "$T/out")"
}
