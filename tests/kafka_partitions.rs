//! Partitioned input and malformed input through a real broker.
//!
//! - Four input partitions and `parallelism` 2: every record is processed exactly once (one
//!   output row per record: a rolling window with lifetime measures emits a row for each arriving
//!   record), the records of one key are processed in order (the k-th row of a key counts k
//!   records and carries the largest per-key sequence number k - 1), and the final lifetime count
//!   and sum per key equal both a brute-force count over the input and the one-partition,
//!   one-actor run's.
//! - Dead letters: non-JSON, binary, empty and tombstone messages are counted
//!   (`eddy_records_malformed_total`) and written to a Kafka dead-letter topic with their
//!   `topic/partition@offset`; every good record around them is processed.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

mod kafka_common;
use kafka_common::{Broker, Eddy, broker_or_skip, free_port};

const KEYS: usize = 13;

/// A rolling window with lifetime measures per key `k` (one row per arriving record), from topic
/// `input` to topic `output`; `top` goes among the top-level fields, `extra` after `[sink]`.
fn pipeline(
    dir: &Path,
    name: &str,
    bootstrap: &str,
    topics: (&str, &str),
    top: &str,
    extra: &str,
    metrics: u16,
) -> PathBuf {
    let (input, output) = topics;
    let text = format!(
        "name = \"{name}\"\nmode = \"real-time\"\n{top}\n\
         [source]\ntype = \"kafka\"\nbootstrap_servers = \"{bootstrap}\"\ntopic = \"{input}\"\n\
         starting_offsets = \"earliest\"\nformat = \"json\"\nschema = \"k STRING, seq BIGINT, v BIGINT, ts TIMESTAMP\"\n\n\
         [query]\ntype = \"rolling_window\"\npartition_by = [\"k\"]\norder_by = \"ts\"\n\
         frontier = {{ delay = \"0 seconds\" }}\n\
         measures = [{{ agg = \"count\", column = \"v\", alias = \"n\" }}, {{ agg = \"sum\", column = \"v\", alias = \"total\" }}, \
         {{ agg = \"max\", column = \"seq\", alias = \"last_seq\" }}]\n\n\
         [sink]\ntype = \"kafka\"\nbootstrap_servers = \"{bootstrap}\"\ntopic = \"{output}\"\nkey = [\"k\"]\n\n\
         {extra}\n[metrics]\nlisten = \"127.0.0.1:{metrics}\"\n"
    );
    let path = dir.join(format!("{name}.toml"));
    std::fs::write(&path, text).unwrap();
    path
}

/// `n` records over `KEYS` keys: per-key sequence numbers from 0, values from a fixed formula,
/// event times in 2024 (long visible on the system clock).
fn records(n: usize) -> Vec<String> {
    let mut seq = [0u64; KEYS];
    (0..n)
        .map(|i| {
            let k = (i * 7 + i / 3) % KEYS;
            let s = seq[k];
            seq[k] += 1;
            let v = (i * 7919) % 101;
            format!(
                "{{\"k\": \"k{k}\", \"seq\": {s}, \"v\": {v}, \"ts\": \"2024-05-01T00:00:{:02}.{:06}Z\"}}",
                i / 100_000,
                i % 100_000
            )
        })
        .collect()
}

/// Output rows in topic order as (k, n, total, last_seq).
/// Reads until one row more than `expected` (none should come) or 10 s without a message.
fn rows(broker: &Broker, topic: &str, expected: usize) -> Vec<(String, i64, i64, i64)> {
    broker
        .consume(topic, Some(expected + 1), 10.0)
        .iter()
        .map(|m| {
            let v: serde_json::Value = serde_json::from_str(m.value.as_deref().expect("a value")).unwrap();
            (
                v["k"].as_str().unwrap().to_string(),
                v["n"].as_i64().unwrap(),
                v["total"].as_i64().unwrap(),
                v["last_seq"].as_i64().unwrap(),
            )
        })
        .collect()
}

/// Runs the pipeline until it consumed `n` messages, then stops it (exit 0 expected).
fn run(path: &Path, metrics: u16, n: usize) {
    let mut eddy = Eddy::start(path, format!("127.0.0.1:{metrics}").parse().unwrap(), &[]);
    eddy.wait_consumed(n, Duration::from_secs(120));
    let (status, log) = eddy.terminate();
    assert!(status.success(), "eddy exited {status}:\n{log}");
}

#[test]
fn four_partitions_two_actors_process_each_record_once_in_key_order_with_the_one_partition_aggregates() {
    if !broker_or_skip("kafka_partitions") {
        return;
    }
    let broker = Broker::start();
    let tmp = tempfile::tempdir().unwrap();
    let input = records(3000);
    // Brute force: count and sum per key over the input.
    let mut expected: BTreeMap<String, (i64, i64)> = BTreeMap::new();
    for l in &input {
        let v: serde_json::Value = serde_json::from_str(l).unwrap();
        let e = expected.entry(v["k"].as_str().unwrap().to_string()).or_default();
        e.0 += 1;
        e.1 += v["v"].as_i64().unwrap();
    }

    let mut finals = Vec::new();
    for (partitions, parallelism) in [(4u32, 2usize), (1, 1)] {
        let (inp, out) = (format!("p{partitions}-in"), format!("p{partitions}-out"));
        broker.create_topic(&inp, partitions);
        broker.create_topic(&out, 1);
        broker.produce(&inp, &input, Some("k"));
        let metrics = free_port();
        let top = format!("parallelism = {parallelism}\n");
        let path =
            pipeline(tmp.path(), &format!("p{partitions}"), &broker.bootstrap(), (&inp, &out), &top, "", metrics);
        run(&path, metrics, input.len());

        let got = rows(&broker, &out, input.len());
        assert_eq!(got.len(), input.len(), "{partitions} partitions: one row per record, exactly once");
        let mut per_key: BTreeMap<String, (i64, i64)> = BTreeMap::new();
        for (k, n, total, last_seq) in &got {
            let e = per_key.entry(k.clone()).or_default();
            e.0 += 1;
            assert_eq!(*n, e.0, "{partitions} partitions: key {k}: rows in order, counting each record once");
            assert_eq!(*last_seq, e.0 - 1, "{partitions} partitions: key {k}: records processed in sequence order");
            e.1 = *total;
        }
        assert_eq!(per_key, expected, "{partitions} partitions: final count and sum per key");
        finals.push(per_key);
    }
    assert_eq!(finals[0], finals[1], "4 partitions / 2 actors and 1 partition / 1 actor agree");
}

/// Produces raw messages (None: a tombstone) with confluent-kafka (kc's environment), in order,
/// to partition 0.
fn produce_raw(broker: &Broker, topic: &str, messages: &[Option<Vec<u8>>]) {
    let python = kafka_common::tools_home().join("venv/bin/python");
    let script = "import sys\nfrom confluent_kafka import Producer\n\
                  p = Producer({'bootstrap.servers': sys.argv[1], 'enable.idempotence': True, 'linger.ms': 0})\n\
                  for line in sys.stdin:\n    h = line.strip()\n    \
                  p.produce(sys.argv[2], value=None if h == '-' else bytes.fromhex(h), partition=0)\n\
                  sys.exit(1 if p.flush(30) else 0)\n";
    let mut child = Command::new(python)
        .args(["-c", script, &broker.bootstrap(), topic])
        .stdin(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("python");
    let mut stdin = child.stdin.take().unwrap();
    for m in messages {
        match m {
            None => writeln!(stdin, "-").unwrap(),
            Some(b) => writeln!(stdin, "{}", b.iter().map(|x| format!("{x:02x}")).collect::<String>()).unwrap(),
        }
    }
    drop(stdin);
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "raw produce: {}", String::from_utf8_lossy(&out.stderr));
}

#[test]
fn malformed_messages_go_to_the_dead_letter_topic_with_their_offsets_and_the_good_ones_are_processed() {
    if !broker_or_skip("kafka_partitions") {
        return;
    }
    let broker = Broker::start();
    for t in ["dl-in", "dl-out", "dl-dead"] {
        broker.create_topic(t, 1);
    }
    let good = records(40);
    let bad: [(&str, Option<Vec<u8>>); 4] = [
        ("not JSON", Some(b"this is not json".to_vec())),
        ("binary", Some(vec![0x00, 0xff, 0xfe, 0x80, 0x01, 0x7b])),
        ("empty", Some(Vec::new())),
        ("tombstone", None),
    ];
    // Good records with a bad one after every 10th: offsets are positions in this list.
    let mut messages = Vec::new();
    let mut bad_offsets = BTreeMap::new();
    for (i, g) in good.iter().enumerate() {
        messages.push(Some(g.as_bytes().to_vec()));
        if i % 10 == 9 {
            let (what, m) = &bad[i / 10];
            bad_offsets.insert(messages.len() as i64, *what);
            messages.push(m.clone());
        }
    }
    produce_raw(&broker, "dl-in", &messages);

    let tmp = tempfile::tempdir().unwrap();
    let metrics = free_port();
    let dead = format!(
        "[dead_letter]\ntype = \"kafka\"\nbootstrap_servers = \"{}\"\ntopic = \"dl-dead\"\n",
        broker.bootstrap()
    );
    let path = pipeline(tmp.path(), "dead-letters", &broker.bootstrap(), ("dl-in", "dl-out"), "", &dead, metrics);
    let mut eddy = Eddy::start(&path, format!("127.0.0.1:{metrics}").parse().unwrap(), &[]);
    eddy.wait_consumed(messages.len(), Duration::from_secs(60));
    assert_eq!(eddy.metric("eddy_records_malformed_total"), Some(bad.len() as f64));
    assert_eq!(eddy.metric("eddy_records_in_total"), Some(good.len() as f64));
    let (status, log) = eddy.terminate();
    assert!(status.success(), "eddy exited {status}:\n{log}");

    let out = rows(&broker, "dl-out", good.len());
    assert_eq!(out.len(), good.len(), "every good record gives its row");
    let letters = broker.consume("dl-dead", Some(bad.len() + 1), 10.0);
    let mut sources = BTreeMap::new();
    for l in &letters {
        let v: serde_json::Value = serde_json::from_str(l.value.as_deref().unwrap()).unwrap();
        let reason = v["reason"].as_str().unwrap_or_default();
        assert!(!reason.is_empty(), "a dead letter says why: {v}");
        assert!(v.get("record").is_some(), "a dead letter carries the raw record: {v}");
        let source = v["source"].as_str().unwrap().to_string();
        let offset: i64 = source.strip_prefix("dl-in/0@").unwrap_or_else(|| panic!("source {source}")).parse().unwrap();
        sources.insert(offset, v["record"].clone());
    }
    assert_eq!(
        sources.keys().copied().collect::<Vec<_>>(),
        bad_offsets.keys().copied().collect::<Vec<_>>(),
        "dead letters at exactly the malformed offsets ({bad_offsets:?})"
    );
    let not_json = bad_offsets.iter().find(|(_, w)| **w == "not JSON").map(|(o, _)| *o).unwrap();
    assert_eq!(sources[&not_json], serde_json::json!("this is not json"));
}
