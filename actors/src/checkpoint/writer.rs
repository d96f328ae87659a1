//! [`SnapshotWriter`]: stores a partition actor's snapshots on a thread of its own, so the actor
//! goes back to its records as soon as its operator state is serialised; the writer acknowledges
//! the barrier to the coordinator once the snapshot is durable.

use std::thread::JoinHandle;

use crossbeam_channel::{Sender, bounded};

use super::Checkpointer;
use crate::messages::ToCoordinator;

/// Snapshots waiting to be written per partition actor before the actor blocks (back-pressure
/// from a slow store).
const QUEUE: usize = 2;

/// One snapshot to store.
#[derive(Debug)]
struct Job {
    epoch: u64,
    state: Vec<u8>,
    state_len: usize,
}

/// A partition actor's snapshot writer thread (see the module documentation). Dropping it waits
/// for the snapshots already submitted.
#[derive(Debug)]
pub struct SnapshotWriter {
    tx: Option<Sender<Job>>,
    handle: Option<JoinHandle<()>>,
}

impl SnapshotWriter {
    /// Starts the writer of partition actor `partition` (of `parallelism`): each snapshot is
    /// stored by `checkpointer`, then acknowledged to `coordinator` as a
    /// [`ToCoordinator::BarrierAck`] listing it, or reported as [`ToCoordinator::Failed`].
    ///
    /// # Errors
    /// When the thread cannot be started.
    pub fn start(
        checkpointer: Checkpointer,
        partition: usize,
        parallelism: usize,
        coordinator: Sender<ToCoordinator>,
    ) -> std::io::Result<SnapshotWriter> {
        let (tx, rx) = bounded::<Job>(QUEUE);
        let handle = std::thread::Builder::new().name(format!("eddy-snapshot-{partition}")).spawn(move || {
            for job in rx {
                let msg = match checkpointer.write_snapshot(job.epoch, partition as u32, parallelism as u32, job.state)
                {
                    Ok(meta) => ToCoordinator::BarrierAck {
                        epoch: job.epoch,
                        partition,
                        state_len: job.state_len,
                        snapshot: Some(meta),
                    },
                    Err(e) => ToCoordinator::Failed(format!("checkpoint of epoch {}: {e}", job.epoch)),
                };
                if coordinator.send(msg).is_err() {
                    return;
                }
            }
        })?;
        Ok(SnapshotWriter { tx: Some(tx), handle: Some(handle) })
    }

    /// Hands over the state serialised at the barrier of `epoch` (`state_len` keys); blocks while
    /// `QUEUE` snapshots are already waiting. `false` when the writer is gone.
    pub fn submit(&self, epoch: u64, state: Vec<u8>, state_len: usize) -> bool {
        self.tx.as_ref().is_some_and(|tx| tx.send(Job { epoch, state, state_len }).is_ok())
    }
}

impl Drop for SnapshotWriter {
    fn drop(&mut self) {
        self.tx.take();
        if let Some(h) = self.handle.take() {
            // A panicked writer has nothing left to report; its epochs never commit.
            let _ = h.join();
        }
    }
}
