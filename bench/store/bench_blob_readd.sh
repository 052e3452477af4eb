#!/usr/bin/env bash
# Re-adding a large blob: `ki add --blob FILE` of a file, then again of the
# same file (the object is already stored), for each ki binary given, on
# the two inputs of bench_blob.sh (random: stored raw; bf16: tensor-like,
# stored zstd). Prints wall and CPU seconds and peak RSS per add, and
# whether the re-add left anything in objects/incoming/.
#
# Usage: bench/store/bench_blob_readd.sh SIZE_MIB KI [KI...]   (Release builds)
set -euo pipefail
mib=$1; shift
kis=()
for k in "$@"; do kis+=("$(readlink -f "$k")"); done
work=$(mktemp -d "${TMPDIR:-/tmp}/ki-readd-bench-XXXXXX")
trap 'rm -rf "$work"' EXIT
cd "$work"

echo "machine: $(uname -m), $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "date:    $(date -u +%Y-%m-%dT%H:%M:%SZ)"
echo "input:   ${mib} MiB per file"
python3 - "$mib" <<'PY'
import os, sys
mib = int(sys.argv[1])
chunk = 16 << 20
table = bytes((0x3D + (b % 5)) | (0x80 if b & 0x80 else 0) for b in range(256))
with open("random.bin", "wb") as r, open("bf16.bin", "wb") as t:
    for _ in range(max(1, mib * (1 << 20) // chunk)):
        r.write(os.urandom(chunk))
        buf = bytearray(os.urandom(chunk))
        buf[1::2] = bytes(buf[1::2]).translate(table)
        t.write(buf)
PY
sync
printf '%-8s %-8s %-6s %8s %8s %9s %s\n' input ki add "wall s" "cpu s" "peak MiB" "result"
for f in random bf16; do
  for i in "${!kis[@]}"; do
    cat "$f.bin" >/dev/null
    rm -rf store && "${kis[$i]}" --store store init >/dev/null
    for add in first again; do
      /usr/bin/time -f "%e %U %S %M" -o time.txt "${kis[$i]}" --store store add --blob "$f.bin" >out.txt
      read -r wall user sys rss <time.txt
      printf '%-8s %-8s %-6s %8.2f %8.2f %9.1f %s\n' "$f" "ki#$((i + 1))" "$add" "$wall" \
        "$(python3 -c "print($user + $sys)")" "$(python3 -c "print($rss / 1024)")" \
        "$(cut -f4 out.txt), incoming: $(ls store/.ki/objects/incoming 2>/dev/null | wc -l)"
    done
  done
done
for i in "${!kis[@]}"; do echo "ki#$((i + 1)): ${kis[$i]##*/} $("${kis[$i]}" --version)"; done
