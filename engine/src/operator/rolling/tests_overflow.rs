//! A record that would take an integer sum out of BIGINT enters no measure of its key and goes
//! to `out.rejected` (SEMANTICS.md "Aggregate functions"), whether it arrives visible or becomes
//! visible later, in both layouts and both modes. Expected rows written by hand.

use super::*;
use crate::aggregate::AggParams;
use crate::operator::Rejected;
use crate::schema::DataType;
use crate::value::Row;
use crate::watermark::BatchWatermarks;

const S: i64 = 1_000_000;
/// 7 below `i64::MAX`: 7 more fits, 100 more does not.
const BIG: i64 = 9_223_372_036_854_775_800;

fn measures(over: Option<i64>) -> Vec<RollingMeasure> {
    let over = over.map(|s| Duration(s * S));
    let sum = AggregateFn::from_name("sum", Some((2, DataType::Long)), &AggParams::default()).unwrap().named("life");
    let count = AggregateFn::from_name("count", None, &AggParams::default()).unwrap();
    vec![RollingMeasure { func: sum, over }, RollingMeasure { func: count, over }]
}

fn window(mode: Mode, over: Option<i64>, delay_s: i64, compact: bool) -> RollingWindow {
    RollingWindow::new(RollingWindowConfig {
        mode,
        key_columns: vec![0],
        order_by: 1,
        frontier_delay: Duration(delay_s * S),
        measures: measures(over),
        watermark: None,
        compact,
    })
}

fn rec(t_s: i64, v: i64) -> Record {
    Record::new(vec![Value::Str("a".into()), Value::Timestamp(Timestamp(t_s * S)), Value::Long(v)])
}

/// The row of key "a" at frontier `f_s` (s): sum, count.
fn row(f_s: i64, sum: Option<i64>, count: i64) -> Row {
    vec![
        Value::Str("a".into()),
        Value::Timestamp(Timestamp(f_s * S)),
        sum.map_or(Value::Null, Value::Long),
        Value::Long(count),
    ]
}

fn refused(t_s: i64, v: i64) -> Rejected {
    Rejected { record: rec(t_s, v), reason: "ARITHMETIC_OVERFLOW in life".to_string() }
}

/// Real-time: `(clock s, event time s, v)` records, then the clock moves to `end_s`.
fn real_time(w: &mut RollingWindow, input: &[(i64, i64, i64)], end_s: i64) -> Output {
    let mut out = Output::default();
    for &(now, t, v) in input {
        w.advance_clock(Timestamp(now * S), &mut out);
        w.on_record(&rec(t, v), Timestamp::MIN, &mut out);
    }
    w.advance_clock(Timestamp(end_s * S), &mut out);
    out
}

#[test]
fn a_record_that_would_overflow_a_lifetime_sum_arriving_visible_enters_no_measure() {
    for compact in [true, false] {
        let mut w = window(Mode::RealTime, None, 0, compact);
        let out = real_time(&mut w, &[(0, 0, BIG), (1, 1, 100), (2, 2, 7), (3, 3, -1)], 10);
        assert_eq!(
            out.rows,
            vec![row(0, Some(BIG), 1), row(2, Some(i64::MAX), 2), row(3, Some(i64::MAX - 1), 3)],
            "compact: {compact}"
        );
        assert_eq!(out.rejected, vec![refused(1, 100)], "compact: {compact}");
    }
}

#[test]
fn a_record_that_would_overflow_a_range_sum_arriving_visible_enters_no_measure() {
    for compact in [true, false] {
        let mut w = window(Mode::RealTime, Some(60), 0, compact);
        // The refused record never enters: it does not leave at 61 either. Once BIG has left,
        // 100 fits again.
        let out = real_time(&mut w, &[(0, 0, BIG), (1, 1, 100), (2, 2, 7), (70, 70, 100)], 200);
        assert_eq!(
            out.rows,
            vec![
                row(0, Some(BIG), 1),
                row(2, Some(i64::MAX), 2),
                row(60, Some(7), 1),
                row(62, None, 0),
                row(70, Some(100), 1),
                row(130, None, 0),
            ],
            "compact: {compact}"
        );
        assert_eq!(out.rejected, vec![refused(1, 100)], "compact: {compact}");
        assert_eq!(w.state_len(), 0, "compact: {compact}");
    }
}

#[test]
fn a_pending_record_that_would_overflow_a_sum_is_refused_as_it_becomes_visible() {
    // Frontier delay 5 s: each record is pending on arrival and visible 5 s later.
    let mut w = window(Mode::RealTime, None, 5, true);
    let out = real_time(&mut w, &[(0, 0, BIG), (1, 1, 100), (2, 2, 7)], 20);
    assert_eq!(out.rows, vec![row(0, Some(BIG), 1), row(2, Some(i64::MAX), 2)]);
    assert_eq!(out.rejected, vec![refused(1, 100)]);

    // Bounded (10 s): the check is made when the record becomes visible, not at arrival. The
    // record of t = 12 arrives while BIG is in range (F = 7) and becomes visible at F = 12,
    // after BIG left at F = 10: it fits.
    let mut w = window(Mode::RealTime, Some(10), 5, true);
    let out = real_time(&mut w, &[(5, 0, BIG), (6, 1, 100), (12, 12, 100)], 40);
    assert_eq!(out.rows, vec![row(0, Some(BIG), 1), row(10, None, 0), row(12, Some(100), 1), row(22, None, 0)]);
    assert_eq!(out.rejected, vec![refused(1, 100)]);
}

#[test]
fn a_record_that_would_overflow_a_sum_in_a_micro_batch_enters_no_measure() {
    for over in [None, Some(60)] {
        let mut w = window(Mode::MicroBatch, over, 0, false);
        let mut out = Output::default();
        let batch = |w: &mut RollingWindow, id: u64, pt_s: i64, records: &[(i64, i64)], out: &mut Output| {
            w.begin_batch(&BatchContext {
                batch_id: id,
                watermarks: BatchWatermarks::INITIAL,
                processing_time: Timestamp(pt_s * S),
            });
            for &(t, v) in records {
                w.on_record(&rec(t, v), Timestamp::MIN, out);
            }
            w.end_batch(out);
        };
        // Records enter in event-time order at the batch's frontier: BIG, then 100 (refused),
        // then 7.
        batch(&mut w, 0, 10, &[(2, 7), (1, 100), (0, BIG)], &mut out);
        assert_eq!(out.rows, vec![row(10, Some(i64::MAX), 2)], "over {over:?}");
        assert_eq!(out.rejected, vec![refused(1, 100)], "over {over:?}");
        out.clear();
        batch(&mut w, 1, 20, &[(15, 1)], &mut out);
        assert!(out.rows.is_empty(), "over {over:?}: {:?}", out.rows);
        assert_eq!(out.rejected, vec![refused(15, 1)], "over {over:?}");
    }
}

#[test]
fn a_refused_record_leaves_no_state() {
    for compact in [true, false] {
        for (over, delay) in [(None, 0), (Some(60), 0), (None, 5), (Some(60), 5)] {
            let clocks = [(0, 0, BIG), (1, 1, 100), (2, 2, 7)];
            let mut with = window(Mode::RealTime, over, delay, compact);
            real_time(&mut with, &clocks, 9);
            let mut without = window(Mode::RealTime, over, delay, compact);
            let mut out = Output::default();
            for &(now, t, v) in &clocks {
                without.advance_clock(Timestamp(now * S), &mut out);
                if v != 100 {
                    without.on_record(&rec(t, v), Timestamp::MIN, &mut out);
                }
            }
            without.advance_clock(Timestamp(9 * S), &mut out);
            assert!(out.rejected.is_empty());
            assert_eq!(with.snapshot(), without.snapshot(), "compact {compact}, over {over:?}, delay {delay}");
        }
    }
}
