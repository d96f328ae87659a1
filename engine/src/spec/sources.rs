//! Several `[[source]]` tables (PIPELINE.md "Several sources, static tables, expressions and
//! SQL"): the sources after the first, validated as the first is, and their union by name for
//! a structured query (a SQL query's union by position is `sql_union.rs`).

use super::error::{SpecError, quote};
use super::steps::schema_after;
use super::validate::{Min, duration, same_column, watermark};
use crate::expr::SqlFrontEnd;
use crate::schema::Schema;

/// `e` with a field of the first source (`source...`, or `watermark...`: its own `watermark`
/// once a top-level one is refused) named as the `i`-th `[[source]]`'s.
pub(super) fn at_source(mut e: SpecError, i: usize) -> SpecError {
    if let Some(rest) = e.field.strip_prefix("source")
        && (rest.is_empty() || rest.starts_with('.'))
    {
        e.field = format!("source[{i}]{rest}");
    } else if let Some(rest) = e.field.strip_prefix("watermark")
        && (rest.is_empty() || rest.starts_with('.'))
    {
        e.field = format!("source[{i}].watermark{rest}");
    }
    e
}

/// The `[[source]]` tables after the first (`rest`, from index 1): each validated as the first
/// is, with its own steps, then (a structured query, `union` given) checked to have the columns
/// of `union` (the first source's after its steps: same names, ignoring case, and types, any
/// order) and given the projection into that order; without `union` (a SQL query's UNION, by
/// position) their columns stay their own. `taken`: the names of the sources before them.
pub(super) fn union_sources(
    rest: Vec<super::model::RawSource>,
    stdin_before: bool,
    union: Option<&Schema>,
    pipeline_name: &str,
    taken: &mut Vec<String>,
    front: Option<&dyn SqlFrontEnd>,
) -> Result<Vec<super::UnionSource>, SpecError> {
    let mut out = Vec::with_capacity(rest.len());
    for (k, mut raw) in rest.into_iter().enumerate() {
        let i = k + 1;
        let at = |e: SpecError| at_source(e, i);
        let name = raw.name.take().ok_or_else(|| {
            SpecError::missing(
                format!("source[{i}].name"),
                "a name matching [a-z_][a-z0-9_]*, unique among the sources (several [[source]] tables each need one)",
            )
        })?;
        source_name_ok(&format!("source[{i}].name"), &name)?;
        if let Some(j) = taken.iter().position(|t| t.eq_ignore_ascii_case(&name)) {
            return Err(SpecError::bad_str(
                format!("source[{i}].name"),
                &name,
                format!(
                    "a name no other source has (source[{j}] is {}; names compare ignoring case, as SQL's)",
                    quote(&taken[j])
                ),
            ));
        }
        taken.push(name.clone());
        let (filter, select, raw_watermark, idle) =
            (raw.filter.take(), raw.select.take(), raw.watermark.take(), raw.idle_timeout.take());
        let source = super::source::source(Some(raw), pipeline_name).map_err(at)?;
        if source.kind == super::SourceKind::Stdin
            && (stdin_before || out.iter().any(|s: &super::UnionSource| s.source.kind == super::SourceKind::Stdin))
        {
            return Err(SpecError::bad_str(
                format!("source[{i}].type"),
                "stdin",
                "one stdin source at most (standard input is read once); another type: \"files\", \"kafka\", \"nexmark\"",
            ));
        }
        let mut steps =
            super::exprs::source_steps(filter.as_deref(), select.as_deref(), &source.schema, front).map_err(at)?;
        let written_steps = steps.len();
        let own = schema_after(&steps, &source.schema);
        let columns_field =
            if select.is_some() { format!("source[{i}].select") } else { format!("source[{i}].schema") };
        if let Some(union) = union
            && let Some(order) = union_order(&columns_field, &own, union)?
        {
            steps.push(order);
        }
        // by name: the watermark is on the union's column; by position (SQL): on its own, for now
        let watermark = raw_watermark.map(|w| watermark(w, union.unwrap_or(&own))).transpose().map_err(at)?;
        let idle_timeout =
            idle.map(|t| duration(&format!("source[{i}].idle_timeout"), &t, Min::Positive)).transpose()?;
        out.push(super::UnionSource { name, source, steps, written_steps, watermark, idle_timeout });
    }
    Ok(out)
}

/// Checks that `own` (a source's columns after its steps, named by `field`) has the columns of
/// `union`, by name ignoring case, with the same types, in any order (Spark's `unionByName`);
/// returns the projection that puts them in `union`'s order, or `None` when they already are.
fn union_order(field: &str, own: &Schema, union: &Schema) -> Result<Option<super::Step>, SpecError> {
    let expected = || {
        format!(
            "the columns of source[0] (after its filter and select), in any order: {} (a structured [query] reads the union by name of all sources)",
            union.fields().iter().map(|f| format!("{} {}", f.name, f.data_type)).collect::<Vec<_>>().join(", ")
        )
    };
    let mut items = Vec::with_capacity(union.len());
    for f in union.fields() {
        let Some(c) = own.fields().iter().position(|o| same_column(&o.name, &f.name)) else {
            return Err(SpecError::new(field, format!("no column {}", quote(&f.name)), expected()));
        };
        let o = &own.fields()[c];
        if o.data_type != f.data_type {
            return Err(SpecError::new(
                field,
                format!("column {} of type {} (source[0]'s is {})", quote(&o.name), o.data_type, f.data_type),
                expected(),
            ));
        }
        items.push(super::PipelineExpr {
            field: field.to_string(),
            typed: crate::expr::Typed {
                node: crate::expr::Node::Column(c),
                data_type: f.data_type,
                name: f.name.clone(),
            },
            name: f.name.clone(),
        });
    }
    if let Some(extra) = own.fields().iter().find(|o| !union.fields().iter().any(|f| same_column(&f.name, &o.name))) {
        return Err(SpecError::new(
            field,
            format!("column {} (not a column of source[0])", quote(&extra.name)),
            expected(),
        ));
    }
    let identity =
        items.iter().enumerate().all(|(i, e)| matches!(e.typed.node, crate::expr::Node::Column(c) if c == i))
            && own.fields().iter().zip(union.fields()).all(|(o, f)| o.name == f.name);
    Ok((!identity).then_some(super::Step::Project(items)))
}

/// A source's `name`: `[a-z_][a-z0-9_]*`.
pub(super) fn source_name_ok(field: &str, name: &str) -> Result<(), SpecError> {
    let named = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_';
    if !name.starts_with(|c: char| c.is_ascii_lowercase() || c == '_') || !name.chars().all(named) {
        return Err(SpecError::bad_str(field, name, "a name matching [a-z_][a-z0-9_]* (default \"source\")"));
    }
    Ok(())
}
