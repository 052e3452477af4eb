#!/usr/bin/env bash
# kill -9 during `ki add` of many files, and during `ki import kernelindex`,
# leaves a store whose audit is clean; running the command again completes
# it. A full disk (a file-size limit: writes past it fail with EFBIG, no
# root needed) at each write of `ki init`, `ki add`, `ki import kernelindex`,
# `ki sign`, `ki key generate` and `ki trust add`: exit 5 naming the cause,
# nothing earlier lost or half-written (audit clean, same objects), and the
# same command then succeeds. The fsync and rename steps, which a size limit
# cannot reach, are covered through the fault-injection Env in tests/odb and
# tests/sign.
source "$(dirname "$0")/testlib.bash" "$@"

expect_exit 0 ki init store
python3 - <<'PY'
import json, os
os.mkdir("many")
for i in range(3000):
    doc = {"apiVersion": "kernelindex.dev/v1alpha1", "kind": "SoftwareProject",
           "metadata": {"name": "project-%d" % i, "title": "t" * 150},
           "spec": {"name": "Project %d" % i, "repository": "https://example.invalid/p/%d" % i}}
    open("many/p%04d.json" % i, "w").write(json.dumps(doc, indent=2))
for i in range(20):
    open("many/blob%02d.bin" % i, "wb").write(os.urandom(200000))
PY
for delay in 0.05 0.1 0.15 0.2 0.3 0.4; do
  "$KI_BIN" add many/* >/dev/null 2>&1 &
  pid=$!
  sleep "$delay"
  kill -9 "$pid" 2>/dev/null
  wait "$pid" 2>/dev/null
  expect_exit 0 ki audit || echo "after kill at ${delay}s" >&2
done
expect_exit 0 ki add many/*
[ "$(echo "$OUT" | wc -l)" = 3020 ] || fail "add completes: $(echo "$OUT" | wc -l) lines"
expect_exit 0 ki audit
expect_contains "$OUT" "0 faults" "final audit"
expect_exit 0 ki ls --kind SoftwareProject
[ "$(echo "$OUT" | wc -l)" = 3000 ] || fail "3000 projects stored"

# --- kill -9 during an import: one batch, so all or nothing
SLICE="$DATA/kernelindex-export/catalog-2026-08-16-0022af0b.slice.jsonl"
export KI_STORE="$WORK/imp"
expect_exit 0 ki init imp
expect_exit 0 ki add "$SEED"
for delay in 0.02 0.05 0.1 0.2; do
  "$KI_BIN" import kernelindex "$SLICE" >/dev/null 2>&1 &
  pid=$!
  sleep "$delay"
  kill -9 "$pid" 2>/dev/null
  wait "$pid" 2>/dev/null
  expect_exit 0 ki audit || echo "after kill of the import at ${delay}s" >&2
  expect_exit 0 ki show "BenchmarkRun/$SEED_RUN" || echo "seed lost after kill at ${delay}s" >&2
done
expect_exit 0 ki import kernelindex "$SLICE"
expect_exit 0 ki audit
expect_contains "$OUT" "0 faults" "audit after the import completes"

# --- a full disk at each command's writes
export KI_STORE="$WORK/full" KI_HOME="$WORK/home"
export KI_PASSPHRASE=not-secret
# limited KBYTES CMD...: CMD with a file-size limit; SIGXFSZ ignored so the
# write fails (EFBIG) instead of killing ki. Sets ERR and RC. Standard error
# goes through a pipe: a file would be under the limit too.
limited() {
  local kb=$1
  shift
  ERR=$( (trap '' XFSZ; ulimit -f "$kb"; exec "$@") 2>&1 >/dev/null)
  RC=$?
}
expect_full() {  # expect_full LABEL: exit 5 and the cause named
  [ "$RC" = 5 ] || fail "$1: exit $RC (want 5): $ERR"
  expect_contains "$ERR" "File too large" "$1: the message names the cause"
}
state() {  # what the store holds, and whether its audit is clean
  ki audit | grep ' objects (' || echo "audit failed"
}
kib() { echo $(($(stat -c %s "$1") / 1024)); }

# ki init: FORMAT cannot be written; no store; init again works
limited 0 "$KI_BIN" init full
expect_full "init"
[ ! -e full/.ki/FORMAT ] || fail "init on a full disk left a FORMAT file"
expect_exit 5 ki ls
expect_exit 0 ki init full
expect_exit 0 ki add "$SEED"
before=$(state)

# ki add: a loose object (the data file), then the index (LMDB's commit)
head -c 300000 /dev/urandom >loose.bin
limited 64 "$KI_BIN" add loose.bin
expect_full "add, loose file"
[ -z "$(find full/.ki/objects -type f)" ] || fail "add on a full disk left files: $(find full/.ki/objects -type f)"
[ "$(state)" = "$before" ] || fail "add on a full disk changed the store"
head -c 40000 /dev/urandom | base64 -w0 >inline.txt
limited "$(kib full/.ki/index/data.mdb)" "$KI_BIN" add inline.txt
expect_full "add, index commit"
[ "$(state)" = "$before" ] || fail "add (index) on a full disk changed the store"
expect_exit 0 ki add loose.bin inline.txt
before=$(state)

# ki import kernelindex: one batch in the index
limited "$(kib full/.ki/index/data.mdb)" "$KI_BIN" import kernelindex "$SLICE"
expect_full "import"
[ "$(state)" = "$before" ] || fail "import on a full disk changed the store"
expect_exit 0 ki import kernelindex "$SLICE"
before=$(state)

# ki key generate: the secret key file cannot be written; no key, no
# temporary file; generate again works
expect_exit 0 ki key generate first --no-passphrase
limited 0 "$KI_BIN" key generate alice
expect_full "key generate"
[ "$(ls "$KI_HOME/keys")" = "first.key" ] || fail "key generate on a full disk left: $(ls "$KI_HOME/keys")"
expect_exit 0 ki key generate alice
expect_exit 0 ki key list
expect_contains "$OUT" "first" "the earlier key is still listed"

# ki trust add: the list is as it was; adding again works
expect_exit 0 ki trust add "$(ki key export first)" --name first --role runner
cp "$KI_HOME/trust.json" trust.before
limited 0 "$KI_BIN" trust add "$(ki key export alice)" --name alice --role runner
expect_full "trust add"
cmp -s trust.before "$KI_HOME/trust.json" || fail "trust add on a full disk changed trust.json"
[ "$(ls "$KI_HOME")" = "$(printf 'keys\ntrust.json\ntrust.json.lock')" ] || fail "trust add on a full disk left: $(ls "$KI_HOME")"
expect_exit 0 ki trust add "$(ki key export alice)" --name alice --role runner

# ki sign: an envelope large enough for a loose file (the data file), then
# one kept in the index (LMDB's commit); nothing filed, and signing again works
head -c 90000 /dev/urandom | base64 -w0 >note.big  # under 128 KiB: one argument
head -c 30000 /dev/urandom | base64 -w0 >note.small
limited 64 "$KI_BIN" sign "BenchmarkRun/$SEED_RUN" --key alice --predicate reviewed --note "$(cat note.big)"
expect_full "sign, loose envelope"
[ "$(state)" = "$before" ] || fail "sign (loose) on a full disk changed the store"
limited "$(kib full/.ki/index/data.mdb)" "$KI_BIN" sign "BenchmarkRun/$SEED_RUN" --key alice --predicate reviewed --note "$(cat note.small)"
expect_full "sign, index commit"
[ "$(state)" = "$before" ] || fail "sign (index) on a full disk changed the store"
expect_exit 0 ki verify "BenchmarkRun/$SEED_RUN"
case "$OUT" in *attestation*) fail "a failed sign filed an attestation" ;; esac
expect_exit 0 ki sign "BenchmarkRun/$SEED_RUN" --key alice --predicate reviewed --note "$(cat note.small)"
expect_exit 0 ki verify "BenchmarkRun/$SEED_RUN"
expect_contains "$OUT" "1 attestations: 1 trusted" "the retried signature is filed and trusted"
expect_exit 0 ki audit
expect_contains "$OUT" "0 faults" "final audit of the disk-full store"
finish
