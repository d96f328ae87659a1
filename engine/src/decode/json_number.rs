//! JSON numbers for the fast path ([`super::json_fast`]): checked against the grammar and
//! accumulated in one pass, with Clinger's exact fast path to a double.

use super::json_fast::word;
use super::text::leading_digits;

/// Powers of ten exact in a double.
const POW10: [f64; 23] = [
    1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20,
    1e21, 1e22,
];

/// A JSON number checked and accumulated in one pass: `±mantissa × 10^exp`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct Num {
    /// The index after the number.
    pub(super) end: usize,
    /// No fraction, no exponent.
    pub(super) integer: bool,
    /// A leading minus.
    pub(super) neg: bool,
    /// The digits, exact when `digits <= 19`.
    pub(super) mantissa: u64,
    /// Digits of the integer part and the fraction (leading zeros counted: a number of more
    /// than 19 takes the exact slow path even when its mantissa would fit).
    pub(super) digits: usize,
    /// The power of ten (the exponent minus the fraction's digits), saturated far out of range.
    pub(super) exp: i32,
}

impl Num {
    /// The value when Clinger's fast path gives it exactly: a mantissa of at most 2^53 and a
    /// power of ten within 10^±22, so both are exact doubles and one correctly rounded
    /// operation gives the correctly rounded result (as `str::parse`). `None` otherwise.
    #[inline(always)]
    pub(super) fn exact_f64(&self) -> Option<f64> {
        if self.digits > 19 || self.mantissa > 1 << 53 {
            return None;
        }
        let m = self.mantissa as f64;
        let v = match self.exp {
            0..=22 => m * POW10[self.exp as usize],
            -22..0 => m / POW10[(-self.exp) as usize],
            _ => return None,
        };
        Some(if self.neg { -v } else { v })
    }

    /// The integer when it has at most 18 digits (so it fits an i64 whatever its sign).
    #[inline(always)]
    pub(super) fn small_i64(&self) -> Option<i64> {
        if !self.integer || self.digits > 18 {
            return None;
        }
        let v = self.mantissa as i64;
        Some(if self.neg { -v } else { v })
    }
}

/// The number at `i` by the JSON grammar `-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?`,
/// not followed by a digit (so `01` is refused); `None` when there is none.
///
/// An integer of 1 to 7 digits with 8 bytes readable from its first digit (most numbers of a
/// record: ids, counts, prices) is read as one word ([`integer_word`]); the rest byte by byte
/// ([`scan_number_bytewise`], which gives the same `Num` for those too).
#[inline(always)]
pub(super) fn scan_number(b: &[u8], i: usize) -> Option<Num> {
    let neg = b.get(i) == Some(&b'-');
    let j = i + neg as usize;
    if let Some(w) = word(b, j)
        && let Some((k, mantissa)) = integer_word(w)
    {
        return Some(Num { end: j + k, integer: true, neg, mantissa, digits: k, exp: 0 });
    }
    scan_number_bytewise(b, i)
}

/// The integer that the 8 bytes `w` (little-endian: the first byte lowest) start with, when it
/// has 1 to 7 digits and no fraction or exponent follows (the byte after it is not `.`, `e`,
/// `E`): its length and value ([`leading_digits`]). `None` otherwise, for the byte-wise scan to
/// decide (a leading zero followed by a digit included: the grammar refuses it).
#[inline(always)]
fn integer_word(w: u64) -> Option<(usize, u64)> {
    let (k, v) = leading_digits(w);
    if k == 0 || k == 8 {
        return None;
    }
    let after = (w >> (8 * k)) as u8;
    if after == b'.' || after | 0x20 == b'e' || (k > 1 && w as u8 == b'0') {
        return None;
    }
    Some((k, v))
}

/// [`scan_number`] byte by byte: every number of the grammar.
#[inline(never)]
pub(super) fn scan_number_bytewise(b: &[u8], i: usize) -> Option<Num> {
    let neg = b.get(i) == Some(&b'-');
    let mut j = i + neg as usize;
    let (mut mantissa, mut exp) = (0u64, 0i32);
    // Wraps beyond 19 digits, when `digits` says it is not exact.
    let add = |c: u8, mantissa: u64| mantissa.wrapping_mul(10).wrapping_add((c - b'0') as u64);
    let int_start = j;
    match b.get(j) {
        Some(b'0') => j += 1,
        Some(b'1'..=b'9') => {
            while let Some(&c @ b'0'..=b'9') = b.get(j) {
                mantissa = add(c, mantissa);
                j += 1;
            }
        }
        _ => return None,
    }
    let mut digits = j - int_start;
    let mut integer = true;
    if b.get(j) == Some(&b'.') {
        j += 1;
        let start = j;
        while let Some(&c @ b'0'..=b'9') = b.get(j) {
            mantissa = add(c, mantissa);
            j += 1;
        }
        if j == start {
            return None;
        }
        digits += j - start;
        // Saturated: far beyond any double's range.
        exp = -i32::try_from(j - start).unwrap_or(i32::MAX);
        integer = false;
    }
    if let Some(b'e' | b'E') = b.get(j) {
        j += 1;
        let negative_exp = b.get(j) == Some(&b'-');
        if let Some(b'+' | b'-') = b.get(j) {
            j += 1;
        }
        let start = j;
        let mut e = 0i32;
        while let Some(&c @ b'0'..=b'9') = b.get(j) {
            // Saturated: far beyond any double's range either way.
            e = (e * 10 + (c - b'0') as i32).min(1_000_000);
            j += 1;
        }
        if j == start {
            return None;
        }
        exp = exp.saturating_add(if negative_exp { -e } else { e });
        integer = false;
    }
    if let Some(b'0'..=b'9') = b.get(j) {
        return None;
    }
    Some(Num { end: j, integer, neg, mantissa, digits, exp })
}
