//! A record that would take an integer sum out of BIGINT, end to end: it goes to the dead-letter
//! sink with `ARITHMETIC_OVERFLOW in <measure>`, no measure takes it, and the run goes on
//! (SEMANTICS.md "Aggregate functions"). Spark 4 (ANSI) fails the query there, so the expected
//! rows are written by hand.

mod common;
use common::json_lines;

use std::process::Command;

use serde_json::{Value, json};

const INPUT: &str = r#"{"k": "a", "ts": "2024-01-15T10:00:00Z", "v": 9223372036854775800}
{"k": "a", "ts": "2024-01-15T10:00:01Z", "v": 8}
{"k": "a", "ts": "2024-01-15T10:00:02Z", "v": 7}
{"k": "b", "ts": "2024-01-15T10:00:03Z", "v": -1}
"#;

fn pipeline(mode: &str) -> String {
    format!(
        r#"
name = "overflow"
mode = "{mode}"
parallelism = 2
[source]
type = "files"
path = "input"
format = "json"
schema = "k STRING, ts TIMESTAMP, v BIGINT"
[query]
type = "window_aggregate"
group_by = ["k"]
window = {{ type = "tumbling", column = "ts", size = "1 minute" }}
output_mode = "update"
measures = [{{ agg = "count" }}, {{ agg = "sum", column = "V" }}]
[sink]
type = "files"
path = "out"
[dead_letter]
type = "files"
path = "dead"
"#
    )
}

#[test]
fn a_record_that_would_overflow_a_bigint_sum_goes_to_the_dead_letters_and_the_run_goes_on() {
    for mode in ["micro-batch", "real-time"] {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();
        std::fs::create_dir_all(dir.join("input")).unwrap();
        std::fs::write(dir.join("input/000.json"), INPUT).unwrap();
        std::fs::write(dir.join("p.toml"), pipeline(mode)).unwrap();
        let out = Command::new(env!("CARGO_BIN_EXE_eddy"))
            .args(["run", "p.toml", "--no-progress"])
            .current_dir(dir)
            .env("EDDY_LOG", "error")
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{mode}: {}", String::from_utf8_lossy(&out.stderr));

        // The last row of each key (update mode): the refused record is in no measure.
        let mut last = std::collections::BTreeMap::new();
        for row in json_lines(&dir.join("out")) {
            assert_ne!(row["sum(V)"], json!(i64::MIN + 7), "{mode}: a wrapped sum was written");
            last.insert(row["k"].as_str().unwrap().to_string(), (row["count(1)"].clone(), row["sum(V)"].clone()));
        }
        let expected: std::collections::BTreeMap<String, (Value, Value)> =
            [("a".to_string(), (json!(2), json!(9223372036854775807i64))), ("b".to_string(), (json!(1), json!(-1)))]
                .into();
        assert_eq!(last, expected, "{mode}");

        let dead = json_lines(&dir.join("dead"));
        assert_eq!(dead.len(), 1, "{mode}: {dead:?}");
        assert_eq!(dead[0]["reason"], json!("ARITHMETIC_OVERFLOW in sum(V)"), "{mode}");
        let record: Value = serde_json::from_str(dead[0]["record"].as_str().unwrap()).unwrap();
        assert_eq!(record, json!({"k": "a", "ts": "2024-01-15T10:00:01Z", "v": 8}), "{mode}");
    }
}

/// The same in a rolling window (lifetime measures): the refused record is in neither the sum nor
/// the count of its key, and reaches the dead-letter sink (refused as it becomes visible: on
/// arrival in real-time mode, at the end of its batch in micro-batch mode).
#[test]
fn a_record_that_would_overflow_a_rolling_sum_goes_to_the_dead_letters_and_the_run_goes_on() {
    const ROLLING_INPUT: &str = r#"{"k": "a", "ts": "2024-01-15T10:00:00Z", "v": 9223372036854775800}
{"k": "a", "ts": "2024-01-15T10:00:01Z", "v": 100}
{"k": "a", "ts": "2024-01-15T10:00:02Z", "v": 7}
{"k": "b", "ts": "2024-01-15T10:00:03Z", "v": -1}
"#;
    for mode in ["micro-batch", "real-time"] {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();
        std::fs::create_dir_all(dir.join("input")).unwrap();
        std::fs::write(dir.join("input/000.json"), ROLLING_INPUT).unwrap();
        let pipeline = pipeline(mode).replace(
            r#"type = "window_aggregate"
group_by = ["k"]
window = { type = "tumbling", column = "ts", size = "1 minute" }
output_mode = "update"
measures = [{ agg = "count" }, { agg = "sum", column = "V" }]"#,
            r#"type = "rolling_window"
partition_by = ["k"]
order_by = "ts"
measures = [{ agg = "sum", column = "v", alias = "life" }, { agg = "count" }]"#,
        );
        assert!(pipeline.contains("rolling_window"));
        std::fs::write(dir.join("p.toml"), pipeline).unwrap();
        let out = Command::new(env!("CARGO_BIN_EXE_eddy"))
            .args(["run", "p.toml", "--no-progress"])
            .current_dir(dir)
            .env("EDDY_LOG", "error")
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{mode}: {}", String::from_utf8_lossy(&out.stderr));

        let mut last = std::collections::BTreeMap::new();
        for row in json_lines(&dir.join("out")) {
            last.insert(row["k"].as_str().unwrap().to_string(), (row["life"].clone(), row["count(1)"].clone()));
        }
        let expected: std::collections::BTreeMap<String, (Value, Value)> =
            [("a".to_string(), (json!(9223372036854775807i64), json!(2))), ("b".to_string(), (json!(-1), json!(1)))]
                .into();
        assert_eq!(last, expected, "{mode}");

        let dead = json_lines(&dir.join("dead"));
        assert_eq!(dead.len(), 1, "{mode}: {dead:?}");
        assert_eq!(dead[0]["reason"], json!("ARITHMETIC_OVERFLOW in life"), "{mode}");
        let record: Value = serde_json::from_str(dead[0]["record"].as_str().unwrap()).unwrap();
        assert_eq!(record, json!({"k": "a", "ts": "2024-01-15T10:00:01Z", "v": 100}), "{mode}");
    }
}

/// A DECIMAL(36, 0) sum is DECIMAL(38, 0) (Spark's `sum` type, bounded at 38 digits): a record
/// that would take a window's sum past 38 digits goes to the dead letters with
/// `NUMERIC_VALUE_OUT_OF_RANGE` (Spark 4 with ANSI fails the query there), and the run goes on.
#[test]
fn a_record_that_would_overflow_a_decimal_sum_goes_to_the_dead_letters_and_the_run_goes_on() {
    let big = "9".repeat(36); // DECIMAL(36, 0)'s largest: 100 of them fit in 38 digits, 101 do not
    let mut input = String::new();
    for i in 0..101 {
        input.push_str(&format!("{{\"k\": \"a\", \"ts\": \"2024-01-15T10:00:{:02}Z\", \"v\": {big}}}\n", i % 60));
    }
    input.push_str("{\"k\": \"b\", \"ts\": \"2024-01-15T10:00:03Z\", \"v\": -1}\n");
    // 100 × (10^36 - 1), written by hand
    let hundred = format!("{}00", "9".repeat(36));
    for mode in ["micro-batch", "real-time"] {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();
        std::fs::create_dir_all(dir.join("input")).unwrap();
        std::fs::write(dir.join("input/000.json"), &input).unwrap();
        let pipeline = pipeline(mode).replace("v BIGINT", "v DECIMAL(36, 0)");
        std::fs::write(dir.join("p.toml"), pipeline).unwrap();
        let out = Command::new(env!("CARGO_BIN_EXE_eddy"))
            .args(["run", "p.toml", "--no-progress"])
            .current_dir(dir)
            .env("EDDY_LOG", "error")
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{mode}: {}", String::from_utf8_lossy(&out.stderr));
        // the exact sum is past f64: read the written text of the last row of `a`
        let mut files: Vec<_> = std::fs::read_dir(dir.join("out")).unwrap().flatten().map(|e| e.path()).collect();
        files.sort();
        let text: String = files.iter().map(|p| std::fs::read_to_string(p).unwrap()).collect();
        let last_a = text.lines().rfind(|l| l.contains("\"a\"")).unwrap_or_default();
        assert!(last_a.contains(&format!(": {hundred}")), "{mode}: {last_a}");
        let rows = json_lines(&dir.join("out"));
        let count_a = rows.iter().rfind(|r| r["k"] == json!("a")).map(|r| r["count(1)"].clone());
        assert_eq!(count_a, Some(json!(100)), "{mode}");
        let b = rows.iter().rfind(|r| r["k"] == json!("b")).map(|r| r["sum(V)"].clone());
        assert_eq!(b, Some(json!(-1)), "{mode}");
        let dead = json_lines(&dir.join("dead"));
        assert_eq!(dead.len(), 1, "{mode}: {dead:?}");
        assert_eq!(dead[0]["reason"], json!("NUMERIC_VALUE_OUT_OF_RANGE in sum(V)"), "{mode}");
    }
}
