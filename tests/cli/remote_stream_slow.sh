#!/usr/bin/env bash
# ki push and ki pull of a blob larger than the memory ki may use: a ~200 MB
# blob pushed to a loopback registry (Debian's docker-registry) and to an
# OCI image layout, pulled from each into a fresh store, catted and
# verified, every ki command under a 64 MB limit on its data segment
# (RLIMIT_DATA, as store_stream_slow.sh: holding the blob whole fails; the
# mapped input file and LMDB's shared map do not count). A kill -9 in the
# middle of a streamed pull leaves a clean store that a second pull
# completes. Skipped (77) when docker-registry is not installed.
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/testlib.bash" "$@"
if ! command -v docker-registry >/dev/null; then
  echo "skipped: docker-registry is not installed (apt-get install docker-registry)"
  exit 77
fi
source "$HERE/registry.bash"
trap 'registry_stop; chmod -R u+w "$WORK" 2>/dev/null; rm -rf "$WORK"' EXIT

LIMIT_KB=65536
# ~200 MB that zstd compresses (base64 text) but not to nothing.
head -c 150000000 /dev/urandom | base64 -w 120 > big.txt
want="sha256:$(sha256sum big.txt | cut -d' ' -f1)"
# The limit is real: a process that holds the blob whole fails under it.
( ulimit -d $LIMIT_KB; python3 -c "open('big.txt','rb').read()" ) 2>/dev/null &&
  fail "the data limit does not stop a whole-file read; the test proves nothing"
limited() { ( ulimit -d $LIMIT_KB; "$KI_BIN" "$@" ); }
no_scratch() {  # no scratch file of a streamed download left in store $1
  [ -z "$(ls -A "$1/.ki/objects/incoming" 2>/dev/null)" ] || fail "scratch files left in $1: $(ls "$1/.ki/objects/incoming")"
}

registry_start "$WORK" "$WORK/registry" || { fail "docker-registry did not start"; finish; }
REG="oci://127.0.0.1:$REG_PORT/ki/large"
expect_exit 0 ki init src
expect_exit 0 limited --store src add --blob big.txt
expect_contains "$OUT" "$want	blob	-	new" "add under the limit"

# ---- registry: push, pull into a fresh store, cat, verify
expect_exit 0 limited --store src push --insecure --json "$REG" "$want"
expect_contains "$OUT" '"streamed": 1' "push streamed the blob"
expect_exit 0 ki init dst
expect_exit 0 limited --store dst pull --insecure --json "$REG" "$want"
expect_contains "$OUT" '"blobsStreamed": 1' "pull streamed the blob"
limited --store dst cat "$want" | cmp -s - big.txt || fail "cat after the pull from the registry gives other bytes"
expect_exit 0 limited --store dst verify "$want"
expect_exit 0 limited --store dst audit
expect_contains "$OUT" "0 faults" "audit after the pull from the registry"
no_scratch dst
# Again: the registry and the store have it, nothing moves.
expect_exit 0 limited --store dst pull --insecure "$REG" "$want"
expect_contains "$OUT" "0 received (0 bytes), 1 already here" "second pull"

# ---- kill -9 in the middle of a streamed pull: the store stays clean (the
# download's scratch file is a leftover that audit notes and --reindex
# removes), and pulling again completes it.
expect_exit 0 ki init dst4
( ulimit -d $LIMIT_KB; exec "$KI_BIN" --store dst4 pull --insecure "$REG" "$want" ) >/dev/null 2>&1 &
pid=$!
started=0
for _ in $(seq 400); do  # killed once its scratch file exists: the download is under way
  [ -n "$(ls -A dst4/.ki/objects/incoming 2>/dev/null)" ] && { started=1; break; }
  kill -0 $pid 2>/dev/null || break
  sleep 0.05
done
kill -9 $pid 2>/dev/null
wait $pid 2>/dev/null
[ $started = 1 ] || fail "the pull was not caught with its scratch file (it ended first or never began)"
expect_exit 0 ki --store dst4 audit
expect_contains "$OUT" "0 faults" "audit after kill -9 during a pull"
expect_contains "$OUT" "leftover temporary file objects/incoming/" "audit notes the killed download's scratch file"
expect_exit 3 ki --store dst4 cat "$want"
expect_exit 0 limited --store dst4 pull --insecure "$REG" "$want"
limited --store dst4 cat "$want" | cmp -s - big.txt || fail "cat after a pull again gives other bytes"
expect_exit 0 ki --store dst4 audit --reindex
expect_contains "$OUT" "0 faults" "reindex after the killed pull"
no_scratch dst4

# ---- image layout: push, the blob file, pull into a fresh store
expect_exit 0 limited --store src push "oci-layout:$WORK/layout" "$want"
cmp -s "$WORK/layout/blobs/sha256/${want#sha256:}" big.txt || fail "the layout's blob file is not the blob"
expect_exit 0 ki init dst2
expect_exit 0 limited --store dst2 pull "oci-layout:$WORK/layout" "$want"
limited --store dst2 cat "$want" | cmp -s - big.txt || fail "cat after the pull from the layout gives other bytes"
expect_exit 0 limited --store dst2 verify "$want"
no_scratch dst2

# ---- a layout whose blob file was damaged: exit 1, nothing stored, no scratch file
chmod u+w "$WORK/layout/blobs/sha256/${want#sha256:}"
# One byte changed (XOR 1): writing a fixed 'X' left the file intact when
# the random base64 text had an 'X' there already (about 1 run in 65).
python3 -c 'import sys; f = open(sys.argv[1], "r+b"); f.seek(100000000); b = f.read(1); f.seek(100000000); f.write(bytes([b[0] ^ 1]))' \
  "$WORK/layout/blobs/sha256/${want#sha256:}"
cmp -s "$WORK/layout/blobs/sha256/${want#sha256:}" big.txt && fail "the layout's blob file was not damaged"
expect_exit 0 ki init dst3
expect_exit 1 limited --store dst3 pull "oci-layout:$WORK/layout" "$want"
expect_contains "$ERR" "received bytes that hash to" "damaged layout blob"
expect_contains "$ERR" "nothing was stored" "damaged layout blob"
expect_exit 3 ki --store dst3 cat "$want"
no_scratch dst3
finish
