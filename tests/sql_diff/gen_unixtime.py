#!/usr/bin/env python3
"""Corpus of Spark's epoch-seconds functions (SQL.md "time"): `from_unixtime(seconds[, pattern])`
and `unix_timestamp(ts | date | string[, pattern])`, day names in `date_format`, with their neighbours `unix_seconds`,
`timestamp_seconds`, over hand-picked rows (the epoch, before 1970, a leap day, the last second
of year 9999, fractions of a second that floor, nulls), evaluated once by Apache Spark (ANSI on,
session time zone UTC) into the golden-file format of gen.py, which
`sql/tests/spark_differential.rs` replays against Eddy:

    python tests/sql_diff/gen_unixtime.py --out tests/sql_diff/golden-unixtime.jsonl

(the python of the Spark oracle's venv: ../shared/tools/spark-oracle/setup.sh prints it). The
expressions are listed here rather than generated: the random grammar of gen.py would compute
seconds beyond year 9999, where Spark's formatter writes what PySpark cannot hand over.
"""
import datetime as dt
import os
import sys
import time

os.environ["TZ"] = "UTC"
time.tzset()
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from spark_corpus import cli  # noqa: E402

SCHEMA = [["secs", "bigint"], ["small", "int"], ["t", "timestamp"], ["d", "date"], ["s", "string"],
          ["bad", "string"], ["x", "double"], ["n", "string"]]


def us(text):
    """Microseconds since the epoch of an ISO text (UTC)."""
    v = dt.datetime.fromisoformat(text).replace(tzinfo=dt.timezone.utc)
    delta = v - dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)
    return (delta.days * 86400 + delta.seconds) * 1_000_000 + delta.microseconds


def days(text):
    return (dt.date.fromisoformat(text) - dt.date(1970, 1, 1)).days


ROWS = [
    [1705312800, 7, us("2024-01-15T10:00:00.500000"), days("2024-01-15"), "2024-01-15 10:00:00", "2024-01-15 10:00:00", 1.5, "12"],
    [0, 0, us("1970-01-01T00:00:00"), days("1970-01-01"), "1970-01-01 00:00:00", "x", -1.5, "-1"],
    [-1, -1, us("1969-12-31T23:59:59.500000"), days("1969-12-31"), "1969-12-31 23:59:59", "2024-01-15", 1705312800.999, "1705312800"],
    [951782400, 86399, us("2000-02-29T23:59:59.999999"), days("2000-02-29"), "2000-02-29 12:34:56", None, None, None],
    [253402300799, None, us("9999-12-31T23:59:59"), days("9999-12-31"), "9999-12-31 23:59:59", None, 0.0, " 7 "],
    [-62135596800, 60, us("0001-01-01T00:00:00"), days("0001-01-01"), "0001-01-01 00:00:00", None, -86400.25, "86400"],
    [None, 2147483647, None, None, None, None, None, "0"],
    [86400, 3600, us("2024-02-29T12:00:00"), days("2024-02-29"), "2024-02-29 23:59:59", "2024-02-29 23:59:59", 2.5e9, "951782400"],
    [1, 1, us("1970-01-01T00:00:00.999999"), days("1970-01-02"), "1970-01-01 00:00:01", None, 1e-3, "-2147483649"],
    [-86401, -86401, us("1969-12-31T00:00:00.000001"), days("1969-12-30"), "1969-12-30 23:59:59", None, -0.0, "60"],
    [1709251199, -2147483648, us("2024-02-29T23:59:59.000001"), days("1900-03-01"), "1900-02-28 00:00:00", None, 59.99, "3600"],
]

PATTERNS = ["yyyy-MM-dd HH:mm:ss", "yyyy-MM-dd", "HH:mm", "yyyy/MM/dd HH:mm:ss", "yyyy-MM-dd HH:mm:ss.SSS",
            "MM/dd/yyyy", "yyyy-MM-dd''T''HH:mm"]
DAY_PATTERNS = ["E", "EE", "EEE", "EEEE", "yyyy-MM-dd E", "EEEE, MMMM d, yyyy", "EEE HH:mm a"]
# seconds: columns and expressions that stay within years 1 to 294247 (secs * 2 passes 9999)
SECONDS = ["secs", "small", "secs + 1", "CAST(small AS BIGINT) * 60", "secs * 2", "unix_seconds(t)",
           "CAST(small AS BIGINT) - 86400", "x", "n"]
# TIMESTAMP and DATE operands of unix_timestamp (a pattern is ignored for them)
TIMES = ["t", "d", "t + INTERVAL 1 SECOND", "t - INTERVAL 1 HOUR", "CAST(d AS TIMESTAMP)", "date_trunc('HOUR', t)",
         "timestamp_seconds(secs)", "timestamp_millis(small)", "timestamp_micros(secs)", "to_timestamp(s)"]

EXPRS = (
    [f"from_unixtime({x})" for x in SECONDS]
    + [f"from_unixtime({x}, '{p}')" for x in SECONDS for p in PATTERNS[1:]]
    + [f"unix_timestamp({x})" for x in TIMES]
    + [f"unix_timestamp({x}, '{p}')" for x in TIMES for p in ("yyyy", "HH:mm")]
    # strings parsed with the pattern they were written in, and with one they do not match
    + [f"unix_timestamp(from_unixtime(secs, '{p}'), '{p}')" for p in PATTERNS]
    + [f"unix_timestamp(date_format(t, '{p}'), '{p}')" for p in PATTERNS]
    + [f"unix_timestamp(s, '{p}')" for p in PATTERNS]
    + [
        "from_unixtime(-1)",
        "from_unixtime(NULL)",
        "FROM_UNIXTIME(secs + 1)",
        "unix_timestamp(s)",
        "unix_timestamp(substring(s, 1, 10), 'yyyy-MM-dd')",
        "unix_timestamp(bad)",
        "unix_timestamp('2024-01-15', 'yyyy-MM-dd')",
        "unix_timestamp(from_unixtime(secs))",
        "from_unixtime(unix_timestamp(t))",
        "unix_timestamp(t) = unix_seconds(t)",
        "unix_timestamp(NULL)",
        "unix_timestamp(small)",
        "from_unixtime(s)",
        "from_unixtime(CAST(x AS DECIMAL(20, 3)))",
        "from_unixtime(CAST(x AS FLOAT))",
    ]
    # day names: written by date_format and from_unixtime (E to EEEE), refused beyond EEEE and in
    # a pattern that parses
    + [f"date_format(t, '{p}')" for p in DAY_PATTERNS]
    + [
        "date_format(d, 'EEE')",
        "date_format(t, '''E'' EEEE')",
        "from_unixtime(secs, 'EEEE yyyy-MM-dd')",
        "date_format(t, 'EEEEE')",
        "to_timestamp(s, 'EEE yyyy-MM-dd HH:mm:ss')",
        "unix_timestamp(s, 'E yyyy')",
    ]
)


def main():
    cli(SCHEMA, ROWS, EXPRS, "sql-diff-unixtime")


if __name__ == "__main__":
    main()
