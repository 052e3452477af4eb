#!/usr/bin/env bash
# One voice for errors (docs/cli.md, "Errors"): every usage error, CLI11's
# included, is one line `ki: error: <what> (see `ki CMD --help`)`, exit 2;
# an unknown command names the nearest ones; hints only where they apply.
source "$(dirname "$0")/testlib.bash" "$@"

expect_exit 0 ki init store
expect_exit 0 ki add "$SEED"

# voice CASE WANT-STDERR CMD...: exit 2, standard error exactly WANT, nothing on standard output.
voice() {
  local label=$1 want=$2
  shift 2
  expect_exit 2 "$@" || return
  [ "$ERR" = "$want" ] || fail "$label: stderr is '$ERR', want '$want'"
  [ -z "$OUT" ] || fail "$label: printed on standard output: ${OUT:0:200}"
}

voice "no command" 'ki: error: a command is required (see `ki --help`)' ki
voice "unknown command" "ki: error: 'bogus' is not a ki command (see \`ki --help\`)" ki bogus
voice "a typo" "ki: error: 'shwo' is not a ki command; did you mean show? (see \`ki --help\`)" ki shwo
voice "several near" "ki: error: 'rnu' is not a ki command; did you mean run? (see \`ki --help\`)" ki rnu
voice "a prefix" "ki: error: 're' is not a ki command; did you mean records, remote or report? (see \`ki --help\`)" ki re
voice "missing positional" 'ki: error: missing argument REF (see `ki show --help`)' ki show
voice "missing positional of a subcommand" 'ki: error: missing argument NAME (see `ki key export --help`)' ki key export
voice "missing subcommand" 'ki: error: ki key needs a subcommand: generate, list, export (see `ki key --help`)' ki key
voice "unknown subcommand" "ki: error: 'bogus' is not a ki remote command (see \`ki remote --help\`)" ki remote bogus
voice "subcommand typo" "ki: error: 'lsit' is not a ki trust command; did you mean list? (see \`ki trust --help\`)" ki trust lsit
voice "unknown option" "ki: error: unexpected argument '--bogus' (see \`ki ls --help\`)" ki ls --bogus
voice "extra argument" "ki: error: unexpected argument 'extra' (see \`ki resolve --help\`)" ki resolve 215ac4f9 extra
voice "value not allowed" \
  "ki: error: --predicate: 'approved' is not one of reviewed, reproduced, disputed (see \`ki sign --help\`)" \
  ki sign 215ac4f9 --key k --predicate approved
voice "value out of range" "ki: error: --threads: 0 is outside 1 … 64 (see \`ki import kernelindex --help\`)" \
  ki import kernelindex --threads 0 x.jsonl
voice "option without its value" "ki: error: --kind needs a value (see \`ki ls --help\`)" ki ls --kind
voice "help of an unknown command" "ki: error: 'bogus' is not a ki command (see \`ki --help\`)" ki help bogus

# Help: `ki help CMD` is `ki CMD --help`, exit 0, on standard output.
expect_exit 0 ki help show
HELP_SHOW=$OUT
expect_exit 0 ki show --help
[ "$OUT" = "$HELP_SHOW" ] || fail "ki help show differs from ki show --help"
expect_contains "$HELP_SHOW" "REF" "ki help show names the argument"
expect_exit 0 ki help key generate
expect_contains "$OUT" "--no-passphrase" "ki help key generate"
expect_exit 0 ki help
expect_contains "$OUT" "Start a store:" "ki help groups the commands"
# Groups in the order a new user meets them.
order=$(printf '%s\n' "$OUT" | grep -n -E '^(Start a store|Look at objects|Compare runs|Run kernels|Check and sign|Share):' | cut -d: -f2 | tr '\n' ,)
[ "$order" = "Start a store,Look at objects,Compare runs,Run kernels,Check and sign,Share," ] || fail "help groups in order: $order"

# Errors that are not usage keep their codes, in the same voice.
expect_exit 3 ki show nosuchname
expect_contains "$ERR" "ki: error: " "not found in ki's voice"

# The --blob hint: for a .json file that is not a manifest, not for a manifest the schema refuses.
echo '{"results": [1, 2]}' >results.json
expect_exit 4 ki add results.json
expect_contains "$ERR" "ki add --blob" "a JSON file that is not a manifest gets the --blob hint"
printf '{"apiVersion":"kernelindex.dev/v1alpha1","kind":"SoftwareProject","spec":{"name":"a","bogus":1}}' >schema.json
expect_exit 4 ki add schema.json
case "$ERR" in *"--blob"*) fail "a manifest the schema refuses gets no --blob hint: $ERR" ;; esac
printf '{"apiVersion":"kernelindex.dev/v1alpha1",\n' >cut.json
expect_exit 4 ki add cut.json
expect_contains "$ERR" "ki add --blob" "a JSON file that does not parse keeps the hint"

# A manifest given to ki import kernelindex: one line saying what it is.
expect_exit 4 ki import kernelindex "$SEED"
[ "$ERR" = "ki: error: $SEED is a KernelIndex bundle, not a catalog export: use \`ki add $SEED\`" ] ||
  fail "bundle to import: $ERR"
[ -z "$OUT" ] || fail "manifest to import printed a report: ${OUT:0:200}"
project_yaml='apiVersion: kernelindex.dev/v1alpha1
kind: SoftwareProject
metadata:
  name: p
spec:
  name: p'
printf '%s\n' "$project_yaml" | ki import kernelindex - 2>err.txt
[ $? = 4 ] || fail "a YAML manifest on standard input to import: exit"
expect_contains "$(cat err.txt)" "is a KernelIndex manifest, not a catalog export: use \`ki add -\`" "YAML manifest on stdin"

finish
