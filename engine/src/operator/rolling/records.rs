//! Compact storage of a key's records: one event time and one [`Cell`] per *lane* (a distinct
//! input column read by some measure), column-wise in ring buffers sorted by event time.
//!
//! Every measure of the query reads the same copy of a record (SEMANTICS.md "Rolling window":
//! several measures share one copy of each record): a measure names its lane, `count(*)` none.

use std::borrow::Cow;
use std::cmp::Ordering;
use std::collections::VecDeque;

use crate::schema::DataType;
use crate::time::Timestamp;
use crate::value::Value;

/// One measure input, stored by the kind of its column: doubles and floats as `f64` (a FLOAT is
/// widened exactly), integers, timestamps and booleans as `i64`, anything else boxed. 16 bytes.
#[derive(Clone, Debug, PartialEq)]
pub(super) enum Cell {
    /// NULL.
    Null,
    /// A DOUBLE or FLOAT.
    F(f64),
    /// An INT, BIGINT, TIMESTAMP (µs) or BOOLEAN (0 / 1).
    I(i64),
    /// Any other value (STRING).
    V(Box<Value>),
}

impl Cell {
    /// The cell of `v` for a column of type `ty`. A value of another kind than the column's (a
    /// bug of the caller) is kept boxed, so nothing is lost.
    #[inline]
    pub(super) fn of(v: &Value, ty: DataType) -> Cell {
        match (v, ty) {
            (Value::Null, _) => Cell::Null,
            (Value::Double(x), DataType::Double) => Cell::F(*x),
            (Value::Float(x), DataType::Float) => Cell::F(*x as f64),
            (Value::Long(x), DataType::Long) => Cell::I(*x),
            (Value::Int(x), DataType::Int) => Cell::I(*x as i64),
            (Value::Timestamp(t), DataType::Timestamp) => Cell::I(t.0),
            (Value::Bool(b), DataType::Boolean) => Cell::I(*b as i64),
            _ => Cell::V(Box::new(v.clone())),
        }
    }

    /// The integer of an INT, BIGINT, TIMESTAMP or BOOLEAN cell; `None` for any other.
    #[inline]
    pub(super) fn as_int(&self) -> Option<i64> {
        match *self {
            Cell::I(x) => Some(x),
            _ => None,
        }
    }

    /// Whether NULL.
    #[inline]
    pub(super) fn is_null(&self) -> bool {
        matches!(self, Cell::Null)
    }

    /// The value again, typed as the column `ty` ([`Cell::of`] inverted).
    #[inline]
    pub(super) fn value(&self, ty: DataType) -> Cow<'_, Value> {
        Cow::Owned(match (self, ty) {
            (Cell::Null, _) => Value::Null,
            (Cell::F(x), DataType::Float) => Value::Float(*x as f32),
            (Cell::F(x), _) => Value::Double(*x),
            (Cell::I(x), DataType::Int) => Value::Int(*x as i32),
            (Cell::I(x), DataType::Timestamp) => Value::Timestamp(Timestamp(*x)),
            (Cell::I(x), DataType::Boolean) => Value::Bool(*x != 0),
            (Cell::I(x), _) => Value::Long(*x),
            (Cell::V(v), _) => return Cow::Borrowed(v),
        })
    }

    /// The order of min / max ([`Value::total_cmp`]: NaN above every number, -0.0 == 0.0).
    #[inline(always)]
    pub(super) fn cmp(&self, other: &Cell, ty: DataType) -> Ordering {
        match (self, other) {
            (Cell::F(a), Cell::F(b)) => match (a.is_nan(), b.is_nan()) {
                (true, true) => Ordering::Equal,
                (true, false) => Ordering::Greater,
                (false, true) => Ordering::Less,
                _ => a.partial_cmp(b).unwrap_or(Ordering::Equal),
            },
            (Cell::I(a), Cell::I(b)) => a.cmp(b),
            _ => self.value(ty).total_cmp(&other.value(ty)),
        }
    }
}

/// Records sorted by event time (ties in arrival order), stored column-wise: `times[i]` and
/// `lanes[l][i]` are record `i`'s event time (µs) and lane-`l` input.
#[derive(Debug, Default)]
pub(super) struct Records {
    times: VecDeque<i64>,
    lanes: Box<[VecDeque<Cell>]>,
}

impl Records {
    /// No records, `lanes` cells each.
    pub(super) fn new(lanes: usize) -> Records {
        Records { times: VecDeque::new(), lanes: (0..lanes).map(|_| VecDeque::new()).collect() }
    }

    #[inline]
    pub(super) fn len(&self) -> usize {
        self.times.len()
    }

    #[inline]
    pub(super) fn is_empty(&self) -> bool {
        self.times.is_empty()
    }

    /// Event time of record `i` (µs).
    #[inline]
    pub(super) fn time(&self, i: usize) -> i64 {
        self.times[i]
    }

    /// The first event time.
    #[inline]
    pub(super) fn first_time(&self) -> Option<i64> {
        self.times.front().copied()
    }

    /// The last event time.
    #[inline]
    pub(super) fn last_time(&self) -> Option<i64> {
        self.times.back().copied()
    }

    /// Starts loading the first and last event times (software prefetch; reads this struct
    /// only).
    #[inline]
    pub(super) fn prefetch_times(&self) {
        prefetch_ends(&self.times);
        crate::prefetch::line(self.lanes.as_ptr().cast());
    }

    /// Starts loading the first and last cell of every lane (reads the lanes' box).
    #[inline]
    pub(super) fn prefetch_lanes(&self) {
        for lane in self.lanes.iter() {
            prefetch_ends(lane);
        }
    }

    /// Lane `l` of record `i`.
    #[inline]
    pub(super) fn cell(&self, l: usize, i: usize) -> &Cell {
        &self.lanes[l][i]
    }

    /// Where a record of event time `t` goes: after every record with time <= `t`.
    #[inline]
    fn position(&self, t: i64) -> usize {
        match self.times.back() {
            Some(&last) if last > t => self.times.partition_point(|&x| x <= t),
            _ => self.times.len(),
        }
    }

    /// Inserts a record in order; returns its index.
    pub(super) fn insert(&mut self, t: i64, cells: impl Iterator<Item = Cell>) -> usize {
        let p = self.position(t);
        if p == self.times.len() {
            self.times.push_back(t);
            for (lane, c) in self.lanes.iter_mut().zip(cells) {
                lane.push_back(c);
            }
        } else {
            self.times.insert(p, t);
            for (lane, c) in self.lanes.iter_mut().zip(cells) {
                lane.insert(p, c);
            }
        }
        p
    }

    /// Moves the first record of `self` into `to` (in order); returns its time and index there.
    pub(super) fn move_first(&mut self, to: &mut Records) -> Option<(i64, usize)> {
        let t = self.times.pop_front()?;
        let p = to.insert(t, self.lanes.iter_mut().map(|l| l.pop_front().unwrap_or(Cell::Null)));
        Some((t, p))
    }

    /// Drops the first `n` records.
    pub(super) fn drop_first(&mut self, n: usize) {
        for _ in 0..n.min(self.times.len()) {
            self.times.pop_front();
            for lane in self.lanes.iter_mut() {
                lane.pop_front();
            }
        }
    }

    /// Drops the first record.
    pub(super) fn pop_first(&mut self) {
        self.drop_first(1);
    }

    /// Every record, in order: its time and cells.
    pub(super) fn iter(&self) -> impl Iterator<Item = (i64, impl Iterator<Item = &Cell>)> {
        self.times.iter().enumerate().map(move |(i, &t)| (t, self.lanes.iter().map(move |l| &l[i])))
    }
}

/// Starts loading the first and last element of `q` (reads its header only).
#[inline]
pub(super) fn prefetch_ends<T>(q: &VecDeque<T>) {
    let (a, b) = q.as_slices();
    if let Some(first) = a.first() {
        crate::prefetch::line((first as *const T).cast());
    }
    if let Some(last) = b.last().or(a.last()) {
        crate::prefetch::line((last as *const T).cast());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_stay_sorted_by_time_with_ties_in_arrival_order() {
        let mut r = Records::new(1);
        for (t, v) in [(5, 1), (3, 2), (5, 3), (9, 4), (1, 5), (3, 6)] {
            r.insert(t, std::iter::once(Cell::I(v)));
        }
        let got: Vec<(i64, i64)> =
            r.iter().map(|(t, mut c)| (t, if let Some(Cell::I(v)) = c.next() { *v } else { -1 })).collect();
        assert_eq!(got, vec![(1, 5), (3, 2), (3, 6), (5, 1), (5, 3), (9, 4)]);
        let mut to = Records::new(1);
        to.insert(4, std::iter::once(Cell::Null));
        assert_eq!(r.move_first(&mut to), Some((1, 0)));
        assert_eq!(r.len(), 5);
        r.drop_first(2);
        assert_eq!(r.first_time(), Some(5));
    }

    #[test]
    fn cells_round_trip_their_column_type() {
        for (v, ty) in [
            (Value::Double(-0.5), DataType::Double),
            (Value::Float(1.25), DataType::Float),
            (Value::Long(i64::MIN), DataType::Long),
            (Value::Int(-7), DataType::Int),
            (Value::Timestamp(Timestamp(-3)), DataType::Timestamp),
            (Value::Bool(true), DataType::Boolean),
            (Value::Str("x".into()), DataType::String),
            (Value::Null, DataType::Long),
        ] {
            let c = Cell::of(&v, ty);
            assert_eq!(*c.value(ty), v, "{ty:?}");
        }
    }

    #[test]
    fn cell_order_is_value_total_order() {
        let vals = [f64::NAN, f64::INFINITY, 1.5, 0.0, -0.0, -2.0, f64::NEG_INFINITY];
        for a in vals {
            for b in vals {
                let (ca, cb) = (Cell::F(a), Cell::F(b));
                assert_eq!(ca.cmp(&cb, DataType::Double), Value::Double(a).total_cmp(&Value::Double(b)), "{a} {b}");
            }
        }
    }
}
