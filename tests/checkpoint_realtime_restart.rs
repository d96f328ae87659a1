//! Real-time golden cases (`tests/realtime/*`, expected output from a brute-force reference)
//! stopped right after the checkpoint of an epoch (the test-only `EDDY_TEST_STOP_AFTER`) and
//! restarted with another `parallelism`: every row of every epoch file, as a multiset, matches
//! the expected output (`compare.py --all`), so nothing was lost or written twice.
//!
//! The cases with several sources are also stopped after every epoch of an uninterrupted run
//! and restarted: each epoch file must hold the rows of the uninterrupted run's (SEMANTICS.md
//! "Determinism and restarts": the sources' records interleave as they would have), and all of
//! them the case's expected rows.

use std::path::{Path, PathBuf};
use std::process::Command;

mod common;
use common::{compare_all, copy_dir, root};

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

/// The rows of each committed epoch file in `output` (epoch id, its lines sorted), by epoch.
fn epoch_rows(output: &Path) -> Vec<(u64, Vec<String>)> {
    let mut v: Vec<(u64, Vec<String>)> = std::fs::read_dir(output)
        .map(|d| {
            d.flatten()
                .filter_map(|e| {
                    let n = e.file_name().to_string_lossy().to_string();
                    let epoch = n.strip_prefix("batch-")?.strip_suffix(".jsonl")?.parse().ok()?;
                    let text = std::fs::read_to_string(e.path()).unwrap();
                    let mut lines: Vec<String> =
                        text.lines().filter(|l| !l.trim().is_empty()).map(String::from).collect();
                    lines.sort();
                    Some((epoch, lines))
                })
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
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
            if let Err(report) = compare_all(&dir.join("expected"), &output) {
                failures.push(format!("{name} stop after {stop_after}, parallelism {before} -> {after}:\n{}", report));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn several_sources_stopped_after_every_epoch_and_restarted_write_the_epochs_of_an_uninterrupted_run() {
    let mut cases: Vec<PathBuf> = std::fs::read_dir(root().join("tests/realtime"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| std::fs::read_to_string(p.join("pipeline.toml")).is_ok_and(|t| t.matches("[[source]]").count() > 1))
        .collect();
    cases.sort();
    assert!(cases.len() >= 2, "cases with several sources missing");
    let mut failures = Vec::new();
    for case in &cases {
        let name = case.file_name().unwrap().to_string_lossy().to_string();
        let tmp = tempfile::tempdir().unwrap();
        let whole = tmp.path().join("whole");
        copy_dir(case, &whole);
        let out = run(&whole, 2, None);
        assert!(out.status.success(), "{name}: {}", String::from_utf8_lossy(&out.stderr));
        let uninterrupted = epoch_rows(&whole.join("output"));
        assert!(uninterrupted.len() >= 3, "{name}: {} epochs, too few to stop in", uninterrupted.len());
        // every epoch before the last that wrote rows (epochs without rows have no file)
        let last = uninterrupted.last().map_or(0, |(e, _)| *e);
        for (i, stop_after) in (0..last).enumerate() {
            let (before, after) = if i % 2 == 0 { (1, 3) } else { (2, 1) };
            let dir = tmp.path().join(format!("stop-{stop_after}"));
            copy_dir(case, &dir);
            let first = run(&dir, before, Some(stop_after));
            let second = run(&dir, after, None);
            if !first.status.success() || !second.status.success() {
                failures.push(format!(
                    "{name} stop after {stop_after}: {}{}",
                    String::from_utf8_lossy(&first.stderr),
                    String::from_utf8_lossy(&second.stderr)
                ));
                continue;
            }
            let restarted = epoch_rows(&dir.join("output"));
            if restarted != uninterrupted {
                let differing: Vec<String> = uninterrupted
                    .iter()
                    .chain(&restarted)
                    .map(|(e, _)| *e)
                    .collect::<std::collections::BTreeSet<u64>>()
                    .into_iter()
                    .filter(|e| {
                        let of = |v: &[(u64, Vec<String>)]| v.iter().find(|(x, _)| x == e).map(|(_, r)| r.clone());
                        of(&uninterrupted) != of(&restarted)
                    })
                    .map(|e| e.to_string())
                    .collect();
                failures.push(format!(
                    "{name} stop after epoch {stop_after}, parallelism {before} -> {after}: epochs {} differ from the uninterrupted run's",
                    differing.join(", ")
                ));
            }
            let output = dir.join("output");
            if let Err(report) = compare_all(&dir.join("expected"), &output) {
                failures.push(format!("{name} stop after epoch {stop_after} against the expected rows:\n{}", report));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// `2024-03-01T12:00:00Z` plus `us` microseconds (under an hour), as RFC 3339.
fn at_noon(us: i64) -> String {
    let (s, frac) = (us / 1_000_000, us % 1_000_000);
    format!("2024-03-01T12:{:02}:{:02}.{frac:06}Z", s / 60, s % 60)
}

/// Two sources whose files are longer than one poll of the source actor (4096 items), so a
/// barrier cuts polls that ended at their item limit, joined by a stream-stream join without an
/// aggregation; the larger of the sources' watermarks (`watermark_policy = "max"`), so which
/// source's records come first decides which are late. Stopped after every epoch and restarted,
/// each epoch file holds the rows of the uninterrupted run's.
#[test]
fn a_join_of_two_sources_whose_polls_a_barrier_cuts_restarts_with_the_rows_of_an_uninterrupted_run() {
    let tmp = tempfile::tempdir().unwrap();
    let case = tmp.path().join("case");
    // a fixed pseudo-random sequence (xorshift), so the input is the same on every run
    let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = move |bound: u64| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state % bound
    };
    for side in ["lefts", "rights"] {
        let dir = case.join("input").join(side);
        std::fs::create_dir_all(&dir).unwrap();
        for file in 0..2i64 {
            let mut text = String::new();
            for i in 0..5000i64 {
                let at = 10_000_000 + (file * 5000 + i) * 10_000;
                // event time up to 2 s before and 0.5 s after the replay clock's
                let t = at - 2_000_000 + next(2_500_000) as i64;
                let key = format!("k{}", next(20));
                text.push_str(&if side == "lefts" {
                    format!(
                        "{{\"id\": \"{key}\", \"lt\": \"{}\", \"lv\": {i}, \"at\": \"{}\"}}\n",
                        at_noon(t),
                        at_noon(at)
                    )
                } else {
                    format!(
                        "{{\"at\": \"{}\", \"rid\": \"{key}\", \"rt\": \"{}\", \"rv\": {i}}}\n",
                        at_noon(at),
                        at_noon(t)
                    )
                });
            }
            std::fs::write(dir.join(format!("{file:03}.json")), text).unwrap();
        }
    }
    std::fs::write(
        case.join("pipeline.toml"),
        r#"name = "rt-join-long-polls"
mode = "real-time"
trigger = "10 seconds"
watermark_policy = "max"

[clock]
type = "replay"
column = "at"

[[source]]
name = "lefts"
type = "files"
path = "input/lefts"
format = "json"
schema = "id STRING, lt TIMESTAMP, lv BIGINT, at TIMESTAMP"
watermark = { column = "lt", delay = "1 second" }

[[source]]
name = "rights"
type = "files"
path = "input/rights"
format = "json"
schema = "at TIMESTAMP, rid STRING, rt TIMESTAMP, rv BIGINT"
watermark = { column = "rt", delay = "1 second" }

[query]
sql = """
SELECT l.id, l.lv, r.rv
FROM lefts l JOIN rights r
ON l.id = r.rid AND r.rt BETWEEN l.lt - INTERVAL 1 SECONDS AND l.lt + INTERVAL 1 SECONDS
"""
output_mode = "append"

[sink]
type = "files"
path = "output"
"#,
    )
    .unwrap();
    let whole = tmp.path().join("whole");
    copy_dir(&case, &whole);
    let out = run(&whole, 2, None);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let uninterrupted = epoch_rows(&whole.join("output"));
    let rows: usize = uninterrupted.iter().map(|(_, r)| r.len()).sum();
    let last = uninterrupted.last().map_or(0, |(e, _)| *e);
    assert!(last >= 5 && rows >= 100, "rows up to epoch {last}, {rows} rows: too few");
    let mut failures = Vec::new();
    for stop_after in 0..last {
        let dir = tmp.path().join(format!("stop-{stop_after}"));
        copy_dir(&case, &dir);
        let first = run(&dir, 1, Some(stop_after));
        let second = run(&dir, 2, None);
        assert!(first.status.success() && second.status.success(), "{}", String::from_utf8_lossy(&second.stderr));
        let restarted = epoch_rows(&dir.join("output"));
        if restarted != uninterrupted {
            failures.push(format!("stop after epoch {stop_after}: the epochs differ from the uninterrupted run's"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
