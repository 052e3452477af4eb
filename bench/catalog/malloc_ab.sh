#!/usr/bin/env bash
# The allocator of ki's whole-store commands, side by side: one ki binary
# run with KI_MALLOC=system (glibc's malloc, A) and as it is (mimalloc
# preloaded by the re-exec of cli/prefault.cc, B), in alternation (A, B,
# A, B, ...) so that the machine's load falls on both alike. Per round: `ki import kernelindex` of the export into a fresh
# store (CPU seconds from perf's task-clock, wall, page faults, peak RSS),
# `ki audit` of one store both read, and `ki show` / `ki rank` of the seed
# (wall, best and median of 20: short commands stay on glibc's malloc either
# way, so they must come out alike). Prints medians and B/A ratios.
#   bench/catalog/malloc_ab.sh [KI] [ROUNDS]   (default build/ki, 5)
# Needs perf (linux-perf) for task-clock; /usr/bin/time for RSS.
set -euo pipefail
cd "$(dirname "$0")/../.."
K=$(readlink -f "${1:-build/ki}") N=${2:-5}
EXPORT=tests/data/kernelindex-export/catalog-2026-08-16-0022af0b.jsonl.zst
SEEDFILE=tests/data/kernelindex/fixtures/gpt-o3_cuda_5548d0.gqa_paged_decode_h32_kv4_d128_ps1.manifest.json
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
LIB=$(grep -ao '/[[:alnum:]_./+-]*libmimalloc\.so[.0-9]*' "$K" | head -1)
[ -n "$LIB" ] && [ -r "$LIB" ] || { echo "this ki preloads no mimalloc (built with -DKI_MIMALLOC=OFF, or the library is missing)"; exit 1; }
echo "ki $(git rev-parse --short HEAD), mimalloc: $LIB"
echo "machine: $(nproc) cores, $(free -g | awk '/Mem:/{print $2}') GiB; $(date -u +%Y-%m-%dT%H:%MZ); load average $(cut -d' ' -f1-3 /proc/loadavg); $N rounds"
"$K" init "$T/shared" >/dev/null
"$K" --store "$T/shared" import kernelindex "$EXPORT" >/dev/null 2>&1
"$K" --store "$T/shared" add "$SEEDFILE" >/dev/null
# one line per measurement: side metric value
measure() {  # measure SIDE (A: KI_MALLOC=system)
  local side=$1 k=$K s e
  if [ "$side" = A ]; then export KI_MALLOC=system; else unset KI_MALLOC; fi
  rm -rf "$T/imp"
  "$k" init "$T/imp" >/dev/null
  perf stat -x, -e task-clock,page-faults -o "$T/ps" /usr/bin/time -f '%e %M' -o "$T/tm" \
    "$k" --store "$T/imp" import kernelindex "$EXPORT" >/dev/null 2>&1
  echo "$side import_cpu_s $(awk -F, '/task-clock/{print $1 / 1000}' "$T/ps")"
  echo "$side import_faults $(awk -F, '/page-faults/{print $1}' "$T/ps")"
  echo "$side import_wall_s $(cut -d' ' -f1 "$T/tm")"
  echo "$side import_rss_mb $(awk '{print $2 / 1024}' "$T/tm")"
  perf stat -x, -e task-clock -o "$T/ps" /usr/bin/time -f '%e' -o "$T/tm" "$k" --store "$T/shared" audit >/dev/null
  echo "$side audit_cpu_s $(awk -F, '/task-clock/{print $1 / 1000}' "$T/ps")"
  echo "$side audit_wall_s $(cat "$T/tm")"
  for c in show rank; do
    for _ in $(seq 20); do
      s=$(date +%s%N); "$k" --store "$T/shared" $c 215ac4f9 >/dev/null; e=$(date +%s%N)
      echo "$side ${c}_ms $(echo "($e - $s) / 1000000" | bc -l)"
    done
  done
}
for _ in $(seq "$N"); do
  measure A >>"$T/out"
  measure B >>"$T/out"
done
python3 - "$T/out" <<'PY'
import statistics, sys
v = {}
for line in open(sys.argv[1]):
    side, metric, x = line.split()
    v.setdefault(metric, {}).setdefault(side, []).append(float(x))
print(f"{'':16} {'A (glibc) median':>18} {'B (mimalloc) median':>20} {'B/A':>6}   min A / min B")
for metric, s in v.items():
    a, b = statistics.median(s["A"]), statistics.median(s["B"])
    print(f"{metric:16} {a:18.3f} {b:20.3f} {b / a:6.3f}   {min(s['A']):.3f} / {min(s['B']):.3f}")
PY
echo "load average $(cut -d' ' -f1-3 /proc/loadavg)"
