#!/usr/bin/env bash
# A fuzzing campaign (fuzz/README.md): each target until it has run RUNS
# inputs or its seconds are spent, from its seed corpus and a corpus of
# its own under OUT. Prints one line per target from libFuzzer's final
# stats (executions, executions per second, peak RSS; summed over its
# jobs) and the artifacts it left (crashes, timeouts, leaks).
#
#   fuzz/campaign.sh BUILD-FUZZ OUT TARGET:SECONDS[:JOBS]...
#   RUNS=10000000 MAX_LEN=8192 fuzz/campaign.sh build-fuzz build-fuzz/campaign json:600 frame:300
#   PARALLEL=1 fuzz/campaign.sh build-fuzz out json:540:4 frame:540:1 ...
#   (BIN_DIR: the fuzz_* binaries, when not BUILD-FUZZ/fuzz)
#
# By default the targets run one after another, one libFuzzer job each at
# nice 19 (a shared machine). JOBS > 1 runs that many jobs of the target
# on one shared corpus (libFuzzer's -jobs/-workers), each until RUNS/JOBS
# inputs; PARALLEL=1 starts every target at once (a machine of its own,
# cores split between the targets by their JOBS).
set -u
build=$(cd "$1" && pwd)
out=$2
shift 2
runs=${RUNS:-10000000}
bin=$(cd "${BIN_DIR:-$build/fuzz}" && pwd)  # where the fuzz_* binaries are
max_len=${MAX_LEN:-8192}
mkdir -p "$out"
out=$(cd "$out" && pwd)
one() {  # one TARGET SECONDS JOBS
  local t=$1 secs=$2 jobs=$3
  local dir=$out/$t
  mkdir -p "$dir/corpus" "$dir/artifacts"
  local start
  start=$(date -u +%FT%TZ)
  # -jobs=N: libFuzzer runs the target in N children that log to
  # fuzz-<i>.log in the working directory. CPU seconds beside wall
  # seconds: on a shared machine at nice 19 the two differ by the load.
  (cd "$dir" && /usr/bin/time -f "%U %S %e" -o "$dir/time" nice -n 19 "$bin/fuzz_$t" -jobs="$jobs" -workers="$jobs" \
     -runs=$((runs / jobs)) -max_total_time="$secs" \
     -max_len="$max_len" -timeout=20 -rss_limit_mb=3072 -print_final_stats=1 -artifact_prefix="$dir/artifacts/" \
     "$dir/corpus" "$build/fuzz/corpus/$t" >"$dir/driver.log" 2>&1)
  # Sums (executions) and maxima (peak RSS) over the jobs' final stats.
  stat() { cat "$dir"/fuzz-*.log 2>/dev/null | awk -v k="stat::$1:" -v how="$2" \
    '$1 == k { if (how == "max") { if ($2 > v) v = $2 } else v += $2; n++ } END { if (n) print v }'; }
  echo "$t start=$start end=$(date -u +%FT%TZ) jobs=$jobs executions=$(stat number_of_executed_units sum)" \
       "exec_per_sec=$(stat average_exec_per_sec sum) peak_rss_mb=$(stat peak_rss_mb max)" \
       "corpus=$(ls "$dir/corpus" | wc -l) artifacts=$(ls "$dir/artifacts" | wc -l)" \
       "cpu_s=$(awk 'END {print $1 + $2}' "$dir/time") wall_s=$(awk 'END {print $3}' "$dir/time")"
}
for spec in "$@"; do
  IFS=: read -r t secs jobs <<<"$spec"
  if [ "${PARALLEL:-0}" = 1 ]; then
    one "$t" "$secs" "${jobs:-1}" &
  else
    one "$t" "$secs" "${jobs:-1}"
  fi
done
wait
