//! The fraud example's processor (`examples/fraud/processor.rs`) reached from pipeline files
//! (`[query] type = "processor"`) under the replay clock: in micro-batch and real-time mode, at
//! parallelism 1 and 4, with its clearing timer in processing time and in event time, its rows
//! are those of a brute-force reference written from the rules below (never from the engine);
//! the same after a stop and a restart from a checkpoint at another parallelism. A pipeline
//! naming a processor that is not registered is refused at `query.name` (exit 2).
//!
//! The rules (as `processor.rs` states them): per card, a payment over 500 at event time `t`
//! alerts, as `(card, "alert", t, n)`, when `n >= 3` payments over 500 of the card have event
//! times in `(t - 60 s, t]`; 10 minutes after a card's last payment a row `(card, "cleared",
//! last + 10 min, payments since the card was last cleared)` is written and the card starts
//! afresh (a payment at or after that instant clears it first).

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::{Arc, Mutex};

use eddy::{ForeachWriter, Job, Registry, RowView, Schema, TimeDomain, WriterError};

#[allow(dead_code)] // the example's constants are not all read here
#[path = "../examples/fraud/processor.rs"]
mod processor;

const S: i64 = 1_000_000;
const MIN: i64 = 60 * S;
/// 2024-03-01T12:00:00Z in µs.
const T0: i64 = 1_709_294_400 * S;
/// The replay clock's `until`: an hour after the last payment.
const UNTIL_AFTER_LAST: i64 = 60 * MIN;

/// One payment: card, amount, event time (µs); the replay clock reads the event time too.
#[derive(Debug, Clone)]
struct Payment {
    card: String,
    amount: f64,
    ts: i64,
}

/// A deterministic little generator (an LCG), so the input is the same every run.
struct Lcg(u64);

impl Lcg {
    fn below(&mut self, n: u64) -> u64 {
        self.0 = self.0.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
        (self.0 >> 33) % n
    }
}

/// Payments in event-time order (strictly increasing, so none is late with a zero delay): bursts
/// of large payments a few seconds apart, quiet spells longer than 10 minutes (clears
/// mid-stream), and cards that go quiet for good (cleared by a timer with no further input).
fn payments() -> Vec<Payment> {
    let mut rng = Lcg(20_240_301);
    let mut ts = T0;
    let mut out = Vec::new();
    for i in 0..400 {
        ts += match rng.below(40) {
            0 => 11 * MIN + rng.below(5 * 60) as i64 * S, // a quiet spell
            1..=24 => S + rng.below(4 * S as u64) as i64, // a burst
            _ => 5 * S + rng.below(40 * S as u64) as i64,
        };
        // cards 0..4 throughout; 5..8 only in the first half, 4 until near the end (then quiet
        // for good: its timer falls in the last file, which the last watermark passes)
        let cards = match i {
            0..200 => 8,
            200..340 => 5,
            _ => 4,
        };
        let card = format!("card-{}", rng.below(cards));
        let amount = [50.0, 120.0, 480.0, 500.0, 501.0, 750.0, 900.0, 2500.0][rng.below(8) as usize];
        out.push(Payment { card, amount, ts });
    }
    out
}

/// The rows the rules give (card, event, at µs, payments), as a multiset; `final_instant`: the
/// clock (processing-time timers) or watermark (event-time timers) reached at the end, to which
/// the cards' last timers fire.
fn reference(payments: &[Payment], final_instant: i64) -> BTreeMap<(String, String, i64, i64), usize> {
    let mut by_card: BTreeMap<&str, Vec<&Payment>> = BTreeMap::new();
    for p in payments {
        by_card.entry(&p.card).or_default().push(p);
    }
    let mut rows = BTreeMap::new();
    let mut emit = |row: (String, String, i64, i64)| *rows.entry(row).or_insert(0) += 1;
    for (card, ps) in by_card {
        // since the last clear: every payment, and the large ones
        let mut since: Vec<&Payment> = Vec::new();
        for p in ps {
            if let Some(last) = since.last()
                && last.ts + 10 * MIN <= p.ts
            {
                emit((card.to_string(), "cleared".into(), last.ts + 10 * MIN, since.len() as i64));
                since.clear();
            }
            since.push(p);
            if p.amount > 500.0 {
                let n = since.iter().filter(|q| q.amount > 500.0 && q.ts > p.ts - MIN && q.ts <= p.ts).count();
                if n >= 3 {
                    emit((card.to_string(), "alert".into(), p.ts, n as i64));
                }
            }
        }
        if let Some(last) = since.last()
            && last.ts + 10 * MIN <= final_instant
        {
            emit((card.to_string(), "cleared".into(), last.ts + 10 * MIN, since.len() as i64));
        }
    }
    rows
}

/// Writes the payments as JSON lines in `files` files (micro-batch: one batch each).
fn write_input(dir: &Path, payments: &[Payment], files: usize) {
    let input = dir.join("input");
    std::fs::create_dir_all(&input).unwrap();
    let per = payments.len().div_ceil(files);
    for (f, chunk) in payments.chunks(per).enumerate() {
        let mut text = String::new();
        for p in chunk {
            let ts = iso(p.ts);
            text.push_str(&format!("{{\"card\": \"{}\", \"amount\": {:.1}, \"ts\": \"{ts}\"}}\n", p.card, p.amount));
        }
        std::fs::write(input.join(format!("{f:03}.json")), text).unwrap();
    }
}

/// `µs` as an RFC 3339 UTC timestamp.
fn iso(us: i64) -> String {
    let mut out = String::new();
    eddy::Timestamp(us).write_rfc3339(&mut out);
    out
}

/// The pipeline file in `dir`; `until`: the replay clock's, if any.
fn pipeline(dir: &Path, mode: &str, processor: &str, until: Option<i64>, sink: &str) -> std::path::PathBuf {
    let text = format!(
        r#"
name = "fraud"
mode = "{mode}"
trigger = "1 minute"
[source]
type = "files"
path = "input"
format = "json"
schema = "card STRING, amount DOUBLE, ts TIMESTAMP"
[clock]
type = "replay"
column = "ts"
{until}
[watermark]
column = "ts"
delay = "0 seconds"
[query]
type = "processor"
name = "{processor}"
partition_by = ["card"]
{sink}
"#,
        until = until.map(|u| format!("until = \"{}\"", iso(u))).unwrap_or_default()
    );
    let path = dir.join("pipeline.toml");
    std::fs::write(&path, text).unwrap();
    path
}

fn registry() -> Registry {
    let output = Schema::parse_ddl(processor::OUTPUT).unwrap();
    let mut registry = Registry::new();
    registry
        .register_processor("fraud", output.clone(), || Box::new(processor::Fraud::new(TimeDomain::ProcessingTime)));
    registry.register_processor("fraud_event_time", output, || Box::new(processor::Fraud::new(TimeDomain::EventTime)));
    registry
}

/// Collects the rows as JSON.
struct Collect(Arc<Mutex<Vec<String>>>);

impl ForeachWriter for Collect {
    fn open(&mut self, _partition: usize, _epoch: u64) -> Result<bool, WriterError> {
        Ok(true)
    }
    fn process(&mut self, row: RowView<'_>) -> Result<(), WriterError> {
        self.0.lock().unwrap().push(row.to_json());
        Ok(())
    }
    fn close(&mut self, _error: Option<&str>) {}
}

/// JSON rows `{"card", "event", "at", "payments"}` as the reference's multiset.
fn rows_of<'a>(lines: impl IntoIterator<Item = &'a str>) -> BTreeMap<(String, String, i64, i64), usize> {
    let mut out = BTreeMap::new();
    for line in lines {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        let at_us = eddy_engine::time::parse_timestamp(v["at"].as_str().unwrap()).unwrap().0;
        let row = (
            v["card"].as_str().unwrap().to_string(),
            v["event"].as_str().unwrap().to_string(),
            at_us,
            v["payments"].as_i64().unwrap(),
        );
        *out.entry(row).or_insert(0) += 1;
    }
    out
}

/// The instant the cards' last timers fire to: the replay clock's `until` (processing time) or
/// the watermark at the end (event time: the last payment's time with a zero delay; the
/// reference checks that no timer falls between the watermark before the last payment and
/// after it, where the modes could differ).
fn final_instant(payments: &[Payment], domain: TimeDomain) -> i64 {
    let last = payments.last().unwrap().ts;
    match domain {
        TimeDomain::ProcessingTime => last + UNTIL_AFTER_LAST,
        TimeDomain::EventTime => {
            let before = payments[payments.len() - 2].ts;
            let ambiguous = payments.iter().any(|p| p.ts + 10 * MIN > before && p.ts + 10 * MIN <= last);
            assert!(!ambiguous, "the input puts a timer between the last two watermarks; change its seed");
            last
        }
    }
}

fn run_case(mode: &str, domain: TimeDomain, parallelism: usize) {
    let tmp = tempfile::tempdir().unwrap();
    let input = payments();
    write_input(tmp.path(), &input, 8);
    let name = if domain == TimeDomain::ProcessingTime { "fraud" } else { "fraud_event_time" };
    // event-time timers need no clock: without `until` the end of input moves only the watermark
    let until = (domain == TimeDomain::ProcessingTime).then(|| input.last().unwrap().ts + UNTIL_AFTER_LAST);
    let path = pipeline(tmp.path(), mode, name, until, "[sink]\ntype = \"foreach\"\nname = \"collect\"");
    let rows = Arc::new(Mutex::new(Vec::new()));
    let seen = rows.clone();
    Job::from_file_with_in(&path, &[("parallelism".into(), parallelism.to_string())], &registry())
        .unwrap()
        .foreach("collect", move || Box::new(Collect(seen.clone())) as Box<dyn ForeachWriter>)
        .run()
        .unwrap();
    let want = reference(&input, final_instant(&input, domain));
    let count = |event: &str| want.iter().filter(|(k, _)| k.1 == event).map(|(_, n)| n).sum::<usize>();
    assert!(count("alert") >= 10 && count("cleared") >= 10, "the input exercises both rules: {want:?}");
    let got = rows_of(rows.lock().unwrap().iter().map(String::as_str));
    assert_eq!(got, want, "{mode}, {domain:?} timers, parallelism {parallelism}");
}

#[test]
fn fraud_alerts_and_processing_time_clears_match_the_reference_in_micro_batch_mode() {
    for parallelism in [1, 4] {
        run_case("micro-batch", TimeDomain::ProcessingTime, parallelism);
    }
}

#[test]
fn fraud_alerts_and_processing_time_clears_match_the_reference_in_real_time_mode() {
    for parallelism in [1, 4] {
        run_case("real-time", TimeDomain::ProcessingTime, parallelism);
    }
}

#[test]
fn fraud_event_time_timers_fire_as_the_watermark_passes_in_real_time_mode() {
    for parallelism in [1, 4] {
        run_case("real-time", TimeDomain::EventTime, parallelism);
    }
}

#[test]
fn fraud_event_time_timers_fire_in_micro_batch_mode_with_a_no_data_batch_at_the_end() {
    for parallelism in [1, 4] {
        run_case("micro-batch", TimeDomain::EventTime, parallelism);
    }
}

#[test]
fn the_last_cards_are_cleared_by_their_processing_time_timers_with_no_further_input() {
    // the reference's rows at the end depend on the clock reaching `until`: without those
    // timers the cards quiet for good would have no "cleared" row
    let input = payments();
    let at_end = reference(&input, final_instant(&input, TimeDomain::ProcessingTime));
    let without = reference(&input, input.last().unwrap().ts);
    let fired_at_end: Vec<_> = at_end.keys().filter(|k| !without.contains_key(*k)).collect();
    assert!(fired_at_end.len() >= 4, "the cards that pay until the end are cleared after it: {fired_at_end:?}");
    // and the engine writes them (both modes are compared with `at_end` above; here once more
    // in real-time at parallelism 2, the run's rows after its last payment)
    run_case("real-time", TimeDomain::ProcessingTime, 2);
}

#[test]
fn a_stopped_fraud_run_restarts_from_its_checkpoint_at_another_parallelism_with_the_same_rows() {
    // micro-batch: a batch per file (8); real-time: an epoch per minute of replay clock (~100)
    for (mode, stop_after) in [("micro-batch", 2), ("real-time", 40)] {
        let tmp = tempfile::tempdir().unwrap();
        let input = payments();
        write_input(tmp.path(), &input, 8);
        let until = input.last().unwrap().ts + UNTIL_AFTER_LAST;
        let sink = "[sink]\ntype = \"files\"\npath = \"output\"\n[checkpoint]\npath = \"ck\"";
        let path = pipeline(tmp.path(), mode, "fraud", Some(until), sink);
        let set = |p: usize| vec![("parallelism".to_string(), p.to_string())];
        let output = |dir: &Path| {
            let mut lines = Vec::new();
            for e in std::fs::read_dir(dir.join("output")).unwrap().flatten() {
                let text = std::fs::read_to_string(e.path()).unwrap();
                lines.extend(text.lines().filter(|l| !l.trim().is_empty()).map(String::from));
            }
            lines
        };
        Job::from_file_with_in(&path, &set(4), &registry()).unwrap().stop_after(stop_after).run().unwrap();
        let want = reference(&input, final_instant(&input, TimeDomain::ProcessingTime));
        let first = output(tmp.path()).len();
        assert!(
            first > 0 && first < want.values().sum::<usize>(),
            "{mode}: the first run stopped part-way ({first} rows)"
        );
        Job::from_file_with_in(&path, &set(1), &registry()).unwrap().run().unwrap();
        let lines = output(tmp.path());
        assert_eq!(rows_of(lines.iter().map(String::as_str)), want, "{mode}: stopped after {stop_after}, restarted");
    }
}

/// Counts the calls of `init` and `close` of the instances it makes.
#[derive(Default)]
struct Lifecycle {
    init: std::sync::atomic::AtomicUsize,
    close: std::sync::atomic::AtomicUsize,
}

struct Counted(Arc<Lifecycle>, processor::Fraud);

impl eddy::StatefulProcessor for Counted {
    fn init(&mut self, input: &Schema) {
        self.0.init.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        self.1.init(input);
    }
    fn handle_input(&mut self, records: &[&eddy::Record], ctx: &mut eddy::KeyContext<'_>) {
        self.1.handle_input(records, ctx);
    }
    fn handle_timer(&mut self, domain: TimeDomain, at: eddy::Timestamp, ctx: &mut eddy::KeyContext<'_>) {
        self.1.handle_timer(domain, at, ctx);
    }
    fn close(&mut self) {
        self.0.close.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    }
}

#[test]
fn each_partition_actor_inits_its_processor_once_at_start_and_closes_it_at_the_end() {
    let tmp = tempfile::tempdir().unwrap();
    let input = payments();
    write_input(tmp.path(), &input, 8);
    let path = pipeline(tmp.path(), "micro-batch", "counted", None, "[sink]\ntype = \"stdout\"");
    let counts = Arc::new(Lifecycle::default());
    let mut registry = Registry::new();
    let c = counts.clone();
    registry.register_processor("counted", Schema::parse_ddl(processor::OUTPUT).unwrap(), move || {
        Box::new(Counted(c.clone(), processor::Fraud::new(TimeDomain::ProcessingTime)))
    });
    let job = Job::from_file_with_in(&path, &[("parallelism".into(), "3".into())], &registry).unwrap();
    assert_eq!(counts.init.load(std::sync::atomic::Ordering::SeqCst), 0, "validation makes no instance");
    job.run().unwrap();
    assert_eq!(counts.init.load(std::sync::atomic::Ordering::SeqCst), 3, "one per partition actor");
    assert_eq!(counts.close.load(std::sync::atomic::Ordering::SeqCst), 3, "each closed at the end");
}

#[test]
fn a_processor_that_is_not_registered_is_refused_at_query_name_listing_the_registered_ones() {
    let tmp = tempfile::tempdir().unwrap();
    let path = pipeline(tmp.path(), "real-time", "fraud_v2", None, "[sink]\ntype = \"stdout\"");
    let err = Job::from_file_in(&path, &registry()).unwrap_err();
    assert_eq!(err.exit_code(), 2, "{err}");
    let message = err.to_string();
    assert!(message.starts_with("query.name: given \"fraud_v2\""), "{message}");
    assert!(message.contains("fraud, fraud_event_time"), "lists the registered names: {message}");
    // the eddy command's registry is empty
    let err = Job::from_file(&path).unwrap_err();
    assert!(err.to_string().contains("none is registered"), "{err}");
    // the query's other fields are checked as every query's
    let path = pipeline(tmp.path(), "real-time", "fraud", None, "[sink]\ntype = \"stdout\"");
    let set = |field: &str, value: &str| vec![(field.to_string(), value.to_string())];
    let err = Job::from_file_with_in(&path, &set("query.partition_by", "[\"cardd\"]"), &registry()).unwrap_err();
    assert!(err.to_string().starts_with("query.partition_by[0]: given \"cardd\""), "{err}");
    let err = Job::from_file_with_in(&path, &set("query.group_by", "[\"card\"]"), &registry()).unwrap_err();
    assert!(err.to_string().starts_with("query.group_by:"), "{err}");
    assert!(err.to_string().contains("type, name, partition_by"), "{err}");
}

#[test]
fn a_processor_query_has_its_declared_output_schema_under_the_sinks_select() {
    let tmp = tempfile::tempdir().unwrap();
    let sink = "[sink]\ntype = \"stdout\"\nselect = [\"card\", \"at\", \"payments * 2 AS doubled\"]";
    let path = pipeline(tmp.path(), "real-time", "fraud", None, sink);
    let job = Job::from_file_in(&path, &registry()).unwrap();
    let schema: Vec<String> = job.output_schema().iter().map(|f| format!("{} {}", f.name, f.data_type)).collect();
    assert_eq!(schema, ["card STRING", "at TIMESTAMP", "doubled BIGINT"]);
    assert!(job.explain().contains("processor fraud: key (card)"), "{}", job.explain());
}
