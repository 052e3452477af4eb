# The preamble of the CLI scripts whose first failed check ends the script
# (testlib.bash is the other style: it counts failed checks and goes on).
# Usage, first thing in a script run by ctest as `bash SCRIPT KI DATA`:
#   source "$(dirname "$0")/failfast.bash" "$@"
# It sets KI (the ki binary), DATA (tests/data) and T (a fresh temporary
# folder, removed on exit; a script that needs more cleanup sets its own
# EXIT trap and removes "$T" there too), and defines fail and expect_rc.
set -u
KI=$1
DATA=$2
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT

fail() { echo "FAIL: $*"; exit 1; }

# Today's store format (src/odb/tables.h, kFormatVersion): what the first
# write makes an older store.
NOW_FORMAT=15

# expect_rc WANT WHAT CMD...: runs CMD with its stdout in $T/out and its
# stderr in $T/err; an exit code other than WANT prints both and fails WHAT.
expect_rc() {
  local want=$1 what=$2
  shift 2
  "$@" >"$T/out" 2>"$T/err"
  local rc=$?
  [ "$rc" = "$want" ] || {
    echo "--- stdout"; cat "$T/out"; echo "--- stderr"; cat "$T/err"
    fail "$what: exit $rc, wanted $want"
  }
}
