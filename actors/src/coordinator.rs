//! The coordinator: collects barrier acknowledgements and commits, tells the source when a
//! micro-batch is committed (the next one starts after it, as in Spark), and turns a failure into
//! a stop. Checkpoint commits will hang off the point where every partition actor has acknowledged an epoch.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use crossbeam_channel::{Receiver, Sender};

use crate::messages::{ToCoordinator, ToSource};

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
}

impl Coordinator {
    /// Runs until the sink is done.
    pub fn run(self) -> CoordinatorReport {
        let mut report = CoordinatorReport::default();
        let mut acks: BTreeMap<u64, (usize, usize)> = BTreeMap::new();
        while let Ok(msg) = self.input.recv() {
            match msg {
                ToCoordinator::BarrierAck { epoch, state_len, .. } => {
                    let e = acks.entry(epoch).or_default();
                    e.0 += 1;
                    e.1 += state_len;
                    if e.0 == self.partitions {
                        let (_, keys) = acks.remove(&epoch).unwrap_or_default();
                        self.on_epoch_acknowledged(epoch, keys, &mut report);
                    }
                }
                ToCoordinator::Committed { id, rows } => {
                    report.committed += 1;
                    report.rows += rows;
                    tracing::debug!(batch = id, rows, "committed");
                    // The source is gone once the input ended; nothing waits for this then.
                    let _ = self.source.send(ToSource::Committed(id));
                }
                ToCoordinator::Failed(why) => {
                    tracing::error!(%why, "pipeline failed");
                    if report.failure.is_none() {
                        report.failure = Some(why);
                    }
                    self.stop.store(true, Ordering::SeqCst);
                    // As above: the source may be gone already.
                    let _ = self.source.send(ToSource::Stop);
                }
                ToCoordinator::SinkDone => break,
            }
        }
        report
    }

    /// Every partition actor has snapshotted at the barrier of `epoch`.
    fn on_epoch_acknowledged(&self, epoch: u64, state_len: usize, report: &mut CoordinatorReport) {
        report.epochs_acknowledged += 1;
        report.state_len = state_len;
        tracing::debug!(epoch, state_len, "barrier acknowledged by every partition actor");
    }
}
