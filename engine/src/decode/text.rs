//! Scalar conversions shared by the JSON and CSV decoders.

use crate::value::Text;
use std::cell::Cell;

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
    if matches!(col.ty, DataType::Decimal { .. }) {
        return decimal_value(col, text, text);
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
    if matches!(col.ty, DataType::Decimal { .. }) {
        return decimal_value(col, text, text);
    }
    let Some(v) = parse_f64(text) else {
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
        DataType::Decimal { .. } => decimal_value(col, text, text),
        _ => Err(wrong(col, text, "a number")),
    }
}

/// The value of a string for a TIMESTAMP, DATE, DOUBLE, FLOAT, DECIMAL or STRING column. A
/// DATE is read as Spark's JSON and CSV readers fall back to read it (`CAST(s AS DATE)`'s
/// forms: `2024-01-15`, `2024-1-5`, `2024-01-15T10:00`).
pub(crate) fn string_value(col: &Column, text: &str, raw: &str) -> Result<Value, DecodeError> {
    match col.ty {
        DataType::String => Ok(Value::Str(Text::from(text))),
        DataType::Date => date_value(col, text),
        DataType::Timestamp => timestamp_value(col, text),
        DataType::Double => non_finite(text)
            .map(Value::Double)
            .ok_or_else(|| wrong(col, raw, "a string (only \"NaN\", \"Infinity\", \"-Infinity\" are numbers)")),
        DataType::Float => non_finite(text)
            .map(|v| Value::Float(v as f32))
            .ok_or_else(|| wrong(col, raw, "a string (only \"NaN\", \"Infinity\", \"-Infinity\" are numbers)")),
        DataType::Long | DataType::Int => Err(wrong(col, raw, "a string, not a JSON number")),
        DataType::Decimal { .. } => decimal_value(col, text, raw),
        DataType::Boolean => Err(wrong(col, raw, "a string, not true or false")),
        _ => Err(wrong(col, raw, "a type that input cannot hold")),
    }
}

/// The value of a number's text (a JSON number, a JSON string's content, a CSV field) for a
/// DECIMAL(p, s) column, exactly (never through a double: `0.1` is 1 at scale 1), rounded
/// HALF_UP to the column's scale. As Spark's JSON and CSV readers (checked with Spark 4.3): a
/// string holding a number is read as the number (`"2.345"`, `"1e2"`), one with spaces around
/// it is not; a value with more integral digits than the precision leaves (also after rounding:
/// `999999999.995` for DECIMAL(10, 2)) makes the record malformed.
pub(crate) fn decimal_value(col: &Column, text: &str, raw: &str) -> Result<Value, DecodeError> {
    use crate::decimal::{Decimal, DecimalError};
    let Some((precision, scale)) = col.ty.decimal() else {
        return Err(wrong(col, raw, "a number"));
    };
    match Decimal::parse(text, precision, scale) {
        Ok(d) => Ok(Value::Decimal(d)),
        Err(DecimalError::OutOfRange) => {
            Err(DecodeError::OutOfRange { column: col.name.to_string(), expected: col.ty, given: quote(raw) })
        }
        Err(_) => Err(wrong(col, raw, "not a decimal number")),
    }
}

/// A decimal number: exactly `str::parse::<f64>`, with a fast path for up to 15 digits and
/// no exponent (Clinger's: the digits and the power of ten are both exact doubles, so one
/// correctly rounded division gives the correctly rounded result).
pub(crate) fn parse_f64(text: &str) -> Option<f64> {
    const POW10: [f64; 16] = [1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15];
    let b = text.as_bytes();
    let (neg, digits) = match b.first() {
        Some(b'-') => (true, &b[1..]),
        _ => (false, b),
    };
    let mut m: u64 = 0;
    let mut n = 0usize;
    let mut frac: Option<usize> = None;
    for &c in digits {
        match c {
            b'0'..=b'9' if n < 15 => {
                m = m * 10 + (c - b'0') as u64;
                n += 1;
                frac = frac.map(|f| f + 1);
            }
            b'.' if frac.is_none() => frac = Some(0),
            _ => return text.parse().ok(),
        }
    }
    if n == 0 {
        return text.parse().ok();
    }
    let v = m as f64 / POW10[frac.unwrap_or(0)];
    Some(if neg { -v } else { v })
}

/// A timestamp string. Without whitespace around it, it takes the fast path of
/// [`timestamp_prefix`]; with it (and every error) it goes through
/// [`crate::time::parse_timestamp`].
pub(crate) fn timestamp_value(col: &Column, text: &str) -> Result<Value, DecodeError> {
    if let Some(t) = fast_timestamp(text.as_bytes()) {
        return Ok(Value::Timestamp(t));
    }
    crate::time::parse_timestamp(text).map(Value::Timestamp).map_err(|e| {
        let why = match e {
            crate::time::TimeError::BadTimestamp { why, .. } => why,
            crate::time::TimeError::BadDuration { .. } => "not a timestamp",
        };
        DecodeError::BadTimestamp { column: col.name.to_string(), given: quote(text), why }
    })
}

/// The whole of `b` as a timestamp of [`timestamp_prefix`]'s forms, else `None`.
pub(crate) fn fast_timestamp(b: &[u8]) -> Option<Timestamp> {
    match timestamp_prefix(b)? {
        (t, n) if n == b.len() => Some(t),
        _ => None,
    }
}

/// The timestamp that `b` starts with, in the forms of [`crate::time::parse_timestamp_strict`]
/// without surrounding whitespace: `YYYY-MM-DD`, then `T`, `t` or a space, `HH:MM:SS` (seconds
/// 00-59: a leap second is refused, as there and in Spark), an optional fraction of 1 to 9 digits (truncated
/// to µs), then `Z`, `z`, an offset `+HH:MM` / `-HH:MM`, or nothing (UTC); and its length in
/// bytes. `None` when `b` does not start with one. What follows is not looked at: the JSON fast
/// path parses a timestamp string in place and then checks its closing quote, without first
/// scanning for it; [`fast_timestamp`] checks that nothing follows. So both accept exactly the
/// texts with a four-digit year that `parse_timestamp_strict` accepts, with the same value
/// (`fast_timestamp_agrees_with_parse_timestamp`); a signed or longer year (`+10000-...`) and
/// Spark's other forms (`2024-01-15`, `2024-1-5 1:2:3`, a `+0100` zone) are left to
/// [`crate::time::parse_timestamp`], on the decoders' full path.
///
/// The time `HH:MM:SS` and the start of the date `YYYY-MM-` are read as little-endian words
/// (byte `k` of the text is bits `8k..8k + 8`), each XORed with its template (`00:00:00`,
/// `0000-00-`): a digit becomes its value 0-9 and a separator that is the template's becomes
/// 0, so one test per word checks every byte ([`template_diff`]), and the two-digit fields are
/// combined in-register ([`digit_pairs`]). The date's day number is remembered per thread
/// (`LAST_DAY`): a record of the same day as the previous one skips the date's checks and
/// calendar arithmetic.
#[inline(always)]
pub(crate) fn timestamp_prefix(b: &[u8]) -> Option<(Timestamp, usize)> {
    let head = b.first_chunk::<19>()?;
    let w = |i: usize| {
        let mut x = [0u8; 8];
        x.copy_from_slice(&head[i..i + 8]);
        u64::from_le_bytes(x)
    };
    let pt = digit_pairs(template_diff(w(11), T_TIME, SEP_TIME)?);
    let at = |p: u64, k: u32| (p >> (8 * k)) as u32 & 0xff;
    let (h, mi, sec) = (at(pt, 0), at(pt, 3), at(pt, 6));
    if h > 23 || mi > 59 || sec > 59 {
        return None;
    }
    // The date and the separator after it, `YYYY-MM-DDT`: the first word and the next three
    // bytes.
    let date = (w(0), u32::from_le_bytes([head[8], head[9], head[10], 0]));
    let days = match LAST_DAY.with(Cell::get) {
        (cached, days) if cached == date => days,
        _ => {
            let [d1, d0, t] = [head[8], head[9], head[10]];
            if !d1.is_ascii_digit() || !d0.is_ascii_digit() || !matches!(t, b'T' | b't' | b' ') {
                return None;
            }
            let day = (d1 - b'0') as u32 * 10 + (d0 - b'0') as u32;
            let days = day_number(template_diff(date.0, T_DATE, SEP_DATE)?, day)?;
            LAST_DAY.with(|d| d.set((date, days)));
            days
        }
    };
    let (frac_us, k) = match b.get(19) {
        // 1 to 6 digits (the usual ms and µs): one word.
        Some(b'.') if let (digits @ 1..=6, us) = leading_digits(word_from(b, 20)) => {
            (us as u32 * POW10_U32[6 - digits], 20 + digits)
        }
        Some(b'.') => {
            let mut us = 0u32;
            let mut k = 20;
            while let Some(&d @ b'0'..=b'9') = b.get(k) {
                if k < 26 {
                    us = us * 10 + (d - b'0') as u32;
                }
                k += 1;
            }
            let digits = k - 20;
            if !(1..=9).contains(&digits) {
                return None;
            }
            // Fewer than 6 digits: scaled up to microseconds (more: truncated above).
            (us * POW10_U32[6usize.saturating_sub(digits)], k)
        }
        _ => (0, 19),
    };
    let (offset_s, n) = match b.get(k) {
        Some(b'Z' | b'z') => (0, k + 1),
        Some(&sign @ (b'+' | b'-')) => match offset(b.get(k + 1..k + 6)) {
            Some(s) => (if sign == b'-' { -s } else { s }, k + 6),
            // Not an offset: the caller finds the sign where the text should end.
            None => (0, k),
        },
        _ => (0, k),
    };
    let secs = days * 86_400 + (h * 3_600 + mi * 60 + sec) as i64 - offset_s;
    Some((Timestamp(secs * 1_000_000 + frac_us as i64), n))
}

/// The template of a date's first word (byte 0 lowest; digit positions hold `0`).
pub(super) const T_DATE: u64 = u64::from_le_bytes(*b"0000-00-");
/// The template of a time's `HH:MM:SS`.
const T_TIME: u64 = u64::from_le_bytes(*b"00:00:00");
/// The separator bytes of [`T_DATE`], which must be exactly the template's (0 after XOR).
pub(super) const SEP_DATE: u64 = 0xff00_00ff_0000_0000;
/// The separator bytes of [`T_TIME`].
const SEP_TIME: u64 = 0x0000_ff00_00ff_0000;

/// The seconds of an offset's `HH:MM` (hours 00-23, minutes 00-59), else `None`.
#[inline]
fn offset(b: Option<&[u8]>) -> Option<i64> {
    let &[h1, h0, b':', m1, m0] = b? else {
        return None;
    };
    if ![h1, h0, m1, m0].iter().all(u8::is_ascii_digit) {
        return None;
    }
    let (h, m) = ((h1 - b'0') * 10 + h0 - b'0', (m1 - b'0') * 10 + m0 - b'0');
    (h <= 23 && m <= 59).then_some(h as i64 * 3_600 + m as i64 * 60)
}

thread_local! {
    /// The date text and the separator after it (`YYYY-MM-DDT`, as [`timestamp_prefix`] reads it) of
    /// the last date parsed on this thread, and its day number: the records of a stream mostly share their day.
    /// Only valid dates are remembered, so equal bytes are the same valid date. (No date's
    /// first word is 0, so the initial entry never matches.)
    static LAST_DAY: Cell<((u64, u32), i64)> = const { Cell::new(((0, 0), 0)) };
}

/// The day number (days since 1970-01-01) of the date whose `YYYY-MM-` word, XORed with its
/// template ([`template_diff`]), is `a` and whose day of the month is `day`; `None` for a month
/// or day out of range.
#[inline]
pub(super) fn day_number(a: u64, day: u32) -> Option<i64> {
    let pa = digit_pairs(a);
    let at = |k: u32| (pa >> (8 * k)) as u32 & 0xff;
    let (y, mo) = (at(0) * 100 + at(2), at(5));
    if mo.wrapping_sub(1) > 11 || day == 0 {
        return None;
    }
    if day > MONTH_DAYS[(mo - 1) as usize] || (mo == 2 && day == 29 && !is_leap(y)) {
        return None;
    }
    // Howard Hinnant's `days_from_civil`: years counted from March, so a leap day ends its
    // year, and shifted by 400 years (one whole Gregorian cycle of 146,097 days) so that year
    // 0's January and February stay non-negative.
    let march = mo > 2;
    let years = y + 400 - (!march) as u32;
    let month = if march { mo - 3 } else { mo + 9 };
    let centuries = years / 100;
    let days = 365 * years + years / 4 - centuries + centuries / 4 + (153 * month + 2) / 5 + day - 1;
    Some(days as i64 - (719_468 + 146_097))
}

/// The 8 bytes of `b` from `i` as a little-endian word, zero bytes past the end of `b` (a
/// timestamp's fraction: often among the last bytes of a line); `i <= b.len()`, and `b` of at
/// least 8 bytes (else 0).
#[inline(always)]
fn word_from(b: &[u8], i: usize) -> u64 {
    match b.get(i..).and_then(|r| r.first_chunk::<8>()) {
        Some(w) => u64::from_le_bytes(*w),
        // The last 8 bytes, shifted so that byte `i` is the lowest.
        None => match b.last_chunk::<8>() {
            Some(w) => u64::from_le_bytes(*w).checked_shr(8 * (i + 8 - b.len()) as u32).unwrap_or(0),
            None => 0,
        },
    }
}

/// The digits that the 8 bytes `w` (little-endian: the first byte lowest) start with: how many
/// (0 to 8) and their value.
///
/// SWAR: a byte is a digit when XOR `'0'` leaves 0..=9, which adding 0x76 keeps below 0x80
/// (carries only move upwards, so the lowest byte flagged is exact); the digits are shifted to
/// the word's high bytes (zeros below them are leading zeros), and three multiplications
/// combine pairs, then quads, then the eight (the 8-digit step of Lemire's "Parsing series of
/// integers with SIMD").
#[inline(always)]
pub(crate) fn leading_digits(w: u64) -> (usize, u64) {
    let k = digit_count(w);
    if k == 0 {
        return (0, 0);
    }
    // The shift also drops the bytes after the digits.
    (k, digits_value((w ^ (ONES * b'0' as u64)) << (8 * (8 - k))))
}

/// The integer that the 8 bytes `w` (little-endian: the first byte lowest) start with when it
/// has 1 to 7 digits and no leading zero (a `0` alone), so that a byte that is no digit follows
/// it among the 8: its length and value. `None` otherwise.
#[inline(always)]
pub(crate) fn short_integer(w: u64) -> Option<(usize, u64)> {
    let k = short_integer_len(w)?;
    // The shift also drops the bytes after the digits.
    Some((k, digits_value((w ^ (ONES * b'0' as u64)) << (8 * (8 - k)))))
}

/// The length of [`short_integer`]'s integer.
#[inline(always)]
pub(crate) fn short_integer_len(w: u64) -> Option<usize> {
    let k = digit_count(w);
    // One comparison for 1 to 7 (`k - 1` wraps for 0).
    if k.wrapping_sub(1) >= 7 || (w as u8 == b'0' && k != 1) {
        return None;
    }
    Some(k)
}

/// How many digits the 8 bytes `w` (little-endian: the first byte lowest) start with (0 to 8):
/// [`leading_digits`] without their value.
#[inline(always)]
pub(crate) fn digit_count(w: u64) -> usize {
    let x = w ^ (ONES * b'0' as u64);
    let not_digit = (x.wrapping_add(ONES * 0x76) | x) & (ONES * 0x80);
    (not_digit.trailing_zeros() / 8) as usize
}

/// A byte of 1 in each place of a word.
const ONES: u64 = 0x0101_0101_0101_0101;

/// The number whose digit values (0-9) are the bytes of `d`, the first (most significant) digit
/// lowest; bytes 0 below the digits are leading zeros. Three multiplications combine pairs,
/// then quads, then the eight.
#[inline(always)]
pub(super) fn digits_value(d: u64) -> u64 {
    let d = quads(d);
    (d.wrapping_mul(10_000) + (d >> 32)) & 0xffff_ffff
}

/// [`digits_value`] of a word whose digits are all in its top 4 bytes (its low 4 bytes 0).
#[inline(always)]
pub(super) fn top_digits_value(d: u64) -> u64 {
    quads(d) >> 32
}

/// The two 4-digit numbers of a word of digit values, in its low and high halves.
#[inline(always)]
fn quads(d: u64) -> u64 {
    let d = (d.wrapping_mul(10) + (d >> 8)) & 0x00ff_00ff_00ff_00ff;
    (d.wrapping_mul(100) + (d >> 16)) & 0x0000_ffff_0000_ffff
}

/// `w` XOR `template` when every byte of `w` is a digit where the template has `0` and the
/// template's byte where `sep` selects it (0xff per byte): then each byte of the result is a
/// digit's value (0-9), or 0 at the separators. `None` otherwise.
#[inline(always)]
pub(super) fn template_diff(w: u64, template: u64, sep: u64) -> Option<u64> {
    const HIGHS: u64 = 0x8080_8080_8080_8080;
    let d = w ^ template;
    // A byte of `d` is <= 9 iff its high bit is clear and adding 0x76 leaves it clear. A byte
    // of 0x8a or more carries into the next one, but its own high bit already fails the test.
    let digits = (d | d.wrapping_add(0x7676_7676_7676_7676)) & HIGHS == 0;
    (digits && d & sep == 0).then_some(d)
}

/// For a word of digit values ([`template_diff`]): byte `k` of the result is
/// `10 × digit k + digit k+1` (the two-digit number starting at `k`). No byte ever exceeds 99,
/// so nothing carries.
#[inline(always)]
pub(super) fn digit_pairs(d: u64) -> u64 {
    d * 10 + (d >> 8)
}

/// Proleptic Gregorian leap year.
fn is_leap(y: u32) -> bool {
    y.is_multiple_of(4) && (!y.is_multiple_of(100) || y.is_multiple_of(400))
}

/// Powers of ten as u32, up to 10^6.
const POW10_U32: [u32; 7] = [1, 10, 100, 1_000, 10_000, 100_000, 1_000_000];

/// Days of each month, February with its leap day.
const MONTH_DAYS: [u32; 12] = [31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];

/// A [`DecodeError::WrongType`] for `col` given `given`.
/// A DATE column's value from its text.
pub(crate) fn date_value(col: &Column, text: &str) -> Result<Value, DecodeError> {
    crate::expr::parse_date(text).map(Value::Date).ok_or_else(|| wrong(col, text, "not a date such as 2024-01-15"))
}

pub(crate) fn wrong(col: &Column, given: &str, why: &'static str) -> DecodeError {
    DecodeError::WrongType { column: col.name.to_string(), expected: col.ty, given: quote(given), why }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    proptest! {
        /// The word-at-a-time digit read against a byte loop, on digits followed by any byte.
        #[test]
        fn leading_digits_reads_the_digits_a_word_starts_with(
            digits in "[0-9]{0,8}", rest in prop::collection::vec(any::<u8>(), 8),
        ) {
            let mut w = [0u8; 8];
            let bytes: Vec<u8> = digits.bytes().chain(rest).take(8).collect();
            w.copy_from_slice(&bytes);
            let k = w.iter().take_while(|c| c.is_ascii_digit()).count();
            let v = w[..k].iter().fold(0u64, |v, &c| v * 10 + (c - b'0') as u64);
            prop_assert_eq!(leading_digits(u64::from_le_bytes(w)), (k, v));
        }

        #[test]
        fn fast_timestamp_agrees_with_parse_timestamp(
            us in -62_135_596_800_000_000i64..253_402_300_799_999_999,
            junk in "[0-9]{4}-[0-9]{2}-[0-9]{2}[Tt ][0-9]{2}:[0-9]{2}:[0-9]{2}(\\.[0-9]{0,10})?([Zz]|[+-][0-9]{2}:[0-9]{2}|[+-][0-9:]{0,6})?",
        ) {
            let canonical = Timestamp(us).to_string();
            prop_assert_eq!(fast_timestamp(canonical.as_bytes()), Some(Timestamp(us)));
            prop_assert_eq!(fast_timestamp(canonical.as_bytes()), crate::time::parse_timestamp_strict(&canonical).ok());
            // On every text of these shapes (each form of SEMANTICS.md "Time", in range or
            // not): exactly what `parse_timestamp_strict` accepts, with the same value.
            prop_assert_eq!(fast_timestamp(junk.as_bytes()), crate::time::parse_timestamp_strict(&junk).ok(), "{}", junk);
        }

        #[test]
        fn parse_f64_is_exactly_str_parse(s in "-?[0-9]{1,20}(\\.[0-9]{1,20})?([eE][+-]?[0-9]{1,3})?", x in any::<f64>()) {
            prop_assert_eq!(parse_f64(&s).map(f64::to_bits), s.parse::<f64>().ok().map(f64::to_bits), "{}", s);
            let t = x.to_string();
            prop_assert_eq!(parse_f64(&t).map(f64::to_bits), t.parse::<f64>().ok().map(f64::to_bits), "{}", t);
        }
    }

    #[test]
    fn timestamp_prefix_reads_each_form_and_stops_after_it() {
        for (text, len) in [
            ("2024-01-15T10:01:00Z\",\"country\"", 20),
            ("2024-01-15T10:01:00.5Z\"", 22),
            ("2024-01-15T10:01:00.123456789Z\"}", 30),
            ("1970-01-01T00:00:00Z", 20),
            ("2024-01-15 10:00:00.238\"}", 23),
            ("2024-01-15 10:00:00\"", 19),
            ("2024-01-15T10:01:00", 19),
            ("2024-01-15t10:01:00z\"", 20),
            ("2024-01-15T10:01:00+02:00\"", 25),
            ("2024-01-15T10:01:00.25-09:30", 28),
        ] {
            let want = crate::time::parse_timestamp_strict(&text[..len]).unwrap();
            assert_eq!(timestamp_prefix(text.as_bytes()), Some((want, len)), "{text}");
        }
        // A sign that starts no offset is left where it is (the text should have ended there).
        let want = crate::time::parse_timestamp_strict("2024-01-15T10:01:00").unwrap();
        assert_eq!(timestamp_prefix(b"2024-01-15T10:01:00+2:00"), Some((want, 19)));
        assert_eq!(timestamp_prefix(b"2024-01-15T10:01:00+24:00"), Some((want, 19)));
        for text in [
            "2024-01-15T10:01:00.Z\"",
            "2024-01-15T10:01:00.1234567890Z",
            "2024-01-15x10:01:00Z",
            "2024-01-15T10:01:61Z",
            "2024-01-15T23:59:60Z",
            "2024-01-15T24:01:00Z",
            "2024-02-30T10:01:00Z",
            " 2024-01-15T10:01:00Z",
            "2024-01-15T10:01",
        ] {
            assert_eq!(timestamp_prefix(text.as_bytes()), None, "{text}");
        }
    }

    /// Every date of years 0000 to 9999 (and days 0, 29 to 32, months 0 and 13 around them),
    /// one after another as a stream's records come (so the remembered day is both reused and
    /// replaced), against `parse_timestamp` (Hinnant's era-based day count, written apart).
    #[test]
    fn the_day_count_and_the_calendar_checks_agree_with_parse_timestamp_on_every_date() {
        let mut text = *b"0000-00-00T12:34:56Z";
        for y in 0..=9999u32 {
            for mo in 0..=13u32 {
                for d in [0u32, 1, 15, 28, 29, 30, 31, 32] {
                    for (at, v, n) in [(0, y, 4), (5, mo, 2), (8, d, 2)] {
                        for k in 0..n {
                            text[at + k] = b'0' + (v / 10u32.pow((n - 1 - k) as u32) % 10) as u8;
                        }
                    }
                    let s = std::str::from_utf8(&text).unwrap();
                    let want = crate::time::parse_timestamp_strict(s).ok();
                    assert_eq!(fast_timestamp(&text), want, "{s}");
                    // The same date again (remembered), with another time of day.
                    text[11] = b'0';
                    let again = std::str::from_utf8(&text).unwrap();
                    assert_eq!(fast_timestamp(&text), crate::time::parse_timestamp_strict(again).ok(), "{again}");
                    text[11] = b'1';
                }
            }
        }
    }

    #[test]
    fn fast_timestamp_declines_non_digits_without_overflow() {
        for s in ["2,24-01-15T10:01:00Z", "1970-01,01T14:41:24Z", "\u{ff}970-01-01T00:00:00Z", "1970-01-01T00:00:~0Z"] {
            assert_eq!(fast_timestamp(s.as_bytes()), None, "{s}");
        }
    }

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
