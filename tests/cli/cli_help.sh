#!/usr/bin/env bash
# Help everywhere (docs/cli.md, "Help, man pages and completion"): the man
# pages and the completion come from the same definitions as --help, and
# completion offers commands, options, refs, remotes and key names.
source "$(dirname "$0")/testlib.bash" "$@"
export KI_HOME="$WORK/home"

expect_exit 0 ki init store
expect_exit 0 ki add "$SEED"

# One page per command listed by `ki help`, and ki(1) naming them all.
expect_exit 0 ki __manpages man
commands=$(ki help | sed -n 's/^  \([a-z][a-z-]*\)  .*/\1/p' | grep -v '^help$')
[ -n "$commands" ] || fail "no commands in ki help"
for c in $commands; do
  [ -s "man/ki-$c.1" ] || { fail "no man page for $c"; continue; }
  grep -q "ki\\\\-$c(1)" man/ki.1 || fail "ki(1) does not name ki-$c(1)"
  # Every option --help lists is in the page (so the page cannot drift).
  for opt in $(ki "$c" --help | grep -o -- '--[a-z][a-z-]*' | sort -u); do
    [ "$opt" = --help ] && continue
    grep -q -- "$(printf '%s' "$opt" | sed 's/-/\\\\-/g')" "man/ki-$c.1" || fail "ki-$c.1 lacks $opt"
  done
done
[ "$(ls man | wc -l)" = "$(($(printf '%s\n' $commands | wc -l) + 1))" ] || fail "pages: $(ls man | tr '\n' ' ')"
if command -v man >/dev/null; then
  MANWIDTH=80 man -l man/ki-show.1 2>/dev/null | grep -q "ki show \[--json\] REF" || fail "ki-show.1 renders its synopsis"
fi

# Completion through the generated bash script, as bash runs it.
expect_exit 0 ki __completion bash ki.bash
expect_exit 0 ki remote add team "oci-layout:$WORK/layout"
printf '\n' | KI_PASSPHRASE=pw "$KI_BIN" key generate alice >/dev/null 2>&1 || fail "key generate"
complete_words() {  # complete_words WORD... : the candidates bash gets for the last word
  bash -c 'source ki.bash; ki() { "$KI_BIN" "$@"; }; COMP_WORDS=(ki "$@"); COMP_CWORD=$#; COMP_WORDS[0]="$KI_BIN"; _ki; printf "%s\n" "${COMPREPLY[@]}"' _ "$@"
}
export KI_BIN
[ "$(complete_words sh)" = show ] || fail "command name: $(complete_words sh)"
[ "$(complete_words show --js)" = --json ] || fail "option: $(complete_words show --js)"
expect_contains "$(complete_words show sol-)" "$SEED_RUN" "a ref by name"
expect_contains "$(complete_words show BenchmarkProtocol/)" "BenchmarkProtocol/flashinfer-bench-trace" "a ref by Kind/name"
expect_contains "$(complete_words cat sha256:7d44)" "sha256:7d44d206ad086b4bece35ce31f6531ebb11f07e0d9dcfb74c75be86d3ec02095" "a digest"
[ "$(complete_words push t)" = team ] || fail "remote: $(complete_words push t)"
[ "$(complete_words remote remove "")" = team ] || fail "remote remove: $(complete_words remote remove "")"
[ "$(complete_words sign "$SEED_RUN" --key a)" = alice ] || fail "key name: $(complete_words sign x --key a)"
[ "$(complete_words key export "")" = alice ] || fail "key export: $(complete_words key export "")"
[ "$(complete_words key "")" = "$(printf 'export\ngenerate\nlist')" ] || fail "subcommands: $(complete_words key "")"
[ "$(complete_words --store "$WORK/store" show sol-trace-gqa)" = "$SEED_RUN" ] || fail "with --store"
# Tags: as refs (bare and tag:NAME), and the tag to remove.
expect_exit 0 ki tag release-1 "$SEED_RUN"
expect_contains "$(complete_words show rele)" release-1 "a ref by tag"
[ "$(complete_words show tag:re)" = tag:release-1 ] || fail "tag:NAME: $(complete_words show tag:re)"
[ "$(complete_words tag -d r)" = release-1 ] || fail "tag -d: $(complete_words tag -d r)"
[ "$(complete_words tag rel)" = release-1 ] || fail "tag NAME: $(complete_words tag rel)"
# A FILE argument: nothing from ki, so the shell completes file names (-o default).
[ -z "$(complete_words add tests)" ] || fail "file argument gets candidates"
expect_exit 0 ki __completion zsh _ki
expect_contains "$(cat _ki)" "#compdef ki" "zsh script"
expect_exit 2 ki __completion fish

finish
