//! An aggregation over a subquery that aggregates (SQL.md "Chained aggregations", SEMANTICS.md
//! "Several stateful operators (chained)"): the inner query is planned as a query of its own
//! over the source (its operator runs first), the outer one over the inner's output rows, with
//! the inner's `window` column as its event time, as Spark 3.4+ does (SPARK-40925).
//!
//! ```sql
//! SELECT window, max_by(auction, num) AS auction, max(num) AS num
//! FROM (SELECT window(date_time, '10 seconds', '2 seconds') AS window, auction, count(*) AS num
//!       FROM bid GROUP BY 1, 2)
//! GROUP BY window
//! ```
//!
//! Append mode only, as Spark (it refuses several stateful operators in update and complete
//! mode). The outer query groups by the inner's `window` (finalised when the watermark passes
//! its end), by `window_time(window)` (the end minus 1 µs, a TIMESTAMP key final once the
//! watermark reaches it), or windows it again (`window(window, '1 minute')` or
//! `window(window_time(window), '1 minute')`, one form for Spark's `TimeWindowing`: on
//! `window_time(window)`). Another time taken from the window (`window.end`) carries no
//! watermark in Spark, which refuses append for it; so does Eddy.

use super::error::{SpecError, quote};
use super::output::output_schema;
use super::sql_query::first_aggregate;
use super::sql_query::{FIELD, JoinedBy, SqlQueryPlan, at, plan_sql_query};
use super::steps::{Step, schema_after};
use super::{Mode, QuerySpec, WatermarkSpec};
use crate::expr::{QuerySyntax, SelectItemSyntax};
use crate::schema::{DataType, Schema};

/// A query chained after the pipeline's query ([`super::Pipeline::then`]): its operator reads
/// the output rows of the operator before it, after [`ChainedQuery::steps`].
#[derive(Debug, Clone, PartialEq)]
pub struct ChainedQuery {
    /// Run on each output row of the operator before, in order: that query's HAVING and select
    /// list, then this query's WHERE and the projection computing its keys and measure inputs.
    pub steps: Vec<Step>,
    /// How many of [`ChainedQuery::steps`], first, are the upstream query's HAVING and select
    /// list (the rest are this query's).
    pub upstream_steps: usize,
    /// The operator: a window aggregate, in append mode after an aggregation, in its own
    /// output mode after a stream-stream join.
    pub query: QuerySpec,
    /// Its event-time column, in its input (the upstream's `window`), with the pipeline
    /// watermark's delay; the operator judges lateness and finalises by it, with the watermark
    /// the chain forwards to it.
    pub watermark: WatermarkSpec,
    /// How far (µs) the watermark forwarded to this operator lags the one the operator before
    /// it was given: zero after an aggregation; after a stream-stream join, its range's
    /// [`crate::operator::TimeRange::forwarded_watermark_delay`] (SPARK-42376), so that the
    /// join's rows are not late here.
    pub watermark_delay: crate::time::Duration,
}

/// The output schema of `query` over `input`, then of each chained query in turn.
pub fn chained_output(query: &QuerySpec, input: &Schema, then: &[ChainedQuery]) -> Schema {
    let mut out = Schema::new(output_schema(query, input));
    for c in then {
        let input = schema_after(&c.steps, &out);
        out = Schema::new(output_schema(&c.query, &input));
    }
    out
}

/// The inner query planned: its plan, its stream-static join if any, and the schema the plan
/// reads (the source's, or the joined record's).
pub(crate) type InnerPlan = (SqlQueryPlan, Option<JoinedBy>, Schema);

/// Plans the inner query in the output mode given ([`plan_chained`]).
pub(crate) type ResolveInner<'a> = dyn Fn(&QuerySyntax, Option<&str>) -> Result<InnerPlan, SpecError> + 'a;

/// What Spark says of several stateful operators outside append mode.
const APPEND_ONLY: &str = "\"append\" for an aggregation over an aggregation (Spark runs several stateful operators in append mode only: Multiple streaming aggregations are not supported with streaming DataFrames/Datasets in update or complete output mode)";

/// Plans `outer`, whose FROM is the aggregating query `inner`, over the source `source` of
/// `schema` (as [`super::sql_query::validate_sql`] plans a single query; `resolve_inner` plans
/// the inner one, with its stream-static join if any, in the output mode given). An outer query
/// that neither groups nor aggregates is a projection of the inner's rows
/// ([`projects_only`]), in any output mode.
///
/// # Errors
/// At `query.output_mode` for a mode other than append; at `query.sql`, with the place in the
/// SQL, for an inner query that does not aggregate, that is itself over a subquery, or whose
/// select list has no window (the outer's event time); as [`plan_sql_query`] for either query.
pub(crate) fn plan_chained(
    outer: &QuerySyntax,
    inner: &QuerySyntax,
    output_mode: Option<&str>,
    mode: Mode,
    watermark: Option<&WatermarkSpec>,
    resolve_inner: &ResolveInner<'_>,
) -> Result<(SqlQueryPlan, Option<JoinedBy>), SpecError> {
    if projects_only(outer) && inner.subquery.is_none() && aggregates(inner) {
        return project_aggregation(outer, inner, output_mode, mode, resolve_inner);
    }
    // the parser takes a subquery without GROUP BY only where it joins or aggregates globally:
    // over one source, one that joins without aggregating is a stream-static join, which belongs
    // in the outer query
    if !aggregates(inner) && inner.join.is_some() {
        return Err(at(
            outer.from.pos,
            "a subquery in FROM that joins without aggregating, over one source",
            "the join in the outer query (SELECT ... FROM s JOIN t ON ... GROUP BY ...), or a subquery that joins two [[source]]s",
        ));
    }
    match output_mode.map(str::to_ascii_lowercase).as_deref() {
        Some("append") => {}
        given => {
            return Err(SpecError::new(
                "query.output_mode",
                format!("{} (an aggregation over an aggregation)", quote(given.unwrap_or("update"))),
                APPEND_ONLY,
            ));
        }
    }
    if let Some(deeper) = &inner.subquery {
        return Err(at(
            deeper.from.pos,
            "a subquery in a subquery's FROM (three chained aggregations)",
            "an aggregation over one aggregating subquery",
        ));
    }
    let (inner_plan, joined, input) = resolve_inner(inner, Some("append"))?;
    if !matches!(&inner_plan.query, QuerySpec::WindowAggregate { .. }) {
        return Err(at(
            outer.from.pos,
            "a subquery in FROM that does not aggregate",
            "( SELECT ... GROUP BY window(...), ... ) [AS] alias: an aggregation over an aggregation (move the subquery's filters and columns into the outer query)",
        ));
    }
    let inner_rows =
        Schema::new(output_schema(&inner_plan.query, &schema_after(&inner_plan.watermarked_steps, &input)));
    let inner_out = schema_after(&inner_plan.output_steps, &inner_rows);
    let Some(wi) = inner_out.fields().iter().position(|f| f.data_type == DataType::Window) else {
        return Err(at(
            outer.from.pos,
            "a subquery whose select list has no window",
            "a subquery that selects its window(...) (the outer aggregation's event time is the inner's window, as Spark)",
        ));
    };
    // the inner plan refuses append without a watermark: there is one
    let delay = watermark.map(|w| w.delay).unwrap_or_default();
    let mut wm = WatermarkSpec { column: inner_out.fields()[wi].name.clone(), index: wi, delay };
    let outer_plan = plan_sql_query(outer, &outer.from.name, &inner_out, Some(&wm), &[], Some("append"), mode)?;
    if let Some(key) = &outer_plan.event_time {
        // GROUP BY window_time(window): the key computed from the window is the event time
        wm.column.clone_from(key);
    }
    let upstream_steps = inner_plan.output_steps.len();
    let steps: Vec<Step> = inner_plan
        .output_steps
        .into_iter()
        .chain(outer_plan.source_steps)
        .chain(outer_plan.watermarked_steps)
        .collect();
    let stage_input = schema_after(&steps, &inner_rows);
    wm.index = stage_input.resolve(&wm.column).ok_or_else(|| {
        SpecError::new(FIELD, format!("the subquery's window {}", quote(&wm.column)), "a window the outer query reads")
    })?;
    let chained = ChainedQuery {
        steps,
        upstream_steps,
        query: outer_plan.query,
        watermark: wm,
        watermark_delay: crate::time::Duration(0),
    };
    Ok((
        SqlQueryPlan {
            source_steps: inner_plan.source_steps,
            watermarked_steps: inner_plan.watermarked_steps,
            query: inner_plan.query,
            output_steps: outer_plan.output_steps,
            then: vec![chained],
            event_time: None,
        },
        joined,
    ))
}

/// Whether `outer` only filters and projects the rows of its FROM: no GROUP BY, HAVING,
/// aggregate or join.
fn projects_only(outer: &QuerySyntax) -> bool {
    outer.group_by.is_empty()
        && outer.having.is_none()
        && outer.join.is_none()
        && outer.items.iter().all(|item| match item {
            SelectItemSyntax::Expr { syntax, .. } => first_aggregate(syntax).is_none(),
            SelectItemSyntax::Wildcard { .. } => true,
        })
}

/// Whether `q` aggregates: GROUP BY, HAVING, or an aggregate call in its select list (a global
/// aggregate, Spark's aggregation without grouping keys).
fn aggregates(q: &QuerySyntax) -> bool {
    !q.group_by.is_empty()
        || q.having.is_some()
        || q.items.iter().any(|item| match item {
            SelectItemSyntax::Expr { syntax, .. } => first_aggregate(syntax).is_some(),
            SelectItemSyntax::Wildcard { .. } => false,
        })
}

/// `SELECT ... FROM (SELECT ... [GROUP BY ...]) [WHERE ...]` without aggregating again: one
/// stateful operator, the inner's, in the query's output mode (Spark runs it so in update and
/// complete mode too), its rows through the inner's HAVING and select list, then the outer's
/// WHERE and select list. A global aggregate (no GROUP BY) keeps its row in every micro-batch
/// (as Spark's aggregation without grouping keys), each through the outer projection.
fn project_aggregation(
    outer: &QuerySyntax,
    inner: &QuerySyntax,
    output_mode: Option<&str>,
    mode: Mode,
    resolve_inner: &ResolveInner<'_>,
) -> Result<(SqlQueryPlan, Option<JoinedBy>), SpecError> {
    let (inner_plan, joined, input) = resolve_inner(inner, output_mode)?;
    let inner_rows =
        Schema::new(output_schema(&inner_plan.query, &schema_after(&inner_plan.watermarked_steps, &input)));
    let inner_out = schema_after(&inner_plan.output_steps, &inner_rows);
    let outer_plan = plan_sql_query(outer, &outer.from.name, &inner_out, None, &[], None, mode)?;
    let output_steps = inner_plan
        .output_steps
        .into_iter()
        .chain(outer_plan.source_steps)
        .chain(outer_plan.watermarked_steps)
        .chain(outer_plan.output_steps)
        .collect();
    Ok((
        SqlQueryPlan {
            source_steps: inner_plan.source_steps,
            watermarked_steps: inner_plan.watermarked_steps,
            query: inner_plan.query,
            output_steps,
            then: Vec::new(),
            event_time: None,
        },
        joined,
    ))
}
