"""Writes synthetic BenchmarkRun manifests with ki raw-samples blobs, for the
statistics CLI test (tests/cli/stats_cli.sh) and bench/stats.sh.

Usage: make_runs.py OUTDIR --workload DIGEST [--runs N] [--median NS]
         [--step-at K --step F] [--noise F] [--spread F] [--samples N]
         [--seed S] [--no-samples] [--prefix NAME] [--start-hour H]
         [--implementation DIGEST]

Run i (0-based) has the median latency MEDIAN * (1 + F if i >= K) times a
run-to-run factor exp(NOISE * N(0,1)), and SAMPLES timed calls spread
exp(SPREAD * N(0,1)) around it, stored as a `ki.run-samples/v1` blob
(OUTDIR/<prefix>-<i>.samples) that the run (OUTDIR/<prefix>-<i>.json) names
in timing.rawSamples. observedAt is one hour apart per run. Deterministic
for a seed (Python's random.Random).
"""
import argparse
import datetime
import hashlib
import json
import math
import os
import random

ap = argparse.ArgumentParser()
ap.add_argument("outdir")
ap.add_argument("--workload", required=True)
ap.add_argument("--runs", type=int, default=1)
ap.add_argument("--median", type=float, default=1000.0)
ap.add_argument("--step-at", type=int, default=-1)
ap.add_argument("--step", type=float, default=0.0)
ap.add_argument("--noise", type=float, default=0.01)
ap.add_argument("--spread", type=float, default=0.02)
ap.add_argument("--samples", type=int, default=150)
ap.add_argument("--seed", type=int, default=1)
ap.add_argument("--no-samples", action="store_true")
ap.add_argument("--prefix", default="run")
ap.add_argument("--start-hour", type=int, default=0)
ap.add_argument("--implementation", default="")
a = ap.parse_args()
os.makedirs(a.outdir, exist_ok=True)
rng = random.Random(a.seed)
start = datetime.datetime(2026, 1, 1, tzinfo=datetime.timezone.utc) + datetime.timedelta(hours=a.start_hour)
impl = a.implementation or "sha256:" + hashlib.sha256(b"ki stats test implementation").hexdigest()
proto = "sha256:" + hashlib.sha256(b"ki stats test protocol").hexdigest()
env = "sha256:" + hashlib.sha256(b"ki stats test environment").hexdigest()
for i in range(a.runs):
    level = a.median * (1 + a.step if 0 <= a.step_at <= i else 1) * math.exp(a.noise * rng.gauss(0, 1))
    xs = sorted(level * math.exp(a.spread * rng.gauss(0, 1)) for _ in range(a.samples))
    n = len(xs)
    med = xs[n // 2] if n % 2 else (xs[n // 2 - 1] + xs[n // 2]) / 2
    # The order statistics of a distribution-free 95% interval of the median.
    half = 1.96 * math.sqrt(n) / 2
    lo, hi = xs[max(0, int(n / 2 - half))], xs[min(n - 1, int(math.ceil(n / 2 + half)))]
    name = f"{a.prefix}-{i:04d}"
    spec = {
        "implementationDigest": impl,
        "workloadDigest": a.workload,
        "protocolDigest": proto,
        "environmentDigest": env,
        "status": "passed",
        "observedAt": (start + datetime.timedelta(hours=i)).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "timing": {
            "primaryStatistic": "median",
            "samples": n,
            "latencyNs": {"median": round(med), "minimum": round(xs[0]), "maximum": round(xs[-1]),
                          "confidence95": [round(lo), round(hi)]},
        },
    }
    if not a.no_samples:
        blob = json.dumps({
            "format": "ki.run-samples/v1",
            "harness": {"timing": {"samples_us": [[x / 1000 for x in xs[k::3]] for k in range(3)]}},
        }).encode()
        digest = "sha256:" + hashlib.sha256(blob).hexdigest()
        with open(os.path.join(a.outdir, name + ".samples"), "wb") as f:
            f.write(blob)
        ref = {"uri": "ki:blob/" + digest, "digest": digest}
        spec["timing"]["rawSamples"] = ref
        spec["evidence"] = {"rawSamples": ref}
    doc = {"apiVersion": "kernelindex.dev/v1alpha1", "kind": "BenchmarkRun",
           "metadata": {"name": name, "title": f"synthetic run {i}"}, "spec": spec}
    with open(os.path.join(a.outdir, name + ".json"), "w") as f:
        json.dump(doc, f)
