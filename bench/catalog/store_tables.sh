#!/usr/bin/env bash
# The imported export's size, table by table (issue 17.5): the KernelIndex
# export imported into a fresh store by the ki given, then bytes on disk,
# LMDB pages per table (branch + leaf + overflow, every table) and, with
# --frames, where the bytes of `objects` go (frame_sizes.py). The store is
# left at STORE_DIR when given (for bench/catalog/interleave.sh).
#   bench/catalog/store_tables.sh KI [--frames] [STORE_DIR]
set -euo pipefail
cd "$(dirname "$0")/../.."
KI=$1; shift
FRAMES=0
if [ "${1:-}" = --frames ]; then FRAMES=1; shift; fi
EXPORT=tests/data/kernelindex-export/catalog-2026-08-16-0022af0b.jsonl.zst
if [ -n "${1:-}" ]; then S=$1; rm -rf "$S"; mkdir -p "$S"; else S=$(mktemp -d); trap 'rm -rf "$S"' EXIT; fi
echo "$(date -u +%Y-%m-%dT%H:%MZ); load average $(cut -d' ' -f1-3 /proc/loadavg)"
"$KI" init "$S" >/dev/null
/usr/bin/time -f '%e %U %S' -o "$S/.time" "$KI" --store "$S/.ki" import kernelindex "$EXPORT" >/dev/null 2>&1
read -r wall user sys <"$S/.time"; rm "$S/.time"
echo "import: $wall s wall, $(echo "$user + $sys" | bc) s CPU"
"$KI" --store "$S/.ki" add tests/data/kernelindex/fixtures/gpt-o3_cuda_5548d0.gqa_paged_decode_h32_kv4_d128_ps1.manifest.json >/dev/null
B=$(du -sb "$S/.ki" | cut -f1)
P=$(mdb_stat -e "$S/.ki/index" | awk '/Number of pages used/{print $5}')
printf 'bytes on disk: %.2f MB (%s bytes), %s LMDB pages in use; %s\n' "$(echo "$B / 1000000" | bc -l)" "$B" "$P" "$(cat "$S/.ki/FORMAT")"
mdb_stat -a "$S/.ki/index" | awk '/^Status of/{n=$3} /Branch pages/{b=$3} /Leaf pages/{l=$3} /Overflow pages/{o=$3} /Entries/{e=$2; print b+l+o, n, e}' |
  sort -rn | awk '{printf "  %-18s %6d pages %8d entries\n", $2, $1, $3}'
if [ $FRAMES = 1 ]; then mdb_dump -s objects "$S/.ki/index" | python3 bench/catalog/frame_sizes.py; fi
