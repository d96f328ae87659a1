//! `[query]` validation: query types, windows, output modes and measures.

use super::error::{SpecError, list, quote};
use super::model::{RawMeasure, RawQuery, RawWindow};
use super::output::{
    measure_output_type, name_from_literals, output_columns, spark_double_literal,
};
use super::validate::{
    Min, Present, Show, choice, column_list, duration, note, only_fields, timestamp_column,
};
use super::{MeasureSpec, Mode, OutputMode, QuerySpec, SessionGap, WatermarkSpec, WindowSpec};
use crate::schema::{DataType, Schema};
use crate::time::Duration;

const QUERY_TYPES: &[&str] = &["window_aggregate", "rolling_window", "deduplicate"];
const WINDOW_AGGREGATE_FIELDS: &[&str] = &["type", "group_by", "window", "output_mode", "measures"];
const ROLLING_FIELDS: &[&str] = &[
    "type",
    "partition_by",
    "order_by",
    "frontier",
    "measures",
    "output_mode",
];
const DEDUP_FIELDS: &[&str] = &["type", "columns", "within_watermark"];

/// The aggregate functions, lower-case (`percentile_approx` is a synonym of `approx_percentile`).
pub const AGGREGATES: &[&str] = &[
    "count",
    "sum",
    "avg",
    "mean",
    "min",
    "max",
    "stddev",
    "stddev_samp",
    "stddev_pop",
    "variance",
    "var_samp",
    "var_pop",
    "approx_count_distinct",
    "approx_percentile",
    "percentile_approx",
];

/// Spark's HyperLogLog++ precision for a relative standard deviation `rsd`:
/// `p = ceil(2 * log2(1.106 / rsd))` (Spark's `HyperLogLogPlusPlusHelper`). Spark refuses
/// `p < 4` (rsd above about 0.39); Eddy's sketch (Apache DataSketches HLL) takes `4 <= p <= 21`.
pub fn spark_hll_precision(rsd: f64) -> i64 {
    (2.0 * (1.106 / rsd).log2()).ceil() as i64
}

pub(crate) fn query(
    raw: Option<RawQuery>,
    schema: &Schema,
    mode: Mode,
    watermark: Option<&WatermarkSpec>,
) -> Result<QuerySpec, SpecError> {
    let Some(raw) = raw else {
        return Err(SpecError::missing(
            "query",
            "a [query] table with type = \"window_aggregate\", \"rolling_window\" or \"deduplicate\"",
        ));
    };
    let kind = raw.kind.clone().ok_or_else(|| {
        SpecError::missing(
            "query.type",
            "\"window_aggregate\", \"rolling_window\", \"deduplicate\"",
        )
    })?;
    let kind = choice("query.type", &kind, QUERY_TYPES)?;
    let mut present = Present::new();
    note(&mut present, "group_by", &raw.group_by);
    note(
        &mut present,
        "window",
        &raw.window.as_ref().map(|_| "{ ... }".to_string()),
    );
    note(&mut present, "output_mode", &raw.output_mode);
    note(
        &mut present,
        "measures",
        &raw.measures
            .as_ref()
            .map(|m| format!("[{} measures]", m.len())),
    );
    note(&mut present, "partition_by", &raw.partition_by);
    note(&mut present, "order_by", &raw.order_by);
    note(
        &mut present,
        "frontier",
        &raw.frontier.as_ref().map(|_| "{ ... }".to_string()),
    );
    note(&mut present, "columns", &raw.columns);
    note(&mut present, "within_watermark", &raw.within_watermark);
    let allowed = match kind {
        "window_aggregate" => WINDOW_AGGREGATE_FIELDS,
        "rolling_window" => ROLLING_FIELDS,
        _ => DEDUP_FIELDS,
    };
    only_fields("query", "query type", kind, &present, allowed)?;
    let q = match kind {
        "window_aggregate" => window_aggregate(raw, schema, mode, watermark)?,
        "rolling_window" => rolling_window(raw, schema, watermark)?,
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
        Some(m) => match choice("query.output_mode", m, &["append", "update", "complete"])? {
            "append" => OutputMode::Append,
            "update" => OutputMode::Update,
            _ => OutputMode::Complete,
        },
    };
    let given = |m: &str| quote(m);
    match output_mode {
        OutputMode::Complete if mode == Mode::RealTime => {
            return Err(SpecError::new(
                "query.output_mode",
                format!("{} (in real-time mode)", given("complete")),
                "\"append\", \"update\" (complete is micro-batch only)",
            ));
        }
        OutputMode::Update if matches!(window, Some(WindowSpec::Session { .. })) => {
            return Err(SpecError::new(
                "query.output_mode",
                format!("{} (with a session window)", given("update")),
                "\"append\", \"complete\" (Spark rejects update mode for session windows)",
            ));
        }
        OutputMode::Append => {
            let allowed = "\"update\", \"complete\"; \"append\" needs a window and a [watermark] on its column (Spark refuses append for a streaming aggregation without watermark)";
            match (&window, watermark) {
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
                (Some(w), Some(wm)) if wm.column != w.column() => {
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
    Ok(QuerySpec::WindowAggregate {
        group_by,
        window,
        output_mode,
        measures,
    })
}

fn window(raw: RawWindow, schema: &Schema) -> Result<WindowSpec, SpecError> {
    let kind = raw.kind.clone().ok_or_else(|| {
        SpecError::missing(
            "query.window.type",
            "\"tumbling\", \"sliding\", \"session\"",
        )
    })?;
    let kind = choice(
        "query.window.type",
        &kind,
        &["tumbling", "sliding", "session"],
    )?;
    let mut present = Present::new();
    note(&mut present, "column", &raw.column);
    note(&mut present, "size", &raw.size);
    note(&mut present, "slide", &raw.slide);
    note(&mut present, "start", &raw.start);
    note(&mut present, "gap", &raw.gap);
    note(&mut present, "gap_column", &raw.gap_column);
    let allowed: &[&str] = match kind {
        "tumbling" => &["type", "column", "size", "start"],
        "sliding" => &["type", "column", "size", "slide", "start"],
        _ => &["type", "column", "gap", "gap_column"],
    };
    only_fields("query.window", "window type", kind, &present, allowed)?;
    let column = raw.column.ok_or_else(|| {
        SpecError::missing("query.window.column", "the TIMESTAMP event-time column")
    })?;
    timestamp_column("query.window.column", &column, schema)?;
    let size = || -> Result<Duration, SpecError> {
        let s = raw.size.as_deref().ok_or_else(|| {
            SpecError::missing("query.window.size", "a duration > 0 (e.g. \"10 seconds\")")
        })?;
        duration("query.window.size", s, Min::Positive)
    };
    match kind {
        "tumbling" => {
            let size = size()?;
            let start = start(raw.start.as_deref(), size, "size")?;
            Ok(WindowSpec::Tumbling {
                column,
                size,
                start,
            })
        }
        "sliding" => {
            let size = size()?;
            let s = raw.slide.as_deref().ok_or_else(|| {
                SpecError::missing("query.window.slide", "a duration > 0 and <= size")
            })?;
            let slide = duration("query.window.slide", s, Min::Positive)?;
            if slide > size {
                return Err(SpecError::bad_str(
                    "query.window.slide",
                    s,
                    format!(
                        "a duration > 0 and <= the window size ({} µs), as Spark",
                        size.micros()
                    ),
                ));
            }
            let start = start(raw.start.as_deref(), slide, "slide")?;
            Ok(WindowSpec::Sliding {
                column,
                size,
                slide,
                start,
            })
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
                (Some(g), None) => {
                    SessionGap::Fixed(duration("query.window.gap", &g, Min::Positive)?)
                }
                (None, Some(c)) => {
                    let strings: Vec<&str> = schema
                        .fields()
                        .iter()
                        .filter(|f| f.data_type == DataType::String)
                        .map(|f| f.name.as_str())
                        .collect();
                    let allowed = format!(
                        "a STRING column holding durations such as \"10 seconds\": {}",
                        list(&strings)
                    );
                    let i = super::validate::column("query.window.gap_column", &c, schema)
                        .map_err(|_| {
                            SpecError::bad_str("query.window.gap_column", &c, allowed.clone())
                        })?;
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

fn rolling_window(
    raw: RawQuery,
    schema: &Schema,
    watermark: Option<&WatermarkSpec>,
) -> Result<QuerySpec, SpecError> {
    let partition_by = column_list(
        "query.partition_by",
        &raw.partition_by.unwrap_or_default(),
        schema,
    )?;
    let order_by = raw
        .order_by
        .ok_or_else(|| SpecError::missing("query.order_by", "the TIMESTAMP event-time column"))?;
    timestamp_column("query.order_by", &order_by, schema)?;
    if let Some(m) = &raw.output_mode {
        choice("query.output_mode", m, &["update"])?;
    }
    if let Some(wm) = watermark {
        if wm.column != order_by {
            return Err(SpecError::bad_str(
                "watermark.column",
                &wm.column,
                format!("the rolling window's order_by column {}", quote(&order_by)),
            ));
        }
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
    Ok(QuerySpec::RollingWindow {
        partition_by,
        order_by,
        frontier_delay,
        frontier_alias,
        measures,
    })
}

fn deduplicate(
    raw: RawQuery,
    schema: &Schema,
    watermark: Option<&WatermarkSpec>,
) -> Result<QuerySpec, SpecError> {
    let columns = match raw.columns {
        None => schema.fields().iter().map(|f| f.name.clone()).collect(),
        Some(c) if c.is_empty() => {
            return Err(SpecError::new(
                "query.columns",
                "[]",
                format!(
                    "a non-empty list of columns of the schema ({}); omit it for all",
                    schema.names()
                ),
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
    Ok(QuerySpec::Deduplicate {
        columns,
        within_watermark,
    })
}

fn measures(
    raw: Option<Vec<RawMeasure>>,
    schema: &Schema,
    rolling: bool,
) -> Result<Vec<MeasureSpec>, SpecError> {
    let allowed = "a non-empty list of { agg, column?, alias?, ... }";
    let Some(raw) = raw else {
        return Err(SpecError::missing("query.measures", allowed));
    };
    if raw.is_empty() {
        return Err(SpecError::new("query.measures", "[]", allowed));
    }
    raw.into_iter()
        .enumerate()
        .map(|(i, m)| measure(&format!("query.measures[{i}]"), m, schema, rolling))
        .collect()
}

fn measure(
    at: &str,
    raw: RawMeasure,
    schema: &Schema,
    rolling: bool,
) -> Result<MeasureSpec, SpecError> {
    let agg_given = raw
        .agg
        .clone()
        .ok_or_else(|| SpecError::missing(format!("{at}.agg"), list(AGGREGATES)))?;
    let mut agg = agg_given.to_ascii_lowercase();
    if !AGGREGATES.contains(&agg.as_str()) {
        return Err(SpecError::bad_str(
            format!("{at}.agg"),
            &agg_given,
            list(AGGREGATES),
        ));
    }
    if agg == "percentile_approx" {
        agg = "approx_percentile".into();
    }
    let mut present = Present::new();
    note(&mut present, "column", &raw.column);
    note(&mut present, "alias", &raw.alias);
    note(&mut present, "percentage", &raw.percentage);
    note(&mut present, "accuracy", &raw.accuracy);
    note(&mut present, "rsd", &raw.rsd);
    note(&mut present, "over", &raw.over);
    let mut allowed = vec!["agg", "column", "alias"];
    match agg.as_str() {
        "approx_percentile" => allowed.extend(["percentage", "accuracy"]),
        "approx_count_distinct" => allowed.push("rsd"),
        _ => {}
    }
    if rolling {
        allowed.push("over");
    }
    let kind = if raw.over.is_some() && !rolling {
        "window_aggregate"
    } else {
        agg.as_str()
    };
    let what = if raw.over.is_some() && !rolling {
        "query type"
    } else {
        "agg"
    };
    only_fields(at, what, kind, &present, &allowed)?;

    let column = match raw.column.as_deref() {
        None | Some("*") if agg == "count" => None,
        None => {
            return Err(SpecError::missing(
                format!("{at}.column"),
                format!("a column of the schema: {}", schema.names()),
            ));
        }
        Some(c) => Some(c.to_string()),
    };
    let input_type = match &column {
        None => None,
        Some(c) => {
            let i = super::validate::column(&format!("{at}.column"), c, schema)?;
            Some(schema.fields()[i].data_type)
        }
    };
    if let Some(t) = input_type {
        let (ok, what) = match agg.as_str() {
            "count" | "approx_count_distinct" => (true, ""),
            "min" | "max" => (t != DataType::Boolean, "a non-BOOLEAN column"),
            "approx_percentile" => (
                t.is_numeric() || t == DataType::Timestamp,
                "a numeric or TIMESTAMP column",
            ),
            _ => (
                t.is_numeric(),
                "a numeric (INT, BIGINT, FLOAT, DOUBLE) column",
            ),
        };
        if !ok {
            let c = column.as_deref().unwrap_or("");
            let fitting: Vec<&str> = schema
                .fields()
                .iter()
                .filter(|f| match agg.as_str() {
                    "min" | "max" => f.data_type != DataType::Boolean,
                    "approx_percentile" => {
                        f.data_type.is_numeric() || f.data_type == DataType::Timestamp
                    }
                    _ => f.data_type.is_numeric(),
                })
                .map(|f| f.name.as_str())
                .collect();
            return Err(SpecError::new(
                format!("{at}.column"),
                format!("{} (a {t} column, for {agg})", quote(c)),
                format!("{what}: {}", list(&fitting)),
            ));
        }
    }
    let alias = match raw.alias {
        Some(a) if a.is_empty() => {
            return Err(SpecError::bad_str(
                format!("{at}.alias"),
                &a,
                "a non-empty column name",
            ));
        }
        a => a,
    };
    let (percentages, literals, percentage_is_list) = if agg == "approx_percentile" {
        percentages(&format!("{at}.percentage"), raw.percentage.as_ref())?
    } else {
        (Vec::new(), Vec::new(), false)
    };
    let accuracy = match raw.accuracy {
        None => 10_000,
        Some(a) if (1..=i32::MAX as i64).contains(&a) => a as u32,
        Some(a) => {
            return Err(SpecError::new(
                format!("{at}.accuracy"),
                a.to_string(),
                "an integer in (0, 2147483647], as Spark (default 10000)",
            ));
        }
    };
    let rsd = match raw.rsd {
        None => 0.05,
        Some(r) if r.is_finite() && r > 0.0 && (4..=21).contains(&spark_hll_precision(r)) => r,
        Some(r) => {
            return Err(SpecError::new(
                format!("{at}.rsd"),
                r.show(),
                "a relative standard deviation with 0.00077 <= rsd < 0.39 (Spark refuses rsd >= 0.39: HLL++ precision ceil(2*log2(1.106/rsd)) must be >= 4; Eddy's sketch allows precision <= 21); default 0.05",
            ));
        }
    };
    let over = raw
        .over
        .as_deref()
        .map(|o| duration(&format!("{at}.over"), o, Min::Positive))
        .transpose()?;
    let default_name = name_from_literals(
        &agg,
        column.as_deref(),
        &literals,
        percentage_is_list,
        accuracy,
    );
    let output_name = alias.clone().unwrap_or(default_name);
    let output_type = match input_type {
        None => DataType::Long,
        Some(t) => measure_output_type(&agg, t, percentage_is_list).ok_or_else(|| {
            SpecError::new(
                format!("{at}.column"),
                quote(column.as_deref().unwrap_or("")),
                "a column whose type this aggregate accepts",
            )
        })?,
    };
    Ok(MeasureSpec {
        agg,
        column,
        alias,
        percentages,
        percentage_is_list,
        accuracy,
        rsd,
        over,
        output_name,
        output_type,
    })
}

/// `percentage`: a number or a non-empty list of numbers, each in [0, 1]; default 0.5. Returns
/// the values, their Spark literal spellings (a TOML integer stays an integer literal, as the
/// oracle passes it to Spark) and whether it was a list.
fn percentages(
    field: &str,
    v: Option<&toml::Value>,
) -> Result<(Vec<f64>, Vec<String>, bool), SpecError> {
    let allowed = "a number in [0, 1] or a non-empty list of them, as Spark (default 0.5)";
    let one = |field: &str, v: &toml::Value| -> Result<(f64, String), SpecError> {
        let (p, literal) = match v {
            toml::Value::Float(f) => (*f, spark_double_literal(*f)),
            toml::Value::Integer(i) => (*i as f64, i.to_string()),
            other => return Err(SpecError::new(field, other.show(), allowed)),
        };
        if (0.0..=1.0).contains(&p) {
            Ok((p, literal))
        } else {
            Err(SpecError::new(field, v.show(), allowed))
        }
    };
    match v {
        None => Ok((vec![0.5], vec![spark_double_literal(0.5)], false)),
        Some(toml::Value::Array(a)) => {
            if a.is_empty() {
                return Err(SpecError::new(field, "[]", allowed));
            }
            let mut values = Vec::with_capacity(a.len());
            let mut literals = Vec::with_capacity(a.len());
            for (i, x) in a.iter().enumerate() {
                let (p, l) = one(&format!("{field}[{i}]"), x)?;
                values.push(p);
                literals.push(l);
            }
            Ok((values, literals, true))
        }
        Some(x) => {
            let (p, l) = one(field, x)?;
            Ok((vec![p], vec![l], false))
        }
    }
}

/// Refuses two output columns of one name, naming the field that introduced the second.
fn distinct_output_names(q: &QuerySpec, schema: &Schema) -> Result<(), SpecError> {
    let cols = output_columns(q, schema);
    for (i, (name, field)) in cols.iter().enumerate() {
        if let Some((_, first)) = cols[..i].iter().find(|(n, _)| n == name) {
            return Err(SpecError::new(
                field.clone(),
                format!(
                    "output column {} (already the name of {first})",
                    quote(name)
                ),
                "a distinct output column name (set an alias)",
            ));
        }
    }
    Ok(())
}
