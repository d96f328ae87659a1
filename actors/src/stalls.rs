//! The stall tracer (issue 28): each record's service time on the thread that does its work,
//! and the slowest records with what they waited on.
//!
//! A record's *service time* runs from the end of the previous record's work to the end of its
//! own, on the partition's thread (chained at parallelism 1: the source's thread): the timers
//! due before it, its steps and operator, and, for the last record of a data message, the
//! sink's write of the message's rows (the hand-over to the sink). The work between messages
//! (a barrier, a watermark, a tick, timers fired by the wall clock, a peer's rows across the
//! exchange) is traced as an item of its own, labelled by kind, not as a record's. One clock
//! read per record, and one read of the thread's CPU time per message (to tell a record whose thread waited for a core from one the
//! engine made slow: its message took more wall time than CPU time), so it is cheap enough to
//! leave on, but off by default ([`crate::RunOptions::trace_stalls`], `eddy run --trace-stalls`).
//!
//! Causes come from the engine's notes ([`eddy_engine::stall`]): a key table or buffer grown by
//! copying, a timer queue rebuilt, a burst of timers, a barrier, the sink's write, or the thread
//! descheduled. An item over the threshold with no note is `unattributed` (an allocation, a page
//! fault, a cache-cold path).
//!
//! What it publishes: per partition actor, [`crate::metrics::RECORD_SERVICE`] (a uniform sample
//! of records' service times) and [`crate::metrics::SLOW_RECORDS`] (items over the threshold, per
//! cause); at the end, the slowest items ([`StallReport`], in [`crate::RunSummary::stalls`]), which
//! `eddy run` logs.

use std::time::{Duration, Instant};

use eddy_engine::stall::{self, Cause, Causes};

use crate::metrics::PartitionMetrics;

/// How many of the slowest items a tracer keeps.
pub const SLOWEST_KEPT: usize = 16;

/// Records whose service time goes to [`crate::metrics::RECORD_SERVICE`]: one in this many.
const SAMPLE_EVERY: u64 = 4;

/// What a traced item was.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ItemKind {
    /// An input record (with the sink's write of its message's rows when it was the last).
    Record,
    /// Work between messages: a barrier, a watermark, a tick or timers on the wall clock.
    Control(&'static str),
}

/// One slow item.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SlowItem {
    /// Its service time, in ns.
    pub service_ns: u64,
    /// Record or control work.
    pub kind: ItemKind,
    /// What the engine noted during it.
    pub causes: Causes,
    /// The partition actor.
    pub partition: usize,
    /// Records the partition actor had processed before it (where in the run it came).
    pub after_records: u64,
}

/// What a tracer saw: the slowest items, slowest first, and the service-time distribution of
/// the records (ns).
#[derive(Clone, Debug, Default)]
pub struct StallReport {
    /// Records traced.
    pub records: u64,
    /// Items (records or control work) over the threshold.
    pub over_threshold: u64,
    /// The slowest items, slowest first (at most [`SLOWEST_KEPT`] per partition actor).
    pub slowest: Vec<SlowItem>,
    /// The slowest items whose thread was on a core (not [`Cause::Descheduled`]): the engine's
    /// own stalls, slowest first (at most [`SLOWEST_KEPT`] per partition actor). On a loaded
    /// machine the waits for a core fill `slowest`; these remain.
    pub slowest_on_core: Vec<SlowItem>,
    /// Records' service time at p50, p99, p99.9 and the maximum, in ns (0 when none).
    pub quantiles_ns: [u64; 4],
}

impl StallReport {
    /// Merges the report of another partition actor into this one.
    pub fn merge(&mut self, other: StallReport) {
        self.records += other.records;
        self.over_threshold += other.over_threshold;
        self.slowest.extend(other.slowest);
        self.slowest.sort_by_key(|s| std::cmp::Reverse(s.service_ns));
        self.slowest_on_core.extend(other.slowest_on_core);
        self.slowest_on_core.sort_by_key(|s| std::cmp::Reverse(s.service_ns));
        for (q, o) in self.quantiles_ns.iter_mut().zip(other.quantiles_ns) {
            *q = (*q).max(o);
        }
    }
}

/// The tracer of one partition actor (see the module documentation).
#[derive(Debug)]
pub struct StallTracer {
    partition: usize,
    threshold_ns: u64,
    /// The end of the last item's work.
    mark: Instant,
    /// The start of the current message, and the thread's CPU time then (ns).
    message: (Instant, u64),
    /// The last record of the current message, not yet committed: the sink's write is added to it.
    pending: Option<(u64, Causes)>,
    records: u64,
    over: u64,
    slowest: Vec<SlowItem>,
    slowest_on_core: Vec<SlowItem>,
    /// `None` only if the histogram could not be made (never with these bounds).
    histogram: Option<hdrhistogram::Histogram<u64>>,
    metrics: PartitionMetrics,
    enabled_metrics: bool,
}

impl StallTracer {
    /// A tracer for partition actor `partition` reporting items slower than `threshold`;
    /// `metrics_on`: whether `metrics` records (a run with `[metrics]`).
    pub fn new(partition: usize, threshold: Duration, metrics: PartitionMetrics, metrics_on: bool) -> StallTracer {
        StallTracer {
            partition,
            threshold_ns: threshold.as_nanos().min(u64::MAX as u128) as u64,
            mark: Instant::now(),
            message: (Instant::now(), thread_cpu_ns()),
            pending: None,
            records: 0,
            over: 0,
            slowest: Vec::with_capacity(SLOWEST_KEPT + 1),
            slowest_on_core: Vec::with_capacity(SLOWEST_KEPT + 1),
            // 1 ns to 1 hour, 2 significant figures: a few KiB, allocated once.
            histogram: hdrhistogram::Histogram::new_with_bounds(1, 3_600_000_000_000, 2).ok(),
            metrics,
            enabled_metrics: metrics_on,
        }
    }

    /// A message starts: what ran since the last item (waiting for input) is nobody's.
    #[inline]
    pub fn begin_message(&mut self) {
        self.commit_pending();
        self.mark = Instant::now();
        self.message = (self.mark, thread_cpu_ns());
        stall::take();
    }

    /// A record's work ended.
    #[inline]
    pub fn record_done(&mut self) {
        self.commit_pending();
        let now = Instant::now();
        let ns = now.duration_since(self.mark).as_nanos() as u64;
        self.mark = now;
        self.pending = Some((ns, stall::take()));
    }

    /// The message's rows were handed to the sink: the write's time goes to its last record.
    #[inline]
    pub fn flushed(&mut self) {
        let now = Instant::now();
        let ns = now.duration_since(self.mark).as_nanos() as u64;
        self.mark = now;
        match self.pending.as_mut() {
            Some((service, causes)) => {
                *service += ns;
                *causes = causes.union(stall::take());
            }
            None => {
                let causes = stall::take();
                self.item(ns, ItemKind::Control("sink write"), causes);
            }
        }
        self.commit_pending();
    }

    /// Control work of `kind` (a barrier, ...) ended; it started at the message's start.
    pub fn control_done(&mut self, kind: &'static str) {
        self.commit_pending();
        let now = Instant::now();
        let ns = now.duration_since(self.mark).as_nanos() as u64;
        self.mark = now;
        let causes = stall::take();
        self.item(ns, ItemKind::Control(kind), causes);
    }

    fn commit_pending(&mut self) {
        if let Some((ns, causes)) = self.pending.take() {
            if let Some(h) = self.histogram.as_mut() {
                // Only a value above the bounds fails; it is clamped to them.
                let _ = h.record(ns.clamp(1, h.high()));
            }
            if self.enabled_metrics && self.records.is_multiple_of(SAMPLE_EVERY) {
                self.metrics.record_service.record(ns as f64 / 1e9);
            }
            self.item(ns, ItemKind::Record, causes);
            self.records += 1;
        }
    }

    fn item(&mut self, ns: u64, kind: ItemKind, mut causes: Causes) {
        if ns < self.threshold_ns {
            return;
        }
        // The thread waited for a core during its message for at least half the threshold.
        let (start, cpu) = self.message;
        let off_core = (start.elapsed().as_nanos() as u64).saturating_sub(thread_cpu_ns().saturating_sub(cpu));
        if off_core >= self.threshold_ns / 2 {
            causes = causes.with(Cause::Descheduled);
        }
        self.over += 1;
        if self.enabled_metrics {
            match causes.iter().next() {
                None => self.metrics.slow_records[Cause::ALL.len()].increment(1),
                Some(_) => {
                    for c in causes.iter() {
                        let i = Cause::ALL.iter().position(|&a| a == c).unwrap_or(Cause::ALL.len());
                        self.metrics.slow_records[i].increment(1);
                    }
                }
            }
        }
        let item = SlowItem { service_ns: ns, kind, causes, partition: self.partition, after_records: self.records };
        if !causes.contains(Cause::Descheduled) {
            keep_slowest(&mut self.slowest_on_core, item.clone());
        }
        keep_slowest(&mut self.slowest, item);
    }

    /// What the tracer saw.
    pub fn report(mut self) -> StallReport {
        self.commit_pending();
        let q = |p: f64| self.histogram.as_ref().filter(|h| !h.is_empty()).map_or(0, |h| h.value_at_quantile(p));
        let max = self.histogram.as_ref().map_or(0, |h| h.max());
        StallReport {
            records: self.records,
            over_threshold: self.over,
            quantiles_ns: [q(0.5), q(0.99), q(0.999), max],
            slowest: self.slowest,
            slowest_on_core: self.slowest_on_core,
        }
    }
}

/// Inserts `item` into `list` (slowest first) if it is among the [`SLOWEST_KEPT`] slowest.
fn keep_slowest(list: &mut Vec<SlowItem>, item: SlowItem) {
    if list.len() >= SLOWEST_KEPT && list.last().is_some_and(|l| l.service_ns >= item.service_ns) {
        return;
    }
    let at = list.partition_point(|s| s.service_ns >= item.service_ns);
    list.insert(at, item);
    list.truncate(SLOWEST_KEPT);
}

/// The calling thread's CPU time, in ns.
fn thread_cpu_ns() -> u64 {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::ThreadCPUTime);
    (t.tv_sec as u64).saturating_mul(1_000_000_000).saturating_add(t.tv_nsec as u64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::Metrics;

    /// Busy for `d` on this thread (on a core, not asleep, so not descheduled on a quiet core).
    fn spin(d: Duration) {
        let start = Instant::now();
        while start.elapsed() < d {
            std::hint::spin_loop();
        }
    }

    #[test]
    fn a_slow_record_is_kept_with_the_causes_noted_during_it() {
        let metrics = Metrics::disabled(1).partitions[0].clone();
        let mut t = StallTracer::new(0, Duration::from_micros(500), metrics, false);
        t.begin_message();
        for _ in 0..100 {
            t.record_done();
        }
        stall::note(Cause::TableGrowth);
        spin(Duration::from_millis(3));
        t.record_done();
        t.record_done();
        t.flushed();
        t.begin_message();
        stall::note(Cause::Barrier);
        spin(Duration::from_millis(2));
        t.control_done("barrier");
        let r = t.report();
        assert_eq!(r.records, 102);
        // (at least: on a loaded machine a fast record may wait for a core too)
        assert!(r.over_threshold >= 2, "{:?}", r.slowest);
        let record = r
            .slowest
            .iter()
            .find(|s| s.kind == ItemKind::Record && s.causes.contains(Cause::TableGrowth))
            .expect("the slow record");
        assert!(record.service_ns >= 3_000_000, "{record:?}");
        assert!(record.causes.contains(Cause::TableGrowth), "{record:?}");
        assert!(!record.causes.contains(Cause::Barrier), "the barrier came later: {record:?}");
        assert_eq!(record.after_records, 100);
        let barrier = r.slowest.iter().find(|s| s.kind == ItemKind::Control("barrier")).expect("the barrier");
        assert!(barrier.causes.contains(Cause::Barrier) && !barrier.causes.contains(Cause::TableGrowth));
        assert!(r.quantiles_ns[3] >= 3_000_000 && r.quantiles_ns[0] < 3_000_000, "{:?}", r.quantiles_ns);
    }

    #[test]
    fn the_sink_write_counts_into_the_last_record_of_its_message() {
        let metrics = Metrics::disabled(1).partitions[0].clone();
        let mut t = StallTracer::new(0, Duration::from_micros(500), metrics, false);
        t.begin_message();
        t.record_done();
        stall::note(Cause::SinkWrite);
        spin(Duration::from_millis(2));
        t.flushed();
        let r = t.report();
        assert_eq!((r.records, r.over_threshold), (1, 1));
        assert_eq!(r.slowest[0].kind, ItemKind::Record);
        assert!(r.slowest[0].service_ns >= 2_000_000);
        assert!(r.slowest[0].causes.contains(Cause::SinkWrite), "{:?}", r.slowest[0]);
    }

    #[test]
    fn reports_merge_slowest_first() {
        let item = |ns| SlowItem {
            service_ns: ns,
            kind: ItemKind::Record,
            causes: Causes::NONE,
            partition: 0,
            after_records: 0,
        };
        let mut a =
            StallReport { records: 2, over_threshold: 2, slowest: vec![item(9), item(3)], ..StallReport::default() };
        let b = StallReport { records: 1, over_threshold: 1, slowest: vec![item(5)], ..StallReport::default() };
        a.merge(b);
        assert_eq!((a.records, a.over_threshold), (3, 3));
        assert_eq!(a.slowest.iter().map(|s| s.service_ns).collect::<Vec<_>>(), vec![9, 5, 3]);
    }
}
