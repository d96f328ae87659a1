//! The machine's latency floor: what an open-loop latency run measures with no engine at all.
//!
//! The same pacing as the paced Nexmark source ([`wait_until`]: sleep, then yield the core through the
//! last 200 µs) at the same rate, and the same clock ([`monotonic_ns`]); latency counts from
//! each record's scheduled instant, as the engine's does (coordinated omission accounted for).
//! Two paths:
//!
//! - **1 thread**: the pacing thread alone records how late it reached each scheduled instant:
//!   the delay no program on this machine can avoid (timer interrupts, the hypervisor, kernel
//!   threads taking the core).
//! - **2 threads**: the pacing thread hands each scheduled instant over a bounded crossbeam
//!   channel (the partition actor's queue capacity) to a second thread that blocks on it and
//!   records its arrival: the one thread boundary a record crosses in Eddy (source actor to
//!   partition actor), with nothing done on either side.
//!
//! An engine's latency run is compared with the floor measured in the same run, so a machine
//! whose tail moves between runs shows it on both sides.

use std::time::Duration;

use anyhow::{Result, anyhow};
use crossbeam_channel::bounded;
use hdrhistogram::Histogram;

use eddy_actors::metrics::Metrics;
use eddy_actors::stalls::{StallReport, StallTracer};

use eddy_connectors::monotonic_ns;
use eddy_connectors::nexmark::wait_until;

use crate::suites::us;

/// The partition actor's input queue capacity (`eddy-actors`' runtime), so the 2-thread floor
/// blocks and wakes as the partition actor would.
const QUEUE: usize = 64;

/// A floor run: latency quantiles in ns of one path.
#[derive(Debug, Clone)]
pub(crate) struct Floor {
    /// "1 thread" or "2 threads".
    pub(crate) path: &'static str,
    /// Records measured (every record scheduled).
    pub(crate) records: u64,
    /// p50, p90, p99, p99.9, max (ns).
    pub(crate) q: [u64; 5],
}

impl Floor {
    /// The quantiles as table cells in µs: `p50 | p90 | p99 | p99.9 | max`.
    pub(crate) fn cells(&self) -> String {
        self.q.map(us).join(" | ")
    }
}

fn quantiles(h: &Histogram<u64>) -> [u64; 5] {
    [h.value_at_quantile(0.5), h.value_at_quantile(0.9), h.value_at_quantile(0.99), h.value_at_quantile(0.999), h.max()]
}

/// 1 ns .. 100 s, 3 significant digits (as the engine runs' histograms).
fn new_histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 100_000_000_000, 3).expect("constant, valid histogram bounds")
}

/// Paces `records` instants at `rate` per second on this thread, recording how late each was
/// reached (ns).
fn one_thread(rate: f64, records: u64) -> Result<Floor> {
    let mut local = new_histogram();
    let start = monotonic_ns();
    for i in 0..records {
        let at = start + (i as f64 * 1e9 / rate) as u64;
        wait_until(at);
        local.saturating_record(monotonic_ns().saturating_sub(at).max(1));
    }
    Ok(Floor { path: "1 thread", records: local.len(), q: quantiles(&local) })
}

/// Paces `records` instants at `rate` per second and hands each to a second thread blocked on a
/// bounded channel, which records its arrival minus its scheduled instant (ns).
fn two_threads(rate: f64, records: u64) -> Result<Floor> {
    let (tx, rx) = bounded::<u64>(QUEUE);
    let receiver = std::thread::Builder::new().name("floor-receiver".into()).spawn(move || {
        let mut h = new_histogram();
        while let Ok(at) = rx.recv() {
            h.saturating_record(monotonic_ns().saturating_sub(at).max(1));
        }
        h
    })?;
    let start = monotonic_ns();
    for i in 0..records {
        let at = start + (i as f64 * 1e9 / rate) as u64;
        wait_until(at);
        if tx.send(at).is_err() {
            break;
        }
    }
    drop(tx);
    let h = receiver.join().map_err(|_| anyhow!("floor receiver thread panicked"))?;
    Ok(Floor { path: "2 threads", records: h.len(), q: quantiles(&h) })
}

/// Both floor paths at `rate` records/s, `records` each, one after the other.
///
/// # Errors
/// When the receiver thread cannot be started or panics.
pub(crate) fn machine_floor(rate: f64, records: u64) -> Result<[Floor; 2]> {
    Ok([one_thread(rate, records)?, two_threads(rate, records)?])
}

/// Runs of each rate of the `floor` suite (the tail moves between runs: each run is shown).
const SUITE_RUNS: usize = 3;

/// The `floor` suite: both paths at 25,000 and 100,000 records/s, [`SUITE_RUNS`] runs of 10 s
/// each (smoke: 2,000 records), one table row per run. It tells what latency this machine
/// allows any engine before the engine is measured.
///
/// # Errors
/// As [`machine_floor`].
pub(crate) fn suite(smoke: bool) -> Result<()> {
    println!("## floor: open-loop pacing with no engine (bench/src/floor.rs)\n");
    println!("| rate records/s | run | path | records | p50 µs | p90 µs | p99 µs | p99.9 µs | max µs |");
    println!("|---|---|---|---|---|---|---|---|---|");
    for rate in [25_000.0, 100_000.0] {
        let records = if smoke { 2_000 } else { (rate * 10.0) as u64 };
        for run in 1..=SUITE_RUNS {
            for f in machine_floor(rate, records)? {
                println!("| {rate:.0} | {run} | {} | {} | {} |", f.path, f.records, f.cells());
            }
        }
    }
    println!(
        "\n`1 thread`: how late a thread pacing the instants reached each; `2 threads`: each instant \
         handed over a bounded channel to a thread blocked on it, measured at its arrival.\n"
    );
    Ok(())
}

/// The timers' floor: what waking for a timer costs on this machine with no engine. A pacing
/// thread sends `records` records at `rate` per second (sleeping between them, as the `timers`
/// suite's source) over a bounded channel to a second thread, which keeps each record's due
/// instant `delay` later in a queue and waits on the channel until the earliest
/// (`recv_deadline`, as a partition actor waits for its next timer); at each wake it records
/// how late it woke for every due instant passed (ns).
pub(crate) fn timer_floor(rate: f64, records: u64, delay: Duration) -> Result<Histogram<u64>> {
    let (tx, rx) = bounded::<u64>(QUEUE);
    let delay_ns = delay.as_nanos() as u64;
    let waiter = std::thread::Builder::new().name("floor-timers".into()).spawn(move || {
        let mut h = new_histogram();
        let mut due = std::collections::VecDeque::<u64>::new();
        let mut open = true;
        while open || !due.is_empty() {
            let got = match due.front() {
                Some(&at) => {
                    let ahead = at.saturating_sub(monotonic_ns());
                    rx.recv_deadline(std::time::Instant::now() + Duration::from_nanos(ahead))
                        .map_err(|e| e.is_disconnected())
                }
                None => rx.recv().map_err(|_| true),
            };
            match got {
                Ok(sent) => due.push_back(sent + delay_ns),
                Err(gone) => open &= !gone,
            }
            let now = monotonic_ns();
            while due.front().is_some_and(|&at| at <= now) {
                let at = due.pop_front().unwrap_or(now);
                h.saturating_record(now - at + 1);
            }
        }
        h
    })?;
    let start = monotonic_ns();
    for i in 0..records {
        let at = start + (i as f64 * 1e9 / rate) as u64;
        let now = monotonic_ns();
        if at > now {
            std::thread::sleep(Duration::from_nanos(at - now));
        }
        if tx.send(monotonic_ns()).is_err() {
            break;
        }
    }
    drop(tx);
    waiter.join().map_err(|_| anyhow!("timer floor thread panicked"))
}

/// Records per second of the stall floor: the rate of `bench/configs/stalls-rolling-60s.toml`.
const STALL_RATE: f64 = 100_000.0;

/// The stall tracer's threshold in the stall floor, as `eddy run --trace-stalls 200`.
const STALL_THRESHOLD: Duration = Duration::from_micros(200);

/// Random updates of [`STALL_TABLE`] per record: about a microsecond of work on this machine,
/// near a chained rolling-window record's median service time.
const STALL_WORK: usize = 48;

/// Slots of the table the stall floor's records update (1 MiB of `u64`: beyond L1, within L2).
const STALL_TABLE: usize = 1 << 17;

/// The stall tracer over paced fixed work with no engine: `records` records at `rate` per
/// second, grouped into messages as a chained source polls them (every record due when the
/// previous message ended, at least one), each record [`STALL_WORK`] random updates of a 1 MiB
/// table (no allocation, no system call), traced by the engine's own [`StallTracer`] with
/// `threshold`. What it reports over the threshold is the machine's doing: interrupts, the
/// hypervisor, a neighbour's cache and memory traffic; an engine run of the same rate and length
/// is judged beside it.
pub(crate) fn stall_floor(rate: f64, records: u64, threshold: Duration) -> StallReport {
    let metrics = Metrics::disabled(1).partitions[0].clone();
    let mut tracer = StallTracer::new(0, threshold, metrics, false);
    let mut table = vec![0u64; STALL_TABLE];
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    let start = monotonic_ns();
    let mut next = 0;
    while next < records {
        wait_until(start + (next as f64 * 1e9 / rate) as u64);
        let due = (monotonic_ns().saturating_sub(start) as f64 * rate / 1e9) as u64 + 1;
        let end = due.clamp(next + 1, records);
        tracer.begin_message();
        for _ in next..end {
            for _ in 0..STALL_WORK {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                let slot = &mut table[x as usize & (STALL_TABLE - 1)];
                *slot = slot.wrapping_add(x);
            }
            tracer.record_done();
        }
        tracer.flushed();
        next = end;
    }
    std::hint::black_box(&table);
    tracer.report()
}

/// The `stall-floor` suite: [`stall_floor`] for 60 s at 100,000 records/s (smoke: 2,000
/// records), printed as `eddy run --trace-stalls` prints an engine run: quantiles, items over
/// the threshold, the slowest ten and the slowest ten on a core.
///
/// # Errors
/// None today; a `Result` as every suite.
pub(crate) fn stall_suite(smoke: bool) -> Result<()> {
    let records = if smoke { 2_000 } else { (STALL_RATE * 60.0) as u64 };
    let r = stall_floor(STALL_RATE, records, STALL_THRESHOLD);
    println!("## stall floor: paced fixed work with no engine, traced (bench/src/floor.rs)\n");
    let [p50, p99, p999, max] = r.quantiles_ns.map(us);
    println!(
        "{} records at {STALL_RATE:.0}/s, threshold {} µs: p50 {p50} µs, p99 {p99}, p99.9 {p999}, max {max}; \
         {} items over the threshold\n",
        r.records,
        STALL_THRESHOLD.as_micros(),
        r.over_threshold
    );
    for (title, list) in [("slowest", &r.slowest), ("slowest on a core", &r.slowest_on_core)] {
        println!("| {title} | service µs | causes | after records |\n|---|---|---|---|");
        for (rank, s) in list.iter().take(10).enumerate() {
            println!("| {} | {} | {} | {} |", rank + 1, us(s.service_ns), s.causes, s.after_records);
        }
        println!();
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_scheduled_record_is_measured_on_both_paths_and_quantiles_rise() {
        let records = 2_000;
        for f in machine_floor(50_000.0, records).expect("floor runs") {
            assert_eq!(f.records, records, "{}: every record measured", f.path);
            assert!(f.q.windows(2).all(|w| w[0] <= w[1]), "{}: quantiles in order {:?}", f.path, f.q);
            assert!(f.q[0] >= 1, "{}: a latency of at least 1 ns", f.path);
        }
    }

    #[test]
    fn the_pacing_spreads_records_over_their_schedule() {
        // 1,000 records at 20,000/s are scheduled over 50 ms: the run cannot end sooner.
        let t0 = std::time::Instant::now();
        let [f, _] = machine_floor(20_000.0, 1_000).expect("floor runs");
        assert_eq!(f.records, 1_000);
        assert!(t0.elapsed() >= std::time::Duration::from_micros(2 * 49_950), "both paths paced");
    }

    #[test]
    fn the_stall_floor_traces_every_record_and_names_no_engine_cause() {
        let r = stall_floor(50_000.0, 2_000, Duration::from_micros(1));
        assert_eq!(r.records, 2_000);
        // (a 1 µs threshold: some of 2,000 records of ~1 µs exceed it on any machine)
        assert!(r.over_threshold > 0 && !r.slowest.is_empty());
        for s in &r.slowest {
            let causes = s.causes.to_string();
            assert!(causes == "unattributed" || causes == "descheduled", "no engine ran, yet: {causes}");
        }
    }

    #[test]
    fn the_timer_floor_wakes_for_every_due_instant_and_not_before_it() {
        // 500 records at 10,000/s, each due 5 ms after it was sent: every one is measured once,
        // none woke before its instant (a lateness of at least the 1 ns added), and the run
        // lasts at least the schedule plus the delay.
        let t0 = std::time::Instant::now();
        let h = timer_floor(10_000.0, 500, Duration::from_millis(5)).expect("timer floor runs");
        assert_eq!(h.len(), 500);
        assert!(h.min() >= 1);
        assert!(t0.elapsed() >= Duration::from_micros(49_900 + 5_000));
    }
}
