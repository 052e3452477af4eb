#!/usr/bin/env bash
# Speed of the statistics commands (docs/statistics.md): process time
# (user + system CPU, from getrusage of the child) and wall time of
#   ki diff A B           two runs of 150 raw samples each (target <= 10 ms)
#   ki diff --json A B
#   ki log WL             a 1,000-run series (target <= 50 ms)
#   ki log --regressions WL
# Each command is run REPS times after one warm-up; the median and the
# minimum are printed. Synthetic runs: tests/stats/make_runs.py.
#
# Usage: bench/stats/bench_stats.sh [BUILD_DIR] [REPS]   (Release build expected)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build=$(readlink -f "${1:-$root/build}")
reps=${2:-30}
ki="$build/ki"
work=$(mktemp -d "${TMPDIR:-/tmp}/ki-stats-bench-XXXXXX")
trap 'rm -rf "$work"' EXIT
export KI_STORE="$work/store"
export KI_HOME="$work/home"

echo "machine: $(uname -m), $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "date:    $(date -u +%Y-%m-%dT%H:%M:%SZ)"
echo "ki:      $("$ki" --version)"
echo

"$ki" init "$work/store" >/dev/null
wl=$("$ki" add "$root/tests/data/kernelindex/examples/workload-case.yaml" | cut -f1)
sed 's/seed: 230485/seed: 230486/' "$root/tests/data/kernelindex/examples/workload-case.yaml" >"$work/wl2.yaml"
wl2=$("$ki" add "$work/wl2.yaml" | cut -f1)
python3 "$root/tests/stats/make_runs.py" "$work/d" --workload "$wl" --median 1000 --seed 1 --prefix a
python3 "$root/tests/stats/make_runs.py" "$work/d" --workload "$wl" --median 970 --seed 2 --prefix b --start-hour 1
"$ki" add "$work"/d/*.samples "$work"/d/*.json >/dev/null
python3 "$root/tests/stats/make_runs.py" "$work/s" --workload "$wl2" --runs 1000 --step-at 999 --step 0.08 --seed 3 --no-samples --prefix s
"$ki" add "$work"/s/*.json >/dev/null

python3 - "$reps" "$ki" "$wl2" <<'PY'
import os, resource, statistics, subprocess, sys, time
reps, ki, wl2 = int(sys.argv[1]), sys.argv[2], sys.argv[3]
cases = [
    ("ki diff A B (150 + 150 samples)", [ki, "diff", "BenchmarkRun/a-0000", "BenchmarkRun/b-0000"], 10),
    ("ki diff --json A B", [ki, "diff", "--json", "BenchmarkRun/a-0000", "BenchmarkRun/b-0000"], 10),
    ("ki log WL (1,000 runs)", [ki, "log", wl2], 50),
    ("ki log --regressions WL (1,000 runs)", [ki, "log", "--regressions", wl2], 50),
]
print(f"{'command':40} {'cpu median':>11} {'cpu min':>9} {'wall median':>12} {'target':>8}")
for name, cmd, target in cases:
    cpu, wall = [], []
    for i in range(reps + 1):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.perf_counter()
        subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        t1 = time.perf_counter()
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        if i == 0:
            continue  # warm-up: page cache
        cpu.append((after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime) * 1000)
        wall.append((t1 - t0) * 1000)
    print(f"{name:40} {statistics.median(cpu):8.1f} ms {min(cpu):6.1f} ms {statistics.median(wall):9.1f} ms {target:5d} ms")
PY
