//! Spark SQL expressions (SQL.md "Expressions"): the typed plan and its compiled evaluation.
//!
//! Three steps, each its own type:
//!
//! 1. [`Syntax`]: an expression as written, untyped, each node with its position in the text.
//!    The `eddy-sql` crate builds it from SQL text; the engine never sees SQL text.
//! 2. [`bind`] resolves columns against a [`Schema`](crate::Schema) (ignoring case, as Spark's default
//!    `spark.sql.caseSensitive = false`), applies Spark's ANSI type rules (implicit casts are
//!    explicit nodes of the plan) and names every node as Spark names it: a [`Typed`] tree.
//! 3. [`Compiled::new`] turns the plan into nested closures, built once; [`Compiled::eval`]
//!    evaluates one record without looking at names or types again.
//!
//! Semantics are Apache Spark 4.3's with `spark.sql.ansi.enabled = true` and the session time
//! zone UTC: three-valued logic, integer overflow and division by zero are errors
//! ([`ExprError::Eval`]), `try_` functions return NULL instead. What is not implemented is
//! refused by [`bind`] with a message that names it ([`ExprError::Unsupported`]), never
//! evaluated differently from Spark.

mod aggregates;
mod bind;
mod calls;
mod calls_more;
mod cast;
mod compile;
mod dates;
mod decimal;
mod functions;
mod hash;
mod json;
mod now;
mod optimize;
mod query;
mod structs;
mod text;
mod udf;
mod zones;

use std::fmt;
use std::sync::Arc;

use crate::schema::DataType;

pub use aggregates::{
    SUPPORTED_AGGREGATES, first_unsupported_aggregate, is_unsupported_aggregate, unsupported_aggregate_error,
};
pub use bind::bind;
pub(crate) use bind::{implicit_cast, join_key_type, null_safe_keys, union_type};
pub use compile::Compiled;
pub(crate) use compile::{Dest, Fail};
pub(crate) use dates::parse_cast_date as parse_date;
pub use dates::write_date;
pub use now::{processing_time, set_processing_time};
pub use query::{FromSyntax, GroupItemSyntax, JoinSyntax, JoinTypeSyntax, QuerySyntax, SelectItemSyntax, UnionSyntax};
pub(crate) use text::{parse_cast_timestamp, trim_spark};
pub use udf::{ScalarFn, ScalarUdf, UdfFailure, UserFunctions, builtin_name, with_user_functions};
pub(crate) use udf::{current_aggregate, current_aggregate_names, functions_allowed, known_function};

/// A position in the expression text: 1-based line and column (in characters), as the SQL
/// parser reports them. `Pos::default()` (0:0) when the position is not known.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Pos {
    /// 1-based line.
    pub line: u64,
    /// 1-based column.
    pub column: u64,
}

impl fmt::Display for Pos {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.line, self.column)
    }
}

/// One parsed expression of a `select` list or `filter`: the expression and its `AS` alias.
#[derive(Debug, Clone, PartialEq)]
pub struct Parsed {
    /// The expression.
    pub syntax: Syntax,
    /// The alias after `AS` (or a bare alias), if any.
    pub alias: Option<String>,
}

/// The SQL front end: turns SQL text into [`Syntax`]. The engine does not parse SQL itself
/// (DESIGN.md: `engine/` never sees SQL text); the `eddy-sql` crate implements this trait with
/// the `sqlparser` crate, and pipeline validation ([`crate::spec::parse_pipeline_with`]) takes
/// one to read the file's `filter`, `select` and `sql` fields.
pub trait SqlFrontEnd: Sync {
    /// Parses one expression, optionally followed by `AS alias`.
    ///
    /// # Errors
    /// [`ExprError::Syntax`] when the text is not one expression, [`ExprError::Unsupported`] for
    /// Spark SQL that Eddy does not implement; positions are line:column in `text`.
    fn parse_expression(&self, text: &str) -> Result<Parsed, ExprError>;

    /// Parses one query (SQL.md "Queries"): a single `SELECT` over one source.
    ///
    /// # Errors
    /// [`ExprError::Syntax`] when the text is not one `SELECT` statement;
    /// [`ExprError::Unsupported`] naming what Eddy does not run (ORDER BY, LIMIT, DISTINCT,
    /// WITH, window functions, `count(DISTINCT ...)`, subqueries, joins, UNION, several
    /// statements); positions are line:column in `text`.
    fn parse_query(&self, text: &str) -> Result<QuerySyntax, ExprError>;
}

/// An expression as written (step 1): untyped, positioned.
#[derive(Clone, Debug, PartialEq)]
pub struct Syntax {
    /// What the node is.
    pub kind: SyntaxKind,
    /// Where it starts in the text.
    pub pos: Pos,
}

/// A literal as written.
#[derive(Clone, Debug, PartialEq)]
pub enum Literal {
    /// `NULL`.
    Null,
    /// `true` / `false`.
    Bool(bool),
    /// An integer without suffix: INT when it fits, else BIGINT (as Spark).
    Integer(i64),
    /// An integer with the `L` suffix: BIGINT.
    Long(i64),
    /// `1.5D`, `1e3`: DOUBLE.
    Double(f64),
    /// `1.5`: DECIMAL in Spark (the text as written).
    Decimal(String),
    /// `'text'` (escapes already resolved).
    String(String),
    /// `TIMESTAMP '2024-01-15 10:00:00'` (the quoted text).
    Timestamp(String),
    /// `DATE '2024-01-15'` (the quoted text).
    Date(String),
    /// `INTERVAL 10 MINUTES`, `INTERVAL '1' HOUR`: a day-time interval in microseconds, with
    /// Spark's text for it (`INTERVAL '10' MINUTE`).
    Interval {
        /// Length in µs.
        micros: i64,
        /// Spark's name of the literal.
        text: String,
    },
}

/// Binary operators.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BinaryOp {
    /// `+`
    Plus,
    /// `-`
    Minus,
    /// `*`
    Multiply,
    /// `/` (DOUBLE result for non-decimal operands, DECIMAL with a DECIMAL operand)
    Divide,
    /// `%`
    Modulo,
    /// `div` (integral division, BIGINT result)
    Div,
    /// `=` / `==`
    Eq,
    /// `<>` / `!=`
    NotEq,
    /// `<`
    Lt,
    /// `<=`
    LtEq,
    /// `>`
    Gt,
    /// `>=`
    GtEq,
    /// `<=>` (null-safe equality)
    NullSafeEq,
    /// `AND`
    And,
    /// `OR`
    Or,
    /// `||` (string concatenation)
    Concat,
    /// `&` (bitwise and of integers)
    BitAnd,
    /// `|` (bitwise or)
    BitOr,
    /// `^` (bitwise exclusive or)
    BitXor,
}

/// Pattern matching operators.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LikeKind {
    /// `LIKE` (`_`, `%`, escape `\`).
    Like,
    /// `ILIKE` (LIKE ignoring case).
    ILike,
    /// `RLIKE` / `REGEXP` (a regular expression found anywhere in the text).
    RLike,
    /// `LIKE ... ESCAPE 'c'`: `c` in place of `\\` as the escape.
    LikeEscape(char),
    /// `ILIKE ... ESCAPE 'c'`.
    ILikeEscape(char),
}

/// The side `TRIM(side chars FROM s)` trims.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TrimSide {
    /// `BOTH` (the default).
    Both,
    /// `LEADING`.
    Leading,
    /// `TRAILING`.
    Trailing,
}

/// The node kinds of [`Syntax`].
#[derive(Clone, Debug, PartialEq)]
pub enum SyntaxKind {
    /// A literal.
    Literal(Literal),
    /// A column reference: its name parts (`a`, `s.field`).
    Column(Vec<String>),
    /// Unary minus.
    Negate(Box<Syntax>),
    /// Unary plus (kept: Spark names `+a` as `(+ a)`).
    Positive(Box<Syntax>),
    /// `NOT x`.
    Not(Box<Syntax>),
    /// A binary operator.
    Binary {
        /// The operator.
        op: BinaryOp,
        /// Left operand.
        left: Box<Syntax>,
        /// Right operand.
        right: Box<Syntax>,
    },
    /// `x IS [NOT] NULL`.
    IsNull {
        /// The operand.
        expr: Box<Syntax>,
        /// `IS NOT NULL`.
        negated: bool,
    },
    /// `x IS [NOT] TRUE / FALSE`.
    IsBool {
        /// The operand.
        expr: Box<Syntax>,
        /// TRUE or FALSE.
        value: bool,
        /// `IS NOT`.
        negated: bool,
    },
    /// `x [NOT] BETWEEN low AND high`.
    Between {
        /// The operand.
        expr: Box<Syntax>,
        /// Lower bound (inclusive).
        low: Box<Syntax>,
        /// Upper bound (inclusive).
        high: Box<Syntax>,
        /// `NOT BETWEEN`.
        negated: bool,
    },
    /// `x [NOT] IN (a, b, ...)`.
    InList {
        /// The operand.
        expr: Box<Syntax>,
        /// The list (not empty).
        list: Vec<Syntax>,
        /// `NOT IN`.
        negated: bool,
    },
    /// `x [NOT] LIKE / ILIKE / RLIKE pattern`.
    Like {
        /// Which operator.
        kind: LikeKind,
        /// The text.
        expr: Box<Syntax>,
        /// The pattern.
        pattern: Box<Syntax>,
        /// `NOT LIKE`.
        negated: bool,
    },
    /// `TRIM([BOTH | LEADING | TRAILING] [chars] FROM s)`: the characters of `chars` (spaces
    /// when absent) removed from the side(s) of `s`.
    Trim {
        /// Which side.
        side: TrimSide,
        /// The text.
        expr: Box<Syntax>,
        /// The characters to remove.
        chars: Option<Box<Syntax>>,
    },
    /// `CASE [operand] WHEN ... THEN ... [ELSE ...] END`.
    Case {
        /// `CASE x WHEN ...` form: the compared value.
        operand: Option<Box<Syntax>>,
        /// `(WHEN, THEN)` pairs, at least one.
        branches: Vec<(Syntax, Syntax)>,
        /// `ELSE` (NULL when absent).
        otherwise: Option<Box<Syntax>>,
    },
    /// `CAST(x AS type)`, `x::type`, `try_cast(x AS type)`.
    Cast {
        /// The operand.
        expr: Box<Syntax>,
        /// The target type.
        to: DataType,
        /// `try_cast`: NULL instead of an error.
        try_cast: bool,
    },
    /// `expr.field`: a field of a struct-valued expression (`named_struct('k', v).k`); a
    /// column's field is a [`SyntaxKind::Column`] of several parts.
    Field {
        /// The struct.
        expr: Box<Syntax>,
        /// The field's name.
        field: String,
    },
    /// `expr AS name` inside `struct(...)`: the field's name.
    Alias {
        /// The value.
        expr: Box<Syntax>,
        /// The name after `AS`.
        alias: String,
    },
    /// A reference to the alias of an earlier select item (Spark's lateral column alias, SQL.md
    /// "Queries"), put here by the planner in place of the written name: binds as `expr` (the
    /// aliased item's expression), named `lateralAliasReference(name)` inside a larger
    /// expression, as Spark 4.3 names it (`(lateralAliasReference(gross) * 2)`).
    LateralAlias {
        /// The aliased expression (a field of it for `alias.field`).
        expr: Box<Syntax>,
        /// The last part of the reference as written (`gross`, `p` of `s.p`).
        name: String,
    },
    /// A function call `name(args)`; the name as written (matched ignoring case).
    Call {
        /// Function name.
        name: String,
        /// Arguments.
        args: Vec<Syntax>,
    },
}

/// The errors of expressions: binding errors (at validation, with a position) and evaluation
/// errors (per record, naming the expression that failed).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ExprError {
    /// The text is not Spark SQL (the front end's parser error).
    #[error("at {pos}: {found} (expected {allowed})")]
    Syntax {
        /// Where.
        pos: Pos,
        /// What the parser found.
        found: String,
        /// What it expected.
        allowed: String,
    },
    /// A column name that is not in the schema.
    #[error("at {pos}: unknown column `{given}` (columns: {allowed})")]
    UnknownColumn {
        /// Where.
        pos: Pos,
        /// The name as written.
        given: String,
        /// The schema's columns.
        allowed: String,
    },
    /// Operand types that the operator or function does not take (Spark's DATATYPE_MISMATCH).
    #[error("at {pos}: {found} (allowed: {allowed})")]
    Type {
        /// Where.
        pos: Pos,
        /// What was found.
        found: String,
        /// What is allowed.
        allowed: String,
    },
    /// A construct Spark has but Eddy does not implement (yet), named.
    #[error("at {pos}: {found} is not supported (supported: {allowed})")]
    Unsupported {
        /// Where.
        pos: Pos,
        /// What was found.
        found: String,
        /// What is supported instead.
        allowed: String,
    },
    /// Evaluation failed on a record, as Spark fails under ANSI mode: `DIVIDE_BY_ZERO in "a / b"`.
    #[error("{kind} in {expr:?}")]
    Eval {
        /// Spark's error condition.
        kind: EvalErrorKind,
        /// The text of the failing (sub)expression, as Spark names it.
        expr: Arc<str>,
    },
}

/// Spark's error conditions for a failed evaluation (ANSI mode), and a user function's failure.
///
/// Not `Copy`: [`EvalErrorKind::UserFunction`] carries the function's name and message (a
/// pointer: the kind stays two words, so the per-record result keeps its size).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EvalErrorKind {
    /// Division or remainder by zero.
    DivideByZero,
    /// Integer arithmetic overflow.
    ArithmeticOverflow,
    /// A string that does not parse as the cast's target type.
    CastInvalidInput,
    /// A number out of the cast's target range.
    CastOverflow,
    /// A 1-based index of 0 (`split_part(s, d, 0)`).
    InvalidIndexOfZero,
    /// A DECIMAL result or cast that needs more digits than its type's precision.
    NumericValueOutOfRange,
    /// A string that does not match the datetime pattern of `to_timestamp(s, pattern)` /
    /// `to_date(s, pattern)`.
    CannotParseTimestamp,
    /// A date field out of its range (`make_date(2024, 2, 30)`), Spark's
    /// DATETIME_FIELD_OUT_OF_BOUNDS under ANSI.
    DatetimeFieldOutOfBounds,
    /// A TIMESTAMP made from seconds beyond the microseconds a BIGINT holds
    /// (`timestamp_seconds(1e20BD)`), Spark's DATETIME_OVERFLOW.
    DatetimeOverflow,
    /// `timestamp_seconds` of a DECIMAL with digits below the microsecond
    /// (`timestamp_seconds(1.0000005)`): Spark's `SecondsToTimestamp` calls Java's
    /// `BigDecimal.longValueExact`, whose bare `java.lang.ArithmeticException: Rounding
    /// necessary` fails the query without an error condition; Eddy names it so.
    RoundingNecessary,
    /// A time zone argument that names no zone (`from_utc_timestamp(ts, 'Nowhere/City')`),
    /// Spark's INVALID_TIMEZONE.
    InvalidTimezone,
    /// A LIKE pattern computed per record with an escape character before anything but `_`,
    /// `%` or itself, or at the end: Spark's INVALID_FORMAT (ESC_IN_THE_MIDDLE /
    /// ESC_AT_THE_END).
    InvalidFormat,
    /// A string result longer than 16 MiB (`lpad(s, 2147483647)`): Eddy's own condition, where
    /// Spark's task fails with an out-of-memory error. Checked before the string is built.
    StringTooLong,
    /// A scalar UDF returned an error, panicked or returned a value of another type than it
    /// declared: Spark's `FAILED_EXECUTE_UDF`, with the function's name and the message.
    UserFunction(Box<UdfFailure>),
}

impl fmt::Display for EvalErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            EvalErrorKind::UserFunction(u) => {
                return write!(f, "FAILED_EXECUTE_UDF (function {}: {})", u.function, u.message);
            }
            EvalErrorKind::DivideByZero => "DIVIDE_BY_ZERO",
            EvalErrorKind::ArithmeticOverflow => "ARITHMETIC_OVERFLOW",
            EvalErrorKind::CastInvalidInput => "CAST_INVALID_INPUT",
            EvalErrorKind::CastOverflow => "CAST_OVERFLOW",
            EvalErrorKind::InvalidIndexOfZero => "INVALID_INDEX_OF_ZERO",
            EvalErrorKind::NumericValueOutOfRange => "NUMERIC_VALUE_OUT_OF_RANGE",
            EvalErrorKind::CannotParseTimestamp => "CANNOT_PARSE_TIMESTAMP",
            EvalErrorKind::DatetimeFieldOutOfBounds => "DATETIME_FIELD_OUT_OF_BOUNDS",
            EvalErrorKind::DatetimeOverflow => "DATETIME_OVERFLOW",
            EvalErrorKind::RoundingNecessary => {
                "ROUNDING_NECESSARY (java.lang.ArithmeticException: Rounding necessary)"
            }
            EvalErrorKind::InvalidTimezone => "INVALID_TIMEZONE",
            EvalErrorKind::InvalidFormat => "INVALID_FORMAT",
            EvalErrorKind::StringTooLong => "STRING_TOO_LONG (a string result over 16 MiB)",
        })
    }
}

/// A bound, typed expression (step 2).
#[derive(Clone, Debug)]
pub struct Typed {
    /// What the node computes.
    pub node: Node,
    /// Its result type.
    pub data_type: DataType,
    /// Spark's name of the node (`(price * 2)`, `lower(name)`): the output column's name when
    /// selected without `AS`, and the text named by evaluation errors.
    pub name: String,
}

/// The node kinds of [`Typed`]. Operands already have the types the operation takes
/// (implicit casts are [`Node::Cast`] nodes with `implicit: true`).
#[derive(Clone, Debug)]
pub enum Node {
    /// A constant.
    Literal(crate::Value),
    /// The record's column at this index.
    Column(usize),
    /// A cast to the node's type.
    Cast {
        /// The operand.
        input: Box<Typed>,
        /// NULL instead of an error (`try_cast`).
        try_cast: bool,
        /// Inserted by the type rules (invisible in names).
        implicit: bool,
    },
    /// `AND` (three-valued).
    And(Box<Typed>, Box<Typed>),
    /// `OR` (three-valued).
    Or(Box<Typed>, Box<Typed>),
    /// `CASE WHEN ... THEN ... ELSE ... END` (`if`, and the `CASE x WHEN` form as equalities).
    Case {
        /// `(condition, value)` pairs.
        branches: Vec<(Typed, Typed)>,
        /// The value when no condition holds (NULL when absent).
        otherwise: Option<Box<Typed>>,
    },
    /// `coalesce` / `nvl` / `ifnull`: the first non-null argument.
    Coalesce(Vec<Typed>),
    /// `x [NOT] IN (list)` (three-valued).
    In {
        /// The operand.
        value: Box<Typed>,
        /// The list, of the operand's type.
        list: Vec<Typed>,
        /// `NOT IN`.
        negated: bool,
    },
    /// A call of a scalar user-defined function (`expr/udf.rs`).
    Udf {
        /// The function as registered.
        udf: Arc<ScalarUdf>,
        /// Arguments, of the declared types.
        args: Vec<Typed>,
    },
    /// Any other function or operator: a kernel over the arguments.
    Call {
        /// Which function.
        func: functions::Func,
        /// Arguments, of the types the function takes.
        args: Vec<Typed>,
    },
}
