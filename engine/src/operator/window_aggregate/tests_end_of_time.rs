//! Tumbling and sliding windows at the ends of time: a window whose start would be before
//! `i64::MIN` starts at `Timestamp::MIN`, the first window whose end would pass `i64::MAX` ends at
//! `Timestamp::MAX` (`PaneGrid`), and no record is late because a bound does not fit in i64
//! (SEMANTICS.md: nothing is late before the first record). Expected rows written by hand.

use super::*;
use crate::aggregate::AggParams;
use crate::schema::DataType;
use crate::watermark::BatchWatermarks;

const SEC: i64 = 1_000_000;
/// 9223372036854775 ms (year 294247) and its negation (year -290308), in µs.
const HI: i64 = 9_223_372_036_854_775_000;
const LO: i64 = -HI;
/// A multiple of a minute (153722867280 minutes): `HI` is in the minute `[B, B + 60 s)`, whose
/// end passes `i64::MAX`; `i64::MAX` is `B + 54.775807 s`.
const B: i64 = 9_223_372_036_800_000_000;

/// `k STRING, ts TIMESTAMP, v BIGINT`.
fn rec(t: i64, v: i64) -> Record {
    Record::new(vec![Value::Str("a".into()), Value::Timestamp(Timestamp(t)), Value::Long(v)])
}

fn config(size_s: i64, slide_s: i64, mode: Mode, output_mode: OutputMode, delay_s: i64) -> WindowAggregateConfig {
    let none = AggParams::default();
    WindowAggregateConfig {
        mode,
        key_columns: vec![0],
        window: WindowKind::Fixed {
            column: 1,
            windows: SlidingWindows {
                size: Duration(size_s * SEC),
                slide: Duration(slide_s * SEC),
                offset: Duration(0),
            },
        },
        output_mode,
        measures: vec![
            AggregateFn::from_name("count", None, &none).unwrap().named("count(1)"),
            AggregateFn::from_name("sum", Some((2, DataType::Long)), &none).unwrap().named("sum(v)"),
        ],
        watermark: Some((1, Duration(delay_s * SEC))),
    }
}

/// A window row `[start, end)` (µs), key `a`, count, sum.
fn row(start: i64, end: i64, count: i64, sum: i64) -> Vec<Value> {
    vec![
        Value::Window { start: Timestamp(start), end: Timestamp(end) },
        Value::Str("a".into()),
        Value::Long(count),
        Value::Long(sum),
    ]
}

/// One micro-batch; its rows in output order and its late records.
fn batch(op: &mut WindowAggregate, id: u64, input: &[Record], wm: BatchWatermarks) -> (Vec<Vec<Value>>, Vec<Record>) {
    op.begin_batch(&BatchContext { batch_id: id, watermarks: wm, processing_time: Timestamp(0) });
    let mut out = Output::default();
    for r in input {
        op.on_record(r, wm.late, &mut out);
    }
    op.end_batch(&mut out);
    assert!(out.rejected.is_empty(), "{:?}", out.rejected);
    (out.rows, out.late)
}

#[test]
fn tumbling_windows_past_either_end_of_time_are_saturated_and_not_late() {
    // 1-minute windows, watermark delay 10 s, micro-batch update: batch 0 judges nothing late.
    let mut op = WindowAggregate::new(config(60, 60, Mode::MicroBatch, OutputMode::Update, 10));
    let (rows, late) = batch(&mut op, 0, &[rec(HI, 1), rec(LO, 2)], BatchWatermarks::INITIAL);
    assert_eq!(late, vec![]);
    let mut rows = rows;
    rows.sort_by(|a, b| a[0].total_cmp(&b[0]));
    assert_eq!(rows, vec![row(i64::MIN, -B, 1, 2), row(B, i64::MAX, 1, 1)]);
    // batch 1, W = HI - 10 s: the minute from B still holds a record at i64::MAX, on time
    let w = BatchWatermarks { late: Timestamp(HI - 10 * SEC), evict: Timestamp(HI - 10 * SEC) };
    let (rows, late) = batch(&mut op, 1, &[rec(i64::MAX, 4), rec(LO, 8)], w);
    assert_eq!(late, vec![rec(LO, 8)], "the window [MIN, -B) ends before W");
    assert_eq!(rows, vec![row(B, i64::MAX, 2, 5)]);
}

#[test]
fn real_time_tumbling_windows_past_either_end_of_time_are_not_late() {
    // (LO first: after HI, W = HI - 10 s is past LO's window, which is then late for a reason)
    for output_mode in [OutputMode::Update, OutputMode::Append] {
        let mut op = WindowAggregate::new(config(60, 60, Mode::RealTime, output_mode, 10));
        let mut out = Output::default();
        for r in [rec(LO, 2), rec(HI, 1)] {
            op.on_record(&r, Timestamp::MIN, &mut out);
        }
        op.advance_watermark(Timestamp::MAX, &mut out);
        assert_eq!(out.late, vec![], "{output_mode:?}");
        let expected = match output_mode {
            OutputMode::Update => vec![row(i64::MIN, -B, 1, 2), row(B, i64::MAX, 1, 1)],
            // the window at the end of time is never final, so never emitted in append mode
            _ => vec![row(i64::MIN, -B, 1, 2)],
        };
        assert_eq!(out.rows, expected, "{output_mode:?}");
    }
}

#[test]
fn no_watermark_passes_the_window_at_the_end_of_time() {
    // Delay 0: a record at i64::MAX takes W to i64::MAX; the window [B, MAX] still takes records.
    let mut op = WindowAggregate::new(config(60, 60, Mode::RealTime, OutputMode::Update, 0));
    let mut out = Output::default();
    for r in [rec(B + SEC, 1), rec(i64::MAX, 2), rec(i64::MAX, 4), rec(B, 8)] {
        op.on_record(&r, Timestamp::MIN, &mut out);
    }
    assert_eq!(out.late, vec![]);
    let full = row(B, i64::MAX, 4, 15);
    assert_eq!(out.rows.last(), Some(&full));
    assert_eq!(out.rows.len(), 4);
    // micro-batch append: W = MAX neither judges the window's records late nor emits it
    let mut op = WindowAggregate::new(config(60, 60, Mode::MicroBatch, OutputMode::Append, 0));
    let (rows, _) = batch(&mut op, 0, &[rec(i64::MAX, 2)], BatchWatermarks::INITIAL);
    assert!(rows.is_empty());
    let at_max = BatchWatermarks { late: Timestamp::MAX, evict: Timestamp::MAX };
    let (rows, late) = batch(&mut op, 1, &[rec(B, 8)], at_max);
    assert!(rows.is_empty(), "not final at W = MAX: {rows:?}");
    assert!(late.is_empty(), "not late at W = MAX: {late:?}");
}

#[test]
fn sliding_windows_past_either_end_of_time_are_saturated_and_not_late() {
    // 10-s windows every 5 s. Near MAX (= B + 54.775807 s): B + 47 s is in [B + 40, B + 50) and
    // [B + 45, B + 55), saturated to [B + 45 s, MAX]; MAX is in that one only ([B + 50, B + 60)
    // is not kept: every record it would hold is in [B + 45 s, MAX]).
    // Near MIN (= -B - 54.775808 s): MIN and -B - 52 s are in [-B - 60, -B - 50) and
    // [-B - 55, -B - 45), saturated to start at MIN; -B - 48 s in [-B - 55, -B - 45) and
    // [-B - 50, -B - 40).
    for mode in [Mode::MicroBatch, Mode::RealTime] {
        let mut op = WindowAggregate::new(config(10, 5, mode, OutputMode::Update, 10));
        let input =
            [rec(B + 47 * SEC, 1), rec(i64::MAX, 2), rec(i64::MIN, 4), rec(-B - 52 * SEC, 8), rec(-B - 48 * SEC, 16)];
        let (mut rows, late) = match mode {
            Mode::MicroBatch => batch(&mut op, 0, &input, BatchWatermarks::INITIAL),
            Mode::RealTime => {
                // (a record at a time, each judged against W before it: the MIN side first)
                let mut out = Output::default();
                for r in input.iter().rev() {
                    op.on_record(r, Timestamp::MIN, &mut out);
                }
                // the last row of each window
                let mut last: Vec<Vec<Value>> = Vec::new();
                for r in out.rows {
                    last.retain(|x| x[0] != r[0]);
                    last.push(r);
                }
                (last, out.late)
            }
        };
        assert_eq!(late, vec![], "{mode:?}");
        rows.sort_by(|a, b| a[0].total_cmp(&b[0]));
        let expected = vec![
            row(i64::MIN, -B - 50 * SEC, 2, 12),
            row(i64::MIN, -B - 45 * SEC, 3, 28),
            row(-B - 50 * SEC, -B - 40 * SEC, 1, 16),
            row(B + 40 * SEC, B + 50 * SEC, 1, 1),
            row(B + 45 * SEC, i64::MAX, 2, 3),
        ];
        assert_eq!(rows, expected, "{mode:?}");
    }
}
