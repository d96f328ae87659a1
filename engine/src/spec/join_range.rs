//! The time range of a stream-stream join, read from its ON conjuncts (SEMANTICS.md "Joins":
//! `r.ts BETWEEN l.ts AND l.ts + INTERVAL 1 HOUR`, or comparisons of the two event-time
//! columns, each side possibly shifted by an interval), as Spark's `StreamingJoinHelper` reads
//! the bounds that let it evict state.
//!
//! Each bound is put in the form `right - left op c` (µs): `r.ts >= l.ts` is `r - l >= 0`,
//! `l.ts > r.ts - INTERVAL 10 MINUTES` is `r - l < 10 min`. A strict bound is the inclusive one
//! moved by 1 µs (timestamps are whole µs). The range is the intersection of every bound found;
//! a side without a bound stays open ([`Duration`] `i64::MIN` / `i64::MAX`), so the rows it would
//! evict are kept. The result is the [`TimeRange`] of a [`crate::operator::StreamJoin`]; the SQL
//! planner of stream-stream joins is its user (stream-stream joins are not planned from SQL yet).

use crate::expr::{BinaryOp, Literal, Syntax, SyntaxKind};
use crate::operator::TimeRange;
use crate::time::Duration;

/// A linear form `l * left + r * right + c` (µs) of one side of a comparison.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Linear {
    l: i64,
    r: i64,
    c: i64,
}

/// `s` as a linear form over the two event-time columns, when it is one: a time column, or one
/// plus or minus a day-time interval literal. `side_of` tells which time column (0 left, 1
/// right) a column reference is, if either.
fn linear(s: &Syntax, side_of: &dyn Fn(&[String]) -> Option<usize>) -> Option<Linear> {
    match &s.kind {
        SyntaxKind::Column(parts) => match side_of(parts)? {
            0 => Some(Linear { l: 1, r: 0, c: 0 }),
            _ => Some(Linear { l: 0, r: 1, c: 0 }),
        },
        SyntaxKind::Binary { op: op @ (BinaryOp::Plus | BinaryOp::Minus), left, right } => {
            let interval = |x: &Syntax| match &x.kind {
                SyntaxKind::Literal(Literal::Interval { micros, .. }) => Some(*micros),
                _ => None,
            };
            match (linear(left, side_of), interval(right), *op) {
                (Some(a), Some(d), BinaryOp::Plus) => Some(Linear { c: a.c.checked_add(d)?, ..a }),
                (Some(a), Some(d), _) => Some(Linear { c: a.c.checked_sub(d)?, ..a }),
                (None, _, BinaryOp::Plus) => {
                    let d = interval(left)?;
                    let b = linear(right, side_of)?;
                    Some(Linear { c: b.c.checked_add(d)?, ..b })
                }
                _ => None,
            }
        }
        _ => None,
    }
}

/// The bounds on `right - left` that `lhs op rhs` gives: `(lower, upper)`, either `None`.
/// `None` when the comparison is not one of `right - left` against a constant.
fn bound(lhs: Linear, op: BinaryOp, rhs: Linear) -> Option<(Option<i64>, Option<i64>)> {
    // lhs op rhs  <=>  (lhs - rhs) op 0
    let d = Linear { l: lhs.l - rhs.l, r: lhs.r - rhs.r, c: lhs.c.checked_sub(rhs.c)? };
    // as `right - left` op' k
    let (op, k) = match (d.l, d.r) {
        // right - left + c op 0  <=>  right - left op -c
        (-1, 1) => (op, d.c.checked_neg()?),
        // left - right + c op 0  <=>  right - left op' c, the comparison mirrored
        (1, -1) => (mirror(op)?, d.c),
        _ => return None,
    };
    Some(match op {
        BinaryOp::GtEq => (Some(k), None),
        BinaryOp::Gt => (Some(k.checked_add(1)?), None),
        BinaryOp::LtEq => (None, Some(k)),
        BinaryOp::Lt => (None, Some(k.checked_sub(1)?)),
        BinaryOp::Eq => (Some(k), Some(k)),
        _ => return None,
    })
}

fn mirror(op: BinaryOp) -> Option<BinaryOp> {
    Some(match op {
        BinaryOp::Gt => BinaryOp::Lt,
        BinaryOp::GtEq => BinaryOp::LtEq,
        BinaryOp::Lt => BinaryOp::Gt,
        BinaryOp::LtEq => BinaryOp::GtEq,
        BinaryOp::Eq => BinaryOp::Eq,
        _ => return None,
    })
}

/// The bounds one ON conjunct puts on `right - left` (µs): `(lower, upper)`, each inclusive, each
/// `None` when the conjunct gives none, if it is a time bound: a comparison (`< <= > >= =`) of
/// the two time columns (each possibly shifted by a day-time interval literal), or
/// `x BETWEEN a AND b` of them. `side_of` says which time column a column reference (its name
/// parts as written: `["l", "ts"]`) is: `Some(0)` the left input's, `Some(1)` the right's,
/// `None` neither. `None` for any other conjunct (an equality key, a filter).
pub fn conjunct_bounds(s: &Syntax, side_of: &dyn Fn(&[String]) -> Option<usize>) -> Option<(Option<i64>, Option<i64>)> {
    match &s.kind {
        SyntaxKind::Binary {
            op: op @ (BinaryOp::Lt | BinaryOp::LtEq | BinaryOp::Gt | BinaryOp::GtEq | BinaryOp::Eq),
            left,
            right,
        } => {
            let (a, b) = (linear(left, side_of)?, linear(right, side_of)?);
            bound(a, *op, b)
        }
        SyntaxKind::Between { expr, low, high, negated: false } => {
            // `x >= low AND x <= high`: one bound each, whichever side `x` is
            let x = linear(expr, side_of)?;
            let a = bound(x, BinaryOp::GtEq, linear(low, side_of)?)?;
            let b = bound(x, BinaryOp::LtEq, linear(high, side_of)?)?;
            Some((a.0.or(b.0), a.1.or(b.1)))
        }
        _ => None,
    }
}

/// The time range of the ON conjuncts `conjuncts`: the intersection of the bounds of those that
/// are time bounds ([`conjunct_bounds`], with the same `side_of`), with the indexes of the
/// conjuncts used; `None` when none is. A side without a bound is open (`i64::MIN` lower,
/// `i64::MAX` upper). An empty range (lower > upper) is returned as it is: no row can match.
pub fn time_range(
    conjuncts: &[&Syntax],
    side_of: &dyn Fn(&[String]) -> Option<usize>,
) -> Option<(TimeRange, Vec<usize>)> {
    let mut lower = i64::MIN;
    let mut upper = i64::MAX;
    let mut used = Vec::new();
    for (i, c) in conjuncts.iter().enumerate() {
        if let Some((lo, hi)) = conjunct_bounds(c, side_of) {
            lower = lower.max(lo.unwrap_or(i64::MIN));
            upper = upper.min(hi.unwrap_or(i64::MAX));
            used.push(i);
        }
    }
    (!used.is_empty()).then_some((TimeRange { lower: Duration(lower), upper: Duration(upper) }, used))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::expr::Pos;

    const MIN: i64 = 60_000_000;

    fn syn(kind: SyntaxKind) -> Syntax {
        Syntax { kind, pos: Pos::default() }
    }
    fn col(q: &str, n: &str) -> Syntax {
        syn(SyntaxKind::Column(vec![q.into(), n.into()]))
    }
    fn minutes(m: i64) -> Syntax {
        syn(SyntaxKind::Literal(Literal::Interval { micros: m * MIN, text: format!("INTERVAL '{m}' MINUTE") }))
    }
    fn bin(op: BinaryOp, a: Syntax, b: Syntax) -> Syntax {
        syn(SyntaxKind::Binary { op, left: Box::new(a), right: Box::new(b) })
    }
    fn between(x: Syntax, low: Syntax, high: Syntax) -> Syntax {
        syn(SyntaxKind::Between { expr: Box::new(x), low: Box::new(low), high: Box::new(high), negated: false })
    }
    /// `l.ts` is the left time, `r.ts` the right one.
    fn side_of(parts: &[String]) -> Option<usize> {
        match (parts[0].as_str(), parts.get(1).map(String::as_str)) {
            ("l", Some("ts")) => Some(0),
            ("r", Some("ts")) => Some(1),
            _ => None,
        }
    }
    fn range(conjuncts: &[Syntax]) -> Option<(i64, i64, Vec<usize>)> {
        let refs: Vec<&Syntax> = conjuncts.iter().collect();
        time_range(&refs, &side_of).map(|(r, used)| (r.lower.0, r.upper.0, used))
    }

    #[test]
    fn between_either_way_round_gives_the_range_of_right_minus_left() {
        use BinaryOp::{Minus, Plus};
        // r.ts BETWEEN l.ts AND l.ts + INTERVAL 10 MINUTES: [0, 10 min]
        let c = between(col("r", "ts"), col("l", "ts"), bin(Plus, col("l", "ts"), minutes(10)));
        assert_eq!(range(&[c]), Some((0, 10 * MIN, vec![0])));
        // l.ts BETWEEN r.ts - INTERVAL 5 MINUTES AND r.ts + INTERVAL 2 MINUTES: r - l in [-2, 5] min
        let c = between(col("l", "ts"), bin(Minus, col("r", "ts"), minutes(5)), bin(Plus, col("r", "ts"), minutes(2)));
        assert_eq!(range(&[c]), Some((-2 * MIN, 5 * MIN, vec![0])));
    }

    #[test]
    fn comparisons_intersect_strict_ones_move_by_a_microsecond_and_other_conjuncts_are_not_bounds() {
        use BinaryOp::{Eq, Gt, Lt, LtEq, Plus};
        let key = bin(Eq, col("l", "k"), col("r", "k"));
        // r.ts > l.ts AND l.ts + INTERVAL 1 HOUR >= r.ts AND r.ts <= l.ts + INTERVAL 30 MINUTES
        let c = [
            key.clone(),
            bin(Gt, col("r", "ts"), col("l", "ts")),
            bin(BinaryOp::GtEq, bin(Plus, col("l", "ts"), minutes(60)), col("r", "ts")),
            bin(LtEq, col("r", "ts"), bin(Plus, minutes(30), col("l", "ts"))),
        ];
        assert_eq!(range(&c), Some((1, 30 * MIN, vec![1, 2, 3])));
        // only a lower bound: the upper side stays open
        assert_eq!(range(&[bin(Lt, col("l", "ts"), col("r", "ts"))]), Some((1, i64::MAX, vec![0])));
        // equal event times
        assert_eq!(range(&[bin(Eq, col("l", "ts"), col("r", "ts"))]), Some((0, 0, vec![0])));
        // no time bound at all
        assert_eq!(range(&[key]), None);
        // a comparison of one side with itself, or of a time with a non-interval, is no bound
        assert_eq!(range(&[bin(Lt, col("l", "ts"), bin(Plus, col("l", "ts"), minutes(1)))]), None);
        assert_eq!(range(&[bin(Lt, col("l", "ts"), col("r", "other"))]), None);
    }
}
