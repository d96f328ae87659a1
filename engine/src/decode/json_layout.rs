//! The JSON decoder's layout path: the lines of a stream mostly share their layout (the same
//! keys in the same order, written with the same separators and whitespace), so the bytes
//! between the values of a line the fast path accepted are kept, and the next line is read by
//! comparing those bytes as words and decoding the value between each two of them by the kind
//! it had: no key is looked up, no whitespace scanned, no value's first byte dispatched on.
//!
//! A line whose layout differs in any byte, or one of whose values has another form (a `null`
//! where the learned line had a number, an escaped string, a fraction in a BIGINT column), is
//! not decoded here: the caller resets the record and gives the line to the fast path
//! ([`super::json_fast`]), which decides it as before, and may learn its layout for the next
//! lines ([`Learning`], which keeps up to four).
//!
//! Why the same record as the fast path: a line matches a layout only when every byte outside
//! its values equals the learned line's, so it holds the same keys, in the same order, with the
//! same structure; those keys name the same columns (the column chosen for each key, the column
//! hint included, was the fast path's own choice on the learned line, and depends only on the
//! keys before it); and each value is checked and converted by the functions the fast path uses
//! for that form ([`scan_number`], [`number_value`], [`timestamp_prefix`], [`string_at`]), or
//! by a shortcut that gives the same value whenever the next literal matches: a BIGINT's or a
//! skipped integer's digits read as one word ([`long_at`], [`integer_len`]: the literal after a
//! number starts with whitespace, `,` or `}`, so no fraction, exponent or digit follows them), a
//! timestamp of the learned form ([`TimeForm`]). A string value ends at its closing quote, which
//! the next literal starts with. The record is not reset before the line: every value is
//! written over the slot's old one, and the slots no step writes are set to null at the end.
//! Property tests (`json_props`) decode lines learned then damaged against the stateless
//! decoder, and streams of values of every spelling into a recycled record.
//!
//! Cost on the Nexmark bids record (four columns, spaced JSON), `decode_into` inclusive under
//! callgrind in the q7 file run: 1,075 instructions per record on the fast path, 720 on this
//! one with the word-wide integer and fraction reads (bench/results/decode.md, 2026-12-03); 417
//! with the integers, the timestamp's form and minute and the 16-byte literals (2026-12-05; the
//! same with `2024-01-15 10:00:00.238` timestamps); 366 with literals of at most 16 bytes, the
//! skipped column nulled in its step, the minute compared as one number and one call from the
//! caller's loop ([`Learning::read`] 357 of them; the same day).

use crate::schema::DataType;
use crate::time::Timestamp;
use crate::value::Text;
use crate::value::{Record, Value, overwrite};

use super::json_fast::{FastKeys, any_string_end, number_value, string_at, string_end, ws};
use super::json_number::scan_number;
use super::text::{short_integer, short_integer_len, timestamp_prefix};
use super::time_form::TimeForm;
use super::{Plan, clear};

/// Longest run of bytes between two values kept (`, "a_long_column_name": "`); a line with a
/// longer one has no layout.
const MAX_LITERAL: usize = 32;

/// Most values in a layout; a line with more has none.
const MAX_STEPS: usize = 64;

/// Longest tail after the last value (`}` and trailing whitespace).
const MAX_END: usize = 8;

/// The bytes between two values (or before the first), or a piece of them: at most 16 bytes,
/// compared as one 16-byte window, the 16 bytes from where the literal starts masked to its
/// bytes (when 16 bytes of the line follow), else the 16 bytes that end where it ends (near the
/// end of the line), so nothing after the literal decides. Byte by byte only when the line is
/// shorter than that. A longer run of bytes is cut into pieces of 16, each the literal of a
/// step that reads no value ([`Kind::Gap`]), so that no literal needs a test of its length.
#[derive(Debug, Clone)]
struct Literal {
    /// 1 to [`PIECE`] bytes.
    len: usize,
    /// Its bytes, zero-padded, and the mask of its bytes among them.
    head: Window,
    /// Its bytes at the end of 16 (after 16 - len zero bytes) and the mask of its bytes.
    tail: Window,
    bytes: [u8; PIECE],
}

/// Most bytes of one [`Literal`]: one 16-byte window.
const PIECE: usize = 16;

/// 16 bytes as one little-endian number (two words to the machine), and which of them count.
#[derive(Debug, Clone, Copy)]
struct Window {
    bytes: u128,
    mask: u128,
}

impl Window {
    /// `text` (at most 16 bytes) placed at `at` among 16 bytes.
    fn new(text: &[u8], at: usize) -> Window {
        let (mut bytes, mut mask) = ([0u8; 16], [0u8; 16]);
        bytes[at..at + text.len()].copy_from_slice(text);
        mask[at..at + text.len()].fill(0xff);
        Window { bytes: u128::from_le_bytes(bytes), mask: u128::from_le_bytes(mask) }
    }

    /// Whether the counted bytes of `w` are the window's.
    #[inline(always)]
    fn matches(&self, w: &[u8; 16]) -> bool {
        (u128::from_le_bytes(*w) ^ self.bytes) & self.mask == 0
    }
}

impl Literal {
    /// The literal of `text`, 1 to [`PIECE`] bytes.
    fn new(text: &[u8]) -> Option<Literal> {
        let len = text.len();
        if !(1..=PIECE).contains(&len) {
            return None;
        }
        let mut bytes = [0u8; PIECE];
        bytes[..len].copy_from_slice(text);
        Some(Literal { len, head: Window::new(text, 0), tail: Window::new(text, 16 - len), bytes })
    }

    /// The bytes after the literal when `rest`, the end of the line `b`, starts with it.
    #[inline(always)]
    fn skip<'a>(&self, b: &[u8], rest: &'a [u8]) -> Option<&'a [u8]> {
        let found = match rest.first_chunk::<16>() {
            Some(w) => self.head.matches(w),
            None => self.matches_late(b, b.len() - rest.len()),
        };
        if found { rest.get(self.len..) } else { None }
    }

    /// Whether the literal is at `i` in `b`, fewer than 16 bytes from the end.
    #[inline(never)]
    fn matches_late(&self, b: &[u8], i: usize) -> bool {
        self.matches_before(b, i.saturating_add(self.len))
    }

    /// Whether `rest`, the end of the line `b`, is the literal.
    #[inline(always)]
    fn ends(&self, b: &[u8], rest: &[u8]) -> bool {
        rest.len() == self.len && self.matches_before(b, b.len())
    }

    /// Whether the literal ends at `end` in `b` (near the end of the line).
    #[inline(always)]
    fn matches_before(&self, b: &[u8], end: usize) -> bool {
        match b.get(..end).and_then(|s| s.last_chunk::<16>()) {
            Some(w) => self.tail.matches(w),
            None => self.matches_bytes(b, end.wrapping_sub(self.len)),
        }
    }

    /// Whether the literal is at `i` in `b`, byte by byte.
    #[cold]
    #[inline(never)]
    fn matches_bytes(&self, b: &[u8], i: usize) -> bool {
        b.get(i..i.wrapping_add(self.len)) == Some(&self.bytes[..self.len])
    }
}

/// How a value of the layout is read.
#[derive(Debug, Clone)]
enum Kind {
    /// A JSON integer into a BIGINT column.
    Long,
    /// A JSON number into a column of this type (but BIGINT).
    Number(DataType),
    /// A TIMESTAMP string, its opening quote in the literal before it.
    Timestamp,
    /// A TIMESTAMP string as [`Kind::Timestamp`], read by its form first when it has that form.
    TimestampForm(TimeForm),
    /// A STRING column's string without escapes, its opening quote in the literal before it.
    Str,
    /// `true` or `false` into a BOOLEAN column.
    Bool,
    /// `null` for a decoded column.
    Null,
    /// A number of a key whose value is not decoded.
    SkipNumber,
    /// An integer of a key whose value is not decoded (a number of another form is not read).
    SkipInteger,
    /// An integer of a column that is not decoded: read as [`Kind::SkipInteger`], the column's
    /// slot set to null (in the step, not after the line: see [`Layout::unwritten`]).
    NullInteger,
    /// `true`, `false` or `null` of a key whose value is not decoded.
    SkipLiteral,
    /// A string of a key whose value is not decoded (its escapes checked).
    SkipStr,
    /// No value: the literal before it is the first piece of a longer run of bytes
    /// ([`Literal`]), the next step's literal the rest.
    Gap,
}

#[derive(Debug, Clone)]
struct Step {
    before: Literal,
    /// The column written (unused for the skipping kinds).
    column: usize,
    kind: Kind,
}

/// Pushes the step of a value of `kind` for `column` after the bytes `literal`: after a step
/// of no value ([`Kind::Gap`]) for each 16 bytes of it but the last 1 to 16. `None` when it is
/// empty or longer than [`MAX_LITERAL`].
fn push_step(steps: &mut Vec<Step>, literal: &[u8], column: usize, kind: Kind) -> Option<()> {
    if literal.len() > MAX_LITERAL {
        return None;
    }
    let mut pieces = literal.chunks(PIECE).peekable();
    while let Some(piece) = pieces.next() {
        let before = Literal::new(piece)?;
        match pieces.peek() {
            Some(_) => steps.push(Step { before, column: 0, kind: Kind::Gap }),
            None => {
                steps.push(Step { before, column, kind });
                return Some(());
            }
        }
    }
    // No piece: an empty literal.
    None
}

/// `true`, `false` (`Some`) or `null` (`None`) at `i`, and the index after it.
#[inline(always)]
fn json_literal(b: &[u8], i: usize) -> Option<(Option<bool>, usize)> {
    let s = b.get(i..)?;
    if s.starts_with(b"true") {
        Some((Some(true), i + 4))
    } else if s.starts_with(b"false") {
        Some((Some(false), i + 5))
    } else if s.starts_with(b"null") {
        Some((None, i + 4))
    } else {
        None
    }
}

/// The layout of a line: its values in order, each with the bytes before it, and the bytes
/// after the last one.
#[derive(Debug, Clone)]
pub(super) struct Layout {
    steps: Box<[Step]>,
    end: Literal,
    /// The slots (columns and spare slots) no step writes: null in every record of the layout.
    /// (A column that is not decoded but present in the line as an integer is set to null by
    /// its step, [`Kind::NullInteger`]: one store where the value is read, not a loop after.)
    unwritten: Box<[usize]>,
}

impl Layout {
    /// The layout of `b`, a line the fast path accepted with `keys`; `None` when it has a value
    /// of another form than [`Kind`]'s (an object or array, an escaped string, a number for a
    /// STRING column, ...), an escaped key, or runs of bytes too long to keep.
    ///
    /// `None` as well when a required column is not written non-null by the last of its steps
    /// (not for a line the fast path accepted): the layout's records then have every required
    /// column non-null without a check.
    fn learn(plan: &Plan, keys: &FastKeys, b: &[u8]) -> Option<Layout> {
        let mut steps = Vec::new();
        let mut i = ws(b, 0);
        if b.get(i) != Some(&b'{') {
            return None;
        }
        let mut literal_start = 0;
        // The column hint, as the fast path moves it: after a column, the next one; after a
        // key that is no column, unchanged.
        let mut hint = 0;
        i = ws(b, i + 1);
        loop {
            if b.get(i) != Some(&b'"') || steps.len() >= MAX_STEPS {
                return None;
            }
            let key_end = string_end(b, i + 1)?;
            let column = keys.column_of(b, i + 1, key_end, hint);
            i = ws(b, key_end + 1);
            if b.get(i) != Some(&b':') {
                return None;
            }
            i = ws(b, i + 1);
            let first = *b.get(i)?;
            let number = first == b'-' || first.is_ascii_digit();
            let (kind, value_start, value_end) = match column {
                Some((c, Some(ty))) => {
                    hint = c + 1;
                    match (first, ty) {
                        (b'"', DataType::Timestamp) => {
                            let (_, n) = timestamp_prefix(b.get(i + 1..)?)?;
                            (b.get(i + 1 + n) == Some(&b'"')).then_some(())?;
                            let form = TimeForm::of(&b[i + 1..i + 1 + n]);
                            (form.map_or(Kind::Timestamp, Kind::TimestampForm), i + 1, i + 1 + n)
                        }
                        (b'"', DataType::String) => (Kind::Str, i + 1, string_at(b, i + 1)?.1),
                        // The byte after the number (whitespace, `,` or `}`) starts the next
                        // literal: `long_at`'s integer ends where the literal must start.
                        (_, DataType::Long) if number => (Kind::Long, i, scan_number(b, i)?.end),
                        (
                            _,
                            DataType::Long | DataType::Int | DataType::Double | DataType::Float | DataType::Timestamp,
                        ) if number => (Kind::Number(ty), i, scan_number(b, i)?.end),
                        (b't' | b'f', DataType::Boolean) => (Kind::Bool, i, json_literal(b, i)?.1),
                        (b'n', _) => (Kind::Null, i, json_literal(b, i)?.1),
                        _ => return None,
                    }
                }
                skipped => {
                    if let Some((c, None)) = skipped {
                        hint = c + 1;
                    }
                    match first {
                        b'"' => (Kind::SkipStr, i + 1, any_string_end(b, i + 1)?),
                        _ if number => {
                            let n = scan_number(b, i)?;
                            let kind = match skipped {
                                _ if !n.integer => Kind::SkipNumber,
                                Some(_) => Kind::NullInteger,
                                None => Kind::SkipInteger,
                            };
                            (kind, i, n.end)
                        }
                        b't' | b'f' | b'n' => (Kind::SkipLiteral, i, json_literal(b, i)?.1),
                        _ => return None,
                    }
                }
            };
            let column = column.map_or(0, |(c, _)| c);
            // A string's closing quote is the first byte of the next literal.
            let quoted = matches!(kind, Kind::Timestamp | Kind::TimestampForm(_) | Kind::Str | Kind::SkipStr);
            push_step(&mut steps, &b[literal_start..value_start], column, kind)?;
            literal_start = value_end;
            i = ws(b, if quoted { value_end + 1 } else { value_end });
            match b.get(i) {
                Some(b',') => i = ws(b, i + 1),
                Some(b'}') => {
                    if ws(b, i + 1) != b.len() || b.len() - literal_start > MAX_END {
                        return None;
                    }
                    let end = Literal::new(&b[literal_start..])?;
                    return Layout::new(plan, steps, end);
                }
                _ => return None,
            }
        }
    }

    /// The layout of `steps` and `end`, with the slots its lines leave null; `None` when a
    /// required column is not written non-null by its last step.
    fn new(plan: &Plan, steps: Vec<Step>, end: Literal) -> Option<Layout> {
        // Per slot: whether the last step writing it writes a value (`Some(true)`) or null.
        let mut last = vec![None; plan.width()];
        for step in steps.iter() {
            match step.kind {
                Kind::SkipNumber | Kind::SkipInteger | Kind::SkipLiteral | Kind::SkipStr | Kind::Gap => {}
                Kind::Null | Kind::NullInteger => *last.get_mut(step.column)? = Some(false),
                _ => *last.get_mut(step.column)? = Some(true),
            }
        }
        if plan.required.iter().any(|&r| last.get(r) != Some(&Some(true))) {
            return None;
        }
        let unwritten = (0..plan.width()).filter(|&c| last[c].is_none()).collect();
        Some(Layout { steps: steps.into(), end, unwritten })
    }

    /// Decodes `b` into `values` (of the plan's width, holding any values) when it has this
    /// layout: `Some(())` with the record the fast path would give. `None` otherwise, `values`
    /// then holding some of the line's values among others (the caller resets them).
    ///
    /// Each value is written over the slot's old one, and the slots no step writes are set to
    /// null at the end, so the record needs no reset first; no required column is checked, as
    /// each is written non-null or the line declined ([`Layout::new`]).
    #[inline(always)]
    fn read(&mut self, plan: &Plan, b: &[u8], values: &mut [Value]) -> Option<()> {
        // The line from the next literal on: each bound checked against what is left.
        let mut rest = b;
        for step in self.steps.iter_mut() {
            let value = step.before.skip(b, rest)?;
            let n = match &mut step.kind {
                Kind::Long => {
                    let (v, n) = long_at(value, plan)?;
                    overwrite(values.get_mut(step.column)?, Value::Long(v));
                    n
                }
                Kind::TimestampForm(form) => {
                    let (t, n) = match form.read(value) {
                        Some(read) => read,
                        None => timestamp_prefix_of(value)?,
                    };
                    overwrite(values.get_mut(step.column)?, Value::Timestamp(t));
                    n
                }
                Kind::NullInteger => {
                    clear(values.get_mut(step.column)?);
                    match value.first_chunk::<8>().and_then(|w| short_integer_len(u64::from_le_bytes(*w))) {
                        Some(k) => k,
                        None => integer_slow(value)?,
                    }
                }
                kind => read_other(kind, plan, value, values.get_mut(step.column))?,
            };
            rest = value.get(n..)?;
        }
        if !self.end.ends(b, rest) {
            return None;
        }
        for &c in self.unwritten.iter() {
            clear(values.get_mut(c)?);
        }
        Some(())
    }
}

/// [`Layout::read`] of a value of the kinds not read inline, at the start of `b`: its length,
/// written into `slot` (the step's column, `None` for a skipping kind). Out of line, so that the
/// loop over the steps keeps its registers.
#[inline(never)]
fn read_other(kind: &Kind, plan: &Plan, b: &[u8], slot: Option<&mut Value>) -> Option<usize> {
    let (value, n) = match kind {
        Kind::Number(ty) => {
            let n = scan_number(b, 0)?;
            (number_value(&n, &b[..n.end], *ty, plan)?, n.end)
        }
        Kind::Timestamp | Kind::TimestampForm(_) => {
            let (t, n) = timestamp_prefix_of(b)?;
            (Value::Timestamp(t), n)
        }
        Kind::Str => {
            let (content, z) = string_at(b, 0)?;
            (Value::Str(Text::from(content)), z)
        }
        Kind::Bool => {
            let (v, n) = json_literal(b, 0)?;
            (Value::Bool(v?), n)
        }
        // Written, not left: an earlier occurrence of the key may have set it (the last one
        // wins).
        Kind::Null => match json_literal(b, 0)? {
            (None, n) => (Value::Null, n),
            _ => return None,
        },
        Kind::SkipNumber => return Some(scan_number(b, 0)?.end),
        Kind::SkipInteger => return integer_len(b),
        Kind::NullInteger => {
            clear(slot?);
            return integer_len(b);
        }
        Kind::SkipStr => return any_string_end(b, 0),
        Kind::SkipLiteral => return Some(json_literal(b, 0)?.1),
        Kind::Gap => return Some(0),
        // Read inline by `Layout::read`; here as any of its values.
        Kind::Long => {
            let (v, n) = long_at(b, plan)?;
            (Value::Long(v), n)
        }
    };
    overwrite(slot?, value);
    Some(n)
}

/// The integer of a BIGINT column that `b` starts with and its length, when the byte after it
/// does not continue a number (the caller checks the literal that follows it, which starts
/// with whitespace, `,` or `}`): as [`scan_number`] and [`number_value`] give it then. A
/// non-negative integer of up to 7 digits with 8 bytes readable is read as one word
/// ([`short_integer`]); the rest by those two.
#[inline(always)]
fn long_at(b: &[u8], plan: &Plan) -> Option<(i64, usize)> {
    // A leading zero followed by a digit is no JSON number: the grammar decides it below.
    if let Some(w) = b.first_chunk::<8>()
        && let Some((k, v)) = short_integer(u64::from_le_bytes(*w))
    {
        return Some((v as i64, k));
    }
    long_slow(b, plan)
}

/// The length of the integer that `b` starts with, when the byte after it does not continue a
/// number (as for [`long_at`]): where [`scan_number`] ends it then. A non-negative integer of
/// up to 7 digits with 8 bytes readable is counted in one word ([`short_integer_len`]).
#[inline(always)]
fn integer_len(b: &[u8]) -> Option<usize> {
    if let Some(w) = b.first_chunk::<8>()
        && let Some(k) = short_integer_len(u64::from_le_bytes(*w))
    {
        return Some(k);
    }
    integer_slow(b)
}

/// [`integer_len`] by the grammar.
#[inline(never)]
fn integer_slow(b: &[u8]) -> Option<usize> {
    let n = scan_number(b, 0)?;
    n.integer.then_some(n.end)
}

/// [`long_at`] by the grammar: a sign, any number of digits (overflow refused), the last bytes
/// of a line.
#[inline(never)]
fn long_slow(b: &[u8], plan: &Plan) -> Option<(i64, usize)> {
    let n = scan_number(b, 0)?;
    match number_value(&n, &b[..n.end], DataType::Long, plan)? {
        Value::Long(v) => Some((v, n.end)),
        _ => None,
    }
}

/// The timestamp that `b` starts with ([`timestamp_prefix`]) and its length.
#[inline(never)]
fn timestamp_prefix_of(b: &[u8]) -> Option<(Timestamp, usize)> {
    timestamp_prefix(b)
}

/// The layouts kept by a decoder (up to [`MAX_LAYOUTS`]: a stream whose lines come in a few
/// layouts, such as an optional field present or not, reads each on this path), and when to
/// learn another: right after a line no layout matched, unless the layouts learned lately
/// matched few lines (a stream whose lines vary), then after twice as many lines each time, up
/// to [`MAX_WAIT`].
#[derive(Debug, Clone, Default)]
pub(super) struct Learning {
    layouts: Vec<Kept>,
    /// The layout tried first: the one that matched last.
    last: usize,
    /// Lines read by the layout path, in all (for tests and benchmarks).
    read: u64,
    /// `read` when the layout tried first last changed: the lines it matched since are added to
    /// its `hits` only when they are looked at ([`Learning::count`]), not one by one.
    since: u64,
    /// Lines to let pass before learning again.
    wait: u32,
    /// The wait after the next learning when the layout learned replaces one that matched few
    /// lines.
    backoff: u32,
}

/// A layout and the lines it matched (halved at each learning, so that a layout which stopped
/// matching is the one replaced).
#[derive(Debug, Clone)]
struct Kept {
    layout: Box<Layout>,
    hits: u64,
}

/// Most layouts a decoder keeps; each line no layout matches costs one failed comparison per
/// layout kept (usually within its first few words).
const MAX_LAYOUTS: usize = 4;

/// The longest wait between two learnings of a stream whose lines vary.
const MAX_WAIT: u32 = 1024;

/// Lines a layout must have matched to be replaced without lengthening the wait.
const WORTHWHILE: u64 = 16;

impl Learning {
    /// Decodes `b` into `record` (of the plan's width, holding any values) with a layout kept,
    /// the one that matched last tried first: `Some(())` with the fast path's record. `None`
    /// when none matches; `record` must then be reset.
    ///
    /// Not inlined: [`super::JsonDecoder::decode_into`], which calls it, is inlined into the
    /// caller's loop, which then holds only the call.
    #[inline(never)]
    pub(super) fn read(&mut self, plan: &Plan, b: &[u8], record: &mut Record) -> Option<()> {
        let kept = self.layouts.get_mut(self.last)?;
        if kept.layout.read(plan, b, &mut record.values).is_some() {
            self.read += 1;
            return Some(());
        }
        if self.layouts.len() == 1 {
            return None;
        }
        self.read_others(plan, b, record)
    }

    /// [`Learning::read`] with the layouts other than the last one that matched.
    ///
    /// The layout tried before may have written some values: a layout that matches writes every
    /// slot of the record (each value, and null where it has none), so no reset is needed
    /// between attempts.
    #[cold]
    #[inline(never)]
    fn read_others(&mut self, plan: &Plan, b: &[u8], record: &mut Record) -> Option<()> {
        for (at, kept) in self.layouts.iter_mut().enumerate() {
            if at != self.last && kept.layout.read(plan, b, &mut record.values).is_some() {
                self.count();
                self.last = at;
                self.read += 1;
                return Some(());
            }
        }
        None
    }

    /// Adds the lines the layout tried first matched since it became so to its `hits`.
    fn count(&mut self) {
        if let Some(kept) = self.layouts.get_mut(self.last) {
            kept.hits += self.read - self.since;
        }
        self.since = self.read;
    }

    /// After the fast path accepted `b`, which no layout kept matched: learns its layout (kept
    /// beside the others, or in place of the one that matched fewest lines lately), or counts
    /// down to the next learning.
    #[cold]
    #[inline(never)]
    pub(super) fn missed(&mut self, plan: &Plan, keys: &FastKeys, b: &[u8]) {
        self.count();
        if self.wait > 0 {
            self.wait -= 1;
            return;
        }
        let grow = |backoff: u32| (backoff * 2).clamp(1, MAX_WAIT);
        let Some(layout) = Layout::learn(plan, keys, b).map(Box::new) else {
            self.backoff = grow(self.backoff);
            self.wait = self.backoff;
            return;
        };
        let kept = Kept { layout, hits: 0 };
        if self.layouts.len() < MAX_LAYOUTS {
            self.layouts.push(kept);
            self.last = self.layouts.len() - 1;
            self.backoff = 0;
        } else {
            let (at, fewest) =
                self.layouts.iter().enumerate().min_by_key(|(_, k)| k.hits).map_or((0, 0), |(i, k)| (i, k.hits));
            self.backoff = if fewest >= WORTHWHILE { 0 } else { grow(self.backoff) };
            self.layouts[at] = kept;
            self.last = at;
        }
        self.layouts.iter_mut().for_each(|k| k.hits /= 2);
        self.wait = self.backoff;
    }

    /// Lines read by the layout path since the decoder was made (for tests and benchmarks).
    pub(super) fn hits(&self) -> u64 {
        self.read
    }
}
