#!/usr/bin/env bash
# ki init/add/resolve/show/cat/ls/verify/audit on the seed record and the
# KernelIndex example registry.
source "$(dirname "$0")/testlib.bash" "$@"

expect_exit 0 ki init store
expect_contains "$OUT" "Initialized ki store" "init"
# init without DIR creates the store that --store / KI_STORE select (as a
# directory holding .ki or the .ki itself), not ./.ki in the current directory.
mkdir -p "$WORK/cwd" && cd "$WORK/cwd"
expect_exit 0 ki --store "$WORK/sel1" init
[ -f "$WORK/sel1/.ki/FORMAT" ] || fail "ki --store DIR init creates DIR/.ki"
expect_exit 0 ki --store "$WORK/sel2/.ki" init
[ -f "$WORK/sel2/.ki/FORMAT" ] || fail "ki --store DIR/.ki init creates DIR/.ki"
expect_exit 0 env KI_STORE="$WORK/sel3" "$KI_BIN" init
[ -f "$WORK/sel3/.ki/FORMAT" ] || fail "KI_STORE=DIR ki init creates DIR/.ki"
[ ! -e "$WORK/cwd/.ki" ] || fail "init with --store/KI_STORE left a store in the current directory"
for s in sel1 sel2/.ki sel3; do expect_exit 0 ki --store "$WORK/$s" ls; done
expect_exit 2 ki --store "$WORK/sel1" init "$WORK/sel4"
[ ! -e "$WORK/sel4" ] || fail "init with conflicting --store and DIR created DIR"
cd "$WORK"
expect_exit 0 ki add "$SEED"
expect_contains "$OUT" $'sha256:7d44d206ad086b4bece35ce31f6531ebb11f07e0d9dcfb74c75be86d3ec02095\tBenchmarkProtocol\tflashinfer-bench-trace\tnew' "add seed"
expect_contains "$OUT" $'sha256:f4292a8be127b7230cd3995c1d605fb6c644e2c2f94566e1d28cc1be766ca5d5\tExecutionEnvironment' "add seed"
[ "$(echo "$OUT" | wc -l)" = 3 ] || fail "add seed prints one line per manifest: $OUT"
expect_exit 0 ki add "$SEED"
[ "$(echo "$OUT" | grep -c $'\texisted$')" = 3 ] || fail "second add marks existing: $OUT"
expect_exit 0 ki add --json "$DATA"/kernelindex/examples/*.yaml
python3 -c 'import json,sys; a=json.load(sys.stdin); assert len(a)>=10 and all({"digest","kind","name","existed"}<=set(x) for x in a)' <<<"$OUT" ||
  fail "add --json shape: $OUT"
expect_contains "$OUT" "sha256:7a3b25630f0628b21ed74b6adb588d28f7e29191f9038bed6f56ed393deefb5b" "operation-spec example digest"
expect_contains "$OUT" "sha256:c560b43111f315d75a81c1cf194c827b1c294110fe5b20ad2d4467c09c24809e" "implementation-revision example digest"
expect_contains "$OUT" "sha256:86d80418deb06f8f6cf44a6b3de9a6b578966773689c18e6c84d44c128207394" "benchmark-run example digest"

# resolve: name, KIND/name, prefixes
expect_exit 0 ki resolve "$SEED_RUN"
RUN=$OUT
expect_exit 0 ki resolve "BenchmarkRun/$SEED_RUN"
[ "$OUT" = "$RUN" ] || fail "KIND/name resolves to the run"
expect_exit 0 ki resolve "${RUN:7:8}"
[ "$OUT" = "$RUN" ] || fail "hex prefix resolves"
expect_exit 0 ki resolve "sha256:${RUN:7:6}"
[ "$OUT" = "$RUN" ] || fail "sha256: prefix resolves"
expect_exit 4 ki resolve "${RUN:7:3}"
expect_contains "$ERR" "at least 4 hex digits" "short prefix message"
expect_exit 3 ki resolve no-such-thing

# cat: exact bytes that re-hash to the digest
ki cat "$RUN" >run.json || fail "cat"
[ "sha256:$(sha256sum <run.json | cut -c1-64)" = "$RUN" ] || fail "cat bytes re-hash to the digest"
expect_contains "$(cat run.json)" '{"apiVersion":"kernelindex.dev/v1alpha1","kind":"BenchmarkRun","spec":{' "canonical bytes"

# show
expect_exit 0 ki show "$SEED_RUN"
for want in "BenchmarkRun $SEED_RUN" "353.0 µs mean" "passed" "flashinfer-bench-trace" "NVIDIA B200" \
  "(missing from this store)" "sol_execbench_eval" "sha256:7e90ce0aebbdc3c556c70bd8bc23755a6ced33f9edacfdd06be74d2c2515a872"; do
  expect_contains "$OUT" "$want" "show run"
done
expect_exit 0 ki show --json "$SEED_RUN"
python3 -c 'import json,sys; d=json.load(sys.stdin); assert d["metadata"]["title"].startswith("gpt-o3_cuda_5548d0"), d; assert d["spec"]["timing"]["latencyNs"]["mean"]==353049' <<<"$OUT" ||
  fail "show --json carries metadata and spec"
expect_exit 0 ki show flashinfer-bench-trace
expect_contains "$OUT" "harness.name" "show protocol fields"

# ls
expect_exit 0 ki ls --kind BenchmarkRun
[ "$(echo "$OUT" | wc -l)" = 2 ] || fail "two runs (seed + example): $OUT"
expect_exit 2 ki ls --kind NoSuchKind

# verify: the seed's workload, implementation and log are missing, not corrupt
expect_exit 0 ki verify "$SEED_RUN"
expect_contains "$OUT" "0 corrupt" "verify summary"
[ "$(echo "$OUT" | grep -c '^missing')" = 3 ] || fail "three missing objects: $OUT"
expect_exit 0 ki verify --json "$SEED_RUN"
python3 -c 'import json,sys; d=json.load(sys.stdin); assert d["ok"] and d["counts"]["missing"]==3' <<<"$OUT" || fail "verify --json"
expect_exit 0 ki audit
expect_contains "$OUT" "0 faults" "audit clean"

# blobs
head -c 300000 /dev/urandom >tensor.bin
echo "kernel log line" >run.log
expect_exit 0 ki add run.log
expect_contains "$OUT" $'\tblob\t-\tnew' "blob add"
LOG=$(echo "$OUT" | cut -f1)
expect_exit 0 ki show "$LOG"
expect_contains "$OUT" "text/plain" "media type guessed from .log"
expect_exit 0 ki add --blob --media-type application/x-tensor tensor.bin
BIG=$(echo "$OUT" | cut -f1)
expect_exit 0 ki show --json "$BIG"
expect_contains "$OUT" "application/x-tensor" "explicit media type"
echo '{"apiVersion": "kernelindex.dev/v1alpha1"}' | ki add --blob - >/dev/null || fail "--blob - stores stdin as a blob"

# corruption: flip one byte of the loose object, then of a manifest kept in the index
hex=${BIG#sha256:}
obj="store/.ki/objects/${hex:0:2}/${hex:2}"
python3 - "$obj" <<'PY'
import sys
p = sys.argv[1]
b = bytearray(open(p, "rb").read())
b[len(b) // 2] ^= 1
open(p, "wb").write(bytes(b))
PY
expect_exit 1 ki verify "$BIG"
expect_contains "$OUT" "corrupt"$'\t'"$BIG" "verify names the corrupt object"
expect_exit 1 ki audit
expect_contains "$OUT" "$BIG" "audit names the corrupt object"
python3 - "$obj" <<'PY'
import sys
p = sys.argv[1]
b = bytearray(open(p, "rb").read())
b[len(b) // 2] ^= 1
open(p, "wb").write(bytes(b))
PY
expect_exit 0 ki audit

PROTO=sha256:7d44d206ad086b4bece35ce31f6531ebb11f07e0d9dcfb74c75be86d3ec02095
python3 - store/.ki/index/data.mdb "$PROTO" <<'PY'
import sys
path, digest = sys.argv[1], sys.argv[2]
key = bytes.fromhex(digest[7:])
b = bytearray(open(path, "rb").read())
i = b.find(key + b"KIOB")
assert i >= 0, "frame of the protocol not found in data.mdb"
b[i + 32 + 18 + 41 + 8] ^= 0x40  # a byte inside the compressed payload
open(path, "wb").write(bytes(b))
PY
expect_exit 1 ki verify "$SEED_RUN"
expect_contains "$OUT" "corrupt"$'\t'"$PROTO" "verify names the corrupt protocol"
expect_exit 1 ki audit
expect_contains "$OUT" "$PROTO" "audit names the corrupt protocol"
# diff of a corrupt object is trouble (5), not "the objects differ" (1).
expect_exit 5 ki diff "$PROTO" BenchmarkProtocol/example-fixed-clock-median
expect_contains "$ERR" "$PROTO" "diff names the corrupt object"
# A FILE that does not exist: 3, as cli.md now says.
expect_exit 3 ki add nosuch.yaml
expect_contains "$ERR" "nosuch.yaml" "add names the missing file"
# A valid WorkloadCase whose tensor name (the schema sets no length limit)
# makes an index key longer than LMDB's 511 bytes is stored, not refused
# (it was "index put: MDB_BAD_VALSIZE", exit 5); audit and reindex keep it.
mkdir -p "$WORK/long" && cd "$WORK/long"
LONG=t$(printf 'a%.0s' {1..499})
printf '%s\n' 'apiVersion: kernelindex.dev/v1alpha1' 'kind: WorkloadCase' 'metadata:' '  name: long-tensor-name' 'spec:' \
  '  operationSpecDigest: sha256:7a3b25630f0628b21ed74b6adb588d28f7e29191f9038bed6f56ed393deefb5b' \
  '  axes: { tokens: 2 }' '  tensors:' "    $LONG:" '      shape: [2]' '      dtype: bf16' '      data:' \
  '        generator: file' \
  "        artifact: { uri: \"https://example.com/x.bin\", digest: \"sha256:$(printf 'ab%.0s' {1..32})\" }" \
  '  correctness:' '    comparator: elementwise_close' >long.yaml
expect_exit 0 ki --store "$WORK/long" init
expect_exit 0 ki --store "$WORK/long" add long.yaml
expect_exit 0 ki --store "$WORK/long" audit --reindex
expect_contains "$OUT" "/spec/tensors/taaaa" "audit names the long reference's field"
expect_exit 0 ki --store "$WORK/long" verify long-tensor-name
expect_contains "$OUT" "/data/artifact/digest" "verify names the whole field"
cd "$WORK"

finish
