//! The source actor: polls the source, decodes, keeps clock and watermark, joins each record
//! with a static table when the query has a stream-static join ([`crate::join`]), cuts
//! micro-batches or epochs, routes records to partition actors by key range, and puts control
//! messages in-band.
//!
//! Real-time: each record is stamped with the processing time at which it is processed (the
//! replay column, or the system clock) and the watermark as it stood when it arrived; an epoch
//! ends with a barrier every `trigger` of processing time (replay clock: when a record's time
//! crosses the next multiple of `trigger`).
//!
//! No epoch without progress (system clock): a boundary at which nothing happened since the last
//! barrier (no item polled, so no record, watermark move or dead letter, and no rows or late
//! records written by a partition actor, [`SourceActor::output`], timers included) closes no
//! epoch and writes no checkpoint; the epoch goes on, and meanwhile the source waits for input
//! (up to 100 ms a poll) rather than for the boundary. An idle pipeline thus costs next to no CPU
//! even with `trigger = "0 seconds"`, and its checkpoint's age grows. Rows a partition actor's
//! timer writes while the source waits are closed into an epoch within that 100 ms. A barrier's
//! own rows count as progress, so one more epoch may follow them.
//!
//! A stop (SIGINT / SIGTERM, the `stop` flag) in real-time mode:
//! - system clock, or no checkpoint: the current epoch ends now with a last barrier (system-clock
//!   boundaries are instants of the wall clock, which no restart reproduces anyway; without a
//!   checkpoint the stop is final and ends the input as its end would);
//! - replay clock with checkpoints: epoch boundaries are a function of the input, and a restart
//!   must write the same epochs as an uninterrupted run. So the source reads on until a record
//!   crosses the current epoch's boundary, closes the epoch there with its usual barrier (the
//!   restart begins with that record) and ends. If the input pauses first (a poll finds nothing)
//!   or the boundary is not reached within 10 s (`STOP_FINISH_WITHIN`), the epoch is not closed: its
//!   rows are not committed (the sink discards them; a files sink's temporary file is removed by
//!   the restart) and the restart reads it again from the last checkpoint, as after a crash. The
//!   run still exits 0: every epoch whose boundary was reached is committed. A sink without
//!   exactly-once (Kafka) then holds that epoch's rows twice, as after a crash.
//!
//! Several sources in real-time mode: the source actor polls them in turn, one poll each, so
//! the records of a poll stay together and the sources' records interleave by poll. With
//! checkpoints, a barrier keeps where the turn stood ([`DriverState::RealTimeSources`]: the
//! source whose poll it cut and how many items of that poll were left, when the poll ended at its
//! item limit), and a restart reads that rest first, then goes on in turn: the records interleave
//! as in the uninterrupted run, so the same records are late and the same pairs of a
//! stream-stream join meet. A restored source's first poll that gives nothing but the end of the
//! file it was reading (its offset keeps that file at the last line read, not as read whole) is
//! no turn. A files source with `max_files_per_trigger` above 1 does
//! not keep its place in a group of files in its offset, so a restart in the middle of a group
//! may interleave differently. A checkpoint written before the turn was kept restarts at the
//! first source.
//!
//! Micro-batch: a batch is one source unit (`max_files_per_trigger` files) or what arrived during
//! the trigger interval; the watermarks and processing time of a batch come from
//! [`eddy_engine::driver::MicroBatchSequencer`]; the next batch starts once the previous is
//! committed; at the end of input (or when a trigger finds nothing new) the no-data batch runs
//! when it is due, and the replay clock's `until` batch last.
//! A stop with checkpoints reads on to the end of the batch being read (its source unit, or
//! what is at hand when the input pauses), commits it and ends, so a restarted run cuts the same
//! batches as an uninterrupted one.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Instant;

use crossbeam_channel::{Receiver, SendTimeoutError, Sender, TrySendError};

use eddy_connectors::{Payload, Poll, Position, Rejection, SharedLines, Source, SourceItem, SourceOffset};
use eddy_engine::decode::Decoder;
use eddy_engine::driver::RealTimeClock;
use eddy_engine::operator::Mode;
use eddy_engine::output::{row_to_json_line, write_string};
use eddy_engine::plan::QueryPlan;
use eddy_engine::steps::{Applied, BatchScratch, NARROW_KEPT};
use eddy_engine::time::align_down;
use eddy_engine::{Duration, Record, Timestamp};

use crate::checkpoint::{DriverState, SavedSource};
use crate::clock::{Clock, SystemClock};
use crate::coordinator::UnitStarts;
use crate::join::TableJoin;
use crate::messages::{Control, Stamped, ToCoordinator, ToPartition, ToSink, ToSource};
use crate::metrics::{Metrics, micros_to_seconds};
use crate::partition::PartitionTask;
use crate::recycle::Spares;
use crate::routing::Router;

/// Records per data message to a partition actor.
pub(crate) const BATCH: usize = 256;
/// Items per source poll.
pub(crate) const POLL_MAX: usize = 4096;
/// Real-time: epochs the source may run ahead of the last committed one before it waits.
const MAX_EPOCHS_IN_FLIGHT: u64 = 64;
/// A stop under the replay clock with checkpoints reads on to the current epoch's boundary for at
/// most this long (wall time) before it leaves the epoch uncommitted instead.
const STOP_FINISH_WITHIN: std::time::Duration = std::time::Duration::from_secs(10);
/// How long the source waits on a full partition queue before telling the source to stop
/// fetching ([`Source::backpressure`]; Kafka: pause its partitions) until there is room.
const PAUSE_AFTER: std::time::Duration = std::time::Duration::from_millis(10);

/// Counters shared with the caller (progress, summary).
#[derive(Debug, Default)]
pub struct SourceCounters {
    /// Records decoded: routed, or dropped by the source's `filter` / a SQL query's WHERE
    /// before the watermark (so `eddy_records_in_total` counts every record read and decoded).
    pub records: AtomicU64,
    /// Records that could not be decoded (or that the source rejected as too large).
    pub malformed: AtomicU64,
    /// Files the source could not read to their end (their rest is a dead letter).
    pub unreadable_files: AtomicU64,
    /// Records dropped as late (counted by the sink actor).
    pub late: AtomicU64,
}

/// The source actor's wiring.
pub struct SourceActor {
    /// The source.
    pub source: Box<dyn Source>,
    /// The decoder of raw payloads. A CSV decoder takes each [`Payload::Header`] the source
    /// gives (one per file) as the header of the lines after it.
    pub decoder: Option<Decoder>,
    /// The query plan.
    pub plan: QueryPlan,
    /// Routing to key ranges.
    pub router: Router,
    /// Where records and control messages go: the partition actors.
    pub partitions: Downstream,
    /// Dead letters and batch ends.
    pub sink: Sender<ToSink>,
    /// Commits and stop requests.
    pub coordinator: Receiver<ToSource>,
    /// The clock.
    pub clock: Arc<dyn Clock>,
    /// Batch interval (micro-batch) or epoch interval (real-time).
    pub trigger: Duration,
    /// Set by a signal or a failure: drain and end.
    pub stop: Arc<AtomicBool>,
    /// Counters.
    pub counters: Arc<SourceCounters>,
    /// Metric handles (no-ops without `[metrics]`).
    pub metrics: Metrics,
    /// Start instants of batches / epochs (durations are taken at commit by the coordinator).
    pub units: Arc<UnitStarts>,
    /// Rolling-window queries: the frontier delay (frontier = processing time - delay).
    pub frontier_delay: Option<Duration>,
    /// Whether the pipeline has a `[dead_letter]` sink (log wording only).
    pub dead_letter: bool,
    /// Whether records whose source gives no creation instant are stamped with the instant of
    /// the poll that read them (one clock read per poll), so that a latency recorder
    /// ([`crate::RunOptions::latency`]) measures their time inside the engine: from the poll
    /// that read them to the sink's write. Always so with `[metrics]`.
    pub stamp_polls: bool,
    /// With checkpoints: where the source's offset and clock at each barrier / end of batch go.
    pub checkpoint: Option<Sender<ToCoordinator>>,
    /// The clock and watermark of a restored checkpoint, and the epoch / batch it closed (the
    /// source itself has already been moved past the checkpoint's offset).
    pub resume: Option<(u64, DriverState)>,
    /// Batches handed back by the partition actors ([`crate::recycle`]): their buffers are reused
    /// for new batches and their records given to the source before each poll
    /// ([`Source::recycle`]). [`Spares::none`]: no recycling.
    pub spares: Spares,
    /// Real-time: how many times the partition actors wrote rows or late records
    /// ([`crate::partition::PartitionActor::output`]); a boundary at which neither it nor the
    /// input moved since the last barrier closes no epoch.
    pub output: Arc<AtomicU64>,
    /// Test-only (`EDDY_TEST_STOP_AFTER`, see `src/main.rs`): once this batch / epoch is
    /// committed, end the run there, as a crash right after its checkpoint would (real-time:
    /// nothing after the barrier is sent; micro-batch: no batch after it).
    pub stop_after: Option<u64>,
    /// A SQL query's stream-static join ([`crate::join`]), run on each record after the clock
    /// and the watermark have seen it, before routing; `None` without one.
    pub join: Option<TableJoin>,
    /// A shared Kafka group's run ([`crate::group`]): records go to the partition actor of the
    /// input partition they came from, not by key range.
    pub by_input: Option<crate::group::InputRouting>,
    /// Every source of the pipeline, in its order (PIPELINE.md "Several sources"): `None` at
    /// [`SourceActor::active`], whose connector, decoder and steps are [`SourceActor::source`],
    /// [`SourceActor::decoder`] and the plan's `source_steps`; the others parked. One source:
    /// `[None]`.
    pub inputs: Vec<Option<SourceInput>>,
    /// With several sources, their names in the same order, which a dead letter's `"source"`
    /// begins with (`"clicks: 000.json:6"`); empty with one source (the position alone).
    pub source_names: Vec<String>,
    /// The index of the source being read.
    pub active: usize,
    /// A restored checkpoint's largest event time of each source after the first.
    pub resume_sources: Vec<Option<i64>>,
}

/// A source of several while another is read: its connector, decoder and steps (which end with
/// the projection into the union's columns), swapped in whole when it is read
/// (by the source actor), so decoding and steps run as for a single source.
pub struct SourceInput {
    /// The connector.
    pub source: Box<dyn Source>,
    /// Its decoder.
    pub decoder: Option<Decoder>,
    /// Its steps ([`eddy_engine::plan::SourcePlan::steps`]).
    pub steps: Arc<eddy_engine::steps::CompiledSteps>,
}

impl std::fmt::Debug for SourceInput {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SourceInput").finish_non_exhaustive()
    }
}

/// Where the source actor sends records and control messages.
#[derive(Debug)]
pub enum Downstream {
    /// One bounded channel per partition actor, each actor on its own thread.
    Actors(Vec<Sender<ToPartition>>),
    /// One partition in real-time mode: its task runs on the source actor's thread, each
    /// message handed over by a call (chained, as Flink chains operators that need no
    /// repartitioning): no thread hand-off, so no wake-up of another thread, per record. The
    /// source then waits for its input only until the task's next timer or snapshot step.
    /// Micro-batch mode never chains: its source waits for each batch's commit, which needs the
    /// partition's snapshot to go on meanwhile.
    Chained(Box<std::cell::RefCell<PartitionTask>>),
}

impl Downstream {
    /// The number of partitions (key ranges).
    pub fn len(&self) -> usize {
        match self {
            Downstream::Actors(txs) => txs.len(),
            Downstream::Chained(_) => 1,
        }
    }

    /// Whether there is no partition at all (never so in a run).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The chained task, if the partition runs on the source's thread.
    fn chained(&self) -> Option<std::cell::RefMut<'_, PartitionTask>> {
        match self {
            Downstream::Chained(task) => Some(task.borrow_mut()),
            Downstream::Actors(_) => None,
        }
    }
}

/// What the source last reported to the metrics.
#[derive(Debug)]
struct Reported {
    records: u64,
    malformed: u64,
    watermark: Timestamp,
    processing_time: Timestamp,
}

impl Reported {
    fn new() -> Reported {
        Reported { records: 0, malformed: 0, watermark: Timestamp::MIN, processing_time: Timestamp::MIN }
    }
}

impl std::fmt::Debug for SourceActor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SourceActor").field("partitions", &self.partitions.len()).finish()
    }
}

/// Why the source actor stopped early.
#[derive(Debug, thiserror::Error)]
pub enum SourceError {
    /// The source failed.
    #[error("source: {0}")]
    Source(#[from] eddy_connectors::ConnectorError),
    /// A peer actor is gone (it reported its own failure).
    #[error("a partition actor or the sink stopped")]
    PeerGone,
}

impl SourceActor {
    /// Runs until the input is exhausted or a stop is asked; then ends every partition actor.
    ///
    /// # Errors
    /// [`SourceError`] when the source fails or a peer is gone.
    pub fn run(mut self) -> Result<(), SourceError> {
        let result = match self.plan.mode {
            Mode::RealTime => self.run_real_time(),
            Mode::MicroBatch if self.inputs.len() > 1 => self.run_micro_batch_union(),
            Mode::MicroBatch => self.run_micro_batch(),
        };
        match &self.partitions {
            Downstream::Actors(txs) => {
                for p in txs {
                    // A partition actor that is gone has nothing left to end.
                    let _ = p.send(ToPartition::Control(Control::EndOfInput));
                }
            }
            Downstream::Chained(task) => {
                // As above: a task that has ended has nothing left to end (`false` is its end).
                let _ = task.borrow_mut().handle(ToPartition::Control(Control::EndOfInput));
            }
        }
        // As above: the sink may be gone after a failure.
        let _ = self.sink.send(ToSink::Done { leftovers: Vec::new() });
        result
    }

    fn broadcast(&self, c: Control) -> Result<(), SourceError> {
        for p in 0..self.partitions.len() {
            self.send_to(p, ToPartition::Control(c.clone()))?;
        }
        Ok(())
    }

    /// Sends to partition actor `p`; time spent waiting on its full queue is back-pressure, and
    /// past [`PAUSE_AFTER`] the source stops fetching until the message is sent.
    /// Chained: the task handles the message now; it is gone once it has ended.
    fn send_to(&self, p: usize, msg: ToPartition) -> Result<(), SourceError> {
        let txs = match &self.partitions {
            Downstream::Actors(txs) => txs,
            Downstream::Chained(task) => {
                return if task.borrow_mut().handle(msg) { Ok(()) } else { Err(SourceError::PeerGone) };
            }
        };
        match txs[p].try_send(msg) {
            Ok(()) => Ok(()),
            Err(TrySendError::Full(msg)) => {
                let waited = Instant::now();
                let sent = match txs[p].send_timeout(msg, PAUSE_AFTER) {
                    Ok(()) => Ok(()),
                    Err(SendTimeoutError::Timeout(msg)) => {
                        self.source.backpressure(true);
                        let sent = txs[p].send(msg).map_err(|_| SourceError::PeerGone);
                        self.source.backpressure(false);
                        sent
                    }
                    Err(SendTimeoutError::Disconnected(_)) => Err(SourceError::PeerGone),
                };
                self.metrics.partitions[p].backpressure.record(waited.elapsed().as_secs_f64());
                sent
            }
            Err(TrySendError::Disconnected(_)) => Err(SourceError::PeerGone),
        }
    }

    /// Sends every non-empty buffer, leaving it without capacity ([`SourceActor::route`] takes a
    /// spare one when it next pushes).
    fn flush(&self, buffers: &mut [Vec<Stamped>]) -> Result<(), SourceError> {
        for (p, buf) in buffers.iter_mut().enumerate() {
            if !buf.is_empty() {
                self.send_to(p, ToPartition::Data(std::mem::take(buf)))?;
            }
        }
        Ok(())
    }

    /// The partition actor of `record`, read `at` a position: its input partition's in a shared
    /// group's run, else its key range's.
    #[inline]
    fn actor_of(&mut self, record: &Record, at: At<'_>) -> usize {
        match self.by_input.as_mut() {
            Some(r) => r.actor_of(record, &at.position(), &self.metrics),
            None => self.router.route(record).0,
        }
    }

    /// Appends `s` to the buffer of partition actor `p` (a spare buffer when it has none), and
    /// sends the buffer once it holds [`BATCH`] records. Inlined: it runs per record, and the
    /// call cost as much as its body.
    #[inline(always)]
    fn route(&mut self, buffers: &mut [Vec<Stamped>], p: usize, s: Stamped) -> Result<(), SourceError> {
        let buf = &mut buffers[p];
        if buf.capacity() == 0 {
            *buf = self.spares.buffer(BATCH);
        }
        buf.push(s);
        if buf.len() >= BATCH { self.send_full(buffers, p) } else { Ok(()) }
    }

    /// Sends the full buffer of partition actor `p` (once per [`BATCH`] records: kept out of
    /// [`SourceActor::route`], which runs per record).
    #[inline(never)]
    fn send_full(&self, buffers: &mut [Vec<Stamped>], p: usize) -> Result<(), SourceError> {
        let data = std::mem::take(&mut buffers[p]);
        self.send_to(p, ToPartition::Data(data))
    }

    /// Reports counters (as deltas of the shared atomics: nothing per record), watermark,
    /// frontier and queue depths. `watermark` / `processing_time`: `None` keeps the last ones.
    fn report(&self, last: &mut Reported, watermark: Option<Timestamp>, processing_time: Option<Timestamp>) {
        if !self.metrics.enabled() {
            return;
        }
        let records = self.counters.records.load(Ordering::Relaxed);
        let malformed = self.counters.malformed.load(Ordering::Relaxed);
        // several sources: what was counted since the last report is the active source's
        let (records_in, records_malformed) = match self.metrics.sources.get(self.active) {
            Some(s) => (&s.records_in, &s.records_malformed),
            None => (&self.metrics.records_in, &self.metrics.records_malformed),
        };
        records_in.increment(records.saturating_sub(last.records));
        records_malformed.increment(malformed.saturating_sub(last.malformed));
        last.records = records;
        last.malformed = malformed;
        last.watermark = watermark.unwrap_or(last.watermark).max(last.watermark);
        last.processing_time = processing_time.unwrap_or(last.processing_time).max(last.processing_time);
        if last.watermark != Timestamp::MIN {
            self.metrics.watermark.set(micros_to_seconds(last.watermark.0));
            let wall = SystemClock.now();
            self.metrics.watermark_lag.set(micros_to_seconds(wall.0.saturating_sub(last.watermark.0)));
        }
        if let Some(delay) = self.frontier_delay
            && last.processing_time != Timestamp::MIN
        {
            self.metrics.rolling_frontier.set(micros_to_seconds(last.processing_time.0.saturating_sub(delay.0)));
        }
        if let Downstream::Actors(txs) = &self.partitions {
            for (p, tx) in txs.iter().enumerate() {
                self.metrics.partitions[p].queue_depth.set(tx.len() as f64);
            }
        }
    }

    /// [`Spares::take_returned`] with the decoder's width and the source steps' narrower one.
    fn take_returned(&mut self) {
        let width = self.decoder.as_ref().map(Decoder::width);
        self.spares.take_returned(self.source.as_mut(), width, self.plan.source_steps.narrows_to());
    }

    /// With source steps: decodes `items` (what one poll gave, or a micro-batch) and runs the
    /// steps on their records as one batch ([`CompiledSteps::apply_batch`]: one pass per
    /// expression over the batch instead of every expression per record). Items are counted
    /// as a poll's `max` counts them: a run of lines ([`Payload::Lines`]) as its lines, each
    /// read in place. `decoded[i]` is item `i`'s record after the steps, or `None` for an item
    /// that makes none: a header, input the source rejected, a malformed record, one filtered
    /// out or whose steps failed, each counted as [`SourceActor::decode_at`] does one at a time,
    /// its dead letters in `dead` with the item's index, in item order (so that a caller writes
    /// them where one at a time would: in the epoch of the item); a record the source generated
    /// is taken out of its item. `batch`: buffers kept from poll to poll.
    /// Without source steps, nothing is done (`false`): the items are decoded one at a time.
    fn decode_with_steps(
        &mut self,
        items: &mut [SourceItem],
        decoded: &mut Vec<Option<Record>>,
        batch: &mut StepsBatch,
        dead: &mut Vec<(usize, String)>,
        last_log: &mut Option<Instant>,
    ) -> bool {
        if self.plan.source_steps.is_empty() {
            return false;
        }
        decoded.clear();
        batch.records.clear();
        batch.at.clear();
        let mut one = Vec::new();
        let mut i = 0;
        for item in items.iter_mut() {
            if let Payload::Lines(lines) = &item.payload {
                for (k, line) in lines.iter().enumerate() {
                    decoded.push(None);
                    let record = self.decode_raw(line, At::Line { run: &item.position, k }, &mut one, last_log);
                    batch.add(i, record, &mut one, dead);
                    i += 1;
                }
                continue;
            }
            decoded.push(None);
            let record = match &mut item.payload {
                Payload::Record(r) => Some(std::mem::replace(r, Record::new(Vec::new()))),
                Payload::Raw(bytes) => self.decode_raw(bytes, At::Item(&item.position), &mut one, last_log),
                Payload::Line(line) => self.decode_raw(line.bytes(), At::Item(&item.position), &mut one, last_log),
                Payload::Lines(_) => unreachable!("read above"),
                Payload::Header(header) => {
                    self.set_header(header, &item.position);
                    None
                }
                Payload::Rejected(rejection) => {
                    self.reject(rejection, &item.position, &mut one);
                    None
                }
            };
            batch.add(i, record, &mut one, dead);
            i += 1;
        }
        let steps = self.plan.source_steps.clone();
        // A `select` narrower than the decoder's records moves their values into the narrower
        // records handed back, and gives the decoder's back (no record allocated or shrunk).
        let narrow = batch.scratch.narrow_records();
        let room = NARROW_KEPT.saturating_sub(narrow.len());
        let back = self.spares.narrow_records();
        narrow.extend(back.drain(back.len().saturating_sub(room)..));
        let mut rejected = Vec::new();
        steps.apply_batch(&mut batch.records, &mut batch.scratch, |k, a| rejected.push((k, a)));
        // the records a narrower `select` emptied: to the decoder, or (the source's own
        // records, `Payload::Record`) back to the source, as the partitions' go
        if self.decoder.is_some() {
            for record in batch.scratch.emptied() {
                self.spares.unused_record(record);
            }
        } else {
            let mut back: Vec<Record> = batch.scratch.emptied().collect();
            if !back.is_empty() {
                self.source.recycle(&mut back);
            }
        }
        // Where each item's records start among them (for the rare records the steps reject).
        let starts: Vec<usize> = if rejected.is_empty() {
            Vec::new()
        } else {
            items.iter().scan(0, |next, item| Some(std::mem::replace(next, *next + item.units()))).collect()
        };
        for (k, applied) in rejected {
            let at = batch.at[k];
            let j = starts.partition_point(|&start| start <= at) - 1;
            let item = &items[j];
            let (raw, position) = match &item.payload {
                Payload::Lines(lines) => (Some(lines.line(at - starts[j])), item.position.line_of_run(at - starts[j])),
                payload => (payload.raw_bytes(), item.position.clone()),
            };
            match applied {
                // read and decoded, then filtered out: counted in, as Spark counts numInputRows
                Applied::Drop => {
                    self.counters.records.fetch_add(1, Ordering::Relaxed);
                }
                Applied::Failed { reason, input } => {
                    let json;
                    let text = match raw {
                        Some(raw) => raw,
                        None => {
                            json = row_to_json_line(&self.plan.decoded_names(), &input.values);
                            json.trim_end().as_bytes()
                        }
                    };
                    self.malformed(
                        "record whose filter or computed column failed (the source's filter / select, or a SQL query's WHERE, keys or aggregate inputs)",
                        &reason,
                        text,
                        &position,
                        &mut one,
                        last_log,
                    );
                    dead.extend(one.drain(..).map(|d| (at, d)));
                }
                Applied::Keep(_) => {}
            }
        }
        // in item order, as one at a time would give them
        dead.sort_by_key(|(i, _)| *i);
        for (r, &k) in batch.records.drain(..).zip(batch.scratch.kept()) {
            decoded[batch.at[k as usize]] = Some(r);
        }
        true
    }

    /// Micro-batch: decodes a batch's items; with a join, keeps each record's position for its
    /// dead letters ([`TableJoin::positions`]).
    fn decode_batch(
        &mut self,
        mut items: Vec<SourceItem>,
        now: Timestamp,
        dead: &mut Vec<String>,
        last_log: &mut Option<Instant>,
    ) -> Vec<Record> {
        // the source steps' `current_timestamp()`: the batch's processing time (system clock;
        // validation refuses it there under the replay clock)
        eddy_engine::expr::set_processing_time(now);
        let mut records = Vec::with_capacity(items.iter().map(SourceItem::units).sum());
        let mut decoded = Vec::new();
        let mut dead_at = Vec::new();
        let pre = self.decode_with_steps(&mut items, &mut decoded, &mut StepsBatch::default(), &mut dead_at, last_log);
        dead.extend(dead_at.into_iter().map(|(_, d)| d));
        if let Some(r) = self.by_input.as_mut() {
            r.batch.clear();
        }
        // (`decoded` counts a run's lines, as `i` does)
        let mut i = 0;
        for SourceItem { payload, position, .. } in items {
            let record = match payload {
                Payload::Lines(lines) => {
                    for (k, line) in lines.iter().enumerate() {
                        let at = At::Line { run: &position, k };
                        let record = if pre { decoded[i].take() } else { self.decode_raw(line, at, dead, last_log) };
                        if let Some(r) = record {
                            self.keep_decoded(r, at, &mut records);
                        }
                        i += 1;
                    }
                    continue;
                }
                Payload::Raw(line) if pre => {
                    self.spares.decoded_line(line);
                    decoded[i].take()
                }
                _ if pre => decoded[i].take(),
                payload => self.decode_at(payload, &position, dead, last_log),
            };
            if let Some(r) = record {
                self.keep_decoded(r, At::Item(&position), &mut records);
            }
            i += 1;
        }
        records
    }

    /// Micro-batch: a record decoded from what was read `at` a position, added to `records`;
    /// in a shared group's run its partition actor is noted, with a join its position
    /// ([`TableJoin::positions`]).
    #[inline(always)]
    fn keep_decoded(&mut self, record: Record, at: At<'_>, records: &mut Vec<Record>) {
        if let Some(routing) = self.by_input.as_mut() {
            let actor = routing.actor_of(&record, &at.position(), &self.metrics);
            routing.batch.push(actor);
        }
        records.push(record);
        if let Some(j) = self.join.as_mut() {
            j.positions.push(at.position().into_owned());
        }
    }

    /// Joins a record with the table and runs the query's steps on each joined record
    /// ([`TableJoin::apply`]); the results go to `out`. A joined record whose expression fails is
    /// malformed, as in [`SourceActor::apply_steps`]; its dead letter holds the joined record's
    /// columns (`position`: where the record was read).
    fn join_record(
        &mut self,
        record: Record,
        position: &Position,
        out: &mut Vec<Record>,
        dead: &mut Vec<String>,
        last_log: &mut Option<Instant>,
    ) {
        let Some(join) = &self.join else { return };
        let mut failed = Vec::new();
        join.apply(record, |a| match a {
            Applied::Keep(r) => out.push(r),
            Applied::Drop => {}
            Applied::Failed { reason, input } => failed.push((reason, input)),
        });
        for (reason, input) in failed {
            let names = self.plan.join.as_ref().map(|j| j.spec.names.clone()).unwrap_or_default();
            let json = row_to_json_line(&names, &input.values);
            self.malformed(
                "joined record whose query step failed",
                &reason,
                json.trim_end().as_bytes(),
                position,
                dead,
                last_log,
            );
        }
    }

    /// A record an expression failed on (`what` it was, `reason` the error): counted as
    /// malformed, logged at most once a second, and its dead letter (`record`: its text) added to
    /// `dead`.
    fn malformed(
        &self,
        what: &str,
        reason: &str,
        record: &[u8],
        position: &Position,
        dead: &mut Vec<String>,
        last_log: &mut Option<Instant>,
    ) {
        self.counters.malformed.fetch_add(1, Ordering::Relaxed);
        if last_log.is_none_or(|t| t.elapsed() >= std::time::Duration::from_secs(1)) {
            tracing::warn!(position = %position, %reason, dead_letter = self.dead_letter, "{what}: malformed (sent to the dead letters when the pipeline has a [dead_letter]; at most one such line a second)");
            *last_log = Some(Instant::now());
        }
        dead.push(dead_letter(reason, self.source_name(), position, record));
    }

    /// Decodes a payload read at `position`: a record as it is, raw bytes by the decoder.
    /// Inlined into the loops that call it per item (the call and the payload's move cost as
    /// much as its own work); the rare cases (steps, headers, rejections) are calls. A run of
    /// lines ([`Payload::Lines`]) is no payload of one record: callers read its lines
    /// themselves, or split it first ([`SourceItem::split_lines`]).
    #[inline(always)]
    fn decode_at(
        &mut self,
        payload: Payload,
        position: &Position,
        dead: &mut Vec<String>,
        last_log: &mut Option<Instant>,
    ) -> Option<Record> {
        match payload {
            Payload::Record(r) if self.plan.source_steps.is_empty() => Some(r),
            Payload::Line(line) if self.plan.source_steps.is_empty() => {
                self.decode_raw(line.bytes(), At::Item(position), dead, last_log)
            }
            Payload::Raw(bytes) if self.plan.source_steps.is_empty() => {
                let r = self.decode_raw(&bytes, At::Item(position), dead, last_log);
                self.spares.decoded_line(bytes);
                r
            }
            Payload::Record(r) => self.apply_steps(r, None, position, dead, last_log),
            Payload::Raw(bytes) => {
                let r = self.decode_raw(&bytes, At::Item(position), dead, last_log);
                let r = r.and_then(|r| self.apply_steps(r, Some(&bytes), position, dead, last_log));
                self.spares.decoded_line(bytes);
                r
            }
            Payload::Line(line) => {
                let bytes = line.bytes();
                let r = self.decode_raw(bytes, At::Item(position), dead, last_log);
                r.and_then(|r| self.apply_steps(r, Some(bytes), position, dead, last_log))
            }
            Payload::Header(header) => {
                self.set_header(&header, position);
                None
            }
            Payload::Rejected(rejection) => {
                self.reject(&rejection, position, dead);
                None
            }
            Payload::Lines(_) => unreachable!("a run of lines is read line by line"),
        }
    }

    /// Runs the source's `filter` / `select` on a decoded record (SEMANTICS.md "Source filters
    /// and projections"). A record whose expression fails is malformed: counted, logged at most
    /// once a second, and written to the dead letters with the expression's error as the reason
    /// and its raw text (`raw`; a generated record: the JSON of its decoded columns).
    #[inline(never)]
    fn apply_steps(
        &mut self,
        record: Record,
        raw: Option<&[u8]>,
        position: &Position,
        dead: &mut Vec<String>,
        last_log: &mut Option<Instant>,
    ) -> Option<Record> {
        match self.plan.source_steps.apply(record) {
            Applied::Keep(r) => Some(r),
            // read and decoded, then filtered out: counted in, as Spark counts numInputRows
            Applied::Drop => {
                self.counters.records.fetch_add(1, Ordering::Relaxed);
                None
            }
            Applied::Failed { reason, input } => {
                let json;
                let record = match raw {
                    Some(raw) => raw,
                    None => {
                        json = row_to_json_line(&self.plan.decoded_names(), &input.values);
                        json.trim_end().as_bytes()
                    }
                };
                self.malformed("record whose filter or computed column failed (the source's filter / select, or a SQL query's WHERE, keys or aggregate inputs)", &reason, record, position, dead, last_log);
                None
            }
        }
    }

    /// Input the source rejected: counted (an unreadable file as such, a record too large as
    /// malformed) and written to the dead letters as `{"reason", "source", "record"}`, the
    /// record being its first bytes. The source has logged it.
    #[inline(never)]
    fn reject(&mut self, rejection: &Rejection, position: &Position, dead: &mut Vec<String>) {
        match rejection {
            Rejection::TooLarge { .. } => self.counters.malformed.fetch_add(1, Ordering::Relaxed),
            Rejection::UnreadableFile { .. } => {
                self.metrics.files_unreadable.increment(1);
                self.counters.unreadable_files.fetch_add(1, Ordering::Relaxed)
            }
        };
        dead.push(dead_letter(&rejection.reason(), self.source_name(), position, rejection.head()));
    }

    /// A CSV header from the source: the lines after it are decoded under it. A header the
    /// decoder cannot use (it lacks the event-time column, say) is logged; the lines under it go
    /// to the dead letters, each with the reason.
    #[inline(never)]
    fn set_header(&mut self, header: &[u8], position: &Position) {
        if let Some(Decoder::Csv(csv)) = &mut self.decoder
            && let Err(e) = csv.set_header(header)
        {
            tracing::warn!(position = %position, reason = %e, "CSV header refused: the lines under it are malformed");
        }
    }

    /// Decodes raw bytes read `at` a position into a record handed back by the partition actors
    /// when one is at hand (`crate::recycle`), else a new one. Inlined (it runs per record); a
    /// failure is handled out of line ([`SourceActor::decode_failed`]).
    #[inline(always)]
    fn decode_raw(
        &mut self,
        bytes: &[u8],
        at: At<'_>,
        dead: &mut Vec<String>,
        last_log: &mut Option<Instant>,
    ) -> Option<Record> {
        let decoder = self.decoder.as_mut()?;
        let mut record = self.spares.record();
        match decoder.decode_into(bytes, &mut record) {
            Ok(()) => Some(record),
            Err(e) => {
                self.decode_failed(record, &e, bytes, at, dead, last_log);
                None
            }
        }
    }

    /// A record the decoder refused (`error`; `record`: the buffer it was decoded into, kept
    /// for reuse): counted as malformed, logged at most once a second, its dead letter added to
    /// `dead`.
    #[inline(never)]
    #[cold]
    fn decode_failed(
        &mut self,
        record: Record,
        error: &eddy_engine::decode::DecodeError,
        bytes: &[u8],
        at: At<'_>,
        dead: &mut Vec<String>,
        last_log: &mut Option<Instant>,
    ) {
        let position = &*at.position();
        self.spares.unused_record(record);
        self.counters.malformed.fetch_add(1, Ordering::Relaxed);
        let reason = error.to_string();
        if last_log.is_none_or(|t| t.elapsed() >= std::time::Duration::from_secs(1)) {
            if self.dead_letter {
                tracing::warn!(position = %position, %reason, "malformed record sent to the dead letters (at most one such line a second)");
            } else {
                tracing::warn!(position = %position, %reason, "malformed record dropped: the pipeline has no [dead_letter] (at most one such line a second)");
            }
            *last_log = Some(Instant::now());
        }
        dead.push(dead_letter(&reason, self.source_name(), position, bytes));
    }

    /// With checkpoints: tells the coordinator where the source stands at the end of `id`.
    fn source_at(
        &self,
        id: u64,
        offset: Option<SourceOffset>,
        driver: DriverState,
        more_sources: Vec<SavedSource>,
    ) -> Result<(), SourceError> {
        match &self.checkpoint {
            Some(tx) => {
                tx.send(ToCoordinator::SourceAt { id, offset, driver, more_sources }).map_err(|_| SourceError::PeerGone)
            }
            None => Ok(()),
        }
    }

    /// Makes source `k` the one read: its connector, decoder and steps take the places of the
    /// active one's, which is parked in its slot of [`SourceActor::inputs`].
    ///
    /// # Panics
    /// When `k` is not a source index (a bug).
    fn switch_to(&mut self, k: usize) {
        if k == self.active {
            return;
        }
        let mut parked = self.inputs[k].take().expect("every source but the active one is parked");
        std::mem::swap(&mut self.source, &mut parked.source);
        std::mem::swap(&mut self.decoder, &mut parked.decoder);
        std::mem::swap(&mut self.plan.source_steps, &mut parked.steps);
        self.inputs[self.active] = Some(parked);
        self.active = k;
    }

    /// The name of the source being read, with several sources.
    fn source_name(&self) -> Option<&str> {
        self.source_names.get(self.active).map(String::as_str)
    }

    /// How far source `k` was consumed.
    fn offset_of(&self, k: usize) -> Option<SourceOffset> {
        match self.inputs.get(k).and_then(Option::as_ref) {
            Some(parked) => parked.source.offset(),
            None => self.source.offset(),
        }
    }

    /// The sources after the first as a checkpoint keeps them: name, offset (`offsets`, one per
    /// source, the first's ignored), largest event time.
    fn saved_sources(
        &self,
        offsets: &[Option<SourceOffset>],
        watermarks: &eddy_engine::watermark_union::UnionWatermark,
    ) -> Vec<SavedSource> {
        self.plan
            .more_sources
            .iter()
            .enumerate()
            .map(|(i, s)| SavedSource {
                name: s.name.clone(),
                offset: offsets.get(i + 1).and_then(Option::as_ref).map(crate::checkpoint::SavedOffset::from),
                max_event_time: watermarks.max_event_time(i + 1).map(|t| t.0),
            })
            .collect()
    }

    /// Real-time, several sources, after a restore: polls the active source for the `rest`
    /// items left of the poll the checkpoint's barrier cut (each poll up to what is still
    /// missing, a CSV header not counted: the resumed file gives its header again), so the
    /// polls after it are cut where the uninterrupted run's were. Ends early when the source
    /// has nothing more at hand (its [`Poll`] other than [`Poll::Data`] is returned).
    fn poll_rest(
        &mut self,
        items: &mut Vec<SourceItem>,
        rest: u64,
        timeout: std::time::Duration,
    ) -> Result<Poll, SourceError> {
        let rest = usize::try_from(rest).unwrap_or(usize::MAX).min(POLL_MAX);
        loop {
            let before = items.len();
            let counted = counted_records(items);
            let poll = self.source.poll(items, rest - counted, timeout)?;
            let counted = counted_records(items);
            if poll != Poll::Data || counted >= rest || items.len() == before {
                return Ok(poll);
            }
        }
    }

    /// Real-time: takes the commits the coordinator reported; with `wait_for`, blocks until that
    /// epoch is committed (a chained partition's snapshot in progress is completed first: only
    /// this thread can complete it). `Err` on a stop from the coordinator (a failure elsewhere).
    fn take_commits(&self, committed: &mut Option<u64>, wait_for: Option<u64>) -> Result<(), SourceError> {
        loop {
            let msg = match wait_for {
                Some(w) if committed.is_none_or(|c| c < w) => {
                    if let Some(mut task) = self.partitions.chained()
                        && !task.finish_snapshot()
                    {
                        return Err(SourceError::PeerGone);
                    }
                    self.coordinator.recv().ok()
                }
                _ => self.coordinator.try_recv().ok(),
            };
            match msg {
                Some(ToSource::Committed(id)) => *committed = Some(committed.map_or(id, |c| c.max(id))),
                Some(ToSource::Stop) => return Err(SourceError::PeerGone),
                None => return Ok(()),
            }
        }
    }

    fn end_unit(&self, id: u64, dead: &mut Vec<String>) -> Result<(), SourceError> {
        if !dead.is_empty() {
            let lines = std::mem::take(dead);
            self.sink.send(ToSink::DeadLetters { id, lines }).map_err(|_| SourceError::PeerGone)?;
        }
        self.sink.send(ToSink::End { id, rows: 0 }).map_err(|_| SourceError::PeerGone)
    }

    /// The barrier closing `epoch` at processing time `now`: to every partition actor, the
    /// source's position to the coordinator (with checkpoints), the epoch's end to the sink.
    /// `turn`: several sources, the source a restart reads first and the items of its first
    /// poll ([`DriverState::RealTimeSources`]); ignored with one source.
    #[allow(clippy::too_many_arguments)]
    fn barrier(
        &self,
        epoch: u64,
        now: Timestamp,
        (watermark, max_event_time): (Timestamp, Option<Timestamp>),
        next_boundary: Option<Timestamp>,
        (offsets, more_sources, turn): (&[Option<SourceOffset>], Vec<SavedSource>, Turn),
        dead: &mut Vec<String>,
        committed: &mut Option<u64>,
    ) -> Result<(), SourceError> {
        // Bound the epochs in flight (and take the commits, so the coordinator never waits).
        self.take_commits(committed, epoch.checked_sub(MAX_EPOCHS_IN_FLIGHT))?;
        self.broadcast(Control::Barrier { epoch, now, watermark })?;
        if self.checkpoint.is_some() {
            let (now, max_event_time, next_boundary) = (now.0, max_event_time.map(|t| t.0), next_boundary.map(|t| t.0));
            // One source keeps the state older versions wrote (and read).
            let driver = if self.inputs.len() > 1 {
                DriverState::RealTimeSources {
                    now,
                    max_event_time,
                    next_boundary,
                    next_source: turn.next_source as u32,
                    rest_of_poll: turn.rest_of_poll,
                }
            } else {
                DriverState::RealTime { now, max_event_time, next_boundary }
            };
            self.source_at(epoch, offsets.first().cloned().flatten(), driver, more_sources)?;
        }
        self.end_unit(epoch, dead)
    }

    /// Real-time, a run of lines read `at` (its position, creation instant and the poll's
    /// system time) when no record of it can close an epoch or move an offset, and it needs
    /// no join and no routing by input partition: decodes, stamps and routes each line as the
    /// loop of [`SourceActor::run_real_time`] does in that case, without its per-record checks
    /// of the others. Returns the records routed (a malformed line's dead letter is in `dead`).
    #[inline(always)]
    fn route_lines(
        &mut self,
        lines: &SharedLines,
        (run, created_ns, system_now): (&Position, u64, Timestamp),
        clock: &mut RealTimeClock,
        buffers: &mut [Vec<Stamped>],
        dead: &mut Vec<String>,
        last_log: &mut Option<Instant>,
    ) -> Result<u64, SourceError> {
        let mut routed = 0;
        for (k, line) in lines.iter().enumerate() {
            let Some(record) = self.decode_raw(line, At::Line { run, k }, dead, last_log) else {
                continue;
            };
            let stamp = clock.stamp_source(self.active, &record, system_now);
            routed += 1;
            let p = self.router.route(&record).0;
            self.route(buffers, p, Stamped { record, now: stamp.now, watermark: stamp.watermark, created_ns })?;
        }
        Ok(routed)
    }

    fn run_real_time(&mut self) -> Result<(), SourceError> {
        let mut clock = self.plan.realtime_clock();
        let replay = self.plan.replay.is_some();
        let trigger = self.trigger.0.max(1);
        let mut epoch: u64 = 0;
        let mut next_boundary: Option<Timestamp> = None;
        // Several sources: the rest of the poll a restored checkpoint's barrier cut (0: none).
        let mut rest_of_poll: u64 = 0;
        let mut turn: Option<(usize, u64)> = None;
        let resumed = match &self.resume {
            Some((last, DriverState::RealTime { now, max_event_time, next_boundary })) => {
                Some((*last, *now, *max_event_time, *next_boundary))
            }
            Some((
                last,
                DriverState::RealTimeSources { now, max_event_time, next_boundary, next_source, rest_of_poll: r },
            )) => {
                turn = Some((*next_source as usize, *r));
                Some((*last, *now, *max_event_time, *next_boundary))
            }
            _ => None,
        };
        // The round-robin goes on where the barrier left it (a checkpoint without it, or with a
        // source index the pipeline no longer has, starts at the first source).
        if let Some((k, r)) = turn
            && k < self.inputs.len()
        {
            self.switch_to(k);
            rest_of_poll = r;
        }
        if let Some((last, now, max_event_time, nb)) = resumed {
            epoch = last + 1;
            clock.resume(Timestamp(now), max_event_time.map(Timestamp));
            for (i, t) in self.resume_sources.iter().enumerate() {
                if let Some(t) = t {
                    clock.sources_mut().observe_time(i + 1, Timestamp(*t));
                }
            }
            next_boundary = nb.map(Timestamp);
        }
        if !replay {
            next_boundary =
                Some(align_down(self.clock.now(), Duration(trigger), Duration::ZERO).saturating_add(Duration(trigger)));
        }
        let track = self.checkpoint.is_some();
        // how far each source's routed records go (several sources: one each)
        let n = self.inputs.len();
        let mut offsets: Vec<Option<SourceOffset>> =
            (0..n).map(|k| if track { self.offset_of(k) } else { None }).collect();
        let mut done = vec![false; n];
        // After a restore: the sources not polled since (see the round-robin below).
        let mut unpolled = vec![self.resume.is_some() && n > 1; n];
        // Epochs up to the restored checkpoint's are committed.
        let mut committed: Option<u64> = self.resume.as_ref().map(|(e, _)| *e);
        let mut buffers: Vec<Vec<Stamped>> = (0..self.partitions.len()).map(|_| Vec::new()).collect();
        let mut items = Vec::with_capacity(POLL_MAX);
        let mut dead = Vec::new();
        let mut last_log = None;
        let mut last_w = Timestamp::MIN;
        // With several partition actors and an expression after the source that reads the
        // processing time, the watermark goes out each time it moves, with the processing time
        // of the record that moved it: an actor that did not see that record finalises the same
        // rows at the same instant as the actor that did (and as one actor alone would), so
        // `current_timestamp()` does not depend on the parallelism.
        let per_move = self.partitions.len() > 1 && self.plan.reads_processing_time_after_sources();
        // Whether a record can close an epoch (a barrier cut in the middle of a poll): only
        // under the replay clock, and only with checkpoints does it save the clock as it stood
        // before the record.
        let saves_clock_before = replay && track;
        // Whether a run of lines is routed by `route_lines`, without the per-record work of the
        // cases it excludes (all constant for the run; and without source steps, checked per
        // poll).
        let plain_runs = !replay && !track && !per_move && self.join.is_none() && self.by_input.is_none();
        let mut reported = Reported::new();
        let mut exhausted = false;
        let mut joined: Vec<Record> = Vec::new();
        // With source steps: each poll's records, decoded and through the steps as one batch.
        let mut decoded: Vec<Option<Record>> = Vec::new();
        let mut dead_at: Vec<(usize, String)> = Vec::new();
        let mut steps_batch = StepsBatch::default();
        // Idle epochs: whether an item was polled since the last barrier, and the partition
        // actors' output count at it (see the module documentation).
        let mut polled_since_barrier = false;
        let mut output_at_barrier = self.output.load(Ordering::Relaxed);
        // A stop under the replay clock with checkpoints: when it was asked (the epoch then
        // runs on to its boundary, see the module documentation).
        let mut finishing: Option<Instant> = None;
        self.units.started(epoch);
        loop {
            if self.stop.load(Ordering::Relaxed) {
                if !(replay && track) {
                    break;
                }
                if finishing.is_none() {
                    tracing::info!(epoch, "stop requested: reading on to the end of the current epoch");
                    finishing = Some(Instant::now());
                }
            }
            let active = polled_since_barrier || self.output.load(Ordering::Relaxed) != output_at_barrier;
            let mut timeout = match (replay, next_boundary) {
                // Nothing to close at the boundary: wait for input as long as in replay.
                (false, Some(b)) if active => {
                    std::time::Duration::from_micros(b.0.saturating_sub(self.clock.now().0).clamp(0, 100_000) as u64)
                }
                _ => std::time::Duration::from_millis(100),
            };
            // several sources: each poll waits its share, so every source is polled in turn
            timeout /= done.iter().filter(|d| !**d).count().max(1) as u32;
            // Chained: the partition's work between messages, and its next wake-up bounds the wait.
            if let Some(mut task) = self.partitions.chained() {
                if !task.snapshot_step() {
                    return Err(SourceError::PeerGone);
                }
                if let Some(at) = task.wake_at() {
                    timeout = timeout.min(at.saturating_duration_since(Instant::now()));
                }
            }
            items.clear();
            if let Some(j) = self.join.as_mut() {
                j.refresh(Instant::now());
            }
            self.take_returned();
            let poll = if rest_of_poll > 0 {
                // the rest of the poll a restored checkpoint's barrier cut, as the uninterrupted
                // run read it (a CSV header the resumed file gives again is not counted)
                self.poll_rest(&mut items, std::mem::take(&mut rest_of_poll), timeout)?
            } else {
                self.source.poll(&mut items, POLL_MAX, timeout)?
            };
            // Several sources: the headers of this poll, and those routed past, give the rest of
            // the poll when a barrier cuts it.
            let headers_in_poll = if n > 1 { items.iter().filter(|it| is_header(it)).count() } else { 0 };
            let mut headers_past = 0;
            let metrics_on = self.metrics.enabled();
            let polled = metrics_on.then(Instant::now);
            // With metrics or a latency recorder, records without a creation instant count their
            // latency from this poll.
            let poll_ns = if metrics_on || self.stamp_polls { eddy_connectors::monotonic_ns() } else { 0 };
            // Records of the poll as its `max` counts them (a run of lines: its lines).
            let polled_items: usize = items.iter().map(SourceItem::units).sum();
            // A restored source's offset names the last file it gave records of at its last line
            // read (not as read whole), so its first poll may only reach that file's end: the
            // uninterrupted run reached it in the poll before.
            let only_resumed_end =
                std::mem::take(&mut unpolled[self.active]) && poll == Poll::BatchBoundary && polled_items == 0;
            polled_since_barrier |= polled_items > 0;
            // The processing time of every record of this poll: they were ingested together, and
            // one clock read per poll instead of per record saves ~10 % of the source's CPU.
            let system_now = if replay { Timestamp::MIN } else { self.clock.now() };
            if !replay {
                // the source steps' `current_timestamp()` (refused there under the replay clock)
                eddy_engine::expr::set_processing_time(system_now);
            }
            // Records routed in this poll, added to the shared counter once per poll.
            let mut routed: u64 = 0;
            let pre = self.decode_with_steps(&mut items, &mut decoded, &mut steps_batch, &mut dead_at, &mut last_log);
            let mut dead_letters = dead_at.drain(..).peekable();
            let mut drained = items.drain(..);
            // The run of lines being read (a `Payload::Lines` item: its lines, position and
            // creation instant), and its next line: read in place, one record per line.
            let mut run: Option<(SharedLines, Position, u64)> = None;
            let mut next_line = 0;
            // The records of this poll before the current one (a run's lines each count, as in
            // `decode_with_steps`).
            let mut i = 0;
            loop {
                let item_position;
                let (record, at, created_ns, header) = match &run {
                    Some((lines, position, created_ns)) if next_line < lines.len() => {
                        let at = At::Line { run: position, k: next_line };
                        let record = if pre {
                            // the dead letters of the records so far, in the epoch they belong to
                            while let Some((_, d)) = dead_letters.next_if(|(at, _)| *at <= i) {
                                dead.push(d);
                            }
                            decoded[i].take()
                        } else {
                            self.decode_raw(lines.line(next_line), at, &mut dead, &mut last_log)
                        };
                        next_line += 1;
                        (record, at, *created_ns, false)
                    }
                    _ => {
                        let Some(SourceItem { payload, position, created_ns }) = drained.next() else { break };
                        let created_ns = if created_ns != 0 { created_ns } else { poll_ns };
                        if let Payload::Lines(lines) = payload {
                            if plain_runs && !pre {
                                let records = lines.len();
                                let at = (&position, created_ns, system_now);
                                routed +=
                                    self.route_lines(&lines, at, &mut clock, &mut buffers, &mut dead, &mut last_log)?;
                                i += records;
                                continue;
                            }
                            run = Some((lines, position, created_ns));
                            next_line = 0;
                            continue;
                        }
                        // A CSV header is no record: it moves no offset (a resumed source gives
                        // it again).
                        let header = matches!(payload, Payload::Header(_));
                        headers_past += usize::from(header);
                        item_position = position;
                        let record = if pre {
                            // the dead letters of the items so far, in the epoch they belong to
                            while let Some((_, d)) = dead_letters.next_if(|(at, _)| *at <= i) {
                                dead.push(d);
                            }
                            if let Payload::Raw(line) = payload {
                                self.spares.decoded_line(line);
                            }
                            decoded[i].take()
                        } else {
                            self.decode_at(payload, &item_position, &mut dead, &mut last_log)
                        };
                        (record, At::Item(&item_position), created_ns, header)
                    }
                };
                let index = i;
                i += 1;
                let Some(record) = record else {
                    if track && !header {
                        SourceOffset::advance(&mut offsets[self.active], &at.position());
                    }
                    continue;
                };
                // Event times seen before this record: a barrier it triggers checkpoints these.
                let (seen_before, active_before) = if saves_clock_before {
                    (clock.max_event_time(), if n > 1 { clock.sources().max_event_time(self.active) } else { None })
                } else {
                    (None, None)
                };
                let stamp = clock.stamp_source(self.active, &record, system_now);
                if replay {
                    let b = *next_boundary.get_or_insert_with(|| {
                        align_down(stamp.now, Duration(trigger), Duration::ZERO).saturating_add(Duration(trigger))
                    });
                    if stamp.now >= b {
                        let at = align_down(stamp.now, Duration(trigger), Duration::ZERO);
                        self.flush(&mut buffers)?;
                        next_boundary = Some(at.saturating_add(Duration(trigger)));
                        // The barrier's watermark is W before this record; the saved clock too.
                        let w = (stamp.watermark, seen_before);
                        let mut more = self.saved_sources(&offsets, clock.sources());
                        // the other sources' event times as they stood before this record too
                        if let Some(m) = self.active.checked_sub(1).and_then(|i| more.get_mut(i)) {
                            m.max_event_time = active_before.map(|t| t.0);
                        }
                        // A restart reads this record and the rest of this poll first: a poll
                        // that ended at its `max` again up to there (CSV headers not counted); one
                        // that ended at the source's own boundary (a file's end) to it again.
                        let rest = if poll == Poll::Data && n > 1 {
                            ((polled_items - index) - (headers_in_poll - headers_past)) as u64
                        } else {
                            0
                        };
                        let turn = Turn { next_source: self.active, rest_of_poll: rest };
                        self.barrier(epoch, at, w, next_boundary, (&offsets, more, turn), &mut dead, &mut committed)?;
                        if self.stop_after == Some(epoch) {
                            self.counters.records.fetch_add(routed, Ordering::Relaxed);
                            return self.take_commits(&mut committed, Some(epoch));
                        }
                        if finishing.is_some() {
                            // The stop's epoch is closed where an uninterrupted run closes it; the
                            // restart begins with this record, from the checkpoint just taken.
                            self.counters.records.fetch_add(routed, Ordering::Relaxed);
                            tracing::info!(epoch, "stop: the current epoch is closed at its boundary");
                            return Ok(());
                        }
                        epoch += 1;
                        self.units.started(epoch);
                    }
                }
                if track {
                    SourceOffset::advance(&mut offsets[self.active], &at.position());
                }
                routed += 1;
                if self.join.is_some() {
                    // 0..n joined records, each stamped as the record they were made of
                    self.join_record(record, &at.position(), &mut joined, &mut dead, &mut last_log);
                    for record in joined.drain(..) {
                        let p = self.actor_of(&record, at);
                        let s = Stamped { record, now: stamp.now, watermark: stamp.watermark, created_ns };
                        self.route(&mut buffers, p, s)?;
                    }
                } else {
                    let p = self.actor_of(&record, at);
                    let s = Stamped { record, now: stamp.now, watermark: stamp.watermark, created_ns };
                    self.route(&mut buffers, p, s)?;
                }
                if per_move {
                    let w = clock.watermark();
                    if w > last_w {
                        // behind the record that moved it
                        self.flush(&mut buffers)?;
                        self.broadcast(Control::Watermark { watermark: w, at: stamp.now })?;
                        last_w = w;
                    }
                }
            }
            self.counters.records.fetch_add(routed, Ordering::Relaxed);
            self.flush(&mut buffers)?;
            if let Some(mut task) = self.partitions.chained()
                && !task.on_wake()
            {
                return Err(SourceError::PeerGone);
            }
            if let Some(t) = polled {
                if polled_items > 0 {
                    self.metrics.stage_source.record(t.elapsed().as_secs_f64());
                }
                let pt = if replay { clock.now() } else { self.clock.now() };
                self.report(&mut reported, Some(clock.watermark()), Some(pt));
            }
            let w = clock.watermark();
            if w > last_w && self.partitions.len() > 1 {
                self.broadcast(Control::Watermark { watermark: w, at: clock.now() })?;
                last_w = w;
            }
            if !replay && let Some(b) = next_boundary {
                let now = self.clock.now();
                if now >= b {
                    next_boundary =
                        Some(align_down(now, Duration(trigger), Duration::ZERO).saturating_add(Duration(trigger)));
                    let output = self.output.load(Ordering::Relaxed);
                    if polled_since_barrier || output != output_at_barrier {
                        let w = (clock.watermark(), clock.max_event_time());
                        let more = self.saved_sources(&offsets, clock.sources());
                        // this source's poll is done: the next one in turn (an exhausted one
                        // gives nothing and is passed)
                        let turn = Turn { next_source: (self.active + 1) % n, rest_of_poll: 0 };
                        self.barrier(epoch, now, w, None, (&offsets, more, turn), &mut dead, &mut committed)?;
                        if self.stop_after == Some(epoch) {
                            return self.take_commits(&mut committed, Some(epoch));
                        }
                        epoch += 1;
                        self.units.started(epoch);
                        polled_since_barrier = false;
                        output_at_barrier = output;
                    } else {
                        // Nothing happened in this epoch: it goes on, timed from here.
                        self.units.restarted(epoch);
                    }
                }
            } else {
                self.take_commits(&mut committed, None)?;
            }
            if poll == Poll::Exhausted {
                done[self.active] = true;
                if done.iter().all(|d| *d) {
                    exhausted = true;
                    break;
                }
            }
            // Several sources: the next one that is not exhausted, round-robin. A restored
            // source's first poll that only reached the end of the file it was reading is no
            // turn (the same source is polled again), so the records interleave as in the
            // uninterrupted run.
            if n > 1
                && !only_resumed_end
                && let Some(next) = (1..=n).map(|i| (self.active + i) % n).find(|k| !done[*k])
            {
                self.switch_to(next);
            }
            if let Some(asked) = finishing
                && ((poll == Poll::Idle && polled_items == 0) || asked.elapsed() >= STOP_FINISH_WITHIN)
            {
                // The input paused before the epoch's boundary (or it is too far): the epoch is not
                // closed here, its rows are not committed; a restart reads it again from the last
                // checkpoint, so every epoch keeps the boundaries of an uninterrupted run.
                let why = if asked.elapsed() >= STOP_FINISH_WITHIN {
                    "its boundary was not reached within 10 s"
                } else {
                    "the input paused before its boundary"
                };
                tracing::info!(epoch, why, "stop: the current epoch is left uncommitted; a restart reads it again");
                return Ok(());
            }
        }
        // Drain: the last epoch ends at `until` (replay, input exhausted) or now (a stop, or the
        // system clock); a stopped run with checkpoints resumes from here. Without checkpoints a
        // stop is final (no restart can resume it), so it ends the input as exhaustion does.
        self.flush(&mut buffers)?;
        let ends_input = exhausted || self.checkpoint.is_none();
        let now = if replay {
            match self.plan.until() {
                Some(u) if ends_input => clock.advance(u),
                _ => clock.now(),
            }
        } else {
            self.clock.now()
        };
        let nb = if replay { next_boundary } else { None };
        let w = (clock.watermark(), clock.max_event_time());
        let more = self.saved_sources(&offsets, clock.sources());
        // the loop ends before polling the source in turn (or with every source exhausted)
        let turn = Turn { next_source: self.active, rest_of_poll: 0 };
        self.barrier(epoch, now, w, nb, (&offsets, more, turn), &mut dead, &mut committed)?;
        self.report(&mut reported, Some(clock.watermark()), Some(now));
        Ok(())
    }

    fn run_micro_batch(&mut self) -> Result<(), SourceError> {
        let mut seq = self.plan.sequencer();
        let trigger = std::time::Duration::from_micros(self.trigger.0.max(0) as u64);
        let mut pending: Vec<SourceItem> = Vec::new();
        // The records of `pending` (a run of lines counts its lines).
        let mut pending_records = 0;
        let mut dead = Vec::new();
        let mut last_log = None;
        let mut last_moved: Option<(Timestamp, Timestamp)> = None;
        if let Some((
            _,
            DriverState::MicroBatch { next_batch, late, evict, last_processing_time, max_event_time, last_moved: lm },
        )) = &self.resume
        {
            let w = eddy_engine::watermark::BatchWatermarks { late: Timestamp(*late), evict: Timestamp(*evict) };
            seq.resume(*next_batch, w, Timestamp(*last_processing_time), max_event_time.map(Timestamp));
            last_moved = lm.map(|[b, a]| (Timestamp(b), Timestamp(a)));
        }
        let mut exhausted = false;
        let mut batch_started = Instant::now();
        let mut reported = Reported::new();
        while !exhausted {
            // A stop with checkpoints finishes the batch being read, at its own boundary (a
            // restart's next batch begins after it, as an uninterrupted run's does); without
            // checkpoints the records read so far make the last batch (below).
            let stopping = self.stop.load(Ordering::Relaxed);
            if stopping && (pending.is_empty() || self.checkpoint.is_none()) {
                break;
            }
            let wait = trigger
                .saturating_sub(batch_started.elapsed())
                .max(std::time::Duration::from_millis(if trigger.is_zero() { 100 } else { 1 }));
            self.take_returned();
            let before = pending.len();
            let poll = self.source.poll(&mut pending, POLL_MAX, wait)?;
            pending_records += pending[before..].iter().map(SourceItem::units).sum::<usize>();
            let cut = match poll {
                Poll::BatchBoundary => true,
                Poll::Exhausted => {
                    exhausted = true;
                    !pending.is_empty()
                }
                Poll::Data => pending_records >= 1_000_000,
                Poll::Idle => !pending.is_empty() && (stopping || batch_started.elapsed() >= trigger),
            };
            if cut {
                let cut_at = Instant::now();
                if let Some(j) = self.join.as_mut() {
                    j.refresh(cut_at);
                }
                let items = std::mem::take(&mut pending);
                pending_records = 0;
                let now = self.clock.now();
                let records = self.decode_batch(items, now, &mut dead, &mut last_log);
                last_moved = Some(self.run_batch(&mut seq, records, now, &mut dead, Some(cut_at))?);
                batch_started = Instant::now();
            } else if poll == Poll::Idle
                && pending.is_empty()
                && let Some((before, after)) = last_moved
                && self.plan.wants_no_data_batch(before, after)
            {
                // A trigger found no new input and the last batch moved W: Spark's no-data batch.
                last_moved = Some(self.run_batch(&mut seq, Vec::new(), self.clock.now(), &mut dead, None)?);
                last_moved = last_moved.filter(|(b, a)| a > b);
            }
            self.report(&mut reported, Some(seq.watermarks().late), Some(seq.last_processing_time()));
        }
        if self.stop.load(Ordering::Relaxed) && !pending.is_empty() {
            let items = std::mem::take(&mut pending);
            let now = self.clock.now();
            let records = self.decode_batch(items, now, &mut dead, &mut last_log);
            last_moved = Some(self.run_batch(&mut seq, records, now, &mut dead, None)?);
        }
        let stopped = self.stop.load(Ordering::Relaxed);
        if (stopped && self.checkpoint.is_some()) || (!exhausted && !stopped) {
            // A stop with checkpoints: a restart goes on from the last batch (and runs the
            // end-of-input batches when the input is exhausted then). Without checkpoints a stop
            // is final, so the end-of-input batches run now, as before a stop could resume.
            self.report(&mut reported, Some(seq.watermarks().late), Some(seq.last_processing_time()));
            return Ok(());
        }
        self.end_of_input(&mut seq, last_moved, &mut dead, &mut reported)
    }

    /// Micro-batch, at the end of input: the no-data batch when due (`last_moved`: the watermark
    /// before and after the last batch), or the replay clock's batch at `until`; then the last
    /// report.
    fn end_of_input(
        &mut self,
        seq: &mut eddy_engine::driver::MicroBatchSequencer,
        last_moved: Option<(Timestamp, Timestamp)>,
        dead: &mut Vec<String>,
        reported: &mut Reported,
    ) -> Result<(), SourceError> {
        match self.plan.until() {
            Some(until) => {
                let ctx = seq.begin_at(until);
                self.run_ctx(seq, ctx, Vec::new(), dead)?;
            }
            None => {
                if let Some((before, after)) = last_moved
                    && self.plan.wants_no_data_batch(before, after)
                {
                    self.run_batch(seq, Vec::new(), self.clock.now(), dead, None)?;
                }
            }
        }
        self.report(reported, Some(seq.watermarks().late), Some(seq.last_processing_time()));
        Ok(())
    }

    /// Micro-batch with several sources (SEMANTICS.md "Several sources (union)"): a batch takes,
    /// from each source in turn, what that source's own trigger allows (a files source: up to
    /// its `max_files_per_trigger` files, to its [`Poll::BatchBoundary`]; an endless source: what
    /// is at hand), decoded and stepped by that source's decoder and steps; each source's
    /// records count toward its own watermark. A batch where no source had anything is no batch
    /// (a no-data batch runs instead when W moved, as with one source). A stop ends the run after
    /// the batch being read (with checkpoints a restart goes on from there).
    fn run_micro_batch_union(&mut self) -> Result<(), SourceError> {
        let mut seq = self.plan.sequencer();
        let n = self.inputs.len();
        let trigger = std::time::Duration::from_micros(self.trigger.0.max(0) as u64);
        let mut dead = Vec::new();
        let mut last_log = None;
        let mut last_moved: Option<(Timestamp, Timestamp)> = None;
        if let Some((
            _,
            DriverState::MicroBatch { next_batch, late, evict, last_processing_time, max_event_time, last_moved: lm },
        )) = &self.resume
        {
            let w = eddy_engine::watermark::BatchWatermarks { late: Timestamp(*late), evict: Timestamp(*evict) };
            seq.resume(*next_batch, w, Timestamp(*last_processing_time), max_event_time.map(Timestamp));
            for (i, t) in self.resume_sources.iter().enumerate() {
                if let Some(t) = t {
                    seq.sources_mut().observe_time(i + 1, Timestamp(*t));
                }
            }
            last_moved = lm.map(|[b, a]| (Timestamp(b), Timestamp(a)));
        }
        let mut exhausted = vec![false; n];
        let mut reported = Reported::new();
        while !self.stop.load(Ordering::Relaxed) {
            let batch_started = Instant::now();
            // the batch's processing time with the system clock: its start (SEMANTICS.md), one
            // instant for every source's steps and the query (`current_timestamp()`)
            let batch_now = self.clock.now();
            let mut parts: Vec<(usize, Vec<Record>)> = Vec::new();
            for (k, done) in exhausted.iter_mut().enumerate() {
                if *done {
                    continue;
                }
                self.switch_to(k);
                let mut items: Vec<SourceItem> = Vec::new();
                // The records of `items` (a run of lines counts its lines).
                let mut polled_records = 0;
                loop {
                    // an endless source gives what is at hand within the trigger interval
                    let wait = trigger
                        .saturating_sub(batch_started.elapsed())
                        .max(std::time::Duration::from_millis(if trigger.is_zero() { 100 / n as u64 } else { 1 }));
                    self.take_returned();
                    let before = items.len();
                    let poll = self.source.poll(&mut items, POLL_MAX, wait)?;
                    polled_records += items[before..].iter().map(SourceItem::units).sum::<usize>();
                    match poll {
                        Poll::BatchBoundary => break,
                        Poll::Exhausted => {
                            *done = true;
                            break;
                        }
                        Poll::Data if polled_records < 1_000_000 => {}
                        Poll::Data | Poll::Idle => break,
                    }
                }
                if !items.is_empty() {
                    let records = self.decode_batch(items, batch_now, &mut dead, &mut last_log);
                    // counted here, so the metrics name the source they came from
                    self.counters.records.fetch_add(records.len() as u64, Ordering::Relaxed);
                    self.report(&mut reported, None, None);
                    parts.push((k, records));
                }
            }
            if !parts.is_empty() {
                let cut_at = Instant::now();
                last_moved = Some(self.run_union_batch(&mut seq, parts, batch_now, &mut dead)?);
                self.metrics.stage_source.record(cut_at.elapsed().as_secs_f64());
            } else if exhausted.iter().all(|e| *e) {
                break;
            } else if let Some((before, after)) = last_moved
                && self.plan.wants_no_data_batch(before, after)
            {
                // no source had new input and the last batch moved W: Spark's no-data batch
                last_moved = Some(self.run_batch(&mut seq, Vec::new(), self.clock.now(), &mut dead, None)?);
                last_moved = last_moved.filter(|(b, a)| a > b);
            }
            self.report(&mut reported, Some(seq.watermarks().late), Some(seq.last_processing_time()));
        }
        if self.stop.load(Ordering::Relaxed) && (self.checkpoint.is_some() || !exhausted.iter().all(|e| *e)) {
            // a stop: a restart goes on from the last batch
            self.report(&mut reported, Some(seq.watermarks().late), Some(seq.last_processing_time()));
            return Ok(());
        }
        self.end_of_input(&mut seq, last_moved, &mut dead, &mut reported)
    }

    /// One micro-batch of several sources' records (`parts`: source index, its records).
    fn run_union_batch(
        &mut self,
        seq: &mut eddy_engine::driver::MicroBatchSequencer,
        parts: Vec<(usize, Vec<Record>)>,
        system_now: Timestamp,
        dead: &mut Vec<String>,
    ) -> Result<(Timestamp, Timestamp), SourceError> {
        let mut records = Vec::with_capacity(parts.iter().map(|(_, r)| r.len()).sum());
        let ctx = {
            let all: Vec<&Record> = parts.iter().flat_map(|(_, r)| r.iter()).collect();
            let replay_max = self.plan.replay.map(|(c, _)| {
                all.iter().filter_map(|r| r.values[c].as_timestamp()).fold(seq.last_processing_time(), Timestamp::max)
            });
            match replay_max {
                Some(t) => seq.begin_at(t),
                None => seq.begin_at(system_now),
            }
        };
        for (k, part) in parts {
            seq.observe_source(k, &part);
            records.extend(part);
        }
        self.run_ctx(seq, ctx, records, dead)
    }

    fn run_batch(
        &mut self,
        seq: &mut eddy_engine::driver::MicroBatchSequencer,
        records: Vec<Record>,
        system_now: Timestamp,
        dead: &mut Vec<String>,
        cut_at: Option<Instant>,
    ) -> Result<(Timestamp, Timestamp), SourceError> {
        let ctx = seq.begin(&records, system_now);
        seq.observe(&records);
        self.counters.records.fetch_add(records.len() as u64, Ordering::Relaxed);
        let moved = self.run_ctx(seq, ctx, records, dead)?;
        if let Some(t) = cut_at {
            self.metrics.stage_source.record(t.elapsed().as_secs_f64());
        }
        Ok(moved)
    }

    fn run_ctx(
        &mut self,
        seq: &mut eddy_engine::driver::MicroBatchSequencer,
        ctx: eddy_engine::operator::BatchContext,
        records: Vec<Record>,
        dead: &mut Vec<String>,
    ) -> Result<(Timestamp, Timestamp), SourceError> {
        self.units.started(ctx.batch_id);
        self.broadcast(Control::BeginBatch(ctx))?;
        let mut buffers: Vec<Vec<Stamped>> = (0..self.partitions.len()).map(|_| Vec::new()).collect();
        let mut joined = Vec::new();
        let positions = self.join.as_mut().map(|j| std::mem::take(&mut j.positions)).unwrap_or_default();
        let mut last_log = None;
        for (i, record) in records.into_iter().enumerate() {
            if self.join.is_some() {
                // 0..n joined records; the watermark has seen the record they were made of
                let at = positions.get(i).cloned().unwrap_or(Position::Generated { event: i as u64 });
                self.join_record(record, &at, &mut joined, dead, &mut last_log);
                for record in joined.drain(..) {
                    let p = match &self.by_input {
                        Some(r) => r.batch_actor(i),
                        None => self.router.route(&record).0,
                    };
                    let s = Stamped { record, now: ctx.processing_time, watermark: ctx.watermarks.late, created_ns: 0 };
                    self.route(&mut buffers, p, s)?;
                }
                continue;
            }
            let p = match &self.by_input {
                Some(r) => r.batch_actor(i),
                None => self.router.route(&record).0,
            };
            let s = Stamped { record, now: ctx.processing_time, watermark: ctx.watermarks.late, created_ns: 0 };
            self.route(&mut buffers, p, s)?;
        }
        self.flush(&mut buffers)?;
        self.broadcast(Control::EndBatch { batch_id: ctx.batch_id })?;
        self.end_unit(ctx.batch_id, dead)?;
        let moved = seq.end();
        if self.checkpoint.is_some() {
            let w = seq.watermarks();
            let driver = DriverState::MicroBatch {
                next_batch: seq.next_batch_id(),
                late: w.late.0,
                evict: w.evict.0,
                last_processing_time: seq.last_processing_time().0,
                max_event_time: seq.max_event_time().map(|t| t.0),
                last_moved: Some([moved.0.0, moved.1.0]),
            };
            let offsets: Vec<Option<SourceOffset>> = (0..self.inputs.len()).map(|k| self.offset_of(k)).collect();
            let more_sources = self.saved_sources(&offsets, seq.sources());
            self.source_at(ctx.batch_id, self.offset_of(0), driver, more_sources)?;
        }
        // The next batch starts when this one is committed (as Spark's micro-batch execution).
        loop {
            match self.coordinator.recv() {
                Ok(ToSource::Committed(id)) if id >= ctx.batch_id => {
                    if self.stop_after == Some(ctx.batch_id) {
                        self.stop.store(true, Ordering::SeqCst);
                    }
                    break;
                }
                Ok(ToSource::Committed(_)) => {}
                Ok(ToSource::Stop) | Err(_) => return Err(SourceError::PeerGone),
            }
        }
        Ok(moved)
    }
}

/// Where a record being read came from: an item's position, or line `k` (from 0) of a run of
/// lines ([`Payload::Lines`]) at `run`, whose own position is made only when it is needed (a
/// dead letter, an offset, a join, a shared group's routing), not per record.
#[derive(Clone, Copy)]
enum At<'a> {
    /// The position of a one-record item.
    Item(&'a Position),
    /// Line `k` of the run of lines at `run`.
    Line { run: &'a Position, k: usize },
}

impl<'a> At<'a> {
    /// The record's position.
    fn position(self) -> std::borrow::Cow<'a, Position> {
        match self {
            At::Item(position) => std::borrow::Cow::Borrowed(position),
            At::Line { run, k } => std::borrow::Cow::Owned(run.line_of_run(k)),
        }
    }
}

/// Several sources in real-time mode: where the round-robin stands at a barrier (kept in the
/// checkpoint as [`DriverState::RealTimeSources`]).
#[derive(Clone, Copy, Debug)]
struct Turn {
    /// The source a restart reads first.
    next_source: usize,
    /// The items its first poll gives (a CSV header not counted), when the poll the barrier
    /// cut ended at its `max`; 0: a whole poll (one that ended at the source's own boundary).
    rest_of_poll: u64,
}

/// Whether a polled item is a CSV header (no record, and no offset: a resumed file gives it
/// again).
fn is_header(item: &SourceItem) -> bool {
    matches!(item.payload, Payload::Header(_))
}

/// The items of `items` as a poll's `max` counts them ([`SourceItem::units`]), CSV headers not
/// counted.
fn counted_records(items: &[SourceItem]) -> usize {
    items.iter().filter(|it| !is_header(it)).map(SourceItem::units).sum()
}

/// The buffers [`SourceActor::decode_with_steps`] keeps from poll to poll: the records of a
/// poll, the item each came from, and the steps' scratch.
#[derive(Default)]
struct StepsBatch {
    records: Vec<Record>,
    at: Vec<usize>,
    scratch: BatchScratch,
}

impl StepsBatch {
    /// Item `i` decoded: its record (if any) joins the batch; the dead letters in `one` are
    /// moved to `dead` with its index.
    #[inline]
    fn add(&mut self, i: usize, record: Option<Record>, one: &mut Vec<String>, dead: &mut Vec<(usize, String)>) {
        if !one.is_empty() {
            // (an extend from an empty drain costs about 130 instructions: once per item)
            dead.extend(one.drain(..).map(|d| (i, d)));
        }
        if let Some(r) = record {
            self.records.push(r);
            self.at.push(i);
        }
    }
}

/// A dead letter: `{"reason": ..., "source": <position>, "record": <raw text>}` (PIPELINE.md);
/// with several sources the position follows the source's `name` (`"clicks: 000.json:6"`).
fn dead_letter(reason: &str, name: Option<&str>, position: &Position, record: &[u8]) -> String {
    let mut line = String::with_capacity(record.len() + 64);
    line.push_str("{\"reason\": ");
    write_string(&mut line, reason);
    line.push_str(", \"source\": ");
    match name {
        Some(name) => write_string(&mut line, &format!("{name}: {position}")),
        None => write_string(&mut line, &position.to_string()),
    }
    line.push_str(", \"record\": ");
    write_string(&mut line, &String::from_utf8_lossy(record));
    line.push('}');
    line
}
