//! A SQL query over several sources (SQL.md "Union", PIPELINE.md "Several sources"): `SELECT ...
//! FROM a [WHERE ...] UNION ALL SELECT ... FROM b [WHERE ...]`, at the top of the query or in
//! `FROM ( ... ) [AS] alias` under an outer query. Each branch reads one source, each source is
//! read by one branch; a branch's WHERE and select list become that source's steps (a filter and
//! a projection, as its own `filter` / `select`), followed by a projection that gives its columns
//! the first branch's names (columns are matched by position, as SQL's UNION ALL). The outer
//! query then reads the union as one source of the union's columns.
//!
//! Matched columns of other types meet in the wider one, as Spark's union widens them (INT with
//! BIGINT is BIGINT: [`union_type`]), each branch's column cast to it. Where this is stricter
//! than Spark: a branch has no GROUP BY, HAVING, aggregate or join.

use super::error::{SpecError, quote};
use super::sql_query::{at, expand_items, filter, first_aggregate, project, unqualified};
use super::steps::{PipelineExpr, Step, schema_after};
use crate::expr::{Node, QuerySyntax, SelectItemSyntax, Typed, UnionSyntax, implicit_cast, union_type};
use crate::schema::Schema;

/// The field a union branch's steps are named by (`eddy explain`: `select (query.sql UNION)`).
const UNION_FIELD: &str = "query.sql UNION";

/// A union resolved against the pipeline's sources.
pub(crate) struct ResolvedUnion {
    /// For each source (pipeline order), the steps of its branch: its WHERE, its select list,
    /// then the renaming to the union's column names.
    pub steps: Vec<Vec<Step>>,
    /// For each source, where each of its columns (after its own `filter` / `select`) is in the
    /// union: `positions[i][c]` is `Some(union column)` when the branch selects column `c` as it
    /// is (so a watermark on it carries over).
    pub positions: Vec<Vec<Option<usize>>>,
    /// The union's columns: the first branch's names, the wider of the branches' types.
    pub schema: Schema,
    /// `UNION` (distinct) rather than `UNION ALL`.
    pub distinct: bool,
    /// The source the first branch reads: the union's columns carry its watermark, as Spark's
    /// union carries its first child's column metadata ([`super::Pipeline::event_time_source`]).
    pub first: usize,
}

/// One branch of a union as planned on its source.
#[derive(Clone)]
struct Branch {
    /// Its select list.
    list: Vec<PipelineExpr>,
    /// Its WHERE and select list as steps.
    steps: Vec<Step>,
}

/// Resolves `union` over `sources` (each one's name and schema after its own steps).
///
/// # Errors
/// A [`SpecError`] at `query.sql` with the line:column of: a branch reading an unknown source, or
/// a source a second time; a source no branch reads; a branch with a join, GROUP BY, HAVING or an
/// aggregate; a branch with another number of columns than the first, or a column whose type
/// meets no other branch's ([`union_type`]); an expression that does not bind.
pub(crate) fn resolve(union: &UnionSyntax, sources: &[(String, Schema)]) -> Result<ResolvedUnion, SpecError> {
    let names: Vec<&str> = sources.iter().map(|(n, _)| n.as_str()).collect();
    // each source's branch: its select list and its steps
    let mut by_source: Vec<Option<Branch>> = vec![None; sources.len()];
    // the source of the first branch
    let mut first = 0;
    // the union's columns: the first query's names, the types widened over the queries
    let mut schema: Option<Schema> = None;
    for (b, branch) in union.branches.iter().enumerate() {
        refuse_in_branch(branch)?;
        let Some(i) = names.iter().position(|n| n.eq_ignore_ascii_case(&branch.from.name)) else {
            return Err(at(
                branch.from.pos,
                format!("FROM {} (no source of that name)", branch.from.name),
                format!("FROM one of the pipeline's sources: {}", names.join(", ")),
            ));
        };
        if by_source[i].is_some() {
            return Err(at(
                branch.from.pos,
                format!("FROM {} a second time in the union", branch.from.name),
                "each source once in a union (read it once, with one WHERE of both conditions)",
            ));
        }
        let source_schema = &sources[i].1;
        let qualifier = branch.from.alias.clone().unwrap_or_else(|| branch.from.name.clone());
        let mut steps = Vec::new();
        if let Some(w) = &branch.selection {
            steps.push(filter(&unqualified(w, &qualifier), source_schema)?);
        }
        let items =
            super::sql_lateral::resolve(expand_items(branch, source_schema, &qualifier)?, source_schema, &qualifier)?;
        let list = items
            .iter()
            .map(|item| project(&unqualified(&item.syntax, &qualifier), item.alias.as_deref(), source_schema))
            .collect::<Result<Vec<_>, _>>()?;
        distinct_names(branch, &list)?;
        steps.push(Step::Project(list.clone()));
        let out = schema_after(&steps, source_schema);
        schema = Some(match schema {
            None => out,
            Some(so_far) => widened(branch, b, &so_far, &out)?,
        });
        if b == 0 {
            first = i;
        }
        by_source[i] = Some(Branch { list, steps });
    }
    if let Some(i) = by_source.iter().position(Option::is_none) {
        return Err(at(
            union.pos,
            format!("a union that does not read source[{i}] ({})", quote(names[i])),
            "a query that reads every [[source]] (SQL.md: a source the query does not name is refused)",
        ));
    }
    let schema = schema.unwrap_or_else(|| Schema::new(Vec::new()));
    let mut steps = Vec::with_capacity(sources.len());
    let mut positions = Vec::with_capacity(sources.len());
    for (i, entry) in by_source.into_iter().enumerate() {
        let Some(Branch { list, steps: mut own }) = entry else { continue };
        // where each of the source's columns lands, when selected as it is (not widened)
        let mut at_union = vec![None; sources[i].1.len()];
        for (p, e) in list.iter().enumerate() {
            if let Node::Column(c) = e.typed.node
                && at_union[c].is_none()
                && e.typed.data_type == schema.fields()[p].data_type
            {
                at_union[c] = Some(p);
            }
        }
        let renamed =
            |(e, f): (&PipelineExpr, &crate::schema::Field)| e.name != f.name || e.typed.data_type != f.data_type;
        if list.iter().zip(schema.fields()).any(renamed) {
            // the union's names, and its wider types through an implicit cast, as Spark's
            own.push(Step::Project(
                list.iter()
                    .zip(schema.fields())
                    .enumerate()
                    .map(|(c, (e, f))| {
                        let column =
                            Typed { node: Node::Column(c), data_type: e.typed.data_type, name: f.name.clone() };
                        PipelineExpr {
                            field: UNION_FIELD.into(),
                            typed: implicit_cast(column, f.data_type),
                            name: f.name.clone(),
                        }
                    })
                    .collect(),
            ));
        }
        // named apart from the outer query's steps (`eddy explain`)
        for step in &mut own {
            match step {
                Step::Filter(e) => e.field = UNION_FIELD.into(),
                Step::Project(items) => items.iter_mut().for_each(|e| e.field = UNION_FIELD.into()),
            }
        }
        steps.push(own);
        positions.push(at_union);
    }
    Ok(ResolvedUnion { steps, positions, schema, distinct: union.distinct, first })
}

/// The output mode of a `UNION` (distinct) at the top of the query, which Spark runs as an
/// aggregation keyed by every column without aggregates (`ReplaceDistinctWithAggregate`):
/// `output_mode` as written (default update), `watermark` the query's (the sources', on the
/// union's columns), `schema` the union's columns.
///
/// Append follows Spark's rule for an aggregation in append mode (`UnsupportedOperationChecker`,
/// `STREAMING_OUTPUT_MODE.UNSUPPORTED_OPERATION`): it needs a watermark on one of the group
/// keys, here the union's watermarked TIMESTAMP column; each distinct row is then emitted once,
/// when the watermark reaches its time, and evicted (a later duplicate at or below the previous
/// batch's watermark is late and dropped).
///
/// # Errors
/// At `query.output_mode` for a mode other than update, complete and append, and for append
/// without a watermark on a TIMESTAMP column of the union.
pub(crate) fn distinct_output_mode(
    output_mode: Option<&str>,
    watermark: Option<&super::WatermarkSpec>,
    schema: &Schema,
) -> Result<super::OutputMode, SpecError> {
    const ALLOWED: &str = "\"update\" (the default), \"complete\", or \"append\" with a [watermark] on a TIMESTAMP column the union selects (Spark runs UNION as an aggregation over every column, and says of append without a watermark: STREAMING_OUTPUT_MODE.UNSUPPORTED_OPERATION, not supported for streaming aggregations without watermark)";
    match output_mode.map(str::to_ascii_lowercase).as_deref() {
        None | Some("update") => Ok(super::OutputMode::Update),
        Some("complete") => Ok(super::OutputMode::Complete),
        Some("append") => {
            let on_time = watermark
                .and_then(|w| schema.resolve(&w.column))
                .is_some_and(|i| matches!(schema.fields()[i].data_type, crate::schema::DataType::Timestamp));
            if on_time {
                Ok(super::OutputMode::Append)
            } else {
                Err(SpecError::new("query.output_mode", "\"append\" (a UNION without a watermark)", ALLOWED))
            }
        }
        Some(other) => Err(SpecError::bad_str("query.output_mode", other, ALLOWED)),
    }
}

/// A branch is a plain SELECT over one source.
fn refuse_in_branch(q: &QuerySyntax) -> Result<(), SpecError> {
    const BRANCH: &str =
        "SELECT ... FROM source [WHERE ...] in each query of a union (aggregate over the union instead)";
    if let Some(j) = &q.join {
        return Err(at(j.pos, "a JOIN in a query of a union", BRANCH));
    }
    if q.union.is_some() {
        return Err(at(q.from.pos, "a union in a query of a union", BRANCH));
    }
    if let Some(g) = q.group_by.first() {
        let pos = match g {
            crate::expr::GroupItemSyntax::Expr(e) => e.pos,
            crate::expr::GroupItemSyntax::Ordinal { pos, .. } => *pos,
        };
        // (a branch's SELECT DISTINCT is an aggregation keyed by its columns: refused alike)
        return Err(at(pos, "GROUP BY or SELECT DISTINCT in a query of a union", BRANCH));
    }
    if let Some(h) = &q.having {
        return Err(at(h.pos, "HAVING in a query of a union", BRANCH));
    }
    for item in &q.items {
        if let SelectItemSyntax::Expr { syntax, .. } = item
            && let Some(agg) = first_aggregate(syntax)
        {
            return Err(at(agg.pos, "an aggregate in a query of a union", BRANCH));
        }
    }
    Ok(())
}

/// A branch's output names are distinct (ignoring case), as a source's `select`'s.
fn distinct_names(q: &QuerySyntax, list: &[PipelineExpr]) -> Result<(), SpecError> {
    for (i, e) in list.iter().enumerate() {
        if list[..i].iter().any(|o| o.name.eq_ignore_ascii_case(&e.name)) {
            return Err(at(
                q.from.pos,
                format!("two columns named {} in a query of a union", quote(&e.name)),
                "distinct column names (rename one with AS)",
            ));
        }
    }
    Ok(())
}

/// The union's columns after branch `b` (`out`), matched by position with those of the
/// branches before it (`first`: the first branch's names): as many, each pair of types meeting
/// in a wider one ([`union_type`]).
fn widened(q: &QuerySyntax, b: usize, first: &Schema, out: &Schema) -> Result<Schema, SpecError> {
    let pos = q.items.first().map_or(q.from.pos, |i| match i {
        SelectItemSyntax::Wildcard { pos, .. } => *pos,
        SelectItemSyntax::Expr { syntax, .. } => syntax.pos,
    });
    if out.len() != first.len() {
        return Err(at(
            pos,
            format!("query {} of the union with {} columns", b + 1, out.len()),
            format!(
                "{} columns, as the first query's ({}): a union matches columns by position",
                first.len(),
                first.names()
            ),
        ));
    }
    let mut fields = Vec::with_capacity(first.len());
    for (c, (o, f)) in out.fields().iter().zip(first.fields()).enumerate() {
        let Some(data_type) = union_type(f.data_type, o.data_type) else {
            // at the column's own item where the select list has no `*` (items are columns)
            let item = match q.items.iter().any(|i| matches!(i, SelectItemSyntax::Wildcard { .. })) {
                false => q.items.get(c).map(|i| match i {
                    SelectItemSyntax::Wildcard { pos, .. } => *pos,
                    SelectItemSyntax::Expr { syntax, .. } => syntax.pos,
                }),
                true => None,
            };
            return Err(at(
                item.unwrap_or(pos),
                format!("column {} ({}) of query {} of type {}", c + 1, quote(&o.name), b + 1, o.data_type),
                format!(
                    "a type compatible with {}, the type of the union's column {} ({}) so far: numbers (widened), a string with a number, boolean, date or timestamp, a date with a timestamp, as Spark (or CAST one of them)",
                    f.data_type,
                    c + 1,
                    quote(&f.name)
                ),
            ));
        };
        fields.push(crate::schema::Field { name: f.name.clone(), data_type });
    }
    Ok(Schema::new(fields))
}
