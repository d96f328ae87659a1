//! A sink that fails in the middle of a run (here: standard output whose reader went away) stops
//! the run with exit 1 and a message naming the sink, without a panic. The rows are written on
//! the partition actors' threads, so this is their failure path.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

#[test]
fn a_sink_failing_mid_run_exits_1_naming_the_sink() {
    let tmp = tempfile::tempdir().unwrap();
    // 200,000 records, each giving a row: far more than the pipe holds.
    let mut input = String::new();
    for i in 0..200_000u64 {
        input.push_str(&format!(
            "{{\"k\": \"k{}\", \"ts\": \"2024-01-01T00:{:02}:{:02}Z\", \"v\": {i}}}\n",
            i % 97,
            (i / 60) % 60,
            i % 60
        ));
    }
    std::fs::create_dir(tmp.path().join("input")).unwrap();
    std::fs::write(tmp.path().join("input/000.json"), input).unwrap();
    std::fs::write(
        tmp.path().join("p.toml"),
        r#"
name = "sink-failure"
mode = "real-time"
parallelism = 2
[source]
type = "files"
path = "input"
format = "json"
schema = "k STRING, ts TIMESTAMP, v DOUBLE"
[clock]
type = "replay"
column = "ts"
[query]
type = "rolling_window"
partition_by = ["k"]
order_by = "ts"
measures = [{ agg = "sum", column = "v", over = "1 minute" }]
[sink]
type = "stdout"
"#,
    )
    .unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_eddy"))
        .args(["run", "p.toml", "--no-progress"])
        .current_dir(tmp.path())
        .env("EDDY_LOG", "warn")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Read a few rows, then hang up.
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    for _ in 0..3 {
        line.clear();
        out.read_line(&mut line).unwrap();
        assert!(line.starts_with('{'), "a row: {line:?}");
    }
    drop(out);
    let done = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&done.stderr);
    assert_eq!(done.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("sink:") && stderr.contains("Broken pipe"), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
}
