//! The stateless steps of a pipeline (DESIGN.md "The operator graph"): filters and projections
//! of SQL expressions (SQL.md), bound and typed at validation. Where they run:
//!
//! - a source's `filter` and `select` (and a SQL query's WHERE conjuncts that do not mention
//!   the watermark column, and the computed keys and measure inputs of its aggregate): on each
//!   decoded record, before the watermark (SEMANTICS.md "Source filters and projections");
//! - a SQL query's WHERE conjuncts that mention the watermark column: after the watermark,
//!   before the operator (SQL.md "WHERE and the watermark");
//! - a SQL query's HAVING and select list, then the sink's `select`: on each output row, just
//!   before it is written.

use crate::expr::Typed;
use crate::schema::{Field, Schema};

/// One SQL expression of the pipeline file, bound against the schema of the step's input.
#[derive(Debug, Clone)]
pub struct PipelineExpr {
    /// The pipeline field it was written in, as errors name it (`source.filter`,
    /// `sink.select[2]`, `query.sql`).
    pub field: String,
    /// The typed plan.
    pub typed: Typed,
    /// The output column's name: the alias, or Spark's name of the expression.
    pub name: String,
}

/// Two expressions are the same when written in the same field with the same Spark name (the
/// name spells the whole typed tree, implicit casts aside) and the same output name.
impl PartialEq for PipelineExpr {
    fn eq(&self, other: &PipelineExpr) -> bool {
        self.field == other.field && self.name == other.name && self.typed.name == other.typed.name
    }
}

/// A stateless step.
#[derive(Debug, Clone, PartialEq)]
pub enum Step {
    /// Keeps a record only where the BOOLEAN expression is true (not false, not NULL).
    Filter(PipelineExpr),
    /// Replaces the record by the values of the expressions, in order (`*` already expanded
    /// into column references).
    Project(Vec<PipelineExpr>),
}

impl Step {
    /// Whether an expression of the step calls `current_timestamp()`.
    pub fn reads_processing_time(&self) -> bool {
        match self {
            Step::Filter(e) => e.typed.reads_processing_time(),
            Step::Project(items) => items.iter().any(|e| e.typed.reads_processing_time()),
        }
    }

    /// The schema of the step's output, given its input's.
    pub fn output_schema(&self, input: &Schema) -> Schema {
        match self {
            Step::Filter(_) => input.clone(),
            Step::Project(items) => Schema::new(
                items.iter().map(|e| Field { name: e.name.clone(), data_type: e.typed.data_type }).collect(),
            ),
        }
    }
}

/// The schema after `steps`, given the schema before them.
pub fn schema_after(steps: &[Step], input: &Schema) -> Schema {
    steps.iter().fold(input.clone(), |schema, step| step.output_schema(&schema))
}
