//! STRUCT expressions (SQL.md "structs and JSON"): `struct(a, b AS c)`, `named_struct('k', v,
//! ...)`, field access `s.field` (and `window.start` / `window.end` on a window column),
//! `window_time(window)`, `to_json(struct)` and `get_json_object(s, path)`, with Spark's
//! field names and output names.

use super::bind::{Binder, call, is_null_literal, names, ty_err, unsupported};
use super::functions::Func;
use super::json::parse_path;
use super::{ExprError, Literal, Node, Pos, Syntax, SyntaxKind, Typed};
use crate::schema::{DataType, Field, StructType};

/// The struct type of a window value: `start` and `end`, both TIMESTAMP (Spark's window
/// column).
pub(crate) fn window_type() -> StructType {
    StructType::new(vec![
        Field { name: "start".into(), data_type: DataType::Timestamp },
        Field { name: "end".into(), data_type: DataType::Timestamp },
    ])
}

impl Binder<'_> {
    /// `a.b.c` where `a` is a struct (or window) column: its fields, one step at a time, as
    /// Spark's analyser resolves a name whose first part is a struct column. Named `a.b.c`
    /// inside other expressions and `c` as an output column (Spark's alias of a nested field).
    pub(super) fn field_access(&self, pos: Pos, parts: &[String]) -> Result<Typed, ExprError> {
        let Some(i) = self.schema.resolve(&parts[0]) else {
            return Err(ExprError::UnknownColumn { pos, given: parts.join("."), allowed: self.schema.names() });
        };
        let f = &self.schema.fields()[i];
        let mut t = Typed { node: Node::Column(i), data_type: f.data_type, name: parts[0].clone() };
        for part in &parts[1..] {
            t = self.get_field(pos, t, part)?;
        }
        Ok(t)
    }

    /// The field `name` of the struct `t`.
    pub(super) fn get_field(&self, pos: Pos, t: Typed, name: &str) -> Result<Typed, ExprError> {
        let full = format!("{}.{name}", t.name);
        match t.data_type {
            DataType::Window => {
                let end = if name.eq_ignore_ascii_case("start") {
                    false
                } else if name.eq_ignore_ascii_case("end") {
                    true
                } else {
                    return Err(ty_err(
                        pos,
                        format!("no field `{name}` in the window column `{}`", t.name),
                        "start, end",
                    ));
                };
                Ok(call(Func::WindowBound { end }, vec![t], DataType::Timestamp, full))
            }
            DataType::Struct(ty) => {
                let Some((index, data_type)) = ty.field(name) else {
                    let fields: Vec<&str> = ty.fields().iter().map(|f| f.name.as_str()).collect();
                    return Err(ty_err(pos, format!("no field `{name}` in {} ({ty})", t.name), &fields.join(", ")));
                };
                Ok(call(Func::GetField(index), vec![t], data_type, full))
            }
            other => Err(unsupported(
                pos,
                format!("`{full}`: {} is a column of type {other}, not a struct", t.name),
                "a column name, or `s.field` where s is a STRUCT column",
            )),
        }
    }

    /// The struct and JSON functions: `struct`, `named_struct`, `to_json`, `get_json_object`,
    /// `window_time`.
    pub(super) fn struct_call(&self, pos: Pos, lower: &str, args: &[Syntax]) -> Result<Typed, ExprError> {
        let arity = |n: usize| {
            if args.len() == n {
                Ok(())
            } else {
                Err(ty_err(pos, format!("{lower} with {} arguments", args.len()), &format!("{n} arguments")))
            }
        };
        match lower {
            "struct" => {
                if args.is_empty() {
                    return Err(ty_err(pos, "struct()".into(), "at least one argument"));
                }
                let mut fields = Vec::new();
                let mut values = Vec::new();
                let mut arg_names = Vec::new();
                for (k, a) in args.iter().enumerate() {
                    let (v, field, shown) = match &a.kind {
                        SyntaxKind::Alias { expr, alias } => {
                            let v = self.bind(expr)?;
                            let shown = format!("{} AS {alias}", v.name);
                            (v, alias.clone(), shown)
                        }
                        // a lateral column alias: the field is named as the reference, as Spark
                        SyntaxKind::LateralAlias { name, .. } => {
                            let v = self.bind(a)?;
                            let shown = v.name.clone();
                            (v, name.clone(), shown)
                        }
                        _ => {
                            let v = self.bind(a)?;
                            let field = self.field_name(&v).unwrap_or_else(|| format!("col{}", k + 1));
                            let shown = v.name.clone();
                            (v, field, shown)
                        }
                    };
                    fields.push(Field { name: field, data_type: v.data_type });
                    values.push(v);
                    arg_names.push(shown);
                }
                let ty = StructType::new(fields);
                let name = format!("struct({})", arg_names.join(", "));
                Ok(call(Func::MakeStruct(ty), values, DataType::Struct(ty), name))
            }
            "named_struct" => {
                if args.is_empty() || !args.len().is_multiple_of(2) {
                    return Err(ty_err(
                        pos,
                        format!("named_struct with {} arguments", args.len()),
                        "pairs of a name literal and a value",
                    ));
                }
                let mut fields = Vec::new();
                let mut values = Vec::new();
                let mut shown = Vec::new();
                for pair in args.chunks(2) {
                    let SyntaxKind::Literal(Literal::String(k)) = &pair[0].kind else {
                        return Err(ty_err(pair[0].pos, "a field name that is not a string literal".into(), "'name'"));
                    };
                    let v = self.bind(&pair[1])?;
                    shown.push(k.clone());
                    shown.push(v.name.clone());
                    fields.push(Field { name: k.clone(), data_type: v.data_type });
                    values.push(v);
                }
                let name = format!("named_struct({})", shown.join(", "));
                let ty = StructType::new(fields);
                Ok(call(Func::MakeStruct(ty), values, DataType::Struct(ty), name))
            }
            "to_json" => {
                arity(1)?;
                let s = self.bind(&args[0])?;
                if !matches!(s.data_type, DataType::Struct(_) | DataType::Window) {
                    return Err(ty_err(pos, format!("to_json of {} ({})", s.data_type, s.name), "STRUCT"));
                }
                let name = format!("to_json({})", s.name);
                Ok(call(Func::ToJson, vec![s], DataType::String, name))
            }
            "get_json_object" => {
                arity(2)?;
                let s = self.string_only(pos, self.bind(&args[0])?, "get_json_object")?;
                let SyntaxKind::Literal(Literal::String(p)) = &args[1].kind else {
                    return Err(unsupported(
                        args[1].pos,
                        "a path that is not a string literal",
                        "a path literal '$.a.b'",
                    ));
                };
                let steps = parse_path(p).ok_or_else(|| {
                    unsupported(
                        args[1].pos,
                        format!("the JSON path '{p}'"),
                        "`$` followed by `.name`, `['name']` and `[n]` steps (no wildcards)",
                    )
                })?;
                let name = format!("get_json_object({}, {p})", s.name);
                Ok(call(Func::GetJsonObject(steps.into()), vec![s], DataType::String, name))
            }
            "window_time" => {
                arity(1)?;
                let w = self.bind(&args[0])?;
                if w.data_type != DataType::Window && !is_null_literal(&w) {
                    return Err(ty_err(
                        pos,
                        format!("window_time of {} ({})", w.data_type, w.name),
                        "a window column (the `window` of a window aggregate)",
                    ));
                }
                let name = format!("window_time({})", names(std::slice::from_ref(&w)));
                Ok(call(Func::WindowTime, vec![w], DataType::Timestamp, name))
            }
            _ => Err(unsupported(pos, format!("function {lower}"), "struct, named_struct, to_json, get_json_object")),
        }
    }

    /// The field name Spark gives an unaliased `struct(...)` argument: a column's name as
    /// written (`struct(ABC)` has a field `ABC` whatever the schema's spelling), a nested
    /// field's name; `None` for other expressions (`colN`).
    fn field_name(&self, v: &Typed) -> Option<String> {
        match &v.node {
            Node::Column(_) => Some(v.name.clone()),
            Node::Call { func: Func::GetField(index), args } => match args.first()?.data_type {
                DataType::Struct(ty) => ty.fields().get(*index).map(|f| f.name.clone()),
                _ => None,
            },
            Node::Call { func: Func::WindowBound { end }, .. } => Some(if *end { "end" } else { "start" }.to_string()),
            _ => None,
        }
    }
}

/// The output name of a nested field selected without `AS`: the field's name (Spark aliases
/// `s.a` as `a`, `window.start` as `start`); `None` for other expressions.
pub(super) fn nested_output_name(t: &Typed) -> Option<&'static str> {
    let Node::Call { func, args } = &t.node else { return None };
    let inner = args.first().filter(|a| is_column_path(a))?;
    match (func, inner.data_type) {
        (Func::GetField(index), DataType::Struct(ty)) => ty.fields().get(*index).map(|f| f.name.as_str()),
        (Func::WindowBound { end }, _) => Some(if *end { "end" } else { "start" }),
        _ => None,
    }
}

fn is_column_path(t: &Typed) -> bool {
    match &t.node {
        Node::Column(_) => true,
        Node::Call { func: Func::GetField(_), args } => args.first().is_some_and(is_column_path),
        _ => false,
    }
}
