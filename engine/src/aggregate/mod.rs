//! Aggregate functions: Spark's names, result types, null rules and default output names.
//!
//! INTERFACE STUB (to be completed): the operators rely on exactly this surface.

use std::sync::Arc;

use crate::schema::DataType;
use crate::value::Value;

/// Which function a measure computes (SEMANTICS.md "Aggregate functions").
#[derive(Clone, Debug)]
pub enum AggKind {
    /// `count(*)` / `count(1)`: every record.
    CountStar,
    /// `count(col)`: non-null values.
    Count,
    /// `sum(col)`: long input -> BIGINT, floating input -> DOUBLE.
    Sum,
    /// `avg(col)` (alias `mean`): DOUBLE.
    Avg,
    /// `min(col)`: input type.
    Min,
    /// `max(col)`: input type.
    Max,
    /// `stddev(col)` = `stddev_samp(col)`.
    StddevSamp,
    /// `stddev_pop(col)`.
    StddevPop,
    /// `variance(col)` = `var_samp(col)`.
    VarSamp,
    /// `var_pop(col)`.
    VarPop,
    /// `approx_count_distinct(col, rsd)`.
    ApproxCountDistinct {
        /// Relative standard error (Spark's default 0.05).
        rsd: f64,
    },
    /// `approx_percentile(col, percentage, accuracy)`.
    ApproxPercentile {
        /// Percentages in [0, 1].
        percentages: Vec<f64>,
        /// Whether the pipeline gave a list (result is an array) or a single number.
        list: bool,
        /// Accuracy (rank error <= 1 / accuracy); Spark's default 10000.
        accuracy: u32,
    },
    /// A user-defined aggregate (embedding API).
    User(Arc<dyn Aggregator>),
}

/// A user-defined aggregate function (embedding API): zero, reduce, merge, finish, optional
/// retract. State is a [`Value`] so it can be snapshotted like any other.
pub trait Aggregator: Send + Sync + std::fmt::Debug {
    /// The function's name (used in the default output name `name(column)`).
    fn name(&self) -> &str;
    /// The result type.
    fn result_type(&self, input: DataType) -> DataType;
    /// The initial state.
    fn zero(&self) -> Value;
    /// Folds one non-null input value into the state.
    fn reduce(&self, state: &mut Value, input: &Value);
    /// Merges another state into this one.
    fn merge(&self, state: &mut Value, other: &Value);
    /// The result of a state.
    fn finish(&self, state: &Value) -> Value;
    /// Removes one input value previously reduced; `false` when not supported (the default).
    fn retract(&self, _state: &mut Value, _input: &Value) -> bool {
        false
    }
}

/// One compiled measure: a function over an input column, with its result type and output name.
#[derive(Clone, Debug)]
pub struct AggregateFn {
    /// The function.
    pub kind: AggKind,
    /// Input column index in the record; `None` for `count(*)`.
    pub input: Option<usize>,
    /// Input column type (BIGINT for `count(*)`).
    pub input_type: DataType,
}

/// The running state of one measure for one group / window / pane.
#[derive(Clone, Debug)]
pub enum AggState {
    /// Placeholder until the real states land.
    Todo,
}

impl AggregateFn {
    /// The result type (Spark's).
    pub fn result_type(&self) -> DataType {
        todo_type()
    }
    /// A fresh state (no input).
    pub fn new_state(&self) -> AggState {
        AggState::Todo
    }
    /// Adds one input value (NULLs are skipped, except by count(*)).
    pub fn update(&self, _state: &mut AggState, _v: &Value) {}
    /// Whether [`AggregateFn::retract`] is supported.
    pub fn can_retract(&self) -> bool {
        false
    }
    /// Removes one input value previously added; returns `false` if unsupported.
    pub fn retract(&self, _state: &mut AggState, _v: &Value) -> bool {
        false
    }
    /// Merges `other` into `state`.
    pub fn merge(&self, _state: &mut AggState, _other: &AggState) {}
    /// The result.
    pub fn finish(&self, _state: &AggState) -> Value {
        Value::Null
    }
}

impl AggState {
    /// The state, serialised (for snapshots).
    pub fn to_bytes(&self) -> Vec<u8> {
        Vec::new()
    }
}

/// Errors of aggregate construction and state restore.
#[derive(Debug, thiserror::Error)]
pub enum AggregateError {
    /// A state that cannot be read.
    #[error("bad aggregate state: {0}")]
    BadState(String),
}

impl AggregateFn {
    /// Reads a state written by [`AggState::to_bytes`].
    ///
    /// # Errors
    /// [`AggregateError::BadState`] when the bytes are not such a state.
    pub fn state_from_bytes(&self, _bytes: &[u8]) -> Result<AggState, AggregateError> {
        Ok(AggState::Todo)
    }
}

fn todo_type() -> DataType {
    DataType::Long
}
