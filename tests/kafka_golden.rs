//! The real-time golden cases (`tests/realtime/*`: rolling windows, window aggregates,
//! deduplication under the replay clock) and the rolling-revenue example fed through a real
//! broker: input produced to a one-partition topic with `kc` (an independent client), `eddy run`
//! with the `kafka` source and sink, output read back from the output topic with `kc`, compared
//! with the brute-force reference's rows (`tests/realtime/reference.py`, written from
//! SEMANTICS.md) as a multiset (`compare.py --all`), as the files runs are.
//!
//! The Kafka source is endless: each run is stopped with SIGTERM once its metrics endpoint counts
//! every input message; the replay clock then advances to `until` (firing the last timers), the
//! last epoch commits and eddy exits 0.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

mod kafka_common;
use kafka_common::{Broker, Eddy, broker_or_skip, free_port, root};

/// The pipeline text with its `[source]` replaced by a Kafka source on `input` (keeping format,
/// schema and timestamp unit) and its `[sink]` by a Kafka sink on `output`, plus `[metrics]`.
fn through_kafka(pipeline: &str, bootstrap: &str, input: &str, output: &str, metrics: u16) -> String {
    let mut out = String::new();
    let mut section = String::new();
    for line in pipeline.lines() {
        let t = line.trim();
        if t.starts_with('[') {
            section = t.to_string();
            out.push_str(line);
            out.push('\n');
            match t {
                "[source]" => out.push_str(&format!(
                    "type = \"kafka\"\nbootstrap_servers = \"{bootstrap}\"\ntopic = \"{input}\"\n\
                     starting_offsets = \"earliest\"\n"
                )),
                "[sink]" => out.push_str(&format!(
                    "type = \"kafka\"\nbootstrap_servers = \"{bootstrap}\"\ntopic = \"{output}\"\n"
                )),
                _ => {}
            }
            continue;
        }
        let key = t.split('=').next().unwrap_or("").trim();
        let drop = match section.as_str() {
            "[source]" => !matches!(key, "format" | "schema" | "timestamp_unit"),
            "[sink]" => true,
            _ => false,
        };
        if !drop {
            out.push_str(line);
            out.push('\n');
        }
    }
    out.push_str(&format!("\n[metrics]\nlisten = \"127.0.0.1:{metrics}\"\n"));
    out
}

fn input_lines(dir: &Path) -> Vec<String> {
    let mut files: Vec<_> = std::fs::read_dir(dir).unwrap().flatten().map(|e| e.path()).collect();
    files.sort();
    files
        .iter()
        .flat_map(|f| std::fs::read_to_string(f).unwrap().lines().map(String::from).collect::<Vec<_>>())
        .filter(|l| !l.trim().is_empty())
        .collect()
}

/// One run through Kafka: the pipeline file, its metrics port, `--set` overrides, the number of
/// input messages, the output topic and the expected folder (for the row count).
struct Run<'a> {
    pipeline: &'a Path,
    metrics: u16,
    sets: &'a [String],
    messages: usize,
    output: &'a str,
    expected: &'a Path,
}

/// Runs until the pipeline consumed every input message, stops it, and writes the output topic's
/// values to `out_dir/all.jsonl`. Returns a failure description, if any.
fn run_and_collect(broker: &Broker, run: &Run<'_>, out_dir: &Path) -> Option<String> {
    let mut eddy = Eddy::start(run.pipeline, format!("127.0.0.1:{}", run.metrics).parse().unwrap(), run.sets);
    eddy.wait_consumed(run.messages, Duration::from_secs(90));
    let (status, log) = eddy.terminate();
    if !status.success() {
        return Some(format!("{}: eddy exited {status}:\n{log}", run.pipeline.display()));
    }
    // Until one row more than expected (none comes), or 10 s without a message (the consumer
    // joins its group first).
    let expected = std::fs::read_to_string(run.expected.join("all.jsonl")).map(|t| t.lines().count()).unwrap_or(0);
    let rows = broker.consume(run.output, Some(expected + 1), 10.0);
    std::fs::create_dir_all(out_dir).unwrap();
    let text: String = rows.iter().filter_map(|r| r.value.as_ref()).map(|v| format!("{v}\n")).collect();
    std::fs::write(out_dir.join("all.jsonl"), text).unwrap();
    None
}

fn compare(expected: &Path, actual: &Path) -> Option<String> {
    let cmp = Command::new("python3")
        .arg(root().join("../shared/tools/compare.py"))
        .arg(expected)
        .arg(actual)
        .arg("--all")
        .output()
        .unwrap();
    (!cmp.status.success()).then(|| String::from_utf8_lossy(&cmp.stdout).to_string())
}

#[test]
fn real_time_golden_cases_through_a_one_partition_topic_match_the_brute_force_reference() {
    if !broker_or_skip("kafka_golden") {
        return;
    }
    let broker = Broker::start();
    let mut cases: Vec<_> = std::fs::read_dir(root().join("tests/realtime"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.join("pipeline.toml").is_file())
        .collect();
    cases.sort();
    assert!(cases.len() >= 5, "cases missing");
    let mut failures = Vec::new();
    for case in &cases {
        let name = case.file_name().unwrap().to_string_lossy().to_string();
        let (input, output) = (format!("{name}-in"), format!("{name}-out"));
        broker.create_topic(&input, 1);
        broker.create_topic(&output, 1);
        let lines = input_lines(&case.join("input"));
        broker.produce(&input, &lines, None);
        let tmp = tempfile::tempdir().unwrap();
        let metrics = free_port();
        let text = std::fs::read_to_string(case.join("pipeline.toml")).unwrap();
        let pipeline = tmp.path().join("pipeline.toml");
        std::fs::write(&pipeline, through_kafka(&text, &broker.bootstrap(), &input, &output, metrics)).unwrap();
        let out_dir = tmp.path().join("output");
        if let Some(f) = run_and_collect(
            &broker,
            &Run {
                pipeline: &pipeline,
                metrics,
                sets: &[],
                messages: lines.len(),
                output: &output,
                expected: &case.join("expected"),
            },
            &out_dir,
        ) {
            failures.push(f);
            continue;
        }
        if let Some(f) = compare(&case.join("expected"), &out_dir) {
            failures.push(format!("{name}:\n{f}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn rolling_revenue_example_through_kafka_gives_the_brute_force_reference_rows() {
    if !broker_or_skip("kafka_golden") {
        return;
    }
    let broker = Broker::start();
    broker.create_topic("revenue-events", 1);
    broker.create_topic("rolling-revenue", 1);
    let lines = input_lines(&root().join("examples/data/revenue"));
    broker.produce("revenue-events", &lines, Some("user_id"));

    // The reference reads a case folder: the example's pipeline (its query and schema) and input.
    let tmp = tempfile::tempdir().unwrap();
    let case = tmp.path().join("case");
    std::fs::create_dir_all(case.join("input")).unwrap();
    std::fs::write(case.join("input/events.jsonl"), lines.join("\n") + "\n").unwrap();
    let example = root().join("examples/rolling-revenue-kafka.toml");
    let replay = [
        "clock.type=replay".to_string(),
        "clock.column=arrival_time".to_string(),
        "clock.until=2024-01-15T15:00:00Z".to_string(),
    ];
    let mut text = std::fs::read_to_string(&example).unwrap();
    text.push_str("\n[clock]\ntype = \"replay\"\ncolumn = \"arrival_time\"\nuntil = \"2024-01-15T15:00:00Z\"\n");
    std::fs::write(case.join("pipeline.toml"), text).unwrap();
    let reference =
        Command::new("python3").arg(root().join("tests/realtime/reference.py")).arg(&case).output().unwrap();
    assert!(reference.status.success(), "reference: {}", String::from_utf8_lossy(&reference.stderr));

    let metrics = free_port();
    let mut sets = vec![
        format!("source.bootstrap_servers={}", broker.bootstrap()),
        format!("sink.bootstrap_servers={}", broker.bootstrap()),
        format!("metrics.listen=127.0.0.1:{metrics}"),
    ];
    sets.extend(replay);
    let out_dir = tmp.path().join("output");
    let failure = run_and_collect(
        &broker,
        &Run {
            pipeline: &example,
            metrics,
            sets: &sets,
            messages: lines.len(),
            output: "rolling-revenue",
            expected: &case.join("expected"),
        },
        &out_dir,
    );
    assert!(failure.is_none(), "{}", failure.unwrap_or_default());
    if let Some(f) = compare(&case.join("expected"), &out_dir) {
        panic!("rolling-revenue through Kafka:\n{f}");
    }
    // The message key is the output key column, JSON-encoded; every row has one.
    let rows = broker.consume("rolling-revenue", None, 10.0);
    assert!(!rows.is_empty());
    for r in &rows {
        let v: serde_json::Value = serde_json::from_str(r.value.as_deref().unwrap()).unwrap();
        let k: serde_json::Value = serde_json::from_str(r.key.as_deref().expect("a key")).unwrap();
        assert_eq!(k, serde_json::json!({ "user_id": v["user_id"] }));
    }
}
