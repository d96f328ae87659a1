//! Unit tests of the JSON rules (module docs of `decode`), one behaviour per test.

use super::*;
use crate::time::Timestamp;
use crate::value::Text;

/// 2024-01-15T10:01:00Z in seconds since the epoch (computed independently).
const T_2024_01_15_10_01: i64 = 1_705_312_860;

fn cfg(ddl: &str, needed: &[&str], required: &[&str]) -> DecoderConfig {
    let schema = Schema::parse_ddl(ddl).unwrap();
    let needed = schema.fields().iter().map(|f| needed.contains(&f.name.as_str())).collect();
    let required = required.iter().map(|n| schema.index_of(n).unwrap()).collect();
    DecoderConfig { schema, needed, required, timestamp_unit: TimeUnit::Ms }
}

fn all(ddl: &str) -> JsonDecoder {
    JsonDecoder::new(DecoderConfig::all_columns(Schema::parse_ddl(ddl).unwrap()))
}

fn one(ty: &str, json_value: &str) -> Result<Value, DecodeError> {
    let d = all(&format!("c {ty}"));
    d.decode(format!("{{\"c\": {json_value}}}").as_bytes()).map(|r| r.values[0].clone())
}

fn s(v: &str) -> Value {
    Value::Str(Text::from(v))
}

#[test]
fn decodes_only_the_needed_columns() {
    let d = JsonDecoder::new(cfg(
        "user_id STRING, revenue DOUBLE, event_time TIMESTAMP, country STRING, ok BOOLEAN",
        &["user_id", "revenue", "event_time"],
        &[],
    ));
    let line = br#"{"user_id":"u12345","revenue":12.5,"event_time":"2024-01-15T10:01:00Z","country":"fr","ok":true}"#;
    let r = d.decode(line).unwrap();
    assert_eq!(
        r.values.to_vec(),
        vec![
            s("u12345"),
            Value::Double(12.5),
            Value::Timestamp(Timestamp(T_2024_01_15_10_01 * 1_000_000)),
            Value::Null,
            Value::Null
        ]
    );
}

#[test]
fn missing_columns_are_null_and_extra_fields_ignored() {
    let d = all("a BIGINT, b STRING");
    let r = d.decode(br#"{"zz": [1, {"q": "x"}], "b": "hi", "other": null}"#).unwrap();
    assert_eq!(r.values.to_vec(), vec![Value::Null, s("hi")]);
    assert_eq!(d.decode(b"{}").unwrap().values.to_vec(), vec![Value::Null, Value::Null]);
}

#[test]
fn whitespace_and_line_endings_are_allowed() {
    let d = all("a BIGINT, b STRING");
    let r = d.decode(b" \t{ \"a\" : 1 ,\r\n \"b\" :\"x\" } \r\n").unwrap();
    assert_eq!(r.values.to_vec(), vec![Value::Long(1), s("x")]);
}

#[test]
fn lines_that_are_not_json_are_rejected() {
    let d = all("a BIGINT, b STRING");
    let not_json = [
        "",
        "   ",
        "{",
        "{\"a\":}",
        "{\"a\" 1}",
        "{\"a\":1,}",
        "{,}",
        "{\"a\":1} x",
        "{\"a\":1}}",
        "{'a':1}",
        "{a:1}",
        "{\"a\":01}",
        "{\"a\":1.}",
        "{\"a\":-}",
        "{\"a\":1e}",
        "{\"a\":+1}",
        "{\"a\":.5}",
        "{\"b\":tru}",
        "{\"b\":\"\\x\"}",
        "{\"b\":\"abc}",
        "{\"b\":\"a\tb\"}",
        "{\"b\":\"\\u12\"}",
        "{\"zz\":[1,]}",
        "{\"zz\":[1 2]}",
        "{\"zz\":{\"k\" 1}}",
        "{\"zz\":{\"k\":1,}}",
        "{\"zz\":{1:2}}",
        "{\"zz\":[}",
        "{\"zz\":nul}",
        "{\"a\":1 \"b\":\"x\"}",
    ];
    for line in not_json {
        assert!(
            matches!(d.decode(line.as_bytes()), Err(DecodeError::NotJson { .. })),
            "{line:?}: {:?}",
            d.decode(line.as_bytes())
        );
    }
    for line in ["[1]", "\"s\"", "12", "null", "hello"] {
        assert!(matches!(d.decode(line.as_bytes()), Err(DecodeError::NotObject { .. })), "{line:?}");
    }
}

/// Spark's JSON reader takes Jackson's non-numeric numbers by default (`allowNonNumericNumbers`;
/// checked with Spark 4.3): these six spellings only, as doubles and floats, as their text for a
/// STRING column; another type refuses them, and other spellings are not JSON.
#[test]
fn nan_and_infinity_literals_are_read_as_spark_reads_them() {
    for (lit, x) in [
        ("NaN", f64::NAN),
        ("Infinity", f64::INFINITY),
        ("+Infinity", f64::INFINITY),
        ("-Infinity", f64::NEG_INFINITY),
        ("+INF", f64::INFINITY),
        ("-INF", f64::NEG_INFINITY),
    ] {
        match one("DOUBLE", lit) {
            Ok(Value::Double(got)) => assert!(got.to_bits() == x.to_bits() || (got.is_nan() && x.is_nan()), "{lit}"),
            other => panic!("{lit}: {other:?}"),
        }
        assert!(matches!(one("FLOAT", lit), Ok(Value::Float(_))), "{lit}");
        assert_eq!(one("STRING", lit), Ok(Value::Str(lit.into())), "{lit}");
        assert!(matches!(one("BIGINT", lit), Err(DecodeError::WrongType { .. })), "{lit}: {:?}", one("BIGINT", lit));
    }
    for lit in ["INF", "nan", "-NaN", "+NaN", "infinity", "NaNx"] {
        assert!(matches!(one("DOUBLE", lit), Err(DecodeError::NotJson { .. })), "{lit}");
    }
}

/// The fast path takes the non-numeric tokens as the full parser reads them, in a needed
/// column of each type and in a column not decoded, top level and nested (the decoder's fuzz
/// target found `{"u":-INF}` with `u` a STRING column declined by the fast path alone).
#[test]
fn the_fast_path_reads_non_numeric_tokens_as_the_full_parser_does() {
    for lit in ["NaN", "Infinity", "+Infinity", "-Infinity", "+INF", "-INF"] {
        for ty in ["DOUBLE", "FLOAT", "STRING", "BIGINT"] {
            let d = JsonDecoder::new(cfg(&format!("u {ty}, v BIGINT, w STRING"), &["u", "w"], &[]));
            for line in [
                format!("{{\"u\":{lit},\"v\":{lit},\"w\":\"x\"}}"),
                format!("{{\"u\": {lit} , \"v\": [{lit}, {{\"a\": {lit}}}], \"w\": null}}"),
            ] {
                let (fast, full) = (d.fast_path(line.as_bytes()), d.full_parser(line.as_bytes()));
                assert_eq!(fast.is_some(), full.is_ok(), "{ty} {line}: fast {fast:?}, full {full:?}");
                if let (Some(a), Ok(b)) = (&fast, &full) {
                    assert_eq!(format!("{a:?}"), format!("{b:?}"), "{ty} {line}");
                }
            }
        }
    }
}

#[test]
fn invalid_utf8_is_rejected_with_its_offset() {
    let d = all("b STRING");
    assert_eq!(d.decode(b"{\"b\":\"\xff\"}"), Err(DecodeError::NotUtf8 { offset: 6 }));
    assert_eq!(d.decode(b"{\"b\":\"\xc3\"}"), Err(DecodeError::NotUtf8 { offset: 6 }));
    assert_eq!(d.decode("{\"b\":\"é😀\"}".as_bytes()).unwrap().values[0], s("é😀"));
    // Anywhere in the line: a key, a value not needed, a field not in the schema.
    let d = JsonDecoder::new(cfg("a STRING, b STRING", &["a"], &[]));
    assert_eq!(d.decode(b"{\"a\":\"x\",\"b\":\"long enough \xff\"}"), Err(DecodeError::NotUtf8 { offset: 26 }));
    assert_eq!(d.decode(b"{\"a\":\"x\",\"z\xc3\":1}"), Err(DecodeError::NotUtf8 { offset: 11 }));
    assert_eq!(d.decode(b"{\"a\":\"x\",\"z\":\"\xed\xa0\x80\"}"), Err(DecodeError::NotUtf8 { offset: 14 }));
    assert_eq!(d.decode("{\"a\":\"x\",\"zé\":\"€ é\"}".as_bytes()).unwrap().values[0], s("x"));
}

#[test]
fn bigint_takes_only_integers_in_range() {
    assert_eq!(one("BIGINT", "9223372036854775807"), Ok(Value::Long(i64::MAX)));
    assert_eq!(one("BIGINT", "-9223372036854775808"), Ok(Value::Long(i64::MIN)));
    assert_eq!(one("BIGINT", "-0"), Ok(Value::Long(0)));
    for v in ["12.5", "12.0", "1e3", "1E+2", "\"12\"", "true", "[1]", "{}"] {
        assert!(matches!(one("BIGINT", v), Err(DecodeError::WrongType { .. })), "{v}");
    }
    for v in ["9223372036854775808", "-9223372036854775809", "123456789012345678901234567890"] {
        assert!(matches!(one("BIGINT", v), Err(DecodeError::OutOfRange { .. })), "{v}");
    }
}

#[test]
fn int_overflow_is_malformed() {
    assert_eq!(one("INT", "2147483647"), Ok(Value::Int(i32::MAX)));
    assert_eq!(one("INT", "-2147483648"), Ok(Value::Int(i32::MIN)));
    for v in ["2147483648", "-2147483649", "9223372036854775808"] {
        assert!(matches!(one("INT", v), Err(DecodeError::OutOfRange { .. })), "{v}");
    }
    assert!(matches!(one("INT", "1.5"), Err(DecodeError::WrongType { .. })));
}

#[test]
fn double_takes_any_number_and_sparks_non_finite_strings() {
    assert_eq!(one("DOUBLE", "12"), Ok(Value::Double(12.0)));
    assert_eq!(one("DOUBLE", "-1.5e3"), Ok(Value::Double(-1500.0)));
    assert_eq!(one("DOUBLE", "0.1"), Ok(Value::Double(0.1)));
    assert_eq!(one("DOUBLE", "1e400"), Ok(Value::Double(f64::INFINITY)));
    // Found by the proptest: an integer beyond i64 is still a double.
    assert_eq!(one("DOUBLE", "9223372036854775808"), Ok(Value::Double(9_223_372_036_854_775_808.0)));
    assert_eq!(one("FLOAT", "-99999999999999999999"), Ok(Value::Float(-1e20)));
    assert!(matches!(one("DOUBLE", "\"NaN\""), Ok(Value::Double(v)) if v.is_nan()));
    for v in ["\"Infinity\"", "\"+Infinity\"", "\"+INF\""] {
        assert_eq!(one("DOUBLE", v), Ok(Value::Double(f64::INFINITY)), "{v}");
    }
    for v in ["\"-Infinity\"", "\"-INF\""] {
        assert_eq!(one("DOUBLE", v), Ok(Value::Double(f64::NEG_INFINITY)), "{v}");
    }
    for v in ["\"nan\"", "\"1.5\"", "\"\"", "true", "[1.0]"] {
        assert!(matches!(one("DOUBLE", v), Err(DecodeError::WrongType { .. })), "{v}");
    }
}

#[test]
fn float_is_the_double_narrowed() {
    assert_eq!(one("FLOAT", "0.1"), Ok(Value::Float(0.1f64 as f32)));
    assert_eq!(one("FLOAT", "7"), Ok(Value::Float(7.0)));
    assert_eq!(one("FLOAT", "\"-INF\""), Ok(Value::Float(f32::NEG_INFINITY)));
    assert!(matches!(one("FLOAT", "\"x\""), Err(DecodeError::WrongType { .. })));
}

#[test]
fn boolean_takes_only_true_and_false() {
    assert_eq!(one("BOOLEAN", "true"), Ok(Value::Bool(true)));
    assert_eq!(one("BOOLEAN", "false"), Ok(Value::Bool(false)));
    for v in ["\"true\"", "1", "0", "\"false\"", "{}"] {
        assert!(matches!(one("BOOLEAN", v), Err(DecodeError::WrongType { .. })), "{v}");
    }
}

#[test]
fn string_takes_any_other_json_value_as_its_text() {
    assert_eq!(one("STRING", "12"), Ok(s("12")));
    assert_eq!(one("STRING", "-0"), Ok(s("-0")));
    assert_eq!(one("STRING", "-0.0e0"), Ok(s("-0.0e0")));
    assert_eq!(one("STRING", "1.50"), Ok(s("1.50")));
    assert_eq!(one("STRING", "123456789012345678901234567890"), Ok(s("123456789012345678901234567890")));
    assert_eq!(one("STRING", "true"), Ok(s("true")));
    assert_eq!(one("STRING", "false"), Ok(s("false")));
    assert_eq!(one("STRING", "null"), Ok(Value::Null));
    // a nested value: its JSON text as written, as Spark 4.3 gives it (the oracle's output in
    // tests/cases-sql/json-nested-into-string); the value must still be well-formed JSON
    for v in ["{\"a\":1}", "[\"x\"]", "[]", "{ \"a\" : [ 1 , {} ] }", r#"["\u00e9\/"]"#] {
        assert_eq!(one("STRING", v), Ok(s(v)), "{v}");
    }
    for v in ["{\"a\":}", "[1,]", "{\"a\" 1}", "[\"x\"", "{1:2}"] {
        assert!(one("STRING", v).is_err(), "{v}");
    }
    // any other type still refuses one
    assert!(matches!(one("BIGINT", "{\"a\":1}"), Err(DecodeError::WrongType { .. })));
}

#[test]
fn escapes_are_unescaped_and_checked() {
    assert_eq!(one("STRING", r#""a\"b\\c\/d\b\f\n\r\te""#), Ok(s("a\"b\\c/d\u{8}\u{c}\n\r\te")));
    assert_eq!(one("STRING", r#""\u00e9\u20AC\ud83d\ude00""#), Ok(s("é€😀")));
    assert_eq!(one("STRING", r#""\u0000""#), Ok(s("\0")));
    for v in [r#""\ud83d""#, r#""\ude00""#, r#""\ud83dx""#, r#""\ud83d\u0041""#, r#""\u00g0""#, r#""\a""#] {
        assert!(matches!(one("STRING", v), Err(DecodeError::NotJson { .. })), "{v}");
    }
}

#[test]
fn huge_strings_are_just_strings() {
    let big = "x".repeat(1 << 20);
    assert_eq!(one("STRING", &format!("\"{big}\"")), Ok(s(&big)));
    let d = all("a BIGINT");
    let r = d.decode(format!("{{\"skip\": \"{big}\", \"a\": 5}}").as_bytes()).unwrap();
    assert_eq!(r.values[0], Value::Long(5));
}

#[test]
fn escaped_keys_match_their_column() {
    let d = all("user BIGINT");
    assert_eq!(d.decode(br#"{"us\u0065r": 3}"#).unwrap().values[0], Value::Long(3));
    let d = all("`a\"b` BIGINT");
    assert_eq!(d.decode(br#"{"a\"b": 4}"#).unwrap().values[0], Value::Long(4));
}

#[test]
fn timestamps_from_strings_and_numbers_in_the_configured_unit() {
    let us = T_2024_01_15_10_01 * 1_000_000;
    let ts = |v: &str, unit: TimeUnit| {
        let mut c = DecoderConfig::all_columns(Schema::parse_ddl("t TIMESTAMP").unwrap());
        c.timestamp_unit = unit;
        JsonDecoder::new(c).decode(format!("{{\"t\": {v}}}").as_bytes()).map(|r| r.values[0].clone())
    };
    let at = |us: i64| Ok(Value::Timestamp(Timestamp(us)));
    assert_eq!(ts("\"2024-01-15T10:01:00Z\"", TimeUnit::Ms), at(us));
    assert_eq!(ts("\"2024-01-15 10:01:00.25\"", TimeUnit::Ms), at(us + 250_000));
    assert_eq!(ts("\"2024-01-15T11:01:00+01:00\"", TimeUnit::Ms), at(us));
    assert_eq!(ts(&format!("{}", T_2024_01_15_10_01 * 1000), TimeUnit::Ms), at(us));
    assert_eq!(ts(&format!("{}", T_2024_01_15_10_01), TimeUnit::S), at(us));
    assert_eq!(ts(&format!("{us}"), TimeUnit::Us), at(us));
    assert_eq!(ts("1.5", TimeUnit::S), at(1_500_000));
    assert_eq!(ts("-2", TimeUnit::Ms), at(-2_000));
    assert_eq!(ts("1e3", TimeUnit::Ms), at(1_000_000));
    for v in ["9223372036854775807", "1e300", "99999999999999999999"] {
        assert!(matches!(ts(v, TimeUnit::Ms), Err(DecodeError::OutOfRange { .. })), "{v}");
    }
    for v in ["\"yesterday\"", "\"2024-02-30T00:00:00Z\"", "\"\"", "\"1705312860000\""] {
        assert!(matches!(ts(v, TimeUnit::Ms), Err(DecodeError::BadTimestamp { .. })), "{v}");
    }
    assert!(matches!(ts("true", TimeUnit::Ms), Err(DecodeError::WrongType { .. })));
}

#[test]
fn duplicate_keys_last_wins() {
    let d = all("a BIGINT, ts TIMESTAMP");
    assert_eq!(d.decode(br#"{"a": 1, "a": 2}"#).unwrap().values[0], Value::Long(2));
    assert_eq!(d.decode(br#"{"a": 1, "a": null}"#).unwrap().values[0], Value::Null);
    // Every occurrence must still be well typed.
    assert!(matches!(d.decode(br#"{"a": "x", "a": 2}"#), Err(DecodeError::WrongType { .. })));
    let req = JsonDecoder::new(cfg("a BIGINT, ts TIMESTAMP", &["a", "ts"], &["ts"]));
    let err = req.decode(br#"{"ts": "2024-01-15T10:01:00Z", "ts": null}"#).unwrap_err();
    assert_eq!(err.to_string(), "null event time column ts");
}

#[test]
fn required_column_null_or_missing_is_malformed() {
    let d = JsonDecoder::new(cfg("a BIGINT, ts TIMESTAMP", &["a", "ts"], &["ts"]));
    for line in [r#"{"a": 1}"#, r#"{"a": 1, "ts": null}"#, "{}"] {
        let err = d.decode(line.as_bytes()).unwrap_err();
        assert_eq!(err, DecodeError::NullRequired { column: "ts".into() });
        assert_eq!(err.to_string(), "null event time column ts");
    }
    assert!(d.decode(br#"{"ts": 0}"#).is_ok());
}

#[test]
fn required_column_is_decoded_even_when_not_needed() {
    let d = JsonDecoder::new(cfg("a BIGINT, ts TIMESTAMP", &["a"], &["ts"]));
    let r = d.decode(br#"{"a": 1, "ts": 5}"#).unwrap();
    assert_eq!(r.values.to_vec(), vec![Value::Long(1), Value::Timestamp(Timestamp(5_000))]);
}

#[test]
fn unneeded_values_are_skipped_even_when_nested_or_ill_typed() {
    let d = JsonDecoder::new(cfg("a BIGINT, b BIGINT", &["a"], &[]));
    let r = d.decode(br#"{"b": {"x": [1, 2.5e-3, {"y": [[]]}, "s\"}", true, false, null], "z": {}}, "a": 7}"#).unwrap();
    assert_eq!(r.values.to_vec(), vec![Value::Long(7), Value::Null]);
    // b is BIGINT but not needed: its string is not checked against the type.
    assert!(d.decode(br#"{"b": "not a number", "a": 1}"#).is_ok());
}

#[test]
fn deep_nesting_is_refused_without_overflowing_the_stack() {
    let d = JsonDecoder::new(cfg("a BIGINT, b BIGINT", &["a"], &[]));
    for n in [MAX_DEPTH, 100_000] {
        let line = format!("{{\"b\": {}{}}}", "[".repeat(n), "]".repeat(n));
        assert!(matches!(d.decode(line.as_bytes()), Err(DecodeError::TooDeep { limit: MAX_DEPTH, .. })), "{n}");
    }
    // MAX_DEPTH levels in all, the top-level object included, are fine.
    let n = MAX_DEPTH - 1;
    let line = format!("{{\"b\": {}{}}}", "[".repeat(n), "]".repeat(n));
    assert!(d.decode(line.as_bytes()).is_ok());
    let line = format!("{{\"b\": {}1{}}}", "{\"k\":".repeat(n), "}".repeat(n));
    assert!(d.decode(line.as_bytes()).is_ok());
}

#[test]
fn nested_values_for_needed_columns_are_wrong_type() {
    // (a STRING column takes one as its text: string_takes_any_other_json_value_as_its_text)
    for ty in ["BIGINT", "INT", "DOUBLE", "FLOAT", "BOOLEAN", "TIMESTAMP"] {
        for v in ["{}", "[1]"] {
            assert!(matches!(one(ty, v), Err(DecodeError::WrongType { .. })), "{ty} {v}");
        }
    }
    // the error quotes the value as written, not the rest of the line after it
    let d = all("ts TIMESTAMP, v INT");
    for (line, given) in [
        (r#"{"ts": {"a":1}, "v": 1}"#, r#"{"a":1}"#),
        (r#"{"ts": [1, {"x": [2]}] , "v": 1}"#, r#"[1, {"x": [2]}]"#),
        (r#"{"ts": {"a":1, "v": 1}"#, r#"{"a":1, "v": 1}"#),
    ] {
        match d.decode(line.as_bytes()) {
            Err(DecodeError::WrongType { given: g, .. }) => assert_eq!(g, given, "{line}"),
            other => panic!("{line}: {other:?}"),
        }
    }
}

#[test]
fn wide_schemas_find_every_column() {
    let ddl: Vec<String> = (0..40).map(|i| format!("c{i} BIGINT")).collect();
    let d = all(&ddl.join(", "));
    // Keys in reverse order, plus unknown ones.
    let fields: Vec<String> = (0..40).rev().map(|i| format!("\"c{i}\": {i}, \"x{i}\": 0")).collect();
    let r = d.decode(format!("{{{}}}", fields.join(", ")).as_bytes()).unwrap();
    let want: Vec<Value> = (0..40).map(Value::Long).collect();
    assert_eq!(r.values.to_vec(), want);
}

#[test]
fn errors_name_the_column_the_value_and_the_type() {
    let e = one("BIGINT", "12.5").unwrap_err().to_string();
    assert!(e.contains("column c") && e.contains("12.5") && e.contains("BIGINT"), "{e}");
    let e = one("INT", "99999999999").unwrap_err().to_string();
    assert!(e.contains("column c") && e.contains("99999999999") && e.contains("INT"), "{e}");
    let e = one("TIMESTAMP", "\"soon\"").unwrap_err().to_string();
    assert!(e.contains("column c") && e.contains("soon"), "{e}");
    let long = format!("\"{}\"", "y".repeat(500));
    let e = one("BIGINT", &long).unwrap_err();
    let DecodeError::WrongType { given, .. } = &e else { panic!("{e:?}") };
    assert!(given.len() <= MAX_QUOTED + 3 && given.ends_with("..."), "{given}");
}

#[test]
fn decoder_enum_dispatches_by_format() {
    let c = DecoderConfig::all_columns(Schema::parse_ddl("a BIGINT").unwrap());
    let j = Decoder::Json(JsonDecoder::new(c.clone()));
    assert_eq!(j.format(), Format::Json);
    assert_eq!(j.decode(br#"{"a": 1}"#).unwrap().values[0], Value::Long(1));
    let c2 = Decoder::Csv(CsvDecoder::new(c, b"a").unwrap());
    assert_eq!(c2.format(), Format::Csv);
    assert_eq!(c2.decode(b"2").unwrap().values[0], Value::Long(2));
}

/// Spark 4.3's JSON reader with `a DECIMAL(10,2)` (checked with the oracle's pyspark): numbers
/// and number strings exactly, HALF_UP to the scale; too many digits (also after rounding), a
/// padded string, a boolean or a word make the record malformed.
#[test]
fn decimal_columns_decode_exactly_and_round_half_up_as_spark() {
    let dec = |unscaled: i128| Value::Decimal(crate::decimal::Decimal::new(unscaled, 2));
    let ty = "DECIMAL(10, 2)";
    let ok = |json: &str| one(ty, json).unwrap_or_else(|e| panic!("{json}: {e}"));
    assert_eq!(ok("0.1"), dec(10));
    assert_eq!(ok("1.005"), dec(101));
    assert_eq!(ok("1.015"), dec(102));
    assert_eq!(ok("-1.005"), dec(-101));
    assert_eq!(ok("\"2.345\""), dec(235));
    assert_eq!(ok("1e2"), dec(10000));
    assert_eq!(ok("\"1e2\""), dec(10000));
    assert_eq!(ok("1.5e-3"), dec(0));
    assert_eq!(ok("12"), dec(1200));
    assert_eq!(ok("null"), Value::Null);
    assert_eq!(ok("99999999.99"), dec(9_999_999_999));
    for bad in ["123456789.99", "1234567890.1", "999999999.995", "\"abc\"", "true", "\" 1.5 \""] {
        assert!(one(ty, bad).is_err(), "{bad} must make the record malformed");
    }
    // exact past the 17 significant digits of a double
    let wide = one("DECIMAL(38, 18)", "12345678901234567890.123456789012345678");
    let Ok(Value::Decimal(w)) = wide else { panic!("{wide:?}") };
    assert_eq!((w.unscaled, w.scale), (12345678901234567890123456789012345678, 18));
}

#[test]
fn dates_are_read_from_strings_as_spark_reads_them() {
    // 2024-01-15 is day 19737 since 1970-01-01; Spark's reader falls back to CAST(s AS DATE)
    assert_eq!(one("DATE", "\"2024-01-15\""), Ok(Value::Date(19_737)));
    assert_eq!(one("DATE", "\"2024-1-5\""), Ok(Value::Date(19_727)));
    assert_eq!(one("DATE", "\"1969-12-31\""), Ok(Value::Date(-1)));
    assert_eq!(one("DATE", "null"), Ok(Value::Null));
    for bad in ["\"2024-02-30\"", "\"yesterday\"", "20240115", "true"] {
        assert!(matches!(one("DATE", bad), Err(DecodeError::WrongType { .. })), "{bad}: {:?}", one("DATE", bad));
    }
}

/// The layout path (`json_layout`), for lines whose layout it learned: the same records as
/// `decode`, a key given twice included (the last occurrence wins, a `null` too: found by the
/// fuzz target, where the layout path had left the first value in place).
#[test]
fn the_layout_path_reads_lines_as_decode_does() {
    let mut d = all("u STRING, l BIGINT, t TIMESTAMP");
    let mut record = Record::default();
    let lines: [&[u8]; 6] = [
        br#"{"u": "a", "l": 1, "t": "2024-01-15 10:01:00", "u": null}"#,
        br#"{"u": "b", "l": 22, "t": "2024-01-15 10:01:00.5", "u": null}"#,
        br#"{"u": null, "l": 3, "t": "2024-01-15T10:01:00Z", "u": "c"}"#,
        br#"{"u": null, "l": 4, "t": "2024-01-15T10:01:00Z", "u": "d"}"#,
        br#"{"u": null, "l": 4.5, "t": "2024-01-15T10:01:00Z", "u": "d"}"#,
        br#"{"u": null, "l": 4, "t": "2024-01-15T10:01:00Z", "u": "e"}"#,
    ];
    let mut hits = Vec::new();
    for line in lines {
        let fresh = d.decode(line);
        match d.decode_into(line, &mut record) {
            Ok(()) => assert_eq!(Ok(&record), fresh.as_ref(), "{}", String::from_utf8_lossy(line)),
            Err(e) => assert_eq!(Err(e), fresh),
        }
        hits.push(d.layout_hits());
    }
    assert_eq!(record.values[0], s("e"));
    assert_eq!(record.values[1], Value::Long(4));
    assert_eq!(record.values[2], Value::Timestamp(Timestamp(T_2024_01_15_10_01 * 1_000_000)));
    // Lines read by the layout path so far: line 1 is learned, line 2 takes its layout; line 3
    // differs and is learned beside it; line 4 takes line 3's; line 5 (a fraction for BIGINT)
    // is refused; line 6 takes line 3's again.
    assert_eq!(hits, [0, 1, 1, 2, 2, 3]);
    // Two layouts in turn are both read on the layout path.
    let mut d = all("u STRING, l BIGINT, t TIMESTAMP");
    for k in 0..10 {
        let line = if k % 2 == 0 {
            format!(r#"{{"u": "a{k}", "l": {k}, "t": "2024-01-15 10:01:00"}}"#)
        } else {
            format!(r#"{{"l": {k}, "u": "a{k}", "t": "2024-01-15 10:01:00"}}"#)
        };
        d.decode_into(line.as_bytes(), &mut record).unwrap();
        assert_eq!(Ok(&record), d.decode(line.as_bytes()).as_ref());
    }
    assert_eq!(d.layout_hits(), 8);
}

/// Keys whose runs of bytes between two values pass 16 bytes are compared in pieces of 16 (the
/// layout path's steps of no value): the line is read by the layout path the second time, a
/// line that differs in any piece is not, and each gives what `decode` gives.
#[test]
fn long_keys_take_the_layout_path_in_pieces() {
    let mut d = all("a_rather_long_column_name BIGINT, another_long_col_ts TIMESTAMP");
    let mut record = Record::default();
    let line = br#"{"a_rather_long_column_name": 12, "another_long_col_ts": "2024-01-15T10:01:00Z"}"#;
    let changed: [&[u8]; 3] = [
        br#"{"a_rather_long_column_namE": 12, "another_long_col_ts": "2024-01-15T10:01:00Z"}"#,
        br#"{"a_rather_long_column_name": 12, "another_long_col_tS": "2024-01-15T10:01:00Z"}"#,
        br#"{"a_rather_long_column_name": 12, "another_lonG_col_ts": "2024-01-15T10:01:00Z"}"#,
    ];
    for (k, l) in [&line[..], line].into_iter().enumerate() {
        d.decode_into(l, &mut record).unwrap();
        assert_eq!(Ok(&record), d.decode(l).as_ref());
        assert_eq!(d.layout_hits(), k as u64);
    }
    for l in changed {
        d.decode_into(l, &mut record).unwrap();
        assert_eq!(Ok(&record), d.decode(l).as_ref(), "{}", String::from_utf8_lossy(l));
        assert_eq!(d.layout_hits(), 1, "{}", String::from_utf8_lossy(l));
    }
}
