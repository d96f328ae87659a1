//! forEach sinks: user code that receives every output row (Spark's `foreach(ForeachWriter)`).
//!
//! A pipeline whose `[sink]` is `type = "foreach"` hands its rows to a [`ForeachWriter`] instead of
//! writing JSON lines. Each partition actor has its own writer (made by a [`ForeachFactory`]) and
//! calls it on its own thread (with one partition in real-time mode, the source actor's thread,
//! where that partition's work runs), in this order for each micro-batch / epoch in which the
//! partition has rows:
//!
//! 1. [`ForeachWriter::open`]`(partition, epoch)`: `false` skips the rows of that partition and
//!    epoch (the writer has them already: idempotence across restarts, as Spark's);
//! 2. [`ForeachWriter::process`] for each row, unless skipped;
//! 3. [`ForeachWriter::close`]`(None)` when the partition ends the epoch, before the epoch's
//!    checkpoint is written; `close(Some(why))` after a failure of `open` or `process`, or when the
//!    run ends before the epoch does.
//!
//! A partition with no row in an epoch calls nothing for it (Spark opens every partition's writer
//! every epoch; here an empty epoch costs nothing). After a restart from a checkpoint, the epochs
//! after it are run again with the same numbers and, with the same `parallelism`, the same
//! partitions: a writer that remembers which `(partition, epoch)` it closed without error answers
//! `false` to `open` and never sees a row twice. With another `parallelism` the partitions of an
//! epoch differ; remember epochs, not pairs, if that matters.
//!
//! An error from `open` or `process` fails the run (exit 1) after `close(Some(..))`.

use std::sync::Arc;

use eddy_engine::Value;

/// The error a forEach writer returns: any error (it fails the run, its message is shown).
pub type WriterError = Box<dyn std::error::Error + Send + Sync>;

/// One output row as a forEach writer sees it: the output columns' names and the row's values,
/// in the order of the query's output schema (after the sink's `select`).
#[derive(Debug, Clone, Copy)]
pub struct RowView<'a> {
    names: &'a [String],
    values: &'a [Value],
}

impl<'a> RowView<'a> {
    /// A row of `values` under the column names `names` (same length).
    pub fn new(names: &'a [String], values: &'a [Value]) -> RowView<'a> {
        RowView { names, values }
    }

    /// The value of the column `name` (exact spelling first, then ignoring ASCII case, as Spark
    /// resolves names); `None` when the rows have no such column.
    pub fn get(&self, name: &str) -> Option<&'a Value> {
        let at = self
            .names
            .iter()
            .position(|n| n == name)
            .or_else(|| self.names.iter().position(|n| n.eq_ignore_ascii_case(name)))?;
        self.values.get(at)
    }

    /// The output columns' names, in order.
    pub fn names(&self) -> &'a [String] {
        self.names
    }

    /// The values, in the order of [`RowView::names`].
    pub fn values(&self) -> &'a [Value] {
        self.values
    }

    /// The row as a JSON object, without a newline, as the files and stdout sinks write it
    /// (PIPELINE.md: `{"k": "a", "n": 2}`; timestamps RFC 3339, NaN as `"NaN"`, null as null).
    pub fn to_json(&self) -> String {
        let mut s = String::with_capacity(64 + 16 * self.values.len());
        eddy_engine::output::write_row(&mut s, self.names, self.values);
        s
    }
}

/// User code that receives output rows: Spark's `ForeachWriter` (open / process / close), in
/// Rust. See the module documentation for the order of calls and the thread they run on.
///
/// # Example
///
/// ```
/// use std::collections::HashSet;
/// use eddy_connectors::foreach::{ForeachWriter, RowView, WriterError};
///
/// /// Prints each row; skips the (partition, epoch) pairs it has printed already.
/// #[derive(Default)]
/// struct Printer {
///     done: HashSet<(usize, u64)>,
///     open: Option<(usize, u64)>,
/// }
///
/// impl ForeachWriter for Printer {
///     fn open(&mut self, partition: usize, epoch: u64) -> Result<bool, WriterError> {
///         self.open = Some((partition, epoch));
///         Ok(!self.done.contains(&(partition, epoch)))
///     }
///     fn process(&mut self, row: RowView<'_>) -> Result<(), WriterError> {
///         let _line = row.to_json(); // write it somewhere
///         Ok(())
///     }
///     fn close(&mut self, error: Option<&str>) {
///         if let (None, Some(pe)) = (error, self.open.take()) {
///             self.done.insert(pe);
///         }
///     }
/// }
/// ```
pub trait ForeachWriter: Send {
    /// Starts the rows of `partition` (0 ..= parallelism - 1) in micro-batch / `epoch` (the
    /// batch or epoch number, as the checkpoints count them). `Ok(false)`: skip them (already
    /// written), `process` is not called for them; `close` still is.
    ///
    /// # Errors
    /// Any: the run fails (exit 1) after [`ForeachWriter::close`].
    fn open(&mut self, partition: usize, epoch: u64) -> Result<bool, WriterError>;

    /// One row of the opened partition and epoch.
    ///
    /// # Errors
    /// Any: the run fails (exit 1) after [`ForeachWriter::close`]; the epoch's other rows are
    /// not given.
    fn process(&mut self, row: RowView<'_>) -> Result<(), WriterError>;

    /// Ends the opened partition and epoch: `None` when every row was given (the epoch's
    /// checkpoint is written after this returns); `Some(why)` after a failure (of this writer's
    /// `open` or `process`, or of the run), when the rows given may be incomplete.
    fn close(&mut self, error: Option<&str>);
}

/// Makes one [`ForeachWriter`] per partition actor (called once each, at the start of a run).
pub type ForeachFactory = Arc<dyn Fn() -> Box<dyn ForeachWriter> + Send + Sync>;
