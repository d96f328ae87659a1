//! The rolling window (`query.type = "rolling_window"`): the semantics of Databricks'
//! `rollingWindow` (DBR 19) as SEMANTICS.md "Rolling window" makes them precise.
//!
//! - Frontier `F = processing time - frontier delay`. A record becomes *visible* when
//!   `F >= event time`; until then it is *pending*.
//! - A bounded measure (`over = d`) aggregates the visible records of the key with event time in
//!   `(F - d, F]`; a lifetime measure every visible record since the start.
//! - Emission (update mode): real-time: one row per key per instant at which its measured set
//!   changes (a record arrives visible; a pending record becomes visible at `F = t`; a record leaves
//!   a range at exactly `F = t + d`), the row's frontier being that instant; micro-batch: one row
//!   per changed key at the end of the batch, with the batch's frontier.
//! - A key with no pending record, every bounded range empty and no lifetime measure emits its
//!   last row (count 0, other measures null) and is freed.
//! - Late records (event time <= W, with a watermark on `order_by`) are dropped from every
//!   measure.
//!
//! Layout (per record work is O(1) amortised in the common case):
//!
//! - keys are interned ([`keys`]): a hash table of slab indexes probed with the hash of the
//!   record's key columns, so no [`GroupKey`] is built per record;
//! - one copy of each record serves every measure ([`records`]): its event time and one compact
//!   cell per distinct input column, in per-key ring buffers sorted by event time, one for
//!   pending and one for visible records. Records become visible in frontier order, so they
//!   mostly enter at the back and leave each range at the front: each bounded measure keeps the
//!   index below which records have left its range, and the visible buffer keeps only what the
//!   longest range still holds (memory bounded by the records in range, never the history);
//! - measure states ([`measure`]): retraction for count / sum / avg / variance (compensated
//!   sums, no drift), a monotonic deque for min / max (an ordered multiset only while records
//!   entered out of event-time order), an ordered multiset for percentiles;
//! - the instant each key is next due sits in a heap with lazy deletion ([`timers`]);
//! - rows are built only when emitted.

mod keys;
mod measure;
pub mod ordered;
mod records;
mod snapshot;
mod timers;

use self::keys::{KeyState, Keys};
use self::measure::{Measure, Range, fold};
use self::records::{Cell, Records};
use self::snapshot::{MAGIC, Reader, Writer};
use self::timers::Timers;
use super::{BatchContext, Mode, Operator, Output, StateError};
use crate::aggregate::AggregateFn;
use crate::schema::DataType;
use crate::time::{Duration, Timestamp};
use crate::value::{GroupKey, Record, Row, Value};
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

/// The rolling-window operator (see the module documentation).
#[derive(Debug)]
pub struct RollingWindow {
    cfg: RollingWindowConfig,
    measures: Box<[Measure]>,
    /// Indexes (into `measures`) of bounded and lifetime measures.
    bounded: Box<[usize]>,
    lifetime: Box<[usize]>,
    /// Per lane: the record column and its type.
    lanes: Box<[(usize, DataType)]>,
    /// The longest bounded range (µs); `None` without bounded measures.
    max_range_us: Option<i64>,
    keys: Keys,
    timers: Timers,
    /// The current frontier (F); starts below every instant.
    frontier: Timestamp,
    tracker: Option<WatermarkTracker>,
    watermark: Timestamp,
    batch: Option<BatchContext>,
    /// Micro-batch: slots of the keys changed in the current batch.
    dirty: Vec<u32>,
}

impl RollingWindow {
    /// A new, empty operator.
    pub fn new(cfg: RollingWindowConfig) -> RollingWindow {
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
        let tracker = cfg.watermark.map(|(_, d)| WatermarkTracker::new(d));
        RollingWindow {
            cfg,
            measures,
            bounded,
            lifetime,
            lanes: lanes.into(),
            max_range_us,
            keys: Keys::new(),
            timers: Timers::default(),
            frontier: Timestamp::MIN,
            tracker,
            watermark: Timestamp::MIN,
            batch: None,
            dirty: Vec::new(),
        }
    }

    /// The current frontier.
    pub fn frontier(&self) -> Timestamp {
        self.frontier
    }

    /// An empty state for a key.
    fn new_key(&self, key: Box<[Value]>, hash: u64) -> KeyState {
        KeyState {
            key,
            hash,
            pending: Records::new(self.lanes.len()),
            visible: Records::new(self.lanes.len()),
            starts: vec![0; self.bounded.len()].into(),
            ranges: self.bounded.iter().map(|&i| Range::new(&self.measures[i])).collect(),
            lifetime: self.lifetime.iter().map(|&i| self.measures[i].func.new_state()).collect(),
            timer: None,
            dirty: false,
        }
    }

    /// Brings key `slot` to frontier `x`: records leave the ranges whose lower bound passed them,
    /// pending records with event time <= x become visible. Returns whether the measured set
    /// changed.
    fn settle(&mut self, slot: u32, x: Timestamp) -> bool {
        let Some(st) = self.keys.get_mut(slot) else { return false };
        let x = x.0;
        let mut changed = false;
        // 1. Expire: for each bounded measure, records with t <= x - d leave.
        for (b, &mi) in self.bounded.iter().enumerate() {
            let m = &self.measures[mi];
            let limit = x.saturating_sub(m.over_us.unwrap_or(0));
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
        // 2. Pending records with t <= x become visible.
        while let Some(t) = st.pending.first_time() {
            if t > x {
                break;
            }
            for (l, &mi) in self.lifetime.iter().enumerate() {
                let m = &self.measures[mi];
                fold(m, &mut st.lifetime[l], m.input(&st.pending, 0), 1);
                changed = true;
            }
            let in_some_range = self.max_range_us.is_some_and(|d| t > x.saturating_sub(d));
            if !in_some_range {
                st.pending.pop_first();
                continue;
            }
            let Some((_, p)) = st.pending.move_first(&mut st.visible) else { break };
            let newest = p + 1 == st.visible.len();
            for (b, &mi) in self.bounded.iter().enumerate() {
                let m = &self.measures[mi];
                if t > x.saturating_sub(m.over_us.unwrap_or(0)) {
                    st.ranges[b].add(m, &st.visible, st.starts[b], p, newest);
                    changed = true;
                } else {
                    // Out of this range already: it sits below the range's start (p <= start).
                    st.starts[b] += 1;
                }
            }
        }
        // 3. Forget records below every range.
        let below = st.starts.iter().copied().min().unwrap_or(0);
        if below > 0 {
            st.visible.drop_first(below);
            for s in st.starts.iter_mut() {
                *s -= below;
            }
        }
        changed
    }

    /// The next instant at which key `st` changes by itself (visibility or expiry).
    fn next_event(&self, st: &KeyState) -> Option<Timestamp> {
        let mut next = st.pending.first_time();
        for (b, &mi) in self.bounded.iter().enumerate() {
            if st.starts[b] < st.visible.len() {
                let at = st.visible.time(st.starts[b]).saturating_add(self.measures[mi].over_us.unwrap_or(0));
                next = Some(next.map_or(at, |n| n.min(at)));
            }
        }
        next.map(Timestamp)
    }

    fn reschedule(&mut self, slot: u32) {
        let Some(st) = self.keys.get(slot) else { return };
        let next = self.next_event(st);
        if st.timer == next {
            return;
        }
        if let Some(st) = self.keys.get_mut(slot) {
            st.timer = next;
        }
        if let Some(at) = next {
            self.timers.push(at, slot);
        }
    }

    fn row(&self, st: &KeyState, frontier: Timestamp) -> Row {
        let mut row: Row = Vec::with_capacity(st.key.len() + 1 + self.measures.len());
        row.extend(st.key.iter().cloned());
        row.push(Value::Timestamp(frontier));
        let (mut b, mut l) = (0, 0);
        for m in self.measures.iter() {
            if m.over_us.is_some() {
                row.push(st.ranges[b].finish(m, &st.visible, st.starts[b]));
                b += 1;
            } else {
                row.push(m.func.finish(&st.lifetime[l]));
                l += 1;
            }
        }
        row
    }

    /// Emits key `slot`'s row at `frontier` and frees the key if nothing is left in it.
    fn emit(&mut self, slot: u32, frontier: Timestamp, out: &mut Output) {
        if let Some(st) = self.keys.get(slot) {
            out.rows.push(self.row(st, frontier));
        }
        self.free_if_empty(slot);
    }

    fn free_if_empty(&mut self, slot: u32) {
        let empty = self.keys.get(slot).is_some_and(|st| {
            self.lifetime.is_empty() && !st.dirty && st.pending.is_empty() && st.visible.is_empty()
        });
        if empty {
            // Its timer entries, if any, are stale from now on.
            self.keys.remove(slot);
        }
    }

    /// Fires every timer due at or before frontier `f`, in instant order: real-time emits a row
    /// per key and instant; micro-batch settles keys at `f` and marks them dirty.
    fn run_timers(&mut self, f: Timestamp, out: &mut Output) {
        while let Some((at, slot)) = self.timers.pop_due(f, &self.keys) {
            if let Some(st) = self.keys.get_mut(slot) {
                st.timer = None;
            }
            match self.cfg.mode {
                Mode::RealTime => {
                    if self.settle(slot, at) {
                        self.emit(slot, at, out);
                    } else {
                        self.free_if_empty(slot);
                    }
                }
                Mode::MicroBatch => {
                    if self.settle(slot, f) {
                        if let Some(st) = self.keys.get_mut(slot)
                            && !st.dirty
                        {
                            st.dirty = true;
                            self.dirty.push(slot);
                        }
                    } else {
                        self.free_if_empty(slot);
                    }
                }
            }
            self.reschedule(slot);
        }
        self.timers.clean(&self.keys);
    }

    /// The slot of the key of `record`, created if absent.
    #[inline]
    fn slot_of(&mut self, record: &Record) -> u32 {
        let cols = &self.cfg.key_columns;
        let hash = self.keys.hash(cols.iter().map(|&c| &record.values[c]));
        match self.keys.find(hash, record, cols) {
            Some(slot) => slot,
            None => {
                let key: Box<[Value]> = cols.iter().map(|&c| record.values[c].clone()).collect();
                let st = self.new_key(key, hash);
                self.keys.insert(st)
            }
        }
    }
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
        // A record without event time cannot be placed (the decoder rejects it before).
        let Some(t) = record.values[self.cfg.order_by].as_timestamp() else { return };
        let event_time = self.cfg.watermark.and_then(|(c, _)| record.values[c].as_timestamp());
        if event_time.is_some_and(|et| et <= late_w) {
            out.late.push(record.clone());
            return;
        }
        if let (Some(tr), Some(et)) = (self.tracker.as_mut(), event_time) {
            tr.observe(et);
            if self.cfg.mode == Mode::RealTime {
                self.watermark = self.watermark.max(tr.current());
            }
        }
        let slot = self.slot_of(record);
        if let Some(st) = self.keys.get_mut(slot) {
            st.pending.insert(t.0, self.lanes.iter().map(|&(c, ty)| Cell::of(&record.values[c], ty)));
        }
        if self.cfg.mode == Mode::RealTime && t <= self.frontier {
            let f = self.frontier;
            if self.settle(slot, f) {
                self.emit(slot, f, out);
            }
        }
        self.reschedule(slot);
        self.free_if_empty(slot);
        self.timers.clean(&self.keys);
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
        for &slot in &dirty {
            if let Some(st) = self.keys.get_mut(slot)
                && st.dirty
            {
                st.dirty = false;
                self.emit(slot, f, out);
            }
        }
        self.dirty = dirty;
        self.dirty.clear();
        self.timers.clean(&self.keys);
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
        self.timers.next().map(|at| at.saturating_add(self.cfg.frontier_delay))
    }

    fn wants_no_data_batch(&self, _evicted_with: Timestamp, _next: Timestamp) -> bool {
        false
    }

    fn state_len(&self) -> usize {
        self.keys.len()
    }

    fn snapshot(&self) -> Vec<u8> {
        let mut w = Writer { out: Vec::with_capacity(64 + 64 * self.keys.len()) };
        w.out.extend_from_slice(MAGIC);
        w.u32(self.lanes.len() as u32);
        w.u32(self.bounded.len() as u32);
        w.u32(self.lifetime.len() as u32);
        w.i64(self.frontier.0);
        w.i64(self.watermark.0);
        w.tracker(self.tracker.as_ref());
        w.u64(self.keys.len() as u64);
        for (_, st) in self.keys.live() {
            w.u32(st.key.len() as u32);
            for v in st.key.iter() {
                w.value(v);
            }
            w.records(&st.pending);
            w.records(&st.visible);
            for &s in st.starts.iter() {
                w.u64(s as u64);
            }
            for a in st.lifetime.iter() {
                w.bytes(&a.to_bytes());
            }
        }
        w.out
    }

    fn restore(&mut self, bytes: &[u8]) -> Result<(), StateError> {
        let corrupt = |why: String| StateError::Corrupt { operator: "rolling_window", why };
        let mut r = Reader { b: bytes };
        if r.take(MAGIC.len()).map_err(&corrupt)? != MAGIC {
            return Err(corrupt("not a rolling-window snapshot (bad magic)".into()));
        }
        let shape = (r.u32().map_err(&corrupt)?, r.u32().map_err(&corrupt)?, r.u32().map_err(&corrupt)?);
        if shape != (self.lanes.len() as u32, self.bounded.len() as u32, self.lifetime.len() as u32) {
            return Err(corrupt(format!(
                "measures differ from the query's: (input columns, bounded, lifetime) = {shape:?}, expected ({}, {}, {})",
                self.lanes.len(),
                self.bounded.len(),
                self.lifetime.len()
            )));
        }
        let frontier = Timestamp(r.i64().map_err(&corrupt)?);
        let watermark = Timestamp(r.i64().map_err(&corrupt)?);
        let tracker = r.tracker().map_err(&corrupt)?;
        let n = r.count(4).map_err(&corrupt)?;
        for _ in 0..n {
            let parts = r.u32().map_err(&corrupt)? as usize;
            if parts != self.cfg.key_columns.len() {
                return Err(corrupt(format!("a key of {parts} values, expected {}", self.cfg.key_columns.len())));
            }
            let key = (0..parts).map(|_| r.value(0)).collect::<Result<Box<[Value]>, _>>().map_err(&corrupt)?;
            let hash = self.keys.hash(key.iter());
            let mut st = self.new_key(key, hash);
            st.pending = r.records(self.lanes.len()).map_err(&corrupt)?;
            st.visible = r.records(self.lanes.len()).map_err(&corrupt)?;
            for b in 0..self.bounded.len() {
                let s = r.u64().map_err(&corrupt)? as usize;
                if s > st.visible.len() {
                    return Err(corrupt(format!("range start {s} past {} visible records", st.visible.len())));
                }
                st.starts[b] = s;
            }
            for l in 0..self.lifetime.len() {
                let b = r.bytes().map_err(&corrupt)?;
                let f = &self.measures[self.lifetime[l]].func;
                st.lifetime[l] = f.state_from_bytes(b).map_err(|e| corrupt(e.to_string()))?;
            }
            // Rebuild the range states from the visible records in each range, in time order.
            for (b, &mi) in self.bounded.iter().enumerate() {
                let m = &self.measures[mi];
                for i in st.starts[b]..st.visible.len() {
                    st.ranges[b].add(m, &st.visible, st.starts[b], i, true);
                }
            }
            // Groups of two snapshots are disjoint; should one repeat, the later one wins.
            if let Some(old) = self.keys.find_key(hash, &st.key) {
                self.keys.remove(old);
            }
            let slot = self.keys.insert(st);
            self.reschedule(slot);
        }
        if !r.b.is_empty() {
            return Err(corrupt(format!("{} bytes after the last key", r.b.len())));
        }
        self.frontier = self.frontier.max(frontier);
        super::merge_trackers(&mut self.tracker, tracker);
        self.watermark = self.watermark.max(watermark);
        self.timers.clean(&self.keys);
        Ok(())
    }

    fn retain_groups(&mut self, keep: &mut dyn FnMut(&GroupKey) -> bool) {
        let drop: Vec<u32> = self.keys.live().filter(|(_, st)| !keep(&st.group_key())).map(|(i, _)| i).collect();
        for slot in drop {
            self.keys.remove(slot);
        }
        self.timers.rebuild(&self.keys);
    }
}

#[cfg(test)]
mod tests;
