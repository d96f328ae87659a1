//! Function calls of [`bind`](super::bind): arity, argument types, Spark's names.

use crate::value::Text;
use std::sync::Arc;

use regex::Regex;

use super::bind::{
    Binder, call, case_conversion, coerce, common_type, is_null_literal, literal, names, ty_err, unsupported,
};
use super::functions::{ArithOp, CmpOp, DateFormat, Func, Math1, TimeField, TruncUnit};
use super::text::{FormatPart, PATTERN_LETTERS, parse_format};
use super::{ExprError, Literal, Node, Pos, Syntax, SyntaxKind, Typed};
use crate::decimal::Rounding;
use crate::schema::DataType;
use crate::value::Value;

impl Binder<'_> {
    pub(super) fn call(&self, pos: Pos, fname: &str, args: &[Syntax]) -> Result<Typed, ExprError> {
        let lower = fname.to_ascii_lowercase();
        let arity = |n: std::ops::RangeInclusive<usize>| check_arity(pos, &lower, args, n);
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
        let lit_str = |i: usize| string_literal_arg(&lower, args, i);
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
                let a = vec![self.numeric_arg(pos, self.bind(&args[0])?, "abs")?];
                Ok(call(Func::Abs, a.clone(), a[0].data_type, named("abs", &a)))
            }
            "mod" | "pmod" | "try_add" | "try_subtract" | "try_multiply" | "try_mod" => {
                arity(2..=2)?;
                let a = bound(self)?;
                let (op, try_) = match lower.as_str() {
                    "mod" => (ArithOp::Rem, false),
                    "pmod" => (ArithOp::Pmod, false),
                    "try_add" => (ArithOp::Add, true),
                    "try_subtract" => (ArithOp::Sub, true),
                    "try_mod" => (ArithOp::Rem, true),
                    _ => (ArithOp::Mul, true),
                };
                let name = named(&lower, &a);
                let t = self.arith(pos, op, try_, a[0].clone(), a[1].clone(), name)?;
                Ok(if try_ { tolerant_operands(t) } else { t })
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
                self.divide(pos, true, a[0].clone(), a[1].clone(), name).map(tolerant_operands)
            }
            "round" | "bround" => {
                arity(1..=2)?;
                let x = self.numeric_arg(pos, self.bind(&args[0])?, &lower)?;
                let scale = if args.len() == 2 { lit_int(1)? } else { 0 };
                let name = format!("{lower}({}, {scale})", x.name);
                if x.data_type.decimal().is_some() {
                    let mode = if lower == "bround" { Rounding::HalfEven } else { Rounding::HalfUp };
                    return Ok(self.decimal_round(x, Some(scale), mode, name));
                }
                let ty = x.data_type;
                Ok(call(Func::Round { scale: scale as i32, half_even: lower == "bround" }, vec![x], ty, name))
            }
            "floor" | "ceil" | "ceiling" => {
                arity(1..=1)?;
                let x = self.numeric_arg(pos, self.bind(&args[0])?, &lower)?;
                if x.data_type.decimal().is_some() {
                    let name = format!("{}({})", math_name(&lower), x.name);
                    let mode = if lower == "floor" { Rounding::Floor } else { Rounding::Ceil };
                    return Ok(self.decimal_round(x, None, mode, name));
                }
                let x = match x.data_type {
                    DataType::Int | DataType::Long => coerce(x, DataType::Long),
                    _ => coerce(x, DataType::Double),
                };
                let name = format!("{}({})", math_name(&lower), x.name);
                Ok(call(Func::FloorCeil { ceil: lower != "floor" }, vec![x], DataType::Long, name))
            }
            "sqrt" | "exp" | "ln" | "log10" | "log2" | "sign" | "signum" => {
                arity(1..=1)?;
                let x = self.numeric_arg(pos, self.bind(&args[0])?, &lower)?;
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
            // `log(x)`: the natural logarithm, named `LOG(E(), x)` as Spark names it
            "log" if args.len() == 1 => {
                let x = self.numeric_arg(pos, self.bind(&args[0])?, "log")?;
                let name = format!("LOG(E(), {})", x.name);
                Ok(call(Func::Math1(Math1::Ln), vec![coerce(x, DataType::Double)], DataType::Double, name))
            }
            "log" | "pow" | "power" => {
                arity(2..=2)?;
                let a = bound(self)?
                    .into_iter()
                    .map(|x| self.numeric_arg(pos, x, &lower))
                    .collect::<Result<Vec<_>, _>>()?;
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
            "lower" | "upper" | "length" | "char_length" | "character_length" | "trim" | "ltrim" | "rtrim"
            | "initcap" | "reverse" | "md5" => {
                arity(1..=1)?;
                let x = self.bind(&args[0])?;
                let a =
                    vec![if lower == "md5" { self.string_only(pos, x, &lower)? } else { self.string(pos, x, &lower)? }];
                let (func, ty) = match lower.as_str() {
                    "lower" => (Func::Lower, DataType::String),
                    "upper" => (Func::Upper, DataType::String),
                    "length" | "char_length" | "character_length" => (Func::Length, DataType::Int),
                    "trim" => (Func::Trim, DataType::String),
                    "ltrim" => (Func::LTrim, DataType::String),
                    "rtrim" => (Func::RTrim, DataType::String),
                    "initcap" => (Func::Initcap, DataType::String),
                    "reverse" => (Func::Reverse, DataType::String),
                    _ => (Func::Md5, DataType::String),
                };
                let name = named(&lower, &a);
                if let Func::Lower | Func::Upper = func {
                    return Ok(case_conversion(func, a, name));
                }
                Ok(call(func, a, ty, name))
            }
            "substring" | "substr" | "left" => {
                arity(if lower == "left" { 2..=2 } else { 2..=3 })?;
                let s = self.string(pos, self.bind(&args[0])?, &lower)?;
                let p = self.count_arg(pos, self.bind(&args[1])?, &lower)?;
                let (a, name) = if lower == "left" {
                    let name = format!("left({}, {})", s.name, p.name);
                    (vec![s, literal(Value::Int(1), DataType::Int, "1".into()), p], name)
                } else {
                    let l = match args.get(2) {
                        Some(l) => self.count_arg(pos, self.bind(l)?, &lower)?,
                        None => literal(Value::Int(i32::MAX), DataType::Int, i32::MAX.to_string()),
                    };
                    let name = format!("{lower}({}, {}, {})", s.name, p.name, l.name);
                    (vec![s, p, l], name)
                };
                Ok(call(Func::Substring, a, DataType::String, name))
            }
            "concat" => {
                arity(1..=64)?;
                let a: Vec<Typed> = bound(self)?.into_iter().map(|x| coerce(x, DataType::String)).collect();
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
                let n = self.count_arg(pos, self.bind(&args[1])?, &lower)?;
                let p = match args.get(2) {
                    Some(p) => self.string(pos, self.bind(p)?, &lower)?,
                    None => literal(Value::Str(Text::from(" ")), DataType::String, " ".into()),
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
                    a.push(literal(Value::Str(Text::from("")), DataType::String, String::new()));
                }
                let name = named("replace", &a);
                Ok(call(Func::Replace, a, DataType::String, name))
            }
            "locate" if args.len() == 3 => {
                let sub = self.string(pos, self.bind(&args[0])?, &lower)?;
                let s = self.string(pos, self.bind(&args[1])?, &lower)?;
                let p = self.count_arg(pos, self.bind(&args[2])?, &lower)?;
                let name = format!("locate({}, {}, {})", sub.name, s.name, p.name);
                Ok(call(Func::Locate, vec![s, sub, p], DataType::Int, name))
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
                let n = self.count_arg(pos, self.bind(&args[1])?, "right")?;
                let a = vec![s, n];
                let name = named("right", &a);
                Ok(call(Func::Right, a, DataType::String, name))
            }
            "split_part" => {
                arity(3..=3)?;
                let s = self.string(pos, self.bind(&args[0])?, "split_part")?;
                let d = self.string(pos, self.bind(&args[1])?, "split_part")?;
                let n = self.count_arg(pos, self.bind(&args[2])?, "split_part")?;
                let a = vec![s, d, n];
                let name = named("split_part", &a);
                Ok(call(Func::SplitPart, a, DataType::String, name))
            }
            "regexp_replace" => {
                arity(3..=3)?;
                let s = self.string(pos, self.bind(&args[0])?, &lower)?;
                let re = java_regex(args[1].pos, &lit_str(1)?)?;
                let rep = lit_str(2)?;
                let template = match rep.contains(['$', '\\']) {
                    true => Some(java_replacement(&rep, &re).map_err(|why| {
                        ty_err(args[2].pos, format!("regexp_replace's replacement '{rep}' ({why})"), "a replacement as Java's Matcher.replaceAll reads it: $n or ${name} for a group, \\$ and \\\\ for the characters")
                    })?),
                    false => None,
                };
                // Spark fills in the start position: `regexp_replace(s, re, rep, 1)`
                let a = vec![s, self.bind(&args[1])?, self.bind(&args[2])?];
                let name = format!("{lower}({}, 1)", names(&a));
                Ok(call(Func::RegexpReplace(re, template), a, DataType::String, name))
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
                let s = self.string_only(pos, self.bind(&args[0])?, "sha2")?;
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
                // a DATE is its midnight (Spark casts it to TIMESTAMP; unix_* take TIMESTAMP only)
                let t = if lower.starts_with("unix_") {
                    if t.data_type != DataType::Timestamp && !is_null_literal(&t) {
                        return Err(ty_err(pos, format!("{lower} of {} ({})", t.data_type, t.name), "TIMESTAMP"));
                    }
                    t
                } else {
                    let time_field = matches!(lower.as_str(), "hour" | "minute" | "second");
                    let string_as = if time_field { DataType::Timestamp } else { DataType::Date };
                    self.date_or_time(pos, t, &lower, string_as)?
                };
                let name = named(&lower, std::slice::from_ref(&t));
                let t = coerce(t, DataType::Timestamp);
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
                let name = named(&lower, std::slice::from_ref(&x));
                let per = match lower.as_str() {
                    "timestamp_seconds" => 1_000_000,
                    "timestamp_millis" => 1_000,
                    _ => 1,
                };
                // Spark's `SecondsToTimestamp` takes any number; `MillisToTimestamp` and
                // `MicrosToTimestamp` integers only
                let seconds = per == 1_000_000;
                let (func, x) = match x.data_type {
                    _ if is_null_literal(&x) => (Func::FromUnix(per), coerce(x, DataType::Long)),
                    DataType::Int | DataType::Long => (Func::FromUnix(per), coerce(x, DataType::Long)),
                    DataType::Decimal { .. } if seconds => (Func::FromUnixDecimal, x),
                    DataType::Float | DataType::Double if seconds => {
                        (Func::FromUnixDouble, coerce(x, DataType::Double))
                    }
                    _ => {
                        let allowed = if seconds { "INT, BIGINT, DECIMAL, FLOAT, DOUBLE" } else { "INT, BIGINT" };
                        return Err(ty_err(pos, format!("{lower} of {} ({})", x.data_type, x.name), allowed));
                    }
                };
                Ok(call(func, vec![x], DataType::Timestamp, name))
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
                let t = self.date_or_time(pos, self.bind(&args[1])?, "date_trunc", DataType::Timestamp)?;
                let name = format!("date_trunc({unit}, {})", t.name);
                let t = coerce(t, DataType::Timestamp);
                Ok(call(Func::DateTrunc(u), vec![t], DataType::Timestamp, name))
            }
            "date_format" => {
                arity(2..=2)?;
                let t = self.date_or_time(pos, self.bind(&args[0])?, "date_format", DataType::Timestamp)?;
                let p = lit_str(1)?;
                let parts = datetime_pattern(args[1].pos, &p, "date_format", false)?;
                let name = format!("date_format({}, {p})", t.name);
                let t = coerce(t, DataType::Timestamp);
                Ok(call(Func::DateFormat(DateFormat(parts.into())), vec![t], DataType::String, name))
            }
            "struct" | "named_struct" | "to_json" | "get_json_object" | "window_time" => {
                self.struct_call(pos, &lower, args)
            }
            "to_date" | "try_to_date" | "to_timestamp" | "try_to_timestamp" => {
                arity(1..=2)?;
                let x = self.bind(&args[0])?;
                let x = match x.data_type {
                    DataType::String | DataType::Timestamp | DataType::Date => x,
                    _ if is_null_literal(&x) => coerce(x, DataType::String),
                    other => {
                        return Err(ty_err(pos, format!("{lower} of {other} ({})", x.name), "STRING, TIMESTAMP, DATE"));
                    }
                };
                let pattern = match args.get(1) {
                    None => None,
                    Some(_) => {
                        let p = lit_str(1)?;
                        let parts = datetime_pattern(args[1].pos, &p, &lower, true)?;
                        Some(DateFormat(parts.into()))
                    }
                };
                let mut shown = vec![x.name.clone()];
                if let Some(SyntaxKind::Literal(Literal::String(p))) = args.get(1).map(|a| &a.kind) {
                    shown.push(p.clone());
                }
                let name = format!("{lower}({})", shown.join(", "));
                let (func, ty) = if lower.ends_with("to_date") {
                    (Func::ToDate { pattern, try_: lower == "try_to_date" }, DataType::Date)
                } else {
                    (Func::ToTimestamp { pattern, try_: lower == "try_to_timestamp" }, DataType::Timestamp)
                };
                Ok(call(func, vec![x], ty, name))
            }
            // Spark's FromUnixTime: the seconds as a TIMESTAMP formatted in the session time
            // zone (UTC), pattern `yyyy-MM-dd HH:mm:ss` by default (and named with it)
            "from_unixtime" => {
                arity(1..=2)?;
                let x = self.bind(&args[0])?;
                // Spark casts its argument to BIGINT implicitly (a DOUBLE truncates, a STRING is
                // parsed: CAST_INVALID_INPUT where it is not a number)
                let castable = x.data_type.is_numeric() || x.data_type == DataType::String;
                if !castable && !is_null_literal(&x) {
                    return Err(ty_err(
                        pos,
                        format!("from_unixtime of {} ({})", x.data_type, x.name),
                        "a number of seconds: INT, BIGINT, DOUBLE, FLOAT, DECIMAL, or a STRING holding one",
                    ));
                }
                let p = if args.len() == 2 { lit_str(1)? } else { DEFAULT_UNIX_PATTERN.to_string() };
                let parts = datetime_pattern(args.get(1).map_or(pos, |a| a.pos), &p, "from_unixtime", false)?;
                let name = format!("from_unixtime({}, {p})", x.name);
                let t =
                    call(Func::FromUnix(1_000_000), vec![coerce(x, DataType::Long)], DataType::Timestamp, name.clone());
                Ok(call(Func::DateFormat(DateFormat(parts.into())), vec![t], DataType::String, name))
            }
            // Spark's UnixTimestamp: seconds since the epoch (truncated toward zero) of a
            // TIMESTAMP, a DATE's midnight or a STRING parsed with the pattern (`yyyy-MM-dd
            // HH:mm:ss` by default; CANNOT_PARSE_TIMESTAMP under ANSI where it does not parse);
            // `unix_timestamp()` is the current time
            "unix_timestamp" | "to_unix_timestamp" => {
                if args.is_empty() {
                    return Err(unsupported(
                        pos,
                        "unix_timestamp() (the processing time is not yet reachable from an expression)".to_string(),
                        "unix_timestamp(ts TIMESTAMP | d DATE | s STRING[, pattern])",
                    ));
                }
                arity(1..=2)?;
                let x = self.bind(&args[0])?;
                let p = if args.len() == 2 { lit_str(1)? } else { DEFAULT_UNIX_PATTERN.to_string() };
                let name = format!("{lower}({}, {p})", x.name);
                let t = match x.data_type {
                    DataType::Timestamp | DataType::Date => coerce(x, DataType::Timestamp),
                    DataType::String => {
                        let parts = datetime_pattern(args.get(1).map_or(pos, |a| a.pos), &p, &lower, true)?;
                        let pattern = Some(DateFormat(parts.into()));
                        call(Func::ToTimestamp { pattern, try_: false }, vec![x], DataType::Timestamp, name.clone())
                    }
                    _ if is_null_literal(&x) => coerce(x, DataType::Timestamp),
                    other => {
                        return Err(ty_err(
                            pos,
                            format!("unix_timestamp of {other} ({})", x.name),
                            "TIMESTAMP, DATE, STRING",
                        ));
                    }
                };
                Ok(call(Func::UnixTimestamp, vec![t], DataType::Long, name))
            }
            "split" | "explode" | "explode_outer" | "posexplode" | "inline" | "array" | "map" | "sequence" => {
                let what = if lower == "split" || lower == "array" || lower == "sequence" {
                    format!("{lower} (it returns an ARRAY, and Eddy has no ARRAY type)")
                } else if lower == "map" {
                    "map (it returns a MAP, and Eddy has no MAP type)".to_string()
                } else {
                    format!("{lower} (it generates rows from an ARRAY or a MAP, and Eddy has no ARRAY or MAP type)")
                };
                Err(unsupported(pos, what, "split_part(s, delimiter, n) for the n-th field of a delimited string"))
            }
            // Spark names both by the name as called: `current_timestamp()`, `now()`
            "current_timestamp" | "now" => {
                arity(0..=0)?;
                Ok(call(Func::CurrentTimestamp, Vec::new(), DataType::Timestamp, format!("{lower}()")))
            }
            "hash" => {
                arity(1..=64)?;
                let a = bound(self)?;
                // Spark hashes a DECIMAL of precision <= 18 as its unscaled BIGINT (done here), a
                // wider one by the bytes of its unscaled BigInteger (not reproduced)
                if let Some(i) = a.iter().position(|x| x.data_type.decimal().is_some_and(|(p, _)| p > 18)) {
                    let wide = &a[i];
                    return Err(unsupported(
                        args[i].pos,
                        format!("hash of {} ({})", wide.data_type, wide.name),
                        "hash of DECIMAL(p, s) with p <= 18, and of every other scalar type",
                    ));
                }
                let name = named("hash", &a);
                Ok(call(Func::Hash, a, DataType::Int, name))
            }
            _ if let Some(t) = self.more_call(pos, &lower, args)? => Ok(t),
            _ if crate::spec::AGGREGATES.contains(&lower.as_str()) || lower == "count_if" => Err(unsupported(
                pos,
                format!("aggregate function {fname} in a row expression"),
                "functions of one record's values (aggregates go in a query's SELECT list or HAVING, or in [query] measures)",
            )),
            _ if super::is_unsupported_aggregate(&lower) => Err(super::unsupported_aggregate_error(pos, &lower)),
            _ => match super::udf::current_scalar(&lower) {
                Some(udf) => self.user_call(pos, udf, args),
                None if super::udf::current_aggregate(&lower).is_some() => Err(unsupported(
                    pos,
                    format!("aggregate function {fname} in a row expression"),
                    "functions of one record's values (aggregates go in a query's SELECT list or HAVING, or in [query] measures)",
                )),
                None => Err(unsupported(pos, format!("function {fname}"), &super::udf::functions_allowed())),
            },
        }
    }
}

/// `Ok` when a call of `lower` at `pos` has a number of arguments in `n`; else the error that
/// says how many it takes.
pub(super) fn check_arity(
    pos: Pos,
    lower: &str,
    args: &[Syntax],
    n: std::ops::RangeInclusive<usize>,
) -> Result<(), ExprError> {
    if n.contains(&args.len()) {
        return Ok(());
    }
    let count = |k: usize| match k {
        0 => "no arguments".to_string(),
        1 => "1 argument".to_string(),
        k => format!("{k} arguments"),
    };
    let allowed = match (*n.start(), *n.end()) {
        (a, b) if a == b => count(a),
        (a, b) => format!("{a} to {b} arguments"),
    };
    Err(ty_err(pos, format!("{lower} with {}", count(args.len())), &allowed))
}

/// The text of argument `i` of a call of `lower`, which must be a string literal (a pattern, a
/// unit, a zone name).
pub(super) fn string_literal_arg(lower: &str, args: &[Syntax], i: usize) -> Result<String, ExprError> {
    match &args[i].kind {
        SyntaxKind::Literal(Literal::String(s)) => Ok(s.clone()),
        _ => Err(unsupported(args[i].pos, format!("a non-constant argument {} of {lower}", i + 1), "a string literal")),
    }
}

/// Function names [`bind`](super::bind) knows and refuses with a message of their own (not
/// listed in [`SUPPORTED_FUNCTIONS`]); a UDF may not take them either.
pub(super) const REFUSED_BY_NAME: &[&str] =
    &["split", "explode", "explode_outer", "posexplode", "inline", "array", "map", "sequence"];

/// The datetime pattern `p` of function `func` (written at `pos`) as a [`DateFormat`]'s parts.
/// `reading`: `func` parses text with it (`to_timestamp`, `to_date`, `unix_timestamp`), where
/// day names are refused as Spark 3 and later refuse them (DATETIME_PATTERN_RECOGNITION).
fn datetime_pattern(pos: Pos, p: &str, func: &str, reading: bool) -> Result<Vec<FormatPart>, ExprError> {
    let parts = parse_format(p)
        .ok_or_else(|| unsupported(pos, format!("the datetime pattern '{p}' of {func}"), PATTERN_LETTERS))?;
    if reading && !parts.iter().all(FormatPart::reads) {
        return Err(unsupported(
            pos,
            format!("a day name (E) in the pattern '{p}' of {func}, which parses text (Spark refuses it there too)"),
            "day names in date_format and from_unixtime only",
        ));
    }
    Ok(parts)
}

/// A replacement of Java's `Matcher.replaceAll` (which Spark's `regexp_replace` calls) as a
/// `regex` template: `$n` is group `n` (after the first digit, further digits while the number
/// stays a group of `re`), `${name}` a named group, `\\c` the character `c`, anything else
/// itself (a `$` of the text doubled, as `regex` writes it). `Err` where Java throws: a `$`
/// without a group, a group `re` does not have, a `\\` at the end.
fn java_replacement(rep: &str, re: &Regex) -> Result<Arc<str>, String> {
    let groups = re.captures_len() - 1;
    let mut out = String::with_capacity(rep.len() + 8);
    let mut chars = rep.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' => match chars.next() {
                Some('$') => out.push_str("$$"),
                Some(n) => out.push(n),
                None => return Err("a \\ at the end".into()),
            },
            '$' => match chars.next() {
                Some('{') => {
                    let name: String = chars.by_ref().take_while(|&n| n != '}').collect();
                    if !re.capture_names().flatten().any(|n| n == name) {
                        return Err(format!("no group named {name}"));
                    }
                    out.push_str(&format!("${{{name}}}"));
                }
                Some(d) if d.is_ascii_digit() => {
                    let mut n = d.to_digit(10).unwrap_or(0) as usize;
                    if n > groups {
                        return Err(format!("no group {n}"));
                    }
                    while let Some(next) = chars.peek().and_then(|c| c.to_digit(10)) {
                        let more = n * 10 + next as usize;
                        if more > groups {
                            break;
                        }
                        n = more;
                        chars.next();
                    }
                    out.push_str(&format!("${{{n}}}"));
                }
                _ => return Err("a $ not followed by a group number or {name}".into()),
            },
            c => out.push(c),
        }
    }
    Ok(Arc::from(out))
}

/// `p` with Java's meaning of the escapes where it differs from Rust's `regex`: `\d`, `\w`,
/// `\s` and their negations are ASCII classes in Java (`[0-9]`, `[a-zA-Z_0-9]`,
/// `[ \t\n\x0B\f\r]`), Unicode ones in `regex`; `\Q...\E` quotes its text. Outside a bracket
/// class each becomes a class of its own, inside one its ranges (a negated one a nested class,
/// which `regex` reads as a union, as Java does). Every other escape is kept as written, and an
/// escaped backslash is not read as the start of an escape.
pub(super) fn java_classes(p: &str) -> String {
    const DIGIT: &str = "0-9";
    const WORD: &str = "0-9A-Za-z_";
    const SPACE: &str = "\\t\\n\\x0B\\x0C\\r ";
    let mut out = String::with_capacity(p.len() + 16);
    let mut depth = 0usize; // open bracket classes
    let mut chars = p.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                let Some(n) = chars.next() else {
                    out.push('\\');
                    break;
                };
                let class = match n {
                    'd' | 'D' => Some(DIGIT),
                    'w' | 'W' => Some(WORD),
                    's' | 'S' => Some(SPACE),
                    _ => None,
                };
                match class {
                    Some(ranges) => {
                        let negated = n.is_ascii_uppercase();
                        if depth > 0 && !negated {
                            out.push_str(ranges);
                        } else {
                            out.push_str(if negated { "[^" } else { "[" });
                            out.push_str(ranges);
                            out.push(']');
                        }
                    }
                    // Java's POSIX classes `\p{Alpha}` ... are ASCII ones (Rust's `\p{Alpha}` is
                    // Unicode): written as the ASCII classes of `regex`
                    None if (n == 'p' || n == 'P') && chars.peek() == Some(&'{') => {
                        let name: String = chars.clone().skip(1).take_while(|&c| c != '}').collect();
                        match posix_class(&name) {
                            Some(class) => {
                                chars.nth(name.len() + 1); // the `{name}`
                                let negation = if n == 'P' { "^" } else { "" };
                                if depth > 0 {
                                    out.push_str(&format!("[:{negation}{class}:]"));
                                } else {
                                    out.push_str(&format!("[[:{negation}{class}:]]"));
                                }
                            }
                            None => {
                                out.push('\\');
                                out.push(n);
                            }
                        }
                    }
                    None if n == 'Q' => {
                        // quoted up to `\E` (or the end)
                        let mut quoted = String::new();
                        while let Some(q) = chars.next() {
                            if q == '\\' && chars.peek() == Some(&'E') {
                                chars.next();
                                break;
                            }
                            quoted.push(q);
                        }
                        out.push_str(&regex::escape(&quoted));
                    }
                    None => {
                        out.push('\\');
                        out.push(n);
                    }
                }
            }
            '[' => {
                depth += 1;
                out.push('[');
                // `[:alpha:]` is no POSIX class in Java but a set of characters (a nested one
                // inside a class): the colon escaped, so that `regex` reads it so too
                if chars.peek() == Some(&':') {
                    out.push_str("\\:");
                    chars.next();
                }
                // a `]` first in a class (after `^`) is a literal, in Java as in `regex`
                if chars.peek() == Some(&'^') {
                    out.push('^');
                    chars.next();
                }
                if chars.peek() == Some(&']') {
                    out.push_str("\\]");
                    chars.next();
                }
            }
            ']' if depth > 0 => {
                depth -= 1;
                out.push(']');
            }
            c => out.push(c),
        }
    }
    out
}

/// The ASCII class of `regex` for one of Java's POSIX class names (`\p{Alpha}`), which Java
/// defines over US-ASCII only.
fn posix_class(java: &str) -> Option<&'static str> {
    Some(match java {
        "Lower" => "lower",
        "Upper" => "upper",
        "ASCII" => "ascii",
        "Alpha" => "alpha",
        "Digit" => "digit",
        "Alnum" => "alnum",
        "Punct" => "punct",
        "Graph" => "graph",
        "Print" => "print",
        "Blank" => "blank",
        "Cntrl" => "cntrl",
        "XDigit" => "xdigit",
        "Space" => "space",
        _ => return None,
    })
}

/// Spark's default pattern of `from_unixtime` and `unix_timestamp` (part of their output names).
const DEFAULT_UNIX_PATTERN: &str = "yyyy-MM-dd HH:mm:ss";

/// Spark's name of a math function: its own name upper case (`SQRT`, `FLOOR`, `POWER`), an
/// alias as written (`ceiling`, `pow`, `sign`), and `ln` lower case.
fn math_name(lower: &str) -> String {
    match lower {
        "ln" | "ceiling" | "pow" | "sign" => lower.to_string(),
        _ => lower.to_ascii_uppercase(),
    }
}

/// The functions [`bind`](super::bind) knows, for error messages.
pub(super) const SUPPORTED_FUNCTIONS: &str = "if, coalesce, nvl, ifnull, nullif, abs, mod, pmod, div, try_add, try_subtract, try_multiply, \
     try_divide, round, bround, floor, ceil, ceiling, sqrt, exp, ln, log10, log2, log, pow, power, sign, signum, greatest, \
     least, lower, upper, length, char_length, character_length, trim, ltrim, rtrim, initcap, reverse, md5, sha2, substring, substr, left, \
     right, concat, concat_ws, lpad, rpad, replace, instr, locate, startswith, endswith, contains, split_part, \
     regexp_replace, regexp_extract, year, month, day, dayofmonth, dayofweek, hour, minute, second, unix_seconds, \
     unix_millis, unix_micros, unix_timestamp, from_unixtime, timestamp_seconds, timestamp_millis, timestamp_micros, \
     date_trunc, date_format, to_date, to_timestamp, try_to_timestamp, current_timestamp, now, struct, named_struct, to_json, get_json_object, \
     window_time, hash, ucase, lcase, len, octet_length, bit_length, ascii, chr, char, repeat, translate, btrim, \
     position, sha1, crc32, base64, hex, regexp_like, regexp_count, regexp_substr, isnull, isnotnull, nvl2, decode, \
     isnan, nanvl, pi, e, cbrt, sin, cos, tan, cot, asin, acos, atan, atan2, sinh, cosh, tanh, degrees, radians, \
     log1p, expm1, rint, hypot, shiftleft, shiftright, dayofyear, weekofyear, quarter, extract, date_part, date_add, \
     dateadd, date_sub, datediff, date_diff, add_months, last_day, make_date, unix_date, date_from_unix_date, string, \
     int, bigint, double, float, boolean, date, timestamp, equal_null, zeroifnull, negative, positive, factorial, \
     to_unix_timestamp, current_date, curdate, trunc, next_day, timestampadd, timestampdiff, from_utc_timestamp, \
     to_utc_timestamp, asinh, acosh, atanh, sec, csc, weekday, nullifzero, substring_index, space, find_in_set, \
     levenshtein, bit_count, bin, sha, try_mod, try_to_date, width_bucket, make_timestamp, try_make_timestamp, conv, \
     format_number, months_between, typeof";

/// A Java regular expression, as Spark runs it (`java.util.regex`), compiled by Rust's `regex`
/// after [`java_classes`]; refused where `regex` cannot read it (backreferences, lookaround and
/// possessive quantifiers do not compile).
pub(super) fn java_regex(pos: Pos, p: &str) -> Result<Arc<Regex>, ExprError> {
    Regex::new(&java_classes(p)).map(Arc::new).map_err(|e| {
        unsupported(
            pos,
            format!("the regular expression '{p}' ({})", e.to_string().lines().last().unwrap_or("")),
            "regular expressions without backreferences or lookaround",
        )
    })
}

/// A `try_` arithmetic function with the implicit casts into its operands made `try_cast`s:
/// Spark evaluates the whole call, casts included, under `TryEval`, so `try_mod(s, 3)` of a
/// STRING `s` that is no number is NULL, not CAST_INVALID_INPUT.
fn tolerant_operands(mut t: Typed) -> Typed {
    fn soften(t: &mut Typed) {
        if let Node::Cast { input, try_cast, implicit: true } = &mut t.node {
            *try_cast = true;
            soften(input);
        }
    }
    if let Node::Call { args, .. } = &mut t.node {
        args.iter_mut().for_each(soften);
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Java's classes are ASCII (Spark 4.3, batch `RLIKE` / `regexp_extract`: `été` is not
    /// `^\w+$`, Arabic-Indic digits are not `\d`, a no-break space is not `\s`).
    #[test]
    fn regex_classes_are_javas_ascii_ones() {
        let m = |p: &str, s: &str| java_regex(Pos::default(), p).unwrap().is_match(s);
        assert!(!m(r"^\w+$", "été"));
        assert!(m(r"^\w+$", "abc_19"));
        assert!(!m(r"\d", "٣٤"));
        assert!(m(r"^\d+$", "0123456789"));
        assert!(!m(r"^\s+$", "\u{a0}\u{2003}"));
        assert!(m(r"^\s+$", " \t\n\r\u{b}\u{c}"));
        assert!(m(r"^\W$", "é"));
        assert!(m(r"^\D\S$", "x!"));
        // inside a class, negated inside a class, and an escaped backslash before a `d`
        assert!(m(r"^[\w-]+$", "a-b_c"));
        assert!(!m(r"^[\w-]+$", "a-é"));
        assert!(m(r"^[a\D]+$", "a!b"));
        assert!(!m(r"^[a\D]+$", "a1"));
        assert!(m(r"^\\d$", r"\d"));
        // Java's POSIX classes are ASCII; `[:alpha:]` is a set of characters there
        assert!(!m(r"^\p{Alpha}+$", "Ünï"));
        assert!(m(r"^\p{Alpha}+$", "abcXYZ"));
        assert!(m(r"^\P{Digit}+$", "ab"));
        assert!(m(r"^[\p{Digit}x]+$", "1x2"));
        assert!(m(r"^[[:alpha:]]+$", "ahl:p"));
        assert!(!m(r"[[:alpha:]]", "bcd"));
        assert!(m(r"\p{L}", "é")); // a Unicode category stays Unicode
        // \Q...\E quotes
        assert!(m(r"^\Qa.b\E$", "a.b"));
        assert!(!m(r"^\Qa.b\E$", "axb"));
        assert_eq!(java_classes(r"x\.y\b"), r"x\.y\b");
    }

    /// Java's `Matcher.replaceAll` replacements (Spark 4.3, batch `regexp_replace`: `xabx` with
    /// `(a)(b)` and `$2$1` is `xbax`).
    #[test]
    fn replacements_name_groups_as_java_does() {
        let re = |p: &str| java_regex(Pos::default(), p).unwrap();
        let apply = |p: &str, rep: &str, s: &str| {
            let r = re(p);
            let t = java_replacement(rep, &r).unwrap();
            r.replace_all(s, &*t).into_owned()
        };
        assert_eq!(apply("(a)(b)", "$2$1", "xabx"), "xbax");
        assert_eq!(apply("(a)", "$10", "xax"), "xa0x"); // group 1, then 0: there is no group 10
        assert_eq!(apply("(?<g>a)", "<${g}>", "xax"), "x<a>x");
        assert_eq!(apply("a", r"\$1\\", "xax"), r"x$1\x");
        for bad in ["$2", "$x", "$", r"x\", "${nope}"] {
            assert!(java_replacement(bad, &re("(a)")).is_err(), "{bad}");
        }
    }
}
