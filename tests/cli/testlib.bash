# Shared helpers for the CLI test scripts. Usage: source testlib.bash "$@"
# $1: the ki binary, $2: tests/data. Each script runs in a fresh temp dir.
set -uo pipefail
KI_BIN=$(readlink -f "$1")
DATA=$(readlink -f "$2")
SEED="$DATA/kernelindex/fixtures/gpt-o3_cuda_5548d0.gqa_paged_decode_h32_kv4_d128_ps1.manifest.json"
SEED_RUN=sol-trace-gqa-paged-decode-h32-kv4-d128-ps1-27ef153a
# The seed's run name is shared with export runs of the same workload (other
# kernels): after an import of those, the name is ambiguous and only the
# digest names the seed.
SEED_RUN_DIGEST=sha256:215ac4f9a26728e69bfeb464d46e76004c0f51a7b4a665eeed074888b5a99e7f
WORK=$(mktemp -d "${TMPDIR:-/tmp}/ki-cli-XXXXXX")
trap 'chmod -R u+w "$WORK" 2>/dev/null; rm -rf "$WORK"' EXIT
cd "$WORK"
export KI_STORE="$WORK/store"
FAILS=0

ki() { "$KI_BIN" "$@"; }

fail() {
  echo "FAIL: $*" >&2
  FAILS=$((FAILS + 1))
}

# expect_exit CODE CMD...: runs CMD, captures stdout/stderr in $OUT/$ERR.
expect_exit() {
  local want=$1
  shift
  OUT=$("$@" 2>"$WORK/.err")
  local got=$?
  ERR=$(cat "$WORK/.err")
  if [ "$got" != "$want" ]; then
    fail "exit $got (want $want): $*"
    echo "  stdout: ${OUT:0:600}" >&2
    echo "  stderr: ${ERR:0:600}" >&2
    return 1
  fi
  return 0
}

expect_contains() {  # expect_contains HAYSTACK NEEDLE LABEL
  case "$1" in
    *"$2"*) ;;
    *) fail "$3: expected to find '$2' in: ${1:0:800}" ;;
  esac
}

finish() {
  if [ "$FAILS" -ne 0 ]; then
    echo "$FAILS check(s) failed" >&2
    exit 1
  fi
  echo "all checks passed"
  exit 0
}
