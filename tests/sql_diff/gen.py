#!/usr/bin/env python3
"""Differential corpus of Spark SQL expressions: random well-typed expressions over a random
schema and rows, evaluated once by Apache Spark (ANSI on, session time zone UTC) and written to a
golden file that the Rust test `sql/tests/spark_differential.rs` replays against Eddy.

Usage (the python of the Spark oracle's venv: ../shared/tools/spark-oracle/setup.sh prints it):

    python tests/sql_diff/gen.py --seed 11 --exprs 2000 --rows 50 --out tests/sql_diff/golden.jsonl

(the committed golden.jsonl was written by this command; about 5 minutes on two busy cores)

`--features decimal` adds DECIMAL columns and productions (arithmetic with Spark's precision and
scale rules, casts, rounding, comparisons, widening); golden-decimal.jsonl was written by

    python tests/sql_diff/gen.py --features decimal --seed 5 --exprs 400 --rows 50 --out tests/sql_diff/golden-decimal.jsonl

DECIMAL values (in rows and results) are JSON strings holding the exact plain number (`"-0.50"`).

    python tests/sql_diff/gen.py --features structs --seed 5 --exprs 400 --rows 50 \
        --out tests/sql_diff/golden-structs.jsonl

writes the corpus of STRUCT, JSON, DATE and the datetime functions (SQL.md "structs and JSON",
"time"): a DATE column type, and every expression built around `struct(...)`, `named_struct`,
field access, `to_json`, `get_json_object`, `to_date`, `to_timestamp` or a DATE.


The golden file is JSON lines: first {"schema": [[name, type], ...], "rows": [[v, ...], ...]},
then one line per expression: {"expr", "name", "type", "values"} (Spark's output name, Spark's
type as `simpleString`, one value per row), or {"expr", "error": "analysis"|"runtime"|"python",
"class"} when Spark refused the expression, failed while evaluating it, or computed a value
PySpark cannot convert (skipped by the test). Values: JSON numbers,
strings and booleans; doubles that JSON cannot hold as "NaN", "Infinity", "-Infinity";
timestamps as integer microseconds since the epoch (UTC).

Only constructs Eddy implements are generated (FEATURES below): grow the corpus by adding
productions, never by editing the golden file.
"""
import argparse
import datetime as dt
import decimal
import json
import math
import os
import random
import struct
import sys
import time

os.environ["TZ"] = "UTC"
time.tzset()
# DECIMAL(38, s) values need 38 digits (the default context keeps 28)
decimal.getcontext().prec = 60

TYPES = ["int", "bigint", "double", "float", "string", "boolean", "timestamp"]
DDL = {"int": "INT", "bigint": "BIGINT", "double": "DOUBLE", "float": "FLOAT", "string": "STRING",
       "boolean": "BOOLEAN", "timestamp": "TIMESTAMP"}
NUMERIC = ["int", "bigint", "double", "float"]
WORDS = ["", "a", "abc", "Hello World", "  padded  ", "12", " 7 ", "-3", "1.5", "1e3", "true",
         "no", "x_y%z", "ÄÖü straße", "2024-01-15 10:00:00", "2024-01-15", "hello", "HELLO",
         "a-b-c", "spark sql", "NaN", "tab\there", "Ünïcödé", "mixed Case Words"]


def f32(x):
    return struct.unpack("f", struct.pack("f", x))[0]


DEC_TYPES = ["decimal(10,2)", "decimal(5,0)", "decimal(38,10)", "decimal(3,1)", "decimal(18,6)"]


def dec_ps(t):
    p, s = t[len("decimal("):-1].split(",")
    return int(p), int(s)


class Gen:
    def __init__(self, rnd, features=()):
        self.r = rnd
        self.features = features
        self.schema = []
        n = 0
        for t in TYPES:
            for _ in range(self.r.randint(1, 3)):
                n += 1
                self.schema.append((f"{t[0]}{n}" if self.r.random() < 0.8 else f"Col_{t}_{n}", t))
        self.schema.append(("odd name", "string"))
        self.by_type = {t: [c for c, ct in self.schema if ct == t] for t in TYPES}
        if "decimal" in features:
            for t in DEC_TYPES:
                n += 1
                self.schema.append((f"m{n}", t))
            self.by_type["decimal"] = [c for c, ct in self.schema if ct.startswith("decimal")]

    def top_types(self):
        return TYPES + (["decimal", "decimal", "decimal"] if "decimal" in self.features else [])

    # -- data -------------------------------------------------------------------------------
    def value(self, t):
        r = self.r
        if r.random() < 0.12:
            return None
        if t.startswith("decimal"):
            p, sc = dec_ps(t)
            top = 10 ** p - 1
            if r.random() < 0.03:
                unscaled = r.choice([top, -top])
            elif r.random() < 0.2:
                unscaled = r.choice([0, 1, -1, 10 ** sc, -(10 ** sc), 5 * 10 ** max(sc - 1, 0)])
            else:
                unscaled = r.randint(-min(top, 10 ** (sc + 5)), min(top, 10 ** (sc + 5)))
            return decimal.Decimal(unscaled).scaleb(-sc)
        if t == "int":
            return r.choice([0, 1, -1, 2, 7, 100, -100]) if r.random() < 0.3 else r.randint(-300, 300)
        if t == "bigint":
            return r.choice([0, 1, -1, 10**6, -(10**6)]) if r.random() < 0.3 else r.randint(-10**6, 10**6)
        if t == "double":
            if r.random() < 0.04:
                return r.choice([math.nan, math.inf, -math.inf])
            if r.random() < 0.2:
                return r.choice([0.0, -0.0, 1.0, 0.5, 2.675, -2.5, 1e20, 1e-5])
            return round(r.uniform(-1000, 1000), r.randint(0, 6))
        if t == "float":
            return f32(r.choice([0.0, 1.5, -2.25, 0.1]) if r.random() < 0.3 else round(r.uniform(-100, 100), 2))
        if t == "string":
            return r.choice(WORDS)
        if t == "boolean":
            return r.random() < 0.5
        if t == "timestamp":
            us = r.randint(0, 1_900_000_000) * 1_000_000
            if r.random() < 0.5:
                us += r.randint(0, 999_999)
            return us
        if t == "date":
            return r.randint(-400, 25_000)

    def rows(self, n):
        return [[self.value(t) for _, t in self.schema] for _ in range(n)]

    # -- expressions ------------------------------------------------------------------------
    def col(self, t):
        cs = self.by_type[t]
        if not cs:
            return None
        c = self.r.choice(cs)
        if c == "odd name" or self.r.random() < 0.05:
            return f"`{c}`"
        if self.r.random() < 0.15:
            c = c.upper() if self.r.random() < 0.5 else c.lower()
        return c

    def lit(self, t):
        r = self.r
        if t == "decimal":
            return r.choice(["1.5", "0.25", "-3.125", "100.0", "0.001", "12345.6789", "2.0", "-0.5", "7.00"])
        if t == "int":
            return str(r.choice([0, 1, 2, 3, 7, 10, 100, -1, -5]))
        if t == "bigint":
            return f"{r.choice([0, 1, 2, 10, 1000, -3])}L"
        if t == "double":
            return r.choice(["1.5D", "0.5D", "2.0D", "-1.25D", "1e3", "2.5e-1", "100D", "3D"])
        if t == "float":
            return r.choice(["CAST(1.5 AS FLOAT)", "CAST(-0.25 AS FLOAT)"])
        if t == "string":
            w = r.choice(["a", "abc", "x", "Hello", "12", "-", " ", "l", "o", "it''s", "it\\'s"])
            return f"'{w}'"
        if t == "boolean":
            return r.choice(["true", "false"])
        if t == "timestamp":
            return r.choice(["TIMESTAMP '2024-01-15 10:00:00'", "TIMESTAMP '2001-02-03 04:05:06.789'"])
        if t in NEW_LITS:
            return r.choice(NEW_LITS[t])

    def leaf(self, t):
        if self.r.random() < 0.7:
            c = self.col(t)
            if c is not None:
                return c
        return self.lit(t)

    def num(self, depth, types=NUMERIC):
        return self.expr(self.r.choice(types), depth)

    def expr(self, t, depth):
        r = self.r
        if depth <= 0 or r.random() < 0.25:
            return self.leaf(t)
        d = depth - 1
        e = lambda tt: self.expr(tt, d)
        prods = PRODUCTIONS[t]
        for _ in range(20):
            p = r.choice(prods)
            out = p(self, e, d)
            if out is not None:
                return out
        return self.leaf(t)


def wider(a, b):
    order = ["int", "bigint", "float", "double"]
    return order[max(order.index(a), order.index(b))]


def arith(g, e, d, t):
    # operand types whose Spark result type is t
    pairs = [(a, b) for a in NUMERIC for b in NUMERIC if wider(a, b) == t]
    a, b = g.r.choice(pairs)
    op = g.r.choice(["+", "-", "*"]) if t in ("int", "bigint") else g.r.choice(["+", "-", "*"])
    return f"({e(a)} {op} {e(b)})"


def nonzero(g, t):
    return {"int": g.r.choice(["3", "7", "-2"]), "bigint": g.r.choice(["3L", "-4L"]),
            "double": g.r.choice(["2.5D", "-4D"]), "float": "CAST(2.5 AS FLOAT)"}[t]


def cmp(g, e, d):
    r = g.r
    kind = r.random()
    op = r.choice(["=", "==", "<>", "!=", "<", "<=", ">", ">=", "<=>"])
    if kind < 0.45:
        return f"({e(r.choice(NUMERIC))} {op} {e(r.choice(NUMERIC))})"
    if kind < 0.65:
        return f"({e('string')} {op} {e('string')})"
    if kind < 0.75:
        return f"({e('timestamp')} {op} {e('timestamp')})"
    if kind < 0.82:
        return f"({e('boolean')} {op} {e('boolean')})"
    # a number compared with a string: the string is cast to the number's type
    return f"({e(r.choice(['int', 'bigint', 'double']))} {op} '{r.choice(['12', ' 7 ', '-3', '0'])}')"


def b_between(g, e, d):
    t = g.r.choice(NUMERIC + ["string", "timestamp"])
    neg = "NOT " if g.r.random() < 0.3 else ""
    return f"({e(t)} {neg}BETWEEN {e(t)} AND {e(t)})"


def b_in(g, e, d):
    t = g.r.choice(NUMERIC + ["string"])
    items = ", ".join(g.leaf(t) if g.r.random() < 0.8 else "NULL" for _ in range(g.r.randint(1, 4)))
    neg = "NOT " if g.r.random() < 0.3 else ""
    return f"({e(t)} {neg}IN ({items}))"


def b_isnull(g, e, d):
    t = g.r.choice(TYPES)
    return f"({e(t)} IS {'NOT ' if g.r.random() < 0.5 else ''}NULL)"


def b_istrue(g, e, d):
    return f"({e('boolean')} IS {'NOT ' if g.r.random() < 0.5 else ''}{g.r.choice(['TRUE', 'FALSE'])})"


def b_like(g, e, d):
    pat = g.r.choice(["a%", "%o%", "_b%", "%", "H%", "%d", "x\\_y%", "1_", "%Ö%", "a"])
    op = g.r.choice(["LIKE", "LIKE", "ILIKE", "NOT LIKE"])
    return f"({e('string')} {op} '{pat}')"


def b_rlike(g, e, d):
    pat = g.r.choice(["^a", "[0-9]+", "l{2}", "^\\\\s", "o$", "^[A-Z]"])
    return f"({e('string')} {g.r.choice(['RLIKE', 'REGEXP'])} '{pat}')"


def refused(g, e, d):
    """Expressions Spark's analyzer refuses (type mismatches): Eddy must refuse them too."""
    r = g.r
    return r.choice([
        lambda: f"({e('boolean')} + {e('int')})",
        lambda: f"CAST({e('boolean')} AS TIMESTAMP)",
        lambda: f"CAST({e('timestamp')} AS BOOLEAN)",
        lambda: f"({e('timestamp')} = {e('int')})",
        lambda: f"({e('boolean')} < {e('double')})",
    ])()


def b_logic(g, e, d):
    r = g.r.random()
    if r < 0.4:
        return f"({e('boolean')} AND {e('boolean')})"
    if r < 0.8:
        return f"({e('boolean')} OR {e('boolean')})"
    return f"(NOT {e('boolean')})"


def b_strpred(g, e, d):
    f = g.r.choice(["startswith", "endswith", "contains"])
    return f"{f}({e('string')}, {g.lit('string')})"


def cond(g, e, d, t):
    r = g.r.random()
    if r < 0.3:
        return f"if({e('boolean')}, {e(t)}, {e(t)})"
    if r < 0.55:
        elses = f" ELSE {e(t)}" if g.r.random() < 0.7 else ""
        return f"CASE WHEN {e('boolean')} THEN {e(t)}{elses} END"
    if r < 0.65:
        return f"CASE {g.leaf('int')} WHEN 1 THEN {e(t)} WHEN 7 THEN {e(t)} ELSE {e(t)} END"
    if r < 0.8:
        return f"coalesce({e(t)}, {e(t)})"
    if r < 0.9:
        return f"{g.r.choice(['nvl', 'ifnull'])}({e(t)}, {e(t)})"
    if t in ("timestamp",):
        return None
    return f"nullif({e(t)}, {e(t)})"


def cast_to(g, e, d, t):
    # sources whose cast to t Spark allows under ANSI and that cannot fail on our data
    safe = CAST_SAFE.get(t) or {
        "int": ["int", "boolean", "float"],
        "bigint": ["int", "bigint", "boolean", "timestamp"],
        "double": ["int", "bigint", "double", "float", "boolean", "timestamp"],
        "float": ["int", "float", "double"],
        "string": list(TYPES),
        "boolean": ["int", "bigint", "double", "boolean"],
        "timestamp": ["int", "bigint", "timestamp"],
    }[t]
    src = g.r.choice(safe)
    x = e(src)
    form = g.r.random()
    if form < 0.15:
        return f"{x}::{DDL[t].lower()}" if x.startswith("(") or x.isidentifier() else None
    if form < 0.3:
        return f"try_cast({e('string')} AS {DDL[t]})"
    return f"CAST({x} AS {DDL[t]})"


def cast_string_lit(g, e, d, t):
    lits = {"int": ["'12'", "' 7 '", "'-3'", "'1.5'", "'x'", "'2147483648'"],
            "bigint": ["'12'", "'2147483648'", "'1e3'"],
            "double": ["'1.5'", "' -2e3 '", "'NaN'", "'inf'", "'-Infinity'", "'1d'", "'.5'", "'x'"],
            "boolean": ["'true'", "'YES'", "' f '", "'0'", "'maybe'"],
            "timestamp": ["'2024-01-15 10:00:00'", "'2024-01-15'", "'2024'", "'2024-01-15T10:01Z'",
                          "'2024-01-15T10:01:02.5'", "'2024-1-5 1:2:3'", "'2024-01-15 10:00:00+02:00'"]}.get(t)
    if not lits:
        return None
    lit = g.r.choice(lits)
    # literals that cannot be cast fail every row: only under try_cast, which gives NULL
    form = "try_cast" if lit in BAD_CAST_LITERALS or g.r.random() < 0.3 else "CAST"
    return f"{form}({lit} AS {DDL[t]})"


BAD_CAST_LITERALS = {"'1.5'", "'x'", "'2147483648'", "'1e3'", "'maybe'", "'2024-01-15T10:01Z'"}


def num_fn(g, e, d, t):
    r = g.r
    if t in ("int", "bigint", "double", "float") and r.random() < 0.3:
        return f"abs({e(t)})"
    if t in ("int", "bigint") and r.random() < 0.3:
        a = e(t)
        return f"{r.choice(['greatest', 'least'])}({a}, {e(t)})"
    if t == "int":
        return r.choice([
            lambda: f"length({e('string')})",
            lambda: f"instr({e('string')}, {g.lit('string')})",
            lambda: f"locate({g.lit('string')}, {e('string')})",
            lambda: f"{r.choice(['year', 'month', 'day', 'dayofmonth', 'hour', 'minute', 'second', 'dayofweek'])}({e('timestamp')})",
            lambda: f"({e('int')} % {nonzero(g, 'int')})",
            lambda: f"pmod({e('int')}, {nonzero(g, 'int')})",
            lambda: f"mod({e('int')}, {nonzero(g, 'int')})",
            lambda: f"{r.choice(['try_add', 'try_subtract', 'try_multiply'])}({e('int')}, {e('int')})",
            lambda: f"char_length({e('string')})",
            lambda: f"-{e('int')}" if False else f"(- {e('int')})",
        ])()
    if t == "bigint":
        return r.choice([
            lambda: f"({e(r.choice(['int', 'bigint']))} div {nonzero(g, r.choice(['int', 'bigint']))})",
            lambda: f"{r.choice(['unix_seconds', 'unix_millis', 'unix_micros'])}({e('timestamp')})",
            # over finite values: floor / ceil of NaN, infinities or 1e20 overflow BIGINT (an error)
            lambda: f"{r.choice(['floor', 'ceil', 'ceiling'])}(({e('int')} / {nonzero(g, 'double')}))",
            lambda: f"({e('bigint')} % {nonzero(g, 'bigint')})",
            lambda: f"round({e('bigint')})",
        ])()
    if t == "double":
        return r.choice([
            lambda: f"({e(r.choice(NUMERIC))} / {nonzero(g, r.choice(NUMERIC))})",
            lambda: f"try_divide({e(r.choice(['int', 'double']))}, {e(r.choice(['int', 'double']))})",
            lambda: f"sqrt({e('double')})",
            lambda: f"{r.choice(['ln', 'log10', 'log2'])}({e('double')})",
            lambda: f"log({r.choice(['2', '10D', '0.5D'])}, {e('double')})",
            lambda: f"exp({e('double')} / 1000)",
            lambda: f"{r.choice(['pow', 'power'])}({e('double')}, {r.choice(['2', '0.5D', '-1'])})",
            lambda: f"{r.choice(['round', 'bround'])}({e('double')}, {r.choice(['0', '1', '2', '-1'])})",
            lambda: f"round({e('double')})",
            lambda: f"{r.choice(['sign', 'signum'])}({e('double')})",
            lambda: f"(- {e('double')})",
            lambda: f"({e('double')} % {nonzero(g, 'double')})",
            lambda: f"{r.choice(['greatest', 'least'])}({e('double')}, {e(r.choice(NUMERIC))})",
        ])()
    return None


def str_fn(g, e, d):
    r = g.r
    s = lambda: e("string")
    i = lambda: r.choice(["1", "2", "-1", "-3", "0", "5"])
    return r.choice([
        lambda: f"{r.choice(['lower', 'upper', 'trim', 'ltrim', 'rtrim', 'reverse', 'initcap'])}({s()})",
        lambda: f"{r.choice(['substring', 'substr'])}({s()}, {i()})",
        lambda: f"{r.choice(['substring', 'substr'])}({s()}, {i()}, {r.choice(['1', '2', '3', '0'])})",
        lambda: f"concat({s()}, {s()})",
        lambda: f"({s()} || {s()})",
        lambda: f"concat_ws({r.choice([chr(39) + '-' + chr(39), chr(39) + ', ' + chr(39)])}, {s()}, {s()})",
        lambda: f"{r.choice(['lpad', 'rpad'])}({s()}, {r.choice(['3', '6', '0'])}, {r.choice([chr(39) + '*' + chr(39), chr(39) + 'ab' + chr(39)])})",
        lambda: f"replace({s()}, {g.lit('string')}, {g.lit('string')})",
        lambda: f"{r.choice(['left', 'right'])}({s()}, {r.choice(['2', '0', '10'])})",
        lambda: f"split_part({s()}, {r.choice([chr(39) + ' ' + chr(39), chr(39) + '-' + chr(39)])}, {r.choice(['1', '2', '-1'])})",
        lambda: f"regexp_replace({s()}, '[aeiou]', '_')",
        lambda: f"regexp_extract({s()}, '([a-z]+)', {r.choice(['0', '1'])})",
        lambda: f"md5({s()})",
        lambda: f"sha2({s()}, 256)",
        lambda: f"date_format({e('timestamp')}, {r.choice([chr(39) + p + chr(39) for p in ['yyyy-MM-dd HH:mm:ss', 'yyyy-MM-dd', 'HH:mm']])})",
    ])()


def ts_fn(g, e, d):
    r = g.r
    return r.choice([
        lambda: f"timestamp_seconds({e(r.choice(['int', 'bigint']))})",
        lambda: f"timestamp_millis({e('bigint')})",
        lambda: f"timestamp_micros({e('bigint')})",
        lambda: f"date_trunc({r.choice([chr(39) + u + chr(39) for u in ['YEAR', 'MONTH', 'DAY', 'HOUR', 'minute', 'SECOND', 'WEEK', 'QUARTER']])}, {e('timestamp')})",
        lambda: f"({e('timestamp')} {r.choice(['+', '-'])} INTERVAL {r.choice(['10 MINUTES', '1 HOUR', '2 DAYS', '30 SECONDS', chr(39) + '1' + chr(39) + ' HOUR'])})",
    ])()


def nonzero_dec(g):
    return g.r.choice(["0.7", "-2.5", "3", "1.25", "0.003"])


def dec_arith(g, e, d):
    r = g.r
    a, b = e("decimal"), e(r.choice(["decimal", "decimal", "int", "bigint"]))
    if r.random() < 0.3:
        a, b = b, a
    k = r.random()
    if k < 0.6:
        return f"({a} {r.choice(['+', '-', '*'])} {b})"
    if k < 0.75:
        return f"({e('decimal')} / {nonzero_dec(g)})"
    if k < 0.85:
        return f"({e('decimal')} % {nonzero_dec(g)})"
    if k < 0.9:
        return f"pmod({e('decimal')}, {nonzero_dec(g)})"
    return f"{r.choice(['try_add', 'try_subtract', 'try_multiply'])}({a}, {b})"


def dec_fn(g, e, d):
    r = g.r
    return r.choice([
        lambda: f"abs({e('decimal')})",
        lambda: f"(- {e('decimal')})",
        lambda: f"{r.choice(['round', 'bround'])}({e('decimal')}, {r.choice(['0', '1', '2', '-1'])})",
        lambda: f"round({e('decimal')})",
        lambda: f"{r.choice(['floor', 'ceil'])}({e('decimal')})",
        lambda: f"{r.choice(['greatest', 'least'])}({e('decimal')}, {e(r.choice(['decimal', 'int']))})",
        lambda: f"try_divide({e('decimal')}, {e('decimal')})",
    ])()


def dec_cast(g, e, d):
    r = g.r
    target = r.choice(["DECIMAL(10,2)", "DECIMAL(12,4)", "DECIMAL(6,1)", "DECIMAL(38,18)", "DECIMAL(5)", "DECIMAL"])
    k = r.random()
    if k < 0.4:
        return f"CAST({e(r.choice(['decimal', 'int', 'bigint']))} AS {target})"
    if k < 0.55:
        return f"CAST({e('double')} AS DECIMAL(30,4))"
    if k < 0.75:
        lit = r.choice(["'12.345'", "' -0.5 '", "'1e2'", "'abc'", "'99999999999'"])
        return f"try_cast({lit} AS {target})"
    return f"try_cast({e('decimal')} AS {target})"


def dec_out(g, e, d, t):
    """DECIMAL operands in productions of another type."""
    r = g.r
    if t == "double":
        return r.choice([lambda: f"CAST({e('decimal')} AS DOUBLE)",
                         lambda: f"({e('decimal')} {r.choice(['+', '*'])} {e('double')})",
                         lambda: f"sign({e('decimal')})"])()
    if t == "bigint":
        return r.choice([lambda: f"CAST({e('decimal')} AS BIGINT)",
                         lambda: f"({e('decimal')} div {nonzero_dec(g)})"])()
    if t == "string":
        return f"CAST({e('decimal')} AS STRING)"
    if t == "boolean":
        op = r.choice(["=", "<>", "<", "<=", ">", ">=", "<=>"])
        return r.choice([lambda: f"({e('decimal')} {op} {e(r.choice(['decimal', 'int', 'bigint', 'double']))})",
                         lambda: f"({e('decimal')} IN ({g.lit('decimal')}, {g.lit('int')}))",
                         lambda: f"({e('decimal')} BETWEEN {g.lit('decimal')} AND {e('decimal')})"])()
    return None


PRODUCTIONS = {
    "int": [lambda g, e, d: arith(g, e, d, "int"), lambda g, e, d: num_fn(g, e, d, "int"),
            lambda g, e, d: cond(g, e, d, "int"), lambda g, e, d: cast_to(g, e, d, "int"),
            lambda g, e, d: cast_string_lit(g, e, d, "int")],
    "bigint": [lambda g, e, d: arith(g, e, d, "bigint"), lambda g, e, d: num_fn(g, e, d, "bigint"),
               lambda g, e, d: cond(g, e, d, "bigint"), lambda g, e, d: cast_to(g, e, d, "bigint")],
    "double": [lambda g, e, d: arith(g, e, d, "double"), lambda g, e, d: num_fn(g, e, d, "double"),
               lambda g, e, d: num_fn(g, e, d, "double"),
               lambda g, e, d: cond(g, e, d, "double"), lambda g, e, d: cast_to(g, e, d, "double"),
               lambda g, e, d: cast_string_lit(g, e, d, "double")],
    "float": [lambda g, e, d: arith(g, e, d, "float"), lambda g, e, d: num_fn(g, e, d, "float"),
              lambda g, e, d: cast_to(g, e, d, "float")],
    "string": [str_fn, str_fn, lambda g, e, d: cond(g, e, d, "string"),
               lambda g, e, d: cast_to(g, e, d, "string")],
    "boolean": [cmp, cmp, b_between, b_in, b_isnull, b_istrue, b_like, b_rlike, b_logic, b_logic,
                b_strpred, refused, lambda g, e, d: cond(g, e, d, "boolean"),
                lambda g, e, d: cast_to(g, e, d, "boolean"),
                lambda g, e, d: cast_string_lit(g, e, d, "boolean")],
    "timestamp": [ts_fn, lambda g, e, d: cond(g, e, d, "timestamp"),
                  lambda g, e, d: cast_to(g, e, d, "timestamp"),
                  lambda g, e, d: cast_string_lit(g, e, d, "timestamp")],
}


DECIMAL_PRODUCTIONS = {
    "decimal": [dec_arith, dec_arith, dec_fn, dec_fn, dec_cast, lambda g, e, d: cond(g, e, d, "decimal")],
    "double": [lambda g, e, d: dec_out(g, e, d, "double")],
    "bigint": [lambda g, e, d: dec_out(g, e, d, "bigint")],
    "string": [lambda g, e, d: dec_out(g, e, d, "string")],
    "boolean": [lambda g, e, d: dec_out(g, e, d, "boolean")] * 3,
}


def python_rows(schema, rows):
    """`rows` as PySpark takes them: a timestamp (microseconds since the epoch) as a naive UTC
    datetime, a date (days since 1970-01-01) as a date, built from the integers exactly."""
    out = []
    for r in rows:
        pr = list(r)
        for i, (_, t) in enumerate(schema):
            if t == "timestamp" and r[i] is not None:
                pr[i] = dt.datetime(1970, 1, 1) + dt.timedelta(microseconds=r[i])
            if t == "date" and r[i] is not None:
                pr[i] = dt.date(1970, 1, 1) + dt.timedelta(days=r[i])
        out.append(pr)
    return out


def to_json(v, t):
    if v is None:
        return None
    if t.startswith("decimal"):
        return format(v, "f")
    if t in ("double", "float"):
        if math.isnan(v):
            return "NaN"
        if math.isinf(v):
            return "Infinity" if v > 0 else "-Infinity"
        return float(v)
    if t == "date":
        if isinstance(v, dt.date):
            return (v - dt.date(1970, 1, 1)).days
        return v
    if t == "timestamp":
        if isinstance(v, dt.datetime):
            if v.tzinfo is None:
                v = v.replace(tzinfo=dt.timezone.utc)
            delta = v - dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)
            return (delta.days * 86400 + delta.seconds) * 1_000_000 + delta.microseconds
        return v
    return v


# -- --features structs ------------------------------------------------------------------------
JSON_WORDS = ['{"a":1,"b":{"c":[1,2.50,{"d":"x"}]}}', '{"a":"s","n":null}', '[10,20,30]', 'not json',
              '{"a":{"b":true}}', '2024-01-15', '2024-1-5', '2024-01-15 10:30:00', '2023/12/31 23:59']
DATE_PATTERNS = ["yyyy-MM-dd", "yyyy/MM/dd", "yyyy-MM-dd HH:mm", "yyyy/MM/dd HH:mm:ss", "HH:mm", "yyyy-MM-dd HH:mm:ss.SSS"]


def q(text):
    return "'" + text + "'"


def struct_args(g, e, n):
    """`n` struct(...) arguments, some aliased."""
    out = []
    for k in range(n):
        x = e(g.r.choice(TYPES))
        out.append(f"{x} AS f{k}" if g.r.random() < 0.4 else x)
    return ", ".join(out)


def a_struct(g, e, depth=0):
    r = g.r.random()
    if r < 0.45:
        return f"struct({struct_args(g, e, g.r.randint(1, 4))})"
    pairs = []
    for k in range(g.r.randint(1, 3)):
        v = a_struct(g, e, depth + 1) if depth < 1 and g.r.random() < 0.25 else e(g.r.choice(TYPES))
        pairs.append(f"'k{k}', {v}")
    return f"named_struct({', '.join(pairs)})"


def s_to_json(g, e, d):
    return f"to_json({a_struct(g, e)})"


def s_get_json(g, e, d):
    path = g.r.choice(["$.a", "$.b.c", "$.b.c[1]", "$.b.c[2].d", "$[1]", "$", "$.n", "$.k0", "$.f1", "$.col1"])
    src = g.r.choice([lambda: e("string"), lambda: f"to_json({a_struct(g, e)})"])()
    return f"get_json_object({src}, {q(path)})"


def s_field(g, e, d):
    n = g.r.randint(1, 3)
    vals = [e(g.r.choice(TYPES)) for _ in range(n)]
    k = g.r.randrange(n)
    if g.r.random() < 0.5:
        return f"named_struct({', '.join(f'{q(chr(97 + i))}, {v}' for i, v in enumerate(vals))}).{chr(97 + k)}"
    return f"struct({', '.join(f'{v} AS {chr(97 + i)}' for i, v in enumerate(vals))}).{chr(97 + k)}"


def date_fn(g, e, d):
    r = g.r
    return r.choice([
        lambda: f"CAST({e('timestamp')} AS DATE)",
        lambda: f"to_date({e('timestamp')})",
        lambda: f"to_date({e(r.choice(['date', 'timestamp']))})",
        lambda: f"to_date(date_format({e('timestamp')}, 'yyyy/MM/dd'), 'yyyy/MM/dd')",
        lambda: f"try_cast({e('string')} AS DATE)",
        lambda: f"CAST({r.choice(['2024-01-15', ' 2024-1-5 ', '2024', '2024-02', '2024-01-15T10:00', '2023-12-31 23:59:59'])!r} AS DATE)",
        lambda: f"to_date({r.choice(['2024-01-15', '2024-3-9'])!r})",
    ])()


def t_time_fn(g, e, d):
    r = g.r
    p = r.choice(["yyyy-MM-dd HH:mm:ss", "yyyy/MM/dd HH:mm", "yyyy-MM-dd", "HH:mm", "yyyy-MM-dd HH:mm:ss.SSS"])
    return r.choice([
        lambda: f"CAST({e('date')} AS TIMESTAMP)",
        lambda: f"to_timestamp({e('date')})",
        lambda: f"to_timestamp(date_format({e('timestamp')}, 'yyyy-MM-dd HH:mm:ss'))",
        lambda: f"to_timestamp(date_format({e('timestamp')}, {q(p)}), {q(p)})",
        lambda: f"try_to_timestamp({e('string')}, {q(r.choice(DATE_PATTERNS))})",
        lambda: f"try_to_timestamp({e('string')})",
        lambda: f"to_timestamp({r.choice(['2024-01-15 10:00:00', '2024-01-15', '2024-01-15T10:00:00.5Z'])!r})",
    ])()


def hash_arg(g, e):
    t = g.r.choice(TYPES)
    return g.leaf(t) if t in ("double", "float") else e(t)


def top_structs(g, depth):
    """A top-level expression of the structs corpus: each uses one of the new constructs."""
    d = depth
    e = lambda tt: g.expr(tt, d - 1)
    r = g.r
    return r.choice([
        lambda: s_to_json(g, e, d), lambda: s_to_json(g, e, d), lambda: s_get_json(g, e, d),
        lambda: s_field(g, e, d),
        lambda: date_fn(g, e, d), lambda: g.expr("date", d),
        lambda: t_time_fn(g, e, d),
        lambda: f"{r.choice(['year', 'month', 'day', 'dayofmonth', 'dayofweek', 'hour'])}({e('date')})",
        lambda: f"({e('date')} {r.choice(['=', '<', '<=', '>', '<>', '<=>'])} {e(r.choice(['date', 'date', 'timestamp']))})",
        lambda: f"({e('date')} {r.choice(['=', '<', '>='])} {r.choice(['2024-01-15', '2001-02-03', '1999-12-31'])!r})",
        lambda: f"CAST({e('date')} AS STRING)",
        lambda: f"date_format({e('date')}, {q(r.choice(['yyyy-MM-dd', 'yyyy/MM/dd HH:mm', 'HH:mm']))})",
        lambda: f"date_trunc({q(r.choice(['YEAR', 'MONTH', 'DAY', 'WEEK']))}, {e('date')})",
        # hash: a double computed by exp / ln / pow may differ from Java's StrictMath in the last
        # bit (the test compares doubles within 1e-9), which changes the hash: DOUBLE and FLOAT
        # arguments are columns and literals only
        lambda: f"hash({', '.join(hash_arg(g, e) for _ in range(r.randint(1, 3)))})",
    ])()


def enable_structs():
    TYPES.append("date")
    DDL["date"] = "DATE"
    WORDS.extend(JSON_WORDS)
    NEW_LITS["date"] = ["DATE '2024-01-15'", "DATE '2001-02-03'", "DATE '1969-12-31'"]
    PRODUCTIONS["date"] = [date_fn, date_fn, lambda g, e, d: cond(g, e, d, "date"),
                           lambda g, e, d: cast_to(g, e, d, "date")]
    PRODUCTIONS["timestamp"].append(t_time_fn)
    PRODUCTIONS["string"].extend([s_to_json, s_get_json])
    PRODUCTIONS["int"].append(lambda g, e, d: f"{g.r.choice(['year', 'month', 'day'])}({e('date')})")
    CAST_SAFE["date"] = ["date", "timestamp"]
    CAST_SAFE["timestamp"] = ["int", "bigint", "timestamp", "date"]


NEW_LITS = {}
CAST_SAFE = {}


def spark_type(dtype):
    return dtype.simpleString()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--exprs", type=int, default=2000)
    ap.add_argument("--rows", type=int, default=50)
    ap.add_argument("--depth", type=int, default=3)
    ap.add_argument("--chunk", type=int, default=100)
    ap.add_argument("--out", required=True)
    ap.add_argument("--features", default="", help="comma-separated: decimal, structs")
    a = ap.parse_args()
    features = set(f for f in a.features.split(",") if f)
    if "structs" in features:
        enable_structs()

    features = tuple(f for f in a.features.split(",") if f)
    if "decimal" in features:
        for t, ps in DECIMAL_PRODUCTIONS.items():
            PRODUCTIONS[t] = PRODUCTIONS.get(t, []) + ps
    g = Gen(random.Random(a.seed), features)
    rows = g.rows(a.rows)
    exprs = []
    seen = set()
    while len(exprs) < a.exprs:
        if "structs" in features:
            x = top_structs(g, g.r.randint(1, a.depth))
        else:
            x = g.expr(g.r.choice(g.top_types()), g.r.randint(1, a.depth))
        if x not in seen:
            seen.add(x)
            exprs.append(x)

    from pyspark.sql import SparkSession
    from pyspark.sql.types import (BooleanType, DateType, DecimalType, DoubleType, FloatType, IntegerType,
                                   LongType, StringType, StructField, StructType, TimestampType)
    spark = (SparkSession.builder.master("local[2]").appName("sql-diff")
             .config("spark.sql.session.timeZone", "UTC")
             .config("spark.sql.ansi.enabled", "true")
             .config("spark.ui.enabled", "false").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    types = {"int": IntegerType(), "bigint": LongType(), "double": DoubleType(), "float": FloatType(),
             "string": StringType(), "boolean": BooleanType(), "timestamp": TimestampType(),
             "date": DateType()}
    for t in DEC_TYPES:
        types[t] = DecimalType(*dec_ps(t))
    st = StructType([StructField(n, types[t], True) for n, t in g.schema])
    df = spark.createDataFrame(python_rows(g.schema, rows), st).cache()
    df.count()

    def cls(ex):
        for m in ("getCondition", "getErrorClass"):
            f = getattr(ex, m, None)
            if f:
                try:
                    c = f()
                    if c:
                        return c
                except Exception:
                    pass
        return type(ex).__name__

    def one(x):
        try:
            q = df.selectExpr(x)
        except Exception as ex:
            return {"expr": x, "error": "analysis", "class": cls(ex)}
        try:
            got = q.collect()
        except Exception as ex:
            # "python": Spark computed a value that PySpark cannot hand over (a timestamp past
            # year 9999); the Rust test skips these.
            kind = "runtime" if "pyspark" in type(ex).__module__ else "python"
            return {"expr": x, "error": kind, "class": cls(ex)}
        f = q.schema.fields[0]
        t = spark_type(f.dataType)
        return {"expr": x, "name": f.name, "type": t, "values": [to_json(r[0], t) for r in got]}

    def batch(chunk):
        """Evaluates a chunk in one job; a failing chunk is split in halves down to single
        expressions, so a few failing expressions cost a few jobs."""
        if len(chunk) == 1:
            return [one(chunk[0])]
        try:
            q = df.selectExpr(*chunk)
            got = q.collect()
        except Exception:
            mid = len(chunk) // 2
            return batch(chunk[:mid]) + batch(chunk[mid:])
        res = []
        for k, x in enumerate(chunk):
            f = q.schema.fields[k]
            t = spark_type(f.dataType)
            res.append({"expr": x, "name": f.name, "type": t, "values": [to_json(r[k], t) for r in got]})
        return res

    out = []
    for i in range(0, len(exprs), a.chunk):
        out.extend(batch(exprs[i:i + a.chunk]))
        print(f"{len(out)}/{len(exprs)}", file=sys.stderr)

    with open(a.out, "w") as f:
        f.write(json.dumps({"schema": g.schema, "rows": [[to_json(v, t) for v, (_, t) in zip(r, g.schema)] for r in rows]}) + "\n")
        for o in out:
            f.write(json.dumps(o, ensure_ascii=False) + "\n")
    errs = sum(1 for o in out if "error" in o)
    print(f"wrote {len(out)} expressions ({errs} refused or failing in Spark) x {len(rows)} rows to {a.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
