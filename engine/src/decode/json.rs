//! The JSON-lines decoder: one hand-written pass over the bytes. A line with the layout of the
//! lines before it takes the layout path of [`super::json_layout`] ([`JsonDecoder::decode_into`]
//! only), other plain lines the fast path of [`super::json_fast`]; this full parser decides
//! every other line. All three give the same record.
//!
//! Keys are matched against the schema by bytes (unescaped only when they hold a backslash);
//! values of columns the query does not need are skipped without being built (objects and arrays
//! with an explicit stack, so deep nesting cannot overflow the call stack); strings are unescaped
//! only when they hold a backslash. The whole line is checked to be UTF-8 first, so every slice
//! taken below is valid text.

use crate::value::Text;
use std::borrow::Cow;

use ahash::AHashMap;

use crate::schema::DataType;
use crate::value::{Record, Value};

use super::json_fast::{self, FastKeys};
use super::json_layout::Learning;
use super::text::{fraction_value, integer_value, string_value, wrong};
use super::{Column, DecodeError, DecoderConfig, MAX_DEPTH, Plan, quote, utf8};

/// Above this many columns keys are found through a hash map rather than by comparing names.
const LINEAR_LOOKUP_MAX: usize = 16;

/// Bytes that end the fast scan of a string: the closing quote, a backslash, control characters.
static STRING_STOP: [bool; 256] = {
    let mut t = [false; 256];
    let mut i = 0;
    while i < 0x20 {
        t[i] = true;
        i += 1;
    }
    t[b'"' as usize] = true;
    t[b'\\' as usize] = true;
    t
};

/// Decodes JSON lines (one object per line) into records, by the rules of the
/// [module docs](crate::decode).
#[derive(Debug, Clone)]
pub struct JsonDecoder {
    plan: Plan,
    /// Column names as bytes for the fast path.
    fast: FastKeys,
    /// For wide schemas: column name -> index.
    by_name: Option<AHashMap<Box<str>, usize>>,
    /// The layout of the lines [`Self::decode_into`] reads ([`super::json_layout`]).
    learning: Learning,
}

impl JsonDecoder {
    /// A decoder for `cfg`.
    ///
    /// # Panics
    /// When `cfg.needed` does not have one entry per column or a `cfg.required` index is out of
    /// range (a bug in the caller: both come from the validated pipeline spec).
    pub fn new(cfg: DecoderConfig) -> Self {
        let plan = Plan::new(cfg);
        let by_name = (plan.columns.len() > LINEAR_LOOKUP_MAX)
            .then(|| plan.columns.iter().enumerate().map(|(i, c)| (c.name.clone(), i)).collect());
        let fast = FastKeys::new(&plan);
        JsonDecoder { plan, fast, by_name, learning: Learning::default() }
    }

    /// The same decoder, its records with `n` NULL slots after the schema's columns: room for
    /// the source steps' computed columns, written there in place
    /// ([`crate::steps::CompiledSteps::spare_columns`]).
    pub fn with_spare_columns(mut self, n: usize) -> Self {
        self.plan.spare = n;
        self
    }

    /// Decodes one line: a JSON object, optionally surrounded by whitespace (so a trailing `\n`
    /// or `\r\n` is fine). The record has one value per schema column; columns not needed,
    /// missing or `null` are [`Value::Null`].
    ///
    /// # Errors
    /// [`DecodeError::NotUtf8`]; [`DecodeError::NotJson`] for a syntax error (an empty line
    /// included); [`DecodeError::NotObject`] when the line is not an object;
    /// [`DecodeError::TooDeep`] past [`MAX_DEPTH`] levels; [`DecodeError::WrongType`],
    /// [`DecodeError::OutOfRange`], [`DecodeError::BadTimestamp`] for a needed column's value;
    /// [`DecodeError::NullRequired`] when a required column is null or missing.
    pub fn decode(&self, line: &[u8]) -> Result<Record, DecodeError> {
        // Exactly as long as its capacity: becomes the record's boxed slice without reallocating.
        let mut values = self.plan.empty_values();
        if json_fast::decode(&self.plan, &self.fast, line, &mut values).is_some() {
            return Ok(Record { values: values.into_boxed_slice() });
        }
        self.decode_full(line)
    }

    /// [`Self::decode`] into `record`: its values are overwritten in place when it has
    /// [`Self::width`] values (no allocation but the shared strings of STRING columns), else it
    /// is replaced by a new record. On success `record` is exactly what [`Self::decode`]
    /// returns; on an error it holds some record of no meaning, still fit for the next call.
    ///
    /// The decoder keeps the layout of the lines it reads (the bytes between their values) and
    /// reads a line with the same layout by comparing those bytes, without looking keys up
    /// (the module `json_layout`); any other line takes the fast path, then the full parser, as
    /// [`Self::decode`]. The result is the same either way.
    ///
    /// # Errors
    /// As [`Self::decode`].
    #[inline]
    pub fn decode_into(&mut self, line: &[u8], record: &mut Record) -> Result<(), DecodeError> {
        if record.values.len() != self.plan.width() {
            self.plan.reset(record);
        }
        // The layout path writes every value of the record: no reset before it.
        if self.learning.read(&self.plan, line, record).is_some() {
            return Ok(());
        }
        self.decode_into_unlearned(line, record)
    }

    /// [`Self::decode_into`] of a line no layout kept matches: the fast path (which may learn
    /// the line's layout), else the full parser.
    #[inline(never)]
    fn decode_into_unlearned(&mut self, line: &[u8], record: &mut Record) -> Result<(), DecodeError> {
        // Some values may be those of an earlier line: the fast path needs nulls.
        self.plan.reset(record);
        if json_fast::decode(&self.plan, &self.fast, line, &mut record.values).is_some() {
            self.learning.missed(&self.plan, &self.fast, line);
            return Ok(());
        }
        *record = self.decode_full(line)?;
        Ok(())
    }

    /// Values per record: one per schema column, then the spare slots
    /// ([`Self::with_spare_columns`]).
    pub fn width(&self) -> usize {
        self.plan.width()
    }

    /// Lines [`Self::decode_into`] read by the layout path since the decoder was made (for
    /// tests and benchmarks: whether the layout path ran).
    pub fn layout_hits(&self) -> u64 {
        self.learning.hits()
    }

    /// The fast path alone: `Some(record)` exactly when [`Self::full_parser`] gives
    /// `Ok(record)`, else `None`. For checking the two paths against each other (the property
    /// tests, the fuzz target); [`Self::decode`] is the one to call.
    pub fn fast_path(&self, line: &[u8]) -> Option<Record> {
        let mut values = self.plan.empty_values();
        json_fast::decode(&self.plan, &self.fast, line, &mut values)
            .map(|()| Record { values: values.into_boxed_slice() })
    }

    /// The full parser alone, without the fast path: the same result as [`Self::decode`],
    /// slower. For checking the two paths against each other; [`Self::decode`] is the one to
    /// call.
    ///
    /// # Errors
    /// As [`Self::decode`].
    pub fn full_parser(&self, line: &[u8]) -> Result<Record, DecodeError> {
        self.decode_full(line)
    }

    /// The full parser: every line, every error (the fast path declines to [`Self::decode`]
    /// this). Never inlined: [`Self::decode`] stays a thin wrapper around the fast path.
    #[inline(never)]
    pub(super) fn decode_full(&self, line: &[u8]) -> Result<Record, DecodeError> {
        let s = utf8(line)?;
        let mut p = Parser { s, b: s.as_bytes(), pos: 0 };
        p.ws();
        match p.peek() {
            Some(b'{') => p.pos += 1,
            Some(_) => {
                return Err(DecodeError::NotObject { given: quote(s.trim()) });
            }
            None => return Err(p.err("an empty line (expected a JSON object)")),
        }
        let mut values = self.plan.empty_values();
        p.ws();
        if p.peek() == Some(b'}') {
            p.pos += 1;
        } else {
            let mut hint = 0;
            loop {
                let found = match self.hinted_key(&mut p, hint) {
                    Some(i) => {
                        hint = i + 1;
                        Some(i)
                    }
                    None => {
                        let (a, z, escaped) = p.key()?;
                        if escaped { self.find(&unescape(&s[a..z]), &mut hint) } else { self.find(&s[a..z], &mut hint) }
                    }
                };
                p.ws();
                if p.peek() != Some(b':') {
                    return Err(p.err("expected : after a key"));
                }
                p.pos += 1;
                p.ws();
                match found {
                    Some(i) if self.plan.columns[i].decode => values[i] = p.value(&self.plan.columns[i], &self.plan)?,
                    _ => p.skip_value()?,
                }
                p.ws();
                match p.peek() {
                    Some(b',') => {
                        p.pos += 1;
                        p.ws();
                    }
                    Some(b'}') => {
                        p.pos += 1;
                        break;
                    }
                    _ => return Err(p.err("expected , or } after a value")),
                }
            }
        }
        p.ws();
        if p.pos != p.b.len() {
            return Err(p.err("trailing characters after the object"));
        }
        self.plan.finish(values)
    }

    /// Fast path: when the key at the cursor is, byte for byte, `"` + the name of column
    /// `hint` + `"`, moves past it without scanning and returns `hint`. Only for names that
    /// hold no `"`, `\\` or control character (so the match cannot end inside the key);
    /// anything else returns `None` and the cursor does not move.
    #[inline]
    fn hinted_key(&self, p: &mut Parser<'_>, hint: usize) -> Option<usize> {
        let c = self.plan.columns.get(hint)?;
        if !c.plain_name {
            return None;
        }
        let name = c.name.as_bytes();
        let start = p.pos + 1;
        let end = start + name.len();
        if p.peek() == Some(b'"') && p.b.get(start..end) == Some(name) && p.b.get(end) == Some(&b'"') {
            p.pos = end + 1;
            Some(hint)
        } else {
            None
        }
    }

    /// The column named `key`; `hint` is where the previous key matched + 1 (input usually
    /// follows schema order, so that is tried first).
    #[inline]
    fn find(&self, key: &str, hint: &mut usize) -> Option<usize> {
        let cols = &self.plan.columns;
        if cols.get(*hint).is_some_and(|c| *c.name == *key) {
            *hint += 1;
            return Some(*hint - 1);
        }
        let i = match &self.by_name {
            Some(map) => map.get(key).copied(),
            None => cols.iter().position(|c| *c.name == *key),
        }?;
        *hint = i + 1;
        Some(i)
    }
}

/// A cursor over one line.
struct Parser<'a> {
    s: &'a str,
    b: &'a [u8],
    pos: usize,
}

impl<'a> Parser<'a> {
    #[inline]
    fn peek(&self) -> Option<u8> {
        self.b.get(self.pos).copied()
    }

    #[inline]
    fn ws(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.peek() {
            self.pos += 1;
        }
    }

    /// A syntax error at the cursor.
    #[cold]
    fn err(&self, why: &'static str) -> DecodeError {
        let mut at = self.pos.min(self.s.len());
        while !self.s.is_char_boundary(at) {
            at -= 1;
        }
        DecodeError::NotJson { offset: at, why, near: quote(&self.s[at..]) }
    }

    /// A key string: the content range and whether it holds escapes.
    #[inline]
    fn key(&mut self) -> Result<(usize, usize, bool), DecodeError> {
        if self.peek() != Some(b'"') {
            return Err(self.err("expected a key string"));
        }
        self.string()
    }

    /// A string at the cursor (on its opening quote): the content range (without quotes) and
    /// whether it holds escapes; the cursor ends after the closing quote. Escapes are checked
    /// (including `\u` surrogate pairs), raw control characters refused.
    #[inline]
    fn string(&mut self) -> Result<(usize, usize, bool), DecodeError> {
        let start = self.pos + 1;
        let mut i = start;
        let mut escaped = false;
        loop {
            let rest = self.b.get(i..).unwrap_or_default();
            i += rest.iter().position(|&c| STRING_STOP[c as usize]).unwrap_or(rest.len());
            match self.b.get(i) {
                Some(b'"') => {
                    self.pos = i + 1;
                    return Ok((start, i, escaped));
                }
                Some(b'\\') => {
                    escaped = true;
                    self.pos = i;
                    i = self.escape(i)?;
                }
                Some(_) => {
                    self.pos = i;
                    return Err(self.err("a control character inside a string (must be escaped)"));
                }
                None => {
                    self.pos = i;
                    return Err(self.err("an unterminated string"));
                }
            }
        }
    }

    /// Checks the escape at `i` (a backslash); returns the index after it.
    #[cold]
    fn escape(&mut self, i: usize) -> Result<usize, DecodeError> {
        escape_end(self.b, i).map_err(|why| self.err(why))
    }

    /// A number at the cursor (JSON grammar: `-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?`):
    /// its start, and whether it is an integer (no fraction, no exponent).
    #[inline]
    fn number(&mut self) -> Result<(usize, bool), DecodeError> {
        let start = self.pos;
        if self.peek() == Some(b'-') {
            self.pos += 1;
        }
        match self.peek() {
            Some(b'0') => self.pos += 1,
            Some(b'1'..=b'9') => self.digits(),
            _ => return Err(self.err("a number needs a digit")),
        }
        let mut integer = true;
        if self.peek() == Some(b'.') {
            self.pos += 1;
            if !matches!(self.peek(), Some(b'0'..=b'9')) {
                return Err(self.err("a digit must follow the decimal point"));
            }
            self.digits();
            integer = false;
        }
        if let Some(b'e' | b'E') = self.peek() {
            self.pos += 1;
            if let Some(b'+' | b'-') = self.peek() {
                self.pos += 1;
            }
            if !matches!(self.peek(), Some(b'0'..=b'9')) {
                return Err(self.err("a digit must follow the exponent"));
            }
            self.digits();
            integer = false;
        }
        Ok((start, integer))
    }

    #[inline]
    fn digits(&mut self) {
        while let Some(b'0'..=b'9') = self.peek() {
            self.pos += 1;
        }
    }

    /// The literal `lit` (`true`, `false`, `null`) at the cursor.
    #[inline]
    fn literal(&mut self, lit: &'static [u8]) -> Result<(), DecodeError> {
        if self.b.get(self.pos..self.pos + lit.len()) == Some(lit) {
            self.pos += lit.len();
            Ok(())
        } else {
            Err(self.err("expected a value (a string, number, object, array, true, false or null)"))
        }
    }

    /// The value of a needed column at the cursor.
    #[inline]
    fn value(&mut self, col: &Column, plan: &Plan) -> Result<Value, DecodeError> {
        match self.peek() {
            Some(b'"') => {
                let (a, z, escaped) = self.string()?;
                let raw = &self.s[a - 1..z + 1];
                if col.ty == DataType::String && !escaped {
                    return Ok(Value::Str(Text::from(&self.s[a..z])));
                }
                let text: Cow<str> =
                    if escaped { Cow::Owned(unescape(&self.s[a..z])) } else { Cow::Borrowed(&self.s[a..z]) };
                string_value(col, &text, raw)
            }
            Some(b'N' | b'I' | b'+' | b'-') if let Some((x, n)) = non_numeric(&self.b[self.pos..]) => {
                let text = &self.s[self.pos..self.pos + n];
                self.pos += n;
                match col.ty {
                    DataType::Double => Ok(Value::Double(x)),
                    DataType::Float => Ok(Value::Float(x as f32)),
                    // the token's text, as Spark 4.3 gives a STRING column
                    DataType::String => Ok(Value::Str(Text::from(text))),
                    _ => Err(wrong(col, text, "NaN or an infinity, which only a DOUBLE, FLOAT or STRING column takes")),
                }
            }
            Some(b'-' | b'0'..=b'9') => {
                let (start, integer) = self.number()?;
                let text = &self.s[start..self.pos];
                match col.ty {
                    // its text as written (`-0`, `1.50`, `1e2`), as Spark 4.3 gives it
                    DataType::String => Ok(Value::Str(Text::from(text))),
                    DataType::Boolean => Err(wrong(col, text, "a number, not true or false")),
                    _ if integer => integer_value(col, text, plan.unit),
                    _ => fraction_value(col, text, plan.unit),
                }
            }
            Some(b't') => {
                self.literal(b"true")?;
                literal_value(col, true)
            }
            Some(b'f') => {
                self.literal(b"false")?;
                literal_value(col, false)
            }
            Some(b'n') => {
                self.literal(b"null")?;
                Ok(Value::Null)
            }
            Some(b'{' | b'[') if col.ty == DataType::String => {
                // Spark (4.x) gives a STRING column the value's JSON text as written: its
                // bytes from the bracket to the matching one, whitespace and escapes kept
                let start = self.pos;
                self.skip_value()?;
                Ok(Value::Str(Text::from(&self.s[start..self.pos])))
            }
            Some(b'{' | b'[') => {
                // quoted as written when it is well formed (else the rest of the line)
                let start = self.pos;
                let end = if self.skip_value().is_ok() { self.pos } else { self.s.len() };
                Err(wrong(col, &self.s[start..end], "a nested object or array"))
            }
            _ => Err(self.err("expected a value (a string, number, object, array, true, false or null)")),
        }
    }

    /// Skips the value at the cursor, checking its syntax. Objects and arrays are walked with an
    /// explicit stack (one bit per level: 1 = object), never by recursion.
    fn skip_value(&mut self) -> Result<(), DecodeError> {
        let mut depth = 0usize; // open containers inside the skipped value
        let mut objects = 0u128; // bit d: the container at depth d + 1 is an object
        'value: loop {
            match self.peek() {
                Some(open @ (b'{' | b'[')) => {
                    // + 1 for the top-level object of the line.
                    if depth + 2 > MAX_DEPTH {
                        return Err(DecodeError::TooDeep { offset: self.pos, limit: MAX_DEPTH });
                    }
                    let object = open == b'{';
                    self.pos += 1;
                    depth += 1;
                    if object {
                        objects |= 1 << (depth - 1);
                    } else {
                        objects &= !(1 << (depth - 1));
                    }
                    self.ws();
                    if self.peek() == Some(if object { b'}' } else { b']' }) {
                        self.pos += 1;
                        depth -= 1;
                    } else {
                        if object {
                            self.key_colon()?;
                        }
                        continue 'value;
                    }
                }
                Some(b'"') => {
                    self.string()?;
                }
                Some(b'N' | b'I' | b'+' | b'-') if let Some((_, n)) = non_numeric(&self.b[self.pos..]) => {
                    self.pos += n;
                }
                Some(b'-' | b'0'..=b'9') => {
                    self.number()?;
                }
                Some(b't') => self.literal(b"true")?,
                Some(b'f') => self.literal(b"false")?,
                Some(b'n') => self.literal(b"null")?,
                _ => {
                    return Err(self.err("expected a value (a string, number, object, array, true, false or null)"));
                }
            }
            // After a value: close containers until a comma opens the next value.
            loop {
                if depth == 0 {
                    return Ok(());
                }
                self.ws();
                let object = (objects >> (depth - 1)) & 1 == 1;
                match self.peek() {
                    Some(b',') => {
                        self.pos += 1;
                        self.ws();
                        if object {
                            self.key_colon()?;
                        }
                        continue 'value;
                    }
                    Some(b'}') if object => {
                        self.pos += 1;
                        depth -= 1;
                    }
                    Some(b']') if !object => {
                        self.pos += 1;
                        depth -= 1;
                    }
                    _ if object => return Err(self.err("expected , or } in an object")),
                    _ => return Err(self.err("expected , or ] in an array")),
                }
            }
        }
    }

    /// `"key"`, whitespace, `:`, whitespace (inside a skipped object).
    fn key_colon(&mut self) -> Result<(), DecodeError> {
        self.key()?;
        self.ws();
        if self.peek() != Some(b':') {
            return Err(self.err("expected : after a key"));
        }
        self.pos += 1;
        self.ws();
        Ok(())
    }
}

/// The non-numeric numbers Spark's JSON reader takes by default (`allowNonNumericNumbers`,
/// Jackson's `ALLOW_NON_NUMERIC_NUMBERS`) at the start of `b`: `NaN`, `Infinity`, `+Infinity`,
/// `-Infinity`, `+INF`, `-INF`, spelt so (checked with Spark 4.3: `INF`, `nan`, `-NaN` are
/// malformed); their value and length.
pub(super) fn non_numeric(b: &[u8]) -> Option<(f64, usize)> {
    const TOKENS: [(&[u8], f64); 6] = [
        (b"NaN", f64::NAN),
        (b"Infinity", f64::INFINITY),
        (b"+Infinity", f64::INFINITY),
        (b"-Infinity", f64::NEG_INFINITY),
        (b"+INF", f64::INFINITY),
        (b"-INF", f64::NEG_INFINITY),
    ];
    TOKENS.iter().find(|(t, _)| b.starts_with(t)).map(|&(t, x)| (x, t.len()))
}

/// The index after the escape whose backslash is at `i` (`\"`, `\\`, `\/`, `\b`, `\f`, `\n`,
/// `\r`, `\t`, `\uXXXX`, a `\u` high surrogate only with its low one); else what is wrong.
/// The one check of escapes, for both paths (the fast path's [`json_fast`] and [`Parser`]).
#[cold]
pub(super) fn escape_end(b: &[u8], i: usize) -> Result<usize, &'static str> {
    const HEX: &str = "a \\u escape needs 4 hex digits";
    const PAIR: &str = "a high surrogate \\u escape not followed by a low one";
    let hex4 = |at: usize| -> Result<u32, &'static str> {
        let digits = b.get(at..at + 4).ok_or(HEX)?;
        digits.iter().try_fold(0u32, |v, &c| Ok(v * 16 + (c as char).to_digit(16).ok_or(HEX)?))
    };
    match b.get(i + 1) {
        Some(b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't') => Ok(i + 2),
        Some(b'u') => {
            let hi = hex4(i + 2)?;
            if (0xDC00..0xE000).contains(&hi) {
                return Err("a lone low surrogate in a \\u escape");
            }
            if !(0xD800..0xDC00).contains(&hi) {
                return Ok(i + 6);
            }
            if b.get(i + 6) != Some(&b'\\') || b.get(i + 7) != Some(&b'u') {
                return Err(PAIR);
            }
            let lo = hex4(i + 8)?;
            if !(0xDC00..0xE000).contains(&lo) {
                return Err(PAIR);
            }
            Ok(i + 12)
        }
        _ => Err("an invalid escape (expected \\\" \\\\ \\/ \\b \\f \\n \\r \\t or \\uXXXX)"),
    }
}

/// The value of one whole JSON token `text` (a string with its quotes, a number, a literal) for
/// the column `col`, by exactly the full parser's rules: the fast path hands it the values it
/// does not convert itself (escaped strings, a number for a STRING column, `"NaN"` for a DOUBLE,
/// a timestamp with whitespace around it, DATE and DECIMAL columns).
///
/// # Errors
/// As [`JsonDecoder::decode`] for a needed column's value.
pub(super) fn token_value(text: &str, col: &Column, plan: &Plan) -> Result<Value, DecodeError> {
    Parser { s: text, b: text.as_bytes(), pos: 0 }.value(col, plan)
}

/// A STRING column given `true` / `false`: the literal's text (Spark copies the token's text).
fn literal_value(col: &Column, b: bool) -> Result<Value, DecodeError> {
    match col.ty {
        DataType::Boolean => Ok(Value::Bool(b)),
        DataType::String => Ok(Value::Str(Text::from(if b { "true" } else { "false" }))),
        _ => Err(wrong(col, if b { "true" } else { "false" }, "a boolean")),
    }
}

/// The text of a string's content whose escapes were already checked by [`Parser::string`].
/// An escape that is somehow invalid becomes U+FFFD rather than a panic.
pub(super) fn unescape(raw: &str) -> String {
    let mut out = String::with_capacity(raw.len());
    let mut rest = raw;
    while let Some(i) = rest.find('\\') {
        out.push_str(&rest[..i]);
        let b = rest.as_bytes();
        let (c, used) = match b.get(i + 1) {
            Some(b'"') => ('"', 2),
            Some(b'\\') => ('\\', 2),
            Some(b'/') => ('/', 2),
            Some(b'b') => ('\u{8}', 2),
            Some(b'f') => ('\u{c}', 2),
            Some(b'n') => ('\n', 2),
            Some(b'r') => ('\r', 2),
            Some(b't') => ('\t', 2),
            Some(b'u') => {
                let hi = hex4(rest, i + 2).unwrap_or(0xFFFD);
                if (0xD800..0xDC00).contains(&hi) {
                    let lo = hex4(rest, i + 8).unwrap_or(0);
                    let code = 0x10000 + ((hi - 0xD800) << 10) + (lo.wrapping_sub(0xDC00) & 0x3FF);
                    (char::from_u32(code).unwrap_or('\u{FFFD}'), 12)
                } else {
                    (char::from_u32(hi).unwrap_or('\u{FFFD}'), 6)
                }
            }
            _ => ('\u{FFFD}', 1),
        };
        out.push(c);
        let next = (i + used).min(rest.len());
        rest = rest.get(next..).unwrap_or("");
    }
    out.push_str(rest);
    out
}

fn hex4(s: &str, i: usize) -> Option<u32> {
    u32::from_str_radix(s.get(i..i + 4)?, 16).ok()
}
