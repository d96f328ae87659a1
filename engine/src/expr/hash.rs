//! Spark's `hash(...)`: Murmur3 x86 32-bit over the arguments in order, seed 42, each
//! argument's hash the seed of the next (Spark's `Murmur3Hash` expression and its
//! `Murmur3_x86_32`, whose byte-string hash mixes the trailing bytes one at a time, unlike the
//! reference MurmurHash3).

use crate::value::Value;

/// The seed of Spark's `hash`.
pub(crate) const SEED: u32 = 42;

const C1: u32 = 0xcc9e_2d51;
const C2: u32 = 0x1b87_3593;

fn mix_k1(k1: u32) -> u32 {
    k1.wrapping_mul(C1).rotate_left(15).wrapping_mul(C2)
}

fn mix_h1(h1: u32, k1: u32) -> u32 {
    (h1 ^ k1).rotate_left(13).wrapping_mul(5).wrapping_add(0xe654_6b64)
}

fn fmix(mut h1: u32, length: u32) -> u32 {
    h1 ^= length;
    h1 ^= h1 >> 16;
    h1 = h1.wrapping_mul(0x85eb_ca6b);
    h1 ^= h1 >> 13;
    h1 = h1.wrapping_mul(0xc2b2_ae35);
    h1 ^ (h1 >> 16)
}

fn hash_int(x: u32, seed: u32) -> u32 {
    fmix(mix_h1(seed, mix_k1(x)), 4)
}

fn hash_long(x: u64, seed: u32) -> u32 {
    let h1 = mix_h1(seed, mix_k1(x as u32));
    fmix(mix_h1(h1, mix_k1((x >> 32) as u32)), 8)
}

/// Spark's `hashUnsafeBytes`: whole 4-byte words little-endian, then each trailing byte
/// (sign-extended) as a word of its own.
fn hash_bytes(b: &[u8], seed: u32) -> u32 {
    let mut h1 = seed;
    let mut words = b.chunks_exact(4);
    for w in &mut words {
        h1 = mix_h1(h1, mix_k1(u32::from_le_bytes([w[0], w[1], w[2], w[3]])));
    }
    for &byte in words.remainder() {
        h1 = mix_h1(h1, mix_k1(byte as i8 as i32 as u32));
    }
    fmix(h1, b.len() as u32)
}

/// The hash of one value with `seed`; NULL leaves the seed as it is. Doubles and floats hash
/// their bits with -0.0 as 0.0 (Spark normalises it); NaN has one bit pattern, as Java's
/// `doubleToLongBits`.
pub(crate) fn hash_value(v: &Value, seed: u32) -> u32 {
    match v {
        Value::Null => seed,
        Value::Bool(b) => hash_int(u32::from(*b), seed),
        Value::Int(x) => hash_int(*x as u32, seed),
        Value::Date(d) => hash_int(*d as u32, seed),
        Value::Long(x) => hash_long(*x as u64, seed),
        Value::Timestamp(t) => hash_long(t.0 as u64, seed),
        Value::Float(x) => {
            let x = if *x == 0.0 {
                0.0f32
            } else if x.is_nan() {
                f32::NAN
            } else {
                *x
            };
            hash_int(x.to_bits(), seed)
        }
        Value::Double(x) => {
            let x = if *x == 0.0 {
                0.0f64
            } else if x.is_nan() {
                f64::NAN
            } else {
                *x
            };
            hash_long(x.to_bits(), seed)
        }
        Value::Str(s) => hash_bytes(s.as_bytes(), seed),
        // DECIMAL(p <= 18, s): the unscaled value as a BIGINT (binding refuses wider ones)
        Value::Decimal(d) => hash_long(d.unscaled as i64 as u64, seed),
        Value::Struct(_, fields) => fields.iter().fold(seed, |h, f| hash_value(f, h)),
        Value::Window { start, end } => hash_long(end.0 as u64, hash_long(start.0 as u64, seed)),
        Value::List(items) => items.iter().fold(seed, |h, f| hash_value(f, h)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hash(values: &[Value]) -> i32 {
        values.iter().fold(SEED, |h, v| hash_value(v, h)) as i32
    }

    #[test]
    fn hash_is_sparks_murmur3() {
        // Expected values: Spark 4.3's hash(...) (the oracle): hash(1, 'x') = -1305545736
        assert_eq!(hash(&[Value::Int(1), Value::Str("x".into())]), -1_305_545_736);
        // hash(1.5D, -0.0D, CAST('NaN' AS DOUBLE), CAST(-0.0 AS FLOAT), 'héllo wörld', true,
        //      TIMESTAMP '2024-01-15 10:00:00', DATE '2024-01-15') = -1856244890
        let values = [
            Value::Double(1.5),
            Value::Double(-0.0),
            Value::Double(f64::NAN),
            Value::Float(-0.0),
            Value::Str("héllo wörld".into()),
            Value::Bool(true),
            Value::Timestamp(crate::time::Timestamp(1_705_312_800_000_000)),
            Value::Date(19_737),
        ];
        assert_eq!(hash(&values), -1_856_244_890);
        // NULL arguments leave the hash as it is
        assert_eq!(hash(&[Value::Int(1), Value::Null, Value::Str("x".into())]), -1_305_545_736);
    }
}
