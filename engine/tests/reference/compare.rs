//! Row comparison: doubles within a relative tolerance of 1e-9 (absolute near zero), every
//! other value exactly and of the same type; rows of one batch / step as multisets.

use eddy_engine::Value;

/// Relative tolerance on doubles.
pub const REL_TOL: f64 = 1e-9;

/// Whether two doubles agree within [`REL_TOL`] (relative to the larger magnitude, at least 1).
pub fn close(a: f64, b: f64) -> bool {
    if a.is_nan() || b.is_nan() {
        return a.is_nan() && b.is_nan();
    }
    (a - b).abs() <= REL_TOL * a.abs().max(b.abs()).max(1.0)
}

/// Whether two values agree: same variant, doubles within tolerance, lists elementwise.
pub fn value_eq(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Double(x), Value::Double(y)) => close(*x, *y),
        (Value::List(x), Value::List(y)) => x.len() == y.len() && x.iter().zip(y.iter()).all(|(p, q)| value_eq(p, q)),
        _ => std::mem::discriminant(a) == std::mem::discriminant(b) && a == b,
    }
}

/// Whether two rows agree value by value.
pub fn row_eq(a: &[Value], b: &[Value]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| value_eq(x, y))
}

/// A sort key of a row's first `id_len` values (its identity: window, key, frontier): the
/// values' debug text, enough to line up two multisets whose identities are exact.
fn id_key(row: &[Value], id_len: usize) -> String {
    format!("{:?}", &row[..id_len.min(row.len())])
}

/// Compares two multisets of rows whose first `id_len` values identify them (compared exactly;
/// the rest within tolerance). `Err` says what differs.
pub fn same_multiset(expected: &[Vec<Value>], actual: &[Vec<Value>], id_len: usize) -> Result<(), String> {
    let mut e: Vec<&Vec<Value>> = expected.iter().collect();
    let mut a: Vec<&Vec<Value>> = actual.iter().collect();
    e.sort_by_cached_key(|r| id_key(r, id_len));
    a.sort_by_cached_key(|r| id_key(r, id_len));
    if e.len() == a.len() && e.iter().zip(&a).all(|(x, y)| row_eq(x, y)) {
        return Ok(());
    }
    Err(format!("expected {} rows:\n{}\nactual {} rows:\n{}", e.len(), show(&e), a.len(), show(&a)))
}

/// Compares two sequences of rows grouped by their first `key_len` values: for each key, the
/// rows of that key in order (rows of different keys may interleave freely).
pub fn same_per_key_sequences(expected: &[Vec<Value>], actual: &[Vec<Value>], key_len: usize) -> Result<(), String> {
    let group = |rows: &[Vec<Value>]| {
        let mut g: Vec<(String, Vec<Vec<Value>>)> = Vec::new();
        for r in rows {
            let k = id_key(r, key_len);
            match g.iter_mut().find(|(x, _)| *x == k) {
                Some((_, v)) => v.push(r.clone()),
                None => g.push((k, vec![r.clone()])),
            }
        }
        g.sort_by(|x, y| x.0.cmp(&y.0));
        g
    };
    let (e, a) = (group(expected), group(actual));
    let ok = e.len() == a.len()
        && e.iter().zip(&a).all(|((k1, r1), (k2, r2))| {
            k1 == k2 && r1.len() == r2.len() && r1.iter().zip(r2).all(|(x, y)| row_eq(x, y))
        });
    if ok {
        return Ok(());
    }
    let e: Vec<&Vec<Value>> = expected.iter().collect();
    let a: Vec<&Vec<Value>> = actual.iter().collect();
    Err(format!("expected (per key, in order):\n{}\nactual:\n{}", show(&e), show(&a)))
}

fn show(rows: &[&Vec<Value>]) -> String {
    rows.iter().map(|r| format!("  {}", show_row(r))).collect::<Vec<_>>().join("\n")
}

/// A compact rendering of a row for failure messages (timestamps in seconds).
pub fn show_row(r: &[Value]) -> String {
    let parts: Vec<String> = r
        .iter()
        .map(|v| match v {
            Value::Timestamp(t) => format!("@{}", fmt_secs(t.0)),
            Value::Window { start, end } => format!("[{},{})", fmt_secs(start.0), fmt_secs(end.0)),
            Value::Str(s) => s.to_string(),
            Value::Long(x) => format!("{x}"),
            Value::Double(x) => format!("{x}d"),
            Value::Null => "null".to_string(),
            other => format!("{other:?}"),
        })
        .collect();
    format!("[{}]", parts.join(", "))
}

fn fmt_secs(us: i64) -> String {
    if us % 1_000_000 == 0 { format!("{}s", us / 1_000_000) } else { format!("{us}us") }
}
