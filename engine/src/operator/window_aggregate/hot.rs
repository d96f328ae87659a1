//! [`Hot`]: the measure states of a group's parked last pane or session, held in the group's
//! slot in their compact form ([`SmallState`]: counts, and sums of doubles that have seen only
//! finite values) when the query has at most [`HOT`] measures and every state has one, so that
//! the per-record path touches the slot's first two cache lines only (not the group's vector of
//! states). Moved in and out of the vector only when the last pane / session is parked or
//! unparked (structural changes, or an input the compact form cannot take: never per record in
//! the steady state).

use crate::aggregate::{AggKind, AggState, AggregateFn, SmallExtreme, SmallState};
use crate::schema::DataType;
use crate::value::{Record, Value};

use super::measure_input;

/// Most measures whose states are kept inline.
pub(crate) const HOT: usize = 2;

/// How [`Hot::update_ops`] updates one measure's inline state, decided once per operator from
/// the measure's [`AggregateFn`] (so that the per-record path does not decode the function):
/// every function with a compact state has its op, done in place as
/// [`AggregateFn::update_small`] would; another state or input (a NULL for min / max, a value
/// the compact state declines) goes to [`AggregateFn::update_small`], out of line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum HotOp {
    /// `count(*)`.
    CountStar,
    /// `count(col)`, `col` the input column.
    Count(usize),
    /// `sum(col)` / `avg(col)` of DOUBLE (a compact state only then).
    DoubleSum(usize),
    /// `max(col)` of BIGINT: [`HotOp::Extreme`] with the kind of value decided once (another
    /// kind, or the first value, goes the way of [`HotOp::Other`]).
    MaxLong(usize),
    /// `min(col)` of BIGINT, as [`HotOp::MaxLong`].
    MinLong(usize),
    /// `max(col)` (`max`) or `min(col)` of INT or TIMESTAMP.
    Extreme {
        /// The input column.
        col: usize,
        /// `max` (else `min`).
        max: bool,
    },
    /// Through [`AggregateFn::update_small`].
    Other,
    /// No measure: the ops of fewer than [`HOT`] measures end here.
    End,
}

impl HotOp {
    /// The ops of `measures` (only the first [`HOT`]: more are never inline), [`HotOp::End`]
    /// after the last.
    pub(crate) fn of_all(measures: &[AggregateFn]) -> [HotOp; HOT] {
        let mut ops = [HotOp::End; HOT];
        for (op, f) in ops.iter_mut().zip(measures) {
            *op = HotOp::of(f);
        }
        ops
    }

    /// The op of measure `f`.
    fn of(f: &AggregateFn) -> HotOp {
        match (&f.kind, f.input) {
            (AggKind::CountStar, _) => HotOp::CountStar,
            (AggKind::Count, Some(col)) => HotOp::Count(col),
            (AggKind::Sum | AggKind::Avg, Some(col)) => HotOp::DoubleSum(col),
            (AggKind::Max, Some(col)) if f.input_type == DataType::Long => HotOp::MaxLong(col),
            (AggKind::Min, Some(col)) if f.input_type == DataType::Long => HotOp::MinLong(col),
            (AggKind::Max, Some(col)) => HotOp::Extreme { col, max: true },
            (AggKind::Min, Some(col)) => HotOp::Extreme { col, max: false },
            _ => HotOp::Other,
        }
    }

    /// Applies the op in place, as [`AggregateFn::update_small`] would; `false` (the state
    /// unchanged) when it is not one the op does in place.
    #[inline(always)]
    fn apply(self, st: &mut SmallState, record: &Record) -> bool {
        // a value strictly beyond the kept one replaces it
        let beyond = |max: bool, x: i64, cur: i64| if max { x > cur } else { x < cur };
        match (self, st) {
            (HotOp::CountStar, SmallState::Count(n)) => {
                *n = n.saturating_add(1);
                true
            }
            (HotOp::Count(col), SmallState::Count(n)) => match record.values.get(col) {
                Some(v) => {
                    if !v.is_null() {
                        *n = n.saturating_add(1);
                    }
                    true
                }
                None => false,
            },
            (HotOp::DoubleSum(col), st) => record.values.get(col).is_some_and(|v| st.add_double(v)),
            (HotOp::MaxLong(col), SmallState::Extreme(SmallExtreme::Long(cur))) => match record.values.get(col) {
                Some(&Value::Long(x)) => {
                    *cur = x.max(*cur);
                    true
                }
                _ => false,
            },
            (HotOp::MinLong(col), SmallState::Extreme(SmallExtreme::Long(cur))) => match record.values.get(col) {
                Some(&Value::Long(x)) => {
                    *cur = x.min(*cur);
                    true
                }
                _ => false,
            },
            (HotOp::Extreme { col, max }, SmallState::Extreme(e)) => match (&mut *e, record.values.get(col)) {
                (SmallExtreme::Long(cur), Some(&Value::Long(x))) => {
                    if beyond(max, x, *cur) {
                        *cur = x;
                    }
                    true
                }
                (SmallExtreme::Int(cur), Some(&Value::Int(x))) => {
                    if beyond(max, i64::from(x), i64::from(*cur)) {
                        *cur = x;
                    }
                    true
                }
                (SmallExtreme::Timestamp(cur), Some(&Value::Timestamp(x))) => {
                    if beyond(max, x.0, cur.0) {
                        *cur = x;
                    }
                    true
                }
                _ => false,
            },
            _ => false,
        }
    }
}

/// Inline states of the parked last pane / session (see the module documentation).
#[derive(Debug, Default)]
pub(crate) struct Hot {
    states: [SmallState; HOT],
    /// Whether `states[..measures]` hold the last pane's states (else they are in the vector).
    used: bool,
}

impl Hot {
    /// Whether the inline states are in use.
    #[inline]
    pub(crate) fn used(&self) -> bool {
        self.used
    }

    /// Updates the inline states (in use) with `record`, as [`AggregateFn::update`] would the
    /// full ones. Returns `false` when a measure declined the input ([`AggregateFn::update_small`]):
    /// the states of the measures before it are updated, those from it on are not; the caller
    /// unparks and updates those from `first_declined` on, in the vector.
    #[inline(always)]
    pub(crate) fn update(&mut self, measures: &[AggregateFn], record: &Record) -> Result<(), usize> {
        for (k, (f, st)) in measures.iter().zip(self.states.iter_mut()).enumerate() {
            if !f.update_small(st, measure_input(f, record)) {
                return Err(k);
            }
        }
        Ok(())
    }

    /// [`Hot::update`] with the measures' [`HotOp`]s ([`HotOp::of_all`] of `measures`).
    #[inline(always)]
    pub(crate) fn update_ops(
        &mut self,
        ops: &[HotOp; HOT],
        measures: &[AggregateFn],
        record: &Record,
    ) -> Result<(), usize> {
        for (k, &op) in ops.iter().enumerate() {
            if op == HotOp::End {
                break;
            }
            if !op.apply(&mut self.states[k], record) {
                return self.update_from(k, measures, record);
            }
        }
        Ok(())
    }

    /// [`Hot::update`] of the measures from `from` on (out of line: the per-record path keeps
    /// its registers for the ops).
    #[cold]
    #[inline(never)]
    fn update_from(&mut self, from: usize, measures: &[AggregateFn], record: &Record) -> Result<(), usize> {
        for (k, (f, st)) in measures.iter().zip(self.states.iter_mut()).enumerate().skip(from) {
            if !f.update_small(st, measure_input(f, record)) {
                return Err(k);
            }
        }
        Ok(())
    }

    /// Moves the last `m` states of `v` inline (when `m <= HOT`, each has a compact form and
    /// they are not inline already).
    pub(crate) fn park(&mut self, v: &mut Vec<AggState>, m: usize) {
        if self.used || m > HOT || v.len() < m {
            return;
        }
        let tail = &v[v.len() - m..];
        let mut small = [SmallState::default(); HOT];
        for (s, st) in small.iter_mut().zip(tail) {
            match st.to_small() {
                Some(x) => *s = x,
                None => return,
            }
        }
        v.truncate(v.len() - m);
        self.states = small;
        self.used = true;
    }

    /// Starts the states of a new parked last item with nothing in it: inline when they can be
    /// (as [`Hot::park`] would put them), else appended to `v`. `self` must not be in use.
    pub(crate) fn start(&mut self, v: &mut Vec<AggState>, measures: &[AggregateFn]) {
        self.start_fresh(Hot::fresh(measures), v, measures);
    }

    /// The inline states of an item with nothing in it, when `measures` have them (`None`:
    /// they stay in the vector): what [`Hot::start`] puts in place, decided once per operator.
    pub(crate) fn fresh(measures: &[AggregateFn]) -> Option<[SmallState; HOT]> {
        if measures.len() > HOT {
            return None;
        }
        let mut small = [SmallState::default(); HOT];
        measures
            .iter()
            .zip(small.iter_mut())
            .all(|(f, s)| f.new_state().to_small().map(|x| *s = x).is_some())
            .then_some(small)
    }

    /// [`Hot::start`], `fresh` being [`Hot::fresh`] of `measures`.
    #[inline]
    pub(crate) fn start_fresh(
        &mut self,
        fresh: Option<[SmallState; HOT]>,
        v: &mut Vec<AggState>,
        measures: &[AggregateFn],
    ) {
        debug_assert!(!self.used);
        match fresh {
            Some(small) => {
                self.states = small;
                self.used = true;
            }
            None => v.extend(measures.iter().map(AggregateFn::new_state)),
        }
    }

    /// Moves the inline states back to the end of `v` (as full states).
    pub(crate) fn unpark(&mut self, v: &mut Vec<AggState>, m: usize) {
        if !self.used {
            return;
        }
        v.extend(self.states.iter().take(m).map(|s| s.to_state()));
        self.used = false;
    }

    /// Moves the parked last item of a group (pane or session) back to the end of `items`, and
    /// its inline states back to the end of `states` (before a structural change); `m` is the
    /// number of measures.
    #[inline]
    pub(crate) fn unpark_last<T>(
        &mut self,
        last: &mut Option<T>,
        items: &mut Vec<T>,
        states: &mut Vec<AggState>,
        m: usize,
    ) {
        self.unpark(states, m);
        if let Some(p) = last.take() {
            items.push(p);
        }
    }

    /// Parks the last of `items` and its states (the group at rest).
    #[inline]
    pub(crate) fn park_last<T>(
        &mut self,
        last: &mut Option<T>,
        items: &mut Vec<T>,
        states: &mut Vec<AggState>,
        m: usize,
    ) {
        if last.is_none() {
            *last = items.pop();
        }
        if last.is_some() {
            self.park(states, m);
        }
    }

    /// Adds `record` to the parked last item, item `i()` of its group (the group at rest):
    /// inline when its states are, else (or from a measure that declines the compact form on) in
    /// `states[i * m..(i + 1) * m]`. `i` is called only then: the item count lies outside the
    /// bytes the per-record prefetch loads. (Inlined in the per-record paths of the panes and
    /// sessions, which call it once per record.)
    #[inline(always)]
    pub(crate) fn update_last(
        &mut self,
        states: &mut Vec<AggState>,
        i: impl FnOnce() -> usize,
        measures: &[AggregateFn],
        record: &Record,
    ) {
        let m = measures.len();
        let from = if self.used {
            match self.update(measures, record) {
                Ok(()) => return,
                Err(k) => {
                    self.unpark(states, m);
                    k
                }
            }
        } else {
            0
        };
        let i = i();
        for (f, st) in measures[from..].iter().zip(&mut states[i * m + from..(i + 1) * m]) {
            f.update(st, measure_input(f, record));
        }
    }

    /// The inline states (in use) of `m` measures, as full states.
    pub(crate) fn full(&self, m: usize) -> Vec<AggState> {
        self.states.iter().take(m).map(|s| s.to_state()).collect()
    }

    /// Drops the inline states.
    pub(crate) fn clear(&mut self) {
        self.used = false;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::aggregate::AggKind;
    use crate::schema::DataType;
    use crate::value::Value;

    fn counts(v: &[AggState]) -> Vec<i64> {
        v.iter().map(|s| if let AggState::Count(n) = s { *n } else { -1 }).collect()
    }

    #[test]
    fn parking_moves_the_last_states_inline_and_back_in_order() {
        let mut v: Vec<AggState> = (1..=6).map(AggState::Count).collect();
        let mut h = Hot::default();
        h.park(&mut v, 2);
        assert!(h.used());
        assert_eq!(counts(&v), vec![1, 2, 3, 4]);
        assert_eq!(counts(&h.full(2)), vec![5, 6]);
        h.park(&mut v, 2); // already parked: nothing moves
        assert_eq!(v.len(), 4);
        let count =
            AggregateFn { kind: AggKind::CountStar, input: None, input_type: DataType::Long, name: String::new() };
        let rec = Record::new(vec![]);
        for _ in 0..10 {
            assert_eq!(h.update(&[count.clone(), count.clone()], &rec), Ok(()));
        }
        h.unpark(&mut v, 2);
        assert!(!h.used());
        assert_eq!(counts(&v), vec![1, 2, 3, 4, 15, 16]);
        // three measures stay in the vector
        h.park(&mut v, 3);
        assert!(!h.used());
        assert_eq!(v.len(), 6);
    }

    #[test]
    fn a_state_without_compact_form_stays_in_the_vector() {
        // a sum of BIGINT has no compact form
        let sum = AggregateFn { kind: AggKind::Sum, input: Some(0), input_type: DataType::Long, name: String::new() };
        let mut v = vec![AggState::Count(1), sum.new_state()];
        let mut h = Hot::default();
        h.park(&mut v, 2);
        assert!(!h.used());
        assert_eq!(v.len(), 2);
    }

    #[test]
    fn a_non_finite_input_is_declined_and_the_full_state_takes_it() {
        let sum = AggregateFn { kind: AggKind::Sum, input: Some(0), input_type: DataType::Double, name: String::new() };
        let count =
            AggregateFn { kind: AggKind::CountStar, input: None, input_type: DataType::Long, name: String::new() };
        let fs = [count, sum];
        let inputs = [1.5, 1e300, -1e300, 2.25, f64::INFINITY, 0.125];
        // reference: the full states, updated directly
        let mut reference: Vec<AggState> = fs.iter().map(AggregateFn::new_state).collect();
        let mut v: Vec<AggState> = fs.iter().map(AggregateFn::new_state).collect();
        let mut h = Hot::default();
        h.park(&mut v, 2);
        for x in inputs {
            let rec = Record::new(vec![Value::Double(x)]);
            for (f, st) in fs.iter().zip(reference.iter_mut()) {
                f.update(st, measure_input(f, &rec));
            }
            let from = if h.used() { h.update(&fs, &rec).err() } else { Some(0) };
            if let Some(k) = from {
                h.unpark(&mut v, 2);
                for (f, st) in fs[k..].iter().zip(&mut v[k..]) {
                    f.update(st, measure_input(f, &rec));
                }
                h.park(&mut v, 2);
            }
        }
        assert!(!h.used(), "a sum that saw an infinity has no compact form");
        let results: Vec<Value> = fs.iter().zip(&v).map(|(f, s)| f.finish(s)).collect();
        let expected: Vec<Value> = fs.iter().zip(&reference).map(|(f, s)| f.finish(s)).collect();
        assert_eq!(results, expected);
        assert_eq!(results[0], Value::Long(inputs.len() as i64));
    }

    /// Every op leaves the state [`AggregateFn::update_small`] leaves, or declines (then the
    /// caller goes through `update_small`): on a mix of kinds, NULLs and extremes.
    #[test]
    fn an_op_does_what_update_small_does_or_declines() {
        let values = [
            Value::Null,
            Value::Long(5),
            Value::Long(i64::MIN),
            Value::Long(i64::MAX),
            Value::Long(-3),
            Value::Int(7),
            Value::Int(-9),
            Value::Timestamp(crate::time::Timestamp(12)),
            Value::Double(2.5),
            Value::Double(f64::INFINITY),
            Value::Str("x".into()),
        ];
        let kinds = [AggKind::CountStar, AggKind::Count, AggKind::Sum, AggKind::Avg, AggKind::Max, AggKind::Min];
        let types = [DataType::Long, DataType::Int, DataType::Timestamp, DataType::Double];
        let mut applied = 0;
        for kind in &kinds {
            for input_type in &types {
                let f =
                    AggregateFn { kind: kind.clone(), input: Some(0), input_type: *input_type, name: String::new() };
                let op = HotOp::of(&f);
                let Some(start) = f.new_state().to_small() else { continue };
                // every sequence of three values
                for a in &values {
                    for b in &values {
                        for c in &values {
                            let (mut ours, mut reference) = (start, start);
                            for v in [a, b, c] {
                                let rec = Record::new(vec![v.clone()]);
                                let through_op = op.apply(&mut ours, &rec);
                                let small = f.update_small(&mut reference, measure_input(&f, &rec));
                                if through_op {
                                    applied += 1;
                                    assert!(small, "{f:?} {v:?}: the op took what update_small declines");
                                } else if !f.update_small(&mut ours, measure_input(&f, &rec)) {
                                    break;
                                }
                                assert_eq!(ours, reference, "{f:?} after {v:?}");
                            }
                        }
                    }
                }
            }
        }
        assert!(applied > 1000, "the ops applied ({applied})");
    }
}
