//! Window assigners (SEMANTICS.md "Windowed aggregation"): tumbling and sliding windows are
//! half-open `[start, end)`, aligned to `start` from the Unix epoch with floor modulo (correct
//! before 1970); a record belongs to every window that contains it. Session windows span
//! `[t, t + gap)` per record and merge when spans of one key overlap or touch.
//!
//! Source: Spark's `TimeWindowing` rule (`window(col, size, slide, startTime)`) and
//! `session_window(col, gap)` (SPARK-10816).

use crate::time::{Duration, Timestamp, align_down};

/// A half-open window `[start, end)` of event time.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
pub struct Window {
    /// Inclusive start (µs).
    pub start: Timestamp,
    /// Exclusive end (µs).
    pub end: Timestamp,
}

/// Fixed-size windows: tumbling (`slide == size`) or sliding.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SlidingWindows {
    /// Window length (> 0).
    pub size: Duration,
    /// Distance between window starts (> 0, <= size as Spark requires).
    pub slide: Duration,
    /// Offset of window starts from the epoch (Spark's `startTime`).
    pub offset: Duration,
}

impl SlidingWindows {
    /// Tumbling windows of `size` aligned to `offset`.
    pub fn tumbling(size: Duration, offset: Duration) -> SlidingWindows {
        SlidingWindows { size, slide: size, offset }
    }

    /// Whether windows do not overlap (one window per record).
    pub fn is_tumbling(&self) -> bool {
        self.slide == self.size
    }

    /// Calls `f` with every window that contains `t`, in order of increasing start. There are
    /// `ceil(size / slide)` or `floor(size / slide)` of them (when size is not a multiple of
    /// slide, it depends on `t`). Windows whose bounds would overflow i64 are skipped.
    pub fn for_each_window(&self, t: Timestamp, mut f: impl FnMut(Window)) {
        let last_start = align_down(t, self.slide, self.offset);
        // Earliest start s with s + size > t, stepping back by slide from last_start.
        let n_back = (self.size.0 - 1) / self.slide.0; // windows before last_start that may contain t
        let mut start = last_start.0.saturating_sub(n_back.saturating_mul(self.slide.0));
        while start <= last_start.0 {
            if let Some(end) = start.checked_add(self.size.0)
                && end > t.0
                && start <= t.0
            {
                f(Window { start: Timestamp(start), end: Timestamp(end) });
            }
            match start.checked_add(self.slide.0) {
                Some(s) => start = s,
                None => break,
            }
        }
    }

    /// The windows containing `t`, in order (allocating; see [`Self::for_each_window`]).
    pub fn windows_of(&self, t: Timestamp) -> Vec<Window> {
        let mut v = Vec::new();
        self.for_each_window(t, |w| v.push(w));
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(x: i64) -> Timestamp {
        Timestamp(x * 1_000_000)
    }

    #[test]
    fn tumbling_one_window_per_record_also_before_1970() {
        let w = SlidingWindows::tumbling(Duration::from_secs(5), Duration::ZERO);
        assert_eq!(w.windows_of(s(12)), vec![Window { start: s(10), end: s(15) }]);
        assert_eq!(w.windows_of(s(-1)), vec![Window { start: s(-5), end: s(0) }]);
        assert_eq!(w.windows_of(s(15)), vec![Window { start: s(15), end: s(20) }]);
    }

    #[test]
    fn sliding_uneven_gives_three_or_four_windows() {
        // size 10 s, slide 3 s (the shared case sliding-uneven): 19:39:27 falls in 4 windows.
        let w = SlidingWindows { size: Duration::from_secs(10), slide: Duration::from_secs(3), offset: Duration::ZERO };
        for t in -50..50 {
            let ws = w.windows_of(s(t));
            assert!(ws.len() == 3 || ws.len() == 4, "{t}: {ws:?}");
            // brute force: every window start k*3 with start <= t < start+10
            let brute: Vec<_> = (-30..30)
                .map(|k| k * 3)
                .filter(|st| *st <= t && t < st + 10)
                .map(|st| Window { start: s(st), end: s(st + 10) })
                .collect();
            assert_eq!(ws, brute, "{t}");
        }
    }

    #[test]
    fn start_offset_shifts_windows() {
        let w = SlidingWindows {
            size: Duration::from_secs(10),
            slide: Duration::from_secs(5),
            offset: Duration::from_secs(2),
        };
        assert_eq!(w.windows_of(s(13)), vec![Window { start: s(7), end: s(17) }, Window { start: s(12), end: s(22) }]);
    }
}
