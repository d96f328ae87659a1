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
//! - Integer sums never wrap (SEMANTICS.md "Aggregate functions"): a record that would take a
//!   `sum` over INT / BIGINT out of BIGINT as it enters the key's measures (a lifetime sum, or a
//!   bounded one whose range it enters), checked when it becomes visible (on arrival or as the
//!   frontier passes it), enters no measure and goes to `out.rejected` with
//!   `ARITHMETIC_OVERFLOW in <measure>`, as in a window aggregate. A pending record is refused as
//!   the state keeps it (key, event time, measure inputs; other columns NULL). One case a check at
//!   entry cannot prevent: records leave a range in event-time order, not arrival order, so the
//!   remaining records' sum can fall outside BIGINT (-5, then `i64::MAX`, then 5; -5 leaves): it
//!   reads NULL there, as Spark's `try_sum`.
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
//! - the instant each key is next due is found with lazy deletion ([`timers`]): records that
//!   enter a range in event-time order queue their leave instants in a FIFO per range length,
//!   any other instant a key registers goes on a heap;
//! - rows are built only when emitted;
//! - snapshots are incremental ([`incremental`]): the cut at the barrier costs O(1), the keys are
//!   written a few at a time between records, and a key about to change is written first.
//!
//! Queries of the common live-feature shape in real-time mode (one range length; count, sum,
//! avg, variance, min and max; one input column) start in a compact layout instead
//! ([`compact`]: one log of the records in range, flat per-key states), and move to the layout
//! above for good at the first record or operation it does not take (a pending record, one out
//! of order within its key, a snapshot, a restore).

mod compact;
mod fifo;
mod incremental;
mod keys;
mod measure;
pub mod ordered;
mod plan;
mod records;
mod restore;
mod snapshot;
mod timers;

use self::compact::Compact;
use self::incremental::InProgress;
use self::keys::Keys;
use self::plan::{Plan, Refused};
use self::snapshot::Writer;
use self::timers::Timers;
use super::{BatchContext, Mode, Operator, Output, Rejected, StateError};
use crate::aggregate::AggregateFn;
use crate::time::{Duration, Timestamp};
use crate::value::{GroupKey, Record, Value};
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
    /// Whether the state may start in the compact layout (see the module documentation), when
    /// the query has its shape. `false` for a pipeline that checkpoints: the compact layout has
    /// no incremental snapshot of its own, so its first snapshot would move every key into the
    /// general layout at the barrier, a stall that grows with the state.
    pub compact: bool,
}

/// The rolling-window operator (see the module documentation).
#[derive(Debug)]
pub struct RollingWindow {
    cfg: RollingWindowConfig,
    plan: Plan,
    keys: Keys,
    timers: Timers,
    /// The current frontier (F); starts below every instant.
    frontier: Timestamp,
    tracker: Option<WatermarkTracker>,
    watermark: Timestamp,
    batch: Option<BatchContext>,
    /// Micro-batch: slots of the keys changed in the current batch.
    dirty: Vec<u32>,
    /// Generation of the last snapshot begun (0: none yet).
    snap_gen: u64,
    /// The incremental snapshot being written, if any.
    snap: Option<Box<InProgress>>,
    /// Bytes per key of the last incremental snapshot (0: none yet), to size the next buffer.
    snap_bytes_per_key: f64,
    /// A stored snapshot's buffer, for the next one ([`Operator::reuse_snapshot_buffer`]).
    snap_spare: Option<Vec<u8>>,
    /// The slots of the last records hinted by [`Operator::prefetch`].
    hints: Hints,
    /// The compact layout, while it holds the state (`keys` and `timers` are empty then).
    compact: Option<Box<Compact>>,
    /// Columns of the input records (the most seen; at least every column the query names), to
    /// rebuild a pending record refused as it becomes visible ([`RollingWindow::refused`]).
    width: usize,
}

/// The slots of the keys of the last [`HINTS`] records given to [`Operator::prefetch`], newest
/// last: a key's state is loaded in steps (slot, boxes, buffers), one step per few hints, each
/// step reading only what the previous one loaded. Hints change nothing observable, so a stale
/// slot (a key removed since) only loads memory in vain.
#[derive(Debug, Default)]
struct Hints {
    slots: std::cell::Cell<[Option<u32>; HINTS]>,
    next: std::cell::Cell<usize>,
}

/// Hints remembered: the prefetch distance the partition actor uses.
const HINTS: usize = crate::operator::PREFETCH_DISTANCE;

impl Hints {
    /// Records `slot` as the newest hint; returns the slots due for the second step (hinted
    /// half the distance ago) and the third (hinted the whole distance ago, so its record is
    /// next).
    #[inline]
    fn push(&self, slot: Option<u32>) -> (Option<u32>, Option<u32>) {
        let mut slots = self.slots.get();
        let at = self.next.get();
        slots[at] = slot;
        self.slots.set(slots);
        self.next.set((at + 1) % HINTS);
        (slots[(at + HINTS - HINTS / 2) % HINTS], slots[(at + 1) % HINTS])
    }
}

impl RollingWindow {
    /// With several sources (SEMANTICS.md "Several sources (union)"), the operator's watermark
    /// comes only from the one each record is stamped with (the sources' combined watermark),
    /// never from the event times of the records it sees: one source's records alone would move
    /// it past the others'.
    pub fn with_stamped_watermark(mut self) -> Self {
        self.tracker = None;
        self
    }

    /// A new, empty operator.
    pub fn new(cfg: RollingWindowConfig) -> RollingWindow {
        let tracker = cfg.watermark.map(|(_, d)| WatermarkTracker::new(d));
        let plan = Plan::new(&cfg);
        let compact = if cfg.compact && cfg.mode == Mode::RealTime {
            Compact::for_plan(&plan, &cfg.key_columns).map(Box::new)
        } else {
            None
        };
        let named = cfg.key_columns.iter().chain([&cfg.order_by]).chain(cfg.watermark.as_ref().map(|(c, _)| c));
        let width = named.chain(plan.lanes.iter().map(|(c, _)| c)).max().map_or(0, |c| c + 1);
        RollingWindow {
            width,
            compact,
            timers: Timers::new(plan.spans.len()),
            plan,
            cfg,
            keys: Keys::new(),
            frontier: Timestamp::MIN,
            tracker,
            watermark: Timestamp::MIN,
            batch: None,
            dirty: Vec::new(),
            snap_gen: 0,
            snap: None,
            snap_bytes_per_key: 0.0,
            snap_spare: None,
            hints: Hints::default(),
        }
    }

    /// The current frontier.
    pub fn frontier(&self) -> Timestamp {
        self.frontier
    }

    /// Whether the state is in the compact layout (see the module documentation): for tests
    /// and benchmarks that must know which layout they measure.
    pub fn is_compact(&self) -> bool {
        self.compact.is_some()
    }

    /// Moves the state from the compact layout into the general one, for good (nothing if it
    /// is there already). O(records in range).
    fn demote(&mut self) {
        if let Some(c) = self.compact.take() {
            self.keys = c.to_general(&self.plan);
            self.timers.rebuild(&self.keys);
        }
    }

    /// Brings key `slot` to frontier `x` ([`Plan::settle`]); the records refused on the way go
    /// to `out.rejected`.
    fn settle(&mut self, slot: u32, x: Timestamp, out: &mut Output) -> bool {
        self.before_change(slot);
        let Some(st) = self.keys.get_mut(slot) else { return false };
        let mut refused = Vec::new();
        let changed = self.plan.settle(st, x, &mut self.timers, slot, &mut refused);
        self.refused(slot, refused, out);
        changed
    }

    /// Pending records of key `slot` refused as they became visible, to `out.rejected`. The state
    /// keeps of a pending record only what the measures need, so the record is rebuilt from its
    /// `partition_by` values, its event time and its measures' inputs; its other columns read
    /// NULL.
    fn refused(&self, slot: u32, refused: Vec<Refused>, out: &mut Output) {
        let Some(st) = self.keys.get(slot) else { return };
        for r in refused {
            let mut values = vec![Value::Null; self.width];
            for (&c, v) in self.cfg.key_columns.iter().zip(st.key.iter()) {
                values[c] = v.clone();
            }
            for (&(c, ty), cell) in self.plan.lanes.iter().zip(r.cells.iter()) {
                values[c] = cell.value(ty).into_owned();
            }
            values[self.cfg.order_by] = Value::Timestamp(Timestamp(r.t));
            out.rejected.push(Rejected::overflow(&Record::new(values), &self.plan.measures[r.measure].func));
        }
    }

    fn reschedule(&mut self, slot: u32) {
        let Some(st) = self.keys.get_mut(slot) else { return };
        let (next, queued) = self.plan.next_event(st);
        if st.timer != next {
            st.timer = next;
            if let Some(at) = next
                && !queued
            {
                self.timers.push(at, slot);
            }
        }
    }

    /// Emits key `slot`'s row at `frontier` and frees the key if nothing is left in it.
    fn emit(&mut self, slot: u32, frontier: Timestamp, out: &mut Output) {
        if let Some(st) = self.keys.get(slot) {
            let row = out.row_buffer(st.key.len() + 1 + self.plan.measures.len());
            out.rows.push(self.plan.row(st, frontier, row));
        }
        self.free_if_empty(slot);
    }

    fn free_if_empty(&mut self, slot: u32) {
        let empty = self.keys.get(slot).is_some_and(|st| self.plan.is_empty(st));
        if empty {
            // Its timer entries, if any, are stale from now on.
            self.remove_key(slot);
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
                    if self.settle(slot, at, out) {
                        self.emit(slot, at, out);
                    } else {
                        self.free_if_empty(slot);
                    }
                }
                Mode::MicroBatch => {
                    if self.settle(slot, f, out) {
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
        let hash = self.keys.hash_record(record, cols);
        match self.keys.find(hash, record, cols) {
            Some(slot) => slot,
            None => {
                let key: Box<[Value]> = cols.iter().map(|&c| record.values[c].clone()).collect();
                let mut st = self.plan.new_key(key, hash);
                // Created after the barrier of any snapshot in progress: not part of it.
                st.snap_mark = self.snap_gen;
                self.keys.insert(st)
            }
        }
    }
}

impl Operator for RollingWindow {
    fn key_columns(&self) -> &[usize] {
        &self.cfg.key_columns
    }

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
        self.width = self.width.max(record.values.len());
        let f = self.frontier;
        let visible_now = self.cfg.mode == Mode::RealTime && t <= f;
        if let Some(c) = self.compact.as_deref_mut() {
            if visible_now {
                let hash = self.keys.hash_record(record, &self.cfg.key_columns);
                if c.arrive(&self.plan, hash, record, t.0, f, out).is_ok() {
                    return;
                }
            }
            self.demote();
        }
        let slot = self.slot_of(record);
        self.before_change(slot);
        let Some(st) = self.keys.get_mut(slot) else { return };
        let moved = if visible_now && st.pending.first_time().is_none_or(|p| p > f.0) {
            let (changed, moved, overflow) = self.plan.arrive(st, f, t.0, record, &mut self.timers, slot);
            if let Some(j) = overflow {
                out.rejected.push(Rejected::overflow(record, &self.plan.measures[j].func));
            }
            if changed {
                self.emit(slot, f, out);
            }
            moved
        } else {
            self.plan.pend(st, t.0, record);
            // Pending records due by `f` (only after a restore moved the frontier: the key's
            // timers fire before the frontier moves) are revealed first, this one among them.
            if visible_now && self.settle(slot, f, out) {
                self.emit(slot, f, out);
            }
            true
        };
        // Otherwise the key's timer is still its next instant.
        if moved {
            self.reschedule(slot);
        }
        self.free_if_empty(slot);
        // Entries turn stale only when a key's timer moves or the key is freed.
        if moved || self.keys.get(slot).is_none() {
            self.timers.clean(&self.keys);
        }
    }

    /// Prefetches the state of `record`'s key and of the keys due soonest (their timers fire
    /// as processing time moves on, between the records), in three steps, each reading what
    /// the one before loaded: the key's slot now, what it points to a few hints later, the
    /// buffers those point to just before the record comes (see `Hints`).
    #[inline]
    fn prefetch(&self, record: &Record) {
        let cols = &self.cfg.key_columns;
        if let Some(c) = self.compact.as_deref() {
            c.prefetch(self.keys.hash_record(record, cols));
            return;
        }
        let slot = self.keys.slot_hashed(self.keys.hash_record(record, cols));
        if let Some(i) = slot {
            self.keys.prefetch_slot(i);
        }
        let (boxes, leaves) = self.hints.push(slot);
        if let Some(i) = boxes {
            self.keys.prefetch_boxes(i);
        }
        if let Some(i) = leaves {
            self.keys.prefetch_leaves(i);
        }
        self.timers.prefetch(&self.keys);
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
        match self.compact.as_deref_mut() {
            Some(c) => c.advance(&self.plan, f, out),
            None => self.run_timers(f, out),
        }
        self.frontier = f;
    }

    fn next_timer(&self) -> Option<Timestamp> {
        let next = match self.compact.as_deref() {
            Some(c) => c.next_leave().map(Timestamp),
            None => self.timers.next(),
        };
        next.map(|at| at.saturating_add(self.cfg.frontier_delay))
    }

    fn wants_no_data_batch(&self, _evicted_with: Timestamp, _next: Timestamp) -> bool {
        false
    }

    fn state_len(&self) -> usize {
        self.compact.as_deref().map_or(self.keys.len(), Compact::len)
    }

    fn snapshot(&self) -> Vec<u8> {
        // The compact layout is written as the general one (the snapshot's format is one).
        let general;
        let keys = match self.compact.as_deref() {
            Some(c) => {
                general = c.to_general(&self.plan);
                &general
            }
            None => &self.keys,
        };
        let mut w = Writer::new(64 + 64 * keys.len());
        w.header(
            (self.plan.lanes.len(), self.plan.bounded.len(), self.plan.lifetime.len()),
            self.frontier,
            self.watermark,
            self.tracker.as_ref(),
            keys.len(),
        );
        for (_, st) in keys.live() {
            w.key(st);
        }
        w.finish()
    }

    fn begin_snapshot(&mut self) -> Option<Vec<u8>> {
        self.demote();
        self.begin_incremental();
        None
    }

    fn snapshot_step(&mut self, budget: usize) -> Option<Vec<u8>> {
        self.step_incremental(budget)
    }

    fn snapshot_in_progress(&self) -> bool {
        self.snap.is_some()
    }

    fn reuse_snapshot_buffer(&mut self, buffer: Vec<u8>) {
        // Keep the larger of two.
        if self.snap_spare.as_ref().is_none_or(|b| b.capacity() < buffer.capacity()) {
            self.snap_spare = Some(buffer);
        }
    }

    fn restore(&mut self, bytes: &[u8]) -> Result<(), StateError> {
        self.demote();
        self.restore_from(bytes, None)
    }

    fn restore_keeping(&mut self, bytes: &[u8], keep: &mut dyn FnMut(&GroupKey) -> bool) -> Result<(), StateError> {
        self.demote();
        self.restore_from(bytes, Some(keep))
    }

    fn retain_groups(&mut self, keep: &mut dyn FnMut(&GroupKey) -> bool) {
        self.demote();
        let drop: Vec<u32> = self.keys.live().filter(|(_, st)| !keep(&st.group_key())).map(|(i, _)| i).collect();
        for slot in drop {
            self.remove_key(slot);
        }
        self.timers.rebuild(&self.keys);
    }
}

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_overflow;
