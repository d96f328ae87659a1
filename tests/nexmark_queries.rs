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
