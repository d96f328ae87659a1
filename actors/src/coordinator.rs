//! The coordinator: collects barrier acknowledgements and commits, tells the source when a
//! micro-batch is committed (the next one starts after it, as in Spark), and turns a failure into
//! a stop.
//!
//! Commit protocol of a batch / epoch `id` (two phases, as Flink's two-phase commit sinks):
//! 1. the sink actor prepares `id` on every sink ([`ToCoordinator::Prepared`]);
//! 2. with checkpoints, the coordinator also waits for every partition actor's stored snapshot
//!    ([`ToCoordinator::BarrierAck`]) and the source's offset and clock
//!    ([`ToCoordinator::SourceAt`]), then writes the manifest (the checkpoint is complete);
//! 3. it tells the sink to commit `id` ([`SinkCommand::Commit`]), which makes the rows visible
//!    and reports [`ToCoordinator::Committed`], forwarded to the source.
//!
//! Ids complete in order. A failure (an actor's, or a checkpoint that cannot be written) stops
//! the source and aborts the sink: nothing later is committed.
//!
//! It also times each batch / epoch from its start (told by the source through [`UnitStarts`]) to
//! its commit (metric `eddy_micro_batch_duration_seconds`), and logs one `info` line about the
//! committed batches / epochs at most once a second: how many, their rows, the records read and
//! malformed since the last line, and the last and longest durations.

use std::collections::{BTreeMap, VecDeque};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, Sender};
use eddy_connectors::SourceOffset;

use crate::checkpoint::{Checkpointer, DriverState, Manifest, SavedOffset, SavedSource, SnapshotMeta};
use crate::messages::{SinkCommand, ToCoordinator, ToSource};
use crate::metrics::{Health, Metrics};
use crate::source::SourceCounters;

/// Most start instants kept (a batch / epoch that never commits does not grow the list).
const MAX_OPEN_UNITS: usize = 1024;
/// At most one progress line per this interval.
const LOG_EVERY: Duration = Duration::from_secs(1);

/// Start instants of batches / epochs by id: the source writes one when a unit starts, the
/// coordinator takes it at the unit's commit. One short lock per batch / epoch.
#[derive(Debug, Default)]
pub struct UnitStarts(Mutex<VecDeque<(u64, Instant)>>);

impl UnitStarts {
    /// Batch / epoch `id` starts now.
    pub fn started(&self, id: u64) {
        let mut q = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        if q.len() >= MAX_OPEN_UNITS {
            q.pop_front();
        }
        q.push_back((id, Instant::now()));
    }

    /// Batch / epoch `id`, the newest started, starts again now (a real-time epoch in which
    /// nothing happened goes on past its boundary: its time counts from the last one).
    pub fn restarted(&self, id: u64) {
        let mut q = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        match q.back_mut() {
            Some((last, at)) if *last == id => *at = Instant::now(),
            _ => {
                drop(q);
                self.started(id);
            }
        }
    }

    /// Batch / epoch `id` is committed: how long since it started (`None` if its start is not
    /// known). Starts of earlier ids are dropped.
    pub fn committed(&self, id: u64) -> Option<Duration> {
        let mut q = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        while let Some(&(first, at)) = q.front() {
            if first > id {
                break;
            }
            q.pop_front();
            if first == id {
                return Some(at.elapsed());
            }
        }
        None
    }
}

/// What happened since the last progress line.
#[derive(Debug)]
struct Progress {
    logged: Instant,
    units: u64,
    rows: u64,
    records: u64,
    malformed: u64,
    last: Duration,
    longest: Duration,
}

/// What the coordinator saw by the end of a run.
#[derive(Debug, Default, Clone)]
pub struct CoordinatorReport {
    /// Batches / epochs committed by the sink.
    pub committed: u64,
    /// Rows written.
    pub rows: u64,
    /// Epochs acknowledged by every partition actor.
    pub epochs_acknowledged: u64,
    /// Keys held by all partition actors at the last barrier.
    pub state_len: usize,
    /// The first failure, if any.
    pub failure: Option<String>,
}

/// The coordinator's wiring.
#[derive(Debug)]
pub struct Coordinator {
    /// Number of partition actors.
    pub partitions: usize,
    /// Input.
    pub input: Receiver<ToCoordinator>,
    /// Commits are forwarded to the source.
    pub source: Sender<ToSource>,
    /// Set to stop the source (failure or signal).
    pub stop: Arc<AtomicBool>,
    /// Start instants of batches / epochs.
    pub units: Arc<UnitStarts>,
    /// The source's counters (records read, malformed) for the progress line.
    pub counters: Arc<SourceCounters>,
    /// `"micro-batch"` or `"epoch"`: what a unit is called in the progress line.
    pub unit_name: &'static str,
    /// Metric handles (no-ops without `[metrics]`).
    pub metrics: Metrics,
    /// Commit decisions to the sink actor.
    pub sink: Sender<SinkCommand>,
    /// With `[checkpoint]`: where checkpoints go.
    pub checkpointer: Option<Checkpointer>,
    /// Readiness: a failed checkpoint makes `/readyz` answer 503.
    pub health: Arc<Health>,
}

/// What a batch / epoch still waits for before its checkpoint is complete.
#[derive(Debug, Default)]
struct Pending {
    /// Stored snapshots by partition.
    snapshots: BTreeMap<usize, SnapshotMeta>,
    /// The source's offset and clock, and when they arrived (the checkpoint's start).
    source: Option<(Option<SourceOffset>, DriverState, Vec<SavedSource>, Instant)>,
    /// Rows, once the sink prepared it.
    prepared: Option<u64>,
}

impl Coordinator {
    /// Runs until the sink is done.
    pub fn run(self) -> CoordinatorReport {
        let mut report = CoordinatorReport::default();
        let mut pending: BTreeMap<u64, Pending> = BTreeMap::new();
        let mut acks: BTreeMap<u64, (usize, usize)> = BTreeMap::new();
        let mut progress = Progress {
            logged: Instant::now(),
            units: 0,
            rows: 0,
            records: 0,
            malformed: 0,
            last: Duration::ZERO,
            longest: Duration::ZERO,
        };
        let mut failed = false;
        let mut last_checkpoint: Option<Instant> = None;
        loop {
            let msg = match self.input.recv_timeout(Duration::from_secs(1)) {
                Ok(m) => m,
                Err(crossbeam_channel::RecvTimeoutError::Timeout) => {
                    self.report_age(last_checkpoint);
                    continue;
                }
                Err(crossbeam_channel::RecvTimeoutError::Disconnected) => break,
            };
            self.report_age(last_checkpoint);
            let id = match msg {
                ToCoordinator::BarrierAck { epoch, state_len, snapshot, partition } => {
                    let e = acks.entry(epoch).or_default();
                    e.0 += 1;
                    e.1 += state_len;
                    if e.0 == self.partitions {
                        let (_, keys) = acks.remove(&epoch).unwrap_or_default();
                        self.on_epoch_acknowledged(epoch, keys, &mut report);
                    }
                    if let (Some(meta), Some(_)) = (snapshot, &self.checkpointer) {
                        pending.entry(epoch).or_default().snapshots.insert(partition, meta);
                    }
                    epoch
                }
                ToCoordinator::SourceAt { id, offset, driver, more_sources } => {
                    if self.checkpointer.is_some() {
                        pending.entry(id).or_default().source = Some((offset, driver, more_sources, Instant::now()));
                    }
                    id
                }
                ToCoordinator::Prepared { id, rows } => {
                    pending.entry(id).or_default().prepared = Some(rows);
                    id
                }
                ToCoordinator::Committed { id, rows } => {
                    report.committed += 1;
                    report.rows += rows;
                    tracing::debug!(batch = id, rows, "committed");
                    self.on_committed(id, rows, &mut progress);
                    // The source is gone once the input ended; nothing waits for this then.
                    let _ = self.source.send(ToSource::Committed(id));
                    continue;
                }
                ToCoordinator::Failed(why) => {
                    self.fail(why, &mut report);
                    failed = true;
                    continue;
                }
                ToCoordinator::SinkDone => break,
            };
            if failed {
                continue;
            }
            if let Err(why) = self.complete(&mut pending, &mut last_checkpoint) {
                self.metrics.checkpoint_failures.increment(1);
                self.health.set_checkpoint_failing(true);
                self.fail(why, &mut report);
                failed = true;
            }
            tracing::trace!(id, "coordinator message handled");
        }
        report
    }

    /// Stops the run: the source drains, the sink commits nothing more.
    fn fail(&self, why: String, report: &mut CoordinatorReport) {
        tracing::error!(%why, "pipeline failed");
        if report.failure.is_none() {
            report.failure = Some(why);
        }
        self.stop.store(true, Ordering::SeqCst);
        // The source and the sink may be gone already.
        let _ = self.source.send(ToSource::Stop);
        let _ = self.sink.send(SinkCommand::Abort);
    }

    /// Completes the oldest batches / epochs that have every part: writes their checkpoint (when
    /// checkpointing) and tells the sink to commit them. `Err` when a checkpoint cannot be
    /// written.
    /// Sets the checkpoint-age gauge (seconds since the last complete checkpoint).
    fn report_age(&self, last: Option<Instant>) {
        if let Some(t) = last {
            self.metrics.checkpoint_age.set(t.elapsed().as_secs_f64());
        }
    }

    fn complete(&self, pending: &mut BTreeMap<u64, Pending>, last: &mut Option<Instant>) -> Result<(), String> {
        while let Some(mut entry) = pending.first_entry() {
            let id = *entry.key();
            let p = entry.get_mut();
            let Some(rows) = p.prepared else { return Ok(()) };
            if let Some(ck) = &self.checkpointer {
                if p.snapshots.len() < self.partitions {
                    return Ok(());
                }
                let Some((offset, driver, more_sources, started)) = p.source.take() else { return Ok(()) };
                let manifest = Manifest {
                    pipeline: ck.pipeline().to_string(),
                    epoch: id,
                    fingerprint: ck.fingerprint().to_vec(),
                    parallelism: self.partitions as u32,
                    snapshots: std::mem::take(&mut p.snapshots).into_values().collect(),
                    source: offset.as_ref().map(SavedOffset::from),
                    driver,
                    more_sources,
                };
                ck.commit(&manifest).map_err(|e| format!("checkpoint of epoch {id}: {e}"))?;
                let bytes: u64 = manifest.snapshots.iter().map(|s| s.bytes).sum();
                let took = started.elapsed();
                self.metrics.checkpoint_duration.record(took.as_secs_f64());
                self.metrics.checkpoint_size.set(bytes as f64);
                self.metrics.checkpoint_age.set(0.0);
                *last = Some(Instant::now());
                tracing::debug!(
                    epoch = id,
                    rows,
                    snapshot_bytes = bytes,
                    ms = took.as_secs_f64() * 1e3,
                    "checkpoint complete"
                );
            }
            entry.remove();
            if self.sink.send(SinkCommand::Commit(id)).is_err() {
                return Ok(());
            }
        }
        Ok(())
    }

    /// Times the unit, and logs a progress line when the last one is a second old or more.
    fn on_committed(&self, id: u64, rows: u64, p: &mut Progress) {
        let took = self.units.committed(id);
        if let Some(d) = took {
            self.metrics.micro_batch_duration.record(d.as_secs_f64());
            p.last = d;
            p.longest = p.longest.max(d);
        }
        p.units += 1;
        p.rows += rows;
        if p.logged.elapsed() >= LOG_EVERY {
            let records = self.counters.records.load(Ordering::Relaxed);
            let malformed = self.counters.malformed.load(Ordering::Relaxed);
            tracing::info!(
                unit = self.unit_name,
                last_id = id,
                committed = p.units,
                rows = p.rows,
                records_in = records.saturating_sub(p.records),
                malformed = malformed.saturating_sub(p.malformed),
                last_ms = p.last.as_secs_f64() * 1e3,
                longest_ms = p.longest.as_secs_f64() * 1e3,
                "progress"
            );
            *p = Progress {
                logged: Instant::now(),
                units: 0,
                rows: 0,
                records,
                malformed,
                last: Duration::ZERO,
                longest: Duration::ZERO,
            };
        }
    }

    /// Every partition actor has snapshotted at the barrier of `epoch`.
    fn on_epoch_acknowledged(&self, epoch: u64, state_len: usize, report: &mut CoordinatorReport) {
        report.epochs_acknowledged += 1;
        report.state_len = state_len;
        tracing::debug!(epoch, state_len, "barrier acknowledged by every partition actor");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_commit_takes_its_own_start_and_drops_the_earlier_ones() {
        let u = UnitStarts::default();
        u.started(0);
        u.started(1);
        std::thread::sleep(Duration::from_millis(5));
        u.started(2);
        let took = u.committed(1).expect("epoch 1 started");
        assert!(took >= Duration::from_millis(5), "{took:?}");
        assert_eq!(u.committed(0), None, "epoch 0 was dropped at the commit of 1");
        assert!(u.committed(2).is_some());
        assert_eq!(u.committed(3), None, "never started");
    }

    #[test]
    fn starts_are_bounded_when_nothing_commits() {
        let u = UnitStarts::default();
        for id in 0..(MAX_OPEN_UNITS as u64 + 10) {
            u.started(id);
        }
        assert_eq!(u.committed(5), None, "the oldest starts were dropped");
        assert!(u.committed(MAX_OPEN_UNITS as u64 + 9).is_some());
    }
}
