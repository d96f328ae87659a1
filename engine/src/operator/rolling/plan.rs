//! The compiled query ([`Plan`]: measures, lanes, ranges) and what it does to one key's state:
//! records leave ranges, become visible, arrive; the key's next instant; its row.

use super::RollingWindowConfig;
use super::keys::KeyState;
use super::measure::{Measure, Range, finish, fold};
use super::records::{Cell, Records};
use super::timers::Timers;
use crate::operator::window_aggregate::key::InlineKey;
use crate::schema::DataType;
use crate::time::Timestamp;
use crate::value::{Record, Row, Value};

/// Where an integer sum's state sits in a key's state.
#[derive(Clone, Copy, Debug)]
enum SumAt {
    /// `ranges[b]`.
    Bounded(usize),
    /// `lifetime[l]`.
    Lifetime(usize),
}

/// A pending record refused as it became visible: it would have taken the integer sum
/// `measures[measure]` out of BIGINT (SEMANTICS.md "Aggregate functions"). What the state kept of
/// it: its event time (µs) and one cell per lane.
#[derive(Debug)]
pub(super) struct Refused {
    pub(super) t: i64,
    pub(super) cells: Box<[Cell]>,
    pub(super) measure: usize,
}

/// The measures of a rolling window, compiled.
#[derive(Debug)]
pub(super) struct Plan {
    pub(super) measures: Box<[Measure]>,
    /// Indexes (into `measures`) of bounded and lifetime measures.
    pub(super) bounded: Box<[usize]>,
    pub(super) lifetime: Box<[usize]>,
    /// Per lane: the record column and its type.
    pub(super) lanes: Box<[(usize, DataType)]>,
    /// The longest bounded range (µs); `None` without bounded measures.
    max_range_us: Option<i64>,
    /// The distinct range lengths (µs) of the bounded measures: one timer queue each.
    pub(super) spans: Box<[i64]>,
    /// Per bounded measure: the index of its range length in `spans`, and whether it is the
    /// first bounded measure of that length (the one that queues the records' leave instants).
    span_of: Box<[(usize, bool)]>,
    /// The integer sums (`sum` over INT / BIGINT): measure index, lane, state: the records they
    /// would take out of BIGINT are refused ([`Plan::overflow`]).
    sums: Box<[(usize, usize, SumAt)]>,
}

impl Plan {
    pub(super) fn new(cfg: &RollingWindowConfig) -> Plan {
        let mut lanes: Vec<(usize, DataType)> = Vec::new();
        let measures: Box<[Measure]> = cfg
            .measures
            .iter()
            .map(|m| {
                let lane = m.func.input.map(|c| {
                    let key = (c, m.func.input_type);
                    lanes.iter().position(|l| *l == key).unwrap_or_else(|| {
                        lanes.push(key);
                        lanes.len() - 1
                    })
                });
                Measure { func: m.func.clone(), over_us: m.over.map(|d| d.0), lane, ty: m.func.input_type }
            })
            .collect();
        let bounded: Box<[usize]> = (0..measures.len()).filter(|&i| measures[i].over_us.is_some()).collect();
        let lifetime: Box<[usize]> = (0..measures.len()).filter(|&i| measures[i].over_us.is_none()).collect();
        let max_range_us = bounded.iter().filter_map(|&i| measures[i].over_us).max();
        let mut spans: Vec<i64> = Vec::new();
        let span_of = bounded
            .iter()
            .map(|&i| {
                let d = measures[i].over_us.unwrap_or(0);
                match spans.iter().position(|&s| s == d) {
                    Some(k) => (k, false),
                    None => {
                        spans.push(d);
                        (spans.len() - 1, true)
                    }
                }
            })
            .collect();
        let sums = (0..measures.len())
            .filter(|&i| measures[i].func.is_integer_sum())
            .filter_map(|i| {
                let at = match bounded.iter().position(|&b| b == i) {
                    Some(b) => SumAt::Bounded(b),
                    None => SumAt::Lifetime(lifetime.iter().position(|&l| l == i)?),
                };
                Some((i, measures[i].lane?, at))
            })
            .collect();
        Plan { measures, bounded, lifetime, lanes: lanes.into(), max_range_us, spans: spans.into(), span_of, sums }
    }

    /// An empty state for a key.
    pub(super) fn new_key(&self, key: Box<[Value]>, hash: u64) -> KeyState {
        self.key_with(key, hash, Records::new(self.lanes.len()), Records::new(self.lanes.len()))
    }

    /// The state of a key holding `pending` and `visible` records (ranges still empty: see
    /// [`Plan::rebuild_ranges`]).
    pub(super) fn key_with(&self, key: Box<[Value]>, hash: u64, pending: Records, visible: Records) -> KeyState {
        KeyState {
            inline: if key.len() == 1 { InlineKey::of_value(&key[0]) } else { InlineKey::No },
            key,
            hash,
            pending,
            visible,
            starts: vec![0; self.bounded.len()].into(),
            ranges: self.bounded.iter().map(|&i| Range::new(&self.measures[i])).collect(),
            lifetime: self.lifetime.iter().map(|&i| self.measures[i].func.new_state()).collect(),
            timer: None,
            queued_after: i64::MIN,
            dirty: false,
            snap_mark: 0,
        }
    }

    /// The lower bound of bounded measure `mi`'s range at frontier `x` (records with time <= it
    /// are out).
    #[inline]
    fn limit(&self, mi: usize, x: i64) -> i64 {
        x.saturating_sub(self.measures[mi].over_us.unwrap_or(0))
    }

    /// Brings `st` (in slot `slot`) to frontier `x`: records leave the ranges whose lower bound
    /// passed them, pending records with event time <= x become visible (their leave instants
    /// queued in `timers` when they fit), except those that would take an integer sum out of
    /// BIGINT: they enter no measure and go to `refused`. Returns whether the measured set
    /// changed.
    pub(super) fn settle(
        &self,
        st: &mut KeyState,
        x: Timestamp,
        timers: &mut Timers,
        slot: u32,
        refused: &mut Vec<Refused>,
    ) -> bool {
        let x = x.0;
        let mut changed = self.expire(st, x);
        while let Some(t) = st.pending.first_time() {
            if t > x {
                break;
            }
            if let Some(measure) = self.overflow(st, x, t, |l| st.pending.cell(l, 0).as_int()) {
                let cells = (0..self.lanes.len()).map(|l| st.pending.cell(l, 0).clone()).collect();
                refused.push(Refused { t, cells, measure });
                st.pending.pop_first();
                continue;
            }
            changed |= !self.lifetime.is_empty();
            for (l, &mi) in self.lifetime.iter().enumerate() {
                let m = &self.measures[mi];
                fold(m, &mut st.lifetime[l], m.input(&st.pending, 0), 1);
            }
            if !self.in_some_range(t, x) {
                st.pending.pop_first();
                continue;
            }
            let Some((_, p)) = st.pending.move_first(&mut st.visible) else { break };
            changed |= self.enter(st, x, t, p, timers, slot);
        }
        self.forget(st);
        changed
    }

    /// A record arrives visible at frontier `x` (its time `t <= x`) in key `st` (slot `slot`),
    /// whose `timer` is its next instant ([`Plan::next_event`], as the operator keeps it) and
    /// which has no pending record due by `x` (the operator settles such a key instead).
    /// Returns whether the measured set changed, whether the key's next instant may have
    /// changed (if not, [`Plan::next_event`] is still `st.timer`: the record entered no range
    /// as its oldest record, nothing left), and the integer sum (index into `measures`) the
    /// record would take out of BIGINT, if any: then it entered no measure. Records due to leave
    /// by `x` leave first (none are, unless a restore moved the frontier).
    pub(super) fn arrive(
        &self,
        st: &mut KeyState,
        x: Timestamp,
        t: i64,
        record: &Record,
        timers: &mut Timers,
        slot: u32,
    ) -> (bool, bool, Option<usize>) {
        let x = x.0;
        // Nothing leaves a range before the key's next instant.
        let due = st.timer.is_some_and(|at| at.0 <= x);
        let expired = due && self.expire(st, x);
        let input = |l: usize| Cell::of(&record.values[self.lanes[l].0], self.lanes[l].1).as_int();
        if let Some(j) = self.overflow(st, x, t, input) {
            return (expired, due, Some(j));
        }
        let mut changed = expired | !self.lifetime.is_empty();
        if self.in_some_range(t, x) {
            let p = st.visible.insert(t, self.cells(record));
            for (l, &mi) in self.lifetime.iter().enumerate() {
                let m = &self.measures[mi];
                fold(m, &mut st.lifetime[l], m.input(&st.visible, p), 1);
            }
            changed |= self.enter(st, x, t, p, timers, slot);
            // Record `p` is the oldest of a range it entered: that range's leave instant moved.
            let moved = due || st.starts.contains(&p);
            self.forget(st);
            (changed, moved, None)
        } else {
            for (l, &mi) in self.lifetime.iter().enumerate() {
                let m = &self.measures[mi];
                let cell = m.lane.map_or(Cell::Null, |l| Cell::of(&record.values[self.lanes[l].0], self.lanes[l].1));
                fold(m, &mut st.lifetime[l], &cell, 1);
            }
            (changed, due, None)
        }
    }

    /// The first integer sum (index into `measures`) that a record of time `t`, whose integer
    /// input in lane `l` is `input(l)`, becoming visible in `st` at frontier `x` (its ranges brought to `x`), would take
    /// out of BIGINT: a lifetime sum, or a bounded sum whose range it enters ([`AggregateFn::sum_fits`]).
    /// `None` when it fits in all (always without an integer sum).
    ///
    /// [`AggregateFn::sum_fits`]: crate::aggregate::AggregateFn::sum_fits
    #[inline]
    fn overflow(&self, st: &KeyState, x: i64, t: i64, input: impl Fn(usize) -> Option<i64>) -> Option<usize> {
        for &(mi, lane, at) in self.sums.iter() {
            let Some(v) = input(lane) else { continue };
            let state = match at {
                SumAt::Lifetime(l) => &st.lifetime[l],
                SumAt::Bounded(b) => match &st.ranges[b] {
                    Range::Retract(s) if t > self.limit(mi, x) => s,
                    _ => continue,
                },
            };
            if !self.measures[mi].func.sum_fits([state], &Value::Long(v)) {
                return Some(mi);
            }
        }
        None
    }

    /// Takes `record` as a pending record of `st`.
    pub(super) fn pend(&self, st: &mut KeyState, t: i64, record: &Record) {
        st.pending.insert(t, self.cells(record));
    }

    /// The cells of `record`, one per lane.
    #[inline]
    fn cells<'a>(&'a self, record: &'a Record) -> impl Iterator<Item = Cell> + 'a {
        self.lanes.iter().map(|&(c, ty)| Cell::of(&record.values[c], ty))
    }

    /// Whether a record of time `t` is in the longest range at frontier `x`.
    #[inline]
    fn in_some_range(&self, t: i64, x: i64) -> bool {
        self.max_range_us.is_some_and(|d| t > x.saturating_sub(d))
    }

    /// Records with `t <= x - d` leave each bounded range. Returns whether any left.
    #[inline]
    fn expire(&self, st: &mut KeyState, x: i64) -> bool {
        let mut changed = false;
        for (b, &mi) in self.bounded.iter().enumerate() {
            let m = &self.measures[mi];
            let limit = self.limit(mi, x);
            let from = st.starts[b];
            let mut s = from;
            while s < st.visible.len() && st.visible.time(s) <= limit {
                st.ranges[b].remove(m, &st.visible, s, limit);
                s += 1;
            }
            if s != from {
                changed = true;
                st.starts[b] = s;
                if s == st.visible.len() {
                    st.ranges[b].emptied();
                }
            }
        }
        changed
    }

    /// Visible record `p` (time `t`, just inserted) enters the ranges that hold it at `x`; the
    /// instant it leaves each is queued in `timers` (once per range length), or, if it does not
    /// fit at the queue's back, `st.queued_after` raised to it.
    #[inline]
    fn enter(&self, st: &mut KeyState, x: i64, t: i64, p: usize, timers: &mut Timers, slot: u32) -> bool {
        let newest = p + 1 == st.visible.len();
        let mut changed = false;
        for (b, &mi) in self.bounded.iter().enumerate() {
            if t > self.limit(mi, x) {
                st.ranges[b].add(&self.measures[mi], &st.visible, st.starts[b], p, newest);
                changed = true;
                let (span, first) = self.span_of[b];
                if first {
                    let at = t.saturating_add(self.spans[span]);
                    if !timers.queue(span, Timestamp(at), slot) {
                        st.queued_after = st.queued_after.max(at);
                    }
                }
            } else {
                // Out of this range already: it sits below the range's start (p <= start).
                st.starts[b] += 1;
            }
        }
        changed
    }

    /// Forgets the visible records below every range.
    #[inline]
    fn forget(&self, st: &mut KeyState) {
        let below = st.starts.iter().copied().min().unwrap_or(0);
        if below > 0 {
            st.visible.drop_first(below);
            for s in st.starts.iter_mut() {
                *s -= below;
            }
        }
    }

    /// The next instant at which `st` changes by itself (visibility or expiry), and whether an
    /// entry for it is already queued in the timers (it is the instant a record leaves a range,
    /// above `st.queued_after`: see [`super::timers`]).
    #[inline]
    pub(super) fn next_event(&self, st: &KeyState) -> (Option<Timestamp>, bool) {
        let mut leave: Option<i64> = None;
        for (b, &mi) in self.bounded.iter().enumerate() {
            if st.starts[b] < st.visible.len() {
                let at = st.visible.time(st.starts[b]).saturating_add(self.measures[mi].over_us.unwrap_or(0));
                leave = Some(leave.map_or(at, |n| n.min(at)));
            }
        }
        let next = match (st.pending.first_time(), leave) {
            (Some(p), Some(l)) => Some(p.min(l)),
            (p, l) => p.or(l),
        };
        let queued = leave.is_some_and(|l| Some(l) == next && l > st.queued_after);
        (next.map(Timestamp), queued)
    }

    /// The row of `st` at `frontier`: key, frontier, measures in order, in `row` (empty).
    pub(super) fn row(&self, st: &KeyState, frontier: Timestamp, mut row: Row) -> Row {
        debug_assert!(row.is_empty());
        row.extend(st.key.iter().cloned());
        row.push(Value::Timestamp(frontier));
        let (mut b, mut l) = (0, 0);
        for m in self.measures.iter() {
            if m.over_us.is_some() {
                row.push(st.ranges[b].finish(m, &st.visible, st.starts[b]));
                b += 1;
            } else {
                row.push(finish(m, &st.lifetime[l]));
                l += 1;
            }
        }
        row
    }

    /// Whether `st` holds nothing that can change by itself and no lifetime measure needs it.
    pub(super) fn is_empty(&self, st: &KeyState) -> bool {
        self.lifetime.is_empty() && !st.dirty && st.pending.is_empty() && st.visible.is_empty()
    }

    /// Rebuilds the bounded range states of `st` from its visible records (none of them
    /// queued in the timers: `st.queued_after` is raised above their leave instants).
    pub(super) fn rebuild_ranges(&self, st: &mut KeyState) {
        if let (Some(last), Some(d)) = (st.visible.last_time(), self.max_range_us) {
            st.queued_after = st.queued_after.max(last.saturating_add(d));
        }
        for (b, &mi) in self.bounded.iter().enumerate() {
            let m = &self.measures[mi];
            for i in st.starts[b]..st.visible.len() {
                st.ranges[b].add(m, &st.visible, st.starts[b], i, true);
            }
        }
    }
}
