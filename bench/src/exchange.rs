//! The exchange's cost per record, in isolation (issue "Several inputs and operators", its
//! benchmarks: "the same chained query forced through an exchange, as a ratio"): one chained
//! query whose keys allow a forward edge, run in real-time mode at parallelism 2 as planned
//! (forward: both aggregates chained on each partition actor's thread) and with
//! [`RunOptions::force_exchange`] (the second aggregate's input re-keyed by its whole group key
//! and sent between the two partition actors through the real-time exchange). The two sides
//! alternate within each round, the order flipping every round; each run reports records per
//! CPU-second (every thread of the process: source, partition actors, sink, coordinator).
//!
//! The query: bids per auction in 10 s windows sliding by 2 s (count, max price), then per
//! (window, auction) the sum and max of those rows: grouped by the routing key (auction) and
//! more, so a forward edge would do; forced, the rows are routed by the hash of (window,
//! auction), which sends about half of them to the other actor. The second aggregate does
//! little (one input row per group), so the difference is mostly the exchange's.
//!
//! At parallelism 1 there is no peer: every row would stay on its actor, so the switch changes
//! nothing there and the suite does not run it.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use anyhow::{Context, Result, bail};
use serde_json::json;

use eddy_actors::{RunOptions, run_pipeline};

use crate::report::{Report, machine};
use crate::suites::CountingSink;

/// Rounds (each runs both sides once); the median decides.
const ROUNDS: usize = 3;

fn pipeline(events: u64, parallelism: usize) -> Result<eddy_engine::spec::Pipeline> {
    let text = format!(
        r#"
name = "exchange-cost"
mode = "real-time"
parallelism = {parallelism}
[source]
type = "nexmark"
table = "bid"
events = {events}
seed = 5
[watermark]
column = "date_time"
delay = "1 second"
[query]
sql = """
SELECT window, auction, sum(bids) AS bids, max(top) AS top
FROM (SELECT window(date_time, '10 seconds', '2 seconds') AS window, auction, count(*) AS bids, max(price) AS top
      FROM source GROUP BY 1, 2)
GROUP BY window, auction
"""
output_mode = "append"
[sink]
type = "stdout"
"#
    );
    eddy_sql::parse_pipeline_str(&text).context("the suite's pipeline")
}

/// One run: (records, rows, wall s, CPU s).
fn run(events: u64, parallelism: usize, force_exchange: bool) -> Result<(u64, u64, f64, f64)> {
    let p = pipeline(events, parallelism)?;
    let rows = Arc::new(AtomicU64::new(0));
    let opts = RunOptions {
        sink_override: Some(Box::new(CountingSink::discarding(rows.clone()))),
        force_exchange,
        ..RunOptions::default()
    };
    let (cpu0, t0) = (crate::nexmark::cpu_seconds(), Instant::now());
    let s = run_pipeline(&p, opts)?;
    Ok((s.records, rows.load(Ordering::Relaxed), t0.elapsed().as_secs_f64(), crate::nexmark::cpu_seconds() - cpu0))
}

/// Runs the suite (see the module documentation).
///
/// # Errors
/// When a run fails, the two sides give different row counts, or the report cannot be written.
pub fn exchange(smoke: bool) -> Result<()> {
    let events: u64 = if smoke { 20_000 } else { 5_000_000 };
    let parallelism = 2;
    let mut report = Report::new("exchange", smoke);
    report.line("## exchange: the same chained query, forward edge vs forced through the exchange\n");
    report.line(&format!("Machine: {}\n", machine()));
    report.line(&format!(
        "Real-time mode, parallelism {parallelism}, Nexmark generator unpaced ({events} events), sink discarding.\n"
    ));
    report.line("| round | edge | records | rows | wall s | CPU s | records per CPU-second |");
    report.line("|---|---|---|---|---|---|---|");
    let mut per_side: [Vec<f64>; 2] = [Vec::new(), Vec::new()];
    let mut json_runs = Vec::new();
    let mut rows_seen: Option<u64> = None;
    for round in 1..=ROUNDS {
        // forward first in odd rounds, forced first in even ones
        let order = if round % 2 == 1 { [false, true] } else { [true, false] };
        for forced in order {
            let (records, rows, wall, cpu) = run(events, parallelism, forced)?;
            if *rows_seen.get_or_insert(rows) != rows {
                bail!("the forward and the forced edge wrote different row counts ({rows_seen:?} and {rows})");
            }
            let rate = records as f64 / cpu.max(1e-9);
            let edge = if forced { "forced exchange" } else { "forward" };
            report.line(&format!("| {round} | {edge} | {records} | {rows} | {wall:.2} | {cpu:.2} | {rate:.0} |"));
            per_side[usize::from(forced)].push(rate);
            json_runs.push(json!({"round": round, "forced": forced, "records": records, "rows": rows,
                "wall_s": wall, "cpu_s": cpu, "records_per_cpu_s": rate}));
        }
    }
    let [forward, forced] = &per_side;
    let (f_med, f_min, f_max) = crate::nexmark::spread(forward);
    let (x_med, x_min, x_max) = crate::nexmark::spread(forced);
    let rounds: Vec<String> = forward.iter().zip(forced).map(|(a, b)| format!("{:.3}", b / a)).collect();
    report.line("\n| edge | records per CPU-second, median | min | max |");
    report.line("|---|---|---|---|");
    report.line(&format!("| forward | {f_med:.0} | {f_min:.0} | {f_max:.0} |"));
    report.line(&format!("| forced exchange | {x_med:.0} | {x_min:.0} | {x_max:.0} |"));
    report.line(&format!(
        "\nForced / forward, records per CPU-second, per round: {}; of the medians: {:.3}",
        rounds.join(" "),
        x_med / f_med
    ));
    report.finish(json!({"suite": "exchange", "machine": machine(), "events": events, "parallelism": parallelism,
        "runs": json_runs, "ratio_of_medians": x_med / f_med}))
}
