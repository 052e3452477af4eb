#!/usr/bin/env bash
# ki import kernelindex of the export by several builds in turn (A, B, ...,
# A, B, ...), each into a fresh store, so that the machine's load falls on
# all alike: wall, CPU (user + sys) seconds and max RSS per run, then the
# median of each. A build is LABEL=KI, or LABEL=KI:VAR=VALUE,... to run it
# with environment variables set.
#   bench/catalog/import_interleaved.sh ROUNDS LABEL=KI[:VAR=VALUE,...] ...
set -euo pipefail
cd "$(dirname "$0")/../.."
N=$1
shift
FILE=${FILE:-tests/data/kernelindex-export/catalog-2026-08-16-0022af0b.jsonl.zst}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
echo "load average $(cut -d' ' -f1-3 /proc/loadavg); $N rounds; $(date -u +%Y-%m-%dT%H:%MZ)"
printf '%-6s %-12s %8s %8s %8s %6s\n' round build wall_s cpu_s rss_mb load1
for r in $(seq "$N"); do
  for spec in "$@"; do
    label=${spec%%=*}
    rest=${spec#*=}
    ki=${rest%%:*}
    envs=()
    if [ "$rest" != "$ki" ]; then IFS=, read -r -a envs <<<"${rest#*:}"; fi
    rm -rf "$T/s"
    "$ki" init "$T/s" >/dev/null
    env "${envs[@]}" /usr/bin/time -f '%e %U %S %M' -o "$T/time" "$ki" --store "$T/s" import kernelindex "$FILE" \
      >/dev/null 2>"$T/err" || { cat "$T/err" >&2; exit 1; }
    read -r wall user sys rss <"$T/time"
    cpu=$(echo "$user + $sys" | bc)
    printf '%-6s %-12s %8.2f %8.2f %8.0f %6s\n' "$r" "$label" "$wall" "$cpu" "$((rss / 1024))" \
      "$(cut -d' ' -f1 /proc/loadavg)"
    echo "$label $wall $cpu $((rss / 1024))" >>"$T/all"
  done
done
echo "median (wall / CPU s, max RSS MB):"
for spec in "$@"; do
  label=${spec%%=*}
  med() { awk -v l="$label" -v c="$1" '$1 == l {print $c}' "$T/all" | sort -n |
            awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }
  printf '  %-12s %s / %s  %s\n' "$label" "$(med 2)" "$(med 3)" "$(med 4)"
done
echo "load average $(cut -d' ' -f1-3 /proc/loadavg)"
