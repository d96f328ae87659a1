//! Input decoding: JSON lines and CSV to [`Record`]s, schema-driven, decoding only the columns
//! the query needs (PIPELINE.md "`[source]`").
//!
//! One line in, one [`Record`] out: always `schema.len()` values in schema order. A column the
//! query does not need ([`DecoderConfig::needed`] false) stays [`Value::Null`] and its text is
//! only skipped (still checked for syntax), never built. A column missing from the line is null;
//! fields that are not schema columns are ignored. A line that cannot be decoded is rejected with
//! a [`DecodeError`] saying which column, what was given and what was expected (the runtime sends
//! it to `[dead_letter]`); nothing here panics on input, whatever the bytes.
//!
//! The rules follow Spark's JSON reader with an explicit schema (`JacksonParser`, FAILFAST /
//! PERMISSIVE's "malformed record" cases), with the choices below made explicit:
//!
//! | column type | accepted JSON | malformed |
//! |---|---|---|
//! | STRING | a string; a number, `true` / `false`, an object or an array as its JSON text exactly as written (`-0`, `1.50`, `{ "a": [1] }`: Spark 4.3 copies the value's text) | a malformed nested value |
//! | BIGINT / INT | an integer without fraction or exponent, in range | `12.5`, `1e3`, `"12"`, overflow |
//! | DOUBLE / FLOAT | any JSON number (`12`, `1.5e3`; beyond the range: ±infinity as Jackson gives); the strings `"NaN"`, `"Infinity"`, `"+Infinity"`, `"+INF"`, `"-Infinity"`, `"-INF"` (Spark's `allowNonNumericNumbers`) | other strings, the bare literals `NaN` / `Infinity` (not JSON) |
//! | BOOLEAN | `true`, `false` | anything else, `"true"` included |
//! | TIMESTAMP | a string in RFC 3339 or `YYYY-MM-DD HH:MM:SS[.ffffff]`, or another form Spark's readers take (`2024-01-15`, `2024-1-5 1:2:3`, a `+0100` zone; see [`crate::time::parse_timestamp`]); a number in [`DecoderConfig::timestamp_unit`] (an integer exactly, a fraction rounded to µs) | an unparsable string, a number out of the i64 µs range |
//!
//! `null` is null for every type. Duplicate keys: the **last** occurrence wins (as Spark, which
//! writes each field into the row as it reads it), and every occurrence must be well typed.
//! A column listed in [`DecoderConfig::required`] (the event-time column) that is null or
//! missing makes the record malformed: "null event time column ts".
//!
//! The JSON decoder is a single pass over the bytes ([`JsonDecoder`]; [`Decoder::decode_into`]
//! also keeps the layout of the lines it reads, the bytes between their values, and reads a line
//! of the same layout by comparing those bytes, with the same result); the CSV decoder follows
//! RFC 4180 ([`CsvDecoder`]). Both validate UTF-8 first.

mod csv;
mod json;
mod json_fast;
mod json_layout;
mod json_number;
mod text;
mod time_form;

#[cfg(test)]
mod csv_tests;
#[cfg(test)]
mod json_props;
#[cfg(test)]
mod json_tests;

use serde::{Deserialize, Serialize};

pub use csv::CsvDecoder;
pub use json::JsonDecoder;

use crate::schema::{DataType, Schema};
use crate::time::TimeUnit;
use crate::value::{Record, Value};

/// Nesting limit for skipped JSON objects and arrays (the top-level object included), as
/// serde_json's default recursion limit. Deeper input is malformed ([`DecodeError::TooDeep`]).
pub const MAX_DEPTH: usize = 128;

/// At most this many bytes of a given text are quoted in an error (then `...`).
pub const MAX_QUOTED: usize = 64;

/// The input format of a source (`source.format`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Format {
    /// One JSON object per line / message (the default).
    #[default]
    Json,
    /// CSV (RFC 4180) with a header line naming the columns.
    Csv,
}

/// What to decode: the schema, which columns the query needs, which must be non-null, and the
/// unit of numeric timestamps.
#[derive(Clone, Debug, PartialEq)]
pub struct DecoderConfig {
    /// The source schema; records have exactly `schema.len()` values.
    pub schema: Schema,
    /// Per schema column: whether the query reads it. Must have `schema.len()` entries.
    /// Columns not needed are left null without being built.
    pub needed: Vec<bool>,
    /// Indexes of the columns that must be non-null (the event-time column); such a column is
    /// decoded even when `needed` says false. Each must be `< schema.len()`.
    pub required: Vec<usize>,
    /// Unit of numeric timestamps (`source.timestamp_unit`; milliseconds by default).
    pub timestamp_unit: TimeUnit,
}

impl DecoderConfig {
    /// Every column needed, none required, numeric timestamps in milliseconds.
    pub fn all_columns(schema: Schema) -> DecoderConfig {
        let n = schema.len();
        DecoderConfig { schema, needed: vec![true; n], required: Vec::new(), timestamp_unit: TimeUnit::Ms }
    }
}

/// Why a line could not be decoded. Texts quoted from the input are cut at [`MAX_QUOTED`]
/// bytes; offsets are byte offsets in the line as given.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum DecodeError {
    /// The bytes are not UTF-8.
    #[error("not UTF-8: invalid byte at offset {offset} (expected UTF-8 text)")]
    NotUtf8 {
        /// Offset of the first invalid byte.
        offset: usize,
    },
    /// The line is not valid JSON.
    #[error("not JSON at byte {offset}: {why} (near {near:?})")]
    NotJson {
        /// Where the syntax error is.
        offset: usize,
        /// What was expected there.
        why: &'static str,
        /// The text from `offset` on.
        near: String,
    },
    /// The line does not start with `{` (an array, a string, a number, or not JSON at all).
    #[error("not a JSON object: {given:?} (expected one JSON object per line)")]
    NotObject {
        /// The line.
        given: String,
    },
    /// Objects and arrays nested deeper than [`MAX_DEPTH`].
    #[error("JSON nested deeper than {limit} levels at byte {offset}")]
    TooDeep {
        /// Where the limit was passed.
        offset: usize,
        /// The limit ([`MAX_DEPTH`]).
        limit: usize,
    },
    /// A value of the wrong type for its column.
    #[error("column {column}: expected {expected}, got {given}: {why}")]
    WrongType {
        /// The column name.
        column: String,
        /// The column type.
        expected: DataType,
        /// The value as written.
        given: String,
        /// Why it does not fit.
        why: &'static str,
    },
    /// A number that does not fit the column type (INT, BIGINT, TIMESTAMP in µs).
    #[error("column {column}: {given} is out of range for {expected}")]
    OutOfRange {
        /// The column name.
        column: String,
        /// The column type.
        expected: DataType,
        /// The number as written.
        given: String,
    },
    /// A TIMESTAMP column given a string that is not a timestamp.
    #[error(
        "column {column}: bad timestamp {given:?}: {why} (expected RFC 3339 such as 2024-01-15T10:01:00Z, or YYYY-MM-DD HH:MM:SS[.ffffff] in UTC)"
    )]
    BadTimestamp {
        /// The column name.
        column: String,
        /// The string given.
        given: String,
        /// What is wrong with it.
        why: &'static str,
    },
    /// A required column (the event time) is null or missing.
    #[error("null event time column {column}")]
    NullRequired {
        /// The column name.
        column: String,
    },
    /// A CSV line that is not RFC 4180 (a stray quote, an unterminated quoted field).
    #[error("bad CSV at byte {offset}: {why} (near {near:?})")]
    NotCsv {
        /// Where the error is.
        offset: usize,
        /// What was expected there.
        why: &'static str,
        /// The text from `offset` on.
        near: String,
    },
    /// A CSV header that cannot be used.
    #[error("bad CSV header {given:?}: {why}")]
    BadHeader {
        /// The header line.
        given: String,
        /// What is wrong with it.
        why: String,
    },
}

/// A decoder of either format (see [`JsonDecoder`], [`CsvDecoder`]).
#[derive(Debug, Clone)]
pub enum Decoder {
    /// JSON lines.
    Json(JsonDecoder),
    /// CSV lines after the header.
    Csv(CsvDecoder),
}

impl Decoder {
    /// Decodes one line (a trailing `\n` or `\r\n` is allowed).
    ///
    /// # Errors
    /// See [`JsonDecoder::decode`] and [`CsvDecoder::decode`].
    pub fn decode(&self, line: &[u8]) -> Result<Record, DecodeError> {
        match self {
            Decoder::Json(d) => d.decode(line),
            Decoder::Csv(d) => d.decode(line),
        }
    }

    /// Decodes one line into `record`, overwriting its values in place when it has
    /// [`Decoder::width`] values (no allocation for columns of fixed size: a recycled record),
    /// else replacing it with a new record. On success `record` is exactly what
    /// [`Decoder::decode`] returns; on an error it holds some record of no meaning, still
    /// fit for the next call.
    ///
    /// `&mut`: a JSON decoder keeps the layout of the lines it reads and reads the next line of
    /// that layout without looking its keys up ([`JsonDecoder::decode_into`]); the result is the
    /// same as [`Decoder::decode`]'s, whatever lines came before.
    ///
    /// # Errors
    /// As [`Decoder::decode`].
    ///
    /// Inlined into the caller's loop: a line on the JSON layout path then costs one call, whose
    /// answer is a flag, not a `Result` written to memory.
    #[inline]
    pub fn decode_into(&mut self, line: &[u8], record: &mut Record) -> Result<(), DecodeError> {
        match self {
            Decoder::Json(d) => d.decode_into(line, record),
            Decoder::Csv(d) => d.decode_into(line, record),
        }
    }

    /// Values per record: one per schema column, then the spare slots
    /// (`with_spare_columns`). A record of this width is overwritten in place by
    /// [`Decoder::decode_into`].
    pub fn width(&self) -> usize {
        match self {
            Decoder::Json(d) => d.width(),
            Decoder::Csv(d) => d.width(),
        }
    }

    /// The format decoded.
    pub fn format(&self) -> Format {
        match self {
            Decoder::Json(_) => Format::Json,
            Decoder::Csv(_) => Format::Csv,
        }
    }
}

/// One schema column as the decoders see it.
#[derive(Clone, Debug)]
pub(crate) struct Column {
    pub(crate) name: Box<str>,
    pub(crate) ty: DataType,
    /// Needed by the query or required.
    pub(crate) decode: bool,
    /// The name holds no `"`, `\\` or control character: it appears in JSON exactly as is.
    pub(crate) plain_name: bool,
}

/// The checked, flattened [`DecoderConfig`] both decoders share.
#[derive(Clone, Debug)]
pub(crate) struct Plan {
    pub(crate) columns: Box<[Column]>,
    pub(crate) required: Box<[usize]>,
    pub(crate) unit: TimeUnit,
    /// NULL slots after the columns in every record (`with_spare_columns`).
    pub(crate) spare: usize,
}

impl Plan {
    /// Values per record: the columns, then the spare slots.
    pub(crate) fn width(&self) -> usize {
        self.columns.len() + self.spare
    }

    /// # Panics
    /// When `needed` does not have one entry per column or a `required` index is out of range:
    /// both come from the validated pipeline spec, so either is a bug, not bad input.
    pub(crate) fn new(cfg: DecoderConfig) -> Plan {
        let n = cfg.schema.len();
        assert_eq!(cfg.needed.len(), n, "DecoderConfig::needed must have one entry per schema column");
        for &r in &cfg.required {
            assert!(r < n, "DecoderConfig::required index {r} out of range for {n} columns");
        }
        let columns = cfg
            .schema
            .fields()
            .iter()
            .enumerate()
            .map(|(i, f)| Column {
                name: f.name.as_str().into(),
                ty: f.data_type,
                decode: cfg.needed[i] || cfg.required.contains(&i),
                plain_name: !f.name.bytes().any(|c| c == b'"' || c == b'\\' || c < 0x20),
            })
            .collect();
        Plan { columns, required: cfg.required.into(), unit: cfg.timestamp_unit, spare: 0 }
    }

    /// A record of nulls.
    pub(crate) fn empty_values(&self) -> Vec<Value> {
        // Not `vec![Value::Null; n]`: that clones through `Value::clone`, a match per slot.
        let mut v = Vec::with_capacity(self.width());
        v.resize_with(self.width(), || Value::Null);
        v
    }

    /// Makes `record` a record of nulls of [`Plan::width`] values: in place when it has that
    /// width already (the values of its previous use dropped; no allocation), else replaced by
    /// a new one.
    #[inline(always)]
    pub(crate) fn reset(&self, record: &mut Record) {
        if record.values.len() == self.width() {
            record.values.iter_mut().for_each(clear);
        } else {
            self.new_values(record);
        }
    }

    /// [`Plan::reset`] of a record of another width (a new one: [`Record::default`]).
    #[cold]
    #[inline(never)]
    fn new_values(&self, record: &mut Record) {
        record.values = self.empty_values().into_boxed_slice();
    }

    /// Checks that the required columns are non-null.
    pub(crate) fn check_required(&self, values: &[Value]) -> Result<(), DecodeError> {
        for &r in self.required.iter() {
            if values[r].is_null() {
                return Err(DecodeError::NullRequired { column: self.columns[r].name.to_string() });
            }
        }
        Ok(())
    }

    /// Checks the required columns and wraps the values.
    pub(crate) fn finish(&self, values: Vec<Value>) -> Result<Record, DecodeError> {
        self.check_required(&values)?;
        Ok(Record { values: values.into_boxed_slice() })
    }
}

/// Sets `v` to null ([`overwrite`](crate::value::overwrite)).
#[inline(always)]
pub(crate) fn clear(v: &mut Value) {
    crate::value::overwrite(v, Value::Null);
}

/// `s` cut to at most [`MAX_QUOTED`] bytes on a char boundary, with `...` when cut.
pub(crate) fn quote(s: &str) -> String {
    if s.len() <= MAX_QUOTED {
        return s.to_string();
    }
    let mut end = MAX_QUOTED;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}...", &s[..end])
}

/// Validates UTF-8.
pub(crate) fn utf8(line: &[u8]) -> Result<&str, DecodeError> {
    std::str::from_utf8(line).map_err(|e| DecodeError::NotUtf8 { offset: e.valid_up_to() })
}
