//! The SQL example files (`examples/sql/*.toml`) validate, and those reading `examples/data` run
//! to the end. The two tumbling examples are compared with a brute-force reference over the
//! same data, written here from SEMANTICS.md (one input file is one micro-batch; in append mode
//! a window is written once the watermark, max(event time) - delay, reaches its end; complete
//! mode writes the whole table).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

fn examples() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("examples/sql")
}

/// Seconds since 2024-01-15T00:00:00Z of a `2024-01-15THH:MM:SS...` timestamp (every example
/// record is on that day).
fn seconds_of_day(ts: &str) -> i64 {
    assert!(ts.starts_with("2024-01-15T"), "{ts}");
    let hms: Vec<i64> = ts[11..19].split(':').map(|p| p.parse().unwrap()).collect();
    hms[0] * 3600 + hms[1] * 60 + hms[2]
}

fn input(name: &str) -> Vec<serde_json::Value> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("examples/data").join(name).join("events.jsonl");
    std::fs::read_to_string(path).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

/// Runs `file` with its sink in a temporary folder; the rows of each batch file, in file order.
fn run(file: &str) -> Vec<Vec<serde_json::Value>> {
    let out = tempfile::tempdir().unwrap();
    let status = Command::new(env!("CARGO_BIN_EXE_eddy"))
        .args(["run", "--no-progress", "--set"])
        .arg(format!("sink.path={}", out.path().display()))
        .arg(examples().join(file))
        .env("EDDY_LOG", "warn")
        .status()
        .unwrap();
    assert!(status.success(), "{file}: {status}");
    let mut files: Vec<PathBuf> = std::fs::read_dir(out.path()).unwrap().flatten().map(|e| e.path()).collect();
    files.sort();
    files
        .iter()
        .map(|f| std::fs::read_to_string(f).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect())
        .collect()
}

fn validate(file: &Path) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_eddy")).arg("validate").arg(file).env("EDDY_LOG", "warn").output().unwrap()
}

#[test]
fn sql_example_files_validate_and_the_file_ones_run() {
    let mut files: Vec<PathBuf> = std::fs::read_dir(examples())
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .collect();
    files.sort();
    assert!(files.len() >= 5, "{files:?}");
    for f in &files {
        let out = validate(f);
        assert!(out.status.success(), "{}: {}", f.display(), String::from_utf8_lossy(&out.stderr));
    }
    for f in ["sliding-per-user.toml", "session-per-user.toml"] {
        let rows: usize = run(f).iter().map(Vec::len).sum();
        assert!(rows > 0, "{f}: no rows");
    }
}

#[test]
fn sql_kafka_example_prints_the_json_value_schema() {
    let out = validate(&examples().join("rolling-revenue-kafka.toml"));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "key STRING\nvalue STRING\n");
}

/// (window start in seconds of the day, key) -> (sum, count)
type Table = BTreeMap<(i64, String), (f64, i64)>;

fn tumbling(records: &[serde_json::Value], key: &str, amount: &str, size: i64) -> Table {
    let mut t = Table::new();
    for r in records {
        let start = seconds_of_day(r["event_time"].as_str().unwrap()).div_euclid(size) * size;
        let e = t.entry((start, r[key].as_str().unwrap().to_string())).or_insert((0.0, 0));
        e.0 += r[amount].as_f64().unwrap_or(0.0);
        e.1 += 1;
    }
    t
}

fn assert_rows(rows: &[serde_json::Value], expected: &Table, key: &str, sum: &str, count: &str, size: i64) {
    let mut got = Table::new();
    for r in rows {
        let start = seconds_of_day(r["window_start"].as_str().or(r["window"]["start"].as_str()).unwrap());
        let end = seconds_of_day(r["window_end"].as_str().or(r["window"]["end"].as_str()).unwrap());
        assert_eq!(end - start, size, "{r}");
        let k = (start, r[key].as_str().unwrap().to_string());
        assert!(got.insert(k, (r[sum].as_f64().unwrap_or(0.0), r[count].as_i64().unwrap())).is_none(), "{r} twice");
    }
    assert_eq!(got.keys().collect::<Vec<_>>(), expected.keys().collect::<Vec<_>>());
    for (k, (s, c)) in expected {
        let (gs, gc) = got[k];
        assert_eq!(gc, *c, "{k:?}");
        assert!((gs - s).abs() < 1e-6, "{k:?}: {gs} vs {s}");
    }
}

#[test]
fn sql_tumbling_example_writes_each_closed_window_once_with_total_and_count() {
    let records = input("revenue");
    let watermark = records.iter().map(|r| seconds_of_day(r["event_time"].as_str().unwrap())).max().unwrap() - 600;
    let mut expected = tumbling(&records, "user_id", "revenue", 300);
    expected.retain(|(start, _), _| start + 300 <= watermark);
    assert!(!expected.is_empty());
    let rows: Vec<serde_json::Value> = run("tumbling-per-user.toml").concat();
    assert_rows(&rows, &expected, "user_id", "total", "txn_count", 300);
}

#[test]
fn sql_count_and_sum_example_writes_the_whole_table_in_complete_mode() {
    let records = input("sales");
    let expected = tumbling(&records, "product", "value", 300);
    let batches = run("tumbling-count-sum.toml");
    let last = batches.last().expect("a batch");
    assert_rows(last, &expected, "product", "total_amount", "count", 300);
}
