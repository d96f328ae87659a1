//! Binding: [`Syntax`] + [`Schema`] -> [`Typed`]. Column resolution ignoring case, Spark's ANSI
//! type coercion (`AnsiTypeCoercion`), and Spark's names (`toPrettySQL`: literals bare, implicit
//! casts invisible, a cast of a column named as the column).

use std::sync::Arc;

use regex::Regex;

use super::functions::{ArithOp, CmpOp, Func, Math1, TimeField, TruncUnit};
use super::text::{java_double, parse_format};
use super::{BinaryOp, ExprError, LikeKind, Literal, Node, Pos, Syntax, SyntaxKind, Typed};
use crate::schema::{DataType, Schema};
use crate::time::Timestamp;
use crate::value::Value;

/// Binds `syntax` against `schema`: the typed plan with Spark's result type and name.
///
/// # Errors
/// [`ExprError::UnknownColumn`] for a name not in the schema; [`ExprError::Type`] for operands
/// Spark's ANSI rules refuse (`true + 1`, `CAST(ts AS BOOLEAN)`); [`ExprError::Unsupported`]
/// for what Spark has and Eddy does not implement (DECIMAL arithmetic, DATE, unknown
/// functions), each naming the construct and its position.
pub fn bind(syntax: &Syntax, schema: &Schema) -> Result<Typed, ExprError> {
    Binder { schema }.bind(syntax)
}

struct Binder<'a> {
    schema: &'a Schema,
}

const NUMERIC: &str = "INT, BIGINT, FLOAT, DOUBLE";

fn ty_err(pos: Pos, found: String, allowed: &str) -> ExprError {
    ExprError::Type { pos, found, allowed: allowed.to_string() }
}

fn unsupported(pos: Pos, found: impl Into<String>, allowed: &str) -> ExprError {
    ExprError::Unsupported { pos, found: found.into(), allowed: allowed.to_string() }
}

fn literal(v: Value, data_type: DataType, name: String) -> Typed {
    Typed { node: Node::Literal(v), data_type, name }
}

fn is_null_literal(t: &Typed) -> bool {
    matches!(t.node, Node::Literal(Value::Null)) && t.name == "NULL"
}

fn call(func: Func, args: Vec<Typed>, data_type: DataType, name: String) -> Typed {
    Typed { node: Node::Call { func, args }, data_type, name }
}

fn names(args: &[Typed]) -> String {
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
/// meeting a FLOAT widens to DOUBLE (a FLOAT cannot hold every integer).
fn wider(a: DataType, b: DataType) -> Option<DataType> {
    use DataType as T;
    match (a, b) {
        (T::Int | T::Long, T::Float) | (T::Float, T::Int | T::Long) => Some(T::Double),
        _ => match (rank(a)?, rank(b)?) {
            (x, y) if x >= y => Some(a),
            _ => Some(b),
        },
    }
}

/// An implicit cast (invisible in names); NULL literals take any type.
fn coerce(t: Typed, to: DataType) -> Typed {
    if t.data_type == to {
        return t;
    }
    if is_null_literal(&t) {
        return Typed { data_type: to, ..t };
    }
    let name = t.name.clone();
    Typed { node: Node::Cast { input: Box::new(t), try_cast: false, implicit: true }, data_type: to, name }
}

/// The common type of values that meet in one result (CASE branches, coalesce, IN lists):
/// equal types, or numbers widened; NULL literals take the others' type.
fn common_type(pos: Pos, items: &[Typed], what: &str) -> Result<DataType, ExprError> {
    let mut ty: Option<DataType> = None;
    for t in items.iter().filter(|t| !is_null_literal(t)) {
        ty = Some(match ty {
            None => t.data_type,
            Some(a) if a == t.data_type => a,
            Some(a) => wider(a, t.data_type).ok_or_else(|| {
                ty_err(
                    pos,
                    format!("{what} of types {a} and {} ({})", t.data_type, t.name),
                    "one type, or numbers (widened)",
                )
            })?,
        });
    }
    ty.ok_or_else(|| unsupported(pos, format!("{what} of NULL literals only"), "a typed value among them"))
}

impl Binder<'_> {
    fn bind(&self, s: &Syntax) -> Result<Typed, ExprError> {
        let pos = s.pos;
        match &s.kind {
            SyntaxKind::Literal(l) => self.literal(pos, l),
            SyntaxKind::Column(parts) => {
                if parts.len() != 1 {
                    return Err(unsupported(pos, format!("qualified name `{}`", parts.join(".")), "a column name"));
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
                let e = self.bind(e)?;
                self.numeric(pos, &e, "unary -")?;
                let name = format!("(- {})", e.name);
                Ok(call(Func::Negate, vec![e.clone()], e.data_type, name))
            }
            SyntaxKind::Positive(e) => {
                let e = self.bind(e)?;
                self.numeric(pos, &e, "unary +")?;
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
                let mut all = vec![value.clone()];
                all.extend(list.iter().cloned());
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
            SyntaxKind::Cast { expr, to, try_cast } => {
                // a DECIMAL literal cast to a floating type or STRING needs no DECIMAL arithmetic
                if let SyntaxKind::Literal(Literal::Decimal(text)) = &expr.kind
                    && matches!(to, DataType::Float | DataType::Double | DataType::String)
                {
                    let v = match to {
                        DataType::Float => text.parse::<f32>().map(Value::Float),
                        DataType::Double => text.parse::<f64>().map(Value::Double),
                        _ => Ok(Value::Str(Arc::from(text.as_str()))),
                    };
                    let v = v.map_err(|_| ty_err(pos, format!("number {text}"), "a number"))?;
                    return Ok(literal(v, *to, format!("CAST({text} AS {to})")));
                }
                let e = self.bind(expr)?;
                self.cast(pos, e, *to, *try_cast)
            }
            SyntaxKind::Call { name, args } => self.call(pos, name, args),
        }
    }

    fn not(&self, t: Typed) -> Typed {
        let name = format!("(NOT {})", t.name);
        call(Func::Not, vec![t], DataType::Boolean, name)
    }

    fn numeric(&self, pos: Pos, t: &Typed, what: &str) -> Result<(), ExprError> {
        if rank(t.data_type).is_none() && !is_null_literal(t) {
            return Err(ty_err(pos, format!("{what} of {} ({})", t.data_type, t.name), NUMERIC));
        }
        Ok(())
    }

    fn boolean(&self, pos: Pos, t: Typed, what: &str) -> Result<Typed, ExprError> {
        if t.data_type != DataType::Boolean && !is_null_literal(&t) {
            return Err(ty_err(pos, format!("{what} of {} ({})", t.data_type, t.name), "BOOLEAN"));
        }
        Ok(coerce(t, DataType::Boolean))
    }

    fn string(&self, pos: Pos, t: Typed, what: &str) -> Result<Typed, ExprError> {
        if t.data_type != DataType::String && !is_null_literal(&t) {
            return Err(ty_err(pos, format!("{what} of {} ({})", t.data_type, t.name), "STRING"));
        }
        Ok(coerce(t, DataType::String))
    }

    fn integer(&self, pos: Pos, t: Typed, what: &str) -> Result<Typed, ExprError> {
        if !matches!(t.data_type, DataType::Int) && !is_null_literal(&t) {
            if t.data_type == DataType::Long {
                return Ok(coerce(t, DataType::Int));
            }
            return Err(ty_err(pos, format!("{what} of {} ({})", t.data_type, t.name), "INT"));
        }
        Ok(coerce(t, DataType::Int))
    }

    fn literal(&self, pos: Pos, l: &Literal) -> Result<Typed, ExprError> {
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
                return Err(unsupported(
                    pos,
                    format!("the DECIMAL literal {text} here (DECIMAL arithmetic is not implemented)"),
                    "a DECIMAL literal against a DOUBLE or FLOAT operand, or a DOUBLE literal such as 1.5D",
                ));
            }
            Literal::String(s) => literal(Value::Str(Arc::from(s.as_str())), DataType::String, s.clone()),
            Literal::Timestamp(s) => {
                let us = super::text::parse_cast_timestamp(s).ok_or_else(|| {
                    ty_err(pos, format!("TIMESTAMP '{s}'"), "a timestamp such as TIMESTAMP '2024-01-15 10:00:00'")
                })?;
                let name = format!("TIMESTAMP '{}'", super::text::timestamp_string(us));
                literal(Value::Timestamp(Timestamp(us)), DataType::Timestamp, name)
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
    fn operand(&self, s: &Syntax, other: Option<DataType>) -> Result<Typed, ExprError> {
        if let SyntaxKind::Literal(Literal::Decimal(text)) = &s.kind
            && matches!(other, Some(DataType::Double | DataType::Float))
        {
            let v: f64 = text.parse().map_err(|_| ty_err(s.pos, format!("number {text}"), "a number"))?;
            return Ok(literal(Value::Double(v), DataType::Double, text.clone()));
        }
        self.bind(s)
    }

    fn binary(&self, pos: Pos, op: BinaryOp, ls: &Syntax, rs: &Syntax) -> Result<Typed, ExprError> {
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
                self.arith(pos, aop, false, l, r, name)
            }
            BinaryOp::Divide => {
                let name = format!("({} / {})", l.name, r.name);
                self.divide(pos, false, l, r, name)
            }
            BinaryOp::Eq => self.compare(pos, CmpOp::Eq, l, r),
            BinaryOp::NotEq => Ok(self.not(self.compare(pos, CmpOp::Eq, l, r)?)),
            BinaryOp::Lt => self.compare(pos, CmpOp::Lt, l, r),
            BinaryOp::LtEq => self.compare(pos, CmpOp::LtEq, l, r),
            BinaryOp::Gt => self.compare(pos, CmpOp::Gt, l, r),
            BinaryOp::GtEq => self.compare(pos, CmpOp::GtEq, l, r),
            BinaryOp::NullSafeEq => {
                let (l, r) = self.comparable(pos, l, r, "<=>")?;
                let name = format!("({} <=> {})", l.name, r.name);
                Ok(call(Func::NullSafeEq, vec![l, r], DataType::Boolean, name))
            }
            BinaryOp::And | BinaryOp::Or => {
                let l = self.boolean(pos, l, "AND / OR")?;
                let r = self.boolean(pos, r, "AND / OR")?;
                let (name, node) = if op == BinaryOp::And {
                    (format!("({} AND {})", l.name, r.name), Node::And(Box::new(l), Box::new(r)))
                } else {
                    (format!("({} OR {})", l.name, r.name), Node::Or(Box::new(l), Box::new(r)))
                };
                Ok(Typed { node, data_type: DataType::Boolean, name })
            }
            BinaryOp::Concat => {
                let args = vec![self.to_string_arg(l), self.to_string_arg(r)];
                let name = format!("concat({})", names(&args));
                Ok(call(Func::Concat, args, DataType::String, name))
            }
        }
    }

    fn to_string_arg(&self, t: Typed) -> Typed {
        coerce(t, DataType::String)
    }

    fn arith(&self, pos: Pos, op: ArithOp, try_: bool, l: Typed, r: Typed, name: String) -> Result<Typed, ExprError> {
        self.numeric(pos, &l, "arithmetic")?;
        self.numeric(pos, &r, "arithmetic")?;
        let ty = common_type(pos, &[l.clone(), r.clone()], "arithmetic")?;
        if op == ArithOp::IntDiv && !matches!(ty, DataType::Int | DataType::Long) {
            return Err(ty_err(pos, format!("div of {ty}"), "INT, BIGINT"));
        }
        let ty_out = if op == ArithOp::IntDiv { DataType::Long } else { ty };
        let ty_in = if op == ArithOp::IntDiv { DataType::Long } else { ty };
        Ok(call(Func::Arith { op, try_ }, vec![coerce(l, ty_in), coerce(r, ty_in)], ty_out, name))
    }

    fn divide(&self, pos: Pos, try_: bool, l: Typed, r: Typed, name: String) -> Result<Typed, ExprError> {
        self.numeric(pos, &l, "/")?;
        self.numeric(pos, &r, "/")?;
        Ok(call(
            Func::Divide { try_ },
            vec![coerce(l, DataType::Double), coerce(r, DataType::Double)],
            DataType::Double,
            name,
        ))
    }

    /// The operands of a comparison cast to one type: numbers widened; a STRING against a
    /// number, TIMESTAMP or BOOLEAN cast to that type (ANSI).
    fn comparable(&self, pos: Pos, l: Typed, r: Typed, what: &str) -> Result<(Typed, Typed), ExprError> {
        use DataType as T;
        let (a, b) = (l.data_type, r.data_type);
        let ty = if is_null_literal(&l) {
            b
        } else if is_null_literal(&r) || a == b {
            a
        } else if let Some(w) = wider(a, b) {
            w
        } else {
            match (a, b) {
                (T::String, x) | (x, T::String) if x != T::Window && !matches!(x, T::Array(_)) => x,
                _ => {
                    return Err(ty_err(
                        pos,
                        format!("{what} between {a} ({}) and {b} ({})", l.name, r.name),
                        "values of one type, numbers, or a STRING and another type",
                    ));
                }
            }
        };
        Ok((self.coerce_string(l, ty), self.coerce_string(r, ty)))
    }

    fn coerce_string(&self, t: Typed, ty: DataType) -> Typed {
        coerce(t, ty)
    }

    fn compare(&self, pos: Pos, op: CmpOp, l: Typed, r: Typed) -> Result<Typed, ExprError> {
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

    fn like(&self, pos: Pos, kind: LikeKind, expr: &Syntax, pattern: &Syntax) -> Result<Typed, ExprError> {
        let e = self.string(pos, self.bind(expr)?, "LIKE")?;
        let SyntaxKind::Literal(Literal::String(p)) = &pattern.kind else {
            return Err(unsupported(
                pattern.pos,
                "a pattern that is not a string literal",
                "LIKE / RLIKE with a constant pattern",
            ));
        };
        match kind {
            LikeKind::Like | LikeKind::ILike => {
                let mut re = String::from(if kind == LikeKind::ILike { "(?s)(?i)^" } else { "(?s)^" });
                let mut chars = p.chars();
                while let Some(c) = chars.next() {
                    match c {
                        '\\' => match chars.next() {
                            Some(n @ ('_' | '%' | '\\')) => re.push_str(&regex::escape(&n.to_string())),
                            _ => {
                                return Err(ty_err(
                                    pattern.pos,
                                    format!("LIKE pattern '{p}'"),
                                    "an escape `\\` followed by _, % or \\",
                                ));
                            }
                        },
                        '_' => re.push('.'),
                        '%' => re.push_str(".*"),
                        c => re.push_str(&regex::escape(&c.to_string())),
                    }
                }
                re.push('$');
                let compiled = Regex::new(&re)
                    .map_err(|e| ty_err(pattern.pos, format!("LIKE pattern '{p}': {e}"), "a LIKE pattern"))?;
                let name = if kind == LikeKind::ILike {
                    format!("ilike({}, {p})", e.name)
                } else {
                    format!("{} LIKE {p}", e.name)
                };
                Ok(call(Func::Like(Arc::new(compiled)), vec![e], DataType::Boolean, name))
            }
            LikeKind::RLike => {
                let re = java_regex(pattern.pos, p)?;
                let name = format!("RLIKE({}, {p})", e.name);
                Ok(call(Func::RLike(re), vec![e], DataType::Boolean, name))
            }
        }
    }

    fn case(
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

    fn cast(&self, pos: Pos, e: Typed, to: DataType, try_cast: bool) -> Result<Typed, ExprError> {
        if super::cast::cast_fn(e.data_type, to).is_none() && !is_null_literal(&e) {
            return Err(ty_err(
                pos,
                format!("CAST from {} to {to} ({})", e.data_type, e.name),
                "casts among STRING, INT, BIGINT, FLOAT, DOUBLE, BOOLEAN, TIMESTAMP except BOOLEAN <-> TIMESTAMP",
            ));
        }
        let name = if try_cast { format!("TRY_CAST({} AS {to})", e.name) } else { format!("CAST({} AS {to})", e.name) };
        Ok(Typed { node: Node::Cast { input: Box::new(e), try_cast, implicit: false }, data_type: to, name })
    }

    fn call(&self, pos: Pos, fname: &str, args: &[Syntax]) -> Result<Typed, ExprError> {
        let lower = fname.to_ascii_lowercase();
        let arity = |n: std::ops::RangeInclusive<usize>| -> Result<(), ExprError> {
            if n.contains(&args.len()) {
                Ok(())
            } else {
                Err(ty_err(
                    pos,
                    format!("{lower} with {} arguments", args.len()),
                    &format!("{} to {} arguments", n.start(), n.end()),
                ))
            }
        };
        let bound = |this: &Self| args.iter().map(|a| this.bind(a)).collect::<Result<Vec<_>, _>>();
        let lit_int = |i: usize| -> Result<i64, ExprError> {
            match &args[i].kind {
                SyntaxKind::Literal(Literal::Integer(v)) => Ok(*v),
                _ => Err(unsupported(
                    args[i].pos,
                    format!("a non-constant argument {} of {lower}", i + 1),
                    "an integer literal",
                )),
            }
        };
        let lit_str = |i: usize| -> Result<String, ExprError> {
            match &args[i].kind {
                SyntaxKind::Literal(Literal::String(s)) => Ok(s.clone()),
                _ => Err(unsupported(
                    args[i].pos,
                    format!("a non-constant argument {} of {lower}", i + 1),
                    "a string literal",
                )),
            }
        };
        let named = |n: &str, a: &[Typed]| format!("{n}({})", names(a));
        match lower.as_str() {
            "if" => {
                arity(3..=3)?;
                let a = bound(self)?;
                let c = self.boolean(pos, a[0].clone(), "if")?;
                let ty = common_type(pos, &a[1..], "if branches")?;
                let name = format!("(IF({}, {}, {}))", a[0].name, a[1].name, a[2].name);
                let node = Node::Case {
                    branches: vec![(c, coerce(a[1].clone(), ty))],
                    otherwise: Some(Box::new(coerce(a[2].clone(), ty))),
                };
                Ok(Typed { node, data_type: ty, name })
            }
            "coalesce" | "nvl" | "ifnull" => {
                arity(if lower == "coalesce" { 1..=64 } else { 2..=2 })?;
                let a = bound(self)?;
                let ty = common_type(pos, &a, &lower)?;
                let name = named(&lower, &a);
                Ok(Typed { node: Node::Coalesce(a.into_iter().map(|x| coerce(x, ty)).collect()), data_type: ty, name })
            }
            "nullif" => {
                arity(2..=2)?;
                let a = bound(self)?;
                let name = named("nullif", &a);
                let eq = self.compare(pos, CmpOp::Eq, a[0].clone(), a[1].clone())?;
                let node = Node::Case {
                    branches: vec![(eq, literal(Value::Null, a[0].data_type, "NULL".into()))],
                    otherwise: Some(Box::new(a[0].clone())),
                };
                Ok(Typed { node, data_type: a[0].data_type, name })
            }
            "abs" => {
                arity(1..=1)?;
                let a = bound(self)?;
                self.numeric(pos, &a[0], "abs")?;
                Ok(call(Func::Abs, a.clone(), a[0].data_type, named("abs", &a)))
            }
            "mod" | "pmod" | "try_add" | "try_subtract" | "try_multiply" => {
                arity(2..=2)?;
                let a = bound(self)?;
                let (op, try_) = match lower.as_str() {
                    "mod" => (ArithOp::Rem, false),
                    "pmod" => (ArithOp::Pmod, false),
                    "try_add" => (ArithOp::Add, true),
                    "try_subtract" => (ArithOp::Sub, true),
                    _ => (ArithOp::Mul, true),
                };
                let name = named(&lower, &a);
                self.arith(pos, op, try_, a[0].clone(), a[1].clone(), name)
            }
            "div" => {
                arity(2..=2)?;
                let a = bound(self)?;
                let name = format!("({} div {})", a[0].name, a[1].name);
                self.arith(pos, ArithOp::IntDiv, false, a[0].clone(), a[1].clone(), name)
            }
            "try_divide" => {
                arity(2..=2)?;
                let a = bound(self)?;
                let name = named("try_divide", &a);
                self.divide(pos, true, a[0].clone(), a[1].clone(), name)
            }
            "round" | "bround" => {
                arity(1..=2)?;
                let x = self.bind(&args[0])?;
                self.numeric(pos, &x, &lower)?;
                let scale = if args.len() == 2 { lit_int(1)? } else { 0 };
                let name = format!("{lower}({}, {scale})", x.name);
                let ty = x.data_type;
                Ok(call(Func::Round { scale: scale as i32, half_even: lower == "bround" }, vec![x], ty, name))
            }
            "floor" | "ceil" | "ceiling" => {
                arity(1..=1)?;
                let x = self.bind(&args[0])?;
                self.numeric(pos, &x, &lower)?;
                let x = match x.data_type {
                    DataType::Int | DataType::Long => coerce(x, DataType::Long),
                    _ => coerce(x, DataType::Double),
                };
                let name = format!("{}({})", math_name(&lower), x.name);
                Ok(call(Func::FloorCeil { ceil: lower != "floor" }, vec![x], DataType::Long, name))
            }
            "sqrt" | "exp" | "ln" | "log10" | "log2" | "sign" | "signum" => {
                arity(1..=1)?;
                let x = self.bind(&args[0])?;
                self.numeric(pos, &x, &lower)?;
                let m = match lower.as_str() {
                    "sqrt" => Math1::Sqrt,
                    "exp" => Math1::Exp,
                    "ln" => Math1::Ln,
                    "log10" => Math1::Log10,
                    "log2" => Math1::Log2,
                    _ => Math1::Sign,
                };
                let name = format!("{}({})", math_name(&lower), x.name);
                Ok(call(Func::Math1(m), vec![coerce(x, DataType::Double)], DataType::Double, name))
            }
            "log" | "pow" | "power" => {
                arity(2..=2)?;
                let a = bound(self)?;
                self.numeric(pos, &a[0], &lower)?;
                self.numeric(pos, &a[1], &lower)?;
                let name = format!("{}({})", math_name(&lower), names(&a));
                let func = if lower == "log" { Func::Log } else { Func::Pow };
                let a = a.into_iter().map(|x| coerce(x, DataType::Double)).collect();
                Ok(call(func, a, DataType::Double, name))
            }
            "greatest" | "least" => {
                arity(2..=64)?;
                let a = bound(self)?;
                let ty = common_type(pos, &a, &lower)?;
                let name = named(&lower, &a);
                let a = a.into_iter().map(|x| coerce(x, ty)).collect();
                Ok(call(Func::Extreme { greatest: lower == "greatest" }, a, ty, name))
            }
            "lower" | "upper" | "length" | "char_length" | "trim" | "ltrim" | "rtrim" | "initcap" | "reverse"
            | "md5" => {
                arity(1..=1)?;
                let a = vec![self.string(pos, self.bind(&args[0])?, &lower)?];
                let (func, ty) = match lower.as_str() {
                    "lower" => (Func::Lower, DataType::String),
                    "upper" => (Func::Upper, DataType::String),
                    "length" | "char_length" => (Func::Length, DataType::Int),
                    "trim" => (Func::Trim, DataType::String),
                    "ltrim" => (Func::LTrim, DataType::String),
                    "rtrim" => (Func::RTrim, DataType::String),
                    "initcap" => (Func::Initcap, DataType::String),
                    "reverse" => (Func::Reverse, DataType::String),
                    _ => (Func::Md5, DataType::String),
                };
                let name = named(&lower, &a);
                Ok(call(func, a, ty, name))
            }
            "substring" | "substr" | "left" => {
                arity(if lower == "left" { 2..=2 } else { 2..=3 })?;
                let s = self.string(pos, self.bind(&args[0])?, &lower)?;
                let p = self.integer(pos, self.bind(&args[1])?, &lower)?;
                let (a, name) = if lower == "left" {
                    let name = format!("left({}, {})", s.name, p.name);
                    (vec![s, literal(Value::Int(1), DataType::Int, "1".into()), p], name)
                } else {
                    let l = match args.get(2) {
                        Some(l) => self.integer(pos, self.bind(l)?, &lower)?,
                        None => literal(Value::Int(i32::MAX), DataType::Int, i32::MAX.to_string()),
                    };
                    let name = format!("{lower}({}, {}, {})", s.name, p.name, l.name);
                    (vec![s, p, l], name)
                };
                Ok(call(Func::Substring, a, DataType::String, name))
            }
            "concat" => {
                arity(1..=64)?;
                let a: Vec<Typed> = bound(self)?.into_iter().map(|x| self.to_string_arg(x)).collect();
                let name = named("concat", &a);
                Ok(call(Func::Concat, a, DataType::String, name))
            }
            "concat_ws" => {
                arity(1..=64)?;
                let a = bound(self)?
                    .into_iter()
                    .map(|x| self.string(pos, x, "concat_ws"))
                    .collect::<Result<Vec<_>, _>>()?;
                let name = named("concat_ws", &a);
                Ok(call(Func::ConcatWs, a, DataType::String, name))
            }
            "lpad" | "rpad" => {
                arity(2..=3)?;
                let s = self.string(pos, self.bind(&args[0])?, &lower)?;
                let n = self.integer(pos, self.bind(&args[1])?, &lower)?;
                let p = match args.get(2) {
                    Some(p) => self.string(pos, self.bind(p)?, &lower)?,
                    None => literal(Value::Str(Arc::from(" ")), DataType::String, " ".into()),
                };
                let a = vec![s, n, p];
                let name = named(&lower, &a);
                Ok(call(if lower == "lpad" { Func::Lpad } else { Func::Rpad }, a, DataType::String, name))
            }
            "replace" => {
                arity(2..=3)?;
                let mut a =
                    bound(self)?.into_iter().map(|x| self.string(pos, x, "replace")).collect::<Result<Vec<_>, _>>()?;
                if a.len() == 2 {
                    a.push(literal(Value::Str(Arc::from("")), DataType::String, String::new()));
                }
                let name = named("replace", &a);
                Ok(call(Func::Replace, a, DataType::String, name))
            }
            "instr" | "locate" | "startswith" | "endswith" | "contains" => {
                arity(2..=2)?;
                let a = bound(self)?.into_iter().map(|x| self.string(pos, x, &lower)).collect::<Result<Vec<_>, _>>()?;
                let (func, ty) = match lower.as_str() {
                    "instr" | "locate" => (Func::Instr, DataType::Int),
                    "startswith" => (Func::StartsWith, DataType::Boolean),
                    "endswith" => (Func::EndsWith, DataType::Boolean),
                    _ => (Func::Contains, DataType::Boolean),
                };
                let name = if lower == "locate" { format!("locate({}, 1)", names(&a)) } else { named(&lower, &a) };
                let a = if lower == "locate" { vec![a[1].clone(), a[0].clone()] } else { a };
                Ok(call(func, a, ty, name))
            }
            "right" => {
                arity(2..=2)?;
                let s = self.string(pos, self.bind(&args[0])?, "right")?;
                let n = self.integer(pos, self.bind(&args[1])?, "right")?;
                let a = vec![s, n];
                let name = named("right", &a);
                Ok(call(Func::Right, a, DataType::String, name))
            }
            "split_part" => {
                arity(3..=3)?;
                let s = self.string(pos, self.bind(&args[0])?, "split_part")?;
                let d = self.string(pos, self.bind(&args[1])?, "split_part")?;
                let n = self.integer(pos, self.bind(&args[2])?, "split_part")?;
                let a = vec![s, d, n];
                let name = named("split_part", &a);
                Ok(call(Func::SplitPart, a, DataType::String, name))
            }
            "regexp_replace" => {
                arity(3..=3)?;
                let s = self.string(pos, self.bind(&args[0])?, &lower)?;
                let re = java_regex(args[1].pos, &lit_str(1)?)?;
                let rep = lit_str(2)?;
                if rep.contains(['$', '\\']) {
                    return Err(unsupported(
                        args[2].pos,
                        "a replacement with `$` or `\\`",
                        "a literal replacement text",
                    ));
                }
                // Spark fills in the start position: `regexp_replace(s, re, rep, 1)`
                let a = vec![s, self.bind(&args[1])?, self.bind(&args[2])?];
                let name = format!("{lower}({}, 1)", names(&a));
                Ok(call(Func::RegexpReplace(re), a, DataType::String, name))
            }
            "regexp_extract" => {
                arity(2..=3)?;
                let s = self.string(pos, self.bind(&args[0])?, &lower)?;
                let re = java_regex(args[1].pos, &lit_str(1)?)?;
                let group = if args.len() == 3 { lit_int(2)? } else { 1 };
                if group < 0 || group as usize >= re.captures_len() {
                    return Err(ty_err(
                        pos,
                        format!("regexp_extract group {group}"),
                        &format!("0 to {}", re.captures_len() - 1),
                    ));
                }
                let mut a = vec![s, self.bind(&args[1])?];
                a.push(literal(Value::Int(group as i32), DataType::Int, group.to_string()));
                let name = named(&lower, &a);
                Ok(call(Func::RegexpExtract(re, group as usize), vec![a[0].clone()], DataType::String, name))
            }
            "sha2" => {
                arity(2..=2)?;
                let s = self.string(pos, self.bind(&args[0])?, "sha2")?;
                let bits = lit_int(1)?;
                let bits = match bits {
                    0 | 256 => 256,
                    224 | 384 | 512 => bits as u16,
                    _ => return Err(ty_err(args[1].pos, format!("sha2 bit length {bits}"), "224, 256, 384, 512 or 0")),
                };
                let name = format!("sha2({}, {})", s.name, lit_int(1)?);
                Ok(call(Func::Sha2(bits), vec![s], DataType::String, name))
            }
            "year" | "month" | "day" | "dayofmonth" | "dayofweek" | "hour" | "minute" | "second" | "unix_seconds"
            | "unix_millis" | "unix_micros" => {
                arity(1..=1)?;
                let t = self.bind(&args[0])?;
                if t.data_type != DataType::Timestamp && !is_null_literal(&t) {
                    return Err(ty_err(pos, format!("{lower} of {} ({})", t.data_type, t.name), "TIMESTAMP"));
                }
                let t = coerce(t, DataType::Timestamp);
                let name = named(&lower, std::slice::from_ref(&t));
                let (func, ty) = match lower.as_str() {
                    "year" => (Func::TimeField(TimeField::Year), DataType::Int),
                    "month" => (Func::TimeField(TimeField::Month), DataType::Int),
                    "day" | "dayofmonth" => (Func::TimeField(TimeField::Day), DataType::Int),
                    "dayofweek" => (Func::TimeField(TimeField::DayOfWeek), DataType::Int),
                    "hour" => (Func::TimeField(TimeField::Hour), DataType::Int),
                    "minute" => (Func::TimeField(TimeField::Minute), DataType::Int),
                    "second" => (Func::TimeField(TimeField::Second), DataType::Int),
                    "unix_seconds" => (Func::UnixTime(1_000_000), DataType::Long),
                    "unix_millis" => (Func::UnixTime(1_000), DataType::Long),
                    _ => (Func::UnixTime(1), DataType::Long),
                };
                Ok(call(func, vec![t], ty, name))
            }
            "timestamp_seconds" | "timestamp_millis" | "timestamp_micros" => {
                arity(1..=1)?;
                let x = self.bind(&args[0])?;
                if !matches!(x.data_type, DataType::Int | DataType::Long) && !is_null_literal(&x) {
                    return Err(ty_err(pos, format!("{lower} of {} ({})", x.data_type, x.name), "INT, BIGINT"));
                }
                let name = named(&lower, std::slice::from_ref(&x));
                let per = match lower.as_str() {
                    "timestamp_seconds" => 1_000_000,
                    "timestamp_millis" => 1_000,
                    _ => 1,
                };
                Ok(call(Func::FromUnix(per), vec![coerce(x, DataType::Long)], DataType::Timestamp, name))
            }
            "date_trunc" => {
                arity(2..=2)?;
                let unit = lit_str(0)?;
                let u = match unit.to_ascii_uppercase().as_str() {
                    "YEAR" | "YYYY" | "YY" => TruncUnit::Year,
                    "QUARTER" => TruncUnit::Quarter,
                    "MONTH" | "MM" | "MON" => TruncUnit::Month,
                    "WEEK" => TruncUnit::Week,
                    "DAY" | "DD" => TruncUnit::Fixed(86_400_000_000),
                    "HOUR" => TruncUnit::Fixed(3_600_000_000),
                    "MINUTE" => TruncUnit::Fixed(60_000_000),
                    "SECOND" => TruncUnit::Fixed(1_000_000),
                    "MILLISECOND" => TruncUnit::Fixed(1_000),
                    "MICROSECOND" => TruncUnit::Fixed(1),
                    _ => {
                        return Err(ty_err(
                            args[0].pos,
                            format!("date_trunc unit '{unit}'"),
                            "YEAR, QUARTER, MONTH, WEEK, DAY, HOUR, MINUTE, SECOND, MILLISECOND, MICROSECOND",
                        ));
                    }
                };
                let t = self.bind(&args[1])?;
                if t.data_type != DataType::Timestamp {
                    return Err(ty_err(pos, format!("date_trunc of {}", t.data_type), "TIMESTAMP"));
                }
                let name = format!("date_trunc({unit}, {})", t.name);
                Ok(call(Func::DateTrunc(u), vec![t], DataType::Timestamp, name))
            }
            "date_format" => {
                arity(2..=2)?;
                let t = self.bind(&args[0])?;
                if t.data_type != DataType::Timestamp {
                    return Err(ty_err(pos, format!("date_format of {}", t.data_type), "TIMESTAMP"));
                }
                let p = lit_str(1)?;
                let parts = parse_format(&p).ok_or_else(|| {
                    unsupported(
                        args[1].pos,
                        format!("the date_format pattern '{p}'"),
                        "patterns of yyyy, MM, dd, HH, mm, ss, SSS and separators",
                    )
                })?;
                let name = format!("date_format({}, {p})", t.name);
                Ok(call(Func::DateFormat(super::functions::DateFormat(parts.into())), vec![t], DataType::String, name))
            }
            _ => Err(unsupported(pos, format!("function {fname}"), SUPPORTED_FUNCTIONS)),
        }
    }
}

/// Spark's name of a math function: its own name upper case (`SQRT`, `FLOOR`, `POWER`), an
/// alias as written (`ceiling`, `pow`, `sign`), and `ln` lower case.
fn math_name(lower: &str) -> String {
    match lower {
        "ln" | "ceiling" | "pow" | "sign" => lower.to_string(),
        _ => lower.to_ascii_uppercase(),
    }
}

/// The functions [`bind`] knows, for error messages.
const SUPPORTED_FUNCTIONS: &str = "if, coalesce, nvl, ifnull, nullif, abs, mod, pmod, div, try_add, try_subtract, try_multiply, \
     try_divide, round, bround, floor, ceil, ceiling, sqrt, exp, ln, log10, log2, log, pow, power, sign, signum, greatest, \
     least, lower, upper, length, char_length, trim, ltrim, rtrim, initcap, reverse, md5, sha2, substring, substr, left, \
     right, concat, concat_ws, lpad, rpad, replace, instr, locate, startswith, endswith, contains, split_part, \
     regexp_replace, regexp_extract, year, month, day, dayofmonth, dayofweek, hour, minute, second, unix_seconds, \
     unix_millis, unix_micros, timestamp_seconds, timestamp_millis, timestamp_micros, date_trunc, date_format";

/// A Java regular expression that Rust's `regex` reads the same way; refused otherwise
/// (backreferences, lookaround and possessive quantifiers do not compile).
fn java_regex(pos: Pos, p: &str) -> Result<Arc<Regex>, ExprError> {
    Regex::new(p).map(Arc::new).map_err(|e| {
        unsupported(
            pos,
            format!("the regular expression '{p}' ({})", e.to_string().lines().last().unwrap_or("")),
            "regular expressions without backreferences or lookaround",
        )
    })
}

impl Typed {
    /// The output column name of this expression selected without `AS`: its name, except that
    /// casts of a column are named as the column (Spark's `ResolveAliases` for `Cast`).
    pub fn output_name(&self) -> &str {
        let mut t = self;
        while let Node::Cast { input, .. } = &t.node {
            t = input;
        }
        if matches!(t.node, Node::Column(_)) { &t.name } else { &self.name }
    }

    /// The name of argument `i` of a call or comparison (for composite names such as
    /// `between(a, l, h)`).
    fn name_arg(&self, i: usize) -> String {
        match &self.node {
            Node::Call { args, .. } => args.get(i).map_or_else(String::new, |a| a.name.clone()),
            _ => String::new(),
        }
    }
}
