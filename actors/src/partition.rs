//! Partition actors: each owns the operator state of one key range.
//!
//! Order of handling (one message at a time, in arrival order):
//! 1. before each record (real-time): move the clock to the record's stamp (timers due up to it
//!    fire first), then process the record with the watermark it was stamped with;
//! 2. `Watermark` / `Tick`: move the watermark / clock;
//! 3. `BeginBatch` / `EndBatch` (micro-batch): start a batch; emit its rows and end it at the sink;
//! 4. `Barrier`: move clock and watermark to the barrier's, send the epoch's rows, snapshot
//!    (with checkpoints: the operator notes the cut of its state ([`Operator::begin_snapshot`]);
//!    without: acknowledge at once), end the epoch at the sink; micro-batch with checkpoints:
//!    the same snapshot after `EndBatch`. A snapshot still in progress at the next barrier is
//!    finished first;
//! 5. `EndOfInput`: finish the snapshot in progress, tell the sink this producer is done, and
//!    exit.
//!
//! While a snapshot is in progress, the actor writes it in short steps between messages (at most
//! half of its time, waiting for its input between steps: [`SnapshotPacer`]) and hands the
//! finished bytes to its [`SnapshotWriter`] thread, which stores them and acknowledges the
//! barrier once they are durable (the checkpoint is complete when every partition actor's
//! snapshot is). Otherwise, between messages, with a wall clock, the actor sleeps until its
//! operator's next timer (`recv_deadline`), never polling.
//!
//! A processed data batch goes back to the source actor ([`crate::recycle`]: at once, never
//! waiting; dropped here when the way back is full), its buffer and records to be reused.
//!
//! Metrics (`crate::metrics`): the operator's time per data message (stage `partition`), how late
//! the actor woke for a timer (system clock), and its state (keys, estimated bytes) at every
//! barrier / end of batch.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, RecvTimeoutError, Sender};

use eddy_engine::Timestamp;
use eddy_engine::operator::{Mode, Operator, Output, prefetch_ahead};

use crate::checkpoint::pacer::Finished;
use crate::checkpoint::{SnapshotPacer, SnapshotWriter};
use crate::clock::{Clock, deadline_of};
use crate::messages::{Control, ToCoordinator, ToPartition, ToSink};
use crate::metrics::{Metrics, micros_to_seconds};
use crate::recycle::BatchReturn;
use crate::sink::RowWriter;

/// How often the bytes-per-key of the state estimate is re-measured by serialising the state.
const STATE_BYTES_EVERY: Duration = Duration::from_secs(60);

/// A partition actor's wiring.
#[derive(Debug)]
pub struct PartitionActor {
    /// Which key range (0-based).
    pub partition: usize,
    /// The operator for this key range.
    pub operator: Box<dyn Operator>,
    /// Execution mode.
    pub mode: Mode,
    /// The clock (a wall clock wakes the actor for timers).
    pub clock: std::sync::Arc<dyn Clock>,
    /// Input: data and control, in order.
    pub input: Receiver<ToPartition>,
    /// Late records, batch / epoch ends.
    pub sink: Sender<ToSink>,
    /// Output rows, written on this actor's thread.
    pub rows: RowWriter,
    /// Acknowledgements.
    pub coordinator: Sender<ToCoordinator>,
    /// Metric handles (no-ops without `[metrics]`).
    pub metrics: Metrics,
    /// With checkpoints: where snapshots go.
    pub snapshots: Option<SnapshotWriter>,
    /// Real-time: the first epoch (0, or the one after the restored checkpoint's).
    pub first_epoch: u64,
    /// Where processed data batches go back to the source actor for reuse ([`crate::recycle`]);
    /// `None`: they are dropped here.
    pub returns: Option<BatchReturn>,
}

/// The state-size estimate: bytes per key of the last serialised state, and when it was measured.
#[derive(Debug, Default)]
struct StateSize {
    bytes_per_key: f64,
    measured: Option<Instant>,
}

impl PartitionActor {
    /// Runs the event loop until `EndOfInput` or until a peer hangs up.
    pub fn run(mut self) {
        let mut out = Output::default();
        let mut created: Vec<u64> = Vec::new();
        // The batch (micro-batch) or epoch (real-time) rows currently belong to.
        let mut current: u64 = self.first_epoch;
        let wall = self.clock.is_wall_clock() && self.mode == Mode::RealTime;
        let mut size = StateSize::default();
        let mut pacer = SnapshotPacer::new();
        // Rows written per batch / epoch not yet ended (reported with its end).
        let mut written: BTreeMap<u64, u64> = BTreeMap::new();
        loop {
            let mut due = Timestamp::MIN;
            if pacer.in_progress()
                && let Some(f) = pacer.poll(self.operator.as_mut())
                && !self.submit(f, &mut size)
            {
                return;
            }
            let msg = match (wall, self.operator.next_timer()) {
                // A snapshot in progress: wait for a message until the next step (or a due
                // timer, whichever comes first), then loop to run the step.
                (_, timer) if pacer.in_progress() => {
                    let step_at = pacer.next_step_at().unwrap_or_else(Instant::now);
                    let timer_at = timer.filter(|_| wall).map(|at| (at, deadline_of(self.clock.as_ref(), at)));
                    let until = timer_at.map_or(step_at, |(_, d)| d.min(step_at));
                    match self.input.recv_deadline(until) {
                        Ok(m) => Some(m),
                        Err(RecvTimeoutError::Disconnected) => return,
                        Err(RecvTimeoutError::Timeout) => match timer_at {
                            Some((at, d)) if d <= Instant::now() => {
                                due = at;
                                None
                            }
                            _ => continue,
                        },
                    }
                }
                (true, Some(at)) => match self.input.recv_deadline(deadline_of(self.clock.as_ref(), at)) {
                    Ok(m) => Some(m),
                    Err(RecvTimeoutError::Timeout) => {
                        due = at;
                        None
                    }
                    Err(RecvTimeoutError::Disconnected) => return,
                },
                _ => match self.input.recv() {
                    Ok(m) => Some(m),
                    Err(_) => return,
                },
            };
            match msg {
                None => {
                    let now = self.clock.now();
                    if self.metrics.enabled() {
                        self.metrics.timer_lag.record(micros_to_seconds(now.0.saturating_sub(due.0).max(0)));
                    }
                    self.operator.advance_clock(now, &mut out);
                }
                Some(ToPartition::Data(batch)) => {
                    let started = self.metrics.enabled().then(Instant::now);
                    for (i, s) in batch.iter().enumerate() {
                        prefetch_ahead(self.operator.as_ref(), |j| batch.get(j).map(|s| &s.record), i);
                        if self.mode == Mode::RealTime {
                            self.operator.advance_clock(s.now, &mut out);
                        }
                        let before = out.rows.len();
                        self.operator.on_record(&s.record, s.watermark, &mut out);
                        // (rows of timers before it keep 0: created instant unknown)
                        if s.created_ns != 0 && out.rows.len() > before {
                            created.resize(before, 0);
                            created.resize(out.rows.len(), s.created_ns);
                        }
                    }
                    if let Some(t) = started {
                        self.metrics.stage_partition.record(t.elapsed().as_secs_f64());
                    }
                    // Every record was processed and only borrowed: the batch can be reused.
                    if let Some(r) = &self.returns {
                        r.give_back(batch);
                    }
                }
                Some(ToPartition::Control(c)) => match c {
                    Control::BeginBatch(ctx) => {
                        current = ctx.batch_id;
                        self.operator.begin_batch(&ctx);
                    }
                    Control::EndBatch { batch_id } => {
                        self.operator.end_batch(&mut out);
                        self.report_state(&mut size);
                        if !self.flush(current, &mut out, &mut created, &mut written)
                            || self
                                .sink
                                .send(ToSink::End { id: batch_id, rows: ended(&mut written, batch_id) })
                                .is_err()
                        {
                            return;
                        }
                        if self.snapshots.is_some() && !self.begin_snapshot(&mut pacer, batch_id, &mut size) {
                            return;
                        }
                    }
                    Control::Watermark(w) => self.operator.advance_watermark(w, &mut out),
                    Control::Tick(now) => self.operator.advance_clock(now, &mut out),
                    Control::Barrier { epoch, now, watermark } => {
                        if now != Timestamp::MIN {
                            self.operator.advance_clock(now, &mut out);
                        }
                        self.operator.advance_watermark(watermark, &mut out);
                        if !self.flush(epoch, &mut out, &mut created, &mut written) {
                            return;
                        }
                        self.report_state(&mut size);
                        let state_len = self.operator.state_len();
                        let acked = match &self.snapshots {
                            Some(_) => self.begin_snapshot(&mut pacer, epoch, &mut size),
                            None => self
                                .coordinator
                                .send(ToCoordinator::BarrierAck {
                                    epoch,
                                    partition: self.partition,
                                    state_len,
                                    snapshot: None,
                                })
                                .is_ok(),
                        };
                        if !acked
                            || self.sink.send(ToSink::End { id: epoch, rows: ended(&mut written, epoch) }).is_err()
                        {
                            return;
                        }
                        current = epoch + 1;
                    }
                    Control::EndOfInput => {
                        if let Some(f) = pacer.finish(self.operator.as_mut())
                            && !self.submit(f, &mut size)
                        {
                            return;
                        }
                        if !self.flush(current, &mut out, &mut created, &mut written) {
                            return;
                        }
                        // The sink may already be gone after a failure; nothing left to tell it.
                        let _ = self.sink.send(ToSink::Done { leftovers: written.into_iter().collect() });
                        return;
                    }
                },
            }
            if self.mode == Mode::RealTime
                && !out.is_empty()
                && !self.flush(current, &mut out, &mut created, &mut written)
            {
                return;
            }
        }
    }

    /// At the barrier of `epoch` (with checkpoints): begins the operator's snapshot and hands
    /// over what is complete now; `false` when the writer is gone.
    fn begin_snapshot(&mut self, pacer: &mut SnapshotPacer, epoch: u64, size: &mut StateSize) -> bool {
        if let Some(buffer) = self.snapshots.as_ref().and_then(SnapshotWriter::spare_buffer) {
            self.operator.reuse_snapshot_buffer(buffer);
        }
        pacer.begin(self.operator.as_mut(), epoch).into_iter().all(|f| self.submit(f, size))
    }

    /// Hands a finished snapshot to the writer thread (its size also refreshes the state-bytes
    /// estimate, for free); `false` when the writer is gone.
    fn submit(&self, f: Finished, size: &mut StateSize) -> bool {
        if f.state_len > 0 {
            size.bytes_per_key = f.state.len() as f64 / f.state_len as f64;
            size.measured = Some(Instant::now());
        }
        self.snapshots.as_ref().is_some_and(|w| w.submit(f.epoch, f.state, f.state_len))
    }

    /// Sets the state gauges: keys, and bytes estimated as keys x bytes per key of the serialised
    /// state: of the last checkpoint's snapshot, else re-measured at most every
    /// [`STATE_BYTES_EVERY`] (serialising is not free).
    fn report_state(&self, size: &mut StateSize) {
        if !self.metrics.enabled() {
            return;
        }
        let m = &self.metrics.partitions[self.partition];
        let keys = self.operator.state_len();
        // With checkpoints every snapshot refreshes the estimate ([`PartitionActor::submit`]):
        // no extra serialisation on this thread.
        let stale = match size.measured {
            None => self.snapshots.is_none(),
            Some(t) => self.snapshots.is_none() && t.elapsed() >= STATE_BYTES_EVERY,
        };
        if keys > 0 && stale {
            size.bytes_per_key = self.operator.snapshot().len() as f64 / keys as f64;
            size.measured = Some(Instant::now());
        }
        m.state_keys.set(keys as f64);
        m.state_bytes.set((keys as f64 * size.bytes_per_key).round());
    }

    /// Writes pending rows to the sink (counted in `written`) and sends late records to the
    /// sink actor; `false` when the sink failed (reported to the coordinator) or is gone.
    fn flush(&mut self, id: u64, out: &mut Output, created: &mut Vec<u64>, written: &mut BTreeMap<u64, u64>) -> bool {
        if !out.late.is_empty() {
            let records = std::mem::take(&mut out.late);
            if self.sink.send(ToSink::Late { id, records }).is_err() {
                return false;
            }
        }
        if !out.rows.is_empty() {
            if let Err(e) = self.rows.write(id, &out.rows, created) {
                // The coordinator may be gone when the run is stopping anyway.
                let _ = self.coordinator.send(ToCoordinator::Failed(format!("sink: {e}")));
                return false;
            }
            *written.entry(id).or_default() += out.rows.len() as u64;
            out.clear_rows();
            created.clear();
        }
        true
    }
}

/// Rows written for `id`, forgotten once reported with its end.
fn ended(written: &mut BTreeMap<u64, u64>, id: u64) -> u64 {
    written.remove(&id).unwrap_or(0)
}
