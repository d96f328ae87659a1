//! Raw model to [`Pipeline`]: defaults, parsed durations, resolved columns, and every rule of
//! PIPELINE.md that does not concern the query (`query.rs` has those).

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::PathBuf;

use super::error::{SpecError, list, quote};
use super::model::{RawCheckpoint, RawClock, RawMetrics, RawPipeline, RawWatermark};
use super::parse::render;
use super::source::non_empty;
use super::sources::{at_source, source_name_ok, union_sources};
use super::steps::schema_after;
use super::{
    CheckpointSpec, ClockSpec, MAX_PARALLELISM, MetricsSpec, Mode, Pipeline, QuerySpec, SinkSpec, WatermarkSpec,
};
use crate::expr::SqlFrontEnd;
use crate::registry::Registry;
use crate::schema::{DataType, Schema};
use crate::time::{Duration, parse_duration, parse_timestamp};

/// A value of the raw model shown as TOML would write it (for `given`).
pub(crate) trait Show {
    /// The TOML spelling.
    fn show(&self) -> String;
}

impl Show for String {
    fn show(&self) -> String {
        quote(self)
    }
}
impl Show for i64 {
    fn show(&self) -> String {
        self.to_string()
    }
}
impl Show for f64 {
    fn show(&self) -> String {
        toml::Value::Float(*self).to_string()
    }
}
impl Show for bool {
    fn show(&self) -> String {
        self.to_string()
    }
}
impl Show for toml::Value {
    fn show(&self) -> String {
        render(self)
    }
}
impl Show for Vec<String> {
    fn show(&self) -> String {
        format!("[{}]", self.iter().map(|s| quote(s)).collect::<Vec<_>>().join(", "))
    }
}
impl Show for BTreeMap<String, toml::Value> {
    fn show(&self) -> String {
        let t: toml::Table = self.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
        render(&toml::Value::Table(t))
    }
}

/// The fields of a section that are set: (name, TOML spelling of the value).
pub(crate) type Present = Vec<(&'static str, String)>;

/// Pushes `(name, value.show())` when the field is set.
pub(crate) fn note<T: Show>(present: &mut Present, name: &'static str, value: &Option<T>) {
    if let Some(v) = value {
        present.push((name, v.show()));
    }
}

/// Refuses every set field of `section` that its type `kind` does not take.
pub(crate) fn only_fields(
    section: &str,
    what: &str,
    kind: &str,
    present: &Present,
    allowed: &[&str],
) -> Result<(), SpecError> {
    for (name, value) in present {
        if !allowed.contains(name) {
            return Err(SpecError::new(
                format!("{section}.{name}"),
                format!("{value} (not a field of {what} {})", quote(kind)),
                list(allowed),
            ));
        }
    }
    Ok(())
}

/// Whether a duration may be zero.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Min {
    /// A delay: >= 0.
    Zero,
    /// A size, slide, gap or range: > 0.
    Positive,
}

/// Parses a Spark duration string at `field`.
pub(crate) fn duration(field: &str, text: &str, min: Min) -> Result<Duration, SpecError> {
    let allowed = match min {
        Min::Zero => {
            "a duration >= 0 (e.g. \"5 seconds\", \"0 seconds\", \"1 hour 30 minutes\", \"1.5 seconds\"; whole numbers, a fraction on seconds only; units us, ms, s, min, h, day(s), week(s); no months or years)"
        }
        Min::Positive => "a duration > 0 (e.g. \"10 seconds\")",
    };
    match parse_duration(text) {
        Ok(d) if min == Min::Positive && d.micros() == 0 => Err(SpecError::bad_str(field, text, allowed)),
        Ok(d) => Ok(d),
        Err(crate::time::TimeError::BadDuration { why, .. }) => {
            Err(SpecError::new(field, format!("{} ({why})", quote(text)), allowed))
        }
        Err(_) => Err(SpecError::bad_str(field, text, allowed)),
    }
}

/// The position of the input column `name` (any type).
pub(crate) fn column(field: &str, name: &str, schema: &Schema) -> Result<usize, SpecError> {
    schema
        .resolve(name)
        .ok_or_else(|| SpecError::bad_str(field, name, format!("a column of the schema: {}", schema.names())))
}

/// The position of the input column `name`, which must be a TIMESTAMP.
pub(crate) fn timestamp_column(field: &str, name: &str, schema: &Schema) -> Result<usize, SpecError> {
    let timestamps: Vec<&str> =
        schema.fields().iter().filter(|f| f.data_type == DataType::Timestamp).map(|f| f.name.as_str()).collect();
    let allowed = if timestamps.is_empty() {
        "a TIMESTAMP column of the schema (it has none)".to_string()
    } else {
        format!("a TIMESTAMP column of the schema: {}", list(&timestamps))
    };
    match schema.resolve(name) {
        None => Err(SpecError::bad_str(field, name, allowed)),
        Some(i) if schema.fields()[i].data_type != DataType::Timestamp => {
            Err(SpecError::new(field, format!("{} (a {} column)", quote(name), schema.fields()[i].data_type), allowed))
        }
        Some(i) => Ok(i),
    }
}

/// One of `choices` (exact spelling).
pub(crate) fn choice<'a>(field: &str, given: &str, choices: &[&'a str]) -> Result<&'a str, SpecError> {
    choices.iter().find(|c| **c == given).copied().ok_or_else(|| {
        SpecError::bad_str(field, given, choices.iter().map(|c| quote(c)).collect::<Vec<_>>().join(", "))
    })
}

/// A list of distinct input columns.
pub(crate) fn column_list(field: &str, names: &[String], schema: &Schema) -> Result<Vec<String>, SpecError> {
    for (i, name) in names.iter().enumerate() {
        let at = format!("{field}[{i}]");
        column(&at, name, schema)?;
        if names[..i].iter().any(|n| same_column(n, name)) {
            return Err(SpecError::bad_str(at, name, "each column once (names match ignoring case)"));
        }
    }
    Ok(names.to_vec())
}

/// Whether two column references name the same column: equal ignoring case, as Spark resolves
/// them by default (`spark.sql.caseSensitive = false`).
pub(crate) fn same_column(a: &str, b: &str) -> bool {
    a == b || a.to_lowercase() == b.to_lowercase()
}

/// Validates the raw model; `front` parses the SQL expression fields (`None`: such a field is
/// refused); `registry` resolves the names of user code (`[query] type = "processor"`). With
/// several `[[source]]`, the first one's errors are named `source[0]...` (its `watermark = {...}`
/// too).
pub(crate) fn validate(
    raw: RawPipeline,
    front: Option<&dyn SqlFrontEnd>,
    registry: &Registry,
) -> Result<Pipeline, SpecError> {
    // every expression bound below sees the registered functions (expr/udf.rs)
    crate::expr::with_user_functions(registry.functions(), || validate_all(raw, front, registry))
}

fn validate_all(
    mut raw: RawPipeline,
    front: Option<&dyn SqlFrontEnd>,
    registry: &Registry,
) -> Result<Pipeline, SpecError> {
    let Some(mut list) = raw.source_list.take() else {
        return validate_sources(raw, Vec::new(), front, registry);
    };
    if let Some(w) = &raw.watermark {
        let mut given = Present::new();
        note(&mut given, "column", &w.column);
        note(&mut given, "delay", &w.delay);
        return Err(SpecError::new(
            "watermark",
            format!(
                "[watermark] {{ {} }} beside {} [[source]] tables",
                given.iter().map(|(k, v)| format!("{k} = {v}")).collect::<Vec<_>>().join(", "),
                list.len()
            ),
            "with several sources, a watermark = { column, delay } in each [[source]] that has one: move [watermark] into its source",
        ));
    }
    let rest = list.split_off(1);
    raw.source = list.pop();
    if raw.source.as_ref().is_some_and(|s| s.name.is_none()) {
        return Err(SpecError::missing(
            "source[0].name",
            "a name matching [a-z_][a-z0-9_]*, unique among the sources (several [[source]] tables each need one)",
        ));
    }
    validate_sources(raw, rest, front, registry).map_err(|e| at_source(e, 0))
}

/// [`validate`] with the `[[source]]` tables after the first apart (`rest`; empty with one).
fn validate_sources(
    mut raw: RawPipeline,
    rest: Vec<super::model::RawSource>,
    front: Option<&dyn SqlFrontEnd>,
    registry: &Registry,
) -> Result<Pipeline, SpecError> {
    let name = raw.name.ok_or_else(|| SpecError::missing("name", "a name matching [a-z0-9_-]+"))?;
    if name.is_empty() || !name.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '-') {
        return Err(SpecError::bad_str("name", &name, "a name matching [a-z0-9_-]+"));
    }
    let mode = match raw.mode.as_deref() {
        None => Mode::RealTime,
        Some(m) => match choice("mode", m, &["real-time", "micro-batch"])? {
            "real-time" => Mode::RealTime,
            _ => Mode::MicroBatch,
        },
    };
    let trigger = match &raw.trigger {
        None if mode == Mode::MicroBatch => Duration::ZERO,
        None => Duration::from_secs(1),
        Some(t) => duration("trigger", t, Min::Zero)?,
    };
    let parallelism = match raw.parallelism {
        None => None,
        Some(p) if (1..=MAX_PARALLELISM as i64).contains(&p) => Some(p as usize),
        Some(p) => {
            return Err(SpecError::new(
                "parallelism",
                p.to_string(),
                format!("an integer from 1 to {MAX_PARALLELISM} (default: the number of cores)"),
            ));
        }
    };
    let (filter, select, source_name, source_watermark) = match raw.source.as_mut() {
        Some(s) => (s.filter.take(), s.select.take(), s.name.take(), s.watermark.take()),
        None => (None, None, None, None),
    };
    let source_name = source_name.unwrap_or_else(|| "source".to_string());
    source_name_ok("source.name", &source_name)?;
    let watermark_policy = match raw.watermark_policy.take().as_deref() {
        None => super::WatermarkPolicy::Min,
        Some(p) => match choice("watermark_policy", p, &["min", "max"])? {
            "max" => super::WatermarkPolicy::Max,
            _ => super::WatermarkPolicy::Min,
        },
    };
    let idle_timeout = raw
        .source
        .as_mut()
        .and_then(|s| s.idle_timeout.take())
        .map(|t| duration("source.idle_timeout", &t, Min::Positive))
        .transpose()?;
    let raw_watermark = match (raw.watermark.take(), source_watermark) {
        (Some(_), Some(_)) => {
            return Err(SpecError::new(
                "watermark",
                "[watermark] beside source.watermark",
                "one of them (source.watermark = { column, delay }, or [watermark])",
            ));
        }
        (a, b) => a.or(b),
    };
    let source = super::source::source(raw.source, &name)?;
    let mut source_steps = super::exprs::source_steps(filter.as_deref(), select.as_deref(), &source.schema, front)?;
    // everything after the source's steps reads their output
    let mut schema = schema_after(&source_steps, &source.schema);
    let mut watermark = raw_watermark.map(|w| watermark(w, &schema)).transpose()?;
    let written_source_steps = source_steps.len();
    let several = !rest.is_empty();
    let mut names = vec![source_name.clone()];
    // a SQL query reads several sources through its UNION (columns by position): each source
    // keeps its own columns until the union's steps are added below
    let sql_text = raw.query.as_ref().and_then(|q| q.sql.clone());
    let parsed = match (&sql_text, front) {
        (Some(text), Some(front)) => Some(front.parse_query(text).map_err(super::sql_query::sql_error)?),
        _ => None,
    };
    let by_position = parsed.as_ref().is_some_and(|q| q.union.is_some()) || (several && sql_text.is_some());
    let stdin_first = source.kind == super::SourceKind::Stdin;
    let mut more_sources =
        union_sources(rest, stdin_first, (!by_position).then_some(&schema), &name, &mut names, front)?;
    let tables = super::table::tables(raw.table.take(), &source_name)?;
    for (t, table) in tables.iter().enumerate() {
        if let Some(j) = names.iter().position(|n| n.eq_ignore_ascii_case(&table.name)) {
            return Err(SpecError::bad_str(
                format!("table[{t}].name"),
                &table.name,
                format!("a name no source has (source[{j}] is {})", quote(&names[j])),
            ));
        }
    }
    // a join of the two sources: each source's records are projected into the join's wide record
    let mut stream_join = None;
    // `FROM (SELECT ... FROM a JOIN b ...) GROUP BY ...`: the join is the subquery's, and the
    // outer query aggregates its rows
    let mut join_outer = None;
    if by_position
        && let Some(q) = &parsed
        && q.union.is_none()
        && let Some((q, outer)) = match &q.subquery {
            Some(inner) if q.join.is_none() && inner.join.is_some() => Some((inner.as_ref(), Some(q))),
            _ => q.join.is_some().then_some((q, None)),
        }
        && let [other] = more_sources.as_mut_slice()
    {
        join_outer = outer.cloned();
        let other_schema = schema_after(&other.steps, &other.source.schema);
        let resolved = super::sql_stream_join::resolve(
            q,
            [
                super::sql_stream_join::JoinSource {
                    name: &source_name,
                    schema: &schema,
                    watermark: watermark.as_ref().map(|w| w.column.as_str()),
                },
                super::sql_stream_join::JoinSource {
                    name: &other.name,
                    schema: &other_schema,
                    watermark: other.watermark.as_ref().map(|w| w.column.as_str()),
                },
            ],
            raw.clock.as_ref().and_then(|c| c.column.as_deref()),
        )?;
        // the replay clock reads the join's clock column, which each source fills with its own
        if let Some(c) = raw.clock.as_mut().and_then(|c| c.column.as_mut()) {
            *c = super::sql_stream_join::JOIN_CLOCK.to_string();
        }
        let [first_steps, other_steps] = resolved.steps.clone();
        let [first_pushed, other_pushed] = resolved.pushed.clone();
        source_steps.extend(first_pushed);
        source_steps.push(first_steps);
        other.steps.extend(other_pushed);
        other.steps.push(other_steps);
        for (w, moved) in [watermark.as_mut(), other.watermark.as_mut()].into_iter().zip(&resolved.watermarks) {
            if let (Some(w), Some((column, index))) = (w, moved) {
                w.column = column.clone();
                w.index = *index;
            }
        }
        schema = resolved.wide.clone();
        stream_join = Some(resolved);
    }
    let mut union_query = None;
    // the sources have watermarks that the union's columns do not carry (no branch selects its
    // source's watermark column as it is): a refusal for want of a watermark says so
    let mut union_drops_watermarks = false;
    // the source whose watermark the query's columns carry (Spark: the union's first child)
    let mut event_time_source = 0;
    if by_position
        && stream_join.is_none()
        && let Some(q) = &parsed
    {
        let Some(union) = &q.union else {
            return Err(super::sql_query::at(
                q.from.pos,
                format!("FROM {}, one of {} sources", q.from.name, names.len()),
                "a query that reads every [[source]]: SELECT ... FROM (SELECT ... FROM a UNION ALL SELECT ... FROM b) [AS] u ..., or SELECT ... FROM a UNION ALL SELECT ... FROM b",
            ));
        };
        let mut srcs = vec![(source_name.clone(), schema.clone())];
        srcs.extend(more_sources.iter().map(|s| (s.name.clone(), schema_after(&s.steps, &s.source.schema))));
        let resolved = super::sql_union::resolve(union, &srcs)?;
        event_time_source = resolved.first;
        // each source's watermark column, where the union selects it as it is
        let moved = |w: &mut WatermarkSpec, i: usize, positions: &[Option<usize>]| match positions
            .get(w.index)
            .copied()
            .flatten()
        {
            Some(p) => {
                w.column = resolved.schema.fields()[p].name.clone();
                w.index = p;
                Ok(())
            }
            None => {
                // the branch reading source `i` (a union reads each source once), else the union
                let name = &srcs[i].0;
                let at = union.branches.iter().find(|b| b.from.name.eq_ignore_ascii_case(name)).map(|b| b.from.pos);
                let (what, pos) = match at {
                    Some(pos) => (format!("the union's branch FROM {name}"), pos),
                    None => ("the query's union".to_string(), union.pos),
                };
                Err(SpecError::bad_str(
                    format!("source[{i}].watermark.column"),
                    &w.column,
                    format!(
                        "a column {what} (query.sql at {}:{}) selects as it is (the watermark is on the union's column at its position)",
                        pos.line, pos.column
                    ),
                ))
            }
        };
        let mut steps = resolved.steps.into_iter();
        source_steps.extend(steps.next().unwrap_or_default());
        // A union that selects no source's watermarked column carries no event time: Spark runs
        // the query over it (without event time: update or complete mode), each watermark
        // bounding nothing. So does Eddy, without the watermarks. One that selects some of them
        // but not all is refused below (Spark's global watermark would still be the minimum of
        // every source's, which the union's records cannot give here).
        let selected = |w: &Option<WatermarkSpec>, i: usize| {
            w.as_ref().is_some_and(|w| resolved.positions[i].get(w.index).copied().flatten().is_some())
        };
        if !selected(&watermark, 0) && !more_sources.iter().enumerate().any(|(i, s)| selected(&s.watermark, i + 1)) {
            union_drops_watermarks = watermark.is_some() || more_sources.iter().any(|s| s.watermark.is_some());
            watermark = None;
            more_sources.iter_mut().for_each(|s| s.watermark = None);
        }
        if let Some(w) = watermark.as_mut() {
            moved(w, 0, &resolved.positions[0])?;
        }
        for (i, (s, more)) in more_sources.iter_mut().zip(steps).enumerate() {
            s.steps.extend(more);
            if let Some(w) = s.watermark.as_mut() {
                moved(w, i + 1, &resolved.positions[i + 1])?;
            }
        }
        schema = resolved.schema;
        union_query = Some((q.clone(), resolved.distinct));
    }
    // a query over several sources: append needs a watermark on the window's column in some
    // source (Spark's union keeps the event-time column's watermark)
    let query_watermark = watermark.clone().or_else(|| more_sources.iter().find_map(|s| s.watermark.clone()));
    let mut query_steps = Vec::new();
    let mut sql_output_steps = Vec::new();
    let query_sql = sql_text;
    let mut join = None;
    let mut then = Vec::new();
    let query = match raw.query {
        Some(raw_query) if let Some(j) = stream_join.take() => {
            if join_outer.is_some() || super::sql_join_aggregate::aggregates(&j).is_some() {
                // each side's watermark delay (the sources' in pipeline order, by side)
                let mut delays = [Duration::ZERO; 2];
                let source_delays = [watermark.as_ref(), more_sources.first().and_then(|s| s.watermark.as_ref())];
                for (src, w) in source_delays.into_iter().enumerate() {
                    delays[j.spec.sides[src]] = w.map_or(Duration::ZERO, |w| w.delay);
                }
                let (steps, chained) = super::sql_join_aggregate::plan_after_join(
                    &j,
                    join_outer.as_ref(),
                    mode,
                    raw_query.output_mode.as_deref(),
                    delays,
                )?;
                sql_output_steps = steps;
                then.push(chained);
            } else {
                super::sql_join_aggregate::check_output_mode(raw_query.output_mode.as_deref())?;
                let q = &j.query;
                let plan = super::sql_query::plan_sql_query(q, &q.from.name, &j.joined, None, &[], None, mode)?;
                // the query's filters and its select list run on the joined rows
                sql_output_steps =
                    plan.source_steps.into_iter().chain(plan.watermarked_steps).chain(plan.output_steps).collect();
            }
            QuerySpec::StreamJoin(j.spec)
        }
        Some(raw_query) if let Some((q, distinct)) = union_query => {
            let trivial = q.selection.is_none()
                && q.group_by.is_empty()
                && q.having.is_none()
                && matches!(q.items.as_slice(), [crate::expr::SelectItemSyntax::Wildcard { .. }]);
            if distinct {
                // UNION (distinct): distinct rows over every column after the union
                if !trivial {
                    let union_pos = q.union.as_ref().map_or(q.from.pos, |u| u.pos);
                    return Err(super::sql_query::at(
                        union_pos,
                        "UNION (distinct) under an outer query",
                        "UNION at the top of the query (a deduplication), or UNION ALL under an outer query",
                    ));
                }
                // as Spark plans a streaming Distinct: an aggregation keyed by every column, without
                // measures, in the query's output mode (update by default: a row again in a later
                // batch is emitted again, as its group is updated; the watermark on a key column
                // evicts the groups below it)
                let group_by: Vec<String> = schema.fields().iter().map(|f| f.name.clone()).collect();
                let output_mode = super::sql_union::distinct_output_mode(
                    raw_query.output_mode.as_deref(),
                    query_watermark.as_ref(),
                    &schema,
                )?;
                QuerySpec::WindowAggregate { group_by, window: None, output_mode, measures: Vec::new() }
            } else {
                let outer = crate::expr::QuerySyntax { union: None, ..q };
                let clock_column: Vec<String> = raw.clock.as_ref().and_then(|c| c.column.clone()).into_iter().collect();
                let plan = super::sql_query::plan_sql_query(
                    &outer,
                    &outer.from.name,
                    &schema,
                    query_watermark.as_ref(),
                    &clock_column,
                    raw_query.output_mode.as_deref(),
                    mode,
                )
                .map_err(|e| if union_drops_watermarks { union_without_watermark(e) } else { e })?;
                // the outer query's steps before the watermark run on every source's records
                for s in &mut more_sources {
                    s.steps.extend(plan.source_steps.iter().cloned());
                }
                schema = schema_after(&plan.source_steps, &schema);
                source_steps.extend(plan.source_steps);
                for w in watermark.iter_mut().chain(more_sources.iter_mut().filter_map(|s| s.watermark.as_mut())) {
                    w.index = schema.resolve(&w.column).unwrap_or(w.index);
                }
                query_steps = plan.watermarked_steps;
                sql_output_steps = plan.output_steps;
                plan.query
            }
        }
        Some(q) if q.sql.is_some() => {
            let (plan, static_join) = {
                let clock_column: Vec<String> = raw.clock.as_ref().and_then(|c| c.column.clone()).into_iter().collect();
                super::sql_query::validate_sql(
                    q,
                    &source_name,
                    &schema,
                    &tables,
                    mode,
                    watermark.as_ref(),
                    &clock_column,
                    front,
                )?
            };
            match static_join {
                // the query's steps run on the joined record
                Some((mut j, pushed)) => {
                    source_steps.extend(pushed);
                    j.steps = plan.source_steps;
                    schema = schema_after(&j.steps, &j.output_schema(&schema));
                    join = Some(j);
                }
                None => {
                    source_steps.extend(plan.source_steps);
                    schema = schema_after(&source_steps, &source.schema);
                }
            }
            // the watermark's column, by name, in the query's projection
            if let Some(w) = watermark.as_mut() {
                w.index = schema.resolve(&w.column).unwrap_or(w.index);
            }
            query_steps = plan.watermarked_steps;
            sql_output_steps = plan.output_steps;
            then = plan.then;
            plan.query
        }
        q => {
            if let Some(t) = tables.first() {
                return Err(SpecError::bad_str(
                    "table[0].name",
                    &t.name,
                    "no [[table]] beside a structured query (a table is read by a SQL query's JOIN)",
                ));
            }
            super::query::query(q, &schema, mode, query_watermark.as_ref(), registry)?
        }
    };
    // an aggregation over several sources in append mode: Spark's union carries only its first
    // child's watermark, and refuses append when that child has none (even if a later one has)
    let carried = match event_time_source {
        0 => watermark.as_ref(),
        k => more_sources.get(k - 1).and_then(|s| s.watermark.as_ref()),
    };
    if !more_sources.is_empty()
        && carried.is_none()
        && let QuerySpec::WindowAggregate { output_mode: super::OutputMode::Append, .. } = &query
    {
        let first =
            if event_time_source == 0 { source_name.clone() } else { more_sources[event_time_source - 1].name.clone() };
        return Err(SpecError::new(
            "query.output_mode",
            format!("\"append\" (the union's first source, {first}, has no watermark)"),
            "a watermark on the first source of the union (a SQL UNION's first branch; Spark's union carries its first child's watermark only, and refuses append without it: STREAMING_OUTPUT_MODE.UNSUPPORTED_OPERATION), or \"update\", \"complete\"",
        ));
    }
    let clock = clock(raw.clock, &schema)?;
    if matches!(clock, ClockSpec::Replay { .. }) {
        let mut texts: Vec<(String, String)> = Vec::new();
        texts.extend(filter.iter().map(|f| ("source.filter".to_string(), f.clone())));
        for (i, item) in select.iter().flatten().enumerate() {
            texts.push((format!("source.select[{i}]"), item.clone()));
        }
        texts.extend(query_sql.iter().map(|q| ("query.sql".to_string(), q.clone())));
        super::exprs::processing_time_at_source(&source_steps, &texts, front)?;
        for s in &more_sources {
            super::exprs::processing_time_at_source(&s.steps, &texts, front)?;
        }
        if let Some(j) = &join {
            // a stream-static join and its steps run on the source actor too
            super::exprs::processing_time_at_source(&j.steps, &texts, front)?;
        }
    }
    let query_input = schema_after(&query_steps, &schema);
    let query_output = schema_after(&sql_output_steps, &super::sql_chain::chained_output(&query, &query_input, &then));
    for (section, sink) in [("late_sink", &raw.late_sink), ("dead_letter", &raw.dead_letter)] {
        if let Some(select) = sink.as_ref().and_then(|s| s.select.as_ref()) {
            return Err(SpecError::new(
                format!("{section}.select"),
                select.show(),
                format!(
                    "no select on [{section}]: it writes {} unchanged (SEMANTICS.md \"Source filters and projections\"); only [sink] takes a select",
                    if section == "late_sink" { "the query's input records" } else { "the dead letters" }
                ),
            ));
        }
    }
    let mut raw_sink = raw.sink;
    // where the output's columns were named: the sink's select, the SQL query, or the structured one
    let columns_from = match raw_sink.as_ref().is_some_and(|s| s.select.is_some()) {
        true => "sink.select",
        false if !sql_output_steps.is_empty() => "query.sql",
        false => "query",
    };
    let mut output_steps = sql_output_steps;
    if let Some(items) = raw_sink.as_mut().and_then(|s| s.select.take()) {
        output_steps.push(super::exprs::select_step("sink.select", &items, &query_output, front)?);
    }
    let output = schema_after(&output_steps, &query_output);
    let output_names: Vec<&str> = output.fields().iter().map(|f| f.name.as_str()).collect();
    let input_names: Vec<&str> = schema.fields().iter().map(|f| f.name.as_str()).collect();
    let sink = match raw_sink {
        Some(s) => super::sink::sink_spec("sink", s, &output_names, "an output column")?,
        None => {
            return Err(SpecError::missing("sink", "a [sink] table with type = \"files\", \"stdout\" or \"kafka\""));
        }
    };
    if let SinkSpec::Kafka { key, .. } = &sink {
        super::sink::kafka_columns(key, &output, columns_from)?;
    }
    let late_sink =
        raw.late_sink.map(|s| super::sink::sink_spec("late_sink", s, &input_names, "an input column")).transpose()?;
    let dead_letter = raw
        .dead_letter
        .map(|s| super::sink::sink_spec("dead_letter", s, &["reason", "source", "record"], "a dead-letter field"))
        .transpose()?;
    super::sink::delta_checks("sink", &sink, Some(&query), output.fields())?;
    if let Some(s) = &late_sink {
        super::sink::delta_checks("late_sink", s, None, schema.fields())?;
    }
    let checkpoint = raw.checkpoint.map(checkpoint).transpose()?;
    let metrics = raw.metrics.map(metrics).transpose()?;
    let pipeline = Pipeline {
        name,
        mode,
        trigger,
        parallelism,
        clock,
        source,
        source_name,
        idle_timeout,
        more_sources,
        watermark_policy,
        event_time_source,
        source_steps,
        written_source_steps,
        tables,
        join,
        watermark,
        query_steps,
        query_sql,
        query,
        then,
        output_steps,
        sink,
        late_sink,
        dead_letter,
        checkpoint,
        metrics,
    };
    super::paths::check_output_folders(&pipeline, None)?;
    Ok(pipeline)
}

pub(super) fn watermark(raw: RawWatermark, schema: &Schema) -> Result<WatermarkSpec, SpecError> {
    let column = raw.column.ok_or_else(|| SpecError::missing("watermark.column", "the TIMESTAMP event-time column"))?;
    let index = timestamp_column("watermark.column", &column, schema)?;
    let delay =
        raw.delay.ok_or_else(|| SpecError::missing("watermark.delay", "a duration >= 0 (e.g. \"10 seconds\")"))?;
    let delay = duration("watermark.delay", &delay, Min::Zero)?;
    Ok(WatermarkSpec { column, index, delay })
}

fn clock(raw: Option<RawClock>, schema: &Schema) -> Result<ClockSpec, SpecError> {
    let Some(raw) = raw else {
        return Ok(ClockSpec::System);
    };
    let kind = match raw.kind.as_deref() {
        None => "system",
        Some(k) => choice("clock.type", k, &["system", "replay"])?,
    };
    let mut present = Present::new();
    note(&mut present, "column", &raw.column);
    note(&mut present, "until", &raw.until);
    if kind == "system" {
        only_fields("clock", "clock type", kind, &present, &["type"])?;
        return Ok(ClockSpec::System);
    }
    let column = raw
        .column
        .ok_or_else(|| SpecError::missing("clock.column", "the TIMESTAMP column that gives processing time"))?;
    let index = timestamp_column("clock.column", &column, schema)?;
    let until = match raw.until {
        None => None,
        Some(v) => {
            let allowed = "a timestamp, RFC 3339 (e.g. \"2024-01-15T12:00:00Z\") or \"YYYY-MM-DD HH:MM:SS\" (UTC)";
            let text = match &v {
                toml::Value::String(s) => s.clone(),
                toml::Value::Datetime(d) => d.to_string(),
                other => return Err(SpecError::new("clock.until", render(other), allowed)),
            };
            Some(parse_timestamp(&text).map_err(|_| SpecError::bad_str("clock.until", &text, allowed))?)
        }
    };
    Ok(ClockSpec::Replay { column, index, until })
}

fn checkpoint(raw: RawCheckpoint) -> Result<CheckpointSpec, SpecError> {
    let path =
        non_empty("checkpoint.path", raw.path, "a folder path (relative to the pipeline file), or s3://bucket/prefix")?;
    super::sink::check_object_store_url("checkpoint.path", &path)?;
    let keep = match raw.keep {
        None => 3,
        Some(k) if k >= 1 => k as usize,
        Some(k) => {
            return Err(SpecError::new("checkpoint.keep", k.to_string(), "an integer >= 1 (default 3)"));
        }
    };
    Ok(CheckpointSpec { path: PathBuf::from(path), keep })
}

fn metrics(raw: RawMetrics) -> Result<MetricsSpec, SpecError> {
    let listen = match raw.listen {
        None => SocketAddr::from(([127, 0, 0, 1], 9464)),
        Some(l) => l.parse().map_err(|_| {
            SpecError::bad_str(
                "metrics.listen",
                &l,
                "a socket address IP:PORT (e.g. \"127.0.0.1:9464\", \"[::1]:9464\")",
            )
        })?,
    };
    Ok(MetricsSpec { listen })
}

/// A refusal for want of a watermark ([`SpecError::given`] ending `(without a [watermark])`) of
/// a query over a union whose sources have watermarks that no branch selects as it is: said so,
/// with what would carry one (any other error as it is).
fn union_without_watermark(e: SpecError) -> SpecError {
    const WITHOUT: &str = "(without a [watermark])";
    if e.field != "query.output_mode" || !e.given.ends_with(WITHOUT) {
        return e;
    }
    SpecError {
        given: e.given.replace(
            WITHOUT,
            "(the union carries no watermark: no branch selects its source's watermark column as it is)",
        ),
        allowed: format!(
            "{}; over several sources the watermark reaches the union's column where each branch selects its source's watermark column as it is (SELECT k, ts FROM a UNION ALL SELECT k, ts FROM b), as Spark's union carries its children's event-time column",
            e.allowed
        ),
        ..e
    }
}
