#!/usr/bin/env python3
"""Turns a Delta table written by Eddy into one file per batch, the files sink's layout, for
compare.py: OUT/batch-<N>.jsonl holds the rows of the version whose `txn` version is N (its added
Parquet files, read with pyarrow), one JSON object a line with sorted keys.

Fails (exit 1, saying why) when two versions carry the same txn version or the txn versions go
back (a batch written twice), when a version has no txn, when a file the log references is
missing, or when a file of the table outside its log is referenced by no version (a file of an
uncommitted batch left behind, staged or moved into place).

Usage: delta_batches.py TABLE OUT   (with a python that has the deltalake package's pyarrow)
"""
import glob
import json
import os
import sys
from urllib.parse import unquote

import pyarrow.parquet as pq


def main():
    table, out = sys.argv[1], sys.argv[2]
    os.makedirs(out, exist_ok=True)
    problems = []
    referenced = set()
    seen = []
    for name in sorted(glob.glob(os.path.join(table, "_delta_log", "*.json"))):
        actions = [json.loads(line) for line in open(name)]
        txns = [a["txn"]["version"] for a in actions if "txn" in a]
        if len(txns) != 1:
            problems.append(f"{os.path.basename(name)}: {len(txns)} txn actions")
            continue
        batch = txns[0]
        if seen and batch <= seen[-1]:
            problems.append(f"{os.path.basename(name)}: txn version {batch} after {seen[-1]} (written twice?)")
        seen.append(batch)
        rows = []
        for a in actions:
            if "add" in a:
                path = unquote(a["add"]["path"])
                referenced.add(os.path.normpath(path))
                for r in pq.read_table(os.path.join(table, path)).to_pylist():
                    r.update(a["add"]["partitionValues"])
                    rows.append(json.dumps(r, sort_keys=True, default=str))
        with open(os.path.join(out, f"batch-{batch:06d}.jsonl"), "w") as f:
            f.write("".join(r + "\n" for r in rows))
    for path in glob.glob(os.path.join(table, "**", "*"), recursive=True, include_hidden=True):
        rel = os.path.normpath(os.path.relpath(path, table))
        if os.path.isdir(path) or rel.startswith("_delta_log"):
            continue
        if rel.startswith("_eddy_staging"):
            problems.append(f"{rel}: a staged file left after the final run")
        elif rel not in referenced:
            problems.append(f"{rel}: referenced by no version")
    if problems:
        print("\n".join(problems))
        sys.exit(1)


if __name__ == "__main__":
    main()
