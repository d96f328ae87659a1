//! Property tests: the rolling-window operator (several measures with different ranges and
//! lifetime measures; count, sum, min, max, avg, stddev, approx_percentile, count(*)), with random
//! frontier and watermark delays, driven by the engine's real-time driver under a replay clock and
//! by its micro-batch driver, against the brute-force reference of `reference/rolling.rs`
//! (SEMANTICS.md "Rolling window").

mod reference;

use eddy_engine::driver::{MicroBatchSequencer, RealTimeClock, RealTimeRunner};
use eddy_engine::operator::{Mode, Operator, Output, RollingMeasure, RollingWindow, RollingWindowConfig};
use eddy_engine::watermark::WatermarkTracker;
use eddy_engine::{Duration, Record, Timestamp, Value};
use proptest::prelude::*;

use reference::agg::Agg;
use reference::compare::{same_multiset, same_per_key_sequences, show_row};
use reference::drive;
use reference::input::{AMOUNT, ARRIVAL, KEY, PRICE, SEC, TS, arb_raw, arb_shift, engine_agg, record};
use reference::rolling::RollingQuery;

fn arb_agg() -> impl Strategy<Value = Agg> {
    prop_oneof![
        Just(Agg::CountStar),
        Just(Agg::Count(AMOUNT)),
        Just(Agg::Sum(AMOUNT)),
        Just(Agg::Sum(PRICE)),
        Just(Agg::Min(AMOUNT)),
        Just(Agg::Max(PRICE)),
        Just(Agg::Min(PRICE)),
        Just(Agg::Avg(PRICE)),
        Just(Agg::StddevSamp(PRICE)),
        Just(Agg::StddevSamp(AMOUNT)),
        prop_oneof![Just(0.25), Just(0.5), Just(0.75), Just(1.0)].prop_map(|p| Agg::Percentile(AMOUNT, p)),
        prop_oneof![Just(0.5), Just(0.75)].prop_map(|p| Agg::Percentile(PRICE, p)),
        Just(Agg::Percentiles(AMOUNT, vec![0.0, 0.5, 1.0])),
    ]
}

/// 1..=4 measures, each bounded (1..=20 s) or lifetime.
fn arb_query() -> impl Strategy<Value = RollingQuery> {
    (
        prop::collection::vec((arb_agg(), prop::option::weighted(0.75, (1i64..=20).prop_map(|d| d * SEC))), 1..=4),
        0i64..=10,
        prop::option::weighted(0.4, (0i64..=10).prop_map(|d| d * SEC)),
        prop_oneof![3 => Just(vec![KEY]), 1 => Just(vec![KEY, AMOUNT]), 1 => Just(vec![])],
    )
        .prop_map(|(measures, fd, wd, key_cols)| RollingQuery {
            key_cols,
            time_col: TS,
            frontier_delay: fd * SEC,
            measures,
            watermark_delay: wd,
        })
}

/// Real-time input: arrivals drifting 2 s per record (out of order by up to 6 s: the clock
/// never moves back), event times 6 s in the future to 15 s in the past of the arrival.
fn arb_arrivals() -> impl Strategy<Value = Vec<Record>> {
    (prop::collection::vec((arb_raw(3), 0i64..6, -6i64..15), 1..=20), arb_shift()).prop_map(|(raw, shift)| {
        raw.into_iter()
            .enumerate()
            .map(|(i, ((k, _, a, p), aj, lag))| {
                let arrival = 2 * i as i64 + aj + shift;
                record(k, arrival - lag, a, p, arrival)
            })
            .collect()
    })
}

/// Micro-batch input: batch n at processing time 6n + 0..6 s, event times as for arrivals.
fn arb_rolling_batches() -> impl Strategy<Value = Vec<(Vec<Record>, i64)>> {
    prop::collection::vec((0i64..6, prop::collection::vec((arb_raw(3), -6i64..15), 1..=5)), 1..=6)
        .prop_flat_map(|raw| (Just(raw), arb_shift()))
        .prop_map(|(raw, shift)| {
            raw.into_iter()
                .enumerate()
                .map(|(n, (pj, recs))| {
                    let p = 6 * n as i64 + pj + shift;
                    let rs = recs.into_iter().map(|((k, _, a, pr), lag)| record(k, p - lag, a, pr, p)).collect();
                    (rs, p * SEC)
                })
                .collect()
        })
}

fn engine(q: &RollingQuery, mode: Mode) -> Box<RollingWindow> {
    Box::new(RollingWindow::new(RollingWindowConfig {
        mode,
        key_columns: q.key_cols.clone(),
        order_by: q.time_col,
        frontier_delay: Duration(q.frontier_delay),
        measures: q
            .measures
            .iter()
            .map(|(a, over)| RollingMeasure { func: engine_agg(a), over: over.map(Duration) })
            .collect(),
        watermark: q.watermark_delay.map(|d| (q.time_col, Duration(d))),
        compact: true,
    }))
}

fn tracker(q: &RollingQuery) -> Option<(usize, WatermarkTracker)> {
    q.watermark_delay.map(|d| (q.time_col, WatermarkTracker::new(Duration(d))))
}

fn show(records: &[Record]) -> String {
    records
        .iter()
        .map(|r| {
            show_row(&[
                r.values[0].clone(),
                r.values[1].clone(),
                r.values[2].clone(),
                r.values[3].clone(),
                r.values[4].clone(),
            ])
        })
        .collect::<Vec<_>>()
        .join("\n  ")
}

/// Runs `records` (arrival instants in their ARRIVAL column) through the engine's real-time
/// driver under the replay clock, then advances it `extra` seconds past the last arrival (if
/// given), restarting from a snapshot before record `restart` (if given); fails unless every
/// step's rows are the reference's, per key and in order.
fn real_time_matches_reference(
    q: &RollingQuery,
    records: &[Record],
    extra: Option<i64>,
    restart: Option<usize>,
) -> Result<(), TestCaseError> {
    let last_arrival = records.iter().map(|r| reference::time_of(r, ARRIVAL)).max().unwrap_or(0);
    let until = extra.map(|e| last_arrival + e * SEC);
    let input: Vec<(Record, i64)> = records.iter().map(|r| (r.clone(), reference::time_of(r, ARRIVAL))).collect();
    let expected = q.real_time(&input, until);
    let make = || -> Box<dyn Operator> { engine(q, Mode::RealTime) };
    // Under the replay clock the system time is ignored.
    let stamped: Vec<(Record, Timestamp)> = records.iter().map(|r| (r.clone(), Timestamp(0))).collect();
    let clock = RealTimeClock::new(tracker(q), Some(ARRIVAL));
    let steps = drive::real_time(&make, clock, &stamped, until.map(Timestamp), restart);
    for (i, (e, a)) in expected.iter().zip(&steps).enumerate() {
        if let Err(msg) = same_per_key_sequences(e, a, q.key_cols.len()) {
            let upto = (i + 1).min(records.len());
            return Err(TestCaseError::fail(format!(
                "{q:?}\nuntil {until:?}, restart before record {restart:?}\n\
                 input [key, ts, amount, price, arrival]:\n  {}\nstep {i}: {msg}",
                show(&records[..upto])
            )));
        }
    }
    Ok(())
}

/// Where to restart from a snapshot: nowhere, or before batch / record 1..10.
fn arb_restart() -> impl Strategy<Value = Option<usize>> {
    prop::option::weighted(0.5, 1usize..10)
}

proptest! {
    #![proptest_config(reference::input::config(256, "props_rolling"))]

    #[test]
    fn rolling_real_time_matches_reference(
        q in arb_query(),
        records in arb_arrivals(),
        extra in prop::option::weighted(0.8, 0i64..40),
        restart in arb_restart(),
    ) {
        real_time_matches_reference(&q, &records, extra, restart)?;
    }

    #[test]
    fn rolling_micro_batch_matches_reference(
        q in arb_query(),
        batches in arb_rolling_batches(),
        extra in prop::option::weighted(0.8, 0i64..40),
        restart in arb_restart(),
    ) {
        let last_p = batches.iter().map(|(_, p)| *p).max().unwrap_or(0);
        let until = extra.map(|e| last_p + e * SEC);
        let mut all = batches.clone();
        if let Some(u) = until {
            all.push((Vec::new(), u));
        }
        let expected = q.micro_batch(&all);
        let make = || -> Box<dyn Operator> { engine(&q, Mode::MicroBatch) };
        let input: Vec<(Vec<Record>, Timestamp)> = batches.iter().map(|(rs, p)| (rs.clone(), Timestamp(*p))).collect();
        let seq = MicroBatchSequencer::new(tracker(&q), None);
        let actual = drive::micro_batch(&make, seq, &input, until.map(Timestamp), restart);
        prop_assert_eq!(actual.len(), expected.len(), "one batch per input batch, and one at until");
        for (i, (e, (_, a))) in expected.iter().zip(&actual).enumerate() {
            if let Err(msg) = same_multiset(e, a, q.key_cols.len()) {
                let input: Vec<String> = all[..=i].iter().map(|(rs, p)| format!("@{}s: {}", p / SEC, show(rs))).collect();
                return Err(TestCaseError::fail(format!(
                    "{q:?}\nuntil {until:?}, restart before batch {restart:?}\nbatches:\n{}\nbatch {i}: {msg}",
                    input.join("\n")
                )));
            }
        }
    }
}

/// Measures of the compact layout's shape (operator::rolling::compact): over one input column.
fn arb_compact_agg(col: usize) -> impl Strategy<Value = Agg> {
    prop_oneof![
        Just(Agg::CountStar),
        Just(Agg::Count(col)),
        Just(Agg::Sum(col)),
        Just(Agg::Min(col)),
        Just(Agg::Max(col)),
        Just(Agg::Avg(col)),
        Just(Agg::StddevSamp(col)),
    ]
}

/// Queries of the compact layout's shape: 1..=4 measures over one column, each bounded over one
/// shared range (1..=20 s) or lifetime; frontier delay 0 (so that records arrive visible).
fn arb_compact_query() -> impl Strategy<Value = RollingQuery> {
    (prop_oneof![Just(AMOUNT), Just(PRICE)], 1i64..=20)
        .prop_flat_map(|(col, d)| {
            (
                prop::collection::vec((arb_compact_agg(col), prop::bool::weighted(0.75)), 1..=4),
                Just(d),
                prop::option::weighted(0.3, (0i64..=10).prop_map(|d| d * SEC)),
                prop_oneof![3 => Just(vec![KEY]), 1 => Just(vec![KEY, AMOUNT]), 1 => Just(vec![])],
            )
        })
        .prop_map(|(measures, d, wd, key_cols)| RollingQuery {
            key_cols,
            time_col: TS,
            frontier_delay: 0,
            measures: measures.into_iter().map(|(a, bounded)| (a, bounded.then_some(d * SEC))).collect(),
            watermark_delay: wd,
        })
}

/// Real-time input for the compact layout: event times that never go back (0..4 s apart) and
/// arrive 0..3 s after them (the clock never moving back), so that each record arrives visible
/// and in event-time order; with `disorder`, now and then a record 1..10 s older than the one
/// before (out of order: the layout must hand over to the general one).
fn arb_ordered_arrivals(disorder: bool) -> impl Strategy<Value = Vec<Record>> {
    let step = if disorder { prop_oneof![6 => 0i64..4, 1 => -10i64..0].boxed() } else { (0i64..4).boxed() };
    (prop::collection::vec((arb_raw(3), step, 0i64..3), 1..=24), arb_shift()).prop_map(|(raw, shift)| {
        let (mut t, mut arrival) = (shift, shift);
        raw.into_iter()
            .map(|((k, _, a, p), dt, lag)| {
                t += dt;
                arrival = arrival.max(t + lag);
                record(k, t, a, p, arrival)
            })
            .collect()
    })
}

proptest! {
    #![proptest_config(reference::input::config(256, "props_rolling_compact"))]

    /// The compact layout (and its hand-over to the general one: on a restart's snapshot, on a
    /// record out of order) gives the reference's rows.
    #[test]
    fn rolling_compact_layout_matches_reference(
        q in arb_compact_query(),
        records in prop::bool::ANY.prop_flat_map(arb_ordered_arrivals),
        extra in prop::option::weighted(0.8, 0i64..40),
        restart in arb_restart(),
    ) {
        prop_assert!(engine(&q, Mode::RealTime).is_compact(), "the query has the compact layout's shape");
        real_time_matches_reference(&q, &records, extra, restart)?;
    }
}

/// A long stream of one key: arrivals 1 s apart, event times up to 5 s old, prices near 1e6 with
/// a fraction that no binary double holds exactly (so repeated add / subtract would drift).
fn arb_long_stream() -> impl Strategy<Value = Vec<Record>> {
    prop::collection::vec((0i64..5, 0i64..1000), 100..=300).prop_map(|raw| {
        raw.into_iter()
            .enumerate()
            .map(|(i, (lag, tenths))| {
                let arrival = i as i64;
                let mut r = record(0, arrival - lag, Some(tenths), None, arrival);
                r.values[PRICE] = Value::Double(1e6 + tenths as f64 / 10.0);
                r
            })
            .collect()
    })
}

proptest! {
    #![proptest_config(reference::input::config(12, "props_rolling_long"))]

    /// SEMANTICS.md "Aggregate functions": sums of doubles stay accurate over long windows where
    /// values leave as well as enter; the variance family is held to the same standard.
    #[test]
    fn rolling_long_streams_stay_accurate(records in arb_long_stream()) {
        let q = RollingQuery {
            key_cols: vec![KEY],
            time_col: TS,
            frontier_delay: 0,
            measures: vec![
                (Agg::Sum(PRICE), Some(10 * SEC)),
                (Agg::Avg(PRICE), Some(7 * SEC)),
                (Agg::StddevSamp(PRICE), Some(15 * SEC)),
                (Agg::Sum(PRICE), None),
                (Agg::Sum(AMOUNT), Some(3 * SEC)),
            ],
            watermark_delay: None,
        };
        let input: Vec<(Record, i64)> = records.iter().map(|r| (r.clone(), reference::time_of(r, ARRIVAL))).collect();
        let until = records.len() as i64 * SEC + 20 * SEC;
        let expected = q.real_time(&input, Some(until));
        let mut runner = RealTimeRunner::new(engine(&q, Mode::RealTime), RealTimeClock::new(None, Some(ARRIVAL)));
        for (i, r) in records.iter().enumerate() {
            let mut out = Output::default();
            runner.on_record(r.clone(), Timestamp(0), &mut out);
            if let Err(msg) = same_per_key_sequences(&expected[i], &out.rows, 1) {
                return Err(TestCaseError::fail(format!("step {i} of {}: {msg}", records.len())));
            }
        }
        let mut out = Output::default();
        runner.advance_clock(Timestamp(until), &mut out);
        if let Err(msg) = same_per_key_sequences(&expected[records.len()], &out.rows, 1) {
            return Err(TestCaseError::fail(format!("advance to until: {msg}")));
        }
    }
}
