//! The benchmark switch `RunOptions::force_exchange`: a chained aggregation whose key holds the
//! routing key (a forward edge would do) is run through an exchange instead, its input rows
//! re-keyed by its whole group key between two partition actors. The rows must be those of the
//! forward edge (the switch changes how rows move, never what is computed), at parallelism 1
//! and 2; a query with no such edge is refused, naming the field.
//!
//! The source is the real Nexmark generator; the sink is a stand-in written for this test that
//! collects the rows.

use std::sync::{Arc, Mutex};

use eddy_actors::{RunOptions, RuntimeError, run_pipeline};
use eddy_connectors::{ConnectorError, Sink};
use eddy_engine::plan::QueryPlan;

/// Test stand-in: collects every row written.
struct Collect(Arc<Mutex<Vec<String>>>);

impl Sink for Collect {
    fn write(&mut self, _: u64, line: &str, _: Option<&str>) -> Result<(), ConnectorError> {
        self.0.lock().map_err(|_| ConnectorError::External("poisoned".into()))?.push(line.to_string());
        Ok(())
    }

    fn commit(&mut self, _: u64) -> Result<(), ConnectorError> {
        Ok(())
    }
}

/// Bids per auction per sliding window, then per (window, auction): keyed by the routing key
/// (auction) and more, so the second edge is forward unless forced.
fn pipeline(group_by: &str, parallelism: usize) -> eddy_engine::spec::Pipeline {
    let text = format!(
        r#"
name = "forced-exchange"
mode = "real-time"
parallelism = {parallelism}
[source]
type = "nexmark"
table = "bid"
events = 40000
seed = 5
[watermark]
column = "date_time"
delay = "1 second"
[query]
sql = """
SELECT {group_by}, sum(bids) AS bids, max(top) AS top
FROM (SELECT window(date_time, '10 seconds', '2 seconds') AS window, auction, count(*) AS bids, max(price) AS top
      FROM source GROUP BY 1, 2)
GROUP BY {group_by}
"""
output_mode = "append"
[sink]
type = "stdout"
"#
    );
    eddy_sql::parse_pipeline_str(&text).expect("the test's pipeline")
}

fn rows(group_by: &str, parallelism: usize, force_exchange: bool) -> Result<Vec<String>, RuntimeError> {
    let rows = Arc::new(Mutex::new(Vec::new()));
    let opts =
        RunOptions { sink_override: Some(Box::new(Collect(rows.clone()))), force_exchange, ..RunOptions::default() };
    run_pipeline(&pipeline(group_by, parallelism), opts)?;
    let mut rows = rows.lock().expect("rows").clone();
    rows.sort();
    Ok(rows)
}

#[test]
fn the_planner_marks_the_forward_edge_exchange_only_when_forced() {
    let mut plan = QueryPlan::new(&pipeline("window, auction", 2)).unwrap();
    assert_eq!(plan.exchange(), None, "keyed by the routing key and the window: a forward edge");
    assert!(plan.force_exchange());
    assert_eq!(plan.exchange(), Some(1));
    // q5's shape has its exchange already: nothing to force
    let mut q5 = QueryPlan::new(&pipeline("window", 2)).unwrap();
    assert_eq!(q5.exchange(), Some(1));
    assert!(!q5.force_exchange());
}

#[test]
fn a_chain_forced_through_the_exchange_gives_the_rows_of_its_forward_edge() {
    let forward = rows("window, auction", 2, false).unwrap();
    assert!(forward.len() > 100, "{} rows", forward.len());
    assert_eq!(rows("window, auction", 2, true).unwrap(), forward);
    assert_eq!(rows("window, auction", 1, false).unwrap(), forward);
    assert_eq!(rows("window, auction", 1, true).unwrap(), forward);
}

#[test]
fn forcing_an_exchange_where_there_is_no_forward_edge_to_force_is_refused_naming_the_query() {
    let e = rows("window", 2, true).unwrap_err();
    assert!(matches!(&e, RuntimeError::Unsupported { field, .. } if field == "query"), "{e}");
}
