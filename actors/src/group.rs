//! Several Eddy processes in one Kafka consumer group (`[source] shared_group = true`, issue 26,
//! README "Running several instances"), as Kafka Streams instances share an application id.
//!
//! Kafka's group protocol (cooperative-sticky assignment) decides which process reads which input
//! partition; nothing else coordinates the processes. Each process runs the pipeline over the
//! partitions it is assigned, one partition actor per partition ([`InputRouting`]: a record goes
//! to the actor of the partition it came from), so each actor's state is exactly one input
//! partition's, and it is checkpointed per partition ([`crate::checkpoint::partitioned`]) in the
//! pipeline's checkpoint folder, shared by the processes.
//!
//! [`run_shared_group`] drives a sequence of runs, one per assignment: when the group changes
//! this process's assignment, the consumer's callback defers the change and raises the run's
//! stop flag; the run ends its epoch (micro-batch: its batch) with a checkpoint of every
//! partition it holds, as a stop does; then the driver releases the revoked partitions (their
//! next owner restores the checkpoint just written), restores every partition it now holds from
//! its newest checkpoint, assigns the new ones at their checkpointed offsets, and starts the next
//! run. A process that dies without this (kill -9) loses its partitions when its session times
//! out (`session.timeout.ms`); their next owners restore their last checkpoints and read on from
//! there, so the epochs in flight are read, and their rows written, again.
//!
//! Input must be partitioned by the query's key, as the Kafka default partitioner does with the
//! key the Kafka sink writes (its `key` columns as a JSON object); a record whose key that
//! partitioner puts elsewhere is counted ([`crate::metrics::KAFKA_MISROUTED`]) and logged, and
//! still processed with its own partition's state.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use eddy_connectors::Position;
use eddy_connectors::kafka::{GroupChange, KafkaGroup, partition_for_key};
use eddy_engine::Record;
use eddy_engine::operator::Operator;
use eddy_engine::output::RowFormat;
use eddy_engine::plan::QueryPlan;
use eddy_engine::spec::{Pipeline, SinkSpec, SourceKind};
use eddy_engine::value::Value;

use crate::checkpoint::partitioned::{self, PartitionCheckpoint, folder_name};
use crate::checkpoint::{self, CheckpointError, CheckpointStore, Checkpointer, FingerprintField, Manifest};
use crate::metrics::Metrics;
use crate::metrics::kafka::KafkaReporter;
use crate::routing::Router;
use crate::runtime::{RunOptions, RunSummary, RuntimeError, run_pipeline};

/// The blob in the pipeline's shared checkpoint folder that holds the query's fingerprint, as
/// the first process wrote it: a process running another query is refused (exit 2).
const GROUP_FINGERPRINT: &str = "group-fingerprint";
/// How long a newly assigned partition's checkpoint folder may stay locked by its previous
/// owner (still finishing its last checkpoint, or a process the broker already dropped from the
/// group) before the run fails.
const LOCKED_FOR_AT_MOST: Duration = Duration::from_secs(60);

/// Whether `pipeline` reads a Kafka source shared with other processes (`shared_group`).
pub fn is_shared(pipeline: &Pipeline) -> bool {
    matches!(pipeline.source.kind, SourceKind::Kafka { shared_group: true, .. })
}

/// Checks that a `shared_group` pipeline can run as one of several processes: one Kafka source,
/// a checkpoint, no `parallelism` (one actor per assigned partition), a query whose state stays
/// with the input partition (no exchange, no stream-stream join, not one that runs in one
/// actor), and sinks several processes can write at once (not `files`, not `delta`).
///
/// # Errors
/// [`RuntimeError::Unsupported`] naming the field (exit 2).
pub fn check(pipeline: &Pipeline, plan: &QueryPlan) -> Result<(), RuntimeError> {
    let refuse = |field: &str, why: &str| Err(RuntimeError::Unsupported { field: field.into(), why: why.into() });
    if !pipeline.more_sources.is_empty() {
        return refuse(
            "source.shared_group",
            "a pipeline of several sources cannot share its consumer group (one Kafka source only)",
        );
    }
    if pipeline.checkpoint.is_none() {
        return refuse(
            "checkpoint",
            "source.shared_group needs a [checkpoint] whose path every process shares: a partition's state moves to its next owner through it",
        );
    }
    if pipeline.parallelism.is_some() {
        return refuse(
            "parallelism",
            "not allowed with source.shared_group: each assigned input partition has a partition actor of its own",
        );
    }
    if plan.exchange().is_some() || plan.single_partition().is_some() || !plan.more_sources.is_empty() {
        return refuse(
            "query",
            "with source.shared_group every stateful step must be keyed by the input's partition key, with no exchange between partition actors (state stays with its input partition); re-key the input into a topic first (README \"Running several instances\")",
        );
    }
    for (field, sink) in [
        ("sink", Some(&pipeline.sink)),
        ("late_sink", pipeline.late_sink.as_ref()),
        ("dead_letter", pipeline.dead_letter.as_ref()),
    ] {
        if let Some(SinkSpec::Files { .. } | SinkSpec::Delta { .. }) = sink {
            return refuse(
                &format!("{field}.type"),
                "with source.shared_group several processes write at once: use a kafka, stdout or foreach sink (files and delta sinks name their output by epoch, which every process counts on its own)",
            );
        }
    }
    Ok(())
}

/// Where records of a shared group's run go: to the partition actor of their input partition.
/// Also checks that the input is partitioned by the query's key ([`crate::metrics::KAFKA_MISROUTED`]).
#[derive(Debug, Default)]
pub struct InputRouting {
    /// Per assigned partition (in actor order), its actor.
    actors: Vec<(String, i32)>,
    /// Micro-batch: the actor of each record of the batch being cut, in order.
    pub(crate) batch: Vec<usize>,
    /// The query's key columns (empty: no check) and their JSON layout, as the Kafka sink's key.
    key_columns: Vec<usize>,
    key_format: RowFormat,
    /// The number of partitions of each topic.
    counts: Vec<(String, i32)>,
    text: String,
    values: Vec<Value>,
    misrouted: u64,
    last_log: Option<Instant>,
}

impl InputRouting {
    /// Routing over `partitions` (actor `i` holds `partitions[i]`), checking records' keys
    /// (`key_columns`, named `key_names`) against topics of `counts` partitions.
    pub fn new(
        partitions: Vec<(String, i32)>,
        key_columns: Vec<usize>,
        key_names: &[String],
        counts: Vec<(String, i32)>,
    ) -> InputRouting {
        InputRouting {
            actors: partitions,
            key_format: RowFormat::new(key_names),
            key_columns,
            counts,
            ..InputRouting::default()
        }
    }

    /// The actor of the `i`-th record of the micro-batch being cut.
    pub(crate) fn batch_actor(&self, i: usize) -> usize {
        self.batch.get(i).copied().unwrap_or(0)
    }

    /// The actor of `record`, read at `position`: its input partition's. A record of a partition
    /// not assigned (not expected: the consumer reads only those) goes to actor 0, logged.
    pub(crate) fn actor_of(&mut self, record: &Record, position: &Position, metrics: &Metrics) -> usize {
        let Position::Kafka { topic, partition, .. } = position else { return 0 };
        let actor = self.actors.iter().position(|(t, p)| p == partition && t.as_str() == &**topic);
        if !self.key_columns.is_empty() {
            self.check_key(record, topic, *partition, metrics);
        }
        actor.unwrap_or_else(|| {
            tracing::warn!(%topic, partition, "a record of a partition this process is not assigned (a bug); kept in the first partition actor");
            0
        })
    }

    /// Counts and logs (at most every 10 s) a record whose key belongs to another partition.
    fn check_key(&mut self, record: &Record, topic: &str, partition: i32, metrics: &Metrics) {
        let Some(&(_, count)) = self.counts.iter().find(|(t, _)| t == topic) else { return };
        self.values.clear();
        self.values.extend(self.key_columns.iter().map(|&c| record.values.get(c).cloned().unwrap_or(Value::Null)));
        self.text.clear();
        self.key_format.write(&mut self.text, &self.values);
        let expected = partition_for_key(self.text.as_bytes(), count);
        if expected != partition {
            self.misrouted += 1;
            metrics.kafka_misrouted.increment(1);
            if self.last_log.is_none_or(|t| t.elapsed() >= Duration::from_secs(10)) {
                self.last_log = Some(Instant::now());
                tracing::warn!(
                    key = %self.text,
                    topic,
                    partition,
                    expected,
                    misrouted = self.misrouted,
                    "a record whose key Kafka's default partitioner puts in another partition: the input is not partitioned by the query's key, so its state may be split across processes (README \"Running several instances\"; at most one such line every 10 s)"
                );
            }
        }
    }
}

/// One run of a shared group ([`RunOptions::group`]): the partitions it holds, their
/// checkpoints and restored state.
pub struct GroupRun {
    /// The assigned partitions; partition actor `i` holds `partitions[i]`.
    pub partitions: Vec<(String, i32)>,
    /// Their checkpoints ([`Checkpointer::per_partition`]).
    pub checkpointer: Checkpointer,
    /// The restored operators, one per partition.
    pub operators: Vec<Box<dyn Operator>>,
    /// The merged manifest of the restored partitions (`None`: none had a checkpoint).
    pub manifest: Option<Manifest>,
    /// The metrics, shared by the runs (the driver serves the endpoint).
    pub metrics: Metrics,
    /// The records' routing.
    pub routing: InputRouting,
}

impl std::fmt::Debug for GroupRun {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GroupRun").field("partitions", &self.partitions).finish_non_exhaustive()
    }
}

/// Runs `pipeline` (with `shared_group`) as one of the processes of its consumer group until a
/// stop (the module documentation); returns the runs' summed summary.
///
/// # Errors
/// As [`run_pipeline`]; [`RuntimeError::IncompatibleCheckpoint`] (exit 2) when the processes'
/// shared checkpoint folder was started by a different query.
pub fn run_shared_group(pipeline: &Pipeline, mut opts: RunOptions) -> Result<RunSummary, RuntimeError> {
    let plan = QueryPlan::new(pipeline).map_err(|e| RuntimeError::Unsupported { field: e.field, why: e.why })?;
    check(pipeline, &plan)?;
    let Some(config) = crate::runtime::kafka_config(&pipeline.source.kind) else {
        return Err(RuntimeError::Unsupported {
            field: "source.shared_group".into(),
            why: "a kafka source only".into(),
        });
    };
    let topics = config.topics.clone();
    let Some(ck_spec) = &pipeline.checkpoint else {
        return Err(RuntimeError::Unsupported {
            field: "checkpoint".into(),
            why: "required with source.shared_group".into(),
        });
    };
    let stop = opts.stop.take().unwrap_or_default();
    let health = opts.health.take().unwrap_or_default();
    let counters = opts.counters.take().unwrap_or_default();

    // The shared folder, and the query every process of it must run.
    let base = ck_spec.path.join(&pipeline.name);
    let shared = checkpoint::store::open_store(&base, false).map_err(|e| match e {
        e @ CheckpointError::Unreachable { .. } => RuntimeError::Failed(e.to_string()),
        e => RuntimeError::Open { field: "checkpoint.path".into(), why: e.to_string() },
    })?;
    let fingerprint = checkpoint::manifest::fingerprint(pipeline);
    check_fingerprint(shared.as_ref(), &fingerprint)?;

    let stop_now = {
        let stop = stop.clone();
        move || stop.load(Ordering::SeqCst)
    };
    let mut group = KafkaGroup::join(config, &eddy_connectors::kafka::NoObserver, &stop_now).map_err(|e| match e {
        eddy_connectors::ConnectorError::Config(why) => RuntimeError::Open { field: "source.properties".into(), why },
        other => RuntimeError::Failed(other.to_string()),
    })?;
    let mut counts = Vec::new();
    for t in &topics {
        counts.push((t.clone(), group.partition_count(t).map_err(|e| RuntimeError::Failed(e.to_string()))?));
    }
    // One series per partition actor (labelled by actor), as many as the topics' partitions.
    let most = counts.iter().map(|(_, n)| *n as usize).sum::<usize>().max(1);
    let (metrics, _server) = crate::runtime::serve_metrics(pipeline, most, &[], opts.metrics_switch.as_ref(), &health)?;
    let reporter = KafkaReporter::new(health.clone(), metrics.clone());
    let key_columns = plan.routing_columns();
    let key_names: Vec<String> =
        key_columns.iter().map(|&c| plan.input_names.get(c).cloned().unwrap_or_default()).collect();
    let new_operator = || plan.new_operator();

    let mut owned: BTreeMap<(String, i32), PartitionCheckpoint> = BTreeMap::new();
    let mut total = RunSummary::default();
    let mut runs = 0u64;
    health.set_sources_connected(false);
    while !stop_now() {
        let changes = if group.assigned().is_empty() && owned.is_empty() {
            group
                .wait_for_changes(Duration::from_secs(1), &stop_now)
                .map_err(|e| RuntimeError::Failed(e.to_string()))?
        } else {
            group.take_changes()
        };
        if stop_now() {
            break;
        }
        let started = Instant::now();
        let mut new = Vec::new();
        for change in &changes {
            match change {
                GroupChange::Revoked { partitions, lost } => {
                    for p in partitions {
                        owned.remove(p);
                    }
                    group.release(partitions).map_err(|e| RuntimeError::Failed(e.to_string()))?;
                    if *lost {
                        tracing::warn!(partitions = ?partitions, "Kafka partitions lost (the session expired): their next owners restore their last checkpoints");
                    }
                }
                GroupChange::Assigned(partitions) => {
                    for p in partitions {
                        let folder = base.join(folder_name(&p.0, p.1));
                        let Some(store) = open_partition_store(&folder, &stop_now)? else {
                            break; // stopped while waiting: nothing of it was read
                        };
                        let ck = Checkpointer::new(store, &pipeline.name, fingerprint.clone(), ck_spec.keep);
                        owned.insert(
                            p.clone(),
                            PartitionCheckpoint { topic: p.0.clone(), partition: p.1, checkpointer: ck },
                        );
                        new.push(p.clone());
                    }
                }
            }
        }
        if !changes.is_empty() {
            metrics.kafka_rebalances.increment(changes.len() as u64);
        }
        if stop_now() {
            break;
        }
        if owned.is_empty() {
            metrics.kafka_assigned_partitions.set(0.0);
            continue;
        }
        // Every partition held restores from its newest checkpoint (those kept from the last run
        // too: its final checkpoint is their state).
        let parts: Vec<PartitionCheckpoint> = owned.values().cloned().collect();
        let partitions: Vec<(String, i32)> = owned.keys().cloned().collect();
        let router = Router::new(key_columns.clone(), 1);
        let (operators, manifest) = partitioned::restore(&parts, &new_operator, &router).map_err(|e| match e {
            e @ CheckpointError::Incompatible { .. } => RuntimeError::IncompatibleCheckpoint(e.to_string()),
            e => RuntimeError::Failed(format!("restoring the assigned partitions: {e}")),
        })?;
        let mut next = BTreeMap::new();
        if let Some(checkpoint::SavedOffset::Kafka(offsets)) = manifest.as_ref().and_then(|m| m.source.as_ref()) {
            for o in offsets {
                next.insert((o.topic.clone(), o.partition), o.next);
            }
        }
        if !new.is_empty() {
            group.assign(&new, &next).map_err(|e| RuntimeError::Failed(e.to_string()))?;
        }
        let kept: Vec<(String, i32)> = partitions.iter().filter(|p| !new.contains(p)).cloned().collect();
        group.rewind(&kept, &next).map_err(|e| RuntimeError::Failed(e.to_string()))?;
        metrics.partition_restore.record(started.elapsed().as_secs_f64());
        metrics.kafka_assigned_partitions.set(partitions.len() as f64);
        tracing::info!(
            partitions = %partitions.iter().map(|(t, p)| format!("{t}/{p}")).collect::<Vec<_>>().join(","),
            restored_epoch = manifest.as_ref().map(|m| m.epoch),
            restore_ms = started.elapsed().as_millis() as u64,
            "shared group: a run over the assigned partitions starts"
        );

        // The run's stop flag: raised by a deferred rebalance, or by the process's stop.
        let wake = Arc::new(AtomicBool::new(false));
        group.set_wake(wake.clone());
        let forward = {
            let (stop, wake) = (stop.clone(), wake.clone());
            std::thread::spawn(move || {
                while !wake.load(Ordering::SeqCst) {
                    if stop.load(Ordering::SeqCst) {
                        wake.store(true, Ordering::SeqCst);
                    }
                    std::thread::sleep(Duration::from_millis(20));
                }
            })
        };
        let run = RunOptions {
            stop: Some(wake.clone()),
            latency: opts.latency.clone(),
            source_override: Some(Box::new(group.source(Box::new(reporter.clone())))),
            counters: Some(counters.clone()),
            health: Some(health.clone()),
            metrics_switch: opts.metrics_switch.clone(),
            foreach: opts.foreach.clone(),
            trace_stalls: opts.trace_stalls,
            group: Some(GroupRun {
                routing: InputRouting::new(partitions.clone(), key_columns.clone(), &key_names, counts.clone()),
                checkpointer: Checkpointer::per_partition(shared.clone(), &pipeline.name, fingerprint.clone(), parts),
                partitions,
                operators,
                manifest,
                metrics: metrics.clone(),
            }),
            ..RunOptions::default()
        };
        let result = run_pipeline(pipeline, run);
        wake.store(true, Ordering::SeqCst);
        let _ = forward.join();
        let summary = result?;
        runs += 1;
        total.records = summary.records;
        total.malformed = summary.malformed;
        total.late = summary.late;
        total.rows += summary.rows;
        total.committed += summary.committed;
        total.parallelism = summary.parallelism;
    }
    // The partitions' folders first (their last checkpoint is written): their next owners may
    // lock them as soon as this process has left the group.
    drop(owned);
    group.leave();
    tracing::info!(runs, "shared group: stopped");
    Ok(total)
}

/// Refuses a process whose query differs from the one that started the shared folder (the
/// first process writes its fingerprint there).
fn check_fingerprint(shared: &dyn CheckpointStore, fingerprint: &[FingerprintField]) -> Result<(), RuntimeError> {
    let failed = |e: CheckpointError| RuntimeError::Failed(format!("checkpoint: {e}"));
    let ours = rkyv::to_bytes::<rkyv::rancor::Error>(&fingerprint.to_vec())
        .map_err(|e| RuntimeError::Failed(format!("checkpoint: encoding the fingerprint: {e}")))?;
    if shared.put_if_absent(GROUP_FINGERPRINT, &ours).map_err(failed)? {
        return Ok(());
    }
    let bytes = shared.get(GROUP_FINGERPRINT).map_err(failed)?;
    let mut aligned = rkyv::util::AlignedVec::<16>::with_capacity(bytes.len());
    aligned.extend_from_slice(&bytes);
    let theirs = rkyv::from_bytes::<Vec<FingerprintField>, rkyv::rancor::Error>(&aligned).map_err(|e| {
        RuntimeError::Failed(format!("checkpoint: {}/{GROUP_FINGERPRINT} is unreadable: {e}", shared.location()))
    })?;
    let changes = checkpoint::manifest::differences(&theirs, fingerprint);
    if changes.is_empty() {
        return Ok(());
    }
    Err(RuntimeError::IncompatibleCheckpoint(
        CheckpointError::Incompatible { location: shared.location(), epoch: 0, changes }.to_string(),
    ))
}

/// Opens (and locks) a newly assigned partition's checkpoint folder, waiting while its previous
/// owner still holds it (at most [`LOCKED_FOR_AT_MOST`]); `None` when `stop()` holds first.
fn open_partition_store(
    folder: &std::path::Path,
    stop: &dyn Fn() -> bool,
) -> Result<Option<Arc<dyn CheckpointStore>>, RuntimeError> {
    let since = Instant::now();
    let mut last_log = None::<Instant>;
    loop {
        match checkpoint::store::open_store(folder, true) {
            Ok(s) => return Ok(Some(s)),
            Err(CheckpointError::Locked { .. }) if stop() => return Ok(None),
            Err(CheckpointError::Locked { folder }) if since.elapsed() < LOCKED_FOR_AT_MOST => {
                if last_log.is_none_or(|t| t.elapsed() >= Duration::from_secs(5)) {
                    last_log = Some(Instant::now());
                    tracing::warn!(%folder, "an assigned partition's checkpoint folder is still held by its previous owner; waiting");
                }
                std::thread::sleep(Duration::from_millis(100));
            }
            Err(e) => return Err(RuntimeError::Failed(format!("checkpoint of an assigned partition: {e}"))),
        }
    }
}
