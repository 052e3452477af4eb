#!/usr/bin/env bash
# ki report (issue 21) opened in a real browser: headless Chromium loads the
# index, the seed's group, run and operation pages, and a run whose title
# and hardware are HTML and script. No console errors, the expected rank,
# value and digest in the DOM, a plot drawn, nothing of the hostile strings
# run; every internal link of the written site resolves and none leaves it.
# Skips (exit 77), saying so, without Debian's chromium.
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/testlib.bash"
CHROMIUM=${KI_TEST_CHROMIUM:-$(command -v chromium || command -v chromium-browser || true)}
if [ -z "$CHROMIUM" ]; then
  echo "browser tests skipped: no chromium (apt-get install chromium; scripts/install-deps.sh does)"
  exit 77
fi
export KI_HOME="$WORK/home"
COHORT=$DATA/run/seed-cohort.jsonl
GROUP=2b2fc4c48f98b72d5e2f98f9006c27c94989084dcf4907d930b7089034fef3c3
BASE=02a189b787e72f5ffd387e6056e9de197925b534680084f0a1c614ef1a99ffc2
SEED_HEX=${SEED_RUN_DIGEST#sha256:}
OP=aa3e71334e9e611281084843cf42058bed78031fcf7c794707a4446d3156e354

ki init "$KI_STORE" >/dev/null
expect_exit 0 ki import kernelindex "$COHORT"
expect_exit 0 ki add "$SEED"

# A run whose title, and whose environment's hardware, are markup and script.
HOSTILE_TITLE='</script><script>window.__pwned=1</script><img src=x onerror="window.__pwned=2"> & "q" '"'s'"
HOSTILE_HW='H<b>200</b><svg onload="window.__pwned=3">'
python3 - "$SEED" "$HOSTILE_TITLE" "$HOSTILE_HW" <<'PY'
import json, sys
b = json.load(open(sys.argv[1]))
env = b["environment"]
env["spec"]["hardware"]["product"] = sys.argv[3]
env["metadata"] = {"name": "hostile-environment", "title": sys.argv[3]}
json.dump(env, open("env.json", "w"))
run = b["run"]
run["metadata"] = {"name": "hostile-run", "title": sys.argv[2]}
run["spec"]["timing"]["latencyNs"]["mean"] = 400000
json.dump(run, open("run.json", "w"))
PY
expect_exit 0 ki add env.json
ENV_DIGEST=$(printf '%s\n' "$OUT" | awk '$2 == "ExecutionEnvironment" {print $1}')
python3 - "$ENV_DIGEST" <<'PY'
import json, sys
run = json.load(open("run.json"))
run["spec"]["environmentDigest"] = sys.argv[1]
json.dump(run, open("run.json", "w"))
PY
expect_exit 0 ki add run.json
HOSTILE=$(printf '%s\n' "$OUT" | awk '$2 == "BenchmarkRun" {print $1}')
HOSTILE_HEX=${HOSTILE#sha256:}
# More runs of it, later, half as slow from the fourth on: a history with a change point.
for v in 2025-10-17:401000 2025-10-18:399000 2025-10-19:200000 2025-10-20:201000 2025-10-21:199500; do
  python3 - "${v%%:*}" "${v#*:}" <<'PY'
import json, sys
run = json.load(open("run.json"))
run["spec"]["observedAt"] = sys.argv[1] + "T00:00:00Z"
run["spec"]["timing"]["latencyNs"]["mean"] = int(sys.argv[2])
json.dump(run, open("later.json", "w"))
PY
  expect_exit 0 ki add later.json
done
HOSTILE_GROUP=$(ki rank "$HOSTILE" --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["cohort"][7:])')

# A run on the CPU and two re-runs of it (ki run / ki rerun's CPU path, as
# tests/cli/run_cpu.sh), and a re-run of the hostile run by the CPU
# implementation (no verdict: another implementation), whose page shows the
# original's title and hardware: a re-run page for each, and a series of
# the four runs of test-cpu.
ROOT=$(readlink -f "$DATA/../..")
expect_exit 0 ki import flashinfer-bench "$DATA/run/flashinfer-trace"
expect_exit 0 ki add --implementation "$DATA/run/gqa_decode_cpu.cc" -I "$ROOT/include" \
  --operation gqa-paged-decode-h32-kv4-d128-ps1 --symbol test.gqa_decode.cpu --name test-cpu
expect_exit 0 ki run --implementation test-cpu --workload gqa-paged-decode-h32-kv4-d128-ps1-27ef153a --seed 7
CPU_RUN=$(printf '%s\n' "$OUT" | head -1)
rerun_digest() { python3 -c 'import json,sys; print(json.loads(sys.argv[1])["rerun"]["run"])' "$OUT"; }
expect_exit 0 ki rerun "$CPU_RUN" --json
RERUN1=$(rerun_digest)
VERDICT1=$(python3 -c 'import json,sys; v=json.loads(sys.argv[1])["verdict"]; print(json.dumps({"outcome": v["outcome"].replace("-", " "), "ratio": "%.3f" % v["ratio"], "interval": "%.3f – %.3f" % tuple(v["interval"])}))' "$OUT")
expect_exit 0 ki rerun "$CPU_RUN" --json
RERUN2=$(rerun_digest)
expect_exit 0 ki rerun "$HOSTILE" --implementation test-cpu --json
RERUN_H=$(rerun_digest)
CPU_HEX=${CPU_RUN#sha256:}
RERUN1_HEX=${RERUN1#sha256:}
RERUN_H_HEX=${RERUN_H#sha256:}
RERUN2_HEX=${RERUN2#sha256:}

expect_exit 0 ki report site
grep -q "open site/index.html" <<<"$OUT" || fail "report names the file to open: $OUT"
for f in index.html "group/$GROUP.html" "run/$SEED_HEX.html" "run/$BASE.html" "op/$OP.html" assets/chart.min.js \
  assets/report.js assets/report.css .ki-report; do
  [ -f "site/$f" ] || fail "site/$f written"
done
# The hostile strings are escaped in the HTML itself, not only in the DOM.
if grep -q '<script>window.__pwned\|<img src=x' site/run/*.html site/index.html site/group/*.html site/series/*.html \
  site/rerun/*.html site/op/*.html; then
  fail "a manifest string reached a page unescaped"
fi
# The series pages: the hostile group's (its implementation's six runs) and
# the CPU implementation's (the run and its re-runs), each linked from its group's
# page and from its runs' pages.
HOSTILE_SERIES=$(grep -o 'href="../series/[0-9a-f]*\.html"' "site/group/$HOSTILE_GROUP.html" | head -1 | sed 's|href="../||; s|"$||')
[ -n "$HOSTILE_SERIES" ] && [ -f "site/$HOSTILE_SERIES" ] || fail "the hostile group's page links its series: '$HOSTILE_SERIES'"
grep -q "href=\"../$HOSTILE_SERIES\"" "site/run/$HOSTILE_HEX.html" || fail "the hostile run's page links its series"
CPU_SERIES=$(grep -o 'id="series-link" *href="../series/[0-9a-f]*\.html"\|href="../series/[0-9a-f]*\.html" id="series-link"' "site/run/$CPU_HEX.html" | grep -o 'series/[0-9a-f]*\.html')
[ -n "$CPU_SERIES" ] && [ -f "site/$CPU_SERIES" ] || fail "the CPU run's page links its series: '$CPU_SERIES'"
for f in "rerun/$RERUN1_HEX.html" "rerun/$RERUN2_HEX.html" "rerun/$RERUN_H_HEX.html"; do
  [ -f "site/$f" ] || fail "site/$f written"
done
grep -q "href=\"../rerun/$RERUN1_HEX.html\"" "site/run/$CPU_HEX.html" || fail "the original's page links its re-run's"
grep -q "href=\"../rerun/$RERUN_H_HEX.html\"" "site/run/$HOSTILE_HEX.html" || fail "the hostile run's page links its re-run's"

# Every internal link and source of every page resolves; none leaves the site.
python3 - site <<'PY' || fail "links of the site"
import os, sys
from html.parser import HTMLParser
from urllib.parse import urlsplit, unquote
site = os.path.abspath(sys.argv[1])
bad, n = [], 0
class P(HTMLParser):
    def handle_starttag(self, tag, attrs):
        global n
        for k, v in attrs:
            if k not in ("href", "src") or v is None:
                continue
            n += 1
            u = urlsplit(v)
            if u.scheme or u.netloc:
                bad.append(f"{self.page}: {v} leaves the site")
                continue
            if not u.path:
                continue
            target = os.path.normpath(os.path.join(os.path.dirname(self.path), unquote(u.path)))
            if not target.startswith(site + os.sep) or not os.path.isfile(target):
                bad.append(f"{self.page}: {v} does not resolve")
pages = 0
for root, _, files in os.walk(site):
    for f in files:
        if f.endswith(".html"):
            p = P()
            p.path = os.path.join(root, f)
            p.page = os.path.relpath(p.path, site)
            p.feed(open(p.path, encoding="utf-8").read())
            pages += 1
for b in bad[:20]:
    print(b)
print(f"{pages} pages, {n} links and sources, {len(bad)} broken")
sys.exit(1 if bad or pages < 5 else 0)
PY

cat >checks.json <<JSON
[
 {"page": "index.html", "screenshot": "report-index.png",
  "expect": {"contains": ["Comparison groups", "gqa-paged-decode-h32-kv4-d128-ps1", "18.10 µs"],
             "filter": {"type": "hostile-nothing-matches", "shown": 0},
             "js": {"window.__pwned === undefined": true,
                    "document.querySelectorAll('#groups tbody tr').length": 3}}},
 {"page": "group/$GROUP.html", "screenshot": "report-group.png",
  "expect": {"plot": true,
             "text": {"group-key": "sha256:$GROUP"},
             "js": {"document.querySelector('tr[data-run=\"$SEED_RUN_DIGEST\"] .rank').textContent": "2",
                    "document.querySelector('tr[data-run=\"$SEED_RUN_DIGEST\"] .value').textContent": "353.0 µs",
                    "document.querySelector('tr[data-run=\"sha256:$BASE\"] .rank').textContent": "1",
                    "document.querySelector('tr[data-run=\"sha256:$BASE\"] .value').textContent": "18.10 µs",
                    "window.kiChart.data.datasets[1].data.length": 2}}},
 {"page": "run/$SEED_HEX.html", "screenshot": "report-run.png",
  "expect": {"text": {"rank": "Rank 2 of 2", "primary-value": "353.0 µs", "permalink": "$SEED_RUN_DIGEST",
                      "evidence-level": "reported"},
             "contains": ["Correctness", "Workload", "bf16 [412, 1, 4, 128]", "Protocol", "Environment", "NVIDIA B200",
                          "Artifacts", "No attestations yet.", "Canonical manifest", "92.38× reference"],
             "js": {"document.getElementById('first').getAttribute('href')": "../run/$BASE.html"}}},
 {"page": "run/$BASE.html",
  "expect": {"text": {"rank": "Rank 1 of 2", "primary-value": "18.10 µs"}}},
 {"page": "op/$OP.html",
  "expect": {"plot": true, "text": {"operation-name": "gqa-paged-decode-h32-kv4-d128-ps1"}}},
 {"page": "run/$HOSTILE_HEX.html",
  "expect": {"text": {"run-title": $(python3 -c 'import json,sys; print(json.dumps(sys.argv[1]))' "$HOSTILE_TITLE")},
             "contains": [$(python3 -c 'import json,sys; print(json.dumps(sys.argv[1]))' "$HOSTILE_HW")],
             "js": {"window.__pwned === undefined": true, "document.querySelectorAll('script:not([src]):not([type])').length": 0,
                    "document.querySelectorAll('img, svg').length": 0}}},
 {"page": "$HOSTILE_SERIES", "screenshot": "report-series.png",
  "expect": {"plot": true,
             "text": {"series-changes": "1"},
             "contains": [$(python3 -c 'import json,sys; print(json.dumps(sys.argv[1]))' "$HOSTILE_HW")],
             "js": {"window.__pwned === undefined": true, "document.querySelectorAll('img, svg').length": 0,
                    "window.kiChart.data.datasets[0].data.length": 6,
                    "document.querySelectorAll('#series-runs tbody tr[data-run]').length": 6,
                    "document.querySelectorAll('#series-runs tbody tr.change').length": 1,
                    "document.querySelector('#series-runs tr.change + tr td').textContent.slice(0, 10)": "2025-10-19",
                    "document.getElementById('series-group').getAttribute('href')": "../group/$HOSTILE_GROUP.html"}}},
 {"page": "$CPU_SERIES",
  "expect": {"plot": true, "text": {"series-label": "test-cpu"},
             "js": {"window.kiChart.data.datasets[0].data.length": 4,
                    "document.querySelectorAll('#series-runs tbody tr[data-run]').length": 4}}},
 {"page": "rerun/$RERUN1_HEX.html", "screenshot": "report-rerun.png",
  "expect": {"plot": true,
             "text": {"verdict-outcome": $(python3 -c 'import json,sys; print(json.dumps(json.loads(sys.argv[1])["outcome"]))' "$VERDICT1"),
                      "verdict-ratio": $(python3 -c 'import json,sys; print(json.dumps(json.loads(sys.argv[1])["ratio"]))' "$VERDICT1"),
                      "verdict-interval": $(python3 -c 'import json,sys; print(json.dumps(json.loads(sys.argv[1])["interval"]))' "$VERDICT1")},
             "contains": ["test-cpu"],
             "js": {"window.kiChart.data.datasets.length": 2,
                    "window.kiChart.data.datasets.map(d => Math.round(d.data.reduce((a, b) => a + b, 0)))": [100, 100],
                    "document.querySelectorAll('#quantiles tbody tr').length": 2,
                    "Number(document.querySelector('#quantiles tr[data-role=\"re-run\"] .samples').textContent) > 0": true,
                    "document.getElementById('original-run').getAttribute('href')": "../run/$CPU_HEX.html",
                    "document.getElementById('rerun-run').getAttribute('href')": "../run/$RERUN1_HEX.html"}}},
 {"page": "run/$CPU_HEX.html",
  "expect": {"js": {"document.querySelectorAll('#reruns tbody tr').length": 2,
                    "[...document.querySelectorAll('#reruns .rerun-link')].map(a => a.getAttribute('href')).sort()":
                      $(python3 -c 'import json,sys; print(json.dumps(sorted(sys.argv[1:])))' "../rerun/$RERUN1_HEX.html" "../rerun/$RERUN2_HEX.html"),
                    "document.getElementById('series-link').getAttribute('href')": "../$CPU_SERIES",
                    "window.__pwned === undefined": true}}},
 {"page": "rerun/$RERUN_H_HEX.html",
  "expect": {"plot": true,
             "text": {"verdict-outcome": "no verdict"},
             "contains": [$(python3 -c 'import json,sys; print(json.dumps(sys.argv[1]))' "$HOSTILE_HW"), "no raw samples in this store"],
             "js": {"window.__pwned === undefined": true, "document.querySelectorAll('img, svg').length": 0,
                    "document.querySelectorAll('script:not([src]):not([type])').length": 0,
                    "document.querySelector('#runs tr[data-role=\"original\"] .title').textContent":
                      $(python3 -c 'import json,sys; print(json.dumps(sys.argv[1]))' "$HOSTILE_TITLE"),
                    "window.kiChart.data.datasets.length": 1}}},
 {"page": "run/$RERUN2_HEX.html",
  "expect": {"js": {"document.querySelector('#rerun-of .rerun-link').getAttribute('href')": "../rerun/$RERUN2_HEX.html",
                    "document.querySelector('#rerun-of a').getAttribute('href')": "../run/$CPU_HEX.html"}}},
 {"page": "group/$HOSTILE_GROUP.html", "screenshot": "report-history.png",
  "expect": {"plot": true, "js": {"window.__pwned === undefined": true, "document.querySelectorAll('img, svg').length": 0,
                                  "window.kiHistoryChart.data.datasets[0].data.length": 6,
                                  "document.querySelectorAll('#changes tbody tr').length": 1,
                                  "document.querySelector('#changes tbody tr td:nth-child(2)').textContent": "2025-10-19"}}}
]
JSON
SHOTS=${KI_REPORT_SCREENSHOTS:-}
python3 "$HERE/report_browser.py" "$CHROMIUM" site checks.json $SHOTS || fail "browser checks"

[ "$FAILS" = 0 ] || exit 1
echo ok
