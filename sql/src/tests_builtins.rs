//! Spark built-ins beyond SQL.md's table (`engine/src/expr/calls_more.rs`): edge values and
//! names each checked with the oracle's pyspark (Spark 4.3, ANSI, batch `selectExpr`); the case
//! `tests/cases-sql/sql-more-builtins` checks about 120 expressions end to end.

use eddy_engine::expr::Compiled;
use eddy_engine::{Record, Schema, Value};

use super::*;

fn schema() -> Schema {
    Schema::parse_ddl("s STRING, n INT, d DATE, ts TIMESTAMP").unwrap_or_else(|e| panic!("{e}"))
}

fn eval(text: &str, values: Vec<Value>) -> Result<Value, ExprError> {
    let b = bind_expression(text, &schema()).unwrap_or_else(|e| panic!("{text}: {e}"));
    Compiled::new(&b.typed).eval(&Record::new(values))
}

fn one(text: &str) -> Value {
    eval(text, vec![Value::Str(" xxhixx ".into()), Value::Int(5), Value::Date(19781), Value::Null])
        .unwrap_or_else(|e| panic!("{text}: {e}"))
}

fn name(text: &str) -> String {
    bind_expression(text, &schema()).map(|b| b.name).unwrap_or_else(|e| panic!("{text}: {e}"))
}

#[test]
fn edge_values_are_sparks() {
    let s = |x: &str| Value::Str(x.into());
    // add_months clamps to the month's last day, both ways
    assert_eq!(one("add_months(DATE '2024-01-31', 1)"), one("DATE '2024-02-29'"));
    assert_eq!(one("add_months(DATE '2024-03-31', -1)"), one("DATE '2024-02-29'"));
    // translate: the first occurrence of a character in `from` decides
    assert_eq!(one("translate('aab', 'aa', 'xy')"), s("xxb"));
    // chr: modulo 256, Latin-1, empty below 0
    assert_eq!(one("chr(256 + 65)"), s("A"));
    assert_eq!(one("chr(200)"), s("È"));
    assert_eq!(one("chr(-1)"), s(""));
    assert_eq!(one("shiftright(-8, 1)"), Value::Int(-4));
    assert_eq!(one("repeat('a', -1)"), s(""));
    assert_eq!(one("factorial(21)"), Value::Null);
    assert_eq!(one("log1p(-1.0)"), Value::Null);
    assert_eq!(one("hex(-1)"), s("FFFFFFFFFFFFFFFF"));
    assert_eq!(one("ascii('')"), Value::Int(0));
    // ISO weeks across the turn of the year
    assert_eq!(one("weekofyear(DATE '2021-01-03')"), Value::Int(53));
    assert_eq!(one("weekofyear(DATE '2020-12-31')"), Value::Int(53));
    assert_eq!(one("weekofyear(DATE '2024-12-30')"), Value::Int(1));
    // timestampadd clamps months; timestampdiff counts whole units toward zero, months as
    // Java's LocalDateTime.until (the time of day decides whether the last month is whole)
    let ts = |t: &str| one(&format!("TIMESTAMP '{t}'"));
    assert_eq!(one("timestampadd(MONTH, 1, TIMESTAMP '2024-01-31 10:00:00')"), ts("2024-02-29 10:00:00"));
    assert_eq!(one("timestampadd(YEAR, -1, TIMESTAMP '2024-02-29 23:59:59.5')"), ts("2023-02-28 23:59:59.5"));
    let diff = |u: &str, a: &str, b: &str| one(&format!("timestampdiff({u}, TIMESTAMP '{a}', TIMESTAMP '{b}')"));
    assert_eq!(diff("MONTH", "2024-01-31 10:00:00", "2024-02-29 11:00:00"), Value::Long(0));
    assert_eq!(diff("MONTH", "2024-03-31 10:00:00", "2024-02-29 11:00:00"), Value::Long(0));
    assert_eq!(diff("YEAR", "2020-02-29 00:00:00", "2024-02-28 00:00:00"), Value::Long(3));
    assert_eq!(diff("DAY", "2024-01-02 09:00:00", "2024-01-01 10:00:00"), Value::Long(0));
    assert_eq!(one("next_day(DATE '2024-03-04', 'MO')"), one("DATE '2024-03-11'"));
    assert_eq!(one("trunc(DATE '2024-02-28', 'WEEK')"), one("DATE '2024-02-26'"));
    // decode compares null-safely
    assert_eq!(one("decode(NULL, NULL, 'a', 'b')"), s("a"));
    assert_eq!(one("decode(n, 4, 'four')"), Value::Null);
}

#[test]
fn errors_are_sparks_conditions() {
    let err =
        |t: &str| eval(t, vec![Value::Null, Value::Int(5), Value::Null, Value::Null]).err().map(|e| e.to_string());
    assert_eq!(
        err("make_date(2024, 2, 30)").as_deref(),
        Some(r#"DATETIME_FIELD_OUT_OF_BOUNDS in "make_date(2024, 2, 30)""#)
    );
    // the escape at the end of a pattern, an escape of more than one character: refused
    let bind_err = |t: &str| bind_expression(t, &schema()).err().map(|e| e.to_string()).unwrap_or_default();
    assert!(bind_err("s LIKE 'a!' ESCAPE '!'").contains("an escape `!` followed by _, % or !"));
    assert!(bind_err("s LIKE 'a' ESCAPE '!!'").contains("one character"));
    assert!(bind_err("date_add(d, 1.5D)").contains("INT"));
    assert!(bind_err("n & 1.5D").contains("INT, BIGINT"));
    assert!(bind_err("extract(EPOCH FROM d)").contains("YEAR, QUARTER"));
    // the date of the first TIMESTAMP has its midnight before it: an overflow, not a panic
    // (a fuzz finding: `trunc(ts, 'WEEK')` at Timestamp::MIN)
    let min = vec![Value::Null, Value::Null, Value::Null, Value::Timestamp(eddy_engine::Timestamp(i64::MIN))];
    let e = eval("trunc(ts, 'WEEK')", min.clone()).err().map(|e| e.to_string());
    assert!(e.is_some_and(|e| e.starts_with("ARITHMETIC_OVERFLOW")));
    assert!(eval("CAST(CAST(ts AS DATE) AS TIMESTAMP)", min).is_err());
}

#[test]
fn like_escape_and_names_are_sparks() {
    let row = |x: &str| vec![Value::Str(x.into()), Value::Null, Value::Null, Value::Null];
    assert_eq!(eval("s LIKE 'a!%b' ESCAPE '!'", row("a%b")), Ok(Value::Bool(true)));
    assert_eq!(eval("s LIKE 'a!%b' ESCAPE '!'", row("axb")), Ok(Value::Bool(false)));
    // with another escape, a backslash is an ordinary character
    assert_eq!(eval(r"s LIKE 'a\%' ESCAPE '!'", row(r"a\xyz")), Ok(Value::Bool(true)));
    assert_eq!(eval("s ILIKE '% X!%' ESCAPE '!'", row(" xxhixx ")), Ok(Value::Bool(false)));
    assert_eq!(name("s LIKE '%h!%' ESCAPE '!'"), "s LIKE %h!% ESCAPE '!'");
    assert_eq!(name("s ILIKE '% X!%' ESCAPE '!'"), "ilike(s, % X!%)");
    assert_eq!(name("POSITION('h' IN s)"), "locate(h, s, 1)");
    assert_eq!(name("TRIM(TRAILING 'x ' FROM s)"), "TRIM(TRAILING x  FROM s)");
    assert_eq!(name("INTERVAL 1 HOUR + ts"), "ts + INTERVAL '01' HOUR");
    assert_eq!(name("int('5')"), "5");
    assert_eq!(name("d - 1"), "date_sub(d, 1)");
    assert_eq!(name("log(n)"), "LOG(E(), n)");
    // EXTRACT keeps its field as written (the parser upper-cases it; Spark does not)
    assert_eq!(name("extract(year FROM d)"), "extract(year FROM d)");
    assert_eq!(name("EXTRACT(Quarter from ts) + 1"), "(extract(Quarter FROM ts) + 1)");
}

/// Result types and Java's regex iteration where they differ from the obvious (Spark 4.3,
/// pyspark `typeof` and values).
#[test]
fn types_and_regex_iteration_are_sparks() {
    let ty = |t: &str| {
        bind_expression(t, &schema()).map(|b| b.typed.data_type.to_string()).unwrap_or_else(|e| panic!("{t}: {e}"))
    };
    // decode without a default: its NULL default is a STRING, which takes part in the type
    assert_eq!(ty("decode(n, 5, n)"), "BIGINT");
    assert_eq!(ty("decode(n, 5, 1.5)"), "DOUBLE");
    assert_eq!(ty("decode(n, 5, 'a')"), "STRING");
    assert_eq!(ty("decode(n, 5, 1, 0)"), "INT");
    assert_eq!(ty("zeroifnull(1.5)"), "DECIMAL(11,1)");
    assert_eq!(ty("zeroifnull(n)"), "INT");
    assert_eq!(ty("negative(NULL)"), "DOUBLE");
    assert_eq!(ty("nanvl(CAST(1 AS FLOAT), CAST(2 AS FLOAT))"), "FLOAT");
    // Spark refuses a BIGINT day count and unix_date of a TIMESTAMP
    assert!(bind_expression("date_add(d, 2147483648)", &schema()).is_err());
    assert!(bind_expression("unix_date(ts)", &schema()).is_err());
    let s = |x: &str| Value::Str(x.into());
    let row = |x: &str| vec![s(x), Value::Null, Value::Null, Value::Null];
    // an empty match right after a non-empty one counts, as Java's Matcher.find finds it
    assert_eq!(eval("regexp_count(s, 'x*')", row(" xxhixx ")), Ok(Value::Int(7)));
    assert_eq!(eval("regexp_count(s, '')", row("abc")), Ok(Value::Int(4)));
    // an empty first match is NULL
    assert_eq!(eval("regexp_substr(s, 'x*')", row(" xxhixx ")), Ok(Value::Null));
    assert_eq!(eval("regexp_substr(s, 'x+')", row(" xxhixx ")), Ok(s("xx")));
    // atan2 of -0.0 is that of +0.0 (Spark adds 0.0 to both)
    assert_eq!(eval("atan2(-0.0D, -1.0D)", row("")), Ok(Value::Double(std::f64::consts::PI)));
    // date_add wraps around the INT day numbers; make_date takes years beyond 9999
    assert_eq!(one("date_add(DATE '2024-01-01', 2147483647)"), one("DATE '-5877587-06-21'"));
    assert_eq!(one("make_date(-1, 1, 1)"), one("DATE '-0001-01-01'"));
}

#[test]
fn implicit_casts_are_sparks_and_only_where_spark_casts() {
    let s = |x: &str| Value::Str(x.into());
    // string functions cast their other atomic arguments to STRING, named without the cast
    assert_eq!(one("upper(n)"), s("5"));
    assert_eq!(name("upper(n)"), "upper(n)");
    assert_eq!(one("lpad(d, 12, '*')"), s("**2024-02-28"));
    assert_eq!(one("length(true)"), Value::Int(4));
    // date parts read a string as a DATE, time parts as a TIMESTAMP
    assert_eq!(one("year('2024-01-01T23:30:00Z')"), Value::Int(2024));
    assert_eq!(one("hour('2024-01-01')"), Value::Int(0));
    assert_eq!(name("extract(HOUR FROM '2024-01-01 10:00:00')"), "extract(HOUR FROM 2024-01-01 10:00:00)");
    // a string that is no date fails as the cast fails
    let err = eval("month(s)", vec![s("nope"), Value::Null, Value::Null, Value::Null]).unwrap_err();
    assert!(err.to_string().contains("CAST_INVALID_INPUT"), "{err}");
    // where Spark takes BINARY or STRING only, or no string, other types stay refused
    let schema = schema();
    for text in ["md5(n)", "sha1(n)", "sha2(n, 256)", "crc32(d)", "base64(n)", "get_json_object(n, '$')"] {
        let e = bind_expression(text, &schema).err().unwrap_or_else(|| panic!("{text} was accepted"));
        assert!(e.to_string().contains("allowed: STRING"), "{text}: {e}");
    }
    for text in ["year(n)", "hour(n)", "unix_seconds('2024-01-01 00:00:00')", "unix_millis(d)", "date_trunc('HOUR', n)"]
    {
        assert!(bind_expression(text, &schema).is_err(), "{text} was accepted");
    }
}

#[test]
fn math_functions_read_a_string_as_a_double() {
    assert_eq!(one("sqrt('4')"), Value::Double(2.0));
    assert_eq!(name("sqrt('4')"), "SQRT(4)");
    assert_eq!(one("floor('2.5')"), Value::Long(2));
    assert_eq!(one("abs('-5')"), Value::Double(5.0));
    assert_eq!(one("chr('65')"), Value::Str("A".into()));
    // zeroifnull is nvl(x, 0): a STRING takes the common type with the INT, BIGINT
    assert_eq!(one("zeroifnull('5')"), Value::Long(5));
    // an implicit cast is not a column's own cast: positive(s) keeps its name
    let b = bind_expression("positive(s)", &schema()).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(b.typed.output_name(), "(+ s)");
    let err = eval("sqrt(s)", vec![Value::Str("x".into()), Value::Null, Value::Null, Value::Null]).unwrap_err();
    assert!(err.to_string().contains("CAST_INVALID_INPUT"), "{err}");
    assert!(bind_expression("sqrt(d)", &schema()).is_err());
    assert!(bind_expression("abs(true)", &schema()).is_err());
}

#[test]
fn string_and_math_builtins_of_spark_4_give_sparks_edge_values() {
    let s = |x: &str| Value::Str(x.into());
    // substring_index finds overlapping occurrences, byte by byte, from either end
    assert_eq!(one("substring_index('aaa', 'aa', 2)"), s("a"));
    assert_eq!(one("substring_index('aaa', 'aa', -2)"), s("a"));
    assert_eq!(one("substring_index('a.b.c', '.', 5)"), s("a.b.c"));
    assert_eq!(one("substring_index('a.b.c', '.', -5)"), s("a.b.c"));
    assert_eq!(one("substring_index('.a', '.', 1)"), s(""));
    assert_eq!(one("substring_index('a.', '.', -1)"), s(""));
    assert_eq!(one("substring_index('a.b', '', 1)"), s(""));
    // find_in_set: an empty item matches an empty string; a comma in the needle never matches
    assert_eq!(one("find_in_set('', 'a,,b')"), Value::Int(2));
    assert_eq!(one("find_in_set('', '')"), Value::Int(1));
    assert_eq!(one("find_in_set('b,', 'a,b,c')"), Value::Int(0));
    // levenshtein counts characters; over the threshold (any negative one) it is -1
    assert_eq!(one("levenshtein('kitten', 'sitting')"), Value::Int(3));
    assert_eq!(one("levenshtein('kitten', 'sitting', 3)"), Value::Int(3));
    assert_eq!(one("levenshtein('kitten', 'sitting', 2)"), Value::Int(-1));
    assert_eq!(one("levenshtein('', '', -1)"), Value::Int(-1));
    assert_eq!(one("levenshtein('héllo', 'hello')"), Value::Int(1));
    assert_eq!(one("levenshtein('a', 'b', NULL)"), Value::Null);
    // bit_count of an INT counts the bits of the BIGINT it widens to; bin is two's complement
    assert_eq!(one("bit_count(-1)"), Value::Int(64));
    assert_eq!(one("bit_count(true)"), Value::Int(1));
    assert_eq!(one("bin(CAST(-5 AS INT))"), s(&format!("{}011", "1".repeat(61))));
    assert_eq!(one("bin('12')"), s("1100"));
    // counts of string functions take a fractional number, truncated
    assert_eq!(one("space(2.9)"), s("  "));
    assert_eq!(one("space(-2.9)"), s(""));
    assert_eq!(one("repeat('ab', 2.7)"), s("abab"));
    assert_eq!(one("weekday(DATE '2024-01-01')"), Value::Int(0));
    assert_eq!(one("weekday('2024-03-31')"), Value::Int(6));
    assert_eq!(one("nullifzero(0)"), Value::Null);
    assert_eq!(one("nullifzero('0')"), Value::Null);
    assert_eq!(one("try_mod(-7, 3)"), Value::Int(-1));
    assert_eq!(one("try_mod(7, 0)"), Value::Null);
    assert_eq!(one("try_to_date('2024-13-01')"), Value::Null);
    assert_eq!(one("try_to_date('01/02/2024', 'MM/dd/yyyy')"), one("DATE '2024-01-02'"));
    assert_eq!(one("atanh(1.0)"), Value::Double(f64::INFINITY));
    assert_eq!(one("asinh(-1e200)"), Value::Double(-461.2101657793691));
    assert_eq!(one("csc(0)"), Value::Double(f64::INFINITY));
    // names as Spark gives them
    assert_eq!(name("asinh(1e-10)"), "ASINH(1.0E-10)");
    assert_eq!(name("substring_index(s, '.', 2)"), "substring_index(s, ., 2)");
    assert_eq!(name("sha(s)"), "sha(s)");
    assert_eq!(name("try_to_date(s)"), "try_to_date(s)");
    // what Spark refuses: bit_count of a DOUBLE or STRING, a fractional day count
    for refused in ["bit_count(1.5)", "bit_count('7')", "date_add(d, 1.5)"] {
        assert!(bind_expression(refused, &schema()).is_err(), "{refused} was accepted");
    }
}

#[test]
fn conv_format_number_width_bucket_and_make_timestamp_give_sparks_edge_values() {
    let s = |x: &str| Value::Str(x.into());
    // conv: unsigned 64 bits, two's complement for a negative input, signed for a negative base
    assert_eq!(one("conv('-ff', 16, 10)"), s("18446744073709551361"));
    assert_eq!(one("conv('-ff', 16, -10)"), s("-255"));
    assert_eq!(one("conv('ffffffffffffffff', 16, -10)"), s("-1"));
    assert_eq!(one("conv('-8000000000000001', 16, 10)"), s("18446744073709551615"));
    assert_eq!(one("conv('  12x', 10, 10)"), s("12"));
    assert_eq!(one("conv('x', 10, 10)"), s("0"));
    assert_eq!(one("conv('-', 10, 10)"), s("0"));
    assert_eq!(one("conv(' ', 10, 10)"), Value::Null);
    assert_eq!(one("conv('10', 1, 10)"), Value::Null);
    assert_eq!(one("conv('255', 10, 16)"), s("FF"));
    assert!(eval("conv('18446744073709551616', 10, 16)", vec![Value::Null; 4]).is_err(), "64-bit overflow");
    // format_number rounds half-even (the exact value of a DOUBLE), groups by three
    assert_eq!(one("format_number(2.5, 0)"), s("2"));
    assert_eq!(one("format_number(3.5, 0)"), s("4"));
    assert_eq!(one("format_number(0.125, 2)"), s("0.12"));
    assert_eq!(one("format_number(-1234.5, 0)"), s("-1,234"));
    assert_eq!(one("format_number(-0.4, 0)"), s("-0"));
    assert_eq!(one("format_number(1e20, 1)"), s("100,000,000,000,000,000,000.0"));
    assert_eq!(one("format_number(CAST(0.1 AS FLOAT), 10)"), s("0.1000000015"));
    assert_eq!(one("format_number(CAST(-9.995 AS DECIMAL(4, 3)), 2)"), s("-10.00"));
    assert_eq!(one("format_number(1.005, 2)"), s("1.00"));
    assert_eq!(one("format_number(CAST(12345 AS BIGINT), 2)"), s("12,345.00"));
    assert_eq!(one("format_number(1.5, -1)"), Value::Null);
    assert!(bind_expression("format_number(1.5, '#,##0.0')", &schema()).is_err(), "a pattern is refused");
    // width_bucket: either direction, 0 and n + 1 outside, NULL for degenerate bounds
    assert_eq!(one("width_bucket(5.3, 0.2, 10.6, 5)"), Value::Long(3));
    assert_eq!(one("width_bucket(5, 10, 0, 5)"), Value::Long(3));
    assert_eq!(one("width_bucket(10, 0, 10, 5)"), Value::Long(6));
    assert_eq!(one("width_bucket(-1, 0, 10, 5)"), Value::Long(0));
    assert_eq!(one("width_bucket(1e308, -1e308, 1e308, 10)"), Value::Long(11));
    assert_eq!(one("width_bucket(5, 0, 0, 3)"), Value::Null);
    assert_eq!(one("width_bucket(5, 0, 10, 0)"), Value::Null);
    assert_eq!(one("width_bucket(5, 0, 10, 2.5)"), Value::Long(2));
    // make_timestamp: 60 whole seconds is the next minute, a fraction past it or a bad field fails
    let ts = |t: &str| one(&format!("TIMESTAMP '{t}'"));
    assert_eq!(one("make_timestamp(2024, 12, 31, 23, 59, 60)"), ts("2025-01-01 00:00:00"));
    assert_eq!(one("make_timestamp(2024, 2, 29, 10, 30, 59.9999999)"), ts("2024-02-29 10:31:00"));
    assert_eq!(one("make_timestamp(2024, 2, 29, 10, 30, '45.5')"), ts("2024-02-29 10:30:45.5"));
    assert_eq!(one("make_timestamp(2024, 2, 29, 10, 30, 45, '+02:00')"), ts("2024-02-29 08:30:45"));
    assert_eq!(one("make_timestamp(2024, 3, 10, 2, 30, 0, 'America/New_York')"), ts("2024-03-10 07:30:00"));
    assert_eq!(one("try_make_timestamp(2024, 2, 30, 10, 30, 45)"), Value::Null);
    for failing in [
        "make_timestamp(2024, 2, 30, 10, 30, 45)",
        "make_timestamp(2024, 2, 29, 24, 0, 0)",
        "make_timestamp(2024, 2, 29, 10, 30, 60.5)",
        "make_timestamp(2024, 2, 29, 10, 30, -0.5)",
        "make_timestamp(2024, 13, 1, 0, 0, 0)",
        "make_timestamp(300000, 1, 1, 0, 0, 0)",
    ] {
        assert!(eval(failing, vec![Value::Null; 4]).is_err(), "{failing} did not fail");
    }
    assert_eq!(name("make_timestamp(2024, 2, 29, 10, 30, 45.5)"), "make_timestamp(2024, 2, 29, 10, 30, 45.5)");
    assert_eq!(name("conv(s, 16, 10)"), "conv(s, 16, 10)");
    // months_between: whole months between month ends and on equal days, else over 31 days
    assert_eq!(
        one("months_between(TIMESTAMP '2024-01-31 00:00:00', TIMESTAMP '2024-02-29 00:00:00')"),
        Value::Double(-1.0)
    );
    assert_eq!(one("months_between(DATE '1997-02-28', DATE '1996-10-30')"), Value::Double(3.93548387));
    assert_eq!(one("months_between(DATE '1997-02-28', DATE '1996-10-30', false)"), Value::Double(3.935483870967742));
    assert_eq!(name("months_between(d, ts)"), "months_between(d, ts, true)");
    // typeof: Spark's simpleString, without evaluating its argument
    assert_eq!(one("typeof(CAST(1 AS DECIMAL(6, 2)) * 2)"), s("decimal(8,2)"));
    assert_eq!(one("typeof(named_struct('a', n, 'w', struct(d)))"), s("struct<a:int,w:struct<d:date>>"));
    assert_eq!(one("typeof(NULL)"), s("void"));
    assert_eq!(one("typeof(1 / 0)"), s("double"));
}

#[test]
fn like_takes_a_pattern_computed_per_record() {
    let row = |s: &str| vec![Value::Str(s.into()), Value::Int(5), Value::Date(19781), Value::Null];
    // the pattern is the record's own column: each record compiles (or finds cached) its own
    assert_eq!(eval("'abc' LIKE s", row("a%")), Ok(Value::Bool(true)));
    assert_eq!(eval("'abc' LIKE s", row("b%")), Ok(Value::Bool(false)));
    assert_eq!(eval("'abc' LIKE s", row("a%")), Ok(Value::Bool(true)));
    assert_eq!(eval("'ABC' ILIKE s", row("a_c")), Ok(Value::Bool(true)));
    assert_eq!(eval("'a%c' LIKE s ESCAPE '!'", row("a!%c")), Ok(Value::Bool(true)));
    assert_eq!(eval("'abc' LIKE s ESCAPE '!'", row("a!%c")), Ok(Value::Bool(false)));
    assert_eq!(eval("'abc' LIKE s", vec![Value::Null; 4]), Ok(Value::Null));
    // an escape at the end fails the record, as Spark's INVALID_FORMAT.ESC_AT_THE_END
    let e = eval("'abc' LIKE concat(s, '\\\\')", row("a")).expect_err("a trailing escape");
    assert!(e.to_string().contains("INVALID_FORMAT"), "{e}");
    assert_eq!(name("s LIKE concat('a', '%')"), "s LIKE concat(a, %)");
    assert_eq!(name("s ILIKE upper(s)"), "ilike(s, upper(s))");
}

#[test]
fn rlike_takes_a_pattern_computed_per_record_and_agrees_with_the_constant_one() {
    let row = |s: &str| vec![Value::Str(s.into()), Value::Int(5), Value::Date(19781), Value::Null];
    // each pattern per record gives what the same pattern as a constant gives (the constant
    // form's classes and anchors were checked against Spark: `regex_classes_are_javas_ascii_ones`)
    let patterns = [r"^a", r"b", r"^\w+$", r"\d{2}", r"[[:alpha:]]", r"(?i)ABC", r"c$", r"^$", r"é", r"\s"];
    let subjects = ["abc", "ab12", "été", "", "a b", "ABC", "9"];
    let mut matched = 0;
    for p in patterns {
        // as a SQL string literal: a backslash escaped, as Spark reads it
        let literal = p.replace('\\', "\\\\");
        for subject in subjects {
            let constant = eval(&format!("'{subject}' RLIKE '{literal}'"), vec![Value::Null; 4]);
            assert_eq!(eval(&format!("'{subject}' RLIKE s"), row(p)), constant, "{subject} RLIKE {p}");
            assert_eq!(eval(&format!("regexp_like('{subject}', s)"), row(p)), constant, "{subject} {p}");
            matched += usize::from(constant == Ok(Value::Bool(true)));
        }
    }
    // both outcomes were met
    assert!((10..60).contains(&matched), "{matched}");
    assert_eq!(eval("'abc' RLIKE s", vec![Value::Null; 4]), Ok(Value::Null));
    assert_eq!(eval("s RLIKE CAST(NULL AS STRING)", row("a")), Ok(Value::Null));
    // a pattern Rust's regex cannot read fails the record (a backreference)
    let e = eval("'aa' RLIKE s", row("(a)\\1")).expect_err("a backreference");
    assert!(e.to_string().contains("INVALID_FORMAT"), "{e}");
    assert_eq!(name("'a' RLIKE s"), "RLIKE(a, s)");
    assert_eq!(name("s REGEXP concat('^', s)"), "RLIKE(s, concat(^, s))");
    assert_eq!(name("regexp_like(s, upper(s))"), "REGEXP_LIKE(s, upper(s))");
    assert_eq!(name("regexp_like(s, 'a+')"), "REGEXP_LIKE(s, a+)");
}

#[test]
fn a_helpers_differential_against_spark_found_these() {
    let s = |x: &str| Value::Str(x.into());
    let null_n = vec![Value::Str("abc".into()), Value::Null, Value::Date(19781), Value::Null];
    // a null-intolerant call stops at a NULL first argument: the second one's error is never raised
    assert_eq!(eval("n + (1 / 0)", null_n.clone()), Ok(Value::Null));
    assert_eq!(eval("n = CAST(s AS INT)", null_n.clone()), Ok(Value::Null));
    assert_eq!(eval("substring(CAST(n AS STRING), 1 / 0)", null_n.clone()), Ok(Value::Null));
    assert_eq!(eval("repeat(CAST(n AS STRING), 1e20)", null_n.clone()), Ok(Value::Null));
    // ... but a function that reads NULLs evaluates every argument
    assert!(eval("concat(CAST(n AS STRING), CAST(1 / 0 AS STRING))", null_n).is_err());
    // a STRING against an integral number compares as a BIGINT
    assert_eq!(one("'2147483648' > n"), Value::Bool(true));
    assert_eq!(one("nullifzero('2147483648')"), s("2147483648"));
    // a try_ function's implicit casts are inside its try
    assert_eq!(one("try_mod(s, 3)"), Value::Null);
    assert_eq!(one("try_add(s, 1)"), Value::Null);
    assert_eq!(one("try_divide(s, 2)"), Value::Null);
    assert_eq!(one("try_mod('7', 3)"), Value::Long(1));
    // a DECIMAL of more than 18 digits goes to INT through its DOUBLE, as Spark's roundToInt
    assert_eq!(one("CAST(CAST(0.999999999999999999 AS DECIMAL(38, 18)) AS INT)"), Value::Int(1));
    assert_eq!(one("CAST(CAST(0.99 AS DECIMAL(12, 2)) AS INT)"), Value::Int(0));
    assert_eq!(one("repeat('a', CAST(0.999999999999999999 AS DECIMAL(38, 18)))"), s("a"));
    assert!(eval("CAST(CAST(2147483647.9999999999 AS DECIMAL(20, 10)) AS INT)", vec![Value::Null; 4]).is_err());
    // asinh and acosh of the largest doubles stay finite
    let Value::Double(x) = one("asinh(-1.7976931348623157e308)") else { panic!("not a DOUBLE") };
    assert!((x + 710.4758600739439).abs() < 1e-12, "{x}");
    let Value::Double(x) = one("acosh(1e308)") else { panic!("not a DOUBLE") };
    assert!((x - 709.889355822726).abs() < 1e-12, "{x}");
}

#[test]
fn datetime_patterns_take_sparks_letters() {
    let s = |x: &str| Value::Str(x.into());
    let ts = |t: &str| one(&format!("TIMESTAMP '{t}'"));
    let fmt = |t: &str, p: &str| one(&format!("date_format(TIMESTAMP '{t}', '{p}')"));
    assert_eq!(fmt("2024-11-05 03:04:05.123456", "M/d/yy H:m:s"), s("11/5/24 3:4:5"));
    assert_eq!(fmt("2024-11-05 13:04:05", "hh:mm a"), s("01:04 PM"));
    assert_eq!(fmt("2024-11-05 00:04:05", "h:mm a"), s("12:04 AM"));
    assert_eq!(fmt("2024-11-05 12:04:05", "h:mm a"), s("12:04 PM"));
    assert_eq!(fmt("2024-11-05 03:04:05.123456", "yyyy-MM-dd HH:mm:ss.SSSSSS"), s("2024-11-05 03:04:05.123456"));
    assert_eq!(fmt("2024-11-05 03:04:05.123456", "ss.S"), s("05.1"));
    assert_eq!(fmt("2024-02-29 10:30:00", "MMM d, yyyy"), s("Feb 29, 2024"));
    assert_eq!(fmt("2024-02-29 10:30:00", "MMMM dd y"), s("February 29 2024"));
    assert_eq!(one("date_format(TIMESTAMP '2024-02-29 10:30:00', \"yyyy 'at' HH ''\")"), s("2024 at 10 '"));
    let parse = |x: &str, p: &str| eval(&format!("to_timestamp('{x}', '{p}')"), vec![Value::Null; 4]);
    assert_eq!(parse("2/9/24 3:04:05", "M/d/yy H:m:s"), Ok(ts("2024-02-09 03:04:05")));
    assert_eq!(parse("12/31/99 23:04:05", "M/d/yy H:m:s"), Ok(ts("2099-12-31 23:04:05")));
    assert_eq!(parse("feb 9, 2024", "MMM d, yyyy"), Ok(ts("2024-02-09 00:00:00")));
    assert_eq!(parse("FEBRUARY 09 2024", "MMMM dd yyyy"), Ok(ts("2024-02-09 00:00:00")));
    assert_eq!(parse("01:04 PM", "hh:mm a"), Ok(ts("1970-01-01 13:04:00")));
    assert_eq!(parse("12:04 am", "hh:mm a"), Ok(ts("1970-01-01 00:04:00")));
    assert_eq!(parse("02:04", "hh:mm"), Ok(ts("1970-01-01 02:04:00")));
    assert_eq!(parse("2024-001-5", "yyyy-M-d"), Ok(ts("2024-01-05 00:00:00")));
    assert_eq!(parse("2024-11-05 03:04:05.12", "yyyy-MM-dd HH:mm:ss.SSSSSS"), Ok(ts("2024-11-05 03:04:05.12")));
    for (x, p) in [
        ("13:04 PM", "hh:mm a"),
        ("2024-11-05 03:04:05.1234567", "yyyy-MM-dd HH:mm:ss.SSSSSS"),
        ("05.11.2024", "dd.MM.yy"),
    ] {
        assert!(parse(x, p).is_err(), "{x} as {p} parsed");
    }
    // day names are written, never read (Spark refuses them in a pattern that parses); other
    // letters are refused when the query is checked
    assert!(bind_expression("date_format(ts, 'EEE')", &schema()).is_ok());
    assert!(bind_expression("to_timestamp(s, 'EEE yyyy')", &schema()).is_err());
    assert!(bind_expression("date_format(ts, 'EEEEE')", &schema()).is_err());
    assert!(bind_expression("date_format(ts, 'u')", &schema()).is_err());
}
