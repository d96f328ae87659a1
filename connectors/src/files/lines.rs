//! [`read_record`]: one record of a line-oriented input (a file or standard input), in bounded
//! memory: a line, or with CSV the lines of a record whose quoted field holds a newline.

use std::io::{BufRead, ErrorKind};

use crate::REJECTED_HEAD_BYTES;

/// How records are cut from the input.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct RecordRules {
    /// A record longer than this (bytes, without its final line terminator) is not held: only
    /// its first [`REJECTED_HEAD_BYTES`] are kept and the rest is skipped.
    pub max_record_bytes: u64,
    /// CSV (RFC 4180): a newline inside a quoted field belongs to the field, so the record goes
    /// on to the next line. A quote opens a quoted field only at the start of a field, as
    /// `eddy_engine::decode::CsvDecoder` reads it.
    pub csv: bool,
}

/// What [`read_record`] read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Chunk {
    /// Bytes taken from the reader (with line terminators); 0 at the end of the input.
    pub consumed: u64,
    /// Lines it spans (a last line without its newline counts).
    pub lines: u64,
    /// Whether it ended with a newline outside any quoted field. `false`: the input ended first
    /// (a last line without newline, or a CSV quote still open).
    pub complete: bool,
    /// Its length without the final line terminator when it is longer than
    /// [`RecordRules::max_record_bytes`] (the buffer then holds only its first bytes).
    pub too_large: Option<u64>,
}

/// Where a CSV scan stands (the states of RFC 4180 with the decoder's leniency: a quote inside
/// an unquoted field is a literal character).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Csv {
    FieldStart,
    Unquoted,
    Quoted,
    /// A quote inside a quoted field: the closing one, or the first of `""`.
    QuoteInQuoted,
    /// After a closing quote (text here is malformed, the decoder says so).
    Closed,
}

impl Csv {
    fn step(self, c: u8) -> Csv {
        match (self, c) {
            (Csv::Quoted, b'"') => Csv::QuoteInQuoted,
            (Csv::Quoted, _) => Csv::Quoted,
            (Csv::QuoteInQuoted, b'"') => Csv::Quoted,
            (_, b',' | b'\n') => Csv::FieldStart,
            (Csv::FieldStart, b'"') => Csv::Quoted,
            (Csv::FieldStart | Csv::Unquoted, _) => Csv::Unquoted,
            (Csv::QuoteInQuoted | Csv::Closed, _) => Csv::Closed,
        }
    }
}

/// Reads one record into `buf` (cleared first; without the final `\n`, which the caller strips
/// with its `\r`): bytes up to a newline, and with CSV on to the newline that ends a line with no
/// quoted field open. Memory is bounded: past `max_record_bytes` the buffer keeps the first
/// [`REJECTED_HEAD_BYTES`] bytes and the rest is read and dropped up to the record's end.
///
/// # Errors
/// The reader's error (`Interrupted` is retried); `buf` then holds what was read of the
/// incomplete record (at most `max_record_bytes` and a read buffer more).
pub(crate) fn read_record(reader: &mut dyn BufRead, buf: &mut Vec<u8>, rules: RecordRules) -> std::io::Result<Chunk> {
    buf.clear();
    let mut chunk = Chunk { consumed: 0, lines: 0, complete: false, too_large: None };
    let mut length: u64 = 0;
    let mut csv = Csv::FieldStart;
    // The last two bytes taken (to tell a `\r\n` terminator once the buffer is cut).
    let mut tail = [0u8; 2];
    loop {
        let available = match reader.fill_buf() {
            Ok(b) => b,
            Err(e) if e.kind() == ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if available.is_empty() {
            // A last line without newline; one that ends with a newline (inside a quoted field
            // left open) is counted already.
            if chunk.consumed > 0 && tail[1] != b'\n' {
                chunk.lines += 1;
            }
            break;
        }
        let mut take = available.len();
        let mut ended = false;
        let mut from = 0;
        while let Some(i) = memchr::memchr(b'\n', &available[from..]) {
            let newline = from + i;
            if rules.csv {
                csv = available[from..=newline].iter().fold(csv, |s, &c| s.step(c));
                if csv != Csv::FieldStart {
                    // The newline is inside a quoted field: the record goes on.
                    chunk.lines += 1;
                    from = newline + 1;
                    continue;
                }
            }
            take = newline + 1;
            ended = true;
            break;
        }
        if rules.csv && !ended {
            csv = available[from..].iter().fold(csv, |s, &c| s.step(c));
        }
        let piece = &available[..take];
        length += take as u64;
        match piece {
            [.., a, b] => tail = [*a, *b],
            [b] => tail = [tail[1], *b],
            [] => {}
        }
        if chunk.too_large.is_none() {
            buf.extend_from_slice(piece);
            // Room for a `\r\n` terminator past the limit.
            if buf.len() as u64 > rules.max_record_bytes.saturating_add(2) {
                buf.truncate(REJECTED_HEAD_BYTES);
                chunk.too_large = Some(0);
            }
        }
        reader.consume(take);
        chunk.consumed += take as u64;
        if ended {
            chunk.lines += 1;
            chunk.complete = true;
            break;
        }
    }
    let terminator = match () {
        _ if !chunk.complete => 0,
        _ if tail == *b"\r\n" => 2,
        _ => 1,
    };
    if chunk.complete && chunk.too_large.is_none() {
        buf.truncate(buf.len() - 1);
    }
    let record_length = length - terminator;
    if chunk.too_large.is_some() || record_length > rules.max_record_bytes {
        buf.truncate(REJECTED_HEAD_BYTES);
        chunk.too_large = Some(record_length);
    }
    Ok(chunk)
}

#[cfg(test)]
mod tests {
    use std::io::BufReader;

    use super::*;

    const JSON: RecordRules = RecordRules { max_record_bytes: 1 << 20, csv: false };
    const CSV: RecordRules = RecordRules { max_record_bytes: 1 << 20, csv: true };

    /// Every record of `text` read with a read buffer of `capacity` bytes, as (text, chunk).
    fn records(text: &str, rules: RecordRules, capacity: usize) -> Vec<(String, Chunk)> {
        let mut reader = BufReader::with_capacity(capacity, text.as_bytes());
        let mut buf = Vec::new();
        let mut out = Vec::new();
        loop {
            let chunk = read_record(&mut reader, &mut buf, rules).unwrap();
            if chunk.consumed == 0 {
                return out;
            }
            out.push((String::from_utf8(buf.clone()).unwrap(), chunk));
        }
    }

    fn chunk(consumed: u64, lines: u64, complete: bool) -> Chunk {
        Chunk { consumed, lines, complete, too_large: None }
    }

    #[test]
    fn lines_are_cut_at_newlines_and_a_last_line_without_one_is_incomplete() {
        for capacity in [1, 3, 64] {
            let got = records("ab\r\n\ncd", JSON, capacity);
            let expected = vec![
                ("ab\r".to_string(), chunk(4, 1, true)),
                (String::new(), chunk(1, 1, true)),
                ("cd".to_string(), chunk(2, 1, false)),
            ];
            assert_eq!(got, expected, "read buffer of {capacity} bytes");
        }
    }

    #[test]
    fn a_csv_record_goes_on_while_a_quoted_field_is_open() {
        let text = "1,\"multi\nline\",3\n2,\"a \"\"q\"\"\nb\"\"\",x\nx\"y,\"z\n";
        for capacity in [1, 4, 64] {
            let got = records(text, CSV, capacity);
            let expected = vec![
                ("1,\"multi\nline\",3".to_string(), chunk(17, 2, true)),
                ("2,\"a \"\"q\"\"\nb\"\"\",x".to_string(), chunk(18, 2, true)),
                // A quote inside an unquoted field is literal; a field opened by a quote and
                // never closed runs to the end of the input.
                ("x\"y,\"z\n".to_string(), chunk(7, 1, false)),
            ];
            assert_eq!(got, expected, "read buffer of {capacity} bytes");
        }
        // JSON knows no quoting across lines.
        assert_eq!(records("\"a\nb\"\n", JSON, 64).len(), 2);
    }

    #[test]
    fn a_quote_left_open_to_the_end_of_input_spans_only_the_lines_there_are() {
        for capacity in [1, 5, 64] {
            // The header, then a record from line 2 whose quote never closes: lines 2 to 4.
            let got = records("k,txt,n\nd,\"unterminated\nline,4\ne,x,5\n", CSV, capacity);
            let rest = "d,\"unterminated\nline,4\ne,x,5\n";
            let expected = vec![("k,txt,n".to_string(), chunk(8, 1, true)), (rest.to_string(), chunk(29, 3, false))];
            assert_eq!(got, expected, "read buffer of {capacity} bytes");
            // Without the last newline, the last line still counts once.
            let got = records("d,\"unterminated\nline,4", CSV, capacity);
            assert_eq!(got, vec![("d,\"unterminated\nline,4".to_string(), chunk(22, 2, false))]);
        }
    }

    #[test]
    fn a_record_longer_than_the_limit_keeps_its_length_and_first_bytes_only() {
        let rules = RecordRules { max_record_bytes: 2000, csv: false };
        let long = "x".repeat(5000);
        let text = format!("{long}\r\nok\n{}\n{}", "y".repeat(2000), "z".repeat(2001));
        let got = records(&text, rules, 100);
        assert_eq!(got.len(), 4);
        assert_eq!(got[0].0, "x".repeat(REJECTED_HEAD_BYTES));
        assert_eq!(got[0].1, Chunk { consumed: 5002, lines: 1, complete: true, too_large: Some(5000) });
        assert_eq!(got[1], ("ok".to_string(), chunk(3, 1, true)));
        // At the limit: a record; one byte more: too large (also without a newline).
        assert_eq!(got[2].1, chunk(2001, 1, true));
        assert_eq!(got[3].1, Chunk { consumed: 2001, lines: 1, complete: false, too_large: Some(2001) });
    }
}
