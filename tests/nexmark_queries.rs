//! The Nexmark query files (`examples/nexmark/*.toml`) validate and run end to end on a small
//! number of events (300,000: 30 s of event time at the generator's default rate, so windows and
//! sessions close), writing rows.

use std::path::PathBuf;
use std::process::Command;

#[test]
fn nexmark_query_files_run_and_write_rows() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("examples/nexmark");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .collect();
    files.sort();
    assert!(files.len() >= 4);
    for f in files {
        let out = tempfile::tempdir().unwrap();
        // each generator's events: `source.events`, or `source[i].events` with `[[source]]`s
        let sources = std::fs::read_to_string(&f).unwrap().matches("[[source]]").count();
        let events: Vec<String> = match sources {
            0 => vec!["source.events=300000".into()],
            n => (0..n).map(|i| format!("source[{i}].events=300000")).collect(),
        };
        let status = Command::new(env!("CARGO_BIN_EXE_eddy"))
            .args(["run", "--no-progress"])
            .args(events.iter().flat_map(|e| ["--set", e.as_str()]))
            .arg("--set")
            .arg(format!("sink.path={}", out.path().display()))
            .arg(&f)
            .env("EDDY_LOG", "warn")
            .status()
            .unwrap();
        assert!(status.success(), "{}: {status}", f.display());
        let rows: usize = std::fs::read_dir(out.path())
            .unwrap()
            .flatten()
            .map(|e| std::fs::read_to_string(e.path()).unwrap().lines().count())
            .sum();
        assert!(rows > 0, "{}: no rows", f.display());
    }
}

/// Runs Nexmark q5 in full (`examples/nexmark/q5-hot-items-full-sql.toml`) with `sets` added;
/// returns the exit code, stderr, and the rows written (sorted) with the number of batch files.
fn run_q5_full(sets: &[&str]) -> (Option<i32>, String, Vec<String>, usize) {
    let out = tempfile::tempdir().unwrap();
    let path = format!("sink.path={}", out.path().display());
    let output = Command::new(env!("CARGO_BIN_EXE_eddy"))
        .args(["run", "--no-progress"])
        .args(sets.iter().chain([&path.as_str()]).flat_map(|s| ["--set", s]))
        .arg(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("examples/nexmark/q5-hot-items-full-sql.toml"))
        .env("EDDY_LOG", "warn")
        .output()
        .unwrap();
    let files: Vec<PathBuf> = std::fs::read_dir(out.path()).unwrap().flatten().map(|e| e.path()).collect();
    let mut rows: Vec<String> = files
        .iter()
        .flat_map(|f| std::fs::read_to_string(f).unwrap().lines().map(str::to_string).collect::<Vec<_>>())
        .collect();
    rows.sort();
    (output.status.code(), String::from_utf8_lossy(&output.stderr).into_owned(), rows, files.len())
}

#[test]
fn nexmark_q5_in_full_gives_the_same_rows_over_two_partition_actors_through_the_exchange() {
    // micro-batch: the max per window is keyed by the window alone, so its input crosses the
    // exchange between the two actors (the generator's events all come in the first batch; the
    // no-data batch after it finalises the windows; the oracle cases `sql-chain-*` exchange
    // over several batches)
    let sets = ["mode=micro-batch", "source.events=300000"];
    let p1 = run_q5_full(&[&sets[..], &["parallelism=1"]].concat());
    let p2 = run_q5_full(&[&sets[..], &["parallelism=2"]].concat());
    assert_eq!(p1.0, Some(0), "{}", p1.1);
    assert_eq!(p2.0, Some(0), "{}", p2.1);
    assert!(p2.3 >= 1, "no batch file");
    // 300,000 events span 30 s of event time: the 10 s windows sliding by 2 s that end by the
    // last watermark (30 s - 1 s) are finalised, one row each
    assert!(p1.2.len() >= 10, "{:?}", p1.2);
    assert_eq!(p1.2, p2.2);
}

#[test]
fn nexmark_q5_in_full_in_real_time_mode_gives_the_rows_of_one_partition_actor_over_two_through_the_exchange() {
    // real-time: the inner counts' rows cross the exchange as they are emitted, each actor's
    // watermark after them; the max per window is taken once the minimum over both passes
    let sets = ["source.events=300000"];
    let p1 = run_q5_full(&[&sets[..], &["parallelism=1"]].concat());
    let p2 = run_q5_full(&[&sets[..], &["parallelism=2"]].concat());
    assert_eq!(p1.0, Some(0), "{}", p1.1);
    assert_eq!(p2.0, Some(0), "{}", p2.1);
    // 300,000 events span 30 s of event time: the windows ending by the last watermark
    assert!(p1.2.len() >= 10, "{:?}", p1.2);
    assert_eq!(p1.2, p2.2);
}

#[test]
fn a_narrower_source_select_over_the_generators_records_gives_the_rows_of_the_plain_query() {
    // the generator emits its own records (seven bid columns) and takes back those the runtime
    // is done with; a `select` of fewer columns, in another order, moves each record's values
    // into a narrower record and hands the emptied one back to the generator (the records of
    // the query's columns are the same, so are its rows), in both modes and over two actors
    for mode in ["real-time", "micro-batch"] {
        let sets = [format!("mode={mode}"), "source.events=300000".into(), "parallelism=2".into()];
        let sets: Vec<&str> = sets.iter().map(String::as_str).collect();
        let plain = run_q5_full(&sets);
        let narrow = run_q5_full(&[&sets[..], &[r#"source.select=["date_time", "auction"]"#]].concat());
        assert_eq!(plain.0, Some(0), "{}", plain.1);
        assert_eq!(narrow.0, Some(0), "{}", narrow.1);
        assert!(plain.2.len() >= 10, "{mode}: {:?}", plain.2);
        assert_eq!(narrow.2, plain.2, "{mode}");
    }
}
