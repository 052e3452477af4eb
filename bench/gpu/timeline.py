#!/usr/bin/env python3
"""Summarise the per-block stamps of a KI_GQA_TIMELINE build of the fast kernel.

Each file (written by LaunchFast to $KI_TIMELINE_OUT.<batch>x<tokens>) holds one
launch: per block, its start, the moment warp 0's first tile was in, warp 0's
loop end and the block's end (%globaltimer, ns), its SM and its sequence
(-1 for a surplus block). Prints, in microseconds from the first block's start:
the launch's span as the blocks see it, how late blocks start, how long the first
tile takes, the loops, the tails (merge and stores), per sequence the spread of
its blocks' loop ends and its last block's end, and SMs that ran more than one
real block.

    timeline.py FILE...
"""
import collections
import sys


def q(values, f):
    if not values:
        return float("nan")
    v = sorted(values)
    return v[min(len(v) - 1, int(f * (len(v) - 1) + 0.5))]


def summary(name, values):
    return (f"{name:<12} min {q(values, 0):7.2f}  p10 {q(values, .1):7.2f}  med {q(values, .5):7.2f}"
            f"  p90 {q(values, .9):7.2f}  max {q(values, 1):7.2f}")


def main(paths):
    for path in paths:
        rows = []
        with open(path) as f:
            for line in f:
                b, t0, t1, t2, t3, sm, seq = line.split()
                rows.append((int(b), int(t0), int(t1), int(t2), int(t3), int(sm), int(seq)))
        if not rows:
            continue
        base = min(r[1] for r in rows)
        real = [r for r in rows if r[6] >= 0 and r[2] > 0]
        surplus = len(rows) - len(real)
        us = lambda ns: ns / 1000.0
        span = us(max(r[4] for r in rows) - base)
        print(f"== {path}: {len(rows)} blocks ({len(real)} with tiles, {surplus} surplus or tileless), "
              f"span {span:.2f} us as the blocks see it")
        print(summary("start", [us(r[1] - base) for r in real]))
        print(summary("first tile", [us(r[2] - r[1]) for r in real]))
        print(summary("loop", [us(r[3] - r[2]) for r in real]))
        print(summary("tail", [us(r[4] - r[3]) for r in real]))
        print(summary("end", [us(r[4] - base) for r in real]))
        # Per sequence (a cluster's blocks, or a split sequence's work items):
        # how far apart its blocks' loops end, and when its last block ends.
        by_seq = collections.defaultdict(list)
        for r in real:
            by_seq[r[6]].append(r)
        print(summary("seq spread", [us(max(x[3] for x in v) - min(x[3] for x in v)) for v in by_seq.values()]))
        print(summary("seq end", [us(max(x[4] for x in v) - base) for v in by_seq.values()]))
        per_sm = collections.Counter(r[5] for r in real)
        doubled = {sm: n for sm, n in per_sm.items() if n > 1}
        print(f"SMs used {len(per_sm)}, SMs with 2+ real blocks: {len(doubled)}"
              + (f" ({sorted(doubled.items())[:12]})" if doubled else ""))
        # The blocks that end last: which SMs, and whether they shared their SM.
        last = sorted(real, key=lambda r: r[4])[-8:]
        print("last to end (block sm seq end_us loop_us shared):",
              " ".join(f"{r[0]}/{r[5]}/{r[6]}/{us(r[4] - base):.1f}/{us(r[3] - r[2]):.1f}/{per_sm[r[5]]}"
                       for r in last))


if __name__ == "__main__":
    main(sys.argv[1:])
