//! Aggregate functions: Spark's names, result types, null rules and default output names
//! (SEMANTICS.md "Aggregate functions").
//!
//! A **measure** is compiled once into an [`AggregateFn`] ([`AggregateFn::from_name`] checks the
//! function name, the input type and the parameters as Spark does); each group / window / pane
//! then holds an [`AggState`], driven by [`AggregateFn::update`], [`AggregateFn::retract`],
//! [`AggregateFn::merge`] and read with [`AggregateFn::finish`].
//!
//! | function | input | result | no non-null input | retract |
//! |---|---|---|---|---|
//! | `count(*)`, `count(col)` | any | BIGINT | 0 | yes |
//! | `sum` | INT, BIGINT / FLOAT, DOUBLE | BIGINT / DOUBLE | null | yes |
//! | `avg` (`mean`) | numeric | DOUBLE | null | yes |
//! | `min`, `max` | any column type | input type | null | no |
//! | `stddev_samp` (`stddev`, `std`), `var_samp` (`variance`) | numeric | DOUBLE | null; null for n = 1 | yes |
//! | `stddev_pop`, `var_pop` | numeric | DOUBLE | null; 0.0 for n = 1 | yes |
//! | `approx_count_distinct` | any | BIGINT | 0 | no |
//! | `approx_percentile` (`percentile_approx`) | numeric, TIMESTAMP | input type (array for a list) | null | no |
//! | `first` (`first_value`, `any_value`), `last` (`last_value`) | any column type | input type | null | no |
//! | `max_by`, `min_by` | a pair STRUCT<value, ordering> | the value's type | null | no |
//! | user-defined ([`Aggregator`]) | any | its own | `finish(zero)` | if it says so |
//!
//! `first` / `last` are Spark's `First` / `Last`: the value of the first / last record in the
//! order the state sees them (arrival order for a window aggregate; Spark calls them
//! non-deterministic for the same reason), a NULL value included; with `ignoreNulls`
//! ([`AggParams::ignore_nulls`], SQL's `first(x, true)` or `first(x) IGNORE NULLS`) the first /
//! last non-null value, NULL only when every value is. `max_by(x, ord)` /
//! `min_by(x, ord)` take `x` of a record with the largest / smallest non-null `ord`; the SQL
//! planner gives them the pair `named_struct('value', x, 'ordering', ord)` as their one input;
//! among tied orderings the first seen is kept (Spark: any tied row's value). None of the four
//! can retract: a rolling window recomputes them from the records in range, in its order.
//!
//! Numbers: long sums are exact (`i128`) and never wrap. An operator refuses a record that would
//! take an integer sum out of BIGINT ([`AggregateFn::sum_fits`]; the record goes to the dead
//! letters with `ARITHMETIC_OVERFLOW`, SEMANTICS.md "Aggregate functions"), where Spark 4's default
//! ANSI mode fails the whole query; a sum that is outside BIGINT all the same is NULL, as Spark's
//! `try_sum` (only a rolling window can hold one, see `LongSum::long_result`). Counts saturate at
//! `i64::MAX` (2^63 records: never in practice). Double sums and moments are double-double accumulators
//! ([`numeric`]), so values leaving a sliding window leave no drift.
//!
//! Merging panes ([`AggregateFn::merge`]) gives the result of one state over all their input:
//! exactly for count, long sums, min and max; for double sums and moments up to double-double
//! rounding (bit-identical after rounding to a double in practice; avg and the stddev family within
//! ~1e-15 relative); for `approx_count_distinct` exactly the same estimate (the composite
//! estimator depends only on the registers, which merge by maximum). `approx_percentile`: KLL
//! compacts with random bits (DataSketches seeds them per thread, not controllably), so once a
//! sketch holds more values than its `k` (~30k at the default accuracy) neither a merged sketch
//! nor a rerun is bit-identical; every answer is within the rank error `1 / accuracy` (99%
//! confidence). Below `k` values the sketch is exact and deterministic.

mod codec;
mod names;
pub mod numeric;
pub mod sketch;
mod state;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_props;
#[cfg(test)]
mod tests_sketch;

use std::sync::Arc;

use crate::schema::DataType;
use crate::value::Value;

pub use self::state::AggState;
pub(crate) use self::state::{SmallExtreme, SmallState};

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
    /// `first(col[, ignoreNulls])` (aliases `first_value`, `any_value`): the first value seen,
    /// NULL included unless `ignore_nulls` (Spark's `First`).
    First {
        /// Skip NULL values: the first non-null value (NULL when there is none).
        ignore_nulls: bool,
    },
    /// `last(col[, ignoreNulls])` (alias `last_value`): the last value seen, NULL included
    /// unless `ignore_nulls` (Spark's `Last`).
    Last {
        /// Skip NULL values: the last non-null value (NULL when there is none).
        ignore_nulls: bool,
    },
    /// `max_by(x, ord)` over the pair STRUCT<value, ordering>: the value of a largest ordering.
    MaxBy,
    /// `min_by(x, ord)` over the pair STRUCT<value, ordering>: the value of a smallest ordering.
    MinBy,
    /// A user-defined aggregate (embedding API).
    User(Arc<dyn Aggregator>),
}

/// A user-defined aggregate function (embedding API): zero, reduce, merge, finish, optional
/// retract. State is a [`Value`] so it can be snapshotted like any other.
///
/// The input column's type is not checked against the aggregator: `reduce` receives the
/// non-null values of whatever column the pipeline names, and must handle or ignore those it
/// cannot fold. No method may panic: unlike a scalar UDF's, a panic here is not caught per
/// record; it stops the partition actor that runs it and fails the run.
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
    /// Whether [`Aggregator::retract`] is supported (the default: `false`).
    fn can_retract(&self) -> bool {
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
    /// The measure's output name (`sum(v)`, or its alias), for messages such as
    /// `ARITHMETIC_OVERFLOW in sum(v)`; the function's name until [`AggregateFn::named`] sets it.
    pub name: String,
}

/// The `percentage` parameter of `approx_percentile`: one number, or a list (array result).
#[derive(Clone, Debug, PartialEq)]
pub enum Percentage {
    /// One percentage in [0, 1]: the result is one value.
    One(f64),
    /// A list of percentages in [0, 1]: the result is an array, in the list's order.
    List(Vec<f64>),
}

/// The optional parameters of a measure, as the pipeline file gives them (PIPELINE.md).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct AggParams {
    /// `approx_percentile`: required.
    pub percentage: Option<Percentage>,
    /// `approx_percentile`: default 10000 (Spark's `ApproximatePercentile.DEFAULT_PERCENTILE_ACCURACY`).
    pub accuracy: Option<i64>,
    /// `approx_count_distinct`: default 0.05.
    pub rsd: Option<f64>,
    /// `first` / `last` (and their aliases): Spark's `ignoreNulls` (SQL's `first(x, true)`),
    /// default false; `true` is refused for any other function.
    pub ignore_nulls: bool,
}

/// Errors building a measure ([`AggregateFn::from_name`]) or restoring a state
/// ([`AggregateFn::state_from_bytes`]).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum AggregateError {
    /// The function name is not one Eddy knows.
    #[error(
        "unknown aggregate function {given:?} (expected one of count, sum, avg, mean, min, max, \
         stddev, std, stddev_samp, stddev_pop, variance, var_samp, var_pop, \
         approx_count_distinct, approx_percentile, percentile_approx, first, first_value, last, \
         last_value, any_value, max_by, min_by)"
    )]
    UnknownFunction {
        /// The name given.
        given: String,
    },
    /// The function needs an input column and none (or `*`) was given.
    #[error("{function}(*) is not allowed: {function} needs a column (only count accepts `*`)")]
    MissingColumn {
        /// The function.
        function: String,
    },
    /// The input column's type is not one the function accepts (as Spark's analyser refuses it).
    #[error("{function} cannot take a {given} column (expected {expected}), as in Spark")]
    WrongInputType {
        /// The function.
        function: String,
        /// The column's type.
        given: DataType,
        /// What the function accepts.
        expected: &'static str,
    },
    /// A parameter is out of range, missing, or not one of this function's.
    #[error("{function}: bad parameter `{parameter}`: {given} (expected {expected})")]
    BadParameter {
        /// The function.
        function: String,
        /// The parameter's name.
        parameter: &'static str,
        /// The value given (or "missing").
        given: String,
        /// What is accepted.
        expected: String,
    },
    /// A serialised state does not decode for this function.
    #[error("cannot restore a {function} state from {len} bytes: {why}")]
    BadState {
        /// The function's name.
        function: String,
        /// Length of the bytes given.
        len: usize,
        /// What is wrong.
        why: String,
    },
}

/// Spark's default `rsd` of `approx_count_distinct`.
pub const DEFAULT_RSD: f64 = 0.05;
/// Spark's default `accuracy` of `approx_percentile`.
pub const DEFAULT_ACCURACY: u32 = 10_000;

fn is_column_type(t: DataType) -> bool {
    !matches!(t, DataType::Window | DataType::Array(_))
}

impl AggregateFn {
    /// Builds a measure from the function name as the pipeline file writes it (case-insensitive,
    /// Spark's names and aliases: `mean` = `avg`, `std` / `stddev` = `stddev_samp`, `variance` =
    /// `var_samp`, `percentile_approx` = `approx_percentile`, `first_value` = `any_value` =
    /// `first`, `last_value` = `last`), its input column (`None` for
    /// `count(*)`), and its parameters.
    ///
    /// # Errors
    /// - [`AggregateError::UnknownFunction`] for a name not in the table of the module docs;
    /// - [`AggregateError::MissingColumn`] for `*` given to another function than count;
    /// - [`AggregateError::WrongInputType`] where Spark's analyser refuses the type (e.g.
    ///   `sum` over STRING, `avg` over TIMESTAMP, `approx_percentile` over STRING);
    /// - [`AggregateError::BadParameter`] for a parameter of another function (`ignore_nulls`
    ///   for another function than first / last), a missing or
    ///   out-of-range `percentage` (each in [0, 1]), `accuracy` outside `1..=20000` (KLL's `k`
    ///   cannot pass 65535; Spark accepts up to 2^31 - 1), or an `rsd` needing fewer than 4 or more
    ///   than 21 bits of register index (Spark also refuses below 4: rsd above ~0.39).
    pub fn from_name(
        name: &str,
        input: Option<(usize, DataType)>,
        params: &AggParams,
    ) -> Result<AggregateFn, AggregateError> {
        let lower = name.to_ascii_lowercase();
        let function = lower.clone();
        let kind = match lower.as_str() {
            "count" => {
                if input.is_none() {
                    AggKind::CountStar
                } else {
                    AggKind::Count
                }
            }
            "sum" => AggKind::Sum,
            "avg" | "mean" => AggKind::Avg,
            "min" => AggKind::Min,
            "max" => AggKind::Max,
            "stddev" | "std" | "stddev_samp" => AggKind::StddevSamp,
            "stddev_pop" => AggKind::StddevPop,
            "variance" | "var_samp" => AggKind::VarSamp,
            "var_pop" => AggKind::VarPop,
            // Spark's any_value is first (with the same ignoreNulls argument)
            "first" | "first_value" | "any_value" => AggKind::First { ignore_nulls: params.ignore_nulls },
            "last" | "last_value" => AggKind::Last { ignore_nulls: params.ignore_nulls },
            "max_by" => AggKind::MaxBy,
            "min_by" => AggKind::MinBy,
            "approx_count_distinct" => {
                let rsd = params.rsd.unwrap_or(DEFAULT_RSD);
                check_rsd(&function, rsd)?;
                AggKind::ApproxCountDistinct { rsd }
            }
            "approx_percentile" | "percentile_approx" => {
                let (percentages, list) = check_percentage(&function, params.percentage.as_ref())?;
                let accuracy = check_accuracy(&function, params.accuracy)?;
                AggKind::ApproxPercentile { percentages, list, accuracy }
            }
            _ => {
                return Err(AggregateError::UnknownFunction { given: name.to_string() });
            }
        };
        let bad_param = |parameter: &'static str, given: String| AggregateError::BadParameter {
            function: function.clone(),
            parameter,
            given,
            expected: format!("no `{parameter}`: it is not a parameter of {function}"),
        };
        if params.ignore_nulls && !matches!(kind, AggKind::First { .. } | AggKind::Last { .. }) {
            return Err(bad_param("ignore_nulls", "true".into()));
        }
        if let (false, Some(rsd)) = (matches!(kind, AggKind::ApproxCountDistinct { .. }), params.rsd) {
            return Err(bad_param("rsd", rsd.to_string()));
        }
        if !matches!(kind, AggKind::ApproxPercentile { .. }) {
            if let Some(p) = &params.percentage {
                return Err(bad_param("percentage", format!("{p:?}")));
            }
            if let Some(a) = params.accuracy {
                return Err(bad_param("accuracy", a.to_string()));
            }
        }
        let Some((index, input_type)) = input else {
            if matches!(kind, AggKind::CountStar) {
                let name = format!("{function}(1)");
                return Ok(AggregateFn { kind, input: None, input_type: DataType::Long, name });
            }
            return Err(AggregateError::MissingColumn { function });
        };
        let expected = match kind {
            AggKind::Sum | AggKind::Avg => (!input_type.is_numeric()).then_some("a numeric column"),
            AggKind::StddevSamp | AggKind::StddevPop | AggKind::VarSamp | AggKind::VarPop => {
                (!input_type.is_numeric()).then_some("a numeric column")
            }
            AggKind::ApproxPercentile { .. } => ((!input_type.is_numeric() && input_type != DataType::Timestamp)
                || input_type.decimal().is_some())
            .then_some("an INT, BIGINT, FLOAT, DOUBLE or TIMESTAMP column (DECIMAL is not supported here)"),
            AggKind::MaxBy | AggKind::MinBy => (by_value_type(input_type).is_none())
                .then_some("a STRUCT<value, ordering> column (SQL's max_by(x, ord) / min_by(x, ord) build it)"),
            _ => (!is_column_type(input_type)).then_some("a column of the input schema"),
        };
        if let Some(expected) = expected {
            return Err(AggregateError::WrongInputType { function, given: input_type, expected });
        }
        Ok(AggregateFn { kind, input: Some(index), input_type, name: function })
    }

    /// The same measure under its output name (see [`AggregateFn::name`]).
    pub fn named(self, name: impl Into<String>) -> AggregateFn {
        AggregateFn { name: name.into(), ..self }
    }

    /// Whether this is `sum` over INT, BIGINT or DECIMAL (an exact sum of integers: a DECIMAL's
    /// unscaled values): the one built-in aggregate whose result can overflow (SEMANTICS.md
    /// "Aggregate functions"); see [`AggregateFn::sum_fits`].
    pub fn is_integer_sum(&self) -> bool {
        matches!(self.kind, AggKind::Sum)
            && matches!(self.input_type, DataType::Int | DataType::Long | DataType::Decimal { .. })
    }

    /// For an integer sum ([`AggregateFn::is_integer_sum`]): whether adding `v` to the states
    /// `states` (the panes or sessions that make up one window, all of this measure) keeps the
    /// window's sum within BIGINT. A NULL `v` adds nothing, but the states' own total is still
    /// checked (a record with a NULL value can merge two sessions). `true` for any other measure;
    /// states of another function count 0. Exact: the states hold their sums in `i128`.
    pub fn sum_fits<'a>(&self, states: impl IntoIterator<Item = &'a AggState>, v: &Value) -> bool {
        if let Some(input) = self.input_type.decimal() {
            return self.decimal_sum_fits(input, states, v);
        }
        let v = match *v {
            Value::Long(x) => x,
            Value::Int(x) => i64::from(x),
            _ => 0,
        };
        if !self.is_integer_sum() {
            return true;
        }
        let mut sum: i128 = 0;
        for st in states {
            if let AggState::LongSum(s) = st {
                sum = sum.saturating_add(s.sum);
            }
        }
        numeric::LongSum::fits(sum, v)
    }

    /// [`AggregateFn::sum_fits`] of a DECIMAL(p, s) sum: the window's exact sum stays within
    /// DECIMAL(min(38, p + 10), s), Spark's result type (past it Spark 4 with ANSI fails the
    /// query with NUMERIC_VALUE_OUT_OF_RANGE; the record goes to the dead letters instead).
    fn decimal_sum_fits<'a>(&self, input: (u8, u8), states: impl IntoIterator<Item = &'a AggState>, v: &Value) -> bool {
        let v = match v {
            Value::Decimal(d) => d.rescale(crate::decimal::MAX_PRECISION, input.1, crate::decimal::Rounding::HalfUp),
            _ => Ok(crate::decimal::Decimal::new(0, input.1)),
        };
        let Ok(v) = v else { return false };
        let mut sum = v.unscaled;
        for st in states {
            if let AggState::DecimalSum(s) = st {
                sum = sum.saturating_add(s.sum);
            }
        }
        let (p, s) = crate::decimal::sum_type(input);
        crate::decimal::Decimal::new(sum, s).fits(p)
    }

    /// A user-defined measure over column `input` of type `input_type`.
    pub fn user(aggregator: Arc<dyn Aggregator>, input: usize, input_type: DataType) -> AggregateFn {
        let name = aggregator.name().to_string();
        AggregateFn { kind: AggKind::User(aggregator), input: Some(input), input_type, name }
    }

    /// The function's name as Spark prints it in default output names (`count`, `sum`, `avg`,
    /// `stddev_samp`, ..., the user aggregator's name).
    pub fn function_name(&self) -> &str {
        match &self.kind {
            AggKind::CountStar | AggKind::Count => "count",
            AggKind::Sum => "sum",
            AggKind::Avg => "avg",
            AggKind::Min => "min",
            AggKind::Max => "max",
            AggKind::StddevSamp => "stddev_samp",
            AggKind::StddevPop => "stddev_pop",
            AggKind::VarSamp => "var_samp",
            AggKind::VarPop => "var_pop",
            AggKind::ApproxCountDistinct { .. } => "approx_count_distinct",
            AggKind::ApproxPercentile { .. } => "approx_percentile",
            AggKind::First { .. } => "first",
            AggKind::Last { .. } => "last",
            AggKind::MaxBy => "max_by",
            AggKind::MinBy => "min_by",
            AggKind::User(u) => u.name(),
        }
    }

    /// The result type (Spark's): BIGINT for count and approx_count_distinct; BIGINT / DOUBLE for
    /// sum over integers / floating values; DOUBLE for avg and the stddev / variance family; over
    /// DECIMAL(p, s), DECIMAL(min(38, p + 10), s) for sum and DECIMAL(min(38, p + 4),
    /// min(38, s + 4)) for avg (`crate::decimal::sum_type`, `avg_type`); the
    /// input type for min, max and approx_percentile (an array of it for a list of percentages).
    pub fn result_type(&self) -> DataType {
        match &self.kind {
            AggKind::CountStar | AggKind::Count | AggKind::ApproxCountDistinct { .. } => DataType::Long,
            AggKind::Sum => match self.input_type {
                DataType::Float | DataType::Double => DataType::Double,
                DataType::Decimal { precision, scale } => {
                    let (precision, scale) = crate::decimal::sum_type((precision, scale));
                    DataType::Decimal { precision, scale }
                }
                _ => DataType::Long,
            },
            AggKind::Avg if self.input_type.decimal().is_some() => {
                let (precision, scale) = crate::decimal::avg_type(self.input_type.decimal().unwrap_or((38, 0)));
                DataType::Decimal { precision, scale }
            }
            AggKind::Avg | AggKind::StddevSamp | AggKind::StddevPop | AggKind::VarSamp | AggKind::VarPop => {
                DataType::Double
            }
            AggKind::Min | AggKind::Max | AggKind::First { .. } | AggKind::Last { .. } => self.input_type,
            AggKind::MaxBy | AggKind::MinBy => by_value_type(self.input_type).unwrap_or(self.input_type),
            AggKind::ApproxPercentile { list: true, .. } => self.input_type.array_of().unwrap_or(self.input_type),
            AggKind::ApproxPercentile { list: false, .. } => self.input_type,
            AggKind::User(u) => u.result_type(self.input_type),
        }
    }

    /// Whether [`AggregateFn::retract`] is supported: count, sum, avg and the stddev / variance
    /// family can; min, max and the sketches cannot (a removed extreme or register cannot be
    /// recovered from the state: recompute from panes instead); a user aggregate if it says so.
    pub fn can_retract(&self) -> bool {
        match &self.kind {
            AggKind::CountStar
            | AggKind::Count
            | AggKind::Sum
            | AggKind::Avg
            | AggKind::StddevSamp
            | AggKind::StddevPop
            | AggKind::VarSamp
            | AggKind::VarPop => true,
            AggKind::Min
            | AggKind::Max
            | AggKind::First { .. }
            | AggKind::Last { .. }
            | AggKind::MaxBy
            | AggKind::MinBy
            | AggKind::ApproxCountDistinct { .. }
            | AggKind::ApproxPercentile { .. } => false,
            AggKind::User(u) => u.can_retract(),
        }
    }
}

/// The value's type of a `max_by` / `min_by` input: a STRUCT of two fields (value, ordering)
/// whose ordering is a column type; `None` for any other type.
pub fn by_value_type(input: DataType) -> Option<DataType> {
    let DataType::Struct(ty) = input else { return None };
    match ty.fields() {
        [value, ordering] if is_column_type(ordering.data_type) => Some(value.data_type),
        _ => None,
    }
}

fn check_rsd(function: &str, rsd: f64) -> Result<(), AggregateError> {
    let lg_k = sketch::hll_lg_k(rsd);
    let (lo, hi) = sketch::HLL_LG_K_RANGE;
    if rsd.is_nan() || rsd <= 0.0 || !(lo as f64..=hi as f64).contains(&lg_k) {
        return Err(AggregateError::BadParameter {
            function: function.to_string(),
            parameter: "rsd",
            given: rsd.to_string(),
            expected: "a relative standard deviation in [0.000764, 0.391) (HLL with 2^4 to \
                       2^21 registers; Spark refuses above 0.39 too)"
                .to_string(),
        });
    }
    Ok(())
}

fn check_percentage(function: &str, p: Option<&Percentage>) -> Result<(Vec<f64>, bool), AggregateError> {
    let bad = |given: String| AggregateError::BadParameter {
        function: function.to_string(),
        parameter: "percentage",
        given,
        expected: "a number in [0, 1] or a non-empty list of them".to_string(),
    };
    let (ps, list) = match p {
        None => return Err(bad("missing".to_string())),
        Some(Percentage::One(x)) => (vec![*x], false),
        Some(Percentage::List(xs)) => (xs.clone(), true),
    };
    if ps.is_empty() || ps.iter().any(|x| !(0.0..=1.0).contains(x)) {
        return Err(bad(format!("{ps:?}")));
    }
    Ok((ps, list))
}

/// Largest accuracy whose rank error KLL can meet (`k <= 65535`).
pub const MAX_ACCURACY: u32 = 20_000;

fn check_accuracy(function: &str, a: Option<i64>) -> Result<u32, AggregateError> {
    let a = a.unwrap_or(DEFAULT_ACCURACY as i64);
    if !(1..=MAX_ACCURACY as i64).contains(&a) {
        return Err(AggregateError::BadParameter {
            function: function.to_string(),
            parameter: "accuracy",
            given: a.to_string(),
            expected: format!(
                "an integer in 1..={MAX_ACCURACY} (rank error 1/accuracy; a KLL sketch cannot be \
                 more precise)"
            ),
        });
    }
    Ok(a as u32)
}
