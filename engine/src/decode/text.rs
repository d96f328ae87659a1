//! Scalar conversions shared by the JSON and CSV decoders.

use std::sync::Arc;

use crate::schema::DataType;
use crate::time::{TimeUnit, Timestamp};
use crate::value::Value;

use super::{Column, DecodeError, quote};

/// The strings Spark's JSON reader accepts for non-finite DOUBLE / FLOAT values
/// (`allowNonNumericNumbers`, on by default): `NaN`, `Infinity`, `+Infinity`, `+INF`,
/// `-Infinity`, `-INF`. Case-sensitive, as Spark matches them.
pub(crate) fn non_finite(s: &str) -> Option<f64> {
    match s {
        "NaN" => Some(f64::NAN),
        "Infinity" | "+Infinity" | "+INF" => Some(f64::INFINITY),
        "-Infinity" | "-INF" => Some(f64::NEG_INFINITY),
        _ => None,
    }
}

/// An optionally negative run of ASCII digits as i64; `None` on overflow or any other byte.
/// (Hand-written: `str::parse` also takes a leading `+`, which JSON does not.)
pub(crate) fn parse_i64(s: &str) -> Option<i64> {
    let b = s.as_bytes();
    let (neg, digits) = match b.first() {
        Some(b'-') => (true, &b[1..]),
        _ => (false, b),
    };
    if digits.is_empty() {
        return None;
    }
    let mut acc: u64 = 0;
    for &c in digits {
        if !c.is_ascii_digit() {
            return None;
        }
        acc = acc.checked_mul(10)?.checked_add((c - b'0') as u64)?;
    }
    if neg {
        if acc <= i64::MAX as u64 + 1 { Some((acc as i64).wrapping_neg()) } else { None }
    } else {
        i64::try_from(acc).ok()
    }
}

/// The value of an integer text for an integral or timestamp column.
pub(crate) fn integer_value(col: &Column, text: &str, unit: TimeUnit) -> Result<Value, DecodeError> {
    let out_of_range =
        || DecodeError::OutOfRange { column: col.name.to_string(), expected: col.ty, given: quote(text) };
    if matches!(col.ty, DataType::Double | DataType::Float) {
        // Any size: an integer beyond i64 is still a double (Jackson's getDoubleValue).
        return fraction_value(col, text, unit);
    }
    let n = parse_i64(text).ok_or_else(out_of_range)?;
    match col.ty {
        DataType::Long => Ok(Value::Long(n)),
        DataType::Int => i32::try_from(n).map(Value::Int).map_err(|_| out_of_range()),
        DataType::Timestamp => Timestamp::from_integer(n, unit).map(Value::Timestamp).ok_or_else(out_of_range),
        _ => Err(wrong(col, text, "a number")),
    }
}

/// The value of a number text (already checked to be a number) with a fraction or exponent, or
/// any number for a DOUBLE / FLOAT column.
pub(crate) fn fraction_value(col: &Column, text: &str, unit: TimeUnit) -> Result<Value, DecodeError> {
    let Ok(v) = text.parse::<f64>() else {
        return Err(wrong(col, text, "not a number"));
    };
    match col.ty {
        DataType::Double => Ok(Value::Double(v)),
        // As Jackson's getFloatValue: the double, narrowed.
        DataType::Float => Ok(Value::Float(v as f32)),
        DataType::Timestamp => Timestamp::from_number(v, unit).map(Value::Timestamp).ok_or_else(|| {
            DecodeError::OutOfRange { column: col.name.to_string(), expected: col.ty, given: quote(text) }
        }),
        DataType::Long | DataType::Int => Err(wrong(col, text, "a number with a fraction or exponent")),
        _ => Err(wrong(col, text, "a number")),
    }
}

/// The value of a string for a TIMESTAMP, DOUBLE, FLOAT or STRING column.
pub(crate) fn string_value(col: &Column, text: &str, raw: &str) -> Result<Value, DecodeError> {
    match col.ty {
        DataType::String => Ok(Value::Str(Arc::from(text))),
        DataType::Timestamp => timestamp_value(col, text),
        DataType::Double => non_finite(text)
            .map(Value::Double)
            .ok_or_else(|| wrong(col, raw, "a string (only \"NaN\", \"Infinity\", \"-Infinity\" are numbers)")),
        DataType::Float => non_finite(text)
            .map(|v| Value::Float(v as f32))
            .ok_or_else(|| wrong(col, raw, "a string (only \"NaN\", \"Infinity\", \"-Infinity\" are numbers)")),
        DataType::Long | DataType::Int => Err(wrong(col, raw, "a string, not a JSON number")),
        DataType::Boolean => Err(wrong(col, raw, "a string, not true or false")),
        _ => Err(wrong(col, raw, "a type that input cannot hold")),
    }
}

/// A timestamp string.
pub(crate) fn timestamp_value(col: &Column, text: &str) -> Result<Value, DecodeError> {
    crate::time::parse_timestamp(text).map(Value::Timestamp).map_err(|e| {
        let why = match e {
            crate::time::TimeError::BadTimestamp { why, .. } => why,
            crate::time::TimeError::BadDuration { .. } => "not a timestamp",
        };
        DecodeError::BadTimestamp { column: col.name.to_string(), given: quote(text), why }
    })
}

/// A [`DecodeError::WrongType`] for `col` given `given`.
pub(crate) fn wrong(col: &Column, given: &str, why: &'static str) -> DecodeError {
    DecodeError::WrongType { column: col.name.to_string(), expected: col.ty, given: quote(given), why }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_i64_covers_the_whole_range_and_refuses_overflow() {
        assert_eq!(parse_i64("0"), Some(0));
        assert_eq!(parse_i64("-0"), Some(0));
        assert_eq!(parse_i64("9223372036854775807"), Some(i64::MAX));
        assert_eq!(parse_i64("-9223372036854775808"), Some(i64::MIN));
        for bad in ["9223372036854775808", "-9223372036854775809", "99999999999999999999999", "", "-", "+1", "1a"] {
            assert_eq!(parse_i64(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn non_finite_spellings_are_sparks() {
        assert!(non_finite("NaN").is_some_and(f64::is_nan));
        for s in ["Infinity", "+Infinity", "+INF"] {
            assert_eq!(non_finite(s), Some(f64::INFINITY), "{s}");
        }
        for s in ["-Infinity", "-INF"] {
            assert_eq!(non_finite(s), Some(f64::NEG_INFINITY), "{s}");
        }
        for s in ["nan", "inf", "INF", "infinity", "", "1"] {
            assert_eq!(non_finite(s), None, "{s}");
        }
    }
}
