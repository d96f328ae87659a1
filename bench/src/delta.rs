//! The `delta` suite (built with `--features delta`): the Delta Lake sink
//! ([`eddy_connectors::delta::DeltaSink`]) writing a local table through the [`Sink`] calls the
//! sink actor makes (rows, then `prepare`, then `commit` per batch / epoch), rows of the seed's
//! tumbling query (`window`, `user_id`, `total`, `txn_count`).
//!
//! - **micro-batch**: batches of 1 and of 100 rows committed back to back into a fresh table:
//!   rows per second and each commit's cost (prepare + commit: Parquet file, fsyncs, renames, one
//!   log version). [`ROUNDS`] rounds of each size, alternating with the same batches into the
//!   files sink ([`FilesSink`]: one JSON-lines file per batch, fsynced and renamed), the baseline
//!   of the same run: the ratio of the two is what this machine's noise leaves comparable.
//! - **real-time, 1-second trigger**: rows written at [`RATE`] per second as they fall due, each
//!   second's epoch prepared and committed at its boundary: the epoch commit's cost (wall time of
//!   prepare + commit on the sink's thread) at p50 / p99 / max over [`EPOCHS`] epochs.
//!
//! Tables go under the temp folder and are removed afterwards.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use eddy_connectors::delta::{DeltaSink, DeltaWrite};
use eddy_connectors::{FilesSink, Sink};
use eddy_engine::schema::{DataType, Field};

use crate::report::{Report, machine};

/// Rounds of each micro-batch size.
const ROUNDS: usize = 3;
/// Batches committed per micro-batch round.
const BATCHES: u64 = 200;
/// Rows per second in the real-time run.
const RATE: u64 = 1000;
/// Epochs of the real-time run (one a second).
const EPOCHS: u64 = 100;

fn columns() -> Vec<Field> {
    vec![
        Field { name: "window".into(), data_type: DataType::Window },
        Field { name: "user_id".into(), data_type: DataType::String },
        Field { name: "total".into(), data_type: DataType::Double },
        Field { name: "txn_count".into(), data_type: DataType::Long },
    ]
}

/// Row `i`: one of 100 users, in 5-minute windows of 2024-01-15.
fn row(i: u64) -> String {
    let minute = (i / 100) % 1440 / 5 * 5;
    let (h, m) = (minute / 60, minute % 60);
    let end = minute + 5;
    format!(
        r#"{{"window": {{"start": "2024-01-15T{h:02}:{m:02}:00Z", "end": "2024-01-15T{:02}:{:02}:00Z"}}, "user_id": "u{:03}", "total": {}.25, "txn_count": {}}}"#,
        (end / 60) % 24,
        end % 60,
        i % 100,
        i % 977,
        1 + i % 7
    )
}

/// A fresh folder for a table (removed by [`Table::drop`]).
struct Table(PathBuf);

impl Table {
    fn new(name: &str) -> Table {
        let dir = std::env::temp_dir().join(format!("eddy-bench-delta-{}-{name}", std::process::id()));
        // a leftover of an earlier run with this process id: start empty (missing is fine)
        let _ = std::fs::remove_dir_all(&dir);
        Table(dir)
    }
}

impl Drop for Table {
    fn drop(&mut self) {
        // best effort: a folder left in the temp folder harms nothing
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// `p` (0..=1) of sorted `v`, nearest rank.
fn percentile(v: &[f64], p: f64) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    v[((p * v.len() as f64).ceil() as usize).clamp(1, v.len()) - 1]
}

fn sorted(mut v: Vec<f64>) -> Vec<f64> {
    v.sort_by(f64::total_cmp);
    v
}

/// The sinks a micro-batch round writes into.
#[derive(Clone, Copy)]
enum SinkKind {
    Delta,
    Files,
}

impl SinkKind {
    fn name(self) -> &'static str {
        match self {
            SinkKind::Delta => "delta",
            SinkKind::Files => "files",
        }
    }
}

/// One micro-batch round: `batches` batches of `rows` rows into a fresh table (or folder);
/// (rows per second, each commit's ms).
fn micro_batch_round(into: SinkKind, rows: u64, batches: u64, name: &str) -> Result<(f64, Vec<f64>)> {
    let table = Table::new(name);
    let mut sink: Box<dyn Sink> = match into {
        SinkKind::Delta => Box::new(DeltaSink::new(&table.0, &columns(), &[], DeltaWrite::Append)?),
        SinkKind::Files => Box::new(FilesSink::new(&table.0, "batch")?),
    };
    let mut commits = Vec::with_capacity(batches as usize);
    let start = Instant::now();
    for b in 0..batches {
        for i in 0..rows {
            sink.write(b, &row(b * rows + i), None)?;
        }
        let c = Instant::now();
        sink.prepare(b)?;
        sink.commit(b)?;
        commits.push(c.elapsed().as_secs_f64() * 1e3);
    }
    let secs = start.elapsed().as_secs_f64();
    Ok(((rows * batches) as f64 / secs, commits))
}

/// The real-time run: `(prepare ms, commit ms, prepare + commit ms)` of each epoch.
fn real_time(epochs: u64, rate: u64) -> Result<Vec<(f64, f64, f64)>> {
    let table = Table::new("real-time");
    let mut sink = DeltaSink::new(&table.0, &columns(), &[], DeltaWrite::Append)?;
    let start = Instant::now();
    let mut out = Vec::with_capacity(epochs as usize);
    let mut i = 0u64;
    for epoch in 0..epochs {
        let boundary = start + Duration::from_secs(epoch + 1);
        // the epoch's rows, each written when due
        loop {
            let due = start + Duration::from_nanos(i * 1_000_000_000 / rate);
            if due >= boundary {
                break;
            }
            if let Some(wait) = due.checked_duration_since(Instant::now()) {
                std::thread::sleep(wait);
            }
            sink.write(epoch, &row(i), None)?;
            i += 1;
        }
        if let Some(wait) = boundary.checked_duration_since(Instant::now()) {
            std::thread::sleep(wait);
        }
        let t0 = Instant::now();
        sink.prepare(epoch)?;
        let t1 = Instant::now();
        sink.commit(epoch)?;
        let t2 = Instant::now();
        let ms = |d: Duration| d.as_secs_f64() * 1e3;
        out.push((ms(t1 - t0), ms(t2 - t1), ms(t2 - t0)));
    }
    Ok(out)
}

/// Runs the suite and writes `bench/results/delta.md` and `.json` (smoke: tiny sizes, temp
/// folder).
///
/// # Errors
/// When the sink fails (a path, a commit) or the report cannot be written.
pub fn delta(smoke: bool) -> Result<()> {
    let (rounds, batches, epochs) = if smoke { (1, 3, 2) } else { (ROUNDS, BATCHES, EPOCHS) };
    let mut report = Report::new("delta", smoke);
    report.line(&format!("machine: {}\n", machine()));
    report.line(&format!("## delta: micro-batch, {batches} batches committed back to back into a fresh local table\n"));
    report.line(
        "| sink | rows per commit | round | rows/s | commits/s | commit p50 ms | commit p99 ms | commit max ms |",
    );
    report.line("|---|---|---|---|---|---|---|---|");
    let mut doc = serde_json::json!({ "micro_batch": [], "real_time": {} });
    let sizes = [1u64, 100];
    let sinks = [SinkKind::Delta, SinkKind::Files];
    // rates[size][sink]
    let mut rates: Vec<Vec<Vec<f64>>> = vec![vec![Vec::new(); sinks.len()]; sizes.len()];
    for round in 1..=rounds {
        for (s, &rows) in sizes.iter().enumerate() {
            for (k, &into) in sinks.iter().enumerate() {
                let (rate, commits) =
                    micro_batch_round(into, rows, batches, &format!("mb-{}-{rows}-{round}", into.name()))
                        .with_context(|| format!("micro-batch into {}, {rows} rows per commit", into.name()))?;
                let c = sorted(commits);
                report.line(&format!(
                    "| {} | {rows} | {round} | {rate:.0} | {:.1} | {:.2} | {:.2} | {:.2} |",
                    into.name(),
                    rate / rows as f64,
                    percentile(&c, 0.5),
                    percentile(&c, 0.99),
                    percentile(&c, 1.0)
                ));
                rates[s][k].push(rate);
                doc["micro_batch"].as_array_mut().expect("an array").push(serde_json::json!({
                    "sink": into.name(), "rows_per_commit": rows, "round": round, "rows_per_second": rate,
                    "commit_ms_p50": percentile(&c, 0.5), "commit_ms_p99": percentile(&c, 0.99),
                    "commit_ms_max": percentile(&c, 1.0),
                }));
            }
        }
    }
    report.line("");
    for (s, &rows) in sizes.iter().enumerate() {
        let medians: Vec<f64> = rates[s]
            .iter()
            .zip(sinks)
            .map(|(r, into)| {
                let r = sorted(r.clone());
                report.line(&format!(
                    "{rows} row(s) per commit into {}: median {:.0} rows/s [{:.0} - {:.0}]",
                    into.name(),
                    percentile(&r, 0.5),
                    r[0],
                    r[r.len() - 1]
                ));
                percentile(&r, 0.5)
            })
            .collect();
        report.line(&format!("{rows} row(s) per commit: delta / files sink (medians) {:.3}", medians[0] / medians[1]));
    }
    report.line("");
    report.line(&format!("## delta: real-time, 1-second trigger, {RATE} rows/s, {epochs} epochs\n"));
    let epochs_ms = real_time(epochs, RATE).context("real-time epochs")?;
    let prepare = sorted(epochs_ms.iter().map(|e| e.0).collect());
    let commit = sorted(epochs_ms.iter().map(|e| e.1).collect());
    let total = sorted(epochs_ms.iter().map(|e| e.2).collect());
    report.line("| step | p50 ms | p99 ms | max ms |");
    report.line("|---|---|---|---|");
    for (step, v) in [
        ("prepare (Parquet file, fsyncs)", &prepare),
        ("commit (renames, log version)", &commit),
        ("epoch commit: prepare + commit", &total),
    ] {
        report.line(&format!(
            "| {step} | {:.2} | {:.2} | {:.2} |",
            percentile(v, 0.5),
            percentile(v, 0.99),
            percentile(v, 1.0)
        ));
    }
    report.line("");
    doc["real_time"] = serde_json::json!({
        "rows_per_second": RATE, "epochs": epochs,
        "epoch_commit_ms_p50": percentile(&total, 0.5), "epoch_commit_ms_p99": percentile(&total, 0.99),
        "epoch_commit_ms_max": percentile(&total, 1.0),
        "prepare_ms_p50": percentile(&prepare, 0.5), "commit_ms_p50": percentile(&commit, 0.5),
    });
    report.finish(doc)
}
