#!/usr/bin/env python3
"""Reads a Delta table with the deltalake package (delta-rs's Python binding), as a user would.

  read_table.py TABLE OUT_DIR

Writes every row of the table's newest version to OUT_DIR/batch-000000.jsonl (one JSON object a
line, timestamps as RFC 3339 UTC, dates as YYYY-MM-DD), the layout ../shared/tools/compare.py
reads, and prints one JSON object: {"version": newest version, "history": [[version, operation],
...] oldest first, "txns": [[version, appId, txn version], ...] (the `txn` action of each
version's commit file), "latest_txn": {appId: the package's transaction_version(appId)}}.
"""
import datetime as dt
import decimal
import json
import os
import sys

from deltalake import DeltaTable


def plain(v):
    if isinstance(v, dt.datetime):
        if v.tzinfo is None:
            v = v.replace(tzinfo=dt.timezone.utc)
        return v.astimezone(dt.timezone.utc).isoformat().replace("+00:00", "Z")
    if isinstance(v, dt.date):
        return v.isoformat()
    if isinstance(v, decimal.Decimal):
        return float(v)
    if isinstance(v, dict):
        return {k: plain(x) for k, x in v.items()}
    if isinstance(v, list):
        return [plain(x) for x in v]
    return v


def main():
    table, out = sys.argv[1], sys.argv[2]
    t = DeltaTable(table)
    rows = t.to_pyarrow_table().to_pylist()
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "batch-000000.jsonl"), "w") as f:
        for r in rows:
            f.write(json.dumps(plain(r)) + "\n")
    history = sorted((h["version"], h.get("operation")) for h in t.history())
    txns = []
    for version, _ in history:
        with open(os.path.join(table, "_delta_log", f"{version:020d}.json")) as f:
            for line in f:
                action = json.loads(line)
                if "txn" in action:
                    txns.append([version, action["txn"]["appId"], action["txn"]["version"]])
    latest = {app: t.transaction_version(app) for app in sorted({a for _, a, _ in txns})}
    print(json.dumps({"version": t.version(), "history": history, "txns": txns, "latest_txn": latest}))


if __name__ == "__main__":
    main()
