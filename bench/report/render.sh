#!/usr/bin/env bash
# Times `ki report` of the whole KernelIndex export (issue 21): a first
# render into an empty directory, a render with nothing changed, and a
# render after one new run; prints the figures as markdown rows.
# With --screenshots DIR, also photographs the index, the seed's group page
# and its run page in headless Chromium (the PNGs under docs/).
# Usage: bench/report/render.sh [--screenshots DIR]   (from the repository root, after building ki)
set -euo pipefail
cd "$(dirname "$0")/../.."
KI=${KI:-$PWD/build/ki}
DATA=$PWD/tests/data
SHOTS=""
[ "${1:-}" = "--screenshots" ] && SHOTS=$(readlink -f "$2")
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
export KI_HOME="$T/home"
K() { "$KI" --store "$T/store" "$@"; }
"$KI" init "$T/store" >/dev/null
K import kernelindex "$DATA/kernelindex-export/catalog-2026-08-16-0022af0b.jsonl.zst" >/dev/null 2>&1
K add "$DATA/kernelindex/fixtures/gpt-o3_cuda_5548d0.gqa_paged_decode_h32_kv4_d128_ps1.manifest.json" >/dev/null

timed() {  # timed LABEL ARGS...: one render, its wall and CPU seconds and what it wrote
  local label=$1; shift
  local load
  load=$(cut -d' ' -f1 /proc/loadavg)
  /usr/bin/time -f "%e %U %S %M" -o "$T/time" "$KI" --store "$T/store" report "$@" --json >"$T/out"
  read -r wall user sys rss <"$T/time"
  python3 - "$label" "$wall" "$user" "$sys" "$rss" "$T/out" "$load" <<'PY'
import json, sys
label, wall, user, sys_, rss, out, load = sys.argv[1:]
s = json.load(open(out))
print(f"| {label} | {load} | {wall} | {user} | {sys_} | {int(rss)//1024} | {s['pages']} | {s['written']} | {s.get('kept', '-')} | {s['bytes']/2**20:.1f} |")
PY
}
echo "| render | load (1 min) | wall s | user s | sys s | peak RSS MiB | pages | written | kept unrendered | MiB of pages |"
echo "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
timed "first, into an empty directory" "$T/site"
timed "again, nothing changed" "$T/site"
# One new run: the seed with another latency, in the seed's group.
python3 - "$DATA/kernelindex/fixtures/gpt-o3_cuda_5548d0.gqa_paged_decode_h32_kv4_d128_ps1.manifest.json" "$T/new.json" <<'PY'
import json, sys
b = json.load(open(sys.argv[1]))
b["run"]["spec"]["timing"]["latencyNs"]["mean"] = 20000
b["run"]["metadata"]["name"] = "bench-new-run"
json.dump(b, open(sys.argv[2], "w"))
PY
K add "$T/new.json" >/dev/null
timed "after one new run" "$T/site"
# What the site brought up to date holds is what a render from nothing writes.
"$KI" --store "$T/store" report "$T/fresh" >/dev/null
echo
echo "Pages differing from a fresh render after the update: $(diff -rq -x .ki-report "$T/site" "$T/fresh" | wc -l)"
rm -rf "$T/fresh"
echo "On disk: $(du -sh "$T/site" | cut -f1) ($(du -sh --apparent-size "$T/site" | cut -f1) apparent), $(find "$T/site" -type f | wc -l) files"

if [ -n "$SHOTS" ]; then
  SEED=215ac4f9a26728e69bfeb464d46e76004c0f51a7b4a665eeed074888b5a99e7f
  GROUP=2b2fc4c48f98b72d5e2f98f9006c27c94989084dcf4907d930b7089034fef3c3
  cat >"$T/shots.json" <<JSON
[{"page": "index.html", "screenshot": "report-index.png", "expect": {}},
 {"page": "group/$GROUP.html", "screenshot": "report-group.png", "expect": {"plot": true}},
 {"page": "run/$SEED.html", "screenshot": "report-run.png", "expect": {}}]
JSON
  mkdir -p "$SHOTS"
  python3 tests/cli/report_browser.py "$(command -v chromium)" "$T/site" "$T/shots.json" "$SHOTS"
fi
