//! Numeric states: exact long sums, compensated (double-double) double sums, and the moments of
//! the stddev / variance family, all mergeable and retractable without drift.
//!
//! Doubles are accumulated as an unevaluated sum `hi + lo` of two doubles (double-double, ~106
//! significant bits; TwoSum / FastTwoSum of Knuth and Dekker, as in Shewchuk's "Adaptive
//! Precision Floating-Point Arithmetic"). Each add or subtract is error-free up to ~2^-104 of the
//! running sum, so removing values never leaves a drift that a plain `f64` sum would accumulate.
//! Non-finite inputs (NaN, ±Infinity) are not added to the sums but counted apart, so that they can
//! also leave a sliding window; the result applies IEEE rules to them as a plain sum would.

/// A double-double accumulator: the value is `hi + lo`, `|lo| <= ulp(hi) / 2`.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(crate) struct DoubleDouble {
    pub(crate) hi: f64,
    pub(crate) lo: f64,
}

/// Knuth's TwoSum: `a + b = s + e` exactly.
#[inline]
fn two_sum(a: f64, b: f64) -> (f64, f64) {
    let s = a + b;
    let bb = s - a;
    let e = (a - (s - bb)) + (b - bb);
    (s, e)
}

/// Dekker's FastTwoSum (needs `|a| >= |b|` or `a == 0`): `a + b = s + e` exactly.
#[inline]
fn fast_two_sum(a: f64, b: f64) -> (f64, f64) {
    let s = a + b;
    (s, b - (s - a))
}

impl DoubleDouble {
    /// `x * x` exactly (with a fused multiply-add for the low part), when it does not overflow.
    #[inline]
    pub(crate) fn square(x: f64) -> DoubleDouble {
        let p = x * x;
        if !p.is_finite() {
            return DoubleDouble { hi: p, lo: 0.0 };
        }
        DoubleDouble { hi: p, lo: x.mul_add(x, -p) }
    }

    /// Adds a finite double. Once `hi` overflows to ±Infinity the sum stays there (as a plain
    /// floating sum would).
    #[inline]
    pub(crate) fn add_f64(&mut self, x: f64) {
        let (s, e) = two_sum(self.hi, x);
        if !s.is_finite() {
            self.hi = s;
            self.lo = 0.0;
            return;
        }
        let (hi, lo) = fast_two_sum(s, e + self.lo);
        *self = DoubleDouble { hi, lo };
    }

    /// Adds another double-double.
    #[inline]
    pub(crate) fn add(&mut self, other: DoubleDouble) {
        let (s, e) = two_sum(self.hi, other.hi);
        if !s.is_finite() {
            self.hi = s;
            self.lo = 0.0;
            return;
        }
        let (t, f) = two_sum(self.lo, other.lo);
        let (s, e) = fast_two_sum(s, e + t);
        let (hi, lo) = fast_two_sum(s, e + f);
        *self = DoubleDouble { hi, lo };
    }

    /// The negation.
    pub(crate) fn neg(self) -> DoubleDouble {
        DoubleDouble { hi: -self.hi, lo: -self.lo }
    }

    /// `self * other`, to ~2^-100 relative.
    pub(crate) fn mul(self, other: DoubleDouble) -> DoubleDouble {
        let p = self.hi * other.hi;
        if !p.is_finite() {
            return DoubleDouble { hi: p, lo: 0.0 };
        }
        let e = self.hi.mul_add(other.hi, -p) + (self.hi * other.lo + self.lo * other.hi);
        let (hi, lo) = fast_two_sum(p, e);
        DoubleDouble { hi, lo }
    }

    /// `self / d`, to ~2^-100 relative.
    pub(crate) fn div_f64(self, d: f64) -> DoubleDouble {
        let q1 = self.hi / d;
        if !q1.is_finite() {
            return DoubleDouble { hi: q1, lo: 0.0 };
        }
        // remainder r = self - q1 * d, computed exactly enough with a fused multiply-add.
        let p = q1 * d;
        let p_lo = q1.mul_add(d, -p);
        let r = ((self.hi - p) - p_lo) + self.lo;
        let (hi, lo) = fast_two_sum(q1, r / d);
        DoubleDouble { hi, lo }
    }

    /// The nearest double.
    pub(crate) fn value(self) -> f64 {
        self.hi + self.lo
    }
}

/// Sum of BIGINT / INT values (sum and avg over integers): exact in `i128` for `sum`; `avg`
/// divides a DOUBLE running sum, as Spark's `Average` casts each integer to DOUBLE before adding
/// (the project case `measures-many` pins it: 9007199254740993 + 1 - 9007199254740993 averages to
/// 0.0 in Spark). Below 2^53 in magnitude the two sums agree exactly.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct LongSum {
    /// Number of non-null values.
    pub n: i64,
    /// Their exact sum.
    pub sum: i128,
    /// Their sum in DOUBLE arithmetic, in input order (Spark's `avg`).
    pub as_double: f64,
}

impl LongSum {
    /// Adds (`sign = 1`) or removes (`sign = -1`) one value. Never wraps: `n` saturates (it
    /// cannot reach 2^63 values in practice), and `sum` holds at most 2^63 values of magnitude
    /// <= 2^63, so stays within `i128`.
    #[inline]
    pub(crate) fn add(&mut self, v: i64, sign: i64) {
        self.n = self.n.saturating_add(sign);
        self.sum = self.sum.saturating_add((sign as i128) * (v as i128));
        self.as_double += (sign as f64) * (v as f64);
    }

    /// Merges another sum (saturating, as [`LongSum::add`]).
    pub(crate) fn merge(&mut self, o: &LongSum) {
        self.n = self.n.saturating_add(o.n);
        self.sum = self.sum.saturating_add(o.sum);
        self.as_double += o.as_double;
    }

    /// The sum as Spark's BIGINT; `None` on no input, and `None` (NULL, as Spark's `try_sum`)
    /// for an exact sum outside BIGINT, never a wrapped value. The operators keep every sum they
    /// emit within BIGINT by refusing the record that would leave it (SEMANTICS.md "Aggregate
    /// functions": the record goes to the dead letters with `ARITHMETIC_OVERFLOW`); only a
    /// rolling window, whose records leave a range in event-time order rather than in arrival
    /// order, can hold a sum outside BIGINT (e.g. -5, then i64::MAX, then 5 arrives; -5 leaves).
    pub(crate) fn long_result(&self) -> Option<i64> {
        if self.n > 0 { i64::try_from(self.sum).ok() } else { None }
    }

    /// Whether adding `v` keeps a sum of `sum` within BIGINT.
    #[inline]
    pub(crate) fn fits(sum: i128, v: i64) -> bool {
        i64::try_from(sum + v as i128).is_ok()
    }

    /// The mean as a DOUBLE: `None` on no input.
    pub(crate) fn mean(&self) -> Option<f64> {
        (self.n > 0).then(|| self.as_double / self.n as f64)
    }
}

/// Sum of DOUBLE / FLOAT values (sum and avg over floating input), compensated.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct DoubleSum {
    /// Number of non-null values (NaN and infinities included).
    pub n: i64,
    /// Sum of the finite values.
    pub(crate) sum: DoubleDouble,
    /// Number of NaN values.
    pub nan: i64,
    /// Number of +Infinity values.
    pub pos_inf: i64,
    /// Number of -Infinity values.
    pub neg_inf: i64,
}

impl DoubleSum {
    /// Adds (`sign = 1`) or removes (`sign = -1`) one value.
    #[inline]
    pub(crate) fn add(&mut self, x: f64, sign: i64) {
        self.n = self.n.saturating_add(sign);
        if x.is_finite() {
            self.sum.add_f64(if sign > 0 { x } else { -x });
        } else if x.is_nan() {
            self.nan = self.nan.saturating_add(sign);
        } else if x > 0.0 {
            self.pos_inf = self.pos_inf.saturating_add(sign);
        } else {
            self.neg_inf = self.neg_inf.saturating_add(sign);
        }
        if self.n == 0 {
            // Nothing left: drop any rounding residue (and a sticky overflow) for good.
            *self = DoubleSum::default();
        }
    }

    /// Merges another sum.
    pub(crate) fn merge(&mut self, o: &DoubleSum) {
        self.n = self.n.saturating_add(o.n);
        self.sum.add(o.sum);
        self.nan = self.nan.saturating_add(o.nan);
        self.pos_inf = self.pos_inf.saturating_add(o.pos_inf);
        self.neg_inf = self.neg_inf.saturating_add(o.neg_inf);
    }

    /// The sum as IEEE arithmetic would give it (NaN if any NaN or both infinities): `None` on
    /// no input.
    pub(crate) fn sum(&self) -> Option<f64> {
        if self.n <= 0 {
            return None;
        }
        Some(if self.nan > 0 || (self.pos_inf > 0 && self.neg_inf > 0) {
            f64::NAN
        } else if self.pos_inf > 0 {
            f64::INFINITY
        } else if self.neg_inf > 0 {
            f64::NEG_INFINITY
        } else {
            self.sum.value()
        })
    }

    /// The mean: `None` on no input.
    pub(crate) fn mean(&self) -> Option<f64> {
        let s = self.sum()?;
        if s.is_finite() { Some(self.sum.div_f64(self.n as f64).value()) } else { Some(s / self.n as f64) }
    }
}

/// The moments of the stddev / variance family: count, sum and sum of squares of the finite values
/// (double-double), and a count of non-finite values (any of which makes the result NaN, as in
/// Spark, whose Welford update turns NaN on such input).
///
/// Accuracy: squares are added exactly (fused multiply-add), each add / remove errs by at most
/// ~2^-104 of the running sum of squares, so after removals the absolute error of
/// `M2 = sum((x - mean)^2)` is below (adds + removes) * 2^-104 * (largest sum of squares held);
/// in practice ~sqrt(ops) of that. Values that stay in a window are exact to ~1e-15 unless the
/// window once held values whose squares were more than ~20 orders of magnitude larger than the
/// spread of those left.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Moments {
    /// Number of non-null values (non-finite included).
    pub n: i64,
    pub(crate) s1: DoubleDouble,
    pub(crate) s2: DoubleDouble,
    /// Number of NaN / infinite values.
    pub non_finite: i64,
}

impl Moments {
    /// Adds (`sign = 1`) or removes (`sign = -1`) one value.
    #[inline]
    pub(crate) fn add(&mut self, x: f64, sign: i64) {
        self.n = self.n.saturating_add(sign);
        if x.is_finite() {
            let sq = DoubleDouble::square(x);
            if sign > 0 {
                self.s1.add_f64(x);
                self.s2.add(sq);
            } else {
                self.s1.add_f64(-x);
                self.s2.add(sq.neg());
            }
        } else {
            self.non_finite += sign;
        }
        if self.n == 0 {
            *self = Moments::default();
        }
    }

    /// Merges other moments.
    pub(crate) fn merge(&mut self, o: &Moments) {
        self.n = self.n.saturating_add(o.n);
        self.s1.add(o.s1);
        self.s2.add(o.s2);
        self.non_finite += o.non_finite;
    }

    /// The sum of squared deviations from the mean, `M2 = S2 - S1^2 / n` (in double-double, so
    /// a large mean does not cancel the spread away); `None` when `n = 0`.
    ///
    /// A result within the computation's own rounding (at most `n * 2^-104 * S2`, with a margin:
    /// `n * 2^-100 * S2`) is 0: it cannot be told from 0, and `n` equal values would otherwise
    /// leave a residue of ~1e-34 whose square root is a standard deviation of ~1e-17 where Spark's
    /// update (Welford's, whose deltas are exactly 0 there) gives 0.0, so that
    /// `HAVING stddev(x) = 0` would not hold for a constant `x`.
    fn m2(&self) -> Option<f64> {
        if self.n <= 0 {
            return None;
        }
        if self.non_finite > 0 {
            return Some(f64::NAN);
        }
        let mut m2 = self.s2;
        m2.add(self.s1.mul(self.s1).div_f64(self.n as f64).neg());
        let v = m2.value();
        let noise = self.s2.hi.abs() * self.n as f64 * (-100f64).exp2();
        Some(if v <= noise { 0.0 } else { v })
    }

    /// Population variance (`var_pop`): `None` for n = 0, 0.0 for n = 1 (finite input).
    pub(crate) fn var_pop(&self) -> Option<f64> {
        Some(self.m2()? / self.n as f64)
    }

    /// Sample variance (`var_samp`): `None` for n = 0 and for n = 1 (Spark 4 with
    /// `spark.sql.legacy.statisticalAggregate = false`, SPARK-13860).
    pub(crate) fn var_samp(&self) -> Option<f64> {
        if self.n == 1 {
            return None;
        }
        Some(self.m2()? / (self.n - 1) as f64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Grid of the test values: multiples of 2^-30, so that an i128 fixed-point sum of them is
    /// exact (the largest, 1e9 * 2^30 ~ 2^60, leaves room for a million of them).
    const GRID: f64 = 1073741824.0; // 2^30

    fn exact_sum(xs: &[f64]) -> f64 {
        let s: i128 = xs.iter().map(|&x| (x * GRID) as i128).sum();
        s as f64 / GRID
    }

    fn xorshift(seed: u64) -> impl FnMut() -> u64 {
        let mut state = seed;
        move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        }
    }

    /// `n` random values of magnitudes 10^lo .. 10^hi, either sign, on the 2^-30 grid.
    fn values(n: usize, lo: i32, hi: i32, seed: u64) -> Vec<f64> {
        let mut next = xorshift(seed);
        (0..n)
            .map(|_| {
                let r = next();
                let mag = lo + (r % (hi - lo + 1) as u64) as i32;
                let frac = (next() >> 11) as f64 / (1u64 << 53) as f64;
                let sign = if r & (1 << 40) != 0 { -1.0 } else { 1.0 };
                (sign * frac * 10f64.powi(mag) * GRID).round() / GRID
            })
            .collect()
    }

    /// A million values of magnitudes 1e-3 .. 1e9, of which `keep` (magnitudes 10^lo .. 10^hi)
    /// stay: the others are added, then removed in another order.
    fn stream(keep: usize, lo: i32, hi: i32, seed: u64) -> (Vec<f64>, Vec<f64>) {
        let few = values(keep, lo, hi, seed);
        let many = values(1_000_000 - keep, -3, 9, seed ^ 0xdead_beef);
        (few, many)
    }

    #[test]
    fn double_sum_does_not_drift_after_a_million_adds_and_removes() {
        let (few, many) = stream(5, -3, 1, 0x9e37_79b9_7f4a_7c15);
        let mut s = DoubleSum::default();
        let mut naive = 0.0f64;
        for &x in few.iter().chain(&many) {
            s.add(x, 1);
            naive += x;
        }
        for &x in many.iter().rev() {
            s.add(x, -1);
            naive -= x;
        }
        let expected = exact_sum(&few);
        let got = s.sum().unwrap();
        assert!((got - expected).abs() <= expected.abs() * 1e-15, "got {got}, exact {expected}");
        // A plain f64 sum drifts on the same sequence (so the test has teeth).
        assert!((naive - expected).abs() > expected.abs() * 1e-6, "naive {naive} vs {expected}");
    }

    /// Equal values have no spread: 0.0 exactly, as Spark's Welford update gives (three 0.1s
    /// and three 19.99s left ~1e-34 of double-double rounding, a stddev of ~1e-17, before the
    /// noise floor of `m2`); a spread of a few ulps is still seen.
    #[test]
    fn equal_values_have_a_variance_of_exactly_zero() {
        for x in [0.1, 19.99, -3.7e-5, 1e9 + 0.1, 123_456.789, 1.0 / 3.0] {
            for n in [2, 3, 7, 1000] {
                let mut m = Moments::default();
                (0..n).for_each(|_| m.add(x, 1));
                assert_eq!(m.var_samp(), Some(0.0), "{n} x {x}");
                assert_eq!(m.var_pop(), Some(0.0), "{n} x {x}");
            }
        }
        let mut m = Moments::default();
        [0.1, 0.1, 0.1 + 1e-9].iter().for_each(|&x| m.add(x, 1));
        let want = 2.0 / 3.0 * 1e-18 / 2.0; // M2 = (2/3) * d^2 for two at x and one at x + d
        assert!((m.var_samp().unwrap() - want).abs() < want * 1e-6, "{:?}", m.var_samp());
    }

    /// Adds few + many, removes many; returns (state, reference var_pop of the few, the largest
    /// sum of squares the state held, and var_pop from plain f64 sums for comparison).
    fn variance_after_removal(few: &[f64], many: &[f64]) -> (Moments, f64, f64, f64) {
        let mut m = Moments::default();
        let (mut s1, mut s2, mut peak) = (0.0f64, 0.0f64, 0.0f64);
        for &x in few.iter().chain(many) {
            m.add(x, 1);
            s1 += x;
            s2 += x * x;
            peak = peak.max(s2);
        }
        for &x in many.iter().rev() {
            m.add(x, -1);
            s1 -= x;
            s2 -= x * x;
        }
        // Reference: the exact mean of the few (i128 sum on the grid), then a two-pass sum of
        // squared deviations over a handful of values (error ~1e-16 relative).
        let n = few.len() as f64;
        let mean = exact_sum(few) / n;
        let m2: f64 = few.iter().map(|x| (x - mean) * (x - mean)).sum();
        let naive = (s2 - s1 * s1 / n) / n;
        (m, m2 / n, peak, naive)
    }

    #[test]
    fn variance_does_not_drift_after_a_million_adds_and_removes() {
        // A few values of everyday magnitude (1 .. 1e3) left after a million up to 1e9.
        let (few, many) = stream(4, 0, 3, 0x2545_f491_4f6c_dd1d);
        let (m, expected, _, naive) = variance_after_removal(&few, &many);
        let got = m.var_pop().unwrap();
        assert!((got - expected).abs() <= expected * 1e-9, "got {got}, expected {expected}");
        let samp = m.var_samp().unwrap();
        let expected_samp = expected * 4.0 / 3.0;
        assert!((samp - expected_samp).abs() <= expected_samp * 1e-9);
        // Plain f64 sums of squares are useless here (so the test has teeth).
        assert!((naive - expected).abs() > expected, "naive {naive} vs {expected}");
    }

    #[test]
    fn variance_error_after_removal_is_bounded_by_the_largest_sum_of_squares_held() {
        // The documented worst case: absolute error of M2 at most (adds + removes) * 2^-104 of
        // the largest sum of squares the state held, however small the values left are (here
        // 1e-3 .. 1e1: squares 30 orders of magnitude below the peak, beyond double-double's
        // 32 digits, so the relative error is large, but bounded).
        let (few, many) = stream(4, -3, 1, 0x2545_f491_4f6c_dd1d);
        let (m, expected, peak, _) = variance_after_removal(&few, &many);
        let got = m.var_pop().unwrap();
        let ops = (few.len() + 2 * many.len()) as f64;
        let bound = ops * peak * (-104f64).exp2() / few.len() as f64;
        assert!((got - expected).abs() <= bound, "got {got}, expected {expected}, bound {bound}");
    }

    #[test]
    fn removing_everything_returns_to_the_empty_state() {
        let xs = values(1000, -3, 9, 7);
        let mut s = DoubleSum::default();
        let mut m = Moments::default();
        for &x in &xs {
            s.add(x, 1);
            m.add(x, 1);
        }
        for &x in xs.iter().rev() {
            s.add(x, -1);
            m.add(x, -1);
        }
        assert_eq!(s, DoubleSum::default());
        assert_eq!(m, Moments::default());
    }

    #[test]
    fn infinities_and_nan_follow_ieee_and_can_leave() {
        let mut s = DoubleSum::default();
        s.add(1.0, 1);
        s.add(f64::INFINITY, 1);
        assert_eq!(s.sum(), Some(f64::INFINITY));
        s.add(f64::NEG_INFINITY, 1);
        assert!(s.sum().unwrap().is_nan());
        s.add(f64::INFINITY, -1);
        assert_eq!(s.sum(), Some(f64::NEG_INFINITY));
        s.add(f64::NEG_INFINITY, -1);
        assert_eq!(s.sum(), Some(1.0));
        s.add(f64::NAN, 1);
        assert!(s.sum().unwrap().is_nan());
        assert!(s.mean().unwrap().is_nan());
    }

    #[test]
    fn overflowing_double_sum_is_infinite_as_a_plain_sum() {
        let mut s = DoubleSum::default();
        s.add(f64::MAX, 1);
        s.add(f64::MAX, 1);
        assert_eq!(s.sum(), Some(f64::INFINITY));
    }

    #[test]
    fn variance_of_a_large_mean_keeps_its_spread() {
        // Timestamps in µs around 2024 (1.7e15) one second apart: a naive S2 - S1^2/n in f64
        // loses every digit of the spread.
        let base = 1.7e15;
        let xs: Vec<f64> = (0..1000).map(|i| base + (i as f64) * 1e6).collect();
        let mut m = Moments::default();
        for &x in &xs {
            m.add(x, 1);
        }
        let mean = xs.iter().map(|x| x - base).sum::<f64>() / 1000.0;
        let m2: f64 = xs.iter().map(|x| (x - base - mean).powi(2)).sum();
        let expected = m2 / 999.0;
        let got = m.var_samp().unwrap();
        assert!((got - expected).abs() <= expected * 1e-12, "got {got}, expected {expected}");
    }

    #[test]
    fn long_sum_is_exact_past_i64_and_never_wraps() {
        let mut s = LongSum::default();
        s.add(i64::MAX, 1);
        s.add(1, 1);
        assert_eq!(s.long_result(), None);
        s.add(1, -1);
        assert_eq!(s.long_result(), Some(i64::MAX));
        assert_eq!(s.mean(), Some(i64::MAX as f64));
    }
}

/// Sum of DECIMAL(p, s) values (sum and avg over a DECIMAL column): the exact sum of their
/// unscaled values at the column's scale `s`. Operators keep it within the result's precision
/// ([`crate::decimal::sum_type`]) by refusing the record that would leave it, as for integer
/// sums; it saturates rather than wraps where a rolling window holds a larger one.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct DecimalSum {
    /// Number of non-null values.
    pub n: i64,
    /// Their exact sum, unscaled at the column's scale.
    pub sum: i128,
}

impl DecimalSum {
    /// Adds (`sign = 1`) or removes (`sign = -1`) one unscaled value.
    #[inline]
    pub(crate) fn add(&mut self, unscaled: i128, sign: i64) {
        self.n = self.n.saturating_add(sign);
        self.sum = self.sum.saturating_add(sign as i128 * unscaled);
    }

    /// Merges another sum.
    pub(crate) fn merge(&mut self, o: &DecimalSum) {
        self.n = self.n.saturating_add(o.n);
        self.sum = self.sum.saturating_add(o.sum);
    }
}
