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
  sql = "SELECT items FROM source [WHERE c AND ...] GROUP BY window(col, size[, slide]), keys"
      (../../../shared/spec/SQL.md): a window aggregate over computed keys and measure arguments;
      each item named with AS (or a bare column); keys and the window may be given by position.
      With the source's `filter` and `select` and the sink's `select`. Expressions are those of
      EXPRESSIONS below, evaluated as SQL.md defines them.
  sql = "SELECT items FROM (such a query, append) [AS a] GROUP BY window(window, size[, slide]), keys"
      a chained aggregation re-windowing the inner query's rows (append), keys among its columns;
      or "... GROUP BY window[, keys]": grouped by the inner query's window itself (Nexmark q5's
      shape, keyed otherwise than the inner query).
  sql = "SELECT items FROM a x JOIN b y ON x.k = y.k AND y.t BETWEEN x.t AND x.t + INTERVAL n SECONDS
         GROUP BY window(x.t, size[, slide]), x.k"
      two [[source]] tables (each with its watermark and the replay clock's column), an inner
      stream-stream join then a window aggregate (append) over the joined rows: SEMANTICS.md
      "Joins" and "Several stateful operators (chained)". Records arrive one file at a time,
      alternating between the sources (first source's file 0, second's file 0, first's file 1,
      ...), as the source actor polls them.
"""
import datetime as dt
import json
import math
import operator
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


def nullable(f):
    """f applied as SQL applies a function that is null on any null argument."""
    return lambda *args: None if any(a is None for a in args) else f(*args)


def sql_or(a, b):
    """Three-valued OR (SQL.md: NULL OR true is true, NULL OR false is null)."""
    if a is True or b is True:
        return True
    return None if a is None or b is None else False


# The expressions the SQL cases use, by their text: (function of a row, result type).
EXPRESSIONS = {
    "amount > 0": (lambda r: nullable(operator.gt)(r["amount"], 0), "BOOLEAN"),
    "amount < 1000": (lambda r: nullable(operator.lt)(r["amount"], 1000), "BOOLEAN"),
    "status <> 'test'": (lambda r: nullable(operator.ne)(r["status"], "test"), "BOOLEAN"),
    "user_id IS NULL OR amount >= 2":
        (lambda r: sql_or(r["user_id"] is None, nullable(operator.ge)(r["amount"], 2)), "BOOLEAN"),
    "ts < TIMESTAMP '2024-03-01 12:01:00'": (lambda r: nullable(operator.lt)(r["ts"], ts("2024-03-01T12:01:00Z")), "BOOLEAN"),
    "timestamp_millis(ts_ms)": (lambda r: nullable(lambda v: v * 1000)(r["ts_ms"]), "TIMESTAMP"),
    "lower(user_id)": (lambda r: nullable(str.lower)(r["user_id"]), "STRING"),
    "upper(region)": (lambda r: nullable(str.upper)(r["region"]), "STRING"),
    "coalesce(user_id, 'anon')": (lambda r: "anon" if r["user_id"] is None else r["user_id"], "STRING"),
    "amount * 2": (lambda r: nullable(lambda v: v * 2)(r["amount"]), "BIGINT"),
    "window.start": (lambda r: r["window"]["start"], "TIMESTAMP"),
    "window.end": (lambda r: r["window"]["end"], "TIMESTAMP"),
}


def split_top(text, sep=","):
    """Splits `text` at `sep` outside parentheses and quotes."""
    parts, depth, quoted, cur, i = [], 0, False, "", 0
    while i < len(text):
        if not quoted and depth == 0 and text[i:i + len(sep)].upper() == sep.upper():
            parts.append(cur.strip())
            cur, i = "", i + len(sep)
            continue
        c = text[i]
        quoted = not quoted if c == "'" else quoted
        depth += 0 if quoted else (c == "(") - (c == ")")
        cur, i = cur + c, i + 1
    return parts + [cur.strip()]


def named(item):
    """(expression, output name) of a select item: `expr AS name`, or a bare column."""
    m = re.fullmatch(r"(.*?)\s+AS\s+`?(\w+)`?", item, re.S | re.I)
    if m:
        return m.group(1).strip(), m.group(2)
    if not re.fullmatch(r"\w+", item):
        raise SystemExit(f"reference: name {item!r} with AS")
    return item, item


def evaluate(text, row):
    """Value of expression `text` (a column name or an EXPRESSIONS key) over `row`."""
    if re.fullmatch(r"\w+", text):
        return row[text]
    if text not in EXPRESSIONS:
        raise SystemExit(f"reference: expression {text!r} not covered")
    return EXPRESSIONS[text][0](row)


def project(items, row, ts_cols):
    """The row of a `select` list (`*` keeps every column); TIMESTAMP results join ts_cols."""
    out = {}
    for item in items:
        if item == "*":
            out.update(row)
            continue
        text, name = named(item)
        out[name] = evaluate(text, row)
        if text in EXPRESSIONS and EXPRESSIONS[text][1] == "TIMESTAMP":
            ts_cols.add(name)
    return out


def sql_window_aggregate(p, recs, out, ts_cols):
    """A SQL query planned as a window aggregate: WHERE conjuncts that do not name the watermark
    column drop records before the watermark sees them, the others after (SQL.md "Queries");
    computed keys and measure arguments become columns of each record; the rows then take the
    select list's order and names."""
    m = re.fullmatch(r"\s*SELECT\s+(.*?)\s+FROM\s+\w+\s+(?:WHERE\s+(.*?)\s+)?GROUP BY\s+(.*?)\s*",
                     p["query"]["sql"], re.S | re.I)
    select = [named(i) for i in split_top(m.group(1))]
    where = split_top(m.group(2), " AND ") if m.group(2) else []
    groups = [select[int(g) - 1][0] if g.isdigit() else g for g in split_top(m.group(3))]
    wm_col = p.get("watermark", {}).get("column")
    before = [c for c in where if not (wm_col and re.search(rf"\b{wm_col}\b", c))]
    after = [c for c in where if c not in before]
    window, keys, measures, columns = None, [], [], []
    for g in groups:
        w = re.fullmatch(r"window\((\w+),\s*'([^']*)'(?:,\s*'([^']*)')?\)", g)
        if w:
            window = {"column": w.group(1), "size": w.group(2), "slide": w.group(3) or w.group(2)}
        else:
            keys.append(g)
    for text, name in select:
        a = re.fullmatch(r"(count|sum|min|max)\((.*)\)", text)
        if text in groups and text.startswith("window("):
            columns.append(("window", name))
        elif text in groups:
            columns.append((f"key{keys.index(text)}", name))
        elif a and a.group(2) == "*":
            measures.append({"agg": "count", "alias": name})
            columns.append((name, name))
        elif a:
            measures.append({"agg": a.group(1), "column": f"arg:{a.group(2)}", "alias": name})
            columns.append((name, name))
        else:
            raise SystemExit(f"reference: select item {text!r} is neither a key nor an aggregate")
    kept = []
    for rec in recs:
        if all(evaluate(c, rec) is True for c in before):
            rec = dict(rec, __dropped=not all(evaluate(c, rec) is True for c in after))
            for i, k in enumerate(keys):
                rec[f"key{i}"] = evaluate(k, rec)
            for mm in measures:
                if "column" in mm:
                    rec[mm["column"]] = evaluate(mm["column"][4:], rec)
            kept.append(rec)
    q = {"window": window, "group_by": [f"key{i}" for i in range(len(keys))], "measures": measures,
         "output_mode": p["query"].get("output_mode", "update")}
    rows = []
    window_aggregate(dict(p, query=q), kept, rows)
    sink_select = p.get("sink", {}).get("select")
    for r in rows:
        r = {name: r[col] for col, name in columns}
        if sink_select:
            r = project(sink_select, r, ts_cols)
        out.append(r)


def sql_chain(p, recs, out, ts_cols):
    """A chained aggregation (SQL.md "Subqueries", SEMANTICS.md "Several stateful operators"):
    `SELECT ... FROM (inner window aggregate) [AS a] GROUP BY window(window, size), keys`, append.
    The inner query runs as `sql_window_aggregate` (append): each of its rows is emitted once the
    watermark passes its window's end, and reaches the outer aggregate at event time end - 1 us
    (Spark's window_time), ahead of the watermark that closed it, so none is late there. The outer
    window then closes once the watermark passes its own end: its row aggregates every inner row
    whose event time it holds, and only windows ending at or before the final watermark are
    emitted (real-time mode does not flush state at the end of the input). Grouped by the inner
    window column itself instead of `window(window, ...)`, each inner window is its own group
    (its time: that window), closed the same way once the watermark passes its end."""
    m = re.fullmatch(r"\s*SELECT\s+(.*?)\s+FROM\s+\((.*)\)\s*(?:AS\s+\w+\s+)?GROUP BY\s+(.*?)\s*",
                     p["query"]["sql"], re.S | re.I)
    select = [named(i) for i in split_top(m.group(1))]
    inner_p = dict(p, query={"sql": m.group(2), "output_mode": "append"})
    inner_p.pop("sink", None)
    inner = []
    sql_window_aggregate(inner_p, recs, inner, set())
    wm = p["watermark"]
    event_times = [r[wm["column"]] for r in recs if r.get(wm["column"]) is not None]
    final_w = max(event_times) - dur(wm["delay"]) if event_times else NEG_INF
    window, keys = None, []
    for g in split_top(m.group(3)):
        w = re.fullmatch(r"window\((\w+),\s*'([^']*)'(?:,\s*'([^']*)')?\)", g)
        if w:
            window = (w.group(1), dur(w.group(2)), dur(w.group(3) or w.group(2)))
        else:
            keys.append(g)
    groups = {}
    if window is None:
        # grouped by the inner window column itself: the group's window is that window
        col = next(k for k in keys if any(isinstance(r.get(k), dict) for r in inner))
        keys = [k for k in keys if k != col]
        for r in inner:
            s, e = ts(r[col]["start"]), ts(r[col]["end"])
            groups.setdefault((s, e, tuple(r[k] for k in keys)), []).append(r)
    else:
        col, size, slide = window
        for r in inner:
            t = ts(r[col]["end"]) - 1
            first = t - (t % slide)
            s = first - ((size - slide) // slide) * slide
            while s <= t:
                if s + size > t:
                    groups.setdefault((s, s + size, tuple(r[k] for k in keys)), []).append(r)
                s += slide
    for (s, e, key), rows in sorted(groups.items(), key=lambda kv: (kv[0][0], json.dumps(kv[0][2]))):
        if e > final_w:
            continue
        row = {}
        for text, name in select:
            a = re.fullmatch(r"(count|sum|min|max)\((.*)\)", text)
            if text.startswith("window(") or text == col:
                row[name] = {"start": iso(s), "end": iso(e)}
            elif a:
                vals = [x[a.group(2)] for x in rows] if a.group(2) != "*" else rows
                row[name] = agg(a.group(1), None if a.group(2) == "*" else a.group(2),
                                [v for v in vals if v is not None] if a.group(2) != "*" else vals)
            else:
                row[name] = dict(zip(keys, key))[text]
        sink_select = p.get("sink", {}).get("select")
        out.append(project(sink_select, row, ts_cols) if sink_select else row)


def windows_of(t, size, slide):
    """The [start, end) windows of size `size`, sliding by `slide` (aligned to 0), holding t."""
    s = t - (t % slide) - ((size - slide) // slide) * slide
    res = []
    while s <= t:
        if s + size > t:
            res.append((s, s + size))
        s += slide
    return res


def join_aggregate(p, files, out):
    """An inner stream-stream join followed by a window aggregate in append mode, real-time.

    W (SEMANTICS.md "Several sources", "Watermark"): each source's watermark is its largest event
    time minus its delay, below everything before its first record; W is the smaller of the two,
    never moves back, and a record is judged against W as it stood when it arrived (before its
    own time counts). The join ("Joins"): at each arrival, every kept row that no future row can
    match leaves (a left row at t once W > t + upper, a right row once W > t - lower); the record
    is late if its event time is <= W (dropped); else it meets the other side's kept rows of its
    key whose time difference is in [lower, upper] (a joined row per pair) and is kept. A NULL
    key matches nothing. The aggregation after it: the join forwards W held back by its range,
    W - max(0, upper + 1 ms, 1 ms - lower) (Spark's join output watermark, SPARK-42376), and a
    joined row is late for a window whose end is at or before the forwarded watermark as it
    stood when the row came (a joined row has both times > W, so none is); a window is emitted
    once, when the forwarded watermark reaches its end, with every joined row in it. Only the
    windows that the final forwarded watermark closes are emitted (no flush at the end)."""
    q = p["query"]["sql"]
    m = re.fullmatch(
        r"\s*SELECT\s+(.*?)\s+FROM\s+(\w+)\s+(\w+)\s+(?:INNER\s+)?JOIN\s+(\w+)\s+(\w+)\s+"
        r"ON\s+(\w+)\.(\w+)\s*=\s*(\w+)\.(\w+)\s+AND\s+(\w+)\.(\w+)\s+BETWEEN\s+(\w+)\.(\w+)"
        r"(?:\s*-\s*INTERVAL\s+(\d+)\s+SECONDS)?\s+AND\s+\w+\.\w+(?:\s*\+\s*INTERVAL\s+(\d+)\s+SECONDS)?"
        r"\s+GROUP BY\s+(.*?)\s*", q, re.S | re.I)
    if not m:
        raise SystemExit("reference: join query not covered")
    (select, lsrc, la, rsrc, ra, k1q, k1, k2q, k2, rq, rt, lq, lt, low, up, groups) = m.groups()
    if {k1q, k2q} != {la, ra} or rq != ra or lq != la:
        raise SystemExit("reference: ON must be x.k = y.k AND y.t BETWEEN x.t [- ...] AND x.t [+ ...]")
    lkey, rkey = (k1, k2) if k1q == la else (k2, k1)
    lower, upper = -int(low or 0) * 10**6, int(up or 0) * 10**6
    forwarded_delay = max(0, upper + 1000, 1000 - lower)
    srcs = {s["name"].lower(): s for s in p["source"]}
    sides = [(la, srcs[lsrc.lower()], lkey), (ra, srcs[rsrc.lower()], rkey)]
    delays = [dur(s["watermark"]["delay"]) for _, s, _ in sides]
    times = [s["watermark"]["column"] for _, s, _ in sides]
    if times[0] != lt or times[1] != rt:
        raise SystemExit("reference: the range must be on the two watermarked columns")
    # arrival order: one file of each source in turn, in [[source]] order
    order = []
    for i in range(max(len(f) for f in files.values())):
        for s in p["source"]:
            for rec in files[s["name"]][i] if i < len(files[s["name"]]) else []:
                order.append((0 if s is sides[0][1] else 1, rec))
    # a qualified column selected without AS keeps its column's name
    select = [(i, i.split(".")[1]) if re.fullmatch(r"\w+\.\w+", i) else named(i) for i in split_top(select)]
    window, keys = None, []
    for g in split_top(groups):
        w = re.fullmatch(r"window\((\w+)\.(\w+),\s*'([^']*)'(?:,\s*'([^']*)')?\)", g)
        if w:
            window = (w.group(1), w.group(2), dur(w.group(3)), dur(w.group(4) or w.group(3)))
        else:
            keys.append(tuple(g.split(".")))
    wq, wcol, size, slide = window
    max_et = [None, None]
    w = NEG_INF
    kept = []  # (side, record)
    groups_rows = {}  # (start, end, key values) -> joined rows
    for side, rec in order:
        if None not in max_et:
            w = max(w, min(max_et[0] - delays[0], max_et[1] - delays[1]))
        forwarded = NEG_INF if w == NEG_INF else w - forwarded_delay
        kept = [(s, r) for s, r in kept if (r[times[0]] + upper if s == 0 else r[times[1]] - lower) >= w]
        t = rec[times[side]]
        max_et[side] = t if max_et[side] is None else max(max_et[side], t)
        if w != NEG_INF and t <= w:
            continue
        key = rec[sides[side][2]]
        for s, o in kept:
            if s == side or key is None or o[sides[s][2]] != key:
                continue
            l, r = (rec, o) if side == 0 else (o, rec)
            if not lower <= r[times[1]] - l[times[0]] <= upper:
                continue
            joined = {la: l, ra: r}
            kv = tuple(joined[q][c] for q, c in keys)
            for (ws, we) in windows_of(joined[wq][wcol], size, slide):
                if we > forwarded:
                    groups_rows.setdefault((ws, we, kv), []).append(joined)
        kept.append((side, rec))
    if None not in max_et:
        w = max(w, min(max_et[0] - delays[0], max_et[1] - delays[1]))
    final = NEG_INF if w == NEG_INF else w - forwarded_delay
    for (ws, we, kv), rows in sorted(groups_rows.items(), key=lambda kv: (kv[0][0], json.dumps(kv[0][2]))):
        if we > final:
            continue
        row = {}
        for text, name in select:
            a = re.fullmatch(r"(count|sum|min|max)\((?:(\w+)\.)?(\w+|\*)\)", text)
            if text.startswith("window("):
                row[name] = {"start": iso(ws), "end": iso(we)}
            elif a and a.group(3) == "*":
                row[name] = len(rows)
            elif a:
                vals = [j[a.group(2)][a.group(3)] for j in rows]
                row[name] = agg(a.group(1), a.group(3), [v for v in vals if v is not None])
            else:
                q, c = text.split(".")
                row[name] = kv[keys.index((q, c))]
        out.append(row)


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
        for (s, e) in [] if rec.get("__dropped") else windows(t):
            if wm is not None and e <= w_before:
                continue  # late for this window
            state.setdefault((s, e, key), []).append(rec)
            if mode == "update":
                out.append(row((s, e, key), state[(s, e, key)]))
        if wm is not None:
            et = rec[wm["column"]]
            max_t = et if max_t is None else max(max_t, et)
            w_after = max_t - delay
            for k in sorted(state, key=lambda k: (k[0], k[1], json.dumps(k[2]))):  # null keys sort too
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
    if isinstance(p["source"], list) and len(p["source"]) == 2:  # two [[source]]: a join
        files = {}
        for s in p["source"]:
            schema = [(c.strip().split()[0], c.strip().split()[1].upper()) for c in s["schema"].split(",")]
            folder = os.path.join(case, s["path"])
            files[s["name"]] = []
            for name in sorted(os.listdir(folder)):
                batch = []
                for line in open(os.path.join(folder, name)):
                    if line.strip():
                        raw = json.loads(line)
                        batch.append({c: ts(raw[c]) if ty == "TIMESTAMP" and raw.get(c) is not None else raw.get(c)
                                      for c, ty in schema})
                files[s["name"]].append(batch)
        out = []
        join_aggregate(p, files, out)
        os.makedirs(os.path.join(case, "expected"), exist_ok=True)
        with open(os.path.join(case, "expected", "all.jsonl"), "w") as fh:
            for r in out:
                fh.write(json.dumps(r) + "\n")
        return
    if isinstance(p["source"], list):  # [[source]]: one source, its watermark the pipeline's
        p["source"] = p["source"][0]
    if "watermark" in p["source"]:
        p["watermark"] = p["source"]["watermark"]
    schema = [(c.strip().split()[0], c.strip().split()[1].upper()) for c in p["source"]["schema"].split(",")]
    ts_cols = {c for c, ty in schema if ty == "TIMESTAMP"}
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
            if p["source"].get("filter") and evaluate(p["source"]["filter"], rec) is not True:
                continue
            if p["source"].get("select"):
                rec = project(p["source"]["select"], rec, ts_cols)
            recs.append(rec)
    out = []
    if "sql" in p["query"] and re.search(r"FROM\s*\(", p["query"]["sql"], re.I):
        sql_chain(p, recs, out, ts_cols)
    elif "sql" in p["query"]:
        sql_window_aggregate(p, recs, out, ts_cols)
    else:
        kind = p["query"]["type"]
        {"window_aggregate": window_aggregate, "deduplicate": deduplicate, "rolling_window": rolling}[kind](p, recs, out)
    os.makedirs(os.path.join(case, "expected"), exist_ok=True)
    with open(os.path.join(case, "expected", "all.jsonl"), "w") as fh:
        for r in out:
            r = {k: (iso(v) if isinstance(v, int) and k in ts_cols else v) for k, v in r.items()}
            fh.write(json.dumps(r) + "\n")


if __name__ == "__main__":
    main()
