//! Schemas: Spark DDL (`"user_id STRING, revenue DOUBLE, event_time TIMESTAMP"`) parsed into a
//! [`Schema`] of named, typed columns.

use std::fmt;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

mod structs;

pub use structs::StructType;

/// A column type. The names are Spark's (SQL DDL); `Long` is Spark's BIGINT.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum DataType {
    /// STRING: UTF-8 text.
    String,
    /// BIGINT / LONG: 64-bit signed integer.
    Long,
    /// INT / INTEGER: 32-bit signed integer.
    Int,
    /// DOUBLE: 64-bit float.
    Double,
    /// FLOAT / REAL: 32-bit float.
    Float,
    /// BOOLEAN.
    Boolean,
    /// TIMESTAMP: µs since the epoch, UTC.
    Timestamp,
    /// DECIMAL(precision, scale): exact, `precision` digits of which `scale` after the point
    /// (1 <= precision <= 38, scale <= precision), as Spark's `DecimalType`.
    Decimal {
        /// Total digits (1..=38).
        precision: u8,
        /// Digits after the point (0..=precision).
        scale: u8,
    },
    /// DATE: days since the epoch (1970-01-01), proleptic Gregorian, as Spark's `DateType`.
    Date,
    /// Output only: a window `{start, end}` struct of two timestamps.
    Window,
    /// A STRUCT of named fields (`struct(...)`, `named_struct(...)`); expressions only, not a
    /// schema DDL type.
    Struct(StructType),
    /// Output only: an array of the inner type (approx_percentile with a list of percentages).
    Array(ArrayOf),
}

/// The element type of an output array (only the scalar types can be listed).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum ArrayOf {
    /// BIGINT elements.
    Long,
    /// INT elements.
    Int,
    /// DOUBLE elements.
    Double,
    /// FLOAT elements.
    Float,
    /// TIMESTAMP elements.
    Timestamp,
    /// STRING elements.
    String,
    /// BOOLEAN elements.
    Boolean,
}

impl DataType {
    /// Whether the two types are the same but for the names of STRUCT fields (at any depth): two
    /// structs of as many fields, field by field of such types. Spark 4.3 compares such structs
    /// with `=` and joins on them, field by field (checked with pyspark: `struct(1 AS a) =
    /// struct(1 AS b)` is true, `struct(e.k) = struct(t.b)` joins), and refuses structs whose
    /// field types differ (`STRUCT<a: INT>` beside `STRUCT<b: BIGINT>`).
    pub fn same_ignoring_names(self, other: DataType) -> bool {
        match (self, other) {
            (DataType::Struct(a), DataType::Struct(b)) => {
                let (a, b) = (a.fields(), b.fields());
                a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.data_type.same_ignoring_names(y.data_type))
            }
            (a, b) => a == b,
        }
    }

    /// Whether the type is numeric (INT, BIGINT, FLOAT, DOUBLE, DECIMAL).
    pub fn is_numeric(self) -> bool {
        matches!(self, DataType::Long | DataType::Int | DataType::Double | DataType::Float | DataType::Decimal { .. })
    }

    /// The precision and scale of a DECIMAL; `None` for other types.
    pub fn decimal(self) -> Option<(u8, u8)> {
        match self {
            DataType::Decimal { precision, scale } => Some((precision, scale)),
            _ => None,
        }
    }

    /// The array type whose elements are `self`; `None` for output-only types.
    pub fn array_of(self) -> Option<DataType> {
        Some(DataType::Array(match self {
            DataType::Long => ArrayOf::Long,
            DataType::Int => ArrayOf::Int,
            DataType::Double => ArrayOf::Double,
            DataType::Float => ArrayOf::Float,
            DataType::Timestamp => ArrayOf::Timestamp,
            DataType::String => ArrayOf::String,
            DataType::Boolean => ArrayOf::Boolean,
            DataType::Date | DataType::Window | DataType::Struct(_) | DataType::Array(_) | DataType::Decimal { .. } => {
                return None;
            }
        }))
    }
}

impl fmt::Display for DataType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = match self {
            DataType::String => "STRING",
            DataType::Long => "BIGINT",
            DataType::Int => "INT",
            DataType::Double => "DOUBLE",
            DataType::Float => "FLOAT",
            DataType::Boolean => "BOOLEAN",
            DataType::Timestamp => "TIMESTAMP",
            DataType::Decimal { precision, scale } => return write!(f, "DECIMAL({precision},{scale})"),
            DataType::Date => "DATE",
            DataType::Struct(s) => return fmt::Display::fmt(s, f),
            DataType::Window => "STRUCT<start: TIMESTAMP, end: TIMESTAMP>",
            DataType::Array(a) => {
                let inner = match a {
                    ArrayOf::Long => "BIGINT",
                    ArrayOf::Int => "INT",
                    ArrayOf::Double => "DOUBLE",
                    ArrayOf::Float => "FLOAT",
                    ArrayOf::Timestamp => "TIMESTAMP",
                    ArrayOf::String => "STRING",
                    ArrayOf::Boolean => "BOOLEAN",
                };
                return write!(f, "ARRAY<{inner}>");
            }
        };
        f.write_str(s)
    }
}

/// One named, typed column.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Field {
    /// Column name, as written (matching is exact, case-sensitive; the names of a parsed schema
    /// are distinct ignoring case).
    pub name: String,
    /// Column type.
    pub data_type: DataType,
}

/// An ordered list of columns. Cheap to clone (shared).
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct Schema {
    fields: Arc<[Field]>,
}

/// Errors of DDL parsing.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SchemaError {
    /// The DDL text is not `name TYPE, ...` with known types and names that are identifiers (or
    /// quoted) and distinct ignoring case.
    #[error(
        "bad schema {given:?}: {why} (expected `name TYPE, ...` with names distinct ignoring case and types STRING, BIGINT/LONG, INT, DOUBLE, FLOAT, BOOLEAN, TIMESTAMP, DATE, DECIMAL(p, s))"
    )]
    Ddl {
        /// The DDL given.
        given: String,
        /// What is wrong.
        why: String,
    },
}

impl Schema {
    /// A schema of these fields.
    pub fn new(fields: Vec<Field>) -> Schema {
        Schema { fields: fields.into() }
    }

    /// Parses Spark DDL: `name TYPE, name TYPE, ...`, as Spark's `StructType.fromDDL` (its table
    /// schema rule `colName dataType`). Types are case-insensitive: STRING, BIGINT / LONG, INT /
    /// INTEGER, DOUBLE, FLOAT / REAL, BOOLEAN, TIMESTAMP, DATE, DECIMAL(p, s) / DECIMAL(p) /
    /// DECIMAL (also `DEC`, `NUMERIC`; see `decimal_type`). An unquoted name is an identifier
    /// (letters, digits, `_`; not all digits); any other name is quoted with backticks. No colon
    /// between name and type: Spark takes `name: TYPE` only for the fields of a `STRUCT<...>`.
    /// Names must be distinct ignoring case, as Spark's default `spark.sql.caseSensitive = false`
    /// requires of a source's schema. An optional `NOT NULL` or `COMMENT '...'` is not accepted
    /// (kept simple).
    ///
    /// # Errors
    /// [`SchemaError::Ddl`] for an empty schema, an unknown type, a missing name or type, an
    /// unquoted name that is not an identifier (`user_id:`), a colon before the type, or two
    /// names equal ignoring case.
    pub fn parse_ddl(ddl: &str) -> Result<Schema, SchemaError> {
        let bad = |why: String| SchemaError::Ddl { given: ddl.to_string(), why };
        let mut fields: Vec<Field> = Vec::new();
        for part in split_columns(ddl) {
            let part = part.trim();
            if part.is_empty() {
                return Err(bad("an empty column definition".into()));
            }
            let (name, ty) = if let Some(rest) = part.strip_prefix('`') {
                let end = rest.find('`').ok_or_else(|| bad(format!("unclosed backtick in {part:?}")))?;
                (&rest[..end], rest[end + 1..].trim())
            } else {
                let mut it = part.splitn(2, char::is_whitespace);
                let (name, ty) = (it.next().unwrap_or(""), it.next().unwrap_or("").trim());
                if name.contains(':') {
                    return Err(bad(colon_after(name)));
                }
                if !name.is_empty() && !is_identifier(name) {
                    return Err(bad(format!(
                        "column name {name:?} is not an identifier (letters, digits and _, not only digits); \
                         quote it with backticks: `{name}`"
                    )));
                }
                (name, ty)
            };
            if name.is_empty() {
                return Err(bad("a column without a name".into()));
            }
            if ty.starts_with(':') {
                return Err(bad(colon_after(name)));
            }
            if ty.is_empty() {
                return Err(bad(format!("column {name:?} has no type")));
            }
            let upper = ty.to_ascii_uppercase();
            let data_type = match upper.as_str() {
                t if is_decimal_type(t) => decimal_type(t).map_err(|why| bad(format!("column {name:?}: {why}")))?,
                "STRING" | "VARCHAR" | "TEXT" => DataType::String,
                "BIGINT" | "LONG" => DataType::Long,
                "INT" | "INTEGER" => DataType::Int,
                "DOUBLE" => DataType::Double,
                "FLOAT" | "REAL" => DataType::Float,
                "BOOLEAN" | "BOOL" => DataType::Boolean,
                "TIMESTAMP" => DataType::Timestamp,
                "DATE" => DataType::Date,
                other => return Err(bad(format!("column {name:?} has unknown type {other}"))),
            };
            if let Some(f) = fields.iter().find(|f| f.name.to_lowercase() == name.to_lowercase()) {
                return Err(bad(if f.name == name {
                    format!("column {name:?} is given twice")
                } else {
                    format!(
                        "columns {:?} and {name:?} differ only in case (Spark resolves column names ignoring \
                         case: spark.sql.caseSensitive is false by default)",
                        f.name
                    )
                }));
            }
            fields.push(Field { name: name.to_string(), data_type });
        }
        Ok(Schema::new(fields))
    }

    /// The columns in order.
    pub fn fields(&self) -> &[Field] {
        &self.fields
    }

    /// Number of columns.
    pub fn len(&self) -> usize {
        self.fields.len()
    }

    /// Whether there are no columns.
    pub fn is_empty(&self) -> bool {
        self.fields.is_empty()
    }

    /// Position of the column `name`, if any.
    pub fn index_of(&self, name: &str) -> Option<usize> {
        self.fields.iter().position(|f| f.name == name)
    }

    /// The position of the column a pipeline or a query names `name`: the exact name, else the
    /// one equal to it ignoring case, as Spark's analyser resolves names by default
    /// (`spark.sql.caseSensitive = false`; SEMANTICS.md "Aggregate functions"). A parsed schema
    /// has at most one such column. Decoders match input field names with
    /// [`Schema::index_of`] (exact), as Spark's JSON reader.
    pub fn resolve(&self, name: &str) -> Option<usize> {
        self.index_of(name).or_else(|| {
            let lower = name.to_lowercase();
            self.fields.iter().position(|f| f.name.to_lowercase() == lower)
        })
    }

    /// The column `name`, if any.
    pub fn field(&self, name: &str) -> Option<&Field> {
        self.fields.iter().find(|f| f.name == name)
    }

    /// The names, comma-separated (for error messages).
    pub fn names(&self) -> String {
        self.fields.iter().map(|f| f.name.as_str()).collect::<Vec<_>>().join(", ")
    }
}

/// The column definitions of a DDL: split at the commas outside parentheses and angle brackets
/// (`DECIMAL(12, 2)` holds one, and so does a refused `MAP<STRING, INT>`, which is then named
/// whole).
fn split_columns(ddl: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    let (mut depth, mut quoted, mut start) = (0i32, false, 0);
    for (i, c) in ddl.char_indices() {
        match c {
            '`' => quoted = !quoted,
            '(' | '<' if !quoted => depth += 1,
            ')' | '>' if !quoted => depth -= 1,
            ',' if !quoted && depth <= 0 => {
                parts.push(&ddl[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&ddl[start..]);
    parts
}

/// Whether an upper-cased type names a decimal: `DECIMAL`, `DEC` or `NUMERIC`, with or without
/// `(p[, s])`.
fn is_decimal_type(t: &str) -> bool {
    let head = t.split('(').next().unwrap_or("").trim_end();
    matches!(head, "DECIMAL" | "DEC" | "NUMERIC")
}

/// Spark's DECIMAL DDL: `DECIMAL` is DECIMAL(10, 0), `DECIMAL(p)` is DECIMAL(p, 0); the precision
/// is 1..=38 and the scale at most the precision (Spark's `DecimalType`; it names a precision past
/// 38 DECIMAL_PRECISION_EXCEEDS_MAX_PRECISION).
fn decimal_type(t: &str) -> Result<DataType, String> {
    let Some(open) = t.find('(') else {
        return Ok(DataType::Decimal { precision: 10, scale: 0 });
    };
    let inner = t[open + 1..]
        .trim_end()
        .strip_suffix(')')
        .ok_or_else(|| format!("type {t} lacks its closing parenthesis (DECIMAL(precision, scale))"))?;
    let nums: Vec<&str> = inner.split(',').map(str::trim).collect();
    let num = |s: &str| s.parse::<u8>().map_err(|_| format!("{s:?} in {t} is not a precision or scale (0..=38)"));
    let (precision, scale) = match nums.as_slice() {
        [p] => (num(p)?, 0),
        [p, s] => (num(p)?, num(s)?),
        _ => return Err(format!("type {t} is not DECIMAL(precision, scale)")),
    };
    if !(1..=crate::decimal::MAX_PRECISION).contains(&precision) {
        return Err(format!("{t}: the precision must be 1..=38 (DECIMAL_PRECISION_EXCEEDS_MAX_PRECISION past 38)"));
    }
    if scale > precision {
        return Err(format!("{t}: the scale {scale} exceeds the precision {precision}"));
    }
    Ok(DataType::Decimal { precision, scale })
}

/// Whether `name` may be written without backticks in Spark DDL: letters, digits and `_`, not
/// only digits (Spark's lexer reads `123` as a number).
fn is_identifier(name: &str) -> bool {
    name.chars().all(|c| c.is_alphanumeric() || c == '_') && !name.chars().all(|c| c.is_ascii_digit())
}

/// Why `name:` (or `name :`) is refused.
fn colon_after(name: &str) -> String {
    format!(
        "column {name:?}: a colon after a column name is not Spark's schema DDL, which is `name TYPE` \
         (`name: TYPE` is the syntax of fields inside STRUCT<...>)"
    )
}

impl fmt::Display for Schema {
    /// As DDL: `name TYPE, ...`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, fl) in self.fields.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            write!(f, "{} {}", fl.name, fl.data_type)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_spark_ddl() {
        let s = Schema::parse_ddl(
            "user_id STRING, revenue DOUBLE, event_time TIMESTAMP, n bigint, i INT, f FLOAT, b BOOLEAN, l LONG",
        )
        .unwrap();
        assert_eq!(s.len(), 8);
        assert_eq!(s.field("n").unwrap().data_type, DataType::Long);
        assert_eq!(s.field("l").unwrap().data_type, DataType::Long);
        assert_eq!(s.index_of("event_time"), Some(2));
        assert_eq!(Schema::parse_ddl(&s.to_string()).unwrap(), s);
    }

    #[test]
    fn parses_decimal_types_as_spark_ddl() {
        let s = Schema::parse_ddl("a DECIMAL(12, 2), b decimal(5), c DECIMAL, d NUMERIC(38,38), e dec(3, 1), f INT")
            .unwrap_or_else(|e| panic!("{e}"));
        let ty = |n: &str| s.field(n).map(|f| f.data_type);
        assert_eq!(ty("a"), Some(DataType::Decimal { precision: 12, scale: 2 }));
        assert_eq!(ty("b"), Some(DataType::Decimal { precision: 5, scale: 0 }));
        assert_eq!(ty("c"), Some(DataType::Decimal { precision: 10, scale: 0 }));
        assert_eq!(ty("d"), Some(DataType::Decimal { precision: 38, scale: 38 }));
        assert_eq!(ty("e"), Some(DataType::Decimal { precision: 3, scale: 1 }));
        assert_eq!(ty("f"), Some(DataType::Int));
        assert_eq!(Schema::parse_ddl(&s.to_string()), Ok(s));
        assert!(why("a DECIMAL(39, 2)").contains("1..=38"));
        assert!(why("a DECIMAL(5, 6)").contains("exceeds"));
        assert!(why("a DECIMAL(5, x)").contains("\"X\""));
        assert!(why("a DECIMAL(5, 2").contains("parenthesis"));
        assert!(why("a DECIMAL(0)").contains("1..=38"));
    }

    #[test]
    fn refuses_bad_ddl() {
        for bad in ["", "a", "a STRING,", "a BLOB", "a STRING, a INT", "`a STRING"] {
            assert!(Schema::parse_ddl(bad).is_err(), "{bad:?}");
        }
    }

    fn why(ddl: &str) -> String {
        match Schema::parse_ddl(ddl) {
            Err(SchemaError::Ddl { why, .. }) => why,
            Ok(s) => panic!("{ddl:?} must be refused, got {s:?}"),
        }
    }

    #[test]
    fn refuses_a_colon_after_a_name_as_spark_table_ddl_does() {
        // Spark's `StructType.fromDDL` reads `name TYPE`; `name: TYPE` belongs to STRUCT<...>.
        let w = why("user_id: STRING, ts TIMESTAMP");
        assert!(w.contains("\"user_id:\"") && w.contains("colon"), "{w}");
        assert!(why("`user_id`: STRING").contains("colon"));
        assert!(why("user_id :STRING").contains("colon"));
    }

    #[test]
    fn unquoted_names_are_identifiers_and_backticks_quote_any_name() {
        let w = why("a-b INT");
        assert!(w.contains("\"a-b\"") && w.contains("backticks"), "{w}");
        assert!(why("123 INT").contains("\"123\""));
        let s = Schema::parse_ddl("`a-b` INT, `x y` STRING, _c0 BIGINT, é1 INT").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(s.names(), "a-b, x y, _c0, é1");
    }

    #[test]
    fn refuses_names_that_differ_only_in_case() {
        let w = why("Amount DOUBLE, amount DOUBLE");
        assert!(w.contains("\"amount\"") && w.contains("\"Amount\"") && w.contains("case"), "{w}");
        assert!(why("`A` INT, a INT").contains("case"));
    }
}
