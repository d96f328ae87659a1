#!/usr/bin/env python3
"""Compares two files-sink folders: the same committed files, each with the same lines (as a
multiset: rows of one batch / epoch come from several partition actors in any order), and no
temporary file left visible. Exit 0 when identical, 1 otherwise (with what differs).

Usage: compare.py EXPECTED ACTUAL
"""
import collections
import os
import sys

def load(folder):
    out = {}
    for name in sorted(os.listdir(folder)):
        if name.startswith("."):
            continue
        with open(os.path.join(folder, name)) as f:
            out[name] = collections.Counter(f.read().splitlines())
    return out

expected, actual = load(sys.argv[1]), load(sys.argv[2])
problems = []
for name in sorted(set(expected) | set(actual)):
    e, a = expected.get(name), actual.get(name)
    if e is None:
        problems.append(f"{name}: not in the uninterrupted run")
    elif a is None:
        problems.append(f"{name}: missing")
    elif e != a:
        lost = sum((e - a).values())
        extra = sum((a - e).values())
        problems.append(f"{name}: {lost} rows lost, {extra} rows extra or duplicated")
rows = sum(sum(c.values()) for c in expected.values())
if problems:
    print(f"DIFFERENT ({len(problems)} files):\n  " + "\n  ".join(problems[:20]))
    sys.exit(1)
print(f"identical: {len(expected)} files, {rows} rows")
