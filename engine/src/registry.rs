//! User code by name: what a pipeline file may refer to beyond Eddy's own operators and
//! functions (`[query] type = "processor"`, `name = NAME`).
//!
//! A [`Registry`] is filled in code (through the `eddy` library's `Job`) before the pipeline is
//! validated: validation resolves each name against it, so a pipeline naming code that is not
//! registered is refused as any other wrong field (exit 2), and the validated pipeline holds the
//! registered code itself ([`RegisteredProcessor`]). The `eddy` command's registry is empty.
//!
//! # Example
//!
//! ```
//! use eddy_engine::operator::{KeyContext, StatefulProcessor, TimeDomain};
//! use eddy_engine::registry::Registry;
//! use eddy_engine::{Record, Schema, Timestamp, Value};
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
//! let mut registry = Registry::new();
//! let output = Schema::parse_ddl("user STRING, n BIGINT").expect("a valid schema");
//! registry.register_processor("count", output, || Box::new(Count));
//! assert_eq!(registry.processor_names(), vec!["count"]);
//! ```

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::operator::StatefulProcessor;
use crate::schema::{Field, Schema};

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
}

impl Registry {
    /// An empty registry (the `eddy` command's).
    pub const fn new() -> Registry {
        Registry { processors: BTreeMap::new() }
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
