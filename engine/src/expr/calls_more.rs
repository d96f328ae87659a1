//! Spark built-in functions beyond SQL.md's table that streaming jobs commonly call: aliases
//! (`ucase`, `len`, `isnull`, `nvl2`, `position`, `decode`, the cast functions `int(x)` ...),
//! date arithmetic (`date_add`, `datediff`, `add_months`, `DATE ± n`, `timestampadd`,
//! `timestampdiff`, `trunc`, `next_day`, `current_date`), date parts (`extract`,
//! `date_part`, `dayofyear`, `weekofyear`, `quarter`), trigonometry and other DOUBLE functions,
//! bitwise operators, `TRIM(... FROM ...)` and a few string functions. Names, result types and
//! null handling are Spark 4.3's (pyspark batch `selectExpr`, checked by the oracle case
//! `tests/cases-sql/sql-more-builtins`).

use super::bind::{
    Binder, call, case_conversion, coerce, common_type, is_null_literal, literal, names, ty_err, unsupported,
};
use super::calls::{check_arity, java_regex, string_literal_arg};
use super::functions::{BitOp, Func, Math1, Math2, TimeField, TimeStep, TruncUnit};
use super::{ExprError, Literal, Node, Pos, Syntax, SyntaxKind, TrimSide, Typed};
use crate::schema::DataType;
use crate::value::Text;
use crate::value::Value;

/// The date part a field name of `extract` / `date_part` reads (Spark's aliases), and its
/// result type.
fn date_part(field: &str) -> Option<(TimeField, DataType)> {
    let f = match field.to_ascii_uppercase().as_str() {
        "YEAR" | "Y" | "YEARS" | "YR" | "YRS" => TimeField::Year,
        "QUARTER" | "QTR" => TimeField::Quarter,
        "MONTH" | "MON" | "MONS" | "MONTHS" => TimeField::Month,
        "WEEK" | "W" | "WEEKS" => TimeField::WeekOfYear,
        "DAY" | "D" | "DAYS" => TimeField::Day,
        "DAYOFWEEK" | "DOW" => TimeField::DayOfWeek,
        "DAYOFWEEK_ISO" | "DOW_ISO" => TimeField::DayOfWeekIso,
        "DOY" => TimeField::DayOfYear,
        "HOUR" | "H" | "HOURS" | "HR" | "HRS" => TimeField::Hour,
        "MINUTE" | "M" | "MIN" | "MINS" | "MINUTES" => TimeField::Minute,
        "SECOND" | "S" | "SEC" | "SECONDS" | "SECS" => {
            return Some((TimeField::Second, DataType::Decimal { precision: 8, scale: 6 }));
        }
        _ => return None,
    };
    Some((f, DataType::Int))
}

/// A type as Spark's `DataType.simpleString` writes it (`int`, `decimal(10,2)`,
/// `struct<a:int,b:string>`), for `typeof`.
fn simple_string(t: DataType) -> String {
    use crate::schema::ArrayOf;
    match t {
        DataType::String => "string".into(),
        DataType::Long => "bigint".into(),
        DataType::Int => "int".into(),
        DataType::Double => "double".into(),
        DataType::Float => "float".into(),
        DataType::Boolean => "boolean".into(),
        DataType::Timestamp => "timestamp".into(),
        DataType::Date => "date".into(),
        DataType::Decimal { precision, scale } => format!("decimal({precision},{scale})"),
        DataType::Window => "struct<start:timestamp,end:timestamp>".into(),
        DataType::Struct(s) => {
            let fields: Vec<String> =
                s.fields().iter().map(|f| format!("{}:{}", f.name, simple_string(f.data_type))).collect();
            format!("struct<{}>", fields.join(","))
        }
        DataType::Array(a) => {
            let inner = match a {
                ArrayOf::Long => DataType::Long,
                ArrayOf::Int => DataType::Int,
                ArrayOf::Double => DataType::Double,
                ArrayOf::Float => DataType::Float,
                ArrayOf::Timestamp => DataType::Timestamp,
                ArrayOf::String => DataType::String,
                ArrayOf::Boolean => DataType::Boolean,
            };
            format!("array<{}>", simple_string(inner))
        }
    }
}

impl Binder<'_> {
    /// A call of one of the functions of this module (`lower` is the name in lower case); `None` for any
    /// other name.
    pub(super) fn more_call(&self, pos: Pos, lower: &str, args: &[Syntax]) -> Result<Option<Typed>, ExprError> {
        let arity = |n: std::ops::RangeInclusive<usize>| check_arity(pos, lower, args, n);
        let bound = || args.iter().map(|a| self.bind(a)).collect::<Result<Vec<_>, _>>();
        let named = |a: &[Typed]| format!("{lower}({})", names(a));
        let lit_str = |i: usize| string_literal_arg(lower, args, i);
        let t = match lower {
            // aliases named as called
            "ucase" | "lcase" | "len" => {
                arity(1..=1)?;
                let a = vec![self.string(pos, self.bind(&args[0])?, lower)?];
                match lower {
                    "ucase" | "lcase" => {
                        let func = if lower == "ucase" { Func::Upper } else { Func::Lower };
                        let name = named(&a);
                        case_conversion(func, a, name)
                    }
                    _ => call(Func::Length, a.clone(), DataType::Int, named(&a)),
                }
            }
            "octet_length" | "bit_length" | "ascii" | "sha1" | "sha" | "crc32" | "base64" => {
                arity(1..=1)?;
                let x = self.bind(&args[0])?;
                let binary = matches!(lower, "sha1" | "sha" | "crc32" | "base64");
                let a = vec![if binary { self.string_only(pos, x, lower)? } else { self.string(pos, x, lower)? }];
                let (func, ty) = match lower {
                    "octet_length" => (Func::OctetLength, DataType::Int),
                    "bit_length" => (Func::BitLength, DataType::Int),
                    "ascii" => (Func::Ascii, DataType::Int),
                    "sha1" | "sha" => (Func::Sha1, DataType::String),
                    "crc32" => (Func::Crc32, DataType::Long),
                    _ => (Func::Base64, DataType::String),
                };
                call(func, a.clone(), ty, named(&a))
            }
            "chr" | "char" => {
                arity(1..=1)?;
                let x = self.bind(&args[0])?;
                // a STRING or a fractional number is cast to BIGINT implicitly, as Spark casts
                // it (`chr('65')`, `chr(65.9)`)
                let castable = matches!(
                    x.data_type,
                    DataType::Int | DataType::Long | DataType::String | DataType::Double | DataType::Float
                ) || x.data_type.decimal().is_some();
                if !castable && !is_null_literal(&x) {
                    return Err(ty_err(pos, format!("{lower} of {} ({})", x.data_type, x.name), "a number, STRING"));
                }
                let name = named(std::slice::from_ref(&x));
                call(Func::Chr, vec![coerce(x, DataType::Long)], DataType::String, name)
            }
            // `nullif(x, 0)`, named as called (Spark 4's NullIfZero)
            "nullifzero" => {
                arity(1..=1)?;
                let x = self.bind(&args[0])?;
                let name = named(std::slice::from_ref(&x));
                let zero = literal(Value::Int(0), DataType::Int, "0".into());
                let eq = self.compare(pos, super::functions::CmpOp::Eq, x.clone(), zero)?;
                let ty = x.data_type;
                let node = Node::Case {
                    branches: vec![(eq, literal(Value::Null, ty, "NULL".into()))],
                    otherwise: Some(Box::new(x)),
                };
                Typed { node, data_type: ty, name }
            }
            "substring_index" => {
                arity(3..=3)?;
                let s = self.string(pos, self.bind(&args[0])?, lower)?;
                let d = self.string(pos, self.bind(&args[1])?, lower)?;
                let k = self.count_arg(pos, self.bind(&args[2])?, lower)?;
                let a = vec![s, d, k];
                call(Func::SubstringIndex, a.clone(), DataType::String, named(&a))
            }
            "space" => {
                arity(1..=1)?;
                let a = vec![self.count_arg(pos, self.bind(&args[0])?, lower)?];
                call(Func::Space, a.clone(), DataType::String, named(&a))
            }
            "find_in_set" => {
                arity(2..=2)?;
                let a = bound()?.into_iter().map(|x| self.string(pos, x, lower)).collect::<Result<Vec<_>, _>>()?;
                call(Func::FindInSet, a.clone(), DataType::Int, named(&a))
            }
            "levenshtein" => {
                arity(2..=3)?;
                let mut a = Vec::with_capacity(3);
                for (i, x) in bound()?.into_iter().enumerate() {
                    a.push(if i < 2 { self.string(pos, x, lower)? } else { self.count_arg(pos, x, lower)? });
                }
                call(Func::Levenshtein, a.clone(), DataType::Int, named(&a))
            }
            "bit_count" => {
                arity(1..=1)?;
                let x = self.bind(&args[0])?;
                if !matches!(x.data_type, DataType::Int | DataType::Long | DataType::Boolean) && !is_null_literal(&x) {
                    return Err(ty_err(
                        pos,
                        format!("bit_count of {} ({})", x.data_type, x.name),
                        "INT, BIGINT, BOOLEAN",
                    ));
                }
                let name = named(std::slice::from_ref(&x));
                let x = if x.data_type == DataType::Boolean { x } else { coerce(x, DataType::Long) };
                call(Func::BitCount, vec![x], DataType::Int, name)
            }
            "bin" => {
                arity(1..=1)?;
                let x = self.bind(&args[0])?;
                // a STRING or a fractional number is cast to BIGINT implicitly, as Spark casts it
                let castable = matches!(
                    x.data_type,
                    DataType::Int | DataType::Long | DataType::String | DataType::Double | DataType::Float
                ) || x.data_type.decimal().is_some();
                if !castable && !is_null_literal(&x) {
                    return Err(ty_err(pos, format!("bin of {} ({})", x.data_type, x.name), "a number, STRING"));
                }
                let name = named(std::slice::from_ref(&x));
                call(Func::Bin, vec![coerce(x, DataType::Long)], DataType::String, name)
            }
            "width_bucket" => {
                arity(4..=4)?;
                let a = bound()?;
                let name = named(&a);
                let mut typed = Vec::with_capacity(4);
                for (i, x) in a.into_iter().enumerate() {
                    let x = self.numeric_arg(pos, x, lower)?;
                    typed.push(coerce(x, if i < 3 { DataType::Double } else { DataType::Long }));
                }
                call(Func::WidthBucket, typed, DataType::Long, name)
            }
            "make_timestamp" | "try_make_timestamp" => {
                arity(6..=7)?;
                let a = bound()?;
                let name = named(&a);
                let mut typed = Vec::with_capacity(6);
                for x in a[..5].iter() {
                    typed.push(self.integer(pos, x.clone(), lower)?);
                }
                let sec = a[5].clone();
                let castable = matches!(
                    sec.data_type,
                    DataType::Int | DataType::Long | DataType::Double | DataType::Float | DataType::String
                ) || sec.data_type.decimal().is_some()
                    || is_null_literal(&sec);
                if !castable {
                    return Err(ty_err(
                        pos,
                        format!("{lower} seconds of {} ({})", sec.data_type, sec.name),
                        "DECIMAL(16, 6), a number, STRING",
                    ));
                }
                typed.push(coerce(sec, DataType::Decimal { precision: 16, scale: 6 }));
                let wall = call(
                    Func::MakeTimestamp { try_: lower == "try_make_timestamp" },
                    typed,
                    DataType::Timestamp,
                    String::new(),
                );
                match args.get(6) {
                    None => Typed { name, ..wall },
                    Some(z) => {
                        let zone = match &z.kind {
                            SyntaxKind::Literal(Literal::String(text)) => Some(super::zones::Zone::parse(text).ok_or_else(|| {
                                ty_err(
                                    z.pos,
                                    format!("the time zone '{text}' (Spark's INVALID_TIMEZONE)"),
                                    "a region id such as 'Europe/Paris' (case matters), an offset such as '+08:00' or 'GMT+1', 'UTC', or one of Java's short ids ('PST', 'EST', 'CST', ...)",
                                )
                            })?),
                            _ => None,
                        };
                        let zone_name = self.string(pos, a[6].clone(), lower)?;
                        call(Func::ShiftZone { to_utc: true, zone }, vec![wall, zone_name], DataType::Timestamp, name)
                    }
                }
            }
            "months_between" => {
                arity(2..=3)?;
                let mut a = bound()?;
                if a.len() == 2 {
                    a.push(literal(Value::Bool(true), DataType::Boolean, "true".into()));
                }
                let name = named(&a);
                let t1 = self.timestamp_arg(pos, a[0].clone(), lower)?;
                let t2 = self.timestamp_arg(pos, a[1].clone(), lower)?;
                let round_off = self.boolean(pos, a[2].clone(), lower)?;
                call(Func::MonthsBetween, vec![t1, t2, round_off], DataType::Double, name)
            }
            // the argument's type as Spark's `simpleString` writes it; the argument is not evaluated
            "typeof" => {
                arity(1..=1)?;
                let x = self.bind(&args[0])?;
                let text = if is_null_literal(&x) { "void".to_string() } else { simple_string(x.data_type) };
                literal(Value::Str(Text::from(text.as_str())), DataType::String, named(std::slice::from_ref(&x)))
            }
            "conv" => {
                arity(3..=3)?;
                let a = bound()?;
                let name = named(&a);
                let num = self.string(pos, a[0].clone(), lower)?;
                let from = self.integer(pos, a[1].clone(), lower)?;
                let to = self.integer(pos, a[2].clone(), lower)?;
                call(Func::Conv, vec![num, from, to], DataType::String, name)
            }
            "format_number" => {
                arity(2..=2)?;
                let a = bound()?;
                let name = named(&a);
                let x = self.numeric_arg(pos, a[0].clone(), lower)?;
                if !matches!(a[1].data_type, DataType::Int | DataType::Long) && !is_null_literal(&a[1]) {
                    return Err(unsupported(
                        args[1].pos,
                        format!("format_number's second argument {} ({})", a[1].name, a[1].data_type),
                        "a number of decimal places (INT); a DecimalFormat pattern is not supported",
                    ));
                }
                let d = coerce(a[1].clone(), DataType::Int);
                call(Func::FormatNumber, vec![x, d], DataType::String, name)
            }
            "hex" => {
                arity(1..=1)?;
                let x = self.bind(&args[0])?;
                if !matches!(x.data_type, DataType::Int | DataType::Long | DataType::String) && !is_null_literal(&x) {
                    return Err(ty_err(pos, format!("hex of {} ({})", x.data_type, x.name), "INT, BIGINT, STRING"));
                }
                let name = named(std::slice::from_ref(&x));
                call(Func::Hex, vec![x], DataType::String, name)
            }
            "repeat" => {
                arity(2..=2)?;
                let s = self.string(pos, self.bind(&args[0])?, lower)?;
                let k = self.count_arg(pos, self.bind(&args[1])?, lower)?;
                let a = vec![s, k];
                call(Func::Repeat, a.clone(), DataType::String, named(&a))
            }
            "translate" => {
                arity(3..=3)?;
                let a = bound()?.into_iter().map(|x| self.string(pos, x, lower)).collect::<Result<Vec<_>, _>>()?;
                call(Func::Translate, a.clone(), DataType::String, named(&a))
            }
            "btrim" => {
                arity(1..=2)?;
                let a = bound()?.into_iter().map(|x| self.string(pos, x, lower)).collect::<Result<Vec<_>, _>>()?;
                let name = named(&a);
                let mut a = a;
                if a.len() == 1 {
                    a.push(literal(Value::Str(Text::from(" ")), DataType::String, " ".into()));
                }
                call(Func::TrimChars { leading: true, trailing: true }, a, DataType::String, name)
            }
            // `position(sub, s[, pos])`: `locate`, named as called (POSITION(sub IN s) is lowered
            // to `locate`)
            "position" => {
                arity(2..=3)?;
                let sub = self.string(pos, self.bind(&args[0])?, lower)?;
                let s = self.string(pos, self.bind(&args[1])?, lower)?;
                let p = match args.get(2) {
                    Some(p) => self.count_arg(pos, self.bind(p)?, lower)?,
                    None => literal(Value::Int(1), DataType::Int, "1".into()),
                };
                let name = format!("position({}, {}, {})", sub.name, s.name, p.name);
                call(Func::Locate, vec![s, sub, p], DataType::Int, name)
            }
            "regexp_like" if !matches!(args.get(1).map(|a| &a.kind), Some(SyntaxKind::Literal(_)) | None) => {
                // a pattern computed per record ([`Func::RLikeDynamic`])
                arity(2..=2)?;
                let s = self.string(pos, self.bind(&args[0])?, lower)?;
                let p = self.string(args[1].pos, self.bind(&args[1])?, lower)?;
                let name = format!("REGEXP_LIKE({}, {})", s.name, p.name);
                call(Func::RLikeDynamic, vec![s, p], DataType::Boolean, name)
            }
            "regexp_like" | "regexp_count" | "regexp_substr" => {
                arity(2..=2)?;
                let s = self.string(pos, self.bind(&args[0])?, lower)?;
                let re = java_regex(args[1].pos, &lit_str(1)?)?;
                let p = self.bind(&args[1])?;
                let (func, ty, name) = match lower {
                    "regexp_like" => {
                        (Func::RLike(re), DataType::Boolean, format!("REGEXP_LIKE({}, {})", s.name, p.name))
                    }
                    "regexp_count" => (Func::RegexpCount(re), DataType::Int, named(&[s.clone(), p])),
                    _ => (Func::RegexpSubstr(re), DataType::String, named(&[s.clone(), p])),
                };
                call(func, vec![s], ty, name)
            }
            "isnull" | "isnotnull" => {
                arity(1..=1)?;
                let e = self.bind(&args[0])?;
                let negated = lower == "isnotnull";
                let name = format!("({} IS {}NULL)", e.name, if negated { "NOT " } else { "" });
                call(Func::IsNull { negated }, vec![e], DataType::Boolean, name)
            }
            "nvl2" => {
                arity(3..=3)?;
                let a = bound()?;
                let ty = common_type(pos, &a[1..], "nvl2")?;
                let name = named(&a);
                let present =
                    call(Func::IsNull { negated: true }, vec![a[0].clone()], DataType::Boolean, String::new());
                let node = Node::Case {
                    branches: vec![(present, coerce(a[1].clone(), ty))],
                    otherwise: Some(Box::new(coerce(a[2].clone(), ty))),
                };
                Typed { node, data_type: ty, name }
            }
            // Spark's `decode(x, search, result, ..., [default])`: a CASE of null-safe equalities
            "decode" => {
                if args.len() < 3 {
                    return Err(ty_err(pos, format!("decode with {} arguments", args.len()), "3 or more arguments"));
                }
                let a = bound()?;
                let name = named(&a);
                let mut results: Vec<Typed> =
                    a[1..].chunks(2).map(|c| if c.len() == 2 { c[1].clone() } else { c[0].clone() }).collect();
                if a.len() % 2 == 1 {
                    // no default: Spark's is a NULL of type STRING, which takes part in the
                    // result's type (`decode(n, 5, n)` is BIGINT, `decode(n, 5, 1.5)` DOUBLE)
                    let null = literal(Value::Null, DataType::String, "NULL".into());
                    results.push(Typed {
                        node: Node::Cast { input: Box::new(null.clone()), try_cast: false, implicit: true },
                        ..null
                    });
                }
                let ty = common_type(pos, &results, "decode results")?;
                let mut branches = Vec::new();
                for pair in a[1..].chunks_exact(2) {
                    let (l, r) = self.comparable(pos, a[0].clone(), pair[0].clone(), "decode")?;
                    let eq = call(Func::NullSafeEq, vec![l, r], DataType::Boolean, String::new());
                    branches.push((eq, coerce(pair[1].clone(), ty)));
                }
                let otherwise = (a.len() % 2 == 0).then(|| Box::new(coerce(a[a.len() - 1].clone(), ty)));
                Typed { node: Node::Case { branches, otherwise }, data_type: ty, name }
            }
            "equal_null" => {
                arity(2..=2)?;
                let a = bound()?;
                let name = named(&a);
                let (l, r) = self.comparable(pos, a[0].clone(), a[1].clone(), lower)?;
                call(Func::NullSafeEq, vec![l, r], DataType::Boolean, name)
            }
            "zeroifnull" => {
                arity(1..=1)?;
                let x = self.bind(&args[0])?;
                // (a STRING takes the common type with the INT 0, BIGINT, as Spark's nvl)
                if x.data_type != DataType::String {
                    self.numeric(pos, &x, lower)?;
                }
                let name = named(std::slice::from_ref(&x));
                // Spark's nvl(x, 0): the common type of x and the INT 0 (DECIMAL(p, s) widens to
                // hold an INT, a FLOAT becomes DOUBLE)
                let zero = literal(Value::Int(0), DataType::Int, "0".into());
                let ty = common_type(pos, &[x.clone(), zero.clone()], lower)?;
                let zero = coerce(zero, ty);
                Typed { node: Node::Coalesce(vec![coerce(x, ty), zero]), data_type: ty, name }
            }
            "negative" | "positive" => {
                arity(1..=1)?;
                let x = self.numeric_arg(pos, self.bind(&args[0])?, lower)?;
                // a NULL literal is a DOUBLE here, as Spark types it
                let x = if is_null_literal(&x) { coerce(x, DataType::Double) } else { x };
                if lower == "positive" {
                    Typed { name: format!("(+ {})", x.name), ..x }
                } else {
                    let name = named(std::slice::from_ref(&x));
                    call(Func::Negate, vec![x.clone()], x.data_type, name)
                }
            }
            "factorial" => {
                arity(1..=1)?;
                let x = self.integer(pos, self.bind(&args[0])?, lower)?;
                let name = named(std::slice::from_ref(&x));
                call(Func::Factorial, vec![x], DataType::Long, name)
            }
            // the processing time's date (`current_timestamp()` cast to DATE)
            "current_date" | "curdate" => {
                arity(0..=0)?;
                let now = call(Func::CurrentTimestamp, Vec::new(), DataType::Timestamp, String::new());
                Typed { name: format!("{lower}()"), ..coerce(now, DataType::Date) }
            }
            // `trunc(date, unit)`: the date truncated to its year, quarter, month or week
            "trunc" => {
                arity(2..=2)?;
                let d = self.date_arg(pos, self.bind(&args[0])?, lower)?;
                let unit = lit_str(1)?;
                let u = match unit.to_ascii_uppercase().as_str() {
                    "YEAR" | "YYYY" | "YY" => TruncUnit::Year,
                    "QUARTER" => TruncUnit::Quarter,
                    "MONTH" | "MM" | "MON" => TruncUnit::Month,
                    "WEEK" => TruncUnit::Week,
                    _ => {
                        return Err(ty_err(
                            args[1].pos,
                            format!("trunc unit '{unit}' (Spark gives NULL for it)"),
                            "YEAR, YYYY, YY, QUARTER, MONTH, MM, MON, WEEK",
                        ));
                    }
                };
                let name = format!("trunc({}, {unit})", d.name);
                let midnight = coerce(d, DataType::Timestamp);
                let t = call(Func::DateTrunc(u), vec![midnight], DataType::Timestamp, String::new());
                Typed { name, ..coerce(t, DataType::Date) }
            }
            // `from_utc_timestamp(ts, zone)` / `to_utc_timestamp(ts, zone)` (zones.rs)
            "from_utc_timestamp" | "to_utc_timestamp" => {
                arity(2..=2)?;
                let a = bound()?;
                let name = named(&a);
                let t = match a[0].data_type {
                    DataType::Timestamp | DataType::Date | DataType::String => {
                        coerce(a[0].clone(), DataType::Timestamp)
                    }
                    _ if is_null_literal(&a[0]) => coerce(a[0].clone(), DataType::Timestamp),
                    other => {
                        return Err(ty_err(
                            pos,
                            format!("{lower} of {other} ({})", a[0].name),
                            "TIMESTAMP, DATE, STRING",
                        ));
                    }
                };
                let z = self.string(pos, a[1].clone(), lower)?;
                let zone = match &args[1].kind {
                    SyntaxKind::Literal(Literal::String(text)) => Some(super::zones::Zone::parse(text).ok_or_else(|| {
                        ty_err(
                            args[1].pos,
                            format!("the time zone '{text}' (Spark's INVALID_TIMEZONE)"),
                            "a region id such as 'Europe/Paris' (case matters), an offset such as '+08:00' or 'GMT+1', 'UTC', or one of Java's short ids ('PST', 'EST', 'CST', ...)",
                        )
                    })?),
                    _ => None,
                };
                call(
                    Func::ShiftZone { to_utc: lower == "to_utc_timestamp", zone },
                    vec![t, z],
                    DataType::Timestamp,
                    name,
                )
            }
            // `next_day(d, 'Mon')`: the first date after `d` on that day of the week
            "next_day" => {
                arity(2..=2)?;
                let d = self.date_arg(pos, self.bind(&args[0])?, lower)?;
                let day = lit_str(1)?;
                let weekday = match day.to_ascii_uppercase().as_str() {
                    "MO" | "MON" | "MONDAY" => 0,
                    "TU" | "TUE" | "TUESDAY" => 1,
                    "WE" | "WED" | "WEDNESDAY" => 2,
                    "TH" | "THU" | "THURSDAY" => 3,
                    "FR" | "FRI" | "FRIDAY" => 4,
                    "SA" | "SAT" | "SATURDAY" => 5,
                    "SU" | "SUN" | "SUNDAY" => 6,
                    _ => {
                        return Err(ty_err(
                            args[1].pos,
                            format!("next_day's day of the week '{day}' (Spark's ILLEGAL_DAY_OF_WEEK)"),
                            "MO, MON, MONDAY, TU, TUE, TUESDAY, ... SU, SUN, SUNDAY",
                        ));
                    }
                };
                let name = format!("next_day({}, {day})", d.name);
                call(Func::NextDay(weekday), vec![d], DataType::Date, name)
            }
            // `timestampadd(unit, n, ts)` / `timestampdiff(unit, start, end)`, the unit a keyword
            "timestampadd" | "timestampdiff" => {
                arity(3..=3)?;
                let unit = match &args[0].kind {
                    SyntaxKind::Column(parts) if parts.len() == 1 => parts[0].to_ascii_uppercase(),
                    SyntaxKind::Literal(Literal::String(u)) => u.to_ascii_uppercase(),
                    _ => String::new(),
                };
                let step = match unit.as_str() {
                    "MICROSECOND" => TimeStep::Micros(1),
                    "MILLISECOND" => TimeStep::Micros(1_000),
                    "SECOND" => TimeStep::Micros(1_000_000),
                    "MINUTE" => TimeStep::Micros(60_000_000),
                    "HOUR" => TimeStep::Micros(3_600_000_000),
                    "DAY" | "DAYOFYEAR" => TimeStep::Micros(86_400_000_000),
                    "WEEK" => TimeStep::Micros(7 * 86_400_000_000),
                    "MONTH" => TimeStep::Months(1),
                    "QUARTER" => TimeStep::Months(3),
                    "YEAR" => TimeStep::Months(12),
                    _ => {
                        return Err(ty_err(
                            args[0].pos,
                            format!("{lower} unit {unit}"),
                            "YEAR, QUARTER, MONTH, WEEK, DAY, DAYOFYEAR, HOUR, MINUTE, SECOND, MILLISECOND, MICROSECOND",
                        ));
                    }
                };
                let a: Vec<Typed> = args[1..].iter().map(|x| self.bind(x)).collect::<Result<_, _>>()?;
                let name = format!("{lower}({unit}, {})", names(&a));
                if lower == "timestampadd" {
                    let k = match a[0].data_type {
                        DataType::Int | DataType::Long => coerce(a[0].clone(), DataType::Long),
                        _ if is_null_literal(&a[0]) => coerce(a[0].clone(), DataType::Long),
                        other => {
                            return Err(ty_err(pos, format!("timestampadd of {other} ({})", a[0].name), "INT, BIGINT"));
                        }
                    };
                    let t = self.timestamp_arg(pos, a[1].clone(), lower)?;
                    call(Func::TimestampAdd(step), vec![k, t], DataType::Timestamp, name)
                } else {
                    let start = self.timestamp_arg(pos, a[0].clone(), lower)?;
                    let end = self.timestamp_arg(pos, a[1].clone(), lower)?;
                    call(Func::TimestampDiff(step), vec![start, end], DataType::Long, name)
                }
            }
            "isnan" | "nanvl" => {
                arity(if lower == "isnan" { 1..=1 } else { 2..=2 })?;
                let a = bound()?.into_iter().map(|x| self.numeric_arg(pos, x, lower)).collect::<Result<Vec<_>, _>>()?;
                let name = named(&a);
                // FLOAT when every argument is (Spark's common type), else DOUBLE
                let ty =
                    if a.iter().all(|x| x.data_type == DataType::Float) { DataType::Float } else { DataType::Double };
                let a: Vec<Typed> = a.into_iter().map(|x| coerce(x, ty)).collect();
                if lower == "isnan" {
                    call(Func::IsNan, a, DataType::Boolean, name)
                } else {
                    call(Func::Nanvl, a, ty, name)
                }
            }
            "pi" | "e" => {
                arity(0..=0)?;
                let v = if lower == "pi" { std::f64::consts::PI } else { std::f64::consts::E };
                literal(Value::Double(v), DataType::Double, format!("{}()", lower.to_ascii_uppercase()))
            }
            "cbrt" | "sin" | "cos" | "tan" | "cot" | "asin" | "acos" | "atan" | "sinh" | "cosh" | "tanh"
            | "degrees" | "radians" | "log1p" | "expm1" | "rint" | "asinh" | "acosh" | "atanh" | "sec" | "csc" => {
                arity(1..=1)?;
                let x = self.numeric_arg(pos, self.bind(&args[0])?, lower)?;
                let m = match lower {
                    "cbrt" => Math1::Cbrt,
                    "sin" => Math1::Sin,
                    "cos" => Math1::Cos,
                    "tan" => Math1::Tan,
                    "cot" => Math1::Cot,
                    "asin" => Math1::Asin,
                    "acos" => Math1::Acos,
                    "atan" => Math1::Atan,
                    "sinh" => Math1::Sinh,
                    "cosh" => Math1::Cosh,
                    "tanh" => Math1::Tanh,
                    "degrees" => Math1::Degrees,
                    "radians" => Math1::Radians,
                    "log1p" => Math1::Log1p,
                    "expm1" => Math1::Expm1,
                    "asinh" => Math1::Asinh,
                    "acosh" => Math1::Acosh,
                    "atanh" => Math1::Atanh,
                    "sec" => Math1::Sec,
                    "csc" => Math1::Csc,
                    _ => Math1::Rint,
                };
                // Spark names these upper case, `rint` as written
                let fname = if lower == "rint" { "rint".to_string() } else { lower.to_ascii_uppercase() };
                let name = format!("{fname}({})", x.name);
                call(Func::Math1(m), vec![coerce(x, DataType::Double)], DataType::Double, name)
            }
            "atan2" | "hypot" => {
                arity(2..=2)?;
                let a = bound()?.into_iter().map(|x| self.numeric_arg(pos, x, lower)).collect::<Result<Vec<_>, _>>()?;
                let name = format!("{}({})", lower.to_ascii_uppercase(), names(&a));
                let m = if lower == "atan2" { Math2::Atan2 } else { Math2::Hypot };
                let a = a.into_iter().map(|x| coerce(x, DataType::Double)).collect();
                call(Func::Math2(m), a, DataType::Double, name)
            }
            "shiftleft" | "shiftright" | "~" => {
                arity(if lower == "~" { 1..=1 } else { 2..=2 })?;
                let a = bound()?;
                let (op, name) = match lower {
                    "~" => (BitOp::Not, format!("~{}", a[0].name)),
                    "shiftleft" => (BitOp::ShiftLeft, named(&a)),
                    _ => (BitOp::ShiftRight, named(&a)),
                };
                self.bitwise(pos, op, a, name)?
            }
            "dayofyear" | "weekofyear" | "quarter" | "weekday" => {
                arity(1..=1)?;
                let t = self.date_or_time(pos, self.bind(&args[0])?, lower, DataType::Date)?;
                let name = named(std::slice::from_ref(&t));
                let f = match lower {
                    "dayofyear" => TimeField::DayOfYear,
                    "weekofyear" => TimeField::WeekOfYear,
                    "weekday" => TimeField::Weekday,
                    _ => TimeField::Quarter,
                };
                call(Func::TimeField(f), vec![coerce(t, DataType::Timestamp)], DataType::Int, name)
            }
            // `extract(field FROM x)` (lowered from the syntax) and `date_part('field', x)`
            "extract" | "date_part" => {
                arity(2..=2)?;
                let field = lit_str(0)?;
                let Some((f, ty)) = date_part(&field) else {
                    return Err(ty_err(
                        args[0].pos,
                        format!("{lower} field {field}"),
                        "YEAR, QUARTER, MONTH, WEEK, DAY, DAYOFWEEK, DAYOFWEEK_ISO, DOY, HOUR, MINUTE, SECOND",
                    ));
                };
                let time_field = matches!(f, TimeField::Hour | TimeField::Minute | TimeField::Second);
                let string_as = if time_field { DataType::Timestamp } else { DataType::Date };
                let t = self.date_or_time(pos, self.bind(&args[1])?, lower, string_as)?;
                let name = if lower == "extract" {
                    format!("extract({field} FROM {})", t.name)
                } else {
                    format!("date_part({field}, {})", t.name)
                };
                let t = coerce(t, DataType::Timestamp);
                // SECOND: with its fraction, DECIMAL(8, 6), as Spark's SecondWithFraction
                let func = if f == TimeField::Second { Func::SecondWithFraction } else { Func::TimeField(f) };
                call(func, vec![t], ty, name)
            }
            "date_add" | "dateadd" | "date_sub" => {
                arity(2..=2)?;
                let a = bound()?;
                let mut t = self.date_add(pos, lower == "date_sub", a[0].clone(), a[1].clone())?;
                if lower == "date_sub" {
                    t.name = named(&a);
                }
                t
            }
            "datediff" | "date_diff" => {
                arity(2..=2)?;
                let a = bound()?;
                let name = named(&a);
                let end = self.date_arg(pos, a[0].clone(), lower)?;
                let start = self.date_arg(pos, a[1].clone(), lower)?;
                call(Func::DateDiff, vec![end, start], DataType::Int, name)
            }
            "add_months" => {
                arity(2..=2)?;
                let a = bound()?;
                let name = named(&a);
                let d = self.date_arg(pos, a[0].clone(), lower)?;
                let k = self.integer(pos, a[1].clone(), lower)?;
                call(Func::AddMonths, vec![d, k], DataType::Date, name)
            }
            "last_day" | "unix_date" => {
                arity(1..=1)?;
                let a = bound()?;
                let name = named(&a);
                if lower == "unix_date" && a[0].data_type != DataType::Date && !is_null_literal(&a[0]) {
                    return Err(ty_err(pos, format!("unix_date of {} ({})", a[0].data_type, a[0].name), "DATE"));
                }
                let d = self.date_arg(pos, a[0].clone(), lower)?;
                let (func, ty) =
                    if lower == "last_day" { (Func::LastDay, DataType::Date) } else { (Func::UnixDate, DataType::Int) };
                call(func, vec![d], ty, name)
            }
            "make_date" => {
                arity(3..=3)?;
                let a = bound()?;
                let name = named(&a);
                let a = a.into_iter().map(|x| self.integer(pos, x, lower)).collect::<Result<Vec<_>, _>>()?;
                call(Func::MakeDate, a, DataType::Date, name)
            }
            "date_from_unix_date" => {
                arity(1..=1)?;
                let x = self.integer(pos, self.bind(&args[0])?, lower)?;
                let name = named(std::slice::from_ref(&x));
                call(Func::DateFromUnixDate, vec![x], DataType::Date, name)
            }
            // the cast functions: `int(x)` is CAST(x AS INT), named as its argument
            "string" | "int" | "bigint" | "double" | "float" | "boolean" | "date" | "timestamp" => {
                arity(1..=1)?;
                let x = self.bind(&args[0])?;
                let to = super::query::cast_function(lower).unwrap_or(DataType::Timestamp);
                let name = x.name.clone();
                Typed { name, ..self.cast(pos, x, to, false)? }
            }
            _ => return Ok(None),
        };
        Ok(Some(t))
    }

    /// `TRIM([side] [chars] FROM s)`: without characters `trim` / `ltrim` / `rtrim` (and named
    /// so, as Spark), with them `TRIM(BOTH chars FROM s)` and its like.
    pub(super) fn trim(
        &self,
        pos: Pos,
        side: TrimSide,
        expr: &Syntax,
        chars: Option<&Syntax>,
    ) -> Result<Typed, ExprError> {
        let s = self.string(pos, self.bind(expr)?, "TRIM")?;
        let (leading, trailing, word, plain) = match side {
            TrimSide::Both => (true, true, "BOTH", Func::Trim),
            TrimSide::Leading => (true, false, "LEADING", Func::LTrim),
            TrimSide::Trailing => (false, true, "TRAILING", Func::RTrim),
        };
        let Some(chars) = chars else {
            let fname = match side {
                TrimSide::Both => "trim",
                TrimSide::Leading => "ltrim",
                TrimSide::Trailing => "rtrim",
            };
            let name = format!("{fname}({})", s.name);
            return Ok(call(plain, vec![s], DataType::String, name));
        };
        let c = self.string(pos, self.bind(chars)?, "TRIM")?;
        let name = format!("TRIM({word} {} FROM {})", c.name, s.name);
        Ok(call(Func::TrimChars { leading, trailing }, vec![s, c], DataType::String, name))
    }

    /// `d + n` / `date_add(d, n)` (`sub`: `d - n` / `date_sub`), named `date_add(d, n)` /
    /// `date_sub(d, n)` as Spark names both spellings.
    pub(super) fn date_add(&self, pos: Pos, sub: bool, d: Typed, k: Typed) -> Result<Typed, ExprError> {
        let what = if sub { "date_sub" } else { "date_add" };
        let name = format!("{what}({}, {})", d.name, k.name);
        let d = self.date_arg(pos, d, what)?;
        if k.data_type != DataType::Int && !is_null_literal(&k) {
            return Err(ty_err(pos, format!("{what} of {} days ({})", k.data_type, k.name), "INT"));
        }
        let k = coerce(k, DataType::Int);
        Ok(call(Func::DateAdd { sub }, vec![d, k], DataType::Date, name))
    }

    /// `&`, `|`, `^` (two operands of one integral type, widened), `~` (one), `shiftleft` /
    /// `shiftright` (an INT or BIGINT and an INT count).
    pub(super) fn bitwise(&self, pos: Pos, op: BitOp, a: Vec<Typed>, name: String) -> Result<Typed, ExprError> {
        let integral = |t: &Typed| matches!(t.data_type, DataType::Int | DataType::Long) || is_null_literal(t);
        if let Some(bad) = a.iter().find(|t| !integral(t)) {
            return Err(ty_err(pos, format!("{name} of {} ({})", bad.data_type, bad.name), "INT, BIGINT"));
        }
        let (ty, a) = match op {
            BitOp::ShiftLeft | BitOp::ShiftRight => {
                let ty = if a[0].data_type == DataType::Long { DataType::Long } else { DataType::Int };
                let count = self.integer(pos, a[1].clone(), "shift")?;
                (ty, vec![coerce(a[0].clone(), ty), count])
            }
            _ => {
                let ty = if a.iter().any(|t| t.data_type == DataType::Long) { DataType::Long } else { DataType::Int };
                (ty, a.into_iter().map(|t| coerce(t, ty)).collect())
            }
        };
        Ok(call(Func::Bit(op), a, ty, name))
    }

    /// A DATE argument: a DATE, or a TIMESTAMP / STRING cast to DATE (as Spark casts them).
    fn date_arg(&self, pos: Pos, t: Typed, what: &str) -> Result<Typed, ExprError> {
        if !matches!(t.data_type, DataType::Date | DataType::Timestamp | DataType::String) && !is_null_literal(&t) {
            return Err(ty_err(pos, format!("{what} of {} ({})", t.data_type, t.name), "DATE, TIMESTAMP, STRING"));
        }
        Ok(coerce(t, DataType::Date))
    }

    /// A TIMESTAMP argument: a TIMESTAMP, a DATE's midnight, or a STRING cast to TIMESTAMP.
    fn timestamp_arg(&self, pos: Pos, t: Typed, what: &str) -> Result<Typed, ExprError> {
        self.date_or_time(pos, t, what, DataType::Timestamp).map(|t| coerce(t, DataType::Timestamp))
    }

    /// A TIMESTAMP or DATE argument of a date part; a STRING is cast to `string_as` implicitly,
    /// as Spark casts it: to DATE for a date field (`year`, `month`, `dayofyear`, ... take a
    /// DATE in Spark), to TIMESTAMP for a time field (`hour`, `minute`, `second`) and for the
    /// functions of a TIMESTAMP (`date_trunc`, `date_format`, `timestampadd`). A string that
    /// is no date fails as `CAST` fails (CAST_INVALID_INPUT).
    pub(super) fn date_or_time(&self, pos: Pos, t: Typed, what: &str, string_as: DataType) -> Result<Typed, ExprError> {
        match t.data_type {
            DataType::Date | DataType::Timestamp => Ok(t),
            DataType::String => Ok(coerce(t, string_as)),
            _ if is_null_literal(&t) => Ok(t),
            other => Err(ty_err(pos, format!("{what} of {other} ({})", t.name), "TIMESTAMP, DATE, STRING")),
        }
    }
}
