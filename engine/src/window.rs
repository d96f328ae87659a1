//! Window assigners (SEMANTICS.md "Windowed aggregation"): tumbling and sliding windows are
//! half-open `[start, end)`, aligned to `start` from the Unix epoch with floor modulo (correct
//! before 1970); a record belongs to every window that contains it. Session windows span
//! `[t, t + gap)` per record and merge when spans of one key overlap or touch.
//!
//! Source: Spark's `TimeWindowing` rule (`window(col, size, slide, startTime)`) and
//! `session_window(col, gap)` (SPARK-10816).

use crate::time::{Duration, Timestamp, align_down_exact};

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
    /// slide, it depends on `t`), fewer at the ends of time, where bounds are saturated as
    /// [`PaneGrid`] documents: a start before `i64::MIN` is `Timestamp::MIN`, and of the windows
    /// whose end would pass `i64::MAX` only the first is kept, with end `Timestamp::MAX`.
    pub fn for_each_window(&self, t: Timestamp, mut f: impl FnMut(Window)) {
        // (in i128: near either end of time the aligned starts lie outside i64)
        let last_start = align_down_exact(t, self.slide, self.offset);
        let (size, slide, t) = (i128::from(self.size.0), i128::from(self.slide.0.max(1)), i128::from(t.0));
        // Earliest start s with s + size > t, stepping back by slide from last_start.
        let n_back = (size - 1).max(0) / slide; // windows before last_start that may contain t
        let mut start = last_start - n_back * slide;
        let (min, max) = (i128::from(i64::MIN), i128::from(i64::MAX));
        while start <= last_start {
            let end = start + size;
            if (end > t || end >= max) && start <= t {
                let clamp = |x: i128| x.clamp(min, max) as i64;
                f(Window { start: Timestamp(clamp(start)), end: Timestamp(clamp(end)) });
                if end >= max {
                    break; // the window at the end of time
                }
            }
            start += slide;
        }
    }

    /// The windows containing `t`, in order (allocating; see [`Self::for_each_window`]).
    pub fn windows_of(&self, t: Timestamp) -> Vec<Window> {
        let mut v = Vec::new();
        self.for_each_window(t, |w| v.push(w));
        v
    }
}

/// The pane layout of fixed windows: windows of `size` every `slide` (offset `offset`) cut event
/// time into panes of `gcd(size, slide)`, aligned like the windows, so that every window is a
/// union of whole panes and a record falls in exactly one pane. An operator updates one pane per
/// record and assembles a window by merging its `size / pane` panes when it emits it (the
/// classic pane technique of Li et al., "No pane, no gain", SIGMOD Record 2005).
///
/// All instants are µs; windows are half-open `[end - size, end)`.
///
/// Windows at the ends of time are saturated, never dropped (so that no record is judged late
/// because a bound does not fit in i64; SEMANTICS.md "nothing is late before the first record"):
/// - a window or pane whose start would be before `i64::MIN` starts at `i64::MIN` (its end, and
///   so its identity, is unchanged);
/// - the first window whose end would be `>= i64::MAX` ends at `i64::MAX` and holds `i64::MAX`
///   too: the window at the end of time, `[window_start(i64::MAX), i64::MAX]`. The windows after
///   it (later starts, ends past `i64::MAX` as well) are not kept: every record they would hold
///   is in it. Its start is that of the unsaturated window ([`Self::window_start`]).
///
/// No watermark passes the window at the end of time: operators never finalise it (see
/// `WindowAggregate`: it is never emitted in append mode, and no record is late for it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PaneGrid {
    size: i64,
    slide: i64,
    pane: i64,
    /// Offset of pane starts, in `[0, pane)`.
    pane_offset: i64,
    /// Offset of window starts, in `[0, slide)`.
    start_offset: i64,
    /// Offset of window ends, in `[0, slide)`.
    end_offset: i64,
}

/// `gcd(a, b)` for `a, b > 0`.
fn gcd(mut a: i64, mut b: i64) -> i64 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

/// The largest `y <= x` with `y = off (mod step)`, for `step > 0` and `off` in `[0, step)`
/// (in i128: it may lie below `i64::MIN`).
#[inline]
fn floor_to(x: i64, step: i64, off: i64) -> i128 {
    match x.checked_sub(off) {
        Some(d) => i128::from(x) - i128::from(d.rem_euclid(step)),
        None => x as i128 - (x as i128 - off as i128).rem_euclid(step as i128),
    }
}

/// `x` within i64.
#[inline]
fn saturate(x: i128) -> i64 {
    x.clamp(i128::from(i64::MIN), i128::from(i64::MAX)) as i64
}

impl PaneGrid {
    /// The panes of `w` (size and slide > 0).
    ///
    /// # Panics
    /// When `size` or `slide` is not positive (the pipeline validation refuses them).
    pub fn new(w: &SlidingWindows) -> PaneGrid {
        let (size, slide, offset) = (w.size.0, w.slide.0, w.offset.0 as i128);
        assert!(size > 0 && slide > 0, "window size and slide must be > 0, got {w:?}");
        let pane = gcd(size, slide);
        let norm = |o: i128, step: i64| o.rem_euclid(step as i128) as i64;
        PaneGrid {
            size,
            slide,
            pane,
            pane_offset: norm(offset, pane),
            start_offset: norm(offset, slide),
            end_offset: norm(offset + size as i128, slide),
        }
    }

    /// Window length (µs).
    pub fn size(&self) -> i64 {
        self.size
    }

    /// Distance between window starts (µs).
    pub fn slide(&self) -> i64 {
        self.slide
    }

    /// Pane length, `gcd(size, slide)` (µs).
    pub fn pane(&self) -> i64 {
        self.pane
    }

    /// Whether a window is exactly one pane (tumbling windows).
    pub fn is_tumbling(&self) -> bool {
        self.pane == self.size
    }

    /// The start of the pane `[start, start + pane)` holding `t`, `i64::MIN` when it would be
    /// before it.
    #[inline]
    pub fn pane_start(&self, t: i64) -> i64 {
        saturate(floor_to(t, self.pane, self.pane_offset))
    }

    /// The end of the last window (largest start) holding `t`, saturated at `i64::MAX`: the
    /// windows holding `t` are those with an end in `(t, last_end(t)]`. When it is `<= t`, no
    /// window holds `t` (only possible with `slide > size`, which validation refuses). For a
    /// pane start saturated at `i64::MIN` it is that of the unsaturated one (window starts lie
    /// on the pane grid, so none lies between the two).
    #[inline]
    pub fn last_end(&self, t: i64) -> i64 {
        saturate(floor_to(t, self.slide, self.start_offset) + i128::from(self.size))
    }

    /// The smallest window end `> x`, saturated at `i64::MAX` (the window at the end of time,
    /// which holds `i64::MAX` too: the answer for `x == i64::MAX`).
    #[inline]
    pub fn first_end_after(&self, x: i64) -> i64 {
        saturate(floor_to(x, self.slide, self.end_offset) + i128::from(self.slide))
    }

    /// The window end after `end` (`end + slide`, saturated at `i64::MAX`); `None` after
    /// `i64::MAX`.
    #[inline]
    pub fn next_end(&self, end: i64) -> Option<i64> {
        (end < i64::MAX).then(|| end.saturating_add(self.slide))
    }

    /// The window end before `end` (`None` before `i64::MIN`): for the window at the end of
    /// time, the end of the window before the unsaturated one.
    #[inline]
    pub fn prev_end(&self, end: i64) -> Option<i64> {
        i64::try_from(self.unsaturated_end(end) - i128::from(self.slide)).ok()
    }

    /// The start of the window ending at `end`: `end - size`, saturated at `i64::MIN`; for the
    /// window at the end of time (`end == i64::MAX`), that of the first window whose end is
    /// `>= i64::MAX`.
    #[inline]
    pub fn window_start(&self, end: i64) -> i64 {
        saturate(self.unsaturated_end(end) - i128::from(self.size))
    }

    /// Whether the window ending at `end` holds the pane starting at `pane_start`.
    #[inline]
    pub fn holds_pane(&self, end: i64, pane_start: i64) -> bool {
        self.window_start(end) <= pane_start && (pane_start < end || end == i64::MAX)
    }

    /// `end` before saturation: for `i64::MAX`, the first window end `>= i64::MAX`.
    #[inline]
    fn unsaturated_end(&self, end: i64) -> i128 {
        if end == i64::MAX {
            floor_to(i64::MAX - 1, self.slide, self.end_offset) + i128::from(self.slide)
        } else {
            i128::from(end)
        }
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
        // at the ends of time, only windows whose bounds fit in i64
        let sliding = SlidingWindows { size: Duration(10), slide: Duration(5), offset: Duration(0) };
        let first = i64::MIN + 8 - (i64::MIN + 8).rem_euclid(5);
        assert!(sliding.windows_of(Timestamp(i64::MIN + 2)).iter().all(|w| w.start.0 <= i64::MIN + 2));
        assert_eq!(
            sliding.windows_of(Timestamp(i64::MIN + 8)).last(),
            Some(&Window { start: Timestamp(first), end: Timestamp(first + 10) })
        );
        // i64::MAX = 2 (mod 5): windows from MAX - 7 and MAX - 2 hold it, the first kept, saturated
        assert_eq!(
            sliding.windows_of(Timestamp(i64::MAX)),
            vec![Window { start: Timestamp(i64::MAX - 7), end: Timestamp::MAX }]
        );
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

    #[test]
    fn panes_tile_windows_and_grid_ends_match_the_assigner() {
        // Brute force against `for_each_window` for even, uneven and offset grids, before and
        // after 1970.
        for (size, slide, off) in [(10, 10, 0), (10, 2, 0), (10, 3, 0), (10, 3, 2), (10, 4, -3), (6, 4, 1)] {
            let w = SlidingWindows { size: Duration(size), slide: Duration(slide), offset: Duration(off) };
            let g = PaneGrid::new(&w);
            assert_eq!(g.pane(), (1..=slide).rev().find(|p| size % p == 0 && slide % p == 0).unwrap_or(1));
            for t in -40..40 {
                let ws = w.windows_of(Timestamp(t));
                let ends: Vec<i64> = ws.iter().map(|x| x.end.0).collect();
                assert_eq!(Some(g.last_end(t)), ends.last().copied(), "{w:?} t={t}");
                assert_eq!(Some(g.first_end_after(t)), ends.first().copied(), "{w:?} t={t}");
                let ps = g.pane_start(t);
                assert!(ps <= t && t < ps + g.pane(), "{w:?} t={t} pane {ps}");
                // every window holding t holds its whole pane
                for x in &ws {
                    assert!(x.start.0 <= ps && ps + g.pane() <= x.end.0, "{w:?} t={t} pane {ps} {x:?}");
                }
            }
        }
    }

    #[test]
    fn pane_grid_saturates_windows_at_the_ends_of_time() {
        // size 10, slide 3, offset 2: i64::MIN = 1 (mod 3), so starts are = 2 (mod 3)
        let w = SlidingWindows { size: Duration(10), slide: Duration(3), offset: Duration(2) };
        let g = PaneGrid::new(&w);
        assert_eq!(g.pane_start(i64::MIN + 1), i64::MIN + 1, "panes of gcd(10, 3) = 1");
        assert_eq!(g.first_end_after(i64::MIN), i64::MIN + 2, "window [MIN - 8, MIN + 2)");
        assert_eq!(g.last_end(i64::MIN), i64::MIN + 8, "window [MIN - 2, MIN + 8)");
        assert_eq!(g.window_start(i64::MIN + 2), i64::MIN);
        // i64::MAX = 1 (mod 3): windows end at = 0 (mod 3); MAX - 1 is the last end below it
        assert_eq!(g.last_end(i64::MAX), i64::MAX);
        assert_eq!(g.first_end_after(i64::MAX - 1), i64::MAX, "the end of MAX - 1's first window, MAX + 2");
        assert_eq!(g.first_end_after(i64::MAX), i64::MAX, "the window at the end of time holds MAX");
        assert_eq!(g.next_end(i64::MAX - 1), Some(i64::MAX));
        assert_eq!(g.next_end(i64::MAX), None);
        assert_eq!(g.window_start(i64::MAX), i64::MAX - 8);
        assert_eq!(g.prev_end(i64::MAX), Some(i64::MAX - 1));
        // against the assigner
        for t in [i64::MIN, i64::MIN + 1, i64::MIN + 5, i64::MAX - 12, i64::MAX - 4, i64::MAX - 1, i64::MAX] {
            let ends: Vec<i64> = w.windows_of(Timestamp(t)).iter().map(|x| x.end.0).collect();
            assert_eq!(ends.first(), Some(&g.first_end_after(t)), "t={t}");
            assert_eq!(ends.last(), Some(&g.last_end(t)), "t={t}");
            for x in w.windows_of(Timestamp(t)) {
                assert_eq!(g.window_start(x.end.0), x.start.0, "t={t}");
            }
        }
    }

    #[test]
    fn windows_past_either_end_of_time_are_saturated_not_dropped() {
        // 1-minute tumbling windows; ±9223372036854775 ms (years 294247 and -290308)
        let w = SlidingWindows::tumbling(Duration::from_secs(60), Duration::ZERO);
        let (hi, lo) = (9_223_372_036_854_775_000, -9_223_372_036_854_775_000);
        let hi_start = 9_223_372_036_800_000_000; // 153722867280 minutes
        assert_eq!(w.windows_of(Timestamp(hi)), vec![Window { start: Timestamp(hi_start), end: Timestamp::MAX }]);
        assert_eq!(w.windows_of(Timestamp(lo)), vec![Window { start: Timestamp::MIN, end: Timestamp(-hi_start) }]);
        let g = PaneGrid::new(&w);
        assert_eq!((g.pane_start(hi), g.last_end(hi)), (hi_start, i64::MAX));
        assert_eq!((g.pane_start(lo), g.last_end(lo)), (i64::MIN, -hi_start));
        assert_eq!(g.window_start(i64::MAX), hi_start);
    }
}
