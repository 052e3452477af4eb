#!/usr/bin/env bash
# Store benchmarks, side by side with their anchors in one run:
#   1. bulk add of N small manifests (~3.9 KB): `ki add` vs `git hash-object -w`
#   2. whole-store check: `ki audit` vs `git fsck --full` on the same objects
#   3. SHA-256 throughput: ki's hasher (OpenSSL SHA256_*) vs sha256sum
#   4. `ki resolve` / `ki show` process time (target < 10 ms)
# Usage: bench/store/bench_store.sh [BUILD_DIR] [N]   (Release build expected)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=$(readlink -f "${1:-$here/../../build}")
n=${2:-10000}
ki="$build/ki"
hashbench="$build/bench_sha256"
work=$(mktemp -d "${TMPDIR:-/tmp}/ki-bench-XXXXXX")
trap 'rm -rf "$work"' EXIT
cd "$work"

now() { echo "$EPOCHREALTIME"; }  # no process start: `date` costs ms on a VM
elapsed() { python3 -c "print(f'{$2 - $1:.3f}')"; }
ratio() { python3 -c "print(f'{$1 / $2:.2f}')"; }

echo "machine: $(uname -m), $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
echo "date:    $(date -u +%Y-%m-%dT%H:%M:%SZ)"
echo "ki:      $("$ki" --version)   git: $(git --version | cut -d' ' -f3)"
echo

# N distinct SoftwareProject-free manifests of about 3.9 KB: BenchmarkRun
# documents shaped like the catalog's, each with its own numbers.
python3 - "$n" <<'PY'
import json, os, random, sys
n = int(sys.argv[1])
random.seed(7)
os.mkdir("m")
for i in range(n):
    doc = {
        "apiVersion": "kernelindex.dev/v1alpha1", "kind": "BenchmarkRun",
        "metadata": {"name": f"bench-run-{i:06d}", "title": f"bench run {i} · " + "gqa_paged_decode " * 8,
                     "description": "synthetic benchmark run for the store benchmark; " * 30},
        "spec": {
            "implementationDigest": "sha256:" + os.urandom(32).hex(),
            "workloadDigest": "sha256:" + os.urandom(32).hex(),
            "protocolDigest": "sha256:" + os.urandom(32).hex(),
            "environmentDigest": "sha256:" + os.urandom(32).hex(),
            "status": "passed",
            "observedAt": "2026-08-01T12:00:00Z",
            "timing": {"primaryStatistic": "median",
                       "latencyNs": {"median": random.randint(1000, 10**7), "mean": random.randint(1000, 10**7)}},
            "correctness": {"comparator": "allclose", "maximumAbsoluteError": random.random() / 100},
            "evidence": {"logs": {"uri": "kernelindex:artifact/x", "digest": "sha256:" + os.urandom(32).hex()}},
        },
    }
    open(f"m/r{i:06d}.json", "w").write(json.dumps(doc, indent=2))
PY
bytes=$(cat m/*.json | wc -c)
echo "input: $n manifests, $((bytes / n)) bytes on average"
sync

# 1. bulk add
git init -q g
t0=$(now)
(cd m && ls | git --git-dir=../g/.git hash-object -w --stdin-paths >/dev/null)
t1=$(now)
git_add=$(elapsed "$t0" "$t1")
"$ki" init s >/dev/null
t0=$(now)
(cd m && "$ki" --store ../s add ./*.json >/dev/null)
t1=$(now)
ki_add=$(elapsed "$t0" "$t1")
echo "bulk add:  ki $ki_add s ($(python3 -c "print(int($n/$ki_add))") files/s)   git hash-object -w $git_add s ($(python3 -c "print(int($n/$git_add))") files/s)   ki is $(ratio "$git_add" "$ki_add")x git (target >= 3x)"

# 2. audit vs fsck (same documents in both; ki also holds the canonical manifests)
t0=$(now)
git --git-dir=g/.git fsck --full >/dev/null 2>&1
t1=$(now)
git_fsck=$(elapsed "$t0" "$t1")
t0=$(now)
"$ki" --store s audit >/dev/null
t1=$(now)
ki_audit=$(elapsed "$t0" "$t1")
objs=$("$ki" --store s ls | wc -l)
echo "audit:     ki audit $ki_audit s ($objs objects)   git fsck --full $git_fsck s ($n objects)   ki is $(ratio "$git_fsck" "$ki_audit")x git (target > 1x)"

# 3. SHA-256 throughput on 1 GiB
if [ -x "$hashbench" ]; then
  head -c $((256 << 20)) /dev/urandom >blob.bin
  ki_sha=$("$hashbench" blob.bin 4)
  t0=$(now)
  for _ in 1 2 3 4; do sha256sum blob.bin >/dev/null; done
  t1=$(now)
  sum_sha=$(python3 -c "print(f'{1024 / ($t1 - $t0) / 1000:.2f}')")
  echo "SHA-256:   ki (OpenSSL SHA256_*, SHA-NI) $ki_sha GB/s   sha256sum $sum_sha GB/s   ratio $(ratio "$ki_sha" "$sum_sha")x (target >= 1.2 GB/s)"
fi

# 4. resolve/show process time (user + sys, median of 21 runs, process start included)
name=bench-run-000123
prefix=$("$ki" --store s resolve "$name" | cut -c8-19)
for cmd in "resolve $prefix" "show $name"; do
  python3 - "$ki" "$work/s" $cmd <<'PY'
import resource, subprocess, sys, time
ki, store, *args = sys.argv[1:]
walls, cpus = [], []
for _ in range(21):
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    subprocess.run([ki, "--store", store, *args], stdout=subprocess.DEVNULL, check=True)
    walls.append((time.perf_counter() - t) * 1000)
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpus.append((r1.ru_utime - r0.ru_utime + r1.ru_stime - r0.ru_stime) * 1000)
walls.sort(); cpus.sort()
print(f"ki {' '.join(args)[:30]:<32} process time median {cpus[10]:.1f} ms (target < 10 ms); wall median {walls[10]:.1f} ms, min {walls[0]:.1f} ms")
PY
done
