#!/usr/bin/env python3
"""Reads the Parquet files a Delta table's log references with plain Spark (no Delta package).

  spark_read_parquet.py TABLE OUT_DIR

Replays TABLE/_delta_log/*.json (add, remove) to the table's current files, reads them with
spark.read.parquet, and writes the rows to OUT_DIR/batch-000000.jsonl (timestamps RFC 3339 UTC)
for ../shared/tools/compare.py. Run with the Spark oracle's python (pyspark).
"""
import datetime as dt
import glob
import json
import os
import sys
from urllib.parse import unquote

os.environ["TZ"] = "UTC"

from pyspark.sql import SparkSession  # noqa: E402


def plain(v):
    if isinstance(v, dt.datetime):
        return v.replace(tzinfo=dt.timezone.utc).isoformat().replace("+00:00", "Z")
    if isinstance(v, dt.date):
        return v.isoformat()
    if hasattr(v, "asDict"):
        return {k: plain(x) for k, x in v.asDict().items()}
    return v


def main():
    table, out = sys.argv[1], sys.argv[2]
    files = {}
    for name in sorted(glob.glob(os.path.join(table, "_delta_log", "*.json"))):
        with open(name) as f:
            for line in f:
                action = json.loads(line)
                if "add" in action:
                    files[action["add"]["path"]] = action["add"]["partitionValues"]
                if "remove" in action:
                    files.pop(action["remove"]["path"], None)
    spark = (
        SparkSession.builder.master("local[1]")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.ui.enabled", "false")
        .getOrCreate()
    )
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "batch-000000.jsonl"), "w") as f:
        for path, partition in files.items():
            for row in spark.read.parquet(os.path.join(table, unquote(path))).collect():
                r = {k: plain(v) for k, v in row.asDict().items()}
                r.update(partition)
                f.write(json.dumps(r) + "\n")
    spark.stop()
    print(len(files))


if __name__ == "__main__":
    main()
