//! Session windows (Spark's `session_window(col, gap)`, SPARK-10816): each record spans
//! `[t, t + gap)`; spans of one key that overlap or touch merge; a session is
//! `[min t, max(t + gap))`. The gap is fixed, or read per record from a STRING column holding a
//! Spark duration (a null, unparsable, zero or negative gap drops the record).
//!
//! Output modes: `append` (a session is emitted once W >= its end) and `complete`; `update` is
//! refused by validation, as Spark refuses it.
//!
//! State: per group (interned, see `window_aggregate/groups.rs`) a short vector of sessions
//! sorted by start (disjoint and not touching, so their ends are sorted too) with their measure
//! states in one flat vector. A record inside the last session only moves its end: no
//! allocation, no index update. The expiry heap holds `(due, slot)` with `due <= ` the group's
//! earliest session end: sessions only grow, so the entry stays valid until it surfaces, and is
//! then re-registered at the current earliest end (or the group is dropped).

use std::borrow::Cow;
use std::cmp::Reverse;
use std::collections::BinaryHeap;

use super::window_aggregate::groups::{Groups, HOT_BYTES};
use super::window_aggregate::hot::Hot;
use super::window_aggregate::{WindowAggregateConfig, measure_input};
use super::{Output, Rejected};
use crate::aggregate::{AggState, AggregateFn};
use crate::time::{Duration, Timestamp, parse_duration};
use crate::value::{GroupKey, Record, Row, Value};

/// The gap of session windows.
#[derive(Clone, Debug, PartialEq)]
pub enum SessionGap {
    /// The same gap for every record (> 0).
    Fixed(Duration),
    /// Read per record from this STRING column (a Spark duration such as `"10 seconds"`).
    Column(usize),
}

impl SessionGap {
    /// The gap for `record`; `None` when null, unparsable, zero or negative.
    #[inline]
    pub fn of(&self, record: &Record) -> Option<Duration> {
        let d = match self {
            SessionGap::Fixed(d) => *d,
            SessionGap::Column(i) => parse_duration(record.values[*i].as_str()?).ok()?,
        };
        (d.0 > 0).then_some(d)
    }
}

#[derive(Clone, Copy, Debug)]
struct Span {
    start: i64,
    end: i64,
}

/// A group's sessions. At rest the last session (the one a record usually extends) is parked
/// in `last`, beside the states, and `sessions` holds the others: the per-record path reads only
/// the group's slot and its states. Structural changes unpark it first.
#[derive(Debug)]
#[repr(C)]
pub(crate) struct SessionGroup {
    last: Option<Span>,
    /// The parked last session's states, when few enough to live here.
    hot: Hot,
    /// `measures` states per session, session after session (the last session's at the end).
    states: Vec<AggState>,
    due: i64,
    sessions: Vec<Span>,
}

// The per-record path reads the parked last session and its inline states: within the bytes
// the prefetch loads.
const _: () = assert!(
    Groups::<SessionGroup>::DATA_OFFSET + std::mem::offset_of!(SessionGroup, hot) + std::mem::size_of::<Hot>()
        <= HOT_BYTES
        && std::mem::offset_of!(SessionGroup, last) < std::mem::offset_of!(SessionGroup, hot)
);

impl Default for SessionGroup {
    fn default() -> SessionGroup {
        SessionGroup { last: None, hot: Hot::default(), states: Vec::new(), due: i64::MAX, sessions: Vec::new() }
    }
}

impl SessionGroup {
    /// A new group in a (possibly reused) slot, keeping the buffers' capacity.
    fn reset(&mut self) {
        self.last = None;
        self.hot.clear();
        self.due = i64::MAX;
        self.sessions.clear();
        self.states.clear();
    }

    /// Moves the parked last session (and its states) back into `sessions`; `m` is the number
    /// of measures.
    #[inline]
    fn unpark(&mut self, m: usize) {
        self.hot.unpark_last(&mut self.last, &mut self.sessions, &mut self.states, m);
    }

    /// Parks the last session and its states (the group at rest).
    #[inline]
    fn park(&mut self, m: usize) {
        self.hot.park_last(&mut self.last, &mut self.sessions, &mut self.states, m);
    }

    /// Adds `record` to session `i` (in start order) of the group at rest.
    fn update(&mut self, i: usize, measures: &[AggregateFn], record: &Record) {
        if i == self.sessions.len() {
            self.update_last(measures, record);
        } else {
            let m = measures.len();
            for (f, st) in measures.iter().zip(&mut self.states[i * m..(i + 1) * m]) {
                f.update(st, measure_input(f, record));
            }
        }
    }

    /// Adds `record` to the parked last session (the group at rest, with a last session).
    #[inline]
    fn update_last(&mut self, measures: &[AggregateFn], record: &Record) {
        let sessions = &self.sessions;
        self.hot.update_last(&mut self.states, || sessions.len(), measures, record);
    }

    /// The first integer sum among `sums` (indexes into `measures`) that `record`, spanning
    /// `[start, end]`, would take out of BIGINT in the session it forms with every session of
    /// the group (at rest) it overlaps or touches ([`AggregateFn::sum_fits`]).
    #[inline(never)]
    fn overflow(
        &self,
        start: i64,
        end: i64,
        record: &Record,
        measures: &[AggregateFn],
        sums: &[usize],
    ) -> Option<usize> {
        let m = measures.len();
        // With an integer sum the states are never inline (a long sum has no compact form).
        debug_assert!(!self.hot.used());
        sums.iter().copied().find(|&j| {
            let f = &measures[j];
            let touched = self.all().enumerate().filter(|(_, s)| s.end >= start && s.start <= end);
            !f.sum_fits(touched.map(|(k, _)| &self.states[k * m + j]), measure_input(f, record))
        })
    }

    /// The states of session `i` (in start order) of `m` measures, the group at rest.
    fn states_at(&self, i: usize, m: usize) -> Cow<'_, [AggState]> {
        if self.hot.used() && i == self.sessions.len() {
            Cow::Owned(self.hot.full(m))
        } else {
            Cow::Borrowed(&self.states[i * m..(i + 1) * m])
        }
    }

    /// Every session, in start order (the group at rest).
    fn all(&self) -> impl Iterator<Item = &Span> {
        self.sessions.iter().chain(self.last.as_ref())
    }
}

/// The open sessions of every key, and the expiry heap.
#[derive(Debug, Default)]
pub(crate) struct SessionState {
    groups: Groups<SessionGroup>,
    heap: BinaryHeap<Reverse<(i64, u32)>>,
    count: usize,
}

/// One session in a snapshot: start, end, serialised measure states.
type SessionRow = (Timestamp, Timestamp, Vec<Vec<u8>>);

/// The sessions of one group in a snapshot.
pub(crate) type SessionGroupSnapshot = (GroupKey, Vec<SessionRow>);

fn row(key: &GroupKey, s: Span, measures: &[AggregateFn], states: &[AggState]) -> Row {
    let mut row = Vec::with_capacity(1 + key.0.len() + measures.len());
    row.push(Value::Window { start: Timestamp(s.start), end: Timestamp(s.end) });
    row.extend(key.values().cloned());
    row.extend(measures.iter().zip(states).map(|(m, a)| m.finish(a)));
    row
}

impl SessionState {
    /// Number of open sessions.
    pub(crate) fn len(&self) -> usize {
        self.count
    }

    /// Whether prefetching the groups pays ([`Groups::prefetch_pays`]).
    pub(crate) fn prefetch_pays(&self) -> bool {
        self.groups.prefetch_pays()
    }

    /// Starts loading the slot of `record`'s group ([`Groups::prefetch`]). Out of line: the
    /// operator's prefetch would hold the sessions' and the panes' inlined together, each
    /// saving the registers of both.
    #[inline(never)]
    pub(crate) fn prefetch(&self, record: &Record, cols: &[usize]) {
        self.groups.prefetch_record(record, cols);
    }

    /// Adds a record spanning `[t, end)` to the sessions of its group, merging every session it
    /// overlaps or touches. `sums` are the indexes of the integer sums among the measures: a
    /// record that would take one of them out of BIGINT in its (merged) session is refused whole
    /// into `out.rejected`, and no session changes.
    #[inline]
    pub(crate) fn add(
        &mut self,
        record: &Record,
        t: Timestamp,
        end: Timestamp,
        cfg: &WindowAggregateConfig,
        sums: &[usize],
        out: &mut Output,
    ) {
        let (t, end) = (t.0, end.0);
        let cols = &cfg.key_columns[..];
        let (slot, new) = self.groups.find_or_insert_prefetched(record, cols);
        if new {
            // (a new group holds no sum a single value could take out of BIGINT)
            return self.start_group(slot, record, t, end, cfg);
        }
        if !sums.is_empty()
            && let Some(j) = self.groups.get(slot).overflow(t, end, record, &cfg.measures, sums)
        {
            out.rejected.push(Rejected::overflow(record, &cfg.measures[j]));
            return;
        }
        let g = self.groups.get_mut(slot);
        match g.last.as_mut() {
            // the common case: inside the last session
            Some(last) if last.start <= t && t <= last.end => {
                last.end = last.end.max(end);
                g.update_last(&cfg.measures, record);
            }
            _ => {
                let i = self.merge_span(slot, t, end, &cfg.measures);
                self.groups.get_mut(slot).update(i, &cfg.measures, record);
            }
        }
    }

    /// The first session of a new group (in `slot`), spanning `[t, end)` with `record`: parked,
    /// without the group's vectors.
    #[cold]
    #[inline(never)]
    fn start_group(&mut self, slot: u32, record: &Record, t: i64, end: i64, cfg: &WindowAggregateConfig) {
        let g = self.groups.get_mut(slot);
        g.reset();
        g.last = Some(Span { start: t, end });
        g.hot.start(&mut g.states, &cfg.measures);
        g.due = end;
        g.update_last(&cfg.measures, record);
        self.count += 1;
        self.heap.push(Reverse((end, slot)));
    }

    /// Merges `[start, end)` into the group's sessions (a new session with empty states when it
    /// touches none); returns the index of the session holding it.
    #[cold]
    fn merge_span(&mut self, slot: u32, start: i64, end: i64, measures: &[AggregateFn]) -> usize {
        let m = measures.len();
        let g = self.groups.get_mut(slot);
        g.unpark(m);
        // sessions i..j overlap or touch [start, end]: ends and starts are both sorted
        let i = g.sessions.partition_point(|s| s.end < start);
        let j = i + g.sessions[i..].partition_point(|s| s.start <= end);
        if i == j {
            g.sessions.insert(i, Span { start, end });
            g.states.splice(i * m..i * m, measures.iter().map(AggregateFn::new_state));
            self.count += 1;
            if end < g.due {
                g.due = end;
                self.heap.push(Reverse((end, slot)));
            }
            g.park(m);
            return i;
        }
        let merged = Span { start: start.min(g.sessions[i].start), end: end.max(g.sessions[j - 1].end) };
        g.sessions[i] = merged;
        let (head, tail) = g.states.split_at_mut((i + 1) * m);
        let acc = &mut head[i * m..];
        for k in 0..(j - i - 1) {
            for ((f, a), b) in measures.iter().zip(acc.iter_mut()).zip(&tail[k * m..(k + 1) * m]) {
                f.merge(a, b);
            }
        }
        g.sessions.drain(i + 1..j);
        g.states.drain((i + 1) * m..j * m);
        g.park(m);
        self.count -= j - i - 1;
        i
    }

    /// The earliest instant registered in the expiry heap (`i64::MAX`: none); nothing is due
    /// before it.
    #[inline]
    pub(crate) fn next_due(&self) -> i64 {
        self.heap.peek().map_or(i64::MAX, |r| r.0.0)
    }

    /// Removes sessions with end <= `w`, emitting them when `emit`.
    pub(crate) fn evict(&mut self, w: Timestamp, emit: bool, cfg: &WindowAggregateConfig, out: &mut Output) {
        let w = w.0;
        let m = cfg.measures.len();
        while let Some(&Reverse((due, slot))) = self.heap.peek() {
            if due > w {
                break;
            }
            self.heap.pop();
            if let Some(&Reverse((_, next))) = self.heap.peek() {
                // the next entry's slot loads while this one is handled (or until it is due)
                self.groups.prefetch_slot(next);
            }
            if !self.groups.is_live(slot) || self.groups.get(slot).due != due {
                continue; // stale entry
            }
            let (key, g) = self.groups.key_and_data_mut(slot);
            g.due = i64::MAX;
            if g.sessions.is_empty()
                && let Some(last) = g.last
            {
                // One session, parked: handled in the slot, without the group's vectors.
                if last.end > w {
                    g.due = last.end;
                    self.heap.push(Reverse((last.end, slot)));
                    continue;
                }
                if emit {
                    out.rows.push(row(key, last, &cfg.measures, &g.states_at(0, m)));
                }
                g.last = None;
                g.hot.clear();
                g.states.clear();
                self.count -= 1;
                self.groups.remove(slot);
                continue;
            }
            g.unpark(m);
            let k = g.sessions.partition_point(|s| s.end <= w);
            if emit {
                for (i, s) in g.sessions[..k].iter().enumerate() {
                    out.rows.push(row(key, *s, &cfg.measures, &g.states[i * m..(i + 1) * m]));
                }
            }
            g.sessions.drain(..k);
            g.states.drain(..k * m);
            self.count -= k;
            let first_end = g.sessions.first().map(|s| s.end);
            g.park(m);
            match first_end {
                None => self.groups.remove(slot),
                Some(end) => {
                    g.due = end;
                    self.heap.push(Reverse((end, slot)));
                }
            }
        }
    }

    /// Emits every open session (complete mode), by key, then start.
    pub(crate) fn emit_all(&self, cfg: &WindowAggregateConfig, out: &mut Output) {
        let m = cfg.measures.len();
        for slot in self.groups.sorted_slots() {
            let g = self.groups.get(slot);
            for (i, s) in g.all().enumerate() {
                out.rows.push(row(self.groups.key(slot), *s, &cfg.measures, &g.states_at(i, m)));
            }
        }
    }

    /// Every session, by key.
    pub(crate) fn snapshot(&self, cfg: &WindowAggregateConfig) -> Vec<SessionGroupSnapshot> {
        let m = cfg.measures.len();
        self.groups
            .sorted_slots()
            .into_iter()
            .map(|slot| {
                let g = self.groups.get(slot);
                let rows = g
                    .all()
                    .enumerate()
                    .map(|(i, s)| {
                        let states = g.states_at(i, m).iter().map(AggState::to_bytes).collect();
                        (Timestamp(s.start), Timestamp(s.end), states)
                    })
                    .collect();
                (self.groups.key(slot).clone(), rows)
            })
            .collect()
    }

    /// Adds a snapshot's sessions (a group already here has them merged in, as records would).
    ///
    /// # Errors
    /// A message when a session does not fit the query (measure count, state bytes, bounds).
    pub(crate) fn restore(
        &mut self,
        groups: Vec<SessionGroupSnapshot>,
        cfg: &WindowAggregateConfig,
    ) -> Result<(), String> {
        let m = cfg.measures.len();
        for (key, list) in groups {
            let mut sessions = Vec::with_capacity(list.len());
            for (start, end, bytes) in list {
                if bytes.len() != m {
                    return Err(format!("{} measures in the snapshot, {m} in the query", bytes.len()));
                }
                if start >= end {
                    return Err(format!("session [{}, {}) is empty", start.0, end.0));
                }
                let states = cfg
                    .measures
                    .iter()
                    .zip(&bytes)
                    .map(|(f, b)| f.state_from_bytes(b).map_err(|e| e.to_string()))
                    .collect::<Result<Vec<_>, _>>()?;
                sessions.push((start.0, end.0, states));
            }
            if sessions.is_empty() {
                continue;
            }
            let (slot, new) = self.groups.find_or_insert_key(key);
            if new {
                self.groups.get_mut(slot).reset();
            }
            for (start, end, states) in sessions {
                let i = self.merge_span(slot, start, end, &cfg.measures);
                let g = self.groups.get_mut(slot);
                g.unpark(m);
                for ((f, acc), st) in cfg.measures.iter().zip(&mut g.states[i * m..(i + 1) * m]).zip(&states) {
                    f.merge(acc, st);
                }
                g.park(m);
            }
        }
        Ok(())
    }

    /// Drops the sessions of every group for which `keep` is false.
    pub(crate) fn retain_groups(&mut self, keep: &mut dyn FnMut(&GroupKey) -> bool) {
        let slots: Vec<u32> = self.groups.live_slots().collect();
        for slot in slots {
            if !keep(self.groups.key(slot)) {
                let g = self.groups.get_mut(slot);
                self.count -= g.sessions.len() + usize::from(g.last.is_some());
                g.reset();
                self.groups.remove(slot);
            }
        }
    }
}
