//! Real-time golden cases (`tests/realtime/*`, expected output from a brute-force reference)
//! stopped right after the checkpoint of an epoch (the test-only `EDDY_TEST_STOP_AFTER`) and
//! restarted with another `parallelism`: every row of every epoch file, as a multiset, matches
//! the expected output (`compare.py --all`), so nothing was lost or written twice.

use std::path::{Path, PathBuf};
use std::process::Command;

mod common;
use common::{copy_dir, root};

fn run(dir: &Path, parallelism: usize, stop_after: Option<u64>) -> std::process::Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_eddy"));
    cmd.arg("run")
        .arg(dir.join("pipeline.toml"))
        .args(["--no-progress", "--set", &format!("parallelism={parallelism}"), "--set", "checkpoint.path=ck"])
        .env("EDDY_LOG", "warn");
    if let Some(k) = stop_after {
        cmd.env("EDDY_TEST_STOP_AFTER", k.to_string());
    }
    cmd.output().unwrap()
}

/// Epoch ids of the committed files in `output`.
fn epochs(output: &Path) -> Vec<u64> {
    let mut v: Vec<u64> = std::fs::read_dir(output)
        .map(|d| {
            d.flatten()
                .filter_map(|e| {
                    let n = e.file_name().to_string_lossy().to_string();
                    n.strip_prefix("batch-")?.strip_suffix(".jsonl")?.parse().ok()
                })
                .collect()
        })
        .unwrap_or_default();
    v.sort_unstable();
    v
}

#[test]
fn real_time_cases_stopped_after_an_epoch_and_restarted_with_another_parallelism_match_the_reference() {
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
        // The epochs of an uninterrupted run, to stop in the first one and in the middle.
        let tmp = tempfile::tempdir().unwrap();
        let whole = tmp.path().join("whole");
        copy_dir(case, &whole);
        let out = run(&whole, 2, None);
        assert!(out.status.success(), "{name}: {}", String::from_utf8_lossy(&out.stderr));
        let all = epochs(&whole.join("output"));
        let middle = all.get(all.len() / 2).copied().unwrap_or(0);
        for (stop_after, before, after) in [(0, 1, 4), (middle, 4, 3)] {
            let dir = tmp.path().join(format!("stop-{stop_after}"));
            copy_dir(case, &dir);
            let first = run(&dir, before, Some(stop_after));
            if !first.status.success() {
                failures.push(format!("{name} stop after {stop_after}: {}", String::from_utf8_lossy(&first.stderr)));
                continue;
            }
            if let Some(&last) = epochs(&dir.join("output")).last()
                && last > stop_after
            {
                failures.push(format!("{name}: asked to stop after epoch {stop_after}, committed epoch {last}"));
            }
            let second = run(&dir, after, None);
            if !second.status.success() {
                failures.push(format!("{name} restart: {}", String::from_utf8_lossy(&second.stderr)));
                continue;
            }
            let output = dir.join("output");
            std::fs::create_dir_all(&output).unwrap();
            let cmp = Command::new("python3")
                .arg(root().join("../shared/tools/compare.py"))
                .arg(dir.join("expected"))
                .arg(&output)
                .arg("--all")
                .output()
                .unwrap();
            if !cmp.status.success() {
                failures.push(format!(
                    "{name} stop after {stop_after}, parallelism {before} -> {after}:\n{}",
                    String::from_utf8_lossy(&cmp.stdout)
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
