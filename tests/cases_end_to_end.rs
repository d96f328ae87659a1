//! Every golden case (`../shared/cases`, Spark 4.3's output, the project's own `tests/cases` and
//! `tests/cases-sql`, also from the Spark oracle, and the public SQL cases of `PUBLIC_SQL_CASES`) runs end to end through `eddy run` in a copy of the case folder,
//! with `parallelism` 1, 2 and 4, and must match `expected/` under `../shared/tools/compare.py`;
//! and again with a checkpoint, a stop in the middle (the test-only `EDDY_TEST_STOP_AFTER`) and
//! a restart with another `parallelism`: the same expected output. Chained aggregations keyed
//! otherwise than the one before them (`tests/cases-sql/sql-chain-*`) run over several partition
//! actors through the exchange, and restart re-split by the exchanged stage's key.

use std::path::PathBuf;
use std::process::Command;

mod common;
use common::{copy_dir, root};

/// The public SQL cases this runner takes (all of `../shared/cases-sql`).
const PUBLIC_SQL_CASES: &[&str] = &["sql-filter-tumbling", "sql-static-join-left", "sql-stream-join-inner"];

fn cases() -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = PUBLIC_SQL_CASES.iter().map(|c| root().join("../shared/cases-sql").join(c)).collect();
    for base in [root().join("../shared/cases"), root().join("tests/cases"), root().join("tests/cases-sql")] {
        let Ok(rd) = std::fs::read_dir(&base) else { continue };
        for e in rd.flatten() {
            let p = e.path();
            if p.join("pipeline.toml").is_file() && !p.join("expected/ERROR").exists() {
                dirs.push(p);
            }
        }
    }
    dirs.sort();
    dirs
}

#[test]
fn every_case_passes_through_eddy_run_with_1_2_and_4_partition_actors() {
    let cases = cases();
    assert!(cases.len() >= 10, "cases not found next to the repository (../shared/cases)");
    let mut failures = Vec::new();
    for case in &cases {
        let name = case.file_name().unwrap().to_string_lossy().to_string();
        for parallelism in [1, 2, 4] {
            let tmp = tempfile::tempdir().unwrap();
            let dir = tmp.path().join(&name);
            copy_dir(case, &dir);
            let out = Command::new(env!("CARGO_BIN_EXE_eddy"))
                .arg("run")
                .arg(dir.join("pipeline.toml"))
                .arg("--set")
                .arg(format!("parallelism={parallelism}"))
                .arg("--no-progress")
                .env("EDDY_LOG", "warn")
                .output()
                .unwrap();
            if !out.status.success() {
                failures.push(format!(
                    "{name} (parallelism {parallelism}): exit {:?}: {}",
                    out.status.code(),
                    String::from_utf8_lossy(&out.stderr)
                ));
                continue;
            }
            let output = dir.join("output");
            std::fs::create_dir_all(&output).unwrap();
            let cmp = Command::new("python3")
                .arg(root().join("../shared/tools/compare.py"))
                .arg(dir.join("expected"))
                .arg(&output)
                .output()
                .unwrap();
            if !cmp.status.success() {
                failures.push(format!("{name} (parallelism {parallelism}):\n{}", String::from_utf8_lossy(&cmp.stdout)));
            }
        }
    }
    assert!(failures.is_empty(), "{} failures:\n{}", failures.len(), failures.join("\n"));
}

/// Runs `eddy run` on the case copy in `dir` with checkpoints in `dir/ck`; `stop_after`: the
/// test-only knob.
fn run_with_checkpoint(dir: &std::path::Path, parallelism: usize, stop_after: Option<u64>) -> std::process::Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_eddy"));
    cmd.arg("run")
        .arg(dir.join("pipeline.toml"))
        .args(["--set", &format!("parallelism={parallelism}"), "--set", "checkpoint.path=ck", "--no-progress"])
        .env("EDDY_LOG", "warn");
    if let Some(k) = stop_after {
        cmd.env("EDDY_TEST_STOP_AFTER", k.to_string());
    }
    cmd.output().unwrap()
}

/// The largest batch id among the committed output files of `output`.
fn last_batch_file(output: &std::path::Path) -> Option<u64> {
    std::fs::read_dir(output)
        .ok()?
        .flatten()
        .filter_map(|e| {
            let n = e.file_name().to_string_lossy().to_string();
            n.strip_prefix("batch-")?.strip_suffix(".jsonl")?.parse().ok()
        })
        .max()
}

#[test]
fn every_case_passes_when_stopped_in_the_middle_and_restarted_with_another_parallelism() {
    let cases = cases();
    assert!(cases.len() >= 10, "cases not found next to the repository (../shared/cases)");
    let mut failures = Vec::new();
    for case in &cases {
        let name = case.file_name().unwrap().to_string_lossy().to_string();
        let inputs = std::fs::read_dir(case.join("input")).map(|d| d.count()).unwrap_or(1) as u64;
        // Stop after the first batch, and after the middle one; restart with other parallelisms.
        for (stop_after, before, after) in [(0, 1, 3), (inputs / 2, 3, 2)] {
            let tmp = tempfile::tempdir().unwrap();
            let dir = tmp.path().join(&name);
            copy_dir(case, &dir);
            let first = run_with_checkpoint(&dir, before, Some(stop_after));
            if !first.status.success() {
                failures.push(format!(
                    "{name} (stop after {stop_after}): exit {:?}: {}",
                    first.status.code(),
                    String::from_utf8_lossy(&first.stderr)
                ));
                continue;
            }
            let output = dir.join("output");
            if let Some(last) = last_batch_file(&output)
                && last > stop_after
            {
                failures.push(format!("{name}: the run asked to stop after batch {stop_after} committed batch {last}"));
            }
            let second = run_with_checkpoint(&dir, after, None);
            if !second.status.success() {
                failures.push(format!(
                    "{name} (restart, parallelism {after}): exit {:?}: {}",
                    second.status.code(),
                    String::from_utf8_lossy(&second.stderr)
                ));
                continue;
            }
            std::fs::create_dir_all(&output).unwrap();
            let cmp = Command::new("python3")
                .arg(root().join("../shared/tools/compare.py"))
                .arg(dir.join("expected"))
                .arg(&output)
                .output()
                .unwrap();
            if !cmp.status.success() {
                failures.push(format!(
                    "{name} (stop after {stop_after}, parallelism {before} -> {after}):\n{}",
                    String::from_utf8_lossy(&cmp.stdout)
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{} failures:\n{}", failures.len(), failures.join("\n"));
}
