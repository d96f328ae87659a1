//! Recycling of data batches: the partition actors hand each processed batch back to the source
//! actor, which reuses its buffer for a later batch and its records for later records: a
//! source that makes records itself gets them ([`Source::recycle`]: Nexmark overwrites their
//! values), else the source actor keeps them for the decoder, which overwrites their values in
//! place ([`Decoder::decode_into`]). The raw lines the decoder is done with go back to the
//! source too ([`Source::recycle_lines`]: the files and Kafka sources refill them with the next
//! lines / messages).
//!
//! Without it, every record is allocated on the source's thread and freed on a partition
//! actor's (a cross-thread free in the allocator), and every batch buffer and raw line too.
//! With it, records of fixed-size columns (numbers, timestamps) and their lines cost no
//! allocation once the free lists are stocked (a STRING column still allocates its shared
//! string).
//!
//! Bounds: the return channel holds at most [`return_capacity`] batches (each of at most 256
//! records: 81 batches, 20,736 records, with one partition actor; 146 with two) and is only
//! ever `try_send`-ed to: when it is full, or the source actor is gone, the partition actor
//! drops the batch itself, as it would without recycling, and never waits. The
//! source actor keeps at most that many spare buffers, at most [`FREE_RECORDS`] records for
//! the decoder and at most [`LINES_HELD`] raw lines between two polls; the source its own
//! bounded free lists (Nexmark: 16,384 records; files and Kafka: 4,096 lines each).
//!
//! Safety of reuse: a batch is handed back only after every record of it was processed;
//! operators only borrow records (`Operator::on_record(&Record, ..)`), so whatever they keep
//! (late records sent to the sink actor, deduplication or rolling-window state) is their own
//! clone, never the batch's record. A raw line is handed back once decoded; a dead letter
//! copies what it keeps of it.

use crossbeam_channel::{Receiver, Sender, bounded};

use eddy_connectors::Source;
use eddy_engine::Record;
#[cfg(doc)]
use eddy_engine::decode::Decoder;

use crate::messages::Stamped;

/// Capacity of the return channel for `parallelism` partition actors, in batches: what their
/// input queues hold (`partition_queue` batches each: an actor that was descheduled may work
/// through its whole queue before the source actor runs again) plus the batches of one source
/// poll (`poll_max / batch` full ones and one partial per actor).
pub fn return_capacity(parallelism: usize, partition_queue: usize, poll_max: usize, batch: usize) -> usize {
    parallelism * partition_queue + poll_max / batch.max(1) + parallelism
}

/// At most this many records handed back are kept for the decoder to overwrite (those of its
/// width only): what the return channel holds with one partition actor, less a few batches.
pub const FREE_RECORDS: usize = 16_384;

/// At most this many raw lines are held between two polls, to go back to the source
/// ([`Source::recycle_lines`]): one real-time poll's worth (`source::POLL_MAX`); a larger
/// micro-batch drops the rest as it decodes them.
pub const LINES_HELD: usize = 4096;

/// A bounded return channel of `capacity` batches: the partition actors' end (clone it for each)
/// and the source actor's. `records`: whether the records go back too (when the source reuses
/// them, [`Source::recycles_records`], or the decoder can: the records the partition actors
/// get are the decoder's own, not joined ones); if not, the partition actors drop them and hand
/// back the emptied buffers only.
pub fn channel(capacity: usize, records: bool) -> (BatchReturn, Spares) {
    let (tx, rx) = bounded(capacity);
    let spares = Spares { rx: Some(rx), max_buffers: capacity, ..Spares::default() };
    (BatchReturn { tx, records }, spares)
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

/// The source actor's end of the return channel: the batch buffers handed back, ready for reuse,
/// the records kept for the decoder, and the raw lines decoded since the last poll.
#[derive(Debug, Default)]
pub struct Spares {
    rx: Option<Receiver<Vec<Stamped>>>,
    /// At most this many spare buffers are kept.
    max_buffers: usize,
    buffers: Vec<Vec<Stamped>>,
    /// The records of one returned batch, on their way to the source.
    scratch: Vec<Record>,
    /// Batches handed back whose records the decoder overwrites next, as they came (no record
    /// is moved when a batch is taken): [`Spares::record`] takes them from the last batch's
    /// end, passing over any not of `width` values, and keeps the emptied buffer as a spare.
    /// At most [`FREE_RECORDS`] records when taken.
    pooled: Vec<Vec<Stamped>>,
    /// The decoder's width: the records [`Spares::record`] gives have this many values.
    width: usize,
    /// Records for the decoder to overwrite, given one by one (at most [`FREE_RECORDS`], all
    /// of the decoder's width when they were kept): those of the returned batches when a source
    /// `select` narrows records (sorted out on arrival), and unused ones.
    records: Vec<Record>,
    /// Records of the narrow width handed back (at most [`FREE_RECORDS`]): those a source
    /// `select` with fewer items than the decoder's columns moved its values into.
    narrow: Vec<Record>,
    /// Raw lines decoded since the last poll, to go back to the source (at most
    /// [`LINES_HELD`]).
    lines: Vec<Vec<u8>>,
}

impl Spares {
    /// No recycling: every buffer, record and line is allocated, nothing is handed back.
    pub fn none() -> Spares {
        Spares::default()
    }

    /// Takes the batches handed back so far: their records go to `source` when it reuses them
    /// ([`Source::recycle`]; what it leaves is dropped here), else those of `width` values (the
    /// decoder's records, `None`: no decoder) to the decoder's free list and those of `narrow`
    /// values (a source `select`'s narrower records:
    /// [`eddy_engine::steps::CompiledSteps::narrows_to`]) to [`Spares::narrow_records`] (each
    /// up to [`FREE_RECORDS`]; the rest is dropped), their buffers to the spares (up to the
    /// bound; the rest is dropped). The raw lines decoded since the last call go back to
    /// `source` ([`Source::recycle_lines`]). Call before each poll.
    pub fn take_returned(&mut self, source: &mut dyn Source, width: Option<usize>, narrow: Option<usize>) {
        let Some(rx) = &self.rx else {
            return;
        };
        if !self.lines.is_empty() {
            source.recycle_lines(&mut self.lines);
            self.lines.clear();
        }
        let to_source = source.recycles_records();
        // the records kept for the decoder so far
        let mut held = self.held();
        // At most a channel's worth: the partition actors may keep handing batches back.
        for mut batch in rx.try_iter().take(self.max_buffers) {
            if !batch.is_empty() {
                if to_source {
                    self.scratch.extend(batch.drain(..).map(|s| s.record));
                    source.recycle(&mut self.scratch);
                    self.scratch.clear();
                } else if let Some(width) = width {
                    self.width = width;
                    if narrow.is_none() && batch.len() <= FREE_RECORDS.saturating_sub(held) {
                        // The usual case: the batch is kept whole, its records where they are
                        // (`record` passes over any of another width).
                        held += batch.len();
                        self.pooled.push(batch);
                        continue;
                    }
                    for Stamped { record, .. } in batch.drain(..) {
                        let len = record.values.len();
                        if len == width && held < FREE_RECORDS {
                            self.records.push(record);
                            held += 1;
                        } else if Some(len) == narrow && self.narrow.len() < FREE_RECORDS {
                            self.narrow.push(record);
                        }
                    }
                }
                // What was not taken is dropped here.
                batch.clear();
            }
            if self.buffers.len() < self.max_buffers {
                self.buffers.push(batch);
            }
        }
    }

    /// A record for the decoder to overwrite ([`Decoder::decode_into`]): one handed back of the
    /// decoder's width (those of another width met on the way are dropped), or an empty one
    /// (which the decoder replaces by a new record).
    #[inline]
    pub fn record(&mut self) -> Record {
        if let Some(batch) = self.pooled.last_mut()
            && let Some(s) = batch.pop()
            && s.record.values.len() == self.width
        {
            return s.record;
        }
        self.next_record()
    }

    /// [`Spares::record`] past the last pooled batch's end: the batches before it, emptied
    /// buffers kept as spares (up to the bound), then the records given one by one.
    #[inline(never)]
    fn next_record(&mut self) -> Record {
        while let Some(batch) = self.pooled.last_mut() {
            match batch.pop() {
                Some(s) if s.record.values.len() == self.width => return s.record,
                Some(_) => {}
                None => {
                    let batch = self.pooled.pop().unwrap_or_default();
                    if self.buffers.len() < self.max_buffers {
                        self.buffers.push(batch);
                    }
                }
            }
        }
        self.records.pop().unwrap_or_default()
    }

    /// The narrower records of a source `select` handed back (see [`Spares::take_returned`]),
    /// for [`eddy_engine::steps::BatchScratch::narrow_records`]; the caller takes what it uses.
    pub fn narrow_records(&mut self) -> &mut Vec<Record> {
        &mut self.narrow
    }

    /// Gives back a record taken with [`Spares::record`] and not used (its line was malformed),
    /// or one of the decoder's width whose values moved to a narrower record.
    #[inline]
    pub fn unused_record(&mut self, record: Record) {
        if self.rx.is_some() && self.held() < FREE_RECORDS {
            self.records.push(record);
        }
    }

    /// The records kept for the decoder: those of the pooled batches and those given one by one.
    fn held(&self) -> usize {
        self.pooled.iter().map(Vec::len).sum::<usize>() + self.records.len()
    }

    /// A raw line the decoder is done with: held until the next [`Spares::take_returned`]
    /// hands it back to the source (dropped past [`LINES_HELD`], or without recycling).
    #[inline]
    pub fn decoded_line(&mut self, line: Vec<u8>) {
        if self.rx.is_some() && self.lines.len() < LINES_HELD {
            self.lines.push(line);
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

    /// A source that keeps every record handed back (and says whether it reuses them), and
    /// every line.
    struct Keeping {
        reuses: bool,
        kept: Vec<Record>,
        lines: Vec<Vec<u8>>,
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

        fn recycle_lines(&mut self, lines: &mut Vec<Vec<u8>>) {
            self.lines.append(lines);
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
        let mut source = Keeping { reuses: true, kept: Vec::new(), lines: Vec::new() };
        let b = batch(0, 3);
        let at = b.as_ptr();
        back.give_back(b);
        back.give_back(batch(3, 2));
        spares.take_returned(&mut source, None, None);
        assert_eq!(longs(&source.kept), vec![0, 1, 2, 3, 4]);
        assert_eq!(spares.spare_buffers(), 2);
        let reused: Vec<_> = (0..2).map(|_| spares.buffer(256)).collect();
        assert!(reused.iter().all(|b| b.is_empty() && b.capacity() >= 256));
        assert!(reused.iter().any(|b| b.as_ptr() == at), "the first batch's buffer comes back");
        // No spare left: a new buffer.
        assert_eq!(spares.buffer(256).capacity(), 256);
    }

    #[test]
    fn records_the_source_does_not_reuse_go_to_the_decoder_if_of_its_width() {
        let (back, mut spares) = channel(4, true);
        let mut source = Keeping { reuses: false, kept: Vec::new(), lines: Vec::new() };
        let mut b = batch(0, 3);
        // Another width (a record made by a projection, say): not kept.
        b[1].record = Record::new(vec![Value::Long(1), Value::Null]);
        back.give_back(b);
        spares.take_returned(&mut source, Some(1), None);
        assert!(source.kept.is_empty());
        let mut got = vec![spares.record(), spares.record()];
        got.sort_by_key(|r| format!("{r:?}"));
        assert_eq!(longs(&got), vec![0, 2]);
        // None left: an empty record, for the decoder to replace.
        assert_eq!(spares.record(), Record::default());
        // Without a decoder, nothing is kept.
        back.give_back(batch(5, 2));
        spares.take_returned(&mut source, None, None);
        assert_eq!(spares.record(), Record::default());
        assert_eq!(spares.spare_buffers(), 2);
    }

    #[test]
    fn records_of_the_narrow_width_are_kept_apart_for_the_steps() {
        let (back, mut spares) = channel(4, true);
        let mut source = Keeping { reuses: false, kept: Vec::new(), lines: Vec::new() };
        let mut b = batch(0, 4);
        // the decoder's width is 1; a source select cuts records to 2 values
        b[1].record = Record::new(vec![Value::Long(1), Value::Null]);
        b[2].record = Record::new(vec![Value::Long(2), Value::Null, Value::Null]);
        back.give_back(b);
        spares.take_returned(&mut source, Some(1), Some(2));
        assert_eq!(longs(spares.narrow_records()), vec![1]);
        let mut got = vec![spares.record(), spares.record()];
        got.sort_by_key(|r| format!("{r:?}"));
        assert_eq!(longs(&got), vec![0, 3]);
        assert_eq!(spares.record(), Record::default());
        // Without a narrow width, none is kept.
        back.give_back(vec![Stamped {
            record: Record::new(vec![Value::Long(5), Value::Null]),
            ..batch(0, 1).remove(0)
        }]);
        spares.take_returned(&mut source, Some(1), None);
        assert_eq!(longs(spares.narrow_records()), vec![1]);
    }

    #[test]
    fn the_decoders_records_are_bounded() {
        let (back, mut spares) = channel(100, true);
        let mut source = Keeping { reuses: false, kept: Vec::new(), lines: Vec::new() };
        for _ in 0..FREE_RECORDS / 256 + 2 {
            back.give_back(batch(0, 256));
        }
        spares.take_returned(&mut source, Some(1), None);
        assert_eq!(spares.held(), FREE_RECORDS);
        spares.unused_record(Record::new(vec![Value::Null]));
        assert_eq!(spares.held(), FREE_RECORDS);
    }

    #[test]
    fn decoded_lines_go_back_to_the_source_before_the_next_poll_bounded() {
        let (_back, mut spares) = channel(4, false);
        let mut source = Keeping { reuses: false, kept: Vec::new(), lines: Vec::new() };
        for i in 0..LINES_HELD + 3 {
            spares.decoded_line(i.to_string().into_bytes());
        }
        spares.take_returned(&mut source, Some(1), None);
        assert_eq!(source.lines.len(), LINES_HELD);
        assert_eq!(source.lines[0], b"0");
        // Handed back once only.
        spares.take_returned(&mut source, Some(1), None);
        assert_eq!(source.lines.len(), LINES_HELD);
    }

    #[test]
    fn without_record_reuse_only_emptied_buffers_go_back() {
        let (back, mut spares) = channel(4, false);
        let mut source = Keeping { reuses: false, kept: Vec::new(), lines: Vec::new() };
        back.give_back(batch(0, 3));
        spares.take_returned(&mut source, None, None);
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
        let mut source = Keeping { reuses: true, kept: Vec::new(), lines: Vec::new() };
        spares.take_returned(&mut source, None, None);
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
        spares.take_returned(&mut Keeping { reuses: true, kept: Vec::new(), lines: Vec::new() }, Some(1), None);
        spares.decoded_line(b"x".to_vec());
        spares.unused_record(Record::new(vec![Value::Null]));
        assert_eq!(spares.record(), Record::default());
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
