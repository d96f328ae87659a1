//! The pipeline watermark of several sources (SEMANTICS.md "Several sources (union)"): each
//! source has its own [`WatermarkTracker`] (or none); the pipeline's watermark is the minimum
//! over the sources that have one (Spark's default `spark.sql.streaming.multipleWatermarkPolicy
//! = min`), or the maximum ([`WatermarkPolicy::Max`]), and never moves back (as Spark's global
//! watermark).
//!
//! A source that has delivered no record yet sits at [`Timestamp::MIN`], so it holds the minimum
//! back (Spark puts such a source at the Unix epoch; the difference shows only for event times
//! before 1970, as for one source, see [`crate::watermark`]). Beyond Spark: a source with an
//! `idle_timeout` that has delivered nothing for that long of processing time (since its last
//! record, or since the first instant the pipeline saw when it never delivered) is left out of
//! the combination until it delivers again; when every source with a watermark is left out, the
//! pipeline watermark stays where it is.
//!
//! With one source and no `idle_timeout` this is exactly that source's tracker.

use crate::time::{Duration, Timestamp};
use crate::value::Record;
use crate::watermark::WatermarkTracker;

/// How the watermarks of several sources combine: PIPELINE.md `watermark_policy`, Spark's
/// `spark.sql.streaming.multipleWatermarkPolicy`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum WatermarkPolicy {
    /// `"min"` (the default): the slowest source decides; nothing of any source is dropped
    /// before every source has passed it.
    #[default]
    Min,
    /// `"max"`: the fastest source decides; records of the slower ones may be late.
    Max,
}

/// One source's part of the pipeline watermark.
#[derive(Debug, Clone)]
pub struct SourceWatermark {
    /// Its watermark: the event-time column (index in the records it delivers) and tracker.
    pub watermark: Option<(usize, WatermarkTracker)>,
    /// `idle_timeout`: left out of the combination after this long without a record.
    pub idle_timeout: Option<Duration>,
    /// Processing time of its last record (`None`: none yet).
    pub last_record: Option<Timestamp>,
}

impl SourceWatermark {
    /// A source with this watermark (column, tracker) and `idle_timeout`, that delivered nothing.
    pub fn new(watermark: Option<(usize, WatermarkTracker)>, idle_timeout: Option<Duration>) -> SourceWatermark {
        SourceWatermark { watermark, idle_timeout, last_record: None }
    }

    /// Whether it is left out at processing time `now`, the pipeline's clock having started at
    /// `start`.
    fn idle(&self, now: Timestamp, start: Option<Timestamp>) -> bool {
        let Some(timeout) = self.idle_timeout else { return false };
        match self.last_record.or(start) {
            Some(since) => now != Timestamp::MIN && now.0.saturating_sub(since.0) >= timeout.0,
            None => false,
        }
    }
}

/// The watermark of every source of a pipeline, combined (see the module documentation).
#[derive(Debug, Clone)]
pub struct UnionWatermark {
    policy: WatermarkPolicy,
    sources: Vec<SourceWatermark>,
    /// The first processing time seen (idle sources that never delivered count from here).
    start: Option<Timestamp>,
    combined: Timestamp,
    /// One source without `idle_timeout`: the combination is that source's own watermark, kept
    /// monotone ([`UnionWatermark::stamp`] takes a short path, no loop over the sources).
    single: bool,
}

impl UnionWatermark {
    /// The watermark of `sources` (in the pipeline's source order) under `policy`.
    pub fn new(sources: Vec<SourceWatermark>, policy: WatermarkPolicy) -> UnionWatermark {
        let single = sources.len() == 1 && sources[0].idle_timeout.is_none();
        UnionWatermark { policy, sources, start: None, combined: Timestamp::MIN, single }
    }

    /// One source with this watermark (column, tracker) and no `idle_timeout`.
    pub fn single(watermark: Option<(usize, WatermarkTracker)>) -> UnionWatermark {
        UnionWatermark::new(vec![SourceWatermark::new(watermark, None)], WatermarkPolicy::Min)
    }

    /// Whether any source has a watermark.
    pub fn is_some(&self) -> bool {
        self.sources.iter().any(|s| s.watermark.is_some())
    }

    /// The sources, in order.
    pub fn sources(&self) -> &[SourceWatermark] {
        &self.sources
    }

    /// Counts a record of source `input` delivered at processing time `now`: its event time (a
    /// NULL one counts nothing) and its delivery (for `idle_timeout`).
    ///
    /// # Panics
    /// When `input` is not a source index or the record is shorter than the event-time column
    /// (records are decoded to their source's schema).
    #[inline]
    pub fn observe(&mut self, input: usize, record: &Record, now: Timestamp) {
        let s = &mut self.sources[input];
        if let Some((c, tr)) = s.watermark.as_mut()
            && let Some(t) = record.values[*c].as_timestamp()
        {
            tr.observe(t);
        }
        if s.idle_timeout.is_some() {
            s.last_record = Some(now);
        }
    }

    /// Counts event time `t` of source `input` (a restored checkpoint's).
    pub fn observe_time(&mut self, input: usize, t: Timestamp) {
        if let Some(s) = self.sources.get_mut(input)
            && let Some((_, tr)) = s.watermark.as_mut()
        {
            tr.observe(t);
        }
    }

    /// The combined watermark at processing time `now` (which decides which sources are idle),
    /// kept: never lower than a value it returned before.
    #[inline]
    pub fn update(&mut self, now: Timestamp) -> Timestamp {
        if self.start.is_none() && now != Timestamp::MIN {
            self.start = Some(now);
        }
        self.combined = self.at(now);
        self.combined
    }

    /// [`UnionWatermark::update`] at processing time `now`, then [`UnionWatermark::observe`] of
    /// `record` of source `input`: the combined watermark as it stood before the record's event
    /// time counted (what a real-time record is stamped with), then the record counted. One
    /// source without `idle_timeout` takes a short path, inlined in the caller's loop (it runs
    /// per record).
    ///
    /// # Panics
    /// As [`UnionWatermark::observe`].
    #[inline(always)]
    pub fn stamp(&mut self, input: usize, record: &Record, now: Timestamp) -> Timestamp {
        if !self.single {
            return self.stamp_several(input, record, now);
        }
        // (`start` is not kept: it only matters to sources with `idle_timeout`)
        if let Some((c, tr)) = self.sources[input].watermark.as_mut() {
            self.combined = self.combined.max(tr.current());
            if let Some(t) = record.values[*c].as_timestamp() {
                tr.observe(t);
            }
        }
        self.combined
    }

    /// [`UnionWatermark::stamp`] of several sources (or one with `idle_timeout`).
    #[inline(never)]
    fn stamp_several(&mut self, input: usize, record: &Record, now: Timestamp) -> Timestamp {
        let watermark = self.update(now);
        self.observe(input, record, now);
        watermark
    }

    /// The combined watermark at processing time `now`, without keeping it (the value
    /// [`UnionWatermark::update`] would return).
    #[inline]
    pub fn at(&self, now: Timestamp) -> Timestamp {
        if self.single {
            // one source: its own watermark (monotone already)
            return match &self.sources[0].watermark {
                Some((_, tr)) => self.combined.max(tr.current()),
                None => self.combined,
            };
        }
        let start = self.start.or((now != Timestamp::MIN).then_some(now));
        let mut chosen: Option<Timestamp> = None;
        for s in &self.sources {
            let Some((_, tr)) = &s.watermark else { continue };
            if s.idle(now, start) {
                continue;
            }
            let w = tr.current();
            chosen = Some(match (chosen, self.policy) {
                (None, _) => w,
                (Some(c), WatermarkPolicy::Min) => c.min(w),
                (Some(c), WatermarkPolicy::Max) => c.max(w),
            });
        }
        chosen.map_or(self.combined, |c| self.combined.max(c))
    }

    /// The combined watermark as last computed by [`UnionWatermark::update`].
    #[inline]
    pub fn current(&self) -> Timestamp {
        self.combined
    }

    /// Restores the combined value of a checkpoint (it never moves back from there).
    pub fn resume_combined(&mut self, combined: Timestamp) {
        self.combined = self.combined.max(combined);
    }

    /// Restores the processing time of source `input`'s last record.
    pub fn resume_last_record(&mut self, input: usize, at: Option<Timestamp>) {
        if let Some(s) = self.sources.get_mut(input) {
            s.last_record = at;
        }
    }

    /// The largest event time source `input` delivered (`None` before any, or without a
    /// watermark).
    pub fn max_event_time(&self, input: usize) -> Option<Timestamp> {
        self.sources.get(input).and_then(|s| s.watermark.as_ref()).and_then(|(_, tr)| tr.max_event_time())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::value::Value;

    fn at(secs: i64) -> Record {
        Record::new(vec![Value::Timestamp(Timestamp(secs * 1_000_000))])
    }

    fn two(policy: WatermarkPolicy, idle: Option<Duration>) -> UnionWatermark {
        let w = || Some((0, WatermarkTracker::new(Duration::ZERO)));
        UnionWatermark::new(vec![SourceWatermark::new(w(), None), SourceWatermark::new(w(), idle)], policy)
    }

    #[test]
    fn stamp_is_update_then_observe() {
        let one = UnionWatermark::single(Some((0, WatermarkTracker::new(Duration::from_secs(2)))));
        let idle = two(WatermarkPolicy::Min, Some(Duration::from_secs(5)));
        let none = UnionWatermark::single(None);
        for start in [one, idle, none] {
            let (mut stamped, mut stepped) = (start.clone(), start);
            let times = [3, 1, 7, 7, 2, 10, 9, 30, 4];
            for (i, secs) in times.into_iter().enumerate() {
                let input = i % stamped.sources().len();
                let now = Timestamp(i as i64 * 1_000_000);
                let expected = stepped.update(now);
                stepped.observe(input, &at(secs), now);
                assert_eq!(stamped.stamp(input, &at(secs), now), expected, "record {i}");
                assert_eq!(stamped.at(now), stepped.at(now), "record {i}");
                assert_eq!(stamped.max_event_time(input), stepped.max_event_time(input));
            }
        }
    }

    #[test]
    fn min_policy_waits_for_the_slowest_source_and_for_a_source_without_records() {
        let mut u = two(WatermarkPolicy::Min, None);
        u.observe(0, &at(10), Timestamp(0));
        assert_eq!(u.update(Timestamp(0)), Timestamp::MIN, "source 1 has delivered nothing");
        u.observe(1, &at(4), Timestamp(0));
        assert_eq!(u.update(Timestamp(0)), Timestamp(4_000_000));
        u.observe(1, &at(2), Timestamp(0));
        assert_eq!(u.update(Timestamp(0)), Timestamp(4_000_000), "never back");
    }

    #[test]
    fn max_policy_follows_the_fastest_source() {
        let mut u = two(WatermarkPolicy::Max, None);
        u.observe(0, &at(10), Timestamp(0));
        assert_eq!(u.update(Timestamp(0)), Timestamp(10_000_000));
        u.observe(1, &at(4), Timestamp(0));
        assert_eq!(u.update(Timestamp(0)), Timestamp(10_000_000));
    }

    #[test]
    fn an_idle_source_is_left_out_of_the_minimum_until_it_delivers_again() {
        let mut u = two(WatermarkPolicy::Min, Some(Duration::from_secs(5)));
        let now = |s: i64| Timestamp(s * 1_000_000);
        u.observe(1, &at(1), now(0));
        u.observe(0, &at(3), now(3));
        assert_eq!(u.update(now(3)), now(1), "source 1 quiet for 3 s of 5");
        u.observe(0, &at(20), now(5));
        assert_eq!(u.update(now(5)), now(20), "source 1 quiet for 5 s: left out");
        u.observe(1, &at(6), now(6));
        assert_eq!(u.update(now(6)), now(20), "it delivers again; the watermark does not move back");
        u.observe(0, &at(30), now(7));
        assert_eq!(u.update(now(7)), now(20), "back in the minimum: 6 s holds it");
    }
}
