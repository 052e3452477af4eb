#!/usr/bin/env bash
# The allocator of the whole-store commands (cli/prefault.cc, UseBigHeap):
# `ki audit`, `ki import`, `ki export`, `ki gc`, `ki report` re-execute
# themselves once with the mimalloc library CMake found preloaded; short
# commands (show, rank) stay on glibc's malloc; KI_MALLOC=system keeps
# glibc's for all. Seen through mimalloc's own MIMALLOC_SHOW_STATS (its heap
# statistics on stderr at exit). Both allocators give the same answers.
# Exit 77 (skipped) when ki was built without mimalloc (-DKI_MIMALLOC=OFF)
# or the library it names is not on this machine.
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/testlib.bash" "$@"
LIB=$(grep -ao '/[[:alnum:]_./+-]*libmimalloc\.so[.0-9]*' "$KI_BIN" | head -1)
if [ -z "$LIB" ]; then
  echo "skipped: this ki was built without mimalloc (-DKI_MIMALLOC=OFF)"
  exit 77
fi
if [ ! -r "$LIB" ]; then
  echo "skipped: $LIB, which this ki preloads, is not on this machine (apt-get install libmimalloc2.0)"
  exit 77
fi
SLICE="$DATA/kernelindex-export/catalog-2026-08-16-0022af0b.slice.jsonl"

stats_in() { grep -q "heap stats" <<<"$1"; }

ki init "$KI_STORE" >/dev/null || fail init
export MIMALLOC_SHOW_STATS=1
expect_exit 0 ki import kernelindex "$SLICE"
stats_in "$ERR" || fail "ki import runs on mimalloc: ${ERR:0:300}"
IMPORTED=$(sed 's/ in [0-9.]* s$//' <<<"$OUT")
echo "a log line" >log.txt
expect_exit 0 ki add log.txt
stats_in "$ERR" && fail "ki add of one file stays on glibc's malloc"
RUN=$(ki ls --kind BenchmarkRun | head -1 | cut -f1)
expect_exit 0 ki audit
stats_in "$ERR" || fail "ki audit runs on mimalloc"
AUDIT=$OUT
expect_exit 0 ki show "$RUN"
stats_in "$ERR" && fail "ki show stays on glibc's malloc"
SHOW=$OUT
expect_exit 0 ki rank "$RUN" --json
stats_in "$ERR" && fail "ki rank stays on glibc's malloc"
expect_exit 0 ki export kernelindex "$WORK/export-mi.jsonl"
stats_in "$ERR" || fail "ki export runs on mimalloc"

# KI_MALLOC=system: glibc's malloc everywhere, the same answers.
export KI_MALLOC=system
expect_exit 0 ki audit
stats_in "$ERR" && fail "KI_MALLOC=system: ki audit on glibc's malloc"
[ "$OUT" = "$AUDIT" ] || fail "audit's report is the same on both allocators"
expect_exit 0 ki export kernelindex "$WORK/export-sys.jsonl"
stats_in "$ERR" && fail "KI_MALLOC=system: ki export on glibc's malloc"
cmp -s "$WORK/export-mi.jsonl" "$WORK/export-sys.jsonl" || fail "the export is the same bytes on both allocators"
ki init "$WORK/sys" >/dev/null
expect_exit 0 ki --store "$WORK/sys" import kernelindex "$SLICE"
stats_in "$ERR" && fail "KI_MALLOC=system: ki import on glibc's malloc"
[ "$(sed 's/ in [0-9.]* s$//' <<<"$OUT")" = "$IMPORTED" ] || fail "import's summary is the same on both allocators"
unset KI_MALLOC

# A caller's own LD_PRELOAD and GLIBC_TUNABLES do not stop it.
LD_PRELOAD="$LIB" GLIBC_TUNABLES=glibc.malloc.tcache_count=0 expect_exit 0 ki audit
[ "$OUT" = "$AUDIT" ] || fail "audit with the caller's LD_PRELOAD and GLIBC_TUNABLES"
finish
