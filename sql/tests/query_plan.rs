//! SQL queries planned onto the operators: steps, the structured query, Spark's output names
//! and types, and Spark's refusals. Expected names and types are Spark 4.3's, written by hand.

use eddy_engine::spec::{
    Mode, OutputMode, QuerySpec, SessionGap, SpecError, SqlQueryPlan, Step, WatermarkSpec, WindowSpec, plan_sql_query,
};
use eddy_engine::{DataType, Duration, Schema, Value};
use eddy_sql::parse_query;

fn schema() -> Schema {
    Schema::parse_ddl("user_id STRING, amount BIGINT, price DOUBLE, ts TIMESTAMP, gap STRING")
        .unwrap_or_else(|e| panic!("{e}"))
}

fn watermark() -> WatermarkSpec {
    WatermarkSpec { column: "ts".into(), index: 3, delay: Duration(10_000_000) }
}

fn plan_with(sql: &str, mode: Option<&str>) -> Result<SqlQueryPlan, SpecError> {
    let q = parse_query(sql).unwrap_or_else(|e| panic!("{sql}: {e}"));
    plan_sql_query(&q, "payments", &schema(), Some(&watermark()), &[], mode, Mode::MicroBatch)
}

fn plan(sql: &str) -> SqlQueryPlan {
    plan_with(sql, None).unwrap_or_else(|e| panic!("{sql}: {e}"))
}

fn refusal(sql: &str) -> SpecError {
    match plan_with(sql, None) {
        Err(e) => e,
        Ok(p) => panic!("{sql}: expected a refusal, got {p:?}"),
    }
}

fn output(p: &SqlQueryPlan) -> Vec<(String, DataType)> {
    p.output_schema(&schema()).fields().iter().map(|f| (f.name.clone(), f.data_type)).collect()
}

fn names(cols: &[(&str, DataType)]) -> Vec<(String, DataType)> {
    cols.iter().map(|(n, t)| (n.to_string(), *t)).collect()
}

#[test]
fn a_tumbling_window_query_plans_onto_the_window_aggregate_with_spark_names() {
    let p = plan(
        "SELECT window(ts, '30 seconds') AS window, user_id, sum(amount) AS total, count(*) AS n \
         FROM payments WHERE amount > 0 GROUP BY 1, 2",
    );
    let QuerySpec::WindowAggregate { group_by, window, output_mode, measures } = &p.query else { panic!("{p:?}") };
    assert_eq!(group_by, &["user_id".to_string()]);
    assert_eq!(
        window,
        &Some(WindowSpec::Tumbling { column: "ts".into(), size: Duration(30_000_000), start: Duration(0) })
    );
    assert_eq!(*output_mode, OutputMode::Update);
    let m: Vec<&str> = measures.iter().map(|m| m.output_name.as_str()).collect();
    assert_eq!(m, ["sum(amount)", "count(1)"]);
    // WHERE amount > 0 runs before the watermark, then the projection
    assert!(matches!(&p.source_steps[..], [Step::Filter(f), Step::Project(_)] if f.typed.name == "(amount > 0)"));
    assert!(p.watermarked_steps.is_empty());
    assert_eq!(
        output(&p),
        names(&[
            ("window", DataType::Window),
            ("user_id", DataType::String),
            ("total", DataType::Long),
            ("n", DataType::Long)
        ])
    );
}

#[test]
fn a_condition_on_the_watermark_column_runs_after_the_watermark() {
    let p = plan(
        "SELECT user_id, count(*) FROM payments \
         WHERE amount > 0 AND ts > TIMESTAMP '2024-01-01 00:00:00' AND price < 5 GROUP BY user_id",
    );
    let before: Vec<String> = p
        .source_steps
        .iter()
        .filter_map(|s| match s {
            Step::Filter(f) => Some(f.typed.name.clone()),
            Step::Project(_) => None,
        })
        .collect();
    assert_eq!(before, ["(amount > 0)", "(price < 5)"]);
    assert!(matches!(&p.watermarked_steps[..], [Step::Filter(f)] if f.typed.name.starts_with("(ts > TIMESTAMP")));
    assert_eq!(output(&p), names(&[("user_id", DataType::String), ("count(1)", DataType::Long)]));
}

#[test]
fn computed_keys_and_expressions_over_aggregates_take_spark_names() {
    let p = plan(
        "SELECT LOWER(user_id), sum(amount) / count(*), max(price * 2) AS top, avg(amount) \
         FROM payments p GROUP BY lower(p.user_id) HAVING count(*) > 1",
    );
    let QuerySpec::WindowAggregate { group_by, measures, .. } = &p.query else { panic!("{p:?}") };
    assert_eq!(group_by, &["lower(user_id)".to_string()]);
    let m: Vec<&str> = measures.iter().map(|m| m.output_name.as_str()).collect();
    assert_eq!(m, ["sum(amount)", "count(1)", "max((price * 2))", "avg(amount)"]);
    assert!(matches!(&p.output_steps[0], Step::Filter(f) if f.typed.name == "(count(1) > 1)"));
    assert_eq!(
        output(&p),
        names(&[
            ("lower(user_id)", DataType::String),
            ("(sum(amount) / count(1))", DataType::Double),
            ("top", DataType::Double),
            ("avg(amount)", DataType::Double)
        ])
    );
}

#[test]
fn sliding_and_session_windows_and_group_aliases() {
    let p = plan_with(
        "SELECT window(ts, '10 seconds', '5 seconds'), upper(user_id) AS u, count(amount) \
         FROM payments GROUP BY window(ts, '10 seconds', '5 seconds'), u",
        Some("append"),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let QuerySpec::WindowAggregate { window, output_mode, .. } = &p.query else { panic!("{p:?}") };
    assert_eq!(
        window,
        &Some(WindowSpec::Sliding {
            column: "ts".into(),
            size: Duration(10_000_000),
            slide: Duration(5_000_000),
            start: Duration(0)
        })
    );
    assert_eq!(*output_mode, OutputMode::Append);
    assert_eq!(
        output(&p),
        names(&[("window", DataType::Window), ("u", DataType::String), ("count(amount)", DataType::Long)])
    );
    let p = plan_with(
        "SELECT session_window(ts, '5 seconds'), user_id, sum(amount) FROM payments \
         GROUP BY user_id, session_window(ts, '5 seconds')",
        Some("append"),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        output(&p),
        names(&[("session_window", DataType::Window), ("user_id", DataType::String), ("sum(amount)", DataType::Long)])
    );
}

#[test]
fn the_group_by_window_is_selected_by_its_name_and_its_fields() {
    // Spark names the GROUP BY window expression `window` (`session_window`): the select list
    // may name it, or a field of it, instead of repeating the call
    let p = plan_with(
        "SELECT window, window.start, user_id, count(*) FROM payments GROUP BY window(ts, '1 minute'), user_id",
        Some("append"),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        output(&p),
        names(&[
            ("window", DataType::Window),
            ("start", DataType::Timestamp),
            ("user_id", DataType::String),
            ("count(1)", DataType::Long)
        ])
    );
    let p = plan_with(
        "SELECT session_window, session_window.end AS e, count(*) FROM payments \
         GROUP BY session_window(ts, '5 seconds'), user_id",
        Some("append"),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        output(&p),
        names(&[("session_window", DataType::Window), ("e", DataType::Timestamp), ("count(1)", DataType::Long)])
    );
    // without a window in GROUP BY, `window` is an unknown column
    let e = refusal("SELECT window, count(*) FROM payments GROUP BY user_id");
    assert_eq!(e.field, "query.sql");
}

#[test]
fn a_session_gap_expression_is_computed_before_the_operator_as_a_string_column() {
    let p = plan_with(
        "SELECT session_window(ts, CASE WHEN amount > 10 THEN '10 seconds' ELSE '3 seconds' END), user_id, \
         count(*) FROM payments GROUP BY 1, 2",
        Some("append"),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let QuerySpec::WindowAggregate {
        window: Some(WindowSpec::Session { column, gap: SessionGap::Column(gap) }), ..
    } = &p.query
    else {
        panic!("{p:?}")
    };
    assert_eq!(column, "ts");
    let input = p.operator_input(&schema());
    let i = input.resolve(gap).unwrap_or_else(|| panic!("{gap} not in {input:?}"));
    assert_eq!(input.fields()[i].data_type, DataType::String);
    assert_eq!(
        output(&p),
        names(&[("session_window", DataType::Window), ("user_id", DataType::String), ("count(1)", DataType::Long)])
    );
    // a gap expression that is not a STRING is refused at query.sql
    let e = plan_with("SELECT count(*) FROM payments GROUP BY session_window(ts, amount * 2)", Some("append"))
        .expect_err("a BIGINT gap");
    assert_eq!(e.field, "query.sql");
}

#[test]
fn max_by_min_by_first_and_last_plan_with_spark_names_and_types() {
    let p = plan(
        "SELECT user_id, max_by(price, amount), min_by(price, amount * 2) AS lo, first(amount), last(ts) \
         FROM payments GROUP BY user_id",
    );
    assert_eq!(
        output(&p),
        names(&[
            ("user_id", DataType::String),
            ("max_by(price, amount)", DataType::Double),
            ("lo", DataType::Double),
            ("first(amount)", DataType::Long),
            ("last(ts)", DataType::Timestamp)
        ])
    );
}

#[test]
fn first_and_last_ignoring_nulls_plan_with_spark_names() {
    // pyspark 4.3: ignoreNulls is left out of the name; `first_value(x) IGNORE NULLS` is named
    // `first(x)`, `any_value(x) IGNORE NULLS` `any_value(x)`
    let p = plan(
        "SELECT user_id, first(amount, true), last(ts) AS l, FIRST_VALUE(price, TRUE), any_value(user_id) IGNORE NULLS, \
         last_value(price) IGNORE NULLS, first(amount) AS f, last(ts, true) RESPECT NULLS AS r FROM payments GROUP BY user_id",
    );
    assert_eq!(
        output(&p),
        names(&[
            ("user_id", DataType::String),
            ("first(amount)", DataType::Long),
            ("l", DataType::Timestamp),
            ("first_value(price)", DataType::Double),
            ("any_value(user_id)", DataType::String),
            ("last(price)", DataType::Double),
            ("f", DataType::Long),
            ("r", DataType::Timestamp),
        ])
    );
    let QuerySpec::WindowAggregate { measures, .. } = &p.query else { panic!("{p:?}") };
    let ignoring: Vec<(&str, bool)> = measures.iter().map(|m| (m.agg.as_str(), m.ignore_nulls)).collect();
    assert_eq!(
        ignoring,
        [
            ("first", true),
            ("last", false),
            ("first_value", true),
            ("any_value", true),
            ("last", true),
            ("first", false),
            ("last", false)
        ]
    );
    // the second argument is a boolean literal, as Spark's
    for sql in ["SELECT first(amount, 'true') FROM payments", "SELECT last(amount, NULL) FROM payments"] {
        let e = refusal(sql);
        assert!(e.given.contains("as the second argument of") && e.allowed.contains("boolean literal"), "{sql}: {e}");
    }
}

#[test]
fn count_of_several_arguments_and_numeric_aggregates_of_a_string_plan_with_spark_names_and_types() {
    let p = plan(
        "SELECT count(amount, price), count(user_id, amount + 1, gap) AS c, count(NULL, ts), sum(gap), avg(gap), \
         stddev_pop(upper(gap)), min(gap) FROM payments GROUP BY user_id",
    );
    assert_eq!(
        output(&p),
        names(&[
            ("count(amount, price)", DataType::Long),
            ("c", DataType::Long),
            ("count(NULL, ts)", DataType::Long),
            ("sum(gap)", DataType::Double),
            ("avg(gap)", DataType::Double),
            ("stddev_pop(upper(gap))", DataType::Double),
            ("min(gap)", DataType::String),
        ])
    );
}

#[test]
fn an_interval_literal_is_refused_as_a_window_duration_and_an_integer_is_microseconds() {
    for sql in [
        "SELECT count(*) FROM payments GROUP BY window(ts, INTERVAL 10 SECONDS)",
        "SELECT count(*) FROM payments GROUP BY window(ts, '10 seconds', INTERVAL '5' SECOND)",
        "SELECT count(*) FROM payments GROUP BY session_window(ts, INTERVAL 5 SECONDS)",
    ] {
        let e = plan_with(sql, Some("append")).expect_err(sql);
        assert!(e.given.contains("as a duration") && e.allowed.contains("refuses an INTERVAL literal"), "{sql}: {e}");
    }
    let p = plan("SELECT count(*) FROM payments GROUP BY window(ts, 10000000, 5000000L)");
    let QuerySpec::WindowAggregate { window, .. } = &p.query else { panic!("{p:?}") };
    assert_eq!(
        window,
        &Some(WindowSpec::Sliding {
            column: "ts".into(),
            size: Duration(10_000_000),
            slide: Duration(5_000_000),
            start: Duration(0)
        })
    );
}

#[test]
fn a_query_without_aggregation_forwards_records_through_filter_and_projection() {
    let p = plan("SELECT *, amount * 2 AS double_amount FROM payments WHERE price > 1");
    assert_eq!(p.query, QuerySpec::Forward);
    assert_eq!(p.source_steps.len(), 1);
    let out = output(&p);
    assert_eq!(out.len(), 6);
    assert_eq!(out[5], ("double_amount".to_string(), DataType::Long));
}

#[test]
fn spark_refusals_name_the_construct_and_its_position() {
    let cases: &[(&str, &str)] = &[
        (
            "SELECT user_id, amount, count(*) FROM payments GROUP BY user_id",
            "\"amount\" neither grouped nor aggregated (MISSING_AGGREGATION) at 1:17",
        ),
        (
            "SELECT user_id FROM payments WHERE sum(amount) > 1 GROUP BY user_id",
            "the aggregate sum(amount) in WHERE at 1:36",
        ),
        ("SELECT count(*) FROM payments GROUP BY sum(amount)", "(GROUP_BY_AGGREGATE) at 1:40"),
        ("SELECT sum(max(amount)) FROM payments", "(NESTED_AGGREGATE_FUNCTION) at 1:12"),
        (
            "SELECT user_id, count(*) FROM payments GROUP BY 3",
            "GROUP BY position 3 (GROUP_BY_POS_OUT_OF_RANGE) at 1:49",
        ),
        ("SELECT user_id, count(*) FROM payments GROUP BY 2", "(GROUP_BY_POS_AGGREGATE) at 1:49"),
        (
            "SELECT count(*) FROM payments GROUP BY window(amount * 2, '1 minute')",
            "the expression (amount * 2) of type BIGINT as the window's time at 1:47",
        ),
        ("SELECT count(*) FROM orders", "FROM orders at 1:22"),
        ("SELECT nope FROM payments", "the unknown column \"nope\" at 1:8"),
        ("SELECT max_by(user_id) FROM payments", "max_by(user_id) (not two arguments) at 1:8"),
        ("SELECT user_id FROM payments HAVING amount > 1", "HAVING without GROUP BY or aggregates at 1:37"),
        (
            "SELECT user_id, count(*) FROM payments GROUP BY user_id HAVING price > 1",
            "\"price\" neither grouped nor aggregated (MISSING_AGGREGATION) at 1:64",
        ),
        (
            "SELECT user_id, count(*) FROM payments GROUP BY user_id HAVING nope > 1",
            "the unknown column \"nope\" at 1:64",
        ),
        ("SELECT user_id, nope FROM payments GROUP BY user_id", "the unknown column \"nope\" at 1:17"),
    ];
    let wrong: Vec<String> = cases
        .iter()
        .filter_map(|(sql, expected)| {
            let e = refusal(sql);
            (e.field != "query.sql" || !e.given.contains(expected)).then(|| format!("{sql}: {e}"))
        })
        .collect();
    assert!(wrong.is_empty(), "{wrong:#?}");
}

#[test]
fn having_reads_select_aliases_as_spark() {
    // Spark resolves a HAVING name outside an aggregate to a select alias unless it is a
    // grouped column (checked on Spark 4.3): `amount` is the alias outside sum(...) and the
    // source's column inside max(...)
    let p = plan(
        "SELECT user_id, count(*) AS n, sum(amount) AS amount FROM payments GROUP BY user_id \
         HAVING n > 1 AND amount > 10 AND max(amount) > 5",
    );
    let QuerySpec::WindowAggregate { measures, .. } = &p.query else { panic!("{p:?}") };
    let m: Vec<&str> = measures.iter().map(|m| m.output_name.as_str()).collect();
    assert_eq!(m, ["count(1)", "sum(amount)", "max(amount)"]);
    assert!(
        matches!(&p.output_steps[0], Step::Filter(f)
            if f.typed.name == "(((count(1) > 1) AND (sum(amount) > 10)) AND (max(amount) > 5))"),
        "{:?}",
        p.output_steps[0]
    );
    // a grouped column wins over an alias of its name
    let p = plan("SELECT upper(user_id) AS user_id, count(*) FROM payments GROUP BY user_id HAVING user_id = 'a'");
    assert!(
        matches!(&p.output_steps[0], Step::Filter(f) if f.typed.name == "(user_id = a)"),
        "{:?}",
        p.output_steps[0]
    );
    // a field of an aliased window
    let p = plan_with(
        "SELECT window(ts, '1 minute') AS w, count(*) AS n FROM payments GROUP BY w \
         HAVING w.start > TIMESTAMP '2024-01-15 10:00:00' AND n > 1",
        Some("append"),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    assert!(matches!(&p.output_steps[0], Step::Filter(_)), "{:?}", p.output_steps[0]);
    assert_eq!(output(&p), names(&[("w", DataType::Window), ("n", DataType::Long)]));
}

#[test]
fn a_query_without_aggregation_takes_append_or_update_only() {
    let sql = "SELECT user_id, amount FROM payments WHERE amount > 0";
    for mode in ["append", "Update"] {
        assert!(plan_with(sql, Some(mode)).is_ok(), "{mode}");
    }
    // Spark refuses complete mode without a streaming aggregation; a misspelt mode is no mode
    for (mode, given) in [("complete", "\"complete\" (a query without aggregation)"), ("bogus", "\"bogus\"")] {
        let e = plan_with(sql, Some(mode)).err().unwrap_or_else(|| panic!("{mode} was accepted"));
        assert_eq!((e.field.as_str(), e.given.as_str()), ("query.output_mode", given), "{e}");
    }
}

#[test]
fn output_modes_follow_the_structured_query_rules() {
    let e = plan_with("SELECT user_id, count(*) FROM payments GROUP BY user_id", Some("append"))
        .err()
        .unwrap_or_else(|| panic!("append without a window was accepted"));
    assert_eq!(e.field, "query.output_mode");
    let e = plan_with("SELECT count(*) FROM payments GROUP BY session_window(ts, '5 seconds'), user_id", None)
        .err()
        .unwrap_or_else(|| panic!("update with a session window was accepted"));
    assert_eq!(e.field, "query.output_mode");
    assert!(e.given.contains("session window"), "{e}");
}

#[test]
fn a_selected_window_missing_from_group_by_is_named_before_the_output_mode() {
    // in append mode the output mode is wrong too (no window in GROUP BY), but the select item is
    // the mistake: Spark's analyzer names it first (MISSING_AGGREGATION)
    for mode in [Some("append"), None] {
        let e = plan_with("SELECT window(ts, '10 seconds'), user_id, count(*)\nFROM payments GROUP BY user_id", mode)
            .err()
            .unwrap_or_else(|| panic!("{mode:?}: a window not in GROUP BY was accepted"));
        assert_eq!(e.field, "query.sql", "{mode:?}: {e}");
        assert!(
            e.given
                .contains("window(ts, '10 seconds') in the select list, not in GROUP BY (MISSING_AGGREGATION) at 1:8"),
            "{mode:?}: {e}"
        );
    }
}

fn pipeline(query: &str) -> Result<eddy_engine::spec::Pipeline, SpecError> {
    let text = format!(
        "name = \"p\"\nmode = \"micro-batch\"\n[[source]]\nname = \"payments\"\ntype = \"files\"\npath = \"in\"\n\
         schema = \"user_id STRING, amount BIGINT, ts TIMESTAMP\"\nwatermark = {{ column = \"ts\", delay = \"10 seconds\" }}\n\
         [query]\n{query}\n[sink]\ntype = \"files\"\npath = \"out\"\nselect = [\"window.start AS start\", \"n\"]\n"
    );
    eddy_sql::parse_pipeline_str(&text)
}

#[test]
fn a_pipeline_runs_its_sql_query_over_the_named_source_with_the_sink_select_after_it() {
    let p = pipeline(
        "sql = \"SELECT window(ts, '30 seconds') AS window, count(*) AS n FROM PAYMENTS WHERE ts > TIMESTAMP '2024-01-01 00:00:00' GROUP BY 1\"",
    )
    .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(p.query_steps.len(), 1, "the condition on the watermark column runs after the watermark");
    let out: Vec<String> = p.output_schema().into_iter().map(|f| f.name).collect();
    assert_eq!(out, ["start", "n"]);
}

#[test]
fn sql_beside_a_structured_query_type_and_another_source_name_are_refused() {
    let e = pipeline("type = \"deduplicate\"\nsql = \"SELECT * FROM payments\"").err();
    assert_eq!(e.map(|e| e.field).as_deref(), Some("query.type"));
    let e = pipeline("sql = \"SELECT count(*) AS n FROM orders\"").err();
    assert!(e.as_ref().is_some_and(|e| e.field == "query.sql" && e.given.contains("FROM orders at 1:27")), "{e:?}");
    let e = pipeline("sql = \"SELECT count(*) AS n FROM payments ORDER BY n\"").err();
    assert!(e.as_ref().is_some_and(|e| e.field == "query.sql" && e.given.contains("ORDER BY at 1:36")), "{e:?}");
}

#[test]
fn count_if_of_null_counts_nothing_and_is_named_as_spark_names_it() {
    // Spark types the untyped NULL as BOOLEAN in count_if: 0 on every group
    let p = plan("SELECT user_id, count_if(NULL) AS none, count_if(NULL) FROM payments GROUP BY user_id");
    let QuerySpec::WindowAggregate { measures, .. } = &p.query else { panic!("{p:?}") };
    let m: Vec<&str> = measures.iter().map(|m| m.output_name.as_str()).collect();
    assert_eq!(m, ["count_if(NULL)"]);
    assert_eq!(
        output(&p),
        names(&[("user_id", DataType::String), ("none", DataType::Long), ("count_if(NULL)", DataType::Long)])
    );
    // its input is NULL on every record, so the count stays 0
    let Step::Project(items) = p.source_steps.last().expect("a projection") else { panic!("{p:?}") };
    let input = items.iter().find(|e| e.name.contains("NULL")).expect("the measure's input");
    let record = eddy_engine::value::Record::new(vec![
        Value::Str("u".into()),
        Value::Long(1),
        Value::Double(1.0),
        Value::Timestamp(eddy_engine::Timestamp(0)),
        Value::Null,
    ]);
    let v = eddy_engine::expr::Compiled::new(&input.typed).eval(&record).unwrap();
    assert_eq!(v, Value::Null);
}
