#!/bin/bash
# Push and pull of the KernelIndex export through a local registry (Debian's
# docker-registry on 127.0.0.1), next to skopeo copying the same images.
#
# Usage: bash bench/remote/bench_remote.sh [KI_BINARY] [EXPORT.jsonl.zst] [SKOPEO_SAMPLE]
# Prints wall time, objects/s, MB/s and HTTP requests for: ki push to the
# registry, ki pull into a fresh store, a second pull (nothing to transfer),
# ki push to an oci-layout, and skopeo copy of SKOPEO_SAMPLE images (default
# 200) from that layout to the registry (one skopeo process per image, as
# skopeo copies one image per call), extrapolated to all of them.
set -euo pipefail
HERE=$(cd "$(dirname "$0")/../.." && pwd)
KI=${1:-$HERE/build/ki}
EXPORT=${2:-$HERE/tests/data/kernelindex-export/catalog-2026-08-16-0022af0b.jsonl.zst}
SAMPLE=${3:-200}
# Roots pushed: every record, and the kinds that no record reaches.
KINDS="BenchmarkRun ServingRun WorkloadSuite SoftwareProject OperationSpec ModelRevision"

TMP=$(mktemp -d)
REG_PID=""
cleanup() { [ -n "$REG_PID" ] && kill "$REG_PID" 2>/dev/null; wait 2>/dev/null; rm -rf "$TMP"; }
trap cleanup EXIT

PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
mkdir "$TMP/registry"
cat >"$TMP/registry.yml" <<YML
version: 0.1
log:
  level: error
  accesslog:
    disabled: true
storage:
  filesystem:
    rootdirectory: $TMP/registry
http:
  addr: 127.0.0.1:$PORT
YML
docker-registry serve "$TMP/registry.yml" >"$TMP/registry.log" 2>&1 &
REG_PID=$!
sleep 1
URL=oci://127.0.0.1:$PORT/ki/export

"$KI" init "$TMP/src" >/dev/null
"$KI" --store "$TMP/src" import kernelindex "$EXPORT" >/dev/null
for k in $KINDS; do "$KI" --store "$TMP/src" ls --kind "$k" | cut -f1; done >"$TMP/refs"
echo "store: $("$KI" --store "$TMP/src" ls | wc -l) objects; roots pushed: $(wc -l <"$TMP/refs")"

# report NAME SECONDS JSON: objects, bytes and requests from ki's --json
report() {
  python3 - "$1" "$2" "$3" <<'PY'
import json, sys
name, secs, path = sys.argv[1], float(sys.argv[2]), sys.argv[3]
d = json.load(open(path))
refs = d["refs"]
key, bkey = ("sent", "bytesSent") if "sent" in refs[0] else ("received", "bytesReceived")
# objects shared by several refs are counted once by the transfer itself:
# the per-ref numbers add up to at least the unique objects.
n = sum(r[key] for r in refs); b = sum(r[bkey] for r in refs)
print(f"{name:28s} {secs:8.1f} s  refs {len(refs):6d}  per-ref objects {n:7d} ({n/secs:7.0f}/s)  "
      f"{b/1e6:7.1f} MB ({b/1e6/secs:5.2f} MB/s)  http requests {d['httpRequests']:7d} ({d['httpRequests']/secs:5.0f}/s)")
PY
}
timed() {  # timed NAME OUT CMD...
  local name=$1 out=$2; shift 2
  local t0 t1
  t0=$(date +%s.%N)
  "$@" >"$out"
  t1=$(date +%s.%N)
  report "$name" "$(echo "$t1 - $t0" | bc)" "$out"
}

timed "ki push (registry)" "$TMP/push.json" "$KI" --store "$TMP/src" push --insecure --json "$URL" $(cat "$TMP/refs")
"$KI" init "$TMP/dst" >/dev/null
timed "ki pull (fresh store)" "$TMP/pull.json" "$KI" --store "$TMP/dst" pull --insecure --json "$URL" $(cat "$TMP/refs")
echo "pulled store: $("$KI" --store "$TMP/dst" ls | wc -l) objects"
timed "ki pull (again, nothing new)" "$TMP/pull2.json" "$KI" --store "$TMP/dst" pull --insecure --json "$URL" $(cat "$TMP/refs")
timed "ki push (oci-layout)" "$TMP/lay.json" "$KI" --store "$TMP/src" push --json "oci-layout:$TMP/layout" $(cat "$TMP/refs")

python3 -c "
import json; d = json.load(open('$TMP/layout/index.json'))
tags = [m.get('annotations', {}).get('org.opencontainers.image.ref.name', '') for m in d['manifests']]
print('\n'.join([t for t in tags if t and not t.startswith('ki-')][:$SAMPLE]))" >"$TMP/sample"
t0=$(date +%s.%N)
while read -r t; do
  skopeo copy -q --dest-tls-verify=false "oci:$TMP/layout:$t" "docker://127.0.0.1:$PORT/ki/skopeo:$t"
done <"$TMP/sample"
t1=$(date +%s.%N)
python3 -c "
n=$(wc -l <"$TMP/sample"); s=$t1-$t0; total=$(wc -l <"$TMP/refs")
print(f'skopeo copy (layout->registry) {s:8.1f} s  images {n}  ({s/n:.2f} s/image; all {total}: ~{s/n*total:.0f} s)')"
