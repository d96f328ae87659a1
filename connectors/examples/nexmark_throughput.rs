//! Measures how fast the Nexmark source produces records (one table, unpaced and paced).
//!
//! `cargo run --release -p eddy-connectors --example nexmark_throughput [events [table]]`
//! (with a table: that table only, and no paced runs)
//!
//! Prints one line per measurement; a measurement tool, not a test.
#![allow(clippy::print_stdout)] // the example's output is its report

use std::time::{Duration, Instant};

use eddy_connectors::{NexmarkSource, NexmarkTable, Poll, Source, monotonic_ns};

/// Nanoseconds this thread has run on a CPU (Linux `/proc/thread-self/schedstat`; 0 elsewhere):
/// on a shared machine, CPU time says more about the cost per record than wall time.
fn thread_cpu_ns() -> u64 {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().next().and_then(|n| n.parse().ok()))
        .unwrap_or(0)
}

fn main() {
    let events: u64 = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(10_000_000);
    let tables: Vec<NexmarkTable> = match std::env::args().nth(2) {
        Some(t) => vec![t.parse().expect("a table name: bid, auction or person")],
        None => vec![NexmarkTable::Bid, NexmarkTable::Auction, NexmarkTable::Person],
    };
    for table in tables {
        let mut source = NexmarkSource::new(table, Some(events), None, 1).expect("valid configuration");
        let mut out = Vec::with_capacity(4096);
        let (mut records, started, cpu_started) = (0u64, Instant::now(), thread_cpu_ns());
        loop {
            out.clear();
            let poll = source.poll(&mut out, 4096, Duration::ZERO).expect("the generator does not fail");
            records += out.len() as u64;
            if poll == Poll::Exhausted {
                break;
            }
        }
        let secs = started.elapsed().as_secs_f64();
        let cpu_secs = (thread_cpu_ns() - cpu_started) as f64 / 1e9;
        println!(
            "{table:>7} unpaced: {records} records from {events} events in {secs:.3} s wall, {cpu_secs:.3} s CPU \
             = {:.2} M records/s of CPU ({:.0} ns per record)",
            records as f64 / cpu_secs / 1e6,
            cpu_secs * 1e9 / records as f64
        );
    }

    if std::env::args().nth(2).is_some() {
        return;
    }
    // Paced: does the source keep its schedule, and how late are records handed out?
    for rate in [100_000.0, 1_000_000.0] {
        let seconds = 2.0;
        let total = (rate * seconds) as u64;
        let mut source =
            NexmarkSource::new(NexmarkTable::Bid, Some(total), Some(rate), 1).expect("valid configuration");
        let mut out = Vec::with_capacity(4096);
        let (mut records, mut max_lag_ns, mut sum_lag_ns) = (0u64, 0u64, 0u128);
        let started = Instant::now();
        loop {
            out.clear();
            let poll = source.poll(&mut out, 1024, Duration::from_millis(10)).expect("the generator does not fail");
            let now = monotonic_ns();
            for item in &out {
                let lag = now.saturating_sub(item.created_ns);
                max_lag_ns = max_lag_ns.max(lag);
                sum_lag_ns += u128::from(lag);
            }
            records += out.len() as u64;
            if poll == Poll::Exhausted {
                break;
            }
        }
        let secs = started.elapsed().as_secs_f64();
        println!(
            "bid paced at {rate} events/s: {records} records in {secs:.3} s (expected {seconds} s); \
             handed out {:.1} µs after schedule on average, {:.1} µs at most",
            sum_lag_ns as f64 / records.max(1) as f64 / 1e3,
            max_lag_ns as f64 / 1e3
        );
    }
}
