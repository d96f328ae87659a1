//! # eddy-actors: the runtime
//!
//! Runs a pipeline as actors, each an event loop on its own OS thread over bounded `crossbeam`
//! channels (DESIGN.md "Actors without actix"):
//!
//! - the **source actor** ([`source`]) polls the source, decodes records, keeps the clock and the
//!   watermark (it sees every record, so its watermark is the global one), cuts micro-batches or
//!   epochs, and routes records by the hash of their partition key to the partition actor owning
//!   that key range; barriers and batch boundaries flow in-band behind the data;
//! - **partition actors** ([`partition`]) own the operator state of their key range, process
//!   records, fire timers (sleeping until the operator's next timer or the next message, never
//!   polling) and write their output rows to the main sink themselves ([`sink::RowWriter`]: the
//!   sink is chained to the operator, one thread hand-off fewer per record); with one partition
//!   in real-time mode, the partition's work is chained to the source actor too and runs on its
//!   thread ([`source::Downstream::Chained`]): no hand-off at all between poll and sink;
//! - the **sink actor** ([`sink`]) writes late records and dead letters, and commits a batch or
//!   epoch on every sink when every producer has ended it;
//! - the **coordinator** ([`coordinator`]) collects barrier acknowledgements and commits, tells
//!   the source when a micro-batch is committed, and turns a stop request into a drain.
//!
//! - **recycling** ([`recycle`]): processed batches go back from the partition actors to the
//!   source actor, their buffers and records reused (a bounded channel, never waited on).
//!
//! - **checkpoints** ([`checkpoint`]): per epoch / micro-batch, a snapshot of every partition
//!   actor and a manifest written last; restore on start, re-split by key range; the sinks
//!   commit in two phases around the checkpoint (files: exactly-once).
//!
//! - **metrics** ([`metrics`]): every Prometheus metric, and the `/metrics`, `/healthz`,
//!   `/readyz` endpoint of `[metrics] listen`.
//!
//! - **stall tracing** ([`stalls`], off by default): each record's service time and the slowest
//!   records with what they waited on.
//!
//! Every queue is bounded: a slow sink blocks the partition actors writing to it, which slow the
//! source.
//! Nothing here reads the time except through [`clock::Clock`].
#![deny(missing_docs)]

pub mod checkpoint;
pub mod clock;
pub mod coordinator;
pub mod exchange;
pub mod foreach;
pub mod group;
pub mod join;
pub mod messages;
pub mod metrics;
pub mod partition;
pub mod recycle;
pub mod routing;
pub mod runtime;
pub mod sink;
pub mod source;
pub mod stalls;

pub use runtime::{RunOptions, RunSummary, RuntimeError, planned_parallelism, run_pipeline};
