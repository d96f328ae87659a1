//! `[query] sql`: a single-source SQL query (SQL.md "Queries") bound against the source's
//! schema and planned onto the existing operators (DESIGN.md "The operator graph").
//!
//! The plan, in the order a record meets it:
//!
//! 1. `source_steps`, before the watermark: the WHERE conjuncts that do not mention the
//!    watermark column (so a record they drop moves no watermark, as Spark's optimizer pushes
//!    such predicates below `EventTimeWatermark`), then, for an aggregation, one projection
//!    computing the group keys and the measure inputs and keeping the window's, the
//!    watermark's and the later conjuncts' columns under their own names;
//! 2. `watermarked_steps`, after the watermark and before the operator: the WHERE conjuncts
//!    that mention the watermark column or call `current_timestamp()`;
//! 3. the operator: the structured [`QuerySpec::WindowAggregate`] over the projection (group
//!    keys named by Spark's name of their expression, measures by Spark's name of their call),
//!    or [`QuerySpec::Forward`]: a query without aggregation emits each record once;
//! 4. `output_steps`, on each output row: HAVING as a filter, then the select list as a
//!    projection with Spark's output names (`count(1)` for `count(*)`, `sum(amount)`,
//!    `(sum(a) / count(1))`, `window`, aliases).
//!
//! Matching the select list and HAVING against GROUP BY follows Spark's analyzer: an
//! expression equal to a group expression (names ignoring case) is that key; an aggregate call
//! is its measure; any other column reference outside an aggregate is refused
//! (`MISSING_AGGREGATION`). GROUP BY takes expressions, 1-based positions in the select list
//! (`spark.sql.groupByOrdinal`) and select aliases (`spark.sql.groupByAliases`), both on by
//! default in Spark. A select item may read the alias of an earlier item (a lateral column
//! alias, `sql_lateral`), replaced by that item's expression before anything else.

use std::fmt::Display;

use super::error::{SpecError, quote};
use super::model::{RawMeasure, RawQuery, RawWindow};
use super::output::output_schema;
use super::query::query as structured_query;
use super::steps::{PipelineExpr, Step, schema_after};
use super::validate::same_column;
use super::{Mode, QuerySpec, WatermarkSpec};
use crate::expr::{
    BinaryOp, ExprError, GroupItemSyntax, Literal, Pos, QuerySyntax, SelectItemSyntax, Syntax, SyntaxKind, bind,
    first_unsupported_aggregate,
};
use crate::schema::{DataType, Field, Schema};

/// No processor: a SQL query plans onto Eddy's own operators (its user aggregates and UDFs are
/// those validation installed, `expr::with_user_functions`).
static NONE: crate::registry::Registry = crate::registry::Registry::new();

/// The pipeline field every error of a SQL query names.
pub(super) const FIELD: &str = "query.sql";

/// A SQL query planned onto the operators (see the module documentation for the order).
#[derive(Debug, Clone, PartialEq)]
pub struct SqlQueryPlan {
    /// Steps on each decoded record, before the watermark.
    pub source_steps: Vec<Step>,
    /// Steps after the watermark, before the operator (WHERE conjuncts on the watermark column).
    pub watermarked_steps: Vec<Step>,
    /// The operator: a window aggregate, or [`QuerySpec::Forward`] for a query without
    /// aggregation (each record that passes the steps is one output row).
    pub query: QuerySpec,
    /// Steps on each output row of the operator (of the last chained one, if any): HAVING,
    /// then the select list.
    pub output_steps: Vec<Step>,
    /// Queries chained after [`SqlQueryPlan::query`] (an aggregation over an aggregating
    /// subquery: SQL.md, subqueries); empty otherwise.
    pub then: Vec<super::ChainedQuery>,
    /// The operator's event-time column when it is not the watermark's column given to
    /// [`plan_sql_query`]: a `GROUP BY window_time(window)` key over a chained aggregation's
    /// window (its name in the operator's input), to which Spark's `ResolveWindowTime` carries
    /// the window's watermark; `None` otherwise.
    pub event_time: Option<String>,
}

impl SqlQueryPlan {
    /// The schema the operator reads (after `source_steps` and `watermarked_steps`), given the
    /// source's.
    pub fn operator_input(&self, source: &Schema) -> Schema {
        let s = schema_after(&self.source_steps, source);
        schema_after(&self.watermarked_steps, &s)
    }

    /// The output columns, in order (after `output_steps`), given the source's schema.
    pub fn output_schema(&self, source: &Schema) -> Schema {
        let input = self.operator_input(source);
        let out = super::sql_chain::chained_output(&self.query, &input, &self.then);
        schema_after(&self.output_steps, &out)
    }
}

/// Binds and plans `q` over the source `source_name` (names ignoring case) of schema `schema`.
/// `kept`: source columns that the aggregation's projection keeps beside the watermark's (the
/// replay clock's column: `[clock] column`).
/// `output_mode` is `[query] output_mode` as written (default update), checked as for the
/// structured window aggregate (append needs the watermark on the window's column; update is
/// refused for session windows; complete is micro-batch only).
///
/// # Errors
/// A [`SpecError`] at `query.sql` whose `given` names the construct and its line:column in the
/// SQL text: a FROM that names another source, an aggregate function of Spark's that Eddy does
/// not run (named, with the supported ones), an unknown column, a type error, a column
/// neither grouped nor aggregated, an aggregate or a window call in WHERE, an aggregate in GROUP
/// BY, nested aggregates, a window whose time argument is not a column, a GROUP BY position out
/// of range, two output columns of one name (ignoring case), a lateral column alias that two
/// earlier items define, that stands inside an aggregate call or that GROUP BY names through an
/// alias or a position; at
/// `query.output_mode` for a mode the query cannot run in.
pub fn plan_sql_query(
    q: &QuerySyntax,
    source_name: &str,
    schema: &Schema,
    watermark: Option<&WatermarkSpec>,
    kept: &[String],
    output_mode: Option<&str>,
    mode: Mode,
) -> Result<SqlQueryPlan, SpecError> {
    if !q.from.name.eq_ignore_ascii_case(source_name) {
        return Err(at(q.from.pos, format!("FROM {}", q.from.name), format!("FROM {source_name} (the source's name)")));
    }
    let qualifier = q.from.alias.clone().unwrap_or_else(|| q.from.name.clone());
    let unqualify = |s: &Syntax| unqualified(s, &qualifier);
    let items = expand_items(q, schema, &qualifier)?;
    let items = super::sql_lateral::resolve(items, schema, &qualifier)?;
    let items: Vec<Item> = items.into_iter().map(|i| Item { syntax: unqualify(&i.syntax), ..i }).collect();
    let selection = q.selection.as_ref().map(unqualify);
    let having = q.having.as_ref().map(unqualify);
    // before grouping: a column inside an unsupported aggregate is not "neither grouped nor aggregated"
    let grouped = q.group_by.iter().filter_map(|g| match g {
        GroupItemSyntax::Expr(e) => Some(e),
        GroupItemSyntax::Ordinal { .. } => None,
    });
    let written_exprs = items.iter().map(|i| &i.syntax).chain(&selection).chain(&having).chain(grouped);
    if let Some(e) = written_exprs.into_iter().find_map(first_unsupported_aggregate) {
        return Err(sql_error(e));
    }
    if let Some(call) = selection.as_ref().and_then(first_window_call) {
        return Err(at(
            call.pos,
            format!("{} in WHERE", written(call)),
            "window(...) and session_window(...) in GROUP BY (then selected or filtered in HAVING), as Spark",
        ));
    }
    if let Some(agg) = selection.as_ref().and_then(first_aggregate) {
        return Err(at(
            agg.pos,
            format!("the aggregate {} in WHERE", written(agg)),
            "WHERE without aggregates (filter on an aggregate with HAVING), as Spark",
        ));
    }
    let group = group_keys(q, &items, schema, &unqualify)?;
    let having = having.map(|h| having_aliases(&h, &items, &group));
    let aggregated = !group.is_empty()
        || items.iter().any(|i| first_aggregate(&i.syntax).is_some())
        || having.as_ref().is_some_and(|h| first_aggregate(h).is_some());
    let wm = watermark.map(|w| w.column.as_str());
    let (before, after): (Vec<Syntax>, Vec<Syntax>) =
        selection.map(conjuncts).unwrap_or_default().into_iter().partition(|c| !runs_after_watermark(c, wm));
    let mut source_steps = before.iter().map(|c| filter(c, schema)).collect::<Result<Vec<_>, _>>()?;
    if !aggregated {
        if let Some(h) = &having {
            return Err(at(h.pos, "HAVING without GROUP BY or aggregates", "HAVING in an aggregation (use WHERE)"));
        }
        check_forward_output_mode(output_mode)?;
        let watermarked_steps = after.iter().map(|c| filter(c, schema)).collect::<Result<Vec<_>, _>>()?;
        let project: Vec<PipelineExpr> =
            items.iter().map(|i| project(&i.syntax, i.alias.as_deref(), schema)).collect::<Result<_, _>>()?;
        distinct_output_names(&items, &project)?;
        return Ok(SqlQueryPlan {
            source_steps,
            watermarked_steps,
            query: QuerySpec::Forward,
            output_steps: vec![Step::Project(project)],
            then: Vec::new(),
            event_time: None,
        });
    }
    let (projection, watermarked_steps, query, output_steps, event_time) = Aggregation::plan(Aggregation {
        schema,
        items: &items,
        group,
        having,
        after,
        watermark,
        kept,
        output_mode,
        mode,
    })?;
    if let Some(Step::Project(list)) = output_steps.last() {
        distinct_output_names(&items, list)?;
    }
    source_steps.push(Step::Project(projection));
    Ok(SqlQueryPlan { source_steps, watermarked_steps, query, output_steps, then: Vec::new(), event_time })
}

/// `[query] output_mode` of a query without aggregation, read ignoring case as for an
/// aggregation: `append` or `update` (each row is emitted once either way, as Spark); `complete`
/// is refused as Spark refuses it without a streaming aggregation, and any other value as no
/// output mode.
///
/// # Errors
/// At `query.output_mode`.
fn check_forward_output_mode(output_mode: Option<&str>) -> Result<(), SpecError> {
    match output_mode.map(str::to_ascii_lowercase).as_deref() {
        None | Some("append" | "update") => Ok(()),
        Some("complete") => Err(SpecError::new(
            "query.output_mode",
            format!("{} (a query without aggregation)", quote(output_mode.unwrap_or_default())),
            "\"append\", \"update\" (Spark refuses complete mode without a streaming aggregation)",
        )),
        Some(_) => Err(SpecError::new(
            "query.output_mode",
            quote(output_mode.unwrap_or_default()),
            "\"append\", \"update\", \"complete\" (complete with an aggregation)",
        )),
    }
}

/// Refuses two output columns of one name (ignoring case), naming both with their positions:
/// Spark would give two columns of one name, which no sink can write (SQL.md "Joins").
/// `list` is the select list's projection, one expression per item of `items`.
fn distinct_output_names(items: &[Item], list: &[PipelineExpr]) -> Result<(), SpecError> {
    for (i, e) in list.iter().enumerate() {
        if let Some(j) = list[..i].iter().position(|o| same_column(&o.name, &e.name)) {
            return Err(at(
                items[i].syntax.pos,
                format!(
                    "a second output column {} (select item {}; item {} at {} has that name)",
                    quote(&e.name),
                    i + 1,
                    j + 1,
                    items[j].syntax.pos
                ),
                "distinct output column names, ignoring case (rename one with AS)",
            ));
        }
    }
    Ok(())
}

/// A select item with `*` expanded.
pub(super) struct Item {
    pub(super) syntax: Syntax,
    pub(super) alias: Option<String>,
}

/// A GROUP BY key.
enum Key {
    /// An expression over the source's columns.
    Expr(Syntax),
    /// `window(...)` or `session_window(...)`: the call as written.
    Window(Syntax),
}

struct Aggregation<'a> {
    schema: &'a Schema,
    items: &'a [Item],
    group: Vec<Key>,
    having: Option<Syntax>,
    after: Vec<Syntax>,
    watermark: Option<&'a WatermarkSpec>,
    kept: &'a [String],
    output_mode: Option<&'a str>,
    mode: Mode,
}

/// One measure: its call (normalized, to find it again) and Spark's name of it.
struct Measure {
    call: Syntax,
    raw: RawMeasure,
    pos: Pos,
    /// Spark's name of the measure where its column is named otherwise (`first(x)` for the
    /// column `first(x)#2` of `first(x, true)` beside `first(x)`): an unaliased select item of
    /// it is named so.
    spark_name: Option<String>,
}

/// The operator's projection, the steps after the watermark, the operator, its output steps,
/// and its event-time key if it is not the watermark's column ([`SqlQueryPlan::event_time`]).
type Planned = (Vec<PipelineExpr>, Vec<Step>, QuerySpec, Vec<Step>, Option<String>);

impl Aggregation<'_> {
    fn plan(self) -> Result<Planned, SpecError> {
        let schema = self.schema;
        // the projection the operator reads: (name, expression) pairs, names distinct ignoring case
        let mut projection: Vec<(String, Syntax)> = Vec::new();
        // a source column kept under its own name (one the schema lacks is left to validation)
        let keep = |name: &str, projection: &mut Vec<(String, Syntax)>| {
            if let Some(i) = schema.resolve(name)
                && !projection.iter().any(|(n, _)| same_column(n, name))
            {
                let spelled = schema.fields()[i].name.clone();
                projection.push((spelled.clone(), column(&spelled, Pos::default())));
            }
        };
        let mut window: Option<(RawWindow, &Syntax, bool)> = None;
        let mut key_names: Vec<(String, &Syntax)> = Vec::new();
        for key in &self.group {
            match key {
                Key::Window(call) => {
                    if let Some((_, first, _)) = &window {
                        return Err(at(
                            call.pos,
                            format!("a second window {} (after {})", written(call), written(first)),
                            "one window(...) or session_window(...) in GROUP BY, as Spark",
                        ));
                    }
                    let (mut raw, session, computed_gap, computed_time) = window_of(call, schema)?;
                    match computed_time {
                        Some(time) => {
                            let spark = bind(&time, schema).map_err(sql_error)?.name;
                            raw.column = Some(computed_column(&mut projection, schema, &spark, &time));
                        }
                        None => keep(raw.column.as_deref().unwrap_or(""), &mut projection),
                    }
                    match computed_gap {
                        Some((name, gap)) if !projection.iter().any(|(n, _)| same_column(n, &name)) => {
                            projection.push((name, gap));
                        }
                        Some(_) => {}
                        None => {
                            if let Some(g) = &raw.gap_column {
                                keep(g, &mut projection);
                            }
                        }
                    }
                    window = Some((raw, call, session));
                }
                Key::Expr(e) => {
                    let typed = bind(e, schema).map_err(sql_error)?;
                    let name = match &e.kind {
                        // (a struct's field, `st.b`, is a computed key)
                        SyntaxKind::Column(parts) if parts.len() == 1 => {
                            keep(&parts[0], &mut projection);
                            projection.iter().find(|(n, _)| same_column(n, &parts[0])).map(|(n, _)| n.clone())
                        }
                        _ => None,
                    };
                    let name = match name {
                        Some(name) => name,
                        None => computed_column(&mut projection, schema, &typed.name, e),
                    };
                    if !key_names.iter().any(|(n, _)| same_column(n, &name)) {
                        key_names.push((name, e));
                    }
                }
            }
        }
        if let Some(w) = self.watermark {
            keep(&w.column, &mut projection);
        }
        // grouped by window_time(window) of a chained aggregation's window, without a window of
        // its own: that key is the event time (Spark's ResolveWindowTime gives it the window's
        // watermark), final once the watermark reaches it, as any TIMESTAMP event-time key
        let event_time = match (&window, self.watermark) {
            (None, Some(wm)) if !key_names.iter().any(|(n, _)| same_column(n, &wm.column)) => key_names
                .iter()
                .find(|(_, e)| window_time_of_window(e, schema).is_some_and(|c| same_column(&c, &wm.column)))
                .map(|(n, _)| WatermarkSpec { column: n.clone(), ..wm.clone() }),
            _ => None,
        };
        for c in self.kept {
            keep(c, &mut projection);
        }
        for c in &self.after {
            for name in columns_of(c) {
                if schema.resolve(&name).is_some() {
                    keep(&name, &mut projection);
                }
            }
        }
        // measures: every aggregate call of the select list and HAVING, once each
        let mut measures: Vec<Measure> = Vec::new();
        let exprs = self.items.iter().map(|i| &i.syntax).chain(self.having.as_ref());
        for e in exprs {
            collect_measures(e, schema, &mut measures, &mut projection)?;
        }
        let hidden_count = measures.is_empty();
        if hidden_count {
            // GROUP BY without aggregates (distinct keys): the operator needs one measure
            measures.push(Measure {
                call: Syntax { kind: SyntaxKind::Literal(Literal::Null), pos: Pos::default() },
                raw: RawMeasure { agg: Some("count".into()), alias: Some("__rows".into()), ..RawMeasure::default() },
                pos: Pos::default(),
                spark_name: None,
            });
        }
        let projection = in_source_order(projection, schema);
        let projected: Vec<PipelineExpr> =
            projection.iter().map(|(name, e)| expr(e, Some(name), schema)).collect::<Result<_, _>>()?;
        let p_schema = Schema::new(
            projected.iter().map(|e| Field { name: e.name.clone(), data_type: e.typed.data_type }).collect(),
        );
        let watermarked = self.after.iter().map(|c| filter(c, &p_schema)).collect::<Result<Vec<_>, _>>()?;
        let raw = RawQuery {
            kind: Some("window_aggregate".into()),
            group_by: Some(key_names.iter().map(|(n, _)| n.clone()).collect()),
            window: window.as_ref().map(|(w, _, _)| w.clone()),
            output_mode: self.output_mode.map(str::to_string),
            measures: Some(measures.iter().map(|m| m.raw.clone()).collect()),
            ..RawQuery::default()
        };
        // the select list and HAVING against GROUP BY first, as Spark's analyzer comes before
        // its output mode checks: `SELECT window(ts, ...) ... GROUP BY id` in append mode is a
        // select item not in GROUP BY, not an append without a window (the measures' names are
        // not known yet and play no part in these checks)
        let check = Rewrite {
            keys: &key_names,
            window: window.as_ref().map(|(_, call, session)| (*call, *session)),
            measures: measures.iter().map(|m| (&m.call, "")).collect(),
            schema,
            written: Default::default(),
        };
        for e in self.items.iter().map(|i| &i.syntax).chain(self.having.as_ref()) {
            check.apply(e)?;
        }
        let first_pos = measures.first().map_or(Pos::default(), |m| m.pos);
        let watermark = event_time.as_ref().or(self.watermark);
        let query = structured_query(Some(raw), &p_schema, self.mode, watermark, &NONE).map_err(|e| {
            if e.field == "query.output_mode" {
                return e;
            }
            let pos = match e.field.strip_prefix("query.measures[").and_then(|r| r.split(']').next()) {
                Some(i) => i.parse::<usize>().ok().and_then(|i| measures.get(i)).map_or(first_pos, |m| m.pos),
                None => window.as_ref().map_or(first_pos, |(_, call, _)| window_argument_pos(call, &e.field)),
            };
            SpecError::new(FIELD, format!("{} at {pos}", e.given), e.allowed)
        })?;
        let QuerySpec::WindowAggregate { measures: specs, .. } = &query else {
            unreachable!("a window_aggregate RawQuery validates into a WindowAggregate")
        };
        let out_schema = Schema::new(output_schema(&query, &p_schema));
        let rewrite = Rewrite {
            keys: &key_names,
            window: window.as_ref().map(|(_, call, session)| (*call, *session)),
            measures: measures.iter().zip(specs).map(|(m, s)| (&m.call, s.output_name.as_str())).collect(),
            schema,
            written: Default::default(),
        };
        let mut output_steps = Vec::new();
        if let Some(h) = &self.having {
            let h = rewrite.apply(h)?;
            output_steps.push(filter(&h, &out_schema)?);
        }
        let renamed = renamed_columns(&projection, schema);
        let mut renamed_measures: Vec<(String, String)> = measures
            .iter()
            .zip(specs)
            .filter_map(|(m, s)| m.spark_name.clone().map(|spark| (s.output_name.clone(), spark)))
            .collect();
        renamed_measures.sort_by_key(|(name, _)| std::cmp::Reverse(name.len()));
        let mut list = Vec::with_capacity(self.items.len());
        for item in self.items {
            rewrite.written.borrow_mut().clear();
            let e = rewrite.apply(&item.syntax)?;
            let alias = item
                .alias
                .clone()
                .or_else(|| rewrite.window_name(&item.syntax))
                .or_else(|| rewrite.key_name(&item.syntax));
            let mut projected = project(&e, alias.as_deref(), &out_schema)?;
            if alias.is_none() {
                if cast_of_aggregate(&item.syntax) {
                    // the aggregate is a column of the rows here, but for Spark the cast's
                    // operand is no named column: it keeps its own name (`ResolveAliases`)
                    projected.name = projected.typed.name.clone();
                }
                let mut written = rewrite.written.take();
                written.sort_by_key(|(name, _)| std::cmp::Reverse(name.len()));
                projected.name = spark_named(&spark_named(&projected.name, &written), &renamed);
                projected.name = spark_named(&projected.name, &renamed_measures);
            }
            list.push(projected);
        }
        output_steps.push(Step::Project(list));
        Ok((projected, watermarked, query, output_steps, event_time.map(|w| w.column)))
    }
}

/// The projection's column that holds the computed expression `e` (not a source column read
/// as itself) for the operator, which finds its columns by name: the column already computing
/// `e`, else a new one named `spark_name` (Spark's name of `e` inside another expression: its
/// `Typed::name`, `CAST(d AS INT)`) or, where a source column or another expression has that
/// name, `spark_name#2` (`#3`, ...). Not its name selected alone (`Typed::output_name`, `d`):
/// a GROUP BY key under that name stood in for the source's `d` in `sum(d)`.
fn computed_column(projection: &mut Vec<(String, Syntax)>, schema: &Schema, spark_name: &str, e: &Syntax) -> String {
    let n = e.normalized();
    if let Some((name, _)) = projection.iter().find(|(_, x)| x.normalized() == n) {
        return name.clone();
    }
    let taken = |c: &str| schema.resolve(c).is_some() || projection.iter().any(|(p, _)| same_column(p, c));
    let mut name = spark_name.to_string();
    let mut k = 2;
    while taken(&name) {
        name = format!("{spark_name}#{k}");
        k += 1;
    }
    projection.push((name.clone(), e.clone()));
    name
}

/// The projection's computed columns named otherwise than Spark names their expressions
/// ([`computed_column`]): (the column's name, Spark's name), longest first.
fn renamed_columns(projection: &[(String, Syntax)], schema: &Schema) -> Vec<(String, String)> {
    let mut renamed: Vec<(String, String)> = projection
        .iter()
        .filter(|(_, e)| !matches!(e.kind, SyntaxKind::Column(_)))
        .filter_map(|(name, e)| {
            let spark = bind(e, schema).ok()?.name;
            (spark != *name).then(|| (name.clone(), spark))
        })
        .collect();
    renamed.sort_by_key(|(name, _)| std::cmp::Reverse(name.len()));
    renamed
}

/// `name` (an output name written over the projection's columns) with each renamed column's
/// name put back as Spark's name of its expression: `upper(s.a#2)` is `upper(s.a)` where
/// `s.a#2` computes `s.a` beside a source column named `s.a`. A column name is replaced where
/// it stands alone (not inside a longer name: `xs.a#2`, `s.a#23`).
fn spark_named(name: &str, renamed: &[(String, String)]) -> String {
    let mut out = name.to_string();
    for (column, spark) in renamed {
        let mut from = 0;
        while let Some(i) = out[from..].find(column.as_str()).map(|i| i + from) {
            let end = i + column.len();
            let before = out[..i].chars().next_back();
            let after = out[end..].chars().next();
            let alone =
                !before.is_some_and(|c| c.is_alphanumeric() || c == '_') && !after.is_some_and(|c| c.is_ascii_digit());
            if alone {
                out.replace_range(i..end, spark);
                from = i + spark.len();
            } else {
                from = end;
            }
        }
    }
    out
}

/// The aggregation's projection laid out as the source's columns in their places, then the
/// computed keys and measure inputs: the operator finds its columns by name either way, and
/// this layout costs nothing per record (no computed column: the record passes through as it
/// is) or writes the computed ones into the spare slots the decoder leaves
/// ([`crate::steps::CompiledSteps::spare_columns`]); the columns no one reads are not decoded.
/// Kept as it is when a computed column's name is a source column's (the operator would find
/// the source's).
fn in_source_order(projection: Vec<(String, Syntax)>, schema: &Schema) -> Vec<(String, Syntax)> {
    let plain = |(name, e): &(String, Syntax)| {
        matches!(&e.kind, SyntaxKind::Column(parts) if parts.len() == 1
            && schema.resolve(&parts[0]).is_some_and(|i| schema.fields()[i].name == *name))
    };
    let computed: Vec<(String, Syntax)> = projection.iter().filter(|item| !plain(item)).cloned().collect();
    if computed.iter().any(|(name, _)| schema.resolve(name).is_some()) {
        return projection;
    }
    let mut out: Vec<(String, Syntax)> =
        schema.fields().iter().map(|f| (f.name.clone(), column(&f.name, Pos::default()))).collect();
    out.extend(computed);
    out
}

/// Rewrites a select item or HAVING over the aggregate's output row.
struct Rewrite<'a> {
    keys: &'a [(String, &'a Syntax)],
    window: Option<(&'a Syntax, bool)>,
    measures: Vec<(&'a Syntax, &'a str)>,
    schema: &'a Schema,
    /// The keys met inside expressions since the last take, written otherwise than their
    /// columns are named: (the key's column, Spark's name of the key as written there: `d` for
    /// `int(d)` where the key is `CAST(d AS INT)`).
    written: std::cell::RefCell<Vec<(String, String)>>,
}

impl Rewrite<'_> {
    /// `window` or `session_window` (Spark's name of the selected window) for the window call.
    fn window_name(&self, s: &Syntax) -> Option<String> {
        let (call, session) = self.window?;
        let name = if session { "session_window" } else { "window" };
        let by_name = matches!(&s.kind, SyntaxKind::Column(parts) if parts.len() == 1
            && parts[0].eq_ignore_ascii_case(name) && self.schema.resolve(name).is_none());
        (by_name || s.normalized() == call.normalized()).then(|| name.to_string())
    }

    /// A GROUP BY key's name selected as `s` without `AS`, when `s` is the key: as the select
    /// list writes it (a column as spelled there), or Spark's output name of the expression
    /// (`d` for `CAST(d AS INT)`), as Spark.
    fn key_name(&self, s: &Syntax) -> Option<String> {
        let n = s.normalized();
        let (name, _) = self.keys.iter().find(|(_, k)| k.normalized() == n)?;
        Some(match &s.kind {
            SyntaxKind::Column(parts) if parts.len() == 1 => parts[0].clone(),
            _ => bind(s, self.schema).map(|t| t.output_name().to_string()).unwrap_or_else(|_| name.clone()),
        })
    }

    fn apply(&self, s: &Syntax) -> Result<Syntax, SpecError> {
        let n = s.normalized();
        if let Some((call, _)) = self.window
            && n == call.normalized()
        {
            return Ok(column("window", s.pos));
        }
        if let Some((name, _)) = self.keys.iter().find(|(_, k)| k.normalized() == n) {
            let written_name = self.key_name(s).unwrap_or_else(|| name.clone());
            // inside an expression the key is named as written there (`int(d) + 1` is `(d + 1)`)
            if !matches!(s.kind, SyntaxKind::Column(_))
                && let Ok(t) = bind(s, self.schema)
                && t.name != *name
            {
                self.written.borrow_mut().push((name.clone(), t.name));
            }
            return Ok(column_named(&written_name, name, s.pos));
        }
        // the GROUP BY window by Spark's name of it (`window`, `session_window`), or a field
        // of it (`window.start`), where the source has no column of that name
        if let (Some((_, session)), SyntaxKind::Column(parts)) = (self.window, &s.kind)
            && parts[0].eq_ignore_ascii_case(if session { "session_window" } else { "window" })
            && self.schema.resolve(&parts[0]).is_none()
        {
            let mut parts = parts.clone();
            parts[0] = "window".to_string();
            return Ok(Syntax { kind: SyntaxKind::Column(parts), pos: s.pos });
        }
        if is_aggregate(s) {
            let (_, name) = self.measures.iter().find(|(c, _)| **c == n).ok_or_else(|| {
                at(s.pos, format!("the aggregate {}", written(s)), "an aggregate of the select list or HAVING")
            })?;
            return Ok(column(name, s.pos));
        }
        match &s.kind {
            // a name the source lacks is unknown (Spark's UNRESOLVED_COLUMN), not ungrouped
            SyntaxKind::Column(parts) if self.schema.resolve(&parts[0]).is_none() => {
                Err(sql_error(ExprError::UnknownColumn {
                    pos: s.pos,
                    given: parts.join("."),
                    allowed: self.schema.names(),
                }))
            }
            SyntaxKind::Column(parts) => Err(at(
                s.pos,
                format!("the column {} neither grouped nor aggregated (MISSING_AGGREGATION)", quote(&parts.join("."))),
                "a GROUP BY expression, an aggregate of it, or an expression over those (add it to GROUP BY, or use any_value), as Spark",
            )),
            SyntaxKind::Call { name, .. } if is_window_call(name) => Err(match self.window {
                Some(_) => at(
                    s.pos,
                    format!("{} (not the window of GROUP BY)", written(s)),
                    "the window(...) or session_window(...) call of GROUP BY, as written there",
                ),
                None => at(
                    s.pos,
                    format!("{} in the select list, not in GROUP BY (MISSING_AGGREGATION)", written(s)),
                    "GROUP BY the window (GROUP BY window(...), other keys) to aggregate per window, as Spark",
                ),
            }),
            // an unknown function (a misspelt aggregate) is named before its arguments are
            // looked at, as Spark's UNRESOLVED_ROUTINE comes before its MISSING_AGGREGATION
            SyntaxKind::Call { name, .. } if !crate::expr::known_function(name) => {
                Err(at(s.pos, format!("function {name}"), crate::expr::functions_allowed()))
            }
            _ => s.try_map_children(&mut |c| self.apply(c)),
        }
    }
}

/// A column reference; its written name is `name` (resolved ignoring case).
fn column(name: &str, pos: Pos) -> Syntax {
    Syntax { kind: SyntaxKind::Column(vec![name.to_string()]), pos }
}

/// A column reference to `target` written as `written` when the two are one name ignoring case
/// (so that Spark's spelling of the reference names the output), else as `target`.
fn column_named(written: &str, target: &str, pos: Pos) -> Syntax {
    column(if same_column(written, target) { written } else { target }, pos)
}

pub(super) fn at(pos: Pos, found: impl Display, allowed: impl Into<String>) -> SpecError {
    SpecError::new(FIELD, format!("{found} at {pos}"), allowed)
}

/// A binding error of an expression of the query, at `query.sql`.
pub(super) fn sql_error(e: ExprError) -> SpecError {
    match e {
        ExprError::Syntax { pos, found, allowed }
        | ExprError::Type { pos, found, allowed }
        | ExprError::Unsupported { pos, found, allowed } => at(pos, found, allowed),
        ExprError::UnknownColumn { pos, given, allowed } => {
            at(pos, format!("the unknown column {}", quote(&given)), format!("a column of the source: {allowed}"))
        }
        other => SpecError::new(FIELD, other.to_string(), "an expression that binds"),
    }
}

/// The expression as written, for messages (Spark's name where it binds in no schema: the
/// function and its arguments' shapes).
pub(super) fn written(s: &Syntax) -> String {
    match &s.kind {
        SyntaxKind::Column(parts) => parts.join("."),
        SyntaxKind::Call { name, args } => {
            format!("{name}({})", args.iter().map(written).collect::<Vec<_>>().join(", "))
        }
        SyntaxKind::Literal(Literal::String(t)) => format!("'{t}'"),
        SyntaxKind::Literal(Literal::Integer(n) | Literal::Long(n)) => n.to_string(),
        _ => "(...)".to_string(),
    }
}

fn is_window_call(name: &str) -> bool {
    name.eq_ignore_ascii_case("window") || name.eq_ignore_ascii_case("session_window")
}

/// Whether `s` is an aggregate call (SQL.md's aggregates, and `count_if`, planned as a count).
pub(super) fn is_aggregate(s: &Syntax) -> bool {
    matches!(&s.kind, SyntaxKind::Call { name, .. }
        if super::AGGREGATES.contains(&name.to_ascii_lowercase().as_str()) || name.eq_ignore_ascii_case("count_if")
            || crate::expr::current_aggregate(name).is_some())
}

/// Whether `s` is a CAST (`::`, `try_cast`) of an aggregate call, through any further casts:
/// Spark names it as written (`CAST(count(1) AS DOUBLE)`), where a cast of a column takes the
/// column's name.
fn cast_of_aggregate(s: &Syntax) -> bool {
    let SyntaxKind::Cast { expr, .. } = &s.kind else { return false };
    let mut inner = expr.as_ref();
    while let SyntaxKind::Cast { expr, .. } = &inner.kind {
        inner = expr;
    }
    is_aggregate(inner)
}

/// `Err` naming the first aggregate call in a join's ON condition `on` (as written), which
/// Spark's analyzer refuses too; without this check, an inner stream-stream join's conditions
/// moved to WHERE would report it as in WHERE.
pub(super) fn no_aggregate_in_on(on: &Syntax) -> Result<(), SpecError> {
    match first_aggregate(on) {
        Some(agg) => Err(at(
            agg.pos,
            format!("the aggregate {} in a join's ON", written(agg)),
            "ON conditions without aggregates (aggregate after the join, in the SELECT list or HAVING), as Spark",
        )),
        None => Ok(()),
    }
}

/// The first aggregate call in `s`, outermost first.
pub(crate) fn first_aggregate(s: &Syntax) -> Option<&Syntax> {
    if is_aggregate(s) {
        return Some(s);
    }
    s.children().into_iter().find_map(first_aggregate)
}

/// Where the argument of the window call that `field` (`query.window.size`, `.slide`, `.start`,
/// `.gap`) was taken from is written; the call's position for the other window fields.
fn window_argument_pos(call: &Syntax, field: &str) -> Pos {
    let SyntaxKind::Call { args, .. } = &call.kind else { return call.pos };
    let index = match field.strip_prefix("query.window.") {
        Some("size" | "gap" | "gap_column") => 1,
        Some("slide") => 2,
        Some("start") => 3,
        _ => return call.pos,
    };
    args.get(index).map_or(call.pos, |a| a.pos)
}

/// The first `window(...)` or `session_window(...)` call in `s`, outermost first.
fn first_window_call(s: &Syntax) -> Option<&Syntax> {
    if matches!(&s.kind, SyntaxKind::Call { name, .. } if is_window_call(name)) {
        return Some(s);
    }
    s.children().into_iter().find_map(first_window_call)
}

/// The column names `s` references (first name part).
pub(super) fn columns_of(s: &Syntax) -> Vec<String> {
    let mut out = Vec::new();
    fn walk(s: &Syntax, out: &mut Vec<String>) {
        if let SyntaxKind::Column(parts) = &s.kind {
            out.push(parts[0].clone());
        }
        s.children().into_iter().for_each(|c| walk(c, out));
    }
    walk(s, &mut out);
    out
}

/// Whether a WHERE conjunct runs after the watermark, in the partition actor: it mentions the
/// watermark column (`wm`), or it calls `current_timestamp()`, which there reads the batch's
/// processing time (micro-batch) or the instant the record is processed at (real-time), under
/// the replay clock too (before the watermark, at the source, the replay clock has not yet
/// moved to the record).
fn runs_after_watermark(c: &Syntax, wm: Option<&str>) -> bool {
    wm.is_some_and(|w| mentions(c, w)) || c.processing_time_call().is_some()
}

fn mentions(s: &Syntax, column: &str) -> bool {
    columns_of(s).iter().any(|c| same_column(c, column))
}

/// The conjuncts of a condition: `a AND (b AND c)` is `[a, b, c]`.
pub(super) fn conjuncts(s: Syntax) -> Vec<Syntax> {
    match s.kind {
        SyntaxKind::Binary { op: BinaryOp::And, left, right } => {
            let mut v = conjuncts(*left);
            v.extend(conjuncts(*right));
            v
        }
        _ => vec![s],
    }
}

/// `s` with the qualifier (`source.col`, `alias.col`) dropped from column references.
pub(super) fn unqualified(s: &Syntax, qualifier: &str) -> Syntax {
    match &s.kind {
        SyntaxKind::Column(parts) if parts.len() > 1 && parts[0].eq_ignore_ascii_case(qualifier) => {
            Syntax { kind: SyntaxKind::Column(parts[1..].to_vec()), pos: s.pos }
        }
        _ => match s.try_map_children::<std::convert::Infallible>(&mut |c| Ok(unqualified(c, qualifier))) {
            Ok(s) => s,
            Err(never) => match never {},
        },
    }
}

pub(super) fn expand_items(q: &QuerySyntax, schema: &Schema, qualifier: &str) -> Result<Vec<Item>, SpecError> {
    let mut items = Vec::new();
    for item in &q.items {
        match item {
            SelectItemSyntax::Expr { syntax, alias } => {
                items.push(Item { syntax: syntax.clone(), alias: alias.clone() })
            }
            SelectItemSyntax::Wildcard { qualifier: Some(q), pos } if !q.eq_ignore_ascii_case(qualifier) => {
                return Err(at(*pos, format!("{q}.*"), format!("* or {qualifier}.* (the source's name or alias)")));
            }
            SelectItemSyntax::Wildcard { pos, .. } => {
                items.extend(schema.fields().iter().map(|f| Item { syntax: column(&f.name, *pos), alias: None }))
            }
        }
    }
    Ok(items)
}

/// HAVING with its references to select aliases replaced by the aliased expression, as Spark
/// resolves them (`SELECT k, count(*) AS c ... HAVING c > 1`): a name outside an aggregate
/// that is a select alias and not a GROUP BY column is the alias (a grouped source column of
/// that name wins); inside an aggregate a name is always the source's column.
fn having_aliases(s: &Syntax, items: &[Item], group: &[Key]) -> Syntax {
    if is_aggregate(s) {
        return s.clone();
    }
    if let SyntaxKind::Column(parts) = &s.kind {
        let grouped = group.iter().any(|k| {
            matches!(k, Key::Expr(e) if matches!(&e.kind, SyntaxKind::Column(key) if key.len() == 1
                && same_column(&key[0], &parts[0])))
        });
        let aliased = items.iter().find(|i| i.alias.as_deref().is_some_and(|a| same_column(a, &parts[0])));
        if let (false, Some(item)) = (grouped, aliased) {
            // `w.start` where `w` is an alias: the field of the aliased expression
            return parts[1..].iter().fold(item.syntax.clone(), |e, field| Syntax {
                kind: SyntaxKind::Field { expr: Box::new(e), field: field.clone() },
                pos: s.pos,
            });
        }
        return s.clone();
    }
    match s.try_map_children::<std::convert::Infallible>(&mut |c| Ok(having_aliases(c, items, group))) {
        Ok(s) => s,
        Err(never) => match never {},
    }
}

/// GROUP BY items as keys: positions and select aliases replaced by the select item's
/// expression; aggregates refused, as Spark.
fn group_keys(
    q: &QuerySyntax,
    items: &[Item],
    schema: &Schema,
    unqualify: &dyn Fn(&Syntax) -> Syntax,
) -> Result<Vec<Key>, SpecError> {
    let mut keys = Vec::new();
    for g in &q.group_by {
        let e = match g {
            GroupItemSyntax::Ordinal { position, pos } => {
                let Some(item) =
                    usize::try_from(*position).ok().and_then(|p| p.checked_sub(1)).and_then(|i| items.get(i))
                else {
                    return Err(at(
                        *pos,
                        format!("GROUP BY position {position} (GROUP_BY_POS_OUT_OF_RANGE)"),
                        format!("a position from 1 to {} (the select list's length)", items.len()),
                    ));
                };
                lateral_in_group_by(*pos, &format!("GROUP BY position {position}"), item)?;
                if let Some(agg) = first_aggregate(&item.syntax) {
                    return Err(at(
                        *pos,
                        format!(
                            "GROUP BY position {position}, which holds the aggregate {} (GROUP_BY_POS_AGGREGATE)",
                            written(agg)
                        ),
                        "a position of a select item without aggregates",
                    ));
                }
                item.syntax.clone()
            }
            GroupItemSyntax::Expr(e) => {
                let e = unqualify(e);
                match &e.kind {
                    // a select alias that is not a source column (spark.sql.groupByAliases)
                    SyntaxKind::Column(parts) if parts.len() == 1 && schema.resolve(&parts[0]).is_none() => match items
                        .iter()
                        .find(|i| i.alias.as_deref().is_some_and(|a| a.eq_ignore_ascii_case(&parts[0])))
                    {
                        Some(item) => {
                            lateral_in_group_by(e.pos, &format!("GROUP BY {}", parts[0]), item)?;
                            item.syntax.clone()
                        }
                        None => e.clone(),
                    },
                    _ => e,
                }
            }
        };
        if let Some(agg) = first_aggregate(&e) {
            return Err(at(
                agg.pos,
                format!("the aggregate {} in GROUP BY (GROUP_BY_AGGREGATE)", written(agg)),
                "GROUP BY expressions without aggregates, as Spark",
            ));
        }
        keys.push(match &e.kind {
            SyntaxKind::Call { name, .. } if is_window_call(name) => Key::Window(e),
            _ => Key::Expr(e),
        });
    }
    Ok(keys)
}

/// Refuses a GROUP BY alias or position (`group`, as written, at `pos`) that names a select
/// item holding a lateral column alias reference, as Spark 4.3 refuses it.
fn lateral_in_group_by(pos: Pos, group: &str, item: &Item) -> Result<(), SpecError> {
    match super::sql_lateral::first_reference(&item.syntax) {
        Some(reference) => Err(at(
            pos,
            format!(
                "{group}, a select item that reads the lateral column alias at {} (LATERAL_COLUMN_ALIAS_IN_GROUP_BY)",
                reference.pos
            ),
            "GROUP BY the expression itself, written over the source's columns, as Spark",
        )),
        None => Ok(()),
    }
}

/// A GROUP BY window: the structured window, whether it is a session window, a computed
/// session gap (its column name and expression), and a computed time (the expression, when the
/// window's time is neither a column nor an inner window's time: `raw.column` is then left for
/// the caller to name).
type PlannedWindow = (RawWindow, bool, Option<(String, Syntax)>, Option<Syntax>);

/// The structured window of `window(col, size[, slide[, start]])` or `session_window(col, gap)`,
/// whether it is a session window, a session gap given as an expression (neither a literal
/// nor a column: Spark reads it per record): its name (Spark's name of the expression) and the
/// expression, which the projection computes for the window's `gap_column`; and a time given as
/// a TIMESTAMP expression (`window(ts + INTERVAL 2 SECONDS, ...)`), which the projection
/// computes too. Such a time carries no watermark (Spark's `TimeWindowing` copies the watermark
/// only from an attribute): nothing is late for it, and append is refused.
fn window_of(call: &Syntax, schema: &Schema) -> Result<PlannedWindow, SpecError> {
    let SyntaxKind::Call { name, args } = &call.kind else { unreachable!("window keys are calls") };
    let session = name.eq_ignore_ascii_case("session_window");
    let arity_ok = if session { args.len() == 2 } else { (2..=4).contains(&args.len()) };
    if !arity_ok {
        let allowed =
            if session { "session_window(time_column, gap)" } else { "window(time_column, size[, slide[, start]])" };
        return Err(at(call.pos, format!("{} with {} arguments", name.to_ascii_lowercase(), args.len()), allowed));
    }
    let mut computed_time = None;
    let time = match (&args[0].kind, window_time_of_window(&args[0], schema)) {
        (SyntaxKind::Column(parts), _) if parts.len() == 1 => parts[0].clone(),
        (_, Some(window)) => window,
        // over an inner aggregation's rows (a chain, append only): Spark's `TimeWindowing`
        // carries the watermark only from an attribute or `window_time(window)`, so any other
        // time (`window.end`, `window.start + ...`) has none and Spark refuses append
        _ if schema.fields().iter().any(|f| f.data_type == DataType::Window) => {
            return Err(at(
                args[0].pos,
                format!(
                    "the expression {} as the window's time over the subquery's window (STREAMING_OUTPUT_MODE.UNSUPPORTED_OPERATION: Spark refuses append for a streaming aggregation without watermark, and it carries none to this time)",
                    bind(&args[0], schema).map_or_else(|_| written(&args[0]), |t| t.name.clone())
                ),
                "window(window, size) or window(window_time(window), size): the inner window's event time, its end minus 1 µs, which carries the watermark (SQL.md \"Chained aggregations\")",
            ));
        }
        _ => {
            let typed = bind(&args[0], schema).map_err(sql_error)?;
            if typed.data_type != DataType::Timestamp {
                return Err(at(
                    args[0].pos,
                    format!("the expression {} of type {} as the window's time", typed.name, typed.data_type),
                    "a TIMESTAMP column or expression",
                ));
            }
            computed_time = Some(args[0].clone());
            String::new()
        }
    };
    // Spark 4.3's `TimeWindow` takes a string, INT or BIGINT literal (microseconds) and refuses
    // an INTERVAL literal ("The duration and time inputs to window must be an integer, long or
    // string literal"); its `SessionWindow` refuses one as a gap too (a day-time interval is not
    // the CalendarIntervalType it wants)
    let duration = |a: &Syntax| -> Result<String, SpecError> {
        match &a.kind {
            SyntaxKind::Literal(Literal::String(t)) => Ok(t.clone()),
            SyntaxKind::Literal(Literal::Integer(n) | Literal::Long(n)) if !session => Ok(format!("{n} us")),
            _ => Err(at(
                a.pos,
                match &a.kind {
                    SyntaxKind::Literal(Literal::Interval { text, .. }) => format!("{text} as a duration"),
                    _ => format!("{} as a duration", written(a)),
                },
                if session {
                    "a duration string ('10 minutes'), as Spark (which refuses an INTERVAL literal here)"
                } else {
                    "a duration string ('10 minutes') or an integer literal (microseconds), as Spark (which refuses an INTERVAL literal here)"
                },
            )),
        }
    };
    let mut raw = RawWindow { column: Some(time), ..RawWindow::default() };
    let mut computed_gap = None;
    if session {
        raw.kind = Some("session".into());
        match &args[1].kind {
            SyntaxKind::Column(parts) if parts.len() == 1 && schema.resolve(&parts[0]).is_some() => {
                raw.gap_column = Some(parts[0].clone());
            }
            SyntaxKind::Literal(_) => raw.gap = Some(duration(&args[1])?),
            _ => {
                let name = bind(&args[1], schema).map_err(sql_error)?.output_name().to_string();
                raw.gap_column = Some(name.clone());
                computed_gap = Some((name, args[1].clone()));
            }
        }
    } else {
        raw.size = Some(duration(&args[1])?);
        raw.kind = Some(if args.len() == 2 { "tumbling" } else { "sliding" }.into());
        raw.slide = args.get(2).map(duration).transpose()?;
        raw.start = args.get(3).map(duration).transpose()?;
    }
    Ok((raw, session, computed_gap, computed_time))
}

/// The window column `c` of `window_time(c)`, the time of a window over an inner aggregation's
/// window (SQL.md "Chained aggregations"): a window aggregate reads a window column at its
/// `window_time`, its end minus 1 µs ([`crate::value::Value::event_time`]), as Spark's
/// `TimeWindowing` rule reads `window(window, size)`: it rewrites that form to
/// `window(window_time(window), size)` (SPARK-40925), so both spellings are one window with the
/// inner window's event time and watermark. `None` for any other expression.
fn window_time_of_window(time: &Syntax, schema: &Schema) -> Option<String> {
    let SyntaxKind::Call { name, args } = &time.kind else { return None };
    let [arg] = args.as_slice() else { return None };
    match &arg.kind {
        SyntaxKind::Column(parts)
            if name.eq_ignore_ascii_case("window_time")
                && parts.len() == 1
                && schema.resolve(&parts[0]).is_some_and(|i| schema.fields()[i].data_type == DataType::Window) =>
        {
            Some(parts[0].clone())
        }
        _ => None,
    }
}

/// Adds the measures of the aggregate calls in `s`; computed inputs go into the projection,
/// named by Spark's name of the expression.
fn collect_measures(
    s: &Syntax,
    schema: &Schema,
    measures: &mut Vec<Measure>,
    projection: &mut Vec<(String, Syntax)>,
) -> Result<(), SpecError> {
    if !is_aggregate(s) {
        return s.children().into_iter().try_for_each(|c| collect_measures(c, schema, measures, projection));
    }
    let SyntaxKind::Call { name, args } = &s.kind else { unreachable!("aggregates are calls") };
    let agg = name.to_ascii_lowercase();
    if let Some(inner) = args.iter().find_map(first_aggregate) {
        return Err(at(
            inner.pos,
            format!("the aggregate {} inside {} (NESTED_AGGREGATE_FUNCTION)", written(inner), written(s)),
            "an aggregate over a non-aggregate expression, as Spark",
        ));
    }
    let normalized = s.normalized();
    if measures.iter().any(|m| m.call == normalized) {
        return Ok(());
    }
    if agg == "count_if" {
        return count_if(s, args, schema, measures, projection);
    }
    if agg == "count" && args.len() > 1 {
        return count_several(s, args, schema, measures, projection);
    }
    let usage = |what: &str| at(s.pos, format!("{} ({what})", written(s)), aggregate_usage(&agg));
    let Some(input) = args.first() else { return Err(usage("no argument")) };
    let mut raw = RawMeasure { agg: Some(agg.clone()), sql: true, ..RawMeasure::default() };
    let picks = matches!(agg.as_str(), "first" | "first_value" | "last" | "last_value" | "any_value");
    let mut args = args.as_slice();
    if let ([x, ignore_nulls], true) = (args, picks) {
        // Spark's `First` / `Last`: the second argument is `ignoreNulls`, a BOOLEAN literal
        // (`'true'`, `NULL` and `1 = 1` are refused), left out of the name: `first(x)`
        match ignore_nulls.kind {
            SyntaxKind::Literal(Literal::Bool(b)) => raw.ignore_nulls = b,
            _ => {
                return Err(at(
                    ignore_nulls.pos,
                    format!("{} as the second argument of {agg}", written(ignore_nulls)),
                    format!("a boolean literal (true or false: ignoreNulls), as Spark: {}", aggregate_usage(&agg)),
                ));
            }
        }
        args = std::slice::from_ref(x);
    }
    let counts_rows = agg == "count" && matches!(&input.kind, SyntaxKind::Literal(l) if *l != Literal::Null);
    let by = matches!(agg.as_str(), "max_by" | "min_by");
    if by {
        // one input: the pair (value, ordering), computed by the projection
        let [value, ordering] = args else { return Err(usage("not two arguments")) };
        let pair = Syntax {
            kind: SyntaxKind::Call {
                name: "named_struct".into(),
                args: vec![
                    string_literal("value", s.pos),
                    value.clone(),
                    string_literal("ordering", s.pos),
                    ordering.clone(),
                ],
            },
            pos: s.pos,
        };
        let typed = bind(&pair, schema).map_err(sql_error)?;
        let spark_name = |a: &Syntax| bind(a, schema).map(|t| t.output_name().to_string()).map_err(sql_error);
        raw.alias = Some(format!("{agg}({}, {})", spark_name(value)?, spark_name(ordering)?));
        raw.column = Some(computed_column(projection, schema, &typed.name, &pair));
    } else if !counts_rows {
        let typed = bind(input, schema).map_err(sql_error)?;
        // Spark 4.3 (ANSI) casts a STRING input of sum / avg / the stddev family /
        // approx_percentile to DOUBLE (a DOUBLE result, failing on a value that is not a
        // number: here the record goes to the dead letters), naming the measure by the input as
        // written: `sum(s)`
        let computed = if numeric_of_string(&agg) && typed.data_type == DataType::String {
            let cast = Syntax {
                kind: SyntaxKind::Cast { expr: Box::new(input.clone()), to: DataType::Double, try_cast: false },
                pos: input.pos,
            };
            Some((bind(&cast, schema).map_err(sql_error)?.name, cast))
        } else {
            None
        };
        let name = match (&input.kind, computed) {
            (SyntaxKind::Column(parts), None) if parts.len() == 1 => {
                let name = parts[0].clone();
                if !projection.iter().any(|(n, _)| same_column(n, &name)) {
                    projection.push((name.clone(), input.clone()));
                }
                name
            }
            (_, computed) => {
                let (spark_name, e) = computed.unwrap_or_else(|| (typed.name.clone(), input.clone()));
                let name = computed_column(projection, schema, &spark_name, &e);
                // the measure is named by Spark's name of its input, whatever the column's
                if name != typed.name {
                    raw.named_as = Some(typed.name.clone());
                }
                name
            }
        };
        raw.column = Some(name);
    } else if !matches!(input.kind, SyntaxKind::Literal(Literal::Integer(1))) {
        raw.alias = Some(format!("count({})", written(input)));
    }
    let extra = if by { &[] } else { &args[1..] };
    let literal = |a: &Syntax| -> Option<toml::Value> {
        match &a.kind {
            SyntaxKind::Literal(Literal::Integer(n) | Literal::Long(n)) => Some(toml::Value::Integer(*n)),
            SyntaxKind::Literal(Literal::Double(x)) => Some(toml::Value::Float(*x)),
            SyntaxKind::Literal(Literal::Decimal(t)) => t.parse().ok().map(toml::Value::Float),
            _ => None,
        }
    };
    match (agg.as_str(), extra) {
        (_, []) => {}
        ("approx_count_distinct", [rsd]) => match literal(rsd) {
            Some(toml::Value::Float(r)) => raw.rsd = Some(r),
            _ => return Err(usage("rsd is not a number literal")),
        },
        ("approx_percentile" | "percentile_approx", [p, rest @ ..]) if rest.len() <= 1 => {
            raw.percentage = match &p.kind {
                SyntaxKind::Call { name, args } if name.eq_ignore_ascii_case("array") => Some(toml::Value::Array(
                    args.iter()
                        .map(literal)
                        .collect::<Option<_>>()
                        .ok_or_else(|| usage("a percentage that is not a number literal"))?,
                )),
                _ => Some(literal(p).ok_or_else(|| usage("a percentage that is not a number literal"))?),
            };
            if let Some(a) = rest.first() {
                match literal(a) {
                    Some(toml::Value::Integer(n)) => raw.accuracy = Some(n),
                    _ => return Err(usage("an accuracy that is not an integer literal")),
                }
            }
        }
        _ => return Err(usage("too many arguments")),
    }
    // `first(x, true)` beside `first(x)`: one Spark name (`first(x)`), two columns of the
    // operator: the later one's column is `first(x)#2` (`#3`, ...)
    let mut spark_name = None;
    if picks {
        let name = pick_name(&raw);
        let mut k = 2;
        let mut column_name = name.clone();
        while measures.iter().any(|m| pick_name(&m.raw) == column_name) {
            column_name = format!("{name}#{k}");
            k += 1;
        }
        if column_name != name {
            raw.alias = Some(column_name);
            spark_name = Some(name);
        }
    }
    measures.push(Measure { call: normalized, raw, pos: s.pos, spark_name });
    Ok(())
}

/// The output column of a first / last measure (any other: an empty string): its alias, else
/// Spark's default name `agg(input)` (as `measure::name_from_literals` makes it).
fn pick_name(raw: &RawMeasure) -> String {
    let agg = raw.agg.as_deref().unwrap_or("");
    if !matches!(agg, "first" | "first_value" | "last" | "last_value" | "any_value") {
        return String::new();
    }
    if let Some(alias) = &raw.alias {
        return alias.clone();
    }
    format!("{agg}({})", raw.named_as.as_deref().or(raw.column.as_deref()).unwrap_or("1"))
}

/// `count_if(c)` (the call `s`) as Spark's `CountIf`: `count(if(c, 1, NULL))`, BIGINT, 0 on no
/// input, named `count_if(<Spark's name of c>)`; `c` must be BOOLEAN.
fn count_if(
    s: &Syntax,
    args: &[Syntax],
    schema: &Schema,
    measures: &mut Vec<Measure>,
    projection: &mut Vec<(String, Syntax)>,
) -> Result<(), SpecError> {
    let [condition] = args else {
        return Err(at(s.pos, format!("{} (not one argument)", written(s)), aggregate_usage("count_if")));
    };
    // `count_if(NULL)`: Spark types the untyped NULL as BOOLEAN here (0 on every group)
    let null = matches!(condition.kind, SyntaxKind::Literal(Literal::Null));
    let cast_null;
    let condition = if null {
        cast_null = Syntax {
            kind: SyntaxKind::Cast {
                expr: Box::new(condition.clone()),
                to: crate::schema::DataType::Boolean,
                try_cast: false,
            },
            pos: condition.pos,
        };
        &cast_null
    } else {
        condition
    };
    let typed = bind(condition, schema).map_err(sql_error)?;
    if typed.data_type != crate::schema::DataType::Boolean {
        return Err(at(
            condition.pos,
            format!("count_if of {} ({})", typed.data_type, typed.name),
            "a BOOLEAN condition: count_if(c)",
        ));
    }
    let literal = |l: Literal| Syntax { kind: SyntaxKind::Literal(l), pos: s.pos };
    let input = Syntax {
        kind: SyntaxKind::Call {
            name: "if".into(),
            args: vec![condition.clone(), literal(Literal::Integer(1)), literal(Literal::Null)],
        },
        pos: s.pos,
    };
    let spark_name = bind(&input, schema).map_err(sql_error)?.name;
    let name = computed_column(projection, schema, &spark_name, &input);
    let raw = RawMeasure {
        agg: Some("count".into()),
        column: Some(name),
        alias: Some(format!("count_if({})", if null { "NULL" } else { typed.name.as_str() })),
        ..RawMeasure::default()
    };
    measures.push(Measure { call: s.normalized(), raw, pos: s.pos, spark_name: None });
    Ok(())
}

/// Whether Spark 4.3 takes a STRING input to `agg` as a DOUBLE (its ANSI implicit cast into a
/// function that expects a number): sum, avg / mean, the stddev and variance family,
/// approx_percentile (pyspark 4.3: `sum(s)` is DOUBLE and named `sum(s)`; min / max / first /
/// last keep the STRING).
fn numeric_of_string(agg: &str) -> bool {
    matches!(
        agg,
        "sum"
            | "avg"
            | "mean"
            | "stddev"
            | "std"
            | "stddev_samp"
            | "stddev_pop"
            | "variance"
            | "var_samp"
            | "var_pop"
            | "approx_percentile"
            | "percentile_approx"
    )
}

/// `count(a, b, ...)` (the call `s`, two or more arguments) as Spark's `Count` of several
/// children: the rows where every argument is non-null, as
/// `count(if(a IS NOT NULL AND b IS NOT NULL ..., 1, NULL))`, BIGINT, 0 on no input, named
/// `count(<Spark's names of the arguments, joined by ", ">)` (pyspark 4.3: `count(x, y)`,
/// `count((y + 1), upper(x))`, `count(NULL, x)`).
fn count_several(
    s: &Syntax,
    args: &[Syntax],
    schema: &Schema,
    measures: &mut Vec<Measure>,
    projection: &mut Vec<(String, Syntax)>,
) -> Result<(), SpecError> {
    let mut names = Vec::with_capacity(args.len());
    for a in args {
        names.push(bind(a, schema).map_err(sql_error)?.name);
    }
    let not_null =
        |a: &Syntax| Syntax { kind: SyntaxKind::IsNull { expr: Box::new(a.clone()), negated: true }, pos: a.pos };
    let every = args.iter().skip(1).fold(not_null(&args[0]), |acc, a| Syntax {
        kind: SyntaxKind::Binary { op: BinaryOp::And, left: Box::new(acc), right: Box::new(not_null(a)) },
        pos: s.pos,
    });
    let literal = |l: Literal| Syntax { kind: SyntaxKind::Literal(l), pos: s.pos };
    let input = Syntax {
        kind: SyntaxKind::Call {
            name: "if".into(),
            args: vec![every, literal(Literal::Integer(1)), literal(Literal::Null)],
        },
        pos: s.pos,
    };
    let spark_name = bind(&input, schema).map_err(sql_error)?.name;
    let name = computed_column(projection, schema, &spark_name, &input);
    let raw = RawMeasure {
        agg: Some("count".into()),
        column: Some(name),
        alias: Some(format!("count({})", names.join(", "))),
        ..RawMeasure::default()
    };
    measures.push(Measure { call: s.normalized(), raw, pos: s.pos, spark_name: None });
    Ok(())
}

fn string_literal(text: &str, pos: Pos) -> Syntax {
    Syntax { kind: SyntaxKind::Literal(Literal::String(text.to_string())), pos }
}

fn aggregate_usage(agg: &str) -> String {
    match agg {
        "max_by" | "min_by" => format!("{agg}(expr, ordering)"),
        "approx_count_distinct" => "approx_count_distinct(expr[, rsd])".into(),
        "approx_percentile" | "percentile_approx" => format!("{agg}(expr[, percentage or array(...)[, accuracy]])"),
        "count" => "count(*), count(expr, ...)".into(),
        "first" | "first_value" | "last" | "last_value" | "any_value" => format!("{agg}(expr[, ignoreNulls])"),
        "count_if" => "count_if(condition)".into(),
        other => format!("{other}(expr)"),
    }
}

fn expr(s: &Syntax, name: Option<&str>, schema: &Schema) -> Result<PipelineExpr, SpecError> {
    let typed = bind(s, schema).map_err(sql_error)?;
    let name = name.map_or_else(|| typed.output_name().to_string(), str::to_string);
    Ok(PipelineExpr { field: FIELD.into(), typed, name })
}

pub(super) fn project(s: &Syntax, alias: Option<&str>, schema: &Schema) -> Result<PipelineExpr, SpecError> {
    expr(s, alias, schema)
}

pub(super) fn filter(s: &Syntax, schema: &Schema) -> Result<Step, SpecError> {
    let e = expr(s, None, schema)?;
    if e.typed.data_type != crate::schema::DataType::Boolean {
        return Err(at(
            s.pos,
            format!("the condition {} of type {}", e.typed.name, e.typed.data_type),
            "a BOOLEAN condition",
        ));
    }
    Ok(Step::Filter(e))
}

/// A query's stream-static join and the WHERE filters that run on the stream before it.
pub(crate) type JoinedBy = (super::StaticJoinSpec, Vec<Step>);

/// `[query] sql` (with `output_mode`): parsed with `front` and planned over the source named
/// `source` (`source.name`, default `source`, PIPELINE.md) of `schema`, joined with one of
/// `tables` when the query says so (`sql_join`: the plan is then over the joined record, and the
/// join comes with the WHERE conjuncts that run on the stream's records before it).
///
/// # Errors
/// A [`SpecError`] at `query.type` (or the other structured field) given beside `sql`; at
/// `query.sql` without a SQL front end, for text that does not parse, and as
/// [`plan_sql_query`] and `sql_join::resolve`.
#[allow(clippy::too_many_arguments)] // the pipeline's parts a SQL query reads, each once
pub(crate) fn validate_sql(
    raw: RawQuery,
    source: &str,
    schema: &Schema,
    tables: &[super::TableSpec],
    mode: Mode,
    watermark: Option<&WatermarkSpec>,
    kept: &[String],
    front: Option<&dyn crate::expr::SqlFrontEnd>,
) -> Result<(SqlQueryPlan, Option<JoinedBy>), SpecError> {
    let structured: [(&str, bool); 9] = [
        ("type", raw.kind.is_some()),
        ("group_by", raw.group_by.is_some()),
        ("window", raw.window.is_some()),
        ("measures", raw.measures.is_some()),
        ("partition_by", raw.partition_by.is_some()),
        ("order_by", raw.order_by.is_some()),
        ("frontier", raw.frontier.is_some()),
        ("columns", raw.columns.is_some()),
        ("within_watermark", raw.within_watermark.is_some()),
    ];
    if let Some((field, _)) = structured.iter().find(|(_, present)| *present) {
        return Err(SpecError::new(
            format!("query.{field}"),
            format!("{field} beside sql"),
            "either sql (with output_mode) or type = ... with its fields, not both",
        ));
    }
    let text = raw.sql.unwrap_or_default();
    let Some(front) = front else {
        return Err(SpecError::new(
            FIELD,
            quote(&text),
            "no SQL query in a pipeline read without a SQL front end (eddy and eddy_sql::load_pipeline read them)",
        ));
    };
    let q = front.parse_query(&text).map_err(sql_error)?;
    let output_mode = raw.output_mode.as_deref();
    if let Some(inner) = &q.subquery {
        let resolve_inner = |inner: &QuerySyntax, output_mode: Option<&str>| {
            let wm = watermark.map(|w| w.column.as_str());
            match super::sql_join::resolve(inner, source, schema, tables, wm)? {
                None => Ok((
                    plan_sql_query(inner, source, schema, watermark, kept, output_mode, mode)?,
                    None,
                    schema.clone(),
                )),
                Some(j) => {
                    let plan = plan_sql_query(&j.query, source, &j.schema, watermark, kept, output_mode, mode)?;
                    Ok((plan, Some((j.join, j.pushed)), j.schema))
                }
            }
        };
        return super::sql_chain::plan_chained(&q, inner, output_mode, mode, watermark, &resolve_inner);
    }
    match super::sql_join::resolve(&q, source, schema, tables, watermark.map(|w| w.column.as_str()))? {
        None => Ok((plan_sql_query(&q, source, schema, watermark, kept, output_mode, mode)?, None)),
        Some(joined) => {
            let plan = plan_sql_query(&joined.query, source, &joined.schema, watermark, kept, output_mode, mode)?;
            Ok((plan, Some((joined.join, joined.pushed))))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_computed_column_takes_no_name_another_column_has() {
        let schema = Schema::parse_ddl("d DOUBLE, `upper(k)` STRING, k STRING").unwrap_or_else(|e| panic!("{e}"));
        let call = |name: &str, arg: &str| Syntax {
            kind: SyntaxKind::Call { name: name.into(), args: vec![column(arg, Pos::default())] },
            pos: Pos::default(),
        };
        let mut projection = vec![("d".to_string(), column("d", Pos::default()))];
        // a name no column has is taken as it is, and found again for the same expression
        assert_eq!(computed_column(&mut projection, &schema, "lower(k)", &call("lower", "k")), "lower(k)");
        assert_eq!(computed_column(&mut projection, &schema, "lower(k)", &call("lower", "k")), "lower(k)");
        // a source column's name, and then another expression's, are passed over
        assert_eq!(computed_column(&mut projection, &schema, "upper(k)", &call("upper", "k")), "upper(k)#2");
        assert_eq!(computed_column(&mut projection, &schema, "upper(k)", &call("initcap", "k")), "upper(k)#3");
        assert_eq!(projection.len(), 4);
        let renamed = renamed_columns(&projection, &schema);
        // (the column's name, Spark's name of what it computes)
        let pair = |a: &str, b: &str| (a.to_string(), b.to_string());
        assert_eq!(renamed, vec![pair("upper(k)#2", "upper(k)"), pair("upper(k)#3", "initcap(k)")]);
        assert_eq!(spark_named("upper(k)#3 || upper(k)#2", &renamed), "initcap(k) || upper(k)");
        // put back where the column name stands alone
        assert_eq!(spark_named("concat(upper(k)#2, x)", &renamed), "concat(upper(k), x)");
        assert_eq!(spark_named("upper(k)#2", &renamed), "upper(k)");
        assert_eq!(spark_named("xupper(k)#2", &renamed), "xupper(k)#2");
        assert_eq!(spark_named("upper(k)#23", &renamed), "upper(k)#23");
    }
}
