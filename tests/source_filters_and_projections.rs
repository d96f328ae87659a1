//! A source's `filter` and `select` and a sink's `select`, end to end through the `eddy` binary
//! (PIPELINE.md, SEMANTICS.md "Source filters and projections"): in both modes, with one
//! partition actor (chained in real-time mode) and several. Expected rows are written by hand;
//! the window case was also run through the Spark oracle (`../shared/tools/spark-oracle`), which
//! gave the same two rows.

mod common;
use common::json_lines_sorted;

use std::process::Command;

use serde_json::json;

/// Writes `files` into `input/`, the pipeline (with `MODE` and `PARALLELISM` replaced), runs it,
/// and returns the folder.
fn run(pipeline: &str, files: &[&str], mode: &str, parallelism: usize) -> tempfile::TempDir {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    std::fs::create_dir_all(dir.join("input")).unwrap();
    for (i, f) in files.iter().enumerate() {
        std::fs::write(dir.join(format!("input/{i:03}.json")), f).unwrap();
    }
    let p = pipeline.replace("MODE", mode).replace("PARALLELISM", &parallelism.to_string());
    std::fs::write(dir.join("p.toml"), p).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_eddy"))
        .args(["run", "p.toml", "--no-progress"])
        .current_dir(dir)
        .env("EDDY_LOG", "error")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{mode} x{parallelism}: {}", String::from_utf8_lossy(&out.stderr));
    tmp
}

const WINDOW: &str = r#"
name = "source-steps"
mode = "MODE"
parallelism = PARALLELISM
[source]
type = "files"
path = "input"
format = "json"
schema = "id STRING, amount BIGINT, qty BIGINT, ts STRING"
filter = "amount > 0"
select = ["id", "amount / qty AS unit", "CAST(ts AS TIMESTAMP) AS event_time"]
[watermark]
column = "event_time"
delay = "0 seconds"
[query]
type = "window_aggregate"
group_by = []
window = { type = "tumbling", column = "event_time", size = "10 seconds" }
output_mode = "append"
measures = [{ agg = "sum", column = "unit", alias = "total" }, { agg = "count" }]
[sink]
type = "files"
path = "out"
select = ["window.start AS window_start", "total", "`count(1)` AS n"]
"#;

#[test]
fn a_source_filter_and_select_feed_a_watermark_on_a_computed_column_and_the_sink_selects_window_start() {
    // `z` is filtered out: had it moved the watermark to 11:00, `d` and `e` would be late and
    // the window at 10:00:10 would hold nothing. `e` moves W to 10:00:25: the windows ending at
    // 10:00:10 and 10:00:20 close, the one at 10:00:30 stays open.
    let files = [
        concat!(
            r#"{"id": "a", "amount": 10, "qty": 2, "ts": "2024-01-15 10:00:01"}"#,
            "\n",
            r#"{"id": "b", "amount": -5, "qty": 1, "ts": "2024-01-15 10:00:02"}"#,
            "\n",
            r#"{"id": "c", "amount": 6, "qty": 3, "ts": "2024-01-15 10:00:04"}"#,
            "\n",
            r#"{"id": "z", "amount": 0, "qty": 1, "ts": "2024-01-15 11:00:00"}"#,
            "\n"
        ),
        concat!(
            r#"{"id": "d", "amount": 7, "qty": 7, "ts": "2024-01-15 10:00:12"}"#,
            "\n",
            r#"{"id": "e", "amount": 3, "qty": 2, "ts": "2024-01-15 10:00:25"}"#,
            "\n"
        ),
    ];
    let expected = vec![
        json!({"window_start": "2024-01-15T10:00:00Z", "total": 7.0, "n": 2}),
        json!({"window_start": "2024-01-15T10:00:10Z", "total": 1.0, "n": 1}),
    ];
    for mode in ["micro-batch", "real-time"] {
        for parallelism in [1, 3] {
            let tmp = run(WINDOW, &files, mode, parallelism);
            assert_eq!(json_lines_sorted(&tmp.path().join("out")), expected, "{mode} x{parallelism}");
        }
    }
}

const FAILING: &str = r#"
name = "failing-steps"
mode = "MODE"
parallelism = PARALLELISM
[source]
type = "files"
path = "input"
format = "json"
schema = "id STRING, amount BIGINT, qty BIGINT, ts STRING"
select = ["id", "amount / qty AS unit", "CAST(ts AS TIMESTAMP) AS event_time"]
[query]
type = "deduplicate"
columns = ["id"]
[sink]
type = "files"
path = "out"
select = ["id", "unit", "event_time", "10 div CAST(id AS INT) AS tenth"]
[dead_letter]
type = "files"
path = "dead"
"#;

#[test]
fn records_whose_expressions_fail_go_to_the_dead_letters_and_every_good_record_is_written() {
    let input = concat!(
        r#"{"id": "1", "amount": 10, "qty": 2, "ts": "2024-01-15 10:00:01"}"#,
        "\n",
        r#"{"id": "2", "amount": 3, "qty": 0, "ts": "2024-01-15 10:00:02"}"#,
        "\n",
        r#"{"id": "3", "amount": 9, "qty": 3, "ts": "yesterday"}"#,
        "\n",
        r#"{"id": "0", "amount": 4, "qty": 4, "ts": "2024-01-15 10:00:04"}"#,
        "\n",
        r#"{"id": "5", "amount": 5, "qty": 2, "ts": "2024-01-15 10:00:05"}"#,
        "\n"
    );
    let expected_rows = vec![
        json!({"id": "1", "unit": 5.0, "event_time": "2024-01-15T10:00:01Z", "tenth": 10}),
        json!({"id": "5", "unit": 2.5, "event_time": "2024-01-15T10:00:05Z", "tenth": 2}),
    ];
    let line = |n: usize| input.lines().nth(n - 1).unwrap().to_string();
    let mut expected_dead = vec![
        json!({"reason": "DIVIDE_BY_ZERO in \"(amount / qty)\"", "source": "000.json:2", "record": line(2)}),
        json!({"reason": "CAST_INVALID_INPUT in \"CAST(ts AS TIMESTAMP)\"", "source": "000.json:3", "record": line(3)}),
        // the sink's select failed on an output row: the row before the select
        json!({
            "reason": "DIVIDE_BY_ZERO in \"(10 div CAST(id AS INT))\"",
            "source": "sink.select",
            "record": r#"{"id": "0", "unit": 1.0, "event_time": "2024-01-15T10:00:04Z"}"#
        }),
    ];
    expected_dead.sort_by_key(|v| v.to_string());
    for mode in ["micro-batch", "real-time"] {
        for parallelism in [1, 2] {
            let tmp = run(FAILING, &[input], mode, parallelism);
            assert_eq!(json_lines_sorted(&tmp.path().join("out")), expected_rows, "{mode} x{parallelism}");
            let mut dead = json_lines_sorted(&tmp.path().join("dead"));
            dead.sort_by_key(|v| v.to_string());
            assert_eq!(dead, expected_dead, "{mode} x{parallelism}");
        }
    }
}

const ROLLING: &str = r#"
name = "rolling-select"
mode = "MODE"
parallelism = PARALLELISM
[source]
type = "files"
path = "input"
format = "json"
schema = "user STRING, cents BIGINT, at STRING"
filter = "cents >= 0"
select = ["upper(user) AS u", "cents / 100 AS dollars", "CAST(at AS TIMESTAMP) AS t"]
[clock]
type = "replay"
column = "t"
[query]
type = "rolling_window"
partition_by = ["u"]
order_by = "t"
frontier = { delay = "0 seconds", alias = "f" }
measures = [{ agg = "sum", column = "dollars", alias = "total" }, { agg = "count", alias = "n" }]
[sink]
type = "files"
path = "out"
"#;

#[test]
fn a_rolling_window_reads_the_columns_of_a_source_select() {
    // One record a file (one micro-batch each): each visible record gives its key one row, at a
    // frontier equal to its event time (delay 0), in both modes. `ann` and `Ann` are one key
    // after `upper`; bob's negative record is filtered out and moves no clock.
    let files = [
        "{\"user\": \"ann\", \"cents\": 150, \"at\": \"2024-01-15 10:00:00\"}\n",
        "{\"user\": \"bob\", \"cents\": -1, \"at\": \"2024-01-15 10:00:01\"}\n",
        "{\"user\": \"Ann\", \"cents\": 250, \"at\": \"2024-01-15 10:00:02\"}\n",
        "{\"user\": \"bob\", \"cents\": 100, \"at\": \"2024-01-15 10:00:03\"}\n",
    ];
    let mut expected = vec![
        json!({"u": "ANN", "f": "2024-01-15T10:00:00Z", "total": 1.5, "n": 1}),
        json!({"u": "ANN", "f": "2024-01-15T10:00:02Z", "total": 4.0, "n": 2}),
        json!({"u": "BOB", "f": "2024-01-15T10:00:03Z", "total": 1.0, "n": 1}),
    ];
    expected.sort_by_key(|v| v.to_string());
    for mode in ["micro-batch", "real-time"] {
        for parallelism in [1, 2] {
            let tmp = run(ROLLING, &files, mode, parallelism);
            let mut got = json_lines_sorted(&tmp.path().join("out"));
            got.sort_by_key(|v| v.to_string());
            assert_eq!(got, expected, "{mode} x{parallelism}");
        }
    }
}

const REARRANGING: &str = r#"
name = "rearranging-select"
mode = "MODE"
parallelism = PARALLELISM
[source]
type = "files"
path = "input"
format = "json"
schema = "id STRING, amount BIGINT, qty BIGINT, ts STRING"
filter = "id <> 'skip'"
select = ["ts AS raw_ts", "id", "amount / qty AS amount", "CAST(ts AS TIMESTAMP) AS event_time", "id AS again", "qty * 2 AS qty2"]
[query]
type = "deduplicate"
columns = ["id"]
[dead_letter]
type = "files"
path = "dead"
[sink]
type = "files"
path = "out"
"#;

/// A source `select` that moves the input's columns (`ts` first, `id` twice), replaces one by a
/// computed column of the same name (`amount`) and adds others: the records are rearranged in
/// place (the decoder leaves a slot per item), and a record whose expression fails, or one the
/// filter drops, is the input as it came.
#[test]
fn a_select_that_rearranges_the_columns_keeps_good_records_and_sends_failures_as_they_came() {
    let input = concat!(
        r#"{"id": "1", "amount": 10, "qty": 2, "ts": "2024-01-15 10:00:01"}"#,
        "\n",
        r#"{"id": "2", "amount": 3, "qty": 0, "ts": "2024-01-15 10:00:02"}"#,
        "\n",
        r#"{"id": "skip", "amount": 1, "qty": 1, "ts": "2024-01-15 10:00:03"}"#,
        "\n",
        r#"{"id": "3", "amount": 9, "qty": 3, "ts": "yesterday"}"#,
        "\n",
        r#"{"id": "5", "amount": 5, "qty": null, "ts": "2024-01-15 10:00:05"}"#,
        "\n"
    );
    let expected_rows = vec![
        json!({"raw_ts": "2024-01-15 10:00:01", "id": "1", "amount": 5.0, "event_time": "2024-01-15T10:00:01Z", "again": "1", "qty2": 4}),
        json!({"raw_ts": "2024-01-15 10:00:05", "id": "5", "amount": null, "event_time": "2024-01-15T10:00:05Z", "again": "5", "qty2": null}),
    ];
    let line = |n: usize| input.lines().nth(n - 1).unwrap().to_string();
    let mut expected_dead = vec![
        json!({"reason": "DIVIDE_BY_ZERO in \"(amount / qty)\"", "source": "000.json:2", "record": line(2)}),
        json!({"reason": "CAST_INVALID_INPUT in \"CAST(ts AS TIMESTAMP)\"", "source": "000.json:4", "record": line(4)}),
    ];
    expected_dead.sort_by_key(|v| v.to_string());
    for mode in ["micro-batch", "real-time"] {
        for parallelism in [1, 2] {
            let tmp = run(REARRANGING, &[input], mode, parallelism);
            let mut rows = json_lines_sorted(&tmp.path().join("out"));
            rows.sort_by_key(|v| v["id"].to_string());
            assert_eq!(rows, expected_rows, "{mode} x{parallelism}");
            let mut dead = json_lines_sorted(&tmp.path().join("dead"));
            dead.sort_by_key(|v| v.to_string());
            assert_eq!(dead, expected_dead, "{mode} x{parallelism}");
        }
    }
}
