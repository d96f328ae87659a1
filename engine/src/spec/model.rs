//! The raw model: the pipeline file as TOML gives it, before validation.
//!
//! Every field is optional so that validation (`validate.rs`) can say which one is missing with
//! its path; unknown fields are refused here (`deny_unknown_fields`). A `type`-dependent section
//! (source, query, window, sink, clock) holds the union of the fields of all its types; which of
//! them a given type accepts is checked in validation. Values whose shape varies (a percentage
//! that may be a list, a timestamp that may be a TOML datetime, Kafka properties) stay
//! [`toml::Value`] and are checked there too.

use std::collections::BTreeMap;

use serde::Deserialize;

/// The whole file (PIPELINE.md "Top level").
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawPipeline {
    pub name: Option<String>,
    pub mode: Option<String>,
    pub trigger: Option<String>,
    pub parallelism: Option<i64>,
    pub clock: Option<RawClock>,
    pub source: Option<RawSource>,
    /// `[[source]]` written more than once: every source, in file order (`parse.rs` moves such an
    /// array here; one `[[source]]` is read as `[source]`).
    pub source_list: Option<Vec<RawSource>>,
    /// `watermark_policy`: how the sources' watermarks combine (`min`, `max`).
    pub watermark_policy: Option<String>,
    /// `[[table]]`: static tables for stream-static joins.
    pub table: Option<Vec<RawTable>>,
    pub watermark: Option<RawWatermark>,
    pub query: Option<RawQuery>,
    pub sink: Option<RawSink>,
    pub late_sink: Option<RawSink>,
    pub dead_letter: Option<RawSink>,
    pub checkpoint: Option<RawCheckpoint>,
    pub metrics: Option<RawMetrics>,
}

/// `[clock]`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawClock {
    #[serde(rename = "type")]
    pub kind: Option<String>,
    pub column: Option<String>,
    /// A string or a TOML datetime.
    pub until: Option<toml::Value>,
}

/// `[source]`: the fields of every source type.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawSource {
    #[serde(rename = "type")]
    pub kind: Option<String>,
    pub format: Option<String>,
    pub schema: Option<String>,
    pub timestamp_unit: Option<String>,
    // files
    pub path: Option<String>,
    pub max_files_per_trigger: Option<i64>,
    pub follow: Option<bool>,
    pub partial_line_timeout: Option<String>,
    pub on_unreadable_file: Option<String>,
    // files, stdin
    pub max_record_bytes: Option<i64>,
    // kafka
    pub bootstrap_servers: Option<String>,
    pub topic: Option<String>,
    pub topics: Option<Vec<String>>,
    pub group_id: Option<String>,
    pub starting_offsets: Option<String>,
    pub properties: Option<BTreeMap<String, toml::Value>>,
    pub shared_group: Option<bool>,
    // nexmark
    pub table: Option<String>,
    pub events: Option<i64>,
    pub rate: Option<f64>,
    pub seed: Option<i64>,
    // every type: the name a SQL query reads it by (default `source`) and its watermark
    // (PIPELINE.md "Several sources"), SQL expressions (SQL.md)
    pub name: Option<String>,
    pub watermark: Option<RawWatermark>,
    pub idle_timeout: Option<String>,
    pub filter: Option<String>,
    pub select: Option<Vec<String>>,
}

/// One `[[table]]` (PIPELINE.md "Several sources, static tables, expressions and SQL").
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawTable {
    pub name: Option<String>,
    #[serde(rename = "type")]
    pub kind: Option<String>,
    pub path: Option<String>,
    pub format: Option<String>,
    pub schema: Option<String>,
    pub refresh: Option<String>,
    pub max_bytes: Option<i64>,
}

/// `[watermark]`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawWatermark {
    pub column: Option<String>,
    pub delay: Option<String>,
}

/// `[query]`: the fields of every query type.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawQuery {
    #[serde(rename = "type")]
    pub kind: Option<String>,
    // SQL (SQL.md "Queries"), with output_mode
    pub sql: Option<String>,
    // window_aggregate
    pub group_by: Option<Vec<String>>,
    pub window: Option<RawWindow>,
    pub output_mode: Option<String>,
    pub measures: Option<Vec<RawMeasure>>,
    // rolling_window
    pub partition_by: Option<Vec<String>>,
    pub order_by: Option<String>,
    pub frontier: Option<RawFrontier>,
    // deduplicate
    pub columns: Option<Vec<String>>,
    pub within_watermark: Option<bool>,
    // processor (with partition_by): the registered processor's name
    pub name: Option<String>,
}

/// `query.window`: the fields of every window type.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawWindow {
    #[serde(rename = "type")]
    pub kind: Option<String>,
    pub column: Option<String>,
    pub size: Option<String>,
    pub slide: Option<String>,
    pub start: Option<String>,
    pub gap: Option<String>,
    pub gap_column: Option<String>,
}

/// `query.frontier` (rolling window).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawFrontier {
    pub delay: Option<String>,
    pub alias: Option<String>,
}

/// One of `query.measures`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawMeasure {
    pub agg: Option<String>,
    pub column: Option<String>,
    pub alias: Option<String>,
    /// A number or a list of numbers.
    pub percentage: Option<toml::Value>,
    pub accuracy: Option<i64>,
    pub rsd: Option<f64>,
    pub over: Option<String>,
    /// Written in a SQL query: the default output name keeps the function as called, as Spark
    /// SQL names it (`mean(d)`, `approx_percentile(v, 0.5, 100)`); the DataFrame API, which
    /// structured queries follow, names it by the function (`avg(d)`, `percentile_approx(...)`).
    #[serde(skip)]
    pub sql: bool,
    /// Written in a SQL query over a computed input whose column is named otherwise than Spark
    /// names the input (the name was another column's): the input's name in the default output
    /// name (`sum(s.a)` for `sum(s.a)` read from column `s.a#2`).
    #[serde(skip)]
    pub named_as: Option<String>,
    /// Written in a SQL query as `first(x, true)` (or `last`, `first_value`, `last_value`,
    /// `any_value`; or `... IGNORE NULLS`): Spark's `ignoreNulls`.
    #[serde(skip)]
    pub ignore_nulls: bool,
}

/// `[sink]`, `[late_sink]`, `[dead_letter]`: the fields of every sink type.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawSink {
    #[serde(rename = "type")]
    pub kind: Option<String>,
    pub format: Option<String>,
    // files
    pub path: Option<String>,
    // kafka
    pub bootstrap_servers: Option<String>,
    pub topic: Option<String>,
    pub key: Option<Vec<String>>,
    pub properties: Option<BTreeMap<String, toml::Value>>,
    pub exactly_once: Option<bool>,
    // delta
    pub partition_by: Option<Vec<String>>,
    // foreach: the registered writer's name
    pub name: Option<String>,
    // `[sink]` only: SQL expressions over the output columns (SQL.md)
    pub select: Option<Vec<String>>,
}

/// `[checkpoint]`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawCheckpoint {
    pub path: Option<String>,
    pub keep: Option<i64>,
}

/// `[metrics]`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawMetrics {
    pub listen: Option<String>,
}
