//! An incremental snapshot (real-time and micro-batch), taken while records, clock moves (visibility, expiry, keys freed) and
//! new keys keep arriving between its steps, restores to the state at its barrier: checked
//! against an operator that simply stopped at the barrier (it never snapshotted) and against
//! the restore of a one-shot snapshot taken at the barrier, by the rows all three produce on the
//! same further input.

use proptest::prelude::*;

use crate::aggregate::{AggKind, AggregateFn};
use crate::operator::{BatchContext, Mode, Operator, Output, RollingMeasure, RollingWindow, RollingWindowConfig};
use crate::schema::DataType;
use crate::time::{Duration, Timestamp};
use crate::value::{Record, Row, Value};
use crate::watermark::BatchWatermarks;

const S: i64 = 1_000_000;

/// What happens to the operator: a record of key `key` with event time `now + dt` seconds; the
/// clock moving by `0` seconds; a snapshot step of `0` slots.
#[derive(Clone, Debug)]
enum Op {
    Rec { key: u8, dt: i64, v: i64 },
    Clock(i64),
    Step(usize),
}

fn cfg(lifetime: bool, delay_s: i64) -> RollingWindowConfig {
    cfg_in(Mode::RealTime, lifetime, delay_s)
}

fn cfg_in(mode: Mode, lifetime: bool, delay_s: i64) -> RollingWindowConfig {
    let f = |kind, input: Option<usize>| AggregateFn { kind, input, input_type: DataType::Long, name: String::new() };
    let mut measures = vec![
        RollingMeasure { func: f(AggKind::Sum, Some(2)), over: Some(Duration(5 * S)) },
        RollingMeasure { func: f(AggKind::Max, Some(2)), over: Some(Duration(3 * S)) },
        RollingMeasure { func: f(AggKind::CountStar, None), over: Some(Duration(4 * S)) },
    ];
    if lifetime {
        measures.push(RollingMeasure { func: f(AggKind::CountStar, None), over: None });
    }
    RollingWindowConfig {
        mode,
        key_columns: vec![0],
        order_by: 1,
        frontier_delay: Duration(delay_s * S),
        measures,
        watermark: None,
        compact: true,
    }
}

fn rec(key: u8, t_us: i64, v: i64) -> Record {
    Record::new(vec![Value::Str(format!("k{key}").into()), Value::Timestamp(Timestamp(t_us)), Value::Long(v)])
}

/// Applies `o` at clock `now` (µs); returns the snapshot's bytes when a step completed it.
/// Micro-batch: a clock move runs a batch at the new processing time (records taken since the
/// last one are its input).
fn apply(op: &mut RollingWindow, now: &mut i64, o: &Op, out: &mut Output) -> Option<Vec<u8>> {
    let micro_batch = op.cfg.mode == Mode::MicroBatch;
    match *o {
        Op::Rec { key, dt, v } => {
            if !micro_batch {
                op.advance_clock(Timestamp(*now), out);
            }
            op.on_record(&rec(key, *now + dt * S, v), Timestamp::MIN, out);
            None
        }
        Op::Clock(d) if micro_batch => {
            *now += d * S;
            op.begin_batch(&BatchContext {
                batch_id: 0,
                watermarks: BatchWatermarks::INITIAL,
                processing_time: Timestamp(*now),
            });
            op.end_batch(out);
            None
        }
        Op::Clock(d) => {
            *now += d * S;
            op.advance_clock(Timestamp(*now), out);
            None
        }
        Op::Step(n) => op.snapshot_step(n),
    }
}

/// Rows in a canonical order: keys restored into other slots may fire their timers of one
/// instant in another order; each key's own rows keep theirs (one row per key and instant).
fn canonical(rows: Vec<Row>) -> Vec<String> {
    let mut v: Vec<String> = rows.iter().map(|r| format!("{r:?}")).collect();
    v.sort();
    v
}

/// Runs `ops` on `op` from clock `now`; returns the rows.
fn run(op: &mut RollingWindow, mut now: i64, ops: &[Op]) -> Vec<Row> {
    let mut out = Output::default();
    for o in ops {
        apply(op, &mut now, o, &mut out);
    }
    out.rows
}

/// Checks one scenario: `before` up to the barrier, `during` while the snapshot is written (with
/// its steps), then `after` on the restored operators; the clock finally runs far ahead so that
/// every pending record and range plays out.
fn check(config: RollingWindowConfig, before: &[Op], during: &[Op], after: &[Op]) -> Result<(), TestCaseError> {
    let mut live = RollingWindow::new(config.clone());
    let mut at_barrier = RollingWindow::new(config.clone());
    run(&mut live, 0, before);
    run(&mut at_barrier, 0, before);
    let barrier_now: i64 = before.iter().map(|o| if let Op::Clock(d) = o { d * S } else { 0 }).sum();
    let barrier_keys = live.state_len();
    let one_shot = live.snapshot();
    prop_assert!(live.begin_snapshot().is_none(), "the rolling window snapshots incrementally");
    prop_assert!(live.snapshot_in_progress());

    // An operator that never snapshots gets the same input: the live one must emit the same.
    let mut untouched = RollingWindow::new(config.clone());
    run(&mut untouched, 0, before);
    let untouched_rows = run(&mut untouched, barrier_now, during);
    let mut incremental = None;
    let (mut now, mut out) = (barrier_now, Output::default());
    for o in during {
        if let Some(b) = apply(&mut live, &mut now, o, &mut out) {
            prop_assert!(incremental.is_none(), "bytes returned twice");
            incremental = Some(b);
        }
    }
    prop_assert_eq!(canonical(out.rows), canonical(untouched_rows), "writing the snapshot changed the rows");
    let incremental = match incremental {
        Some(b) => b,
        None => live.finish_snapshot().ok_or_else(|| TestCaseError::fail("no snapshot in progress"))?,
    };
    prop_assert!(!live.snapshot_in_progress());

    let mut tail = after.to_vec();
    tail.push(Op::Clock(1000));
    let expected = canonical(run(&mut at_barrier, barrier_now, &tail));
    for (what, bytes) in [("incremental", &incremental), ("one-shot", &one_shot)] {
        let mut restored = RollingWindow::new(config.clone());
        restored.restore(bytes).map_err(|e| TestCaseError::fail(format!("{what}: {e}")))?;
        prop_assert_eq!(restored.state_len(), barrier_keys, "{} snapshot: keys", what);
        let got = canonical(run(&mut restored, barrier_now, &tail));
        prop_assert_eq!(&got, &expected, "{} snapshot: rows", what);
    }
    Ok(())
}

#[test]
fn incremental_snapshot_is_the_state_at_the_barrier() {
    use Op::*;
    // Keys k0..k5 at the barrier, in slots 0..5 (bounded measures only, so keys free themselves
    // once their ranges empty).
    let before: Vec<Op> = (0..6).map(|k| Rec { key: k, dt: -(k as i64 % 3), v: 10 + k as i64 }).collect();
    let during = vec![
        Step(2),                       // k0, k1 written by the walk
        Rec { key: 0, dt: 0, v: 100 }, // an already written key changes
        Rec { key: 4, dt: 0, v: 200 }, // a key not yet written changes: written first
        Rec { key: 9, dt: 0, v: 300 }, // a new key: not in the snapshot
        Clock(4),                      // ranges of 3 and 4 s expire
        Clock(3),                      // every range of the barrier's records is empty: keys freed
        Rec { key: 7, dt: 0, v: 5 },   // a new key, in a freed slot
        Step(1),
        Rec { key: 3, dt: -1, v: 1 },
        Step(100),
    ];
    let after = vec![Rec { key: 2, dt: 0, v: 7 }, Clock(1), Rec { key: 9, dt: -2, v: 8 }, Clock(2)];
    check(cfg(false, 0), &before, &during, &after).expect("bounded measures only");
    check(cfg(true, 1), &before, &during, &after).expect("with a lifetime measure and a frontier delay");
    check(cfg_in(Mode::MicroBatch, false, 1), &before, &during, &after).expect("micro-batch");
}

#[test]
fn a_new_snapshot_abandons_the_one_in_progress_and_holds_every_key() {
    let mut op = RollingWindow::new(cfg(true, 0));
    let mut now = 0;
    let mut out = Output::default();
    for k in 0..10 {
        apply(&mut op, &mut now, &Op::Rec { key: k, dt: 0, v: 1 }, &mut out);
    }
    assert!(op.begin_snapshot().is_none());
    assert!(op.snapshot_step(3).is_none());
    apply(&mut op, &mut now, &Op::Rec { key: 8, dt: 0, v: 2 }, &mut out);
    assert!(op.begin_snapshot().is_none());
    let bytes = op.finish_snapshot().expect("in progress");
    let mut restored = RollingWindow::new(cfg(true, 0));
    restored.restore(&bytes).expect("readable");
    assert_eq!(restored.state_len(), 10);
    assert_eq!(op.finish_snapshot(), None, "nothing in progress any more");
}

fn arb_op(keys: u8) -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (0..keys, -6i64..3, -5i64..20).prop_map(|(key, dt, v)| Op::Rec { key, dt, v }),
        1 => (0i64..4).prop_map(Op::Clock),
    ]
}

fn arb_during(keys: u8) -> impl Strategy<Value = Vec<Op>> {
    prop::collection::vec(prop_oneof![3 => arb_op(keys), 2 => (1usize..4).prop_map(Op::Step)], 0..40)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]
    #[test]
    fn incremental_snapshot_restores_the_barrier_state_under_any_interleaving(
        micro_batch in any::<bool>(),
        lifetime in any::<bool>(),
        delay in 0i64..3,
        before in prop::collection::vec(arb_op(12), 0..40),
        during in arb_during(16),
        after in prop::collection::vec(arb_op(16), 0..20),
    ) {
        let mode = if micro_batch { Mode::MicroBatch } else { Mode::RealTime };
        check(cfg_in(mode, lifetime, delay), &before, &during, &after)?;
    }
}

#[test]
fn a_snapshot_written_into_a_reused_buffer_has_the_same_bytes() {
    let mut op = RollingWindow::new(cfg(true, 0));
    let mut now = 0;
    let mut out = Output::default();
    for k in 0..20 {
        apply(&mut op, &mut now, &Op::Rec { key: k, dt: -(k as i64 % 4), v: k as i64 }, &mut out);
    }
    assert!(op.begin_snapshot().is_none());
    let fresh = op.finish_snapshot().expect("in progress");
    // A buffer full of other bytes, larger and smaller than the snapshot.
    for len in [fresh.len() * 3, 5] {
        let stale = vec![0xA5u8; len];
        let reused_at = stale.as_ptr();
        op.reuse_snapshot_buffer(stale);
        assert!(op.begin_snapshot().is_none());
        let again = op.finish_snapshot().expect("in progress");
        assert_eq!(again, fresh, "buffer of {len} bytes");
        if len > fresh.len() {
            assert_eq!(again.as_ptr(), reused_at, "the larger buffer is written into, not replaced");
        }
    }
}
