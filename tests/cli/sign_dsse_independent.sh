#!/usr/bin/env bash
# ki's attestation format is standard DSSE + in-toto: an envelope made by
# `ki sign` verifies with an independent implementation (PyNaCl, via
# sign_dsse_verify.py), and a tampered copy does not.
# Usage (ctest): bash sign_dsse_independent.sh <ki binary> <tests/data dir>
# Exit 77 (skipped) when no python3 with PyNaCl (Debian: python3-nacl) exists.
set -u
KI_BIN=$1
DATA=$2
HERE=$(cd "$(dirname "$0")" && pwd)
PY=""
for p in python3 /usr/bin/python3; do
  if command -v "$p" >/dev/null && "$p" -c "import nacl.signing" 2>/dev/null; then PY=$p; break; fi
done
if [ -z "$PY" ]; then
  echo "python3-nacl is not installed: skipping the independent DSSE check"
  exit 77
fi
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
export KI_HOME=$T/home KI_STORE=$T/store
set -e
"$KI_BIN" init "$T/store" >/dev/null
"$KI_BIN" add "$DATA/kernelindex/fixtures/"*.manifest.json >/dev/null
RUN=$("$KI_BIN" resolve BenchmarkRun/sol-trace-gqa-paged-decode-h32-kv4-d128-ps1-27ef153a)
KI_PASSPHRASE=runner-pass "$KI_BIN" key generate runner1 >/dev/null
PUB=$("$KI_BIN" key export runner1)
ENV=$(KI_PASSPHRASE=runner-pass "$KI_BIN" sign "$RUN" --key runner1 --predicate reproduced \
  --run-digest "$RUN" --latency-ns 352123.5 --ratio 0.9974 --machine "h200 #1" --note "naïve note ✓" | cut -f1)
"$KI_BIN" cat "$ENV" >"$T/envelope.json"
"$PY" "$HERE/sign_dsse_verify.py" "$T/envelope.json" "$PUB" "$RUN"
set +e
# The independent verifier must also reject what ki rejects.
"$PY" - "$T/envelope.json" "$T/tampered.json" <<'PY'
import base64, json, sys
e = json.load(open(sys.argv[1]))
p = base64.b64decode(e["payload"]).replace(b"0.9974", b"0.9975")
e["payload"] = base64.b64encode(p).decode()
json.dump(e, open(sys.argv[2], "w"))
PY
if "$PY" "$HERE/sign_dsse_verify.py" "$T/tampered.json" "$PUB" "$RUN" 2>/dev/null; then
  echo "FAIL: the independent verifier accepted a tampered payload"
  exit 1
fi
if "$KI_BIN" sign --envelope "$T/tampered.json" 2>/dev/null; then
  echo "FAIL: ki accepted a tampered payload"
  exit 1
fi
echo "ok: ki's envelope verifies independently; the tampered copy fails both"
