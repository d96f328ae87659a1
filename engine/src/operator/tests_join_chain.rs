//! A window aggregate chained after a stream-stream join: the edge between them holds the
//! watermark back by the join's range plus 1 ms (SEMANTICS.md "Joins": the watermark after a
//! join is delayed by the range; Spark's join output watermark, SPARK-42376), so joined rows are
//! never late for the aggregate, and its windows close that much later; the snapshot of the
//! chain restores split by the join key (another parallelism). Expected rows are written by
//! hand from those rules.

use std::sync::Arc;

use super::chain::{ChainLink, OperatorChain};
use super::{
    BatchContext, Mode, Operator, Output, OutputMode, StreamJoin, StreamJoinConfig, StreamJoinType, TimeRange,
    WindowAggregate, WindowAggregateConfig, WindowKind,
};
use crate::aggregate::{AggParams, AggregateFn};
use crate::steps::CompiledSteps;
use crate::time::{Duration, Timestamp};
use crate::value::{GroupKey, KeyValue, Record, Value};
use crate::watermark::BatchWatermarks;
use crate::window::SlidingWindows;

const S: i64 = 1_000_000;
const MS: i64 = 1_000;

/// `r.t BETWEEN l.t AND l.t + 10 seconds`.
const RANGE: TimeRange = TimeRange { lower: Duration(0), upper: Duration(10 * S) };

/// Stage 1: an inner join of records `[side, k, t, v]` on `k` within [`RANGE`]; its rows are
/// `[k, lt, lv, k, rt, rv]`. Stage 2: `count(*)` per `k` (column 0) per tumbling 10 s window of
/// the left time (column 1), append, behind an edge of `delay`.
fn chain(mode: Mode, delay: Duration) -> OperatorChain {
    let join = StreamJoin::new(StreamJoinConfig {
        mode,
        join_type: StreamJoinType::Inner,
        keys: [vec![1], vec![1]],
        columns: [1..4, 1..4],
        times: [2, 2],
        late_columns: [Some(2), Some(2)],
        side_column: Some(0),
        range: Some(RANGE),
    });
    let count = AggregateFn::from_name("count", None, &AggParams::default()).unwrap().named("n");
    let aggregate = WindowAggregate::new(WindowAggregateConfig {
        mode,
        key_columns: vec![0],
        window: WindowKind::Fixed { column: 1, windows: SlidingWindows::tumbling(Duration(10 * S), Duration(0)) },
        output_mode: OutputMode::Append,
        measures: vec![count],
        watermark: Some((1, Duration(0))),
    })
    .with_stamped_watermark();
    let link = ChainLink {
        steps: Arc::new(CompiledSteps::new(&[], 6, &[], Vec::new()).0),
        operator: Box::new(aggregate),
        // grouped by the left copy of the join key: a forward edge
        routing_positions: Some(vec![0]),
        exchange: false,
        row_names: (0..6).map(|i| format!("c{i}")).collect(),
        record_names: (0..6).map(|i| format!("c{i}")).collect(),
        watermark_delay: delay,
    };
    OperatorChain::new(mode, Box::new(join), vec![link])
}

fn rec(side: i32, k: &str, secs: i64) -> Record {
    Record::new(vec![Value::Int(side), Value::Str(k.into()), Value::Timestamp(Timestamp(secs * S)), Value::Long(secs)])
}

fn row(k: &str, start: i64, n: i64) -> Vec<Value> {
    vec![
        Value::Window { start: Timestamp(start * S), end: Timestamp((start + 10) * S) },
        Value::Str(k.into()),
        Value::Long(n),
    ]
}

fn batch(c: &mut OperatorChain, id: u64, late: Option<i64>, evict: Option<i64>, records: &[Record]) -> Output {
    let w = |s: Option<i64>| s.map_or(Timestamp::MIN, |s| Timestamp(s * S));
    let ctx = BatchContext {
        batch_id: id,
        watermarks: BatchWatermarks { late: w(late), evict: w(evict) },
        processing_time: Timestamp(0),
    };
    let mut out = Output::default();
    c.begin_batch(&ctx);
    for r in records {
        c.on_record(r, Timestamp::MIN, &mut out);
    }
    c.end_batch(&mut out);
    out
}

#[test]
fn the_join_forwards_its_watermark_held_back_by_the_range_plus_one_millisecond() {
    // Spark: min(W, W - upper - 1 ms for the left state, W + lower - 1 ms for the right)
    let delay = |lower: i64, upper: i64| {
        TimeRange { lower: Duration(lower), upper: Duration(upper) }.forwarded_watermark_delay()
    };
    assert_eq!(delay(0, 30 * S), Duration(30 * S + MS));
    assert_eq!(delay(-10 * S, 20 * S), Duration(20 * S + MS));
    assert_eq!(delay(-20 * S, 5 * S), Duration(20 * S + MS));
    // the right row at least 5 s after the left: bounded by the left state
    assert_eq!(delay(5 * S, 10 * S), Duration(10 * S + MS));
    // the right row 5 to 10 s before the left: the right state holds it back 10 s + 1 ms
    assert_eq!(delay(-10 * S, -5 * S), Duration(10 * S + MS));
    assert_eq!(delay(0, 0), Duration(MS));
    // an open side has no state watermark: `r.t >= l.t` alone holds W back by 1 ms only
    assert_eq!(delay(0, i64::MAX), Duration(MS));
    assert_eq!(delay(i64::MIN, 10 * S), Duration(10 * S + MS));
    assert_eq!(delay(i64::MIN, i64::MAX), Duration(0));
}

/// The three micro-batches after the first, as the test below runs them on `c`: a left and a
/// right row of key `a` meet in batch 1 (window [0, 10) of the left time 8 s), a second right
/// row meets the left one in batch 2, after the pipeline watermark passed the window's end.
fn rest(c: &mut OperatorChain) -> [Output; 3] {
    [
        batch(c, 1, None, Some(15), &[rec(1, "a", 12), rec(1, "b", 5)]),
        batch(c, 2, Some(15), Some(20), &[rec(1, "a", 16)]),
        batch(c, 3, Some(20), Some(21), &[]),
    ]
}

#[test]
fn micro_batch_joined_rows_are_not_late_for_the_aggregate_and_its_windows_close_behind_the_range() {
    let mut c = chain(Mode::MicroBatch, RANGE.forwarded_watermark_delay());
    let out = batch(&mut c, 0, None, None, &[rec(0, "a", 8), rec(0, "b", 3)]);
    assert!(out.rows.is_empty());
    let [one, two, three] = rest(&mut c);
    // W(1) = 15 s, forwarded 4.999 s: [0, 10) stays open
    assert!(one.rows.is_empty() && one.late.is_empty());
    // a@16 (right) is on time for the join (16 > 15) and meets a@8 (left, kept until W > 18);
    // its row's window [0, 10) ended before W(1) = 15 s but after 15 - 10.001 s: not late;
    // W(2) = 20 s, forwarded 9.999 s < 10: still open
    assert!(two.rows.is_empty() && two.late.is_empty());
    assert_eq!(c.dropped_between_stages().total(), 0);
    // W(3) = 21 s, forwarded 10.999 s: [0, 10) closes with both pairs of a and the pair of b
    let mut rows = three.rows;
    rows.sort_by_key(|r| format!("{r:?}"));
    assert_eq!(rows, vec![row("a", 0, 2), row("b", 0, 1)]);
    assert!(c.wants_no_data_batch(Timestamp(21 * S), Timestamp(22 * S)));
}

#[test]
fn without_the_delay_the_same_joined_row_would_be_late_for_the_aggregate() {
    // the contrast that makes the test above meaningful: an edge of no delay drops a@8 + a@16
    let mut c = chain(Mode::MicroBatch, Duration(0));
    batch(&mut c, 0, None, None, &[rec(0, "a", 8), rec(0, "b", 3)]);
    let [one, two, _] = rest(&mut c);
    let mut rows = one.rows;
    rows.sort_by_key(|r| format!("{r:?}"));
    assert_eq!(rows, vec![row("a", 0, 1), row("b", 0, 1)]);
    assert!(two.rows.is_empty());
    assert_eq!(c.dropped_between_stages().total(), 1);
}

#[test]
fn real_time_a_joined_row_behind_the_pipeline_watermark_still_counts() {
    let mut c = chain(Mode::RealTime, RANGE.forwarded_watermark_delay());
    let mut out = Output::default();
    let w = |s: i64| Timestamp(s * S);
    // each record with W as it stood when it arrived (several sources: the stamped watermark)
    c.on_record(&rec(0, "a", 8), Timestamp::MIN, &mut out);
    c.on_record(&rec(1, "b", 20), w(5), &mut out);
    c.advance_watermark(w(15), &mut out);
    // a@16 (right) meets a@8 at W = 15: window [0, 10) is behind W but not behind 15 - 10.001
    c.on_record(&rec(1, "a", 16), w(15), &mut out);
    assert!(out.rows.is_empty() && out.late.is_empty());
    c.advance_watermark(w(20), &mut out);
    assert!(out.rows.is_empty(), "forwarded 9.999 s: [0, 10) still open");
    c.advance_watermark(Timestamp(20 * S + MS), &mut out);
    assert_eq!(out.rows, vec![row("a", 0, 1)]);
    assert_eq!(c.dropped_between_stages().total(), 0);
}

#[test]
fn the_snapshot_of_a_join_and_its_aggregate_restores_split_by_the_join_key() {
    let whole = {
        let mut c = chain(Mode::MicroBatch, RANGE.forwarded_watermark_delay());
        batch(&mut c, 0, None, None, &[rec(0, "a", 8), rec(0, "b", 3)]);
        c.snapshot()
    };
    let key = |k: &str| GroupKey(vec![KeyValue(Value::Str(k.into()))].into());
    let mut rows = Vec::new();
    // two partition actors after a restart: one owns key a, the other key b
    for owned in ["a", "b"] {
        let mut c = chain(Mode::MicroBatch, RANGE.forwarded_watermark_delay());
        c.restore_keeping(&whole, &mut |k| *k == key(owned)).unwrap();
        // each actor is given the records of its own keys only, as the runtime routes them
        let mut outs = rest_of(&mut c, owned);
        rows.append(&mut outs);
    }
    rows.sort_by_key(|r| format!("{r:?}"));
    assert_eq!(rows, vec![row("a", 0, 2), row("b", 0, 1)]);
}

/// [`rest`] for the partition actor owning `key`: the same batches, its records only; the rows.
fn rest_of(c: &mut OperatorChain, key: &str) -> Vec<Vec<Value>> {
    let mine = |rs: &[Record]| rs.iter().filter(|r| r.values[1] == Value::Str(key.into())).cloned().collect::<Vec<_>>();
    let mut rows = Vec::new();
    rows.extend(batch(c, 1, None, Some(15), &mine(&[rec(1, "a", 12), rec(1, "b", 5)])).rows);
    rows.extend(batch(c, 2, Some(15), Some(20), &mine(&[rec(1, "a", 16)])).rows);
    rows.extend(batch(c, 3, Some(20), Some(21), &[]).rows);
    rows
}
