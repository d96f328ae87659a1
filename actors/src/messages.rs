//! Messages between actors. Control and data stay apart (DESIGN.md): data is a batch of stamped
//! records; control is one enum, carried in-band on the same channel, behind the data it follows.

use eddy_connectors::SourceOffset;
use eddy_engine::operator::BatchContext;
use eddy_engine::{Record, Timestamp};

use crate::checkpoint::{DriverState, SnapshotMeta};

/// A record with what the source decided for it.
#[derive(Debug, Clone)]
pub struct Stamped {
    /// The record.
    pub record: Record,
    /// Real-time: processing time at which it is processed (timers due up to here fire first).
    pub now: Timestamp,
    /// Real-time: W as it stood when the record arrived.
    pub watermark: Timestamp,
    /// Creation instant on the monotonic clock (ns), 0 when unknown (latency measurement).
    pub created_ns: u64,
}

/// Control messages, handled in the order they arrive, behind the data sent before them.
#[derive(Debug, Clone)]
pub enum Control {
    /// Micro-batch: a batch starts (its watermarks and processing time).
    BeginBatch(BatchContext),
    /// Micro-batch: the batch's records have all been sent; emit its rows.
    EndBatch {
        /// The batch number.
        batch_id: u64,
    },
    /// Real-time: the global watermark moved (sent at most once per data flush; when an
    /// expression after the source reads the processing time, each time it moves).
    Watermark {
        /// The watermark.
        watermark: Timestamp,
        /// The processing time at which it took this value: that of the record that moved it
        /// (the rows it finalises are made then, for `current_timestamp()`).
        at: Timestamp,
    },
    /// Real-time: processing time moved (replay clock between records, or a wall-clock tick).
    Tick(Timestamp),
    /// Real-time: checkpoint barrier closing `epoch`. The actor first moves its clock to `now`
    /// and its watermark to `watermark` (so the epoch's rows are those due by then), then
    /// snapshots, acknowledges and ends the epoch at the sink.
    Barrier {
        /// The epoch the barrier closes.
        epoch: u64,
        /// Processing time of the barrier.
        now: Timestamp,
        /// Global watermark at the barrier.
        watermark: Timestamp,
    },
    /// The input is exhausted or a stop was asked: finish (after the last barrier) and exit.
    EndOfInput,
}

impl Control {
    /// The message's name in reports (`barrier`, `watermark`, ...).
    pub fn kind(&self) -> &'static str {
        match self {
            Control::BeginBatch(_) => "begin batch",
            Control::EndBatch { .. } => "end batch",
            Control::Watermark { .. } => "watermark",
            Control::Tick(_) => "tick",
            Control::Barrier { .. } => "barrier",
            Control::EndOfInput => "end of input",
        }
    }
}

/// What a partition actor receives.
#[derive(Debug)]
pub enum ToPartition {
    /// Records, in source order for this key range.
    Data(Vec<Stamped>),
    /// A control message.
    Control(Control),
}

/// What the sink actor receives; every item names the batch / epoch it belongs to. Output rows
/// do not pass here: the partition actors write them ([`crate::sink::RowWriter`]).
#[derive(Debug)]
pub enum ToSink {
    /// Records dropped as late.
    Late {
        /// Batch / epoch.
        id: u64,
        /// The records.
        records: Vec<Record>,
    },
    /// Records the operator refused (e.g. `ARITHMETIC_OVERFLOW in sum(v)`), or output rows on
    /// which the output steps failed: dead letters, which the sink actor encodes with the query's input
    /// column names (its output column names for rows).
    Rejected {
        /// Batch / epoch.
        id: u64,
        /// For output rows on which the output steps failed (a SQL query's HAVING or select
        /// list, the sink's `select`), the field of the step that failed on each, in the order of
        /// `records` (`query.sql`, `sink.select`); empty for records the operator refused.
        fields: Vec<std::sync::Arc<str>>,
        /// The records and why each was refused.
        records: Vec<eddy_engine::operator::Rejected>,
    },
    /// Dead letters of rows a chained query could not take between its stages
    /// ([`eddy_engine::operator::Output::dead_letters`]), already encoded: counted with the
    /// malformed records, as [`ToSink::Rejected`].
    ChainRejected {
        /// Batch / epoch.
        id: u64,
        /// The lines (`{"reason", "source": "query.sql", "record"}` JSON objects).
        lines: Vec<String>,
    },
    /// Dead letters, already encoded as `{"reason", "source", "record"}` JSON objects.
    DeadLetters {
        /// Batch / epoch.
        id: u64,
        /// The lines.
        lines: Vec<String>,
    },
    /// A producer (a partition actor or the source) has sent or written everything of `id`.
    End {
        /// Batch / epoch.
        id: u64,
        /// Rows the producer wrote to the main sink for `id` (its [`crate::sink::RowWriter`]).
        rows: u64,
    },
    /// A producer is finished for good.
    Done {
        /// Rows it wrote to batches / epochs it did not end (`(id, rows)`): a drain or a stop.
        leftovers: Vec<(u64, u64)>,
    },
}

/// What the coordinator receives.
#[derive(Debug)]
pub enum ToCoordinator {
    /// A partition actor snapshotted its state at the barrier of `epoch` (real-time) or at the
    /// end of batch `epoch` (micro-batch, with checkpoints only).
    BarrierAck {
        /// The epoch.
        epoch: u64,
        /// Which actor.
        partition: usize,
        /// Keys held after the barrier (state size).
        state_len: usize,
        /// With checkpoints: the snapshot, stored.
        snapshot: Option<SnapshotMeta>,
    },
    /// With checkpoints: the source at the barrier of `id` (or the end of batch `id`).
    SourceAt {
        /// The batch / epoch.
        id: u64,
        /// How far the source was consumed (`None`: nothing yet, or it cannot resume).
        offset: Option<SourceOffset>,
        /// Clock and watermark.
        driver: DriverState,
        /// The sources after the first: offsets and event times (empty with one source).
        more_sources: Vec<crate::checkpoint::manifest::SavedSource>,
    },
    /// The sink prepared batch / epoch `id` (durable, not yet visible); it commits on
    /// [`SinkCommand::Commit`].
    Prepared {
        /// The batch / epoch.
        id: u64,
        /// Rows written in it.
        rows: u64,
    },
    /// The sink committed batch / epoch `id`.
    Committed {
        /// The batch / epoch.
        id: u64,
        /// Rows written in it.
        rows: u64,
    },
    /// An actor failed; the run stops with exit 1.
    Failed(String),
    /// The sink has finished (every producer done).
    SinkDone,
}

/// What the coordinator tells the source.
#[derive(Debug)]
pub enum ToSource {
    /// Batch / epoch `id` is committed.
    Committed(u64),
    /// Stop: drain and end.
    Stop,
}

/// What the coordinator tells the sink actor (second phase of the commit).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SinkCommand {
    /// Batch / epoch `id` is checkpointed (or needs no checkpoint): make it visible.
    Commit(u64),
    /// The run failed: commit nothing more and finish.
    Abort,
}
