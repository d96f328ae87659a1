#!/usr/bin/env python3
"""Appends JSON lines to followed files in random-sized pieces (a line is often split across
writes, with a pause between the pieces), over about SECONDS seconds, then writes how many lines
of each key it wrote to EXPECTED (JSON). Deterministic in its content for a given seed.

Usage: writer.py FOLDER LINES SECONDS EXPECTED SEED
"""
import json
import os
import random
import sys
import time

folder, lines, seconds, expected, seed = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), sys.argv[4], int(sys.argv[5])
rng = random.Random(seed)
os.makedirs(folder, exist_ok=True)
names = ["a.json", "b.json"]
pending = {n: b"" for n in names}
counts = {}
for i in range(lines):
    key = f"key-{rng.randint(0, 19)}"
    counts[key] = counts.get(key, 0) + 1
    name = names[rng.randint(0, 1)]
    pending[name] += (json.dumps({"k": key, "i": i}) + "\n").encode()
pieces = []
for name, data in pending.items():
    at = 0
    while at < len(data):
        n = rng.randint(1, 120)
        pieces.append((name, data[at:at + n]))
        at += n
# Interleave the files' pieces, keeping each file's own order.
order = []
cursor = {n: [p for p in pieces if p[0] == n] for n in names}
while any(cursor.values()):
    n = rng.choice([n for n in names if cursor[n]])
    order.append(cursor[n].pop(0))
pause = seconds / len(order)
for name, data in order:
    with open(os.path.join(folder, name), "ab") as f:
        f.write(data)
    time.sleep(pause * rng.uniform(0, 2))
with open(expected, "w") as f:
    json.dump(counts, f, sort_keys=True)
