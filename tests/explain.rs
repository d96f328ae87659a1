//! `eddy explain PIPELINE.toml` prints the plan (SQL.md, last paragraph): each step in order
//! with its output columns, the partition key and the thread each step runs on; a wrong file
//! exits 2 naming the field, as `eddy validate`. Expected text written by hand.

use std::path::Path;
use std::process::{Command, Output};

fn eddy(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_eddy")).args(args).current_dir(dir).env("EDDY_LOG", "warn").output().unwrap()
}

fn explain(pipeline: &str) -> Output {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("p.toml"), pipeline).unwrap();
    eddy(tmp.path(), &["explain", "p.toml"])
}

const SQL: &str = r#"
name = "sql-tumbling"
mode = "micro-batch"
parallelism = 2
[source]
type = "files"
path = "input"
format = "json"
schema = "user_id STRING, amount DOUBLE, event_time TIMESTAMP"
filter = "amount > 0"
[watermark]
column = "event_time"
delay = "10 minutes"
[query]
sql = """
SELECT window(event_time, '5 minutes') AS window, user_id, sum(amount) AS total, count(*) AS txn_count
FROM source
WHERE user_id <> 'bot' AND event_time > TIMESTAMP '2024-01-01 00:00:00'
GROUP BY window(event_time, '5 minutes'), user_id
HAVING count(*) > 1
"""
output_mode = "append"
[sink]
type = "files"
path = "output"
select = ["window.start AS window_start", "window.end AS window_end", "user_id", "total", "txn_count"]
"#;

#[test]
fn explain_prints_each_step_of_a_sql_query_with_its_columns_key_and_thread() {
    let out = explain(SQL);
    assert_eq!(out.status.code(), Some(0), "stderr: {}", String::from_utf8_lossy(&out.stderr));
    let expected = "\
pipeline sql-tumbling: micro-batch, parallelism 2, clock system
on the source actor's thread:
  1. source: files ./input, json decoder
    out: user_id STRING, amount DOUBLE, event_time TIMESTAMP
  2. filter (source.filter): (amount > 0)
    out: user_id STRING, amount DOUBLE, event_time TIMESTAMP
  3. WHERE before the watermark (query.sql): (NOT (user_id = bot))
    out: user_id STRING, amount DOUBLE, event_time TIMESTAMP
  4. keys and measure inputs (query.sql): the columns as they are (nothing computed)
    out: user_id STRING, amount DOUBLE, event_time TIMESTAMP
  5. watermark on event_time, delay 10 minutes
    out: user_id STRING, amount DOUBLE, event_time TIMESTAMP
  6. routing by partition key (user_id) to the partition actor owning its key range
    out: user_id STRING, amount DOUBLE, event_time TIMESTAMP
chained on the partition actor's thread:
  7. WHERE after the watermark (query.sql): (event_time > TIMESTAMP '2024-01-01 00:00:00')
    out: user_id STRING, amount DOUBLE, event_time TIMESTAMP
  8. window aggregate: key (user_id), tumbling window 5 minutes on event_time, measures sum(amount) AS sum(amount), count(*) AS count(1), output mode append, watermark max(event_time) - 10 minutes
    out: window STRUCT<start: TIMESTAMP, end: TIMESTAMP>, user_id STRING, sum(amount) DOUBLE, count(1) BIGINT
  9. HAVING (query.sql): (count(1) > 1)
    out: window STRUCT<start: TIMESTAMP, end: TIMESTAMP>, user_id STRING, sum(amount) DOUBLE, count(1) BIGINT
  10. select list (query.sql): window, user_id, sum(amount) AS total, count(1) AS txn_count
    out: window STRUCT<start: TIMESTAMP, end: TIMESTAMP>, user_id STRING, total DOUBLE, txn_count BIGINT
  11. select (sink.select): window.start AS window_start, window.end AS window_end, user_id, total, txn_count
    out: window_start TIMESTAMP, window_end TIMESTAMP, user_id STRING, total DOUBLE, txn_count BIGINT
  12. sink: files ./output
    out: window_start TIMESTAMP, window_end TIMESTAMP, user_id STRING, total DOUBLE, txn_count BIGINT
";
    assert_eq!(String::from_utf8_lossy(&out.stdout), expected);
}

const STRUCTURED: &str = r#"
name = "rolling"
mode = "real-time"
parallelism = 1
[source]
type = "stdin"
format = "csv"
schema = "user_id STRING, revenue DOUBLE, event_time TIMESTAMP"
select = ["*", "revenue * 2 AS doubled"]
[query]
type = "rolling_window"
partition_by = ["user_id"]
order_by = "event_time"
frontier = { delay = "1 minute" }
measures = [{ agg = "sum", column = "doubled", over = "1 hour", alias = "rolling_revenue" }]
[sink]
type = "kafka"
bootstrap_servers = "127.0.0.1:9092"
topic = "rolling-revenue"
select = ["user_id AS key", "to_json(struct(__frontier, rolling_revenue)) AS value"]
"#;

#[test]
fn explain_prints_a_structured_rolling_window_chained_on_the_source_thread() {
    let out = explain(STRUCTURED);
    assert_eq!(out.status.code(), Some(0), "stderr: {}", String::from_utf8_lossy(&out.stderr));
    let expected = "\
pipeline rolling: real-time, parallelism 1, clock system
on the source actor's thread:
  1. source: stdin, csv decoder
    out: user_id STRING, revenue DOUBLE, event_time TIMESTAMP
  2. select (source.select): user_id, revenue, event_time, (revenue * 2) AS doubled
    out: user_id STRING, revenue DOUBLE, event_time TIMESTAMP, doubled DOUBLE
  3. no watermark
    out: user_id STRING, revenue DOUBLE, event_time TIMESTAMP, doubled DOUBLE
  4. routing by partition key (user_id) to the partition actor owning its key range
    out: user_id STRING, revenue DOUBLE, event_time TIMESTAMP, doubled DOUBLE
chained on the partition actor, which runs on the source actor's thread (real-time, parallelism 1):
  5. rolling window: key (user_id), order by event_time, frontier processing time - 1 minute as __frontier, measures sum(doubled) over 1 hour AS rolling_revenue
    out: user_id STRING, __frontier TIMESTAMP, rolling_revenue DOUBLE
  6. select (sink.select): user_id AS key, to_json(struct(__frontier, rolling_revenue)) AS value
    out: key STRING, value STRING
  7. sink: kafka rolling-revenue at 127.0.0.1:9092
    out: key STRING, value STRING
";
    assert_eq!(String::from_utf8_lossy(&out.stdout), expected);
}

#[test]
fn explain_of_a_wrong_file_exits_2_naming_the_field() {
    let out = explain(&SQL.replace("sum(amount) AS total", "sum(nope) AS total"));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "stderr: {err}");
    assert!(err.contains("query.sql") && err.contains("nope"), "{err}");
    assert!(out.stdout.is_empty(), "nothing is printed on stdout: {}", String::from_utf8_lossy(&out.stdout));
}

#[test]
fn explain_shows_a_stream_static_join_with_its_table_keys_and_joined_columns() {
    let pipeline = r#"
name = "enriched"
mode = "micro-batch"
parallelism = 2
[[source]]
name = "orders"
type = "files"
path = "input"
schema = "order_id STRING, sku STRING, qty INT"
[[table]]
name = "prices"
type = "files"
path = "prices.csv"
format = "csv"
schema = "sku STRING, price DOUBLE"
refresh = "30 seconds"
[query]
sql = "SELECT o.order_id, o.qty * p.price AS total FROM orders o LEFT JOIN prices p ON o.sku = p.sku"
[sink]
type = "stdout"
"#;
    let out = explain(pipeline);
    assert_eq!(out.status.code(), Some(0), "stderr: {}", String::from_utf8_lossy(&out.stderr));
    let expected = "\
pipeline enriched: micro-batch, parallelism 2, clock system
on the source actor's thread:
  1. source: files ./input, json decoder
    out: order_id STRING, sku STRING, qty INT
  2. no watermark
    out: order_id STRING, sku STRING, qty INT
  3. stream-static left outer join (broadcast hash join on the source actor) with table prices (files ./prices.csv, csv, sku STRING, price DOUBLE, re-read when changed, checked every 30 seconds, at most 268435456 bytes) on sku = prices.sku
    out: order_id STRING, sku STRING, qty INT, p.sku STRING, price DOUBLE
  4. routing: no partition key (the operator keeps no keyed state)
    out: order_id STRING, sku STRING, qty INT, p.sku STRING, price DOUBLE
chained on the partition actor's thread:
  5. forward: each record once, no state
    out: order_id STRING, sku STRING, qty INT, p.sku STRING, price DOUBLE
  6. select list (query.sql): order_id, (qty * price) AS total
    out: order_id STRING, total DOUBLE
  7. sink: stdout
    out: order_id STRING, total DOUBLE
";
    assert_eq!(String::from_utf8_lossy(&out.stdout), expected);
}

#[test]
fn explain_shows_an_aggregation_after_a_stream_stream_join_its_edge_and_the_watermark_held_back() {
    let case = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/cases-sql/sql-stream-join-agg-inner-tumbling/pipeline.toml"),
    )
    .unwrap();
    let out = explain(&case);
    assert_eq!(out.status.code(), Some(0), "stderr: {}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8_lossy(&out.stdout);
    let tail: Vec<&str> = text.lines().skip_while(|l| !l.contains("stream-stream join")).collect();
    let expected = [
        "  11. stream-stream join: Inner, 1 key(s), right time - left time in [0 seconds, 30 seconds], the sources' combined watermark",
        "    out: id STRING, lt TIMESTAMP, lv BIGINT, rid STRING, rt TIMESTAMP, rv BIGINT",
        "  12. keys and measure inputs (query.sql): the columns as they are (nothing computed)",
        "    out: id STRING, lt TIMESTAMP, lv BIGINT, rid STRING, rt TIMESTAMP, rv BIGINT",
        "  13. chained window aggregate, forward edge (keyed by the operator before's key: same partition actor): key (id), tumbling window 20 seconds on lt, measures count(*) AS count(1), sum(rv) AS sum(rv), output mode append, the watermark forwarded by the join before, held back by 30001 milliseconds (its time range plus 1 ms, as Spark's join forwards it), on lt (late input and finalisation)",
        "    out: window STRUCT<start: TIMESTAMP, end: TIMESTAMP>, id STRING, count(1) BIGINT, sum(rv) BIGINT",
        "  14. select list (query.sql): window, id, count(1) AS pairs, sum(rv) AS rv",
    ];
    assert_eq!(tail.get(..expected.len()), Some(&expected[..]), "{text}");
    // grouped by a right column instead of the join key: the aggregation's input is exchanged
    let other = case
        .replace("l.id, count(*)", "r.rv AS value, count(*)")
        .replace("GROUP BY window(l.lt, '20 seconds'), l.id", "GROUP BY window(l.lt, '20 seconds'), r.rv");
    let out = explain(&other);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "stderr: {}", String::from_utf8_lossy(&out.stderr));
    assert!(
        text.contains("chained window aggregate, exchange edge (keyed otherwise than the operator before"),
        "{text}"
    );
}

/// The pipeline file of the golden case `name` (tests/cases-sql).
fn sql_case(name: &str) -> String {
    std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/cases-sql").join(name).join("pipeline.toml"),
    )
    .unwrap()
}

#[test]
fn explain_shows_a_union_in_append_mode_as_an_aggregation_keyed_by_every_column() {
    let out = explain(&sql_case("sql-union-distinct-append"));
    assert_eq!(out.status.code(), Some(0), "stderr: {}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8_lossy(&out.stdout);
    let tail: Vec<&str> = text.lines().skip_while(|l| !l.contains("routing")).collect();
    let expected = [
        "  8. routing by partition key (user, page, ts) to the partition actor owning its key range",
        "    out: user STRING, page STRING, ts TIMESTAMP",
        "chained on the partition actor's thread:",
        "  9. window aggregate: key (user, page, ts), no window, measures none (the distinct keys), output mode append, the sources' combined watermark",
        "    out: user STRING, page STRING, ts TIMESTAMP",
        "  10. sink: files ./output",
    ];
    assert_eq!(tail.get(..expected.len()), Some(&expected[..]), "{text}");
}

#[test]
fn explain_shows_a_select_over_a_global_aggregate_as_its_row_projected() {
    let out = explain(&sql_case("sql-select-over-global-aggregate"));
    assert_eq!(out.status.code(), Some(0), "stderr: {}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8_lossy(&out.stdout);
    let tail: Vec<&str> = text.lines().skip_while(|l| !l.contains("routing")).collect();
    let expected = [
        "  5. routing: no partition key: every record to one partition actor (an aggregation without key columns)",
        "    out: k STRING, v INT, ts TIMESTAMP",
        "chained on the partition actor's thread:",
        "  6. window aggregate: key (), no window, measures count(*) AS count(1), sum(v) AS sum(v), max(k) AS max(k), output mode update, no watermark",
        "    out: count(1) BIGINT, sum(v) BIGINT, max(k) STRING",
        "  7. select list (query.sql): count(1) AS n, sum(v) AS total, max(k) AS mk",
        "    out: n BIGINT, total BIGINT, mk STRING",
    ];
    assert_eq!(tail.get(..expected.len()), Some(&expected[..]), "{text}");
    // then the outer WHERE (n >= 0) and the outer select list on each row
    let outer = "select list (query.sql): (n * 2) AS m, total, upper(mk) AS mk, (n > 2) AS many";
    assert!(tail.iter().any(|l| l.ends_with(outer)), "{text}");
}

#[test]
fn explain_shows_a_join_key_compared_as_the_wider_type_the_table_filter_and_the_condition_beside_the_keys() {
    let out = explain(&sql_case("sql-static-join-on-table-condition"));
    assert_eq!(out.status.code(), Some(0), "stderr: {}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains(
            " (its rows where active) on sku = prices.sku, each matching row joined where (qty >= min_qty)\n"
        ),
        "{text}"
    );
    let out = explain(&sql_case("sql-static-join-string-number-key"));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("on k = t.n (compared as BIGINT)\n"), "{text}");
}

#[test]
fn explain_shows_a_stream_stream_join_key_cast_to_the_type_it_compares_as() {
    // lv INT against rv DOUBLE: the left key is cast, the right one is not
    let out = explain(&sql_case("sql-stream-join-int-double-key"));
    assert_eq!(out.status.code(), Some(0), "stderr: {}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("lefts: select (query.sql JOIN): CAST(lv AS DOUBLE) AS __join_key0, __join_side,"), "{text}");
    assert!(text.contains("rights: select (query.sql JOIN): rv AS __join_key0, __join_side,"), "{text}");
}

#[test]
fn a_table_condition_reading_the_processing_time_stays_beside_the_keys() {
    // evaluated once per table version it would be fixed at the read: it joins row by row
    let p = sql_case("sql-static-join-on-table-condition")
        .replace("AND p.active", "AND coalesce(p.active, current_date() > DATE '2000-01-01')");
    assert!(p.contains("current_date()"), "{p}");
    let out = explain(&p);
    assert_eq!(out.status.code(), Some(0), "stderr: {}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8_lossy(&out.stdout);
    let join = text.lines().find(|l| l.contains("stream-static")).unwrap_or_default();
    assert!(!join.contains("its rows where"), "{join}");
    assert!(
        join.contains("each matching row joined where (coalesce(active, (current_date() > DATE '2000-01-01')) AND"),
        "{join}"
    );
}
