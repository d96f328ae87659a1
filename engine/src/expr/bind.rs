//! Binding: [`Syntax`] + [`Schema`] -> [`Typed`]. Column resolution ignoring case, Spark's ANSI
//! type coercion (`AnsiTypeCoercion`), and Spark's names (`toPrettySQL`: literals bare, implicit
//! casts invisible, a cast of a column named as the column).

use crate::value::Text;
use std::sync::Arc;

use regex::Regex;

use super::calls::java_regex;
use super::functions::{ArithOp, BitOp, CmpOp, Func};
use super::text::java_double;
use super::{BinaryOp, ExprError, LikeKind, Literal, Node, Pos, Syntax, SyntaxKind, Typed};
use crate::schema::{DataType, Schema};
use crate::time::Timestamp;
use crate::value::Value;

/// Binds `syntax` against `schema`: the typed plan with Spark's result type and name.
///
/// # Errors
/// [`ExprError::UnknownColumn`] for a name not in the schema; [`ExprError::Type`] for operands
/// Spark's ANSI rules refuse (`true + 1`, `CAST(ts AS BOOLEAN)`); [`ExprError::Unsupported`]
/// for what Spark has and Eddy does not implement (`split`, which returns an ARRAY; unknown functions),
/// each naming the construct and its position. A name `a.b` is the field `b` of the struct (or
/// window) column `a`, as Spark resolves it.
pub fn bind(syntax: &Syntax, schema: &Schema) -> Result<Typed, ExprError> {
    Binder { schema }.bind(syntax)
}

pub(super) struct Binder<'a> {
    pub(super) schema: &'a Schema,
}

const NUMERIC: &str = "INT, BIGINT, FLOAT, DOUBLE, DECIMAL";

pub(super) fn ty_err(pos: Pos, found: String, allowed: &str) -> ExprError {
    ExprError::Type { pos, found, allowed: allowed.to_string() }
}

pub(super) fn unsupported(pos: Pos, found: impl Into<String>, allowed: &str) -> ExprError {
    ExprError::Unsupported { pos, found: found.into(), allowed: allowed.to_string() }
}

pub(super) fn literal(v: Value, data_type: DataType, name: String) -> Typed {
    Typed { node: Node::Literal(v), data_type, name }
}

pub(super) fn is_null_literal(t: &Typed) -> bool {
    matches!(t.node, Node::Literal(Value::Null)) && t.name == "NULL"
}

pub(super) fn call(func: Func, args: Vec<Typed>, data_type: DataType, name: String) -> Typed {
    Typed { node: Node::Call { func, args }, data_type, name }
}

/// `lower` or `upper` (`func`) of `x`, named `name`. Where `x` is itself `lower` or `upper` of
/// something, the call takes that thing instead, as Spark's optimizer rewrites such a chain
/// (`SimplifyCaseConversionExpressions`): `lower(upper(s))` is `lower(s)`, which differs where a
/// case mapping does not go back (`upper('Straße')` is `STRASSE`; Spark gives `straße`). The
/// name stays the one written.
pub(super) fn case_conversion(func: Func, mut args: Vec<Typed>, name: String) -> Typed {
    while let [Typed { node: Node::Call { func: Func::Lower | Func::Upper, args: inner }, .. }] = args.as_slice()
        && inner.len() == 1
    {
        args = inner.clone();
    }
    call(func, args, DataType::String, name)
}

pub(super) fn names(args: &[Typed]) -> String {
    args.iter().map(|a| a.name.as_str()).collect::<Vec<_>>().join(", ")
}

/// Numeric precedence as Spark widens: INT < BIGINT < FLOAT < DOUBLE.
fn rank(t: DataType) -> Option<u8> {
    match t {
        DataType::Int => Some(0),
        DataType::Long => Some(1),
        DataType::Float => Some(2),
        DataType::Double => Some(3),
        _ => None,
    }
}

/// The wider of two numeric types, as Spark's ANSI `findWiderTypeForTwo`: an INT or BIGINT
/// meeting a FLOAT widens to DOUBLE (a FLOAT cannot hold every integer); a DECIMAL as
/// `expr/decimal.rs` says; a DATE meeting a TIMESTAMP widens to TIMESTAMP.
fn wider(a: DataType, b: DataType) -> Option<DataType> {
    use DataType as T;
    if let Some(w) = super::decimal::wider(a, b) {
        return w;
    }
    match (a, b) {
        (T::Date, T::Timestamp) | (T::Timestamp, T::Date) => Some(T::Timestamp),
        (T::Int | T::Long, T::Float) | (T::Float, T::Int | T::Long) => Some(T::Double),
        _ => match (rank(a)?, rank(b)?) {
            (x, y) if x >= y => Some(a),
            _ => Some(b),
        },
    }
}

/// [`wider`], and a STRING meeting another type promoted as Spark 4.3's ANSI coercion promotes
/// strings where values meet in one result (checked with pyspark: `coalesce(s, i)` and
/// `i + '5'` are BIGINT, `coalesce(ts, '2024-01-01')` and `if(c, ts, '...')` TIMESTAMP): to
/// BIGINT beside an integer, DOUBLE beside a FLOAT, DOUBLE or DECIMAL, otherwise to the other
/// type. The string is then cast as `CAST` casts, so a text that does not read fails the record
/// (to the dead letters), where Spark fails the query.
fn wider_or_string(a: DataType, b: DataType) -> Option<DataType> {
    use DataType as T;
    match (a, b) {
        (T::String, T::String) => Some(T::String),
        (T::String, other) | (other, T::String) => match other {
            T::Int | T::Long => Some(T::Long),
            T::Float | T::Double | T::Decimal { .. } => Some(T::Double),
            T::Boolean | T::Date | T::Timestamp => Some(other),
            _ => None,
        },
        _ => wider(a, b),
    }
}

/// The type the two values of an equi-join key are compared as, where the two columns' types
/// are `a` and `b`: theirs when equal (STRUCT field names aside, [`DataType::same_ignoring_names`]), else the wider of two numeric types or of DATE and
/// TIMESTAMP, or a STRING promoted beside another type ([`wider_or_string`]), as Spark's ANSI
/// coercion casts both sides of an `=` to their common type (checked with the Spark oracle: a
/// BIGINT key equals a DOUBLE key of the same number, 0 equals -0.0; a STRING key `'007'` or
/// `' 7 '` equals a BIGINT 7). A string that does not read as that type fails its record (to
/// the dead letters) or its table row (the table's read fails), where Spark fails the query.
/// `None` for types that do not meet.
pub(crate) fn join_key_type(a: DataType, b: DataType) -> Option<DataType> {
    if a.same_ignoring_names(b) { Some(a) } else { wider_or_string(a, b) }
}

/// The two keys Spark's `ExtractEquiJoinKeys` makes of a null-safe equality `l <=> r` whose
/// values compare as `to`: `l IS NULL` against `r IS NULL`, and `coalesce(l, d)` against
/// `coalesce(r, d)` with `d` a value of type `to` (Spark's `Literal.default`: 0, `''`, false, the
/// epoch), each side cast to `to` first. Neither key is ever NULL, so NULL matches NULL and a
/// value matches only its equal. `None` for a type without such a value here (a STRUCT).
pub(crate) fn null_safe_keys(l: Typed, r: Typed, to: DataType) -> Option<[(Typed, Typed); 2]> {
    let default = match to {
        DataType::String => literal(Value::Str("".into()), to, "''".into()),
        DataType::Boolean => literal(Value::Bool(false), to, "false".into()),
        DataType::Timestamp => {
            literal(Value::Timestamp(crate::Timestamp(0)), to, "TIMESTAMP '1970-01-01 00:00:00'".into())
        }
        DataType::Date => literal(Value::Date(0), to, "DATE '1970-01-01'".into()),
        t if t.is_numeric() => coerce(literal(Value::Int(0), DataType::Int, "0".into()), t),
        _ => return None,
    };
    let is_null = |t: &Typed| {
        call(Func::IsNull { negated: false }, vec![t.clone()], DataType::Boolean, format!("({} IS NULL)", t.name))
    };
    let or_default = |t: Typed| {
        let t = coerce(t, to);
        let name = format!("coalesce({}, {})", t.name, default.name);
        Typed { node: Node::Coalesce(vec![t, default.clone()]), data_type: to, name }
    };
    Some([(is_null(&l), is_null(&r)), (or_default(l), or_default(r))])
}

/// The type of a UNION ALL's column whose queries give types `a` and `b`: theirs when equal,
/// else as values meeting in one result ([`wider_or_string`]), as Spark 4.3's union widens them
/// (checked with pyspark: INT with BIGINT is BIGINT, INT with FLOAT DOUBLE, INT with DECIMAL(5, 2)
/// DECIMAL(12, 2), a STRING with an INT BIGINT, a DATE with a TIMESTAMP TIMESTAMP; a BOOLEAN
/// with an INT is refused). `None` when they do not meet.
pub(crate) fn union_type(a: DataType, b: DataType) -> Option<DataType> {
    if a == b { Some(a) } else { wider_or_string(a, b) }
}

/// `t` cast to `to` where a value of type `to` is expected without a `CAST` written (a union's
/// column of a wider type): invisible in names, as Spark's implicit casts.
pub(crate) fn implicit_cast(t: Typed, to: DataType) -> Typed {
    coerce(t, to)
}

/// The operands of an arithmetic operator with a STRING one beside a number cast as Spark's
/// ANSI coercion casts it ([`wider_or_string`]: `i + '5'` is BIGINT, `d * '2'` DOUBLE); other
/// operands unchanged.
fn promote_string_operand(l: Typed, r: Typed) -> (Typed, Typed) {
    let numeric = |t: DataType| rank(t).is_some() || matches!(t, DataType::Decimal { .. });
    match (l.data_type, r.data_type) {
        (DataType::String, other) | (other, DataType::String) if numeric(other) => {
            let to = wider_or_string(DataType::String, other).unwrap_or(DataType::Double);
            let promote = |t: Typed| if t.data_type == DataType::String { coerce(t, to) } else { t };
            (promote(l), promote(r))
        }
        _ => (l, r),
    }
}

/// `Some(to)` when a value of type `from` is implicitly cast to `to` where `to` is expected (a
/// UDF's declared argument): `to` is the wider of the two ([`wider`]).
pub(super) fn widens_to(from: DataType, to: DataType) -> Option<DataType> {
    (from == to || wider(from, to) == Some(to)).then_some(to)
}

/// An implicit cast (invisible in names); NULL literals take any type.
pub(super) fn coerce(t: Typed, to: DataType) -> Typed {
    if t.data_type == to {
        return t;
    }
    if is_null_literal(&t) {
        return Typed { data_type: to, ..t };
    }
    // a literal is cast once, here (a cast that fails stays a node: it fails on every record,
    // as Spark's query fails)
    if let Node::Literal(v) = &t.node
        && let Some(Ok(cast)) = super::cast::caster(t.data_type, to).map(|f| f(v))
    {
        return Typed { node: Node::Literal(cast), data_type: to, name: t.name };
    }
    let name = t.name.clone();
    Typed { node: Node::Cast { input: Box::new(t), try_cast: false, implicit: true }, data_type: to, name }
}

/// The common type of values that meet in one result (CASE branches, coalesce, IN lists):
/// equal types, numbers widened, a string promoted ([`wider_or_string`]); NULL literals take the
/// others' type.
pub(super) fn common_type(pos: Pos, items: &[Typed], what: &str) -> Result<DataType, ExprError> {
    let mut ty: Option<DataType> = None;
    for t in items.iter().filter(|t| !is_null_literal(t)) {
        ty = Some(match ty {
            None => t.data_type,
            Some(a) if a == t.data_type => a,
            Some(a) => wider_or_string(a, t.data_type).ok_or_else(|| {
                ty_err(
                    pos,
                    format!("{what} of types {a} and {} ({})", t.data_type, t.name),
                    "one type, numbers (widened), or a string with a number, boolean, date or timestamp (the string cast to it)",
                )
            })?,
        });
    }
    ty.ok_or_else(|| unsupported(pos, format!("{what} of NULL literals only"), "a typed value among them"))
}

impl Binder<'_> {
    pub(super) fn bind(&self, s: &Syntax) -> Result<Typed, ExprError> {
        let pos = s.pos;
        match &s.kind {
            SyntaxKind::Literal(l) => self.literal(pos, l),
            SyntaxKind::Column(parts) => {
                if parts.len() != 1 {
                    return self.field_access(pos, parts);
                }
                let name = &parts[0];
                let found = self.schema.fields().iter().position(|f| f.name.eq_ignore_ascii_case(name));
                let Some(i) = found else {
                    return Err(ExprError::UnknownColumn { pos, given: name.clone(), allowed: self.schema.names() });
                };
                // Spark names a column reference as written (`PRICE`), not as the schema spells it
                let f = &self.schema.fields()[i];
                Ok(Typed { node: Node::Column(i), data_type: f.data_type, name: name.clone() })
            }
            SyntaxKind::Negate(e) => {
                let e = self.numeric_arg(pos, self.bind(e)?, "unary -")?;
                let name = format!("(- {})", e.name);
                Ok(call(Func::Negate, vec![e.clone()], e.data_type, name))
            }
            SyntaxKind::Positive(e) => {
                let e = self.numeric_arg(pos, self.bind(e)?, "unary +")?;
                Ok(Typed { name: format!("(+ {})", e.name), ..e })
            }
            SyntaxKind::Not(e) => {
                let e = self.boolean(pos, self.bind(e)?, "NOT")?;
                let name = format!("(NOT {})", e.name);
                Ok(call(Func::Not, vec![e], DataType::Boolean, name))
            }
            SyntaxKind::Binary { op, left, right } => self.binary(pos, *op, left, right),
            SyntaxKind::IsNull { expr, negated } => {
                let e = self.bind(expr)?;
                let name = format!("({} IS {}NULL)", e.name, if *negated { "NOT " } else { "" });
                Ok(call(Func::IsNull { negated: *negated }, vec![e], DataType::Boolean, name))
            }
            SyntaxKind::IsBool { expr, value, negated } => {
                let e = self.boolean(pos, self.bind(expr)?, "IS TRUE / IS FALSE")?;
                let lit = literal(Value::Bool(*value), DataType::Boolean, value.to_string());
                let name = format!("({} <=> {})", e.name, lit.name);
                let eq = call(Func::NullSafeEq, vec![e, lit], DataType::Boolean, name);
                Ok(if *negated { self.not(eq) } else { eq })
            }
            SyntaxKind::Between { expr, low, high, negated } => {
                let e = self.bind(expr)?;
                let ge = self.compare(pos, CmpOp::GtEq, e.clone(), self.bind(low)?)?;
                let le = self.compare(pos, CmpOp::LtEq, e, self.bind(high)?)?;
                let name = format!("between({}, {}, {})", ge.name_arg(0), ge.name_arg(1), le.name_arg(1));
                let both = Typed { node: Node::And(Box::new(ge), Box::new(le)), data_type: DataType::Boolean, name };
                Ok(if *negated { self.not(both) } else { both })
            }
            SyntaxKind::InList { expr, list, negated } => {
                let value = self.bind(expr)?;
                let list = list.iter().map(|x| self.bind(x)).collect::<Result<Vec<_>, _>>()?;
                // structs of other field names compare field by field, as `=` (Spark runs
                // `named_struct('x', 1) IN (named_struct('a', 1))`): as the value's type
                let renamed = |t: &Typed| {
                    if t.data_type.same_ignoring_names(value.data_type) {
                        Typed { data_type: value.data_type, ..t.clone() }
                    } else {
                        t.clone()
                    }
                };
                let mut all = vec![value.clone()];
                all.extend(list.iter().map(renamed));
                let ty = common_type(pos, &all, "IN (...)")?;
                let name = format!("({} IN ({}))", value.name, names(&list));
                let list = list.into_iter().map(|x| coerce(x, ty)).collect();
                let t = Typed {
                    node: Node::In { value: Box::new(coerce(value, ty)), list, negated: false },
                    data_type: DataType::Boolean,
                    name,
                };
                Ok(if *negated { self.not(t) } else { t })
            }
            SyntaxKind::Like { kind, expr, pattern, negated } => {
                let t = self.like(pos, *kind, expr, pattern)?;
                Ok(if *negated { self.not(t) } else { t })
            }
            SyntaxKind::Case { operand, branches, otherwise } => {
                self.case(pos, operand.as_deref(), branches, otherwise.as_deref())
            }
            SyntaxKind::Trim { side, expr, chars } => self.trim(pos, *side, expr, chars.as_deref()),
            SyntaxKind::Cast { expr, to, try_cast } => {
                // a DECIMAL literal cast to a floating type or STRING: the literal as written, cast once
                if let SyntaxKind::Literal(Literal::Decimal(text)) = &expr.kind
                    && matches!(to, DataType::Float | DataType::Double | DataType::String)
                {
                    let v = match to {
                        DataType::Float => text.parse::<f32>().map(Value::Float),
                        DataType::Double => text.parse::<f64>().map(Value::Double),
                        _ => Ok(Value::Str(Text::from(text.as_str()))),
                    };
                    let v = v.map_err(|_| ty_err(pos, format!("number {text}"), "a number"))?;
                    return Ok(literal(v, *to, format!("CAST({text} AS {to})")));
                }
                let e = self.bind(expr)?;
                self.cast(pos, e, *to, *try_cast)
            }
            SyntaxKind::Call { name, args } => self.call(pos, name, args),
            SyntaxKind::Field { expr, field } => {
                let t = self.bind(expr)?;
                self.get_field(pos, t, field)
            }
            SyntaxKind::LateralAlias { expr, name } => {
                let t = self.bind(expr)?;
                Ok(Typed { name: format!("{LATERAL_REFERENCE}{name})"), ..t })
            }
            SyntaxKind::Alias { alias, .. } => Err(unsupported(
                pos,
                format!("`AS {alias}` inside an expression"),
                "AS after a whole select item, or inside struct(...)",
            )),
        }
    }

    pub(super) fn not(&self, t: Typed) -> Typed {
        let name = format!("(NOT {})", t.name);
        call(Func::Not, vec![t], DataType::Boolean, name)
    }

    pub(super) fn numeric(&self, pos: Pos, t: &Typed, what: &str) -> Result<(), ExprError> {
        if rank(t.data_type).is_none() && t.data_type.decimal().is_none() && !is_null_literal(t) {
            return Err(ty_err(pos, format!("{what} of {} ({})", t.data_type, t.name), NUMERIC));
        }
        Ok(())
    }

    /// A numeric argument of a math function: a number, or a STRING cast to DOUBLE implicitly
    /// as Spark casts it there (`sqrt('4')` is `SQRT(4)`, `abs('5')` a DOUBLE; a string that is
    /// no number fails as `CAST` fails, CAST_INVALID_INPUT).
    pub(super) fn numeric_arg(&self, pos: Pos, t: Typed, what: &str) -> Result<Typed, ExprError> {
        let t = if t.data_type == DataType::String { coerce(t, DataType::Double) } else { t };
        self.numeric(pos, &t, what)?;
        Ok(t)
    }

    pub(super) fn boolean(&self, pos: Pos, t: Typed, what: &str) -> Result<Typed, ExprError> {
        if t.data_type != DataType::Boolean && !is_null_literal(&t) {
            return Err(ty_err(pos, format!("{what} of {} ({})", t.data_type, t.name), "BOOLEAN"));
        }
        Ok(coerce(t, DataType::Boolean))
    }

    /// An argument read as STRING: a STRING, or a value of another atomic type cast to one
    /// implicitly, as Spark's ANSI type coercion casts the arguments of its string functions
    /// (`upper(n)` is `upper(CAST(n AS STRING))`, still named `upper(n)`; Spark 4.3's
    /// `ImplicitCastInputTypes`). A STRUCT or a window is refused.
    pub(super) fn string(&self, pos: Pos, t: Typed, what: &str) -> Result<Typed, ExprError> {
        if matches!(t.data_type, DataType::Struct(_) | DataType::Window) {
            return Err(ty_err(pos, format!("{what} of {} ({})", t.data_type, t.name), "STRING"));
        }
        Ok(coerce(t, DataType::String))
    }

    /// An argument taken as STRING only, with no implicit cast: the BINARY argument of `md5`,
    /// `sha1`, `sha2`, `crc32` and `base64` (Eddy has no BINARY type: a STRING is read as its
    /// UTF-8 bytes, as Spark casts a STRING to BINARY; Spark refuses the other types there), and
    /// the document of `get_json_object`, which Spark does not cast either.
    pub(super) fn string_only(&self, pos: Pos, t: Typed, what: &str) -> Result<Typed, ExprError> {
        if t.data_type != DataType::String && !is_null_literal(&t) {
            return Err(ty_err(pos, format!("{what} of {} ({})", t.data_type, t.name), "STRING"));
        }
        Ok(coerce(t, DataType::String))
    }

    /// An INT argument (a position, a length, a count): an INT, a BIGINT narrowed, or a STRING
    /// cast to INT implicitly, as Spark casts it (`repeat('ab', '3')`; a string that is no
    /// number fails as `CAST` fails).
    pub(super) fn integer(&self, pos: Pos, t: Typed, what: &str) -> Result<Typed, ExprError> {
        if !matches!(t.data_type, DataType::Int) && !is_null_literal(&t) {
            if matches!(t.data_type, DataType::Long | DataType::String) {
                return Ok(coerce(t, DataType::Int));
            }
            return Err(ty_err(pos, format!("{what} of {} ({})", t.data_type, t.name), "INT"));
        }
        Ok(coerce(t, DataType::Int))
    }

    /// A count or position of a string function (`substring`, `left`, `repeat`, `lpad`,
    /// `split_part`, `space`, ...): [`Binder::integer`], and a DOUBLE, FLOAT or DECIMAL cast
    /// to INT implicitly (truncating; out of INT's range fails as the cast does), as Spark
    /// casts the INT arguments of these functions (`repeat('ab', 2.7)` is `abab`). The date
    /// functions' day and month counts take no fractional number (`date_add(d, 1.5)` is an
    /// error in Spark) and keep [`Binder::integer`].
    pub(super) fn count_arg(&self, pos: Pos, t: Typed, what: &str) -> Result<Typed, ExprError> {
        if matches!(t.data_type, DataType::Double | DataType::Float) || t.data_type.decimal().is_some() {
            return Ok(coerce(t, DataType::Int));
        }
        self.integer(pos, t, what)
    }

    pub(super) fn literal(&self, pos: Pos, l: &Literal) -> Result<Typed, ExprError> {
        Ok(match l {
            Literal::Null => literal(Value::Null, DataType::String, "NULL".into()),
            Literal::Bool(b) => literal(Value::Bool(*b), DataType::Boolean, b.to_string()),
            Literal::Integer(v) => match i32::try_from(*v) {
                Ok(i) => literal(Value::Int(i), DataType::Int, v.to_string()),
                Err(_) => literal(Value::Long(*v), DataType::Long, v.to_string()),
            },
            Literal::Long(v) => literal(Value::Long(*v), DataType::Long, v.to_string()),
            Literal::Double(v) => literal(Value::Double(*v), DataType::Double, java_double(*v)),
            Literal::Decimal(text) => {
                let Some((d, precision, scale)) = crate::decimal::Decimal::literal(text) else {
                    return Err(unsupported(
                        pos,
                        format!("the DECIMAL literal {text} (more than 38 digits)"),
                        "a DECIMAL of at most 38 digits, or a DOUBLE literal such as 1.5E40",
                    ));
                };
                literal(Value::Decimal(d), DataType::Decimal { precision, scale }, d.to_json_string())
            }
            Literal::String(s) => literal(Value::Str(Text::from(s.as_str())), DataType::String, s.clone()),
            Literal::Timestamp(s) => {
                let us = super::text::parse_cast_timestamp(s).ok_or_else(|| {
                    ty_err(pos, format!("TIMESTAMP '{s}'"), "a timestamp such as TIMESTAMP '2024-01-15 10:00:00'")
                })?;
                let name = format!("TIMESTAMP '{}'", super::text::timestamp_string(us));
                literal(Value::Timestamp(Timestamp(us)), DataType::Timestamp, name)
            }
            Literal::Date(s) => {
                let days = super::dates::parse_cast_date(s)
                    .ok_or_else(|| ty_err(pos, format!("DATE '{s}'"), "a date such as DATE '2024-01-15'"))?;
                let name = format!("DATE '{}'", super::dates::date_string(days));
                literal(Value::Date(days), DataType::Date, name)
            }
            Literal::Interval { .. } => {
                return Err(unsupported(
                    pos,
                    "an INTERVAL outside `timestamp + INTERVAL` / `timestamp - INTERVAL`",
                    "timestamp ± INTERVAL ...",
                ));
            }
        })
    }

    /// Binds an operand that meets `other` in a binary operator: a DECIMAL literal against a
    /// DOUBLE or FLOAT becomes DOUBLE (Spark widens DECIMAL with DOUBLE to DOUBLE).
    pub(super) fn operand(&self, s: &Syntax, other: Option<DataType>) -> Result<Typed, ExprError> {
        if let SyntaxKind::Literal(Literal::Decimal(text)) = &s.kind
            && matches!(other, Some(DataType::Double | DataType::Float))
        {
            let v: f64 = text.parse().map_err(|_| ty_err(s.pos, format!("number {text}"), "a number"))?;
            return Ok(literal(Value::Double(v), DataType::Double, text.clone()));
        }
        self.bind(s)
    }

    pub(super) fn binary(&self, pos: Pos, op: BinaryOp, ls: &Syntax, rs: &Syntax) -> Result<Typed, ExprError> {
        // INTERVAL + timestamp: Spark reads (and names) it as timestamp + INTERVAL
        if let SyntaxKind::Literal(Literal::Interval { .. }) = &ls.kind
            && op == BinaryOp::Plus
            && !matches!(rs.kind, SyntaxKind::Literal(Literal::Interval { .. }))
        {
            return self.binary(pos, op, rs, ls);
        }
        // timestamp ± INTERVAL
        if let SyntaxKind::Literal(Literal::Interval { micros, text }) = &rs.kind
            && matches!(op, BinaryOp::Plus | BinaryOp::Minus)
        {
            let l = self.bind(ls)?;
            if l.data_type != DataType::Timestamp {
                return Err(ty_err(pos, format!("{} ± INTERVAL", l.data_type), "TIMESTAMP ± INTERVAL"));
            }
            let (d, sym) =
                if op == BinaryOp::Plus { (*micros, "+") } else { (micros.checked_neg().unwrap_or(i64::MAX), "-") };
            let name = format!("{} {sym} {text}", l.name);
            return Ok(call(Func::AddMicros(d), vec![l], DataType::Timestamp, name));
        }
        let (l, r) = match (&ls.kind, &rs.kind) {
            (SyntaxKind::Literal(Literal::Decimal(_)), _) => {
                let r = self.bind(rs)?;
                (self.operand(ls, Some(r.data_type))?, r)
            }
            _ => {
                let l = self.bind(ls)?;
                let r = self.operand(rs, Some(l.data_type))?;
                (l, r)
            }
        };
        // DATE ± days: Spark's date_add / date_sub (and named so)
        if l.data_type == DataType::Date && matches!(op, BinaryOp::Plus | BinaryOp::Minus) {
            return self.date_add(pos, op == BinaryOp::Minus, l, r);
        }
        // an operand of a type the operator does not take is named where it is written
        let not_numeric =
            |t: &Typed| !(t.data_type.is_numeric() || t.data_type == DataType::String || is_null_literal(t));
        let arith_pos = if not_numeric(&l) {
            ls.pos
        } else if not_numeric(&r) {
            rs.pos
        } else {
            pos
        };
        let sym = match op {
            BinaryOp::Plus => "+",
            BinaryOp::Minus => "-",
            BinaryOp::Multiply => "*",
            BinaryOp::Divide => "/",
            BinaryOp::Modulo => "%",
            BinaryOp::Div => "div",
            _ => "",
        };
        match op {
            BinaryOp::Plus | BinaryOp::Minus | BinaryOp::Multiply | BinaryOp::Modulo | BinaryOp::Div => {
                let aop = match op {
                    BinaryOp::Plus => ArithOp::Add,
                    BinaryOp::Minus => ArithOp::Sub,
                    BinaryOp::Multiply => ArithOp::Mul,
                    BinaryOp::Modulo => ArithOp::Rem,
                    _ => ArithOp::IntDiv,
                };
                let name = format!("({} {sym} {})", l.name, r.name);
                self.arith(arith_pos, aop, false, l, r, name)
            }
            BinaryOp::Divide => {
                let name = format!("({} / {})", l.name, r.name);
                self.divide(arith_pos, false, l, r, name)
            }
            BinaryOp::Eq => self.compare(pos, CmpOp::Eq, l, r),
            BinaryOp::NotEq => Ok(self.not(self.compare(pos, CmpOp::Eq, l, r)?)),
            BinaryOp::Lt | BinaryOp::LtEq | BinaryOp::Gt | BinaryOp::GtEq => {
                let op = match op {
                    BinaryOp::Lt => CmpOp::Lt,
                    BinaryOp::LtEq => CmpOp::LtEq,
                    BinaryOp::Gt => CmpOp::Gt,
                    _ => CmpOp::GtEq,
                };
                let (l, r) = super::decimal::integral_bound(op, l, r);
                self.compare(pos, op, l, r)
            }
            BinaryOp::NullSafeEq => {
                let (l, r) = self.comparable(pos, l, r, "<=>")?;
                let name = format!("({} <=> {})", l.name, r.name);
                Ok(call(Func::NullSafeEq, vec![l, r], DataType::Boolean, name))
            }
            BinaryOp::And | BinaryOp::Or => {
                let l = self.boolean(ls.pos, l, "AND / OR")?;
                let r = self.boolean(rs.pos, r, "AND / OR")?;
                let (name, node) = if op == BinaryOp::And {
                    (format!("({} AND {})", l.name, r.name), Node::And(Box::new(l), Box::new(r)))
                } else {
                    (format!("({} OR {})", l.name, r.name), Node::Or(Box::new(l), Box::new(r)))
                };
                Ok(Typed { node, data_type: DataType::Boolean, name })
            }
            BinaryOp::BitAnd | BinaryOp::BitOr | BinaryOp::BitXor => {
                let (bop, sym) = match op {
                    BinaryOp::BitAnd => (BitOp::And, "&"),
                    BinaryOp::BitOr => (BitOp::Or, "|"),
                    _ => (BitOp::Xor, "^"),
                };
                let name = format!("({} {sym} {})", l.name, r.name);
                self.bitwise(pos, bop, vec![l, r], name)
            }
            BinaryOp::Concat => {
                let args = vec![coerce(l, DataType::String), coerce(r, DataType::String)];
                let name = format!("concat({})", names(&args));
                Ok(call(Func::Concat, args, DataType::String, name))
            }
        }
    }

    pub(super) fn arith(
        &self,
        pos: Pos,
        op: ArithOp,
        try_: bool,
        l: Typed,
        r: Typed,
        name: String,
    ) -> Result<Typed, ExprError> {
        let (l, r) = promote_string_operand(l, r);
        self.numeric(pos, &l, "arithmetic")?;
        self.numeric(pos, &r, "arithmetic")?;
        if let Some(t) = self.decimal_arith(Some(op), try_, &l, &r, &name) {
            return Ok(t);
        }
        let ty = common_type(pos, &[l.clone(), r.clone()], "arithmetic")?;
        if op == ArithOp::IntDiv && !matches!(ty, DataType::Int | DataType::Long) {
            return Err(ty_err(pos, format!("div of {ty}"), "INT, BIGINT"));
        }
        let ty_out = if op == ArithOp::IntDiv { DataType::Long } else { ty };
        let ty_in = if op == ArithOp::IntDiv { DataType::Long } else { ty };
        Ok(call(Func::Arith { op, try_ }, vec![coerce(l, ty_in), coerce(r, ty_in)], ty_out, name))
    }

    pub(super) fn divide(&self, pos: Pos, try_: bool, l: Typed, r: Typed, name: String) -> Result<Typed, ExprError> {
        let (l, r) = promote_string_operand(l, r);
        self.numeric(pos, &l, "/")?;
        self.numeric(pos, &r, "/")?;
        if let Some(t) = self.decimal_arith(None, try_, &l, &r, &name) {
            return Ok(t);
        }
        Ok(call(
            Func::Divide { try_ },
            vec![coerce(l, DataType::Double), coerce(r, DataType::Double)],
            DataType::Double,
            name,
        ))
    }

    /// The operands of a comparison cast to one type: numbers widened; a STRING against a
    /// number, TIMESTAMP or BOOLEAN cast to that type (ANSI).
    pub(super) fn comparable(&self, pos: Pos, l: Typed, r: Typed, what: &str) -> Result<(Typed, Typed), ExprError> {
        use DataType as T;
        let (a, b) = (l.data_type, r.data_type);
        let ty = if is_null_literal(&l) {
            b
        } else if is_null_literal(&r) || a.same_ignoring_names(b) {
            a
        } else if let Some(w) = wider(a, b) {
            w
        } else {
            match (a, b) {
                // an integral number compares as a BIGINT with a STRING, a fractional one as a
                // DOUBLE (`'2147483648' > i` is true, not an invalid INT), as Spark's ANSI coercion
                (T::String, x) | (x, T::String) if x != T::Window && !matches!(x, T::Array(_) | T::Struct(_)) => {
                    wider_or_string(a, b).unwrap_or(x)
                }
                _ => {
                    return Err(ty_err(
                        pos,
                        format!("{what} between {a} ({}) and {b} ({})", l.name, r.name),
                        "values of one type, numbers, or a STRING and another type",
                    ));
                }
            }
        };
        Ok((coerce(l, ty), coerce(r, ty)))
    }

    pub(super) fn compare(&self, pos: Pos, op: CmpOp, l: Typed, r: Typed) -> Result<Typed, ExprError> {
        let sym = match op {
            CmpOp::Eq => "=",
            CmpOp::Lt => "<",
            CmpOp::LtEq => "<=",
            CmpOp::Gt => ">",
            CmpOp::GtEq => ">=",
        };
        let (l, r) = self.comparable(pos, l, r, sym)?;
        let name = format!("({} {sym} {})", l.name, r.name);
        Ok(call(Func::Compare(op), vec![l, r], DataType::Boolean, name))
    }

    pub(super) fn like(&self, pos: Pos, kind: LikeKind, expr: &Syntax, pattern: &Syntax) -> Result<Typed, ExprError> {
        let e = self.string(pos, self.bind(expr)?, "LIKE")?;
        let (ilike, escape) = match kind {
            LikeKind::Like => (false, None),
            LikeKind::ILike => (true, None),
            LikeKind::LikeEscape(c) => (false, Some(c)),
            LikeKind::ILikeEscape(c) => (true, Some(c)),
            LikeKind::RLike => {
                let SyntaxKind::Literal(Literal::String(p)) = &pattern.kind else {
                    // a pattern computed per record: compiled per record through a small cache
                    let p = self.string(pattern.pos, self.bind(pattern)?, "RLIKE")?;
                    let name = format!("RLIKE({}, {})", e.name, p.name);
                    return Ok(call(Func::RLikeDynamic, vec![e, p], DataType::Boolean, name));
                };
                let re = java_regex(pattern.pos, p)?;
                let name = format!("RLIKE({}, {p})", e.name);
                return Ok(call(Func::RLike(re), vec![e], DataType::Boolean, name));
            }
        };
        let esc = escape.unwrap_or('\\');
        let subject = e.name.clone();
        let name = move |p: &str| match (ilike, escape) {
            // Spark leaves an ILIKE's escape out of its name
            (true, _) => format!("ilike({subject}, {p})"),
            (false, None) => format!("{subject} LIKE {p}"),
            (false, Some(c)) => format!("{subject} LIKE {p} ESCAPE '{c}'"),
        };
        let SyntaxKind::Literal(Literal::String(p)) = &pattern.kind else {
            // a pattern computed per record (a column, a concatenation): compiled per record
            // through a small cache, as Spark's `Like` does for a pattern that is not foldable
            let p = self.string(pattern.pos, self.bind(pattern)?, "LIKE")?;
            let name = name(&p.name);
            return Ok(call(Func::LikeDynamic { ilike, escape: esc }, vec![e, p], DataType::Boolean, name));
        };
        let compiled = like_regex(p, ilike, esc)
            .map_err(|allowed| ty_err(pattern.pos, format!("LIKE pattern '{p}'"), &allowed))?;
        Ok(call(Func::Like(Arc::new(compiled)), vec![e], DataType::Boolean, name(p)))
    }

    pub(super) fn case(
        &self,
        pos: Pos,
        operand: Option<&Syntax>,
        branches: &[(Syntax, Syntax)],
        otherwise: Option<&Syntax>,
    ) -> Result<Typed, ExprError> {
        let operand = operand.map(|o| self.bind(o)).transpose()?;
        let mut conds = Vec::new();
        let mut values = Vec::new();
        for (w, t) in branches {
            let w = self.bind(w)?;
            let c = match &operand {
                Some(o) => self.compare(pos, CmpOp::Eq, o.clone(), w)?,
                None => self.boolean(pos, w, "WHEN")?,
            };
            conds.push(c);
            values.push(self.bind(t)?);
        }
        let otherwise = otherwise.map(|o| self.bind(o)).transpose()?;
        let mut all = values.clone();
        all.extend(otherwise.iter().cloned());
        let ty = common_type(pos, &all, "CASE branches")?;
        let mut name = String::from("CASE");
        for (c, v) in conds.iter().zip(&values) {
            name.push_str(&format!(" WHEN {} THEN {}", c.name, v.name));
        }
        if let Some(o) = &otherwise {
            name.push_str(&format!(" ELSE {}", o.name));
        }
        name.push_str(" END");
        let branches = conds.into_iter().zip(values.into_iter().map(|v| coerce(v, ty))).collect();
        Ok(Typed {
            node: Node::Case { branches, otherwise: otherwise.map(|o| Box::new(coerce(o, ty))) },
            data_type: ty,
            name,
        })
    }

    pub(super) fn cast(&self, pos: Pos, e: Typed, to: DataType, try_cast: bool) -> Result<Typed, ExprError> {
        if super::cast::caster(e.data_type, to).is_none() && !is_null_literal(&e) {
            return Err(ty_err(
                pos,
                format!("CAST from {} to {to} ({})", e.data_type, e.name),
                "casts among STRING, INT, BIGINT, FLOAT, DOUBLE, DECIMAL, BOOLEAN, TIMESTAMP except BOOLEAN <-> TIMESTAMP; \
                 DATE <-> STRING, TIMESTAMP",
            ));
        }
        let name = if try_cast { format!("TRY_CAST({} AS {to})", e.name) } else { format!("CAST({} AS {to})", e.name) };
        Ok(Typed { node: Node::Cast { input: Box::new(e), try_cast, implicit: false }, data_type: to, name })
    }
}

/// How Spark 4.3 names a lateral alias reference inside a larger expression:
/// `lateralAliasReference(name)`.
const LATERAL_REFERENCE: &str = "lateralAliasReference(";

impl Typed {
    /// Whether the expression calls `current_timestamp()` / `now()` anywhere: its value then
    /// depends on when it is evaluated ([`super::processing_time`]), not on the record alone.
    pub fn reads_processing_time(&self) -> bool {
        let any = |v: &[Typed]| v.iter().any(Typed::reads_processing_time);
        match &self.node {
            Node::Literal(_) | Node::Column(_) => false,
            Node::Call { func: Func::CurrentTimestamp, .. } => true,
            Node::Cast { input, .. } => input.reads_processing_time(),
            Node::And(a, b) | Node::Or(a, b) => a.reads_processing_time() || b.reads_processing_time(),
            Node::Case { branches, otherwise } => {
                branches.iter().any(|(c, v)| c.reads_processing_time() || v.reads_processing_time())
                    || otherwise.as_deref().is_some_and(Typed::reads_processing_time)
            }
            Node::In { value, list, .. } => value.reads_processing_time() || any(list),
            Node::Coalesce(args) | Node::Udf { args, .. } | Node::Call { args, .. } => any(args),
        }
    }

    /// The output column name of this expression selected without `AS`: its name, except that
    /// casts of a column written in the query are named as the column (Spark's `ResolveAliases`
    /// for `Cast`) and a field of a column is named as the field (`window.start` is `start`,
    /// `s.a` is `a`). An implicit cast keeps its own name (`positive(s)` of a STRING `s` is
    /// the implicit cast of `s` to DOUBLE, named `(+ s)`).
    pub fn output_name(&self) -> &str {
        if let Some(field) = super::structs::nested_output_name(self) {
            return field;
        }
        let mut t = self;
        while let Node::Cast { input, implicit: false, .. } = &t.node {
            t = input;
        }
        if matches!(t.node, Node::Column(_)) {
            return &t.name;
        }
        // a cast of a lateral alias reference (`CAST(window.start AS DATE)` where `window` is an
        // earlier item's alias): Spark's reference is a named expression, so the cast takes its
        // name (`start`), as a cast of a column does
        match t.name.strip_prefix(LATERAL_REFERENCE).and_then(|n| n.strip_suffix(')')) {
            Some(reference) if !std::ptr::eq(t, self) => reference,
            _ => &self.name,
        }
    }

    /// The name of argument `i` of a call or comparison (for composite names such as
    /// `between(a, l, h)`).
    fn name_arg(&self, i: usize) -> String {
        match &self.node {
            Node::Call { args, .. } | Node::Udf { args, .. } => {
                args.get(i).map_or_else(String::new, |a| a.name.clone())
            }
            _ => String::new(),
        }
    }
}

/// A LIKE pattern as an anchored regular expression: `_` any one character, `%` any run,
/// `esc` before `_`, `%` or itself that character literally (Spark's
/// `StringUtils.escapeLikeRegex`); `ilike` ignores case. `Err`: what is allowed, for an escape
/// before anything else or at the end (Spark's INVALID_FORMAT).
pub(crate) fn like_regex(p: &str, ilike: bool, esc: char) -> Result<Regex, String> {
    let mut re = String::from(if ilike { "(?s)(?i)^" } else { "(?s)^" });
    let mut chars = p.chars();
    while let Some(c) = chars.next() {
        match c {
            c if c == esc => match chars.next() {
                Some(n) if n == '_' || n == '%' || n == esc => re.push_str(&regex::escape(&n.to_string())),
                _ => return Err(format!("an escape `{esc}` followed by _, % or {esc}")),
            },
            '_' => re.push('.'),
            '%' => re.push_str(".*"),
            c => re.push_str(&regex::escape(&c.to_string())),
        }
    }
    re.push('$');
    Regex::new(&re).map_err(|e| format!("a LIKE pattern ({e})"))
}
