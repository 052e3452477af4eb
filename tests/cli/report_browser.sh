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

expect_exit 0 ki report site
grep -q "open site/index.html" <<<"$OUT" || fail "report names the file to open: $OUT"
for f in index.html "group/$GROUP.html" "run/$SEED_HEX.html" "run/$BASE.html" "op/$OP.html" assets/chart.min.js \
  assets/report.js assets/report.css .ki-report; do
  [ -f "site/$f" ] || fail "site/$f written"
done
# The hostile strings are escaped in the HTML itself, not only in the DOM.
if grep -q '<script>window.__pwned' site/run/"$HOSTILE_HEX".html site/index.html site/group/*.html; then
  fail "a manifest string reached a page unescaped"
fi

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
                    "document.querySelectorAll('#groups tbody tr').length": 2}}},
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
