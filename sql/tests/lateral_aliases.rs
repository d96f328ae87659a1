//! Lateral column aliases: a select item reading the alias of an earlier item, as Spark 3.4+
//! resolves it by default. Names, types and refusals are Spark 4.3's (checked with the Spark
//! oracle; the golden cases `tests/cases-sql/sql-lateral-alias*` run the same rules end to end),
//! written by hand.

use eddy_engine::spec::{Mode, QuerySpec, SpecError, SqlQueryPlan, Step, WatermarkSpec, plan_sql_query};
use eddy_engine::{DataType, Duration, Schema};
use eddy_sql::parse_query;

fn schema() -> Schema {
    Schema::parse_ddl("user_id STRING, amount BIGINT, price DOUBLE, ts TIMESTAMP").unwrap_or_else(|e| panic!("{e}"))
}

fn plan_with(sql: &str) -> Result<SqlQueryPlan, SpecError> {
    let q = parse_query(sql).unwrap_or_else(|e| panic!("{sql}: {e}"));
    let watermark = WatermarkSpec { column: "ts".into(), index: 3, delay: Duration(10_000_000) };
    plan_sql_query(&q, "payments", &schema(), Some(&watermark), &[], None, Mode::MicroBatch)
}

fn plan(sql: &str) -> SqlQueryPlan {
    plan_with(sql).unwrap_or_else(|e| panic!("{sql}: {e}"))
}

fn output(p: &SqlQueryPlan) -> Vec<(String, DataType)> {
    p.output_schema(&schema()).fields().iter().map(|f| (f.name.clone(), f.data_type)).collect()
}

fn names(cols: &[(&str, DataType)]) -> Vec<(String, DataType)> {
    cols.iter().map(|(n, t)| (n.to_string(), *t)).collect()
}

/// The bound expressions' names of the last projection (the select list): what each item reads.
fn select_list(p: &SqlQueryPlan) -> Vec<String> {
    match p.output_steps.last() {
        Some(Step::Project(list)) => list.iter().map(|e| e.typed.name.clone()).collect(),
        other => panic!("no select list: {other:?}"),
    }
}

#[test]
fn an_item_reads_the_alias_of_an_earlier_item_and_is_named_as_spark_names_it() {
    let p = plan(
        "SELECT price * amount AS gross, gross * 0.2 AS tax, gross + tax AS total, gross * 2, GROSS - 1 \
         FROM payments",
    );
    assert_eq!(p.query, QuerySpec::Forward);
    assert_eq!(
        output(&p),
        names(&[
            ("gross", DataType::Double),
            ("tax", DataType::Double),
            ("total", DataType::Double),
            ("(lateralAliasReference(gross) * 2)", DataType::Double),
            ("(lateralAliasReference(GROSS) - 1)", DataType::Double),
        ])
    );
    // an alias of an alias: `total` reads both, each as its expression
    assert_eq!(
        select_list(&p)[2],
        "(lateralAliasReference(gross) + lateralAliasReference(tax))",
        "{:?}",
        p.output_steps
    );
}

#[test]
fn a_source_column_of_the_name_wins_over_the_alias() {
    let p = plan("SELECT amount * 10 AS amount, amount + 1 AS next_amount, upper(user_id) AS user_id FROM payments");
    // `amount + 1` reads the source's amount, not `amount * 10`
    assert_eq!(select_list(&p), ["(amount * 10)", "(amount + 1)", "upper(user_id)"]);
    assert_eq!(output(&p)[1], ("next_amount".to_string(), DataType::Long));
}

#[test]
fn a_bare_reference_and_a_field_of_an_aliased_struct_are_named_as_written() {
    let p = plan(
        "SELECT named_struct('q', price, 'n', amount) AS s, s.Q, s.n + 1, \
         amount * 2 AS twice, struct(twice) AS st2 FROM payments",
    );
    let out = output(&p);
    let got: Vec<&str> = out.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(got, ["s", "Q", "(lateralAliasReference(n) + 1)", "twice", "st2"]);
    assert_eq!(out[1].1, DataType::Double);
    let p = plan("SELECT price AS p, p AS p2, P + 1 AS p3 FROM payments");
    assert_eq!(select_list(&p), ["price", "lateralAliasReference(p)", "(lateralAliasReference(P) + 1)"]);
    // a bare reference is named, but defines no alias (Spark: `q` below is an unknown column)
    let e = plan_with("SELECT named_struct('q', price) AS s, s.q, q + 1 AS q1 FROM payments").err();
    assert!(e.as_ref().is_some_and(|e| e.given.contains("the unknown column \"q\" at 1:44")), "{e:?}");
    // struct(alias): the field is named as the reference (Spark: {"twice": ...})
    let DataType::Struct(st2) = out[4].1 else { panic!("{out:?}") };
    assert_eq!(st2.fields().iter().map(|f| f.name.as_str()).collect::<Vec<_>>(), ["twice"]);
}

#[test]
fn an_aggregating_query_reads_an_aggregate_alias_as_its_value() {
    let p = plan(
        "SELECT user_id AS u, upper(u) AS u_upper, sum(amount) AS total, total / count(*) AS avg_v, total * 2, \
         max(price) AS top, top - min(price) AS spread FROM payments GROUP BY user_id",
    );
    let QuerySpec::WindowAggregate { measures, .. } = &p.query else { panic!("{p:?}") };
    let m: Vec<&str> = measures.iter().map(|m| m.output_name.as_str()).collect();
    // `total` is the one sum(amount), not a second measure
    assert_eq!(m, ["sum(amount)", "count(1)", "max(price)", "min(price)"]);
    assert_eq!(
        output(&p),
        names(&[
            ("u", DataType::String),
            ("u_upper", DataType::String),
            ("total", DataType::Long),
            ("avg_v", DataType::Double),
            ("(lateralAliasReference(total) * 2)", DataType::Long),
            ("top", DataType::Double),
            ("spread", DataType::Double),
        ])
    );
}

#[test]
fn having_reads_an_alias_that_holds_a_lateral_reference() {
    let p = plan("SELECT user_id, count(*) AS n, n * 2 AS n2 FROM payments GROUP BY user_id HAVING n2 > 2");
    assert!(
        matches!(&p.output_steps[0], Step::Filter(f) if f.typed.name == "((lateralAliasReference(n) * 2) > 2)"),
        "{:?}",
        p.output_steps[0]
    );
}

#[test]
fn spark_refusals_of_lateral_aliases_name_the_reference_and_its_position() {
    let cases: &[(&str, &str)] = &[
        // only an earlier item's alias is visible
        ("SELECT later + 1 AS x, amount AS later FROM payments", "the unknown column \"later\" at 1:8"),
        // WHERE and GROUP BY expressions do not see select aliases
        ("SELECT amount * 2 AS a2 FROM payments WHERE a2 > 1", "the unknown column \"a2\" at 1:45"),
        // a qualified name is never an alias
        ("SELECT amount * 2 AS a2, payments.a2 + 1 AS a3 FROM payments", "the unknown column \"a2\" at 1:26"),
        (
            "SELECT amount AS a, price AS a, a + 1 AS b FROM payments",
            "the lateral column alias a of select items 1 and 2 (AMBIGUOUS_LATERAL_COLUMN_ALIAS) at 1:33",
        ),
        (
            "SELECT user_id, amount * 2 AS a2, sum(a2) AS s FROM payments GROUP BY user_id, amount",
            "(LATERAL_COLUMN_ALIAS_IN_AGGREGATE_FUNC) at 1:39",
        ),
        (
            "SELECT amount + 1 AS a, a * 2 AS b, count(*) FROM payments GROUP BY b",
            "GROUP BY b, a select item that reads the lateral column alias at 1:25 \
             (LATERAL_COLUMN_ALIAS_IN_GROUP_BY) at 1:69",
        ),
        (
            "SELECT amount + 1 AS a, a * 2 AS b, count(*) FROM payments GROUP BY 2",
            "GROUP BY position 2, a select item that reads the lateral column alias at 1:25 \
             (LATERAL_COLUMN_ALIAS_IN_GROUP_BY) at 1:69",
        ),
    ];
    let wrong: Vec<String> = cases
        .iter()
        .filter_map(|(sql, expected)| match plan_with(sql) {
            Err(e) if e.field == "query.sql" && e.given.contains(expected) => None,
            Err(e) => Some(format!("{sql}: {e}")),
            Ok(p) => Some(format!("{sql}: planned {p:?}")),
        })
        .collect();
    assert!(wrong.is_empty(), "{wrong:#?}");
}

#[test]
fn each_select_of_a_union_reads_its_own_lateral_aliases() {
    let text = r#"name = "u"
mode = "micro-batch"
[[source]]
name = "a"
type = "files"
path = "in_a"
schema = "k STRING, v BIGINT, ts TIMESTAMP"

[[source]]
name = "b"
type = "files"
path = "in_b"
schema = "k STRING, v BIGINT, ts TIMESTAMP"

[query]
sql = """
SELECT v * 2 AS twice, twice + 1 AS next, k FROM a
UNION ALL
SELECT v AS w, w * 10, upper(k) FROM b
"""

[sink]
type = "files"
path = "out"
"#;
    let p = eddy_sql::parse_pipeline_str(text).unwrap_or_else(|e| panic!("{e}"));
    // the first SELECT's names; the second's `w * 10` reads its own alias `w`
    let out: Vec<(String, DataType)> = p.query_output_schema().iter().map(|f| (f.name.clone(), f.data_type)).collect();
    assert_eq!(out, names(&[("twice", DataType::Long), ("next", DataType::Long), ("k", DataType::String)]));
    // an alias of the other SELECT is not visible
    let e = eddy_sql::parse_pipeline_str(&text.replace("w * 10", "twice * 10")).err();
    assert!(e.as_ref().is_some_and(|e| e.given.contains("the unknown column \"twice\"")), "{e:?}");
}
