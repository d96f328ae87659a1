//! Static tables (`[[table]]`, PIPELINE.md "Several sources, static tables, expressions and
//! SQL"): a file or a folder of JSON / CSV line files read whole, through [`FilesSource`] (the
//! same visibility rules, `.gz`, CSV headers and multi-line quoted fields) and the engine's
//! decoders, and re-read when its files change (SEMANTICS.md "Joins").

use std::path::{Path, PathBuf};
use std::time::{Instant, SystemTime};

use eddy_engine::Record;
use eddy_engine::decode::{CsvDecoder, Decoder, DecoderConfig, JsonDecoder};
use eddy_engine::spec::{Format, OnUnreadableFile, TableSpec};

use super::{FilesSource, is_hidden};
use crate::{ConnectorError, Payload, Poll, Position, Source};

/// What the table's files are: each visible file's name, length and modification time, in name
/// order. Two equal versions are taken as the same content.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TableVersion(Vec<(PathBuf, u64, Option<SystemTime>)>);

impl TableVersion {
    /// The table's total size in bytes (as stored: a `.gz` file by its compressed length).
    pub fn bytes(&self) -> u64 {
        self.0.iter().map(|(_, len, _)| len).sum()
    }
}

/// A table as read: its records in file and line order, and where they were read.
#[derive(Debug, Default)]
pub struct TableRows {
    /// The records, in file and line order.
    pub records: Vec<Record>,
    /// Where each record was read.
    pub positions: RowPositions,
}

/// Where the rows of a table were read, kept compactly: one entry for each item of the files
/// source (a run of lines, or one line), not one for each row.
#[derive(Debug, Default)]
pub struct RowPositions {
    /// `(row, position)` in row order: the rows from `row` on were read from `position` on.
    starts: Vec<(usize, Position)>,
    /// The rows.
    rows: usize,
}

impl RowPositions {
    /// Where row `row` (from 0) was read: its file and line; `None` past the rows.
    pub fn position_of(&self, row: usize) -> Option<Position> {
        if row >= self.rows {
            return None;
        }
        let i = self.starts.partition_point(|(start, _)| *start <= row).checked_sub(1)?;
        let (start, position) = &self.starts[i];
        Some(if row == *start { position.clone() } else { position.line_of_run(row - start) })
    }
}

/// Lists the table at `path` (a file, or a folder whose visible files are read).
///
/// # Errors
/// [`ConnectorError::Io`] naming the path when it cannot be listed or is missing.
pub fn table_version(path: &Path) -> Result<TableVersion, ConnectorError> {
    let io = |what: String| move |source| ConnectorError::Io { what, source };
    let meta = std::fs::metadata(path).map_err(io(format!("reading table {}", path.display())))?;
    let mut files = Vec::new();
    if meta.is_file() {
        files.push((path.to_path_buf(), meta.len(), meta.modified().ok()));
    } else {
        for entry in std::fs::read_dir(path).map_err(io(format!("listing table folder {}", path.display())))? {
            let entry = entry.map_err(io(format!("listing table folder {}", path.display())))?;
            if is_hidden(&entry.file_name().to_string_lossy()) {
                continue;
            }
            let p = entry.path();
            let m = std::fs::metadata(&p).map_err(io(format!("reading table file {}", p.display())))?;
            if m.is_file() {
                files.push((p, m.len(), m.modified().ok()));
            }
        }
        files.sort();
    }
    Ok(TableVersion(files))
}

/// Reads the whole table of `spec`: its records in file and line order, and the version read.
///
/// # Errors
/// [`ConnectorError::Io`] naming the path when it cannot be read; [`ConnectorError::Config`]
/// naming the path when the table's files hold more than `max_bytes` bytes (checked before
/// reading), or a line that cannot be decoded (the file and line, and why), or a record longer
/// than `max_bytes`. Spark's reader (PERMISSIVE mode) would read a line that cannot be decoded
/// as nulls; a table refuses it instead, so that a typo does not silently stop rows matching.
pub fn read_table(spec: &TableSpec) -> Result<(TableRows, TableVersion), ConnectorError> {
    let version = table_version(&spec.path)?;
    if version.bytes() > spec.max_bytes {
        return Err(ConnectorError::Config(format!(
            "table {} at {}: {} bytes, more than its max_bytes {} (raise max_bytes, or make the table smaller)",
            spec.name,
            spec.path.display(),
            version.bytes(),
            spec.max_bytes
        )));
    }
    let csv = spec.format == Format::Csv;
    let mut files = FilesSource::new(&spec.path, usize::MAX, false, csv)?
        .with_max_record_bytes(spec.max_bytes)
        .with_on_unreadable_file(OnUnreadableFile::Fail);
    let cfg = DecoderConfig::all_columns(spec.schema.clone());
    let mut decoder = match spec.format {
        Format::Json => Decoder::Json(JsonDecoder::new(cfg)),
        Format::Csv => Decoder::Csv(CsvDecoder::awaiting_header(cfg)),
    };
    let mut items = Vec::new();
    let mut records = Vec::new();
    let mut starts = Vec::new();
    let bad = |position: &dyn std::fmt::Display, why: String| {
        ConnectorError::Config(format!("table {} at {}: {position}: {why}", spec.name, spec.path.display()))
    };
    loop {
        items.clear();
        let poll = files.poll(&mut items, 4096, std::time::Duration::ZERO)?;
        for item in items.drain(..) {
            if !matches!(item.payload, Payload::Header(_)) {
                starts.push((records.len(), item.position.clone()));
            }
            match item.payload {
                Payload::Raw(line) => {
                    records.push(decoder.decode(&line).map_err(|e| bad(&item.position, e.to_string()))?)
                }
                Payload::Line(line) => {
                    records.push(decoder.decode(line.bytes()).map_err(|e| bad(&item.position, e.to_string()))?)
                }
                Payload::Lines(lines) => {
                    for k in 0..lines.len() {
                        let record = decoder.decode(lines.line(k));
                        records.push(record.map_err(|e| bad(&item.position.line_of_run(k), e.to_string()))?);
                    }
                }
                Payload::Record(r) => records.push(r),
                Payload::Header(h) => {
                    if let Decoder::Csv(d) = &mut decoder {
                        d.set_header(&h).map_err(|e| bad(&item.position, e.to_string()))?;
                    }
                }
                Payload::Rejected(r) => return Err(bad(&item.position, r.reason())),
            }
        }
        if poll == Poll::Exhausted {
            break;
        }
    }
    let positions = RowPositions { starts, rows: records.len() };
    Ok((TableRows { records, positions }, version))
}

/// A table's files watched for a change, checked every `refresh`.
#[derive(Debug)]
pub struct TableWatch {
    spec: TableSpec,
    version: TableVersion,
    next_check: Instant,
}

impl TableWatch {
    /// Watches the table of `spec`, read at `version` (by [`read_table`]).
    pub fn new(spec: TableSpec, version: TableVersion) -> TableWatch {
        let next_check = Instant::now() + refresh_of(&spec);
        TableWatch { spec, version, next_check }
    }

    /// The table's spec.
    pub fn spec(&self) -> &TableSpec {
        &self.spec
    }

    /// When `refresh` has passed since the last check: lists the files, and when they changed
    /// reads the table again and returns its records. `None` when it is not time yet or nothing
    /// changed. A failed listing or read is returned (the caller keeps the old version and logs
    /// it); the failed version is not tried again until the files change once more.
    ///
    /// # Errors
    /// As [`read_table`].
    pub fn poll(&mut self, now: Instant) -> Option<Result<TableRows, ConnectorError>> {
        if now < self.next_check {
            return None;
        }
        self.next_check = now + refresh_of(&self.spec);
        let listed = match table_version(&self.spec.path) {
            Ok(v) => v,
            Err(e) => return Some(Err(e)),
        };
        if listed == self.version {
            return None;
        }
        self.version = listed;
        Some(read_table(&self.spec).map(|(rows, version)| {
            self.version = version;
            rows
        }))
    }
}

fn refresh_of(spec: &TableSpec) -> std::time::Duration {
    std::time::Duration::from_micros(spec.refresh.0.max(1) as u64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use eddy_engine::Value;
    use eddy_engine::schema::Schema;
    use eddy_engine::time::Duration;

    fn spec(path: &Path, format: Format, max_bytes: u64) -> TableSpec {
        TableSpec {
            name: "prices".into(),
            path: path.to_path_buf(),
            format,
            schema: Schema::parse_ddl("sku STRING, price DOUBLE").unwrap(),
            refresh: Duration(1),
            max_bytes,
        }
    }

    #[test]
    fn a_csv_table_is_read_whole_under_its_header() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("prices.csv");
        std::fs::write(&path, "price,sku\n2.5,A\n10,B\n").unwrap();
        let (read, _) = read_table(&spec(&path, Format::Csv, 1 << 20)).unwrap();
        // the header is line 1
        assert_eq!(read.positions.position_of(1).map(|p| p.to_string()).as_deref(), Some("prices.csv:3"));
        let rows: Vec<Vec<Value>> = read.records.into_iter().map(|r| r.values.into_vec()).collect();
        assert_eq!(
            rows,
            vec![vec![Value::Str("A".into()), Value::Double(2.5)], vec![Value::Str("B".into()), Value::Double(10.0)]]
        );
    }

    #[test]
    fn a_json_folder_is_read_in_name_order_without_hidden_files() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("b.json"), "{\"sku\": \"B\", \"price\": 1}\n").unwrap();
        std::fs::write(dir.path().join("a.json"), "{\"sku\": \"A\", \"price\": 2}\n").unwrap();
        std::fs::write(dir.path().join("_hidden.json"), "{\"sku\": \"H\", \"price\": 3}\n").unwrap();
        std::fs::write(dir.path().join("c.json"), "{\"sku\": \"C\", \"price\": 1}\n\n{\"sku\": \"D\", \"price\": 1}\n")
            .unwrap();
        let (read, _) = read_table(&spec(dir.path(), Format::Json, 1 << 20)).unwrap();
        // each row's own file and line (a blank line is no row)
        let at: Vec<String> = (0..4).filter_map(|i| read.positions.position_of(i)).map(|p| p.to_string()).collect();
        assert_eq!(at, ["a.json:1", "b.json:1", "c.json:1", "c.json:3"]);
        assert!(read.positions.position_of(4).is_none());
        let skus: Vec<Value> = read.records.into_iter().map(|r| r.values[0].clone()).collect();
        assert_eq!(skus, ["A", "B", "C", "D"].map(|s| Value::Str(s.into())));
    }

    #[test]
    fn a_table_larger_than_max_bytes_is_refused_naming_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("prices.json");
        std::fs::write(&path, "{\"sku\": \"A\", \"price\": 2}\n").unwrap();
        let e = read_table(&spec(&path, Format::Json, 10)).unwrap_err().to_string();
        assert!(e.contains("max_bytes 10") && e.contains("prices.json"), "{e}");
    }

    #[test]
    fn a_missing_table_or_a_bad_line_is_an_error_naming_the_path() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("none.json");
        let e = read_table(&spec(&missing, Format::Json, 1 << 20)).unwrap_err().to_string();
        assert!(e.contains("none.json"), "{e}");
        let path = dir.path().join("bad.json");
        std::fs::write(&path, "{\"sku\": \"A\", \"price\": \"x\"}\n").unwrap();
        let e = read_table(&spec(&path, Format::Json, 1 << 20)).unwrap_err().to_string();
        assert!(e.contains("bad.json"), "{e}");
    }

    #[test]
    fn a_watched_table_is_read_again_only_when_its_files_change() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("prices.json");
        std::fs::write(&path, "{\"sku\": \"A\", \"price\": 2}\n").unwrap();
        let s = spec(&path, Format::Json, 1 << 20);
        let (_, version) = read_table(&s).unwrap();
        let mut watch = TableWatch::new(s, version);
        let later = Instant::now() + std::time::Duration::from_secs(1);
        assert!(watch.poll(later).is_none(), "unchanged files are not read again");
        std::fs::write(&path, "{\"sku\": \"A\", \"price\": 2}\n{\"sku\": \"B\", \"price\": 3}\n").unwrap();
        let read = watch.poll(later + std::time::Duration::from_secs(1)).expect("a change").unwrap();
        assert_eq!(read.records.len(), 2);
        std::fs::write(&path, "{\"sku\": \"A\", \"price\": \"x\"}\n").unwrap();
        let failed = watch.poll(later + std::time::Duration::from_secs(2)).expect("a change");
        assert!(failed.is_err());
        assert!(watch.poll(later + std::time::Duration::from_secs(3)).is_none(), "a failed version is not retried");
    }
}
