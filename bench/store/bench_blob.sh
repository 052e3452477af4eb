#!/usr/bin/env bash
# Large blobs, side by side with their anchors in one run: `ki add --blob`
# (hash + compress + durable write, streamed) and `ki cat` (decompress +
# re-hash) of one file, against the same work done by `sha256sum` and
# `zstd -3` on that file. Prints wall time, throughput, peak RSS and ratios.
#
# Two inputs of SIZE_MIB each:
#   random : incompressible bytes (ki stores them raw after trying zstd)
#   bf16   : tensor-like bf16 values: each high byte (sign + exponent) drawn
#            from a few values, each low byte random, as a normal-ish tensor
#            looks to a compressor
#
# Usage: bench/store/bench_blob.sh [BUILD_DIR] [SIZE_MIB]   (Release build expected)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=$(readlink -f "${1:-$here/../../build}")
mib=${2:-1024}
ki="$build/ki"
work=$(mktemp -d "${TMPDIR:-/tmp}/ki-blob-bench-XXXXXX")
trap 'rm -rf "$work"' EXIT
cd "$work"

echo "machine: $(uname -m), $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo)"
echo "date:    $(date -u +%Y-%m-%dT%H:%M:%SZ)"
echo "ki:      $("$ki" --version)   $(zstd --version | sed 's/^\*\*\* //; s/, by.*//')   sha256sum $(sha256sum --version | head -1 | awk '{print $NF}')"
echo "input:   ${mib} MiB per file"
echo

python3 - "$mib" <<'PY'
import os, sys
mib = int(sys.argv[1])
chunk = 16 << 20
# high bytes of bf16 values of a tensor with |x| mostly in [2^-4, 2^3):
# sign bit either way, exponents 0x3D..0x41 (as the byte holding them)
table = bytes((0x3D + (b % 5)) | (0x80 if b & 0x80 else 0) for b in range(256))
with open("random.bin", "wb") as r, open("bf16.bin", "wb") as t:
    for _ in range(mib * (1 << 20) // chunk):
        r.write(os.urandom(chunk))
        buf = bytearray(os.urandom(chunk))
        buf[1::2] = bytes(buf[1::2]).translate(table)  # little-endian: high byte second
        t.write(buf)
PY
sync

# measure LABEL CMD...: prints "LABEL|wall_s|peak_rss_kib". The input is read
# once before the commands run, so each starts from the same warm page cache
# (this measures the tools, not the disk).
measure() {
  local label=$1; shift
  /usr/bin/time -f "%e %M" -o "$work/time.txt" "$@" >/dev/null
  read -r wall rss <"$work/time.txt"
  echo "$label|$wall|$rss"
}

printf '%-8s %-34s %9s %10s %10s\n' input command "wall s" "MB/s" "peak MiB"
for f in random bf16; do
  cat "$f.bin" >/dev/null
  rm -rf store && "$ki" --store store init >/dev/null
  bytes=$(stat -c %s "$f.bin")
  declare -A wall rss
  while IFS='|' read -r label w r; do
    wall[$label]=$w; rss[$label]=$r
    printf '%-8s %-34s %9.2f %10.0f %10.1f\n' "$f" "$label" "$w" \
      "$(python3 -c "print($bytes / 1e6 / max($w, 1e-3))")" "$(python3 -c "print($r / 1024)")"
  done < <(
    measure "sha256sum FILE" sha256sum "$f.bin"
    measure "zstd -3 -c FILE" zstd -q -3 -T1 -c "$f.bin"
    measure "ki add --blob FILE" "$ki" --store store add --blob "$f.bin"
    zstd -q -3 -T1 -c "$f.bin" >"$f.bin.zst"
    measure "zstd -dc FILE.zst" zstd -q -dc "$f.bin.zst"
    digest=$("$ki" --store store add --blob "$f.bin" | cut -f1)
    measure "ki cat DIGEST" "$ki" --store store cat "$digest"
    measure "ki verify DIGEST" "$ki" --store store verify "$digest"
    rm -rf store2 && "$ki" --store store2 init >/dev/null
    measure "ki add --blob - (pipe)" sh -c "cat '$f.bin' | '$ki' --store store2 add --blob -"
    measure "cat FILE, piped to sha256sum" sh -c "cat '$f.bin' | sha256sum"
  )
  anchor_add=$(python3 -c "print(${wall[sha256sum FILE]} + ${wall[zstd -3 -c FILE]})")
  echo "  ratios ($f): ki add / (sha256sum + zstd -3) = $(python3 -c "print(f'{${wall[ki add --blob FILE]} / $anchor_add:.2f}')")," \
       "ki cat / zstd -dc = $(python3 -c "print(f'{${wall[ki cat DIGEST]} / max(${wall[zstd -dc FILE.zst]}, 1e-3):.2f}')")," \
       "pipe add / (cat, piped to sha256sum) = $(python3 -c "print(f'{${wall[ki add --blob - (pipe)]} / max(${wall[cat FILE, piped to sha256sum]}, 1e-3):.2f}')")"
  echo "  stored: $(du -sb store/.ki/objects | cut -f1) bytes under objects/ for $bytes input bytes; zstd -3: $(stat -c %s "$f.bin.zst")"
  rm -f "$f.bin.zst"
  unset wall rss
done
