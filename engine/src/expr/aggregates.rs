//! Spark's aggregate functions that Eddy does not run, so that a query using one is refused as
//! such (naming the function, where it is written and the aggregates that run), not as a column
//! neither grouped nor aggregated or as an unknown function.

use super::{ExprError, Pos, Syntax, SyntaxKind};

/// The aggregate functions a `[query] sql` runs (SEMANTICS.md "Aggregate functions" and SQL.md
/// "Queries"), for messages; `count_if(c)` is planned as `count(if(c, 1, NULL))`.
pub const SUPPORTED_AGGREGATES: &str = "count, count_if, sum, avg (mean), min, max, stddev (std, stddev_samp), stddev_pop, \
     variance (var_samp), var_pop, approx_count_distinct, approx_percentile (percentile_approx), max_by, min_by, \
     first (first_value), last (last_value), any_value (count of several expressions counts the rows where all are \
     non-null; first, last and any_value take ignoreNulls: first(x, true) or first(x) IGNORE NULLS)";

/// Spark 4.3's aggregate functions (its `FunctionRegistry`) that Eddy does not run, lower case,
/// each with the supported way to write it where there is one.
const UNSUPPORTED: &[(&str, Option<&str>)] = &[
    ("collect_list", Some("it returns an ARRAY, and Eddy has no ARRAY type")),
    ("collect_set", Some("it returns an ARRAY, and Eddy has no ARRAY type")),
    ("array_agg", Some("it returns an ARRAY, and Eddy has no ARRAY type")),
    ("listagg", None),
    ("string_agg", None),
    ("median", Some("approx_percentile(x, 0.5) gives an approximate median")),
    ("percentile", Some("approx_percentile(x, p) gives an approximate percentile")),
    ("percentile_cont", Some("approx_percentile(x, p) gives an approximate percentile")),
    ("percentile_disc", Some("approx_percentile(x, p) gives an approximate percentile")),
    ("mode", None),
    ("try_sum", Some("sum(x): an overflowing sum sends the record to the dead-letter sink")),
    ("try_avg", Some("avg(x) is computed in DOUBLE (DECIMAL for DECIMAL input)")),
    ("bool_and", Some("min(c) is false when any c is false (false < true)")),
    ("every", Some("min(c) is false when any c is false (false < true)")),
    ("bool_or", Some("max(c) is true when any c is true (false < true)")),
    ("some", Some("max(c) is true when any c is true (false < true)")),
    ("any", Some("max(c) is true when any c is true (false < true)")),
    ("bit_and", None),
    ("bit_or", None),
    ("bit_xor", None),
    ("corr", None),
    ("covar_pop", None),
    ("covar_samp", None),
    ("kurtosis", None),
    ("skewness", None),
    ("regr_avgx", None),
    ("regr_avgy", None),
    ("regr_count", None),
    ("regr_intercept", None),
    ("regr_r2", None),
    ("regr_slope", None),
    ("regr_sxx", None),
    ("regr_sxy", None),
    ("regr_syy", None),
    ("histogram_numeric", None),
    ("count_min_sketch", None),
    ("hll_sketch_agg", None),
    ("hll_union_agg", None),
    ("grouping", None),
    ("grouping_id", None),
];

/// Whether `name` (any case) is one of Spark's aggregate functions that Eddy does not run.
pub fn is_unsupported_aggregate(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    UNSUPPORTED.iter().any(|(n, _)| *n == lower)
}

/// The error for a call of the unsupported aggregate `name` written at `pos`: the function's
/// name (lower case), why it does not run or what to write instead where there is a supported
/// equivalent, and [`SUPPORTED_AGGREGATES`]. A `name` that is not in the list gets no hint.
pub fn unsupported_aggregate_error(pos: Pos, name: &str) -> ExprError {
    let lower = name.to_ascii_lowercase();
    let hint = UNSUPPORTED.iter().find(|(n, _)| *n == lower).and_then(|(_, h)| *h);
    let found = match hint {
        Some(h) => format!("{lower}, not a supported aggregate function ({h})"),
        None => format!("{lower}, not a supported aggregate function"),
    };
    ExprError::Unsupported { pos, found, allowed: format!("the aggregate functions {SUPPORTED_AGGREGATES}") }
}

/// The first call of an unsupported aggregate in `s` (outermost first), as the error of
/// [`unsupported_aggregate_error`].
pub fn first_unsupported_aggregate(s: &Syntax) -> Option<ExprError> {
    if let SyntaxKind::Call { name, .. } = &s.kind
        && is_unsupported_aggregate(name)
    {
        return Some(unsupported_aggregate_error(s.pos, name));
    }
    s.children().into_iter().find_map(first_unsupported_aggregate)
}
