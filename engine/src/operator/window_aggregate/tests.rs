//! The operator with at most two measures keeps the last pane's / session's states inline
//! (`hot.rs`); with more it keeps them in the group's vector, the path that the property tests
//! (`tests/props_window.rs`, eight measures) check against the brute-force reference. Here both
//! paths run the same random, out-of-order input, with a restart through snapshot and restore:
//! the two-measure rows must be the three-measure rows without the third measure.

use super::*;
use crate::aggregate::AggKind;
use crate::schema::DataType;
use crate::watermark::BatchWatermarks;

const SEC: i64 = 1_000_000;

/// Fixed windows of `size` seconds sliding by `slide`, shifted by `offset`, over column 1.
fn fixed(size: i64, slide: i64, offset: i64) -> WindowKind {
    WindowKind::Fixed {
        column: 1,
        windows: SlidingWindows {
            size: Duration(size * SEC),
            slide: Duration(slide * SEC),
            offset: Duration(offset * SEC),
        },
    }
}

/// Records `key, ts, amount (nullable BIGINT), price`, event times drifting forward with
/// disorder, from a fixed LCG.
fn records(seed: u64, n: usize) -> Vec<Record> {
    let mut x = seed;
    let mut next = move |m: u64| {
        x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
        (x >> 33) % m
    };
    (0..n)
        .map(|i| {
            let t = i as i64 * SEC / 2 + next(12) as i64 * SEC - 6 * SEC;
            let amount = if next(5) == 0 { Value::Null } else { Value::Long(next(100) as i64 - 20) };
            Record::new(vec![
                Value::Str(format!("k{}", next(4)).into()),
                Value::Timestamp(Timestamp(t)),
                amount,
                Value::Double(next(1000) as f64 / 8.0),
            ])
        })
        .collect()
}

fn measures(n: usize) -> Vec<AggregateFn> {
    let all = [
        AggregateFn { kind: AggKind::CountStar, input: None, input_type: DataType::Long, name: String::new() },
        AggregateFn { kind: AggKind::Sum, input: Some(2), input_type: DataType::Long, name: String::new() },
        AggregateFn { kind: AggKind::Max, input: Some(3), input_type: DataType::Double, name: String::new() },
    ];
    all[..n].to_vec()
}

fn config(window: &WindowKind, mode: Mode, output_mode: OutputMode, n: usize) -> WindowAggregateConfig {
    let key_columns = match window {
        // the plain aggregation groups by the time column too, so that groups expire
        WindowKind::None => vec![0, 1],
        _ => vec![0],
    };
    WindowAggregateConfig {
        mode,
        key_columns,
        window: window.clone(),
        output_mode,
        measures: measures(n),
        watermark: Some((1, Duration(3 * SEC))),
    }
}

fn restarted(op: WindowAggregate, cfg: &WindowAggregateConfig, general: bool) -> WindowAggregate {
    let bytes = op.snapshot();
    let mut fresh = operator(cfg, general);
    fresh.restore(&bytes).expect("a snapshot restores into the same query");
    fresh
}

/// The operator of `cfg`; `general`: without its per-record path of the common case.
fn operator(cfg: &WindowAggregateConfig, general: bool) -> WindowAggregate {
    let op = WindowAggregate::new(cfg.clone());
    if general { op.without_fast_path() } else { op }
}

/// Rows of each step (a record in real time, a batch in micro-batch mode), each step sorted.
fn run(cfg: &WindowAggregateConfig, input: &[Record], restart_at: usize) -> Vec<Vec<Vec<Value>>> {
    run_op(cfg, input, restart_at, false)
}

/// [`run`], through the general path only when `general`.
fn run_op(cfg: &WindowAggregateConfig, input: &[Record], restart_at: usize, general: bool) -> Vec<Vec<Vec<Value>>> {
    let mut op = operator(cfg, general);
    let mut steps = Vec::new();
    let mut out = Output::default();
    match cfg.mode {
        Mode::RealTime => {
            for (i, r) in input.iter().enumerate() {
                if i == restart_at {
                    op = restarted(op, cfg, general);
                }
                op.on_record(r, Timestamp::MIN, &mut out);
                steps.push(std::mem::take(&mut out.rows));
            }
        }
        Mode::MicroBatch => {
            let mut tracker = WatermarkTracker::new(Duration(3 * SEC));
            let mut wm = BatchWatermarks::INITIAL;
            let batches: Vec<&[Record]> = input.chunks(7).collect();
            for (i, batch) in batches.iter().chain([&[][..]].iter()).enumerate() {
                if i == restart_at / 7 {
                    op = restarted(op, cfg, general);
                }
                let ctx = BatchContext { batch_id: i as u64, watermarks: wm, processing_time: Timestamp(0) };
                op.begin_batch(&ctx);
                for r in batch.iter() {
                    op.on_record(r, wm.late, &mut out);
                }
                op.end_batch(&mut out);
                steps.push(std::mem::take(&mut out.rows));
                for r in batch.iter() {
                    if let Some(t) = r.values[1].as_timestamp() {
                        tracker.observe(t);
                    }
                }
                wm = wm.next(&tracker);
            }
        }
    }
    for rows in &mut steps {
        rows.sort_by(|a, b| {
            a.iter().zip(b.iter()).map(|(x, y)| x.total_cmp(y)).find(|o| o.is_ne()).unwrap_or(std::cmp::Ordering::Equal)
        });
    }
    steps
}

#[test]
fn inline_and_vector_states_give_the_same_rows_in_every_kind_and_mode() {
    let session = WindowKind::Session { column: 1, gap: SessionGap::Fixed(Duration(2 * SEC)) };
    let cases = [
        (fixed(5, 5, 0), vec![OutputMode::Append, OutputMode::Update, OutputMode::Complete]),
        (fixed(10, 3, 1), vec![OutputMode::Append, OutputMode::Update, OutputMode::Complete]),
        (fixed(6, 2, 0), vec![OutputMode::Append, OutputMode::Update]),
        (session, vec![OutputMode::Append, OutputMode::Complete]),
        (WindowKind::None, vec![OutputMode::Append, OutputMode::Update, OutputMode::Complete]),
    ];
    let mut rows_seen = 0;
    for seed in 1..=6u64 {
        let input = records(seed, 120);
        for (window, modes) in &cases {
            for &output_mode in modes {
                for mode in [Mode::RealTime, Mode::MicroBatch] {
                    if mode == Mode::RealTime && output_mode == OutputMode::Complete {
                        continue; // complete mode is micro-batch only
                    }
                    let restart_at = 20 + 9 * seed as usize;
                    let two = run(&config(window, mode, output_mode, 2), &input, restart_at);
                    let three = run(&config(window, mode, output_mode, 3), &input, restart_at);
                    assert_eq!(two.len(), three.len());
                    for (step, (a, b)) in two.iter().zip(&three).enumerate() {
                        let projected: Vec<Vec<Value>> = b.iter().map(|r| r[..r.len() - 1].to_vec()).collect();
                        assert_eq!(a, &projected, "{window:?} {mode:?} {output_mode:?} seed {seed} step {step}");
                        rows_seen += a.len();
                    }
                }
            }
        }
    }
    assert!(rows_seen > 1000, "the input produced rows ({rows_seen})");
}

/// The per-record path of the common case (`Fast`: real-time, tumbling or sliding windows,
/// append mode, at most two measures, no integer sum) and the general path give the same rows,
/// late records and watermark on the same random, out-of-order input: late records, NULL event
/// times and values, infinities a compact DOUBLE sum declines, min / max of a DOUBLE (no compact
/// form), BIGINT and string keys, restarts through snapshot and restore.
#[test]
fn the_fast_path_gives_what_the_general_path_gives() {
    let f = |kind: AggKind, input: Option<usize>, input_type: DataType| AggregateFn {
        kind,
        input,
        input_type,
        name: String::new(),
    };
    let measure_sets = [
        vec![f(AggKind::Max, Some(2), DataType::Long)],
        vec![f(AggKind::CountStar, None, DataType::Long), f(AggKind::Min, Some(2), DataType::Long)],
        vec![f(AggKind::Count, Some(2), DataType::Long), f(AggKind::Sum, Some(3), DataType::Double)],
        vec![f(AggKind::Avg, Some(3), DataType::Double), f(AggKind::Max, Some(1), DataType::Timestamp)],
        vec![f(AggKind::Max, Some(3), DataType::Double), f(AggKind::Min, Some(0), DataType::String)],
    ];
    let mut rows_seen = 0;
    let mut late_seen = 0;
    for seed in 1..=6u64 {
        for long_keys in [false, true] {
            let mut input = records(seed, 160);
            for (i, r) in input.iter_mut().enumerate() {
                let values = &mut r.values;
                if i % 23 == 7 {
                    values[1] = Value::Null;
                }
                if i % 29 == 3 {
                    values[3] = Value::Double(if i % 2 == 0 { f64::INFINITY } else { f64::NAN });
                }
                if long_keys && let Value::Str(k) = &values[0] {
                    values[0] = Value::Long(1_000 + i64::from(k.as_bytes()[1]));
                }
            }
            for window in [fixed(5, 5, 0), fixed(10, 3, 1), fixed(6, 2, 0)] {
                for measures in &measure_sets {
                    let mut cfg = config(&window, Mode::RealTime, OutputMode::Append, 0);
                    cfg.measures = measures.clone();
                    assert!(WindowAggregate::new(cfg.clone()).fast.is_some(), "{measures:?}");
                    let restart_at = 40 + 13 * seed as usize;
                    let mut fast = operator(&cfg, false);
                    let mut general = operator(&cfg, true);
                    for (i, r) in input.iter().enumerate() {
                        if i == restart_at {
                            fast = restarted(fast, &cfg, false);
                            general = restarted(general, &cfg, true);
                        }
                        let (mut a, mut b) = (Output::default(), Output::default());
                        // a stamped watermark now and then, as a source with several inputs sends
                        let stamped =
                            if i % 31 == 30 { Timestamp(i as i64 * SEC / 2 - 8 * SEC) } else { Timestamp::MIN };
                        fast.on_record(r, stamped, &mut a);
                        general.on_record(r, stamped, &mut b);
                        assert_eq!(a.rows, b.rows, "{window:?} {measures:?} seed {seed} record {i}");
                        assert_eq!(a.late, b.late, "{window:?} {measures:?} seed {seed} record {i}");
                        assert_eq!(fast.watermark, general.watermark);
                        rows_seen += a.rows.len();
                        late_seen += a.late.len();
                    }
                    assert_eq!(fast.snapshot(), general.snapshot());
                }
            }
        }
    }
    assert!(rows_seen > 1000 && late_seen > 50, "the input produced rows ({rows_seen}) and late records ({late_seen})");
}
