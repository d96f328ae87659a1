//! The forEach sink's side of a partition actor: its [`ForeachWriter`], opened and closed per
//! micro-batch / epoch (the order of calls is in [`eddy_connectors::foreach`]).

use eddy_connectors::foreach::{ForeachWriter, RowView};
use eddy_connectors::{ConnectorError, Sink};
use eddy_engine::Row;

/// A partition actor's forEach writer and the batch / epoch it has open.
pub struct ForeachTarget {
    writer: Box<dyn ForeachWriter>,
    /// The registered name (`sink.name`), for messages.
    name: String,
    partition: usize,
    /// The open batch / epoch and whether its rows are taken (`open` returned true).
    open: Option<(u64, bool)>,
}

impl std::fmt::Debug for ForeachTarget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ForeachTarget").field("name", &self.name).field("partition", &self.partition).finish()
    }
}

impl ForeachTarget {
    /// The writer `writer` (registered as `name`) of partition actor `partition`.
    pub fn new(writer: Box<dyn ForeachWriter>, name: &str, partition: usize) -> ForeachTarget {
        ForeachTarget { writer, name: name.to_string(), partition, open: None }
    }

    /// Gives `rows` (columns `names`) of batch / epoch `id` to the writer, opening `id` first
    /// (and closing an earlier one still open).
    ///
    /// # Errors
    /// [`ConnectorError::External`] naming the writer, the partition and the epoch when `open`
    /// or `process` failed; the writer has been closed with the error.
    pub fn write(&mut self, id: u64, names: &[String], rows: &[Row]) -> Result<(), ConnectorError> {
        if let Some((open, _)) = self.open
            && open != id
        {
            self.end(open);
        }
        let taken = match self.open {
            Some((_, taken)) => taken,
            None => match self.writer.open(self.partition, id) {
                Ok(taken) => {
                    self.open = Some((id, taken));
                    taken
                }
                Err(e) => return Err(self.fail(id, "open", &e.to_string())),
            },
        };
        if !taken {
            return Ok(());
        }
        for row in rows {
            if let Err(e) = self.writer.process(RowView::new(names, row)) {
                return Err(self.fail(id, "process", &e.to_string()));
            }
        }
        Ok(())
    }

    /// Closes batch / epoch `id` without error, if it is open.
    pub fn end(&mut self, id: u64) {
        if self.open.is_some_and(|(open, _)| open == id) {
            self.open = None;
            self.writer.close(None);
        }
    }

    /// Closes the open batch / epoch with the failure of `call`; the error to fail the run with.
    fn fail(&mut self, id: u64, call: &str, why: &str) -> ConnectorError {
        self.open = None;
        self.writer.close(Some(why));
        ConnectorError::External(format!(
            "forEach writer {:?}: {call} failed (partition {}, epoch {id}): {why}",
            self.name, self.partition
        ))
    }
}

impl Drop for ForeachTarget {
    /// A batch / epoch still open when the partition actor goes (the run failed or was told to
    /// exit now) is closed with an error: its rows may be incomplete.
    fn drop(&mut self) {
        if let Some((id, _)) = self.open.take() {
            self.writer.close(Some(&format!("the run ended before epoch {id} did")));
        }
    }
}

/// The shared sink of a pipeline whose rows go to forEach writers: the writers take every row,
/// so nothing is written here, and a batch / epoch has nothing to prepare or commit.
#[derive(Debug, Default)]
pub struct ForeachRowsSink;

impl Sink for ForeachRowsSink {
    fn write(&mut self, _batch_id: u64, _line: &str, _key: Option<&str>) -> Result<(), ConnectorError> {
        Ok(())
    }

    fn commit(&mut self, _batch_id: u64) -> Result<(), ConnectorError> {
        Ok(())
    }
}
