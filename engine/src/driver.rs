//! Single-threaded drivers of one operator: the micro-batch sequence (watermarks per batch,
//! Spark's no-data batch, the replay clock's processing time) and the real-time loop (clock,
//! timers, per-record watermark). The runtime (`eddy-actors`) splits the same steps across
//! threads: the source side owns the [`MicroBatchSequencer`] / [`RealTimeClock`] decisions,
//! partition actors own operators. Tests drive whole queries with these directly.

use crate::operator::{BatchContext, Operator, Output};
use crate::time::Timestamp;
use crate::value::Record;
use crate::watermark::{BatchWatermarks, WatermarkTracker};
use crate::watermark_union::UnionWatermark;

/// Decides the watermarks, numbering and processing time of micro-batches (SEMANTICS.md
/// "Watermark", micro-batch; PIPELINE.md "Replay clock").
#[derive(Clone, Debug)]
pub struct MicroBatchSequencer {
    /// The sources' watermarks (one source: its event-time column and tracker).
    watermark: UnionWatermark,
    /// Replay clock column, if the processing time comes from the data.
    replay_column: Option<usize>,
    next_batch: u64,
    current: BatchWatermarks,
    last_processing_time: Timestamp,
}

impl MicroBatchSequencer {
    /// A sequencer for a query with this watermark (column index, tracker) and replay column.
    pub fn new(watermark: Option<(usize, WatermarkTracker)>, replay_column: Option<usize>) -> MicroBatchSequencer {
        MicroBatchSequencer::with_sources(UnionWatermark::single(watermark), replay_column)
    }

    /// A sequencer for a query over several sources with these watermarks (SEMANTICS.md "Several
    /// sources (union)": the watermark a batch uses is computed from the batches before it, per
    /// source, then combined).
    pub fn with_sources(watermark: UnionWatermark, replay_column: Option<usize>) -> MicroBatchSequencer {
        MicroBatchSequencer {
            watermark,
            replay_column,
            next_batch: 0,
            current: BatchWatermarks::INITIAL,
            last_processing_time: Timestamp::MIN,
        }
    }

    /// Starts a batch of `records`: returns its context. `system_now` is the batch's start under
    /// the system clock (ignored under the replay clock, where the processing time is the largest
    /// replay-column value in the batch, or the previous batch's if none is larger).
    pub fn begin(&mut self, records: &[Record], system_now: Timestamp) -> BatchContext {
        let processing_time = match self.replay_column {
            Some(c) => records
                .iter()
                .filter_map(|r| r.values[c].as_timestamp())
                .fold(self.last_processing_time, Timestamp::max),
            None => system_now.max(self.last_processing_time),
        };
        self.begin_at(processing_time)
    }

    /// Starts a batch (with or without data) at `processing_time` (never earlier than the last).
    pub fn begin_at(&mut self, processing_time: Timestamp) -> BatchContext {
        let processing_time = processing_time.max(self.last_processing_time);
        self.last_processing_time = processing_time;
        let ctx = BatchContext { batch_id: self.next_batch, watermarks: self.current, processing_time };
        self.next_batch += 1;
        ctx
    }

    /// Counts the event times of a batch's records (call after [`Self::begin`], before the
    /// next batch), so the next batch's watermarks include them.
    pub fn observe(&mut self, records: &[Record]) {
        self.observe_source(0, records);
    }

    /// As [`Self::observe`], for records of source `input` (in the pipeline's source order).
    ///
    /// # Panics
    /// When `input` is not a source of the sequencer.
    pub fn observe_source(&mut self, input: usize, records: &[Record]) {
        let now = self.last_processing_time;
        for r in records {
            self.watermark.observe(input, r, now);
        }
    }

    /// Ends the batch: the next batch's watermarks. Returns whether W moved (a no-data batch
    /// is then due when no input is waiting, if the operator wants one).
    pub fn end(&mut self) -> (Timestamp, Timestamp) {
        let evicted_with = self.current.evict;
        if self.watermark.is_some() {
            let w = self.watermark.update(self.last_processing_time);
            self.current = BatchWatermarks { late: self.current.evict, evict: w.max(self.current.evict) };
        } else {
            self.current = BatchWatermarks { late: self.current.evict, evict: self.current.evict };
        }
        (evicted_with, self.current.evict)
    }

    /// The next batch's number.
    pub fn next_batch_id(&self) -> u64 {
        self.next_batch
    }

    /// The last batch's processing time.
    pub fn last_processing_time(&self) -> Timestamp {
        self.last_processing_time
    }

    /// The watermarks the next batch will use.
    pub fn watermarks(&self) -> BatchWatermarks {
        self.current
    }

    /// The largest event time seen (`None` before any, or without a watermark).
    pub fn max_event_time(&self) -> Option<Timestamp> {
        self.watermark.max_event_time(0)
    }

    /// The sources' watermarks (for checkpoints: each source's largest event time).
    pub fn sources(&self) -> &UnionWatermark {
        &self.watermark
    }

    /// The sources' watermarks, to restore a checkpoint's per-source state into.
    pub fn sources_mut(&mut self) -> &mut UnionWatermark {
        &mut self.watermark
    }

    /// Resumes a sequence restored from a checkpoint: the next batch is `next_batch`, with
    /// watermarks `current`, after a batch at `last_processing_time`, having seen event times up
    /// to `max_event_time`.
    pub fn resume(
        &mut self,
        next_batch: u64,
        current: BatchWatermarks,
        last_processing_time: Timestamp,
        max_event_time: Option<Timestamp>,
    ) {
        self.next_batch = next_batch;
        self.current = current;
        self.last_processing_time = last_processing_time;
        if let Some(t) = max_event_time {
            self.watermark.observe_time(0, t);
        }
        self.watermark.resume_combined(current.evict);
    }
}

/// The output of one micro-batch.
#[derive(Debug, Default)]
pub struct BatchOutput {
    /// Batch number.
    pub batch_id: u64,
    /// Rows and late records.
    pub output: Output,
}

/// Runs one operator over micro-batches in one thread.
#[derive(Debug)]
pub struct MicroBatchRunner {
    op: Box<dyn Operator>,
    seq: MicroBatchSequencer,
    last_moved: Option<(Timestamp, Timestamp)>,
}

impl MicroBatchRunner {
    /// A runner of `op` with this sequencer.
    pub fn new(op: Box<dyn Operator>, seq: MicroBatchSequencer) -> MicroBatchRunner {
        MicroBatchRunner { op, seq, last_moved: None }
    }

    /// Runs one batch of input (`system_now`: see [`MicroBatchSequencer::begin`]).
    pub fn run_batch(&mut self, records: Vec<Record>, system_now: Timestamp) -> BatchOutput {
        let ctx = self.seq.begin(&records, system_now);
        self.seq.observe(&records);
        self.run(ctx, records)
    }

    fn run(&mut self, ctx: BatchContext, records: Vec<Record>) -> BatchOutput {
        let mut out = Output::default();
        self.op.begin_batch(&ctx);
        for r in records {
            self.op.on_record(&r, ctx.watermarks.late, &mut out);
        }
        self.op.end_batch(&mut out);
        self.last_moved = Some(self.seq.end());
        BatchOutput { batch_id: ctx.batch_id, output: out }
    }

    /// At the end of input (or when a trigger finds nothing new): the batch without new data,
    /// if one is due. With `until` (replay clock) that batch runs at `until` and is always run;
    /// otherwise it runs when the last batch moved the watermark and the operator wants it
    /// (Spark's no-data batch).
    pub fn idle_batch(&mut self, until: Option<Timestamp>, system_now: Timestamp) -> Option<BatchOutput> {
        let due = match (until, self.last_moved) {
            (Some(_), _) => true,
            (None, Some((before, after))) => self.op.wants_no_data_batch(before, after),
            (None, None) => false,
        };
        if !due {
            return None;
        }
        let at = until.unwrap_or(system_now);
        let ctx = self.seq.begin_at(at);
        let out = self.run(ctx, Vec::new());
        self.last_moved = None;
        Some(out)
    }

    /// The operator.
    pub fn operator(&self) -> &dyn Operator {
        self.op.as_ref()
    }
}

/// The processing-time clock and watermark of real-time mode, as the source side keeps them:
/// before a record is processed, the replay clock moves to its column value (never back) and W
/// is the value before the record's own event time counts.
#[derive(Clone, Debug)]
pub struct RealTimeClock {
    watermark: UnionWatermark,
    replay_column: Option<usize>,
    now: Timestamp,
}

/// What the clock says for one record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RecordStamp {
    /// Processing time at which the record is processed.
    pub now: Timestamp,
    /// W as it stood when the record arrived.
    pub watermark: Timestamp,
}

impl RealTimeClock {
    /// A clock with this watermark (column, tracker) and replay column.
    pub fn new(watermark: Option<(usize, WatermarkTracker)>, replay_column: Option<usize>) -> RealTimeClock {
        RealTimeClock::with_sources(UnionWatermark::single(watermark), replay_column)
    }

    /// A clock for a query over several sources with these watermarks (SEMANTICS.md "Several
    /// sources (union)", real-time).
    pub fn with_sources(watermark: UnionWatermark, replay_column: Option<usize>) -> RealTimeClock {
        RealTimeClock { watermark, replay_column, now: Timestamp::MIN }
    }

    /// Stamps `record` (`system_now` is used without a replay column) and counts its event time.
    #[inline]
    pub fn stamp(&mut self, record: &Record, system_now: Timestamp) -> RecordStamp {
        self.stamp_source(0, record, system_now)
    }

    /// As [`Self::stamp`], for a record of source `input` (in the pipeline's source order): the
    /// record is judged against the pipeline watermark as it stood when it arrived.
    ///
    /// # Panics
    /// When `input` is not a source of the clock.
    // (always: the source loop is large, and left to itself the compiler calls it, which
    // costs about 6 instructions a record on the q7 file run)
    #[inline(always)]
    pub fn stamp_source(&mut self, input: usize, record: &Record, system_now: Timestamp) -> RecordStamp {
        let t = match self.replay_column {
            Some(c) => record.values[c].as_timestamp().unwrap_or(self.now),
            None => system_now,
        };
        self.now = self.now.max(t);
        let watermark = self.watermark.stamp(input, record, self.now);
        RecordStamp { now: self.now, watermark }
    }

    /// Moves the clock to `t` (never back); returns the clock.
    pub fn advance(&mut self, t: Timestamp) -> Timestamp {
        self.now = self.now.max(t);
        self.now
    }

    /// The current processing time.
    pub fn now(&self) -> Timestamp {
        self.now
    }

    /// The current watermark.
    #[inline]
    pub fn watermark(&self) -> Timestamp {
        self.watermark.at(self.now)
    }

    /// The largest event time seen (`None` before any, or without a watermark); with several
    /// sources, the first source's ([`Self::sources`] has each one's).
    pub fn max_event_time(&self) -> Option<Timestamp> {
        self.watermark.max_event_time(0)
    }

    /// The sources' watermarks (for checkpoints: each source's largest event time).
    pub fn sources(&self) -> &UnionWatermark {
        &self.watermark
    }

    /// The sources' watermarks, to restore a checkpoint's per-source state into.
    pub fn sources_mut(&mut self) -> &mut UnionWatermark {
        &mut self.watermark
    }

    /// Resumes a clock restored from a checkpoint: processing time `now`, event times seen up to
    /// `max_event_time`.
    pub fn resume(&mut self, now: Timestamp, max_event_time: Option<Timestamp>) {
        self.now = self.now.max(now);
        if let Some(t) = max_event_time {
            self.watermark.observe_time(0, t);
        }
    }
}

/// Runs one operator in real-time mode in one thread: for each record, the clock moves (timers
/// fire), then the record is processed with the watermark as it stood.
#[derive(Debug)]
pub struct RealTimeRunner {
    op: Box<dyn Operator>,
    clock: RealTimeClock,
}

impl RealTimeRunner {
    /// A runner of `op` with this clock.
    pub fn new(op: Box<dyn Operator>, clock: RealTimeClock) -> RealTimeRunner {
        RealTimeRunner { op, clock }
    }

    /// Processes one record; its rows (and rows of timers due before it) go to `out`.
    pub fn on_record(&mut self, record: Record, system_now: Timestamp, out: &mut Output) {
        let stamp = self.clock.stamp(&record, system_now);
        self.op.advance_clock(stamp.now, out);
        self.op.on_record(&record, stamp.watermark, out);
    }

    /// Moves the clock to `t`, firing timers on the way.
    pub fn advance_clock(&mut self, t: Timestamp, out: &mut Output) {
        let now = self.clock.advance(t);
        self.op.advance_clock(now, out);
    }

    /// The operator.
    pub fn operator(&self) -> &dyn Operator {
        self.op.as_ref()
    }
}
