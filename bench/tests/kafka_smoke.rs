//! The `kafka` suite runs in its tiny version against a broker it starts itself, and reports
//! (the numbers of a debug build mean nothing and are not checked). Skipped loudly without the
//! test broker (`../shared/tools/kafka/install`), failed under `CI=true`.

use std::io::Write;
use std::path::PathBuf;
use std::process::Command;

#[test]
fn kafka_suite_runs_every_path_and_reports() {
    let home = std::env::var_os("KAFKA_TOOLS")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(std::env::var_os("HOME").unwrap_or_default()).join(".cache/kafka-tools"));
    if !home.join("bin/tansu").is_file() {
        let msg = "the Kafka test broker is not installed (../shared/tools/kafka/install)";
        assert!(std::env::var("CI").map_or(true, |v| v != "true"), "{msg}: CI=true, so this test must not be skipped");
        let _ = writeln!(std::io::stderr(), "\n!!!!!!!! SKIPPED bench kafka smoke: {msg} !!!!!!!!\n");
        return;
    }
    let out = Command::new(env!("CARGO_BIN_EXE_eddy-bench"))
        .args(["kafka", "--smoke"])
        .env("EDDY_LOG", "warn")
        .env_remove("KAFKA_BOOTSTRAP")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}\n{}", String::from_utf8_lossy(&out.stderr));
    let eddy = ["| eddy, parallelism 1 (chained) |", "| eddy, parallelism 2 |"];
    let headings = ["## kafka", "| floor, 1 hop |", "| floor, 2 hops |", "### kafka: p99 over", "### kafka tuning"];
    for row in headings.iter().chain(&eddy) {
        assert!(text.contains(row), "missing {row} in:\n{text}");
    }
    // Every record sent came through on each path (cells: path, round, rate, sent, received).
    let runs = text.split("### kafka: p99 over").next().unwrap_or_default();
    for line in runs.lines().filter(|l| l.starts_with("| floor") || eddy.iter().any(|e| l.starts_with(e))) {
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        assert_eq!(cells[4], cells[5], "sent vs received: {line}");
    }
    // The engine's own share: a row per measured record (those sent after the 1 s warm-up),
    // stamped from the source's poll, so within the end-to-end latency.
    for row in eddy {
        let inside_row = format!("{}, inside the engine |", row.trim_end_matches(" |"));
        let sent: u64 = cell(&text, row, 4);
        let inside: u64 = cell(&text, &inside_row, 5);
        assert!(inside > 0 && inside <= sent, "{inside_row}: {inside} of {sent} sent:\n{text}");
        let p99 = |label: &str| cell::<f64>(&text, label, 7);
        assert!(p99(&inside_row) <= p99(row), "{text}");
    }
    // The summary has a row per path, with what each Eddy path adds over the 2-hop floor.
    let summary = text.split("### kafka: p99 over").nth(1).unwrap_or_default();
    for row in eddy {
        let label = row.trim_start_matches("| ").trim_end_matches(" |");
        let line = summary.lines().find(|l| l.contains(label)).unwrap_or_else(|| panic!("no {label} in:\n{summary}"));
        let adds = line.split('|').map(str::trim).nth(5).unwrap_or_default();
        assert!(adds.starts_with('+') || adds.starts_with('-'), "adds over the floor: {line}");
    }
}

/// Cell `i` (split on `|`) of the first line starting with `label`, parsed.
fn cell<T: std::str::FromStr>(text: &str, label: &str, i: usize) -> T {
    let line = text.lines().find(|l| l.starts_with(label)).unwrap_or_else(|| panic!("no {label} in:\n{text}"));
    let c = line.split('|').map(str::trim).nth(i).unwrap_or_default();
    c.parse().unwrap_or_else(|_| panic!("cell {i} of {line} is {c:?}"))
}
