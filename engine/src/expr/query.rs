//! A SQL query as written (SQL.md "Queries"): the clauses of one `SELECT`, each expression an
//! untyped, positioned [`Syntax`]. The `eddy-sql` crate builds it ([`super::SqlFrontEnd::parse_query`]);
//! pipeline validation binds and plans it onto the operators (`spec::sql_query`).
//!
//! Only the single-source form is represented: one `FROM` name, optionally joined with one more
//! name (a stream-static join), a union of such queries, or an aggregating query in FROM (a
//! chained aggregation); other subqueries are refused by the front end, which names them.

use super::{Pos, Syntax, SyntaxKind};

/// One `SELECT ... FROM ... [WHERE] [GROUP BY] [HAVING]` statement.
#[derive(Clone, Debug, PartialEq)]
pub struct QuerySyntax {
    /// The select list, in order (at least one item).
    pub items: Vec<SelectItemSyntax>,
    /// The first relation of `FROM`.
    pub from: FromSyntax,
    /// `JOIN other ON ...` after it, if any.
    pub join: Option<JoinSyntax>,
    /// `WHERE`, if any.
    pub selection: Option<Syntax>,
    /// `GROUP BY` items, in order (empty: no GROUP BY).
    pub group_by: Vec<GroupItemSyntax>,
    /// `HAVING`, if any.
    pub having: Option<Syntax>,
    /// The query's input is a union ([`UnionSyntax`]) that [`QuerySyntax::from`] names
    /// (the subquery's alias), not a source; `None`: it reads a source.
    pub union: Option<UnionSyntax>,
    /// The query's input is another query that aggregates, `FROM ( SELECT ... GROUP BY ... )
    /// [AS] alias`, which [`QuerySyntax::from`] names (the alias; empty without one): an
    /// aggregation chained after it (SQL.md "Chained aggregations"); `None` otherwise.
    pub subquery: Option<Box<QuerySyntax>>,
}

/// `SELECT ... FROM a UNION ALL SELECT ... FROM b [UNION ALL ...]` (SQL.md "Union"): the
/// queries' results, matched by position, under the first query's column names. At the top of
/// a query it stands for `SELECT * FROM (the union)`; in `FROM ( ... ) [AS] alias` the outer
/// query reads it.
#[derive(Clone, Debug, PartialEq)]
pub struct UnionSyntax {
    /// The queries, in order (at least two; each without a union of its own).
    pub branches: Vec<QuerySyntax>,
    /// `UNION` (distinct: a deduplication over all columns after the union) rather than
    /// `UNION ALL`.
    pub distinct: bool,
    /// Where the first `UNION` keyword is.
    pub pos: Pos,
}

/// The relation named in `FROM`: `name [[AS] alias]`.
#[derive(Clone, Debug, PartialEq)]
pub struct FromSyntax {
    /// The source's name as written (matched ignoring case, as Spark).
    pub name: String,
    /// The alias, if any: the only qualifier columns may then use.
    pub alias: Option<String>,
    /// Where the name starts.
    pub pos: Pos,
}

/// `[INNER | LEFT [OUTER] | RIGHT [OUTER] | FULL [OUTER] | LEFT SEMI | LEFT ANTI | CROSS] JOIN
/// name [[AS] alias] [ON condition]`, as written; which of these run is decided when the query is
/// planned (SEMANTICS.md "Joins").
#[derive(Clone, Debug, PartialEq)]
pub struct JoinSyntax {
    /// The join type as written.
    pub kind: JoinTypeSyntax,
    /// The relation on the right.
    pub right: FromSyntax,
    /// The `ON` condition; `None` for a join without one (CROSS JOIN, or `USING` and `NATURAL`,
    /// which the front end refuses).
    pub on: Option<Syntax>,
    /// Where the join's first keyword is.
    pub pos: Pos,
}

/// The type of a join, as written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum JoinTypeSyntax {
    /// `JOIN`, `INNER JOIN`.
    Inner,
    /// `LEFT [OUTER] JOIN`.
    LeftOuter,
    /// `RIGHT [OUTER] JOIN`.
    RightOuter,
    /// `FULL [OUTER] JOIN`.
    FullOuter,
    /// `LEFT SEMI JOIN` (`SEMI JOIN`).
    LeftSemi,
    /// `LEFT ANTI JOIN` (`ANTI JOIN`).
    LeftAnti,
    /// `CROSS JOIN`.
    Cross,
}

impl std::fmt::Display for JoinTypeSyntax {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            JoinTypeSyntax::Inner => "INNER JOIN",
            JoinTypeSyntax::LeftOuter => "LEFT OUTER JOIN",
            JoinTypeSyntax::RightOuter => "RIGHT OUTER JOIN",
            JoinTypeSyntax::FullOuter => "FULL OUTER JOIN",
            JoinTypeSyntax::LeftSemi => "LEFT SEMI JOIN",
            JoinTypeSyntax::LeftAnti => "LEFT ANTI JOIN",
            JoinTypeSyntax::Cross => "CROSS JOIN",
        })
    }
}

/// One item of the select list.
#[derive(Clone, Debug, PartialEq)]
pub enum SelectItemSyntax {
    /// `*` or `qualifier.*`: every input column, in order.
    Wildcard {
        /// `qualifier.*`: the source's name or alias as written.
        qualifier: Option<String>,
        /// Where it starts.
        pos: Pos,
    },
    /// An expression, optionally with `AS alias` (or a bare alias).
    Expr {
        /// The expression.
        syntax: Syntax,
        /// The alias, if any.
        alias: Option<String>,
    },
}

/// One item of `GROUP BY`.
#[derive(Clone, Debug, PartialEq)]
pub enum GroupItemSyntax {
    /// An expression (an input column, or a computed key such as `lower(user_id)`).
    Expr(Syntax),
    /// A 1-based position in the select list (`GROUP BY 1, 2`).
    Ordinal {
        /// The position as written (validated against the select list when planned).
        position: i64,
        /// Where it is written.
        pos: Pos,
    },
}

impl Syntax {
    /// The position of the first call of `current_timestamp()` / `now()` in the expression
    /// (depth first, as written), if any.
    pub fn processing_time_call(&self) -> Option<super::Pos> {
        if let SyntaxKind::Call { name, .. } = &self.kind
            && (name.eq_ignore_ascii_case("current_timestamp") || name.eq_ignore_ascii_case("now"))
        {
            return Some(self.pos);
        }
        self.children().into_iter().find_map(Syntax::processing_time_call)
    }

    /// The direct sub-expressions, in the order they are written.
    pub fn children(&self) -> Vec<&Syntax> {
        match &self.kind {
            SyntaxKind::Literal(_) | SyntaxKind::Column(_) => vec![],
            SyntaxKind::Negate(e)
            | SyntaxKind::Positive(e)
            | SyntaxKind::Not(e)
            | SyntaxKind::Field { expr: e, .. }
            | SyntaxKind::Alias { expr: e, .. }
            | SyntaxKind::LateralAlias { expr: e, .. } => vec![e],
            SyntaxKind::IsNull { expr, .. } | SyntaxKind::IsBool { expr, .. } | SyntaxKind::Cast { expr, .. } => {
                vec![expr]
            }
            SyntaxKind::Binary { left, right, .. } => vec![left, right],
            SyntaxKind::Between { expr, low, high, .. } => vec![expr, low, high],
            SyntaxKind::InList { expr, list, .. } => std::iter::once(&**expr).chain(list).collect(),
            SyntaxKind::Like { expr, pattern, .. } => vec![expr, pattern],
            SyntaxKind::Trim { expr, chars, .. } => std::iter::once(&**expr).chain(chars.as_deref()).collect(),
            SyntaxKind::Case { operand, branches, otherwise } => operand
                .iter()
                .map(|o| &**o)
                .chain(branches.iter().flat_map(|(w, t)| [w, t]))
                .chain(otherwise.iter().map(|o| &**o))
                .collect(),
            SyntaxKind::Call { args, .. } => args.iter().collect(),
        }
    }

    /// This node with each direct sub-expression replaced by `f` of it (`f` decides whether to
    /// go deeper); the node's own kind and position are kept.
    ///
    /// # Errors
    /// The first error of `f`.
    pub fn try_map_children<E>(&self, f: &mut dyn FnMut(&Syntax) -> Result<Syntax, E>) -> Result<Syntax, E> {
        let mut b = |e: &Syntax| f(e).map(Box::new);
        let kind = match &self.kind {
            k @ (SyntaxKind::Literal(_) | SyntaxKind::Column(_)) => k.clone(),
            SyntaxKind::Negate(e) => SyntaxKind::Negate(b(e)?),
            SyntaxKind::Positive(e) => SyntaxKind::Positive(b(e)?),
            SyntaxKind::Not(e) => SyntaxKind::Not(b(e)?),
            SyntaxKind::Field { expr, field } => SyntaxKind::Field { expr: b(expr)?, field: field.clone() },
            SyntaxKind::Alias { expr, alias } => SyntaxKind::Alias { expr: b(expr)?, alias: alias.clone() },
            SyntaxKind::LateralAlias { expr, name } => SyntaxKind::LateralAlias { expr: b(expr)?, name: name.clone() },
            SyntaxKind::Binary { op, left, right } => SyntaxKind::Binary { op: *op, left: b(left)?, right: b(right)? },
            SyntaxKind::IsNull { expr, negated } => SyntaxKind::IsNull { expr: b(expr)?, negated: *negated },
            SyntaxKind::IsBool { expr, value, negated } => {
                SyntaxKind::IsBool { expr: b(expr)?, value: *value, negated: *negated }
            }
            SyntaxKind::Between { expr, low, high, negated } => {
                SyntaxKind::Between { expr: b(expr)?, low: b(low)?, high: b(high)?, negated: *negated }
            }
            SyntaxKind::InList { expr, list, negated } => SyntaxKind::InList {
                expr: b(expr)?,
                list: list.iter().map(|x| b(x).map(|x| *x)).collect::<Result<_, _>>()?,
                negated: *negated,
            },
            SyntaxKind::Like { kind, expr, pattern, negated } => {
                SyntaxKind::Like { kind: *kind, expr: b(expr)?, pattern: b(pattern)?, negated: *negated }
            }
            SyntaxKind::Trim { side, expr, chars } => {
                SyntaxKind::Trim { side: *side, expr: b(expr)?, chars: chars.as_deref().map(&mut b).transpose()? }
            }
            SyntaxKind::Case { operand, branches, otherwise } => SyntaxKind::Case {
                operand: operand.as_deref().map(&mut b).transpose()?,
                branches: branches.iter().map(|(w, t)| Ok((*b(w)?, *b(t)?))).collect::<Result<_, E>>()?,
                otherwise: otherwise.as_deref().map(&mut b).transpose()?,
            },
            SyntaxKind::Cast { expr, to, try_cast } => {
                SyntaxKind::Cast { expr: b(expr)?, to: *to, try_cast: *try_cast }
            }
            SyntaxKind::Call { name, args } => SyntaxKind::Call {
                name: name.clone(),
                args: args.iter().map(|x| b(x).map(|x| *x)).collect::<Result<_, _>>()?,
            },
        };
        Ok(Syntax { kind, pos: self.pos })
    }

    /// This expression with positions cleared, column names and function names in lower case:
    /// two expressions that Spark treats as the same (`LOWER(User_Id)` and `lower(user_id)`)
    /// normalize equal. Used to match the select list against GROUP BY, as Spark's analyzer
    /// matches them (semantic equality, names resolved ignoring case).
    pub fn normalized(&self) -> Syntax {
        let mut s = match self.try_map_children::<std::convert::Infallible>(&mut |c| Ok(c.normalized())) {
            Ok(s) => s,
            Err(never) => match never {},
        };
        s.pos = Pos::default();
        let cast = match &mut s.kind {
            SyntaxKind::Column(parts) => {
                parts.iter_mut().for_each(|p| *p = p.to_ascii_lowercase());
                None
            }
            SyntaxKind::Call { name, args } => {
                *name = name.to_ascii_lowercase();
                // a cast function is the CAST it stands for: `int(d)` is `CAST(d AS INT)` and
                // `d::int`, as Spark's analyzer finds one GROUP BY key in each spelling
                match (cast_function(name), args.as_slice()) {
                    (Some(to), [arg]) => Some(SyntaxKind::Cast { expr: Box::new(arg.clone()), to, try_cast: false }),
                    _ => None,
                }
            }
            _ => None,
        };
        if let Some(kind) = cast {
            s.kind = kind;
        }
        s
    }
}

/// The type a cast function casts to (`int(x)` is `CAST(x AS INT)`; lower-case name).
pub(crate) fn cast_function(name: &str) -> Option<crate::schema::DataType> {
    use crate::schema::DataType;
    Some(match name {
        "string" => DataType::String,
        "int" => DataType::Int,
        "bigint" => DataType::Long,
        "double" => DataType::Double,
        "float" => DataType::Float,
        "boolean" => DataType::Boolean,
        "date" => DataType::Date,
        "timestamp" => DataType::Timestamp,
        _ => return None,
    })
}
