//! An aggregation after a stream-stream join (SEMANTICS.md "Several stateful operators
//! (chained)" and "Joins"): `SELECT window(l.lt, ...), count(*) FROM l JOIN r ON ... GROUP BY
//! ...`. The join runs first; its rows, after the query's WHERE and the projection of the
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
//! - Append mode only: Spark refuses a stream-stream join in update and complete mode (and so
//!   the default update of an aggregation).
//! - Stricter than Spark: the join needs a time range between the two watermarked columns (an
//!   inner join without one forwards the input watermark in Spark and may then emit rows the
//!   aggregation drops as late).

use super::error::{SpecError, quote};
use super::sql_chain::ChainedQuery;
use super::sql_query::{at, first_aggregate, plan_sql_query};
use super::sql_stream_join::ResolvedStreamJoin;
use super::steps::{Step, schema_after};
use super::{Mode, WatermarkSpec};
use crate::expr::{GroupItemSyntax, SelectItemSyntax};
use crate::time::Duration;

/// What Spark says of a stream-stream join outside append mode.
const APPEND_ONLY: &str = "\"append\" for a stream-stream join (Spark: Join between two streaming DataFrames/Datasets is not supported in Update or Complete output mode, only in Append output mode)";

/// Where the query over the joined row aggregates (its first GROUP BY item, aggregate call or
/// HAVING), if it does.
pub(crate) fn aggregates(j: &ResolvedStreamJoin) -> Option<crate::expr::Pos> {
    let q = &j.query;
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

/// Checks `[query] output_mode` of a stream-stream join: append (the default without an
/// aggregation; an aggregation's default, update, is refused as Spark refuses it).
///
/// # Errors
/// At `query.output_mode`, with Spark's reason, for any other mode.
pub(crate) fn check_output_mode(output_mode: Option<&str>, aggregating: bool) -> Result<(), SpecError> {
    match output_mode.map(str::to_ascii_lowercase).as_deref() {
        Some("append") => Ok(()),
        None if !aggregating => Ok(()),
        None => Err(SpecError::new(
            "query.output_mode",
            "\"update\" (the default of an aggregation, here after a stream-stream join)",
            APPEND_ONLY,
        )),
        Some(other) => Err(SpecError::bad_str("query.output_mode", other, APPEND_ONLY)),
    }
}

/// Plans the aggregation of `j.query` (which aggregates, see [`aggregates`]) after the join
/// `j`: the chained window aggregate and the steps on its output rows (HAVING, the select
/// list). `delays`: each side's watermark delay (left, right), given to the chained operator's
/// watermark.
///
/// # Errors
/// At `query.sql`, with the place in the SQL: a join without a time range between the two
/// sources' watermarked columns; as [`plan_sql_query`] for the aggregation (over the joined
/// row, in append mode), which must window one of the two watermarked columns.
pub(crate) fn plan_after_join(
    j: &ResolvedStreamJoin,
    mode: Mode,
    delays: [Duration; 2],
) -> Result<(Vec<Step>, ChainedQuery), SpecError> {
    let q = &j.query;
    let pos = aggregates(j).unwrap_or(q.from.pos);
    let Some(range) = j.spec.range else {
        return Err(at(
            pos,
            "an aggregation after a stream-stream join without a time range",
            "a join ON keys AND a time range between the two sources' watermarked columns (r.ts BETWEEN l.ts AND l.ts + INTERVAL ...): the join then forwards a watermark, held back by the range, by which the aggregation finalises its windows",
        ));
    };
    // the sources' watermarked columns in the joined row (a left semi join's has the left's only)
    let first_joined = j.spec.keys + 1;
    let candidates: Vec<WatermarkSpec> = (0..2)
        .filter_map(|s| {
            let index = j.spec.times[s].checked_sub(first_joined)?;
            let field = j.joined.fields().get(index)?;
            Some(WatermarkSpec { column: field.name.clone(), index, delay: delays[s] })
        })
        .collect();
    let mut first_error = None;
    for wm in candidates {
        match plan_sql_query(q, &q.from.name, &j.joined, Some(&wm), &[], Some("append"), mode) {
            Ok(plan) => {
                let steps: Vec<Step> = plan.source_steps.into_iter().chain(plan.watermarked_steps).collect();
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
                    upstream_steps: 0,
                    query: plan.query,
                    watermark: WatermarkSpec { index, ..wm },
                    watermark_delay: range.forwarded_watermark_delay(),
                };
                return Ok((plan.output_steps, chained));
            }
            Err(e) => {
                first_error.get_or_insert(e);
            }
        }
    }
    Err(first_error.unwrap_or_else(|| {
        at(pos, "an aggregation after a join without watermarked columns", "a window on a source's watermarked column")
    }))
}
