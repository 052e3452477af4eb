#!/usr/bin/env bash
# Every CPU command the README and docs/worked-example.md show, run as shown
# (paths into tests/data), with their exit codes and key lines (issue 17:
# the README's own examples must not silently break again).
set -u
KI=$1
DATA=$2
ROOT=$(cd "$DATA/../.." && pwd)
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
export KI_HOME=$T/home KI_PASSPHRASE=readme-test
fail() { echo "FAIL: $*"; exit 1; }
run() {  # run WANT_RC CMD...: prints nothing, keeps stdout in $T/out
  local want=$1; shift
  "$@" >"$T/out" 2>"$T/err"; local rc=$?
  [ "$rc" = "$want" ] || { echo "--- stdout"; head -20 "$T/out"; echo "--- stderr"; cat "$T/err"; fail "'$*': exit $rc, wanted $want"; }
}
has() { grep -q -- "$1" "$T/out" || { head -20 "$T/out"; fail "expected '$1' in the output of the last command"; }; }
SEED=$DATA/kernelindex/fixtures/gpt-o3_cuda_5548d0.gqa_paged_decode_h32_kv4_d128_ps1.manifest.json
SEEDNAME=sol-trace-gqa-paged-decode-h32-kv4-d128-ps1-27ef153a
cd "$T"

# README: Examples.
run 0 "$KI" init .
has "Initialized ki store"
run 0 "$KI" add "$SEED"
has "BenchmarkRun	$SEEDNAME	new"
has "BenchmarkProtocol	flashinfer-bench-trace	new"
run 0 "$KI" resolve 7d44d2
has "sha256:7d44d206ad086b4bece35ce31f6531ebb11f07e0d9dcfb74c75be86d3ec02095"
run 0 "$KI" show "$SEEDNAME"
has "$SEEDNAME"
run 0 "$KI" verify "$SEEDNAME"
run 0 sh -c "'$KI' cat BenchmarkProtocol/flashinfer-bench-trace | sha256sum"
has "7d44d206ad086b4bece35ce31f6531ebb11f07e0d9dcfb74c75be86d3ec02095"
run 0 "$KI" audit

# README: the KernelIndex catalog, ranks and diffs.
run 0 "$KI" import kernelindex "$DATA/kernelindex-export/catalog-2026-08-16-0022af0b.jsonl.zst"
has "stored"
run 0 "$KI" rank 215ac4f9
has "sha256:2b2fc4c48f98b72d"
has "2 ranked"
KEY=$(grep -o "sha256:2b2fc4c4[0-9a-f]*" "$T/out" | head -1)
run 1 "$KI" records "$KEY"   # the seed, older than the export's record, changes the history
has "not reproduced"
BASE=sha256:02a189b787e72f5ffd387e6056e9de197925b534680084f0a1c614ef1a99ffc2
run 1 "$KI" diff "$BASE" 215ac4f9
has "B/A"
run 1 "$KI" diff --json "$BASE" 215ac4f9
has '"op"'
run 0 "$KI" groups --operation gqa-paged-decode-h32-kv4-d128-ps1
run 0 "$KI" export kernelindex group.jsonl.zst "$KEY"
has "exported"
if [ -f /usr/share/javascript/chart.js/chart.min.js ]; then  # libjs-chart.js (scripts/install-deps.sh)
  run 0 "$KI" report site
  has "open site/index.html"
fi

# README: signing and evidence.
run 0 "$KI" key generate alice
run 0 sh -c "'$KI' trust add \"\$('$KI' key export alice)\" --name alice --role reviewer"
run 0 "$KI" sign 215ac4f9 --key alice --predicate reviewed --note "checked the log"
run 0 "$KI" verify 215ac4f9
run 0 "$KI" show 215ac4f9
has "Rank 2 of 2 in its comparison group"

# README: remotes, through the image layout form it shows.
run 0 "$KI" remote add usb "oci-layout:$T/usb"
run 0 "$KI" push usb 215ac4f9
run 0 sh -c "'$KI' push usb --bundle catalog \$('$KI' ls --kind BenchmarkRun | cut -f1)"
mkdir "$T/clone" && cd "$T/clone" && "$KI" init . >/dev/null
"$KI" remote add usb "oci-layout:$T/usb" >/dev/null 2>&1 || true
run 0 "$KI" pull usb catalog
run 0 "$KI" rank 215ac4f9
has "2 ranked"
cd "$T"

# docs/worked-example.md, its CPU steps (1 and 2).
mkdir "$T/demo" && cd "$T/demo"
run 0 "$KI" init .
run 0 "$KI" import flashinfer-bench "$DATA/run/flashinfer-trace"
has "sha256:aa3e71334e9e611281084843cf42058bed78031fcf7c794707a4446d3156e354"
run 0 "$KI" import kernelindex "$DATA/run/seed-cohort.jsonl"
has "record events reproduced: 1 of 1"
run 0 "$KI" add "$SEED"
run 3 "$KI" rerun 215ac4f9
grep -q "the store lacks" "$T/err" || fail "rerun names what it lacks: $(cat "$T/err")"
echo ok
