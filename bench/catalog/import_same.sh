#!/usr/bin/env bash
# Does a change to the import leave its output as it was? Imports the
# KernelIndex export (or FILE) with two ki binaries into two fresh stores
# and compares what they hold: every LMDB table dumped whole (mdb_dump in
# hex: its -p form prints a backslash byte bare, so two values can print
# alike), `meta` with the added time in each value masked and `added`
# (format 5 and before) by its keys only (both hold the time the object
# came), the loose object files, and `ki rank --json` of every kernel
# comparison group.
#   bench/catalog/import_same.sh OLD_KI NEW_KI [FILE]
# Exit 0 and "same" when nothing differs; otherwise the first differences.
set -euo pipefail
cd "$(dirname "$0")/../.."
OLD=$1 NEW=$2
FILE=${3:-tests/data/kernelindex-export/catalog-2026-08-16-0022af0b.jsonl.zst}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
# One copy of the input, imported by one relative name in both stores: the
# import object records the source as it was given.
IN=input.${FILE##*.}
cp "$FILE" "$T/$IN"
# Masks the added time of `meta` values (format 6: flags u8 with 0x80, kind
# u8, media type code u8, then LEB128 raw size, stored size and added time;
# docs/format.md "Index"): it is written as 0, every other byte kept. Reads
# mdb_dump's hex lines; a value that is not format 6 passes unchanged.
MASK=$T/mask_meta.py
cat >"$MASK" <<'PY'
import sys

def mask(v):
    if len(v) < 3 or not v[0] & 0x80:
        return v
    i = 3
    for field in range(3):
        j = i
        while j < len(v) and v[j] & 0x80:
            j += 1
        if j >= len(v):
            return v  # truncated: shown as it is
        if field == 2:
            return v[:i] + b'\x00' + v[j + 1:]
        i = j + 1
    return v

n = 0
for line in sys.stdin:
    if not line.startswith(' '):
        sys.stdout.write(line)
        continue
    n += 1
    # Key and value lines alternate; values are the even ones.
    if n % 2 == 0:
        line = ' ' + mask(bytes.fromhex(line.strip())).hex() + '\n'
    sys.stdout.write(line)
PY
snapshot() {  # KI DIR: import into DIR/s, then DIR/tables, DIR/loose, DIR/ranks
  local ki=$1 d=$2
  mkdir -p "$d"
  "$ki" init "$d/s" >/dev/null
  (cd "$T" && "$ki" --store "$d/s" import kernelindex "$IN" >"$d/import.out")
  local idx=$d/s/.ki/index
  : >"$d/tables"
  for t in $(mdb_dump -l "$idx" | sort); do
    if [ "$t" = added ]; then
      # Keys only: after its header mdb_dump prints a key line and a value
      # line in turn.
      echo "== added (keys)" >>"$d/tables"
      mdb_dump -s added "$idx" | sed -n '/^HEADER=END/,/^DATA=END/p' | awk 'NR > 1 && NR % 2 == 0' >>"$d/tables"
    elif [ "$t" = meta ]; then
      echo "== meta (added time masked)" >>"$d/tables"
      mdb_dump -s meta "$idx" | sed -n '/^HEADER=END/,$p' | python3 "$MASK" >>"$d/tables"
    else
      echo "== $t" >>"$d/tables"
      mdb_dump -s "$t" "$idx" | sed -n '/^HEADER=END/,$p' >>"$d/tables"
    fi
  done
  (cd "$d/s/.ki/objects" && find . -type f ! -path './incoming/*' -exec sha256sum {} + | sort) >"$d/loose"
  "$ki" --store "$d/s" groups --json >"$d/groups.json"
  python3 -c 'import json, sys; [print(g["cohort"]) for g in json.load(open(sys.argv[1])) if g["kind"] == "kernel"]' "$d/groups.json" >"$d/keys"
  : >"$d/ranks"
  while read -r k; do "$ki" --store "$d/s" rank --json "$k" >>"$d/ranks"; done <"$d/keys"
}
snapshot "$OLD" "$T/old"
snapshot "$NEW" "$T/new"
same=1
for f in tables loose keys ranks; do
  if ! cmp -s "$T/old/$f" "$T/new/$f"; then
    same=0
    echo "differs: $f"
    diff "$T/old/$f" "$T/new/$f" | head -20
  fi
done
echo "groups: $(wc -l <"$T/old/keys") old, $(wc -l <"$T/new/keys") new; table dump lines: $(wc -l <"$T/old/tables")"
[ "$same" = 1 ] && echo same
[ "$same" = 1 ]
