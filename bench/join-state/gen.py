#!/usr/bin/env python3
"""Input of the bounded-state join run: RECORDS records split evenly between two sources
(`orders`, `payments`), FILES files each, JSON lines. Event time advances 1 ms per record pair
(so a 1-minute join range spans about 60,000 records of each side), with up to 2 s of disorder;
keys are drawn from 50,000 values, so a key's rows spread over the whole run. Deterministic.

Usage: gen.py FOLDER RECORDS FILES
"""
import os
import random
import sys
from datetime import datetime, timedelta, timezone

folder, records, files = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
rng = random.Random(7)
base = datetime(2024, 1, 15, tzinfo=timezone.utc)
per_file = records // 2 // files
n = 0
for side, key, ts in (("orders", "k", "ts"), ("payments", "pk", "paid")):
    os.makedirs(os.path.join(folder, side), exist_ok=True)
    n = 0
    for f in range(files):
        lines = []
        for _ in range(per_file):
            t = base + timedelta(milliseconds=n - rng.randint(0, 2000))
            lines.append('{"%s": "c%d", "%s": "%s", "v": %d}' % (
                key, rng.randint(0, 49999), ts, t.strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z", rng.randint(1, 999)))
            n += 1
        with open(os.path.join(folder, side, f"{f:04}.json"), "w") as out:
            out.write("\n".join(lines) + "\n")
