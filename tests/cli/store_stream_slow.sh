#!/usr/bin/env bash
# A blob larger than the memory ki may use: `ki add --blob` (from a file
# and from a pipe), `ki cat`, `ki verify` and `ki audit` of a ~400 MB blob
# under a 160 MB limit on the process's data segment (RLIMIT_DATA: heap and
# private writable mappings, so holding the object whole fails; LMDB's
# shared map and the read-only mapping of the input do not count).
source "$(dirname "$0")/testlib.bash" "$@"

LIMIT_KB=163840
expect_exit 0 ki init store
# ~400 MB that zstd compresses (base64 text) but not to nothing.
head -c 300000000 /dev/urandom | base64 -w 120 > big.txt
want="sha256:$(sha256sum big.txt | cut -d' ' -f1)"
# The limit is real: a process that holds the file whole fails under it.
( ulimit -d $LIMIT_KB; python3 -c "open('big.txt','rb').read()" ) 2>/dev/null &&
  fail "the data limit does not stop a whole-file read; the test proves nothing"

limited() { ( ulimit -d $LIMIT_KB; "$KI_BIN" "$@" ); }
expect_exit 0 limited add --blob big.txt
expect_contains "$OUT" "$want	blob	-	new" "add under the limit"
limited cat "$want" | cmp -s - big.txt || fail "cat under the limit gives the bytes back"
expect_exit 0 limited verify "$want"
expect_exit 0 limited audit
expect_contains "$OUT" "0 faults" "audit under the limit"
expect_exit 0 bash -c "ulimit -d $LIMIT_KB; cat big.txt | \"$KI_BIN\" add --blob -"
expect_contains "$OUT" "$want	blob	-	existed" "add from a pipe under the limit"
expect_exit 0 limited audit --reindex
expect_contains "$OUT" "0 faults" "reindex under the limit"
finish
