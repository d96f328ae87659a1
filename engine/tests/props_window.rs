//! Property tests: the window-aggregate operator (tumbling, sliding, session, no window; append,
//! update, complete), driven by the engine's micro-batch and real-time drivers, against the
//! brute-force reference of `reference/window.rs` (SEMANTICS.md "Watermark", "Windowed
//! aggregation") on random, out-of-order input over small domains.

mod reference;

use eddy_engine::driver::{MicroBatchSequencer, RealTimeClock};
use eddy_engine::operator::{
    Mode, Operator, OutputMode, SessionGap, WindowAggregate, WindowAggregateConfig, WindowKind,
};
use eddy_engine::watermark::WatermarkTracker;
use eddy_engine::window::SlidingWindows;
use eddy_engine::{Duration, Record, Timestamp};
use proptest::prelude::*;

use reference::agg::Agg;
use reference::compare::{same_multiset, show_row};
use reference::drive;
use reference::input::{AMOUNT, GAP, KEY, PRICE, SEC, TS, arb_batches, arb_delay, arb_stream, engine_agg};
use reference::window::{Emit, WindowQuery, WindowSpec};

/// The measures of every window query: count, sum, min, max, avg over both numeric types.
fn measures() -> Vec<Agg> {
    vec![
        Agg::CountStar,
        Agg::Count(AMOUNT),
        Agg::Sum(AMOUNT),
        Agg::Sum(PRICE),
        Agg::Min(AMOUNT),
        Agg::Max(PRICE),
        Agg::Avg(PRICE),
        Agg::Avg(AMOUNT),
    ]
}

/// Tumbling (size 1..=20 s) or sliding (slide 1..=10 s, size slide..=30 s, any ratio) windows
/// with a start offset below the slide.
fn arb_fixed() -> impl Strategy<Value = WindowSpec> {
    prop_oneof![
        (1i64..=20).prop_flat_map(|size| (Just(size), 0..size)).prop_map(|(size, off)| WindowSpec::Fixed {
            size: size * SEC,
            slide: size * SEC,
            offset: off * SEC
        }),
        (1i64..=10).prop_flat_map(|slide| (slide..=30, Just(slide), 0..slide)).prop_map(|(size, slide, off)| {
            WindowSpec::Fixed { size: size * SEC, slide: slide * SEC, offset: off * SEC }
        }),
    ]
}

/// Grouping: by key, one global group, or by key and a nullable column.
fn arb_keys() -> impl Strategy<Value = Vec<usize>> {
    prop_oneof![3 => Just(vec![KEY]), 1 => Just(vec![]), 1 => Just(vec![KEY, AMOUNT])]
}

fn engine_config(q: &WindowQuery, mode: Mode) -> WindowAggregateConfig {
    let window = match q.window {
        WindowSpec::None => WindowKind::None,
        WindowSpec::Fixed { size, slide, offset } => WindowKind::Fixed {
            column: q.time_col,
            windows: SlidingWindows { size: Duration(size), slide: Duration(slide), offset: Duration(offset) },
        },
        WindowSpec::Session { gap, gap_col } => WindowKind::Session {
            column: q.time_col,
            gap: gap_col.map_or(SessionGap::Fixed(Duration(gap)), SessionGap::Column),
        },
    };
    WindowAggregateConfig {
        mode,
        key_columns: q.key_cols.clone(),
        window,
        output_mode: match q.emit {
            Emit::Append => OutputMode::Append,
            Emit::Update => OutputMode::Update,
            Emit::Complete => OutputMode::Complete,
        },
        measures: q.measures.iter().map(engine_agg).collect(),
        watermark: q.delay.map(|d| (q.time_col, Duration(d))),
    }
}

fn tracker(q: &WindowQuery) -> Option<(usize, WatermarkTracker)> {
    q.delay.map(|d| (q.time_col, WatermarkTracker::new(Duration(d))))
}

/// Number of leading identity columns of a row (window, group values).
fn id_len(q: &WindowQuery) -> usize {
    usize::from(q.window != WindowSpec::None) + q.key_cols.len()
}

fn show_batches(batches: &[Vec<Record>]) -> String {
    batches
        .iter()
        .enumerate()
        .map(|(i, b)| {
            let rows: Vec<String> = b.iter().map(|r| show_row(&r.values[..4])).collect();
            format!("batch {i}: {}", rows.join(" "))
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Runs `q` in micro-batch mode through [`MicroBatchRunner`] (restarted from a snapshot before
/// batch `restart`, if given) and compares every batch with the reference (batches without rows
/// may be absent on either side).
fn check_micro_batch(q: &WindowQuery, batches: &[Vec<Record>], restart: Option<usize>) -> Result<(), TestCaseError> {
    let cfg = engine_config(q, Mode::MicroBatch);
    let make = || -> Box<dyn Operator> { Box::new(WindowAggregate::new(cfg.clone())) };
    let input: Vec<(Vec<Record>, Timestamp)> =
        batches.iter().enumerate().map(|(i, b)| (b.clone(), Timestamp(i as i64 * SEC))).collect();
    let seq = MicroBatchSequencer::new(tracker(q), None);
    let actual = drive::micro_batch(&make, seq, &input, None, restart);
    let expected = q.micro_batch(batches);
    let last = expected.iter().chain(&actual).map(|(id, _)| *id).max().unwrap_or(0);
    for id in 0..=last {
        let e = expected.iter().find(|(i, _)| *i == id).map_or(&[][..], |(_, r)| &r[..]);
        let a = actual.iter().find(|(i, _)| *i == id).map_or(&[][..], |(_, r)| &r[..]);
        if let Err(msg) = same_multiset(e, a, id_len(q)) {
            return Err(TestCaseError::fail(format!(
                "{q:?}
restart before batch {restart:?}\n{}\nbatch {id}: {msg}",
                show_batches(batches)
            )));
        }
    }
    Ok(())
}

/// Runs `q` in real-time mode through [`RealTimeRunner`] (restarted from a snapshot before
/// record `restart`, if given) and compares each record's rows.
fn check_real_time(q: &WindowQuery, records: &[Record], restart: Option<usize>) -> Result<(), TestCaseError> {
    let cfg = engine_config(q, Mode::RealTime);
    let make = || -> Box<dyn Operator> { Box::new(WindowAggregate::new(cfg.clone())) };
    let input: Vec<(Record, Timestamp)> =
        records.iter().enumerate().map(|(i, r)| (r.clone(), Timestamp(i as i64 * SEC))).collect();
    let clock = RealTimeClock::new(tracker(q), None);
    let actual = drive::real_time(&make, clock, &input, None, restart);
    let expected = q.real_time(records);
    for (i, e) in expected.iter().enumerate() {
        if let Err(msg) = same_multiset(e, &actual[i], id_len(q)) {
            let input: Vec<String> = records[..=i].iter().map(|r| show_row(&r.values[..4])).collect();
            return Err(TestCaseError::fail(format!(
                "{q:?}\nrestart before record {restart:?}\ninput: {}\nstep {i}: {msg}",
                input.join(" ")
            )));
        }
    }
    Ok(())
}

/// Where to restart from a snapshot: nowhere, or before batch / record 1..8.
fn arb_restart() -> impl Strategy<Value = Option<usize>> {
    prop::option::weighted(0.5, 1usize..8)
}

fn query(window: WindowSpec, emit: Emit, key_cols: Vec<usize>, delay: Option<i64>) -> WindowQuery {
    WindowQuery { time_col: TS, key_cols, window, emit, measures: measures(), delay }
}

proptest! {
    #![proptest_config(reference::input::config(192, "props_window"))]

    #[test]
    fn fixed_windows_micro_batch_update_match_reference(
        w in arb_fixed(), keys in arb_keys(), delay in arb_delay(), batches in arb_batches(3), restart in arb_restart()) {
        check_micro_batch(&query(w, Emit::Update, keys, delay), &batches, restart)?;
    }

    #[test]
    fn fixed_windows_micro_batch_append_match_reference(
        w in arb_fixed(), keys in arb_keys(), delay in (0i64..=10), batches in arb_batches(3), restart in arb_restart()) {
        check_micro_batch(&query(w, Emit::Append, keys, Some(delay * SEC)), &batches, restart)?;
    }

    #[test]
    fn fixed_windows_micro_batch_complete_match_reference(
        w in arb_fixed(), keys in arb_keys(), delay in arb_delay(), batches in arb_batches(3), restart in arb_restart()) {
        check_micro_batch(&query(w, Emit::Complete, keys, delay), &batches, restart)?;
    }

    #[test]
    fn no_window_micro_batch_matches_reference(
        complete in any::<bool>(), keys in arb_keys(), delay in arb_delay(), batches in arb_batches(4), restart in arb_restart()) {
        let emit = if complete { Emit::Complete } else { Emit::Update };
        check_micro_batch(&query(WindowSpec::None, emit, keys, delay), &batches, restart)?;
    }

    #[test]
    fn sessions_micro_batch_append_match_reference(
        gap in 1i64..=15, keys in arb_keys(), delay in (0i64..=10), batches in arb_batches(3), restart in arb_restart()) {
        let q = query(WindowSpec::Session { gap: gap * SEC, gap_col: None }, Emit::Append, keys, Some(delay * SEC));
        check_micro_batch(&q, &batches, restart)?;
    }

    #[test]
    fn sessions_micro_batch_complete_match_reference(
        gap in 1i64..=15, keys in arb_keys(), delay in arb_delay(), batches in arb_batches(3), restart in arb_restart()) {
        let q = query(WindowSpec::Session { gap: gap * SEC, gap_col: None }, Emit::Complete, keys, delay);
        check_micro_batch(&q, &batches, restart)?;
    }

    #[test]
    fn fixed_windows_real_time_update_match_reference(
        w in arb_fixed(), keys in arb_keys(), delay in arb_delay(), records in arb_stream(3), restart in arb_restart()) {
        check_real_time(&query(w, Emit::Update, keys, delay), &records, restart)?;
    }

    #[test]
    fn fixed_windows_real_time_append_match_reference(
        w in arb_fixed(), keys in arb_keys(), delay in (0i64..=10), records in arb_stream(3), restart in arb_restart()) {
        check_real_time(&query(w, Emit::Append, keys, Some(delay * SEC)), &records, restart)?;
    }

    #[test]
    fn no_window_real_time_update_matches_reference(
        keys in arb_keys(), delay in arb_delay(), records in arb_stream(4), restart in arb_restart()) {
        check_real_time(&query(WindowSpec::None, Emit::Update, keys, delay), &records, restart)?;
    }

    #[test]
    fn sessions_real_time_append_match_reference(
        gap in 1i64..=15, keys in arb_keys(), delay in (0i64..=10), records in arb_stream(3), restart in arb_restart()) {
        let q = query(WindowSpec::Session { gap: gap * SEC, gap_col: None }, Emit::Append, keys, Some(delay * SEC));
        check_real_time(&q, &records, restart)?;
    }

    #[test]
    fn no_window_with_time_key_micro_batch_matches_reference(
        emit in prop_oneof![Just(Emit::Append), Just(Emit::Update), Just(Emit::Complete)],
        delay in (0i64..=10), batches in arb_batches(2), restart in arb_restart()
    ) {
        let q = query(WindowSpec::None, emit, vec![KEY, TS], Some(delay * SEC));
        check_micro_batch(&q, &batches, restart)?;
    }

    #[test]
    fn no_window_with_time_key_real_time_matches_reference(
        append in any::<bool>(), delay in (0i64..=10), records in arb_stream(2), restart in arb_restart()
    ) {
        let emit = if append { Emit::Append } else { Emit::Update };
        let q = query(WindowSpec::None, emit, vec![KEY, TS], Some(delay * SEC));
        check_real_time(&q, &records, restart)?;
    }

    #[test]
    fn sessions_with_gap_column_micro_batch_match_reference(
        complete in any::<bool>(), keys in arb_keys(), delay in (0i64..=10),
        batches in arb_batches(3), restart in arb_restart()
    ) {
        let emit = if complete { Emit::Complete } else { Emit::Append };
        let q = query(WindowSpec::Session { gap: 0, gap_col: Some(GAP) }, emit, keys, Some(delay * SEC));
        check_micro_batch(&q, &batches, restart)?;
    }

    #[test]
    fn sessions_with_gap_column_real_time_match_reference(
        keys in arb_keys(), delay in (0i64..=10), records in arb_stream(3), restart in arb_restart()
    ) {
        let q = query(WindowSpec::Session { gap: 0, gap_col: Some(GAP) }, Emit::Append, keys, Some(delay * SEC));
        check_real_time(&q, &records, restart)?;
    }
}
