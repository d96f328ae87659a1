//! # eddy: the engine as a Rust library
//!
//! Runs a pipeline (PIPELINE.md: a TOML file, or its text) in this process, with user code
//! plugged in where the pipeline names it, and with the same checkpoints, metrics and exit rules
//! as `eddy run` (the `eddy` command is written on this API):
//!
//! - [`Job`]: a loaded, validated pipeline and the user code registered for it;
//!   [`Job::run`] runs it to its end on the calling thread, [`Job::start`] on threads of its own,
//!   returning a [`RunHandle`] that reports progress and can be stopped.
//! - [`ForeachWriter`]: a `[sink] type = "foreach"` hands every output row to user code (Spark's
//!   `foreach(ForeachWriter)`), registered with [`Job::foreach`].
//! - [`Registry`]: user code a pipeline file names, given to the job before the file is
//!   validated ([`Job::from_file_in`], [`Job::from_toml_in`]): [`StatefulProcessor`]s for
//!   `[query] type = "processor"` (Spark's `transformWithState`), with keyed state and timers
//!   through a [`KeyContext`]; scalar functions (UDFs, [`Registry::register_udf`]) callable in
//!   every SQL expression; [`Aggregator`]s (UDAFs, [`Registry::register_udaf`]) usable as
//!   measures and SQL aggregates. The examples `examples/fraud/` (processing-time timers, a UDF),
//!   `examples/sessions_per_user.rs` (an event-time timer) and `examples/rolling_geomean/` (a
//!   UDAF in a rolling window) show them.
//! - [`Error`]: what went wrong, and the exit code `eddy run` gives it ([`Error::exit_code`]).
//!
//! # Example
//!
//! Count the generated bids and collect the result rows in code:
//!
//! ```
//! use std::sync::{Arc, Mutex};
//! use eddy::{ForeachWriter, Job, RowView, WriterError};
//!
//! /// Collects each row as JSON.
//! struct Collect(Arc<Mutex<Vec<String>>>);
//!
//! impl ForeachWriter for Collect {
//!     fn open(&mut self, _partition: usize, _epoch: u64) -> Result<bool, WriterError> {
//!         Ok(true)
//!     }
//!     fn process(&mut self, row: RowView<'_>) -> Result<(), WriterError> {
//!         self.0.lock().unwrap().push(row.to_json());
//!         Ok(())
//!     }
//!     fn close(&mut self, _error: Option<&str>) {}
//! }
//!
//! let pipeline = r#"
//!     name = "bids"
//!     mode = "micro-batch"
//!     parallelism = 2
//!     [source]
//!     type = "nexmark"
//!     events = 1000
//!     [query]
//!     type = "window_aggregate"
//!     group_by = []
//!     measures = [{ agg = "count" }]
//!     [sink]
//!     type = "foreach"
//!     name = "collect"
//! "#;
//! let rows = Arc::new(Mutex::new(Vec::new()));
//! let seen = rows.clone();
//! let summary = Job::from_toml(pipeline)?
//!     .foreach("collect", move || Box::new(Collect(seen.clone())) as Box<dyn ForeachWriter>)
//!     .run()?;
//! assert_eq!(summary.records, 920); // bids are 46 of every 50 events
//! // update mode: a row per batch that changed the count, the last one with the total
//! assert_eq!(rows.lock().unwrap().last().map(String::as_str), Some(r#"{"count(1)": 920}"#));
//! # Ok::<(), eddy::Error>(())
//! ```
#![deny(missing_docs)]

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;

use eddy_actors::source::SourceCounters;
use eddy_actors::{RunOptions, RuntimeError};
use eddy_engine::spec::{self, SpecError};

pub use eddy_actors::RunSummary;
pub use eddy_connectors::foreach::{ForeachWriter, RowView, WriterError};
pub use eddy_engine::aggregate::Aggregator;
pub use eddy_engine::operator::{KeyContext, StatefulProcessor, TimeDomain};
pub use eddy_engine::registry::{Registry, RegistryError};
pub use eddy_engine::{DataType, Duration, Field, GroupKey, Record, Row, Schema, Timestamp, Value};

/// What went wrong, as `eddy run` reports it (PIPELINE.md "The command").
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The pipeline (file, text or override) is wrong: the field, what was given and what is
    /// allowed. Nothing was started (exit 2).
    #[error(transparent)]
    Pipeline(#[from] SpecError),
    /// The pipeline file could be read and validated but cannot start: a source or sink that
    /// cannot be opened, a forEach writer that is not registered, a checkpoint of another query.
    /// Nothing was started (exit 2).
    #[error("{0}")]
    Refused(RuntimeError),
    /// A failure while running, after close of any forEach writer (exit 1; a restart resumes
    /// from the last checkpoint).
    #[error("{0}")]
    Failed(RuntimeError),
}

impl Error {
    /// The exit code `eddy run` gives this error: 2 for [`Error::Pipeline`] and
    /// [`Error::Refused`], 1 for [`Error::Failed`].
    pub fn exit_code(&self) -> u8 {
        match self {
            Error::Pipeline(_) | Error::Refused(_) => 2,
            Error::Failed(_) => 1,
        }
    }
}

impl From<RuntimeError> for Error {
    fn from(e: RuntimeError) -> Error {
        match e {
            RuntimeError::Open { .. } | RuntimeError::Unsupported { .. } | RuntimeError::IncompatibleCheckpoint(_) => {
                Error::Refused(e)
            }
            RuntimeError::Failed(_) => Error::Failed(e),
        }
    }
}

/// Splits one override `FIELD=VALUE` (as `eddy run --set FIELD=VALUE`) at its first `=`.
///
/// # Errors
/// [`Error::Pipeline`] with the field `--set` when there is no `=` or FIELD is empty.
pub fn parse_override(arg: &str) -> Result<(String, String), Error> {
    Ok(spec::parse_set_arg(arg)?)
}

/// A validated pipeline and the user code registered for it, ready to run.
pub struct Job {
    pipeline: spec::Pipeline,
    foreach: BTreeMap<String, eddy_connectors::foreach::ForeachFactory>,
    stop_after: Option<u64>,
    trace_stalls: Option<std::time::Duration>,
    stop: Stopper,
}

impl std::fmt::Debug for Job {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Job")
            .field("pipeline", &self.pipeline.name)
            .field("foreach", &self.foreach.keys().collect::<Vec<_>>())
            .finish_non_exhaustive()
    }
}

impl Job {
    /// Loads the pipeline file at `path` (PIPELINE.md); its relative paths are resolved against
    /// the file's folder.
    ///
    /// # Errors
    /// [`Error::Pipeline`] when the file cannot be read or is not a valid pipeline.
    pub fn from_file(path: impl AsRef<Path>) -> Result<Job, Error> {
        Job::from_file_with(path, &[])
    }

    /// As [`Job::from_file`], with fields overridden first (`("source.path", "in/")`, as
    /// `eddy run --set source.path=in/`).
    ///
    /// # Errors
    /// As [`Job::from_file`]; an override of a field that does not exist is refused.
    pub fn from_file_with(path: impl AsRef<Path>, overrides: &[(String, String)]) -> Result<Job, Error> {
        Job::from_file_with_in(path, overrides, &Registry::new())
    }

    /// As [`Job::from_file`], resolving the user code the file names in `registry` (a
    /// processor's `name`).
    ///
    /// # Errors
    /// As [`Job::from_file`]; also [`Error::Pipeline`] at `query.name` for a processor that is
    /// not registered (the message lists the registered ones).
    pub fn from_file_in(path: impl AsRef<Path>, registry: &Registry) -> Result<Job, Error> {
        Job::from_file_with_in(path, &[], registry)
    }

    /// As [`Job::from_file_with`] and [`Job::from_file_in`] together.
    ///
    /// # Errors
    /// As [`Job::from_file_with`] and [`Job::from_file_in`].
    pub fn from_file_with_in(
        path: impl AsRef<Path>,
        overrides: &[(String, String)],
        registry: &Registry,
    ) -> Result<Job, Error> {
        Ok(Job::new(eddy_sql::load_pipeline_in(path.as_ref(), overrides, registry)?))
    }

    /// Parses a pipeline from its TOML text; relative paths in it are relative to the current
    /// directory.
    ///
    /// # Errors
    /// [`Error::Pipeline`] when the text is not a valid pipeline.
    pub fn from_toml(text: &str) -> Result<Job, Error> {
        Job::from_toml_in(text, &Registry::new())
    }

    /// As [`Job::from_toml`], resolving the user code the text names in `registry`.
    ///
    /// # Errors
    /// As [`Job::from_toml`] and [`Job::from_file_in`].
    pub fn from_toml_in(text: &str, registry: &Registry) -> Result<Job, Error> {
        Ok(Job::new(eddy_sql::parse_pipeline_in(text, &[], registry)?))
    }

    fn new(pipeline: spec::Pipeline) -> Job {
        Job { pipeline, foreach: BTreeMap::new(), stop_after: None, trace_stalls: None, stop: Stopper(Arc::default()) }
    }

    /// The pipeline's `name`.
    pub fn name(&self) -> &str {
        &self.pipeline.name
    }

    /// The output columns, in order, as written (after the sink's `select`): what `eddy
    /// validate` prints and what a [`RowView`] holds.
    pub fn output_schema(&self) -> Vec<Field> {
        self.pipeline.output_schema()
    }

    /// Checks what a run would refuse before starting anything and that parsing does not see:
    /// the number of partition actors (a query whose chain runs in one partition actor, one
    /// that would need a second exchange between partition actors, refuses `parallelism` > 1).
    /// `eddy validate` and `eddy explain` call it; [`Job::run`] checks it too.
    ///
    /// # Errors
    /// [`Error::Refused`] naming the field (exit 2).
    pub fn check(&self) -> Result<(), Error> {
        eddy_actors::planned_parallelism(&self.pipeline).map(|_| ()).map_err(Error::from)
    }

    /// The plan as text, as `eddy explain` prints it.
    pub fn explain(&self) -> String {
        eddy_engine::explain::explain(&self.pipeline)
    }

    /// Registers the forEach writer that `[sink] type = "foreach"`, `name = NAME` names: `make`
    /// is called once per partition actor, at the start of each run, for that actor's writer.
    /// Registering a name again replaces the earlier writer.
    pub fn foreach<F>(mut self, name: &str, make: F) -> Job
    where
        F: Fn() -> Box<dyn ForeachWriter> + Send + Sync + 'static,
    {
        self.foreach.insert(name.to_string(), Arc::new(make));
        self
    }

    /// Stops the run, as [`RunHandle::stop`] would, once micro-batch / epoch `id` is committed
    /// (backtests and tests that restart at a known point).
    pub fn stop_after(mut self, id: u64) -> Job {
        self.stop_after = Some(id);
        self
    }

    /// Turns the stall tracer on ([`eddy_actors::stalls`]): every record's service time on the
    /// thread that does its work is measured, and the items slower than `threshold` are kept
    /// with what they waited on, in [`RunSummary::stalls`] (and, with `[metrics]`, in
    /// `eddy_record_service_seconds` / `eddy_slow_records_total`). Off by default.
    pub fn trace_stalls(mut self, threshold: std::time::Duration) -> Job {
        self.trace_stalls = Some(threshold);
        self
    }

    /// A [`Stopper`] of the run this job will start, to hand to a signal handler before it
    /// starts: a stop asked before the run starts stops it at its first chance.
    pub fn stopper(&self) -> Stopper {
        self.stop.clone()
    }

    fn options(self, counters: Arc<SourceCounters>) -> (spec::Pipeline, RunOptions) {
        let opts = RunOptions {
            stop: Some(self.stop.0),
            counters: Some(counters),
            stop_after: self.stop_after,
            foreach: self.foreach,
            trace_stalls: self.trace_stalls,
            ..RunOptions::default()
        };
        (self.pipeline, opts)
    }

    /// Runs the pipeline on this thread (its actors on threads of their own) until its input
    /// ends (finite sources: files without `follow`, stdin, Nexmark with `events`), or forever
    /// with an endless source: use [`Job::start`] to be able to stop it.
    ///
    /// # Errors
    /// [`Error::Refused`] when it cannot start (nothing was started); [`Error::Failed`] when
    /// something failed while running.
    pub fn run(self) -> Result<RunSummary, Error> {
        let (pipeline, opts) = self.options(Arc::default());
        Ok(eddy_actors::run_pipeline(&pipeline, opts)?)
    }

    /// Starts the pipeline on threads of its own and returns at once.
    ///
    /// # Errors
    /// [`Error::Failed`] when the thread that runs it cannot be started; errors of the run come
    /// from [`RunHandle::join`].
    pub fn start(self) -> Result<RunHandle, Error> {
        let stop = self.stop.clone();
        let counters = Arc::new(SourceCounters::default());
        let (pipeline, opts) = self.options(counters.clone());
        let thread = std::thread::Builder::new()
            .name("eddy-run".into())
            .spawn(move || eddy_actors::run_pipeline(&pipeline, opts))
            .map_err(|e| Error::Failed(RuntimeError::Failed(format!("cannot start the run's thread: {e}"))))?;
        Ok(RunHandle { stop, counters, thread })
    }
}

/// A running pipeline ([`Job::start`]).
#[derive(Debug)]
pub struct RunHandle {
    stop: Stopper,
    counters: Arc<SourceCounters>,
    thread: JoinHandle<Result<RunSummary, RuntimeError>>,
}

/// Asks a run to stop (cloneable, for a signal handler's thread).
#[derive(Debug, Clone)]
pub struct Stopper(Arc<AtomicBool>);

impl Stopper {
    /// Asks the run to stop as `eddy run` does on SIGTERM: stop reading, finish the current
    /// epoch, write a checkpoint, flush and commit the sinks. Returns at once; a second call
    /// changes nothing.
    pub fn stop(&self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

/// How far a run has come, counted since it started.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Progress {
    /// Records decoded.
    pub records: u64,
    /// Records that could not be decoded.
    pub malformed: u64,
    /// Records dropped as late.
    pub late: u64,
}

impl RunHandle {
    /// As [`Stopper::stop`].
    pub fn stop(&self) {
        self.stop.stop();
    }

    /// A [`Stopper`] of this run.
    pub fn stopper(&self) -> Stopper {
        self.stop.clone()
    }

    /// Counts so far.
    pub fn progress(&self) -> Progress {
        Progress {
            records: self.counters.records.load(Ordering::Relaxed),
            malformed: self.counters.malformed.load(Ordering::Relaxed),
            late: self.counters.late.load(Ordering::Relaxed),
        }
    }

    /// Whether the run has ended ([`RunHandle::join`] will not wait).
    pub fn is_finished(&self) -> bool {
        self.thread.is_finished()
    }

    /// Waits for the run to end.
    ///
    /// # Errors
    /// As [`Job::run`].
    pub fn join(self) -> Result<RunSummary, Error> {
        match self.thread.join() {
            Ok(result) => Ok(result?),
            Err(_) => Err(Error::Failed(RuntimeError::Failed("the run's thread panicked (a bug)".into()))),
        }
    }
}
