//! The Delta sink end to end (PIPELINE.md "Delta Lake sink"): the seed's tumbling query
//! (`examples/delta/tumbling-per-user.toml`) writes a Delta table and, unchanged but for its sink,
//! files; independent readers read the table back and `../shared/tools/compare.py --all` compares
//! their rows with the files':
//! - the `deltalake` Python package (delta-rs's binding; `scripts/test.sh` installs it into
//!   `~/.cache/delta-reader-venv`, or `DELTA_READER_PYTHON` names a python that has it), which
//!   also gives the table's versions and each version's `txn`;
//! - plain Spark (the oracle's pyspark, `~/.cache/spark-oracle-venv`, or `SPARK_ORACLE_PYTHON`)
//!   reading the Parquet files that the log references.
//!
//! The files sink names each batch's file after its batch number, so it tells which batches had
//! rows: the table must have exactly one version for each, carrying that batch number as its
//! `txn` version and the checkpoint's application id.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

fn venv_python(var: &str, venv: &str) -> PathBuf {
    let python = std::env::var_os(var).map(PathBuf::from).unwrap_or_else(|| {
        PathBuf::from(std::env::var_os("HOME").expect("HOME")).join(".cache").join(venv).join("bin/python")
    });
    assert!(python.exists(), "{} missing: scripts/test.sh installs it (or set {var})", python.display());
    python
}

/// The example's 400 records split into 4 files of 100: 4 micro-batches with input (and the
/// no-data batches the watermark asks for).
fn split_input(dir: &Path) -> PathBuf {
    let text = std::fs::read_to_string(common::root().join("examples/data/revenue/events.jsonl")).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 400);
    let input = dir.join("in");
    std::fs::create_dir_all(&input).unwrap();
    for (i, chunk) in lines.chunks(100).enumerate() {
        std::fs::write(input.join(format!("{i:03}.jsonl")), chunk.join("\n") + "\n").unwrap();
    }
    input
}

/// Runs the tumbling example with these `--set` overrides; panics on failure.
fn run(sets: &[String]) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_eddy"));
    cmd.args(["run", "--no-progress"]);
    for s in sets {
        cmd.arg("--set").arg(s);
    }
    let out =
        cmd.arg(common::root().join("examples/delta/tumbling-per-user.toml")).env("EDDY_LOG", "warn").output().unwrap();
    assert!(out.status.success(), "{sets:?}: {}", String::from_utf8_lossy(&out.stderr));
}

/// The tumbling example run twice over the same input: into Delta (`<dir>/delta`, checkpoint
/// `<dir>/ck`) and into files (`<dir>/files`).
fn delta_and_files(dir: &Path) {
    let input = split_input(dir);
    let common_sets = |ck: &str| {
        vec![
            format!("source.path={}", input.display()),
            "source.max_files_per_trigger=1".to_string(),
            format!("checkpoint.path={}", dir.join(ck).display()),
        ]
    };
    let mut delta = common_sets("ck");
    delta.push(format!("sink.path={}", dir.join("delta").display()));
    run(&delta);
    let mut files = common_sets("ck-files");
    files.push("sink.type=files".to_string());
    files.push(format!("sink.path={}", dir.join("files").display()));
    run(&files);
}

/// Compares the rows under `actual` with the files sink's (`compare.py --all`).
fn compare_all(expected: &Path, actual: &Path) {
    let out = Command::new("python3")
        .arg(common::root().join("../shared/tools/compare.py"))
        .arg(expected)
        .arg(actual)
        .arg("--all")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
}

/// The batch numbers of the files sink's files (the batches that had rows).
fn batches_with_rows(files: &Path) -> Vec<i64> {
    let mut ids: Vec<i64> = std::fs::read_dir(files)
        .unwrap()
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().into_string().unwrap();
            let id = name.strip_prefix("batch-")?.strip_suffix(".jsonl")?.parse().ok()?;
            let rows = std::fs::read_to_string(e.path()).unwrap();
            (!rows.trim().is_empty()).then_some(id)
        })
        .collect();
    ids.sort_unstable();
    ids
}

#[test]
fn delta_table_read_by_delta_rs_python_matches_the_files_sink_with_one_version_per_batch_with_rows() {
    let python = venv_python("DELTA_READER_PYTHON", "delta-reader-venv");
    let dir = tempfile::tempdir().unwrap();
    delta_and_files(dir.path());
    let out = Command::new(&python)
        .arg(common::root().join("tests/delta/read_table.py"))
        .arg(dir.path().join("delta"))
        .arg(dir.path().join("read"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let summary: Value = serde_json::from_slice(&out.stdout).unwrap();
    compare_all(&dir.path().join("files"), &dir.path().join("read"));

    let batches = batches_with_rows(&dir.path().join("files"));
    assert!(batches.len() >= 2, "the example gives rows in several batches: {batches:?}");
    let history = summary["history"].as_array().unwrap();
    assert_eq!(history.len(), batches.len(), "one version per batch with rows: {summary}");
    assert_eq!(summary["version"].as_i64().unwrap(), batches.len() as i64 - 1);
    let app_id = std::fs::read_to_string(dir.path().join("ck/delta-tumbling-per-user/application-id")).unwrap();
    let txns: Vec<(i64, String, i64)> = summary["txns"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| (t[0].as_i64().unwrap(), t[1].as_str().unwrap().to_string(), t[2].as_i64().unwrap()))
        .collect();
    let expected: Vec<(i64, String, i64)> =
        batches.iter().enumerate().map(|(v, &b)| (v as i64, app_id.trim().to_string(), b)).collect();
    assert_eq!(txns, expected, "each version's txn: the checkpoint's app id, the batch number");
    assert_eq!(summary["latest_txn"][app_id.trim()].as_i64(), batches.last().copied());
}

#[test]
fn spark_reads_the_parquet_files_the_delta_log_references_as_the_same_rows() {
    let python = venv_python("SPARK_ORACLE_PYTHON", "spark-oracle-venv");
    let dir = tempfile::tempdir().unwrap();
    delta_and_files(dir.path());
    let out = Command::new(&python)
        .arg(common::root().join("tests/delta/spark_read_parquet.py"))
        .arg(dir.path().join("delta"))
        .arg(dir.path().join("spark"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    compare_all(&dir.path().join("files"), &dir.path().join("spark"));
}

#[test]
fn a_rerun_from_the_finished_checkpoint_adds_no_version() {
    let dir = tempfile::tempdir().unwrap();
    delta_and_files(dir.path());
    let log = |d: &Path| std::fs::read_dir(d.join("delta/_delta_log")).unwrap().count();
    let before = log(dir.path());
    // the same input, the same checkpoint: nothing new to write
    let input = dir.path().join("in");
    run(&[
        format!("source.path={}", input.display()),
        "source.max_files_per_trigger=1".to_string(),
        format!("checkpoint.path={}", dir.path().join("ck").display()),
        format!("sink.path={}", dir.path().join("delta").display()),
    ]);
    assert_eq!(log(dir.path()), before);
}

#[test]
fn a_delta_sink_in_update_mode_exits_2_naming_the_field() {
    let out = Command::new(env!("CARGO_BIN_EXE_eddy"))
        .args(["validate", "--set", "query.output_mode=update"])
        .arg(common::root().join("examples/delta/tumbling-per-user.toml"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("query.output_mode") && stderr.contains("Spark's Delta sink refuses update mode"),
        "{stderr}"
    );
}
