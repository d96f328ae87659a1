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
//! At the ends of time no record is late because a window bound does not fit in a TIMESTAMP: a
//! window that would start before `Timestamp::MIN` starts there (as emitted), and the first
//! window that would end after `Timestamp::MAX` ends there and holds `Timestamp::MAX` too
//! ([`PaneGrid`]). No watermark passes that last window (a watermark at `Timestamp::MAX` counts as
//! one µs less): no record is late for it, and append mode never emits it.
//!
//! Without a window, a watermark only matters when its column is one of the `group_by` columns
//! (the key's timestamp then plays the role of a window end), as in Spark.
//!
//! State layout (the per-record path allocates nothing and builds no key): groups are interned
//! ([`groups`]: the key columns are hashed in place and probed in a table of slots); tumbling and
//! sliding windows keep per group a few panes ([`panes`], one update per record, windows merged
//! from panes when emitted); sessions keep per group a few sessions (`session.rs`). The last pane
//! or session of a group, and with at most two measures its states ([`hot`]), sit in the group's
//! slot, so a record usually touches that slot only. Windows to finalise are found through a
//! min-heap of `(end, group slot)`, touched only when a pane or a session opens or a group is
//! finalised.

mod due;
pub(crate) mod groups;
pub use groups::PREFETCH_MIN_BYTES;
pub(crate) mod hot;
pub(crate) mod key;
mod panes;
mod table;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_end_of_time;
#[cfg(test)]
mod tests_global;
#[cfg(test)]
mod tests_overflow;

use serde::{Deserialize, Serialize};

use self::hot::{HOT, HotOp};
use self::panes::{END_OF_TIME_WATERMARK, GroupSnapshot, Layout, PaneState};
use super::session::{SessionGap, SessionGroupSnapshot, SessionState};
use super::{BatchContext, Mode, Operator, Output, StateError, merge_trackers};
use crate::aggregate::AggregateFn;
use crate::time::{Duration, Timestamp};
use crate::value::{GroupKey, Record, Value};
use crate::watermark::WatermarkTracker;
use crate::window::{PaneGrid, SlidingWindows};

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

/// The window-aggregate operator (see the module documentation).
#[derive(Debug)]
pub struct WindowAggregate {
    cfg: WindowAggregateConfig,
    /// Event-time column of fixed windows and sessions.
    time_column: Option<usize>,
    session_gap: Option<SessionGap>,
    /// Tumbling / sliding windows, or the plain grouped aggregation.
    panes: PaneState,
    sessions: SessionState,
    tracker: Option<WatermarkTracker>,
    batch: Option<BatchContext>,
    /// Real-time watermark (the operator's own view).
    watermark: Timestamp,
    /// Real-time: the watermark of the last eviction (below `watermark` only after a restore).
    evicted_to: Timestamp,
    /// Whether the watermark finalises state (a watermark and not complete mode).
    evicts: bool,
    /// Indexes of the integer sums among the measures (sessions refuse a record that would
    /// take one out of BIGINT; the panes keep their own list).
    sums: Vec<usize>,
    /// Micro-batch: the query's one group is held here ([`Operator::own_global_group`]).
    global: bool,
    /// The per-record path of the common case, when it applies ([`Fast::of`]).
    fast: Option<Fast>,
}

/// What the per-record path of the common case reads, decided once per operator: real-time
/// mode, tumbling or sliding windows, a watermark, append mode, at most [`HOT`] measures and no
/// integer sum (no overflow check). Records then go through [`WindowAggregate::on_record_fast`]
/// and [`PaneState::add_hot`], which skip the checks of the other cases and update the inline
/// states through [`HotOp`]s; the effect is that of the general path (a test runs both).
#[derive(Clone, Copy, Debug)]
struct Fast {
    /// Event-time column of the windows.
    column: usize,
    /// The watermark column.
    watermark_column: usize,
    grid: PaneGrid,
    ops: [HotOp; HOT],
}

impl Fast {
    fn of(cfg: &WindowAggregateConfig) -> Option<Fast> {
        let WindowKind::Fixed { column, windows } = &cfg.window else { return None };
        let (watermark_column, _) = cfg.watermark?;
        (cfg.mode == Mode::RealTime
            && cfg.output_mode == OutputMode::Append
            && cfg.measures.len() <= HOT
            && !cfg.measures.iter().any(AggregateFn::is_integer_sum))
        .then(|| Fast {
            column: *column,
            watermark_column,
            grid: PaneGrid::new(windows),
            ops: HotOp::of_all(&cfg.measures),
        })
    }
}

impl WindowAggregate {
    /// With several sources (SEMANTICS.md "Several sources (union)"), the operator's watermark
    /// comes only from the one each record is stamped with (the sources' combined watermark),
    /// never from the event times of the records it sees: one source's records alone would move
    /// it past the others'.
    pub fn with_stamped_watermark(mut self) -> Self {
        self.tracker = None;
        self
    }

    /// A new, empty operator.
    ///
    /// # Panics
    /// When a fixed window's size or slide is not positive (the pipeline validation refuses them).
    pub fn new(cfg: WindowAggregateConfig) -> WindowAggregate {
        let (layout, time_column, session_gap) = match &cfg.window {
            WindowKind::None => {
                let time_key = cfg.watermark.and_then(|(wcol, _)| cfg.key_columns.iter().position(|&c| c == wcol));
                (Layout::Plain { time_key }, None, None)
            }
            WindowKind::Fixed { column, windows } => (Layout::Fixed(PaneGrid::new(windows)), Some(*column), None),
            WindowKind::Session { column, gap } => (Layout::Plain { time_key: None }, Some(*column), Some(gap.clone())),
        };
        let tracker = cfg.watermark.map(|(_, d)| WatermarkTracker::new(d));
        let evicts = cfg.watermark.is_some() && cfg.output_mode != OutputMode::Complete;
        WindowAggregate {
            evicts,
            time_column,
            session_gap,
            panes: PaneState::new(layout, &cfg.measures),
            sums: cfg.measures.iter().enumerate().filter(|(_, f)| f.is_integer_sum()).map(|(j, _)| j).collect(),
            sessions: SessionState::default(),
            tracker,
            batch: None,
            watermark: Timestamp::MIN,
            evicted_to: Timestamp::MIN,
            global: false,
            fast: Fast::of(&cfg),
            cfg,
        }
    }

    /// The operator without its per-record path of the common case (tests compare the two).
    #[cfg(test)]
    pub(crate) fn without_fast_path(mut self) -> Self {
        self.fast = None;
        self
    }

    /// The configuration.
    pub fn config(&self) -> &WindowAggregateConfig {
        &self.cfg
    }

    fn is_session(&self) -> bool {
        self.session_gap.is_some()
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

    /// Real-time: moves the watermark to `max(w, current)` and finalises what it passed (when
    /// the output mode evicts at all). Looks only at the top of the expiry heap unless something
    /// is due.
    #[inline]
    fn raise_watermark(&mut self, w: Timestamp, out: &mut Output) {
        let w = w.max(self.watermark);
        self.watermark = w;
        if !self.evicts {
            return;
        }
        let due = if self.is_session() { self.sessions.next_due() } else { self.panes.next_due() };
        if due <= w.0 {
            self.evict(w, out);
        } else {
            self.evicted_to = w;
        }
    }

    /// [`Operator::on_record`] in every case but that of [`Fast`].
    #[inline(never)]
    fn on_record_general(&mut self, record: &Record, watermark: Timestamp, out: &mut Output) {
        let late_w = match self.cfg.mode {
            Mode::MicroBatch => self.late_watermark(),
            Mode::RealTime => {
                if watermark > self.watermark || self.evicted_to < self.watermark {
                    // (the second: after a restore, finalise what the restored watermark passed)
                    self.raise_watermark(watermark, out);
                }
                self.cfg.watermark.map(|_| self.watermark)
            }
        };
        self.process(record, late_w, out);
        match self.cfg.mode {
            Mode::MicroBatch => {}
            Mode::RealTime => {
                if self.cfg.output_mode == OutputMode::Update && !self.is_session() {
                    self.panes.emit_changed(late_w.map(|w| w.0), &self.cfg, out);
                }
                if let (Some(tr), Some((c, _))) = (self.tracker.as_mut(), self.cfg.watermark)
                    && let Some(t) = record.values[c].as_timestamp()
                {
                    tr.observe(t);
                    let w = tr.current();
                    if w > self.watermark {
                        self.raise_watermark(w, out);
                    }
                }
            }
        }
    }

    /// [`WindowAggregate::raise_watermark`] out of the per-record path of [`Fast`] (called
    /// when the watermark moves: at most once per record, usually much less often).
    #[inline(never)]
    fn raise_watermark_cold(&mut self, w: Timestamp, out: &mut Output) {
        self.raise_watermark(w, out);
    }

    /// [`Operator::on_record`] in the case of [`Fast`] (`self.fast` is `Some`), as the general
    /// path does it there.
    #[inline(never)]
    fn on_record_fast(&mut self, record: &Record, watermark: Timestamp, out: &mut Output) {
        if watermark > self.watermark || self.evicted_to < self.watermark {
            // (the second: after a restore, finalise what the restored watermark passed)
            self.raise_watermark_cold(watermark, out);
        }
        let Some(fast) = &self.fast else { return };
        let values = &record.values[..];
        // (no event time: in no window, see `process`)
        if let Some(t) = values[fast.column].event_time() {
            let late = self.watermark.0.min(END_OF_TIME_WATERMARK);
            self.panes.add_hot(record, t.0, late, fast, &self.cfg, out);
        }
        if let Some(tr) = self.tracker.as_mut()
            && let Some(t) = values[fast.watermark_column].as_timestamp()
            // The tracker's watermark moves only when the largest event time does; otherwise
            // it is at most `self.watermark` already (raised to it after every record, and
            // a restore keeps the larger of the two).
            && tr.observe_rises(t)
        {
            let w = tr.current();
            if w > self.watermark {
                self.raise_watermark_cold(w, out);
            }
        }
    }

    /// Finalises windows / sessions with end <= `w`: append mode emits them first.
    #[inline(never)]
    fn evict(&mut self, w: Timestamp, out: &mut Output) {
        let emit = self.cfg.output_mode == OutputMode::Append;
        if self.is_session() {
            self.sessions.evict(w, emit, &self.cfg, out);
        } else {
            self.panes.evict(w.0, emit, &self.cfg, out);
        }
        self.evicted_to = self.evicted_to.max(w);
    }

    #[inline(always)]
    fn process(&mut self, record: &Record, late_w: Option<Timestamp>, out: &mut Output) {
        let late = late_w.map(|w| w.0);
        // (one call of `PaneState::add`, inlined here: the per-record path of fixed windows)
        let t = match self.time_column {
            None => Timestamp(0),
            Some(column) => match record.values[column].event_time() {
                Some(t) => t,
                // the decoder rejects a null event time; after an outer join, a row padded with
                // NULLs for the window's side has none: in no window, as Spark's window() of NULL
                None => return,
            },
        };
        match &self.session_gap {
            None => self.panes.add(record, t.0, late, &self.cfg, out),
            Some(gap) => {
                let Some(gap) = gap.of(record) else {
                    return; // null, zero or negative gap: dropped (SEMANTICS.md)
                };
                let end = t.saturating_add(gap);
                if late.is_some_and(|w| end.0 <= w) {
                    out.late.push(record.clone());
                    return;
                }
                self.sessions.add(record, t, end, &self.cfg, &self.sums, out);
            }
        }
    }
}

#[derive(Serialize, Deserialize)]
struct Snapshot {
    groups: Vec<GroupSnapshot>,
    sessions: Vec<SessionGroupSnapshot>,
    tracker: Option<WatermarkTracker>,
    watermark: Timestamp,
}

impl Operator for WindowAggregate {
    fn key_columns(&self) -> &[usize] {
        &self.cfg.key_columns
    }

    fn begin_batch(&mut self, ctx: &BatchContext) {
        self.batch = Some(*ctx);
    }

    #[inline]
    fn on_record(&mut self, record: &Record, watermark: Timestamp, out: &mut Output) {
        // (two calls out of line, so that neither path saves the registers of the other)
        if self.fast.is_some() {
            self.on_record_fast(record, watermark, out);
        } else {
            self.on_record_general(record, watermark, out);
        }
    }
    #[inline]
    fn prefetch(&self, record: &Record) {
        let cols = &self.cfg.key_columns[..];
        if cols.is_empty() {
            // One group (per window): its state stays in cache; nothing to hash or load.
            return;
        }
        if self.is_session() {
            self.sessions.prefetch(record, cols);
        } else {
            self.panes.prefetch(record, cols);
        }
    }

    #[inline]
    fn prefetch_pays(&self) -> bool {
        !self.cfg.key_columns.is_empty()
            && if self.is_session() { self.sessions.prefetch_pays() } else { self.panes.prefetch_pays() }
    }

    fn own_global_group(&mut self) {
        self.global = self.cfg.mode == Mode::MicroBatch
            && self.cfg.key_columns.is_empty()
            && matches!(self.cfg.window, WindowKind::None);
    }

    fn end_batch(&mut self, out: &mut Output) {
        let Some(b) = self.batch.take() else { return };
        if self.global && self.cfg.output_mode != OutputMode::Append {
            self.panes.touch_global(&self.cfg);
        }
        match self.cfg.output_mode {
            OutputMode::Complete => {
                if self.is_session() {
                    self.sessions.emit_all(&self.cfg, out);
                } else {
                    self.panes.emit_all(&self.cfg, out);
                }
            }
            OutputMode::Update => {
                let late = self.late_watermark_of(&b);
                self.panes.emit_changed(late, &self.cfg, out);
                if self.cfg.watermark.is_some() {
                    self.evict(b.watermarks.evict, out);
                }
            }
            OutputMode::Append => {
                if self.cfg.watermark.is_some() {
                    self.evict(b.watermarks.evict, out);
                }
                self.panes.clear_changed();
            }
        }
    }

    fn advance_watermark(&mut self, w: Timestamp, out: &mut Output) {
        if w > self.watermark || self.evicted_to < self.watermark {
            self.raise_watermark(w, out);
        }
    }

    fn advance_clock(&mut self, _now: Timestamp, _out: &mut Output) {}

    fn ignores_clock(&self) -> bool {
        true
    }

    fn next_timer(&self) -> Option<Timestamp> {
        None
    }

    fn wants_no_data_batch(&self, evicted_with: Timestamp, next: Timestamp) -> bool {
        self.cfg.watermark.is_some() && self.cfg.output_mode != OutputMode::Complete && next > evicted_with
    }

    /// Panes (tumbling and sliding windows: one per window of tumbling windows, `size /
    /// gcd(size, slide)` per window of sliding ones, shared between windows), groups (no window)
    /// or sessions held.
    fn state_len(&self) -> usize {
        self.panes.len() + self.sessions.len()
    }

    fn snapshot(&self) -> Vec<u8> {
        let snap = Snapshot {
            groups: self.panes.snapshot(self.cfg.measures.len()),
            sessions: self.sessions.snapshot(&self.cfg),
            tracker: self.tracker,
            watermark: self.watermark,
        };
        serde_json::to_vec(&snap).unwrap_or_default()
    }

    fn restore(&mut self, bytes: &[u8]) -> Result<(), StateError> {
        let corrupt = |why: String| StateError::Corrupt { operator: "window_aggregate", why };
        let snap: Snapshot = serde_json::from_slice(bytes).map_err(|e| corrupt(e.to_string()))?;
        self.panes.restore(snap.groups, &self.cfg.measures).map_err(corrupt)?;
        self.sessions.restore(snap.sessions, &self.cfg).map_err(corrupt)?;
        merge_trackers(&mut self.tracker, snap.tracker);
        self.watermark = self.watermark.max(snap.watermark);
        // groups of a snapshot taken at a lower watermark may hold windows this one finalises
        self.evicted_to = Timestamp::MIN;
        Ok(())
    }

    fn retain_groups(&mut self, keep: &mut dyn FnMut(&GroupKey) -> bool) {
        self.panes.retain_groups(keep);
        self.sessions.retain_groups(keep);
    }
}

impl WindowAggregate {
    /// The late-input watermark of batch `b` (update mode), as [`Self::late_watermark`].
    fn late_watermark_of(&self, b: &BatchContext) -> Option<i64> {
        self.cfg.watermark?;
        (self.cfg.output_mode != OutputMode::Complete).then_some(b.watermarks.late.0)
    }
}
