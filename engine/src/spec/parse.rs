//! Text to raw model: TOML syntax, `--set` overrides, unknown fields and wrong TOML types, each
//! turned into a [`SpecError`] with the field path and the position in the file.

use serde_path_to_error::Segment;
use toml::de::{DeTable, DeValue};

use super::error::{SpecError, line_col, list, quote};
use super::model::RawPipeline;
use super::overrides;

/// One step of a path into the TOML document.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Step {
    /// A table key.
    Key(String),
    /// An array index.
    Index(usize),
}

/// The path in the spec's spelling: `query.measures[1].agg`.
pub(crate) fn path_string(steps: &[Step]) -> String {
    let mut s = String::new();
    for step in steps {
        match step {
            Step::Key(k) => {
                if !s.is_empty() {
                    s.push('.');
                }
                s.push_str(k);
            }
            Step::Index(i) => s.push_str(&format!("[{i}]")),
        }
    }
    s
}

/// Parses `text`, applies `overrides`, and deserializes the raw model.
pub(crate) fn parse_raw(text: &str, overrides: &[(String, String)]) -> Result<RawPipeline, SpecError> {
    let mut table: toml::Table = text.parse().map_err(|e: toml::de::Error| syntax_error(text, &e))?;
    let mut overridden = Vec::with_capacity(overrides.len());
    for (field, value) in overrides {
        overridden.push(overrides::apply(&mut table, field, value)?);
    }
    one_source_of_an_array(&mut table)?;
    let value = toml::Value::Table(table);
    serde_path_to_error::deserialize::<_, RawPipeline>(value.clone())
        .map_err(|e| shape_error(text, &value, &overridden, &e))
}

/// `[[source]]` (PIPELINE.md "Several sources"): an array of one source is read as `[source]`;
/// several are moved to `source_list` (errors inside them are named `source[i]...`, see
/// [`shape_error`]).
fn one_source_of_an_array(table: &mut toml::Table) -> Result<(), SpecError> {
    if let Some(toml::Value::Array(sources)) = table.get_mut("source") {
        match sources.len() {
            0 => return Err(SpecError::new("source", "[]", "one [source] table, or one or more [[source]] tables")),
            1 => {
                let one = sources.remove(0);
                table.insert("source".into(), one);
            }
            _ => {
                if let Some(list) = table.remove("source") {
                    table.insert(SOURCE_LIST.into(), list);
                }
            }
        }
    }
    Ok(())
}

/// The key several `[[source]]` tables are read under ([`super::model::RawPipeline::source_list`]).
const SOURCE_LIST: &str = "source_list";

/// A TOML syntax error: `field` = `line L, column C`, `given` = that line, `allowed` = toml's
/// message.
fn syntax_error(text: &str, e: &toml::de::Error) -> SpecError {
    let at = e.span().map(|s| s.start).unwrap_or(0);
    let (line, col) = line_col(text, at);
    let line_text = text.lines().nth(line - 1).unwrap_or("").trim();
    SpecError::new(
        format!("line {line}, column {col}"),
        quote(line_text),
        format!("valid TOML ({})", e.message().trim()),
    )
}

/// An unknown field or a value of the wrong TOML type, found by serde.
fn shape_error(
    text: &str,
    root: &toml::Value,
    overridden: &[Vec<Step>],
    e: &serde_path_to_error::Error<toml::de::Error>,
) -> SpecError {
    let mut steps: Vec<Step> = e
        .path()
        .iter()
        .filter_map(|seg| match seg {
            Segment::Map { key } => Some(Step::Key(key.clone())),
            Segment::Seq { index } => Some(Step::Index(*index)),
            Segment::Enum { .. } | Segment::Unknown => None,
        })
        .collect();
    let message = e.inner().message().trim().to_string();
    let (given, allowed) = if let Some(rest) = message.strip_prefix("unknown field `") {
        let name = rest.split('`').next().unwrap_or("").to_string();
        if steps.last() != Some(&Step::Key(name.clone())) {
            steps.push(Step::Key(name));
        }
        let fields = rest.split_once("expected ").map(|(_, f)| f).unwrap_or("no fields here");
        let fields = fields.strip_prefix("one of ").unwrap_or(fields).replace('`', "");
        // the key several `[[source]]` tables are moved to is not one a user writes
        let fields = fields.split(", ").filter(|f| *f != SOURCE_LIST).collect::<Vec<_>>().join(", ");
        let given = lookup(root, &steps).map(render).unwrap_or_else(|| "a value".into());
        match typed_fields(root, &steps[..steps.len() - 1]) {
            Some((what, kind, fields)) => (format!("{given}, not a field of {what} {}", quote(kind)), list(fields)),
            None => (format!("{given}, an unknown field"), fields),
        }
    } else if let Some(rest) = message.strip_prefix("invalid type: ") {
        let expected = rest.split_once(", expected ").map(|(_, x)| x).unwrap_or(rest);
        let given = lookup(root, &steps).map(render).unwrap_or_else(|| rest.to_string());
        (given, plain_expected(expected))
    } else {
        let given = lookup(root, &steps).map(render).unwrap_or_else(|| "a value".into());
        (given, message)
    };
    let position = if overridden.iter().any(|o| steps.starts_with(o)) {
        Some("from --set".to_string())
    } else {
        locate(text, &steps).map(|(l, c)| format!("line {l}, column {c}"))
    };
    let given = match position {
        Some(p) => format!("{given} ({p})"),
        None => given,
    };
    // several sources were read under `source_list`: the file calls them `source[i]`
    let field = path_string(&steps);
    let field = match field.strip_prefix(SOURCE_LIST) {
        Some(rest) => format!("source{rest}"),
        None => field,
    };
    SpecError::new(field, given, allowed)
}

/// The value at `steps` in `root`.
pub(crate) fn lookup<'a>(root: &'a toml::Value, steps: &[Step]) -> Option<&'a toml::Value> {
    let mut v = root;
    for step in steps {
        v = match step {
            Step::Key(k) => v.as_table()?.get(k)?,
            Step::Index(i) => v.as_array()?.get(*i)?,
        };
    }
    Some(v)
}

/// Line and column where `steps` is written in `text` (the key, or the array element).
fn locate(text: &str, steps: &[Step]) -> Option<(usize, usize)> {
    let doc = DeTable::parse(text).ok()?;
    let mut table: &DeTable<'_> = doc.get_ref();
    let mut value: Option<&DeValue<'_>> = None;
    let mut at = None;
    for step in steps {
        match step {
            Step::Key(k) => {
                if let Some(v) = value {
                    table = v.as_table()?;
                }
                // several sources are read under `source_list`, written `[[source]]`
                let k = if k == SOURCE_LIST { "source" } else { k.as_str() };
                let (key, v) = table.get_key_value(k)?;
                at = Some(key.span().start);
                value = Some(v.get_ref());
            }
            Step::Index(i) => {
                let item = value?.as_array()?.get(*i)?;
                at = Some(item.span().start);
                value = Some(item.get_ref());
            }
        }
    }
    at.map(|a| line_col(text, a))
}

/// A TOML value as it would be written inline: strings quoted, tables as `{ k = v }`.
pub(crate) fn render(v: &toml::Value) -> String {
    match v {
        toml::Value::String(s) => quote(s),
        toml::Value::Array(a) => {
            format!("[{}]", a.iter().map(render).collect::<Vec<_>>().join(", "))
        }
        toml::Value::Table(t) => {
            if t.is_empty() {
                return "{}".into();
            }
            let parts: Vec<String> = t.iter().map(|(k, v)| format!("{k} = {}", render(v))).collect();
            format!("{{ {} }}", parts.join(", "))
        }
        other => other.to_string(),
    }
}

/// serde's name of an expected type in the spec's words.
fn plain_expected(expected: &str) -> String {
    match expected {
        "i64" | "u64" | "i32" | "u32" | "usize" => "an integer".into(),
        "f64" | "f32" => "a number".into(),
        "a sequence" => "a list".into(),
        "a boolean" => "true or false".into(),
        e if e.starts_with("struct ") || e == "a map" => "a table".into(),
        e => e.into(),
    }
}

/// For a section whose fields depend on its `type` (source, sinks, query, window), the section's
/// description, its type and the fields that type takes.
fn typed_fields<'a>(
    root: &'a toml::Value,
    section: &[Step],
) -> Option<(&'static str, &'a str, &'static [&'static str])> {
    let kind = lookup(root, section)?.get("type")?.as_str()?;
    let (what, fields) = match path_string(section).as_str() {
        "source" => ("source type", super::source::fields_of(kind)?),
        "sink" | "late_sink" | "dead_letter" => ("sink type", super::sink::fields_of(kind)?),
        "query" => ("query type", super::query::fields_of(kind)?),
        "query.window" => ("window type", super::query::window_fields_of(kind)?),
        _ => return None,
    };
    Some((what, kind, fields))
}
