#!/usr/bin/env python3
"""Tails of the grouped GEMMs in a `fusedmoe bench --trace-csv` file (per-CTA globaltimer stamps).

For each (case, tokens, variant, GEMM): the CTAs with work, the most resident at once, the span
from the first entry to the last epilogue, the tail (time at the end during which fewer than 90 %
of the most resident CTAs were busy), CTA durations (median / min / max) and the busy CTAs at 10 ..
95 % of the span. Usage: trace_tail.py call1_trace.csv.gz"""
import collections
import csv
import gzip
import sys


def main(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as f:
        rows = list(csv.DictReader(f))
    groups = collections.defaultdict(list)
    for r in rows:
        groups[(r["case"], r["tokens"], r["variant"], r["gemm"])].append(r)
    for key, v in groups.items():
        v = [r for r in v if int(r["expert"]) >= 0]
        if not v:
            continue
        ent = [float(r["entry"]) for r in v]
        done = [float(r["done"]) for r in v]
        t0, t1 = min(ent), max(done)
        grid = [t0 + i for i in range(int(t1 - t0) + 1)]
        busy = [sum(1 for a, b in zip(ent, done) if a <= t < b) for t in grid]
        most = max(busy)
        tail_from = t1
        for t, n in zip(reversed(grid), reversed(busy)):
            if n >= 0.9 * most:
                tail_from = t
                break
        dur = sorted(b - a for a, b in zip(ent, done))
        at = [busy[int(len(busy) * q)] for q in (0.1, 0.3, 0.5, 0.7, 0.8, 0.9, 0.95)]
        print("%-12s T=%-4s %-8s gemm%s: %5d CTAs, <= %d busy, span %.1f us, tail %.1f us, CTA us med %.1f "
              "min %.1f max %.1f, busy at 10/30/50/70/80/90/95 %%: %s"
              % (key[0], key[1], key[2], key[3], len(v), most, t1 - t0, t1 - tail_from, dur[len(dur) // 2], dur[0],
                 dur[-1], at))


if __name__ == "__main__":
    main(sys.argv[1])
