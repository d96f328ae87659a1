//! [`SourceOffset`]: how far a source has been consumed, as a checkpoint records it, so that a
//! restarted pipeline resumes just after it ([`crate::Source::seek`]).
//!
//! One variant per kind of source; each says what a restart skips. Kafka's offsets are per
//! partition (the Kafka source keeps one entry per assigned topic partition); the files source's
//! is the set of files read whole and a line count in the file being read; the generator's is an
//! event number.

use crate::Position;

/// The identity of a file's content: its device and inode (Unix). A followed source's offset
/// keeps it per file, so that a restart tells a file replaced while the pipeline was stopped
/// (rotation: the old one renamed away, a new one created under its name) from the file it
/// counted lines of, and reads the new one from its start.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct FileIdentity {
    /// Device number (`st_dev`).
    pub device: u64,
    /// Inode number (`st_ino`).
    pub inode: u64,
}

/// One file of [`SourceOffset::FilesFollowed`]: its lines consumed and which file it was.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FollowedFile {
    /// File name (without folder).
    pub file: String,
    /// Complete lines consumed.
    pub lines: u64,
    /// Its identity when it was read (`None`: unknown, as in checkpoints written before
    /// identities were kept, or off Unix; a restart then trusts the name).
    pub identity: Option<FileIdentity>,
}

/// The next Kafka offset to read in one topic partition.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct KafkaPartitionOffset {
    /// Topic.
    pub topic: String,
    /// Partition.
    pub partition: i32,
    /// The next offset to read (the offset of the last record consumed, plus one).
    pub next: i64,
}

/// How far a source has been consumed: everything up to here is in the checkpoint's state.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SourceOffset {
    /// Files source: the files read whole, by name (the folder's files are read in name order,
    /// but a file may appear later with an earlier name: it is read then, so a restart must not
    /// take "named before the last file" for "read"), and the file being read, if any, with the
    /// lines of it consumed (every line counts: blank lines and CSV headers too).
    Files {
        /// The names (without folder) of the files read to their end, sorted (byte order), each
        /// once.
        done: Vec<String>,
        /// The file being read (name without folder) and its lines consumed.
        reading: Option<(String, u64)>,
    },
    /// Files source with `follow`: every file is followed (lines appended to it are read), so
    /// each has its own count of lines consumed; the count names complete lines only (a line
    /// still without its newline is not consumed), and its identity, so that a restart reads a
    /// file replaced meanwhile from its start.
    FilesFollowed {
        /// Files finished for good (unreadable), by name, sorted, each once.
        done: Vec<String>,
        /// The files read so far, their lines consumed and identities, sorted by name, each once.
        files: Vec<FollowedFile>,
    },
    /// Files source, as checkpoints of format versions 1 and 2 recorded it (read, never
    /// written): every file named before `file` (byte order of names), and the first `line`
    /// lines of `file` (`u64::MAX`: the whole file). The files source turns it into
    /// [`SourceOffset::Files`] over the files its folder holds when it resumes.
    FilesInNameOrder {
        /// The file name (without folder).
        file: String,
        /// Lines of `file` consumed.
        line: u64,
    },
    /// Standard input: the first `line` lines (a restart expects the same input again from its
    /// start, e.g. `eddy run p.toml < events.jsonl`, and skips them).
    Stdin {
        /// Lines consumed.
        line: u64,
    },
    /// Kafka: per topic partition, the next offset to read (sorted by topic, partition).
    Kafka(Vec<KafkaPartitionOffset>),
    /// Generator (Nexmark): the next event number to consider (events `0..next` are done).
    Generated {
        /// The next event number.
        next: u64,
    },
}

impl SourceOffset {
    /// The offset just after the item at `position` was consumed, given the offset before it
    /// (`None`: nothing consumed yet). Called for every item in order; cheap (a file name is
    /// copied only when it changes).
    pub fn advance(offset: &mut Option<SourceOffset>, position: &Position) {
        match (offset.as_mut(), position) {
            (Some(SourceOffset::Files { done, reading }), Position::File { file: f, through: l, .. }) => {
                match reading {
                    Some((file, line)) if file.as_str() == &**f => *line = *l,
                    _ => {
                        // Files are read one after the other: the file read before is whole.
                        if let Some((previous, _)) = reading.replace((f.to_string(), *l)) {
                            insert_sorted(done, previous);
                        }
                    }
                }
            }
            (Some(SourceOffset::Files { done, reading }), Position::FileRest { file: f, .. }) => {
                if let Some((previous, _)) = reading.take() {
                    insert_sorted(done, previous);
                }
                insert_sorted(done, f.clone());
            }
            (Some(SourceOffset::FilesFollowed { files, .. }), Position::File { file: f, through: l, identity, .. }) => {
                match files.binary_search_by(|e| e.file.as_str().cmp(&**f)) {
                    Ok(i) => {
                        files[i].lines = *l;
                        files[i].identity = *identity;
                    }
                    Err(i) => files.insert(i, FollowedFile { file: f.to_string(), lines: *l, identity: *identity }),
                }
            }
            (Some(SourceOffset::FilesFollowed { done, files }), Position::FileRest { file: f, .. }) => {
                files.retain(|e| e.file != *f);
                insert_sorted(done, f.clone());
            }
            (Some(SourceOffset::Stdin { line }), Position::Stdin { through: l, .. }) => *line = *l,
            (Some(SourceOffset::Generated { next }), Position::Generated { event }) => *next = event + 1,
            (Some(SourceOffset::Kafka(parts)), Position::Kafka { topic, partition, offset: o }) => {
                match parts.binary_search_by(|p| (p.topic.as_str(), p.partition).cmp(&(&**topic, *partition))) {
                    Ok(i) => parts[i].next = o + 1,
                    Err(i) => parts.insert(
                        i,
                        KafkaPartitionOffset { topic: topic.to_string(), partition: *partition, next: o + 1 },
                    ),
                }
            }
            (_, p) => *offset = Some(SourceOffset::after(p)),
        }
    }

    /// The offset just after the item at `position`, alone.
    pub fn after(position: &Position) -> SourceOffset {
        match position {
            Position::File { file, through, .. } => {
                SourceOffset::Files { done: Vec::new(), reading: Some((file.to_string(), *through)) }
            }
            Position::FileRest { file, .. } => SourceOffset::Files { done: vec![file.clone()], reading: None },
            Position::Stdin { through, .. } => SourceOffset::Stdin { line: *through },
            Position::Generated { event } => SourceOffset::Generated { next: event + 1 },
            Position::Kafka { topic, partition, offset } => SourceOffset::Kafka(vec![KafkaPartitionOffset {
                topic: topic.to_string(),
                partition: *partition,
                next: offset + 1,
            }]),
        }
    }

    /// The kind of source the offset belongs to (`files`, `stdin`, `kafka`, `nexmark`), for messages.
    pub fn kind(&self) -> &'static str {
        match self {
            SourceOffset::Files { .. } | SourceOffset::FilesFollowed { .. } | SourceOffset::FilesInNameOrder { .. } => {
                "files"
            }
            SourceOffset::Stdin { .. } => "stdin",
            SourceOffset::Kafka(_) => "kafka",
            SourceOffset::Generated { .. } => "nexmark",
        }
    }
}

/// Inserts `name` into the sorted `names` unless it is there already.
pub(crate) fn insert_sorted(names: &mut Vec<String>, name: String) {
    if let Err(i) = names.binary_search(&name) {
        names.insert(i, name);
    }
}

impl std::fmt::Display for SourceOffset {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SourceOffset::Files { done, reading } => {
                write!(f, "{} files read", done.len())?;
                match reading {
                    Some((file, line)) => write!(f, ", {file}:{line}"),
                    None => Ok(()),
                }
            }
            SourceOffset::FilesFollowed { done, files } => {
                write!(f, "{} files followed", files.len())?;
                if !done.is_empty() {
                    write!(f, ", {} finished", done.len())?;
                }
                Ok(())
            }
            SourceOffset::FilesInNameOrder { file, line: u64::MAX } => write!(f, "files up to {file} (whole)"),
            SourceOffset::FilesInNameOrder { file, line } => write!(f, "files up to {file}:{line}"),
            SourceOffset::Stdin { line } => write!(f, "stdin:{line}"),
            SourceOffset::Kafka(parts) => {
                for (i, p) in parts.iter().enumerate() {
                    write!(f, "{}{}/{}@{}", if i > 0 { "," } else { "" }, p.topic, p.partition, p.next)?;
                }
                Ok(())
            }
            SourceOffset::Generated { next } => write!(f, "event {next}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A record of `file` on lines `line..=through`, of no known identity.
    fn file_at(file: &str, line: u64, through: u64) -> Position {
        Position::File { file: file.into(), line, through, identity: None }
    }

    fn followed(file: &str, lines: u64, identity: Option<FileIdentity>) -> FollowedFile {
        FollowedFile { file: file.into(), lines, identity }
    }

    #[test]
    fn advancing_over_file_lines_keeps_the_file_being_read_and_the_files_before_it() {
        let mut o = None;
        SourceOffset::advance(&mut o, &file_at("b.json", 1, 1));
        SourceOffset::advance(&mut o, &file_at("b.json", 3, 3));
        assert_eq!(o, Some(SourceOffset::Files { done: vec![], reading: Some(("b.json".into(), 3)) }));
        // A file that appeared later with an earlier name.
        SourceOffset::advance(&mut o, &file_at("a.json", 2, 2));
        SourceOffset::advance(&mut o, &file_at("c.json", 1, 1));
        let done = vec!["a.json".to_string(), "b.json".to_string()];
        assert_eq!(o, Some(SourceOffset::Files { done, reading: Some(("c.json".into(), 1)) }));
    }

    #[test]
    fn kafka_offsets_are_kept_per_partition_sorted_and_point_past_the_last_message() {
        let mut o = None;
        for (p, off) in [(1, 10), (0, 4), (1, 11), (0, 5)] {
            SourceOffset::advance(&mut o, &Position::Kafka { topic: "t".into(), partition: p, offset: off });
        }
        let expected = vec![
            KafkaPartitionOffset { topic: "t".into(), partition: 0, next: 6 },
            KafkaPartitionOffset { topic: "t".into(), partition: 1, next: 12 },
        ];
        assert_eq!(o, Some(SourceOffset::Kafka(expected)));
    }

    #[test]
    fn generated_and_stdin_offsets_point_past_the_last_item() {
        let mut o = None;
        SourceOffset::advance(&mut o, &Position::Generated { event: 7 });
        assert_eq!(o, Some(SourceOffset::Generated { next: 8 }));
        let mut s = None;
        SourceOffset::advance(&mut s, &Position::Stdin { line: 3, through: 4 });
        assert_eq!(s, Some(SourceOffset::Stdin { line: 4 }));
    }

    #[test]
    fn a_record_of_several_lines_moves_the_offset_past_its_last_line() {
        let mut o = None;
        SourceOffset::advance(&mut o, &file_at("a.csv", 2, 4));
        assert_eq!(o, Some(SourceOffset::Files { done: vec![], reading: Some(("a.csv".into(), 4)) }));
    }

    #[test]
    fn an_unreadable_rest_finishes_its_file() {
        let mut o = Some(SourceOffset::Files { done: vec![], reading: Some(("a.json".into(), 2)) });
        SourceOffset::advance(&mut o, &Position::FileRest { file: "b.json.gz".into(), line: 5, byte: 40 });
        assert_eq!(o, Some(SourceOffset::Files { done: vec!["a.json".into(), "b.json.gz".into()], reading: None }));
        let mut f = Some(SourceOffset::FilesFollowed { done: vec![], files: vec![followed("b.json.gz", 4, None)] });
        SourceOffset::advance(&mut f, &Position::FileRest { file: "b.json.gz".into(), line: 5, byte: 40 });
        assert_eq!(f, Some(SourceOffset::FilesFollowed { done: vec!["b.json.gz".into()], files: vec![] }));
    }

    #[test]
    fn followed_files_keep_a_line_count_and_an_identity_each_in_any_order_of_reading() {
        let id = |inode| Some(FileIdentity { device: 1, inode });
        let mut o = Some(SourceOffset::FilesFollowed { done: vec![], files: vec![] });
        for (file, line, inode) in [("b", 1, 7), ("a", 2, 5), ("b", 3, 7), ("a", 1, 9)] {
            let position = Position::File { file: file.into(), line, through: line, identity: id(inode) };
            SourceOffset::advance(&mut o, &position);
        }
        // "a" read again from its start (replaced by a new file of that name): its count
        // restarts, under the new file's identity.
        let files = vec![followed("a", 1, id(9)), followed("b", 3, id(7))];
        assert_eq!(o, Some(SourceOffset::FilesFollowed { done: vec![], files }));
    }
}
