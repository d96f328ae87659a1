//! The rewrites of Spark's optimizer that change what an expression gives, made before an
//! expression is compiled, so that Eddy's results are the ones a Spark query has. Spark's
//! analyzer names the expression first; the optimizer rewrites it afterwards, so every name
//! stays the one written.
//!
//! - **NULL propagation** (Spark's `NullPropagation`): an operation that is NULL whenever an
//!   operand is (arithmetic, comparisons, `NOT`, unary minus, `abs`) and has a NULL constant
//!   operand is the NULL constant: its other operands are not evaluated, so their errors are not
//!   raised. `(l * 2) + NULL` is NULL even where `l * 2` overflows. A cast of NULL is NULL
//!   (Spark's constant folding), so an untyped `NULL` cast to its operand's type counts.
//! - **Sums and products of integers reordered** (Spark's `ReorderAssociativeOperator`): in a
//!   chain of `+` (or of `*`) of INT or BIGINT operands, the constants are added (multiplied)
//!   together first, once, and the rest keep their order: `-1 + l + 1` is `l + 0`, which does
//!   not overflow for the smallest BIGINT where the chain written would; `i * 2 * 0` is `i * 0`.
//!   Spark does this under ANSI too (the differential corpus `golden-kernels.jsonl` shows both).
//!   As Spark's rule, the chain goes through `try_` forms and is rebuilt in the outermost one's
//!   form: `try_multiply(l * 2, 1)` is `try_multiply(l, 2)`, NULL where `l * 2` overflows. A
//!   constant part that fails (overflows) is left as written.
//! - **`IN` a list of NULLs only** (Spark's `OptimizeIn` makes a one-value list `=`): NULL.
//! - **`AND` with a FALSE constant, `OR` with a TRUE one** (Spark's `BooleanSimplification`, after
//!   its constant folding): FALSE, TRUE, whichever side the constant is on, the other side not
//!   evaluated: `(l * 2 > 0) AND (1 = 2)` is FALSE where `l * 2` overflows.
//!
//! Spark's rules: `sql/catalyst/.../optimizer/expressions.scala` (`NullPropagation`,
//! `ReorderAssociativeOperator`, `OptimizeIn`, `BooleanSimplification`).

use super::compile::{evaluate_constant, is_constant};
use super::functions::{ArithOp, Func};
use super::{Node, Typed};
use crate::schema::DataType;
use crate::value::Value;

/// `t` with the rewrites above made, bottom up.
pub(crate) fn optimize(t: &Typed) -> Typed {
    let node = match &t.node {
        Node::Literal(_) | Node::Column(_) => return t.clone(),
        Node::Cast { input, try_cast, implicit } => {
            let input = optimize(input);
            if is_null(&input) {
                return null_as(t);
            }
            Node::Cast { input: Box::new(input), try_cast: *try_cast, implicit: *implicit }
        }
        Node::And(a, b) | Node::Or(a, b) => {
            let (a, b) = (optimize(a), optimize(b));
            // `x AND FALSE` is FALSE, `x OR TRUE` is TRUE, whichever side
            let and = matches!(t.node, Node::And(..));
            if decides(&a, !and) || decides(&b, !and) {
                return Typed { node: Node::Literal(Value::Bool(!and)), data_type: t.data_type, name: t.name.clone() };
            }
            if and { Node::And(Box::new(a), Box::new(b)) } else { Node::Or(Box::new(a), Box::new(b)) }
        }
        Node::Case { branches, otherwise } => Node::Case {
            branches: branches.iter().map(|(c, v)| (optimize(c), optimize(v))).collect(),
            otherwise: otherwise.as_ref().map(|o| Box::new(optimize(o))),
        },
        Node::Coalesce(args) => Node::Coalesce(args.iter().map(optimize).collect()),
        Node::In { value, list, negated } => {
            let list: Vec<Typed> = list.iter().map(optimize).collect();
            if !list.is_empty() && list.iter().all(is_null) {
                // Spark's `OptimizeIn`: a list of one value (after removing repeats) is `=`,
                // which NULL propagates through
                return null_as(t);
            }
            Node::In { value: Box::new(optimize(value)), list, negated: *negated }
        }
        Node::Udf { udf, args } => Node::Udf { udf: udf.clone(), args: args.iter().map(optimize).collect() },
        Node::Call { func, args } => {
            let args: Vec<Typed> = args.iter().map(optimize).collect();
            if null_intolerant(func) && args.iter().any(is_null) {
                return null_as(t);
            }
            if let Some(r) = reordered(func, &args, t) {
                return r;
            }
            Node::Call { func: func.clone(), args }
        }
    };
    Typed { node, data_type: t.data_type, name: t.name.clone() }
}

/// Whether `t` is a constant (folded as Spark's `ConstantFolding` would) that is `value`.
fn decides(t: &Typed, value: bool) -> bool {
    is_constant(t) && matches!(evaluate_constant(t), Ok(Value::Bool(v)) if v == value)
}

/// Whether `t` is the NULL constant.
fn is_null(t: &Typed) -> bool {
    matches!(t.node, Node::Literal(Value::Null))
}

/// The NULL constant of `t`'s type and name.
fn null_as(t: &Typed) -> Typed {
    Typed { node: Node::Literal(Value::Null), data_type: t.data_type, name: t.name.clone() }
}

/// The operations Spark marks null-intolerant (NULL whenever an operand is) among Eddy's calls:
/// the ones NULL propagation rewrites. The `try_` forms are not among them.
fn null_intolerant(func: &Func) -> bool {
    matches!(
        func,
        Func::Arith { try_: false, .. }
            | Func::Divide { try_: false }
            | Func::DecimalArith { try_: false, .. }
            | Func::DecimalIntDiv { try_: false }
            | Func::Negate
            | Func::Abs
            | Func::Compare(_)
            | Func::Not
    )
}

/// The chain of `+` or `*` that `t` (a call of `func` on `args`) ends, with its constants taken
/// together, when it is one of INT or BIGINT operands with two constants or more.
fn reordered(func: &Func, args: &[Typed], t: &Typed) -> Option<Typed> {
    let Func::Arith { op: op @ (ArithOp::Add | ArithOp::Mul), try_ } = *func else { return None };
    if !matches!(t.data_type, DataType::Int | DataType::Long) {
        return None;
    }
    let mut operands = Vec::new();
    for a in args {
        flatten(a, op, t.data_type, &mut operands);
    }
    let (constants, others): (Vec<Typed>, Vec<Typed>) = operands.into_iter().partition(is_constant);
    // (a chain of constants only is folded when compiled, or fails on every record as written)
    if constants.len() < 2 || others.is_empty() {
        return None;
    }
    let folded = evaluate_constant(&chain(constants, op, false, t.data_type)?).ok()?;
    let c = Typed { node: Node::Literal(folded), data_type: t.data_type, name: t.name.clone() };
    let rest = chain(others, op, try_, t.data_type)?;
    Some(Typed {
        node: Node::Call { func: Func::Arith { op, try_ }, args: vec![rest, c] },
        data_type: t.data_type,
        name: t.name.clone(),
    })
}

/// The operands of the chain of `op` that `t` is (of type `ty`; `try_` forms or not, as Spark
/// flattens them), in order, into `out`.
fn flatten(t: &Typed, op: ArithOp, ty: DataType, out: &mut Vec<Typed>) {
    match &t.node {
        Node::Call { func: Func::Arith { op: o, .. }, args } if *o == op && t.data_type == ty => {
            for a in args {
                flatten(a, op, ty, out);
            }
        }
        _ => out.push(t.clone()),
    }
}

/// `operands` joined by `op` (its `try_` form if `try_`) from the left (`None` when there is
/// none).
fn chain(operands: Vec<Typed>, op: ArithOp, try_: bool, ty: DataType) -> Option<Typed> {
    let sym = if op == ArithOp::Add { "+" } else { "*" };
    operands.into_iter().reduce(|a, b| {
        let name = format!("({} {sym} {})", a.name, b.name);
        Typed { node: Node::Call { func: Func::Arith { op, try_ }, args: vec![a, b] }, data_type: ty, name }
    })
}
