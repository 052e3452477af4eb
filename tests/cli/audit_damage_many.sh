#!/usr/bin/env bash
# Damaged frames inside the index database of a large store (the imported
# export: 48,110 objects, so audit's object pass runs on two threads where
# the machine has two cores). Audit reports every damaged object, in digest
# order, the same way on every run, and finishes: a damaged manifest that a
# derived index reads (a run's implementation, a facts object) once failed
# the whole audit with "cannot decompress" instead of being reported, because
# the catalog's rebuild read its frame again. Reindex then takes the damaged
# objects out of the index, and audit after it reports each as before. The
# pass on one thread (KI_AUDIT_THREADS=1) reports the same as on two (where
# the catalog's rebuild also runs on the second thread, beside the table
# checks).
source "$(dirname "$0")/testlib.bash" "$@"
EXPORT=$DATA/kernelindex-export/catalog-2026-08-16-0022af0b.jsonl.zst

expect_exit 0 ki init store
expect_exit 0 ki import kernelindex "$EXPORT"
expect_exit 0 ki audit

# Ten frames damaged: one byte a little into the zstd payload of every
# 4,000th compressed frame (a version 5 frame, docs/format.md "Object
# frame": its payload starts after the header's varints and check) in
# data.mdb (an object's payload; the import writes the same bytes every
# time, so these are the same objects every run).
python3 - store/.ki/index/data.mdb <<'PY' || fail "could not damage data.mdb"
import sys
p = sys.argv[1]
b = bytearray(open(p, "rb").read())
def varint(i):
    v, shift = 0, 0
    while True:
        v |= (b[i] & 0x7f) << shift
        shift += 7
        i += 1
        if not b[i - 1] & 0x80:
            return v, i
at, i = [], b.find(b"KIOB\x05")
while i != -1:
    flags = b[i + 7]
    if flags & 1:  # compressed
        _, j = varint(i + 8)
        code = b[j]
        j += 1
        if code == 0:
            n, j = varint(j)
            j += n
        j += (4 if flags & 2 else 0) + 4
        at.append(j)
    i = b.find(b"KIOB\x05", i + 1)
if len(at) < 40000:
    sys.exit("only %d compressed frames in data.mdb" % len(at))
for j in at[1000::4000][:10]:
    b[j + 8] ^= 0x20
open(p, "wb").write(bytes(b))
PY

expect_exit 1 ki audit
first=$OUT
corrupt=$(grep -c $'^corrupt\tsha256:' <<<"$first")
[ "$corrupt" -ge 10 ] || fail "audit reported $corrupt damaged objects, wanted at least the 10 damaged: ${first:0:600}"
expect_contains "$first" "cannot decompress" "audit says why each frame is damaged"
grep $'^corrupt\tsha256:' <<<"$first" | grep 'frame' | cut -f2 >digests
sort -c digests 2>/dev/null || fail "the damaged objects are not reported in digest order: $(head -3 digests)"
[ "$(sort -u digests | wc -l)" = "$(wc -l <digests)" ] || fail "a damaged object is reported twice"
for _ in 1 2; do
  expect_exit 1 ki audit
  [ "$OUT" = "$first" ] || fail "a second audit reported otherwise: $(diff <(echo "$first") <(echo "$OUT") | head -5)"
done
expect_exit 1 ki audit --json
expect_contains "$OUT" '"faults"' "audit --json reports the faults"
json=$OUT
# The pass on one thread (KI_AUDIT_THREADS=1) reports the same bytes as on
# two: the threads change who decodes what, never what is reported.
export KI_AUDIT_THREADS=1
expect_exit 1 ki audit
[ "$OUT" = "$first" ] || fail "audit on one thread reported otherwise: $(diff <(echo "$first") <(echo "$OUT") | head -5)"
expect_exit 1 ki audit --json
[ "$OUT" = "$json" ] || fail "audit --json on one thread reported otherwise: $(diff <(echo "$json") <(echo "$OUT") | head -5)"
unset KI_AUDIT_THREADS

# Reindex takes them out of the index, saying so; audit after it reports
# the same objects and still finishes.
expect_exit 1 ki audit --reindex
expect_contains "$OUT" "not indexed" "reindex says the damaged objects are not indexed"
while read -r d; do
  expect_contains "$OUT" "$d" "reindex reports $d"
done <digests
expect_exit 1 ki audit
finish
