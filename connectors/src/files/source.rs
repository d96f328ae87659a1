//! [`FilesSource`]: the records of a folder's files, in name order, a micro-batch per group of
//! files; with `follow`, also the lines appended to files already read (as `tail -F`).

use std::collections::{BTreeMap, BTreeSet, HashSet, VecDeque};
use std::ffi::OsString;
use std::fmt;
use std::fs::File;
use std::io::{BufRead, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use eddy_engine::spec::{DEFAULT_MAX_RECORD_BYTES, DEFAULT_PARTIAL_LINE_TIMEOUT_US, OnUnreadableFile};
use flate2::read::MultiGzDecoder;

use super::block::BlockReader;
use super::lines::{RecordRules, read_record};
use super::{NewlineFinder, is_blank, is_hidden, strip_bom, strip_newline};
use crate::spare::SpareLines;
use crate::{
    ConnectorError, FileIdentity, FollowedFile, Payload, Poll, Position, REJECTED_HEAD_BYTES, Rejection, SharedLines,
    Source, SourceItem, SourceOffset,
};

/// How often a following source lists its folder again (and looks at the sizes of the files it
/// follows) while it waits for new input.
const RESCAN_INTERVAL: Duration = Duration::from_millis(50);

/// Read block per open file (bytes): its whole lines are split in place and share it
/// ([`Payload::Lines`]).
const READ_BUFFER: usize = 256 * 1024;

/// Reads the files of one folder as records: a record per non-blank line (without its `\n` /
/// `\r\n`), at [`Position::File`] (file name, 1-based line numbers): consecutive lines whole in
/// a read block make one [`Payload::Lines`] item that shares the block (its position: the
/// run's first and last lines), a line read alone (a file's first line, one across two read
/// blocks, ...) a [`Payload::Raw`] item.
///
/// - Files are read in name order (byte order of the names); names starting with `.` or `_`,
///   and sub-folders, are ignored (Spark's file source hides them too). A name ending in `.gz`
///   is decompressed (gzip, several members allowed).
/// - After every group of `max_files_per_trigger` files, [`Poll::BatchBoundary`] is returned, so
///   each group is one micro-batch, as Spark's `maxFilesPerTrigger`; a file with no line is still
///   a member of its group. When the folder has no more unread file, the last (possibly smaller)
///   group ends with a boundary too, as Spark plans a batch over the files available.
/// - Without `follow`, [`Poll::Exhausted`] follows the last boundary, and a last line without
///   newline is a record. With `follow` (as `tail -F`), the folder is listed again and the
///   sizes of the files read are looked at (every ~50 ms while a poll waits): new files are
///   read, in name order among themselves, and a file that grew is read on from where it
///   stopped (each time a member of a group, as a new file). A line is read once its newline
///   arrives; a last line without one is held (nothing of it is consumed, in the offset
///   neither) until it is completed, or until its file has not grown for
///   `partial_line_timeout`: it is then read as a record. A file that shrinks or is replaced
///   (another file under its name: a new inode) is logged and read from its start as a new
///   file, also after a restart: the offset keeps each file's identity (device and inode), and
///   a file of another identity under a checkpointed name is read from its start. `.gz` files
///   are read once, whole: they must appear whole (written under a hidden name, then renamed);
///   one caught half-written is judged unreadable, and the warning says how to write it.
/// - Records are read in bounded memory: one longer than `max_record_bytes` is skipped to its
///   end and given as a [`Rejection::TooLarge`] (its length and first bytes).
/// - A file that cannot be read to its end (a corrupt or truncated `.gz`, an I/O error) is, by
///   default, read up to the failure, then finished: its rest is one [`Rejection::UnreadableFile`]
///   at [`Position::FileRest`] (with `on_unreadable_file = "fail"`: an error).
/// - A UTF-8 byte order mark at the start of a file is skipped (as Spark's readers do).
/// - With `csv_header`, the first non-blank line of every file is its header: it is returned as
///   a [`Payload::Header`] item before the file's records (also when a restart resumes in the
///   middle of the file, or a followed file is read on), so each file is decoded under its own
///   header; and a newline inside a quoted field belongs to the field (RFC 4180; Spark's
///   `multiLine = true`): the record spans lines, its position is its first line.
/// - The offset ([`Source::offset`]) names the files read whole, so a restart reads a file that
///   appeared meanwhile with a name before them, as a run that went on would have; with
///   `follow`, it names each file's count of complete lines consumed
///   ([`SourceOffset::FilesFollowed`]).
pub struct FilesSource {
    folder: PathBuf,
    /// When the pipeline named one file: its name (only it is read).
    only: Option<OsString>,
    max_files_per_trigger: usize,
    follow: bool,
    csv_header: bool,
    rules: RecordRules,
    partial_line_timeout: Duration,
    on_unreadable: OnUnreadableFile,
    /// Every file name listed so far (queued, open, read or followed), and those a restart skips.
    seen: HashSet<OsString>,
    /// Files to open (new, or followed ones that grew), in name order.
    pending: VecDeque<(String, PathBuf)>,
    current: Option<OpenFile>,
    /// Files finished in the current group.
    files_in_group: usize,
    exhausted: bool,
    line: Vec<u8>,
    /// Buffers of lines already decoded ([`Source::recycle_lines`]), refilled with the next
    /// lines.
    spare_lines: SpareLines,
    /// The files finished for good (read to their end without `follow`, `.gz`, or unreadable; by
    /// this run, or before the checkpoint it resumed from).
    done: BTreeSet<String>,
    /// Where a restart resumes in the middle of files ([`Source::seek`]): the first lines of
    /// each named file are skipped, unless the file is not the one the offset counted (another
    /// identity); an entry is removed once its file is opened.
    resume: BTreeMap<String, Resume>,
    /// Files read to their current end that may grow (with `follow`, or after resuming from a
    /// followed source's offset), with their lines consumed.
    followed: BTreeMap<String, Followed>,
    /// Whether the offset counts lines per file ([`SourceOffset::FilesFollowed`]).
    counts_lines: bool,
    /// The `\n` search of [`split_buffered`].
    newlines: NewlineFinder,
}

/// The identity of a file's content (device and inode; `None` off Unix): another one under the
/// same name is a replaced (rotated) file.
type FileId = Option<FileIdentity>;

/// Lines a restart skips in a file, and the identity of the file they were counted in.
type Resume = (u64, FileId);

fn file_id(m: &std::fs::Metadata) -> FileId {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        Some(FileIdentity { device: m.dev(), inode: m.ino() })
    }
    #[cfg(not(unix))]
    {
        let _ = m;
        None
    }
}

/// A file read to its current end, followed for appended lines.
struct Followed {
    path: PathBuf,
    /// Lines consumed (complete records only).
    lines: u64,
    /// Bytes consumed (complete records only): where reading goes on.
    bytes: u64,
    id: FileId,
    /// Its CSV header, once read (given again before lines read later).
    header: Option<Vec<u8>>,
    /// The size last seen, and since when it is so.
    size: u64,
    size_since: Instant,
}

/// What a poll appends to: its items, and how many more it may take (its `max`, a
/// [`Payload::Lines`] item counting its lines).
struct Appended<'a> {
    items: &'a mut Vec<SourceItem>,
    room: usize,
}

impl Appended<'_> {
    /// Appends an item of one record or header (a run of lines is appended by [`split_buffered`],
    /// which counts its lines).
    fn push(&mut self, item: SourceItem) {
        self.room = self.room.saturating_sub(1);
        self.items.push(item);
    }

    /// Whether the poll has taken its `max`.
    #[inline]
    fn is_full(&self) -> bool {
        self.room == 0
    }
}

/// The file being read.
struct OpenFile {
    name: String,
    /// `name`, shared by the positions of its records.
    shared_name: Arc<str>,
    path: PathBuf,
    reader: BlockReader,
    gz: bool,
    id: FileId,
    /// Lines consumed (the number of the last line of the last record read).
    line: u64,
    /// Bytes of content consumed (complete records only).
    bytes: u64,
    /// Whether the header line of this file is still to be read.
    header_pending: bool,
    /// Its header, once read.
    header: Option<Vec<u8>>,
    /// A header to return before the next record (skipped by a restart, or a followed file
    /// read on).
    give_header: Option<Vec<u8>>,
    /// The size last seen, and since when (a held partial line is read once this is older than
    /// `partial_line_timeout`).
    size: u64,
    size_since: Instant,
    /// Whether it failed and is finished (unreadable).
    failed: bool,
}

impl OpenFile {
    /// The position of the record that is line `line` of this file (one line).
    #[inline(always)]
    fn at(&self, line: u64) -> Position {
        Position::File { file: Arc::clone(&self.shared_name), line, through: line, identity: self.id }
    }
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
            .field("followed", &self.followed.len())
            .field("files_in_group", &self.files_in_group)
            .field("exhausted", &self.exhausted)
            .finish()
    }
}

impl FilesSource {
    /// A source over the files of `folder` (or over one file, when `folder` names a file), with
    /// the default `max_record_bytes`, `partial_line_timeout` and `on_unreadable_file`
    /// (`eddy_engine::spec`'s defaults; see the `with_` methods).
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
            rules: RecordRules { max_record_bytes: DEFAULT_MAX_RECORD_BYTES, csv: csv_header },
            partial_line_timeout: Duration::from_micros(DEFAULT_PARTIAL_LINE_TIMEOUT_US as u64),
            on_unreadable: OnUnreadableFile::DeadLetter,
            seen: HashSet::new(),
            pending: VecDeque::new(),
            current: None,
            files_in_group: 0,
            exhausted: false,
            line: Vec::new(),
            spare_lines: SpareLines::default(),
            done: BTreeSet::new(),
            resume: BTreeMap::new(),
            followed: BTreeMap::new(),
            counts_lines: follow,
            newlines: NewlineFinder::new(),
        })
    }

    /// Records longer than `bytes` (without their line terminator) are rejected
    /// ([`Rejection::TooLarge`]); at least 1.
    #[must_use]
    pub fn with_max_record_bytes(mut self, bytes: u64) -> FilesSource {
        self.rules.max_record_bytes = bytes.max(1);
        self
    }

    /// With `follow`: a last line without newline is read as a record once its file has not
    /// grown for `timeout`.
    #[must_use]
    pub fn with_partial_line_timeout(mut self, timeout: Duration) -> FilesSource {
        self.partial_line_timeout = timeout;
        self
    }

    /// What a file that cannot be read to its end does: a dead letter (the default) or an error.
    #[must_use]
    pub fn with_on_unreadable_file(mut self, on_unreadable: OnUnreadableFile) -> FilesSource {
        self.on_unreadable = on_unreadable;
        self
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

    /// With `follow`: queues, in name order, the followed files that grew, that hold a partial
    /// last line quiet for `partial_line_timeout`, or that were replaced or shrank (these are
    /// read from their start again, as new files).
    fn check_followed(&mut self) {
        let now = Instant::now();
        for (name, f) in &mut self.followed {
            // A file that vanished (renamed away by rotation) may come back under its name.
            let Ok(m) = std::fs::metadata(&f.path) else { continue };
            let size = m.len();
            let id = file_id(&m);
            if id != f.id || size < f.bytes {
                tracing::warn!(file = %f.path.display(), lines_read = f.lines, bytes_read = f.bytes, size,
                    "followed file was replaced or truncated; reading it from its start as a new file");
                *f = Followed { path: f.path.clone(), lines: 0, bytes: 0, id, header: None, size, size_since: now };
                self.pending.push_back((name.clone(), f.path.clone()));
            } else if size != f.size {
                f.size = size;
                f.size_since = now;
                if size > f.bytes {
                    self.pending.push_back((name.clone(), f.path.clone()));
                }
            } else if size > f.bytes && now.duration_since(f.size_since) >= self.partial_line_timeout {
                self.pending.push_back((name.clone(), f.path.clone()));
            }
        }
    }

    /// The error, or the dead letter, for a file that cannot be read on from `line` / `byte`:
    /// with [`OnUnreadableFile::DeadLetter`] a [`Rejection::UnreadableFile`] item is added to
    /// `out` and the file is finished.
    fn unreadable(
        &mut self,
        name: &str,
        path: &Path,
        (line, byte): (u64, u64),
        error: std::io::Error,
        head: &[u8],
        out: &mut Appended<'_>,
    ) -> Result<(), ConnectorError> {
        if self.on_unreadable == OnUnreadableFile::Fail {
            return Err(ConnectorError::Io {
                what: format!("reading {} at line {line} (byte {byte})", path.display()),
                source: error,
            });
        }
        // A followed `.gz` is read once: one caught half-written is judged unreadable here.
        let hint = if self.follow && name.ends_with(".gz") {
            " (a .gz must appear whole: write it under a hidden name, then rename)"
        } else {
            ""
        };
        tracing::warn!(file = %path.display(), line, byte, %error,
            "unreadable file{hint}: the lines before the failure were read, the rest goes to the dead letters");
        let head = head[..head.len().min(REJECTED_HEAD_BYTES)].to_vec();
        out.push(SourceItem {
            payload: Payload::Rejected(Box::new(Rejection::UnreadableFile { error: error.to_string(), head })),
            position: Position::FileRest { file: name.to_string(), line, byte },
            created_ns: 0,
        });
        self.followed.remove(name);
        self.done.insert(name.to_string());
        Ok(())
    }

    /// Opens a file at byte `at` of its content (0 for a `.gz` file).
    fn open_raw(&self, name: String, path: PathBuf, at: u64) -> std::io::Result<OpenFile> {
        let mut file = File::open(&path)?;
        let m = file.metadata()?;
        if at > 0 {
            file.seek(SeekFrom::Start(at))?;
        }
        let gz = name.ends_with(".gz");
        let content: Box<dyn Read + Send> = if gz { Box::new(MultiGzDecoder::new(file)) } else { Box::new(file) };
        let reader = BlockReader::new(content, READ_BUFFER);
        Ok(OpenFile {
            shared_name: Arc::from(name.as_str()),
            name,
            path,
            reader,
            gz,
            id: file_id(&m),
            line: 0,
            bytes: 0,
            header_pending: self.csv_header,
            header: None,
            give_header: None,
            size: m.len(),
            size_since: Instant::now(),
            failed: false,
        })
    }

    /// Opens a file to read it: a followed file where it stopped (from its start when it was
    /// replaced or truncated meanwhile), another past the lines a restart skips
    /// ([`Source::seek`]; a header among them is kept, to be returned first). `None`: the file
    /// is gone, or unreadable (its dead letter is in `out`).
    fn open(
        &mut self,
        name: String,
        path: PathBuf,
        out: &mut Appended<'_>,
    ) -> Result<Option<OpenFile>, ConnectorError> {
        let followed = self.followed.remove(&name);
        // A followed file goes on where it stopped, unless another file took its name or it
        // shrank.
        let go_on = followed.as_ref().filter(|f| match std::fs::metadata(&path) {
            Ok(m) if file_id(&m) == f.id && m.len() >= f.bytes => true,
            Ok(m) => {
                tracing::warn!(file = %path.display(), lines_read = f.lines, bytes_read = f.bytes, size = m.len(),
                    "followed file was replaced or truncated; reading it from its start as a new file");
                false
            }
            Err(_) => true,
        });
        let at = go_on.map_or(0, |f| f.bytes);
        let mut open = match self.open_raw(name.clone(), path.clone(), at) {
            Ok(open) => open,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                // Renamed away (rotation) between its listing and now: it may come back.
                tracing::debug!(file = %path.display(), "files source: a listed file is gone");
                match followed {
                    Some(f) => {
                        self.followed.insert(name, f);
                    }
                    // Listed again when a file of that name appears.
                    None => {
                        self.seen.remove(&OsString::from(&name));
                    }
                }
                return Ok(None);
            }
            Err(e) => {
                let at = go_on.map_or((1, 0), |f| (f.lines + 1, f.bytes));
                self.unreadable(&name, &path, at, e, &[], out)?;
                return Ok(None);
            }
        };
        if let Some(f) = go_on {
            open.line = f.lines;
            open.bytes = f.bytes;
            open.header_pending = self.csv_header && f.header.is_none();
            open.give_header.clone_from(&f.header);
            open.header.clone_from(&f.header);
            if open.size == f.size {
                open.size_since = f.size_since;
            }
            return Ok(Some(open));
        }
        if followed.is_some() {
            return Ok(Some(open));
        }
        let Some((skip, identity)) = self.resume.remove(&name) else {
            return Ok(Some(open));
        };
        if let (Some(was), Some(is)) = (identity, open.id)
            && was != is
        {
            tracing::warn!(file = %path.display(), checkpoint_lines = skip, checkpoint_inode = was.inode, inode = is.inode,
                "file was replaced since the checkpoint (another inode under its name); reading it from its start");
            return Ok(Some(open));
        }
        let skip_rules = RecordRules { csv: false, ..self.rules };
        while open.line < skip {
            let chunk = match read_record(&mut open.reader, &mut self.line, skip_rules) {
                Ok(c) => c,
                Err(e) => {
                    self.unreadable(&name, &path, (open.line + 1, open.bytes), e, &[], out)?;
                    return Ok(None);
                }
            };
            if chunk.consumed == 0 {
                break;
            }
            open.line += chunk.lines;
            open.bytes += chunk.consumed;
            let text = strip_newline(&self.line);
            let text = if open.line == 1 { strip_bom(text) } else { text };
            if open.header_pending && !is_blank(text) {
                open.header_pending = false;
                open.header = Some(text.to_vec());
                open.give_header = Some(text.to_vec());
            }
        }
        if open.line < skip && self.follow {
            tracing::warn!(file = %path.display(), lines = open.line, checkpoint_lines = skip,
                "followed file is shorter than the checkpoint says: it was replaced; reading it from its start");
            return match self.open_raw(name.clone(), path.clone(), 0) {
                Ok(open) => Ok(Some(open)),
                Err(e) => {
                    self.unreadable(&name, &path, (1, 0), e, &[], out)?;
                    Ok(None)
                }
            };
        }
        Ok(Some(open))
    }

    /// Reads records of the current file into `out` until `out` is full or the file ends (with
    /// `follow`: or reaches a partial last line it holds); returns whether it ended.
    fn read_current(&mut self, out: &mut Appended<'_>) -> Result<bool, ConnectorError> {
        let Some(file) = self.current.as_mut() else {
            return Ok(true);
        };
        if out.is_full() {
            return Ok(false);
        }
        if let Some(header) = file.give_header.take() {
            out.push(SourceItem { payload: Payload::Header(header), position: file.at(file.line), created_ns: 0 });
        }
        while !out.is_full() {
            // Whole lines already in the read buffer are split there, in place (no copy: their
            // items share the block); anything else (a line across reads, one too long, a CSV
            // line with a quote, the end of the input, an error) takes `read_record`, one record.
            if split_buffered(file, (self.rules, self.newlines), out) > 0 {
                continue;
            }
            let chunk = match read_record(&mut file.reader, &mut self.line, self.rules) {
                Ok(c) => c,
                Err(e) => {
                    file.failed = true;
                    let (name, path, at) = (file.name.clone(), file.path.clone(), (file.line + 1, file.bytes));
                    let head = std::mem::take(&mut self.line);
                    self.unreadable(&name, &path, at, e, &head, out)?;
                    return Ok(true);
                }
            };
            if chunk.consumed == 0 {
                return Ok(true);
            }
            if !chunk.complete && self.follow && !file.gz && file.size_since.elapsed() < self.partial_line_timeout {
                // Held: reading goes on from its first byte once more arrives (or the timeout).
                return Ok(true);
            }
            let line = self.line.as_slice();
            let first = file.line + 1;
            file.line += chunk.lines;
            file.bytes += chunk.consumed;
            let text = strip_newline(line);
            let text = if first == 1 { strip_bom(text) } else { text };
            let position = Position::File {
                file: Arc::clone(&file.shared_name),
                line: first,
                through: file.line,
                identity: file.id,
            };
            let item = if let Some(bytes) = chunk.too_large {
                let max = self.rules.max_record_bytes;
                tracing::warn!(%position, bytes, max, "record longer than max_record_bytes, skipped to its end");
                Some(SourceItem {
                    payload: Payload::Rejected(Box::new(Rejection::TooLarge { bytes, max, head: text.to_vec() })),
                    position,
                    created_ns: 0,
                })
            } else if is_blank(text) {
                None
            } else if file.header_pending {
                file.header_pending = false;
                file.header = Some(text.to_vec());
                Some(SourceItem { payload: Payload::Header(text.to_vec()), position, created_ns: 0 })
            } else {
                // A buffer handed back refilled (no allocation), else a new one.
                let raw = self.spare_lines.filled(text);
                Some(SourceItem { payload: Payload::Raw(raw), position, created_ns: 0 })
            };
            if let Some(item) = item {
                out.push(item);
            }
        }
        Ok(false)
    }

    /// The current file is read to its (current) end: followed, or finished.
    fn finish_current(&mut self) {
        let Some(c) = self.current.take() else { return };
        if c.failed {
            return;
        }
        if self.counts_lines && !c.gz {
            // The size now (it may have grown while it was read: seen at the next check).
            let (size, size_since) = match std::fs::metadata(&c.path) {
                Ok(m) if m.len() != c.size => (m.len(), Instant::now()),
                _ => (c.size, c.size_since),
            };
            let followed =
                Followed { path: c.path, lines: c.line, bytes: c.bytes, id: c.id, header: c.header, size, size_since };
            self.followed.insert(c.name, followed);
        } else {
            self.done.insert(c.name);
        }
    }
}

/// Splits the whole lines at the start of `file`'s read buffer into `out` (until `out` is full),
/// in place: consecutive non-blank lines make one [`Payload::Lines`] item that refers to the read
/// block (no copy, no buffer and no item per line; a blank line, which makes no record, ends a
/// run, and a header gets an item and a buffer of its own); the bytes are consumed from the
/// buffer once, after the last. Stops at the first line that is not whole in the buffer, longer
/// than `rules.max_record_bytes`, or (CSV) holding a quote: `read_record` reads those. Returns
/// the lines taken (blank ones included); 0 when the buffer does not start with such a line.
/// The same records, positions and counts as `read_record` gives for these lines: the fast path
/// of [`FilesSource::poll`], run per record.
fn split_buffered(
    file: &mut OpenFile,
    (rules, newlines): (RecordRules, NewlineFinder),
    out: &mut Appended<'_>,
) -> usize {
    let buffered = file.reader.buffer();
    // Where `buffered` starts in the block its lines share.
    let base = file.reader.position();
    // The bytes and lines taken (kept here, not in `file`, while the loop runs: it runs per line).
    let mut used = 0;
    let mut line = file.line;
    // The run being gathered: lines `run_first..=line` of the file, once not empty. Room for
    // the lines the buffer holds at 64 bytes a line (it grows only for shorter lines).
    let room = out.room.min(buffered.len() / 64 + 1);
    let mut run = SharedLines::with_capacity(Arc::clone(file.reader.block()), room);
    let mut run_first = 0;
    while !out.is_full() {
        let rest = &buffered[used..];
        let Some(nl) = newlines.find(rest) else { break };
        let with_cr = &rest[..nl];
        let text = with_cr.strip_suffix(b"\r").unwrap_or(with_cr);
        if text.len() as u64 > rules.max_record_bytes || (rules.csv && memchr::memchr(b'"', with_cr).is_some()) {
            break;
        }
        // `text` in `buffered`: `[start, end)`, without the line terminator (nor, on a file's
        // first line, a byte order mark).
        let end = used + text.len();
        used += nl + 1;
        line += 1;
        let text = if line == 1 { strip_bom(text) } else { text };
        let start = end - text.len();
        if is_blank(text) || file.header_pending {
            // The run ends before this line.
            end_run(file, &mut run, run_first, out);
            if !is_blank(text) {
                file.header_pending = false;
                file.header = Some(text.to_vec());
                out.push(SourceItem {
                    payload: Payload::Header(text.to_vec()),
                    position: file.at(line),
                    created_ns: 0,
                });
            }
            continue;
        }
        if run.is_empty() {
            run_first = line;
        }
        run.push(base + start..base + end);
        out.room -= 1;
    }
    end_run(file, &mut run, run_first, out);
    let lines = (line - file.line) as usize;
    file.line = line;
    file.bytes += used as u64;
    file.reader.consume(used);
    lines
}

/// Appends the run of lines `run` of `file` (its first line: `first`), when it has any, as one
/// [`Payload::Lines`] item (its lines are counted in `out` already); `run` is left empty, over
/// the same block.
fn end_run(file: &OpenFile, run: &mut SharedLines, first: u64, out: &mut Appended<'_>) {
    if run.is_empty() {
        return;
    }
    let through = first + run.len() as u64 - 1;
    let lines = std::mem::replace(run, SharedLines::new(Arc::clone(file.reader.block())));
    let position = Position::File { file: Arc::clone(&file.shared_name), line: first, through, identity: file.id };
    out.items.push(SourceItem { payload: Payload::Lines(lines), position, created_ns: 0 });
}

impl Source for FilesSource {
    /// Appends up to `max` items; returns [`Poll::BatchBoundary`] when a group of files ends
    /// (the group's last items are in `out`), [`Poll::Data`] when `max` items were appended,
    /// [`Poll::Exhausted`] (no `follow`) when every file has been read, and [`Poll::Idle`]
    /// (`follow`) when nothing new arrived within `timeout`. It sleeps between listings, never
    /// spins.
    ///
    /// # Errors
    /// [`ConnectorError::Io`] naming the folder that cannot be listed, or (with
    /// `on_unreadable_file = "fail"`) the file, line and byte that cannot be opened, read or
    /// decompressed.
    fn poll(&mut self, out: &mut Vec<SourceItem>, max: usize, timeout: Duration) -> Result<Poll, ConnectorError> {
        if self.exhausted {
            return Ok(Poll::Exhausted);
        }
        let deadline = Instant::now().checked_add(timeout);
        let out = &mut Appended { items: out, room: max };
        loop {
            if self.current.is_some() {
                if !self.read_current(out)? {
                    return Ok(Poll::Data);
                }
                self.finish_current();
                self.files_in_group += 1;
                if self.files_in_group == self.max_files_per_trigger {
                    self.files_in_group = 0;
                    return Ok(Poll::BatchBoundary);
                }
                continue;
            }
            if self.pending.is_empty() {
                self.rescan()?;
                if self.follow {
                    self.check_followed();
                }
            }
            if out.is_full() {
                return Ok(Poll::Data);
            }
            // The file a restart resumes in comes first, as the run before read it first.
            let resumed = self.pending.iter().position(|(n, _)| self.resume.contains_key(n));
            if let Some((name, path)) = self.pending.remove(resumed.unwrap_or(0)) {
                match self.open(name, path, out)? {
                    Some(open) => self.current = Some(open),
                    // Unreadable (its dead letter is in `out`) or gone: still a member of its group.
                    None => {
                        self.files_in_group += 1;
                        if self.files_in_group == self.max_files_per_trigger {
                            self.files_in_group = 0;
                            return Ok(Poll::BatchBoundary);
                        }
                    }
                }
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

    /// Keeps buffers of at most 4 KiB, up to 4,096 in all; the next lines read one at a time
    /// (a file's first line, one across two read blocks, ...: [`Payload::Raw`]) are copied into
    /// them. Lines whole in a read block share the block instead ([`Payload::Lines`]).
    fn recycle_lines(&mut self, lines: &mut Vec<Vec<u8>>) {
        self.spare_lines.keep(lines);
    }

    /// Without `follow`: the files read whole, and the file being read with its lines read so
    /// far (or, before a resumed file is opened, the lines a restart skips in it); `None` before
    /// anything was read. With `follow` ([`SourceOffset::FilesFollowed`], from the start): the
    /// lines consumed of every file read, and the files finished for good.
    fn offset(&self) -> Option<SourceOffset> {
        if self.counts_lines {
            let mut files: BTreeMap<&str, Resume> = self.resume.iter().map(|(n, r)| (n.as_str(), *r)).collect();
            files.extend(self.followed.iter().map(|(n, f)| (n.as_str(), (f.lines, f.id))));
            if let Some(c) = self.current.as_ref().filter(|c| !c.failed) {
                files.insert(&c.name, (c.line, c.id));
            }
            return Some(SourceOffset::FilesFollowed {
                done: self.done.iter().cloned().collect(),
                files: files
                    .into_iter()
                    .map(|(n, (lines, identity))| FollowedFile { file: n.to_string(), lines, identity })
                    .collect(),
            });
        }
        let reading = match &self.current {
            Some(c) if !c.failed => Some((c.name.clone(), c.line)),
            _ => self.resume.iter().next().map(|(n, (l, _))| (n.clone(), *l)),
        };
        (reading.is_some() || !self.done.is_empty())
            .then(|| SourceOffset::Files { done: self.done.iter().cloned().collect(), reading })
    }

    /// Skips the files the offset names as read and the offset's lines of the files it was
    /// reading; every other file of the folder is read, in name order. A mid-file resume starts
    /// a new group of `max_files_per_trigger` files there. An offset of a followed source
    /// ([`SourceOffset::FilesFollowed`]) makes this source count lines per file too (without
    /// `follow`, each file is then read on from its count, once). An offset of a checkpoint of
    /// format 1 or 2 ([`SourceOffset::FilesInNameOrder`]) skips the files of the folder named
    /// before its file, as those versions did.
    ///
    /// # Errors
    /// [`ConnectorError::Config`] for an offset of another kind of source;
    /// [`ConnectorError::Io`] when the folder cannot be listed (an old offset).
    fn seek(&mut self, offset: &SourceOffset) -> Result<(), ConnectorError> {
        let (done, reading): (Vec<String>, Vec<(String, Resume)>) = match offset {
            SourceOffset::Files { done, reading } => {
                (done.clone(), reading.iter().map(|(n, l)| (n.clone(), (*l, None))).collect())
            }
            SourceOffset::FilesFollowed { done, files } => {
                self.counts_lines = true;
                (done.clone(), files.iter().map(|f| (f.file.clone(), (f.lines, f.identity))).collect())
            }
            SourceOffset::FilesInNameOrder { file, line } => {
                let mut done = Vec::new();
                self.rescan()?;
                for (name, _) in &self.pending {
                    if name < file || (name == file && *line == u64::MAX) {
                        done.push(name.clone());
                    }
                }
                (done, (*line != u64::MAX).then(|| (file.clone(), (*line, None))).into_iter().collect())
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
        self.resume = reading.into_iter().collect();
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use super::*;
    use crate::REJECTED_HEAD_BYTES;
    use crate::spare::SPARE_LINE_CAPACITY;

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
            Payload::Line(l) => String::from_utf8(l.bytes().to_vec()).unwrap(),
            Payload::Header(b) => format!("header: {}", String::from_utf8(b.clone()).unwrap()),
            Payload::Rejected(r) => format!("rejected: {}", r.reason()),
            Payload::Record(r) => panic!("expected a raw line, got {r:?}"),
            Payload::Lines(l) => panic!("expected runs of lines split, got {l:?}"),
        }
    }

    /// Polls `source`, checks that the items count at most `max` ([`SourceItem::units`]), and
    /// splits the runs of lines among them into one item per line
    /// ([`SourceItem::split_lines`]).
    fn poll_lines(
        source: &mut FilesSource,
        out: &mut Vec<SourceItem>,
        max: usize,
        timeout: Duration,
    ) -> Result<Poll, ConnectorError> {
        let before = out.len();
        let poll = source.poll(out, max, timeout)?;
        let taken: usize = out[before..].iter().map(SourceItem::units).sum();
        assert!(taken <= max, "a poll returned {taken} items, more than max {max}");
        SourceItem::split_lines(out, before);
        Ok(poll)
    }

    /// The offset of a followed source over `files` (name, lines consumed), with the identities
    /// the files of `dir` have now.
    fn followed(dir: &Path, files: &[(&str, u64)]) -> SourceOffset {
        let entry = |(file, lines): &(&str, u64)| FollowedFile {
            file: file.to_string(),
            lines: *lines,
            identity: file_id(&std::fs::metadata(dir.join(file)).unwrap()),
        };
        SourceOffset::FilesFollowed { done: vec![], files: files.iter().map(entry).collect() }
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
            let poll = poll_lines(source, &mut out, max, timeout).unwrap();
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
    fn whole_lines_of_a_block_come_as_runs_of_consecutive_lines_counted_per_line() {
        let dir = tempfile::tempdir().unwrap();
        write(dir.path(), "a.json", "{\"i\":0}\n{\"i\":1}\r\n{\"i\":2}\n \n{\"i\":3}\n{\"i\":4}\n{\"i\":5}\n");
        let mut s = FilesSource::new(dir.path(), 1, false, false).unwrap();
        let runs = |out: &[SourceItem]| -> Vec<(String, Vec<String>)> {
            out.iter()
                .map(|item| {
                    let lines = match &item.payload {
                        Payload::Lines(lines) => {
                            (0..lines.len()).map(|k| String::from_utf8(lines.line(k).to_vec()).unwrap()).collect()
                        }
                        _ => vec![raw(item)],
                    };
                    (item.position.to_string(), lines)
                })
                .collect()
        };
        // The first line is read alone (the read buffer is empty); a blank line ends a run; the
        // poll stops after `max` lines, in the middle of a run.
        let mut out = Vec::new();
        assert_eq!(s.poll(&mut out, 4, LONG).unwrap(), Poll::Data);
        let line = |i: u8| format!("{{\"i\":{i}}}");
        assert_eq!(
            runs(&out),
            vec![
                ("a.json:1".to_string(), vec![line(0)]),
                ("a.json:2-3".to_string(), vec![line(1), line(2)]),
                ("a.json:5".to_string(), vec![line(3)]),
            ]
        );
        assert_eq!(out.iter().map(SourceItem::units).sum::<usize>(), 4);
        assert_eq!(s.offset(), Some(files(&[], Some(("a.json", 5)))));
        let mut out = Vec::new();
        assert_eq!(s.poll(&mut out, 10, LONG).unwrap(), Poll::BatchBoundary);
        assert_eq!(runs(&out), vec![("a.json:6-7".to_string(), vec![line(4), line(5)])]);
        let Payload::Lines(lines) = &out[0].payload else { panic!("{:?}", out[0].payload) };
        assert_eq!(out[0].position.line_of_run(lines.len() - 1).to_string(), "a.json:7");
    }

    #[test]
    fn runs_of_lines_give_the_records_and_positions_of_a_reading_line_by_line() {
        // A file of ~750 KiB (lines across read blocks, read alone) with a byte order mark,
        // blank lines and both line terminators, polled with random `max`es, against the
        // obviously-correct reading: each non-blank line, at its number, without terminator.
        let dir = tempfile::tempdir().unwrap();
        let mut state = 0x9e37_79b9_7f4a_7c15_u64;
        let mut random = move |below: u64| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state % below
        };
        let mut text = String::from("\u{feff}");
        let mut expected = Vec::new();
        for n in 1..=12_000 {
            let line = match random(20) {
                0 => String::new(),
                1 => " \t".to_string(),
                _ => format!("{{\"n\":{n},\"pad\":\"{}\"}}", "x".repeat(random(90) as usize)),
            };
            text.push_str(&line);
            text.push_str(if random(7) == 0 { "\r\n" } else { "\n" });
            if !line.trim().is_empty() {
                expected.push((format!("a.json:{n}"), line));
            }
        }
        write(dir.path(), "a.json", &text);
        let mut s = FilesSource::new(dir.path(), 1, false, false).unwrap();
        let mut got = Vec::new();
        loop {
            let mut out = Vec::new();
            let max = 1 + random(5000) as usize;
            let poll = poll_lines(&mut s, &mut out, max, LONG).unwrap();
            got.extend(out.iter().map(|i| (i.position.to_string(), raw(i))));
            if poll != Poll::Data {
                break;
            }
        }
        assert_eq!(got.len(), expected.len());
        assert!(got == expected, "first difference: {:?}", got.iter().zip(&expected).find(|(g, e)| g != e));
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
        assert_eq!(poll_lines(&mut first, &mut out, 100, LONG).unwrap(), Poll::BatchBoundary);
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
        poll_lines(&mut s, &mut out, 10, LONG).unwrap();
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
    fn a_corrupt_gz_file_is_an_error_naming_it_when_unreadable_files_fail() {
        let dir = tempfile::tempdir().unwrap();
        write(dir.path(), "bad.json.gz", "this is not gzip\n");
        let mut s =
            FilesSource::new(dir.path(), 1, false, false).unwrap().with_on_unreadable_file(OnUnreadableFile::Fail);
        let err = s.poll(&mut Vec::new(), 10, LONG).unwrap_err();
        assert!(err.to_string().contains("bad.json.gz"), "{err}");
    }

    /// `text` gzipped, as bytes.
    fn gz(text: &str) -> Vec<u8> {
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        gz.write_all(text.as_bytes()).unwrap();
        gz.finish().unwrap()
    }

    #[test]
    fn an_unreadable_gz_file_gives_its_lines_then_one_rejection_of_its_rest_and_is_finished() {
        let dir = tempfile::tempdir().unwrap();
        let text: String = (0..2000).map(|i| format!("{{\"i\":{i},\"pad\":\"{}\"}}\n", i * 7919 % 10007)).collect();
        let whole = gz(&text);
        // Truncated: the stream ends early. Garbage: bytes in its middle overwritten.
        std::fs::write(dir.path().join("b-truncated.json.gz"), &whole[..whole.len() / 2]).unwrap();
        let mut garbled = whole.clone();
        let mid = garbled.len() / 2;
        garbled[mid..mid + 64].fill(0x55);
        std::fs::write(dir.path().join("c-garbled.json.gz"), &garbled).unwrap();
        write(dir.path(), "a.json", "{\"a\":1}\n");
        write(dir.path(), "d.json", "{\"d\":1}\n");
        let mut s = FilesSource::new(dir.path(), 1, false, false).unwrap();
        let mut items = Vec::new();
        loop {
            let mut out = Vec::new();
            let poll = poll_lines(&mut s, &mut out, 100, LONG).unwrap();
            items.extend(out);
            if poll == Poll::Exhausted {
                break;
            }
        }
        let rejected: Vec<&SourceItem> = items
            .iter()
            .filter(|i| matches!(&i.payload, Payload::Rejected(r) if matches!(**r, Rejection::UnreadableFile { .. })))
            .collect();
        let files_of = |items: &[&SourceItem]| -> Vec<String> {
            items
                .iter()
                .map(|i| match &i.position {
                    Position::FileRest { file, .. } => file.clone(),
                    other => panic!("{other:?}"),
                })
                .collect()
        };
        assert_eq!(files_of(&rejected), vec!["b-truncated.json.gz", "c-garbled.json.gz"]);
        let raw_lines = |file: &str| -> Vec<String> {
            items
                .iter()
                .filter(|i| matches!(&i.position, Position::File { file: f, .. } if **f == *file))
                .map(raw)
                .collect()
        };
        // Truncated: every line read before the failure is complete and the file's own, and the
        // byte is where the next starts. (Garbage may decompress to other lines before gzip's
        // checksum finds it, at the end of the member: they are read as they come.)
        let read = raw_lines("b-truncated.json.gz");
        assert!(!read.is_empty());
        assert_eq!(read, text.lines().take(read.len()).collect::<Vec<_>>());
        let Position::FileRest { line, byte, .. } = &rejected[0].position else { unreachable!() };
        assert_eq!(*line, read.len() as u64 + 1);
        assert_eq!(*byte as usize, read.iter().map(|l| l.len() + 1).sum::<usize>());
        assert_eq!(raw_lines("a.json"), vec!["{\"a\":1}"]);
        assert_eq!(raw_lines("d.json"), vec!["{\"d\":1}"]);
        // Finished: a restart from this offset reads nothing again.
        let offset = s.offset().unwrap();
        let all = ["a.json", "b-truncated.json.gz", "c-garbled.json.gz", "d.json"];
        assert_eq!(offset, files(&all, None));
        let mut resumed = FilesSource::new(dir.path(), 1, false, false).unwrap();
        resumed.seek(&offset).unwrap();
        assert_eq!(drain(&mut resumed, 100, LONG), (vec![], Poll::Exhausted));
    }

    #[test]
    fn a_record_longer_than_max_record_bytes_is_rejected_with_its_length_and_first_bytes() {
        let dir = tempfile::tempdir().unwrap();
        let long = format!("{{\"s\":\"{}\"}}", "x".repeat(5000));
        write(dir.path(), "a.json", &format!("{{\"a\":1}}\n{long}\n{{\"a\":2}}\n"));
        let mut s = FilesSource::new(dir.path(), 1, false, false).unwrap().with_max_record_bytes(1000);
        let mut out = Vec::new();
        assert_eq!(poll_lines(&mut s, &mut out, 100, LONG).unwrap(), Poll::BatchBoundary);
        assert_eq!(out.len(), 3);
        let Payload::Rejected(rejection) = &out[1].payload else { panic!("{:?}", out[1].payload) };
        let Rejection::TooLarge { bytes, max, head } = &**rejection else { panic!("{rejection:?}") };
        assert_eq!((*bytes, *max, head.as_slice()), (long.len() as u64, 1000, &long.as_bytes()[..REJECTED_HEAD_BYTES]));
        assert_eq!(out[1].position.to_string(), "a.json:2");
        assert_eq!(raw(&out[2]), "{\"a\":2}");
    }

    #[test]
    fn a_csv_record_with_a_newline_in_a_quoted_field_is_one_record_at_its_first_line() {
        let dir = tempfile::tempdir().unwrap();
        write(dir.path(), "a.csv", "id,s,n\n1,\"multi\nline\",3\n2,plain,4\n");
        let mut s = FilesSource::new(dir.path(), 1, false, true).unwrap();
        let mut out = Vec::new();
        assert_eq!(poll_lines(&mut s, &mut out, 100, LONG).unwrap(), Poll::BatchBoundary);
        let got: Vec<(String, String)> = out.iter().map(|i| (i.position.to_string(), raw(i))).collect();
        let expected = [("a.csv:1", "header: id,s,n"), ("a.csv:2-3", "1,\"multi\nline\",3"), ("a.csv:4", "2,plain,4")];
        assert_eq!(got, expected.map(|(p, l)| (p.to_string(), l.to_string())));
        // A restart after the record skips both of its lines.
        let mut resumed = FilesSource::new(dir.path(), 1, false, true).unwrap();
        resumed.seek(&files(&[], Some(("a.csv", 3)))).unwrap();
        let (batches, _) = drain(&mut resumed, 100, LONG);
        assert_eq!(batches, vec![vec!["header: id,s,n", "2,plain,4"]]);
    }

    fn append(dir: &Path, name: &str, text: &str) {
        let mut f = std::fs::OpenOptions::new().append(true).create(true).open(dir.join(name)).unwrap();
        f.write_all(text.as_bytes()).unwrap();
    }

    /// Every item of polls until one is idle.
    fn until_idle(s: &mut FilesSource) -> Vec<String> {
        let mut lines = Vec::new();
        loop {
            let mut out = Vec::new();
            let poll = poll_lines(s, &mut out, 100, Duration::from_millis(120)).unwrap();
            lines.extend(out.iter().map(raw));
            if poll == Poll::Idle {
                return lines;
            }
        }
    }

    #[test]
    fn a_followed_file_is_read_on_as_it_grows_and_a_partial_line_waits_for_its_newline() {
        let dir = tempfile::tempdir().unwrap();
        write(dir.path(), "a.json", "1\n2");
        write(dir.path(), "b.json", "x\n");
        let mut s = FilesSource::new(dir.path(), 1, true, false).unwrap();
        assert_eq!(until_idle(&mut s), vec!["1", "x"]);
        let lines = |n: u64| followed(dir.path(), &[("a.json", n), ("b.json", 1)]);
        // The partial line is not consumed, in the offset neither.
        assert_eq!(s.offset(), Some(lines(1)));
        append(dir.path(), "a.json", "2");
        assert_eq!(until_idle(&mut s), Vec::<String>::new());
        append(dir.path(), "a.json", "\n3\n4");
        assert_eq!(until_idle(&mut s), vec!["22", "3"]);
        assert_eq!(s.offset(), Some(lines(3)));
        // A restart from the offset reads on from the same place.
        let mut resumed = FilesSource::new(dir.path(), 1, true, false).unwrap();
        resumed.seek(&lines(3)).unwrap();
        append(dir.path(), "a.json", "5\n");
        append(dir.path(), "b.json", "y\n");
        assert_eq!(until_idle(&mut resumed), vec!["45", "y"]);
    }

    #[test]
    fn a_partial_last_line_is_read_after_its_file_stays_unchanged_for_the_timeout() {
        let dir = tempfile::tempdir().unwrap();
        write(dir.path(), "a.json", "1\n2");
        let mut s =
            FilesSource::new(dir.path(), 1, true, false).unwrap().with_partial_line_timeout(Duration::from_millis(300));
        assert_eq!(until_idle(&mut s), vec!["1"]);
        std::thread::sleep(Duration::from_millis(400));
        assert_eq!(until_idle(&mut s), vec!["2"]);
        assert_eq!(s.offset(), Some(followed(dir.path(), &[("a.json", 2)])));
    }

    #[test]
    fn a_followed_file_that_is_replaced_or_truncated_is_read_from_its_start() {
        let dir = tempfile::tempdir().unwrap();
        write(dir.path(), "a.log", "1\n2\n");
        let mut s = FilesSource::new(dir.path(), 1, true, false).unwrap();
        assert_eq!(until_idle(&mut s), vec!["1", "2"]);
        // Rotation: renamed away, a new file under the name (a new inode), longer than the old.
        std::fs::rename(dir.path().join("a.log"), dir.path().join(".a.log.1")).unwrap();
        write(dir.path(), "a.log", "3\n4\n5\n");
        assert_eq!(until_idle(&mut s), vec!["3", "4", "5"]);
        // Truncated in place and written again.
        std::fs::write(dir.path().join("a.log"), "6\n").unwrap();
        assert_eq!(until_idle(&mut s), vec!["6"]);
        assert_eq!(s.offset(), Some(followed(dir.path(), &[("a.log", 1)])));
    }

    #[test]
    fn a_followed_file_replaced_while_stopped_is_read_from_its_start_after_a_restart() {
        let dir = tempfile::tempdir().unwrap();
        write(dir.path(), "a.log", "1\n2\n3\n");
        let mut s = FilesSource::new(dir.path(), 1, true, false).unwrap();
        assert_eq!(until_idle(&mut s), vec!["1", "2", "3"]);
        let offset = s.offset().unwrap();
        assert_eq!(offset, followed(dir.path(), &[("a.log", 3)]));
        // Rotated while stopped: a new, longer file under the name (another inode: the old one
        // still exists under another name, so its inode is not reused).
        std::fs::rename(dir.path().join("a.log"), dir.path().join(".a.log.1")).unwrap();
        write(dir.path(), "a.log", "4\n5\n6\n7\n8\n");
        let mut resumed = FilesSource::new(dir.path(), 1, true, false).unwrap();
        resumed.seek(&offset).unwrap();
        assert_eq!(until_idle(&mut resumed), vec!["4", "5", "6", "7", "8"]);
        assert_eq!(resumed.offset(), Some(followed(dir.path(), &[("a.log", 5)])));
        // An offset without identities (a checkpoint written before they were kept) trusts the
        // name, as such checkpoints did.
        let unknown = SourceOffset::FilesFollowed {
            done: vec![],
            files: vec![FollowedFile { file: "a.log".into(), lines: 3, identity: None }],
        };
        let mut old = FilesSource::new(dir.path(), 1, true, false).unwrap();
        old.seek(&unknown).unwrap();
        assert_eq!(until_idle(&mut old), vec!["7", "8"]);
    }

    #[test]
    fn a_poll_returns_at_most_max_items_and_resumes_where_it_stopped() {
        let dir = tempfile::tempdir().unwrap();
        let text: String = (1..=10).map(|i| format!("{i}\n")).collect();
        write(dir.path(), "a.json", &text);
        let mut s = FilesSource::new(dir.path(), 1, false, false).unwrap();
        let mut out = Vec::new();
        assert_eq!(poll_lines(&mut s, &mut out, 3, LONG).unwrap(), Poll::Data);
        assert_eq!(out.len(), 3);
        let (batches, end) = drain(&mut s, 3, LONG);
        assert_eq!(end, Poll::Exhausted);
        let rest: Vec<String> = (4..=10).map(|i| i.to_string()).collect();
        assert_eq!(batches, vec![rest]);
    }

    #[test]
    fn lines_of_a_read_block_share_it_and_buffers_handed_back_are_refilled_with_lines_read_alone() {
        let dir = tempfile::tempdir().unwrap();
        // A first line is read alone (the read buffer is empty), as a last line without newline.
        write(dir.path(), "a.json", &"a".repeat(20));
        write(dir.path(), "b.json", "xxxx\n{\"i\":1}\n{\"i\":2}\n");
        let mut s = FilesSource::new(dir.path(), 1, false, false).unwrap();
        let mut out = Vec::new();
        assert_eq!(poll_lines(&mut s, &mut out, 3, LONG).unwrap(), Poll::BatchBoundary);
        let mut lines: Vec<Vec<u8>> = out
            .drain(..)
            .map(|item| match item.payload {
                Payload::Raw(b) => b,
                other => panic!("expected a raw line, got {other:?}"),
            })
            .collect();
        assert_eq!(lines, vec!["a".repeat(20).into_bytes()]);
        // One too large to keep: dropped, not reused.
        lines.push(Vec::with_capacity(SPARE_LINE_CAPACITY + 1));
        let kept = lines[0].as_ptr();
        s.recycle_lines(&mut lines);
        assert_eq!(s.spare_lines.len(), 1);
        assert_eq!(poll_lines(&mut s, &mut out, 10, LONG).unwrap(), Poll::BatchBoundary);
        assert_eq!(out.iter().map(raw).collect::<Vec<_>>(), vec!["xxxx", "{\"i\":1}", "{\"i\":2}"]);
        // The buffer handed back, refilled; the lines after it in one block, without copies.
        let Payload::Raw(first) = &out[0].payload else { panic!("{:?}", out[0].payload) };
        assert_eq!(first.as_ptr(), kept);
        assert_eq!(s.spare_lines.len(), 0);
        let at = |i: usize| match &out[i].payload {
            Payload::Line(l) => l.bytes().as_ptr() as usize,
            other => panic!("expected a shared line, got {other:?}"),
        };
        assert_eq!(at(2) - at(1), "{\"i\":1}\n".len());
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
        let poll = poll_lines(&mut s, &mut out, 10, LONG).unwrap();
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
        assert_eq!(poll_lines(&mut s, &mut out, 100, LONG).unwrap(), Poll::BatchBoundary);
        assert_eq!(out.iter().map(raw).collect::<Vec<_>>(), vec!["header: id,name", "2,y"]);
        let identity = file_id(&std::fs::metadata(dir.path().join("a.csv")).unwrap());
        assert_eq!(out[1].position, Position::File { file: "a.csv".into(), line: 3, through: 3, identity });
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
