//! The JSON decoder's layout path: the lines of a stream mostly share their layout (the same
//! keys in the same order, written with the same separators and whitespace), so the bytes
//! between the values of a line the fast path accepted are kept, and the next line is read by
//! comparing those bytes as words and decoding the value between each two of them by the kind
//! it had: no key is looked up, no whitespace scanned, no value's first byte dispatched on.
//!
//! A line whose layout differs in any byte, or one of whose values has another form (a `null`
//! where the learned line had a number, an escaped string, a fraction in a BIGINT column), is not decoded here: the caller resets the
//! record and gives the line to the fast path ([`super::json_fast`]), which decides it as
//! before, and may learn its layout for the next lines ([`Learning`], which keeps up to four).
//!
//! Why the same record as the fast path: a line matches a layout only when every byte outside
//! its values equals the learned line's, so it holds the same keys, in the same order, with the
//! same structure; those keys name the same columns (the column chosen for each key, the column
//! hint included, was the fast path's own choice on the learned line, and depends only on the
//! keys before it); and each value is checked and converted by the functions the fast path uses
//! for that form ([`scan_number`], [`number_value`], [`timestamp_prefix`], [`string_at`]). A
//! string value ends at its closing quote, which the next literal starts with. Property tests
//! (`json_props`) decode lines learned then damaged against the stateless decoder.
//!
//! Cost on the Nexmark bids record (four columns, spaced JSON), `decode_into` inclusive under
//! callgrind in the q7 file run: 1,075 instructions per record on the fast path, 720 on this
//! one with the word-wide integer and fraction reads (bench/results/decode.md, 2026-12-03).

use std::sync::Arc;

use crate::schema::DataType;
use crate::value::{Record, Value};

use super::Plan;
use super::json_fast::{FastKeys, any_string_end, number_value, put, string_at, string_end, word, ws};
use super::json_number::scan_number;
use super::text::timestamp_prefix;

/// Longest run of bytes between two values kept (`, "a_long_column_name": "`); a line with a
/// longer one has no layout.
const MAX_LITERAL: usize = 32;

/// Most values in a layout; a line with more has none.
const MAX_STEPS: usize = 64;

/// Longest tail after the last value (`}` and trailing whitespace).
const MAX_END: usize = 8;

/// The bytes between two values (or before the first), compared as little-endian words: every
/// whole word, then the last 8 bytes (overlapping), so nothing after the literal is read; a
/// literal of fewer than 8 bytes is compared masked when 8 bytes can be read, else byte by byte.
#[derive(Debug, Clone)]
struct Literal {
    len: usize,
    /// The whole words, then (at index `len / 8`) the last 8 bytes, or for `len < 8` the bytes
    /// zero-padded.
    words: [u64; MAX_LITERAL / 8 + 1],
    /// For `len < 8`: the mask of its bytes in a word.
    mask: u64,
    bytes: [u8; MAX_LITERAL],
}

impl Literal {
    fn new(text: &[u8]) -> Option<Literal> {
        let len = text.len();
        if len > MAX_LITERAL {
            return None;
        }
        let mut bytes = [0u8; MAX_LITERAL];
        bytes[..len].copy_from_slice(text);
        let mut words = [0u64; MAX_LITERAL / 8 + 1];
        let mask = if len >= 8 { u64::MAX } else { (1u64 << (8 * len)) - 1 };
        if len >= 8 {
            for (k, w) in words.iter_mut().enumerate().take(len / 8) {
                *w = word(text, 8 * k)?;
            }
            words[len / 8] = word(text, len - 8)?;
        } else {
            let mut padded = [0u8; 8];
            padded[..len].copy_from_slice(text);
            words[0] = u64::from_le_bytes(padded);
        }
        Some(Literal { len, words, mask, bytes })
    }

    /// Whether the literal is at `i` in `b`.
    #[inline(always)]
    fn matches(&self, b: &[u8], i: usize) -> bool {
        let Some(s) = b.get(i..i.wrapping_add(self.len)) else {
            return false;
        };
        if self.len >= 8 {
            let whole = self.len / 8;
            for k in 0..whole {
                if word(s, 8 * k) != Some(self.words[k]) {
                    return false;
                }
            }
            word(s, self.len - 8) == Some(self.words[whole])
        } else {
            match word(b, i) {
                Some(w) => w & self.mask == self.words[0],
                None => s == &self.bytes[..self.len],
            }
        }
    }
}

/// How a value of the layout is read.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Kind {
    /// A JSON number into a column of this type.
    Number(DataType),
    /// A TIMESTAMP string, its opening quote in the literal before it.
    Timestamp,
    /// A STRING column's string without escapes, its opening quote in the literal before it.
    Str,
    /// `true` or `false` into a BOOLEAN column.
    Bool,
    /// `null` for a decoded column.
    Null,
    /// A number of a key whose value is not decoded.
    SkipNumber,
    /// `true`, `false` or `null` of a key whose value is not decoded.
    SkipLiteral,
    /// A string of a key whose value is not decoded (its escapes checked).
    SkipStr,
}

#[derive(Debug, Clone)]
struct Step {
    before: Literal,
    /// The column written (unused for the skipping kinds).
    column: usize,
    kind: Kind,
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
}

impl Layout {
    /// The layout of `b`, a line the fast path accepted with `keys`; `None` when it has a value
    /// of another form than [`Kind`]'s (an object or array, an escaped string, a number for a
    /// STRING column, ...), an escaped key, or runs of bytes too long to keep.
    fn learn(keys: &FastKeys, b: &[u8]) -> Option<Layout> {
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
            if b.get(i) != Some(&b'"') || steps.len() == MAX_STEPS {
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
                            (Kind::Timestamp, i + 1, i + 1 + n)
                        }
                        (b'"', DataType::String) => (Kind::Str, i + 1, string_at(b, i + 1)?.1),
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
                        _ if number => (Kind::SkipNumber, i, scan_number(b, i)?.end),
                        b't' | b'f' | b'n' => (Kind::SkipLiteral, i, json_literal(b, i)?.1),
                        _ => return None,
                    }
                }
            };
            let column = column.map_or(0, |(c, _)| c);
            steps.push(Step { before: Literal::new(&b[literal_start..value_start])?, column, kind });
            literal_start = value_end;
            // A string's closing quote is the first byte of the next literal.
            i = ws(
                b,
                if matches!(kind, Kind::Timestamp | Kind::Str | Kind::SkipStr) { value_end + 1 } else { value_end },
            );
            match b.get(i) {
                Some(b',') => i = ws(b, i + 1),
                Some(b'}') => {
                    if ws(b, i + 1) != b.len() || b.len() - literal_start > MAX_END {
                        return None;
                    }
                    let end = Literal::new(&b[literal_start..])?;
                    return Some(Layout { steps: steps.into(), end });
                }
                _ => return None,
            }
        }
    }

    /// Decodes `b` into `values` (all null) when it has this layout: `Some(())` with the record
    /// the fast path would give. `None` otherwise, `values` then holding some of the line's
    /// values (the caller resets them).
    #[inline(always)]
    fn read(&self, plan: &Plan, b: &[u8], values: &mut [Value]) -> Option<()> {
        let mut i = 0;
        for step in self.steps.iter() {
            if !step.before.matches(b, i) {
                return None;
            }
            i += step.before.len;
            i = match step.kind {
                Kind::Number(ty) => {
                    let n = scan_number(b, i)?;
                    put(values.get_mut(step.column)?, number_value(&n, &b[i..n.end], ty, plan)?);
                    n.end
                }
                Kind::Timestamp => {
                    let (t, n) = timestamp_prefix(b.get(i..)?)?;
                    put(values.get_mut(step.column)?, Value::Timestamp(t));
                    i + n
                }
                Kind::Str => {
                    let (content, z) = string_at(b, i)?;
                    put(values.get_mut(step.column)?, Value::Str(Arc::from(content)));
                    z
                }
                Kind::Bool => {
                    let (v, end) = json_literal(b, i)?;
                    put(values.get_mut(step.column)?, Value::Bool(v?));
                    end
                }
                Kind::Null => match json_literal(b, i)? {
                    // Written, not left: an earlier occurrence of the key may have set it (the
                    // last one wins).
                    (None, end) => {
                        put(values.get_mut(step.column)?, Value::Null);
                        end
                    }
                    _ => return None,
                },
                Kind::SkipNumber => scan_number(b, i)?.end,
                Kind::SkipStr => any_string_end(b, i)?,
                Kind::SkipLiteral => json_literal(b, i)?.1,
            };
        }
        if b.len() != i + self.end.len || !self.end.matches(b, i) {
            return None;
        }
        for &r in plan.required.iter() {
            if values[r].is_null() {
                return None;
            }
        }
        Some(())
    }
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
    /// Whether a layout is kept ([`Learning::read`] can match).
    #[inline(always)]
    pub(super) fn has_layout(&self) -> bool {
        !self.layouts.is_empty()
    }

    /// Decodes `b` into `record` (all null, of the plan's width) with a layout kept, the one
    /// that matched last tried first: `Some(())` with the fast path's record. `None` when none
    /// matches; `record` must then be reset.
    #[inline(always)]
    pub(super) fn read(&mut self, plan: &Plan, b: &[u8], record: &mut Record) -> Option<()> {
        let kept = self.layouts.get_mut(self.last)?;
        if kept.layout.read(plan, b, &mut record.values).is_some() {
            kept.hits += 1;
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
    /// The layout tried before may have written some values: those of the keys it matched
    /// before failing. A layout that matches writes them again (it matches every byte of the
    /// line outside the values, those keys included, which name the same columns after the same
    /// keys), so no reset is needed between attempts.
    #[cold]
    #[inline(never)]
    fn read_others(&mut self, plan: &Plan, b: &[u8], record: &mut Record) -> Option<()> {
        for (at, kept) in self.layouts.iter_mut().enumerate() {
            if at != self.last && kept.layout.read(plan, b, &mut record.values).is_some() {
                kept.hits += 1;
                self.last = at;
                self.read += 1;
                return Some(());
            }
        }
        None
    }

    /// After the fast path accepted `b`, which no layout kept matched: learns its layout (kept
    /// beside the others, or in place of the one that matched fewest lines lately), or counts
    /// down to the next learning.
    #[cold]
    #[inline(never)]
    pub(super) fn missed(&mut self, keys: &FastKeys, b: &[u8]) {
        if self.wait > 0 {
            self.wait -= 1;
            return;
        }
        let grow = |backoff: u32| (backoff * 2).clamp(1, MAX_WAIT);
        let Some(layout) = Layout::learn(keys, b).map(Box::new) else {
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
