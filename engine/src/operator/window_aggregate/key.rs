//! Group keys as the per-record path compares and hashes them: a single-column key held inline
//! in its group's slot ([`InlineKey`]), a seeded hash of one value consistent with [`Value`]'s
//! grouping equality ([`hash_value`], folded multiplies as foldhash mixes), and that equality
//! itself, inline for the usual key types.

use crate::value::{GroupKey, Record, Value};

/// A single-column key held in the slot itself, so that probing compares it without touching
/// the key's own allocation (nor, for a string of up to 16 bytes, the string's).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) enum InlineKey {
    /// Several columns, or a value of another kind: compare the [`GroupKey`].
    #[default]
    No,
    /// A string of `len <= 16` bytes, zero-padded.
    Str(u8, [u8; 16]),
    /// BIGINT.
    Long(i64),
    /// INT.
    Int(i32),
    /// TIMESTAMP (µs).
    Timestamp(i64),
}

impl InlineKey {
    pub(super) fn of(key: &GroupKey) -> InlineKey {
        let [k] = &key.0[..] else { return InlineKey::No };
        InlineKey::of_value(&k.0)
    }

    /// The inline form of a single-column key whose value is `v` ([`InlineKey::No`] for a
    /// value without one).
    pub(crate) fn of_value(v: &Value) -> InlineKey {
        match v {
            Value::Str(s) if s.len() <= 16 => {
                let mut bytes = [0u8; 16];
                bytes[..s.len()].copy_from_slice(s.as_bytes());
                InlineKey::Str(s.len() as u8, bytes)
            }
            Value::Long(x) => InlineKey::Long(*x),
            Value::Int(x) => InlineKey::Int(*x),
            Value::Timestamp(t) => InlineKey::Timestamp(t.0),
            _ => InlineKey::No,
        }
    }
}

const K0: u64 = 0x243f_6a88_85a3_08d3;
pub(super) const K1: u64 = 0x1319_8a2e_0370_7344;
const K2: u64 = 0xa409_3822_299f_31d0;

/// The folded multiply (both halves of the 128-bit product xor-ed), as foldhash mixes.
#[inline]
pub(super) fn fold(a: u64, b: u64) -> u64 {
    let p = (a as u128).wrapping_mul(b as u128);
    (p as u64) ^ ((p >> 64) as u64)
}

/// Reads 8 bytes at `i` (`i + 8 <= b.len()`).
#[inline]
fn word(b: &[u8], i: usize) -> u64 {
    b.get(i..i + 8).and_then(|w| <[u8; 8]>::try_from(w).ok()).map_or(0, u64::from_le_bytes)
}

/// A seeded hash of a byte string: up to 16 bytes in one folded multiply, longer ones 16 bytes
/// per step (the length is mixed in, so zero padding never collides two lengths).
#[inline]
fn hash_bytes(seed: u64, b: &[u8]) -> u64 {
    let n = b.len();
    let (lo, hi) = if n >= 8 {
        if n > 16 {
            return hash_long(seed, b);
        }
        (word(b, 0), word(b, n - 8))
    } else if n >= 4 {
        let half = |i: usize| b.get(i..i + 4).and_then(|w| <[u8; 4]>::try_from(w).ok()).map_or(0, u32::from_le_bytes);
        (half(0) as u64, half(n - 4) as u64)
    } else if n > 0 {
        ((b[0] as u64) | (b[n / 2] as u64) << 8 | (b[n - 1] as u64) << 16, 0)
    } else {
        (0, 0)
    };
    fold(lo ^ seed ^ K2, hi ^ K1 ^ (n as u64).rotate_left(32))
}

#[inline(never)]
fn hash_long(seed: u64, b: &[u8]) -> u64 {
    let mut h = seed ^ (b.len() as u64);
    let mut chunks = b.chunks_exact(16);
    for c in &mut chunks {
        h = fold(word(c, 0) ^ h ^ K2, word(c, 8) ^ K1);
    }
    let n = b.len();
    fold(word(b, n - 16) ^ h ^ K0, word(b, n - 8) ^ K2)
}

impl InlineKey {
    /// Whether the single-column key is `record`'s at `cols` (grouping equality); `None` for
    /// [`InlineKey::No`]: the caller compares the whole key.
    #[inline(always)]
    pub(crate) fn matches(&self, record: &Record, cols: &[usize]) -> Option<bool> {
        let v = match cols {
            [c] => record.values.get(*c),
            _ => None,
        };
        // (matched by reference: the inline bytes are compared in place, not copied first)
        Some(match (self, v) {
            (InlineKey::No, _) => return None,
            (InlineKey::Str(len, bytes), Some(Value::Str(s))) => {
                // (`len <= 16`: the length is compared before the bytes are read)
                let s = s.as_bytes();
                s.len() == usize::from(*len) && bytes_eq(s, &bytes[..s.len().min(16)])
            }
            (InlineKey::Long(x), Some(Value::Long(y))) => x == y,
            (InlineKey::Int(x), Some(Value::Int(y))) => x == y,
            (InlineKey::Timestamp(x), Some(Value::Timestamp(y))) => *x == y.0,
            _ => false,
        })
    }
}

/// A seeded hash of one value, consistent with [`Value`]'s grouping equality: inline for
/// strings, integers and timestamps, `other` (a hash of [`Value`]'s own `Hash`, which
/// normalises NaN and -0.0) for the rest.
#[inline(always)]
pub(crate) fn hash_value(seed: u64, v: &Value, other: impl FnOnce(&Value) -> u64) -> u64 {
    match v {
        Value::Str(x) => hash_bytes(seed, x.as_bytes()),
        Value::Long(x) => fold(seed ^ *x as u64, K0 ^ 1),
        Value::Int(x) => fold(seed ^ *x as i64 as u64, K0 ^ 2),
        Value::Timestamp(t) => fold(seed ^ t.0 as u64, K0 ^ 3),
        other_value => other(other_value),
    }
}

/// Folds the hash `h` of the values so far with the next value's hash `v` (keys of several
/// columns).
#[inline]
pub(crate) fn combine(h: u64, v: u64) -> u64 {
    fold(h ^ v, K1)
}

/// [`Value`]'s grouping equality, inline for the usual key types (a shared string is equal
/// without reading it; short strings compare as two words).
#[inline]
pub(super) fn same_value(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Str(x), Value::Str(y)) => x == y,
        (Value::Long(x), Value::Long(y)) => x == y,
        (Value::Int(x), Value::Int(y)) => x == y,
        (Value::Timestamp(x), Value::Timestamp(y)) => x == y,
        _ => a == b,
    }
}

#[inline(always)]
fn bytes_eq(a: &[u8], b: &[u8]) -> bool {
    let n = a.len();
    if n != b.len() {
        return false;
    }
    if (8..=16).contains(&n) {
        // two overlapping words cover the whole string
        let word =
            |s: &[u8], i: usize| s.get(i..i + 8).and_then(|w| <[u8; 8]>::try_from(w).ok()).map(u64::from_ne_bytes);
        return word(a, 0) == word(b, 0) && word(a, n - 8) == word(b, n - 8);
    }
    if (4..8).contains(&n) {
        // two overlapping half-words (no call to memcmp for short keys)
        let half =
            |s: &[u8], i: usize| s.get(i..i + 4).and_then(|w| <[u8; 4]>::try_from(w).ok()).map(u32::from_ne_bytes);
        return half(a, 0) == half(b, 0) && half(a, n - 4) == half(b, n - 4);
    }
    a == b
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_and_long_strings_compare_by_content() {
        for (a, b) in [
            ("", ""),
            ("abc", "abd"),
            ("key-1234", "key-1234"),
            ("key-1234", "key-1235"),
            ("0123456789abcdef", "0123456789abcdeF"),
            ("0123456789abcdefg", "0123456789abcdefg"),
            ("01234567x", "01234567y"),
            ("x1234567", "y1234567"),
        ] {
            let (va, vb) = (Value::Str(a.into()), Value::Str(b.into()));
            assert_eq!(same_value(&va, &vb), a == b, "{a:?} {b:?}");
        }
        // every length, a difference at every position
        for n in 0..20usize {
            let a: String = (0..n).map(|i| char::from(b'a' + i as u8)).collect();
            assert!(bytes_eq(a.as_bytes(), a.clone().as_bytes()));
            for at in 0..n {
                let mut b = a.clone().into_bytes();
                b[at] = b'Z';
                assert!(!bytes_eq(a.as_bytes(), &b), "{a:?} differs at {at}");
            }
        }
        assert!(!same_value(&Value::Str("1".into()), &Value::Long(1)));
        assert!(same_value(&Value::Double(-0.0), &Value::Double(0.0)));
        assert!(same_value(&Value::Null, &Value::Null));
    }
}
