//! The `kafka` source and sink of PIPELINE.md, on `rdkafka` (librdkafka, bundled and built from
//! source).
//!
//! - [`KafkaSource`]: a `BaseConsumer` polled on the source actor's own thread (no async hop),
//!   subscribed to `topic` / `topics` with `group_id`. Auto-commit and the offset store are off:
//!   the source tracks the next offset of every partition itself ([`KafkaSource::positions`]),
//!   for the checkpoint to persist (PIPELINE.md: "offsets are stored in the checkpoint, not
//!   auto-committed"). Messages are read in batches from a queue of their own, apart from the
//!   consumer's events (`fetch.rs`: each partition's fetch queue forwarded there before it is
//!   assigned), and handed over undecoded ([`crate::Payload::Raw`]); a tombstone
//!   (no value) is an empty payload, which the decoder refuses, so it becomes a dead letter with
//!   its `topic/partition@offset`.
//! - [`KafkaSink`]: a `BaseProducer`, idempotent, one JSON row per message, the message key from
//!   the `key` columns, the batch / epoch id in the [`EPOCH_HEADER`] header;
//!   [`crate::Sink::prepare`] flushes (every row of the batch / epoch acknowledged by the broker
//!   before its checkpoint is written) and surfaces any delivery failure as an error (the run
//!   exits 1). With `exactly_once`, each batch / epoch is one Kafka transaction, committed by
//!   [`crate::Sink::commit`] after its checkpoint. What a restart repeats: `sink.rs`' docs.
//! - [`KafkaSource`] keeps the next offset of every partition ([`crate::Source::offset`]) for the
//!   checkpoint and resumes there on restart ([`crate::Source::seek`]).
//!
//! ## Defaults, tuned for latency
//!
//! [`SOURCE_DEFAULTS`] and [`SINK_DEFAULTS`] are set before the pipeline's `properties`, which
//! override them. The two that matter for latency were chosen with the `kafka` benchmark suite
//! (`bench/src/kafka.rs`; numbers in the README, "Kafka"), on the test broker:
//!
//! - the consumer's `fetch.wait.max.ms` (how long the broker may hold a fetch that finds no data;
//!   librdkafka's default 500 ms): the test broker holds an empty fetch for that whole time even
//!   when data arrives meanwhile, so the median latency grows with it (p50 at 1,000 records/s
//!   with `linger.ms` 5: 7 ms with 1 ms, 12 ms with 5 ms; with 100 ms: 136-146 ms, 500 ms:
//!   372-389 ms). 1 ms here; the price is up to 1,000 empty
//!   fetch requests a second per broker while a topic is idle (a real Kafka broker answers a
//!   fetch as soon as data arrives, where this setting costs no latency).
//! - the producer's `linger.ms` (librdkafka's default 5 ms): 0 sends each message in its own
//!   request, and measured worse: p99 80-1,400 ms with 0-2 ms against 12-20 ms with 5 ms at
//!   1,000 records/s, in two to four runs of each setting (fewer, larger requests queue less in
//!   the broker and on a busy 2-core machine). 5 ms here.
//!
//! ## Eddy's own settings
//!
//! Keys of `properties` that start with `eddy.` are Eddy's, not librdkafka's (as Spark's Kafka
//! source separates `kafka.`-prefixed client settings from its own options):
//!
//! - [`RESUME_KEY`] (`eddy.resume`, source only, default `offset`): `beginning` fetches a resumed
//!   partition from its start and skips what the checkpoint covers, and never pauses fetching
//!   for back-pressure (a broker that cannot fetch from an offset inside a record batch).
//! - [`UNREACHABLE_TIMEOUT_KEY`] (`eddy.unreachable.timeout.ms`, default 60,000): how long the
//!   broker may stay unreachable, at start or while running, before the run fails (exit 1). The
//!   source logs a line per retry at start and one every 5 s while the broker is down.

mod context;
mod fetch;
mod group;
mod sink;
mod source;
#[cfg(test)]
mod tests;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use rdkafka::ClientContext;
use rdkafka::client::Client;
use rdkafka::config::ClientConfig;

use crate::ConnectorError;

pub use group::{GroupChange, KafkaGroup, partition_for_key};
pub use sink::{EPOCH_HEADER, KafkaSink, KafkaSinkConfig};
pub use source::{KafkaSource, KafkaSourceConfig};

/// librdkafka settings of the source before `properties`: latency first (`fetch.wait.max.ms`,
/// no Nagle), offsets tracked by Eddy (no auto-commit, no offset store), statistics every second
/// (consumer lag, broker state), a bounded prefetch queue (16 MiB: memory stays bounded while the
/// engine back-pressures).
pub const SOURCE_DEFAULTS: &[(&str, &str)] = &[
    ("fetch.wait.max.ms", "1"),
    ("fetch.error.backoff.ms", "50"),
    ("socket.nagle.disable", "true"),
    ("enable.auto.commit", "false"),
    ("enable.auto.offset.store", "false"),
    ("statistics.interval.ms", "1000"),
    ("queued.max.messages.kbytes", "16384"),
    ("reconnect.backoff.ms", "50"),
    ("reconnect.backoff.max.ms", "1000"),
];

/// librdkafka settings of the sink before `properties`: `linger.ms` 5 (measured: module docs), no
/// Nagle, idempotent (retries keep order and add no duplicates), acknowledged by all in-sync
/// replicas, and keyed messages partitioned as the Java client does (`murmur2_random`, Kafka's
/// default partitioner, as Spark's and Kafka Streams' producers): a topic re-keyed by Eddy is
/// partitioned as a shared group's partition-aligned state expects ([`partition_for_key`]).
pub const SINK_DEFAULTS: &[(&str, &str)] = &[
    ("linger.ms", "5"),
    ("partitioner", "murmur2_random"),
    ("socket.nagle.disable", "true"),
    ("enable.idempotence", "true"),
    ("acks", "all"),
    ("reconnect.backoff.ms", "50"),
    ("reconnect.backoff.max.ms", "1000"),
];

/// `properties` key: how long the broker may stay unreachable before the run fails, in ms.
pub const UNREACHABLE_TIMEOUT_KEY: &str = "eddy.unreachable.timeout.ms";
/// `properties` key of a source: where a resumed partition is fetched from: `offset` (default: at
/// the checkpoint's offset) or `beginning` (from the partition's start, skipping every message
/// before the checkpoint's offset: for brokers that cannot serve a fetch from an arbitrary
/// offset, as the test broker, tansu 0.6.0 with in-memory storage, which answers such a fetch
/// with messages of other offsets, or none).
pub const RESUME_KEY: &str = "eddy.resume";

/// Default of [`UNREACHABLE_TIMEOUT_KEY`]: 60 s.
pub const DEFAULT_UNREACHABLE_TIMEOUT: Duration = Duration::from_secs(60);

/// Builds a client configuration: `bootstrap.servers`, then `defaults`, then `properties` (which
/// override), without the `eddy.` keys; returns it with the unreachable timeout.
///
/// # Errors
/// [`ConnectorError::Config`] for an unknown `eddy.` key or a timeout that is not a whole number
/// of milliseconds (the message names the key; the caller names the properties table).
fn client_config(
    bootstrap_servers: &str,
    defaults: &[(&str, &str)],
    properties: &BTreeMap<String, String>,
) -> Result<(ClientConfig, Duration), ConnectorError> {
    let mut config = ClientConfig::new();
    config.set("bootstrap.servers", bootstrap_servers);
    for (k, v) in defaults {
        config.set(*k, *v);
    }
    let mut unreachable = DEFAULT_UNREACHABLE_TIMEOUT;
    for (k, v) in properties {
        if k == UNREACHABLE_TIMEOUT_KEY {
            unreachable = v.trim().parse::<u64>().map(Duration::from_millis).map_err(|_| {
                ConnectorError::Config(format!("\"{k}\": {v:?} is not a number of milliseconds (expected e.g. 60000)"))
            })?;
        } else if k == RESUME_KEY {
            // Read by the source (`KafkaSource::new`), which checks its value.
        } else if k.starts_with("eddy.") {
            return Err(ConnectorError::Config(format!(
                "\"{k}\": unknown Eddy setting (expected {UNREACHABLE_TIMEOUT_KEY}, {RESUME_KEY}, or a librdkafka setting)"
            )));
        } else {
            config.set(k, v);
        }
    }
    Ok((config, unreachable))
}

/// Waits until the broker answers a metadata request that lists every topic of `topics`, for at
/// most `timeout`, with a log line per failed attempt (backoff 250 ms doubling to 5 s).
/// `stop()` returning true ends the wait early.
///
/// # Errors
/// [`ConnectorError::External`] when `timeout` passes (the broker does not answer, or a topic
/// does not exist: the broker does not create topics here) or a stop was asked.
fn wait_for_topics<C: ClientContext>(
    client: &Client<C>,
    role: &str,
    bootstrap_servers: &str,
    topics: &[String],
    timeout: Duration,
    stop: &dyn Fn() -> bool,
) -> Result<(), ConnectorError> {
    let started = Instant::now();
    let mut backoff = Duration::from_millis(250);
    let mut attempt = 0u32;
    loop {
        attempt += 1;
        let why = match client.fetch_metadata(None, Duration::from_secs(1).min(timeout.max(Duration::from_millis(100))))
        {
            Ok(md) => {
                let missing: Vec<&str> = topics
                    .iter()
                    .filter(|t| !md.topics().iter().any(|mt| mt.name() == t.as_str() && !mt.partitions().is_empty()))
                    .map(String::as_str)
                    .collect();
                if missing.is_empty() {
                    if attempt > 1 {
                        tracing::info!(
                            role,
                            bootstrap_servers,
                            waited_s = started.elapsed().as_secs_f64(),
                            "Kafka broker reachable, topics found"
                        );
                    }
                    return Ok(());
                }
                format!(
                    "topic(s) {} not found (the broker does not create topics: create them first)",
                    missing.join(", ")
                )
            }
            Err(e) => format!("no answer: {e}"),
        };
        let elapsed = started.elapsed();
        if elapsed >= timeout {
            return Err(ConnectorError::External(format!(
                "Kafka {role}: the broker(s) at {bootstrap_servers} did not become usable within {:.1} s \
                 ({UNREACHABLE_TIMEOUT_KEY} = {}): {why}",
                timeout.as_secs_f64(),
                timeout.as_millis()
            )));
        }
        tracing::warn!(
            role,
            bootstrap_servers,
            attempt,
            elapsed_s = format!("{:.1}", elapsed.as_secs_f64()),
            timeout_s = format!("{:.1}", timeout.as_secs_f64()),
            "Kafka broker not usable yet, retrying: {why}"
        );
        let pause = backoff.min(timeout.saturating_sub(elapsed));
        let until = Instant::now() + pause;
        while Instant::now() < until {
            if stop() {
                return Err(ConnectorError::External(format!(
                    "Kafka {role}: stopped while waiting for the broker(s) at {bootstrap_servers}"
                )));
            }
            std::thread::sleep(Duration::from_millis(20).min(until.saturating_duration_since(Instant::now())));
        }
        backoff = (backoff * 2).min(Duration::from_secs(5));
    }
}

/// What the Kafka source reports to its runtime (readiness, metrics); called on the source's
/// thread, at most about once a second per kind of report.
pub trait KafkaObserver: Send {
    /// The broker became reachable (`true`) or unreachable (`false`).
    fn connected(&self, connected: bool);
    /// Consumer lag of one partition: the partition's high watermark minus the next offset the
    /// source will read, in records (≥ 0).
    fn lag(&self, topic: &str, partition: i32, records: i64);
}

/// An observer that ignores every report.
#[derive(Debug, Default, Clone, Copy)]
pub struct NoObserver;

impl KafkaObserver for NoObserver {
    fn connected(&self, _connected: bool) {}
    fn lag(&self, _topic: &str, _partition: i32, _records: i64) {}
}
