#!/usr/bin/env python3
"""Summarise the per-block stamps of a KI_GQA_TIMELINE build of the fast kernel.

Each file (written by LaunchFast to $KI_TIMELINE_OUT.<batch>x<tokens>, or by
paged-sweep --timeline) holds one launch: per block, its start, the moment warp
0's first tile was in, warp 0's loop end and the block's end (%globaltimer, ns),
its SM, its sequence (-1 for a surplus block) and, in an eighth column where
there is one, when the cluster merge's barrier let it through (0: none), and in
a ninth and tenth, when warp 0 had staged its result and issued its pushes,
and in an eleventh, when warp 0 had requested its first page indices.
Prints, in microseconds from the first block's start: the launch's span as the
blocks see it, how late blocks start, how long the first tile takes, the loops,
the tails (merge and stores; with the eighth column split at the barrier), per
sequence its first block's start, the spread of its blocks' loop ends, its last
block's end and the time from its last loop end to that end (the tail on the
sequence's critical path), and SMs that ran more than one real block.

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


def by_seq_of(rows):
    by_seq = collections.defaultdict(list)
    for r in rows:
        by_seq[r[6]].append(r)
    return by_seq


def main(paths):
    for path in paths:
        rows = []
        with open(path) as f:
            for line in f:
                f8 = line.split()
                b, t0, t1, t2, t3, sm, seq = f8[:7]
                t6 = int(f8[7]) if len(f8) > 7 else 0
                t7, t8 = (int(f8[8]), int(f8[9])) if len(f8) > 9 else (0, 0)
                t9 = int(f8[10]) if len(f8) > 10 else 0
                rows.append((int(b), int(t0), int(t1), int(t2), int(t3), int(sm), int(seq), t6, t7, t8, t9))
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
        if all(r[10] > 0 for r in real):
            print(summary("to indices", [us(r[10] - r[1]) for r in real]))
            print(summary("indices->1st", [us(r[2] - r[10]) for r in real]))
        print(summary("loop", [us(r[3] - r[2]) for r in real]))
        print(summary("tail", [us(r[4] - r[3]) for r in real]))
        if all(r[7] > 0 for r in real):
            print(summary("to barrier", [us(r[7] - r[3]) for r in real]))
            print(summary("after barr.", [us(r[4] - r[7]) for r in real]))
        if all(r[8] > 0 and r[9] > 0 for r in real):
            print(summary("stage", [us(r[8] - r[3]) for r in real]))
            print(summary("push", [us(r[9] - r[8]) for r in real]))
            print(summary("barrier", [us(r[7] - r[9]) for r in real]))
            # The block of each sequence whose loop ended last: its tail is the critical path.
            lasts = [max(v, key=lambda x: x[3]) for v in by_seq_of(real).values()]
            print(summary("last: stage", [us(r[8] - r[3]) for r in lasts]))
            print(summary("last: push", [us(r[9] - r[8]) for r in lasts]))
            print(summary("last: barr.", [us(r[7] - r[9]) for r in lasts]))
            print(summary("last: merge", [us(r[4] - r[7]) for r in lasts]))
        print(summary("end", [us(r[4] - base) for r in real]))
        # Per sequence (a cluster's blocks, or a split sequence's work items):
        # how far apart its blocks' loops end, and when its last block ends.
        by_seq = by_seq_of(real)
        print(summary("seq spread", [us(max(x[3] for x in v) - min(x[3] for x in v)) for v in by_seq.values()]))
        print(summary("seq start", [us(min(x[1] for x in v) - base) for v in by_seq.values()]))
        print(summary("seq end", [us(max(x[4] for x in v) - base) for v in by_seq.values()]))
        print(summary("seq tail", [us(max(x[4] for x in v) - max(x[3] for x in v)) for v in by_seq.values()]))
        print("per sequence (seq start/first tile in/last loop end/end):",
              " ".join(f"{s}:{us(min(x[1] for x in v) - base):.1f}/{us(min(x[2] for x in v) - base):.1f}/"
                       f"{us(max(x[3] for x in v) - base):.1f}/{us(max(x[4] for x in v) - base):.1f}"
                       for s, v in sorted(by_seq.items())))
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
