//! [`KafkaSource`]: a consumer polled on the source actor's thread.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use rdkafka::Message;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::error::KafkaError;
use rdkafka::topic_partition_list::{Offset, TopicPartitionList};
use rdkafka::types::{RDKafkaErrorCode, RDKafkaRespErr};

use eddy_engine::spec::StartingOffsets;

use super::context::{SourceContext, is_transport};
use super::fetch::{Fetched, FetchingConsumer, MessageBuf, REFRESH_EVERY};
use super::{KafkaObserver, RESUME_KEY, SOURCE_DEFAULTS, UNREACHABLE_TIMEOUT_KEY, client_config, wait_for_topics};
use crate::spare::SpareLines;
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
    consumer: Arc<FetchingConsumer>,
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
    /// The pointer array of the batches read from the fetch queue.
    buf: MessageBuf,
    /// The partitions of the batch being read, with their next offsets (read from the context's
    /// positions at their first message, written back at the end of the batch).
    slots: Vec<Slot>,
    /// When to forward the partitions' fetch queues again ([`super::fetch::FetchQueue::refresh`]).
    next_refresh: Instant,
    /// Payload buffers the runtime handed back ([`Source::recycle_lines`]): each message's value
    /// is copied into one (no allocation per message while they last).
    spare_lines: SpareLines,
}

/// A partition of the batch being read: its topic (index into `topic_names`) and next offset.
#[derive(Debug, Clone, Copy)]
struct Slot {
    topic: usize,
    partition: i32,
    /// The next offset to read; `None`: no position yet (every message is new).
    next: Option<i64>,
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
) -> Result<FetchingConsumer, ConnectorError> {
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
    Ok(FetchingConsumer::new(consumer))
}

impl KafkaSource {
    /// The index in `topic_names` of `topic` (a topic not subscribed, which the broker does not
    /// send, is added).
    fn topic_index(topic_names: &mut Vec<Arc<str>>, topic: &str) -> usize {
        match topic_names.iter().position(|t| **t == *topic) {
            Some(k) => k,
            None => {
                topic_names.push(Arc::from(topic));
                topic_names.len() - 1
            }
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
        consumer: Arc<FetchingConsumer>,
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
            buf: MessageBuf::default(),
            slots: Vec::new(),
            next_refresh: Instant::now(),
            spare_lines: SpareLines::default(),
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

    /// Serves the consumer queue without waiting, one poll per operation it holds: events go to
    /// the context's callbacks (rebalances, statistics, errors); a message there (of a partition
    /// whose fetch queue is not forwarded, [`super::fetch`]) is taken as
    /// [`KafkaSource::take_batch`] takes one, with a lock of the positions of its own.
    fn serve_consumer_queue(
        &mut self,
        out: &mut Vec<SourceItem>,
        start: usize,
        max: usize,
    ) -> Result<(), ConnectorError> {
        let consumer = Arc::clone(&self.consumer);
        // A poll serves one event at most (it gives nothing back for one): as many polls as
        // there are operations waiting, and no more than that many (a bound: events keep coming).
        let waiting = consumer.context().fetch.events_waiting().min(1024);
        for _ in 0..waiting {
            if out.len() - start >= max {
                break;
            }
            match consumer.poll(Duration::ZERO) {
                None => {}
                Some(Ok(m)) => {
                    let topic = Self::topic_index(&mut self.topic_names, m.topic());
                    let (partition, offset) = (m.partition(), m.offset());
                    let mut positions = consumer.context().positions();
                    let parts = positions.entry(self.topic_names[topic].to_string()).or_default();
                    // A message before the position is covered already (resumed from the
                    // beginning, or served again by the broker): skipped.
                    if parts.get(&partition).is_some_and(|&next| offset < next) {
                        self.skipped += 1;
                        continue;
                    }
                    parts.insert(partition, offset + 1);
                    out.push(SourceItem {
                        payload: Payload::Raw(self.spare_lines.filled(m.payload().unwrap_or_default())),
                        position: Position::Kafka { topic: Arc::clone(&self.topic_names[topic]), partition, offset },
                        created_ns: 0,
                    });
                }
                Some(Err(e)) => self.consumer_error(&e)?,
            }
        }
        Ok(())
    }

    /// Takes up to `room` messages of the fetch queue into `out`, waiting at most `wait` for the
    /// first; each payload is copied into a buffer handed back by the runtime when there is one. Each partition's next offset is read from the context's positions at its first
    /// message and written back once at the end (one lock per batch, integers per message); a
    /// message before its partition's position is skipped.
    fn take_batch(&mut self, out: &mut Vec<SourceItem>, room: usize, wait: Duration) -> Result<(), ConnectorError> {
        let consumer = Arc::clone(&self.consumer);
        let context = consumer.context();
        let topic_names = &mut self.topic_names;
        let slots = &mut self.slots;
        let skipped = &mut self.skipped;
        let spare_lines = &mut self.spare_lines;
        slots.clear();
        let mut positions = None;
        let mut errors: Vec<KafkaError> = Vec::new();
        let (mut last_rkt, mut topic, mut hint) = (0usize, 0usize, 0usize);
        context.fetch.consume(&mut self.buf, room, wait, |m: &Fetched<'_>| {
            if m.err != RDKafkaRespErr::RD_KAFKA_RESP_ERR_NO_ERROR {
                errors.push(KafkaError::MessageConsumption(RDKafkaErrorCode::from(m.err)));
                return;
            }
            if m.rkt != last_rkt || last_rkt == 0 {
                last_rkt = m.rkt;
                topic = Self::topic_index(topic_names, m.topic());
            }
            if !slots.get(hint).is_some_and(|s| s.topic == topic && s.partition == m.partition) {
                hint = match slots.iter().position(|s| s.topic == topic && s.partition == m.partition) {
                    Some(k) => k,
                    None => {
                        let positions = positions.get_or_insert_with(|| context.positions());
                        let next = positions.get(&*topic_names[topic]).and_then(|p| p.get(&m.partition)).copied();
                        slots.push(Slot { topic, partition: m.partition, next });
                        slots.len() - 1
                    }
                };
            }
            let slot = &mut slots[hint];
            // A message before the position is covered already (resumed from the beginning, or
            // served again by the broker): skipped.
            if slot.next.is_some_and(|next| m.offset < next) {
                *skipped += 1;
                return;
            }
            slot.next = Some(m.offset + 1);
            out.push(SourceItem {
                payload: Payload::Raw(spare_lines.filled(m.payload)),
                position: Position::Kafka {
                    topic: Arc::clone(&topic_names[topic]),
                    partition: m.partition,
                    offset: m.offset,
                },
                created_ns: 0,
            });
        });
        if let Some(mut positions) = positions {
            for s in slots.iter() {
                let Some(next) = s.next else { continue };
                match positions.get_mut(&*self.topic_names[s.topic]) {
                    Some(parts) => {
                        parts.insert(s.partition, next);
                    }
                    None => {
                        positions.insert(self.topic_names[s.topic].to_string(), [(s.partition, next)].into());
                    }
                }
            }
        }
        for e in &errors {
            self.consumer_error(e)?;
        }
        Ok(())
    }

    /// A consumer error: a transport error is librdkafka's to retry (logged at debug), a fatal
    /// one ends the run; others are informational in librdkafka, which retries (a warning at
    /// most once a second).
    ///
    /// # Errors
    /// [`ConnectorError::External`] for a fatal error.
    fn consumer_error(&mut self, e: &KafkaError) -> Result<(), ConnectorError> {
        if is_transport(e) {
            tracing::debug!(error = %e, "Kafka consumer transport error (librdkafka reconnects)");
        } else if e.rdkafka_error_code() == Some(RDKafkaErrorCode::Fatal) {
            return Err(ConnectorError::External(format!("Kafka source: fatal consumer error: {e}")));
        } else if self.last_error_log.is_none_or(|t| t.elapsed() >= Duration::from_secs(1)) {
            self.last_error_log = Some(Instant::now());
            tracing::warn!(error = %e, "Kafka consumer error (at most one such line a second)");
        }
        Ok(())
    }
}

impl Source for KafkaSource {
    /// Appends up to `max` messages, waiting at most `timeout` for the first; they are read in
    /// batches from the source's fetch queue (`kafka/fetch.rs`), the consumer queue's events
    /// served before each batch and at least every 100 ms of a wait. A message without
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
        loop {
            // Events (rebalances, statistics, errors), and any message that came to the consumer
            // queue rather than to the fetch queue; served at least every REFRESH_EVERY.
            self.serve_consumer_queue(out, start, max)?;
            let now = Instant::now();
            if now >= self.next_refresh {
                self.consumer.context().fetch.refresh(self.consumer.native());
                self.next_refresh = now + REFRESH_EVERY;
            }
            let room = max.saturating_sub(out.len() - start);
            if room == 0 {
                break;
            }
            let wait = match out.len() > start {
                true => Duration::ZERO,
                false => deadline.saturating_duration_since(now).min(REFRESH_EVERY),
            };
            self.take_batch(out, room, wait)?;
            if out.len() > start || Instant::now() >= deadline {
                break;
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
        let partitions: Vec<(String, i32)> =
            assignment.elements().iter().map(|e| (e.topic().to_string(), e.partition())).collect();
        self.consumer.context().fetch.forward(self.consumer.native(), partitions.iter().map(|(t, p)| (t.as_str(), *p)));
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

    /// Keeps buffers of at most 4 KiB, up to 4,096 in all; the next messages' values are copied
    /// into them.
    fn recycle_lines(&mut self, lines: &mut Vec<Vec<u8>>) {
        self.spare_lines.keep(lines);
    }
}
