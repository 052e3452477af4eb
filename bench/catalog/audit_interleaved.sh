#!/usr/bin/env bash
# ki audit of one store by two builds of ki, interleaved (old, new, old,
# new, ...) so that the load of a shared machine falls on both alike:
# per round the wall and CPU (user+sys) seconds of each, the load average,
# and whether both reports are the same bytes (they must be).
#   bench/catalog/audit_interleaved.sh OLD_KI NEW_KI STORE_DIR [ROUNDS] [ARGS...]
# STORE_DIR: a store with the KernelIndex export imported (size_vs_git.sh
# makes one; `ki init S && ki --store S import kernelindex EXPORT`).
# AUDIT_GIT_REPO=DIR: each round also times `git fsck --full` of DIR (a
# repository of the same objects, as size_vs_git.sh builds), so that the
# ratio ki/git comes from the same load.
set -euo pipefail
OLD=$1 NEW=$2 S=$3 N=${4:-5}
shift $(( $# < 4 ? $# : 4 ))
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
echo "machine: $(nproc) cores; $(date -u +%Y-%m-%dT%H:%MZ); load average $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-5s %-4s %8s %8s %8s  %s\n' round ki wall user sys load1
for r in $(seq 1 "$N"); do
  for which in old new; do
    KI=$OLD; [ "$which" = new ] && KI=$NEW
    /usr/bin/time -f '%e %U %S' -o "$T/t" "$KI" --store "$S" audit "$@" >"$T/$which.out" 2>&1 || true
    read -r wall user sys < <(tail -1 "$T/t")
    printf '%-5s %-4s %8s %8s %8s  %s\n' "$r" "$which" "$wall" "$user" "$sys" "$(cut -d' ' -f1 /proc/loadavg)"
  done
  if [ -n "${AUDIT_GIT_REPO:-}" ]; then
    /usr/bin/time -f '%e %U %S' -o "$T/t" git -C "$AUDIT_GIT_REPO" fsck --full >/dev/null 2>&1 || true
    read -r wall user sys < <(tail -1 "$T/t")
    printf '%-5s %-4s %8s %8s %8s  %s\n' "$r" git "$wall" "$user" "$sys" "$(cut -d' ' -f1 /proc/loadavg)"
  fi
  cmp -s "$T/old.out" "$T/new.out" || { echo "round $r: the two reports differ"; diff "$T/old.out" "$T/new.out" | head -20; }
done
