//! Unit tests of the CSV rules (module docs of `decode::csv`).

use crate::value::Text;
use proptest::prelude::*;

use super::*;
use crate::time::Timestamp;

fn dec(ddl: &str, header: &str) -> CsvDecoder {
    CsvDecoder::new(DecoderConfig::all_columns(Schema::parse_ddl(ddl).unwrap()), header.as_bytes()).unwrap()
}

fn s(v: &str) -> Value {
    Value::Str(Text::from(v))
}

fn row(d: &CsvDecoder, line: &str) -> Vec<Value> {
    d.decode(line.as_bytes()).unwrap().values.to_vec()
}

#[test]
fn columns_are_matched_by_header_name() {
    let d = dec("a BIGINT, b STRING, c DOUBLE", "b,extra,a");
    assert_eq!(row(&d, "x,ignored,7"), vec![Value::Long(7), s("x"), Value::Null]);
}

/// A header spelling a schema column in another case still names it (a `K` header column is
/// the schema's `k`), as Spark resolves names ignoring case; an exact spelling wins.
/// A recycled record (its previous values still in it, a spare slot written) is overwritten to
/// exactly what a new one would hold; after a malformed line it is still fit for the next one.
#[test]
fn decoding_into_a_recycled_record_gives_the_fresh_decode() {
    let d = CsvDecoder::new(
        DecoderConfig {
            required: vec![2],
            ..DecoderConfig::all_columns(Schema::parse_ddl("a BIGINT, b STRING, ts TIMESTAMP").unwrap())
        },
        b"ts,a,b",
    )
    .unwrap()
    .with_spare_columns(1);
    let mut record = Record::default();
    for line in [
        "2024-01-15 10:00:00,7,x",
        ",8,y",
        "2024-01-15 10:00:01,9",
        "2024-01-15 10:00:02,,\"q\"\"\"",
        "2024-01-15 10:00:03,x,z",
    ] {
        record.values.iter_mut().for_each(|v| *v = s("stale"));
        let fresh = d.decode(line.as_bytes());
        match d.decode_into(line.as_bytes(), &mut record) {
            Ok(()) => assert_eq!(Ok(&record), fresh.as_ref(), "{line}"),
            Err(e) => assert_eq!(Err(e), fresh, "{line}"),
        }
        assert_eq!(record.values.len(), 4);
    }
    // A record of another width is replaced.
    let mut other = Record::new(vec![Value::Long(1)]);
    d.decode_into(b"2024-01-15 10:00:00,7,x", &mut other).unwrap();
    assert_eq!(other, d.decode(b"2024-01-15 10:00:00,7,x").unwrap());
}

#[test]
fn header_names_match_the_schema_ignoring_case() {
    let d = dec("k BIGINT, code STRING, id INT", "EXTRA,Code,ID,K");
    assert_eq!(row(&d, "x,c1,3,1"), vec![Value::Long(1), s("c1"), Value::Int(3)]);
    // `ID` and `id` both naming column `id` is a column named twice
    assert!(matches!(
        CsvDecoder::new(DecoderConfig::all_columns(Schema::parse_ddl("id INT").unwrap()), b"ID,id"),
        Err(DecodeError::BadHeader { .. })
    ));
}

#[test]
fn only_needed_columns_are_decoded() {
    let schema = Schema::parse_ddl("a BIGINT, b BIGINT").unwrap();
    let cfg = DecoderConfig { schema, needed: vec![true, false], required: vec![], timestamp_unit: TimeUnit::Ms };
    let d = CsvDecoder::new(cfg, b"a,b").unwrap();
    // b is not needed: its text is not checked against BIGINT.
    assert_eq!(row(&d, "1,not a number"), vec![Value::Long(1), Value::Null]);
}

#[test]
fn rfc4180_quoting() {
    let d = dec("a STRING, b STRING, c STRING", "a,b,c");
    assert_eq!(row(&d, r#""x,y","say ""hi""",plain"#), vec![s("x,y"), s("say \"hi\""), s("plain")]);
    assert_eq!(row(&d, r#""""""#), vec![s("\""), Value::Null, Value::Null]);
    // A quote inside an unquoted field is kept (lenient, as Spark).
    assert_eq!(row(&d, r#"a"b,c,d"#), vec![s("a\"b"), s("c"), s("d")]);
    for bad in [r#""abc"#, r#""ab"c,d"#, r#"x,"y"z"#, "\"a\nb"] {
        assert!(matches!(d.decode(bad.as_bytes()), Err(DecodeError::NotCsv { .. })), "{bad:?}");
    }
}

#[test]
fn empty_fields_are_null_and_quoted_empty_is_an_empty_string() {
    let d = dec("a STRING, b BIGINT, c STRING", "a,b,c");
    assert_eq!(row(&d, ",,"), vec![Value::Null, Value::Null, Value::Null]);
    assert_eq!(row(&d, r#""","","""#), vec![s(""), Value::Null, s("")]);
    assert_eq!(row(&d, ""), vec![Value::Null, Value::Null, Value::Null]);
}

#[test]
fn short_lines_are_padded_and_long_lines_cut() {
    let d = dec("a BIGINT, b BIGINT", "a,b");
    assert_eq!(row(&d, "1"), vec![Value::Long(1), Value::Null]);
    assert_eq!(row(&d, "1,2,3,4"), vec![Value::Long(1), Value::Long(2)]);
}

#[test]
fn line_endings_and_bom_are_stripped() {
    let d = CsvDecoder::new(
        DecoderConfig::all_columns(Schema::parse_ddl("a BIGINT, b STRING").unwrap()),
        "\u{FEFF}a,b\r\n".as_bytes(),
    )
    .unwrap();
    assert_eq!(row(&d, "1,x\r\n"), vec![Value::Long(1), s("x")]);
    assert_eq!(row(&d, "2,y\n"), vec![Value::Long(2), s("y")]);
}

#[test]
fn typed_values() {
    let d = dec("l BIGINT, i INT, d DOUBLE, f FLOAT, b BOOLEAN, t TIMESTAMP", "l,i,d,f,b,t");
    assert_eq!(
        row(&d, "-9223372036854775808,+12,.5,1e3,TRUE,2024-01-15T10:01:00Z"),
        vec![
            Value::Long(i64::MIN),
            Value::Int(12),
            Value::Double(0.5),
            Value::Float(1000.0),
            Value::Bool(true),
            Value::Timestamp(Timestamp(1_705_312_860_000_000)),
        ]
    );
    assert_eq!(
        row(&d, ",,Inf,-Infinity,false,1705312860000")[2..],
        [
            Value::Double(f64::INFINITY),
            Value::Float(f32::NEG_INFINITY),
            Value::Bool(false),
            Value::Timestamp(Timestamp(1_705_312_860_000_000)),
        ]
    );
    assert!(matches!(row(&d, ",,NaN,,,")[2], Value::Double(v) if v.is_nan()));
    assert_eq!(row(&d, ",,,,,1.5")[5], Value::Timestamp(Timestamp(1_500)));
}

#[test]
fn ill_typed_fields_are_malformed() {
    let d = dec("l BIGINT, i INT, d DOUBLE, b BOOLEAN, t TIMESTAMP", "l,i,d,b,t");
    let cases = [
        ("12.5,,,,", "WrongType"),
        ("1e3,,,,", "WrongType"),
        ("abc,,,,", "WrongType"),
        (" 1,,,,", "WrongType"),
        ("9223372036854775808,,,,", "OutOfRange"),
        (",2147483648,,,", "OutOfRange"),
        (",,inf,,", "WrongType"),
        (",,nan,,", "WrongType"),
        (",,1.2.3,,", "WrongType"),
        (",,,yes,", "WrongType"),
        (",,,,yesterday", "BadTimestamp"),
        (",,,,99999999999999999999", "OutOfRange"),
    ];
    for (line, kind) in cases {
        let e = d.decode(line.as_bytes()).unwrap_err();
        assert!(format!("{e:?}").starts_with(kind), "{line:?}: {e:?}");
    }
}

#[test]
fn each_header_set_maps_the_lines_after_it_and_an_unusable_one_refuses_them() {
    let cfg = DecoderConfig {
        required: vec![1],
        ..DecoderConfig::all_columns(Schema::parse_ddl("k STRING, ts BIGINT").unwrap())
    };
    let mut d = CsvDecoder::awaiting_header(cfg);
    let e = d.decode(b"a,1").unwrap_err();
    assert!(e.to_string().contains("no header line"), "{e}");
    d.set_header(b"ts,k").unwrap();
    assert_eq!(row(&d, "1,a"), vec![s("a"), Value::Long(1)]);
    // A file without `k`: null, as a missing JSON field.
    d.set_header(b"\xEF\xBB\xBFts").unwrap();
    assert_eq!(row(&d, "2"), vec![Value::Null, Value::Long(2)]);
    // A file without the event time: each of its lines is refused, saying why.
    assert!(d.set_header(b"k").is_err());
    let e = d.decode(b"a").unwrap_err();
    assert!(matches!(e, DecodeError::BadHeader { .. }) && e.to_string().contains("\"ts\""), "{e}");
    d.set_header(b"k,ts").unwrap();
    assert_eq!(row(&d, "b,3"), vec![s("b"), Value::Long(3)]);
}

#[test]
fn header_problems_are_reported() {
    let cfg = |req: Vec<usize>| DecoderConfig {
        required: req,
        ..DecoderConfig::all_columns(Schema::parse_ddl("a BIGINT, ts TIMESTAMP").unwrap())
    };
    assert!(matches!(CsvDecoder::new(cfg(vec![]), b"a,a"), Err(DecodeError::BadHeader { .. })));
    assert!(matches!(CsvDecoder::new(cfg(vec![]), b"\"a"), Err(DecodeError::BadHeader { .. })));
    assert!(matches!(CsvDecoder::new(cfg(vec![]), b"\xff"), Err(DecodeError::NotUtf8 { .. })));
    let e = CsvDecoder::new(cfg(vec![1]), b"a,other").unwrap_err();
    assert!(e.to_string().contains("ts"), "{e}");
    // A quoted header name and duplicate names outside the schema are fine.
    assert!(CsvDecoder::new(cfg(vec![1]), b"\"ts\",x,x").is_ok());
}

#[test]
fn required_column_empty_is_malformed() {
    let cfg = DecoderConfig {
        required: vec![1],
        ..DecoderConfig::all_columns(Schema::parse_ddl("a BIGINT, ts TIMESTAMP").unwrap())
    };
    let d = CsvDecoder::new(cfg, b"a,ts").unwrap();
    for line in ["1,", "1", ""] {
        assert_eq!(d.decode(line.as_bytes()).unwrap_err().to_string(), "null event time column ts");
    }
    assert!(d.decode(b"1,0").is_ok());
}

#[test]
fn invalid_utf8_line_is_rejected() {
    let d = dec("a STRING", "a");
    assert_eq!(d.decode(b"ok\xfe"), Err(DecodeError::NotUtf8 { offset: 2 }));
}

/// One CSV field as a writer would put it: quoted when it holds `,`, `"` or is a string.
fn write_field(v: &Value) -> String {
    match v {
        Value::Null => String::new(),
        Value::Str(s) => format!("\"{}\"", s.replace('"', "\"\"")),
        Value::Long(n) => n.to_string(),
        Value::Int(n) => n.to_string(),
        Value::Double(f) => f.to_string(),
        Value::Bool(b) => b.to_string(),
        Value::Timestamp(t) => t.to_string(),
        other => panic!("not generated: {other:?}"),
    }
}

fn typed_value(ty: DataType) -> BoxedStrategy<Value> {
    let v = match ty {
        DataType::String => "[^\r\n]{0,12}".prop_map(|s| Value::Str(Text::from(s.as_str()))).boxed(),
        DataType::Long => any::<i64>().prop_map(Value::Long).boxed(),
        DataType::Int => any::<i32>().prop_map(Value::Int).boxed(),
        DataType::Double => any::<f64>().prop_filter("finite", |f| f.is_finite()).prop_map(Value::Double).boxed(),
        DataType::Boolean => any::<bool>().prop_map(Value::Bool).boxed(),
        _ => {
            (-62_135_596_800_000_000i64..253_402_300_799_999_999).prop_map(|us| Value::Timestamp(Timestamp(us))).boxed()
        }
    };
    prop_oneof![1 => Just(Value::Null), 4 => v].boxed()
}

proptest! {
    #[test]
    fn csv_lines_written_from_values_decode_to_those_values(
        (values, order) in proptest::collection::vec(
            proptest::sample::select(vec![DataType::String, DataType::Long, DataType::Int, DataType::Double, DataType::Boolean, DataType::Timestamp]),
            1..7,
        )
        .prop_flat_map(|types| {
            let n = types.len();
            let values: Vec<_> = types.into_iter().map(typed_value).collect();
            (values, proptest::strategy::Just((0..n).collect::<Vec<usize>>()).prop_shuffle())
        })
    ) {
        let fields: Vec<crate::schema::Field> = values
            .iter()
            .enumerate()
            .map(|(i, v)| crate::schema::Field {
                name: format!("c{i}"),
                data_type: match v {
                    Value::Str(_) => DataType::String,
                    Value::Long(_) => DataType::Long,
                    Value::Int(_) => DataType::Int,
                    Value::Double(_) => DataType::Double,
                    Value::Bool(_) => DataType::Boolean,
                    _ => DataType::Timestamp,
                },
            })
            .collect();
        // Null values lose their type above; any type decodes an empty field to null.
        let header: Vec<String> = order.iter().map(|&i| format!("c{i}")).collect();
        let line: Vec<String> = order.iter().map(|&i| write_field(&values[i])).collect();
        let d = CsvDecoder::new(DecoderConfig::all_columns(Schema::new(fields)), header.join(",").as_bytes()).unwrap();
        let got = d.decode(line.join(",").as_bytes()).unwrap();
        prop_assert_eq!(got.values.to_vec(), values);
    }
}

/// Spark 4.3's CSV reader with `a DECIMAL(10,2)` (checked with the oracle's pyspark): exact,
/// HALF_UP to the scale, an exponent accepted, an empty field null; too many digits, spaces and
/// words make the record malformed.
#[test]
fn decimal_fields_decode_exactly_as_spark() {
    let d = dec("a DECIMAL(10,2), b STRING", "a,b");
    let dec2 = |unscaled: i128| Value::Decimal(crate::decimal::Decimal::new(unscaled, 2));
    assert_eq!(row(&d, "0.1,x"), vec![dec2(10), s("x")]);
    assert_eq!(row(&d, "1.005,x"), vec![dec2(101), s("x")]);
    assert_eq!(row(&d, "1e2,x"), vec![dec2(10000), s("x")]);
    assert_eq!(row(&d, ",x"), vec![Value::Null, s("x")]);
    for bad in ["1234567890.1,x", "abc,x", " 1.5 ,x"] {
        assert!(d.decode(bad.as_bytes()).is_err(), "{bad}");
    }
}

#[test]
fn dates_are_read_as_spark_reads_them_and_bad_ones_are_malformed() {
    let d = dec("day DATE, n BIGINT", "day,n");
    assert_eq!(row(&d, "2024-01-15,1"), vec![Value::Date(19_737), Value::Long(1)]);
    assert_eq!(row(&d, ",2"), vec![Value::Null, Value::Long(2)]);
    let e = d.decode(b"2024-13-01,3").unwrap_err();
    assert!(matches!(&e, DecodeError::WrongType { column, .. } if column == "day"), "{e:?}");
}
