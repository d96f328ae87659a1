//! The compact layout of a rolling window ([`Compact`]): the general layout's per-key ring
//! buffers and timer queues replaced by one log of every record in range, for the queries and
//! inputs where that gives the same answers.
//!
//! The general layout ([`super::keys`], [`super::records`], [`super::timers`]) keeps each key's
//! records in range in buffers of its own, behind three levels of pointers: a record visits its
//! key's buffers at both ends, and so does the record that leaves the range because of it, each
//! visit touching 15-19 cache lines spread over memory that grows with the records in range. Here
//! the records in range sit in one log in the order they leave (read and written at its two ends
//! only), and a key's state is a fixed-size slot plus its measures' states in two flat tables
//! indexed by slot: a visit touches a few lines of memory that grows with the keys only.
//!
//! It takes the shape of the common live-feature query, in real-time mode: every bounded
//! measure over the same range `d`, each one retractable (count, sum, avg, the variance family)
//! or a min / max, at most one input column, lifetime measures of any kind. It holds while each
//! record arrives visible (event time `<=` the frontier) and not older than its key's newest
//! record in range: then a key's records enter its range in event-time order and min / max keep
//! a monotonic deque. A record that breaks this (a pending record, one out of order within its
//! key), a snapshot, a restore or a re-split make the operator *demote* the layout: the keys are
//! moved into the general layout ([`Compact::to_general`], as a restore builds them), which goes
//! on from there. Same rows either way (SEMANTICS.md "Rolling window"; the property tests run
//! both layouts against the brute-force reference): same keys in the same slots, rows of one
//! instant in slot order, as the general layout's timers fire them.

use std::cmp::{Ordering, Reverse};
use std::collections::{BinaryHeap, VecDeque};

use super::fifo::Fifo;
use super::keys::{KeyState, Keys};
use super::measure::{Range, finish, fold};
use super::plan::Plan;
use super::records::{Cell, Records};
use crate::aggregate::AggState;
use crate::operator::key_table::KeyTable;
use crate::operator::paged::Paged;
use crate::operator::window_aggregate::key::InlineKey;
use crate::operator::{Output, PREFETCH_DISTANCE};
use crate::time::Timestamp;
use crate::value::{Record, Row, Value};

/// Where a measure's state sits in a key's share of the flat tables.
#[derive(Clone, Copy, Debug)]
enum Place {
    /// A retractable bounded measure or a lifetime measure: `aggs[slot * aggs_per_key + i]`.
    Agg(usize),
    /// A bounded min (`false`) / max (`true`): `deques[slot * deques_per_key + i]`.
    Deque(usize, bool),
}

/// One record in range: its event time (µs; it leaves at `t + d`), its key's slot and its input.
/// 32 bytes. Ordered by event time only: records of one instant leave together, whatever their
/// order.
#[derive(Clone, Debug)]
struct Entry {
    t: i64,
    slot: u32,
    cell: Cell,
}

impl PartialEq for Entry {
    fn eq(&self, other: &Entry) -> bool {
        self.t == other.t
    }
}

impl Eq for Entry {}

impl PartialOrd for Entry {
    fn partial_cmp(&self, other: &Entry) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Entry {
    fn cmp(&self, other: &Entry) -> Ordering {
        self.t.cmp(&other.t)
    }
}

/// The fixed part of a key's state (its measures' states are in [`Compact`]'s flat tables).
#[derive(Debug)]
struct Slot {
    /// A single-column key, inline: compared without reading `key`.
    inline: InlineKey,
    hash: u64,
    /// Records of the key in range.
    in_range: u32,
    /// Whether the slot holds a key (freed slots are reused, newest freed first).
    live: bool,
    /// The newest event time in range (µs); meaningful while `in_range > 0`.
    newest: i64,
    /// The last instant at which a record of the key left (a row per key and instant).
    left_at: i64,
    /// The first `partition_by` value (NULL without key columns), inline: every row clones it.
    first: Value,
    /// The other `partition_by` values, in order.
    rest: Box<[Value]>,
}

/// Why the compact layout cannot take a record: the operator demotes it and hands the record to
/// the general layout.
#[derive(Debug)]
pub(super) struct Demote;

/// The compact layout (see the module documentation).
#[derive(Debug)]
pub(super) struct Compact {
    /// Indexes of the `partition_by` columns.
    columns: Box<[usize]>,
    /// Keys by hash, and their slots, states and deques in blocks: adding a key never moves many
    /// (issue 28, [`KeyTable`], [`Paged`]).
    table: KeyTable,
    slots: Paged<Slot>,
    free: Vec<u32>,
    /// Per key, `aggs_per_key` states: the retractable bounded measures', then the lifetime ones.
    aggs: Paged<AggState>,
    aggs_per_key: usize,
    /// The measure (index into the plan's) of each of a key's aggs.
    agg_measures: Box<[usize]>,
    /// Per key, `deques_per_key` monotonic deques `(event time, value)` of the bounded min / max.
    deques: Paged<VecDeque<(i64, Cell)>>,
    deques_per_key: usize,
    /// Per measure of the plan, in output order.
    places: Box<[Place]>,
    /// Per bounded measure of the plan.
    bounded_places: Box<[Place]>,
    /// Per lifetime measure of the plan: its index into a key's aggs.
    lifetime_aggs: Box<[usize]>,
    /// The aggs (index into a key's) of the integer sums, and whether lifetime.
    sum_aggs: Box<[(usize, bool)]>,
    /// The range `d` of every bounded measure (µs); `None` without bounded measures.
    d: Option<i64>,
    /// Records in range, in event-time order (so in the order they leave), in arrival order
    /// among equal times; in blocks, so that growing never copies it (a stall of milliseconds
    /// at millions of records).
    log: Fifo<Entry>,
    /// Records in range that did not fit at the back of `log` (older than its back: another
    /// key's newer record came first).
    late: BinaryHeap<Reverse<Entry>>,
    /// Slots with a record leaving at the instant being fired.
    leaving: Vec<u32>,
    /// The slots of the keys of the last [`HALF`] hints of [`Compact::prefetch`] (a ring).
    hints: std::cell::Cell<[Option<u32>; HALF]>,
    hint_at: std::cell::Cell<usize>,
}

/// Half the prefetch distance: the records between a prefetch's two steps.
const HALF: usize = PREFETCH_DISTANCE / 2;

impl Compact {
    /// The compact layout for `plan` in real-time mode, if the query has its shape (see the
    /// module documentation).
    pub(super) fn for_plan(plan: &Plan, columns: &[usize]) -> Option<Compact> {
        if plan.spans.len() > 1 || plan.lanes.len() > 1 {
            return None;
        }
        let mut aggs = 0;
        let mut deques = 0;
        let mut bounded_places = Vec::with_capacity(plan.bounded.len());
        let mut agg_measures = Vec::new();
        for &mi in plan.bounded.iter() {
            let place = match Range::new(&plan.measures[mi]) {
                Range::Retract(_) => {
                    agg_measures.push(mi);
                    aggs += 1;
                    Place::Agg(aggs - 1)
                }
                Range::Extreme { max, .. } => {
                    deques += 1;
                    Place::Deque(deques - 1, max)
                }
                _ => return None,
            };
            bounded_places.push(place);
        }
        let lifetime_aggs: Box<[usize]> = (aggs..aggs + plan.lifetime.len()).collect();
        agg_measures.extend(plan.lifetime.iter().copied());
        let mut places = vec![Place::Agg(0); plan.measures.len()];
        for (b, &mi) in plan.bounded.iter().enumerate() {
            places[mi] = bounded_places[b];
        }
        for (l, &mi) in plan.lifetime.iter().enumerate() {
            places[mi] = Place::Agg(lifetime_aggs[l]);
        }
        let sum_aggs = (0..agg_measures.len())
            .filter(|&k| plan.measures[agg_measures[k]].func.is_integer_sum())
            .map(|k| (k, k >= aggs))
            .collect();
        Some(Compact {
            sum_aggs,
            columns: columns.into(),
            table: KeyTable::default(),
            slots: Paged::default(),
            free: Vec::new(),
            aggs: Paged::with_stride(aggs + plan.lifetime.len()),
            aggs_per_key: aggs + plan.lifetime.len(),
            agg_measures: agg_measures.into(),
            deques: Paged::with_stride(deques),
            deques_per_key: deques,
            places: places.into(),
            bounded_places: bounded_places.into(),
            lifetime_aggs,
            d: plan.spans.first().copied(),
            log: Fifo::default(),
            late: BinaryHeap::new(),
            leaving: Vec::new(),
            hints: std::cell::Cell::new([None; HALF]),
            hint_at: std::cell::Cell::new(0),
        })
    }

    /// Number of keys.
    pub(super) fn len(&self) -> usize {
        self.table.len()
    }

    /// The slot of the key of `record` (hashed `hash` by [`Keys::hash_record`]).
    #[inline]
    fn find(&self, hash: u64, record: &Record) -> Option<u32> {
        let (slots, columns) = (&self.slots, &*self.columns);
        self.table.find(hash, |i| {
            let s = &slots[i as usize];
            s.inline.matches(record, columns).unwrap_or_else(|| match columns.split_first() {
                None => true,
                Some((&c, more)) => {
                    s.first == record.values[c] && s.rest.iter().zip(more).all(|(k, &c)| *k == record.values[c])
                }
            })
        })
    }

    /// Adds the key of `record` (absent), with empty states; returns its slot.
    fn insert(&mut self, plan: &Plan, hash: u64, record: &Record) -> u32 {
        let value = |c: &usize| record.values[*c].clone();
        let first = self.columns.first().map_or(Value::Null, value);
        let slot = Slot {
            inline: if self.columns.len() == 1 { InlineKey::of_value(&first) } else { InlineKey::No },
            first,
            rest: self.columns.iter().skip(1).map(value).collect(),
            hash,
            in_range: 0,
            live: true,
            newest: i64::MIN,
            left_at: i64::MIN,
        };
        let i = match self.free.pop() {
            Some(i) => {
                self.slots[i as usize] = slot;
                for k in 0..self.aggs_per_key {
                    *self.aggs.at_mut(i as usize, k) = plan.measures[self.agg_measures[k]].func.new_state();
                }
                i
            }
            None => {
                self.slots.push(slot);
                self.aggs.push_run(self.agg_measures.iter().map(|&mi| plan.measures[mi].func.new_state()));
                self.deques.push_run((0..self.deques_per_key).map(|_| VecDeque::new()));
                (self.slots.len() - 1) as u32
            }
        };
        self.table.insert(hash, i);
        i
    }

    /// Frees slot `i` (its key has nothing left: no record in range, no lifetime measure).
    fn remove(&mut self, i: u32) {
        let s = &mut self.slots[i as usize];
        let hash = s.hash;
        s.live = false;
        s.first = Value::Null;
        s.rest = Box::default();
        self.table.remove(hash, i);
        for dq in self.deques.run_mut(i as usize).into_iter().flatten() {
            dq.clear();
        }
        self.free.push(i);
    }

    /// Software prefetch for a record that comes [`PREFETCH_DISTANCE`] records from now
    /// (hashed `hash`), and for the records that leave the range meanwhile (one per record in a
    /// steady stream), in two steps each reading only what the one before loaded: the key's
    /// slot and states now; half the distance later (the slot loaded by then), what the slot
    /// points to: the ends of its min / max deques and its first key value's reference count
    /// (every row clones it). Changes nothing observable: a stale hint only loads memory in vain.
    #[inline]
    pub(super) fn prefetch(&self, hash: u64) {
        let slot = self.table.first_hashed(hash);
        if let Some(i) = slot {
            self.prefetch_slot(i);
        }
        let at = self.hint_at.get();
        let mut hints = self.hints.get();
        let earlier = hints[at];
        hints[at] = slot;
        self.hints.set(hints);
        self.hint_at.set((at + 1) % HALF);
        if let Some(i) = earlier {
            self.prefetch_pointees(i);
        }
        if let Some(e) = self.log.get(PREFETCH_DISTANCE) {
            self.prefetch_slot(e.slot);
        }
        if let Some(e) = self.log.get(HALF) {
            self.prefetch_pointees(e.slot);
        }
    }

    /// Second step of [`Compact::prefetch`] for slot `i`.
    #[inline]
    fn prefetch_pointees(&self, i: u32) {
        let i = i as usize;
        if let Some(Value::Str(s)) = self.slots.get(i).map(|s| &s.first) {
            // The reference counts sit just before the bytes.
            crate::prefetch::line(s.as_ptr().wrapping_sub(16));
        }
        for dq in self.deques.run(i).unwrap_or_default() {
            super::records::prefetch_ends(dq);
        }
    }

    /// First step of [`Compact::prefetch`] for slot `i`: the slot and the key's states.
    #[inline]
    fn prefetch_slot(&self, i: u32) {
        let i = i as usize;
        self.slots.prefetch(i);
        self.aggs.prefetch(i);
        self.deques.prefetch(i);
    }

    /// A record (event time `t`, hashed `hash`) arrives visible at frontier `f`: it enters the
    /// range if `t > f - d`, every lifetime measure takes it, and the key's row is emitted at `f`
    /// if anything changed (SEMANTICS.md "Rolling window", emission). [`Demote`] (nothing
    /// changed) when it is older than its key's newest record in range, or when it would take
    /// an integer sum out of BIGINT (the general layout refuses it).
    pub(super) fn arrive(
        &mut self,
        plan: &Plan,
        hash: u64,
        record: &Record,
        t: i64,
        f: Timestamp,
        out: &mut Output,
    ) -> Result<(), Demote> {
        let found = self.find(hash, record);
        if let Some(i) = found {
            let s = &self.slots[i as usize];
            if s.in_range > 0 && t < s.newest && self.d.is_some_and(|d| t > f.0.saturating_sub(d)) {
                return Err(Demote);
            }
            if !self.sum_aggs.is_empty() && self.overflows(plan, i, record, t, f) {
                return Err(Demote);
            }
        }
        let i = match found {
            Some(i) => i,
            None => self.insert(plan, hash, record),
        };
        let cell = plan.lanes.first().map_or(Cell::Null, |&(c, ty)| Cell::of(&record.values[c], ty));
        let slot = i as usize;
        for (l, &mi) in plan.lifetime.iter().enumerate() {
            fold(&plan.measures[mi], self.aggs.at_mut(slot, self.lifetime_aggs[l]), &cell, 1);
        }
        let mut changed = !plan.lifetime.is_empty();
        if self.d.is_some_and(|d| t > f.0.saturating_sub(d)) {
            for (b, &mi) in plan.bounded.iter().enumerate() {
                let m = &plan.measures[mi];
                match self.bounded_places[b] {
                    Place::Agg(k) => fold(m, self.aggs.at_mut(slot, k), &cell, 1),
                    Place::Deque(k, max) => {
                        if !cell.is_null() {
                            let dq = self.deques.at_mut(slot, k);
                            // Candidates the new value dominates can never be the extreme again.
                            while let Some((_, back)) = dq.back() {
                                let o = back.cmp(&cell, m.ty);
                                if (max && o.is_le()) || (!max && o.is_ge()) {
                                    dq.pop_back();
                                } else {
                                    break;
                                }
                            }
                            dq.push_back((t, cell.clone()));
                        }
                    }
                }
            }
            let s = &mut self.slots[i as usize];
            s.in_range += 1;
            s.newest = t;
            let e = Entry { t, slot: i, cell };
            if self.log.back().is_none_or(|b| b.t <= t) {
                self.log.push_back(e);
            } else {
                self.late.push(Reverse(e));
            }
            changed = true;
        }
        if changed {
            let row = self.row(plan, i, f, out.row_buffer(self.columns.len() + 1 + plan.measures.len()));
            out.rows.push(row);
        }
        self.free_if_empty(plan, i);
        Ok(())
    }

    /// Whether `record` (time `t`, arriving visible at `f`) would take an integer sum of key `i`
    /// out of BIGINT: a lifetime one, or a bounded one whose range it enters.
    #[inline]
    fn overflows(&self, plan: &Plan, i: u32, record: &Record, t: i64, f: Timestamp) -> bool {
        let Some(&(c, ty)) = plan.lanes.first() else { return false };
        let Some(v) = Cell::of(&record.values[c], ty).as_int() else { return false };
        let in_range = self.d.is_some_and(|d| t > f.0.saturating_sub(d));
        self.sum_aggs.iter().any(|&(k, lifetime)| {
            (lifetime || in_range)
                && !plan.measures[self.agg_measures[k]].func.sum_fits([self.aggs.at(i as usize, k)], &Value::Long(v))
        })
    }

    fn free_if_empty(&mut self, plan: &Plan, i: u32) {
        if plan.lifetime.is_empty() && self.slots[i as usize].in_range == 0 {
            self.remove(i);
        }
    }

    /// The earliest instant a record leaves, if any.
    #[inline]
    pub(super) fn next_leave(&self) -> Option<i64> {
        let oldest = match (self.log.front(), self.late.peek()) {
            (Some(a), Some(Reverse(b))) => a.t.min(b.t),
            (a, b) => a.map(|e| e.t).or(b.map(|Reverse(e)| e.t))?,
        };
        Some(oldest.saturating_add(self.d?))
    }

    /// The record that leaves next, taken out.
    #[inline]
    fn pop_next(&mut self) -> Option<Entry> {
        let from_late = match (self.log.front(), self.late.peek()) {
            (Some(a), Some(Reverse(b))) => b < a,
            (None, Some(_)) => true,
            _ => false,
        };
        if from_late { self.late.pop().map(|Reverse(e)| e) } else { self.log.pop_front() }
    }

    /// The frontier moves to `f`: every record with `t + d <= f` leaves its range, instant by
    /// instant; at each instant, each key that lost records emits its row, in slot order (as the
    /// general layout's timers fire them), and is freed if nothing is left in it.
    pub(super) fn advance(&mut self, plan: &Plan, f: Timestamp, out: &mut Output) {
        let Some(d) = self.d else { return };
        while let Some(at) = self.next_leave().filter(|&at| at <= f.0) {
            let limit = at.saturating_sub(d);
            while self.next_leave() == Some(at) {
                let Some(e) = self.pop_next() else { break };
                let i = e.slot as usize;
                for (b, &mi) in plan.bounded.iter().enumerate() {
                    match self.bounded_places[b] {
                        Place::Agg(k) => fold(&plan.measures[mi], self.aggs.at_mut(i, k), &e.cell, -1),
                        Place::Deque(k, _) => {
                            let dq = self.deques.at_mut(i, k);
                            while dq.front().is_some_and(|(t, _)| *t <= limit) {
                                dq.pop_front();
                            }
                        }
                    }
                }
                let s = &mut self.slots[i];
                s.in_range -= 1;
                if s.left_at != at {
                    s.left_at = at;
                    self.leaving.push(e.slot);
                }
            }
            let mut leaving = std::mem::take(&mut self.leaving);
            leaving.sort_unstable();
            for &i in &leaving {
                let row =
                    self.row(plan, i, Timestamp(at), out.row_buffer(self.columns.len() + 1 + plan.measures.len()));
                out.rows.push(row);
                self.free_if_empty(plan, i);
            }
            leaving.clear();
            self.leaving = leaving;
        }
    }

    /// The row of key `i` at `frontier`: key, frontier, measures in order, in `row` (empty).
    fn row(&self, plan: &Plan, i: u32, frontier: Timestamp, mut row: Row) -> Row {
        let s = &self.slots[i as usize];
        if !self.columns.is_empty() {
            row.push(s.first.clone());
            row.extend(s.rest.iter().cloned());
        }
        row.push(Value::Timestamp(frontier));
        let slot = i as usize;
        for (m, place) in plan.measures.iter().zip(self.places.iter()) {
            row.push(match *place {
                Place::Agg(k) => finish(m, self.aggs.at(slot, k)),
                Place::Deque(k, _) => {
                    self.deques.at(slot, k).front().map_or(Value::Null, |(_, c)| c.value(m.ty).into_owned())
                }
            });
        }
        row
    }

    /// The keys in the general layout, in the same slots (free slots too): records in range as
    /// visible records (none pending), range states rebuilt from them, lifetime states copied,
    /// each key's next instant set (the caller rebuilds the timers from them).
    pub(super) fn to_general(&self, plan: &Plan) -> Keys {
        let lanes = plan.lanes.len();
        let mut records: Vec<Vec<(i64, Cell)>> = (0..self.slots.len()).map(|_| Vec::new()).collect();
        for e in self.log.iter().chain(self.late.iter().map(|Reverse(e)| e)) {
            records[e.slot as usize].push((e.t, e.cell.clone()));
        }
        let mut slots = Vec::with_capacity(self.slots.len());
        for (i, (s, mut recs)) in self.slots.iter().zip(records).enumerate() {
            if !s.live {
                slots.push(None);
                continue;
            }
            // (Stable: arrival order among equal times, for the records of the log.)
            recs.sort_by_key(|&(t, _)| t);
            let mut visible = Records::new(lanes);
            for (t, cell) in recs {
                visible.insert(t, std::iter::repeat_n(cell, lanes));
            }
            let key: Box<[Value]> = if self.columns.is_empty() {
                Box::default()
            } else {
                std::iter::once(s.first.clone()).chain(s.rest.iter().cloned()).collect()
            };
            let mut st: KeyState = plan.key_with(key, s.hash, Records::new(lanes), visible);
            for (l, &k) in self.lifetime_aggs.iter().enumerate() {
                st.lifetime[l] = self.aggs.at(i, k).clone();
            }
            plan.rebuild_ranges(&mut st);
            st.timer = plan.next_event(&st).0;
            slots.push(Some(st));
        }
        Keys::from_slots(slots, self.free.clone())
    }
}
