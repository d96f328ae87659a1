//! Window aggregates (SEMANTICS.md "Watermark" and "Windowed aggregation"), brute force.
//!
//! Micro-batch (as Spark 4.3): `W_N` (eviction in batch N) = max event time over batches < N,
//! minus the delay. A record of batch N is late for a window whose end <= `W_{N-1}` (the previous
//! batch's watermark) in `update` and `append` alike, never in `complete`. (The lead's first brief
//! said `append` judges against `W_N`; Spark's own output in the shared case
//! `tumbling-append-late` and the project case `session-late-boundary-append` shows `W_{N-1}`:
//! a record for a window that the batch finalises still counts in it.) `update` emits every
//! window that received a record in the batch, then evicts windows with end <= `W_N`; `append`
//! emits and evicts windows with end <= `W_N`; `complete` emits every window and evicts nothing.
//! After the last input batch, a no-data batch runs when W moved in it (`W_n > W_{n-1}`), with a
//! watermark and not in `complete` mode.
//!
//! Real-time: per record, `W_before` = max(event times of earlier records) - delay; late for a
//! window when its end <= `W_before`; `update` emits one row per window the record changed; then
//! `W_after = max(W_before, t - delay)` evicts windows with end <= `W_after` (`append` emits them).
//!
//! Without a window, W only matters when the event-time column is a grouping column (as Spark):
//! the key's event time then plays the role of the window's end.
//!
//! Sessions: a record spans `[t, t + gap)`; live spans of one key that overlap or touch merge. A
//! record is late when `t + gap <= W_{N-1}` (micro-batch, as `session-late-boundary-append`
//! shows) or `t + gap <= W_before` (real-time). A session evicted by W is gone: a later record
//! that overlaps its span starts a new session (the same case shows it: `[26, 31)` after
//! `[20, 27)` was emitted).

use eddy_engine::{Record, Timestamp, Value};

use super::agg::{Agg, eval_all};
use super::{at_or_below, key_of, time_of, watermark_before_batch};

/// The window of a reference query (µs).
#[derive(Clone, Debug, PartialEq)]
pub enum WindowSpec {
    /// A grouped aggregation over the whole stream.
    None,
    /// `window(col, size, slide, offset)`; tumbling when `slide == size`.
    Fixed {
        /// Window length.
        size: i64,
        /// Distance between starts.
        slide: i64,
        /// Start offset from the epoch.
        offset: i64,
    },
    /// `session_window(col, gap)`.
    Session {
        /// The gap (ignored with `gap_col`).
        gap: i64,
        /// A STRING column holding each record's gap as `"<n> seconds"`; a null, zero or negative
        /// gap drops the record.
        gap_col: Option<usize>,
    },
}

/// Output modes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Emit {
    /// Once, when W passes the window's end.
    Append,
    /// Every changed window.
    Update,
    /// Everything, every batch.
    Complete,
}

/// A reference window-aggregate query. The watermark, if any, is on `time_col`.
#[derive(Clone, Debug)]
pub struct WindowQuery {
    /// Event-time column.
    pub time_col: usize,
    /// `group_by` columns.
    pub key_cols: Vec<usize>,
    /// The window.
    pub window: WindowSpec,
    /// Output mode.
    pub emit: Emit,
    /// Measures in output order.
    pub measures: Vec<Agg>,
    /// Watermark delay (µs), if there is a watermark.
    pub delay: Option<i64>,
}

/// Every fixed window `[s, s + size)` with `s ≡ offset (mod slide)` that contains `t`, by start.
pub fn fixed_windows(t: i64, size: i64, slide: i64, offset: i64) -> Vec<(i64, i64)> {
    let last_start = t - (t - offset).rem_euclid(slide);
    let mut out = Vec::new();
    let mut s = last_start;
    while s + size > t {
        out.push((s, s + size));
        s -= slide;
    }
    out.reverse();
    out
}

/// One group of state: window (None without a window), key, the records it aggregates.
#[derive(Debug)]
struct Group {
    window: Option<(i64, i64)>,
    /// The instant at which W finalises the group: the window's end, or without a window the
    /// event time when the event-time column is a grouping column (as Spark).
    expiry: Option<i64>,
    key: Vec<Value>,
    records: Vec<Record>,
    evicted: bool,
}

impl WindowQuery {
    fn row(&self, window: Option<(i64, i64)>, key: &[Value], records: &[Record]) -> Vec<Value> {
        let mut row = Vec::new();
        if let Some((s, e)) = window {
            row.push(Value::Window { start: Timestamp(s), end: Timestamp(e) });
        }
        row.extend(key.iter().cloned());
        let refs: Vec<&Record> = records.iter().collect();
        row.extend(eval_all(&self.measures, &refs));
        row
    }

    /// The windows of `r` (a single `None` without a window). Not for sessions.
    fn windows(&self, r: &Record) -> Vec<Option<(i64, i64)>> {
        match self.window {
            WindowSpec::None => vec![None],
            WindowSpec::Fixed { size, slide, offset } => {
                fixed_windows(time_of(r, self.time_col), size, slide, offset).into_iter().map(Some).collect()
            }
            WindowSpec::Session { .. } => unreachable!("sessions are computed from spans"),
        }
    }

    /// When W finalises the group of `r` in `window` (None: never).
    fn expiry(&self, window: Option<(i64, i64)>, r: &Record) -> Option<i64> {
        match window {
            Some((_, end)) => Some(end),
            None if self.key_cols.contains(&self.time_col) => Some(time_of(r, self.time_col)),
            None => None,
        }
    }

    /// Adds `r` to the group of `window` and its key; returns the group's index.
    fn add(&self, groups: &mut Vec<Group>, window: Option<(i64, i64)>, r: &Record) -> usize {
        let key = key_of(r, &self.key_cols);
        if let Some(i) = groups.iter().position(|g| g.window == window && g.key == key) {
            assert!(!groups[i].evicted, "reference: a record reached an evicted window {window:?}");
            groups[i].records.push(r.clone());
            return i;
        }
        groups.push(Group { window, expiry: self.expiry(window, r), key, records: vec![r.clone()], evicted: false });
        groups.len() - 1
    }

    fn is_session(&self) -> bool {
        matches!(self.window, WindowSpec::Session { .. })
    }

    /// Micro-batch output: `(batch id, rows)` for every batch that ran (input batches, then the
    /// no-data batch if due), empty batches included.
    pub fn micro_batch(&self, batches: &[Vec<Record>]) -> Vec<(u64, Vec<Vec<Value>>)> {
        let n = batches.len();
        let wm = |b: usize| watermark_before_batch(batches, b, self.time_col, self.delay);
        let moved = n > 0 && wm(n) > wm(n - 1);
        let no_data = self.delay.is_some() && self.emit != Emit::Complete && moved;
        let total = if no_data { n + 1 } else { n };
        let mut groups: Vec<Group> = Vec::new();
        // Sessions: the live (not evicted) records of each key.
        let mut live: Vec<(Vec<Value>, Vec<Record>)> = Vec::new();
        let mut out = Vec::new();
        for b in 0..total {
            let input: &[Record] = batches.get(b).map_or(&[], |v| v);
            let w_evict = wm(b);
            let w_late = match self.emit {
                Emit::Update | Emit::Append if b > 0 => wm(b - 1),
                _ => None,
            };
            let rows = if self.is_session() {
                self.session_batch(&mut live, input, w_late, w_evict)
            } else {
                let mut changed: Vec<usize> = Vec::new();
                for r in input {
                    for w in self.windows(r) {
                        if self.expiry(w, r).is_some_and(|e| at_or_below(e, w_late)) {
                            continue;
                        }
                        let i = self.add(&mut groups, w, r);
                        if !changed.contains(&i) {
                            changed.push(i);
                        }
                    }
                }
                let finalised = |g: &Group| g.expiry.is_some_and(|e| at_or_below(e, w_evict));
                let rows: Vec<Vec<Value>> = match self.emit {
                    Emit::Update => {
                        changed.iter().map(|&i| &groups[i]).map(|g| self.row(g.window, &g.key, &g.records)).collect()
                    }
                    Emit::Complete => groups.iter().map(|g| self.row(g.window, &g.key, &g.records)).collect(),
                    Emit::Append => groups
                        .iter()
                        .filter(|g| !g.evicted && finalised(g))
                        .map(|g| self.row(g.window, &g.key, &g.records))
                        .collect(),
                };
                if self.emit != Emit::Complete {
                    for g in groups.iter_mut().filter(|g| finalised(g)) {
                        g.evicted = true;
                    }
                }
                rows
            };
            out.push((b as u64, rows));
        }
        out
    }

    /// The gap (µs) of `r`, `None` when its gap column makes it invalid (dropped).
    fn gap_of(&self, r: &Record) -> Option<i64> {
        let WindowSpec::Session { gap, gap_col } = self.window else { unreachable!("sessions only") };
        let Some(c) = gap_col else { return Some(gap) };
        let secs: i64 = r.values[c].as_str()?.strip_suffix(" seconds")?.parse().ok()?;
        (secs > 0).then_some(secs * 1_000_000)
    }

    /// The sessions of one key's live records: `(start, end, indexes into records)`.
    fn sessions(&self, records: &[Record]) -> Vec<(i64, i64, Vec<usize>)> {
        let mut idx: Vec<usize> = (0..records.len()).collect();
        idx.sort_by_key(|&i| time_of(&records[i], self.time_col));
        let mut out: Vec<(i64, i64, Vec<usize>)> = Vec::new();
        for i in idx {
            let t = time_of(&records[i], self.time_col);
            let gap = self.gap_of(&records[i]).expect("live records have a valid gap");
            match out.last_mut() {
                // Sorted by start: the span overlaps or touches the last session iff t <= its end.
                Some(last) if t <= last.1 => {
                    last.1 = last.1.max(t + gap);
                    last.2.push(i);
                }
                _ => out.push((t, t + gap, vec![i])),
            }
        }
        out
    }

    /// One micro-batch of session windows (append or complete).
    fn session_batch(
        &self,
        live: &mut Vec<(Vec<Value>, Vec<Record>)>,
        input: &[Record],
        w_late: Option<i64>,
        w_evict: Option<i64>,
    ) -> Vec<Vec<Value>> {
        for r in input {
            let Some(gap) = self.gap_of(r) else { continue };
            if at_or_below(time_of(r, self.time_col) + gap, w_late) {
                continue;
            }
            push_live(live, key_of(r, &self.key_cols), r);
        }
        self.emit_sessions(live, w_evict, self.emit == Emit::Complete)
    }

    /// Emits sessions: all of them (`all`), or those with end <= `w` (then evicted).
    fn emit_sessions(&self, live: &mut [(Vec<Value>, Vec<Record>)], w: Option<i64>, all: bool) -> Vec<Vec<Value>> {
        let mut rows = Vec::new();
        for (key, records) in live.iter_mut() {
            let mut evict: Vec<usize> = Vec::new();
            for (s, e, members) in self.sessions(records) {
                let done = at_or_below(e, w);
                if all || done {
                    let rs: Vec<Record> = members.iter().map(|&i| records[i].clone()).collect();
                    rows.push(self.row(Some((s, e)), key, &rs));
                }
                if done && !all {
                    evict.extend(members);
                }
            }
            let mut i = 0;
            records.retain(|_| {
                i += 1;
                !evict.contains(&(i - 1))
            });
        }
        rows
    }

    /// Real-time output: the rows of each record's step, in input order.
    pub fn real_time(&self, records: &[Record]) -> Vec<Vec<Vec<Value>>> {
        let mut groups: Vec<Group> = Vec::new();
        let mut live: Vec<(Vec<Value>, Vec<Record>)> = Vec::new();
        let mut max_t: Option<i64> = None;
        let mut out = Vec::new();
        for r in records {
            let t = time_of(r, self.time_col);
            let w_before = self.delay.and_then(|d| max_t.map(|m| m - d));
            max_t = Some(max_t.map_or(t, |m| m.max(t)));
            let w_after = self.delay.and_then(|d| max_t.map(|m| m - d));
            let mut rows = Vec::new();
            if self.is_session() {
                if let Some(gap) = self.gap_of(r)
                    && !at_or_below(t + gap, w_before)
                {
                    push_live(&mut live, key_of(r, &self.key_cols), r);
                }
                rows.extend(self.emit_sessions(&mut live, w_after, false));
                out.push(rows);
                continue;
            }
            for w in self.windows(r) {
                if self.expiry(w, r).is_some_and(|e| at_or_below(e, w_before)) {
                    continue;
                }
                let i = self.add(&mut groups, w, r);
                if self.emit == Emit::Update {
                    let g = &groups[i];
                    rows.push(self.row(g.window, &g.key, &g.records));
                }
            }
            for g in groups.iter_mut().filter(|g| !g.evicted) {
                if g.expiry.is_some_and(|e| at_or_below(e, w_after)) {
                    if self.emit == Emit::Append {
                        rows.push(self.row(g.window, &g.key, &g.records));
                    }
                    g.evicted = true;
                }
            }
            out.push(rows);
        }
        out
    }
}

fn push_live(live: &mut Vec<(Vec<Value>, Vec<Record>)>, key: Vec<Value>, r: &Record) {
    match live.iter_mut().find(|(k, _)| *k == key) {
        Some((_, v)) => v.push(r.clone()),
        None => live.push((key, vec![r.clone()])),
    }
}
