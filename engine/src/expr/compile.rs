//! Compilation: a [`Typed`] plan into nested closures, built once per expression. Evaluating a
//! record calls the closures; names, types and the plan are not looked at again.

use std::sync::Arc;

use super::functions::{ArithOp, CmpOp, Func};
use super::{EvalErrorKind, ExprError, Node, Typed};
use crate::schema::DataType;
use crate::value::{Record, Value};

/// One compiled node: the record's values in, the node's value out.
type Eval = Box<dyn Fn(&[Value]) -> Result<Value, ExprError> + Send + Sync>;

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
    /// Compiles a bound expression.
    pub fn new(t: &Typed) -> Compiled {
        Compiled { eval: compile(t), data_type: t.data_type, name: Arc::from(t.name.as_str()) }
    }

    /// The value of the expression on `record` (whose values are in the bound schema's order).
    ///
    /// # Errors
    /// [`ExprError::Eval`] where Spark under ANSI fails the query: division by zero, integer
    /// overflow, an invalid or out-of-range cast; it names the failing sub-expression.
    pub fn eval(&self, record: &Record) -> Result<Value, ExprError> {
        (self.eval)(&record.values)
    }

    /// [`Compiled::eval`] over a slice of values in schema order.
    ///
    /// # Errors
    /// As [`Compiled::eval`].
    pub fn eval_values(&self, values: &[Value]) -> Result<Value, ExprError> {
        (self.eval)(values)
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

fn fail(kind: EvalErrorKind, name: &Arc<str>) -> ExprError {
    ExprError::Eval { kind, expr: name.clone() }
}

fn compile(t: &Typed) -> Eval {
    let name: Arc<str> = Arc::from(t.name.as_str());
    match &t.node {
        Node::Literal(v) => {
            let v = v.clone();
            Box::new(move |_| Ok(v.clone()))
        }
        Node::Column(i) => {
            let i = *i;
            Box::new(move |r| Ok(r[i].clone()))
        }
        Node::Cast { input, try_cast, .. } => {
            let from = input.data_type;
            let inner = compile(input);
            let Some(cast) = super::cast::caster(from, t.data_type) else {
                // bind admits only casts that exist, or a NULL literal
                return Box::new(|_| Ok(Value::Null));
            };
            let try_cast = *try_cast;
            Box::new(move |r| {
                let v = inner(r)?;
                if v.is_null() {
                    return Ok(Value::Null);
                }
                match cast(&v) {
                    Ok(v) => Ok(v),
                    Err(_) if try_cast => Ok(Value::Null),
                    Err(k) => Err(fail(k, &name)),
                }
            })
        }
        Node::And(a, b) => {
            let (a, b) = (compile(a), compile(b));
            Box::new(move |r| {
                let x = a(r)?;
                if matches!(x, Value::Bool(false)) {
                    return Ok(x);
                }
                let y = b(r)?;
                Ok(match (x, y) {
                    (_, Value::Bool(false)) => Value::Bool(false),
                    (Value::Bool(true), y) => y,
                    _ => Value::Null,
                })
            })
        }
        Node::Or(a, b) => {
            let (a, b) = (compile(a), compile(b));
            Box::new(move |r| {
                let x = a(r)?;
                if matches!(x, Value::Bool(true)) {
                    return Ok(x);
                }
                let y = b(r)?;
                Ok(match (x, y) {
                    (_, Value::Bool(true)) => Value::Bool(true),
                    (Value::Bool(false), y) => y,
                    _ => Value::Null,
                })
            })
        }
        Node::Case { branches, otherwise } => {
            let branches: Vec<(Eval, Eval)> = branches.iter().map(|(c, v)| (compile(c), compile(v))).collect();
            let otherwise = otherwise.as_ref().map(|o| compile(o));
            Box::new(move |r| {
                for (c, v) in &branches {
                    if matches!(c(r)?, Value::Bool(true)) {
                        return v(r);
                    }
                }
                match &otherwise {
                    Some(o) => o(r),
                    None => Ok(Value::Null),
                }
            })
        }
        Node::Coalesce(args) => {
            let args: Vec<Eval> = args.iter().map(compile).collect();
            Box::new(move |r| {
                for a in &args {
                    let v = a(r)?;
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
            Box::new(move |r| {
                let v = value(r)?;
                if v.is_null() {
                    return Ok(Value::Null);
                }
                let mut saw_null = false;
                for item in &list {
                    let x = item(r)?;
                    if x.is_null() {
                        saw_null = true;
                    } else if v.total_cmp(&x).is_eq() {
                        return Ok(Value::Bool(!negated));
                    }
                }
                Ok(if saw_null { Value::Null } else { Value::Bool(negated) })
            })
        }
        Node::Call { func, args } => compile_call(func, args, t.data_type, name),
    }
}

/// Specialised closures for the hot operators on their common types; the rest go through
/// [`Func::apply`] with the arguments on the stack (arity up to 3).
fn compile_call(func: &Func, args: &[Typed], ty: DataType, name: Arc<str>) -> Eval {
    let ev: Vec<Eval> = args.iter().map(compile).collect();
    match (func, ev.len()) {
        (Func::Arith { op: op @ (ArithOp::Add | ArithOp::Sub | ArithOp::Mul), try_: false }, 2)
            if ty == DataType::Double =>
        {
            let mut it = ev.into_iter();
            let (a, b) = (
                it.next().unwrap_or_else(|| Box::new(|_| Ok(Value::Null))),
                it.next().unwrap_or_else(|| Box::new(|_| Ok(Value::Null))),
            );
            let op = *op;
            Box::new(move |r| {
                let (Value::Double(x), Value::Double(y)) = (a(r)?, b(r)?) else { return Ok(Value::Null) };
                Ok(Value::Double(match op {
                    ArithOp::Add => x + y,
                    ArithOp::Sub => x - y,
                    _ => x * y,
                }))
            })
        }
        (Func::Compare(op), 2)
            if args[0].data_type == DataType::Double
                || args[0].data_type == DataType::Long
                || args[0].data_type == DataType::Int =>
        {
            let mut it = ev.into_iter();
            let (a, b) = (
                it.next().unwrap_or_else(|| Box::new(|_| Ok(Value::Null))),
                it.next().unwrap_or_else(|| Box::new(|_| Ok(Value::Null))),
            );
            let op = *op;
            Box::new(move |r| {
                let (x, y) = (a(r)?, b(r)?);
                if x.is_null() || y.is_null() {
                    return Ok(Value::Null);
                }
                let o = x.total_cmp(&y);
                Ok(Value::Bool(match op {
                    CmpOp::Eq => o.is_eq(),
                    CmpOp::Lt => o.is_lt(),
                    CmpOp::LtEq => o.is_le(),
                    CmpOp::Gt => o.is_gt(),
                    CmpOp::GtEq => o.is_ge(),
                }))
            })
        }
        (_, 1) => {
            let f = func.clone();
            let a = ev.into_iter().next().unwrap_or_else(|| Box::new(|_| Ok(Value::Null)));
            let strict = f.null_intolerant();
            Box::new(move |r| {
                let x = a(r)?;
                if strict && x.is_null() {
                    return Ok(Value::Null);
                }
                f.apply(std::slice::from_ref(&x)).map_err(|k| fail(k, &name))
            })
        }
        (_, 2) => {
            let f = func.clone();
            let mut it = ev.into_iter();
            let (a, b) = (
                it.next().unwrap_or_else(|| Box::new(|_| Ok(Value::Null))),
                it.next().unwrap_or_else(|| Box::new(|_| Ok(Value::Null))),
            );
            let strict = f.null_intolerant();
            Box::new(move |r| {
                let v = [a(r)?, b(r)?];
                if strict && v.iter().any(Value::is_null) {
                    return Ok(Value::Null);
                }
                f.apply(&v).map_err(|k| fail(k, &name))
            })
        }
        _ => {
            let f = func.clone();
            let strict = f.null_intolerant();
            Box::new(move |r| {
                let v = ev.iter().map(|e| e(r)).collect::<Result<Vec<_>, _>>()?;
                if strict && v.iter().any(Value::is_null) {
                    return Ok(Value::Null);
                }
                f.apply(&v).map_err(|k| fail(k, &name))
            })
        }
    }
}
