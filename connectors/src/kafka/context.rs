//! librdkafka callbacks: logs to `tracing`, broker state and offsets from the statistics, errors
//! and delivery reports kept for the source / sink thread to act on.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rdkafka::client::ClientContext;
use rdkafka::config::RDKafkaLogLevel;
use rdkafka::consumer::{BaseConsumer, Consumer, ConsumerContext, RebalanceProtocol};
use rdkafka::error::KafkaError;
use rdkafka::message::DeliveryResult;
use rdkafka::producer::ProducerContext;
use rdkafka::statistics::Statistics;
use rdkafka::topic_partition_list::{Offset, TopicPartitionList};
use rdkafka::types::{RDKafkaErrorCode, RDKafkaRespErr};

use super::fetch::FetchQueue;

/// Whether an error says the path to the broker is broken (retried by librdkafka).
pub(crate) fn is_transport(e: &KafkaError) -> bool {
    matches!(
        e.rdkafka_error_code(),
        Some(
            RDKafkaErrorCode::BrokerTransportFailure
                | RDKafkaErrorCode::AllBrokersDown
                | RDKafkaErrorCode::Resolve
                | RDKafkaErrorCode::OperationTimedOut
                | RDKafkaErrorCode::RequestTimedOut
                | RDKafkaErrorCode::NetworkException
        )
    )
}

fn log_librdkafka(level: RDKafkaLogLevel, fac: &str, message: &str) {
    // Connection failures are repeated on every retry: Eddy logs its own line about an unreachable
    // broker (at most every 5 s), so librdkafka's go to debug.
    let connection = matches!(fac, "FAIL" | "CONNECT" | "BROKERFAIL");
    match level {
        RDKafkaLogLevel::Emerg | RDKafkaLogLevel::Alert | RDKafkaLogLevel::Critical | RDKafkaLogLevel::Error
            if !connection =>
        {
            tracing::warn!(target: "librdkafka", facility = fac, "{message}")
        }
        RDKafkaLogLevel::Warning if !connection => tracing::warn!(target: "librdkafka", facility = fac, "{message}"),
        RDKafkaLogLevel::Notice | RDKafkaLogLevel::Info if !connection => {
            tracing::info!(target: "librdkafka", facility = fac, "{message}")
        }
        _ => tracing::debug!(target: "librdkafka", facility = fac, "{message}"),
    }
}

/// Offsets of one partition as the last statistics gave them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct PartitionOffsets {
    /// Low watermark (first offset), -1 when unknown.
    pub lo: i64,
    /// High watermark (next offset to be written), -1 when unknown.
    pub hi: i64,
    /// Next offset handed to the application, -1 when none yet.
    pub app: i64,
    /// Whether the partition is assigned to this consumer.
    pub desired: bool,
}

/// What the consumer's callbacks saw since the source last looked.
#[derive(Debug, Default)]
pub(crate) struct SourceState {
    /// From the last statistics or transport error: is some broker connection up?
    /// `None` before the first report.
    pub broker_up: Option<bool>,
    /// The last transport error, for the log line.
    pub last_error: Option<String>,
    /// Per (topic, partition), from the last statistics.
    pub offsets: HashMap<(String, i32), PartitionOffsets>,
    /// Set by every callback; cleared by the source when it has read the state.
    pub changed: bool,
}

/// Next offset to read, per topic and partition.
pub(crate) type Positions = HashMap<String, HashMap<i32, i64>>;

/// The consumer's context.
#[derive(Debug, Default)]
pub(crate) struct SourceContext {
    pub state: Mutex<SourceState>,
    /// The next offset to read of every partition known so far: restored from a checkpoint
    /// ([`crate::Source::seek`]), then moved past every message handed out. A partition is
    /// assigned at its entry here (the checkpoint is the truth, not the group's committed
    /// offsets); a partition without one starts as `starting_offsets` says.
    pub positions: Mutex<Positions>,
    last_warn: Mutex<Option<Instant>>,
    /// A shared group ([`crate::kafka::KafkaGroup`]): rebalances that change the assignment are
    /// not applied in the callback but kept here for the group's owner, which first checkpoints
    /// (issue 26). `None`: a consumer of its own, which assigns in the callback.
    pub group: Option<Mutex<GroupEvents>>,
    /// Where the assigned partitions' messages go, read in batches by the source
    /// ([`super::fetch`]); every partition is forwarded to it before it is assigned.
    pub fetch: FetchQueue,
}

/// A change of a shared group's assignment, as the group protocol asked it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GroupChange {
    /// These partitions are given to this process (not yet assigned: the owner restores their
    /// state, then assigns them at their checkpointed offsets).
    Assigned(Vec<(String, i32)>),
    /// These partitions leave this process (still assigned: the owner checkpoints them, then
    /// releases them). `lost`: the group took them already (the session expired), so another
    /// process may own them now.
    Revoked {
        /// The partitions.
        partitions: Vec<(String, i32)>,
        /// Whether librdkafka reports the assignment lost.
        lost: bool,
    },
}

/// Deferred rebalances of a shared group, and the flag that tells the running pipeline to end
/// its epoch.
#[derive(Debug, Default)]
pub(crate) struct GroupEvents {
    pub pending: Vec<GroupChange>,
    /// Set when a change is kept (the running pipeline's stop flag for a rebalance).
    pub wake: Option<Arc<AtomicBool>>,
    /// The group's owner is leaving: changes are applied in the callback, as without a group.
    pub closing: bool,
}

impl SourceContext {
    /// A context; `group`: of a consumer in a shared group ([`SourceContext::group`]).
    pub fn new(group: bool) -> SourceContext {
        SourceContext { group: group.then(Default::default), ..SourceContext::default() }
    }

    /// The positions, locked. A poisoned lock means a callback panicked (a bug); the map is
    /// still usable.
    pub fn positions(&self) -> std::sync::MutexGuard<'_, Positions> {
        self.positions.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn update(&self, f: impl FnOnce(&mut SourceState)) {
        // A poisoned lock means a callback panicked (a bug); the state is still usable.
        let mut s = self.state.lock().unwrap_or_else(|p| p.into_inner());
        f(&mut s);
        s.changed = true;
    }
}

/// Warns at most once per `every` (`last` remembers when).
fn warn_limited(last: &Mutex<Option<Instant>>, every: Duration, f: impl FnOnce()) {
    let mut l = last.lock().unwrap_or_else(|p| p.into_inner());
    if l.is_none_or(|t| t.elapsed() >= every) {
        *l = Some(Instant::now());
        f();
    }
}

impl ClientContext for SourceContext {
    fn log(&self, level: RDKafkaLogLevel, fac: &str, log_message: &str) {
        log_librdkafka(level, fac, log_message);
    }

    fn stats(&self, stats: Statistics) {
        // A broker counts when it is a real connection (not librdkafka's internal one) in state UP.
        let up = stats.brokers.values().any(|b| b.source != "internal" && b.state == "UP");
        let mut offsets = HashMap::new();
        for (name, topic) in &stats.topics {
            for p in topic.partitions.values().filter(|p| p.partition >= 0) {
                offsets.insert(
                    (name.clone(), p.partition),
                    PartitionOffsets { lo: p.lo_offset, hi: p.hi_offset, app: p.app_offset, desired: p.desired },
                );
            }
        }
        self.update(|s| {
            s.broker_up = Some(up);
            s.offsets = offsets;
        });
    }

    fn error(&self, error: KafkaError, reason: &str) {
        if is_transport(&error) {
            let all_down = error.rdkafka_error_code() == Some(RDKafkaErrorCode::AllBrokersDown);
            self.update(|s| {
                if all_down {
                    s.broker_up = Some(false);
                }
                s.last_error = Some(format!("{error}: {reason}"));
            });
            tracing::debug!(%error, reason, "Kafka consumer transport error (retried by librdkafka)");
        } else {
            warn_limited(&self.last_warn, Duration::from_secs(1), || {
                tracing::warn!(%error, reason, "Kafka consumer error (at most one such line a second)");
            });
        }
    }
}

impl ConsumerContext for SourceContext {
    /// Assigns (or revokes) as librdkafka's default does, after setting the offset of every
    /// assigned partition that has a position ([`SourceContext::positions`]): a restarted run
    /// resumes where its checkpoint says, and a partition revoked and given back resumes after
    /// the last message handed out, whatever the group committed.
    ///
    /// In a shared group ([`SourceContext::group`]) a non-empty assignment or revocation is
    /// deferred instead: kept as a [`GroupChange`] for the group's owner, which applies it
    /// (`incremental_assign` / `incremental_unassign`, allowed outside the callback) once the
    /// state of the partitions concerned is checkpointed or restored; meanwhile librdkafka holds
    /// the group's rebalance, and the revoked partitions stay this process's.
    fn rebalance(&self, consumer: &BaseConsumer<Self>, err: RDKafkaRespErr, tpl: &mut TopicPartitionList) {
        let cooperative = matches!(consumer.rebalance_protocol(), RebalanceProtocol::Cooperative);
        let parts = |tpl: &TopicPartitionList| -> Vec<(String, i32)> {
            tpl.elements().iter().map(|e| (e.topic().to_string(), e.partition())).collect()
        };
        if let Some(group) = &self.group
            && tpl.count() > 0
            && !group.lock().unwrap_or_else(|p| p.into_inner()).closing
        {
            let change = match err {
                RDKafkaRespErr::RD_KAFKA_RESP_ERR__ASSIGN_PARTITIONS => Some(GroupChange::Assigned(parts(tpl))),
                RDKafkaRespErr::RD_KAFKA_RESP_ERR__REVOKE_PARTITIONS => {
                    Some(GroupChange::Revoked { partitions: parts(tpl), lost: consumer.assignment_lost() })
                }
                _ => None,
            };
            if let Some(change) = change {
                tracing::info!(
                    ?change,
                    "Kafka group rebalance: deferred until the partitions' state is checkpointed / restored"
                );
                let mut g = group.lock().unwrap_or_else(|p| p.into_inner());
                g.pending.push(change);
                if let Some(wake) = &g.wake {
                    wake.store(true, Ordering::SeqCst);
                }
                return;
            }
        }
        let named = |parts: &[(String, i32)]| -> String {
            parts.iter().map(|(t, p)| format!("{t}/{p}")).collect::<Vec<_>>().join(",")
        };
        match err {
            RDKafkaRespErr::RD_KAFKA_RESP_ERR__ASSIGN_PARTITIONS => {
                let assigned = parts(tpl);
                let mut resumed = Vec::new();
                {
                    let positions = self.positions();
                    for (topic, partition) in &assigned {
                        if let Some(&next) = positions.get(topic).and_then(|p| p.get(partition)) {
                            match tpl.set_partition_offset(topic, *partition, Offset::Offset(next)) {
                                Ok(()) => resumed.push(format!("{topic}/{partition}@{next}")),
                                // The partition is in the list just read: this is not expected;
                                // it then starts as `starting_offsets` says, which is logged.
                                Err(e) => {
                                    tracing::warn!(%e, topic, partition, next, "Kafka source: cannot set a partition's offset")
                                }
                            }
                        }
                    }
                }
                self.fetch.forward(consumer.client().native_ptr(), assigned.iter().map(|(t, p)| (t.as_str(), *p)));
                let result = if cooperative { consumer.incremental_assign(tpl) } else { consumer.assign(tpl) };
                match result {
                    Ok(()) => tracing::info!(
                        partitions = %named(&assigned),
                        resumed = %resumed.join(","),
                        "Kafka partitions assigned (resumed: at the offsets shown; the others as starting_offsets says)"
                    ),
                    Err(e) => {
                        tracing::warn!(error = %e, partitions = %named(&assigned), "Kafka source: assignment failed")
                    }
                }
            }
            RDKafkaRespErr::RD_KAFKA_RESP_ERR__REVOKE_PARTITIONS => {
                let revoked = parts(tpl);
                let result = if cooperative { consumer.incremental_unassign(tpl) } else { consumer.unassign() };
                match result {
                    Ok(()) => tracing::info!(partitions = %named(&revoked), "Kafka partitions revoked"),
                    Err(e) => {
                        tracing::warn!(error = %e, partitions = %named(&revoked), "Kafka source: unassignment failed")
                    }
                }
            }
            other => {
                let code: RDKafkaErrorCode = other.into();
                tracing::warn!(error = %code, "Kafka rebalance failed");
                // As librdkafka's default: drop the assignment, the group rebalances again.
                if let Err(e) = consumer.unassign() {
                    tracing::warn!(error = %e, "Kafka source: unassignment after a failed rebalance failed");
                }
            }
        }
    }
}

/// The producer's context: the first delivery failure, kept until the sink reports it.
#[derive(Debug, Default)]
pub(crate) struct SinkContext {
    /// The first failure not yet reported (a message not delivered after librdkafka's retries,
    /// or a fatal error).
    pub failure: Mutex<Option<String>>,
    last_warn: Mutex<Option<Instant>>,
    /// Messages handed to librdkafka whose delivery report has not come yet, per batch / epoch
    /// (the delivery opaque of each message); epochs with none are removed.
    unreported: Mutex<BTreeMap<u64, u64>>,
}

impl SinkContext {
    fn fail(&self, why: String) {
        let mut f = self.failure.lock().unwrap_or_else(|p| p.into_inner());
        if f.is_none() {
            *f = Some(why);
        }
    }

    /// Takes the failure, if any.
    pub fn take_failure(&self) -> Option<String> {
        self.failure.lock().unwrap_or_else(|p| p.into_inner()).take()
    }

    fn unreported(&self) -> std::sync::MutexGuard<'_, BTreeMap<u64, u64>> {
        // A poisoned lock means a callback panicked (a bug); the counts are still usable.
        self.unreported.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Counts a message of `epoch` about to be handed to librdkafka (before the send: its
    /// report may be served on another thread at once).
    pub fn sending(&self, epoch: u64) {
        *self.unreported().entry(epoch).or_insert(0) += 1;
    }

    /// Uncounts a message of `epoch` whose send failed (no report will come), or whose report came.
    pub fn reported(&self, epoch: u64) {
        let mut u = self.unreported();
        if let Some(n) = u.get_mut(&epoch) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                u.remove(&epoch);
            }
        }
    }

    /// Messages of epochs `<= epoch` still without a delivery report.
    pub fn unreported_up_to(&self, epoch: u64) -> u64 {
        self.unreported().range(..=epoch).map(|(_, n)| n).sum()
    }
}

impl ClientContext for SinkContext {
    fn log(&self, level: RDKafkaLogLevel, fac: &str, log_message: &str) {
        log_librdkafka(level, fac, log_message);
    }

    fn error(&self, error: KafkaError, reason: &str) {
        if error.rdkafka_error_code() == Some(RDKafkaErrorCode::Fatal) {
            self.fail(format!("fatal producer error: {error}: {reason}"));
        } else if is_transport(&error) {
            warn_limited(&self.last_warn, Duration::from_secs(5), || {
                tracing::warn!(%error, reason, "Kafka sink: broker unreachable, librdkafka retries (at most one such line every 5 s)");
            });
        } else {
            warn_limited(&self.last_warn, Duration::from_secs(1), || {
                tracing::warn!(%error, reason, "Kafka producer error (at most one such line a second)");
            });
        }
    }
}

impl ProducerContext for SinkContext {
    /// The batch / epoch of the message ([`SinkContext::sending`]; no allocation per message).
    type DeliveryOpaque = usize;

    fn delivery(&self, result: &DeliveryResult<'_>, epoch: usize) {
        self.reported(epoch as u64);
        if let Err((e, m)) = result {
            use rdkafka::Message;
            self.fail(format!(
                "a message to {} (partition {}) was not delivered after librdkafka's retries: {e}",
                m.topic(),
                m.partition()
            ));
        }
    }
}
