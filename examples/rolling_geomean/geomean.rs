//! The geometric mean as a user aggregate (`Aggregator`): `exp(mean(ln x))` over the positive
//! values of a numeric column (zero, negative and NULL values are left out, as a geometric mean
//! of them is not defined); NULL when there is none.
//!
//! The state is `[sum of ln x (DOUBLE), its compensation (DOUBLE), count (BIGINT)]`, a
//! `Value::List`, so it is checkpointed as the built-in states are. The sum is compensated
//! (Neumaier's two-sum), so that logarithms added and later retracted leave no visible drift: a
//! window that holds one price again gives that price back, not a neighbour of it. [`GeoMean`] retracts (a value leaving a rolling window subtracts
//! its logarithm), so a rolling window updates it incrementally; [`GeoMeanRescan`] is the same
//! function without `retract`, which a rolling window recomputes from the records in range.

use eddy::{Aggregator, DataType, Value};

/// The geometric mean, with retract.
#[derive(Debug, Default)]
pub struct GeoMean;

/// The geometric mean without retract (a rolling window recomputes it at each change).
#[derive(Debug, Default)]
pub struct GeoMeanRescan;

/// `ln x` of a positive number; `None` for anything else.
fn ln(v: &Value) -> Option<f64> {
    let x = match v {
        Value::Double(x) => *x,
        Value::Float(x) => f64::from(*x),
        Value::Long(x) => *x as f64,
        Value::Int(x) => f64::from(*x),
        _ => return None,
    };
    (x > 0.0 && x.is_finite()).then(|| x.ln())
}

/// The state's parts: (sum of logarithms, its compensation, count).
fn parts(state: &Value) -> (f64, f64, i64) {
    match state {
        Value::List(items) => match &items[..] {
            [Value::Double(s), Value::Double(c), Value::Long(n)] => (*s, *c, *n),
            _ => (0.0, 0.0, 0),
        },
        _ => (0.0, 0.0, 0),
    }
}

fn state(sum: f64, compensation: f64, n: i64) -> Value {
    Value::List(vec![Value::Double(sum), Value::Double(compensation), Value::Long(n)].into())
}

/// `sum + x` with the rounding error of the addition added to `c` (Neumaier).
fn two_sum(sum: f64, c: f64, x: f64) -> (f64, f64) {
    let t = sum + x;
    let lost = if sum.abs() >= x.abs() { (sum - t) + x } else { (x - t) + sum };
    (t, c + lost)
}

fn add(s: &mut Value, input: &Value, sign: i64) {
    if let Some(l) = ln(input) {
        let (sum, c, n) = parts(s);
        *s = if n + sign == 0 {
            state(0.0, 0.0, 0)
        } else {
            let (sum, c) = two_sum(sum, c, sign as f64 * l);
            state(sum, c, n + sign)
        };
    }
}

fn finish(s: &Value) -> Value {
    match parts(s) {
        (_, _, 0) => Value::Null,
        (sum, c, n) => Value::Double(((sum + c) / n as f64).exp()),
    }
}

impl Aggregator for GeoMean {
    fn name(&self) -> &str {
        "geomean"
    }
    fn result_type(&self, _input: DataType) -> DataType {
        DataType::Double
    }
    fn zero(&self) -> Value {
        state(0.0, 0.0, 0)
    }
    fn reduce(&self, s: &mut Value, input: &Value) {
        add(s, input, 1);
    }
    fn merge(&self, s: &mut Value, other: &Value) {
        let ((a, ca, m), (b, cb, n)) = (parts(s), parts(other));
        let (sum, c) = two_sum(a, ca + cb, b);
        *s = state(sum, c, m + n);
    }
    fn finish(&self, s: &Value) -> Value {
        finish(s)
    }
    fn retract(&self, s: &mut Value, input: &Value) -> bool {
        add(s, input, -1);
        true
    }
    fn can_retract(&self) -> bool {
        true
    }
}

impl Aggregator for GeoMeanRescan {
    fn name(&self) -> &str {
        "geomean_rescan"
    }
    fn result_type(&self, input: DataType) -> DataType {
        GeoMean.result_type(input)
    }
    fn zero(&self) -> Value {
        GeoMean.zero()
    }
    fn reduce(&self, s: &mut Value, input: &Value) {
        GeoMean.reduce(s, input);
    }
    fn merge(&self, s: &mut Value, other: &Value) {
        GeoMean.merge(s, other);
    }
    fn finish(&self, s: &Value) -> Value {
        finish(s)
    }
}
