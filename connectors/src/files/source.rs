//! [`FilesSource`]: the lines of a folder's files, in name order, a micro-batch per group of files.

use std::collections::{BTreeSet, HashSet, VecDeque};
use std::ffi::OsString;
use std::fmt;
use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use flate2::read::MultiGzDecoder;

use super::{is_blank, is_hidden, strip_bom, strip_newline};
use crate::{ConnectorError, Payload, Poll, Position, Source, SourceItem, SourceOffset};

/// How often a following source lists its folder again while it waits for new files.
const RESCAN_INTERVAL: Duration = Duration::from_millis(50);

/// Read buffer per open file (bytes).
const READ_BUFFER: usize = 64 * 1024;

/// Reads the files of one folder as lines: one [`SourceItem`] (a [`Payload::Raw`] line, without
/// its `\n` / `\r\n`) per non-blank line, at [`Position::File`] (file name, 1-based line number).
///
/// - Files are read in name order (byte order of the names); names starting with `.` or `_`,
///   and sub-folders, are ignored (Spark's file source hides them too). A name ending in `.gz`
///   is decompressed (gzip, several members allowed).
/// - After every group of `max_files_per_trigger` files, [`Poll::BatchBoundary`] is returned, so
///   each group is one micro-batch, as Spark's `maxFilesPerTrigger`; a file with no line is still
///   a member of its group. When the folder has no more unread file, the last (possibly smaller)
///   group ends with a boundary too, as Spark plans a batch over the files available.
/// - Without `follow`, [`Poll::Exhausted`] follows the last boundary. With `follow`, the folder
///   is listed again (every ~50 ms while a poll waits) and files that appear later are read, in
///   name order among themselves; each file is read once. Files must appear whole (written under
///   a hidden name, then renamed), as Spark's file source requires.
/// - Files are streamed (64 KiB buffer); a poll reads at most `max` items.
/// - A UTF-8 byte order mark at the start of a file is skipped (as Spark's readers do).
/// - With `csv_header`, the first non-blank line of every file is its header: it is returned as
///   a [`Payload::Header`] item before the file's lines (also when a restart resumes in the
///   middle of the file), so each file is decoded under its own header.
/// - The offset ([`Source::offset`]) names the files read whole, so a restart reads a file that
///   appeared meanwhile with a name before them, as a run that went on would have.
pub struct FilesSource {
    folder: PathBuf,
    /// When the pipeline named one file: its name (only it is read).
    only: Option<OsString>,
    max_files_per_trigger: usize,
    follow: bool,
    csv_header: bool,
    /// Every file name listed so far (queued, open or read), and those a restart skips.
    seen: HashSet<OsString>,
    /// Listed files not yet opened, in name order.
    pending: VecDeque<(String, PathBuf)>,
    current: Option<OpenFile>,
    /// Files finished in the current group.
    files_in_group: usize,
    exhausted: bool,
    line: Vec<u8>,
    /// The files read to their end (by this run, or before the checkpoint it resumed from).
    done: BTreeSet<String>,
    /// Where a restart resumes in the middle of a file ([`Source::seek`]): the first `.1` lines
    /// of the file named `.0` are skipped; cleared once that file is opened.
    resume: Option<(String, u64)>,
}

/// The file being read.
struct OpenFile {
    name: String,
    path: PathBuf,
    reader: Box<dyn BufRead + Send>,
    /// Lines read so far (the number of the last line read).
    line: u64,
    /// Whether the header line of this file is still to be read.
    header_pending: bool,
    /// A header read while skipping the lines a restart resumes after, still to be returned.
    skipped_header: Option<Vec<u8>>,
}

impl fmt::Debug for FilesSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FilesSource")
            .field("folder", &self.folder)
            .field("max_files_per_trigger", &self.max_files_per_trigger)
            .field("follow", &self.follow)
            .field("csv_header", &self.csv_header)
            .field("current", &self.current.as_ref().map(|c| (&c.name, c.line)))
            .field("pending", &self.pending.len())
            .field("files_in_group", &self.files_in_group)
            .field("exhausted", &self.exhausted)
            .finish()
    }
}

impl FilesSource {
    /// A source over the files of `folder` (or over one file, when `folder` names a file).
    ///
    /// # Errors
    /// [`ConnectorError::Config`] when `folder` does not exist or is not a folder, or when
    /// `max_files_per_trigger` is 0 (each message names what was given).
    pub fn new(
        folder: &Path,
        max_files_per_trigger: usize,
        follow: bool,
        csv_header: bool,
    ) -> Result<FilesSource, ConnectorError> {
        if max_files_per_trigger == 0 {
            return Err(ConnectorError::Config(format!(
                "files source {}: max_files_per_trigger is 0; expected at least 1",
                folder.display()
            )));
        }
        // A path to one file (an extension of PIPELINE.md's folder): read just that file.
        let mut only = None;
        let mut folder = folder.to_path_buf();
        match std::fs::metadata(&folder) {
            Ok(m) if m.is_dir() => {}
            Ok(m) if m.is_file() => {
                only = folder.file_name().map(|n| n.to_os_string());
                folder = match folder.parent() {
                    Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
                    _ => PathBuf::from("."),
                };
            }
            Ok(_) => {
                return Err(ConnectorError::Config(format!(
                    "files source: {} is neither a folder nor a file",
                    folder.display()
                )));
            }
            Err(e) => {
                return Err(ConnectorError::Config(format!(
                    "files source: folder {} cannot be read: {e}",
                    folder.display()
                )));
            }
        }
        Ok(FilesSource {
            folder,
            only,
            max_files_per_trigger,
            follow,
            csv_header,
            seen: HashSet::new(),
            pending: VecDeque::new(),
            current: None,
            files_in_group: 0,
            exhausted: false,
            line: Vec::new(),
            done: BTreeSet::new(),
            resume: None,
        })
    }

    /// Lists the folder and queues, in name order, the visible files not listed before.
    fn rescan(&mut self) -> Result<(), ConnectorError> {
        let io = |source| ConnectorError::Io { what: format!("listing folder {}", self.folder.display()), source };
        let mut found: Vec<(OsString, PathBuf)> = Vec::new();
        for entry in std::fs::read_dir(&self.folder).map_err(io)? {
            let entry = entry.map_err(io)?;
            let name = entry.file_name();
            if is_hidden(&name.to_string_lossy())
                || self.seen.contains(&name)
                || self.only.as_ref().is_some_and(|o| *o != name)
            {
                continue;
            }
            let path = entry.path();
            // Follows symbolic links; an entry that vanished or is a dangling link is skipped
            // (it may be a file being renamed into place: it is seen at the next listing).
            match std::fs::metadata(&path) {
                Ok(m) if m.is_file() => found.push((name, path)),
                Ok(_) => {}
                Err(e) => {
                    tracing::debug!(path = %path.display(), error = %e, "files source skips an unreadable entry")
                }
            }
        }
        found.sort();
        for (name, path) in found {
            self.pending.push_back((name.to_string_lossy().into_owned(), path));
            self.seen.insert(name);
        }
        Ok(())
    }

    /// Opens a file at its first line.
    fn open_raw(&self, name: String, path: PathBuf) -> Result<OpenFile, ConnectorError> {
        let file = File::open(&path)
            .map_err(|source| ConnectorError::Io { what: format!("opening {}", path.display()), source })?;
        let reader: Box<dyn BufRead + Send> = if name.ends_with(".gz") {
            Box::new(BufReader::with_capacity(READ_BUFFER, MultiGzDecoder::new(file)))
        } else {
            Box::new(BufReader::with_capacity(READ_BUFFER, file))
        };
        Ok(OpenFile { name, path, reader, line: 0, header_pending: self.csv_header, skipped_header: None })
    }

    /// Opens a file to read it, past the lines a restart skips ([`Source::seek`]); a header among
    /// them is kept, to be returned first.
    fn open(&mut self, name: String, path: PathBuf) -> Result<OpenFile, ConnectorError> {
        let mut open = self.open_raw(name, path)?;
        if let Some((_, skip)) = self.resume.take_if(|(f, _)| *f == open.name) {
            let mut buf = Vec::new();
            while open.line < skip {
                buf.clear();
                let n = open.reader.read_until(b'\n', &mut buf).map_err(|source| ConnectorError::Io {
                    what: format!("skipping the lines of {} consumed before the checkpoint", open.path.display()),
                    source,
                })?;
                if n == 0 {
                    break;
                }
                open.line += 1;
                let text = strip_newline(&buf);
                let text = if open.line == 1 { strip_bom(text) } else { text };
                if open.header_pending && !is_blank(text) {
                    open.header_pending = false;
                    open.skipped_header = Some(text.to_vec());
                }
            }
        }
        Ok(open)
    }

    /// Reads lines of the current file into `out` until `out` holds `limit` items or the file
    /// ends; returns whether it ended.
    fn read_current(&mut self, out: &mut Vec<SourceItem>, limit: usize) -> Result<bool, ConnectorError> {
        let Some(file) = self.current.as_mut() else {
            return Ok(true);
        };
        if let Some(header) = file.skipped_header.take() {
            out.push(SourceItem {
                payload: Payload::Header(header),
                position: Position::File { file: file.name.clone(), line: file.line },
                created_ns: 0,
            });
        }
        while out.len() < limit {
            self.line.clear();
            let n = file.reader.read_until(b'\n', &mut self.line).map_err(|source| ConnectorError::Io {
                what: format!("reading {} at line {}", file.path.display(), file.line + 1),
                source,
            })?;
            if n == 0 {
                return Ok(true);
            }
            file.line += 1;
            let text = strip_newline(&self.line);
            let text = if file.line == 1 { strip_bom(text) } else { text };
            if is_blank(text) {
                continue;
            }
            let payload = if file.header_pending {
                file.header_pending = false;
                Payload::Header(text.to_vec())
            } else {
                Payload::Raw(text.to_vec())
            };
            out.push(SourceItem {
                payload,
                position: Position::File { file: file.name.clone(), line: file.line },
                created_ns: 0,
            });
        }
        Ok(false)
    }
}

impl Source for FilesSource {
    /// Appends up to `max` lines; returns [`Poll::BatchBoundary`] when a group of files ends
    /// (the group's last items are in `out`), [`Poll::Data`] when `max` items were appended,
    /// [`Poll::Exhausted`] (no `follow`) when every file has been read, and [`Poll::Idle`]
    /// (`follow`) when no new file appeared within `timeout`. It sleeps between listings, never
    /// spins.
    ///
    /// # Errors
    /// [`ConnectorError::Io`] naming the file (and line) that cannot be listed, opened, read or
    /// decompressed.
    fn poll(&mut self, out: &mut Vec<SourceItem>, max: usize, timeout: Duration) -> Result<Poll, ConnectorError> {
        if self.exhausted {
            return Ok(Poll::Exhausted);
        }
        let deadline = Instant::now().checked_add(timeout);
        let limit = out.len().saturating_add(max);
        loop {
            if self.current.is_some() {
                if !self.read_current(out, limit)? {
                    return Ok(Poll::Data);
                }
                if let Some(c) = self.current.take() {
                    self.done.insert(c.name);
                }
                self.files_in_group += 1;
                if self.files_in_group == self.max_files_per_trigger {
                    self.files_in_group = 0;
                    return Ok(Poll::BatchBoundary);
                }
                continue;
            }
            if self.pending.is_empty() {
                self.rescan()?;
            }
            // The file a restart resumes in comes first, as the run before read it first.
            let resumed = self.resume.as_ref().and_then(|(f, _)| self.pending.iter().position(|(n, _)| n == f));
            if let Some((name, path)) = self.pending.remove(resumed.unwrap_or(0)) {
                self.current = Some(self.open(name, path)?);
                continue;
            }
            // Every listed file has been read.
            if self.files_in_group > 0 {
                self.files_in_group = 0;
                return Ok(Poll::BatchBoundary);
            }
            if !self.follow {
                self.exhausted = true;
                return Ok(Poll::Exhausted);
            }
            let now = Instant::now();
            let wait = match deadline {
                Some(d) if d <= now => return Ok(Poll::Idle),
                Some(d) => (d - now).min(RESCAN_INTERVAL),
                None => RESCAN_INTERVAL,
            };
            std::thread::sleep(wait);
        }
    }

    /// The files read whole, and the file being read with its lines read so far (or, before a
    /// resumed file is opened, the lines a restart skips in it). `None` before anything was read.
    fn offset(&self) -> Option<SourceOffset> {
        let reading = match &self.current {
            Some(c) => Some((c.name.clone(), c.line)),
            None => self.resume.clone(),
        };
        (reading.is_some() || !self.done.is_empty())
            .then(|| SourceOffset::Files { done: self.done.iter().cloned().collect(), reading })
    }

    /// Skips the files the offset names as read and the offset's lines of the file it was
    /// reading; every other file of the folder is read, in name order. A mid-file resume starts
    /// a new group of `max_files_per_trigger` files there. An offset of a checkpoint of format 1
    /// or 2 ([`SourceOffset::FilesInNameOrder`]) skips the files of the folder named before its
    /// file, as those versions did.
    ///
    /// # Errors
    /// [`ConnectorError::Config`] for an offset of another kind of source;
    /// [`ConnectorError::Io`] when the folder cannot be listed (an old offset).
    fn seek(&mut self, offset: &SourceOffset) -> Result<(), ConnectorError> {
        let (done, reading) = match offset {
            SourceOffset::Files { done, reading } => (done.clone(), reading.clone()),
            SourceOffset::FilesInNameOrder { file, line } => {
                let mut done = Vec::new();
                self.rescan()?;
                for (name, _) in &self.pending {
                    if name < file || (name == file && *line == u64::MAX) {
                        done.push(name.clone());
                    }
                }
                (done, (*line != u64::MAX).then(|| (file.clone(), *line)))
            }
            _ => {
                return Err(ConnectorError::Config(format!(
                    "files source {}: the checkpoint holds a {} offset ({offset}), not a file position",
                    self.folder.display(),
                    offset.kind()
                )));
            }
        };
        self.seen.extend(done.iter().map(OsString::from));
        self.done.extend(done);
        self.pending.retain(|(name, _)| !self.done.contains(name));
        self.resume = reading;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use super::*;

    const LONG: Duration = Duration::from_secs(5);

    fn write(dir: &Path, name: &str, text: &str) {
        std::fs::write(dir.join(name), text).unwrap();
    }

    fn write_gz(dir: &Path, name: &str, text: &str) {
        let file = File::create(dir.join(name)).unwrap();
        let mut gz = flate2::write::GzEncoder::new(file, flate2::Compression::default());
        gz.write_all(text.as_bytes()).unwrap();
        gz.finish().unwrap();
    }

    /// A raw line as it is, a header as `header: ...`.
    fn raw(item: &SourceItem) -> String {
        match &item.payload {
            Payload::Raw(b) => String::from_utf8(b.clone()).unwrap(),
            Payload::Header(b) => format!("header: {}", String::from_utf8(b.clone()).unwrap()),
            Payload::Record(r) => panic!("expected a raw line, got {r:?}"),
        }
    }

    fn files(done: &[&str], reading: Option<(&str, u64)>) -> SourceOffset {
        SourceOffset::Files {
            done: done.iter().map(|d| d.to_string()).collect(),
            reading: reading.map(|(f, l)| (f.to_string(), l)),
        }
    }

    /// Polls until `Exhausted` / `Idle`, returning the batches (lines per boundary) and the
    /// final poll result.
    fn drain(source: &mut FilesSource, max: usize, timeout: Duration) -> (Vec<Vec<String>>, Poll) {
        let mut batches = vec![Vec::new()];
        loop {
            let mut out = Vec::new();
            let poll = source.poll(&mut out, max, timeout).unwrap();
            assert!(out.len() <= max, "a poll returned {} items, more than max {max}", out.len());
            batches.last_mut().unwrap().extend(out.iter().map(raw));
            match poll {
                Poll::Data => {}
                Poll::BatchBoundary => batches.push(Vec::new()),
                end => {
                    let last = batches.pop().unwrap();
                    assert!(last.is_empty(), "items after the last boundary: {last:?}");
                    return (batches, end);
                }
            }
        }
    }

    #[test]
    fn a_resumed_source_reads_on_from_its_offset_with_the_same_groups() {
        let dir = tempfile::tempdir().unwrap();
        write(dir.path(), "a.json", "1\n2\n");
        write(dir.path(), "b.json", "3\n\n4\n5\n");
        write(dir.path(), "c.json", "6\n");
        // After a whole file: the next group starts with the next file.
        let mut first = FilesSource::new(dir.path(), 1, false, false).unwrap();
        assert_eq!(first.offset(), None);
        let mut out = Vec::new();
        assert_eq!(first.poll(&mut out, 100, LONG).unwrap(), Poll::BatchBoundary);
        let offset = first.offset().unwrap();
        assert_eq!(offset, files(&["a.json"], None));
        let mut resumed = FilesSource::new(dir.path(), 1, false, false).unwrap();
        resumed.seek(&offset).unwrap();
        assert_eq!(resumed.offset(), Some(offset));
        let (batches, _) = drain(&mut resumed, 100, LONG);
        assert_eq!(batches, vec![vec!["3", "4", "5"], vec!["6"]]);
        assert_eq!(resumed.offset(), Some(files(&["a.json", "b.json", "c.json"], None)));
        // Mid-file (3 lines of b.json, a blank one among them): the rest of the file first.
        let mut mid = FilesSource::new(dir.path(), 1, false, false).unwrap();
        let offset = files(&["c.json"], Some(("b.json", 3)));
        mid.seek(&offset).unwrap();
        assert_eq!(mid.offset(), Some(offset));
        let (batches, _) = drain(&mut mid, 100, LONG);
        assert_eq!(batches, vec![vec!["5"], vec!["1", "2"]]);
        assert!(mid.seek(&SourceOffset::Stdin { line: 1 }).is_err());
    }

    #[test]
    fn files_that_appear_with_an_earlier_name_are_read_after_a_restart() {
        let dir = tempfile::tempdir().unwrap();
        write(dir.path(), "001.json", "1\n");
        write(dir.path(), "003.json", "3\n");
        let mut first = FilesSource::new(dir.path(), 1, false, false).unwrap();
        let (batches, _) = drain(&mut first, 100, LONG);
        assert_eq!(batches, vec![vec!["1"], vec!["3"]]);
        let offset = first.offset().unwrap();
        for n in ["000", "002", "004"] {
            write(dir.path(), &format!("{n}.json"), &format!("{}\n", &n[2..]));
        }
        let mut resumed = FilesSource::new(dir.path(), 1, false, false).unwrap();
        resumed.seek(&offset).unwrap();
        let (batches, _) = drain(&mut resumed, 100, LONG);
        assert_eq!(batches, vec![vec!["0"], vec!["2"], vec!["4"]]);
        assert_eq!(resumed.offset(), Some(files(&["000.json", "001.json", "002.json", "003.json", "004.json"], None)));
    }

    #[test]
    fn an_offset_of_a_format_2_checkpoint_skips_the_files_named_before_it() {
        let dir = tempfile::tempdir().unwrap();
        write(dir.path(), "a.json", "1\n");
        write(dir.path(), "b.json", "2\n3\n");
        write(dir.path(), "c.json", "4\n");
        let mut whole = FilesSource::new(dir.path(), 1, false, false).unwrap();
        whole.seek(&SourceOffset::FilesInNameOrder { file: "b.json".into(), line: u64::MAX }).unwrap();
        assert_eq!(whole.offset(), Some(files(&["a.json", "b.json"], None)));
        assert_eq!(drain(&mut whole, 100, LONG).0, vec![vec!["4"]]);
        let mut mid = FilesSource::new(dir.path(), 1, false, false).unwrap();
        mid.seek(&SourceOffset::FilesInNameOrder { file: "b.json".into(), line: 1 }).unwrap();
        assert_eq!(mid.offset(), Some(files(&["a.json"], Some(("b.json", 1)))));
        assert_eq!(drain(&mut mid, 100, LONG).0, vec![vec!["3"], vec!["4"]]);
    }

    #[test]
    fn files_are_read_in_name_order_one_batch_per_file() {
        let dir = tempfile::tempdir().unwrap();
        write(dir.path(), "b.json", "{\"n\":3}\n");
        write(dir.path(), "a.json", "{\"n\":1}\r\n{\"n\":2}\n");
        write(dir.path(), "c.json", "{\"n\":4}");
        let mut s = FilesSource::new(dir.path(), 1, false, false).unwrap();
        let (batches, end) = drain(&mut s, 100, LONG);
        assert_eq!(end, Poll::Exhausted);
        assert_eq!(batches, vec![vec!["{\"n\":1}", "{\"n\":2}"], vec!["{\"n\":3}"], vec!["{\"n\":4}"]]);
    }

    #[test]
    fn groups_of_max_files_per_trigger_end_with_a_boundary_and_the_last_group_may_be_short() {
        let dir = tempfile::tempdir().unwrap();
        for i in 0..5 {
            write(dir.path(), &format!("f{i}.json"), &format!("{i}\n"));
        }
        let mut s = FilesSource::new(dir.path(), 2, false, false).unwrap();
        let (batches, _) = drain(&mut s, 100, LONG);
        assert_eq!(batches, vec![vec!["0", "1"], vec!["2", "3"], vec!["4"]]);
    }

    #[test]
    fn an_empty_file_is_still_a_batch() {
        let dir = tempfile::tempdir().unwrap();
        write(dir.path(), "1.json", "x\n");
        write(dir.path(), "2.json", "");
        write(dir.path(), "3.json", "\n  \n");
        write(dir.path(), "4.json", "y\n");
        let mut s = FilesSource::new(dir.path(), 1, false, false).unwrap();
        let (batches, _) = drain(&mut s, 100, LONG);
        assert_eq!(batches, vec![vec!["x"], vec![], vec![], vec!["y"]]);
    }

    #[test]
    fn hidden_files_and_folders_are_ignored() {
        let dir = tempfile::tempdir().unwrap();
        write(dir.path(), ".hidden.json", "no\n");
        write(dir.path(), "_SUCCESS", "no\n");
        std::fs::create_dir(dir.path().join("sub")).unwrap();
        write(&dir.path().join("sub"), "inner.json", "no\n");
        write(dir.path(), "data.json", "yes\n");
        let mut s = FilesSource::new(dir.path(), 1, false, false).unwrap();
        let (batches, _) = drain(&mut s, 100, LONG);
        assert_eq!(batches, vec![vec!["yes"]]);
    }

    #[test]
    fn blank_lines_are_skipped_but_counted_in_positions() {
        let dir = tempfile::tempdir().unwrap();
        write(dir.path(), "a.json", "one\n\n   \ntwo\r\n");
        let mut s = FilesSource::new(dir.path(), 1, false, false).unwrap();
        let mut out = Vec::new();
        s.poll(&mut out, 10, LONG).unwrap();
        let positions: Vec<String> = out.iter().map(|i| i.position.to_string()).collect();
        assert_eq!(positions, vec!["a.json:1", "a.json:4"]);
        assert!(out.iter().all(|i| i.created_ns == 0));
    }

    #[test]
    fn gz_files_are_decompressed() {
        let dir = tempfile::tempdir().unwrap();
        write_gz(dir.path(), "a.json.gz", "{\"a\":1}\n{\"a\":2}\n");
        write(dir.path(), "b.json", "{\"b\":1}\n");
        let mut s = FilesSource::new(dir.path(), 2, false, false).unwrap();
        let (batches, _) = drain(&mut s, 100, LONG);
        assert_eq!(batches, vec![vec!["{\"a\":1}", "{\"a\":2}", "{\"b\":1}"]]);
    }

    #[test]
    fn a_corrupt_gz_file_is_an_error_naming_it() {
        let dir = tempfile::tempdir().unwrap();
        write(dir.path(), "bad.json.gz", "this is not gzip\n");
        let mut s = FilesSource::new(dir.path(), 1, false, false).unwrap();
        let err = s.poll(&mut Vec::new(), 10, LONG).unwrap_err();
        assert!(err.to_string().contains("bad.json.gz"), "{err}");
    }

    #[test]
    fn a_poll_returns_at_most_max_items_and_resumes_where_it_stopped() {
        let dir = tempfile::tempdir().unwrap();
        let text: String = (1..=10).map(|i| format!("{i}\n")).collect();
        write(dir.path(), "a.json", &text);
        let mut s = FilesSource::new(dir.path(), 1, false, false).unwrap();
        let mut out = Vec::new();
        assert_eq!(s.poll(&mut out, 3, LONG).unwrap(), Poll::Data);
        assert_eq!(out.len(), 3);
        let (batches, end) = drain(&mut s, 3, LONG);
        assert_eq!(end, Poll::Exhausted);
        let rest: Vec<String> = (4..=10).map(|i| i.to_string()).collect();
        assert_eq!(batches, vec![rest]);
    }

    #[test]
    fn a_large_file_is_streamed_in_bounded_polls() {
        let dir = tempfile::tempdir().unwrap();
        let n = 50_000;
        let mut f = std::io::BufWriter::new(File::create(dir.path().join("big.json")).unwrap());
        for i in 0..n {
            writeln!(f, "{{\"i\":{i}}}").unwrap();
        }
        f.into_inner().unwrap().sync_all().unwrap();
        let mut s = FilesSource::new(dir.path(), 1, false, false).unwrap();
        let (batches, _) = drain(&mut s, 1000, LONG);
        assert_eq!(batches.len(), 1);
        assert_eq!(batches[0].len(), n);
        assert_eq!(batches[0][n - 1], format!("{{\"i\":{}}}", n - 1));
    }

    #[test]
    fn a_missing_folder_is_a_config_error_naming_it() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("nowhere");
        let err = FilesSource::new(&missing, 1, false, false).unwrap_err();
        assert!(matches!(err, ConnectorError::Config(_)));
        assert!(err.to_string().contains("nowhere"), "{err}");
    }

    #[test]
    fn zero_files_per_trigger_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let err = FilesSource::new(dir.path(), 0, false, false).unwrap_err();
        assert!(err.to_string().contains("max_files_per_trigger"), "{err}");
    }

    #[test]
    fn following_reads_files_that_appear_later_once_each() {
        let dir = tempfile::tempdir().unwrap();
        write(dir.path(), "1.json", "a\n");
        let mut s = FilesSource::new(dir.path(), 1, true, false).unwrap();
        let short = Duration::from_millis(120);
        let (batches, end) = drain(&mut s, 100, short);
        assert_eq!((batches, end), (vec![vec!["a".to_string()]], Poll::Idle));

        // Written under a hidden name and renamed, as a producer must.
        write(dir.path(), ".3.json.tmp", "c\n");
        std::fs::rename(dir.path().join(".3.json.tmp"), dir.path().join("3.json")).unwrap();
        write(dir.path(), "2.json", "b\n");
        let (batches, end) = drain(&mut s, 100, short);
        assert_eq!(end, Poll::Idle);
        assert_eq!(batches, vec![vec!["b"], vec!["c"]]);

        // Nothing new: idle again, nothing re-read.
        let (batches, end) = drain(&mut s, 100, short);
        assert_eq!((batches.len(), end), (0, Poll::Idle));
    }

    #[test]
    fn a_following_poll_wakes_up_for_a_file_written_while_it_waits() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = FilesSource::new(dir.path(), 1, true, false).unwrap();
        let path = dir.path().to_path_buf();
        let writer = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(100));
            // Whole, as a producer must write it (hidden name, then rename): a plain write could
            // be seen half-written (empty) by the source's listing.
            write(&path, ".late.json.tmp", "late\n");
            std::fs::rename(path.join(".late.json.tmp"), path.join("late.json")).unwrap();
        });
        let mut out = Vec::new();
        let started = Instant::now();
        let poll = s.poll(&mut out, 10, LONG).unwrap();
        writer.join().unwrap();
        assert_eq!(poll, Poll::BatchBoundary);
        assert_eq!(out.iter().map(raw).collect::<Vec<_>>(), vec!["late"]);
        assert!(started.elapsed() < LONG, "the poll waited for its whole timeout");
    }

    #[test]
    fn an_idle_poll_waits_about_its_timeout() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = FilesSource::new(dir.path(), 1, true, false).unwrap();
        let started = Instant::now();
        assert_eq!(s.poll(&mut Vec::new(), 10, Duration::from_millis(150)).unwrap(), Poll::Idle);
        let waited = started.elapsed();
        assert!(waited >= Duration::from_millis(150), "returned after {waited:?}");
    }

    #[test]
    fn each_csv_file_gives_its_header_before_its_lines() {
        let dir = tempfile::tempdir().unwrap();
        write(dir.path(), "a.csv", "\nid,name\n1,x\n2,y\n");
        write(dir.path(), "b.csv", "\u{feff}name,id\nz,3\n");
        write(dir.path(), "c.csv", "");
        let mut s = FilesSource::new(dir.path(), 1, false, true).unwrap();
        let (batches, _) = drain(&mut s, 100, LONG);
        assert_eq!(batches, vec![vec!["header: id,name", "1,x", "2,y"], vec!["header: name,id", "z,3"], vec![]]);
    }

    #[test]
    fn a_csv_file_resumed_in_its_middle_gives_its_header_first() {
        let dir = tempfile::tempdir().unwrap();
        write(dir.path(), "a.csv", "\u{feff}id,name\n1,x\n2,y\n");
        let mut s = FilesSource::new(dir.path(), 1, false, true).unwrap();
        s.seek(&files(&[], Some(("a.csv", 2)))).unwrap();
        let mut out = Vec::new();
        assert_eq!(s.poll(&mut out, 100, LONG).unwrap(), Poll::BatchBoundary);
        assert_eq!(out.iter().map(raw).collect::<Vec<_>>(), vec!["header: id,name", "2,y"]);
        assert_eq!(out[1].position, Position::File { file: "a.csv".into(), line: 3 });
    }

    #[test]
    fn without_csv_header_no_line_is_a_header() {
        let dir = tempfile::tempdir().unwrap();
        write(dir.path(), "a.json", "{}\n");
        let mut s = FilesSource::new(dir.path(), 1, false, false).unwrap();
        let (batches, _) = drain(&mut s, 100, LONG);
        assert_eq!(batches, vec![vec!["{}"]]);
    }

    #[test]
    fn a_byte_order_mark_at_the_start_of_a_file_is_skipped() {
        let dir = tempfile::tempdir().unwrap();
        write(dir.path(), "a.json", "\u{feff}{\"a\":1}\n\u{feff}{\"a\":2}\n");
        write(dir.path(), "b.json", "\u{feff}\n{\"b\":1}\n");
        let mut s = FilesSource::new(dir.path(), 2, false, false).unwrap();
        let (batches, _) = drain(&mut s, 100, LONG);
        // Only at the start of a file: a later one is the line's own.
        assert_eq!(batches, vec![vec!["{\"a\":1}", "\u{feff}{\"a\":2}", "{\"b\":1}"]]);
    }

    #[test]
    fn exhausted_is_final() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = FilesSource::new(dir.path(), 1, false, false).unwrap();
        assert_eq!(s.poll(&mut Vec::new(), 10, LONG).unwrap(), Poll::Exhausted);
        write(dir.path(), "late.json", "x\n");
        assert_eq!(s.poll(&mut Vec::new(), 10, LONG).unwrap(), Poll::Exhausted);
    }
}
