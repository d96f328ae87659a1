#!/usr/bin/env python3
"""Checks that Eddy's rows for QUERY (q5, q7, q11) on a file of bids are Flink's: runs the same
query in Flink (PyFlink, parallelism 1, the watermark and windows of flink_nexmark.py) collecting
its rows, reads Eddy's output folder, and compares (key, value, window end) rows.
Flink flushes every window when its bounded input ends; Eddy, as Spark, emits a window only once
the watermark (4 s behind the largest event time) has passed its end. So every Eddy row must be a
Flink row, and every Flink row Eddy lacks must end after Eddy's last watermark.
Usage (the venv of flink-setup.sh): check.py QUERY BIDS.jsonl EDDY_OUT_DIR"""
import datetime as dt, glob, json, sys
from pyflink.table import EnvironmentSettings, TableEnvironment

q, bids, out = sys.argv[1:4]
t = TableEnvironment.create(EnvironmentSettings.in_streaming_mode())
t.get_config().set("parallelism.default", "1")
t.execute_sql(f"""CREATE TABLE bid (auction BIGINT, bidder BIGINT, price BIGINT,
  date_time TIMESTAMP(3), WATERMARK FOR date_time AS date_time - INTERVAL '4' SECOND)
  WITH ('connector'='filesystem', 'path'='{bids}', 'format'='json')""")
window, key, agg = {
    "q5": ("HOP(TABLE bid, DESCRIPTOR(date_time), INTERVAL '2' SECOND, INTERVAL '10' SECOND)", "auction", "COUNT(*)"),
    "q7": ("TUMBLE(TABLE bid, DESCRIPTOR(date_time), INTERVAL '10' SECOND)", "auction", "MAX(price)"),
    "q11": ("SESSION(TABLE bid PARTITION BY bidder, DESCRIPTOR(date_time), INTERVAL '10' SECOND)", "bidder", "COUNT(*)"),
}[q]
flink = set()
with t.execute_sql(f"SELECT {key}, {agg}, window_end FROM TABLE({window}) "
                   f"GROUP BY {key}, window_start, window_end").collect() as rows:
    for r in rows:
        flink.add((r[0], r[1], r[2].replace(tzinfo=None)))

def ts(v):
    return dt.datetime.fromisoformat(v.replace("Z", "+00:00")).replace(tzinfo=None)

eddy = set()
for f in sorted(glob.glob(f"{out}/**/*.jsonl", recursive=True)):
    for line in open(f):
        r = json.loads(line)
        v = [r[k] for k in r if k not in ("window", key)][0]
        eddy.add((r[key], v, ts(r["window"]["end"])))
max_t = max(json.loads(l)["date_time"] for l in open(bids))
watermark = dt.datetime.fromisoformat(max_t) - dt.timedelta(seconds=4)
only_eddy = eddy - flink
only_flink = flink - eddy
late_only_flink = [r for r in only_flink if r[2] > watermark]
print(f"{q}: flink_rows={len(flink)} eddy_rows={len(eddy)} common={len(eddy & flink)} "
      f"only_eddy={len(only_eddy)} only_flink={len(only_flink)} "
      f"(of which ending after the last watermark {watermark}: {len(late_only_flink)})")
print("  sample:", sorted(eddy & flink)[:: max(1, len(eddy & flink) // 3)][:4])
ok = not only_eddy and len(late_only_flink) == len(only_flink)
print("  agree" if ok else f"  DISAGREE: {sorted(only_eddy)[:5]} {sorted(set(only_flink) - set(late_only_flink))[:5]}")
sys.exit(0 if ok else 1)
