//! [`KafkaSink`]: output rows as messages, flushed (or committed as a transaction) per batch /
//! epoch.
//!
//! ## Across restarts (the two-phase commit of `eddy-actors`' sink actor)
//!
//! The runtime prepares a batch / epoch ([`Sink::prepare`]), writes the checkpoint that covers it,
//! then commits it ([`Sink::commit`]); on restart it calls [`Sink::recover`] with the restored
//! checkpoint's epoch before anything is written.
//!
//! - At least once (default): rows are sent as they are written; `prepare` waits until the broker
//!   acknowledged every row sent so far, so a checkpoint is written only once its epoch's rows are
//!   in the topic. After a crash, the epochs after the restored checkpoint run again: their rows
//!   may then be in the topic twice (duplicates only from the epochs in flight at the crash, each
//!   a repeat of a row of the same epoch, which every message names in its [`EPOCH_HEADER`]).
//! - Exactly once (`exactly_once = true`): each epoch with rows is one transaction, begun at its
//!   first row and committed by `commit`, after its checkpoint; rows of later epochs wait in
//!   memory until then. A restart creates the producer with the same `transactional.id`, whose
//!   `init_transactions` fences the previous incarnation and aborts its open transaction, so a
//!   `read_committed` reader never sees rows of an epoch that runs again. One window remains: a
//!   crash after the checkpoint is durable and before the broker committed the transaction loses
//!   that epoch's rows for `read_committed` readers (librdkafka cannot resume another producer's
//!   transaction, which a roll-forward in [`Sink::recover`] would need; Flink's Kafka sink does
//!   it through the Java client's internals).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use rdkafka::error::KafkaError;
use rdkafka::message::{Header, OwnedHeaders};
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

/// The header every message carries: the batch / epoch id that wrote it, in decimal. A reader of
/// an at-least-once topic can drop the repeats of a restarted epoch with it (a row repeated
/// after a crash is a repeat of a row of the same epoch).
pub const EPOCH_HEADER: &str = "eddy.epoch";

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
    /// Shared with the waits of [`Sink::prepare_begin`], which serve delivery reports on the
    /// sink actor's thread while the partition actors send.
    producer: Arc<BaseProducer<SinkContext>>,
    topic: String,
    flush_timeout: Duration,
    transactional: bool,
    in_transaction: bool,
    /// Exactly once: the lowest epoch not committed yet, the one the open transaction holds.
    next_epoch: u64,
    /// Exactly once: rows of later epochs (row, key), waiting for the open transaction's commit.
    waiting: BTreeMap<u64, Vec<(String, Option<String>)>>,
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
            producer: Arc::new(producer),
            topic: config.topic,
            flush_timeout,
            transactional: config.transactional_id.is_some(),
            in_transaction: false,
            next_epoch: 0,
            waiting: BTreeMap::new(),
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
        acknowledged(&self.producer, &self.topic, self.flush_timeout, |p| p.in_flight_count() as u64)
    }

    fn check(&self) -> Result<(), ConnectorError> {
        failure(&self.producer, &self.topic)
    }

    /// Rows of epochs `<= epoch` sent and not yet acknowledged or failed.
    #[cfg(test)]
    pub(crate) fn unreported_up_to(&self, epoch: u64) -> u64 {
        self.producer.context().unreported_up_to(epoch)
    }

    /// Sends one row of `epoch` (begins the transaction first when one is due).
    fn send(&mut self, epoch: u64, line: &str, key: Option<&str>) -> Result<(), ConnectorError> {
        if self.transactional && !self.in_transaction {
            self.producer.begin_transaction().map_err(|e| {
                ConnectorError::External(format!("Kafka sink (topic {}): begin transaction: {e}", self.topic))
            })?;
            self.in_transaction = true;
        }
        let epoch_text = epoch.to_string();
        let headers = OwnedHeaders::new().insert(Header { key: EPOCH_HEADER, value: Some(epoch_text.as_str()) });
        let mut record: BaseRecord<'_, str, str, usize> =
            BaseRecord::with_opaque_to(&self.topic, epoch as usize).payload(line).headers(headers);
        if let Some(k) = key {
            record = record.key(k);
        }
        // Counted before the send: its delivery report may be served on another thread at once.
        let context = self.producer.context();
        context.sending(epoch);
        loop {
            match self.producer.send(record) {
                Ok(()) => break,
                Err((KafkaError::MessageProduction(RDKafkaErrorCode::QueueFull), r)) => {
                    self.producer.poll(Duration::from_millis(5));
                    if let Err(e) = self.check() {
                        context.reported(epoch);
                        return Err(e);
                    }
                    record = r;
                }
                Err((e, _)) => {
                    context.reported(epoch);
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
}

/// Serves delivery reports until `unreported(producer)` is 0 (looking every [`FLUSH_SPIN`]), or
/// fails after `timeout` naming how many rows of `topic` are left.
fn acknowledged(
    producer: &BaseProducer<SinkContext>,
    topic: &str,
    timeout: Duration,
    unreported: impl Fn(&BaseProducer<SinkContext>) -> u64,
) -> Result<(), ConnectorError> {
    let deadline = Instant::now() + timeout;
    loop {
        for _ in 0..SERVE_MAX {
            producer.poll(Duration::ZERO);
        }
        let left = unreported(producer);
        if left == 0 {
            return Ok(());
        }
        if Instant::now() >= deadline {
            return Err(ConnectorError::External(format!(
                "Kafka sink (topic {topic}): {left} rows not acknowledged within {:.1} s",
                timeout.as_secs_f64()
            )));
        }
        std::thread::sleep(FLUSH_SPIN);
    }
}

/// The first delivery failure or fatal error librdkafka reported, as the sink's error.
fn failure(producer: &BaseProducer<SinkContext>, topic: &str) -> Result<(), ConnectorError> {
    match producer.context().take_failure() {
        Some(f) => Err(ConnectorError::External(format!("Kafka sink (topic {topic}): {f}"))),
        None => Ok(()),
    }
}

impl Sink for KafkaSink {
    /// Sends one row (`key`: the message key, JSON) with its [`EPOCH_HEADER`]. Waits for room
    /// when librdkafka's queue is full (back-pressure on the pipeline). Exactly once: a row of an
    /// epoch after the open transaction's waits in memory until that transaction is committed.
    fn write(&mut self, batch_id: u64, line: &str, key: Option<&str>) -> Result<(), ConnectorError> {
        if self.transactional && batch_id > self.next_epoch {
            self.waiting.entry(batch_id).or_default().push((line.to_string(), key.map(str::to_string)));
            return Ok(());
        }
        self.send(batch_id, line, key)
    }

    /// Waits until the broker acknowledged every row sent so far (in the open transaction, with
    /// exactly once): the checkpoint written next never covers a row that is not in the topic.
    fn prepare(&mut self, _batch_id: u64) -> Result<(), ConnectorError> {
        self.flush()?;
        self.check()
    }

    /// At least once: returns the wait for the broker's acknowledgement of every row of
    /// `batch_id` and the epochs before it, run by the caller without this sink, so rows of
    /// later epochs are sent meanwhile (with [`Sink::prepare`], every writer would queue behind
    /// the acknowledgements: tens of ms once per epoch). Exactly once: [`Sink::prepare`].
    fn prepare_begin(&mut self, batch_id: u64) -> Result<Option<crate::PrepareWait>, ConnectorError> {
        if self.transactional {
            return self.prepare(batch_id).map(|()| None);
        }
        self.check()?;
        let (producer, topic, timeout) = (self.producer.clone(), self.topic.clone(), self.flush_timeout);
        Ok(Some(Box::new(move || {
            acknowledged(&producer, &topic, timeout, |p| p.context().unreported_up_to(batch_id))?;
            failure(&producer, &topic)
        })))
    }

    /// At least once: nothing left to do (the rows were acknowledged by [`Sink::prepare`]).
    /// Exactly once: commits the open transaction (the rows of epochs up to `batch_id` become
    /// visible to `read_committed` readers), then opens the next epoch's with its waiting rows.
    fn commit(&mut self, batch_id: u64) -> Result<(), ConnectorError> {
        if self.transactional {
            if self.in_transaction {
                self.in_transaction = false;
                if let Err(e) = self.producer.commit_transaction(self.flush_timeout) {
                    // The transaction's rows stay invisible to read_committed readers.
                    let aborted = self.producer.abort_transaction(self.flush_timeout);
                    return Err(ConnectorError::External(format!(
                        "Kafka sink (topic {}): commit transaction of epoch {batch_id}: {e} (abort: {})",
                        self.topic,
                        aborted.map(|()| "done".to_string()).unwrap_or_else(|a| a.to_string())
                    )));
                }
            }
            self.next_epoch = self.next_epoch.max(batch_id + 1);
            let due: Vec<u64> = self.waiting.range(..=self.next_epoch).map(|(&e, _)| e).collect();
            for epoch in due {
                for (line, key) in self.waiting.remove(&epoch).unwrap_or_default() {
                    self.send(epoch, &line, key.as_deref())?;
                }
            }
        }
        self.check()
    }

    /// Exactly once: the next transaction holds the epoch after `committed` (the previous
    /// incarnation's open transaction was aborted when this producer initialised transactions).
    /// At least once: nothing to do (rows of the epochs after `committed` may already be in the
    /// topic: they are the duplicates at-least-once allows). Returns 0: nothing is rolled
    /// forward or removed here.
    fn recover(&mut self, committed: Option<u64>) -> Result<usize, ConnectorError> {
        self.next_epoch = committed.map_or(0, |c| c + 1);
        Ok(0)
    }
}
