//! Partition actors: each owns the operator state of one key range.
//!
//! Order of handling (one message at a time, in arrival order):
//! 1. before each record (real-time): move the clock to the record's stamp (timers due up to it
//!    fire first), then process the record with the watermark it was stamped with;
//! 2. `Watermark` / `Tick`: move the watermark / clock;
//! 3. `BeginBatch` / `EndBatch` (micro-batch): start a batch; emit its rows and end it at the sink;
//! 4. `Barrier`: move clock and watermark to the barrier's, send the epoch's rows, snapshot
//!    (with checkpoints: serialise the operator here, store it on the actor's
//!    [`SnapshotWriter`] thread, which acknowledges once it is durable; without: acknowledge at
//!    once), end the epoch at the sink; micro-batch with checkpoints: the same snapshot after
//!    `EndBatch`;
//! 5. `EndOfInput`: tell the sink this producer is done, and exit.
//!
//! Between messages, with a wall clock, the actor sleeps until its operator's next timer
//! (`recv_deadline`), never polling.
//!
//! Metrics (`crate::metrics`): the operator's time per data message (stage `partition`), how late
//! the actor woke for a timer (system clock), and its state (keys, estimated bytes) at every
//! barrier / end of batch.

use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, RecvTimeoutError, Sender};

use eddy_engine::Timestamp;
use eddy_engine::operator::{Mode, Operator, Output};

use crate::checkpoint::SnapshotWriter;
use crate::clock::{Clock, deadline_of};
use crate::messages::{Control, ToCoordinator, ToPartition, ToSink};
use crate::metrics::{Metrics, micros_to_seconds};

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
    /// Output rows.
    pub sink: Sender<ToSink>,
    /// Acknowledgements.
    pub coordinator: Sender<ToCoordinator>,
    /// Metric handles (no-ops without `[metrics]`).
    pub metrics: Metrics,
    /// With checkpoints: where snapshots go.
    pub snapshots: Option<SnapshotWriter>,
    /// Real-time: the first epoch (0, or the one after the restored checkpoint's).
    pub first_epoch: u64,
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
        loop {
            let mut due = Timestamp::MIN;
            let msg = match (wall, self.operator.next_timer()) {
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
                    for s in batch {
                        if self.mode == Mode::RealTime {
                            self.operator.advance_clock(s.now, &mut out);
                        }
                        let before = out.rows.len();
                        self.operator.on_record(&s.record, s.watermark, &mut out);
                        if s.created_ns != 0 {
                            created.resize(before, 0);
                            created.resize(out.rows.len(), s.created_ns);
                        }
                    }
                    if let Some(t) = started {
                        self.metrics.stage_partition.record(t.elapsed().as_secs_f64());
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
                        if !self.flush(current, &mut out, &mut created)
                            || self.sink.send(ToSink::End { id: batch_id }).is_err()
                        {
                            return;
                        }
                        if let Some(w) = &self.snapshots
                            && !w.submit(batch_id, self.operator.snapshot(), self.operator.state_len())
                        {
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
                        if !self.flush(epoch, &mut out, &mut created) {
                            return;
                        }
                        self.report_state(&mut size);
                        let state_len = self.operator.state_len();
                        let acked = match &self.snapshots {
                            Some(w) => w.submit(epoch, self.operator.snapshot(), state_len),
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
                        if !acked || self.sink.send(ToSink::End { id: epoch }).is_err() {
                            return;
                        }
                        current = epoch + 1;
                    }
                    Control::EndOfInput => {
                        self.flush(current, &mut out, &mut created);
                        // The sink may already be gone after a failure; nothing left to tell it.
                        let _ = self.sink.send(ToSink::Done);
                        return;
                    }
                },
            }
            if self.mode == Mode::RealTime && !out.is_empty() && !self.flush(current, &mut out, &mut created) {
                return;
            }
        }
    }

    /// Sets the state gauges: keys, and bytes estimated as keys x bytes per key of the serialised
    /// state, re-measured at most every [`STATE_BYTES_EVERY`] (serialising is not free).
    fn report_state(&self, size: &mut StateSize) {
        if !self.metrics.enabled() {
            return;
        }
        let m = &self.metrics.partitions[self.partition];
        let keys = self.operator.state_len();
        if keys > 0 && size.measured.is_none_or(|t| t.elapsed() >= STATE_BYTES_EVERY) {
            size.bytes_per_key = self.operator.snapshot().len() as f64 / keys as f64;
            size.measured = Some(Instant::now());
        }
        m.state_keys.set(keys as f64);
        m.state_bytes.set((keys as f64 * size.bytes_per_key).round());
    }

    /// Sends pending rows and late records to the sink; `false` when the sink is gone.
    fn flush(&self, id: u64, out: &mut Output, created: &mut Vec<u64>) -> bool {
        if !out.late.is_empty() {
            let records = std::mem::take(&mut out.late);
            if self.sink.send(ToSink::Late { id, records }).is_err() {
                return false;
            }
        }
        if !out.rows.is_empty() {
            let rows = std::mem::take(&mut out.rows);
            if !created.is_empty() {
                created.resize(rows.len(), 0);
            }
            let created_ns = std::mem::take(created);
            if self.sink.send(ToSink::Rows { id, rows, created_ns }).is_err() {
                return false;
            }
        }
        true
    }
}
