//! The real-time golden cases of one source (`tests/realtime/*`: rolling windows, window
//! aggregates, deduplication, chained aggregations under the replay clock) and the rolling-revenue example fed through a real
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
/// schema, timestamp unit, name, filter and select) and its `[sink]` by a Kafka sink on `output`
/// (keeping its select), plus `[metrics]`. Fields are read line by line: one line each.
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
            "[source]" => !matches!(key, "format" | "schema" | "timestamp_unit" | "name" | "filter" | "select"),
            "[sink]" => key != "select",
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
        // one input topic per case: the cases of several sources (`[[source]]`, input in a
        // folder per source) run through files only
        .filter(|p| std::fs::read_to_string(p.join("pipeline.toml")).is_ok_and(|t| !t.contains("[[source]]")))
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

/// A brute-force reference row's message as the sink's `select` writes it, spelled by hand from
/// SQL.md's `to_json`: keys in order, a null field left out, timestamps cut to milliseconds with
/// `Z`. The key is the `key` column's text (the user). Returns (key, value text, sum).
fn expected_json_message(row: &serde_json::Value) -> (String, String, Option<f64>) {
    let frontier = row["__frontier"].as_str().unwrap();
    // the reference writes `...:SS[.ffffff]Z`; to_json writes exactly three fraction digits
    let (secs, fraction) =
        frontier.trim_end_matches('Z').split_once('.').unwrap_or((frontier.trim_end_matches('Z'), ""));
    let millis = format!("{:0<3}", &fraction[..fraction.len().min(3)]);
    let frontier = format!("{secs}.{millis}Z");
    let sum = row["rolling_revenue"].as_f64();
    let value = match sum {
        Some(_) => format!("{{\"__frontier\":\"{frontier}\",\"rolling_revenue\":SUM}}"),
        None => format!("{{\"__frontier\":\"{frontier}\"}}"),
    };
    (row["user_id"].as_str().unwrap().to_string(), value, sum)
}

#[test]
fn rolling_revenue_json_example_writes_to_json_of_frontier_and_revenue_as_the_message_value() {
    if !broker_or_skip("kafka_golden") {
        return;
    }
    let broker = Broker::start();
    broker.create_topic("revenue-events", 1);
    broker.create_topic("rolling-revenue-json", 1);
    let lines = input_lines(&root().join("examples/data/revenue"));
    broker.produce("revenue-events", &lines, Some("user_id"));

    // The reference computes the rolling rows of the same query (the structured example, whose
    // query and schema the SQL example shares); the message text is then spelled by hand.
    let tmp = tempfile::tempdir().unwrap();
    let case = tmp.path().join("case");
    std::fs::create_dir_all(case.join("input")).unwrap();
    std::fs::write(case.join("input/events.jsonl"), lines.join("\n") + "\n").unwrap();
    let mut text = std::fs::read_to_string(root().join("examples/rolling-revenue-kafka.toml")).unwrap();
    text.push_str("\n[clock]\ntype = \"replay\"\ncolumn = \"arrival_time\"\nuntil = \"2024-01-15T15:00:00Z\"\n");
    std::fs::write(case.join("pipeline.toml"), text).unwrap();
    let reference =
        Command::new("python3").arg(root().join("tests/realtime/reference.py")).arg(&case).output().unwrap();
    assert!(reference.status.success(), "reference: {}", String::from_utf8_lossy(&reference.stderr));
    let mut expected: Vec<(String, String, Option<f64>)> = std::fs::read_to_string(case.join("expected/all.jsonl"))
        .unwrap()
        .lines()
        .map(|l| expected_json_message(&serde_json::from_str(l).unwrap()))
        .collect();
    assert!(!expected.is_empty());

    let example = root().join("examples/sql/rolling-revenue-kafka.toml");
    let metrics = free_port();
    let sets = vec![
        format!("source.bootstrap_servers={}", broker.bootstrap()),
        format!("sink.bootstrap_servers={}", broker.bootstrap()),
        format!("metrics.listen=127.0.0.1:{metrics}"),
        "clock.type=replay".to_string(),
        "clock.column=arrival_time".to_string(),
        "clock.until=2024-01-15T15:00:00Z".to_string(),
    ];
    let mut eddy = Eddy::start(&example, format!("127.0.0.1:{metrics}").parse().unwrap(), &sets);
    eddy.wait_consumed(lines.len(), Duration::from_secs(90));
    let (status, log) = eddy.terminate();
    assert!(status.success(), "eddy exited {status}:\n{log}");
    let rows = broker.consume("rolling-revenue-json", Some(expected.len() + 1), 10.0);

    // Each message: the key is the user as text; the value is the JSON text, with the sum's
    // digits compared as a number (the reference sums in another order).
    let mut got: Vec<(String, String, Option<f64>)> = rows
        .iter()
        .map(|r| {
            let value = r.value.clone().expect("a value");
            let parsed: serde_json::Value = serde_json::from_str(&value).unwrap();
            let sum = parsed.get("rolling_revenue").and_then(serde_json::Value::as_f64);
            let text = match sum {
                Some(_) => {
                    let (head, _) = value.rsplit_once(':').unwrap();
                    format!("{head}:SUM}}")
                }
                None => value,
            };
            (r.key.clone().expect("a key"), text, sum)
        })
        .collect();
    let order = |a: &(String, String, Option<f64>), b: &(String, String, Option<f64>)| {
        (&a.0, &a.1).cmp(&(&b.0, &b.1)).then(a.2.partial_cmp(&b.2).unwrap())
    };
    expected.sort_by(order);
    got.sort_by(order);
    assert_eq!(got.len(), expected.len());
    for (g, e) in got.iter().zip(&expected) {
        assert_eq!((&g.0, &g.1), (&e.0, &e.1));
        match (g.2, e.2) {
            (Some(a), Some(b)) => assert!((a - b).abs() < 1e-6, "{g:?} vs {e:?}"),
            (a, b) => assert_eq!(a, b),
        }
    }
}
