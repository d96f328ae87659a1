//! # eddy-sql: Spark SQL text to Eddy's expression plan
//!
//! Parses one Spark SQL expression (SQL.md "Expressions": a source's `filter` and `select`, a
//! sink's `select`) with the `sqlparser` crate and lowers its AST into the engine's [`Syntax`],
//! which [`eddy_engine::expr::bind`] types against a schema. The engine never sees SQL text, and
//! does not depend on `sqlparser`. [`parse_pipeline_str`] and [`load_pipeline`] read pipeline
//! files with these fields (the engine's own readers refuse them): the `eddy` binary and the
//! benchmarks load pipelines through them. [`parse_query`] reads a `[query] sql` text (one
//! `SELECT` over one source, SQL.md "Queries") into the engine's
//! [`QuerySyntax`], which pipeline validation plans onto the
//! operators (`eddy_engine::spec::plan_sql_query`).
//!
//! The dialect is sqlparser's Databricks dialect (the one of its dialects that reads Spark's
//! `1L` / `1.5D` literal suffixes and `'it\'s'` escapes; Generic and Hive read `1.5D` as `1.5 AS
//! D` or refuse the escape) with Spark's infix `div` added (`dialect.rs`).
#![deny(missing_docs)]

mod dialect;
mod query;
#[cfg(test)]
mod tests_structs;

use std::path::Path;

use eddy_engine::Schema;
pub use eddy_engine::expr::Parsed;
use eddy_engine::expr::{
    self, BinaryOp, ExprError, LikeKind, Literal, Pos, QuerySyntax, SqlFrontEnd, Syntax, SyntaxKind, TrimSide, Typed,
};
use eddy_engine::spec::{self, Pipeline, SpecError};
pub use query::parse_query;
use sqlparser::ast::{
    self, BinaryOperator, CastKind, Expr, FunctionArg, FunctionArgExpr, FunctionArguments, ObjectNamePart, SelectItem,
    Spanned, UnaryOperator, Value,
};
use sqlparser::keywords::Keyword;
use sqlparser::parser::{Parser, ParserError, ParserOptions};
use sqlparser::tokenizer::{Span, Token, TokenWithSpan, Tokenizer, Word};

/// Errors of parsing and binding an expression: where in the text (line:column), what was
/// found and what is allowed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SqlError {
    /// The text is not a Spark SQL expression.
    #[error("at {pos}: {found} (expected {allowed})")]
    Syntax {
        /// Where.
        pos: Pos,
        /// What the parser found.
        found: String,
        /// What it expected.
        allowed: String,
    },
    /// Valid Spark SQL outside what Eddy supports (SQL.md), named.
    #[error("at {pos}: {found} is not supported (supported: {allowed})")]
    Unsupported {
        /// Where.
        pos: Pos,
        /// The construct.
        found: String,
        /// What is supported instead.
        allowed: String,
    },
    /// Binding against the schema failed (unknown column, types).
    #[error(transparent)]
    Bind(#[from] ExprError),
}

/// A bound expression and its output column name (the alias, or Spark's name of it).
#[derive(Debug, Clone)]
pub struct Bound {
    /// The typed plan.
    pub typed: Typed,
    /// The output column name.
    pub name: String,
}

/// Parses one expression, optionally followed by `AS alias` (or a bare alias).
/// `count(*)` is read as `count(1)`, as Spark reads it.
///
/// # Errors
/// [`SqlError::Syntax`] when the text is not one expression; [`SqlError::Unsupported`] for
/// Spark SQL that Eddy does not implement (subqueries, window functions, `*`, DECIMAL
/// literals where refused, subscripts `a[0]`, ...).
pub fn parse_expression(text: &str) -> Result<Parsed, SqlError> {
    let _source = Source::set(text);
    let dialect = dialect::SparkDialect;
    // literals raw: Spark's own unescaping keeps `\%` and `\_` for LIKE ([`spark_unescape`])
    let options = ParserOptions::new().with_unescape(false);
    let mut parser = Parser::new(&dialect).with_options(options).with_tokens_with_locations(tokens(text)?);
    let item = parser.parse_select_item().map_err(|e| parse_error(e, text))?;
    let next = parser.peek_token();
    if next.token != Token::EOF {
        return Err(SqlError::Syntax {
            pos: pos(next.span.start),
            found: format!("`{}` after the expression", next.token),
            allowed: "one expression, optionally with AS alias".into(),
        });
    }
    match item {
        SelectItem::UnnamedExpr(e) => Ok(Parsed { syntax: lower(&e)?, alias: None }),
        SelectItem::ExprWithAlias { expr, alias } => Ok(Parsed { syntax: lower(&expr)?, alias: Some(alias.value) }),
        other => Err(SqlError::Unsupported {
            pos: pos(other.span().start),
            found: format!("`{other}`"),
            allowed: "an expression (a `*` is only a whole item of a `select` list)".into(),
        }),
    }
}

/// Parses and binds one expression against `schema`.
///
/// # Errors
/// As [`parse_expression`], and [`SqlError::Bind`] from [`expr::bind`].
pub fn bind_expression(text: &str, schema: &Schema) -> Result<Bound, SqlError> {
    let parsed = parse_expression(text)?;
    let typed = expr::bind(&parsed.syntax, schema)?;
    let name = parsed.alias.unwrap_or_else(|| typed.output_name().to_string());
    Ok(Bound { typed, name })
}

/// As [`bind_expression`], with the functions registered in `registry` callable (scalar UDFs;
/// `eddy_engine::registry::Registry::register_udf`).
///
/// # Errors
/// As [`bind_expression`]; a UDF's call with a wrong number or type of arguments is a
/// [`SqlError::Bind`] at its position.
pub fn bind_expression_in(
    text: &str,
    schema: &Schema,
    registry: &eddy_engine::registry::Registry,
) -> Result<Bound, SqlError> {
    expr::with_user_functions(registry.functions(), || bind_expression(text, schema))
}

/// Spark SQL as Eddy reads it: the [`SqlFrontEnd`] that pipeline validation takes.
#[derive(Debug, Clone, Copy, Default)]
pub struct SparkSql;

impl SqlFrontEnd for SparkSql {
    fn parse_expression(&self, text: &str) -> Result<Parsed, ExprError> {
        parse_expression(text).map_err(SqlError::into_expr_error)
    }

    fn parse_query(&self, text: &str) -> Result<QuerySyntax, ExprError> {
        parse_query(text).map_err(SqlError::into_expr_error)
    }
}

impl SqlError {
    /// The engine's form of this error (the same position, found and allowed).
    pub fn into_expr_error(self) -> ExprError {
        match self {
            SqlError::Syntax { pos, found, allowed } => ExprError::Syntax { pos, found, allowed },
            SqlError::Unsupported { pos, found, allowed } => ExprError::Unsupported { pos, found, allowed },
            SqlError::Bind(e) => e,
        }
    }
}

fn pos(l: sqlparser::tokenizer::Location) -> Pos {
    Pos { line: l.line, column: l.column }
}

/// The tokens of `text` for the parser (literals raw: Spark's own unescaping keeps `\%` and `\_`
/// for LIKE, [`spark_unescape`]), with Spark's DOUBLE suffix after an exponent joined back:
/// sqlparser reads `1e3D` as the number `1e3` then the word `D`, an implicit alias (`SELECT
/// 1e3D` would name its column `D`, and `1e3D < x` would not parse), where Spark reads one
/// DOUBLE literal, as it reads `1.5D` ([`suffixed_number`]).
pub(crate) fn tokens(text: &str) -> Result<Vec<TokenWithSpan>, SqlError> {
    let mut tokens = Tokenizer::new(&dialect::SparkDialect, text)
        .with_unescape(false)
        .tokenize_with_location()
        .map_err(|e| parse_error(ParserError::from(e), text))?;
    let mut i = 0;
    while i + 1 < tokens.len() {
        let joined = match (&tokens[i].token, &tokens[i + 1].token) {
            (Token::Number(n, false), Token::Word(w))
                if n.contains(['e', 'E'])
                    && w.quote_style.is_none()
                    && w.value.eq_ignore_ascii_case("d")
                    && tokens[i + 1].span.start == tokens[i].span.end =>
            {
                Some(Word { value: format!("{n}{}", w.value), quote_style: None, keyword: Keyword::NoKeyword })
            }
            _ => None,
        };
        if let Some(word) = joined {
            let span = Span::new(tokens[i].span.start, tokens[i + 1].span.end);
            tokens.splice(i..i + 2, [TokenWithSpan::new(Token::Word(word), span)]);
        }
        i += 1;
    }
    Ok(tokens)
}

/// sqlparser's messages end with "at Line: L, Column: C"; the position is taken from there
/// (the end of the text when the parser ran out of input).
fn parse_error(e: ParserError, text: &str) -> SqlError {
    let msg = match e {
        ParserError::TokenizerError(m) | ParserError::ParserError(m) => m,
        ParserError::RecursionLimitExceeded => "expression nested too deeply".to_string(),
    };
    let (msg_text, at) = match msg.rsplit_once(" at Line: ") {
        Some((t, at)) => (t.to_string(), at.to_string()),
        None => (msg.clone(), String::new()),
    };
    let mut p = Pos::default();
    if let Some((l, c)) = at.split_once(", Column: ") {
        p.line = l.trim().parse().unwrap_or(0);
        p.column = c.trim().parse().unwrap_or(0);
    }
    if p.line == 0 {
        let last = text.lines().last().unwrap_or("");
        p = Pos { line: text.lines().count().max(1) as u64, column: last.chars().count() as u64 + 1 };
    }
    let (allowed, found) = match msg_text.split_once(", found: ") {
        Some((exp, found)) => (exp.trim_start_matches("Expected: ").to_string(), found.to_string()),
        None => ("a Spark SQL expression (SQL.md)".to_string(), msg_text),
    };
    SqlError::Syntax { pos: p, found, allowed }
}

fn unsupported(at: &impl Spanned, found: impl Into<String>, allowed: &str) -> SqlError {
    SqlError::Unsupported { pos: pos(at.span().start), found: found.into(), allowed: allowed.into() }
}

/// `name(args) FILTER (WHERE condition)` with the condition moved inside the aggregate, as a
/// CASE WHEN whose missing ELSE is NULL, which the aggregate skips as the clause skips the row:
/// `count(*) FILTER (WHERE c)` is `count(CASE WHEN c THEN 1 END)`, `sum(x) FILTER (WHERE c)` is
/// `sum(CASE WHEN c THEN x END)`.
fn filter_rewrite(name: &str, args: &FunctionArguments, condition: &Expr) -> String {
    let written: Vec<String> = match args {
        FunctionArguments::List(list) => list
            .args
            .iter()
            .map(|a| match a {
                FunctionArg::Unnamed(FunctionArgExpr::Wildcard) => "1".to_string(),
                other => other.to_string(),
            })
            .collect(),
        _ => Vec::new(),
    };
    match written.split_first() {
        Some((first, rest)) => {
            let rest: String = rest.iter().map(|r| format!(", {r}")).collect();
            format!("{name}(CASE WHEN {condition} THEN {first} END{rest})")
        }
        None => format!("{name}(CASE WHEN {condition} THEN ... END)"),
    }
}

fn node(kind: SyntaxKind, at: &impl Spanned) -> Syntax {
    Syntax { kind, pos: pos(at.span().start) }
}

thread_local! {
    /// The SQL text being lowered, for the few names that keep text as written.
    static SOURCE: std::cell::RefCell<String> = const { std::cell::RefCell::new(String::new()) };
}

/// The SQL text being lowered on this thread while it lives ([`SOURCE`]; the text before it
/// comes back when it is dropped, so a parse inside a parse is safe).
struct Source(String);

impl Source {
    fn set(text: &str) -> Source {
        Source(SOURCE.with(|s| s.replace(text.to_string())))
    }

    /// The field of `EXTRACT(field FROM x)` as written in the text being lowered: the word
    /// before the `FROM` that precedes `x` (`x` is the operand, whose position the parser
    /// keeps).
    fn field_of_extract(x: &Expr) -> Option<String> {
        let start = x.span().start;
        SOURCE.with(|s| {
            let s = s.borrow();
            let before = s.get(..byte_at(&s, start)?)?.trim_end();
            let cut = before.len().checked_sub(4)?;
            if !before.get(cut..)?.eq_ignore_ascii_case("FROM") {
                return None;
            }
            let word = before[..cut].trim_end().rsplit(|c: char| c == '(' || c.is_whitespace()).next()?;
            (!word.is_empty()).then(|| word.to_string())
        })
    }
}

impl Source {
    /// The position of the keyword written right before `at` (one of `words`, in any case),
    /// past whitespace, opening parentheses and a sign: `CAST` for the operand of `CAST((x) AS
    /// INT)`, `INTERVAL` for the `-1` of `INTERVAL -1 HOUR`. sqlparser gives a CAST, SUBSTRING,
    /// INTERVAL, ... the span of what it holds, so an error about the whole construct would
    /// otherwise point at its operand. `None` when the text before `at` is no such keyword.
    fn keyword_before(at: Pos, words: &[&str]) -> Option<Pos> {
        SOURCE.with(|s| {
            let s = s.borrow();
            let start = byte_at(&s, sqlparser::tokenizer::Location { line: at.line, column: at.column })?;
            let before = s.get(..start)?.trim_end_matches(|c: char| c.is_whitespace() || matches!(c, '(' | '-' | '+'));
            let word_start = before
                .char_indices()
                .rev()
                .take_while(|(_, c)| c.is_ascii_alphanumeric() || *c == '_')
                .last()
                .map(|(i, _)| i)?;
            let word = &before[word_start..];
            if !words.iter().any(|w| w.eq_ignore_ascii_case(word)) {
                return None;
            }
            let line_start = before[..word_start].rfind('\n').map_or(0, |i| i + 1);
            Some(Pos {
                line: 1 + before[..word_start].matches('\n').count() as u64,
                column: 1 + before[line_start..word_start].chars().count() as u64,
            })
        })
    }
}

/// `kind` at the keyword that `words` lists, written right before `inner` (the position of the
/// construct's first lowered operand); at `e`'s own start when the text has no such keyword
/// there ([`Source::keyword_before`]).
fn keyword_node(kind: SyntaxKind, e: &Expr, inner: Pos, words: &[&str]) -> Syntax {
    Syntax { kind, pos: Source::keyword_before(inner, words).unwrap_or_else(|| pos(e.span().start)) }
}

impl Drop for Source {
    fn drop(&mut self) {
        let before = std::mem::take(&mut self.0);
        SOURCE.with(|s| s.replace(before));
    }
}

/// The byte offset of a parser location (1-based line and character column) in `text`.
fn byte_at(text: &str, at: sqlparser::tokenizer::Location) -> Option<usize> {
    let mut offset = 0;
    for (n, line) in text.split_inclusive('\n').enumerate() {
        if n as u64 + 1 == at.line {
            let col = at.column.checked_sub(1)? as usize;
            return Some(offset + line.char_indices().nth(col).map_or(line.len(), |(i, _)| i));
        }
        offset += line.len();
    }
    None
}

fn boxed(e: &Expr) -> Result<Box<Syntax>, SqlError> {
    lower(e).map(Box::new)
}

/// A DOUBLE literal (`digits`, as `written`): one beyond DOUBLE's range (`1e999`, which
/// parses as infinity) is refused, as Spark refuses it (INVALID_NUMERIC_LITERAL_RANGE).
fn double(digits: &str, written: &str) -> Result<Literal, String> {
    match digits.parse::<f64>() {
        Ok(v) if v.is_finite() => Ok(Literal::Double(v)),
        Ok(_) => Err(format!("{written} (outside the range of DOUBLE: INVALID_NUMERIC_LITERAL_RANGE)")),
        Err(_) => Err(written.to_string()),
    }
}

/// A number written with Spark's suffixes, which the tokenizer reads as an identifier:
/// `1L` (BIGINT), `1.5D` / `1e3D` (DOUBLE). `Y`, `S`, `F` and `BD` are refused.
fn suffixed_number(text: &str) -> Option<Result<Literal, String>> {
    let first = text.chars().next()?;
    if !(first.is_ascii_digit() || first == '.') {
        return None;
    }
    let upper = text.to_ascii_uppercase();
    let numeric =
        |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit() || matches!(b, b'.' | b'E' | b'+' | b'-'));
    if let Some(n) = upper.strip_suffix('L')
        && n.bytes().all(|b| b.is_ascii_digit())
    {
        return Some(n.parse().map(Literal::Long).map_err(|_| format!("{text} (out of BIGINT range)")));
    }
    if let Some(n) = upper.strip_suffix('D')
        && numeric(n)
        && !upper.ends_with("BD")
    {
        return Some(double(n, text));
    }
    if ["Y", "S", "F", "BD"].iter().any(|s| upper.strip_suffix(s).is_some_and(numeric)) {
        return Some(Err(format!("the literal {text} (TINYINT, SMALLINT, FLOAT and DECIMAL suffixes)")));
    }
    None
}

fn number(text: &str, long: bool) -> Result<Literal, String> {
    if long {
        return text.parse().map(Literal::Long).map_err(|_| text.to_string());
    }
    if text.contains(['e', 'E']) {
        return double(text, text);
    }
    if text.contains('.') {
        return Ok(Literal::Decimal(text.to_string()));
    }
    // beyond BIGINT, Spark reads an integer as a DECIMAL of its digits
    Ok(text.parse().map(Literal::Integer).unwrap_or_else(|_| Literal::Decimal(text.to_string())))
}

/// The engine type of a CAST target, by its SQL name.
/// The engine's type of a `CAST(... AS t)` written at `at` (its keyword).
fn cast_type(t: &ast::DataType, at: Pos) -> Result<eddy_engine::DataType, SqlError> {
    use eddy_engine::DataType as T;
    let name = t.to_string().to_ascii_uppercase();
    Ok(match name.as_str() {
        "INT" | "INTEGER" => T::Int,
        "BIGINT" | "LONG" => T::Long,
        "DOUBLE" => T::Double,
        "FLOAT" | "REAL" => T::Float,
        "STRING" => T::String,
        "BOOLEAN" => T::Boolean,
        "TIMESTAMP" => T::Timestamp,
        // DECIMAL(p, s), DECIMAL(p), DECIMAL, NUMERIC(...): as the schema DDL reads them
        d if d.starts_with("DEC") || d.starts_with("NUMERIC") => {
            match eddy_engine::Schema::parse_ddl(&format!("c {d}")).map(|s| s.fields()[0].data_type) {
                Ok(t) => t,
                Err(eddy_engine::schema::SchemaError::Ddl { why, .. }) => {
                    return Err(SqlError::Unsupported {
                        pos: at,
                        found: format!("CAST to {name} ({why})"),
                        allowed: "DECIMAL(p, s) with p <= 38, s <= p".into(),
                    });
                }
            }
        }
        "DATE" => T::Date,
        _ => {
            return Err(SqlError::Unsupported {
                pos: at,
                found: format!("CAST to {name}"),
                allowed: "INT, BIGINT, DOUBLE, FLOAT, STRING, BOOLEAN, TIMESTAMP, DATE, DECIMAL(p, s)".into(),
            });
        }
    })
}

/// µs per unit of an INTERVAL literal and Spark's singular unit name.
/// The number of an `INTERVAL n UNIT` as written: `5`, `-5`, `1.5`, `'5'`, `'-5'`.
fn interval_number(value: &Expr) -> Option<String> {
    match value {
        Expr::Value(v) => match &v.value {
            Value::Number(n, false) => Some(n.clone()),
            Value::SingleQuotedString(t) | Value::DoubleQuotedString(t) => Some(t.trim().to_string()),
            _ => None,
        },
        Expr::UnaryOp { op: UnaryOperator::Minus, expr } => Some(format!("-{}", interval_number(expr)?)),
        Expr::UnaryOp { op: UnaryOperator::Plus, expr } => interval_number(expr),
        _ => None,
    }
}

/// The fields of a day-time interval, from the largest: Spark's `DayTimeIntervalType` fields.
const INTERVAL_FIELDS: [&str; 4] = ["DAY", "HOUR", "MINUTE", "SECOND"];

/// A unit of an interval literal: its field (an index of [`INTERVAL_FIELDS`]), its length in
/// µs, and whether its number may have a fraction (SECOND only, as Spark). YEAR and MONTH (a
/// year-month interval) are not taken.
pub(crate) fn interval_unit(unit: &str) -> Option<(usize, i128, bool)> {
    Some(match unit.to_ascii_uppercase().trim_end_matches('S') {
        "WEEK" => (0, 7 * 86_400_000_000, false),
        "DAY" => (0, 86_400_000_000, false),
        "HOUR" => (1, 3_600_000_000, false),
        "MINUTE" => (2, 60_000_000, false),
        "SECOND" => (3, 1_000_000, true),
        "MILLISECOND" => (3, 1_000, false),
        "MICROSECOND" => (3, 1, false),
        _ => return None,
    })
}

/// The day-time interval of `(number, unit)` pairs, as Spark reads `INTERVAL 2 HOURS 30 MINUTES`
/// or `INTERVAL '1 week'`: the sum in µs (a fraction of a second cut to µs, as Spark) and its
/// first and last fields (Spark names the literal by them: `INTERVAL '02:30' HOUR TO MINUTE`).
/// `None`: not a number or unit taken here; `Some(Err)`: beyond BIGINT µs.
fn day_time_interval(parts: &[(String, String)]) -> Option<Result<(i64, usize, usize), ()>> {
    let (mut total, mut start, mut end) = (0i128, usize::MAX, 0);
    for (number, unit) in parts {
        let (field, per, fraction) = interval_unit(unit)?;
        let (negative, digits) = match number.strip_prefix('-') {
            Some(d) => (true, d),
            None => (false, number.strip_prefix('+').unwrap_or(number)),
        };
        let (whole, frac) = digits.split_once('.').unwrap_or((digits, ""));
        let all_digits = |t: &str| t.bytes().all(|b| b.is_ascii_digit());
        if whole.is_empty() && frac.is_empty()
            || !all_digits(whole)
            || !all_digits(frac)
            || !fraction && digits.contains('.')
        {
            return None;
        }
        let Ok(whole) = (if whole.is_empty() { Ok(0) } else { whole.parse::<i128>() }) else { return Some(Err(())) };
        let micros_of_fraction: i128 = format!("{frac:0<6}")[..6].parse().ok()?;
        let Some(micros) = whole.checked_mul(per).map(|m| m + micros_of_fraction) else { return Some(Err(())) };
        total += if negative { -micros } else { micros };
        if total.abs() > i128::from(i64::MAX) {
            return Some(Err(()));
        }
        start = start.min(field);
        end = end.max(field);
    }
    (start != usize::MAX).then_some(Ok((total as i64, start, end)))
}

/// The text of a string literal as Spark reads it (`unescapeSQLString`): a doubled quote is one
/// quote; `\'`, `\"`, `\\`, `\n`, `\t`, `\r`, `\b`, `\0`, `\Z` and `\uXXXX` are the
/// characters they name; `\%` and `\_` keep their backslash (LIKE escapes); a backslash
/// before any other character is dropped.
fn spark_unescape(raw: &str, quote: char) -> String {
    let mut out = String::with_capacity(raw.len());
    let mut chars = raw.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' => match chars.next() {
                Some('n') => out.push('\n'),
                Some('t') => out.push('\t'),
                Some('r') => out.push('\r'),
                Some('b') => out.push('\u{8}'),
                Some('0') => out.push('\0'),
                Some('Z') => out.push('\u{1a}'),
                Some(c @ ('%' | '_')) => {
                    out.push('\\');
                    out.push(c);
                }
                Some('u') => {
                    let hex: String = chars.by_ref().take(4).collect();
                    match u32::from_str_radix(&hex, 16).ok().and_then(char::from_u32) {
                        Some(ch) if hex.len() == 4 => out.push(ch),
                        _ => {
                            out.push('u');
                            out.push_str(&hex);
                        }
                    }
                }
                Some(other) => out.push(other),
                None => out.push('\\'),
            },
            c if c == quote && chars.peek() == Some(&quote) => {
                chars.next();
                out.push(quote);
            }
            c => out.push(c),
        }
    }
    out
}

/// Spark's name of a day-time interval literal of `micros` from field `start` to field `end`
/// (`IntervalUtils.toDayTimeIntervalString`): `INTERVAL '1' DAY`, `INTERVAL '-02' HOUR`,
/// `INTERVAL '01.5' SECOND`, `INTERVAL '02:30' HOUR TO MINUTE`, `INTERVAL '1 02' DAY TO HOUR`.
/// The first field is the whole count of its unit (`'90' SECOND`, `'25' HOUR`), the others
/// two digits; seconds keep their fraction without trailing zeros.
fn interval_text(micros: i64, start: usize, end: usize) -> String {
    const PER: [u128; 4] = [86_400_000_000, 3_600_000_000, 60_000_000, 1_000_000];
    let sign = if micros < 0 { "-" } else { "" };
    let mut rest = u128::from(micros.unsigned_abs());
    let mut text = String::new();
    for (field, per) in PER.iter().enumerate().take(end + 1).skip(start) {
        let n = rest / per;
        rest %= per;
        let separator = match field {
            _ if field == start => "",
            1 => " ",
            _ => ":",
        };
        text.push_str(separator);
        match field {
            0 => text.push_str(&n.to_string()),
            3 if rest > 0 => {
                text.push_str(format!("{n:02}.{rest:06}").trim_end_matches('0'));
                rest = 0;
            }
            _ => text.push_str(&format!("{n:02}")),
        }
    }
    let fields = if end > start {
        format!("{} TO {}", INTERVAL_FIELDS[start], INTERVAL_FIELDS[end])
    } else {
        INTERVAL_FIELDS[start].to_string()
    };
    format!("INTERVAL '{sign}{text}' {fields}")
}

/// Lowers one sqlparser expression into the engine's syntax tree.
///
/// sqlparser gives some nodes no span (a lambda `x -> x`, an empty tuple `()`): an error
/// at such a node takes the position of the nearest enclosing expression that has one.
fn lower(e: &Expr) -> Result<Syntax, SqlError> {
    lower_node(e).map_err(|err| err.at_least_at(pos(e.span().start)))
}

impl SqlError {
    /// This error, placed at `fallback` if it has no position (line 0: a node without span).
    pub(crate) fn at_least_at(self, fallback: Pos) -> SqlError {
        match self {
            SqlError::Syntax { pos, found, allowed } if pos.line == 0 => {
                SqlError::Syntax { pos: fallback, found, allowed }
            }
            SqlError::Unsupported { pos, found, allowed } if pos.line == 0 => {
                SqlError::Unsupported { pos: fallback, found, allowed }
            }
            other => other,
        }
    }
}

fn lower_node(e: &Expr) -> Result<Syntax, SqlError> {
    Ok(match e {
        Expr::Nested(inner) => lower(inner)?,
        Expr::Identifier(id) => {
            if id.quote_style.is_none()
                && let Some(lit) = suffixed_number(&id.value)
            {
                let lit = lit.map_err(|f| unsupported(e, f, "INT, BIGINT (1L), DOUBLE (1.5D, 1e3) literals"))?;
                node(SyntaxKind::Literal(lit), e)
            } else {
                node(SyntaxKind::Column(vec![id.value.clone()]), e)
            }
        }
        Expr::CompoundIdentifier(ids) => node(SyntaxKind::Column(ids.iter().map(|i| i.value.clone()).collect()), e),
        Expr::Value(v) => {
            let lit = match &v.value {
                Value::Number(n, long) => {
                    number(n, *long).map_err(|f| unsupported(e, f, "INT, BIGINT, DOUBLE literals"))?
                }
                Value::SingleQuotedString(s) => Literal::String(spark_unescape(s, '\'')),
                Value::DoubleQuotedString(s) => Literal::String(spark_unescape(s, '"')),
                Value::Boolean(b) => Literal::Bool(*b),
                Value::Null => Literal::Null,
                other => {
                    return Err(unsupported(
                        e,
                        format!("the literal {other}"),
                        "numbers, 'strings', true, false, NULL",
                    ));
                }
            };
            node(SyntaxKind::Literal(lit), e)
        }
        Expr::TypedString(ts) => {
            let text = match &ts.value.value {
                Value::SingleQuotedString(s) => spark_unescape(s, '\''),
                Value::DoubleQuotedString(s) => spark_unescape(s, '"'),
                other => other.to_string(),
            };
            match ts.data_type {
                ast::DataType::Timestamp(..) => node(SyntaxKind::Literal(Literal::Timestamp(text)), e),
                ast::DataType::Date => node(SyntaxKind::Literal(Literal::Date(text)), e),
                ref t => {
                    return Err(unsupported(e, format!("a {t} literal"), "TIMESTAMP '...', DATE '...'"));
                }
            }
        }
        Expr::Interval(iv) => {
            // at the keyword: the parser's span of an interval starts at its number
            let at = Source::keyword_before(pos(iv.value.span().start), &["interval"]).unwrap_or(pos(e.span().start));
            let refused = || SqlError::Unsupported {
                pos: at,
                found: format!("`{e}`"),
                allowed: "INTERVAL n UNIT with UNIT one of DAY, HOUR, MINUTE, SECOND, WEEK, MILLISECOND, MICROSECOND \
                     (plural too; a fraction of SECOND only), several at once (INTERVAL 2 HOURS 30 MINUTES), \
                     INTERVAL 'n' UNIT, INTERVAL 'n UNIT ...'"
                    .into(),
            };
            let parts: Vec<(String, String)> = match (iv.value.as_ref(), &iv.leading_field, &iv.last_field) {
                (value, Some(unit), None) => vec![(interval_number(value).ok_or_else(refused)?, unit.to_string())],
                (Expr::Value(v), None, None) => match &v.value {
                    Value::SingleQuotedString(text) | Value::DoubleQuotedString(text) => {
                        let words: Vec<&str> = text.split_whitespace().collect();
                        if words.is_empty() || !words.len().is_multiple_of(2) {
                            return Err(refused());
                        }
                        words.chunks(2).map(|w| (w[0].to_string(), w[1].to_string())).collect()
                    }
                    _ => return Err(refused()),
                },
                _ => return Err(refused()),
            };
            let (micros, start, end) = match day_time_interval(&parts) {
                Some(Ok(parsed)) => parsed,
                Some(Err(())) => {
                    return Err(SqlError::Unsupported {
                        pos: at,
                        found: format!("{e} (out of range)"),
                        allowed: "a smaller interval".into(),
                    });
                }
                None => return Err(refused()),
            };
            Syntax {
                kind: SyntaxKind::Literal(Literal::Interval { micros, text: interval_text(micros, start, end) }),
                pos: at,
            }
        }
        Expr::UnaryOp { op, expr } => match op {
            UnaryOperator::Minus => match lower(expr)? {
                // Spark's grammar reads `-5` as a negative literal (named `-5`), `-a` as a negation
                Syntax { kind: SyntaxKind::Literal(lit), .. }
                    if matches!(expr.as_ref(), Expr::Value(_) | Expr::Identifier(_)) =>
                {
                    let neg = match lit {
                        Literal::Integer(v) => Literal::Integer(-v),
                        Literal::Long(v) => Literal::Long(-v),
                        Literal::Double(v) => Literal::Double(-v),
                        // a DECIMAL zero has no sign: Spark names `-0.0` as `0.0`
                        Literal::Decimal(t) if t.bytes().all(|b| matches!(b, b'0' | b'.')) => Literal::Decimal(t),
                        Literal::Decimal(t) => Literal::Decimal(format!("-{t}")),
                        other => {
                            return Ok(node(
                                SyntaxKind::Negate(Box::new(Syntax {
                                    kind: SyntaxKind::Literal(other),
                                    pos: pos(expr.span().start),
                                })),
                                e,
                            ));
                        }
                    };
                    node(SyntaxKind::Literal(neg), e)
                }
                inner => node(SyntaxKind::Negate(Box::new(inner)), e),
            },
            UnaryOperator::Plus => node(SyntaxKind::Positive(boxed(expr)?), e),
            UnaryOperator::Not | UnaryOperator::BangNot => node(SyntaxKind::Not(boxed(expr)?), e),
            // `~n`: a call of `~`, which no function name written without backticks can be
            UnaryOperator::BitwiseNot => node(SyntaxKind::Call { name: "~".into(), args: vec![lower(expr)?] }, e),
            other => return Err(unsupported(e, format!("the operator {other}"), "-, +, ~, NOT")),
        },
        Expr::BinaryOp { left, op, right } => {
            let op = match op {
                BinaryOperator::Plus => BinaryOp::Plus,
                BinaryOperator::Minus => BinaryOp::Minus,
                BinaryOperator::Multiply => BinaryOp::Multiply,
                BinaryOperator::Divide => BinaryOp::Divide,
                BinaryOperator::Modulo => BinaryOp::Modulo,
                BinaryOperator::MyIntegerDivide => BinaryOp::Div,
                BinaryOperator::Eq => BinaryOp::Eq,
                BinaryOperator::NotEq => BinaryOp::NotEq,
                BinaryOperator::Lt => BinaryOp::Lt,
                BinaryOperator::LtEq => BinaryOp::LtEq,
                BinaryOperator::Gt => BinaryOp::Gt,
                BinaryOperator::GtEq => BinaryOp::GtEq,
                BinaryOperator::Spaceship => BinaryOp::NullSafeEq,
                BinaryOperator::And => BinaryOp::And,
                BinaryOperator::Or => BinaryOp::Or,
                BinaryOperator::StringConcat => BinaryOp::Concat,
                BinaryOperator::BitwiseAnd => BinaryOp::BitAnd,
                BinaryOperator::BitwiseOr => BinaryOp::BitOr,
                BinaryOperator::BitwiseXor | BinaryOperator::PGBitwiseXor => BinaryOp::BitXor,
                other => {
                    return Err(unsupported(
                        e,
                        format!("the operator {other}"),
                        "+ - * / % div = == <> != < <= > >= <=> AND OR || & | ^",
                    ));
                }
            };
            // sqlparser's span of the whole leaves out an operand without span (a struct
            // literal): then at the left operand's start, when that is earlier
            let left = boxed(left)?;
            let whole = pos(e.span().start);
            let earlier = |a: Pos, b: Pos| (a.line, a.column) < (b.line, b.column);
            let at = if left.pos.line != 0 && (whole.line == 0 || earlier(left.pos, whole)) { left.pos } else { whole };
            Syntax { kind: SyntaxKind::Binary { op, left, right: boxed(right)? }, pos: at }
        }
        Expr::IsNull(x) => node(SyntaxKind::IsNull { expr: boxed(x)?, negated: false }, e),
        Expr::IsNotNull(x) => node(SyntaxKind::IsNull { expr: boxed(x)?, negated: true }, e),
        Expr::IsTrue(x) => node(SyntaxKind::IsBool { expr: boxed(x)?, value: true, negated: false }, e),
        Expr::IsNotTrue(x) => node(SyntaxKind::IsBool { expr: boxed(x)?, value: true, negated: true }, e),
        Expr::IsFalse(x) => node(SyntaxKind::IsBool { expr: boxed(x)?, value: false, negated: false }, e),
        Expr::IsNotFalse(x) => node(SyntaxKind::IsBool { expr: boxed(x)?, value: false, negated: true }, e),
        Expr::Between { expr, negated, low, high } => {
            node(SyntaxKind::Between { expr: boxed(expr)?, low: boxed(low)?, high: boxed(high)?, negated: *negated }, e)
        }
        Expr::In { expr, target: ast::InTarget::List(list), negated, global: false } => node(
            SyntaxKind::InList {
                expr: boxed(expr)?,
                list: list.iter().map(lower).collect::<Result<_, _>>()?,
                negated: *negated,
            },
            e,
        ),
        Expr::Like { negated, any: false, expr, pattern, escape_char }
        | Expr::ILike { negated, any: false, expr, pattern, escape_char } => {
            let ilike = matches!(e, Expr::ILike { .. });
            let kind = match escape_char.as_deref() {
                None if ilike => LikeKind::ILike,
                None => LikeKind::Like,
                Some(c) => {
                    let one = match c {
                        Expr::Value(v) => match &v.value {
                            Value::SingleQuotedString(t) => {
                                let mut chars = t.chars();
                                chars.next().filter(|_| chars.next().is_none())
                            }
                            _ => None,
                        },
                        _ => None,
                    };
                    let Some(one) = one else {
                        return Err(unsupported(
                            c,
                            format!("the ESCAPE {c}"),
                            "ESCAPE followed by one character in quotes",
                        ));
                    };
                    if ilike { LikeKind::ILikeEscape(one) } else { LikeKind::LikeEscape(one) }
                }
            };
            node(SyntaxKind::Like { kind, expr: boxed(expr)?, pattern: boxed(pattern)?, negated: *negated }, e)
        }
        Expr::RLike { negated, expr, pattern, .. } => node(
            SyntaxKind::Like { kind: LikeKind::RLike, expr: boxed(expr)?, pattern: boxed(pattern)?, negated: *negated },
            e,
        ),
        Expr::Case { operand, conditions, else_result, .. } => node(
            SyntaxKind::Case {
                operand: operand.as_deref().map(boxed).transpose()?,
                branches: conditions.iter().map(|w| Ok((lower(&w.condition)?, lower(&w.result)?))).collect::<Result<
                    _,
                    SqlError,
                >>(
                )?,
                otherwise: else_result.as_deref().map(boxed).transpose()?,
            },
            e,
        ),
        Expr::Cast { kind, expr, data_type, format: None } => {
            let try_cast = match kind {
                CastKind::Cast | CastKind::DoubleColon => false,
                CastKind::TryCast => true,
                CastKind::SafeCast => return Err(unsupported(e, "SAFE_CAST", "CAST, ::, TRY_CAST")),
            };
            let operand = boxed(expr)?;
            // `x::INT` starts at `x`; `CAST(x AS INT)` at its keyword
            let at = match kind {
                CastKind::DoubleColon => pos(e.span().start),
                _ => Source::keyword_before(operand.pos, &["cast", "try_cast"]).unwrap_or(pos(e.span().start)),
            };
            let to = cast_type(data_type, at)?;
            Syntax { kind: SyntaxKind::Cast { expr: operand, to, try_cast }, pos: at }
        }
        Expr::Substring { expr, substring_from, substring_for, shorthand, .. } => {
            let mut args = vec![lower(expr)?];
            if let Some(f) = substring_from {
                args.push(lower(f)?);
            }
            if let Some(f) = substring_for {
                args.push(lower(f)?);
            }
            let name = if *shorthand { "substr" } else { "substring" };
            let inner = args[0].pos;
            keyword_node(SyntaxKind::Call { name: name.into(), args }, e, inner, &["substring", "substr"])
        }
        Expr::Trim { trim_where: None, trim_what: None, expr, trim_characters: None } => {
            let operand = lower(expr)?;
            let inner = operand.pos;
            keyword_node(SyntaxKind::Call { name: "trim".into(), args: vec![operand] }, e, inner, &["trim"])
        }
        Expr::Trim { trim_where, trim_what, expr, trim_characters: None } => {
            let side = match trim_where {
                Some(ast::TrimWhereField::Leading) => TrimSide::Leading,
                Some(ast::TrimWhereField::Trailing) => TrimSide::Trailing,
                _ => TrimSide::Both,
            };
            node(SyntaxKind::Trim { side, expr: boxed(expr)?, chars: trim_what.as_deref().map(boxed).transpose()? }, e)
        }
        // `POSITION(sub IN s)` is Spark's `locate(sub, s)` (and named so)
        Expr::Position { expr, r#in } => {
            let args = vec![lower(expr)?, lower(r#in)?];
            let inner = args[0].pos;
            keyword_node(SyntaxKind::Call { name: "locate".into(), args }, e, inner, &["position"])
        }
        // `EXTRACT(field FROM x)`: a call of `extract` with the field as written (the parser
        // upper-cases it; Spark's name keeps the text)
        Expr::Extract { field, syntax: ast::ExtractSyntax::From, expr } => {
            let written = Source::field_of_extract(expr).unwrap_or_else(|| field.to_string());
            let field = node(SyntaxKind::Literal(Literal::String(written)), e);
            node(SyntaxKind::Call { name: "extract".into(), args: vec![field, lower(expr)?] }, e)
        }
        Expr::Ceil { expr, field: ast::CeilFloorKind::DateTimeField(ast::DateTimeField::NoDateTime) }
        | Expr::Floor { expr, field: ast::CeilFloorKind::DateTimeField(ast::DateTimeField::NoDateTime) } => {
            let name = if matches!(e, Expr::Ceil { .. }) { "ceil" } else { "floor" };
            let operand = lower(expr)?;
            let inner = operand.pos;
            keyword_node(
                SyntaxKind::Call { name: name.into(), args: vec![operand] },
                e,
                inner,
                &["ceil", "ceiling", "floor"],
            )
        }
        // `named_struct('k', v).k`: fields of a struct-valued expression
        Expr::CompoundFieldAccess { root, access_chain } => {
            let mut t = lower(root)?;
            for step in access_chain {
                let ast::AccessExpr::Dot(Expr::Identifier(id)) = step else {
                    return Err(unsupported(e, format!("`{e}`"), "`.field` after a struct (no subscripts)"));
                };
                t = Syntax {
                    kind: SyntaxKind::Field { expr: Box::new(t), field: id.value.clone() },
                    pos: pos(e.span().start),
                };
            }
            t
        }
        // `struct(a, b AS c)`: the parser's struct literal, a call of `struct` here
        Expr::Struct { values, fields } if fields.is_empty() => {
            let args: Vec<Syntax> = values
                .iter()
                .map(|v| match v {
                    Expr::Named { expr, name } => {
                        Ok(node(SyntaxKind::Alias { expr: boxed(expr)?, alias: name.value.clone() }, v))
                    }
                    other => lower(other),
                })
                .collect::<Result<_, SqlError>>()?;
            // sqlparser gives a struct literal no span: the `struct` keyword before its first
            // field, else that field
            let first = args.first().map(|a| a.pos).filter(|p| p.line != 0);
            let at = first
                .map(|p| Source::keyword_before(p, &["struct"]).unwrap_or(p))
                .unwrap_or_else(|| pos(e.span().start));
            Syntax { kind: SyntaxKind::Call { name: "struct".into(), args }, pos: at }
        }
        Expr::Function(f) => {
            let name = match f.name.0.as_slice() {
                [ObjectNamePart::Identifier(id)] => id.value.clone(),
                _ => {
                    return Err(unsupported(
                        e,
                        format!("the function name {}", f.name),
                        "an unqualified function name",
                    ));
                }
            };
            if let Some(condition) = &f.filter {
                return Err(unsupported(
                    e,
                    format!("`{e}` (aggregate FILTER clauses are not supported)"),
                    &format!("the condition inside the aggregate: {}", filter_rewrite(&name, &f.args, condition)),
                ));
            }
            if f.over.is_some() || !f.within_group.is_empty() {
                return Err(unsupported(
                    e,
                    format!("`{e}`"),
                    "a plain function call (window functions: use rolling_window)",
                ));
            }
            // `first(x) IGNORE NULLS`: as Spark 4.3, only for first / last and their aliases
            // (INVALID_SQL_SYNTAX.FUNCTION_WITH_UNSUPPORTED_SYNTAX for any other function)
            let picks = ["first", "first_value", "last", "last_value", "any_value"];
            if f.null_treatment.is_some() && !picks.iter().any(|p| name.eq_ignore_ascii_case(p)) {
                return Err(unsupported(
                    e,
                    format!("`{e}` ({} does not take IGNORE / RESPECT NULLS)", name.to_ascii_lowercase()),
                    "IGNORE NULLS or RESPECT NULLS after first, first_value, last, last_value or any_value, as Spark",
                ));
            }
            let args = match &f.args {
                FunctionArguments::None => vec![],
                FunctionArguments::List(list)
                    if matches!(list.duplicate_treatment, Some(ast::DuplicateTreatment::Distinct)) =>
                {
                    return Err(unsupported(
                        e,
                        format!("{}(DISTINCT ...)", name.to_ascii_lowercase()),
                        "aggregates over all values (Spark refuses distinct aggregates on streams; approx_count_distinct counts distinct values)",
                    ));
                }
                // Spark reads `count(*)` as `count(1)` (and names it so)
                FunctionArguments::List(list)
                    if name.eq_ignore_ascii_case("count")
                        && matches!(list.args.as_slice(), [FunctionArg::Unnamed(FunctionArgExpr::Wildcard)]) =>
                {
                    vec![node(SyntaxKind::Literal(Literal::Integer(1)), e)]
                }
                FunctionArguments::List(list) if list.duplicate_treatment.is_none() && list.clauses.is_empty() => list
                    .args
                    .iter()
                    .map(|a| match a {
                        FunctionArg::Unnamed(FunctionArgExpr::Expr(x)) => lower(x),
                        other => Err(unsupported(e, format!("the argument `{other}`"), "expressions as arguments")),
                    })
                    .collect::<Result<_, _>>()?,
                _ => return Err(unsupported(e, format!("`{e}`"), "name(expression, ...)")),
            };
            let (name, args) = match f.null_treatment {
                Some(treatment) => null_treatment(name, args, treatment, e),
                None => (name, args),
            };
            node(SyntaxKind::Call { name, args }, e)
        }
        Expr::Subquery(_) | Expr::Exists { .. } | Expr::In { target: ast::InTarget::Subquery(_), .. } => {
            return Err(unsupported(
                e,
                "a subquery",
                "expressions over the record's columns (subqueries are not implemented yet)",
            ));
        }
        other => return Err(unsupported(other, format!("`{other}`"), "the expressions of SQL.md")),
    })
}

/// `f(args) IGNORE NULLS` / `RESPECT NULLS` of first / last (and their aliases, checked by the
/// caller) as the call Spark 4.3 makes of it: the clause sets `ignoreNulls` (the second
/// argument), overriding one written (pyspark 4.3: `first(x, false) IGNORE NULLS` skips nulls,
/// `first(x, true) RESPECT NULLS` does not); and either names `first_value` / `last_value` as
/// `first` / `last` (`first_value(x) IGNORE NULLS` is named `first(x)`,
/// `any_value(x) IGNORE NULLS` `any_value(x)`).
fn null_treatment(
    name: String,
    mut args: Vec<Syntax>,
    treatment: ast::NullTreatment,
    e: &Expr,
) -> (String, Vec<Syntax>) {
    let name = if name.eq_ignore_ascii_case("first_value") {
        "first".to_string()
    } else if name.eq_ignore_ascii_case("last_value") {
        "last".to_string()
    } else {
        name
    };
    let ignore = matches!(treatment, ast::NullTreatment::IgnoreNulls);
    let ignore = node(SyntaxKind::Literal(Literal::Bool(ignore)), e);
    match args.len() {
        1 => args.push(ignore),
        2 => args[1] = ignore,
        // a wrong arity is refused by the planner as it is written
        _ => {}
    }
    (name, args)
}

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_builtins;

/// Parses and validates a pipeline file's text with its SQL expression fields read as Spark SQL
/// ([`eddy_engine::spec::parse_pipeline_with`] with [`SparkSql`]).
///
/// # Errors
/// As [`eddy_engine::spec::parse_pipeline_with`].
pub fn parse_pipeline_str(text: &str) -> Result<Pipeline, SpecError> {
    spec::parse_pipeline_with(text, &[], &SparkSql)
}

/// As [`parse_pipeline_str`], after `--set` overrides
/// ([`eddy_engine::spec::parse_pipeline_with_overrides`]).
///
/// # Errors
/// As [`eddy_engine::spec::parse_pipeline_with`].
pub fn parse_pipeline_with_overrides(text: &str, overrides: &[(String, String)]) -> Result<Pipeline, SpecError> {
    spec::parse_pipeline_with(text, overrides, &SparkSql)
}

/// Reads the pipeline file at `path` with its SQL expression fields read as Spark SQL
/// ([`eddy_engine::spec::load_pipeline_with`] with [`SparkSql`]).
///
/// # Errors
/// As [`eddy_engine::spec::load_pipeline_with`].
pub fn load_pipeline(path: &Path, overrides: &[(String, String)]) -> Result<Pipeline, SpecError> {
    spec::load_pipeline_with(path, overrides, &SparkSql)
}

/// As [`load_pipeline`], resolving the names of user code in `registry`
/// ([`eddy_engine::spec::load_pipeline_in`]).
///
/// # Errors
/// As [`eddy_engine::spec::load_pipeline_in`].
pub fn load_pipeline_in(
    path: &Path,
    overrides: &[(String, String)],
    registry: &eddy_engine::registry::Registry,
) -> Result<Pipeline, SpecError> {
    spec::load_pipeline_in(path, overrides, &SparkSql, registry)
}

/// As [`parse_pipeline_with_overrides`], resolving the names of user code in `registry`
/// ([`eddy_engine::spec::parse_pipeline_in`]).
///
/// # Errors
/// As [`eddy_engine::spec::parse_pipeline_in`].
pub fn parse_pipeline_in(
    text: &str,
    overrides: &[(String, String)],
    registry: &eddy_engine::registry::Registry,
) -> Result<Pipeline, SpecError> {
    spec::parse_pipeline_in(text, overrides, &SparkSql, registry)
}

#[cfg(test)]
mod tests_query;
#[cfg(test)]
mod tests_udf;
