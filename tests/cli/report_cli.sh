#!/usr/bin/env bash
# ki report (issue 21) without a browser: exit codes, REFs, and incremental
# writing (a re-render after one new run rewrites only the pages it changes;
# pages the store no longer gives are removed, nothing else in DIR is).
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/testlib.bash"
export KI_HOME="$WORK/home"
COHORT=$DATA/run/seed-cohort.jsonl
GROUP=2b2fc4c48f98b72d5e2f98f9006c27c94989084dcf4907d930b7089034fef3c3
SEED_HEX=${SEED_RUN_DIGEST#sha256:}
BASE=02a189b787e72f5ffd387e6056e9de197925b534680084f0a1c614ef1a99ffc2
if [ ! -f /usr/share/javascript/chart.js/chart.min.js ] && [ -z "${KI_CHARTJS:-}" ]; then
  echo "report tests skipped: no Chart.js (apt-get install libjs-chart.js; scripts/install-deps.sh does)"
  exit 77
fi

ki init "$KI_STORE" >/dev/null
expect_exit 0 ki import kernelindex "$COHORT"

json() { python3 -c 'import json,sys; d=json.load(sys.stdin); print(d[sys.argv[1]])' "$1"; }

# 1. A first render writes every page; a second writes none.
expect_exit 0 ki report site --json
[ "$(json written <<<"$OUT")" = "$(json pages <<<"$OUT")" ] || fail "first render writes every page: $OUT"
PAGES1=$(json pages <<<"$OUT")
expect_exit 0 ki report site --json
[ "$(json written <<<"$OUT")" = 0 ] || fail "second render writes nothing: $OUT"
[ "$(json unchanged <<<"$OUT")" = "$PAGES1" ] || fail "every page unchanged: $OUT"
[ ! -f "site/run/$SEED_HEX.html" ] || fail "no seed page before the seed"

# 2. One new run (the seed joins the group at rank 2): its page, its group's,
# the index, the operation's, the protocol's and environment's (their
# tables count the group's runs) and the other run's ("Rank 1 of 2")
# change; nothing else is written.
expect_exit 0 ki add "$SEED"
cp site/group/$GROUP.html group_before.html
touch -d '2000-01-01' site/assets/*
expect_exit 0 ki report site --json
WRITTEN=$(json written <<<"$OUT")
[ "$WRITTEN" = 7 ] || fail "one new run rewrites 7 pages, not $WRITTEN: $OUT"
[ "$(json pages <<<"$OUT")" = $((PAGES1 + 1)) ] || fail "one page more: $OUT"
[ -f "site/run/$SEED_HEX.html" ] || fail "the seed's page"
grep -q 'id="rank">Rank 2 of 2' "site/run/$SEED_HEX.html" || fail "seed page says rank 2 of 2"
grep -q 'id="rank">Rank 1 of 2' "site/run/$BASE.html" || fail "the other run's page follows the group"
cmp -s group_before.html site/group/$GROUP.html && fail "the group page changed"
for f in site/assets/*; do
  [ "$(stat -c %Y "$f")" -lt 1000000000 ] || fail "$f was not rewritten (unchanged bytes)"
done

# Pages kept by their inputs are those a fresh render writes: every page of
# the site brought up to date equals the same page rendered from nothing.
expect_exit 0 ki report fresh1 --json
diff -r -x .ki-report site fresh1 >/dev/null || fail "an updated site differs from a fresh render: $(diff -rq -x .ki-report site fresh1 | head -5)"
# Nothing changed: every run, group, operation, protocol and environment
# page is kept without being rendered (the index and the three assets are
# rendered and found unchanged).
expect_exit 0 ki report site --json
[ "$(json written <<<"$OUT")" = 0 ] || fail "nothing changed, nothing written: $OUT"
[ "$(json kept <<<"$OUT")" = $(( $(json pages <<<"$OUT") - 4 )) ] || fail "all but 4 pages kept unrendered: $OUT"

# 3. REFs: only the group and runs named; the pages of the rest go.
expect_exit 0 ki report only "$SEED_RUN_DIGEST" --json
[ -f "only/run/$SEED_HEX.html" ] && [ -f "only/group/$GROUP.html" ] || fail "a run REF brings its page and its group's"
[ ! -f "only/run/$BASE.html" ] || fail "a run REF brings no other run"
grep -q "href=\"../run/$BASE.html\"" only/group/$GROUP.html && fail "no link to a page the site lacks"
expect_exit 0 ki report only "${GROUP:0:12}" --json
[ -f "only/run/$BASE.html" ] || fail "a group REF brings its runs"
expect_exit 0 ki report site "$SEED_RUN_DIGEST" --json
[ "$(json removed <<<"$OUT")" -ge 1 ] && [ ! -f "site/run/$BASE.html" ] || fail "pages no longer given are removed: $OUT"
echo keep >site/mine.txt
expect_exit 0 ki report site
[ -f site/mine.txt ] || fail "a file ki did not write is left alone"

# 4. A progress bar on a terminal (script(1) gives ki one), none on a pipe.
if command -v script >/dev/null; then
  script -qec "'$KI_BIN' report ttysite" /dev/null >tty.out || fail "report on a terminal"
  grep -q "rendering \[#*\] 100%" tty.out || fail "no progress bar on a terminal: $(cat -A tty.out | head -3)"
fi
expect_exit 0 ki report pipesite
[ -z "$ERR" ] || fail "no progress without a terminal: $ERR"

# 5. Errors.
expect_exit 3 ki report x nosuchthing
mkdir full && echo hi >full/file
expect_exit 4 ki report full
grep -q "not empty and holds no report of ki" <<<"$ERR" || fail "non-empty DIR: $ERR"
echo notalist >site/.ki-report
expect_exit 4 ki report site
grep -q "not a page list of ki report" <<<"$ERR" || fail "damaged list: $ERR"
expect_exit 5 env KI_CHARTJS="$WORK/none/chart.min.js" "$KI_BIN" report fresh
grep -q "Chart.js is missing: install Debian's libjs-chart.js" <<<"$ERR" || fail "missing Chart.js: $ERR"
[ ! -e fresh ] || fail "nothing written without Chart.js"

[ "$FAILS" = 0 ] || exit 1
echo ok
