//! The `eddy` library's run handle: an endless pipeline started with `Job::start` reports its
//! progress while it runs and ends cleanly (its last epoch committed) when stopped.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use eddy::{ForeachWriter, Job, RowView, WriterError};

/// Counts the rows of epochs closed without error.
struct Count(Arc<AtomicU64>, u64);

impl ForeachWriter for Count {
    fn open(&mut self, _partition: usize, _epoch: u64) -> Result<bool, WriterError> {
        self.1 = 0;
        Ok(true)
    }
    fn process(&mut self, _row: RowView<'_>) -> Result<(), WriterError> {
        self.1 += 1;
        Ok(())
    }
    fn close(&mut self, error: Option<&str>) {
        if error.is_none() {
            self.0.fetch_add(self.1, Ordering::SeqCst);
        }
    }
}

#[test]
fn a_started_endless_run_reports_progress_and_stops_when_asked() {
    // an endless generator: without a stop the run never ends
    let pipeline = r#"
        name = "endless"
        mode = "real-time"
        trigger = "100 milliseconds"
        parallelism = 2
        [source]
        type = "nexmark"
        rate = 20000
        [query]
        type = "deduplicate"
        columns = ["auction", "bidder", "price", "date_time"]
        [sink]
        type = "foreach"
        name = "count"
    "#;
    let rows = Arc::new(AtomicU64::new(0));
    let seen = rows.clone();
    let handle = Job::from_toml(pipeline)
        .unwrap()
        .foreach("count", move || Box::new(Count(seen.clone(), 0)) as Box<dyn ForeachWriter>)
        .start()
        .unwrap();
    // A guard against a hang, not a speed check: 20,000 records/s need well under a second.
    let waited = |what: &str, done: &dyn Fn() -> bool| {
        let since = std::time::Instant::now();
        while !done() {
            assert!(since.elapsed().as_secs() < 120, "{what} after two minutes");
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    };
    waited("no progress reported", &|| handle.progress().records >= 1000 || handle.is_finished());
    assert!(!handle.is_finished(), "an endless run ended by itself");
    handle.stop();
    waited("the run did not stop", &|| handle.is_finished());
    let summary = handle.join().expect("a stopped run ends without error");
    assert!(summary.records >= 1000, "{summary:?}");
    assert!(summary.committed >= 1, "the stop commits the last epoch: {summary:?}");
    assert_eq!(rows.load(Ordering::SeqCst), summary.rows, "every row written went to a closed epoch");
}
