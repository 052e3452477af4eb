#!/usr/bin/env bash
# Writes cli/hot-symbols.txt: the functions of the ki binary that its short
# commands execute, in the order they first run. The build (CMakeLists.txt,
# KI_ORDER_TEXT) gives the list to lld, which places those functions first
# and together, so a `ki show` maps a few hundred KB of code in a dozen page
# faults instead of touching pages all over the binary.
#
# Run it again after changes that move the hot path (new commands, renamed
# functions); a stale list only costs start-up speed.
#
# usage: scripts/hot-symbols.sh [KI_BINARY]     needs valgrind (apt-get install valgrind)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
KI=$(realpath "${1:-$ROOT/build/ki}")
OUT=$ROOT/cli/hot-symbols.txt
EXPORT=$ROOT/tests/data/kernelindex-export/catalog-2026-08-16-0022af0b.jsonl.zst
command -v valgrind >/dev/null || { echo "hot-symbols: valgrind is not installed" >&2; exit 1; }

T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
export KI_HOME=$T/home
# valgrind cannot reserve the index's usual 64 GiB of address space.
export KI_LMDB_MAP_SIZE=1G
S=$T/store
"$KI" init "$S" >/dev/null
"$KI" --store "$S" import kernelindex "$EXPORT" >/dev/null 2>&1
BIG=$("$KI" --store "$S" rank 39d43c19 --json | python3 -c "import json,sys; print(json.load(sys.stdin)['cohort'])")
RUNS=$("$KI" --store "$S" rank "$BIG" --json | python3 -c "import json,sys; r=json.load(sys.stdin)['ranked']; print(r[5]['run'], r[7]['run'])")
set -- $RUNS
RUN=$1 RUN2=$2
# (through a file: `head` closing the pipe would fail the pipeline)
"$KI" --store "$S" ls --kind WorkloadCase >"$T/ls"
WORKLOAD=$(head -1 "$T/ls" | cut -f1)
"$KI" --store "$S" ls --kind ImplementationRevision >"$T/ls"
IMPL=$(head -1 "$T/ls" | cut -f1)
printf 'hello\n' >"$T/note.txt"

n=0
trace() {
  n=$((n + 1))
  valgrind --tool=callgrind --demangle=no --callgrind-out-file="$T/cg.$n" "$KI" "$@" >/dev/null 2>&1 || true
}
# The order matters little; the set is what the bench and users run most.
trace --store "$S" show "$RUN"
trace --store "$S" show --json "$RUN"
trace --store "$S" show "$WORKLOAD"
trace --store "$S" show "$IMPL"
trace --store "$S" resolve "${RUN:7:10}"
trace --store "$S" rank "$BIG"
trace --store "$S" rank --json "$BIG"
trace --store "$S" ls --kind BenchmarkRun
trace --store "$S" cat "$RUN"
trace --store "$S" diff "$RUN" "$RUN2"
trace --store "$S" records "$BIG"
trace --store "$S" verify "$RUN"
trace --store "$S" add "$T/note.txt"
trace init "$T/fresh"
trace --help

# callgrind names each function once per file ("fn=(id) name" or
# "cfn=(id) name", later "fn=(id)"), and likewise objects ("ob="/"cob=").
python3 - "$KI" "$T" "$n" >"$OUT.tmp" <<'PY'
import re, sys
binary, tmp, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
seen = {}
for i in range(1, count + 1):
    fnames, onames, current = {}, {}, None
    for line in open(f"{tmp}/cg.{i}"):
        m = re.match(r"^(ob|cob)=\((\d+)\)(?: (.*))?$", line.rstrip("\n"))
        if m:
            if m.group(3):
                onames[m.group(2)] = m.group(3)
            if m.group(1) == "ob":
                current = onames.get(m.group(2))
            continue
        m = re.match(r"^(fn|cfn)=\((\d+)\)(?: (.*))?$", line.rstrip("\n"))
        if m:
            if m.group(3):
                fnames[m.group(2)] = m.group(3)
            name = fnames.get(m.group(2), "")
            if m.group(1) == "fn" and current == binary and name and not name.startswith("0x"):
                seen.setdefault(name, None)
print("\n".join(seen))
PY
mv "$OUT.tmp" "$OUT"
echo "hot-symbols: $(wc -l <"$OUT") functions from $n traced commands -> cli/hot-symbols.txt" >&2
