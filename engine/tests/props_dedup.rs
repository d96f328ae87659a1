//! Property tests: the deduplication operator (`within_watermark` false and true, the event-time
//! column in the key or not, with and without a watermark), driven by the engine's micro-batch
//! and real-time drivers, against the brute-force reference of `reference/dedup.rs`
//! (SEMANTICS.md "Deduplication") on random, out-of-order input with many duplicates.

mod reference;

use eddy_engine::driver::{MicroBatchSequencer, RealTimeClock};
use eddy_engine::operator::{Deduplicate, DeduplicateConfig, Mode, Operator};
use eddy_engine::watermark::WatermarkTracker;
use eddy_engine::{Duration, Record, Timestamp};
use proptest::prelude::*;

use reference::compare::{same_multiset, show_row};
use reference::dedup::DedupQuery;
use reference::drive;
use reference::input::{AMOUNT, KEY, SEC, TS, arb_batches, arb_delay, arb_stream};

/// Deduplication columns: by key, by key and event time, by event time, by key and amount.
fn arb_key_cols() -> impl Strategy<Value = Vec<usize>> {
    prop_oneof![Just(vec![KEY]), Just(vec![KEY, TS]), Just(vec![TS]), Just(vec![KEY, AMOUNT])]
}

/// A query: `dropDuplicatesWithinWatermark` needs a watermark (Spark requires one).
fn arb_query() -> impl Strategy<Value = DedupQuery> {
    (arb_key_cols(), any::<bool>(), arb_delay(), 0i64..=10).prop_map(|(key_cols, within, delay, d2)| DedupQuery {
        key_cols,
        time_col: TS,
        within_watermark: within,
        delay: if within { Some(delay.unwrap_or(d2 * SEC)) } else { delay },
    })
}

fn engine(q: &DedupQuery, mode: Mode) -> Box<Deduplicate> {
    Box::new(Deduplicate::new(DeduplicateConfig {
        mode,
        key_columns: q.key_cols.clone(),
        within_watermark: q.within_watermark,
        watermark: q.delay.map(|d| (q.time_col, Duration(d))),
    }))
}

fn tracker(q: &DedupQuery) -> Option<(usize, WatermarkTracker)> {
    q.delay.map(|d| (q.time_col, WatermarkTracker::new(Duration(d))))
}

fn show(records: &[Record]) -> String {
    records.iter().map(|r| show_row(&r.values[..4])).collect::<Vec<_>>().join(" ")
}

/// Where to restart from a snapshot: nowhere, or before batch / record 1..8.
fn arb_restart() -> impl Strategy<Value = Option<usize>> {
    prop::option::weighted(0.5, 1usize..8)
}

proptest! {
    #![proptest_config(reference::input::config(256, "props_dedup"))]

    #[test]
    fn dedup_micro_batch_matches_reference(
        q in arb_query(), batches in arb_batches(2), restart in arb_restart()
    ) {
        let make = || -> Box<dyn Operator> { engine(&q, Mode::MicroBatch) };
        let input: Vec<(Vec<Record>, Timestamp)> =
            batches.iter().enumerate().map(|(i, b)| (b.clone(), Timestamp(i as i64 * SEC))).collect();
        let actual = drive::micro_batch(&make, MicroBatchSequencer::new(tracker(&q), None), &input, None, restart);
        let expected = q.micro_batch(&batches);
        for (i, e) in expected.iter().enumerate() {
            let width = batches[i][0].values.len();
            if let Err(msg) = same_multiset(e, &actual[i].1, width) {
                let input: Vec<String> = batches[..=i].iter().map(|b| show(b)).collect();
                return Err(TestCaseError::fail(format!(
                    "{q:?}\nrestart before batch {restart:?}\ninput batches:\n{}\nbatch {i}: {msg}",
                    input.join("\n")
                )));
            }
        }
        // A no-data batch, if one ran, passes nothing.
        for (_, rows) in &actual[expected.len()..] {
            prop_assert!(rows.is_empty(), "a no-data batch passed records: {:?}", rows);
        }
    }

    #[test]
    fn dedup_real_time_matches_reference(q in arb_query(), records in arb_stream(2), restart in arb_restart()) {
        let make = || -> Box<dyn Operator> { engine(&q, Mode::RealTime) };
        let input: Vec<(Record, Timestamp)> =
            records.iter().enumerate().map(|(i, r)| (r.clone(), Timestamp(i as i64 * SEC))).collect();
        let actual = drive::real_time(&make, RealTimeClock::new(tracker(&q), None), &input, None, restart);
        let expected = q.real_time(&records);
        for (i, e) in expected.iter().enumerate() {
            if let Err(msg) = same_multiset(e, &actual[i], records[i].values.len()) {
                return Err(TestCaseError::fail(format!(
                    "{q:?}\nrestart before record {restart:?}\ninput: {}\nstep {i}: {msg}",
                    show(&records[..=i])
                )));
            }
        }
    }
}
