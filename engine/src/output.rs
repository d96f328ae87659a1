//! Output rows as JSON lines (PIPELINE.md "Output rows"): one object per row, columns in the
//! order of the output schema; timestamps as RFC 3339 UTC with `Z`; windows as
//! `{"start": ts, "end": ts}`; doubles as JSON numbers, NaN and infinities as the strings
//! `"NaN"`, `"Infinity"`, `"-Infinity"`; NULL as `null`.

use std::fmt::Write as _;

use crate::value::{Record, Value};

/// Appends the JSON text of `v` to `out`.
pub fn write_value(out: &mut String, v: &Value) {
    match v {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Int(i) => write_integer(out, i64::from(*i)),
        Value::Long(i) => write_integer(out, *i),
        Value::Float(f) => write_double(out, *f as f64),
        Value::Double(f) => write_double(out, *f),
        Value::Str(s) => write_string(out, s),
        Value::Timestamp(t) => {
            out.push('"');
            t.write_rfc3339(out);
            out.push('"');
        }
        Value::Window { start, end } => {
            out.push_str("{\"start\": \"");
            start.write_rfc3339(out);
            out.push_str("\", \"end\": \"");
            end.write_rfc3339(out);
            out.push_str("\"}");
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

/// Appends the decimal digits of `i` (with `-` when negative), without the formatting machinery.
fn write_integer(out: &mut String, i: i64) {
    let mut buf = [0u8; 20];
    let mut at = buf.len();
    let mut v = i.unsigned_abs();
    loop {
        at -= 1;
        buf[at] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    if i < 0 {
        out.push('-');
    }
    // Only ASCII digits were written.
    out.push_str(std::str::from_utf8(&buf[at..]).unwrap_or_default());
}

fn write_double(out: &mut String, f: f64) {
    if f.is_nan() {
        out.push_str("\"NaN\"");
    } else if f == f64::INFINITY {
        out.push_str("\"Infinity\"");
    } else if f == f64::NEG_INFINITY {
        out.push_str("\"-Infinity\"");
    } else if f == f.trunc() && f.abs() < 1e16 {
        let _ = write!(out, "{f:.1}"); // cannot fail; keeps a double recognisable as one
    } else {
        let _ = write!(out, "{f}"); // cannot fail
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
}
