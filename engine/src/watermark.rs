//! Watermark tracking (SEMANTICS.md "Watermark"): `W = max(event time seen) - delay`; it never
//! moves back and starts below every timestamp ([`Timestamp::MIN`]), so nothing is late before
//! the first record. Named difference from Spark, which starts W at the Unix epoch.
//!
//! Micro-batch mode (as Spark): the W used in batch N (eviction) is computed from the batches
//! before N; late input of batch N is judged against the W of batch N-1 ([`BatchWatermarks`]).
//! Real-time mode: W advances with every record; a record is judged against W as it stood when it
//! arrived (before its own event time is counted).

use crate::time::{Duration, Timestamp};

/// Tracks `max(event time) - delay`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct WatermarkTracker {
    delay: Duration,
    max_event_time: Option<Timestamp>,
}

impl WatermarkTracker {
    /// A tracker with this delay (>= 0), before any record.
    pub fn new(delay: Duration) -> WatermarkTracker {
        WatermarkTracker { delay, max_event_time: None }
    }

    /// Counts one event time (late records too: they cannot raise the maximum).
    #[inline]
    pub fn observe(&mut self, t: Timestamp) {
        if self.max_event_time.is_none_or(|m| t > m) {
            self.max_event_time = Some(t);
        }
    }

    /// [`WatermarkTracker::observe`], telling whether the largest event time rose (only
    /// then can [`WatermarkTracker::current`] have moved).
    #[inline]
    pub fn observe_rises(&mut self, t: Timestamp) -> bool {
        let rises = self.max_event_time.is_none_or(|m| t > m);
        if rises {
            self.max_event_time = Some(t);
        }
        rises
    }

    /// The current watermark; [`Timestamp::MIN`] before the first record.
    #[inline]
    pub fn current(&self) -> Timestamp {
        self.max_event_time.map_or(Timestamp::MIN, |m| m.saturating_sub(self.delay))
    }

    /// Counts every event time `other` has seen (restoring several partitions' snapshots).
    pub fn merge(&mut self, other: &WatermarkTracker) {
        if let Some(t) = other.max_event_time {
            self.observe(t);
        }
    }

    /// The delay.
    pub fn delay(&self) -> Duration {
        self.delay
    }

    /// The largest event time seen.
    pub fn max_event_time(&self) -> Option<Timestamp> {
        self.max_event_time
    }
}

/// The two watermarks of one micro-batch, as Spark uses them (SPARK-40925 split them):
/// `late` judges input (the watermark of the previous batch), `evict` finalises and evicts state
/// (the watermark computed from every batch before this one).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct BatchWatermarks {
    /// Watermark for late input: the previous batch's eviction watermark.
    pub late: Timestamp,
    /// Watermark for eviction and finalisation in this batch.
    pub evict: Timestamp,
}

impl BatchWatermarks {
    /// Before any batch: nothing is late, nothing is evicted.
    pub const INITIAL: BatchWatermarks = BatchWatermarks { late: Timestamp::MIN, evict: Timestamp::MIN };

    /// The watermarks of the next batch, given the tracker after this batch's input.
    pub fn next(self, tracker: &WatermarkTracker) -> BatchWatermarks {
        BatchWatermarks { late: self.evict, evict: tracker.current().max(self.evict) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn watermark_never_moves_back_and_starts_below_everything() {
        let mut w = WatermarkTracker::new(Duration::from_secs(10));
        assert_eq!(w.current(), Timestamp::MIN);
        w.observe(Timestamp(-5_000_000_000));
        assert_eq!(w.current(), Timestamp(-5_010_000_000));
        w.observe(Timestamp(20_000_000));
        w.observe(Timestamp(1_000_000));
        assert_eq!(w.current(), Timestamp(10_000_000));
    }

    #[test]
    fn batch_watermarks_lag_one_batch_for_late_input() {
        let mut w = WatermarkTracker::new(Duration::ZERO);
        let b0 = BatchWatermarks::INITIAL;
        w.observe(Timestamp(10));
        let b1 = b0.next(&w);
        assert_eq!(b1, BatchWatermarks { late: Timestamp::MIN, evict: Timestamp(10) });
        w.observe(Timestamp(11));
        let b2 = b1.next(&w);
        assert_eq!(b2, BatchWatermarks { late: Timestamp(10), evict: Timestamp(11) });
    }
}
