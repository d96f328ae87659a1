//! An aggregation over an aggregating subquery (SQL.md "Chained aggregations", SEMANTICS.md
//! "Several stateful operators (chained)"): its planning onto two chained window aggregates,
//! Spark's refusals, and when the chain must run in one partition actor. Expected names, types
//! and refusals are Spark 4.3's, written by hand.

use eddy_engine::DataType;
use eddy_engine::plan::QueryPlan;
use eddy_engine::spec::{OutputMode, Pipeline, QuerySpec, SpecError, WindowSpec};

/// A micro-batch pipeline over `bids` (watermark 10 s on `ts`) whose query is `sql`, with
/// `output_mode` if given.
fn pipeline_with(sql: &str, output_mode: Option<&str>) -> Result<Pipeline, SpecError> {
    let mode = output_mode.map(|m| format!("output_mode = \"{m}\"\n")).unwrap_or_default();
    let text = format!(
        "name = \"p\"\nmode = \"micro-batch\"\n[[source]]\nname = \"bids\"\ntype = \"files\"\npath = \"in\"\n\
         schema = \"auction STRING, bidder STRING, price BIGINT, ts TIMESTAMP\"\n\
         watermark = {{ column = \"ts\", delay = \"10 seconds\" }}\n\
         [query]\nsql = \"\"\"\n{sql}\"\"\"\n{mode}[sink]\ntype = \"files\"\npath = \"out\"\n"
    );
    eddy_sql::parse_pipeline_str(&text)
}

fn pipeline(sql: &str) -> Pipeline {
    pipeline_with(sql, Some("append")).unwrap_or_else(|e| panic!("{sql}: {e}"))
}

fn refusal(sql: &str, output_mode: Option<&str>) -> SpecError {
    match pipeline_with(sql, output_mode) {
        Err(e) => e,
        Ok(p) => panic!("{sql}: expected a refusal, got {p:?}"),
    }
}

const Q5: &str = "SELECT window, max_by(auction, num) AS auction, max(num) AS num
FROM (SELECT window(ts, '10 seconds', '2 seconds') AS window, auction, count(*) AS num FROM bids GROUP BY 1, 2)
GROUP BY window";

#[test]
fn nexmark_q5_plans_a_count_per_auction_then_max_by_per_window_in_append_mode() {
    let p = pipeline(Q5);
    let QuerySpec::WindowAggregate { group_by, window, output_mode, .. } = &p.query else { panic!("{p:?}") };
    assert_eq!(group_by, &["auction".to_string()]);
    assert!(matches!(window, Some(WindowSpec::Sliding { .. })));
    assert_eq!(*output_mode, OutputMode::Append);
    let [then] = p.then.as_slice() else { panic!("one chained query: {:?}", p.then) };
    let QuerySpec::WindowAggregate { group_by, window, output_mode, measures } = &then.query else { panic!() };
    // grouped by the inner's window itself, finalised when the watermark passes its end
    assert_eq!(group_by, &["window".to_string()]);
    assert_eq!(window, &None);
    assert_eq!(*output_mode, OutputMode::Append);
    assert_eq!(then.watermark.column, "window");
    let m: Vec<&str> = measures.iter().map(|m| m.output_name.as_str()).collect();
    assert_eq!(m, ["max_by(auction, num)", "max(num)"]);
    let out: Vec<(String, DataType)> = p.output_schema().into_iter().map(|f| (f.name, f.data_type)).collect();
    let expected = [("window", DataType::Window), ("auction", DataType::String), ("num", DataType::Long)];
    assert_eq!(out, expected.map(|(n, t)| (n.to_string(), t)));
}

#[test]
fn a_window_of_the_inner_window_windows_its_window_time() {
    let p = pipeline(
        "SELECT window(window, '1 minute') AS window, auction, sum(n) AS n \
         FROM (SELECT window(ts, '10 seconds') AS window, auction, count(*) AS n FROM bids GROUP BY 1, 2) AS w \
         GROUP BY window(window, '1 minute'), auction",
    );
    let QuerySpec::WindowAggregate { window, .. } = &p.then[0].query else { panic!("{p:?}") };
    assert!(matches!(window, Some(WindowSpec::Tumbling { column, .. }) if column == "window"), "{window:?}");
}

#[test]
fn a_window_of_window_time_is_the_same_window_and_other_times_of_the_window_are_refused() {
    // Spark's TimeWindowing rewrites window(window, size) to window(window_time(window), size)
    let by_window_time = pipeline(
        "SELECT window(window_time(w.window), '1 minute', '20 seconds') AS w2, auction, sum(n) AS n \
         FROM (SELECT window(ts, '10 seconds') AS window, auction, count(*) AS n FROM bids GROUP BY 1, 2) AS w \
         GROUP BY 1, 2",
    );
    let then = &by_window_time.then[0];
    let QuerySpec::WindowAggregate { window, .. } = &then.query else { panic!("{by_window_time:?}") };
    assert!(matches!(window, Some(WindowSpec::Sliding { column, .. }) if column == "window"), "{window:?}");
    assert_eq!(then.watermark.column, "window");
    let text = eddy_engine::explain::explain(&by_window_time);
    assert!(text.contains("every 20 seconds on window (at its window_time, the end minus 1 µs)"), "{text}");
    // window.end or window.start carry no watermark in Spark 4.3: STREAMING_OUTPUT_MODE.UNSUPPORTED_OPERATION
    for (time, shown) in [
        ("window.end", "window.end"),
        ("window.start", "window.start"),
        ("window.end - INTERVAL 1 SECOND", "window.end - INTERVAL '01' SECOND"),
    ] {
        let e = refusal(
            &format!(
                "SELECT window({time}, '1 minute') AS w2, sum(n) AS n \
                 FROM (SELECT window(ts, '10 seconds') AS window, count(*) AS n FROM bids GROUP BY 1) GROUP BY 1"
            ),
            Some("append"),
        );
        assert!(e.given.contains(&format!("{shown} as the window's time over the subquery's window")), "{e}");
        assert!(e.given.contains("STREAMING_OUTPUT_MODE.UNSUPPORTED_OPERATION"), "{e}");
        assert!(e.allowed.contains("window(window_time(window), size)"), "{e}");
    }
}

#[test]
fn grouped_by_window_time_the_key_is_the_event_time() {
    // Spark's ResolveWindowTime gives window_time(window) the window's watermark: append runs
    let p = pipeline(
        "SELECT window_time(window) AS t, count(*) AS auctions \
         FROM (SELECT window(ts, '10 seconds') AS window, auction, count(*) AS n FROM bids GROUP BY 1, 2) \
         GROUP BY window_time(window)",
    );
    let then = &p.then[0];
    let QuerySpec::WindowAggregate { group_by, window, .. } = &then.query else { panic!("{p:?}") };
    assert_eq!(group_by, &["window_time(window)".to_string()]);
    assert_eq!(window, &None);
    assert_eq!(then.watermark.column, "window_time(window)");
    let out: Vec<(String, DataType)> = p.output_schema().into_iter().map(|f| (f.name, f.data_type)).collect();
    assert_eq!(out, [("t".to_string(), DataType::Timestamp), ("auctions".to_string(), DataType::Long)]);
}

#[test]
fn a_chain_keyed_by_the_inner_key_is_forward_and_one_keyed_by_window_alone_is_exchanged() {
    let by_auction = pipeline(
        "SELECT window(window, '1 minute') AS window, auction, sum(n) AS n \
         FROM (SELECT window(ts, '10 seconds') AS window, auction, count(*) AS n FROM bids GROUP BY 1, 2) AS w \
         GROUP BY 1, 2",
    );
    let plan = QueryPlan::new(&by_auction).unwrap();
    assert_eq!((plan.single_partition(), plan.exchange()), (None, None));
    // q5's max per window is keyed by the window alone: its input is exchanged by window
    let q5 = QueryPlan::new(&pipeline(Q5)).unwrap();
    assert_eq!((q5.single_partition(), q5.exchange()), (None, Some(1)));
    // eddy explain shows each edge
    let text = eddy_engine::explain::explain(&pipeline(Q5));
    assert!(text.contains("chained window aggregate, exchange edge (keyed otherwise"), "{text}");
    assert!(text.contains("by the hash of its own key"), "{text}");
    let text = eddy_engine::explain::explain(&by_auction);
    assert!(text.contains("forward edge (keyed by the operator before's key"), "{text}");
    // a single aggregation never needs one
    let single = pipeline("SELECT window(ts, '10 seconds') AS window, count(*) AS n FROM bids GROUP BY 1");
    let plan = QueryPlan::new(&single).unwrap();
    assert_eq!((plan.single_partition(), plan.exchange()), (None, None));
}

#[test]
fn spark_refuses_a_chain_outside_append_mode_and_inner_queries_that_do_not_aggregate() {
    for mode in [None, Some("update"), Some("complete")] {
        let e = refusal(Q5, mode);
        assert_eq!(e.field, "query.output_mode", "{e}");
        assert!(e.allowed.contains("append"), "{e}");
    }
    let e = refusal(
        "SELECT count(*) AS n FROM (SELECT auction, ts FROM bids WHERE price > 1) GROUP BY auction",
        Some("append"),
    );
    assert_eq!(e.field, "query.sql");
    // a subquery without GROUP BY stays refused where it stands, as other subqueries
    assert!(e.given.contains("a subquery in FROM at 1:"), "{e}");
    let e = refusal(
        "SELECT auction, max(n) FROM (SELECT window(ts, '10 seconds'), auction, count(*) AS n FROM bids GROUP BY 1, 2) \
         GROUP BY auction",
        Some("append"),
    );
    // the outer grouped by no window nor the inner's window: append without a window, as Spark
    assert_eq!(e.field, "query.output_mode", "{e}");
    let e = refusal(
        "SELECT auction, sum(n) FROM (SELECT auction, count(*) AS n FROM bids GROUP BY window(ts, '10 seconds'), auction) \
         GROUP BY auction",
        Some("append"),
    );
    assert!(e.given.contains("no window"), "{e}");
}
