//! A record that would take an integer sum out of BIGINT is refused whole, in every window
//! layout and mode (SEMANTICS.md "Aggregate functions"). Spark 4 (ANSI) fails the query at such
//! a record, so the expected rows are written by hand: those of the input without it.

use super::*;
use crate::aggregate::AggParams;
use crate::operator::Rejected;
use crate::schema::DataType;
use crate::watermark::BatchWatermarks;

const SEC: i64 = 1_000_000;
const MAX: i64 = i64::MAX;

/// `k STRING, ts TIMESTAMP, v BIGINT`.
fn rec(t_s: i64, v: i64) -> Record {
    Record::new(vec![Value::Str("a".into()), Value::Timestamp(Timestamp(t_s * SEC)), Value::Long(v)])
}

/// `count(1)`, `sum(v)`, `max(v)`, named as the plan names them.
fn measures() -> Vec<AggregateFn> {
    let none = AggParams::default();
    vec![
        AggregateFn::from_name("count", None, &none).unwrap().named("count(1)"),
        AggregateFn::from_name("sum", Some((2, DataType::Long)), &none).unwrap().named("sum(v)"),
        AggregateFn::from_name("max", Some((2, DataType::Long)), &none).unwrap().named("max(v)"),
    ]
}

fn config(window: WindowKind, mode: Mode, output_mode: OutputMode) -> WindowAggregateConfig {
    WindowAggregateConfig {
        mode,
        key_columns: vec![0],
        window,
        output_mode,
        measures: measures(),
        watermark: Some((1, Duration(100 * SEC))),
    }
}

fn fixed(size_s: i64, slide_s: i64) -> WindowKind {
    WindowKind::Fixed {
        column: 1,
        windows: SlidingWindows { size: Duration(size_s * SEC), slide: Duration(slide_s * SEC), offset: Duration(0) },
    }
}

/// A window row `[start, end)`, key `a`, then count, sum, max.
fn row(start_s: i64, end_s: i64, count: i64, sum: i64, max: i64) -> Vec<Value> {
    vec![
        Value::Window { start: Timestamp(start_s * SEC), end: Timestamp(end_s * SEC) },
        Value::Str("a".into()),
        Value::Long(count),
        Value::Long(sum),
        Value::Long(max),
    ]
}

fn sorted(mut rows: Vec<Vec<Value>>) -> Vec<Vec<Value>> {
    rows.sort_by(|a, b| {
        a.iter().zip(b.iter()).map(|(x, y)| x.total_cmp(y)).find(|o| o.is_ne()).unwrap_or(std::cmp::Ordering::Equal)
    });
    rows
}

fn refused(record: Record) -> Rejected {
    Rejected { record, reason: "ARITHMETIC_OVERFLOW in sum(v)".to_string() }
}

/// One micro-batch of `input` with watermarks `late` / `evict` (seconds); its rows (sorted) and
/// the records refused.
fn batch(op: &mut WindowAggregate, id: u64, input: &[Record], late: i64, evict: i64) -> (Vec<Vec<Value>>, Vec<Rejected>) {
    let watermarks = BatchWatermarks { late: Timestamp(late * SEC), evict: Timestamp(evict * SEC) };
    op.begin_batch(&BatchContext { batch_id: id, watermarks, processing_time: Timestamp(0) });
    let mut out = Output::default();
    for r in input {
        op.on_record(r, watermarks.late, &mut out);
    }
    op.end_batch(&mut out);
    (sorted(std::mem::take(&mut out.rows)), std::mem::take(&mut out.rejected))
}

#[test]
fn a_record_that_would_overflow_a_tumbling_sum_is_refused_whole_in_every_output_mode() {
    let input = [rec(1, MAX - 1), rec(2, 1), rec(3, 1), rec(4, -5), rec(5, 3)];
    // (3, 1) would make MAX + 1: refused; (5, 3) fits again after -5.
    let expected = vec![row(0, 10, 4, MAX - 2, MAX - 1)];
    for output_mode in [OutputMode::Update, OutputMode::Complete, OutputMode::Append] {
        let mut op = WindowAggregate::new(config(fixed(10, 10), Mode::MicroBatch, output_mode));
        let (rows, rejected) = batch(&mut op, 0, &input, i64::MIN / SEC, i64::MIN / SEC);
        assert_eq!(rejected, vec![refused(rec(3, 1))], "{output_mode:?}");
        let rows = match output_mode {
            OutputMode::Append => {
                assert!(rows.is_empty());
                batch(&mut op, 1, &[], i64::MIN / SEC, 10).0
            }
            _ => rows,
        };
        assert_eq!(rows, expected, "{output_mode:?}");
    }
}

#[test]
fn a_record_that_would_overflow_one_sliding_window_is_refused_from_all_its_windows() {
    // Sliding 10 s every 5 s (panes of 5 s): (6, 1) would overflow [0, 10) only, and is
    // refused from [5, 15) too.
    let mut op = WindowAggregate::new(config(fixed(10, 5), Mode::RealTime, OutputMode::Update));
    let mut out = Output::default();
    let mut step = |r: Record| {
        op.on_record(&r, Timestamp::MIN, &mut out);
        (sorted(std::mem::take(&mut out.rows)), std::mem::take(&mut out.rejected))
    };
    assert_eq!(step(rec(1, MAX)), (vec![row(-5, 5, 1, MAX, MAX), row(0, 10, 1, MAX, MAX)], vec![]));
    assert_eq!(step(rec(6, 1)), (vec![], vec![refused(rec(6, 1))]));
    assert_eq!(step(rec(11, 1)), (vec![row(5, 15, 1, 1, 1), row(10, 20, 1, 1, 1)], vec![]));
    assert_eq!(step(rec(7, -1)), (vec![row(0, 10, 2, MAX - 1, MAX), row(5, 15, 2, 0, 1)], vec![]));
    assert_eq!(step(rec(8, 1)), (vec![row(0, 10, 3, MAX, MAX), row(5, 15, 3, 1, 1)], vec![]));
    assert_eq!(step(rec(9, -9)), (vec![row(0, 10, 4, MAX - 9, MAX), row(5, 15, 4, -8, 1)], vec![]));
}

#[test]
fn a_record_whose_merge_would_overflow_a_session_sum_is_refused_and_merges_nothing() {
    let session = WindowKind::Session { column: 1, gap: SessionGap::Fixed(Duration(5 * SEC)) };
    let mut op = WindowAggregate::new(config(session, Mode::MicroBatch, OutputMode::Append));
    // (5, 1) spans [5, 10): it would merge [0, 5) and [10, 15) into a sum of MAX + 2.
    let (rows, rejected) = batch(&mut op, 0, &[rec(0, MAX), rec(10, 1), rec(5, 1)], i64::MIN / SEC, i64::MIN / SEC);
    assert!(rows.is_empty());
    assert_eq!(rejected, vec![refused(rec(5, 1))]);
    let (rows, rejected) = batch(&mut op, 1, &[rec(12, -3)], i64::MIN / SEC, 100);
    assert!(rejected.is_empty());
    assert_eq!(rows, vec![row(0, 5, 1, MAX, MAX), row(10, 17, 2, -2, 1)]);
}

#[test]
fn a_record_that_would_overflow_a_plain_grouped_sum_is_refused() {
    let mut op = WindowAggregate::new(config(WindowKind::None, Mode::RealTime, OutputMode::Update));
    let mut out = Output::default();
    for r in [rec(1, i64::MIN + 1), rec(2, -1), rec(3, -1), rec(4, 7)] {
        op.on_record(&r, Timestamp::MIN, &mut out);
    }
    assert_eq!(out.rejected, vec![refused(rec(3, -1))]);
    let plain = |count: i64, sum: i64, max: i64| {
        vec![Value::Str("a".into()), Value::Long(count), Value::Long(sum), Value::Long(max)]
    };
    let expected =
        vec![plain(1, i64::MIN + 1, i64::MIN + 1), plain(2, i64::MIN, -1), plain(3, i64::MIN + 7, 7)];
    assert_eq!(out.rows, expected);
}
