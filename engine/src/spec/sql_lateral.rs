//! Lateral column aliases in a select list (SQL.md "Queries"), as Spark 3.4+ resolves them by
//! default (`spark.sql.lateralColumnAlias.enableImplicitResolution`, SPARK-27561: SPARK-41630 on
//! a projection, SPARK-41631 on an aggregation): an item may name the alias of an earlier item of
//! the same list, `SELECT price * qty AS gross, gross * 0.2 AS tax`.
//!
//! Spark's rules, each checked on Spark 4.3 with the oracle (the golden cases `sql-lateral-alias`
//! and `sql-lateral-alias-aggregate` pin what it accepts):
//! - a column of the input of that name wins: the alias is used only where the name resolves to
//!   no input column (`qty * 10 AS qty, qty + 1` reads the source's `qty`);
//! - only an earlier item's alias is visible (a later one is an unknown column), and two earlier
//!   items of that alias are refused (`AMBIGUOUS_LATERAL_COLUMN_ALIAS`);
//! - the first name part only, unqualified: `gross`, `s.p` (a field of the alias `s`);
//!   `orders.gross` is not the alias;
//! - in an aggregating query the reference means the earlier item's value (an aggregate's result,
//!   a group key), but a reference inside an aggregate call is refused
//!   (`LATERAL_COLUMN_ALIAS_IN_AGGREGATE_FUNC`), and so is a GROUP BY alias or position that
//!   names an item holding one (`LATERAL_COLUMN_ALIAS_IN_GROUP_BY`);
//! - WHERE does not see the aliases, nor does an expression in GROUP BY (a whole GROUP BY name may
//!   still be a select alias, `spark.sql.groupByAliases`; HAVING reads select aliases anyway).
//!
//! The reference is replaced by the earlier item's expression in a
//! [`SyntaxKind::LateralAlias`] node, which binds as that expression and carries Spark's name for
//! it (`(lateralAliasReference(gross) * 2)`); an item that is the bare reference is named as
//! written (`gross`, `p` for `s.p`).

use super::error::SpecError;
use super::sql_query::{Item, at, is_aggregate};
use super::validate::same_column;
use crate::expr::{Syntax, SyntaxKind};
use crate::schema::Schema;

/// `items` (the select list, `*` expanded) with each lateral alias reference replaced by the
/// expression it names (see the module documentation). `qualifier`: the name or alias of the
/// query's relation (`qualifier.name` is never an alias).
///
/// # Errors
/// At `query.sql`, at the reference: a name that two earlier items alias
/// (`AMBIGUOUS_LATERAL_COLUMN_ALIAS`), a reference inside an aggregate call
/// (`LATERAL_COLUMN_ALIAS_IN_AGGREGATE_FUNC`).
pub(super) fn resolve(items: Vec<Item>, schema: &Schema, qualifier: &str) -> Result<Vec<Item>, SpecError> {
    // the earlier items with their aliases as written: a bare reference's name is no alias
    let mut earlier: Vec<Item> = Vec::with_capacity(items.len());
    let mut out: Vec<Item> = Vec::with_capacity(items.len());
    for item in items {
        let syntax = substitute(&item.syntax, &earlier, schema, qualifier, None)?;
        earlier.push(Item { syntax: syntax.clone(), alias: item.alias.clone() });
        // a bare reference is named as written (Spark: `GROSS`, `p` for `s.p`)
        let alias = item.alias.or_else(|| match (&item.syntax.kind, &syntax.kind) {
            (SyntaxKind::Column(_), SyntaxKind::LateralAlias { name, .. }) => Some(name.clone()),
            _ => None,
        });
        out.push(Item { syntax, alias });
    }
    Ok(out)
}

/// The first lateral alias reference in `s` (after [`resolve`]), outermost first.
pub(super) fn first_reference(s: &Syntax) -> Option<&Syntax> {
    if matches!(s.kind, SyntaxKind::LateralAlias { .. }) {
        return Some(s);
    }
    s.children().into_iter().find_map(first_reference)
}

/// `s` with its references to the aliases of `earlier` substituted; `aggregate`: the aggregate
/// call `s` is inside, if any.
fn substitute(
    s: &Syntax,
    earlier: &[Item],
    schema: &Schema,
    qualifier: &str,
    aggregate: Option<&Syntax>,
) -> Result<Syntax, SpecError> {
    let SyntaxKind::Column(parts) = &s.kind else {
        let inside = if is_aggregate(s) { Some(s) } else { aggregate };
        return s.try_map_children(&mut |c| substitute(c, earlier, schema, qualifier, inside));
    };
    let qualified = parts.len() > 1 && parts[0].eq_ignore_ascii_case(qualifier);
    if qualified || schema.resolve(&parts[0]).is_some() {
        return Ok(s.clone());
    }
    let mut aliased =
        earlier.iter().enumerate().filter(|(_, i)| i.alias.as_deref().is_some_and(|a| same_column(a, &parts[0])));
    let Some((index, item)) = aliased.next() else { return Ok(s.clone()) };
    if let Some((second, _)) = aliased.next() {
        return Err(at(
            s.pos,
            format!(
                "the lateral column alias {} of select items {} and {} (AMBIGUOUS_LATERAL_COLUMN_ALIAS)",
                parts[0],
                index + 1,
                second + 1
            ),
            "a name that one earlier select item aliases (rename one), as Spark",
        ));
    }
    if let Some(call) = aggregate {
        return Err(at(
            s.pos,
            format!(
                "the lateral column alias {} inside the aggregate {} (LATERAL_COLUMN_ALIAS_IN_AGGREGATE_FUNC)",
                parts[0],
                super::sql_query::written(call)
            ),
            "an aggregate over the source's columns (write the aliased expression in the call), as Spark",
        ));
    }
    // `s.p` where `s` is the alias: the field of the aliased expression
    let expr = parts[1..].iter().fold(item.syntax.clone(), |e, field| Syntax {
        kind: SyntaxKind::Field { expr: Box::new(e), field: field.clone() },
        pos: s.pos,
    });
    let name = parts.last().cloned().unwrap_or_default();
    Ok(Syntax { kind: SyntaxKind::LateralAlias { expr: Box::new(expr), name }, pos: s.pos })
}
