# ki run / ki rerun end to end on the CPU: a C++ GQA decode through the
# kernel ABI, records that verify, a rerun linked and ranked with its
# original, and each failure recorded with its status (tests/data/run/).
source "$(dirname "$0")/testlib.bash" "$@"
ROOT=$(readlink -f "$DATA/../..")
RUN="$DATA/run"
WL=gqa-paged-decode-h32-kv4-d128-ps1-27ef153a
OP=gqa-paged-decode-h32-kv4-d128-ps1

ki init "$WORK/store" >/dev/null
expect_exit 0 ki import flashinfer-bench "$RUN/flashinfer-trace"
expect_contains "$OUT" "sha256:aa3e71334e9e611281084843cf42058bed78031fcf7c794707a4446d3156e354  gqa_paged_decode_h32_kv4_d128_ps1" "operation digest equals the catalog export's"
expect_contains "$OUT" "WorkloadCase             48 new" "48 workloads"
expect_contains "$OUT" "missing input files      96" "safetensors inputs recorded as missing"
expect_exit 0 ki resolve $WL
expect_contains "$OUT" "sha256:fcf16458148fc0adb1372367ac83b468de3af7a4009854a2980b9096ec1e0088" "the seed's workload digest"
expect_exit 0 ki import flashinfer-bench "$RUN/flashinfer-trace"
expect_contains "$OUT" "OperationSpec            0 new, 1 existing" "import is idempotent"

add_impl() {  # add_impl VARIANT
  expect_exit 0 ki add --implementation "$RUN/gqa_decode_$1.cc" -I "$ROOT/include" --operation $OP \
    --symbol "test.gqa_decode.$1" --name "test-$1"
}
add_impl cpu
expect_contains "$OUT" "ImplementationRevision	test-cpu	new" "implementation stored"
expect_exit 0 ki verify ImplementationRevision/test-cpu

# A run that passes.
expect_exit 0 ki run --implementation test-cpu --workload $WL --seed 7
expect_contains "$OUT" "status       passed" "CPU run passes"
expect_contains "$OUT" "generated from seed 7" "says which inputs it generated"
RUN1=$(echo "$OUT" | head -1)
expect_exit 0 ki verify "$RUN1"
expect_contains "$OUT" "0 missing, 0 corrupt" "run record verifies with all its objects"
expect_exit 0 ki show "$RUN1" --json
for f in '"implementationDigest"' '"protocolDigest"' '"environmentDigest"' '"rawSamples"' '"logs"' '"latencyNs"' '"matchedRatio"'; do
  expect_contains "$OUT" "$f" "run names $f"
done
# Builds are cached: the second run compiles nothing.
expect_exit 0 ki run --implementation test-cpu --workload $WL --seed 7 --json
expect_contains "$OUT" '"buildCached": true' "build cache hit"

# Rerun: same seed, linked, side by side, one comparison group.
expect_exit 0 ki rerun "$RUN1"
expect_contains "$OUT" "re-ran $RUN1" "rerun names the original"
expect_contains "$OUT" "ratio" "rerun prints the latency ratio"
expect_contains "$OUT" "environment   same" "same machine, same environment"
expect_exit 0 ki rerun "$RUN1" --json
python3 -c 'import json,sys; j=json.loads(sys.argv[1]); assert j["rerun"]["spec"]["status"]=="passed"; assert j["ratio"]>0' "$OUT" \
  || fail "rerun JSON"
# The verdict: both runs have raw samples, so the bootstrap interval of the
# median ratio is judged against the 10% band (which outcome depends on
# this machine's noise; each is checked for what it implies).
python3 - "$OUT" <<'PY' || fail "rerun verdict JSON: ${OUT:0:1500}"
import json, sys
j = json.loads(sys.argv[1]); v = j["verdict"]
assert v["test"] == "bootstrap-median-ratio" and v["tolerance"] == 0.1, v
lo, hi = v["interval"]
assert lo <= v["ratio"] <= hi and v["resamples"] == 2000 and v["seed"] == "6b692d7374617473", v
inside = 0.9 <= lo and hi <= 1.1
outside = hi < 0.9 or lo > 1.1
want = "reproduced" if inside else "not-reproduced" if outside else "inconclusive"
assert v["outcome"] == want, (want, v)
assert j["matched"] == (want == "reproduced")
assert 0 <= v["uTest"]["pValue"] <= 1
PY
# Signed with a trusted runner's key: the verdict decides the evidence.
export KI_HOME="$WORK/home"
expect_exit 0 ki key generate runner --no-passphrase
expect_exit 0 ki trust add "$(ki key export runner)" --name runner --role runner
expect_exit 0 ki rerun "$RUN1" --key runner --json
VERDICT_JSON=$OUT
expect_exit 0 ki show "$RUN1" --json
python3 - "$VERDICT_JSON" "$OUT" <<'PY' || fail "signed verdict and evidence: ${VERDICT_JSON:0:800} ${OUT:0:800}"
import json, sys
r, show = json.loads(sys.argv[1]), json.loads(sys.argv[2])
outcome = r["verdict"]["outcome"]
ev = show["ki"]["evidence"]
if outcome == "reproduced":
    assert r["attestationPredicate"] == "reproduced" and ev["level"] == "verified", (r, ev)
elif outcome == "not-reproduced":
    assert r["attestationPredicate"] == "disputed" and ev["disputed"], (r, ev)
else:
    assert r["attestation"] is None and "inconclusive" in r["attestationNote"], r
PY
# ki rank and the report's group page show the level ki show gives (the
# trusted runner's verdict raises it or disputes it).
LEVEL=$(ki show "$RUN1" --json | python3 -c 'import json,sys; e=json.load(sys.stdin)["ki"]["evidence"]; print(e["level"] + (", disputed" if e["disputed"] else ""))')
expect_exit 0 ki rank "$RUN1" --json
python3 - "$OUT" "$RUN1" "$LEVEL" <<'PY' || fail "rank --json shows the level show gives ($LEVEL): ${OUT:0:800}"
import json, sys
j, run, level = json.loads(sys.argv[1]), sys.argv[2], sys.argv[3]
e = [x for x in j["ranked"] + j["ineligible"] if x["run"] == run][0]
assert e["evidence"] + (", disputed" if e["disputed"] else "") == level, (e, level)
PY
expect_exit 0 ki report "$WORK/site" "$RUN1"
grep -h -o "<tr data-run=\"$RUN1\">.*" "$WORK"/site/group/*.html | grep -q "<td>$LEVEL</td>" ||
  fail "the report's group page shows $LEVEL for the run: $(grep -h -o "<tr data-run=\"$RUN1\">.*" "$WORK"/site/group/*.html)"
expect_exit 0 ki rerun "$RUN1"
expect_contains "$OUT" "verdict       " "rerun prints its verdict"
expect_exit 0 ki rank "$RUN1"
expect_contains "$OUT" "6 ranked, 0 ineligible" "runs and reruns share one comparison group"

# Failures are results.
check_status() {  # check_status VARIANT STATUS [ki run options]
  local v=$1 want=$2
  shift 2
  add_impl "$v"
  expect_exit 1 ki run --implementation "test-$v" --workload $WL "$@"
  expect_contains "$OUT" "status       $want" "$v gives $want"
  local d
  d=$(echo "$OUT" | head -1)
  expect_exit 0 ki verify "$d"
  expect_exit 0 ki show "$d" --json
  expect_contains "$OUT" "\"status\": \"$want\"" "$v stored as $want"
}
check_status wrong incorrect_numerical
check_status broken compile_error
check_status crash runtime_error
expect_contains "$(ki run --implementation test-crash --workload $WL)" "killed by SIGSEGV" "a crash names its signal"
# Started with SIGCHLD ignored (inherited across exec), ki still learns how
# its child ended: the system reaped it unasked, waitpid failed, and the
# crash was read as "exit 0" (a failed compile as a success).
sigchld_ignored() {
  python3 -c 'import os, signal, sys; signal.signal(signal.SIGCHLD, signal.SIG_IGN); os.execv(sys.argv[1], sys.argv[1:])' "$@"
}
expect_exit 1 sigchld_ignored "$KI_BIN" run --implementation test-crash --workload $WL
expect_contains "$OUT" "killed by SIGSEGV" "a crash is a crash with SIGCHLD ignored"
expect_exit 1 sigchld_ignored "$KI_BIN" run --implementation test-broken --workload $WL
expect_contains "$OUT" "status       compile_error" "a failed compile is one with SIGCHLD ignored"
check_status hang timeout --timeout 2
expect_contains "$OUT" '"logs"' "a timeout keeps its log"
# A killed ki run (kill -9; or Ctrl-C, which the child in its own process
# group never gets) takes the kernel's process with it: a hung kernel used
# to spin on for ever, with no parent left to enforce its timeout.
"$KI_BIN" run --implementation test-hang --workload $WL --timeout 60 >/dev/null 2>&1 &
KIPID=$!
CACHE="$WORK/store/.ki/cache"
child=""
# The run child is the "ki" child forked once the run's log exists (ki opens
# it before the fork). Before that, a child called "ki" can be one forked to
# exec the compiler that has not exec'd yet: under load the check once took
# such a one for the run child, killed ki too early, and found no log.
for _ in $(seq 300); do
  if ls "$CACHE/runs" 2>/dev/null | grep -q "^run-$KIPID-"; then
    child=$(ps -o pid=,comm= --ppid $KIPID | awk '$2 == "ki" {print $1}')
    [ -n "$child" ] && break
  fi
  sleep 0.1
done
[ -n "$child" ] || fail "ki run started its run child"
kill -9 $KIPID
wait $KIPID 2>/dev/null
alive() { local st; st=$(ps -o stat= -p "$1" 2>/dev/null); [ -n "$st" ] && [ "${st:0:1}" != Z ]; }
for _ in $(seq 50); do alive "$child" || break; sleep 0.1; done
if [ -n "$child" ] && alive "$child"; then
  fail "the kernel's process outlived its killed ki run"
  kill -9 "$child"
fi
# What the killed run left in the cache (its child's log, which may be up to
# 256 MiB; a build directory) goes at the next run: such files used to pile up.
ls "$CACHE/runs" | grep -q "^run-$KIPID-" || fail "the killed run left its child's log (this check's setup)"
mkdir -p "$CACHE/build/tmp-0123456789abcdef-$KIPID/src"
expect_exit 0 ki run --implementation test-cpu --workload $WL
[ -z "$(ls "$CACHE/runs" | grep "^run-$KIPID-")" ] || fail "a killed run's log is removed by the next run"
[ ! -e "$CACHE/build/tmp-0123456789abcdef-$KIPID" ] || fail "a killed run's build directory is removed by the next run"

# A build cache entry that lost its `ok` marker (a power loss before the
# marker reached the disk) is built again; the rename onto it used to fail
# (exit 5, "cannot move the build into") until .ki/cache/build was deleted.
for e in "$CACHE"/build/*/; do rm -f "$e/ok"; done
expect_exit 0 ki run --implementation test-cpu --workload $WL
expect_contains "$OUT" "build        compiled" "an entry without its ok marker is built again"
expect_exit 0 ki run --implementation test-cpu --workload $WL
expect_contains "$OUT" "build        cached" "the rebuilt entry is used"

# A kernel's output past the 16 MiB a log blob keeps: the log holds its head
# and its tail, and says how much it left out (it used to hold none of it).
add_impl noisy
expect_exit 0 ki run --implementation test-noisy --workload $WL
NOISY=$(echo "$OUT" | head -1)
LOG=$(ki show "$NOISY" --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["spec"]["evidence"]["logs"]["digest"])')
ki cat "$LOG" >noisy.log
expect_contains "$(head -c 4096 noisy.log)" "noisy: first line" "a long log keeps its head"
expect_contains "$(tail -c 4096 noisy.log)" "noisy: last line" "a long log keeps its tail"
expect_contains "$(grep -a 'left out by ki' noisy.log)" "bytes of output left out by ki, of " "a long log says what it left out"
[ "$(wc -c <noisy.log)" -le $((16 * 1024 * 1024 + 4096)) ] || fail "a long log is kept to 16 MiB: $(wc -c <noisy.log)"
# One that prints without end is stopped at 256 MiB of output (SIGXFSZ),
# a runtime_error, instead of filling the disk until its timeout.
add_impl flood
expect_exit 1 ki run --implementation test-flood --workload $WL
expect_contains "$OUT" "status       runtime_error: the kernel's process was killed by SIGXFSZ" "a flood of output is a runtime error that says so"
expect_exit 0 ki verify "$(echo "$OUT" | head -1)"

# Bad input.
expect_exit 2 ki run --implementation test-cpu --workload $WL --device cuda:0
expect_exit 2 ki run --implementation test-cpu --workload $WL --device tpu
# A device index past int's range is a usage error naming the option, not an
# uncaught std::stoi exception (exit 5, "stoi").
expect_exit 2 ki run --implementation test-cpu --workload $WL --device cuda:99999999999
expect_contains "$ERR" "--device" "out-of-range device index names the option"
expect_exit 2 ki run --implementation test-cpu --workload $WL --device cuda:-1
expect_exit 3 ki run --implementation nosuch --workload $WL
expect_exit 2 ki add --implementation "$RUN/gqa_decode_cpu.cc"
expect_exit 4 ki add --implementation "$RUN/../SOURCES.md" --operation $OP

# A workload whose axes ask for more than any machine has (2^40 pages of
# 1 KiB: 2 PiB): refused before any input is generated, naming the workload,
# what it needs and what there is, and nothing is stored (it ended in
# std::bad_alloc, stored as a runtime_error). Sizes past int64 cannot come
# through a WorkloadCase (its axes stop at 2^53 - 1) but can through a
# definition's const axes: head_dim 2^40 and 2^30 pages make K 2^72 elements,
# refused before the build naming the tensor and its axes (they wrapped).
mkdir -p huge/definitions/gqa_paged huge/workloads/gqa_paged
cp "$RUN/flashinfer-trace/definitions/gqa_paged/gqa_paged_decode_h32_kv4_d128_ps1.json" huge/definitions/gqa_paged/
python3 -c '
import json, sys
d = json.load(open(sys.argv[1])); d["name"] = "gqa_paged_decode_overflow"; d["axes"]["head_dim"]["value"] = 2**40
json.dump(d, open(sys.argv[2], "w"), indent=1)
base = json.loads(open(sys.argv[3]).readline())
for name, uuid, pages in (("gqa_paged_decode_h32_kv4_d128_ps1", "a0000000-0000-4000-8000-000000000001", 2**40),
                          ("gqa_paged_decode_overflow", "b0000000-0000-4000-8000-000000000002", 2**30)):
    base["definition"] = name; base["workload"]["uuid"] = uuid; base["workload"]["axes"]["num_pages"] = pages
    with open(sys.argv[4] + "/" + name + ".jsonl", "a") as f: f.write(json.dumps(base) + "\n")
' "$RUN/flashinfer-trace/definitions/gqa_paged/gqa_paged_decode_h32_kv4_d128_ps1.json" huge/definitions/gqa_paged/overflow.json \
  "$RUN/flashinfer-trace/workloads/gqa_paged/gqa_paged_decode_h32_kv4_d128_ps1.jsonl" huge/workloads/gqa_paged
expect_exit 0 ki import flashinfer-bench huge
expect_exit 0 ki add --implementation "$RUN/gqa_decode_cpu.cc" -I "$ROOT/include" --operation gqa-paged-decode-overflow \
  --symbol test.gqa_decode.cpu --name test-overflow
RUNS_BEFORE=$(ki ls --kind BenchmarkRun | wc -l)
expect_exit 5 ki run --implementation test-cpu --workload $OP-a0000000
expect_contains "$ERR" "workload a0000000-0000-4000-8000-000000000001 needs 2.0 PiB of host memory (inputs 2.0 PiB" "a workload larger than the machine says what it needs"
expect_contains "$ERR" "this machine has available (nothing was stored)" "and what the machine has"
expect_exit 4 ki run --implementation test-overflow --workload gqa-paged-decode-overflow-b0000000
expect_contains "$ERR" "input k_cache [num_pages, page_size, num_kv_heads, head_dim] = [1073741824, 1, 4, 1099511627776]: the element count passes 2^63 - 1" "a size past int64 names the tensor and its axes"
[ "$(ki ls --kind BenchmarkRun | wc -l)" = "$RUNS_BEFORE" ] || fail "a refused workload stores no run"

# A workload breaking the definition's constraint len_indptr == batch_size + 1
# reached the kernel and was stored as its runtime_error ("kv_indptr: wrong
# shape"): now invalid input before the build, naming the constraint and
# the axes, and nothing stored.
mkdir -p broken/definitions/gqa_paged broken/workloads/gqa_paged
cp "$RUN/flashinfer-trace/definitions/gqa_paged/gqa_paged_decode_h32_kv4_d128_ps1.json" broken/definitions/gqa_paged/
python3 -c '
import json, sys
w = json.loads(open(sys.argv[1]).readline())
w["workload"]["uuid"] = "c0000000-0000-4000-8000-000000000003"
w["workload"]["axes"]["len_indptr"] = w["workload"]["axes"]["batch_size"] + 2
print(json.dumps(w))
' "$RUN/flashinfer-trace/workloads/gqa_paged/gqa_paged_decode_h32_kv4_d128_ps1.jsonl" \
  > broken/workloads/gqa_paged/gqa_paged_decode_h32_kv4_d128_ps1.jsonl
expect_exit 0 ki import flashinfer-bench broken
BATCH=$(head -1 "$RUN/flashinfer-trace/workloads/gqa_paged/gqa_paged_decode_h32_kv4_d128_ps1.jsonl" |
  python3 -c 'import json, sys; print(json.load(sys.stdin)["workload"]["axes"]["batch_size"])')
expect_exit 4 ki run --implementation test-cpu --workload $OP-c0000000
expect_contains "$ERR" "constraint 'len_indptr == batch_size + 1' does not hold: len_indptr = $((BATCH + 2)), batch_size = $BATCH" \
  "a workload breaking a constraint names it and its axes"
[ "$(ki ls --kind BenchmarkRun | wc -l)" = "$RUNS_BEFORE" ] || fail "a workload breaking a constraint stores no run"

# The seed record: its kernel source was never published, so a rerun says
# exactly what is missing (exit 3); --implementation runs ours instead and
# places it in the seed's comparison group.
expect_exit 0 ki import kernelindex "$RUN/seed-cohort.jsonl"
expect_exit 0 ki add "$SEED"
expect_exit 3 ki rerun $SEED_RUN
expect_contains "$ERR" "is ambiguous" "the seed's name is also an export run's: ambiguous"
expect_contains "$ERR" "$SEED_RUN_DIGEST" "the ambiguity lists the seed run"
expect_exit 3 ki rerun $SEED_RUN_DIGEST
expect_contains "$ERR" "the store lacks" "rerun of the seed lists what is missing"
expect_contains "$ERR" "sha256:9065668f65f0c70486702b4d7105d2a2da70e1aebd03314d68ffce9743ed081e" "names the missing implementation"
expect_contains "$ERR" "--implementation" "suggests --implementation"
expect_exit 0 ki rerun $SEED_RUN_DIGEST --implementation test-cpu
expect_contains "$OUT" "would rank    3 of 3 in the original's group" "ranked among the seed's group"
expect_contains "$OUT" "hardware.product" "environment differences listed"

# An implementation named with the schema's full 200 characters (last: the
# same source and symbol as test-cpu, so the same digest, now named so): the run's
# name keeps its timestamp and shortens the implementation's name (it was cut
# from the front, leaving a leading '-': exit 4 after the run, nothing stored).
LONG=$(python3 -c 'print("a" * 18 + "-" + "b" * 181)')
expect_exit 0 ki add --implementation "$RUN/gqa_decode_cpu.cc" -I "$ROOT/include" --operation $OP \
  --symbol test.gqa_decode.cpu --name "$LONG"
expect_exit 0 ki run --implementation "ImplementationRevision/$LONG" --workload $WL
expect_contains "$OUT" "status       passed" "a run of a long-named implementation is stored"
expect_exit 0 ki show "$(echo "$OUT" | head -1)" --json
expect_contains "$OUT" '"name": "run-aaaaaaaaaaaaaaaaaa-bbbb' "its name starts with the implementation's"
# The raw samples a rerun reads its seed, device and time limit from are a
# blob like any other (pulled, added): a wrong-typed field is invalid input
# naming it (it was nlohmann's type_error, exit 5), and a timeoutS of 0 or
# less is refused (it re-ran with no time limit) unless --timeout is given.
craft() {  # craft NAME FIELD JSON: RUN1 with raw samples whose FIELD is JSON
  local rs nrs
  rs=$(ki show "$RUN1" --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["spec"]["evidence"]["rawSamples"]["digest"])')
  ki cat "$rs" | python3 -c 'import json,sys; j=json.load(sys.stdin); j[sys.argv[1]]=json.loads(sys.argv[2]); print(json.dumps(j))' "$2" "$3" >"$1.samples.json"
  nrs=$(ki add --blob --media-type application/json "$1.samples.json" | cut -f1)
  ki show "$RUN1" --json | python3 -c '
import json, sys
j = json.load(sys.stdin); del j["ki"]; j["metadata"]["name"] = sys.argv[1]
ref = {"uri": "ki:blob/" + sys.argv[2], "digest": sys.argv[2]}
j["spec"]["evidence"]["rawSamples"] = ref; j["spec"]["timing"]["rawSamples"] = ref
print(json.dumps(j))' "$1" "$nrs" >"$1.json"
  ki add "$1.json" >/dev/null
}
craft crafted-seed seed '"seven"'
expect_exit 4 ki rerun crafted-seed
expect_contains "$ERR" '`seed` is a string, not an unsigned integer' "a wrong-typed seed is named"
craft crafted-timeout timeoutS 0
expect_exit 4 ki rerun crafted-timeout
expect_contains "$ERR" '`timeoutS` is 0, not a positive number of seconds (give --timeout)' "no rerun without a time limit"
expect_exit 0 ki rerun crafted-timeout --timeout 60
# A ki protocol whose counts pass int (the schema allows up to 2^53) is
# refused before anything runs; 2^32 - 1 iterations used to become -1, the
# run ran nothing and failed validation afterwards.
ki show BenchmarkProtocol/ki-cpu-host-steady-clock --json | python3 -c '
import json, sys
j = json.load(sys.stdin); del j["ki"]; j["metadata"]["name"] = "huge-counts"
j["spec"]["measurement"]["measuredIterations"] = 4294967295; j["spec"]["measurement"]["samples"] = 3 * 4294967295
print(json.dumps(j))' >huge-counts.json
expect_exit 0 ki add huge-counts.json
expect_exit 4 ki run --implementation test-cpu --workload $WL --protocol huge-counts
expect_contains "$ERR" "measurement.measuredIterations is 4294967295, not a count ki can run" "a count past int is named"
# A tolerance the notes give as NaN (or below 0) failed every element of a
# right kernel: refused before anything runs.
ki show BenchmarkProtocol/ki-cpu-host-steady-clock --json | python3 -c '
import json, sys
j = json.load(sys.stdin); del j["ki"]; j["metadata"]["name"] = "nan-atol"
j["spec"]["comparability"]["notes"] = j["spec"]["comparability"]["notes"].replace("atol 0.01", "atol nan")
print(json.dumps(j))' >nan-atol.json
expect_exit 0 ki add nan-atol.json
expect_exit 4 ki run --implementation test-cpu --workload $WL --protocol nan-atol
expect_contains "$ERR" "protocol: comparability.notes gives atol nan, not a tolerance ki can use" "a NaN tolerance is refused"
# A time limit that never expires is none.
expect_exit 2 ki run --implementation test-cpu --workload $WL --timeout inf
expect_contains "$ERR" "--timeout" "an infinite timeout names the option"

# The store after runs, reruns, refused workloads and an imported cohort
# with local runs ranked in it: ki audit (objects, and since 9315ddc the
# catalog tables that ki run writes as well as those ki import writes) finds
# no fault.
expect_exit 0 ki audit
expect_contains "$OUT" " 0 faults" "audit of a store with local runs in its groups"
finish
