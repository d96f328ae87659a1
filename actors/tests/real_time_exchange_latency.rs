//! The real-time exchange moves rows as they are emitted, not at an epoch's end: over two
//! partition actors, a chained aggregation keyed by window alone (its input crossing the
//! exchange) emits a window's row while the epoch (an hour long) is still open and the input is
//! idle, once both actors' watermarks passed the window. Expected rows are written by hand from
//! SEMANTICS.md "Several stateful operators (chained)".
//!
//! The source and sink are stand-ins written for this test (a source that yields a few records
//! and then nothing, a sink that collects rows); the runtime between them is the real one.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use eddy_actors::{RunOptions, run_pipeline};
use eddy_connectors::{ConnectorError, Payload, Poll, Position, Sink, Source, SourceItem};
use eddy_engine::time::parse_timestamp;
use eddy_engine::{Record, Value};

/// Test stand-in: yields `records` at its first poll, then nothing (idle), never exhausted.
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

const PIPELINE: &str = r#"
name = "real-time-exchange-latency"
mode = "real-time"
parallelism = 2
trigger = "1 hour"
[source]
type = "stdin"
format = "json"
schema = "k STRING, ts TIMESTAMP"
[watermark]
column = "ts"
delay = "0 seconds"
[query]
sql = """
SELECT window, count(*) AS keys, sum(n) AS records
FROM (SELECT window(ts, '1 second') AS window, k, count(*) AS n FROM source GROUP BY 1, 2)
GROUP BY window
"""
output_mode = "append"
[sink]
type = "stdout"
"#;

#[test]
fn an_exchanged_window_is_emitted_before_the_epoch_ends_once_every_actor_passed_it() {
    let pipeline = eddy_sql::parse_pipeline_str(PIPELINE).expect("the test's pipeline");
    let at = |s: &str| Value::Timestamp(parse_timestamp(s).expect("a timestamp"));
    // 20 keys (spread over both actors by their hash): two records each in [0 s, 1 s), then one
    // at 5 s, which moves the watermark past the first window on both actors
    let mut records = Vec::new();
    for ts in ["2024-03-01T12:00:00.100Z", "2024-03-01T12:00:00.700Z", "2024-03-01T12:00:05Z"] {
        for k in 0..20 {
            records.push(Record::new(vec![Value::Str(format!("k{k}").into()), at(ts)]));
        }
    }
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
                    ..RunOptions::default()
                },
            )
        })
    };
    let started = Instant::now();
    while rows.lock().expect("rows").is_empty() && started.elapsed() < Duration::from_secs(20) {
        std::thread::sleep(Duration::from_millis(10));
    }
    // a little longer: a second row now would be one the watermark did not finalise
    std::thread::sleep(Duration::from_millis(200));
    let before_stop: Vec<serde_json::Value> =
        rows.lock().expect("rows").iter().map(|l| serde_json::from_str(l).expect("a JSON row")).collect();
    stop.store(true, Ordering::SeqCst);
    runner.join().expect("the run panicked").expect("the run failed");
    assert_eq!(before_stop.len(), 1, "one window finalised while the epoch is open: {before_stop:?}");
    let row = &before_stop[0];
    assert_eq!(row["window"]["start"], "2024-03-01T12:00:00Z", "{row}");
    assert_eq!(row["keys"], 20, "{row}");
    assert_eq!(row["records"], 40, "{row}");
}
