#!/usr/bin/env python3
"""Reads the Parquet files a Delta table's log references with plain Spark (no Delta package).

  spark_read_parquet.py TABLE OUT_DIR [TABLE OUT_DIR ...]

For each TABLE: replays TABLE/_delta_log/*.json (add, remove) to the table's current files,
reads them with spark.read.parquet, and writes the rows to OUT_DIR/batch-000000.jsonl
(timestamps RFC 3339 UTC) for ../shared/tools/compare.py. One Spark session reads them all.
Prints the number of files read per table. Run with the Spark oracle's python (pyspark).
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


def current_files(table):
    """The table's current data files (path -> partition values), from its log's JSON commits."""
    files = {}
    for name in sorted(glob.glob(os.path.join(table, "_delta_log", "*.json"))):
        with open(name) as f:
            for line in f:
                action = json.loads(line)
                if "add" in action:
                    files[action["add"]["path"]] = action["add"]["partitionValues"]
                if "remove" in action:
                    files.pop(action["remove"]["path"], None)
    return files


def main():
    args = sys.argv[1:]
    if not args or len(args) % 2:
        sys.exit("usage: spark_read_parquet.py TABLE OUT_DIR [TABLE OUT_DIR ...]")
    spark = (
        SparkSession.builder.master("local[1]")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.ui.enabled", "false")
        .getOrCreate()
    )
    for table, out in zip(args[::2], args[1::2]):
        files = current_files(table)
        os.makedirs(out, exist_ok=True)
        with open(os.path.join(out, "batch-000000.jsonl"), "w") as f:
            for path, partition in files.items():
                for row in spark.read.parquet(os.path.join(table, unquote(path))).collect():
                    r = {k: plain(v) for k, v in row.asDict().items()}
                    r.update(partition)
                    f.write(json.dumps(r) + "\n")
        print(table, len(files))
    spark.stop()


if __name__ == "__main__":
    main()
