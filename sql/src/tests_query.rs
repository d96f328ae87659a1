//! Queries: the clauses as written, and each construct Eddy does not run refused by name at
//! its position (expected values written by hand).

use eddy_engine::expr::{GroupItemSyntax, JoinTypeSyntax, Literal, Pos, SelectItemSyntax, SyntaxKind};

use super::*;

fn refused(text: &str) -> (Pos, String) {
    match parse_query(text) {
        Err(SqlError::Unsupported { pos, found, .. }) => (pos, found),
        other => panic!("{text}: expected a refusal, got {other:?}"),
    }
}

/// Each query of `cases` is refused at its position, naming its construct; all that are not are
/// listed in the panic.
fn assert_refused_where_named(cases: &[(&str, Pos, &str)]) {
    let wrong: Vec<String> = cases
        .iter()
        .filter_map(|(text, at, name)| {
            let (pos, found) = refused(text);
            (pos != *at || !found.contains(name))
                .then(|| format!("{text:?}: {found} at {pos} (expected {name} at {at})"))
        })
        .collect();
    assert!(wrong.is_empty(), "{wrong:#?}");
}

#[test]
fn a_query_keeps_its_clauses_with_positions() {
    let q = parse_query("SELECT window(ts, '30 seconds') AS w, p.user_id, count(*)\nFROM payments p\nWHERE amount > 0\nGROUP BY 1, user_id\nHAVING count(*) > 1;")
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(q.from.name, "payments");
    assert_eq!(q.from.alias.as_deref(), Some("p"));
    assert_eq!(q.from.pos, Pos { line: 2, column: 6 });
    assert_eq!(q.items.len(), 3);
    let SelectItemSyntax::Expr { syntax, alias } = &q.items[0] else { panic!("{:?}", q.items[0]) };
    assert_eq!(alias.as_deref(), Some("w"));
    assert!(matches!(&syntax.kind, SyntaxKind::Call { name, args } if name == "window" && args.len() == 2));
    let SelectItemSyntax::Expr { syntax, .. } = &q.items[1] else { panic!("{:?}", q.items[1]) };
    assert_eq!(syntax.kind, SyntaxKind::Column(vec!["p".into(), "user_id".into()]));
    // count(*) is count(1), as Spark reads it
    let SelectItemSyntax::Expr { syntax, .. } = &q.items[2] else { panic!("{:?}", q.items[2]) };
    let SyntaxKind::Call { args, .. } = &syntax.kind else { panic!("{syntax:?}") };
    assert_eq!(args[0].kind, SyntaxKind::Literal(Literal::Integer(1)));
    assert_eq!(q.group_by[0], GroupItemSyntax::Ordinal { position: 1, pos: Pos { line: 4, column: 10 } });
    assert!(matches!(&q.group_by[1], GroupItemSyntax::Expr(s) if s.kind == SyntaxKind::Column(vec!["user_id".into()])));
    assert_eq!(q.selection.map(|s| s.pos), Some(Pos { line: 3, column: 7 }));
    assert!(q.having.is_some());
}

#[test]
fn a_star_and_a_qualified_star_are_wildcards() {
    let q = parse_query("SELECT *, s.* FROM source s").unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(q.items[0], SelectItemSyntax::Wildcard { qualifier: None, pos: Pos { line: 1, column: 8 } });
    assert_eq!(
        q.items[1],
        SelectItemSyntax::Wildcard { qualifier: Some("s".into()), pos: Pos { line: 1, column: 11 } }
    );
}

#[test]
fn constructs_outside_a_single_source_select_are_refused_by_name() {
    let cases: &[(&str, Pos, &str)] = &[
        ("SELECT a FROM s ORDER BY a", Pos { line: 1, column: 17 }, "ORDER BY"),
        ("SELECT a FROM s LIMIT 3", Pos { line: 1, column: 17 }, "LIMIT"),
        (
            "SELECT DISTINCT a, count(*) FROM s GROUP BY a",
            Pos { line: 1, column: 8 },
            "SELECT DISTINCT over an aggregation",
        ),
        ("SELECT DISTINCT * FROM s", Pos { line: 1, column: 8 }, "SELECT DISTINCT *"),
        ("WITH t AS (SELECT a FROM s) SELECT a FROM t", Pos { line: 1, column: 1 }, "WITH"),
        ("SELECT a, sum(b) OVER (PARTITION BY a) FROM s", Pos { line: 1, column: 11 }, "OVER"),
        ("SELECT count(DISTINCT b) FROM s", Pos { line: 1, column: 8 }, "count(DISTINCT ...)"),
        ("SELECT a FROM s WHERE a IN (SELECT a FROM t)", Pos { line: 1, column: 23 }, "a subquery"),
        ("SELECT a FROM (SELECT a FROM s)", Pos { line: 1, column: 16 }, "a subquery in FROM"),
        ("SELECT a FROM s JOIN t ON s.a = t.a JOIN u ON s.a = u.a", Pos { line: 1, column: 37 }, "a second JOIN"),
        ("SELECT a FROM s JOIN t USING (a)", Pos { line: 1, column: 17 }, "USING"),
        ("SELECT a FROM s NATURAL JOIN t", Pos { line: 1, column: 17 }, "NATURAL"),
        ("SELECT a FROM s, t", Pos { line: 1, column: 18 }, "a second relation in FROM (a comma join)"),
        ("SELECT a FROM s INTERSECT SELECT a FROM t", Pos { line: 1, column: 17 }, "INTERSECT"),
        ("SELECT a FROM s; SELECT b FROM s", Pos { line: 1, column: 18 }, "several statements"),
    ];
    assert_refused_where_named(cases);
}

#[test]
fn select_distinct_is_an_aggregation_keyed_by_every_selected_column() {
    // as Spark's ReplaceDistinctWithAggregate: GROUP BY 1, 2 (ordinals at each item)
    let q = parse_query("SELECT DISTINCT k, v + 1 AS w FROM s WHERE v > 0").unwrap();
    assert_eq!(
        q.group_by,
        vec![
            GroupItemSyntax::Ordinal { position: 1, pos: Pos { line: 1, column: 17 } },
            GroupItemSyntax::Ordinal { position: 2, pos: Pos { line: 1, column: 20 } },
        ]
    );
    assert!(q.selection.is_some());
    // SELECT ALL is a plain SELECT
    assert!(parse_query("SELECT ALL k FROM s").unwrap().group_by.is_empty());
}

#[test]
fn distinct_joins_and_set_operations_are_refused_at_their_keyword() {
    // The clause spans start at the SELECT (DISTINCT) and at the first query (UNION): the
    // position must be the keyword's, on whichever line it stands.
    let cases: &[(&str, Pos, &str)] = &[
        ("SELECT\n  DISTINCT a, max(b) FROM s", Pos { line: 2, column: 3 }, "DISTINCT"),
        ("SELECT a FROM s\nUNION\nSELECT a FROM t\nUNION ALL SELECT a FROM u", Pos { line: 4, column: 1 }, "UNION ALL"),
        ("SELECT a FROM s WHERE a > 1 EXCEPT SELECT a FROM t", Pos { line: 1, column: 29 }, "EXCEPT"),
        (
            "SELECT a FROM (SELECT a FROM s) UNION ALL SELECT a FROM t",
            Pos { line: 1, column: 16 },
            "a subquery in FROM",
        ),
        ("SELECT a FROM s\n  LEFT JOIN t ON s.a = t.a\n  JOIN u ON s.a = u.a", Pos { line: 3, column: 3 }, "JOIN"),
    ];
    assert_refused_where_named(cases);
}

#[test]
fn a_join_is_lowered_with_its_type_relation_and_condition() {
    let cases: &[(&str, JoinTypeSyntax)] = &[
        ("SELECT * FROM s JOIN t ON s.a = t.a", JoinTypeSyntax::Inner),
        ("SELECT * FROM s INNER JOIN t ON s.a = t.a", JoinTypeSyntax::Inner),
        ("SELECT * FROM s LEFT JOIN t ON s.a = t.a", JoinTypeSyntax::LeftOuter),
        ("SELECT * FROM s LEFT OUTER JOIN t ON s.a = t.a", JoinTypeSyntax::LeftOuter),
        ("SELECT * FROM s RIGHT JOIN t ON s.a = t.a", JoinTypeSyntax::RightOuter),
        ("SELECT * FROM s FULL OUTER JOIN t ON s.a = t.a", JoinTypeSyntax::FullOuter),
        ("SELECT * FROM s LEFT SEMI JOIN t ON s.a = t.a", JoinTypeSyntax::LeftSemi),
        ("SELECT * FROM s LEFT ANTI JOIN t ON s.a = t.a", JoinTypeSyntax::LeftAnti),
        ("SELECT * FROM s CROSS JOIN t", JoinTypeSyntax::Cross),
    ];
    for (text, kind) in cases {
        let q = parse_query(text).unwrap_or_else(|e| panic!("{text}: {e}"));
        let join = q.join.unwrap_or_else(|| panic!("{text}: no join"));
        assert_eq!(join.kind, *kind, "{text}");
        assert_eq!(join.right.name, "t", "{text}");
        assert_eq!(join.pos, Pos { line: 1, column: 17 }, "{text}");
        assert_eq!(join.on.is_some(), *kind != JoinTypeSyntax::Cross, "{text}");
    }
    let q =
        parse_query("SELECT o.a FROM orders AS o\nLEFT JOIN prices p ON o.k = p.k").unwrap_or_else(|e| panic!("{e}"));
    let join = q.join.expect("a join");
    assert_eq!((q.from.name.as_str(), q.from.alias.as_deref()), ("orders", Some("o")));
    assert_eq!((join.right.name.as_str(), join.right.alias.as_deref()), ("prices", Some("p")));
    assert_eq!(join.pos, Pos { line: 2, column: 1 });
}

#[test]
fn a_subquery_that_joins_is_the_from_of_the_query_over_it() {
    let q = parse_query("SELECT id, count(*) FROM (SELECT l.id FROM a l JOIN b r ON l.k = r.k) AS j GROUP BY id")
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(q.from.name, "j");
    assert!(q.join.is_none());
    let inner = q.subquery.expect("the subquery");
    assert_eq!((inner.from.name.as_str(), inner.from.alias.as_deref()), ("a", Some("l")));
    let join = inner.join.expect("the subquery's join");
    assert_eq!((join.kind, join.right.name.as_str()), (JoinTypeSyntax::Inner, "b"));
    assert!(inner.group_by.is_empty());
    // a subquery that neither aggregates nor joins stays refused
    assert_eq!(refused("SELECT a FROM (SELECT a FROM s)"), (Pos { line: 1, column: 16 }, "a subquery in FROM".into()));
}

#[test]
fn a_subquery_that_aggregates_without_group_by_is_the_from_of_the_query_over_it() {
    // a global aggregate (Spark's aggregation without grouping keys), by an aggregate call or
    // a HAVING alone
    for text in [
        "SELECT n * 2 AS m FROM (SELECT count(*) AS n FROM s) AS g",
        "SELECT m FROM (SELECT 1 AS m FROM s HAVING count(*) > 1)",
    ] {
        let q = parse_query(text).unwrap_or_else(|e| panic!("{text}: {e}"));
        let inner = q.subquery.expect("the subquery");
        assert_eq!(inner.from.name, "s", "{text}");
        assert!(inner.group_by.is_empty(), "{text}");
    }
}

#[test]
fn a_join_of_an_aggregating_subquerys_rows_with_a_table_is_refused_at_the_table() {
    // Spark runs a stream-static join after an aggregation; Eddy joins before the operator only
    let found = "a JOIN of an aggregating subquery's rows";
    let cases: &[(&str, Pos, &str)] = &[
        (
            "SELECT a.k, t.label FROM (SELECT k, count(*) AS n FROM s GROUP BY k) a\nJOIN t ON a.k = t.k",
            Pos { line: 2, column: 6 },
            found,
        ),
        (
            "SELECT a.n, t.label FROM (SELECT count(*) AS n FROM s) a\nLEFT JOIN t ON a.n = t.n",
            Pos { line: 2, column: 11 },
            found,
        ),
    ];
    assert_refused_where_named(cases);
}

#[test]
fn a_construct_the_parser_gives_no_position_is_refused_where_its_expression_is() {
    // sqlparser gives a lambda and an empty tuple no span: the error is placed at the enclosing
    // expression (or GROUP), never at 0:0
    let cases: &[(&str, Pos, &str)] = &[
        ("SELECT transform(a, x -> x) FROM s", Pos { line: 1, column: 8 }, "x -> x"),
        ("SELECT a FROM s\nWHERE 1 = exists(b, x -> x > 1)", Pos { line: 2, column: 11 }, "x -> x > 1"),
        ("SELECT count(*) FROM s GROUP BY ()", Pos { line: 1, column: 24 }, "()"),
    ];
    assert_refused_where_named(cases);
    match parse_expression("lambda(x -> x)") {
        Err(SqlError::Unsupported { pos, .. }) => assert_eq!(pos, Pos { line: 1, column: 1 }),
        other => panic!("{other:?}"),
    }
}

#[test]
fn text_that_is_not_a_query_is_a_syntax_error_with_its_position() {
    match parse_query("SELECT a\nFROM") {
        Err(SqlError::Syntax { pos, .. }) => assert_eq!(pos.line, 2),
        other => panic!("{other:?}"),
    }
    assert!(matches!(parse_query("SELECT a"), Err(SqlError::Syntax { found, .. }) if found.contains("without FROM")));
}

#[test]
fn a_missing_operand_before_from_is_a_syntax_error_where_the_operand_is_missing() {
    // sqlparser reads `n + FROM source` as `n + from AS source`, a SELECT without FROM
    for (text, at) in [
        ("SELECT n + FROM source", Pos { line: 1, column: 12 }),
        ("SELECT k, n *\nFROM source WHERE k > 1", Pos { line: 2, column: 1 }),
        ("SELECT a FROM s UNION ALL SELECT b - FROM t", Pos { line: 1, column: 38 }),
    ] {
        match parse_query(text) {
            Err(SqlError::Syntax { pos, found, .. }) => {
                assert_eq!(pos, at, "{text}: {found}");
                assert!(found.contains("FROM where an operand is expected"), "{text}: {found}");
            }
            other => panic!("{text}: {other:?}"),
        }
    }
    // a quoted `from` is a column's name: the SELECT has no FROM
    let e = parse_query("SELECT n + `from` AS m");
    assert!(matches!(&e, Err(SqlError::Syntax { found, .. }) if found.contains("without FROM")), "{e:?}");
}

#[test]
fn a_union_is_lowered_into_its_selects_at_the_top_and_in_from() {
    let q =
        parse_query("SELECT a, b FROM s WHERE a > 1\nUNION ALL SELECT c, d FROM t").unwrap_or_else(|e| panic!("{e}"));
    let u = q.union.as_ref().expect("a union");
    assert!(!u.distinct);
    assert_eq!(u.pos, Pos { line: 2, column: 1 });
    assert_eq!(u.branches.iter().map(|b| b.from.name.as_str()).collect::<Vec<_>>(), ["s", "t"]);
    assert!(u.branches[0].selection.is_some() && u.branches[1].selection.is_none());
    assert!(matches!(q.items.as_slice(), [SelectItemSyntax::Wildcard { qualifier: None, .. }]), "{:?}", q.items);

    let q = parse_query(
        "SELECT k, count(*) FROM (SELECT k FROM a UNION SELECT k FROM b UNION SELECT k FROM c) AS u GROUP BY k",
    )
    .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(q.from.name, "u");
    let u = q.union.as_ref().expect("a union in FROM");
    assert!(u.distinct);
    assert_eq!(u.branches.len(), 3);
    assert_eq!(q.group_by.len(), 1);
}

#[test]
fn group_by_all_groups_by_every_item_without_an_aggregate() {
    let q = parse_query(
        "SELECT window(ts, '1 minute') AS w, upper(u), count(*), sum(x) / count(*) AS avg_x, 'k'\nFROM s GROUP BY ALL",
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let positions: Vec<i64> = q
        .group_by
        .iter()
        .map(|g| match g {
            GroupItemSyntax::Ordinal { position, .. } => *position,
            other => panic!("{other:?}"),
        })
        .collect();
    // the window, upper(u) and the literal; not count(*) nor the expression over aggregates
    assert_eq!(positions, vec![1, 2, 5]);
    // only aggregates: one group
    assert!(parse_query("SELECT count(*) FROM s GROUP BY ALL").unwrap_or_else(|e| panic!("{e}")).group_by.is_empty());
    assert_refused_where_named(&[
        ("SELECT *, count(*) FROM s GROUP BY ALL", Pos { line: 1, column: 8 }, "* with GROUP BY ALL"),
        ("SELECT a, count(*) FROM s GROUP BY ALL WITH ROLLUP", Pos { line: 1, column: 1 }, "WITH ROLLUP"),
    ]);
}
