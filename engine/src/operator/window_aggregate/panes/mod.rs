//! State of tumbling and sliding windows (and of the plain grouped aggregation): per group, a
//! short vector of panes sorted by start, each with one [`AggState`] per measure (stored in one
//! flat vector per group, so a new pane allocates nothing once the group's vectors have grown).
//!
//! A record updates one pane ([`PaneGrid`]: panes of `gcd(size, slide)`); a window is assembled
//! from its panes when it is emitted. Per group:
//! - `closed`: every window with end <= `closed` is final (emitted in append mode, or dropped);
//!   such windows are never emitted again, even though a pane they share with a later window
//!   may still receive records.
//! - a pane is dropped once its last window is final (`last_end <= closed`);
//! - `due`: the end of the group's next window to finalise, registered in the expiry queue
//!   ([`DueQueue`]) as `(due, slot)`. Only pane creation and finalisation touch the queue; stale
//!   entries (whose `due` no longer matches the group's) are skipped when they surface.
//!
//! Invariant (what makes per-window lateness exact with panes): when a record is judged against
//! a watermark L, every window with end <= L that holds records has been finalised. A record is
//! late when its pane's last window ends <= L; otherwise it is added to its pane, and the windows
//! of that pane with end <= L are final and never see it.
//!
//! The plain grouped aggregation (no window) is the same structure with one pane per group whose
//! "last end" is the group's time key (the `group_by` value of the watermark column, if any), or
//! never.
//!
//! The end of time: `i64::MAX` as a last end or window end means "never final". A window whose
//! end would pass `i64::MAX` ends there ([`PaneGrid`] saturates bounds at both ends of time
//! rather than dropping windows), and every watermark is taken as at most `i64::MAX - 1`
//! ([`END_OF_TIME_WATERMARK`]): no record is late for that window, no watermark finalises it,
//! so append mode never emits it (update and complete modes do).

use std::borrow::Cow;

use serde::{Deserialize, Serialize};

use super::due::DueQueue;
use super::groups::{Groups, HOT_BYTES};
#[cfg(doc)]
use super::hot::HotOp;
use super::hot::{HOT, Hot};
use super::{Fast, OutputMode, WindowAggregateConfig, measure_input};
use crate::aggregate::{AggState, AggregateFn, SmallState};
use crate::operator::{Output, Rejected};
use crate::value::{GroupKey, Record, Row, Value};
use crate::window::PaneGrid;

mod snapshot;

/// The largest watermark the panes use: a watermark at `i64::MAX` (possible with a zero delay
/// and a record at `i64::MAX`) is taken as this, so that the window at the end of time (end
/// `i64::MAX`, holding `i64::MAX`) is never final.
pub(super) const END_OF_TIME_WATERMARK: i64 = i64::MAX - 1;

/// How records map to panes.
#[derive(Clone, Copy, Debug)]
pub(super) enum Layout {
    /// No window: one pane per group; `time_key` is the position among the key columns of the
    /// watermark column, if it is one of them.
    Plain {
        /// Position of the time key in the group key.
        time_key: Option<usize>,
    },
    /// Tumbling or sliding windows.
    Fixed(PaneGrid),
}

#[derive(Clone, Copy, Debug)]
struct Pane {
    start: i64,
    /// End of the last window holding the pane (plain: the time key, or `i64::MAX`).
    last_end: i64,
    /// Changed since the last emission (update mode).
    dirty: bool,
}

/// A group's panes. At rest the last pane (largest start, the one a record usually updates) is
/// "parked" in `last`, beside the states, and `panes` holds the others: the per-record path then
/// reads only the group's slot and its states. Structural changes unpark it first.
#[derive(Debug)]
#[repr(C)]
pub(super) struct Group {
    last: Option<Pane>,
    /// The parked last pane's states, when few enough to live here.
    hot: Hot,
    /// `measures` states per pane, pane after pane (the last pane's at the end).
    states: Vec<AggState>,
    closed: i64,
    due: i64,
    panes: Vec<Pane>,
    /// In the operator's `changed` list (update mode).
    changed: bool,
}

// The per-record path reads the parked last pane and its inline states: within the bytes the
// prefetch loads.
const _: () = assert!(
    Groups::<Group>::DATA_OFFSET + std::mem::offset_of!(Group, hot) + std::mem::size_of::<Hot>() <= HOT_BYTES
        && std::mem::offset_of!(Group, last) < std::mem::offset_of!(Group, hot)
);

impl Default for Group {
    fn default() -> Group {
        Group {
            last: None,
            hot: Hot::default(),
            states: Vec::new(),
            closed: i64::MIN,
            due: i64::MAX,
            panes: Vec::new(),
            changed: false,
        }
    }
}

/// One group in a snapshot: its key, `closed`, and its panes (start, serialised states).
#[derive(Debug, Serialize, Deserialize)]
pub(super) struct GroupSnapshot {
    key: GroupKey,
    closed: i64,
    panes: Vec<(i64, Vec<Vec<u8>>)>,
}

/// Entries of a due bucket between the prefetch of a group's slot and its visit by the expiry
/// (the group's panes and states are prefetched half-way).
const EXPIRY_PREFETCH: usize = 4;

/// Every group's panes, the expiry queue and the update-mode change list.
#[derive(Debug)]
pub(super) struct PaneState {
    layout: Layout,
    groups: Groups<Group>,
    expiry: DueQueue,
    changed: Vec<u32>,
    /// Merge buffer for windows of several panes.
    scratch: Vec<AggState>,
    /// Window ends to emit for one group (reused buffer).
    ends: Vec<i64>,
    panes: usize,
    /// Indexes of the integer sums among the measures ([`AggregateFn::is_integer_sum`]): a
    /// record that would take one out of BIGINT in a window is refused whole.
    sums: Vec<usize>,
    /// The inline states of a new pane ([`Hot::fresh`]).
    fresh: Option<[SmallState; HOT]>,
}

#[inline]
fn update_states(measures: &[AggregateFn], states: &mut [AggState], record: &Record) {
    for (m, st) in measures.iter().zip(states) {
        m.update(st, measure_input(m, record));
    }
}

fn row_of(window: Option<(i64, i64)>, key: &GroupKey, measures: &[AggregateFn], states: &[AggState]) -> Row {
    let mut row = Vec::with_capacity(1 + key.0.len() + measures.len());
    if let Some((start, end)) = window {
        row.push(Value::Window { start: crate::time::Timestamp(start), end: crate::time::Timestamp(end) });
    }
    row.extend(key.values().cloned());
    row.extend(measures.iter().zip(states).map(|(m, s)| m.finish(s)));
    row
}

impl PaneState {
    pub(super) fn new(layout: Layout, measures: &[AggregateFn]) -> PaneState {
        PaneState {
            sums: measures.iter().enumerate().filter(|(_, f)| f.is_integer_sum()).map(|(j, _)| j).collect(),
            layout,
            groups: Groups::default(),
            expiry: DueQueue::new(),
            changed: Vec::new(),
            scratch: Vec::new(),
            ends: Vec::new(),
            panes: 0,
            fresh: Hot::fresh(measures),
        }
    }

    /// Number of panes held (plain: groups).
    pub(super) fn len(&self) -> usize {
        self.panes
    }

    /// Marks pane `pane` (in start order, the group at rest) changed.
    fn mark_changed(&mut self, slot: u32, pane: usize) {
        let g = self.groups.get_mut(slot);
        match g.panes.get_mut(pane) {
            Some(p) => p.dirty = true,
            None => {
                if let Some(p) = g.last.as_mut() {
                    p.dirty = true;
                }
            }
        }
        if !g.changed {
            g.changed = true;
            self.changed.push(slot);
        }
    }

    fn register(&mut self, slot: u32, due: i64) {
        let g = self.groups.get_mut(slot);
        if due < g.due {
            g.due = due;
            self.expiry.push(due, slot);
        }
    }

    /// The group's next window end to finalise (`None`: no pane, or beyond i64).
    fn group_due(&self, g: &Group) -> Option<i64> {
        let front = g.panes.first().or(g.last.as_ref())?;
        match self.layout {
            Layout::Plain { .. } => (front.last_end < i64::MAX).then_some(front.last_end),
            Layout::Fixed(grid) => Some(grid.first_end_after(g.closed.max(front.start))),
        }
    }

    /// Whether prefetching the groups pays ([`Groups::prefetch_pays`]).
    pub(super) fn prefetch_pays(&self) -> bool {
        self.groups.prefetch_pays()
    }

    /// Starts loading the slot of `record`'s group ([`Groups::prefetch`]). Out of line: the
    /// operator's prefetch would hold the sessions' and the panes' inlined together, each
    /// saving the registers of both.
    #[inline(never)]
    pub(super) fn prefetch(&self, record: &Record, cols: &[usize]) {
        self.groups.prefetch_record(record, cols);
    }

    /// Adds `record`, whose event time is `t` (fixed windows; ignored without a window), judged
    /// late against `late` (`None`: nothing is late). Late records go to `out.late`.
    #[inline(always)]
    pub(super) fn add(
        &mut self,
        record: &Record,
        t: i64,
        late: Option<i64>,
        cfg: &WindowAggregateConfig,
        out: &mut Output,
    ) {
        let late = late.map(|l| l.min(END_OF_TIME_WATERMARK));
        let cols = &cfg.key_columns[..];
        if let Some(slot) = self.groups.find_prefetched(record, cols) {
            let grid = match self.layout {
                Layout::Plain { .. } => None,
                Layout::Fixed(grid) => Some(grid),
            };
            let g = self.groups.get_mut(slot);
            if let Some(last) = &g.last
                && grid.is_none_or(|grid| pane_holds(grid, last.start, t))
            {
                if late.is_some_and(|l| last.last_end <= l) {
                    out.late.push(record.clone());
                    return;
                }
                if !self.sums.is_empty() {
                    let start = last.start;
                    if let Some(j) = self.overflow(slot, start, record, &cfg.measures) {
                        out.rejected.push(Rejected::overflow(record, &cfg.measures[j]));
                        return;
                    }
                }
                let g = self.groups.get_mut(slot);
                g.update_last(&cfg.measures, record);
                if cfg.output_mode == OutputMode::Update {
                    let i = g.panes.len();
                    self.mark_changed(slot, i);
                }
                return;
            }
            return self.add_slow(record, t, late, Some(slot), cfg, out);
        }
        self.add_slow(record, t, late, None, cfg, out);
    }

    /// [`PaneState::add`] in the case of [`Fast`] (fixed windows on `fast.grid`, this state's
    /// layout, append mode, no integer sum), `late` the watermark (at most
    /// [`END_OF_TIME_WATERMARK`]): the record of the parked last pane takes the ops of the
    /// inline states (`fast.ops`, [`HotOp::of_all`] of the measures) and nothing else; any other
    /// goes to [`PaneState::add_slow`] with the slot found. The same effect as [`PaneState::add`] (a test
    /// runs both on the same input).
    #[inline(always)]
    pub(super) fn add_hot(
        &mut self,
        record: &Record,
        t: i64,
        late: i64,
        fast: &Fast,
        cfg: &WindowAggregateConfig,
        out: &mut Output,
    ) {
        debug_assert!(self.sums.is_empty() && cfg.output_mode == OutputMode::Append && late <= END_OF_TIME_WATERMARK);
        let found = self.groups.find_prefetched(record, &cfg.key_columns);
        if let Some(slot) = found {
            let g = self.groups.get_mut(slot);
            if let Some(last) = &g.last
                && pane_holds(fast.grid, last.start, t)
                && last.last_end > late
            {
                if g.hot.used() {
                    if let Err(k) = g.hot.update_ops(&fast.ops, &cfg.measures, record) {
                        g.update_last_from(k, &cfg.measures, record);
                    }
                } else {
                    g.update_last_from(0, &cfg.measures, record);
                }
                return;
            }
        }
        self.add_slow(record, t, Some(late), found, cfg, out);
    }

    /// A record that opens a pane, or lands in an older one (input out of order); `found`: the
    /// slot of its group, when [`PaneState::add`] found it.
    #[cold]
    fn add_slow(
        &mut self,
        record: &Record,
        t: i64,
        late: Option<i64>,
        found: Option<u32>,
        cfg: &WindowAggregateConfig,
        out: &mut Output,
    ) {
        // A pane before the parked last one, open already (input out of order), found by its
        // bounds (as `pane_start(t)` would find it, without a division): updated where it
        // lies, with no structural change (as `open_pane` would find it: `closed` stays).
        if let (Layout::Fixed(grid), Some(slot)) = (self.layout, found)
            && let Some(i) = self.groups.get(slot).panes.iter().rposition(|p| pane_holds(grid, p.start, t))
        {
            let Pane { start, last_end, .. } = self.groups.get(slot).panes[i];
            if late.is_some_and(|l| last_end <= l) {
                out.late.push(record.clone());
                return;
            }
            if !self.sums.is_empty()
                && let Some(j) = self.overflow(slot, start, record, &cfg.measures)
            {
                out.rejected.push(Rejected::overflow(record, &cfg.measures[j]));
                return;
            }
            self.groups.get_mut(slot).update_pane(i, &cfg.measures, record);
            if cfg.output_mode == OutputMode::Update {
                self.mark_changed(slot, i);
            }
            return;
        }
        let (start, last_end) = match self.layout {
            Layout::Plain { time_key } => {
                let kt = time_key.and_then(|i| record.values[cfg.key_columns[i]].key_time());
                (i64::MIN, kt.map_or(i64::MAX, |k| k.0))
            }
            Layout::Fixed(grid) => {
                // (bounds saturated at the ends of time: some window always holds t)
                let s = grid.pane_start(t);
                match grid.last_end(s) {
                    e if e > s => (s, e),
                    // slide > size left a gap (validation refuses it): in no window, as late
                    _ => {
                        out.late.push(record.clone());
                        return;
                    }
                }
            }
        };
        if late.is_some_and(|l| last_end <= l) {
            out.late.push(record.clone());
            return;
        }
        let (slot, new) = match found {
            Some(slot) => (slot, false),
            None => {
                let hash = self.groups.hash_record(record, &cfg.key_columns);
                self.groups.find_or_insert(hash, record, &cfg.key_columns)
            }
        };
        if new {
            // (a new group holds no sum a single value could take out of BIGINT)
            self.groups.get_mut(slot).reset();
        } else if !self.sums.is_empty()
            && let Some(j) = self.overflow(slot, start, record, &cfg.measures)
        {
            out.rejected.push(Rejected::overflow(record, &cfg.measures[j]));
            return;
        }
        let i = self.open_pane(slot, start, last_end, late, &cfg.measures);
        self.groups.get_mut(slot).update_pane(i, &cfg.measures, record);
        if cfg.output_mode == OutputMode::Update {
            self.mark_changed(slot, i);
        }
    }

    /// The first integer sum (its index among `measures`) that `record`, landing in the pane at
    /// `pane_start` of the group in `slot` (at rest), would take out of BIGINT in one of the
    /// pane's windows not final yet (end > the group's `closed`): the sum of the window's panes
    /// plus the record's value, exactly ([`AggregateFn::sum_fits`]). `None` when it fits in all.
    /// A quick bound first: when the magnitudes of all the group's pane sums and of the value
    /// add up within BIGINT, no window can leave it.
    #[inline(never)]
    fn overflow(&self, slot: u32, pane_start: i64, record: &Record, measures: &[AggregateFn]) -> Option<usize> {
        let g = self.groups.get(slot);
        let m = measures.len();
        // With an integer sum the states are never inline (a long sum has no compact form):
        // `states` holds every pane's, the parked last pane's at the end.
        debug_assert!(!g.hot.used());
        let n = g.states.len() / m;
        let start_of =
            |k: usize| if k < g.panes.len() { g.panes[k].start } else { g.last.map_or(i64::MAX, |p| p.start) };
        for &j in &self.sums {
            let f = &measures[j];
            let v = measure_input(f, record);
            let state = |k: usize| &g.states[k * m + j];
            let fits = match self.layout {
                Layout::Plain { .. } => f.sum_fits((0..n).map(state), v),
                Layout::Fixed(grid) => {
                    let magnitude = (0..n).fold(i128::from(v.as_i64().unwrap_or(0)).abs(), |acc, k| match state(k) {
                        AggState::LongSum(s) => acc.saturating_add(s.sum.abs()),
                        _ => acc,
                    });
                    // (the quick bound is for BIGINT sums; a DECIMAL sum is always checked)
                    (f.input_type.decimal().is_none() && magnitude <= i128::from(i64::MAX)) || {
                        // The pane's windows, from the last back, with their bounds saturated
                        // at the ends of time as `window_row` emits them.
                        let mut end = Some(grid.last_end(pane_start));
                        let mut fits = true;
                        while let Some(e) = end.filter(|&e| e > pane_start.max(g.closed) && fits) {
                            let panes = (0..n).filter(|&k| grid.holds_pane(e, start_of(k)));
                            fits = f.sum_fits(panes.map(state), v);
                            end = grid.prev_end(e);
                        }
                        fits
                    }
                }
            };
            if !fits {
                return Some(j);
            }
        }
        None
    }

    /// A global aggregation's batch end ([`WindowAggregate::own_global_group`]): its one group,
    /// opened with the aggregates of no rows when no record came yet, marked changed so that
    /// update mode emits it in every batch (complete mode emits every group anyway).
    pub(super) fn touch_global(&mut self, cfg: &WindowAggregateConfig) {
        let (slot, new) = self.groups.find_or_insert_key(GroupKey::of(&Record::new(Vec::new()), &[]));
        if new {
            self.groups.get_mut(slot).reset();
        }
        let i = self.open_pane(slot, i64::MIN, i64::MAX, None, &cfg.measures);
        self.mark_changed(slot, i);
    }

    /// The index of the pane at `start` in the group, created (empty) when absent. Windows with
    /// end <= `late` become final for the group (they are, by the module invariant).
    fn open_pane(
        &mut self,
        slot: u32,
        start: i64,
        last_end: i64,
        late: Option<i64>,
        measures: &[AggregateFn],
    ) -> usize {
        let m = measures.len();
        let g = self.groups.get_mut(slot);
        if g.last.is_none_or(|l| l.start < start) {
            // After every open pane (a new window, or a new group): the last pane's states go
            // to the vector and the new pane is parked at once, as unpark, insert and park
            // would leave them.
            if let Some(l) = late {
                g.closed = g.closed.max(l);
            }
            g.hot.unpark(&mut g.states, m);
            if g.last.is_none() {
                // (the buffers the group's next panes take, allocated now as insert and park
                // do: a group's first pane, not its second, pays for them)
                g.panes.reserve(1);
                g.states.reserve(m);
            }
            g.panes.extend(g.last.take());
            g.last = Some(Pane { start, last_end, dirty: false });
            g.hot.start_fresh(self.fresh, &mut g.states, measures);
            let i = g.panes.len();
            self.panes += 1;
            if let Some(due) = self.group_due(self.groups.get(slot)) {
                self.register(slot, due);
            }
            return i;
        }
        g.unpark(m);
        let i = g.panes.partition_point(|p| p.start < start);
        if g.panes.get(i).is_some_and(|p| p.start == start) {
            g.park(m);
            return i;
        }
        if let Some(l) = late {
            g.closed = g.closed.max(l);
        }
        g.panes.insert(i, Pane { start, last_end, dirty: false });
        g.states.splice(i * m..i * m, measures.iter().map(AggregateFn::new_state));
        g.park(m);
        self.panes += 1;
        if let Some(due) = self.group_due(self.groups.get(slot)) {
            self.register(slot, due);
        }
        i
    }

    /// The earliest instant registered in the expiry queue (`i64::MAX`: none); nothing is due
    /// before it.
    #[inline]
    pub(crate) fn next_due(&self) -> i64 {
        self.expiry.next_due()
    }

    /// Finalises every window with end <= `w`: emits it first when `emit` (append mode), then
    /// drops panes no later window needs, and groups left without panes.
    pub(super) fn evict(&mut self, w: i64, emit: bool, cfg: &WindowAggregateConfig, out: &mut Output) {
        let w = w.min(END_OF_TIME_WATERMARK);
        while let Some((due, slot)) = self.expiry.pop_due(w) {
            // Groups due together (a window end) are visited in a burst: the slots of those a
            // few places ahead start loading, and, once loaded, their panes and states and
            // their table bucket (a group whose last pane closes is removed).
            if let Some(s) = self.expiry.upcoming(EXPIRY_PREFETCH) {
                self.groups.prefetch_slot(s);
            }
            if let Some(s) = self.expiry.upcoming(EXPIRY_PREFETCH / 2)
                && self.groups.is_live(s)
            {
                let g = self.groups.get(s);
                crate::prefetch::line(g.panes.as_ptr().cast());
                crate::prefetch::line(g.states.as_ptr().cast());
                self.groups.prefetch_bucket(s);
            }
            if !self.groups.is_live(slot) || self.groups.get(slot).due != due {
                continue; // stale entry
            }
            self.finalise(slot, w, emit, cfg, out);
        }
    }

    fn finalise(&mut self, slot: u32, w: i64, emit: bool, cfg: &WindowAggregateConfig, out: &mut Output) {
        let m = cfg.measures.len();
        let g = self.groups.get_mut(slot);
        g.due = i64::MAX;
        g.unpark(m);
        match self.layout {
            Layout::Plain { .. } => {
                if emit {
                    let (key, g) = self.groups.key_and_data_mut(slot);
                    out.rows.push(row_of(None, key, &cfg.measures, &g.states));
                }
            }
            Layout::Fixed(grid) => {
                let g = self.groups.get_mut(slot);
                let mut c = g.closed;
                self.ends.clear();
                for p in &g.panes {
                    // every window of this pane with end in (c, w], in order
                    let mut e = grid.first_end_after(c.max(p.start));
                    while e <= w && e <= p.last_end {
                        self.ends.push(e);
                        c = e;
                        match grid.next_end(e) {
                            Some(n) => e = n,
                            None => break,
                        }
                    }
                    if p.last_end > w {
                        break;
                    }
                }
                g.closed = g.closed.max(w);
                if emit {
                    let ends = std::mem::take(&mut self.ends);
                    for &e in &ends {
                        let row = self.window_row(slot, grid, e, &cfg.measures);
                        out.rows.push(row);
                    }
                    self.ends = ends;
                }
            }
        }
        let g = self.groups.get_mut(slot);
        let closed = g.closed;
        let dead = match self.layout {
            Layout::Plain { .. } => g.panes.len(),
            Layout::Fixed(_) => g.panes.partition_point(|p| p.last_end <= closed),
        };
        g.panes.drain(..dead);
        g.states.drain(..dead * m);
        g.park(m);
        self.panes -= dead;
        if g.last.is_none() {
            g.changed = false;
            self.groups.remove(slot);
        } else if let Some(due) = self.group_due(self.groups.get(slot)) {
            self.register(slot, due);
        }
    }

    /// The row of the window ending at `end` of a group (unparked): its panes merged.
    fn window_row(&mut self, slot: u32, grid: PaneGrid, end: i64, measures: &[AggregateFn]) -> Row {
        let m = measures.len();
        let start = grid.window_start(end);
        let key = self.groups.key(slot);
        let g = self.groups.get(slot);
        let lo = g.panes.partition_point(|p| p.start < start);
        let hi = g.panes.partition_point(|p| p.start < end || end == i64::MAX);
        if hi == lo + 1 {
            return row_of(Some((start, end)), key, measures, &g.states[lo * m..hi * m]);
        }
        self.scratch.clear();
        self.scratch.extend(measures.iter().map(AggregateFn::new_state));
        for k in lo..hi {
            for ((f, acc), st) in measures.iter().zip(self.scratch.iter_mut()).zip(&g.states[k * m..(k + 1) * m]) {
                f.merge(acc, st);
            }
        }
        row_of(Some((start, end)), key, measures, &self.scratch)
    }

    /// Update mode: emits every window (or plain group) changed since the last call, whose end
    /// is > the group's `closed` and > `late`, and clears the marks.
    pub(super) fn emit_changed(&mut self, late: Option<i64>, cfg: &WindowAggregateConfig, out: &mut Output) {
        let late = late.map(|l| l.min(END_OF_TIME_WATERMARK));
        let changed = std::mem::take(&mut self.changed);
        for &slot in &changed {
            if !self.groups.is_live(slot) || !self.groups.get(slot).changed {
                continue;
            }
            let g = self.groups.get_mut(slot);
            g.changed = false;
            g.unpark(cfg.measures.len());
            match self.layout {
                Layout::Plain { .. } => {
                    g.panes.iter_mut().for_each(|p| p.dirty = false);
                    let (key, g) = self.groups.key_and_data_mut(slot);
                    out.rows.push(row_of(None, key, &cfg.measures, &g.states));
                }
                Layout::Fixed(grid) => {
                    let floor = late.map_or(g.closed, |l| g.closed.max(l));
                    self.ends.clear();
                    // the next window end not pushed yet (`None`: past the end of time)
                    let mut next = Some(i64::MIN);
                    for p in g.panes.iter_mut().filter(|p| p.dirty) {
                        p.dirty = false;
                        let Some(n) = next else { continue };
                        next = push_ends(
                            grid,
                            grid.first_end_after(floor.max(p.start)).max(n),
                            p.last_end,
                            &mut self.ends,
                        );
                    }
                    let ends = std::mem::take(&mut self.ends);
                    for &e in &ends {
                        let row = self.window_row(slot, grid, e, &cfg.measures);
                        out.rows.push(row);
                    }
                    self.ends = ends;
                }
            }
            self.groups.get_mut(slot).park(cfg.measures.len());
        }
        self.changed = changed;
        self.changed.clear();
    }

    /// Complete mode: every window (or plain group), ordered by window then group key.
    pub(super) fn emit_all(&mut self, cfg: &WindowAggregateConfig, out: &mut Output) {
        let slots = self.groups.sorted_slots();
        for &slot in &slots {
            self.groups.get_mut(slot).unpark(cfg.measures.len());
        }
        match self.layout {
            Layout::Plain { .. } => {
                for &slot in &slots {
                    let g = self.groups.get(slot);
                    out.rows.push(row_of(None, self.groups.key(slot), &cfg.measures, &g.states));
                }
            }
            Layout::Fixed(grid) => {
                // (end, rank of the key) of every window, then sorted: windows of one size are
                // ordered by their end.
                let mut windows: Vec<(i64, usize, u32)> = Vec::new();
                for (rank, &slot) in slots.iter().enumerate() {
                    let g = self.groups.get(slot);
                    let mut next = Some(i64::MIN);
                    self.ends.clear();
                    for p in &g.panes {
                        let Some(n) = next else { break };
                        next = push_ends(
                            grid,
                            grid.first_end_after(g.closed.max(p.start)).max(n),
                            p.last_end,
                            &mut self.ends,
                        );
                    }
                    windows.extend(self.ends.iter().map(|&e| (e, rank, slot)));
                }
                windows.sort_unstable();
                for (e, _, slot) in windows {
                    let row = self.window_row(slot, grid, e, &cfg.measures);
                    out.rows.push(row);
                }
            }
        }
        for &slot in &slots {
            self.groups.get_mut(slot).park(cfg.measures.len());
        }
    }

    /// Clears the update marks (a batch whose changes are not emitted).
    pub(super) fn clear_changed(&mut self) {
        for &slot in &self.changed {
            if self.groups.is_live(slot) {
                let g = self.groups.get_mut(slot);
                g.changed = false;
                g.panes.iter_mut().chain(g.last.as_mut()).for_each(|p| p.dirty = false);
            }
        }
        self.changed.clear();
    }
}

/// Whether the pane at `start` holds `t` (`grid.pane_start(t) == start`, without a division).
#[inline(always)]
fn pane_holds(grid: PaneGrid, start: i64, t: i64) -> bool {
    t >= start
        && (t.wrapping_sub(start) as u64) < grid.pane() as u64
        // the pane saturated at the start of time is shorter than the others
        && (start != i64::MIN || grid.pane_start(t) == i64::MIN)
}

/// Pushes the window ends from `first` to `last` (inclusive) onto `ends`; returns the end after
/// the last pushed (`first` when none was; `None` past the end of time).
fn push_ends(grid: PaneGrid, first: i64, last: i64, ends: &mut Vec<i64>) -> Option<i64> {
    let mut e = Some(first);
    while let Some(x) = e.filter(|&x| x <= last) {
        ends.push(x);
        e = grid.next_end(x);
    }
    e
}

impl Group {
    /// Moves the parked last pane (and its states) back into `panes` (before a structural
    /// change); `m` is the number of measures.
    #[inline]
    fn unpark(&mut self, m: usize) {
        self.hot.unpark_last(&mut self.last, &mut self.panes, &mut self.states, m);
    }

    /// Parks the last pane and its states (the group at rest).
    #[inline]
    fn park(&mut self, m: usize) {
        self.hot.park_last(&mut self.last, &mut self.panes, &mut self.states, m);
    }

    /// Adds `record` to the parked last pane (the group at rest, with a last pane): inline
    /// when its states are, else (or when a measure declines the compact form) in the vector.
    #[inline]
    fn update_last(&mut self, measures: &[AggregateFn], record: &Record) {
        let panes = &self.panes;
        self.hot.update_last(&mut self.states, || panes.len(), measures, record);
    }

    /// Adds `record` to the parked last pane from measure `k` on, whose inline state declined
    /// it ([`Hot::update_ops`]; 0: the states are not inline): the states go back to the vector
    /// (when inline) and take it there.
    #[cold]
    #[inline(never)]
    fn update_last_from(&mut self, k: usize, measures: &[AggregateFn], record: &Record) {
        let m = measures.len();
        self.hot.unpark(&mut self.states, m);
        let i = self.panes.len();
        update_states(&measures[k..], &mut self.states[i * m + k..(i + 1) * m], record);
    }

    /// Adds `record` to pane `i` (in start order) of the group at rest.
    fn update_pane(&mut self, i: usize, measures: &[AggregateFn], record: &Record) {
        let m = measures.len();
        if self.hot.used() && i == self.panes.len() {
            self.update_last(measures, record);
        } else {
            update_states(measures, &mut self.states[i * m..(i + 1) * m], record);
        }
    }

    /// The states of pane `i` (in start order) of `m` measures, the group at rest.
    fn states_at(&self, i: usize, m: usize) -> Cow<'_, [AggState]> {
        if self.hot.used() && i == self.panes.len() {
            Cow::Owned(self.hot.full(m))
        } else {
            Cow::Borrowed(&self.states[i * m..(i + 1) * m])
        }
    }

    /// A new group in a (possibly reused) slot: no panes, keeping the buffers' capacity.
    fn reset(&mut self) {
        self.last = None;
        self.hot.clear();
        self.closed = i64::MIN;
        self.due = i64::MAX;
        self.panes.clear();
        self.states.clear();
        self.changed = false;
    }
}
