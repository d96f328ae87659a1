//! The JSON decoder's fast path: one pass over the line, straight to the needed columns, with
//! no intermediate token and no allocation but the record's own (its values, and a shared
//! string per needed STRING column).
//!
//! It takes every line the full parser ([`super::json`]) accepts, with the same record: each
//! timestamp form of [`crate::time::parse_timestamp`], whitespace wherever JSON allows it,
//! escapes in keys and strings, keys in any order, duplicate keys (the last wins), fields that
//! are no needed column skipped (nested objects and arrays too) without building anything. It
//! declines (`None`) only a line the full parser rejects, which then runs to produce the error
//! (so results and error messages never depend on which path ran). `json_props` checks on random
//! and malformed input that the fast path gives `Some(record)` exactly when the full parser
//! gives `Ok(record)`.
//!
//! Where the time goes on a ~100-byte record, and what is done about it:
//! - keys: producers write the columns in schema order, so the key expected next (the column
//!   after the previous match) is compared first, with the comma (and a space) before it and
//!   the colon after it (`,"name":` or `, "name":`, one or two masked 8-byte words) right where
//!   the previous value ended, without searching for the key's end; then as `name":` after
//!   whitespace; any other key is scanned and looked up;
//! - strings: the end is found 8 bytes per step (the classic "has zero byte" bit trick), which
//!   also stops at non-ASCII bytes: outside strings every byte must be ASCII anyway, so checking
//!   the strings that hold one is the line's whole UTF-8 check (an ASCII line costs no extra
//!   pass; `str::from_utf8` on the whole ~100-byte line cost as much as a fifth of the decode),
//!   and a STRING value is not checked a second time to become a `&str` ([`string_at`]);
//!   a backslash moves the scan to a byte-wise one that checks each escape ([`escaped_end`]);
//! - timestamps: a TIMESTAMP string is parsed in place ([`timestamp_prefix`], every form), its
//!   closing quote checked after it, without a scan for the quote first;
//! - numbers: checked against the JSON grammar and accumulated in the same pass; Clinger's
//!   exact fast path gives most doubles without `str::parse` ([`super::json_number`]);
//! - values are written straight into the record's slots (no intermediate `(Value, end)`
//!   returned through memory); the rare conversions (an escaped string, a number for a STRING
//!   column, `"NaN"` for a DOUBLE, DATE and DECIMAL columns, a timestamp with whitespace around
//!   it) hand the value's token to the full parser's own conversion ([`general`]).

use crate::value::Text;
use ahash::AHashMap;

use crate::schema::DataType;
use crate::time::Timestamp;
use crate::value::Value;

use super::json::{escape_end, token_value, unescape};
use super::json_number::{Num, scan_number};
use super::text::{parse_f64, parse_i64, timestamp_prefix};
use super::{MAX_DEPTH, Plan};

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
    /// Per column: its key patterns and its type when decoded.
    cols: Box<[FastCol]>,
}

/// What the fast path needs of a column, together (one bounds check per key).
#[derive(Debug, Clone, Copy)]
struct FastCol {
    /// Its key as it must appear in the line, when it can be compared as words.
    key: Option<KeyPattern>,
    /// Its key with the comma before it, when it can be compared as words.
    after_comma: Option<KeyPattern>,
    /// Its key with a comma and a space before it (`", "`, as Python's `json.dumps` writes).
    after_comma_space: Option<KeyPattern>,
    /// Its type when it is decoded (needed or required), `None` when skipped.
    decoded: Option<DataType>,
}

/// A key's column and its type when decoded: `Some((index, None))` for a column that is only
/// skipped, `None` for a key that is no column.
type KeyCol = Option<(usize, Option<DataType>)>;

/// A key as it must appear in the line, compared as little-endian words without searching for
/// its end: `name":` (a plain column name, the key's closing quote and the colon right after
/// it, as producers write them), or `,"name":` / `, "name":` (the same key right after the
/// previous value's comma). 3..=16 bytes: the first 8 masked to the pattern's length, and for
/// patterns longer than 8 the last 8 (overlapping the first word). A key with other whitespace
/// around its colon or comma is left to the scan.
#[derive(Debug, Clone, Copy)]
struct KeyPattern {
    len: usize,
    head: u64,
    head_mask: u64,
    tail: u64,
}

impl KeyPattern {
    /// The pattern `name":`; `None` for names longer than 14 bytes or holding `"`, `\` or a
    /// control character (such a key may be written escaped, so only the full comparison
    /// decides).
    fn new(name: &[u8]) -> Option<KeyPattern> {
        KeyPattern::of(b"", name)
    }

    /// The pattern `,"name":`; `None` for names longer than 12 bytes or not plain (as
    /// [`KeyPattern::new`]).
    fn after_comma(name: &[u8]) -> Option<KeyPattern> {
        KeyPattern::of(b",\"", name)
    }

    /// The pattern `, "name":`; `None` for names longer than 11 bytes or not plain.
    fn after_comma_space(name: &[u8]) -> Option<KeyPattern> {
        KeyPattern::of(b", \"", name)
    }

    /// The pattern `{prefix}name":`, when it fits 16 bytes and the name is plain.
    fn of(prefix: &[u8], name: &[u8]) -> Option<KeyPattern> {
        let len = prefix.len() + name.len() + 2;
        if len > 16 || name.iter().any(|&c| c == b'"' || c == b'\\' || c < 0x20) {
            return None;
        }
        let mut buf = [0u8; 16];
        buf[..prefix.len()].copy_from_slice(prefix);
        buf[prefix.len()..len - 2].copy_from_slice(name);
        buf[len - 2] = b'"';
        buf[len - 1] = b':';
        let head_mask = if len >= 8 { u64::MAX } else { (1u64 << (8 * len)) - 1 };
        let tail = if len > 8 { word(&buf, len - 8)? } else { 0 };
        Some(KeyPattern { len, head: word(&buf, 0)? & head_mask, head_mask, tail })
    }

    /// Whether the pattern is at `p` (and so its colon at `p + len - 1`). False, leaving the
    /// decision to a scan, when fewer than 8 bytes remain.
    #[inline(always)]
    fn matches(&self, b: &[u8], p: usize) -> bool {
        // The name holds no `"` or `\`: equal bytes up to and with the quote are the same key.
        word(b, p).is_some_and(|w| w & self.head_mask == self.head)
            && (self.len <= 8 || word(b, p + self.len - 8) == Some(self.tail))
    }
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
        let cols = names
            .iter()
            .zip(plan.columns.iter())
            .map(|(n, c)| FastCol {
                key: KeyPattern::new(n),
                after_comma: KeyPattern::after_comma(n),
                after_comma_space: KeyPattern::after_comma_space(n),
                decoded: c.decode.then_some(c.ty),
            })
            .collect();
        FastKeys { names, words, by_name, cols }
    }

    /// When the key whose content starts at `p` is the column `hint` (checked without scanning
    /// the key) and the colon follows at once: the index after the colon, and the column's
    /// type when decoded.
    #[inline(always)]
    fn expected(&self, b: &[u8], p: usize, hint: usize) -> Option<(usize, Option<DataType>)> {
        match self.cols.get(hint) {
            Some(FastCol { key: Some(k), decoded, .. }) if k.matches(b, p) => Some((p + k.len, *decoded)),
            _ => None,
        }
    }

    /// When the value just ended at `i` is followed at once by a comma (and one space) and the
    /// key of column `hint`, then at once by its colon: the index after the colon, and the
    /// column's type when decoded.
    #[inline(always)]
    fn next_after_comma(&self, b: &[u8], i: usize, hint: usize) -> Option<(usize, Option<DataType>)> {
        let col = self.cols.get(hint)?;
        match col {
            FastCol { after_comma: Some(k), decoded, .. } if k.matches(b, i) => Some((i + k.len, *decoded)),
            FastCol { after_comma_space: Some(k), decoded, .. } if k.matches(b, i) => Some((i + k.len, *decoded)),
            _ => None,
        }
    }

    /// The column named by the key whose content `b[start..end]` holds escapes (checked):
    /// unescaped, then looked up as [`FastKeys::column`] does.
    #[cold]
    fn escaped_column(&self, b: &[u8], start: usize, end: usize, hint: usize) -> Option<usize> {
        let name = unescape(std::str::from_utf8(&b[start..end]).ok()?);
        let key = name.as_bytes();
        if self.names.get(hint).is_some_and(|n| same(n, key)) {
            return Some(hint);
        }
        match &self.by_name {
            Some(m) => m.get(key).copied(),
            None => self.names.iter().position(|n| same(n, key)),
        }
    }

    /// [`FastKeys::column`] with the column's type when decoded ([`KeyCol`]).
    pub(super) fn column_of(&self, b: &[u8], start: usize, end: usize, hint: usize) -> KeyCol {
        self.column(b, start, end, hint).map(|c| (c, self.cols[c].decoded))
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

/// The 8 bytes at `i` as a little-endian word, when there are 8.
#[inline(always)]
pub(super) fn word(b: &[u8], i: usize) -> Option<u64> {
    // Two comparisons (`i <= len`, then 8 left), no overflow check of `i + 8`.
    Some(u64::from_le_bytes(*b.get(i..)?.first_chunk::<8>()?))
}

/// The index of the closing quote of the string whose content starts at `i`, when the string
/// holds no backslash and no control character and is UTF-8 (else `None`).
///
/// Every byte of a line the fast path accepts is ASCII except inside strings, and each string
/// passes here (or is a key equal to a column name), so this is the line's whole UTF-8 check: an
/// ASCII string costs nothing more than finding its end.
#[inline(always)]
pub(super) fn string_end(b: &[u8], mut i: usize) -> Option<usize> {
    let start = i;
    while let Some(w) = word(b, i) {
        let quote = w ^ (ONES * b'"' as u64);
        let slash = w ^ (ONES * b'\\' as u64);
        // A set high bit marks a byte that is zero (quote, backslash), below 0x20 or not ASCII;
        // the lowest marked byte is exact (borrows only propagate upwards).
        let hit = (quote.wrapping_sub(ONES) & !quote
            | slash.wrapping_sub(ONES) & !slash
            | w.wrapping_sub(ONES * 0x20) & !w
            | w)
            & HIGHS;
        if hit != 0 {
            i += (hit.trailing_zeros() / 8) as usize;
            return match b[i] {
                b'"' => Some(i),
                0x80.. => non_ascii_string_end(b, start),
                _ => None,
            };
        }
        i += 8;
    }
    while let Some(&c) = b.get(i) {
        match c {
            b'"' => return Some(i),
            b'\\' | 0..0x20 => return None,
            0x80.. => return non_ascii_string_end(b, start),
            _ => i += 1,
        }
    }
    None
}

/// The content of the string whose content starts at `i`, and the index of its closing quote
/// ([`string_end`]), as a `&str` without checking its UTF-8 a second time (`str::from_utf8`
/// cost about as much as the rest of a short string's decode).
#[inline(always)]
#[allow(unsafe_code)]
pub(super) fn string_at(b: &[u8], i: usize) -> Option<(&str, usize)> {
    let z = string_end(b, i)?;
    let content = &b[i..z];
    debug_assert!(std::str::from_utf8(content).is_ok(), "string_end accepted invalid UTF-8");
    // SAFETY: `string_end(b, i) == Some(z)` holds only when every byte of `b[i..z]` is ASCII
    // (the word scan stops at the first byte >= 0x80, the byte loop too) or `str::from_utf8`
    // accepted it ([`non_ascii_string_end`]): it is UTF-8. The unit and property tests (debug
    // builds: the assertion above) check this on every string.
    Some((unsafe { std::str::from_utf8_unchecked(content) }, z))
}

/// [`string_end`] for a string holding non-ASCII bytes: its end, then its bytes checked to be
/// UTF-8.
#[cold]
fn non_ascii_string_end(b: &[u8], start: usize) -> Option<usize> {
    let z = start + b.get(start..)?.iter().position(|&c| c == b'"' || c == b'\\' || c < 0x20)?;
    (b[z] == b'"' && std::str::from_utf8(&b[start..z]).is_ok()).then_some(z)
}

/// [`string_end`] with escapes allowed: the index of the closing quote of the string whose
/// content starts at `i`, its escapes checked as the full parser checks them; `None` for a
/// string the full parser refuses.
#[inline(always)]
pub(super) fn any_string_end(b: &[u8], i: usize) -> Option<usize> {
    string_end(b, i).or_else(|| escaped_end(b, i))
}

/// [`string_end`] for a string holding a backslash: a byte-wise scan checking each escape
/// ([`escape_end`]), then the content checked to be UTF-8.
#[cold]
#[inline(never)]
fn escaped_end(b: &[u8], start: usize) -> Option<usize> {
    let mut i = start;
    loop {
        match *b.get(i)? {
            b'"' => break,
            b'\\' => i = escape_end(b, i).ok()?,
            0..0x20 => return None,
            _ => i += 1,
        }
    }
    std::str::from_utf8(&b[start..i]).ok()?;
    Some(i)
}

/// The index of the first byte at or after `i` that is not JSON whitespace.
#[inline(always)]
pub(super) fn ws(b: &[u8], mut i: usize) -> usize {
    // Usually none: one comparison (every whitespace byte is <= b' ').
    if b.get(i).is_some_and(|&c| c > b' ') {
        return i;
    }
    while let Some(b' ' | b'\t' | b'\n' | b'\r') = b.get(i) {
        i += 1;
    }
    i
}

/// The literal `lit` at `i`: the index after it.
#[inline(always)]
fn literal(b: &[u8], i: usize, lit: &[u8]) -> Option<usize> {
    (b.get(i..i + lit.len())? == lit).then_some(i + lit.len())
}

/// Skips the value at `i` but a string (numbers, literals, objects and arrays); `None` when it
/// is malformed.
#[inline(never)]
fn skip(b: &[u8], i: usize) -> Option<usize> {
    match *b.get(i)? {
        // `NaN`, `-INF`, ...: read as Spark's allowNonNumericNumbers (the full parser's rule)
        b'N' | b'I' | b'+' | b'-' if let Some((_, n)) = super::json::non_numeric(&b[i..]) => Some(i + n),
        b'-' | b'0'..=b'9' => scan_number(b, i).map(|n| n.end),
        b't' => literal(b, i, b"true"),
        b'f' => literal(b, i, b"false"),
        b'n' => literal(b, i, b"null"),
        b'{' | b'[' => skip_nested(b, i),
        _ => None,
    }
}

/// Skips the value at `i` (strings and `true` / `false` inline, the rest through [`skip`]).
#[inline(always)]
fn skip_value(b: &[u8], i: usize) -> Option<usize> {
    match b.get(i) {
        Some(b'"') => any_string_end(b, i + 1).map(|z| z + 1),
        Some(b't') => literal(b, i, b"true"),
        Some(b'f') => literal(b, i, b"false"),
        _ => skip(b, i),
    }
}

/// Skips the object or array at `i`, checking its syntax as the full parser's `skip_value`
/// does (the same grammar, the same nesting limit of [`MAX_DEPTH`] levels with the line's own
/// object), with an explicit stack (one bit per level: 1 = object), never by recursion.
#[cold]
#[inline(never)]
fn skip_nested(b: &[u8], mut i: usize) -> Option<usize> {
    let mut depth = 0usize;
    let mut objects = 0u128;
    'value: loop {
        match *b.get(i)? {
            open @ (b'{' | b'[') => {
                // + 1 for the top-level object of the line.
                if depth + 2 > MAX_DEPTH {
                    return None;
                }
                let object = open == b'{';
                depth += 1;
                if object {
                    objects |= 1 << (depth - 1);
                } else {
                    objects &= !(1 << (depth - 1));
                }
                i = ws(b, i + 1);
                if b.get(i) == Some(if object { &b'}' } else { &b']' }) {
                    i += 1;
                    depth -= 1;
                } else {
                    if object {
                        i = key_colon(b, i)?;
                    }
                    continue 'value;
                }
            }
            b'"' => i = any_string_end(b, i + 1)? + 1,
            b'N' | b'I' | b'+' | b'-' if let Some((_, n)) = super::json::non_numeric(&b[i..]) => i += n,
            b'-' | b'0'..=b'9' => i = scan_number(b, i)?.end,
            b't' => i = literal(b, i, b"true")?,
            b'f' => i = literal(b, i, b"false")?,
            b'n' => i = literal(b, i, b"null")?,
            _ => return None,
        }
        // After a value: close containers until a comma opens the next value.
        loop {
            if depth == 0 {
                return Some(i);
            }
            i = ws(b, i);
            let object = (objects >> (depth - 1)) & 1 == 1;
            match *b.get(i)? {
                b',' => {
                    i = ws(b, i + 1);
                    if object {
                        i = key_colon(b, i)?;
                    }
                    continue 'value;
                }
                b'}' if object => {
                    i += 1;
                    depth -= 1;
                }
                b']' if !object => {
                    i += 1;
                    depth -= 1;
                }
                _ => return None,
            }
        }
    }
}

/// `"key"`, whitespace, `:`, whitespace inside a skipped object: the index after them.
fn key_colon(b: &[u8], i: usize) -> Option<usize> {
    if b.get(i) != Some(&b'"') {
        return None;
    }
    let i = ws(b, any_string_end(b, i + 1)? + 1);
    (b.get(i) == Some(&b':')).then(|| ws(b, i + 1))
}

/// A number (checked by [`scan_number`]) beyond Clinger's fast path, exactly as `str::parse`.
#[cold]
fn slow_f64(text: &[u8]) -> Option<f64> {
    // ASCII digits, signs, dots and exponents only: always UTF-8.
    parse_f64(std::str::from_utf8(text).ok()?)
}

/// An integer (checked by [`scan_number`]) of 19 digits or more; `None` beyond i64.
#[cold]
fn slow_i64(text: &[u8]) -> Option<i64> {
    parse_i64(std::str::from_utf8(text).ok()?)
}

/// Stores `v` in `slot` (usually still null: then nothing is dropped).
#[inline(always)]
pub(super) fn put(slot: &mut Value, v: Value) {
    let old = std::mem::replace(slot, v);
    if old.is_null() {
        // Nothing to drop: skips the call to the drop glue.
        std::mem::forget(old);
    }
}

/// Decodes the value at `i` for the column `c` of type `ty` into `slot`: the index after it;
/// `None` when the full parser would reject it (a type mismatch, a number out of range, ...).
/// The usual forms are converted here; the others through [`general`].
#[inline(always)]
fn value(b: &[u8], i: usize, c: usize, ty: DataType, plan: &Plan, slot: &mut Value) -> Option<usize> {
    match *b.get(i)? {
        b'"' => match ty {
            DataType::String => match string_at(b, i + 1) {
                Some((content, z)) => {
                    put(slot, Value::Str(Text::from(content)));
                    Some(z + 1)
                }
                None => general(b, i, c, plan, slot),
            },
            DataType::Timestamp => {
                // Parsed in place: a timestamp holds no quote, backslash, control or non-ASCII
                // byte, so when its closing quote follows at once the string is exactly the
                // timestamp (as a scan to the quote, then a parse, would find).
                match timestamp_prefix(b.get(i + 1..)?) {
                    Some((t, n)) if b.get(i + 1 + n) == Some(&b'"') => {
                        put(slot, Value::Timestamp(t));
                        Some(i + 2 + n)
                    }
                    _ => general(b, i, c, plan, slot),
                }
            }
            _ => general(b, i, c, plan, slot),
        },
        b'-' | b'0'..=b'9' => {
            // `-INF`, `-Infinity`: not a number here, a token the full parser's rule reads
            let Some(n) = scan_number(b, i) else { return general(b, i, c, plan, slot) };
            match number_value(&n, &b[i..n.end], ty, plan) {
                Some(v) => {
                    put(slot, v);
                    Some(n.end)
                }
                None => general(b, i, c, plan, slot),
            }
        }
        b't' if ty == DataType::Boolean => {
            put(slot, Value::Bool(true));
            literal(b, i, b"true")
        }
        b'f' if ty == DataType::Boolean => {
            put(slot, Value::Bool(false));
            literal(b, i, b"false")
        }
        b'n' => {
            put(slot, Value::Null);
            literal(b, i, b"null")
        }
        _ => general(b, i, c, plan, slot),
    }
}

/// The number `n` (its text `text`) as a value of a column of type `ty`, when the usual
/// conversions give one; `None` for the rest, which [`general`] decides.
#[inline(always)]
pub(super) fn number_value(n: &Num, text: &[u8], ty: DataType, plan: &Plan) -> Option<Value> {
    match ty {
        DataType::Double => n.exact_f64().or_else(|| slow_f64(text)).map(Value::Double),
        DataType::Float => n.exact_f64().or_else(|| slow_f64(text)).map(|v| Value::Float(v as f32)),
        DataType::Long if n.integer => n.small_i64().or_else(|| slow_i64(text)).map(Value::Long),
        DataType::Int if n.integer => {
            n.small_i64().or_else(|| slow_i64(text)).and_then(|v| i32::try_from(v).ok()).map(Value::Int)
        }
        DataType::Timestamp if n.integer => n
            .small_i64()
            .or_else(|| slow_i64(text))
            .and_then(|v| Timestamp::from_integer(v, plan.unit))
            .map(Value::Timestamp),
        DataType::Timestamp => n
            .exact_f64()
            .or_else(|| slow_f64(text))
            .and_then(|v| Timestamp::from_number(v, plan.unit))
            .map(Value::Timestamp),
        _ => None,
    }
}

/// [`value`]'s rare forms: the token at `i` (a string with its escapes checked, a number, a
/// literal) delimited here, then converted by the full parser's own rules ([`token_value`]),
/// into `slot`; the index after it. An object or array is the text of a STRING column, as
/// written (the full parser's rule); `None` for one in any other column and for anything the
/// full parser rejects.
#[cold]
#[inline(never)]
fn general(b: &[u8], i: usize, c: usize, plan: &Plan, slot: &mut Value) -> Option<usize> {
    let end = match *b.get(i)? {
        b'"' => any_string_end(b, i + 1)? + 1,
        b'{' | b'[' if plan.columns.get(c)?.ty == DataType::String => {
            let end = skip_nested(b, i)?;
            put(slot, Value::Str(Text::from(std::str::from_utf8(&b[i..end]).ok()?)));
            return Some(end);
        }
        b'{' | b'[' => return None,
        _ => skip(b, i)?,
    };
    let text = std::str::from_utf8(&b[i..end]).ok()?;
    let v = token_value(text, plan.columns.get(c)?, plan).ok()?;
    put(slot, v);
    Some(end)
}

/// The key whose opening quote is at `*i`: its column and type ([`KeyCol`]),
/// with `*i` moved past the colon. `None` when the fast path must decline.
#[inline(always)]
fn key(keys: &FastKeys, b: &[u8], i: &mut usize, hint: usize) -> Option<KeyCol> {
    if b.get(*i) != Some(&b'"') {
        return None;
    }
    if let Some((after, ty)) = keys.expected(b, *i + 1, hint) {
        *i = after;
        return Some(Some((hint, ty)));
    }
    let start = *i + 1;
    let (z, c) = match string_end(b, start) {
        Some(z) => (z, keys.column(b, start, z, hint)),
        None => {
            let z = escaped_end(b, start)?;
            (z, keys.escaped_column(b, start, z, hint))
        }
    };
    let c = c.map(|c| (c, keys.cols[c].decoded));
    *i = ws(b, z + 1);
    if b.get(*i) != Some(&b':') {
        return None;
    }
    *i += 1;
    Some(c)
}

/// Decodes `line` into `values` (of [`Plan::width`] values, all null: [`Plan::reset`]) when
/// the full parser accepts it, to the same record (see the module documentation); `None`
/// otherwise, `values` then holding whatever was decoded before the fast path declined.
pub(super) fn decode(plan: &Plan, keys: &FastKeys, line: &[u8], values: &mut [Value]) -> Option<()> {
    let b = line;
    let mut i = ws(b, 0);
    if b.get(i) != Some(&b'{') {
        return None;
    }
    i = ws(b, i + 1);
    if b.get(i) == Some(&b'}') {
        i += 1;
    } else {
        // The column after the previous key's: the key expected next.
        let mut hint = 0;
        let mut col = key(keys, b, &mut i, hint)?;
        loop {
            i = ws(b, i);
            match col {
                Some((c, Some(ty))) => {
                    i = value(b, i, c, ty, plan, values.get_mut(c)?)?;
                    hint = c + 1;
                }
                Some((c, None)) => {
                    i = skip_value(b, i)?;
                    hint = c + 1;
                }
                // As the full parser: a key that is no column leaves the hint where it was.
                None => i = skip_value(b, i)?,
            }
            // Usually the next column's key follows the comma at once.
            if let Some((after, ty)) = keys.next_after_comma(b, i, hint) {
                i = after;
                col = Some((hint, ty));
                continue;
            }
            i = ws(b, i);
            match b.get(i) {
                Some(b',') => {
                    i = ws(b, i + 1);
                    col = key(keys, b, &mut i, hint)?;
                }
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
    // A missing required column: the full parser builds the error.
    for &r in plan.required.iter() {
        if values[r].is_null() {
            return None;
        }
    }
    Some(())
}

#[cfg(test)]
#[path = "json_fast_tests.rs"]
mod tests;
