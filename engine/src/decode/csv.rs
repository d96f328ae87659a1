//! The CSV decoder: RFC 4180 lines after a header line that names the columns (rules on
//! [`CsvDecoder`]).

use crate::value::Text;
use std::borrow::Cow;

use crate::schema::DataType;
use crate::time::Timestamp;
use crate::value::{Record, Value};

use super::text::{integer_value, non_finite, timestamp_value, wrong};
use super::{Column, DecodeError, DecoderConfig, Plan, quote, utf8};

/// Decodes CSV lines (RFC 4180) into records, columns matched by the header's names.
///
/// - Fields are separated by `,`; a field may be quoted with `"`, inside which `,` is literal and
///   `""` stands for one `"`. A quote inside an unquoted field is kept as a literal character
///   (lenient, as Spark's CSV parser). Text after a closing quote other than `,` is malformed.
/// - One record is what is given to [`CsvDecoder::decode`]: a newline inside a quoted field is
///   part of the field. The files and stdin sources give such a record whole, over the lines it
///   spans (RFC 4180; Spark reads it so with `multiLine = true`); a quoted field still open at the
///   end of the record is malformed.
/// - An empty unquoted field is null. A quoted empty field (`""`) is the empty string for a
///   STRING column and null otherwise (Spark 3's `emptyValue` / `nullValue` defaults).
/// - Columns are matched to the schema by header name (exact, case-sensitive): header columns
///   not in the schema are ignored, schema columns missing from the header are null. A line
///   with fewer fields than the header has nulls for the rest; extra fields are ignored (Spark's
///   PERMISSIVE mode). Spark itself matches CSV columns by position unless
///   `enforceSchema = false`; Eddy always matches by name.
/// - Values: BIGINT / INT an optionally signed integer (`+12` as Java's `parseLong`); DOUBLE /
///   FLOAT a decimal number (`1.5`, `.5`, `1e3`) or `NaN`, `Inf`, `-Inf`, `Infinity`,
///   `+Infinity`, `-Infinity` (Spark's CSV defaults plus Java's spellings); BOOLEAN `true` /
///   `false` in any case (Scala's `toBoolean`); TIMESTAMP a timestamp string or a number in the
///   configured unit. Text is taken as is: no trimming.
/// - An empty line is a record of nulls (so malformed when a column is required).
///
/// A source of several files reads each under its own header: [`CsvDecoder::set_header`] at the
/// start of each file; while a header cannot be used (or before the first one,
/// [`CsvDecoder::awaiting_header`]), every line is an error saying why.
#[derive(Debug, Clone)]
pub struct CsvDecoder {
    plan: Plan,
    /// Per header field: the schema column it fills, when that column is decoded.
    targets: Box<[Option<usize>]>,
    /// Why the current header cannot be used: every line is refused with it.
    header_error: Option<DecodeError>,
}

/// One field of a line: its text between the quotes (if quoted), still with `""` escapes.
struct Field<'a> {
    text: &'a str,
    quoted: bool,
    escaped: bool,
}

impl<'a> Field<'a> {
    fn unescaped(&self) -> Cow<'a, str> {
        if self.escaped { Cow::Owned(self.text.replace("\"\"", "\"")) } else { Cow::Borrowed(self.text) }
    }
}

impl CsvDecoder {
    /// A decoder for `cfg` reading lines under `header` (the file's first line; a UTF-8 byte
    /// order mark and a line ending are allowed).
    ///
    /// # Errors
    /// [`DecodeError::NotUtf8`] / [`DecodeError::BadHeader`] when the header is not UTF-8 or
    /// not CSV, names a schema column twice, or lacks a required column.
    ///
    /// # Panics
    /// As [`super::JsonDecoder::new`], on a `cfg` inconsistent with its schema.
    pub fn new(cfg: DecoderConfig, header: &[u8]) -> Result<Self, DecodeError> {
        let mut decoder = CsvDecoder::awaiting_header(cfg);
        decoder.set_header(header)?;
        Ok(decoder)
    }

    /// A decoder for `cfg` that has no header yet: every line is a [`DecodeError::BadHeader`]
    /// until [`CsvDecoder::set_header`] gives one.
    ///
    /// # Panics
    /// As [`super::JsonDecoder::new`], on a `cfg` inconsistent with its schema.
    pub fn awaiting_header(cfg: DecoderConfig) -> Self {
        let header_error =
            DecodeError::BadHeader { given: String::new(), why: "no header line before this line".into() };
        CsvDecoder { plan: Plan::new(cfg), targets: Box::new([]), header_error: Some(header_error) }
    }

    /// The same decoder, its records with `n` NULL slots after the schema's columns: room for
    /// the source steps' computed columns, written there in place
    /// ([`crate::steps::CompiledSteps::spare_columns`]).
    pub fn with_spare_columns(mut self, n: usize) -> Self {
        self.plan.spare = n;
        self
    }

    /// Decodes the lines that follow under `header` (a file's first line; a UTF-8 byte order
    /// mark and a line ending are allowed), replacing the previous header.
    ///
    /// # Errors
    /// As [`CsvDecoder::new`]; the decoder then refuses every line with that error until a
    /// usable header is set.
    pub fn set_header(&mut self, header: &[u8]) -> Result<(), DecodeError> {
        match header_targets(&self.plan, header) {
            Ok(targets) => {
                self.targets = targets;
                self.header_error = None;
                Ok(())
            }
            Err(e) => {
                self.targets = Box::new([]);
                self.header_error = Some(e.clone());
                Err(e)
            }
        }
    }

    /// Decodes one line (a trailing `\n` or `\r\n` is allowed).
    ///
    /// # Errors
    /// [`DecodeError::NotUtf8`]; [`DecodeError::NotCsv`] for a stray or missing quote;
    /// [`DecodeError::WrongType`], [`DecodeError::OutOfRange`], [`DecodeError::BadTimestamp`]
    /// for a needed column's text; [`DecodeError::NullRequired`] when a required column is
    /// empty or missing; [`DecodeError::BadHeader`] for every line while the header cannot be
    /// used ([`CsvDecoder::set_header`]).
    pub fn decode(&self, line: &[u8]) -> Result<Record, DecodeError> {
        let mut values = self.plan.empty_values();
        self.fill(line, &mut values)?;
        Ok(Record { values: values.into_boxed_slice() })
    }

    /// [`Self::decode`] into `record`: its values are overwritten in place when it has
    /// [`Self::width`] values (no allocation but the shared strings of STRING columns), else it
    /// is replaced by a new record. On success `record` is exactly what [`Self::decode`]
    /// returns; on an error it holds some record of no meaning, still fit for the next call.
    ///
    /// # Errors
    /// As [`Self::decode`].
    pub fn decode_into(&self, line: &[u8], record: &mut Record) -> Result<(), DecodeError> {
        self.plan.reset(record);
        self.fill(line, &mut record.values)
    }

    /// Decodes `line` into `values` ([`Plan::width`] values, all null).
    #[inline(always)]
    fn fill(&self, line: &[u8], values: &mut [Value]) -> Result<(), DecodeError> {
        if let Some(e) = &self.header_error {
            return Err(e.clone());
        }
        let text = strip_line_end(utf8(line)?);
        for_each_field(text, |idx, f| {
            if let Some(&Some(c)) = self.targets.get(idx) {
                values[c] = field_value(&self.plan.columns[c], &f, &self.plan)?;
            }
            Ok(())
        })?;
        self.plan.check_required(values)
    }

    /// Values per record: one per schema column, then the spare slots
    /// ([`Self::with_spare_columns`]).
    pub fn width(&self) -> usize {
        self.plan.width()
    }
}

/// Per field of `header`: the column of `plan` it fills, when that column is decoded.
fn header_targets(plan: &Plan, header: &[u8]) -> Result<Box<[Option<usize>]>, DecodeError> {
    let text = utf8(header)?;
    let text = strip_line_end(text.strip_prefix('\u{FEFF}').unwrap_or(text));
    let bad = |why: String| DecodeError::BadHeader { given: quote(text), why };
    let mut targets = Vec::new();
    let mut seen = vec![false; plan.columns.len()];
    for_each_field(text, |_, f| {
        let name = f.unescaped();
        // by name, ignoring case when no column has it exactly (Spark resolves names so by
        // default: `spark.sql.caseSensitive` is false)
        let col = plan
            .columns
            .iter()
            .position(|c| *c.name == *name)
            .or_else(|| plan.columns.iter().position(|c| c.name.to_lowercase() == name.to_lowercase()));
        if let Some(i) = col {
            if seen[i] {
                return Err(bad(format!("column {name:?} is named twice")));
            }
            seen[i] = true;
        }
        targets.push(col.filter(|&i| plan.columns[i].decode));
        Ok(())
    })
    .map_err(|e| match e {
        DecodeError::NotCsv { why, .. } => bad(why.to_string()),
        other => other,
    })?;
    if let Some(&r) = plan.required.iter().find(|&&r| !seen[r]) {
        return Err(bad(format!("the required (event time) column {:?} is not in the header", plan.columns[r].name)));
    }
    Ok(targets.into())
}

/// `s` without one trailing `\n`, `\r\n` or `\r`.
fn strip_line_end(s: &str) -> &str {
    let s = s.strip_suffix('\n').unwrap_or(s);
    s.strip_suffix('\r').unwrap_or(s)
}

/// Calls `f(index, field)` for each field of `line`, stopping at the first error.
fn for_each_field<'a>(
    line: &'a str,
    mut f: impl FnMut(usize, Field<'a>) -> Result<(), DecodeError>,
) -> Result<(), DecodeError> {
    let b = line.as_bytes();
    let mut start = 0;
    let mut idx = 0;
    loop {
        let (field, next) = if b.get(start) == Some(&b'"') {
            let mut i = start + 1;
            let mut escaped = false;
            let end = loop {
                match b[i..].iter().position(|&c| c == b'"') {
                    None => {
                        return Err(not_csv(line, start, "an unterminated quoted field"));
                    }
                    Some(q) if b.get(i + q + 1) == Some(&b'"') => {
                        escaped = true;
                        i += q + 2;
                    }
                    Some(q) => break i + q,
                }
            };
            let next = match b.get(end + 1) {
                None => None,
                Some(b',') => Some(end + 2),
                Some(_) => {
                    return Err(not_csv(
                        line,
                        end + 1,
                        "text after a closing quote (expected , or the end of the line)",
                    ));
                }
            };
            (Field { text: &line[start + 1..end], quoted: true, escaped }, next)
        } else {
            match b[start..].iter().position(|&c| c == b',') {
                Some(k) => {
                    (Field { text: &line[start..start + k], quoted: false, escaped: false }, Some(start + k + 1))
                }
                None => (Field { text: &line[start..], quoted: false, escaped: false }, None),
            }
        };
        f(idx, field)?;
        idx += 1;
        match next {
            Some(n) => start = n,
            None => return Ok(()),
        }
    }
}

#[cold]
fn not_csv(line: &str, offset: usize, why: &'static str) -> DecodeError {
    DecodeError::NotCsv { offset, why, near: quote(line.get(offset..).unwrap_or("")) }
}

/// The value of one field for a decoded column.
fn field_value(col: &Column, f: &Field<'_>, plan: &Plan) -> Result<Value, DecodeError> {
    if f.text.is_empty() {
        return Ok(if f.quoted && col.ty == DataType::String { Value::Str(Text::from("")) } else { Value::Null });
    }
    let text = f.unescaped();
    let text: &str = &text;
    let unsigned = text.strip_prefix('+').filter(|t| t.starts_with(|c: char| c.is_ascii_digit())).unwrap_or(text);
    match col.ty {
        DataType::String => Ok(Value::Str(Text::from(text))),
        DataType::Date => super::text::date_value(col, text),
        DataType::Boolean if text.eq_ignore_ascii_case("true") => Ok(Value::Bool(true)),
        DataType::Boolean if text.eq_ignore_ascii_case("false") => Ok(Value::Bool(false)),
        DataType::Boolean => Err(wrong(col, text, "not true or false")),
        DataType::Long | DataType::Int => {
            if is_integer(unsigned) {
                integer_value(col, unsigned, plan.unit)
            } else if decimal(text).is_some() {
                Err(wrong(col, text, "a number with a fraction or exponent"))
            } else {
                Err(wrong(col, text, "not an integer"))
            }
        }
        DataType::Double | DataType::Float => {
            let v = csv_non_finite(text)
                .or_else(|| decimal(text))
                .ok_or_else(|| wrong(col, text, "not a number (nor NaN, Inf, -Inf, Infinity, -Infinity)"))?;
            Ok(if col.ty == DataType::Double { Value::Double(v) } else { Value::Float(v as f32) })
        }
        DataType::Decimal { .. } => super::text::decimal_value(col, text, text),
        DataType::Timestamp if is_integer(unsigned) => integer_value(col, unsigned, plan.unit),
        DataType::Timestamp => match decimal(text) {
            Some(v) => Timestamp::from_number(v, plan.unit).map(Value::Timestamp).ok_or_else(|| {
                DecodeError::OutOfRange { column: col.name.to_string(), expected: col.ty, given: quote(text) }
            }),
            None => timestamp_value(col, text),
        },
        _ => Err(wrong(col, text, "a type that input cannot hold")),
    }
}

/// An optional `-` and ASCII digits (overflow is checked later, as out of range).
fn is_integer(s: &str) -> bool {
    let digits = s.strip_prefix('-').unwrap_or(s);
    !digits.is_empty() && digits.bytes().all(|c| c.is_ascii_digit())
}

/// A decimal number (`[+-]` digits, `.`, exponent), never `inf` / `nan` words.
fn decimal(s: &str) -> Option<f64> {
    let plain = s.bytes().all(|c| c.is_ascii_digit() || matches!(c, b'+' | b'-' | b'.' | b'e' | b'E'));
    if plain && s.bytes().any(|c| c.is_ascii_digit()) { super::text::parse_f64(s) } else { None }
}

/// Non-finite spellings for CSV: Spark's JSON ones plus its CSV defaults `Inf` / `-Inf`.
fn csv_non_finite(s: &str) -> Option<f64> {
    match s {
        "Inf" => Some(f64::INFINITY),
        "-Inf" => Some(f64::NEG_INFINITY),
        _ => non_finite(s),
    }
}
