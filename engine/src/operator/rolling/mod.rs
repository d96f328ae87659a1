//! The rolling window (`query.type = "rolling_window"`): the semantics of Databricks'
//! `rollingWindow` (DBR 19) as SEMANTICS.md "Rolling window" makes them precise.
//!
//! - Frontier `F = processing time - frontier delay`. A record becomes *visible* when
//!   `F >= event time`; until then it is *pending*.
//! - A bounded measure (`over = d`) aggregates the visible records of the key with event time in
//!   `(F - d, F]`; a lifetime measure every visible record since the start.
//! - One copy of each record serves every measure: records are kept per key in event-time order
//!   while some bounded range may still hold them; each bounded measure keeps a cursor below
//!   which records have left its range.
//! - Emission (update mode): real-time: one row per key per instant at which its measured set
//!   changes (a record arrives visible; a pending record becomes visible at `F = t`; a record leaves
//!   a range at exactly `F = t + d`), the row's frontier being that instant; micro-batch: one row
//!   per changed key at the end of the batch, with the batch's frontier.
//! - A key with no pending record, every bounded range empty and no lifetime measure emits its
//!   last row (count 0, other measures null) and is freed.
//! - Late records (event time <= W, with a watermark on `order_by`) are dropped from every
//!   measure.
//!
//! Min, max and percentiles over a bounded range use an ordered multiset
//! ([`ordered::OrderedMultiset`]); count, sum, avg and the variance family retract; distinct
//! counts over a bounded range are exact (a value -> multiplicity map).

pub mod ordered;

use hashbrown::HashMap;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use std::ops::Bound;

use self::ordered::OrderedMultiset;
use super::window_aggregate::measure_input;
use super::{BatchContext, Mode, Operator, Output, StateError};
use crate::aggregate::{AggKind, AggState, AggregateFn};
use crate::time::{Duration, Timestamp};
use crate::value::{GroupKey, KeyValue, Record, Row, Value};
use crate::watermark::WatermarkTracker;

/// One measure of a rolling window.
#[derive(Clone, Debug)]
pub struct RollingMeasure {
    /// The aggregate.
    pub func: AggregateFn,
    /// The range `d` of a bounded measure; `None` for a lifetime measure.
    pub over: Option<Duration>,
}

/// Configuration of a [`RollingWindow`].
#[derive(Clone, Debug)]
pub struct RollingWindowConfig {
    /// Execution mode.
    pub mode: Mode,
    /// Indexes of the `partition_by` columns.
    pub key_columns: Vec<usize>,
    /// Index of the `order_by` (event time) column.
    pub order_by: usize,
    /// Frontier delay (>= 0).
    pub frontier_delay: Duration,
    /// Measures in output order.
    pub measures: Vec<RollingMeasure>,
    /// Watermark on `order_by`: its delay (the column is `order_by`'s, or another TIMESTAMP).
    pub watermark: Option<(usize, Duration)>,
}

/// Identifies a record inside a key: event time, then arrival sequence (ties keep order).
type Slot = (Timestamp, u64);

/// The state of a bounded measure.
#[derive(Debug)]
enum RangeState {
    /// A retractable aggregate (count, sum, avg, variance family, user functions with retract).
    Retract(AggState),
    /// Min, max, percentiles: the values in range, ordered.
    Ordered(OrderedMultiset),
    /// Distinct count: value -> multiplicity.
    Distinct(HashMap<KeyValue, u32>),
}

#[derive(Debug)]
struct KeyState {
    key: GroupKey,
    /// Records not yet visible: slot -> one input value per measure.
    pending: BTreeMap<Slot, Box<[Value]>>,
    /// Visible records that some bounded range may still hold.
    visible: BTreeMap<Slot, Box<[Value]>>,
    /// Per bounded measure (same order as `bounded`): records <= cursor have left its range.
    cursors: Vec<Slot>,
    ranges: Vec<RangeState>,
    lifetime: Vec<AggState>,
    /// The instant at which this key is registered in the timer set.
    timer: Option<Timestamp>,
}

/// The rolling-window operator (see the module documentation).
#[derive(Debug)]
pub struct RollingWindow {
    cfg: RollingWindowConfig,
    /// Indexes (into `cfg.measures`) of bounded and lifetime measures.
    bounded: Vec<usize>,
    lifetime: Vec<usize>,
    max_range: Duration,
    keys: HashMap<GroupKey, u64>,
    slab: HashMap<u64, KeyState>,
    next_id: u64,
    seq: u64,
    timers: BTreeSet<(Timestamp, u64)>,
    /// The current frontier (F); starts below every instant.
    frontier: Timestamp,
    tracker: Option<WatermarkTracker>,
    watermark: Timestamp,
    batch: Option<BatchContext>,
    /// Keys changed in the current batch (micro-batch).
    dirty: BTreeSet<u64>,
}

impl RollingWindow {
    /// A new, empty operator.
    pub fn new(cfg: RollingWindowConfig) -> RollingWindow {
        let bounded: Vec<usize> = (0..cfg.measures.len()).filter(|&i| cfg.measures[i].over.is_some()).collect();
        let lifetime: Vec<usize> = (0..cfg.measures.len()).filter(|&i| cfg.measures[i].over.is_none()).collect();
        let max_range = bounded.iter().filter_map(|&i| cfg.measures[i].over).max().unwrap_or(Duration::ZERO);
        let tracker = cfg.watermark.map(|(_, d)| WatermarkTracker::new(d));
        RollingWindow {
            cfg,
            bounded,
            lifetime,
            max_range,
            keys: HashMap::new(),
            slab: HashMap::new(),
            next_id: 0,
            seq: 0,
            timers: BTreeSet::new(),
            frontier: Timestamp::MIN,
            tracker,
            watermark: Timestamp::MIN,
            batch: None,
            dirty: BTreeSet::new(),
        }
    }

    /// The current frontier.
    pub fn frontier(&self) -> Timestamp {
        self.frontier
    }

    fn new_range_state(f: &AggregateFn) -> RangeState {
        match f.kind {
            AggKind::Min | AggKind::Max | AggKind::ApproxPercentile { .. } => {
                RangeState::Ordered(OrderedMultiset::default())
            }
            AggKind::ApproxCountDistinct { .. } => RangeState::Distinct(HashMap::new()),
            _ => RangeState::Retract(f.new_state()),
        }
    }

    fn key_id(&mut self, key: GroupKey) -> u64 {
        if let Some(&id) = self.keys.get(&key) {
            return id;
        }
        let id = self.next_id;
        self.next_id += 1;
        let ranges = self.bounded.iter().map(|&i| Self::new_range_state(&self.cfg.measures[i].func)).collect();
        let lifetime = self.lifetime.iter().map(|&i| self.cfg.measures[i].func.new_state()).collect();
        let st = KeyState {
            key: key.clone(),
            pending: BTreeMap::new(),
            visible: BTreeMap::new(),
            cursors: vec![(Timestamp::MIN, 0); self.bounded.len()],
            ranges,
            lifetime,
            timer: None,
        };
        self.keys.insert(key, id);
        self.slab.insert(id, st);
        id
    }

    /// Adds a record's values to a range state; `false` if nothing changed.
    fn range_add(f: &AggregateFn, st: &mut RangeState, v: &Value) -> bool {
        match st {
            RangeState::Retract(s) => {
                f.update(s, v);
                true
            }
            _ if v.is_null() => false,
            RangeState::Ordered(m) => {
                m.insert(v.clone());
                true
            }
            RangeState::Distinct(m) => {
                *m.entry(KeyValue(v.clone())).or_insert(0) += 1;
                true
            }
        }
    }

    fn range_remove(f: &AggregateFn, st: &mut RangeState, v: &Value) {
        match st {
            RangeState::Retract(s) => {
                // Only retractable functions get a Retract state (see new_range_state).
                f.retract(s, v);
            }
            _ if v.is_null() => {}
            RangeState::Ordered(m) => {
                m.remove(v);
            }
            RangeState::Distinct(m) => {
                let k = KeyValue(v.clone());
                if let Some(c) = m.get_mut(&k) {
                    *c -= 1;
                    if *c == 0 {
                        m.remove(&k);
                    }
                }
            }
        }
    }

    fn range_finish(f: &AggregateFn, st: &RangeState) -> Value {
        match st {
            RangeState::Retract(s) => f.finish(s),
            RangeState::Ordered(m) => match &f.kind {
                AggKind::Min => m.min().cloned().unwrap_or(Value::Null),
                AggKind::Max => m.max().cloned().unwrap_or(Value::Null),
                AggKind::ApproxPercentile { percentages, list, .. } => {
                    if m.is_empty() {
                        Value::Null
                    } else if *list {
                        Value::List(
                            percentages.iter().map(|p| m.percentile(*p).cloned().unwrap_or(Value::Null)).collect(),
                        )
                    } else {
                        m.percentile(percentages.first().copied().unwrap_or(0.5)).cloned().unwrap_or(Value::Null)
                    }
                }
                _ => Value::Null,
            },
            RangeState::Distinct(m) => Value::Long(m.len() as i64),
        }
    }

    /// Brings key `id` to frontier `x`: records leave ranges whose lower bound passed them,
    /// pending records with event time <= x become visible. Returns whether the measured set
    /// changed.
    fn settle(&mut self, id: u64, x: Timestamp) -> bool {
        let Some(st) = self.slab.get_mut(&id) else { return false };
        let mut changed = false;
        // 1. Expire: for each bounded measure, records with t <= x - d leave.
        for (bi, &mi) in self.bounded.iter().enumerate() {
            let m = &self.cfg.measures[mi];
            let d = m.over.unwrap_or(Duration::ZERO);
            let upto: Slot = (x.saturating_sub(d), u64::MAX);
            if st.cursors[bi] >= upto {
                continue;
            }
            let from = st.cursors[bi];
            for (_, vals) in st.visible.range((Bound::Excluded(from), Bound::Included(upto))) {
                Self::range_remove(&m.func, &mut st.ranges[bi], &vals[mi]);
                changed = true;
            }
            st.cursors[bi] = upto;
        }
        // 2. Pending records with t <= x become visible.
        while let Some(entry) = st.pending.first_entry() {
            if entry.key().0 > x {
                break;
            }
            let (slot, vals) = entry.remove_entry();
            for (li, &mi) in self.lifetime.iter().enumerate() {
                let f = &self.cfg.measures[mi].func;
                f.update(&mut st.lifetime[li], &vals[mi]);
                changed = true;
            }
            let mut in_some_range = false;
            for (bi, &mi) in self.bounded.iter().enumerate() {
                if slot > st.cursors[bi] {
                    Self::range_add(&self.cfg.measures[mi].func, &mut st.ranges[bi], &vals[mi]);
                    changed = true;
                    in_some_range = true;
                }
            }
            if in_some_range {
                st.visible.insert(slot, vals);
            }
        }
        // 3. Forget records below every range.
        let floor: Slot = (x.saturating_sub(self.max_range), u64::MAX);
        while let Some(entry) = st.visible.first_entry() {
            if *entry.key() > floor {
                break;
            }
            entry.remove();
        }
        changed
    }

    /// The next instant at which key `id` changes by itself (visibility or expiry).
    fn next_event(&self, id: u64) -> Option<Timestamp> {
        let st = self.slab.get(&id)?;
        let mut next = st.pending.keys().next().map(|s| s.0);
        for (bi, &mi) in self.bounded.iter().enumerate() {
            let d = self.cfg.measures[mi].over.unwrap_or(Duration::ZERO);
            if let Some((slot, _)) = st.visible.range((Bound::Excluded(st.cursors[bi]), Bound::Unbounded)).next() {
                let at = slot.0.saturating_add(d);
                next = Some(next.map_or(at, |n: Timestamp| n.min(at)));
            }
        }
        next
    }

    fn reschedule(&mut self, id: u64) {
        let next = self.next_event(id);
        let Some(st) = self.slab.get_mut(&id) else { return };
        if st.timer == next {
            return;
        }
        if let Some(old) = st.timer {
            self.timers.remove(&(old, id));
        }
        st.timer = next;
        if let Some(n) = next {
            self.timers.insert((n, id));
        }
    }

    fn row(&self, id: u64, frontier: Timestamp) -> Row {
        let st = &self.slab[&id];
        let mut row: Row = Vec::with_capacity(st.key.0.len() + 1 + self.cfg.measures.len());
        row.extend(st.key.values().cloned());
        row.push(Value::Timestamp(frontier));
        let mut b = 0;
        let mut l = 0;
        for m in &self.cfg.measures {
            if m.over.is_some() {
                row.push(Self::range_finish(&m.func, &st.ranges[b]));
                b += 1;
            } else {
                row.push(m.func.finish(&st.lifetime[l]));
                l += 1;
            }
        }
        row
    }

    /// Emits key `id`'s row at `frontier` and frees the key if nothing is left in it.
    fn emit(&mut self, id: u64, frontier: Timestamp, out: &mut Output) {
        out.rows.push(self.row(id, frontier));
        self.free_if_empty(id);
    }

    fn free_if_empty(&mut self, id: u64) {
        let empty = match self.slab.get(&id) {
            Some(st) => self.lifetime.is_empty() && st.pending.is_empty() && st.visible.is_empty(),
            None => false,
        };
        if empty && let Some(st) = self.slab.remove(&id) {
            if let Some(t) = st.timer {
                self.timers.remove(&(t, id));
            }
            self.keys.remove(&st.key);
        }
    }

    /// Fires every timer due at or before frontier `f`: real-time emits a row per key and
    /// instant; micro-batch settles keys at `f` and marks them dirty.
    fn run_timers(&mut self, f: Timestamp, out: &mut Output) {
        while let Some(&(at, id)) = self.timers.first() {
            if at > f {
                break;
            }
            self.timers.remove(&(at, id));
            if let Some(st) = self.slab.get_mut(&id) {
                st.timer = None;
            }
            match self.cfg.mode {
                Mode::RealTime => {
                    if self.settle(id, at) {
                        self.emit(id, at, out);
                    }
                }
                Mode::MicroBatch => {
                    if self.settle(id, f) {
                        self.dirty.insert(id);
                    }
                }
            }
            self.reschedule(id);
        }
    }

    fn take_record(&mut self, record: &Record, late_w: Timestamp) -> Option<(u64, Timestamp)> {
        let t = record.values[self.cfg.order_by].as_timestamp()?;
        let late = match self.cfg.watermark {
            Some((c, _)) => record.values[c].as_timestamp().is_some_and(|et| et <= late_w),
            None => false,
        };
        if late {
            return None;
        }
        let vals: Box<[Value]> = self.cfg.measures.iter().map(|m| measure_input(&m.func, record).clone()).collect();
        let id = self.key_id(GroupKey::of(record, &self.cfg.key_columns));
        self.seq += 1;
        let slot = (t, self.seq);
        if let Some(st) = self.slab.get_mut(&id) {
            st.pending.insert(slot, vals);
        }
        Some((id, t))
    }
}

#[derive(Serialize, Deserialize)]
struct Snapshot {
    /// Per key: key, pending records, visible records, cursors, lifetime states.
    keys: Vec<KeySnapshot>,
    seq: u64,
    frontier: Timestamp,
    tracker: Option<WatermarkTracker>,
    watermark: Timestamp,
}

#[derive(Serialize, Deserialize)]
struct KeySnapshot {
    key: GroupKey,
    pending: Vec<(Slot, Box<[Value]>)>,
    visible: Vec<(Slot, Box<[Value]>)>,
    cursors: Vec<Slot>,
    lifetime: Vec<Vec<u8>>,
}

impl Operator for RollingWindow {
    fn begin_batch(&mut self, ctx: &BatchContext) {
        self.batch = Some(*ctx);
    }

    fn on_record(&mut self, record: &Record, watermark: Timestamp, out: &mut Output) {
        let late_w = match self.cfg.mode {
            Mode::MicroBatch => self.batch.map_or(Timestamp::MIN, |b| b.watermarks.late),
            Mode::RealTime => {
                self.watermark = self.watermark.max(watermark);
                self.watermark
            }
        };
        let event_time = self.cfg.watermark.and_then(|(c, _)| record.values[c].as_timestamp());
        let Some((id, t)) = self.take_record(record, late_w) else {
            if record.values[self.cfg.order_by].as_timestamp().is_some() {
                out.late.push(record.clone());
            }
            return;
        };
        if let (Some(tr), Some(et)) = (self.tracker.as_mut(), event_time) {
            tr.observe(et);
            if self.cfg.mode == Mode::RealTime {
                self.watermark = self.watermark.max(tr.current());
            }
        }
        if self.cfg.mode == Mode::RealTime && t <= self.frontier {
            let f = self.frontier;
            if self.settle(id, f) {
                self.emit(id, f, out);
            }
        }
        self.reschedule(id);
        self.free_if_empty(id);
    }

    fn end_batch(&mut self, out: &mut Output) {
        let Some(b) = self.batch.take() else { return };
        let f = b.processing_time.saturating_sub(self.cfg.frontier_delay);
        if f > self.frontier {
            self.frontier = f;
        }
        let f = self.frontier;
        self.run_timers(f, out);
        let dirty = std::mem::take(&mut self.dirty);
        for id in dirty {
            if self.slab.contains_key(&id) {
                self.emit(id, f, out);
            }
        }
    }

    fn advance_watermark(&mut self, w: Timestamp, _out: &mut Output) {
        self.watermark = self.watermark.max(w);
    }

    fn advance_clock(&mut self, now: Timestamp, out: &mut Output) {
        let f = now.saturating_sub(self.cfg.frontier_delay);
        if f <= self.frontier {
            return;
        }
        self.run_timers(f, out);
        self.frontier = f;
    }

    fn next_timer(&self) -> Option<Timestamp> {
        self.timers.first().map(|(at, _)| at.saturating_add(self.cfg.frontier_delay))
    }

    fn wants_no_data_batch(&self, _evicted_with: Timestamp, _next: Timestamp) -> bool {
        false
    }

    fn state_len(&self) -> usize {
        self.slab.len()
    }

    fn snapshot(&self) -> Vec<u8> {
        let mut ids: Vec<&u64> = self.slab.keys().collect();
        ids.sort();
        let keys = ids
            .into_iter()
            .map(|id| {
                let st = &self.slab[id];
                KeySnapshot {
                    key: st.key.clone(),
                    pending: st.pending.iter().map(|(s, v)| (*s, v.clone())).collect(),
                    visible: st.visible.iter().map(|(s, v)| (*s, v.clone())).collect(),
                    cursors: st.cursors.clone(),
                    lifetime: st.lifetime.iter().map(|a| a.to_bytes()).collect(),
                }
            })
            .collect();
        let snap =
            Snapshot { keys, seq: self.seq, frontier: self.frontier, tracker: self.tracker, watermark: self.watermark };
        // Serialising plain data to a Vec cannot fail.
        serde_json::to_vec(&snap).unwrap_or_default()
    }

    fn restore(&mut self, bytes: &[u8]) -> Result<(), StateError> {
        let corrupt = |why: String| StateError::Corrupt { operator: "rolling_window", why };
        let snap: Snapshot = serde_json::from_slice(bytes).map_err(|e| corrupt(e.to_string()))?;
        for ks in snap.keys {
            if ks.cursors.len() != self.bounded.len() || ks.lifetime.len() != self.lifetime.len() {
                return Err(corrupt("measures differ from the query's".into()));
            }
            let id = self.key_id(ks.key);
            let lifetime = self
                .lifetime
                .iter()
                .zip(&ks.lifetime)
                .map(|(&mi, b)| self.cfg.measures[mi].func.state_from_bytes(b).map_err(|e| corrupt(e.to_string())))
                .collect::<Result<Vec<_>, _>>()?;
            let bounded = self.bounded.clone();
            let measures = self.cfg.measures.clone();
            let st = self.slab.get_mut(&id).ok_or_else(|| corrupt("key vanished".into()))?;
            st.lifetime = lifetime;
            st.cursors = ks.cursors;
            st.pending = ks.pending.into_iter().collect();
            st.visible = ks.visible.into_iter().collect();
            // Rebuild the range states from the visible records above each cursor.
            for (bi, &mi) in bounded.iter().enumerate() {
                let f = &measures[mi].func;
                for (_, vals) in st.visible.range((Bound::Excluded(st.cursors[bi]), Bound::Unbounded)) {
                    Self::range_add(f, &mut st.ranges[bi], &vals[mi]);
                }
            }
            self.reschedule(id);
        }
        self.seq = self.seq.max(snap.seq);
        self.frontier = self.frontier.max(snap.frontier);
        super::merge_trackers(&mut self.tracker, snap.tracker);
        self.watermark = self.watermark.max(snap.watermark);
        Ok(())
    }

    fn retain_groups(&mut self, keep: &mut dyn FnMut(&GroupKey) -> bool) {
        let drop: Vec<u64> = self.keys.iter().filter(|(k, _)| !keep(k)).map(|(_, &id)| id).collect();
        for id in drop {
            if let Some(st) = self.slab.remove(&id) {
                if let Some(t) = st.timer {
                    self.timers.remove(&(t, id));
                }
                self.keys.remove(&st.key);
            }
            self.dirty.remove(&id);
        }
    }
}
