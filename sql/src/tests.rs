//! Parsing, positions and errors, with expected values written by hand (Spark's behaviour
//! where it decides; the differential test in `tests/` covers values and names broadly).

use eddy_engine::expr::Compiled;
use eddy_engine::{Record, Schema, Value};

use super::*;

fn schema() -> Schema {
    Schema::parse_ddl("price DOUBLE, qty INT, name STRING, `odd name` STRING, n BIGINT")
        .unwrap_or_else(|e| panic!("{e}"))
}

fn eval(text: &str, values: Vec<Value>) -> Result<Value, ExprError> {
    let b = bind_expression(text, &schema()).unwrap_or_else(|e| panic!("{text}: {e}"));
    Compiled::new(&b.typed).eval(&Record::new(values))
}

fn row(price: f64, qty: i32, name: &str) -> Vec<Value> {
    vec![Value::Double(price), Value::Int(qty), Value::Str(name.into()), Value::Null, Value::Long(3)]
}

#[test]
fn a_division_by_zero_names_the_failing_expression() {
    let err = eval("qty / (qty - qty) + 1", row(1.0, 4, "a")).err().map(|e| e.to_string());
    assert_eq!(err.as_deref(), Some(r#"DIVIDE_BY_ZERO in "(qty / (qty - qty))""#));
    assert_eq!(eval("try_divide(qty, qty - qty)", row(1.0, 4, "a")), Ok(Value::Null));
}

#[test]
fn integer_overflow_and_invalid_casts_are_errors_and_try_functions_give_null() {
    let e = eval("qty * 2147483647", row(1.0, 4, "a")).err().map(|e| e.to_string());
    assert_eq!(e.as_deref(), Some(r#"ARITHMETIC_OVERFLOW in "(qty * 2147483647)""#));
    let e = eval("CAST(name AS INT)", row(1.0, 4, "x")).err().map(|e| e.to_string());
    assert_eq!(e.as_deref(), Some(r#"CAST_INVALID_INPUT in "CAST(name AS INT)""#));
    assert_eq!(eval("try_cast(name AS INT)", row(1.0, 4, "x")), Ok(Value::Null));
    assert_eq!(eval("try_multiply(qty, 2147483647)", row(1.0, 4, "x")), Ok(Value::Null));
    let e = eval("split_part(name, '-', qty - 4)", row(1.0, 4, "a-b")).err().map(|e| e.to_string());
    assert_eq!(e.as_deref(), Some(r#"INVALID_INDEX_OF_ZERO in "split_part(name, -, (qty - 4))""#));
}

#[test]
fn infix_div_and_spark_literal_suffixes_parse() {
    assert_eq!(eval("qty div 3", row(1.0, 7, "a")), Ok(Value::Long(2)));
    assert_eq!(eval("n + 1L", row(1.0, 7, "a")), Ok(Value::Long(4)));
    assert_eq!(eval("price * 1.5D", row(2.0, 7, "a")), Ok(Value::Double(3.0)));
    assert_eq!(eval(r"'it\'s' || 'x'", row(2.0, 7, "a")), Ok(Value::Str("it'sx".into())));
    assert_eq!(eval("`odd name` IS NULL", row(2.0, 7, "a")), Ok(Value::Bool(true)));
}

#[test]
fn a_double_suffix_after_an_exponent_is_one_literal() {
    // sqlparser splits `1e3D` into `1e3` and the alias `D`; Spark reads one DOUBLE literal
    assert_eq!(eval("price * 1e3D", row(2.0, 7, "a")), Ok(Value::Double(2000.0)));
    assert_eq!(eval("1.5e3d > price", row(2.0, 7, "a")), Ok(Value::Bool(true)));
    let b = bind_expression("1e3D", &schema()).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(b.name, "1000.0");
    // a space before the D leaves it an alias
    let b = bind_expression("1e3 D", &schema()).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(b.name, "D");
}

#[test]
fn a_double_literal_beyond_the_double_range_is_refused_as_spark() {
    for text in ["1e999 < price", "-1e999D < price"] {
        match parse_expression(text) {
            Err(SqlError::Unsupported { found, .. }) => {
                assert!(found.contains("INVALID_NUMERIC_LITERAL_RANGE"), "{text}: {found}")
            }
            other => panic!("{text}: {other:?}"),
        }
    }
    assert_eq!(eval("1e-999 < price", row(2.0, 7, "a")), Ok(Value::Bool(true)));
}

#[test]
fn three_valued_logic_as_spark() {
    let r = || vec![Value::Null, Value::Int(1), Value::Null, Value::Null, Value::Null];
    assert_eq!(eval("price > 1 AND false", r()), Ok(Value::Bool(false)));
    assert_eq!(eval("price > 1 OR true", r()), Ok(Value::Bool(true)));
    assert_eq!(eval("price > 1 AND true", r()), Ok(Value::Null));
    assert_eq!(eval("price <=> NULL", r()), Ok(Value::Bool(true)));
    assert_eq!(eval("qty IN (2, NULL)", r()), Ok(Value::Null));
    assert_eq!(eval("qty NOT IN (2, 3)", r()), Ok(Value::Bool(true)));
}

#[test]
fn output_names_are_spark_names_and_aliases() {
    let name = |t: &str| bind_expression(t, &schema()).map(|b| b.name).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(name("price * 2"), "(price * 2)");
    assert_eq!(name("lower(NAME)"), "lower(NAME)");
    assert_eq!(name("CAST(qty AS BIGINT)"), "qty");
    assert_eq!(name("price * qty AS revenue"), "revenue");
    assert_eq!(name("price BETWEEN 1 AND 5"), "between(price, 1, 5)");
}

#[test]
fn errors_give_the_line_and_column_what_was_found_and_what_is_allowed() {
    let err = |t: &str| bind_expression(t, &schema()).err().map(|e| e.to_string()).unwrap_or_default();
    let e = err("price +\n  nope");
    assert!(e.starts_with("at 2:3: unknown column `nope`") && e.contains("price, qty"), "{e}");
    let e = err("price + ");
    assert!(e.starts_with("at 1:") && e.contains("expected"), "{e}");
    let e = err("CAST(qty AS DECIMAL(39, 2))");
    assert!(e.starts_with("at 1:") && e.contains("CAST to DECIMAL(39,2)") && e.contains("1..=38"), "{e}");
    let e = err("frobnicate(price)");
    assert!(e.starts_with("at 1:1: function frobnicate is not supported"), "{e}");
    // a string beside a number is cast to it (Spark's ANSI coercion); a boolean is refused
    let e = err("qty + (price > 1)");
    assert!(e.starts_with("at 1:") && e.contains("BOOLEAN"), "{e}");
    assert!(bind_expression("qty + name", &schema()).is_ok());
    let e = err("price price2 price3");
    assert!(e.contains("price3"), "{e}");
}

#[test]
fn a_backslash_before_underscore_or_percent_stays_a_like_escape() {
    // Spark's string literals keep `\_` and `\%`, so LIKE reads them as a literal _ and %.
    assert_eq!(eval(r"name LIKE 'x\_y%'", row(1.0, 1, "x_yz")), Ok(Value::Bool(true)));
    assert_eq!(eval(r"name LIKE 'x\_y%'", row(1.0, 1, "xAyz")), Ok(Value::Bool(false)));
    assert_eq!(eval(r"name LIKE '100\%'", row(1.0, 1, "100%")), Ok(Value::Bool(true)));
    assert_eq!(eval(r"name LIKE '100\%'", row(1.0, 1, "1000")), Ok(Value::Bool(false)));
    let b = bind_expression(r"name ILIKE 'x\_y%'", &schema()).map(|b| b.name);
    assert_eq!(b.as_deref(), Ok(r"ilike(name, x\_y%)"));
}

/// Result types and values of DECIMAL expressions, as Spark 4.3 gives them under ANSI (each
/// checked with the oracle's pyspark: `typeof(...)` and the value).
#[test]
fn decimal_expressions_have_sparks_types_and_values() {
    let schema = Schema::parse_ddl(
        "a DECIMAL(10,2), b DECIMAL(3,1), c DECIMAL(2,1), i INT, l BIGINT, d DOUBLE, x DECIMAL(38,10)",
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let dec = |u: i128, s: u8| Value::Decimal(eddy_engine::decimal::Decimal::new(u, s));
    let values = vec![dec(100, 2), dec(25, 1), dec(7, 1), Value::Int(3), Value::Long(2), Value::Double(0.5), dec(1, 0)];
    let run = |text: &str| {
        let b = bind_expression(text, &schema).unwrap_or_else(|e| panic!("{text}: {e}"));
        let v = Compiled::new(&b.typed).eval(&Record::new(values.clone()));
        (
            b.typed.data_type.to_string(),
            v.map(|v| match v {
                Value::Decimal(d) => d.to_string(),
                other => format!("{other:?}"),
            }),
        )
    };
    let ok = |text: &str, ty: &str, v: &str| assert_eq!(run(text), (ty.to_string(), Ok(v.to_string())), "{text}");
    ok("1.5", "DECIMAL(2,1)", "1.5");
    ok("CAST(1 AS DECIMAL(3,2)) + 1", "DECIMAL(4,2)", "2.00");
    ok("a / CAST(3 AS DECIMAL(10,2))", "DECIMAL(23,13)", "0.3333333333333");
    ok("b % c", "DECIMAL(2,1)", "0.4");
    ok("round(2.345, 2)", "DECIMAL(4,2)", "2.35");
    ok("bround(2.345, 2)", "DECIMAL(4,2)", "2.34");
    ok("floor(-1.5)", "DECIMAL(2,0)", "-2");
    ok("ceil(a)", "DECIMAL(9,0)", "1");
    ok("round(a, 1)", "DECIMAL(10,1)", "1.0");
    ok("round(a, -1)", "DECIMAL(9,0)", "0");
    ok("abs(-a)", "DECIMAL(10,2)", "1.00");
    ok("x * x", "DECIMAL(38,6)", "1.000000");
    ok("greatest(a, 1)", "DECIMAL(12,2)", "1.00");
    ok("coalesce(a, l)", "DECIMAL(22,2)", "1.00");
    ok("a + i", "DECIMAL(13,2)", "4.00");
    ok(
        "CAST(9.99 AS DECIMAL(3,2)) + CAST(9.99 AS DECIMAL(38,37))",
        "DECIMAL(38,36)",
        "19.980000000000000000000000000000000000",
    );
    ok("a + d", "DOUBLE", "Double(1.5)");
    ok("sign(a)", "DOUBLE", "Double(1.0)");
    ok("a = 1", "BOOLEAN", "Bool(true)");
    let name = |text: &str| bind_expression(text, &schema).map(|b| b.name).unwrap_or_else(|e| panic!("{e}"));
    // Spark names an order comparison of a DECIMAL literal with an integer by the integer bound
    assert_eq!(name("12345.6789 > -5"), "(12346 > -5)");
    assert_eq!(name("1.5 > i"), "(2 > i)");
    assert_eq!(name("0.5 < 1"), "(0 < 1)");
    assert_eq!(name("-5 < 12345.6789"), "(-5 < 12346)");
    assert_eq!(name("12345.4 = 12345"), "(12345.4 = 12345)");
    assert_eq!(name("a > -5"), "(a > -5)");
    ok("12345.4 > 12345", "BOOLEAN", "Bool(true)");
    ok("12345.6789 > 12346", "BOOLEAN", "Bool(false)");
    ok("1.5 > i", "BOOLEAN", "Bool(false)");
    ok("2.5 > 2L", "BOOLEAN", "Bool(true)");
    ok("b > a", "BOOLEAN", "Bool(true)");
    ok("try_cast(12345.678 AS DECIMAL(4,1))", "DECIMAL(4,1)", "Null");
    ok("CAST(a AS STRING)", "STRING", "Str(\"1.00\")");
    ok("a div c", "BIGINT", "Long(1)");
    ok("pmod(-b, c)", "DECIMAL(2,1)", "0.3");
    ok("-b % c", "DECIMAL(2,1)", "-0.4");
    ok("a * 1.5", "DECIMAL(13,3)", "1.500");
    ok("1.5 * 2", "DECIMAL(4,1)", "3.0");
    ok("a - 0.005", "DECIMAL(12,3)", "0.995");
    ok("CAST(-2.5 AS DECIMAL(3,1)) div c", "BIGINT", "Long(-3)");
    ok("a + NULL", "DECIMAL(11,2)", "Null");
    ok("CASE WHEN i > 1 THEN a ELSE b END", "DECIMAL(10,2)", "1.00");
    ok("a IN (1, 2.0)", "BOOLEAN", "Bool(true)");
    ok("CAST(123.456 AS DECIMAL(5,1))", "DECIMAL(5,1)", "123.5");
    ok("12345678901234567890", "DECIMAL(20,0)", "12345678901234567890");
    ok("try_add(CAST(99999999999999999999999999999999999999 AS DECIMAL(38,0)), 1)", "DECIMAL(38,0)", "Null");
    ok("try_divide(a, 0)", "DECIMAL(14,6)", "Null");
    ok("CAST(1e-3 AS DECIMAL(5,4))", "DECIMAL(5,4)", "0.0010");
    ok("CAST(CAST(0.15 AS FLOAT) AS DECIMAL(3,1))", "DECIMAL(3,1)", "0.2");
    ok("round(b)", "DECIMAL(3,0)", "3");
    ok("-0.5", "DECIMAL(1,1)", "-0.5");
    ok("round(CAST(-2.5 AS DECIMAL(3,1)))", "DECIMAL(3,0)", "-3");
    ok("CAST(a AS INT)", "INT", "Int(1)");
    ok("CAST(b AS DOUBLE)", "DOUBLE", "Double(2.5)");
    let err = |text: &str, e: &str| assert_eq!(run(text).1.map_err(|e| e.to_string()), Err(e.to_string()), "{text}");
    err("CAST(12345.678 AS DECIMAL(4,1))", r#"NUMERIC_VALUE_OUT_OF_RANGE in "CAST(12345.678 AS DECIMAL(4,1))""#);
    err("CAST('abc' AS DECIMAL(4,1))", r#"CAST_INVALID_INPUT in "CAST(abc AS DECIMAL(4,1))""#);
    err(
        "CAST(99999999999999999999999999999999999999 AS DECIMAL(38,0)) + 1",
        r#"NUMERIC_VALUE_OUT_OF_RANGE in "(CAST(99999999999999999999999999999999999999 AS DECIMAL(38,0)) + 1)""#,
    );
    err("a / (a - a)", r#"DIVIDE_BY_ZERO in "(a / (a - a))""#);
    err("b / 0.0", r#"DIVIDE_BY_ZERO in "(b / 0.0)""#);
}

#[test]
fn locate_with_a_start_counts_characters_from_that_start() {
    // Expected values by hand from Spark's `StringLocate`: 1-based characters, 0 when absent or
    // for a start below 1, 0 for a NULL start, NULL for a NULL string.
    let r = |name: &str| row(1.0, 4, name);
    assert_eq!(eval("locate('l', name, 4)", r("hello")), Ok(Value::Int(4)));
    assert_eq!(eval("locate('l', name, 5)", r("hello")), Ok(Value::Int(0)));
    assert_eq!(eval("locate('l', name, 1)", r("café là")), Ok(Value::Int(6)));
    assert_eq!(eval("locate('à', name, qty)", r("café là")), Ok(Value::Int(7)));
    assert_eq!(eval("locate('l', name, 0)", r("hello")), Ok(Value::Int(0)));
    assert_eq!(eval("locate('l', name, 99)", r("hello")), Ok(Value::Int(0)));
    assert_eq!(eval("locate('l', name, CAST(NULL AS INT))", r("hello")), Ok(Value::Int(0)));
    assert_eq!(eval("locate('l', `odd name`, 1)", r("hello")), Ok(Value::Null));
    let b = bind_expression("locate('l', name, 4)", &schema()).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(b.typed.output_name(), "locate(l, name, 4)");
}

/// Found by the `sql_expression` fuzz target: truncating an instant of the first year a
/// TIMESTAMP holds (µs near `i64::MIN`) to its year, quarter, month or week lands before that
/// first instant. It is an overflow error (a dead letter at run time), not a panic.
#[test]
fn date_trunc_before_the_first_timestamp_is_an_overflow_error() {
    for unit in ["YEAR", "QUARTER", "MONTH", "WEEK"] {
        let text = format!("date_trunc('{unit}', timestamp_micros(-9223372036854775807L))");
        let e = eval(&text, row(1.0, 4, "a")).err().map(|e| e.to_string());
        assert!(e.as_deref().is_some_and(|e| e.starts_with("ARITHMETIC_OVERFLOW")), "{unit}: {e:?}");
    }
    assert_eq!(
        eval("date_trunc('HOUR', timestamp_micros(3600000001L))", row(1.0, 4, "a")),
        Ok(Value::Timestamp(eddy_engine::Timestamp(3_600_000_000)))
    );
}

/// Interval literals as Spark 4.3 reads and names them: each name and instant below was given
/// by Spark (`spark.sql("SELECT TIMESTAMP '2024-01-15 10:00:00' AS ts").selectExpr(e)`, ANSI on,
/// session time zone UTC).
#[test]
fn interval_literals_are_read_and_named_as_spark() {
    let schema = Schema::parse_ddl("ts TIMESTAMP").unwrap_or_else(|e| panic!("{e}"));
    let ts = |text: &str| eddy_engine::time::parse_timestamp(text).unwrap_or_else(|e| panic!("{text}: {e}"));
    let ten = ts("2024-01-15T10:00:00Z");
    for (expr, name, at) in [
        ("ts + INTERVAL -1 DAY", "ts + INTERVAL '-1' DAY", "2024-01-14T10:00:00Z"),
        ("ts - INTERVAL -2 HOURS", "ts - INTERVAL '-02' HOUR", "2024-01-15T12:00:00Z"),
        ("ts + INTERVAL 1 WEEK", "ts + INTERVAL '7' DAY", "2024-01-22T10:00:00Z"),
        ("ts + INTERVAL 2 WEEKS", "ts + INTERVAL '14' DAY", "2024-01-29T10:00:00Z"),
        ("ts + INTERVAL 1.5 SECONDS", "ts + INTERVAL '01.5' SECOND", "2024-01-15T10:00:01.5Z"),
        ("ts + INTERVAL 0.25 SECOND", "ts + INTERVAL '00.25' SECOND", "2024-01-15T10:00:00.25Z"),
        ("ts + INTERVAL 2 HOURS 30 MINUTES", "ts + INTERVAL '02:30' HOUR TO MINUTE", "2024-01-15T12:30:00Z"),
        ("ts + INTERVAL 1 DAY 2 HOURS", "ts + INTERVAL '1 02' DAY TO HOUR", "2024-01-16T12:00:00Z"),
        ("ts + INTERVAL '-1' DAY", "ts + INTERVAL '-1' DAY", "2024-01-14T10:00:00Z"),
        ("ts + INTERVAL 1 DAY", "ts + INTERVAL '1' DAY", "2024-01-16T10:00:00Z"),
        ("ts + INTERVAL 3 MINUTES", "ts + INTERVAL '03' MINUTE", "2024-01-15T10:03:00Z"),
        ("ts + INTERVAL 500 MILLISECONDS", "ts + INTERVAL '00.5' SECOND", "2024-01-15T10:00:00.5Z"),
        ("ts + INTERVAL 7 MICROSECONDS", "ts + INTERVAL '00.000007' SECOND", "2024-01-15T10:00:00.000007Z"),
        ("ts + INTERVAL 90 SECONDS", "ts + INTERVAL '90' SECOND", "2024-01-15T10:01:30Z"),
        ("ts + INTERVAL 1 HOUR 30 SECONDS", "ts + INTERVAL '01:00:30' HOUR TO SECOND", "2024-01-15T11:00:30Z"),
        ("ts + INTERVAL -1 HOUR 30 MINUTES", "ts + INTERVAL '-00:30' HOUR TO MINUTE", "2024-01-15T09:30:00Z"),
        ("ts + INTERVAL 1.123456789 SECONDS", "ts + INTERVAL '01.123456' SECOND", "2024-01-15T10:00:01.123456Z"),
        ("ts + INTERVAL '2 hours 30 minutes'", "ts + INTERVAL '02:30' HOUR TO MINUTE", "2024-01-15T12:30:00Z"),
        ("ts + INTERVAL '1 week'", "ts + INTERVAL '7' DAY", "2024-01-22T10:00:00Z"),
        ("ts + INTERVAL '-1 day'", "ts + INTERVAL '-1' DAY", "2024-01-14T10:00:00Z"),
        ("ts + INTERVAL '1.5 seconds'", "ts + INTERVAL '01.5' SECOND", "2024-01-15T10:00:01.5Z"),
        ("ts + INTERVAL 2 HOURS -30 MINUTES", "ts + INTERVAL '01:30' HOUR TO MINUTE", "2024-01-15T11:30:00Z"),
        ("ts + INTERVAL 1 DAY 1 DAY", "ts + INTERVAL '2' DAY", "2024-01-17T10:00:00Z"),
        ("ts + INTERVAL 30 MINUTES 2 HOURS", "ts + INTERVAL '02:30' HOUR TO MINUTE", "2024-01-15T12:30:00Z"),
        ("ts + INTERVAL 1 SECOND 500 MILLISECONDS", "ts + INTERVAL '01.5' SECOND", "2024-01-15T10:00:01.5Z"),
        ("ts + INTERVAL '  3  ' DAY", "ts + INTERVAL '3' DAY", "2024-01-18T10:00:00Z"),
        ("ts + INTERVAL '+3' HOUR", "ts + INTERVAL '03' HOUR", "2024-01-15T13:00:00Z"),
        ("ts + INTERVAL +3 HOURS", "ts + INTERVAL '03' HOUR", "2024-01-15T13:00:00Z"),
        ("ts + interval 3 hours", "ts + INTERVAL '03' HOUR", "2024-01-15T13:00:00Z"),
        ("ts + INTERVAL 25 HOURS", "ts + INTERVAL '25' HOUR", "2024-01-16T11:00:00Z"),
        ("ts + INTERVAL 1 DAY 25 HOURS", "ts + INTERVAL '2 01' DAY TO HOUR", "2024-01-17T11:00:00Z"),
        ("ts + INTERVAL '3 HOURS'", "ts + INTERVAL '03' HOUR", "2024-01-15T13:00:00Z"),
        ("ts + INTERVAL -0.5 SECONDS", "ts + INTERVAL '-00.5' SECOND", "2024-01-15T09:59:59.5Z"),
        ("ts + INTERVAL 2 MINUTE", "ts + INTERVAL '02' MINUTE", "2024-01-15T10:02:00Z"),
    ] {
        let b = bind_expression(expr, &schema).unwrap_or_else(|e| panic!("{expr}: {e}"));
        assert_eq!(b.name, name, "{expr}");
        let got = Compiled::new(&b.typed).eval(&Record::new(vec![Value::Timestamp(ten)]));
        assert_eq!(got.ok(), Some(Value::Timestamp(ts(at))), "{expr}");
    }
    // refused by Spark too (a fraction of a minute or a millisecond), or not a day-time
    // interval (a year-month one)
    for expr in [
        "ts + INTERVAL 1.5 MINUTES",
        "ts + INTERVAL 1.5 MILLISECONDS",
        "ts + INTERVAL 1 MONTH",
        "ts + INTERVAL '2 hours x'",
    ] {
        assert!(bind_expression(expr, &schema).is_err(), "{expr}");
    }
}

/// A CAST, SUBSTRING or INTERVAL is placed at its keyword (sqlparser's span starts at what it
/// holds): counted in characters after non-ASCII text, on the keyword's own line, and for a
/// nested CAST at the outer one.
#[test]
fn constructs_written_with_a_keyword_are_placed_at_it() {
    let at = |text: &str| match parse_expression(text) {
        Ok(p) => (p.syntax.pos.line, p.syntax.pos.column),
        Err(e) => panic!("{text}: {e}"),
    };
    assert_eq!(at("CAST(qty AS STRING)"), (1, 1));
    assert_eq!(at("  try_cast(\n ( qty ) AS INT)"), (1, 3));
    assert_eq!(at("CAST(CAST(qty AS STRING) AS INT)"), (1, 1));
    assert_eq!(at("qty::STRING"), (1, 1));
    assert_eq!(at("SUBSTRING(name, 2)"), (1, 1));
    assert_eq!(at("INTERVAL -1 HOUR"), (1, 1));
    let unsupported_at = |text: &str| match bind_expression(text, &schema()) {
        Err(SqlError::Unsupported { pos, .. }) => (pos.line, pos.column),
        other => panic!("{text}: {other:?}"),
    };
    assert_eq!(unsupported_at("concat('é€', CAST(qty AS ARRAY<INT>))"), (1, 14));
    assert_eq!(unsupported_at("concat(name,\n  cast(CAST(qty AS STRING) AS MAP<STRING, INT>))"), (2, 3));
    assert_eq!(unsupported_at("'été' || INTERVAL 2 MONTHS"), (1, 10));
}

/// Values, names and types checked with Spark 4.3's pyspark (ANSI, UTC), reading the inputs from
/// JSON files so that Spark's generated code ran them.
#[test]
fn timestamps_and_decimal_or_double_seconds_convert_as_spark() {
    use eddy_engine::Timestamp;
    use eddy_engine::decimal::Decimal;
    let schema =
        Schema::parse_ddl("ts TIMESTAMP, x DECIMAL(38,7), d DOUBLE, f FLOAT").unwrap_or_else(|e| panic!("{e}"));
    let run = |text: &str, values: Vec<Value>| {
        let b = bind_expression(text, &schema).unwrap_or_else(|e| panic!("{text}: {e}"));
        let v = Compiled::new(&b.typed).eval(&Record::new(values)).map_err(|e| e.to_string());
        (b.typed.name, b.typed.data_type.to_string(), v)
    };
    let row = |ts: i64, x: i128, d: f64, f: f32| {
        vec![Value::Timestamp(Timestamp(ts)), Value::Decimal(Decimal::new(x, 7)), Value::Double(d), Value::Float(f)]
    };
    let at = |us: i64| Ok(Value::Timestamp(Timestamp(us)));
    let fails = |text: &str, values: Vec<Value>, condition: &str| {
        let v = run(text, values).2;
        assert!(v.as_ref().is_err_and(|m| m.starts_with(condition)), "{text}: {v:?}");
    };
    let r = row(1_705_312_800_123_456, 15_000_000, 1_705_312_800.25, 123_456.79);
    let (name, ty, v) = run("CAST(ts AS DECIMAL(20, 5))", r.clone());
    assert_eq!((name.as_str(), ty.as_str()), ("CAST(ts AS DECIMAL(20,5))", "DECIMAL(20,5)"));
    assert_eq!(v, Ok(Value::Decimal(Decimal::new(170_531_280_012_346, 5))));
    assert_eq!(run("ts::decimal", r.clone()).2, Ok(Value::Decimal(Decimal::new(1_705_312_800, 0))));
    fails("CAST(ts AS DECIMAL(5, 0))", r.clone(), "NUMERIC_VALUE_OUT_OF_RANGE");
    assert_eq!(run("try_cast(ts AS DECIMAL(5, 0))", r.clone()).2, Ok(Value::Null));
    let (name, ty, v) = run("CAST(x AS TIMESTAMP)", r.clone());
    assert_eq!((name.as_str(), ty.as_str(), v), ("CAST(x AS TIMESTAMP)", "TIMESTAMP", at(1_500_000)));
    let (name, ty, v) = run("timestamp_seconds(x)", r.clone());
    assert_eq!((name.as_str(), ty.as_str(), v), ("timestamp_seconds(x)", "TIMESTAMP", at(1_500_000)));
    assert_eq!(run("timestamp_seconds(d)", r.clone()).2, at(1_705_312_800_250_000));
    // a FLOAT is widened to DOUBLE before the multiplication by 10^6
    let (name, _, v) = run("timestamp_seconds(f)", r.clone());
    assert_eq!((name.as_str(), v), ("timestamp_seconds(f)", at(123_456_789_062)));
    assert_eq!(run("timestamp_seconds(1.5)", r.clone()).2, at(1_500_000));
    // digits below the microsecond: a DECIMAL fails, a DOUBLE truncates toward zero
    let r = row(0, -10_000_005, -1.0000005, f32::NAN);
    fails("timestamp_seconds(x)", r.clone(), "ROUNDING_NECESSARY");
    assert_eq!(run("CAST(x AS TIMESTAMP)", r.clone()).2, at(-1_000_000));
    assert_eq!(run("timestamp_seconds(d)", r.clone()).2, at(-1_000_000));
    assert_eq!(run("CAST(d AS TIMESTAMP)", r.clone()).2, at(-1_000_000));
    // NaN: NULL from timestamp_seconds, an invalid cast from CAST
    assert_eq!(run("timestamp_seconds(f)", r.clone()).2, Ok(Value::Null));
    fails("CAST(f AS TIMESTAMP)", r.clone(), "CAST_INVALID_INPUT");
    assert_eq!(run("try_cast(f AS TIMESTAMP)", r).2, Ok(Value::Null));
    // beyond BIGINT microseconds: DATETIME_OVERFLOW from timestamp_seconds, the low 64 bits
    // from CAST, saturation for a DOUBLE
    let r = row(0, 1_000_000_000_000_000_000_000_000_000, 1e20, 0.0);
    fails("timestamp_seconds(x)", r.clone(), "DATETIME_OVERFLOW");
    assert_eq!(run("CAST(x AS TIMESTAMP)", r.clone()).2, at(-2_537_764_290_115_403_776));
    assert_eq!(run("timestamp_seconds(d)", r.clone()).2, at(i64::MAX));
    assert_eq!(run("timestamp_seconds(-d)", r).2, at(i64::MIN));
    // BIGINT seconds or milliseconds beyond BIGINT microseconds: DATETIME_OVERFLOW from
    // timestamp_seconds / timestamp_millis, saturation from CAST
    let r = row(0, 0, 9_223_372_036_854_000_000.0, 0.0);
    fails("timestamp_seconds(CAST(d AS BIGINT))", r.clone(), "DATETIME_OVERFLOW");
    fails("timestamp_millis(CAST(d AS BIGINT))", r.clone(), "DATETIME_OVERFLOW");
    assert_eq!(run("CAST(CAST(d AS BIGINT) AS TIMESTAMP)", r.clone()).2, at(i64::MAX));
    assert_eq!(run("CAST(CAST(-d AS BIGINT) AS TIMESTAMP)", r).2, at(i64::MIN));
    // Spark refuses these: millis and micros take integers only, a DATE is no number
    for bad in [
        "timestamp_millis(1.5)",
        "timestamp_micros(d)",
        "timestamp_seconds('1.5')",
        "CAST(CAST(ts AS DATE) AS DECIMAL(20, 6))",
    ] {
        assert!(bind_expression(bad, &schema).is_err(), "{bad}");
    }
}
