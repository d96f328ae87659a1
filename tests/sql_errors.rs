//! Wrong expressions and SQL queries in a pipeline file (SQL.md, PIPELINE.md "Several sources,
//! static tables, expressions and SQL"): `eddy validate` exits 2 naming the field, the
//! line:column inside the string and what was found and what is allowed; and evaluation errors
//! of a `[query] sql` (SQL.md "Errors while evaluating") go to the dead-letter sink while the run
//! goes on, in both modes.
//!
//! The expected fields, positions and phrases are written by hand from the pipeline text.

use std::path::Path;
use std::process::{Command, Output};

/// A micro-batch pipeline over one files source: `{query}` is the `[query]` table's body,
/// `{schema}` the source's schema and `{sink}` extra lines (and tables) after `[sink]`.
fn pipeline(schema: &str, query: &str, sink: &str) -> String {
    format!(
        r#"
name = "sql-errors"
mode = "micro-batch"
[source]
type = "files"
path = "input"
format = "json"
schema = "{schema}"
[watermark]
column = "ts"
delay = "10 seconds"
[query]
{query}
[sink]
type = "files"
path = "output"
{sink}
"#
    )
}

const SCHEMA: &str = "k STRING, ts TIMESTAMP, v DOUBLE, n BIGINT, t2 TIMESTAMP";

/// A pipeline whose query is `sql` (written in a TOML multi-line string, so its line 1 is the
/// line after the opening quotes).
fn sql(text: &str) -> String {
    pipeline(SCHEMA, &format!("sql = \"\"\"\n{text}\"\"\""), "")
}

fn sql_with(text: &str, query: &str, sink: &str) -> String {
    pipeline(SCHEMA, &format!("sql = \"\"\"\n{text}\"\"\"\n{query}"), sink)
}

fn eddy(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_eddy")).args(args).current_dir(dir).env("EDDY_LOG", "warn").output().unwrap()
}

/// Writes `pipeline` with an empty input folder, runs `eddy validate` on it and returns the
/// wrong outcome, if any: an exit other than 2, or a stderr without one of `words`.
fn wrong_outcome(what: &str, pipeline: &str, words: &[&str]) -> Option<String> {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::create_dir(tmp.path().join("input")).unwrap();
    std::fs::write(tmp.path().join("p.toml"), pipeline).unwrap();
    let out = eddy(tmp.path(), &["validate", "p.toml"]);
    let err = String::from_utf8_lossy(&out.stderr);
    let missing: Vec<&&str> = words.iter().filter(|w| !err.contains(**w)).collect();
    (out.status.code() != Some(2) || !missing.is_empty())
        .then(|| format!("{what}: exit {:?}, missing {missing:?} in: {err}", out.status.code()))
}

fn check_all(cases: Vec<(&str, String, Vec<&str>)>) {
    let wrong: Vec<String> =
        cases.iter().filter_map(|(what, pipeline, words)| wrong_outcome(what, pipeline, words)).collect();
    assert!(wrong.is_empty(), "{} of {} wrong:\n{}", wrong.len(), cases.len(), wrong.join("\n"));
}

#[test]
fn wrong_sql_queries_exit_2_naming_the_field_the_position_and_what_is_allowed() {
    let late_select = format!("{}\n[late_sink]\ntype = \"stdout\"\nselect = [\"k\"]\n", sql("SELECT k FROM source"));
    let cases: Vec<(&str, String, Vec<&str>)> = vec![
        (
            "unknown column",
            sql("SELECT nope FROM source"),
            vec!["query.sql", "unknown column \"nope\" at 1:8", "k, ts, v, n, t2"],
        ),
        // (a string beside a number is cast, as Spark's ANSI coercion: `k + 1` is BIGINT)
        (
            "arithmetic on a boolean",
            sql("SELECT (v > 1) + 1 FROM source"),
            vec!["query.sql", "BOOLEAN", "at 1:9", "BIGINT"],
        ),
        ("timestamp minus timestamp", sql("SELECT ts - ts AS d FROM source"), vec!["query.sql", "TIMESTAMP", "at 1:8"]),
        // the operand of the wrong type is named where it is written, not where the sum begins
        (
            "a number plus a boolean",
            sql("SELECT k,\n  v + true AS x FROM source"),
            vec!["query.sql", "arithmetic of BOOLEAN (true) at 2:7"],
        ),
        (
            "OR of a number",
            sql("SELECT k FROM source WHERE v > 1 OR n"),
            vec!["query.sql", "AND / OR of BIGINT (n) at 1:37"],
        ),
        (
            "a day name in a pattern that parses text",
            sql("SELECT date_format(ts, 'EEE') AS day,\n  to_timestamp(k, 'EEE yyyy-MM-dd') AS t FROM source"),
            vec![
                "query.sql",
                "a day name (E) in the pattern 'EEE yyyy-MM-dd' of to_timestamp",
                "at 2:19",
                "date_format",
            ],
        ),
        (
            "five day-name letters",
            sql("SELECT date_format(ts, 'EEEEE') FROM source"),
            vec!["query.sql", "'EEEEE'", "at 1:24"],
        ),
        (
            "a WHERE that is not boolean",
            sql("SELECT k FROM source WHERE v"),
            vec!["query.sql", "of type DOUBLE at 1:28", "a BOOLEAN condition"],
        ),
        (
            "a HAVING that is not boolean",
            sql("SELECT k, count(*) FROM source GROUP BY k HAVING count(*)"),
            vec!["query.sql", "of type BIGINT at 1:50", "a BOOLEAN condition"],
        ),
        (
            "an aggregate in WHERE",
            sql("SELECT k FROM source WHERE sum(v) > 1"),
            vec!["query.sql", "sum(v) in WHERE at 1:28", "HAVING"],
        ),
        (
            "a column neither grouped nor aggregated",
            sql("SELECT k, v, count(*) FROM source GROUP BY k"),
            vec!["query.sql", "\"v\" neither grouped nor aggregated", "at 1:11", "GROUP BY"],
        ),
        (
            "nested aggregates",
            sql("SELECT k, sum(sum(v)) FROM source GROUP BY k"),
            vec!["query.sql", "sum(v) inside sum(sum(v))", "at 1:15"],
        ),
        (
            "an interval with an unknown unit, pointed at the argument",
            sql("SELECT window(ts, '5 minuts'), count(*) FROM source GROUP BY 1"),
            vec!["query.sql", "\"5 minuts\"", "unknown unit \"minuts\"", "at 1:19", "a duration > 0"],
        ),
        (
            "an INTERVAL literal as a window's size, refused as Spark refuses it",
            sql("SELECT window(ts, INTERVAL 10 SECONDS), count(*) FROM source GROUP BY 1"),
            vec![
                "query.sql",
                "INTERVAL '10' SECOND as a duration at 1:19",
                "as Spark (which refuses an INTERVAL literal here)",
            ],
        ),
        (
            "an INTERVAL literal as a session window's gap, on line 2",
            sql_with(
                "SELECT count(*) FROM source\nGROUP BY session_window(ts, INTERVAL 5 SECONDS)",
                "output_mode = \"append\"",
                "",
            ),
            vec!["query.sql", "INTERVAL '05' SECOND as a duration at 2:29", "refuses an INTERVAL literal"],
        ),
        (
            "first's second argument not a boolean literal",
            sql("SELECT k, first(v, 'true') FROM source GROUP BY k"),
            vec!["query.sql", "'true' as the second argument of first at 1:20", "a boolean literal"],
        ),
        (
            "IGNORE NULLS after an aggregate that does not take it",
            sql("SELECT k, count(v) IGNORE NULLS FROM source GROUP BY k"),
            vec!["query.sql", "count does not take IGNORE / RESPECT NULLS", "at 1:11", "first, first_value, last"],
        ),
        (
            "a slide longer than the window, pointed at the slide",
            sql("SELECT window(ts, '5 seconds', '7 seconds'), count(*) FROM source GROUP BY 1"),
            vec!["query.sql", "\"7 seconds\" at 1:32", "<= the window size"],
        ),
        ("an unknown function", sql("SELECT frob(v) FROM source"), vec!["query.sql", "function frob at 1:8", "lower"]),
        (
            "a window in WHERE",
            sql("SELECT k FROM source WHERE window(ts, '5 seconds') IS NOT NULL"),
            vec!["query.sql", "window(ts, '5 seconds') in WHERE at 1:28", "in GROUP BY"],
        ),
        (
            "two windows in GROUP BY",
            sql("SELECT count(*) FROM source GROUP BY window(ts, '5 seconds'), window(ts, '10 seconds')"),
            vec!["query.sql", "a second window", "at 1:63", "one window(...)"],
        ),
        (
            "ORDER BY",
            sql("SELECT k FROM source ORDER BY k"),
            vec!["query.sql", "ORDER BY at 1:22", "Spark sorts a stream only after an aggregation in complete mode"],
        ),
        ("LIMIT", sql("SELECT k FROM source LIMIT 3"), vec!["query.sql", "LIMIT at 1:22", "one SELECT"]),
        (
            "DISTINCT over an aggregation",
            sql("SELECT DISTINCT k, count(*) FROM source GROUP BY k"),
            vec!["query.sql", "SELECT DISTINCT over an aggregation (GROUP BY, HAVING or an aggregate function) at 1:8"],
        ),
        (
            "count(DISTINCT)",
            sql("SELECT k, count(DISTINCT v) FROM source GROUP BY k"),
            vec!["query.sql", "count(DISTINCT ...) at 1:11", "approx_count_distinct"],
        ),
        (
            "a join",
            sql("SELECT a.k FROM source a JOIN source b ON a.k = b.k"),
            vec!["query.sql", "the source source joined with itself at 1:31", "a self-join is not supported"],
        ),
        (
            "UNION ALL of one source with itself",
            sql("SELECT k FROM source UNION ALL SELECT k FROM source"),
            vec!["query.sql", "FROM source a second time in the union at 1:46", "each source once"],
        ),
        (
            "UNION of an unknown source, on the second line",
            sql("SELECT k FROM source\nUNION SELECT k FROM other"),
            vec!["query.sql", "FROM other (no source of that name) at 2:21", "source"],
        ),
        (
            "INTERSECT",
            sql("SELECT k FROM source INTERSECT SELECT k FROM source"),
            vec!["query.sql", "INTERSECT at 1:22"],
        ),
        (
            "a subquery in FROM",
            sql("SELECT k FROM (SELECT k FROM source)"),
            vec!["query.sql", "a subquery in FROM at 1:16"],
        ),
        (
            "a subquery in WHERE",
            sql("SELECT k FROM source WHERE k IN (SELECT k FROM source)"),
            vec!["query.sql", "a subquery at 1:28"],
        ),
        (
            "WITH",
            sql("WITH x AS (SELECT k FROM source) SELECT k FROM x"),
            vec!["query.sql", "WITH (a common table expression) at 1:1"],
        ),
        (
            "OVER",
            sql("SELECT k, sum(v) OVER (PARTITION BY k) FROM source"),
            vec!["query.sql", "OVER (PARTITION BY k)` at 1:11", "rolling_window"],
        ),
        (
            "two statements",
            sql("SELECT k FROM source; SELECT v FROM source"),
            vec!["query.sql", "at 1:23", "several statements"],
        ),
        (
            "hash of a DECIMAL wider than 18 digits",
            sql("SELECT hash(CAST(v AS DECIMAL(20, 2))) FROM source"),
            vec!["query.sql", "hash of DECIMAL(20,2)", "p <= 18"],
        ),
        (
            "two output columns with one name",
            sql("SELECT k, upper(k) AS K FROM source"),
            vec![
                "query.sql",
                "a second output column \"K\" (select item 2; item 1 at 1:8",
                "at 1:11",
                "rename one with AS",
            ],
        ),
        (
            "a star and a column it holds",
            sql("SELECT *, n FROM source"),
            vec!["query.sql", "a second output column \"n\" (select item 6; item 4 at 1:8", "at 1:11"],
        ),
        (
            "two aggregates with one name",
            sql("SELECT k, count(*) AS c, sum(v) AS c FROM source GROUP BY k"),
            vec!["query.sql", "a second output column \"c\" (select item 3; item 2 at 1:11", "at 1:26"],
        ),
        (
            "FROM naming another source",
            sql("SELECT k FROM other"),
            vec!["query.sql", "FROM other at 1:15", "FROM source"],
        ),
        (
            "a window time that is no TIMESTAMP",
            sql("SELECT window(n + 1, '5 seconds'), count(*) FROM source GROUP BY 1"),
            vec![
                "query.sql",
                "the expression (n + 1) of type BIGINT as the window's time at 1:15",
                "a TIMESTAMP column or expression",
            ],
        ),
        (
            // Spark 4.3 refuses it: STREAMING_OUTPUT_MODE.UNSUPPORTED_OPERATION (append "is not
            // supported for streaming aggregations without watermark": only the window itself or
            // window_time(window) carries the inner's watermark); `window(window_time(window), ...)`
            // runs (tests/cases-sql/sql-chain-window-time-*)
            "a window over the end of a chained aggregation's window",
            sql_with(
                "SELECT window(window.end, '1 minute') AS w, sum(c) AS c \
                 FROM (SELECT window(ts, '5 seconds') AS window, count(*) AS c FROM source GROUP BY 1) GROUP BY 1",
                "output_mode = \"append\"",
                "",
            ),
            vec![
                "query.sql",
                "window.end as the window's time over the subquery's window",
                "at 1:15",
                "window(window_time(window), size)",
            ],
        ),
        (
            "a window over a string column",
            sql("SELECT window(k, '5 seconds'), count(*) FROM source GROUP BY 1"),
            vec!["query.sql", "\"k\" (a STRING column)", "at 1:8", "a TIMESTAMP column"],
        ),
        (
            "update mode with a session window",
            sql_with(
                "SELECT session_window(ts, '5 seconds'), count(*) FROM source GROUP BY 1",
                "output_mode = \"update\"",
                "",
            ),
            vec!["query.output_mode", "\"update\" (with a session window)", "\"append\", \"complete\""],
        ),
        (
            // neither update (a session window) nor append (no watermark on its time) runs
            "update or append with a session window over a computed time",
            sql_with(
                "SELECT session_window(ts + INTERVAL 2 SECONDS, '5 seconds'), count(*) FROM source GROUP BY 1",
                "output_mode = \"update\"",
                "",
            ),
            vec!["query.output_mode", "\"update\" (with a session window); allowed: \"complete\" ("],
        ),
        (
            "append with a session window over a computed time",
            sql_with(
                "SELECT session_window(ts + INTERVAL 2 SECONDS, '5 seconds'), count(*) FROM source GROUP BY 1",
                "output_mode = \"append\"",
                "",
            ),
            vec!["query.output_mode", "allowed: \"complete\" (Spark rejects update mode for session windows)"],
        ),
        (
            "append without a watermark on the window's column",
            sql_with("SELECT window(t2, '5 seconds'), count(*) FROM source GROUP BY 1", "output_mode = \"append\"", ""),
            vec!["query.output_mode", "the watermark is on \"ts\", the window on \"t2\"", "\"update\", \"complete\""],
        ),
        (
            "append without a window",
            sql_with("SELECT k, count(*) FROM source GROUP BY k", "output_mode = \"append\"", ""),
            vec!["query.output_mode", "without a window", "needs a window"],
        ),
        (
            // Spark 4.3: STREAMING_OUTPUT_MODE.UNSUPPORTED_OPERATION, append "is not supported for
            // streaming aggregations without watermark" (update and complete run:
            // tests/cases-sql/sql-select-over-global-aggregate*)
            "a select over a global aggregate in append mode",
            sql_with("SELECT c * 2 AS d FROM (SELECT count(*) AS c FROM source)", "output_mode = \"append\"", ""),
            vec!["query.output_mode", "without a window", "needs a window"],
        ),
        (
            // (Spark refuses it too, there by its check of late rows between stateful operators)
            "an aggregation over a global aggregate in update mode",
            sql_with("SELECT sum(c) FROM (SELECT count(*) AS c FROM source)", "output_mode = \"update\"", ""),
            vec!["query.output_mode", "an aggregation over an aggregation", "Multiple streaming aggregations"],
        ),
        (
            "a syntax error on line 3",
            sql("SELECT k,\n  count(*) AS c\nFROM source WHERE v > > 1 GROUP BY k"),
            vec!["query.sql", "given > at 3:23", "an expression"],
        ),
        (
            "a query that ends too soon",
            sql("SELECT k FROM source WHERE v > 1 AND"),
            vec!["query.sql", "EOF at 1:37", "an expression"],
        ),
        (
            "a CAST to DECIMAL(40, 2)",
            sql("SELECT CAST(v AS DECIMAL(40, 2)) FROM source"),
            vec!["query.sql", "DECIMAL(40,2)", "p <= 38"],
        ),
        (
            "a CAST to an unknown type",
            sql("SELECT CAST(v AS FOOTYPE) FROM source"),
            vec!["query.sql", "CAST to FOOTYPE", "INT, BIGINT", "DECIMAL(p, s)"],
        ),
        (
            // the keyword, not the operand (sqlparser's span of a CAST starts at its operand),
            // nor the inner CAST of a nested one
            "a CAST to ARRAY, nested",
            sql("SELECT k,\n  CAST(CAST(v AS STRING) AS ARRAY<STRING>) AS a FROM source"),
            vec!["query.sql", "CAST to ARRAY<STRING> at 2:3"],
        ),
        (
            "a TRY_CAST to MAP over a parenthesized operand",
            sql("SELECT try_cast( (v + 1) AS MAP<STRING, INT>) FROM source"),
            vec!["query.sql", "CAST to MAP<STRING, INT> at 1:8"],
        ),
        (
            "substring with one argument, at the function",
            sql("SELECT substring(k) FROM source"),
            vec!["query.sql", "substring with 1 argument at 1:8", "2 to 3 arguments"],
        ),
        (
            "a month beside days in one interval literal, at INTERVAL",
            sql("SELECT ts + INTERVAL 1 DAY 1 MONTH AS t FROM source"),
            vec!["query.sql", "`INTERVAL '1 DAY 1 MONTH'` at 1:13", "DAY, HOUR, MINUTE"],
        ),
        (
            "a fraction of minutes, at INTERVAL",
            sql("SELECT k FROM source WHERE ts > t2 +\n    INTERVAL '1.5' MINUTES"),
            vec!["query.sql", "at 2:5", "a fraction of SECOND only"],
        ),
        (
            "a GROUP BY position past the select list",
            sql("SELECT k, count(*) FROM source GROUP BY 3"),
            vec!["query.sql", "position 3", "at 1:41", "from 1 to 2"],
        ),
        (
            "a GROUP BY position 0",
            sql("SELECT k, count(*) FROM source GROUP BY 0"),
            vec!["query.sql", "position 0", "at 1:41"],
        ),
        (
            "a field of a string column",
            sql("SELECT k.start FROM source"),
            vec!["query.sql", "k is a column of type STRING, not a struct at 1:8", "STRUCT column"],
        ),
        (
            // Spark 4.3 takes a STRING as a DOUBLE here (sum(k) runs) but refuses a BOOLEAN
            // (DATATYPE_MISMATCH.UNEXPECTED_INPUT_TYPE)
            "sum of a boolean names the source's numeric columns",
            sql("SELECT sum(k = 'a') FROM source"),
            vec!["query.sql", "a BOOLEAN column, for sum", "at 1:8", "DECIMAL) column: v, n"],
        ),
        (
            "an INTERVAL column",
            sql("SELECT INTERVAL 1 HOUR AS i FROM source"),
            vec!["query.sql", "an INTERVAL outside `timestamp + INTERVAL`"],
        ),
        (
            "sql together with type",
            sql_with("SELECT k FROM source", "type = \"window_aggregate\"", ""),
            vec!["query.type", "type beside sql", "not both"],
        ),
        ("select on the late sink", late_select, vec!["late_sink.select", "[\"k\"]", "only [sink] takes a select"]),
        (
            "a sink select of a field of a non-window column",
            sql_with(
                "SELECT window(ts, '5 seconds'), count(*) AS c FROM source GROUP BY 1",
                "",
                "select = [\"c.start\"]",
            ),
            vec!["sink.select[0]", "\"c.start\" at 1:1", "c is a column of type BIGINT, not a struct"],
        ),
        (
            "a sink select of a field the window lacks",
            sql_with(
                "SELECT window(ts, '5 seconds'), count(*) AS c FROM source GROUP BY 1",
                "",
                "select = [\"c\", \"window.begin\"]",
            ),
            vec!["sink.select[1]", "\"window.begin\" at 1:1", "no field `begin`", "start, end"],
        ),
        (
            "a sink select with two columns of one name",
            sql_with("SELECT k, count(*) AS c FROM source GROUP BY k", "", "select = [\"k\", \"c AS k\"]"),
            vec!["sink.select[1]", "as sink.select[0] names it", "rename one with AS"],
        ),
        (
            "a decimal column of 40 digits",
            pipeline("k STRING, ts TIMESTAMP, d DECIMAL(40, 2)", "sql = \"SELECT k FROM source\"", ""),
            vec!["source.schema", "DECIMAL(40, 2)", "1..=38", "DECIMAL(p, s) with p <= 38"],
        ),
        (
            "an ARRAY column",
            pipeline("k STRING, ts TIMESTAMP, a ARRAY<INT>", "sql = \"SELECT k FROM source\"", ""),
            vec!["source.schema", "column \"a\" has unknown type ARRAY<INT>"],
        ),
        (
            "a MAP column, named whole",
            pipeline("k STRING, ts TIMESTAMP, m MAP<STRING, INT>", "sql = \"SELECT k FROM source\"", ""),
            vec!["source.schema", "column \"m\" has unknown type MAP<STRING, INT>"],
        ),
    ];
    assert!(cases.len() >= 30);
    check_all(cases);
}

#[test]
fn a_kafka_sink_value_that_is_not_a_string_names_the_field_that_made_it() {
    // The `value` column comes from the query when the sink has no select: the error names
    // `query.sql`, not a `sink.select` the file does not have.
    let kafka = |sink_select: &str| {
        sql_with("SELECT k, n AS value FROM source", "", "").replace(
            "[sink]\ntype = \"files\"\npath = \"output\"",
            &format!("[sink]\ntype = \"kafka\"\nbootstrap_servers = \"127.0.0.1:1\"\ntopic = \"t\"\n{sink_select}"),
        )
    };
    check_all(vec![
        (
            "a query's value column of type BIGINT",
            kafka(""),
            vec!["query.sql: given a `value` column of type BIGINT for a Kafka sink", "a STRING `value` column"],
        ),
        (
            "a sink select's value of type BIGINT",
            kafka("select = [\"k\", \"value + 1 AS value\"]"),
            vec!["sink.select", "value", "BIGINT", "STRING"],
        ),
    ]);
}

#[test]
fn two_output_columns_of_one_name_in_a_query_are_refused_naming_both() {
    // Spark would give two columns named `k`; no sink can write such a row (SQL.md "Joins").
    check_all(vec![
        (
            "a projection",
            sql("SELECT k,\n  lower(k) AS k FROM source"),
            vec!["query.sql", "\"k\" (select item 2; item 1 at 1:8 has that name) at 2:3"],
        ),
        (
            "an aggregation",
            sql("SELECT window(ts, '5 seconds') AS w, count(*) AS W FROM source GROUP BY 1"),
            vec!["query.sql", "\"W\" (select item 2; item 1 at 1:8 has that name) at 1:38"],
        ),
    ]);
}

#[test]
fn a_window_in_where_is_refused_pointing_to_group_by() {
    check_all(vec![(
        "a session window in WHERE",
        sql("SELECT k FROM source\nWHERE k = 'a' AND session_window(ts, '5 seconds') IS NULL"),
        vec!["query.sql", "session_window(ts, '5 seconds') in WHERE at 2:19", "in GROUP BY"],
    )]);
}

#[test]
fn an_unsupported_aggregate_is_named_with_the_supported_aggregates_not_as_a_missing_aggregation() {
    // Spark has these aggregates and Eddy does not run them: the column inside is not "neither
    // grouped nor aggregated" (MISSING_AGGREGATION), the function is what is missing.
    let supported = "the aggregate functions count, count_if, sum, avg (mean), min, max, stddev (std, stddev_samp)";
    check_all(vec![
        (
            "collect_list in an aggregation",
            sql("SELECT k,\n  collect_list(v) FROM source GROUP BY k"),
            vec!["query.sql", "collect_list, not a supported aggregate function", "no ARRAY type", "at 2:3", supported],
        ),
        (
            "collect_set in a global aggregation",
            sql("SELECT collect_set(k) FROM source"),
            vec!["query.sql", "collect_set, not a supported aggregate function", "at 1:8", "max_by, min_by"],
        ),
        (
            "median, with its approximate equivalent",
            sql("SELECT k, median(v) AS m FROM source GROUP BY k"),
            vec!["query.sql", "median, not a supported aggregate function", "approx_percentile(x, 0.5)", "at 1:11"],
        ),
        (
            "the exact percentile, in capitals",
            sql("SELECT k, PERCENTILE(v, 0.5) FROM source GROUP BY k"),
            vec!["query.sql", "percentile, not a supported aggregate function", "at 1:11", "approx_percentile"],
        ),
        (
            "try_sum, with what sum does on overflow",
            sql("SELECT k, try_sum(v) FROM source GROUP BY k"),
            vec!["query.sql", "try_sum, not a supported aggregate function", "dead-letter sink", "at 1:11"],
        ),
        (
            "an unsupported aggregate in HAVING",
            sql("SELECT k FROM source GROUP BY k HAVING bool_and(v > 0)"),
            vec!["query.sql", "bool_and, not a supported aggregate function", "min(c)", "at 1:40"],
        ),
        (
            "an unsupported aggregate in a source select",
            pipeline(SCHEMA, "sql = \"SELECT k FROM source\"", "")
                .replace("schema = \"k STRING", "select = [\"k\", \"skewness(v) AS s\"]\nschema = \"k STRING"),
            vec!["source.select[1]", "skewness, not a supported aggregate function", "1:1"],
        ),
        (
            "count_if of a non-boolean",
            sql("SELECT k, count_if(n) FROM source GROUP BY k"),
            vec!["query.sql", "count_if of BIGINT (n) at 1:20", "a BOOLEAN condition"],
        ),
    ]);
}

#[test]
fn an_aggregate_filter_clause_is_refused_with_its_case_when_form() {
    check_all(vec![
        (
            "count(*) FILTER",
            sql("SELECT k,\n  count(*) FILTER (WHERE v > 1) AS big FROM source GROUP BY k"),
            vec![
                "query.sql",
                "aggregate FILTER clauses are not supported",
                "at 2:3",
                "count(CASE WHEN v > 1 THEN 1 END)",
            ],
        ),
        (
            "sum(x) FILTER",
            sql("SELECT k, sum(v) FILTER (WHERE k <> 'x') FROM source GROUP BY k"),
            vec!["query.sql", "aggregate FILTER clauses are not supported", "sum(CASE WHEN k <> 'x' THEN v END)"],
        ),
    ]);
}

#[test]
fn order_by_is_refused_in_complete_mode_too_saying_what_spark_allows_and_why_eddy_does_not() {
    check_all(vec![(
        "ORDER BY after an aggregation in complete mode",
        sql_with("SELECT k, count(*) AS c FROM source GROUP BY k\nORDER BY c DESC", "output_mode = \"complete\"", ""),
        vec![
            "query.sql",
            "ORDER BY at 2:1",
            "Spark sorts a stream only after an aggregation in complete mode",
            "no total order",
        ],
    )]);
}

#[test]
fn array_functions_are_refused_as_such_pointing_to_split_part() {
    check_all(vec![
        (
            "split",
            sql("SELECT k, split(k, ',') AS parts FROM source"),
            vec!["query.sql", "split (it returns an ARRAY, and Eddy has no ARRAY type) at 1:11", "split_part"],
        ),
        (
            "explode",
            sql("SELECT explode(split(k, ',')) FROM source"),
            vec!["query.sql", "explode (it generates rows from an ARRAY", "at 1:8", "split_part(s, delimiter, n)"],
        ),
        (
            "unix_timestamp() without arguments (the current time)",
            sql("SELECT k, unix_timestamp() FROM source"),
            vec!["query.sql", "unix_timestamp() (the processing time", "at 1:11"],
        ),
    ]);
}

/// Runs `eddy explain` on `pipeline` (empty input folder) and returns its exit code and stdout.
fn explain(pipeline: &str) -> (Option<i32>, String, String) {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::create_dir(tmp.path().join("input")).unwrap();
    std::fs::write(tmp.path().join("p.toml"), pipeline).unwrap();
    let out = eddy(tmp.path(), &["explain", "p.toml"]);
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn output_mode_is_read_ignoring_case_as_spark_and_explained_in_lower_case() {
    // Spark's OutputMode parsing lower-cases the name: outputMode("Complete") is complete.
    for (given, canonical) in [("Complete", "complete"), ("UPDATE", "update"), ("Append", "append")] {
        let p = sql_with(
            "SELECT window(ts, '5 seconds') AS w, count(*) AS c FROM source GROUP BY 1",
            &format!("output_mode = \"{given}\""),
            "",
        );
        let (code, out, err) = explain(&p);
        assert_eq!(code, Some(0), "output_mode = {given:?}: {err}");
        assert!(out.contains(&format!("output mode {canonical},")), "output_mode = {given:?}: {out}");
    }
    // the structured queries read it the same way
    let rolling = pipeline(
        SCHEMA,
        "type = \"rolling_window\"\npartition_by = [\"k\"]\norder_by = \"ts\"\n\
         measures = [{ agg = \"sum\", column = \"v\", over = \"1 hour\" }]\noutput_mode = \"Update\"",
        "",
    );
    let (code, _, err) = explain(&rolling);
    assert_eq!(code, Some(0), "a rolling window with output_mode = \"Update\": {err}");
    let structured = pipeline(
        SCHEMA,
        "type = \"window_aggregate\"\ngroup_by = [\"k\"]\nmeasures = [{ agg = \"count\" }]\noutput_mode = \"COMPLETE\"",
        "",
    );
    let (code, out, err) = explain(&structured);
    assert_eq!(code, Some(0), "a window aggregate with output_mode = \"COMPLETE\": {err}");
    assert!(out.contains("output mode complete,"), "{out}");
    check_all(vec![(
        "an unknown output mode, quoted as given",
        sql_with("SELECT k, count(*) FROM source GROUP BY k", "output_mode = \"Completed\"", ""),
        vec!["query.output_mode", "\"Completed\"", "\"append\", \"update\", \"complete\""],
    )]);
}

/// The input of the evaluation-error runs: good records among ones whose WHERE, select list or
/// HAVING fails (`n % m` and `n div m` with `m = 0`, `CAST('x' AS INT)`).
const RECORDS: &str = r#"{"k": "a", "ts": "2024-01-01T00:00:01Z", "n": 4, "m": 2, "s": "7"}
{"k": "b", "ts": "2024-01-01T00:00:02Z", "n": 1, "m": 0, "s": "1"}
{"k": "c", "ts": "2024-01-01T00:00:03Z", "n": 3, "m": 1, "s": "x"}
{"k": "d", "ts": "2024-01-01T00:00:04Z", "n": 5, "m": 5, "s": "9"}
"#;

/// Runs `query` over [`RECORDS`] in `mode` with a dead-letter sink; returns (output rows, dead
/// letters), each the lines of every batch file in name order.
fn run_with_dead_letters(mode: &str, query: &str) -> (Vec<String>, Vec<String>) {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::create_dir(tmp.path().join("input")).unwrap();
    std::fs::write(tmp.path().join("input/000.json"), RECORDS).unwrap();
    let p = format!(
        r#"
name = "eval-errors"
mode = "{mode}"
parallelism = 1
[source]
type = "files"
path = "input"
format = "json"
schema = "k STRING, ts TIMESTAMP, n BIGINT, m BIGINT, s STRING"
[query]
sql = """
{query}"""
[sink]
type = "files"
path = "output"
[dead_letter]
type = "files"
path = "dead"
"#
    );
    std::fs::write(tmp.path().join("p.toml"), p).unwrap();
    let out = eddy(tmp.path(), &["run", "p.toml", "--no-progress"]);
    assert_eq!(out.status.code(), Some(0), "{mode}: {}", String::from_utf8_lossy(&out.stderr));
    let lines = |dir: &str| -> Vec<String> {
        let Ok(entries) = std::fs::read_dir(tmp.path().join(dir)) else { return Vec::new() };
        let mut files: Vec<_> = entries.map(|e| e.unwrap().path()).collect();
        files.sort();
        files
            .iter()
            .flat_map(|f| std::fs::read_to_string(f).unwrap().lines().map(str::to_string).collect::<Vec<_>>())
            .collect()
    };
    (lines("output"), lines("dead"))
}

fn parsed(lines: &[String]) -> Vec<serde_json::Value> {
    lines.iter().map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}"))).collect()
}

#[test]
fn evaluation_errors_in_where_and_the_select_list_go_to_the_dead_letters_and_the_run_goes_on() {
    // b: `1 % 0` in WHERE; c: CAST('x' AS INT) in the select list. a and d pass.
    let query = "SELECT k, n div m AS q, CAST(s AS INT) AS i FROM source WHERE n % m >= 0";
    for mode in ["micro-batch", "real-time"] {
        let (rows, dead) = run_with_dead_letters(mode, query);
        let expected =
            vec![serde_json::json!({"k": "a", "q": 2, "i": 7}), serde_json::json!({"k": "d", "q": 1, "i": 9})];
        assert_eq!(parsed(&rows), expected, "{mode}");
        // the WHERE's failure is found before the operator, the select list's after it: in
        // real-time mode they reach the dead letters in either order
        let mut dead = parsed(&dead);
        dead.sort_by_key(|d| d["record"].to_string());
        assert_eq!(dead.len(), 2, "{mode}: {dead:?}");
        let reason = |i: usize| dead[i]["reason"].as_str().unwrap_or_default().to_string();
        // the records' times tell them apart however the record is embedded
        let record = |i: usize| dead[i]["record"].to_string();
        assert!(reason(0).contains("DIVIDE_BY_ZERO") && record(0).contains("00:00:02"), "{mode}: {dead:?}");
        assert!(reason(1).contains("CAST") && record(1).contains("00:00:03"), "{mode}: {dead:?}");
    }
}

#[test]
fn an_evaluation_error_in_having_sends_the_row_to_the_dead_letters_and_the_run_goes_on() {
    // Per key, sum(m) is a 2, b 0 (`10 div 0` fails), c 1, d 5; c's CAST is not evaluated here.
    let query = "SELECT k, sum(n) AS total FROM source GROUP BY k HAVING 10 div sum(m) >= 0";
    for mode in ["micro-batch", "real-time"] {
        let (rows, dead) = run_with_dead_letters(mode, query);
        let mut rows = parsed(&rows);
        rows.sort_by_key(|r| r["k"].to_string());
        let expected = vec![
            serde_json::json!({"k": "a", "total": 4}),
            serde_json::json!({"k": "c", "total": 3}),
            serde_json::json!({"k": "d", "total": 5}),
        ];
        assert_eq!(rows, expected, "{mode}");
        let dead = parsed(&dead);
        assert_eq!(dead.len(), 1, "{mode}: {dead:?}");
        let reason = dead[0]["reason"].as_str().unwrap_or_default();
        assert!(reason.contains("DIVIDE_BY_ZERO"), "{mode}: {dead:?}");
        // the row of key b, as an object or as its JSON text
        let record = dead[0]["record"].to_string();
        assert!(record.contains(r#""b""#) || record.contains(r#"\"b\""#), "{mode}: {dead:?}");
    }
}

/// A table `prices` for the stream-static join cases, with `extra` lines in it.
fn table(extra: &str) -> String {
    format!(
        "[[table]]\nname = \"prices\"\ntype = \"files\"\npath = \"prices.csv\"\nformat = \"csv\"\nschema = \"k STRING, price DOUBLE\"\n{extra}\n"
    )
}

#[test]
fn wrong_stream_static_joins_exit_2_naming_the_field_and_spark_reason() {
    let join = "SELECT s.k, p.price FROM source s JOIN prices p ON s.k = p.k";
    let cases: Vec<(&str, String, Vec<&str>)> = vec![
        (
            "a table with a bad field",
            sql_with(join, "", &table("refresh = \"often\"")),
            vec!["table[0].refresh", "\"often\"", "a duration > 0"],
        ),
        (
            "a table with an unknown field",
            sql_with(join, "", &table("colour = \"red\"")),
            vec!["table[0].colour", "\"red\""],
        ),
        (
            "the stream RIGHT JOIN a table",
            sql_with("SELECT s.k FROM source s\nRIGHT JOIN prices p ON s.k = p.k", "", &table("")),
            vec!["query.sql", "RightOuter join with a streaming DataFrame/Dataset on the left", "at 2:1"],
        ),
        (
            "a join condition that is not BOOLEAN",
            sql_with("SELECT s.k FROM source s JOIN prices p ON s.k = p.k\nAND s.v + 1", "", &table("")),
            vec!["query.sql", "the join condition \"(v + 1)\" of type", "at 2:5", "a BOOLEAN condition"],
        ),
        (
            "an aggregate in the ON",
            sql_with("SELECT s.k FROM source s JOIN prices p ON s.k = p.k\nAND s.v = sum(p.price)", "", &table("")),
            vec!["query.sql", "the aggregate sum(p.price) in a join's ON at 2:11"],
        ),
        (
            "a join without an equality key",
            sql_with("SELECT s.k FROM source s JOIN prices p ON s.v > p.price", "", &table("")),
            vec![
                "query.sql",
                "without an equality of a source expression and a table expression (an equi-join key) at 1:43",
            ],
        ),
        (
            "a subquery that joins a table, under an aggregation",
            sql_with(
                "SELECT k, count(*) FROM (SELECT s.k FROM source s\nJOIN prices p ON s.k = p.k) AS j GROUP BY k",
                "",
                &table(""),
            ),
            vec!["query.sql", "a subquery in FROM that joins without aggregating, over one source at 2:"],
        ),
        (
            // Spark runs it (a stream-static join after an aggregation); not implemented yet
            "a table joined with an aggregating subquery's rows",
            sql_with(
                "SELECT a.k, a.n, p.price\nFROM (SELECT k, count(*) AS n FROM source GROUP BY k) a\nJOIN prices p ON a.k = p.k",
                "output_mode = \"update\"",
                &table(""),
            ),
            vec!["query.sql", "a JOIN of an aggregating subquery's rows", "not implemented yet", "at 3:6"],
        ),
        (
            "an unknown table",
            sql_with("SELECT s.k FROM source s JOIN fx f ON s.k = f.k", "", &table("")),
            vec!["query.sql", "the unknown relation fx at 1:31", "prices (a table)"],
        ),
    ];
    check_all(cases);
}

/// Two files sources `lefts` (id STRING, lt TIMESTAMP, lv BIGINT) and `rights` (rid STRING, rt
/// TIMESTAMP, rv INT), each with a 10-second watermark unless `right_watermark` is false, and the
/// query `sql` (line 1 of the SQL is the line after the opening quotes) with `query` lines after.
fn two_sources(sql: &str, right_watermark: bool, query: &str) -> String {
    let rw = if right_watermark { "watermark = { column = \"rt\", delay = \"10 seconds\" }" } else { "" };
    format!(
        r#"
name = "join-errors"
mode = "micro-batch"
[[source]]
name = "lefts"
type = "files"
path = "input"
format = "json"
schema = "id STRING, lt TIMESTAMP, lv BIGINT"
watermark = {{ column = "lt", delay = "10 seconds" }}
[[source]]
name = "rights"
type = "files"
path = "input"
format = "json"
schema = "rid STRING, rt TIMESTAMP, rv INT"
{rw}
[query]
sql = """
{sql}"""
{query}
[sink]
type = "files"
path = "output"
"#
    )
}

#[test]
fn wrong_stream_stream_joins_exit_2_naming_the_field_the_position_and_spark_reason() {
    let range = "r.rt BETWEEN l.lt AND l.lt + INTERVAL 1 MINUTE";
    let cases: Vec<(&str, String, Vec<&str>)> = vec![
        (
            "a join without an equality key",
            two_sources("SELECT * FROM lefts l JOIN rights r\nON l.lv > r.rv", true, ""),
            vec!["query.sql", "a join without an equality key of a column of each side at 2:4", "equi-join key"],
        ),
        (
            "a join of two aggregated streams",
            two_sources(
                "SELECT * FROM (SELECT id, count(*) AS c FROM lefts GROUP BY id) a\nJOIN (SELECT rid, count(*) AS c FROM rights GROUP BY rid) b ON a.id = b.rid",
                true,
                "",
            ),
            vec!["query.sql", "a subquery in FROM at 1:16"],
        ),
        (
            "an aggregation after a join without a time range",
            two_sources("SELECT l.id, count(*) FROM lefts l JOIN rights r\nON l.id = r.rid\nGROUP BY l.id", true, ""),
            vec!["query.sql", "an aggregation after a stream-stream join without a time range at 3:10", "BETWEEN"],
        ),
        (
            "an aggregation after a join in complete mode",
            two_sources(
                &format!(
                    "SELECT l.id, count(*) FROM lefts l JOIN rights r\nON l.id = r.rid AND {range}\nGROUP BY l.id"
                ),
                true,
                "output_mode = \"complete\"",
            ),
            vec![
                "query.output_mode",
                "\"complete\"",
                "Inner join between two streaming DataFrames/Datasets is not supported in Complete output mode",
            ],
        ),
        (
            "an aggregation after an outer join in update mode, by default",
            two_sources(
                &format!(
                    "SELECT l.id, count(*) FROM lefts l LEFT JOIN rights r\nON l.id = r.rid AND {range}\nGROUP BY l.id"
                ),
                true,
                "",
            ),
            vec![
                "query.output_mode",
                "\"update\" (an aggregation after a stream-stream join, the default of an aggregation)",
                "LeftOuter join between two streaming DataFrames/Datasets is not supported in Update output mode, only in Append output mode",
            ],
        ),
        (
            "a query without an aggregation over a join subquery",
            two_sources(
                &format!("SELECT * FROM (SELECT l.id FROM lefts l JOIN rights r\nON l.id = r.rid AND {range}) AS j"),
                true,
                "",
            ),
            vec!["query.sql", "a query without an aggregation over a subquery that joins two sources at 2:"],
        ),
        (
            "an aggregating join subquery under an aggregation",
            two_sources(
                &format!(
                    "SELECT id, sum(n) FROM (SELECT l.id, count(*) AS n FROM lefts l JOIN rights r\nON l.id = r.rid AND {range} GROUP BY l.id) AS j\nGROUP BY id"
                ),
                true,
                "output_mode = \"update\"",
            ),
            vec!["query.sql", "an aggregation in the subquery that joins two sources, under another aggregation at 2:"],
        ),
        (
            "an aggregation after a join of a source without a watermark",
            two_sources(
                &format!(
                    "SELECT l.id, count(*) FROM lefts l JOIN rights r\nON l.id = r.rid AND {range}\nGROUP BY l.id"
                ),
                false,
                "",
            ),
            vec!["query.sql", "an aggregation after a stream-stream join of a source without a watermark at 3:10"],
        ),
        (
            "an outer join without a watermark on the nullable side",
            two_sources(&format!("SELECT * FROM lefts l\nLEFT JOIN rights r ON l.id = r.rid AND {range}"), false, ""),
            vec![
                "query.sql",
                "LEFT OUTER JOIN without a watermark on both sources",
                "at 2:1",
                "Spark: Stream-stream LeftOuter join",
            ],
        ),
        (
            "a full outer join with a range open on one side",
            two_sources("SELECT * FROM lefts l FULL JOIN rights r\nON l.id = r.rid AND r.rt >= l.lt", true, ""),
            vec!["query.sql", "FULL OUTER JOIN without a bound each way", "at 1:23"],
        ),
        (
            "another condition in an outer join's ON",
            two_sources(
                &format!("SELECT * FROM lefts l LEFT JOIN rights r\nON l.id = r.rid AND {range} AND r.rv > 2"),
                true,
                "",
            ),
            vec!["query.sql", "a condition other than the keys and the time range", "at 2:"],
        ),
        (
            "a left anti join",
            two_sources(
                &format!("SELECT * FROM lefts l LEFT ANTI JOIN rights r ON l.id = r.rid AND {range}"),
                true,
                "",
            ),
            vec!["query.sql", "LeftAnti join between two streaming DataFrames/Datasets is not supported", "at 1:23"],
        ),
        (
            "keys of two types",
            two_sources(
                &format!("SELECT * FROM lefts l JOIN rights r ON l.id = r.rid AND (l.lv > 0) = r.rv AND {range}"),
                true,
                "",
            ),
            vec!["query.sql", "join keys of two types: \"(lv > 0)\" BOOLEAN and \"rv\" INT at 1:58"],
        ),
        (
            "an aggregate in a stream-stream ON",
            two_sources(
                &format!("SELECT * FROM lefts l JOIN rights r\nON l.id = r.rid AND max(r.rv) > 2 AND {range}"),
                true,
                "",
            ),
            vec!["query.sql", "the aggregate max(r.rv) in a join's ON at 2:21", "SELECT list or HAVING"],
        ),
        (
            "struct keys of two types, at the first struct",
            two_sources(
                &format!("SELECT * FROM lefts l JOIN rights r\nON struct(l.id) = struct(r.rv) AND {range}"),
                true,
                "",
            ),
            vec!["query.sql", "join keys of two types: \"struct(id)\"", "at 2:4"],
        ),
        (
            "struct keys whose field names differ, which Spark's stream-stream join fails on",
            two_sources(
                &format!("SELECT * FROM lefts l JOIN rights r\nON struct(l.id) = struct(r.rid) AND {range}"),
                true,
                "",
            ),
            vec![
                "query.sql",
                "join keys of structs whose field names differ: \"struct(id)\" STRUCT<id: STRING>",
                "at 2:4",
                "Join keys from two sides should have same length and types",
            ],
        ),
        (
            "a query reading an unknown source",
            two_sources("SELECT * FROM lefts l JOIN clicks c ON l.id = c.rid", true, ""),
            vec!["query.sql", "the unknown relation clicks at 1:28", "lefts, rights"],
        ),
        (
            "update mode",
            two_sources(
                &format!("SELECT * FROM lefts l JOIN rights r ON l.id = r.rid AND {range}"),
                true,
                "output_mode = \"update\"",
            ),
            vec!["query.output_mode", "\"update\"", "only in Append output mode"],
        ),
        (
            "a right column after a semi join",
            two_sources(
                &format!("SELECT l.id, r.rv FROM lefts l LEFT SEMI JOIN rights r ON l.id = r.rid AND {range}"),
                true,
                "",
            ),
            vec!["query.sql", "the right side's column r.rv after a semi or anti join at 1:14"],
        ),
        (
            "two sources with one name",
            two_sources("SELECT * FROM lefts l JOIN rights r ON l.id = r.rid", true, "")
                .replace("name = \"rights\"", "name = \"lefts\""),
            vec!["source[1].name", "\"lefts\""],
        ),
    ];
    check_all(cases);
}

/// Runs `eddy run` on a pipeline joining a files source with the table at `table_path`
/// (`max_bytes`), in a scratch folder holding `files` (name, content).
fn run_join(table_path: &str, max_bytes: u64, files: &[(&str, &str)]) -> Output {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::create_dir(tmp.path().join("input")).unwrap();
    std::fs::write(tmp.path().join("input/000.json"), "{\"k\": \"A\", \"ts\": \"2024-01-15T10:00:00Z\"}\n").unwrap();
    for (name, content) in files {
        std::fs::write(tmp.path().join(name), content).unwrap();
    }
    let p = sql_with(
        "SELECT s.k, p.price FROM source s JOIN prices p ON s.k = p.k",
        "",
        &format!(
            "[[table]]\nname = \"prices\"\ntype = \"files\"\npath = \"{table_path}\"\nformat = \"csv\"\nschema = \"k STRING, price DOUBLE\"\nmax_bytes = {max_bytes}\n"
        ),
    );
    std::fs::write(tmp.path().join("p.toml"), p).unwrap();
    eddy(tmp.path(), &["run", "p.toml", "--no-progress"])
}

#[test]
fn a_table_that_cannot_be_read_or_is_larger_than_max_bytes_exits_1_naming_it() {
    let missing = run_join("nowhere.csv", 1000, &[]);
    let err = String::from_utf8_lossy(&missing.stderr);
    assert_eq!(missing.status.code(), Some(1), "{err}");
    assert!(err.contains("table prices") && err.contains("nowhere.csv"), "{err}");
    let big = run_join("prices.csv", 10, &[("prices.csv", "k,price\nA,2.5\nB,10\n")]);
    let err = String::from_utf8_lossy(&big.stderr);
    assert_eq!(big.status.code(), Some(1), "{err}");
    assert!(err.contains("prices.csv") && err.contains("more than its max_bytes 10"), "{err}");
    let fits = run_join("prices.csv", 1000, &[("prices.csv", "k,price\nA,2.5\nB,10\n")]);
    assert_eq!(fits.status.code(), Some(0), "{}", String::from_utf8_lossy(&fits.stderr));
}

#[test]
fn an_evaluation_error_on_a_joined_record_goes_to_the_dead_letters_naming_where_it_was_read() {
    // the table's divisor of b is 0: `n div d` fails on b's joined record (a WHERE over the table
    // runs before the operator); a, c and d pass (d has no table row: a NULL divisor, null)
    for mode in ["micro-batch", "real-time"] {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::create_dir(tmp.path().join("input")).unwrap();
        std::fs::write(tmp.path().join("input/000.json"), RECORDS).unwrap();
        std::fs::write(tmp.path().join("div.csv"), "k,d\na,2\nb,0\nc,3\n").unwrap();
        let p = format!(
            r#"
name = "join-errors"
mode = "{mode}"
parallelism = 1
[source]
type = "files"
path = "input"
schema = "k STRING, ts TIMESTAMP, n BIGINT, m BIGINT, s STRING"
[[table]]
name = "divisors"
type = "files"
path = "div.csv"
format = "csv"
schema = "k STRING, d BIGINT"
[query]
sql = "SELECT s.k, s.n div t.d AS q FROM source s LEFT JOIN divisors t ON s.k = t.k WHERE s.n div t.d >= 0 OR t.d IS NULL"
[sink]
type = "files"
path = "output"
[dead_letter]
type = "files"
path = "dead"
"#
        );
        std::fs::write(tmp.path().join("p.toml"), p).unwrap();
        let out = eddy(tmp.path(), &["run", "p.toml", "--no-progress"]);
        assert_eq!(out.status.code(), Some(0), "{mode}: {}", String::from_utf8_lossy(&out.stderr));
        let read = |dir: &str| -> Vec<serde_json::Value> {
            let mut files: Vec<_> = std::fs::read_dir(tmp.path().join(dir))
                .map(|d| d.flatten().map(|e| e.path()).collect())
                .unwrap_or_default();
            files.sort();
            let lines: Vec<String> = files
                .iter()
                .flat_map(|f| std::fs::read_to_string(f).unwrap().lines().map(str::to_string).collect::<Vec<_>>())
                .collect();
            parsed(&lines)
        };
        let mut rows = read("output");
        rows.sort_by_key(|r| r["k"].to_string());
        let expected = vec![
            serde_json::json!({"k": "a", "q": 2}),
            serde_json::json!({"k": "c", "q": 1}),
            serde_json::json!({"k": "d", "q": null}),
        ];
        assert_eq!(rows, expected, "{mode}");
        let dead = read("dead");
        assert_eq!(dead.len(), 1, "{mode}: {dead:?}");
        let reason = dead[0]["reason"].as_str().unwrap_or_default();
        assert!(reason.contains("DIVIDE_BY_ZERO"), "{mode}: {dead:?}");
        assert_eq!(dead[0]["source"], "000.json:2", "{mode}: {dead:?}");
        assert!(dead[0]["record"].to_string().contains("00:00:02"), "{mode}: {dead:?}");
    }
}
