//! Standard input and output: [`StdinSource`] (JSON / CSV lines from stdin, read by a background
//! thread) and [`StdoutSink`] (JSON lines to stdout).

use std::fmt;
use std::io::{BufRead, BufReader, BufWriter, Read, Write};
use std::time::Duration;

use crossbeam_channel::{Receiver, RecvTimeoutError, Sender, TryRecvError};

use eddy_engine::spec::DEFAULT_MAX_RECORD_BYTES;

use crate::files::lines::{RecordRules, read_record};
use crate::{ConnectorError, Payload, Poll, Position, Rejection, Sink, Source, SourceItem, SourceOffset};

/// Lines read ahead of the consumer (the bound of the reader thread's channel): a slow pipeline
/// makes the reader thread block, and so the writer of stdin, instead of growing memory.
const READ_AHEAD_LINES: usize = 4096;

/// Buffer sizes (bytes).
const BUFFER: usize = 64 * 1024;

/// What the reader thread sends.
enum Message {
    /// A non-blank record (without its terminator), its first and last 1-based line numbers
    /// (several lines: a CSV record with a newline in a quoted field).
    Line(u64, u64, Vec<u8>),
    /// A record longer than `max_record_bytes`: its lines, its length and its first bytes.
    TooLarge(u64, u64, u64, Vec<u8>),
    /// Reading failed after `line` lines.
    Failed(u64, std::io::Error),
    /// End of input.
    End,
}

/// Lines of standard input (or of any reader): one [`SourceItem`] ([`Payload::Raw`], without the
/// `\n` / `\r\n`) per non-blank line, at [`Position::Stdin`] (1-based line numbers, blank lines
/// counted). A background thread reads ahead into a bounded channel (4096 lines); a poll waits up
/// to its timeout for the first line. At end of input the source is [`Poll::Exhausted`]; a last
/// line without newline is a record.
///
/// Records are read in bounded memory: one longer than `max_record_bytes` is skipped to its end
/// and given as a [`Rejection::TooLarge`] (its length and first bytes). With `csv_header`, a
/// newline inside a quoted field belongs to the field (RFC 4180): the record spans lines.
///
/// A UTF-8 byte order mark at the start of the input is skipped (as Spark's readers skip one at
/// the start of a file). With `csv_header`, the first non-blank line is the CSV header: it is
/// returned as a [`Payload::Header`] item, also by a source resumed past it ([`Source::seek`]).
///
/// A restart from a checkpoint expects the same input again from its start (`eddy run p.toml <
/// events.jsonl`) and skips as many lines as the checkpoint says were consumed.
///
/// The reader thread blocks in `read` while stdin is open and nothing arrives; once the source is
/// dropped it ends at its next line (or at end of input).
pub struct StdinSource {
    lines: Receiver<Message>,
    done: bool,
    /// Whether the CSV header line is still to come.
    header_pending: bool,
    /// The number of the last line consumed (returned or skipped).
    last_line: u64,
    /// Lines up to this number are skipped ([`Source::seek`]).
    skip_through: u64,
    /// The limit the reader thread applies (for rejections' messages).
    max_record_bytes: u64,
}

impl fmt::Debug for StdinSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StdinSource").field("queued", &self.lines.len()).field("done", &self.done).finish()
    }
}

impl StdinSource {
    /// A source reading the process's standard input; with `csv_header`, its first non-blank
    /// line is a CSV header.
    ///
    /// # Errors
    /// [`ConnectorError::Io`] when the reader thread cannot be started.
    pub fn new(csv_header: bool, max_record_bytes: u64) -> Result<StdinSource, ConnectorError> {
        StdinSource::from_reader_limited(std::io::stdin(), csv_header, max_record_bytes)
    }

    /// A source reading `reader` as if it were standard input (tests, pipes), with the default
    /// `max_record_bytes`.
    ///
    /// # Errors
    /// [`ConnectorError::Io`] when the reader thread cannot be started.
    pub fn from_reader<R: Read + Send + 'static>(reader: R, csv_header: bool) -> Result<StdinSource, ConnectorError> {
        StdinSource::from_reader_limited(reader, csv_header, DEFAULT_MAX_RECORD_BYTES)
    }

    /// A source reading `reader` as if it were standard input; records longer than
    /// `max_record_bytes` (at least 1) are rejected.
    ///
    /// # Errors
    /// [`ConnectorError::Io`] when the reader thread cannot be started.
    pub fn from_reader_limited<R: Read + Send + 'static>(
        reader: R,
        csv_header: bool,
        max_record_bytes: u64,
    ) -> Result<StdinSource, ConnectorError> {
        let (tx, rx) = crossbeam_channel::bounded(READ_AHEAD_LINES);
        let rules = RecordRules { max_record_bytes: max_record_bytes.max(1), csv: csv_header };
        std::thread::Builder::new()
            .name("eddy-stdin".into())
            .spawn(move || read_lines(BufReader::with_capacity(BUFFER, reader), rules, &tx))
            .map_err(|source| ConnectorError::Io { what: "starting the stdin reader thread".into(), source })?;
        Ok(StdinSource {
            lines: rx,
            done: false,
            header_pending: csv_header,
            last_line: 0,
            skip_through: 0,
            max_record_bytes: rules.max_record_bytes,
        })
    }

    /// Adds one message to `out`; returns whether the input ended.
    fn take(&mut self, message: Message, out: &mut Vec<SourceItem>) -> Result<bool, ConnectorError> {
        match message {
            Message::TooLarge(line, through, bytes, head) => {
                self.last_line = through;
                if through > self.skip_through {
                    let rejection = Rejection::TooLarge { bytes, max: self.max_record_bytes, head };
                    let position = Position::Stdin { line, through };
                    tracing::warn!(%position, bytes, "record longer than max_record_bytes, skipped to its end");
                    out.push(SourceItem { payload: Payload::Rejected(Box::new(rejection)), position, created_ns: 0 });
                }
                Ok(false)
            }
            Message::Line(line, through, bytes) => {
                self.last_line = through;
                // The header is returned even when a restart skips its line: the lines after it
                // are decoded under it.
                let payload = if std::mem::take(&mut self.header_pending) {
                    Payload::Header(bytes)
                } else if through <= self.skip_through {
                    return Ok(false);
                } else {
                    Payload::Raw(bytes)
                };
                out.push(SourceItem { payload, position: Position::Stdin { line, through }, created_ns: 0 });
                Ok(false)
            }
            Message::Failed(line, source) => {
                self.done = true;
                Err(ConnectorError::Io { what: format!("reading standard input after line {line}"), source })
            }
            Message::End => {
                self.done = true;
                Ok(true)
            }
        }
    }
}

/// The reader thread: sends each non-blank record, then `End` (or `Failed`). Stops early when
/// the source was dropped (the channel is disconnected).
fn read_lines(mut reader: impl BufRead, rules: RecordRules, tx: &Sender<Message>) {
    let mut line = 0u64;
    let mut buf = Vec::new();
    loop {
        match read_record(&mut reader, &mut buf, rules) {
            Ok(chunk) if chunk.consumed == 0 => {
                // The source may be gone already: nobody to tell, so the result is not needed.
                let _ = tx.send(Message::End);
                return;
            }
            Ok(chunk) => {
                let first = line + 1;
                line += chunk.lines;
                let text = crate::files::strip_newline(&buf);
                let text = if first == 1 { crate::files::strip_bom(text) } else { text };
                let message = match chunk.too_large {
                    Some(bytes) => Message::TooLarge(first, line, bytes, text.to_vec()),
                    None if crate::files::is_blank(text) => continue,
                    None => Message::Line(first, line, text.to_vec()),
                };
                if tx.send(message).is_err() {
                    return;
                }
            }
            Err(e) => {
                // As for `End`: a dropped source needs no error.
                let _ = tx.send(Message::Failed(line, e));
                return;
            }
        }
    }
}

impl Source for StdinSource {
    /// Appends up to `max` lines, waiting at most `timeout` for the first: [`Poll::Data`] when
    /// lines were appended, [`Poll::Idle`] when none came in time, [`Poll::Exhausted`] at end
    /// of input (after the last lines were returned).
    ///
    /// # Errors
    /// [`ConnectorError::Io`] when reading stdin failed (the source is then finished).
    fn poll(&mut self, out: &mut Vec<SourceItem>, max: usize, timeout: Duration) -> Result<Poll, ConnectorError> {
        if self.done {
            return Ok(Poll::Exhausted);
        }
        if max == 0 {
            return Ok(Poll::Data);
        }
        let first = match self.lines.recv_timeout(timeout) {
            Ok(message) => message,
            Err(RecvTimeoutError::Timeout) => return Ok(Poll::Idle),
            Err(RecvTimeoutError::Disconnected) => Message::End,
        };
        let start = out.len();
        let mut ended = self.take(first, out)?;
        while !ended && out.len() - start < max {
            ended = match self.lines.try_recv() {
                Ok(message) => self.take(message, out)?,
                Err(TryRecvError::Empty) => break,
                Err(TryRecvError::Disconnected) => self.take(Message::End, out)?,
            };
        }
        Ok(if out.len() > start || !ended { Poll::Data } else { Poll::Exhausted })
    }

    /// The number of the last line consumed.
    fn offset(&self) -> Option<SourceOffset> {
        (self.last_line > 0 || self.skip_through > 0)
            .then(|| SourceOffset::Stdin { line: self.last_line.max(self.skip_through) })
    }

    /// Skips the first `line` lines: a restart expects the same input from its start again
    /// (`eddy run p.toml < events.jsonl`); a CSV header among them is still returned.
    ///
    /// # Errors
    /// [`ConnectorError::Config`] for an offset of another kind of source.
    fn seek(&mut self, offset: &SourceOffset) -> Result<(), ConnectorError> {
        let SourceOffset::Stdin { line } = offset else {
            return Err(ConnectorError::Config(format!(
                "stdin source: the checkpoint holds a {} offset ({offset}), not a line number",
                offset.kind()
            )));
        };
        self.skip_through = *line;
        Ok(())
    }
}

/// Writes output rows to standard output (or any writer), one JSON object and a newline each.
///
/// With `flush_each_row` (real-time mode) the rows of each hand-over are flushed together
/// ([`Sink::written`]), so a reader sees them as soon as they are made; otherwise rows are buffered (64 KiB) and flushed at [`Sink::commit`]. The batch id
/// and key are ignored: stdout has neither files nor keys.
pub struct StdoutSink {
    out: BufWriter<Box<dyn Write + Send>>,
    flush_each_row: bool,
}

impl fmt::Debug for StdoutSink {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StdoutSink")
            .field("buffered", &self.out.buffer().len())
            .field("flush_each_row", &self.flush_each_row)
            .finish()
    }
}

impl StdoutSink {
    /// A sink writing to the process's standard output.
    pub fn new(flush_each_row: bool) -> StdoutSink {
        StdoutSink::with_writer(Box::new(std::io::stdout()), flush_each_row)
    }

    /// A sink writing to `writer` as if it were standard output (tests, pipes).
    pub fn with_writer(writer: Box<dyn Write + Send>, flush_each_row: bool) -> StdoutSink {
        StdoutSink { out: BufWriter::with_capacity(BUFFER, writer), flush_each_row }
    }

    fn flush(&mut self) -> Result<(), ConnectorError> {
        self.out.flush().map_err(|source| ConnectorError::Io { what: "flushing standard output".into(), source })
    }
}

impl Sink for StdoutSink {
    /// Writes `line` and a newline (buffered until [`Sink::written`] or [`Sink::commit`]).
    ///
    /// # Errors
    /// [`ConnectorError::Io`] when stdout cannot be written (e.g. a closed pipe).
    fn write(&mut self, _batch_id: u64, line: &str, _key: Option<&str>) -> Result<(), ConnectorError> {
        let io = |source| ConnectorError::Io { what: "writing standard output".into(), source };
        self.out.write_all(line.as_bytes()).map_err(io)?;
        self.out.write_all(b"\n").map_err(io)
    }

    /// Flushes the rows written so far when `flush_each_row` (real-time mode): one write to
    /// standard output per hand-over, not one per row.
    ///
    /// # Errors
    /// [`ConnectorError::Io`] when stdout cannot be written.
    fn written(&mut self) -> Result<(), ConnectorError> {
        if self.flush_each_row { self.flush() } else { Ok(()) }
    }

    /// Flushes every row written so far.
    ///
    /// # Errors
    /// [`ConnectorError::Io`] when stdout cannot be written.
    fn commit(&mut self, _batch_id: u64) -> Result<(), ConnectorError> {
        self.flush()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};
    use std::time::Instant;

    use super::*;

    const LONG: Duration = Duration::from_secs(5);

    fn lines_of(out: &[SourceItem]) -> Vec<(String, String)> {
        out.iter()
            .map(|i| match &i.payload {
                Payload::Raw(b) => (i.position.to_string(), String::from_utf8(b.clone()).unwrap()),
                Payload::Header(b) => (i.position.to_string(), format!("header: {}", String::from_utf8_lossy(b))),
                Payload::Rejected(r) => (i.position.to_string(), format!("rejected: {}", r.reason())),
                Payload::Line(_) | Payload::Lines(_) | Payload::Record(_) => {
                    panic!("expected a raw line, got {:?}", i.payload)
                }
            })
            .collect()
    }

    fn drain(source: &mut StdinSource, max: usize) -> Vec<SourceItem> {
        let mut out = Vec::new();
        loop {
            let before = out.len();
            match source.poll(&mut out, max, LONG).unwrap() {
                Poll::Exhausted => return out,
                Poll::Data => assert!(out.len() - before <= max),
                other => panic!("unexpected {other:?}"),
            }
        }
    }

    #[test]
    fn a_resumed_source_skips_the_lines_its_offset_covers() {
        let input = "{\"a\":1}\n\n{\"a\":2}\n{\"a\":3}\n";
        let mut s = StdinSource::from_reader(std::io::Cursor::new(input.as_bytes().to_vec()), false).unwrap();
        s.seek(&SourceOffset::Stdin { line: 3 }).unwrap();
        assert_eq!(s.offset(), Some(SourceOffset::Stdin { line: 3 }));
        let out = drain(&mut s, 1);
        assert_eq!(lines_of(&out), vec![("stdin:4".to_string(), "{\"a\":3}".to_string())]);
        assert_eq!(s.offset(), Some(SourceOffset::Stdin { line: 4 }));
        assert!(s.seek(&SourceOffset::Generated { next: 1 }).is_err());
    }

    #[test]
    fn lines_are_returned_in_order_with_their_line_numbers_then_exhausted() {
        let input = "{\"a\":1}\r\n\n  \n{\"a\":2}\n{\"a\":3}";
        let mut s = StdinSource::from_reader(std::io::Cursor::new(input.as_bytes().to_vec()), false).unwrap();
        let out = drain(&mut s, 2);
        assert_eq!(
            lines_of(&out),
            vec![
                ("stdin:1".to_string(), "{\"a\":1}".to_string()),
                ("stdin:4".to_string(), "{\"a\":2}".to_string()),
                ("stdin:5".to_string(), "{\"a\":3}".to_string()),
            ]
        );
        assert_eq!(s.poll(&mut Vec::new(), 10, LONG).unwrap(), Poll::Exhausted);
    }

    #[test]
    fn the_first_line_is_the_csv_header_also_for_a_resumed_source() {
        let input = "\u{feff}\nk,n\nA,1\nB,2\n";
        let pairs = |v: &[(&str, &str)]| -> Vec<(String, String)> {
            v.iter().map(|(p, l)| (p.to_string(), l.to_string())).collect()
        };
        let mut s = StdinSource::from_reader(std::io::Cursor::new(input.as_bytes().to_vec()), true).unwrap();
        assert_eq!(
            lines_of(&drain(&mut s, 10)),
            pairs(&[("stdin:2", "header: k,n"), ("stdin:3", "A,1"), ("stdin:4", "B,2")])
        );
        // Resumed after the first record: the header still comes first.
        let mut s = StdinSource::from_reader(std::io::Cursor::new(input.as_bytes().to_vec()), true).unwrap();
        s.seek(&SourceOffset::Stdin { line: 3 }).unwrap();
        assert_eq!(lines_of(&drain(&mut s, 10)), pairs(&[("stdin:2", "header: k,n"), ("stdin:4", "B,2")]));
    }

    #[test]
    fn a_byte_order_mark_at_the_start_of_the_input_is_skipped() {
        let input = "\u{feff}{\"a\":1}\n\u{feff}{\"a\":2}\n";
        let mut s = StdinSource::from_reader(std::io::Cursor::new(input.as_bytes().to_vec()), false).unwrap();
        let lines: Vec<String> = lines_of(&drain(&mut s, 10)).into_iter().map(|(_, l)| l).collect();
        assert_eq!(lines, ["{\"a\":1}", "\u{feff}{\"a\":2}"]);
    }

    #[test]
    fn many_lines_pass_through_the_bounded_channel() {
        let n = 3 * READ_AHEAD_LINES + 7;
        let input: String = (0..n).map(|i| format!("{i}\n")).collect();
        let mut s = StdinSource::from_reader(std::io::Cursor::new(input.into_bytes()), false).unwrap();
        let out = drain(&mut s, 1000);
        assert_eq!(out.len(), n);
        assert_eq!(lines_of(&out)[n - 1].1, (n - 1).to_string());
    }

    /// A reader that yields its chunks with a pause before each, like a slow pipe.
    struct SlowPipe {
        chunks: Vec<(Duration, Vec<u8>)>,
    }

    impl Read for SlowPipe {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            if self.chunks.is_empty() {
                return Ok(0);
            }
            let (pause, chunk) = self.chunks.remove(0);
            std::thread::sleep(pause);
            let n = chunk.len().min(buf.len());
            buf[..n].copy_from_slice(&chunk[..n]);
            Ok(n)
        }
    }

    #[test]
    fn a_poll_waits_up_to_its_timeout_and_is_idle_when_nothing_came() {
        let pipe = SlowPipe { chunks: vec![(Duration::from_millis(400), b"late\n".to_vec())] };
        let mut s = StdinSource::from_reader(pipe, false).unwrap();
        let started = Instant::now();
        let mut out = Vec::new();
        assert_eq!(s.poll(&mut out, 10, Duration::from_millis(50)).unwrap(), Poll::Idle);
        assert!(started.elapsed() >= Duration::from_millis(50));
        assert!(out.is_empty());
        assert_eq!(s.poll(&mut out, 10, LONG).unwrap(), Poll::Data);
        assert_eq!(lines_of(&out), vec![("stdin:1".to_string(), "late".to_string())]);
        assert_eq!(s.poll(&mut out, 10, LONG).unwrap(), Poll::Exhausted);
    }

    /// A reader that fails after its first chunk.
    struct Broken(bool);

    impl Read for Broken {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            if std::mem::replace(&mut self.0, true) {
                return Err(std::io::Error::other("device gone"));
            }
            buf[..3].copy_from_slice(b"ok\n");
            Ok(3)
        }
    }

    #[test]
    fn a_read_failure_is_an_error_after_the_lines_before_it() {
        let mut s = StdinSource::from_reader(Broken(false), false).unwrap();
        let mut out = Vec::new();
        // The line comes first, then the failure (within a few polls: the reader thread is fast).
        let error = (0..10).find_map(|_| s.poll(&mut out, 10, LONG).err());
        let error = error.expect("the failure was reported");
        assert!(error.to_string().contains("device gone"), "{error}");
        assert!(error.to_string().contains("after line 1"), "{error}");
        assert_eq!(lines_of(&out), vec![("stdin:1".to_string(), "ok".to_string())]);
        assert_eq!(s.poll(&mut out, 10, LONG).unwrap(), Poll::Exhausted);
    }

    /// A writer into a shared buffer, to see what has been flushed to it.
    #[derive(Clone, Default)]
    struct Shared(Arc<Mutex<Vec<u8>>>);

    impl Write for Shared {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    impl Shared {
        fn text(&self) -> String {
            String::from_utf8(self.0.lock().unwrap().clone()).unwrap()
        }
    }

    #[test]
    fn buffered_rows_appear_at_commit() {
        let seen = Shared::default();
        let mut sink = StdoutSink::with_writer(Box::new(seen.clone()), false);
        sink.write(0, "{\"a\":1}", None).unwrap();
        sink.write(0, "{\"a\":2}", None).unwrap();
        assert_eq!(seen.text(), "");
        sink.commit(0).unwrap();
        assert_eq!(seen.text(), "{\"a\":1}\n{\"a\":2}\n");
    }

    #[test]
    fn real_time_rows_appear_as_they_are_written() {
        let seen = Shared::default();
        let mut sink = StdoutSink::with_writer(Box::new(seen.clone()), true);
        sink.write(0, "{\"a\":1}", Some("k")).unwrap();
        sink.written().unwrap();
        assert_eq!(seen.text(), "{\"a\":1}\n");
        sink.write(1, "{\"a\":2}", None).unwrap();
        sink.write(1, "{\"a\":3}", None).unwrap();
        sink.written().unwrap();
        assert_eq!(seen.text(), "{\"a\":1}\n{\"a\":2}\n{\"a\":3}\n");
    }

    /// A writer whose reader has gone.
    struct ClosedPipe;

    impl Write for ClosedPipe {
        fn write(&mut self, _: &[u8]) -> std::io::Result<usize> {
            Err(std::io::ErrorKind::BrokenPipe.into())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Err(std::io::ErrorKind::BrokenPipe.into())
        }
    }

    #[test]
    fn a_closed_pipe_is_an_error() {
        let mut sink = StdoutSink::with_writer(Box::new(ClosedPipe), true);
        let err = sink.write(0, "{}", None).and_then(|()| sink.written()).unwrap_err();
        assert!(err.to_string().contains("standard output"), "{err}");
    }
}
