//! Sketches: HyperLogLog for `approx_count_distinct`, KLL for `approx_percentile` (Apache
//! DataSketches). Neither can retract a value.

use std::cmp::Ordering;
use std::fmt;

use datasketches::codec::{SketchBytes, SketchSlice};
use datasketches::common::SearchCriteria;
use datasketches::error::{Error, ErrorKind};
use datasketches::hll::{HllSketch, HllType, HllUnion};
use datasketches::kll::{KllSketch, KllValue};

use crate::value::Value;

/// Smallest and largest `lg_k` the DataSketches HLL accepts.
pub(crate) const HLL_LG_K_RANGE: (u8, u8) = (4, 21);

/// Spark's register-count exponent for a relative standard deviation `rsd`
/// (`HyperLogLogPlusPlusHelper`: `p = ceil(2 * log2(1.106 / rsd))`). The DataSketches HLL with
/// `2^p` registers has an RSE of about `1.04 / sqrt(2^p)` (composite estimator) or less, which is
/// below `rsd` for every `p` this gives.
pub(crate) fn hll_lg_k(rsd: f64) -> f64 {
    (2.0 * (1.106 / rsd).log2()).ceil()
}

/// KLL's single-sided normalised rank error for `k` (99% confidence), as DataSketches states it.
pub(crate) fn kll_rank_error(k: u16) -> f64 {
    2.296 / (k as f64).powf(0.9723)
}

/// The smallest KLL `k` (>= 8) whose rank error is at most `1 / accuracy`; `None` when that needs
/// `k > 65535` (accuracy above ~20993).
pub(crate) fn kll_k_for_accuracy(accuracy: u32) -> Option<u16> {
    let target = 1.0 / accuracy as f64;
    let guess = (2.296 * accuracy as f64).powf(1.0 / 0.9723).floor().max(8.0);
    if guess > u16::MAX as f64 {
        return None;
    }
    let mut k = guess as u16;
    while kll_rank_error(k) > target {
        k = k.checked_add(1)?;
    }
    while k > 8 && kll_rank_error(k - 1) <= target {
        k -= 1;
    }
    Some(k)
}

/// An `approx_count_distinct` state: an HLL union (so panes merge without a copy of the input).
#[derive(Clone)]
pub struct DistinctSketch {
    pub(crate) union: HllUnion,
}

impl DistinctSketch {
    /// An empty sketch with `2^lg_k` registers.
    pub(crate) fn new(lg_k: u8) -> DistinctSketch {
        // lg_k is validated to HLL_LG_K_RANGE when the function is built.
        let union = HllUnion::new(lg_k).unwrap_or_else(|e| panic!("lg_k {lg_k} validated: {e}"));
        DistinctSketch { union }
    }

    /// Adds a non-null value (hashed with [`Value`]'s grouping hash: NaN = NaN, -0.0 = 0.0).
    #[inline]
    pub(crate) fn update(&mut self, v: &Value) {
        self.union.update_value(v);
    }

    /// Merges another sketch of the same size.
    pub(crate) fn merge(&mut self, other: &DistinctSketch) {
        self.union.update(&other.union.to_sketch(HllType::Hll8));
    }

    /// The estimate, rounded: the composite estimator, which depends only on the registers, so a
    /// merge of panes gives exactly the estimate of one sketch over all their input.
    pub(crate) fn estimate(&self) -> i64 {
        if self.union.is_empty() {
            return 0;
        }
        self.union.composite_estimate().round() as i64
    }

    pub(crate) fn lg_k(&self) -> u8 {
        self.union.lg_config_k()
    }

    pub(crate) fn to_bytes(&self) -> Vec<u8> {
        self.union.to_sketch(HllType::Hll8).serialize()
    }

    pub(crate) fn from_bytes(lg_k: u8, bytes: &[u8]) -> Result<DistinctSketch, String> {
        let sketch = HllSketch::deserialize(bytes).map_err(|e| e.to_string())?;
        if sketch.lg_config_k() != lg_k {
            return Err(format!(
                "HLL sketch has lg_k {}, the function expects {lg_k} (rsd changed?)",
                sketch.lg_config_k()
            ));
        }
        let mut s = DistinctSketch::new(lg_k);
        s.union.update(&sketch);
        Ok(s)
    }
}

impl fmt::Debug for DistinctSketch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DistinctSketch").field("lg_k", &self.lg_k()).field("estimate", &self.estimate()).finish()
    }
}

/// A DOUBLE ordered as Spark orders doubles: NaN above every number and equal to itself, -0.0
/// equal to 0.0. (DataSketches' own float wrapper rejects NaN.)
#[derive(Clone, Copy, Debug)]
pub struct SparkDouble(pub f64);

impl PartialEq for SparkDouble {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for SparkDouble {}

impl PartialOrd for SparkDouble {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for SparkDouble {
    fn cmp(&self, other: &Self) -> Ordering {
        match (self.0.is_nan(), other.0.is_nan()) {
            (true, true) => Ordering::Equal,
            (true, false) => Ordering::Greater,
            (false, true) => Ordering::Less,
            _ => self.0.partial_cmp(&other.0).unwrap_or(Ordering::Equal),
        }
    }
}

impl KllValue for SparkDouble {
    const MIN_SERIALIZED_SIZE: usize = 8;

    fn serialized_size(_value: &Self) -> usize {
        8
    }

    fn serialize(value: &Self, bytes: &mut SketchBytes) {
        bytes.write_f64_le(value.0);
    }

    fn deserialize(input: &mut SketchSlice<'_>) -> Result<Self, Error> {
        input
            .read_f64_le()
            .map(SparkDouble)
            .map_err(|e| Error::new(ErrorKind::InvalidData, format!("KLL f64 item: {e}")))
    }
}

/// An `approx_percentile` state: a KLL sketch over the input's values (INT, BIGINT and TIMESTAMP
/// as `i64`; FLOAT and DOUBLE as [`SparkDouble`]).
#[derive(Clone)]
pub enum QuantileSketch {
    /// INT, BIGINT, TIMESTAMP input.
    Long(KllSketch<i64>),
    /// FLOAT, DOUBLE input.
    Double(KllSketch<SparkDouble>),
}

impl QuantileSketch {
    /// An empty sketch of parameter `k` (validated to `8..=65535` when the function is built).
    pub(crate) fn new(floating: bool, k: u16) -> QuantileSketch {
        fn validated<T>(k: u16) -> impl FnOnce(Error) -> T {
            move |e| panic!("KLL k {k} validated: {e}")
        }
        if floating {
            QuantileSketch::Double(KllSketch::new(k.max(8)).unwrap_or_else(validated(k)))
        } else {
            QuantileSketch::Long(KllSketch::new(k.max(8)).unwrap_or_else(validated(k)))
        }
    }

    /// Adds a non-null value; values of another kind than the sketch's are ignored.
    #[inline]
    pub(crate) fn update(&mut self, v: &Value) {
        match self {
            QuantileSketch::Long(s) => {
                if let Some(x) = v.as_i64() {
                    s.update(x);
                }
            }
            QuantileSketch::Double(s) => match *v {
                Value::Double(x) => s.update(SparkDouble(x)),
                Value::Float(x) => s.update(SparkDouble(x as f64)),
                _ => {}
            },
        }
    }

    /// Merges another sketch (of the same kind; a different kind is a bug and is ignored).
    pub(crate) fn merge(&mut self, other: &QuantileSketch) {
        // KLL merge fails only when the total weight would pass u64::MAX or the sketches' `m`
        // differ; neither can happen here (one `m`; 2^64 values is out of reach).
        let _ignored = match (self, other) {
            (QuantileSketch::Long(a), QuantileSketch::Long(b)) => a.merge(b),
            (QuantileSketch::Double(a), QuantileSketch::Double(b)) => a.merge(b),
            _ => Ok(()),
        };
    }

    /// Number of values seen.
    pub(crate) fn n(&self) -> u64 {
        match self {
            QuantileSketch::Long(s) => s.n(),
            QuantileSketch::Double(s) => s.n(),
        }
    }

    /// For each percentage `p`, the smallest retained item whose (estimated) inclusive rank is at
    /// least `p`: an input value. `None` when the sketch is empty.
    pub(crate) fn quantiles(&self, percentages: &[f64]) -> Option<Vec<F64OrI64>> {
        // Percentages are validated to [0, 1] when the function is built, so `quantile` cannot
        // fail; a failure would be a bug, answered with "no result".
        match self {
            QuantileSketch::Long(s) => {
                let view = s.sorted_view();
                percentages
                    .iter()
                    .map(|&p| {
                        let q = view.quantile(p, SearchCriteria::Inclusive).ok().flatten();
                        q.map(F64OrI64::I64)
                    })
                    .collect()
            }
            QuantileSketch::Double(s) => {
                let view = s.sorted_view();
                percentages
                    .iter()
                    .map(|&p| {
                        let q = view.quantile(p, SearchCriteria::Inclusive).ok().flatten();
                        q.map(|d| F64OrI64::F64(d.0))
                    })
                    .collect()
            }
        }
    }

    pub(crate) fn k(&self) -> u16 {
        match self {
            QuantileSketch::Long(s) => s.k(),
            QuantileSketch::Double(s) => s.k(),
        }
    }

    pub(crate) fn to_bytes(&self) -> Vec<u8> {
        match self {
            QuantileSketch::Long(s) => s.serialize(),
            QuantileSketch::Double(s) => s.serialize(),
        }
    }

    pub(crate) fn from_bytes(floating: bool, k: u16, bytes: &[u8]) -> Result<Self, String> {
        let s = if floating {
            QuantileSketch::Double(KllSketch::deserialize(bytes).map_err(|e| e.to_string())?)
        } else {
            QuantileSketch::Long(KllSketch::deserialize(bytes).map_err(|e| e.to_string())?)
        };
        if s.k() != k {
            return Err(format!("KLL sketch has k {}, the function expects {k} (accuracy changed?)", s.k()));
        }
        Ok(s)
    }
}

/// One quantile before it is typed back to the input's type.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum F64OrI64 {
    F64(f64),
    I64(i64),
}

impl fmt::Debug for QuantileSketch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (kind, k, n, retained) = match self {
            QuantileSketch::Long(s) => ("long", s.k(), s.n(), s.num_retained()),
            QuantileSketch::Double(s) => ("double", s.k(), s.n(), s.num_retained()),
        };
        f.debug_struct("QuantileSketch")
            .field("kind", &kind)
            .field("k", &k)
            .field("n", &n)
            .field("retained", &retained)
            .finish()
    }
}
