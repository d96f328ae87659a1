//! [`NexmarkSource`]: the records of one Nexmark table, unbounded or paced by the wall clock.

use std::time::Duration;

use eddy_engine::Record;

use super::model::{EventClock, NexmarkGenerator, end_of_run, kind_of, next_of_kind};
use super::{BASE_TIME, DEFAULT_EVENT_RATE, NexmarkTable};
use crate::{ConnectorError, Payload, Poll, Position, Source, SourceItem, SourceOffset, monotonic_ns};

/// Emits the [`Payload::Record`]s of one table of the Nexmark event stream, in event order, at
/// [`Position::Generated`] (the event number among all events, from 0).
///
/// - `events`: how many events (of all three kinds) to generate; the bid table then has about
///   46/50 of them. `None`: endless.
/// - `rate` (events/s, all kinds): event `n` is scheduled `n / rate` seconds after the first poll
///   and is not emitted before (the poll sleeps, then spins through the last 200 µs); its `created_ns` is that
///   scheduled instant on the [`monotonic_ns`] clock, not the instant it was emitted, so a
///   latency measured from it includes any delay in polling (no coordinated omission). The
///   event-time spacing is `1/rate` too. `None`: as fast as polled, `created_ns` = the time of
///   the poll, event time spaced at the reference default ([`DEFAULT_EVENT_RATE`]).
/// - `seed`: the stream is a function of the seed (and `rate`, which sets event times).
#[derive(Debug)]
pub struct NexmarkSource {
    table: NexmarkTable,
    generator: NexmarkGenerator,
    /// The next event number to consider.
    next_event: u64,
    /// One past the last event number.
    end: u64,
    /// Nanoseconds per event when paced.
    pacing_ns: Option<f64>,
    /// `monotonic_ns()` at the first poll (event `first_event`'s scheduled instant).
    start_ns: Option<u64>,
    /// The first event number this source emits (0, or where a restart resumed).
    first_event: u64,
    /// Records handed back by the runtime ([`Source::recycle`]), of this table's width, whose
    /// values the next records overwrite; at most [`FREE_RECORDS`] (16,384).
    free: Vec<Record>,
}

/// At most this many recycled records are kept for reuse (about four polls of the runtime's
/// 4,096 records; a bid record is 7 values of 24 bytes, an auction's 10, so a few MB at most).
pub(crate) const FREE_RECORDS: usize = 16_384;

/// Waits below this are spun rather than slept: a sleep overshoots by the kernel's timer slack
/// (50 µs by default) plus a wake-up, longer than the 10 µs between events at 100,000 events/s.
const SPIN_BELOW_NS: u64 = 200_000;

/// Waits until [`monotonic_ns`]` >= at` (ns): sleeps through all but the last 200 µs, then
/// spins (yielding), so a paced stream leaves on schedule to within a microsecond or so (an
/// open-loop load generator's usual trade: one busy core while paced at high rates). Public so
/// that a benchmark's floor (the same pacing with no engine behind it) paces exactly as the
/// source does.
pub fn wait_until(at: u64) {
    let now = monotonic_ns();
    if at > now + SPIN_BELOW_NS {
        std::thread::sleep(Duration::from_nanos(at - now - SPIN_BELOW_NS));
    }
    while monotonic_ns() < at {
        // Yield rather than spin: on a machine with few cores, a woken actor thread placed on
        // this core runs at once instead of waiting for the generator's time slice to end.
        std::thread::yield_now();
    }
}

impl NexmarkSource {
    /// A source of `table`'s records.
    ///
    /// # Errors
    /// [`ConnectorError::Config`] when `rate` is not a finite number > 0.
    pub fn new(
        table: NexmarkTable,
        events: Option<u64>,
        rate: Option<f64>,
        seed: u64,
    ) -> Result<NexmarkSource, ConnectorError> {
        if let Some(r) = rate
            && !(r.is_finite() && r > 0.0)
        {
            return Err(ConnectorError::Config(format!(
                "nexmark source: rate {r} is not allowed; expected a number of events per second > 0"
            )));
        }
        let clock = EventClock { base: BASE_TIME, rate: rate.unwrap_or(DEFAULT_EVENT_RATE) };
        Ok(NexmarkSource {
            table,
            generator: NexmarkGenerator::new(seed, clock),
            next_event: 0,
            end: events.unwrap_or(u64::MAX),
            pacing_ns: rate.map(|r| 1e9 / r),
            start_ns: None,
            first_event: 0,
            free: Vec::new(),
        })
    }

    /// Projection pushdown ([`NexmarkGenerator::keeping`]): columns of the table whose `needed`
    /// entry is false (by position in the table's schema) are emitted as null; the needed ones
    /// hold the same values as without pruning.
    #[must_use]
    pub fn with_needed_columns(mut self, needed: &[bool]) -> NexmarkSource {
        self.generator = self.generator.keeping(needed);
        self
    }

    /// Recycled records held for reuse.
    #[cfg(test)]
    pub(crate) fn free_len(&self) -> usize {
        self.free.len()
    }

    /// The table this source emits.
    pub fn table(&self) -> NexmarkTable {
        self.table
    }

    /// The next event of this source's table, if any remains.
    fn next_own_event(&mut self) -> Option<u64> {
        let n = next_of_kind(self.next_event, self.table);
        if n >= self.end {
            self.next_event = self.end;
            return None;
        }
        debug_assert_eq!(kind_of(n), self.table);
        Some(n)
    }

    fn emit(&mut self, n: u64, created_ns: u64, out: &mut Vec<SourceItem>) {
        let record = self.generator.record_of_kind(self.table, n, self.free.pop());
        out.push(SourceItem {
            payload: Payload::Record(record),
            position: Position::Generated { event: n },
            created_ns,
        });
        self.next_event = n + 1;
    }

    /// Emits the events from `n` (of this source's table) to the end of their run of the table's
    /// events, to `self.end` or to `most` events, whichever comes first, all created at
    /// `created_ns`: [`NexmarkSource::emit`] of each, without finding each one's kind.
    fn emit_run(&mut self, n: u64, most: usize, created_ns: u64, out: &mut Vec<SourceItem>) {
        let end = end_of_run(n, self.table).min(self.end).min(n.saturating_add(most as u64));
        let (table, generator, free) = (self.table, &mut self.generator, &mut self.free);
        out.extend((n..end).map(|event| SourceItem {
            payload: Payload::Record(generator.record_of_kind(table, event, free.pop())),
            position: Position::Generated { event },
            created_ns,
        }));
        self.next_event = end;
    }
}

impl Source for NexmarkSource {
    /// Appends up to `max` records: [`Poll::Data`] when some were appended, [`Poll::Idle`] when
    /// paced and none was due within `timeout`, [`Poll::Exhausted`] once `events` events have
    /// been generated (after their records were returned).
    fn poll(&mut self, out: &mut Vec<SourceItem>, max: usize, timeout: Duration) -> Result<Poll, ConnectorError> {
        let start = out.len();
        let mut now = monotonic_ns();
        let Some(ns_per_event) = self.pacing_ns else {
            out.reserve(max.min(1 << 16));
            while out.len() - start < max {
                let Some(n) = self.next_own_event() else {
                    break;
                };
                self.emit_run(n, max - (out.len() - start), now, out);
            }
            return Ok(if out.len() > start || self.next_event < self.end { Poll::Data } else { Poll::Exhausted });
        };
        let origin = *self.start_ns.get_or_insert(now);
        let deadline = now.saturating_add(u64::try_from(timeout.as_nanos()).unwrap_or(u64::MAX));
        while out.len() - start < max {
            let Some(n) = self.next_own_event() else {
                break;
            };
            let due = origin.saturating_add(((n - self.first_event) as f64 * ns_per_event) as u64);
            if due > now {
                // Refresh the clock only when the next record is not yet due by the last reading.
                now = monotonic_ns();
            }
            if due <= now {
                self.emit(n, due, out);
                continue;
            }
            if out.len() > start || now >= deadline {
                break;
            }
            wait_until(due.min(deadline));
            now = monotonic_ns();
        }
        Ok(if out.len() > start {
            Poll::Data
        } else if self.next_event >= self.end {
            Poll::Exhausted
        } else {
            Poll::Idle
        })
    }

    /// Yes: records are generated into recycled ones.
    fn recycles_records(&self) -> bool {
        true
    }

    /// Takes records from the end of `records` until it holds 16,384 in all, keeping those of
    /// this table's width (others are dropped); the next polls overwrite their values
    /// ([`NexmarkGenerator::record_reusing`]: the same records as when allocated).
    fn recycle(&mut self, records: &mut Vec<Record>) {
        let width = self.table.columns();
        // The usual case, records of this source handed back: the last ones that fit are all of
        // the table's width, so they are moved over at once (the loop below would take exactly
        // them, one by one).
        let from = records.len().saturating_sub(FREE_RECORDS - self.free.len());
        if records[from..].iter().all(|r| r.values.len() == width) {
            self.free.extend(records.drain(from..));
            return;
        }
        while self.free.len() < FREE_RECORDS
            && let Some(r) = records.pop()
        {
            if r.values.len() == width {
                self.free.push(r);
            }
        }
    }

    /// The next event number to consider.
    fn offset(&self) -> Option<SourceOffset> {
        Some(SourceOffset::Generated { next: self.next_event })
    }

    /// Resumes at event `next` (the generator is a function of the event number, so nothing
    /// before it is generated); when paced, event `next` is due at the first poll.
    ///
    /// # Errors
    /// [`ConnectorError::Config`] for an offset of another kind of source.
    fn seek(&mut self, offset: &SourceOffset) -> Result<(), ConnectorError> {
        let SourceOffset::Generated { next } = offset else {
            return Err(ConnectorError::Config(format!(
                "nexmark source: the checkpoint holds a {} offset ({offset}), not an event number",
                offset.kind()
            )));
        };
        self.next_event = (*next).min(self.end);
        self.first_event = self.next_event;
        self.start_ns = None;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::time::Instant;

    use super::*;

    fn records(out: &[SourceItem]) -> Vec<(u64, Record)> {
        out.iter()
            .map(|i| match (&i.payload, &i.position) {
                (Payload::Record(r), Position::Generated { event }) => (*event, r.clone()),
                other => panic!("unexpected item {other:?}"),
            })
            .collect()
    }

    fn drain(s: &mut NexmarkSource, max: usize) -> Vec<SourceItem> {
        let mut out = Vec::new();
        for _ in 0..1_000_000 {
            match s.poll(&mut out, max, Duration::from_secs(5)).unwrap() {
                Poll::Exhausted => return out,
                Poll::Data | Poll::Idle => {}
                Poll::BatchBoundary => panic!("no boundaries in a generator"),
            }
        }
        panic!("the source did not end");
    }

    #[test]
    fn a_bounded_source_emits_its_tables_share_of_the_events_then_is_exhausted() {
        // 1,000 events = 20 cycles of 50: 20 people, 60 auctions, 920 bids.
        for (table, expected) in [(NexmarkTable::Person, 20), (NexmarkTable::Auction, 60), (NexmarkTable::Bid, 920)] {
            let mut s = NexmarkSource::new(table, Some(1_000), None, 1).unwrap();
            let out = drain(&mut s, 64);
            assert_eq!(out.len(), expected, "{table}");
            assert!(records(&out).iter().all(|(n, _)| kind_of(*n) == table && *n < 1_000));
            assert_eq!(s.poll(&mut Vec::new(), 10, Duration::ZERO).unwrap(), Poll::Exhausted);
        }
    }

    #[test]
    fn a_source_resumed_at_an_offset_emits_the_rest_of_the_uninterrupted_stream() {
        let mut whole = NexmarkSource::new(NexmarkTable::Bid, Some(300), None, 4).unwrap();
        let all = records(&drain(&mut whole, 1000));
        let mut first = NexmarkSource::new(NexmarkTable::Bid, Some(300), None, 4).unwrap();
        let mut out = Vec::new();
        first.poll(&mut out, 50, Duration::ZERO).unwrap();
        let offset = first.offset().unwrap();
        let mut resumed = NexmarkSource::new(NexmarkTable::Bid, Some(300), None, 4).unwrap();
        resumed.seek(&offset).unwrap();
        let mut got = records(&out);
        got.extend(records(&drain(&mut resumed, 7)));
        assert_eq!(got, all);
        assert!(resumed.seek(&SourceOffset::Stdin { line: 1 }).is_err());
    }

    #[test]
    fn a_poll_returns_at_most_max_records() {
        let mut s = NexmarkSource::new(NexmarkTable::Bid, None, None, 1).unwrap();
        let mut out = Vec::new();
        assert_eq!(s.poll(&mut out, 100, Duration::ZERO).unwrap(), Poll::Data);
        assert_eq!(out.len(), 100);
        assert_eq!(s.poll(&mut out, 0, Duration::ZERO).unwrap(), Poll::Data);
        assert_eq!(out.len(), 100);
    }

    #[test]
    fn records_of_a_source_are_the_generators_records_in_event_order() {
        let mut s = NexmarkSource::new(NexmarkTable::Auction, Some(500), None, 9).unwrap();
        let got = records(&drain(&mut s, 7));
        let mut generator = NexmarkGenerator::new(9, EventClock { base: BASE_TIME, rate: DEFAULT_EVENT_RATE });
        let expected: Vec<(u64, Record)> =
            (0..500).filter(|&n| kind_of(n) == NexmarkTable::Auction).map(|n| (n, generator.record(n))).collect();
        assert_eq!(got, expected);
    }

    #[test]
    fn a_paced_source_emits_no_record_before_its_scheduled_time_and_stamps_that_time() {
        // 2,000 events/s: event n is due n × 0.5 ms after the first poll.
        let mut s = NexmarkSource::new(NexmarkTable::Bid, Some(200), Some(2_000.0), 3).unwrap();
        let started = Instant::now();
        let first_poll_ns = monotonic_ns();
        let mut out = Vec::new();
        while s.poll(&mut out, 16, Duration::from_millis(20)).unwrap() != Poll::Exhausted {
            let elapsed_ns = started.elapsed().as_nanos() as u64;
            let last_event = out.last().map_or(0, |i| match i.position {
                Position::Generated { event } => event,
                _ => 0,
            });
            // Nothing emitted ahead of its schedule (0.5 ms per event since the first poll).
            assert!(last_event * 500_000 <= elapsed_ns + 1_000_000, "event {last_event} at {elapsed_ns} ns");
        }
        // Events 4..200 of bid kind: the last (199) is due at 99.5 ms.
        assert!(started.elapsed() >= Duration::from_micros(99_500));
        let origin = out[0].created_ns - 4 * 500_000;
        assert!(origin >= first_poll_ns);
        for item in &out {
            let Position::Generated { event } = item.position else { unreachable!() };
            let scheduled = origin + event * 500_000;
            assert!(item.created_ns.abs_diff(scheduled) <= 1, "event {event}: {} vs {scheduled}", item.created_ns);
        }
    }

    #[test]
    fn a_paced_source_is_idle_when_nothing_is_due_within_the_timeout() {
        // 1 event/s: event 0 (a person) is due at once, event 50 (the next person) after 50 s.
        let mut s = NexmarkSource::new(NexmarkTable::Person, None, Some(1.0), 3).unwrap();
        let mut out = Vec::new();
        assert_eq!(s.poll(&mut out, 10, Duration::from_millis(10)).unwrap(), Poll::Data);
        assert_eq!(out.len(), 1);
        let started = Instant::now();
        assert_eq!(s.poll(&mut out, 10, Duration::from_millis(30)).unwrap(), Poll::Idle);
        assert!(started.elapsed() >= Duration::from_millis(30));
        assert_eq!(out.len(), 1);
    }

    #[test]
    fn unpaced_records_are_stamped_with_the_poll_time() {
        let mut s = NexmarkSource::new(NexmarkTable::Bid, Some(100), None, 3).unwrap();
        let before = monotonic_ns();
        let mut out = Vec::new();
        s.poll(&mut out, 1000, Duration::ZERO).unwrap();
        let after = monotonic_ns();
        assert!(out.iter().all(|i| (before..=after).contains(&i.created_ns)));
    }

    #[test]
    fn a_bad_rate_is_refused() {
        for bad in [0.0, -1.0, f64::NAN, f64::INFINITY] {
            let err = NexmarkSource::new(NexmarkTable::Bid, None, Some(bad), 1).unwrap_err();
            assert!(err.to_string().contains("rate"), "{err}");
        }
    }
}
