//! `[sink]`, `[late_sink]`, `[dead_letter]` validation.

use std::path::PathBuf;

use super::SinkSpec;
use super::error::{SpecError, list};
use super::model::RawSink;
use super::source::{non_empty, properties};
use super::validate::{Present, Show, choice, note, only_fields, same_column};
use crate::schema::{DataType, Schema};

const SINK_TYPES: &[&str] = &["files", "stdout", "kafka"];

/// The fields a sink of type `kind` takes; `None` for an unknown type.
pub(crate) fn fields_of(kind: &str) -> Option<&'static [&'static str]> {
    Some(match kind {
        "files" => &["type", "path", "format"],
        "stdout" => &["type", "format"],
        "kafka" => &["type", "bootstrap_servers", "topic", "key", "properties", "exactly_once", "format"],
        _ => return None,
    })
}

pub(crate) fn sink_spec(
    section: &str,
    raw: RawSink,
    key_columns: &[&str],
    key_what: &str,
) -> Result<SinkSpec, SpecError> {
    let kind = raw
        .kind
        .clone()
        .ok_or_else(|| SpecError::missing(format!("{section}.type"), "\"files\", \"stdout\", \"kafka\""))?;
    let kind = choice(&format!("{section}.type"), &kind, SINK_TYPES)?;
    let mut present = Present::new();
    note(&mut present, "format", &raw.format);
    note(&mut present, "path", &raw.path);
    note(&mut present, "bootstrap_servers", &raw.bootstrap_servers);
    note(&mut present, "topic", &raw.topic);
    note(&mut present, "key", &raw.key);
    note(&mut present, "properties", &raw.properties);
    note(&mut present, "exactly_once", &raw.exactly_once);
    let allowed = fields_of(kind).unwrap_or(&["type"]);
    only_fields(section, "sink type", kind, &present, allowed)?;
    if let Some(f) = &raw.format {
        choice(&format!("{section}.format"), f, &["json"])?;
    }
    Ok(match kind {
        "files" => {
            let path =
                non_empty(&format!("{section}.path"), raw.path, "a folder path (relative to the pipeline file)")?;
            SinkSpec::Files { path: PathBuf::from(path) }
        }
        "stdout" => SinkSpec::Stdout,
        _ => {
            let bootstrap_servers =
                non_empty(&format!("{section}.bootstrap_servers"), raw.bootstrap_servers, "host:port[,host:port...]")?;
            let topic = non_empty(&format!("{section}.topic"), raw.topic, "a topic name")?;
            // Each key names an output column ignoring case (as Spark resolves names); it is kept
            // in the output column's spelling.
            let mut key = raw.key.unwrap_or_default();
            for i in 0..key.len() {
                let at = format!("{section}.key[{i}]");
                let k = &key[i];
                let Some(column) = key_columns.iter().find(|c| same_column(c, k)) else {
                    return Err(SpecError::bad_str(at, k, format!("{key_what}: {}", list(key_columns))));
                };
                if key[..i].iter().any(|earlier| same_column(earlier, column)) {
                    return Err(SpecError::bad_str(at, k, "each column once (names match ignoring case)"));
                }
                key[i] = column.to_string();
            }
            let properties = properties(&format!("{section}.properties"), raw.properties)?;
            SinkSpec::Kafka {
                bootstrap_servers,
                topic,
                key,
                properties,
                exactly_once: raw.exactly_once.unwrap_or(false),
            }
        }
    })
}

/// The main Kafka sink's message columns (PIPELINE.md, as Spark's Kafka sink): after the sink's
/// `select`, a `value` column is the message value and a `key` column the message key; both must
/// be STRING, and a `key` column excludes a `key` list. Names match ignoring case.
///
/// # Errors
/// A [`SpecError`] at `sink.select` for a `value` or `key` column of another type, at `sink.key`
/// for a `key` list beside a `key` column.
pub(crate) fn kafka_columns(key_list: &[String], output: &Schema) -> Result<(), SpecError> {
    for column in ["value", "key"] {
        let Some(i) = output.fields().iter().position(|f| same_column(&f.name, column)) else {
            continue;
        };
        let f = &output.fields()[i];
        if f.data_type != DataType::String {
            return Err(SpecError::new(
                "sink.select",
                format!("a `{}` column of type {}", f.name, f.data_type),
                format!(
                    "a STRING `{column}` column (the message {column} as it is; cast it, or name it otherwise to have it in the row's JSON)"
                ),
            ));
        }
        if column == "key" && !key_list.is_empty() {
            return Err(SpecError::new(
                "sink.key",
                format!("{} beside a `key` output column", Show::show(&key_list.to_vec())),
                "either a `key` column (the message key as it is) or a `key` list (the JSON of its columns), not both",
            ));
        }
    }
    Ok(())
}
