//! Operators: the stateful heart of a query, as state machines driven from outside.
//!
//! Every operator has the same life, whichever mode drives it:
//!
//! - **micro-batch**: [`Operator::begin_batch`] (the batch's watermarks and processing time),
//!   [`Operator::on_record`] for each record of the batch, [`Operator::end_batch`] (rows of the
//!   batch are emitted here).
//! - **real-time**: [`Operator::on_record`] per record, with the watermark as it stood when the
//!   record arrived (rows are emitted at once); [`Operator::advance_watermark`] and
//!   [`Operator::advance_clock`] move event time and processing time; [`Operator::next_timer`]
//!   says when the operator must next be woken (rolling-window expiries).
//! - both: [`Operator::snapshot`] / [`Operator::restore`] for checkpoints; or, without stalling
//!   the caller, [`Operator::begin_snapshot`] at the barrier, then [`Operator::snapshot_step`]
//!   between records until it returns the bytes (the rolling window writes its keys
//!   incrementally; other operators serialise at once).
//!
//! The operators never read a clock and never block; the runtime calls them.

mod chain;
mod deduplicate;
mod forward;
pub(crate) mod key_table;
pub(crate) mod paged;
mod processor;
mod rolling;
mod session;
mod stream_join;
#[cfg(test)]
mod tests_chain;
#[cfg(test)]
mod tests_join_chain;
mod window_aggregate;

pub use chain::{ChainLink, OperatorChain};
pub use deduplicate::{Deduplicate, DeduplicateConfig};
pub use forward::Forward;
pub use processor::{KeyContext, Processor, ProcessorConfig, StatefulProcessor, TimeDomain};
pub use rolling::ordered::OrderedMultiset;
pub use rolling::{RollingMeasure, RollingWindow, RollingWindowConfig};
pub use session::SessionGap;
pub use stream_join::{StreamJoin, StreamJoinConfig, StreamJoinType, TimeRange};
pub use window_aggregate::{OutputMode, PREFETCH_MIN_BYTES, WindowAggregate, WindowAggregateConfig, WindowKind};

use crate::time::Timestamp;
use crate::value::{GroupKey, Record, Row};
use crate::watermark::BatchWatermarks;

/// How many records ahead of the one being processed a caller gives [`Operator::prefetch`]
/// its hint: far enough for a cache miss (~100 ns) to complete while the records in between
/// are processed, near enough for the prefetched lines to still be in cache.
pub const PREFETCH_DISTANCE: usize = 8;

/// The prefetch schedule of a loop over records, to call before processing record `i` of the
/// loop; `ahead(j)` is record `j`, `None` past the end. Three steps, each reading only what the
/// one before loaded: record `i + 3 * PREFETCH_DISTANCE`'s values start loading; record
/// `i + 2 * PREFETCH_DISTANCE`'s strings in [`Operator::key_columns`] (hashed and compared); record
/// `i + PREFETCH_DISTANCE` is given to [`Operator::prefetch`], which finds its state without
/// waiting for the record itself. Changes nothing observable.
#[inline]
pub fn prefetch_ahead<'a, O: Operator + ?Sized>(op: &O, ahead: impl Fn(usize) -> Option<&'a Record>, i: usize) {
    prefetch_ahead_keyed(op, op.key_columns(), ahead, i);
}

/// [`prefetch_ahead`] with the columns whose strings it loads given (`string_keys`: those of
/// [`Operator::key_columns`] that hold strings, which a caller looks up once per batch rather
/// than once per record; fewer or none only load less).
#[inline]
pub fn prefetch_ahead_keyed<'a, O: Operator + ?Sized>(
    op: &O,
    string_keys: &[usize],
    ahead: impl Fn(usize) -> Option<&'a Record>,
    i: usize,
) {
    if let Some(r) = ahead(i + 3 * PREFETCH_DISTANCE) {
        crate::prefetch::lines(r.values.as_ptr(), std::mem::size_of_val(&*r.values));
    }
    if !string_keys.is_empty()
        && let Some(r) = ahead(i + 2 * PREFETCH_DISTANCE)
    {
        for &c in string_keys {
            if let Some(crate::value::Value::Str(s)) = r.values.get(c) {
                // The reference counts sit just before the bytes.
                crate::prefetch::line(s.as_ptr().wrapping_sub(16));
            }
        }
    }
    if let Some(r) = ahead(i + PREFETCH_DISTANCE) {
        op.prefetch(r);
    }
}

/// The two execution modes (SEMANTICS.md).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Mode {
    /// Records arrive in batches; rows are emitted at the end of each batch.
    MicroBatch,
    /// Every record is processed and its rows emitted as it arrives.
    RealTime,
}

/// What an operator produces: output rows, input records dropped as late (for the metric and
/// the `late_sink`), input records it refused (for the `dead_letter` sink), and the dead
/// letters of rows a chain's later stage could not take.
///
/// The buffers of cleared rows are kept (up to [`SPARE_ROWS`]) and handed out again by
/// [`Output::row_buffer`], so that an operator emitting a row per record does not allocate and
/// free one per record.
#[derive(Debug, Default)]
pub struct Output {
    /// Rows in the order of the output schema.
    pub rows: Vec<Row>,
    /// Records dropped as late, unchanged.
    pub late: Vec<Record>,
    /// Records refused whole (no measure took them), unchanged, with the reason.
    pub rejected: Vec<Rejected>,
    /// Dead letters, encoded (`{"reason", "source": "query.sql", "record"}` JSON objects, no
    /// newline), of rows that a stage after the first of an [`OperatorChain`] could not take:
    /// an expression between the stages failed on the row (the row of the stage before, with
    /// its column names), or the stage refused it (the record it was given). Written to the
    /// dead letters and counted as malformed, as SQL.md "Errors while evaluating" says.
    pub dead_letters: Vec<String>,
    /// Emptied row buffers, for [`Output::row_buffer`].
    spare: Vec<Row>,
}

/// A record an operator refused: no measure of any window took it, so every measure stays
/// consistent with the others (SEMANTICS.md "Aggregate functions").
#[derive(Debug, Clone, PartialEq)]
pub struct Rejected {
    /// The record, unchanged.
    pub record: Record,
    /// Why, e.g. `ARITHMETIC_OVERFLOW in sum(v)` (the measure's output name).
    pub reason: String,
}

impl Rejected {
    /// The record would take the integer sum `measure` out of BIGINT, or a DECIMAL sum past its
    /// precision ([`AggregateFn::sum_fits`]): `ARITHMETIC_OVERFLOW`, or Spark's
    /// `NUMERIC_VALUE_OUT_OF_RANGE` for a DECIMAL.
    ///
    /// [`AggregateFn::sum_fits`]: crate::aggregate::AggregateFn::sum_fits
    pub fn overflow(record: &Record, measure: &crate::aggregate::AggregateFn) -> Rejected {
        let kind =
            if measure.input_type.decimal().is_some() { "NUMERIC_VALUE_OUT_OF_RANGE" } else { "ARITHMETIC_OVERFLOW" };
        Rejected { record: record.clone(), reason: format!("{kind} in {}", measure.name) }
    }
}

/// Rows a chain of stateful operators dropped after its first stage, by reason (counts since it
/// was built).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StageDrops {
    /// Late at a later stage: behind the watermark that stage was given.
    pub late: u64,
    /// Refused by a later stage (an aggregate's overflow), or failed by the steps between stages
    /// (an expression's error).
    pub failed: u64,
}

impl StageDrops {
    /// Both reasons together.
    pub fn total(&self) -> u64 {
        self.late + self.failed
    }

    /// Counts what a stage's output holds as late and refused.
    pub fn add(&mut self, out: &Output) {
        self.late += out.late.len() as u64;
        self.failed += out.rejected.len() as u64;
    }
}

/// Most emptied row buffers an [`Output`] keeps for reuse.
pub const SPARE_ROWS: usize = 1024;

impl Output {
    /// Whether nothing was produced.
    pub fn is_empty(&self) -> bool {
        self.rows.is_empty() && self.late.is_empty() && self.rejected.is_empty() && self.dead_letters.is_empty()
    }

    /// An empty row with room for at least `values` values: the buffer of a cleared row when
    /// one is kept, else a new one.
    #[inline]
    pub fn row_buffer(&mut self, values: usize) -> Row {
        match self.spare.pop() {
            Some(mut row) => {
                row.reserve(values);
                row
            }
            None => Vec::with_capacity(values),
        }
    }

    /// Empties the rows, keeping their buffers for [`Output::row_buffer`] (and the list's
    /// capacity).
    #[inline]
    pub fn clear_rows(&mut self) {
        if self.rows.is_empty() {
            return; // most records produce no row: no drain to set up and tear down
        }
        for mut row in self.rows.drain(..) {
            if self.spare.len() < SPARE_ROWS {
                row.clear();
                self.spare.push(row);
            }
        }
    }

    /// Empties both lists (keeps their capacity and the rows' buffers).
    #[inline]
    pub fn clear(&mut self) {
        self.clear_rows();
        if !self.late.is_empty() {
            self.late.clear();
        }
        if !self.rejected.is_empty() {
            self.rejected.clear();
        }
        if !self.dead_letters.is_empty() {
            self.dead_letters.clear();
        }
    }
}

/// The context of one micro-batch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BatchContext {
    /// Batch number, from 0, no-data batches included (Spark's numbering).
    pub batch_id: u64,
    /// The batch's watermarks (late input / eviction).
    pub watermarks: BatchWatermarks,
    /// The batch's processing time (rolling windows: frontier = this - delay).
    pub processing_time: Timestamp,
}

/// Errors of snapshot restore.
#[derive(Debug, thiserror::Error)]
pub enum StateError {
    /// The bytes are not a snapshot of this operator.
    #[error("snapshot of operator {operator} cannot be read: {why}")]
    Corrupt {
        /// The operator kind.
        operator: &'static str,
        /// What failed.
        why: String,
    },
}

/// A stateful operator (see the module documentation for the call order).
pub trait Operator: Send + std::fmt::Debug {
    /// Starts a micro-batch.
    fn begin_batch(&mut self, ctx: &BatchContext);

    /// Micro-batch: this instance holds the query's one group, when the query aggregates
    /// without GROUP BY keys or window (the runtime calls it on the partition actor owning the
    /// empty key). Such an aggregate then emits its row in every batch, update mode as complete
    /// mode, with the aggregates of no rows (`count` 0, others null) before any record, as
    /// Spark's global aggregation does (its aggregate of no grouping keys always gives one
    /// row). Nothing for other operators.
    fn own_global_group(&mut self) {}

    /// Takes one record, by reference: the operator copies only what it keeps (a late record,
    /// a deduplicated row, a rolling window's measure inputs), so the caller may reuse or drop
    /// its buffers without per-record work inside the operator. In real-time mode `watermark` is W as it stood when the record arrived
    /// (before its own event time counts); in micro-batch mode it is ignored (the batch's
    /// watermarks apply). The operator updates its own W to include the record.
    fn on_record(&mut self, record: &Record, watermark: Timestamp, out: &mut Output);

    /// A hint that `record` will be given to [`Operator::on_record`] soon (a few records from
    /// now, typically [`PREFETCH_DISTANCE`]): the operator may start loading the state that
    /// record will touch (software prefetch), so that the cache misses of consecutive records
    /// overlap. Changes nothing observable: results are the same with or without the hint, and
    /// whatever record is given. The default does nothing.
    fn prefetch(&self, record: &Record) {
        let _ = record;
    }

    /// Whether [`prefetch_ahead`]'s schedule pays now: `false` while the state that
    /// [`Operator::prefetch`] would load stays in the caches anyway (a window aggregate's group
    /// table under [`PREFETCH_MIN_BYTES`]), where the schedule only adds work. A caller asks once
    /// per batch and skips the schedule for the batch when `false`; results are the same either
    /// way. The default: `true`.
    fn prefetch_pays(&self) -> bool {
        true
    }

    /// The columns whose values key the operator's state (hashed and compared per record):
    /// [`prefetch_ahead`] starts loading the strings of these columns only. The default: none.
    fn key_columns(&self) -> &[usize] {
        &[]
    }

    /// Ends a micro-batch: emits the batch's rows and evicts state the watermark finalised.
    fn end_batch(&mut self, out: &mut Output);

    /// Real-time: moves the watermark to `w` (never back), emitting what it finalises.
    fn advance_watermark(&mut self, w: Timestamp, out: &mut Output);

    /// Real-time: moves processing time to `now` (never back), firing every timer due up to
    /// `now` in instant order. Only rolling windows have timers.
    fn advance_clock(&mut self, now: Timestamp, out: &mut Output);

    /// Whether [`Operator::advance_clock`] does nothing, whatever the instant, and
    /// [`Operator::next_timer`] is always `None` (no processing-time timer ever): a driver may
    /// then leave the clock alone. The default: `false`.
    fn ignores_clock(&self) -> bool {
        false
    }

    /// The next processing-time instant at which [`Operator::advance_clock`] has work, if any.
    fn next_timer(&self) -> Option<Timestamp>;

    /// Whether a micro-batch without new data must run after a batch whose eviction watermark
    /// was `evicted_with` when the next batch's would be `next` (Spark's no-data batch).
    fn wants_no_data_batch(&self, evicted_with: Timestamp, next: Timestamp) -> bool;

    /// Rows dropped between the stages of a chain since it was built ([`OperatorChain`]); none
    /// for a single operator (the default).
    fn dropped_between_stages(&self) -> StageDrops {
        StageDrops::default()
    }

    /// Number of keys (groups, windows, dedup keys) held; for a stream-stream join, the rows it
    /// keeps (both inputs), its state's unit.
    fn state_len(&self) -> usize;

    /// The whole state, serialised.
    fn snapshot(&self) -> Vec<u8>;

    /// Starts a snapshot of the state as it stands now (the barrier's cut). Returns the bytes
    /// when they are complete at once (the default: [`Operator::snapshot`]); `None` when the
    /// snapshot is in progress: the caller then calls [`Operator::snapshot_step`] (between
    /// records, as often as it likes) until it returns the bytes. Records, timers and watermarks
    /// processed meanwhile change the live state only: the bytes are those of the cut, and
    /// [`Operator::restore`] reads them as it reads [`Operator::snapshot`]'s. At most one
    /// snapshot is in progress: beginning another abandons the one in progress (finish it first
    /// with [`Operator::finish_snapshot`] to keep it). Flink's asynchronous snapshots of heap
    /// state (copy-on-write per key) are the model.
    fn begin_snapshot(&mut self) -> Option<Vec<u8>> {
        Some(self.snapshot())
    }

    /// Advances the snapshot in progress by about `budget` keys of work (at least one); returns
    /// its bytes once complete, `None` while work remains or when no snapshot is in progress.
    fn snapshot_step(&mut self, budget: usize) -> Option<Vec<u8>> {
        let _ = budget;
        None
    }

    /// Gives back the bytes of a snapshot once they are stored, for the next snapshot to be
    /// written into: its pages stay mapped, where a fresh buffer of tens of megabytes would be
    /// faulted in again on the actor's thread (the allocator returns large freed blocks to the
    /// system). Default: dropped.
    fn reuse_snapshot_buffer(&mut self, buffer: Vec<u8>) {
        drop(buffer);
    }

    /// Whether a snapshot begun by [`Operator::begin_snapshot`] has not returned its bytes yet.
    fn snapshot_in_progress(&self) -> bool {
        false
    }

    /// Completes the snapshot in progress at once; `None` when none is in progress.
    fn finish_snapshot(&mut self) -> Option<Vec<u8>> {
        while self.snapshot_in_progress() {
            if let Some(bytes) = self.snapshot_step(usize::MAX) {
                return Some(bytes);
            }
        }
        None
    }

    /// Adds the state of a snapshot taken by [`Operator::snapshot`] of the same query to this
    /// operator's: its groups are added (they must be absent here, as the groups of two
    /// partition actors are), and the watermark, frontier and sequence take the later of the two.
    /// On a new operator this is exactly the snapshot's state. With [`Operator::retain_groups`]
    /// it re-splits state when `parallelism` changes across a restart: each new partition actor
    /// restores every old snapshot and keeps the groups of its own key range.
    ///
    /// # Errors
    /// [`StateError::Corrupt`] when the bytes cannot be read or do not fit the query; the
    /// operator's state is then unspecified and it must be dropped.
    fn restore(&mut self, bytes: &[u8]) -> Result<(), StateError>;

    /// [`Operator::restore`] keeping only the groups for which `keep` is true (a re-split across
    /// a change of `parallelism`): the result is that of `restore` then
    /// [`Operator::retain_groups`] (the default does exactly that); an operator may skip the
    /// groups it drops without building their state.
    ///
    /// # Errors
    /// As [`Operator::restore`].
    fn restore_keeping(&mut self, bytes: &[u8], keep: &mut dyn FnMut(&GroupKey) -> bool) -> Result<(), StateError> {
        self.restore(bytes)?;
        self.retain_groups(keep);
        Ok(())
    }

    /// Drops every group (the values of the routing / `group_by` columns, in order) for which
    /// `keep` is false, with its windows, sessions, pending records and timers.
    fn retain_groups(&mut self, keep: &mut dyn FnMut(&GroupKey) -> bool);

    /// The operator as an [`OperatorChain`], when it is one (the runtime splits a chain at its
    /// exchange, [`OperatorChain::split_at_exchange`]); the default: `None`.
    fn as_chain_mut(&mut self) -> Option<&mut OperatorChain> {
        None
    }
}

/// Folds a restored snapshot's watermark tracker into an operator's (see [`Operator::restore`]).
fn merge_trackers(
    mine: &mut Option<crate::watermark::WatermarkTracker>,
    theirs: Option<crate::watermark::WatermarkTracker>,
) {
    match (mine.as_mut(), theirs) {
        (Some(m), Some(t)) => m.merge(&t),
        (None, Some(t)) => *mine = Some(t),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::{Output, SPARE_ROWS};
    use crate::value::Value;

    #[test]
    fn cleared_rows_give_their_buffers_back_empty() {
        let mut out = Output::default();
        let mut row = out.row_buffer(3);
        row.extend([Value::Long(1), Value::Str("a".into()), Value::Null]);
        let ptr = row.as_ptr();
        out.rows.push(row);
        out.clear_rows();
        assert!(out.rows.is_empty());
        let again = out.row_buffer(3);
        assert!(again.is_empty());
        assert_eq!(again.as_ptr(), ptr, "the cleared row's buffer is reused");
        assert!(again.capacity() >= 3);
    }

    #[test]
    fn at_most_spare_rows_buffers_are_kept() {
        let mut out =
            Output { rows: (0..SPARE_ROWS + 10).map(|i| vec![Value::Long(i as i64)]).collect(), ..Default::default() };
        out.clear();
        assert_eq!(out.spare.len(), SPARE_ROWS);
        assert!(out.is_empty());
    }
}
