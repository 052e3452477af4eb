#!/usr/bin/env bash
# What `ki import kernelindex` of the whole export stores, pinned: every
# object it makes (`ki ls`: digest, kind, name; objects are addressed by
# their bytes, so this pins the manifests, documents, facts and import
# objects byte for byte), every comparison group (`ki groups --json`) and
# the ranking of the first 40 kernel groups (`ki rank --json`). A change that
# makes the import faster must not change any of it
# (bench/catalog/import_same.sh compares every table of two stores).
# The digests below were taken with the import of main at 77cb62a.
source "$(dirname "$0")/failfast.bash" "$@"

"$KI" init "$T/s" >/dev/null || fail init
# Imported by a relative name: the import object records the source as given.
(cd "$DATA/kernelindex-export" && "$KI" --store "$T/s" import kernelindex catalog-2026-08-16-0022af0b.jsonl.zst) \
  >"$T/out" 2>"$T/err" || fail "import: $(cat "$T/err")"
K() { "$KI" --store "$T/s" "$@"; }
K ls >"$T/ls" || fail ls
K groups --json >"$T/groups" || fail groups
python3 -c 'import json, sys; [print(g["cohort"]) for g in [g for g in json.load(open(sys.argv[1])) if g["kind"] == "kernel"][:40]]' "$T/groups" >"$T/keys"
: >"$T/ranks"
while read -r k; do K rank --json "$k" >>"$T/ranks" || fail "rank $k"; done <"$T/keys"
check() {  # what file expected-count expected-sha256
  local n h
  n=$(wc -l <"$2")
  h=$(sha256sum <"$2" | cut -d' ' -f1)
  [ "$n $h" = "$3 $4" ] || fail "$1 changed: $n lines, sha256 $h (expected $3 lines, $4)"
}
check "objects (ki ls)" "$T/ls" 48110 492a39d07c651406016775dfb2310d530cd94befc720fcd81c114014008c2715
check "groups (ki groups --json)" "$T/groups" 40259 56fc4228be9b5b2f79c0039265a838d1f10bbf86847b962dd29923d6535a9e7f
check "rankings (ki rank --json of 40 groups)" "$T/ranks" 3408 2c47221a45d7244d3fd76574ccc290461c477486bf0d865296568f85c3158d8c
echo "ok"
