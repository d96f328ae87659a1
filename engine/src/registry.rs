//! User code by name: what a pipeline file may refer to beyond Eddy's own operators and
//! functions: stateful processors (`[query] type = "processor"`, `name = NAME`), scalar
//! functions (UDFs: `name(args)` in any SQL expression) and aggregate functions (UDAFs: `agg =
//! "name"` in `measures`, `name(column)` in a SQL query's aggregation).
//!
//! A [`Registry`] is filled in code (through the `eddy` library's `Job`) before the pipeline is
//! validated: validation resolves each name against it, so a pipeline naming code that is not
//! registered is refused as any other wrong field (exit 2), and the validated pipeline holds the
//! registered code itself ([`RegisteredProcessor`], the bound expressions and measures). The
//! `eddy` command's registry is empty.
//!
//! # Example
//!
//! A processor, a UDF and a UDAF:
//!
//! ```
//! use std::sync::Arc;
//!
//! use eddy_engine::aggregate::Aggregator;
//! use eddy_engine::operator::{KeyContext, StatefulProcessor, TimeDomain};
//! use eddy_engine::registry::{Registry, RegistryError};
//! use eddy_engine::{DataType, Record, Schema, Timestamp, Value};
//!
//! /// Emits each key's running count of records.
//! #[derive(Default)]
//! struct Count;
//!
//! impl StatefulProcessor for Count {
//!     fn handle_input(&mut self, records: &[&Record], ctx: &mut KeyContext<'_>) {
//!         let n = ctx.get("n").and_then(Value::as_i64).unwrap_or(0) + records.len() as i64;
//!         ctx.set("n", Value::Long(n), None);
//!         let key = ctx.key().values().next().cloned().unwrap_or(Value::Null);
//!         ctx.emit(vec![key, Value::Long(n)]);
//!     }
//!     fn handle_timer(&mut self, _domain: TimeDomain, _at: Timestamp, _ctx: &mut KeyContext<'_>) {}
//! }
//!
//! /// The product of a column's values (as DOUBLE): retractable while no value is zero.
//! #[derive(Debug)]
//! struct Product;
//!
//! impl Aggregator for Product {
//!     fn name(&self) -> &str {
//!         "product"
//!     }
//!     fn result_type(&self, _input: DataType) -> DataType {
//!         DataType::Double
//!     }
//!     fn zero(&self) -> Value {
//!         Value::Double(1.0)
//!     }
//!     fn reduce(&self, state: &mut Value, input: &Value) {
//!         if let (Value::Double(p), Some(x)) = (&mut *state, input.as_f64()) {
//!             *p *= x;
//!         }
//!     }
//!     fn merge(&self, state: &mut Value, other: &Value) {
//!         if let (Value::Double(p), Value::Double(q)) = (&mut *state, other) {
//!             *p *= q;
//!         }
//!     }
//!     fn finish(&self, state: &Value) -> Value {
//!         state.clone()
//!     }
//! }
//!
//! let mut registry = Registry::new();
//! let output = Schema::parse_ddl("user STRING, n BIGINT").expect("a valid schema");
//! registry.register_processor("count", output, || Box::new(Count));
//! // `cents(amount)` in a select, a filter or a SQL query: DOUBLE in (an INT or BIGINT argument
//! // is widened to it), BIGINT out; an error sends the record to the dead-letter sink
//! registry.register_udf("cents", &[DataType::Double], DataType::Long, |args| match args[0] {
//!     Value::Double(x) if x < 0.0 => Err(format!("negative amount {x}")),
//!     Value::Double(x) => Ok(Value::Long((x * 100.0).round() as i64)),
//!     _ => Ok(Value::Null),
//! })?;
//! // `agg = "product"` in measures, `product(price)` in SQL
//! registry.register_udaf("product", Arc::new(Product))?;
//! // a built-in's name is refused
//! let refused = registry.register_udf("lower", &[DataType::String], DataType::String, |a| Ok(a[0].clone()));
//! assert!(matches!(refused, Err(RegistryError::BuiltinName { .. })));
//! assert_eq!(registry.processor_names(), vec!["count"]);
//! assert_eq!(registry.functions().scalar_names(), vec!["cents"]);
//! assert_eq!(registry.functions().aggregate_names(), vec!["product"]);
//! # Ok::<(), RegistryError>(())
//! ```

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::aggregate::Aggregator;
use crate::expr::{ScalarUdf, UserFunctions, builtin_name};
use crate::operator::StatefulProcessor;
use crate::schema::{DataType, Field, Schema};
use crate::value::Value;

/// Makes one processor instance; called once per partition actor at the start of each run.
pub type ProcessorFactory = Arc<dyn Fn() -> Box<dyn StatefulProcessor> + Send + Sync>;

/// A processor as registered: its name, the output columns it declares (the rows it emits hold
/// values in this order and of these types) and the factory of its instances.
///
/// Two are equal when their names and output columns are (the factory cannot be compared); a
/// checkpoint's fingerprint and `eddy explain` see the name only.
#[derive(Clone)]
pub struct RegisteredProcessor {
    name: String,
    output: Schema,
    factory: ProcessorFactory,
}

impl RegisteredProcessor {
    /// The name it was registered under.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The declared output columns, in order.
    pub fn output(&self) -> &[Field] {
        self.output.fields()
    }

    /// A new instance (one per partition actor).
    pub fn instantiate(&self) -> Box<dyn StatefulProcessor> {
        (self.factory)()
    }
}

impl std::fmt::Debug for RegisteredProcessor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RegisteredProcessor")
            .field("name", &self.name)
            .field("output", &self.output.names())
            .finish_non_exhaustive()
    }
}

impl PartialEq for RegisteredProcessor {
    fn eq(&self, other: &Self) -> bool {
        self.name == other.name && self.output == other.output
    }
}

/// User code by name (see the module documentation). Cheap to clone (entries are shared).
#[derive(Clone, Debug, Default)]
pub struct Registry {
    processors: BTreeMap<String, RegisteredProcessor>,
    functions: UserFunctions,
}

/// A registration refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RegistryError {
    /// The name is a built-in function's or aggregate's: a pipeline's `name(...)` would mean
    /// two things.
    #[error("`{given}` is a built-in function of Spark SQL (expected {allowed})")]
    BuiltinName {
        /// The name as given.
        given: String,
        /// What is allowed.
        allowed: String,
    },
    /// The name is not an SQL identifier (a call could not be written).
    #[error("`{given}` is not a function name (expected {allowed})")]
    BadName {
        /// The name as given.
        given: String,
        /// What is allowed.
        allowed: String,
    },
    /// The name is already registered as the other kind (scalar / aggregate).
    #[error("`{given}` is already registered as {other} (expected one function per name)")]
    Taken {
        /// The name as given.
        given: String,
        /// What holds it: "a scalar function" or "an aggregate function".
        other: &'static str,
    },
}

/// What a registered function name may be.
const FUNCTION_NAME: &str = "[A-Za-z_][A-Za-z0-9_]*, not one of Spark's functions (SQL.md)";

impl Registry {
    /// An empty registry (the `eddy` command's).
    pub const fn new() -> Registry {
        Registry { processors: BTreeMap::new(), functions: UserFunctions::new() }
    }

    /// Registers a scalar UDF (Spark's `spark.udf.register`): `name(args...)` in any SQL
    /// expression of a pipeline (`source.filter` / `select`, `sink.select`, `[query] sql`)
    /// calls `f` with the argument values, of the types `args` declares (each argument is
    /// checked at validation and implicitly cast as Spark widens: INT -> BIGINT -> DOUBLE,
    /// FLOAT -> DOUBLE, DATE -> TIMESTAMP), NULL included; `f` returns a value of type `result`
    /// (or NULL), or a message.
    ///
    /// Names are matched ignoring case. Registering a name again replaces the earlier function.
    /// A record on which `f` returns `Err`, panics (the panic is caught) or returns a value of
    /// another type goes to the dead-letter sink with `FAILED_EXECUTE_UDF (function NAME:
    /// MESSAGE)`; the run goes on. `f` runs on the partition actors' and source actor's
    /// threads, once per record and call.
    ///
    /// # Errors
    /// [`RegistryError::BuiltinName`] for the name of a built-in function or aggregate (`lower`,
    /// `sum`, `window`: a UDF may not shadow one, unlike Spark's temporary functions, so that a
    /// pipeline reads the same everywhere); [`RegistryError::BadName`] for a name that is not an
    /// identifier; [`RegistryError::Taken`] for the name of a registered aggregate.
    pub fn register_udf<F>(
        &mut self,
        name: &str,
        args: &[DataType],
        result: DataType,
        f: F,
    ) -> Result<&mut Registry, RegistryError>
    where
        F: Fn(&[Value]) -> Result<Value, String> + Send + Sync + 'static,
    {
        function_name(name)?;
        if self.functions.aggregate(name).is_some() {
            return Err(RegistryError::Taken { given: name.to_string(), other: "an aggregate function" });
        }
        self.functions.insert(ScalarUdf::new(name, args.to_vec(), result, Arc::new(f)));
        Ok(self)
    }

    /// Registers a user aggregate (UDAF): `name(column)` in a SQL query's aggregation (GROUP
    /// BY, `window(...)`, `session_window(...)`) and `agg = "name"` in a pipeline's `measures`
    /// (window aggregates and rolling windows). The state is the aggregator's [`Value`],
    /// checkpointed as the built-ins' states. A rolling window retracts a value leaving its
    /// range where [`Aggregator::can_retract`] says so, and otherwise recomputes the measure
    /// from the records in range at each change (as Databricks' rollingWindow does for an
    /// aggregate without an inverse).
    ///
    /// Names are matched ignoring case; registering a name again replaces the earlier
    /// aggregate. The default output column is `name(column)` with the name as registered
    /// (lower case).
    ///
    /// # Errors
    /// As [`Registry::register_udf`] (a built-in's name, not an identifier, a name registered
    /// as a scalar function).
    pub fn register_udaf(
        &mut self,
        name: &str,
        aggregator: Arc<dyn Aggregator>,
    ) -> Result<&mut Registry, RegistryError> {
        function_name(name)?;
        if self.functions.scalar(name).is_some() {
            return Err(RegistryError::Taken { given: name.to_string(), other: "a scalar function" });
        }
        self.functions.insert_aggregate(name, aggregator);
        Ok(self)
    }

    /// The registered functions (scalar and aggregate), as validation binds them.
    pub fn functions(&self) -> &UserFunctions {
        &self.functions
    }

    /// Registers the stateful processor that `[query] type = "processor"`, `name = NAME` names:
    /// `output` is the schema of the rows it emits (the query's output schema, which the sink's
    /// `select` and `eddy validate` see); `make` is called once per partition actor at the start
    /// of each run for that actor's instance. Registering a name again replaces the earlier
    /// processor. Names are matched exactly (case-sensitive).
    pub fn register_processor<F>(&mut self, name: &str, output: Schema, make: F) -> &mut Registry
    where
        F: Fn() -> Box<dyn StatefulProcessor> + Send + Sync + 'static,
    {
        let entry = RegisteredProcessor { name: name.to_string(), output, factory: Arc::new(make) };
        self.processors.insert(name.to_string(), entry);
        self
    }

    /// The processor registered as `name`, if any.
    pub fn processor(&self, name: &str) -> Option<&RegisteredProcessor> {
        self.processors.get(name)
    }

    /// The names of the registered processors, in name order.
    pub fn processor_names(&self) -> Vec<&str> {
        self.processors.keys().map(String::as_str).collect()
    }
}

/// A function name as [`Registry::register_udf`] takes it.
fn function_name(name: &str) -> Result<(), RegistryError> {
    let mut chars = name.chars();
    let ident = chars.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_');
    if !ident {
        return Err(RegistryError::BadName { given: name.to_string(), allowed: FUNCTION_NAME.to_string() });
    }
    if builtin_name(name) {
        return Err(RegistryError::BuiltinName { given: name.to_string(), allowed: FUNCTION_NAME.to_string() });
    }
    Ok(())
}
