#!/usr/bin/env bash
# One conformance suite over both kinds of remote (issue 19), through the
# command: the same checks run against Debian's docker-registry on loopback
# (started and stopped here) and against an OCI image layout directory.
# For each: a run pushed alone and pulled back by every name ki prints; a
# bundle pushed, pushed again unchanged (nothing sent), pulled whole by its
# tag and one run out of it; `ki remote ls` naming both; a blob over 1 MiB
# streamed both ways (the store's blob reader and writer) with no scratch
# file left; a clean audit of every store pulled into. The in-process
# variant is tests/remote/conformance_test.cc (TEST_P over both targets).
#
# Exit 77 (skipped) only when docker-registry is not installed.
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/testlib.bash" "$@"
if ! command -v docker-registry >/dev/null; then
  echo "skipped: docker-registry is not installed (apt-get install docker-registry)"
  exit 77
fi
source "$HERE/registry.bash"
trap 'registry_stop; chmod -R u+w "$WORK" 2>/dev/null; rm -rf "$WORK"' EXIT
registry_start "$WORK" "$WORK/registry" || { fail "docker-registry did not start"; finish; }

expect_exit 0 ki init src
S() { ki --store src "$@"; }
expect_exit 0 S add "$SEED"
expect_exit 0 S import kernelindex "$DATA/kernelindex-export/catalog-2026-08-16-0022af0b.slice.jsonl"
RUN_DIGEST=$SEED_RUN_DIGEST
RUN=BenchmarkRun/$SEED_RUN
S ls --kind BenchmarkRun | cut -f1 >runs
[ "$(wc -l <runs)" -ge 2 ] || fail "the slice holds fewer than two runs"
OTHER=$(grep -v "$RUN_DIGEST" runs | head -1)
python3 -c "import os; open('big.bin', 'wb').write(os.urandom(3 << 20))"
expect_exit 0 S add --blob big.bin
BIG=sha256:$(sha256sum big.bin | cut -d' ' -f1)

# pulled STORE TARGET-URL REF...: a fresh store pulls REF... from the target;
# it must audit clean and hold no scratch file.
n=0
pulled() {
  local store=$1
  shift
  expect_exit 0 ki init "$store" || return 1
  expect_exit 0 ki --store "$store" pull "$@" || return 1
  expect_exit 0 ki --store "$store" audit
  expect_contains "$OUT" "0 faults" "$store: audit after the pull"
  [ -z "$(ls -A "$store/.ki/objects/incoming" 2>/dev/null)" ] ||
    fail "$store: scratch files left: $(ls "$store/.ki/objects/incoming")"
}

for target in registry layout; do
  case $target in
    registry) URL=oci://127.0.0.1:$REG_PORT/ki/conformance INSECURE=(--insecure) ;;
    layout) URL=oci-layout:$WORK/layout INSECURE=() ;;
  esac
  S remote add "$target" "$URL" "${INSECURE[@]}" >/dev/null || fail "$target: remote add"

  # The run alone, back by every name ki prints: full digest, a prefix,
  # Kind/name (the seed's name is shared, so its digest names it among
  # exports: the name is the seed's only on the remote, which holds it alone).
  expect_exit 0 S push "$target" "$RUN_DIGEST"
  for name in "$RUN_DIGEST" "${RUN_DIGEST:0:13}" "${RUN_DIGEST#sha256:}" "${RUN_DIGEST:7:8}" "$RUN" "$SEED_RUN"; do
    n=$((n + 1))
    pulled "$target-name-$n" "${INSECURE[@]}" "$URL" "$name" || continue
    [ "$(ki --store "$target-name-$n" resolve "$RUN_DIGEST")" = "$RUN_DIGEST" ] || fail "$target: pull by '$name' did not bring the run"
  done

  # A bundle of every run: unchanged, a second push sends nothing; whole by
  # its tag; one run out of it.
  expect_exit 0 S push "$target" --bundle catalog $(cat runs)
  expect_exit 0 S push --json "$target" --bundle catalog $(cat runs)
  python3 - "$OUT" <<'PY' || fail "$target: the unchanged bundle was sent again: ${OUT:0:400}"
import json, sys
d = json.loads(sys.argv[1])
assert d["blobs"]["sent"] == 0, d["blobs"]
assert d["pack"] and not d["pack"]["sent"], d["pack"]
PY
  pulled "$target-whole" "${INSECURE[@]}" "$URL" catalog &&
    { [ "$(ki --store "$target-whole" ls --kind BenchmarkRun | wc -l)" = "$(wc -l <runs)" ] || fail "$target: the bundle did not bring every run"; }
  pulled "$target-one" "${INSECURE[@]}" "$URL" "$OTHER" &&
    { [ "$(ki --store "$target-one" ls --kind BenchmarkRun | wc -l)" = 1 ] || fail "$target: one run out of the bundle brought others"; }

  # The remote's listing names the run and the bundle.
  expect_exit 0 S remote ls "$target"
  expect_contains "$OUT" "$RUN_DIGEST" "$target: remote ls names the run"
  expect_contains "$OUT" "bundle	catalog	$(wc -l <runs) roots" "$target: remote ls names the bundle"

  # A blob over 1 MiB, streamed both ways, byte for byte.
  expect_exit 0 S push "$target" "$BIG"
  pulled "$target-big" "${INSECURE[@]}" "$URL" "$BIG" &&
    { ki --store "$target-big" cat "$BIG" | cmp -s - big.bin || fail "$target: the streamed blob came back different"; }
done

# The registry reached over https (no --insecure): the TLS failure says the
# server answers plain http and names the fix.
expect_exit 0 ki init tls
expect_exit 5 ki --store tls pull "oci://127.0.0.1:$REG_PORT/ki/conformance" "$RUN_DIGEST"
expect_contains "$ERR" "127.0.0.1:$REG_PORT answers plain http, not https" "TLS against the plain-http registry is named"
expect_contains "$ERR" "pass --insecure" "the fix is named"
case "$ERR" in *"again"*) fail "a TLS failure advises a re-run: $ERR" ;; esac
finish
