//! Wiring: builds the source, sinks and actors of a pipeline, runs them to the end, and reports.
//!
//! With `[metrics]`, the HTTP endpoint (`/metrics`, `/healthz`, `/readyz`) starts before the
//! source is opened (so `/readyz` answers 503 until it is) and stops when the run ends.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread;

use crossbeam_channel::bounded;

use eddy_connectors::files::{FilesSink, FilesSource};
use eddy_connectors::kafka::{KafkaSink, KafkaSinkConfig, KafkaSource, KafkaSourceConfig};
use eddy_connectors::nexmark::{NexmarkSource, NexmarkTable};
use eddy_connectors::stdio::{StdinSource, StdoutSink};
use eddy_connectors::{ConnectorError, Sink, Source};
use eddy_engine::decode::{CsvDecoder, Decoder, JsonDecoder};
use eddy_engine::plan::QueryPlan;
use eddy_engine::spec::{self, ClockSpec, Format, Mode, Pipeline, QuerySpec, SinkSpec, SourceKind};
use eddy_engine::value::{GroupKey, Record};

use crate::checkpoint::{self, Checkpointer, SnapshotWriter};
use crate::clock::{Clock, ReplayClock, SystemClock};
use crate::coordinator::{Coordinator, UnitStarts};
use crate::messages::ToCoordinator;
use crate::metrics::kafka::KafkaReporter;
use crate::metrics::server::MetricsServer;
use crate::metrics::{Health, Metrics};
use crate::partition::{PartitionActor, PartitionTask};
use crate::recycle;
use crate::routing::Router;
use crate::sink::{LatencyRecorder, MessageColumns, RowWriter, SharedSink, SinkActor};
use crate::source::{Downstream, SourceActor, SourceCounters, SourceInput};

/// Capacity of each partition actor's input queue, in messages (each up to 256 records).
const PARTITION_QUEUE: usize = 64;
/// Capacity of the sink actor's input queue, in messages.
const SINK_QUEUE: usize = 256;

/// How to run.
#[derive(Default)]
pub struct RunOptions {
    /// Set (by a signal handler) to drain and stop; created when absent.
    pub stop: Option<Arc<AtomicBool>>,
    /// Source-to-sink latency recorder (benchmarks): each row's write minus the creation instant
    /// of the record that produced it, in ns. The creation instant is the source's (Nexmark: the
    /// scheduled instant) or, for sources that give none (Kafka, files, stdin), the instant of
    /// the source actor's poll that read the record: the time spent inside the engine.
    pub latency: Option<Arc<dyn LatencyRecorder>>,
    /// Replaces the pipeline's sink (benchmarks: a discarding sink).
    pub sink_override: Option<Box<dyn Sink>>,
    /// Replaces the pipeline's source (benchmarks: a generator on the wall clock); it must
    /// produce records of the pipeline's schema.
    pub source_override: Option<Box<dyn Source>>,
    /// Counters to share with the caller (progress display); created when absent.
    pub counters: Option<Arc<SourceCounters>>,
    /// Readiness to share with the caller (what `/readyz` answers); created when absent.
    pub health: Option<Arc<Health>>,
    /// Test-only: stop (as a signal would) once this batch / epoch is committed, so tests can
    /// restart a pipeline from a checkpoint at a known point.
    pub stop_after: Option<u64>,
    /// Benchmarks: while this holds false, the actors skip recording metrics (the `[metrics]`
    /// endpoint stays up), so the cost of recording can be measured within one run; see
    /// [`Metrics::with_switch`]. No effect without `[metrics]`.
    pub metrics_switch: Option<Arc<AtomicBool>>,
    /// The forEach writers a `[sink] type = "foreach"` may name, by name (the `eddy` library
    /// registers them; the daemon has none).
    pub foreach: std::collections::BTreeMap<String, eddy_connectors::foreach::ForeachFactory>,
    /// Benchmarks: a real-time pipeline with one partition runs its partition actor on its own
    /// thread, as at higher parallelism, instead of chained into the source actor's thread
    /// ([`crate::source::Downstream::Chained`], the default), to measure what chaining saves.
    pub unchained: bool,
    /// Benchmarks: the planner makes the edge into the last chained aggregation an exchange
    /// although a forward edge would do ([`QueryPlan::force_exchange`]), to measure the
    /// exchange's own cost per record on the same query; at `parallelism` 1 there is no peer,
    /// so it changes nothing there. The run fails with [`RuntimeError::Unsupported`] (field
    /// `query`) when the query has no such edge. Not a pipeline field: no user sets it by
    /// accident.
    pub force_exchange: bool,
    /// The stall tracer ([`crate::stalls`], issue 28): each record's service time on its
    /// partition's thread, and the items slower than this threshold with their causes, in
    /// [`RunSummary::stalls`] and, with `[metrics]`, as `eddy_record_service_seconds` and
    /// `eddy_slow_records_total`. `None` (the default): no tracer, nothing measured.
    pub trace_stalls: Option<std::time::Duration>,
    /// Benchmarks (issue 28, part 3): a partition actor on a thread of its own whose input is
    /// empty polls it for this long, spinning on its core, before it blocks on the channel (which
    /// parks the thread after a few microseconds of crossbeam's own back-off). `None` (the
    /// default): it blocks at once. It spends the core while it spins, so it is not a pipeline
    /// field: `eddy-bench latency` measures it against the blocking receive in one run
    /// (bench/results/latency-stalls.md).
    pub spin_wait: Option<std::time::Duration>,
    /// One run of a shared Kafka group ([`crate::group`], issue 26): set by the group's driver,
    /// never by a caller of [`run_pipeline`] (which starts the driver for a pipeline with
    /// `[source] shared_group`).
    pub group: Option<crate::group::GroupRun>,
}

impl std::fmt::Debug for RunOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunOptions").finish_non_exhaustive()
    }
}

/// What a run did.
#[derive(Debug, Clone, Default)]
pub struct RunSummary {
    /// Records decoded.
    pub records: u64,
    /// Records that could not be decoded.
    pub malformed: u64,
    /// Records dropped as late.
    pub late: u64,
    /// Rows written to the sink.
    pub rows: u64,
    /// Batches / epochs committed.
    pub committed: u64,
    /// Number of partition actors.
    pub parallelism: usize,
    /// With [`RunOptions::trace_stalls`]: what the stall tracers of every partition actor saw.
    pub stalls: Option<crate::stalls::StallReport>,
}

/// Errors of a run.
#[derive(Debug, thiserror::Error)]
pub enum RuntimeError {
    /// The pipeline asks for something the runtime cannot do (yet); nothing was started.
    #[error("{field}: {why}")]
    Unsupported {
        /// The field.
        field: String,
        /// Why.
        why: String,
    },
    /// A source or sink could not be opened; nothing was started.
    #[error("{field}: {why}")]
    Open {
        /// The field (`source.path`, `sink.path`, ...).
        field: String,
        /// Why.
        why: String,
    },
    /// The checkpoint was written by a different query; nothing was started (exit 2).
    #[error("checkpoint.path: {0}")]
    IncompatibleCheckpoint(String),
    /// A failure while running.
    #[error("{0}")]
    Failed(String),
}

/// A Kafka connector that could not open: a setting librdkafka refuses is the pipeline's fault
/// (`field`); a broker that stays unreachable is a failure while running (exit 1).
fn kafka_open_error(field: &str, e: ConnectorError) -> RuntimeError {
    match e {
        ConnectorError::Config(why) => RuntimeError::Open { field: field.into(), why },
        other => RuntimeError::Failed(other.to_string()),
    }
}

/// Opens the sink at `field` of `spec`. `columns`: the rows' columns (the Delta sink's table
/// schema); `complete`: each batch replaces the table (the Delta sink under the complete output
/// mode).
fn open_sink(
    spec: &SinkSpec,
    field: &str,
    (real_time, complete): (bool, bool),
    columns: &[eddy_engine::schema::Field],
    pipeline: &str,
    stop: &AtomicBool,
) -> Result<Box<dyn Sink>, RuntimeError> {
    match spec {
        #[cfg(feature = "delta")]
        SinkSpec::Delta { path, partition_by } => {
            use eddy_connectors::delta::{DeltaSink, DeltaWrite};
            let write = if complete { DeltaWrite::Complete } else { DeltaWrite::Append };
            let opened = match (eddy_engine::spec::url_scheme(path), path.to_str()) {
                (Some(_), Some(url)) => DeltaSink::new_in_store(url, &Default::default(), columns, partition_by, write),
                _ => DeltaSink::new(path, columns, partition_by, write),
            };
            opened.map(|s| Box::new(s) as Box<dyn Sink>).map_err(|e| match e {
                // a store that cannot be reached (after its retries) or read is a failure while
                // running (exit 1), not the pipeline's fault
                ConnectorError::External(why) => RuntimeError::Failed(format!("{field}.path: {why}")),
                other => RuntimeError::Open { field: format!("{field}.path"), why: other.to_string() },
            })
        }
        #[cfg(not(feature = "delta"))]
        SinkSpec::Delta { .. } => {
            let _ = (columns, complete);
            Err(RuntimeError::Open {
                field: format!("{field}.type"),
                why: "this eddy was built without the delta sink (cargo feature \"delta\")".into(),
            })
        }
        SinkSpec::Files { path } => FilesSink::new(path, "batch")
            .map(|s| Box::new(s) as Box<dyn Sink>)
            .map_err(|e| RuntimeError::Open { field: format!("{field}.path"), why: e.to_string() }),
        SinkSpec::Stdout => Ok(Box::new(StdoutSink::new(real_time))),
        // the partition actors' writers take the rows ([`crate::foreach::ForeachTarget`])
        SinkSpec::Foreach { .. } => Ok(Box::new(crate::foreach::ForeachRowsSink)),
        SinkSpec::Kafka { bootstrap_servers, topic, key: _, properties, exactly_once } => {
            let config = KafkaSinkConfig {
                bootstrap_servers: bootstrap_servers.clone(),
                topic: topic.clone(),
                properties: properties.clone(),
                // One transactional id per pipeline and sink: a restarted run fences the old one.
                transactional_id: exactly_once.then(|| format!("eddy-{pipeline}-{field}")),
            };
            KafkaSink::new(field, config, &|| stop.load(Ordering::SeqCst))
                .map(|s| Box::new(s) as Box<dyn Sink>)
                .map_err(|e| kafka_open_error(&format!("{field}.properties"), e))
        }
    }
}

/// The decoder of a source's raw payloads, with room for `spare` computed columns. The files
/// and stdin sources give each file's CSV header (`Payload::Header`) before its lines.
fn new_decoder(format: Format, cfg: eddy_engine::decode::DecoderConfig, spare: usize) -> Decoder {
    match format {
        Format::Json => Decoder::Json(JsonDecoder::new(cfg).with_spare_columns(spare)),
        Format::Csv => Decoder::Csv(CsvDecoder::awaiting_header(cfg).with_spare_columns(spare)),
    }
}

/// Opens the source `spec` (named `field` in errors: `source`, `source[1]`); `needed`: the
/// decoded columns the query reads (a generator fills only these).
fn open_source(
    spec: &spec::SourceSpec,
    field: &str,
    needed: &[bool],
    health: &Arc<Health>,
    metrics: &Metrics,
    stop: &Arc<AtomicBool>,
) -> Result<Box<dyn Source>, RuntimeError> {
    Ok(match &spec.kind {
        SourceKind::Files { path, max_files_per_trigger, follow, partial_line_timeout, on_unreadable_file } => {
            Box::new(
                FilesSource::new(path, *max_files_per_trigger, *follow, spec.format == Format::Csv)
                    .map_err(|e| RuntimeError::Open { field: format!("{field}.path"), why: e.to_string() })?
                    .with_max_record_bytes(spec.max_record_bytes)
                    .with_partial_line_timeout(std::time::Duration::from_micros(
                        partial_line_timeout.micros().max(0) as u64
                    ))
                    .with_on_unreadable_file(*on_unreadable_file),
            )
        }
        SourceKind::Stdin => Box::new(
            StdinSource::new(spec.format == Format::Csv, spec.max_record_bytes)
                .map_err(|e| RuntimeError::Open { field: field.into(), why: e.to_string() })?,
        ),
        SourceKind::Nexmark { table, events, rate, seed } => {
            let table = match table {
                spec::NexmarkTable::Bid => NexmarkTable::Bid,
                spec::NexmarkTable::Auction => NexmarkTable::Auction,
                spec::NexmarkTable::Person => NexmarkTable::Person,
            };
            Box::new(
                NexmarkSource::new(table, *events, *rate, *seed)
                    .map_err(|e| RuntimeError::Open { field: format!("{field}.rate"), why: e.to_string() })?
                    .with_needed_columns(needed),
            )
        }
        SourceKind::Kafka { .. } => {
            let config = kafka_config(&spec.kind).ok_or_else(|| RuntimeError::Failed("not a kafka source".into()))?;
            let reporter = KafkaReporter::new(health.clone(), metrics.clone());
            let stop = stop.clone();
            Box::new(
                KafkaSource::new(config, Box::new(reporter), &move || stop.load(Ordering::SeqCst))
                    .map_err(|e| kafka_open_error(&format!("{field}.properties"), e))?,
            )
        }
    })
}

/// The Kafka source settings of `kind` (`None`: not a kafka source).
pub(crate) fn kafka_config(kind: &SourceKind) -> Option<KafkaSourceConfig> {
    match kind {
        SourceKind::Kafka { bootstrap_servers, topics, group_id, starting_offsets, properties, .. } => {
            Some(KafkaSourceConfig {
                bootstrap_servers: bootstrap_servers.clone(),
                topics: topics.clone(),
                group_id: group_id.clone(),
                starting_offsets: *starting_offsets,
                properties: properties.clone(),
            })
        }
        _ => None,
    }
}

/// The number of partition actors `pipeline` runs with, as [`run_pipeline`] decides it before
/// starting anything (`eddy validate` and `eddy explain` check it too): its `parallelism`, or by
/// default the number of cores (at most [`spec::MAX_PARALLELISM`]), or 1 for a query whose
/// chain runs in one partition actor (one that would need a second exchange).
///
/// # Errors
/// [`RuntimeError::Unsupported`] when the query cannot be planned, or at `parallelism` when it
/// is above 1 for a query whose chain runs in one partition actor (exit 2 for the CLI).
pub fn planned_parallelism(pipeline: &Pipeline) -> Result<usize, RuntimeError> {
    let plan = QueryPlan::new(pipeline).map_err(|e| RuntimeError::Unsupported { field: e.field, why: e.why })?;
    if crate::group::is_shared(pipeline) {
        // one partition actor per assigned input partition, however many the group assigns
        crate::group::check(pipeline, &plan)?;
        return Ok(1);
    }
    parallelism_of(pipeline, &plan)
}

/// [`planned_parallelism`] of an already built plan.
fn parallelism_of(pipeline: &Pipeline, plan: &QueryPlan) -> Result<usize, RuntimeError> {
    let single = plan.single_partition();
    let parallelism = pipeline
        .parallelism
        .unwrap_or_else(|| match single {
            Some(_) => 1,
            None => thread::available_parallelism().map(|n| n.get()).unwrap_or(1).min(spec::MAX_PARALLELISM),
        })
        .max(1);
    match single.filter(|_| parallelism > 1) {
        Some(why) => {
            Err(RuntimeError::Unsupported { field: "parallelism".into(), why: format!("{parallelism}: {why}") })
        }
        None => Ok(parallelism),
    }
}

/// Runs `pipeline` to its end: the input is exhausted (finite sources) or a stop was asked.
///
/// # Errors
/// [`RuntimeError::Open`] / [`RuntimeError::Unsupported`] before anything started (exit 2 for the
/// CLI when it is the pipeline's fault); [`RuntimeError::Failed`] when something failed while
/// running (exit 1).
pub fn run_pipeline(pipeline: &Pipeline, opts: RunOptions) -> Result<RunSummary, RuntimeError> {
    let mut plan = QueryPlan::new(pipeline).map_err(|e| RuntimeError::Unsupported { field: e.field, why: e.why })?;
    if opts.force_exchange && !plan.force_exchange() {
        return Err(RuntimeError::Unsupported {
            field: "query".into(),
            why: "force_exchange: no chained aggregation whose edge could be forced through an exchange (none, one \
                  exchanged already, or one that must run in one partition actor)"
                .into(),
        });
    }
    for warning in pipeline.warnings() {
        tracing::warn!(pipeline = %pipeline.name, "{warning}");
    }
    let real_time = pipeline.mode == Mode::RealTime;
    let exchange_at = plan.exchange();
    // A checkpoint location this build cannot use (`s3://` without the `s3` feature, another
    // URL) is refused before anything starts; the store itself is opened with the restore.
    if let Some(c) = &pipeline.checkpoint {
        checkpoint::store::check_location(&c.path.join(&pipeline.name))
            .map_err(|e| RuntimeError::Open { field: "checkpoint.path".into(), why: e.to_string() })?;
    }
    if opts.group.is_none() && crate::group::is_shared(pipeline) {
        return crate::group::run_shared_group(pipeline, opts);
    }
    let mut group = opts.group;
    let parallelism = match &group {
        Some(g) => g.partitions.len(),
        None => parallelism_of(pipeline, &plan)?,
    };

    let health = opts.health.unwrap_or_default();
    let (metrics, _server) = match (&pipeline.metrics, &group) {
        // a shared group's driver serves the endpoint across its runs
        (_, Some(g)) => (g.metrics.clone(), None),
        (_, None) => {
            let names: Vec<String> = std::iter::once(pipeline.source_name.clone())
                .chain(pipeline.more_sources.iter().map(|s| s.name.clone()))
                .collect();
            serve_metrics(pipeline, parallelism, &names, opts.metrics_switch.as_ref(), &health)?
        }
    };
    let stop = opts.stop.unwrap_or_default();
    let frontier_delay = match &pipeline.query {
        QuerySpec::RollingWindow { frontier_delay, .. } => Some(*frontier_delay),
        _ => None,
    };

    // CSV lines are decoded under a header line, which a Kafka message does not have.
    if pipeline.source.format == Format::Csv && matches!(pipeline.source.kind, SourceKind::Kafka { .. }) {
        return Err(RuntimeError::Open {
            field: "source.format".into(),
            why: "\"csv\" needs a header line, which a kafka source does not have; expected \"json\"".into(),
        });
    }
    let open = |spec: &spec::SourceSpec, field: &str, needed: &[bool]| {
        open_source(spec, field, needed, &health, &metrics, &stop)
    };
    let source: Box<dyn Source> = match opts.source_override {
        Some(s) => s,
        None => {
            open(&pipeline.source, if pipeline.more_sources.is_empty() { "source" } else { "source[0]" }, &plan.needed)?
        }
    };
    let mut inputs: Vec<Option<SourceInput>> = vec![None];
    for (i, (s, sp)) in pipeline.more_sources.iter().zip(&plan.more_sources).enumerate() {
        let field = format!("source[{}]", i + 1);
        if s.source.format == Format::Csv && matches!(s.source.kind, SourceKind::Kafka { .. }) {
            return Err(RuntimeError::Open {
                field: format!("{field}.format"),
                why: "\"csv\" needs a header line, which a kafka source does not have; expected \"json\"".into(),
            });
        }
        let cfg = sp.decoder_config(s.source.timestamp_unit);
        let spare = sp.steps.spare_columns();
        inputs.push(Some(SourceInput {
            source: open(&s.source, &field, &sp.needed)?,
            decoder: Some(new_decoder(s.source.format, cfg, spare)),
            steps: sp.steps.clone(),
        }));
    }
    let mut source = source;
    // a static table is read whole before anything starts (exit 1 naming it when it cannot be)
    let join =
        plan.join.as_ref().map(|j| crate::join::TableJoin::open(j, &pipeline.tables[j.spec.table])).transpose()?;
    let decoder_cfg = plan.decoder_config(pipeline.source.timestamp_unit);
    // room in each decoded record for the source steps' computed columns
    let spare = plan.source_steps.spare_columns();
    let decoder = Some(new_decoder(pipeline.source.format, decoder_cfg, spare));
    // Files, stdin and Nexmark are connected once opened; the Kafka source is connected once
    // opened too, and reports to `health` when its broker becomes unreachable or reachable again.
    health.set_sources_connected(true);

    let foreach = match &pipeline.sink {
        SinkSpec::Foreach { name } => match opts.foreach.get(name) {
            Some(factory) => Some((name.as_str(), factory.clone())),
            None => {
                let registered: Vec<&str> = opts.foreach.keys().map(String::as_str).collect();
                return Err(RuntimeError::Open {
                    field: "sink.name".into(),
                    why: format!(
                        "no forEach writer is registered as {name:?} (registered: {registered:?}); forEach writers are registered through the eddy library"
                    ),
                });
            }
        },
        _ => None,
    };
    let complete = matches!(pipeline.query, QuerySpec::WindowAggregate { output_mode: spec::OutputMode::Complete, .. });
    let mut sink = match opts.sink_override {
        Some(s) => s,
        None => {
            open_sink(&pipeline.sink, "sink", (real_time, complete), &pipeline.output_schema(), &pipeline.name, &stop)?
        }
    };
    let mut late = match &pipeline.late_sink {
        Some(s) => {
            let columns = pipeline.query_schema().fields().to_vec();
            Some((
                open_sink(s, "late_sink", (real_time, false), &columns, &pipeline.name, &stop)?,
                plan.input_names.clone(),
            ))
        }
        None => None,
    };
    let mut dead_letter = match &pipeline.dead_letter {
        Some(s) => {
            let text = |name: &str| eddy_engine::schema::Field {
                name: name.into(),
                data_type: eddy_engine::schema::DataType::String,
            };
            let columns = [text("reason"), text("source"), text("record")];
            Some(open_sink(s, "dead_letter", (real_time, false), &columns, &pipeline.name, &stop)?)
        }
        None => None,
    };
    let key = match &pipeline.sink {
        SinkSpec::Kafka { key, .. } => {
            key.iter().filter_map(|k| plan.output_names.iter().position(|n| n == k)).collect()
        }
        _ => Vec::new(),
    };
    // The Kafka sink's `value` / `key` columns (PIPELINE.md, as Spark's Kafka sink).
    let message_columns = match &pipeline.sink {
        SinkSpec::Kafka { .. } => {
            let at = |c: &str| plan.output_names.iter().position(|n| n.eq_ignore_ascii_case(c));
            MessageColumns { value: at("value"), key: at("key") }
        }
        _ => MessageColumns::default(),
    };

    let clock: Arc<dyn Clock> = match pipeline.clock {
        ClockSpec::System => Arc::new(SystemClock),
        ClockSpec::Replay { .. } => Arc::new(ReplayClock),
    };
    let counters = opts.counters.unwrap_or_default();
    let units = Arc::new(UnitStarts::default());

    // Checkpoints: restore the newest usable one, move the source past it, settle the sinks.
    let router = Router::new(plan.routing_columns(), parallelism);
    // the restored largest event time of each source after the first
    let mut resume_sources: Vec<Option<i64>> = Vec::new();
    let by_input = group.as_mut().map(|g| std::mem::take(&mut g.routing));
    let (checkpointer, mut operators, resume) = match &pipeline.checkpoint {
        Some(c) => {
            let (ck, restored) = match group.take() {
                Some(g) => {
                    let restored = g.manifest.map(|manifest| checkpoint::Restored { manifest, operators: g.operators });
                    (g.checkpointer, restored)
                }
                None => restore_checkpoint(pipeline, c, parallelism, &plan, &router)?,
            };
            let committed = restored.as_ref().map(|r| r.manifest.epoch);
            // the checkpoint's application id, for the sinks that mark their commits (Delta)
            let mut sinks = std::iter::once(&pipeline.sink).chain(&pipeline.late_sink).chain(&pipeline.dead_letter);
            let app_id = match sinks.any(|s| matches!(s, SinkSpec::Delta { .. })) {
                true => Some(ck.application_id().map_err(|e| RuntimeError::Failed(format!("checkpoint: {e}")))?),
                false => None,
            };
            for s in std::iter::once(&mut sink).chain(late.as_mut().map(|(s, _)| s)).chain(dead_letter.as_mut()) {
                if let Some(id) = &app_id {
                    s.use_application_id(id);
                }
                s.recover(committed).map_err(|e| RuntimeError::Failed(format!("recovering the sink: {e}")))?;
            }
            match restored {
                Some(r) => {
                    if let Some(offset) = &r.manifest.source {
                        source.seek(&offset.into()).map_err(|e| RuntimeError::Failed(e.to_string()))?;
                    }
                    // the sources after the first, by name (the fingerprint has checked them)
                    for saved in &r.manifest.more_sources {
                        let at = plan.more_sources.iter().position(|s| s.name == saved.name);
                        if let (Some(i), Some(offset)) = (at, &saved.offset)
                            && let Some(input) = inputs.get_mut(i + 1).and_then(Option::as_mut)
                        {
                            input.source.seek(&offset.into()).map_err(|e| {
                                RuntimeError::Failed(format!("source[{}] ({}): {e}", i + 1, saved.name))
                            })?;
                        }
                    }
                    resume_sources = plan
                        .more_sources
                        .iter()
                        .map(|s| {
                            r.manifest.more_sources.iter().find(|m| m.name == s.name).and_then(|m| m.max_event_time)
                        })
                        .collect();
                    (Some(ck), r.operators, Some((r.manifest.epoch, r.manifest.driver)))
                }
                None => (Some(ck), Vec::new(), None),
            }
        }
        None => (None, Vec::new(), None),
    };
    let first_epoch = resume.as_ref().map_or(0, |(e, _)| e + 1);

    let sink: SharedSink = Arc::new(std::sync::Mutex::new(sink));
    let names: Arc<[String]> = plan.output_names.clone().into();
    let (sink_tx, sink_rx) = bounded(SINK_QUEUE);
    let (commands_tx, commands_rx) = bounded(1024);
    let (coord_tx, coord_rx) = bounded(1024);
    let (to_source_tx, to_source_rx) = bounded(1024);
    // Processed batches go back to the source actor for reuse (at most `return_capacity` batches
    // in the channel); records too when the source reuses them, or when they are the decoder's
    // own (no join: a joined record is made by the join, of another width), for the decoder to
    // overwrite.
    let capacity =
        recycle::return_capacity(parallelism, PARTITION_QUEUE, crate::source::POLL_MAX, crate::source::BATCH);
    let (returns, spares) = recycle::channel(capacity, source.recycles_records() || join.is_none());
    let mut partition_txs = Vec::with_capacity(parallelism);
    // Flushes of rows / late records by any partition actor (idle epochs, `crate::source`).
    let output = Arc::new(AtomicU64::new(0));
    // One partition in real-time mode: its work runs on the source actor's thread.
    let chain = real_time && parallelism == 1 && !opts.unchained;
    let stall_report = Arc::new(std::sync::Mutex::new(crate::stalls::StallReport::default()));
    let mut chained = None;
    let mut handles = Vec::new();
    // Over several partition actors: a chain keyed otherwise after the exchange is split there,
    // its rows exchanged between the actors (`crate::exchange`; real-time: as they are emitted,
    // `crate::exchange::real_time`).
    let exchange_key = match exchange_at {
        Some(_) if parallelism > 1 => {
            let mut probe = plan.new_operator();
            probe.as_chain_mut().map(|c| c.exchange_key().to_vec())
        }
        _ => None,
    };
    let mut exchanges = match &exchange_key {
        Some(key) if !real_time => crate::exchange::exchanges(parallelism, key),
        _ => Vec::new(),
    };
    let mut real_time_exchanges = match &exchange_key {
        Some(key) if real_time => crate::exchange::real_time::real_time_exchanges(parallelism, key, first_epoch),
        _ => Vec::new(),
    };
    exchanges.reverse();
    real_time_exchanges.reverse();
    operators.reverse();
    for partition in 0..parallelism {
        // Chained: nothing reads the actor's input; the source hands messages to its task.
        let rx = if chain {
            crossbeam_channel::never()
        } else {
            let (tx, rx) = bounded(PARTITION_QUEUE);
            partition_txs.push(tx);
            rx
        };
        let snapshots = match &checkpointer {
            Some(ck) => Some(
                SnapshotWriter::start(ck.clone(), partition, parallelism, coord_tx.clone())
                    .map_err(|e| RuntimeError::Failed(format!("cannot start a snapshot writer: {e}")))?,
            ),
            None => None,
        };
        let mut rows = RowWriter::new(sink.clone(), names.clone(), key.clone(), opts.latency.clone(), metrics.clone())
            .with_message_columns(message_columns);
        if let Some((name, factory)) = &foreach {
            rows = rows.with_foreach(crate::foreach::ForeachTarget::new(factory(), name, partition));
        }
        let mut operator = operators.pop().unwrap_or_else(|| plan.new_operator());
        // a query without GROUP BY keys: every record goes to the actor owning the empty key
        if router.partition_of(router.hash_key(&GroupKey::of(&Record::new(Vec::new()), &[]))).0 == partition {
            operator.own_global_group();
        }
        let exchange = exchanges.pop();
        let real_time_exchange = real_time_exchanges.pop();
        if (exchange.is_some() || real_time_exchange.is_some())
            && !operator.as_chain_mut().is_some_and(|c| c.split_at_exchange())
        {
            return Err(RuntimeError::Failed("the exchange's chain cannot be split (a bug)".into()));
        }
        let actor = PartitionActor {
            partition,
            operator,
            exchange,
            real_time_exchange,
            snapshots,
            first_epoch,
            mode: plan.mode,
            clock: clock.clone(),
            input: rx,
            sink: sink_tx.clone(),
            rows,
            output_steps: plan.output_steps.clone(),
            query_steps: plan.query_steps.clone(),
            reads_processing_time: plan.reads_processing_time_after_sources(),
            coordinator: coord_tx.clone(),
            metrics: metrics.clone(),
            returns: Some(returns.clone()),
            output: output.clone(),
            stalls: opts.trace_stalls.map(|t| (t, stall_report.clone())),
            spin_wait: opts.spin_wait,
        };
        if chain {
            chained = Some(PartitionTask::new(actor));
            continue;
        }
        // A panic (a user aggregate's, or a bug) is reported as the run's failure (exit 1), so
        // the coordinator stops the run instead of waiting for this actor's batch forever.
        let report_to = coord_tx.clone();
        handles.push(
            thread::Builder::new()
                .name(format!("eddy-partition-{partition}"))
                .spawn(move || {
                    if let Err(panic) = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| actor.run())) {
                        let why = panic
                            .downcast_ref::<&str>()
                            .map(|s| (*s).to_string())
                            .or_else(|| panic.downcast_ref::<String>().cloned())
                            .unwrap_or_else(|| "a panic without a message".to_string());
                        let _ = report_to
                            .send(ToCoordinator::Failed(format!("partition actor {partition} panicked: {why}")));
                    }
                })
                .map_err(|e| RuntimeError::Failed(format!("cannot start a partition actor: {e}")))?,
        );
    }
    let sink_actor = SinkActor {
        sink,
        late,
        dead_letter,
        input_names: plan.input_names.clone(),
        query_output_names: plan.query_output_names.clone(),
        producers: parallelism + 1,
        input: sink_rx,
        coordinator: coord_tx.clone(),
        metrics: metrics.clone(),
        counters: Some(counters.clone()),
        commands: commands_rx,
        checkpointed: checkpointer.is_some(),
    };
    handles.push(
        thread::Builder::new()
            .name("eddy-sink".into())
            .spawn(move || sink_actor.run())
            .map_err(|e| RuntimeError::Failed(format!("cannot start the sink actor: {e}")))?,
    );
    let coordinator = Coordinator {
        partitions: parallelism,
        input: coord_rx,
        source: to_source_tx,
        stop: stop.clone(),
        units: units.clone(),
        counters: counters.clone(),
        unit_name: if real_time { "epoch" } else { "micro-batch" },
        metrics: metrics.clone(),
        sink: commands_tx,
        checkpointer: checkpointer.clone(),
        health: health.clone(),
    };
    let coord_handle = thread::Builder::new()
        .name("eddy-coordinator".into())
        .spawn(move || coordinator.run())
        .map_err(|e| RuntimeError::Failed(format!("cannot start the coordinator: {e}")))?;
    let source_checkpoint = checkpointer.is_some().then(|| coord_tx.clone());
    drop(coord_tx);

    let source_actor = SourceActor {
        source,
        decoder,
        router,
        checkpoint: source_checkpoint,
        resume,
        stop_after: opts.stop_after,
        inputs,
        source_names: if pipeline.more_sources.is_empty() {
            Vec::new()
        } else {
            std::iter::once(&pipeline.source_name)
                .chain(pipeline.more_sources.iter().map(|s| &s.name))
                .cloned()
                .collect()
        },
        active: 0,
        resume_sources,
        join,
        spares,
        plan,
        partitions: match chained {
            Some(task) => Downstream::Chained(Box::new(std::cell::RefCell::new(task))),
            None => Downstream::Actors(partition_txs),
        },
        sink: sink_tx,
        coordinator: to_source_rx,
        clock,
        trigger: pipeline.trigger,
        stop: stop.clone(),
        counters: counters.clone(),
        dead_letter: pipeline.dead_letter.is_some(),
        stamp_polls: opts.latency.is_some(),
        metrics,
        units,
        frontier_delay,
        output,
        by_input,
    };
    let source_result = thread::Builder::new()
        .name("eddy-source".into())
        .spawn(move || source_actor.run())
        .map_err(|e| RuntimeError::Failed(format!("cannot start the source actor: {e}")))?
        .join();
    for h in handles {
        if h.join().is_err() {
            stop.store(true, Ordering::SeqCst);
            return Err(RuntimeError::Failed("an actor panicked (a bug: please report it)".into()));
        }
    }
    let report = coord_handle.join().map_err(|_| RuntimeError::Failed("the coordinator panicked (a bug)".into()))?;
    // The run is over: not ready any more; the endpoint stops when `_server` drops.
    health.set_sources_connected(false);
    if let Some(f) = report.failure {
        return Err(RuntimeError::Failed(f));
    }
    match source_result {
        Ok(Ok(())) => {}
        Ok(Err(e)) => return Err(RuntimeError::Failed(e.to_string())),
        Err(_) => return Err(RuntimeError::Failed("the source actor panicked (a bug)".into())),
    }
    Ok(RunSummary {
        records: counters.records.load(Ordering::Relaxed),
        malformed: counters.malformed.load(Ordering::Relaxed),
        late: counters.late.load(Ordering::Relaxed),
        rows: report.rows,
        committed: report.committed,
        parallelism,
        stalls: opts.trace_stalls.map(|_| std::mem::take(&mut *stall_report.lock().unwrap_or_else(|p| p.into_inner()))),
    })
}

/// The metrics of `pipeline`'s `partitions` partition actors and `sources` (names, in pipeline
/// order), and its `[metrics]` endpoint serving them and `health`; disabled handles without
/// `[metrics]`. `switch`: [`RunOptions::metrics_switch`].
///
/// # Errors
/// [`RuntimeError::Open`] at `metrics.listen` when the endpoint cannot listen.
pub(crate) fn serve_metrics(
    pipeline: &Pipeline,
    partitions: usize,
    sources: &[String],
    switch: Option<&Arc<AtomicBool>>,
    health: &Arc<Health>,
) -> Result<(Metrics, Option<MetricsServer>), RuntimeError> {
    let Some(m) = &pipeline.metrics else { return Ok((Metrics::disabled(partitions), None)) };
    let (metrics, handle) = Metrics::with_sources(&pipeline.name, partitions, sources);
    let metrics = match switch {
        Some(switch) => metrics.with_switch(switch.clone()),
        None => metrics,
    };
    let server = MetricsServer::start(m.listen, Some(handle), health.clone())
        .map_err(|e| RuntimeError::Open { field: "metrics.listen".into(), why: format!("{}: {e}", m.listen) })?;
    Ok((metrics, Some(server)))
}

/// Opens the pipeline's checkpoint store (`<checkpoint.path>/<name>/`) and restores the newest
/// usable checkpoint, if any.
fn restore_checkpoint(
    pipeline: &Pipeline,
    spec: &spec::CheckpointSpec,
    parallelism: usize,
    plan: &QueryPlan,
    router: &Router,
) -> Result<(Checkpointer, Option<checkpoint::Restored>), RuntimeError> {
    let folder = spec.path.join(&pipeline.name);
    let store = checkpoint::store::open_store(&folder, true).map_err(|e| match e {
        // held by another process, or an object store that stays unreachable: not the file's fault
        checkpoint::CheckpointError::Locked { .. } | checkpoint::CheckpointError::Unreachable { .. } => {
            RuntimeError::Failed(e.to_string())
        }
        // a location that cannot be a store (an unsupported URL, `s3://` without the feature)
        e => RuntimeError::Open { field: "checkpoint.path".into(), why: e.to_string() },
    })?;
    let ck = Checkpointer::new(store, &pipeline.name, checkpoint::manifest::fingerprint(pipeline), spec.keep);
    let new_operator = || plan.new_operator();
    match checkpoint::restore(&ck, parallelism, &new_operator, router) {
        Ok(r) => Ok((ck, r)),
        Err(e @ checkpoint::CheckpointError::Incompatible { .. }) => {
            Err(RuntimeError::IncompatibleCheckpoint(e.to_string()))
        }
        Err(e) => Err(RuntimeError::Failed(format!("restoring the checkpoint: {e}"))),
    }
}
