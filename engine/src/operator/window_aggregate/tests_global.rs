//! A global aggregation (no GROUP BY keys, no window) in micro-batch mode, held by the partition
//! actor owning the empty key ([`Operator::own_global_group`]): one row in every batch, the
//! aggregates of no rows before any record, as Spark's aggregate of no grouping keys; and, at
//! the other end, how a floating-point grouping key is written. Expected rows written by hand.

use super::*;
use crate::aggregate::AggParams;
use crate::schema::DataType;
use crate::watermark::BatchWatermarks;

fn config(output_mode: OutputMode) -> WindowAggregateConfig {
    let none = AggParams::default();
    WindowAggregateConfig {
        mode: Mode::MicroBatch,
        key_columns: vec![],
        window: WindowKind::None,
        output_mode,
        measures: vec![
            AggregateFn::from_name("count", None, &none).unwrap().named("count(1)"),
            AggregateFn::from_name("sum", Some((0, DataType::Long)), &none).unwrap().named("sum(v)"),
        ],
        watermark: None,
    }
}

/// One micro-batch of values `v`; its rows.
fn batch(op: &mut WindowAggregate, id: u64, values: &[i64]) -> Vec<Vec<Value>> {
    let wm = BatchWatermarks::INITIAL;
    op.begin_batch(&BatchContext { batch_id: id, watermarks: wm, processing_time: Timestamp(0) });
    let mut out = Output::default();
    for &v in values {
        op.on_record(&Record::new(vec![Value::Long(v)]), wm.late, &mut out);
    }
    op.end_batch(&mut out);
    out.rows
}

#[test]
fn the_global_group_is_written_in_every_batch_from_the_first() {
    for mode in [OutputMode::Update, OutputMode::Complete] {
        let mut op = WindowAggregate::new(config(mode));
        op.own_global_group();
        assert_eq!(batch(&mut op, 0, &[]), vec![vec![Value::Long(0), Value::Null]], "{mode:?}: no rows yet");
        assert_eq!(batch(&mut op, 1, &[2, 3]), vec![vec![Value::Long(2), Value::Long(5)]], "{mode:?}");
        assert_eq!(batch(&mut op, 2, &[]), vec![vec![Value::Long(2), Value::Long(5)]], "{mode:?}: unchanged");
    }
}

#[test]
fn without_the_global_group_only_a_change_is_written() {
    // another partition actor's instance (or real-time mode): nothing before a record
    let mut op = WindowAggregate::new(config(OutputMode::Update));
    assert_eq!(batch(&mut op, 0, &[]), Vec::<Vec<Value>>::new());
    assert_eq!(batch(&mut op, 1, &[4]), vec![vec![Value::Long(1), Value::Long(4)]]);
    assert_eq!(batch(&mut op, 2, &[]), Vec::<Vec<Value>>::new());
    // append mode writes no global row (Spark refuses an aggregate without a watermark there)
    let mut op = WindowAggregate::new(config(OutputMode::Append));
    op.own_global_group();
    assert_eq!(batch(&mut op, 0, &[]), Vec::<Vec<Value>>::new());
}

/// A DOUBLE group key is written as Spark normalises grouping keys (`NormalizeFloatingNumbers`):
/// the group first seen with -0.0 holds 0.0 too, and is written with 0.0 (the two zeros are one
/// group either way).
#[test]
fn a_negative_zero_key_is_written_as_zero() {
    let none = AggParams::default();
    let mut op = WindowAggregate::new(WindowAggregateConfig {
        key_columns: vec![0],
        measures: vec![AggregateFn::from_name("count", None, &none).unwrap().named("count(1)")],
        ..config(OutputMode::Update)
    });
    let wm = BatchWatermarks::INITIAL;
    op.begin_batch(&BatchContext { batch_id: 0, watermarks: wm, processing_time: Timestamp(0) });
    let mut out = Output::default();
    for d in [-0.0, 0.0, f64::NAN, -f64::NAN] {
        op.on_record(&Record::new(vec![Value::Double(d)]), wm.late, &mut out);
    }
    op.end_batch(&mut out);
    let written: Vec<(u64, Value)> = out
        .rows
        .iter()
        .map(|r| match r[0] {
            Value::Double(d) => (d.to_bits(), r[1].clone()),
            ref other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(written.len(), 2, "{written:?}");
    assert!(written.contains(&(0.0f64.to_bits(), Value::Long(2))), "{written:?}");
    assert!(written.contains(&(f64::NAN.to_bits(), Value::Long(2))), "{written:?}");
}
