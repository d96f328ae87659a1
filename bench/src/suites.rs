//! The benchmark suites.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use hdrhistogram::Histogram;

use eddy_actors::sink::LatencyRecorder;
use eddy_actors::{RunOptions, run_pipeline};
use eddy_connectors::{ConnectorError, Payload, Poll, Position, Sink, Source, SourceItem, monotonic_ns};
use eddy_engine::{Record, Timestamp, Value};
use eddy_sql::parse_pipeline_str;

use crate::plot::{Panel, latency_svg};

/// A sink that discards rows (counting them), optionally taking `delay` per row.
pub(crate) struct CountingSink {
    rows: Arc<AtomicU64>,
    delay: Option<Duration>,
    /// Records (write time - frontier) in µs when set (timer suite).
    frontier_lag: Option<Arc<Mutex<Histogram<u64>>>>,
}

impl CountingSink {
    /// A sink counting rows into `rows`, taking no time.
    pub(crate) fn discarding(rows: Arc<AtomicU64>) -> CountingSink {
        CountingSink { rows, delay: None, frontier_lag: None }
    }
}

impl Sink for CountingSink {
    fn write(&mut self, _batch: u64, line: &str, _key: Option<&str>) -> Result<(), ConnectorError> {
        self.rows.fetch_add(1, Ordering::Relaxed);
        if let Some(d) = self.delay {
            std::thread::sleep(d);
        }
        if let Some(h) = &self.frontier_lag {
            let now = wall_now();
            if let Ok(v) = serde_json::from_str::<serde_json::Value>(line)
                && let Some(f) = v.get("__frontier").and_then(|f| f.as_str())
                && let Ok(t) = eddy_engine::time::parse_timestamp(f)
            {
                let lag = (now.0 - t.0).max(0) as u64;
                if let Ok(mut h) = h.lock() {
                    h.saturating_record(lag.max(1));
                }
            }
        }
        Ok(())
    }

    fn commit(&mut self, _batch: u64) -> Result<(), ConnectorError> {
        Ok(())
    }
}

fn wall_now() -> Timestamp {
    let d = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    Timestamp(d.as_micros() as i64)
}

/// Records latencies (ns) into a shared histogram.
pub(crate) struct HdrRecorder(pub(crate) Arc<Mutex<Histogram<u64>>>);

impl LatencyRecorder for HdrRecorder {
    fn record_ns(&self, ns: u64) {
        if let Ok(mut h) = self.0.lock() {
            h.saturating_record(ns.max(1));
        }
    }
}

pub(crate) fn histogram() -> Arc<Mutex<Histogram<u64>>> {
    // 1 ns .. 100 s, 3 significant digits.
    Arc::new(Mutex::new(Histogram::new_with_bounds(1, 100_000_000_000, 3).expect("valid histogram bounds")))
}

/// `1234567` as `1,234,567`.
fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

pub(crate) fn us(ns: u64) -> String {
    format!("{:.1}", ns as f64 / 1000.0)
}

/// Peak resident set size of this process (kB), from /proc.
fn peak_rss_kb() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines().find(|l| l.starts_with("VmHWM:")).and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
        })
        .unwrap_or(0)
}

fn nexmark_pipeline(query: &str, events: u64, rate: Option<f64>, parallelism: usize, extra: &str) -> String {
    let rate = rate.map(|r| format!("rate = {r}\n")).unwrap_or_default();
    format!(
        "name = \"bench\"\nmode = \"real-time\"\nparallelism = {parallelism}\ntrigger = \"1 second\"\n{extra}\n\
         [source]\ntype = \"nexmark\"\ntable = \"bid\"\nevents = {events}\n{rate}seed = 7\n\n{query}\n\
         [sink]\ntype = \"stdout\"\n"
    )
}

/// Nexmark at 100,000 events/s in real-time mode, rolling 10-second sum of price per bidder
/// (replay clock on the bid's event time, which the paced generator spaces at 1/rate), sink
/// discarding: latency from each record's scheduled creation to the sink's write.
pub fn latency(smoke: bool) -> Result<()> {
    let rate = 100_000.0;
    let events = if smoke { 20_000 } else { 3_000_000 };
    let query = "[clock]\ntype = \"replay\"\ncolumn = \"date_time\"\n\n[query]\ntype = \"rolling_window\"\n\
                 partition_by = [\"bidder\"]\norder_by = \"date_time\"\nframe = 0\n";
    let query =
        query.replace("frame = 0\n", "measures = [{ agg = \"sum\", column = \"price\", over = \"10 seconds\" }]\n");
    println!("## latency: Nexmark bids at {rate} events/s, rolling 10 s sum(price) per bidder\n");
    println!("| path | events | rows | p50 µs | p90 µs | p99 µs | p99.9 µs | max µs |");
    println!("|---|---|---|---|---|---|---|---|");
    // The machine's floor in the same run: the same pacing and clock with no engine behind it.
    for f in crate::floor::machine_floor(rate, events)? {
        println!("| floor, {} | {events} | {} | {} |", f.path, f.records, f.cells());
    }
    let mut runs = Vec::new();
    let mut waits = Vec::new();
    // Parallelism 1 runs chained (the partition's work on the source's thread) unless unchained.
    // At parallelism 2, the partition actors' wait for input as built (block at once: crossbeam
    // spins and yields a few µs, then parks) against polling first for 50 or 500 µs (issue 28,
    // part 3; `RunOptions::spin_wait`).
    let paths = [
        (1, false, None, "parallelism 1 (chained)"),
        (1, true, None, "parallelism 1, unchained"),
        (2, false, None, "parallelism 2"),
        (2, false, Some(Duration::from_micros(50)), "parallelism 2, spin 50 µs"),
        (2, false, Some(Duration::from_micros(500)), "parallelism 2, spin 500 µs"),
    ];
    for (parallelism, unchained, spin_wait, label) in paths {
        let text = nexmark_pipeline("", events, Some(rate), parallelism, &query);
        let p = parse_pipeline_str(&text).context("bench pipeline")?;
        let h = histogram();
        let rows = Arc::new(AtomicU64::new(0));
        let sink = CountingSink { rows: rows.clone(), delay: None, frontier_lag: None };
        let opts = RunOptions {
            sink_override: Some(Box::new(sink)),
            latency: Some(Arc::new(HdrRecorder(h.clone()))),
            unchained,
            spin_wait,
            ..RunOptions::default()
        };
        let sampler = crate::sched::Sampler::start();
        run_pipeline(&p, opts)?;
        waits.push((label, sampler.finish()));
        let h = h.lock().map_err(|_| anyhow::anyhow!("histogram lock"))?.clone();
        println!(
            "| eddy, {label} | {events} | {} | {} | {} | {} | {} | {} |",
            rows.load(Ordering::Relaxed),
            us(h.value_at_quantile(0.5)),
            us(h.value_at_quantile(0.9)),
            us(h.value_at_quantile(0.99)),
            us(h.value_at_quantile(0.999)),
            us(h.max())
        );
        runs.push((label, rows.load(Ordering::Relaxed), h));
    }
    println!("\nLatency counts from each record's scheduled send time (coordinated omission accounted for).");
    println!("The floor paces the same instants with no engine: `1 thread` records how late the pacing");
    println!("thread reached each one; `2 threads` hands each over a bounded channel to a thread blocked");
    println!("on it (the one thread boundary a record crosses in Eddy at parallelism 2, or unchained)");
    println!("and records its arrival. Chained, the partition's work runs on the source's thread.\n");
    println!("Time the engine's threads were runnable but waiting for a core (Linux schedstat; a record");
    println!("behind a waiting thread waits as long):\n");
    println!("| run | thread | on a core ms | waiting ms | slices | mean wait per slice µs |");
    println!("|---|---|---|---|---|---|");
    for (label, threads) in &waits {
        for (name, s) in threads {
            println!(
                "| {label} | {name} | {:.0} | {:.1} | {} | {:.1} |",
                s.run_ns as f64 / 1e6,
                s.wait_ns as f64 / 1e6,
                s.slices,
                s.wait_ns as f64 / 1e3 / s.slices.max(1) as f64
            );
        }
    }
    println!();
    // The committed picture comes from a full run; a smoke run draws into the temp folder.
    let path = if smoke {
        std::env::temp_dir().join("eddy-latency-smoke.svg")
    } else {
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("results").join("latency.svg")
    };
    let panels: Vec<Panel<'_>> = runs
        .iter()
        .map(|(p, rows, h)| Panel {
            title: format!(
                "{p}: {} rows, {} events at {} events/s ({} cores)",
                thousands(*rows),
                thousands(events),
                thousands(rate as u64),
                std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1)
            ),
            histogram: h,
        })
        .collect();
    latency_svg(&path, "Eddy: source-to-sink latency, Nexmark bids, rolling 10 s sum(price) per bidder", &panels)?;
    println!("Histogram drawn to {}\n", path.display());
    Ok(())
}

/// Highest sustained rate: unpaced Nexmark bids, sliding 10 s / 2 s count per auction (append).
pub fn throughput(smoke: bool) -> Result<()> {
    let events = if smoke { 50_000 } else { 10_000_000 };
    let query = "[watermark]\ncolumn = \"date_time\"\ndelay = \"1 second\"\n\n[query]\ntype = \"window_aggregate\"\n\
                 group_by = [\"auction\"]\nwindow = { type = \"sliding\", column = \"date_time\", size = \"10 seconds\", slide = \"2 seconds\" }\n\
                 output_mode = \"append\"\nmeasures = [{ agg = \"count\" }]\n";
    println!("## throughput: Nexmark bids as fast as generated, sliding 10 s / 2 s count per auction\n");
    println!("| parallelism | events | records | rows | wall s | records/s | records/s per partition actor |");
    println!("|---|---|---|---|---|---|---|");
    for parallelism in [1, 2] {
        let text = nexmark_pipeline("", events, None, parallelism, query);
        let p = parse_pipeline_str(&text).context("bench pipeline")?;
        let rows = Arc::new(AtomicU64::new(0));
        let sink = CountingSink { rows: rows.clone(), delay: None, frontier_lag: None };
        let start = Instant::now();
        let s = run_pipeline(&p, RunOptions { sink_override: Some(Box::new(sink)), ..RunOptions::default() })?;
        let wall = start.elapsed().as_secs_f64();
        let rate = s.records as f64 / wall;
        println!(
            "| {parallelism} | {events} | {} | {} | {wall:.2} | {:.0} | {:.0} |",
            s.records,
            rows.load(Ordering::Relaxed),
            rate,
            rate / parallelism as f64
        );
    }
    println!();
    Ok(())
}

/// A wall-clock source: `rate` records/s for `seconds`, keys `k0..k{keys}`, event time = now.
struct WallSource {
    keys: Vec<Value>,
    rate: f64,
    total: u64,
    sent: u64,
    start: Option<u64>,
}

impl Source for WallSource {
    fn poll(&mut self, out: &mut Vec<SourceItem>, max: usize, timeout: Duration) -> Result<Poll, ConnectorError> {
        if self.sent >= self.total {
            return Ok(Poll::Exhausted);
        }
        let start = *self.start.get_or_insert_with(monotonic_ns);
        let deadline = monotonic_ns() + timeout.as_nanos() as u64;
        let mut n = 0;
        while n < max && self.sent < self.total {
            let due = start + (self.sent as f64 * 1e9 / self.rate) as u64;
            let now = monotonic_ns();
            if due > now {
                if n > 0 || due > deadline {
                    break;
                }
                std::thread::sleep(Duration::from_nanos(due - now));
            }
            let key = self.keys[(self.sent % self.keys.len() as u64) as usize].clone();
            out.push(SourceItem {
                payload: Payload::Record(Record::new(vec![key, Value::Timestamp(wall_now()), Value::Long(1)])),
                position: Position::Generated { event: self.sent },
                created_ns: due,
            });
            self.sent += 1;
            n += 1;
        }
        Ok(if n > 0 { Poll::Data } else { Poll::Idle })
    }
}

/// Rolling-window rows due at an instant under the system clock: how long after that instant
/// they are written. Records arrive on the wall clock for `seconds`; each leaves its 200 ms range
/// by a timer, whose row carries its exact due instant as frontier.
pub fn timers(smoke: bool) -> Result<()> {
    let seconds = if smoke { 1.0 } else { 20.0 };
    let rate = 2_000.0;
    let text = "name = \"timers\"\nmode = \"real-time\"\nparallelism = 2\n\n[source]\ntype = \"stdin\"\nformat = \"json\"\n\
                schema = \"k STRING, ts TIMESTAMP, v BIGINT\"\n\n[query]\ntype = \"rolling_window\"\npartition_by = [\"k\"]\n\
                order_by = \"ts\"\nmeasures = [{ agg = \"sum\", column = \"v\", over = \"200 milliseconds\" }]\n\n[sink]\ntype = \"stdout\"\n";
    let p = parse_pipeline_str(text).context("timer pipeline")?;
    let lag = histogram();
    let rows = Arc::new(AtomicU64::new(0));
    let sink = CountingSink { rows: rows.clone(), delay: None, frontier_lag: Some(lag.clone()) };
    let source = WallSource {
        keys: (0..100).map(|k| Value::Str(format!("k{k}").into())).collect(),
        rate,
        total: (rate * seconds) as u64,
        sent: 0,
        start: None,
    };
    run_pipeline(
        &p,
        RunOptions {
            sink_override: Some(Box::new(sink)),
            source_override: Some(Box::new(source)),
            ..RunOptions::default()
        },
    )?;
    let h = lag.lock().map_err(|_| anyhow::anyhow!("histogram lock"))?;
    // The same instants waited for with no engine, right after (the machine's floor).
    let floor = crate::floor::timer_floor(rate, (rate * seconds) as u64, Duration::from_millis(200))?;
    println!("## timers: rolling 200 ms sum per key, {rate} records/s on the system clock for {seconds} s\n");
    println!("Write time minus the row's frontier (its due instant), in µs (wall clock, µs resolution);");
    println!("the floor: a thread waiting for the same due instants on a channel with no engine");
    println!("(bench/src/floor.rs, `timer_floor`), how late it woke, in µs:\n");
    println!("| path | rows | p50 µs | p90 µs | p99 µs | p99.9 µs | max µs |");
    println!("|---|---|---|---|---|---|---|");
    let q = |p: f64| floor.value_at_quantile(p) / 1000;
    println!(
        "| floor | {} | {} | {} | {} | {} | {} |",
        floor.len(),
        q(0.5),
        q(0.9),
        q(0.99),
        q(0.999),
        floor.max() / 1000
    );
    println!(
        "| eddy | {} | {} | {} | {} | {} | {} |\n",
        rows.load(Ordering::Relaxed),
        h.value_at_quantile(0.5),
        h.value_at_quantile(0.9),
        h.value_at_quantile(0.99),
        h.value_at_quantile(0.999),
        h.max()
    );
    Ok(())
}

/// A sink that takes 1 ms per row, fed by Nexmark at 20,000 events/s: the engine must slow the
/// source (bounded queues), keep memory bounded and lose nothing (rows = bids for a query with
/// one row per record: deduplication over every column).
pub fn slow_sink(smoke: bool) -> Result<()> {
    let events = if smoke { 500 } else { 10_000 };
    let text = nexmark_pipeline("", events, Some(20_000.0), 2, "[query]\ntype = \"deduplicate\"\n");
    let p = parse_pipeline_str(&text).context("slow-sink pipeline")?;
    let rows = Arc::new(AtomicU64::new(0));
    let sink = CountingSink { rows: rows.clone(), delay: Some(Duration::from_millis(1)), frontier_lag: None };
    let before = peak_rss_kb();
    let start = Instant::now();
    let s = run_pipeline(&p, RunOptions { sink_override: Some(Box::new(sink)), ..RunOptions::default() })?;
    let wall = start.elapsed().as_secs_f64();
    let written = rows.load(Ordering::Relaxed);
    println!("## slow sink: 1 ms per row, Nexmark at 20,000 events/s, deduplicate (one row per bid)\n");
    println!("| events | bids in | rows out | lost | wall s | peak RSS before / after (MiB) |");
    println!("|---|---|---|---|---|---|");
    println!(
        "| {events} | {} | {written} | {} | {wall:.1} | {:.1} / {:.1} |\n",
        s.records,
        s.records.saturating_sub(written),
        before as f64 / 1024.0,
        peak_rss_kb() as f64 / 1024.0
    );
    anyhow::ensure!(written == s.records, "rows lost: {} records in, {written} rows out", s.records);
    Ok(())
}

/// Scrapes `http://{addr}/metrics` once a second until `stop` (as Prometheus would); until the
/// endpoint first answers, it retries every 20 ms.
/// Returns the number of scrapes and how long each took (request to the end of the response).
fn scraper(
    addr: std::net::SocketAddr,
    stop: Arc<std::sync::atomic::AtomicBool>,
) -> std::thread::JoinHandle<(u64, Vec<Duration>)> {
    std::thread::spawn(move || {
        use std::io::{Read, Write};
        let (mut scrapes, mut took) = (0, Vec::new());
        while !stop.load(Ordering::Relaxed) {
            let t = Instant::now();
            if let Ok(mut s) = std::net::TcpStream::connect(addr) {
                let mut body = Vec::new();
                if s.write_all(b"GET /metrics HTTP/1.0\r\n\r\n").is_ok() && s.read_to_end(&mut body).is_ok() {
                    scrapes += 1;
                    took.push(t.elapsed());
                }
            }
            std::thread::sleep(if scrapes == 0 { Duration::from_millis(20) } else { Duration::from_secs(1) });
        }
        (scrapes, took)
    })
}

/// The cost of metrics, measured two ways (objective, issue 6: throughput loss at most 3 %).
///
/// 1. **Within one run** (the figure the objective is judged on): the pipeline runs with
///    `[metrics]` (endpoint up, scraped every second) while a controller flips
///    [`RunOptions::metrics_switch`] every 300 ms, so recording alternates between on and off
///    phases of the same process, the same hash seeds and the same thread placement. Each on
///    phase's records/s is divided by the mean of its two neighbouring off phases (which cancels
///    slow drift); the loss is 1 - the median of those ratios. The scrapes go on in both phases;
///    their cost is reported apart (the render time of one scrape, once a second).
/// 2. **Separate runs**, `[metrics]` present or absent altogether, in pairs back to back (order
///    alternating): 1 - the median over pairs of on / off records/s. On 2 shared cores the runs
///    of one pair differ by up to ±20 % from scheduling alone, so this is shown for completeness.
///
/// Writes `bench/results/metrics.{md,json}`.
pub fn metrics(smoke: bool) -> Result<()> {
    let sliding = "[watermark]\ncolumn = \"date_time\"\ndelay = \"1 second\"\n\n[query]\ntype = \"window_aggregate\"\n\
                   group_by = [\"auction\"]\nwindow = { type = \"sliding\", column = \"date_time\", size = \"10 seconds\", slide = \"2 seconds\" }\n\
                   output_mode = \"append\"\nmeasures = [{ agg = \"count\" }]\n";
    let rolling = "[clock]\ntype = \"replay\"\ncolumn = \"date_time\"\n\n[query]\ntype = \"rolling_window\"\n\
                   partition_by = [\"bidder\"]\norder_by = \"date_time\"\n\
                   measures = [{ agg = \"sum\", column = \"price\", over = \"10 seconds\" }]\n";
    // (name, query, events for the switched run, events per separate run)
    let workloads = [
        ("sliding count per auction (append)", sliding, 100_000_000, 3_000_000),
        ("rolling sum per bidder (row per record)", rolling, 25_000_000, 1_500_000),
    ];
    let rounds = if smoke { 1 } else { 3 };
    let mut report = crate::report::Report::new("metrics", smoke);
    report.line("## metrics: throughput with metrics recorded vs not\n");
    report.line(&format!("machine: {}\n", crate::report::machine()));
    report.line(
        "### 1. Within one run: recording switched on and off every 300 ms (endpoint up, scraped every second)\n",
    );
    report.line(
        "| workload | parallelism | events | phases on / off | off records/s (median phase) | on records/s (median phase) | loss (median of on / neighbouring off) | ratio p25 - p75 | scrape render ms (median, max) |",
    );
    report.line("|---|---|---|---|---|---|---|---|---|");
    let (mut switched, mut rows) = (Vec::new(), Vec::new());
    for (name, query, events, _) in workloads {
        for parallelism in [1, 2] {
            let events = if smoke { 200_000 } else { events };
            let phase = if smoke { Duration::from_millis(20) } else { Duration::from_millis(300) };
            let r = metrics_switched(query, events, parallelism, phase)?;
            let (mut on, mut off, mut ratios) = (Vec::new(), Vec::new(), Vec::new());
            for (i, &(recording, rate)) in r.phases.iter().enumerate() {
                if recording {
                    on.push(rate);
                    if i > 0 && i + 1 < r.phases.len() {
                        let ratio = rate / ((r.phases[i - 1].1 + r.phases[i + 1].1) / 2.0);
                        // A phase with no records (the source not started yet) gives no ratio.
                        if ratio.is_finite() && ratio > 0.0 {
                            ratios.push(ratio);
                        }
                    }
                } else {
                    off.push(rate);
                }
            }
            if ratios.is_empty() {
                // Only a smoke run (tiny input, release build) can be this short.
                anyhow::ensure!(smoke, "{name}: the run was too short for one on phase between two off phases");
                report.line(&format!("| {name} | {parallelism} | {events} | too short to compare | | | | | |"));
                continue;
            }
            let mut sorted = ratios.clone();
            sorted.sort_by(f64::total_cmp);
            let q = |f: f64| sorted[((sorted.len() - 1) as f64 * f).round() as usize];
            let loss = 1.0 - median(&mut ratios.clone());
            let mut scrape_ms: Vec<f64> = r.scrapes.iter().map(|d| d.as_secs_f64() * 1e3).collect();
            let scrape_max = scrape_ms.iter().copied().fold(0.0, f64::max);
            let scrape_med = if scrape_ms.is_empty() { 0.0 } else { median(&mut scrape_ms) };
            switched.push(loss);
            report.line(&format!(
                "| {name} | {parallelism} | {events} | {} / {} | {:.0} | {:.0} | {:.1} % | {:.3} - {:.3} | {scrape_med:.2}, {scrape_max:.2} |",
                on.len(),
                off.len(),
                median(&mut off.clone()),
                median(&mut on.clone()),
                loss * 100.0,
                q(0.25),
                q(0.75),
            ));
            rows.push(serde_json::json!({
                "method": "switched", "workload": name, "parallelism": parallelism, "events": events,
                "off_records_per_s": off, "on_records_per_s": on, "on_off_ratios": ratios, "loss": loss,
                "scrape_ms": scrape_ms,
            }));
        }
    }
    report.line(&format!(
        "\n### 2. Separate runs, `[metrics]` present or absent, {rounds} pairs back to back (scheduling noise on 2 shared cores: ±20 % per pair)\n"
    ));
    report.line(
        "| workload | parallelism | events | off records/s (median) | on records/s (median) | loss (median of pairs) | on / off records/s per pair |",
    );
    report.line("|---|---|---|---|---|---|---|");
    for (name, query, _, events) in workloads {
        for parallelism in [1, 2] {
            let events = if smoke { 50_000 } else { events };
            let (mut off, mut on, mut ratios) = (Vec::new(), Vec::new(), Vec::new());
            for round in 0..rounds {
                let order = if round % 2 == 0 { [false, true] } else { [true, false] };
                let mut pair = [0.0; 2];
                for with_metrics in order {
                    pair[usize::from(with_metrics)] = metrics_run(query, events, parallelism, with_metrics)?;
                }
                off.push(pair[0]);
                on.push(pair[1]);
                ratios.push(pair[1] / pair[0]);
            }
            let loss = 1.0 - median(&mut ratios.clone());
            report.line(&format!(
                "| {name} | {parallelism} | {events} | {:.0} | {:.0} | {:.1} % | {} |",
                median(&mut off),
                median(&mut on),
                loss * 100.0,
                ratios.iter().map(|r| format!("{r:.3}")).collect::<Vec<_>>().join(" ")
            ));
            rows.push(serde_json::json!({
                "method": "separate runs", "workload": name, "parallelism": parallelism, "events": events,
                "on_off_ratios": ratios, "loss": loss,
            }));
        }
    }
    let worst = switched.iter().copied().fold(f64::MIN, f64::max);
    let pooled: Vec<f64> = rows
        .iter()
        .filter(|r| r["method"] == "switched")
        .filter_map(|r| r["on_off_ratios"].as_array())
        .flatten()
        .filter_map(serde_json::Value::as_f64)
        .collect();
    let n = pooled.len().max(1) as f64;
    let mean = pooled.iter().sum::<f64>() / n;
    let sd = (pooled.iter().map(|r| (r - mean).powi(2)).sum::<f64>() / (n - 1.0).max(1.0)).sqrt();
    report.line(&format!(
        "\nWorst loss within one run: {:.1} % (objective: at most 3 %; negative: the on phases were faster, i.e. noise). \
         All {} on phases pooled: mean loss {:.1} % ± {:.1} % (standard error).\n",
        worst * 100.0,
        pooled.len(),
        (1.0 - mean) * 100.0,
        sd / n.sqrt() * 100.0
    ));
    report.finish(serde_json::json!({ "suite": "metrics", "rows": rows, "worst_switched_loss": worst }))
}

/// What a switched run measured: (recording, records/s) per phase in order, and scrape times.
struct Switched {
    phases: Vec<(bool, f64)>,
    scrapes: Vec<Duration>,
}

/// One unpaced Nexmark run of `query` with `[metrics]`, recording flipped every `phase`
/// (starting off after a 1 s warm-up); the phases cut short by the end of input are dropped.
fn metrics_switched(query: &str, events: u64, parallelism: usize, phase: Duration) -> Result<Switched> {
    let port = std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()?.port();
    let text = nexmark_pipeline(
        "",
        events,
        None,
        parallelism,
        &format!("[metrics]\nlisten = \"127.0.0.1:{port}\"\n\n{query}"),
    );
    let p = parse_pipeline_str(&text).context("bench pipeline")?;
    let sink = CountingSink { rows: Arc::new(AtomicU64::new(0)), delay: None, frontier_lag: None };
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let switch = Arc::new(std::sync::atomic::AtomicBool::new(true));
    let counters = Arc::new(eddy_actors::source::SourceCounters::default());
    let scrape = scraper(std::net::SocketAddr::from(([127, 0, 0, 1], port)), stop.clone());
    let controller = {
        let (stop, switch, counters) = (stop.clone(), switch.clone(), counters.clone());
        std::thread::spawn(move || {
            let mut phases = Vec::new();
            std::thread::sleep(Duration::from_secs(1).min(phase * 4));
            let mut recording = false;
            while !stop.load(Ordering::Relaxed) {
                switch.store(recording, Ordering::Relaxed);
                let (r0, t0) = (counters.records.load(Ordering::Relaxed), Instant::now());
                std::thread::sleep(phase);
                let (r1, t1) = (counters.records.load(Ordering::Relaxed), Instant::now());
                phases.push((recording, (r1 - r0) as f64 / (t1 - t0).as_secs_f64()));
                recording = !recording;
            }
            switch.store(true, Ordering::Relaxed);
            phases
        })
    };
    let opts = RunOptions {
        sink_override: Some(Box::new(sink)),
        counters: Some(counters),
        metrics_switch: Some(switch),
        ..RunOptions::default()
    };
    let result = run_pipeline(&p, opts);
    stop.store(true, Ordering::Relaxed);
    let mut phases = controller.join().map_err(|_| anyhow::anyhow!("the phase controller panicked"))?;
    let (_, scrapes) = scrape.join().map_err(|_| anyhow::anyhow!("the scraper panicked"))?;
    result?;
    // The last phase ran into the end of input (or the stop): its rate is not a steady one.
    phases.pop();
    Ok(Switched { phases, scrapes })
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// One unpaced Nexmark run of `query`: records/s.
fn metrics_run(query: &str, events: u64, parallelism: usize, with_metrics: bool) -> Result<f64> {
    let port = std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()?.port();
    let extra =
        if with_metrics { format!("[metrics]\nlisten = \"127.0.0.1:{port}\"\n\n{query}") } else { query.to_string() };
    let text = nexmark_pipeline("", events, None, parallelism, &extra);
    let p = parse_pipeline_str(&text).context("bench pipeline")?;
    let sink = CountingSink { rows: Arc::new(AtomicU64::new(0)), delay: None, frontier_lag: None };
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let scrape = with_metrics.then(|| scraper(std::net::SocketAddr::from(([127, 0, 0, 1], port)), stop.clone()));
    let start = Instant::now();
    let s = run_pipeline(&p, RunOptions { sink_override: Some(Box::new(sink)), ..RunOptions::default() })?;
    let took = start.elapsed();
    let rate = s.records as f64 / took.as_secs_f64();
    stop.store(true, Ordering::Relaxed);
    if let Some(h) = scrape {
        let scrapes = h.join().map_or(0, |(n, _)| n);
        anyhow::ensure!(scrapes > 0 || took < Duration::from_millis(100), "the endpoint was never scraped");
    }
    Ok(rate)
}
