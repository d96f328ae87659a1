//! The Kafka sink's message columns on a real broker (PIPELINE.md, as Spark's Kafka sink): after
//! the sink's `select`, a `value` column is the message value as it is (the other columns are not
//! written) and a `key` column the message key; without them the value is the row's JSON.
//! Expected messages written by hand.

use std::process::Command;

mod kafka_common;
use kafka_common::{Broker, broker_or_skip};

const PIPELINE: &str = r#"
name = "message-columns"
mode = "real-time"
parallelism = 2
[source]
type = "files"
path = "input"
format = "json"
schema = "id STRING, amount BIGINT"
select = ["id", "amount * 10 AS amount"]
[query]
type = "deduplicate"
columns = ["id"]
[sink]
type = "kafka"
topic = "TOPIC"
SELECT
"#;

/// Runs the pipeline with the sink `select` line `select` into a new topic; the messages as
/// sorted (key, value) pairs.
fn messages(broker: &Broker, topic: &str, select: &str) -> Vec<(Option<String>, Option<String>)> {
    broker.create_topic(topic, 1);
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    std::fs::create_dir_all(dir.join("input")).unwrap();
    std::fs::write(dir.join("input/000.json"), "{\"id\": \"a\", \"amount\": 1}\n{\"id\": \"b\", \"amount\": 2}\n")
        .unwrap();
    std::fs::write(dir.join("p.toml"), PIPELINE.replace("TOPIC", topic).replace("SELECT", select)).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_eddy"))
        .args(["run", "p.toml", "--no-progress", "--set", &format!("sink.bootstrap_servers={}", broker.bootstrap())])
        .current_dir(dir)
        .env("EDDY_LOG", "error")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let mut got: Vec<_> = broker.consume(topic, Some(2), 10.0).into_iter().map(|m| (m.key, m.value)).collect();
    got.sort();
    got
}

#[test]
fn value_and_key_columns_of_the_sink_select_are_the_kafka_message() {
    if !broker_or_skip("kafka_message_columns") {
        return;
    }
    let broker = Broker::start();
    let s = |v: &str| Some(v.to_string());
    assert_eq!(
        messages(
            &broker,
            "with-value-and-key",
            r#"select = ["upper(id) AS key", "concat(id, '=', amount) AS value", "amount"]"#
        ),
        vec![(s("A"), s("a=10")), (s("B"), s("b=20"))]
    );
    // without a `value` column the value is the row's JSON, and without a key column or list
    // there is no key
    assert_eq!(
        messages(&broker, "row-json", r#"select = ["id", "amount + 1 AS next"]"#),
        vec![(None, s(r#"{"id": "a", "next": 11}"#)), (None, s(r#"{"id": "b", "next": 21}"#))]
    );
}
