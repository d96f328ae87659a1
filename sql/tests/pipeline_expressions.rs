//! The SQL expression fields of a pipeline file (PIPELINE.md: a source's `filter` and `select`,
//! the sink's `select`) as validation reads them: the schemas after them and the errors, each
//! naming the field and the line:column in the string. Expected values written by hand from
//! SQL.md / PIPELINE.md.

use eddy_engine::DataType;
use eddy_engine::spec::{SpecError, Step};
use eddy_sql::parse_pipeline_str;

const BASE: &str = r#"
name = "exprs"
mode = "micro-batch"
[source]
type = "files"
path = "in"
schema = "id STRING, amount BIGINT, qty BIGINT, currency STRING, ts STRING"
#SOURCE
[watermark]
column = "event_time"
delay = "0 seconds"
[query]
type = "window_aggregate"
group_by = ["currency_code"]
window = { type = "tumbling", column = "event_time", size = "10 seconds" }
output_mode = "append"
measures = [{ agg = "sum", column = "amount" }]
[sink]
type = "files"
path = "out"
#SINK
"#;

const SOURCE: &str = r#"filter = "amount > 0"
select = ["*", "upper(currency) AS currency_code", "CAST(ts AS TIMESTAMP) AS event_time"]"#;

fn pipeline(source: &str, sink: &str) -> String {
    BASE.replace("#SOURCE", source).replace("#SINK", sink)
}

fn refused(text: &str) -> SpecError {
    match parse_pipeline_str(text) {
        Ok(_) => panic!("accepted: {text}"),
        Err(e) => e,
    }
}

fn names_and_types(fields: &[eddy_engine::Field]) -> Vec<(String, DataType)> {
    fields.iter().map(|f| (f.name.clone(), f.data_type)).collect()
}

#[test]
fn source_steps_shape_the_query_schema_and_the_sink_select_the_output() {
    let p = parse_pipeline_str(&pipeline(
        SOURCE,
        r#"select = ["window.start AS window_start", "`sum(amount)` * 2 AS doubled"]"#,
    ))
    .unwrap_or_else(|e| panic!("{e}"));
    assert!(matches!(&p.source_steps[..], [Step::Filter(_), Step::Project(items)] if items.len() == 7));
    let s = |n: &str, t| (n.to_string(), t);
    assert_eq!(
        names_and_types(p.query_schema().fields()),
        vec![
            s("id", DataType::String),
            s("amount", DataType::Long),
            s("qty", DataType::Long),
            s("currency", DataType::String),
            s("ts", DataType::String),
            s("currency_code", DataType::String),
            s("event_time", DataType::Timestamp),
        ]
    );
    // the watermark and the window read the computed column
    assert_eq!(p.watermark.as_ref().map(|w| w.index), Some(6));
    assert_eq!(
        names_and_types(&p.query_output_schema()),
        vec![s("window", DataType::Window), s("currency_code", DataType::String), s("sum(amount)", DataType::Long)]
    );
    assert_eq!(
        names_and_types(&p.output_schema()),
        vec![s("window_start", DataType::Timestamp), s("doubled", DataType::Long)]
    );
}

#[test]
fn an_expression_without_alias_is_named_as_spark_names_it() {
    let src = r#"select = ["lower(currency)", "amount * 2", "amount", "CAST(ts AS TIMESTAMP) AS event_time", "currency AS currency_code"]"#;
    let p = parse_pipeline_str(&pipeline(src, "")).unwrap_or_else(|e| panic!("{e}"));
    let names: Vec<String> = p.query_schema().fields().iter().map(|f| f.name.clone()).collect();
    assert_eq!(names, ["lower(currency)", "(amount * 2)", "amount", "event_time", "currency_code"]);
}

#[test]
fn two_output_columns_of_one_name_are_refused_naming_both_items() {
    let e = refused(&pipeline(
        r#"select = ["*", "upper(currency) AS CURRENCY", "CAST(ts AS TIMESTAMP) AS event_time"]"#,
        "",
    ));
    assert_eq!(e.field, "source.select[1]");
    assert!(e.given.contains("\"CURRENCY\"") && e.given.contains("source.select[0]"), "{e}");
    assert!(e.allowed.contains("distinct"), "{e}");
}

#[test]
fn a_filter_that_is_not_boolean_is_refused_with_its_type() {
    let e = refused(&pipeline(r#"filter = "amount + 1""#, ""));
    assert_eq!(e.field, "source.filter");
    assert!(e.given.contains("at 1:1") && e.given.contains("BIGINT"), "{e}");
    assert!(e.allowed.contains("BOOLEAN"), "{e}");
}

#[test]
fn an_unknown_column_is_named_at_its_line_and_column() {
    let e = refused(&pipeline(r#"select = ["amount", "amount + nope AS x"]"#, ""));
    assert_eq!(e.field, "source.select[1]");
    assert!(e.given.contains("at 1:10") && e.given.contains("`nope`"), "{e}");
    assert!(e.allowed.contains("amount") && e.allowed.contains("currency"), "{e}");
}

#[test]
fn a_syntax_error_is_named_at_its_line_and_column() {
    // the second `=` of line 2 is at column 9
    let e = refused(&pipeline("filter = \"\"\"\namount > 0 AND\n  qty = = 1\"\"\"", ""));
    assert_eq!(e.field, "source.filter");
    assert!(e.given.contains("at 2:9"), "{e}");
}

#[test]
fn an_aggregate_function_in_a_filter_is_refused() {
    let e = refused(&pipeline(r#"filter = "sum(amount) > 0""#, ""));
    assert_eq!(e.field, "source.filter");
    assert!(e.given.contains("at 1:1") && e.given.contains("aggregate function sum"), "{e}");
    assert!(e.allowed.contains("measures"), "{e}");
}

#[test]
fn the_query_reads_the_columns_after_the_source_select() {
    // the select drops `currency`: the query's group_by cannot read it any more
    let src = r#"select = ["currency AS cur", "amount", "CAST(ts AS TIMESTAMP) AS event_time"]"#;
    let e = refused(&pipeline(src, "").replace(r#"group_by = ["currency_code"]"#, r#"group_by = ["currency"]"#));
    assert_eq!(e.field, "query.group_by[0]");
    assert!(e.allowed.contains("cur") && e.allowed.contains("event_time"), "{e}");
}

#[test]
fn the_sink_select_reads_the_query_output_columns() {
    let e = refused(&pipeline(SOURCE, r#"select = ["amount"]"#));
    assert_eq!(e.field, "sink.select[0]");
    assert!(e.given.contains("at 1:1"), "{e}");
    assert!(e.allowed.contains("window") && e.allowed.contains("sum(amount)"), "{e}");
}

#[test]
fn a_select_on_the_late_sink_or_the_dead_letters_is_refused_with_the_reason() {
    for section in ["late_sink", "dead_letter"] {
        let text = pipeline(SOURCE, &format!("[{section}]\ntype = \"stdout\"\nselect = [\"*\"]"));
        let e = refused(&text);
        assert_eq!(e.field, format!("{section}.select"));
        assert!(e.allowed.contains("unchanged") && e.allowed.contains("[sink]"), "{e}");
    }
}

#[test]
fn a_kafka_value_column_must_be_a_string_and_a_key_column_excludes_a_key_list() {
    let kafka = |extra: &str| {
        pipeline(SOURCE, "").replace(
            "type = \"files\"\npath = \"out\"",
            &format!("type = \"kafka\"\nbootstrap_servers = \"127.0.0.1:9092\"\ntopic = \"t\"\n{extra}"),
        )
    };
    parse_pipeline_str(&kafka(r#"select = ["currency_code AS key", "CAST(`sum(amount)` AS STRING) AS value"]"#))
        .unwrap_or_else(|e| panic!("{e}"));
    let e = refused(&kafka(r#"select = ["`sum(amount)` AS value"]"#));
    assert_eq!(e.field, "sink.select");
    assert!(e.given.contains("BIGINT") && e.allowed.contains("STRING"), "{e}");
    let e = refused(&kafka("key = [\"key\"]\nselect = [\"currency_code AS key\", \"`sum(amount)`\"]"));
    assert_eq!(e.field, "sink.key");
}

#[test]
fn window_start_and_end_are_timestamps_named_start_and_end() {
    let p = parse_pipeline_str(&pipeline(SOURCE, r#"select = ["window.start", "window.END", "window"]"#))
        .unwrap_or_else(|e| panic!("{e}"));
    let s = |n: &str, t| (n.to_string(), t);
    assert_eq!(
        names_and_types(&p.output_schema()),
        vec![s("start", DataType::Timestamp), s("end", DataType::Timestamp), s("window", DataType::Window)]
    );
    let e = refused(&pipeline(SOURCE, r#"select = ["window.middle"]"#));
    assert_eq!(e.field, "sink.select[0]");
    assert!(e.allowed.contains("start, end") && e.given.contains("middle"), "{e}");
}
