//! DECIMAL in expressions: Spark's type rules for decimal operands (`DecimalPrecision` with
//! `spark.sql.decimalOperations.allowPrecisionLoss = true`, checked against Spark 4.3 with the
//! oracle's pyspark), the casts to and from DECIMAL, and the kernels behind
//! [`Func::DecimalArith`], [`Func::DecimalIntDiv`] and [`Func::DecimalRound`].
//!
//! - An INT operand is DECIMAL(10, 0), a BIGINT DECIMAL(20, 0); an integer literal meeting a
//!   DECIMAL in arithmetic is DECIMAL(its digits, 0) (`spark.sql.legacy.literal.
//!   pickMinimumPrecision`, on by default: `CAST(1 AS DECIMAL(3,2)) + 1` is DECIMAL(4, 2)).
//! - A DECIMAL meeting a FLOAT or DOUBLE is DOUBLE.
//! - Overflow of a result or of a cast is NUMERIC_VALUE_OUT_OF_RANGE, as Spark under ANSI; a
//!   DECIMAL cast to an integer type out of its range is CAST_OVERFLOW.

use crate::value::Text;
use std::sync::Arc;

use super::EvalErrorKind::{self, CastInvalidInput, CastOverflow, DivideByZero, NumericValueOutOfRange};
use super::bind::{Binder, call, coerce, is_null_literal};
use super::functions::{ArithOp, CmpOp, Func};
use super::{Node, Typed};
use crate::decimal::{self, Decimal, DecimalError, DecimalOp, Rounding};
use crate::schema::DataType;
use crate::time::Timestamp;
use crate::value::Value;

fn dec(p: u8, s: u8) -> DataType {
    DataType::Decimal { precision: p, scale: s }
}

/// The decimal type an integral or decimal type widens to (INT DECIMAL(10, 0), BIGINT
/// DECIMAL(20, 0): Spark's `DecimalType.forType`).
pub(super) fn as_decimal(t: DataType) -> Option<(u8, u8)> {
    match t {
        DataType::Decimal { precision, scale } => Some((precision, scale)),
        DataType::Int => Some((10, 0)),
        DataType::Long => Some((20, 0)),
        _ => None,
    }
}

/// The wider type of two types when one is a DECIMAL (`None` when neither is): DOUBLE with a
/// FLOAT or DOUBLE, the wider decimal with an integer or a decimal (Spark's
/// `widerDecimalType`), `Some(None)` when they do not meet.
pub(super) fn wider(a: DataType, b: DataType) -> Option<Option<DataType>> {
    use DataType as T;
    if !matches!(a, T::Decimal { .. }) && !matches!(b, T::Decimal { .. }) {
        return None;
    }
    Some(match (a, b) {
        (T::Float | T::Double, _) | (_, T::Float | T::Double) => Some(T::Double),
        _ => match (as_decimal(a), as_decimal(b)) {
            (Some(x), Some(y)) => {
                let (p, s) = decimal::wider_type(x, y);
                Some(dec(p, s))
            }
            _ => None,
        },
    })
}

/// The decimal type of an arithmetic operand meeting a DECIMAL: an integer literal takes the
/// fewest digits that hold it; `None` for a non-decimal, non-integral operand.
fn operand_type(t: &Typed) -> Option<(u8, u8)> {
    match t.node {
        Node::Literal(Value::Int(v)) => Some((digits(v as i128), 0)),
        Node::Literal(Value::Long(v)) => Some((digits(v as i128), 0)),
        _ => as_decimal(t.data_type),
    }
}

fn digits(v: i128) -> u8 {
    v.unsigned_abs().checked_ilog10().map_or(1, |d| d as u8 + 1)
}

/// An order comparison of a DECIMAL literal with an INT or BIGINT operand, as Spark rewrites it
/// (checked with Spark 4.3): the literal becomes the integer that gives the same answer for every
/// integer operand, and is named so: `1.5 > i` is `(2 > i)`, `0.5 < 1` is `(0 < 1)`, `x >= 2.5`
/// is `(x >= 3)`. Other comparisons are returned as they are.
pub(super) fn integral_bound(op: CmpOp, l: Typed, r: Typed) -> (Typed, Typed) {
    let lit = |t: &Typed| match t.node {
        Node::Literal(Value::Decimal(d)) => Some(d),
        _ => None,
    };
    let integral = |t: &Typed| matches!(t.data_type, DataType::Int | DataType::Long) && !is_null_literal(t);
    // whether the literal must be the larger side, and whether strictly
    let (strict, left_larger) = match op {
        CmpOp::Gt => (true, true),
        CmpOp::GtEq => (false, true),
        CmpOp::Lt => (true, false),
        CmpOp::LtEq => (false, false),
        CmpOp::Eq => return (l, r),
    };
    let bound = |d: Decimal, larger: bool| {
        // larger side: `lit > x` is `ceil(lit) > x`, `lit >= x` is `floor(lit) >= x`; the
        // smaller side the other way round
        let mode = if larger == strict { Rounding::Ceil } else { Rounding::Floor };
        let n = d.round(0, mode, decimal::MAX_PRECISION, 0).ok()?.unscaled;
        let v = match i32::try_from(n) {
            Ok(i) => (Value::Int(i), DataType::Int),
            Err(_) => (Value::Long(i64::try_from(n).ok()?), DataType::Long),
        };
        Some(Typed { node: Node::Literal(v.0), data_type: v.1, name: n.to_string() })
    };
    match (lit(&l), lit(&r)) {
        (Some(d), None) if integral(&r) => match bound(d, left_larger) {
            Some(b) => (b, r),
            None => (l, r),
        },
        (None, Some(d)) if integral(&l) => match bound(d, !left_larger) {
            Some(b) => (l, b),
            None => (l, r),
        },
        _ => (l, r),
    }
}

/// The error condition of a failed decimal operation.
pub(super) fn eval_error(e: DecimalError) -> EvalErrorKind {
    match e {
        DecimalError::Invalid => CastInvalidInput,
        DecimalError::OutOfRange => NumericValueOutOfRange,
        DecimalError::DivideByZero => DivideByZero,
    }
}

impl Binder<'_> {
    /// Arithmetic where a DECIMAL meets a DECIMAL or an integer (`None` otherwise: the caller's
    /// integral / floating rules apply). `op` `None` is `/`.
    pub(super) fn decimal_arith(
        &self,
        op: Option<ArithOp>,
        try_: bool,
        l: &Typed,
        r: &Typed,
        name: &str,
    ) -> Option<Typed> {
        let has_decimal =
            matches!(l.data_type, DataType::Decimal { .. }) || matches!(r.data_type, DataType::Decimal { .. });
        if !has_decimal {
            return None;
        }
        let ty_of = |t: &Typed, other: &Typed| if is_null_literal(t) { operand_type(other) } else { operand_type(t) };
        let (a, b) = (ty_of(l, r)?, ty_of(r, l)?);
        let (l, r) = (coerce(l.clone(), dec(a.0, a.1)), coerce(r.clone(), dec(b.0, b.1)));
        let (dop, (p, s)) = match op {
            None => (DecimalOp::Div, decimal::div_type(a, b)),
            Some(ArithOp::Add) => (DecimalOp::Add, decimal::add_type(a, b)),
            Some(ArithOp::Sub) => (DecimalOp::Sub, decimal::add_type(a, b)),
            Some(ArithOp::Mul) => (DecimalOp::Mul, decimal::mul_type(a, b)),
            Some(ArithOp::Rem) => (DecimalOp::Rem, decimal::rem_type(a, b)),
            Some(ArithOp::Pmod) => (DecimalOp::Pmod, decimal::rem_type(a, b)),
            Some(ArithOp::IntDiv) => {
                return Some(call(Func::DecimalIntDiv { try_ }, vec![l, r], DataType::Long, name.to_string()));
            }
        };
        let func = Func::DecimalArith { op: dop, try_, precision: p, scale: s };
        Some(call(func, vec![l, r], dec(p, s), name.to_string()))
    }

    /// `round` / `bround` (`places`) and `floor` / `ceil` (`None`) of a DECIMAL, typed as Spark's
    /// `RoundBase` / `Floor` / `Ceil`.
    pub(super) fn decimal_round(&self, x: Typed, places: Option<i64>, mode: Rounding, name: String) -> Typed {
        let Some(t) = x.data_type.decimal() else {
            return x;
        };
        let (p, s) = match places {
            Some(d) => decimal::round_type(t, d),
            None => decimal::floor_ceil_type(t),
        };
        let func = Func::DecimalRound { places: places.unwrap_or(0), mode, precision: p, scale: s };
        call(func, vec![x], dec(p, s), name)
    }
}

/// [`Func::DecimalArith`] on two non-null decimals.
pub(super) fn arith(op: DecimalOp, a: &Value, b: &Value, precision: u8, scale: u8) -> Result<Value, EvalErrorKind> {
    let (Value::Decimal(x), Value::Decimal(y)) = (a, b) else {
        return Ok(Value::Null);
    };
    decimal::arith(op, *x, *y, precision, scale).map(Value::Decimal).map_err(eval_error)
}

/// [`Func::DecimalIntDiv`]: the quotient truncated toward zero, as BIGINT (ARITHMETIC_OVERFLOW
/// past it).
pub(super) fn int_div(a: &Value, b: &Value) -> Result<Value, EvalErrorKind> {
    let (Value::Decimal(x), Value::Decimal(y)) = (a, b) else {
        return Ok(Value::Null);
    };
    match decimal::div_trunc(*x, *y) {
        Ok(q) => Ok(Value::Long(q)),
        Err(DecimalError::OutOfRange) => Err(EvalErrorKind::ArithmeticOverflow),
        Err(e) => Err(eval_error(e)),
    }
}

/// [`Func::DecimalRound`] on a non-null decimal.
pub(super) fn round(v: &Value, places: i64, mode: Rounding, precision: u8, scale: u8) -> Result<Value, EvalErrorKind> {
    let Value::Decimal(x) = v else {
        return Ok(Value::Null);
    };
    x.round(places, mode, precision, scale).map(Value::Decimal).map_err(eval_error)
}

/// A cast of one non-null value that needs the target's precision and scale.
pub(crate) type Caster = Arc<dyn Fn(&Value) -> Result<Value, EvalErrorKind> + Send + Sync>;

/// The casts into and out of DECIMAL (Spark's ANSI `Cast`): from STRING (trimmed, Java's
/// `BigDecimal` syntax, CAST_INVALID_INPUT otherwise), integers, FLOAT / DOUBLE (their shortest
/// decimal form, as Spark's `Decimal(double)`; NaN and infinities are CAST_INVALID_INPUT),
/// BOOLEAN, TIMESTAMP (its exact seconds, six digits after the point) and other decimals,
/// rounding HALF_UP and NUMERIC_VALUE_OUT_OF_RANGE when the value does not fit; to STRING (the
/// plain form), integers (truncated; CAST_OVERFLOW out of range), FLOAT / DOUBLE (nearest),
/// BOOLEAN (non-zero) and TIMESTAMP (seconds: [`cast_micros`]). `None` when neither side is a
/// DECIMAL or the cast does not exist (DECIMAL with DATE).
pub(crate) fn caster(from: DataType, to: DataType) -> Option<Caster> {
    use DataType as T;
    if let Some((p, s)) = to.decimal() {
        let fit = move |r: Result<Decimal, DecimalError>| r.map(Value::Decimal).map_err(eval_error);
        return Some(match from {
            T::Decimal { .. } => Arc::new(move |v| match v {
                Value::Decimal(d) => fit(d.rescale(p, s, Rounding::HalfUp)),
                _ => Err(CastInvalidInput),
            }),
            T::Int | T::Long => Arc::new(move |v| fit(Decimal::from_i128(v.as_i64().unwrap_or(0) as i128, p, s))),
            T::Boolean => Arc::new(move |v| fit(Decimal::from_i128(matches!(v, Value::Bool(true)) as i128, p, s))),
            T::String => Arc::new(move |v| fit(Decimal::parse(super::text::trim_java(v.as_str().unwrap_or("")), p, s))),
            // Spark 4.3 casts the exact microseconds (checked with its pyspark: 9999-12-31
            // 23:59:59.999999 is 253402300799.999999, which a DOUBLE cannot hold)
            T::Timestamp => Arc::new(move |v| match v {
                Value::Timestamp(t) => fit(Decimal::new(t.0 as i128, 6).rescale(p, s, Rounding::HalfUp)),
                _ => Err(CastInvalidInput),
            }),
            T::Double | T::Float => Arc::new(move |v| {
                let x = v.as_f64().unwrap_or(0.0);
                if !x.is_finite() {
                    return Err(CastInvalidInput);
                }
                // Spark widens a FLOAT to its exact DOUBLE value first (`Decimal(f.toDouble)`),
                // then takes that DOUBLE's Java text: 0.145f is 0.14499999582767487, so
                // CAST(0.145f AS DECIMAL(10, 2)) is 0.14, not the 0.15 of the float's own text
                fit(Decimal::parse(&super::text::java_double(x), p, s))
            }),
            _ => return None,
        });
    }
    let T::Decimal { .. } = from else {
        return None;
    };
    let d = |v: &Value| match v {
        Value::Decimal(d) => Ok(*d),
        _ => Err(CastInvalidInput),
    };
    Some(match to {
        T::String => Arc::new(move |v| Ok(Value::Str(Text::from(d(v)?.to_string())))),
        T::Long => Arc::new(move |v| i64::try_from(d(v)?.trunc()).map(Value::Long).map_err(|_| CastOverflow)),
        // Spark's Decimal.roundToInt: a DECIMAL of more than 18 digits (held as a BigDecimal)
        // goes through its DOUBLE (0.999999999999999999 is 1), a shorter one truncates exactly
        T::Int if from.decimal().is_some_and(|(p, _)| p > 18) => Arc::new(move |v| {
            let x = d(v)?.to_f64();
            if x.floor() <= i32::MAX as f64 && x.ceil() >= i32::MIN as f64 {
                Ok(Value::Int(x as i32))
            } else {
                Err(CastOverflow)
            }
        }),
        T::Int => Arc::new(move |v| i32::try_from(d(v)?.trunc()).map(Value::Int).map_err(|_| CastOverflow)),
        T::Double => Arc::new(move |v| Ok(Value::Double(d(v)?.to_f64()))),
        T::Float => Arc::new(move |v| Ok(Value::Float(d(v)?.to_string().parse::<f32>().unwrap_or(f32::NAN)))),
        T::Boolean => Arc::new(move |v| Ok(Value::Bool(d(v)?.signum() != 0))),
        T::Timestamp => Arc::new(move |v| Ok(Value::Timestamp(Timestamp(cast_micros(d(v)?))))),
        _ => return None,
    })
}

/// `CAST(d AS TIMESTAMP)` of a DECIMAL `d` of seconds, as Spark's `Cast.decimalToTimestamp`:
/// `(d * 1000000).longValue` of Java's `BigDecimal`, that is the microseconds truncated toward
/// zero and, beyond BIGINT, only their low 64 bits (no error, under ANSI as under `try_cast`:
/// Spark 4.3 casts 1e20 to the timestamp of -2537764290115403776 µs, and 2^63 µs to BIGINT's
/// minimum).
pub(crate) fn cast_micros(d: Decimal) -> i64 {
    let (unscaled, scale) = (d.unscaled, d.scale as u32);
    if scale >= 6 {
        (unscaled / decimal::pow10(scale - 6)) as i64
    } else {
        // the low 64 bits of a product depend only on the low bits of its factors
        unscaled.wrapping_mul(decimal::pow10(6 - scale)) as i64
    }
}

/// `timestamp_seconds(d)` of a DECIMAL `d`, as Spark's `SecondsToTimestamp`: the exact
/// microseconds.
///
/// # Errors
/// DATETIME_OVERFLOW when they are beyond BIGINT's range (checked first, so
/// `timestamp_seconds(1e20 + 0.5)` is an overflow); then
/// [`EvalErrorKind::RoundingNecessary`] when `d` has digits below the microsecond
/// (`timestamp_seconds(1.0000005)`: Java's `longValueExact`).
pub(crate) fn seconds_micros(d: Decimal) -> Result<i64, EvalErrorKind> {
    let (unscaled, scale) = (d.unscaled, d.scale as u32);
    let (whole, below) = if scale >= 6 {
        let k = decimal::pow10(scale - 6);
        (unscaled / k, unscaled % k)
    } else {
        (unscaled.checked_mul(decimal::pow10(6 - scale)).ok_or(EvalErrorKind::DatetimeOverflow)?, 0)
    };
    // `whole` truncates toward zero: a remainder pushes the exact value past it, away from zero
    let us = i64::try_from(whole).map_err(|_| EvalErrorKind::DatetimeOverflow)?;
    if (us == i64::MAX && below > 0) || (us == i64::MIN && below < 0) {
        return Err(EvalErrorKind::DatetimeOverflow);
    }
    if below != 0 {
        return Err(EvalErrorKind::RoundingNecessary);
    }
    Ok(us)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cast(from: DataType, to: DataType, v: Value) -> Result<Value, EvalErrorKind> {
        let f = caster(from, to).unwrap_or_else(|| panic!("no cast {from} -> {to}"));
        f(&v)
    }

    #[test]
    fn casts_into_decimal_round_half_up_and_fail_as_spark_ansi() {
        let to = dec(4, 1);
        let s = |t: &str| Value::Str(Text::from(t));
        assert_eq!(cast(DataType::String, to, s(" 12.35 ")), Ok(Value::Decimal(Decimal::new(124, 1))));
        assert_eq!(cast(DataType::String, to, s("abc")), Err(CastInvalidInput));
        assert_eq!(cast(DataType::String, to, s("12345.678")), Err(NumericValueOutOfRange));
        assert_eq!(cast(DataType::Double, to, Value::Double(0.15)), Ok(Value::Decimal(Decimal::new(2, 1))));
        assert_eq!(cast(DataType::Double, to, Value::Double(1e50)), Err(NumericValueOutOfRange));
        assert_eq!(cast(DataType::Int, to, Value::Int(999)), Ok(Value::Decimal(Decimal::new(9990, 1))));
        assert_eq!(cast(DataType::Int, to, Value::Int(1000)), Err(NumericValueOutOfRange));
        assert_eq!(
            cast(dec(10, 3), to, Value::Decimal(Decimal::new(-1250, 3))),
            Ok(Value::Decimal(Decimal::new(-13, 1)))
        );
    }

    #[test]
    fn casts_out_of_decimal_truncate_or_overflow() {
        let v = Value::Decimal(Decimal::new(-12345, 2));
        assert_eq!(cast(dec(10, 2), DataType::Long, v.clone()), Ok(Value::Long(-123)));
        assert_eq!(cast(dec(10, 2), DataType::Double, v.clone()), Ok(Value::Double(-123.45)));
        assert_eq!(cast(dec(10, 2), DataType::String, v), Ok(Value::Str(Text::from("-123.45"))));
        let big = Value::Decimal(Decimal::new(3_000_000_000, 0));
        assert_eq!(cast(dec(10, 0), DataType::Int, big), Err(CastOverflow));
    }

    // every value below is Spark 4.3's, read with its pyspark from JSON files (generated code)
    #[test]
    fn timestamps_cast_to_decimal_exactly_then_round_half_up() {
        let ts = |us: i64| Value::Timestamp(Timestamp(us));
        let to = |p: u8, s: u8, us: i64| cast(DataType::Timestamp, dec(p, s), ts(us));
        let ok = |u: i128, s: u8| Ok(Value::Decimal(Decimal::new(u, s)));
        // 9999-12-31 23:59:59.999999: more digits than a DOUBLE holds
        assert_eq!(to(20, 6, 253_402_300_799_999_999), ok(253_402_300_799_999_999, 6));
        assert_eq!(to(20, 5, 1_705_312_800_999_995), ok(170_531_280_100_000, 5));
        assert_eq!(to(20, 5, -5), ok(-1, 5));
        assert_eq!(to(20, 0, -500_000), ok(-1, 0));
        assert_eq!(to(20, 1, -750_000), ok(-8, 1));
        assert_eq!(to(38, 18, 1_705_312_800_123_456), ok(1_705_312_800_123_456_000_000_000_000, 18));
        assert_eq!(to(12, 1, 253_402_300_799_999_999), Err(NumericValueOutOfRange));
        assert_eq!(to(5, 0, 1_705_312_800_123_456), Err(NumericValueOutOfRange));
    }

    #[test]
    fn decimals_cast_to_timestamps_truncate_and_wrap_as_spark() {
        let us = |u: i128, s: u8| cast(dec(38, s), DataType::Timestamp, Value::Decimal(Decimal::new(u, s)));
        let ok = |us: i64| Ok(Value::Timestamp(Timestamp(us)));
        assert_eq!(us(15, 1), ok(1_500_000));
        assert_eq!(us(-10_000_005, 7), ok(-1_000_000));
        assert_eq!(us(5, 7), ok(0));
        assert_eq!(us(-15, 7), ok(-1));
        assert_eq!(us(253_402_300_800, 0), ok(253_402_300_800_000_000));
        // beyond BIGINT microseconds: the low 64 bits, never an error
        assert_eq!(us(100_000_000_000_000_000_000, 0), ok(-2_537_764_290_115_403_776));
        assert_eq!(us(1_000_000_000_000_000_000_000_000_000, 7), ok(-2_537_764_290_115_403_776));
        assert_eq!(us(92_233_720_368_547_758_070, 7), ok(i64::MAX));
        assert_eq!(us(92_233_720_368_547_758_080, 7), ok(i64::MIN));
        assert_eq!(us(184_467_440_737_095_516_160, 7), ok(0));
        assert_eq!(us(-184_467_440_737_095_516_170, 7), ok(-1));
        // (10^38 - 1) * 10^6 mod 2^64 (computed in Python): no i128 overflow on the way
        assert_eq!(us(99_999_999_999_999_999_999_999_999_999_999_999_999, 0), ok(80_237_960_547_581_376));
    }

    #[test]
    fn seconds_of_a_decimal_are_exact_or_fail_as_spark() {
        let s = |u: i128, scale: u8| seconds_micros(Decimal::new(u, scale));
        assert_eq!(s(15, 1), Ok(1_500_000));
        assert_eq!(s(-5, 1), Ok(-500_000));
        assert_eq!(s(9_223_372_036_854_775_807, 6), Ok(i64::MAX));
        assert_eq!(s(-9_223_372_036_854_775_808, 6), Ok(i64::MIN));
        assert_eq!(s(92_233_720_368_547_758_070, 7), Ok(i64::MAX));
        assert_eq!(s(10_000_005, 7), Err(EvalErrorKind::RoundingNecessary));
        assert_eq!(s(-15, 7), Err(EvalErrorKind::RoundingNecessary));
        // the range is checked before the digits below the microsecond
        assert_eq!(s(1_000_000_000_000_000_000_005, 1), Err(EvalErrorKind::DatetimeOverflow));
        assert_eq!(s(92_233_720_368_547_758_075, 7), Err(EvalErrorKind::DatetimeOverflow));
        assert_eq!(s(-92_233_720_368_547_758_085, 7), Err(EvalErrorKind::DatetimeOverflow));
        assert_eq!(s(100_000_000_000_000_000_000, 0), Err(EvalErrorKind::DatetimeOverflow));
        assert_eq!(s(10i128.pow(37), 0), Err(EvalErrorKind::DatetimeOverflow));
    }

    #[test]
    fn integer_literals_take_their_own_digits() {
        assert_eq!(digits(0), 1);
        assert_eq!(digits(9), 1);
        assert_eq!(digits(-10), 2);
        assert_eq!(digits(i64::MIN as i128), 19);
    }
}
