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
# Without --blob, standard input is read only as far as tells it from a
# manifest (1 MiB + 1 byte), then streamed: 200 MB read whole would break
# the limit.
head -c 200000000 big.txt > big200.txt
want200="sha256:$(sha256sum big200.txt | cut -d' ' -f1)"
( ulimit -d $LIMIT_KB; python3 -c "open('big200.txt','rb').read()" ) 2>/dev/null &&
  fail "the data limit does not stop a whole read of 200 MB; the test proves nothing"
expect_exit 0 bash -c "ulimit -d $LIMIT_KB; cat big200.txt | \"$KI_BIN\" add -"
expect_contains "$OUT" "$want200	blob	-	new" "200 MB piped without --blob under the limit"
expect_exit 0 limited audit --reindex
expect_contains "$OUT" "0 faults" "reindex under the limit"
finish
