//! Tests of the `[query]` rules (windows, output modes, measures) and of output schemas. The
//! expected names and types are Spark's, as pyspark 4.3.0 printed them (see `output.rs`).

use super::tests::{BASE, err, ok};
use super::*;
use crate::schema::DataType;

pub(super) fn fields(p: &Pipeline) -> Vec<(String, DataType)> {
    p.output_schema().into_iter().map(|f| (f.name, f.data_type)).collect()
}

pub(super) fn col(name: &str, t: DataType) -> (String, DataType) {
    (name.to_string(), t)
}

/// The pipeline BASE with these measures (a TOML array).
pub(super) fn with_measures(m: &str) -> Result<Pipeline, SpecError> {
    parse_pipeline_str(&BASE.replace("measures = [{ agg = \"count\" }]", &format!("measures = {m}")))
}

/// A rolling-window pipeline over BASE's source, with these query lines.
fn rolling(lines: &str) -> Result<Pipeline, SpecError> {
    let query = BASE.split("[query]").nth(1).and_then(|q| q.split("[sink]").next()).unwrap();
    parse_pipeline_str(&BASE.replace(query, &format!("\ntype = \"rolling_window\"\n{lines}\n\n")))
}

/// A deduplicate pipeline over BASE's source, with these query lines.
fn dedup(lines: &str) -> Result<Pipeline, SpecError> {
    let query = BASE.split("[query]").nth(1).and_then(|q| q.split("[sink]").next()).unwrap();
    parse_pipeline_str(&BASE.replace(query, &format!("\ntype = \"deduplicate\"\n{lines}\n\n")))
}

#[test]
fn query_is_required_and_typed() {
    let no_query = format!("{}[sink]\ntype = \"stdout\"\n", BASE.split("[query]").next().unwrap());
    assert_eq!(parse_pipeline_str(&no_query).unwrap_err().field, "query");
    assert_eq!(parse_pipeline_str(&BASE.replace("type = \"window_aggregate\"\n", "")).unwrap_err().field, "query.type");
    assert_eq!(err(&["query.type=join"]).field, "query.type");
    let e = err(&["query.partition_by=[\"k\"]"]);
    assert_eq!(
        e.to_string(),
        "query.partition_by: given [\"k\"] (not a field of query type \"window_aggregate\"); allowed: type, group_by, window, output_mode, measures"
    );
}

#[test]
fn group_by_columns_exist_once() {
    let e = err(&["query.group_by=[\"k\", \"nope\"]"]);
    assert_eq!(
        e.to_string(),
        "query.group_by[1]: given \"nope\"; allowed: a column of the schema: k, ts, v, n, i, b, g, at"
    );
    assert_eq!(err(&["query.group_by=[\"k\", \"k\"]"]).field, "query.group_by[1]");
    assert!(
        matches!(ok(&["query.group_by=[]"]).query, QuerySpec::WindowAggregate { ref group_by, .. } if group_by.is_empty())
    );
}

#[test]
fn tumbling_window_size_is_positive_and_start_below_size() {
    let p = ok(&["query.window.start=2 seconds"]);
    let QuerySpec::WindowAggregate { window: Some(w), output_mode, .. } = &p.query else { panic!() };
    assert_eq!(*output_mode, OutputMode::Update);
    assert_eq!(
        w,
        &WindowSpec::Tumbling { column: "ts".into(), size: Duration::from_secs(10), start: Duration::from_secs(2) }
    );
    let p = ok(&["query.window.start=-9 seconds"]);
    assert!(matches!(
        p.query,
        QuerySpec::WindowAggregate { window: Some(WindowSpec::Tumbling { start: Duration(-9_000_000), .. }), .. }
    ));
    assert_eq!(err(&["query.window.start=10 seconds"]).field, "query.window.start");
    assert_eq!(err(&["query.window.start=-10 seconds"]).field, "query.window.start");
    assert_eq!(err(&["query.window.start=soon"]).field, "query.window.start");
    assert_eq!(err(&["query.window.size=1 month"]).field, "query.window.size");
    assert_eq!(err(&["query.window.size=1 year"]).field, "query.window.size");
    assert_eq!(err(&["query.window.slide=1 second"]).field, "query.window.slide");
}

#[test]
fn window_column_is_a_timestamp_and_type_is_known() {
    let e = err(&["query.window.column=v"]);
    assert_eq!(
        e.to_string(),
        "query.window.column: given \"v\" (a DOUBLE column); allowed: a TIMESTAMP column of the schema: ts, at"
    );
    assert_eq!(err(&["query.window={ column = \"ts\", size = \"1 s\" }"]).field, "query.window.type");
    assert_eq!(err(&["query.window.type=hopping"]).field, "query.window.type");
    assert_eq!(err(&["query.window={ type = \"tumbling\", size = \"1 s\" }"]).field, "query.window.column");
    assert_eq!(err(&["query.window={ type = \"tumbling\", column = \"ts\" }"]).field, "query.window.size");
}

#[test]
fn sliding_window_slide_is_at_most_size_and_start_below_slide() {
    let p = ok(&["query.window.type=sliding", "query.window.slide=3 seconds", "query.window.start=-2 seconds"]);
    let QuerySpec::WindowAggregate { window: Some(w), .. } = &p.query else { panic!() };
    assert_eq!(
        w,
        &WindowSpec::Sliding {
            column: "ts".into(),
            size: Duration::from_secs(10),
            slide: Duration::from_secs(3),
            start: Duration::from_secs(-2)
        }
    );
    assert!(ok(&["query.window.type=sliding", "query.window.slide=10 seconds"]).query.measures().len() == 1);
    assert_eq!(err(&["query.window.type=sliding", "query.window.slide=11 seconds"]).field, "query.window.slide");
    assert_eq!(err(&["query.window.type=sliding", "query.window.slide=0 seconds"]).field, "query.window.slide");
    assert_eq!(err(&["query.window.type=sliding"]).field, "query.window.slide");
    assert_eq!(
        err(&["query.window.type=sliding", "query.window.slide=3 seconds", "query.window.start=3 seconds"]).field,
        "query.window.start"
    );
}

#[test]
fn session_window_has_a_gap_or_a_string_gap_column() {
    let session = |gap: &str| {
        vec![
            "query.output_mode=append".to_string(),
            format!("query.window={{ type = \"session\", column = \"ts\", {gap} }}"),
        ]
    };
    let run = |v: Vec<String>| {
        parse_pipeline_with_overrides(BASE, &super::tests::sets(&v.iter().map(String::as_str).collect::<Vec<_>>()))
    };
    let p = run(session("gap = \"5 minutes\"")).unwrap();
    assert!(
        matches!(&p.query, QuerySpec::WindowAggregate { window: Some(WindowSpec::Session { gap: SessionGap::Fixed(d), .. }), .. } if *d == Duration::from_secs(300))
    );
    let p = run(session("gap_column = \"g\"")).unwrap();
    assert!(
        matches!(&p.query, QuerySpec::WindowAggregate { window: Some(WindowSpec::Session { gap: SessionGap::Column(c), .. }), .. } if c == "g")
    );
    let e = run(session("gap_column = \"n\"")).unwrap_err();
    assert_eq!(
        e.to_string(),
        "query.window.gap_column: given \"n\" (a BIGINT column); allowed: a STRING column holding durations such as \"10 seconds\": k, g"
    );
    assert_eq!(run(session("gap_column = \"zz\"")).unwrap_err().field, "query.window.gap_column");
    assert_eq!(run(session("gap = \"5 s\", gap_column = \"g\"")).unwrap_err().field, "query.window.gap_column");
    assert_eq!(run(session("gap = \"0 s\"")).unwrap_err().field, "query.window.gap");
    assert_eq!(run(session("size = \"1 s\"")).unwrap_err().field, "query.window.size");
    assert_eq!(
        run(vec!["query.window={ type = \"session\", column = \"ts\" }".into(), "query.output_mode=append".into()])
            .unwrap_err()
            .field,
        "query.window.gap"
    );
}

#[test]
fn a_window_field_of_another_window_type_is_refused() {
    let e = err(&["query.window.gap=5 seconds"]);
    assert_eq!(
        e.to_string(),
        "query.window.gap: given \"5 seconds\" (not a field of window type \"tumbling\"); allowed: type, column, size, start"
    );
}

#[test]
fn output_mode_rules_follow_spark() {
    assert!(matches!(
        ok(&["query.output_mode=append"]).query,
        QuerySpec::WindowAggregate { output_mode: OutputMode::Append, .. }
    ));
    assert!(matches!(
        ok(&["query.output_mode=complete"]).query,
        QuerySpec::WindowAggregate { output_mode: OutputMode::Complete, .. }
    ));
    assert_eq!(err(&["query.output_mode=overwrite"]).field, "query.output_mode");
    // complete: micro-batch only.
    let e = err(&["mode=real-time", "query.output_mode=complete"]);
    assert_eq!((e.field.as_str(), e.given.as_str()), ("query.output_mode", "\"complete\" (in real-time mode)"));
    // append: real-time is allowed (SEMANTICS.md, beyond Spark).
    assert!(ok(&["mode=real-time", "query.output_mode=append"]).mode == Mode::RealTime);
    // update: refused for session windows (pyspark: "not supported for session window streaming aggregations").
    let e = err(&["query.window={ type = \"session\", column = \"ts\", gap = \"5 s\" }"]);
    assert_eq!((e.field.as_str(), e.given.as_str()), ("query.output_mode", "\"update\" (with a session window)"));
}

#[test]
fn append_needs_a_window_and_a_watermark_on_its_column() {
    let no_watermark = BASE.replace("[watermark]\ncolumn = \"ts\"\ndelay = \"10 seconds\"\n", "");
    let text = no_watermark.replace("group_by = [\"k\"]", "group_by = [\"k\"]\noutput_mode = \"append\"");
    let e = parse_pipeline_str(&text).unwrap_err();
    assert_eq!((e.field.as_str(), e.given.as_str()), ("query.output_mode", "\"append\" (without a [watermark])"));
    let e = err(&["query.output_mode=append", "watermark.column=at"]);
    assert_eq!(e.given, "\"append\" (the watermark is on \"at\", the window on \"ts\")");
    let text = BASE.replace(
        "window = { type = \"tumbling\", column = \"ts\", size = \"10 seconds\" }\n",
        "output_mode = \"append\"\n",
    );
    let e = parse_pipeline_str(&text).unwrap_err();
    assert_eq!((e.field.as_str(), e.given.as_str()), ("query.output_mode", "\"append\" (without a window)"));
}

/// Spark accepts append for an aggregation grouped by the watermarked column without a window
/// (`groupBy("ts", "k")`, a key final once `ts <= watermark`); another TIMESTAMP key is no
/// event time and stays refused.
#[test]
fn append_grouped_by_the_watermark_column_needs_no_window() {
    let by_ts = BASE.replace(
        "window = { type = \"tumbling\", column = \"ts\", size = \"10 seconds\" }\n",
        "output_mode = \"append\"\n",
    );
    let ok = by_ts.replace("group_by = [\"k\"]", "group_by = [\"ts\", \"k\"]");
    assert!(parse_pipeline_str(&ok).is_ok(), "{:?}", parse_pipeline_str(&ok).err());
    let other = ok.replace("column = \"ts\"\ndelay", "column = \"at\"\ndelay");
    let e = parse_pipeline_str(&other).unwrap_err();
    assert_eq!((e.field.as_str(), e.given.as_str()), ("query.output_mode", "\"append\" (without a window)"));
}

#[test]
fn plain_aggregation_has_no_window_column() {
    let text = BASE.replace("window = { type = \"tumbling\", column = \"ts\", size = \"10 seconds\" }\n", "");
    let p = parse_pipeline_str(&text).unwrap();
    assert_eq!(fields(&p), vec![col("k", DataType::String), col("count(1)", DataType::Long)]);
}

#[test]
fn rolling_window_defaults_and_output_schema() {
    let p = rolling("partition_by = [\"k\", \"g\"]\norder_by = \"ts\"\nmeasures = [{ agg = \"sum\", column = \"v\", over = \"10 minutes\" }, { agg = \"count\" }]").unwrap();
    let QuerySpec::RollingWindow { frontier_delay, frontier_alias, measures, .. } = &p.query else { panic!() };
    assert_eq!((*frontier_delay, frontier_alias.as_str()), (Duration::ZERO, "__frontier"));
    assert_eq!((measures[0].over, measures[1].over), (Some(Duration::from_secs(600)), None));
    assert_eq!(
        fields(&p),
        vec![
            col("k", DataType::String),
            col("g", DataType::String),
            col("__frontier", DataType::Timestamp),
            col("sum(v)", DataType::Double),
            col("count(1)", DataType::Long),
        ]
    );
    let p = rolling("order_by = \"ts\"\nfrontier = { delay = \"2 seconds\", alias = \"now\" }\noutput_mode = \"update\"\nmeasures = [{ agg = \"max\", column = \"n\" }]").unwrap();
    assert_eq!(fields(&p), vec![col("now", DataType::Timestamp), col("max(n)", DataType::Long)]);
    assert!(matches!(p.query, QuerySpec::RollingWindow { frontier_delay: Duration(2_000_000), .. }));
}

#[test]
fn rolling_window_rules() {
    let m = "measures = [{ agg = \"count\" }]";
    assert_eq!(rolling(m).unwrap_err().field, "query.order_by");
    assert_eq!(rolling(&format!("order_by = \"k\"\n{m}")).unwrap_err().field, "query.order_by");
    assert_eq!(
        rolling(&format!("order_by = \"ts\"\npartition_by = [\"x\"]\n{m}")).unwrap_err().field,
        "query.partition_by[0]"
    );
    let e = rolling(&format!("order_by = \"ts\"\noutput_mode = \"append\"\n{m}")).unwrap_err();
    assert_eq!(e.to_string(), "query.output_mode: given \"append\"; allowed: \"update\"");
    assert_eq!(rolling(&format!("order_by = \"at\"\n{m}")).unwrap_err().field, "watermark.column");
    assert_eq!(
        rolling(&format!("order_by = \"ts\"\nfrontier = {{ delay = \"-1 s\" }}\n{m}")).unwrap_err().field,
        "query.frontier.delay"
    );
    assert_eq!(
        rolling(&format!("order_by = \"ts\"\nfrontier = {{ delay = \"1 s\", size = 2 }}\n{m}")).unwrap_err().field,
        "query.frontier.size"
    );
    assert_eq!(
        rolling("order_by = \"ts\"\nmeasures = [{ agg = \"count\", over = \"0 s\" }]").unwrap_err().field,
        "query.measures[0].over"
    );
    assert_eq!(rolling(&format!("order_by = \"ts\"\ngroup_by = [\"k\"]\n{m}")).unwrap_err().field, "query.group_by");
    let e = rolling(
        "order_by = \"ts\"\npartition_by = [\"k\"]\nfrontier = { alias = \"k\" }\nmeasures = [{ agg = \"count\" }]",
    )
    .unwrap_err();
    assert_eq!(e.field, "query.frontier.alias");
}

#[test]
fn deduplicate_columns_default_to_all_and_within_watermark_needs_one() {
    let p = dedup("").unwrap();
    assert_eq!(
        p.query,
        QuerySpec::Deduplicate {
            columns: p.input_schema().fields().iter().map(|f| f.name.clone()).collect(),
            within_watermark: false
        }
    );
    assert_eq!(p.output_schema(), p.input_schema().fields().to_vec());
    let p = dedup("columns = [\"k\", \"ts\"]\nwithin_watermark = true").unwrap();
    assert_eq!(p.query, QuerySpec::Deduplicate { columns: vec!["k".into(), "ts".into()], within_watermark: true });
    assert_eq!(dedup("columns = []").unwrap_err().field, "query.columns");
    assert_eq!(dedup("columns = [\"k\", \"zz\"]").unwrap_err().field, "query.columns[1]");
    assert_eq!(dedup("measures = []").unwrap_err().field, "query.measures");
    let no_watermark = BASE.replace("[watermark]\ncolumn = \"ts\"\ndelay = \"10 seconds\"\n", "");
    let query = no_watermark.split("[query]").nth(1).and_then(|q| q.split("[sink]").next()).unwrap();
    let e = parse_pipeline_str(&no_watermark.replace(query, "\ntype = \"deduplicate\"\nwithin_watermark = true\n\n"))
        .unwrap_err();
    assert_eq!((e.field.as_str(), e.given.as_str()), ("query.within_watermark", "true (without a [watermark])"));
}

/// Spark resolves column names ignoring case (`spark.sql.caseSensitive = false`), and an output
/// column takes the spelling of the reference (the golden case `mixed-case-references` holds
/// Spark 4.3's output).
#[test]
fn column_references_resolve_ignoring_case_and_name_outputs_as_written() {
    let run = |v: &[&str]| super::tests::ok(v);
    let p = run(&[
        "watermark.column=\"TS\"",
        "query.group_by=[\"K\", \"G\"]",
        "query.window={ type = \"sliding\", column = \"Ts\", size = \"10 seconds\", slide = \"5 seconds\" }",
        "query.measures=[{ agg = \"sum\", column = \"N\" }, { agg = \"max\", column = \"V\", alias = \"top\" }]",
    ]);
    assert_eq!(
        fields(&p),
        vec![
            col("window", DataType::Window),
            col("K", DataType::String),
            col("G", DataType::String),
            col("sum(N)", DataType::Long),
            col("top", DataType::Double),
        ]
    );
    let plan = crate::plan::QueryPlan::new(&p).unwrap();
    assert_eq!(plan.watermark.map(|(c, _)| c), Some(1));
    assert_eq!(plan.routing_columns(), vec![0, 6]);
    // one column named twice, in two spellings
    assert_eq!(run_err(&["query.group_by=[\"k\", \"K\"]"]).field, "query.group_by[1]");
    // a session window's gap column
    let p = run(&[
        "query.output_mode=\"append\"",
        "query.window={ type = \"session\", column = \"TS\", gap_column = \"G\" }",
    ]);
    assert!(matches!(&p.query, QuerySpec::WindowAggregate { window: Some(WindowSpec::Session { .. }), .. }));
    assert_eq!(crate::plan::QueryPlan::new(&p).unwrap().routing_columns(), vec![0]);
    // rolling window: partition_by, order_by, measures
    let p = rolling("partition_by = [\"K\"]\norder_by = \"TS\"\nmeasures = [{ agg = \"sum\", column = \"V\", over = \"1 minute\" }]")
        .unwrap();
    assert_eq!(
        fields(&p),
        vec![col("K", DataType::String), col("__frontier", DataType::Timestamp), col("sum(V)", DataType::Double)]
    );
    // deduplicate columns
    let p = dedup("columns = [\"K\", \"Ts\"]").unwrap();
    assert_eq!(crate::plan::QueryPlan::new(&p).unwrap().routing_columns(), vec![0, 1]);
    // a Kafka sink's key names an output column, kept in that column's spelling
    let p = run(&["sink={ type = \"kafka\", bootstrap_servers = \"h:9092\", topic = \"t\", key = [\"K\"] }"]);
    assert!(matches!(&p.sink, SinkSpec::Kafka { key, .. } if key == &["k".to_string()]));
    // an output name that differs from another only in case is one column twice
    let e = run_err(&[
        "query.measures=[{ agg = \"count\", alias = \"n\" }, { agg = \"count\", column = \"v\", alias = \"N\" }]",
    ]);
    assert_eq!(e.field, "query.measures[1].alias");
}

fn run_err(v: &[&str]) -> SpecError {
    super::tests::err(v)
}
