#!/usr/bin/env bash
# Blobs streamed by `ki add` (over 1 MiB, or from a pipe): the same objects
# as blobs added from memory, read back by cat, corruption found by cat,
# verify and audit, and a killed add leaves no half object.
source "$(dirname "$0")/testlib.bash" "$@"

expect_exit 0 ki init store
python3 - <<'PY'
import os, random
random.seed(7)
words = [b"kernel ", b"latency ", b"0.125 ", b"gqa ", b"decode ", b"\n"]
open("text.dat", "wb").write(b"".join(random.choice(words) for _ in range(800000)))  # ~4 MB, zstd
# Seeded, not os.urandom: fed through stdin below, noise whose first byte
# happened to be '{' (1 run in 256) read as a too-long manifest (exit 4).
noise = random.randbytes(3 << 20)
assert noise.lstrip(b" \t\r\n")[:1] != b"{" and not noise.startswith((b"---", b"apiVersion:"))
open("noise.bin", "wb").write(noise)                                            # raw frame
open("small.bin", "wb").write(os.urandom(5000))                                 # in memory
PY
for f in text.dat noise.bin small.bin; do
  want="sha256:$(sha256sum "$f" | cut -d' ' -f1)"
  expect_exit 0 ki add --blob "$f"
  expect_contains "$OUT" "$want	blob	-	new" "add $f"
  ki cat "$want" > out.bin || fail "cat $f"
  cmp -s out.bin "$f" || fail "cat $f gives the bytes back"
  # From a pipe: the same object, found existing.
  expect_exit 0 bash -c "cat $f | \"$KI_BIN\" add --blob -"
  expect_contains "$OUT" "$want	blob	-	existed" "add $f from a pipe"
done
# `ki add -` without --blob reads 1 MiB + 1 byte to tell a manifest from a
# blob; more than that is a blob, streamed with what was read in front.
want="sha256:$(sha256sum text.dat | cut -d' ' -f1)"
expect_exit 0 bash -c "cat text.dat | \"$KI_BIN\" add -"
expect_contains "$OUT" "$want	blob	-	existed" "text.dat piped without --blob"
# Longer than a manifest may be, but starting like one: refused, as a
# .json file of that size is, and nothing stored; --blob stores it.
{ printf '{"apiVersion": "'; head -c 1048576 /dev/zero | tr '\0' x; printf '"}\n'; } > brace.json.dat
want="sha256:$(sha256sum brace.json.dat | cut -d' ' -f1)"
expect_exit 4 bash -c "cat brace.json.dat | \"$KI_BIN\" add -"
expect_contains "$ERR" "standard input: starts like a manifest but is longer than a manifest may be (1 MiB)" \
  "over 1 MiB starting with { piped without --blob"
expect_exit 3 ki cat "$want"
expect_exit 0 bash -c "cat brace.json.dat | \"$KI_BIN\" add --blob -"
expect_contains "$OUT" "$want	blob	-	new" "the same with --blob"
ki cat "$want" | cmp -s - brace.json.dat || fail "cat gives the piped bytes back"
ls store/.ki/objects/incoming 2>/dev/null | grep -q . && fail "scratch files left in objects/incoming"
expect_exit 0 ki audit
expect_contains "$OUT" "0 faults" "audit after adds"

# The streamed frames are the frames an in-memory add writes: a second
# store fed from memory (stdin without --blob is read whole) holds the same
# loose files byte for byte.
expect_exit 0 ki init mem
for f in text.dat noise.bin; do
  hex=$(sha256sum "$f" | cut -d' ' -f1)
  KI_STORE="$WORK/mem/.ki" expect_exit 0 ki add - < "$f"
  cmp -s "store/.ki/objects/${hex:0:2}/${hex:2}" "mem/.ki/objects/${hex:0:2}/${hex:2}" ||
    fail "$f: streamed frame differs from the in-memory one"
done

# Corruption of a streamed loose object: cat, verify and audit exit 1.
for f in text.dat noise.bin; do
  hex=$(sha256sum "$f" | cut -d' ' -f1)
  obj="store/.ki/objects/${hex:0:2}/${hex:2}"
  cp "$obj" saved
  chmod u+w "$obj"
  python3 -c "
import sys; p = sys.argv[1]; b = bytearray(open(p, 'rb').read()); b[len(b) // 2] ^= 1; open(p, 'wb').write(b)" "$obj"
  ki cat "sha256:$hex" > /dev/null 2> err.txt
  code=$?
  [ "$code" = 1 ] || fail "cat of corrupt $f: exit $code (want 1)"
  grep -q "sha256:$hex" err.txt || fail "cat of corrupt $f names the object: $(cat err.txt)"
  expect_exit 1 ki verify "sha256:$hex"
  expect_contains "$OUT" "corrupt" "verify of corrupt $f"
  expect_exit 1 ki audit
  expect_contains "$OUT" "sha256:$hex" "audit names corrupt $f"
  cp saved "$obj"
done
expect_exit 0 ki audit

# kill -9 while a streamed add is reading a pipe: nothing half-stored,
# audit clean (the scratch file is a note), --reindex removes it.
python3 -c "import os; open('tail.bin', 'wb').write(os.urandom(8 << 20))"
mkfifo pipe
"$KI_BIN" add --blob - < pipe > /dev/null 2>&1 &
pid=$!
exec 3> pipe
head -c 6000000 tail.bin >&3
sleep 0.5
kill -9 "$pid"
wait "$pid" 2>/dev/null
exec 3>&-
expect_exit 0 ki audit
expect_contains "$OUT" "0 faults" "audit after a killed add"
expect_contains "$OUT" "objects/incoming/" "the killed add's scratch file is a note"
expect_exit 3 ki cat "sha256:$(head -c 6000000 tail.bin | sha256sum | cut -d' ' -f1)"
expect_exit 0 ki audit --reindex
ls store/.ki/objects/incoming | grep -q . && fail "reindex removes scratch files"
# kill -9 at several points of a file add (hashing and compressing, renaming).
for delay in 0.02 0.05 0.1 0.2 0.3; do
  "$KI_BIN" add --blob tail.bin > /dev/null 2>&1 &
  pid=$!
  sleep "$delay"
  kill -9 "$pid" 2>/dev/null
  wait "$pid" 2>/dev/null
  expect_exit 0 ki audit || echo "after kill at ${delay}s" >&2
  expect_contains "$OUT" "0 faults" "audit after kill at ${delay}s"
done
expect_exit 0 ki add --blob tail.bin
ki cat "sha256:$(sha256sum tail.bin | cut -d' ' -f1)" | cmp -s - tail.bin || fail "add after kills"
expect_exit 0 ki audit --reindex
expect_exit 0 ki audit
expect_contains "$OUT" "0 faults" "final audit"
finish
