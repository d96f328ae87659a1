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
    for heading in [
        "## floor",
        "## latency",
        "## throughput",
        "## timers",
        "## slow sink",
        "## metrics",
        "## nexmark",
        "## checkpoint",
    ] {
        assert!(text.contains(heading), "missing {heading} in:\n{text}");
    }
    // The latency suites report the machine's floor (no engine) beside the engine's runs.
    let latency = text.split("## latency").nth(1).unwrap_or_default();
    for row in [
        "| floor, 1 thread | 20000 | 20000 |",
        "| floor, 2 threads | 20000 | 20000 |",
        "| eddy, parallelism 1 (chained) |",
        "| eddy, parallelism 1, unchained |",
        "| eddy, parallelism 2 |",
    ] {
        assert!(latency.contains(row), "no `{row}` row in:\n{latency}");
    }
    // Spinning before blocking changes when the partition actors wake, not what they write.
    let rows_of = |label: &str| {
        latency
            .lines()
            .find(|l| l.starts_with(&format!("| eddy, {label} |")))
            .and_then(|l| l.split('|').nth(3).map(|c| c.trim().to_owned()))
            .unwrap_or_else(|| panic!("no `{label}` row in:\n{latency}"))
    };
    let plain = rows_of("parallelism 2");
    assert!(plain.parse::<u64>().is_ok_and(|n| n > 0), "rows: {plain}");
    assert_eq!(rows_of("parallelism 2, spin 50 µs"), plain);
    assert_eq!(rows_of("parallelism 2, spin 500 µs"), plain);
    // The timers suite reports the machine's timer floor beside the engine.
    let timers = text.split("## timers").nth(1).unwrap_or_default();
    assert!(timers.contains("| floor | ") && timers.contains("| eddy | "), "{timers}");
    // The slow-sink suite asserts nothing was lost; its table shows 0 lost.
    let slow = text.split("## slow sink").nth(1).unwrap_or_default();
    let row = slow.lines().find(|l| l.starts_with("| 500 ")).unwrap_or_default();
    assert_eq!(row.split('|').nth(4).map(str::trim), Some("0"), "lost column: {row}");
    // The Nexmark suite reports every query, and writes its markdown and JSON reports.
    let nexmark = text.split("## nexmark").nth(1).unwrap_or_default();
    for q in ["q5", "q7", "q11", "q12", "rolling", "q5-sql", "q7-sql", "join-sql", "q5-full"] {
        assert!(nexmark.contains(&format!("| {q} | 2 |")), "no {q} row in:\n{nexmark}");
    }
    let dir = std::env::temp_dir().join("eddy-bench-smoke");
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("nexmark.json")).unwrap()).unwrap();
    // 9 queries (5 structured, q5 and q7 in SQL, q5 in full through the exchange, the
    // stream-stream join) x 2 parallelisms
    assert_eq!(doc["throughput"].as_array().map(Vec::len), Some(18), "{doc}");
    let floor = doc["latency_floor"].as_array().cloned().unwrap_or_default();
    assert_eq!(floor.len(), 2, "{doc}");
    assert!(floor.iter().all(|f| f["records"] == 5_000 && f["p50_ns"].as_u64().is_some_and(|p50| f["p99_ns"].as_u64() >= Some(p50))), "{doc}");
    assert!(std::fs::read_to_string(dir.join("nexmark.md")).unwrap().contains("records/s per core"));
}

#[test]
fn the_nexmark_suite_runs_one_query_several_rounds_and_reports_their_median() {
    let out = Command::new(env!("CARGO_BIN_EXE_eddy-bench"))
        .args(["nexmark", "--smoke", "--query", "q7", "--rounds", "3", "--events", "3000", "--throughput-only"])
        .env("EDDY_LOG", "warn")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}\n{}", String::from_utf8_lossy(&out.stderr));
    for parallelism in [1, 2] {
        let runs = text.lines().filter(|l| l.starts_with(&format!("| q7 | {parallelism} | 3000 |"))).count();
        assert_eq!(runs, 3, "three rounds at parallelism {parallelism} in:\n{text}");
    }
    assert!(text.contains("over 3 rounds"), "{text}");
    assert!(!text.contains("| q5 |") && !text.contains("### latency"), "only q7's throughput: {text}");
    // An unknown query is refused by the command line, naming the allowed ones.
    let bad = Command::new(env!("CARGO_BIN_EXE_eddy-bench")).args(["nexmark", "--query", "q99"]).output().unwrap();
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("q11"), "{}", String::from_utf8_lossy(&bad.stderr));
}
