#!/usr/bin/env bash
# Two ki binaries, each on a store it wrote, timed command by command in
# alternation (A, B, A, B, ...) so that the machine's load falls on both
# alike: min and median wall milliseconds per command and binary.
#   bench/catalog/interleave.sh KI_A STORE_A KI_B STORE_B [ROUNDS]
# Each store has the KernelIndex export imported and the seed run added.
set -euo pipefail
KA=$1 SA=$2 KB=$3 SB=$4 N=${5:-40}
SEED=215ac4f9
cmds=("cat $SEED" "cat BenchmarkProtocol/flashinfer-bench-trace" "rank $SEED" "show $SEED" "resolve flashinfer-bench-trace")
echo "load average $(cut -d' ' -f1-3 /proc/loadavg); $N rounds; $(date -u +%Y-%m-%dT%H:%MZ)"
for c in "${cmds[@]}"; do
  : >/tmp/interleave.a; : >/tmp/interleave.b
  for _ in $(seq "$N"); do
    for side in a b; do
      if [ $side = a ]; then K=$KA S=$SA; else K=$KB S=$SB; fi
      s=$(date +%s%N); $K --store "$S" $c >/dev/null 2>&1; e=$(date +%s%N)
      echo $(( (e - s) / 1000 )) >>/tmp/interleave.$side
    done
  done
  stats() { sort -n "$1" | awk '{v[NR]=$1} END {printf "%.1f / %.1f", v[1]/1000, v[int((NR+1)/2)]/1000}'; }
  printf '  %-48s A %s   B %s ms (min / median)\n' "ki $c" "$(stats /tmp/interleave.a)" "$(stats /tmp/interleave.b)"
done
echo "load average $(cut -d' ' -f1-3 /proc/loadavg)"
rm -f /tmp/interleave.a /tmp/interleave.b
