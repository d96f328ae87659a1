//! `[[table]]` validation: static tables for stream-static joins (PIPELINE.md "Several sources,
//! static tables, expressions and SQL"; SEMANTICS.md "Joins").

use std::path::PathBuf;

use super::error::SpecError;
use super::model::RawTable;
use super::source::{ddl_schema, non_empty};
use super::validate::{Min, choice, duration};
use super::{Format, TableSpec};
use crate::time::Duration;

/// Default of a table's `refresh`: 1 minute, in µs.
pub const DEFAULT_TABLE_REFRESH_US: i64 = 60_000_000;

/// Default of a table's `max_bytes`: 256 MiB.
pub const DEFAULT_TABLE_MAX_BYTES: u64 = 256 * 1024 * 1024;

/// Validates every `[[table]]`, in order; `source` is the source's name, which no table may take.
pub(crate) fn tables(raw: Option<Vec<RawTable>>, source: &str) -> Result<Vec<TableSpec>, SpecError> {
    let mut out: Vec<TableSpec> = Vec::new();
    for (i, t) in raw.unwrap_or_default().into_iter().enumerate() {
        let spec = table(&format!("table[{i}]"), t)?;
        if spec.name.eq_ignore_ascii_case(source) {
            return Err(SpecError::bad_str(
                format!("table[{i}].name"),
                &spec.name,
                "a name that no source and no other table has",
            ));
        }
        if out.iter().any(|o| o.name.eq_ignore_ascii_case(&spec.name)) {
            return Err(SpecError::bad_str(
                format!("table[{i}].name"),
                &spec.name,
                "a name that no source and no other table has",
            ));
        }
        out.push(spec);
    }
    Ok(out)
}

fn table(at: &str, raw: RawTable) -> Result<TableSpec, SpecError> {
    let field = |f: &str| format!("{at}.{f}");
    let name = raw.name.ok_or_else(|| SpecError::missing(field("name"), "a name matching [a-z_][a-z0-9_]*"))?;
    let named = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_';
    if !name.starts_with(|c: char| c.is_ascii_lowercase() || c == '_') || !name.chars().all(named) {
        return Err(SpecError::bad_str(field("name"), &name, "a name matching [a-z_][a-z0-9_]*"));
    }
    let kind = raw.kind.ok_or_else(|| SpecError::missing(field("type"), "\"files\""))?;
    choice(&field("type"), &kind, &["files"])?;
    let path = non_empty(&field("path"), raw.path, "a file or folder path (relative to the pipeline file)")?;
    let format = match raw.format.as_deref() {
        None => Format::Json,
        Some(f) => match choice(&field("format"), f, &["json", "csv"])? {
            "json" => Format::Json,
            _ => Format::Csv,
        },
    };
    let ddl = raw.schema.ok_or_else(|| {
        SpecError::missing(field("schema"), "Spark DDL: \"name TYPE, ...\" (e.g. \"sku STRING, price DOUBLE\")")
    })?;
    let schema = ddl_schema(&field("schema"), &ddl)?;
    let refresh = match raw.refresh.as_deref() {
        None => Duration(DEFAULT_TABLE_REFRESH_US),
        Some(r) => duration(&field("refresh"), r, Min::Positive)?,
    };
    let max_bytes = match raw.max_bytes {
        None => DEFAULT_TABLE_MAX_BYTES,
        Some(n) if n >= 1 => n as u64,
        Some(n) => {
            return Err(SpecError::new(
                field("max_bytes"),
                n.to_string(),
                format!("an integer >= 1 (bytes; default {DEFAULT_TABLE_MAX_BYTES}, 256 MiB)"),
            ));
        }
    };
    Ok(TableSpec { name, path: PathBuf::from(path), format, schema, refresh, max_bytes })
}
