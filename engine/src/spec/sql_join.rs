//! A SQL query's stream-static join (SQL.md "Queries", SEMANTICS.md "Joins"): `FROM source
//! JOIN table ON ...` (or the table first) resolved into a [`StaticJoinSpec`] and a
//! single-relation query over the joined columns, which `sql_query` then plans as it plans a
//! query over one source.
//!
//! The joined record holds the stream's columns then the table's, whichever side the query
//! writes the stream on (so the stream's columns keep their positions: the watermark's and the
//! clock's column too); `SELECT *` lists them in the query's order, left then right, as Spark.
//! Column references are rewritten onto the joined columns: `s.col` and `t.col` by their
//! qualifier (the alias, else the name), a bare `col` where one side only has it (both:
//! Spark's `AMBIGUOUS_REFERENCE`). A table column whose name a stream column also has is named
//! `qualifier.col` in the joined record; a bare reference to it in the select list keeps Spark's
//! output name `col` (an expression over it is named with the qualifier, where Spark drops it).
//!
//! Join types, as Spark's `UnsupportedOperationChecker` allows them for a stream and a static
//! relation: the stream on the left with INNER, LEFT OUTER, LEFT SEMI and LEFT ANTI; the table on
//! the left with INNER and RIGHT OUTER. The others are refused with Spark's reason. ON must be
//! one or more equalities of a stream column and a table column joined by AND (the join keys),
//! of one type or INT and BIGINT (compared as BIGINT, as Spark widens them); a join without one
//! is refused. Keys of other different types are refused, where Spark would cast one side (an
//! INT to DOUBLE, a STRING to a number).

use super::error::{SpecError, quote};
use super::sql_query::{at, conjuncts};
use super::steps::PipelineExpr;
use super::validate::same_column;
use super::{JoinKind, StaticJoinKey, StaticJoinSpec, TableSpec};
use crate::expr::{
    BinaryOp, FromSyntax, GroupItemSyntax, JoinTypeSyntax, QuerySyntax, SelectItemSyntax, Syntax, SyntaxKind,
};
use crate::schema::{DataType, Field, Schema};

/// A query with a stream-static join, resolved: the join (its `steps` still empty), the query
/// over the joined columns as one relation named as the source, and the joined schema.
pub(crate) struct ResolvedJoin {
    /// WHERE conjuncts over the stream's columns only that do not mention the watermark column:
    /// filters on the stream's records before the watermark and the join, as Spark's optimizer
    /// pushes them below the join and the watermark (a record they drop moves no watermark).
    pub pushed: Vec<super::Step>,
    /// The join.
    pub join: StaticJoinSpec,
    /// The query over the joined record (no join, no qualifiers).
    pub query: QuerySyntax,
    /// The joined record's schema ([`StaticJoinSpec::output_schema`]).
    pub schema: Schema,
}

/// One side of the join.
pub(super) struct Side<'a> {
    /// The alias, else the name: the qualifier of its columns.
    pub(super) qualifier: String,
    /// Its columns.
    pub(super) schema: &'a Schema,
    /// Where its columns start in the joined record.
    pub(super) offset: usize,
}

/// The joined record's names of the `right` side's columns: a column whose name a column of
/// `left` has too gets its qualifier (`t.col`).
pub(super) fn right_names(left: &Schema, right: &Side<'_>) -> Vec<String> {
    right
        .schema
        .fields()
        .iter()
        .map(|f| match left.fields().iter().any(|s| same_column(&s.name, &f.name)) {
            true => format!("{}.{}", right.qualifier, f.name),
            false => f.name.clone(),
        })
        .collect()
}

/// Resolves the join of `q`, if it has one. `source`: the source's name; `stream`: its schema
/// after the source's steps; `tables`: the `[[table]]`s.
///
/// # Errors
/// A [`SpecError`] at `query.sql` (with the line:column in the text) for a relation that is
/// neither the source nor a table, two tables or the source twice, a join type Spark refuses
/// between a stream and a static table (with Spark's reason), a join without ON or without an
/// equality key, an ON conjunct that is not an equality of a stream column and a table column,
/// keys of different types, a column of both sides written without qualifier, an unknown
/// qualified column; at `table[i].name` for a table the query does not read.
pub(crate) fn resolve(
    q: &QuerySyntax,
    source: &str,
    stream: &Schema,
    tables: &[TableSpec],
    watermark: Option<&str>,
) -> Result<Option<ResolvedJoin>, SpecError> {
    let Some(join) = &q.join else {
        unused_tables(tables, None)?;
        return Ok(None);
    };
    let table_of = |r: &FromSyntax| tables.iter().position(|t| t.name.eq_ignore_ascii_case(&r.name));
    let is_source = |r: &FromSyntax| r.name.eq_ignore_ascii_case(source);
    let names = || {
        let mut n = vec![format!("{source} (the source)")];
        n.extend(tables.iter().map(|t| format!("{} (a table)", t.name)));
        n.join(", ")
    };
    for r in [&q.from, &join.right] {
        if !is_source(r) && table_of(r).is_none() {
            return Err(at(
                r.pos,
                format!("the unknown relation {}", r.name),
                format!("a source or a [[table]]: {}", names()),
            ));
        }
    }
    let (stream_rel, table_rel, stream_left) = match (is_source(&q.from), is_source(&join.right)) {
        (true, false) => (&q.from, &join.right, true),
        (false, true) => (&join.right, &q.from, false),
        (true, true) => {
            return Err(at(
                join.right.pos,
                format!("the source {} joined with itself", join.right.name),
                "the source joined with a [[table]], or two [[source]]s joined with each other (a self-join is not supported)",
            ));
        }
        (false, false) => {
            return Err(at(
                q.from.pos,
                format!("a join of two tables ({} and {})", q.from.name, join.right.name),
                format!("the source {source} joined with a [[table]]"),
            ));
        }
    };
    let table = table_of(table_rel).unwrap_or_default();
    unused_tables(tables, Some(table))?;
    let kind = join_kind(join.kind, stream_left, join.pos)?;
    let qualifier = |r: &FromSyntax| r.alias.clone().unwrap_or_else(|| r.name.clone());
    let t_schema = &tables[table].schema;
    let s_side = Side { qualifier: qualifier(stream_rel), schema: stream, offset: 0 };
    let t_side = Side { qualifier: qualifier(table_rel), schema: t_schema, offset: stream.len() };
    if s_side.qualifier.eq_ignore_ascii_case(&t_side.qualifier) {
        return Err(at(
            join.right.pos,
            format!("the qualifier {} for both sides", t_side.qualifier),
            "distinct names or aliases for the two sides",
        ));
    }
    // the joined columns' names: a table column that a stream column names too gets its qualifier
    let table_names = right_names(stream, &t_side);
    let full: Vec<Field> = stream
        .fields()
        .iter()
        .cloned()
        .chain(
            t_schema.fields().iter().zip(&table_names).map(|(f, n)| Field { name: n.clone(), data_type: f.data_type }),
        )
        .collect();
    let full = Schema::new(full);
    let semi = matches!(kind, JoinKind::LeftSemi | JoinKind::LeftAnti);
    let on = join.on.as_ref().ok_or_else(|| {
        at(
            join.pos,
            format!("{} without ON", join.kind),
            "a join ON equalities of a source column and a table column (an equi-join key)",
        )
    })?;
    super::sql_query::no_aggregate_in_on(on)?;
    let whole = Rewriter { stream: &s_side, table: &t_side, full: &full, table_names: &table_names, table_out: true };
    let (keys, others) = join_keys(&whole.apply(on)?, &full, [stream, t_schema], on)?;
    // the conjuncts over the table's columns only filter the table's rows (Spark pushes them
    // below the join), but for those reading the processing time, which the table's read would
    // fix once; the others join a record with a row
    let table_only = |e: &Syntax| {
        let cols = super::sql_query::columns_of(e);
        !cols.is_empty()
            && cols.iter().all(|n| full.resolve(n).is_some_and(|i| i >= stream.len()))
            && crate::expr::bind(&on_table_columns(e, &full, stream.len(), t_schema), t_schema)
                .is_ok_and(|t| !t.reads_processing_time())
    };
    let (mut on_table, others): (Vec<Syntax>, Vec<Syntax>) = others.into_iter().partition(|e| table_only(e));
    let condition = join_condition(others, &full)?;
    let output = Rewriter { table_out: !semi, ..whole };
    let mut items = Vec::new();
    let (left, right) = if stream_left { (&s_side, &t_side) } else { (&t_side, &s_side) };
    for item in &q.items {
        match item {
            SelectItemSyntax::Expr { syntax, alias } => {
                let rewritten = output.apply(syntax)?;
                // a bare column keeps Spark's name (its own, without the qualifier)
                let alias = alias.clone().or_else(|| match (&syntax.kind, &rewritten.kind) {
                    (SyntaxKind::Column(written), SyntaxKind::Column(now))
                        if written.len() == 2 && now.len() == 1 && now[0].contains('.') =>
                    {
                        Some(written[1].clone())
                    }
                    _ => None,
                });
                items.push(SelectItemSyntax::Expr { syntax: rewritten, alias });
            }
            SelectItemSyntax::Wildcard { qualifier: which, pos } => {
                let sides: Vec<&Side> = match which {
                    None if semi => vec![&s_side],
                    None => vec![left, right],
                    Some(w) if w.eq_ignore_ascii_case(&s_side.qualifier) => vec![&s_side],
                    Some(w) if w.eq_ignore_ascii_case(&t_side.qualifier) && !semi => vec![&t_side],
                    Some(w) => {
                        return Err(at(
                            *pos,
                            format!("{w}.*"),
                            format!(
                                "*, {}.*{}",
                                s_side.qualifier,
                                if semi { String::new() } else { format!(" or {}.*", t_side.qualifier) }
                            ),
                        ));
                    }
                };
                for side in sides {
                    for (i, f) in side.schema.fields().iter().enumerate() {
                        let name = &full.fields()[side.offset + i].name;
                        let syntax = Syntax { kind: SyntaxKind::Column(vec![name.clone()]), pos: *pos };
                        let alias = (name != &f.name).then(|| f.name.clone());
                        items.push(SelectItemSyntax::Expr { syntax, alias });
                    }
                }
            }
        }
    }
    let group_by = q
        .group_by
        .iter()
        .map(|g| match g {
            GroupItemSyntax::Expr(e) => output.apply(e).map(GroupItemSyntax::Expr),
            other => Ok(other.clone()),
        })
        .collect::<Result<Vec<_>, _>>()?;
    let mut selection = q.selection.as_ref().map(|s| output.apply(s)).transpose()?;
    if kind == JoinKind::Inner
        && let Some(where_) = selection.take()
    {
        // an inner join's WHERE conjuncts on the table alone filter the table too (Spark pushes
        // them below the join; after an outer join they would keep or drop the NULL rows)
        let (table, rest): (Vec<Syntax>, Vec<Syntax>) = conjuncts(where_).into_iter().partition(|e| table_only(e));
        on_table.extend(table);
        selection = rest.into_iter().reduce(|l, r| {
            let pos = l.pos;
            Syntax { kind: SyntaxKind::Binary { op: BinaryOp::And, left: Box::new(l), right: Box::new(r) }, pos }
        });
    }
    let table_filter = table_filter(on_table, &full, stream.len(), t_schema)?;
    let (pushed, selection) = push_down(selection, stream, watermark);
    let query = QuerySyntax {
        items,
        from: FromSyntax { name: source.to_string(), alias: None, pos: q.from.pos },
        join: None,
        selection,
        group_by,
        having: q.having.as_ref().map(|s| output.apply(s)).transpose()?,
        union: None,
        subquery: None,
    };
    let mut names: Vec<String> = stream.fields().iter().map(|f| f.name.clone()).collect();
    if !semi {
        names.extend(table_names.iter().cloned());
    }
    let join = StaticJoinSpec {
        kind,
        table,
        table_schema: t_schema.clone(),
        keys,
        condition,
        table_filter,
        names,
        steps: Vec::new(),
    };
    let schema = join.output_schema(stream);
    Ok(Some(ResolvedJoin { pushed, join, query, schema }))
}

/// Splits the (rewritten) WHERE: the conjuncts that read the stream's columns only, do not
/// mention the watermark column and bind as BOOLEAN filters over the stream become filters
/// before the join; the others stay (and are planned, and refused where wrong, as the query's).
fn push_down(
    selection: Option<Syntax>,
    stream: &Schema,
    watermark: Option<&str>,
) -> (Vec<super::Step>, Option<Syntax>) {
    let Some(selection) = selection else { return (Vec::new(), None) };
    let mut pushed = Vec::new();
    let mut kept: Vec<Syntax> = Vec::new();
    for c in conjuncts(selection) {
        let columns = super::sql_query::columns_of(&c);
        let stream_only = !columns.is_empty()
            && columns.iter().all(|n| stream.resolve(n).is_some())
            && !watermark.is_some_and(|w| columns.iter().any(|n| same_column(n, w)));
        let filter = stream_only
            .then(|| crate::expr::bind(&c, stream).ok())
            .flatten()
            .filter(|t| t.data_type == DataType::Boolean);
        match filter {
            Some(typed) => pushed.push(super::Step::Filter(super::PipelineExpr {
                field: "query.sql".into(),
                name: typed.output_name().to_string(),
                typed,
            })),
            None => kept.push(c),
        }
    }
    let kept = kept.into_iter().reduce(|l, r| {
        let pos = l.pos;
        Syntax { kind: SyntaxKind::Binary { op: BinaryOp::And, left: Box::new(l), right: Box::new(r) }, pos }
    });
    (pushed, kept)
}

/// Refuses a `[[table]]` that the query does not read (`used`: the one it joins), as SQL.md
/// "Queries" says.
fn unused_tables(tables: &[TableSpec], used: Option<usize>) -> Result<(), SpecError> {
    match tables.iter().enumerate().find(|(i, _)| Some(*i) != used) {
        None => Ok(()),
        Some((i, t)) => Err(SpecError::bad_str(
            format!("table[{i}].name"),
            &t.name,
            "a table that the SQL query joins (a [[table]] the query does not read is refused)",
        )),
    }
}

/// The join's kind with the stream on the preserved side; what Spark refuses for a stream and a
/// static relation is refused with Spark's reason (`UnsupportedOperationChecker`).
fn join_kind(written: JoinTypeSyntax, stream_left: bool, pos: crate::expr::Pos) -> Result<JoinKind, SpecError> {
    use JoinTypeSyntax as J;
    let refuse = |reason: &str| {
        at(
            pos,
            format!("{written} with the stream on the {} ({reason})", if stream_left { "left" } else { "right" }),
            "the source [INNER | LEFT [OUTER] | LEFT SEMI | LEFT ANTI] JOIN a table, or a table [INNER | RIGHT [OUTER]] JOIN the source, as Spark",
        )
    };
    Ok(match (written, stream_left) {
        (J::Inner, _) => JoinKind::Inner,
        (J::LeftOuter, true) | (J::RightOuter, false) => JoinKind::LeftOuter,
        (J::LeftSemi, true) => JoinKind::LeftSemi,
        (J::LeftAnti, true) => JoinKind::LeftAnti,
        (J::RightOuter, true) => {
            return Err(refuse(
                "Spark: RightOuter join with a streaming DataFrame/Dataset on the left and a static DataFrame/DataSet on the right not supported",
            ));
        }
        (J::FullOuter, true) => {
            return Err(refuse(
                "Spark: FullOuter joins with streaming DataFrames/Datasets on the left and a static DataFrame/Dataset on the right is not supported",
            ));
        }
        (J::FullOuter, false) => {
            return Err(refuse(
                "Spark: FullOuter joins with streaming DataFrames/Datasets on the right and a static DataFrame/Dataset on the left is not supported",
            ));
        }
        (J::LeftAnti, false) => {
            return Err(refuse(
                "Spark: LeftAnti joins with a streaming DataFrame/Dataset on the right are not supported",
            ));
        }
        (J::LeftOuter | J::LeftSemi, false) => {
            let spark = if written == J::LeftOuter { "LeftOuter" } else { "LeftSemi" };
            return Err(refuse(&format!(
                "Spark: {spark} join with a streaming DataFrame/Dataset on the right and a static DataFrame/Dataset on the left is not supported"
            )));
        }
        (J::Cross, _) => {
            return Err(at(
                pos,
                "CROSS JOIN (a join without an equality key)",
                "a join ON equalities of a source column and a table column (an equi-join key)",
            ));
        }
    })
}

/// The equality keys of the (rewritten) ON condition `on`, over the joined row `full` (the
/// stream's columns then the table's, of schemas `sides`): each conjunct `a = b` of an
/// expression reading stream columns only and one reading table columns only (a column each,
/// usually), of one type or of two that widen to one ([`crate::expr::join_key_type`]); and the
/// other conjuncts, in order (the join's condition over the joined row, as Spark's
/// `ExtractEquiJoinKeys` leaves them). `written`: the condition as written, for messages.
fn join_keys(
    on: &Syntax,
    full: &Schema,
    sides: [&Schema; 2],
    written: &Syntax,
) -> Result<(Vec<StaticJoinKey>, Vec<Syntax>), SpecError> {
    let allowed = "ON stream_expression = table_expression [AND ...]: at least one equality of an expression over source columns (a column, usually) and one over table columns (the join keys), and any other conditions";
    let stream_len = sides[0].len();
    let mut keys = Vec::new();
    let mut others = Vec::new();
    for c in conjuncts(on.clone()) {
        // the one side whose columns `e` reads, if it reads any and all of one side
        let side_of = |e: &Syntax| -> Option<usize> {
            let cols: Vec<usize> =
                super::sql_query::columns_of(e).iter().map(|n| full.resolve(n)).collect::<Option<_>>()?;
            let first = usize::from(*cols.first()? >= stream_len);
            cols.iter().all(|&i| usize::from(i >= stream_len) == first).then_some(first)
        };
        let (pair, null_safe) = match &c.kind {
            SyntaxKind::Binary { op: op @ (BinaryOp::Eq | BinaryOp::NullSafeEq), left, right } => {
                let pair = match (side_of(left), side_of(right)) {
                    (Some(0), Some(1)) => Some((left, right)),
                    (Some(1), Some(0)) => Some((right, left)),
                    _ => None,
                };
                (pair, *op == BinaryOp::NullSafeEq)
            }
            _ => (None, false),
        };
        let Some((s, t)) = pair else {
            others.push(c);
            continue;
        };
        // each side's expression over its own columns' names
        let own = |e: &Syntax, side: usize| -> Result<PipelineExpr, SpecError> {
            let offset = if side == 0 { 0 } else { stream_len };
            let schema = sides[side];
            let renamed = super::sql_stream_join::renamed(e, &|name| {
                full.resolve(name).map(|i| schema.fields()[i - offset].name.clone())
            });
            super::sql_query::project(&renamed, None, schema)
        };
        let (mut s, mut t) = (own(s, 0)?, own(t, 1)?);
        let (st, tt) = (s.typed.data_type, t.typed.data_type);
        let Some(compare_as) = crate::expr::join_key_type(st, tt) else {
            return Err(at(
                c.pos,
                format!("join keys of two types: {} {st} and {} {tt}", quote(&s.name), quote(&t.name)),
                "keys of one type, of two numeric types, of DATE and TIMESTAMP, or a STRING and a number, BOOLEAN, DATE or TIMESTAMP (CAST one of them)",
            ));
        };
        if null_safe {
            // `s <=> t`: NULL matches NULL (Spark's two keys, `crate::expr::null_safe_keys`)
            let halves = crate::expr::null_safe_keys(s.typed.clone(), t.typed.clone(), compare_as)
                .ok_or_else(|| at(c.pos, format!("<=> of {} values", compare_as), "<=> of a scalar type, or = "))?;
            for (a, b) in halves {
                let named = |typed: crate::expr::Typed, like: &PipelineExpr| PipelineExpr {
                    field: like.field.clone(),
                    name: typed.name.clone(),
                    typed,
                };
                keys.push(StaticJoinKey { stream: named(a, &s), table: named(b, &t) });
            }
            continue;
        }
        for e in [&mut s, &mut t] {
            if e.typed.data_type != compare_as {
                e.typed = crate::expr::implicit_cast(e.typed.clone(), compare_as);
            }
        }
        keys.push(StaticJoinKey { stream: s, table: t });
    }
    if keys.is_empty() {
        return Err(match others.first() {
            Some(c) => at(
                c.pos,
                "a join without an equality of a source expression and a table expression (an equi-join key)",
                allowed,
            ),
            None => at(written.pos, "a join without an equality key", allowed),
        });
    }
    Ok((keys, others))
}

/// The ON conjuncts other than the keys (rewritten onto the joined row `full`), AND-ed into
/// one BOOLEAN condition over the joined row; `None` when there are none.
///
/// # Errors
/// At `query.sql`: a conjunct that does not bind over the joined row, or is not BOOLEAN.
fn join_condition(others: Vec<Syntax>, full: &Schema) -> Result<Option<PipelineExpr>, SpecError> {
    let Some(all) = others.into_iter().reduce(|a, b| {
        let pos = a.pos;
        Syntax { kind: SyntaxKind::Binary { op: BinaryOp::And, left: Box::new(a), right: Box::new(b) }, pos }
    }) else {
        return Ok(None);
    };
    let e = super::sql_query::project(&all, None, full)?;
    if e.typed.data_type != DataType::Boolean {
        return Err(at(
            all.pos,
            format!("the join condition {} of type {}", quote(&e.name), e.typed.data_type),
            "a BOOLEAN condition",
        ));
    }
    Ok(Some(e))
}

/// The ON conjuncts over the table's columns only (written over the joined row `full`, whose
/// table columns start at `offset`), AND-ed into one BOOLEAN condition over the table's own
/// columns (`table`); `None` when there are none.
///
/// # Errors
/// As [`join_condition`].
fn table_filter(
    conjuncts: Vec<Syntax>,
    full: &Schema,
    offset: usize,
    table: &Schema,
) -> Result<Option<PipelineExpr>, SpecError> {
    let own: Vec<Syntax> = conjuncts.iter().map(|e| on_table_columns(e, full, offset, table)).collect();
    join_condition(own, table)
}

/// `e`, written over the joined row `full` and reading the table's columns only (from `offset`
/// on), written over the table's own columns (`table`).
fn on_table_columns(e: &Syntax, full: &Schema, offset: usize, table: &Schema) -> Syntax {
    super::sql_stream_join::renamed(e, &|name| {
        full.resolve(name).and_then(|i| i.checked_sub(offset)).map(|i| table.fields()[i].name.clone())
    })
}

/// Rewrites column references onto the joined record's column names. `stream` is the side
/// whose columns come first (a stream-stream join's left relation), `table` the other.
pub(super) struct Rewriter<'a> {
    pub(super) stream: &'a Side<'a>,
    pub(super) table: &'a Side<'a>,
    /// The joined columns (the table's whatever the join type: ON reads them).
    pub(super) full: &'a Schema,
    /// The table's columns' names in the joined record.
    pub(super) table_names: &'a [String],
    /// Whether the table's columns are in the output (not for semi and anti joins).
    pub(super) table_out: bool,
}

impl Rewriter<'_> {
    pub(super) fn apply(&self, s: &Syntax) -> Result<Syntax, SpecError> {
        let SyntaxKind::Column(parts) = &s.kind else {
            return s.try_map_children(&mut |c| self.apply(c));
        };
        let column = |parts: Vec<String>| Ok(Syntax { kind: SyntaxKind::Column(parts), pos: s.pos });
        let stream_has = |name: &str| self.stream.schema.resolve(name).is_some();
        let table_has = |name: &str| self.table.schema.resolve(name);
        if parts.len() >= 2 {
            let (q, name) = (&parts[0], &parts[1]);
            if q.eq_ignore_ascii_case(&self.stream.qualifier) {
                if !stream_has(name) {
                    return Err(self.unknown(s, parts));
                }
                return column(parts[1..].to_vec());
            }
            if q.eq_ignore_ascii_case(&self.table.qualifier) {
                let Some(i) = table_has(name) else { return Err(self.unknown(s, parts)) };
                if !self.table_out {
                    return Err(at(
                        s.pos,
                        format!("the right side's column {} after a semi or anti join", parts.join(".")),
                        "the left side's columns only (a LEFT SEMI / LEFT ANTI join outputs the left side's)",
                    ));
                }
                let mut out =
                    vec![if self.table_names[i].contains('.') { format!("{q}.{name}") } else { name.clone() }];
                out.extend(parts[2..].iter().cloned());
                return column(out);
            }
        }
        let name = &parts[0];
        match (stream_has(name), table_has(name).is_some() && self.table_out) {
            (true, true) => Err(at(
                s.pos,
                format!("the column {} of both sides (AMBIGUOUS_REFERENCE)", quote(name)),
                format!("a qualified name: {}.{name} or {}.{name}", self.stream.qualifier, self.table.qualifier),
            )),
            _ => column(parts.clone()),
        }
    }

    fn unknown(&self, s: &Syntax, parts: &[String]) -> SpecError {
        at(
            s.pos,
            format!("the unknown column {}", quote(&parts.join("."))),
            format!("a column of the joined relations: {}", self.full.names()),
        )
    }
}
