//! Scalar user-defined functions (Spark's `spark.udf.register`, in Rust): a closure over the
//! argument values, registered by name with its argument types and result type
//! ([`crate::registry::Registry::register_udf`]), bound by [`bind`](super::bind) as any
//! built-in function and compiled into a call of the closure.
//!
//! - **Names** are matched ignoring case, as Spark's function names; a UDF may not take the
//!   name of a built-in function or aggregate ([`builtin_name`]): Spark's `FunctionRegistry`
//!   lets a temporary function shadow a built-in, Eddy refuses it so that a pipeline file reads
//!   the same with and without the program that embeds it.
//! - **Arguments** are checked at validation: the arity exactly, each argument's type equal to
//!   the declared one or widened to it by Spark's implicit casts (INT -> BIGINT -> DOUBLE,
//!   FLOAT -> DOUBLE, DATE -> TIMESTAMP, DECIMAL as the built-ins widen it); a NULL literal
//!   takes any type. The closure receives the values cast to the declared types, NULL included
//!   (it decides what NULL gives).
//! - **Failures**: an `Err(message)` from the closure, a panic inside it (caught with
//!   [`std::panic::catch_unwind`]) and a value of another type than the declared result are each
//!   an evaluation error [`EvalErrorKind::UserFunction`](super::EvalErrorKind::UserFunction)
//!   naming the function and carrying the message: the record goes to the dead-letter sink and
//!   the run goes on (SEMANTICS.md "Source filters and projections").

use std::fmt;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;

use super::bind::{Binder, coerce, is_null_literal, names, ty_err};
use super::{ExprError, Node, Pos, Syntax, Typed};
use crate::aggregate::Aggregator;
use crate::schema::DataType;
use crate::value::Value;

/// The closure of a scalar UDF: the argument values (of the declared types, or NULL) in, the
/// result (of the declared result type, or NULL) or a message out.
pub type ScalarFn = Arc<dyn Fn(&[Value]) -> Result<Value, String> + Send + Sync>;

/// A scalar UDF as registered: its name (lower case), argument types, result type and closure.
#[derive(Clone)]
pub struct ScalarUdf {
    name: Arc<str>,
    args: Vec<DataType>,
    result: DataType,
    /// `result`'s kind of value, checked on every call.
    kind: Kind,
    func: ScalarFn,
}

impl ScalarUdf {
    /// A UDF named `name` (kept lower case: names are matched ignoring case) taking `args` and
    /// returning `result`.
    pub fn new(name: &str, args: Vec<DataType>, result: DataType, func: ScalarFn) -> ScalarUdf {
        ScalarUdf { name: Arc::from(name.to_ascii_lowercase()), args, kind: Kind::of(result), result, func }
    }

    /// The name, lower case.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The declared argument types, in order.
    pub fn args(&self) -> &[DataType] {
        &self.args
    }

    /// The declared result type.
    pub fn result(&self) -> DataType {
        self.result
    }

    /// Calls the closure on `args`, catching a panic.
    ///
    /// # Errors
    /// The failure's message: the closure's own `Err`, `panicked: <payload>` for a panic (the
    /// payload when it is a string), or `returned <type> where <declared> was declared` for a
    /// value of another type than the declared result.
    pub fn call(&self, args: &[Value]) -> Result<Value, UdfFailure> {
        match self.run(args) {
            Ok(Ok(v)) if self.kind.holds(&v) => Ok(v),
            outcome => Err(*self.failure(outcome)),
        }
    }

    /// The closure on `args` under [`catch_unwind`]: its own result, or the panic's payload.
    /// The per-record path ([`ScalarUdf::call`] and the compiled call) checks the value's kind
    /// and hands anything else to [`ScalarUdf::failure`].
    #[inline(always)]
    pub(super) fn run(&self, args: &[Value]) -> Outcome {
        // AssertUnwindSafe: the closure is `Fn` over shared references; a panic leaves no
        // half-updated state of Eddy's behind (the arguments are only read), and what the
        // closure itself captured is the registering program's concern, as with any panic it
        // catches.
        catch_unwind(AssertUnwindSafe(|| (self.func)(args)))
    }

    /// Whether `v` is of the declared result's kind (NULL always is).
    #[inline(always)]
    pub(super) fn returns(&self, v: &Value) -> bool {
        self.kind.holds(v)
    }

    /// The failure an outcome of [`ScalarUdf::run`] other than a value of the declared kind is.
    #[cold]
    #[inline(never)]
    pub(super) fn failure(&self, outcome: Outcome) -> Box<UdfFailure> {
        let message = match outcome {
            Ok(Ok(v)) => format!("returned {} where {} was declared", kind_of(&v), self.result),
            Ok(Err(message)) => message,
            Err(payload) => {
                let text = payload
                    .downcast_ref::<&str>()
                    .map(|s| s.to_string())
                    .or_else(|| payload.downcast_ref::<String>().cloned())
                    .unwrap_or_else(|| "a panic without a message".to_string());
                format!("panicked: {text}")
            }
        };
        Box::new(UdfFailure { function: self.name.clone(), message: Arc::from(message) })
    }
}

/// What [`ScalarUdf::run`] gives: the closure's result, or a panic's payload.
pub(super) type Outcome = std::thread::Result<Result<Value, String>>;

impl fmt::Debug for ScalarUdf {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ScalarUdf")
            .field("name", &self.name)
            .field("args", &self.args)
            .field("result", &self.result)
            .finish_non_exhaustive()
    }
}

/// Two UDFs are equal when their names and types are (closures cannot be compared).
impl PartialEq for ScalarUdf {
    fn eq(&self, other: &Self) -> bool {
        self.name == other.name && self.args == other.args && self.result == other.result
    }
}

/// A UDF's failure on one record: the function's name and the message (see
/// [`ScalarUdf::call`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UdfFailure {
    /// The function's name, lower case.
    pub function: Arc<str>,
    /// What went wrong.
    pub message: Arc<str>,
}

impl fmt::Display for UdfFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.function, self.message)
    }
}

/// The kind of value a type holds: [`DataType`] without its parameters (a byte, so the check
/// on each call is one comparison).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Str,
    Long,
    Int,
    Double,
    Float,
    Bool,
    Timestamp,
    Decimal,
    Date,
    Struct,
    Window,
    List,
}

impl Kind {
    fn of(t: DataType) -> Kind {
        match t {
            DataType::String => Kind::Str,
            DataType::Long => Kind::Long,
            DataType::Int => Kind::Int,
            DataType::Double => Kind::Double,
            DataType::Float => Kind::Float,
            DataType::Boolean => Kind::Bool,
            DataType::Timestamp => Kind::Timestamp,
            DataType::Decimal { .. } => Kind::Decimal,
            DataType::Date => Kind::Date,
            DataType::Struct(_) => Kind::Struct,
            DataType::Window => Kind::Window,
            DataType::Array(_) => Kind::List,
        }
    }

    /// Whether `v` is a value of this kind (NULL is of every kind).
    #[inline(always)]
    fn holds(self, v: &Value) -> bool {
        let k = match v {
            Value::Null => return true,
            Value::Str(_) => Kind::Str,
            Value::Long(_) => Kind::Long,
            Value::Int(_) => Kind::Int,
            Value::Double(_) => Kind::Double,
            Value::Float(_) => Kind::Float,
            Value::Bool(_) => Kind::Bool,
            Value::Timestamp(_) => Kind::Timestamp,
            Value::Decimal(_) => Kind::Decimal,
            Value::Date(_) => Kind::Date,
            Value::Struct(..) => Kind::Struct,
            Value::Window { .. } => Kind::Window,
            Value::List(_) => Kind::List,
        };
        k == self
    }
}

/// The SQL type name of a value's kind, for messages.
fn kind_of(v: &Value) -> &'static str {
    match v {
        Value::Null => "NULL",
        Value::Bool(_) => "BOOLEAN",
        Value::Int(_) => "INT",
        Value::Long(_) => "BIGINT",
        Value::Float(_) => "FLOAT",
        Value::Double(_) => "DOUBLE",
        Value::Str(_) => "STRING",
        Value::Timestamp(_) => "TIMESTAMP",
        Value::Decimal(_) => "DECIMAL",
        Value::Date(_) => "DATE",
        Value::Struct(..) => "STRUCT",
        Value::Window { .. } => "a window",
        Value::List(_) => "ARRAY",
    }
}

impl Binder<'_> {
    /// A call of the scalar UDF `udf`: its arity exactly, each argument of its declared type or
    /// widened to it (an implicit cast, as a built-in's arguments), named `name(args)` with
    /// the name as registered (lower case).
    pub(super) fn user_call(&self, pos: Pos, udf: Arc<ScalarUdf>, args: &[Syntax]) -> Result<Typed, ExprError> {
        let declared = udf.args();
        let signature = || {
            let types: Vec<String> = declared.iter().map(ToString::to_string).collect();
            format!("{}({})", udf.name(), types.join(", "))
        };
        if args.len() != declared.len() {
            return Err(ty_err(
                pos,
                format!("{} with {} arguments", udf.name(), args.len()),
                &format!("{} arguments: {}", declared.len(), signature()),
            ));
        }
        let mut bound = Vec::with_capacity(args.len());
        for (i, (a, &to)) in args.iter().zip(declared).enumerate() {
            let t = self.bind(a)?;
            if t.data_type != to && !is_null_literal(&t) && super::bind::widens_to(t.data_type, to).is_none() {
                return Err(ty_err(
                    a.pos,
                    format!("argument {} of {} of type {} ({})", i + 1, udf.name(), t.data_type, t.name),
                    &format!("{to}, or a type Spark widens to it: {}", signature()),
                ));
            }
            bound.push(coerce(t, to));
        }
        let name = format!("{}({})", udf.name(), names(&bound));
        let data_type = udf.result();
        Ok(Typed { node: Node::Udf { udf, args: bound }, data_type, name })
    }
}

/// The names of functions a call can reach without a UDF, lower case: the scalar functions
/// [`bind`](super::bind) knows or refuses by name, Spark's aggregate functions (run or refused,
/// [`super::is_unsupported_aggregate`]) and the window functions of SQL queries.
pub fn builtin_name(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    let listed = |list: &str| list.split(',').any(|n| n.trim() == lower);
    listed(super::calls::SUPPORTED_FUNCTIONS)
        || super::calls::REFUSED_BY_NAME.contains(&lower.as_str())
        || crate::spec::AGGREGATES.contains(&lower.as_str())
        || super::is_unsupported_aggregate(&lower)
        || ["count_if", "window", "session_window", "cast", "try_cast"].contains(&lower.as_str())
}

/// The user functions validation may bind (filled from the [`crate::registry::Registry`]):
/// scalar UDFs and user aggregates ([`Aggregator`]s), by lower-case name.
#[derive(Clone, Debug, Default)]
pub struct UserFunctions {
    scalars: Vec<Arc<ScalarUdf>>,
    aggregates: Vec<(Arc<str>, Arc<dyn Aggregator>)>,
}

impl UserFunctions {
    /// No user function.
    pub const fn new() -> UserFunctions {
        UserFunctions { scalars: Vec::new(), aggregates: Vec::new() }
    }

    /// Adds (or replaces) the user aggregate called `name` (kept lower case).
    pub(crate) fn insert_aggregate(&mut self, name: &str, aggregator: Arc<dyn Aggregator>) {
        let name: Arc<str> = Arc::from(name.to_ascii_lowercase());
        self.aggregates.retain(|(n, _)| *n != name);
        self.aggregates.push((name, aggregator));
    }

    /// The user aggregate called `name` (ignoring case), if any.
    pub fn aggregate(&self, name: &str) -> Option<&Arc<dyn Aggregator>> {
        self.aggregates.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, a)| a)
    }

    /// The names of the user aggregates, sorted.
    pub fn aggregate_names(&self) -> Vec<&str> {
        let mut names: Vec<&str> = self.aggregates.iter().map(|(n, _)| &**n).collect();
        names.sort_unstable();
        names
    }

    /// Adds (or replaces, by name) a scalar UDF.
    pub(crate) fn insert(&mut self, udf: ScalarUdf) {
        self.scalars.retain(|u| u.name != udf.name);
        self.scalars.push(Arc::new(udf));
    }

    /// The scalar UDF named `name` (ignoring case), if any.
    pub fn scalar(&self, name: &str) -> Option<&Arc<ScalarUdf>> {
        self.scalars.iter().find(|u| u.name.eq_ignore_ascii_case(name))
    }

    /// The names of the scalar UDFs, sorted.
    pub fn scalar_names(&self) -> Vec<&str> {
        let mut names: Vec<&str> = self.scalars.iter().map(|u| &*u.name).collect();
        names.sort_unstable();
        names
    }
}

thread_local! {
    /// The user functions of the validation running on this thread ([`with_user_functions`]).
    static CURRENT: std::cell::RefCell<Option<UserFunctions>> = const { std::cell::RefCell::new(None) };
}

/// Runs `f` with `functions` visible to every [`bind`](super::bind) it makes on this thread,
/// then restores what was visible before (nested calls see the innermost).
///
/// Pipeline validation binds expressions in many places (sources, sinks, each planner of SQL
/// queries); it installs the registry's functions once, here, at its entry
/// ([`crate::spec::parse_pipeline_in`] and its siblings), rather than passing them to each.
/// A bound expression holds the UDF itself: evaluation needs no registry.
pub fn with_user_functions<T>(functions: &UserFunctions, f: impl FnOnce() -> T) -> T {
    struct Restore(Option<UserFunctions>);
    impl Drop for Restore {
        fn drop(&mut self) {
            let before = self.0.take();
            CURRENT.with(|c| *c.borrow_mut() = before);
        }
    }
    let before = CURRENT.with(|c| c.borrow_mut().replace(functions.clone()));
    let _restore = Restore(before);
    f()
}

/// The scalar UDF named `name` among the functions installed by [`with_user_functions`].
pub(super) fn current_scalar(name: &str) -> Option<Arc<ScalarUdf>> {
    CURRENT.with(|c| c.borrow().as_ref().and_then(|fs| fs.scalar(name).cloned()))
}

/// The user aggregate called `name` among the functions installed by [`with_user_functions`].
pub(crate) fn current_aggregate(name: &str) -> Option<Arc<dyn Aggregator>> {
    CURRENT.with(|c| c.borrow().as_ref().and_then(|fs| fs.aggregate(name).cloned()))
}

/// The names of the installed user aggregates, sorted.
pub(crate) fn current_aggregate_names() -> Vec<String> {
    CURRENT.with(|c| {
        c.borrow().as_ref().map_or_else(Vec::new, |fs| fs.aggregate_names().into_iter().map(str::to_string).collect())
    })
}

/// Whether a call to `name` can reach a function: a built-in ([`builtin_name`]), or a scalar
/// UDF or user aggregate installed by [`with_user_functions`].
pub(crate) fn known_function(name: &str) -> bool {
    builtin_name(name) || current_scalar(name).is_some() || current_aggregate(name).is_some()
}

/// The `allowed` text of an unknown function's error: the scalar functions, then the installed
/// scalar UDFs.
pub(crate) fn functions_allowed() -> String {
    let users = current_scalar_names();
    if users.is_empty() {
        super::calls::SUPPORTED_FUNCTIONS.to_string()
    } else {
        format!("{}; the registered functions {}", super::calls::SUPPORTED_FUNCTIONS, users.join(", "))
    }
}

/// The names of the installed scalar UDFs (for the message naming the known functions).
pub(super) fn current_scalar_names() -> Vec<String> {
    CURRENT.with(|c| {
        c.borrow().as_ref().map_or_else(Vec::new, |fs| fs.scalar_names().into_iter().map(str::to_string).collect())
    })
}
