//! The JSON decoder's fast path: one pass over a well-formed, plain line, straight to the needed
//! columns, with no intermediate token and no allocation but the record's own (its values, and a
//! shared string per needed STRING column).
//!
//! It accepts only what it can decode exactly as the full parser ([`super::json`]) would, and
//! declines (`None`) everything else: a backslash in a key or string, a nested object or array,
//! a value that is not of the column's type, any syntax error, a missing required column. The
//! full parser then decides, so results and error messages never depend on which path ran.
//! `json_props` checks that on random and malformed input both paths agree.
//!
//! Scanning is word-at-a-time where it pays: the search for the end of a string (8 bytes per
//! step, the classic "has zero byte" bit trick) and the comparison of keys with column names.
//! An ASCII line (checked a word at a time) needs no other UTF-8 check.

use std::sync::Arc;

use ahash::AHashMap;

use crate::schema::DataType;
use crate::time::Timestamp;
use crate::value::{Record, Value};

use super::Plan;
use super::text::{fast_timestamp, parse_f64, parse_i64};

/// Above this many columns keys are found through a hash map rather than by comparing names.
const LINEAR_LOOKUP_MAX: usize = 16;

const ONES: u64 = 0x0101_0101_0101_0101;
const HIGHS: u64 = 0x8080_8080_8080_8080;

/// Column names as bytes, for matching keys without unescaping.
#[derive(Debug, Clone)]
pub(super) struct FastKeys {
    names: Box<[Box<[u8]>]>,
    /// Per name: its length and its first 16 bytes, zero-padded ([`padded`]).
    words: Box<[(usize, [u64; 2])]>,
    by_name: Option<AHashMap<Box<[u8]>, usize>>,
}

/// The `len <= 16` bytes at `start` as two little-endian words, zero-padded, when 16 bytes can
/// be read there; `None` for longer keys and near the end of the line.
#[inline]
fn padded(b: &[u8], start: usize, len: usize) -> Option<[u64; 2]> {
    if len > 16 {
        return None;
    }
    let mask = |n: usize| if n >= 8 { u64::MAX } else { (1u64 << (8 * n)) - 1 };
    Some([word(b, start)? & mask(len), word(b, start + 8)? & mask(len.saturating_sub(8))])
}

impl FastKeys {
    pub(super) fn new(plan: &Plan) -> FastKeys {
        let names: Box<[Box<[u8]>]> = plan.columns.iter().map(|c| c.name.as_bytes().into()).collect();
        let by_name = (names.len() > LINEAR_LOOKUP_MAX).then(|| {
            let mut m = AHashMap::new();
            for (i, n) in names.iter().enumerate() {
                // The first column of a name wins, as the full parser's position() search.
                m.entry(n.clone()).or_insert(i);
            }
            m
        });
        let words = names
            .iter()
            .map(|n| {
                let mut buf = [0u8; 32];
                let k = n.len().min(16);
                buf[..k].copy_from_slice(&n[..k]);
                (n.len(), padded(&buf, 0, k).unwrap_or_default())
            })
            .collect();
        FastKeys { names, words, by_name }
    }

    /// The column named by the key `b[start..end]` (bytes of a key without escapes); `hint`
    /// (the column after the previous match) is tried first, as the full parser does. A key of
    /// up to 16 bytes is compared as two words.
    #[inline]
    fn column(&self, b: &[u8], start: usize, end: usize, hint: usize) -> Option<usize> {
        let key = &b[start..end];
        if self.by_name.is_none()
            && let Some(kw) = padded(b, start, key.len())
        {
            // `padded` is `Some` only for keys of <= 16 bytes: equal lengths and words are
            // equal names.
            let hit = |&(len, w): &(usize, [u64; 2])| len == key.len() && w == kw;
            if self.words.get(hint).is_some_and(hit) {
                return Some(hint);
            }
            return self.words.iter().position(hit);
        }
        if self.names.get(hint).is_some_and(|n| same(n, key)) {
            return Some(hint);
        }
        match &self.by_name {
            Some(m) => m.get(key).copied(),
            None => self.names.iter().position(|n| same(n, key)),
        }
    }
}

/// Byte equality of two short slices, inline (a `memcmp` call costs more than a key).
#[inline]
fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x == y)
}

/// Powers of ten exact in a double.
const POW10: [f64; 23] = [
    1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20,
    1e21, 1e22,
];

/// The value of the JSON number `b[i..end]` (already checked by [`number_end`]) when Clinger's
/// fast path gives it exactly: at most 15 digits and a power of ten within 10^±22, so the digits
/// and the power are both exact doubles and one correctly rounded operation gives the correctly
/// rounded result (as `str::parse`). `None` otherwise.
#[inline]
fn exact_f64(b: &[u8], mut i: usize, end: usize) -> Option<f64> {
    let neg = b.get(i) == Some(&b'-');
    if neg {
        i += 1;
    }
    let (mut m, mut digits, mut frac, mut after_dot) = (0u64, 0u32, 0i32, false);
    let mut exp = 0i32;
    while i < end {
        match b[i] {
            c @ b'0'..=b'9' => {
                m = m * 10 + (c - b'0') as u64;
                digits += 1;
                if digits > 15 {
                    return None;
                }
                frac += after_dot as i32;
            }
            b'.' => after_dot = true,
            _ => {
                // An exponent: e, optional sign, at most 3 digits here.
                let e = b.get(i + 1..end)?;
                let (sign, ds) = match e.first() {
                    Some(b'-') => (-1, &e[1..]),
                    Some(b'+') => (1, &e[1..]),
                    _ => (1, e),
                };
                if ds.is_empty() || ds.len() > 3 {
                    return None;
                }
                exp = sign * ds.iter().fold(0i32, |a, &d| a * 10 + (d - b'0') as i32);
                break;
            }
        }
        i += 1;
    }
    let p = exp - frac;
    let v = if (0..=22).contains(&p) {
        m as f64 * POW10[p as usize]
    } else if (-22..0).contains(&p) {
        m as f64 / POW10[(-p) as usize]
    } else {
        return None;
    };
    Some(if neg { -v } else { v })
}

#[inline]
fn word(b: &[u8], i: usize) -> Option<u64> {
    let w: [u8; 8] = b.get(i..i + 8)?.try_into().ok()?;
    Some(u64::from_le_bytes(w))
}

/// Whether every byte is ASCII.
#[inline]
fn is_ascii(b: &[u8]) -> bool {
    let mut acc = 0u64;
    let mut i = 0;
    while let Some(w) = word(b, i) {
        acc |= w;
        i += 8;
    }
    for &c in b.get(i..).unwrap_or_default() {
        acc |= c as u64;
    }
    acc & HIGHS == 0
}

/// The index of the closing quote of the string whose content starts at `i`, when the string
/// holds no backslash and no control character (else `None`).
#[inline]
fn string_end(b: &[u8], mut i: usize) -> Option<usize> {
    while let Some(w) = word(b, i) {
        let quote = w ^ (ONES * b'"' as u64);
        let slash = w ^ (ONES * b'\\' as u64);
        // A set high bit marks a byte that is zero (quote, backslash) or below 0x20; the lowest
        // marked byte is exact (borrows only propagate upwards).
        let hit =
            (quote.wrapping_sub(ONES) & !quote | slash.wrapping_sub(ONES) & !slash | w.wrapping_sub(ONES * 0x20) & !w)
                & HIGHS;
        if hit != 0 {
            i += (hit.trailing_zeros() / 8) as usize;
            return (b[i] == b'"').then_some(i);
        }
        i += 8;
    }
    while let Some(&c) = b.get(i) {
        match c {
            b'"' => return Some(i),
            b'\\' | 0..0x20 => return None,
            _ => i += 1,
        }
    }
    None
}

#[inline]
fn ws(b: &[u8], mut i: usize) -> usize {
    while let Some(b' ' | b'\t' | b'\n' | b'\r') = b.get(i) {
        i += 1;
    }
    i
}

#[inline]
fn digits(b: &[u8], mut i: usize) -> usize {
    while let Some(b'0'..=b'9') = b.get(i) {
        i += 1;
    }
    i
}

/// The end of the JSON number at `i`, and whether it is an integer (no fraction, no exponent).
#[inline]
fn number_end(b: &[u8], mut i: usize) -> Option<(usize, bool)> {
    if b.get(i) == Some(&b'-') {
        i += 1;
    }
    match b.get(i) {
        Some(b'0') => i += 1,
        Some(b'1'..=b'9') => i = digits(b, i + 1),
        _ => return None,
    }
    let mut integer = true;
    if b.get(i) == Some(&b'.') {
        let end = digits(b, i + 1);
        if end == i + 1 {
            return None;
        }
        i = end;
        integer = false;
    }
    if let Some(b'e' | b'E') = b.get(i) {
        i += 1;
        if let Some(b'+' | b'-') = b.get(i) {
            i += 1;
        }
        let end = digits(b, i);
        if end == i {
            return None;
        }
        i = end;
        integer = false;
    }
    // A digit right after a leading 0 is not JSON.
    if let Some(b'0'..=b'9') = b.get(i) {
        return None;
    }
    Some((i, integer))
}

/// The literal `lit` at `i`: the index after it.
#[inline]
fn literal(b: &[u8], i: usize, lit: &[u8]) -> Option<usize> {
    (b.get(i..i + lit.len())? == lit).then_some(i + lit.len())
}

/// Skips the (scalar) value at `i`; `None` for objects, arrays and anything unusual.
#[inline]
fn skip(b: &[u8], i: usize) -> Option<usize> {
    match *b.get(i)? {
        b'"' => string_end(b, i + 1).map(|z| z + 1),
        b'-' | b'0'..=b'9' => number_end(b, i).map(|(end, _)| end),
        b't' => literal(b, i, b"true"),
        b'f' => literal(b, i, b"false"),
        b'n' => literal(b, i, b"null"),
        _ => None,
    }
}

/// The value at `i` for a column of type `ty`, and the index after it; `None` when the full
/// parser must decide (a type mismatch, an escape, a number out of range, ...).
#[inline]
fn value(b: &[u8], valid: Option<&str>, i: usize, ty: DataType, plan: &Plan) -> Option<(Value, usize)> {
    match *b.get(i)? {
        b'"' => {
            let z = string_end(b, i + 1)?;
            let v = match ty {
                // An ASCII line: each string is checked (cheaper than the whole line); another
                // was validated whole: quotes are ASCII, so both ends are char boundaries.
                DataType::String => Value::Str(Arc::from(match valid {
                    None => std::str::from_utf8(&b[i + 1..z]).ok()?,
                    Some(line) => line.get(i + 1..z)?,
                })),
                DataType::Timestamp => Value::Timestamp(fast_timestamp(&b[i + 1..z])?),
                _ => return None,
            };
            Some((v, z + 1))
        }
        b'-' | b'0'..=b'9' => {
            let (end, integer) = number_end(b, i)?;
            if let (DataType::Double | DataType::Float, Some(x)) = (ty, exact_f64(b, i, end)) {
                let v = if ty == DataType::Float { Value::Float(x as f32) } else { Value::Double(x) };
                return Some((v, end));
            }
            // ASCII digits, signs, dots and exponents only: always UTF-8.
            let text = std::str::from_utf8(&b[i..end]).ok()?;
            let v = match ty {
                DataType::Double => Value::Double(parse_f64(text)?),
                DataType::Float => Value::Float(parse_f64(text)? as f32),
                DataType::Long if integer => Value::Long(parse_i64(text)?),
                DataType::Int if integer => Value::Int(i32::try_from(parse_i64(text)?).ok()?),
                DataType::Timestamp if integer => {
                    Value::Timestamp(Timestamp::from_integer(parse_i64(text)?, plan.unit)?)
                }
                DataType::Timestamp => Value::Timestamp(Timestamp::from_number(parse_f64(text)?, plan.unit)?),
                _ => return None,
            };
            Some((v, end))
        }
        b't' if ty == DataType::Boolean => Some((Value::Bool(true), literal(b, i, b"true")?)),
        b'f' if ty == DataType::Boolean => Some((Value::Bool(false), literal(b, i, b"false")?)),
        b'n' => Some((Value::Null, literal(b, i, b"null")?)),
        _ => None,
    }
}

/// Decodes `line` if it is plain enough (see the module documentation); `None` otherwise.
pub(super) fn decode(plan: &Plan, keys: &FastKeys, line: &[u8]) -> Option<Record> {
    // `None` when ASCII; else the line, validated.
    let valid = if is_ascii(line) { None } else { Some(std::str::from_utf8(line).ok()?) };
    let b = line;
    let mut i = ws(b, 0);
    if b.get(i) != Some(&b'{') {
        return None;
    }
    let mut values = plan.empty_values();
    i = ws(b, i + 1);
    if b.get(i) == Some(&b'}') {
        i += 1;
    } else {
        let mut hint = 0;
        loop {
            if b.get(i) != Some(&b'"') {
                return None;
            }
            let z = string_end(b, i + 1)?;
            let col = keys.column(b, i + 1, z, hint);
            i = ws(b, z + 1);
            if b.get(i) != Some(&b':') {
                return None;
            }
            i = ws(b, i + 1);
            match col {
                Some(c) => {
                    hint = c + 1;
                    let column = &plan.columns[c];
                    if column.decode {
                        let (v, end) = value(b, valid, i, column.ty, plan)?;
                        values[c] = v;
                        i = end;
                    } else {
                        i = skip(b, i)?;
                    }
                }
                None => i = skip(b, i)?,
            }
            i = ws(b, i);
            match b.get(i) {
                Some(b',') => i = ws(b, i + 1),
                Some(b'}') => {
                    i += 1;
                    break;
                }
                _ => return None,
            }
        }
    }
    if ws(b, i) != b.len() {
        return None;
    }
    plan.finish(values).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn string_end_finds_the_quote_and_refuses_escapes_and_controls() {
        for (s, want) in [
            (&b"abc\" tail"[..], Some(3)),
            (b"0123456789abcdef\"", Some(16)),
            (b"01234567\"", Some(8)),
            (b"0123456\\\"", None),
            (b"0123\x01567\"", None),
            (b"no end at all....", None),
            (b"\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\"", Some(8)),
            (b"\"", Some(0)),
        ] {
            assert_eq!(string_end(s, 0), want, "{:?}", String::from_utf8_lossy(s));
        }
    }

    proptest::proptest! {
        #[test]
        fn exact_f64_is_str_parse_or_declines(s in "-?(0|[1-9][0-9]{0,17})(\\.[0-9]{1,8})?([eE][+-]?[0-9]{1,4})?", x in proptest::prelude::any::<f64>()) {
            for t in [s, x.to_string()] {
                let b = t.as_bytes();
                if let Some((end, _)) = number_end(b, 0)
                    && let Some(v) = exact_f64(b, 0, end)
                {
                    proptest::prop_assert_eq!(Some(v.to_bits()), t[..end].parse::<f64>().ok().map(f64::to_bits), "{}", t);
                }
            }
        }
    }

    #[test]
    fn numbers_follow_the_json_grammar() {
        for (s, want) in [
            ("0", Some((1, true))),
            ("-12,", Some((3, true))),
            ("1.5e-3}", Some((6, false))),
            ("01", None),
            ("1.", None),
            ("1e", None),
            ("-", None),
            (".5", None),
            ("1E+2", Some((4, false))),
        ] {
            assert_eq!(number_end(s.as_bytes(), 0), want, "{s}");
        }
    }
}
