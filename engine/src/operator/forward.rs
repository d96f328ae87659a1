//! The stateless operator of a SQL query without aggregation (SQL.md "Queries": "a query
//! without one emits each row once"): every record it is given is one output row, unchanged,
//! at once, in both modes. Its filters and projection are pipeline steps around it
//! ([`crate::spec::SqlQueryPlan`]); it holds no state, drops nothing as late (Spark drops late
//! rows only in stateful operators) and never asks for a no-data batch.

use super::{BatchContext, GroupKey, Operator, Output, StateError};
use crate::time::Timestamp;
use crate::value::Record;

/// Forwards each record as an output row (see the module documentation).
#[derive(Debug, Default, Clone)]
pub struct Forward;

impl Operator for Forward {
    fn begin_batch(&mut self, _ctx: &BatchContext) {}

    fn on_record(&mut self, record: &Record, _watermark: Timestamp, out: &mut Output) {
        let mut row = out.row_buffer(record.values.len());
        row.extend(record.values.iter().cloned());
        out.rows.push(row);
    }

    fn end_batch(&mut self, _out: &mut Output) {}

    fn advance_watermark(&mut self, _w: Timestamp, _out: &mut Output) {}

    fn advance_clock(&mut self, _now: Timestamp, _out: &mut Output) {}

    fn next_timer(&self) -> Option<Timestamp> {
        None
    }

    fn wants_no_data_batch(&self, _evicted_with: Timestamp, _next: Timestamp) -> bool {
        false
    }

    fn state_len(&self) -> usize {
        0
    }

    /// Empty: the operator has no state.
    fn snapshot(&self) -> Vec<u8> {
        Vec::new()
    }

    /// # Errors
    /// [`StateError::Corrupt`] for bytes that are not an (empty) snapshot of this operator.
    fn restore(&mut self, bytes: &[u8]) -> Result<(), StateError> {
        if bytes.is_empty() {
            Ok(())
        } else {
            Err(StateError::Corrupt {
                operator: "forward",
                why: format!("{} bytes of state, expected none", bytes.len()),
            })
        }
    }

    fn retain_groups(&mut self, _keep: &mut dyn FnMut(&GroupKey) -> bool) {}
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::value::Value;

    #[test]
    fn every_record_is_one_row_at_once_and_nothing_is_late() {
        let mut op = Forward;
        let mut out = Output::default();
        let old = Record::new(vec![Value::Str("a".into()), Value::Timestamp(Timestamp(1))]);
        op.advance_watermark(Timestamp(1_000_000), &mut out);
        op.on_record(&old, Timestamp(1_000_000), &mut out);
        op.on_record(&old, Timestamp(1_000_000), &mut out);
        assert_eq!(out.rows, vec![old.values.to_vec(), old.values.to_vec()]);
        assert!(out.late.is_empty());
        assert!(!op.wants_no_data_batch(Timestamp(0), Timestamp(5)));
        assert!(op.restore(&op.snapshot()).is_ok());
        assert!(op.restore(b"{}").is_err());
    }
}
