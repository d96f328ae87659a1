//! The operator chain: rows of one stage are records of the next, in the same batch; in
//! real-time a watermark reaches a stage only after the rows it finalised upstream; snapshots
//! hold every stage. Expected rows are written by hand from SEMANTICS.md "Several stateful
//! operators (chained)".

use std::sync::Arc;

use super::chain::{ChainLink, OperatorChain};
use super::{BatchContext, Mode, Operator, Output, OutputMode, WindowAggregate, WindowAggregateConfig, WindowKind};
use crate::aggregate::{AggParams, AggregateFn};
use crate::schema::DataType;
use crate::steps::CompiledSteps;
use crate::time::{Duration, Timestamp};
use crate::value::{GroupKey, KeyValue, Record, Row, Value};
use crate::watermark::BatchWatermarks;
use crate::window::SlidingWindows;

const S: i64 = 1_000_000;

/// Stage 1: count per key `k` (column 0) per tumbling 10 s window of `ts` (column 1), append;
/// rows `[window, k, n]`. Stage 2: `sum(n)` per `window` (its column 0), append.
fn chain(mode: Mode, tracked: bool) -> OperatorChain {
    let count = AggregateFn::from_name("count", None, &AggParams::default()).unwrap().named("n");
    let first = WindowAggregate::new(WindowAggregateConfig {
        mode,
        key_columns: vec![0],
        window: WindowKind::Fixed { column: 1, windows: SlidingWindows::tumbling(Duration(10 * S), Duration(0)) },
        output_mode: OutputMode::Append,
        measures: vec![count],
        watermark: Some((1, Duration(0))),
    });
    let sum = AggregateFn::from_name("sum", Some((2, DataType::Long)), &AggParams::default()).unwrap().named("total");
    let second = WindowAggregate::new(WindowAggregateConfig {
        mode,
        key_columns: vec![0],
        window: WindowKind::None,
        output_mode: OutputMode::Append,
        measures: vec![sum],
        watermark: Some((0, Duration(0))),
    })
    .with_stamped_watermark();
    let steps = Arc::new(CompiledSteps::new(&[], 3, &[], Vec::new()).0);
    // keyed by the window alone: an exchange edge, its groups routed by their own key
    let link = ChainLink {
        steps,
        operator: Box::new(second),
        routing_positions: Some(vec![0]),
        exchange: true,
        row_names: names(&["window", "k", "n"]),
        record_names: names(&["window", "k", "n"]),
        watermark_delay: Duration(0),
    };
    let first: Box<dyn Operator> = match mode {
        Mode::RealTime if tracked => Box::new(first.with_stamped_watermark()),
        _ => Box::new(first),
    };
    let c = OperatorChain::new(mode, first, vec![link]);
    if tracked { c.with_tracker(1, Duration(0)) } else { c }
}

/// Column names of a link's rows (for its dead letters).
fn names(n: &[&str]) -> Arc<[String]> {
    n.iter().map(|s| s.to_string()).collect()
}

fn rec(k: &str, secs: i64) -> Record {
    Record::new(vec![Value::Str(k.into()), Value::Timestamp(Timestamp(secs * S))])
}

fn window(start: i64, end: i64) -> Value {
    Value::Window { start: Timestamp(start * S), end: Timestamp(end * S) }
}

fn batch(c: &mut OperatorChain, id: u64, late: i64, evict: i64, records: &[Record]) -> Output {
    let w = |s: i64| if s == i64::MIN { Timestamp::MIN } else { Timestamp(s * S) };
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
fn micro_batch_rows_a_stage_finalises_reach_the_next_stage_in_the_same_batch_and_are_not_late() {
    let mut c = chain(Mode::MicroBatch, false);
    let out = batch(&mut c, 0, i64::MIN, i64::MIN, &[rec("a", 1), rec("a", 2), rec("b", 3), rec("a", 12)]);
    assert!(out.rows.is_empty());
    // W(0) = 12 s: stage 1 finalises [0, 10) (a: 2, b: 1); stage 2 sums it and, its end below
    // the eviction watermark, emits it in this batch
    let out = batch(&mut c, 1, i64::MIN, 12, &[rec("c", 15)]);
    assert_eq!(out.rows, vec![vec![window(0, 10), Value::Long(3)]]);
    // a@5 is late for stage 1 (its window ended at 10 <= W(1) = 12 s): the query's input, kept
    let out = batch(&mut c, 2, 12, 15, &[rec("a", 5), rec("d", 30)]);
    assert!(out.rows.is_empty());
    assert_eq!(out.late, vec![rec("a", 5)]);
    let out = batch(&mut c, 3, 15, 30, &[]);
    assert_eq!(out.rows, vec![vec![window(10, 20), Value::Long(2)]]);
    assert_eq!(c.dropped_between_stages().total(), 0);
    assert!(c.wants_no_data_batch(Timestamp(30 * S), Timestamp(31 * S)));
}

#[test]
fn real_time_a_watermark_reaches_the_next_stage_only_after_the_rows_it_finalised() {
    let mut c = chain(Mode::RealTime, true);
    let mut out = Output::default();
    for r in [rec("a", 1), rec("b", 3), rec("a", 4)] {
        c.on_record(&r, Timestamp::MIN, &mut out);
    }
    assert!(out.rows.is_empty());
    // a@12 moves W to 12 s: [0, 10) is finalised upstream, summed downstream (not late there,
    // although its end is below 12 s), then finalised downstream by the forwarded 12 s
    c.on_record(&rec("a", 12), Timestamp::MIN, &mut out);
    assert_eq!(out.rows, vec![vec![window(0, 10), Value::Long(3)]]);
    assert!(out.late.is_empty());
    assert_eq!(c.dropped_between_stages().total(), 0);
    // a watermark given from outside (several sources) goes down the chain the same way
    out.clear();
    c.advance_watermark(Timestamp(25 * S), &mut out);
    assert_eq!(out.rows, vec![vec![window(10, 20), Value::Long(1)]]);
    // a record late upstream stays the query's late input
    out.clear();
    c.on_record(&rec("z", 8), Timestamp::MIN, &mut out);
    assert_eq!(out.late, vec![rec("z", 8)]);
    assert!(out.rows.is_empty());
}

fn rows_of(c: &mut OperatorChain, records: &[Record]) -> Vec<Row> {
    let mut out = Output::default();
    for r in records {
        c.on_record(r, Timestamp::MIN, &mut out);
    }
    out.rows
}

#[test]
fn a_restored_chain_continues_as_the_uninterrupted_one_in_every_stage() {
    let mut c = chain(Mode::RealTime, true);
    // stage 1 holds [10, 20) for a and b; stage 2 holds nothing yet
    rows_of(&mut c, &[rec("a", 1), rec("a", 11), rec("b", 13)]);
    let bytes = c.snapshot();
    let mut restored = chain(Mode::RealTime, true);
    restored.restore(&bytes).unwrap();
    let rest = [rec("c", 14), rec("a", 31)];
    let expected = vec![vec![window(10, 20), Value::Long(3)]];
    assert_eq!(rows_of(&mut c, &rest), expected);
    assert_eq!(rows_of(&mut restored, &rest), expected);
    // late in the restored one too: the watermark came back with the state
    let mut out = Output::default();
    restored.on_record(&rec("q", 2), Timestamp::MIN, &mut out);
    assert_eq!(out.late.len(), 1);
}

#[test]
fn a_snapshot_of_another_shape_or_cut_short_is_refused() {
    let mut c = chain(Mode::MicroBatch, false);
    batch(&mut c, 0, i64::MIN, i64::MIN, &[rec("a", 1)]);
    let bytes = c.snapshot();
    for bad in [&bytes[..bytes.len() - 1], &b"eddy-operator-chain/1\n{}\n"[..], &b"{\"groups\":[]}"[..]] {
        assert!(chain(Mode::MicroBatch, false).restore(bad).is_err());
    }
    // a single operator's snapshot is not a chain's
    let single = WindowAggregate::new(WindowAggregateConfig {
        mode: Mode::MicroBatch,
        key_columns: vec![],
        window: WindowKind::None,
        output_mode: OutputMode::Update,
        measures: vec![],
        watermark: None,
    });
    assert!(chain(Mode::MicroBatch, false).restore(&single.snapshot()).is_err());
}

#[test]
fn a_resplit_keeps_in_every_stage_the_groups_of_the_routing_keys_kept() {
    // stage 2 grouped by (k, window): the routing key k sits at position 0 of its key
    let build = || {
        let count = AggregateFn::from_name("count", None, &AggParams::default()).unwrap().named("n");
        let first = WindowAggregate::new(WindowAggregateConfig {
            mode: Mode::MicroBatch,
            key_columns: vec![0],
            window: WindowKind::Fixed { column: 1, windows: SlidingWindows::tumbling(Duration(10 * S), Duration(0)) },
            output_mode: OutputMode::Append,
            measures: vec![count],
            watermark: Some((1, Duration(0))),
        });
        let sum =
            AggregateFn::from_name("sum", Some((2, DataType::Long)), &AggParams::default()).unwrap().named("total");
        // re-windowed by 20 s on the window's time
        let second = WindowAggregate::new(WindowAggregateConfig {
            mode: Mode::MicroBatch,
            key_columns: vec![1],
            window: WindowKind::Fixed { column: 0, windows: SlidingWindows::tumbling(Duration(20 * S), Duration(0)) },
            output_mode: OutputMode::Append,
            measures: vec![sum],
            watermark: Some((0, Duration(0))),
        });
        let steps = Arc::new(CompiledSteps::new(&[], 3, &[], Vec::new()).0);
        let link = ChainLink {
            steps,
            operator: Box::new(second),
            routing_positions: Some(vec![0]),
            exchange: false,
            row_names: names(&["window", "k", "n"]),
            record_names: names(&["window", "k", "n"]),
            watermark_delay: Duration(0),
        };
        OperatorChain::new(Mode::MicroBatch, Box::new(first), vec![link])
    };
    let mut c = build();
    batch(&mut c, 0, i64::MIN, i64::MIN, &[rec("a", 1), rec("b", 2), rec("a", 12)]);
    // [0, 10) finalised: stage 2 now holds a and b in [0, 20), stage 1 a's [10, 20)
    batch(&mut c, 1, i64::MIN, 12, &[]);
    let bytes = c.snapshot();
    let mut only_a = build();
    let a = GroupKey(vec![KeyValue(Value::Str("a".into()))].into_boxed_slice());
    only_a.restore_keeping(&bytes, &mut |k| *k == a).unwrap();
    assert_eq!(only_a.state_len(), 2);
    let out = batch(&mut only_a, 2, 12, 40, &[]);
    // [10, 20) of a (1) joins a's [0, 20) (1): 2; b's group went with its routing key
    assert_eq!(out.rows, vec![vec![window(0, 20), Value::Str("a".into()), Value::Long(2)]]);
}

#[test]
fn a_chain_split_at_its_exchange_over_three_partitions_gives_the_rows_of_the_whole_chain() {
    // the partition owning a record of stage 1 (by `k`) and one of stage 2 (by its window):
    // any fixed functions of the keys do, as the runtime's hash does
    let by_key = |r: &Record| match &r.values[0] {
        Value::Str(s) => usize::from(s.as_bytes()[0]) % 3,
        v => panic!("{v:?}"),
    };
    let by_window = |r: &Record| match &r.values[0] {
        Value::Window { start, .. } => (start.0 / (10 * S)) as usize % 3,
        v => panic!("{v:?}"),
    };
    let mut parts: Vec<OperatorChain> = (0..3).map(|_| chain(Mode::MicroBatch, false)).collect();
    for p in &mut parts {
        assert!(p.has_exchange() && p.split_at_exchange());
        assert_eq!(p.exchange_key(), &[0]);
    }
    let w = |s: i64| if s == i64::MIN { Timestamp::MIN } else { Timestamp(s * S) };
    // the batches of the unsplit chain's test above, with the rows it gives
    let batches = [
        (i64::MIN, i64::MIN, vec![rec("a", 1), rec("a", 2), rec("b", 3), rec("a", 12)], vec![]),
        (i64::MIN, 12, vec![rec("c", 15)], vec![vec![window(0, 10), Value::Long(3)]]),
        (12, 15, vec![rec("a", 5), rec("d", 30)], vec![]),
        (15, 30, vec![], vec![vec![window(10, 20), Value::Long(2)]]),
    ];
    let mut late = Vec::new();
    for (id, (l, e, records, expected)) in batches.into_iter().enumerate() {
        let ctx = BatchContext {
            batch_id: id as u64,
            watermarks: BatchWatermarks { late: w(l), evict: w(e) },
            processing_time: Timestamp(0),
        };
        let mut out = Output::default();
        for p in &mut parts {
            p.begin_batch(&ctx);
        }
        for r in &records {
            parts[by_key(r)].on_record(r, Timestamp::MIN, &mut out);
        }
        for p in &mut parts {
            p.end_batch(&mut out);
        }
        // nothing passed the exchange yet: stage 2 has not ended its batch
        assert!(out.rows.is_empty(), "batch {id}: {:?}", out.rows);
        let exchanged: Vec<Record> = parts.iter_mut().flat_map(OperatorChain::take_exchanged).collect();
        for r in &exchanged {
            parts[by_window(r)].on_exchanged(r, &mut out);
        }
        for p in &mut parts {
            p.end_exchanged(&mut out);
        }
        assert_eq!(out.rows, expected, "batch {id}");
        late.append(&mut out.late);
    }
    assert_eq!(late, vec![rec("a", 5)]);
    assert!(parts.iter().all(|p| p.dropped_between_stages().total() == 0));
}

#[test]
fn stage_drops_count_a_stage_outputs_late_and_refused_rows_by_reason() {
    let mut drops = super::StageDrops::default();
    let mut out = Output::default();
    out.late.push(rec("a", 1));
    out.late.push(rec("b", 2));
    out.rejected.push(super::Rejected { record: rec("c", 3), reason: "ARITHMETIC_OVERFLOW in total".into() });
    drops.add(&out);
    drops.add(&out);
    assert_eq!(drops, super::StageDrops { late: 4, failed: 2 });
    assert_eq!(drops.total(), 6);
}

#[test]
fn real_time_a_split_chain_moves_its_stages_after_the_exchange_to_the_minimum_of_the_peers_watermarks() {
    // two partition actors: stage 1 by `k` (a: 0, b: 1), stage 2 by window (all to 0)
    let mut parts: Vec<OperatorChain> = (0..2).map(|_| chain(Mode::RealTime, true)).collect();
    for p in &mut parts {
        assert!(p.split_at_exchange());
        assert_eq!(p.exchange_watermark(), Timestamp::MIN);
    }
    let mut out = Output::default();
    // a@1, a@4 on actor 0; b@3, then b@12 (W = 12 s) on actor 1, which finalises b's [0, 10)
    for r in [rec("a", 1), rec("a", 4)] {
        parts[0].on_record(&r, Timestamp::MIN, &mut out);
    }
    for r in [rec("b", 3), rec("b", 12)] {
        parts[1].on_record(&r, Timestamp::MIN, &mut out);
    }
    assert!(out.rows.is_empty());
    // actor 1's row of [0, 10) reached the exchange before its watermark
    let from_1 = parts[1].take_exchanged();
    assert_eq!(from_1, vec![Record::new(vec![window(0, 10), Value::Str("b".into()), Value::Long(1)])]);
    assert_eq!(parts[1].exchange_watermark(), Timestamp(12 * S));
    // actor 0 still holds W = 4 s: the minimum over both is 4 s, stage 2 emits nothing
    assert_eq!(parts[0].exchange_watermark(), Timestamp(4 * S));
    assert!(parts[0].take_exchanged().is_empty());
    for r in &from_1 {
        parts[0].on_exchanged(r, &mut out);
    }
    let min = parts[0].exchange_watermark().min(parts[1].exchange_watermark());
    parts[0].advance_exchanged(min, &mut out);
    assert!(out.rows.is_empty());
    // the watermark 12 s reaches actor 0 (from the source): a's [0, 10) goes out before it
    parts[0].advance_watermark(Timestamp(12 * S), &mut out);
    let from_0 = parts[0].take_exchanged();
    assert_eq!(from_0, vec![Record::new(vec![window(0, 10), Value::Str("a".into()), Value::Long(2)])]);
    assert!(out.rows.is_empty(), "the stages after the exchange move only with the peers' watermarks");
    for r in &from_0 {
        parts[0].on_exchanged(r, &mut out);
    }
    let min = parts[0].exchange_watermark().min(parts[1].exchange_watermark());
    assert_eq!(min, Timestamp(12 * S));
    parts[0].advance_exchanged(min, &mut out);
    // both rows of [0, 10), none late downstream: 2 + 1
    assert_eq!(out.rows, vec![vec![window(0, 10), Value::Long(3)]]);
    assert!(parts.iter().all(|p| p.dropped_between_stages().total() == 0));
    // a watermark not above the one held moves nothing
    out.clear();
    parts[0].advance_exchanged(Timestamp(5 * S), &mut out);
    assert!(out.rows.is_empty());
}

#[test]
fn a_row_a_later_stage_refuses_is_a_dead_letter_with_that_stages_column_names() {
    // stage 1: sum(v) AS total per k per tumbling 10 s window; stage 2: sum(total) per window
    let big = 4_000_000_000_000_000_000_i64;
    let total = AggregateFn::from_name("sum", Some((2, DataType::Long)), &AggParams::default()).unwrap().named("total");
    let first = WindowAggregate::new(WindowAggregateConfig {
        mode: Mode::MicroBatch,
        key_columns: vec![0],
        window: WindowKind::Fixed { column: 1, windows: SlidingWindows::tumbling(Duration(10 * S), Duration(0)) },
        output_mode: OutputMode::Append,
        measures: vec![total.clone()],
        watermark: Some((1, Duration(0))),
    });
    let second = WindowAggregate::new(WindowAggregateConfig {
        mode: Mode::MicroBatch,
        key_columns: vec![0],
        window: WindowKind::None,
        output_mode: OutputMode::Append,
        measures: vec![total],
        watermark: Some((0, Duration(0))),
    });
    let link = ChainLink {
        steps: Arc::new(CompiledSteps::new(&[], 3, &[], Vec::new()).0),
        operator: Box::new(second),
        routing_positions: Some(vec![0]),
        exchange: true,
        row_names: names(&["window", "k", "total"]),
        record_names: names(&["window", "k", "total"]),
        watermark_delay: Duration(0),
    };
    let mut c = OperatorChain::new(Mode::MicroBatch, Box::new(first), vec![link]);
    let r = |k: &str, secs: i64| {
        Record::new(vec![Value::Str(k.into()), Value::Timestamp(Timestamp(secs * S)), Value::Long(big)])
    };
    let out = batch(&mut c, 0, i64::MIN, i64::MIN, &[r("a", 1), r("b", 2), r("c", 3)]);
    assert!(out.rows.is_empty() && out.dead_letters.is_empty());
    // W = 12 s finalises [0, 10): three rows of `big` reach stage 2, whose sum takes two
    let out = batch(&mut c, 1, i64::MIN, 12, &[]);
    assert_eq!(out.rows, vec![vec![window(0, 10), Value::Long(2 * big)]]);
    assert_eq!(out.dead_letters.len(), 1, "{:?}", out.dead_letters);
    let dead: serde_json::Value = serde_json::from_str(&out.dead_letters[0]).unwrap();
    assert_eq!(dead["reason"], "ARITHMETIC_OVERFLOW in total");
    assert_eq!(dead["source"], "query.sql");
    let record: serde_json::Value = serde_json::from_str(dead["record"].as_str().unwrap()).unwrap();
    assert_eq!(record["window"], serde_json::json!({"start": "1970-01-01T00:00:00Z", "end": "1970-01-01T00:00:10Z"}));
    assert_eq!(record["total"], big);
    assert!(["a", "b", "c"].contains(&record["k"].as_str().unwrap()), "{record}");
    assert!(out.rejected.is_empty(), "the refused row is not the query's input");
    assert_eq!(c.dropped_between_stages().failed, 1);
}
