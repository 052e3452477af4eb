#!/usr/bin/env bash
# Bad input: each case gives a clear message, its documented exit code, and
# leaves the store exactly as it was.
source "$(dirname "$0")/testlib.bash" "$@"

expect_exit 0 ki init store
expect_exit 0 ki add "$SEED"
snapshot() { ki ls --json | sha256sum; }
BEFORE=$(snapshot)
unchanged() {
  [ "$(snapshot)" = "$BEFORE" ] || fail "$1: the store changed"
  ki audit >/dev/null || fail "$1: audit not clean afterwards"
}

project() {  # a valid SoftwareProject with the given name field
  printf 'apiVersion: kernelindex.dev/v1alpha1\nkind: SoftwareProject\nmetadata:\n  name: p-%s\nspec:\n  name: %s\n' "$1" "$1"
}
project good >good.yaml

# malformed JSON: line and column
printf '{\n  "apiVersion": "kernelindex.dev/v1alpha1",\n  "kind": "SoftwareProject"\n  "spec": {}\n}\n' >broken.json
expect_exit 4 ki add good.yaml broken.json
expect_contains "$ERR" "broken.json:4:" "JSON error names file and line"
unchanged "malformed JSON"

# malformed YAML
printf 'apiVersion: kernelindex.dev/v1alpha1\nkind: SoftwareProject\nspec:\n  name: [unclosed\n' >broken.yaml
expect_exit 4 ki add broken.yaml
expect_contains "$ERR" "broken.yaml:" "YAML error names the file"
unchanged "malformed YAML"

# duplicate keys, JSON and YAML
printf '{"apiVersion":"kernelindex.dev/v1alpha1","kind":"SoftwareProject","spec":{"name":"a","name":"b"}}' >dup.json
expect_exit 4 ki add dup.json
expect_contains "$ERR" "duplicate" "duplicate JSON key"
expect_exit 4 ki add "$DATA/kernelindex/examples/invalid/duplicate-key.yaml"
expect_contains "$ERR" "duplicate" "duplicate YAML key"
unchanged "duplicate keys"

# a media type that push and pull could not carry (parameters are fine)
echo "log" >l.txt
expect_exit 4 ki add --blob --media-type "text/plain charset=utf-8" l.txt
expect_contains "$ERR" "l.txt: media type 'text/plain charset=utf-8' is not" "bad media type names file and type"
unchanged "bad media type"

# unknown kind, unknown apiVersion
project x | sed 's/SoftwareProject/SoftwareThing/' >kind.yaml
expect_exit 4 ki add kind.yaml
expect_contains "$ERR" "SoftwareThing" "unknown kind named"
project x | sed 's#kernelindex.dev/v1alpha1#kernelindex.dev/v9#' >api.yaml
expect_exit 4 ki add api.yaml
expect_contains "$ERR" "kernelindex.dev/v9" "unknown apiVersion named"
unchanged "unknown kind"

# NaN / Infinity
printf '{"apiVersion":"kernelindex.dev/v1alpha1","kind":"SoftwareProject","spec":{"name":NaN}}' >nan.json
expect_exit 4 ki add nan.json
printf 'apiVersion: kernelindex.dev/v1alpha1\nkind: SoftwareProject\nspec:\n  name: .inf\n' >inf.yaml
expect_exit 4 ki add inf.yaml
unchanged "NaN"

# a duration that is not a whole number of nanoseconds
expect_exit 4 ki add "$DATA/kernelindex/examples/invalid/ambiguous-duration.yaml"
expect_contains "$ERR" "nanosecond" "non-whole duration"
unchanged "duration"

# over 1 MiB
python3 -c 'print("apiVersion: kernelindex.dev/v1alpha1\nkind: SoftwareProject\nspec:\n  name: " + "x" * (1 << 20))' >huge.yaml
expect_exit 4 ki add huge.yaml
expect_contains "$ERR" "huge.yaml" "size limit names the file"
unchanged "over 1 MiB"

# nesting deeper than allowed
python3 -c 'print("{\"apiVersion\":\"kernelindex.dev/v1alpha1\",\"kind\":\"SoftwareProject\",\"spec\":" + "[" * 500 + "]" * 500 + "}")' >deep.json
expect_exit 4 ki add deep.json
expect_contains "$ERR" "deep.json" "depth limit names the file"
unchanged "too deep"

# bundle whose run names another environment digest
sed 's/"cudaToolkit": "12.8"/"cudaToolkit": "12.9"/' "$SEED" >mismatch.manifest.json
expect_exit 4 ki add mismatch.manifest.json
expect_contains "$ERR" "sha256:f4292a8be127b7230cd3995c1d605fb6c644e2c2f94566e1d28cc1be766ca5d5" "mismatch names the run's digest"
unchanged "bundle mismatch"

# usage errors
expect_exit 2 ki frobnicate
expect_exit 2 ki add
expect_exit 4 ki resolve abc

# no store
expect_exit 5 ki --store "$WORK/nowhere" ls
expect_contains "$ERR" "no ki store" "missing store"
(cd / && KI_STORE= "$KI_BIN" ls >/dev/null 2>&1)
[ $? = 5 ] || fail "no store found upward: exit 5"

# a read-only store: a user who may not write it (root ignores permissions,
# so run as nobody when we are root)
if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null; then
  chmod -R a+rX "$WORK"
  chmod -R go-w "$WORK/store"
  cp good.yaml /tmp/ki-ro-good-$$.yaml && chmod a+r /tmp/ki-ro-good-$$.yaml
  OUT=$(setpriv --reuid=65534 --regid=65534 --clear-groups "$KI_BIN" --store "$WORK/store" add /tmp/ki-ro-good-$$.yaml 2>&1)
  rc=$?
  rm -f /tmp/ki-ro-good-$$.yaml
  [ $rc = 5 ] || fail "read-only store: exit $rc (want 5): $OUT"
  expect_contains "$OUT" "not writable" "read-only store message"
  # Reading still works. nobody gets a KI_HOME of its own: root's HOME is
  # closed to it, and a trust list that cannot be read is an error for what
  # shows evidence levels (exit 5), not "nothing trusted".
  OUT=$(KI_HOME="$WORK/nobody-home" setpriv --reuid=65534 --regid=65534 --clear-groups "$KI_BIN" \
    --store "$WORK/store" show "$SEED_RUN" 2>&1 >/dev/null) || fail "a read-only store can still be read: $OUT"
  mkdir -m 700 "$WORK/closed"  # root's: nobody cannot look inside
  OUT=$(KI_HOME="$WORK/closed/ki" setpriv --reuid=65534 --regid=65534 --clear-groups "$KI_BIN" \
    --store "$WORK/store" show "$SEED_RUN" 2>&1 >/dev/null)
  rc=$?
  [ $rc = 5 ] || fail "an unreadable trust list: exit $rc (want 5): $OUT"
  expect_contains "$OUT" "trust.json: Permission denied" "an unreadable trust list is named"
  # So does a push, which only reads objects (it used to refuse the store,
  # exit 5). A layout has no remote.state to record, so no warning here;
  # tests/remote checks the warning of a registry push.
  RO_LAYOUT=/tmp/ki-ro-layout-$$
  OUT=$(setpriv --reuid=65534 --regid=65534 --clear-groups "$KI_BIN" --store "$WORK/store" push "oci-layout:$RO_LAYOUT" "$SEED_RUN" 2>&1)
  rc=$?
  [ $rc = 0 ] || fail "push from a read-only store: exit $rc (want 0): $OUT"
  expect_contains "$OUT" "pushed	BenchmarkRun." "push from a read-only store"
  expect_exit 0 ki init rocopy
  expect_exit 0 ki --store rocopy pull "oci-layout:$RO_LAYOUT" "BenchmarkRun/$SEED_RUN"
  rm -rf "$RO_LAYOUT"
else
  chmod -R a-w "$WORK/store"
  expect_exit 5 ki add good.yaml
  expect_contains "$ERR" "not writable" "read-only store message"
  expect_exit 0 ki push "oci-layout:$WORK/rolayout" "$SEED_RUN"
  expect_contains "$OUT" "pushed	BenchmarkRun." "push from a read-only store"
  chmod -R u+w "$WORK/store"
  expect_exit 0 ki init rocopy
  expect_exit 0 ki --store rocopy pull "oci-layout:$WORK/rolayout" "BenchmarkRun/$SEED_RUN"
fi
unchanged "read-only store"

# A pull whose keys cannot be loaded (a trust list writable by others) warns
# and goes on: attestations are then checked without them.
expect_exit 0 ki push "oci-layout:$WORK/keyless" "$SEED_RUN"
mkdir -p "$WORK/insecurehome"
echo '{"format":"ki-trust/v1","keys":[]}' >"$WORK/insecurehome/trust.json"
chmod 666 "$WORK/insecurehome/trust.json"
expect_exit 0 ki init keyless
KI_HOME="$WORK/insecurehome" expect_exit 0 ki --store keyless pull "oci-layout:$WORK/keyless" "BenchmarkRun/$SEED_RUN"
expect_contains "$ERR" "attestations are checked without the local keys" "a pull warns when its keys cannot be loaded"

# KI_LMDB_MAP_SIZE: not a size is invalid input; a map too small for a
# write fails as a full disk does and stores nothing; a fitting one works.
KI_LMDB_MAP_SIZE=12X expect_exit 4 ki ls
expect_contains "$ERR" "KI_LMDB_MAP_SIZE" "bad map size is named"
mkdir mapfill
for i in $(seq 1 40); do head -c 50000 /dev/urandom >mapfill/m$i.bin; done
KI_LMDB_MAP_SIZE=1M expect_exit 5 ki add mapfill/*.bin
unchanged "index map too small"
KI_LMDB_MAP_SIZE=256M expect_exit 0 ki show "$SEED_RUN"

# a full disk: a file-size limit makes every write past it fail (EFBIG),
# in LMDB and in loose files alike. SIGXFSZ is ignored so the write fails
# instead of killing the process.
head -c 3000000 /dev/urandom >big1.bin
head -c 3000000 /dev/urandom >big2.bin
mkdir small
for i in $(seq 1 120); do head -c 50000 /dev/urandom >small/s$i.bin; done
# (a) objects kept in the index: LMDB's file outgrows the limit
(trap '' XFSZ; ulimit -f 2048; exec "$KI_BIN" add good.yaml small/*.bin) >/dev/null 2>full.err
rc=$?
[ $rc = 5 ] || fail "disk full (index): exit $rc (want 5): $(cat full.err)"
expect_contains "$(cat full.err)" "nothing was stored" "disk-full message says what happened"
unchanged "disk full (index)"
# (b) large objects written as loose files
(trap '' XFSZ; ulimit -f 2048; exec "$KI_BIN" add good.yaml big1.bin big2.bin) >/dev/null 2>full.err
rc=$?
[ $rc = 5 ] || fail "disk full (loose): exit $rc (want 5): $(cat full.err)"
expect_contains "$(cat full.err)" "File too large" "disk-full message says why"
unchanged "disk full (loose)"
[ -z "$(find store/.ki/objects -type f)" ] || fail "no loose file left behind: $(find store/.ki/objects -type f)"
# flashinfer-bench datasets: a field of the wrong type, or a line that is not
# an object, is invalid input naming file:line and the field (they raised
# nlohmann's type_error: exit 5, no place), and nothing is stored.
FIB="$DATA/run/flashinfer-trace"
fib_case() {  # fib_case LINE: a dataset whose one workload line is LINE
  rm -rf fib && mkdir -p fib/definitions fib/workloads
  cp "$FIB"/definitions/gqa_paged/*.json fib/definitions/
  head -1 "$FIB"/workloads/gqa_paged/*.jsonl >fib/workloads/w.jsonl
  printf '%s\n' "$1" >>fib/workloads/w.jsonl
}
fib_case '{"definition":"gqa_paged_decode_h32_kv4_d128_ps1","workload":{"uuid":12345,"axes":{"batch_size":1,"num_pages":8,"len_indptr":2,"num_kv_indices":7}}}'
expect_exit 4 ki import flashinfer-bench fib
expect_contains "$ERR" "workloads/w.jsonl:2: workload: \`uuid\` is a number, not a string" "fib: wrong-typed uuid names file:line and field"
unchanged "fib uuid"
fib_case '[1,2]'
expect_exit 4 ki import flashinfer-bench fib
expect_contains "$ERR" "workloads/w.jsonl:2: a workload line is an array, not an object" "fib: a line that is not an object names file:line"
unchanged "fib array line"
fib_case '{"definition":7}'
expect_exit 4 ki import flashinfer-bench fib
expect_contains "$ERR" "workloads/w.jsonl:2: \`definition\` is a number, not a string" "fib: wrong-typed definition name"
fib_case '{"definition":"gqa_paged_decode_h32_kv4_d128_ps1","workload":{"axes":{"batch_size":1,"num_pages":8,"len_indptr":2,"num_kv_indices":7},"inputs":{"q":{"type":"safetensors","path":5}}}}'
expect_exit 4 ki import flashinfer-bench fib
expect_contains "$ERR" "workloads/w.jsonl:2: workload.inputs.q: \`path\` is a number, not a string" "fib: wrong-typed input path"
fib_case '{"definition":"gqa_paged_decode_h32_kv4_d128_ps1","workload":{"axes":{"batch_size":1,"num_pages":8,"len_indptr":2,"num_kv_indices":7},"inputs":{"q":"random"}}}'
expect_exit 4 ki import flashinfer-bench fib
expect_contains "$ERR" "workloads/w.jsonl:2: workload: \`inputs.q\` is a string, not an object" "fib: an input that is not an object"
fib_case '{}'
sed -i 's/"dtype": "bfloat16"/"dtype": 16/' fib/definitions/*.json
expect_exit 4 ki import flashinfer-bench fib
expect_contains "$ERR" ".json: inputs.q: \`dtype\` is a number, not a string" "fib: wrong-typed definition dtype"
unchanged "fib definitions"

finish
