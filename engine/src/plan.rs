//! From a validated [`Pipeline`] to what runs: the operator, the columns to decode, the
//! partition key, the watermark and the clock. Pure: the runtime and the tests both build their
//! queries here.

use crate::aggregate::{AggParams, AggregateFn, Percentage};
use crate::decode::DecoderConfig;
use crate::driver::{MicroBatchSequencer, RealTimeClock};
use crate::operator::SessionGap;
use crate::operator::{
    Deduplicate, DeduplicateConfig, Forward, Mode, Operator, OutputMode, Processor, ProcessorConfig, RollingMeasure,
    RollingWindow, RollingWindowConfig, StreamJoin, StreamJoinConfig, WindowAggregate, WindowAggregateConfig,
    WindowKind,
};
use crate::registry::RegisteredProcessor;
use std::sync::Arc;

use crate::schema::Schema;
use crate::spec::{self, ClockSpec, MeasureSpec, Pipeline, QuerySpec, SessionGap as SpecGap, WindowSpec};
use crate::steps::CompiledSteps;
use crate::time::{Duration, Timestamp};
use crate::watermark::WatermarkTracker;
use crate::watermark_union::{SourceWatermark, UnionWatermark};
use crate::window::SlidingWindows;

mod chain;

/// Errors of planning (a validated pipeline that still cannot run: a bug in validation).
#[derive(Debug, thiserror::Error)]
#[error("{field}: {why}")]
pub struct PlanError {
    /// The pipeline field.
    pub field: String,
    /// What is wrong.
    pub why: String,
}

/// What a pipeline runs.
#[derive(Debug, Clone)]
pub struct QueryPlan {
    /// Execution mode.
    pub mode: Mode,
    /// The schema of decoded records (the source's).
    pub decoded_schema: Schema,
    /// The query's input schema: the decoded schema after the source's steps.
    pub input_schema: Schema,
    /// Names of the query's input columns (late sink rows, records the query refuses).
    pub input_names: Vec<String>,
    /// The query's output column names, in order (before the sink's `select`: rows whose
    /// select fails are written to the dead letters with these).
    pub query_output_names: Vec<String>,
    /// The output column names, in order, as written (after the sink's `select`).
    pub output_names: Vec<String>,
    /// The source's `filter` / `select`, run on each decoded record before the clock and the
    /// watermark; also checks, when there are steps, that the event-time and replay columns
    /// are not NULL after them (the decoder checks them otherwise). Empty: nothing to do.
    pub source_steps: Arc<CompiledSteps>,
    /// The sink's `select`, run on each output row before it is written. Empty: nothing to do.
    pub output_steps: Arc<CompiledSteps>,
    /// A SQL query's filters on the watermark column ([`Pipeline::query_steps`]), run on each
    /// record of the query's input after the watermark, before the operator. Empty: nothing to do.
    pub query_steps: Arc<CompiledSteps>,
    /// Output column indexes forming the sink's message key.
    pub partition_key: Vec<usize>,
    /// Watermark: event-time column index and delay.
    pub watermark: Option<(usize, Duration)>,
    /// Replay clock: column index and `until`.
    pub replay: Option<(usize, Option<Timestamp>)>,
    /// Which decoded columns the decoder must decode (those the steps and the query read).
    pub needed: Vec<bool>,
    /// Decoded columns that must be non-null (event time, replay column; with source steps
    /// these are checked after them, by [`QueryPlan::source_steps`], and this is empty).
    pub required: Vec<usize>,
    /// A SQL query's stream-static join ([`Pipeline::join`]), run on each record after
    /// [`QueryPlan::source_steps`], the clock and the watermark; `None` without one.
    pub join: Option<JoinPlan>,
    /// The watermark's and the replay clock's columns in the records the clock sees: the
    /// query's input ([`QueryPlan::watermark`], [`QueryPlan::replay`]) without a join, the
    /// stream's records before the join with one (as Spark's watermark sits below the join).
    clock_columns: (Option<usize>, Option<usize>),
    /// [`Pipeline::source`]'s `idle_timeout`.
    idle_timeout: Option<Duration>,
    /// The sources after the first ([`Pipeline::more_sources`]); empty with one source.
    pub more_sources: Vec<SourcePlan>,
    /// How the sources' watermarks combine.
    pub watermark_policy: spec::WatermarkPolicy,
    operator: OperatorPlan,
    /// The operators chained after [`QueryPlan::operator`] ([`Pipeline::then`]); empty: one.
    links: Vec<chain::LinkPlan>,
}

/// A source after the first, as planned: its decoder's columns and its steps (which end with
/// the projection into the union's column order), so its records reach the query as the first
/// source's do.
#[derive(Debug, Clone)]
pub struct SourcePlan {
    /// Its `name`.
    pub name: String,
    /// The schema of its decoded records.
    pub decoded_schema: Schema,
    /// Its steps, compiled (never empty for a source whose columns are in another order).
    pub steps: Arc<CompiledSteps>,
    /// Which decoded columns its decoder must decode.
    pub needed: Vec<bool>,
    /// Decoded columns that must be non-null (empty when its steps check them).
    pub required: Vec<usize>,
    /// Its watermark: column index in the union's columns and delay.
    pub watermark: Option<(usize, Duration)>,
    /// Its `idle_timeout`.
    pub idle_timeout: Option<Duration>,
}

impl SourcePlan {
    /// Its decoder configuration.
    pub fn decoder_config(&self, timestamp_unit: crate::time::TimeUnit) -> DecoderConfig {
        DecoderConfig {
            schema: self.decoded_schema.clone(),
            needed: self.needed.clone(),
            required: self.required.clone(),
            timestamp_unit,
        }
    }
}

/// A stream-static join as planned: the join and its steps compiled for the joined record (they
/// also check that the event-time and replay columns are not NULL). The table is read by the
/// runtime ([`JoinPlan::stage`]).
#[derive(Debug, Clone)]
pub struct JoinPlan {
    /// The join.
    pub spec: spec::StaticJoinSpec,
    /// [`spec::StaticJoinSpec::steps`], compiled.
    pub steps: Arc<CompiledSteps>,
}

impl JoinPlan {
    /// The join over the table's `records` (as read: the table's schema).
    ///
    /// # Errors
    /// As [`crate::join::JoinStage::new`]: a row whose join key fails.
    pub fn stage(&self, records: Vec<crate::value::Record>) -> Result<crate::join::JoinStage, crate::join::KeyFailed> {
        crate::join::JoinStage::new(&self.spec, records, self.steps.clone())
    }
}

#[derive(Debug, Clone)]
enum OperatorPlan {
    Window(WindowAggregateConfig),
    Dedup(DeduplicateConfig),
    Rolling(RollingWindowConfig),
    Forward,
    StreamJoin(StreamJoinConfig),
    Processor(ProcessorPlan),
}

/// A registered processor as planned: its instances see records of the query's input schema.
#[derive(Debug, Clone)]
struct ProcessorPlan {
    cfg: ProcessorConfig,
    processor: RegisteredProcessor,
    input: Schema,
}

impl ProcessorPlan {
    /// Plans `q` over `schema`; the output columns named as a `partition_by` column form the
    /// sink's partition key.
    fn new(q: &spec::ProcessorQuery, schema: &Schema, mode: Mode) -> Result<(ProcessorPlan, Vec<usize>), PlanError> {
        let key_columns =
            q.partition_by.iter().map(|c| col(schema, c, "query.partition_by")).collect::<Result<Vec<_>, _>>()?;
        let output = q.processor.output();
        let pk =
            q.partition_by.iter().filter_map(|c| output.iter().position(|f| f.name.eq_ignore_ascii_case(c))).collect();
        let cfg = ProcessorConfig { mode, key_columns };
        Ok((ProcessorPlan { cfg, processor: q.processor.clone(), input: schema.clone() }, pk))
    }

    /// A fresh operator running a new instance, initialised.
    fn operator(&self) -> Processor {
        let mut user = self.processor.instantiate();
        user.init(&self.input);
        Processor::new(self.cfg.clone(), user)
    }
}

fn col(schema: &Schema, name: &str, field: &str) -> Result<usize, PlanError> {
    schema.resolve(name).ok_or_else(|| PlanError { field: field.into(), why: format!("unknown column {name:?}") })
}

/// Compiles one measure to an [`AggregateFn`] (through [`AggregateFn::from_name`], which owns the
/// function names, their input types and parameters).
///
/// # Errors
/// [`PlanError`] for an unknown function, column or parameter (validation catches these first).
pub fn compile_measure(m: &MeasureSpec, schema: &Schema, field: &str) -> Result<AggregateFn, PlanError> {
    let input = match m.column.as_deref() {
        None | Some("*") => None,
        Some(c) => {
            let i = col(schema, c, &format!("{field}.column"))?;
            Some((i, schema.fields()[i].data_type))
        }
    };
    if let Some(user) = &m.user {
        let Some((i, t)) = input else {
            return Err(PlanError { field: format!("{field}.column"), why: "a user aggregate needs a column".into() });
        };
        return Ok(AggregateFn::user(user.aggregator.clone(), i, t).named(&m.output_name));
    }
    let agg = m.agg.to_ascii_lowercase();
    let mut params = AggParams { ignore_nulls: m.ignore_nulls, ..AggParams::default() };
    match agg.as_str() {
        "approx_percentile" | "percentile_approx" => {
            params.percentage = Some(if m.percentage_is_list {
                Percentage::List(m.percentages.clone())
            } else {
                Percentage::One(m.percentages.first().copied().unwrap_or(0.5))
            });
            params.accuracy = Some(i64::from(m.accuracy));
        }
        "approx_count_distinct" => params.rsd = Some(m.rsd),
        _ => {}
    }
    AggregateFn::from_name(&agg, input, &params)
        .map(|f| f.named(&m.output_name))
        .map_err(|e| PlanError { field: field.to_string(), why: e.to_string() })
}

impl QueryPlan {
    /// Whether an expression that runs in a partition actor (a SQL query's filters after the
    /// watermark, a chained operator's steps, the query's select list and the sink's `select`)
    /// calls `current_timestamp()`: the partition actor then sets the processing time before
    /// each record and each timer in real-time mode.
    pub fn reads_processing_time_after_sources(&self) -> bool {
        self.query_steps.reads_processing_time()
            || self.output_steps.reads_processing_time()
            || self.links.iter().any(chain::LinkPlan::reads_processing_time)
    }

    /// Plans `p`.
    ///
    /// # Errors
    /// [`PlanError`] when a column or function cannot be resolved (validation catches these
    /// first; this is a second line).
    pub fn new(p: &Pipeline) -> Result<QueryPlan, PlanError> {
        let schema = p.query_schema();
        let mode = match p.mode {
            spec::Mode::MicroBatch => Mode::MicroBatch,
            spec::Mode::RealTime => Mode::RealTime,
        };
        let first_watermark = match &p.watermark {
            Some(w) => Some((col(&schema, &w.column, "watermark.column")?, w.delay)),
            None => None,
        };
        let more_watermarks: Vec<Option<(usize, Duration)>> = p
            .more_sources
            .iter()
            .map(|s| s.watermark.as_ref().map(|w| col(&schema, &w.column, "watermark.column").map(|c| (c, w.delay))))
            .map(Option::transpose)
            .collect::<Result<_, _>>()?;
        // the operators' watermark: the first source's, else the first source's that has one
        let watermark = first_watermark.or_else(|| more_watermarks.iter().flatten().next().copied());
        let replay = match &p.clock {
            ClockSpec::System => None,
            ClockSpec::Replay { column, until, .. } => Some((col(&schema, column, "clock.column")?, *until)),
        };
        let mut needed = vec![false; schema.len()];
        // the columns every source's records must hold (the operator's event time, the replay
        // clock's); each source's own watermark column is added for that source alone: a source
        // without a watermark takes a record whose column another source's watermark is on
        // NULL, as Spark's union does (each EventTimeWatermark is on its own source)
        let mut required = Vec::new();
        let joins = matches!(p.query, QuerySpec::StreamJoin(_));
        for (c, _) in first_watermark.iter().chain(more_watermarks.iter().flatten()) {
            needed[*c] = true;
        }
        if let Some((c, _)) = replay {
            needed[c] = true;
            required.push(c);
        }
        let names = |cols: &[String], field: &str| -> Result<Vec<usize>, PlanError> {
            cols.iter().map(|c| col(&schema, c, field)).collect()
        };
        let (operator, mut partition_key) = match &p.query {
            QuerySpec::WindowAggregate { group_by, window, output_mode, measures } => {
                let key_columns = names(group_by, "query.group_by")?;
                let window = match window {
                    None => WindowKind::None,
                    Some(WindowSpec::Tumbling { column, size, start }) => WindowKind::Fixed {
                        column: col(&schema, column, "query.window.column")?,
                        windows: SlidingWindows::tumbling(*size, *start),
                    },
                    Some(WindowSpec::Sliding { column, size, slide, start }) => WindowKind::Fixed {
                        column: col(&schema, column, "query.window.column")?,
                        windows: SlidingWindows { size: *size, slide: *slide, offset: *start },
                    },
                    Some(WindowSpec::Session { column, gap }) => WindowKind::Session {
                        column: col(&schema, column, "query.window.column")?,
                        gap: match gap {
                            SpecGap::Fixed(d) => SessionGap::Fixed(*d),
                            SpecGap::Column(c) => SessionGap::Column(col(&schema, c, "query.window.gap_column")?),
                        },
                    },
                };
                match &window {
                    WindowKind::Fixed { column, .. } => {
                        needed[*column] = true;
                        required.push(*column);
                    }
                    WindowKind::Session { column, gap } => {
                        needed[*column] = true;
                        required.push(*column);
                        if let SessionGap::Column(c) = gap {
                            needed[*c] = true;
                        }
                    }
                    WindowKind::None => {}
                }
                let measures = measures
                    .iter()
                    .enumerate()
                    .map(|(i, m)| compile_measure(m, &schema, &format!("query.measures[{i}]")))
                    .collect::<Result<Vec<_>, _>>()?;
                for m in &measures {
                    if let Some(i) = m.input {
                        needed[i] = true;
                    }
                }
                for &c in &key_columns {
                    needed[c] = true;
                }
                let output_mode = match output_mode {
                    spec::OutputMode::Append => OutputMode::Append,
                    spec::OutputMode::Update => OutputMode::Update,
                    spec::OutputMode::Complete => OutputMode::Complete,
                };
                let offset = usize::from(!matches!(window, WindowKind::None));
                let pk = (0..key_columns.len()).map(|i| i + offset).collect();
                // Spark judges lateness and evicts a window only through its time column's own
                // watermark: a window over another column (a second timestamp, one computed from
                // the watermarked column, a static table's) carries none, so nothing is late and
                // nothing is evicted (append is refused there at validation)
                // over a union, that is the first source's watermark (Spark's union carries its
                // first child's column metadata; `Pipeline::event_time_source`)
                let carried = match p.event_time_source {
                    0 => first_watermark,
                    k => more_watermarks.get(k - 1).copied().flatten(),
                };
                let watermark = match &window {
                    WindowKind::Fixed { column, .. } | WindowKind::Session { column, .. } => {
                        carried.filter(|(c, _)| c == column)
                    }
                    WindowKind::None => carried,
                };
                (
                    OperatorPlan::Window(WindowAggregateConfig {
                        mode,
                        key_columns,
                        window,
                        output_mode,
                        measures,
                        watermark,
                    }),
                    pk,
                )
            }
            QuerySpec::RollingWindow { partition_by, order_by, frontier_delay, measures, .. } => {
                let key_columns = names(partition_by, "query.partition_by")?;
                let order_by = col(&schema, order_by, "query.order_by")?;
                needed[order_by] = true;
                required.push(order_by);
                let measures = measures
                    .iter()
                    .enumerate()
                    .map(|(i, m)| {
                        Ok(RollingMeasure {
                            func: compile_measure(m, &schema, &format!("query.measures[{i}]"))?,
                            over: m.over,
                        })
                    })
                    .collect::<Result<Vec<_>, PlanError>>()?;
                for m in &measures {
                    if let Some(i) = m.func.input {
                        needed[i] = true;
                    }
                }
                for &c in &key_columns {
                    needed[c] = true;
                }
                let pk = (0..key_columns.len()).collect();
                (
                    OperatorPlan::Rolling(RollingWindowConfig {
                        mode,
                        key_columns,
                        order_by,
                        frontier_delay: *frontier_delay,
                        measures,
                        watermark,
                        compact: p.checkpoint.is_none(),
                    }),
                    pk,
                )
            }
            QuerySpec::Deduplicate { columns, within_watermark } => {
                let key_columns = names(columns, "query.columns")?;
                // The output is the whole record: decode every column.
                needed.iter_mut().for_each(|n| *n = true);
                let pk = key_columns.clone();
                (
                    OperatorPlan::Dedup(DeduplicateConfig {
                        mode,
                        key_columns,
                        within_watermark: *within_watermark,
                        watermark,
                    }),
                    pk,
                )
            }
            QuerySpec::Forward => {
                // The output is the whole record (the query's projection runs after)
                needed.iter_mut().for_each(|n| *n = true);
                (OperatorPlan::Forward, Vec::new())
            }
            QuerySpec::Processor(q) => {
                // user code may read any column of its input
                needed.iter_mut().for_each(|n| *n = true);
                let (plan, pk) = ProcessorPlan::new(q, &schema, mode)?;
                (OperatorPlan::Processor(plan), pk)
            }
            QuerySpec::StreamJoin(j) => {
                // every column of the wide record is a key, the side, or a joined column
                needed.iter_mut().for_each(|n| *n = true);
                let keys: Vec<usize> = (0..j.keys).collect();
                let late = |s: usize| j.watermarked[s].then_some(j.times[s]);
                (
                    OperatorPlan::StreamJoin(StreamJoinConfig {
                        mode,
                        join_type: j.join_type,
                        keys: [keys.clone(), keys],
                        columns: [j.columns(0), j.columns(1)],
                        times: j.times,
                        late_columns: [late(0), late(1)],
                        side_column: Some(j.side_column()),
                        range: j.range,
                    }),
                    Vec::new(),
                )
            }
        };
        // A late sink writes input records whole; so does the dead-letter sink, which receives
        // the records a window aggregate refuses (an integer sum would leave BIGINT).
        let refuses =
            matches!(&operator, OperatorPlan::Window(c) if c.measures.iter().any(AggregateFn::is_integer_sum));
        if p.late_sink.is_some() || (refuses && p.dead_letter.is_some()) {
            needed.iter_mut().for_each(|n| *n = true);
        }
        // `required` and a source's watermark column
        let with_watermark = |w: Option<(usize, Duration)>| {
            let mut r: Vec<usize> = required.iter().copied().chain(w.map(|w| w.0)).collect();
            r.sort_unstable();
            r.dedup();
            r
        };
        let others_required: Vec<Vec<usize>> = more_watermarks.iter().map(|w| with_watermark(*w)).collect();
        let required = with_watermark(first_watermark);
        // the query's own filters read their columns too
        let (query_steps, needed) = CompiledSteps::new(&p.query_steps, schema.len(), &needed, Vec::new());
        let decoded = p.input_schema().clone();
        // a join's steps check the required columns; the join reads its keys
        let mut clock_columns = (first_watermark.map(|w| w.0), replay.map(|r| r.0));
        let (join, needed, required) = match &p.join {
            None => (None, needed, required),
            Some(j) => {
                let stream = spec::schema_after(&p.source_steps, &decoded);
                let joined = j.output_schema(&stream);
                let named = required.iter().map(|&c| (c, schema.fields()[c].name.clone())).collect();
                let (steps, joined_needed) = CompiledSteps::new(&j.steps, joined.len(), &needed, named);
                let mut stream_needed: Vec<bool> =
                    (0..stream.len()).map(|i| joined_needed.get(i) == Some(&true)).collect();
                for k in &j.keys {
                    crate::steps::columns_of(&k.stream.typed, &mut stream_needed);
                }
                // the clock reads the stream's records: its columns must be the stream's
                let wm = p.watermark.as_ref().map(|w| col(&stream, &w.column, "watermark.column")).transpose()?;
                let rp = match &p.clock {
                    ClockSpec::System => None,
                    ClockSpec::Replay { column, .. } => Some(col(&stream, column, "clock.column")?),
                };
                clock_columns = (wm, rp);
                let stream_required: Vec<usize> = wm.into_iter().chain(rp).collect();
                for &c in &stream_required {
                    stream_needed[c] = true;
                }
                (Some(JoinPlan { spec: j.clone(), steps: Arc::new(steps) }), stream_needed, stream_required)
            }
        };
        // the other sources read into the union's columns (no join beside several sources)
        let more_sources = p
            .more_sources
            .iter()
            .zip(&more_watermarks)
            .zip(&others_required)
            .map(|((s, w), union_required)| {
                let decoded = &s.source.schema;
                // a stream-stream join's sources each fill their own side's columns of the wide
                // record: each requires its own watermark column only
                let own: Vec<usize> = w.map(|w| w.0).into_iter().chain(replay.map(|r| r.0)).collect();
                let required = if joins { &own } else { union_required };
                let named = required.iter().map(|&c| (c, schema.fields()[c].name.clone())).collect();
                let (steps, needed) = CompiledSteps::new(&s.steps, decoded.len(), &needed, named);
                let (steps, required) = if s.steps.is_empty() || steps.has_no_steps() {
                    (CompiledSteps::new(&[], decoded.len(), &[], Vec::new()).0, required.clone())
                } else {
                    (steps, Vec::new())
                };
                SourcePlan {
                    name: s.name.clone(),
                    decoded_schema: decoded.clone(),
                    steps: Arc::new(steps),
                    needed,
                    required,
                    watermark: *w,
                    idle_timeout: s.idle_timeout,
                }
            })
            .collect();
        let (source_steps, needed, required) = if p.source_steps.is_empty() {
            (CompiledSteps::new(&[], decoded.len(), &[], Vec::new()).0, needed, required)
        } else {
            let after_steps = spec::schema_after(&p.source_steps, &decoded);
            let named = required.iter().map(|&c| (c, after_steps.fields()[c].name.clone())).collect();
            let (steps, decoded_needed) = CompiledSteps::new(&p.source_steps, decoded.len(), &needed, named);
            if steps.has_no_steps() {
                // only projections that keep each record as it is (columns renamed at most, as the
                // SQL aggregation's in source order): the record goes on untouched and the
                // decoder checks the required columns, as without steps
                (CompiledSteps::new(&[], decoded.len(), &[], Vec::new()).0, decoded_needed, required)
            } else {
                (steps, decoded_needed, Vec::new())
            }
        };
        let links = match p.then.is_empty() {
            true => Vec::new(),
            false => {
                let planned = chain::plan_links(p, &operator, mode)?;
                partition_key = planned.partition_key;
                planned.links
            }
        };
        let query_output_names: Vec<String> = p.query_output_schema().into_iter().map(|f| f.name).collect();
        let output_names: Vec<String> = p.output_schema().into_iter().map(|f| f.name).collect();
        // every column the sink's select writes is read
        let all = vec![true; output_names.len()];
        let (output_steps, _) = CompiledSteps::new(&p.output_steps, query_output_names.len(), &all, Vec::new());
        Ok(QueryPlan {
            mode,
            input_names: schema.fields().iter().map(|f| f.name.clone()).collect(),
            input_schema: schema,
            decoded_schema: decoded,
            query_output_names,
            source_steps: Arc::new(source_steps),
            output_steps: Arc::new(output_steps),
            query_steps: Arc::new(query_steps),
            output_names,
            partition_key,
            watermark,
            replay,
            needed,
            required,
            join,
            clock_columns,
            idle_timeout: p.idle_timeout,
            more_sources,
            watermark_policy: p.watermark_policy,
            operator,
            links,
        })
    }

    /// The names of the decoded columns (the source's schema), in order.
    pub fn decoded_names(&self) -> Vec<String> {
        self.decoded_schema.fields().iter().map(|f| f.name.clone()).collect()
    }

    /// A fresh operator (one per partition actor).
    pub fn new_operator(&self) -> Box<dyn Operator> {
        // several sources in real-time mode: the stamped (combined) watermark only
        let stamped = !self.more_sources.is_empty() && self.mode == Mode::RealTime;
        if !self.links.is_empty() {
            // chained: in real-time mode the chain tracks the watermark and hands it down
            let first = self.first_operator(self.mode == Mode::RealTime);
            let tracker = self.watermark.filter(|_| !stamped);
            return Box::new(chain::build(self.mode, first, &self.links, tracker));
        }
        self.first_operator(stamped)
    }

    /// Why the query must run in one partition actor, if it must (a chained aggregation keyed
    /// otherwise than the operator before it where no exchange can run: behind an exchange
    /// already, or after an operator whose routing key does not reach it): the runtime refuses a
    /// `parallelism` above 1 with it, and takes 1 by default.
    pub fn single_partition(&self) -> Option<String> {
        chain::single_partition_reason(&self.links)
    }

    /// The operator after which a chain's rows are exchanged between partition actors (1: the
    /// first chained after the query's operator; DESIGN.md "The operator graph"), if one is:
    /// its group key does not hold the key the rows were routed by. The runtime then splits the
    /// chain there ([`crate::operator::OperatorChain::split_at_exchange`]) when it runs several
    /// partition actors.
    pub fn exchange(&self) -> Option<usize> {
        chain::exchange_link(&self.links).map(|i| i + 1)
    }

    /// Benchmarks only (the runtime's `force_exchange` option; no pipeline field sets it): makes
    /// the edge into the last chained aggregation an *exchange* although a forward edge would do
    /// (its group key holds the routing key of the operator before), so the exchange's own cost
    /// can be measured on one query against its forward edge. Its input rows are then re-keyed
    /// by its whole group key, as a needed exchange's are; the rows are the same either way. A
    /// checkpoint written so re-splits that stage by its whole key: restore it the same way.
    /// `false` (nothing changes) when the chain already has an exchange, must run in one
    /// partition actor, or has no chained aggregation.
    pub fn force_exchange(&mut self) -> bool {
        chain::force_exchange(&mut self.links)
    }

    /// The query's first operator, its watermark stamped (taken only from what it is given).
    fn first_operator(&self, stamped: bool) -> Box<dyn Operator> {
        match &self.operator {
            OperatorPlan::Window(c) if stamped => Box::new(WindowAggregate::new(c.clone()).with_stamped_watermark()),
            OperatorPlan::Window(c) => Box::new(WindowAggregate::new(c.clone())),
            OperatorPlan::Dedup(c) if stamped => Box::new(Deduplicate::new(c.clone()).with_stamped_watermark()),
            OperatorPlan::Dedup(c) => Box::new(Deduplicate::new(c.clone())),
            OperatorPlan::Rolling(c) if stamped => Box::new(RollingWindow::new(c.clone()).with_stamped_watermark()),
            OperatorPlan::Rolling(c) => Box::new(RollingWindow::new(c.clone())),
            OperatorPlan::Forward => Box::new(Forward),
            OperatorPlan::StreamJoin(c) => Box::new(StreamJoin::new(c.clone())),
            OperatorPlan::Processor(p) => Box::new(p.operator()),
        }
    }

    /// The input columns that decide a record's partition actor.
    pub fn routing_columns(&self) -> Vec<usize> {
        match &self.operator {
            OperatorPlan::Window(c) => c.key_columns.clone(),
            OperatorPlan::Dedup(c) => c.key_columns.clone(),
            OperatorPlan::Rolling(c) => c.key_columns.clone(),
            // stateless: any partition actor may take any record
            OperatorPlan::Forward => Vec::new(),
            OperatorPlan::StreamJoin(c) => c.keys[0].clone(),
            OperatorPlan::Processor(p) => p.cfg.key_columns.clone(),
        }
    }

    /// The decoder configuration (only the needed columns; event-time columns required).
    pub fn decoder_config(&self, timestamp_unit: crate::time::TimeUnit) -> DecoderConfig {
        DecoderConfig {
            schema: self.decoded_schema.clone(),
            needed: self.needed.clone(),
            required: self.required.clone(),
            timestamp_unit,
        }
    }

    /// A micro-batch sequencer for this query.
    pub fn sequencer(&self) -> MicroBatchSequencer {
        MicroBatchSequencer::with_sources(self.source_watermarks(), self.clock_columns.1)
    }

    /// A real-time clock for this query.
    pub fn realtime_clock(&self) -> RealTimeClock {
        RealTimeClock::with_sources(self.source_watermarks(), self.clock_columns.1)
    }

    /// Every source's watermark and `idle_timeout`, in source order, under the pipeline's policy.
    fn source_watermarks(&self) -> UnionWatermark {
        let tracker = |w: Option<(usize, Duration)>| w.map(|(c, d)| (c, WatermarkTracker::new(d)));
        // the first source's column in the records the clock sees (`None`: it has no watermark)
        let first = self.clock_columns.0.zip(self.watermark).map(|(c, (_, d))| (c, d));
        let mut sources = vec![SourceWatermark::new(tracker(first), self.idle_timeout)];
        sources.extend(self.more_sources.iter().map(|s| SourceWatermark::new(tracker(s.watermark), s.idle_timeout)));
        UnionWatermark::new(sources, self.watermark_policy)
    }

    /// The number of sources (1 + [`QueryPlan::more_sources`]).
    pub fn source_count(&self) -> usize {
        1 + self.more_sources.len()
    }

    /// Whether a micro-batch without data is due after a batch that evicted with `before` when
    /// the next would evict with `after` (Spark's no-data batch).
    ///
    /// A processor's event-time timers live in the partition actors: the source that asks
    /// cannot see them, so any move of the watermark runs one (as Spark's `transformWithState`
    /// with event-time timers).
    pub fn wants_no_data_batch(&self, before: Timestamp, after: Timestamp) -> bool {
        if let OperatorPlan::Processor(_) = &self.operator {
            return self.watermark.is_some() && after > before;
        }
        self.new_operator().wants_no_data_batch(before, after)
    }

    /// The replay clock's `until`, if any.
    pub fn until(&self) -> Option<Timestamp> {
        self.replay.and_then(|(_, u)| u)
    }
}
