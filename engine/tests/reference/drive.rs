//! Drives an operator through the engine's own drivers ([`MicroBatchRunner`],
//! [`RealTimeRunner`]), optionally restarting it from a checkpoint in the middle: before input
//! step `restart`, the operator is snapshotted, a fresh one is restored from the bytes and the
//! run goes on with it (the driver's own state is carried over by a shadow sequencer / clock fed
//! the same calls). SEMANTICS.md "Determinism and restarts": the output must be the one of the
//! uninterrupted run, which the references give.

use std::hash::{DefaultHasher, Hash, Hasher};

use eddy_engine::driver::{MicroBatchRunner, MicroBatchSequencer, RealTimeClock, RealTimeRunner};
use eddy_engine::operator::{Operator, Output};
use eddy_engine::{Record, Timestamp, Value};

/// Makes a fresh operator of the query under test.
pub type MakeOp<'a> = &'a dyn Fn() -> Box<dyn Operator>;

/// Restores `old`'s snapshot through a re-split, as a restart with another `parallelism` does:
/// two fresh operators each restore the snapshot and keep half of the groups (by a hash of the
/// group), then a third restores both halves' snapshots. Its state must be `old`'s, so every
/// restart in these tests also checks [`Operator::retain_groups`] and additive restores.
fn restored(make: MakeOp<'_>, old: &dyn Operator) -> Box<dyn Operator> {
    let bytes = old.snapshot();
    let half = |parity: u64| {
        let mut op = make();
        op.restore(&bytes).expect("a snapshot restores into a fresh operator of the same query");
        op.retain_groups(&mut |g| {
            let mut h = DefaultHasher::new();
            g.hash(&mut h);
            h.finish() % 2 == parity
        });
        (op.snapshot(), op.state_len())
    };
    let ((even, even_len), (odd, odd_len)) = (half(0), half(1));
    assert_eq!(even_len + odd_len, old.state_len(), "the halves split the groups");
    let mut op = make();
    op.restore(&even).expect("the even half restores");
    op.restore(&odd).expect("the odd half restores beside the even half");
    assert_eq!(op.state_len(), old.state_len(), "the two halves hold every group once");
    op
}

/// Micro-batch: runs `batches` (records, system time), then the idle batch (`until`, as
/// [`MicroBatchRunner::idle_batch`]); returns `(batch id, rows)` of every batch that ran.
/// `restart` (0 < restart < batches.len()) restarts before that batch.
pub fn micro_batch(
    make: MakeOp<'_>,
    seq: MicroBatchSequencer,
    batches: &[(Vec<Record>, Timestamp)],
    until: Option<Timestamp>,
    restart: Option<usize>,
) -> Vec<(u64, Vec<Vec<Value>>)> {
    let mut shadow = seq.clone();
    let mut runner = MicroBatchRunner::new(make(), seq);
    let mut out = Vec::new();
    for (i, (records, now)) in batches.iter().enumerate() {
        if restart == Some(i) && i > 0 {
            runner = MicroBatchRunner::new(restored(make, runner.operator()), shadow.clone());
        }
        shadow.begin(records, *now);
        shadow.observe(records);
        shadow.end();
        let b = runner.run_batch(records.clone(), *now);
        out.push((b.batch_id, b.output.rows));
    }
    let now = until.unwrap_or_else(|| batches.last().map_or(Timestamp(0), |b| b.1));
    if let Some(b) = runner.idle_batch(until, now) {
        out.push((b.batch_id, b.output.rows));
    }
    out
}

/// Real-time: processes `records` (record, system time) one by one, then advances the clock to
/// `until`; returns the rows of each record's step and of the final advance (empty without
/// `until`). `restart` (0 < restart < records.len()) restarts before that record.
pub fn real_time(
    make: MakeOp<'_>,
    clock: RealTimeClock,
    records: &[(Record, Timestamp)],
    until: Option<Timestamp>,
    restart: Option<usize>,
) -> Vec<Vec<Vec<Value>>> {
    let mut shadow = clock.clone();
    let mut runner = RealTimeRunner::new(make(), clock);
    let mut steps = Vec::new();
    for (i, (r, now)) in records.iter().enumerate() {
        if restart == Some(i) && i > 0 {
            runner = RealTimeRunner::new(restored(make, runner.operator()), shadow.clone());
        }
        shadow.stamp(r, *now);
        let mut out = Output::default();
        runner.on_record(r.clone(), *now, &mut out);
        steps.push(out.rows);
    }
    let mut out = Output::default();
    if let Some(u) = until {
        runner.advance_clock(u, &mut out);
    }
    steps.push(out.rows);
    steps
}
