//! The files connector: [`FilesSource`] reads a folder of JSON / CSV line files (plain or `.gz`)
//! in name order, one micro-batch per group of files; [`FilesSink`] writes one JSON-lines file per
//! committed micro-batch / epoch, made visible atomically by rename.
//!
//! Source: Spark's file source (`maxFilesPerTrigger`; files whose name starts with `.` or `_` are
//! hidden) and file sink (a batch's output appears at once or not at all).

mod block;
pub(crate) mod lines;
mod sink;
mod source;
mod table;

pub use sink::FilesSink;
pub use source::FilesSource;
pub use table::{RowPositions, TableRows, TableVersion, TableWatch, read_table, table_version};

/// Whether a file name is hidden from the files source and from sink clean-up scans: names
/// starting with `.` or `_`, as Spark's `InMemoryFileIndex` hides them (temporary files,
/// `_SUCCESS`, `_spark_metadata`).
fn is_hidden(name: &str) -> bool {
    name.starts_with('.') || name.starts_with('_')
}

/// Finds the next `\n` of a read block, per line of the files source's fast path: on x86_64,
/// `memchr`'s SSE2 search (every x86_64 CPU has SSE2), inlined into the caller's loop; elsewhere
/// `memchr::memchr`. `memchr::memchr` dispatches at run time (to AVX2) through a function
/// pointer and two more calls per line: for the ~90-byte lines of the q7 bids file the inlined
/// search takes ~65 instructions a line instead of ~80 (bench/results/decode.md).
#[derive(Clone, Copy, Debug)]
pub(crate) struct NewlineFinder {
    #[cfg(target_arch = "x86_64")]
    sse2: Option<memchr::arch::x86_64::sse2::memchr::One>,
}

impl NewlineFinder {
    /// A finder of `\n`.
    pub(crate) fn new() -> NewlineFinder {
        NewlineFinder {
            #[cfg(target_arch = "x86_64")]
            sse2: memchr::arch::x86_64::sse2::memchr::One::new(b'\n'),
        }
    }

    /// The index of the first `\n` of `haystack`, if any.
    #[inline(always)]
    pub(crate) fn find(&self, haystack: &[u8]) -> Option<usize> {
        #[cfg(target_arch = "x86_64")]
        if let Some(one) = &self.sse2 {
            return one.find(haystack);
        }
        memchr::memchr(b'\n', haystack)
    }
}

/// Whether a line (without its terminator) holds nothing but ASCII white space. Such lines are
/// skipped, as Spark's JSON and CSV readers skip blank lines (CSV: `CSVUtils.filterCommentAndEmpty`
/// tests `line.trim.nonEmpty`; JSON: a blank line parses to no row).
pub(crate) fn is_blank(line: &[u8]) -> bool {
    line.iter().all(u8::is_ascii_whitespace)
}

/// `line` without a trailing `\n` or `\r\n` (or a lone trailing `\r`).
pub(crate) fn strip_newline(mut line: &[u8]) -> &[u8] {
    if let Some(rest) = line.strip_suffix(b"\n") {
        line = rest;
    }
    if let Some(rest) = line.strip_suffix(b"\r") {
        line = rest;
    }
    line
}

/// `line` without a leading UTF-8 byte order mark (`EF BB BF`). Called on the first line of a
/// file or of standard input, where an editor may have put one: Spark's readers skip it too
/// (its line reader and Jackson for JSON, univocity for CSV).
pub(crate) fn strip_bom(line: &[u8]) -> &[u8] {
    line.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(line)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hidden_names_start_with_dot_or_underscore() {
        assert!(is_hidden(".batch-000001.jsonl.tmp"));
        assert!(is_hidden("_SUCCESS"));
        assert!(!is_hidden("part-0.json"));
        assert!(!is_hidden("a_b.json"));
    }

    #[test]
    fn newline_is_stripped_in_both_conventions() {
        assert_eq!(strip_newline(b"{}\n"), b"{}");
        assert_eq!(strip_newline(b"{}\r\n"), b"{}");
        assert_eq!(strip_newline(b"{}"), b"{}");
        assert_eq!(strip_newline(b"a\rb\n"), b"a\rb");
    }

    #[test]
    fn a_byte_order_mark_is_stripped_once() {
        assert_eq!(strip_bom("\u{feff}{}".as_bytes()), b"{}");
        assert_eq!(strip_bom("\u{feff}\u{feff}".as_bytes()), "\u{feff}".as_bytes());
        assert_eq!(strip_bom(b"{}"), b"{}");
    }

    #[test]
    fn blank_lines_are_white_space_only() {
        assert!(is_blank(b""));
        assert!(is_blank(b" \t "));
        assert!(!is_blank(b" {} "));
    }
}
