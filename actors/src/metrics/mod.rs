//! Every metric of the runtime, defined once (issue 6): names with their units, descriptions,
//! labels, histogram buckets, and the handles the actors record into.
//!
//! - **One recorder per run.** When the pipeline has `[metrics]`, [`Metrics::new`] builds a
//!   `metrics-exporter-prometheus` recorder for this run (not the process-global one: several
//!   pipelines, or a benchmark's runs with metrics on and off, share one process), registers every
//!   series once and hands out the handles. Without `[metrics]`, [`Metrics::disabled`] hands out
//!   no-op handles: recording is a branch on an empty handle, nothing is stored or served.
//! - **Labels.** `pipeline` (the pipeline's `name`) on every series, as a global label of the
//!   recorder; `partition` (the partition actor, 0-based) on per-actor series; `source_partition`
//!   on Kafka series; `stage` on [`STAGE_LATENCY`].
//! - **Histograms** are real Prometheus histograms with the buckets [`BUCKETS`] (10 µs to 10 s,
//!   1-2.5-5 steps), never the exporter's default summaries (which drop samples and cannot be
//!   aggregated across series).
//! - **Cost on the hot path.** Handles are registered once, at start. Counters are added to once
//!   per message (up to 256 records) or per source poll, never per record; stage latencies are
//!   timed per message; the source-to-sink latency is recorded for one row in
//!   [`LATENCY_SAMPLE_EVERY`] of those that carry a creation instant, with one clock read per
//!   message of rows.
//! - **Not live yet.** Checkpointing and the Kafka source come with their own issues: their series
//!   ([`CHECKPOINT_DURATION`], [`CHECKPOINT_SIZE`], [`CHECKPOINT_AGE`], [`CHECKPOINT_FAILURES`],
//!   [`KAFKA_CONSUMER_LAG`]) are exported from the start with value 0 (the Kafka one with
//!   `source_partition="none"`) so dashboards and alerts resolve; those issues make them live.

pub mod kafka;
pub mod server;
#[cfg(test)]
mod tests;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use metrics::{Counter, Gauge, Histogram, Key, Label, Level, Metadata, Recorder, Unit};
use metrics_exporter_prometheus::{PrometheusBuilder, PrometheusHandle, PrometheusRecorder};

/// Records read from the source and decoded (counter).
pub const RECORDS_IN: &str = "eddy_records_in_total";
/// Rows written to the main sink (counter).
pub const RECORDS_OUT: &str = "eddy_records_out_total";
/// Input records dropped as late (counter; SEMANTICS.md "late").
pub const RECORDS_LATE: &str = "eddy_records_late_total";
/// Input that could not be decoded, sent to the dead letters (counter; PIPELINE.md names it).
pub const RECORDS_MALFORMED: &str = "eddy_records_malformed_total";
/// Files a files source could not read to their end (a corrupt or truncated `.gz`, an I/O
/// error), whose rest went to the dead letters (counter; `on_unreadable_file = "dead_letter"`).
pub const FILES_UNREADABLE: &str = "eddy_files_unreadable_total";
/// Source-to-sink latency of output rows (histogram, seconds).
pub const SOURCE_TO_SINK_LATENCY: &str = "eddy_source_to_sink_latency_seconds";
/// Time one message spends in one stage (histogram, seconds; label `stage`).
pub const STAGE_LATENCY: &str = "eddy_stage_latency_seconds";
/// Event-time watermark W (gauge, Unix seconds).
pub const WATERMARK: &str = "eddy_watermark_seconds";
/// Rolling-window frontier F = processing time - frontier delay (gauge, Unix seconds).
pub const ROLLING_FRONTIER: &str = "eddy_rolling_frontier_seconds";
/// Wall clock minus W (gauge, seconds).
pub const WATERMARK_LAG: &str = "eddy_watermark_lag_seconds";
/// Keys held by a partition actor (gauge; label `partition`).
pub const STATE_KEYS: &str = "eddy_state_keys";
/// Estimated state size of a partition actor (gauge, bytes; label `partition`).
pub const STATE_BYTES: &str = "eddy_state_bytes";
/// How late a partition actor's timers fire behind their due instant (histogram, seconds).
pub const TIMER_LAG: &str = "eddy_timer_lag_seconds";
/// Checkpoint duration (histogram, seconds; live with the checkpoint issue).
pub const CHECKPOINT_DURATION: &str = "eddy_checkpoint_duration_seconds";
/// Size of the last completed checkpoint (gauge, bytes; live with the checkpoint issue).
pub const CHECKPOINT_SIZE: &str = "eddy_checkpoint_size_bytes";
/// Age of the last completed checkpoint (gauge, seconds; live with the checkpoint issue).
pub const CHECKPOINT_AGE: &str = "eddy_checkpoint_age_seconds";
/// Failed checkpoints (counter; live with the checkpoint issue).
pub const CHECKPOINT_FAILURES: &str = "eddy_checkpoint_failures_total";
/// Kafka consumer lag per source partition (gauge, records; `source_partition="<topic>/<partition>"`,
/// reported about once a second by [`kafka::KafkaReporter`]; `"none"` at 0 without a Kafka source).
pub const KAFKA_CONSUMER_LAG: &str = "eddy_kafka_consumer_lag_records";
/// Input partitions assigned to this process in a shared Kafka group (gauge; issue 26).
pub const KAFKA_ASSIGNED_PARTITIONS: &str = "eddy_kafka_assigned_partitions";
/// Changes of this process's assignment in a shared Kafka group applied (counter; issue 26).
pub const KAFKA_REBALANCES: &str = "eddy_kafka_rebalances_total";
/// Time to restore the state of the partitions a shared group's run starts with (histogram,
/// seconds; issue 26): from the assignment to the run reading them.
pub const PARTITION_RESTORE: &str = "eddy_partition_restore_seconds";
/// Records of a shared Kafka group whose query key the Kafka default partitioner puts in another
/// partition than the one they came from (counter; issue 26): the input is not partitioned by
/// the query's key.
pub const KAFKA_MISROUTED: &str = "eddy_kafka_misrouted_records_total";
/// Messages waiting in a partition actor's input queue (gauge; label `partition`).
pub const QUEUE_DEPTH: &str = "eddy_queue_depth_messages";
/// Time the source waited on a full partition queue (histogram, seconds; label `partition`):
/// its `_sum` is the total time spent back-pressured.
pub const BACKPRESSURE: &str = "eddy_backpressure_seconds";
/// Rows dropped between the stages of chained stateful operators (counter; labels `partition`,
/// `reason`: `late` or `failed`), as Spark's per-operator `numRowsDroppedByWatermark`.
pub const CHAIN_ROWS_DROPPED: &str = "eddy_chain_rows_dropped_total";
/// Rows a partition actor sent across the exchange to other partition actors (counter; label
/// `partition`; `crate::exchange`).
pub const EXCHANGE_ROWS: &str = "eddy_exchange_rows_total";
/// Exchange sends that found the receiver's channel full (counter; label `partition`).
pub const EXCHANGE_FULL_SENDS: &str = "eddy_exchange_full_sends_total";
/// With the stall tracer on ([`crate::stalls`]): a record's service time on the thread that does
/// its work, from the end of the previous record's work to the end of its own, the sink's write
/// of its rows included (histogram, seconds; label `partition`; one record in 4 is sampled).
pub const RECORD_SERVICE: &str = "eddy_record_service_seconds";
/// With the stall tracer on: records (and work between records) slower than the tracer's
/// threshold, per cause noted during them (counter; labels `partition`, `cause`: the names of
/// [`eddy_engine::stall::Cause`], or `unattributed`).
pub const SLOW_RECORDS: &str = "eddy_slow_records_total";
/// Duration of a micro-batch or a real-time epoch, from its start to its commit (histogram, seconds).
pub const MICRO_BATCH_DURATION: &str = "eddy_micro_batch_duration_seconds";

/// The stages of [`STAGE_LATENCY`]: `source` (decoding, stamping and routing one poll of the
/// source), `partition` (the operator over one data message, up to 256 records), `sink` (writing
/// one message of rows), `commit` (committing one batch / epoch on every sink).
pub const STAGES: [&str; 4] = ["source", "partition", "sink", "commit"];

/// The sink records the source-to-sink latency of one row in this many (a uniform sample: the
/// quantiles hold, while `_count` is about rows / 4): each sample is a lock-free push, folded into
/// its bucket by the endpoint's upkeep once a second, and a row-per-record query at 300,000 rows/s
/// would otherwise pay that for every row.
pub const LATENCY_SAMPLE_EVERY: usize = 4;

/// Histogram bucket upper bounds in seconds: 10 µs to 10 s in 1-2.5-5 steps (+Inf is implied).
pub const BUCKETS: [f64; 19] = [
    0.000_01, 0.000_025, 0.000_05, 0.000_1, 0.000_25, 0.000_5, 0.001, 0.002_5, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25,
    0.5, 1.0, 2.5, 5.0, 10.0,
];

/// The kind of a metric.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Monotonic count (`_total`).
    Counter,
    /// A value that goes up and down.
    Gauge,
    /// Bucketed observations (`_bucket`, `_sum`, `_count`).
    Histogram,
}

/// One metric of the catalogue.
#[derive(Debug, Clone, Copy)]
pub struct MetricDef {
    /// The exported name (its unit is part of it).
    pub name: &'static str,
    /// Counter, gauge or histogram.
    pub kind: Kind,
    /// Its unit.
    pub unit: Unit,
    /// Labels besides `pipeline`.
    pub labels: &'static [&'static str],
    /// The `# HELP` text.
    pub help: &'static str,
}

const fn def(
    name: &'static str,
    kind: Kind,
    unit: Unit,
    labels: &'static [&'static str],
    help: &'static str,
) -> MetricDef {
    MetricDef { name, kind, unit, labels, help }
}

/// Every metric the runtime exports, with its description.
pub const CATALOG: [MetricDef; 30] = [
    def(RECORDS_IN, Kind::Counter, Unit::Count, &[], "Records read from the source and decoded."),
    def(RECORDS_OUT, Kind::Counter, Unit::Count, &[], "Rows written to the main sink."),
    def(RECORDS_LATE, Kind::Counter, Unit::Count, &[], "Input records dropped as late (behind the watermark)."),
    def(
        RECORDS_MALFORMED,
        Kind::Counter,
        Unit::Count,
        &[],
        "Input that could not be decoded (sent to the dead letters).",
    ),
    def(
        FILES_UNREADABLE,
        Kind::Counter,
        Unit::Count,
        &[],
        "Files that could not be read to their end; their rest was sent to the dead letters.",
    ),
    def(
        SOURCE_TO_SINK_LATENCY,
        Kind::Histogram,
        Unit::Seconds,
        &[],
        "Real-time mode: from a record's creation (generator schedule) or its read by the source to the write of \
         the rows it produced; one row in 4 is sampled.",
    ),
    def(
        STAGE_LATENCY,
        Kind::Histogram,
        Unit::Seconds,
        &["stage"],
        "Time one message spends in a stage: source (one poll decoded and routed), partition (one data message \
         through the operator), sink (one message of rows written), commit (one batch or epoch committed).",
    ),
    def(WATERMARK, Kind::Gauge, Unit::Seconds, &[], "Event-time watermark in Unix seconds (0: no watermark yet)."),
    def(
        ROLLING_FRONTIER,
        Kind::Gauge,
        Unit::Seconds,
        &[],
        "Rolling-window frontier (processing time minus the frontier delay) in Unix seconds (0: not a rolling query).",
    ),
    def(
        WATERMARK_LAG,
        Kind::Gauge,
        Unit::Seconds,
        &[],
        "Wall clock minus the watermark in seconds (0: no watermark yet).",
    ),
    def(
        STATE_KEYS,
        Kind::Gauge,
        Unit::Count,
        &["partition"],
        "Keys (groups, windows, dedup keys) held by a partition actor.",
    ),
    def(
        STATE_BYTES,
        Kind::Gauge,
        Unit::Bytes,
        &["partition"],
        "Estimated state size of a partition actor: keys times the bytes per key of its serialised state, \
         re-measured at most once a minute.",
    ),
    def(
        TIMER_LAG,
        Kind::Histogram,
        Unit::Seconds,
        &[],
        "System clock: how late a partition actor woke for its next timer (rolling-window expiry) behind the \
         timer's due instant.",
    ),
    def(
        CHECKPOINT_DURATION,
        Kind::Histogram,
        Unit::Seconds,
        &[],
        "Duration of a checkpoint (no samples until checkpointing exists).",
    ),
    def(CHECKPOINT_SIZE, Kind::Gauge, Unit::Bytes, &[], "Size of the last completed checkpoint (0: none)."),
    def(CHECKPOINT_AGE, Kind::Gauge, Unit::Seconds, &[], "Age of the last completed checkpoint (0: none configured)."),
    def(CHECKPOINT_FAILURES, Kind::Counter, Unit::Count, &[], "Checkpoints that failed."),
    def(
        KAFKA_CONSUMER_LAG,
        Kind::Gauge,
        Unit::Count,
        &["source_partition"],
        "Kafka consumer lag in records per source partition (source_partition=\"none\" without a Kafka source).",
    ),
    def(
        KAFKA_ASSIGNED_PARTITIONS,
        Kind::Gauge,
        Unit::Count,
        &[],
        "Input partitions this process holds in a shared Kafka consumer group.",
    ),
    def(
        KAFKA_REBALANCES,
        Kind::Counter,
        Unit::Count,
        &[],
        "Assignment changes of a shared Kafka consumer group applied.",
    ),
    def(
        PARTITION_RESTORE,
        Kind::Histogram,
        Unit::Seconds,
        &[],
        "Time to restore the assigned partitions' state before a shared group's run reads them.",
    ),
    def(
        KAFKA_MISROUTED,
        Kind::Counter,
        Unit::Count,
        &[],
        "Records whose query key Kafka's default partitioner puts in another partition than theirs.",
    ),
    def(QUEUE_DEPTH, Kind::Gauge, Unit::Count, &["partition"], "Messages waiting in a partition actor's input queue."),
    def(
        BACKPRESSURE,
        Kind::Histogram,
        Unit::Seconds,
        &["partition"],
        "Each wait of the source on a full partition queue; the sum is the time spent back-pressured.",
    ),
    def(
        MICRO_BATCH_DURATION,
        Kind::Histogram,
        Unit::Seconds,
        &[],
        "Duration of a micro-batch, or of a real-time epoch, from its start to its commit.",
    ),
    def(
        CHAIN_ROWS_DROPPED,
        Kind::Counter,
        Unit::Count,
        &["partition", "reason"],
        "Chained stateful operators: rows a partition actor dropped after the first stage, late at a later stage \
         (reason late) or refused by it or failed by the expressions between stages (reason failed).",
    ),
    def(
        EXCHANGE_ROWS,
        Kind::Counter,
        Unit::Count,
        &["partition"],
        "Exchange (micro-batch and real-time): rows a partition actor sent to the other partition actors.",
    ),
    def(
        EXCHANGE_FULL_SENDS,
        Kind::Counter,
        Unit::Count,
        &["partition"],
        "Exchange (micro-batch and real-time): sends of a partition actor that found the receiving actor's channel full \
         (back-pressure between partition actors).",
    ),
    def(
        RECORD_SERVICE,
        Kind::Histogram,
        Unit::Seconds,
        &["partition"],
        "Stall tracer on (eddy run --trace-stalls): a record's service time on the thread that does its work, the \
         sink's write of its rows included; one record in 4 is sampled (no samples with the tracer off).",
    ),
    def(
        SLOW_RECORDS,
        Kind::Counter,
        Unit::Count,
        &["partition", "cause"],
        "Stall tracer on: records, and work between records, slower than the tracer's threshold, per cause noted \
         during them (table_growth, buffer_growth, timer_rebuild, timer_burst, barrier, sink_write, descheduled, \
         unattributed).",
    ),
];

/// The handles of one partition actor.
#[derive(Debug, Clone)]
pub struct PartitionMetrics {
    /// [`STATE_KEYS`].
    pub state_keys: Gauge,
    /// [`STATE_BYTES`].
    pub state_bytes: Gauge,
    /// [`QUEUE_DEPTH`].
    pub queue_depth: Gauge,
    /// [`BACKPRESSURE`].
    pub backpressure: Histogram,
    /// [`CHAIN_ROWS_DROPPED`] `reason="late"`.
    pub chain_rows_late: Counter,
    /// [`CHAIN_ROWS_DROPPED`] `reason="failed"`.
    pub chain_rows_failed: Counter,
    /// [`EXCHANGE_ROWS`].
    pub exchange_rows: Counter,
    /// [`EXCHANGE_FULL_SENDS`].
    pub exchange_full_sends: Counter,
    /// [`RECORD_SERVICE`].
    pub record_service: Histogram,
    /// [`SLOW_RECORDS`], one per [`eddy_engine::stall::Cause::ALL`] in its order, then
    /// `unattributed`.
    pub slow_records: Box<[Counter]>,
}

/// Every handle of a run; cheap to clone (handles are shared pointers, or empty when disabled).
#[derive(Debug, Clone)]
pub struct Metrics {
    enabled: bool,
    /// While false, [`Metrics::enabled`] answers false (see [`Metrics::with_switch`]).
    recording: Option<Arc<AtomicBool>>,
    recorder: Option<Arc<PrometheusRecorder>>,
    /// [`RECORDS_IN`].
    pub records_in: Counter,
    /// [`RECORDS_OUT`].
    pub records_out: Counter,
    /// [`RECORDS_LATE`].
    pub records_late: Counter,
    /// [`RECORDS_MALFORMED`].
    pub records_malformed: Counter,
    /// [`FILES_UNREADABLE`].
    pub files_unreadable: Counter,
    /// [`SOURCE_TO_SINK_LATENCY`].
    pub source_to_sink_latency: Histogram,
    /// [`STAGE_LATENCY`] `stage="source"`.
    pub stage_source: Histogram,
    /// [`STAGE_LATENCY`] `stage="partition"`.
    pub stage_partition: Histogram,
    /// [`STAGE_LATENCY`] `stage="sink"`.
    pub stage_sink: Histogram,
    /// [`STAGE_LATENCY`] `stage="commit"`.
    pub stage_commit: Histogram,
    /// [`WATERMARK`].
    pub watermark: Gauge,
    /// [`ROLLING_FRONTIER`].
    pub rolling_frontier: Gauge,
    /// [`WATERMARK_LAG`].
    pub watermark_lag: Gauge,
    /// [`TIMER_LAG`].
    pub timer_lag: Histogram,
    /// [`CHECKPOINT_DURATION`].
    pub checkpoint_duration: Histogram,
    /// [`CHECKPOINT_SIZE`].
    pub checkpoint_size: Gauge,
    /// [`CHECKPOINT_AGE`].
    pub checkpoint_age: Gauge,
    /// [`CHECKPOINT_FAILURES`].
    pub checkpoint_failures: Counter,
    /// [`MICRO_BATCH_DURATION`].
    pub micro_batch_duration: Histogram,
    /// [`KAFKA_ASSIGNED_PARTITIONS`].
    pub kafka_assigned_partitions: Gauge,
    /// [`KAFKA_REBALANCES`].
    pub kafka_rebalances: Counter,
    /// [`PARTITION_RESTORE`].
    pub partition_restore: Histogram,
    /// [`KAFKA_MISROUTED`].
    pub kafka_misrouted: Counter,
    /// One per partition actor, by index.
    pub partitions: Vec<PartitionMetrics>,
    /// A pipeline of several sources: [`RECORDS_IN`] and [`RECORDS_MALFORMED`] of each source
    /// (label `source`: its name), in pipeline order ([`Metrics::records_in`] and
    /// [`Metrics::records_malformed`] are then the first's); empty with one source, whose series
    /// have no `source` label (as before several sources existed).
    pub sources: Vec<SourceMetrics>,
}

/// The counters of one source of several.
#[derive(Debug, Clone)]
pub struct SourceMetrics {
    /// [`RECORDS_IN`] `source="<name>"`.
    pub records_in: Counter,
    /// [`RECORDS_MALFORMED`] `source="<name>"`.
    pub records_malformed: Counter,
}

/// Where the handles come from: a recorder, or nothing (no-op handles).
struct Registrar<'a>(Option<&'a PrometheusRecorder>);

static METADATA: Metadata<'static> = Metadata::new(module_path!(), Level::INFO, Some(module_path!()));

impl Registrar<'_> {
    fn key(name: &'static str, labels: &[(&'static str, String)]) -> Key {
        Key::from_parts(name, labels.iter().map(|(k, v)| Label::new(*k, v.clone())).collect::<Vec<_>>())
    }

    fn counter(&self, name: &'static str, labels: &[(&'static str, String)]) -> Counter {
        self.0.map_or_else(Counter::noop, |r| r.register_counter(&Self::key(name, labels), &METADATA))
    }

    fn gauge(&self, name: &'static str, labels: &[(&'static str, String)]) -> Gauge {
        self.0.map_or_else(Gauge::noop, |r| r.register_gauge(&Self::key(name, labels), &METADATA))
    }

    fn histogram(&self, name: &'static str, labels: &[(&'static str, String)]) -> Histogram {
        self.0.map_or_else(Histogram::noop, |r| r.register_histogram(&Self::key(name, labels), &METADATA))
    }
}

impl Metrics {
    /// Builds a recorder for the pipeline `pipeline` with `partitions` partition actors, describes
    /// and registers every series (counters and gauges at 0, histograms empty), and returns the
    /// handles with the recorder's render handle (for `/metrics`).
    pub fn new(pipeline: &str, partitions: usize) -> (Metrics, PrometheusHandle) {
        Metrics::with_sources(pipeline, partitions, &[])
    }

    /// As [`Metrics::new`], for a pipeline of the sources named `sources` (in pipeline order):
    /// with several, [`RECORDS_IN`] and [`RECORDS_MALFORMED`] are one series per source, labelled
    /// `source` ([`Metrics::sources`]); with one or none, as [`Metrics::new`].
    pub fn with_sources(pipeline: &str, partitions: usize, sources: &[String]) -> (Metrics, PrometheusHandle) {
        let builder = PrometheusBuilder::new().add_global_label("pipeline", pipeline);
        // `set_buckets` fails only on an empty list; BUCKETS is not empty.
        let builder = match builder.set_buckets(&BUCKETS) {
            Ok(b) => b,
            Err(_) => PrometheusBuilder::new().add_global_label("pipeline", pipeline),
        };
        let recorder = builder.build_recorder();
        for d in &CATALOG {
            match d.kind {
                Kind::Counter => recorder.describe_counter(d.name.into(), Some(d.unit), d.help.into()),
                Kind::Gauge => recorder.describe_gauge(d.name.into(), Some(d.unit), d.help.into()),
                Kind::Histogram => recorder.describe_histogram(d.name.into(), Some(d.unit), d.help.into()),
            }
        }
        let handle = recorder.handle();
        let mut m = Metrics::register(&Registrar(Some(&recorder)), partitions, sources);
        // Kafka: one placeholder series until a Kafka source reports its partitions.
        Registrar(Some(&recorder)).gauge(KAFKA_CONSUMER_LAG, &[("source_partition", "none".into())]).set(0.0);
        m.enabled = true;
        m.recorder = Some(Arc::new(recorder));
        // Counters and gauges exist from the start (value 0), so every series is exported.
        for c in [
            &m.records_in,
            &m.records_out,
            &m.records_late,
            &m.records_malformed,
            &m.files_unreadable,
            &m.checkpoint_failures,
            &m.kafka_rebalances,
            &m.kafka_misrouted,
        ]
        .into_iter()
        .chain(m.sources.iter().flat_map(|s| [&s.records_in, &s.records_malformed]))
        {
            c.absolute(0);
        }
        for g in [
            &m.kafka_assigned_partitions,
            &m.watermark,
            &m.rolling_frontier,
            &m.watermark_lag,
            &m.checkpoint_size,
            &m.checkpoint_age,
        ] {
            g.set(0.0);
        }
        for p in &m.partitions {
            p.state_keys.set(0.0);
            p.state_bytes.set(0.0);
            p.queue_depth.set(0.0);
            p.chain_rows_late.absolute(0);
            p.chain_rows_failed.absolute(0);
            p.exchange_rows.absolute(0);
            p.exchange_full_sends.absolute(0);
        }
        handle.run_upkeep();
        (m, handle)
    }

    /// No-op handles for `partitions` partition actors: nothing is recorded.
    pub fn disabled(partitions: usize) -> Metrics {
        Metrics::register(&Registrar(None), partitions, &[])
    }

    fn register(r: &Registrar<'_>, partitions: usize, source_names: &[String]) -> Metrics {
        let stage = |s: &str| r.histogram(STAGE_LATENCY, &[("stage", s.to_string())]);
        let sources: Vec<SourceMetrics> = match source_names {
            [] | [_] => Vec::new(),
            several => several
                .iter()
                .map(|n| {
                    let l = [("source", n.clone())];
                    SourceMetrics {
                        records_in: r.counter(RECORDS_IN, &l),
                        records_malformed: r.counter(RECORDS_MALFORMED, &l),
                    }
                })
                .collect(),
        };
        Metrics {
            enabled: false,
            recording: None,
            recorder: None,
            records_in: sources.first().map_or_else(|| r.counter(RECORDS_IN, &[]), |s| s.records_in.clone()),
            records_out: r.counter(RECORDS_OUT, &[]),
            records_late: r.counter(RECORDS_LATE, &[]),
            records_malformed: sources
                .first()
                .map_or_else(|| r.counter(RECORDS_MALFORMED, &[]), |s| s.records_malformed.clone()),
            files_unreadable: r.counter(FILES_UNREADABLE, &[]),
            source_to_sink_latency: r.histogram(SOURCE_TO_SINK_LATENCY, &[]),
            stage_source: stage(STAGES[0]),
            stage_partition: stage(STAGES[1]),
            stage_sink: stage(STAGES[2]),
            stage_commit: stage(STAGES[3]),
            watermark: r.gauge(WATERMARK, &[]),
            rolling_frontier: r.gauge(ROLLING_FRONTIER, &[]),
            watermark_lag: r.gauge(WATERMARK_LAG, &[]),
            timer_lag: r.histogram(TIMER_LAG, &[]),
            checkpoint_duration: r.histogram(CHECKPOINT_DURATION, &[]),
            checkpoint_size: r.gauge(CHECKPOINT_SIZE, &[]),
            checkpoint_age: r.gauge(CHECKPOINT_AGE, &[]),
            checkpoint_failures: r.counter(CHECKPOINT_FAILURES, &[]),
            micro_batch_duration: r.histogram(MICRO_BATCH_DURATION, &[]),
            kafka_assigned_partitions: r.gauge(KAFKA_ASSIGNED_PARTITIONS, &[]),
            kafka_rebalances: r.counter(KAFKA_REBALANCES, &[]),
            partition_restore: r.histogram(PARTITION_RESTORE, &[]),
            kafka_misrouted: r.counter(KAFKA_MISROUTED, &[]),
            partitions: (0..partitions)
                .map(|p| {
                    let l = [("partition", p.to_string())];
                    PartitionMetrics {
                        state_keys: r.gauge(STATE_KEYS, &l),
                        state_bytes: r.gauge(STATE_BYTES, &l),
                        queue_depth: r.gauge(QUEUE_DEPTH, &l),
                        backpressure: r.histogram(BACKPRESSURE, &l),
                        chain_rows_late: r.counter(
                            CHAIN_ROWS_DROPPED,
                            &[("partition", p.to_string()), ("reason", "late".to_string())],
                        ),
                        chain_rows_failed: r.counter(
                            CHAIN_ROWS_DROPPED,
                            &[("partition", p.to_string()), ("reason", "failed".to_string())],
                        ),
                        exchange_rows: r.counter(EXCHANGE_ROWS, &l),
                        exchange_full_sends: r.counter(EXCHANGE_FULL_SENDS, &l),
                        record_service: r.histogram(RECORD_SERVICE, &l),
                        slow_records: eddy_engine::stall::Cause::ALL
                            .iter()
                            .map(|c| c.name())
                            .chain(["unattributed"])
                            .map(|cause| {
                                r.counter(SLOW_RECORDS, &[("partition", p.to_string()), ("cause", cause.to_string())])
                            })
                            .collect(),
                    }
                })
                .collect(),
            sources,
        }
    }

    /// Whether a recorder stands behind the handles and recording is switched on (callers skip
    /// clock reads and recording otherwise). One relaxed atomic load when a switch is set.
    pub fn enabled(&self) -> bool {
        self.enabled && self.recording.as_ref().is_none_or(|r| r.load(Ordering::Relaxed))
    }

    /// Lets `switch` pause recording: while it holds false, [`Metrics::enabled`] is false, so the
    /// actors skip their clock reads and recording (the endpoint stays up and keeps serving the
    /// values recorded so far). For benchmarks: the cost of recording, measured within one run
    /// by flipping the switch (`eddy-bench metrics`).
    #[must_use]
    pub fn with_switch(mut self, switch: Arc<AtomicBool>) -> Metrics {
        self.recording = Some(switch);
        self
    }

    /// The consumer-lag gauge of one Kafka source partition (registered on first use; a no-op
    /// handle when disabled).
    pub fn kafka_consumer_lag(&self, source_partition: &str) -> Gauge {
        Registrar(self.recorder.as_deref()).gauge(KAFKA_CONSUMER_LAG, &[("source_partition", source_partition.into())])
    }
}

/// Microseconds (the engine's `Timestamp` unit) to seconds.
pub fn micros_to_seconds(us: i64) -> f64 {
    us as f64 / 1e6
}

/// Readiness shared by the runtime and the HTTP endpoint: `/readyz` answers 200 when every source
/// is connected and the last checkpoint did not fail.
#[derive(Debug, Default)]
pub struct Health {
    sources_connected: AtomicBool,
    checkpoint_failing: AtomicBool,
}

impl Health {
    /// Sets whether every source is connected (files / stdin / Nexmark: opened; the Kafka source
    /// will clear it while its broker is unreachable).
    pub fn set_sources_connected(&self, connected: bool) {
        self.sources_connected.store(connected, Ordering::SeqCst);
    }

    /// Sets whether the last checkpoint failed (the checkpoint issue sets it).
    pub fn set_checkpoint_failing(&self, failing: bool) {
        self.checkpoint_failing.store(failing, Ordering::SeqCst);
    }

    /// `None` when ready; otherwise why not.
    pub fn not_ready_reason(&self) -> Option<&'static str> {
        if !self.sources_connected.load(Ordering::SeqCst) {
            Some("a source is not connected")
        } else if self.checkpoint_failing.load(Ordering::SeqCst) {
            Some("the last checkpoint failed")
        } else {
            None
        }
    }
}
