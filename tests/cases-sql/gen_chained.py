#!/usr/bin/env python3
"""Writes the inputs and pipelines of the chained-aggregation cases (`sql-chain-*`).

Deterministic (a fixed seed per case): run it again and the same files come out. The expected
outputs are NOT written here: they come from the Spark oracle (see README.md, make_expected.py).

Each case reads one source, one file per micro-batch, with a 10-second watermark; from the third
batch on, about one row in five is in windows the late-input watermark has passed (late for the
inner aggregation, dropped). For the
cases with `max_by`, the seed is the first from the given one whose input has no tie for the
maximum in any window, with or without its late rows (Spark's `max_by` picks among ties by
arrival order, which no engine must match).

    python3 tests/cases-sql/gen_chained.py   # rewrites input/ and pipeline.toml of each case
"""
import collections
import json
import pathlib
import random

BASE = "2024-01-15T10:"
HERE = pathlib.Path(__file__).resolve().parent
BATCHES = 6


def ts(sec):
    return f"{BASE}{sec // 60:02d}:{sec % 60:02d}Z"


PIPELINE = """name = "{name}"
mode = "micro-batch"

[[source]]
name = "{source}"
type = "files"
path = "input"
format = "json"
schema = "{schema}"
watermark = {{ column = "ts", delay = "10 seconds" }}

[query]
sql = \"\"\"
{sql}
\"\"\"
output_mode = "append"

[sink]
type = "files"
path = "output"
{select}"""

CASES = {
    # tumbling 10 s per user, then 30 s windows of those windows per user (grouped by the inner
    # key as well: no exchange needed, so it runs at every parallelism)
    "sql-chain-tumbling-rewindowed": dict(
        source="events",
        schema="user STRING, ts TIMESTAMP, amount BIGINT",
        sql="SELECT window(window, '30 seconds') AS window, user, sum(n) AS n, max(total) AS top, count(*) AS windows\n"
        "FROM (SELECT window(ts, '10 seconds') AS window, user, count(*) AS n, sum(amount) AS total\n"
        "      FROM events GROUP BY window(ts, '10 seconds'), user) AS w\n"
        "GROUP BY window(window, '30 seconds'), user",
        select='select = ["window.start AS start", "window.end AS end", "user", "n", "top", "windows"]\n',
        key="user",
        ties=False,
    ),
    # Nexmark q5's shape (hot items): bids per auction per sliding window, then the auction with
    # the most bids per window (grouped by the window alone: one partition actor)
    "sql-chain-sliding-max-by": dict(
        source="bids",
        schema="auction STRING, ts TIMESTAMP, price BIGINT",
        sql="SELECT window, max_by(auction, num) AS auction, max(num) AS num\n"
        "FROM (SELECT window(ts, '10 seconds', '5 seconds') AS window, auction, count(*) AS num\n"
        "      FROM bids GROUP BY 1, 2)\n"
        "GROUP BY window",
        select='select = ["window.start AS start", "window.end AS end", "auction", "num"]\n',
        key="auction",
        ties=True,
    ),
    # HAVING and WHERE on both levels, the outer grouped by the inner's window and re-windowed
    # by nothing: users per 10 s window with at least two events, and their total
    "sql-chain-group-by-window-having": dict(
        source="events",
        schema="user STRING, ts TIMESTAMP, amount BIGINT",
        sql="SELECT w.window, count(*) AS users, sum(w.total) AS total, max(w.n) AS most\n"
        "FROM (SELECT window(ts, '10 seconds') AS window, user, count(*) AS n, sum(amount) AS total\n"
        "      FROM events WHERE amount > 0 GROUP BY 1, 2 HAVING count(*) >= 2) w\n"
        "WHERE w.total < 40\n"
        "GROUP BY w.window\n"
        "HAVING count(*) >= 1",
        select='select = ["window.start AS start", "window.end AS end", "users", "total", "most"]\n',
        key="user",
        ties=False,
    ),
    # the documented spelling window(window_time(window), size) (SQL.md), here sliding and by
    # ordinal over the qualified window: an inner window [20, 30) has window_time 29.999999 s,
    # so it is in [0, 30) and [10, 40), not in [20, 50) or [30, 60)
    "sql-chain-window-time-rewindowed": dict(
        source="events",
        schema="user STRING, ts TIMESTAMP, amount BIGINT",
        sql="SELECT window(window_time(w.window), '30 seconds', '10 seconds') AS w2, user, sum(n) AS n,\n"
        "       max(total) AS top, count(*) AS windows\n"
        "FROM (SELECT window(ts, '10 seconds') AS window, user, count(*) AS n, sum(amount) AS total\n"
        "      FROM events GROUP BY 1, 2) AS w\n"
        "GROUP BY 1, 2",
        select='select = ["w2.start AS start", "w2.end AS end", "user", "n", "top", "windows"]\n',
        key="user",
        ties=False,
    ),
    # grouped by window_time(window) alone, no outer window: Spark gives that TIMESTAMP key the
    # inner window's watermark, so append runs and a key is final once the watermark reaches it;
    # grouped by the time alone: the inner rows cross the exchange
    "sql-chain-group-by-window-time": dict(
        source="events",
        schema="user STRING, ts TIMESTAMP, amount BIGINT",
        sql="SELECT window_time(window) AS t, count(*) AS users, sum(n) AS n, max(total) AS top\n"
        "FROM (SELECT window(ts, '10 seconds') AS window, user, count(*) AS n, sum(amount) AS total\n"
        "      FROM events GROUP BY 1, 2)\n"
        "GROUP BY window_time(window)",
        select='select = ["t", "users", "n", "top"]\n',
        key="user",
        ties=False,
    ),
}


def rows(rng, batch, key, late_wm):
    """One batch: rows near the batch's frontier, and, once the late-input watermark `late_wm`
    (seconds; None before it exists) has passed a window, a few rows in windows it finalised."""
    out = []
    front = 20 * batch
    for _ in range(rng.randint(6, 10)):
        sec = max(0, front + rng.randint(-3, 19))
        late = late_wm is not None and late_wm >= 10 and rng.random() < 0.2
        if late:
            sec = late_wm - 10 - rng.randint(0, 12)  # every window holding it ends by late_wm
        k = rng.choices([f"{key[0]}{i}" for i in range(4)], weights=[8, 4, 2, 1])[0]
        out.append(({key: k, "ts": ts(sec), "amount" if key == "user" else "price": rng.randint(-2, 20)}, late, sec, k))
    return out


def late_watermark(batches):
    """The late-input watermark of the next batch, in seconds (Spark's micro-batch rule: the
    watermark of the batch before it, the largest time of the batches before that minus 10 s);
    None before there is one."""
    times = [sec for b in batches[:-1] for _, _, sec, _ in b]
    return max(times) - 10 if times else None


def has_ties(batches, size=10, slide=5):
    """Whether some sliding window's largest per-key count is shared, counting each row in the
    windows it is not late for (Spark's micro-batch rule: in batch N a row is late for a window
    whose end is at most the watermark of batch N - 1, the largest time of batches before it
    minus 10 s)."""
    counts = collections.Counter()
    seen = []
    for n, b in enumerate(batches):
        late_wm = max((t for batch in seen[: max(0, n - 1)] for t in batch), default=None)
        late_wm = None if late_wm is None else late_wm - 10
        for _, _, sec, k in b:
            start = sec - sec % slide
            while start > sec - size:
                if late_wm is None or start + size > late_wm:
                    counts[(start, k)] += 1
                start -= slide
        seen.append([sec for _, _, sec, _ in b])
    per_window = collections.defaultdict(list)
    for (w, _), n in counts.items():
        per_window[w].append(n)
    return any(sorted(ns)[-2:] == [max(ns)] * 2 for ns in per_window.values() if len(ns) > 1)


def write(name, case, seed):
    while True:
        rng = random.Random(seed)
        batches = []
        for b in range(BATCHES):
            batches.append(rows(rng, b, case["key"], late_watermark(batches)))
        if not case["ties"] or not has_ties(batches):
            break
        seed += 1
    folder = HERE / name / "input"
    folder.mkdir(parents=True, exist_ok=True)
    for old in folder.glob("*.json"):
        old.unlink()
    for b, batch in enumerate(batches):
        (folder / f"{b:03d}.json").write_text("\n".join(json.dumps(r) for r, *_ in batch) + "\n")
    (HERE / name / "expected").mkdir(exist_ok=True)
    text = PIPELINE.format(name=name, source=case["source"], schema=case["schema"], sql=case["sql"], select=case["select"])
    (HERE / name / "pipeline.toml").write_text(text)
    return seed


if __name__ == "__main__":
    for i, (name, case) in enumerate(CASES.items()):
        print(name, write(name, case, 2000 + 100 * i))
