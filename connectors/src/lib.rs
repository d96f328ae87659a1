//! # eddy-connectors: where records come from and where rows go
//!
//! [`Source`]s produce raw input (JSON / CSV lines from files, stdin, Kafka) or already-decoded
//! records (the Nexmark generator); [`Sink`]s take output rows as JSON lines and commit them per
//! micro-batch or epoch. Sources and sinks do no query work: decoding, routing and operators are
//! the runtime's (`eddy-actors`).
#![deny(missing_docs)]

use std::fmt;
use std::sync::Arc;

use eddy_engine::Record;

#[cfg(feature = "delta")]
pub mod delta;
pub mod files;
pub mod foreach;
pub mod kafka;
pub mod nexmark;
pub mod offset;
#[cfg(feature = "s3")]
pub mod s3;
mod spare;
pub mod stdio;

pub use files::{FilesSink, FilesSource};
pub use kafka::{KafkaSink, KafkaSource};
pub use nexmark::{NexmarkSource, NexmarkTable};
pub use offset::{FileIdentity, FollowedFile, KafkaPartitionOffset, SourceOffset};
pub use stdio::{StdinSource, StdoutSink};

/// Where a record came from, for dead letters and logs (`file.json:12`, `topic/3@1042`, ...).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Position {
    /// A record of a file: its first line (1-based) and its last (a CSV record whose quoted
    /// field holds a newline spans several lines); of a [`Payload::Lines`] item, the first line
    /// of its run and the last.
    File {
        /// File name (without folder), shared by the file's records (no copy per record).
        file: Arc<str>,
        /// The record's (or run's) first line, from 1.
        line: u64,
        /// The record's (or run's) last line (`>= line`): a restart resumes after it.
        through: u64,
        /// The file's identity (device and inode; `None` off Unix): a followed source's offset
        /// keeps it, so a restart reads a file replaced meanwhile from its start.
        identity: Option<FileIdentity>,
    },
    /// The rest of a file that cannot be read, from a byte of its content on (decompressed
    /// content for `.gz`): the file is finished there ([`Rejection::UnreadableFile`]).
    FileRest {
        /// File name (without folder).
        file: String,
        /// The first line not read, from 1.
        line: u64,
        /// Bytes of the file's content read before it (complete lines only).
        byte: u64,
    },
    /// A record of standard input: its first line (1-based) and its last.
    Stdin {
        /// The record's first line, from 1.
        line: u64,
        /// The record's last line (`>= line`).
        through: u64,
    },
    /// A Kafka message.
    Kafka {
        /// Topic, shared by the topic's messages (no copy per message).
        topic: Arc<str>,
        /// Partition.
        partition: i32,
        /// Offset.
        offset: i64,
    },
    /// A generated record (Nexmark): its sequence number.
    Generated {
        /// Event number, from 0.
        event: u64,
    },
}

impl Position {
    /// The position of line `k` (from 0) of a [`Payload::Lines`] item at this position: of a
    /// [`Position::File`] from `line` on, line `line + k` alone (`through` the same); any other
    /// position as it is.
    #[inline]
    pub fn line_of_run(&self, k: usize) -> Position {
        match self {
            Position::File { file, line, identity, .. } => {
                let line = line + k as u64;
                Position::File { file: Arc::clone(file), line, through: line, identity: *identity }
            }
            other => other.clone(),
        }
    }
}

impl fmt::Display for Position {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Position::File { file, line, through, .. } if through > line => write!(f, "{file}:{line}-{through}"),
            Position::File { file, line, .. } => write!(f, "{file}:{line}"),
            Position::FileRest { file, line, byte } => write!(f, "{file}:{line} (byte {byte} to the end)"),
            Position::Stdin { line, through } if through > line => write!(f, "stdin:{line}-{through}"),
            Position::Stdin { line, .. } => write!(f, "stdin:{line}"),
            Position::Kafka { topic, partition, offset } => write!(f, "{topic}/{partition}@{offset}"),
            Position::Generated { event } => write!(f, "event {event}"),
        }
    }
}

/// The content of one input item.
#[derive(Clone, Debug)]
pub enum Payload {
    /// Undecoded bytes: one JSON object or one CSV line (no trailing newline).
    Raw(Vec<u8>),
    /// Undecoded bytes as [`Payload::Raw`], held in a read block shared with the other lines of
    /// that block (no copy and no buffer per line). Decoded exactly as [`Payload::Raw`].
    Line(SharedLine),
    /// Several records: consecutive lines of one file, whole in one read block, each decoded
    /// exactly as a [`Payload::Raw`] (the files source: one item for a run of lines, so its
    /// poll does no work per line beyond finding it). Line `k` (from 0) of the run is line
    /// `line + k` of the file, `line` being the item's [`Position::File`] first line (and
    /// `through` the run's last line; [`Position::line_of_run`] gives each line's own position).
    /// A run counts as many items as it has lines toward a poll's `max`
    /// ([`SourceItem::units`]); [`SourceItem::split_lines`] makes it one [`Payload::Line`] item
    /// per line.
    Lines(SharedLines),
    /// A record already in the source's schema (generators).
    Record(Record),
    /// A CSV header line (without its newline; a leading UTF-8 byte order mark removed): the
    /// [`Payload::Raw`] lines after it, up to the next header, are decoded under it. A CSV
    /// source gives one before the first line of each file (files) or of its input (stdin),
    /// also when a restart resumes in the middle of it; it is no record: it is not counted and
    /// moves no offset.
    Header(Vec<u8>),
    /// Input the source could not make a record of: the runtime counts it and writes it to the
    /// dead letters (`{"reason", "source", "record"}`, as a record that cannot be decoded).
    /// Boxed: rare, and twice the size of the other variants, it would make every item larger
    /// (items are moved per record).
    Rejected(Box<Rejection>),
}

impl Payload {
    /// The undecoded bytes of a [`Payload::Raw`] or [`Payload::Line`]; `None` for the others
    /// (a [`Payload::Lines`] holds several: [`SharedLines::line`]).
    #[inline]
    pub fn raw_bytes(&self) -> Option<&[u8]> {
        match self {
            Payload::Raw(bytes) => Some(bytes),
            Payload::Line(line) => Some(line.bytes()),
            Payload::Lines(_) | Payload::Record(_) | Payload::Header(_) | Payload::Rejected(_) => None,
        }
    }
}

/// One line of a read block that several lines share ([`Payload::Line`]): the block and the
/// line's byte range in it, half-open `[start, end)`. Cloning it clones the block's `Arc`, not
/// the bytes; the block is freed with its last line.
#[derive(Clone)]
pub struct SharedLine {
    block: Arc<Vec<u8>>,
    start: u32,
    end: u32,
}

impl SharedLine {
    /// Line `range` (bytes, half-open) of `block`.
    ///
    /// # Panics
    /// When `range` is not within `block` or ends past `u32::MAX` (blocks are read buffers, of
    /// 256 KiB for the files source).
    #[inline]
    pub fn new(block: Arc<Vec<u8>>, range: std::ops::Range<usize>) -> SharedLine {
        assert!(
            range.start <= range.end && range.end <= block.len(),
            "line {range:?} out of a block of {}",
            block.len()
        );
        let start = u32::try_from(range.start).expect("a read block is smaller than 4 GiB");
        let end = u32::try_from(range.end).expect("a read block is smaller than 4 GiB");
        SharedLine { block, start, end }
    }

    /// The line's bytes.
    #[inline]
    pub fn bytes(&self) -> &[u8] {
        &self.block[self.start as usize..self.end as usize]
    }
}

impl fmt::Debug for SharedLine {
    /// As the bytes of a [`Payload::Raw`] (the block is not shown).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.bytes().fmt(f)
    }
}

/// A run of lines of one read block ([`Payload::Lines`]): the block and each line's byte range
/// in it, half-open `[start, end)`, without its line terminator, in file order. Cloning it
/// clones the block's `Arc` and the ranges, not the bytes; the block is freed with the last
/// line or run that holds it.
#[derive(Clone)]
pub struct SharedLines {
    block: Arc<Vec<u8>>,
    ranges: Vec<[u32; 2]>,
}

impl SharedLines {
    /// A run of no line yet over `block`.
    ///
    /// # Panics
    /// When `block` is longer than `u32::MAX` bytes (blocks are read buffers, of 256 KiB for the
    /// files source).
    #[inline]
    pub fn new(block: Arc<Vec<u8>>) -> SharedLines {
        assert!(u32::try_from(block.len()).is_ok(), "a read block is smaller than 4 GiB");
        SharedLines { block, ranges: Vec::new() }
    }

    /// A run of no line yet over `block`, with room for `lines` lines before it grows.
    ///
    /// # Panics
    /// As [`SharedLines::new`].
    #[inline]
    pub fn with_capacity(block: Arc<Vec<u8>>, lines: usize) -> SharedLines {
        let mut run = SharedLines::new(block);
        run.ranges.reserve(lines);
        run
    }

    /// Appends the line `range` (bytes, half-open) of the block.
    ///
    /// # Panics
    /// When `range` is not within the block.
    #[inline]
    pub fn push(&mut self, range: std::ops::Range<usize>) {
        assert!(
            range.start <= range.end && range.end <= self.block.len(),
            "line {range:?} out of a block of {}",
            self.block.len()
        );
        // (within the block, whose length fits in a `u32`: `new`)
        self.ranges.push([range.start as u32, range.end as u32]);
    }

    /// The number of lines.
    #[inline]
    pub fn len(&self) -> usize {
        self.ranges.len()
    }

    /// Whether the run has no line.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.ranges.is_empty()
    }

    /// The bytes of line `k` (from 0).
    ///
    /// # Panics
    /// When `k >= self.len()`.
    #[inline]
    pub fn line(&self, k: usize) -> &[u8] {
        let [start, end] = self.ranges[k];
        &self.block[start as usize..end as usize]
    }

    /// The lines' bytes, in order.
    #[inline]
    pub fn iter(&self) -> impl ExactSizeIterator<Item = &[u8]> {
        self.ranges.iter().map(|&[start, end]| &self.block[start as usize..end as usize])
    }

    /// Line `k` (from 0) alone, sharing the block.
    ///
    /// # Panics
    /// When `k >= self.len()`.
    pub fn shared_line(&self, k: usize) -> SharedLine {
        let [start, end] = self.ranges[k];
        SharedLine { block: Arc::clone(&self.block), start, end }
    }
}

impl fmt::Debug for SharedLines {
    /// The lines' bytes, as a list (the block is not shown).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

/// Why the source rejected some input ([`Payload::Rejected`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Rejection {
    /// A record longer than the source's `max_record_bytes`: it was skipped to its end without
    /// being held in memory. Counted as a malformed record.
    TooLarge {
        /// Its length in bytes (without the line terminator).
        bytes: u64,
        /// The limit (`max_record_bytes`).
        max: u64,
        /// Its first bytes (at most [`REJECTED_HEAD_BYTES`]).
        head: Vec<u8>,
    },
    /// The rest of a file that cannot be read (a corrupt or truncated `.gz`, an I/O error): the
    /// lines before it were read, the file is finished (at [`Position::FileRest`]).
    UnreadableFile {
        /// The failure.
        error: String,
        /// The first bytes of the incomplete line where reading failed (at most
        /// [`REJECTED_HEAD_BYTES`]; often empty).
        head: Vec<u8>,
    },
}

/// How many bytes of rejected input a dead letter keeps.
pub const REJECTED_HEAD_BYTES: usize = 1024;

impl Rejection {
    /// The dead letter's `reason`.
    pub fn reason(&self) -> String {
        match self {
            Rejection::TooLarge { bytes, max, head } => format!(
                "a record of {bytes} bytes, more than max_record_bytes ({max}); skipped, its first {} bytes kept",
                head.len()
            ),
            Rejection::UnreadableFile { error, .. } => {
                format!("unreadable file: {error}; the rest of the file is skipped")
            }
        }
    }

    /// The dead letter's `record`: the input's first bytes.
    pub fn head(&self) -> &[u8] {
        match self {
            Rejection::TooLarge { head, .. } | Rejection::UnreadableFile { head, .. } => head,
        }
    }
}

/// One input item: one record (or header, or rejected input), or a run of lines
/// ([`Payload::Lines`]) of several.
#[derive(Clone, Debug)]
pub struct SourceItem {
    /// The content.
    pub payload: Payload,
    /// Where it came from.
    pub position: Position,
    /// When the item was created, as nanoseconds of the process's monotonic clock
    /// ([`monotonic_ns`]), when the source knows it (Nexmark, for latency measurement); else 0.
    pub created_ns: u64,
}

impl SourceItem {
    /// How many items this one counts as toward a poll's `max`: a [`Payload::Lines`] its lines,
    /// any other item 1.
    #[inline]
    pub fn units(&self) -> usize {
        match &self.payload {
            Payload::Lines(lines) => lines.len(),
            _ => 1,
        }
    }

    /// Replaces each [`Payload::Lines`] item of `items[from..]` by one [`Payload::Line`] item per
    /// line, at the line's own position ([`Position::line_of_run`]); the other items stay, in
    /// order. For a reader that takes one record per item.
    ///
    /// # Panics
    /// When `from > items.len()`.
    pub fn split_lines(items: &mut Vec<SourceItem>, from: usize) {
        if !items[from..].iter().any(|item| matches!(item.payload, Payload::Lines(_))) {
            return;
        }
        let tail = items.split_off(from);
        items.reserve(tail.iter().map(SourceItem::units).sum());
        for item in tail {
            match item.payload {
                Payload::Lines(lines) => items.extend((0..lines.len()).map(|k| SourceItem {
                    payload: Payload::Line(lines.shared_line(k)),
                    position: item.position.line_of_run(k),
                    created_ns: item.created_ns,
                })),
                payload => items.push(SourceItem { payload, ..item }),
            }
        }
    }
}

/// What a poll found.
#[derive(Debug, PartialEq, Eq)]
pub enum Poll {
    /// Items were appended (possibly zero when only a boundary was reached).
    Data,
    /// The end of one micro-batch unit (a group of `max_files_per_trigger` files): the
    /// micro-batch runtime cuts a batch here. Items of the unit were appended before it.
    BatchBoundary,
    /// Nothing available now (an endless source); poll again later.
    Idle,
    /// The input is exhausted (a finite source); no item will follow.
    Exhausted,
}

/// Errors of sources and sinks.
#[derive(Debug, thiserror::Error)]
pub enum ConnectorError {
    /// An I/O failure, with the path or endpoint involved.
    #[error("{what}: {source}")]
    Io {
        /// What was being done, with the path.
        what: String,
        /// The failure.
        #[source]
        source: std::io::Error,
    },
    /// A configuration that cannot work (e.g. a missing folder).
    #[error("{0}")]
    Config(String),
    /// An external system failed (Kafka).
    #[error("{0}")]
    External(String),
}

/// A source of input.
pub trait Source: Send {
    /// Appends up to `max` items to `out` (a [`Payload::Lines`] counting as its lines:
    /// [`SourceItem::units`]), waiting at most `timeout` for the first one.
    ///
    /// # Errors
    /// A [`ConnectorError`] when the input cannot be read (the runtime stops with exit 1).
    fn poll(
        &mut self,
        out: &mut Vec<SourceItem>,
        max: usize,
        timeout: std::time::Duration,
    ) -> Result<Poll, ConnectorError>;

    /// How far the source has been consumed: the offset just after the last item returned by
    /// [`Source::poll`] (and any boundary it reported). `None`: nothing consumed yet, or a source
    /// that cannot resume (a restart then reads it from its start).
    fn offset(&self) -> Option<SourceOffset> {
        None
    }

    /// Resumes just after `offset` (taken from a checkpoint): the next poll returns the first
    /// item not covered by it. Call before the first poll.
    ///
    /// # Errors
    /// [`ConnectorError::Config`] when the offset is not of this kind of source or cannot be
    /// reached (the default: the source cannot resume).
    fn seek(&mut self, offset: &SourceOffset) -> Result<(), ConnectorError> {
        Err(ConnectorError::Config(format!(
            "this source cannot resume from the checkpoint's {} offset {offset}",
            offset.kind()
        )))
    }

    /// The engine's queues are full (`true`: the runtime is about to wait for room) or have room
    /// again (`false`). A source that can stop fetching does (Kafka: pauses its partitions, so
    /// memory stays bounded); the default does nothing.
    fn backpressure(&self, full: bool) {
        let _ = full;
    }

    /// Whether [`Source::recycle`] reuses records: when `true`, the runtime hands back the
    /// records it is done with (on the source's own thread) instead of dropping them where they
    /// were processed. Default: `false` (records are dropped by the partition actors).
    fn recycles_records(&self) -> bool {
        false
    }

    /// Records the runtime is done with: records this source emitted (as [`Payload::Record`]),
    /// already processed, that nothing else refers to any more (operators only borrow records;
    /// whatever they keep, they cloned). The source may move any of them out of `records` to
    /// overwrite their values in a later [`Source::poll`] instead of allocating new records; it
    /// must keep at most a bounded number. What it leaves in `records` is dropped by the caller.
    /// Called only when [`Source::recycles_records`] is `true`. Default: takes nothing.
    fn recycle(&mut self, records: &mut Vec<Record>) {
        let _ = records;
    }

    /// Raw lines the runtime is done with: the bytes of [`Payload::Raw`] items this source
    /// emitted, already decoded (what is kept of them, a dead letter's text, was copied). The
    /// source may move any of them out of `lines` to refill them in a later [`Source::poll`]
    /// (`clear`, then the next line's bytes) instead of allocating a buffer per line; it must
    /// keep at most a bounded number, and should not keep buffers much larger than its usual
    /// line. What it leaves in `lines` is dropped by the caller. Called on the source's own
    /// thread, between polls. Default: takes nothing (the lines are dropped, as without it).
    fn recycle_lines(&mut self, lines: &mut Vec<Vec<u8>>) {
        let _ = lines;
    }
}

/// The wait that finishes a [`Sink::prepare_begin`]: returns once the rows it covers are
/// durable, or with the sink's error; runs on the caller's thread without the sink.
pub type PrepareWait = Box<dyn FnOnce() -> Result<(), ConnectorError> + Send>;

/// A sink of output lines, committed per micro-batch or epoch.
pub trait Sink: Send {
    /// Appends one row (a JSON object, no newline) to batch / epoch `batch_id`. `key` is the
    /// message key (JSON), for sinks that have one.
    ///
    /// # Errors
    /// A [`ConnectorError`] when the row cannot be written.
    fn write(&mut self, batch_id: u64, line: &str, key: Option<&str>) -> Result<(), ConnectorError>;

    /// The rows of one hand-over were written (one [`Sink::write`] each): a sink that shows rows
    /// as they come (stdout in real-time mode) makes them visible here, once per hand-over
    /// rather than once per row. The runtime hands rows over as it produces them (real-time: at
    /// most a few dozen at a time), so a reader still sees each row when it is made. Default:
    /// nothing to do.
    ///
    /// # Errors
    /// A [`ConnectorError`] when the rows cannot be made visible.
    fn written(&mut self) -> Result<(), ConnectorError> {
        Ok(())
    }

    /// Makes batch / epoch `batch_id` visible: every row written for it is durable and visible
    /// to readers, atomically where the sink can (files: rename). A batch with no row leaves no
    /// trace (no file).
    ///
    /// # Errors
    /// A [`ConnectorError`] when the commit fails.
    fn commit(&mut self, batch_id: u64) -> Result<(), ConnectorError>;

    /// First phase of a two-phase commit: every row written for `batch_id` is made durable but
    /// not yet visible (files: flushed and fsynced under the temporary name; Kafka with
    /// transactions: flushed in the open transaction). [`Sink::commit`] then makes it visible.
    /// The runtime prepares a batch / epoch, writes its checkpoint, then commits it. Default:
    /// nothing to do.
    ///
    /// # Errors
    /// A [`ConnectorError`] when the rows cannot be made durable.
    fn prepare(&mut self, batch_id: u64) -> Result<(), ConnectorError> {
        let _ = batch_id;
        Ok(())
    }

    /// [`Sink::prepare`] in two steps, for a sink whose rows become durable without it (Kafka:
    /// acknowledged by the broker): this notes what must be durable (every row written for
    /// `batch_id` and the batches before it) and returns the rest of the work, the wait, which
    /// the runtime runs without holding the sink, so that rows of later batches / epochs are
    /// written meanwhile instead of queueing behind the wait. `None`: prepared already.
    /// Default: [`Sink::prepare`], then `None`.
    ///
    /// # Errors
    /// As [`Sink::prepare`], from this call or from the wait.
    fn prepare_begin(&mut self, batch_id: u64) -> Result<Option<PrepareWait>, ConnectorError> {
        self.prepare(batch_id).map(|()| None)
    }

    /// The application id kept in the pipeline's checkpoint (a UUID created with it), given
    /// before [`Sink::recover`] when the pipeline has a checkpoint: a sink that marks its commits
    /// with it (Delta's `txn` action, as Spark's Delta sink marks them with its query id) finds
    /// after a restart which batches are in already. Without a checkpoint the sink keeps an id of
    /// its own for the run. Default: ignored.
    fn use_application_id(&mut self, id: &str) {
        let _ = id;
    }

    /// On restart, before anything is written: finishes what a stopped run left behind.
    /// Prepared batches with ids `<= committed` (their checkpoint is durable) are committed (rolled
    /// forward); anything later is discarded, as its checkpoint never completed. `None`: no
    /// checkpoint, so every leftover is discarded. Returns how many batches were rolled forward
    /// or discarded. Default: nothing to do.
    ///
    /// # Errors
    /// A [`ConnectorError`] when a leftover cannot be committed or removed.
    fn recover(&mut self, committed: Option<u64>) -> Result<usize, ConnectorError> {
        let _ = committed;
        Ok(0)
    }
}

/// Nanoseconds since the first call in this process (a monotonic clock shared by sources and
/// sinks for latency measurement).
pub fn monotonic_ns() -> u64 {
    use std::sync::OnceLock;
    static START: OnceLock<std::time::Instant> = OnceLock::new();
    START.get_or_init(std::time::Instant::now).elapsed().as_nanos() as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_shared_line_is_its_range_of_the_block_and_decodes_as_raw_bytes() {
        let block = Arc::new(b"{\"a\":1}\n{\"b\":2}\n".to_vec());
        let line = SharedLine::new(Arc::clone(&block), 8..15);
        assert_eq!(line.bytes(), b"{\"b\":2}");
        assert_eq!(format!("{line:?}"), format!("{:?}", b"{\"b\":2}"));
        assert_eq!(Payload::Line(line).raw_bytes(), Some(b"{\"b\":2}".as_slice()));
        assert_eq!(Payload::Raw(b"x".to_vec()).raw_bytes(), Some(b"x".as_slice()));
        assert_eq!(Payload::Header(b"a,b".to_vec()).raw_bytes(), None);
    }

    #[test]
    fn a_run_of_lines_is_split_into_one_item_per_line_at_its_own_line() {
        let block = Arc::new(b"{\"a\":1}\n{\"b\":2}\r\n{\"c\":3}\n".to_vec());
        let mut lines = SharedLines::new(Arc::clone(&block));
        assert!(lines.is_empty());
        lines.push(0..7);
        lines.push(8..15);
        lines.push(17..24);
        assert_eq!((lines.len(), lines.line(1)), (3, b"{\"b\":2}".as_slice()));
        let all: Vec<&[u8]> = lines.iter().collect();
        assert_eq!(all, [b"{\"a\":1}".as_slice(), b"{\"b\":2}", b"{\"c\":3}"]);
        assert_eq!(format!("{lines:?}"), format!("{:?}", [b"{\"a\":1}", b"{\"b\":2}", b"{\"c\":3}"]));
        let file: Arc<str> = Arc::from("a.json");
        let identity = Some(FileIdentity { device: 1, inode: 2 });
        let run = SourceItem {
            payload: Payload::Lines(lines),
            position: Position::File { file: Arc::clone(&file), line: 41, through: 43, identity },
            created_ns: 7,
        };
        assert_eq!(run.units(), 3);
        assert_eq!(run.payload.raw_bytes(), None);
        let header = SourceItem {
            payload: Payload::Header(b"h".to_vec()),
            position: Position::File { file: Arc::clone(&file), line: 1, through: 1, identity },
            created_ns: 0,
        };
        assert_eq!(header.units(), 1);
        let mut items = vec![header.clone(), run.clone(), header, run];
        // From the third item on: the first run stays whole.
        SourceItem::split_lines(&mut items, 2);
        assert_eq!(items.len(), 6);
        assert!(matches!(items[1].payload, Payload::Lines(_)));
        let split: Vec<(String, Option<&[u8]>, u64)> =
            items[3..].iter().map(|i| (i.position.to_string(), i.payload.raw_bytes(), i.created_ns)).collect();
        assert_eq!(
            split,
            vec![
                ("a.json:41".to_string(), Some(b"{\"a\":1}".as_slice()), 7),
                ("a.json:42".to_string(), Some(b"{\"b\":2}".as_slice()), 7),
                ("a.json:43".to_string(), Some(b"{\"c\":3}".as_slice()), 7),
            ]
        );
        assert_eq!(items[4].position, Position::File { file, line: 42, through: 42, identity });
        let Payload::Line(line) = &items[5].payload else { panic!("{:?}", items[5].payload) };
        assert_eq!(line.bytes().as_ptr(), block[17..].as_ptr(), "a split line shares the block");
        // Nothing to split: the items stay as they are.
        let before = format!("{items:?}");
        SourceItem::split_lines(&mut items, 2);
        assert_eq!(format!("{items:?}"), before);
    }

    #[test]
    fn a_line_of_a_run_elsewhere_than_in_a_file_keeps_its_position() {
        let at = Position::Stdin { line: 3, through: 3 };
        assert_eq!(at.line_of_run(2), at);
    }

    #[test]
    #[should_panic(expected = "out of a block")]
    fn a_line_of_a_run_past_its_block_is_refused() {
        SharedLines::new(Arc::new(vec![0; 4])).push(3..5);
    }

    #[test]
    #[should_panic(expected = "out of a block")]
    fn a_line_past_its_block_is_refused() {
        let _ = SharedLine::new(Arc::new(vec![0; 4]), 2..5);
    }
}
