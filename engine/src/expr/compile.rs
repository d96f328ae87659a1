//! Compilation: a [`Typed`] plan into closures, built once per expression. Evaluating a record
//! calls the closures; names, types and the plan are not looked at again.
//!
//! The per-record cost is what a filter or a computed column adds to every record of a source,
//! so the common shapes get closures of their own:
//! - an operand that is a column or a literal is read in place, by reference: no closure call,
//!   no clone (a STRING column's text is neither copied nor reference-counted); see [`Operand`];
//! - comparisons and `+ - * % div pmod` call their kernel on the operands' references;
//! - a one-argument function (`lower(key)`, `ts + INTERVAL 1 HOUR`, a cast) gets its argument
//!   by reference;
//! - the closures return a small error ([`Fail`]); [`Compiled::eval`] turns it into
//!   [`ExprError::Eval`] only when a record fails;
//! - a batch of records ([`Compiled::eval_batch`], the source steps' path) runs each node's
//!   closure in a loop over the batch, its values written straight into the records;
//! - a column compared with a constant (DOUBLE, BIGINT, INT, TIMESTAMP), a DOUBLE column plus,
//!   minus or times a constant and `ts ± INTERVAL` have a batch kernel whose common case is
//!   inlined into the loop ([`node_fast`]); `lower` / `upper` of a column copy the column's
//!   value where it is already in that case ([`node_same`]);
//! - a sub-expression that reads no column and calls no user function is evaluated once, when
//!   compiled (Spark's constant folding): `v >= 0` on a DOUBLE compares with `0.0`, not with a
//!   cast made per record.
//!
//! The rest (`CASE`, `IN`, `coalesce`, functions of two or more arguments) call their operands'
//! closures and [`Func::apply`] on the values.

use std::sync::Arc;

use super::functions::{ArithOp, CmpOp, Func, arith};
use super::udf::ScalarUdf;
use super::{EvalErrorKind, ExprError, Node, Typed};
use crate::schema::DataType;
use crate::value::{Record, Text, Value};

/// One compiled node on one record: the record's values in, the node's value out.
type One = Arc<dyn Fn(&[Value]) -> Result<Value, Fail> + Send + Sync>;

/// The same node over a batch of records ([`Compiled::eval_batch`]).
type Batch = Box<dyn Fn(&mut [Record], Dest<'_>, &mut Vec<(u32, Fail)>) + Send + Sync>;

/// One compiled node, by record and by batch: both run the same closure; the batch form runs it
/// in a loop of its own, so a batch pays one indirect call per node (not one per node and
/// record) and writes each value where it goes without passing it back through the caller.
struct Eval {
    one: One,
    batch: Batch,
}

impl Eval {
    #[inline(always)]
    fn call(&self, r: &[Value]) -> Result<Value, Fail> {
        (self.one)(r)
    }
}

/// Where [`Compiled::eval_batch`] puts each record's value.
pub(crate) enum Dest<'a> {
    /// Into column `k` of the record itself (the value there before is dropped; a record
    /// shorter than `k + 1` columns keeps nothing).
    Column(usize),
    /// Whether the value is TRUE, one per record, pushed in order (a filter); a record whose
    /// evaluation failed pushes `false`.
    Holds(&'a mut Vec<bool>),
    /// The value, one per record, pushed in order (a column computed apart from the records);
    /// a record whose evaluation failed pushes NULL.
    Values(&'a mut Vec<Value>),
}

/// Builds the node of closure `f`: `f` itself for one record, and `f` in a loop for a batch.
fn node<F>(f: F) -> Eval
where
    F: Fn(&[Value]) -> Result<Value, Fail> + Send + Sync + 'static,
{
    let f = Arc::new(f);
    let one: One = f.clone();
    Eval { one, batch: Box::new(move |records, dest, fails| over_batch(&*f, records, dest, fails)) }
}

/// [`node`] whose batch form has a fast case inlined into its loop: `fast` gives a record's
/// value when it can without failing (a column of the expected type against a constant, or
/// NULL); a record it gives `None` for (another type, NaN, an overflow, an error) goes to `f`,
/// out of line. The one-record form is `f` alone. `fast` must agree with `f` wherever it gives
/// a value (the property test `fast_kernels_agree_with_the_general_closures` checks the
/// kernels built here).
fn node_fast<F, G>(f: F, fast: G) -> Eval
where
    F: Fn(&[Value]) -> Result<Value, Fail> + Send + Sync + 'static,
    G: Fn(&[Value]) -> Option<Value> + Copy + Send + Sync + 'static,
{
    node_fast_holds(
        f,
        fast,
        #[inline(always)]
        move |r| fast(r).map(|v| matches!(v, Value::Bool(true))),
    )
}

/// [`node_fast`] with the filter's case of its own: `holds` gives whether a record's value is
/// TRUE (FALSE and NULL: `false`) when `fast` would give a value, without building it.
fn node_fast_holds<F, G, H>(f: F, fast: G, holds: H) -> Eval
where
    F: Fn(&[Value]) -> Result<Value, Fail> + Send + Sync + 'static,
    G: Fn(&[Value]) -> Option<Value> + Send + Sync + 'static,
    H: Fn(&[Value]) -> Option<bool> + Send + Sync + 'static,
{
    let one: One = Arc::new(f);
    let slow = one.clone();
    // The general closure is called out of line (`slow_*`), so that the loop keeps the fast
    // case's value in registers and writes it straight where it goes.
    let batch: Batch = Box::new(move |records, dest, fails| match dest {
        Dest::Column(k) => {
            for (i, r) in records.iter_mut().enumerate() {
                let values = &mut *r.values;
                if k < values.len()
                    && let Some(v) = fast(values)
                {
                    crate::value::overwrite(&mut values[k], v);
                    continue;
                }
                slow_into(&*slow, values, k, i, fails);
            }
        }
        Dest::Values(out) => {
            out.reserve(records.len());
            for (i, r) in records.iter().enumerate() {
                let v = match fast(&r.values) {
                    Some(v) => v,
                    None => slow_value(&*slow, &r.values, i, fails),
                };
                out.push(v);
            }
        }
        Dest::Holds(out) => {
            let holds = records.iter().enumerate().map(|(i, r)| match holds(&r.values) {
                Some(h) => h,
                None => matches!(slow_value(&*slow, &r.values, i, fails), Value::Bool(true)),
            });
            out.extend(holds);
        }
    });
    Eval { one, batch }
}

/// The node of a function of column `c` whose value is mostly its argument unchanged (`lower`
/// of text already in lower case): where `same` holds of the column's value, the batch form
/// copies it, without building a value of its own; elsewhere it calls `f` out of line, as
/// [`node_fast`] does. `same` must hold only where `f` gives its argument back.
///
/// A copy straight from one slot to another stays whole words. A value built apart and then
/// matched on (`node_fast`'s `Option<Value>`) is cut by the compiler at its tag byte: the 7
/// bytes of text before it go through the stack as two overlapping pieces, and reading them back
/// stalls the store forwarding, twice a record (about 10 ns).
fn node_same<F, S>(f: F, c: usize, same: S) -> Eval
where
    F: Fn(&[Value]) -> Result<Value, Fail> + Send + Sync + 'static,
    S: Fn(&Value) -> bool + Send + Sync + 'static,
{
    let one: One = Arc::new(f);
    let slow = one.clone();
    let batch: Batch = Box::new(move |records, dest, fails| match dest {
        Dest::Column(k) => {
            for (i, r) in records.iter_mut().enumerate() {
                let values = &mut *r.values;
                if k < values.len() && c < values.len() && k != c && same(&values[c]) {
                    let (x, slot) = if c < k {
                        let (a, b) = values.split_at_mut(k);
                        (&a[c], &mut b[0])
                    } else {
                        let (a, b) = values.split_at_mut(c);
                        (&b[0], &mut a[k])
                    };
                    if x.copy_plain_over_null(slot) {
                        continue;
                    }
                    *slot = x.clone();
                    continue;
                }
                slow_into(&*slow, values, k, i, fails);
            }
        }
        Dest::Values(out) => {
            out.reserve(records.len());
            for (i, r) in records.iter().enumerate() {
                let x = at(&r.values, c);
                out.push(if same(x) { x.clone() } else { slow_value(&*slow, &r.values, i, fails) });
            }
        }
        Dest::Holds(out) => {
            let holds = records.iter().enumerate().map(|(i, r)| match at(&r.values, c) {
                x if same(x) => matches!(x, Value::Bool(true)),
                _ => matches!(slow_value(&*slow, &r.values, i, fails), Value::Bool(true)),
            });
            out.extend(holds);
        }
    });
    Eval { one, batch }
}

/// [`node_fast`]'s general case for record `i` of a batch: `slow`'s value into `values[k]` (when
/// the record has that column), its failure to `fails`.
#[cold]
#[inline(never)]
fn slow_into(
    slow: &(dyn Fn(&[Value]) -> Result<Value, Fail> + Send + Sync),
    values: &mut [Value],
    k: usize,
    i: usize,
    fails: &mut Vec<(u32, Fail)>,
) {
    match slow(values) {
        Ok(v) => {
            if let Some(slot) = values.get_mut(k) {
                *slot = v;
            }
        }
        Err(e) => fails.push((i as u32, e)),
    }
}

/// [`node_fast`]'s general case for record `i` of a batch: `slow`'s value, NULL when it failed
/// (its failure to `fails`).
#[cold]
#[inline(never)]
fn slow_value(
    slow: &(dyn Fn(&[Value]) -> Result<Value, Fail> + Send + Sync),
    values: &[Value],
    i: usize,
    fails: &mut Vec<(u32, Fail)>,
) -> Value {
    slow(values).unwrap_or_else(|e| {
        fails.push((i as u32, e));
        Value::Null
    })
}

/// `f` on every record of `records`, its values to `dest`, its failures (record index, error) to
/// `fails`.
#[inline(always)]
fn over_batch<F>(f: &F, records: &mut [Record], dest: Dest<'_>, fails: &mut Vec<(u32, Fail)>)
where
    F: Fn(&[Value]) -> Result<Value, Fail>,
{
    match dest {
        Dest::Column(k) => {
            for (i, r) in records.iter_mut().enumerate() {
                match f(&r.values) {
                    Ok(v) => {
                        if let Some(slot) = r.values.get_mut(k) {
                            *slot = v;
                        }
                    }
                    Err(e) => fails.push((i as u32, e)),
                }
            }
        }
        Dest::Values(out) => {
            out.reserve(records.len());
            for (i, r) in records.iter().enumerate() {
                out.push(f(&r.values).unwrap_or_else(|e| {
                    fails.push((i as u32, e));
                    Value::Null
                }));
            }
        }
        Dest::Holds(out) => {
            out.reserve(records.len());
            for (i, r) in records.iter().enumerate() {
                match f(&r.values) {
                    Ok(v) => out.push(matches!(v, Value::Bool(true))),
                    Err(e) => {
                        fails.push((i as u32, e));
                        out.push(false);
                    }
                }
            }
        }
    }
}

/// A failed evaluation inside the closures: the error condition and the failing
/// sub-expression's name, boxed (failures are the rare path), so that a closure's result is no
/// larger than the [`Value`] it carries on the ok path (the box takes a niche of the value's
/// tag; a test holds it).
pub(crate) struct Fail(Box<(EvalErrorKind, Arc<str>)>);

impl From<Fail> for ExprError {
    fn from(f: Fail) -> ExprError {
        let (kind, expr) = *f.0;
        ExprError::Eval { kind, expr }
    }
}

/// A compiled expression: evaluates one record at a time.
pub struct Compiled {
    eval: Eval,
    data_type: DataType,
    name: Arc<str>,
}

impl std::fmt::Debug for Compiled {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Compiled").field("name", &self.name).field("data_type", &self.data_type).finish()
    }
}

impl Compiled {
    /// Compiles a bound expression, after the rewrites of Spark's optimizer that change what it
    /// gives (NULL propagation, sums and products of integers with their constants taken
    /// together, `IN` a list of NULLs: `engine/src/expr/optimize.rs`).
    pub fn new(t: &Typed) -> Compiled {
        let optimized = super::optimize::optimize(t);
        Compiled { eval: compile(&optimized), data_type: t.data_type, name: Arc::from(t.name.as_str()) }
    }

    /// The value of the expression on `record` (whose values are in the bound schema's order).
    ///
    /// # Errors
    /// [`ExprError::Eval`] where Spark under ANSI fails the query: division by zero, integer
    /// overflow, an invalid or out-of-range cast; it names the failing sub-expression.
    pub fn eval(&self, record: &Record) -> Result<Value, ExprError> {
        self.eval_values(&record.values)
    }

    /// [`Compiled::eval`] over a slice of values in schema order. A column index past the end
    /// of `values` reads NULL.
    ///
    /// # Errors
    /// As [`Compiled::eval`].
    #[inline]
    pub fn eval_values(&self, values: &[Value]) -> Result<Value, ExprError> {
        self.eval.call(values).map_err(ExprError::from)
    }

    /// [`Compiled::eval_values`] with the failure not yet made an [`ExprError`] (which is
    /// larger than the value: the per-record paths convert only when a record fails).
    #[inline]
    pub(crate) fn eval_raw(&self, values: &[Value]) -> Result<Value, Fail> {
        self.eval.call(values)
    }

    /// The expression on every record of `records` at once, each value to `dest`; the records
    /// it failed on go to `fails` (index in `records`, error), in record order. The same values
    /// and errors as [`Compiled::eval_raw`] record by record, with one indirect call per node
    /// for the whole batch.
    #[inline]
    pub(crate) fn eval_batch(&self, records: &mut [Record], dest: Dest<'_>, fails: &mut Vec<(u32, Fail)>) {
        (self.eval.batch)(records, dest, fails)
    }

    /// The result type.
    pub fn data_type(&self) -> DataType {
        self.data_type
    }

    /// Spark's name of the expression.
    pub fn name(&self) -> &str {
        &self.name
    }
}

#[cold]
fn fail(kind: EvalErrorKind, name: &Arc<str>) -> Fail {
    Fail(Box::new((kind, name.clone())))
}

/// The value read for a column index past the record's end.
const NULL: Value = Value::Null;

/// Where an operand's value comes from, read by reference: a column and a literal in place, any
/// other expression through its closure (the value then lives for the call). Implemented by
/// three types so that every operator is compiled once per combination of operand kinds, with
/// the column reads and literals inlined.
trait Operand: Send + Sync + 'static {
    /// `f` of the operand's value on record `r`.
    fn with<T>(&self, r: &[Value], f: impl FnOnce(&Value) -> T) -> Result<T, Fail>;

    /// The column, when the operand is one (for a batch kernel of its own: [`node_fast`]).
    fn column(&self) -> Option<usize> {
        None
    }

    /// The constant, when the operand is one.
    fn literal(&self) -> Option<&Value> {
        None
    }
}

/// A column of the record.
struct Col(usize);

impl Operand for Col {
    #[inline(always)]
    fn with<T>(&self, r: &[Value], f: impl FnOnce(&Value) -> T) -> Result<T, Fail> {
        Ok(f(r.get(self.0).unwrap_or(&NULL)))
    }

    fn column(&self) -> Option<usize> {
        Some(self.0)
    }
}

/// A constant.
struct Lit(Value);

impl Operand for Lit {
    #[inline(always)]
    fn with<T>(&self, _: &[Value], f: impl FnOnce(&Value) -> T) -> Result<T, Fail> {
        Ok(f(&self.0))
    }

    fn literal(&self) -> Option<&Value> {
        Some(&self.0)
    }
}

/// Any other expression.
struct Sub(Eval);

impl Operand for Sub {
    #[inline(always)]
    fn with<T>(&self, r: &[Value], f: impl FnOnce(&Value) -> T) -> Result<T, Fail> {
        let v = self.0.call(r)?;
        Ok(f(&v))
    }
}

/// An operand of one of the three kinds, before it picks the closure's type.
enum AnyOperand {
    Col(usize),
    Lit(Value),
    Sub(Eval),
}

fn operand(t: &Typed) -> AnyOperand {
    match &t.node {
        Node::Column(i) => AnyOperand::Col(*i),
        Node::Literal(v) => AnyOperand::Lit(v.clone()),
        _ => match compile_folding(t) {
            Ok(v) => AnyOperand::Lit(v),
            Err(e) => AnyOperand::Sub(e),
        },
    }
}

/// `t` compiled, or its value when it reads no column and calls no user function (every
/// built-in function is deterministic), evaluated once here: Spark's constant folding, so that
/// `v >= 0` on a DOUBLE `v` compares with the literal `0.0`, not with a cast of `0` made per
/// record. A constant whose evaluation fails (`1 / 0`) stays compiled: it fails on every record
/// as before. Each node is compiled once, so that a constant that fails inside another is not
/// compiled again for each attempt above it (which made nested failing constants exponential:
/// a 226-byte expression of `-`, `~` and `&` took minutes, found by the `sql_expression` fuzz
/// target).
fn compile_folding(t: &Typed) -> Result<Value, Eval> {
    let constant = !matches!(t.node, Node::Literal(_)) && is_constant(t);
    let eval = compile_node(t);
    if constant && let Ok(v) = eval.call(&[]) {
        return Ok(v);
    }
    Err(eval)
}

/// The value of `t`, a constant ([`is_constant`]), or its failure.
pub(super) fn evaluate_constant(t: &Typed) -> Result<Value, Fail> {
    compile_node(t).call(&[])
}

/// Whether `t` reads no column, calls no user function and does not read the clock
/// (`current_timestamp()` changes from batch to batch; a function added later that is not
/// deterministic, such as a random number, must make this false too, or it would be evaluated
/// once for the whole run).
pub(super) fn is_constant(t: &Typed) -> bool {
    match &t.node {
        Node::Literal(_) => true,
        Node::Column(_) | Node::Udf { .. } => false,
        Node::Cast { input, .. } => is_constant(input),
        Node::And(a, b) | Node::Or(a, b) => is_constant(a) && is_constant(b),
        Node::Case { branches, otherwise } => {
            branches.iter().all(|(c, v)| is_constant(c) && is_constant(v))
                && otherwise.as_deref().is_none_or(is_constant)
        }
        Node::Call { func: Func::CurrentTimestamp, .. } => false,
        Node::Coalesce(args) | Node::Call { args, .. } => args.iter().all(is_constant),
        Node::In { value, list, .. } => is_constant(value) && list.iter().all(is_constant),
    }
}

/// Builds the closure of a one-operand node for the operand's kind.
trait Build1 {
    fn build<A: Operand>(self, a: A) -> Eval;
}

/// Builds the closure of a two-operand node for the operands' kinds.
trait Build2 {
    fn build<A: Operand, B: Operand>(self, a: A, b: B) -> Eval;
}

fn build1(a: &Typed, k: impl Build1) -> Eval {
    match operand(a) {
        AnyOperand::Col(i) => k.build(Col(i)),
        AnyOperand::Lit(v) => k.build(Lit(v)),
        AnyOperand::Sub(e) => k.build(Sub(e)),
    }
}

fn build2(a: &Typed, b: &Typed, k: impl Build2) -> Eval {
    use AnyOperand as O;
    match (operand(a), operand(b)) {
        (O::Col(x), O::Col(y)) => k.build(Col(x), Col(y)),
        (O::Col(x), O::Lit(y)) => k.build(Col(x), Lit(y)),
        (O::Col(x), O::Sub(y)) => k.build(Col(x), Sub(y)),
        (O::Lit(x), O::Col(y)) => k.build(Lit(x), Col(y)),
        (O::Lit(x), O::Lit(y)) => k.build(Lit(x), Lit(y)),
        (O::Lit(x), O::Sub(y)) => k.build(Lit(x), Sub(y)),
        (O::Sub(x), O::Col(y)) => k.build(Sub(x), Col(y)),
        (O::Sub(x), O::Lit(y)) => k.build(Sub(x), Lit(y)),
        (O::Sub(x), O::Sub(y)) => k.build(Sub(x), Sub(y)),
    }
}

/// A comparison (`= < <= > >=`): NULL when either side is; Spark's ordering otherwise
/// ([`Value::total_cmp`]: NaN equals NaN and is above every other number).
/// `negated`: `NOT (x op y)` (`<>`, `!=`) in the same closure.
struct CompareNode {
    op: CmpOp,
    negated: bool,
}

impl Build2 for CompareNode {
    fn build<A: Operand, B: Operand>(self, a: A, b: B) -> Eval {
        let CompareNode { op, negated } = self;
        let fast = match (a.column(), b.literal()) {
            (Some(c), Some(lit)) => Bound::of(lit).map(|q| (c, q)),
            _ => None,
        };
        let general = move |r: &[Value]| {
            a.with(r, |x| {
                if x.is_null() {
                    // Spark's null-intolerant operators skip the second operand (and whatever
                    // error it would raise) after a NULL first one
                    return Ok(Value::Null);
                }
                b.with(r, |y| match compare(op, x, y) {
                    Value::Bool(v) => Value::Bool(v != negated),
                    v => v,
                })
            })?
        };
        let Some((c, q)) = fast else { return node(general) };
        match q {
            Bound::Double(q) => compare_node(general, op, negated, c, q, |x| match x {
                Value::Double(p) if !p.is_nan() => Some(*p),
                _ => None,
            }),
            Bound::Long(q) => compare_node(general, op, negated, c, q, |x| match x {
                Value::Long(p) => Some(*p),
                _ => None,
            }),
            Bound::Int(q) => compare_node(general, op, negated, c, q, |x| match x {
                Value::Int(p) => Some(*p),
                _ => None,
            }),
            Bound::Timestamp(q) => compare_node(general, op, negated, c, q, |x| match x {
                Value::Timestamp(p) => Some(p.0),
                _ => None,
            }),
        }
    }
}

/// Column `c` of record `r` (NULL past its end).
#[inline(always)]
fn at(r: &[Value], c: usize) -> &Value {
    r.get(c).unwrap_or(&NULL)
}

/// The constant of a `column op constant` comparison whose batch kernel compares in place: a
/// type ordered without [`Value::total_cmp`] (DOUBLE other than NaN, BIGINT, INT, TIMESTAMP).
#[derive(Clone, Copy)]
enum Bound {
    Double(f64),
    Long(i64),
    Int(i32),
    Timestamp(i64),
}

impl Bound {
    fn of(v: &Value) -> Option<Bound> {
        Some(match *v {
            Value::Double(q) if !q.is_nan() => Bound::Double(q),
            Value::Long(q) => Bound::Long(q),
            Value::Int(q) => Bound::Int(q),
            Value::Timestamp(q) => Bound::Timestamp(q.0),
            _ => return None,
        })
    }
}

/// The node of `column op q` (`negated`: its negation) with its batch kernels
/// ([`node_fast_holds`]): where `get` reads the column's value as the constant's type, they
/// compare in place; a NULL gives NULL (a filter: `false`); any other value goes to `general`.
/// Each comparison gets kernels of its own, so that the loop does not choose it per record.
/// `get` never gives NaN (nor is `q` NaN), so a negated order is the opposite order.
fn compare_node<F, T, G>(general: F, op: CmpOp, negated: bool, c: usize, q: T, get: G) -> Eval
where
    F: Fn(&[Value]) -> Result<Value, Fail> + Send + Sync + 'static,
    T: PartialOrd + Copy + Send + Sync + 'static,
    G: Fn(&Value) -> Option<T> + Copy + Send + Sync + 'static,
{
    match (op, negated) {
        (CmpOp::Eq, false) => compare_kernels::<EQ, _, _, _>(general, c, q, get),
        (CmpOp::Eq, true) => compare_kernels::<NE, _, _, _>(general, c, q, get),
        (CmpOp::Lt, false) | (CmpOp::GtEq, true) => compare_kernels::<LT, _, _, _>(general, c, q, get),
        (CmpOp::LtEq, false) | (CmpOp::Gt, true) => compare_kernels::<LE, _, _, _>(general, c, q, get),
        (CmpOp::Gt, false) | (CmpOp::LtEq, true) => compare_kernels::<GT, _, _, _>(general, c, q, get),
        (CmpOp::GtEq, false) | (CmpOp::Lt, true) => compare_kernels::<GE, _, _, _>(general, c, q, get),
    }
}

/// The comparisons of [`compare_kernels`].
const EQ: u8 = 0;
const NE: u8 = 1;
const LT: u8 = 2;
const LE: u8 = 3;
const GT: u8 = 4;
const GE: u8 = 5;

/// [`compare_node`]'s kernels for comparison `OP` (one of [`EQ`] .. [`GE`]).
fn compare_kernels<const OP: u8, F, T, G>(general: F, c: usize, q: T, get: G) -> Eval
where
    F: Fn(&[Value]) -> Result<Value, Fail> + Send + Sync + 'static,
    T: PartialOrd + Copy + Send + Sync + 'static,
    G: Fn(&Value) -> Option<T> + Copy + Send + Sync + 'static,
{
    #[inline(always)]
    fn holds<const OP: u8, T: PartialOrd>(p: T, q: T) -> bool {
        match OP {
            EQ => p == q,
            NE => p != q,
            LT => p < q,
            LE => p <= q,
            GT => p > q,
            _ => p >= q,
        }
    }
    node_fast_holds(
        general,
        #[inline(always)]
        move |r| match at(r, c) {
            Value::Null => Some(Value::Null),
            x => get(x).map(|p| Value::Bool(holds::<OP, T>(p, q))),
        },
        #[inline(always)]
        move |r| match at(r, c) {
            Value::Null => Some(false),
            x => get(x).map(|p| holds::<OP, T>(p, q)),
        },
    )
}

#[inline(always)]
fn compare(op: CmpOp, x: &Value, y: &Value) -> Value {
    let o = match (x, y) {
        (Value::Null, _) | (_, Value::Null) => return Value::Null,
        (Value::Double(p), Value::Double(q)) if !p.is_nan() && !q.is_nan() => {
            return Value::Bool(match op {
                CmpOp::Eq => p == q,
                CmpOp::Lt => p < q,
                CmpOp::LtEq => p <= q,
                CmpOp::Gt => p > q,
                CmpOp::GtEq => p >= q,
            });
        }
        (Value::Long(p), Value::Long(q)) => p.cmp(q),
        (Value::Str(p), Value::Str(q)) if op == CmpOp::Eq => return Value::Bool(p == q),
        _ => x.total_cmp(y),
    };
    Value::Bool(op.holds(o))
}

/// `+ - * % div pmod` on two operands of one integral or floating type
/// ([`Func::Arith`]'s kernel).
struct ArithNode {
    op: ArithOp,
    try_: bool,
    name: Arc<str>,
}

impl Build2 for ArithNode {
    fn build<A: Operand, B: Operand>(self, a: A, b: B) -> Eval {
        let ArithNode { op, try_, name } = self;
        let fast = match (a.column(), b.literal(), op) {
            (Some(c), Some(&Value::Double(q)), ArithOp::Add | ArithOp::Sub | ArithOp::Mul) => Some((c, q)),
            _ => None,
        };
        let general = move |r: &[Value]| {
            a.with(r, |x| {
                if x.is_null() {
                    return Ok(Ok(Value::Null));
                }
                b.with(r, |y| {
                    if let (Value::Double(p), Value::Double(q)) = (x, y) {
                        match op {
                            ArithOp::Add => return Ok(Value::Double(p + q)),
                            ArithOp::Sub => return Ok(Value::Double(p - q)),
                            ArithOp::Mul => return Ok(Value::Double(p * q)),
                            _ => {}
                        }
                    }
                    if x.is_null() || y.is_null() {
                        return Ok(Value::Null);
                    }
                    match arith(op, x, y) {
                        Ok(v) => Ok(v),
                        Err(_) if try_ => Ok(Value::Null),
                        Err(k) => Err(fail(k, &name)),
                    }
                })
            })??
        };
        let Some((c, q)) = fast else { return node(general) };
        // a DOUBLE column and a DOUBLE constant (`v * 1.2`: the DECIMAL literal folded to DOUBLE)
        // one kernel per operation, so that the loop does not choose it per record
        match op {
            ArithOp::Add => node_fast(
                general,
                #[inline(always)]
                move |r| double_fast(at(r, c), |p| p + q),
            ),
            ArithOp::Sub => node_fast(
                general,
                #[inline(always)]
                move |r| double_fast(at(r, c), |p| p - q),
            ),
            _ => node_fast(
                general,
                #[inline(always)]
                move |r| double_fast(at(r, c), |p| p * q),
            ),
        }
    }
}

/// `f` of `x` when it is a DOUBLE, NULL when it is NULL; `None` otherwise ([`node_fast`]).
#[inline(always)]
fn double_fast(x: &Value, f: impl Fn(f64) -> f64) -> Option<Value> {
    match *x {
        Value::Double(p) => Some(Value::Double(f(p))),
        Value::Null => Some(Value::Null),
        _ => None,
    }
}

/// `/` on two DOUBLE operands: DIVIDE_BY_ZERO for a zero divisor (`try_divide`: NULL).
struct DivideNode {
    try_: bool,
    name: Arc<str>,
}

impl Build2 for DivideNode {
    fn build<A: Operand, B: Operand>(self, a: A, b: B) -> Eval {
        let DivideNode { try_, name } = self;
        node(move |r| {
            a.with(r, |x| {
                if x.is_null() {
                    return Ok(Ok(Value::Null));
                }
                b.with(r, |y| {
                    let (Some(p), Some(q)) = (x.as_f64(), y.as_f64()) else { return Ok(Value::Null) };
                    if q == 0.0 {
                        return if try_ { Ok(Value::Null) } else { Err(fail(EvalErrorKind::DivideByZero, &name)) };
                    }
                    Ok(Value::Double(p / q))
                })
            })??
        })
    }
}

/// Any other function of two arguments: [`Func::apply`] on copies of the two values.
struct CallNode2 {
    func: Func,
    name: Arc<str>,
}

impl Build2 for CallNode2 {
    fn build<A: Operand, B: Operand>(self, a: A, b: B) -> Eval {
        let CallNode2 { func, name } = self;
        let strict = func.null_intolerant();
        let stops = func.stops_at_null();
        node(move |r| {
            a.with(r, |x| {
                if stops && x.is_null() {
                    return Ok(Ok(Value::Null));
                }
                b.with(r, |y| {
                    if strict && (x.is_null() || y.is_null()) {
                        return Ok(Value::Null);
                    }
                    func.apply(&[x.clone(), y.clone()]).map_err(|k| fail(k, &name))
                })
            })??
        })
    }
}

/// A function of one argument, which it gets by reference.
struct CallNode1 {
    func: Func,
    name: Arc<str>,
}

impl Build1 for CallNode1 {
    fn build<A: Operand>(self, a: A) -> Eval {
        let CallNode1 { func, name } = self;
        if let Func::AddMicros(d) = func {
            // `ts ± INTERVAL`: the most common computed timestamp
            let column = a.column();
            let general = move |r: &[Value]| {
                a.with(r, |x| match x {
                    Value::Timestamp(t) => match t.0.checked_add(d) {
                        Some(t) => Ok(Value::Timestamp(crate::Timestamp(t))),
                        None => Err(fail(EvalErrorKind::ArithmeticOverflow, &name)),
                    },
                    _ => Ok(Value::Null),
                })?
            };
            let Some(c) = column else { return node(general) };
            // an overflow goes to the general closure, which fails
            return node_fast(
                general,
                #[inline(always)]
                move |r| match at(r, c) {
                    Value::Timestamp(t) => t.0.checked_add(d).map(|t| Value::Timestamp(crate::Timestamp(t))),
                    Value::Null => Some(Value::Null),
                    _ => None,
                },
            );
        }
        match func {
            Func::IsNull { negated } => {
                return node(move |r| a.with(r, |x| Value::Bool(x.is_null() != negated)));
            }
            Func::Round { scale, half_even } => {
                return node(move |r| {
                    a.with(r, |x| match x {
                        Value::Double(x) => Ok(Value::Double(super::functions::round_f64(*x, scale, half_even))),
                        Value::Null => Ok(Value::Null),
                        _ => func.apply(std::slice::from_ref(x)).map_err(|k| fail(k, &name)),
                    })?
                });
            }
            Func::Not => {
                return node(move |r| {
                    a.with(r, |x| match x {
                        Value::Bool(b) => Value::Bool(!b),
                        _ => Value::Null,
                    })
                });
            }
            _ => {}
        }
        if let Func::Lower | Func::Upper = func {
            // a key or a code is mostly already in the wanted case: the same text then (a copy
            // of the 24 bytes of short text, a shared count of longer text)
            let upper = matches!(func, Func::Upper);
            let column = a.column();
            let general = move |r: &[Value]| {
                a.with(r, |x| match x {
                    Value::Null => Ok(Value::Null),
                    Value::Str(s) if ascii_in_case(s, upper) => Ok(x.clone()),
                    _ => func.apply(std::slice::from_ref(x)).map_err(|k| fail(k, &name)),
                })?
            };
            let Some(c) = column else { return node(general) };
            return if upper {
                node_same(general, c, in_case::<true>)
            } else {
                node_same(general, c, in_case::<false>)
            };
        }
        let strict = func.null_intolerant();
        node(move |r| {
            a.with(r, |x| {
                if strict && x.is_null() {
                    return Ok(Value::Null);
                }
                func.apply(std::slice::from_ref(x)).map_err(|k| fail(k, &name))
            })?
        })
    }
}

/// Whether `lower` (`upper`: `UPPER`) of `x` is `x`: NULL, or text already in that case
/// ([`node_same`]).
#[inline(always)]
fn in_case<const UPPER: bool>(x: &Value) -> bool {
    match x {
        Value::Null => true,
        Value::Str(s) => ascii_in_case(s, UPPER),
        _ => false,
    }
}

/// Whether `s` is ASCII with no letter to change: no upper case letter (`upper`: no lower case
/// one). Text held in place is checked as three words, without a loop over its length.
#[inline(always)]
fn ascii_in_case(s: &Text, upper: bool) -> bool {
    match s.inline_words() {
        Some(words) => words.iter().all(|&w| ascii_word_in_case(w, upper)),
        None => ascii_str_in_case(s, upper),
    }
}

/// [`ascii_in_case`] over the bytes of a `str`.
#[inline(always)]
fn ascii_str_in_case(s: &str, upper: bool) -> bool {
    let from = if upper { b'a' } else { b'A' };
    let b = s.as_bytes();
    let mut chunks = b.chunks_exact(8);
    for c in &mut chunks {
        let mut w = [0u8; 8];
        w.copy_from_slice(c);
        if !ascii_word_in_case(u64::from_le_bytes(w), upper) {
            return false;
        }
    }
    !chunks.remainder().iter().any(|&c| c >= 0x80 || c.wrapping_sub(from) < 26)
}

/// Whether the eight bytes of `x` are ASCII with no letter to change ([`ascii_in_case`]).
#[inline(always)]
fn ascii_word_in_case(x: u64, upper: bool) -> bool {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    // the letters to change: `from..from + 26`
    let from = if upper { b'a' } else { b'A' };
    // every byte < 0x80, so no addition carries into the next byte: the high bit of
    // `byte + (0x80 - from)` is set from `from` on, that of `byte + (0x80 - from - 26)` past
    // the last letter
    let at_least = x.wrapping_add((0x80 - u64::from(from)) * ONES);
    let past = x.wrapping_add((0x80 - u64::from(from) - 26) * ONES);
    x & HIGH == 0 && at_least & !past & HIGH == 0
}

/// A cast, explicit (`CAST`, `try_cast`) or inserted by the type rules.
struct CastNode {
    cast: super::decimal::Caster,
    try_cast: bool,
    name: Arc<str>,
}

impl Build1 for CastNode {
    fn build<A: Operand>(self, a: A) -> Eval {
        let CastNode { cast, try_cast, name } = self;
        node(move |r| {
            a.with(r, |v| {
                if v.is_null() {
                    return Ok(Value::Null);
                }
                match cast(v) {
                    Ok(v) => Ok(v),
                    Err(_) if try_cast => Ok(Value::Null),
                    Err(k) => Err(fail(k, &name)),
                }
            })?
        })
    }
}

fn compile(t: &Typed) -> Eval {
    match compile_folding(t) {
        Ok(v) => node(move |_| Ok(v.clone())),
        Err(e) => e,
    }
}

#[cfg(test)]
thread_local! {
    /// Calls of [`compile_node`] on this thread (a test counts them).
    static NODES_COMPILED: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// A predicate on one column that cannot fail, evaluated in place (no closure call): a side of
/// an `AND` ([`compile_node`]).
enum Simple {
    /// `column IS NULL` (`negated`: `IS NOT NULL`).
    IsNull { column: usize, negated: bool },
    /// `column op constant` (`negated`: `NOT (...)`, `<>`), as [`CompareNode`] compares.
    Compare { column: usize, op: CmpOp, negated: bool, constant: Value },
}

impl Simple {
    fn of(t: &Typed) -> Option<Simple> {
        let Node::Call { func, args } = &t.node else { return None };
        match (func, args.as_slice()) {
            (Func::IsNull { negated }, [Typed { node: Node::Column(c), .. }]) => {
                Some(Simple::IsNull { column: *c, negated: *negated })
            }
            (Func::Compare(op), [Typed { node: Node::Column(c), .. }, Typed { node: Node::Literal(q), .. }]) => {
                Some(Simple::Compare { column: *c, op: *op, negated: false, constant: q.clone() })
            }
            (Func::Not, [inner]) => match Simple::of(inner)? {
                Simple::Compare { column, op, negated, constant } => {
                    Some(Simple::Compare { column, op, negated: !negated, constant })
                }
                Simple::IsNull { .. } => None,
            },
            _ => None,
        }
    }

    /// TRUE, FALSE or NULL.
    #[inline(always)]
    fn eval(&self, r: &[Value]) -> Value {
        match self {
            Simple::IsNull { column, negated } => Value::Bool(at(r, *column).is_null() != *negated),
            Simple::Compare { column, op, negated, constant } => match at(r, *column) {
                Value::Null => Value::Null,
                x => match compare(*op, x, constant) {
                    Value::Bool(v) => Value::Bool(v != *negated),
                    v => v,
                },
            },
        }
    }
}

/// The column and the constant of `nullif(column, constant)` as bound (`CASE WHEN column =
/// constant THEN NULL ELSE column END`, the column of the constant's type as it is); `None` for
/// any other `CASE`.
fn nullif_of_column(branches: &[(Typed, Typed)], otherwise: Option<&Typed>) -> Option<(usize, Value)> {
    let [(when, then)] = branches else { return None };
    let (Node::Call { func: Func::Compare(CmpOp::Eq), args }, Node::Literal(Value::Null), Some(else_)) =
        (&when.node, &then.node, otherwise)
    else {
        return None;
    };
    match (args.as_slice(), &else_.node) {
        ([Typed { node: Node::Column(c), .. }, Typed { node: Node::Literal(q), .. }], Node::Column(e)) if c == e => {
            Some((*c, q.clone()))
        }
        _ => None,
    }
}

/// [`compile`] without folding `t` itself (its operands are folded).
fn compile_node(t: &Typed) -> Eval {
    #[cfg(test)]
    NODES_COMPILED.with(|n| n.set(n.get() + 1));
    let name: Arc<str> = Arc::from(t.name.as_str());
    match &t.node {
        Node::Literal(v) => {
            let v = v.clone();
            node(move |_| Ok(v.clone()))
        }
        Node::Column(i) => {
            let i = *i;
            node(move |r| Ok(r.get(i).unwrap_or(&NULL).clone()))
        }
        Node::Cast { input, try_cast, .. } => {
            let Some(cast) = super::cast::caster(input.data_type, t.data_type) else {
                // bind admits only casts that exist, or a NULL literal
                return node(|_| Ok(Value::Null));
            };
            build1(input, CastNode { cast, try_cast: *try_cast, name })
        }
        Node::And(a, b) if let (Some(x), Some(y)) = (Simple::of(a), Simple::of(b)) => {
            // `v IS NOT NULL AND k <> 'none'`: both sides in place, neither can fail
            node(move |r| {
                Ok(match x.eval(r) {
                    Value::Bool(false) => Value::Bool(false),
                    p => match (p, y.eval(r)) {
                        (_, Value::Bool(false)) => Value::Bool(false),
                        (Value::Bool(true), q) => q,
                        _ => Value::Null,
                    },
                })
            })
        }
        Node::And(a, b) => {
            let (a, b) = (compile(a), compile(b));
            node(move |r| {
                let x = a.call(r)?;
                if matches!(x, Value::Bool(false)) {
                    return Ok(x);
                }
                let y = b.call(r)?;
                Ok(match (x, y) {
                    (_, Value::Bool(false)) => Value::Bool(false),
                    (Value::Bool(true), y) => y,
                    _ => Value::Null,
                })
            })
        }
        Node::Or(a, b) => {
            let (a, b) = (compile(a), compile(b));
            node(move |r| {
                let x = a.call(r)?;
                if matches!(x, Value::Bool(true)) {
                    return Ok(x);
                }
                let y = b.call(r)?;
                Ok(match (x, y) {
                    (_, Value::Bool(true)) => Value::Bool(true),
                    (Value::Bool(false), y) => y,
                    _ => Value::Null,
                })
            })
        }
        Node::Case { branches, otherwise } if let Some((c, q)) = nullif_of_column(branches, otherwise.as_deref()) => {
            // `nullif(column, constant)` (`x / nullif(n, 0)`): one comparison, in place
            node(move |r| {
                let x = at(r, c);
                Ok(match compare(CmpOp::Eq, x, &q) {
                    Value::Bool(true) => Value::Null,
                    _ => x.clone(),
                })
            })
        }
        Node::Case { branches, otherwise } if branches.len() == 1 => {
            // `if`, `nullif`: one condition
            let (c, v) = (compile(&branches[0].0), compile(&branches[0].1));
            let otherwise = otherwise.as_ref().map(|o| compile(o));
            node(move |r| {
                if matches!(c.call(r)?, Value::Bool(true)) {
                    return v.call(r);
                }
                match &otherwise {
                    Some(o) => o.call(r),
                    None => Ok(Value::Null),
                }
            })
        }
        Node::Case { branches, otherwise } => {
            let branches: Vec<(Eval, Eval)> = branches.iter().map(|(c, v)| (compile(c), compile(v))).collect();
            let otherwise = otherwise.as_ref().map(|o| compile(o));
            node(move |r| {
                for (c, v) in &branches {
                    if matches!(c.call(r)?, Value::Bool(true)) {
                        return v.call(r);
                    }
                }
                match &otherwise {
                    Some(o) => o.call(r),
                    None => Ok(Value::Null),
                }
            })
        }
        Node::Coalesce(args) => {
            let args: Vec<Eval> = args.iter().map(compile).collect();
            node(move |r| {
                for a in &args {
                    let v = a.call(r)?;
                    if !v.is_null() {
                        return Ok(v);
                    }
                }
                Ok(Value::Null)
            })
        }
        Node::In { value, list, negated } => {
            let value = compile(value);
            let list: Vec<Eval> = list.iter().map(compile).collect();
            let negated = *negated;
            node(move |r| {
                let v = value.call(r)?;
                if v.is_null() {
                    return Ok(Value::Null);
                }
                let mut saw_null = false;
                for item in &list {
                    let x = item.call(r)?;
                    if x.is_null() {
                        saw_null = true;
                    } else if v.total_cmp(&x).is_eq() {
                        return Ok(Value::Bool(!negated));
                    }
                }
                Ok(if saw_null { Value::Null } else { Value::Bool(negated) })
            })
        }
        Node::Call { func, args } => compile_call(func, args, name),
        Node::Udf { udf, args } => compile_udf(udf, args, name),
    }
}

/// A scalar UDF's call: its one argument read in place (a column is not cloned), or its
/// arguments' values collected; the closure runs under `catch_unwind` ([`ScalarUdf::call`]).
fn compile_udf(udf: &Arc<ScalarUdf>, args: &[Typed], name: Arc<str>) -> Eval {
    if let [a] = args {
        return build1(a, UdfNode1 { udf: udf.clone(), name });
    }
    let udf = udf.clone();
    let ev: Vec<Eval> = args.iter().map(compile).collect();
    node(move |r| {
        let v = ev.iter().map(|e| e.call(r)).collect::<Result<Vec<_>, _>>()?;
        call_udf(&udf, &v, &name)
    })
}

/// A one-argument UDF call.
struct UdfNode1 {
    udf: Arc<ScalarUdf>,
    name: Arc<str>,
}

impl Build1 for UdfNode1 {
    fn build<A: Operand>(self, a: A) -> Eval {
        let UdfNode1 { udf, name } = self;
        node(move |r| a.with(r, |x| call_udf(&udf, std::slice::from_ref(x), &name))?)
    }
}

/// A UDF's call on one record: the value, or its failure named `name`.
#[inline(always)]
fn call_udf(udf: &ScalarUdf, args: &[Value], name: &Arc<str>) -> Result<Value, Fail> {
    match udf.run(args) {
        Ok(Ok(v)) if udf.returns(&v) => Ok(v),
        outcome => Err(udf_fail(udf, outcome, name)),
    }
}

#[cold]
#[inline(never)]
fn udf_fail(udf: &ScalarUdf, outcome: super::udf::Outcome, name: &Arc<str>) -> Fail {
    fail(EvalErrorKind::UserFunction(udf.failure(outcome)), name)
}

/// A function or operator: comparisons and arithmetic on their kernels, one- and two-argument
/// functions with their operands read in place, the rest through [`Func::apply`] on the
/// arguments' values.
fn compile_call(func: &Func, args: &[Typed], name: Arc<str>) -> Eval {
    match (func, args) {
        (Func::Compare(op), [a, b]) => build2(a, b, CompareNode { op: *op, negated: false }),
        (Func::Not, [Typed { node: Node::Call { func: Func::Compare(op), args }, .. }]) if args.len() == 2 => {
            build2(&args[0], &args[1], CompareNode { op: *op, negated: true })
        }
        (Func::Arith { op, try_ }, [a, b]) => build2(a, b, ArithNode { op: *op, try_: *try_, name }),
        (Func::Divide { try_ }, [a, b]) => build2(a, b, DivideNode { try_: *try_, name }),
        (_, [a]) => build1(a, CallNode1 { func: func.clone(), name }),
        (_, [a, b]) => build2(a, b, CallNode2 { func: func.clone(), name }),
        _ => {
            let f = func.clone();
            let strict = f.null_intolerant();
            let stops = f.stops_at_null();
            let ev: Vec<Eval> = args.iter().map(compile).collect();
            node(move |r| {
                // in order; a null-intolerant function stops at the first NULL, as Spark's
                // generated code does (a later argument's error is never raised)
                let mut v = Vec::with_capacity(ev.len());
                for e in &ev {
                    let x = e.call(r)?;
                    if stops && x.is_null() {
                        return Ok(Value::Null);
                    }
                    v.push(x);
                }
                if strict && v.iter().any(Value::is_null) {
                    return Ok(Value::Null);
                }
                f.apply(&v).map_err(|k| fail(k, &name))
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{Compiled, Dest, Fail, ascii_in_case};
    use crate::Timestamp;
    use crate::expr::{BinaryOp, Literal, Pos, Syntax, SyntaxKind, bind};
    use crate::schema::Schema;
    use crate::value::{Record, Text, Value};
    use proptest::prelude::*;

    fn syn(kind: SyntaxKind) -> Syntax {
        Syntax { kind, pos: Pos::default() }
    }
    fn col(name: &str) -> Syntax {
        syn(SyntaxKind::Column(vec![name.into()]))
    }
    fn lit(l: Literal) -> Syntax {
        syn(SyntaxKind::Literal(l))
    }
    fn bin(op: BinaryOp, l: Syntax, r: Syntax) -> Syntax {
        syn(SyntaxKind::Binary { op, left: Box::new(l), right: Box::new(r) })
    }
    fn call(name: &str, args: Vec<Syntax>) -> Syntax {
        syn(SyntaxKind::Call { name: name.into(), args })
    }

    /// `d DOUBLE, l BIGINT, i INT, t TIMESTAMP, s STRING`.
    fn schema() -> Schema {
        Schema::parse_ddl("d DOUBLE, l BIGINT, i INT, t TIMESTAMP, s STRING").unwrap_or_else(|e| panic!("{e}"))
    }

    /// Every shape with a batch kernel of its own (a column against a constant, the constant
    /// folded where it is a cast), and shapes next to them that have none.
    fn kernel_shapes() -> Vec<Syntax> {
        use BinaryOp::*;
        let hour = || lit(Literal::Interval { micros: 3_600_000_000, text: "INTERVAL '1' HOUR".into() });
        let mut shapes = Vec::new();
        for op in [Eq, NotEq, Lt, LtEq, Gt, GtEq] {
            shapes.push(bin(op, col("d"), lit(Literal::Double(0.5))));
            shapes.push(bin(op, col("d"), lit(Literal::Integer(0))));
            shapes.push(bin(op, col("d"), lit(Literal::Double(f64::NAN))));
            shapes.push(bin(op, col("l"), lit(Literal::Long(7))));
            shapes.push(bin(op, col("i"), lit(Literal::Integer(-3))));
            shapes.push(bin(op, col("l"), lit(Literal::Integer(5))));
            shapes.push(bin(op, col("t"), lit(Literal::Timestamp("2024-01-15 10:00:00".into()))));
            shapes.push(bin(op, col("s"), lit(Literal::String("k".into()))));
        }
        for op in [Plus, Minus, Multiply] {
            shapes.push(bin(op, col("d"), lit(Literal::Decimal("1.2".into()))));
            shapes.push(bin(op, col("d"), lit(Literal::Double(-0.0))));
            shapes.push(bin(op, col("l"), lit(Literal::Integer(3))));
        }
        shapes.push(bin(Plus, col("t"), hour()));
        shapes.push(bin(Minus, col("t"), hour()));
        shapes.push(call("lower", vec![col("s")]));
        shapes.push(call("upper", vec![col("s")]));
        // constants that fold, and one that fails on every record (not folded)
        shapes.push(bin(Gt, col("d"), bin(Plus, lit(Literal::Integer(1)), lit(Literal::Decimal("0.5".into())))));
        shapes.push(bin(Plus, col("l"), bin(Divide, lit(Literal::Integer(1)), lit(Literal::Integer(0)))));
        shapes
    }

    fn value_of(kind: u8, x: i64, text: &str) -> Value {
        match kind % 12 {
            0 => Value::Null,
            1 => Value::Double(f64::NAN),
            2 => Value::Double(x as f64 / 7.0),
            3 => Value::Double(if x % 2 == 0 { f64::INFINITY } else { f64::NEG_INFINITY }),
            4 => Value::Long(x),
            5 => Value::Long(if x % 2 == 0 { i64::MAX - (x & 3) } else { i64::MIN + (x & 3) }),
            6 => Value::Int(x as i32),
            7 => Value::Timestamp(Timestamp(x)),
            8 => Value::Timestamp(Timestamp(i64::MAX - (x & 0xffff))),
            9 => Value::Str(text.into()),
            10 => Value::Double(0.5),
            _ => Value::Long(7),
        }
    }

    proptest! {
        /// A batch ([`Compiled::eval_batch`], each kernel's fast case inlined, the rest sent to
        /// the general closure) gives every record what [`Compiled::eval_raw`] gives it alone:
        /// the same value in its column or in a vector apart (NULL where it failed), the same
        /// TRUE / not TRUE for a filter, the same failures at the same indexes. Columns hold
        /// values of their type, NULL, NaN, the extremes, and values of other types (which only
        /// the general closure handles); text is held in place or shared; the column written
        /// holds NULL or text before.
        #[test]
        fn fast_kernels_agree_with_the_general_closures(
            rows in proptest::collection::vec(
                (proptest::collection::vec((any::<u8>(), any::<i64>()), 5), "[a-zA-Z0-9é ]{0,30}"),
                1..40,
            ),
        ) {
            let schema = schema();
            let records: Vec<Record> = rows
                .iter()
                .map(|(cols, text)| {
                    let mut values: Vec<Value> = cols.iter().map(|&(k, x)| value_of(k, x, text)).collect();
                    // the slot a batch writes into: mostly NULL (a source's spare slot), else a
                    // value to drop, held in place or shared
                    values.push(match cols[0].0 % 4 {
                        0 => Value::Str(format!("{text}, already here and longer than in place").into()),
                        1 => Value::Str("here".into()),
                        _ => Value::Null,
                    });
                    Record::new(values)
                })
                .collect();
            for shape in kernel_shapes() {
                let typed = bind(&shape, &schema).unwrap_or_else(|e| panic!("{shape:?}: {e}"));
                let c = Compiled::new(&typed);
                let one: Vec<Result<Value, String>> = records
                    .iter()
                    .map(|r| c.eval_raw(&r.values).map_err(|f| format!("{:?}", super::ExprError::from(f))))
                    .collect();
                let mut batch = records.clone();
                let mut fails = Vec::new();
                c.eval_batch(&mut batch, Dest::Column(5), &mut fails);
                let failed: Vec<(u32, String)> =
                    fails.into_iter().map(|(i, f)| (i, format!("{:?}", super::ExprError::from(f)))).collect();
                let expected_fails: Vec<(u32, String)> = one
                    .iter()
                    .enumerate()
                    .filter_map(|(i, r)| r.as_ref().err().map(|e| (i as u32, e.clone())))
                    .collect();
                prop_assert_eq!(&failed, &expected_fails, "{}", typed.name);
                for (i, r) in one.iter().enumerate() {
                    if let Ok(v) = r {
                        let got = &batch[i].values[5];
                        // NaN equals NaN here, as in Spark's ordering
                        prop_assert!(got.total_cmp(v).is_eq() && std::mem::discriminant(got) == std::mem::discriminant(v),
                            "{}: record {}: batch {:?}, alone {:?}", typed.name, i, got, v);
                    }
                }
                let mut holds = Vec::new();
                let mut fails = Vec::new();
                let mut again = records.clone();
                c.eval_batch(&mut again, Dest::Holds(&mut holds), &mut fails);
                let expected: Vec<bool> = one.iter().map(|r| matches!(r, Ok(Value::Bool(true)))).collect();
                prop_assert_eq!(holds, expected, "{}", typed.name);
                prop_assert_eq!(fails.len(), expected_fails.len());
                let mut apart = Vec::new();
                let mut fails = Vec::new();
                c.eval_batch(&mut records.clone(), Dest::Values(&mut apart), &mut fails);
                prop_assert_eq!(apart.len(), records.len());
                prop_assert_eq!(fails.iter().map(|(i, _)| *i).collect::<Vec<_>>(),
                    expected_fails.iter().map(|(i, _)| *i).collect::<Vec<_>>());
                for (i, r) in one.iter().enumerate() {
                    let want = r.as_ref().unwrap_or(&Value::Null);
                    prop_assert!(apart[i].total_cmp(want).is_eq() && std::mem::discriminant(&apart[i]) == std::mem::discriminant(want),
                        "{}: record {}: apart {:?}, alone {:?}", typed.name, i, apart[i], r);
                }
            }
        }
    }

    proptest! {
        /// `a AND b` of two predicates on one column each (`IS [NOT] NULL`, a comparison with a
        /// constant, its negation: evaluated in place, [`super::Simple`]) is Spark's
        /// three-valued AND of the two sides, each compiled and evaluated alone.
        #[test]
        fn an_and_of_simple_predicates_is_the_and_of_its_sides(
            rows in proptest::collection::vec((any::<u8>(), any::<i64>(), "[a-c]{0,2}"), 1..30),
        ) {
            use crate::expr::BinaryOp::{And, Eq, Gt, LtEq, NotEq};
            let schema = schema();
            let is_null = |c: &str, negated| syn(SyntaxKind::IsNull { expr: Box::new(col(c)), negated });
            let sides = [
                is_null("d", true),
                is_null("s", false),
                bin(NotEq, col("s"), lit(Literal::String("b".into()))),
                bin(Eq, col("s"), lit(Literal::String("a".into()))),
                bin(Gt, col("l"), lit(Literal::Integer(3))),
                bin(LtEq, col("d"), lit(Literal::Decimal("0.5".into()))),
                syn(SyntaxKind::Not(Box::new(bin(Gt, col("l"), lit(Literal::Integer(0)))))),
            ];
            let records: Vec<Vec<Value>> = rows
                .iter()
                .map(|(k, x, text)| {
                    let null = |bit: u8| k & bit != 0;
                    vec![
                        if null(1) { Value::Null } else { Value::Double(*x as f64 / 1e18) },
                        if null(2) { Value::Null } else { Value::Long(x % 7) },
                        Value::Int(0),
                        Value::Timestamp(Timestamp(0)),
                        if null(4) { Value::Null } else { Value::Str(text.as_str().into()) },
                    ]
                })
                .collect();
            for a in &sides {
                for b in &sides {
                    let both = Compiled::new(&bind(&bin(And, a.clone(), b.clone()), &schema).unwrap_or_else(|e| panic!("{e}")));
                    let (x, y) = (
                        Compiled::new(&bind(a, &schema).unwrap_or_else(|e| panic!("{e}"))),
                        Compiled::new(&bind(b, &schema).unwrap_or_else(|e| panic!("{e}"))),
                    );
                    for r in &records {
                        let (p, q) = (x.eval_raw(r).ok(), y.eval_raw(r).ok());
                        let want = match (p.clone(), q.clone()) {
                            (Some(Value::Bool(false)), _) | (_, Some(Value::Bool(false))) => Value::Bool(false),
                            (Some(Value::Bool(true)), Some(Value::Bool(true))) => Value::Bool(true),
                            _ => Value::Null,
                        };
                        let got = both.eval_raw(r).ok();
                        prop_assert!(got.as_ref().is_some_and(|g| g.total_cmp(&want).is_eq()
                            && std::mem::discriminant(g) == std::mem::discriminant(&want)),
                            "{a:?} AND {b:?} on {r:?}: {got:?}, sides {p:?} {q:?}");
                    }
                }
            }
        }
    }

    /// A failure (boxed: the kind and the failing expression's name) never makes the per-record
    /// result larger than the value it carries on the ok path.
    #[test]
    fn a_failure_is_no_larger_than_a_value() {
        assert!(std::mem::size_of::<Fail>() <= std::mem::size_of::<Value>());
        assert_eq!(std::mem::size_of::<Result<Value, Fail>>(), std::mem::size_of::<Result<Value, ()>>());
    }

    /// The word-at-a-time check against the byte-by-byte rule, for every byte value at every
    /// position of strings of 1 to 19 bytes (both sides of the 8-byte words) and both cases.
    #[test]
    fn ascii_case_check_agrees_with_the_bytewise_rule() {
        // lengths each side of `INLINE`: text held in place (checked as words) and shared text
        for len in 1..40 {
            for pos in 0..len {
                for byte in 0u8..=0x7f {
                    let mut b = vec![b'k'; len];
                    b[pos] = byte;
                    for upper in [false, true] {
                        let mut b = b.clone();
                        if upper {
                            b.iter_mut().filter(|c| **c == b'k').for_each(|c| *c = b'K');
                        }
                        let s = std::str::from_utf8(&b).unwrap_or_else(|e| panic!("{e}"));
                        let expected = if upper {
                            !s.bytes().any(|c| c.is_ascii_lowercase())
                        } else {
                            !s.bytes().any(|c| c.is_ascii_uppercase())
                        };
                        assert_eq!(ascii_in_case(&Text::new(s), upper), expected, "{s:?} upper={upper}");
                    }
                }
            }
            // a non-ASCII character anywhere is never "in case"
            let s = Text::new(&format!("{}é", "k".repeat(len)));
            assert!(!ascii_in_case(&s, false));
            assert!(!ascii_in_case(&s, true));
        }
    }

    /// Each node is compiled once, folded or not: a constant that fails (here an overflow) inside
    /// other constants was compiled again for every attempt to fold one above it, exponential in
    /// the depth (a 226-byte expression found by the fuzz target took minutes).
    #[test]
    fn nested_constants_that_fail_are_compiled_once_per_node() {
        let mut e = bin(BinaryOp::Plus, lit(Literal::Long(i64::MAX)), lit(Literal::Integer(1)));
        let depth = 12;
        for k in 0..depth {
            e = bin(if k % 2 == 0 { BinaryOp::Minus } else { BinaryOp::Multiply }, e, lit(Literal::Integer(3)));
            e = bin(BinaryOp::Minus, lit(Literal::Integer(k)), e);
        }
        let typed = bind(&e, &schema()).unwrap_or_else(|err| panic!("{err}"));
        super::NODES_COMPILED.with(|n| n.set(0));
        let c = Compiled::new(&typed);
        let nodes = super::NODES_COMPILED.with(|n| n.get());
        // the binary nodes (2 per level and the innermost), their casts, no more
        assert!(nodes <= 8 * depth as usize, "{nodes} nodes compiled");
        // and the result is the innermost overflow, on every record
        let r = Record::new(vec![Value::Null, Value::Long(1), Value::Null, Value::Null, Value::Null]);
        assert!(c.eval(&r).unwrap_err().to_string().contains("ARITHMETIC_OVERFLOW"));
    }
}
