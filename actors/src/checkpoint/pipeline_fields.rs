//! The query-relevant fields of a pipeline one by one, each with its value as the pipeline file
//! writes it (`query.measures[1].over` = `"1 hour"`), so a checkpoint refused because the query
//! changed can name the field that changed and both values ([`super::manifest::differences`]).
//!
//! Values are rendered from the validated pipeline, not from the file's text: two spellings of
//! one value (`"60 minutes"`, `"1 hour"`) read the same (`"1 hour"`), and defaults are written
//! out (`query.output_mode` = `"update"` when the file leaves it out).

use eddy_engine::output::write_string;
use eddy_engine::spec::{ClockSpec, MeasureSpec, OutputMode, Pipeline, QuerySpec, SessionGap, WindowSpec};

/// `(field, value)` pairs of `[watermark]`, `[query]` and `[clock]`, field names as in the
/// pipeline file (`watermark.delay`, `query.window.size`, `query.measures[0].agg`,
/// `clock.until`), values in TOML spelling (strings quoted, lists in brackets). A field the
/// pipeline leaves unset (no `[watermark]`, a lifetime measure's `over`) is not listed.
pub fn pipeline_fields(p: &Pipeline) -> Vec<(String, String)> {
    let mut out = Fields(Vec::new());
    if let Some(w) = &p.watermark {
        out.string("watermark.column", &w.column);
        out.string("watermark.delay", &w.delay.to_string());
    }
    match &p.query {
        QuerySpec::WindowAggregate { group_by, window, output_mode, measures } => {
            out.string("query.type", "window_aggregate");
            out.list("query.group_by", group_by);
            if let Some(w) = window {
                window_fields(&mut out, w);
            }
            let mode = match output_mode {
                OutputMode::Append => "append",
                OutputMode::Update => "update",
                OutputMode::Complete => "complete",
            };
            out.string("query.output_mode", mode);
            measure_fields(&mut out, measures);
        }
        QuerySpec::RollingWindow { partition_by, order_by, frontier_delay, frontier_alias, measures } => {
            out.string("query.type", "rolling_window");
            out.list("query.partition_by", partition_by);
            out.string("query.order_by", order_by);
            out.string("query.frontier.delay", &frontier_delay.to_string());
            out.string("query.frontier.alias", frontier_alias);
            measure_fields(&mut out, measures);
        }
        QuerySpec::Deduplicate { columns, within_watermark } => {
            out.string("query.type", "deduplicate");
            out.list("query.columns", columns);
            out.raw("query.within_watermark", within_watermark.to_string());
        }
        QuerySpec::Forward => out.string("query.type", "forward"),
        QuerySpec::Processor(q) => {
            out.string("query.type", "processor");
            out.string("query.name", &q.name);
            out.list("query.partition_by", &q.partition_by);
        }
        QuerySpec::StreamJoin(j) => {
            out.string("query.type", "stream_join");
            out.string("query.join_type", &format!("{:?}", j.join_type));
        }
    }
    if let Some(sql) = &p.query_sql {
        out.string("query.sql", sql);
    }
    match &p.clock {
        ClockSpec::System => out.string("clock.type", "system"),
        ClockSpec::Replay { column, until, .. } => {
            out.string("clock.type", "replay");
            out.string("clock.column", column);
            if let Some(t) = until {
                out.string("clock.until", &t.to_string());
            }
        }
    }
    out.0
}

/// The fields being collected.
struct Fields(Vec<(String, String)>);

impl Fields {
    fn raw(&mut self, field: impl Into<String>, value: String) {
        self.0.push((field.into(), value));
    }

    fn string(&mut self, field: impl Into<String>, value: &str) {
        let mut s = String::new();
        write_string(&mut s, value);
        self.raw(field, s);
    }

    fn list(&mut self, field: &str, values: &[String]) {
        let quoted: Vec<String> = values
            .iter()
            .map(|v| {
                let mut s = String::new();
                write_string(&mut s, v);
                s
            })
            .collect();
        self.raw(field, format!("[{}]", quoted.join(", ")));
    }
}

fn window_fields(out: &mut Fields, w: &WindowSpec) {
    match w {
        WindowSpec::Tumbling { column, size, start } => {
            out.string("query.window.type", "tumbling");
            out.string("query.window.column", column);
            out.string("query.window.size", &size.to_string());
            out.string("query.window.start", &start.to_string());
        }
        WindowSpec::Sliding { column, size, slide, start } => {
            out.string("query.window.type", "sliding");
            out.string("query.window.column", column);
            out.string("query.window.size", &size.to_string());
            out.string("query.window.slide", &slide.to_string());
            out.string("query.window.start", &start.to_string());
        }
        WindowSpec::Session { column, gap } => {
            out.string("query.window.type", "session");
            out.string("query.window.column", column);
            match gap {
                SessionGap::Fixed(d) => out.string("query.window.gap", &d.to_string()),
                SessionGap::Column(c) => out.string("query.window.gap_column", c),
            }
        }
    }
}

fn measure_fields(out: &mut Fields, measures: &[MeasureSpec]) {
    for (i, m) in measures.iter().enumerate() {
        let at = |name: &str| format!("query.measures[{i}].{name}");
        out.string(at("agg"), &m.agg);
        out.string(at("column"), m.column.as_deref().unwrap_or("*"));
        if let Some(alias) = &m.alias {
            out.string(at("alias"), alias);
        }
        if m.agg == "approx_percentile" {
            let p: Vec<String> = m.percentages.iter().map(f64::to_string).collect();
            let p = if m.percentage_is_list { format!("[{}]", p.join(", ")) } else { p.join(", ") };
            out.raw(at("percentage"), p);
            out.raw(at("accuracy"), m.accuracy.to_string());
        }
        if m.agg == "approx_count_distinct" {
            out.raw(at("rsd"), m.rsd.to_string());
        }
        if let Some(over) = m.over {
            out.string(at("over"), &over.to_string());
        }
    }
}
