//! `eddy-bench`: the runtime's benchmarks (real actors, real channels, in-process sources and
//! sinks). Each suite prints a markdown table; numbers are from this machine and its noise.
//!
//! ```text
//! cargo run --release -p eddy-bench -- latency      # Nexmark 100k rec/s, rolling 10 s sum per bidder, beside the machine's floor; draws bench/results/latency.svg
//! cargo run --release -p eddy-bench -- floor        # the machine's latency floor: the same pacing with no engine (1 thread; 1 hand-off)
//! cargo run --release -p eddy-bench -- stall-floor  # the stall tracer over 60 s of paced fixed work, no engine: the slow items the machine alone makes (not in `all`)
//! cargo run --release -p eddy-bench -- throughput   # sliding 10 s / 2 s count per auction, parallelism 1 and 2
//! cargo run --release -p eddy-bench -- timers       # rolling expiry rows vs their due instant (system clock)
//! cargo run --release -p eddy-bench -- slow-sink    # a sink taking 1 ms per row: peak RSS, nothing lost
//! cargo run --release -p eddy-bench -- metrics      # throughput with [metrics] on vs off (loss <= 3 %)
//! cargo run --release -p eddy-bench -- nexmark      # q5, q7, q11, q12, rolling: throughput, latency, rate sweep
//! cargo run --release -p eddy-bench -- nexmark --query q7 --rounds 5 --throughput-only  # one query's median of 5
//! cargo run --release -p eddy-bench -- exchange     # the exchange's cost per record: one chained query, forward edge vs forced exchange (parallelism 2)
//! cargo run --release -p eddy-bench -- checkpoint   # 1 M keys of rolling state: stall, size, write and restore times
//! cargo run --release -p eddy-bench --features delta -- delta  # the Delta sink: rows/s at 1 and 100 rows per commit; real-time epoch commit p50 / p99
//! cargo run --release -p eddy-bench -- all [--smoke]
//! cargo run --release -p eddy-bench -- kafka [--rounds 3] [--smoke]  # end to end through a real broker vs the broker floor (not in `all`: needs the broker)
//! ```
#![allow(clippy::print_stdout)] // a benchmark's report is its output

mod checkpoint;
#[cfg(feature = "delta")]
mod delta;
mod exchange;
mod floor;
mod kafka;
mod nexmark;
mod plot;
mod report;
mod sched;
mod suites;

use anyhow::Result;
use clap::{Parser, ValueEnum};

/// The same global allocator as the `eddy` binary, so the suites measure what `eddy run` does.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Eddy's benchmark harness: runs one suite (or all but `kafka`) and prints markdown tables.
#[derive(Debug, Parser)]
#[command(name = "eddy-bench", version)]
struct Args {
    /// The suite to run.
    #[arg(value_enum, default_value = "all")]
    suite: Suite,
    /// Tiny sizes: checks that a suite runs and reports; its numbers mean nothing.
    #[arg(long)]
    smoke: bool,
    /// `nexmark` only: run this query (repeat the option for several); default: all five.
    #[arg(long = "query", value_parser = nexmark::QUERY_NAMES)]
    queries: Vec<String>,
    /// `nexmark` only: events generated per throughput run (default 5,000,000).
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    events: Option<u64>,
    /// `nexmark`: throughput runs per query and parallelism; the table then gives each run and
    /// the median. `kafka`: runs per rate and path, summarised as median [min - max]. Default 1.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..=99))]
    rounds: u64,
    /// `nexmark` only: the throughput runs alone (no latency runs, no rate sweep).
    #[arg(long)]
    throughput_only: bool,
}

/// The suites (see the module documentation).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Suite {
    /// Nexmark 100k records/s, rolling 10 s sum per bidder: source-to-sink latency, beside the
    /// machine's floor.
    Latency,
    /// The machine's latency floor alone: the same open-loop pacing with no engine.
    Floor,
    /// The stall tracer's floor: 60 s of paced fixed work with no engine, traced as
    /// `eddy run --trace-stalls 200` traces records (issue 28).
    StallFloor,
    /// Sliding 10 s / 2 s count per auction as fast as generated, parallelism 1 and 2.
    Throughput,
    /// Rolling expiry rows against their due instant (system clock).
    Timers,
    /// A sink taking 1 ms per row: peak RSS, nothing lost.
    SlowSink,
    /// Throughput with `[metrics]` on vs off.
    Metrics,
    /// q5, q7, q11, q12 and the rolling query: throughput, latency, rate sweep.
    Nexmark,
    /// The exchange's cost per record: one chained query whose keys allow a forward edge, as
    /// planned and forced through the exchange, at parallelism 2.
    Exchange,
    /// 1 M keys of rolling state: stall, size, write and restore times.
    Checkpoint,
    /// End to end through a real broker vs the broker floor (needs the test broker).
    Kafka,
    /// The Delta Lake sink into a local table: rows/s at 1 and 100 rows per commit, and the
    /// real-time epoch commit's cost (needs `--features delta`).
    Delta,
    /// Every suite except `kafka` and `delta`.
    All,
}

fn main() -> Result<()> {
    let Args { suite, smoke, queries, events, rounds, throughput_only } = Args::parse();
    let nexmark_options = nexmark::Options { queries, events, rounds: rounds as usize, throughput_only };
    let name = suite.to_possible_value().map(|v| v.get_name().to_owned()).unwrap_or_default();
    println!("# eddy-bench: {name}{}\n", if smoke { " (smoke: tiny sizes, numbers meaningless)" } else { "" });
    println!(
        "machine: {} cores; build: {}\n",
        std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1),
        if cfg!(debug_assertions) { "debug" } else { "release" }
    );
    match suite {
        Suite::Latency => suites::latency(smoke),
        Suite::Floor => floor::suite(smoke),
        Suite::StallFloor => floor::stall_suite(smoke),
        Suite::Throughput => suites::throughput(smoke),
        Suite::Timers => suites::timers(smoke),
        Suite::SlowSink => suites::slow_sink(smoke),
        Suite::Metrics => suites::metrics(smoke),
        Suite::Nexmark => nexmark::nexmark(smoke, &nexmark_options),
        Suite::Checkpoint => checkpoint::checkpoint(smoke),
        Suite::Exchange => exchange::exchange(smoke),
        Suite::Kafka => kafka::kafka(smoke, rounds as usize),
        #[cfg(feature = "delta")]
        Suite::Delta => delta::delta(smoke),
        #[cfg(not(feature = "delta"))]
        Suite::Delta => anyhow::bail!("the delta suite needs eddy-bench built with `--features delta`"),
        Suite::All => {
            floor::suite(smoke)?;
            suites::latency(smoke)?;
            suites::throughput(smoke)?;
            suites::timers(smoke)?;
            suites::slow_sink(smoke)?;
            suites::metrics(smoke)?;
            nexmark::nexmark(smoke, &nexmark_options)?;
            exchange::exchange(smoke)?;
            checkpoint::checkpoint(smoke)
        }
    }
}
