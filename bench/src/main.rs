//! `eddy-bench`: the runtime's benchmarks (real actors, real channels, in-process sources and
//! sinks). Each suite prints a markdown table; numbers are from this machine and its noise.
//!
//! ```text
//! cargo run --release -p eddy-bench -- latency      # Nexmark 100k rec/s, rolling 10 s sum per bidder; draws bench/results/latency.svg
//! cargo run --release -p eddy-bench -- throughput   # sliding 10 s / 2 s count per auction, parallelism 1 and 2
//! cargo run --release -p eddy-bench -- timers       # rolling expiry rows vs their due instant (system clock)
//! cargo run --release -p eddy-bench -- slow-sink    # a sink taking 1 ms per row: peak RSS, nothing lost
//! cargo run --release -p eddy-bench -- metrics      # throughput with [metrics] on vs off (loss <= 3 %)
//! cargo run --release -p eddy-bench -- nexmark      # q5, q7, q11, q12, rolling: throughput, latency, rate sweep
//! cargo run --release -p eddy-bench -- checkpoint   # 1 M keys of rolling state: stall, size, write and restore times
//! cargo run --release -p eddy-bench -- all [--smoke]
//! cargo run --release -p eddy-bench -- kafka [--smoke]  # end to end through a real broker vs the broker floor (not in `all`: needs the broker)
//! ```
#![allow(clippy::print_stdout)] // a benchmark's report is its output

mod checkpoint;
mod kafka;
mod nexmark;
mod plot;
mod report;
mod suites;

use anyhow::{Result, bail};

/// The same global allocator as the `eddy` binary, so the suites measure what `eddy run` does.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let smoke = args.iter().any(|a| a == "--smoke");
    let suite = args.iter().find(|a| !a.starts_with("--")).map(String::as_str).unwrap_or("all");
    println!("# eddy-bench: {suite}{}\n", if smoke { " (smoke: tiny sizes, numbers meaningless)" } else { "" });
    println!(
        "machine: {} cores; build: {}\n",
        std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1),
        if cfg!(debug_assertions) { "debug" } else { "release" }
    );
    match suite {
        "latency" => suites::latency(smoke),
        "throughput" => suites::throughput(smoke),
        "timers" => suites::timers(smoke),
        "slow-sink" => suites::slow_sink(smoke),
        "metrics" => suites::metrics(smoke),
        "nexmark" => nexmark::nexmark(smoke),
        "checkpoint" => checkpoint::checkpoint(smoke),
        "kafka" => kafka::kafka(smoke),
        "all" => {
            suites::latency(smoke)?;
            suites::throughput(smoke)?;
            suites::timers(smoke)?;
            suites::slow_sink(smoke)?;
            suites::metrics(smoke)?;
            nexmark::nexmark(smoke)?;
            checkpoint::checkpoint(smoke)
        }
        other => bail!(
            "unknown suite {other:?}; expected latency, throughput, timers, slow-sink, metrics, nexmark, checkpoint, kafka or all"
        ),
    }
}
