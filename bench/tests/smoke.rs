//! Every benchmark suite runs in a tiny version and reports (checks that it runs and prints its
//! table; the numbers of a debug build mean nothing and are not checked).

use std::process::Command;

#[test]
fn every_suite_runs_and_reports() {
    let out = Command::new(env!("CARGO_BIN_EXE_eddy-bench"))
        .args(["all", "--smoke"])
        .env("EDDY_LOG", "warn")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}\n{}", String::from_utf8_lossy(&out.stderr));
    for heading in
        ["## latency", "## throughput", "## timers", "## slow sink", "## metrics", "## nexmark", "## checkpoint"]
    {
        assert!(text.contains(heading), "missing {heading} in:\n{text}");
    }
    // The slow-sink suite asserts nothing was lost; its table shows 0 lost.
    let slow = text.split("## slow sink").nth(1).unwrap_or_default();
    let row = slow.lines().find(|l| l.starts_with("| 500 ")).unwrap_or_default();
    assert_eq!(row.split('|').nth(4).map(str::trim), Some("0"), "lost column: {row}");
    // The Nexmark suite reports every query, and writes its markdown and JSON reports.
    let nexmark = text.split("## nexmark").nth(1).unwrap_or_default();
    for q in ["q5", "q7", "q11", "q12", "rolling"] {
        assert!(nexmark.contains(&format!("| {q} | 2 |")), "no {q} row in:\n{nexmark}");
    }
    let dir = std::env::temp_dir().join("eddy-bench-smoke");
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("nexmark.json")).unwrap()).unwrap();
    assert_eq!(doc["throughput"].as_array().map(Vec::len), Some(10), "{doc}");
    assert!(std::fs::read_to_string(dir.join("nexmark.md")).unwrap().contains("records/s per core"));
}
