//! # eddy-engine: what Eddy computes
//!
//! Everything a pipeline computes, as pure state machines: no threads, no clocks, no I/O. The
//! runtime (`eddy-actors`) drives these; tests drive them directly.
//!
//! ## Words
//!
//! One vocabulary, used everywhere in Eddy:
//!
//! - **record**: one decoded input row ([`value::Record`]), values in schema order.
//! - **event time**: the timestamp inside a record (`order_by`, `window.column`).
//! - **processing time**: the engine's clock (system clock, or the replay clock of PIPELINE.md).
//! - **watermark** (W): `max(event time seen) - delay`, a lower bound on event time below which
//!   input counts as late ([`watermark`]).
//! - **frontier** (F): the processing-time "now" of a rolling window, `processing time - delay`.
//! - **window**: a half-open event-time interval `[start, end)` ([`window`]).
//! - **pane**: a slice of a window's state that can be merged with others.
//! - **measure**: one aggregate of a query (`agg`, `column`, `alias`, `over`) ([`aggregate`]).
//! - **partition key**: the values of the grouping columns ([`value::GroupKey`]); its hash
//!   decides the **key range** (and so the partition actor) that owns it.
//! - **epoch**: the span between two checkpoint **barriers**; a **checkpoint** is the state of
//!   every operator at a barrier.
//! - **micro-batch** / **real-time**: the two execution modes (SEMANTICS.md).
//!
//! ## Modules
//!
//! - [`time`]: timestamps, durations, parsing and printing, window alignment.
//! - [`schema`], [`value`]: Spark DDL schemas, values, records, keys, output rows.
//! - [`decode`]: JSON lines / CSV to records, only the columns the query needs.
//! - [`aggregate`]: the aggregate functions (Spark's names, types and null rules), sketches.
//! - [`window`]: window assigners (tumbling, sliding, session).
//! - [`watermark`]: watermark tracking for both modes.
//! - [`operator`]: window aggregate, deduplicate, rolling window, custom stateful processors.
//! - [`registry`]: user code by name (processors), as a pipeline file refers to it.
//! - [`join`]: stream-static joins: a record looked up in a static table (`[[table]]`).
//! - [`explain`]: a pipeline's plan as text (`eddy explain`).
//! - [`expr`]: Spark SQL expressions: typed plan, Spark's type rules and names, compiled evaluation.
//! - [`spec`]: the pipeline file (PIPELINE.md): model, validation, output schema.
//! - [`output`]: rows as JSON lines.
#![deny(missing_docs)]

pub mod aggregate;
pub mod decimal;
pub mod decode;
pub mod driver;
pub mod explain;
pub mod expr;
pub mod join;
pub mod operator;
pub mod output;
pub mod plan;
mod prefetch;
pub mod registry;
pub mod schema;
pub mod spec;
pub mod stall;
pub mod steps;
pub mod time;
pub mod value;
pub mod watermark;
pub mod watermark_union;
pub mod window;

pub use schema::{DataType, Field, Schema};
pub use time::{Duration, Timestamp};
pub use value::{GroupKey, Record, Row, Value};
