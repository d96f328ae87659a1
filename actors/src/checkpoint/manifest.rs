//! What a checkpoint holds: the [`Manifest`] of an epoch (written last) and the
//! [`SnapshotFile`] of each partition actor (the manifest archived with `rkyv`, a snapshot's
//! state raw behind a short prefix), and the pipeline's
//! [`fingerprint`] that decides whether a checkpoint can be restored under a changed pipeline.

use eddy_connectors::{FileIdentity, FollowedFile, KafkaPartitionOffset, SourceOffset};
use eddy_engine::spec::{Pipeline, PipelineExpr, SourceKind, Step};

use super::pipeline_fields::pipeline_fields;

/// One query-relevant field of the pipeline, as the checkpoint saw it.
#[derive(Clone, Debug, PartialEq, Eq, rkyv::Archive, rkyv::Serialize, rkyv::Deserialize)]
pub struct FingerprintField {
    /// The pipeline field (`query`, `watermark`, `source.schema`, ...).
    pub field: String,
    /// Its value, as text.
    pub value: String,
}

/// The fields of a pipeline that state and source offsets depend on: `mode`, the source's
/// type (with the Nexmark table and seed), `format`, `schema` and `timestamp_unit`, the
/// `[watermark]`, the `[query]` and the `[clock]`. `parallelism`, `trigger`, the sinks and the
/// metrics may change freely across a restart (state is re-split by key range).
///
/// Each of these is one entry whose value decides (the whole section, as text); after them come
/// the entries of [`pipeline_fields`] (`query.measures[1].over` = `"1 hour"`), which only explain
/// a difference: checkpoints written before they existed have none, and are still restored.
pub fn fingerprint(p: &Pipeline) -> Vec<FingerprintField> {
    let first_type = source_type(&p.source.kind);
    let f = |field: &str, value: String| FingerprintField { field: field.into(), value };
    let mut out = vec![
        f("mode", format!("{:?}", p.mode)),
        f("source.type", first_type),
        f("source.format", format!("{:?}", p.source.format)),
        f("source.schema", format!("{:?}", p.source.schema)),
        f("source.timestamp_unit", format!("{:?}", p.source.timestamp_unit)),
        f("watermark", format!("{:?}", p.watermark)),
        // a SQL query: its text decides too (its WHERE and select list are steps, not `query`)
        f(
            "query",
            format!("{:?}{}", p.query, p.query_sql.as_ref().map_or_else(String::new, |s| format!(" sql {s:?}"))),
        ),
        f("clock", format!("{:?}", p.clock)),
    ];
    // Only when set: a pipeline without them has the fingerprint it had before they existed.
    // The steps the source's `filter` and `select` wrote, not the SQL query's.
    let written = &p.source_steps[..p.written_source_steps.min(p.source_steps.len())];
    out.extend(step_fields(written).into_iter().map(|(field, value)| f(field, value)));
    // Several sources (only then: one source keeps the fingerprint it had before them): each
    // further source's name, type, format, schema, unit, watermark and steps, and the policy.
    if !p.more_sources.is_empty() {
        out.push(f("source.name", format!("{:?}", p.source_name)));
        out.push(f("watermark_policy", format!("{:?}", p.watermark_policy)));
        for (i, s) in p.more_sources.iter().enumerate() {
            let written = &s.steps[..s.written_steps.min(s.steps.len())];
            let steps: Vec<String> = step_fields(written).into_iter().map(|(k, v)| format!("{k} = {v}")).collect();
            out.push(f(
                &format!("source[{}]", i + 1),
                format!(
                    "name {:?}, type {}, format {:?}, schema {:?}, timestamp_unit {:?}, watermark {:?}, steps {steps:?}",
                    s.name,
                    source_type(&s.source.kind),
                    s.source.format,
                    s.source.schema,
                    s.source.timestamp_unit,
                    s.watermark
                ),
            ));
        }
    }
    out.extend(pipeline_fields(p).into_iter().map(|(field, value)| FingerprintField { field, value }));
    // How the undetailed entries above read in the pipeline file, to name a change of one of them
    // (an older checkpoint, without these, has its change named with the deciding text).
    let quoted = |v: &str| {
        let mut s = String::new();
        eddy_engine::output::write_string(&mut s, v);
        s
    };
    let mode = match p.mode {
        eddy_engine::spec::Mode::RealTime => "real-time",
        eddy_engine::spec::Mode::MicroBatch => "micro-batch",
    };
    let format = match p.source.format {
        eddy_engine::spec::Format::Json => "json",
        eddy_engine::spec::Format::Csv => "csv",
    };
    let unit = match p.source.timestamp_unit {
        eddy_engine::time::TimeUnit::S => "s",
        eddy_engine::time::TimeUnit::Ms => "ms",
        eddy_engine::time::TimeUnit::Us => "us",
    };
    for (field, value) in [
        ("mode", mode.to_string()),
        ("source.format", format.to_string()),
        ("source.schema", p.source.schema.to_string()),
        ("source.timestamp_unit", unit.to_string()),
    ] {
        out.push(FingerprintField { field: format!("{AS_WRITTEN}{field}"), value: quoted(&value) });
    }
    out
}

/// A source's type as the fingerprint spells it (with the Kafka topics, the Nexmark table and
/// seed).
fn source_type(kind: &SourceKind) -> String {
    match kind {
        SourceKind::Files { .. } => "files".to_string(),
        SourceKind::Stdin => "stdin".to_string(),
        SourceKind::Kafka { topics, .. } => format!("kafka {topics:?}"),
        SourceKind::Nexmark { table, seed, .. } => format!("nexmark (table {table:?}, seed {seed})"),
    }
}

/// The deciding entries of the source's steps: `source.filter` (the condition) and
/// `source.select` (the list), each expression as Spark names it (`(amount > 0)`), with `AS`
/// and the output name where that differs. The names spell the whole typed expression, so an
/// expression that computes something else reads differently.
fn step_fields(steps: &[Step]) -> Vec<(&'static str, String)> {
    let quoted = |v: &str| {
        let mut s = String::new();
        eddy_engine::output::write_string(&mut s, v);
        s
    };
    let spelled = |e: &PipelineExpr| {
        if e.name == e.typed.name { e.name.clone() } else { format!("{} AS {}", e.typed.name, e.name) }
    };
    steps
        .iter()
        .map(|step| match step {
            Step::Filter(e) => ("source.filter", quoted(&spelled(e))),
            Step::Project(items) => (
                "source.select",
                format!("[{}]", items.iter().map(|e| quoted(&spelled(e))).collect::<Vec<_>>().join(", ")),
            ),
        })
        .collect()
}

/// Deciding entries that a pipeline may leave out (it has no such step): one that only the
/// checkpoint has is a change too.
const OPTIONAL: [&str; 2] = ["source.filter", "source.select"];

/// The prefix of an entry of [`fingerprint`] that gives a deciding entry's value as the pipeline
/// file writes it (`=source.schema` = `"k STRING, v BIGINT"`), where the deciding value is
/// internal text.
const AS_WRITTEN: &str = "=";

/// The sections whose entries in [`fingerprint`] have detail entries under them
/// (`query.window.size` under `query`).
const DETAILED: [&str; 3] = ["watermark", "query", "clock"];

/// The section a detail entry of [`fingerprint`] belongs to (`query` for `query.measures[1].over`),
/// `None` for a deciding entry.
fn section_of(field: &str) -> Option<&str> {
    if let Some(deciding) = field.strip_prefix(AS_WRITTEN) {
        return Some(deciding);
    }
    DETAILED.into_iter().find(|s| field.strip_prefix(s).is_some_and(|rest| rest.starts_with('.')))
}

/// The differences between a checkpoint's fingerprint and the pipeline's: one line per changed
/// field, `query.measures[1].over: the checkpoint has "1 hour", the pipeline has "2 hours"` (values
/// as the pipeline file writes them, `nothing` for a field one side leaves out). A changed
/// section whose checkpoint has no detail entries (written by an older eddy) is named whole,
/// with both values as text. Empty: compatible.
pub fn differences(checkpoint: &[FingerprintField], now: &[FingerprintField]) -> Vec<String> {
    let shorten = |s: &str| -> String {
        if s.chars().count() > 300 { format!("{}...", s.chars().take(300).collect::<String>()) } else { s.to_string() }
    };
    let mut out = Vec::new();
    for n in now.iter().filter(|n| section_of(&n.field).is_none()) {
        match checkpoint.iter().find(|c| c.field == n.field) {
            Some(c) if c.value == n.value => {}
            Some(c) => {
                let details = detail_differences(&n.field, checkpoint, now);
                if details.is_empty() {
                    out.push(format!(
                        "{}: the checkpoint has {}, the pipeline has {}",
                        n.field,
                        shorten(&c.value),
                        shorten(&n.value)
                    ));
                } else {
                    out.extend(details);
                }
            }
            None if OPTIONAL.contains(&n.field.as_str()) => {
                out.push(format!("{}: the checkpoint has nothing, the pipeline has {}", n.field, shorten(&n.value)))
            }
            None => out.push(format!("{}: not in the checkpoint (written by another eddy version)", n.field)),
        }
    }
    for c in checkpoint.iter().filter(|c| OPTIONAL.contains(&c.field.as_str())) {
        if !now.iter().any(|n| n.field == c.field) {
            out.push(format!("{}: the checkpoint has {}, the pipeline has nothing", c.field, shorten(&c.value)));
        }
    }
    out
}

/// The changed detail entries of `section` (in the pipeline's order, then those only the
/// checkpoint has); empty when the checkpoint has no detail entries at all (an older eddy's).
fn detail_differences(section: &str, checkpoint: &[FingerprintField], now: &[FingerprintField]) -> Vec<String> {
    if !checkpoint.iter().any(|f| section_of(&f.field).is_some()) {
        return Vec::new();
    }
    let of = |list: &[FingerprintField]| -> Vec<(String, String)> {
        list.iter()
            .filter(|f| section_of(&f.field) == Some(section))
            .map(|f| (f.field.clone(), f.value.clone()))
            .collect()
    };
    let (old, new) = (of(checkpoint), of(now));
    if old.is_empty() && !DETAILED.contains(&section) {
        // A deciding entry whose as-written value an older checkpoint does not have.
        return Vec::new();
    }
    let shown = |field: &str| field.strip_prefix(AS_WRITTEN).unwrap_or(field).to_string();
    let value = |list: &[(String, String)], field: &str| {
        list.iter().find(|(f, _)| f == field).map_or_else(|| "nothing".to_string(), |(_, v)| v.clone())
    };
    let mut fields: Vec<&String> = new.iter().map(|(f, _)| f).collect();
    fields.extend(old.iter().map(|(f, _)| f).filter(|f| !new.iter().any(|(n, _)| n == *f)));
    fields
        .into_iter()
        .filter_map(|field| {
            let (was, is) = (value(&old, field), value(&new, field));
            (was != is).then(|| format!("{}: the checkpoint has {was}, the pipeline has {is}", shown(field)))
        })
        .collect()
}

/// One partition actor's snapshot, as the manifest lists it.
#[derive(Clone, Debug, PartialEq, Eq, rkyv::Archive, rkyv::Serialize, rkyv::Deserialize)]
pub struct SnapshotMeta {
    /// The partition actor (key range) it belongs to.
    pub partition: u32,
    /// The snapshot file's length in bytes.
    pub bytes: u64,
    /// CRC-32 of the whole snapshot file (header included).
    pub crc32: u32,
}

/// A partition actor's snapshot file: the operator's state (opaque bytes of
/// `Operator::snapshot`) and where it belongs.
///
/// Version 2 and later (3 is written) lay the payload out as a [`SnapshotFile::PREFIX_LEN`]-byte prefix
/// (epoch `u64`, partition `u32`, parallelism `u32`, little-endian) followed by the state bytes,
/// so the state is streamed to the store as it is, and read back in place. Version 1 files hold
/// an `rkyv` archive of this struct (still read).
#[derive(Clone, Debug, PartialEq, Eq, rkyv::Archive, rkyv::Serialize, rkyv::Deserialize)]
pub struct SnapshotFile {
    /// The epoch / batch whose barrier it was taken at.
    pub epoch: u64,
    /// The partition actor.
    pub partition: u32,
    /// The number of partition actors then.
    pub parallelism: u32,
    /// The operator's state.
    pub state: Vec<u8>,
}

/// A Kafka partition's next offset ([`KafkaPartitionOffset`]).
#[derive(Clone, Debug, PartialEq, Eq, rkyv::Archive, rkyv::Serialize, rkyv::Deserialize)]
pub struct SavedKafkaOffset {
    /// Topic.
    pub topic: String,
    /// Partition.
    pub partition: i32,
    /// Next offset to read.
    pub next: i64,
}

/// The file a files source was reading and its lines consumed.
#[derive(Clone, Debug, PartialEq, Eq, rkyv::Archive, rkyv::Serialize, rkyv::Deserialize)]
pub struct SavedFileLines {
    /// File name (without folder).
    pub file: String,
    /// Lines consumed.
    pub line: u64,
}

/// A file's identity ([`FileIdentity`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, rkyv::Archive, rkyv::Serialize, rkyv::Deserialize)]
pub struct SavedFileIdentity {
    /// Device number.
    pub device: u64,
    /// Inode number.
    pub inode: u64,
}

/// A followed file's lines consumed and identity ([`FollowedFile`]).
#[derive(Clone, Debug, PartialEq, Eq, rkyv::Archive, rkyv::Serialize, rkyv::Deserialize)]
pub struct SavedFollowedFile {
    /// File name (without folder).
    pub file: String,
    /// Lines consumed.
    pub line: u64,
    /// Its identity (`None`: unknown).
    pub identity: Option<SavedFileIdentity>,
}

impl SnapshotFile {
    /// Length of the version-2 prefix in bytes.
    pub const PREFIX_LEN: usize = 16;

    /// The version-2 prefix.
    pub fn prefix(epoch: u64, partition: u32, parallelism: u32) -> [u8; Self::PREFIX_LEN] {
        let mut p = [0u8; Self::PREFIX_LEN];
        p[0..8].copy_from_slice(&epoch.to_le_bytes());
        p[8..12].copy_from_slice(&partition.to_le_bytes());
        p[12..16].copy_from_slice(&parallelism.to_le_bytes());
        p
    }

    /// Epoch, partition and parallelism from a version-2 payload; `None` when it is shorter than
    /// the prefix.
    pub fn read_prefix(payload: &[u8]) -> Option<(u64, u32, u32)> {
        let p = payload.get(..Self::PREFIX_LEN)?;
        Some((
            u64::from_le_bytes(p[0..8].try_into().ok()?),
            u32::from_le_bytes(p[8..12].try_into().ok()?),
            u32::from_le_bytes(p[12..16].try_into().ok()?),
        ))
    }
}

pub use enums::{ArchivedDriverState, ArchivedSavedOffset, DriverState, SavedOffset};

/// The enums of the manifest, apart: `rkyv`'s derive adds undocumented items for enum variants
/// (their resolvers), which `missing_docs` would refuse; every item written here is documented.
mod enums {
    #![allow(missing_docs)]

    use super::{SavedFileLines, SavedFollowedFile, SavedKafkaOffset};

    /// A source offset as archived ([`SourceOffset`](eddy_connectors::SourceOffset), which `eddy-connectors` keeps free of `rkyv`).
    #[derive(Clone, Debug, PartialEq, Eq, rkyv::Archive, rkyv::Serialize, rkyv::Deserialize)]
    pub enum SavedOffset {
        /// [`SourceOffset::Files`](eddy_connectors::SourceOffset::Files) (format version 3).
        Files {
            /// Names of the files read whole, sorted.
            done: Vec<String>,
            /// The file being read and its lines consumed.
            reading: Option<SavedFileLines>,
        },
        /// [`SourceOffset::FilesInNameOrder`](eddy_connectors::SourceOffset::FilesInNameOrder):
        /// a files source's offset in a manifest of format version 1 or 2 (never written).
        FilesInNameOrder {
            /// File name.
            file: String,
            /// Lines consumed (`u64::MAX`: all).
            line: u64,
        },
        /// [`SourceOffset::Stdin`](eddy_connectors::SourceOffset::Stdin).
        Stdin {
            /// Lines consumed.
            line: u64,
        },
        /// [`SourceOffset::Kafka`](eddy_connectors::SourceOffset::Kafka).
        Kafka(Vec<SavedKafkaOffset>),
        /// [`SourceOffset::Generated`](eddy_connectors::SourceOffset::Generated).
        Generated {
            /// Next event number.
            next: u64,
        },
        /// [`SourceOffset::FilesFollowed`](eddy_connectors::SourceOffset::FilesFollowed)
        /// without file identities, as manifests written before [`SavedOffset::FilesFollowedById`]
        /// hold it (read, never written: its files have no known identity). Added after the
        /// others, and no larger than [`SavedOffset::Files`], so manifests written before it keep
        /// their layout.
        FilesFollowed {
            /// Names of the files finished for good, sorted.
            done: Vec<String>,
            /// Every file read and its lines consumed, sorted by name.
            lines: Vec<SavedFileLines>,
        },
        /// [`SourceOffset::FilesFollowed`](eddy_connectors::SourceOffset::FilesFollowed) with
        /// each file's identity, so a restart reads a file replaced meanwhile from its start.
        /// Added last and no larger than [`SavedOffset::Files`], for the same reason.
        FilesFollowedById {
            /// Names of the files finished for good, sorted.
            done: Vec<String>,
            /// Every file read, its lines consumed and identity, sorted by name.
            files: Vec<SavedFollowedFile>,
        },
    }

    /// The source side's clock and watermark at the barrier (timestamps in µs since the epoch).
    #[derive(Clone, Debug, PartialEq, Eq, rkyv::Archive, rkyv::Serialize, rkyv::Deserialize)]
    pub enum DriverState {
        /// Real-time mode.
        RealTime {
            /// Processing time at the barrier (replay clock: the clock's value).
            now: i64,
            /// Largest event time seen (the watermark is this minus the delay).
            max_event_time: Option<i64>,
            /// Replay clock: the processing time of the next barrier.
            next_boundary: Option<i64>,
        },
        /// Micro-batch mode: the sequencer after the batch.
        MicroBatch {
            /// The next batch's number.
            next_batch: u64,
            /// The next batch's watermark for late input.
            late: i64,
            /// The next batch's watermark for eviction.
            evict: i64,
            /// The batch's processing time.
            last_processing_time: i64,
            /// Largest event time seen.
            max_event_time: Option<i64>,
            /// The eviction watermarks of the batch and of the next one, when the batch moved W
            /// (decides Spark's no-data batch).
            last_moved: Option<[i64; 2]>,
        },
        /// Real-time mode with several sources: [`DriverState::RealTime`]'s fields and where the
        /// source actor's round-robin over the sources stood at the barrier, so a restart reads
        /// the sources' records interleaved as the uninterrupted run did. Added last and no
        /// larger than [`DriverState::MicroBatch`], so manifests written before it keep their
        /// layout (they restore with the round-robin at the first source).
        RealTimeSources {
            /// As [`DriverState::RealTime`]'s `now`.
            now: i64,
            /// As [`DriverState::RealTime`]'s `max_event_time`.
            max_event_time: Option<i64>,
            /// As [`DriverState::RealTime`]'s `next_boundary`.
            next_boundary: Option<i64>,
            /// The source (index in pipeline order) a restart reads first.
            next_source: u32,
            /// How many items (records, malformed or rejected input; a CSV header not counted)
            /// the first poll of `next_source` gives: the rest of the poll the barrier cut, when
            /// that poll ended at its item limit. 0: a whole poll (the cut poll ended at the
            /// source's own boundary, a file's end, which the resumed source reaches again).
            rest_of_poll: u64,
        },
    }
}

impl From<&SourceOffset> for SavedOffset {
    fn from(o: &SourceOffset) -> SavedOffset {
        match o {
            SourceOffset::Files { done, reading } => SavedOffset::Files {
                done: done.clone(),
                reading: reading.as_ref().map(|(file, line)| SavedFileLines { file: file.clone(), line: *line }),
            },
            SourceOffset::FilesFollowed { done, files } => SavedOffset::FilesFollowedById {
                done: done.clone(),
                files: files
                    .iter()
                    .map(|f| SavedFollowedFile {
                        file: f.file.clone(),
                        line: f.lines,
                        identity: f.identity.map(|i| SavedFileIdentity { device: i.device, inode: i.inode }),
                    })
                    .collect(),
            },
            SourceOffset::FilesInNameOrder { file, line } => {
                SavedOffset::FilesInNameOrder { file: file.clone(), line: *line }
            }
            SourceOffset::Stdin { line } => SavedOffset::Stdin { line: *line },
            SourceOffset::Kafka(parts) => SavedOffset::Kafka(
                parts
                    .iter()
                    .map(|p| SavedKafkaOffset { topic: p.topic.clone(), partition: p.partition, next: p.next })
                    .collect(),
            ),
            SourceOffset::Generated { next } => SavedOffset::Generated { next: *next },
        }
    }
}

impl From<&SavedOffset> for SourceOffset {
    fn from(o: &SavedOffset) -> SourceOffset {
        match o {
            SavedOffset::Files { done, reading } => {
                SourceOffset::Files { done: done.clone(), reading: reading.as_ref().map(|r| (r.file.clone(), r.line)) }
            }
            SavedOffset::FilesFollowed { done, lines } => SourceOffset::FilesFollowed {
                done: done.clone(),
                files: lines
                    .iter()
                    .map(|l| FollowedFile { file: l.file.clone(), lines: l.line, identity: None })
                    .collect(),
            },
            SavedOffset::FilesFollowedById { done, files } => SourceOffset::FilesFollowed {
                done: done.clone(),
                files: files
                    .iter()
                    .map(|f| FollowedFile {
                        file: f.file.clone(),
                        lines: f.line,
                        identity: f.identity.map(|i| FileIdentity { device: i.device, inode: i.inode }),
                    })
                    .collect(),
            },
            SavedOffset::FilesInNameOrder { file, line } => {
                SourceOffset::FilesInNameOrder { file: file.clone(), line: *line }
            }
            SavedOffset::Stdin { line } => SourceOffset::Stdin { line: *line },
            SavedOffset::Kafka(parts) => SourceOffset::Kafka(
                parts
                    .iter()
                    .map(|p| KafkaPartitionOffset { topic: p.topic.clone(), partition: p.partition, next: p.next })
                    .collect(),
            ),
            SavedOffset::Generated { next } => SourceOffset::Generated { next: *next },
        }
    }
}

/// The manifest of one checkpoint: written after every snapshot it lists, so a checkpoint
/// exists exactly when its manifest does.
#[derive(Clone, Debug, PartialEq, Eq, rkyv::Archive, rkyv::Serialize, rkyv::Deserialize)]
pub struct Manifest {
    /// The pipeline's `name`.
    pub pipeline: String,
    /// The epoch (real-time) or batch (micro-batch) it closes; output of ids up to here is
    /// committed, and a restart resumes with the next.
    pub epoch: u64,
    /// The pipeline's [`fingerprint`] then.
    pub fingerprint: Vec<FingerprintField>,
    /// The number of partition actors then.
    pub parallelism: u32,
    /// One snapshot per partition actor, in partition order.
    pub snapshots: Vec<SnapshotMeta>,
    /// How far the source was consumed (`None`: a source that cannot resume).
    pub source: Option<SavedOffset>,
    /// Clock and watermark.
    pub driver: DriverState,
    /// The sources after the first (PIPELINE.md "Several sources"), in pipeline order: each
    /// one's offset and event times (format version 4; empty with one source and in the
    /// manifests of older versions).
    pub more_sources: Vec<SavedSource>,
}

/// A source after the first, at a checkpoint.
#[derive(Clone, Debug, PartialEq, Eq, rkyv::Archive, rkyv::Serialize, rkyv::Deserialize)]
pub struct SavedSource {
    /// Its `name`.
    pub name: String,
    /// How far it was consumed (`None`: nothing yet, or it cannot resume).
    pub offset: Option<SavedOffset>,
    /// The largest event time it delivered (µs; `None`: none, or no watermark).
    pub max_event_time: Option<i64>,
}

/// The manifest of format version 3 (still read): as [`Manifest`], without
/// [`Manifest::more_sources`].
pub mod v3 {
    #![allow(missing_docs)]

    use super::{DriverState, FingerprintField, SavedOffset, SnapshotMeta};

    /// A manifest of format version 3 (fields as [`super::Manifest`]'s).
    #[derive(Clone, Debug, PartialEq, Eq, rkyv::Archive, rkyv::Serialize, rkyv::Deserialize)]
    pub struct Manifest {
        pub pipeline: String,
        pub epoch: u64,
        pub fingerprint: Vec<FingerprintField>,
        pub parallelism: u32,
        pub snapshots: Vec<SnapshotMeta>,
        pub source: Option<SavedOffset>,
        pub driver: DriverState,
    }

    impl From<Manifest> for super::Manifest {
        fn from(m: Manifest) -> super::Manifest {
            super::Manifest {
                pipeline: m.pipeline,
                epoch: m.epoch,
                fingerprint: m.fingerprint,
                parallelism: m.parallelism,
                snapshots: m.snapshots,
                source: m.source,
                driver: m.driver,
                more_sources: Vec::new(),
            }
        }
    }
}

/// The manifest of format versions 1 and 2 (still read): as [`Manifest`], but a files source's
/// offset was a position in name order ([`SavedOffset::FilesInNameOrder`]).
pub mod v2 {
    #![allow(missing_docs)]

    use super::{DriverState, FingerprintField, SavedKafkaOffset, SavedOffset, SnapshotMeta};

    /// A manifest of format version 1 or 2 (fields as [`super::Manifest`]'s).
    #[derive(Clone, Debug, PartialEq, Eq, rkyv::Archive, rkyv::Serialize, rkyv::Deserialize)]
    pub struct Manifest {
        pub pipeline: String,
        pub epoch: u64,
        pub fingerprint: Vec<FingerprintField>,
        pub parallelism: u32,
        pub snapshots: Vec<SnapshotMeta>,
        pub source: Option<SavedOffset2>,
        pub driver: DriverState,
    }

    /// A source offset of format version 1 or 2.
    #[derive(Clone, Debug, PartialEq, Eq, rkyv::Archive, rkyv::Serialize, rkyv::Deserialize)]
    pub enum SavedOffset2 {
        /// Every file named before `file`, and the first `line` lines of `file` (`u64::MAX`: all).
        Files {
            file: String,
            line: u64,
        },
        Stdin {
            line: u64,
        },
        Kafka(Vec<SavedKafkaOffset>),
        Generated {
            next: u64,
        },
    }

    impl From<Manifest> for super::Manifest {
        fn from(m: Manifest) -> super::Manifest {
            let source = m.source.map(|o| match o {
                SavedOffset2::Files { file, line } => SavedOffset::FilesInNameOrder { file, line },
                SavedOffset2::Stdin { line } => SavedOffset::Stdin { line },
                SavedOffset2::Kafka(parts) => SavedOffset::Kafka(parts),
                SavedOffset2::Generated { next } => SavedOffset::Generated { next },
            });
            super::Manifest {
                pipeline: m.pipeline,
                epoch: m.epoch,
                fingerprint: m.fingerprint,
                parallelism: m.parallelism,
                snapshots: m.snapshots,
                source,
                driver: m.driver,
                more_sources: Vec::new(),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn differences_name_each_changed_field_with_both_values() {
        let f = |field: &str, value: &str| FingerprintField { field: field.into(), value: value.into() };
        let old = vec![f("mode", "RealTime"), f("query", "count")];
        let now = vec![f("mode", "RealTime"), f("query", "sum"), f("clock", "System")];
        let d = differences(&old, &now);
        assert_eq!(d.len(), 2, "{d:?}");
        assert!(d[0].starts_with("query:") && d[0].contains("count") && d[0].contains("sum"), "{d:?}");
        assert!(d[1].starts_with("clock:"), "{d:?}");
        assert!(differences(&now, &now).is_empty());
    }

    #[test]
    fn a_changed_section_is_named_by_its_changed_fields_and_an_older_checkpoint_by_the_section() {
        let f = |field: &str, value: &str| FingerprintField { field: field.into(), value: value.into() };
        let old = vec![
            f("query", "Rolling(1h)"),
            f("query.type", "\"rolling_window\""),
            f("query.measures[0].over", "\"1 hour\""),
            f("query.measures[0].alias", "\"r\""),
        ];
        let now = vec![
            f("query", "Rolling(2h)"),
            f("query.type", "\"rolling_window\""),
            f("query.measures[0].over", "\"2 hours\""),
        ];
        assert_eq!(
            differences(&old, &now),
            [
                "query.measures[0].over: the checkpoint has \"1 hour\", the pipeline has \"2 hours\"",
                "query.measures[0].alias: the checkpoint has \"r\", the pipeline has nothing",
            ]
        );
        // Written before the detail entries existed: the same section restores, a changed one
        // is named whole.
        let older = vec![f("query", "Rolling(2h)")];
        assert!(differences(&older, &now).is_empty());
        assert_eq!(differences(&older[..0], &now), ["query: not in the checkpoint (written by another eddy version)"]);
        let changed = vec![f("query", "Rolling(1h)")];
        assert_eq!(
            differences(&changed, &now),
            ["query: the checkpoint has Rolling(1h), the pipeline has Rolling(2h)"]
        );
    }

    #[test]
    fn a_changed_schema_or_mode_is_named_as_the_file_writes_it() {
        let f = |field: &str, value: &str| FingerprintField { field: field.into(), value: value.into() };
        let old = vec![
            f("mode", "RealTime"),
            f("source.schema", "Schema { fields: [a Long] }"),
            f("query", "Q"),
            f("=mode", "\"real-time\""),
            f("=source.schema", "\"k STRING, v BIGINT\""),
        ];
        let now = vec![
            f("mode", "MicroBatch"),
            f("source.schema", "Schema { fields: [a Int] }"),
            f("query", "Q"),
            f("=mode", "\"micro-batch\""),
            f("=source.schema", "\"k STRING, v INT\""),
        ];
        assert_eq!(
            differences(&old, &now),
            [
                "mode: the checkpoint has \"real-time\", the pipeline has \"micro-batch\"",
                "source.schema: the checkpoint has \"k STRING, v BIGINT\", the pipeline has \"k STRING, v INT\"",
            ]
        );
        // A checkpoint written before the as-written entries: named with the deciding text.
        assert_eq!(
            differences(&old[..3], &now),
            [
                "mode: the checkpoint has RealTime, the pipeline has MicroBatch",
                "source.schema: the checkpoint has Schema { fields: [a Long] }, the pipeline has Schema { fields: [a Int] }",
            ]
        );
    }

    #[test]
    fn offsets_survive_the_archive_form() {
        for o in [
            SourceOffset::Files { done: vec!["a.json".into(), "c.json".into()], reading: Some(("b.json".into(), 4)) },
            SourceOffset::Files { done: vec!["a.json".into()], reading: None },
            SourceOffset::FilesInNameOrder { file: "a.json".into(), line: u64::MAX },
            SourceOffset::FilesFollowed {
                done: vec!["bad.json.gz".into()],
                files: vec![
                    FollowedFile {
                        file: "a.json".into(),
                        lines: 7,
                        identity: Some(FileIdentity { device: 2049, inode: 1_234_567 }),
                    },
                    FollowedFile { file: "b.json".into(), lines: 0, identity: None },
                ],
            },
            SourceOffset::Stdin { line: 3 },
            SourceOffset::Generated { next: 9 },
            SourceOffset::Kafka(vec![KafkaPartitionOffset { topic: "t".into(), partition: 2, next: 40 }]),
        ] {
            assert_eq!(SourceOffset::from(&SavedOffset::from(&o)), o);
        }
    }

    #[test]
    fn the_followed_files_offsets_leave_the_archived_offset_no_larger() {
        // Manifests written before `FilesFollowed` and `FilesFollowedById` existed keep their
        // layout only if the archived enum did not grow.
        let followed = std::mem::size_of::<rkyv::Archived<Vec<String>>>()
            + std::mem::size_of::<rkyv::Archived<Vec<SavedFileLines>>>();
        let by_id = std::mem::size_of::<rkyv::Archived<Vec<String>>>()
            + std::mem::size_of::<rkyv::Archived<Vec<SavedFollowedFile>>>();
        let files = std::mem::size_of::<rkyv::Archived<Vec<String>>>()
            + std::mem::size_of::<rkyv::Archived<Option<SavedFileLines>>>();
        assert!(followed <= files, "{followed} > {files}");
        assert!(by_id <= files, "{by_id} > {files}");
    }

    #[test]
    fn a_followed_files_offset_saved_without_identities_restores_its_line_counts() {
        let saved = SavedOffset::FilesFollowed {
            done: vec!["bad.json.gz".into()],
            lines: vec![SavedFileLines { file: "a.json".into(), line: 7 }],
        };
        let bytes = rkyv::to_bytes::<rkyv::rancor::Error>(&saved).unwrap();
        let read = rkyv::from_bytes::<SavedOffset, rkyv::rancor::Error>(&bytes).unwrap();
        let expected = SourceOffset::FilesFollowed {
            done: vec!["bad.json.gz".into()],
            files: vec![FollowedFile { file: "a.json".into(), lines: 7, identity: None }],
        };
        assert_eq!(SourceOffset::from(&read), expected);
    }
}
