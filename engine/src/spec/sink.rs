//! `[sink]`, `[late_sink]`, `[dead_letter]` validation.

use std::path::{Path, PathBuf};

use super::error::{SpecError, list};
use super::model::RawSink;
use super::source::{non_empty, properties};
use super::validate::{Present, Show, choice, note, only_fields, same_column};
use super::{OutputMode, QuerySpec, SinkSpec};
use crate::schema::{DataType, Field, Schema};

const SINK_TYPES: &[&str] = &["files", "stdout", "kafka", "delta", "foreach"];

/// The fields a sink of type `kind` takes; `None` for an unknown type.
pub(crate) fn fields_of(kind: &str) -> Option<&'static [&'static str]> {
    Some(match kind {
        "files" => &["type", "path", "format"],
        "stdout" => &["type", "format"],
        "kafka" => &["type", "bootstrap_servers", "topic", "key", "properties", "exactly_once", "format"],
        "delta" => &["type", "path", "partition_by"],
        "foreach" => &["type", "name"],
        _ => return None,
    })
}

pub(crate) fn sink_spec(
    section: &str,
    raw: RawSink,
    key_columns: &[&str],
    key_what: &str,
) -> Result<SinkSpec, SpecError> {
    let kind = raw.kind.clone().ok_or_else(|| {
        SpecError::missing(format!("{section}.type"), "\"files\", \"stdout\", \"kafka\", \"delta\", \"foreach\"")
    })?;
    let kind = choice(&format!("{section}.type"), &kind, SINK_TYPES)?;
    let mut present = Present::new();
    note(&mut present, "format", &raw.format);
    note(&mut present, "path", &raw.path);
    note(&mut present, "bootstrap_servers", &raw.bootstrap_servers);
    note(&mut present, "topic", &raw.topic);
    note(&mut present, "key", &raw.key);
    note(&mut present, "properties", &raw.properties);
    note(&mut present, "exactly_once", &raw.exactly_once);
    note(&mut present, "partition_by", &raw.partition_by);
    note(&mut present, "name", &raw.name);
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
        "foreach" if section != "sink" => {
            return Err(SpecError::bad_str(
                format!("{section}.type"),
                "foreach",
                "\"files\", \"stdout\", \"kafka\", \"delta\" (a forEach writer takes the main [sink]'s rows only)",
            ));
        }
        "foreach" => SinkSpec::Foreach {
            name: non_empty(&format!("{section}.name"), raw.name, "the name a forEach writer is registered under")?,
        },
        "delta" => {
            let path = non_empty(
                &format!("{section}.path"),
                raw.path,
                "a folder path for the Delta table (relative to the pipeline file)",
            )?;
            // PIPELINE.md allows an object-store URL: `s3://bucket/prefix`.
            check_object_store_url(&format!("{section}.path"), &path)?;
            let partition_by = raw.partition_by.unwrap_or_default();
            let partition_by =
                resolve_columns(&format!("{section}.partition_by"), partition_by, key_columns, key_what)?;
            SinkSpec::Delta { path: PathBuf::from(path), partition_by }
        }
        _ => {
            let bootstrap_servers =
                non_empty(&format!("{section}.bootstrap_servers"), raw.bootstrap_servers, "host:port[,host:port...]")?;
            let topic = non_empty(&format!("{section}.topic"), raw.topic, "a topic name")?;
            // Each key names an output column ignoring case (as Spark resolves names); it is kept
            // in the output column's spelling.
            let key = resolve_columns(&format!("{section}.key"), raw.key.unwrap_or_default(), key_columns, key_what)?;
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

/// Resolves `given` (the list at `field`) against `columns`: each names a column ignoring case (as
/// Spark resolves names) and is kept in the column's spelling; each column at most once.
///
/// # Errors
/// A [`SpecError`] at `field[i]` for a name that is no column (`what`: the kind of column
/// expected) or that names a column a second time.
fn resolve_columns(
    field: &str,
    mut given: Vec<String>,
    columns: &[&str],
    what: &str,
) -> Result<Vec<String>, SpecError> {
    for i in 0..given.len() {
        let at = format!("{field}[{i}]");
        let k = &given[i];
        let Some(column) = columns.iter().find(|c| same_column(c, k)) else {
            return Err(SpecError::bad_str(at, k, format!("{what}: {}", list(columns))));
        };
        if given[..i].iter().any(|earlier| same_column(earlier, column)) {
            return Err(SpecError::bad_str(at, k, "each column once (names match ignoring case)"));
        }
        given[i] = column.to_string();
    }
    Ok(given)
}

/// The Delta sink's checks that need the query (PIPELINE.md "Delta Lake sink"): with `query`
/// (the main sink; the late and dead-letter sinks append records), the `update` output mode is
/// refused, as Spark's Delta sink refuses it (a row would be appended again at
/// each change of its window); a partition column must be of a scalar type (Delta partition
/// values are strings of scalars).
///
/// # Errors
/// A [`SpecError`] at `query.output_mode` for a window aggregate in update mode, at
/// `{section}.type` for a rolling window (update mode only), at `{section}.partition_by[i]` for a
/// column of a non-scalar type.
pub(crate) fn delta_checks(
    section: &str,
    sink: &SinkSpec,
    query: Option<&QuerySpec>,
    columns: &[Field],
) -> Result<(), SpecError> {
    let SinkSpec::Delta { partition_by, .. } = sink else { return Ok(()) };
    const WHY: &str = "Spark's Delta sink refuses update mode: write update-mode results to a kafka or files sink";
    match query {
        Some(QuerySpec::WindowAggregate { output_mode: OutputMode::Update, .. }) => {
            return Err(SpecError::bad_str(
                "query.output_mode",
                "update",
                format!("\"append\" or \"complete\" with a delta {section} ({WHY})"),
            ));
        }
        Some(QuerySpec::RollingWindow { .. }) => {
            return Err(SpecError::bad_str(
                format!("{section}.type"),
                "delta",
                format!("\"files\", \"stdout\" or \"kafka\" for a rolling window, which emits in update mode ({WHY})"),
            ));
        }
        _ => {}
    }
    for (i, name) in partition_by.iter().enumerate() {
        let Some(f) = columns.iter().find(|f| &f.name == name) else { continue };
        if matches!(f.data_type, DataType::Window | DataType::Struct(_) | DataType::Array(_)) {
            return Err(SpecError::bad_str(
                format!("{section}.partition_by[{i}]"),
                name,
                "a column of a scalar type (a struct or array cannot be a Delta partition column)",
            ));
        }
    }
    Ok(())
}

/// The main Kafka sink's message columns (PIPELINE.md, as Spark's Kafka sink): after the sink's
/// `select`, a `value` column is the message value and a `key` column the message key; both must
/// be STRING, and a `key` column excludes a `key` list. Names match ignoring case.
///
/// `columns_from`: the field that named the output columns (`sink.select`, `query.sql`, `query`).
///
/// # Errors
/// A [`SpecError`] at `columns_from` for a `value` or `key` column of another type, at
/// `sink.key` for a `key` list beside a `key` column.
pub(crate) fn kafka_columns(key_list: &[String], output: &Schema, columns_from: &str) -> Result<(), SpecError> {
    for column in ["value", "key"] {
        let Some(i) = output.fields().iter().position(|f| same_column(&f.name, column)) else {
            continue;
        };
        let f = &output.fields()[i];
        if f.data_type != DataType::String {
            return Err(SpecError::new(
                columns_from,
                format!("a `{}` column of type {} for a Kafka sink", f.name, f.data_type),
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

/// Refuses a `path` (of `field`) that is a URL other than `s3://bucket[/prefix]` (an
/// S3-compatible store, configured by the `AWS_*` environment variables), rather than reading it
/// as a relative folder named `gs:`; a folder path passes.
///
/// # Errors
/// A [`SpecError`] at `field` for another scheme or a URL without a bucket.
pub(crate) fn check_object_store_url(field: &str, path: &str) -> Result<(), SpecError> {
    let Some(scheme) = url_scheme(Path::new(path)) else { return Ok(()) };
    let rest = &path[scheme.len() + 3..];
    let bucket = rest.split('/').next().unwrap_or("");
    if scheme != "s3" || bucket.is_empty() {
        return Err(SpecError::bad_str(
            field,
            path,
            format!(
                "a local folder path, or s3://bucket/prefix (an S3-compatible object store; \
                 other URLs such as gs://, az://, file:// are not supported; {scheme}://{} given)",
                if bucket.is_empty() { " without a bucket" } else { "" }
            ),
        ));
    }
    Ok(())
}

/// The scheme of `path` when it is a URL, `scheme://...` (a scheme of ASCII letters, digits and
/// `+-.`, starting with a letter), as a Delta sink's `path` may be (PIPELINE.md "Delta Lake
/// sink": `s3://bucket/prefix`); `None` for a folder path (`out/a:b` is a folder).
pub fn url_scheme(path: &Path) -> Option<&str> {
    let (scheme, _) = path.to_str()?.split_once("://")?;
    let mut chars = scheme.chars();
    (chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && chars.all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c)))
    .then_some(scheme)
}
