//! What the exchange's tests (micro-batch and real-time) share: a chained query whose second
//! aggregate crosses the exchange, its input, the brute-force reference of its rows, and the
//! input routed to three partition actors as the source actor would.

use std::collections::{BTreeMap, BTreeSet};

use eddy_engine::plan::QueryPlan;
use eddy_engine::steps::Applied;
use eddy_engine::value::Value;
use eddy_engine::{Record, Timestamp};

use crate::routing::Router;

/// One second, in µs.
pub(super) const S: i64 = 1_000_000;
/// Partition actors of the tests.
pub(super) const PARTITIONS: usize = 3;

/// The plan of the query, in `mode` ("micro-batch" or "real-time"): per 10 s window sliding by
/// 5 s, bids per auction, then per window the distinct auctions and the bids (grouped by the
/// window alone: an exchange).
pub(super) fn plan(mode: &str) -> QueryPlan {
    let text = format!(
        r#"
name = "exchange-test"
mode = "{mode}"
[[source]]
name = "bids"
type = "files"
path = "in"
schema = "auction BIGINT, ts TIMESTAMP"
watermark = {{ column = "ts", delay = "0 seconds" }}
[query]
sql = """
SELECT window, count(*) AS auctions, sum(num) AS bids
FROM (SELECT window(ts, '10 seconds', '5 seconds') AS window, auction, count(*) AS num
      FROM bids GROUP BY 1, 2)
GROUP BY window
"""
output_mode = "append"
[sink]
type = "stdout"
"#
    );
    QueryPlan::new(&eddy_sql::parse_pipeline_str(&text).unwrap()).unwrap()
}

/// Bid `i`: auction `i % 40,000` at `i` x 200 µs (24 s for 120,000 bids).
pub(super) fn bid(i: i64) -> (i64, i64) {
    (i % 40_000, i * 200)
}

/// The reference rows of `bids`, as `"start auctions bids"`: per window [start, start + 10 s)
/// with start a multiple of 5 s, written from the query, not the engine.
pub(super) fn expected(bids: &[(i64, i64)]) -> BTreeSet<String> {
    let mut reference: BTreeMap<i64, (BTreeSet<i64>, i64)> = BTreeMap::new();
    for &(auction, ts) in bids {
        let last = ts.div_euclid(5 * S) * 5 * S;
        for start in [last - 5 * S, last] {
            let w = reference.entry(start).or_default();
            w.0.insert(auction);
            w.1 += 1;
        }
    }
    reference.iter().map(|(start, (auctions, n))| format!("{start} {} {}", auctions.len(), n)).collect()
}

/// `bids` as records of the plan's source steps, routed to [`PARTITIONS`] partition actors.
pub(super) fn routed(plan: &QueryPlan, bids: &[(i64, i64)]) -> Vec<Vec<Record>> {
    let mut records: Vec<Vec<Record>> = (0..PARTITIONS).map(|_| Vec::new()).collect();
    let router = Router::new(plan.routing_columns(), PARTITIONS);
    for &(auction, ts) in bids {
        let r = Record::new(vec![Value::Long(auction), Value::Timestamp(Timestamp(ts))]);
        let r = match plan.source_steps.apply(r) {
            Applied::Keep(r) => r,
            _ => panic!("the source steps dropped a bid"),
        };
        records[router.route(&r).0].push(r);
    }
    records
}

/// The rows the partition actors' threads returned (each with its count of full sends), as
/// [`expected`] writes them, each checked to come once; and the full sends of all.
pub(super) fn joined(handles: Vec<std::thread::JoinHandle<(Vec<eddy_engine::Row>, u64)>>) -> (BTreeSet<String>, u64) {
    let mut got = BTreeSet::new();
    let mut full = 0;
    for h in handles {
        let (rows, full_sends) = h.join().unwrap();
        full += full_sends;
        for row in rows {
            let (Value::Window { start, .. }, Value::Long(auctions), Value::Long(n)) = (&row[0], &row[1], &row[2])
            else {
                panic!("{row:?}")
            };
            assert!(got.insert(format!("{} {auctions} {n}", start.0)), "twice: {row:?}");
        }
    }
    (got, full)
}
