//! The Spark SQL dialect: sqlparser's Databricks dialect plus Spark's infix `div`.

use std::any::TypeId;

use sqlparser::ast::{BinaryOperator, Expr};
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

impl Dialect for SparkDialect {
    fn dialect(&self) -> TypeId {
        TypeId::of::<DatabricksDialect>()
    }

    fn get_next_precedence(&self, parser: &Parser) -> Option<Result<u8, ParserError>> {
        next_is_div(parser).then(|| Ok(self.prec_value(Precedence::MulDivModOp)))
    }

    fn parse_infix(&self, parser: &mut Parser, expr: &Expr, precedence: u8) -> Option<Result<Expr, ParserError>> {
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

    fn require_interval_qualifier(&self) -> bool {
        DatabricksDialect.require_interval_qualifier()
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
