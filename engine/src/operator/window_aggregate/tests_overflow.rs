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
fn batch(
    op: &mut WindowAggregate,
    id: u64,
    input: &[Record],
    late: i64,
    evict: i64,
) -> (Vec<Vec<Value>>, Vec<Rejected>) {
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
fn a_record_with_a_null_value_that_would_merge_sessions_past_bigint_is_refused() {
    let session = WindowKind::Session { column: 1, gap: SessionGap::Fixed(Duration(5 * SEC)) };
    let mut op = WindowAggregate::new(config(session, Mode::MicroBatch, OutputMode::Append));
    let null = Record::new(vec![Value::Str("a".into()), Value::Timestamp(Timestamp(5 * SEC)), Value::Null]);
    let (_, rejected) =
        batch(&mut op, 0, &[rec(0, MAX), rec(10, MAX / 2), null.clone()], i64::MIN / SEC, i64::MIN / SEC);
    assert_eq!(rejected, vec![refused(null)]);
    let (rows, _) = batch(&mut op, 1, &[], i64::MIN / SEC, 100);
    assert_eq!(rows, vec![row(0, 5, 1, MAX, MAX), row(10, 15, 1, MAX / 2, MAX / 2)]);
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
    let expected = vec![plain(1, i64::MIN + 1, i64::MIN + 1), plain(2, i64::MIN, -1), plain(3, i64::MIN + 7, 7)];
    assert_eq!(out.rows, expected);
}

mod props {
    //! Random BIGINT values and event times, extremes included: the operator never panics, never
    //! emits a wrapped sum, judges nothing late in the first micro-batch (nor before the first
    //! record in real time), and (tumbling windows, complete mode: nothing late, nothing evicted)
    //! refuses exactly the records a brute-force `i128` reference refuses.

    use proptest::prelude::*;

    use super::*;

    /// An i64 from around zero, around either end, or anywhere.
    fn wide() -> impl Strategy<Value = i64> {
        prop_oneof![
            -50i64..50,
            (0i64..50).prop_map(|d| i64::MAX - d),
            (0i64..50).prop_map(|d| i64::MIN + d),
            (0i64..50).prop_map(|d| i64::MAX / 2 - d),
            any::<i64>(),
        ]
    }

    /// An event time (µs) from around the epoch or either end of time.
    fn time() -> impl Strategy<Value = i64> {
        prop_oneof![
            4 => (-30i64..30).prop_map(|s| s * SEC),
            1 => (0i64..30 * SEC).prop_map(|d| i64::MAX - d),
            1 => (0i64..30 * SEC).prop_map(|d| i64::MIN + d),
            1 => any::<i64>(),
        ]
    }

    fn input() -> impl Strategy<Value = Vec<Record>> {
        prop::collection::vec((0..2u8, time(), prop::option::weighted(0.9, wide())), 0..60).prop_map(|rs| {
            rs.into_iter()
                .map(|(k, t, v)| {
                    Record::new(vec![
                        Value::Str(if k == 0 { "a" } else { "b" }.into()),
                        Value::Timestamp(Timestamp(t)),
                        v.map_or(Value::Null, Value::Long),
                    ])
                })
                .collect()
        })
    }

    /// `count(v)`, `sum(v)`, `avg(v)`.
    fn sum_measures() -> Vec<AggregateFn> {
        let none = AggParams::default();
        let m = |agg: &str| {
            AggregateFn::from_name(agg, Some((2, DataType::Long)), &none).unwrap().named(format!("{agg}(v)"))
        };
        vec![m("count"), m("sum"), m("avg")]
    }

    fn layouts() -> Vec<WindowKind> {
        vec![
            fixed(10, 10),
            fixed(10, 5),
            fixed(7, 3),
            WindowKind::Session { column: 1, gap: SessionGap::Fixed(Duration(4 * SEC)) },
            WindowKind::None,
        ]
    }

    /// Every row's sum is the value of `count` non-null inputs whose DOUBLE sum is `avg * count`:
    /// a wrapped sum would be 2^64 away from it, rounding at most ~2^17.
    fn check_rows(rows: &[Vec<Value>]) -> Result<(), TestCaseError> {
        for row in rows {
            let [.., Value::Long(n), sum, avg] = &row[..] else {
                return Err(TestCaseError::fail(format!("row shape {row:?}")));
            };
            match (sum, avg) {
                (Value::Null, Value::Null) => prop_assert_eq!(*n, 0),
                (Value::Long(s), Value::Double(a)) => {
                    prop_assert!(*n > 0);
                    let approx = a * *n as f64;
                    prop_assert!((*s as f64 - approx).abs() < 2f64.powi(62), "sum {} against {}", s, approx);
                }
                _ => return Err(TestCaseError::fail(format!("sum {sum:?} with avg {avg:?}"))),
            }
        }
        Ok(())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        #[test]
        fn random_extreme_values_and_times_never_panic_nor_wrap(input in input(), delay_s in 0i64..20) {
            for window in layouts() {
                let session = matches!(window, WindowKind::Session { .. });
                let modes: &[(Mode, OutputMode)] = &[
                    (Mode::MicroBatch, OutputMode::Append),
                    (Mode::MicroBatch, OutputMode::Complete),
                    (Mode::MicroBatch, OutputMode::Update),
                    (Mode::RealTime, OutputMode::Append),
                    (Mode::RealTime, OutputMode::Update),
                ];
                for &(mode, output_mode) in modes {
                    if session && output_mode == OutputMode::Update {
                        continue; // refused for sessions, as Spark refuses it
                    }
                    let cfg = WindowAggregateConfig {
                        mode,
                        key_columns: vec![0],
                        window: window.clone(),
                        output_mode,
                        measures: sum_measures(),
                        watermark: Some((1, Duration(delay_s * SEC))),
                    };
                    let mut op = WindowAggregate::new(cfg);
                    let mut out = Output::default();
                    match mode {
                        Mode::RealTime => {
                            for (i, r) in input.iter().enumerate() {
                                op.on_record(r, Timestamp::MIN, &mut out);
                                if i == 0 {
                                    prop_assert!(out.late.is_empty(), "first record late: {:?}", out.late);
                                }
                            }
                            op.advance_watermark(Timestamp::MAX, &mut out);
                        }
                        Mode::MicroBatch => {
                            let mut tracker = crate::watermark::WatermarkTracker::new(Duration(delay_s * SEC));
                            let mut wm = BatchWatermarks::INITIAL;
                            for (id, chunk) in input.chunks(7).chain([&[][..]]).enumerate() {
                                op.begin_batch(&BatchContext { batch_id: id as u64, watermarks: wm, processing_time: Timestamp(0) });
                                for r in chunk {
                                    op.on_record(r, wm.late, &mut out);
                                    tracker.observe(r.values[1].as_timestamp().unwrap());
                                }
                                op.end_batch(&mut out);
                                if id == 0 {
                                    prop_assert!(out.late.is_empty(), "late in batch 0: {:?}", out.late);
                                }
                                wm = wm.next(&tracker);
                            }
                        }
                    }
                    check_rows(&out.rows)?;
                }
            }
        }

        #[test]
        fn tumbling_sums_refuse_exactly_the_records_an_exact_reference_refuses(input in input()) {
            let size = 10 * SEC;
            let cfg = WindowAggregateConfig {
                mode: Mode::MicroBatch,
                key_columns: vec![0],
                window: fixed(10, 10),
                output_mode: OutputMode::Complete,
                measures: sum_measures(),
                watermark: None,
            };
            let mut op = WindowAggregate::new(cfg);
            let mut out = Output::default();
            op.begin_batch(&BatchContext { batch_id: 0, watermarks: BatchWatermarks::INITIAL, processing_time: Timestamp(0) });
            for r in &input {
                op.on_record(r, Timestamp::MIN, &mut out);
            }
            op.end_batch(&mut out);
            // reference: windows [start, start + size), the start saturated at i64::MIN (the end
            // does not matter: one window per start), sums in i128; nothing is late
            let mut sums: std::collections::BTreeMap<(String, i128), (i64, i128)> = Default::default();
            let mut refused = Vec::new();
            for r in &input {
                let t = i128::from(r.values[1].as_timestamp().unwrap().0);
                let start = (t.div_euclid(i128::from(size)) * i128::from(size)).max(i128::from(i64::MIN));
                let key = r.values[0].as_str().unwrap().to_string();
                let entry = sums.entry((key, start)).or_insert((0, 0));
                if let Some(v) = r.values[2].as_i64() {
                    if i64::try_from(entry.1 + i128::from(v)).is_err() {
                        refused.push(refused_record(r));
                        continue;
                    }
                    entry.0 += 1;
                    entry.1 += i128::from(v);
                }
            }
            prop_assert!(out.late.is_empty(), "late: {:?}", out.late);
            prop_assert_eq!(&out.rejected, &refused);
            let mut got: Vec<(String, i128, i64, Value)> = out
                .rows
                .iter()
                .map(|row| match (&row[0], &row[1]) {
                    (Value::Window { start, .. }, Value::Str(k)) => (k.to_string(), i128::from(start.0), row[2].as_i64().unwrap(), row[3].clone()),
                    _ => unreachable!("window rows"),
                })
                .collect();
            got.sort_by(|a, b| (&a.0, a.1).cmp(&(&b.0, b.1)));
            let expected: Vec<(String, i128, i64, Value)> = sums
                .into_iter()
                .map(|((k, s), (n, sum))| (k, s, n, if n == 0 { Value::Null } else { Value::Long(sum as i64) }))
                .collect();
            prop_assert_eq!(got, expected);
        }
    }

    fn refused_record(r: &Record) -> Rejected {
        Rejected { record: r.clone(), reason: "ARITHMETIC_OVERFLOW in sum(v)".to_string() }
    }
}

/// A record at the end of the window saturated at the start of time (`[MIN, -9223372036850000000)`
/// for 10 s windows) opens the next window, though it lies less than a pane after `MIN`
/// (found by `tumbling_sums_refuse_exactly_the_records_an_exact_reference_refuses`).
#[test]
fn the_window_after_the_one_saturated_at_the_start_of_time_is_its_own() {
    let mut op = WindowAggregate::new(config(fixed(10, 10), Mode::MicroBatch, OutputMode::Complete));
    let mut out = Output::default();
    op.begin_batch(&BatchContext { batch_id: 0, watermarks: BatchWatermarks::INITIAL, processing_time: Timestamp(0) });
    let next = -9_223_372_036_850_000_000;
    for t in [i64::MIN, next] {
        op.on_record(
            &Record::new(vec![Value::Str("b".into()), Value::Timestamp(Timestamp(t)), Value::Long(1)]),
            Timestamp::MIN,
            &mut out,
        );
    }
    op.end_batch(&mut out);
    let starts: Vec<Value> = out.rows.iter().map(|r| r[0].clone()).collect();
    assert_eq!(
        starts,
        vec![
            Value::Window { start: Timestamp::MIN, end: Timestamp(next) },
            Value::Window { start: Timestamp(next), end: Timestamp(next + 10 * SEC) },
        ]
    );
}
