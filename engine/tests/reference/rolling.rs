//! Rolling windows (SEMANTICS.md "Rolling window"), brute force over every record seen.
//!
//! Frontier F = processing time - frontier delay. A record (not late) is visible once F >= its
//! event time t. A bounded measure of range d aggregates the visible records of the key with t in
//! `(F - d, F]` (so a record counts from F = t until F = t + d, exclusive); a lifetime measure
//! every visible record. A key's *measured set* is, per measure, the set of records it
//! aggregates; rows `[key..., frontier, measures...]` are emitted when it changes:
//!
//! - real-time (replay clock): before each record the clock moves to its arrival time (never
//!   back); every instant x in (F_old, F_new] at which a key's measured set differs from just
//!   before x gives one row with frontier x (changes only happen at some record's t or t + d, so
//!   those are the instants tried). Then the record, if not late, arrives: if the key's measured
//!   set at F differs with it from without it, one row at F. After the last record the clock
//!   moves to `until`.
//! - micro-batch: F is fixed per batch (processing time, never earlier than the last batch's);
//!   at the end of a batch one row per key whose measured set differs from the one of its last
//!   row (the empty set before its first row), with frontier F.
//!
//! Late records (t <= W, watermark on the event-time column) count nowhere: real-time against W
//! before the record, micro-batch against `W_{N-1}` (the previous batch's).

use eddy_engine::{Record, Timestamp, Value};

use super::agg::Agg;
use super::{at_or_below, key_of, time_of};

/// A reference rolling-window query. The watermark, if any, is on `time_col`.
#[derive(Clone, Debug)]
pub struct RollingQuery {
    /// `partition_by` columns.
    pub key_cols: Vec<usize>,
    /// `order_by` (event time) column.
    pub time_col: usize,
    /// Frontier delay (µs).
    pub frontier_delay: i64,
    /// Measures in output order, each with its range d (µs) or `None` (lifetime).
    pub measures: Vec<(Agg, Option<i64>)>,
    /// Watermark delay (µs), if any.
    pub watermark_delay: Option<i64>,
}

/// Per measure, the indexes (into the arrived list) of the records it aggregates.
type MeasuredSet = Vec<Vec<usize>>;

impl RollingQuery {
    /// The measured set of `key` at frontier `x`, over `arrived` (records not late, in order).
    fn measured(&self, key: &[Value], x: i64, arrived: &[Record]) -> MeasuredSet {
        self.measures
            .iter()
            .map(|(_, over)| {
                (0..arrived.len())
                    .filter(|&i| key_of(&arrived[i], &self.key_cols) == key)
                    .filter(|&i| {
                        let t = time_of(&arrived[i], self.time_col);
                        t <= x && over.is_none_or(|d| x < t + d)
                    })
                    .collect()
            })
            .collect()
    }

    fn row(&self, key: &[Value], x: i64, set: &MeasuredSet, arrived: &[Record]) -> Vec<Value> {
        let mut row: Vec<Value> = key.to_vec();
        row.push(Value::Timestamp(Timestamp(x)));
        for ((agg, _), ids) in self.measures.iter().zip(set) {
            let rs: Vec<&Record> = ids.iter().map(|&i| &arrived[i]).collect();
            row.push(agg.eval(&rs));
        }
        row
    }

    fn keys(&self, arrived: &[Record]) -> Vec<Vec<Value>> {
        let mut keys: Vec<Vec<Value>> = Vec::new();
        for r in arrived {
            let k = key_of(r, &self.key_cols);
            if !keys.contains(&k) {
                keys.push(k);
            }
        }
        keys
    }

    /// Rows of the changes at instants in `(from, to]` (`from = None`: from below every
    /// instant), in instant order.
    fn advance(&self, from: Option<i64>, to: i64, arrived: &[Record]) -> Vec<Vec<Value>> {
        let mut rows: Vec<(i64, Vec<Value>)> = Vec::new();
        for key in self.keys(arrived) {
            let mut instants: Vec<i64> = Vec::new();
            for r in arrived.iter().filter(|r| key_of(r, &self.key_cols) == key) {
                let t = time_of(r, self.time_col);
                instants.push(t);
                instants.extend(self.measures.iter().filter_map(|(_, d)| d.map(|d| t + d)));
            }
            instants.retain(|&x| from.is_none_or(|f| x > f) && x <= to);
            instants.sort_unstable();
            instants.dedup();
            let Some(first) = instants.first() else {
                continue;
            };
            let mut last = self.measured(&key, from.unwrap_or(first - 1), arrived);
            for x in instants {
                let cur = self.measured(&key, x, arrived);
                if cur != last {
                    rows.push((x, self.row(&key, x, &cur, arrived)));
                    last = cur;
                }
            }
        }
        rows.sort_by_key(|(x, _)| *x);
        rows.into_iter().map(|(_, r)| r).collect()
    }

    /// Real-time output under a replay clock: `input` is `(record, arrival time)`; one step per
    /// record (rows of the clock advance before it, then its own row), then one step for the
    /// advance to `until`.
    pub fn real_time(&self, input: &[(Record, i64)], until: Option<i64>) -> Vec<Vec<Vec<Value>>> {
        let mut arrived: Vec<Record> = Vec::new();
        let mut clock: Option<i64> = None;
        let mut max_t: Option<i64> = None;
        let mut steps = Vec::new();
        let fd = self.frontier_delay;
        for (r, arrival) in input {
            let now = clock.map_or(*arrival, |c| c.max(*arrival));
            let mut rows = self.advance(clock.map(|c| c - fd), now - fd, &arrived);
            clock = Some(now);
            let f = now - fd;
            let t = time_of(r, self.time_col);
            let w_before = self.watermark_delay.and_then(|d| max_t.map(|m| m - d));
            max_t = Some(max_t.map_or(t, |m| m.max(t)));
            if !at_or_below(t, w_before) {
                let key = key_of(r, &self.key_cols);
                let before = self.measured(&key, f, &arrived);
                arrived.push(r.clone());
                let after = self.measured(&key, f, &arrived);
                if after != before {
                    rows.push(self.row(&key, f, &after, &arrived));
                }
            }
            steps.push(rows);
        }
        let mut last = Vec::new();
        if let Some(u) = until {
            let now = clock.map_or(u, |c| c.max(u));
            last = self.advance(clock.map(|c| c - fd), now - fd, &arrived);
        }
        steps.push(last);
        steps
    }

    /// Micro-batch output: `batches` are `(records, processing time)`; the rows of each batch.
    pub fn micro_batch(&self, batches: &[(Vec<Record>, i64)]) -> Vec<Vec<Vec<Value>>> {
        let mut arrived: Vec<Record> = Vec::new();
        let mut last_rows: Vec<(Vec<Value>, MeasuredSet)> = Vec::new();
        let mut processing: Option<i64> = None;
        let mut out = Vec::new();
        let empty: MeasuredSet = vec![Vec::new(); self.measures.len()];
        // W_{N-1}: the eviction watermark of the previous batch (from batches before it).
        let wm_before = |n: usize| -> Option<i64> {
            let d = self.watermark_delay?;
            batches[..n].iter().flat_map(|(rs, _)| rs).map(|r| time_of(r, self.time_col)).max().map(|m| m - d)
        };
        for (n, (records, p)) in batches.iter().enumerate() {
            let now = processing.map_or(*p, |q| q.max(*p));
            processing = Some(now);
            let f = now - self.frontier_delay;
            let w_late = if n == 0 { None } else { wm_before(n - 1) };
            arrived.extend(records.iter().filter(|r| !at_or_below(time_of(r, self.time_col), w_late)).cloned());
            let mut rows = Vec::new();
            for key in self.keys(&arrived) {
                let cur = self.measured(&key, f, &arrived);
                let prev = last_rows.iter().find(|(k, _)| *k == key).map_or(&empty, |(_, s)| s);
                if cur != *prev {
                    rows.push(self.row(&key, f, &cur, &arrived));
                    match last_rows.iter_mut().find(|(k, _)| *k == key) {
                        Some((_, s)) => *s = cur,
                        None => last_rows.push((key, cur)),
                    }
                }
            }
            out.push(rows);
        }
        out
    }
}
