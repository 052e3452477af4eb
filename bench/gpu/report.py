#!/usr/bin/env python3
"""Joins ki-kernel-bench JSON (CUPTI run, CUDA-event run) with the PyTorch
side-by-side JSON into the markdown tables of bench/results/.

usage: report.py --ki-cupti A.json --ki-events B.json --torch T.json [--targets] > out.md
"""
import argparse
import json

TARGETS = {"synthetic-1x362": 6.0, "synthetic-16x4096": 36.0, "synthetic-64x8192": 250.0}
PEERS = {  # from the issue: FlashInfer tensor-core decode, per call in a CUDA graph, H200
    "synthetic-1x362": "8.05 (13.4 cold, events)",
    "synthetic-16x4096": "43.6",
    "synthetic-64x8192": "253",
}


def load(path):
    return {r["workload_uuid"]: r for r in json.load(open(path))} if path else {}


def f(x, p=2):
    return "-" if x is None or (isinstance(x, float) and x != x) or x == "nan" else f"{x:.{p}f}"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ki-cupti", required=True)
    ap.add_argument("--ki-events")
    ap.add_argument("--torch")
    ap.add_argument("--targets", action="store_true")
    a = ap.parse_args()
    cu, ev = load(a.ki_cupti), load(a.ki_events)
    th = {r["workload"]: r for r in json.load(open(a.torch))["results"]} if a.torch else {}
    rows = []
    hdr = ("| workload | batch | tokens | status | ki µs (CUPTI, cold) | ki TB/s | ki µs (events, cold) | "
           "ki µs/call (graph) | PyTorch SDPA µs (events, cold) | PyTorch µs/call (graph) | "
           "definition reference µs | SDPA/ki (events) | SDPA/ki (graph) |")
    if a.targets:
        hdr += " target µs | met | FlashInfer TC (issue) µs |"
    rows.append(hdr)
    rows.append("|" + "---|" * (hdr.count("|") - 1))
    for uuid, r in cu.items():
        t = r["timing"]
        lat = t.get("latency_us")
        tbs = t.get("achieved_tb_per_s")
        e = ev.get(uuid, {}).get("timing", {})
        elat = e.get("latency_us")
        g = t.get("graph_per_call_us")
        p = th.get(uuid, {})
        sd, sg, rf = p.get("sdpa_cold_us"), p.get("sdpa_graph_us"), p.get("reference_cold_us")
        ratio_e = sd / elat if sd and elat else None
        ratio_g = sg / g if sg and g else None
        row = (f"| {uuid[:18]} | {r['axes']['batch_size']} | {r['axes']['num_kv_indices']} | {r['status']} | "
               f"{f(lat)} | {f(tbs)} | {f(elat)} | {f(g)} | {f(sd)} | {f(sg)} | {f(rf, 1)} | "
               f"{f(ratio_e)}x | {f(ratio_g)}x |")
        if a.targets:
            tgt = TARGETS.get(uuid)
            met = "yes" if tgt and lat and lat <= tgt else "no"
            row += f" {f(tgt, 0)} | {met} | {PEERS.get(uuid, '-')} |"
        rows.append(row)
    print("\n".join(rows))


if __name__ == "__main__":
    main()
