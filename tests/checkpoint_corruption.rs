//! Damaged checkpoints through `eddy run`: a truncated snapshot, a flipped byte, a missing
//! manifest, a manifest without its snapshots each make the restart fall back to the checkpoint
//! before (and the output still matches the Spark oracle's); when no checkpoint is usable the run
//! fails with exit 1 naming why, writing nothing; a changed query is refused with exit 2 naming
//! the field. Never wrong output.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

mod common;
use common::{copy_dir, root};

/// A golden case with five input files (batches 0..=4, then a no-data batch 5).
const CASE: &str = "tests/cases/session-late-boundary-append";
const PIPELINE: &str = "session-late-boundary-append";

fn run(dir: &Path, parallelism: usize, stop_after: Option<u64>, extra: &[&str]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_eddy"));
    cmd.arg("run")
        .arg(dir.join("pipeline.toml"))
        .args(["--no-progress", "--set", &format!("parallelism={parallelism}"), "--set", "checkpoint.path=ck"])
        .env("EDDY_LOG", "warn");
    for e in extra {
        cmd.args(["--set", e]);
    }
    if let Some(k) = stop_after {
        cmd.env("EDDY_TEST_STOP_AFTER", k.to_string());
    }
    cmd.output().unwrap()
}

/// A copy of the case stopped after batch `k` (checkpoints up to `k`, the last three kept).
fn stopped(tmp: &Path, k: u64) -> PathBuf {
    let dir = tmp.join(PIPELINE);
    copy_dir(&root().join(CASE), &dir);
    let out = run(&dir, 2, Some(k), &[]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    dir
}

fn ck(dir: &Path, name: &str) -> PathBuf {
    dir.join("ck").join(PIPELINE).join(name)
}

fn manifest(epoch: u64) -> String {
    format!("manifest-{epoch:020}")
}

fn snapshot(epoch: u64, partition: u32) -> String {
    format!("snapshot-{epoch:020}-{partition:05}")
}

fn matches_expected(dir: &Path) -> Result<(), String> {
    let cmp = Command::new("python3")
        .arg(root().join("../shared/tools/compare.py"))
        .arg(dir.join("expected"))
        .arg(dir.join("output"))
        .output()
        .unwrap();
    if cmp.status.success() { Ok(()) } else { Err(String::from_utf8_lossy(&cmp.stdout).into_owned()) }
}

#[test]
fn each_kind_of_damage_to_the_newest_checkpoint_falls_back_to_the_one_before() {
    type Damage = fn(&Path);
    let cases: [(&str, Damage); 4] = [
        ("truncated snapshot", |d| {
            let p = ck(d, &snapshot(3, 1));
            let b = std::fs::read(&p).unwrap();
            std::fs::write(&p, &b[..b.len() / 2]).unwrap();
        }),
        ("flipped byte", |d| {
            let p = ck(d, &snapshot(3, 0));
            let mut b = std::fs::read(&p).unwrap();
            let i = b.len() - 3;
            b[i] ^= 0x04;
            std::fs::write(&p, b).unwrap();
        }),
        ("missing manifest", |d| std::fs::remove_file(ck(d, &manifest(3))).unwrap()),
        ("manifest without its snapshots", |d| {
            for p in 0..2 {
                std::fs::remove_file(ck(d, &snapshot(3, p))).unwrap();
            }
        }),
    ];
    let mut failures = Vec::new();
    for (what, damage) in cases {
        let tmp = tempfile::tempdir().unwrap();
        let dir = stopped(tmp.path(), 3);
        damage(&dir);
        let out = run(&dir, 3, None, &[]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        if !out.status.success() {
            failures.push(format!("{what}: exit {:?}: {stderr}", out.status.code()));
            continue;
        }
        if what != "missing manifest" && !stderr.contains("falling back") {
            failures.push(format!("{what}: no warning about the fallback: {stderr}"));
        }
        if let Err(diff) = matches_expected(&dir) {
            failures.push(format!("{what}: {diff}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn no_usable_checkpoint_fails_with_exit_1_naming_why_and_writes_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = stopped(tmp.path(), 3);
    for e in 1..=3 {
        let p = ck(&dir, &manifest(e));
        let b = std::fs::read(&p).unwrap();
        std::fs::write(&p, &b[..20]).unwrap();
    }
    let before: Vec<_> = std::fs::read_dir(dir.join("output")).unwrap().flatten().map(|e| e.file_name()).collect();
    let out = run(&dir, 2, None, &[]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("no usable checkpoint") && stderr.contains("truncated"), "{stderr}");
    let after: Vec<_> = std::fs::read_dir(dir.join("output")).unwrap().flatten().map(|e| e.file_name()).collect();
    assert_eq!(before, after, "nothing written");
}

#[test]
fn a_changed_query_exits_2_naming_the_field_and_a_changed_parallelism_or_sink_does_not() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = stopped(tmp.path(), 3);
    let out = run(&dir, 2, None, &["query.measures=[{ agg = \"max\", column = \"ts\" }]"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains(r#"query.measures[0].agg: the checkpoint has "count", the pipeline has "max""#),
        "{stderr}"
    );
    let out = run(&dir, 2, None, &["watermark.delay=11 seconds"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains(r#"watermark.delay: the checkpoint has "10 seconds", the pipeline has "11 seconds""#),
        "{stderr}"
    );
    let out = run(&dir, 4, None, &[]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    matches_expected(&dir).unwrap();
}

#[test]
fn leftovers_of_an_uncommitted_batch_are_removed_and_a_prepared_committed_one_rolled_forward() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = stopped(tmp.path(), 2);
    let out_dir = dir.join("output");
    // As a crash would leave them: batch 2 (two rows) checkpointed but not yet renamed (its
    // manifest exists), batch 3 written but never checkpointed.
    let committed = out_dir.join("batch-000002.jsonl");
    std::fs::rename(&committed, out_dir.join(".batch-000002.jsonl.tmp")).unwrap();
    std::fs::write(out_dir.join(".batch-000003.jsonl.tmp"), "{\"bogus\": 1}\n").unwrap();
    let out = run(&dir, 1, None, &[]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    matches_expected(&dir).unwrap();
    let hidden: Vec<_> = std::fs::read_dir(&out_dir)
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with('.'))
        .map(|e| e.file_name())
        .collect();
    assert!(hidden.is_empty(), "{hidden:?}");
}
