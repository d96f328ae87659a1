//! The SQL expression fields of a pipeline file (PIPELINE.md "Several sources, static tables,
//! expressions and SQL"): a source's `filter` and `select`, the main sink's `select`, parsed by
//! the [`SqlFrontEnd`] that validation was given and bound against the schema of their input
//! into [`Step`]s.

use super::error::{SpecError, quote};
use super::steps::{PipelineExpr, Step, schema_after};
use super::validate::same_column;
use crate::expr::{self, ExprError, Parsed, SqlFrontEnd, Typed};
use crate::schema::{DataType, Schema};

/// What an expression field allows, for messages.
const EXPRESSION: &str = "a Spark SQL expression over the input columns (SQL.md \"Expressions\")";

/// The source's `filter` then `select` (SEMANTICS.md "Source filters and projections"), bound
/// against the decoded `schema`.
///
/// # Errors
/// A [`SpecError`] at `source.filter` / `source.select[i]` for text that does not parse or bind
/// (`given` holds the text and the line:column inside it), a filter that is not BOOLEAN, an
/// empty select list or two output columns of one name; at the field for any of them when
/// `front` is `None` (the reader has no SQL front end).
pub(crate) fn source_steps(
    filter: Option<&str>,
    select: Option<&[String]>,
    schema: &Schema,
    front: Option<&dyn SqlFrontEnd>,
) -> Result<Vec<Step>, SpecError> {
    let mut steps = Vec::new();
    if let Some(text) = filter {
        steps.push(filter_step("source.filter", text, schema, front)?);
    }
    if let Some(items) = select {
        let input = schema_after(&steps, schema);
        steps.push(select_step("source.select", items, &input, front)?);
    }
    Ok(steps)
}

/// A `filter`: one BOOLEAN expression over `schema`.
pub(crate) fn filter_step(
    field: &str,
    text: &str,
    schema: &Schema,
    front: Option<&dyn SqlFrontEnd>,
) -> Result<Step, SpecError> {
    let parsed = parse(field, text, front)?;
    if parsed.alias.is_some() {
        return Err(SpecError::new(
            field,
            format!("{} (an alias)", quote(text)),
            "a BOOLEAN expression without AS (a filter names no column)",
        ));
    }
    let typed = bind(field, text, &parsed, schema)?;
    if typed.data_type != DataType::Boolean {
        return Err(SpecError::new(
            field,
            format!("{} at {}: {} of type {}", quote(text), parsed.syntax.pos, typed.name, typed.data_type),
            "a BOOLEAN expression (a record is kept where it is true)",
        ));
    }
    Ok(Step::Filter(PipelineExpr { field: field.to_string(), name: typed.output_name().to_string(), typed }))
}

/// A `select` list over `schema`: `"*"` as a whole item expands to every input column, in order.
pub(crate) fn select_step(
    field: &str,
    items: &[String],
    schema: &Schema,
    front: Option<&dyn SqlFrontEnd>,
) -> Result<Step, SpecError> {
    if items.is_empty() {
        return Err(SpecError::new(field, "[]", "a list of at least one expression, or \"*\""));
    }
    let mut out: Vec<PipelineExpr> = Vec::new();
    // where each output column came from, to name both items of a duplicate
    let mut origin: Vec<usize> = Vec::new();
    for (i, text) in items.iter().enumerate() {
        let at = format!("{field}[{i}]");
        let new: Vec<PipelineExpr> = if text.trim() == "*" {
            schema
                .fields()
                .iter()
                .enumerate()
                .map(|(c, f)| PipelineExpr {
                    field: at.clone(),
                    typed: Typed { node: expr::Node::Column(c), data_type: f.data_type, name: f.name.clone() },
                    name: f.name.clone(),
                })
                .collect()
        } else {
            let parsed = parse(&at, text, front)?;
            let typed = bind(&at, text, &parsed, schema)?;
            let name = parsed.alias.clone().unwrap_or_else(|| typed.output_name().to_string());
            vec![PipelineExpr { field: at.clone(), typed, name }]
        };
        for e in new {
            if let Some(j) = out.iter().position(|o| same_column(&o.name, &e.name)) {
                let first = origin[j];
                return Err(SpecError::new(
                    at,
                    format!("{} (output column {}, as {field}[{first}] names it)", quote(text), quote(&e.name)),
                    "distinct output column names, ignoring case (rename one with AS)",
                ));
            }
            out.push(e);
            origin.push(i);
        }
    }
    Ok(Step::Project(out))
}

/// Parses `text` with the front end, or refuses it when there is none.
fn parse(field: &str, text: &str, front: Option<&dyn SqlFrontEnd>) -> Result<Parsed, SpecError> {
    let Some(front) = front else {
        return Err(SpecError::new(
            field,
            quote(text),
            "no SQL expression in a pipeline read without a SQL front end (eddy and eddy_sql::load_pipeline read them)",
        ));
    };
    front.parse_expression(text).map_err(|e| expr_error(field, text, e))
}

fn bind(field: &str, text: &str, parsed: &Parsed, schema: &Schema) -> Result<Typed, SpecError> {
    expr::bind(&parsed.syntax, schema).map_err(|e| expr_error(field, text, e))
}

/// An expression's error at `field`: `given` = the text and, at line:column inside it, what was
/// found; `allowed` = what the expression allows there.
pub(crate) fn expr_error(field: &str, text: &str, e: ExprError) -> SpecError {
    let (pos, found, allowed) = match e {
        ExprError::Syntax { pos, found, allowed } => (pos, found, allowed),
        ExprError::UnknownColumn { pos, given, allowed } => {
            (pos, format!("unknown column `{given}`"), format!("a column of the input: {allowed}"))
        }
        ExprError::Type { pos, found, allowed } => (pos, found, allowed),
        ExprError::Unsupported { pos, found, allowed } => (pos, format!("{found} (not supported)"), allowed),
        other @ ExprError::Eval { .. } => (Default::default(), other.to_string(), EXPRESSION.to_string()),
    };
    SpecError::new(field, format!("{} at {pos}: {found}", quote(text)), allowed)
}

/// Under a replay clock, refuses `current_timestamp()` in the steps that run at the source
/// (`steps`: a source's `filter` / `select`, and a SQL query's computed group keys and
/// aggregate inputs). PIPELINE.md "Replay clock" moves the clock to a record's column value
/// before the record is processed, but that column is one of the source steps' outputs: while
/// they run, the record's processing time is not known yet (and in micro-batch mode a batch's
/// processing time is the largest value of its records, known once they are all read). The
/// contract is silent on this; Eddy refuses rather than pick an instant quietly.
/// `texts`: the fields' SQL text (`source.filter`, `source.select[i]`, `query.sql`), to give
/// the line:column of the call.
///
/// # Errors
/// A [`SpecError`] at the field of the first step that calls it.
pub(crate) fn processing_time_at_source(
    steps: &[Step],
    texts: &[(String, String)],
    front: Option<&dyn SqlFrontEnd>,
) -> Result<(), SpecError> {
    let first = steps.iter().find_map(|s| match s {
        Step::Filter(e) => e.typed.reads_processing_time().then_some(e),
        Step::Project(items) => items.iter().find(|e| e.typed.reads_processing_time()),
    });
    let Some(e) = first else { return Ok(()) };
    // a SQL query's steps are named `query.sql` (`query.sql UNION` in a branch of a union)
    let text = texts
        .iter()
        .find(|(f, _)| *f == e.field || (f == "query.sql" && e.field.starts_with("query.sql")))
        .map(|(_, t)| t.as_str());
    let pos = match (text, front) {
        (Some(text), Some(front)) if e.field.starts_with("query.sql") => {
            front.parse_query(text).ok().and_then(|q| processing_time_in_query(&q))
        }
        (Some(text), Some(front)) => front.parse_expression(text).ok().and_then(|p| p.syntax.processing_time_call()),
        _ => None,
    };
    let at = pos.map(|p| format!(" at {p}")).unwrap_or_default();
    Err(SpecError::new(
        e.field.clone(),
        format!(
            "{}{at}: current_timestamp() (or now()) in a step that runs at the source, under the replay clock (the clock moves to a record's clock column only after the source's steps have made the record)",
            quote(text.unwrap_or(&e.typed.name))
        ),
        "current_timestamp() in a single-source SQL query's WHERE, a query's select list outside aggregates or HAVING, or the sink's select (they run where the replay clock has reached the record); or the system clock",
    ))
}

/// Where a SQL query calls `current_timestamp()` in a step that runs at the source, for the
/// message of [`processing_time_at_source`]: first in GROUP BY, then inside an aggregate's
/// arguments, then in WHERE and JOIN ... ON (a union's branches, a stream-stream join's sides),
/// then in a union branch or a subquery, then anywhere in the select list.
fn processing_time_in_query(q: &expr::QuerySyntax) -> Option<expr::Pos> {
    fn in_aggregate(s: &expr::Syntax) -> Option<expr::Pos> {
        if super::sql_query::is_aggregate(s) {
            return s.children().into_iter().find_map(expr::Syntax::processing_time_call);
        }
        s.children().into_iter().find_map(in_aggregate)
    }
    let items: Vec<&expr::Syntax> = q
        .items
        .iter()
        .filter_map(|i| match i {
            expr::SelectItemSyntax::Expr { syntax, .. } => Some(syntax),
            _ => None,
        })
        .chain(q.having.as_ref())
        .collect();
    let group = q.group_by.iter().filter_map(|g| match g {
        expr::GroupItemSyntax::Expr(s) => Some(s),
        _ => None,
    });
    group
        .into_iter()
        .find_map(expr::Syntax::processing_time_call)
        .or_else(|| items.iter().find_map(|s| in_aggregate(s)))
        .or_else(|| q.selection.as_ref().and_then(expr::Syntax::processing_time_call))
        .or_else(|| q.join.as_ref().and_then(|j| j.on.as_ref()).and_then(expr::Syntax::processing_time_call))
        .or_else(|| q.union.as_ref().and_then(|u| u.branches.iter().find_map(processing_time_in_query)))
        .or_else(|| q.subquery.as_deref().and_then(processing_time_in_query))
        .or_else(|| items.iter().find_map(|s| s.processing_time_call()))
}
