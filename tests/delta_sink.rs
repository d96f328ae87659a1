//! The Delta sink end to end (PIPELINE.md "Delta Lake sink"): each of the seed's window queries
//! (`examples/delta/*.toml`: tumbling, sliding, session) writes a Delta table and, unchanged but
//! for its sink, files; independent readers read the tables back and
//! `../shared/tools/compare.py --all` compares their rows with the files':
//! - the `deltalake` Python package (delta-rs's binding; `scripts/test.sh` installs it into
//!   `~/.cache/delta-reader-venv`, or `DELTA_READER_PYTHON` names a python that has it), which
//!   also gives the table's versions and each version's `txn`;
//! - plain Spark (the oracle's pyspark, `~/.cache/spark-oracle-venv`, or `SPARK_ORACLE_PYTHON`)
//!   reading the Parquet files that the log references.
//!
//! The files sink names each batch's file after its batch number, so it tells which batches had
//! rows: the table must have exactly one version for each, carrying that batch number as its
//! `txn` version and the checkpoint's application id.
//!
//! Bad input (a sink path that cannot be a folder, a folder holding a table of other columns,
//! update mode) exits 2 naming the field and writes nothing.

mod common;
#[path = "common/moto.rs"]
mod moto;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use moto::Moto;
use serde_json::Value;

/// The example pipelines (under `examples/delta/`) and their `name` (the checkpoint's folder).
const EXAMPLES: [(&str, &str); 3] = [
    ("tumbling-per-user.toml", "delta-tumbling-per-user"),
    ("sliding-per-user.toml", "delta-sliding-per-user"),
    ("session-per-user.toml", "delta-session-per-user"),
];

fn venv_python(var: &str, venv: &str) -> PathBuf {
    let python = std::env::var_os(var).map(PathBuf::from).unwrap_or_else(|| {
        PathBuf::from(std::env::var_os("HOME").expect("HOME")).join(".cache").join(venv).join("bin/python")
    });
    assert!(python.exists(), "{} missing: scripts/test.sh installs it (or set {var})", python.display());
    python
}

/// The examples' 400 records split into 4 files of 100: 4 micro-batches with input (and the
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

/// `eddy <command>` on `examples/delta/<example>` with these `--set` overrides.
fn eddy(command: &str, example: &str, sets: &[String]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_eddy"));
    cmd.arg(command);
    if command == "run" {
        cmd.arg("--no-progress");
    }
    for s in sets {
        cmd.arg("--set").arg(s);
    }
    cmd.arg(common::root().join("examples/delta").join(example)).env("EDDY_LOG", "warn").output().unwrap()
}

/// Runs `example` with these `--set` overrides; panics on failure.
fn run(example: &str, sets: &[String]) {
    let out = eddy("run", example, sets);
    assert!(out.status.success(), "{example} {sets:?}: {}", String::from_utf8_lossy(&out.stderr));
}

/// The overrides of a run over `input` (one file per batch) with its checkpoint in `ck` and its
/// sink at `sink` (`delta` unless `files`).
fn sets(input: &Path, ck: &Path, sink: &Path, files: bool) -> Vec<String> {
    let mut s = vec![
        format!("source.path={}", input.display()),
        "source.max_files_per_trigger=1".to_string(),
        format!("checkpoint.path={}", ck.display()),
        format!("sink.path={}", sink.display()),
    ];
    if files {
        s.push("sink.type=files".to_string());
    }
    s
}

/// `example` run twice over the same input: into Delta (`<dir>/delta`, checkpoint `<dir>/ck`)
/// and into files (`<dir>/files`).
fn delta_and_files(dir: &Path, example: &str) {
    let input = split_input(dir);
    run(example, &sets(&input, &dir.join("ck"), &dir.join("delta"), false));
    run(example, &sets(&input, &dir.join("ck-files"), &dir.join("files"), true));
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
    assert!(
        out.status.success(),
        "{} vs {}: {}{}",
        expected.display(),
        actual.display(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
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

/// Every file under `dir` (relative paths) with its size, sorted; empty if `dir` is missing.
fn tree(dir: &Path) -> Vec<(PathBuf, u64)> {
    fn walk(base: &Path, dir: &Path, out: &mut Vec<(PathBuf, u64)>) {
        for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            if e.path().is_dir() {
                walk(base, &e.path(), out);
            } else {
                out.push((e.path().strip_prefix(base).unwrap().to_path_buf(), e.metadata().unwrap().len()));
            }
        }
    }
    let mut out = Vec::new();
    walk(dir, dir, &mut out);
    out.sort();
    out
}

#[test]
fn each_example_table_read_by_delta_rs_python_matches_the_files_sink_with_one_version_per_batch_with_rows() {
    let python = venv_python("DELTA_READER_PYTHON", "delta-reader-venv");
    for (example, name) in EXAMPLES {
        let dir = tempfile::tempdir().unwrap();
        delta_and_files(dir.path(), example);
        let out = Command::new(&python)
            .arg(common::root().join("tests/delta/read_table.py"))
            .arg(dir.path().join("delta"))
            .arg(dir.path().join("read"))
            .output()
            .unwrap();
        assert!(out.status.success(), "{example}: {}", String::from_utf8_lossy(&out.stderr));
        let summary: Value = serde_json::from_slice(&out.stdout).unwrap();
        compare_all(&dir.path().join("files"), &dir.path().join("read"));

        let batches = batches_with_rows(&dir.path().join("files"));
        assert!(batches.len() >= 2, "{example} gives rows in several batches: {batches:?}");
        let history = summary["history"].as_array().unwrap();
        assert_eq!(history.len(), batches.len(), "{example}: one version per batch with rows: {summary}");
        assert_eq!(summary["version"].as_i64().unwrap(), batches.len() as i64 - 1, "{example}: {summary}");
        let app_id = std::fs::read_to_string(dir.path().join("ck").join(name).join("application-id")).unwrap();
        let app_id = app_id.trim();
        let txns: Vec<(i64, String, i64)> = summary["txns"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| (t[0].as_i64().unwrap(), t[1].as_str().unwrap().to_string(), t[2].as_i64().unwrap()))
            .collect();
        let expected: Vec<(i64, String, i64)> =
            batches.iter().enumerate().map(|(v, &b)| (v as i64, app_id.to_string(), b)).collect();
        assert_eq!(txns, expected, "{example}: each version's txn: the checkpoint's app id, the batch number");
        assert_eq!(summary["latest_txn"][app_id].as_i64(), batches.last().copied(), "{example}: {summary}");
    }
}

#[test]
fn spark_reads_the_parquet_files_the_delta_log_references_as_the_same_rows() {
    let python = venv_python("SPARK_ORACLE_PYTHON", "spark-oracle-venv");
    let dirs: Vec<_> = EXAMPLES.iter().map(|_| tempfile::tempdir().unwrap()).collect();
    // one Spark session reads every example's table
    let mut cmd = Command::new(&python);
    cmd.arg(common::root().join("tests/delta/spark_read_parquet.py"));
    for ((example, _), dir) in EXAMPLES.iter().zip(&dirs) {
        delta_and_files(dir.path(), example);
        cmd.arg(dir.path().join("delta")).arg(dir.path().join("spark"));
    }
    let out = cmd.output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    for dir in &dirs {
        compare_all(&dir.path().join("files"), &dir.path().join("spark"));
    }
}

#[test]
fn a_rerun_from_the_finished_checkpoint_adds_no_version() {
    let dir = tempfile::tempdir().unwrap();
    let (example, _) = EXAMPLES[0];
    delta_and_files(dir.path(), example);
    let before = tree(&dir.path().join("delta"));
    assert!(before.iter().any(|(p, _)| p.starts_with("_delta_log")), "{before:?}");
    // the same input, the same checkpoint: nothing new to write
    run(example, &sets(&dir.path().join("in"), &dir.path().join("ck"), &dir.path().join("delta"), false));
    assert_eq!(tree(&dir.path().join("delta")), before);
}

#[test]
fn a_delta_sink_in_update_mode_exits_2_naming_the_field() {
    let out = eddy("validate", EXAMPLES[0].0, &["query.output_mode=update".to_string()]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("query.output_mode") && stderr.contains("Spark's Delta sink refuses update mode"),
        "{stderr}"
    );
    // `run` refuses it the same way, before opening anything
    let dir = tempfile::tempdir().unwrap();
    let input = split_input(dir.path());
    let mut s = sets(&input, &dir.path().join("ck"), &dir.path().join("delta"), false);
    s.push("query.output_mode=update".to_string());
    let out = eddy("run", EXAMPLES[0].0, &s);
    assert_eq!(out.status.code(), Some(2), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stderr).contains("query.output_mode"));
    assert!(!dir.path().join("delta").exists() && !dir.path().join("ck").exists());
}

#[test]
fn a_delta_sink_path_that_cannot_be_a_folder_exits_2_naming_sink_path_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let input = split_input(dir.path());
    // a regular file where the table's parent folder should be
    let file = dir.path().join("a-file");
    std::fs::write(&file, "not a folder").unwrap();
    let out = eddy("run", EXAMPLES[0].0, &sets(&input, &dir.path().join("ck"), &file.join("table"), false));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("sink.path") && stderr.contains(&*file.join("table").to_string_lossy()), "{stderr}");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "not a folder");
    assert!(!dir.path().join("ck").exists(), "no checkpoint written");
}

#[test]
fn a_delta_table_of_other_columns_is_refused_with_exit_2_naming_both_schemas_and_left_unchanged() {
    let dir = tempfile::tempdir().unwrap();
    let input = split_input(dir.path());
    let table = dir.path().join("delta");
    // the tumbling query's table: window, user_id, total, txn_count
    run(EXAMPLES[0].0, &sets(&input, &dir.path().join("ck"), &table, false));
    let before = tree(&table);
    // the session query's rows: window, user_id, session_total, event_count
    let out = eddy("run", EXAMPLES[2].0, &sets(&input, &dir.path().join("ck-other"), &table, false));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("sink.path") && stderr.contains("total double") && stderr.contains("session_total double"),
        "{stderr}"
    );
    assert_eq!(tree(&table), before, "the table is left as it was");
    assert!(!dir.path().join("ck-other").exists(), "no checkpoint written");
}

/// PIPELINE.md: `[late_sink]` and `[dead_letter]` have the shape of `[sink]`, so either may be a
/// Delta table (append). A fifth input file after the examples' four brings two records too late
/// for the watermark and two that do not decode; the same run with files sinks is the reference.
#[test]
fn late_sink_and_dead_letter_as_delta_tables_hold_the_rows_files_sinks_get() {
    let python = venv_python("DELTA_READER_PYTHON", "delta-reader-venv");
    let dir = tempfile::tempdir().unwrap();
    let input = split_input(dir.path());
    std::fs::write(
        input.join("004.jsonl"),
        concat!(
            r#"{"user_id": "u9", "revenue": 5.5, "event_time": "2024-01-15T10:01:00Z"}"#,
            "\n",
            "not json at all\n",
            r#"{"user_id": "u8", "revenue": 7.25, "event_time": "2024-01-15T10:02:00Z"}"#,
            "\n",
            r#"{"user_id": "u7", "revenue": "#,
            "\n",
        ),
    )
    .unwrap();
    let (example, _) = EXAMPLES[0];
    for (kind, out) in [("delta", "tables"), ("files", "files")] {
        let mut s = sets(&input, &dir.path().join(format!("ck-{out}")), &dir.path().join(out).join("sink"), false);
        for side in ["late_sink", "dead_letter"] {
            s.push(format!("{side}.type={kind}"));
            s.push(format!("{side}.path={}", dir.path().join(out).join(side).display()));
        }
        run(example, &s);
    }
    for (side, rows) in [("late_sink", 2), ("dead_letter", 2)] {
        let files = dir.path().join("files").join(side);
        let written: usize =
            tree(&files).iter().map(|(p, _)| std::fs::read_to_string(files.join(p)).unwrap().lines().count()).sum();
        assert_eq!(written, rows, "the files {side} gets the records of the last file");
        let read = dir.path().join("read").join(side);
        let out = Command::new(&python)
            .arg(common::root().join("tests/delta/read_table.py"))
            .arg(dir.path().join("tables").join(side))
            .arg(&read)
            .output()
            .unwrap();
        assert!(out.status.success(), "{side}: {}", String::from_utf8_lossy(&out.stderr));
        compare_all(&files, &read);
        let summary: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(
            summary["history"].as_array().unwrap().len(),
            1,
            "{side}: one version, the batch with rows: {summary}"
        );
    }
}

// ---------------------------------------------------------------------------------------------
// Tables on an S3-compatible object store (`sink.path = "s3://bucket/prefix"`): a real S3 server,
// moto's (`moto_server`, from PyPI: `scripts/test.sh` installs it into `~/.cache/moto-venv`, or
// `MOTO_SERVER` names the command), started by each test on a free loopback port
// (`tests/common/moto.rs`). moto answers a PutObject with `If-None-Match: *` on an existing key
// with 412, as S3 does: the conditional put of each version's log file.

/// The overrides of a run over `input` with its checkpoint in `ck` into the table at `url`.
fn s3_sets(input: &Path, ck: &Path, url: &str) -> Vec<String> {
    vec![
        format!("source.path={}", input.display()),
        "source.max_files_per_trigger=1".to_string(),
        format!("checkpoint.path={}", ck.display()),
        format!("sink.path={url}"),
    ]
}

/// `eddy run` of `example` with these overrides and extra environment variables.
fn run_with_env(example: &str, sets: &[String], env: &[(&str, String)]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_eddy"));
    cmd.arg("run").arg("--no-progress");
    for s in sets {
        cmd.arg("--set").arg(s);
    }
    cmd.arg(common::root().join("examples/delta").join(example)).env("EDDY_LOG", "info").envs(env.iter().cloned());
    cmd.output().unwrap()
}

/// `read_table.py` on the s3:// table `url` (rows into `out`): its summary.
fn read_s3_table(moto: &Moto, url: &str, out: &Path) -> Value {
    let python = venv_python("DELTA_READER_PYTHON", "delta-reader-venv");
    let read = Command::new(&python)
        .arg(common::root().join("tests/delta/read_table.py"))
        .arg(url)
        .arg(out)
        .envs(moto.env())
        .output()
        .unwrap();
    assert!(read.status.success(), "{url}: {}", String::from_utf8_lossy(&read.stderr));
    serde_json::from_slice(&read.stdout).unwrap()
}

/// Every object under the table is a version of its log or a data file its newest version
/// references: no marker, no file of an uncommitted or replayed batch.
fn assert_only_log_and_referenced_files(summary: &Value) {
    let objects: Vec<&str> = summary["objects"].as_array().unwrap().iter().map(|o| o.as_str().unwrap()).collect();
    let referenced: Vec<&str> = summary["referenced"].as_array().unwrap().iter().map(|o| o.as_str().unwrap()).collect();
    let data: Vec<&str> = objects.iter().copied().filter(|o| !o.starts_with("_delta_log/")).collect();
    assert_eq!(data, referenced, "objects besides the log: {summary}");
    let versions = summary["version"].as_i64().unwrap() + 1;
    let log: Vec<String> = objects.iter().filter(|o| o.starts_with("_delta_log/")).map(|o| o.to_string()).collect();
    let expected: Vec<String> = (0..versions).map(|v| format!("_delta_log/{v:020}.json")).collect();
    assert_eq!(log, expected, "one commit file per version: {summary}");
}

#[test]
fn an_s3_table_written_by_eddy_run_reads_back_through_delta_rs_as_the_files_sink_rows_and_a_rerun_adds_nothing() {
    let moto = Moto::start();
    let (example, name) = EXAMPLES[0];
    let dir = tempfile::tempdir().unwrap();
    let input = split_input(dir.path());
    let url = "s3://eddy/tables/tumbling";
    let s = s3_sets(&input, &dir.path().join("ck"), url);
    let out = run_with_env(example, &s, &moto.env());
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    run(example, &sets(&input, &dir.path().join("ck-files"), &dir.path().join("files"), true));

    let summary = read_s3_table(&moto, url, &dir.path().join("read"));
    compare_all(&dir.path().join("files"), &dir.path().join("read"));
    let batches = batches_with_rows(&dir.path().join("files"));
    assert!(batches.len() >= 2, "{batches:?}");
    let app_id = std::fs::read_to_string(dir.path().join("ck").join(name).join("application-id")).unwrap();
    let expected: Vec<Value> =
        batches.iter().enumerate().map(|(v, &b)| serde_json::json!([v, app_id.trim(), b])).collect();
    assert_eq!(summary["txns"].as_array().unwrap(), &expected, "one version per batch with rows: {summary}");
    assert_only_log_and_referenced_files(&summary);

    // a restart from the finished checkpoint: every batch's version is in the log, none is written again
    let out = run_with_env(example, &s, &moto.env());
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(read_s3_table(&moto, url, &dir.path().join("read-again")), summary);
}

/// The sink's columns for the in-process tests (the tumbling example's output).
fn sink_columns() -> Vec<eddy_engine::schema::Field> {
    use eddy_engine::schema::{DataType, Field};
    vec![
        Field { name: "window".into(), data_type: DataType::Window },
        Field { name: "user_id".into(), data_type: DataType::String },
        Field { name: "total".into(), data_type: DataType::Double },
    ]
}

/// Writes one row per user into batch `id` of `sink` and prepares it.
fn prepare_rows(sink: &mut dyn eddy_connectors::Sink, id: u64, users: &[&str]) {
    for (i, u) in users.iter().enumerate() {
        let row = serde_json::json!({
            "window": {"start": "2024-01-15T10:00:00Z", "end": "2024-01-15T10:05:00Z"},
            "user_id": u,
            "total": (id * 10 + i as u64) as f64,
        });
        sink.write(id, &row.to_string(), None).unwrap();
    }
    sink.prepare(id).unwrap();
}

/// The rows `read_table.py` wrote into `dir`, as (user_id, total), sorted.
fn users_and_totals(dir: &Path) -> Vec<(String, f64)> {
    let mut rows: Vec<(String, f64)> = common::json_lines(dir)
        .iter()
        .map(|r| (r["user_id"].as_str().unwrap().to_string(), r["total"].as_f64().unwrap()))
        .collect();
    rows.sort_by(|a, b| a.partial_cmp(b).unwrap());
    rows
}

/// The epoch protocol's crash points on an object store, with the sink as the runtime drives it
/// (`prepare`, the checkpoint, `commit`; after a restart `recover` with the checkpoint's batch):
/// a crash after prepare whose checkpoint did not complete leaves no file; one whose checkpoint
/// did is rolled forward into one version; a batch replayed after its version is in the log is
/// not written again, and its files are removed.
#[test]
fn s3_crash_points_a_batch_is_never_written_twice_and_an_uncommitted_one_leaves_no_file() {
    use eddy_connectors::Sink;
    use eddy_connectors::delta::{DeltaSink, DeltaWrite};
    let moto = Moto::start();
    let url = "s3://eddy/crash";
    let open = || DeltaSink::new_in_store(url, &moto.options(), &sink_columns(), &[], DeltaWrite::Append).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let read = |name: &str| read_s3_table(&moto, url, &dir.path().join(name));

    let mut sink = open();
    let app = sink.application_id().to_string();
    prepare_rows(&mut sink, 0, &["a", "b"]);
    sink.commit(0).unwrap();
    // batch 1 prepared (files uploaded, marker written), then a crash before its checkpoint
    prepare_rows(&mut sink, 1, &["c"]);
    let staged = read("staged");
    assert_eq!(staged["version"], 0);
    assert!(staged["objects"].as_array().unwrap().iter().any(|o| o.as_str().unwrap().starts_with("_eddy_staging/")));
    drop(sink);

    let mut sink = open();
    sink.use_application_id(&app);
    assert_eq!(sink.recover(Some(0)).unwrap(), 1, "batch 1 settled");
    let after = read("after-discard");
    assert_only_log_and_referenced_files(&after);
    assert_eq!(users_and_totals(&dir.path().join("after-discard")), [("a".to_string(), 0.0), ("b".to_string(), 1.0)]);

    // batch 1 replayed and prepared, its checkpoint written, then a crash before its commit
    prepare_rows(&mut sink, 1, &["c"]);
    drop(sink);
    let mut sink = open();
    sink.use_application_id(&app);
    assert_eq!(sink.recover(Some(1)).unwrap(), 1);
    let rolled = read("rolled");
    assert_eq!(rolled["txns"], serde_json::json!([[0, app, 0], [1, app, 1]]), "{rolled}");
    assert_only_log_and_referenced_files(&rolled);

    // the source replays batch 1 once more (its offsets were not saved): no second version, no
    // file uploaded
    prepare_rows(&mut sink, 1, &["c"]);
    sink.commit(1).unwrap();
    let replayed = read("replayed");
    assert_eq!(replayed, rolled, "batch 1 written once");
    assert_eq!(
        users_and_totals(&dir.path().join("replayed")),
        [("a".to_string(), 0.0), ("b".to_string(), 1.0), ("c".to_string(), 10.0)]
    );

    // a crash between batch 2's commit and the removal of its marker (the marker put back):
    // the files it lists are the table's now, and stay
    let (marker, kept_marker) = ("crash/_eddy_staging/batch-000002.json", "elsewhere/batch-000002.json");
    prepare_rows(&mut sink, 2, &["d"]);
    moto.copy(marker, kept_marker);
    sink.commit(2).unwrap();
    moto.copy(kept_marker, marker);
    drop(sink);
    let mut sink = open();
    sink.use_application_id(&app);
    assert_eq!(sink.recover(Some(2)).unwrap(), 1);
    let kept = read("kept");
    assert_only_log_and_referenced_files(&kept);
    assert_eq!(kept["version"], 2);
    // the same marker met by a run without checkpoint (an application id of its own), which
    // settles every marker at its first prepare
    moto.copy(kept_marker, marker);
    drop(sink);
    let mut fresh = open();
    prepare_rows(&mut fresh, 0, &["e"]);
    fresh.commit(0).unwrap();
    let after = read("without-checkpoint");
    assert_only_log_and_referenced_files(&after);
    assert_eq!(
        users_and_totals(&dir.path().join("without-checkpoint")),
        [
            ("a".to_string(), 0.0),
            ("b".to_string(), 1.0),
            ("c".to_string(), 10.0),
            ("d".to_string(), 20.0),
            ("e".to_string(), 0.0)
        ]
    );
}

/// Two writers that both read the table at version 0: the second's commit of version 1 finds
/// the first's log file there (the conditional put, `If-None-Match: *`, is refused) and lands
/// as version 2; no version is overwritten, so both batches stay in the table.
#[test]
fn s3_two_writers_never_overwrite_a_version() {
    use eddy_connectors::Sink;
    use eddy_connectors::delta::{DeltaSink, DeltaWrite};
    let moto = Moto::start();
    let url = "s3://eddy/two-writers";
    let open = || DeltaSink::new_in_store(url, &moto.options(), &sink_columns(), &[], DeltaWrite::Append).unwrap();
    let mut first = open();
    prepare_rows(&mut first, 0, &["a"]);
    first.commit(0).unwrap();
    let mut second = open(); // reads version 0
    prepare_rows(&mut first, 1, &["b"]);
    first.commit(1).unwrap(); // version 1
    prepare_rows(&mut second, 7, &["z"]);
    second.commit(7).unwrap(); // tries version 1, refused, commits version 2
    let dir = tempfile::tempdir().unwrap();
    let summary = read_s3_table(&moto, url, dir.path());
    let (a, b) = (first.application_id(), second.application_id());
    assert_eq!(summary["txns"], serde_json::json!([[0, a, 0], [1, a, 1], [2, b, 7]]), "{summary}");
    assert_only_log_and_referenced_files(&summary);
    assert_eq!(
        users_and_totals(dir.path()),
        [("a".to_string(), 0.0), ("b".to_string(), 10.0), ("z".to_string(), 70.0)]
    );
}

#[test]
fn an_unreachable_s3_endpoint_is_retried_then_exits_1_within_a_bound_naming_the_sink() {
    let dir = tempfile::tempdir().unwrap();
    let input = split_input(dir.path());
    let s = s3_sets(&input, &dir.path().join("ck"), "s3://eddy/nowhere");
    let env = moto::env_for(&format!("http://127.0.0.1:{}", moto::free_port()));
    let started = std::time::Instant::now();
    let out = run_with_env(EXAMPLES[0].0, &s, &env);
    let took = started.elapsed();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    // object_store logs each retry; the error names the field, the URL and the retries
    assert!(stderr.contains("retry 1 of 5") && stderr.contains("retry 5 of 5"), "{stderr}");
    assert!(
        stderr.contains("sink.path") && stderr.contains("s3://eddy/nowhere") && stderr.contains("retries"),
        "{stderr}"
    );
    // five backoffs of at most 0.25, 0.5, 1, 2, 4 s, and object_store's own 30 s bound
    assert!(took < std::time::Duration::from_secs(30), "{took:?}");
}

/// `eddy run` into an s3:// table killed (SIGKILL) at several instants, restarted from its
/// checkpoint each time, then run to the end: the table holds exactly the rows of the files
/// sink's uninterrupted run, one version per batch with rows (no batch twice), and no object
/// besides the log and the files it references.
#[test]
fn s3_sigkill_at_several_instants_with_restarts_gives_the_uninterrupted_runs_table() {
    let moto = Moto::start();
    let (example, _) = EXAMPLES[0];
    let dir = tempfile::tempdir().unwrap();
    // the examples' 400 records in 80 files of 5: 80 batches with input, so that the run takes
    // several seconds (a commit on the store each) and the kills below land mid-run however fast
    // the machine
    let text = std::fs::read_to_string(common::root().join("examples/data/revenue/events.jsonl")).unwrap();
    let input = dir.path().join("in");
    std::fs::create_dir_all(&input).unwrap();
    for (i, chunk) in text.lines().collect::<Vec<_>>().chunks(5).enumerate() {
        std::fs::write(input.join(format!("{i:03}.jsonl")), chunk.join("\n") + "\n").unwrap();
    }
    let url = "s3://eddy/killed";
    let s = s3_sets(&input, &dir.path().join("ck"), url);
    let mut killed = 0;
    for delay_ms in [300, 500, 700, 900, 1100, 1300] {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_eddy"));
        cmd.arg("run").arg("--no-progress");
        for x in &s {
            cmd.arg("--set").arg(x);
        }
        let mut child = cmd
            .arg(common::root().join("examples/delta").join(example))
            .env("EDDY_LOG", "warn")
            .envs(moto.env())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(std::time::Duration::from_millis(delay_ms));
        if child.try_wait().unwrap().is_none() {
            child.kill().unwrap();
            killed += 1;
        }
        child.wait().unwrap();
    }
    assert!(killed >= 2, "the runs are killed mid-way ({killed} of 6 were)");
    let out = run_with_env(example, &s, &moto.env());
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    run(example, &sets(&input, &dir.path().join("ck-files"), &dir.path().join("files"), true));

    let summary = read_s3_table(&moto, url, &dir.path().join("read"));
    compare_all(&dir.path().join("files"), &dir.path().join("read"));
    let batches = batches_with_rows(&dir.path().join("files"));
    let txn_batches: Vec<i64> = summary["txns"].as_array().unwrap().iter().map(|t| t[2].as_i64().unwrap()).collect();
    assert_eq!(txn_batches, batches, "one version per batch with rows, in order, none twice: {summary}");
    assert_only_log_and_referenced_files(&summary);
}
