#!/usr/bin/env python3
"""Reads run.sh's log (lines `round=R query=Q engine=E size=1m|3m cpu_s=S ...`) and prints, per
query and engine, bids per CPU-second of each round (2,000,000 extra bids over the extra
CPU-seconds of the 3 M run against the 1 M run of the same round), their median and range, and
the ratio Eddy / Flink of the medians. Usage: summary.py RUNS.log"""
import re, statistics, sys
from collections import defaultdict

EXTRA_BIDS = 3_000_000 - 1_000_000
cpu, order = {}, []
for line in open(sys.argv[1]):
    m = re.match(r"round=(\d+) query=(\S+) engine=(\S+) size=(\S+) cpu_s=([\d.]+)", line)
    if m:
        r, q, e, f, s = m.groups()
        cpu[(int(r), q, e, f)] = float(s)
        order.append(q)
rates, per_round = defaultdict(list), defaultdict(dict)
for (r, q, e, f), s in sorted(cpu.items()):
    if f == "3m" and (r, q, e, "1m") in cpu:
        d = s - cpu[(r, q, e, "1m")]
        rate = EXTRA_BIDS / d if d > 0 else float("nan")
        rates[(q, e)].append(rate)
        per_round[(q, r)][e] = rate
queries = [q for q in dict.fromkeys(order) if any(k[0] == q for k in rates)]
print("| query | Eddy bids/CPU-s, median [min-max] | Flink bids/CPU-s, median [min-max] | Eddy / Flink | >= 10x |")
print("|---|---|---|---|---|")
fmt = lambda x: f"{x / 1e6:.2f} M"
for q in queries:
    cells, med = [], {}
    for e in ("eddy", "flink"):
        v = rates.get((q, e), [])
        if v:
            med[e] = statistics.median(v)
            cells.append(f"{fmt(med[e])} [{fmt(min(v))}-{fmt(max(v))}] (n={len(v)})")
        else:
            cells.append("-")
    ratio = med["eddy"] / med["flink"] if len(med) == 2 else None
    print(f"| {q} | {cells[0]} | {cells[1]} | {f'{ratio:.1f}x' if ratio else '-'} | "
          f"{('yes' if ratio >= 10 else 'no') if ratio else '-'} |")
print()
print("Eddy / Flink per round (the two engines' runs of a round are next to each other in time):")
for q in queries:
    rs = [f"round {r}: {v['eddy'] / v['flink']:.1f}x" for (qq, r), v in sorted(per_round.items())
          if qq == q and len(v) == 2]
    print(f"  {q}: " + "; ".join(rs))
print()
print("CPU-seconds per run (1 M / 3 M):")
for q in queries:
    for e in ("eddy", "flink"):
        runs = sorted((r, f, s) for (r, qq, ee, f), s in cpu.items() if qq == q and ee == e)
        one = ", ".join(f"{s:.2f}" for r, f, s in runs if f == "1m")
        three = ", ".join(f"{s:.2f}" for r, f, s in runs if f == "3m")
        print(f"  {q} {e}: {one} / {three}")
