//! `[query]` validation: query types, windows, output modes and measures.

use super::error::{SpecError, list, quote};
use super::measure::measures;
use super::model::{RawQuery, RawWindow};
use super::output::output_columns;
use super::validate::{Min, Present, choice, column_list, duration, note, only_fields, same_column, timestamp_column};
use super::{Mode, OutputMode, QuerySpec, SessionGap, WatermarkSpec, WindowSpec};
use crate::registry::Registry;
use crate::schema::{DataType, Schema};
use crate::time::Duration;

const QUERY_TYPES: &[&str] = &["window_aggregate", "rolling_window", "deduplicate", "processor"];
const WINDOW_AGGREGATE_FIELDS: &[&str] = &["type", "group_by", "window", "output_mode", "measures"];
const ROLLING_FIELDS: &[&str] = &["type", "partition_by", "order_by", "frontier", "measures", "output_mode"];
const DEDUP_FIELDS: &[&str] = &["type", "columns", "within_watermark"];

/// The fields a query of type `kind` takes; `None` for an unknown type.
pub(crate) fn fields_of(kind: &str) -> Option<&'static [&'static str]> {
    Some(match kind {
        "window_aggregate" => WINDOW_AGGREGATE_FIELDS,
        "rolling_window" => ROLLING_FIELDS,
        "deduplicate" => DEDUP_FIELDS,
        "processor" => super::processor::PROCESSOR_FIELDS,
        _ => return None,
    })
}

/// The fields a window of type `kind` takes; `None` for an unknown type.
pub(crate) fn window_fields_of(kind: &str) -> Option<&'static [&'static str]> {
    Some(match kind {
        "tumbling" => &["type", "column", "size", "start"],
        "sliding" => &["type", "column", "size", "slide", "start"],
        "session" => &["type", "column", "gap", "gap_column"],
        _ => return None,
    })
}

pub(crate) fn query(
    raw: Option<RawQuery>,
    schema: &Schema,
    mode: Mode,
    watermark: Option<&WatermarkSpec>,
    registry: &Registry,
) -> Result<QuerySpec, SpecError> {
    let Some(raw) = raw else {
        return Err(SpecError::missing(
            "query",
            "a [query] table with type = \"window_aggregate\", \"rolling_window\", \"deduplicate\" or \"processor\"",
        ));
    };
    let kind = raw.kind.clone().ok_or_else(|| {
        SpecError::missing("query.type", "\"window_aggregate\", \"rolling_window\", \"deduplicate\", \"processor\"")
    })?;
    let kind = choice("query.type", &kind, QUERY_TYPES)?;
    let mut present = Present::new();
    note(&mut present, "group_by", &raw.group_by);
    note(&mut present, "window", &raw.window.as_ref().map(|_| "{ ... }".to_string()));
    note(&mut present, "output_mode", &raw.output_mode);
    note(&mut present, "measures", &raw.measures.as_ref().map(|m| format!("[{} measures]", m.len())));
    note(&mut present, "partition_by", &raw.partition_by);
    note(&mut present, "order_by", &raw.order_by);
    note(&mut present, "frontier", &raw.frontier.as_ref().map(|_| "{ ... }".to_string()));
    note(&mut present, "columns", &raw.columns);
    note(&mut present, "within_watermark", &raw.within_watermark);
    note(&mut present, "name", &raw.name);
    let allowed = fields_of(kind).unwrap_or(DEDUP_FIELDS);
    only_fields("query", "query type", kind, &present, allowed)?;
    let q = match kind {
        "window_aggregate" => window_aggregate(raw, schema, mode, watermark)?,
        "rolling_window" => rolling_window(raw, schema, watermark)?,
        "processor" => super::processor::processor(raw, schema, registry)?,
        _ => deduplicate(raw, schema, watermark)?,
    };
    distinct_output_names(&q, schema)?;
    Ok(q)
}

fn window_aggregate(
    raw: RawQuery,
    schema: &Schema,
    mode: Mode,
    watermark: Option<&WatermarkSpec>,
) -> Result<QuerySpec, SpecError> {
    let group_by = column_list("query.group_by", &raw.group_by.unwrap_or_default(), schema)?;
    let window = raw.window.map(|w| window(w, schema)).transpose()?;
    let output_mode = match raw.output_mode.as_deref() {
        None => OutputMode::Update,
        Some(m) => match output_mode_choice(m, &["append", "update", "complete"])? {
            "append" => OutputMode::Append,
            "update" => OutputMode::Update,
            _ => OutputMode::Complete,
        },
    };
    let given = |m: &str| quote(m);
    let session = matches!(window, Some(WindowSpec::Session { .. }));
    // a window whose column the watermark is on: append can finish its windows
    let append_possible = matches!((&window, watermark), (Some(w), Some(wm)) if same_column(&wm.column, w.column()));
    match output_mode {
        OutputMode::Complete if mode == Mode::RealTime => {
            return Err(SpecError::new(
                "query.output_mode",
                format!("{} (in real-time mode)", given("complete")),
                "\"append\", \"update\" (complete is micro-batch only)",
            ));
        }
        OutputMode::Update if session => {
            return Err(SpecError::new(
                "query.output_mode",
                format!("{} (with a session window)", given("update")),
                if append_possible {
                    "\"append\", \"complete\" (Spark rejects update mode for session windows)"
                } else {
                    "\"complete\" (Spark rejects update mode for session windows; append needs a [watermark] on the window's column)"
                },
            ));
        }
        OutputMode::Append => {
            let allowed = if session {
                "\"complete\" (Spark rejects update mode for session windows); \"append\" needs a [watermark] on the window's column"
            } else {
                "\"update\", \"complete\"; \"append\" needs a window, or the watermark's column among the group_by columns, and a [watermark] on it (Spark refuses append for a streaming aggregation without watermark)"
            };
            match (&window, watermark) {
                // grouped by the watermark's column: a TIMESTAMP key is final once the watermark
                // reaches it, as Spark evicts a key with `ts <= watermark`; the window of a
                // chained aggregation's upstream once the watermark reaches its end (SQL.md
                // "Chained aggregations")
                (None, Some(wm))
                    if group_by.iter().any(|g| same_column(g, &wm.column))
                        && schema.resolve(&wm.column).is_some_and(|i| {
                            matches!(schema.fields()[i].data_type, DataType::Window | DataType::Timestamp)
                        }) => {}
                (None, _) => {
                    return Err(SpecError::new(
                        "query.output_mode",
                        format!("{} (without a window)", given("append")),
                        allowed,
                    ));
                }
                (Some(_), None) => {
                    return Err(SpecError::new(
                        "query.output_mode",
                        format!("{} (without a [watermark])", given("append")),
                        allowed,
                    ));
                }
                (Some(w), Some(wm)) if !same_column(&wm.column, w.column()) => {
                    return Err(SpecError::new(
                        "query.output_mode",
                        format!(
                            "{} (the watermark is on {}, the window on {})",
                            given("append"),
                            quote(&wm.column),
                            quote(w.column())
                        ),
                        allowed,
                    ));
                }
                _ => {}
            }
        }
        _ => {}
    }
    let measures = measures(raw.measures, schema, false)?;
    Ok(QuerySpec::WindowAggregate { group_by, window, output_mode, measures })
}

fn window(raw: RawWindow, schema: &Schema) -> Result<WindowSpec, SpecError> {
    let kind = raw
        .kind
        .clone()
        .ok_or_else(|| SpecError::missing("query.window.type", "\"tumbling\", \"sliding\", \"session\""))?;
    let kind = choice("query.window.type", &kind, &["tumbling", "sliding", "session"])?;
    let mut present = Present::new();
    note(&mut present, "column", &raw.column);
    note(&mut present, "size", &raw.size);
    note(&mut present, "slide", &raw.slide);
    note(&mut present, "start", &raw.start);
    note(&mut present, "gap", &raw.gap);
    note(&mut present, "gap_column", &raw.gap_column);
    let allowed = window_fields_of(kind).unwrap_or(&["type"]);
    only_fields("query.window", "window type", kind, &present, allowed)?;
    let column =
        raw.column.ok_or_else(|| SpecError::missing("query.window.column", "the TIMESTAMP event-time column"))?;
    // the `window` of an aggregation read by a chained one: windowed again on its window_time
    // (Spark's `window(window, ...)`, SQL.md "Chained aggregations")
    let upstream_window = schema.resolve(&column).is_some_and(|i| schema.fields()[i].data_type == DataType::Window);
    if !upstream_window {
        timestamp_column("query.window.column", &column, schema)?;
    }
    let size = || -> Result<Duration, SpecError> {
        let s = raw
            .size
            .as_deref()
            .ok_or_else(|| SpecError::missing("query.window.size", "a duration > 0 (e.g. \"10 seconds\")"))?;
        duration("query.window.size", s, Min::Positive)
    };
    match kind {
        "tumbling" => {
            let size = size()?;
            let start = start(raw.start.as_deref(), size, "size")?;
            Ok(WindowSpec::Tumbling { column, size, start })
        }
        "sliding" => {
            let size = size()?;
            let s = raw
                .slide
                .as_deref()
                .ok_or_else(|| SpecError::missing("query.window.slide", "a duration > 0 and <= size"))?;
            let slide = duration("query.window.slide", s, Min::Positive)?;
            if slide > size {
                return Err(SpecError::bad_str(
                    "query.window.slide",
                    s,
                    format!("a duration > 0 and <= the window size ({} µs), as Spark", size.micros()),
                ));
            }
            let start = start(raw.start.as_deref(), slide, "slide")?;
            Ok(WindowSpec::Sliding { column, size, slide, start })
        }
        _ => {
            let gap = match (raw.gap, raw.gap_column) {
                (Some(_), Some(c)) => {
                    return Err(SpecError::bad_str(
                        "query.window.gap_column",
                        &c,
                        "either gap or gap_column, not both",
                    ));
                }
                (None, None) => {
                    return Err(SpecError::missing(
                        "query.window.gap",
                        "a duration > 0 (or gap_column = a STRING column of durations)",
                    ));
                }
                (Some(g), None) => SessionGap::Fixed(duration("query.window.gap", &g, Min::Positive)?),
                (None, Some(c)) => {
                    let strings: Vec<&str> = schema
                        .fields()
                        .iter()
                        .filter(|f| f.data_type == DataType::String)
                        .map(|f| f.name.as_str())
                        .collect();
                    let allowed =
                        format!("a STRING column holding durations such as \"10 seconds\": {}", list(&strings));
                    let i = super::validate::column("query.window.gap_column", &c, schema)
                        .map_err(|_| SpecError::bad_str("query.window.gap_column", &c, allowed.clone()))?;
                    let t = schema.fields()[i].data_type;
                    if t != DataType::String {
                        return Err(SpecError::new(
                            "query.window.gap_column",
                            format!("{} (a {t} column)", quote(&c)),
                            allowed,
                        ));
                    }
                    SessionGap::Column(c)
                }
            };
            Ok(WindowSpec::Session { column, gap })
        }
    }
}

/// `start`: a duration, optionally negative, with `|start| < bound` (Spark's rule for
/// `window(..., startTime)`: `abs(start_time) < slide_duration`, checked with pyspark 4.3).
fn start(text: Option<&str>, bound: Duration, bound_name: &str) -> Result<Duration, SpecError> {
    let Some(text) = text else {
        return Ok(Duration::ZERO);
    };
    let (negative, body) = match text.trim().strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text),
    };
    let allowed = format!(
        "a duration, optionally negative, with |start| < the window {bound_name} ({} µs), as Spark",
        bound.micros()
    );
    let d = duration("query.window.start", body, Min::Zero).map_err(|e| SpecError {
        allowed: allowed.clone(),
        given: e.given.replace(&quote(body), &quote(text)),
        ..e
    })?;
    if d >= bound {
        return Err(SpecError::bad_str("query.window.start", text, allowed));
    }
    Ok(if negative { Duration(-d.micros()) } else { d })
}

fn rolling_window(raw: RawQuery, schema: &Schema, watermark: Option<&WatermarkSpec>) -> Result<QuerySpec, SpecError> {
    let partition_by = column_list("query.partition_by", &raw.partition_by.unwrap_or_default(), schema)?;
    let order_by =
        raw.order_by.ok_or_else(|| SpecError::missing("query.order_by", "the TIMESTAMP event-time column"))?;
    timestamp_column("query.order_by", &order_by, schema)?;
    if let Some(m) = &raw.output_mode {
        output_mode_choice(m, &["update"])?;
    }
    if let Some(wm) = watermark.filter(|wm| !same_column(&wm.column, &order_by)) {
        return Err(SpecError::bad_str(
            "watermark.column",
            &wm.column,
            format!("the rolling window's order_by column {}", quote(&order_by)),
        ));
    }
    let (frontier_delay, frontier_alias) = match raw.frontier {
        None => (Duration::ZERO, "__frontier".to_string()),
        Some(f) => {
            let delay = match f.delay.as_deref() {
                None => Duration::ZERO,
                Some(d) => duration("query.frontier.delay", d, Min::Zero)?,
            };
            let alias = match f.alias {
                None => "__frontier".to_string(),
                Some(a) if a.is_empty() => {
                    return Err(SpecError::bad_str(
                        "query.frontier.alias",
                        &a,
                        "a non-empty column name (default \"__frontier\")",
                    ));
                }
                Some(a) => a,
            };
            (delay, alias)
        }
    };
    let measures = measures(raw.measures, schema, true)?;
    Ok(QuerySpec::RollingWindow { partition_by, order_by, frontier_delay, frontier_alias, measures })
}

fn deduplicate(raw: RawQuery, schema: &Schema, watermark: Option<&WatermarkSpec>) -> Result<QuerySpec, SpecError> {
    let columns = match raw.columns {
        None => schema.fields().iter().map(|f| f.name.clone()).collect(),
        Some(c) if c.is_empty() => {
            return Err(SpecError::new(
                "query.columns",
                "[]",
                format!("a non-empty list of columns of the schema ({}); omit it for all", schema.names()),
            ));
        }
        Some(c) => column_list("query.columns", &c, schema)?,
    };
    let within_watermark = raw.within_watermark.unwrap_or(false);
    if within_watermark && watermark.is_none() {
        return Err(SpecError::new(
            "query.within_watermark",
            "true (without a [watermark])",
            "false; true needs a [watermark] (as Spark's dropDuplicatesWithinWatermark)",
        ));
    }
    Ok(QuerySpec::Deduplicate { columns, within_watermark })
}

/// Refuses two output columns of one name, naming the field that introduced the second.
fn distinct_output_names(q: &QuerySpec, schema: &Schema) -> Result<(), SpecError> {
    let cols = output_columns(q, schema);
    for (i, (name, field)) in cols.iter().enumerate() {
        if let Some((_, first)) = cols[..i].iter().find(|(n, _)| same_column(n, name)) {
            return Err(SpecError::new(
                field.clone(),
                format!("output column {} (already the name of {first})", quote(name)),
                "a distinct output column name (set an alias)",
            ));
        }
    }
    Ok(())
}

/// `query.output_mode` read as Spark's `OutputMode` parsing reads `outputMode("...")`: ignoring
/// case (`"Complete"` is complete), so the canonical lower-case choice is returned; an error
/// quotes the value as given.
///
/// # Errors
/// A [`SpecError`] at `query.output_mode` when `given` is none of `choices` in any case.
fn output_mode_choice<'a>(given: &str, choices: &[&'a str]) -> Result<&'a str, SpecError> {
    choice("query.output_mode", &given.to_ascii_lowercase(), choices)
        .map_err(|e| SpecError { given: quote(given), ..e })
}
