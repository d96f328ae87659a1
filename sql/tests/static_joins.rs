//! Stream-static joins in the pipeline file (PIPELINE.md "Several sources, static tables,
//! expressions and SQL", SQL.md "Joins", SEMANTICS.md "Joins"): `[[table]]` validation, the
//! join's planning (keys, joined columns, Spark's output names and order) and Spark's refusals.
//! Expected names, orders and refusals are Spark 4.3's, written by hand.

use eddy_engine::DataType;
use eddy_engine::spec::{JoinKind, Pipeline, QuerySpec, SpecError};

const TABLE: &str = "[[table]]\nname = \"prices\"\ntype = \"files\"\npath = \"tables/prices.csv\"\nformat = \"csv\"\nschema = \"sku STRING, price DOUBLE, ts TIMESTAMP\"\n";

/// A micro-batch pipeline over `orders` (with a watermark on `ts`) and the table `table`
/// (TOML lines), whose query is `sql`.
fn pipeline_with(table: &str, sql: &str) -> Result<Pipeline, SpecError> {
    let text = format!(
        "name = \"p\"\nmode = \"micro-batch\"\n[[source]]\nname = \"orders\"\ntype = \"files\"\npath = \"in\"\n\
         schema = \"order_id STRING, sku STRING, qty INT, ts TIMESTAMP\"\n\
         watermark = {{ column = \"ts\", delay = \"10 seconds\" }}\n{table}\
         [query]\nsql = \"\"\"\n{sql}\"\"\"\noutput_mode = \"append\"\n[sink]\ntype = \"files\"\npath = \"out\"\n"
    );
    eddy_sql::parse_pipeline_str(&text)
}

fn pipeline(sql: &str) -> Pipeline {
    pipeline_with(TABLE, sql).unwrap_or_else(|e| panic!("{sql}: {e}"))
}

fn refusal(table: &str, sql: &str) -> SpecError {
    match pipeline_with(table, sql) {
        Err(e) => e,
        Ok(p) => panic!("{sql}: expected a refusal, got {p:?}"),
    }
}

fn output(p: &Pipeline) -> Vec<(String, DataType)> {
    p.output_schema().into_iter().map(|f| (f.name, f.data_type)).collect()
}

fn cols(cols: &[(&str, DataType)]) -> Vec<(String, DataType)> {
    cols.iter().map(|(n, t)| (n.to_string(), *t)).collect()
}

#[test]
fn a_table_is_validated_with_its_defaults() {
    let p = pipeline("SELECT o.order_id FROM orders o JOIN prices p ON o.sku = p.sku\n");
    let [t] = p.tables.as_slice() else { panic!("{:?}", p.tables) };
    assert_eq!(t.name, "prices");
    assert_eq!(t.refresh.micros(), 60_000_000, "refresh defaults to 1 minute");
    assert_eq!(t.max_bytes, 268_435_456, "max_bytes defaults to 256 MiB");
    assert_eq!(t.schema.names(), "sku, price, ts");
}

#[test]
fn a_wrong_table_field_is_refused_naming_it() {
    let sql = "SELECT o.order_id FROM orders o JOIN prices p ON o.sku = p.sku\n";
    let cases: &[(&str, &str, &str)] = &[
        ("format = \"csv\"", "format = \"parquet\"", "table[0].format"),
        ("type = \"files\"", "type = \"kafka\"", "table[0].type"),
        ("name = \"prices\"", "name = \"Prices!\"", "table[0].name"),
        ("format = \"csv\"", "format = \"csv\"\nrefresh = \"0 seconds\"", "table[0].refresh"),
        ("format = \"csv\"", "format = \"csv\"\nmax_bytes = 0", "table[0].max_bytes"),
        ("format = \"csv\"", "format = \"csv\"\ncolour = \"red\"", "table[0].colour"),
        ("schema = \"sku STRING, price DOUBLE, ts TIMESTAMP\"", "schema = \"sku: STRING\"", "table[0].schema"),
        ("path = \"tables/prices.csv\"\n", "", "table[0].path"),
        ("name = \"prices\"", "name = \"orders\"", "table[0].name"),
    ];
    let wrong: Vec<String> = cases
        .iter()
        .filter_map(|(from, to, field)| {
            let table = TABLE.replace(from, to);
            match pipeline_with(&table, sql) {
                Err(e) if e.field == *field => None,
                other => Some(format!("{to:?}: expected an error at {field}, got {other:?}")),
            }
        })
        .collect();
    assert!(wrong.is_empty(), "{wrong:#?}");
}

#[test]
fn a_left_join_plans_the_stream_columns_then_the_tables_with_spark_names() {
    let p = pipeline(
        "SELECT o.order_id, o.sku, o.qty * p.price AS total, o.ts FROM orders o LEFT JOIN prices p ON o.sku = p.sku\n",
    );
    let j = p.join.as_ref().expect("a join");
    assert_eq!(j.kind, JoinKind::LeftOuter);
    let keys: Vec<(&str, &str)> = j.keys.iter().map(|k| (k.stream.name.as_str(), k.table.name.as_str())).collect();
    assert_eq!(keys, [("sku", "sku")], "orders.sku = prices.sku");
    assert_eq!(j.names, ["order_id", "sku", "qty", "ts", "p.sku", "price", "p.ts"]);
    assert!(matches!(p.query, QuerySpec::Forward));
    assert_eq!(
        output(&p),
        cols(&[
            ("order_id", DataType::String),
            ("sku", DataType::String),
            ("total", DataType::Double),
            ("ts", DataType::Timestamp)
        ])
    );
}

#[test]
fn select_star_lists_the_left_side_then_the_right_and_refuses_two_columns_of_one_name() {
    // the table on the left: its columns first (Spark's order), the stream preserved by RIGHT JOIN
    let p = pipeline("SELECT p.*, o.order_id, o.qty FROM prices p RIGHT OUTER JOIN orders o ON p.sku = o.sku\n");
    assert_eq!(p.join.as_ref().map(|j| j.kind), Some(JoinKind::LeftOuter));
    let names: Vec<String> = output(&p).into_iter().map(|(n, _)| n).collect();
    assert_eq!(names, ["sku", "price", "ts", "order_id", "qty"]);
    let e = refusal(TABLE, "SELECT * FROM orders o JOIN prices p ON o.sku = p.sku\n");
    assert!(e.field == "query.sql" && e.given.contains("a second output column \"sku\""), "{e}");
}

#[test]
fn semi_and_anti_joins_output_the_stream_columns_only() {
    for (join, kind) in [("LEFT SEMI", JoinKind::LeftSemi), ("LEFT ANTI", JoinKind::LeftAnti)] {
        let p = pipeline(&format!("SELECT * FROM orders o {join} JOIN prices p ON o.sku = p.sku\n"));
        assert_eq!(p.join.as_ref().map(|j| j.kind), Some(kind));
        let names: Vec<String> = output(&p).into_iter().map(|(n, _)| n).collect();
        assert_eq!(names, ["order_id", "sku", "qty", "ts"], "{join}");
    }
    let e = refusal(TABLE, "SELECT o.sku, p.price FROM orders o LEFT SEMI JOIN prices p ON o.sku = p.sku\n");
    assert!(e.given.contains("p.price") && e.given.contains("1:15"), "{e}");
}

#[test]
fn a_join_followed_by_a_tumbling_aggregate_plans_onto_the_window_aggregate() {
    let p = pipeline(
        "SELECT window(o.ts, '10 seconds') AS window, p.sku AS sku, sum(o.qty * p.price) AS revenue\n\
         FROM orders o JOIN prices p ON o.sku = p.sku\nWHERE p.price > 1\nGROUP BY window(o.ts, '10 seconds'), p.sku\n",
    );
    let QuerySpec::WindowAggregate { group_by, window, .. } = &p.query else { panic!("{:?}", p.query) };
    assert_eq!(group_by, &["p.sku".to_string()]);
    assert_eq!(window.as_ref().map(|w| w.column()), Some("ts"));
    let j = p.join.as_ref().expect("a join");
    assert_eq!(j.kind, JoinKind::Inner);
    assert!(!j.steps.is_empty(), "WHERE and the aggregation's projection run on the joined record");
    assert!(p.source_steps.is_empty(), "nothing runs before the join");
    let names: Vec<String> = output(&p).into_iter().map(|(n, _)| n).collect();
    assert_eq!(names, ["window", "sku", "revenue"]);
}

#[test]
fn spark_refusals_of_stream_static_joins_name_the_join_and_its_position() {
    let cases: &[(&str, &str)] = &[
        (
            "SELECT o.sku FROM orders o RIGHT JOIN prices p ON o.sku = p.sku\n",
            "RightOuter join with a streaming DataFrame/Dataset on the left and a static DataFrame/DataSet on the right not supported) at 1:28",
        ),
        (
            "SELECT o.sku FROM orders o FULL OUTER JOIN prices p ON o.sku = p.sku\n",
            "FullOuter joins with streaming DataFrames/Datasets on the left and a static DataFrame/Dataset on the right is not supported) at 1:28",
        ),
        (
            "SELECT o.sku FROM prices p LEFT JOIN orders o ON o.sku = p.sku\n",
            "LeftOuter join with a streaming DataFrame/Dataset on the right and a static DataFrame/Dataset on the left is not supported) at 1:28",
        ),
        (
            "SELECT p.sku FROM prices p LEFT SEMI JOIN orders o ON o.sku = p.sku\n",
            "LeftSemi join with a streaming DataFrame/Dataset on the right and a static DataFrame/Dataset on the left is not supported) at 1:28",
        ),
        (
            "SELECT p.sku FROM prices p LEFT ANTI JOIN orders o ON o.sku = p.sku\n",
            "LeftAnti joins with a streaming DataFrame/Dataset on the right are not supported) at 1:28",
        ),
        (
            "SELECT o.sku FROM prices p FULL JOIN orders o ON o.sku = p.sku\n",
            "FullOuter joins with streaming DataFrames/Datasets on the right and a static DataFrame/Dataset on the left is not supported) at 1:28",
        ),
        (
            "SELECT o.sku FROM orders o JOIN prices p ON o.qty > 1\n",
            "without an equality of a source expression and a table expression (an equi-join key) at 1:45",
        ),
        (
            "SELECT o.sku FROM orders o JOIN prices p ON o.sku = o.order_id\n",
            "without an equality of a source expression and a table expression (an equi-join key) at 1:45",
        ),
        ("SELECT o.sku FROM orders o CROSS JOIN prices p\n", "a join without an equality key"),
        ("SELECT o.sku FROM orders o JOIN fx f ON o.sku = f.sku\n", "the unknown relation fx at 1:33"),
        (
            "SELECT sku FROM orders o JOIN prices p ON o.sku = p.sku\n",
            "\"sku\" of both sides (AMBIGUOUS_REFERENCE) at 1:8",
        ),
        ("SELECT o.nope FROM orders o JOIN prices p ON o.sku = p.sku\n", "unknown column \"o.nope\" at 1:8"),
        (
            "SELECT o.sku FROM orders o JOIN prices p ON (o.sku > 'a') = p.price\n",
            "join keys of two types: \"(sku > a)\" BOOLEAN and \"price\" DOUBLE at 1:46",
        ),
    ];
    let wrong: Vec<String> = cases
        .iter()
        .filter_map(|(sql, words)| match pipeline_with(TABLE, sql) {
            Err(e) if e.field == "query.sql" && e.given.contains(words) => None,
            other => Some(format!("{sql:?}: expected {words:?}, got {other:?}")),
        })
        .collect();
    assert!(wrong.is_empty(), "{wrong:#?}");
}

#[test]
fn a_table_the_query_does_not_read_is_refused() {
    let e = refusal(TABLE, "SELECT order_id FROM orders\n");
    assert_eq!(e.field, "table[0].name");
    let two = format!("{TABLE}{}", TABLE.replace("name = \"prices\"", "name = \"fx\""));
    let e = refusal(&two, "SELECT o.order_id FROM orders o JOIN prices p ON o.sku = p.sku\n");
    assert_eq!(e.field, "table[1].name");
}

#[test]
fn a_where_conjunct_on_the_stream_alone_runs_before_the_join_and_the_watermark() {
    // as Spark's optimizer: `o.qty > 1` is pushed below the join and the watermark; `p.price > 1`
    // (an inner join's, on the table alone) filters the table's rows; `o.ts > ...` mentions the
    // watermark column and runs after it
    let p = pipeline(
        "SELECT o.order_id, p.price FROM orders o JOIN prices p ON o.sku = p.sku\n\
         WHERE o.qty > 1 AND p.price > 1 AND o.ts > TIMESTAMP '2024-01-15 10:00:00'\n",
    );
    let names = |steps: &[eddy_engine::spec::Step]| -> Vec<String> {
        steps
            .iter()
            .map(|s| match s {
                eddy_engine::spec::Step::Filter(e) => e.typed.name.clone(),
                eddy_engine::spec::Step::Project(_) => "project".into(),
            })
            .collect()
    };
    assert_eq!(names(&p.source_steps), ["(qty > 1)"]);
    let j = p.join.as_ref().expect("a join");
    assert!(names(&j.steps).is_empty(), "{:?}", names(&j.steps));
    assert_eq!(j.table_filter.as_ref().map(|f| f.typed.name.as_str()), Some("(price > 1)"));
    assert_eq!(names(&p.query_steps).len(), 1, "the condition on the watermark column runs after the watermark");
}

#[test]
fn an_int_key_joins_a_bigint_key_as_spark_widens_it() {
    let table = TABLE.replace("ts TIMESTAMP\"", "ts TIMESTAMP, n BIGINT\"");
    let p = pipeline_with(&table, "SELECT o.order_id FROM orders o JOIN prices p ON o.qty = p.n\n")
        .unwrap_or_else(|e| panic!("{e}"));
    let j = p.join.as_ref().expect("a join");
    let keys: Vec<_> = j
        .keys
        .iter()
        .map(|k| (k.stream.name.as_str(), k.stream.typed.data_type, k.table.name.as_str(), k.table.typed.data_type))
        .collect();
    // the INT side cast to BIGINT, the type the key compares as
    assert_eq!(keys, [("qty", DataType::Long, "n", DataType::Long)]);
}
