//! [`AggState`]: the running state of one measure, and the update / retract / merge / finish of
//! every built-in function over it.

use std::fmt;

use super::numeric::{DecimalSum, DoubleDouble, DoubleSum, LongSum, Moments};
use super::sketch::{self, DistinctSketch, F64OrI64, QuantileSketch};
use super::{AggKind, AggregateFn};
use crate::decimal::{self, Decimal, Rounding};
use crate::schema::DataType;
use crate::time::Timestamp;
use crate::value::Value;

/// The running state of one measure for one group / window / pane. One variant per family of
/// functions; only the sketches are boxed (they are large: KLL with the default accuracy keeps up
/// to ~90k items).
#[derive(Clone)]
pub enum AggState {
    /// `count(*)`, `count(col)`: the number of rows / non-null values.
    Count(i64),
    /// `sum` / `avg` over INT or BIGINT.
    LongSum(LongSum),
    /// `sum` / `avg` over FLOAT or DOUBLE.
    DoubleSum(DoubleSum),
    /// `sum` / `avg` over DECIMAL.
    DecimalSum(DecimalSum),
    /// The stddev / variance family.
    Moments(Moments),
    /// `min` / `max`: the extreme so far (`None`: no non-null input); `max_by` / `min_by`: the
    /// pair STRUCT<value, ordering> of the extreme ordering so far.
    Extreme(Option<Value>),
    /// `first` / `last`: the value kept so far (`None`: no input yet, or with ignoreNulls no
    /// non-null input yet; `Some(Value::Null)`: the kept record's value is NULL).
    Pick(Option<Value>),
    /// `approx_count_distinct`.
    Distinct(Box<DistinctSketch>),
    /// `approx_percentile`.
    Quantiles(Box<QuantileSketch>),
    /// A user-defined aggregate's state.
    User(Value),
}

impl fmt::Debug for AggState {
    /// Prints counts and sums; sketches print their size and a summary, never their contents.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AggState::Count(n) => f.debug_tuple("Count").field(n).finish(),
            AggState::LongSum(s) => f.debug_tuple("LongSum").field(s).finish(),
            AggState::DecimalSum(s) => f.debug_tuple("DecimalSum").field(s).finish(),
            AggState::DoubleSum(s) => f
                .debug_struct("DoubleSum")
                .field("n", &s.n)
                .field("sum", &s.sum())
                .field("nan", &s.nan)
                .field("pos_inf", &s.pos_inf)
                .field("neg_inf", &s.neg_inf)
                .finish(),
            AggState::Moments(m) => f
                .debug_struct("Moments")
                .field("n", &m.n)
                .field("var_pop", &m.var_pop())
                .field("non_finite", &m.non_finite)
                .finish(),
            AggState::Extreme(v) => f.debug_tuple("Extreme").field(v).finish(),
            AggState::Pick(v) => f.debug_tuple("Pick").field(v).finish(),
            AggState::Distinct(s) => s.fmt(f),
            AggState::Quantiles(s) => s.fmt(f),
            AggState::User(v) => f.debug_tuple("User").field(v).finish(),
        }
    }
}

/// A compact copy (32 bytes, against [`AggState`]'s 64) of the two states on the per-record
/// path of most windowed queries: a count, and a sum of DOUBLE values that has seen only finite
/// ones. Operators keep it inline in a group's slot ([`AggState::to_small`] when parking,
/// [`SmallState::to_state`] when unparking: both exact, so the state never drifts from the full
/// one), and update it with [`AggregateFn::update_small`], which does the very arithmetic of
/// [`AggregateFn::update`] (compensated, see `numeric.rs`) or declines.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum SmallState {
    /// [`AggState::Count`].
    Count(i64),
    /// [`AggState::DoubleSum`] without NaN or infinite inputs.
    DoubleSum {
        /// Number of values.
        n: i64,
        /// Their compensated sum.
        sum: DoubleDouble,
    },
    /// [`AggState::Extreme`] (min / max) of an INT, BIGINT or TIMESTAMP column, or none yet.
    Extreme(SmallExtreme),
}

/// The extreme of a compact min / max state (see [`SmallState::Extreme`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum SmallExtreme {
    /// No non-null input yet.
    None,
    /// [`Value::Int`].
    Int(i32),
    /// [`Value::Long`].
    Long(i64),
    /// [`Value::Timestamp`] (µs).
    Timestamp(Timestamp),
}

impl SmallExtreme {
    /// The compact form of an extreme, for the kinds that have one.
    fn of(v: &Option<Value>) -> Option<SmallExtreme> {
        Some(match v {
            None => SmallExtreme::None,
            Some(Value::Int(x)) => SmallExtreme::Int(*x),
            Some(Value::Long(x)) => SmallExtreme::Long(*x),
            Some(Value::Timestamp(t)) => SmallExtreme::Timestamp(*t),
            Some(_) => return None,
        })
    }

    fn value(self) -> Option<Value> {
        match self {
            SmallExtreme::None => None,
            SmallExtreme::Int(x) => Some(Value::Int(x)),
            SmallExtreme::Long(x) => Some(Value::Long(x)),
            SmallExtreme::Timestamp(t) => Some(Value::Timestamp(t)),
        }
    }
}

impl Default for SmallState {
    fn default() -> SmallState {
        SmallState::Count(0)
    }
}

impl SmallState {
    /// [`AggregateFn::update_small`] of a `sum` / `avg` of DOUBLE (which does not depend on the
    /// function): `false` (unchanged) for another state, or an input that needs the full state.
    #[inline(always)]
    pub(crate) fn add_double(&mut self, v: &Value) -> bool {
        let SmallState::DoubleSum { n, sum } = self else { return false };
        match *v {
            // as `DoubleSum::add(x, 1)` on a sum without non-finite values
            Value::Double(x) if x.is_finite() => {
                *n = n.saturating_add(1);
                sum.add_f64(x);
                if *n == 0 {
                    *sum = DoubleDouble::default();
                }
                true
            }
            Value::Null => true,
            _ => false,
        }
    }

    /// The full state (exactly the one [`AggState::to_small`] was given).
    #[inline]
    pub(crate) fn to_state(self) -> AggState {
        match self {
            SmallState::Count(n) => AggState::Count(n),
            SmallState::DoubleSum { n, sum } => {
                AggState::DoubleSum(DoubleSum { n, sum, nan: 0, pos_inf: 0, neg_inf: 0 })
            }
            SmallState::Extreme(e) => AggState::Extreme(e.value()),
        }
    }
}

impl AggState {
    /// The compact form of a count, or of a double sum without non-finite values; `None` for
    /// every other state.
    #[inline]
    pub(crate) fn to_small(&self) -> Option<SmallState> {
        match self {
            AggState::Count(n) => Some(SmallState::Count(*n)),
            AggState::DoubleSum(s) if s.nan == 0 && s.pos_inf == 0 && s.neg_inf == 0 => {
                Some(SmallState::DoubleSum { n: s.n, sum: s.sum })
            }
            AggState::Extreme(e) => SmallExtreme::of(e).map(SmallState::Extreme),
            _ => None,
        }
    }
}

/// The value as a double for the floating accumulators (FLOAT widened exactly).
#[inline]
fn floating(v: &Value) -> Option<f64> {
    match *v {
        Value::Double(x) => Some(x),
        Value::Float(x) => Some(x as f64),
        Value::Long(x) => Some(x as f64),
        Value::Int(x) => Some(x as f64),
        Value::Decimal(d) => Some(d.to_f64()),
        _ => None,
    }
}

/// A DECIMAL input as an unscaled value at the column's scale `scale` (inputs are at that scale;
/// another scale is rounded HALF_UP to it).
#[inline]
fn unscaled(v: &Value, scale: u8) -> Option<i128> {
    match *v {
        Value::Decimal(d) if d.scale == scale => Some(d.unscaled),
        Value::Decimal(d) => d.rescale(decimal::MAX_PRECISION, scale, Rounding::HalfUp).ok().map(|d| d.unscaled),
        _ => None,
    }
}

/// The ordering of a `max_by` / `min_by` pair STRUCT<value, ordering>.
fn by_ordering(v: &Value) -> Option<&Value> {
    match v {
        Value::Struct(_, pair) => pair.get(1),
        _ => None,
    }
}

#[inline]
fn integral(v: &Value) -> Option<i64> {
    match *v {
        Value::Long(x) => Some(x),
        Value::Int(x) => Some(x as i64),
        _ => None,
    }
}

impl AggregateFn {
    /// The scale of a DECIMAL input column (0 for other types).
    fn decimal_scale(&self) -> u8 {
        self.input_type.decimal().map_or(0, |(_, s)| s)
    }

    fn floating_input(&self) -> bool {
        matches!(self.input_type, DataType::Float | DataType::Double)
    }

    /// A fresh state (no input).
    pub fn new_state(&self) -> AggState {
        match &self.kind {
            AggKind::CountStar | AggKind::Count => AggState::Count(0),
            AggKind::Sum | AggKind::Avg => {
                if self.input_type.decimal().is_some() {
                    AggState::DecimalSum(DecimalSum::default())
                } else if self.floating_input() {
                    AggState::DoubleSum(DoubleSum::default())
                } else {
                    AggState::LongSum(LongSum::default())
                }
            }
            AggKind::StddevSamp | AggKind::StddevPop | AggKind::VarSamp | AggKind::VarPop => {
                AggState::Moments(Moments::default())
            }
            AggKind::Min | AggKind::Max | AggKind::MaxBy | AggKind::MinBy => AggState::Extreme(None),
            AggKind::First { .. } | AggKind::Last { .. } => AggState::Pick(None),
            AggKind::ApproxCountDistinct { rsd } => {
                AggState::Distinct(Box::new(DistinctSketch::new(self.hll_lg_k(*rsd))))
            }
            AggKind::ApproxPercentile { accuracy, .. } => {
                AggState::Quantiles(Box::new(QuantileSketch::new(self.floating_input(), self.kll_k(*accuracy))))
            }
            AggKind::User(u) => AggState::User(u.zero()),
        }
    }

    /// The HLL size for `rsd`, clamped into the supported range ([`AggregateFn::from_name`]
    /// refuses an `rsd` outside it; a hand-built [`AggKind`] is clamped rather than panicking).
    pub(crate) fn hll_lg_k(&self, rsd: f64) -> u8 {
        let (lo, hi) = sketch::HLL_LG_K_RANGE;
        let p = sketch::hll_lg_k(rsd);
        if p.is_nan() { hi } else { p.clamp(lo as f64, hi as f64) as u8 }
    }

    /// The KLL `k` for `accuracy`, clamped to 65535 (see [`AggregateFn::hll_lg_k`]).
    pub(crate) fn kll_k(&self, accuracy: u32) -> u16 {
        sketch::kll_k_for_accuracy(accuracy.max(1)).unwrap_or(u16::MAX)
    }

    /// Adds one input value. NULLs are skipped by every function except `count(*)`, which counts
    /// every call. A value of another type than `input_type` is a bug of the caller: it is
    /// ignored (and asserted in debug builds).
    #[inline]
    pub fn update(&self, state: &mut AggState, v: &Value) {
        // Inline fast paths: counts and sums of the column's own type (the per-record path of
        // every windowed query); everything else goes through `update_other`.
        match state {
            AggState::Count(n) => {
                if matches!(self.kind, AggKind::CountStar) || !v.is_null() {
                    *n = n.saturating_add(1);
                }
            }
            AggState::DoubleSum(s) if matches!(v, Value::Double(_)) => {
                if let Value::Double(x) = *v {
                    s.add(x, 1);
                }
            }
            AggState::LongSum(s) if matches!(v, Value::Long(_)) => {
                if let Value::Long(x) = *v {
                    s.add(x, 1);
                }
            }
            // min / max of BIGINT with a value kept: as `update_other`, a value strictly beyond
            // the kept one replaces it
            AggState::Extreme(Some(Value::Long(cur)))
                if matches!(v, Value::Long(_)) && matches!(self.kind, AggKind::Max | AggKind::Min) =>
            {
                if let Value::Long(x) = *v
                    && (if matches!(self.kind, AggKind::Max) { x > *cur } else { x < *cur })
                {
                    *cur = x;
                }
            }
            _ => self.update_other(state, v),
        }
    }

    /// [`AggregateFn::update`] on a compact state, leaving it as `update` would leave the full
    /// one; `false` (the state unchanged) when the input needs the full state (a non-finite or
    /// non-DOUBLE input to a sum): the caller then updates [`SmallState::to_state`] instead.
    #[inline(always)]
    pub(crate) fn update_small(&self, state: &mut SmallState, v: &Value) -> bool {
        match state {
            SmallState::Count(n) => {
                if matches!(self.kind, AggKind::CountStar) || !v.is_null() {
                    *n = n.saturating_add(1);
                }
                true
            }
            SmallState::DoubleSum { .. } => state.add_double(v),
            // as `update_other`: a null changes nothing; the first value is kept; then a value
            // replaces the extreme when strictly beyond it (the same order as `total_cmp` within
            // one kind). Another kind of input than the one kept: the full state decides.
            SmallState::Extreme(e) => {
                let max = match self.kind {
                    AggKind::Max => true,
                    AggKind::Min => false,
                    _ => return false,
                };
                let beyond = |new: i64, cur: i64| if max { new > cur } else { new < cur };
                match (*e, v) {
                    (_, Value::Null) => {}
                    (SmallExtreme::None, v) => match SmallExtreme::of(&Some(v.clone())) {
                        Some(first) => *e = first,
                        None => return false,
                    },
                    (SmallExtreme::Long(cur), &Value::Long(x)) => {
                        if beyond(x, cur) {
                            *e = SmallExtreme::Long(x);
                        }
                    }
                    (SmallExtreme::Int(cur), &Value::Int(x)) => {
                        if beyond(i64::from(x), i64::from(cur)) {
                            *e = SmallExtreme::Int(x);
                        }
                    }
                    (SmallExtreme::Timestamp(cur), &Value::Timestamp(x)) => {
                        if beyond(x.0, cur.0) {
                            *e = SmallExtreme::Timestamp(x);
                        }
                    }
                    _ => return false,
                }
                true
            }
        }
    }

    /// [`AggregateFn::update`] for the states and inputs without a fast path.
    #[inline(never)]
    fn update_other(&self, state: &mut AggState, v: &Value) {
        if let (AggKind::CountStar, AggState::Count(n)) = (&self.kind, &mut *state) {
            *n = n.saturating_add(1);
            return;
        }
        // first / last keep a NULL value too (Spark's, without ignoreNulls); with ignoreNulls a
        // NULL changes nothing, so `Pick(None)` still means "no value kept yet"
        if let AggState::Pick(kept) = &mut *state {
            let (last, ignore_nulls) = match self.kind {
                AggKind::First { ignore_nulls } => (false, ignore_nulls),
                AggKind::Last { ignore_nulls } => (true, ignore_nulls),
                _ => (false, false),
            };
            if (kept.is_none() || last) && !(ignore_nulls && v.is_null()) {
                *kept = Some(v.clone());
            }
            return;
        }
        if v.is_null() {
            return;
        }
        match (&self.kind, state) {
            (_, AggState::Count(n)) => *n = n.saturating_add(1),
            (_, AggState::LongSum(s)) => match integral(v) {
                Some(x) => s.add(x, 1),
                None => debug_assert!(false, "{v:?} given to {self:?}"),
            },
            (_, AggState::DoubleSum(s)) => match floating(v) {
                Some(x) => s.add(x, 1),
                None => debug_assert!(false, "{v:?} given to {self:?}"),
            },
            (_, AggState::DecimalSum(s)) => match unscaled(v, self.decimal_scale()) {
                Some(x) => s.add(x, 1),
                None => debug_assert!(false, "{v:?} given to {self:?}"),
            },
            (_, AggState::Moments(m)) => match floating(v) {
                Some(x) => m.add(x, 1),
                None => debug_assert!(false, "{v:?} given to {self:?}"),
            },
            (AggKind::MaxBy | AggKind::MinBy, AggState::Extreme(e)) => {
                if by_ordering(v).is_some_and(|o| !o.is_null()) && self.by_replaces(e.as_ref(), v) {
                    *e = Some(v.clone());
                }
            }
            (AggKind::Min, AggState::Extreme(e)) => match e {
                Some(cur) if v.total_cmp(cur).is_ge() => {}
                _ => *e = Some(v.clone()),
            },
            (_, AggState::Extreme(e)) => match e {
                Some(cur) if v.total_cmp(cur).is_le() => {}
                _ => *e = Some(v.clone()),
            },
            (_, AggState::Distinct(s)) => s.update(v),
            (_, AggState::Quantiles(s)) => s.update(v),
            (_, AggState::Pick(_)) => {}
            (AggKind::User(u), AggState::User(s)) => u.reduce(s, v),
            (_, AggState::User(_)) => debug_assert!(false, "user state for {self:?}"),
        }
    }

    /// Removes one input value previously added (NULLs are skipped, as by
    /// [`AggregateFn::update`]; `count(*)` removes a row). Returns `false`, leaving the state
    /// unchanged, when the function cannot retract ([`AggregateFn::can_retract`]).
    #[inline]
    pub fn retract(&self, state: &mut AggState, v: &Value) -> bool {
        if let (AggKind::CountStar, AggState::Count(n)) = (&self.kind, &mut *state) {
            *n = n.saturating_sub(1);
            return true;
        }
        if let (AggKind::User(u), AggState::User(s)) = (&self.kind, &mut *state) {
            return v.is_null() || u.retract(s, v);
        }
        if !self.can_retract() {
            return false;
        }
        if v.is_null() {
            return true;
        }
        match state {
            AggState::Count(n) => *n = n.saturating_sub(1),
            AggState::LongSum(s) => match integral(v) {
                Some(x) => s.add(x, -1),
                None => debug_assert!(false, "{v:?} retracted from {self:?}"),
            },
            AggState::DoubleSum(s) => match floating(v) {
                Some(x) => s.add(x, -1),
                None => debug_assert!(false, "{v:?} retracted from {self:?}"),
            },
            AggState::DecimalSum(s) => match unscaled(v, self.decimal_scale()) {
                Some(x) => s.add(x, -1),
                None => debug_assert!(false, "{v:?} retracted from {self:?}"),
            },
            AggState::Moments(m) => match floating(v) {
                Some(x) => m.add(x, -1),
                None => debug_assert!(false, "{v:?} retracted from {self:?}"),
            },
            _ => return false,
        }
        true
    }

    /// Merges `other` (a state of the same measure, e.g. another pane) into `state`.
    ///
    /// # Panics
    /// When the two states are of different functions (a bug of the caller: both must come from
    /// this [`AggregateFn`]).
    pub fn merge(&self, state: &mut AggState, other: &AggState) {
        match (&self.kind, state, other) {
            (_, AggState::Count(a), AggState::Count(b)) => *a = a.saturating_add(*b),
            (_, AggState::LongSum(a), AggState::LongSum(b)) => a.merge(b),
            (_, AggState::DoubleSum(a), AggState::DoubleSum(b)) => a.merge(b),
            (_, AggState::DecimalSum(a), AggState::DecimalSum(b)) => a.merge(b),
            (_, AggState::Moments(a), AggState::Moments(b)) => a.merge(b),
            (_, AggState::Extreme(_), AggState::Extreme(None)) => {}
            (AggKind::MaxBy | AggKind::MinBy, AggState::Extreme(a), AggState::Extreme(Some(b))) => {
                if self.by_replaces(a.as_ref(), b) {
                    *a = Some(b.clone());
                }
            }
            // `state` holds what was seen first, `other` what came after it
            (AggKind::First { .. }, AggState::Pick(a), AggState::Pick(b)) => {
                if a.is_none() {
                    a.clone_from(b);
                }
            }
            (_, AggState::Pick(a), AggState::Pick(b)) => {
                if b.is_some() {
                    a.clone_from(b);
                }
            }
            (kind, AggState::Extreme(a), AggState::Extreme(Some(b))) => {
                let replace = match a {
                    None => true,
                    Some(cur) if matches!(kind, AggKind::Min) => b.total_cmp(cur).is_lt(),
                    Some(cur) => b.total_cmp(cur).is_gt(),
                };
                if replace {
                    *a = Some(b.clone());
                }
            }
            (_, AggState::Distinct(a), AggState::Distinct(b)) => a.merge(b),
            (_, AggState::Quantiles(a), AggState::Quantiles(b)) => a.merge(b),
            (AggKind::User(u), AggState::User(a), AggState::User(b)) => u.merge(a, b),
            (_, a, b) => panic!("merging states of different functions: {a:?} and {b:?}"),
        }
    }

    /// The result, typed as [`AggregateFn::result_type`]; NULL per the function's null rule
    /// (module docs). Does not change the state.
    pub fn finish(&self, state: &AggState) -> Value {
        let double = |x: Option<f64>| x.map_or(Value::Null, Value::Double);
        match (&self.kind, state) {
            (_, AggState::Count(n)) => Value::Long(*n),
            (AggKind::Avg, AggState::LongSum(s)) => double(s.mean()),
            (_, AggState::LongSum(s)) => s.long_result().map_or(Value::Null, Value::Long),
            (AggKind::Avg, AggState::DoubleSum(s)) => double(s.mean()),
            (_, AggState::DoubleSum(s)) => double(s.sum()),
            (_, AggState::DecimalSum(s)) if s.n == 0 => Value::Null,
            (AggKind::Avg, AggState::DecimalSum(s)) => {
                let input = self.input_type.decimal().unwrap_or((decimal::MAX_PRECISION, 0));
                decimal::avg(s.sum, s.n, input).map_or(Value::Null, Value::Decimal)
            }
            (_, AggState::DecimalSum(s)) => {
                // kept within the result type by the operators (see `sum_fits`); NULL past it
                let d = Decimal::new(s.sum, self.decimal_scale());
                let (p, _) = decimal::sum_type(self.input_type.decimal().unwrap_or((decimal::MAX_PRECISION, 0)));
                if d.fits(p) { Value::Decimal(d) } else { Value::Null }
            }
            (AggKind::VarPop, AggState::Moments(m)) => double(m.var_pop()),
            (AggKind::StddevPop, AggState::Moments(m)) => double(m.var_pop().map(f64::sqrt)),
            (AggKind::VarSamp, AggState::Moments(m)) => double(m.var_samp()),
            (_, AggState::Moments(m)) => double(m.var_samp().map(f64::sqrt)),
            (AggKind::MaxBy | AggKind::MinBy, AggState::Extreme(v)) => match v {
                Some(Value::Struct(_, pair)) => pair.first().cloned().unwrap_or(Value::Null),
                _ => Value::Null,
            },
            (_, AggState::Extreme(v)) => v.clone().unwrap_or(Value::Null),
            (_, AggState::Pick(v)) => v.clone().unwrap_or(Value::Null),
            (_, AggState::Distinct(s)) => Value::Long(s.estimate()),
            (AggKind::ApproxPercentile { percentages, list, .. }, AggState::Quantiles(s)) => {
                if s.n() == 0 {
                    return Value::Null;
                }
                let Some(qs) = s.quantiles(percentages) else {
                    return Value::Null;
                };
                let typed: Vec<Value> = qs.into_iter().map(|q| self.typed(q)).collect();
                if *list { Value::List(typed.into()) } else { typed.into_iter().next().unwrap_or(Value::Null) }
            }
            (AggKind::User(u), AggState::User(s)) => u.finish(s),
            _ => Value::Null,
        }
    }

    /// Whether the pair `new` (STRUCT<value, ordering>, non-null ordering) replaces the kept pair
    /// of `max_by` / `min_by`: its ordering is strictly beyond the kept one (ties keep the first).
    fn by_replaces(&self, kept: Option<&Value>, new: &Value) -> bool {
        let (Some(kept), Some(o)) = (kept.and_then(by_ordering), by_ordering(new)) else { return kept.is_none() };
        let c = o.total_cmp(kept);
        if matches!(self.kind, AggKind::MinBy) { c.is_lt() } else { c.is_gt() }
    }

    /// A quantile typed back to the input's type.
    fn typed(&self, q: F64OrI64) -> Value {
        match (self.input_type, q) {
            (DataType::Int, F64OrI64::I64(x)) => Value::Int(x as i32),
            (DataType::Timestamp, F64OrI64::I64(x)) => Value::Timestamp(Timestamp(x)),
            (_, F64OrI64::I64(x)) => Value::Long(x),
            (DataType::Float, F64OrI64::F64(x)) => Value::Float(x as f32),
            (_, F64OrI64::F64(x)) => Value::Double(x),
        }
    }
}
