#!/usr/bin/env bash
# Damaged objects and what ki audit says to run about them (issue 25, items
# 2 and 3): a damaged object stays a fault, also after ki audit --reindex,
# until the same bytes written again (ki add) replace it; a flipped byte in a
# frame's media type is a fault, never copied into the index.
source "$(dirname "$0")/testlib.bash" "$@"

flip() {  # flip FILE OFFSET: xor one byte with 0x20
  python3 - "$1" "$2" <<'PY'
import sys
p, off = sys.argv[1], int(sys.argv[2])
b = bytearray(open(p, "rb").read())
b[off if off >= 0 else len(b) + off] ^= 0x20
open(p, "wb").write(bytes(b))
PY
}
loose_path() { local h=${1#sha256:}; echo "store/.ki/objects/${h:0:2}/${h:2}"; }

expect_exit 0 ki init store
python3 -c 'import random; random.seed(25); open("big.bin","wb").write(bytes(random.getrandbits(8) for _ in range(200000)))'
expect_exit 0 ki add --blob big.bin
D=$(cut -f1 <<<"$OUT")
F=$(loose_path "$D")
[ -f "$F" ] || fail "the 200 KB blob is not a loose file ($F)"
cp big.bin big.copy

# ---- 25.3, before any reindex: the fault says what to run, and ki add of
# the same bytes replaces the damaged copy (it said "existed" and kept it).
chmod u+w "$F"
flip "$F" 100000
expect_exit 1 ki audit
expect_contains "$OUT" "corrupt	$D" "25.3: audit names the damaged object"
expect_contains "$OUT" "ki add of the same bytes" "25.3: audit says what to run"
ki cat "$D" >/dev/null 2>&1 && fail "25.3: ki cat of the damaged object succeeded"
expect_exit 0 ki add --blob big.copy
expect_exit 0 ki audit
ki cat "$D" >cat.out || fail "25.3: ki cat after the re-add failed"
cmp -s cat.out big.bin || fail "25.3: ki cat after the re-add differs from the bytes added"

# ---- 25.3 after ki audit --reindex: never adopted, a fault until replaced.
chmod u+w "$F"
flip "$F" 150000
expect_exit 1 ki audit --reindex
expect_contains "$OUT" "a fault until a good copy replaces it" "25.3: the reindex note says it stays a fault"
expect_exit 1 ki audit
expect_contains "$OUT" "corrupt	$D	loose object file" "25.3: after reindex, audit still names it"
expect_contains "$OUT" "ki add of the same bytes" "25.3: after reindex, audit says what to run"
case "$OUT" in *adopt*) fail "25.3: audit says reindex adopts a damaged object: $OUT" ;; esac
expect_exit 3 ki cat "$D"
expect_exit 0 ki add --blob big.copy
expect_exit 0 ki audit
cmp -s <(ki cat "$D") big.bin || fail "25.3: ki cat after reindex and re-add differs from the bytes added"

# ---- 25.2: a flipped byte in a frame's media type (offset 18, the first
# byte after the fixed header) is a fault; reindex does not copy it into the
# index, and ki show keeps the media type it was added with.
chmod u+w "$F"
flip "$F" 18
expect_exit 1 ki audit
expect_contains "$OUT" "frame header damaged" "25.2: the header check names it"
expect_exit 1 ki audit --reindex
expect_exit 1 ki audit
expect_contains "$OUT" "corrupt	$D" "25.2: after reindex the object is still a fault"
expect_exit 0 ki add --blob big.copy
expect_exit 0 ki audit
expect_exit 0 ki show "$D"
expect_contains "$OUT" "application/octet-stream" "25.2: ki show gives the media type it was added with"

finish
