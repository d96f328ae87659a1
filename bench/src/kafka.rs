//! The `kafka` suite: end-to-end latency through a real broker, with Eddy and without.
//!
//! An open-loop producer (rdkafka, the sink's defaults) sends records at a fixed rate, each carrying its
//! scheduled send instant (`sent`, ns of the process's monotonic clock: a producer that falls
//! behind still stamps the schedule, so coordinated omission is accounted for). A consumer
//! (rdkafka, the source's latency defaults) reads the output topic and records receive - `sent`.
//! Three paths, one after the other in the same run, on the same broker:
//!
//! - **floor, 1 hop**: producer -> topic -> consumer (the broker's own latency);
//! - **floor, 2 hops**: producer -> topic -> a forwarder (consumer + producer, no engine) ->
//!   topic -> consumer: what any processor between two topics pays;
//! - **eddy** at parallelism 1 (chained: the partition's work on the source actor's thread) and
//!   2: producer -> topic -> `eddy` (Kafka source, a rolling window per key with lifetime
//!   `max(sent)`, count and sum, Kafka sink) -> topic -> consumer. Each record gives exactly one
//!   row (lifetime measures only: no expiry rows), whose `sent` is the record's own (sent instants
//!   grow per key).
//!
//! "Eddy adds" = eddy - floor 2 hops. Eddy's run also records each row's time inside the engine
//! (from the source actor's poll that read its record to the hand-over to the producer), the
//! engine's own share of what it adds, which the broker's run-to-run swings do not blur. A tuning table measures the 1-hop floor under several
//! `fetch.wait.max.ms` / `linger.ms` values (the defaults of `eddy_connectors::kafka`).
//!
//! The broker: `KAFKA_BOOTSTRAP` when set, else a tansu broker started here on a free port (from
//! `$KAFKA_TOOLS/bin/tansu`, installed by `../shared/tools/kafka/install`) and stopped at the end.
//! Topics are created with `../shared/tools/kafka/kc`.

use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use hdrhistogram::Histogram;
use rdkafka::config::ClientConfig;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::producer::{BaseProducer, BaseRecord, Producer};
use rdkafka::{Message, Offset, TopicPartitionList};

use eddy_actors::{RunOptions, run_pipeline};
use eddy_connectors::kafka::{SINK_DEFAULTS, SOURCE_DEFAULTS};
use eddy_connectors::monotonic_ns;
use eddy_sql::parse_pipeline_str;

/// A broker for the suite: an external one, or tansu started here.
struct Broker {
    bootstrap: String,
    child: Option<Child>,
}

impl Broker {
    fn get() -> Result<Broker> {
        if let Ok(b) = std::env::var("KAFKA_BOOTSTRAP") {
            return Ok(Broker { bootstrap: b, child: None });
        }
        let home = std::env::var_os("KAFKA_TOOLS").map(std::path::PathBuf::from).unwrap_or_else(|| {
            std::path::PathBuf::from(std::env::var_os("HOME").unwrap_or_default()).join(".cache/kafka-tools")
        });
        let tansu = home.join("bin/tansu");
        if !tansu.is_file() {
            bail!("no broker: set KAFKA_BOOTSTRAP or install one with ../shared/tools/kafka/install");
        }
        let port = std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()?.port();
        let url = format!("tcp://127.0.0.1:{port}");
        let child = Command::new(&tansu)
            .args(["broker", "--listener-url", &url, "--advertised-listener-url", &url])
            .args(["--storage-engine", &format!("memory://tansu-{port}/")])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .context("start tansu")?;
        let b = Broker { bootstrap: format!("127.0.0.1:{port}"), child: Some(child) };
        let started = Instant::now();
        while !Command::new(&tansu)
            .args(["topic", "list", "--broker", &url])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
        {
            if started.elapsed() > Duration::from_secs(30) {
                bail!("the broker did not answer within 30 s");
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        Ok(b)
    }

    fn create_topic(&self, topic: &str) -> Result<()> {
        let kc = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/tools/kafka/kc");
        let out = Command::new(kc).args(["create", topic]).env("KAFKA_BOOTSTRAP", &self.bootstrap).output()?;
        if !out.status.success() {
            bail!("kc create {topic}: {}", String::from_utf8_lossy(&out.stderr));
        }
        Ok(())
    }
}

impl Drop for Broker {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            // The broker is ours; a failure to kill it leaves a process the OS reaps at exit.
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

fn client(bootstrap: &str, defaults: &[(&str, &str)], overrides: &[(&str, &str)]) -> ClientConfig {
    let mut c = ClientConfig::new();
    c.set("bootstrap.servers", bootstrap);
    for (k, v) in defaults.iter().chain(overrides) {
        c.set(*k, *v);
    }
    c
}

/// A consumer of partition 0 of `topic` from its beginning (assigned: no group round trip).
fn consumer(bootstrap: &str, topic: &str, overrides: &[(&str, &str)]) -> Result<BaseConsumer> {
    let mut cfg = client(bootstrap, SOURCE_DEFAULTS, overrides);
    cfg.set("group.id", format!("bench-{topic}")).set("statistics.interval.ms", "0");
    let c: BaseConsumer = cfg.create()?;
    let mut tpl = TopicPartitionList::new();
    tpl.add_partition_offset(topic, 0, Offset::Beginning)?;
    c.assign(&tpl)?;
    Ok(c)
}

/// `"sent":N` of a JSON line, without a full parse.
fn sent_of(payload: &[u8]) -> Option<u64> {
    let text = std::str::from_utf8(payload).ok()?;
    let at = text.find("\"sent\":")? + 7;
    let digits: String = text[at..].trim_start().chars().take_while(char::is_ascii_digit).collect();
    digits.parse().ok()
}

/// What the reader of the output topic counts.
#[derive(Default)]
struct Seen {
    /// Every message (probes too).
    any: AtomicU64,
    /// Messages sent at or after `counted_from` (the producer's first).
    counted: AtomicU64,
    /// Monotonic ns: messages sent from here on are counted (u64::MAX: none yet).
    counted_from: AtomicU64,
    /// Monotonic ns: messages sent from here on are measured (after the warm-up).
    measured_from: AtomicU64,
    /// Set when the first measured message arrived (the warm-up's have come through).
    measuring: AtomicBool,
}

/// Reads `topic` until `stop`, recording receive - sent (ns) of the measured messages.
fn reader(c: BaseConsumer, seen: Arc<Seen>, stop: Arc<AtomicBool>) -> JoinHandle<Histogram<u64>> {
    std::thread::spawn(move || {
        let mut h = Histogram::<u64>::new_with_bounds(1, 100_000_000_000, 3).expect("valid bounds");
        while !stop.load(Ordering::Relaxed) {
            if let Some(Ok(m)) = c.poll(Duration::from_millis(50))
                && let Some(sent) = m.payload().and_then(sent_of)
            {
                let now = monotonic_ns();
                seen.any.fetch_add(1, Ordering::Relaxed);
                if sent >= seen.counted_from.load(Ordering::Relaxed) {
                    seen.counted.fetch_add(1, Ordering::Relaxed);
                }
                if sent >= seen.measured_from.load(Ordering::Relaxed) {
                    h.saturating_record(now.saturating_sub(sent).max(1));
                    seen.measuring.store(true, Ordering::Relaxed);
                }
            }
        }
        h
    })
}

/// Sends records to `topic` at `rate` per second for `warmup + measure` (setting `seen`'s
/// counted / measured instants first); returns how many. Each record is sent at its scheduled
/// instant or, when behind, at once with the scheduled stamp.
fn produce(
    bootstrap: &str,
    topic: &str,
    rate: f64,
    (warmup, measure): (Duration, Duration),
    overrides: &[(&str, &str)],
    seen: &Seen,
) -> Result<u64> {
    let p: BaseProducer = client(bootstrap, SINK_DEFAULTS, overrides).create()?;
    let total = ((warmup + measure).as_secs_f64() * rate) as u64;
    let start = monotonic_ns() + 1_000_000;
    seen.measured_from.store(start + warmup.as_nanos() as u64, Ordering::Relaxed);
    seen.counted_from.store(start, Ordering::Relaxed);
    let wall0 = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH)?.as_micros() as i64;
    let mut line = String::with_capacity(128);
    for i in 0..total {
        let due = start + (i as f64 * 1e9 / rate) as u64;
        // Sleeps until the record is due, then sends every record due by then (each stamped with
        // its own instant). Never spins nor yields in a loop: a producer that does takes a whole
        // core from the broker and the engine on this 2-core machine (measured: `perf` showed
        // the yielding producer on ~47 % of both cores). A sleep overshoots by the kernel's
        // timer slack (~50 µs); the lateness counts in the latency, as on every path alike.
        let now = monotonic_ns();
        if due > now {
            std::thread::sleep(Duration::from_nanos(due - now));
        }
        line.clear();
        let ts = wall0 + ((due - start) / 1000) as i64;
        line.push_str(&format!("{{\"k\":\"k{}\",\"v\":{},\"ts\":{ts},\"sent\":{due}}}", i % 64, i % 100));
        let mut rec: BaseRecord<'_, str, str> = BaseRecord::to(topic).payload(line.as_str());
        loop {
            match p.send(rec) {
                Ok(()) => break,
                Err((_, r)) => {
                    p.poll(Duration::from_millis(1));
                    rec = r;
                }
            }
        }
        if i % 256 == 0 {
            p.poll(Duration::ZERO);
        }
    }
    p.flush(Duration::from_secs(30))?;
    Ok(total)
}

/// Forwards every message of `from` to `to` until `stop` (the 2-hop floor).
fn forwarder(bootstrap: &str, from: &str, to: &str, stop: Arc<AtomicBool>) -> Result<JoinHandle<()>> {
    let c = consumer(bootstrap, from, &[])?;
    let p: BaseProducer = client(bootstrap, SINK_DEFAULTS, &[]).create()?;
    let to = to.to_string();
    Ok(std::thread::spawn(move || {
        while !stop.load(Ordering::Relaxed) {
            if let Some(Ok(m)) = c.poll(Duration::from_millis(20)) {
                let payload = m.payload().unwrap_or_default().to_vec();
                let mut rec: BaseRecord<'_, [u8], [u8]> = BaseRecord::to(&to).payload(payload.as_slice());
                while let Err((_, r)) = p.send(rec) {
                    p.poll(Duration::from_millis(1));
                    rec = r;
                }
            }
            p.poll(Duration::ZERO);
        }
        // The run is over; undelivered forwards only shorten the tail that was measured.
        let _ = p.flush(Duration::from_secs(5));
    }))
}

#[derive(Clone, Copy, PartialEq)]
enum Path {
    Floor1,
    Floor2,
    /// Eddy with this many partition actors (1: chained on the source actor's thread).
    Eddy(usize),
}

struct Outcome {
    sent: u64,
    received: u64,
    h: Histogram<u64>,
    /// Eddy's path: each output row's time inside the engine (ns), from the source actor's poll
    /// that read its record to the sink's hand-over to the producer (`RunOptions::latency`),
    /// rows written once the first measured record (sent after the warm-up) came through.
    inside: Option<Histogram<u64>>,
}

/// One measured run of `path` at `rate`.
fn run_path(
    broker: &Broker,
    path: Path,
    rate: f64,
    measure: Duration,
    tag: &str,
    tuning: &[(&str, &str)],
) -> Result<Outcome> {
    let (input, output) = (format!("{tag}-in"), format!("{tag}-out"));
    broker.create_topic(&input)?;
    if path != Path::Floor1 {
        broker.create_topic(&output)?;
    }
    let read_topic = if path == Path::Floor1 { &input } else { &output };
    let stop = Arc::new(AtomicBool::new(false));
    let seen = Arc::new(Seen {
        counted_from: AtomicU64::new(u64::MAX),
        measured_from: AtomicU64::new(u64::MAX),
        ..Seen::default()
    });
    let read = reader(consumer(&broker.bootstrap, read_topic, tuning)?, seen.clone(), stop.clone());
    let mut middle: Option<JoinHandle<()>> = None;
    let mut engine: Option<JoinHandle<Result<()>>> = None;
    let engine_stop = Arc::new(AtomicBool::new(false));
    let inside = matches!(path, Path::Eddy(_)).then(crate::suites::histogram);
    match path {
        Path::Floor1 => {}
        Path::Floor2 => middle = Some(forwarder(&broker.bootstrap, &input, &output, stop.clone())?),
        Path::Eddy(parallelism) => {
            let text = format!(
                "name = \"bench-kafka\"\nmode = \"real-time\"\nparallelism = {parallelism}\n\n\
                 [source]\ntype = \"kafka\"\nbootstrap_servers = \"{b}\"\ntopic = \"{input}\"\n\
                 starting_offsets = \"earliest\"\nformat = \"json\"\ntimestamp_unit = \"us\"\n\
                 schema = \"k STRING, v BIGINT, ts TIMESTAMP, sent BIGINT\"\n\n\
                 [query]\ntype = \"rolling_window\"\npartition_by = [\"k\"]\norder_by = \"ts\"\n\
                 frontier = {{ delay = \"0 seconds\" }}\n\
                 measures = [{{ agg = \"max\", column = \"sent\", alias = \"sent\" }}, \
                 {{ agg = \"count\", column = \"v\", alias = \"n\" }}, {{ agg = \"sum\", column = \"v\", alias = \"total\" }}]\n\n\
                 [sink]\ntype = \"kafka\"\nbootstrap_servers = \"{b}\"\ntopic = \"{output}\"\nkey = [\"k\"]\n",
                b = broker.bootstrap
            );
            let p = parse_pipeline_str(&text).context("bench pipeline")?;
            let s = engine_stop.clone();
            let latency = inside.clone().map(|h| {
                let recorder: Arc<dyn eddy_actors::sink::LatencyRecorder> = Arc::new(crate::suites::HdrRecorder(h));
                recorder
            });
            engine = Some(std::thread::spawn(move || {
                run_pipeline(&p, RunOptions { stop: Some(s), latency, ..RunOptions::default() })?;
                Ok(())
            }));
        }
    }
    // Probe until the path delivers (the engine subscribed, the forwarder assigned).
    let probe_started = Instant::now();
    let probe: BaseProducer = client(&broker.bootstrap, SINK_DEFAULTS, &[]).create()?;
    while seen.any.load(Ordering::Relaxed) == 0 {
        if probe_started.elapsed() > Duration::from_secs(60) {
            bail!("{tag}: nothing came through within 60 s");
        }
        let line = format!("{{\"k\":\"probe\",\"v\":0,\"ts\":0,\"sent\":{}}}", monotonic_ns());
        // A failed probe is retried on the next round.
        let _ = probe.send(BaseRecord::<str, str>::to(&input).payload(&line));
        probe.poll(Duration::from_millis(100));
    }
    probe.flush(Duration::from_secs(10))?;
    // The engine's own histogram starts over once the first measured record came through (the
    // probes, the warm-up and the engine's catching up with it at the start are not counted, as
    // they are not in the end-to-end histogram).
    let reset = inside.clone().map(|h| {
        let (seen, stop) = (seen.clone(), stop.clone());
        std::thread::spawn(move || {
            while !seen.measuring.load(Ordering::Relaxed) && !stop.load(Ordering::Relaxed) {
                std::thread::sleep(Duration::from_millis(1));
            }
            if let Ok(mut h) = h.lock() {
                h.reset();
            }
        })
    });
    let sent = produce(&broker.bootstrap, &input, rate, (Duration::from_secs(1), measure), tuning, &seen)?;
    // Drain: wait until everything arrived (or 10 s without progress).
    let mut last = (seen.counted.load(Ordering::Relaxed), Instant::now());
    while seen.counted.load(Ordering::Relaxed) < sent && last.1.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(50));
        let now = seen.counted.load(Ordering::Relaxed);
        if now != last.0 {
            last = (now, Instant::now());
        }
    }
    engine_stop.store(true, Ordering::SeqCst);
    if let Some(e) = engine {
        e.join().map_err(|_| anyhow::anyhow!("the engine panicked"))??;
    }
    stop.store(true, Ordering::SeqCst);
    if let Some(m) = middle {
        m.join().map_err(|_| anyhow::anyhow!("the forwarder panicked"))?;
    }
    let h = read.join().map_err(|_| anyhow::anyhow!("the reader panicked"))?;
    if let Some(r) = reset {
        r.join().map_err(|_| anyhow::anyhow!("the histogram reset panicked"))?;
    }
    let inside = match inside {
        Some(i) => Some(i.lock().map_err(|_| anyhow::anyhow!("histogram lock"))?.clone()),
        None => None,
    };
    Ok(Outcome { sent, received: seen.counted.load(Ordering::Relaxed), h, inside })
}

fn ms(ns: u64) -> String {
    format!("{:.2}", ns as f64 / 1e6)
}

fn row(label: &str, round: usize, rate: f64, o: &Outcome) {
    println!(
        "| {label} | {round} | {} | {} | {} | {} | {} | {} | {} |",
        rate as u64,
        o.sent,
        o.received,
        ms(o.h.value_at_quantile(0.5)),
        ms(o.h.value_at_quantile(0.99)),
        ms(o.h.value_at_quantile(0.999)),
        ms(o.h.max())
    );
}

/// `median [min - max]` of `values` (ns) in ms, signed when `signed`.
fn spread(values: &mut [i64], signed: bool) -> String {
    values.sort_unstable();
    let f = |v: i64| if signed { format!("{:+.2}", v as f64 / 1e6) } else { format!("{:.2}", v as f64 / 1e6) };
    match values {
        [] => String::new(),
        [one] => f(*one),
        _ => format!("{} [{} - {}]", f(values[values.len() / 2]), f(values[0]), f(values[values.len() - 1])),
    }
}

/// The suite: floor 1 hop, floor 2 hops and eddy (parallelism 1, chained, and 2) at 10,000 and
/// 50,000 records/s, `rounds` times each (the paths of a round one after the other), a summary
/// over the rounds, then the tuning table.
pub fn kafka(smoke: bool, rounds: usize) -> Result<()> {
    let broker = Broker::get()?;
    let measure = Duration::from_secs(if smoke { 1 } else { 10 });
    let rates: &[f64] = if smoke { &[1_000.0] } else { &[10_000.0, 50_000.0] };
    let paths = [
        (Path::Floor1, "floor, 1 hop"),
        (Path::Floor2, "floor, 2 hops"),
        (Path::Eddy(1), "eddy, parallelism 1 (chained)"),
        (Path::Eddy(2), "eddy, parallelism 2"),
    ];
    println!("## kafka: end-to-end latency through the broker ({}), open-loop producer\n", broker.bootstrap);
    println!("| path | round | records/s | sent | received | p50 ms | p99 ms | p99.9 ms | max ms |");
    println!("|---|---|---|---|---|---|---|---|---|");
    let mut n = 0;
    // Per rate and path: p99 of each round, end to end and inside the engine; per rate and eddy
    // path: what it adds over the same round's 2-hop floor at p99.
    let mut summary = Vec::new();
    for &rate in rates {
        let mut p99s: Vec<Vec<i64>> = vec![Vec::new(); paths.len()];
        let mut inside: Vec<Vec<i64>> = vec![Vec::new(); paths.len()];
        let mut adds: Vec<Vec<i64>> = vec![Vec::new(); paths.len()];
        for round in 1..=rounds {
            let mut floor2_p99 = 0;
            for (i, (path, label)) in paths.into_iter().enumerate() {
                n += 1;
                let o = run_path(&broker, path, rate, measure, &format!("bench{n}"), &[])?;
                row(label, round, rate, &o);
                let p99 = o.h.value_at_quantile(0.99) as i64;
                p99s[i].push(p99);
                match path {
                    Path::Floor2 => floor2_p99 = p99,
                    Path::Eddy(_) => adds[i].push(p99 - floor2_p99),
                    Path::Floor1 => {}
                }
                if let Some(h) = &o.inside {
                    inside[i].push(h.value_at_quantile(0.99) as i64);
                    println!(
                        "| {label}, inside the engine | {round} | {} | | {} | {} | {} | {} | {} |",
                        rate as u64,
                        h.len(),
                        ms(h.value_at_quantile(0.5)),
                        ms(h.value_at_quantile(0.99)),
                        ms(h.value_at_quantile(0.999)),
                        ms(h.max())
                    );
                }
            }
        }
        summary.push((rate, p99s, inside, adds));
    }
    println!(
        "\nLatency = consumer receive - scheduled send (coordinated omission accounted for); 1 s warm-up excluded. \
         `eddy, inside the engine`: the same run's rows from the source actor's poll that read their record to \
         the sink's hand-over to the producer (received = rows measured: those written once the first \
         measured record came through), the part of what Eddy adds that is the \
         engine's own work and queues; the rest is the second hop's clients and broker.\n"
    );
    println!("### kafka: p99 over {rounds} round(s), median [min - max]\n");
    println!("| records/s | path | p99 ms | inside the engine p99 ms | adds over the round's 2-hop floor, p99 ms |");
    println!("|---|---|---|---|---|");
    for (rate, mut p99s, mut inside, mut adds) in summary {
        for (i, (_, label)) in paths.iter().enumerate() {
            println!(
                "| {} | {label} | {} | {} | {} |",
                rate as u64,
                spread(&mut p99s[i], false),
                spread(&mut inside[i], false),
                spread(&mut adds[i], true)
            );
        }
    }
    println!();

    // A low rate, where the broker often has nothing when a fetch arrives: fetch.wait.max.ms shows.
    println!("### kafka tuning: floor 1 hop at 1,000 records/s\n");
    println!("| fetch.wait.max.ms | linger.ms | p50 ms | p99 ms | p99.9 ms |");
    println!("|---|---|---|---|---|");
    let grid: &[(&str, &str)] = if smoke {
        &[("5", "0")]
    } else {
        &[
            ("1", "0"),
            ("5", "0"),
            ("20", "0"),
            ("100", "0"),
            ("500", "0"),
            ("5", "1"),
            ("5", "2"),
            ("5", "5"),
            ("1", "5"),
        ]
    };
    for (fetch, linger) in grid {
        n += 1;
        let tuning = [("fetch.wait.max.ms", *fetch), ("linger.ms", *linger)];
        let o = run_path(
            &broker,
            Path::Floor1,
            1_000.0,
            measure.min(Duration::from_secs(5)),
            &format!("bench{n}"),
            &tuning,
        )?;
        println!(
            "| {fetch} | {linger} | {} | {} | {} |",
            ms(o.h.value_at_quantile(0.5)),
            ms(o.h.value_at_quantile(0.99)),
            ms(o.h.value_at_quantile(0.999))
        );
    }
    println!();
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::spread;

    #[test]
    fn spread_gives_the_median_and_the_range_in_milliseconds() {
        // Unsorted input; the median of three is the middle one once sorted.
        assert_eq!(spread(&mut [3_000_000, 1_000_000, 2_500_000], false), "2.50 [1.00 - 3.00]");
        assert_eq!(spread(&mut [-500_000, 1_250_000, 400_000], true), "+0.40 [-0.50 - +1.25]");
        assert_eq!(spread(&mut [7_000_000], true), "+7.00");
        assert_eq!(spread(&mut [], false), "");
    }
}
