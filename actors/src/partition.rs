//! Partition actors: each owns the operator state of one key range.
//!
//! Order of handling (one message at a time, in arrival order):
//! 1. before each record (real-time): move the clock to the record's stamp (timers due up to it
//!    fire first), then process the record with the watermark it was stamped with;
//! 2. `Watermark` / `Tick`: move the watermark / clock;
//! 3. `BeginBatch` / `EndBatch` (micro-batch): start a batch; emit its rows and end it at the sink;
//!    with an exchange ([`crate::exchange`]), between the two: send the rows that reached it to
//!    their owners, take the peers' until each peer's end-of-batch marker is in, and end the
//!    batch of the stages after it;
//! 4. `Barrier`: move clock and watermark to the barrier's, send the epoch's rows, snapshot
//!    (with checkpoints: the operator notes the cut of its state ([`Operator::begin_snapshot`]);
//!    without: acknowledge at once), end the epoch at the sink; micro-batch with checkpoints:
//!    the same snapshot after `EndBatch`. A snapshot still in progress at the next barrier is
//!    finished first;
//! 5. `EndOfInput`: finish the snapshot in progress, tell the sink this producer is done, and
//!    exit.
//!
//! Real-time, with an exchange ([`crate::exchange::real_time`]): the actor waits on its input and
//! on its exchange channel at once, and hands a peer's message to its stages after the exchange
//! as it arrives. After each message it routes the rows that reached the exchange; it sends all
//! it holds, with its watermark at the exchange, whenever its input runs empty and after a
//! `Watermark`; at a `Barrier` it does so too, sends its marker, and takes the peers' messages
//! until every peer's marker is in before it snapshots (aligned), then takes what peers already
//! past the barrier sent; at `EndOfInput` it waits for every peer's end the same way.
//!
//! While a snapshot is in progress, the actor writes it in short steps between messages (at most
//! half of its time, waiting for its input between steps: [`SnapshotPacer`]) and hands the
//! finished bytes to its [`SnapshotWriter`] thread, which stores them and acknowledges the
//! barrier once they are durable (the checkpoint is complete when every partition actor's
//! snapshot is). Otherwise, between messages, with a wall clock, the actor sleeps until its
//! operator's next timer (`recv_deadline`), never polling.
//!
//! With one partition actor in real-time mode, its work ([`PartitionTask`]) runs on the source
//! actor's thread instead of its own (chained, see [`crate::source::Downstream`]): the same
//! messages in the same order, handed over by a call instead of a channel; the source waits for
//! its input only until the task's next timer or snapshot step.
//!
//! A processed data batch goes back to the source actor ([`crate::recycle`]: at once, never
//! waiting; dropped here when the way back is full), its buffer and records to be reused.
//!
//! Metrics (`crate::metrics`): the operator's time per data message (stage `partition`), how late
//! the actor woke for a timer (system clock), and its state (keys, estimated bytes) at every
//! barrier / end of batch.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, RecvTimeoutError, Select, Sender, TryRecvError};

use eddy_engine::Timestamp;
use eddy_engine::operator::{Mode, Operator, OperatorChain, Output, Rejected, prefetch_ahead_keyed};
use eddy_engine::steps::{Applied, CompiledSteps, RowApplied};
use eddy_engine::{Record, Row};

use crate::checkpoint::pacer::Finished;
use crate::checkpoint::{SnapshotPacer, SnapshotWriter};
use crate::clock::{Clock, deadline_of};
use crate::exchange::real_time::{RealTimeExchange, ToPeer};
use crate::exchange::{Exchange, ExchangeError};
use crate::messages::{Control, ToCoordinator, ToPartition, ToSink};
use crate::metrics::{Metrics, micros_to_seconds};
use crate::recycle::BatchReturn;
use crate::sink::RowWriter;
use crate::stalls::{StallReport, StallTracer};

/// Rows fired by one move of the clock from which the stall tracer calls it a timer burst
/// ([`eddy_engine::stall::Cause::TimerBurst`]).
const TIMER_BURST_ROWS: usize = 256;

/// Real-time, no exchange: rows pending from which a partition actor writes them to the sink
/// before the rest of its batch (one batch is up to 256 records, which may give a few hundred
/// rows). Bounds the sink work charged to one record: the 60-second stall trace of issue 28
/// found records that carried 200-280 µs of formatting for a whole batch's rows
/// (bench/results/latency-stalls.md).
const FLUSH_EVERY_ROWS: usize = 64;

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
    pub clock: Arc<dyn Clock>,
    /// Input: data and control, in order.
    pub input: Receiver<ToPartition>,
    /// Late records, batch / epoch ends.
    pub sink: Sender<ToSink>,
    /// Output rows, written on this actor's thread.
    pub rows: RowWriter,
    /// The sink's `select` ([`eddy_engine::plan::QueryPlan::output_steps`]), run on each row
    /// before `rows` writes it; rows on which it fails go to the dead letters.
    pub output_steps: Arc<CompiledSteps>,
    /// A SQL query's filters on the watermark column
    /// ([`eddy_engine::plan::QueryPlan::query_steps`]), run on each record before the operator
    /// (after the source actor's watermark has seen it); records on which they fail go to the
    /// dead letters.
    pub query_steps: Arc<CompiledSteps>,
    /// Whether an expression this actor runs calls `current_timestamp()`
    /// ([`eddy_engine::plan::QueryPlan::reads_processing_time_after_sources`]): the actor then
    /// sets the processing time before it evaluates ([`eddy_engine::expr::set_processing_time`]):
    /// the batch's in micro-batch mode; in real-time mode the instant each record, tick or timer
    /// is processed at, each output row keeping the instant it was made at.
    pub reads_processing_time: bool,
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
    /// Counts the flushes that wrote rows or sent late records (shared by every partition
    /// actor and read by the source actor): a real-time epoch in which neither this nor the
    /// input moved is not closed by a barrier ([`crate::source`], "idle epochs").
    pub output: Arc<AtomicU64>,
    /// Micro-batch, a chain split at an exchange ([`eddy_engine::operator::OperatorChain::split_at_exchange`]):
    /// this actor's end of it; `None` otherwise.
    pub exchange: Option<Exchange>,
    /// Real-time, a chain split at an exchange: this actor's end of it
    /// ([`crate::exchange::real_time`]); `None` otherwise.
    pub real_time_exchange: Option<RealTimeExchange>,
    /// The stall tracer's threshold and where its report goes at the end
    /// ([`crate::RunOptions::trace_stalls`]); `None`: no tracer.
    pub stalls: Option<(Duration, Arc<Mutex<StallReport>>)>,
    /// How long an empty input is polled before the actor blocks on it
    /// ([`crate::RunOptions::spin_wait`]); `None`: it blocks at once.
    pub spin_wait: Option<Duration>,
}

/// The state-size estimate: bytes per key of the last serialised state, and when it was measured.
#[derive(Debug, Default)]
struct StateSize {
    bytes_per_key: f64,
    measured: Option<Instant>,
}

impl PartitionActor {
    /// Runs the event loop on this thread until `EndOfInput` or until a peer hangs up: waits
    /// for a message until the operator's next timer (wall clock) or the next snapshot step,
    /// whichever comes first ([`PartitionTask::wake_at`]).
    pub fn run(self) {
        let input = self.input.clone();
        let spin = self.spin_wait;
        let peers = self.real_time_exchange.as_ref().map(|x| x.inbox().clone());
        let mut task = PartitionTask::new(self);
        loop {
            if !task.snapshot_step() {
                return;
            }
            if let Some(peers) = &peers {
                let go = match wait_either(&input, peers, task.wake_at()) {
                    Waited::Input(Some(m)) => task.handle(m),
                    Waited::Peer(Some(m)) => task.handle_peer(m),
                    Waited::Input(None) | Waited::Peer(None) => return,
                    Waited::Timeout => task.on_wake(),
                };
                // the input ran empty: what waits for a peer goes now
                if !go || (input.is_empty() && !task.flush_exchange()) {
                    return;
                }
                continue;
            }
            let msg = match spin.and_then(|d| spin_for(&input, d)) {
                Some(m) => Some(m),
                None => match task.wake_at() {
                    Some(deadline) => match input.recv_deadline(deadline) {
                        Ok(m) => Some(m),
                        Err(RecvTimeoutError::Timeout) => None,
                        Err(RecvTimeoutError::Disconnected) => return,
                    },
                    None => match input.recv() {
                        Ok(m) => Some(m),
                        Err(_) => return,
                    },
                },
            };
            let go = match msg {
                Some(m) => task.handle(m),
                None => task.on_wake(),
            };
            if !go {
                return;
            }
        }
    }
}

/// Polls `input` for up to `spin`, on the core: the message if one came (`None`: none came, or
/// the channel is gone; the blocking receive after it tells which).
fn spin_for(input: &Receiver<ToPartition>, spin: Duration) -> Option<ToPartition> {
    let until = Instant::now() + spin;
    loop {
        for _ in 0..64 {
            match input.try_recv() {
                Ok(m) => return Some(m),
                Err(TryRecvError::Disconnected) => return None,
                Err(TryRecvError::Empty) => std::hint::spin_loop(),
            }
        }
        if Instant::now() >= until {
            return None;
        }
    }
}

/// What [`wait_either`] got: a message of the input or of a peer (`None`: that channel is
/// gone), or the deadline passed.
enum Waited {
    Input(Option<ToPartition>),
    Peer(Option<ToPeer>),
    Timeout,
}

/// Waits for a message on `input` or `peers`, until `deadline` when there is one.
fn wait_either(input: &Receiver<ToPartition>, peers: &Receiver<ToPeer>, deadline: Option<Instant>) -> Waited {
    let mut sel = Select::new();
    let from_input = sel.recv(input);
    sel.recv(peers);
    let op = match deadline {
        Some(d) => match sel.select_deadline(d) {
            Ok(op) => op,
            Err(_) => return Waited::Timeout,
        },
        None => sel.select(),
    };
    if op.index() == from_input { Waited::Input(op.recv(input).ok()) } else { Waited::Peer(op.recv(peers).ok()) }
}

/// Real-time, a chain split at an exchange: runs `f` on the actor's end of the exchange and its
/// chain; `true` without an exchange. A failure is reported to the coordinator (`false`: the
/// actor must stop).
fn exchanged(
    actor: &mut PartitionActor,
    out: &mut Output,
    f: impl FnOnce(&mut RealTimeExchange, &mut OperatorChain, &mut Output) -> Result<(), ExchangeError>,
) -> bool {
    let Some(x) = actor.real_time_exchange.as_mut() else { return true };
    let result = match actor.operator.as_chain_mut() {
        Some(chain) => f(x, chain, out).map_err(|e| e.to_string()),
        None => Err("an exchange is wired to an operator that is not a chain (a bug)".into()),
    };
    match result {
        Ok(()) => true,
        Err(why) => {
            // The coordinator may be gone when the run is stopping anyway.
            let _ = actor.coordinator.send(ToCoordinator::Failed(why));
            false
        }
    }
}

/// A partition actor's work, apart from how its messages reach it: driven by its own thread
/// ([`PartitionActor::run`]), or chained into the source actor's thread when there is one
/// partition in real-time mode (`crate::source::Downstream::Chained`, as Flink chains
/// operators that need no repartitioning: no thread hand-off per record). Either way the
/// messages come in the order the source sent them, and between them the driver calls
/// [`PartitionTask::snapshot_step`] and, at [`PartitionTask::wake_at`], [`PartitionTask::on_wake`].
#[derive(Debug)]
pub struct PartitionTask {
    actor: PartitionActor,
    out: Output,
    /// Creation instants of the records behind `out.rows` (latency).
    created: Vec<u64>,
    /// The buffer the output steps build each row in (swapped with the row's, so reused).
    scratch: Row,
    /// The batch (micro-batch) or epoch (real-time) rows currently belong to.
    current: u64,
    /// Whether timers fire on the wall clock (system clock, real-time).
    wall: bool,
    size: StateSize,
    pacer: SnapshotPacer,
    /// Rows written per batch / epoch not yet ended (reported with its end).
    written: BTreeMap<u64, u64>,
    /// The task ended (`EndOfInput`, or a peer is gone): it takes nothing more.
    ended: bool,
    /// Micro-batch: the current batch's eviction watermark (carried across an exchange).
    evict: Timestamp,
    /// The stall tracer, when on.
    stalls: Option<StallTracer>,
    /// Where `current_timestamp()` is read: the processing time now and of the rows not yet
    /// written; `None` when no expression of the actor reads it.
    row_clock: Option<RowClock>,
    /// The operator's key columns that hold strings in the batch being handled (its first
    /// record's), whose bytes the prefetch loads ([`prefetch_ahead_keyed`]).
    string_keys: Vec<usize>,
}

/// The processing time of output rows, for `current_timestamp()` in the query's select list,
/// HAVING and the sink's `select` (SQL.md "time"): every row of a micro-batch is made at the
/// batch's processing time; in real-time mode a row is made at the instant the record, tick or
/// timer that made it was processed at, which under the replay clock is a function of the
/// input alone, so output stays deterministic however rows are grouped for writing.
#[derive(Debug, Default)]
struct RowClock {
    /// The processing time of the message being handled.
    now: Timestamp,
    /// Real-time: the instant of each row of `Output::rows` made before `now` was set
    /// (shorter than the rows: the rest were made at `now`).
    times: Vec<Timestamp>,
}

impl RowClock {
    /// The processing time moves to `t`: rows made so far keep the instant before it.
    fn move_to(&mut self, rows: usize, t: Timestamp) {
        if self.times.len() < rows {
            self.times.resize(rows, self.now);
        }
        self.now = t;
        eddy_engine::expr::set_processing_time(t);
    }
}

/// Real-time: moves the operator's processing time to `now`, firing its timers due by then.
/// When an expression reads the processing time (`row_clock`), the timers fire one due instant
/// at a time and each row a timer makes is made at that instant (PIPELINE.md "Replay clock":
/// the clock moves to a record's value "firing every timer due up to that instant first"; a
/// rolling window's row then has `current_timestamp()` - delay = its frontier), whatever the
/// record that moved the clock; the record's own rows are made at `now`.
///
/// Inlined where the clock moves (once per record): without `row_clock` it is the operator's
/// own call; the timers one instant at a time are [`step_timers`], out of line.
#[inline]
fn advance_clock(operator: &mut dyn Operator, row_clock: Option<&mut RowClock>, out: &mut Output, now: Timestamp) {
    if let Some(c) = row_clock {
        step_timers(operator, c, out, now);
    }
    operator.advance_clock(now, out);
}

/// [`advance_clock`]'s timers due by `now`, each fired at its own instant, `c` then at `now`.
#[inline(never)]
fn step_timers(operator: &mut dyn Operator, c: &mut RowClock, out: &mut Output, now: Timestamp) {
    let mut fired = Timestamp::MIN;
    while let Some(due) = operator.next_timer() {
        // (`due <= fired`: a timer set again at an instant already passed: fired below)
        if due > now || due <= fired {
            break;
        }
        c.move_to(out.rows.len(), due.max(c.now));
        operator.advance_clock(due, out);
        fired = due;
    }
    c.move_to(out.rows.len(), now);
}

impl PartitionTask {
    /// The task of `actor` (its `input` is not read here: the driver hands the messages over).
    pub fn new(mut actor: PartitionActor) -> PartitionTask {
        if actor.reads_processing_time
            && let Some(x) = actor.real_time_exchange.as_mut()
        {
            x.time_rows();
        }
        let stalls = actor.stalls.as_ref().map(|(threshold, _)| {
            let m = actor.metrics.partitions.get(actor.partition).cloned();
            let on = actor.metrics.enabled() && m.is_some();
            StallTracer::new(
                actor.partition,
                *threshold,
                m.unwrap_or_else(|| Metrics::disabled(1).partitions[0].clone()),
                on,
            )
        });
        PartitionTask {
            stalls,
            current: actor.first_epoch,
            wall: actor.clock.is_wall_clock() && actor.mode == Mode::RealTime,
            row_clock: actor.reads_processing_time.then(RowClock::default),
            actor,
            out: Output::default(),
            created: Vec::new(),
            scratch: Vec::new(),
            size: StateSize::default(),
            pacer: SnapshotPacer::new(),
            written: BTreeMap::new(),
            ended: false,
            evict: Timestamp::MIN,
            string_keys: Vec::new(),
        }
    }

    /// Whether the task has ended (end of input, or a peer gone).
    pub fn ended(&self) -> bool {
        self.ended
    }

    /// Between messages: runs a step of the snapshot in progress when one is due; `false` when
    /// the snapshot writer is gone (the task has ended).
    pub fn snapshot_step(&mut self) -> bool {
        if self.ended {
            return false;
        }
        if self.pacer.in_progress()
            && let Some(f) = self.pacer.poll(self.actor.operator.as_mut())
            && !self.submit(f)
        {
            return self.end();
        }
        true
    }

    /// Completes the snapshot in progress at once (before its driver blocks on the commit of
    /// its epoch); `false` when the snapshot writer is gone.
    pub fn finish_snapshot(&mut self) -> bool {
        if self.ended {
            return false;
        }
        if let Some(f) = self.pacer.finish(self.actor.operator.as_mut())
            && !self.submit(f)
        {
            return self.end();
        }
        true
    }

    /// The instant to wake at without a message: the operator's next timer (wall clock only)
    /// or the next step of the snapshot in progress, whichever is first; `None`: only a message.
    pub fn wake_at(&self) -> Option<Instant> {
        let timer =
            self.actor.operator.next_timer().filter(|_| self.wall).map(|at| deadline_of(self.actor.clock.as_ref(), at));
        let step = self.pacer.in_progress().then(|| self.pacer.next_step_at().unwrap_or_else(Instant::now));
        match (timer, step) {
            (Some(t), Some(s)) => Some(t.min(s)),
            (t, s) => t.or(s),
        }
    }

    /// At [`PartitionTask::wake_at`] (or any time): fires the operator's timers due by the
    /// wall clock, and writes their rows; `false` when the sink failed (the task has ended).
    pub fn on_wake(&mut self) -> bool {
        if self.ended {
            return false;
        }
        let Some(due) = self.actor.operator.next_timer().filter(|_| self.wall) else { return true };
        let now = self.actor.clock.now();
        if due > now {
            return true;
        }
        if self.actor.metrics.enabled() {
            self.actor.metrics.timer_lag.record(micros_to_seconds(now.0.saturating_sub(due.0).max(0)));
        }
        if let Some(t) = self.stalls.as_mut() {
            t.begin_message();
        }
        advance_clock(self.actor.operator.as_mut(), self.row_clock.as_mut(), &mut self.out, now);
        if !exchanged(&mut self.actor, &mut self.out, |x, c, o| x.route(c, o)) {
            return self.end();
        }
        let go = self.flush_real_time();
        if let Some(t) = self.stalls.as_mut() {
            t.control_done("timers");
        }
        go
    }

    /// Real-time, with an exchange: hands a peer's message to the stages after the exchange
    /// and writes their rows; `false` once the task has ended (a failure, reported).
    pub fn handle_peer(&mut self, msg: ToPeer) -> bool {
        if self.ended {
            return false;
        }
        if let Some(t) = self.stalls.as_mut() {
            t.begin_message();
        }
        if !exchanged(&mut self.actor, &mut self.out, |x, c, o| x.receive(msg, c, o)) {
            return self.end();
        }
        let go = self.flush_real_time();
        if let Some(t) = self.stalls.as_mut() {
            t.control_done("exchange");
        }
        go
    }

    /// Real-time, with an exchange: sends every peer what waits for it, with this actor's
    /// watermark at the exchange, and writes the rows that moved; `false` once the task has
    /// ended (a failure, reported).
    pub fn flush_exchange(&mut self) -> bool {
        if self.ended {
            return false;
        }
        if !exchanged(&mut self.actor, &mut self.out, |x, c, o| x.flush(c, o)) {
            return self.end();
        }
        self.flush_real_time()
    }

    /// Handles one message (see the module documentation for the order); `false` once the task
    /// has ended: after `EndOfInput`, or when a peer is gone (a failure, reported).
    pub fn handle(&mut self, msg: ToPartition) -> bool {
        if self.ended {
            return false;
        }
        let kind = match &msg {
            ToPartition::Data(_) => None,
            ToPartition::Control(c) => Some(c.kind()),
        };
        if let Some(t) = self.stalls.as_mut() {
            t.begin_message();
        }
        let go = self.dispatch(msg);
        if !go {
            return self.end();
        }
        let go = self.flush_real_time();
        if let Some(t) = self.stalls.as_mut() {
            match kind {
                None => t.flushed(),
                Some(kind) => t.control_done(kind),
            }
        }
        go
    }

    fn end(&mut self) -> bool {
        self.ended = true;
        if let (Some(t), Some((_, report))) = (self.stalls.take(), self.actor.stalls.as_ref())
            && let Ok(mut r) = report.lock()
        {
            r.merge(t.report());
        }
        false
    }

    /// Real-time: writes the rows produced so far; `false` when the sink failed.
    fn flush_real_time(&mut self) -> bool {
        if self.actor.mode == Mode::RealTime && !self.out.is_empty() {
            eddy_engine::stall::note(eddy_engine::stall::Cause::SinkWrite);
            if !self.flush(self.current) {
                return self.end();
            }
        }
        true
    }

    fn dispatch(&mut self, msg: ToPartition) -> bool {
        let PartitionTask {
            actor, out, created, current, evict, stalls, written, scratch, row_clock, string_keys, ..
        } = self;
        match msg {
            ToPartition::Data(batch) => {
                let started = actor.metrics.enabled().then(Instant::now);
                // Real-time without an exchange: rows go to the sink part-way through a batch,
                // so that no record waits for the rows of the whole batch to be written.
                let flush_every =
                    (actor.mode == Mode::RealTime && actor.real_time_exchange.is_none()).then_some(FLUSH_EVERY_ROWS);
                if let Some(c) = row_clock.as_ref() {
                    // micro-batch: the batch's processing time (another task on this thread may
                    // have set another since its BeginBatch)
                    eddy_engine::expr::set_processing_time(c.now);
                }
                // Decided once per batch: whether the clock moves before each record (real-time,
                // unless neither the operator nor an expression reads it), whether the query's
                // steps run, whether the prefetch schedule runs and which key columns hold
                // strings to prefetch.
                let moves_clock =
                    actor.mode == Mode::RealTime && (row_clock.is_some() || !actor.operator.ignores_clock());
                let plain = actor.query_steps.is_empty();
                let prefetching = actor.operator.prefetch_pays();
                string_keys.clear();
                if prefetching && let Some(first) = batch.first() {
                    let values = &first.record.values;
                    string_keys.extend(
                        actor
                            .operator
                            .key_columns()
                            .iter()
                            .filter(|&&c| matches!(values.get(c), Some(eddy_engine::Value::Str(_)))),
                    );
                }
                for (i, s) in batch.iter().enumerate() {
                    let ahead = |j: usize| batch.get(j).map(|s| &s.record);
                    if prefetching {
                        prefetch_ahead_keyed(actor.operator.as_ref(), string_keys, ahead, i);
                    }
                    if moves_clock {
                        let before = out.rows.len();
                        advance_clock(actor.operator.as_mut(), row_clock.as_mut(), out, s.now);
                        if out.rows.len() - before >= TIMER_BURST_ROWS {
                            eddy_engine::stall::note(eddy_engine::stall::Cause::TimerBurst);
                        }
                    }
                    let before = out.rows.len();
                    if plain {
                        actor.operator.on_record(&s.record, s.watermark, out);
                    } else {
                        match actor.query_steps.apply(s.record.clone()) {
                            Applied::Keep(r) => actor.operator.on_record(&r, s.watermark, out),
                            Applied::Drop => {}
                            Applied::Failed { reason, input } => out.rejected.push(Rejected { record: input, reason }),
                        }
                    }
                    // (rows of timers before it keep 0: created instant unknown)
                    if s.created_ns != 0 && out.rows.len() > before {
                        created.resize(before, 0);
                        created.resize(out.rows.len(), s.created_ns);
                    }
                    if flush_every.is_some_and(|n| out.rows.len() >= n) {
                        eddy_engine::stall::note(eddy_engine::stall::Cause::SinkWrite);
                        if !flush_output(actor, out, created, written, scratch, row_clock.as_mut(), *current) {
                            return false;
                        }
                    }
                    if let Some(t) = stalls.as_mut() {
                        t.record_done();
                    }
                }
                if !exchanged(actor, out, |x, c, o| x.route(c, o)) {
                    return false;
                }
                if let Some(t) = started {
                    actor.metrics.stage_partition.record(t.elapsed().as_secs_f64());
                }
                // Every record was processed and only borrowed: the batch can be reused.
                if let Some(r) = &actor.returns {
                    r.give_back(batch);
                }
                true
            }
            ToPartition::Control(c) => match c {
                Control::BeginBatch(ctx) => {
                    if let Some(c) = row_clock.as_mut() {
                        c.move_to(out.rows.len(), ctx.processing_time);
                    }
                    *current = ctx.batch_id;
                    *evict = ctx.watermarks.evict;
                    actor.operator.begin_batch(&ctx);
                    true
                }
                Control::EndBatch { batch_id } => {
                    eddy_engine::stall::note(eddy_engine::stall::Cause::Barrier);
                    if let Some(c) = row_clock.as_ref() {
                        eddy_engine::expr::set_processing_time(c.now);
                    }
                    actor.operator.end_batch(out);
                    if let Some(exchange) = actor.exchange.as_mut() {
                        let exchanged = match actor.operator.as_chain_mut() {
                            Some(chain) => exchange
                                .end_batch(batch_id, *evict, chain, out)
                                .map(|_| chain.end_exchanged(out))
                                .map_err(|e| e.to_string()),
                            None => Err("an exchange is wired to an operator that is not a chain (a bug)".into()),
                        };
                        if let Err(why) = exchanged {
                            // The coordinator may be gone when the run is stopping anyway.
                            let _ = actor.coordinator.send(ToCoordinator::Failed(why));
                            return false;
                        }
                    }
                    self.report_state();
                    if !self.flush(self.current) {
                        return false;
                    }
                    // a forEach writer is closed without error only once it has every row
                    self.actor.rows.end(batch_id);
                    self.actor.sink.send(ToSink::End { id: batch_id, rows: ended(&mut self.written, batch_id) }).is_ok()
                        && (self.actor.snapshots.is_none() || self.begin_snapshot(batch_id))
                }
                Control::Watermark { watermark, at } => {
                    // the rows it finalises are made when it moved (the record that moved it)
                    if let Some(c) = row_clock.as_mut() {
                        c.move_to(out.rows.len(), at);
                    }
                    actor.operator.advance_watermark(watermark, out);
                    exchanged(actor, out, |x, c, o| x.flush(c, o))
                }
                Control::Tick(now) => {
                    advance_clock(actor.operator.as_mut(), row_clock.as_mut(), out, now);
                    exchanged(actor, out, |x, c, o| x.route(c, o))
                }
                Control::Barrier { epoch, now, watermark } => {
                    eddy_engine::stall::note(eddy_engine::stall::Cause::Barrier);
                    if now != Timestamp::MIN {
                        advance_clock(actor.operator.as_mut(), row_clock.as_mut(), out, now);
                    }
                    actor.operator.advance_watermark(watermark, out);
                    // aligned: every peer's rows of the epoch are in before the snapshot
                    if !exchanged(actor, out, |x, c, o| x.barrier(epoch, c, o)) || !self.flush(epoch) {
                        return false;
                    }
                    self.actor.rows.end(epoch);
                    self.report_state();
                    let state_len = self.actor.operator.state_len();
                    let acked = match &self.actor.snapshots {
                        Some(_) => self.begin_snapshot(epoch),
                        None => self
                            .actor
                            .coordinator
                            .send(ToCoordinator::BarrierAck {
                                epoch,
                                partition: self.actor.partition,
                                state_len,
                                snapshot: None,
                            })
                            .is_ok(),
                    };
                    if !acked
                        || self
                            .actor
                            .sink
                            .send(ToSink::End { id: epoch, rows: ended(&mut self.written, epoch) })
                            .is_err()
                    {
                        return false;
                    }
                    self.current = epoch + 1;
                    // what peers already past the barrier sent belongs to the next epoch
                    exchanged(&mut self.actor, &mut self.out, |x, c, o| x.resume(epoch, c, o))
                }
                Control::EndOfInput => {
                    if let Some(x) = self.actor.exchange.as_mut() {
                        x.finish();
                    }
                    if !exchanged(&mut self.actor, &mut self.out, |x, c, o| x.end(c, o)) {
                        return false;
                    }
                    if let Some(f) = self.pacer.finish(self.actor.operator.as_mut())
                        && !self.submit(f)
                    {
                        return false;
                    }
                    let current = self.current;
                    if !self.flush(current) {
                        return false;
                    }
                    self.actor.rows.end(current);
                    // The sink may already be gone after a failure; nothing left to tell it.
                    let leftovers = std::mem::take(&mut self.written).into_iter().collect();
                    let _ = self.actor.sink.send(ToSink::Done { leftovers });
                    false
                }
            },
        }
    }

    /// At the barrier of `epoch` (with checkpoints): begins the operator's snapshot and hands
    /// over what is complete now; `false` when the writer is gone.
    fn begin_snapshot(&mut self, epoch: u64) -> bool {
        if let Some(buffer) = self.actor.snapshots.as_ref().and_then(SnapshotWriter::spare_buffer) {
            self.actor.operator.reuse_snapshot_buffer(buffer);
        }
        let done = self.pacer.begin(self.actor.operator.as_mut(), epoch);
        done.into_iter().all(|f| self.submit(f))
    }

    /// Hands a finished snapshot to the writer thread (its size also refreshes the state-bytes
    /// estimate, for free); `false` when the writer is gone.
    fn submit(&mut self, f: Finished) -> bool {
        if f.state_len > 0 {
            self.size.bytes_per_key = f.state.len() as f64 / f.state_len as f64;
            self.size.measured = Some(Instant::now());
        }
        self.actor.snapshots.as_ref().is_some_and(|w| w.submit(f.epoch, f.state, f.state_len))
    }

    /// Sets the state gauges: keys, and bytes estimated as keys x bytes per key of the serialised
    /// state: of the last checkpoint's snapshot, else re-measured at most every
    /// [`STATE_BYTES_EVERY`] (serialising is not free).
    fn report_state(&mut self) {
        let actor = &self.actor;
        if !actor.metrics.enabled() {
            return;
        }
        let m = &actor.metrics.partitions[actor.partition];
        let keys = actor.operator.state_len();
        // With checkpoints every snapshot refreshes the estimate ([`PartitionTask::submit`]):
        // no extra serialisation on this thread.
        let size = &mut self.size;
        let stale = match size.measured {
            None => actor.snapshots.is_none(),
            Some(t) => actor.snapshots.is_none() && t.elapsed() >= STATE_BYTES_EVERY,
        };
        if keys > 0 && stale {
            size.bytes_per_key = actor.operator.snapshot().len() as f64 / keys as f64;
            size.measured = Some(Instant::now());
        }
        m.state_keys.set(keys as f64);
        m.state_bytes.set((keys as f64 * size.bytes_per_key).round());
        let dropped = actor.operator.dropped_between_stages();
        m.chain_rows_late.absolute(dropped.late);
        m.chain_rows_failed.absolute(dropped.failed);
        if let Some(x) = &actor.exchange {
            m.exchange_rows.absolute(x.rows_sent());
            m.exchange_full_sends.absolute(x.full_sends());
        }
        if let Some(x) = &actor.real_time_exchange {
            m.exchange_rows.absolute(x.rows_sent());
            m.exchange_full_sends.absolute(x.full_sends());
        }
    }

    /// Writes pending rows to the sink (counted in `written`, under batch / epoch `id`) and
    /// sends late records to the sink actor; `false` when the sink failed (reported to the
    /// coordinator) or is gone.
    fn flush(&mut self, id: u64) -> bool {
        let PartitionTask { actor, out, created, written, scratch, row_clock, .. } = self;
        flush_output(actor, out, created, written, scratch, row_clock.as_mut(), id)
    }
}

/// Hands what `out` holds of batch / epoch `id` to the sink actor: the output steps run on the
/// rows (each at its processing time, from `row_clock`, when they read it), then dead letters,
/// late and rejected records, then the rows (written through the row writer, counted in
/// `written`); `false` when the sink or the coordinator is gone.
fn flush_output(
    actor: &mut PartitionActor,
    out: &mut Output,
    created: &mut Vec<u64>,
    written: &mut BTreeMap<u64, u64>,
    scratch: &mut Row,
    mut row_clock: Option<&mut RowClock>,
    id: u64,
) -> bool {
    if let (Some(c), Some(x)) = (row_clock.as_deref_mut(), actor.real_time_exchange.as_mut()) {
        // rows the stages after a real-time exchange made when the minimum watermark moved
        for (start, end, at) in x.take_stamps() {
            if c.times.len() < end {
                c.times.resize(end, c.now);
            }
            c.times[start..end].fill(at);
        }
    }
    if !actor.output_steps.is_empty() && !out.rows.is_empty() {
        let times = row_clock.as_deref().map(|c| (c.times.as_slice(), c.now));
        let (refused, fields) = apply_output_steps(&actor.output_steps, &mut out.rows, created, scratch, times);
        if let Some(c) = row_clock.as_deref() {
            eddy_engine::expr::set_processing_time(c.now);
        }
        if !refused.is_empty() && actor.sink.send(ToSink::Rejected { id, fields, records: refused }).is_err() {
            return false;
        }
    }
    if !out.late.is_empty() || !out.rows.is_empty() || !out.dead_letters.is_empty() {
        actor.output.fetch_add(1, Ordering::Relaxed);
    }
    if !out.dead_letters.is_empty() {
        let lines = std::mem::take(&mut out.dead_letters);
        if actor.sink.send(ToSink::ChainRejected { id, lines }).is_err() {
            return false;
        }
    }
    if !out.late.is_empty() {
        let records = std::mem::take(&mut out.late);
        if actor.sink.send(ToSink::Late { id, records }).is_err() {
            return false;
        }
    }
    if !out.rejected.is_empty() {
        let records = std::mem::take(&mut out.rejected);
        if actor.sink.send(ToSink::Rejected { id, fields: Vec::new(), records }).is_err() {
            return false;
        }
    }
    if !out.rows.is_empty() {
        if let Err(e) = actor.rows.write(id, &out.rows, created) {
            // The coordinator may be gone when the run is stopping anyway.
            let _ = actor.coordinator.send(ToCoordinator::Failed(format!("sink: {e}")));
            return false;
        }
        *written.entry(id).or_default() += out.rows.len() as u64;
        out.clear_rows();
        created.clear();
    }
    if let Some(c) = row_clock {
        c.times.clear();
    }
    true
}

/// Runs the output steps (a SQL query's HAVING and select list, then the sink's `select`) on
/// `rows` in place (SEMANTICS.md "Source filters and projections": rows of every output mode);
/// returns the rows on which they failed, as they were, with the reason, and beside them the
/// field of the step that failed on each. `created` (creation instants, aligned with `rows` when as long) follows the rows kept;
/// when shorter it is cleared (those rows' latency goes unmeasured). `times`: when the steps
/// read the processing time, each row's instant (rows past the slice: the second member), set
/// before the row's steps run.
fn apply_output_steps(
    steps: &CompiledSteps,
    rows: &mut Vec<Row>,
    created: &mut Vec<u64>,
    scratch: &mut Row,
    times: Option<(&[Timestamp], Timestamp)>,
) -> (Vec<Rejected>, Vec<Arc<str>>) {
    let aligned = created.len() >= rows.len();
    if !aligned {
        created.clear();
    }
    let mut refused = Vec::new();
    let mut fields = Vec::new();
    let mut kept = 0;
    for i in 0..rows.len() {
        if let Some((times, now)) = times {
            eddy_engine::expr::set_processing_time(times.get(i).copied().unwrap_or(now));
        }
        let mut row = std::mem::take(&mut rows[i]);
        match steps.apply_row(&mut row, scratch) {
            RowApplied::Keep => {
                rows[kept] = row;
                if aligned {
                    created[kept] = created[i];
                }
                kept += 1;
            }
            RowApplied::Drop => {}
            RowApplied::Failed(reason, field) => {
                refused.push(Rejected { record: Record::new(row), reason });
                fields.push(field);
            }
        }
    }
    rows.truncate(kept);
    if aligned {
        created.truncate(kept);
    }
    (refused, fields)
}

/// Rows written for `id`, forgotten once reported with its end.
fn ended(written: &mut BTreeMap<u64, u64>, id: u64) -> u64 {
    written.remove(&id).unwrap_or(0)
}
