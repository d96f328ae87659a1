//! [`KafkaSource`]: a consumer polled on the source actor's thread.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use rdkafka::Message;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::topic_partition_list::{Offset, TopicPartitionList};

use eddy_engine::spec::StartingOffsets;

use super::context::{SourceContext, is_transport};
use super::{KafkaObserver, RESUME_KEY, SOURCE_DEFAULTS, UNREACHABLE_TIMEOUT_KEY, client_config, wait_for_topics};
use crate::{ConnectorError, KafkaPartitionOffset, Payload, Poll, Position, Source, SourceItem, SourceOffset};

/// How often the source logs while the broker stays unreachable.
const DOWN_LOG_EVERY: Duration = Duration::from_secs(5);

/// The `[source]` fields of a `kafka` source (PIPELINE.md).
#[derive(Debug, Clone)]
pub struct KafkaSourceConfig {
    /// `bootstrap_servers`: `host:port[,host:port...]`.
    pub bootstrap_servers: String,
    /// `topic` / `topics`: at least one.
    pub topics: Vec<String>,
    /// `group_id`.
    pub group_id: String,
    /// `starting_offsets`: where a group without committed offsets starts (`auto.offset.reset`).
    pub starting_offsets: StartingOffsets,
    /// `properties`: librdkafka settings over [`SOURCE_DEFAULTS`], and Eddy's `eddy.` keys.
    pub properties: BTreeMap<String, String>,
}

/// A Kafka source: messages of the subscribed topics, each with its `topic/partition@offset`.
///
/// Ordering: messages of one partition come in offset order; partitions interleave. The next
/// offset of each partition is tracked here ([`KafkaSource::positions`], [`Source::offset`]) for
/// the checkpoint, and a restart resumes there ([`Source::seek`]): the checkpoint is the truth,
/// nothing is committed to the broker. A first start reads through the consumer group
/// (`group_id`); an assigned partition starts at its position when it has one (read before in
/// this run), else as `starting_offsets` says. A resumed run reads every partition by assignment
/// ([`Source::seek`]).
pub struct KafkaSource {
    consumer: Arc<BaseConsumer<SourceContext>>,
    /// Reading a shared group's assignment ([`crate::kafka::KafkaGroup::source`]): the group
    /// subscribed and assigns; [`Source::seek`] only sets positions.
    shared: bool,
    bootstrap_servers: String,
    topics: Vec<String>,
    /// The topics' names, shared by their messages' positions (no string per message).
    topic_names: Vec<Arc<str>>,
    group_id: String,
    /// Whether the consumer reads (subscribed at the first poll, or assigned by a seek).
    reading: bool,
    /// `eddy.resume = "beginning"`: resumed partitions are fetched from their start.
    resume_from_beginning: bool,
    /// Messages skipped as already covered by the position (logged at the end of a poll).
    skipped: u64,
    starting_offsets: StartingOffsets,
    unreachable_timeout: Duration,
    /// Since when the broker is unreachable (None: reachable).
    down_since: Option<Instant>,
    last_down_log: Instant,
    last_error_log: Option<Instant>,
    observer: Box<dyn KafkaObserver>,
}

impl std::fmt::Debug for KafkaSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KafkaSource")
            .field("bootstrap_servers", &self.bootstrap_servers)
            .field("positions", &self.positions())
            .finish_non_exhaustive()
    }
}

/// `eddy.resume`: whether resumed partitions are fetched from their start.
pub(crate) fn resume_from_beginning(properties: &BTreeMap<String, String>) -> Result<bool, ConnectorError> {
    match properties.get(RESUME_KEY).map(|v| v.trim()) {
        None | Some("offset") => Ok(false),
        Some("beginning") => Ok(true),
        Some(other) => Err(ConnectorError::Config(format!(
            "\"{RESUME_KEY}\": {other:?} is not allowed (expected \"offset\" or \"beginning\")"
        ))),
    }
}

/// Creates the consumer of `config` and waits until the broker answers and every topic exists
/// (a warning per attempt, at most `eddy.unreachable.timeout.ms`). `group`: a consumer shared by
/// several Eddy processes ([`crate::kafka::KafkaGroup`]): cooperative-sticky assignment (unless
/// `properties` set `partition.assignment.strategy`), and rebalances deferred to the group's owner.
///
/// # Errors
/// As [`KafkaSource::new`].
pub(crate) fn connect(
    config: &KafkaSourceConfig,
    observer: &dyn KafkaObserver,
    stop: &dyn Fn() -> bool,
    group: bool,
) -> Result<BaseConsumer<SourceContext>, ConnectorError> {
    let (mut client, unreachable_timeout) =
        client_config(&config.bootstrap_servers, SOURCE_DEFAULTS, &config.properties)?;
    resume_from_beginning(&config.properties)?;
    client.set("group.id", &config.group_id);
    if !config.properties.contains_key("auto.offset.reset") {
        let reset = match config.starting_offsets {
            StartingOffsets::Earliest => "earliest",
            StartingOffsets::Latest => "latest",
        };
        client.set("auto.offset.reset", reset);
    }
    if group && !config.properties.contains_key("partition.assignment.strategy") {
        client.set("partition.assignment.strategy", "cooperative-sticky");
    }
    let context = SourceContext::new(group);
    let consumer: BaseConsumer<SourceContext> = client
        .create_with_context(context)
        .map_err(|e| ConnectorError::Config(format!("librdkafka refused the settings: {e}")))?;
    wait_for_topics(consumer.client(), "source", &config.bootstrap_servers, &config.topics, unreachable_timeout, stop)?;
    observer.connected(true);
    tracing::info!(
        bootstrap_servers = %config.bootstrap_servers,
        topics = %config.topics.join(","),
        group_id = %config.group_id,
        shared_group = group,
        "Kafka source connected"
    );
    Ok(consumer)
}

impl KafkaSource {
    /// The shared name of a subscribed topic (a new one for a topic not subscribed, which the
    /// broker does not send).
    fn topic_name(&self, topic: &str) -> Arc<str> {
        match self.topic_names.iter().find(|t| ***t == *topic) {
            Some(t) => Arc::clone(t),
            None => Arc::from(topic),
        }
    }

    /// Connects: waits until the broker answers and every topic exists (a warning per attempt,
    /// at most `eddy.unreachable.timeout.ms`); the first poll subscribes, unless a
    /// [`Source::seek`] assigned the partitions first. `observer` hears about
    /// connectivity and consumer lag; `stop()` returning true ends the wait early.
    ///
    /// # Errors
    /// [`ConnectorError::Config`] for a setting librdkafka refuses (the message names it);
    /// [`ConnectorError::External`] when the broker is not usable within the timeout.
    pub fn new(
        config: KafkaSourceConfig,
        observer: Box<dyn KafkaObserver>,
        stop: &dyn Fn() -> bool,
    ) -> Result<KafkaSource, ConnectorError> {
        let consumer = connect(&config, &*observer, stop, false)?;
        Ok(KafkaSource::over(Arc::new(consumer), config, observer, false))
    }

    /// A source reading what `consumer` is assigned; `shared`: the consumer belongs to a
    /// [`crate::kafka::KafkaGroup`], which subscribed and assigns.
    pub(crate) fn over(
        consumer: Arc<BaseConsumer<SourceContext>>,
        config: KafkaSourceConfig,
        observer: Box<dyn KafkaObserver>,
        shared: bool,
    ) -> KafkaSource {
        // `connect` checked both settings.
        let unreachable_timeout = client_config(&config.bootstrap_servers, SOURCE_DEFAULTS, &config.properties)
            .map(|(_, t)| t)
            .unwrap_or(super::DEFAULT_UNREACHABLE_TIMEOUT);
        let resume_from_beginning = resume_from_beginning(&config.properties).unwrap_or(false);
        KafkaSource {
            consumer,
            shared,
            bootstrap_servers: config.bootstrap_servers,
            topic_names: config.topics.iter().map(|t| Arc::from(t.as_str())).collect(),
            topics: config.topics,
            group_id: config.group_id,
            reading: shared,
            resume_from_beginning,
            skipped: 0,
            starting_offsets: config.starting_offsets,
            unreachable_timeout,
            down_since: None,
            last_down_log: Instant::now(),
            last_error_log: None,
            observer,
        }
    }

    /// The next offset to read of every partition read so far (or resumed by
    /// [`Source::seek`]), by (topic, partition).
    pub fn positions(&self) -> BTreeMap<(String, i32), i64> {
        let positions = self.consumer.context().positions();
        positions.iter().flat_map(|(t, parts)| parts.iter().map(move |(p, n)| ((t.clone(), *p), *n))).collect()
    }

    /// Reads what the callbacks saw: broker state transitions (logged, reported, and failing the
    /// run past the timeout) and, with fresh statistics, the consumer lag.
    fn check(&mut self) -> Result<(), ConnectorError> {
        let (up, last_error, offsets) = {
            let mut s = self.consumer.context().state.lock().unwrap_or_else(|p| p.into_inner());
            if !s.changed {
                (None, None, None)
            } else {
                s.changed = false;
                (s.broker_up, s.last_error.clone(), Some(s.offsets.clone()))
            }
        };
        match (up, self.down_since) {
            (Some(false), None) => {
                self.down_since = Some(Instant::now());
                self.last_down_log = Instant::now();
                self.observer.connected(false);
                tracing::warn!(
                    bootstrap_servers = %self.bootstrap_servers,
                    error = last_error.as_deref().unwrap_or("no broker connection up"),
                    "Kafka broker unreachable; reconnecting (the run fails after {:.1} s, {UNREACHABLE_TIMEOUT_KEY})",
                    self.unreachable_timeout.as_secs_f64()
                );
            }
            (Some(true), Some(since)) => {
                self.down_since = None;
                self.observer.connected(true);
                tracing::info!(
                    bootstrap_servers = %self.bootstrap_servers,
                    down_s = format!("{:.1}", since.elapsed().as_secs_f64()),
                    "Kafka broker reachable again"
                );
            }
            _ => {}
        }
        if let Some(since) = self.down_since {
            let down = since.elapsed();
            if down >= self.unreachable_timeout {
                return Err(ConnectorError::External(format!(
                    "Kafka source: the broker(s) at {} unreachable for {:.1} s ({UNREACHABLE_TIMEOUT_KEY} = {}){}",
                    self.bootstrap_servers,
                    down.as_secs_f64(),
                    self.unreachable_timeout.as_millis(),
                    last_error.map(|e| format!(": {e}")).unwrap_or_default()
                )));
            }
            if self.last_down_log.elapsed() >= DOWN_LOG_EVERY {
                self.last_down_log = Instant::now();
                tracing::warn!(
                    bootstrap_servers = %self.bootstrap_servers,
                    down_s = format!("{:.1}", down.as_secs_f64()),
                    "Kafka broker still unreachable; reconnecting (at most one such line every 5 s)"
                );
            }
        }
        if let Some(offsets) = offsets {
            let positions = self.consumer.context().positions();
            for ((topic, partition), o) in offsets.iter().filter(|(_, o)| o.desired && o.hi >= 0) {
                let next = match positions.get(topic).and_then(|p| p.get(partition)) {
                    Some(&n) => n,
                    None if o.app >= 0 => o.app,
                    None => match self.starting_offsets {
                        StartingOffsets::Earliest => o.lo.max(0),
                        StartingOffsets::Latest => o.hi,
                    },
                };
                self.observer.lag(topic, *partition, (o.hi - next).max(0));
            }
        }
        Ok(())
    }
}

impl Source for KafkaSource {
    /// Appends up to `max` messages, waiting at most `timeout` for the first. A message without
    /// value (a tombstone) is an empty payload. Transport errors are not returned: librdkafka
    /// reconnects, and the source fails only once the broker stayed unreachable past
    /// `eddy.unreachable.timeout.ms`.
    fn poll(&mut self, out: &mut Vec<SourceItem>, max: usize, timeout: Duration) -> Result<Poll, ConnectorError> {
        if !self.reading {
            let topics: Vec<&str> = self.topics.iter().map(String::as_str).collect();
            self.consumer.subscribe(&topics).map_err(|e| {
                ConnectorError::External(format!("Kafka source: cannot subscribe to {}: {e}", self.topics.join(", ")))
            })?;
            self.reading = true;
            tracing::info!(topics = %self.topics.join(","), group_id = %self.group_id, "Kafka source subscribed");
        }
        let start = out.len();
        let deadline = Instant::now() + timeout;
        let mut wait = timeout;
        while out.len() - start < max {
            match self.consumer.poll(wait) {
                None => {
                    if out.len() > start || Instant::now() >= deadline {
                        break;
                    }
                    wait = deadline.saturating_duration_since(Instant::now());
                }
                Some(Ok(m)) => {
                    let (partition, offset) = (m.partition(), m.offset());
                    {
                        // Kept in the context, for the rebalance callback; one uncontended lock.
                        let mut positions = self.consumer.context().positions();
                        match positions.get_mut(m.topic()) {
                            Some(parts) => {
                                // A message before the position is covered already (resumed
                                // from the beginning, or served again by the broker): skipped.
                                if parts.get(&partition).is_some_and(|&next| offset < next) {
                                    self.skipped += 1;
                                    wait = Duration::ZERO;
                                    continue;
                                }
                                parts.insert(partition, offset + 1);
                            }
                            None => {
                                positions.insert(m.topic().to_string(), [(partition, offset + 1)].into());
                            }
                        }
                    }
                    out.push(SourceItem {
                        payload: Payload::Raw(m.payload().map(<[u8]>::to_vec).unwrap_or_default()),
                        position: Position::Kafka { topic: self.topic_name(m.topic()), partition, offset },
                        created_ns: 0,
                    });
                    wait = Duration::ZERO;
                }
                Some(Err(e)) if is_transport(&e) => {
                    tracing::debug!(error = %e, "Kafka consumer transport error (librdkafka reconnects)");
                    if out.len() > start || Instant::now() >= deadline {
                        break;
                    }
                    wait = deadline.saturating_duration_since(Instant::now());
                }
                Some(Err(e)) if e.rdkafka_error_code() == Some(rdkafka::types::RDKafkaErrorCode::Fatal) => {
                    return Err(ConnectorError::External(format!("Kafka source: fatal consumer error: {e}")));
                }
                Some(Err(e)) => {
                    // Consumer errors are informational in librdkafka (it retries) unless fatal.
                    if self.last_error_log.is_none_or(|t| t.elapsed() >= Duration::from_secs(1)) {
                        self.last_error_log = Some(Instant::now());
                        tracing::warn!(error = %e, "Kafka consumer error (at most one such line a second)");
                    }
                    if out.len() > start || Instant::now() >= deadline {
                        break;
                    }
                    wait = deadline.saturating_duration_since(Instant::now());
                }
            }
        }
        if self.skipped > 0 {
            tracing::debug!(skipped = self.skipped, "Kafka source: messages before the position skipped");
            self.skipped = 0;
        }
        self.check()?;
        Ok(if out.len() > start { Poll::Data } else { Poll::Idle })
    }

    /// The next offset of every partition read so far or resumed (sorted by topic, partition):
    /// what a checkpoint taken now must record. `None` before the first message and seek.
    fn offset(&self) -> Option<SourceOffset> {
        let mut parts: Vec<KafkaPartitionOffset> = self
            .positions()
            .into_iter()
            .map(|((topic, partition), next)| KafkaPartitionOffset { topic, partition, next })
            .collect();
        parts.sort();
        (!parts.is_empty()).then_some(SourceOffset::Kafka(parts))
    }

    /// Resumes every partition of `offset` at its next offset, and every other partition of the
    /// topics as `starting_offsets` says. The source then reads every partition of its topics by
    /// assignment, outside the consumer group: the checkpoint, not the group, says where each
    /// partition stands, and a run killed without leaving the group would otherwise wait for
    /// the broker to expire its membership (`session.timeout.ms`) before reading anything.
    ///
    /// # Errors
    /// [`ConnectorError::Config`] for an offset that is not Kafka's (the checkpoint was taken
    /// with another kind of source); [`ConnectorError::External`] when an assigned partition
    /// cannot be moved.
    fn seek(&mut self, offset: &SourceOffset) -> Result<(), ConnectorError> {
        let SourceOffset::Kafka(parts) = offset else {
            return Err(ConnectorError::Config(format!(
                "the checkpoint holds a {} source offset ({offset}), but the source is kafka: \
                 a checkpoint cannot move to another kind of source (use a new checkpoint.path)",
                offset.kind()
            )));
        };
        {
            let mut positions = self.consumer.context().positions();
            for p in parts {
                positions.entry(p.topic.clone()).or_default().insert(p.partition, p.next);
            }
        }
        if self.shared {
            // The group assigned the partitions at these offsets already.
            return Ok(());
        }
        // Every partition of the topics, by assignment rather than through the group: a run
        // killed without leaving its group would otherwise wait until the broker expires its
        // membership (`session.timeout.ms`, 45 s by default) before the group assigns anything.
        let metadata = self.consumer.fetch_metadata(None, Duration::from_secs(10)).map_err(|e| {
            ConnectorError::External(format!("Kafka source: cannot list the partitions to resume: {e}"))
        })?;
        let start = match self.starting_offsets {
            StartingOffsets::Earliest => Offset::Beginning,
            StartingOffsets::Latest => Offset::End,
        };
        let mut assignment = TopicPartitionList::new();
        let mut resumed = Vec::new();
        {
            let positions = self.consumer.context().positions();
            for t in metadata.topics().iter().filter(|t| self.topics.iter().any(|n| n == t.name())) {
                for p in t.partitions() {
                    let at = match positions.get(t.name()).and_then(|m| m.get(&p.id())) {
                        Some(&next) => {
                            resumed.push(format!("{}/{}@{next}", t.name(), p.id()));
                            if self.resume_from_beginning { Offset::Beginning } else { Offset::Offset(next) }
                        }
                        None => start,
                    };
                    assignment.add_partition_offset(t.name(), p.id(), at).map_err(|e| {
                        ConnectorError::External(format!("Kafka source: partition {}/{}: {e}", t.name(), p.id()))
                    })?;
                }
            }
        }
        self.reading = true;
        self.consumer.assign(&assignment).map_err(|e| {
            ConnectorError::External(format!("Kafka source: cannot assign the partitions to resume: {e}"))
        })?;
        tracing::info!(
            resumed = %resumed.join(","),
            partitions = assignment.count(),
            "Kafka source resumes from the checkpoint (partitions assigned; the others from starting_offsets)"
        );
        Ok(())
    }

    /// Pauses (`full`) or resumes fetching of every assigned partition; the position of each is
    /// kept, so nothing is skipped or read twice.
    ///
    /// With `eddy.resume = "beginning"` (a broker that serves a fetch only from the start of a
    /// record batch) nothing is paused: a resumed partition is fetched again from the next offset
    /// to read, usually inside a batch, which tansu 0.6.0 answers with the next batch (the rest
    /// of this one is lost) or, inside the last batch, with nothing (the source stalls; measured:
    /// a fetch from 36,918 of 40,000 messages in batches of 9,219 returned none). The source then
    /// blocks on its full queue while librdkafka's prefetch stays bounded by
    /// `queued.max.messages.kbytes`.
    fn backpressure(&self, full: bool) {
        if self.resume_from_beginning {
            return;
        }
        let Ok(assignment) = self.consumer.assignment() else { return };
        let result = if full { self.consumer.pause(&assignment) } else { self.consumer.resume(&assignment) };
        match result {
            Ok(()) => tracing::debug!(paused = full, "Kafka source back-pressure"),
            Err(e) => tracing::warn!(error = %e, paused = full, "Kafka source: pause / resume failed"),
        }
    }
}
