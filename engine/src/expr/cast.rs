//! `CAST` under Spark's ANSI rules (Spark's `Cast.canAnsiCast` and `Cast` evaluation): which
//! casts exist and what each does to a non-null value.

use crate::value::Text;
use std::sync::Arc;

use super::EvalErrorKind::{self, ArithmeticOverflow, CastInvalidInput, CastOverflow};
use super::dates::{date_of_micros, date_string, micros_of_day, parse_cast_date};
use super::text::{java_double, java_float, parse_cast_timestamp, timestamp_string, trim_java, trim_spark};
use crate::schema::DataType;
use crate::time::Timestamp;
use crate::value::Value;

/// A cast of one non-null value.
pub(crate) type CastFn = fn(&Value) -> Result<Value, EvalErrorKind>;

/// The cast from `from` to `to`, or `None` where Spark's ANSI mode has none (BOOLEAN and
/// TIMESTAMP to each other, DATE to or from anything but STRING and TIMESTAMP, and the
/// output-only types). The casts into and out of DECIMAL are [`super::decimal::caster`]'s.
pub(crate) fn cast_fn(from: DataType, to: DataType) -> Option<CastFn> {
    use DataType as T;
    if from == to {
        return Some(|v| Ok(v.clone()));
    }
    Some(match (from, to) {
        (_, T::String) if scalar(from) => to_string,
        (T::String, T::Int) => {
            |v| str_to_i64(v).and_then(|x| i32::try_from(x).map_err(|_| CastInvalidInput)).map(Value::Int)
        }
        (T::String, T::Long) => |v| str_to_i64(v).map(Value::Long),
        (T::String, T::Double) => |v| str_to_f64(v).map(Value::Double),
        (T::String, T::Float) => |v| str_to_f64(v).map(|x| Value::Float(x as f32)),
        (T::String, T::Boolean) => str_to_bool,
        (T::String, T::Timestamp) => |v| match v {
            Value::Str(s) => parse_cast_timestamp(s).map(|us| Value::Timestamp(Timestamp(us))).ok_or(CastInvalidInput),
            _ => Err(CastInvalidInput),
        },
        (T::Boolean, T::Int) => |v| Ok(Value::Int(matches!(v, Value::Bool(true)) as i32)),
        (T::Boolean, T::Long) => |v| Ok(Value::Long(matches!(v, Value::Bool(true)) as i64)),
        (T::Boolean, T::Double) => |v| Ok(Value::Double(matches!(v, Value::Bool(true)) as i64 as f64)),
        (T::Boolean, T::Float) => |v| Ok(Value::Float(matches!(v, Value::Bool(true)) as i64 as f32)),
        (T::Int | T::Long | T::Double | T::Float, T::Boolean) => {
            |v| Ok(Value::Bool(v.as_f64().is_some_and(|x| x != 0.0)))
        }
        (T::Int | T::Long, T::Int) => |v| int_to_i32(v.as_i64().unwrap_or(0)),
        (T::Int | T::Long, T::Long) => |v| Ok(Value::Long(v.as_i64().unwrap_or(0))),
        (T::Int | T::Long | T::Float, T::Double) => |v| Ok(Value::Double(v.as_f64().unwrap_or(0.0))),
        (T::Int | T::Long | T::Double, T::Float) => |v| {
            Ok(Value::Float(match v {
                Value::Long(x) => *x as f32,
                _ => v.as_f64().unwrap_or(0.0) as f32,
            }))
        },
        (T::Double | T::Float, T::Int) => {
            |v| float_to_i64(v.as_f64().unwrap_or(0.0), i32::MIN as f64, i32::MAX as f64).map(|x| Value::Int(x as i32))
        }
        (T::Double | T::Float, T::Long) => {
            |v| float_to_i64(v.as_f64().unwrap_or(0.0), i64::MIN as f64, i64::MAX as f64).map(Value::Long)
        }
        // Spark's `longToTimestamp` (`TimeUnit.SECONDS.toMicros`) saturates at BIGINT's ends: no
        // error, under ANSI as under `try_cast`
        (T::Int | T::Long, T::Timestamp) => {
            |v| Ok(Value::Timestamp(Timestamp(v.as_i64().unwrap_or(0).saturating_mul(1_000_000))))
        }
        // Spark's `doubleToTimestampAnsi`: NaN and infinities are CAST_INVALID_INPUT; the
        // microseconds truncate toward zero, CAST_OVERFLOW past BIGINT's range (exactly 2^63
        // is still BIGINT's maximum, as Spark's `DoubleExactNumeric.toLong`)
        (T::Double | T::Float, T::Timestamp) => |v| {
            let x = v.as_f64().unwrap_or(0.0);
            if !x.is_finite() {
                return Err(CastInvalidInput);
            }
            float_to_i64(x * 1e6, i64::MIN as f64, i64::MAX as f64).map(|us| Value::Timestamp(Timestamp(us)))
        },
        (T::String, T::Date) => |v| match v {
            Value::Str(s) => parse_cast_date(s).map(Value::Date).ok_or(CastInvalidInput),
            _ => Err(CastInvalidInput),
        },
        (T::Date, T::Timestamp) => |v| match v {
            Value::Date(d) => micros_of_day(*d).map(|us| Value::Timestamp(Timestamp(us))).ok_or(ArithmeticOverflow),
            _ => Err(CastInvalidInput),
        },
        (T::Timestamp, T::Date) => |v| Ok(Value::Date(date_of_micros(ts(v)))),
        (T::Timestamp, T::Long) => |v| Ok(Value::Long(ts(v).div_euclid(1_000_000))),
        (T::Timestamp, T::Int) => |v| int_to_i32(ts(v).div_euclid(1_000_000)),
        (T::Timestamp, T::Double) => |v| Ok(Value::Double(ts(v) as f64 / 1e6)),
        (T::Timestamp, T::Float) => |v| Ok(Value::Float((ts(v) as f64 / 1e6) as f32)),
        _ => return None,
    })
}

/// Any cast of one non-null value from `from` to `to`: [`cast_fn`], or one into or out of
/// DECIMAL (which needs the target's precision and scale: `expr/decimal.rs`). `None` where
/// Spark's ANSI mode has no such cast.
pub(crate) fn caster(from: DataType, to: DataType) -> Option<super::decimal::Caster> {
    if from != to && matches!(from, DataType::Struct(_)) && from.same_ignoring_names(to) {
        // the same fields under the other names (equality and hashing see the names)
        return Some(Arc::new(move |v| Ok(renamed(v, to))));
    }
    if from != to
        && let Some(c) = super::decimal::caster(from, to)
    {
        return Some(c);
    }
    cast_fn(from, to).map(|f| Arc::new(f) as super::decimal::Caster)
}

/// `v` as a value of `to`, a type the same as its own but for the names of STRUCT fields
/// ([`DataType::same_ignoring_names`]): its fields, at every depth, under `to`'s names.
fn renamed(v: &Value, to: DataType) -> Value {
    match (v, to) {
        (Value::Struct(_, fields), DataType::Struct(t)) => Value::Struct(
            t,
            fields.iter().zip(t.fields()).map(|(v, f)| renamed(v, f.data_type)).collect::<Vec<_>>().into(),
        ),
        _ => v.clone(),
    }
}

fn scalar(t: DataType) -> bool {
    matches!(
        t,
        DataType::String
            | DataType::Int
            | DataType::Long
            | DataType::Double
            | DataType::Float
            | DataType::Boolean
            | DataType::Timestamp
            | DataType::Date
    )
}

fn ts(v: &Value) -> i64 {
    v.as_timestamp().map_or(0, |t| t.0)
}

fn int_to_i32(x: i64) -> Result<Value, EvalErrorKind> {
    i32::try_from(x).map(Value::Int).map_err(|_| CastOverflow)
}

/// Spark's float-to-integral cast: truncates toward zero; NaN, infinities and values outside the
/// range are CAST_OVERFLOW.
fn float_to_i64(x: f64, min: f64, max: f64) -> Result<i64, EvalErrorKind> {
    if x.is_nan() || x.floor() > max || x.ceil() < min {
        return Err(CastOverflow);
    }
    Ok(x.trunc() as i64)
}

/// Any scalar as Spark's CAST to STRING writes it.
pub(crate) fn to_string(v: &Value) -> Result<Value, EvalErrorKind> {
    Ok(Value::Str(match v {
        Value::Str(s) => s.clone(),
        Value::Bool(b) => Text::from(if *b { "true" } else { "false" }),
        Value::Int(x) => Text::from(x.to_string()),
        Value::Long(x) => Text::from(x.to_string()),
        Value::Double(x) => Text::from(java_double(*x)),
        Value::Float(x) => Text::from(java_float(*x)),
        Value::Timestamp(t) => Text::from(timestamp_string(t.0)),
        Value::Date(d) => Text::from(date_string(*d)),
        _ => return Err(CastInvalidInput),
    }))
}

/// Spark's `UTF8String.toLongExact`: trimmed ([`trim_spark`]), an optional sign, digits only.
fn str_to_i64(v: &Value) -> Result<i64, EvalErrorKind> {
    let s = trim_spark(v.as_str().unwrap_or(""));
    let digits = s.strip_prefix(['+', '-']).unwrap_or(s);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(CastInvalidInput);
    }
    s.parse::<i64>().map_err(|_| CastInvalidInput)
}

/// Spark's string-to-double: trimmed ([`trim_java`]); Java's number syntax (a trailing `d` / `f` allowed) and
/// `NaN`, `Infinity`, `inf` ignoring case. Hexadecimal floats are not accepted.
fn str_to_f64(v: &Value) -> Result<f64, EvalErrorKind> {
    let s = trim_java(v.as_str().unwrap_or(""));
    let lower = s.to_ascii_lowercase();
    match lower.as_str() {
        "nan" => return Ok(f64::NAN),
        "inf" | "+inf" | "infinity" | "+infinity" => return Ok(f64::INFINITY),
        "-inf" | "-infinity" => return Ok(f64::NEG_INFINITY),
        _ => {}
    }
    let body = s.strip_suffix(['d', 'D', 'f', 'F']).unwrap_or(s);
    let ok = !body.is_empty()
        && body.bytes().all(|b| b.is_ascii_digit() || matches!(b, b'+' | b'-' | b'.' | b'e' | b'E'))
        && body.bytes().any(|b| b.is_ascii_digit());
    if !ok {
        return Err(CastInvalidInput);
    }
    body.parse::<f64>().map_err(|_| CastInvalidInput)
}

/// Spark's string-to-boolean: `t`, `true`, `y`, `yes`, `1` / `f`, `false`, `n`, `no`, `0`,
/// ignoring case and surrounding whitespace.
fn str_to_bool(v: &Value) -> Result<Value, EvalErrorKind> {
    let s = trim_spark(v.as_str().unwrap_or("")).to_ascii_lowercase();
    match s.as_str() {
        "t" | "true" | "y" | "yes" | "1" => Ok(Value::Bool(true)),
        "f" | "false" | "n" | "no" | "0" => Ok(Value::Bool(false)),
        _ => Err(CastInvalidInput),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // Spark 4.3's answers, read with its pyspark from JSON files (generated code)
    #[test]
    fn integers_cast_to_timestamps_saturate_as_spark() {
        let cast = |x: i64| cast_fn(DataType::Long, DataType::Timestamp).map(|f| f(&Value::Long(x)));
        let ok = |us: i64| Some(Ok(Value::Timestamp(Timestamp(us))));
        assert_eq!(cast(-60), ok(-60_000_000));
        assert_eq!(cast(9_223_372_036_854_000_000), ok(i64::MAX));
        assert_eq!(cast(-1_705_312_800_000_000), ok(i64::MIN));
    }

    /// What Spark 4.3 strips around a number or a boolean before reading it (pyspark of the
    /// oracle's venv, `try_cast(s AS ...)`): U+007F as the whitespace below U+0020 for BIGINT and
    /// BOOLEAN (`UTF8String.trimAll`), but only the latter for DOUBLE (`String.trim`); no other
    /// character (U+0085, U+00A0).
    #[test]
    fn strings_are_trimmed_before_a_cast_as_spark_trims_them() {
        let long = |s: &str| cast_fn(DataType::String, DataType::Long).and_then(|f| f(&Value::Str(s.into())).ok());
        let double = |s: &str| cast_fn(DataType::String, DataType::Double).and_then(|f| f(&Value::Str(s.into())).ok());
        let boolean =
            |s: &str| cast_fn(DataType::String, DataType::Boolean).and_then(|f| f(&Value::Str(s.into())).ok());
        let spark: [(&str, Option<i64>, Option<f64>); 8] = [
            ("7\x7f", Some(7), None),
            ("\x7f7", Some(7), None),
            ("7\x01", Some(7), Some(7.0)),
            ("\x7f 7 \x7f", Some(7), None),
            ("7\u{85}", None, None),
            ("7\u{a0}", None, None),
            ("\x1f7\x1f", Some(7), Some(7.0)),
            ("\x7f", None, None),
        ];
        for (s, l, d) in spark {
            assert_eq!(long(s), l.map(Value::Long), "{s:?} AS BIGINT");
            assert_eq!(double(s), d.map(Value::Double), "{s:?} AS DOUBLE");
        }
        assert_eq!(boolean("true\x7f"), Some(Value::Bool(true)));
        assert_eq!(boolean("\x7ffalse"), Some(Value::Bool(false)));
    }

    #[test]
    fn doubles_cast_to_timestamps_as_spark_ansi() {
        let cast = |x: f64| cast_fn(DataType::Double, DataType::Timestamp).map(|f| f(&Value::Double(x)));
        let ok = |us: i64| Some(Ok(Value::Timestamp(Timestamp(us))));
        assert_eq!(cast(-0.75), ok(-750_000));
        assert_eq!(cast(1.0000005), ok(1_000_000));
        assert_eq!(cast(-1.0000005), ok(-1_000_000));
        // 2^63 µs as a DOUBLE is still BIGINT's maximum; just below -2^63 is not
        assert_eq!(cast(9_223_372_036_854.775), ok(i64::MAX));
        assert_eq!(cast(-9_223_372_036_854.775), ok(i64::MIN));
        assert_eq!(cast(-9.223372036854777e12), Some(Err(CastOverflow)));
        assert_eq!(cast(1e20), Some(Err(CastOverflow)));
        assert_eq!(cast(f64::MAX), Some(Err(CastOverflow)));
        for x in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
            assert_eq!(cast(x), Some(Err(CastInvalidInput)), "{x}");
        }
    }
}
