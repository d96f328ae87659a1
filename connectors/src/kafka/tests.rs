//! Unit tests on librdkafka's mock cluster (in process; the real-broker tests are the workspace's
//! `tests/kafka_*.rs`). The mock cluster also serves the `exactly_once` test: the test broker
//! (tansu) has no transactions.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rdkafka::ClientConfig;
use rdkafka::Message;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::mocking::MockCluster;
use rdkafka::producer::{BaseProducer, BaseRecord, Producer};

use eddy_engine::spec::StartingOffsets;

use super::*;
use crate::{KafkaPartitionOffset, SourceOffset};
use crate::{Payload, Poll, Position, Sink, Source, SourceItem};

fn source_config(bootstrap: &str, topic: &str) -> KafkaSourceConfig {
    KafkaSourceConfig {
        bootstrap_servers: bootstrap.into(),
        topics: vec![topic.into()],
        group_id: format!("test-{topic}"),
        starting_offsets: StartingOffsets::Earliest,
        properties: BTreeMap::new(),
    }
}

fn sink_config(bootstrap: &str, topic: &str) -> KafkaSinkConfig {
    KafkaSinkConfig {
        bootstrap_servers: bootstrap.into(),
        topic: topic.into(),
        properties: BTreeMap::new(),
        transactional_id: None,
    }
}

/// Polls `source` until `n` items arrived or 20 s passed.
fn read_n(source: &mut KafkaSource, n: usize) -> Vec<SourceItem> {
    let mut out = Vec::new();
    let started = Instant::now();
    while out.len() < n && started.elapsed() < Duration::from_secs(20) {
        let before = out.len();
        let p = source.poll(&mut out, 1000, Duration::from_millis(100)).unwrap();
        assert_eq!(p == Poll::Data, out.len() > before, "Data exactly when items were appended");
    }
    out
}

#[derive(Default, Clone)]
struct Seen(Arc<Mutex<Vec<String>>>);

impl KafkaObserver for Seen {
    fn connected(&self, connected: bool) {
        self.0.lock().unwrap().push(format!("connected {connected}"));
    }
    fn lag(&self, topic: &str, partition: i32, records: i64) {
        self.0.lock().unwrap().push(format!("lag {topic}/{partition} {records}"));
    }
}

#[test]
fn rows_written_by_the_sink_are_read_back_in_order_with_their_positions() {
    let cluster = MockCluster::new(1).unwrap();
    let boot = cluster.bootstrap_servers();
    cluster.create_topic("rows", 1, 1).unwrap();
    let mut sink = KafkaSink::new("sink", sink_config(&boot, "rows"), &|| false).unwrap();
    let lines: Vec<String> = (0..200).map(|i| format!("{{\"i\": {i}}}")).collect();
    for l in &lines {
        sink.write(0, l, Some("{\"k\": 1}")).unwrap();
    }
    sink.commit(0).unwrap();
    let seen = Seen::default();
    let mut source = KafkaSource::new(source_config(&boot, "rows"), Box::new(seen.clone()), &|| false).unwrap();
    let items = read_n(&mut source, lines.len());
    let got: Vec<String> = items
        .iter()
        .map(|i| match &i.payload {
            Payload::Raw(b) => String::from_utf8(b.clone()).unwrap(),
            Payload::Line(_) | Payload::Lines(_) | Payload::Record(_) | Payload::Header(_) | Payload::Rejected(_) => {
                panic!("a Kafka source hands raw payloads")
            }
        })
        .collect();
    assert_eq!(got, lines);
    for (n, item) in items.iter().enumerate() {
        assert_eq!(item.position, Position::Kafka { topic: "rows".into(), partition: 0, offset: n as i64 });
    }
    assert_eq!(source.positions(), BTreeMap::from([(("rows".to_string(), 0), 200)]));
    assert_eq!(seen.0.lock().unwrap().first().map(String::as_str), Some("connected true"));
}

#[test]
fn a_tombstone_is_an_empty_payload_with_its_offset() {
    let cluster = MockCluster::new(1).unwrap();
    let boot = cluster.bootstrap_servers();
    cluster.create_topic("tomb", 1, 1).unwrap();
    let producer: BaseProducer = ClientConfig::new().set("bootstrap.servers", &boot).create().unwrap();
    producer.send(BaseRecord::<str, str>::to("tomb").payload("{\"a\": 1}")).unwrap();
    producer.send(BaseRecord::<str, str>::to("tomb").key("gone")).unwrap();
    producer.send(BaseRecord::<str, str>::to("tomb").payload("")).unwrap();
    producer.flush(Duration::from_secs(10)).unwrap();
    let mut source = KafkaSource::new(source_config(&boot, "tomb"), Box::new(NoObserver), &|| false).unwrap();
    let items = read_n(&mut source, 3);
    let payloads: Vec<Vec<u8>> = items
        .iter()
        .map(|i| match &i.payload {
            Payload::Raw(b) => b.clone(),
            Payload::Line(_) | Payload::Lines(_) | Payload::Record(_) | Payload::Header(_) | Payload::Rejected(_) => {
                panic!("raw expected")
            }
        })
        .collect();
    assert_eq!(payloads, vec![b"{\"a\": 1}".to_vec(), Vec::new(), Vec::new()]);
    assert_eq!(items[1].position.to_string(), "tomb/0@1");
}

#[test]
fn payload_buffers_handed_back_are_refilled_with_the_next_messages() {
    let cluster = MockCluster::new(1).unwrap();
    let boot = cluster.bootstrap_servers();
    cluster.create_topic("again", 1, 1).unwrap();
    let producer: BaseProducer = ClientConfig::new().set("bootstrap.servers", &boot).create().unwrap();
    // The first three longer than the next: refilled without growing; the last a tombstone.
    let values = ["a".repeat(20), "b".repeat(20), "c".repeat(20), "xxxx".into(), "xxxxx".into()];
    for v in &values {
        producer.send(BaseRecord::<str, str>::to("again").payload(v)).unwrap();
    }
    producer.send(BaseRecord::<str, str>::to("again").key("gone")).unwrap();
    producer.flush(Duration::from_secs(10)).unwrap();
    let mut source = KafkaSource::new(source_config(&boot, "again"), Box::new(NoObserver), &|| false).unwrap();
    let mut out = Vec::new();
    read_up_to(&mut source, &mut out, 3);
    let mut lines: Vec<Vec<u8>> = out
        .drain(..)
        .map(|item| match item.payload {
            Payload::Raw(b) => b,
            other => panic!("raw expected, got {other:?}"),
        })
        .collect();
    assert_eq!(lines.len(), 3);
    let mut kept: Vec<*const u8> = lines.iter().map(|l| l.as_ptr()).collect();
    source.recycle_lines(&mut lines);
    assert!(lines.is_empty(), "every buffer kept");
    read_up_to(&mut source, &mut out, 3);
    let got: Vec<(&[u8], String)> = out
        .iter()
        .map(|item| match &item.payload {
            Payload::Raw(b) => (b.as_slice(), item.position.to_string()),
            other => panic!("raw expected, got {other:?}"),
        })
        .collect();
    assert_eq!(
        got,
        vec![
            (&b"xxxx"[..], "again/0@3".to_string()),
            (&b"xxxxx"[..], "again/0@4".to_string()),
            (&b""[..], "again/0@5".to_string())
        ]
    );
    // The same three buffers, refilled.
    let mut refilled: Vec<*const u8> = out
        .iter()
        .map(|item| match &item.payload {
            Payload::Raw(b) => b.as_ptr(),
            other => panic!("raw expected, got {other:?}"),
        })
        .collect();
    kept.sort();
    refilled.sort();
    assert_eq!(refilled, kept);
    assert_eq!(source.positions(), BTreeMap::from([(("again".to_string(), 0), 6)]));
}

#[test]
fn unreachable_broker_at_start_fails_after_the_configured_time() {
    // A port nobody listens on: bind, read the port, close.
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let mut cfg = source_config(&format!("127.0.0.1:{port}"), "nowhere");
    cfg.properties.insert(UNREACHABLE_TIMEOUT_KEY.into(), "1500".into());
    let started = Instant::now();
    let err = KafkaSource::new(cfg, Box::new(NoObserver), &|| false).unwrap_err().to_string();
    let took = started.elapsed();
    assert!(took >= Duration::from_millis(1500) && took < Duration::from_secs(10), "took {took:?}");
    assert!(err.contains("within 1.5 s") && err.contains(UNREACHABLE_TIMEOUT_KEY), "{err}");
}

#[test]
fn a_missing_topic_is_named_when_the_wait_ends() {
    let cluster = MockCluster::new(1).unwrap();
    let mut cfg = sink_config(&cluster.bootstrap_servers(), "absent");
    cfg.properties.insert(UNREACHABLE_TIMEOUT_KEY.into(), "600".into());
    let err = KafkaSink::new("sink", cfg, &|| false).unwrap_err().to_string();
    assert!(err.contains("absent") && err.contains("not found"), "{err}");
}

#[test]
fn unknown_eddy_settings_and_bad_timeouts_are_refused_with_the_field() {
    let mut p = BTreeMap::new();
    p.insert("eddy.nonsense".to_string(), "1".to_string());
    let err = client_config("x:1", &[], &p).unwrap_err().to_string();
    assert!(err.contains("\"eddy.nonsense\": unknown Eddy setting"), "{err}");
    let mut p = BTreeMap::new();
    p.insert(UNREACHABLE_TIMEOUT_KEY.to_string(), "soon".to_string());
    let err = client_config("x:1", &[], &p).unwrap_err().to_string();
    assert!(err.contains("\"soon\" is not a number of milliseconds"), "{err}");
}

#[test]
fn properties_override_the_defaults_and_eddy_keys_stay_out_of_librdkafka() {
    let mut p = BTreeMap::new();
    p.insert("fetch.wait.max.ms".to_string(), "77".to_string());
    p.insert(UNREACHABLE_TIMEOUT_KEY.to_string(), "1234".to_string());
    let (cfg, timeout) = client_config("h:1", SOURCE_DEFAULTS, &p).unwrap();
    assert_eq!(cfg.get("fetch.wait.max.ms"), Some("77"));
    assert_eq!(cfg.get("enable.auto.commit"), Some("false"));
    assert_eq!(cfg.get("bootstrap.servers"), Some("h:1"));
    assert_eq!(cfg.get(UNREACHABLE_TIMEOUT_KEY), None);
    assert_eq!(timeout, Duration::from_millis(1234));
}

#[test]
fn consumer_lag_is_reported_per_partition_from_the_statistics() {
    let cluster = MockCluster::new(1).unwrap();
    let boot = cluster.bootstrap_servers();
    cluster.create_topic("lagged", 2, 1).unwrap();
    let producer: BaseProducer = ClientConfig::new().set("bootstrap.servers", &boot).create().unwrap();
    for i in 0..10 {
        producer.send(BaseRecord::<str, str>::to("lagged").partition(i % 2).payload("{}")).unwrap();
    }
    producer.flush(Duration::from_secs(10)).unwrap();
    let seen = Seen::default();
    let mut cfg = source_config(&boot, "lagged");
    cfg.properties.insert("statistics.interval.ms".into(), "100".into());
    let mut source = KafkaSource::new(cfg, Box::new(seen.clone()), &|| false).unwrap();
    let items = read_n(&mut source, 10);
    assert_eq!(items.len(), 10);
    // Fresh statistics after everything was read: both partitions at lag 0.
    let started = Instant::now();
    let caught_up = |s: &Seen| {
        let v = s.0.lock().unwrap();
        ["lag lagged/0 0", "lag lagged/1 0"].iter().all(|l| v.iter().any(|x| x == l))
    };
    while !caught_up(&seen) && started.elapsed() < Duration::from_secs(10) {
        let mut out = Vec::new();
        source.poll(&mut out, 10, Duration::from_millis(50)).unwrap();
    }
    assert!(caught_up(&seen), "{:?}", seen.0.lock().unwrap());
}

#[test]
fn exactly_once_rows_reach_a_read_committed_reader_once_the_epoch_commits() {
    let cluster = MockCluster::new(3).unwrap();
    let boot = cluster.bootstrap_servers();
    cluster.create_topic("txn", 1, 3).unwrap();
    let mut cfg = sink_config(&boot, "txn");
    cfg.transactional_id = Some("eddy-test-txn".into());
    let mut sink = KafkaSink::new("sink", cfg, &|| false).unwrap();
    let consumer: BaseConsumer = ClientConfig::new()
        .set("bootstrap.servers", &boot)
        .set("group.id", "reader")
        .set("auto.offset.reset", "earliest")
        .set("isolation.level", "read_committed")
        .create()
        .unwrap();
    // Assigned rather than subscribed: no group join to wait for.
    let mut tpl = rdkafka::TopicPartitionList::new();
    tpl.add_partition_offset("txn", 0, rdkafka::Offset::Beginning).unwrap();
    consumer.assign(&tpl).unwrap();
    let drain = |c: &BaseConsumer, wait: Duration| {
        let mut got = Vec::new();
        let until = Instant::now() + wait;
        while Instant::now() < until && got.len() < 2 {
            if let Some(Ok(m)) = c.poll(Duration::from_millis(50)) {
                got.push(String::from_utf8(m.payload().unwrap().to_vec()).unwrap());
            }
        }
        got
    };
    sink.write(0, "{\"n\": 1}", None).unwrap();
    sink.write(0, "{\"n\": 2}", None).unwrap();
    // Not asserted here: that the rows stay invisible before the commit. rdkafka's mock cluster
    // does not apply read_committed isolation (checked: it hands uncommitted rows out), and the
    // test broker (tansu 0.6.0) has no transactions, so that half is untestable in this project
    // for now; scripts/crash-test-kafka.sh skips its exactly_once part with the broker's answer.
    sink.commit(0).unwrap();
    let mut got = drain(&consumer, Duration::from_secs(15));
    got.sort();
    assert_eq!(got, vec!["{\"n\": 1}".to_string(), "{\"n\": 2}".to_string()]);
}

#[test]
fn pausing_for_back_pressure_loses_and_repeats_nothing() {
    let cluster = MockCluster::new(1).unwrap();
    let boot = cluster.bootstrap_servers();
    cluster.create_topic("paused", 1, 1).unwrap();
    let producer: BaseProducer = ClientConfig::new().set("bootstrap.servers", &boot).create().unwrap();
    for i in 0..300 {
        producer.send(BaseRecord::<str, str>::to("paused").payload(&format!("{{\"i\": {i}}}"))).unwrap();
    }
    producer.flush(Duration::from_secs(10)).unwrap();
    let mut source = KafkaSource::new(source_config(&boot, "paused"), Box::new(NoObserver), &|| false).unwrap();
    let mut items = Vec::new();
    let started = Instant::now();
    while items.is_empty() && started.elapsed() < Duration::from_secs(20) {
        source.poll(&mut items, 10, Duration::from_millis(100)).unwrap();
    }
    // Paused and resumed three times while reading in small polls.
    for _ in 0..3 {
        source.backpressure(true);
        source.poll(&mut items, 10, Duration::from_millis(200)).unwrap();
        source.backpressure(false);
        source.poll(&mut items, 10, Duration::from_millis(200)).unwrap();
    }
    let rest = read_n(&mut source, 300 - items.len());
    items.extend(rest);
    let offsets: Vec<i64> = items
        .iter()
        .map(|i| match &i.position {
            Position::Kafka { offset, .. } => *offset,
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(offsets, (0..300).collect::<Vec<i64>>(), "every offset once, in order");
}

/// Produces 300 numbered messages to `topic`, opens a source over it (`properties` added), reads
/// a first poll, then asks for a pause and polls for 500 ms: the items read so far.
fn read_then_pause(boot: &str, topic: &str, properties: &[(&str, &str)]) -> (KafkaSource, Vec<SourceItem>) {
    let producer: BaseProducer = ClientConfig::new().set("bootstrap.servers", boot).create().unwrap();
    for i in 0..300 {
        producer.send(BaseRecord::<str, str>::to(topic).payload(&format!("{{\"i\": {i}}}"))).unwrap();
    }
    producer.flush(Duration::from_secs(10)).unwrap();
    let mut cfg = source_config(boot, topic);
    cfg.properties.extend(properties.iter().map(|(k, v)| (k.to_string(), v.to_string())));
    let mut source = KafkaSource::new(cfg, Box::new(NoObserver), &|| false).unwrap();
    let mut items = Vec::new();
    let started = Instant::now();
    while items.is_empty() && started.elapsed() < Duration::from_secs(20) {
        source.poll(&mut items, 10, Duration::from_millis(100)).unwrap();
    }
    source.backpressure(true);
    let paused = Instant::now();
    while paused.elapsed() < Duration::from_millis(500) {
        source.poll(&mut items, 1000, Duration::from_millis(50)).unwrap();
    }
    (source, items)
}

#[test]
fn a_source_resumed_from_the_beginning_never_pauses_for_back_pressure() {
    let cluster = MockCluster::new(1).unwrap();
    let boot = cluster.bootstrap_servers();
    cluster.create_topic("unpaused", 1, 1).unwrap();
    cluster.create_topic("paused-ref", 1, 1).unwrap();
    // The contrast: by default a pause stops the reading after the first poll.
    let (_, items) = read_then_pause(&boot, "paused-ref", &[]);
    assert!(items.len() <= 10, "paused after the first poll of at most 10: {} items", items.len());
    let (mut source, mut items) = read_then_pause(&boot, "unpaused", &[(RESUME_KEY, "beginning")]);
    assert!(items.len() > 10, "read on after the asked pause: {} items", items.len());
    let rest = read_n(&mut source, 300 - items.len());
    items.extend(rest);
    assert_eq!(kafka_at(&items), (0..300).map(|o| (0, o)).collect::<Vec<_>>(), "every offset once, in order");
}

#[test]
fn a_row_the_broker_never_acknowledges_fails_the_prepare_after_the_configured_time() {
    let cluster = MockCluster::new(1).unwrap();
    let boot = cluster.bootstrap_servers();
    cluster.create_topic("down", 1, 1).unwrap();
    let mut cfg = sink_config(&boot, "down");
    cfg.properties.insert(UNREACHABLE_TIMEOUT_KEY.into(), "1500".into());
    let mut sink = KafkaSink::new("sink", cfg, &|| false).unwrap();
    sink.write(0, "{\"ok\": 1}", None).unwrap();
    sink.prepare(0).unwrap();
    sink.commit(0).unwrap();
    cluster.broker_down(1).unwrap();
    sink.write(1, "{\"lost\": 1}", None).unwrap();
    let started = Instant::now();
    // The prepare fails: no checkpoint then covers the epoch.
    let err = sink.prepare(1).unwrap_err().to_string();
    assert!(started.elapsed() < Duration::from_secs(15), "bounded by message.timeout.ms: {:?}", started.elapsed());
    assert!(err.contains("not delivered") && err.contains("topic down"), "{err}");
}

#[test]
fn the_prepare_wait_runs_apart_from_the_sink_and_covers_every_row_of_its_epoch() {
    let cluster = MockCluster::new(1).unwrap();
    let boot = cluster.bootstrap_servers();
    cluster.create_topic("split", 1, 1).unwrap();
    let mut sink = KafkaSink::new("sink", sink_config(&boot, "split"), &|| false).unwrap();
    for i in 0..200 {
        sink.write(0, &row(i), None).unwrap();
    }
    let wait = sink.prepare_begin(0).unwrap().expect("at least once: a wait to run apart");
    let waiting = std::thread::spawn(wait);
    // The sink is free while the wait runs: the next epoch's rows are written meanwhile.
    for i in 200..400 {
        sink.write(1, &row(i), None).unwrap();
    }
    waiting.join().unwrap().unwrap();
    // Once the wait returned, the broker acknowledged every row of epoch 0 ...
    assert_eq!(sink.unreported_up_to(0), 0);
    // ... and they are in the topic.
    let got = read_all(&boot, "split", "read_uncommitted", Duration::from_secs(3));
    let epoch0: Vec<&String> = got.iter().filter(|(e, _)| e == "0").map(|(_, r)| r).collect();
    assert_eq!(epoch0.len(), 200, "every row of epoch 0 in the topic");
    sink.prepare_begin(1).unwrap().expect("a wait")().unwrap();
    sink.commit(1).unwrap();
}

#[test]
fn a_prepare_wait_fails_when_its_rows_are_never_acknowledged() {
    let cluster = MockCluster::new(1).unwrap();
    let boot = cluster.bootstrap_servers();
    cluster.create_topic("down2", 1, 1).unwrap();
    let mut cfg = sink_config(&boot, "down2");
    cfg.properties.insert(UNREACHABLE_TIMEOUT_KEY.into(), "1500".into());
    let mut sink = KafkaSink::new("sink", cfg, &|| false).unwrap();
    sink.write(0, "{\"ok\": 1}", None).unwrap();
    sink.prepare_begin(0).unwrap().expect("a wait")().unwrap();
    cluster.broker_down(1).unwrap();
    sink.write(1, "{\"lost\": 1}", None).unwrap();
    let started = Instant::now();
    let err = sink.prepare_begin(1).unwrap().expect("a wait")().unwrap_err().to_string();
    assert!(started.elapsed() < Duration::from_secs(15), "bounded by message.timeout.ms: {:?}", started.elapsed());
    assert!(err.contains("not delivered") && err.contains("topic down2"), "{err}");
}

#[test]
fn unreported_messages_are_counted_per_epoch_and_up_to_one() {
    let c = super::context::SinkContext::default();
    for epoch in [0, 0, 1, 3] {
        c.sending(epoch);
    }
    c.reported(0);
    // A report for an epoch with nothing counted changes nothing (no underflow).
    c.reported(2);
    assert_eq!([0, 1, 2, 3].map(|e| c.unreported_up_to(e)), [1, 2, 2, 3]);
    c.reported(0);
    c.reported(3);
    assert_eq!([0, 1, 3].map(|e| c.unreported_up_to(e)), [0, 1, 1]);
}

/// Produces `per_partition` messages `{"p": P, "i": I}` to each of `partitions` partitions.
fn produce_numbered(boot: &str, topic: &str, partitions: i32, per_partition: i64) {
    let producer: BaseProducer = ClientConfig::new().set("bootstrap.servers", boot).create().unwrap();
    for p in 0..partitions {
        for i in 0..per_partition {
            producer
                .send(BaseRecord::<str, str>::to(topic).partition(p).payload(&format!("{{\"p\": {p}, \"i\": {i}}}")))
                .unwrap();
        }
    }
    producer.flush(Duration::from_secs(10)).unwrap();
}

fn kafka_at(items: &[SourceItem]) -> Vec<(i32, i64)> {
    let mut v: Vec<(i32, i64)> = items
        .iter()
        .map(|i| match &i.position {
            Position::Kafka { partition, offset, .. } => (*partition, *offset),
            other => panic!("{other:?}"),
        })
        .collect();
    v.sort();
    v
}

#[test]
fn offset_names_the_next_message_of_every_partition_read() {
    let cluster = MockCluster::new(1).unwrap();
    let boot = cluster.bootstrap_servers();
    cluster.create_topic("off", 2, 1).unwrap();
    produce_numbered(&boot, "off", 2, 5);
    let mut source = KafkaSource::new(source_config(&boot, "off"), Box::new(NoObserver), &|| false).unwrap();
    assert_eq!(source.offset(), None, "nothing read yet");
    let items = read_n(&mut source, 10);
    assert_eq!(items.len(), 10);
    let expected = SourceOffset::Kafka(vec![
        KafkaPartitionOffset { topic: "off".into(), partition: 0, next: 5 },
        KafkaPartitionOffset { topic: "off".into(), partition: 1, next: 5 },
    ]);
    assert_eq!(source.offset(), Some(expected));
}

#[test]
fn seek_resumes_each_partition_after_its_offset_and_others_from_the_start() {
    let cluster = MockCluster::new(1).unwrap();
    let boot = cluster.bootstrap_servers();
    cluster.create_topic("resume", 3, 1).unwrap();
    produce_numbered(&boot, "resume", 3, 8);
    // A checkpoint that read 3 messages of partition 0 and all 8 of partition 1; none of 2.
    let checkpoint = SourceOffset::Kafka(vec![
        KafkaPartitionOffset { topic: "resume".into(), partition: 0, next: 3 },
        KafkaPartitionOffset { topic: "resume".into(), partition: 1, next: 8 },
    ]);
    let mut source = KafkaSource::new(source_config(&boot, "resume"), Box::new(NoObserver), &|| false).unwrap();
    source.seek(&checkpoint).unwrap();
    assert_eq!(source.offset(), Some(checkpoint.clone()), "the resumed offsets before any read");
    let expected: Vec<(i32, i64)> = (3..8).map(|o| (0, o)).chain((0..8).map(|o| (2, o))).collect();
    let items = read_n(&mut source, expected.len());
    // A little longer: nothing else may come (e.g. partition 1 again).
    let mut more = Vec::new();
    source.poll(&mut more, 100, Duration::from_millis(500)).unwrap();
    assert!(more.is_empty(), "{:?}", kafka_at(&more));
    assert_eq!(kafka_at(&items), expected);
    let after = SourceOffset::Kafka(
        (0..3).map(|p| KafkaPartitionOffset { topic: "resume".into(), partition: p, next: 8 }).collect(),
    );
    assert_eq!(source.offset(), Some(after));
}

#[test]
fn seek_refuses_an_offset_of_another_kind_of_source() {
    let cluster = MockCluster::new(1).unwrap();
    let boot = cluster.bootstrap_servers();
    cluster.create_topic("kind", 1, 1).unwrap();
    let mut source = KafkaSource::new(source_config(&boot, "kind"), Box::new(NoObserver), &|| false).unwrap();
    let offset = SourceOffset::Files { done: vec!["a.json".into()], reading: Some(("b.json".into(), 3)) };
    let err = source.seek(&offset).unwrap_err().to_string();
    assert!(err.contains("files source offset (1 files read, b.json:3)") && err.contains("source is kafka"), "{err}");
}

/// Every message of `topic` read by a fresh consumer with `isolation`: (epoch header, value).
fn read_all(boot: &str, topic: &str, isolation: &str, wait: Duration) -> Vec<(String, String)> {
    use rdkafka::message::Headers;
    let consumer: BaseConsumer = ClientConfig::new()
        .set("bootstrap.servers", boot)
        .set("group.id", format!("reader-{isolation}-{}", monotonic()))
        .set("auto.offset.reset", "earliest")
        .set("isolation.level", isolation)
        .create()
        .unwrap();
    // Assigned, not subscribed: no group join to wait for (the topics here have one partition).
    let mut tpl = rdkafka::TopicPartitionList::new();
    tpl.add_partition_offset(topic, 0, rdkafka::Offset::Beginning).unwrap();
    consumer.assign(&tpl).unwrap();
    let mut got = Vec::new();
    let until = Instant::now() + wait;
    while Instant::now() < until {
        if let Some(Ok(m)) = consumer.poll(Duration::from_millis(50)) {
            let epoch = m
                .headers()
                .and_then(|h| h.iter().find(|h| h.key == EPOCH_HEADER).and_then(|h| h.value))
                .map(|v| String::from_utf8_lossy(v).to_string())
                .unwrap_or_default();
            got.push((epoch, String::from_utf8(m.payload().unwrap_or_default().to_vec()).unwrap()));
        }
    }
    got.sort();
    got
}

fn monotonic() -> u64 {
    crate::monotonic_ns()
}

fn row(i: u32) -> String {
    format!("{{\"n\": {i}}}")
}

#[test]
fn at_least_once_rows_are_in_the_topic_with_their_epoch_once_prepared() {
    let cluster = MockCluster::new(1).unwrap();
    let boot = cluster.bootstrap_servers();
    cluster.create_topic("alo", 1, 1).unwrap();
    let mut sink = KafkaSink::new("sink", sink_config(&boot, "alo"), &|| false).unwrap();
    sink.write(4, &row(1), None).unwrap();
    sink.write(5, &row(2), None).unwrap();
    sink.write(4, &row(3), None).unwrap();
    sink.prepare(4).unwrap();
    // Prepared, not committed: a checkpoint may now cover epoch 4, so its rows must be there.
    let got = read_all(&boot, "alo", "read_uncommitted", Duration::from_secs(2));
    let expected: Vec<(String, String)> = vec![("4".into(), row(1)), ("4".into(), row(3)), ("5".into(), row(2))];
    assert_eq!(got, expected);
}

// librdkafka's mock cluster runs the transaction protocol (InitProducerId with fencing,
// AddPartitionsToTxn, EndTxn) but does not filter what a `read_committed` consumer fetches (it
// hands out open and aborted transactions' messages alike: checked here, it served the rows of an
// open transaction to such a reader). So these tests check what the sink sends, and when, and that
// a restart fences the crashed run's transaction; that a `read_committed` reader then skips the
// aborted rows is the broker's part, which neither the mock nor the test broker (no EndTxn) has.

#[test]
fn exactly_once_rows_of_a_later_epoch_are_sent_only_after_the_earlier_commit() {
    let cluster = MockCluster::new(3).unwrap();
    let boot = cluster.bootstrap_servers();
    cluster.create_topic("later", 1, 3).unwrap();
    let mut cfg = sink_config(&boot, "later");
    cfg.transactional_id = Some("eddy-test-later".into());
    let mut sink = KafkaSink::new("sink", cfg, &|| false).unwrap();
    sink.recover(None).unwrap();
    sink.write(0, &row(1), None).unwrap();
    sink.write(1, &row(2), None).unwrap(); // a partition actor already past the barrier
    sink.write(0, &row(3), None).unwrap();
    sink.prepare(0).unwrap();
    let got = read_all(&boot, "later", "read_uncommitted", Duration::from_secs(2));
    assert_eq!(got, vec![("0".into(), row(1)), ("0".into(), row(3))], "epoch 1 waits in memory");
    sink.commit(0).unwrap();
    sink.prepare(1).unwrap();
    let got = read_all(&boot, "later", "read_uncommitted", Duration::from_secs(2));
    assert_eq!(got, vec![("0".into(), row(1)), ("0".into(), row(3)), ("1".into(), row(2))]);
    sink.commit(1).unwrap();
}

#[test]
fn exactly_once_restart_reopens_the_transactional_id_and_runs_the_epoch_again() {
    let cluster = MockCluster::new(3).unwrap();
    let boot = cluster.bootstrap_servers();
    cluster.create_topic("fenced", 1, 3).unwrap();
    let config = || {
        let mut cfg = sink_config(&boot, "fenced");
        cfg.transactional_id = Some("eddy-test-fenced".into());
        cfg
    };
    let mut first = KafkaSink::new("sink", config(), &|| false).unwrap();
    first.recover(None).unwrap();
    first.write(0, &row(1), None).unwrap();
    first.prepare(0).unwrap();
    first.commit(0).unwrap();
    // Epoch 1 prepared (flushed into its open transaction); then the run stops answering (a
    // crash, as far as the broker knows).
    first.write(1, &row(2), None).unwrap();
    first.prepare(1).unwrap();
    // The restart restores the checkpoint of epoch 0 and runs epoch 1 again.
    let mut second = KafkaSink::new("sink", config(), &|| false).unwrap();
    second.recover(Some(0)).unwrap();
    second.write(1, &row(2), None).unwrap();
    second.prepare(1).unwrap();
    second.commit(1).unwrap();
    // A real broker has now fenced `first` (its commit fails, its transaction is aborted); the
    // mock does not fence (checked: the old producer's commit still succeeds there), so that
    // part is not asserted. The restarted run's transaction holds epoch 1 alone.
    std::mem::forget(first);
    let got = read_all(&boot, "fenced", "read_uncommitted", Duration::from_secs(2));
    assert_eq!(got, vec![("0".into(), row(1)), ("1".into(), row(2)), ("1".into(), row(2))], "the log holds both tries");
}

/// Reads from `source` until `n` items in all are in `out` (each poll asks for what is missing)
/// or 20 s passed.
fn read_up_to(source: &mut KafkaSource, out: &mut Vec<SourceItem>, n: usize) {
    let started = Instant::now();
    while out.len() < n && started.elapsed() < Duration::from_secs(20) {
        source.poll(out, n - out.len(), Duration::from_millis(100)).unwrap();
    }
}

#[test]
fn partitions_released_and_assigned_again_at_once_are_read_on_exactly_once_in_order() {
    // A release stops the partitions' fetches, which clears their forward to the source's fetch
    // queue (fetch.rs); assigned again at once, the stop may land after the new forward: the
    // source must still read every message once, in order.
    let cluster = MockCluster::new(1).unwrap();
    let boot = cluster.bootstrap_servers();
    cluster.create_topic("again", 2, 1).unwrap();
    produce_numbered(&boot, "again", 2, 500);
    let mut group = KafkaGroup::join(source_config(&boot, "again"), &NoObserver, &|| false).unwrap();
    let mut assigned = Vec::new();
    let started = Instant::now();
    while assigned.len() < 2 && started.elapsed() < Duration::from_secs(30) {
        for change in group.wait_for_changes(Duration::from_millis(500), &|| false).unwrap() {
            if let GroupChange::Assigned(parts) = change {
                assigned.extend(parts);
            }
        }
    }
    assert_eq!(assigned.len(), 2, "{assigned:?}");
    group.assign(&assigned, &BTreeMap::new()).unwrap();
    let mut items = Vec::new();
    let mut source = group.source(Box::new(NoObserver));
    for round in 1..=3 {
        read_up_to(&mut source, &mut items, 250 * round);
        let next = source.positions();
        group.release(&assigned).unwrap();
        group.assign(&assigned, &next).unwrap();
        source = group.source(Box::new(NoObserver));
    }
    read_up_to(&mut source, &mut items, 1000);
    let mut last = BTreeMap::new();
    // in arrival order
    let at = items.iter().map(|i| match &i.position {
        Position::Kafka { partition, offset, .. } => (*partition, *offset),
        other => panic!("{other:?}"),
    });
    for (partition, offset) in at {
        let expected = last.get(&partition).map_or(0, |o| o + 1);
        assert_eq!(offset, expected, "partition {partition}: offsets in order, none skipped or repeated");
        last.insert(partition, offset);
    }
    assert_eq!(items.len(), 1000);
    assert_eq!(last, BTreeMap::from([(0, 499), (1, 499)]));
    group.leave();
}

#[test]
fn a_member_leaving_with_a_rebalance_queued_and_not_served_leaves_and_closes_promptly() {
    // A consumer closing with a rebalance event still queued answered it after librdkafka's group
    // sub-system had terminated, and that `unassign` waited forever (librdkafka issue 4884; one
    // process of tests/kafka_group.rs did not exit). Leaving serves the queue before the close.
    let cluster = MockCluster::new(1).unwrap();
    let boot = cluster.bootstrap_servers();
    cluster.create_topic("leave", 4, 1).unwrap();
    let mut config = source_config(&boot, "leave");
    for (k, v) in [
        ("partition.assignment.strategy", "roundrobin"),
        ("heartbeat.interval.ms", "100"),
        ("session.timeout.ms", "6000"),
    ] {
        config.properties.insert(k.into(), v.into());
    }
    let mut members = [
        KafkaGroup::join(config.clone(), &NoObserver, &|| false).unwrap(),
        KafkaGroup::join(config, &NoObserver, &|| false).unwrap(),
    ];
    // Both serve the group, applying each change at once, until each holds partitions.
    let started = Instant::now();
    let mut out = Vec::new();
    while members.iter().any(|m| m.assigned().is_empty()) {
        assert!(started.elapsed() < Duration::from_secs(30), "{members:?}");
        for m in members.iter_mut() {
            let changes = match m.assigned().is_empty() {
                true => m.wait_for_changes(Duration::from_millis(100), &|| false).unwrap(),
                false => {
                    // as a run's source: its polls serve the events (rebalances are deferred)
                    m.source(Box::new(NoObserver)).poll(&mut out, 10, Duration::from_millis(100)).unwrap();
                    m.take_changes()
                }
            };
            for change in changes {
                match change {
                    GroupChange::Assigned(p) => m.assign(&p, &BTreeMap::new()).unwrap(),
                    GroupChange::Revoked { partitions, .. } => m.release(&partitions).unwrap(),
                }
            }
        }
    }
    let [first, second] = members;
    // The first leaves; the second's next heartbeat queues a revocation nobody serves.
    first.leave();
    std::thread::sleep(Duration::from_millis(500));
    let left = Instant::now();
    second.leave();
    assert!(left.elapsed() < Duration::from_secs(20), "leaving took {:?}", left.elapsed());
}
