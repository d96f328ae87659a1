//! Deduplication (SEMANTICS.md "Deduplication"), brute force over the records seen so far.
//!
//! A record is late, and dropped, when its event time <= `W_late` (micro-batch: `W_{N-1}`, the
//! previous batch's eviction watermark; real-time: W as it stood when the record arrived).
//! Otherwise it passes unless a live key of state equals its key:
//! - `within_watermark = false` (`dropDuplicates`): every passed key stays live forever, unless
//!   the event-time column is among the key columns: then it is evicted once W >= that time.
//! - `within_watermark = true` (`dropDuplicatesWithinWatermark`): a passed key lives until W >=
//!   (its first record's event time + delay); duplicates do not extend it.
//!
//! Eviction uses the eviction watermark at the end of each micro-batch (`W_N`), or
//! `W_after = max(W_before, t - delay)` after each real-time record.

use eddy_engine::{Record, Value};

use super::{at_or_below, key_of, time_of, watermark_before_batch};

/// A reference deduplication query; the watermark, if any, is on `time_col`.
#[derive(Clone, Debug)]
pub struct DedupQuery {
    /// Deduplication columns.
    pub key_cols: Vec<usize>,
    /// Event-time column (of the watermark).
    pub time_col: usize,
    /// `dropDuplicatesWithinWatermark`.
    pub within_watermark: bool,
    /// Watermark delay (µs), if any.
    pub delay: Option<i64>,
}

/// A key of state and the instant at which W expires it (None: never).
struct Live {
    key: Vec<Value>,
    expires_at: Option<i64>,
}

impl DedupQuery {
    fn expiry(&self, r: &Record) -> Option<i64> {
        let t = time_of(r, self.time_col);
        if self.within_watermark {
            return self.delay.map(|d| t + d);
        }
        if self.key_cols.contains(&self.time_col) { self.delay.map(|_| t) } else { None }
    }

    /// Handles one record against `state` with late watermark `w_late`: `Some(record)` if it
    /// passes.
    fn offer(&self, state: &mut Vec<Live>, r: &Record, w_late: Option<i64>) -> Option<Vec<Value>> {
        if at_or_below(time_of(r, self.time_col), w_late) {
            return None;
        }
        let key = key_of(r, &self.key_cols);
        if state.iter().any(|l| l.key == key) {
            return None;
        }
        state.push(Live { key, expires_at: self.expiry(r) });
        Some(r.values.to_vec())
    }

    fn evict(state: &mut Vec<Live>, w: Option<i64>) {
        state.retain(|l| !l.expires_at.is_some_and(|e| at_or_below(e, w)));
    }

    /// Micro-batch output: the passing records of each batch.
    pub fn micro_batch(&self, batches: &[Vec<Record>]) -> Vec<Vec<Vec<Value>>> {
        let wm = |b: usize| watermark_before_batch(batches, b, self.time_col, self.delay);
        let mut state = Vec::new();
        let mut out = Vec::new();
        for (b, batch) in batches.iter().enumerate() {
            let w_late = if b == 0 { None } else { wm(b - 1) };
            let rows = batch.iter().filter_map(|r| self.offer(&mut state, r, w_late)).collect();
            Self::evict(&mut state, wm(b));
            out.push(rows);
        }
        out
    }

    /// Real-time output: the passing record (or nothing) of each step.
    pub fn real_time(&self, records: &[Record]) -> Vec<Vec<Vec<Value>>> {
        let mut state = Vec::new();
        let mut max_t: Option<i64> = None;
        let mut out = Vec::new();
        for r in records {
            let t = time_of(r, self.time_col);
            let w_before = self.delay.and_then(|d| max_t.map(|m| m - d));
            out.push(self.offer(&mut state, r, w_before).into_iter().collect());
            max_t = Some(max_t.map_or(t, |m| m.max(t)));
            Self::evict(&mut state, self.delay.and_then(|d| max_t.map(|m| m - d)));
        }
        out
    }
}
