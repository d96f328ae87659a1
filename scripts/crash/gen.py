#!/usr/bin/env python3
"""Writes the crash test's input: FILES files of LINES JSON lines each, in name order, with keys,
values, event times (out of order within a few seconds) and arrival times (replay clock) that
only grow. Deterministic (seeded), so every run sees the same input.

Usage: gen.py FOLDER FILES LINES
"""
import json
import os
import random
import sys
from datetime import datetime, timedelta, timezone

folder, files, lines = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
os.makedirs(folder, exist_ok=True)
rng = random.Random(20240301)
base = datetime(2024, 3, 1, 12, 0, 0, tzinfo=timezone.utc)
arrival_ms = 0
fmt = lambda t: t.strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"
for f in range(files):
    with open(os.path.join(folder, f"{f:05}.json"), "w") as out:
        for _ in range(lines):
            arrival_ms += rng.randint(0, 40)
            ts = base + timedelta(milliseconds=arrival_ms - rng.randint(0, 3000))
            rec = {
                "k": f"key-{rng.randint(0, 199)}",
                "v": rng.randint(-50, 1000),
                "ts": fmt(ts),
                "arrival": fmt(base + timedelta(milliseconds=arrival_ms)),
            }
            out.write(json.dumps(rec) + "\n")
