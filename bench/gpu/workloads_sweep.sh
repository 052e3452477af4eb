#!/bin/bash
# The definition's 48 workloads under several fast-kernel tunes: per tune,
# the sum of the CUPTI medians (cold L2, zero flush, 2 trials) by batch size,
# and per workload the best tune against the default. Tunes come from the
# arguments ("" is the default plan).
#
#   bench/gpu/workloads_sweep.sh BUILD_DIR OUTDIR TUNE...
set -u
B=${1:?usage: workloads_sweep.sh BUILD_DIR OUTDIR TUNE...}
OUTDIR=${2:?}
shift 2
DEF=tests/data/flashinfer-bench/gqa_paged_decode_h32_kv4_d128_ps1.json
WL=tests/data/flashinfer-bench/gqa_paged_decode_h32_kv4_d128_ps1.jsonl
i=0
for tune in "$@"; do
  timeout 200 $B/ki-kernel-bench --definition $DEF --workloads $WL --trials 2 --no-samples --no-check \
    --tune "$tune" --json "/tmp/wsweep-$i.json" >/dev/null 2>&1 || echo "tune [$tune] failed"
  echo "$tune" >"/tmp/wsweep-$i.tune"
  i=$((i + 1))
done
python3 - "$i" <<'PY' | tee "$OUTDIR/workloads-sweep.txt"
import json, sys
n = int(sys.argv[1])
runs = []
for i in range(n):
    tune = open(f"/tmp/wsweep-{i}.tune").read().strip() or "default"
    try:
        rows = json.load(open(f"/tmp/wsweep-{i}.json"))
    except Exception:
        continue
    runs.append((tune, {r["workload_uuid"]: (r.get("axes", {}).get("batch_size"), r.get("axes", {}).get("num_kv_indices"),
                                         r.get("timing", {}).get("latency_us", float("nan"))) for r in rows}))
batches = sorted({v[0] for _, m in runs for v in m.values()})
print(f"{'tune':<36}" + "".join(f" {'batch ' + str(b):>12}" for b in batches))
for tune, m in runs:
    print(f"{tune:<36}" + "".join(f" {sum(v[2] for v in m.values() if v[0] == b):12.1f}" for b in batches))
if runs:
    base = runs[0][1]
    print("\nper workload: default us, best tune, its us")
    for w, (b, t, us) in sorted(base.items(), key=lambda kv: (kv[1][0], kv[1][1])):
        best = min(runs, key=lambda r: r[1].get(w, (0, 0, float("inf")))[2])
        print(f"{w[:12]} batch {b:>3} tokens {t:>6} default {us:7.2f}  best [{best[0]}] {best[1][w][2]:7.2f}")
PY
