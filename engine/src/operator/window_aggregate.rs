//! Windowed aggregation (`query.type = "window_aggregate"`), SEMANTICS.md "Windowed aggregation":
//! tumbling and sliding windows (session windows live in `session.rs` and share this operator's
//! configuration), or no window at all (a grouped aggregation over the whole stream), in the
//! output modes `append`, `update` and `complete`.
//!
//! Late input, as Spark 4.3 (`StateStoreSaveExec`) does it in micro-batch mode:
//! - a record is dropped when its window's end <= the late-input watermark (the previous batch's),
//!   in `update` and `append` alike (the shared case `tumbling-append-late`: a record for a
//!   window that the current batch finalises still counts in it).
//! - `update`: changed windows are emitted at the end of the batch, then windows with end <= the
//!   eviction watermark are evicted (without another row).
//! - `append`: windows with end <= the eviction watermark are emitted once and evicted.
//! - `complete`: nothing is late and nothing is evicted; every window is emitted every batch.
//!
//! In real-time mode a record is late when its window's end <= W as it stood when it arrived;
//! `update` emits the record's changed windows at once, `append` emits each window as soon as W
//! passes its end (an extension beyond Spark, SEMANTICS.md).
//!
//! Without a window, a watermark only matters when its column is one of the `group_by` columns
//! (the key's timestamp then plays the role of a window end), as in Spark.

use hashbrown::HashMap;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

use super::session::{SessionGap, SessionState};
use super::{BatchContext, Mode, Operator, Output, StateError, merge_trackers};
use crate::aggregate::{AggState, AggregateFn};
use crate::time::{Duration, Timestamp};
use crate::value::{GroupKey, Record, Row, Value};
use crate::watermark::WatermarkTracker;
use crate::window::{SlidingWindows, Window};

/// Output modes (Spark's).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum OutputMode {
    /// Each window once, when the watermark passes its end.
    Append,
    /// Every changed window, each batch (micro-batch) or each record (real-time).
    Update,
    /// The whole result every batch (micro-batch only).
    Complete,
}

/// The window of a window aggregate.
#[derive(Clone, Debug, PartialEq)]
pub enum WindowKind {
    /// No window: a grouped aggregation over the whole stream.
    None,
    /// Tumbling or sliding windows over the TIMESTAMP column at `column`.
    Fixed {
        /// Event-time column index.
        column: usize,
        /// The windows.
        windows: SlidingWindows,
    },
    /// Session windows over the TIMESTAMP column at `column`.
    Session {
        /// Event-time column index.
        column: usize,
        /// The gap: fixed, or read per record.
        gap: SessionGap,
    },
}

/// Configuration of a [`WindowAggregate`], compiled from the pipeline (column indexes resolved).
#[derive(Clone, Debug)]
pub struct WindowAggregateConfig {
    /// Execution mode.
    pub mode: Mode,
    /// Indexes of the `group_by` columns, in order.
    pub key_columns: Vec<usize>,
    /// The window.
    pub window: WindowKind,
    /// The output mode.
    pub output_mode: OutputMode,
    /// The measures, in output order.
    pub measures: Vec<AggregateFn>,
    /// The watermark: event-time column index and delay.
    pub watermark: Option<(usize, Duration)>,
}

static COUNT_STAR_INPUT: Value = Value::Bool(true);

/// The input value of a measure in a record (`count(*)` sees a non-null placeholder).
pub(crate) fn measure_input<'a>(f: &AggregateFn, record: &'a Record) -> &'a Value {
    match f.input {
        Some(i) => &record.values[i],
        None => &COUNT_STAR_INPUT,
    }
}

/// State key: the window (if any) and the group.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
struct StateKey {
    window: Option<Window>,
    group: GroupKey,
}

#[derive(Debug)]
struct Entry {
    aggs: Vec<AggState>,
    /// Changed since the last emitted row (update mode).
    dirty: bool,
}

/// The window-aggregate operator (see the module documentation).
#[derive(Debug)]
pub struct WindowAggregate {
    cfg: WindowAggregateConfig,
    /// Position of the watermark column among the key columns (no-window aggregation).
    time_key: Option<usize>,
    state: HashMap<StateKey, Entry>,
    /// Keys by the instant at which the watermark finalises them (window end / key time).
    by_expiry: BTreeMap<Timestamp, Vec<StateKey>>,
    /// Keys changed in this batch (update mode).
    changed: Vec<StateKey>,
    sessions: SessionState,
    tracker: Option<WatermarkTracker>,
    batch: Option<BatchContext>,
    /// Real-time watermark (the operator's own view).
    watermark: Timestamp,
}

impl WindowAggregate {
    /// A new, empty operator.
    pub fn new(cfg: WindowAggregateConfig) -> WindowAggregate {
        let time_key = match (&cfg.window, cfg.watermark) {
            (WindowKind::None, Some((wcol, _))) => cfg.key_columns.iter().position(|&c| c == wcol),
            _ => None,
        };
        let tracker = cfg.watermark.map(|(_, d)| WatermarkTracker::new(d));
        let sessions = SessionState::default();
        WindowAggregate {
            cfg,
            time_key,
            state: HashMap::new(),
            by_expiry: BTreeMap::new(),
            changed: Vec::new(),
            sessions,
            tracker,
            batch: None,
            watermark: Timestamp::MIN,
        }
    }

    /// The configuration.
    pub fn config(&self) -> &WindowAggregateConfig {
        &self.cfg
    }

    fn is_session(&self) -> bool {
        matches!(self.cfg.window, WindowKind::Session { .. })
    }

    /// The watermark against which input is judged late, and whether lateness applies at all.
    fn late_watermark(&self) -> Option<Timestamp> {
        self.cfg.watermark?;
        match self.cfg.mode {
            Mode::RealTime => Some(self.watermark),
            Mode::MicroBatch => {
                let b = self.batch?;
                match self.cfg.output_mode {
                    OutputMode::Complete => None,
                    OutputMode::Update | OutputMode::Append => Some(b.watermarks.late),
                }
            }
        }
    }

    fn expiry_of(&self, key: &StateKey) -> Option<Timestamp> {
        if let Some(w) = key.window {
            return Some(w.end);
        }
        let i = self.time_key?;
        key.group.0[i].0.as_timestamp()
    }

    fn add_to(&mut self, key: StateKey, record: &Record) {
        let expiry = self.expiry_of(&key);
        let measures = &self.cfg.measures;
        let entry = match self.state.get_mut(&key) {
            Some(e) => e,
            None => {
                if let Some(e) = expiry {
                    self.by_expiry.entry(e).or_default().push(key.clone());
                }
                let aggs = measures.iter().map(|m| m.new_state()).collect();
                self.state.entry(key.clone()).or_insert(Entry { aggs, dirty: false })
            }
        };
        for (m, st) in measures.iter().zip(entry.aggs.iter_mut()) {
            m.update(st, measure_input(m, record));
        }
        if !entry.dirty {
            entry.dirty = true;
            if self.cfg.output_mode == OutputMode::Update {
                self.changed.push(key);
            }
        }
    }

    fn row_of(&self, key: &StateKey, entry: &Entry) -> Row {
        let mut row = Vec::with_capacity(1 + key.group.0.len() + entry.aggs.len());
        if let Some(w) = key.window {
            row.push(Value::Window { start: w.start, end: w.end });
        }
        row.extend(key.group.values().cloned());
        row.extend(self.cfg.measures.iter().zip(&entry.aggs).map(|(m, s)| m.finish(s)));
        row
    }

    /// Emits (update mode) the rows of changed keys and clears their marks.
    fn emit_changed(&mut self, out: &mut Output) {
        let changed = std::mem::take(&mut self.changed);
        for key in &changed {
            if let Some(e) = self.state.get(key) {
                out.rows.push(self.row_of(key, e));
            }
            if let Some(e) = self.state.get_mut(key) {
                e.dirty = false;
            }
        }
        self.changed = changed;
        self.changed.clear();
    }

    /// Evicts keys finalised by `w`: append mode emits them first.
    fn evict(&mut self, w: Timestamp, out: &mut Output) {
        if self.is_session() {
            let emit = self.cfg.output_mode == OutputMode::Append;
            self.sessions.evict(w, emit, &self.cfg, out);
            return;
        }
        while let Some(entry) = self.by_expiry.first_entry() {
            if *entry.key() > w {
                break;
            }
            for key in entry.remove() {
                if let Some(e) = self.state.remove(&key)
                    && self.cfg.output_mode == OutputMode::Append
                {
                    out.rows.push(self.row_of(&key, &e));
                }
            }
        }
    }

    fn process(&mut self, record: &Record, late_w: Option<Timestamp>, out: &mut Output) {
        let group = GroupKey::of(record, &self.cfg.key_columns);
        match self.cfg.window.clone() {
            WindowKind::None => {
                let key = StateKey { window: None, group };
                if let (Some(w), Some(e)) = (late_w, self.expiry_of(&key))
                    && e <= w
                {
                    out.late.push(record.clone());
                    return;
                }
                self.add_to(key, record);
            }
            WindowKind::Fixed { column, windows } => {
                let Some(t) = record.values[column].as_timestamp() else {
                    return; // a null event time is rejected by the decoder; nothing to aggregate
                };
                let mut any = false;
                let mut keys: smallvec_lite::Windows = smallvec_lite::Windows::default();
                windows.for_each_window(t, |win| {
                    if late_w.is_none_or(|w| win.end > w) {
                        keys.push(win);
                    }
                });
                for win in keys.iter() {
                    any = true;
                    self.add_to(StateKey { window: Some(*win), group: group.clone() }, record);
                }
                if !any {
                    out.late.push(record.clone());
                }
            }
            WindowKind::Session { column, gap } => {
                let Some(t) = record.values[column].as_timestamp() else {
                    return;
                };
                let Some(gap) = gap.of(record) else {
                    return; // null, zero or negative gap: dropped (SEMANTICS.md)
                };
                let end = t.saturating_add(gap);
                if late_w.is_some_and(|w| end <= w) {
                    out.late.push(record.clone());
                    return;
                }
                self.sessions.add(group, t, end, record, &self.cfg);
            }
        }
    }
}

/// A tiny inline vector of windows (a record is in a handful of windows), to avoid allocating.
mod smallvec_lite {
    use crate::window::Window;

    const INLINE: usize = 8;

    #[derive(Default)]
    pub(super) struct Windows {
        inline: [Option<Window>; INLINE],
        len: usize,
        spill: Vec<Window>,
    }

    impl Windows {
        pub(super) fn push(&mut self, w: Window) {
            if self.len < INLINE {
                self.inline[self.len] = Some(w);
            } else {
                self.spill.push(w);
            }
            self.len += 1;
        }

        pub(super) fn iter(&self) -> impl Iterator<Item = &Window> {
            self.inline.iter().flatten().chain(self.spill.iter())
        }
    }
}

#[derive(Serialize, Deserialize)]
struct Snapshot {
    entries: Vec<(StateKey, Vec<Vec<u8>>)>,
    sessions: Vec<u8>,
    tracker: Option<WatermarkTracker>,
    watermark: Timestamp,
}

impl Operator for WindowAggregate {
    fn begin_batch(&mut self, ctx: &BatchContext) {
        self.batch = Some(*ctx);
    }

    fn on_record(&mut self, record: &Record, watermark: Timestamp, out: &mut Output) {
        match self.cfg.mode {
            Mode::MicroBatch => {
                let late_w = self.late_watermark();
                self.process(record, late_w, out);
            }
            Mode::RealTime => {
                self.advance_watermark(watermark, out);
                let t = self.cfg.watermark.and_then(|(c, _)| record.values[c].as_timestamp());
                let late_w = self.late_watermark();
                self.process(record, late_w, out);
                if self.cfg.output_mode == OutputMode::Update && !self.is_session() {
                    self.emit_changed(out);
                }
                if let (Some(tr), Some(t)) = (self.tracker.as_mut(), t) {
                    tr.observe(t);
                    let w = tr.current();
                    self.advance_watermark(w, out);
                }
            }
        }
    }

    fn end_batch(&mut self, out: &mut Output) {
        let Some(b) = self.batch.take() else { return };
        match self.cfg.output_mode {
            OutputMode::Complete => {
                if self.is_session() {
                    self.sessions.emit_all(&self.cfg, out);
                } else {
                    let mut keys: Vec<&StateKey> = self.state.keys().collect();
                    keys.sort_by(|a, b| (a.window, &a.group).cmp(&(b.window, &b.group)));
                    for k in keys {
                        out.rows.push(self.row_of(k, &self.state[k]));
                    }
                    for e in self.state.values_mut() {
                        e.dirty = false;
                    }
                }
            }
            OutputMode::Update => {
                self.emit_changed(out);
                if self.cfg.watermark.is_some() {
                    self.evict(b.watermarks.evict, out);
                }
            }
            OutputMode::Append => {
                if self.cfg.watermark.is_some() {
                    self.evict(b.watermarks.evict, out);
                }
                self.sessions.clear_dirty();
                for e in self.state.values_mut() {
                    e.dirty = false;
                }
            }
        }
    }

    fn advance_watermark(&mut self, w: Timestamp, out: &mut Output) {
        if w <= self.watermark {
            return;
        }
        self.watermark = w;
        if self.cfg.watermark.is_some() && self.cfg.output_mode != OutputMode::Complete {
            self.evict(w, out);
        }
    }

    fn advance_clock(&mut self, _now: Timestamp, _out: &mut Output) {}

    fn next_timer(&self) -> Option<Timestamp> {
        None
    }

    fn wants_no_data_batch(&self, evicted_with: Timestamp, next: Timestamp) -> bool {
        self.cfg.watermark.is_some() && self.cfg.output_mode != OutputMode::Complete && next > evicted_with
    }

    fn state_len(&self) -> usize {
        self.state.len() + self.sessions.len()
    }

    fn snapshot(&self) -> Vec<u8> {
        let mut entries: Vec<(StateKey, Vec<Vec<u8>>)> =
            self.state.iter().map(|(k, e)| (k.clone(), e.aggs.iter().map(|s| s.to_bytes()).collect())).collect();
        entries.sort_by(|a, b| (a.0.window, &a.0.group).cmp(&(b.0.window, &b.0.group)));
        let snap = Snapshot {
            entries,
            sessions: self.sessions.snapshot(&self.cfg),
            tracker: self.tracker,
            watermark: self.watermark,
        };
        serde_json::to_vec(&snap).unwrap_or_default()
    }

    fn restore(&mut self, bytes: &[u8]) -> Result<(), StateError> {
        let corrupt = |why: String| StateError::Corrupt { operator: "window_aggregate", why };
        let snap: Snapshot = serde_json::from_slice(bytes).map_err(|e| corrupt(e.to_string()))?;
        for (key, aggs) in snap.entries {
            if aggs.len() != self.cfg.measures.len() {
                return Err(corrupt(format!(
                    "{} measures in the snapshot, {} in the query",
                    aggs.len(),
                    self.cfg.measures.len()
                )));
            }
            let aggs = self
                .cfg
                .measures
                .iter()
                .zip(&aggs)
                .map(|(m, b)| m.state_from_bytes(b).map_err(|e| corrupt(e.to_string())))
                .collect::<Result<Vec<_>, _>>()?;
            if let Some(e) = self.expiry_of(&key) {
                self.by_expiry.entry(e).or_default().push(key.clone());
            }
            self.state.insert(key, Entry { aggs, dirty: false });
        }
        self.sessions.restore(&snap.sessions, &self.cfg).map_err(corrupt)?;
        merge_trackers(&mut self.tracker, snap.tracker);
        self.watermark = self.watermark.max(snap.watermark);
        Ok(())
    }

    fn retain_groups(&mut self, keep: &mut dyn FnMut(&GroupKey) -> bool) {
        self.state.retain(|k, _| keep(&k.group));
        let state = &self.state;
        self.by_expiry.retain(|_, keys| {
            keys.retain(|k| state.contains_key(k));
            !keys.is_empty()
        });
        self.changed.retain(|k| state.contains_key(k));
        self.sessions.retain_groups(keep);
    }
}

/// Orders keys for deterministic snapshots and complete-mode output.
impl PartialOrd for StateKey {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for StateKey {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        (self.window, &self.group).cmp(&(other.window, &other.group))
    }
}
