#!/usr/bin/env python3
"""Writes the inputs and pipelines of the stream-stream join cases (`sql-stream-join-*`).

Deterministic (a fixed seed per case): run it again and the same files come out. The expected
outputs are NOT written here: they come from the Spark oracle (see README.md, make_expected.py).

Each case reads two sources, `lefts` (id STRING, lt TIMESTAMP, lv BIGINT) and `rights` (rid
STRING, rt TIMESTAMP, rv BIGINT), each with a 10-second watermark on its time column, one file
per micro-batch per source. Times are on a 5-second grid so that a row's time plus the join's
range bound often equals a batch's watermark exactly (the boundary of eviction and of lateness);
every batch carries some rows older than the watermark (late on that side) and an occasional
null key.

    python3 tests/cases-sql/gen_stream_joins.py   # rewrites input/ and pipeline.toml of each case
"""
import json
import pathlib
import random

BASE = "2024-01-15T10:"
HERE = pathlib.Path(__file__).resolve().parent


def ts(sec):
    return f"{BASE}{sec // 60:02d}:{sec % 60:02d}Z"


PIPELINE = """name = "{name}"
mode = "micro-batch"

[[source]]
name = "lefts"
type = "files"
path = "input/lefts"
format = "json"
schema = "id STRING, lt TIMESTAMP, lv BIGINT"
watermark = {{ column = "lt", delay = "10 seconds" }}

[[source]]
name = "rights"
type = "files"
path = "input/rights"
format = "json"
schema = "rid STRING, rt TIMESTAMP, rv BIGINT"
watermark = {{ column = "rt", delay = "10 seconds" }}

[query]
sql = \"\"\"
{sql}
\"\"\"
output_mode = "{mode}"

[sink]
type = "files"
path = "output"
"""

RANGE = "r.rt BETWEEN l.lt AND l.lt + INTERVAL 30 SECONDS"
CASES = {
    "sql-stream-join-inner-late": f"SELECT l.id, l.lt, l.lv, r.rt, r.rv\nFROM lefts l JOIN rights r\nON l.id = r.rid AND {RANGE}",
    "sql-stream-join-left-outer": f"SELECT l.id, l.lt, l.lv, r.rt, r.rv\nFROM lefts l LEFT OUTER JOIN rights r\nON l.id = r.rid AND {RANGE}",
    "sql-stream-join-right-outer": "SELECT l.lt, l.lv, r.rid, r.rt, r.rv\nFROM lefts l RIGHT JOIN rights r\n"
    "ON l.id = r.rid AND r.rt BETWEEN l.lt - INTERVAL 10 SECONDS AND l.lt + INTERVAL 20 SECONDS",
    "sql-stream-join-full-outer": "SELECT l.id, l.lt, l.lv, r.rid, r.rt, r.rv\nFROM lefts l FULL OUTER JOIN rights r\n"
    "ON r.rid = l.id AND l.lt >= r.rt - INTERVAL 15 SECONDS AND l.lt < r.rt + INTERVAL 5 SECONDS",
    "sql-stream-join-left-semi": f"SELECT *\nFROM lefts l LEFT SEMI JOIN rights r\nON l.id = r.rid AND {RANGE}",
    "sql-stream-join-no-range": "SELECT l.id, l.lt, r.rt, r.rv\nFROM lefts l JOIN rights r\nON l.id = r.rid",
    "sql-stream-join-swapped-left-outer": "SELECT r.rid, r.rt, l.lt, l.lv\nFROM rights r LEFT JOIN lefts l\n"
    "ON r.rid = l.id AND l.lt BETWEEN r.rt - INTERVAL 20 SECONDS AND r.rt",
    "sql-stream-join-computed-where": f"SELECT l.id AS ad, l.lv + r.rv AS total, r.rt, unix_seconds(r.rt) - unix_seconds(l.lt) AS after_s\n"
    f"FROM lefts AS l INNER JOIN rights AS r\nON l.id = r.rid AND {RANGE}\nWHERE l.lv % 2 = 1 AND r.rv > 2",
    # (the SQL, then: values drawn from 0..VALUES, MORE extra rows a batch per source)
    "sql-stream-join-two-keys": (f"SELECT l.id, l.lv, l.lt, r.rt\nFROM lefts l JOIN rights r\nON l.id = r.rid AND r.rv = l.lv AND {RANGE}", 2, 4),
    "sql-stream-join-on-filters": ("SELECT *\nFROM lefts l JOIN rights r\n"
    "ON l.id = r.rid AND r.rt >= l.lt AND r.rt <= l.lt + INTERVAL 20 SECONDS AND l.lv > 3 AND r.rv < 8", 10, 4),
    # an aggregation after the join (SPARK-42376: the join forwards W - 30 s - 1 ms, so its rows
    # are never late for the aggregation; windows end on a 20 s grid and W moves on a 5 s one, so
    # a window's end often equals W - 30 s exactly: it closes one batch later, pinning the 1 ms)
    "sql-stream-join-agg-inner-tumbling": (f"SELECT window(l.lt, '20 seconds') AS window, l.id, count(*) AS pairs, sum(r.rv) AS rv\n"
    f"FROM lefts l JOIN rights r\nON l.id = r.rid AND {RANGE}\nGROUP BY window(l.lt, '20 seconds'), l.id", 10, 2, 9),
    # keyed by a right column, not the join key: the aggregation's input is exchanged
    "sql-stream-join-agg-other-key": (f"SELECT window(r.rt, '30 seconds') AS window, r.rv % 3 AS bucket, count(*) AS pairs, max(l.lv) AS top\n"
    f"FROM lefts l JOIN rights r\nON l.id = r.rid AND {RANGE}\nWHERE l.lv > 0\nGROUP BY 1, 2\nHAVING count(*) > 1", 10, 2, 9),
    # a left outer join (its NULL-padded rows counted too) then a sliding window
    "sql-stream-join-agg-left-outer-sliding": (f"SELECT window(l.lt, '20 seconds', '10 seconds') AS window, l.id, count(*) AS n, count(r.rt) AS matched, min(r.rv) AS low\n"
    f"FROM lefts l LEFT JOIN rights r\nON l.id = r.rid AND {RANGE}\nGROUP BY window(l.lt, '20 seconds', '10 seconds'), l.id", 10, 1, 9),
    # the aggregation's own output mode after the join: update (each changed window every batch)
    "sql-stream-join-agg-update": (f"SELECT window(l.lt, '20 seconds') AS window, l.id, count(*) AS pairs, sum(r.rv) AS rv\n"
    f"FROM lefts l JOIN rights r\nON l.id = r.rid AND {RANGE}\nGROUP BY window(l.lt, '20 seconds'), l.id", 10, 2, 9, "update"),
    # a full outer join's rows hold the join key in either copy: the aggregation after it is
    # always behind an exchange; a right row without a match has no left time (no window)
    "sql-stream-join-agg-full-outer": (f"SELECT window(l.lt, '20 seconds') AS window, l.id, count(*) AS pairs, sum(r.rv) AS rv\n"
    f"FROM lefts l FULL OUTER JOIN rights r\nON l.id = r.rid AND {RANGE}\nGROUP BY window(l.lt, '20 seconds'), l.id", 10, 2, 9),
    # a left semi join then an update aggregation (Spark allows update after inner and semi
    # joins, not after outer ones)
    "sql-stream-join-agg-semi-update": (f"SELECT window(l.lt, '20 seconds') AS window, l.id, count(*) AS n, sum(l.lv) AS lv\n"
    f"FROM lefts l LEFT SEMI JOIN rights r\nON l.id = r.rid AND {RANGE}\nGROUP BY window(l.lt, '20 seconds'), l.id", 10, 2, 9, "update"),
    # the subquery form: the join (its WHERE and select list) in FROM, the aggregation over its
    # rows, windowed on the left time the subquery selects as it is
    "sql-stream-join-agg-subquery": ("SELECT window(lt, '20 seconds') AS window, id, count(*) AS pairs, max(total) AS top\n"
    f"FROM (SELECT l.id, l.lt, l.lv + r.rv AS total\n      FROM lefts l JOIN rights r ON l.id = r.rid AND {RANGE}\n      WHERE r.rv > 1) AS j\n"
    "GROUP BY window(lt, '20 seconds'), id", 10, 2, 9),
}


def rows(rng, batch, side, values=10, more=0):
    """One source's rows of one batch: mostly near the batch's frontier, a few behind it."""
    out = []
    front = 20 * batch + (0 if side == "l" else 10)
    for _ in range(rng.randint(2, 5) + more):
        sec = max(0, front + 5 * rng.randint(-2, 3))
        if rng.random() < 0.2:
            sec = max(0, front - 5 * rng.randint(6, 9))  # behind the watermark: late on this side
        key = None if rng.random() < 0.08 else f"k{rng.randint(0, 3)}"
        out.append((key, sec, rng.randint(0, 9) if values == 10 else rng.randint(0, values - 1)))
    return out


def write(name, sql, seed, values=10, more=0, batches=6, mode="append"):
    rng = random.Random(seed)
    case = HERE / name
    for side, cols in (("lefts", ("id", "lt", "lv")), ("rights", ("rid", "rt", "rv"))):
        folder = case / "input" / side
        folder.mkdir(parents=True, exist_ok=True)
        for old in folder.glob("*.json"):
            old.unlink()
    for b in range(batches):
        for side, cols in (("lefts", ("id", "lt", "lv")), ("rights", ("rid", "rt", "rv"))):
            lines = [json.dumps({cols[0]: k, cols[1]: ts(s), cols[2]: v}) for k, s, v in rows(rng, b, side[0], values, more)]
            (case / "input" / side / f"{b:03d}.json").write_text("\n".join(lines) + "\n")
    (case / "expected").mkdir(exist_ok=True)
    (case / "pipeline.toml").write_text(PIPELINE.format(name=name, sql=sql, mode=mode))


if __name__ == "__main__":
    for i, (name, case) in enumerate(CASES.items()):
        sql, *shape = case if isinstance(case, tuple) else (case,)
        write(name, sql, 1000 + i, *shape)
        print(name)
