//! STRUCT, JSON and DATE expressions: names, types and values written by hand from Spark 4.3's
//! answers (the oracle's python, ANSI on, session time zone UTC) for the same text.

use eddy_engine::expr::{Compiled, EvalErrorKind, ExprError};
use eddy_engine::schema::StructType;
use eddy_engine::{DataType, Field, Record, Schema, Timestamp, Value};

use super::*;

/// `a INT, b STRING, n INT, t TIMESTAMP, d DOUBLE, nan DOUBLE, dt DATE, h DOUBLE, f FLOAT,
/// s STRUCT<k: INT, v: STRING>, window WINDOW`.
fn schema() -> Schema {
    let kv = StructType::new(vec![
        Field { name: "k".into(), data_type: DataType::Int },
        Field { name: "v".into(), data_type: DataType::String },
    ]);
    let mut fields: Vec<Field> =
        Schema::parse_ddl("a INT, b STRING, n INT, t TIMESTAMP, d DOUBLE, nan DOUBLE, dt DATE, h DOUBLE, f FLOAT")
            .unwrap_or_else(|e| panic!("{e}"))
            .fields()
            .to_vec();
    fields.push(Field { name: "s".into(), data_type: DataType::Struct(kv) });
    fields.push(Field { name: "window".into(), data_type: DataType::Window });
    Schema::new(fields)
}

const T_2024_01_15_10: i64 = 1_705_312_800_000_000;
const D_2024_01_15: i32 = 19_737;

/// a = 1, b = 'x', n = NULL, t = 2024-01-15 10:00:00.123456, d = 1e20, nan = NaN,
/// dt = 2024-01-15, h = 1.5, f = 2.5, s = {k: 7, v: NULL}, window = [10:00, 10:05).
fn row() -> Record {
    let ty = match schema().fields()[9].data_type {
        DataType::Struct(ty) => ty,
        other => panic!("{other}"),
    };
    Record::new(vec![
        Value::Int(1),
        Value::Str("x".into()),
        Value::Null,
        Value::Timestamp(Timestamp(T_2024_01_15_10 + 123_456)),
        Value::Double(1e20),
        Value::Double(f64::NAN),
        Value::Date(D_2024_01_15),
        Value::Double(1.5),
        Value::Float(2.5),
        Value::Struct(ty, vec![Value::Int(7), Value::Null].into()),
        Value::Window { start: Timestamp(T_2024_01_15_10), end: Timestamp(T_2024_01_15_10 + 300_000_000) },
    ])
}

fn bound(text: &str) -> Bound {
    bind_expression(text, &schema()).unwrap_or_else(|e| panic!("{text}: {e}"))
}

fn eval(text: &str) -> Result<Value, ExprError> {
    Compiled::new(&bound(text).typed).eval(&row())
}

fn text(text: &str) -> String {
    match eval(text) {
        Ok(Value::Str(s)) => s.to_string(),
        other => panic!("{text}: {other:?}"),
    }
}

#[test]
fn structs_are_named_and_typed_as_spark_names_them() {
    for (expr, name, ty) in [
        ("struct(a, b)", "struct(a, b)", "STRUCT<a: INT, b: STRING>"),
        ("struct(a, b AS c)", "struct(a, b AS c)", "STRUCT<a: INT, c: STRING>"),
        ("struct(a+1, b)", "struct((a + 1), b)", "STRUCT<col1: INT, b: STRING>"),
        ("struct(a + 1 AS x, upper(b))", "struct((a + 1) AS x, upper(b))", "STRUCT<x: INT, col2: STRING>"),
        ("named_struct('k', a, 'v', b)", "named_struct(k, a, v, b)", "STRUCT<k: INT, v: STRING>"),
        ("struct(s.k, window.end)", "struct(s.k, window.end)", "STRUCT<k: INT, end: TIMESTAMP>"),
    ] {
        let b = bound(expr);
        assert_eq!((b.name.as_str(), b.typed.data_type.to_string()), (name, ty.to_string()), "{expr}");
    }
}

#[test]
fn to_json_writes_a_struct_as_spark_does() {
    assert_eq!(text("to_json(struct(a, b))"), r#"{"a":1,"b":"x"}"#);
    assert_eq!(bound("to_json(struct(a, b))").name, "to_json(struct(a, b))");
    // null fields left out, timestamps cut to ms, doubles as Java prints them, NaN quoted
    assert_eq!(
        text("to_json(struct(a, n, t, d, nan, dt, h, f))"),
        r#"{"a":1,"t":"2024-01-15T10:00:00.123Z","d":1.0E20,"nan":"NaN","dt":"2024-01-15","h":1.5,"f":2.5}"#
    );
    assert_eq!(text("to_json(named_struct('x', struct(a, b), 'y', n))"), r#"{"x":{"a":1,"b":"x"}}"#);
    assert_eq!(text("to_json(struct(a+1, b))"), r#"{"col1":2,"b":"x"}"#);
    assert_eq!(text("to_json(struct(true, 'q', 1))"), r#"{"col1":true,"col2":"q","col3":1}"#);
    assert_eq!(text("to_json(s)"), r#"{"k":7}"#);
    // a column's field is named as written, not as the schema spells it
    assert_eq!(text("to_json(struct(A))"), r#"{"A":1}"#);
}

#[test]
fn fields_of_struct_columns_and_windows_are_named_by_the_field() {
    assert_eq!(eval("s.k"), Ok(Value::Int(7)));
    assert_eq!(bound("s.k").name, "k");
    assert_eq!(bound("S.K").typed.data_type, DataType::Int);
    assert_eq!(eval("s.v"), Ok(Value::Null));
    assert_eq!(bound("upper(s.v)").name, "upper(s.v)");
    assert_eq!(eval("window.start"), Ok(Value::Timestamp(Timestamp(T_2024_01_15_10))));
    assert_eq!(bound("window.start").name, "start");
    assert_eq!(bound("window.end").name, "end");
    assert_eq!(eval("window_time(window)"), Ok(Value::Timestamp(Timestamp(T_2024_01_15_10 + 300_000_000 - 1))));
    assert_eq!(bound("window_time(window)").name, "window_time(window)");
    // a field of a struct-valued expression is named in full, as Spark names it
    assert_eq!(eval("struct(a, b).a"), Ok(Value::Int(1)));
    assert_eq!(bound("struct(a, b).a").name, "struct(a, b).a");
    assert_eq!(eval("named_struct('k', a).k"), Ok(Value::Int(1)));
    assert_eq!(bound("named_struct('k', a).k").name, "named_struct(k, a).k");
    for bad in ["s.z", "a.b", "window.middle", "window_time(t)", "to_json(a)"] {
        assert!(bind_expression(bad, &schema()).is_err(), "{bad}");
    }
}

#[test]
fn get_json_object_extracts_as_spark_does() {
    assert_eq!(text(r#"get_json_object('{"a":{"b":[1,2,{"c":"z"}]}}', '$.a.b[2].c')"#), "z");
    assert_eq!(text(r#"get_json_object('{"a":{"b":[1,2,{"c":"z"}]}}', '$.a.b')"#), r#"[1,2,{"c":"z"}]"#);
    assert_eq!(eval(r#"get_json_object('{"a":null}', '$.a')"#), Ok(Value::Null));
    assert_eq!(eval("get_json_object('bad', '$.a')"), Ok(Value::Null));
    assert_eq!(bound(r#"get_json_object('{"a":"s"}', '$.a')"#).name, r#"get_json_object({"a":"s"}, $.a)"#);
    assert_eq!(text("get_json_object(to_json(struct(a, b)), '$.b')"), "x");
}

#[test]
fn dates_cast_compare_and_format_as_spark() {
    assert_eq!(eval("DATE '2024-01-15'"), Ok(Value::Date(D_2024_01_15)));
    assert_eq!(bound("dt < DATE '2024-02-01'").name, "(dt < DATE '2024-02-01')");
    assert_eq!(eval("dt < DATE '2024-02-01'"), Ok(Value::Bool(true)));
    assert_eq!(eval("dt = '2024-01-15'"), Ok(Value::Bool(true)));
    assert_eq!(eval("dt < t"), Ok(Value::Bool(true)));
    assert_eq!(eval("cast(dt as string)"), Ok(Value::Str("2024-01-15".into())));
    assert_eq!(bound("cast(dt as string)").name, "dt");
    assert_eq!(eval("cast(dt as timestamp)"), Ok(Value::Timestamp(Timestamp(T_2024_01_15_10 - 36_000_000_000))));
    assert_eq!(eval("cast(t as date)"), Ok(Value::Date(D_2024_01_15)));
    assert_eq!(eval("cast('2024-01-15T10:00' as date)"), Ok(Value::Date(D_2024_01_15)));
    assert_eq!(eval("cast(' 2024-1-5 ' as date)"), Ok(Value::Date(D_2024_01_15 - 10)));
    assert_eq!(eval("cast('2024' as date)"), Ok(Value::Date(D_2024_01_15 - 14)));
    for (f, v) in [("year", 2024), ("month", 1), ("day", 15), ("dayofweek", 2), ("hour", 0)] {
        assert_eq!(eval(&format!("{f}(dt)")), Ok(Value::Int(v)), "{f}");
    }
    assert_eq!(text("date_format(dt, 'yyyy-MM-dd HH:mm')"), "2024-01-15 00:00");
    let e = eval("cast('x' as date)").err().map(|e| e.to_string());
    assert_eq!(e.as_deref(), Some(r#"CAST_INVALID_INPUT in "CAST(x AS DATE)""#));
    // `DATE + n` is Spark's date_add (and named so)
    assert_eq!(eval("dt + 1"), Ok(Value::Date(D_2024_01_15 + 1)));
    // Spark refuses these: unix_seconds takes a TIMESTAMP, a DATE is no number
    for bad in ["unix_seconds(dt)", "dt * 2", "cast(dt as int)", "cast(a as date)"] {
        assert!(bind_expression(bad, &schema()).is_err(), "{bad}");
    }
}

#[test]
fn to_date_and_to_timestamp_parse_as_spark() {
    let ts = |us: i64| Ok(Value::Timestamp(Timestamp(us)));
    assert_eq!(eval("to_date('2024-01-15')"), Ok(Value::Date(D_2024_01_15)));
    assert_eq!(bound("to_date('2024-01-15')").name, "to_date(2024-01-15)");
    assert_eq!(eval("to_date('2024/01/15', 'yyyy/MM/dd')"), Ok(Value::Date(D_2024_01_15)));
    assert_eq!(bound("to_date('2024/01/15', 'yyyy/MM/dd')").name, "to_date(2024/01/15, yyyy/MM/dd)");
    assert_eq!(eval("to_date(t)"), Ok(Value::Date(D_2024_01_15)));
    assert_eq!(eval("to_timestamp('2024-01-15 10:00:00')"), ts(T_2024_01_15_10));
    assert_eq!(eval("to_timestamp('2024/01/15 10:30', 'yyyy/MM/dd HH:mm')"), ts(T_2024_01_15_10 + 1_800_000_000));
    assert_eq!(eval("to_timestamp('10:30', 'HH:mm')"), ts(37_800_000_000));
    assert_eq!(
        eval("to_timestamp('2024-01-15 10:00:00.123', 'yyyy-MM-dd HH:mm:ss.SSS')"),
        ts(T_2024_01_15_10 + 123_000)
    );
    assert_eq!(eval("try_to_timestamp('x')"), Ok(Value::Null));
    assert_eq!(eval("try_to_timestamp('2024-01-15 10:00', 'yyyy-MM-dd HH:mm:ss')"), Ok(Value::Null));
    let e = eval("to_timestamp('x')").err().map(|e| e.to_string());
    assert_eq!(e.as_deref(), Some(r#"CAST_INVALID_INPUT in "to_timestamp(x)""#));
    let e = eval("to_timestamp('2024-01-15 10:00', 'yyyy-MM-dd HH:mm:ss')").err().map(|e| e.to_string());
    assert_eq!(
        e.as_deref(),
        Some(r#"CANNOT_PARSE_TIMESTAMP in "to_timestamp(2024-01-15 10:00, yyyy-MM-dd HH:mm:ss)""#)
    );
}

#[test]
fn hash_is_sparks_murmur3_hash() {
    // Spark 4.3: hash(a, b) for a = 1, b = 'x' is -1305545736, named `hash(a, b)`
    assert_eq!(eval("hash(a, b)"), Ok(Value::Int(-1_305_545_736)));
    assert_eq!(bound("hash(a, b)").name, "hash(a, b)");
}

#[test]
fn current_timestamp_reads_the_processing_time_each_evaluation_and_is_named_as_spark_names_it() {
    // Spark 4.3 names `now()` as `now()` and `current_timestamp()`, `current_timestamp` and
    // `CURRENT_TIMESTAMP()` as `current_timestamp()`, all of type TIMESTAMP
    for (text, name) in [
        ("now()", "now()"),
        ("current_timestamp()", "current_timestamp()"),
        ("current_timestamp", "current_timestamp()"),
        ("CURRENT_TIMESTAMP()", "current_timestamp()"),
    ] {
        let b = bound(text);
        assert_eq!((b.name.as_str(), b.typed.data_type), (name, DataType::Timestamp), "{text}");
        assert!(b.typed.reads_processing_time(), "{text}");
    }
    assert!(!bound("t + INTERVAL 1 HOUR").typed.reads_processing_time());
    // compiled once, evaluated at two processing times: never folded into a constant
    let age = Compiled::new(&bound("unix_seconds(current_timestamp()) - unix_seconds(t)").typed);
    let ten = Compiled::new(&bound("date_trunc('HOUR', now() + INTERVAL 1 HOUR)").typed);
    eddy_engine::expr::set_processing_time(Timestamp(T_2024_01_15_10 + 60_000_000));
    assert_eq!(age.eval(&row()), Ok(Value::Long(60)));
    assert_eq!(ten.eval(&row()), Ok(Value::Timestamp(Timestamp(T_2024_01_15_10 + 3_600_000_000))));
    eddy_engine::expr::set_processing_time(Timestamp(T_2024_01_15_10 + 3_600_000_000));
    assert_eq!(age.eval(&row()), Ok(Value::Long(3_600)));
    assert_eq!(ten.eval(&row()), Ok(Value::Timestamp(Timestamp(T_2024_01_15_10 + 7_200_000_000))));
    // arguments are refused as Spark refuses them
    assert!(bind_expression("current_timestamp(1)", &schema()).is_err());
}

#[test]
fn a_string_result_over_16_mib_fails_the_record_before_it_is_built() {
    let too_long = |text: &str| match eval(text) {
        Err(ExprError::Eval { kind, .. }) => assert_eq!(kind, EvalErrorKind::StringTooLong, "{text}"),
        other => panic!("{text}: {other:?}"),
    };
    // Each of these would need gigabytes (or far more) if built.
    too_long("lpad(b, 2147483647, 'ab')");
    too_long("rpad(b, 2147483647, '€')");
    too_long("replace(lpad(b, 16000000, 'x'), 'x', lpad('', 1000, 'y'))");
    too_long(&format!("regexp_replace(lpad(b, 16000000, 'x'), 'x', '{}')", "y".repeat(1000)));
    // at the limit and below it, built as Spark builds it
    let limit = 16 * 1024 * 1024;
    match eval(&format!("lpad(b, {limit}, 'y')")) {
        Ok(Value::Str(s)) => assert!(s.len() == limit && s.ends_with("yx"), "{}", s.len()),
        other => panic!("{other:?}"),
    }
    too_long(&format!("lpad(b, {}, 'y')", limit + 1));
    // what a replacement takes away counts: 'a' -> 'b' keeps 9,000,000 bytes, and 'a' -> 'bb'
    // over 8,388,608 gives exactly the limit
    let replaced = |text: &str| match eval(text) {
        Ok(Value::Str(s)) => s.len(),
        other => panic!("{text}: {other:?}"),
    };
    assert_eq!(replaced("regexp_replace(rpad('', 9000000, 'a'), 'a', 'b')"), 9_000_000);
    assert_eq!(replaced("regexp_replace(rpad('', 8388608, 'a'), 'a', 'bb')"), limit);
    too_long("regexp_replace(rpad('', 8388609, 'a'), 'a', 'bb')");
    assert_eq!(replaced("replace(rpad('', 8388608, 'a'), 'a', 'bb')"), limit);
    // concatenations too
    too_long("concat(lpad(b, 16777216, 'a'), b)");
    too_long("lpad(b, 16777216, 'a') || b");
    too_long("concat_ws(',', lpad(b, 8388608, 'a'), lpad(b, 8388608, 'a'))");
    assert_eq!(replaced("concat_ws(',', lpad(b, 8388607, 'a'), lpad(b, 8388608, 'a'))"), limit);
    assert_eq!(text("rpad(b, 4, 'ab')"), "xaba");
    assert_eq!(text("replace('aXa', 'a', 'bb')"), "bbXbb");
    assert_eq!(text("regexp_replace('aXa', 'a', 'bb')"), "bbXbb");
}

#[test]
fn years_past_9999_are_written_with_a_plus_as_spark_writes_them() {
    // Spark 4.3 (the oracle's pyspark): CAST to STRING, to_json and the JSON writer all give
    // `+10000-01-01...`; the year before keeps its four digits
    assert_eq!(text("CAST(timestamp_seconds(253402300800) AS STRING)"), "+10000-01-01 00:00:00");
    assert_eq!(text("CAST(timestamp_seconds(253402300799) AS STRING)"), "9999-12-31 23:59:59");
    assert_eq!(text("CAST(CAST(timestamp_seconds(253402300800) AS DATE) AS STRING)"), "+10000-01-01");
    assert_eq!(
        text(
            "to_json(named_struct('t', timestamp_seconds(253402300800), 'd', CAST(timestamp_seconds(253402300800) AS DATE)))"
        ),
        r#"{"t":"+10000-01-01T00:00:00.000Z","d":"+10000-01-01"}"#
    );
    assert_eq!(text("date_format(timestamp_seconds(253402300800), 'yyyy-MM-dd')"), "+10000-01-01");
    // the output writer (SEMANTICS.md "Output timestamps"), as Spark's JSON writer
    assert_eq!(Timestamp(253_402_300_800_000_000).to_string(), "+10000-01-01T00:00:00Z");
    assert_eq!(Timestamp(253_402_300_799_000_000).to_string(), "9999-12-31T23:59:59Z");
}
