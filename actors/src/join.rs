//! The source actor's stream-static join (SEMANTICS.md "Joins"): the table read at start, held
//! as a hash map ([`eddy_engine::join::JoinStage`]), and re-read when its files change.
//!
//! The join runs in the source actor, after the source's steps, the clock and the watermark have
//! seen each record (as Spark's watermark sits on the stream below the join: a record the join
//! drops still moves it), and before routing, rather than in every partition actor: it is
//! stateless per record, so where it runs changes no result, and one copy of the table (not one
//! per partition actor) keeps memory at one table whatever the parallelism. Its output records
//! are routed by the query's key as any record is, stamped as the record they were made of.
//!
//! Refresh: the files are listed every `refresh`, at the start of a micro-batch or between
//! polls in real-time mode; when they changed the table is read again (on the source actor's
//! thread) and the new version joins from the next micro-batch, or from the next record. A
//! failed re-read keeps the old version and is logged.

use std::time::Instant;

use eddy_connectors::files::{RowPositions, TableRows, TableWatch, read_table};
use eddy_engine::join::{JoinStage, KeyFailed};
use eddy_engine::plan::JoinPlan;
use eddy_engine::spec::TableSpec;
use eddy_engine::steps::Applied;

use crate::runtime::RuntimeError;

/// A join with its table, as the source actor runs it.
#[derive(Debug)]
pub struct TableJoin {
    stage: JoinStage,
    watch: TableWatch,
    /// Micro-batch: where each record of the batch being decoded was read (for the dead letters
    /// of joined records whose step fails), taken when the batch is routed.
    pub(crate) positions: Vec<eddy_connectors::Position>,
}

impl TableJoin {
    /// Reads the table `table` whole and prepares the join `plan` over it.
    ///
    /// # Errors
    /// [`RuntimeError::Failed`] naming the table and its path when it cannot be read, holds a
    /// line that cannot be decoded, or is larger than its `max_bytes` (exit 1).
    pub fn open(plan: &JoinPlan, table: &TableSpec) -> Result<TableJoin, RuntimeError> {
        let failed = |e: String| RuntimeError::Failed(format!("table {} ({}): {e}", table.name, table.path.display()));
        let (read, version) = read_table(table).map_err(|e| match e {
            // (it names the table and its path already)
            eddy_connectors::ConnectorError::Config(why) => RuntimeError::Failed(why),
            other => failed(other.to_string()),
        })?;
        tracing::info!(table = %table.name, path = %table.path.display(), rows = read.records.len(), "static table read");
        let TableRows { records, positions } = read;
        Ok(TableJoin {
            stage: plan.stage(records).map_err(|e| failed(failed_at(&e, &positions)))?,
            watch: TableWatch::new(table.clone(), version),
            positions: Vec::new(),
        })
    }

    /// Checks the table's files when `refresh` has passed (see the module documentation); a
    /// new version replaces the old one, a failed read is logged and changes nothing.
    pub fn refresh(&mut self, now: Instant) {
        match self.watch.poll(now) {
            None => {}
            Some(Ok(TableRows { records, positions })) => {
                let rows = records.len();
                match self.stage.replace_table(records) {
                    Ok(()) => tracing::info!(table = %self.watch.spec().name, rows, "static table changed: read again"),
                    Err(e) => {
                        let error = failed_at(&e, &positions);
                        tracing::warn!(table = %self.watch.spec().name, %error, "static table changed but its new version cannot be joined: the previous version is kept");
                    }
                }
            }
            Some(Err(e)) => {
                tracing::warn!(table = %self.watch.spec().name, error = %e, "static table changed but cannot be read again: the previous version is kept");
            }
        }
    }

    /// Joins one record (see [`JoinStage::apply`]).
    pub fn apply(&self, record: eddy_engine::Record, emit: impl FnMut(Applied)) {
        self.stage.apply(record, emit);
    }
}

/// A row's failed join key, named by the file and line the row was read from.
fn failed_at(e: &KeyFailed, positions: &RowPositions) -> String {
    match positions.position_of(e.row) {
        Some(position) => e.at(&position),
        None => e.to_string(),
    }
}
