#!/usr/bin/env bash
# Issue 17's size and speed figures, ki beside git on the same objects:
# the KernelIndex export imported into a fresh store (bytes on disk, import
# time), then every object ki holds written into a git repository as blobs
# (git fast-import, then git repack -adf: pack and index), and the times of
# ki show / rank / cat / audit against git cat-file and git fsck --full.
#   bench/catalog/size_vs_git.sh [BUILD_DIR]   (default build/)
set -euo pipefail
cd "$(dirname "$0")/../.."
B=${1:-build}
KI=$B/ki
EXPORT=tests/data/kernelindex-export/catalog-2026-08-16-0022af0b.jsonl.zst
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
now() { date +%s.%N; }
best() {  # best of 5 wall times of a command, in seconds
  local b=999 s e
  for _ in 1 2 3 4 5; do s=$(now); "$@" >/dev/null 2>&1; e=$(now); b=$(echo "$e - $s < $b" | bc -l | grep -q 1 && echo "$e - $s" | bc -l || echo "$b"); done
  printf '%.4f' "$b"
}
echo "machine: $(nproc) cores, $(free -g | awk '/Mem:/{print $2}') GiB; $(date -u +%Y-%m-%dT%H:%MZ); ki $(git rev-parse --short HEAD); load average $(cut -d' ' -f1-3 /proc/loadavg)"
"$KI" init "$T/s" >/dev/null
s=$(now); /usr/bin/time -f '%U %S' -o "$T/cpu" "$KI" --store "$T/s" import kernelindex "$EXPORT" >/dev/null 2>&1; e=$(now)
printf 'import kernelindex (full export): %.2f s wall, %.2f s CPU\n' "$(echo "$e - $s" | bc -l)" "$(awk '{print $1 + $2}' "$T/cpu")"
KIB=$(du -sb "$T/s/.ki" | cut -f1)
PAGES=$(mdb_stat -e "$T/s/.ki/index" | awk '/Number of pages used/{print $5}')
OBJ=$("$KI" --store "$T/s" ls | wc -l)
git init -q "$T/g"
"$B/bench_dump_objects" "$T/s/.ki" 2>/dev/null | git -C "$T/g" fast-import --quiet
# The blobs are made reachable (one tree naming them all, one commit): git
# repack -a drops unreachable objects, which left an empty pack.
git -C "$T/g" cat-file --batch-all-objects --batch-check='%(objecttype) %(objectname)' |
  awk '$1 == "blob" {printf "100644 blob %s\t%s\n", $2, $2}' >"$T/tree.txt"
TREE=$(git -C "$T/g" mktree <"$T/tree.txt")
git -C "$T/g" update-ref refs/heads/all "$(git -C "$T/g" -c user.name=b -c user.email=b@b commit-tree "$TREE" -m all)"
git -C "$T/g" repack -adfq
# Less the tree and commit that made them reachable (their packed bytes).
EXTRA=$(git -C "$T/g" verify-pack -v "$T"/g/.git/objects/pack/*.idx | awk '$2 == "tree" || $2 == "commit" {n += $4} END {print n + 0}')
GITB=$(( $(du -sb "$T/g/.git/objects/pack" | cut -f1) - EXTRA ))
echo "objects: $OBJ"
# Pages per table (leaf + branch + overflow), the largest first.
mdb_stat -a "$T/s/.ki/index" | awk '/^Status of/{n=$3} /Branch pages/{b=$3} /Leaf pages/{l=$3} /Overflow pages/{o=$3; print b+l+o, n}' |
  sort -rn | head -12 | awk '{printf "  %-22s %6d pages\n", $2, $1}'
mdb_stat -ef "$T/s/.ki/index" | awk '/Free pages/{print "  free pages: " $3}' 
printf 'bytes on disk: ki %.1f MB (.ki, %s LMDB pages in use), git %.1f MB (pack + index): ki/git %.2f\n' \
  "$(echo "$KIB / 1000000" | bc -l)" "$PAGES" "$(echo "$GITB / 1000000" | bc -l)" "$(echo "$KIB / $GITB" | bc -l)"
K() { "$KI" --store "$T/s" "$@"; }
SEED=215ac4f9
K add tests/data/kernelindex/fixtures/gpt-o3_cuda_5548d0.gqa_paged_decode_h32_kv4_d128_ps1.manifest.json >/dev/null
OBJHEX=$(K resolve BenchmarkProtocol/flashinfer-bench-trace | cut -d: -f2)
GITOBJ=$(K cat BenchmarkProtocol/flashinfer-bench-trace | git -C "$T/g" hash-object --stdin)
echo "best of 5, wall seconds:"
echo "  ki show seed        $(best K show $SEED)"
echo "  ki rank seed        $(best K rank $SEED)"
echo "  ki cat protocol     $(best K cat "sha256:$OBJHEX")   git cat-file -p  $(best git -C "$T/g" cat-file -p "$GITOBJ")"
A=$(best K audit); G=$(best git -C "$T/g" fsck --full)
echo "  ki audit            $A   git fsck --full  $G   ki/git $(echo "$A / $G" | bc -l | cut -c1-5)"
