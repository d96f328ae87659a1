//! The pipeline file (PIPELINE.md): parsing, validation and the output schema.
//!
//! A pipeline file is TOML. It is read in three steps:
//!
//! 1. `parse.rs`: the text becomes a TOML table (syntax errors name the line and column), the
//!    `--set` overrides are applied to it (`overrides.rs`), and it is deserialized into the raw
//!    model (`model.rs`: every field optional, unknown fields refused with their path).
//! 2. `validate.rs` (top level, watermark, clock, checkpoint, metrics), `source.rs`, `sink.rs`,
//!    `query.rs` (query types, windows, output modes) and `measure.rs`: the raw model becomes the
//!    validated [`Pipeline`] below, with defaults filled in, durations parsed, and every column
//!    reference resolved against the schema; `paths.rs` refuses two outputs writing into one
//!    folder (or one inside another). Every error is a [`SpecError`] naming the field path, what
//!    was given and what is allowed.
//! 3. `output.rs`: the output schema (column names and types, in order) as SEMANTICS.md gives it,
//!    with Spark's default measure names and result types.
//!
//! Nothing here reads the clock, the environment or the network; [`load_pipeline`] reads one file
//! (and the working directory, to compare an absolute output folder with a relative one).
//!
//! ## Where validation and Spark 4.3 differ (pyspark checked)
//!
//! - `sum` / `avg` / the stddev and variance family / `approx_percentile` of a STRING column,
//!   and `sum` / `avg` of a TIMESTAMP column, are refused; Spark 4.3 accepts them by an implicit
//!   cast to DOUBLE (a non-numeric string then fails the query; a timestamp counts as seconds).
//! - A session window with an empty `group_by` is accepted; Spark refuses it ("Global
//!   aggregation with session window in streaming query is not supported").
//! - A duration with a fraction of seconds finer than a microsecond (`"1.0000005 seconds"`) is
//!   refused; Spark truncates it to whole microseconds. (A session window's `gap_column` value
//!   spelled so drops its record, as any gap that does not parse.)
//! - Everything else that Spark refuses at analysis time is refused here with the same bound:
//!   `slide <= size`, `|start| < slide`, percentages in [0, 1], `0 < accuracy <= i32::MAX`,
//!   the HLL++ precision bound on `rsd`, append needing a watermark on the window column,
//!   update refused for session windows, `within_watermark` needing a watermark.

mod error;
mod exprs;
pub mod join_range;
mod measure;
mod model;
mod output;
mod overrides;
mod parse;
mod paths;
mod processor;
mod query;
mod sink;
pub use sink::url_scheme;
mod source;
mod sources;
mod sql_chain;
mod sql_join;
mod sql_join_aggregate;
mod sql_lateral;
mod sql_query;
mod sql_stream_join;
mod sql_union;
mod steps;
mod table;
mod validate;

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_measure;
#[cfg(test)]
mod tests_query;
#[cfg(test)]
mod tests_source;

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

pub use error::SpecError;
pub use measure::{AGGREGATES, spark_hll_precision};

/// Whether `s` calls an aggregate function anywhere (SQL.md's aggregates, `count_if`, and the
/// user's aggregate functions registered for this run): the select items `GROUP BY ALL` leaves
/// out of the grouping, as Spark's.
pub fn contains_aggregate(s: &crate::expr::Syntax) -> bool {
    sql_query::first_aggregate(s).is_some()
}
pub use output::{default_measure_name, measure_output_type, spark_double_literal};
pub use overrides::parse_set_arg;
pub use sql_chain::{ChainedQuery, chained_output};
pub use sql_query::{SqlQueryPlan, plan_sql_query};
pub use steps::{PipelineExpr, Step, schema_after};
pub use table::{DEFAULT_TABLE_MAX_BYTES, DEFAULT_TABLE_REFRESH_US};

pub use crate::watermark_union::WatermarkPolicy;

use crate::expr::SqlFrontEnd;
use crate::registry::Registry;
use crate::schema::{Field, Schema};
use crate::time::{Duration, TimeUnit, Timestamp};

/// Parses and validates a pipeline file's text (PIPELINE.md). Relative paths stay relative (see
/// [`Pipeline::resolve_paths`]).
///
/// # Errors
/// A [`SpecError`] for a TOML syntax error (`field` = `line L, column C`), an unknown field, a
/// value of the wrong TOML type, or any broken validation rule; among them two outputs (files
/// sinks' `path`, `checkpoint.path`) in one folder or one inside another, at the later field
/// (relative paths are compared with each other only: see [`load_pipeline`]).
pub fn parse_pipeline_str(text: &str) -> Result<Pipeline, SpecError> {
    parse_pipeline_with_overrides(text, &[])
}

/// As [`parse_pipeline_str`], after applying `--set FIELD=VALUE` overrides in order, each given
/// as `(FIELD, VALUE)`. FIELD is a dotted path (`source.path`, `query.window.size`,
/// `query.measures[0].alias`); a path through a missing table creates it. VALUE is read as a TOML
/// value when it parses as one (numbers, booleans, arrays, inline tables, quoted strings), else
/// taken as a string (`--set source.path=in/`, `--set trigger=1 second`); a value that parses as
/// a TOML date-time is kept as a string (timestamps are strings in pipeline files).
///
/// # Errors
/// As [`parse_pipeline_str`]; also a [`SpecError`] with `field = "--set"` for an empty or
/// malformed FIELD, or a FIELD that goes through a value that is not a table.
pub fn parse_pipeline_with_overrides(text: &str, overrides: &[(String, String)]) -> Result<Pipeline, SpecError> {
    let raw = parse::parse_raw(text, overrides)?;
    validate::validate(raw, None, &Registry::new())
}

/// As [`parse_pipeline_with_overrides`], reading the SQL expression fields (`source.filter`,
/// `source.select`, `sink.select`; SQL.md) with `front`: each is parsed, bound against the
/// schema of its input (the decoded schema for the source's, the query's output for the
/// sink's) and planned into [`Pipeline::source_steps`] / [`Pipeline::output_steps`].
/// [`parse_pipeline_str`] and [`load_pipeline`] refuse these fields; `eddy_sql` passes its
/// Spark SQL front end here.
///
/// # Errors
/// As [`parse_pipeline_with_overrides`]; also a [`SpecError`] at `source.filter`,
/// `source.select[i]` or `sink.select[i]` whose `given` holds the text and the line:column in
/// it where it does not parse or bind, is not BOOLEAN (a filter), or names an output column a
/// second time (ignoring case); at `late_sink.select` / `dead_letter.select` (refused there);
/// at `sink.select` for a Kafka sink's `value` or `key` column that is not STRING, and at
/// `sink.key` for a `key` list beside a `key` column.
pub fn parse_pipeline_with(
    text: &str,
    overrides: &[(String, String)],
    front: &dyn SqlFrontEnd,
) -> Result<Pipeline, SpecError> {
    parse_pipeline_in(text, overrides, front, &Registry::new())
}

/// As [`parse_pipeline_with`], resolving the names of user code in `registry` (`[query] type =
/// "processor"`, `name = NAME`).
///
/// # Errors
/// As [`parse_pipeline_with`]; also a [`SpecError`] at `query.name` for a processor that is not
/// registered (`allowed` lists the registered names).
pub fn parse_pipeline_in(
    text: &str,
    overrides: &[(String, String)],
    front: &dyn SqlFrontEnd,
    registry: &Registry,
) -> Result<Pipeline, SpecError> {
    let raw = parse::parse_raw(text, overrides)?;
    validate::validate(raw, Some(front), registry)
}

/// Reads the pipeline file at `path`, applies `overrides` (as [`parse_pipeline_with_overrides`])
/// and resolves relative paths against the folder holding the file (PIPELINE.md).
///
/// # Errors
/// A [`SpecError`] whose `field` is the file's path when it cannot be read (given: the I/O
/// error), else as [`parse_pipeline_with_overrides`], whose check of output folders is repeated
/// here with relative paths resolved, so that an absolute path is compared with relative ones.
pub fn load_pipeline(path: &Path, overrides: &[(String, String)]) -> Result<Pipeline, SpecError> {
    load(path, overrides, None, &Registry::new())
}

/// As [`load_pipeline`], reading the SQL expression fields with `front` (as
/// [`parse_pipeline_with`]).
///
/// # Errors
/// As [`load_pipeline`] and [`parse_pipeline_with`].
pub fn load_pipeline_with(
    path: &Path,
    overrides: &[(String, String)],
    front: &dyn SqlFrontEnd,
) -> Result<Pipeline, SpecError> {
    load(path, overrides, Some(front), &Registry::new())
}

/// As [`load_pipeline_with`], resolving the names of user code in `registry` (as
/// [`parse_pipeline_in`]).
///
/// # Errors
/// As [`load_pipeline_with`] and [`parse_pipeline_in`].
pub fn load_pipeline_in(
    path: &Path,
    overrides: &[(String, String)],
    front: &dyn SqlFrontEnd,
    registry: &Registry,
) -> Result<Pipeline, SpecError> {
    load(path, overrides, Some(front), registry)
}

fn load(
    path: &Path,
    overrides: &[(String, String)],
    front: Option<&dyn SqlFrontEnd>,
    registry: &Registry,
) -> Result<Pipeline, SpecError> {
    let text = std::fs::read_to_string(path).map_err(|e| {
        SpecError::new(
            path.display().to_string(),
            format!("a file that cannot be read ({e})"),
            "a readable UTF-8 pipeline file (TOML, PIPELINE.md)",
        )
    })?;
    let raw = parse::parse_raw(&text, overrides)?;
    let mut pipeline = validate::validate(raw, front, registry)?;
    let base = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    // Output folders are compared as absolute paths, so that `out` and `/here/out` are one. If
    // the working directory cannot be read, the relative base still compares relative paths
    // with each other (as validation already did).
    let absolute_base = std::path::absolute(&base).unwrap_or_else(|_| base.clone());
    paths::check_output_folders(&pipeline, Some(&absolute_base))?;
    pipeline.resolve_paths(&base);
    Ok(pipeline)
}

/// A validated pipeline: one source or several (each with its steps and an optional
/// watermark), one query, one sink, optional sinks for late and undecodable records, optional
/// checkpoint and metrics (PIPELINE.md).
#[derive(Debug, Clone, PartialEq)]
pub struct Pipeline {
    /// `name`: matches `[a-z0-9_-]+`; the metric label and checkpoint sub-folder.
    pub name: String,
    /// `mode`: default real-time.
    pub mode: Mode,
    /// `trigger`: micro-batch: the batch interval (default 0 s: next batch as soon as the last
    /// ends); real-time: the epoch (checkpoint) interval (default 1 s). ≥ 0 µs.
    pub trigger: Duration,
    /// `parallelism`: number of partition actors, 1 ..= [`MAX_PARALLELISM`]; `None`: the number
    /// of cores.
    pub parallelism: Option<usize>,
    /// `[clock]`: default the system clock.
    pub clock: ClockSpec,
    /// `[source]`, or the first `[[source]]`.
    pub source: SourceSpec,
    /// The name a SQL query reads [`Pipeline::source`] by: its `name`, default `source`.
    pub source_name: String,
    /// [`Pipeline::source`]'s `idle_timeout` (> 0): left out of the pipeline watermark after this
    /// long without a record (SEMANTICS.md "Several sources (union)"); `None` without one.
    pub idle_timeout: Option<Duration>,
    /// The `[[source]]` tables after the first, in file order; empty with one source. Their
    /// records, once through their own steps, have the columns of [`Pipeline::source`]'s (the
    /// union by name, PIPELINE.md `[query]`).
    pub more_sources: Vec<UnionSource>,
    /// `watermark_policy`: how the sources' watermarks combine; default min.
    pub watermark_policy: WatermarkPolicy,
    /// The source whose watermark the query's columns carry: 0 ([`Pipeline::source`]), or for
    /// a SQL `UNION ALL` the source its first branch reads. Spark's union takes its columns'
    /// metadata, the event-time watermark included, from its first child (`unionByName` of the
    /// sources in file order, or the first branch), so an aggregation over a union judges
    /// lateness only through that source's watermark: without one, nothing is late.
    pub event_time_source: usize,
    /// The source's `filter` then `select` ([`Step::Filter`], [`Step::Project`]), run on each
    /// decoded record before the clock and the watermark see it (SEMANTICS.md "Source filters
    /// and projections"); empty without them. Their output is [`Pipeline::query_schema`].
    pub source_steps: Vec<Step>,
    /// How many of [`Pipeline::source_steps`], first, the source's `filter` and `select` wrote;
    /// the others are a SQL query's ([`SqlQueryPlan::source_steps`]). A checkpoint's
    /// fingerprint compares the written ones (and [`Pipeline::query_sql`]), as the file gives them.
    pub written_source_steps: usize,
    /// `[[table]]`: the static tables, in file order (each named by the query).
    pub tables: Vec<TableSpec>,
    /// A SQL query's stream-static join, run on each record after [`Pipeline::source_steps`]
    /// (SEMANTICS.md "Joins"); `None` without one.
    pub join: Option<StaticJoinSpec>,
    /// `[watermark]`, or [`Pipeline::source`]'s `watermark = {...}`, if any.
    pub watermark: Option<WatermarkSpec>,
    /// A SQL query's WHERE conjuncts that mention the watermark column
    /// ([`SqlQueryPlan::watermarked_steps`]): filters run on each record after the watermark
    /// has seen it, before the operator; empty otherwise.
    pub query_steps: Vec<Step>,
    /// `[query] sql` as written, for a SQL query (planned into [`Pipeline::query`] and the
    /// steps); `None` for a structured query.
    pub query_sql: Option<String>,
    /// `[query]`.
    pub query: QuerySpec,
    /// Queries chained after [`Pipeline::query`], in order (an aggregation over an aggregating
    /// SQL subquery, SEMANTICS.md "Several stateful operators (chained)"); empty otherwise.
    pub then: Vec<ChainedQuery>,
    /// The sink's `select` (a [`Step::Project`]) over the query's output rows, run on every row
    /// just before it is written; empty without one.
    pub output_steps: Vec<Step>,
    /// `[sink]`.
    pub sink: SinkSpec,
    /// `[late_sink]`: where records dropped as late go (input rows, unchanged).
    pub late_sink: Option<SinkSpec>,
    /// `[dead_letter]`: where undecodable records go, as `{"reason", "source", "record"}`.
    pub dead_letter: Option<SinkSpec>,
    /// `[checkpoint]`: without it nothing survives a restart.
    pub checkpoint: Option<CheckpointSpec>,
    /// `[metrics]`: the Prometheus endpoint.
    pub metrics: Option<MetricsSpec>,
}

/// A `[[source]]` after the first (PIPELINE.md "Several sources, static tables, expressions and
/// SQL"): read, decoded and stepped on its own, its records then join the first source's in one
/// stream (the union by name: same column names and types, any order).
#[derive(Debug, Clone, PartialEq)]
pub struct UnionSource {
    /// `name`: matches `[a-z_][a-z0-9_]*`, unique among the sources and tables.
    pub name: String,
    /// The source.
    pub source: SourceSpec,
    /// Its `filter` then `select` (as [`Pipeline::source_steps`]), then a projection that puts
    /// its columns in the order of the union's (by name); their output has the schema of the
    /// first source's records after its steps.
    pub steps: Vec<Step>,
    /// How many of [`UnionSource::steps`], first, its `filter` and `select` wrote.
    pub written_steps: usize,
    /// Its `watermark = {...}` (the column's index is in the union's columns), if any.
    pub watermark: Option<WatermarkSpec>,
    /// Its `idle_timeout` (> 0), if any.
    pub idle_timeout: Option<Duration>,
}

/// Largest accepted `parallelism`. Each partition actor is an OS thread (two with a checkpoint:
/// its snapshot writer), with its stack and its allocator pages: about 300 KB of RSS per actor
/// before any state (`eddy run` of one record: 14 MB at parallelism 1, 25 MB at 64, 328 MB at
/// 1024). Key ranges beyond a few per core only add threads and context switches, and the
/// source actor routes every record alone; 256 is twice the cores of the largest common
/// machines. A larger value is refused (exit 2), and the default (the number of cores) is
/// capped here too.
pub const MAX_PARALLELISM: usize = 256;

impl Pipeline {
    /// Makes every relative path (`source.path`, the sinks' `path`, `checkpoint.path`) relative to
    /// `base` (the folder of the pipeline file). Absolute paths are left alone.
    pub fn resolve_paths(&mut self, base: &Path) {
        let fix = |p: &mut PathBuf| {
            if p.is_relative() {
                *p = base.join(&*p);
            }
        };
        for source in std::iter::once(&mut self.source).chain(self.more_sources.iter_mut().map(|s| &mut s.source)) {
            if let SourceKind::Files { path, .. } = &mut source.kind {
                fix(path);
            }
        }
        for t in &mut self.tables {
            fix(&mut t.path);
        }
        for sink in [Some(&mut self.sink), self.late_sink.as_mut(), self.dead_letter.as_mut()].into_iter().flatten() {
            match sink {
                SinkSpec::Files { path } => fix(path),
                // an object-store URL is no folder
                SinkSpec::Delta { path, .. } if url_scheme(path).is_none() => fix(path),
                _ => {}
            }
        }
        if let Some(c) = &mut self.checkpoint
            && url_scheme(&c.path).is_none()
        {
            fix(&mut c.path);
        }
    }

    /// The columns written to the sink, in order: the query's output ([`Pipeline::query_output_schema`])
    /// after the sink's `select`, if any.
    pub fn output_schema(&self) -> Vec<Field> {
        let query = Schema::new(self.query_output_schema());
        schema_after(&self.output_steps, &query).fields().to_vec()
    }

    /// The query's output columns, in order (SEMANTICS.md): window aggregate: `window` (if a
    /// window), the `group_by` columns (input types), the measures; rolling window: the
    /// `partition_by` columns, the frontier (TIMESTAMP), the measures; deduplicate: the query's
    /// input schema.
    pub fn query_output_schema(&self) -> Vec<Field> {
        sql_chain::chained_output(&self.query, &self.query_schema(), &self.then).fields().to_vec()
    }

    /// What a valid pipeline may still do that its author should know, one sentence each, for the
    /// log at start: a stream-stream join without a time range keeps every row of both sources
    /// (SEMANTICS.md "Joins": allowed, as Spark, and warned).
    pub fn warnings(&self) -> Vec<String> {
        let mut out = Vec::new();
        if let QuerySpec::StreamJoin(j) = &self.query
            && j.range.is_none()
        {
            out.push(
                "the stream-stream join has no time range between the sources' watermarked columns (a watermark on \
                 both sources and ON conditions bounding one's time by the other's): \
                 its state keeps every row of both sources and grows without bound"
                    .to_string(),
            );
        }
        out
    }

    /// The schema of decoded records (the source's, implied for Nexmark).
    pub fn input_schema(&self) -> &Schema {
        &self.source.schema
    }

    /// The schema of the records the query reads (its watermark, clock, keys, measures, and the
    /// late sink): the decoded schema after [`Pipeline::source_steps`], and after the join and
    /// its steps when there is one ([`StaticJoinSpec`]).
    pub fn query_schema(&self) -> Schema {
        let stream = schema_after(&self.source_steps, &self.source.schema);
        match &self.join {
            None => stream,
            Some(j) => schema_after(&j.steps, &j.output_schema(&stream)),
        }
    }
}

/// `[[table]]`: a static table read from files, for stream-static joins (PIPELINE.md "Several
/// sources, static tables, expressions and SQL").
#[derive(Debug, Clone, PartialEq)]
pub struct TableSpec {
    /// `name`: matches `[a-z_][a-z0-9_]*`, distinct from the source's and the other tables'.
    pub name: String,
    /// `path`: one file, or a folder whose files (not hidden: names not starting with `.` or
    /// `_`) are read in name order; relative to the pipeline file after
    /// [`Pipeline::resolve_paths`].
    pub path: PathBuf,
    /// `format`: default JSON; CSV files start with a header line.
    pub format: Format,
    /// `schema` (Spark DDL).
    pub schema: Schema,
    /// `refresh`: how often the files are checked for a change (then re-read); > 0, default
    /// [`DEFAULT_TABLE_REFRESH_US`] (1 minute).
    pub refresh: Duration,
    /// `max_bytes`: the largest total size of the table's files; a larger table is refused.
    /// ≥ 1, default [`DEFAULT_TABLE_MAX_BYTES`] (256 MiB).
    pub max_bytes: u64,
}

/// The kinds of stream-static join, as Spark runs them with the stream on the preserved side
/// (SEMANTICS.md "Joins"). The table on the left with INNER is [`JoinKind::Inner`]; with RIGHT
/// OUTER it is [`JoinKind::LeftOuter`] (the stream is the preserved side either way).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JoinKind {
    /// A record for each matching table row; none without a match.
    Inner,
    /// As inner, and a record with the table's columns NULL where no row matches.
    LeftOuter,
    /// The stream record once (its columns only) when some row matches.
    LeftSemi,
    /// The stream record once (its columns only) when no row matches.
    LeftAnti,
}

/// A stream-static join planned from a SQL query: each stream record (after
/// [`Pipeline::source_steps`]) is looked up in the table by its key and becomes 0..n records of
/// the stream's columns then the table's ([`StaticJoinSpec::output_schema`]), which `steps`
/// then filter and project as the query's own steps.
#[derive(Debug, Clone, PartialEq)]
pub struct StaticJoinSpec {
    /// The kind of join.
    pub kind: JoinKind,
    /// The table's position in [`Pipeline::tables`].
    pub table: usize,
    /// The table's schema (a copy of its [`TableSpec::schema`]).
    pub table_schema: Schema,
    /// The equality keys, one per `=` of ON. NULL keys never match.
    pub keys: Vec<StaticJoinKey>,
    /// The other conditions of ON (AND-ed), over the joined row: the stream's columns then all
    /// the table's, named as in [`StaticJoinSpec::names`] (also for semi and anti joins). A
    /// table row whose key matches joins only where it is true, as Spark's join condition
    /// (`ON s.k = t.k AND t.active`: a left outer join keeps the record, with NULLs, when no
    /// active row matches). `None` when ON holds keys only.
    pub condition: Option<PipelineExpr>,
    /// The conditions of ON that read the table's columns only (AND-ed), over the table's
    /// columns: a table row where it is not true joins nothing, so it is left out when the table
    /// is read, before its join keys are computed, as Spark's optimizer pushes such a filter
    /// below the join (a key that would fail on a row the filter drops does not fail). `None`
    /// when there are none.
    pub table_filter: Option<PipelineExpr>,
    /// Names of the joined columns, stream's then table's (semi and anti joins: the stream's
    /// only). A table column whose name a stream column has is named `qualifier.name`.
    pub names: Vec<String>,
    /// The query's steps on each joined record, before the watermark (as
    /// [`SqlQueryPlan::source_steps`] without a join).
    pub steps: Vec<Step>,
}

/// One equality key of a stream-static join (`s.k = t.k`, `lower(s.user) = t.name`): the value
/// of each side, an expression over that side's own columns (a bare column usually), both of
/// the type the key compares as: the wider of the two sides' types as Spark's coercion of `=`
/// makes it (an INT and a BIGINT compare as BIGINT, a BIGINT and a DOUBLE as DOUBLE), the
/// narrower side cast to it.
#[derive(Debug, Clone, PartialEq)]
pub struct StaticJoinKey {
    /// The stream's value, over the stream's columns (after the source's steps); named as
    /// written (`sku`, `lower(user)`).
    pub stream: PipelineExpr,
    /// The table's value, over the table's columns; named as written.
    pub table: PipelineExpr,
}

impl StaticJoinSpec {
    /// The schema of joined records given the stream's (after the source's steps): the
    /// stream's columns then the table's (semi and anti joins: the stream's only), named by
    /// [`StaticJoinSpec::names`].
    pub fn output_schema(&self, stream: &Schema) -> Schema {
        let types = stream.fields().iter().map(|f| f.data_type).chain(
            match self.kind {
                JoinKind::LeftSemi | JoinKind::LeftAnti => None,
                JoinKind::Inner | JoinKind::LeftOuter => Some(self.table_schema.fields().iter().map(|f| f.data_type)),
            }
            .into_iter()
            .flatten(),
        );
        Schema::new(self.names.iter().zip(types).map(|(n, t)| Field { name: n.clone(), data_type: t }).collect())
    }
}

/// Execution mode (SEMANTICS.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// `"real-time"` (the default): every record is processed and emitted as it arrives.
    RealTime,
    /// `"micro-batch"`: as Spark's micro-batch execution.
    MicroBatch,
}

/// `[clock]`: where processing time comes from (PIPELINE.md "Replay clock").
#[derive(Debug, Clone, PartialEq)]
pub enum ClockSpec {
    /// `type = "system"` (the default): the system clock.
    System,
    /// `type = "replay"`: processing time is the TIMESTAMP column `column` of each record.
    Replay {
        /// The column's name.
        column: String,
        /// The column's position in the input schema.
        index: usize,
        /// After the input ends, advance the clock to here.
        until: Option<Timestamp>,
    },
}

/// `[source]`.
#[derive(Debug, Clone, PartialEq)]
pub struct SourceSpec {
    /// The source type and its fields.
    pub kind: SourceKind,
    /// `format`: default JSON (Nexmark rows are generated, the field is refused there).
    pub format: Format,
    /// `schema` (Spark DDL), or the implied Nexmark schema ([`NexmarkTable::schema`]).
    pub schema: Schema,
    /// `timestamp_unit` of numeric timestamps: default ms.
    pub timestamp_unit: TimeUnit,
    /// `max_record_bytes` (files and stdin): a longer record (line, or CSV record) goes to the
    /// dead letters as its length and first bytes; ≥ 1, default [`DEFAULT_MAX_RECORD_BYTES`].
    /// Other sources: the default, unused.
    pub max_record_bytes: u64,
}

/// Default of a files or stdin source's `max_record_bytes`: 16 MiB (so one record, however
/// malformed its input, holds at most this much memory).
pub const DEFAULT_MAX_RECORD_BYTES: u64 = 16 * 1024 * 1024;

/// Default of a followed files source's `partial_line_timeout`: 10 seconds, in µs. A writer
/// that pauses longer than this in the middle of a line has its line cut in two.
pub const DEFAULT_PARTIAL_LINE_TIMEOUT_US: i64 = 10_000_000;

/// What a files source does with a file it cannot read to its end (a corrupt or truncated
/// `.gz`, an I/O error): `on_unreadable_file`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OnUnreadableFile {
    /// `"dead_letter"` (the default): the lines before the failure are read, the rest of the
    /// file is one dead letter naming the file, the byte and the error, the file is finished
    /// (also in the checkpoint) and counted (`eddy_files_unreadable_total`); the pipeline goes
    /// on. A restart therefore does not fail again on the same file.
    #[default]
    DeadLetter,
    /// `"fail"`: the run stops with exit 1 naming the file (and fails again on restart).
    Fail,
}

/// Input record format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// `"json"`: one JSON object per line / message.
    Json,
    /// `"csv"`: comma-separated with a header line.
    Csv,
}

/// Where records come from, with the fields of that source type.
#[derive(Debug, Clone, PartialEq)]
pub enum SourceKind {
    /// `type = "files"`: a folder of files read in name order (`.gz` decompressed).
    Files {
        /// `path`: the folder (relative to the pipeline file after [`Pipeline::resolve_paths`]).
        path: PathBuf,
        /// `max_files_per_trigger` (micro-batch): ≥ 1, default 1 (one file = one batch).
        max_files_per_trigger: usize,
        /// `follow`: keep watching for new files and for lines appended to the files read
        /// (as `tail -F`); default false (a finite source).
        follow: bool,
        /// `partial_line_timeout` (with `follow`): a last line still without its newline is
        /// read as a record once its file has not grown for this long; > 0, default
        /// [`DEFAULT_PARTIAL_LINE_TIMEOUT_US`].
        partial_line_timeout: Duration,
        /// `on_unreadable_file`: default [`OnUnreadableFile::DeadLetter`].
        on_unreadable_file: OnUnreadableFile,
    },
    /// `type = "stdin"`: records on standard input (CSV: the first line is the header). With a
    /// checkpoint, a restart expects the same input again from its start and skips the lines
    /// the checkpoint consumed.
    Stdin,
    /// `type = "kafka"`.
    Kafka {
        /// `bootstrap_servers`: required, non-empty.
        bootstrap_servers: String,
        /// `topic` or `topics` (exactly one of them): at least one non-empty name.
        topics: Vec<String>,
        /// `group_id`: default the pipeline name.
        group_id: String,
        /// `starting_offsets`: first start only (later starts resume from the checkpoint).
        starting_offsets: StartingOffsets,
        /// `properties`: extra librdkafka settings (numbers and booleans written as strings).
        properties: BTreeMap<String, String>,
        /// `shared_group`: default false. True: several `eddy run` processes share the consumer
        /// group (issue 26, README "Running several instances"): Kafka's group protocol
        /// (cooperative-sticky) spreads the input partitions over them, each assigned partition
        /// has a partition actor of its own, and state, offsets and checkpoints are kept per
        /// input partition, so they move with it on a rebalance.
        shared_group: bool,
    },
    /// `type = "nexmark"`: the Nexmark generator, emitting the rows of one table.
    Nexmark {
        /// `table`: default bid.
        table: NexmarkTable,
        /// `events`: how many events to generate (of all tables); default unbounded.
        events: Option<u64>,
        /// `rate`: events per second, > 0; default unbounded.
        rate: Option<f64>,
        /// `seed`: default 0.
        seed: u64,
    },
}

/// Where a new Kafka consumer group starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StartingOffsets {
    /// `"earliest"`: the start of each partition.
    Earliest,
    /// `"latest"` (the default, as Spark's Kafka source): only new messages.
    Latest,
}

/// The Nexmark table a `nexmark` source emits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NexmarkTable {
    /// `"bid"` (the default).
    Bid,
    /// `"auction"`.
    Auction,
    /// `"person"`.
    Person,
}

impl NexmarkTable {
    /// The table's schema as Spark DDL (PIPELINE.md).
    pub fn ddl(self) -> &'static str {
        match self {
            NexmarkTable::Bid => {
                "auction BIGINT, bidder BIGINT, price BIGINT, channel STRING, url STRING, date_time TIMESTAMP, extra STRING"
            }
            NexmarkTable::Auction => {
                "id BIGINT, item_name STRING, description STRING, initial_bid BIGINT, reserve BIGINT, date_time TIMESTAMP, expires TIMESTAMP, seller BIGINT, category BIGINT, extra STRING"
            }
            NexmarkTable::Person => {
                "id BIGINT, name STRING, email_address STRING, credit_card STRING, city STRING, state STRING, date_time TIMESTAMP, extra STRING"
            }
        }
    }

    /// The table's schema.
    ///
    /// # Panics
    /// Never: the DDL strings are constants checked by a test.
    pub fn schema(self) -> Schema {
        Schema::parse_ddl(self.ddl()).expect("the Nexmark DDL constants are valid")
    }
}

/// `[watermark]`: W = max(event time seen in `column`) - `delay` (SEMANTICS.md "Watermark").
#[derive(Debug, Clone, PartialEq)]
pub struct WatermarkSpec {
    /// The TIMESTAMP column.
    pub column: String,
    /// Its position in the input schema.
    pub index: usize,
    /// ≥ 0 µs.
    pub delay: Duration,
}

/// `[query]`.
#[derive(Debug, Clone, PartialEq)]
pub enum QuerySpec {
    /// `type = "window_aggregate"`: Spark's `groupBy(window?, cols...).agg(measures...)`.
    WindowAggregate {
        /// `group_by`: input columns (may be empty), distinct.
        group_by: Vec<String>,
        /// `window`: none = a plain grouped aggregation over the whole stream.
        window: Option<WindowSpec>,
        /// `output_mode`: default update.
        output_mode: OutputMode,
        /// `measures`: at least one; output names distinct.
        measures: Vec<MeasureSpec>,
    },
    /// `type = "rolling_window"`: Databricks' `rollingWindow` (update mode only).
    RollingWindow {
        /// `partition_by`: input columns (may be empty), distinct.
        partition_by: Vec<String>,
        /// `order_by`: the TIMESTAMP event-time column.
        order_by: String,
        /// `frontier.delay`: F = processing time - delay; ≥ 0, default 0.
        frontier_delay: Duration,
        /// `frontier.alias`: the frontier's output column, default `__frontier`.
        frontier_alias: String,
        /// `measures`: at least one, each with an optional `over` range.
        measures: Vec<MeasureSpec>,
    },
    /// `type = "deduplicate"`: Spark's `dropDuplicates` / `dropDuplicatesWithinWatermark`.
    Deduplicate {
        /// `columns`: default every input column, in schema order.
        columns: Vec<String>,
        /// `within_watermark`: default false; true needs a `[watermark]`.
        within_watermark: bool,
    },
    /// `type = "processor"`: a stateful processor registered in code by name
    /// ([`crate::registry::Registry`]; Spark's `transformWithState`).
    Processor(ProcessorQuery),
    /// A SQL query without aggregation (SQL.md "Queries"): each record that passes the query's
    /// steps is one output row, unchanged (the steps filter and project it).
    Forward,
    /// A SQL query's stream-stream join of the pipeline's two sources (SEMANTICS.md "Joins"):
    /// its input is each source's records projected into one wide record
    /// ([`StreamJoinSpec`]); its output, the joined rows (the select list and WHERE run after it,
    /// as the query's output steps).
    StreamJoin(StreamJoinSpec),
}

/// A stream-stream join as planned from SQL (`sql_stream_join`). Both sources' records reach it
/// as one wide record: the `keys` join key values first (each source computes its own side's,
/// so both are routed alike), then the side marker (INT 0 for a record of the left relation, 1
/// for the right), then the left relation's columns (`widths[0]`), then the right's
/// (`widths[1]`); a record fills its own side's columns and leaves the other's NULL. The joined
/// row is the left columns then the right ones (the left ones only for a left semi join).
#[derive(Debug, Clone, PartialEq)]
pub struct StreamJoinSpec {
    /// The join type (left anti is refused, as Spark).
    pub join_type: crate::operator::StreamJoinType,
    /// How many key columns lead the wide record.
    pub keys: usize,
    /// The number of columns of the left and the right relation.
    pub widths: [usize; 2],
    /// Each side's event-time column in the wide record: the column its watermark is on, which
    /// the time range reads.
    pub times: [usize; 2],
    /// Whether each side has a watermark (its records at or before the late watermark are late).
    pub watermarked: [bool; 2],
    /// The time range of `right time - left time` from the ON condition; `None` without one
    /// (inner joins only: state is then never evicted, and a warning is logged at start).
    pub range: Option<crate::operator::TimeRange>,
    /// For each pipeline source (pipeline order), the side it is: `sides[0]` is 0 when the first
    /// source is the left relation.
    pub sides: [usize; 2],
    /// For each join key, in order, its left column and its right column in the joined row
    /// (the right one counted after every left column); `None` for a column of another type
    /// than the one the key compares as (the narrower of two keys of two types): its values
    /// are not those the rows were routed by.
    pub key_columns: Vec<(Option<usize>, Option<usize>)>,
}

impl StreamJoinSpec {
    /// The side marker's column in the wide record.
    pub fn side_column(&self) -> usize {
        self.keys
    }

    /// The columns of side `s` (0 left, 1 right) in the wide record.
    pub fn columns(&self, s: usize) -> std::ops::Range<usize> {
        let start = self.keys + 1 + if s == 0 { 0 } else { self.widths[0] };
        start..start + self.widths[s]
    }

    /// For each join key, in order, the columns of the joined row that hold its value on every
    /// row the join emits (the partition actor of a row is that of its join key): the left and
    /// the right copy for an inner join, the left one for a left outer or left semi join (a
    /// NULL-padded row has no right copy), the right one for a right outer join, none for a
    /// full outer join (a row may hold it in either copy).
    pub fn routing_copies(&self) -> Vec<Vec<usize>> {
        use crate::operator::StreamJoinType as T;
        self.key_columns
            .iter()
            .map(|&(l, r)| {
                match self.join_type {
                    T::Inner => vec![l, r],
                    T::LeftOuter | T::LeftSemi => vec![l],
                    T::RightOuter => vec![r],
                    T::FullOuter => Vec::new(),
                }
                .into_iter()
                .flatten()
                .collect()
            })
            .collect()
    }

    /// The joined row's columns in the wide record (the left's then the right's, or the left's
    /// only for a left semi join).
    pub fn output_columns(&self) -> std::ops::Range<usize> {
        let end = if self.join_type == crate::operator::StreamJoinType::LeftSemi {
            self.columns(0).end
        } else {
            self.columns(1).end
        };
        self.keys + 1..end
    }
}

impl QuerySpec {
    /// The measures (empty for deduplicate).
    pub fn measures(&self) -> &[MeasureSpec] {
        match self {
            QuerySpec::WindowAggregate { measures, .. } | QuerySpec::RollingWindow { measures, .. } => measures,
            QuerySpec::Deduplicate { .. } | QuerySpec::Forward | QuerySpec::StreamJoin(_) | QuerySpec::Processor(_) => {
                &[]
            }
        }
    }
}

/// `[query] type = "processor"` as validated.
#[derive(Debug, Clone, PartialEq)]
pub struct ProcessorQuery {
    /// `name`: the name it was registered under.
    pub name: String,
    /// `partition_by`: input columns (may be empty: one key), distinct; a handler call sees the
    /// records of one key, and keys are spread over the partition actors by these values.
    pub partition_by: Vec<String>,
    /// The registered processor `name` resolved to.
    pub processor: crate::registry::RegisteredProcessor,
}

/// Spark's output modes (SEMANTICS.md "Windowed aggregation").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutputMode {
    /// `"append"`: a row once, when W passes the window's end.
    Append,
    /// `"update"` (the default): every changed row.
    Update,
    /// `"complete"`: the whole result every batch (micro-batch only).
    Complete,
}

/// `query.window`: windows are half-open `[start, end)`.
#[derive(Debug, Clone, PartialEq)]
pub enum WindowSpec {
    /// `type = "tumbling"`: Spark's `window(column, size, startTime = start)`.
    Tumbling {
        /// The TIMESTAMP event-time column.
        column: String,
        /// `size` > 0.
        size: Duration,
        /// `start` (offset of the windows from the epoch, may be negative): `|start| < size`,
        /// default 0 (Spark's rule `abs(start_time) < slide_duration`, pyspark 4.3 checked).
        start: Duration,
    },
    /// `type = "sliding"`: Spark's `window(column, size, slide, start)`.
    Sliding {
        /// The TIMESTAMP event-time column.
        column: String,
        /// `size` > 0.
        size: Duration,
        /// `slide`: `0 < slide <= size`.
        slide: Duration,
        /// `start` (may be negative): `|start| < slide`, default 0 (as Spark).
        start: Duration,
    },
    /// `type = "session"`: Spark's `session_window(column, gap)`.
    Session {
        /// The TIMESTAMP event-time column.
        column: String,
        /// `gap` or `gap_column`.
        gap: SessionGap,
    },
}

impl WindowSpec {
    /// The event-time column the window is over.
    pub fn column(&self) -> &str {
        match self {
            WindowSpec::Tumbling { column, .. }
            | WindowSpec::Sliding { column, .. }
            | WindowSpec::Session { column, .. } => column,
        }
    }
}

/// The gap of a session window.
#[derive(Debug, Clone, PartialEq)]
pub enum SessionGap {
    /// `gap = "<duration>"`: > 0.
    Fixed(Duration),
    /// `gap_column = "<column>"`: a STRING input column holding a Spark duration string
    /// (`"10 seconds"`), read per record with [`crate::time::parse_duration`]. As SEMANTICS.md
    /// says, a record whose gap is null, zero or negative (or, here, unparsable) is dropped.
    /// Spark's `session_window` takes a column of interval or string type; Eddy's schemas have
    /// no interval type, so only STRING is accepted.
    Column(String),
}

/// One measure: an aggregate function over a column, with its output name and type.
#[derive(Clone, PartialEq)]
pub struct MeasureSpec {
    /// The function, lower-case, as the user wrote it: count, sum, avg, mean, min, max, stddev,
    /// stddev_samp, stddev_pop, variance, var_samp, var_pop, approx_count_distinct,
    /// approx_percentile (`percentile_approx` is accepted and stored as `approx_percentile`).
    pub agg: String,
    /// The input column; `None` for `count(*)` (no `column`, or `"*"`).
    pub column: Option<String>,
    /// `alias`, if given.
    pub alias: Option<String>,
    /// approx_percentile: the percentage(s), each in [0, 1]; default `[0.5]`. Empty otherwise.
    pub percentages: Vec<f64>,
    /// approx_percentile: whether `percentage` was a list (the result is then an array).
    pub percentage_is_list: bool,
    /// approx_percentile: `accuracy`, 1 ..= i32::MAX (as Spark), default 10000.
    pub accuracy: u32,
    /// approx_count_distinct: `rsd` (relative standard deviation), default 0.05. Spark sizes
    /// its HLL++ sketch with precision `p = ceil(2 log2(1.106 / rsd))` ([`spark_hll_precision`])
    /// and refuses `p < 4` (pyspark 4.3: 0.39 accepted, 0.392 refused; 0.005 accepted, so there
    /// is no 0.01 floor); Eddy also caps `p` at 21 (DataSketches HLL): about
    /// `0.00077 <= rsd < 0.391`.
    pub rsd: f64,
    /// rolling_window only: `over` range (> 0); `None` = lifetime.
    pub over: Option<Duration>,
    /// The output column: `alias`, else Spark's default name ([`default_measure_name`]).
    pub output_name: String,
    /// The result type, as Spark's ([`measure_output_type`]); a user aggregate's own
    /// ([`crate::aggregate::Aggregator::result_type`]).
    pub output_type: crate::schema::DataType,
    /// The user aggregate `agg` names ([`crate::registry::Registry::register_udaf`]); `None`
    /// for Eddy's own functions.
    pub user: Option<UserAggregate>,
    /// first / last (first_value, last_value, any_value): Spark's `ignoreNulls`, set by SQL's
    /// `first(x, true)` or `first(x) IGNORE NULLS` (a structured measure has no such field):
    /// the first / last non-null value.
    pub ignore_nulls: bool,
}

/// As derived, but without `ignore_nulls` when it is false: a checkpoint's fingerprint is the
/// query's debug text (`actors::checkpoint::manifest`), and a measure that does not ignore nulls
/// keeps the text it had before the field existed.
impl std::fmt::Debug for MeasureSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut d = f.debug_struct("MeasureSpec");
        d.field("agg", &self.agg)
            .field("column", &self.column)
            .field("alias", &self.alias)
            .field("percentages", &self.percentages)
            .field("percentage_is_list", &self.percentage_is_list)
            .field("accuracy", &self.accuracy)
            .field("rsd", &self.rsd)
            .field("over", &self.over)
            .field("output_name", &self.output_name)
            .field("output_type", &self.output_type)
            .field("user", &self.user);
        if self.ignore_nulls {
            d.field("ignore_nulls", &self.ignore_nulls);
        }
        d.finish()
    }
}

/// A registered user aggregate held by a [`MeasureSpec`]. Two are equal when their registered
/// names are (an aggregator cannot be compared); a checkpoint's fingerprint sees the name.
#[derive(Clone)]
pub struct UserAggregate {
    /// The name it was registered under, lower case.
    pub name: String,
    /// The aggregator.
    pub aggregator: std::sync::Arc<dyn crate::aggregate::Aggregator>,
}

impl std::fmt::Debug for UserAggregate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UserAggregate").field("name", &self.name).finish_non_exhaustive()
    }
}

impl PartialEq for UserAggregate {
    fn eq(&self, other: &Self) -> bool {
        self.name == other.name
    }
}

/// `[sink]`, `[late_sink]`, `[dead_letter]`: output rows as JSON lines.
#[derive(Debug, Clone, PartialEq)]
pub enum SinkSpec {
    /// `type = "files"`: `batch-000000.jsonl`, ... in the folder `path`.
    Files {
        /// The folder (relative to the pipeline file after [`Pipeline::resolve_paths`]).
        path: PathBuf,
    },
    /// `type = "stdout"`.
    Stdout,
    /// `type = "kafka"`.
    Kafka {
        /// `bootstrap_servers`: required, non-empty.
        bootstrap_servers: String,
        /// `topic`: required, non-empty.
        topic: String,
        /// `key`: the columns whose values, JSON-encoded, form the message key; default none.
        /// For `[sink]` they are output columns; for `[late_sink]` input columns; for
        /// `[dead_letter]` among `reason`, `source`, `record`.
        key: Vec<String>,
        /// `properties`: extra librdkafka settings.
        properties: BTreeMap<String, String>,
        /// `exactly_once`: transactions committed per epoch; default false (at-least-once).
        exactly_once: bool,
    },
    /// `type = "delta"`: a Delta Lake table in the folder `path` (created with the table on the
    /// first write) or at the object-store URL `path` (`s3://bucket/prefix`), one table version
    /// per micro-batch / epoch with rows (PIPELINE.md "Delta Lake sink"). Refused for the
    /// `update` output mode, as Spark's Delta sink refuses it.
    Delta {
        /// The table's folder (relative to the pipeline file after [`Pipeline::resolve_paths`]),
        /// or its `s3://bucket/prefix` URL as written ([`url_scheme`] tells which; a URL is never
        /// resolved against the pipeline file's folder).
        path: PathBuf,
        /// `partition_by`: columns of the sink's rows (as Spark's `partitionBy`), distinct, in
        /// their column's spelling; default none.
        partition_by: Vec<String>,
    },
    /// `type = "foreach"` (`[sink]` only): each row goes to the forEach writer registered under
    /// `name` through the `eddy` library (Spark's `foreach(ForeachWriter)`); the `eddy` command
    /// has none registered and refuses it when the run starts.
    Foreach {
        /// `name`: required, non-empty; the name the writer was registered under.
        name: String,
    },
}

/// `[checkpoint]`.
#[derive(Debug, Clone, PartialEq)]
pub struct CheckpointSpec {
    /// `path`: the folder (the pipeline's checkpoints go in its `name` sub-folder).
    pub path: PathBuf,
    /// `keep`: how many completed checkpoints to keep, ≥ 1, default 3.
    pub keep: usize,
}

/// `[metrics]`.
#[derive(Debug, Clone, PartialEq)]
pub struct MetricsSpec {
    /// `listen`: the address of the HTTP endpoint (`/metrics`, `/healthz`, `/readyz`); default
    /// `127.0.0.1:9464`.
    pub listen: SocketAddr,
}
