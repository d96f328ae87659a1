//! Planning of the queries chained after the first ([`Pipeline::then`]): each a stage of an
//! [`OperatorChain`], and the edge into it (DESIGN.md "The operator graph"): *forward* when the
//! stage's group key holds the routing key of the stage before (the same partition actor owns
//! every row of its groups: chained on its thread), else *exchange* (its input rows re-keyed by
//! the hash of its own key to the partition actor owning it). One exchange per chain: a second
//! stage keyed otherwise than the exchanged one runs the chain in one partition actor.
//!
//! After a stream-stream join the routing key is the join key, which a joined row holds in its
//! left copy, its right copy, or both: an inner join's rows in both (equal), a left outer or
//! left semi join's in the left one (a NULL-padded row has no right copy), a right outer join's
//! in the right one; a full outer join's rows hold it in neither for sure, so the stage after
//! it is always behind an exchange. The edge after a join delays the watermark
//! ([`ChainedQuery::watermark_delay`]).

use std::sync::Arc;

use super::{OperatorPlan, PlanError, col, compile_measure};
use crate::operator::{
    ChainLink, Forward, Mode, Operator, OperatorChain, OutputMode, SessionGap, WindowAggregate, WindowAggregateConfig,
    WindowKind,
};
use crate::schema::Schema;
use crate::spec::{self, ChainedQuery, Pipeline, QuerySpec, SessionGap as SpecGap, WindowSpec, schema_after};
use crate::steps::CompiledSteps;
use crate::time::Duration;
use crate::window::SlidingWindows;

/// A planned stage after the first (see [`ChainLink`]).
#[derive(Debug, Clone)]
pub(super) struct LinkPlan {
    steps: Arc<CompiledSteps>,
    operator: OperatorPlan,
    routing_positions: Option<Vec<usize>>,
    /// The edge into this stage is an exchange.
    pub(super) exchange: bool,
    /// The column names of the stage before's rows, and of this stage's input records.
    row_names: Arc<[String]>,
    record_names: Arc<[String]>,
    /// The edge's watermark delay ([`ChainedQuery::watermark_delay`]).
    watermark_delay: Duration,
}

impl LinkPlan {
    /// Whether the stage's steps call `current_timestamp()`.
    pub(super) fn reads_processing_time(&self) -> bool {
        self.steps.reads_processing_time()
    }
}

/// The stages after the first, and the sink's message key in the last stage's output.
pub(super) struct Planned {
    pub(super) links: Vec<LinkPlan>,
    pub(super) partition_key: Vec<usize>,
}

/// Plans `p.then` after the first operator `first` (whose output follows `p.query`).
///
/// # Errors
/// [`PlanError`] for a column or function that does not resolve (validation catches these
/// first), or a chained query of a kind no chain runs (only window aggregates and projections).
pub(super) fn plan_links(p: &Pipeline, first: &OperatorPlan, mode: Mode) -> Result<Planned, PlanError> {
    let mut input = p.query_schema();
    let mut query = &p.query;
    // for each part of the first stage's routing key, in order, the output columns of the stage
    // before that hold it (any one of them)
    let mut routing: Option<Vec<Vec<usize>>> = match (first, &p.query) {
        (OperatorPlan::Window(c), _) => {
            let offset = usize::from(!matches!(c.window, WindowKind::None));
            Some((0..c.key_columns.len()).map(|i| vec![i + offset]).collect())
        }
        (OperatorPlan::StreamJoin(_), QuerySpec::StreamJoin(j)) => Some(j.routing_copies()),
        _ => None,
    };
    let mut links = Vec::with_capacity(p.then.len());
    let mut partition_key = Vec::new();
    let mut exchanged = false;
    for (n, c) in p.then.iter().enumerate() {
        let before = spec::chained_output(query, &input, &[]);
        let stage_input = schema_after(&c.steps, &before);
        let all = vec![true; stage_input.len()];
        let steps = Arc::new(CompiledSteps::new(&c.steps, before.len(), &all, Vec::new()).0);
        // where each column of the stage's input comes from, when copied as it is
        let sources = copied_columns(&c.steps, before.len());
        let field = format!("query.sql (chained query {})", n + 1);
        let (operator, keys, out_routing) = match &c.query {
            QuerySpec::WindowAggregate { group_by, window, output_mode, measures } => {
                let cfg =
                    window_config(&stage_input, c, group_by, window.as_ref(), *output_mode, measures, mode, &field)?;
                let offset = usize::from(!matches!(cfg.window, WindowKind::None));
                partition_key = (0..cfg.key_columns.len()).map(|i| i + offset).collect();
                let keys = cfg.key_columns.clone();
                let out = (0..keys.len()).map(|i| i + offset).collect::<Vec<_>>();
                (OperatorPlan::Window(cfg), Some(keys), Some(out))
            }
            QuerySpec::Forward => {
                partition_key = Vec::new();
                (OperatorPlan::Forward, None, None)
            }
            _ => {
                return Err(PlanError {
                    field,
                    why: "only window aggregates and projections run chained after another operator".into(),
                });
            }
        };
        // the routing key's positions in this stage's group key, each a copy of a routing column
        let mut positions = routing.as_ref().and_then(|r| match &keys {
            None => Some(Vec::new()),
            Some(keys) => r
                .iter()
                .map(|cols| {
                    keys.iter().position(|&k| sources.get(k).copied().flatten().is_some_and(|s| cols.contains(&s)))
                })
                .collect::<Option<Vec<usize>>>(),
        });
        // a keyed stage whose key does not hold the routing key: the first such stage takes its
        // input through an exchange, keyed (and routed, and re-split) by its own whole key
        let exchange = positions.is_none() && !exchanged && routing.is_some();
        if let (true, Some(keys)) = (exchange, &keys) {
            positions = Some((0..keys.len()).collect());
            exchanged = true;
        }
        routing = match (&keys, &positions, &out_routing) {
            // a projection passes the key's columns on where they are
            (None, Some(_), _) => routing.as_ref().and_then(|r| {
                r.iter()
                    .map(|cols| {
                        let at: Vec<usize> =
                            (0..sources.len()).filter(|&i| sources[i].is_some_and(|s| cols.contains(&s))).collect();
                        (!at.is_empty()).then_some(at)
                    })
                    .collect::<Option<Vec<_>>>()
            }),
            (Some(_), Some(pos), Some(out)) => Some(pos.iter().map(|&i| vec![out[i]]).collect()),
            _ => None,
        };
        let names = |s: &Schema| s.fields().iter().map(|f| f.name.clone()).collect::<Arc<[String]>>();
        let (row_names, record_names) = (names(&before), names(&stage_input));
        links.push(LinkPlan {
            steps,
            operator,
            routing_positions: positions,
            exchange,
            row_names,
            record_names,
            watermark_delay: c.watermark_delay,
        });
        input = stage_input;
        query = &c.query;
    }
    Ok(Planned { links, partition_key })
}

/// For each output column of `steps` over an input of `width` columns, the input column it is
/// an unchanged copy of (through every projection), if any.
fn copied_columns(steps: &[spec::Step], width: usize) -> Vec<Option<usize>> {
    let mut from: Vec<Option<usize>> = (0..width).map(Some).collect();
    for step in steps {
        if let spec::Step::Project(items) = step {
            from = items
                .iter()
                .map(|e| match e.typed.node {
                    crate::expr::Node::Column(i) => from.get(i).copied().flatten(),
                    _ => None,
                })
                .collect();
        }
    }
    from
}

/// A chained window aggregate's configuration over its input `schema`; its watermark is the
/// chained query's (the upstream's `window`).
#[allow(clippy::too_many_arguments)] // the parts of a chained window aggregate, each once
fn window_config(
    schema: &Schema,
    c: &ChainedQuery,
    group_by: &[String],
    window: Option<&WindowSpec>,
    output_mode: spec::OutputMode,
    measures: &[spec::MeasureSpec],
    mode: Mode,
    field: &str,
) -> Result<WindowAggregateConfig, PlanError> {
    let key_columns = group_by.iter().map(|g| col(schema, g, field)).collect::<Result<Vec<_>, _>>()?;
    let window = match window {
        None => WindowKind::None,
        Some(WindowSpec::Tumbling { column, size, start }) => {
            WindowKind::Fixed { column: col(schema, column, field)?, windows: SlidingWindows::tumbling(*size, *start) }
        }
        Some(WindowSpec::Sliding { column, size, slide, start }) => WindowKind::Fixed {
            column: col(schema, column, field)?,
            windows: SlidingWindows { size: *size, slide: *slide, offset: *start },
        },
        Some(WindowSpec::Session { column, gap }) => WindowKind::Session {
            column: col(schema, column, field)?,
            gap: match gap {
                SpecGap::Fixed(d) => SessionGap::Fixed(*d),
                SpecGap::Column(g) => SessionGap::Column(col(schema, g, field)?),
            },
        },
    };
    let measures = measures
        .iter()
        .enumerate()
        .map(|(i, m)| compile_measure(m, schema, &format!("{field}.measures[{i}]")))
        .collect::<Result<Vec<_>, _>>()?;
    let output_mode = match output_mode {
        spec::OutputMode::Append => OutputMode::Append,
        spec::OutputMode::Update => OutputMode::Update,
        spec::OutputMode::Complete => OutputMode::Complete,
    };
    let watermark = Some((col(schema, &c.watermark.column, field)?, c.watermark.delay));
    Ok(WindowAggregateConfig { mode, key_columns, window, output_mode, measures, watermark })
}

/// The chain of `first` (built for the plan, stamped in real-time mode) and the links.
/// `tracker`: the first stage's event-time column and delay when the chain tracks the
/// watermark from its records (real-time, one source).
pub(super) fn build(
    mode: Mode,
    first: Box<dyn Operator>,
    links: &[LinkPlan],
    tracker: Option<(usize, Duration)>,
) -> OperatorChain {
    let links = links
        .iter()
        .map(|l| ChainLink {
            steps: l.steps.clone(),
            operator: match &l.operator {
                OperatorPlan::Window(c) => Box::new(WindowAggregate::new(c.clone()).with_stamped_watermark()),
                _ => Box::new(Forward),
            },
            routing_positions: l.routing_positions.clone(),
            exchange: l.exchange,
            row_names: l.row_names.clone(),
            record_names: l.record_names.clone(),
            watermark_delay: l.watermark_delay,
        })
        .collect();
    let chain = OperatorChain::new(mode, first, links);
    match tracker {
        Some((c, d)) if mode == Mode::RealTime => chain.with_tracker(c, d),
        _ => chain,
    }
}

/// Why the chain must run in one partition actor, if it must: a stage after the exchange whose
/// group key does not hold the exchanged stage's key would need a second exchange, which the
/// runtime does not run.
pub(super) fn single_partition_reason(links: &[LinkPlan]) -> Option<String> {
    links.iter().position(|l| l.routing_positions.is_none()).map(|i| {
        format!(
            "the aggregation chained after operator {} is not grouped by every key of the one before it, and its \
             input is already behind an exchange: a second exchange between partition actors is not supported, \
             so run it with parallelism = 1",
            i + 1
        )
    })
}

/// Benchmarks ([`super::QueryPlan::force_exchange`]): marks the edge into the last chained window
/// aggregate *exchange* although its group key holds the routing key (a forward edge would do),
/// its input then re-keyed by its own whole key as a needed exchange's is; only the projections
/// after it follow, so no later stage's routing changes. `false` (nothing changes) when the
/// chain already has an exchange, must run in one partition actor, or has no chained aggregate.
pub(super) fn force_exchange(links: &mut [LinkPlan]) -> bool {
    if exchange_link(links).is_some() || single_partition_reason(links).is_some() {
        return false;
    }
    let Some(link) = links.iter_mut().rev().find(|l| matches!(l.operator, OperatorPlan::Window(_))) else {
        return false;
    };
    let OperatorPlan::Window(c) = &link.operator else { return false };
    link.routing_positions = Some((0..c.key_columns.len()).collect());
    link.exchange = true;
    true
}

/// The index of the first link whose input is exchanged, if any.
pub(super) fn exchange_link(links: &[LinkPlan]) -> Option<usize> {
    links.iter().position(|l| l.exchange)
}
