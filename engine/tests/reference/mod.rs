//! Brute-force references for the property tests (`props_*.rs`), written from
//! `shared/spec/SEMANTICS.md` alone, never from the operators' code: each one keeps every record
//! seen so far and recomputes what the contract says from that full list (O(n^2) is fine), so a
//! disagreement with an operator points at one of the two, to be judged against SEMANTICS.md.
//!
//! Times inside the references are plain `i64` microseconds; `None` stands for "below every
//! timestamp" (the watermark before the first record, the clock before the first arrival).
//! Rows are built as the operators build them: `Vec<Value>` in output-schema order.
//!
//! - [`agg`]: exact aggregates over a list of records (count, sum, avg, min, max, stddev,
//!   percentile).
//! - [`window`]: window aggregates (tumbling, sliding, session, none), micro-batch and real-time.
//! - [`dedup`]: deduplication, micro-batch and real-time.
//! - [`rolling`]: rolling windows, real-time (replay clock) and micro-batch.
//! - [`input`]: the test schema, input strategies, engine measures.
//! - [`drive`]: runs an operator through the engine drivers, optionally restarting it from a
//!   snapshot in the middle.
//! - [`compare`]: row comparison with a relative tolerance on doubles, as multisets.
#![allow(dead_code)]

pub mod agg;
pub mod compare;
pub mod dedup;
pub mod drive;
pub mod input;
pub mod rolling;
pub mod window;

use eddy_engine::{Record, Value};

/// The event time (µs) of `record` at column `col`.
///
/// # Panics
/// When the column does not hold a timestamp (the generators always put one there).
pub fn time_of(record: &Record, col: usize) -> i64 {
    match &record.values[col] {
        Value::Timestamp(t) => t.0,
        other => panic!("column {col} holds {other:?}, not a timestamp"),
    }
}

/// The values of `cols` in `record`, in order (a grouping / dedup key).
pub fn key_of(record: &Record, cols: &[usize]) -> Vec<Value> {
    cols.iter().map(|&c| record.values[c].clone()).collect()
}

/// `max(event times in batches[..n]) - delay`: the watermark computed from the batches before
/// batch `n` (SEMANTICS.md "Watermark", micro-batch). `None` (below every timestamp) without a
/// watermark or before any record.
pub fn watermark_before_batch(batches: &[Vec<Record>], n: usize, col: usize, delay: Option<i64>) -> Option<i64> {
    let delay = delay?;
    batches[..n.min(batches.len())].iter().flatten().map(|r| time_of(r, col)).max().map(|m| m - delay)
}

/// Whether `x <= w`, `w = None` meaning below every timestamp.
pub fn at_or_below(x: i64, w: Option<i64>) -> bool {
    w.is_some_and(|w| x <= w)
}
