//! Output rows as JSON lines (PIPELINE.md "Output rows"): one object per row, columns in the
//! order of the output schema; timestamps as RFC 3339 UTC with `Z`; windows as
//! `{"start": ts, "end": ts}`; decimals as exact JSON numbers with their scale's digits (`1.50`
//! for DECIMAL(3, 2); `1.0E-7` below 10^-6, as Spark's `to_json`); dates as `"2024-01-15"`;
//! other structs as nested objects with every field, a null one as `null` (as the Spark oracle
//! writes a row's structs, and as PIPELINE.md "null as null" says of a row's columns; `to_json`,
//! which leaves null fields out as Spark's does, is `expr::json`); doubles as JSON numbers, NaN
//! and infinities as the strings `"NaN"`, `"Infinity"`, `"-Infinity"`; NULL as `null`.

use std::cell::RefCell;
use std::fmt::Write as _;

use crate::value::{Record, Value};

/// Appends the JSON text of `v` to `out`.
pub fn write_value(out: &mut String, v: &Value) {
    match v {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Int(i) => write_integer(out, i64::from(*i)),
        Value::Long(i) => write_integer(out, *i),
        Value::Float(f) => write_float(out, *f),
        Value::Double(f) => write_double(out, *f),
        Value::Str(s) => write_string(out, s),
        // the exact number with the scale's digits (`1.50`), as Spark's JSON writer
        Value::Decimal(d) => out.push_str(&d.to_json_string()),
        Value::Timestamp(t) => {
            out.push('"');
            t.write_rfc3339(out);
            out.push('"');
        }
        Value::Window { start, end } => {
            out.push_str("{\"start\": \"");
            start.write_rfc3339_repeated(out);
            out.push_str("\", \"end\": \"");
            end.write_rfc3339_repeated(out);
            out.push_str("\"}");
        }
        Value::Date(d) => {
            out.push('"');
            crate::expr::write_date(out, *d);
            out.push('"');
        }
        Value::Struct(ty, fields) => {
            out.push('{');
            for (i, (f, v)) in ty.fields().iter().zip(fields.iter()).enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                write_string(out, &f.name);
                out.push_str(": ");
                write_value(out, v);
            }
            out.push('}');
        }
        Value::List(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                write_value(out, item);
            }
            out.push(']');
        }
    }
}

/// Appends the decimal digits of `i` (with `-` when negative), as `Display` writes them (the
/// `itoa` crate: two digits per step, no formatting machinery).
fn write_integer(out: &mut String, i: i64) {
    out.push_str(itoa::Buffer::new().format(i));
}

/// A DOUBLE: the shortest digits that read back as the same double; an exponent when the
/// number is very large or very small (`1e300`, not 301 digits), `.0` on whole numbers.
///
/// A number that is not whole, from 1e-5 to 1e16 (most measurements), is written in the same
/// plain notation as `Display` and with as many digits, which read back as the same double
/// (`fractions_are_written_shortest_as_display_writes_them`), for a fraction of the instructions
/// (`Display` was 30 % of the NAB main job's): below 1e9 with at most six decimals (a price, a
/// rounded value) by [`write_short_fraction`], otherwise by the `ryu` crate. The digits are
/// `Display`'s except when the double lies exactly halfway between two shortest forms, which
/// have 16 or 17 digits (`65.470001220703125`, a FLOAT widened; `1868613577682297.25`): `ryu`
/// then writes the one whose last digit is even (`65.47000122070312`), as Java's
/// `Double.toString` does since JDK 19 and as `to_json` and `CAST` already write a DOUBLE here
/// (`expr::text`), where `Display` writes the other. Below 1e-5 `ryu` writes an exponent where
/// `Display` does not (`1.5e-6` / `0.0000015`), so those go through [`write_number`].
fn write_double(out: &mut String, f: f64) {
    let a = f.abs();
    if (1e-5..1e16).contains(&a) && (f as i64) as f64 != f {
        if a < SHORT_BELOW && write_short_fraction(out, f) {
            return;
        }
        out.push_str(ryu::Buffer::new().format_finite(f));
        return;
    }
    write_number(out, f, f);
}

/// [`write_short_fraction`] writes numbers below this many with at most [`SHORT_DECIMALS`].
const SHORT_BELOW: f64 = 1e9;
/// The most decimals [`write_short_fraction`] writes.
const SHORT_DECIMALS: u32 = 6;
/// 10 to the [`SHORT_DECIMALS`].
const SHORT_SCALE: f64 = 1e6;

/// Writes `f` (not whole, `|f|` below [`SHORT_BELOW`]) with its shortest digits when they have
/// at most six decimals, and says whether it did (`false`: nothing written).
///
/// Why these are `Display`'s digits: below 1e9 the gap between two doubles is at most 2^-23,
/// which is under 0.12 once multiplied by 1e6, so at most one number of six decimals reads back
/// as `f`, and it is `|f| * 1e6` rounded to an integer `n` (the product's own rounding moves it by
/// 0.0625 at most). `n / 1e6`, computed exactly rounded from two exact operands, is what reading
/// `n`'s digits back gives, so the test below is exact. A form with fewer decimals would also be
/// one of six decimals (its zeros appended), so it is `n` without its trailing zeros. That form
/// has at most 15 significant digits, and two decimals of at most 15 significant digits never
/// read back as the same double: no other form as short or shorter reads back as `f`, so it is
/// the shortest, with no tie for `Display` to break.
fn write_short_fraction(out: &mut String, f: f64) -> bool {
    let scaled = (f.abs() * SHORT_SCALE).round();
    if scaled / SHORT_SCALE != f.abs() {
        return false;
    }
    // below 1e15: exact as an integer
    let mut digits = scaled as u64;
    let mut decimals = SHORT_DECIMALS;
    while decimals > 0 && digits.is_multiple_of(10) {
        digits /= 10;
        decimals -= 1;
    }
    let scale = 10u64.pow(decimals);
    if f < 0.0 {
        out.push('-');
    }
    out.push_str(itoa::Buffer::new().format(digits / scale));
    out.push('.');
    let mut fraction = itoa::Buffer::new();
    let fraction = fraction.format(digits % scale);
    for _ in fraction.len()..decimals as usize {
        out.push('0');
    }
    out.push_str(fraction);
    true
}

/// A FLOAT: the shortest digits that read back as the same float (`0.1`, as Spark writes a
/// FLOAT, not the digits of the double it widens to), otherwise as [`write_double`].
fn write_float(out: &mut String, f: f32) {
    write_number(out, f64::from(f), f);
}

/// `x` (`f` widened) as JSON: see [`write_double`]. Writing to a `String` cannot fail.
fn write_number<T: std::fmt::Display + std::fmt::LowerExp>(out: &mut String, f: f64, x: T) {
    if f.is_nan() {
        out.push_str("\"NaN\"");
    } else if f == f64::INFINITY {
        out.push_str("\"Infinity\"");
    } else if f == f64::NEG_INFINITY {
        out.push_str("\"-Infinity\"");
    } else if f != 0.0 && (f.abs() >= 1e16 || f.abs() < 1e-7) {
        let _ = write!(out, "{x:e}");
    } else if (f as i64) as f64 == f {
        // a whole number below 1e16 (here): an exact `i64` (two conversions, no call to
        // `trunc`), written with `.0` to keep a double recognisable as one (`12.0`): the digits
        // `{x:.1}` writes, without formatting the double exactly (most of the time a sink spent
        // on a row of whole numbers)
        if f == 0.0 && f.is_sign_negative() {
            out.push('-');
        }
        write_integer(out, f as i64);
        out.push_str(".0");
    } else {
        let _ = write!(out, "{x}");
    }
}

/// Appends `s` as a JSON string literal.
pub fn write_string(out: &mut String, s: &str) {
    out.push('"');
    // Most strings need no escape: copied whole.
    if !s.bytes().any(|b| b < 0x20 || b == b'"' || b == b'\\') {
        out.push_str(s);
        out.push('"');
        return;
    }
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32); // cannot fail
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

/// Appends one row as a JSON object (no newline): `names[i]: values[i]` in order.
pub fn write_row(out: &mut String, names: &[String], values: &[Value]) {
    out.push('{');
    for (i, (n, v)) in names.iter().zip(values).enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        write_string(out, n);
        out.push_str(": ");
        write_value(out, v);
    }
    out.push('}');
}

/// The JSON object layout of rows with fixed column names, escaped once: [`RowFormat::write`]
/// gives the text of [`write_row`] without scanning the names again for every row.
#[derive(Clone, Debug, Default)]
pub struct RowFormat {
    /// Per column, the text before its value: `{"name": ` for the first, `, "name": ` after.
    prefixes: Vec<String>,
    /// The bounds (µs) of the window value written last and its text: the rows of a window
    /// share it, so a burst of a window's rows formats its bounds once.
    last_window: RefCell<(Option<(i64, i64)>, String)>,
}

impl RowFormat {
    /// The layout of rows with columns `names`, in order.
    pub fn new(names: &[String]) -> RowFormat {
        let prefixes = names
            .iter()
            .enumerate()
            .map(|(i, n)| {
                let mut p = String::from(if i == 0 { "{" } else { ", " });
                write_string(&mut p, n);
                p.push_str(": ");
                p
            })
            .collect();
        RowFormat { prefixes, last_window: RefCell::default() }
    }

    /// Appends `values` as a JSON object (no newline), as [`write_row`] with the names of
    /// [`RowFormat::new`]; values past the names are ignored, as there.
    pub fn write(&self, out: &mut String, values: &[Value]) {
        if self.prefixes.is_empty() {
            out.push('{');
        }
        for (p, v) in self.prefixes.iter().zip(values) {
            out.push_str(p);
            match v {
                Value::Window { start, end } => self.write_window(out, v, (start.0, end.0)),
                _ => write_value(out, v),
            }
        }
        if values.is_empty() && !self.prefixes.is_empty() {
            out.push('{');
        }
        out.push('}');
    }

    /// Appends window value `v` (bounds `bounds`), copying the text of the last window written
    /// when it is the same window.
    fn write_window(&self, out: &mut String, v: &Value, bounds: (i64, i64)) {
        // Never borrowed elsewhere; were it, the value is formatted without the copy.
        let Ok(mut last) = self.last_window.try_borrow_mut() else {
            return write_value(out, v);
        };
        let (last_bounds, text) = &mut *last;
        if *last_bounds == Some(bounds) {
            out.push_str(text);
        } else {
            let from = out.len();
            write_value(out, v);
            *last_bounds = Some(bounds);
            text.clear();
            text.push_str(&out[from..]);
        }
    }
}

/// A row as a JSON line (with `\n`).
pub fn row_to_json_line(names: &[String], values: &[Value]) -> String {
    let mut s = String::with_capacity(64 + 16 * values.len());
    write_row(&mut s, names, values);
    s.push('\n');
    s
}

/// An input record re-encoded as a JSON line over all schema columns (late sink).
pub fn record_to_json_line(names: &[String], record: &Record) -> String {
    row_to_json_line(names, &record.values)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::Timestamp;

    #[test]
    fn a_row_format_writes_what_write_row_writes() {
        let names: Vec<String> = ["window", "a\"b", "tab\there", "ключ"].iter().map(|s| s.to_string()).collect();
        let values = [
            Value::Window { start: Timestamp(0), end: Timestamp(10_000_000) },
            Value::Str("x\"y".into()),
            Value::Null,
            Value::Double(1.5),
            Value::Long(7), // past the names: ignored by both
        ];
        for n in 0..=names.len() {
            let format = RowFormat::new(&names[..n]);
            for k in 0..=values.len() {
                let (mut a, mut b) = (String::new(), String::new());
                write_row(&mut a, &names[..n], &values[..k]);
                format.write(&mut b, &values[..k]);
                assert_eq!(a, b, "{n} names, {k} values");
            }
        }
    }

    #[test]
    fn a_row_format_writes_each_window_as_write_row_does_whatever_came_before() {
        let w = |a: i64, b: i64| Value::Window { start: Timestamp(a * 1_000_000), end: Timestamp(b * 1_000_000) };
        let names: Vec<String> = ["window", "n", "other"].iter().map(|s| s.to_string()).collect();
        let format = RowFormat::new(&names);
        let rows = [
            vec![w(0, 10), Value::Long(1)],
            vec![w(0, 10), Value::Long(2)],
            vec![w(2, 12), Value::Long(3)],
            vec![w(0, 10), Value::Long(4)],
            vec![w(0, 12), Value::Null],
            vec![w(2, 12), Value::Long(5), w(-4, 6)],
            vec![w(2, 12), Value::Long(6), w(2, 12)],
            vec![w(-4, 6), Value::Long(7)],
            vec![w(0, 12), Value::Null],
        ];
        for row in &rows {
            let (mut a, mut b) = (String::new(), String::new());
            write_row(&mut a, &names, row);
            format.write(&mut b, row);
            assert_eq!(a, b);
        }
    }

    #[test]
    fn structs_are_nested_objects_with_their_null_fields_and_dates_are_quoted() {
        use crate::schema::{DataType, Field, StructType};
        let inner = StructType::new(vec![Field { name: "x".into(), data_type: DataType::Double }]);
        let ty = StructType::new(vec![
            Field { name: "a".into(), data_type: DataType::Int },
            Field { name: "n".into(), data_type: DataType::Int },
            Field { name: "d".into(), data_type: DataType::Date },
            Field { name: "s".into(), data_type: DataType::Struct(inner) },
        ]);
        let v = Value::Struct(
            ty,
            vec![
                Value::Int(1),
                Value::Null,
                Value::Date(19_737),
                Value::Struct(inner, vec![Value::Double(1.5)].into()),
            ]
            .into(),
        );
        let mut out = String::new();
        write_row(&mut out, &["s".to_string(), "k".to_string()], &[v, Value::Date(-1)]);
        // a null field is written, as the oracle writes it (tests/cases-sql/sql-struct-null-fields)
        assert_eq!(out, r#"{"s": {"a": 1, "n": null, "d": "2024-01-15", "s": {"x": 1.5}}, "k": "1969-12-31"}"#);
    }

    #[test]
    fn integers_are_written_as_display_writes_them() {
        for i in [0, 1, -1, 9, 10, -10, 123_456_789, i64::MAX, i64::MIN, i64::from(i32::MIN)] {
            let mut out = String::new();
            write_value(&mut out, &Value::Long(i));
            assert_eq!(out, i.to_string());
        }
        let mut out = String::new();
        write_value(&mut out, &Value::Int(-42));
        assert_eq!(out, "-42");
    }

    #[test]
    fn strings_without_escapes_are_copied_and_others_escaped() {
        let mut out = String::new();
        write_string(&mut out, "plain é ü 🦀");
        assert_eq!(out, "\"plain é ü 🦀\"");
        out.clear();
        write_string(&mut out, "a\\b\u{1}");
        assert_eq!(out, "\"a\\\\b\\u0001\"");
    }

    #[test]
    fn writes_rows_as_pipeline_md_says() {
        let names = vec!["window".to_string(), "k".into(), "avg(v)".into(), "n".into(), "x".into()];
        let row = vec![
            Value::Window { start: Timestamp(0), end: Timestamp(10_000_000) },
            Value::Str("a\"b".into()),
            Value::Double(f64::NAN),
            Value::Long(3),
            Value::Null,
        ];
        assert_eq!(
            row_to_json_line(&names, &row),
            "{\"window\": {\"start\": \"1970-01-01T00:00:00Z\", \"end\": \"1970-01-01T00:00:10Z\"}, \"k\": \"a\\\"b\", \"avg(v)\": \"NaN\", \"n\": 3, \"x\": null}\n"
        );
        let mut s = String::new();
        write_value(&mut s, &Value::Double(2.0));
        assert_eq!(s, "2.0");
        s.clear();
        write_value(&mut s, &Value::Double(f64::NEG_INFINITY));
        assert_eq!(s, "\"-Infinity\"");
        s.clear();
        write_value(&mut s, &Value::Double(0.1));
        assert_eq!(s, "0.1");
    }

    /// A FLOAT is written with the digits of the float (as Spark writes a FloatType), not those
    /// of the double it widens to; very large and very small numbers with an exponent.
    #[test]
    fn floats_and_extreme_doubles_are_written_short() {
        let show = |v: Value| {
            let mut s = String::new();
            write_value(&mut s, &v);
            s
        };
        assert_eq!(show(Value::Float(0.1)), "0.1");
        assert_eq!(show(Value::Float(3.0)), "3.0");
        assert_eq!(show(Value::Float(-2.5)), "-2.5");
        assert_eq!(show(Value::Double(1e300)), "1e300");
        assert_eq!(show(Value::Double(-1.5e20)), "-1.5e20");
        assert_eq!(show(Value::Double(1e-10)), "1e-10");
        assert_eq!(show(Value::Double(123_456_789_012_345.0)), "123456789012345.0");
        assert_eq!(show(Value::Double(0.0)), "0.0");
        assert_eq!(show(Value::Double(-0.0)), "-0.0");
        for v in [1e300, 1e-10, 0.1, 2.0f64.powi(60), 1.0e16, 9.999e15, 1e-7, 3.3e-8] {
            let back: f64 = show(Value::Double(v)).parse().unwrap();
            assert_eq!(back, v, "{v} reads back");
        }
    }

    /// Doubles at the edges of [`write_double`]'s `ryu` range, and either side of them.
    #[test]
    fn fractions_at_the_edges_are_written_as_display_writes_them() {
        let show = |x: f64| {
            let mut s = String::new();
            write_value(&mut s, &Value::Double(x));
            s
        };
        for x in [
            1e-5f64,
            1.5e-5,
            0.1,
            0.5,
            2.5,
            0.000001,
            0.05,
            1234.5678,
            999_999_999.999_999,
            999_999_999.5,
            1e9 + 0.5,
            4503599627370495.5,
            9007199254740991.0,
        ] {
            for y in [x, x.next_up(), x.next_down(), -x] {
                let expected = if y.fract() == 0.0 { format!("{y:.1}") } else { format!("{y}") };
                assert_eq!(show(y), expected, "{y:e}");
            }
        }
        assert_eq!(show(9.999999999999999e-6), "0.000009999999999999999");
        assert_eq!(show(1.5e-6), "0.0000015");
        // halfway between two 17-digit forms: the even last digit (`Display` writes `…297.3`)
        assert_eq!(show(7_474_454_310_729_189.0 / 4.0), "1868613577682297.2"); // …297.25 exactly
        // a FLOAT widened, halfway between two 16-digit forms (`Display`: `…313`)
        assert_eq!(show(f64::from(65.47f32)), "65.47000122070312"); // 65.470001220703125
    }

    /// `s`, written for the double `x` that is not whole, is in `Display`'s notation with as
    /// many digits and reads back as `x`; its digits are `Display`'s but for the last one when
    /// the exact value of `x` lies halfway between two shortest forms, where it is the even one
    /// of the two.
    fn shortest_as_display_writes(s: &str, x: f64) -> Result<(), proptest::test_runner::TestCaseError> {
        let display = format!("{x}");
        proptest::prop_assert_eq!(s.parse::<f64>().ok(), Some(x));
        proptest::prop_assert_eq!(s.len(), display.len());
        let (ours, theirs) = (s.as_bytes(), display.as_bytes());
        let last = ours.len() - 1;
        if ours != theirs {
            proptest::prop_assert_eq!(&ours[..last], &theirs[..last]);
            proptest::prop_assert_eq!(ours[last].abs_diff(theirs[last]), 1);
            proptest::prop_assert_eq!((ours[last] - b'0') % 2, 0);
            // a tie: the exact expansion of `x` is the shortest form's digits, then 5 and zeros
            let n = display.trim_start_matches(['-', '0', '.']).bytes().filter(u8::is_ascii_digit).count();
            let exact = format!("{:.*e}", n + 40, x.abs());
            let exact: Vec<u8> =
                exact.split_once('e').map_or("", |(m, _)| m).bytes().filter(u8::is_ascii_digit).collect();
            proptest::prop_assert!(
                exact[n] == b'5' && exact[n + 1..].iter().all(|&b| b == b'0'),
                "{x:e} is not halfway between two {n}-digit forms"
            );
        }
        Ok(())
    }

    proptest::proptest! {
        /// A double that is not whole, from 1e-7 to 1e16 (either sign, every binary exponent of
        /// that range, any mantissa), is written in `Display`'s notation with as many digits,
        /// which read back as the same double; the digits are `Display`'s, but for the last one
        /// of a halfway case, where it is the even one of the two.
        #[test]
        fn fractions_are_written_shortest_as_display_writes_them(
            mantissa in 0u64..(1u64 << 52),
            exponent in -17i32..54,
            negative in proptest::bool::ANY,
        ) {
            let bits = ((exponent + 1023) as u64) << 52 | mantissa;
            let x = f64::from_bits(bits);
            let x = if negative { -x } else { x };
            let mut s = String::new();
            write_value(&mut s, &Value::Double(x));
            if x.fract() != 0.0 && x.abs() >= 1e-7 {
                shortest_as_display_writes(&s, x)?;
            }
        }

        /// A number of a few decimals (`n / 10^k`, `n` of any number of digits up to 18: the
        /// values [`write_short_fraction`] is for, and past its six decimals or 1e9), either
        /// sign, is written as the number that is not whole above.
        #[test]
        fn decimal_numbers_are_written_shortest_as_display_writes_them(
            m in 0u64..1_000_000_000_000_000_000,
            shift in 0u32..60,
            k in 1u32..10,
            negative in proptest::bool::ANY,
        ) {
            let x = (m >> shift) as f64 / 10f64.powi(k as i32);
            let x = if negative { -x } else { x };
            let mut s = String::new();
            write_value(&mut s, &Value::Double(x));
            if x.fract() != 0.0 && x.abs() >= 1e-7 && x.abs() < 1e16 {
                shortest_as_display_writes(&s, x)?;
            }
        }

        /// A whole number below 1e16 (either sign, DOUBLE or FLOAT, up to the last whole double
        /// before 1e16) is written as `{:.1}` writes it: its digits, then `.0`.
        #[test]
        fn whole_numbers_are_written_as_exact_formatting_writes_them(
            m in 0u64..10_000_000_000_000_000,
            shift in 0u32..54,
            negative in proptest::bool::ANY,
        ) {
            let x = (m >> shift) as f64;
            let x = if negative { -x } else { x };
            let mut s = String::new();
            write_value(&mut s, &Value::Double(x));
            if x.abs() < 1e16 {
                proptest::prop_assert_eq!(&s, &format!("{x:.1}"));
            }
            let f = x as f32;
            let mut s = String::new();
            write_value(&mut s, &Value::Float(f));
            if f64::from(f).abs() < 1e16 {
                proptest::prop_assert_eq!(s, format!("{f:.1}"));
            }
        }
    }
}
