//! Each error path of `eddy run` / `eddy validate` exits 2 with a message naming the field, what
//! was given and what is allowed (PIPELINE.md "The command"), and starts nothing.

use std::path::Path;
use std::process::{Command, Output};

const GOOD: &str = r#"
name = "errors"
mode = "micro-batch"
[source]
type = "files"
path = "input"
format = "json"
schema = "k STRING, ts TIMESTAMP, v DOUBLE"
[watermark]
column = "ts"
delay = "10 seconds"
[query]
type = "window_aggregate"
group_by = ["k"]
window = { type = "tumbling", column = "ts", size = "5 seconds" }
output_mode = "update"
measures = [{ agg = "sum", column = "v" }]
[sink]
type = "files"
path = "output"
"#;

fn eddy(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_eddy")).args(args).current_dir(dir).env("EDDY_LOG", "warn").output().unwrap()
}

fn setup(pipeline: &str) -> tempfile::TempDir {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::create_dir(tmp.path().join("input")).unwrap();
    std::fs::write(tmp.path().join("input/000.json"), "{\"k\": \"a\", \"ts\": \"2024-01-01T00:00:01Z\", \"v\": 1.5}\n")
        .unwrap();
    std::fs::write(tmp.path().join("p.toml"), pipeline).unwrap();
    tmp
}

/// Runs `args` and checks exit 2 and that stderr names every one of `words`.
fn expect_usage_error(pipeline: &str, args: &[&str], words: &[&str]) {
    let tmp = setup(pipeline);
    let out = eddy(tmp.path(), args);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{args:?}: stderr: {err}");
    for w in words {
        assert!(err.contains(w), "{args:?}: stderr does not name {w:?}: {err}");
    }
    assert!(!tmp.path().join("output").exists() || args[0] == "validate", "nothing may start: output was created");
}

#[test]
fn the_good_pipeline_runs_and_validates() {
    let tmp = setup(GOOD);
    let out = eddy(tmp.path(), &["validate", "p.toml"]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "window STRUCT<start: TIMESTAMP, end: TIMESTAMP>\nk STRING\nsum(v) DOUBLE\n"
    );
    let out = eddy(tmp.path(), &["run", "p.toml", "--no-progress"]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let batch = std::fs::read_to_string(tmp.path().join("output/batch-000000.jsonl")).unwrap();
    assert!(batch.contains("\"sum(v)\": 1.5"), "{batch}");
}

#[test]
fn unknown_field_is_named() {
    let p = GOOD.replace("delay = \"10 seconds\"", "delay = \"10 seconds\"\ndelya = 3");
    expect_usage_error(&p, &["run", "p.toml"], &["watermark", "delya"]);
}

#[test]
fn bad_duration_is_named() {
    let p = GOOD.replace("size = \"5 seconds\"", "size = \"1 month\"");
    expect_usage_error(&p, &["run", "p.toml"], &["query.window.size", "1 month"]);
    let p = GOOD.replace("size = \"5 seconds\"", "size = \"0 seconds\"");
    expect_usage_error(&p, &["validate", "p.toml"], &["query.window.size", "0 seconds"]);
}

#[test]
fn unknown_column_is_named() {
    let p = GOOD.replace("column = \"v\"", "column = \"amount\"");
    expect_usage_error(&p, &["run", "p.toml"], &["query.measures[0].column", "amount", "k, ts, v"]);
}

#[test]
fn wrong_type_is_named() {
    let p = GOOD.replace("schema = \"k STRING, ts TIMESTAMP, v DOUBLE\"", "schema = \"k STRING, ts STRING, v DOUBLE\"");
    expect_usage_error(&p, &["run", "p.toml"], &["ts", "TIMESTAMP"]);
    let p = GOOD.replace("column = \"v\"", "column = \"k\"");
    expect_usage_error(&p, &["run", "p.toml"], &["query.measures[0]", "k"]);
}

#[test]
fn missing_pipeline_file_or_input_folder_is_named() {
    expect_usage_error(GOOD, &["run", "nope.toml"], &["nope.toml"]);
    let p = GOOD.replace("path = \"input\"", "path = \"no-such-folder\"");
    expect_usage_error(&p, &["run", "p.toml"], &["source.path", "no-such-folder"]);
}

#[test]
fn unwritable_sink_folder_is_named() {
    // A file where the sink folder should be: cannot be created (tests may run as root, so a
    // permission bit would not stop them).
    let tmp = setup(GOOD);
    std::fs::write(tmp.path().join("output"), "a file in the way").unwrap();
    let out = eddy(tmp.path(), &["run", "p.toml"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("sink.path"), "{err}");
}

#[test]
fn bad_set_flag_is_named() {
    expect_usage_error(GOOD, &["run", "p.toml", "--set", "watermark.delay=soon"], &["watermark.delay", "soon"]);
    expect_usage_error(GOOD, &["run", "p.toml", "--set", "novalue"], &["--set"]);
}

#[test]
fn two_outputs_in_one_folder_are_named() {
    // [dead_letter] in the sink's folder, as written and through --set: exit 2 before anything
    // is written, naming the second field and the first.
    let p = format!("{GOOD}[dead_letter]\ntype = \"files\"\npath = \"./output/\"\n");
    expect_usage_error(&p, &["validate", "p.toml"], &["dead_letter.path", "the same folder as sink.path"]);
    expect_usage_error(&p, &["run", "p.toml"], &["dead_letter.path", "the same folder as sink.path"]);
    let set = ["run", "p.toml", "--set", "late_sink.type=files", "--set", "late_sink.path=output/late"];
    expect_usage_error(GOOD, &set, &["late_sink.path", "inside sink.path"]);
    expect_usage_error(GOOD, &["run", "p.toml", "--set", "checkpoint.path=."], &["checkpoint.path", "sink.path"]);
}

#[test]
fn parallelism_above_256_is_named_with_its_bound() {
    // 256 partition actors at most (`MAX_PARALLELISM`): 1024 is refused before anything starts.
    expect_usage_error(GOOD, &["run", "p.toml", "--set", "parallelism=1024"], &["parallelism", "1024", "1 to 256"]);
    expect_usage_error(GOOD, &["validate", "p.toml", "--set", "parallelism=257"], &["parallelism", "257"]);
}

#[test]
fn a_query_changed_since_the_checkpoint_names_the_field_and_both_values() {
    // A rolling window checkpointed with a 1-hour sum, then run with a 2-hour one: exit 2 (the
    // pipeline no longer fits its checkpoint; nothing starts), naming the measure's `over` with
    // both values as the file writes them, and what to do.
    let rolling = |over: &str| {
        format!(
            r#"
name = "changed"
mode = "real-time"
[source]
type = "files"
path = "input"
format = "json"
schema = "k STRING, ts TIMESTAMP, v DOUBLE"
[query]
type = "rolling_window"
partition_by = ["k"]
order_by = "ts"
measures = [{{ agg = "count" }}, {{ agg = "sum", column = "v", over = "{over}" }}]
[sink]
type = "files"
path = "output"
[checkpoint]
path = "checkpoints"
"#
        )
    };
    let tmp = setup(&rolling("60 minutes"));
    let out = eddy(tmp.path(), &["run", "p.toml"]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    std::fs::write(tmp.path().join("p.toml"), rolling("2 hours")).unwrap();
    let out = eddy(tmp.path(), &["run", "p.toml"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains(r#"query.measures[1].over: the checkpoint has "1 hour", the pipeline has "2 hours""#),
        "{err}"
    );
    assert!(err.contains("checkpoint.path"), "{err}");
    assert!(err.contains("Restore the old pipeline"), "{err}");
    assert!(!err.contains("RollingWindow") && !err.contains("query: "), "Debug text or the whole query: {err}");
}

#[test]
fn a_schema_changed_since_the_checkpoint_is_named_as_the_file_writes_it() {
    let pipeline = |schema: &str| {
        format!(
            r#"
name = "schema-changed"
mode = "real-time"
[source]
type = "files"
path = "input"
format = "json"
schema = "{schema}"
[query]
type = "window_aggregate"
group_by = ["k"]
measures = [{{ agg = "count" }}]
[sink]
type = "files"
path = "output"
[checkpoint]
path = "checkpoints"
"#
        )
    };
    let tmp = setup(&pipeline("k STRING, ts TIMESTAMP, v BIGINT"));
    let out = eddy(tmp.path(), &["run", "p.toml"]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    std::fs::write(tmp.path().join("p.toml"), pipeline("k STRING, ts TIMESTAMP, v INT")).unwrap();
    let out = eddy(tmp.path(), &["run", "p.toml"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains(r#"source.schema: the checkpoint has "k STRING, ts TIMESTAMP, v BIGINT", the pipeline has "k STRING, ts TIMESTAMP, v INT""#),
        "{err}"
    );
    assert!(!err.contains("Schema {") && !err.contains("data_type"), "Debug text: {err}");
}

/// Logs written to a pipe or file carry no terminal colour codes (the tracing subscriber's
/// default colours them unless told otherwise).
#[test]
fn logs_to_a_pipe_are_plain_text() {
    let dir = setup(GOOD);
    let out = Command::new(env!("CARGO_BIN_EXE_eddy"))
        .args(["run", "p.toml"])
        .current_dir(dir.path())
        .env("EDDY_LOG", "info")
        .env_remove("NO_COLOR")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let logs = String::from_utf8_lossy(&out.stderr);
    assert!(logs.contains("INFO"), "info logs expected: {logs}");
    assert!(!logs.contains('\u{1b}'), "colour codes in: {logs:?}");
}

/// GOOD with `source` lines added to `[source]` and `sink` lines to `[sink]`.
fn with_exprs(source: &str, sink: &str) -> String {
    GOOD.replace(
        "schema = \"k STRING, ts TIMESTAMP, v DOUBLE\"",
        &format!("schema = \"k STRING, ts TIMESTAMP, v DOUBLE\"\n{source}"),
    )
    .replace("path = \"output\"", &format!("path = \"output\"\n{sink}"))
}

#[test]
fn expression_fields_that_are_wrong_exit_2_naming_the_field_and_the_line_and_column() {
    let kafka_sink = |select: &str| {
        with_exprs("", "").replace(
            "[sink]\ntype = \"files\"\npath = \"output\"",
            &format!("[sink]\ntype = \"kafka\"\nbootstrap_servers = \"127.0.0.1:1\"\ntopic = \"t\"\n{select}"),
        )
    };
    let cases: Vec<(&str, String, Vec<&str>)> = vec![
        (
            "unknown column",
            with_exprs(r#"filter = "v > 1 AND nope = 'a'""#, ""),
            vec!["source.filter", "at 1:11", "nope"],
        ),
        (
            "wrong operand type",
            with_exprs(r#"select = ["k", "ts", "v", "NOT v AS nv"]"#, ""),
            vec!["source.select[3]", "at 1:5", "BOOLEAN"],
        ),
        (
            "filter not boolean",
            with_exprs(r#"filter = "v * 2""#, ""),
            vec!["source.filter", "at 1:1", "DOUBLE", "BOOLEAN"],
        ),
        (
            "duplicate output names",
            with_exprs(r#"select = ["*", "upper(k) AS K"]"#, ""),
            vec!["source.select[1]", "source.select[0]", "\"K\""],
        ),
        (
            "syntax error",
            with_exprs("filter = \"\"\"k = 'a' AND\n  v > > 1\"\"\"", ""),
            vec!["source.filter", "at 2:7"],
        ),
        (
            "aggregate in a filter",
            with_exprs(r#"filter = "max(v) > 1""#, ""),
            vec!["source.filter", "at 1:1", "aggregate function max"],
        ),
        (
            "unknown function",
            with_exprs(r#"select = ["k", "ts", "frobnicate(v) AS v"]"#, ""),
            vec!["source.select[2]", "at 1:1", "function frobnicate"],
        ),
        (
            "sink select of an input column",
            with_exprs("", r#"select = ["window.start AS s", "ts"]"#),
            vec!["sink.select[1]", "at 1:1", "`ts`", "sum(v)"],
        ),
        (
            "kafka value not a string",
            kafka_sink(r#"select = ["k", "`sum(v)` AS value"]"#),
            vec!["sink.select", "value", "DOUBLE", "STRING"],
        ),
        (
            "kafka key column and key list",
            kafka_sink("key = [\"key\"]\nselect = [\"k AS key\", \"`sum(v)`\"]"),
            vec!["sink.key", "key"],
        ),
        (
            "select on the late sink",
            format!("{}\n[late_sink]\ntype = \"stdout\"\nselect = [\"k\"]\n", with_exprs("", "")),
            vec!["late_sink.select", "unchanged"],
        ),
        (
            "watermark on a column the select dropped",
            with_exprs(r#"select = ["k", "v"]"#, ""),
            vec!["watermark.column", "\"ts\"", "it has none"],
        ),
    ];
    let mut wrong = Vec::new();
    for (what, pipeline, words) in cases {
        for command in ["validate", "run"] {
            let tmp = setup(&pipeline);
            let out = eddy(tmp.path(), &[command, "p.toml"]);
            let err = String::from_utf8_lossy(&out.stderr);
            if out.status.code() != Some(2) || words.iter().any(|w| !err.contains(w)) {
                wrong.push(format!("{what} ({command}): exit {:?}, expected {words:?} in: {err}", out.status.code()));
            }
            assert!(!tmp.path().join("output").exists(), "{what}: nothing may start");
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn validate_prints_the_schema_after_the_sink_select() {
    let tmp = setup(&with_exprs(
        r#"select = ["upper(k) AS k", "ts", "v * 2 AS v"]"#,
        r#"select = ["window.start", "k", "`sum(v)` AS total"]"#,
    ));
    let out = eddy(tmp.path(), &["validate", "p.toml"]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "start TIMESTAMP\nk STRING\ntotal DOUBLE\n");
}

#[test]
fn a_source_filter_or_select_changed_since_the_checkpoint_names_the_field() {
    // Checkpointed without steps (as an older eddy would have written it), then restarted with
    // a filter: a mismatch naming `source.filter`; then a filter changed, and one removed.
    let with = |source: &str| {
        GOOD.replace(
            "schema = \"k STRING, ts TIMESTAMP, v DOUBLE\"",
            &format!("schema = \"k STRING, ts TIMESTAMP, v DOUBLE\"\n{source}"),
        ) + "[checkpoint]\npath = \"checkpoints\"\n"
    };
    let run = |dir: &Path, pipeline: &str| {
        std::fs::write(dir.join("p.toml"), pipeline).unwrap();
        eddy(dir, &["run", "p.toml"])
    };
    let tmp = setup(&with(""));
    let out = run(tmp.path(), &with(""));
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let out = run(tmp.path(), &with(r#"filter = "v > 1""#));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains(r#"source.filter: the checkpoint has nothing, the pipeline has "(v > 1)""#), "{err}");

    let tmp = setup(&with(r#"filter = "v > 1""#));
    let out = run(tmp.path(), &with(r#"filter = "v > 1""#));
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let out = run(tmp.path(), &with(r#"filter = "v > 2""#));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains(r#"source.filter: the checkpoint has "(v > 1)", the pipeline has "(v > 2)""#), "{err}");
    let out = run(tmp.path(), &with(r#"select = ["k", "ts", "v * 2 AS v"]"#));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains(r#"source.filter: the checkpoint has "(v > 1)", the pipeline has nothing"#), "{err}");
    assert!(
        err.contains(r#"source.select: the checkpoint has nothing, the pipeline has ["k", "ts", "(v * 2) AS v"]"#),
        "{err}"
    );
}

#[test]
fn a_processor_query_is_refused_by_the_eddy_command_which_registers_none() {
    let pipeline = GOOD.replace(
        "type = \"window_aggregate\"\ngroup_by = [\"k\"]\nwindow = { type = \"tumbling\", column = \"ts\", size = \"5 seconds\" }\noutput_mode = \"update\"\nmeasures = [{ agg = \"sum\", column = \"v\" }]",
        "type = \"processor\"\nname = \"fraud\"\npartition_by = [\"k\"]",
    );
    assert!(pipeline.contains("type = \"processor\""));
    for command in ["validate", "explain", "run"] {
        expect_usage_error(&pipeline, &[command, "p.toml"], &["query.name", "\"fraud\"", "none is registered"]);
    }
}

/// A chained aggregation keyed otherwise than the one before it needs an exchange, which both
/// modes run: at `parallelism` 2, `eddy validate` and `eddy explain` take it (exit 0) in
/// real-time and in micro-batch mode, and `eddy explain` shows the exchange edge.
#[test]
fn an_exchange_at_parallelism_2_is_taken_by_validate_and_explain_in_both_modes() {
    let chained = |mode: &str| {
        format!(
            r#"
name = "chained"
mode = "{mode}"
parallelism = 2
[source]
type = "files"
path = "input"
format = "json"
schema = "k STRING, ts TIMESTAMP, v DOUBLE"
[watermark]
column = "ts"
delay = "10 seconds"
[query]
sql = """
SELECT window, max_by(k, n) AS k, max(n) AS n
FROM (SELECT window(ts, '5 seconds') AS window, k, count(*) AS n FROM source GROUP BY 1, 2)
GROUP BY window
"""
output_mode = "append"
[sink]
type = "files"
path = "output"
"#
        )
    };
    for mode in ["real-time", "micro-batch"] {
        let tmp = setup(&chained(mode));
        for command in ["validate", "explain"] {
            let out = eddy(tmp.path(), &[command, "p.toml"]);
            assert_eq!(out.status.code(), Some(0), "{mode} {command}: {}", String::from_utf8_lossy(&out.stderr));
            if command == "explain" {
                let stdout = String::from_utf8_lossy(&out.stdout);
                assert!(stdout.contains("exchange edge"), "{mode}: {stdout}");
            }
        }
    }
}

/// An `s3://` checkpoint path in a build without the `s3` feature: exit 2 at `checkpoint.path`,
/// saying how to build one that has it (tests/checkpoint_s3.rs runs such paths with it).
#[cfg(not(feature = "s3"))]
#[test]
fn an_s3_checkpoint_path_without_the_s3_feature_is_refused_naming_the_feature() {
    expect_usage_error(
        GOOD,
        &["run", "p.toml", "--no-progress", "--set", "checkpoint.path=s3://bucket/ck"],
        &["checkpoint.path", "s3://bucket/ck/errors", "built without the s3 feature", "--features s3"],
    );
}
