//! `eddy explain`: a validated pipeline's plan as text (SQL.md, last paragraph; PIPELINE.md
//! "The command").
//!
//! Each step in the order a record meets it, numbered, with its output columns and types: the
//! source with its decoder and decoded columns, the source's `filter` / `select`, a SQL
//! query's WHERE conjuncts that run before the watermark and its projection of keys and
//! measure inputs, the watermark, a stream-static join with its table and the query's steps
//! after it, the routing by partition key, the WHERE conjuncts on the
//! watermark column, the operator (its key, window, measures and the watermark it uses), HAVING
//! and the select list, the sink's `select` and the sink. The steps are grouped by the thread
//! they run on: today the source steps run on the source actor's thread and everything after
//! the routing runs chained on the partition actor that owns the key (and, in real-time mode at
//! parallelism 1, on the source actor's thread too: the runtime chains the partition actor
//! into the source actor there).
//!
//! Pure: the text depends on the [`Pipeline`] only, so tests compare it with text written by
//! hand.

use std::fmt::Write as _;

use crate::expr::Node;
use crate::schema::Schema;
use crate::spec::{
    ClockSpec, Format, JoinKind, MeasureSpec, Mode, OutputMode, Pipeline, PipelineExpr, QuerySpec, SessionGap,
    SinkSpec, SourceKind, StaticJoinSpec, Step, WindowSpec,
};

/// The plan of `p` as text: a header line (name, mode, parallelism, clock), then the numbered
/// steps under the thread they run on, each followed by an `out:` line with its output columns
/// (`name TYPE, ...`). The last step's columns are the output schema that `eddy validate`
/// prints. Ends with a newline.
pub fn explain(p: &Pipeline) -> String {
    let mut text = Text::default();
    let mode = match p.mode {
        Mode::RealTime => "real-time",
        Mode::MicroBatch => "micro-batch",
    };
    let parallelism = match p.parallelism {
        Some(n) => n.to_string(),
        None => "the number of cores".to_string(),
    };
    let clock = match &p.clock {
        ClockSpec::System => "system".to_string(),
        ClockSpec::Replay { column, .. } => format!("replay on {column}"),
    };
    text.line(0, format!("pipeline {}: {mode}, parallelism {parallelism}, clock {clock}", p.name));

    text.line(0, "on the source actor's thread:".to_string());
    let several = !p.more_sources.is_empty();
    let mut schema = Schema::new(Vec::new());
    let firsts = std::iter::once((p.source_name.as_str(), &p.source, &p.source_steps, &p.watermark, p.idle_timeout));
    let others = p.more_sources.iter().map(|s| (s.name.as_str(), &s.source, &s.steps, &s.watermark, s.idle_timeout));
    for (i, (name, source, steps, watermark, idle)) in firsts.chain(others).enumerate() {
        let named = if several { format!("source[{i}] {name}: ") } else { String::new() };
        text.step(format!("{named}{}", source_line(source)), &source.schema);
        schema = source.schema.clone();
        for step in steps {
            schema = step.output_schema(&schema);
            text.step(format!("{named}{}", step_line(step, Place::BeforeWatermark)), &schema);
        }
        let idle = idle.map(|d| format!(", left out while idle for {}", duration(d))).unwrap_or_default();
        match watermark {
            Some(w) => {
                text.step(format!("{named}watermark on {}, delay {}{idle}", w.column, duration(w.delay)), &schema)
            }
            None => text.step(format!("{named}no watermark"), &schema),
        }
    }
    if several {
        let policy = match p.watermark_policy {
            crate::watermark_union::WatermarkPolicy::Min => "min",
            crate::watermark_union::WatermarkPolicy::Max => "max",
        };
        let watermark = if any_watermark(p) {
            format!("pipeline watermark: the {policy} of the sources' watermarks (watermark_policy = \"{policy}\")")
        } else {
            "no watermark".to_string()
        };
        text.step(
            format!("union of the {} sources' records (polled in turn), {watermark}", p.more_sources.len() + 1),
            &schema,
        );
    }
    if let Some(j) = &p.join {
        schema = j.output_schema(&schema);
        text.step(join_line(p, j), &schema);
        for step in &j.steps {
            schema = step.output_schema(&schema);
            text.step(step_line(step, Place::AfterWatermark), &schema);
        }
    }
    let key = partition_key(&p.query);
    let routing = if key.is_empty() && matches!(p.query, QuerySpec::WindowAggregate { .. }) {
        // the empty key hashes to one key range: every group (one without a window) lives on
        // one partition actor
        "routing: no partition key: every record to one partition actor (an aggregation without key columns)"
            .to_string()
    } else if key.is_empty() {
        "routing: no partition key (the operator keeps no keyed state)".to_string()
    } else {
        format!("routing by partition key ({}) to the partition actor owning its key range", key.join(", "))
    };
    text.step(routing, &schema);

    let chained = p.mode == Mode::RealTime && p.parallelism == Some(1);
    text.line(
        0,
        if chained {
            "chained on the partition actor, which runs on the source actor's thread (real-time, parallelism 1):"
        } else {
            "chained on the partition actor's thread:"
        }
        .to_string(),
    );
    for step in &p.query_steps {
        schema = step.output_schema(&schema);
        text.step(step_line(step, Place::AfterWatermark), &schema);
    }
    let operator_output = crate::spec::chained_output(&p.query, &schema, &[]);
    text.step(operator_line(p), &operator_output);
    let mut schema = operator_output;
    // the operators chained after the first (a forward edge: same thread, one call apart)
    let planned = crate::plan::QueryPlan::new(p).ok();
    let single = planned.as_ref().and_then(|q| q.single_partition());
    let exchange = planned.as_ref().and_then(|q| q.exchange());
    for (n, c) in p.then.iter().enumerate() {
        for (i, step) in c.steps.iter().enumerate() {
            schema = step.output_schema(&schema);
            let place = if i < c.upstream_steps { Place::Output } else { Place::BeforeWatermark };
            text.step(step_line(step, place), &schema);
        }
        schema = crate::spec::chained_output(&c.query, &schema, &[]);
        let edge = match (single.is_some(), exchange == Some(n + 1)) {
            (true, _) => Edge::Single,
            (false, true) => Edge::Exchange(p.mode),
            (false, false) => Edge::Forward,
        };
        text.step(chained_line(c, edge), &schema);
    }
    for step in &p.output_steps {
        schema = step.output_schema(&schema);
        text.step(step_line(step, Place::Output), &schema);
    }
    text.step(format!("sink: {}", sink_line(&p.sink)), &schema);
    if let Some(s) = &p.late_sink {
        text.line(1, format!("late records (decoded columns after the source steps): {}", sink_line(s)));
    }
    if let Some(s) = &p.dead_letter {
        text.line(1, format!("dead letters (reason, source, record): {}", sink_line(s)));
    }
    text.out
}

/// Where a step runs, which names what a `query.sql` step is.
#[derive(Clone, Copy)]
enum Place {
    BeforeWatermark,
    AfterWatermark,
    Output,
}

#[derive(Default)]
struct Text {
    out: String,
    steps: usize,
}

impl Text {
    fn line(&mut self, indent: usize, s: String) {
        // Writing to a String cannot fail.
        let _ = writeln!(self.out, "{:width$}{s}", "", width = indent * 2);
    }

    fn step(&mut self, s: String, out: &Schema) {
        self.steps += 1;
        let n = self.steps;
        self.line(1, format!("{n}. {s}"));
        self.line(2, format!("out: {out}"));
    }
}

fn source_line(source: &crate::spec::SourceSpec) -> String {
    let format = match source.format {
        Format::Json => "json",
        Format::Csv => "csv",
    };
    match &source.kind {
        SourceKind::Files { path, .. } => format!("source: files {}, {format} decoder", path.display()),
        SourceKind::Stdin => format!("source: stdin, {format} decoder"),
        SourceKind::Kafka { topics, bootstrap_servers, .. } => {
            format!("source: kafka {} at {bootstrap_servers}, {format} decoder", topics.join(", "))
        }
        SourceKind::Nexmark { table, .. } => format!("source: nexmark {table:?} rows (generated, no decoder)"),
    }
}

/// The join step: its kind, the table (path, format, refresh, row bound), the keys.
fn join_line(p: &Pipeline, j: &StaticJoinSpec) -> String {
    let kind = match j.kind {
        JoinKind::Inner => "inner",
        JoinKind::LeftOuter => "left outer",
        JoinKind::LeftSemi => "left semi",
        JoinKind::LeftAnti => "left anti",
    };
    let keys: Vec<String> = match p.tables.get(j.table) {
        Some(t) => j
            .keys
            .iter()
            .map(|k| {
                // keys of two types compare as the wider (an implicit cast, invisible in names)
                let cast = |e: &crate::spec::PipelineExpr| matches!(e.typed.node, Node::Cast { implicit: true, .. });
                let compared = match cast(&k.stream) || cast(&k.table) {
                    true => format!(" (compared as {})", k.stream.typed.data_type),
                    false => String::new(),
                };
                match t.schema.resolve(&k.table.name) {
                    // a column: `users.name`; an expression: `lower(code) of users`
                    Some(_) => format!("{} = {}.{}{compared}", k.stream.name, t.name, k.table.name),
                    None => format!("{} = {} of {}{compared}", k.stream.name, k.table.name, t.name),
                }
            })
            .collect(),
        None => Vec::new(),
    };
    let table = match p.tables.get(j.table) {
        Some(t) => {
            let format = match t.format {
                Format::Json => "json",
                Format::Csv => "csv",
            };
            format!(
                "table {} (files {}, {format}, {}, re-read when changed, checked every {}, at most {} bytes)",
                t.name,
                t.path.display(),
                t.schema,
                duration(t.refresh),
                t.max_bytes
            )
        }
        None => "a table".to_string(),
    };
    let condition = match &j.condition {
        Some(c) => format!(", each matching row joined where {}", c.typed.name),
        None => String::new(),
    };
    let filter = match &j.table_filter {
        Some(f) => format!(" (its rows where {})", f.typed.name),
        None => String::new(),
    };
    format!(
        "stream-static {kind} join (broadcast hash join on the source actor) with {table}{filter} on {}{condition}",
        keys.join(" AND ")
    )
}

fn step_line(step: &Step, place: Place) -> String {
    let field = match step {
        Step::Filter(e) => e.field.as_str(),
        Step::Project(items) => items.first().map_or("", |e| e.field.as_str()),
    };
    let from_sql = field == "query.sql";
    match (step, from_sql, place) {
        (Step::Filter(e), true, Place::BeforeWatermark) => {
            format!("WHERE before the watermark (query.sql): {}", e.typed.name)
        }
        (Step::Filter(e), true, Place::AfterWatermark) => {
            format!("WHERE after the watermark (query.sql): {}", e.typed.name)
        }
        (Step::Filter(e), true, Place::Output) => format!("HAVING (query.sql): {}", e.typed.name),
        (Step::Filter(e), false, _) => format!("filter ({}): {}", e.field, e.typed.name),
        (Step::Project(items), true, Place::Output) => format!("select list (query.sql): {}", items_text(items)),
        (Step::Project(items), true, _) => {
            // the planner keeps the source's columns in their places (crate::spec::sql_query)
            let in_place = items
                .iter()
                .enumerate()
                .take_while(|(i, e)| matches!(e.typed.node, Node::Column(c) if c == *i))
                .count();
            match (in_place, &items[in_place..]) {
                (0, _) => format!("keys and measure inputs (query.sql): {}", items_text(items)),
                (_, []) => {
                    "keys and measure inputs (query.sql): the columns as they are (nothing computed)".to_string()
                }
                (n, rest) => {
                    format!("keys and measure inputs (query.sql): the {n} columns in place, then {}", items_text(rest))
                }
            }
        }
        (Step::Project(items), false, _) => {
            let field = field.split('[').next().unwrap_or(field);
            format!("select ({field}): {}", items_text(items))
        }
    }
}

fn items_text(items: &[PipelineExpr]) -> String {
    let texts: Vec<String> = items
        .iter()
        .map(|e| {
            // an implicit cast keeps its operand's name (as in Spark); the plan shows it
            let shown = match &e.typed.node {
                Node::Cast { implicit: true, .. } => format!("CAST({} AS {})", e.typed.name, e.typed.data_type),
                _ => e.typed.name.clone(),
            };
            if shown == e.name { shown } else { format!("{shown} AS {}", e.name) }
        })
        .collect();
    texts.join(", ")
}

/// The operator's partition key: the columns whose values decide the key range.
fn partition_key(q: &QuerySpec) -> Vec<String> {
    match q {
        QuerySpec::WindowAggregate { group_by, .. } => group_by.clone(),
        QuerySpec::RollingWindow { partition_by, .. } => partition_by.clone(),
        QuerySpec::Deduplicate { columns, .. } => columns.clone(),
        QuerySpec::Forward => Vec::new(),
        QuerySpec::Processor(q) => q.partition_by.clone(),
        QuerySpec::StreamJoin(j) => (0..j.keys).map(|k| format!("join key {}", k + 1)).collect(),
    }
}

/// Whether some source of `p` has a watermark (a union selecting no watermarked column has none).
fn any_watermark(p: &Pipeline) -> bool {
    p.watermark.is_some() || p.more_sources.iter().any(|s| s.watermark.is_some())
}

fn operator_line(p: &Pipeline) -> String {
    let key = partition_key(&p.query).join(", ");
    let watermark = match &p.watermark {
        _ if !p.more_sources.is_empty() && any_watermark(p) => "the sources' combined watermark".to_string(),
        Some(w) => format!("watermark max({}) - {}", w.column, duration(w.delay)),
        None => "no watermark".to_string(),
    };
    match &p.query {
        QuerySpec::WindowAggregate { window, output_mode, measures, .. } => {
            let window = match window {
                Some(w) => window_text(w),
                None => "no window".to_string(),
            };
            let mode = mode_text(*output_mode);
            format!(
                "window aggregate: key ({key}), {window}, measures {}, output mode {mode}, {watermark}",
                measures_text(measures)
            )
        }
        QuerySpec::RollingWindow { order_by, frontier_delay, frontier_alias, measures, .. } => format!(
            "rolling window: key ({key}), order by {order_by}, frontier processing time - {} as \
             {frontier_alias}, measures {}",
            duration(*frontier_delay),
            measures_text(measures)
        ),
        QuerySpec::Deduplicate { within_watermark, .. } => {
            let within = if *within_watermark { ", within the watermark" } else { "" };
            format!("deduplicate: key ({key}){within}, {watermark}")
        }
        QuerySpec::Forward => "forward: each record once, no state".to_string(),
        QuerySpec::Processor(q) => format!("processor {}: key ({key}), registered in code, {watermark}", q.name),
        QuerySpec::StreamJoin(j) => {
            let range = match j.range {
                Some(r) => format!("right time - left time in [{}, {}]", duration(r.lower), duration(r.upper)),
                None => "no time range: state is never evicted".to_string(),
            };
            format!("stream-stream join: {:?}, {} key(s), {range}, {watermark}", j.join_type, j.keys)
        }
    }
}

/// The edge into a chained operator, as `eddy explain` shows it.
#[derive(Clone, Copy)]
enum Edge {
    /// Keyed by the key of the operator before: same partition actor, same thread.
    Forward,
    /// Keyed otherwise: re-keyed by hash between partition actors (in this mode).
    Exchange(Mode),
    /// The whole chain runs in one partition actor (a second exchange would be needed).
    Single,
}

/// A chained operator: its kind, key, window and measures, the edge into it, and the watermark
/// it is given.
fn chained_line(c: &crate::spec::ChainedQuery, edge: Edge) -> String {
    let watermark = match c.watermark_delay.0 {
        0 => format!(
            "the watermark forwarded by the operator before, on {} (late input and finalisation)",
            c.watermark.column
        ),
        _ => format!(
            "the watermark forwarded by the join before, held back by {} (its time range plus 1 ms, as Spark's join forwards it), on {} (late input and finalisation)",
            duration(c.watermark_delay),
            c.watermark.column
        ),
    };
    let edge = match edge {
        Edge::Single => {
            "forward edge in one partition actor (keyed otherwise than the operator before, behind an exchange already: a second exchange would be needed, so parallelism 1)"
        }
        Edge::Forward => "forward edge (keyed by the operator before's key: same partition actor)",
        Edge::Exchange(Mode::MicroBatch) => {
            "exchange edge (keyed otherwise than the operator before: its input rows go by the hash of its own key to the partition actor owning it, over bounded channels, aligned at the end of each micro-batch)"
        }
        Edge::Exchange(Mode::RealTime) => {
            "exchange edge (keyed otherwise than the operator before: its input rows go by the hash of its own key to the partition actor owning it as they are emitted, over bounded channels, with each actor's watermark after its rows; barriers aligned)"
        }
    };
    match &c.query {
        QuerySpec::WindowAggregate { group_by, window, measures, output_mode } => {
            let mut window = window.as_ref().map_or_else(|| "no window".to_string(), window_text);
            // after an aggregation the event time is its window, read at its window_time
            if c.watermark_delay.0 == 0 && window.ends_with(&format!(" on {}", c.watermark.column)) {
                window.push_str(" (at its window_time, the end minus 1 µs)");
            }
            format!(
                "chained window aggregate, {edge}: key ({}), {window}, measures {}, output mode {}, {watermark}",
                group_by.join(", "),
                measures_text(measures),
                mode_text(*output_mode)
            )
        }
        _ => format!("chained projection, {edge}: each row once, no state"),
    }
}

/// An output mode as `[query] output_mode` spells it.
fn mode_text(m: OutputMode) -> &'static str {
    match m {
        OutputMode::Append => "append",
        OutputMode::Update => "update",
        OutputMode::Complete => "complete",
    }
}

/// A duration as Spark spells it, `0 seconds` for none.
fn duration(d: crate::time::Duration) -> String {
    if d.0 == 0 { "0 seconds".to_string() } else { d.to_string() }
}

fn window_text(w: &WindowSpec) -> String {
    let start = |s: &crate::time::Duration| if s.0 == 0 { String::new() } else { format!(" starting at +{s}") };
    match w {
        WindowSpec::Tumbling { column, size, start: s } => format!("tumbling window {size} on {column}{}", start(s)),
        WindowSpec::Sliding { column, size, slide, start: s } => {
            format!("sliding window {size} every {slide} on {column}{}", start(s))
        }
        WindowSpec::Session { column, gap } => match gap {
            SessionGap::Fixed(g) => format!("session window gap {g} on {column}"),
            SessionGap::Column(c) => format!("session window gap from {c} on {column}"),
        },
    }
}

fn measures_text(measures: &[MeasureSpec]) -> String {
    if measures.is_empty() {
        // a UNION (distinct): its rows are the distinct keys
        return "none (the distinct keys)".to_string();
    }
    let texts: Vec<String> = measures
        .iter()
        .map(|m| {
            let call = format!("{}({})", m.agg, m.column.as_deref().unwrap_or("*"));
            let over = m.over.map(|o| format!(" over {o}")).unwrap_or_default();
            format!("{call}{over} AS {}", m.output_name)
        })
        .collect();
    texts.join(", ")
}

fn sink_line(s: &SinkSpec) -> String {
    match s {
        SinkSpec::Files { path } => format!("files {}", path.display()),
        SinkSpec::Stdout => "stdout".to_string(),
        SinkSpec::Foreach { name } => format!("foreach writer {name}"),
        SinkSpec::Delta { path, partition_by } if partition_by.is_empty() => format!("delta {}", path.display()),
        SinkSpec::Delta { path, partition_by } => {
            format!("delta {} partitioned by {}", path.display(), partition_by.join(", "))
        }
        SinkSpec::Kafka { topic, bootstrap_servers, key, .. } => {
            let key = if key.is_empty() { String::new() } else { format!(", key ({})", key.join(", ")) };
            format!("kafka {topic} at {bootstrap_servers}{key}")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::parse_pipeline_str;

    #[test]
    fn explain_lists_a_structured_rolling_window_step_by_step_with_its_key_and_threads() {
        let p = parse_pipeline_str(
            r#"
name = "rolling"
parallelism = 2
[source]
type = "stdin"
schema = "user_id STRING, revenue DOUBLE, event_time TIMESTAMP"
[query]
type = "rolling_window"
partition_by = ["user_id"]
order_by = "event_time"
measures = [{ agg = "sum", column = "revenue", over = "1 hour", alias = "r" }, { agg = "count" }]
[sink]
type = "stdout"
"#,
        )
        .unwrap();
        let expected = "\
pipeline rolling: real-time, parallelism 2, clock system
on the source actor's thread:
  1. source: stdin, json decoder
    out: user_id STRING, revenue DOUBLE, event_time TIMESTAMP
  2. no watermark
    out: user_id STRING, revenue DOUBLE, event_time TIMESTAMP
  3. routing by partition key (user_id) to the partition actor owning its key range
    out: user_id STRING, revenue DOUBLE, event_time TIMESTAMP
chained on the partition actor's thread:
  4. rolling window: key (user_id), order by event_time, frontier processing time - 0 seconds as __frontier, measures sum(revenue) over 1 hour AS r, count(*) AS count(1)
    out: user_id STRING, __frontier TIMESTAMP, r DOUBLE, count(1) BIGINT
  5. sink: stdout
    out: user_id STRING, __frontier TIMESTAMP, r DOUBLE, count(1) BIGINT
";
        assert_eq!(explain(&p), expected);
    }

    #[test]
    fn explain_says_the_partition_runs_on_the_source_thread_in_real_time_at_parallelism_one() {
        let p = parse_pipeline_str(
            "name = \"d\"\nparallelism = 1\n[source]\ntype = \"stdin\"\nschema = \"id STRING, ts TIMESTAMP\"\n\
             [watermark]\ncolumn = \"ts\"\ndelay = \"5 seconds\"\n\
             [query]\ntype = \"deduplicate\"\ncolumns = [\"id\"]\nwithin_watermark = true\n[sink]\ntype = \"stdout\"\n",
        )
        .unwrap();
        let text = explain(&p);
        assert!(
            text.contains(
                "chained on the partition actor, which runs on the source actor's thread (real-time, parallelism 1):"
            ),
            "{text}"
        );
        assert!(text.contains("2. watermark on ts, delay 5 seconds"), "{text}");
        assert!(text.contains("deduplicate: key (id), within the watermark, watermark max(ts) - 5 seconds"), "{text}");
    }

    #[test]
    fn explain_shows_each_source_with_its_steps_and_watermark_and_the_policy() {
        let p = parse_pipeline_str(
            "name = \"u\"\nmode = \"micro-batch\"\nwatermark_policy = \"max\"\n\
             [[source]]\nname = \"a\"\ntype = \"files\"\npath = \"in_a\"\nschema = \"k STRING, ts TIMESTAMP\"\n\
             watermark = { column = \"ts\", delay = \"5 seconds\" }\n\
             [[source]]\nname = \"b\"\ntype = \"files\"\npath = \"in_b\"\nschema = \"ts TIMESTAMP, k STRING\"\n\
             idle_timeout = \"30 seconds\"\nwatermark = { column = \"ts\", delay = \"1 second\" }\n\
             [query]\ntype = \"window_aggregate\"\ngroup_by = [\"k\"]\nmeasures = [{ agg = \"count\" }]\n\
             [sink]\ntype = \"stdout\"\n",
        )
        .unwrap();
        let text = explain(&p);
        for line in [
            "1. source[0] a: source: files in_a, json decoder",
            "2. source[0] a: watermark on ts, delay 5 seconds",
            "3. source[1] b: source: files in_b, json decoder",
            "4. source[1] b: select (source): k, ts",
            "5. source[1] b: watermark on ts, delay 1 second, left out while idle for 30 seconds",
            "6. union of the 2 sources' records (polled in turn), pipeline watermark: the max of the sources' watermarks (watermark_policy = \"max\")",
            "the sources' combined watermark",
        ] {
            assert!(text.contains(line), "{line:?} not in:\n{text}");
        }
    }
}
