//! [`Text`]: the text of a STRING value, short text in place.

use std::borrow::Borrow;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::ops::Deref;
use std::sync::Arc;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// The longest text held in place: what fits in a [`Value`](super::Value) (24 bytes) beside the
/// length.
pub const INLINE: usize = 23;

/// The text of a STRING value. Text of up to [`INLINE`] bytes (a key, a code, a name: most
/// strings a stream carries) is held in place, so making, copying and dropping one touches no
/// other memory and counts no reference; longer text is shared (`Arc<str>`), so copying it never
/// copies the bytes.
///
/// It reads as a `&str` (`Deref`), and compares, orders and hashes as its text does, whichever
/// way it is held.
#[derive(Clone)]
pub struct Text(Repr);

/// Text of [`INLINE`] bytes or fewer is always `Inline`, its bytes past its length zero.
///
/// `Inline` is the larger variant and its length byte comes last: that byte's values past
/// [`INLINE`] tell the two forms apart, and a [`Value`](super::Value) holding a `Text` tells its
/// own variants apart there too (its other variants fit before it), so neither needs a tag byte
/// of its own: 24 bytes in all, as the test `a_value_is_24_bytes` holds.
#[derive(Clone)]
enum Repr {
    Shared(Arc<str>),
    Inline(Inline),
}

/// Text held in place: `bytes[..len]` (valid UTF-8: copied from a `str`), the length last.
#[derive(Clone)]
#[repr(C)]
struct Inline {
    bytes: [u8; INLINE],
    len: Len,
}

/// The length of text held in place: 0..=[`INLINE`], as an enum so that the other values of its
/// byte are free for the tags of [`Repr`] and [`Value`](super::Value).
#[derive(Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
#[rustfmt::skip]
enum Len {
    L0, L1, L2, L3, L4, L5, L6, L7, L8, L9, L10, L11, L12, L13, L14, L15, L16, L17, L18, L19, L20,
    L21, L22, L23,
}

impl Len {
    #[rustfmt::skip]
    const ALL: [Len; INLINE + 1] = {
        use Len::*;
        [L0, L1, L2, L3, L4, L5, L6, L7, L8, L9, L10, L11, L12, L13, L14, L15, L16, L17, L18, L19,
         L20, L21, L22, L23]
    };

    #[inline(always)]
    fn get(self) -> usize {
        self as u8 as usize
    }
}

impl Text {
    /// `s` as a value's text: in place when it is [`INLINE`] bytes or fewer, shared otherwise.
    #[inline]
    pub fn new(s: &str) -> Text {
        if s.len() <= INLINE {
            let mut bytes = [0u8; INLINE];
            bytes[..s.len()].copy_from_slice(s.as_bytes());
            Text(Repr::Inline(Inline { bytes, len: Len::ALL[s.len()] }))
        } else {
            Text(Repr::Shared(Arc::from(s)))
        }
    }

    /// The texts of `parts`, one after the other: held in place when the whole is [`INLINE`]
    /// bytes or fewer (no allocation), shared otherwise (SQL's `concat`).
    pub fn concat<'a, I>(parts: I) -> Text
    where
        I: Iterator<Item = &'a str> + Clone,
    {
        let len: usize = parts.clone().map(str::len).sum();
        if len <= INLINE {
            let mut bytes = [0u8; INLINE];
            let mut at = 0;
            // (a second pass that gives more bytes than the first falls to the shared form)
            let fits = parts.clone().all(|p| {
                let Some(slot) = bytes.get_mut(at..at + p.len()) else { return false };
                slot.copy_from_slice(p.as_bytes());
                at += p.len();
                true
            });
            if fits {
                // (texts one after the other: a `str`, cut at its end)
                return Text(Repr::Inline(Inline { bytes, len: Len::ALL[at] }));
            }
        }
        let mut s = String::with_capacity(len);
        parts.for_each(|p| s.push_str(p));
        // (short text is always in place, whatever the passes gave)
        Text::new(&s)
    }

    /// The text.
    #[inline]
    pub fn as_str(&self) -> &str {
        match &self.0 {
            Repr::Inline(Inline { bytes, len }) => {
                let b = &bytes[..len.get()];
                // SAFETY: `Inline` is made only by `Text::new`, from the bytes of a `str` cut
                // at its end, by `Text::concat`, from the bytes of `str`s one after the other
                // (a `str`), cut at their end, and by `Default`, empty; those bytes are never
                // changed after.
                #[allow(unsafe_code)]
                unsafe {
                    std::str::from_utf8_unchecked(b)
                }
            }
            Repr::Shared(s) => s,
        }
    }

    /// Whether `self` and `other` share one text (a clone of the other, or of the same text):
    /// `false` for text held in place.
    pub fn shares_with(&self, other: &Text) -> bool {
        matches!((&self.0, &other.0), (Repr::Shared(a), Repr::Shared(b)) if Arc::ptr_eq(a, b))
    }

    /// The bytes of text held in place as three words, little-endian, that together cover all
    /// [`INLINE`] of them: bytes 0..8, 8..16 and 15..23 (the last two share byte 15). The bytes
    /// past the text's end are zero. `None` for shared text. For checks that every byte passes
    /// at once (zero is ASCII, and neither a letter nor a digit).
    #[inline(always)]
    pub(crate) fn inline_words(&self) -> Option<[u64; 3]> {
        let Repr::Inline(i) = &self.0 else { return None };
        let word = |k: usize| u64::from_le_bytes(i.bytes[k..k + 8].try_into().unwrap_or_default());
        Some([word(0), word(8), word(INLINE - 8)])
    }

    /// Whether the text is held in place (not shared).
    pub fn is_inline(&self) -> bool {
        matches!(self.0, Repr::Inline(_))
    }
}

impl Default for Text {
    fn default() -> Text {
        Text(Repr::Inline(Inline { bytes: [0; INLINE], len: Len::L0 }))
    }
}

impl Deref for Text {
    type Target = str;

    #[inline]
    fn deref(&self) -> &str {
        self.as_str()
    }
}

impl AsRef<str> for Text {
    fn as_ref(&self) -> &str {
        self.as_str()
    }
}

impl Borrow<str> for Text {
    fn borrow(&self) -> &str {
        self.as_str()
    }
}

impl From<&str> for Text {
    fn from(s: &str) -> Text {
        Text::new(s)
    }
}

impl From<&String> for Text {
    fn from(s: &String) -> Text {
        Text::new(s)
    }
}

impl From<String> for Text {
    fn from(s: String) -> Text {
        Text::new(&s)
    }
}

impl From<Box<str>> for Text {
    fn from(s: Box<str>) -> Text {
        Text::new(&s)
    }
}

impl From<std::borrow::Cow<'_, str>> for Text {
    fn from(s: std::borrow::Cow<'_, str>) -> Text {
        Text::new(&s)
    }
}

impl From<Arc<str>> for Text {
    /// Short text is copied in place; longer text keeps sharing `s`.
    fn from(s: Arc<str>) -> Text {
        if s.len() <= INLINE { Text::new(&s) } else { Text(Repr::Shared(s)) }
    }
}

impl From<&Arc<str>> for Text {
    fn from(s: &Arc<str>) -> Text {
        Text::from(Arc::clone(s))
    }
}

impl From<Text> for String {
    fn from(t: Text) -> String {
        t.as_str().to_string()
    }
}

impl From<&Text> for Arc<str> {
    fn from(t: &Text) -> Arc<str> {
        match &t.0 {
            Repr::Shared(s) => Arc::clone(s),
            Repr::Inline(_) => Arc::from(t.as_str()),
        }
    }
}

impl PartialEq for Text {
    /// Text held in place compares as two arrays (the bytes past the end are zero); shared text
    /// is equal without reading it when both share the same. Text of [`INLINE`] bytes or fewer
    /// is always held in place, so the two forms never hold the same text.
    #[inline]
    fn eq(&self, other: &Text) -> bool {
        match (&self.0, &other.0) {
            (Repr::Inline(a), Repr::Inline(b)) => a.len == b.len && a.bytes == b.bytes,
            (Repr::Shared(a), Repr::Shared(b)) => Arc::ptr_eq(a, b) || **a == **b,
            _ => false,
        }
    }
}

impl Eq for Text {}

impl PartialEq<str> for Text {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == other
    }
}

impl PartialEq<&str> for Text {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

impl PartialOrd for Text {
    fn partial_cmp(&self, other: &Text) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Text {
    fn cmp(&self, other: &Text) -> std::cmp::Ordering {
        self.as_str().cmp(other.as_str())
    }
}

impl Hash for Text {
    /// As the text's `str` hashes, so a map keyed by `Text` is looked up by `&str`.
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.as_str().hash(state);
    }
}

impl fmt::Debug for Text {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.as_str(), f)
    }
}

impl fmt::Display for Text {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self.as_str(), f)
    }
}

impl Serialize for Text {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for Text {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Text, D::Error> {
        struct Visit;
        impl serde::de::Visitor<'_> for Visit {
            type Value = Text;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Text, E> {
                Ok(Text::new(v))
            }
        }
        d.deserialize_str(Visit)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::hash_map::DefaultHasher;

    fn hash_of<T: Hash + ?Sized>(t: &T) -> u64 {
        let mut h = DefaultHasher::new();
        t.hash(&mut h);
        h.finish()
    }

    #[test]
    fn short_text_is_in_place_and_longer_text_shared() {
        for s in ["", "a", "key-1234", "ß€🦀 is 22 bytes", &"x".repeat(INLINE)] {
            assert!(s.len() <= INLINE, "{s}");
            let t = Text::new(s);
            assert!(t.is_inline(), "{s:?}");
            assert_eq!(&*t, s);
        }
        for s in [&"x".repeat(INLINE + 1) as &str, "a longer text than twenty-two bytes"] {
            let t = Text::new(s);
            assert!(!t.is_inline(), "{s:?}");
            assert_eq!(&*t, s);
        }
    }

    #[test]
    fn compares_orders_and_hashes_as_its_text_whichever_way_held() {
        let long = "y".repeat(40);
        let a: Arc<str> = Arc::from(long.as_str());
        let shared = Text::from(a);
        let copied = Text::new(&long);
        assert_eq!(shared, copied);
        assert_eq!(hash_of(&shared), hash_of(long.as_str()));
        assert_eq!(hash_of(&Text::new("k")), hash_of("k"));
        assert!(Text::new("abc") < Text::new("abd"));
        assert!(Text::new("ab") < Text::new(&"ab".repeat(20)));
        assert_eq!(format!("{:?}", Text::new("q\"")), format!("{:?}", "q\""));
        let short_arc: Arc<str> = Arc::from("short");
        assert!(Text::from(short_arc).is_inline());
    }

    proptest::proptest! {
        /// Any text, either side of `INLINE` (ASCII and not, with NUL bytes): reads back as
        /// given, and compares, orders and hashes as its `str` does against any other.
        #[test]
        fn reads_compares_orders_and_hashes_as_its_str(
            a in "[a-zA-Z0-9\\x00é€🦀 ]{0,40}",
            b in "[a-zA-Z0-9\\x00é€🦀 ]{0,40}",
        ) {
            let (x, y) = (Text::new(&a), Text::new(&b));
            proptest::prop_assert_eq!(&*x, a.as_str());
            proptest::prop_assert_eq!(x.is_inline(), a.len() <= INLINE);
            proptest::prop_assert_eq!(x == y, a == b);
            proptest::prop_assert_eq!(x.cmp(&y), a.cmp(&b));
            proptest::prop_assert_eq!(hash_of(&x), hash_of(a.as_str()));
            let shared: Arc<str> = Arc::from(a.as_str());
            proptest::prop_assert!(Text::from(shared) == x);
            proptest::prop_assert!(x.clone() == x);
        }

        /// `concat` is the text of its parts one after the other, held in place exactly when
        /// it is short enough, whatever the parts' lengths and characters.
        #[test]
        fn concat_is_its_parts_one_after_the_other(parts in proptest::collection::vec("[a-z\x00é🦀]{0,9}", 0..6)) {
            let joined: String = parts.concat();
            let t = Text::concat(parts.iter().map(String::as_str));
            proptest::prop_assert_eq!(&*t, joined.as_str());
            proptest::prop_assert_eq!(t.is_inline(), joined.len() <= INLINE);
            proptest::prop_assert!(t == Text::new(&joined));
        }
    }

    #[test]
    fn round_trips_through_serde_as_a_string() {
        for s in ["", "key-7", &"z".repeat(30) as &str] {
            let json = serde_json::to_string(&Text::new(s)).unwrap();
            assert_eq!(json, serde_json::to_string(s).unwrap());
            let back: Text = serde_json::from_str(&json).unwrap();
            assert_eq!(&*back, s);
        }
    }
}
