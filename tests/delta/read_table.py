#!/usr/bin/env python3
"""Reads a Delta table with the deltalake package (delta-rs's Python binding), as a user would.

  read_table.py TABLE OUT_DIR

TABLE is a folder, or an s3://bucket/prefix URL: then the S3-compatible store is the one the
AWS_ENDPOINT_URL, AWS_REGION, AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and AWS_ALLOW_HTTP
environment variables name, given to the package as its storage_options, and the log's commit
files are read with pyarrow's own S3 client.

Writes every row of the table's newest version to OUT_DIR/batch-000000.jsonl (one JSON object a
line, timestamps as RFC 3339 UTC, dates as YYYY-MM-DD), the layout ../shared/tools/compare.py
reads, and prints one JSON object: {"version": newest version, "history": [[version, operation],
...] oldest first, "txns": [[version, appId, txn version], ...] (the `txn` action of each
version's commit file), "latest_txn": {appId: the package's transaction_version(appId)}}; for
an s3:// table also "objects": every key under the table (relative to it, sorted) and
"referenced": the data files of the newest version (relative to the table, sorted).
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


def s3_options():
    """The deltalake package's storage_options for the store the AWS_* variables name."""
    keys = ["AWS_ENDPOINT_URL", "AWS_REGION", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_ALLOW_HTTP"]
    return {k: os.environ[k] for k in keys if k in os.environ}


def s3_files(table):
    """pyarrow's S3 file system at the store of `table`, and the table's `bucket/prefix`."""
    from pyarrow import fs

    endpoint = os.environ["AWS_ENDPOINT_URL"]
    scheme, _, host = endpoint.partition("://")
    s3 = fs.S3FileSystem(
        access_key=os.environ["AWS_ACCESS_KEY_ID"],
        secret_key=os.environ["AWS_SECRET_ACCESS_KEY"],
        region=os.environ.get("AWS_REGION", "us-east-1"),
        endpoint_override=host,
        scheme=scheme,
    )
    return s3, table[len("s3://"):].rstrip("/")


def main():
    table, out = sys.argv[1], sys.argv[2]
    on_s3 = table.startswith("s3://")
    t = DeltaTable(table, storage_options=s3_options()) if on_s3 else DeltaTable(table)
    rows = t.to_pyarrow_table().to_pylist()
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "batch-000000.jsonl"), "w") as f:
        for r in rows:
            f.write(json.dumps(plain(r)) + "\n")
    history = sorted((h["version"], h.get("operation")) for h in t.history())
    txns = []
    if on_s3:
        s3, root = s3_files(table)
    for version, _ in history:
        name = f"_delta_log/{version:020d}.json"
        if on_s3:
            with s3.open_input_stream(f"{root}/{name}") as f:
                lines = f.read().decode().splitlines()
        else:
            with open(os.path.join(table, name)) as f:
                lines = f.read().splitlines()
        for line in lines:
            action = json.loads(line)
            if "txn" in action:
                txns.append([version, action["txn"]["appId"], action["txn"]["version"]])
    latest = {app: t.transaction_version(app) for app in sorted({a for _, a, _ in txns})}
    summary = {"version": t.version(), "history": history, "txns": txns, "latest_txn": latest}
    if on_s3:
        from pyarrow import fs

        listed = s3.get_file_info(fs.FileSelector(root, recursive=True))
        summary["objects"] = sorted(i.path[len(root) + 1:] for i in listed if i.type == fs.FileType.File)
        prefix = table.rstrip("/") + "/"
        summary["referenced"] = sorted(u[len(prefix):] for u in t.file_uris())
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
    # The deltalake package's native threads can abort the interpreter's shutdown ("terminate
    # called without an active exception", delta-rs issue 2184; seen once in CI, after the summary
    # was printed): with everything written and flushed, leave without running native destructors.
    sys.stdout.flush()
    os._exit(0)
