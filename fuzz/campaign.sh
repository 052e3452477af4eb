#!/usr/bin/env bash
# A fuzzing campaign (fuzz/README.md): the targets one after another, each
# a single libFuzzer job on one core at nice 19, until it has run RUNS
# inputs or its seconds are spent, from its seed corpus and a corpus of
# its own under OUT. Prints one line per target from libFuzzer's final
# stats (executions, executions per second, peak RSS) and the artifacts it
# left (crashes, timeouts, leaks).
#
#   fuzz/campaign.sh BUILD-FUZZ OUT TARGET:SECONDS...
#   RUNS=10000000 MAX_LEN=8192 fuzz/campaign.sh build-fuzz build-fuzz/campaign json:600 frame:300
#   (BIN_DIR: the fuzz_* binaries, when not BUILD-FUZZ/fuzz)
set -u
build=$(cd "$1" && pwd)
out=$2
shift 2
runs=${RUNS:-10000000}
bin=$(cd "${BIN_DIR:-$build/fuzz}" && pwd)  # where the fuzz_* binaries are
max_len=${MAX_LEN:-8192}
mkdir -p "$out"
out=$(cd "$out" && pwd)
for spec in "$@"; do
  t=${spec%%:*}
  secs=${spec##*:}
  dir=$out/$t
  mkdir -p "$dir/corpus" "$dir/artifacts"
  start=$(date -u +%FT%TZ)
  # -jobs=1: libFuzzer runs the target in a child that logs to fuzz-0.log
  # in the working directory.
  # CPU seconds beside wall seconds: on a shared machine at nice 19 the
  # two differ by the load.
  (cd "$dir" && /usr/bin/time -f "%U %S %e" -o "$dir/time" nice -n 19 "$bin/fuzz_$t" -jobs=1 -workers=1 -runs="$runs" -max_total_time="$secs" \
     -max_len="$max_len" -timeout=20 -rss_limit_mb=3072 -print_final_stats=1 -artifact_prefix="$dir/artifacts/" \
     "$dir/corpus" "$build/fuzz/corpus/$t" >"$dir/driver.log" 2>&1)
  log=$dir/fuzz-0.log
  stat() { grep -m1 "^stat::$1:" "$log" 2>/dev/null | awk '{print $2}'; }
  echo "$t start=$start end=$(date -u +%FT%TZ) executions=$(stat number_of_executed_units)" \
       "exec_per_sec=$(stat average_exec_per_sec) peak_rss_mb=$(stat peak_rss_mb)" \
       "corpus=$(ls "$dir/corpus" | wc -l) artifacts=$(ls "$dir/artifacts" | wc -l)" \
       "cpu_s=$(awk 'END {print $1 + $2}' "$dir/time") wall_s=$(awk 'END {print $3}' "$dir/time")"
done
