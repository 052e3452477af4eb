#!/bin/bash
# Push and pull of the KernelIndex export through a local registry (Debian's
# docker-registry on 127.0.0.1), next to skopeo copying the same images.
#
# Usage: bash bench/remote/bench_remote.sh [KI_BINARY] [EXPORT.jsonl.zst] [SKOPEO_SAMPLE]
# Environment (not REGISTRY_*: the registry reads those as configuration):
#   KI_BENCH_STORAGE  parent directory of the registry's storage (default: a
#                     temporary directory under $TMPDIR; /dev/shm puts it on tmpfs)
#   KI_BENCH_GOGC     GOGC for the registry process (default: Go's, 100)
#   KI_BENCH_CACHE    "inmemory" adds `cache: blobdescriptor: inmemory`
#   KI_JOBS           ki --jobs (default: ki's)
#   KI_BENCH_STEPS    "bundle": only the bundle steps (skip the one-manifest-per-root push and pull)
#   KI_BENCH_NOPACK_PUSH  0: skip the push of the bundle without its pack
# Prints, per step: wall time, objects/s, MB/s, HTTP requests, the CPU
# seconds of ki and of the registry process, and the load average. Steps:
# ki push of every root (one image manifest per root) to the registry, ki
# pull of those tags into a fresh store, both again (nothing to transfer),
# the bundle (--bundle, with its pack) into a fresh registry, its pull into
# a fresh store through the pack and, into another, object by object
# (--no-pack), both again, the bundle without a pack (--no-pack) into
# another fresh registry, ki push to an oci-layout, and skopeo copy of
# SKOPEO_SAMPLE images (default 50)
# from that layout to the registry (one skopeo process per image, as skopeo
# copies one image per call), extrapolated to all of them. `uptime` is
# printed before and after: other work on the machine shows in every number.
set -euo pipefail
HERE=$(cd "$(dirname "$0")/../.." && pwd)
KI=${1:-$HERE/build/ki}
EXPORT=${2:-$HERE/tests/data/kernelindex-export/catalog-2026-08-16-0022af0b.jsonl.zst}
SAMPLE=${3:-50}
JOBS=()
[ -n "${KI_JOBS:-}" ] && JOBS=(--jobs "$KI_JOBS")
# Roots pushed: every record, and the kinds that no record reaches.
KINDS="BenchmarkRun ServingRun WorkloadSuite SoftwareProject OperationSpec ModelRevision"

source "$HERE/tests/cli/registry.bash"
TMP=$(mktemp -d)
REGDIR=$(mktemp -d "${KI_BENCH_STORAGE:-${TMPDIR:-/tmp}}/ki-bench-registry.XXXXXX")
cleanup() {
  local rc=$?
  [ $rc -ne 0 ] && [ -f "$TMP/registry.log" ] && head -5 "$TMP/registry.log" >&2
  # `|| true`: under set -e a failing command in the trap would end it
  # before the rm below.
  registry_stop || true
  rm -rf "$TMP" "$REGDIR"
}
trap cleanup EXIT

# Starts the registry on empty storage (a new process): sets PORT, URL, BURL.
fresh_registry() {
  registry_stop || true
  rm -rf "$REGDIR/storage"
  registry_start "$TMP" "$REGDIR/storage" "${KI_BENCH_CACHE:-}" "${KI_BENCH_GOGC:-}"
  REG_PID_STAT=/proc/$REG_PID/stat
  PORT=$REG_PORT
  URL=oci://127.0.0.1:$PORT/ki/export
  BURL=oci://127.0.0.1:$PORT/ki/bundle
}
fresh_registry
echo "registry: $(docker-registry --version | awk '{print $NF}'), storage on $(df --output=fstype "$REGDIR" | tail -1), GOGC=${KI_BENCH_GOGC:-default}, cache=${KI_BENCH_CACHE:-none}; ki jobs ${KI_JOBS:-default}; $(nproc) cores"
echo "before: $(uptime)"

"$KI" init "$TMP/src" >/dev/null
"$KI" --store "$TMP/src" import kernelindex "$EXPORT" >/dev/null 2>&1
for k in $KINDS; do "$KI" --store "$TMP/src" ls --kind "$k" | cut -f1; done >"$TMP/refs"
echo "store: $("$KI" --store "$TMP/src" ls | wc -l) objects; roots pushed: $(wc -l <"$TMP/refs")"

reg_cpu() { awk '{print ($14 + $15) / 100}' "$REG_PID_STAT"; }
# report NAME SECONDS JSON KI_CPU REG_CPU: objects, bytes and requests from ki's --json
report() {
  python3 - "$@" "$(cut -d' ' -f1-3 /proc/loadavg)" <<'PY'
import json, sys
name, secs, path, kcpu, rcpu, load = sys.argv[1], float(sys.argv[2]), sys.argv[3], sys.argv[4], float(sys.argv[5]), sys.argv[6]
d = json.load(open(path))
if "blobs" in d:    # push: unique blobs uploaded
    n, b = d["blobs"]["sent"], d["blobs"]["bytesSent"]
    extra = f'(known {d["blobs"]["known"]}, HEAD {d["blobs"]["checked"]}, unasked {d["blobs"]["sentUnasked"]})'
else:               # pull: unique objects received (raw bytes), of which from packs
    n, b = d["blobsReceived"], d["bytesReceived"]
    extra = f'(from pack {d.get("blobsFromPack", 0)}, pack {d.get("packBytesReceived", 0)/1e6:.1f} MB)'
if d.get("pack"):   # push --bundle: its pack
    p = d["pack"]
    extra += f' (pack {p["objects"]} objects, {p["size"]/1e6:.1f} MB, {"sent" if p["sent"] else "already there"})'
req = d["httpRequests"]
print(f"{name:30s} {secs:7.1f} s  objects {n:6d} ({n/secs:6.0f}/s)  {b/1e6:5.1f} MB ({b/1e6/secs:5.2f} MB/s)  "
      f"requests {req:6d} ({req/secs:5.0f}/s)  cpu ki {kcpu} registry {rcpu:.1f} s  load {load} {extra}")
PY
}
timed() {  # timed NAME OUT CMD...
  local name=$1 out=$2; shift 2
  local t0 t1 r0 r1
  r0=$(reg_cpu)
  t0=$(date +%s.%N)
  /usr/bin/time -f "%U+%S" -o "$TMP/time" "$@" >"$out"
  t1=$(date +%s.%N)
  r1=$(reg_cpu)
  report "$name" "$(echo "$t1 - $t0" | bc)" "$out" "$(tail -1 "$TMP/time")" "$(echo "$r1 - $r0" | bc)"
}
tags() { python3 -c "import json,sys; print('\n'.join(sorted({r['tag'] for r in json.load(open(sys.argv[1]))['refs']})))" "$1"; }
mb() { du -sb "$1" | awk '{printf "%.1f MB on disk", $1/1e6}'; }

if [ "${KI_BENCH_STEPS:-}" != bundle ]; then
  timed "ki push (one manifest/root)" "$TMP/push.json" "$KI" --store "$TMP/src" push "${JOBS[@]}" --insecure --json "$URL" $(cat "$TMP/refs")
  tags "$TMP/push.json" >"$TMP/tags"
  echo "  $(wc -l <"$TMP/tags") tags; registry $(mb "$REGDIR")"
  "$KI" init "$TMP/dst" >/dev/null
  timed "ki pull (fresh store)" "$TMP/pull.json" "$KI" --store "$TMP/dst" pull "${JOBS[@]}" --insecure --json "$URL" $(cat "$TMP/tags")
  echo "  pulled store: $("$KI" --store "$TMP/dst" ls | wc -l) objects"
  timed "ki pull again" "$TMP/pull2.json" "$KI" --store "$TMP/dst" pull "${JOBS[@]}" --insecure --json "$URL" $(cat "$TMP/tags")
  timed "ki push again" "$TMP/push2.json" "$KI" --store "$TMP/src" push "${JOBS[@]}" --insecure --json "$URL" $(cat "$TMP/refs")
fi

# The same roots as one bundle, into a fresh registry (new storage, new
# process), so that both modes start from an empty registry.
fresh_registry
timed "ki push --bundle" "$TMP/bpush.json" "$KI" --store "$TMP/src" push "${JOBS[@]}" --insecure --json --bundle export "$BURL" $(cat "$TMP/refs")
"$KI" init "$TMP/bdst" >/dev/null
timed "ki pull bundle (pack)" "$TMP/bpull.json" "$KI" --store "$TMP/bdst" pull "${JOBS[@]}" --insecure --json "$BURL" export
echo "  pulled store: $("$KI" --store "$TMP/bdst" ls | wc -l) objects"
"$KI" init "$TMP/bdst-np" >/dev/null
timed "ki pull bundle (--no-pack)" "$TMP/bpull-np.json" "$KI" --store "$TMP/bdst-np" pull "${JOBS[@]}" --insecure --json --no-pack "$BURL" export
echo "  pulled store: $("$KI" --store "$TMP/bdst-np" ls | wc -l) objects"
[ "$("$KI" --store "$TMP/bdst" ls | sort | md5sum)" = "$("$KI" --store "$TMP/bdst-np" ls | sort | md5sum)" ] ||
  echo "  WARNING: the stores pulled with and without the pack differ"
timed "ki pull bundle again" "$TMP/bpull2.json" "$KI" --store "$TMP/bdst" pull "${JOBS[@]}" --insecure --json "$BURL" export
timed "ki push --bundle again" "$TMP/bpush2.json" "$KI" --store "$TMP/src" push "${JOBS[@]}" --insecure --json --bundle export "$BURL" $(cat "$TMP/refs")

# The same bundle without its pack (--no-pack), into another fresh registry:
# what building and uploading the pack costs the push.
if [ "${KI_BENCH_NOPACK_PUSH:-1}" != 0 ]; then
  fresh_registry
  timed "ki push --bundle --no-pack" "$TMP/bpush-np.json" "$KI" --store "$TMP/src" push "${JOBS[@]}" --insecure --json --bundle export --no-pack "$BURL" $(cat "$TMP/refs")
fi

t0=$(date +%s.%N)
"$KI" --store "$TMP/src" push --json "oci-layout:$TMP/layout" $(cat "$TMP/refs") >"$TMP/lay.json"
t1=$(date +%s.%N)
printf "ki push (oci-layout)           %5.1f s\n" "$(echo "$t1 - $t0" | bc)"

python3 -c "
import json; d = json.load(open('$TMP/layout/index.json'))
tags = [m.get('annotations', {}).get('org.opencontainers.image.ref.name', '') for m in d['manifests']]
print('\n'.join([t for t in tags if t and not t.startswith('ki-')][:$SAMPLE]))" >"$TMP/sample"
r0=$(reg_cpu)
t0=$(date +%s.%N)
while read -r t; do
  skopeo copy -q --dest-tls-verify=false "oci:$TMP/layout:$t" "docker://127.0.0.1:$PORT/ki/skopeo:$t"
done <"$TMP/sample"
t1=$(date +%s.%N)
r1=$(reg_cpu)
python3 -c "
n=$(wc -l <"$TMP/sample"); s=$t1-$t0; total=$(wc -l <"$TMP/refs")
print(f'skopeo copy (layout->registry) {s:7.1f} s  images {n}  ({s/n:.2f} s/image; all {total}: ~{s/n*total:.0f} s)  registry cpu {$r1-$r0:.1f} s  load $(cut -d' ' -f1-3 /proc/loadavg)')"
echo "after: $(uptime)"
