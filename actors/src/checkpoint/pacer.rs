//! [`SnapshotPacer`]: drives an operator's incremental snapshot
//! ([`Operator::begin_snapshot`] / [`Operator::snapshot_step`]) on the partition actor's thread,
//! in steps short enough that a record arriving meanwhile waits at most one step.
//!
//! Pacing: a step works for about [`STEP`] (checking the time every [`KEYS_PER_CALL`] keys);
//! the next step may run once as much time has passed since the step ended as the step took.
//! So the snapshot takes at most half of the actor's time, busy or idle: records queued meanwhile
//! drain between steps, and the thread never runs flat out, which on a shared machine would get
//! it preempted for whole scheduler slices (milliseconds) while records wait. The actor waits for
//! its input until [`SnapshotPacer::next_step_at`] between steps. The time read here is the
//! machine's monotonic clock, for sharing the thread only; it never reaches the operators.

use std::time::{Duration, Instant};

use eddy_engine::operator::Operator;

/// The work of one step (wall time).
pub const STEP: Duration = Duration::from_micros(150);

/// Keys per [`Operator::snapshot_step`] call, between two looks at the time (a key of the
/// rolling window takes well under a microsecond to write).
pub const KEYS_PER_CALL: usize = 64;

/// A snapshot whose bytes are complete, ready for the [`super::SnapshotWriter`].
#[derive(Debug)]
pub struct Finished {
    /// The epoch (real-time) or micro-batch of its barrier.
    pub epoch: u64,
    /// The operator state.
    pub state: Vec<u8>,
    /// Keys held at the barrier.
    pub state_len: usize,
}

/// The snapshot in progress, if any, and when the next step may run (see the module
/// documentation).
#[derive(Debug, Default)]
pub struct SnapshotPacer {
    /// Epoch and keys at the barrier of the snapshot in progress.
    current: Option<(u64, usize)>,
    /// While the input is busy, no step before this instant.
    next_step: Option<Instant>,
}

impl SnapshotPacer {
    /// No snapshot in progress.
    pub fn new() -> SnapshotPacer {
        SnapshotPacer::default()
    }

    /// Whether a snapshot is in progress.
    pub fn in_progress(&self) -> bool {
        self.current.is_some()
    }

    /// At the barrier of `epoch`: finishes the snapshot still in progress at once (it comes
    /// first in the result), then begins this one; returns the snapshots complete now, in epoch
    /// order (none, one or two; an operator without incremental snapshots completes at once).
    pub fn begin(&mut self, op: &mut dyn Operator, epoch: u64) -> Vec<Finished> {
        let mut done: Vec<Finished> = self.finish(op).into_iter().collect();
        let state_len = op.state_len();
        match op.begin_snapshot() {
            Some(state) => done.push(Finished { epoch, state, state_len }),
            None => {
                self.current = Some((epoch, state_len));
                self.next_step = None;
            }
        }
        done
    }

    /// When the next step may run (`None`: at once, or nothing in progress).
    pub fn next_step_at(&self) -> Option<Instant> {
        self.next_step.filter(|_| self.current.is_some())
    }

    /// Between messages: runs a step when one is due ([`SnapshotPacer::next_step_at`]); returns
    /// the snapshot once complete.
    pub fn poll(&mut self, op: &mut dyn Operator) -> Option<Finished> {
        self.current?;
        let started = Instant::now();
        if self.next_step.is_some_and(|at| started < at) {
            return None;
        }
        loop {
            if let Some(state) = op.snapshot_step(KEYS_PER_CALL) {
                return self.done(state);
            }
            let took = started.elapsed();
            if took >= STEP {
                self.next_step = Some(Instant::now() + took);
                return None;
            }
        }
    }

    /// Completes the snapshot in progress at once (the next barrier came first, or the input
    /// ended); `None` when none is in progress.
    pub fn finish(&mut self, op: &mut dyn Operator) -> Option<Finished> {
        self.current?;
        match op.finish_snapshot() {
            Some(state) => self.done(state),
            None => {
                // A bug: only this pacer drives the operator's snapshots. There are no bytes to
                // hand over, so this epoch never commits (nothing wrong is written).
                tracing::error!(epoch = ?self.current, "the operator lost its snapshot in progress");
                self.current = None;
                None
            }
        }
    }

    fn done(&mut self, state: Vec<u8>) -> Option<Finished> {
        let (epoch, state_len) = self.current.take()?;
        self.next_step = None;
        Some(Finished { epoch, state, state_len })
    }
}
