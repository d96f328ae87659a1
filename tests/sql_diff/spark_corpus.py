"""What gen_unixtime.py and gen_kernels.py share: a list of expressions evaluated once by Apache
Spark (ANSI on, session time zone UTC) over hand-picked rows, written in gen.py's golden-file
format (a header with the schema and the rows, then one line per expression: its name, type and
values, or the error Spark raised), which `sql/tests/spark_differential.rs` replays."""
import argparse
import json
import os
import sys
import time

os.environ["TZ"] = "UTC"
time.tzset()
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gen import python_rows, to_json  # noqa: E402


def cli(schema, rows, exprs, app):
    """A generator's command line: `--out PATH`, the corpus of `exprs` over `rows` written there."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    evaluate_and_write(schema, rows, exprs, a.out, app)


def evaluate_and_write(schema, rows, exprs, out_path, app):
    """Evaluates `exprs` with Spark over `rows` (`schema`: [name, type] pairs; a timestamp is
    microseconds since the epoch, a date days since 1970-01-01) and writes the corpus to
    `out_path`. An expression Spark refuses is written as an "analysis" error, one that fails
    while running as a "runtime" error, one whose value PySpark cannot hand over (a timestamp
    past year 9999) as a "python" one, which the test skips."""
    from pyspark.sql import SparkSession
    from pyspark.sql.types import (DateType, DoubleType, IntegerType, LongType, StringType, StructField, StructType,
                                   TimestampType)
    spark = (SparkSession.builder.master("local[1]").appName(app)
             .config("spark.sql.session.timeZone", "UTC")
             .config("spark.sql.ansi.enabled", "true")
             .config("spark.ui.enabled", "false").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    types = {"bigint": LongType(), "int": IntegerType(), "timestamp": TimestampType(), "date": DateType(),
             "double": DoubleType(), "string": StringType()}
    st = StructType([StructField(n, types[t], True) for n, t in schema])
    df = spark.createDataFrame(python_rows(schema, rows), st).cache()
    df.count()

    def cls(ex):
        for m in ("getCondition", "getErrorClass"):
            f = getattr(ex, m, None)
            if f:
                c = f()
                if c:
                    return c
        return type(ex).__name__

    out = []
    for x in exprs:
        try:
            q = df.selectExpr(x)
        except Exception as ex:
            out.append({"expr": x, "error": "analysis", "class": cls(ex)})
            continue
        try:
            got = q.collect()
        except Exception as ex:
            kind = "runtime" if "pyspark" in type(ex).__module__ else "python"
            out.append({"expr": x, "error": kind, "class": cls(ex)})
            continue
        f = q.schema.fields[0]
        t = f.dataType.simpleString()
        out.append({"expr": x, "name": f.name, "type": t, "values": [to_json(r[0], t) for r in got]})
    spark.stop()
    header_rows = [[to_json(v, t) for v, (_, t) in zip(r, schema)] for r in rows]
    with open(out_path, "w") as fh:
        fh.write(json.dumps({"schema": schema, "rows": header_rows}, ensure_ascii=False) + "\n")
        for o in out:
            fh.write(json.dumps(o, ensure_ascii=False) + "\n")
    print(f"wrote {len(out)} expressions x {len(rows)} rows to {out_path}", file=sys.stderr)
