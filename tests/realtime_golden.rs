//! Real-time golden cases (`tests/realtime/*`): rolling windows, window aggregates (update and
//! append), deduplication, a chained aggregation (re-windowed) and a window aggregate after a
//! stream-stream join (`sql-rt-join-aggregate`: a joined row whose window the pipeline
//! watermark has passed still counts, as the join holds back the watermark it forwards) under
//! the replay clock. Their expected output
//! (`expected/all.jsonl`) comes from `tests/realtime/reference.py`, a brute-force reference
//! written from SEMANTICS.md, never from the engine. Each case runs through `eddy run` with
//! `parallelism` 1 and 4; all rows of all epoch files must match as a multiset
//! (`compare.py --all`), and both runs must write the same epoch files.

use std::path::{Path, PathBuf};
use std::process::Command;

mod common;
use common::{compare_all, copy_dir, root};

fn sorted_lines(dir: &Path) -> Vec<(String, Vec<String>)> {
    let mut files: Vec<PathBuf> =
        std::fs::read_dir(dir).map(|d| d.flatten().map(|e| e.path()).collect()).unwrap_or_default();
    files.sort();
    files
        .into_iter()
        .map(|f| {
            let mut lines: Vec<String> = std::fs::read_to_string(&f).unwrap().lines().map(String::from).collect();
            lines.sort();
            (f.file_name().unwrap().to_string_lossy().to_string(), lines)
        })
        .collect()
}

#[test]
fn real_time_cases_match_the_brute_force_reference_with_1_and_4_partition_actors() {
    let mut cases: Vec<PathBuf> = std::fs::read_dir(root().join("tests/realtime"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.join("pipeline.toml").is_file())
        .collect();
    cases.sort();
    assert!(cases.len() >= 5, "cases missing");
    let mut failures = Vec::new();
    for case in &cases {
        let name = case.file_name().unwrap().to_string_lossy().to_string();
        let mut outputs = Vec::new();
        for parallelism in [1, 4] {
            let tmp = tempfile::tempdir().unwrap();
            let dir = tmp.path().join(&name);
            copy_dir(case, &dir);
            let out = Command::new(env!("CARGO_BIN_EXE_eddy"))
                .args(["run", "--no-progress", "--set", &format!("parallelism={parallelism}")])
                .arg(dir.join("pipeline.toml"))
                .env("EDDY_LOG", "warn")
                .output()
                .unwrap();
            if !out.status.success() {
                failures.push(format!("{name} p={parallelism}: {}", String::from_utf8_lossy(&out.stderr)));
                continue;
            }
            let output = dir.join("output");
            if let Err(report) = compare_all(&dir.join("expected"), &output) {
                failures.push(format!("{name} p={parallelism}:\n{}", report));
            }
            outputs.push(sorted_lines(&output));
        }
        if outputs.len() == 2 && outputs[0] != outputs[1] {
            failures.push(format!("{name}: parallelism 1 and 4 wrote different epoch files"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
