//! Queries (SQL.md "Queries"): one `SELECT` statement over one source, or a union of SELECTs
//! (`UNION ALL` / `UNION`, at the top or in `FROM ( ... ) [AS] alias`), lowered into the
//! engine's [`QuerySyntax`]. What Eddy does not run yet is refused here, naming it, at its
//! position: ORDER BY, LIMIT, DISTINCT ON, WITH, window functions (OVER), `count(DISTINCT ...)`,
//! other subqueries, more than one join, joins with USING or NATURAL, EXCEPT, INTERSECT, a mix of
//! UNION and UNION ALL, several statements. One join of two names is lowered as written; which join types
//! run is decided by the planner (SEMANTICS.md "Joins").

use eddy_engine::expr::{
    FromSyntax, GroupItemSyntax, JoinSyntax, JoinTypeSyntax, Literal, Pos, QuerySyntax, SelectItemSyntax, Syntax,
    SyntaxKind, UnionSyntax,
};
use sqlparser::ast::{
    Distinct, Expr, GroupByExpr, Join, JoinConstraint, JoinOperator, ObjectNamePart, Select, SelectItem,
    SelectItemQualifiedWildcardKind, SetExpr, SetOperator, SetQuantifier, Spanned, TableFactor, Value,
};
use sqlparser::keywords::Keyword;
use sqlparser::parser::{Parser, ParserOptions};
use sqlparser::tokenizer::{Location, Token, Tokenizer};

use super::{SqlError, dialect, lower, parse_error, pos, unsupported};

const ONE_SELECT: &str = "one SELECT ... FROM source [WHERE ...] [GROUP BY ...] [HAVING ...] (SQL.md \"Queries\")";

/// Parses one query: a single `SELECT` over one source, or a union of SELECTs ([`UnionSyntax`];
/// an optional trailing `;`).
///
/// # Errors
/// [`SqlError::Syntax`] when the text is not a SELECT statement; [`SqlError::Unsupported`]
/// naming ORDER BY, LIMIT, DISTINCT ON, DISTINCT over an aggregation, WITH, a window function,
/// `count(DISTINCT ...)`, a subquery other than a union, a second join, EXCEPT, INTERSECT or a
/// second statement, at its position.
pub fn parse_query(text: &str) -> Result<QuerySyntax, SqlError> {
    let _source = super::Source::set(text);
    let dialect = dialect::SparkDialect;
    let options = ParserOptions::new().with_unescape(false);
    let mut parser = Parser::new(&dialect).with_options(options).with_tokens_with_locations(super::tokens(text)?);
    let query = parser.parse_query().map_err(|e| parse_error(e, text))?;
    while parser.peek_token().token == Token::SemiColon {
        parser.next_token();
    }
    let next = parser.peek_token();
    if next.token != Token::EOF {
        return Err(SqlError::Unsupported {
            pos: pos(next.span.start),
            found: format!("`{}` after the query (several statements)", next.token),
            allowed: ONE_SELECT.into(),
        });
    }
    if let Some(with) = &query.with {
        return Err(unsupported(with, "WITH (a common table expression)", ONE_SELECT));
    }
    if let Some(order) = &query.order_by {
        return Err(SqlError::Unsupported {
            pos: keyword_before(text, Keyword::ORDER, order.span().start),
            found: "ORDER BY".into(),
            allowed: "a query without ORDER BY: Spark sorts a stream only after an aggregation in complete mode, and \
                      Eddy does not sort even then (each partition actor writes its own rows to the sink, so the output \
                      has no total order); sort where the output is read"
                .into(),
        });
    }
    if let Some(limit) = &query.limit_clause {
        return Err(SqlError::Unsupported {
            pos: keyword_before(text, Keyword::LIMIT, limit.span().start),
            found: "LIMIT".into(),
            allowed: ONE_SELECT.into(),
        });
    }
    if let Some(fetch) = &query.fetch {
        return Err(unsupported(fetch, "FETCH", ONE_SELECT));
    }
    let select = match query.body.as_ref() {
        SetExpr::Select(select) => select,
        body @ SetExpr::SetOperation { .. } => {
            // `A UNION ALL B` at the top: SELECT * FROM (the union)
            let union = union_of(text, body)?;
            let at = union.pos;
            return Ok(QuerySyntax {
                items: vec![SelectItemSyntax::Wildcard { qualifier: None, pos: at }],
                from: FromSyntax { name: String::new(), alias: None, pos: at },
                join: None,
                selection: None,
                group_by: Vec::new(),
                having: None,
                union: Some(union),
                subquery: None,
            });
        }
        SetExpr::Query(_) => return Err(unsupported(query.body.as_ref(), "a parenthesized query", ONE_SELECT)),
        other => return Err(unsupported(other, format!("`{other}`"), ONE_SELECT)),
    };
    select_query(text, select)
}

/// `SELECT ... UNION [ALL] SELECT ... [UNION [ALL] ...]` (SQL.md "Union"): its SELECTs in
/// order. EXCEPT, INTERSECT, a mix of UNION and UNION ALL, and a branch that is not a plain
/// SELECT are refused at their position.
fn union_of(text: &str, body: &SetExpr) -> Result<UnionSyntax, SqlError> {
    let mut branches = Vec::new();
    let mut distinct: Option<bool> = None;
    let mut first_pos = None;
    union_branches(text, body, &mut branches, &mut distinct, &mut first_pos)?;
    Ok(UnionSyntax { branches, distinct: distinct.unwrap_or(false), pos: first_pos.unwrap_or_default() })
}

fn union_branches(
    text: &str,
    body: &SetExpr,
    out: &mut Vec<QuerySyntax>,
    distinct: &mut Option<bool>,
    first_pos: &mut Option<Pos>,
) -> Result<(), SqlError> {
    const UNION: &str = "SELECT ... FROM source [WHERE ...] UNION ALL SELECT ... (or UNION; SQL.md \"Union\")";
    match body {
        SetExpr::Select(select) => {
            let q = select_query(text, select)?;
            out.push(q);
            Ok(())
        }
        SetExpr::SetOperation { op, set_quantifier, left, right } => {
            let keywords = [Keyword::UNION, Keyword::EXCEPT, Keyword::INTERSECT, Keyword::MINUS];
            let at = keyword_after(text, &keywords, left.span().end);
            let q = set_quantifier.to_string();
            let found = if q.is_empty() { format!("{op}") } else { format!("{op} {q}") };
            let this_distinct = match (op, set_quantifier) {
                (SetOperator::Union, SetQuantifier::All) => false,
                (SetOperator::Union, SetQuantifier::None | SetQuantifier::Distinct) => true,
                _ => return Err(SqlError::Unsupported { pos: at, found, allowed: UNION.into() }),
            };
            // a left-deep chain: the queries on the left (and their keywords) come first
            union_branches(text, left, out, distinct, first_pos)?;
            if distinct.is_some_and(|d| d != this_distinct) {
                return Err(SqlError::Unsupported {
                    pos: at,
                    found: format!("{found} beside another kind of UNION"),
                    allowed: "one kind of union in a query: every UNION ALL, or every UNION".into(),
                });
            }
            *distinct = Some(this_distinct);
            if first_pos.is_none() {
                *first_pos = Some(at);
            }
            match right.as_ref() {
                SetExpr::Select(_) => union_branches(text, right, out, distinct, first_pos),
                other => Err(unsupported(other, "a nested set operation or query", UNION)),
            }
        }
        other => Err(unsupported(other, format!("`{other}` in a union"), UNION)),
    }
}

/// Where the first of `keywords` at or after `at` starts (a set operation's span starts at its
/// first query; the message points at the operator's keyword); `at` itself if none is found.
fn keyword_after(text: &str, keywords: &[Keyword], at: Location) -> Pos {
    let tokens = Tokenizer::new(&dialect::SparkDialect, text).tokenize_with_location().unwrap_or_default();
    let after = |l: Location| (l.line, l.column) >= (at.line, at.column);
    tokens
        .iter()
        .find(|t| after(t.span.start) && matches!(&t.token, Token::Word(w) if keywords.contains(&w.keyword)))
        .map_or_else(|| pos(at), |t| pos(t.span.start))
}

/// Where the last `keyword` before `at` starts (clause spans start at their first expression,
/// the message points at the clause's keyword); `at` itself if none is found.
fn keyword_before(text: &str, keyword: Keyword, at: Location) -> Pos {
    let tokens = Tokenizer::new(&dialect::SparkDialect, text).tokenize_with_location().unwrap_or_default();
    let before = |l: Location| (l.line, l.column) < (at.line, at.column);
    tokens
        .iter()
        .rev()
        .find(|t| before(t.span.start) && matches!(&t.token, Token::Word(w) if w.keyword == keyword))
        .map_or_else(|| pos(at), |t| pos(t.span.start))
}

fn select_query(text: &str, s: &Select) -> Result<QuerySyntax, SqlError> {
    let distinct_at = || keyword_after(text, &[Keyword::DISTINCT], s.select_token.0.span.end);
    let distinct = match &s.distinct {
        None | Some(Distinct::All) => false,
        Some(Distinct::Distinct) => true,
        Some(d) => {
            return Err(SqlError::Unsupported {
                pos: distinct_at(),
                found: format!("{d}"),
                allowed: "SELECT DISTINCT over the selected columns (DISTINCT ON is not Spark SQL)".into(),
            });
        }
    };
    let refused: [(bool, &str); 9] = [
        (s.top.is_some(), "TOP"),
        (s.into.is_some(), "SELECT INTO"),
        (!s.lateral_views.is_empty(), "LATERAL VIEW"),
        (s.prewhere.is_some(), "PREWHERE"),
        (!s.cluster_by.is_empty() || !s.distribute_by.is_empty(), "CLUSTER BY / DISTRIBUTE BY"),
        (!s.sort_by.is_empty(), "SORT BY"),
        (!s.named_window.is_empty(), "WINDOW (named windows; use rolling_window)"),
        (s.qualify.is_some(), "QUALIFY"),
        (!s.connect_by.is_empty() || s.exclude.is_some(), "CONNECT BY / EXCLUDE"),
    ];
    if let Some((_, what)) = refused.iter().find(|(present, _)| *present) {
        return Err(at_select(s, *what, ONE_SELECT));
    }
    let (from, join, union, subquery) = match union_in_from(text, s)? {
        Some((from, union)) => (from, None, Some(union), None),
        None => match query_in_from(text, s)? {
            Some((from, inner)) => (from, None, None, Some(Box::new(inner))),
            None => {
                let (from, join) = from_item(text, s)?;
                (from, join, None, None)
            }
        },
    };
    let items = s.projection.iter().map(select_item).collect::<Result<Vec<_>, _>>()?;
    let selection = s.selection.as_ref().map(lower).transpose()?;
    let group_by = match &s.group_by {
        GroupByExpr::Expressions(exprs, modifiers) => {
            if !modifiers.is_empty() {
                return Err(unsupported(
                    &s.select_token.0,
                    "GROUP BY ... WITH ROLLUP / CUBE / TOTALS",
                    "GROUP BY expressions, window(...), session_window(...), positions",
                ));
            }
            // an item without a position (`GROUP BY ()`) is placed at GROUP
            let group_at = || keyword_after(text, &[Keyword::GROUP], s.select_token.0.span.end);
            exprs
                .iter()
                .map(|e| group_item(e).map_err(|err| err.at_least_at(group_at())))
                .collect::<Result<Vec<_>, _>>()?
        }
        // Spark's GROUP BY ALL: by every select item that calls no aggregate function, as if
        // written by position (none: one group)
        GroupByExpr::All(modifiers) => {
            if !modifiers.is_empty() {
                return Err(unsupported(
                    &s.select_token.0,
                    "GROUP BY ALL ... WITH ROLLUP / CUBE / TOTALS",
                    "GROUP BY ALL, GROUP BY expressions or positions",
                ));
            }
            let mut keys = Vec::new();
            for (i, item) in items.iter().enumerate() {
                match item {
                    SelectItemSyntax::Wildcard { pos, .. } => {
                        return Err(SqlError::Unsupported {
                            pos: *pos,
                            found: "* with GROUP BY ALL".into(),
                            allowed: "the columns named one by one".into(),
                        });
                    }
                    SelectItemSyntax::Expr { syntax, .. } if !eddy_engine::spec::contains_aggregate(syntax) => {
                        keys.push(GroupItemSyntax::Ordinal { position: i as i64 + 1, pos: syntax.pos });
                    }
                    SelectItemSyntax::Expr { .. } => {}
                }
            }
            keys
        }
    };
    let having = s.having.as_ref().map(lower).transpose()?;
    let group_by = if distinct { distinct_keys(&items, &group_by, having.is_some(), distinct_at())? } else { group_by };
    Ok(QuerySyntax { items, from, join, selection, group_by, having, union, subquery })
}

/// `SELECT DISTINCT items ...` as Spark plans it (`ReplaceDistinctWithAggregate`): an aggregation
/// keyed by every selected column, without measures, as if written `GROUP BY 1, 2, ...`; each
/// distinct row is then a group, in the query's output mode (SEMANTICS.md "Deduplication").
///
/// # Errors
/// At `DISTINCT`: over GROUP BY, HAVING or an aggregate (a distinct of aggregated rows), and with
/// `*` (the columns to key by are named one by one).
fn distinct_keys(
    items: &[SelectItemSyntax],
    group_by: &[GroupItemSyntax],
    having: bool,
    at: Pos,
) -> Result<Vec<GroupItemSyntax>, SqlError> {
    let aggregates = items
        .iter()
        .any(|i| matches!(i, SelectItemSyntax::Expr { syntax, .. } if eddy_engine::spec::contains_aggregate(syntax)));
    if !group_by.is_empty() || having || aggregates {
        return Err(SqlError::Unsupported {
            pos: at,
            found: "SELECT DISTINCT over an aggregation (GROUP BY, HAVING or an aggregate function)".into(),
            allowed: "SELECT DISTINCT over rows without aggregation (a deduplication by the selected columns), or GROUP BY without DISTINCT".into(),
        });
    }
    items
        .iter()
        .enumerate()
        .map(|(i, item)| match item {
            SelectItemSyntax::Wildcard { .. } => Err(SqlError::Unsupported {
                pos: at,
                found: "SELECT DISTINCT *".into(),
                allowed: "SELECT DISTINCT with the columns named one by one".into(),
            }),
            SelectItemSyntax::Expr { syntax, .. } => {
                Ok(GroupItemSyntax::Ordinal { position: i as i64 + 1, pos: syntax.pos })
            }
        })
        .collect()
}

/// `FROM ( SELECT ... GROUP BY ... ) [AS] alias` (or a global aggregate: `( SELECT count(*)
/// ... )`) without a join, where the inner SELECT is one query (not a union): the name the outer
/// query reads it by (the alias; empty without one) and the inner query, for a chained
/// aggregation (SQL.md "Chained aggregations") or a select over an aggregation; also `FROM (
/// SELECT ... FROM a JOIN b ON ... ) [AS] alias`, a join the outer query aggregates (the engine
/// refuses it where it reads no two sources). `None` for any other FROM.
///
/// # Errors
/// An aggregating subquery joined with a relation named in FROM (`FROM ( SELECT ... GROUP BY
/// ... ) a JOIN t ON ...`), at `t`; WITH, ORDER BY or LIMIT in the subquery; column aliases on
/// it; an inner query that does not lower.
fn query_in_from(text: &str, s: &Select) -> Result<Option<(FromSyntax, QuerySyntax)>, SqlError> {
    let [relation] = s.from.as_slice() else { return Ok(None) };
    let TableFactor::Derived { subquery, alias, .. } = &relation.relation else { return Ok(None) };
    let SetExpr::Select(inner) = subquery.body.as_ref() else { return Ok(None) };
    // only an aggregating SELECT (grouped, or a global aggregate: an aggregate call without
    // GROUP BY), alone in FROM, is a chained aggregation: any other subquery (or one joined with
    // something) is refused where it stands, by `from_item`
    let grouped = matches!(&inner.group_by, GroupByExpr::Expressions(e, _) if !e.is_empty());
    let joins = matches!(inner.from.as_slice(), [one] if !one.joins.is_empty());
    let aggregating = grouped || aggregates_globally(text, inner);
    // an aggregation's rows joined with a table (or a source) by name: Spark runs a
    // stream-static join there; Eddy's joins run on the sources' records only, before the
    // operator (a join of two aggregated streams, a subquery beside a subquery, is refused
    // where it stands, as Spark refuses it)
    if let [join] = relation.joins.as_slice()
        && matches!(join.relation, TableFactor::Table { .. })
        && aggregating
    {
        return Err(unsupported(
            &join.relation,
            "a JOIN of an aggregating subquery's rows (a join after an aggregation: not implemented yet)",
            "a JOIN of the records before the aggregation: SELECT ... FROM s JOIN t ON ... GROUP BY ... (which gives other rows where t has several rows of a key)",
        ));
    }
    if !relation.joins.is_empty() || !(aggregating || joins) {
        return Ok(None);
    }
    if subquery.with.is_some() || subquery.order_by.is_some() || subquery.limit_clause.is_some() {
        return Err(unsupported(
            subquery.as_ref(),
            "WITH, ORDER BY or LIMIT in the subquery",
            "( SELECT ... GROUP BY ... )",
        ));
    }
    if let Some(a) = alias.as_ref().filter(|a| !a.columns.is_empty()) {
        return Err(SqlError::Unsupported {
            pos: pos(a.name.span.start),
            found: "column aliases on the subquery".into(),
            allowed: "( SELECT ... ) [AS] alias (name the columns with AS inside)".into(),
        });
    }
    let inner = select_query(text, inner)?;
    let from = match alias {
        Some(a) => FromSyntax { name: a.name.value.clone(), alias: None, pos: pos(a.name.span.start) },
        None => FromSyntax { name: String::new(), alias: None, pos: pos(subquery.span().start) },
    };
    Ok(Some((from, inner)))
}

/// Whether `inner`, a SELECT without GROUP BY, aggregates all its rows into one (Spark's
/// global aggregate): an aggregate call in its select list, or a HAVING. A SELECT that does not
/// lower is none (it is refused as a subquery in FROM, where it stands).
fn aggregates_globally(text: &str, inner: &Select) -> bool {
    select_query(text, inner).is_ok_and(|q| {
        q.having.is_some()
            || q.items.iter().any(|item| match item {
                SelectItemSyntax::Expr { syntax, .. } => eddy_engine::spec::contains_aggregate(syntax),
                SelectItemSyntax::Wildcard { .. } => false,
            })
    })
}

/// `FROM ( SELECT ... UNION [ALL] SELECT ... ) [AS] alias` without a join: the union and the
/// name the outer query reads it by (the alias; empty without one). `None` for any other FROM.
fn union_in_from(text: &str, s: &Select) -> Result<Option<(FromSyntax, UnionSyntax)>, SqlError> {
    let [relation] = s.from.as_slice() else { return Ok(None) };
    let TableFactor::Derived { subquery, alias, .. } = &relation.relation else { return Ok(None) };
    if !matches!(subquery.body.as_ref(), SetExpr::SetOperation { .. }) {
        return Ok(None);
    }
    if let Some(join) = relation.joins.first() {
        return Err(unsupported(
            &join.relation,
            "a JOIN beside a union in FROM",
            "FROM ( ... UNION ALL ... ) [AS] alias",
        ));
    }
    if subquery.with.is_some() || subquery.order_by.is_some() || subquery.limit_clause.is_some() {
        return Err(unsupported(
            subquery.as_ref(),
            "WITH, ORDER BY or LIMIT in the union",
            "SELECT ... UNION ALL SELECT ...",
        ));
    }
    let union = union_of(text, subquery.body.as_ref())?;
    let from = match alias {
        Some(a) => FromSyntax { name: a.name.value.clone(), alias: None, pos: pos(a.name.span.start) },
        None => FromSyntax { name: String::new(), alias: None, pos: union.pos },
    };
    Ok(Some((from, union)))
}

/// A refusal at the `SELECT` keyword (for clauses without a position of their own).
fn at_select(s: &Select, found: impl Into<String>, allowed: &str) -> SqlError {
    SqlError::Unsupported { pos: pos(s.select_token.0.span.start), found: found.into(), allowed: allowed.into() }
}

fn from_item(text: &str, s: &Select) -> Result<(FromSyntax, Option<JoinSyntax>), SqlError> {
    let [relation] = s.from.as_slice() else {
        return Err(match s.from.get(1) {
            None => match from_read_as_a_name(text, s) {
                Some(at) => SqlError::Syntax {
                    pos: at,
                    found: "FROM where an operand is expected (the expression before it is incomplete)".into(),
                    allowed: "an expression before FROM".into(),
                },
                None => SqlError::Syntax {
                    pos: pos(s.select_token.0.span.start),
                    found: "a SELECT without FROM".into(),
                    allowed: ONE_SELECT.into(),
                },
            },
            Some(second) => unsupported(
                &second.relation,
                "a second relation in FROM (a comma join)",
                "FROM name [[AS] alias] [JOIN name [[AS] alias] ON condition]",
            ),
        });
    };
    let from = named_relation(&relation.relation)?;
    let join = match relation.joins.as_slice() {
        [] => None,
        [join] => Some(join_item(text, join)?),
        [_, second, ..] => {
            return Err(SqlError::Unsupported {
                pos: keyword_before(text, Keyword::JOIN, second.relation.span().start),
                found: "a second JOIN".into(),
                allowed: "one join of the source with a table (several joins are not implemented yet)".into(),
            });
        }
    };
    Ok((from, join))
}

/// Where an unquoted `FROM` stands in the select list of `s`, a SELECT without FROM: sqlparser
/// reads the keyword as a column name where an operand is missing (`SELECT n + FROM source` is
/// `n + from AS source`), so the query's real mistake is the operand missing there.
fn from_read_as_a_name(text: &str, s: &Select) -> Option<Pos> {
    let start = s.select_token.0.span.start;
    let end = s.projection.last()?.span().end;
    let inside =
        |l: Location| (l.line, l.column) > (start.line, start.column) && (l.line, l.column) < (end.line, end.column);
    let tokens = Tokenizer::new(&dialect::SparkDialect, text).tokenize_with_location().ok()?;
    tokens
        .iter()
        .find(|t| {
            inside(t.span.start)
                && matches!(&t.token, Token::Word(w) if w.keyword == Keyword::FROM && w.quote_style.is_none())
        })
        .map(|t| pos(t.span.start))
}

/// One `JOIN name [[AS] alias] ON condition`, its type as written.
fn join_item(text: &str, join: &Join) -> Result<JoinSyntax, SqlError> {
    let join_pos = join_keyword(text, join.relation.span().start);
    let refuse = |what: String| SqlError::Unsupported {
        pos: join_pos,
        found: what,
        allowed: "[INNER | LEFT [OUTER] | RIGHT [OUTER] | FULL [OUTER] | LEFT SEMI | LEFT ANTI] JOIN name ON condition"
            .into(),
    };
    let (kind, constraint) = match &join.join_operator {
        JoinOperator::Join(c) | JoinOperator::Inner(c) => (JoinTypeSyntax::Inner, c),
        JoinOperator::Left(c) | JoinOperator::LeftOuter(c) => (JoinTypeSyntax::LeftOuter, c),
        JoinOperator::Right(c) | JoinOperator::RightOuter(c) => (JoinTypeSyntax::RightOuter, c),
        JoinOperator::FullOuter(c) => (JoinTypeSyntax::FullOuter, c),
        JoinOperator::Semi(c) | JoinOperator::LeftSemi(c) => (JoinTypeSyntax::LeftSemi, c),
        JoinOperator::Anti(c) | JoinOperator::LeftAnti(c) => (JoinTypeSyntax::LeftAnti, c),
        JoinOperator::CrossJoin(c) => (JoinTypeSyntax::Cross, c),
        other => return Err(refuse(format!("the join `{}`", join_words(other)))),
    };
    let on = match constraint {
        JoinConstraint::On(e) => Some(lower(e)?),
        JoinConstraint::None => None,
        JoinConstraint::Using(_) | JoinConstraint::UsingAlias(..) => return Err(refuse("JOIN ... USING (...)".into())),
        JoinConstraint::Natural => return Err(refuse("NATURAL JOIN".into())),
    };
    Ok(JoinSyntax { kind, right: named_relation(&join.relation)?, on, pos: join_pos })
}

/// The words of a join operator that Spark SQL does not have, for the message.
fn join_words(op: &JoinOperator) -> &'static str {
    match op {
        JoinOperator::RightSemi(_) => "RIGHT SEMI JOIN",
        JoinOperator::RightAnti(_) => "RIGHT ANTI JOIN",
        JoinOperator::CrossApply => "CROSS APPLY",
        JoinOperator::OuterApply => "OUTER APPLY",
        JoinOperator::AsOf { .. } => "ASOF JOIN",
        JoinOperator::StraightJoin(_) => "STRAIGHT_JOIN",
        _ => "ARRAY JOIN",
    }
}

/// Where the words of the join whose relation starts at `at` begin: the first join keyword
/// (INNER, LEFT, RIGHT, FULL, OUTER, CROSS, SEMI, ANTI, NATURAL, JOIN) of the run of them just before `at`.
fn join_keyword(text: &str, at: Location) -> Pos {
    let tokens = Tokenizer::new(&dialect::SparkDialect, text).tokenize_with_location().unwrap_or_default();
    let before = |l: Location| (l.line, l.column) < (at.line, at.column);
    let words = [
        Keyword::JOIN,
        Keyword::INNER,
        Keyword::LEFT,
        Keyword::RIGHT,
        Keyword::FULL,
        Keyword::OUTER,
        Keyword::CROSS,
        Keyword::SEMI,
        Keyword::ANTI,
        Keyword::NATURAL,
    ];
    let mut found = None;
    for t in tokens.iter().rev().filter(|t| before(t.span.start)) {
        match &t.token {
            Token::Whitespace(_) => {}
            Token::Word(w) if words.contains(&w.keyword) => found = Some(pos(t.span.start)),
            _ => break,
        }
    }
    found.unwrap_or_else(|| pos(at))
}

/// `name [[AS] alias]` in FROM or JOIN.
fn named_relation(relation: &TableFactor) -> Result<FromSyntax, SqlError> {
    match relation {
        TableFactor::Table { name, alias, args: None, .. } => {
            let [ObjectNamePart::Identifier(id)] = name.0.as_slice() else {
                return Err(unsupported(name, format!("the qualified name {name}"), "a source's or table's name"));
            };
            if let Some(a) = alias.as_ref().filter(|a| !a.columns.is_empty()) {
                return Err(SqlError::Unsupported {
                    pos: pos(a.name.span.start),
                    found: "column aliases on the source".into(),
                    allowed: "name [[AS] alias]".into(),
                });
            }
            Ok(FromSyntax {
                name: id.value.clone(),
                alias: alias.as_ref().map(|a| a.name.value.clone()),
                pos: pos(id.span.start),
            })
        }
        TableFactor::Derived { .. } => Err(unsupported(
            relation,
            "a subquery in FROM",
            "a source's or table's name, ( SELECT ... UNION ALL SELECT ... ) [AS] alias, or an aggregating ( SELECT ... [GROUP BY ...] ) [AS] alias (other subqueries are not implemented yet)",
        )),
        other => Err(unsupported(other, format!("`{other}` in FROM"), "a source's or table's name")),
    }
}

fn select_item(item: &SelectItem) -> Result<SelectItemSyntax, SqlError> {
    Ok(match item {
        SelectItem::UnnamedExpr(e) => SelectItemSyntax::Expr { syntax: lower(e)?, alias: None },
        SelectItem::ExprWithAlias { expr, alias } => {
            SelectItemSyntax::Expr { syntax: lower(expr)?, alias: Some(alias.value.clone()) }
        }
        SelectItem::Wildcard(opts) => {
            SelectItemSyntax::Wildcard { qualifier: None, pos: pos(opts.wildcard_token.0.span.start) }
        }
        SelectItem::QualifiedWildcard(SelectItemQualifiedWildcardKind::ObjectName(name), _) => {
            match name.0.as_slice() {
                [ObjectNamePart::Identifier(id)] => {
                    SelectItemSyntax::Wildcard { qualifier: Some(id.value.clone()), pos: pos(id.span.start) }
                }
                _ => return Err(unsupported(name, format!("`{name}.*`"), "`*` or `source.*`")),
            }
        }
        other => return Err(unsupported(other, format!("`{other}`"), "expressions [AS alias], `*`, `source.*`")),
    })
}

/// A GROUP BY item: an integer literal is a 1-based position in the select list (as Spark's
/// `spark.sql.groupByOrdinal`, on by default); anything else an expression.
fn group_item(e: &Expr) -> Result<GroupItemSyntax, SqlError> {
    if let Expr::Value(v) = e
        && let Value::Number(..) = &v.value
        && let Syntax { kind: SyntaxKind::Literal(Literal::Integer(n)), pos } = lower(e)?
    {
        return Ok(GroupItemSyntax::Ordinal { position: n, pos });
    }
    lower(e).map(GroupItemSyntax::Expr)
}
