//! Stream-stream join: two inputs joined on equal keys within a time range, SEMANTICS.md
//! "Joins" (stream-stream), as Spark's `StreamingSymmetricHashJoinExec`.
//!
//! Both inputs are routed by the join key, so the rows that can match meet in one partition
//! actor; each input's rows are kept per key until the watermark guarantees that no future row
//! of the other input can match them. With a time range `right.ts - left.ts ∈ [lower, upper]`
//! (`r.ts BETWEEN l.ts AND l.ts + d` is `[0, d]`; a strict bound is the inclusive one moved by
//! 1 µs) and watermark W (the combined watermark of the inputs, given by the caller), future
//! rows of either input have an event time of at least W, so:
//! - a left row at `t` can still match while `t + upper >= W`; a right row at `t` while
//!   `t - lower >= W`. Past that it is evicted ([`StreamJoin::evict`]). An input row whose
//!   watermarked column is at or before the late watermark is late (to `out.late`), as Spark's
//!   symmetric hash join drops such rows before joining them (the oracle cases
//!   `sql-stream-join-*` pin this and the eviction instant); a row not late but already past its
//!   last match meets the rows kept now and is evicted at once (real-time) or at the end of the
//!   batch (micro-batch);
//! - inner: a row for each pair as soon as the later of the two arrives;
//! - left / right / full outer: matched pairs as for inner; a row of the preserved input that
//!   matched nothing, padded with NULLs for the other input, when it is evicted, i.e. in the
//!   first micro-batch (real-time: at the first watermark) where W > t + upper (left) or
//!   W > t - lower (right), never earlier;
//! - left semi: a left row once, as soon as a right row matches it;
//! - a key with a NULL part matches nothing (SQL equality); on a preserved input it still gives
//!   its NULL-padded row when evicted.
//!
//! Without a time range nothing is evicted and nothing is late: the state of an inner join grows
//! without bound (the planner warns; outer and semi joins require a range, as Spark).
//!
//! Micro-batch: late input is judged against the batch's late watermark (batch N-1's), eviction
//! runs at the end of the batch with its eviction watermark. Real-time: each row is judged
//! against W as it stood when it arrived, and [`Operator::advance_watermark`] evicts. Output rows
//! are the left input's columns then the right input's ([`StreamJoinConfig::columns`] of each).
//!
//! A planned join ([`crate::spec::StreamJoinSpec`]) reads both inputs as one wide record (keys,
//! side marker, both sides' columns) through [`Operator::on_record`]; its state size
//! ([`Operator::state_len`]) is the number of rows kept.

use hashbrown::HashMap;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, VecDeque};

use super::{BatchContext, Mode, Operator, Output, StateError};
use crate::time::{Duration, Timestamp};
use crate::value::{GroupKey, Record, Value};

/// The join types of a stream-stream join (SEMANTICS.md "Joins"; left anti is refused there).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StreamJoinType {
    /// Matched pairs only.
    Inner,
    /// Every left row: matched, or once with NULLs for the right input.
    LeftOuter,
    /// Every right row: matched, or once with NULLs for the left input.
    RightOuter,
    /// Both of the above.
    FullOuter,
    /// The left rows that match at least one right row, each once, left columns only.
    LeftSemi,
}

impl StreamJoinType {
    /// Whether the unmatched rows of input `side` (0 left, 1 right) are emitted.
    pub fn preserves(self, side: usize) -> bool {
        matches!(
            (self, side),
            (StreamJoinType::LeftOuter | StreamJoinType::FullOuter, 0)
                | (StreamJoinType::RightOuter | StreamJoinType::FullOuter, 1)
        )
    }
}

/// The time range of a join: a right row at `r` matches a left row at `l` when
/// `lower <= r - l <= upper` (µs; `lower <= upper`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TimeRange {
    /// Least `r - l`.
    pub lower: Duration,
    /// Greatest `r - l`.
    pub upper: Duration,
}

impl TimeRange {
    /// How far behind its input watermark W a join with this range holds the watermark it
    /// forwards to the operator after it (µs, >= 0): no output row of the join is then late for
    /// that operator (SEMANTICS.md "Joins": the watermark after a join is delayed by the range).
    ///
    /// As Spark 3.5+ (SPARK-42376, `StreamingSymmetricHashJoinExec.produceOutputWatermark`):
    /// the forwarded watermark is the least of W and each input's state watermark, the instant
    /// at or before which that input's kept rows can no longer match, derived from the ON
    /// condition: `W - upper - 1 ms` for the left input (from `r <= l + upper`) and
    /// `W + lower - 1 ms` for the right one (from `r >= l + lower`); Spark counts state
    /// watermarks in milliseconds and moves a bound written with `<=` / `>=` by one; an open
    /// side (no such bound: `i64::MAX` / `i64::MIN` here) has no state watermark. So the delay
    /// is `max(0, upper + 1 ms, 1 ms - lower)` over the bounds that are not open. Named
    /// difference: a strict bound (`<`, `>`), which this range holds as the inclusive one moved
    /// by 1 µs, is delayed by 999 µs more than Spark's (which does not move a strict bound).
    pub fn forwarded_watermark_delay(self) -> Duration {
        const MS: i64 = 1_000;
        let left = (self.upper.0 < i64::MAX).then(|| self.upper.0.saturating_add(MS));
        let right = (self.lower.0 > i64::MIN).then(|| MS.saturating_sub(self.lower.0));
        Duration(left.into_iter().chain(right).fold(0, i64::max))
    }
}

/// Configuration of a [`StreamJoin`]. Index 0 is the left input, 1 the right.
#[derive(Clone, Debug)]
pub struct StreamJoinConfig {
    /// Execution mode.
    pub mode: Mode,
    /// The join type.
    pub join_type: StreamJoinType,
    /// The key columns of each input, pairwise equal in a match (same count on both sides).
    pub keys: [Vec<usize>; 2],
    /// The columns of each input's records that its rows keep and emit (its record may hold
    /// other columns: a planned join reads one wide record per input, its keys first, then a
    /// marker of its input, then both inputs' columns, see [`StreamJoinConfig::side_column`]).
    pub columns: [std::ops::Range<usize>; 2],
    /// The event-time column of each input (the one the time range reads).
    pub times: [usize; 2],
    /// The column of each input whose watermark judges its records late (Spark drops an input
    /// row whose watermarked column is at or before the late watermark); `None`: that input has
    /// no watermark, none of its records is late.
    pub late_columns: [Option<usize>; 2],
    /// For [`Operator::on_record`]: the column (INT or BIGINT 0 or 1) telling which input a
    /// record is of; `None`: every record given there is of the left input.
    pub side_column: Option<usize>,
    /// The time range; `None`: none (inner joins only; nothing is ever evicted).
    pub range: Option<TimeRange>,
}

/// A row kept in the state.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
struct Kept {
    values: Vec<Value>,
    /// Its event time.
    time: Timestamp,
    /// Whether a row of the other input matched it.
    matched: bool,
}

/// The stream-stream join operator (see the module documentation).
#[derive(Debug)]
pub struct StreamJoin {
    cfg: StreamJoinConfig,
    /// Per key, the rows kept of each input.
    state: HashMap<GroupKey, [VecDeque<Kept>; 2]>,
    /// Per input, the keys holding rows by the instant after which W evicts them.
    expiry: [BTreeMap<Timestamp, Vec<GroupKey>>; 2],
    batch: Option<BatchContext>,
    watermark: Timestamp,
    rows: usize,
}

#[derive(Serialize, Deserialize)]
struct Snapshot {
    state: Vec<(GroupKey, [VecDeque<Kept>; 2])>,
    watermark: Timestamp,
}

impl StreamJoin {
    /// A new, empty join.
    ///
    /// # Panics
    /// If the two inputs have a different number of key columns (the planner pairs them).
    pub fn new(cfg: StreamJoinConfig) -> StreamJoin {
        assert_eq!(cfg.keys[0].len(), cfg.keys[1].len(), "a join pairs its key columns");
        StreamJoin {
            cfg,
            state: HashMap::new(),
            expiry: [BTreeMap::new(), BTreeMap::new()],
            batch: None,
            watermark: Timestamp::MIN,
            rows: 0,
        }
    }

    /// The last instant at which a row of input `side` at `t` can still be matched: past it (W
    /// greater), it is evicted. `None`: never (no time range).
    fn last_match(&self, side: usize, t: Timestamp) -> Option<Timestamp> {
        let r = self.cfg.range?;
        Some(if side == 0 { t.saturating_add(r.upper) } else { t.saturating_add(Duration(r.lower.0.saturating_neg())) })
    }

    /// A record of input `side` (0 left, 1 right): joined with the other input's rows of its
    /// key, then kept. In real-time mode `watermark` is W as it stood when the record arrived;
    /// in micro-batch mode it is ignored (the batch's watermarks apply).
    pub fn on_input(&mut self, side: usize, record: &Record, watermark: Timestamp, out: &mut Output) {
        let late_w = match self.cfg.mode {
            Mode::MicroBatch => self.batch.map_or(Timestamp::MIN, |b| b.watermarks.late),
            Mode::RealTime => {
                self.advance_watermark(watermark, out);
                self.watermark
            }
        };
        let side = side.min(1);
        let time = match record.values.get(self.cfg.times[side]).and_then(Value::as_timestamp) {
            Some(t) => t,
            // without a range the time is not read (the input may have no event-time column)
            None if self.cfg.range.is_none() => Timestamp::MIN,
            // the steps before the join refuse a NULL event time; a record without one matches
            // nothing
            None => return,
        };
        let last = self.last_match(side, time);
        if self.is_late(side, record, late_w) {
            out.late.push(record.clone());
            return;
        }
        let key = GroupKey::of(record, &self.cfg.keys[side]);
        let null_key = key.values().any(Value::is_null);
        let other = 1 - side;
        let mut matched = false;
        let jt = self.cfg.join_type;
        if !null_key && let Some(kept) = self.state.get_mut(&key) {
            let range = self.cfg.range;
            let width = self.cfg.columns[0].len() + self.cfg.columns[1].len();
            let own = &record.values[self.cfg.columns[side].clone()];
            // the other side's rows are in time order: only those whose time the range allows
            let window = match range {
                None => 0..kept[other].len(),
                Some(g) => {
                    // left at t: right rows in [t + lower, t + upper]; right at t: left rows in
                    // [t - upper, t - lower]
                    let (lo, hi) = if side == 0 {
                        (time.0.saturating_add(g.lower.0), time.0.saturating_add(g.upper.0))
                    } else {
                        (time.0.saturating_sub(g.upper.0), time.0.saturating_sub(g.lower.0))
                    };
                    let rows = &kept[other];
                    rows.partition_point(|k| k.time.0 < lo)..rows.partition_point(|k| k.time.0 <= hi)
                }
            };
            for o in kept[other].range_mut(window) {
                let (l, r) = if side == 0 { (time, o.time) } else { (o.time, time) };
                if range.is_some_and(|g| r.0.saturating_sub(l.0) < g.lower.0 || r.0.saturating_sub(l.0) > g.upper.0) {
                    continue;
                }
                match jt {
                    StreamJoinType::LeftSemi if side == 0 => {
                        matched = true;
                        break;
                    }
                    StreamJoinType::LeftSemi => {
                        if !o.matched {
                            out.rows.push(o.values.clone());
                        }
                    }
                    _ => {
                        let mut row = out.row_buffer(width);
                        if side == 0 {
                            row.extend(own.iter().cloned());
                            row.extend(o.values.iter().cloned());
                        } else {
                            row.extend(o.values.iter().cloned());
                            row.extend(own.iter().cloned());
                        }
                        out.rows.push(row);
                    }
                }
                o.matched = true;
                matched = true;
            }
            if jt == StreamJoinType::LeftSemi && side == 1 {
                // emitted once: the matched left rows are no longer needed
                let before = kept[0].len();
                kept[0].retain(|k| !k.matched);
                self.rows -= before - kept[0].len();
            }
        }
        let own = &record.values[self.cfg.columns[side].clone()];
        if jt == StreamJoinType::LeftSemi && side == 0 && matched {
            out.rows.push(own.to_vec());
            return;
        }
        if null_key && !jt.preserves(side) {
            return; // can neither match nor be emitted
        }
        let kept = Kept { values: own.to_vec(), time, matched };
        if let Some(l) = last {
            self.expiry[side].entry(l).or_default().push(key.clone());
        }
        let rows = &mut self.state.entry(key).or_default()[side];
        // in time order (arrival order among equal times): matching and eviction read ranges
        let at = rows.partition_point(|k| k.time <= time);
        rows.insert(at, kept);
        self.rows += 1;
        if self.cfg.mode == Mode::RealTime && last.is_some_and(|l| l < self.watermark) {
            // already past its last match (a range that ends before its own time): it met the
            // rows kept now and leaves at once, as the watermark allows
            let w = self.watermark;
            self.evict(w, out);
        }
    }

    /// Whether a record of input `side` is late against `late_w`: its watermarked column
    /// ([`StreamJoinConfig::late_columns`]) at or before it, as Spark's symmetric hash join drops
    /// such input rows before joining them. A record with a NULL there is not late (the steps
    /// before the join refuse those).
    fn is_late(&self, side: usize, record: &Record, late_w: Timestamp) -> bool {
        self.cfg.late_columns[side]
            .and_then(|c| record.values.get(c))
            .and_then(Value::as_timestamp)
            .is_some_and(|t| t <= late_w && late_w > Timestamp::MIN)
    }

    /// Drops every kept row that W (`w`) guarantees no future row can match, emitting the
    /// unmatched ones of a preserved input with NULLs for the other input.
    fn evict(&mut self, w: Timestamp, out: &mut Output) {
        for side in 0..2 {
            // every key with a row due, once: a key's rows are scanned once per pass, however
            // many of them are due (one scan per due row made a key of k rows cost k^2)
            let mut due: Vec<GroupKey> = Vec::new();
            while let Some(entry) = self.expiry[side].first_entry() {
                if *entry.key() >= w {
                    break;
                }
                due.extend(entry.remove());
            }
            due.sort_unstable();
            due.dedup();
            {
                for key in due {
                    let Some(kept) = self.state.get_mut(&key) else { continue };
                    let range = self.cfg.range;
                    let gone = |k: &Kept| {
                        range.is_some_and(|r| {
                            let last = if side == 0 {
                                k.time.saturating_add(r.upper)
                            } else {
                                k.time.saturating_add(Duration(r.lower.0.saturating_neg()))
                            };
                            last < w
                        })
                    };
                    let before = kept[side].len();
                    let preserved = self.cfg.join_type.preserves(side);
                    let widths = [self.cfg.columns[0].len(), self.cfg.columns[1].len()];
                    // rows are in time order and the last match grows with the time: the gone
                    // ones are a prefix
                    let gone_rows = kept[side].partition_point(gone);
                    for k in kept[side].drain(..gone_rows) {
                        if preserved && !k.matched {
                            let mut row = Vec::with_capacity(widths[0] + widths[1]);
                            if side == 1 {
                                row.resize(widths[0], Value::Null);
                            }
                            row.extend(k.values.iter().cloned());
                            if side == 0 {
                                row.resize(widths[0] + widths[1], Value::Null);
                            }
                            out.rows.push(row);
                        }
                    }
                    self.rows -= before - kept[side].len();
                    if kept[0].is_empty() && kept[1].is_empty() {
                        self.state.remove(&key);
                    }
                }
            }
        }
    }

    /// Rows kept in the state, both inputs.
    pub fn rows_kept(&self) -> usize {
        self.rows
    }

    fn rebuild_expiry(&mut self) {
        self.expiry = [BTreeMap::new(), BTreeMap::new()];
        self.rows = 0;
        let mut keys: Vec<&GroupKey> = self.state.keys().collect();
        keys.sort();
        for key in keys {
            for side in 0..2 {
                for k in &self.state[key][side] {
                    self.rows += 1;
                    if let Some(l) = self.last_match(side, k.time) {
                        let at = self.expiry[side].entry(l).or_default();
                        if at.last() != Some(key) {
                            at.push(key.clone());
                        }
                    }
                }
            }
        }
    }
}

impl Operator for StreamJoin {
    fn key_columns(&self) -> &[usize] {
        &self.cfg.keys[0]
    }

    fn begin_batch(&mut self, ctx: &BatchContext) {
        self.batch = Some(*ctx);
    }

    /// A record of the input its [`StreamJoinConfig::side_column`] names (the left one
    /// without it), through [`StreamJoin::on_input`].
    fn on_record(&mut self, record: &Record, watermark: Timestamp, out: &mut Output) {
        let side = self
            .cfg
            .side_column
            .and_then(|c| record.values.get(c))
            .map_or(0, |v| usize::from(matches!(v, Value::Int(1) | Value::Long(1))));
        self.on_input(side, record, watermark, out);
    }

    fn end_batch(&mut self, out: &mut Output) {
        if let Some(b) = self.batch.take() {
            self.watermark = self.watermark.max(b.watermarks.evict);
            self.evict(b.watermarks.evict, out);
        }
    }

    fn advance_watermark(&mut self, w: Timestamp, out: &mut Output) {
        if w > self.watermark {
            self.watermark = w;
            self.evict(w, out);
        }
    }

    fn advance_clock(&mut self, _now: Timestamp, _out: &mut Output) {}

    fn next_timer(&self) -> Option<Timestamp> {
        None
    }

    fn wants_no_data_batch(&self, evicted_with: Timestamp, next: Timestamp) -> bool {
        self.cfg.range.is_some() && next > evicted_with
    }

    fn state_len(&self) -> usize {
        self.rows
    }

    fn snapshot(&self) -> Vec<u8> {
        let mut state: Vec<_> = self.state.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
        state.sort_by(|a, b| a.0.cmp(&b.0));
        // Serialising plain data to a Vec cannot fail.
        serde_json::to_vec(&Snapshot { state, watermark: self.watermark }).unwrap_or_default()
    }

    fn restore(&mut self, bytes: &[u8]) -> Result<(), StateError> {
        let snap: Snapshot = serde_json::from_slice(bytes)
            .map_err(|e| StateError::Corrupt { operator: "stream join", why: e.to_string() })?;
        for (k, [l, r]) in snap.state {
            let kept = self.state.entry(k).or_default();
            kept[0].extend(l);
            kept[1].extend(r);
            // in time order, as kept (a stable sort keeps arrival order among equal times)
            kept.iter_mut().for_each(|rows| rows.make_contiguous().sort_by_key(|k| k.time));
        }
        self.watermark = self.watermark.max(snap.watermark);
        self.rebuild_expiry();
        Ok(())
    }

    fn retain_groups(&mut self, keep: &mut dyn FnMut(&GroupKey) -> bool) {
        self.state.retain(|k, _| keep(k));
        self.rebuild_expiry();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One step of a test run: a record of an input, or a watermark.
    #[derive(Clone, Debug)]
    enum Event {
        /// Input side, key (None: NULL), event time (µs).
        Row(usize, Option<i64>, i64),
        Watermark(i64),
    }

    fn record(key: Option<i64>, t: i64, id: usize) -> Record {
        Record::new(vec![key.map_or(Value::Null, Value::Long), Value::Timestamp(Timestamp(t)), Value::Long(id as i64)])
    }

    fn join(join_type: StreamJoinType, range: Option<TimeRange>, mode: Mode) -> StreamJoin {
        StreamJoin::new(StreamJoinConfig {
            mode,
            join_type,
            keys: [vec![0], vec![0]],
            columns: [0..3, 0..3],
            times: [1, 1],
            late_columns: [Some(1), Some(1)],
            side_column: None,
            range,
        })
    }

    /// Sorted rows, as comparable text.
    fn sorted(rows: &[Vec<Value>]) -> Vec<String> {
        let mut v: Vec<String> = rows.iter().map(|r| format!("{r:?}")).collect();
        v.sort();
        v
    }

    /// Real-time mode: the rows emitted at each event, and the records dropped as late. With
    /// `restore_at`, the operator is replaced there by one restored from its snapshot.
    fn run_operator(
        join_type: StreamJoinType,
        range: TimeRange,
        events: &[Event],
        restore_at: Option<usize>,
    ) -> (Vec<Vec<String>>, usize) {
        let mut op = join(join_type, Some(range), Mode::RealTime);
        let mut out = Output::default();
        let mut w = Timestamp::MIN;
        let mut emitted = Vec::new();
        let mut late = 0;
        for (i, e) in events.iter().enumerate() {
            if restore_at == Some(i) {
                let bytes = op.snapshot();
                op = join(join_type, Some(range), Mode::RealTime);
                op.restore(&bytes).unwrap();
            }
            match *e {
                Event::Row(side, key, t) => op.on_input(side, &record(key, t, i), w, &mut out),
                Event::Watermark(to) => {
                    w = w.max(Timestamp(to));
                    op.advance_watermark(w, &mut out);
                }
            }
            emitted.push(sorted(&out.rows));
            late += out.late.len();
            out.clear();
        }
        (emitted, late)
    }

    /// The rows SEMANTICS.md "Joins" gives, at the event that emits each, written from its
    /// definitions, not from the operator: which rows are late on arrival, when W first passes
    /// each row's last matching instant, which pairs meet before either is gone.
    fn reference(join_type: StreamJoinType, range: TimeRange, events: &[Event]) -> (Vec<Vec<String>>, usize) {
        let mut at: Vec<Vec<Vec<Value>>> = vec![Vec::new(); events.len()];
        // W in effect at each event (a watermark event's own value counts from that event on)
        let mut w_at = Vec::new();
        let mut w = i64::MIN;
        for e in events {
            if let Event::Watermark(to) = e {
                w = w.max(*to);
            }
            w_at.push(w);
        }
        let last = |side: usize, t: i64| if side == 0 { t + range.upper.0 } else { t - range.lower.0 };
        let rows: Vec<(usize, usize, Option<i64>, i64)> = events
            .iter()
            .enumerate()
            .filter_map(|(i, e)| match *e {
                Event::Row(s, k, t) => Some((i, s, k, t)),
                Event::Watermark(_) => None,
            })
            .collect();
        // late: at or before W when it arrives (Spark drops such input rows before the join)
        let late = |i: usize, _s: usize, t: i64| w_at[i] > i64::MIN && t <= w_at[i];
        // gone at the first event (its own arrival included) whose W is past its last match
        let evicted_at = |i: usize, s: usize, t: i64| (i..events.len()).find(|&j| w_at[j] > last(s, t));
        let mut late_count = 0;
        let mut matched = vec![false; events.len()];
        let mut semi_emitted: Vec<Option<usize>> = vec![None; events.len()];
        for &(i, s, _, t) in &rows {
            if late(i, s, t) {
                late_count += 1;
            }
        }
        for &(i, si, ki, ti) in &rows {
            for &(j, sj, kj, tj) in &rows {
                if si != 0 || sj != 1 || ki.is_none() || ki != kj || late(i, si, ti) || late(j, sj, tj) {
                    continue;
                }
                if tj - ti < range.lower.0 || tj - ti > range.upper.0 {
                    continue;
                }
                let (first, fs, ft, second) = if i < j { (i, si, ti, j) } else { (j, sj, tj, i) };
                if evicted_at(first, fs, ft).is_some_and(|e| e <= second) {
                    continue;
                }
                matched[i] = true;
                matched[j] = true;
                if join_type == StreamJoinType::LeftSemi {
                    let when = second;
                    semi_emitted[i] = Some(semi_emitted[i].map_or(when, |x| x.min(when)));
                } else {
                    let mut row = record(ki, ti, i).values.to_vec();
                    row.extend(record(kj, tj, j).values.iter().cloned());
                    at[second].push(row);
                }
            }
        }
        for &(i, _, k, t) in &rows {
            if let Some(when) = semi_emitted[i] {
                at[when].push(record(k, t, i).values.to_vec());
            }
        }
        for &(i, s, k, t) in &rows {
            if late(i, s, t) || matched[i] || !join_type.preserves(s) {
                continue;
            }
            if let Some(e) = evicted_at(i, s, t) {
                let mut row = vec![Value::Null; 3];
                if s == 0 {
                    row = record(k, t, i).values.to_vec();
                    row.extend([Value::Null, Value::Null, Value::Null]);
                } else {
                    row.extend(record(k, t, i).values.iter().cloned());
                }
                at[e].push(row);
            }
        }
        (at.iter().map(|r| sorted(r)).collect(), late_count)
    }

    fn event() -> impl proptest::strategy::Strategy<Value = Event> {
        use proptest::prelude::*;
        prop_oneof![
            4 => (0usize..2, proptest::option::weighted(0.9, 0i64..3), 0i64..40).prop_map(|(s, k, t)| Event::Row(s, k, t)),
            1 => (0i64..45).prop_map(Event::Watermark),
        ]
    }

    proptest::proptest! {
        /// Real-time: every join type gives, event by event, the rows of the reference, drops
        /// the same records as late, and gives the same after a snapshot and restore anywhere.
        #[test]
        fn real_time_joins_give_the_rows_of_the_reference(
            ty in 0usize..5,
            lower in -4i64..3,
            width in 0i64..6,
            events in proptest::collection::vec(event(), 0..60),
            restore in 0usize..60,
        ) {
            let join_type = [
                StreamJoinType::Inner,
                StreamJoinType::LeftOuter,
                StreamJoinType::RightOuter,
                StreamJoinType::FullOuter,
                StreamJoinType::LeftSemi,
            ][ty];
            let range = TimeRange { lower: Duration(lower), upper: Duration(lower + width) };
            let expected = reference(join_type, range, &events);
            proptest::prop_assert_eq!(&run_operator(join_type, range, &events, None), &expected);
            proptest::prop_assert_eq!(&run_operator(join_type, range, &events, Some(restore)), &expected);
        }
    }

    #[test]
    fn a_left_outer_row_gets_its_nulls_only_once_the_watermark_passes_its_time_plus_the_range() {
        // r.ts BETWEEN l.ts AND l.ts + 10
        let range = TimeRange { lower: Duration(0), upper: Duration(10) };
        let mut op = join(StreamJoinType::LeftOuter, Some(range), Mode::RealTime);
        let mut out = Output::default();
        op.on_input(0, &record(Some(1), 100, 0), Timestamp::MIN, &mut out);
        assert!(out.rows.is_empty());
        op.advance_watermark(Timestamp(110), &mut out);
        assert!(out.rows.is_empty(), "W = t + 10: a right row at 110 is late, but not strictly past");
        op.advance_watermark(Timestamp(111), &mut out);
        assert_eq!(
            out.rows,
            vec![vec![
                Value::Long(1),
                Value::Timestamp(Timestamp(100)),
                Value::Long(0),
                Value::Null,
                Value::Null,
                Value::Null
            ]]
        );
        assert_eq!(op.rows_kept(), 0);
        assert_eq!(op.state_len(), 0);
    }

    #[test]
    fn micro_batch_joins_pairs_across_batches_and_evicts_with_the_batch_watermark() {
        use crate::watermark::BatchWatermarks;
        let range = TimeRange { lower: Duration(0), upper: Duration(10) };
        let mut op = join(StreamJoinType::FullOuter, Some(range), Mode::MicroBatch);
        let mut out = Output::default();
        let ctx = |id, late, evict| BatchContext {
            batch_id: id,
            watermarks: BatchWatermarks { late: Timestamp(late), evict: Timestamp(evict) },
            processing_time: Timestamp(0),
        };
        op.begin_batch(&ctx(0, i64::MIN, 50));
        op.on_input(0, &record(Some(1), 100, 0), Timestamp::MIN, &mut out);
        op.on_input(1, &record(Some(2), 100, 1), Timestamp::MIN, &mut out);
        op.end_batch(&mut out);
        assert!(out.rows.is_empty());
        op.begin_batch(&ctx(1, 50, 105));
        // matches the left row kept from batch 0; the right row of key 2 is now past W
        op.on_input(1, &record(Some(1), 104, 2), Timestamp::MIN, &mut out);
        // late for batch 1: 20 + 10 < 50
        op.on_input(0, &record(Some(1), 20, 3), Timestamp::MIN, &mut out);
        op.end_batch(&mut out);
        assert_eq!(out.late.len(), 1);
        assert_eq!(
            sorted(&out.rows),
            sorted(&[
                [record(Some(1), 100, 0).values.to_vec(), record(Some(1), 104, 2).values.to_vec()].concat(),
                [vec![Value::Null; 3], record(Some(2), 100, 1).values.to_vec()].concat(),
            ])
        );
        // the matched rows leave without NULL rows once W passes them
        out.clear();
        op.begin_batch(&ctx(2, 105, 200));
        op.end_batch(&mut out);
        assert!(out.rows.is_empty());
        assert_eq!(op.rows_kept(), 0);
    }
}
