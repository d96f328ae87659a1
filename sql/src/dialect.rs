//! The Spark SQL dialect: sqlparser's Databricks dialect plus Spark's infix `div`.

use std::any::TypeId;

use sqlparser::ast::{BinaryOperator, Expr, Spanned};
use sqlparser::dialect::{DatabricksDialect, Dialect, Precedence};
use sqlparser::keywords::Keyword;
use sqlparser::parser::{Parser, ParserError};
use sqlparser::tokenizer::Token;

/// Spark SQL as sqlparser reads it: [`DatabricksDialect`] (backtick identifiers, `1L` / `1.5D`
/// suffixes, backslash escapes in strings, `::`, `RLIKE`, `<=>`), reporting itself as that dialect
/// so the parser's dialect checks hold, plus `a div b` (Spark's integral division, an infix
/// operator at the precedence of `*`), which sqlparser parses only in its MySQL dialect.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct SparkDialect;

fn next_is_div(parser: &Parser) -> bool {
    matches!(&parser.peek_token_ref().token, Token::Word(w) if w.keyword == Keyword::DIV)
}

/// Whether `token` names a unit of an interval: of a day-time one (`HOURS`, `minute`, `WEEK`,
/// ...), or `YEAR` / `MONTH`, which the lowering refuses; joined all the same, so that
/// `INTERVAL 1 DAY 1 MONTH` is refused as one literal at its `INTERVAL`, not as text after the
/// query.
fn is_interval_unit(token: &Token) -> bool {
    matches!(token, Token::Word(w) if crate::interval_unit(&w.value).is_some()
        || matches!(w.value.to_ascii_uppercase().trim_end_matches('S'), "YEAR" | "MONTH"))
}

/// After an interval's unit (`INTERVAL 2 HOURS`), a further `n UNIT` (or `-n UNIT`) of the same
/// literal, as Spark reads `INTERVAL 2 HOURS 30 MINUTES`: how many tokens it takes (2 or 3).
fn interval_continues(parser: &Parser) -> Option<usize> {
    if !is_interval_unit(&parser.get_current_token().token) {
        return None;
    }
    let signed = matches!(parser.peek_token_ref().token, Token::Minus | Token::Plus);
    let n = usize::from(signed);
    let number = matches!(parser.peek_nth_token_ref(n).token, Token::Number(_, false));
    (number && is_interval_unit(&parser.peek_nth_token_ref(n + 1).token)).then_some(n + 2)
}

/// `interval` (`INTERVAL n UNIT`, or several such already joined) and the next `n UNIT` of the
/// parser as one `INTERVAL 'n UNIT n UNIT'` literal: the form Spark also takes written so, which
/// the lowering reads (`lower_node`).
fn join_interval(parser: &mut Parser, interval: &sqlparser::ast::Interval, tokens: usize) -> Option<Expr> {
    use sqlparser::ast::{Interval, Value};
    let mut text = match (interval.value.as_ref(), &interval.leading_field, &interval.last_field) {
        (Expr::Value(v), None, None) => match &v.value {
            Value::SingleQuotedString(t) => t.clone(),
            _ => return None,
        },
        (value, Some(unit), None) => format!("{value} {unit}"),
        _ => return None,
    };
    let start = interval.value.span().start;
    let mut end = start;
    text.push(' ');
    for _ in 0..tokens {
        let t = parser.next_token();
        end = t.span.end;
        match &t.token {
            Token::Minus => text.push('-'),
            Token::Plus => {}
            Token::Number(n, _) => text.push_str(n),
            other => text.push_str(&format!(" {other}")),
        }
    }
    let value = Value::SingleQuotedString(text).with_span(sqlparser::tokenizer::Span::new(start, end));
    Some(Expr::Interval(Interval {
        value: Box::new(Expr::Value(value)),
        leading_field: None,
        leading_precision: None,
        last_field: None,
        fractional_seconds_precision: None,
    }))
}

impl Dialect for SparkDialect {
    fn dialect(&self) -> TypeId {
        TypeId::of::<DatabricksDialect>()
    }

    fn get_next_precedence(&self, parser: &Parser) -> Option<Result<u8, ParserError>> {
        if interval_continues(parser).is_some() {
            // binds before any operator: `ts + INTERVAL 2 HOURS 30 MINUTES` adds both
            return Some(Ok(self.prec_value(Precedence::Period)));
        }
        next_is_div(parser).then(|| Ok(self.prec_value(Precedence::MulDivModOp)))
    }

    fn parse_infix(&self, parser: &mut Parser, expr: &Expr, precedence: u8) -> Option<Result<Expr, ParserError>> {
        if let (Expr::Interval(interval), Some(tokens)) = (expr, interval_continues(parser)) {
            return join_interval(parser, interval, tokens).map(Ok);
        }
        if !next_is_div(parser) {
            return None;
        }
        parser.next_token();
        Some(parser.parse_subexpr(precedence).map(|right| Expr::BinaryOp {
            left: Box::new(expr.clone()),
            op: BinaryOperator::MyIntegerDivide,
            right: Box::new(right),
        }))
    }

    // The rest as DatabricksDialect.
    fn is_delimited_identifier_start(&self, ch: char) -> bool {
        DatabricksDialect.is_delimited_identifier_start(ch)
    }

    fn supports_string_literal_column_alias(&self, explicit: bool) -> bool {
        DatabricksDialect.supports_string_literal_column_alias(explicit)
    }

    fn supports_string_literal_table_alias(&self, explicit: bool) -> bool {
        DatabricksDialect.supports_string_literal_table_alias(explicit)
    }

    fn supports_comparison_in_between_low_bound(&self) -> bool {
        DatabricksDialect.supports_comparison_in_between_low_bound()
    }

    fn identifier_quote_style(&self, identifier: &str) -> Option<char> {
        DatabricksDialect.identifier_quote_style(identifier)
    }

    fn is_identifier_start(&self, ch: char) -> bool {
        DatabricksDialect.is_identifier_start(ch)
    }

    fn is_identifier_part(&self, ch: char) -> bool {
        DatabricksDialect.is_identifier_part(ch)
    }

    fn is_table_factor(&self, kw: &Keyword, parser: &mut Parser) -> bool {
        DatabricksDialect.is_table_factor(kw, parser)
    }

    fn supports_numeric_prefix(&self) -> bool {
        DatabricksDialect.supports_numeric_prefix()
    }

    fn supports_filter_during_aggregation(&self) -> bool {
        DatabricksDialect.supports_filter_during_aggregation()
    }

    fn supports_group_by_expr(&self) -> bool {
        DatabricksDialect.supports_group_by_expr()
    }

    fn supports_table_versioning(&self) -> bool {
        DatabricksDialect.supports_table_versioning()
    }

    fn supports_lambda_functions(&self) -> bool {
        DatabricksDialect.supports_lambda_functions()
    }

    fn supports_select_wildcard_except(&self) -> bool {
        DatabricksDialect.supports_select_wildcard_except()
    }

    /// `false`, unlike Databricks: Spark takes `INTERVAL '2 hours 30 minutes'` without a unit
    /// after the string (and an interval's number is a literal, never an expression).
    fn require_interval_qualifier(&self) -> bool {
        false
    }

    fn supports_struct_literal(&self) -> bool {
        DatabricksDialect.supports_struct_literal()
    }

    // `TRIM(LEADING FROM s)`: a side without characters (Spark's `ltrim(s)`); the parser reads
    // it only where this is on (`trim(s, chars)`, which it also reads then, is refused when
    // lowered)
    fn supports_comma_separated_trim(&self) -> bool {
        true
    }

    fn supports_nested_comments(&self) -> bool {
        DatabricksDialect.supports_nested_comments()
    }

    fn supports_group_by_with_modifier(&self) -> bool {
        DatabricksDialect.supports_group_by_with_modifier()
    }

    fn supports_values_as_table_factor(&self) -> bool {
        DatabricksDialect.supports_values_as_table_factor()
    }

    fn supports_optimize_table(&self) -> bool {
        DatabricksDialect.supports_optimize_table()
    }

    fn supports_bang_not_operator(&self) -> bool {
        DatabricksDialect.supports_bang_not_operator()
    }

    fn supports_cte_without_as(&self) -> bool {
        DatabricksDialect.supports_cte_without_as()
    }

    fn supports_select_item_multi_column_alias(&self) -> bool {
        DatabricksDialect.supports_select_item_multi_column_alias()
    }

    fn supports_map_literal_with_angle_brackets(&self) -> bool {
        DatabricksDialect.supports_map_literal_with_angle_brackets()
    }

    fn supports_data_type_collation(&self) -> bool {
        DatabricksDialect.supports_data_type_collation()
    }

    fn supports_string_literal_backslash_escape(&self) -> bool {
        DatabricksDialect.supports_string_literal_backslash_escape()
    }

    fn supports_select_wildcard_replace(&self) -> bool {
        DatabricksDialect.supports_select_wildcard_replace()
    }

    fn supports_from_first_select(&self) -> bool {
        DatabricksDialect.supports_from_first_select()
    }

    fn supports_pipe_operator(&self) -> bool {
        DatabricksDialect.supports_pipe_operator()
    }
}
