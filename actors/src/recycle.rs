//! Recycling of data batches: the partition actors hand each processed batch back to the source
//! actor, which reuses its buffer for a later batch and gives its records to the source
//! ([`Source::recycle`]) to be overwritten instead of allocated anew.
//!
//! Without it, every record is allocated on the source's thread and freed on a partition
//! actor's (a cross-thread free in the allocator), and every batch buffer too. With it, a
//! generator such as Nexmark's allocates only until its free list is stocked.
//!
//! Bounds: the return channel holds at most [`return_capacity`] batches (each of at most 256
//! records: 81 batches, 20,736 records, with one partition actor; 146 with two) and is only
//! ever `try_send`-ed to: when it is full, or the source actor is gone, the partition actor
//! drops the batch itself, as it would without recycling, and never waits. The
//! source actor keeps at most that many spare buffers, and the source its own bounded free list
//! (Nexmark: 16,384 records).
//!
//! Safety of reuse: a batch is handed back only after every record of it was processed;
//! operators only borrow records (`Operator::on_record(&Record, ..)`), so whatever they keep
//! (late records sent to the sink actor, deduplication or rolling-window state) is their own
//! clone, never the batch's record.

use crossbeam_channel::{Receiver, Sender, bounded};

use eddy_connectors::Source;
use eddy_engine::Record;

use crate::messages::Stamped;

/// Capacity of the return channel for `parallelism` partition actors, in batches: what their
/// input queues hold (`partition_queue` batches each: an actor that was descheduled may work
/// through its whole queue before the source actor runs again) plus the batches of one source
/// poll (`poll_max / batch` full ones and one partial per actor).
pub fn return_capacity(parallelism: usize, partition_queue: usize, poll_max: usize, batch: usize) -> usize {
    parallelism * partition_queue + poll_max / batch.max(1) + parallelism
}

/// A bounded return channel of `capacity` batches: the partition actors' end (clone it for each)
/// and the source actor's. `records`: whether the records go back too ([`Source::recycles_records`]);
/// if not, the partition actors drop them and hand back the emptied buffers only.
pub fn channel(capacity: usize, records: bool) -> (BatchReturn, Spares) {
    let (tx, rx) = bounded(capacity);
    (
        BatchReturn { tx, records },
        Spares { rx: Some(rx), max_buffers: capacity, buffers: Vec::new(), scratch: Vec::new() },
    )
}

/// A partition actor's end of the return channel.
#[derive(Debug, Clone)]
pub struct BatchReturn {
    tx: Sender<Vec<Stamped>>,
    records: bool,
}

impl BatchReturn {
    /// Hands a processed batch back (never waits): with its records when the source reuses them,
    /// else emptied here. When the channel is full or the source actor gone, the batch is
    /// dropped here instead.
    pub fn give_back(&self, mut batch: Vec<Stamped>) {
        if !self.records {
            batch.clear();
        }
        // Full or disconnected: the source has spares enough (or is gone); drop it here.
        let _ = self.tx.try_send(batch);
    }
}

/// The source actor's end of the return channel: the batch buffers handed back, ready for reuse.
#[derive(Debug, Default)]
pub struct Spares {
    rx: Option<Receiver<Vec<Stamped>>>,
    /// At most this many spare buffers are kept.
    max_buffers: usize,
    buffers: Vec<Vec<Stamped>>,
    /// The records of one returned batch, on their way to the source.
    scratch: Vec<Record>,
}

impl Spares {
    /// No recycling: every buffer is allocated, nothing is handed back.
    pub fn none() -> Spares {
        Spares::default()
    }

    /// Takes the batches handed back so far: their records go to `source` ([`Source::recycle`];
    /// what it leaves is dropped here), their buffers to the spares (up to the bound; the rest
    /// is dropped).
    pub fn take_returned(&mut self, source: &mut dyn Source) {
        let Some(rx) = &self.rx else {
            return;
        };
        // At most a channel's worth: the partition actors may keep handing batches back.
        for mut batch in rx.try_iter().take(self.max_buffers) {
            if !batch.is_empty() {
                self.scratch.extend(batch.drain(..).map(|s| s.record));
                source.recycle(&mut self.scratch);
                self.scratch.clear();
            }
            if self.buffers.len() < self.max_buffers {
                self.buffers.push(batch);
            }
        }
    }

    /// An empty buffer for a batch: a spare one, or a new one of `capacity`.
    pub fn buffer(&mut self, capacity: usize) -> Vec<Stamped> {
        self.buffers.pop().unwrap_or_else(|| Vec::with_capacity(capacity))
    }

    /// Spare buffers held (for tests and the bound).
    pub fn spare_buffers(&self) -> usize {
        self.buffers.len()
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use eddy_connectors::{ConnectorError, Poll, SourceItem};
    use eddy_engine::{Timestamp, Value};

    use super::*;

    /// A source that keeps every record handed back (and says whether it reuses them).
    struct Keeping {
        reuses: bool,
        kept: Vec<Record>,
    }

    impl Source for Keeping {
        fn poll(&mut self, _: &mut Vec<SourceItem>, _: usize, _: Duration) -> Result<Poll, ConnectorError> {
            Ok(Poll::Exhausted)
        }

        fn recycles_records(&self) -> bool {
            self.reuses
        }

        fn recycle(&mut self, records: &mut Vec<Record>) {
            self.kept.append(records);
        }
    }

    fn batch(first: i64, n: i64) -> Vec<Stamped> {
        let mut b = Vec::with_capacity(256);
        b.extend((first..first + n).map(|i| Stamped {
            record: Record::new(vec![Value::Long(i)]),
            now: Timestamp(i),
            watermark: Timestamp::MIN,
            created_ns: 0,
        }));
        b
    }

    fn longs(records: &[Record]) -> Vec<i64> {
        records.iter().map(|r| if let Value::Long(v) = r.get(0) { *v } else { panic!("{r:?}") }).collect()
    }

    #[test]
    fn returned_records_reach_the_source_and_buffers_are_reused() {
        let (back, mut spares) = channel(4, true);
        let mut source = Keeping { reuses: true, kept: Vec::new() };
        let b = batch(0, 3);
        let at = b.as_ptr();
        back.give_back(b);
        back.give_back(batch(3, 2));
        spares.take_returned(&mut source);
        assert_eq!(longs(&source.kept), vec![0, 1, 2, 3, 4]);
        assert_eq!(spares.spare_buffers(), 2);
        let reused: Vec<_> = (0..2).map(|_| spares.buffer(256)).collect();
        assert!(reused.iter().all(|b| b.is_empty() && b.capacity() >= 256));
        assert!(reused.iter().any(|b| b.as_ptr() == at), "the first batch's buffer comes back");
        // No spare left: a new buffer.
        assert_eq!(spares.buffer(256).capacity(), 256);
    }

    #[test]
    fn without_record_reuse_only_emptied_buffers_go_back() {
        let (back, mut spares) = channel(4, false);
        let mut source = Keeping { reuses: false, kept: Vec::new() };
        back.give_back(batch(0, 3));
        spares.take_returned(&mut source);
        assert!(source.kept.is_empty());
        assert_eq!(spares.spare_buffers(), 1);
    }

    #[test]
    fn a_full_return_channel_drops_batches_without_waiting() {
        let (back, mut spares) = channel(2, true);
        for i in 0..5 {
            // Never blocks, though nobody takes the batches.
            back.give_back(batch(10 * i, 1));
        }
        let mut source = Keeping { reuses: true, kept: Vec::new() };
        spares.take_returned(&mut source);
        // Only the first two fitted.
        assert_eq!(longs(&source.kept), vec![0, 10]);
        assert!(spares.spare_buffers() <= 2);
    }

    #[test]
    fn giving_back_to_a_gone_source_actor_drops_the_batch() {
        let (back, spares) = channel(2, true);
        drop(spares);
        back.give_back(batch(0, 1));
    }

    #[test]
    fn without_a_channel_nothing_comes_back_and_buffers_are_new() {
        let mut spares = Spares::none();
        spares.take_returned(&mut Keeping { reuses: true, kept: Vec::new() });
        assert_eq!(spares.spare_buffers(), 0);
        assert_eq!(spares.buffer(8).capacity(), 8);
    }

    #[test]
    fn the_capacity_covers_the_partition_queues_and_one_poll() {
        // Queues of 64 batches per actor; 4,096 records per poll in batches of 256: 16 full, plus
        // one partial per actor.
        assert_eq!(return_capacity(1, 64, 4096, 256), 64 + 16 + 1);
        assert_eq!(return_capacity(2, 64, 4096, 256), 128 + 16 + 2);
    }
}
