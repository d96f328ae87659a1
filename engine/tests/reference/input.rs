//! Test input for the property tests: records of one fixed schema over small domains (so keys
//! collide and times tie), proptest strategies, and the translation of reference measures into
//! the engine's [`AggregateFn`]s.
//!
//! Schema: 0 `key` STRING (`k0`..`k3`), 1 `ts` TIMESTAMP (whole seconds, about 0..60 s, a whole
//! case possibly shifted before 1970), 2 `amount` BIGINT (nullable), 3 `price` DOUBLE (quarters,
//! nullable), 4 `arrival` TIMESTAMP (replay-clock column of rolling windows), 5 `gap` STRING (a
//! session gap, see [`GAP`]).

use eddy_engine::aggregate::{AggKind, AggregateFn};
use eddy_engine::{DataType, Record, Timestamp, Value};
use proptest::prelude::*;

use super::agg::Agg;

/// Column of the key.
pub const KEY: usize = 0;
/// Column of the event time.
pub const TS: usize = 1;
/// BIGINT measure column.
pub const AMOUNT: usize = 2;
/// DOUBLE measure column.
pub const PRICE: usize = 3;
/// Arrival (replay clock) column.
pub const ARRIVAL: usize = 4;
/// Session gap column: STRING `"<amount> seconds"` (null when `amount` is; zero and negative
/// gaps occur).
pub const GAP: usize = 5;

/// One second in µs.
pub const SEC: i64 = 1_000_000;

/// A record of the test schema (times in whole seconds).
pub fn record(key: u8, ts_s: i64, amount: Option<i64>, price_quarters: Option<i64>, arrival_s: i64) -> Record {
    Record::new(vec![
        Value::Str(format!("k{key}").into()),
        Value::Timestamp(Timestamp(ts_s * SEC)),
        amount.map_or(Value::Null, Value::Long),
        price_quarters.map_or(Value::Null, |q| Value::Double(q as f64 / 4.0)),
        Value::Timestamp(Timestamp(arrival_s * SEC)),
        amount.map_or(Value::Null, |a| Value::Str(format!("{a} seconds").into())),
    ])
}

/// The raw draw of one record: key, time jitter (s), amount, price (quarters).
pub type RawRecord = (u8, i64, Option<i64>, Option<i64>);

/// A raw record: 1..=`keys` keys, jitter 0..20 s, small nullable amounts and prices.
pub fn arb_raw(keys: u8) -> impl Strategy<Value = RawRecord> {
    (0..keys, 0i64..20, prop::option::weighted(0.85, -5i64..20), prop::option::weighted(0.85, -40i64..40))
}

/// Event time of the `i`-th record of a stream: drifts 2 s per record, out of order by up to
/// 20 s, clamped to >= 0.
pub fn drift_time(i: usize, jitter_s: i64) -> i64 {
    (2 * i as i64 + jitter_s - 10).max(0)
}

/// A shift of every time of a case: none, a little before the epoch, or ~11.6 days before it
/// (window alignment must use floor modulo before 1970).
pub fn arb_shift() -> impl Strategy<Value = i64> {
    prop_oneof![2 => Just(0i64), 1 => Just(-37), 1 => Just(-1_000_003)]
}

/// Micro-batch input: 1..=5 non-empty batches of 1..=6 records, event times drifting forward
/// across the whole stream (arrival column = event time).
pub fn arb_batches(keys: u8) -> impl Strategy<Value = Vec<Vec<Record>>> {
    (prop::collection::vec(prop::collection::vec(arb_raw(keys), 1..=6), 1..=5), arb_shift()).prop_map(|(raw, shift)| {
        let mut i = 0;
        raw.into_iter()
            .map(|batch| {
                batch
                    .into_iter()
                    .map(|(k, j, a, p)| {
                        let t = drift_time(i, j) + shift;
                        i += 1;
                        record(k, t, a, p, t)
                    })
                    .collect()
            })
            .collect()
    })
}

/// Real-time input: 1..=24 records, event times drifting forward (arrival column = event time).
pub fn arb_stream(keys: u8) -> impl Strategy<Value = Vec<Record>> {
    (prop::collection::vec(arb_raw(keys), 1..=24), arb_shift()).prop_map(|(raw, shift)| {
        raw.into_iter()
            .enumerate()
            .map(|(i, (k, j, a, p))| record(k, drift_time(i, j) + shift, a, p, drift_time(i, j) + shift))
            .collect()
    })
}

/// A watermark delay: none, or 0..=10 s.
pub fn arb_delay() -> impl Strategy<Value = Option<i64>> {
    prop::option::weighted(0.8, (0i64..=10).prop_map(|s| s * SEC))
}

/// The engine's measure for a reference one (over the test schema).
pub fn engine_agg(a: &Agg) -> AggregateFn {
    let input_type = |c: Option<usize>| match c {
        Some(PRICE) => DataType::Double,
        Some(TS) | Some(ARRIVAL) => DataType::Timestamp,
        _ => DataType::Long,
    };
    let kind = match a {
        Agg::CountStar => AggKind::CountStar,
        Agg::Count(_) => AggKind::Count,
        Agg::Sum(_) => AggKind::Sum,
        Agg::Avg(_) => AggKind::Avg,
        Agg::Min(_) => AggKind::Min,
        Agg::Max(_) => AggKind::Max,
        Agg::StddevSamp(_) => AggKind::StddevSamp,
        Agg::Percentile(_, p) => AggKind::ApproxPercentile { percentages: vec![*p], list: false, accuracy: 10_000 },
        Agg::Percentiles(_, ps) => AggKind::ApproxPercentile { percentages: ps.clone(), list: true, accuracy: 10_000 },
    };
    AggregateFn { kind, input: a.column(), input_type: input_type(a.column()), name: String::new() }
}

/// The proptest configuration of a property test: `cases` cases (or `PROPTEST_CASES` when set,
/// for a longer search), failures persisted in `engine/proptest-regressions/<name>.txt`
/// (committed, replayed first on every run).
pub fn config(cases: u32, name: &'static str) -> ProptestConfig {
    let cases = std::env::var("PROPTEST_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(cases);
    let path: &'static str = Box::leak(format!("proptest-regressions/{name}.txt").into_boxed_str());
    ProptestConfig {
        cases,
        failure_persistence: Some(Box::new(proptest::test_runner::FileFailurePersistence::Direct(path))),
        ..ProptestConfig::default()
    }
}
