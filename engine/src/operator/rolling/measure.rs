//! The state of one measure of one key: a lifetime aggregate, or a bounded range's aggregate that
//! records enter (when visible) and leave (when the frontier passes `t + d`).
//!
//! - count, sum, avg and the variance family retract (sums of doubles are double-double, so
//!   nothing drifts after millions of add / remove: [`crate::aggregate::numeric`]);
//! - min / max keep a *monotonic deque* (the candidates that can still become the extreme, in
//!   event-time order) while records enter the range in event-time order, which they do unless a
//!   record arrives visible with an event time below the newest one in range; then, until the
//!   range empties, an [`OrderedMultiset`];
//! - approx_percentile keeps an [`OrderedMultiset`] (exact, so within any rank-error bound);
//! - approx_count_distinct over a range counts exactly (value -> multiplicity);
//! - a user aggregate that cannot retract is recomputed over the range when a row is built.

use std::collections::VecDeque;

use hashbrown::HashMap;

use super::ordered::OrderedMultiset;
use super::records::{Cell, Records};
use crate::aggregate::{AggKind, AggState, AggregateFn};
use crate::schema::DataType;
use crate::value::{KeyValue, Value};

/// One measure as the operator runs it.
#[derive(Clone, Debug)]
pub(super) struct Measure {
    pub(super) func: AggregateFn,
    /// The range `d` in µs (bounded measures), `None` for lifetime.
    pub(super) over_us: Option<i64>,
    /// The lane of its input column; `None` for `count(*)`.
    pub(super) lane: Option<usize>,
    /// The input column's type.
    pub(super) ty: DataType,
}

impl Measure {
    /// The input of record `i` of `records` (NULL for `count(*)`, which counts regardless).
    #[inline]
    pub(super) fn input<'a>(&self, records: &'a Records, i: usize) -> &'a Cell {
        match self.lane {
            Some(l) => records.cell(l, i),
            None => &Cell::Null,
        }
    }
}

/// Adds (`sign = 1`) or removes (`sign = -1`) one input to a retractable state. The common
/// states are updated in place; anything else goes through [`AggregateFn::update`] /
/// [`AggregateFn::retract`] with the value rebuilt.
#[inline(always)]
pub(super) fn fold(m: &Measure, state: &mut AggState, cell: &Cell, sign: i64) {
    match (state, cell) {
        (AggState::Count(n), c) => {
            if matches!(m.func.kind, AggKind::CountStar) || !c.is_null() {
                *n = n.saturating_add(sign);
            }
        }
        (_, Cell::Null) => {}
        (AggState::DoubleSum(s), Cell::F(x)) => s.add(*x, sign),
        (AggState::LongSum(s), Cell::I(x)) if matches!(m.ty, DataType::Long | DataType::Int) => s.add(*x, sign),
        (AggState::Moments(s), Cell::F(x)) => s.add(*x, sign),
        (AggState::Moments(s), Cell::I(x)) if matches!(m.ty, DataType::Long | DataType::Int) => s.add(*x as f64, sign),
        (state, c) => {
            let v = c.value(m.ty);
            if sign > 0 {
                m.func.update(state, &v);
            } else {
                // Only retractable functions are folded out (see `Range::new`).
                m.func.retract(state, &v);
            }
        }
    }
}

/// The value of a state: the common ones directly, the rest through [`AggregateFn::finish`].
#[inline]
pub(super) fn finish(m: &Measure, state: &AggState) -> Value {
    match (state, &m.func.kind) {
        (AggState::Count(n), AggKind::CountStar | AggKind::Count) => Value::Long(*n),
        (AggState::DoubleSum(s), AggKind::Sum) => s.sum().map_or(Value::Null, Value::Double),
        (s, _) => m.func.finish(s),
    }
}

/// A bounded measure's state (see the module documentation).
#[derive(Debug)]
pub(super) enum Range {
    /// A retractable aggregate.
    Retract(AggState),
    /// Min or max: the monotonic deque `(event time, value)` whose front is the extreme, or the
    /// values in an ordered multiset once a record entered out of event-time order.
    Extreme { max: bool, mono: VecDeque<(i64, Cell)>, sorted: Option<OrderedMultiset> },
    /// approx_percentile: the values, ordered.
    Ordered(OrderedMultiset),
    /// approx_count_distinct: value -> multiplicity.
    Distinct(HashMap<KeyValue, u32>),
    /// A user aggregate without retract: recomputed from the records in range.
    Rescan,
}

impl Range {
    /// The empty state of `m`.
    pub(super) fn new(m: &Measure) -> Range {
        match m.func.kind {
            AggKind::Min | AggKind::Max => {
                Range::Extreme { max: matches!(m.func.kind, AggKind::Max), mono: VecDeque::new(), sorted: None }
            }
            AggKind::ApproxPercentile { .. } => Range::Ordered(OrderedMultiset::default()),
            AggKind::ApproxCountDistinct { .. } => Range::Distinct(HashMap::new()),
            _ if m.func.can_retract() => Range::Retract(m.func.new_state()),
            _ => Range::Rescan,
        }
    }

    /// Record `i` of `visible` (time `t`) enters the range, whose records are `visible[start..]`
    /// (record `i` included). `newest`: no record in range has a later event time.
    pub(super) fn add(&mut self, m: &Measure, visible: &Records, start: usize, i: usize, newest: bool) {
        let cell = m.input(visible, i);
        match self {
            Range::Retract(s) => fold(m, s, cell, 1),
            Range::Rescan => {}
            _ if cell.is_null() => {}
            Range::Extreme { sorted: Some(set), .. } => set.insert(cell.value(m.ty).into_owned()),
            Range::Extreme { max, mono, sorted } => {
                if newest {
                    let t = visible.time(i);
                    // Candidates the new value dominates can never be the extreme again.
                    while let Some((_, back)) = mono.back() {
                        let o = back.cmp(cell, m.ty);
                        if (*max && o.is_le()) || (!*max && o.is_ge()) {
                            mono.pop_back();
                        } else {
                            break;
                        }
                    }
                    mono.push_back((t, cell.clone()));
                } else {
                    let mut set = OrderedMultiset::default();
                    for j in start..visible.len() {
                        let c = m.input(visible, j);
                        if !c.is_null() {
                            set.insert(c.value(m.ty).into_owned());
                        }
                    }
                    mono.clear();
                    *sorted = Some(set);
                }
            }
            Range::Ordered(set) => set.insert(cell.value(m.ty).into_owned()),
            Range::Distinct(map) => *map.entry(KeyValue(cell.value(m.ty).into_owned())).or_insert(0) += 1,
        }
    }

    /// Record `i` of `visible` leaves the range; `limit` is the range's new lower bound
    /// (records with time <= `limit` are out).
    pub(super) fn remove(&mut self, m: &Measure, visible: &Records, i: usize, limit: i64) {
        let cell = m.input(visible, i);
        match self {
            Range::Retract(s) => fold(m, s, cell, -1),
            Range::Rescan => {}
            Range::Extreme { mono, sorted: None, .. } => {
                while mono.front().is_some_and(|(t, _)| *t <= limit) {
                    mono.pop_front();
                }
            }
            _ if cell.is_null() => {}
            Range::Extreme { sorted: Some(set), .. } | Range::Ordered(set) => {
                set.remove(&cell.value(m.ty));
            }
            Range::Distinct(map) => {
                let k = KeyValue(cell.value(m.ty).into_owned());
                if let Some(c) = map.get_mut(&k) {
                    *c -= 1;
                    if *c == 0 {
                        map.remove(&k);
                    }
                }
            }
        }
    }

    /// Starts loading both ends of a min / max candidate deque (software prefetch).
    #[inline]
    pub(super) fn prefetch(&self) {
        if let Range::Extreme { mono, .. } = self {
            super::records::prefetch_ends(mono);
        }
    }

    /// The range holds no record any more: min / max go back to the monotonic deque.
    pub(super) fn emptied(&mut self) {
        if let Range::Extreme { mono, sorted, .. } = self {
            mono.clear();
            *sorted = None;
        }
    }

    /// The measure's value over the records `visible[start..]`.
    pub(super) fn finish(&self, m: &Measure, visible: &Records, start: usize) -> Value {
        match self {
            Range::Retract(s) => finish(m, s),
            Range::Extreme { mono, sorted: None, .. } => {
                mono.front().map_or(Value::Null, |(_, c)| c.value(m.ty).into_owned())
            }
            Range::Extreme { max, sorted: Some(set), .. } => {
                if *max { set.max().cloned() } else { set.min().cloned() }.unwrap_or(Value::Null)
            }
            Range::Ordered(set) => match &m.func.kind {
                AggKind::ApproxPercentile { percentages, list, .. } if !set.is_empty() => {
                    let at = |p: f64| set.percentile(p).cloned().unwrap_or(Value::Null);
                    if *list {
                        Value::List(percentages.iter().map(|p| at(*p)).collect())
                    } else {
                        at(percentages.first().copied().unwrap_or(0.5))
                    }
                }
                _ => Value::Null,
            },
            Range::Distinct(map) => Value::Long(map.len() as i64),
            Range::Rescan => {
                let mut s = m.func.new_state();
                for i in start..visible.len() {
                    m.func.update(&mut s, &m.input(visible, i).value(m.ty));
                }
                m.func.finish(&s)
            }
        }
    }
}
