//! An aggregation after a stream-stream join (SEMANTICS.md "Several stateful operators
//! (chained)" and "Joins"): `SELECT window(l.lt, ...), count(*) FROM l JOIN r ON ... GROUP BY
//! ...`, or over a subquery that joins (`FROM (SELECT ... FROM l JOIN r ON ...) [AS] j GROUP
//! BY ...`, whose WHERE and select list then run on each joined row). The join runs first; its rows, after the query's WHERE and the projection of the
//! aggregation's keys and measure inputs, are the input records of a window aggregate chained
//! after it ([`ChainedQuery`]), as Spark 3.5+ runs a time-interval join followed by an
//! aggregation (SPARK-42376).
//!
//! - The aggregate's event time is the window's column, one of the two sources' watermarked
//!   columns as the joined row carries it (both keep their watermark through the join, as in
//!   Spark).
//! - The watermark forwarded to the aggregate is the join's input watermark held back by the
//!   join's range ([`crate::operator::TimeRange::forwarded_watermark_delay`]), so no joined row
//!   is late for it.
//! - Output modes, as Spark 4.3 allows them (from the oracle), with the aggregation's default,
//!   update: after an inner or left semi join, append and update ("Inner join between two
//!   streaming DataFrames/Datasets is not supported in Complete output mode, only in Append and
//!   Update output modes"); after an outer join, append only ("LeftOuter join between two
//!   streaming DataFrames/Datasets is not supported in Update output mode, only in Append
//!   output mode"). SEMANTICS.md's "an aggregation after a join follows the aggregation's own
//!   output modes" is wider than Spark. Without an aggregation a stream-stream join runs in
//!   append mode only.
//! - Stricter than Spark: both sources need a watermark and the join a time range between
//!   their watermarked columns (Spark also runs the aggregation without them; what its join
//!   then forwards is not pinned by an oracle case here, so Eddy refuses it).

use super::error::{SpecError, quote};
use super::sql_chain::ChainedQuery;
use super::sql_query::{at, first_aggregate, plan_sql_query};
use super::sql_stream_join::ResolvedStreamJoin;
use super::steps::{Step, schema_after};
use super::{Mode, WatermarkSpec};
use crate::expr::{GroupItemSyntax, Node, QuerySyntax, SelectItemSyntax};
use crate::operator::StreamJoinType;
use crate::time::Duration;

/// What Spark says of a stream-stream join outside append mode.
const APPEND_ONLY: &str = "\"append\" for a stream-stream join (Spark: Join between two streaming DataFrames/Datasets is not supported in Update or Complete output mode, only in Append output mode)";

/// Where the query over the joined row aggregates (its first GROUP BY item, aggregate call or
/// HAVING), if it does.
pub(crate) fn aggregates(j: &ResolvedStreamJoin) -> Option<crate::expr::Pos> {
    aggregation_at(&j.query)
}

/// Where `q` aggregates (its first GROUP BY item, aggregate call or HAVING), if it does.
fn aggregation_at(q: &QuerySyntax) -> Option<crate::expr::Pos> {
    let aggregate = q.items.iter().find_map(|i| match i {
        SelectItemSyntax::Expr { syntax, .. } => first_aggregate(syntax),
        SelectItemSyntax::Wildcard { .. } => None,
    });
    let grouped = q.group_by.first().map(|g| match g {
        GroupItemSyntax::Expr(e) => e.pos,
        GroupItemSyntax::Ordinal { pos, .. } => *pos,
    });
    grouped.or(aggregate.map(|a| a.pos)).or(q.having.as_ref().map(|h| h.pos))
}

/// Checks `[query] output_mode` of a stream-stream join without an aggregation: append, the
/// default (an aggregation after the join has its own modes, checked when it is planned).
///
/// # Errors
/// At `query.output_mode`, with Spark's reason, for any other mode.
pub(crate) fn check_output_mode(output_mode: Option<&str>) -> Result<(), SpecError> {
    match output_mode.map(str::to_ascii_lowercase).as_deref() {
        None | Some("append") => Ok(()),
        Some(other) => Err(SpecError::bad_str("query.output_mode", other, APPEND_ONLY)),
    }
}

/// Plans the aggregation after the join `j`, in `output_mode` (`[query] output_mode` as
/// written): that of `j.query` (which aggregates, see [`aggregates`]), or, with `outer`, the
/// query over `j.query`'s rows (`FROM (SELECT ... FROM a JOIN b ...) [AS] alias`; `j.query`,
/// then, must not aggregate: its WHERE and select list run on each joined row, and a column
/// it selects as it is from a watermarked column keeps that watermark). Gives the chained
/// window aggregate and the steps on its output rows (HAVING, the select list). `delays`:
/// each side's watermark delay (left, right), given to the chained operator's watermark.
///
/// # Errors
/// At `query.sql`, with the place in the SQL: a join of a source without a watermark, or
/// without a time range between the watermarked columns; as
/// [`plan_sql_query`] for the aggregation over the joined row (an append window must be on
/// one of the two watermarked columns). At `query.output_mode`, with Spark's reason, for
/// complete mode, and for update mode (the default included) after an outer join.
pub(crate) fn plan_after_join(
    j: &ResolvedStreamJoin,
    outer: Option<&QuerySyntax>,
    mode: Mode,
    output_mode: Option<&str>,
    delays: [Duration; 2],
) -> Result<(Vec<Step>, ChainedQuery), SpecError> {
    let q = outer.unwrap_or(&j.query);
    let pos = aggregation_at(q).unwrap_or(q.from.pos);
    if let Some(o) = outer
        && aggregation_at(o).is_none()
    {
        return Err(at(
            o.from.pos,
            "a query without an aggregation over a subquery that joins two sources",
            "the join's query itself (SELECT ... FROM a JOIN b ON ...), or an aggregation over the subquery",
        ));
    }
    let given = output_mode.map_or_else(|| "update".to_string(), str::to_ascii_lowercase);
    // Spark runs update mode after an inner or a left semi join, not after an outer one
    let inner = matches!(j.spec.join_type, StreamJoinType::Inner | StreamJoinType::LeftSemi);
    if given == "complete" || (given == "update" && !inner) {
        let spark = match j.spec.join_type {
            StreamJoinType::Inner => "Inner",
            StreamJoinType::LeftOuter => "LeftOuter",
            StreamJoinType::RightOuter => "RightOuter",
            StreamJoinType::FullOuter => "FullOuter",
            StreamJoinType::LeftSemi => "LeftSemi",
        };
        let (allowed, spark_allows) = if inner {
            ("\"append\" or \"update\"", "Append and Update output modes")
        } else {
            ("\"append\"", "Append output mode")
        };
        let mode = if given == "complete" { "Complete" } else { "Update" };
        let default = if output_mode.is_none() { ", the default of an aggregation" } else { "" };
        return Err(SpecError::new(
            "query.output_mode",
            format!("{} (an aggregation after a stream-stream join{default})", quote(&given)),
            format!(
                "{allowed} (Spark: {spark} join between two streaming DataFrames/Datasets is not supported in {mode} output mode, only in {spark_allows})"
            ),
        ));
    }
    if j.spec.watermarked != [true, true] {
        return Err(at(
            pos,
            "an aggregation after a stream-stream join of a source without a watermark",
            "a watermark on both joined sources (source.watermark): the aggregation judges lateness and finalises by the watermark the join forwards",
        ));
    }
    let Some(range) = j.spec.range else {
        return Err(at(
            pos,
            "an aggregation after a stream-stream join without a time range",
            "a join ON keys AND a time range between the two sources' watermarked columns (r.ts BETWEEN l.ts AND l.ts + INTERVAL ...): the join then forwards a watermark, held back by the range, by which the aggregation finalises its windows",
        ));
    };
    let delay = range.forwarded_watermark_delay();
    // the sources' watermarked columns in the joined row (a left semi join's has the left's only)
    let first_joined = j.spec.keys + 1;
    let times: Vec<(usize, Duration)> =
        (0..2).filter_map(|s| Some((j.spec.times[s].checked_sub(first_joined)?, delays[s]))).collect();
    // with a subquery: its steps on the joined rows, and where its output copies each time column
    let (before, input, copied) = match outer {
        None => (Vec::new(), j.joined.clone(), (0..j.joined.len()).map(Some).collect()),
        Some(_) => {
            if let Some(at_pos) = aggregation_at(&j.query) {
                return Err(at(
                    at_pos,
                    "an aggregation in the subquery that joins two sources, under another aggregation",
                    "( SELECT ... FROM a JOIN b ON ... ) without GROUP BY, aggregated by the outer query",
                ));
            }
            let inner = &j.query;
            let plan = plan_sql_query(inner, &inner.from.name, &j.joined, None, &[], None, mode)?;
            let steps: Vec<Step> =
                plan.source_steps.into_iter().chain(plan.watermarked_steps).chain(plan.output_steps).collect();
            let input = schema_after(&steps, &j.joined);
            let copied = copied_columns(&steps, j.joined.len());
            (steps, input, copied)
        }
    };
    let candidates: Vec<WatermarkSpec> = times
        .iter()
        .filter_map(|&(t, delay)| {
            let index = copied.iter().position(|c| *c == Some(t))?;
            Some(WatermarkSpec { column: input.fields()[index].name.clone(), index, delay })
        })
        .collect();
    let mut first_error = None;
    for wm in candidates {
        match plan_sql_query(q, &q.from.name, &input, Some(&wm), &[], output_mode, mode) {
            Ok(plan) => {
                let steps: Vec<Step> =
                    before.iter().cloned().chain(plan.source_steps).chain(plan.watermarked_steps).collect();
                let stage_input = schema_after(&steps, &j.joined);
                let index = stage_input.resolve(&wm.column).ok_or_else(|| {
                    SpecError::new(
                        super::sql_query::FIELD,
                        format!("the watermarked column {}", quote(&wm.column)),
                        "a column the aggregation after the join reads",
                    )
                })?;
                let chained = ChainedQuery {
                    steps,
                    // the subquery's WHERE and select list, shown as its output
                    upstream_steps: before.len(),
                    query: plan.query,
                    watermark: WatermarkSpec { index, ..wm },
                    watermark_delay: delay,
                };
                return Ok((plan.output_steps, chained));
            }
            Err(e) => {
                first_error.get_or_insert(e);
            }
        }
    }
    Err(first_error.unwrap_or_else(|| {
        at(
            pos,
            "an aggregation over a join whose rows keep no watermarked column",
            "a subquery that selects a source's watermarked column as it is (the aggregation's event time)",
        )
    }))
}

/// For each output column of `steps` over an input of `width` columns, the input column it is
/// an unchanged copy of (through every projection), if any.
fn copied_columns(steps: &[Step], width: usize) -> Vec<Option<usize>> {
    let mut from: Vec<Option<usize>> = (0..width).map(Some).collect();
    for step in steps {
        if let Step::Project(items) = step {
            from = items
                .iter()
                .map(|e| match e.typed.node {
                    Node::Column(i) => from.get(i).copied().flatten(),
                    _ => None,
                })
                .collect();
        }
    }
    from
}
