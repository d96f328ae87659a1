//! JSON inside expressions (SQL.md "structs and JSON"): `to_json(struct)` writes a struct as
//! Spark's `to_json` does (Jackson's compact text), and `get_json_object(s, path)` extracts a
//! part of a JSON text as Spark's `GetJsonObject` does.

use std::fmt::Write as _;

use super::dates::write_date;
use super::text::{civil, java_double, java_float};
use crate::value::Value;

/// `to_json(s)`: the struct's fields in order as a compact JSON object, as Spark writes it:
/// null fields left out; timestamps as `yyyy-MM-dd'T'HH:mm:ss.SSS` and `Z` (cut to ms, the JSON
/// options' default `timestampFormat` in UTC); dates as `"yyyy-MM-dd"`; doubles and floats as
/// Java prints them (`1.0E20`), NaN and infinities as the strings `"NaN"`, `"Infinity"`,
/// `"-Infinity"`; nested structs as nested objects.
pub(crate) fn to_json(v: &Value) -> String {
    let mut out = String::with_capacity(64);
    write_json(&mut out, v);
    out
}

fn write_json(out: &mut String, v: &Value) {
    match v {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Int(x) => {
            let _ = write!(out, "{x}"); // writing to a String cannot fail
        }
        Value::Long(x) => {
            let _ = write!(out, "{x}");
        }
        Value::Double(x) if x.is_finite() => out.push_str(&java_double(*x)),
        Value::Float(x) if x.is_finite() => out.push_str(&java_float(*x)),
        Value::Double(x) => write_json_string(out, &java_double(*x)),
        Value::Float(x) => write_json_string(out, &java_float(*x)),
        Value::Str(s) => write_json_string(out, s),
        Value::Decimal(d) => out.push_str(&d.to_json_string()),
        Value::Timestamp(t) => {
            let (y, mo, d, h, mi, s, us) = civil(t.0);
            let _ = write!(out, "\"{}-{mo:02}-{d:02}T{h:02}:{mi:02}:{s:02}.{:03}Z\"", crate::time::Year(y), us / 1000);
        }
        Value::Date(d) => {
            out.push('"');
            write_date(out, *d);
            out.push('"');
        }
        Value::Struct(ty, fields) => {
            out.push('{');
            let mut first = true;
            for (f, v) in ty.fields().iter().zip(fields.iter()).filter(|(_, v)| !v.is_null()) {
                if !first {
                    out.push(',');
                }
                first = false;
                write_json_string(out, &f.name);
                out.push(':');
                write_json(out, v);
            }
            out.push('}');
        }
        Value::Window { start, end } => {
            write_json(
                out,
                &Value::Struct(
                    super::structs::window_type(),
                    vec![Value::Timestamp(*start), Value::Timestamp(*end)].into(),
                ),
            );
        }
        Value::List(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_json(out, item);
            }
            out.push(']');
        }
    }
}

/// A JSON string as Jackson escapes it: `"` and `\`, the control characters `\b \t \n \f \r`
/// short, the other control characters as `\u00XX` (upper-case hex); nothing else escaped.
fn write_json_string(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{8}' => out.push_str("\\b"),
            '\t' => out.push_str("\\t"),
            '\n' => out.push_str("\\n"),
            '\u{c}' => out.push_str("\\f"),
            '\r' => out.push_str("\\r"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04X}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

/// One step of a `get_json_object` path.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PathStep {
    /// `.name` or `['name']`.
    Field(String),
    /// `[n]`.
    Index(usize),
}

/// Parses a JSON path as Spark's `get_json_object` takes it: `$` then `.name`, `['name']` or
/// `[n]` steps. `None` for other paths (wildcards `*` and `[*]` included: not implemented).
pub(crate) fn parse_path(path: &str) -> Option<Vec<PathStep>> {
    let mut rest = path.strip_prefix('$')?;
    let mut steps = Vec::new();
    while !rest.is_empty() {
        if let Some(r) = rest.strip_prefix('.') {
            let end = r.find(['.', '[']).unwrap_or(r.len());
            let name = &r[..end];
            if name.is_empty() || name == "*" {
                return None;
            }
            steps.push(PathStep::Field(name.to_string()));
            rest = &r[end..];
        } else if let Some(r) = rest.strip_prefix("['") {
            let end = r.find("']")?;
            steps.push(PathStep::Field(r[..end].to_string()));
            rest = &r[end + 2..];
        } else if let Some(r) = rest.strip_prefix('[') {
            let end = r.find(']')?;
            let n: usize = r[..end].trim().parse().ok()?;
            steps.push(PathStep::Index(n));
            rest = &r[end + 1..];
        } else {
            return None;
        }
    }
    Some(steps)
}

/// A parsed JSON value, keys in the order written (Spark copies objects as written).
#[derive(Debug)]
enum Json<'a> {
    Null,
    Bool(bool),
    /// The number's text as written.
    Number(&'a str),
    Str(String),
    Array(Vec<Json<'a>>),
    Object(Vec<(String, Json<'a>)>),
}

/// `get_json_object(json, path)`: the value at `path` as text (a string without its quotes,
/// other values as compact JSON, numbers as Jackson rewrites them: `1.50` is `1.5`); `None`
/// (NULL) when the text is not JSON, the path is not there, or the value is `null`.
pub(crate) fn get_json_object(text: &str, path: &[PathStep]) -> Option<String> {
    let mut p = Parser { b: text.as_bytes(), s: text, i: 0, depth: 0 };
    let root = p.value()?;
    // Jackson requires white space (or the end) after a number or word at the root
    // (`2023/12/31` is not JSON); after an object or array the rest is not read
    if matches!(root, Json::Number(_) | Json::Bool(_) | Json::Null)
        && p.b.get(p.i).is_some_and(|c| !matches!(c, b' ' | b'\t' | b'\n' | b'\r'))
    {
        return None;
    }
    let mut at = &root;
    for step in path {
        at = match (step, at) {
            (PathStep::Field(name), Json::Object(fields)) => &fields.iter().find(|(k, _)| k == name)?.1,
            (PathStep::Index(n), Json::Array(items)) => items.get(*n)?,
            _ => return None,
        };
    }
    match at {
        Json::Null => None,
        Json::Str(s) => Some(s.clone()),
        other => {
            let mut out = String::new();
            write_compact(&mut out, other);
            Some(out)
        }
    }
}

fn write_compact(out: &mut String, v: &Json<'_>) {
    match v {
        Json::Null => out.push_str("null"),
        Json::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Json::Number(n) => {
            // Jackson copies an integer as written and a fraction through a double
            if n.bytes().all(|b| b.is_ascii_digit() || b == b'-') {
                out.push_str(n);
            } else {
                out.push_str(&n.parse::<f64>().map_or_else(|_| n.to_string(), java_double));
            }
        }
        Json::Str(s) => write_json_string(out, s),
        Json::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_compact(out, item);
            }
            out.push(']');
        }
        Json::Object(fields) => {
            out.push('{');
            for (i, (k, item)) in fields.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_json_string(out, k);
                out.push(':');
                write_compact(out, item);
            }
            out.push('}');
        }
    }
}

/// Nesting bound, so a hostile text cannot overflow the stack.
const MAX_DEPTH: usize = 256;

struct Parser<'a> {
    b: &'a [u8],
    s: &'a str,
    i: usize,
    depth: usize,
}

impl<'a> Parser<'a> {
    fn ws(&mut self) {
        while self.i < self.b.len() && matches!(self.b[self.i], b' ' | b'\t' | b'\n' | b'\r') {
            self.i += 1;
        }
    }

    fn eat(&mut self, c: u8) -> bool {
        self.ws();
        if self.b.get(self.i) == Some(&c) {
            self.i += 1;
            true
        } else {
            false
        }
    }

    fn value(&mut self) -> Option<Json<'a>> {
        self.ws();
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return None;
        }
        let v = match *self.b.get(self.i)? {
            b'{' => {
                self.i += 1;
                let mut fields = Vec::new();
                if !self.eat(b'}') {
                    loop {
                        self.ws();
                        let k = self.string()?;
                        if !self.eat(b':') {
                            return None;
                        }
                        fields.push((k, self.value()?));
                        if self.eat(b'}') {
                            break;
                        }
                        if !self.eat(b',') {
                            return None;
                        }
                    }
                }
                Json::Object(fields)
            }
            b'[' => {
                self.i += 1;
                let mut items = Vec::new();
                if !self.eat(b']') {
                    loop {
                        items.push(self.value()?);
                        if self.eat(b']') {
                            break;
                        }
                        if !self.eat(b',') {
                            return None;
                        }
                    }
                }
                Json::Array(items)
            }
            b'"' => Json::Str(self.string()?),
            b't' => self.word("true", Json::Bool(true))?,
            b'f' => self.word("false", Json::Bool(false))?,
            b'n' => self.word("null", Json::Null)?,
            _ => {
                let start = self.i;
                while self.i < self.b.len() && matches!(self.b[self.i], b'0'..=b'9' | b'-' | b'+' | b'.' | b'e' | b'E')
                {
                    self.i += 1;
                }
                let n = &self.s[start..self.i];
                n.parse::<f64>().ok()?;
                Json::Number(n)
            }
        };
        self.depth -= 1;
        Some(v)
    }

    fn word(&mut self, w: &str, v: Json<'a>) -> Option<Json<'a>> {
        if self.s[self.i..].starts_with(w) {
            self.i += w.len();
            Some(v)
        } else {
            None
        }
    }

    fn string(&mut self) -> Option<String> {
        if self.b.get(self.i) != Some(&b'"') {
            return None;
        }
        self.i += 1;
        let mut out = String::new();
        loop {
            let start = self.i;
            while self.i < self.b.len() && self.b[self.i] != b'"' && self.b[self.i] != b'\\' {
                self.i += 1;
            }
            out.push_str(self.s.get(start..self.i)?);
            match *self.b.get(self.i)? {
                b'"' => {
                    self.i += 1;
                    return Some(out);
                }
                _ => {
                    let c = *self.b.get(self.i + 1)?;
                    self.i += 2;
                    out.push(match c {
                        b'"' => '"',
                        b'\\' => '\\',
                        b'/' => '/',
                        b'b' => '\u{8}',
                        b'f' => '\u{c}',
                        b'n' => '\n',
                        b'r' => '\r',
                        b't' => '\t',
                        b'u' => {
                            let hex = self.s.get(self.i..self.i + 4)?;
                            self.i += 4;
                            char::from_u32(u32::from_str_radix(hex, 16).ok()?).unwrap_or('\u{fffd}')
                        }
                        _ => return None,
                    });
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn get(json: &str, path: &str) -> Option<String> {
        get_json_object(json, &parse_path(path).unwrap_or_default())
    }

    #[test]
    fn get_json_object_follows_fields_and_indexes_as_spark() {
        // Expected texts: Spark 4.3's get_json_object (the oracle).
        let doc = r#"{"a":{"b":[1,2,{"c":"z"}]}}"#;
        assert_eq!(get(doc, "$.a.b").as_deref(), Some(r#"[1,2,{"c":"z"}]"#));
        assert_eq!(get(doc, "$.a.b[2].c").as_deref(), Some("z"));
        assert_eq!(get(doc, "$.a.b[1]").as_deref(), Some("2"));
        assert_eq!(get(r#"{"a":null}"#, "$.a"), None);
        assert_eq!(get("bad", "$.a"), None);
        assert_eq!(get(r#"{"a":1.50}"#, "$.a").as_deref(), Some("1.5"));
        assert_eq!(get(r#"{"a":{"x": 1, "y" : [true ,null]}}"#, "$.a").as_deref(), Some(r#"{"x":1,"y":[true,null]}"#));
        assert_eq!(get(r#"{"a":1}"#, "$").as_deref(), Some(r#"{"a":1}"#));
        assert_eq!(get("[1,2]", "$[0]").as_deref(), Some("1"));
        assert_eq!(get(r#"{"a":1}"#, "$.b"), None);
        assert_eq!(get("2023/12/31 23:59", "$"), None);
        assert_eq!(get("2023 ", "$").as_deref(), Some("2023"));
        assert_eq!(parse_path("$.a[*]"), None);
        assert_eq!(parse_path("a.b"), None);
    }
}
