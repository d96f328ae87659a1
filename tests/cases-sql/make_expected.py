#!/usr/bin/env python3
"""Writes the expected outputs of golden cases with the Spark oracle, several cases per Spark start.

    py=$(/work/shared/tools/spark-oracle/setup.sh)
    $py tests/cases-sql/make_expected.py tests/cases-sql/CASE [tests/cases-sql/OTHER ...]

Each CASE folder holds pipeline.toml and input/; its expected/ is emptied and written anew by
../shared/tools/spark-oracle/oracle.py, imported as a module and run once per case inside one
Python process, so that the JVM and the SparkSession start once (a Spark start dominates a run).
oracle.py stops its session at the end of a run; here that stop is deferred to the end of all
cases, and what a run leaves in the session (temporary views, the watermark policy) is cleared
before the next one. A case the oracle refuses or Spark fails on is reported and left without
expected/; the exit code is then 1.
"""
import os
import shutil
import sys
import tempfile

ORACLE_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "shared",
                          "tools", "spark-oracle")
sys.path.insert(0, os.environ.get("SPARK_ORACLE_DIR", ORACLE_DIR))

import oracle  # noqa: E402  (oracle.py pins TZ=UTC when imported)
from pyspark.sql import SparkSession  # noqa: E402

WATERMARK_POLICY = "spark.sql.streaming.multipleWatermarkPolicy"


def run_case(folder):
    """Runs oracle.main() on one case folder; returns None on success, else what went wrong."""
    expected = os.path.join(folder, "expected")
    shutil.rmtree(expected, ignore_errors=True)
    sys.argv = ["oracle.py", os.path.join(folder, "pipeline.toml"),
                "--input", os.path.join(folder, "input"), "--output", expected]
    err = None
    try:
        oracle.main()
    except SystemExit as e:
        err = f"oracle exited {e.code}"
    except Exception as e:  # Spark's errors reach Python as several exception types
        err = f"{type(e).__name__}: {str(e).strip().splitlines()[0]}"
    finally:
        spark = SparkSession.getActiveSession()
        if spark is not None:
            for view in spark.catalog.listTables():
                if view.isTemporary:
                    spark.catalog.dropTempView(view.name)
            spark.conf.unset(WATERMARK_POLICY)
    if err:  # no partial expected output
        shutil.rmtree(expected, ignore_errors=True)
    return err


def main():
    folders = sys.argv[1:]
    if not folders:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    folders = [os.path.abspath(f) for f in folders]
    work = tempfile.mkdtemp(prefix="make-expected-")
    os.chdir(work)  # Spark leaves a spark-warehouse folder in the working directory
    stop = SparkSession.stop
    SparkSession.stop = lambda self: None  # keep the session for the next case
    failed = []
    try:
        for folder in folders:
            err = run_case(folder)
            print(f"{folder}: {err or 'ok'}", flush=True)
            if err:
                failed.append(folder)
    finally:
        SparkSession.stop = stop
        spark = SparkSession.getActiveSession()
        if spark is not None:
            spark.stop()
        shutil.rmtree(work, ignore_errors=True)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
