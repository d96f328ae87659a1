#!/usr/bin/env python3
"""Checks the crash test of a followed folder: the last row of each key in the files sink's
output (batch files in name order) must count exactly the lines the writer wrote of that key.

Usage: check.py OUTPUT_FOLDER EXPECTED
"""
import json
import os
import sys

output, expected = sys.argv[1], sys.argv[2]
with open(expected) as f:
    want = json.load(f)
got = {}
for name in sorted(os.listdir(output)):
    if name.startswith(".") or name.startswith("_"):
        continue
    with open(os.path.join(output, name)) as f:
        for line in f:
            row = json.loads(line)
            got[row["k"]] = row["n"]
if got == want:
    print(f"{sum(want.values())} lines, {len(want)} keys: every count matches")
    sys.exit(0)
for k in sorted(set(got) | set(want)):
    if got.get(k) != want.get(k):
        print(f"  {k}: output {got.get(k)}, written {want.get(k)}")
sys.exit(1)
