//! Chaining: a real-time pipeline with one partition runs the partition's work on the source
//! actor's thread (`eddy_actors::source::Downstream::Chained`); with `RunOptions::unchained`
//! the partition actor has its own thread, as at higher parallelism. Both must fire timers on
//! the system clock while the input is idle: here a rolling window whose records leave their
//! range (an expiry row each) when no record is coming any more.
//!
//! The source and sink are stand-ins written for this test (a source that yields a few records
//! and then nothing, a sink that collects rows); the runtime between them is the real one.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use eddy_actors::clock::{Clock, SystemClock};
use eddy_actors::{RunOptions, run_pipeline};
use eddy_connectors::{ConnectorError, Payload, Poll, Position, Sink, Source, SourceItem};
use eddy_engine::spec::parse_pipeline_str;
use eddy_engine::time::parse_timestamp;
use eddy_engine::{Record, Timestamp, Value};

/// The range of the test's rolling measure.
const RANGE_US: i64 = 300_000;

/// Test stand-in: yields `records` at its first poll, then nothing (idle, waiting out each
/// poll's timeout in short sleeps), never exhausted.
struct ThenIdle {
    records: Vec<Record>,
}

impl Source for ThenIdle {
    fn poll(&mut self, out: &mut Vec<SourceItem>, _: usize, timeout: Duration) -> Result<Poll, ConnectorError> {
        if self.records.is_empty() {
            std::thread::sleep(timeout.min(Duration::from_millis(2)));
            return Ok(Poll::Idle);
        }
        for (i, r) in self.records.drain(..).enumerate() {
            out.push(SourceItem {
                payload: Payload::Record(r),
                position: Position::Generated { event: i as u64 },
                created_ns: 0,
            });
        }
        Ok(Poll::Data)
    }
}

/// Test stand-in: collects every row written.
struct Collect(Arc<Mutex<Vec<String>>>);

impl Sink for Collect {
    fn write(&mut self, _: u64, line: &str, _: Option<&str>) -> Result<(), ConnectorError> {
        self.0.lock().map_err(|_| ConnectorError::External("poisoned".into()))?.push(line.to_string());
        Ok(())
    }

    fn commit(&mut self, _: u64) -> Result<(), ConnectorError> {
        Ok(())
    }
}

/// Runs the rolling window over three records (event time: just before now) until six rows came
/// (an arrival and an expiry row per key) or 10 s passed, then stops it. Returns the rows written
/// before the stop (the stop's last barrier would fire every timer anyway), and the records'
/// event time. The epoch is an hour long, so that no barrier fires the timers meanwhile.
fn run(unchained: bool) -> (Vec<serde_json::Value>, Timestamp) {
    let text = format!(
        "name = \"chaining\"\nmode = \"real-time\"\nparallelism = 1\ntrigger = \"1 hour\"\n\n\
         [source]\ntype = \"stdin\"\nformat = \"json\"\nschema = \"k STRING, ts TIMESTAMP, v BIGINT\"\n\n\
         [query]\ntype = \"rolling_window\"\npartition_by = [\"k\"]\norder_by = \"ts\"\n\
         measures = [{{ agg = \"sum\", column = \"v\", over = \"{} milliseconds\", alias = \"total\" }}]\n\n\
         [sink]\ntype = \"stdout\"\n",
        RANGE_US / 1000
    );
    let pipeline = parse_pipeline_str(&text).expect("the test's pipeline");
    let ts = Timestamp(SystemClock.now().0 - 1_000);
    let records = ["a", "b", "c"]
        .iter()
        .map(|k| Record::new(vec![Value::Str((*k).into()), Value::Timestamp(ts), Value::Long(5)]))
        .collect();
    let rows = Arc::new(Mutex::new(Vec::new()));
    let stop = Arc::new(AtomicBool::new(false));
    let runner = {
        let (rows, stop) = (rows.clone(), stop.clone());
        std::thread::spawn(move || {
            run_pipeline(
                &pipeline,
                RunOptions {
                    stop: Some(stop),
                    source_override: Some(Box::new(ThenIdle { records })),
                    sink_override: Some(Box::new(Collect(rows))),
                    unchained,
                    ..RunOptions::default()
                },
            )
        })
    };
    let started = Instant::now();
    while rows.lock().expect("rows").len() < 6 && started.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(10));
    }
    let before_stop = rows.lock().expect("rows").len();
    stop.store(true, Ordering::SeqCst);
    runner.join().expect("the run panicked").expect("the run failed");
    let rows = rows.lock().expect("rows")[..before_stop]
        .iter()
        .map(|l| serde_json::from_str(l).expect("a JSON row"))
        .collect();
    (rows, ts)
}

fn check(unchained: bool) {
    let (rows, ts) = run(unchained);
    let what = if unchained { "partition actor on its own thread" } else { "chained" };
    for k in ["a", "b", "c"] {
        let of_key: Vec<&serde_json::Value> = rows.iter().filter(|r| r["k"] == k).collect();
        assert_eq!(of_key.len(), 2, "{what}: key {k}: an arrival and an expiry row, got {rows:?}");
        assert_eq!(of_key[0]["total"], 5, "{what}: key {k}: arrival row {:?}", of_key[0]);
        assert!(of_key[1]["total"].is_null(), "{what}: key {k}: expiry row {:?}", of_key[1]);
        let frontier = parse_timestamp(of_key[1]["__frontier"].as_str().expect("a frontier")).expect("a timestamp");
        // The record leaves its range at exactly F = ts + range (SEMANTICS.md, rolling window).
        assert_eq!(frontier, Timestamp(ts.0 + RANGE_US), "{what}: key {k}: expiry row {:?}", of_key[1]);
    }
}

#[test]
fn chained_partition_fires_timers_on_the_system_clock_while_the_input_is_idle() {
    check(false);
}

#[test]
fn unchained_partition_fires_timers_on_the_system_clock_while_the_input_is_idle() {
    check(true);
}
