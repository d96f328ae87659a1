//! [`SourceOffset`]: how far a source has been consumed, as a checkpoint records it, so that a
//! restarted pipeline resumes just after it ([`crate::Source::seek`]).
//!
//! One variant per kind of source; each says what a restart skips. Kafka's offsets are per
//! partition (the Kafka source keeps one entry per assigned topic partition); the files source's
//! is a file name and a line count (files are read in name order); the generator's is an event
//! number.

use crate::Position;

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
    /// Files source: every file named before `file` (byte order of names), and the first `line`
    /// lines of `file` (every line counts: blank lines and CSV headers too; `u64::MAX`: the whole
    /// file, wherever it ends).
    Files {
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
            (Some(SourceOffset::Files { file, line }), Position::File { file: f, line: l }) => {
                if file != f {
                    file.clone_from(f);
                }
                *line = *l;
            }
            (Some(SourceOffset::Stdin { line }), Position::Stdin { line: l }) => *line = *l,
            (Some(SourceOffset::Generated { next }), Position::Generated { event }) => *next = event + 1,
            (Some(SourceOffset::Kafka(parts)), Position::Kafka { topic, partition, offset: o }) => {
                match parts.binary_search_by(|p| (p.topic.as_str(), p.partition).cmp(&(topic.as_str(), *partition))) {
                    Ok(i) => parts[i].next = o + 1,
                    Err(i) => parts
                        .insert(i, KafkaPartitionOffset { topic: topic.clone(), partition: *partition, next: o + 1 }),
                }
            }
            (_, p) => *offset = Some(SourceOffset::after(p)),
        }
    }

    /// The offset just after the item at `position`, alone.
    pub fn after(position: &Position) -> SourceOffset {
        match position {
            Position::File { file, line } => SourceOffset::Files { file: file.clone(), line: *line },
            Position::Stdin { line } => SourceOffset::Stdin { line: *line },
            Position::Generated { event } => SourceOffset::Generated { next: event + 1 },
            Position::Kafka { topic, partition, offset } => SourceOffset::Kafka(vec![KafkaPartitionOffset {
                topic: topic.clone(),
                partition: *partition,
                next: offset + 1,
            }]),
        }
    }

    /// The kind of source the offset belongs to (`files`, `stdin`, `kafka`, `nexmark`), for messages.
    pub fn kind(&self) -> &'static str {
        match self {
            SourceOffset::Files { .. } => "files",
            SourceOffset::Stdin { .. } => "stdin",
            SourceOffset::Kafka(_) => "kafka",
            SourceOffset::Generated { .. } => "nexmark",
        }
    }
}

impl std::fmt::Display for SourceOffset {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SourceOffset::Files { file, line: u64::MAX } => write!(f, "{file} (whole)"),
            SourceOffset::Files { file, line } => write!(f, "{file}:{line}"),
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

    #[test]
    fn advancing_over_file_lines_keeps_the_last_file_and_line() {
        let mut o = None;
        SourceOffset::advance(&mut o, &Position::File { file: "a.json".into(), line: 1 });
        SourceOffset::advance(&mut o, &Position::File { file: "a.json".into(), line: 3 });
        assert_eq!(o, Some(SourceOffset::Files { file: "a.json".into(), line: 3 }));
        SourceOffset::advance(&mut o, &Position::File { file: "b.json".into(), line: 2 });
        assert_eq!(o, Some(SourceOffset::Files { file: "b.json".into(), line: 2 }));
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
        SourceOffset::advance(&mut s, &Position::Stdin { line: 4 });
        assert_eq!(s, Some(SourceOffset::Stdin { line: 4 }));
    }
}
