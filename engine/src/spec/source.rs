//! `[source]` validation: source types, formats, schemas, Kafka and Nexmark options.

use std::collections::BTreeMap;
use std::path::PathBuf;

use super::error::{SpecError, quote};
use super::model::RawSource;
use super::parse::render;
use super::validate::{Min, Present, Show, choice, duration, note, only_fields};
use super::{
    DEFAULT_MAX_RECORD_BYTES, DEFAULT_PARTIAL_LINE_TIMEOUT_US, Format, NexmarkTable, OnUnreadableFile, SourceKind,
    SourceSpec, StartingOffsets,
};
use crate::schema::Schema;
use crate::time::{Duration, TimeUnit};

const SOURCE_TYPES: &[&str] = &["files", "stdin", "kafka", "nexmark"];
const FILES_FIELDS: &[&str] = &[
    "type",
    "path",
    "max_files_per_trigger",
    "follow",
    "partial_line_timeout",
    "on_unreadable_file",
    "max_record_bytes",
    "format",
    "schema",
    "timestamp_unit",
];
const STDIN_FIELDS: &[&str] = &["type", "max_record_bytes", "format", "schema", "timestamp_unit"];
const KAFKA_SOURCE_FIELDS: &[&str] = &[
    "type",
    "bootstrap_servers",
    "topic",
    "topics",
    "group_id",
    "starting_offsets",
    "properties",
    "shared_group",
    "format",
    "schema",
    "timestamp_unit",
];
const NEXMARK_FIELDS: &[&str] = &["type", "table", "events", "rate", "seed"];

/// The fields a source of type `kind` takes; `None` for an unknown type.
pub(crate) fn fields_of(kind: &str) -> Option<&'static [&'static str]> {
    Some(match kind {
        "files" => FILES_FIELDS,
        "stdin" => STDIN_FIELDS,
        "kafka" => KAFKA_SOURCE_FIELDS,
        "nexmark" => NEXMARK_FIELDS,
        _ => return None,
    })
}

pub(crate) fn source(raw: Option<RawSource>, pipeline_name: &str) -> Result<SourceSpec, SpecError> {
    let Some(raw) = raw else {
        return Err(SpecError::missing(
            "source",
            "a [source] table with type = \"files\", \"stdin\", \"kafka\" or \"nexmark\"",
        ));
    };
    let kind = raw
        .kind
        .clone()
        .ok_or_else(|| SpecError::missing("source.type", "\"files\", \"stdin\", \"kafka\", \"nexmark\""))?;
    let kind_str = choice("source.type", &kind, SOURCE_TYPES)?;
    let mut present = Present::new();
    note(&mut present, "format", &raw.format);
    note(&mut present, "schema", &raw.schema);
    note(&mut present, "timestamp_unit", &raw.timestamp_unit);
    note(&mut present, "path", &raw.path);
    note(&mut present, "max_files_per_trigger", &raw.max_files_per_trigger);
    note(&mut present, "follow", &raw.follow);
    note(&mut present, "partial_line_timeout", &raw.partial_line_timeout);
    note(&mut present, "on_unreadable_file", &raw.on_unreadable_file);
    note(&mut present, "max_record_bytes", &raw.max_record_bytes);
    note(&mut present, "bootstrap_servers", &raw.bootstrap_servers);
    note(&mut present, "topic", &raw.topic);
    note(&mut present, "topics", &raw.topics);
    note(&mut present, "group_id", &raw.group_id);
    note(&mut present, "starting_offsets", &raw.starting_offsets);
    note(&mut present, "properties", &raw.properties);
    note(&mut present, "shared_group", &raw.shared_group);
    note(&mut present, "table", &raw.table);
    note(&mut present, "events", &raw.events);
    note(&mut present, "rate", &raw.rate);
    note(&mut present, "seed", &raw.seed);
    let allowed = fields_of(kind_str).unwrap_or(NEXMARK_FIELDS);
    only_fields("source", "source type", kind_str, &present, allowed)?;

    if kind_str == "nexmark" {
        let table = match raw.table.as_deref() {
            None => NexmarkTable::Bid,
            Some(t) => match choice("source.table", t, &["bid", "auction", "person"])? {
                "bid" => NexmarkTable::Bid,
                "auction" => NexmarkTable::Auction,
                _ => NexmarkTable::Person,
            },
        };
        let events = match raw.events {
            None => None,
            Some(n) if n >= 0 => Some(n as u64),
            Some(n) => {
                return Err(SpecError::new("source.events", n.to_string(), "an integer >= 0 (default: unbounded)"));
            }
        };
        let rate = match raw.rate {
            None => None,
            Some(r) if r.is_finite() && r > 0.0 => Some(r),
            Some(r) => {
                return Err(SpecError::new(
                    "source.rate",
                    r.show(),
                    "a number of events per second > 0 (default: unbounded)",
                ));
            }
        };
        let seed = match raw.seed {
            None => 0,
            Some(s) if s >= 0 => s as u64,
            Some(s) => {
                return Err(SpecError::new("source.seed", s.to_string(), "an integer >= 0 (default 0)"));
            }
        };
        return Ok(SourceSpec {
            kind: SourceKind::Nexmark { table, events, rate, seed },
            format: Format::Json,
            schema: table.schema(),
            timestamp_unit: TimeUnit::Ms,
            max_record_bytes: DEFAULT_MAX_RECORD_BYTES,
        });
    }

    let format = match raw.format.as_deref() {
        None => Format::Json,
        Some(f) => match choice("source.format", f, &["json", "csv"])? {
            "json" => Format::Json,
            _ => Format::Csv,
        },
    };
    let ddl = raw.schema.as_deref().ok_or_else(|| {
        SpecError::missing(
            "source.schema",
            "Spark DDL: \"name TYPE, ...\" (e.g. \"user_id STRING, revenue DOUBLE, event_time TIMESTAMP\")",
        )
    })?;
    let schema = ddl_schema("source.schema", ddl)?;
    let timestamp_unit = match raw.timestamp_unit.as_deref() {
        None => TimeUnit::Ms,
        Some(u) => match choice("source.timestamp_unit", u, &["ms", "us", "s"])? {
            "ms" => TimeUnit::Ms,
            "us" => TimeUnit::Us,
            _ => TimeUnit::S,
        },
    };
    let kind = match kind_str {
        "files" => {
            let path = raw
                .path
                .ok_or_else(|| SpecError::missing("source.path", "a folder path (relative to the pipeline file)"))?;
            if path.is_empty() {
                return Err(SpecError::bad_str("source.path", &path, "a folder path (relative to the pipeline file)"));
            }
            let max_files_per_trigger = match raw.max_files_per_trigger {
                None => 1,
                Some(n) if n >= 1 => n as usize,
                Some(n) => {
                    return Err(SpecError::new(
                        "source.max_files_per_trigger",
                        n.to_string(),
                        "an integer >= 1 (default 1)",
                    ));
                }
            };
            let partial_line_timeout = match raw.partial_line_timeout.as_deref() {
                None => Duration(DEFAULT_PARTIAL_LINE_TIMEOUT_US),
                Some(t) => duration("source.partial_line_timeout", t, Min::Positive)?,
            };
            let on_unreadable_file = match raw.on_unreadable_file.as_deref() {
                None => OnUnreadableFile::DeadLetter,
                Some(o) => match choice("source.on_unreadable_file", o, &["dead_letter", "fail"])? {
                    "fail" => OnUnreadableFile::Fail,
                    _ => OnUnreadableFile::DeadLetter,
                },
            };
            SourceKind::Files {
                path: PathBuf::from(path),
                max_files_per_trigger,
                follow: raw.follow.unwrap_or(false),
                partial_line_timeout,
                on_unreadable_file,
            }
        }
        "stdin" => SourceKind::Stdin,
        _ => {
            let bootstrap_servers =
                non_empty("source.bootstrap_servers", raw.bootstrap_servers, "host:port[,host:port...]")?;
            let topics = match (raw.topic, raw.topics) {
                (Some(_), Some(ts)) => {
                    return Err(SpecError::new("source.topics", ts.show(), "either topic or topics, not both"));
                }
                (None, None) => {
                    return Err(SpecError::missing("source.topic", "a topic name (or topics = [...])"));
                }
                (Some(t), None) => vec![non_empty("source.topic", Some(t), "a topic name")?],
                (None, Some(ts)) => {
                    if ts.is_empty() {
                        return Err(SpecError::new("source.topics", "[]", "a non-empty list of topic names"));
                    }
                    for (i, t) in ts.iter().enumerate() {
                        if t.is_empty() {
                            return Err(SpecError::bad_str(format!("source.topics[{i}]"), t, "a topic name"));
                        }
                    }
                    ts
                }
            };
            let group_id = match raw.group_id {
                None => pipeline_name.to_string(),
                Some(g) => non_empty("source.group_id", Some(g), "a consumer group id (default: the pipeline name)")?,
            };
            let starting_offsets = match raw.starting_offsets.as_deref() {
                None => StartingOffsets::Latest,
                Some(s) => match choice("source.starting_offsets", s, &["earliest", "latest"])? {
                    "earliest" => StartingOffsets::Earliest,
                    _ => StartingOffsets::Latest,
                },
            };
            let properties = properties("source.properties", raw.properties)?;
            let shared_group = raw.shared_group.unwrap_or(false);
            SourceKind::Kafka { bootstrap_servers, topics, group_id, starting_offsets, properties, shared_group }
        }
    };
    let max_record_bytes = match raw.max_record_bytes {
        None => DEFAULT_MAX_RECORD_BYTES,
        Some(n) if n >= 1 => n as u64,
        Some(n) => {
            return Err(SpecError::new(
                "source.max_record_bytes",
                n.to_string(),
                format!("an integer >= 1 (bytes; default {DEFAULT_MAX_RECORD_BYTES}, 16 MiB)"),
            ));
        }
    };
    Ok(SourceSpec { kind, format, schema, timestamp_unit, max_record_bytes })
}

/// The schema of the Spark DDL `ddl` given at `field`.
pub(crate) fn ddl_schema(field: &str, ddl: &str) -> Result<Schema, SpecError> {
    Schema::parse_ddl(ddl).map_err(|e| {
        let crate::schema::SchemaError::Ddl { why, .. } = e;
        SpecError::new(
            field,
            format!("{} ({why})", quote(ddl)),
            "Spark DDL \"name TYPE, ...\" (no colon), names of letters, digits and _ or in backticks, distinct ignoring case, types STRING, BIGINT/LONG, INT, DOUBLE, FLOAT, BOOLEAN, TIMESTAMP, DATE, DECIMAL(p, s) with p <= 38",
        )
    })
}

pub(crate) fn non_empty(field: &str, v: Option<String>, what: &str) -> Result<String, SpecError> {
    match v {
        None => Err(SpecError::missing(field, what)),
        Some(s) if s.trim().is_empty() => Err(SpecError::bad_str(field, &s, what)),
        Some(s) => Ok(s),
    }
}

/// librdkafka settings: strings, integers, floats and booleans (written as strings).
pub(crate) fn properties(
    field: &str,
    raw: Option<BTreeMap<String, toml::Value>>,
) -> Result<BTreeMap<String, String>, SpecError> {
    let mut out = BTreeMap::new();
    for (k, v) in raw.unwrap_or_default() {
        let s = match &v {
            toml::Value::String(s) => s.clone(),
            toml::Value::Integer(i) => i.to_string(),
            toml::Value::Float(f) => f.to_string(),
            toml::Value::Boolean(b) => b.to_string(),
            other => {
                return Err(SpecError::new(
                    format!("{field}.{k}"),
                    render(other),
                    "a string, number or boolean (a librdkafka setting)",
                ));
            }
        };
        out.insert(k, s);
    }
    Ok(out)
}
