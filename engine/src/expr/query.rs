//! A SQL query as written (SQL.md "Queries"): the clauses of one `SELECT`, each expression an
//! untyped, positioned [`Syntax`]. The `eddy-sql` crate builds it ([`super::SqlFrontEnd::parse_query`]);
//! pipeline validation binds and plans it onto the operators (`spec::sql_query`).
//!
//! Only the single-source form is represented: one `FROM` name, no joins, unions or subqueries
//! (the front end refuses those, naming them).

use super::{Pos, Syntax};

/// One `SELECT ... FROM ... [WHERE] [GROUP BY] [HAVING]` statement.
#[derive(Clone, Debug, PartialEq)]
pub struct QuerySyntax {
    /// The select list, in order (at least one item).
    pub items: Vec<SelectItemSyntax>,
    /// The one relation of `FROM`.
    pub from: FromSyntax,
    /// `WHERE`, if any.
    pub selection: Option<Syntax>,
    /// `GROUP BY` items, in order (empty: no GROUP BY).
    pub group_by: Vec<GroupItemSyntax>,
    /// `HAVING`, if any.
    pub having: Option<Syntax>,
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
