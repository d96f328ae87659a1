//! [`KafkaSink`]: output rows as messages, flushed (or committed as a transaction) per batch /
//! epoch.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use rdkafka::error::KafkaError;
use rdkafka::producer::{BaseProducer, BaseRecord, Producer};
use rdkafka::types::RDKafkaErrorCode;

use super::context::SinkContext;
use super::{SINK_DEFAULTS, client_config, wait_for_topics};
use crate::{ConnectorError, Sink};

/// Rows written between two serves of the delivery callbacks.
const POLL_EVERY: usize = 64;
/// Delivery-report events served per [`KafkaSink::serve`] at most.
const SERVE_MAX: usize = 16;
/// Pause between two looks at the in-flight count while flushing.
const FLUSH_SPIN: Duration = Duration::from_micros(50);

/// The fields of a `kafka` sink (PIPELINE.md `[sink]`, `[late_sink]`, `[dead_letter]`).
#[derive(Debug, Clone)]
pub struct KafkaSinkConfig {
    /// `bootstrap_servers`.
    pub bootstrap_servers: String,
    /// `topic` (must exist).
    pub topic: String,
    /// `properties`: librdkafka settings over [`SINK_DEFAULTS`], and Eddy's `eddy.` keys.
    pub properties: BTreeMap<String, String>,
    /// `exactly_once = true`: the `transactional.id` (one per pipeline and sink); each batch /
    /// epoch is then one transaction, committed by [`Sink::commit`]. `None`: at least once
    /// (idempotent producer, flushed per batch / epoch).
    pub transactional_id: Option<String>,
}

/// A Kafka sink. Rows are sent as they are written (batched by `linger.ms`); [`Sink::commit`] waits until
/// the broker acknowledged every one of them (or commits the transaction), so a committed batch /
/// epoch is in the topic. A message librdkafka could not deliver after its retries (within
/// `message.timeout.ms`, by default `eddy.unreachable.timeout.ms`) fails the next write or commit:
/// never dropped silently.
pub struct KafkaSink {
    producer: BaseProducer<SinkContext>,
    topic: String,
    flush_timeout: Duration,
    transactional: bool,
    in_transaction: bool,
    since_poll: usize,
}

impl std::fmt::Debug for KafkaSink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KafkaSink")
            .field("topic", &self.topic)
            .field("transactional", &self.transactional)
            .finish_non_exhaustive()
    }
}

impl KafkaSink {
    /// Connects: waits until the broker answers and the topic exists (a warning per attempt, at
    /// most `eddy.unreachable.timeout.ms`); with a transactional id, initialises transactions.
    /// `field` names the sink (`sink`, `dead_letter`, ...) in errors.
    ///
    /// # Errors
    /// [`ConnectorError::Config`] for a setting librdkafka refuses; [`ConnectorError::External`]
    /// when the broker is not usable within the timeout or transactions cannot be initialised.
    pub fn new(field: &str, config: KafkaSinkConfig, stop: &dyn Fn() -> bool) -> Result<KafkaSink, ConnectorError> {
        let (mut client, unreachable) = client_config(&config.bootstrap_servers, SINK_DEFAULTS, &config.properties)?;
        if !config.properties.contains_key("message.timeout.ms") {
            client.set("message.timeout.ms", unreachable.as_millis().max(1).to_string());
        }
        if let Some(id) = &config.transactional_id {
            client.set("transactional.id", id);
        }
        let message_timeout = client
            .get("message.timeout.ms")
            .and_then(|v| v.parse::<u64>().ok())
            .map(Duration::from_millis)
            .unwrap_or(unreachable);
        let producer: BaseProducer<SinkContext> = client
            .create_with_context(SinkContext::default())
            .map_err(|e| ConnectorError::Config(format!("librdkafka refused the settings: {e}")))?;
        wait_for_topics(
            producer.client(),
            field,
            &config.bootstrap_servers,
            std::slice::from_ref(&config.topic),
            unreachable,
            stop,
        )?;
        let flush_timeout = message_timeout + Duration::from_secs(5);
        if config.transactional_id.is_some() {
            producer.init_transactions(flush_timeout).map_err(|e| {
                ConnectorError::External(format!("Kafka {field}: cannot initialise transactions (exactly_once): {e}"))
            })?;
        }
        tracing::info!(
            bootstrap_servers = %config.bootstrap_servers,
            topic = %config.topic,
            exactly_once = config.transactional_id.is_some(),
            "Kafka sink ready ({field})"
        );
        Ok(KafkaSink {
            producer,
            topic: config.topic,
            flush_timeout,
            transactional: config.transactional_id.is_some(),
            in_transaction: false,
            since_poll: 0,
        })
    }

    /// Serves waiting delivery reports without blocking. (`BaseProducer::poll(ZERO)` serves one
    /// event a call; a non-zero timeout always waits it out.)
    fn serve(&self) {
        for _ in 0..SERVE_MAX {
            self.producer.poll(Duration::ZERO);
        }
    }

    /// Waits until every message sent is acknowledged or failed. rdkafka's `flush` polls in
    /// steps of 100 ms, a floor on each epoch's commit; this looks every 50 µs instead.
    fn flush(&self) -> Result<(), ConnectorError> {
        let deadline = Instant::now() + self.flush_timeout;
        loop {
            self.serve();
            if self.producer.in_flight_count() == 0 {
                return Ok(());
            }
            if Instant::now() >= deadline {
                return Err(ConnectorError::External(format!(
                    "Kafka sink (topic {}): {} rows not acknowledged within {:.1} s",
                    self.topic,
                    self.producer.in_flight_count(),
                    self.flush_timeout.as_secs_f64()
                )));
            }
            std::thread::sleep(FLUSH_SPIN);
        }
    }

    fn check(&self) -> Result<(), ConnectorError> {
        match self.producer.context().take_failure() {
            Some(f) => Err(ConnectorError::External(format!("Kafka sink (topic {}): {f}", self.topic))),
            None => Ok(()),
        }
    }
}

impl Sink for KafkaSink {
    /// Sends one row (`key`: the message key, JSON). Waits for room when librdkafka's queue is
    /// full (back-pressure on the pipeline).
    fn write(&mut self, _batch_id: u64, line: &str, key: Option<&str>) -> Result<(), ConnectorError> {
        if self.transactional && !self.in_transaction {
            self.producer.begin_transaction().map_err(|e| {
                ConnectorError::External(format!("Kafka sink (topic {}): begin transaction: {e}", self.topic))
            })?;
            self.in_transaction = true;
        }
        let mut record: BaseRecord<'_, str, str> = BaseRecord::to(&self.topic).payload(line);
        if let Some(k) = key {
            record = record.key(k);
        }
        loop {
            match self.producer.send(record) {
                Ok(()) => break,
                Err((KafkaError::MessageProduction(RDKafkaErrorCode::QueueFull), r)) => {
                    self.producer.poll(Duration::from_millis(5));
                    self.check()?;
                    record = r;
                }
                Err((e, _)) => {
                    return Err(ConnectorError::External(format!("Kafka sink (topic {}): send: {e}", self.topic)));
                }
            }
        }
        self.since_poll += 1;
        if self.since_poll >= POLL_EVERY {
            self.since_poll = 0;
            self.serve();
            self.check()?;
        }
        Ok(())
    }

    /// Waits until every row sent is acknowledged (at least once), or commits the transaction
    /// (exactly once).
    fn commit(&mut self, _batch_id: u64) -> Result<(), ConnectorError> {
        if self.transactional {
            if self.in_transaction {
                self.in_transaction = false;
                if let Err(e) = self.producer.commit_transaction(self.flush_timeout) {
                    // The transaction's rows stay invisible to read_committed readers.
                    let aborted = self.producer.abort_transaction(self.flush_timeout);
                    return Err(ConnectorError::External(format!(
                        "Kafka sink (topic {}): commit transaction: {e} (abort: {})",
                        self.topic,
                        aborted.map(|()| "done".to_string()).unwrap_or_else(|a| a.to_string())
                    )));
                }
            }
        } else {
            self.flush()?;
        }
        self.check()
    }
}
