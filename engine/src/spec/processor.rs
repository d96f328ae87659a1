//! `[query] type = "processor"`: a stateful processor registered in code, by name.

use super::error::{SpecError, list, quote};
use super::model::RawQuery;
use super::validate::{column_list, same_column};
use super::{ProcessorQuery, QuerySpec};
use crate::registry::Registry;
use crate::schema::Schema;

/// The fields a processor query takes.
pub(crate) const PROCESSOR_FIELDS: &[&str] = &["type", "name", "partition_by"];

/// Validates a processor query against `registry`: `name` must be registered, `partition_by`
/// must name distinct input columns, and the processor's declared output columns must have
/// distinct names (ignoring case, as every query's output).
///
/// # Errors
/// A [`SpecError`] at `query.name` (missing, or not registered: `allowed` lists the registered
/// names), `query.partition_by[i]`, or at `query.name` for a declared output schema with two
/// columns of one name.
pub(crate) fn processor(raw: RawQuery, schema: &Schema, registry: &Registry) -> Result<QuerySpec, SpecError> {
    let registered = registry.processor_names();
    let allowed = || {
        if registered.is_empty() {
            "the name of a processor registered through the eddy library (none is registered: the eddy command has none)"
                .to_string()
        } else {
            format!("the name of a registered processor: {}", list(&registered))
        }
    };
    let name = raw.name.ok_or_else(|| SpecError::missing("query.name", allowed()))?;
    let Some(processor) = registry.processor(&name) else {
        return Err(SpecError::bad_str("query.name", &name, allowed()));
    };
    let partition_by = column_list("query.partition_by", &raw.partition_by.unwrap_or_default(), schema)?;
    let output = processor.output();
    for (i, f) in output.iter().enumerate() {
        if output[..i].iter().any(|g| same_column(&g.name, &f.name)) {
            return Err(SpecError::new(
                "query.name",
                format!("{} (its declared output has the column {} twice)", quote(&name), quote(&f.name)),
                "a processor whose declared output columns have distinct names (ignoring case)",
            ));
        }
    }
    Ok(QuerySpec::Processor(ProcessorQuery { name, partition_by, processor: processor.clone() }))
}
