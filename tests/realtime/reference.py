#!/usr/bin/env python3
"""Brute-force reference for real-time mode under the replay clock, written from
../../../shared/spec/SEMANTICS.md (never from the engine). It recomputes every row from the full
list of records; it is slow and simple on purpose.

  reference.py CASE_DIR     reads CASE_DIR/pipeline.toml and CASE_DIR/input/*, writes
                            CASE_DIR/expected/all.jsonl (every output row, one JSON object a line)

Scope: mode = "real-time", [clock] type = "replay", files source (JSON), queries:
  window_aggregate (tumbling / sliding, update or append; measures count(*), count, sum, min, max)
  deduplicate (within_watermark true / false)
  rolling_window (measures count(*), count, sum, min, max, avg; bounded `over` and lifetime)
"""
import datetime as dt
import json
import math
import os
import re
import sys
import tomllib

NEG_INF = -(2**63)


def ts(s):
    s = s.replace(" ", "T")
    if s.endswith("Z"):
        s = s[:-1] + "+00:00"
    d = dt.datetime.fromisoformat(s)
    if d.tzinfo is None:
        d = d.replace(tzinfo=dt.timezone.utc)
    delta = d - dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)
    return (delta.days * 86400 + delta.seconds) * 10**6 + delta.microseconds


def iso(us):
    d = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc) + dt.timedelta(microseconds=us)
    frac = f".{d.microsecond:06d}".rstrip("0") if d.microsecond else ""
    return d.strftime("%Y-%m-%dT%H:%M:%S") + frac + "Z"


UNITS = {"us": 1, "microsecond": 1, "microseconds": 1, "ms": 1000, "millisecond": 1000, "milliseconds": 1000,
         "s": 10**6, "sec": 10**6, "second": 10**6, "seconds": 10**6, "min": 60 * 10**6, "minute": 60 * 10**6,
         "minutes": 60 * 10**6, "h": 3600 * 10**6, "hour": 3600 * 10**6, "hours": 3600 * 10**6,
         "day": 86400 * 10**6, "days": 86400 * 10**6}


def dur(s):
    return sum(int(n) * UNITS[u] for n, u in re.findall(r"(\d+)\s*([a-z]+)", s.lower()))


def agg(name, col, vals):
    """Spark's result of `name` over the non-null values `vals` (count(*) gets every row)."""
    if name == "count":
        return len(vals)
    if not vals:
        return None
    if name == "sum":
        return sum(vals)
    if name == "min":
        return min(vals)
    if name == "max":
        return max(vals)
    if name in ("avg", "mean"):
        return sum(vals) / len(vals)
    raise SystemExit(f"reference: aggregate {name} not covered")


def measure_name(m):
    if "alias" in m:
        return m["alias"]
    col = m.get("column")
    if m["agg"] == "count" and col in (None, "*"):
        return "count(1)"
    return f"{'avg' if m['agg'] == 'mean' else m['agg']}({col})"


def values(m, recs):
    col = m.get("column")
    if m["agg"] == "count" and col in (None, "*"):
        return [1 for _ in recs]
    return [r[col] for r in recs if r.get(col) is not None]


def window_aggregate(p, recs, out):
    q, wm = p["query"], p.get("watermark")
    w = q["window"]
    size = dur(w["size"])
    slide = dur(w.get("slide", w["size"]))
    start = dur(w.get("start", "0 seconds"))
    col = w["column"]
    keys = q.get("group_by", [])
    mode = q.get("output_mode", "update")
    delay = dur(wm["delay"]) if wm else None
    state = {}  # (start, end, key) -> list of records
    max_t = None

    def windows(t):
        first = t - ((t - start) % slide)
        s = first
        while s > t - size:
            s -= slide
        s += slide
        res = []
        while s <= t:
            if s + size > t:
                res.append((s, s + size))
            s += slide
        return res

    def row(k, rs):
        (s, e, key) = k
        r = {"window": {"start": iso(s), "end": iso(e)}}
        r.update(dict(zip(keys, key)))
        for m in q["measures"]:
            r[measure_name(m)] = agg(m["agg"], m.get("column"), values(m, rs))
        return r

    for rec in recs:
        t = rec[col]
        w_before = NEG_INF if (wm is None or max_t is None) else max_t - delay
        key = tuple(rec.get(c) for c in keys)
        for (s, e) in windows(t):
            if wm is not None and e <= w_before:
                continue  # late for this window
            state.setdefault((s, e, key), []).append(rec)
            if mode == "update":
                out.append(row((s, e, key), state[(s, e, key)]))
        if wm is not None:
            et = rec[wm["column"]]
            max_t = et if max_t is None else max(max_t, et)
            w_after = max_t - delay
            for k in sorted(state):
                if k[1] <= w_after:
                    if mode == "append":
                        out.append(row(k, state[k]))
                    del state[k]


def deduplicate(p, recs, out):
    q, wm = p["query"], p.get("watermark")
    cols = q.get("columns") or [c.strip().split()[0] for c in p["source"]["schema"].split(",")]
    within = q.get("within_watermark", False)
    delay = dur(wm["delay"]) if wm else None
    seen = {}  # key -> expiry instant or None
    max_t = None
    for rec in recs:
        t = rec[wm["column"]] if wm else None
        w_before = NEG_INF if (wm is None or max_t is None) else max_t - delay
        if wm is not None:
            for k in [k for k, e in seen.items() if e is not None and e <= w_before]:
                del seen[k]
        key = tuple(json.dumps(rec.get(c)) for c in cols)
        if wm is not None and t <= w_before:
            pass  # late
        elif key not in seen:
            if within:
                seen[key] = t + delay
            elif wm is not None and wm["column"] in cols:
                seen[key] = t
            else:
                seen[key] = None
            out.append(dict(rec))
        if wm is not None:
            max_t = t if max_t is None else max(max_t, t)


def rolling(p, recs, out):
    q, wm = p["query"], p.get("watermark")
    keys, order_by = q["partition_by"], q["order_by"]
    fr = q.get("frontier", {})
    delay = dur(fr.get("delay", "0 seconds"))
    alias = fr.get("alias", "__frontier")
    clock_col = p["clock"]["column"]
    until = ts(p["clock"]["until"]) if "until" in p["clock"] else None
    ms = q["measures"]
    ranges = [dur(m["over"]) if "over" in m else None for m in ms]
    wdelay = dur(wm["delay"]) if wm else None

    arrived = []  # dicts: rec, t, key, v (instant visible)
    clock = NEG_INF
    max_t = None

    def measured(key, x):
        """Per measure, the records it aggregates at frontier x (among those arrived so far)."""
        sets = []
        for d in ranges:
            s = [a for a in arrived if a["key"] == key and a["v"] <= x and (d is None or a["t"] > x - d)]
            sets.append(s)
        return sets

    def row(key, x):
        r = dict(zip(keys, key))
        r[alias] = iso(x)
        for m, s in zip(ms, measured(key, x)):
            r[measure_name(m)] = agg(m["agg"], m.get("column"), values(m, [a["rec"] for a in s]))
        return r

    def fire(f_from, f_to):
        """Timer rows for frontier instants in (f_from, f_to]: visibility of pending records and
        departures from bounded ranges; one row per key and instant."""
        due = set()
        for a in arrived:
            if f_from < a["v"] <= f_to and a["pending"]:
                due.add((a["v"], a["key"]))
            for d in ranges:
                if d is not None and a["t"] + d > a["v"] and f_from < a["t"] + d <= f_to:
                    due.add((a["t"] + d, a["key"]))
        for x, key in sorted(due, key=lambda e: (e[0], json.dumps(e[1]))):
            out.append(row(key, x))

    for rec in recs:
        c = max(clock, rec[clock_col])
        if c > clock:
            fire(clock - delay if clock != NEG_INF else NEG_INF, c - delay)
            clock = c
        f = clock - delay
        w_before = NEG_INF if (wm is None or max_t is None) else max_t - wdelay
        if wm is not None:
            et = rec[wm["column"]]
            max_t = et if max_t is None else max(max_t, et)
            if et <= w_before:
                continue  # late: dropped from every measure
        t = rec[order_by]
        key = tuple(rec.get(k) for k in keys)
        a = {"rec": rec, "t": t, "key": key, "v": max(t, f), "pending": t > f}
        before = measured(key, f)
        arrived.append(a)
        if not a["pending"]:
            after = measured(key, f)
            if [len(s) for s in after] != [len(s) for s in before]:
                out.append(row(key, f))
    if until is not None and until > clock:
        fire(clock - delay, until - delay)


def main():
    case = sys.argv[1]
    with open(os.path.join(case, "pipeline.toml"), "rb") as fh:
        p = tomllib.load(fh)
    assert p.get("mode") == "real-time" and p.get("clock", {}).get("type") == "replay"
    schema = [(c.strip().split()[0], c.strip().split()[1].upper()) for c in p["source"]["schema"].split(",")]
    recs = []
    for name in sorted(os.listdir(os.path.join(case, "input"))):
        for line in open(os.path.join(case, "input", name)):
            if not line.strip():
                continue
            raw = json.loads(line)
            rec = {}
            for c, ty in schema:
                v = raw.get(c)
                rec[c] = ts(v) if (ty == "TIMESTAMP" and v is not None) else v
            recs.append(rec)
    out = []
    kind = p["query"]["type"]
    {"window_aggregate": window_aggregate, "deduplicate": deduplicate, "rolling_window": rolling}[kind](p, recs, out)
    os.makedirs(os.path.join(case, "expected"), exist_ok=True)
    with open(os.path.join(case, "expected", "all.jsonl"), "w") as fh:
        for r in out:
            r = {k: (iso(v) if isinstance(v, int) and k in [c for c, ty in schema if ty == "TIMESTAMP"] else v) for k, v in r.items()}
            fh.write(json.dumps(r) + "\n")


if __name__ == "__main__":
    main()
