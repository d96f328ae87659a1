#!/usr/bin/env python3
"""Corpus of the shapes that have batch kernels of their own in Eddy's compiled expressions
(engine/src/expr/compile.rs, `node_fast`): a DOUBLE, BIGINT, INT or TIMESTAMP column compared with
a constant by each comparison, a DOUBLE column plus, minus or times a constant, `ts +/- INTERVAL`,
`lower` / `upper` of a STRING column, with their neighbours that take the general path (the
constant first, `NOT`, `<=>`), and the forms where Spark's optimizer or its order of evaluation
decides the result. The rows are hand-picked where a kernel could go wrong: NULL, NaN,
both infinities, -0.0 and 0.0, the ends of BIGINT and INT, instants before 1970, strings of 7, 8,
9, 16 and 17 bytes (the kernels read text 8 bytes at a time), the characters on either side of
the letters (`@ [ ` {`), and text that is not ASCII. Evaluated once by Apache Spark (ANSI on,
session time zone UTC) into the golden-file format of gen.py, which
`sql/tests/spark_differential.rs` replays against Eddy a record at a time and through the source
steps' batch path:

    python tests/sql_diff/gen_kernels.py --out tests/sql_diff/golden-kernels.jsonl

(the python of the Spark oracle's venv: ../shared/tools/spark-oracle/setup.sh prints it).
"""
import datetime as dt
import os
import sys
import time

os.environ["TZ"] = "UTC"
time.tzset()
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from spark_corpus import cli  # noqa: E402

SCHEMA = [["d", "double"], ["l", "bigint"], ["i", "int"], ["t", "timestamp"], ["s", "string"]]


def us(text):
    """Microseconds since the epoch of an ISO text (UTC)."""
    v = dt.datetime.fromisoformat(text).replace(tzinfo=dt.timezone.utc)
    delta = v - dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)
    return (delta.days * 86400 + delta.seconds) * 1_000_000 + delta.microseconds


NAN, INF = float("nan"), float("inf")
ROWS = [
    [0.5, 7, -3, us("2024-01-15T10:00:00"), "key-1234"],
    [-0.0, -9223372036854775808, -2147483648, us("1969-12-31T23:59:59.999999"), "KEY-1234"],
    [0.0, 9223372036854775807, 2147483647, us("1970-01-01T00:00:00"), "abcdefg"],
    [NAN, 0, 0, us("2024-01-15T10:00:00.000001"), "abcdefghi"],
    [INF, 5, 5, us("0001-01-03T00:00:00"), "abcdefghABCDEFGH"],
    [-INF, -7, -4, us("9999-12-29T23:00:00"), "abcdefghijklmnopq"],
    [None, None, None, None, None],
    [1e308, 8, -2, us("2024-02-29T23:30:00"), "@[`{ az AZ"],
    [-1e-300, 6, 1, us("1900-03-01T12:00:00"), "Straße"],
    [1.2, 1, 2, us("2024-01-15T09:59:59.999999"), "İstanbul"],
    [7.0, -1, -1, us("2000-02-29T00:00:00"), ""],
    [-2.5, 9223372036854775806, 2147483646, us("1970-01-01T01:00:00"), "ǅ mixed Case é"],
    [2.0 ** 53 + 1, 4, 3, us("2024-01-15T10:00:00"), "k"],
    [NAN, None, 7, us("2024-12-31T23:59:59"), "0123456789-_~"],
]

COMPARISONS = ["=", "<>", "!=", "<", "<=", ">", ">="]
OPERANDS = ["d", "l", "i", "t", "s"]
CONSTANTS = {
    "d": ["0.5", "0", "-0.0", "1e308", "-1e0", "CAST('NaN' AS DOUBLE)", "7"],
    "l": ["7", "-9223372036854775808", "9223372036854775807", "0", "5"],
    "i": ["-3", "2147483647", "-2147483648", "0", "7"],
    "t": ["TIMESTAMP '2024-01-15 10:00:00'", "TIMESTAMP '1970-01-01 00:00:00'", "TIMESTAMP '0001-01-01 00:00:00'"],
    "s": ["'k'", "'key-1234'", "''"],
}

EXPRS = (
    [f"{c} {op} {k}" for c in OPERANDS for op in COMPARISONS for k in CONSTANTS[c]]
    # the general path beside them
    + [f"{k} {op} {c}" for c in OPERANDS for op in ("<", ">=") for k in CONSTANTS[c][:2]]
    + [f"NOT ({c} {op} {CONSTANTS[c][0]})" for c in OPERANDS for op in ("<", ">=", "=")]
    + [f"{c} <=> {CONSTANTS[c][0]}" for c in OPERANDS]
    + [f"d {op} {k}" for op in ("+", "-", "*") for k in ("1.2", "0.5", "-0.0", "1e300", "-1e308", "0")]
    + ["l * 2", "l + 1", "i - 1", "d / 2", "1.2 * d"]
    + [f"t {op} INTERVAL {k}" for op in ("+", "-") for k in ("1 HOUR", "'1' DAY", "90 MINUTES", "1 MICROSECOND")]
    + ["lower(s)", "upper(s)", "LOWER(s)", "lower(upper(s))", "upper(lower(s))", "lower(s) = s", "upper(s) = s"]
    # where Spark's optimizer or its order of evaluation decides: case conversions of case
    # conversions, a NULL operand beside one that fails, sums and products of integers, the
    # branches not taken, AND with FALSE and OR with TRUE
    + ["upper(upper(s))", "lower(lower(upper(s)))", "lcase(ucase(s))", "ucase(lower(s))",
       "NULL + (l * 2)", "(l * 2) + NULL", "NULL - (l * 2)", "(l * 2) <=> NULL", "(l * 2) IS NULL",
       "(l * 2) = NULL", "-1 + l + 1", "l + 1 + -1", "l + (1 + -1)", "i * 2 * 0", "2 * i * 0",
       "coalesce(l, l * 2)", "if(i > 0, i, i - 1)", "CASE WHEN l > 0 THEN l ELSE l * 2 END",
       "CASE WHEN i = 0 THEN 0 ELSE 10 div i END", "if(d > 0, d, 1 / d)",
       "(l * 2) < NULL", "NOT ((l * 2) = NULL)", "abs(l * 2) + NULL", "-(l * 2) + NULL", "(l * 2) IN (NULL)",
       "(l * 2) * CAST(NULL AS BIGINT)", "concat(CAST(s AS INT), NULL)", "(l * 2) + 1 + NULL", "l + 9223372036854775807 + 1",
       "try_add(l * 2, 1)", "try_multiply(l * 2, 1)", "try_divide(l * 2, 1)", "try_add(l, NULL)", "l * 2 * 3 * 0",
       "(l * 2 > 0) AND false", "false AND (l * 2 > 0)", "(l * 2 > 0) OR true", "(l * 2 > 0) AND (1 = 2)",
       "(l * 2 > 0) OR (1 < 2)", "(l * 2 > 0) AND NULL", "(l * 2 > 0) AND true", "abs(l) IS NULL",
       "CAST(s AS INT) IS NULL", "coalesce(NULL, l, l * 2)", "CASE WHEN false THEN l * 2 ELSE 1 END",
       "nullif(l, l * 2)", "length(s) IS NULL"]
)


def main():
    cli(SCHEMA, ROWS, EXPRS, "sql-diff-kernels")


if __name__ == "__main__":
    main()
