//! forEach sinks through the `eddy` library: the writer is opened per partition and epoch,
//! `open` returning false skips an epoch it has already, so across a restart that replays epochs
//! it sees every row once; a failing writer fails the run (exit 1) after its close; a writer
//! that is not registered is refused before anything starts (exit 2).
//!
//! Expected rows: the real-time golden case `tests/realtime/window-update` (written by its
//! brute-force reference, `tests/realtime/reference.py`).

use std::collections::{BTreeMap, HashSet};
use std::path::Path;
use std::sync::{Arc, Mutex};

use eddy::{ForeachWriter, Job, RowView, WriterError};

mod common;
use common::{copy_dir, root};

/// What every writer of a test saw, shared (as a user's store would be).
#[derive(Debug, Default)]
struct Ledger {
    /// (partition, epoch) pairs closed without error: their rows are in `rows`.
    committed: HashSet<(usize, u64)>,
    /// Rows kept, as JSON.
    rows: Vec<String>,
    /// `open` calls answered false.
    skipped: usize,
    /// Rows given to `process` for a pair already committed (must stay 0).
    seen_twice: usize,
    /// `close` calls with an error.
    closed_with_error: Vec<String>,
}

/// A writer that keeps the rows of an epoch once it is closed without error, and answers
/// `open` with false for pairs it has already.
struct LedgerWriter {
    ledger: Arc<Mutex<Ledger>>,
    open: Option<(usize, u64)>,
    pending: Vec<String>,
    /// Fails `process` at this row of the run (counted over this writer's rows), if any.
    fail_at: Option<usize>,
    processed: usize,
}

impl ForeachWriter for LedgerWriter {
    fn open(&mut self, partition: usize, epoch: u64) -> Result<bool, WriterError> {
        let mut ledger = self.ledger.lock().unwrap();
        self.open = Some((partition, epoch));
        if ledger.committed.contains(&(partition, epoch)) {
            ledger.skipped += 1;
            return Ok(false);
        }
        Ok(true)
    }

    fn process(&mut self, row: RowView<'_>) -> Result<(), WriterError> {
        self.processed += 1;
        if self.fail_at == Some(self.processed) {
            return Err("the store refused the row".into());
        }
        let pair = self.open.expect("process without open");
        let mut ledger = self.ledger.lock().unwrap();
        if ledger.committed.contains(&pair) {
            ledger.seen_twice += 1;
        }
        self.pending.push(row.to_json());
        Ok(())
    }

    fn close(&mut self, error: Option<&str>) {
        let mut ledger = self.ledger.lock().unwrap();
        let pair = self.open.take();
        match (error, pair) {
            (None, Some(pair)) => {
                if ledger.committed.insert(pair) {
                    ledger.rows.append(&mut self.pending);
                }
            }
            (Some(e), _) => ledger.closed_with_error.push(e.to_string()),
            (None, None) => {}
        }
        self.pending.clear();
    }
}

/// The `window-update` case copied into `dir`, its `[sink]` a forEach writer named `ledger`.
fn case_with_foreach_sink(dir: &Path) -> std::path::PathBuf {
    copy_dir(&root().join("tests/realtime/window-update"), dir);
    let text = std::fs::read_to_string(dir.join("pipeline.toml")).unwrap();
    let at = text.find("[sink]").expect("the case has a [sink]");
    let text = format!("{}[sink]\ntype = \"foreach\"\nname = \"ledger\"\n", &text[..at]);
    let path = dir.join("foreach.toml");
    std::fs::write(&path, text).unwrap();
    path
}

fn job(pipeline: &Path, ledger: &Arc<Mutex<Ledger>>, fail_at: Option<usize>) -> Job {
    let overrides = [("parallelism".to_string(), "2".to_string()), ("checkpoint.path".to_string(), "ck".to_string())];
    let ledger = ledger.clone();
    Job::from_file_with(pipeline, &overrides).unwrap().foreach("ledger", move || {
        Box::new(LedgerWriter { ledger: ledger.clone(), open: None, pending: Vec::new(), fail_at, processed: 0 })
    })
}

/// Rows as a multiset of JSON values.
fn multiset<'a>(lines: impl IntoIterator<Item = &'a str>) -> BTreeMap<String, usize> {
    let mut m = BTreeMap::new();
    for line in lines {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        *m.entry(v.to_string()).or_default() += 1;
    }
    m
}

#[test]
fn foreach_writer_skips_epochs_it_has_and_sees_every_row_once_across_a_restart() {
    let tmp = tempfile::tempdir().unwrap();
    let pipeline = case_with_foreach_sink(tmp.path());
    let ledger = Arc::new(Mutex::new(Ledger::default()));

    // First run: stops once epoch 1 is committed.
    job(&pipeline, &ledger, None).stop_after(1).run().unwrap();
    let first = ledger.lock().unwrap().committed.iter().map(|&(_, e)| e).max();
    assert_eq!(first, Some(1), "the first run wrote epochs up to 1");
    // A crash between the writers' close of epoch 1 and its checkpoint: the newest checkpoint
    // is lost, so the restart resumes after epoch 0 and runs epoch 1 again.
    let folder = tmp.path().join("ck/window-update");
    let mut manifests: Vec<String> = std::fs::read_dir(&folder)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().to_string())
        .filter(|n| n.starts_with("manifest-"))
        .collect();
    manifests.sort();
    assert_eq!(manifests.last().map(String::as_str), Some("manifest-00000000000000000001"));
    std::fs::remove_file(folder.join(manifests.last().unwrap())).unwrap();

    job(&pipeline, &ledger, None).run().unwrap();

    let ledger = ledger.lock().unwrap();
    assert!(ledger.skipped >= 1, "the replayed epoch 1 was skipped by open: {ledger:?}");
    assert_eq!(ledger.seen_twice, 0, "no row of a written epoch was given again");
    assert!(ledger.closed_with_error.is_empty(), "{:?}", ledger.closed_with_error);
    let expected = std::fs::read_to_string(root().join("tests/realtime/window-update/expected/all.jsonl")).unwrap();
    let got = multiset(ledger.rows.iter().map(String::as_str));
    let want = multiset(expected.lines().filter(|l| !l.trim().is_empty()));
    assert_eq!(got, want, "every expected row exactly once");
}

#[test]
fn a_failing_foreach_writer_is_closed_with_its_error_and_fails_the_run_with_exit_1() {
    let tmp = tempfile::tempdir().unwrap();
    let pipeline = case_with_foreach_sink(tmp.path());
    let ledger = Arc::new(Mutex::new(Ledger::default()));
    let err = job(&pipeline, &ledger, Some(3)).run().expect_err("the writer fails on its third row");
    assert_eq!(err.exit_code(), 1, "{err}");
    let message = err.to_string();
    assert!(message.contains("ledger") && message.contains("the store refused the row"), "{message}");
    let ledger = ledger.lock().unwrap();
    assert!(
        ledger.closed_with_error.iter().any(|e| e.contains("the store refused the row")),
        "close was given the error: {:?}",
        ledger.closed_with_error
    );
}

#[test]
fn a_foreach_sink_naming_no_registered_writer_is_refused_with_exit_2() {
    let tmp = tempfile::tempdir().unwrap();
    let pipeline = case_with_foreach_sink(tmp.path());
    let err = Job::from_file(&pipeline).unwrap().run().expect_err("nothing registered as ledger");
    assert_eq!(err.exit_code(), 2, "{err}");
    assert!(err.to_string().starts_with("sink.name:"), "{err}");
}
