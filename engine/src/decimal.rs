//! DECIMAL(p, s) values as Spark computes them (SQL.md "Types"): an exact unscaled integer and a
//! scale, at most [`MAX_PRECISION`] digits. Parsing and every change of scale round HALF_UP, as
//! Spark's `Decimal.changePrecision` (`bround` rounds HALF_EVEN); a value that needs more digits
//! than its type allows is [`DecimalError::OutOfRange`] (Spark's NUMERIC_VALUE_OUT_OF_RANGE under
//! ANSI mode).
//!
//! The result types of arithmetic are Spark's `DecimalPrecision` rules with
//! `spark.sql.decimalOperations.allowPrecisionLoss = true` ([`add_type`], [`mul_type`],
//! [`div_type`], [`rem_type`], each bounded by [`adjust`]). Intermediate results are exact
//! (`num-bigint`: a product of two 38-digit numbers has 77 digits), then rounded once to the
//! result's scale.

use std::cmp::Ordering;
use std::fmt;

use num_bigint::BigInt;
use num_traits::{Signed, ToPrimitive, Zero};
use serde::{Deserialize, Serialize};

/// The most digits a DECIMAL holds (Spark's `DecimalType.MAX_PRECISION`).
pub const MAX_PRECISION: u8 = 38;

/// Spark's smallest scale kept when a result type is cut to 38 digits
/// (`DecimalType.MINIMUM_ADJUSTED_SCALE`).
const MIN_ADJUSTED_SCALE: u32 = 6;

/// One DECIMAL value: `unscaled × 10^-scale`. Its precision is the column's (the type's), not
/// stored; `|unscaled| < 10^38` for every value the engine makes. Equality and order are by
/// numeric value (`1.50` equals `1.5`), as Spark compares decimals of different scales.
///
/// Aligned to 4 bytes, not to `i128`'s 16, so that it takes 20 bytes and fits in a [`Value`]
/// beside the value's tag: a `Value` is 24 bytes, where a 16-byte aligned `i128` made it 48 and
/// an 8-byte aligned one 32 (a test holds the size). Its fields are read by value; a reference
/// to `unscaled` would be unaligned, and the compiler refuses one.
///
/// [`Value`]: crate::value::Value
#[derive(Clone, Copy, Debug, Serialize, Deserialize)]
#[repr(C, packed(4))]
pub struct Decimal {
    /// The digits as an integer.
    pub unscaled: i128,
    /// Digits after the decimal point (0..=38).
    pub scale: u8,
}

/// Why a text or a number does not make a DECIMAL of the wanted type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DecimalError {
    /// Not a number (Spark's CAST_INVALID_INPUT).
    Invalid,
    /// More integral digits than the precision leaves (Spark's NUMERIC_VALUE_OUT_OF_RANGE).
    OutOfRange,
    /// A zero divisor (Spark's DIVIDE_BY_ZERO).
    DivideByZero,
}

/// How a value loses digits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rounding {
    /// Half away from zero (`round`, every implicit change of scale).
    HalfUp,
    /// Half to even (`bround`).
    HalfEven,
    /// Toward negative infinity (`floor`).
    Floor,
    /// Toward positive infinity (`ceil`).
    Ceil,
    /// Toward zero (casts to integers).
    Down,
}

/// Arithmetic operators on decimals.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DecimalOp {
    /// `+`
    Add,
    /// `-`
    Sub,
    /// `*`
    Mul,
    /// `/`
    Div,
    /// `%` (the sign of the dividend, as Java's `BigDecimal.remainder`)
    Rem,
    /// `pmod` (a non-negative result for a positive divisor)
    Pmod,
}

const fn pow10_table() -> [i128; 39] {
    let mut t = [1i128; 39];
    let mut i = 1;
    while i < 39 {
        t[i] = t[i - 1] * 10;
        i += 1;
    }
    t
}

const POW10: [i128; 39] = pow10_table();

/// 10^n for n in 0..=38.
///
/// # Panics
/// When `n > 38` (a bug: scales and precisions are bounded by [`MAX_PRECISION`]).
pub fn pow10(n: u32) -> i128 {
    POW10[n as usize]
}

fn big_pow10(n: u32) -> BigInt {
    num_traits::pow(BigInt::from(10), n as usize)
}

/// `n / 10^k` rounded as `mode` says.
fn div_pow10(n: &BigInt, k: u32, mode: Rounding) -> BigInt {
    if k == 0 {
        return n.clone();
    }
    div_round(n, &big_pow10(k), mode)
}

/// `n / d` rounded as `mode` says (`d` not zero).
fn div_round(n: &BigInt, d: &BigInt, mode: Rounding) -> BigInt {
    let q = n / d;
    let r = n - &q * d;
    if r.is_zero() {
        return q;
    }
    let negative = n.is_negative() != d.is_negative();
    let away = match mode {
        Rounding::Down => false,
        Rounding::Floor => negative,
        Rounding::Ceil => !negative,
        Rounding::HalfUp | Rounding::HalfEven => {
            let twice = r.abs() * 2u8;
            match twice.cmp(&d.abs()) {
                Ordering::Greater => true,
                Ordering::Less => false,
                Ordering::Equal => mode == Rounding::HalfUp || (&q % 2u8) != BigInt::zero(),
            }
        }
    };
    if !away {
        q
    } else if negative {
        q - 1u8
    } else {
        q + 1u8
    }
}

/// `n` at scale `from` re-expressed at scale `to` (both may be negative), rounding as `mode`.
fn shift(n: &BigInt, from: i64, to: i64, mode: Rounding) -> BigInt {
    match to.cmp(&from) {
        Ordering::Equal => n.clone(),
        Ordering::Greater => n * big_pow10((to - from) as u32),
        Ordering::Less => {
            let k = (from - to) as u32;
            // past its own digits a division by 10^k only decides the rounding of zero
            let digits = n.abs().to_string().len() as u32;
            if k > digits + 1 { div_round(&n.signum(), &BigInt::from(10), mode) } else { div_pow10(n, k, mode) }
        }
    }
}

/// A value of the type (precision, scale) from an exact unscaled integer, or out of range.
fn fit(n: BigInt, precision: u8, scale: u8) -> Result<Decimal, DecimalError> {
    let unscaled = n.to_i128().ok_or(DecimalError::OutOfRange)?;
    let d = Decimal { unscaled, scale };
    if d.fits(precision) { Ok(d) } else { Err(DecimalError::OutOfRange) }
}

impl Decimal {
    /// `unscaled × 10^-scale`.
    pub fn new(unscaled: i128, scale: u8) -> Decimal {
        Decimal { unscaled, scale }
    }

    /// Whether the value has at most `precision` digits at its scale.
    pub fn fits(self, precision: u8) -> bool {
        precision <= MAX_PRECISION && self.unscaled.unsigned_abs() < pow10(precision as u32) as u128
    }

    fn big(self) -> BigInt {
        BigInt::from(self.unscaled)
    }

    /// Parses a number as Java's `BigDecimal(String)` reads it (an optional sign, digits with an
    /// optional point, an optional exponent `e±n`; no spaces), rounded HALF_UP to `scale`.
    ///
    /// # Errors
    /// [`DecimalError::Invalid`] for text that is not such a number; [`DecimalError::OutOfRange`]
    /// when the rounded value has more than `precision` digits.
    pub fn parse(text: &str, precision: u8, scale: u8) -> Result<Decimal, DecimalError> {
        let (n, exp) = parse_parts(text).ok_or(DecimalError::Invalid)?;
        fit(shift(&n, -exp, scale as i64, Rounding::HalfUp), precision, scale)
    }

    /// The type Spark gives a literal written `text` (`1.5` is DECIMAL(2, 1), `0.05` is
    /// DECIMAL(2, 2), `100.0` DECIMAL(4, 1)) and its value; `None` when it is not a plain number
    /// or needs more than 38 digits.
    pub fn literal(text: &str) -> Option<(Decimal, u8, u8)> {
        let (n, exp) = parse_parts(text)?;
        let scale = u8::try_from(-exp.min(0)).ok()?;
        let n = if exp > 0 { n * big_pow10(exp as u32) } else { n };
        let digits = if n.is_zero() { 1 } else { n.abs().to_string().len() };
        let precision = u8::try_from(digits.max(scale as usize)).ok()?;
        if precision > MAX_PRECISION {
            return None;
        }
        Some((Decimal { unscaled: n.to_i128()?, scale }, precision, scale))
    }

    /// An integer as DECIMAL(precision, scale).
    ///
    /// # Errors
    /// [`DecimalError::OutOfRange`] when it needs more digits.
    pub fn from_i128(v: i128, precision: u8, scale: u8) -> Result<Decimal, DecimalError> {
        fit(BigInt::from(v) * big_pow10(scale as u32), precision, scale)
    }

    /// This value at `scale` (rounded as `mode`), checked against `precision`.
    ///
    /// # Errors
    /// [`DecimalError::OutOfRange`] when the result needs more than `precision` digits.
    pub fn rescale(self, precision: u8, scale: u8, mode: Rounding) -> Result<Decimal, DecimalError> {
        if scale == self.scale {
            return if self.fits(precision) { Ok(self) } else { Err(DecimalError::OutOfRange) };
        }
        fit(shift(&self.big(), self.scale as i64, scale as i64, mode), precision, scale)
    }

    /// Rounds to `places` digits after the point (negative: tens, hundreds, ...) as `mode`, and
    /// writes the result at the type (precision, scale) of Spark's `round` / `floor` / `ceil`
    /// ([`round_type`], [`floor_ceil_type`]).
    ///
    /// # Errors
    /// [`DecimalError::OutOfRange`] when the result does not fit that type.
    pub fn round(self, places: i64, mode: Rounding, precision: u8, scale: u8) -> Result<Decimal, DecimalError> {
        let q = shift(&self.big(), self.scale as i64, places, mode);
        fit(shift(&q, places, scale as i64, Rounding::Down), precision, scale)
    }

    /// The integral part (toward zero).
    pub fn trunc(self) -> i128 {
        self.unscaled / pow10(self.scale as u32)
    }

    /// The nearest double (Spark's `Decimal.toDouble`: correctly rounded).
    pub fn to_f64(self) -> f64 {
        self.to_string().parse().unwrap_or(f64::NAN)
    }

    /// -1, 0 or 1.
    pub fn signum(self) -> i128 {
        self.unscaled.signum()
    }

    /// The smallest scale that writes the same number (trailing zeros dropped): equal values
    /// give equal forms, for hashing.
    pub fn normalized(self) -> Decimal {
        let mut d = self;
        while d.scale > 0 && d.unscaled % 10 == 0 {
            d.unscaled /= 10;
            d.scale -= 1;
        }
        d
    }

    /// Numeric order (scales may differ).
    pub fn cmp_value(&self, other: &Decimal) -> Ordering {
        let (a, b) = (self.unscaled, other.unscaled);
        match self.scale.cmp(&other.scale) {
            Ordering::Equal => a.cmp(&b),
            // one side raised to the other's scale; when that leaves i128 its magnitude beats
            // every decimal value (|unscaled| < 10^38), so its sign decides
            Ordering::Less => match a.checked_mul(pow10((other.scale - self.scale) as u32)) {
                Some(raised) => raised.cmp(&b),
                None => a.signum().cmp(&0),
            },
            Ordering::Greater => other.cmp_value(self).reverse(),
        }
    }
}

impl Decimal {
    /// Java's `BigDecimal.toString`: the plain form, or `1.0E-7` when the exponent of the first
    /// digit is below -6, as Spark's JSON writer (`to_json`, the JSON sink) writes a DECIMAL
    /// (checked with Spark 4.3: DECIMAL(10, 8) 0.0000001 is written `1.0E-7`).
    pub fn to_json_string(self) -> String {
        let digits = self.unscaled.unsigned_abs().to_string();
        let adjusted = digits.len() as i64 - 1 - self.scale as i64;
        if adjusted >= -6 {
            return self.to_string();
        }
        let sign = if self.unscaled < 0 { "-" } else { "" };
        let (first, rest) = digits.split_at(1);
        let point = if rest.is_empty() { "" } else { "." };
        format!("{sign}{first}{point}{rest}E{adjusted}")
    }
}

impl PartialEq for Decimal {
    /// By numeric value: `1.50 == 1.5`.
    fn eq(&self, other: &Decimal) -> bool {
        self.cmp_value(other).is_eq()
    }
}

impl Eq for Decimal {}

impl std::hash::Hash for Decimal {
    /// Of the normalized form, so equal values hash alike.
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        let n = self.normalized();
        state.write_i128(n.unscaled);
        state.write_u8(n.scale);
    }
}

impl fmt::Display for Decimal {
    /// The plain form with exactly `scale` digits after the point (`1.50`, `-0.05`, `0.000`), as
    /// Spark's CAST to STRING (`toPlainString`) writes it.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let digits = self.unscaled.unsigned_abs().to_string();
        let sign = if self.unscaled < 0 { "-" } else { "" };
        let scale = self.scale as usize;
        if scale == 0 {
            return write!(f, "{sign}{digits}");
        }
        let padded =
            if digits.len() <= scale { format!("{}{digits}", "0".repeat(scale + 1 - digits.len())) } else { digits };
        let (int, frac) = padded.split_at(padded.len() - scale);
        write!(f, "{sign}{int}.{frac}")
    }
}

/// Splits a number's text into an integer of its digits and a power of ten: `-1.25e3` is
/// (-125, 1). `None` for anything else (Java's `BigDecimal(String)` grammar).
fn parse_parts(text: &str) -> Option<(BigInt, i64)> {
    let (mantissa, exp) = match text.find(['e', 'E']) {
        Some(i) => {
            let e = &text[i + 1..];
            let digits = e.strip_prefix(['+', '-']).unwrap_or(e);
            if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) || digits.len() > 9 {
                return None;
            }
            (&text[..i], e.parse::<i64>().ok()?)
        }
        None => (text, 0),
    };
    let negative = mantissa.starts_with('-');
    let body = mantissa.strip_prefix(['+', '-']).unwrap_or(mantissa);
    let (int, frac) = body.split_once('.').unwrap_or((body, ""));
    if int.is_empty() && frac.is_empty() {
        return None;
    }
    if !int.bytes().chain(frac.bytes()).all(|b| b.is_ascii_digit()) {
        return None;
    }
    let all = format!("{int}{frac}");
    let all = all.trim_start_matches('0');
    let n = if all.is_empty() { BigInt::zero() } else { BigInt::parse_bytes(all.as_bytes(), 10)? };
    Some((if negative { -n } else { n }, exp - frac.len() as i64))
}

/// Spark's `DecimalType.adjustPrecisionScale` (allowPrecisionLoss = true): a type of more than 38
/// digits keeps its integral digits and gives up scale, down to min(scale, 6).
pub fn adjust(precision: u32, scale: u32) -> (u8, u8) {
    if precision <= MAX_PRECISION as u32 {
        return (precision as u8, scale as u8);
    }
    let int_digits = precision - scale;
    let min_scale = scale.min(MIN_ADJUSTED_SCALE);
    let scale = (MAX_PRECISION as u32).saturating_sub(int_digits).max(min_scale);
    (MAX_PRECISION, scale as u8)
}

/// Spark's `DecimalType.bounded`: precision and scale each capped at 38.
pub fn bounded(precision: u32, scale: u32) -> (u8, u8) {
    (precision.min(MAX_PRECISION as u32) as u8, scale.min(MAX_PRECISION as u32) as u8)
}

/// The result type of `a + b` / `a - b`: scale max(s1, s2), one more integral digit than the
/// wider operand's.
pub fn add_type((p1, s1): (u8, u8), (p2, s2): (u8, u8)) -> (u8, u8) {
    let (p1, s1, p2, s2) = (p1 as u32, s1 as u32, p2 as u32, s2 as u32);
    let scale = s1.max(s2);
    adjust((p1 - s1).max(p2 - s2) + scale + 1, scale)
}

/// The result type of `a * b`: DECIMAL(p1 + p2 + 1, s1 + s2), adjusted.
pub fn mul_type((p1, s1): (u8, u8), (p2, s2): (u8, u8)) -> (u8, u8) {
    adjust(p1 as u32 + p2 as u32 + 1, s1 as u32 + s2 as u32)
}

/// The result type of `a / b`: scale max(6, s1 + p2 + 1), integral digits p1 - s1 + s2, adjusted.
pub fn div_type((p1, s1): (u8, u8), (p2, s2): (u8, u8)) -> (u8, u8) {
    let (p1, s1, p2, s2) = (p1 as u32, s1 as u32, p2 as u32, s2 as u32);
    let scale = MIN_ADJUSTED_SCALE.max(s1 + p2 + 1);
    adjust(p1 - s1 + s2 + scale, scale)
}

/// The result type of `a % b` and `pmod(a, b)`: scale max(s1, s2), the smaller operand's
/// integral digits, adjusted.
pub fn rem_type((p1, s1): (u8, u8), (p2, s2): (u8, u8)) -> (u8, u8) {
    let (p1, s1, p2, s2) = (p1 as u32, s1 as u32, p2 as u32, s2 as u32);
    let scale = s1.max(s2);
    adjust((p1 - s1).min(p2 - s2) + scale, scale)
}

/// The type both of two decimals widen to (Spark's `DecimalPrecision.widerDecimalType`): the
/// larger scale and the larger integral part; past 38 digits the integral digits are kept and
/// the scale gives way (`DecimalType.boundedPreferIntegralDigits`, SPARK-39316).
pub fn wider_type((p1, s1): (u8, u8), (p2, s2): (u8, u8)) -> (u8, u8) {
    let (p1, s1, p2, s2) = (p1 as u32, s1 as u32, p2 as u32, s2 as u32);
    let scale = s1.max(s2);
    let precision = (p1 - s1).max(p2 - s2) + scale;
    let max = MAX_PRECISION as u32;
    if precision <= max {
        (precision as u8, scale as u8)
    } else {
        (MAX_PRECISION, scale.saturating_sub(precision - max) as u8)
    }
}

/// The result type of `round(x, places)` / `bround` on DECIMAL(p, s) (Spark's `RoundBase`): one
/// more integral digit (a carry), the scale min(s, places), or 0 for negative places.
pub fn round_type((p, s): (u8, u8), places: i64) -> (u8, u8) {
    let int_digits = p as i64 - s as i64 + 1;
    if places < 0 {
        let precision = int_digits.max(1 - places).min(MAX_PRECISION as i64);
        (precision as u8, 0)
    } else {
        let scale = (s as i64).min(places);
        ((int_digits + scale).min(MAX_PRECISION as i64) as u8, scale as u8)
    }
}

/// The result type of `floor` / `ceil` on DECIMAL(p, s): DECIMAL(p - s + 1, 0) bounded, or the
/// type itself when s = 0 (Spark's `Floor` / `Ceil`).
pub fn floor_ceil_type((p, s): (u8, u8)) -> (u8, u8) {
    if s == 0 { (p, 0) } else { bounded(p as u32 - s as u32 + 1, 0) }
}

/// The result type of `sum` over DECIMAL(p, s): DECIMAL(min(38, p + 10), s), as Spark's `Sum`.
pub fn sum_type((p, s): (u8, u8)) -> (u8, u8) {
    bounded(p as u32 + 10, s as u32)
}

/// The result type of `avg` over DECIMAL(p, s): DECIMAL(min(38, p + 4), min(38, s + 4)), as
/// Spark's `Average`.
pub fn avg_type((p, s): (u8, u8)) -> (u8, u8) {
    bounded(p as u32 + 4, s as u32 + 4)
}

/// `avg` over DECIMAL(p, s) from the exact sum (unscaled, at scale s) of `n > 0` values, as
/// Spark's `Average` computes it: the sum, typed as [`sum_type`], divided by the count as a
/// DECIMAL(20, 0) at the result type of that division ([`div_type`], rounding HALF_UP), then cast
/// to [`avg_type`] (rounding HALF_UP again).
///
/// # Errors
/// [`DecimalError::OutOfRange`] when a step does not fit its type.
pub fn avg(sum: i128, n: i64, input: (u8, u8)) -> Result<Decimal, DecimalError> {
    let sum_ty = sum_type(input);
    let (qp, qs) = div_type(sum_ty, (20, 0));
    let q = arith(DecimalOp::Div, Decimal::new(sum, input.1), Decimal::new(n as i128, 0), qp, qs)?;
    let (ap, as_) = avg_type(input);
    q.rescale(ap, as_, Rounding::HalfUp)
}

/// `a op b` at the result type (precision, scale), exact then rounded HALF_UP once.
///
/// # Errors
/// [`DecimalError::DivideByZero`] for `/`, `%`, `pmod` by zero; [`DecimalError::OutOfRange`]
/// when the result does not fit the type.
pub fn arith(op: DecimalOp, a: Decimal, b: Decimal, precision: u8, scale: u8) -> Result<Decimal, DecimalError> {
    let (sa, sb, s) = (a.scale as i64, b.scale as i64, scale as i64);
    // the common case: one scale, no rounding, no i128 overflow
    if matches!(op, DecimalOp::Add | DecimalOp::Sub) && a.scale == b.scale && a.scale == scale {
        let r =
            if op == DecimalOp::Add { a.unscaled.checked_add(b.unscaled) } else { a.unscaled.checked_sub(b.unscaled) };
        if let Some(r) = r {
            let d = Decimal { unscaled: r, scale };
            return if d.fits(precision) { Ok(d) } else { Err(DecimalError::OutOfRange) };
        }
    }
    let (x, y) = (a.big(), b.big());
    let common = sa.max(sb);
    let exact = match op {
        DecimalOp::Add | DecimalOp::Sub => {
            let (x, y) = (shift(&x, sa, common, Rounding::Down), shift(&y, sb, common, Rounding::Down));
            let r = if op == DecimalOp::Add { x + y } else { x - y };
            shift(&r, common, s, Rounding::HalfUp)
        }
        DecimalOp::Mul => shift(&(x * y), sa + sb, s, Rounding::HalfUp),
        DecimalOp::Div => {
            if y.is_zero() {
                return Err(DecimalError::DivideByZero);
            }
            // x/10^sa ÷ y/10^sb at scale s: x × 10^(s + sb - sa) ÷ y
            let k = s + sb - sa;
            if k >= 0 {
                div_round(&(x * big_pow10(k as u32)), &y, Rounding::HalfUp)
            } else {
                div_round(&x, &(y * big_pow10((-k) as u32)), Rounding::HalfUp)
            }
        }
        DecimalOp::Rem | DecimalOp::Pmod => {
            if y.is_zero() {
                return Err(DecimalError::DivideByZero);
            }
            let (x, y) = (shift(&x, sa, common, Rounding::Down), shift(&y, sb, common, Rounding::Down));
            let mut r = &x % &y;
            if op == DecimalOp::Pmod && r.is_negative() {
                r = (r + &y) % &y;
            }
            shift(&r, common, s, Rounding::HalfUp)
        }
    };
    fit(exact, precision, scale)
}

/// `a / b` truncated toward zero (Spark's `div` on decimals).
///
/// # Errors
/// [`DecimalError::DivideByZero`]; [`DecimalError::OutOfRange`] past BIGINT.
pub fn div_trunc(a: Decimal, b: Decimal) -> Result<i64, DecimalError> {
    if b.unscaled == 0 {
        return Err(DecimalError::DivideByZero);
    }
    let (sa, sb) = (a.scale as i64, b.scale as i64);
    let common = sa.max(sb);
    let x = shift(&a.big(), sa, common, Rounding::Down);
    let y = shift(&b.big(), sb, common, Rounding::Down);
    (x / y).to_i64().ok_or(DecimalError::OutOfRange)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(text: &str, p: u8, s: u8) -> Decimal {
        Decimal::parse(text, p, s).unwrap_or_else(|e| panic!("{text}: {e:?}"))
    }

    #[test]
    fn parses_exactly_and_rounds_half_up_to_the_scale() {
        assert_eq!({ d("0.1", 10, 1).unscaled }, 1);
        assert_eq!({ d("1.005", 10, 2).unscaled }, 101);
        assert_eq!({ d("-1.005", 10, 2).unscaled }, -101);
        assert_eq!({ d("1.004999", 10, 2).unscaled }, 100);
        assert_eq!({ d("1e2", 10, 2).unscaled }, 10000);
        assert_eq!({ d("1.5E-3", 10, 2).unscaled }, 0);
        assert_eq!({ d("-0.005", 10, 2).unscaled }, -1);
        assert_eq!({ d(".5", 3, 0).unscaled }, 1);
        assert_eq!({ d("12.", 3, 0).unscaled }, 12);
        assert_eq!(Decimal::parse("99999999.995", 10, 2), Err(DecimalError::OutOfRange));
        assert_eq!({ d("99999999.994", 10, 2).unscaled }, 9999999999);
        for bad in ["", "abc", "1.2.3", "1e", "--1", "1 ", " 1", "0x10", ".", "+", "1e+"] {
            assert_eq!(Decimal::parse(bad, 10, 2), Err(DecimalError::Invalid), "{bad:?}");
        }
    }

    #[test]
    fn writes_the_plain_form_with_the_scale_digits() {
        assert_eq!(Decimal::new(150, 2).to_string(), "1.50");
        assert_eq!(Decimal::new(-5, 2).to_string(), "-0.05");
        assert_eq!(Decimal::new(0, 3).to_string(), "0.000");
        assert_eq!(Decimal::new(-12, 0).to_string(), "-12");
        assert_eq!(Decimal::new(10, 8).to_string(), "0.00000010");
        assert_eq!(Decimal::new(10, 8).to_json_string(), "1.0E-7");
        assert_eq!(Decimal::new(0, 8).to_json_string(), "0E-8");
        assert_eq!(Decimal::new(-15, 2).to_json_string(), "-0.15");
        assert_eq!(Decimal::new(1, 6).to_json_string(), "0.000001");
    }

    #[test]
    fn literal_types_are_sparks() {
        let ty = |t: &str| Decimal::literal(t).map(|(_, p, s)| (p, s));
        assert_eq!(ty("1.5"), Some((2, 1)));
        assert_eq!(ty("0.05"), Some((2, 2)));
        assert_eq!(ty("100.0"), Some((4, 1)));
        assert_eq!(ty("123.456"), Some((6, 3)));
        assert_eq!(ty("0.0"), Some((1, 1)));
    }

    #[test]
    fn result_types_follow_decimal_precision_with_precision_loss() {
        assert_eq!(add_type((10, 2), (5, 3)), (12, 3));
        assert_eq!(mul_type((10, 2), (5, 3)), (16, 5));
        assert_eq!(mul_type((38, 10), (38, 10)), (38, 6));
        assert_eq!(div_type((10, 2), (10, 2)), (23, 13));
        assert_eq!(div_type((38, 2), (38, 2)), (38, 6));
        assert_eq!(rem_type((3, 1), (2, 1)), (2, 1));
        assert_eq!(add_type((38, 37), (38, 0)), (38, 6));
        assert_eq!(round_type((10, 2), 1), (10, 1));
        assert_eq!(round_type((10, 2), -1), (9, 0));
        assert_eq!(floor_ceil_type((10, 2)), (9, 0));
        // Spark 4.3: a CASE of DECIMAL(38,26) and DECIMAL(19,6) is DECIMAL(38,25)
        assert_eq!(wider_type((38, 26), (19, 6)), (38, 25));
        assert_eq!(wider_type((10, 2), (5, 3)), (11, 3));
    }

    #[test]
    fn arithmetic_is_exact_then_rounded_once() {
        let a = d("1", 10, 2);
        let b = d("3", 10, 2);
        let q = arith(DecimalOp::Div, a, b, 23, 13).unwrap_or_else(|e| panic!("{e:?}"));
        assert_eq!(q.to_string(), "0.3333333333333");
        let two_thirds = arith(DecimalOp::Div, d("2", 10, 2), b, 23, 13).unwrap_or_else(|e| panic!("{e:?}"));
        assert_eq!(two_thirds.to_string(), "0.6666666666667");
        let r = arith(DecimalOp::Rem, d("-2.5", 3, 1), d("0.7", 2, 1), 2, 1).unwrap_or_else(|e| panic!("{e:?}"));
        assert_eq!(r.to_string(), "-0.4");
        let p = arith(DecimalOp::Pmod, d("-2.5", 3, 1), d("0.7", 2, 1), 2, 1).unwrap_or_else(|e| panic!("{e:?}"));
        assert_eq!(p.to_string(), "0.3");
        let big = Decimal::new(pow10(38) - 1, 0);
        assert_eq!(arith(DecimalOp::Add, big, Decimal::new(1, 0), 38, 0), Err(DecimalError::OutOfRange));
        assert_eq!(arith(DecimalOp::Div, a, Decimal::new(0, 0), 38, 6), Err(DecimalError::DivideByZero));
        let m = arith(DecimalOp::Mul, big, big, 38, 0);
        assert_eq!(m, Err(DecimalError::OutOfRange));
        let m = arith(DecimalOp::Mul, d("1.15", 3, 2), d("0.1", 2, 1), 3, 2).unwrap_or_else(|e| panic!("{e:?}"));
        assert_eq!(m.to_string(), "0.12", "0.115 rounds half up");
    }

    #[test]
    fn avg_divides_at_sparks_intermediate_type_then_rounds_to_its_own() {
        // Spark 4.3: avg of 1.01, 2.00, 2.00 as DECIMAL(12,2) is 1.670000 (DECIMAL(16,6))
        assert_eq!(sum_type((12, 2)), (22, 2));
        assert_eq!(avg_type((12, 2)), (16, 6));
        assert_eq!(avg(501, 3, (12, 2)).map(|d| d.to_string()), Ok("1.670000".to_string()));
        assert_eq!(avg(-1, 3, (12, 2)).map(|d| d.to_string()), Ok("-0.003333".to_string()));
        assert_eq!(avg(2, 3, (12, 2)).map(|d| d.to_string()), Ok("0.006667".to_string()));
        assert_eq!(sum_type((30, 4)), (38, 4));
        assert_eq!(avg_type((36, 36)), (38, 38));
    }

    #[test]
    fn rounding_modes() {
        let x = d("2.345", 10, 3);
        let r = |places, mode| {
            let (p, s) = round_type((10, 3), places);
            x.round(places, mode, p, s).unwrap_or_else(|e| panic!("{e:?}")).to_string()
        };
        assert_eq!(r(2, Rounding::HalfUp), "2.35");
        assert_eq!(r(2, Rounding::HalfEven), "2.34");
        assert_eq!(r(0, Rounding::Floor), "2");
        assert_eq!(r(0, Rounding::Ceil), "3");
        assert_eq!(r(-1, Rounding::HalfUp), "0");
        let neg = d("-2.5", 10, 1);
        assert_eq!(neg.round(0, Rounding::HalfUp, 10, 0).map(|v| v.to_string()), Ok("-3".into()));
        assert_eq!(neg.round(0, Rounding::HalfEven, 10, 0).map(|v| v.to_string()), Ok("-2".into()));
        assert_eq!(neg.round(0, Rounding::Floor, 10, 0).map(|v| v.to_string()), Ok("-3".into()));
    }

    #[test]
    fn survives_the_json_of_operator_snapshots() {
        // window and deduplicate snapshots hold group keys as JSON (serde)
        let v = crate::value::Value::Decimal(Decimal::new(-(pow10(38) - 1), 10));
        let text = serde_json::to_string(&v).unwrap_or_else(|e| panic!("{e}"));
        let back: crate::value::Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{text}: {e}"));
        let crate::value::Value::Decimal(d) = back else { panic!("{back:?}") };
        assert_eq!((d.unscaled, d.scale), (-(pow10(38) - 1), 10));
    }

    #[test]
    fn compares_by_value_across_scales() {
        assert_eq!(Decimal::new(150, 2).cmp_value(&Decimal::new(15, 1)), Ordering::Equal);
        assert_eq!(Decimal::new(-1, 0).cmp_value(&Decimal::new(pow10(37), 38)), Ordering::Less);
        assert_eq!(Decimal::new(pow10(37), 0).cmp_value(&Decimal::new(1, 38)), Ordering::Greater);
        assert_eq!({ Decimal::new(150, 2).normalized().unscaled }, 15);
    }
}
