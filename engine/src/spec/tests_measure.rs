//! Tests of the measure rules, Spark's default names and result types. Expected names and types
//! are Spark's, as pyspark 4.3.0 printed them (see `output.rs`).

use super::tests_query::{col, fields, with_measures};
use super::*;
use crate::schema::{ArrayOf, DataType};

#[test]
fn measures_are_required_and_aggregates_known() {
    assert_eq!(
        with_measures("[]").unwrap_err().to_string(),
        "query.measures: given []; allowed: a non-empty list of { agg, column?, alias?, ... }"
    );
    let e = with_measures("[{ agg = \"count\" }, { agg = \"median\", column = \"v\" }]").unwrap_err();
    assert_eq!(e.field, "query.measures[1].agg");
    assert!(e.allowed.contains("approx_percentile") && e.allowed.contains("stddev_pop"), "{e}");
    assert_eq!(with_measures("[{ column = \"v\" }]").unwrap_err().field, "query.measures[0].agg");
    let p =
        with_measures("[{ agg = \"SUM\", column = \"v\" }, { agg = \"percentile_approx\", column = \"n\" }]").unwrap();
    assert_eq!(p.query.measures()[0].agg, "sum");
    assert_eq!(p.query.measures()[1].agg, "approx_percentile");
}

#[test]
fn measure_columns_exist_and_have_an_accepted_type() {
    let e = with_measures("[{ agg = \"sum\", column = \"k\" }]").unwrap_err();
    assert_eq!(
        e.to_string(),
        "query.measures[0].column: given \"k\" (a STRING column, for sum); allowed: a numeric (INT, BIGINT, FLOAT, DOUBLE, DECIMAL) column: v, n, i"
    );
    assert_eq!(with_measures("[{ agg = \"avg\", column = \"ts\" }]").unwrap_err().field, "query.measures[0].column");
    assert_eq!(with_measures("[{ agg = \"stddev\", column = \"b\" }]").unwrap_err().field, "query.measures[0].column");
    assert_eq!(
        with_measures("[{ agg = \"approx_percentile\", column = \"k\" }]").unwrap_err().field,
        "query.measures[0].column"
    );
    assert_eq!(with_measures("[{ agg = \"sum\" }]").unwrap_err().field, "query.measures[0].column");
    assert_eq!(with_measures("[{ agg = \"sum\", column = \"*\" }]").unwrap_err().field, "query.measures[0].column");
    assert_eq!(
        with_measures("[{ agg = \"count\", column = \"nope\" }]").unwrap_err().field,
        "query.measures[0].column"
    );
    for fine in [
        "{ agg = \"count\", column = \"b\" }",
        "{ agg = \"count\", column = \"*\" }",
        "{ agg = \"min\", column = \"k\" }",
        "{ agg = \"max\", column = \"ts\" }",
        "{ agg = \"approx_count_distinct\", column = \"k\" }",
        "{ agg = \"approx_percentile\", column = \"ts\" }",
    ] {
        assert!(with_measures(&format!("[{fine}]")).is_ok(), "{fine}");
    }
}

#[test]
fn percentile_options_are_checked() {
    let p =
        with_measures("[{ agg = \"approx_percentile\", column = \"n\", percentage = [0.25, 0.75], accuracy = 100 }]")
            .unwrap();
    let m = &p.query.measures()[0];
    assert_eq!((m.percentages.clone(), m.percentage_is_list, m.accuracy), (vec![0.25, 0.75], true, 100));
    let m = &with_measures("[{ agg = \"approx_percentile\", column = \"n\" }]").unwrap().query.measures()[0].clone();
    assert_eq!((m.percentages.clone(), m.percentage_is_list, m.accuracy), (vec![0.5], false, 10_000));
    let bad = |m: &str| {
        with_measures(&format!("[{{ agg = \"approx_percentile\", column = \"n\", {m} }}]")).unwrap_err().field
    };
    assert_eq!(bad("percentage = 1.5"), "query.measures[0].percentage");
    assert_eq!(bad("percentage = -0.1"), "query.measures[0].percentage");
    assert_eq!(bad("percentage = [0.5, 2]"), "query.measures[0].percentage[1]");
    assert_eq!(bad("percentage = []"), "query.measures[0].percentage");
    assert_eq!(bad("percentage = \"half\""), "query.measures[0].percentage");
    assert_eq!(bad("accuracy = 0"), "query.measures[0].accuracy");
    assert_eq!(bad("accuracy = 2147483648"), "query.measures[0].accuracy");
    assert!(
        with_measures("[{ agg = \"approx_percentile\", column = \"n\", accuracy = 2147483647, percentage = 0 }]")
            .is_ok()
    );
}

#[test]
fn rsd_follows_spark_precision_bounds() {
    let m = |r: &str| with_measures(&format!("[{{ agg = \"approx_count_distinct\", column = \"k\"{r} }}]"));
    assert_eq!(m("").unwrap().query.measures()[0].rsd, 0.05);
    // pyspark 4.3 accepted 0.005 and 0.39, refused 0.392 (p = ceil(2 log2(1.106 / rsd)) < 4).
    assert_eq!(m(", rsd = 0.005").unwrap().query.measures()[0].rsd, 0.005);
    assert!(m(", rsd = 0.39").is_ok());
    for bad in ["0.392", "0.5", "1.0", "0.0", "-0.1", "0.0001"] {
        let e = m(&format!(", rsd = {bad}")).unwrap_err();
        assert_eq!((e.field.as_str(), e.given.as_str()), ("query.measures[0].rsd", bad));
    }
    // 2 log2(1.106 / 0.05) = 8.93: Spark's default rsd uses 2^9 registers.
    assert_eq!(spark_hll_precision(0.05), 9);
}

#[test]
fn options_of_another_aggregate_are_refused() {
    let e = with_measures("[{ agg = \"sum\", column = \"v\", rsd = 0.1 }]").unwrap_err();
    assert_eq!(
        e.to_string(),
        "query.measures[0].rsd: given 0.1 (not a field of agg \"sum\"); allowed: agg, column, alias"
    );
    assert_eq!(
        with_measures("[{ agg = \"count\", percentage = 0.5 }]").unwrap_err().field,
        "query.measures[0].percentage"
    );
    let e = with_measures("[{ agg = \"count\", over = \"1 hour\" }]").unwrap_err();
    assert_eq!(
        e.to_string(),
        "query.measures[0].over: given \"1 hour\" (not a field of query type \"window_aggregate\"); allowed: agg, column, alias"
    );
}

#[test]
fn output_names_are_distinct() {
    let e = with_measures("[{ agg = \"count\" }, { agg = \"count\", column = \"*\" }]").unwrap_err();
    assert_eq!(
        e.to_string(),
        "query.measures[1]: given output column \"count(1)\" (already the name of query.measures[0]); allowed: a distinct output column name (set an alias)"
    );
    assert!(with_measures("[{ agg = \"count\" }, { agg = \"count\", alias = \"n\" }]").is_ok());
    assert_eq!(with_measures("[{ agg = \"count\", alias = \"k\" }]").unwrap_err().field, "query.measures[0].alias");
    assert_eq!(
        with_measures("[{ agg = \"count\", alias = \"window\" }]").unwrap_err().field,
        "query.measures[0].alias"
    );
    assert_eq!(with_measures("[{ agg = \"count\", alias = \"\" }]").unwrap_err().field, "query.measures[0].alias");
    // mean is Spark's avg: same default name.
    assert_eq!(
        with_measures("[{ agg = \"avg\", column = \"v\" }, { agg = \"mean\", column = \"v\" }]").unwrap_err().field,
        "query.measures[1]"
    );
}

#[test]
fn window_aggregate_output_schema_is_window_keys_measures() {
    let p = with_measures(
        "[{ agg = \"count\" }, { agg = \"count\", column = \"k\" }, { agg = \"sum\", column = \"n\" }, { agg = \"sum\", column = \"i\" }, \
         { agg = \"sum\", column = \"v\" }, { agg = \"mean\", column = \"n\" }, { agg = \"min\", column = \"k\" }, { agg = \"max\", column = \"ts\" }, \
         { agg = \"stddev\", column = \"i\" }, { agg = \"var_pop\", column = \"v\" }, { agg = \"approx_count_distinct\", column = \"k\", rsd = 0.01 }, \
         { agg = \"approx_percentile\", column = \"n\" }, { agg = \"approx_percentile\", column = \"i\", percentage = [0.25, 1.0], accuracy = 100 }, \
         { agg = \"approx_percentile\", column = \"v\", percentage = 0.0001, alias = \"p\" }, { agg = \"percentile_approx\", column = \"n\", percentage = 1, accuracy = 10 }]",
    )
    .unwrap();
    assert_eq!(
        fields(&p),
        vec![
            col("window", DataType::Window),
            col("k", DataType::String),
            col("count(1)", DataType::Long),
            col("count(k)", DataType::Long),
            col("sum(n)", DataType::Long),
            col("sum(i)", DataType::Long),
            col("sum(v)", DataType::Double),
            col("avg(n)", DataType::Double),
            col("min(k)", DataType::String),
            col("max(ts)", DataType::Timestamp),
            col("stddev(i)", DataType::Double),
            col("var_pop(v)", DataType::Double),
            col("approx_count_distinct(k)", DataType::Long),
            col("percentile_approx(n, 0.5, 10000)", DataType::Long),
            col("percentile_approx(i, array(0.25, 1.0), 100)", DataType::Array(ArrayOf::Int)),
            col("p", DataType::Double),
            col("percentile_approx(n, 1, 10)", DataType::Long),
        ]
    );
}

#[test]
fn spark_double_literals_match_java() {
    // As pyspark 4.3 printed them in percentile_approx names.
    for (x, s) in [
        (0.5, "0.5"),
        (1.0, "1.0"),
        (0.0, "0.0"),
        (0.25, "0.25"),
        (0.001, "0.001"),
        (1e-4, "1.0E-4"),
        (0.1, "0.1"),
        (1.0 / 3.0, "0.3333333333333333"),
    ] {
        assert_eq!(spark_double_literal(x), s);
    }
    assert_eq!(spark_double_literal(1.5e-5), "1.5E-5");
    assert_eq!(spark_double_literal(2.5e7), "2.5E7");
    assert_eq!(
        default_measure_name("approx_percentile", Some("v"), &[0.25, 0.5], true, 10_000),
        "percentile_approx(v, array(0.25, 0.5), 10000)"
    );
    assert_eq!(default_measure_name("count", None, &[], false, 10_000), "count(1)");
}

#[test]
fn measure_output_types_follow_spark() {
    use DataType::*;
    assert_eq!(measure_output_type("sum", Int, false), Some(Long));
    assert_eq!(measure_output_type("sum", Float, false), Some(Double));
    assert_eq!(measure_output_type("sum", String, false), None);
    assert_eq!(measure_output_type("min", Boolean, false), Some(Boolean));
    assert_eq!(measure_output_type("max", Float, false), Some(Float));
    assert_eq!(measure_output_type("approx_percentile", Timestamp, true), Some(Array(ArrayOf::Timestamp)));
    assert_eq!(measure_output_type("approx_count_distinct", Boolean, false), Some(Long));
    assert_eq!(measure_output_type("variance", Long, false), Some(Double));
}

#[test]
fn min_and_max_of_a_boolean_column_are_accepted_as_spark_accepts_them() {
    let p = with_measures("[{ agg = \"min\", column = \"b\" }, { agg = \"max\", column = \"B\" }]").unwrap();
    let out = p.output_schema();
    let last: Vec<(&str, DataType)> = out[out.len() - 2..].iter().map(|f| (f.name.as_str(), f.data_type)).collect();
    assert_eq!(last, vec![("min(b)", DataType::Boolean), ("max(B)", DataType::Boolean)]);
}

/// Spark 4.3's analyser, per aggregate and input type (pyspark 4.3.0, `selectExpr` over a
/// one-row literal of each type): the result type where Spark accepts the input, `None` where
/// it refuses it. `eddy` marks the cells where Eddy refuses what Spark accepts (Spark casts a
/// STRING to DOUBLE, failing the query on a non-numeric value, and a TIMESTAMP to DOUBLE
/// seconds for sum / avg).
#[test]
fn every_aggregate_takes_the_input_types_spark_takes_with_spark_s_result_type() {
    use DataType::*;
    let types = [String, Long, Int, Double, Float, Boolean, Timestamp];
    let d = Some(Double);
    #[rustfmt::skip]
    let spark: [(&str, [Option<DataType>; 7]); 13] = [
        //                          STRING   BIGINT      INT        DOUBLE      FLOAT      BOOLEAN        TIMESTAMP
        ("count",                 [Some(Long), Some(Long), Some(Long), Some(Long), Some(Long), Some(Long), Some(Long)]),
        ("sum",                   [d,        Some(Long), Some(Long), d,          d,          None,          d]),
        ("avg",                   [d,        d,          d,          d,          d,          None,          d]),
        ("min",                   [Some(String), Some(Long), Some(Int), d, Some(Float), Some(Boolean), Some(Timestamp)]),
        ("max",                   [Some(String), Some(Long), Some(Int), d, Some(Float), Some(Boolean), Some(Timestamp)]),
        ("stddev",                [d,        d,          d,          d,          d,          None,          None]),
        ("stddev_samp",           [d,        d,          d,          d,          d,          None,          None]),
        ("stddev_pop",            [d,        d,          d,          d,          d,          None,          None]),
        ("variance",              [d,        d,          d,          d,          d,          None,          None]),
        ("var_samp",              [d,        d,          d,          d,          d,          None,          None]),
        ("var_pop",               [d,        d,          d,          d,          d,          None,          None]),
        ("approx_count_distinct", [Some(Long), Some(Long), Some(Long), Some(Long), Some(Long), Some(Long), Some(Long)]),
        ("approx_percentile",     [d,        Some(Long), Some(Int), d,         Some(Float), None,          Some(Timestamp)]),
    ];
    // Where Eddy refuses what Spark accepts by an implicit cast (spec/mod.rs lists them).
    let eddy_refuses = |agg: &str, t: DataType| {
        (t == String && !matches!(agg, "count" | "min" | "max" | "approx_count_distinct"))
            || (t == Timestamp && matches!(agg, "sum" | "avg"))
    };
    for (agg, row) in spark {
        for (t, spark_type) in types.into_iter().zip(row) {
            let expected = if eddy_refuses(agg, t) { None } else { spark_type };
            assert_eq!(measure_output_type(agg, t, false), expected, "{agg}({t})");
            if agg == "approx_percentile" {
                assert_eq!(measure_output_type(agg, t, true), expected.and_then(DataType::array_of), "{agg}({t}) list");
            }
        }
    }
}
