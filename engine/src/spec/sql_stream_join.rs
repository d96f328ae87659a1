//! A SQL query's stream-stream join (SQL.md "Queries", SEMANTICS.md "Joins"): `FROM a JOIN b ON
//! ...` where `a` and `b` are the pipeline's two sources, resolved into a
//! [`QuerySpec::StreamJoin`](super::QuerySpec::StreamJoin), a projection of each source's
//! records into the join's wide record, and a single-relation query over the joined row.
//!
//! The wide record ([`StreamJoinSpec`]): the join keys (each source computes its own side's, so
//! both sides are routed to one partition actor by one set of columns), a side marker, the left
//! relation's columns, the right's. The joined row is the left's columns then the right's, named
//! as in a stream-static join (`sql_join`): a right column whose name a left column has too is
//! `qualifier.col`; `SELECT *` lists left then right, as Spark.
//!
//! The ON condition is split, as Spark's planner splits it:
//! - equalities of an expression over left columns and one over right columns (a column each,
//!   usually): the join keys (at least one; a join without one is refused, as Spark); keys of two
//!   types that widen to one compare as the wider, as Spark casts both sides of `=`;
//! - comparisons of the two sides' watermarked (event-time) columns, each possibly shifted by an
//!   interval, and `BETWEEN` of them: the time range ([`super::join_range`]) that lets the
//!   watermark evict state and decides when an outer join's NULL row is due;
//! - anything else: for an inner join, a filter on the joined rows (as WHERE); for an outer or
//!   semi join it would change which rows match, and is refused.
//!
//! What Spark's `UnsupportedOperationChecker` refuses between two streams is refused with its
//! reason: a left anti join; an outer or semi join without watermarks and a time range that
//! bounds the preserved side's rows (an upper bound on `r - l` for left outer and left semi, a
//! lower one for right outer, both for full outer). Stricter than Spark: Spark also accepts an
//! outer join whose only bound is a watermark in the join keys, or one side's watermark with a
//! range; keys of two types that do not widen to one (a STRING and a number: Spark casts the
//! string), and other ON conditions of an outer or semi join (Spark runs them as part of the
//! match) are refused. A null-safe key `l.k <=> r.k` is Spark's two keys: `isnull` of each side
//! and each side's value or a default ([`crate::expr::null_safe_keys`]), so NULL matches NULL.

use super::StreamJoinSpec;
use super::error::{SpecError, quote};
use super::join_range::time_range;
use super::sql_join::{Rewriter, Side, right_names};
use super::sql_query::{at, conjuncts};
use super::steps::{PipelineExpr, Step};
use crate::expr::{
    BinaryOp, FromSyntax, GroupItemSyntax, JoinTypeSyntax, Node, QuerySyntax, SelectItemSyntax, Syntax, SyntaxKind,
    Typed,
};
use crate::operator::StreamJoinType;
use crate::schema::{DataType, Field, Schema};
use crate::value::Value;

/// The field the join's projections are named by (`eddy explain`).
const JOIN_FIELD: &str = "query.sql JOIN";

/// The wide record's column that the replay clock reads (`[clock] column` of each source).
pub(crate) const JOIN_CLOCK: &str = "__join_clock";

/// A stream-stream join resolved against the pipeline's two sources.
pub(crate) struct ResolvedStreamJoin {
    /// For each source (pipeline order), the WHERE conjuncts that run on its records before its
    /// watermark (see [`resolve`]), over its columns.
    pub pushed: [Vec<Step>; 2],
    /// For each source (pipeline order), the projection of its records into the wide record.
    pub steps: [Step; 2],
    /// The wide record's columns (what the watermarks and the join read).
    pub wide: Schema,
    /// The join.
    pub spec: StreamJoinSpec,
    /// The query over the joined row (no join, no qualifiers), named as the left source.
    pub query: QuerySyntax,
    /// The joined row's columns.
    pub joined: Schema,
    /// Each source's watermark column (pipeline order), by its name in the wide record, with
    /// its index there.
    pub watermarks: [Option<(String, usize)>; 2],
}

/// One of the two sources: its name, its columns after its own steps, its watermark column.
pub(crate) struct JoinSource<'a> {
    pub name: &'a str,
    pub schema: &'a Schema,
    pub watermark: Option<&'a str>,
}

/// Resolves the stream-stream join of `q` (which has a join whose two relations are `sources`).
///
/// # Errors
/// A [`SpecError`] at `query.sql` with the line:column of: a relation that is not one of the two
/// sources, or one source twice; a join type Spark refuses between two streams (with Spark's
/// reason); a join without ON or without an equality key; keys of different types; for an outer or
/// semi join, a side without a watermark, a time range not bounded both ways, or another condition
/// in ON; an ambiguous or unknown column.
pub(crate) fn resolve(
    q: &QuerySyntax,
    sources: [JoinSource<'_>; 2],
    clock: Option<&str>,
) -> Result<ResolvedStreamJoin, SpecError> {
    let Some(join) = &q.join else {
        return Err(at(q.from.pos, "a query without JOIN over two sources", "a join or a union of the two sources"));
    };
    let which = |r: &FromSyntax| sources.iter().position(|s| s.name.eq_ignore_ascii_case(&r.name));
    let names = || sources.iter().map(|s| s.name).collect::<Vec<_>>().join(", ");
    let mut order = [0usize; 2];
    for (i, r) in [&q.from, &join.right].into_iter().enumerate() {
        order[i] = which(r).ok_or_else(|| {
            at(r.pos, format!("the unknown relation {}", r.name), format!("one of the sources: {}", names()))
        })?;
    }
    if order[0] == order[1] {
        return Err(at(
            join.right.pos,
            format!("the source {} joined with itself", join.right.name),
            format!("a join of the two sources ({})", names()),
        ));
    }
    let join_type = join_type(join.kind, join.pos)?;
    let (left_src, right_src) = (&sources[order[0]], &sources[order[1]]);
    let qualifier = |r: &FromSyntax| r.alias.clone().unwrap_or_else(|| r.name.clone());
    let left = Side { qualifier: qualifier(&q.from), schema: left_src.schema, offset: 0 };
    let right = Side { qualifier: qualifier(&join.right), schema: right_src.schema, offset: left_src.schema.len() };
    if left.qualifier.eq_ignore_ascii_case(&right.qualifier) {
        return Err(at(
            join.right.pos,
            format!("the qualifier {} for both sides", right.qualifier),
            "distinct names or aliases for the two sides",
        ));
    }
    let rnames = right_names(left.schema, &right);
    let full = Schema::new(
        left.schema
            .fields()
            .iter()
            .cloned()
            .chain(
                right
                    .schema
                    .fields()
                    .iter()
                    .zip(&rnames)
                    .map(|(f, n)| Field { name: n.clone(), data_type: f.data_type }),
            )
            .collect(),
    );
    let semi = join_type == StreamJoinType::LeftSemi;
    let l_len = left.schema.len();
    let on = join.on.as_ref().ok_or_else(|| {
        at(join.pos, format!("{} without ON", join.kind), "a join ON equalities of a left column and a right column")
    })?;
    super::sql_query::no_aggregate_in_on(on)?;
    let whole = Rewriter { stream: &left, table: &right, full: &full, table_names: &rnames, table_out: true };
    let on_rewritten = whole.apply(on)?;
    // each side's watermarked column in the joined row
    let time_col =
        |s: &JoinSource<'_>, offset: usize| s.watermark.and_then(|w| s.schema.resolve(w)).map(|c| c + offset);
    let times = [time_col(left_src, 0), time_col(right_src, l_len)];
    let all = conjuncts(on_rewritten);
    let mut keys: Vec<JoinKey> = Vec::new();
    let mut rest: Vec<&Syntax> = Vec::new();
    for c in &all {
        match join_key(c, &full, [&left, &right], times)? {
            Some(k) => keys.extend(k),
            None => rest.push(c),
        }
    }
    if keys.is_empty() {
        return Err(at(
            on.pos,
            "a join without an equality key of a column of each side",
            "ON left_expression = right_expression [AND ...]: an equality (or <=>) of an expression over one side's columns and one over the other's, such as l.k = r.k (Spark refuses a stream-stream join without any equi-join key)",
        ));
    }
    let side_of = |parts: &[String]| -> Option<usize> {
        let [name] = parts else { return None };
        let i = full.resolve(name)?;
        times.iter().position(|t| *t == Some(i))
    };
    let (range, used) = match (times, time_range(&rest, &side_of)) {
        ([Some(_), Some(_)], Some((r, used))) => (Some(r), used),
        _ => (None, Vec::new()),
    };
    let others: Vec<Syntax> =
        rest.iter().enumerate().filter(|(i, _)| !used.contains(i)).map(|(_, c)| (*c).clone()).collect();
    if join_type != StreamJoinType::Inner {
        outer_requirements(join, join_type, times, range, &others)?;
    }
    // the query over the joined row: the inner join's other ON conditions join WHERE
    let output = Rewriter { table_out: !semi, ..whole };
    let mut items = Vec::new();
    for item in &q.items {
        match item {
            SelectItemSyntax::Expr { syntax, alias } => {
                let rewritten = output.apply(syntax)?;
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
            SelectItemSyntax::Wildcard { qualifier: w, pos } => {
                let sides: Vec<&Side> = match w {
                    None if semi => vec![&left],
                    None => vec![&left, &right],
                    Some(w) if w.eq_ignore_ascii_case(&left.qualifier) => vec![&left],
                    Some(w) if w.eq_ignore_ascii_case(&right.qualifier) && !semi => vec![&right],
                    Some(w) => {
                        return Err(at(
                            *pos,
                            format!("{w}.*"),
                            format!("*, {}.* or {}.*", left.qualifier, right.qualifier),
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
    let selection = q.selection.as_ref().map(|s| output.apply(s)).transpose()?;
    // conjuncts over one side's columns that do not mention its watermarked column run on that
    // source's records before its watermark and the join, as Spark's optimizer pushes them below
    // the join and the watermark (a record they drop moves no watermark): either side's for an
    // inner join, the preserved side's for an outer or semi join, none for a full outer join
    let mut pushed: [Vec<Step>; 2] = [Vec::new(), Vec::new()];
    // A row with a NULL key matches nothing: on a side whose unmatched rows are not emitted,
    // Spark's optimizer infers `key IS NOT NULL` from the equality (InferFiltersFromConstraints)
    // and pushes it below the watermark too, so such rows move no watermark
    for s in (0..2).filter(|&s| !join_type.preserves(s)) {
        let own = if s == 0 { left.schema } else { right.schema };
        let idx = if order[0] == 0 { s } else { 1 - s };
        // (a null-safe key's rows with a NULL match: nothing to infer)
        for key in keys.iter().filter(|k| !k.null_safe) {
            let expr = Box::new(key.own[s].clone());
            let not_null = Syntax { kind: SyntaxKind::IsNull { expr, negated: true }, pos: on.pos };
            pushed[idx].push(super::sql_query::filter(&not_null, own)?);
        }
    }
    let mut kept = Vec::new();
    for c in others.into_iter().chain(selection.into_iter().flat_map(conjuncts)) {
        let cols: Vec<usize> = super::sql_query::columns_of(&c).iter().filter_map(|n| full.resolve(n)).collect();
        let side = match cols.first() {
            Some(&first) => {
                let s = usize::from(first >= l_len);
                cols.iter().all(|&i| usize::from(i >= l_len) == s).then_some(s)
            }
            None => None,
        };
        let pushable = side.filter(|&s| {
            let allowed = match join_type {
                StreamJoinType::Inner => true,
                StreamJoinType::LeftOuter | StreamJoinType::LeftSemi => s == 0,
                StreamJoinType::RightOuter => s == 1,
                StreamJoinType::FullOuter => false,
            };
            allowed && !cols.iter().any(|&i| Some(i) == times[s])
        });
        match pushable {
            Some(s) => {
                let (own, offset) = if s == 0 { (left.schema, 0) } else { (right.schema, l_len) };
                let renamed = renamed(&c, &|name| full.resolve(name).map(|i| own.fields()[i - offset].name.clone()));
                let idx = if order[0] == 0 { s } else { 1 - s };
                pushed[idx].push(super::sql_query::filter(&renamed, own)?);
            }
            None => kept.push(c),
        }
    }
    let selection = kept.into_iter().reduce(|l, r| {
        let pos = l.pos;
        Syntax { kind: SyntaxKind::Binary { op: BinaryOp::And, left: Box::new(l), right: Box::new(r) }, pos }
    });
    let query = QuerySyntax {
        items,
        from: FromSyntax { name: left_src.name.to_string(), alias: None, pos: q.from.pos },
        join: None,
        selection,
        group_by,
        having: q.having.as_ref().map(|s| output.apply(s)).transpose()?,
        union: None,
        subquery: None,
    };
    // the wide record: keys, side, left columns, right columns
    let n = keys.len();
    let widths = [l_len, right.schema.len()];
    let mut wide: Vec<Field> = keys
        .iter()
        .enumerate()
        .map(|(k, key)| Field { name: format!("__join_key{k}"), data_type: key.compare_as })
        .collect();
    wide.push(Field { name: "__join_side".into(), data_type: DataType::Int });
    wide.extend(full.fields().iter().cloned());
    // the replay clock's column: each source's own, in one column after both sides'
    let clock_cols = match clock {
        None => None,
        Some(c) => {
            let find = |s: &JoinSource<'_>| {
                s.schema.resolve(c).filter(|&i| s.schema.fields()[i].data_type == DataType::Timestamp)
            };
            match (find(left_src), find(right_src)) {
                (Some(a), Some(b)) => Some((a, b + l_len)),
                _ => {
                    return Err(SpecError::bad_str(
                        "clock.column",
                        c,
                        format!(
                            "a TIMESTAMP column both joined sources have ({} and {}): each source's records advance the replay clock by their own",
                            left_src.name, right_src.name
                        ),
                    ));
                }
            }
        }
    };
    if clock_cols.is_some() {
        wide.push(Field { name: JOIN_CLOCK.into(), data_type: DataType::Timestamp });
    }
    let wide = Schema::new(wide);
    let projection = |side: usize| -> Step {
        let (own, offset) = if side == 0 { (0..l_len, 0) } else { (l_len..full.len(), l_len) };
        let column = |c: usize, name: &str| PipelineExpr {
            field: JOIN_FIELD.into(),
            typed: Typed {
                node: Node::Column(c - offset),
                data_type: full.fields()[c].data_type,
                name: name.to_string(),
            },
            name: name.to_string(),
        };
        let constant = |value: Value, data_type: DataType, name: &str| PipelineExpr {
            field: JOIN_FIELD.into(),
            typed: Typed { node: Node::Literal(value), data_type, name: name.to_string() },
            name: name.to_string(),
        };
        let mut list = Vec::with_capacity(wide.len());
        for (k, key) in keys.iter().enumerate() {
            let typed = key.typed[side].clone();
            // the side whose value is narrower is cast to the type the key compares as
            let typed = if typed.data_type == key.compare_as {
                typed
            } else {
                crate::expr::implicit_cast(typed, key.compare_as)
            };
            let name = format!("__join_key{k}");
            list.push(PipelineExpr { field: JOIN_FIELD.into(), typed, name });
        }
        list.push(constant(Value::Int(side as i32), DataType::Int, "__join_side"));
        for (c, f) in full.fields().iter().enumerate() {
            list.push(if own.contains(&c) { column(c, &f.name) } else { constant(Value::Null, f.data_type, &f.name) });
        }
        if let Some((a, b)) = clock_cols {
            list.push(column(if side == 0 { a } else { b }, JOIN_CLOCK));
        }
        Step::Project(list)
    };
    let at_wide = |c: Option<usize>| c.map(|c| c + n + 1);
    let spec = StreamJoinSpec {
        join_type,
        keys: n,
        widths,
        times: [at_wide(times[0]).unwrap_or(n + 1), at_wide(times[1]).unwrap_or(n + 1 + l_len)],
        watermarked: [times[0].is_some(), times[1].is_some()],
        range,
        sides: if order[0] == 0 { [0, 1] } else { [1, 0] },
        key_columns: keys
            .iter()
            .map(|k| {
                // a column holding the value compared (not an expression, nor a narrower type)
                let as_compared = |c: Option<usize>| c.filter(|&c| full.fields()[c].data_type == k.compare_as);
                (as_compared(k.columns[0]), as_compared(k.columns[1]))
            })
            .collect(),
    };
    let joined = Schema::new(wide.fields()[spec.output_columns()].to_vec());
    let mut steps = [projection(0), projection(1)];
    let mut watermarks = [
        at_wide(times[0]).map(|i| (wide.fields()[i].name.clone(), i)),
        at_wide(times[1]).map(|i| (wide.fields()[i].name.clone(), i)),
    ];
    if order[0] != 0 {
        steps.swap(0, 1);
        watermarks.swap(0, 1);
    }
    Ok(ResolvedStreamJoin { pushed, steps, wide, spec, query, joined, watermarks })
}

/// `s` with each single-name column reference renamed by `to` (unchanged where it gives none).
pub(super) fn renamed(s: &Syntax, to: &dyn Fn(&str) -> Option<String>) -> Syntax {
    match &s.kind {
        SyntaxKind::Column(parts) if parts.len() == 1 => {
            Syntax { kind: SyntaxKind::Column(vec![to(&parts[0]).unwrap_or_else(|| parts[0].clone())]), pos: s.pos }
        }
        _ => match s.try_map_children::<std::convert::Infallible>(&mut |c| Ok(renamed(c, to))) {
            Ok(s) => s,
            Err(never) => match never {},
        },
    }
}

/// One equality key of the join, `left = right` in ON.
struct JoinKey {
    /// Each side's expression (0 left, 1 right) over that side's own columns (named as in its
    /// source).
    own: [Syntax; 2],
    /// The same, typed against the side's schema.
    typed: [Typed; 2],
    /// Where a side's expression is a bare column: its index in the joined row.
    columns: [Option<usize>; 2],
    /// The type both values are compared as: theirs, or the wider of two types as Spark's
    /// coercion of `=` makes it ([`crate::expr::join_key_type`]).
    compare_as: DataType,
    /// One of the two keys of a null-safe equality `<=>` ([`crate::expr::null_safe_keys`]):
    /// never NULL, so nothing is inferred from it.
    null_safe: bool,
}

/// `c` (over the joined row's column names) as a join key: an equality of an expression that
/// reads columns of one side only and one that reads columns of the other side only, either
/// way round (`l.k = r.k`, `lower(l.user) = r.user`, `l.id = r.id + 1`); `None` for any other
/// condition (a comparison, an equality within one side or with a constant), and for an
/// expression over a side's watermarked column (`times`, in the joined row), such as `r.rt =
/// l.lt + INTERVAL 5 SECONDS`: that is a time range, not a key ([`super::join_range`]).
///
/// # Errors
/// A [`SpecError`] at `c`'s line:column for keys of two types that do not widen to one, or an
/// expression that does not type.
fn join_key(
    c: &Syntax,
    full: &Schema,
    sides: [&Side<'_>; 2],
    times: [Option<usize>; 2],
) -> Result<Option<Vec<JoinKey>>, SpecError> {
    let SyntaxKind::Binary { op: op @ (BinaryOp::Eq | BinaryOp::NullSafeEq), left, right } = &c.kind else {
        return Ok(None);
    };
    let l_len = sides[0].schema.len();
    // the one side whose columns `e` reads, if it reads any and all of one side
    let side_of = |e: &Syntax| -> Option<usize> {
        let cols: Vec<usize> =
            super::sql_query::columns_of(e).iter().map(|n| full.resolve(n)).collect::<Option<_>>()?;
        let first = usize::from(*cols.first()? >= l_len);
        cols.iter().all(|&i| usize::from(i >= l_len) == first).then_some(first)
    };
    let (l, r) = match (side_of(left), side_of(right)) {
        (Some(0), Some(1)) => (left.as_ref(), right.as_ref()),
        (Some(1), Some(0)) => (right.as_ref(), left.as_ref()),
        _ => return Ok(None),
    };
    let bare = |e: &Syntax| matches!(&e.kind, SyntaxKind::Column(parts) if parts.len() == 1);
    let reads_time = |e: &Syntax| {
        super::sql_query::columns_of(e).iter().any(|n| full.resolve(n).is_some_and(|i| times.contains(&Some(i))))
    };
    if [l, r].into_iter().any(|e| !bare(e) && reads_time(e)) {
        return Ok(None);
    }
    let on_side = |e: &Syntax, s: usize| -> Result<(Syntax, Typed, Option<usize>), SpecError> {
        let (own, offset) = (sides[s].schema, sides[s].offset);
        let renamed = renamed(e, &|name| full.resolve(name).map(|i| own.fields()[i - offset].name.clone()));
        let typed = crate::expr::bind(&renamed, own).map_err(super::sql_query::sql_error)?;
        let column = match &e.kind {
            SyntaxKind::Column(parts) if parts.len() == 1 => full.resolve(&parts[0]),
            _ => None,
        };
        Ok((renamed, typed, column))
    };
    let ((lo, lt, lc), (ro, rt, rc)) = (on_side(l, 0)?, on_side(r, 1)?);
    // "join keys of {what}: "k" INT and "n" BIGINT", at the equality
    let keys_of = |what: &str, allowed: &str| {
        let (l, r) = (quote(&lt.name), quote(&rt.name));
        at(c.pos, format!("join keys of {what}: {l} {} and {r} {}", lt.data_type, rt.data_type), allowed)
    };
    if lt.data_type != rt.data_type && lt.data_type.same_ignoring_names(rt.data_type) {
        // (a stream-static join runs them, as Spark's batch join does)
        return Err(keys_of(
            "structs whose field names differ",
            "structs of the same field names on both sides (named_struct('x', ...) on each), as Spark's stream-stream join fails on others (\"Join keys from two sides should have same length and types\")",
        ));
    }
    let compare_as = crate::expr::join_key_type(lt.data_type, rt.data_type).ok_or_else(|| {
        keys_of(
            "two types",
            "keys of one type, of two numeric types, of DATE and TIMESTAMP, or a STRING and a number, BOOLEAN, DATE or TIMESTAMP (CAST one of them)",
        )
    })?;
    if *op == BinaryOp::NullSafeEq {
        // `l <=> r`: NULL matches NULL (Spark's two keys)
        let halves = crate::expr::null_safe_keys(lt, rt, compare_as)
            .ok_or_else(|| at(c.pos, format!("<=> of {compare_as} values"), "<=> of a scalar type, or ="))?;
        return Ok(Some(
            halves
                .into_iter()
                .map(|(a, b)| JoinKey {
                    own: [lo.clone(), ro.clone()],
                    compare_as: a.data_type,
                    typed: [a, b],
                    columns: [None, None],
                    null_safe: true,
                })
                .collect(),
        ));
    }
    Ok(Some(vec![JoinKey { own: [lo, ro], typed: [lt, rt], columns: [lc, rc], compare_as, null_safe: false }]))
}

/// The join types Spark runs between two streams; left anti and cross are refused.
fn join_type(written: JoinTypeSyntax, pos: crate::expr::Pos) -> Result<StreamJoinType, SpecError> {
    use JoinTypeSyntax as J;
    Ok(match written {
        J::Inner => StreamJoinType::Inner,
        J::LeftOuter => StreamJoinType::LeftOuter,
        J::RightOuter => StreamJoinType::RightOuter,
        J::FullOuter => StreamJoinType::FullOuter,
        J::LeftSemi => StreamJoinType::LeftSemi,
        J::LeftAnti => {
            return Err(at(
                pos,
                "LEFT ANTI JOIN of two sources (Spark: LeftAnti join between two streaming DataFrames/Datasets is not supported)",
                "[INNER | LEFT [OUTER] | RIGHT [OUTER] | FULL [OUTER] | LEFT SEMI] JOIN between two sources",
            ));
        }
        J::Cross => {
            return Err(at(
                pos,
                "CROSS JOIN of two sources (a join without an equality key)",
                "a join ON equalities of a left column and a right column",
            ));
        }
    })
}

/// An outer or semi join needs both sides' watermarks and a time range that bounds the preserved
/// side's rows (so that they leave the state and an outer join's NULL rows are emitted), and
/// nothing else in ON.
fn outer_requirements(
    join: &crate::expr::JoinSyntax,
    join_type: StreamJoinType,
    times: [Option<usize>; 2],
    range: Option<crate::operator::TimeRange>,
    others: &[Syntax],
) -> Result<(), SpecError> {
    let spark = match join_type {
        StreamJoinType::LeftSemi => "LeftSemi",
        StreamJoinType::LeftOuter => "LeftOuter",
        StreamJoinType::RightOuter => "RightOuter",
        _ => "FullOuter",
    };
    let reason = format!(
        "Spark: Stream-stream {spark} join between two streaming DataFrame/Datasets is not supported without a watermark in the join keys, or a watermark on the nullable side and an appropriate range condition"
    );
    let allowed = "a watermark on both sources, and ON keys AND a time range between their watermarked columns that bounds the preserved side's rows (r.ts BETWEEN l.ts AND l.ts + INTERVAL ...)";
    if times.iter().any(Option::is_none) {
        return Err(at(join.pos, format!("{} without a watermark on both sources ({reason})", join.kind), allowed));
    }
    // the preserved side's rows must leave the state (their NULL rows are due then): a left row
    // at t leaves once W passes t + upper, a right row once W passes t - lower
    let bounded =
        |side: usize| range.is_some_and(|r| if side == 0 { r.upper.0 < i64::MAX } else { r.lower.0 > i64::MIN });
    let needed: &[usize] = match join_type {
        StreamJoinType::LeftOuter | StreamJoinType::LeftSemi => &[0],
        StreamJoinType::RightOuter => &[1],
        _ => &[0, 1],
    };
    if !needed.iter().all(|&s| bounded(s)) {
        let bound = match needed {
            [0] => "an upper bound on the right time (r.ts <= l.ts + INTERVAL ...)",
            [1] => "a lower bound on the right time (r.ts >= l.ts - INTERVAL ...)",
            _ => "a bound each way (r.ts BETWEEN l.ts - INTERVAL ... AND l.ts + INTERVAL ...)",
        };
        return Err(at(
            join.pos,
            format!("{} without {bound} between the watermarked columns ({reason})", join.kind),
            allowed,
        ));
    }
    if let Some(c) = others.first() {
        return Err(at(
            c.pos,
            format!("a condition other than the keys and the time range in the ON of {}", join.kind),
            "ON keys AND the time range only (Spark runs another condition as part of the match; Eddy does not yet for outer and semi joins)",
        ));
    }
    Ok(())
}
