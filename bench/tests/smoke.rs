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
    for heading in ["## latency", "## throughput", "## timers", "## slow sink", "## metrics", "## checkpoint"] {
        assert!(text.contains(heading), "missing {heading} in:\n{text}");
    }
    // The slow-sink suite asserts nothing was lost; its table shows 0 lost.
    let slow = text.split("## slow sink").nth(1).unwrap_or_default();
    let row = slow.lines().find(|l| l.starts_with("| 500 ")).unwrap_or_default();
    assert_eq!(row.split('|').nth(4).map(str::trim), Some("0"), "lost column: {row}");
}
