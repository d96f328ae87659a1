//! [`SnapshotWriter`]: stores a partition actor's snapshots on a thread of its own, so the actor
//! goes back to its records as soon as its operator state is serialised; the writer acknowledges
//! the barrier to the coordinator once the snapshot is durable.
//!
//! **Priority.** The writer runs at nice [`WRITER_NICE`] (this thread only: on Linux the nice
//! value belongs to the thread). Hashing and copying tens of megabytes into the page cache takes
//! tens of milliseconds of CPU per checkpoint; at the actor's priority, on a machine with as many
//! busy threads as cores, the scheduler would share a core between the writer and the partition
//! actor (or the source), and records would wait for the writer's time slice. At a lower
//! priority the actor preempts the writer as soon as a record arrives, and the writer uses the
//! time the actors leave idle; the checkpoint is durable a little later, which costs nothing
//! but the epoch's commit latency. Where the priority cannot be lowered (not Linux, or refused),
//! the writer runs at the actor's priority, with a warning.
//!
//! **Buffers.** Each stored snapshot's buffer goes back to the actor
//! ([`SnapshotWriter::spare_buffer`]) and the next snapshot is written into it: the pages of a
//! fresh buffer of tens of megabytes would be faulted in on the actor's thread, between records
//! (the allocator returns large freed blocks to the system). Measured with `eddy-bench
//! checkpoint`: records' p99 2.5-3.3 ms without reuse, 0.22-0.83 ms with it.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::thread::JoinHandle;

use crossbeam_channel::{Receiver, Sender, bounded};

use super::Checkpointer;
use crate::messages::ToCoordinator;

/// Snapshots waiting to be written per partition actor before the actor blocks (back-pressure
/// from a slow store).
const QUEUE: usize = 2;

/// The writer thread's nice value (0 is the default; 19 the lowest priority). 10 gives the
/// writer about a tenth of a core it shares with a busy thread of nice 0 (CFS weights 110 and
/// 1024), so under full load the checkpoint still completes within seconds, and a woken actor
/// preempts it at once.
pub const WRITER_NICE: i32 = 10;

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
    cpu_ns: Arc<AtomicU64>,
    /// Buffers of stored snapshots, handed back for the next one.
    spare: Receiver<Vec<u8>>,
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
        let (spare_tx, spare) = bounded::<Vec<u8>>(1);
        let cpu_ns = Arc::new(AtomicU64::new(0));
        let cpu = Arc::clone(&cpu_ns);
        let handle = std::thread::Builder::new().name(format!("eddy-snapshot-{partition}")).spawn(move || {
            if let Err(e) = lower_priority(WRITER_NICE) {
                tracing::warn!(partition, error = %e, "the snapshot writer runs at the actor's priority");
            }
            for job in rx {
                let msg = match checkpointer.write_snapshot(job.epoch, partition as u32, parallelism as u32, &job.state)
                {
                    Ok(meta) => ToCoordinator::BarrierAck {
                        epoch: job.epoch,
                        partition,
                        state_len: job.state_len,
                        snapshot: Some(meta),
                    },
                    Err(e) => ToCoordinator::Failed(format!("checkpoint of epoch {}: {e}", job.epoch)),
                };
                // Back to the actor for its next snapshot; dropped when one is already waiting.
                let _ = spare_tx.try_send(job.state);
                cpu.store(thread_cpu_ns(), Ordering::Relaxed);
                if coordinator.send(msg).is_err() {
                    return;
                }
            }
        })?;
        Ok(SnapshotWriter { tx: Some(tx), handle: Some(handle), cpu_ns, spare })
    }

    /// Hands over the state serialised at the barrier of `epoch` (`state_len` keys); blocks while
    /// `QUEUE` snapshots are already waiting. `false` when the writer is gone.
    pub fn submit(&self, epoch: u64, state: Vec<u8>, state_len: usize) -> bool {
        self.tx.as_ref().is_some_and(|tx| tx.send(Job { epoch, state, state_len }).is_ok())
    }

    /// The buffer of a snapshot already stored, if one is back: give it to
    /// [`eddy_engine::operator::Operator::reuse_snapshot_buffer`] before the next snapshot.
    pub fn spare_buffer(&self) -> Option<Vec<u8>> {
        self.spare.try_recv().ok()
    }

    /// CPU time (ns, user and system) the writer thread had used when it last acknowledged a
    /// snapshot (0 before the first).
    pub fn cpu_ns(&self) -> u64 {
        self.cpu_ns.load(Ordering::Relaxed)
    }
}

/// Lowers the calling thread's priority to nice `nice` (Linux: `setpriority(PRIO_PROCESS, tid)`
/// acts on one thread). Raising the nice value needs no privilege.
fn lower_priority(nice: i32) -> std::io::Result<()> {
    #[cfg(target_os = "linux")]
    {
        rustix::process::setpriority_process(Some(rustix::thread::gettid()), nice).map_err(std::io::Error::from)
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = nice;
        Err(std::io::Error::new(std::io::ErrorKind::Unsupported, "per-thread priority is Linux-only here"))
    }
}

/// The calling thread's CPU time so far (ns, user and system).
pub fn thread_cpu_ns() -> u64 {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::ThreadCPUTime);
    t.tv_sec as u64 * 1_000_000_000 + t.tv_nsec as u64
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

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    fn nice_of_this_thread() -> i32 {
        rustix::process::getpriority_process(Some(rustix::thread::gettid())).unwrap()
    }

    #[test]
    fn lowering_the_priority_affects_the_calling_thread_only() {
        let before = nice_of_this_thread();
        let inside = std::thread::spawn(|| {
            lower_priority(WRITER_NICE.max(nice_of_this_thread())).unwrap();
            nice_of_this_thread()
        })
        .join()
        .unwrap();
        assert_eq!(inside, WRITER_NICE.max(before));
        assert_eq!(nice_of_this_thread(), before, "the spawning thread kept its priority");
    }

    #[test]
    fn thread_cpu_time_grows_with_work() {
        let a = thread_cpu_ns();
        let mut x = 0u64;
        for i in 0..5_000_000u64 {
            x = x.wrapping_mul(31).wrapping_add(i);
        }
        std::hint::black_box(x);
        assert!(thread_cpu_ns() > a);
    }
}
