//! The broker unreachable, at start and in the middle of a run.
//!
//! - At start: `eddy run` logs a line per retry, answers `/readyz` 503 meanwhile, and exits 1
//!   once `eddy.unreachable.timeout.ms` has passed.
//! - Mid-run: the test broker keeps its topics in memory, so the path is cut instead of the broker:
//!   a TCP proxy (written here) stands between every client and the broker, which advertises the
//!   proxy's port. Input is produced at a steady rate while the proxy is stopped for a few
//!   seconds and started again: `/readyz` turns 503 while the path is cut and 200 after, and every
//!   input record gives exactly one output row (none lost, none doubled).

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

mod kafka_common;
use kafka_common::{Broker, Eddy, Proxy, broker_or_skip, free_port, wait_for};

fn pipeline(dir: &std::path::Path, bootstrap: &str, metrics: u16, timeout_ms: u64) -> std::path::PathBuf {
    let text = format!(
        "name = \"cut\"\nmode = \"real-time\"\nparallelism = 2\n\n\
         [source]\ntype = \"kafka\"\nbootstrap_servers = \"{bootstrap}\"\ntopic = \"cut-in\"\n\
         starting_offsets = \"earliest\"\nformat = \"json\"\nschema = \"k STRING, v BIGINT, ts TIMESTAMP\"\n\
         properties = {{ \"eddy.unreachable.timeout.ms\" = {timeout_ms} }}\n\n\
         [query]\ntype = \"rolling_window\"\npartition_by = [\"k\"]\norder_by = \"ts\"\n\
         frontier = {{ delay = \"0 seconds\" }}\nmeasures = [{{ agg = \"count\", column = \"v\", alias = \"n\" }}]\n\n\
         [sink]\ntype = \"kafka\"\nbootstrap_servers = \"{bootstrap}\"\ntopic = \"cut-out\"\n\
         properties = {{ \"eddy.unreachable.timeout.ms\" = {timeout_ms} }}\n\n\
         [metrics]\nlisten = \"127.0.0.1:{metrics}\"\n"
    );
    let path = dir.join("cut.toml");
    std::fs::write(&path, text).unwrap();
    path
}

#[test]
fn unreachable_broker_at_start_is_retried_with_log_lines_then_exits_1_after_the_configured_time() {
    // No broker needed: nobody listens on the port.
    let tmp = tempfile::tempdir().unwrap();
    let (dead, metrics) = (free_port(), free_port());
    let path = pipeline(tmp.path(), &format!("127.0.0.1:{dead}"), metrics, 4000);
    let started = Instant::now();
    let mut eddy = Eddy::start(&path, format!("127.0.0.1:{metrics}").parse().unwrap(), &[]);
    wait_for("the metrics endpoint", Duration::from_secs(20), || eddy.readyz() != 0 || !eddy.running());
    assert_eq!(eddy.readyz(), 503, "not ready while the broker is unreachable");
    let (status, log) = eddy.wait(Duration::from_secs(60));
    let took = started.elapsed();
    assert_eq!(status.code(), Some(1), "exit 1 (an external failure):\n{log}");
    assert!(took >= Duration::from_secs(4), "gave up after {took:?}, before the 4 s configured");
    let retries = log.lines().filter(|l| l.contains("Kafka broker not usable yet, retrying")).count();
    assert!(retries >= 2, "a log line per retry:\n{log}");
    assert!(log.contains("eddy.unreachable.timeout.ms"), "the failure names the setting:\n{log}");
}

#[test]
fn a_cut_connection_makes_readyz_fail_then_the_pipeline_resumes_and_loses_no_record() {
    if !broker_or_skip("kafka_failures") {
        return;
    }
    let (broker_port, proxy_port) = (free_port(), free_port());
    let broker = Broker::start_on(broker_port, proxy_port);
    let mut proxy = Proxy::start(proxy_port, format!("127.0.0.1:{broker_port}").parse().unwrap());
    broker.create_topic("cut-in", 2);
    broker.create_topic("cut-out", 1);
    let tmp = tempfile::tempdir().unwrap();
    let metrics = free_port();
    let path = pipeline(tmp.path(), &broker.bootstrap(), metrics, 30_000);
    let mut eddy = Eddy::start(&path, format!("127.0.0.1:{metrics}").parse().unwrap(), &[]);

    let record = |i: usize| format!("{{\"k\": \"k{}\", \"v\": {i}, \"ts\": \"2024-05-01T00:00:00Z\"}}", i % 17);
    let first: Vec<String> = (0..300).map(record).collect();
    broker.produce("cut-in", &first, Some("k"));
    eddy.wait_consumed(first.len(), Duration::from_secs(60));
    wait_for("/readyz 200", Duration::from_secs(10), || eddy.readyz() == 200);

    // More input at a steady rate (kc retries while the path is cut), and the cut in the middle.
    let second: Vec<String> = (300..1500).map(record).collect();
    let producer = {
        let mut c = broker.kc();
        c.args(["produce", "cut-in", "--key-field", "k", "--rate", "200"]);
        let mut child = c.stdin(std::process::Stdio::piped()).stderr(std::process::Stdio::piped()).spawn().unwrap();
        let mut stdin = child.stdin.take().unwrap();
        let lines = second.clone();
        std::thread::spawn(move || {
            use std::io::Write;
            for l in lines {
                if writeln!(stdin, "{l}").is_err() {
                    break;
                }
            }
        });
        child
    };
    std::thread::sleep(Duration::from_secs(2));
    proxy.cut();
    let cut_at = Instant::now();
    wait_for("/readyz 503 while the path is cut", Duration::from_secs(15), || eddy.readyz() == 503);
    std::thread::sleep(Duration::from_secs(4).saturating_sub(cut_at.elapsed()));
    assert!(eddy.running(), "eddy must ride out a short cut:\n{}", eddy.log());
    proxy.resume();
    wait_for("/readyz 200 after the path is back", Duration::from_secs(20), || eddy.readyz() == 200);
    let out = producer.wait_with_output().unwrap();
    assert!(out.status.success(), "kc produce: {}", String::from_utf8_lossy(&out.stderr));
    let total = first.len() + second.len();
    eddy.wait_consumed(total, Duration::from_secs(60));
    let (status, log) = eddy.terminate();
    assert!(status.success(), "eddy exited {status}:\n{log}");
    assert!(log.contains("Kafka broker unreachable"), "the cut is logged:\n{log}");
    assert!(log.contains("Kafka broker reachable again"), "the recovery is logged:\n{log}");

    // One row per input record; per key, the counts run 1, 2, 3, ... without gap or repeat.
    let rows = broker.consume("cut-out", Some(total + 1), 10.0);
    assert_eq!(rows.len(), total, "input records vs output rows");
    let mut per_key: BTreeMap<String, i64> = BTreeMap::new();
    for r in &rows {
        let v: serde_json::Value = serde_json::from_str(r.value.as_deref().unwrap()).unwrap();
        let n = per_key.entry(v["k"].as_str().unwrap().to_string()).or_default();
        *n += 1;
        assert_eq!(v["n"].as_i64(), Some(*n), "row {v}");
    }
}
