#!/usr/bin/env python3
"""PyTorch peers of ki's GQA paged-decode kernel, timed the way ki times it.

For each workload: PyTorch gather + scaled_dot_product_attention(enable_gqa=True)
and the definition's own reference code (exec'd from the definition JSON),
with the same index tensors ki generates (the counter-based generator of
include/ki/counter_rng.h and src/harness/generator.cc, reimplemented here
bit for bit), so both sides see the same sequence lengths and pages.

Timing: cold L2 (a buffer of twice the L2 size zeroed before every
iteration), CUDA events around each call, warm-up + timed iterations in
trials, the mean of trial medians; plus the per-call time of back-to-back
calls captured in a CUDA graph (warm L2), as the issue's peer figures were.

usage: torch_side_by_side.py DEF.json [--workloads FILE.jsonl] [--synthetic 1x362,...] --out OUT.json
"""
import argparse
import json
import math
import statistics
import sys
import time

import torch

M64 = (1 << 64) - 1


def mix64(z):
    z ^= z >> 30
    z = (z * 0xBF58476D1CE4E5B9) & M64
    z ^= z >> 27
    z = (z * 0x94D049BB133111EB) & M64
    z ^= z >> 31
    return z


def stream_key(seed, stream):
    return mix64((mix64(seed ^ 0x6A09E667F3BCC909) + stream * 0x9E3779B97F4A7C15) & M64)


def bits(key, i):
    return mix64((key + (i + 1) * 0x9E3779B97F4A7C15) & M64)


def below(b, n):
    return (b * n) >> 64


def fnv1a(s):
    h = 0xCBF29CE484222325
    for c in s.encode():
        h ^= c
        h = (h * 0x100000001B3) & M64
    return h


def ki_indices(uuid, seed, batch, total, num_pages, equal):
    """kv_indptr and kv_indices exactly as ki's PlanInputs makes them."""
    base = mix64(seed) ^ fnv1a(uuid)
    kp = stream_key(base, fnv1a("kv_indptr"))
    ki = stream_key(base, fnv1a("kv_indices"))
    if equal:
        q, r = divmod(total, batch)
        ptr = [0]
        for i in range(batch):
            ptr.append(ptr[-1] + q + (1 if i < r else 0))
    else:
        cuts = sorted(below(bits(kp, i), total + 1) for i in range(batch - 1))
        ptr = [0] + cuts + [total]
    pages = list(range(num_pages))
    for i in range(total):
        j = i + below(bits(ki, i), num_pages - i)
        pages[i], pages[j] = pages[j], pages[i]
    return ptr, pages[:total]


def time_cold(fn, flush, warmup, iters, trials):
    start = [torch.cuda.Event(enable_timing=True) for _ in range(iters)]
    end = [torch.cuda.Event(enable_timing=True) for _ in range(iters)]
    medians, samples = [], []
    for _ in range(trials):
        for _ in range(warmup):
            flush.zero_()
            fn()
        torch.cuda.synchronize()
        for i in range(iters):
            flush.zero_()
            start[i].record()
            fn()
            end[i].record()
        torch.cuda.synchronize()
        t = [s.elapsed_time(e) * 1000.0 for s, e in zip(start, end)]
        samples.append(t)
        medians.append(statistics.median(t))
    return sum(medians) / len(medians), samples


def time_graph(fn, calls=20, replays=5):
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            fn()
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for _ in range(calls):
            fn()
    g.replay()
    torch.cuda.synchronize()
    a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    a.record()
    for _ in range(replays):
        g.replay()
    b.record()
    torch.cuda.synchronize()
    return a.elapsed_time(b) * 1000.0 / (calls * replays)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("definition")
    ap.add_argument("--workloads")
    ap.add_argument("--synthetic", default="")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", required=True)
    ap.add_argument("--reference-iters", type=int, default=10)
    ap.add_argument("--graph-calls", type=int, default=20)
    args = ap.parse_args()

    definition = json.load(open(args.definition))
    ns = {}
    exec(definition["reference"], ns)  # the definition's own reference code
    reference = ns["run"]

    items = []
    for spec in [s for s in args.synthetic.split(",") if s]:
        b, t = (int(x) for x in spec.split("x"))
        items.append(("synthetic-" + spec, b, b * t, b * t, 1.0 / math.sqrt(128), True))
    if args.workloads:
        for line in open(args.workloads):
            w = json.loads(line)["workload"]
            ax = w["axes"]
            items.append((w["uuid"], ax["batch_size"], ax["num_kv_indices"], ax["num_pages"],
                          w["inputs"]["sm_scale"]["value"], False))

    dev = torch.device("cuda")
    props = torch.cuda.get_device_properties(dev)
    l2 = getattr(props, "L2_cache_size", 60 * 1024 * 1024)
    flush = torch.empty(2 * l2 // 4, dtype=torch.int32, device=dev)
    gen = torch.Generator(device=dev)
    results = []
    print(f"torch {torch.__version__}, {props.name}, L2 {l2 >> 20} MiB", flush=True)
    print(f"{'workload':24} {'batch':>5} {'tokens':>7} {'sdpa_us':>9} {'sdpa_graph':>10} {'ref_us':>10} {'maxdiff':>8}",
          flush=True)
    for uuid, batch, total, pages, scale, equal in items:
        ptr, idx = ki_indices(uuid, args.seed, batch, total, pages, equal)
        gen.manual_seed(args.seed)
        q = torch.randn(batch, 32, 128, device=dev, dtype=torch.bfloat16, generator=gen)
        k_cache = torch.randn(pages, 1, 4, 128, device=dev, dtype=torch.bfloat16, generator=gen)
        v_cache = torch.randn(pages, 1, 4, 128, device=dev, dtype=torch.bfloat16, generator=gen)
        kv_indptr = torch.tensor(ptr, dtype=torch.int32, device=dev)
        kv_indices = torch.tensor(idx, dtype=torch.int32, device=dev)
        lens = [ptr[i + 1] - ptr[i] for i in range(batch)]
        lmax = max(max(lens), 1)
        # Padded gather plan (host work, outside the timed call): row b reads
        # its pages then page 0 as padding, masked out.
        pad = torch.zeros(batch, lmax, dtype=torch.long)
        mask = torch.zeros(batch, 1, 1, lmax, dtype=torch.bool)
        for b in range(batch):
            if lens[b]:
                pad[b, : lens[b]] = torch.tensor(idx[ptr[b]: ptr[b + 1]], dtype=torch.long)
                mask[b, 0, 0, : lens[b]] = True
        pad = pad.to(dev)
        mask = mask.to(dev)
        ragged = any(l != lmax for l in lens)
        qv = q.view(batch, 32, 1, 128)
        kf = k_cache.view(pages, 4, 128)
        vf = v_cache.view(pages, 4, 128)

        def sdpa():
            kk = kf[pad].transpose(1, 2)  # [B, 4, L, 128]
            vv = vf[pad].transpose(1, 2)
            return torch.nn.functional.scaled_dot_product_attention(
                qv, kk, vv, attn_mask=mask if ragged else None, scale=scale, enable_gqa=True)

        def ref():
            return reference(q, k_cache, v_cache, kv_indptr, kv_indices, scale)

        out_sdpa = sdpa().view(batch, 32, 128)
        out_ref, _ = ref()
        nonempty = torch.tensor([l > 0 for l in lens], device=dev)
        maxdiff = float((out_sdpa.float() - out_ref.float())[nonempty].abs().max()) if any(lens) else 0.0
        sdpa_us, sdpa_samples = time_cold(sdpa, flush, 10, 50, 3)
        try:
            sdpa_graph = time_graph(sdpa, args.graph_calls)
        except Exception as e:  # noqa: BLE001 - report and go on
            sdpa_graph = None
            print(f"  graph capture failed: {e}", file=sys.stderr)
        ref_us, ref_samples = time_cold(ref, flush, 2, args.reference_iters, 1)
        kv_bytes = 2 * total * 4 * 128 * 2
        results.append({
            "workload": uuid, "batch": batch, "tokens": total, "num_pages": pages, "ragged": ragged,
            "sdpa_cold_us": sdpa_us, "sdpa_graph_us": sdpa_graph, "reference_cold_us": ref_us,
            "sdpa_samples_us": sdpa_samples, "reference_samples_us": ref_samples,
            "sdpa_vs_reference_max_abs_diff": maxdiff, "kv_bytes": kv_bytes,
            "timer": "cuda_event", "l2_flush_bytes": 2 * l2,
        })
        print(f"{uuid[:24]:24} {batch:5d} {total:7d} {sdpa_us:9.2f} "
              f"{(sdpa_graph if sdpa_graph is not None else float('nan')):10.2f} {ref_us:10.1f} {maxdiff:8.4f}",
              flush=True)
        del q, k_cache, v_cache, kf, vf, pad, mask
        torch.cuda.empty_cache()
    json.dump({"torch": torch.__version__, "device": props.name, "seed": args.seed,
               "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "results": results},
              open(args.out, "w"), indent=1)


if __name__ == "__main__":
    main()
