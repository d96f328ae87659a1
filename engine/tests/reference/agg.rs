//! Exact aggregates over a full list of records (SEMANTICS.md "Aggregate functions"): every
//! function skips nulls; count -> BIGINT, sum of BIGINT -> BIGINT, sum of DOUBLE -> DOUBLE,
//! avg -> DOUBLE, min / max -> the input type, stddev = stddev_samp (null for n < 2),
//! approx_percentile -> the input value `v`, the smallest with at least `p` of the values <= v
//! (computed exactly: the sketch's bound holds for the exact answer).

use std::cmp::Ordering;

use eddy_engine::{Record, Value};

/// One measure of a reference query.
#[derive(Clone, Debug, PartialEq)]
pub enum Agg {
    /// `count(*)`: every record, nulls included.
    CountStar,
    /// `count(col)`.
    Count(usize),
    /// `sum(col)`.
    Sum(usize),
    /// `avg(col)`.
    Avg(usize),
    /// `min(col)`.
    Min(usize),
    /// `max(col)`.
    Max(usize),
    /// `stddev(col)` (sample).
    StddevSamp(usize),
    /// `approx_percentile(col, p)` with a single percentage.
    Percentile(usize, f64),
    /// `approx_percentile(col, array(p...))`: a list of results, one per percentage.
    Percentiles(usize, Vec<f64>),
}

/// Numeric order of two non-null values of one column (BIGINT, DOUBLE or TIMESTAMP).
fn num_cmp(a: &Value, b: &Value) -> Ordering {
    match (a, b) {
        (Value::Long(x), Value::Long(y)) => x.cmp(y),
        (Value::Int(x), Value::Int(y)) => x.cmp(y),
        (Value::Timestamp(x), Value::Timestamp(y)) => x.cmp(y),
        (Value::Double(x), Value::Double(y)) => x.total_cmp(y),
        _ => panic!("reference compares only same-typed numbers, got {a:?} and {b:?}"),
    }
}

fn as_f64(v: &Value) -> f64 {
    match v {
        Value::Long(x) => *x as f64,
        Value::Int(x) => f64::from(*x),
        Value::Double(x) => *x,
        other => panic!("not a number: {other:?}"),
    }
}

impl Agg {
    /// The input column, if any.
    pub fn column(&self) -> Option<usize> {
        match self {
            Agg::CountStar => None,
            Agg::Count(c)
            | Agg::Sum(c)
            | Agg::Avg(c)
            | Agg::Min(c)
            | Agg::Max(c)
            | Agg::StddevSamp(c)
            | Agg::Percentile(c, _)
            | Agg::Percentiles(c, _) => Some(*c),
        }
    }

    /// The result over `records` (all of them: the caller picks which records count).
    pub fn eval(&self, records: &[&Record]) -> Value {
        let Some(col) = self.column() else {
            return Value::Long(records.len() as i64);
        };
        let vals: Vec<&Value> = records.iter().map(|r| &r.values[col]).filter(|v| !v.is_null()).collect();
        let n = vals.len();
        match self {
            Agg::CountStar => unreachable!("handled above"),
            Agg::Count(_) => Value::Long(n as i64),
            _ if n == 0 => Value::Null,
            Agg::Sum(_) => match vals[0] {
                Value::Long(_) => Value::Long(vals.iter().map(|v| v.as_i64().expect("long")).sum()),
                _ => Value::Double(vals.iter().map(|v| as_f64(v)).sum()),
            },
            Agg::Avg(_) => Value::Double(vals.iter().map(|v| as_f64(v)).sum::<f64>() / n as f64),
            Agg::Min(_) => (*vals.iter().min_by(|a, b| num_cmp(a, b)).expect("n > 0")).clone(),
            Agg::Max(_) => (*vals.iter().max_by(|a, b| num_cmp(a, b)).expect("n > 0")).clone(),
            Agg::StddevSamp(_) => {
                if n < 2 {
                    return Value::Null;
                }
                let mean = vals.iter().map(|v| as_f64(v)).sum::<f64>() / n as f64;
                let ss: f64 = vals.iter().map(|v| (as_f64(v) - mean).powi(2)).sum();
                Value::Double((ss / (n - 1) as f64).sqrt())
            }
            Agg::Percentile(_, p) => percentile(&vals, *p),
            Agg::Percentiles(_, ps) => Value::List(ps.iter().map(|p| percentile(&vals, *p)).collect()),
        }
    }
}

/// The smallest of `vals` (non-empty) with at least `p` of them <= it: the value of rank
/// `ceil(p * n)` (1-based), at least rank 1.
fn percentile(vals: &[&Value], p: f64) -> Value {
    let mut sorted = vals.to_vec();
    sorted.sort_by(|a, b| num_cmp(a, b));
    let n = sorted.len();
    let rank = ((p * n as f64).ceil() as usize).clamp(1, n);
    sorted[rank - 1].clone()
}

/// The measures of `aggs` over `records`, in order.
pub fn eval_all(aggs: &[Agg], records: &[&Record]) -> Vec<Value> {
    aggs.iter().map(|a| a.eval(records)).collect()
}
