//! [`Prices`]: the model's prices ([`price_of_bits`]: `round(100 × 10^(6u))` cents) without a
//! libm `exp` call per price, with the same results.
//!
//! With `u = m / 2^53` and `m = a·2^45 + b·2^37 + c` (`a`, `b` < 256, `c` < 2^37),
//! `100 × 10^(6u) = A[a] × B[b] × e^r`, where `A[a] = 100 × 10^(6a / 2^8)` and
//! `B[b] = 10^(6b / 2^16)` are tables built once and `r = 6 ln 10 × c / 2^53 < 2.1e-4`, so
//! `e^r ≈ 1 + r + r²/2 + r³/6` (the next term, `r⁴/24`, is below 1e-16). The estimate is within
//! about 8 ulp (2^-49 relative) of the true value; [`price_of_bits`] computes from a rounded
//! exponent (about 13.8 × 3 ulp, below 2^-47 relative) and a correctly rounded `exp` (1 ulp), so
//! the two lie within 2^-46 of each other, relative. Only a half-cent boundary between them
//! could round them apart: an estimate within `2^-40 × estimate` (64 times that) of one is
//! recomputed by [`price_of_bits`] itself, which happens about once in 10^5 prices.

use super::model::{price_of_bits, round_half_away};
use super::rng::SplitMix64;

/// Bits of `m` (of 53) indexing each table.
const TABLE_BITS: u32 = 8;
/// Bits of `m` below the tables' indexes (`c`).
const LOW_BITS: u32 = 53 - 2 * TABLE_BITS;
/// `r` per unit of `c`: `6 ln 10 / 2^53`.
const R_PER_UNIT: f64 = 6.0 * std::f64::consts::LN_10 / (1u64 << 53) as f64;
/// Relative distance from a half cent below which the estimate is not trusted to round as the
/// reference does: 2^-40.
const TOLERANCE: f64 = 1.0 / (1u64 << 40) as f64;

/// The tables `A` and `B` of the module documentation (4 KB).
#[derive(Debug)]
pub(crate) struct Prices {
    high: Box<[f64; 1 << TABLE_BITS]>,
    middle: Box<[f64; 1 << TABLE_BITS]>,
}

impl Prices {
    pub(crate) fn new() -> Prices {
        let table = |scale: f64, step: f64| Box::new(std::array::from_fn(|i| scale * 10f64.powf(step * i as f64)));
        let cells = (1u64 << TABLE_BITS) as f64;
        Prices { high: table(100.0, 6.0 / cells), middle: table(1.0, 6.0 / (cells * cells)) }
    }

    /// A price in cents from the next draw: [`price_of_bits`] of its top 53 bits.
    pub(crate) fn next(&self, rng: &mut SplitMix64) -> i64 {
        self.of_bits(rng.next_u64() >> 11)
    }

    /// [`price_of_bits`]`(m)`, for `m < 2^53`.
    pub(crate) fn of_bits(&self, m: u64) -> i64 {
        let y = self.estimate(m);
        let t = y as i64;
        if ((y - t as f64) - 0.5).abs() > y * TOLERANCE { round_half_away(y) } else { price_of_bits(m) }
    }

    /// `100 × 10^(6m / 2^53)` to within 2^-49, relative.
    fn estimate(&self, m: u64) -> f64 {
        let mask = (1 << TABLE_BITS) - 1;
        let a = (m >> (LOW_BITS + TABLE_BITS)) as usize & mask;
        let b = (m >> LOW_BITS) as usize & mask;
        let r = (m & ((1 << LOW_BITS) - 1)) as f64 * R_PER_UNIT;
        self.high[a] * self.middle[b] * (1.0 + r * (1.0 + r * (0.5 + r * (1.0 / 6.0))))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `100 × 10^(6m / 2^53)` as the model computes it before rounding.
    fn reference(m: u64) -> f64 {
        (super::super::rng::unit_of_bits(m) * 6.0 * std::f64::consts::LN_10).exp() * 100.0
    }

    /// Random 53-bit values, and the edges of the tables' cells and of the range.
    fn samples() -> Vec<u64> {
        let mut rng = SplitMix64::new(21);
        let mut m: Vec<u64> = (0..300_000).map(|_| rng.next_u64() >> 11).collect();
        for cell in [0u64, 1, 2, 127, 128, 255] {
            for shift in [LOW_BITS, LOW_BITS + TABLE_BITS] {
                let at = cell << shift;
                m.extend([at, at.saturating_sub(1), at + 1, at + (1 << shift) - 1]);
            }
        }
        m.extend([0, 1, (1 << 53) - 1, (1 << 53) - 2]);
        m.into_iter().map(|m| m & ((1 << 53) - 1)).collect()
    }

    #[test]
    fn the_estimate_is_within_2_to_the_minus_46_of_the_models_value() {
        let prices = Prices::new();
        for m in samples() {
            let (got, expected) = (prices.estimate(m), reference(m));
            assert!((got - expected).abs() <= expected / (1u64 << 46) as f64, "m {m}: {got} vs {expected}");
        }
    }

    #[test]
    fn prices_are_the_models_prices() {
        let prices = Prices::new();
        for m in samples() {
            assert_eq!(prices.of_bits(m), price_of_bits(m), "m {m}");
        }
        let (mut a, mut b) = (SplitMix64::new(5), SplitMix64::new(5));
        for _ in 0..10_000 {
            assert_eq!(prices.next(&mut a), price_of_bits(b.next_u64() >> 11));
        }
    }

    #[test]
    fn prices_near_a_half_cent_are_recomputed_and_still_the_models() {
        // Near $1,000,000 the tolerance is about 1e-4 cent: about 2 draws in 10^4 fall within it.
        let prices = Prices::new();
        let mut rng = SplitMix64::new(8);
        let mut near = 0;
        for _ in 0..200_000 {
            let m = (1 << 53) - 1 - (rng.next_u64() >> 24);
            let y = prices.estimate(m);
            if ((y - y.trunc()) - 0.5).abs() <= y * TOLERANCE {
                near += 1;
                assert_eq!(prices.of_bits(m), price_of_bits(m), "m {m}");
            }
        }
        assert!(near > 0, "no estimate fell near a half cent");
    }
}
