#!/usr/bin/env bash
# A store written before frame version 3 (store format 2, no dictionaries;
# tests/data/store-format2, made by ki at a1c4d9e) opens and reads with
# today's ki; the first write makes it format 9 (3's dictionaries, 4's
# names without barenames) and stores the dictionary
# its new frames use; old and new frames read, audit and reindex alike.
source "$(dirname "$0")/failfast.bash" "$@"
SEED=sha256:215ac4f9a26728e69bfeb464d46e76004c0f51a7b4a665eeed074888b5a99e7f
OP=sha256:7a3b25630f0628b21ed74b6adb588d28f7e29191f9038bed6f56ed393deefb5b
LOG=sha256:28802d01a34cd2936510c91f40c6059c5a6c37828f24ab84daf0805a16dafd2c
tar xzf "$DATA/store-format2/store-v2.tar.gz" -C "$T"
grep -qx "ki-store 2" "$T/.ki/FORMAT" || fail "the fixture is format 2"
K() { "$KI" --store "$T/.ki" "$@"; }
same_digest() {  # the bytes ki cat prints hash to the digest asked for
  expect_rc 0 "cat $1" K cat "$1"
  [ "sha256:$(sha256sum <"$T/out" | cut -d' ' -f1)" = "$1" ] || fail "ki cat $1 printed other bytes"
}

# 1. Read as it is: nothing written, FORMAT left alone; ranking and groups
# as the ki that wrote the store printed them.
for d in $SEED $OP $LOG; do same_digest $d; done
expect_rc 0 "show the seed" K show $SEED
expect_rc 0 "verify the seed" K verify $SEED
same_json() {  # $1: a file of tests/data/store-format2; rank --json's later fields left out
  python3 - "$T/out" "$DATA/store-format2/$1" <<'PY' || fail "$1: not as format 2's ki printed it"
import json, sys
def strip(x):
    if isinstance(x, dict):
        return {k: strip(v) for k, v in x.items() if k not in ("speedupFactor", "disputed")}
    if isinstance(x, list):
        return [strip(v) for v in x]
    return x
assert strip(json.load(open(sys.argv[1]))) == strip(json.load(open(sys.argv[2])))
PY
}
expect_rc 0 "rank" K rank ae5aacaf --json
same_json rank_ae5.json
expect_rc 0 "groups" K groups --json
same_json groups.json
grep -qx "ki-store 2" "$T/.ki/FORMAT" || fail "reading rewrote FORMAT"

# 2. A write: FORMAT becomes 3, the new run's frame uses a dictionary, which
# the store now holds as an object of its own.
expect_rc 0 "add a run" K add "$DATA/kernelindex/examples/benchmark-run.yaml"
grep -qx "ki-store $NOW_FORMAT" "$T/.ki/FORMAT" || fail "the first write makes the store format $NOW_FORMAT (today's): $(cat "$T/.ki/FORMAT")"
NEW=$(awk '$2 == "BenchmarkRun" {print $1; exit}' "$T/out")
[ -n "$NEW" ] || fail "ki add printed the run: $(cat "$T/out")"
same_digest "$NEW"
# The built-in dictionary of BenchmarkRuns (src/odb/dictionaries), by its digest.
DICT=sha256:$(sha256sum <"$DATA/../../src/odb/dictionaries/manifest-8.zdict" | cut -d' ' -f1)
expect_rc 0 "show the run dictionary" K show "$DICT" --json
grep -q '"mediaType": "application/vnd.ki.zstd-dictionary"' "$T/out" || fail "the store holds the dictionary: $(cat "$T/out")"
same_digest "$DICT"
expect_rc 0 "ls" K ls
grep -q "$DICT" "$T/out" && fail "ki ls lists the store's own dictionary"

# 3. Old frames and new read, audit and reindex alike; the upgraded
# catalog tables rank as before (catalog.cohort keeps members only now).
for d in $SEED $OP $LOG; do same_digest $d; done
expect_rc 0 "rank after the upgrade" K rank ae5aacaf --json
same_json rank_ae5.json
expect_rc 0 "audit" K audit
grep -q " 0 faults" "$T/out" || fail "audit: $(tail -1 "$T/out")"
expect_rc 0 "audit --reindex" K audit --reindex
grep -q " 0 faults" "$T/out" || fail "audit --reindex: $(tail -1 "$T/out")"
for d in $SEED $OP $LOG $NEW; do same_digest $d; done
expect_rc 0 "rank after reindex" K rank ae5aacaf --json
same_json rank_ae5.json
expect_rc 0 "groups after reindex" K groups --json
same_json groups.json
echo "store_format2: ok"
