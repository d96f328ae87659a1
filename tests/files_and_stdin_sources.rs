//! The `files` and `stdin` sources end to end: CSV headers per file and on stdin, a UTF-8 byte
//! order mark, a following CSV source started on an empty folder, and files that appear with an
//! earlier name between two runs over one checkpoint.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// A count and a sum of `n` per `k` (update mode), over `source`, into `out/`, records that do
/// not decode into `dead/`. `extra` is appended (watermark, checkpoint, ...).
fn pipeline(mode: &str, source: &str, extra: &str) -> String {
    format!(
        r#"
name = "sources"
mode = "{mode}"
parallelism = 1
[source]
{source}
[query]
type = "window_aggregate"
group_by = ["k"]
output_mode = "update"
measures = [{{ agg = "count", alias = "c" }}, {{ agg = "sum", column = "n", alias = "s" }}]
[sink]
type = "files"
path = "out"
[dead_letter]
type = "files"
path = "dead"
{extra}
"#
    )
}

fn eddy(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_eddy")).args(args).current_dir(dir).env("EDDY_LOG", "warn").output().unwrap()
}

/// Runs `eddy run p.toml` in `dir` with `input` on its standard input.
fn eddy_with_stdin(dir: &Path, input: &[u8]) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_eddy"))
        .args(["run", "p.toml"])
        .current_dir(dir)
        .env("EDDY_LOG", "warn")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(input).unwrap();
    child.wait_with_output().unwrap()
}

fn assert_ok(out: &Output) {
    assert_eq!(out.status.code(), Some(0), "stderr: {}", String::from_utf8_lossy(&out.stderr));
}

/// The rows of every committed batch file under `dir/folder`, in batch order.
fn rows(dir: &Path, folder: &str) -> Vec<serde_json::Value> {
    let Ok(entries) = std::fs::read_dir(dir.join(folder)) else {
        return Vec::new();
    };
    let mut names: Vec<String> = entries
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("batch-"))
        .collect();
    names.sort();
    names
        .iter()
        .flat_map(|n| {
            std::fs::read_to_string(dir.join(folder).join(n)).unwrap().lines().map(String::from).collect::<Vec<_>>()
        })
        .map(|l| serde_json::from_str(&l).unwrap())
        .collect()
}

/// The last (count, sum) written per key (update mode: the key's state at the end).
fn last_per_key(rows: &[serde_json::Value]) -> BTreeMap<String, (i64, Option<i64>)> {
    rows.iter()
        .map(|r| {
            let k = r["k"].as_str().map_or("null".to_string(), String::from);
            (k, (r["c"].as_i64().unwrap(), r["s"].as_i64()))
        })
        .collect()
}

/// Writes `name` in `dir` whole: under a hidden name, then renamed, as a producer must.
fn put(dir: &Path, name: &str, text: &[u8]) {
    let hidden = dir.join(format!(".{name}.tmp"));
    std::fs::write(&hidden, text).unwrap();
    std::fs::rename(hidden, dir.join(name)).unwrap();
}

const CSV_SOURCE: &str = r#"type = "files"
path = "in"
format = "csv"
schema = "k STRING, n BIGINT, ts TIMESTAMP""#;

#[test]
fn a_following_csv_source_started_on_an_empty_folder_decodes_the_files_that_appear_later() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    std::fs::create_dir(dir.join("in")).unwrap();
    std::fs::write(dir.join("p.toml"), pipeline("real-time", CSV_SOURCE, "")).unwrap();
    let child = Command::new(env!("CARGO_BIN_EXE_eddy"))
        .args(["run", "p.toml", "--set", "source.follow=true"])
        .current_dir(dir)
        .env("EDDY_LOG", "warn")
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(500));
    let csv = "k,n,ts\nA,1,2024-01-15T10:00:00Z\nB,2,2024-01-15T10:00:00Z\nA,3,2024-01-15T10:00:00Z\n";
    put(&dir.join("in"), "001.csv", csv.as_bytes());
    // Rows are committed once their epoch (1 s) ends; then stop the run.
    let started = Instant::now();
    while rows(dir, "out").len() < 3 && started.elapsed() < Duration::from_secs(20) {
        std::thread::sleep(Duration::from_millis(50));
    }
    let killed = Command::new("kill").args(["-TERM", &child.id().to_string()]).status().unwrap();
    assert!(killed.success());
    let out = child.wait_with_output().unwrap();
    assert_ok(&out);
    let expected = BTreeMap::from([("A".to_string(), (2, Some(4))), ("B".to_string(), (1, Some(2)))]);
    assert_eq!(last_per_key(&rows(dir, "out")), expected);
    assert!(rows(dir, "dead").is_empty(), "dead letters: {:?}", rows(dir, "dead"));
}

#[test]
fn each_csv_file_is_decoded_under_its_own_header() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let input = dir.join("in");
    std::fs::create_dir(&input).unwrap();
    std::fs::write(input.join("000.csv"), "ts,k,n\n2024-01-15T10:00:00Z,first,1\n").unwrap();
    std::fs::write(input.join("001.csv"), "k,n,ts\nsecond,2,2024-01-15T10:00:00Z\n").unwrap();
    // No `k`: it reads as null.
    std::fs::write(input.join("002.csv"), "n,ts\n3,2024-01-15T10:00:00Z\n").unwrap();
    // No event time: the file's records are dead letters, the run goes on.
    std::fs::write(input.join("003.csv"), "k,n\nfourth,4\n").unwrap();
    std::fs::write(input.join("004.csv"), "n,k,ts\n5,first,2024-01-15T10:00:00Z\n").unwrap();
    let watermark = "[watermark]\ncolumn = \"ts\"\ndelay = \"1 minute\"\n";
    std::fs::write(dir.join("p.toml"), pipeline("micro-batch", CSV_SOURCE, watermark)).unwrap();
    assert_ok(&eddy(dir, &["run", "p.toml"]));
    let expected = BTreeMap::from([
        ("first".to_string(), (2, Some(6))),
        ("second".to_string(), (1, Some(2))),
        ("null".to_string(), (1, Some(3))),
    ]);
    assert_eq!(last_per_key(&rows(dir, "out")), expected);
    let dead = rows(dir, "dead");
    assert_eq!(dead.len(), 1, "{dead:?}");
    assert_eq!(dead[0]["source"], "003.csv:2");
    assert_eq!(dead[0]["record"], "fourth,4");
    let reason = dead[0]["reason"].as_str().unwrap();
    assert!(reason.contains("header") && reason.contains("\"ts\""), "{reason}");
}

#[test]
fn files_named_before_the_last_file_read_are_read_after_a_restart() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let input = dir.join("in");
    std::fs::create_dir(&input).unwrap();
    let record = |k: &str| format!("{{\"k\": \"{k}\", \"n\": 1}}\n");
    for k in ["001", "003"] {
        std::fs::write(input.join(format!("{k}.json")), record(k)).unwrap();
    }
    let source = "type = \"files\"\npath = \"in\"\nformat = \"json\"\nschema = \"k STRING, n BIGINT\"";
    std::fs::write(dir.join("p.toml"), pipeline("micro-batch", source, "[checkpoint]\npath = \"ck\"\n")).unwrap();
    assert_ok(&eddy(dir, &["run", "p.toml"]));
    for k in ["000", "002", "004"] {
        std::fs::write(input.join(format!("{k}.json")), record(k)).unwrap();
    }
    assert_ok(&eddy(dir, &["run", "p.toml"]));
    let keys: Vec<String> = last_per_key(&rows(dir, "out")).into_keys().collect();
    assert_eq!(keys, ["000", "001", "002", "003", "004"]);
    // Each file once: a third run reads nothing.
    let before = rows(dir, "out").len();
    assert_ok(&eddy(dir, &["run", "p.toml"]));
    assert_eq!(rows(dir, "out").len(), before);
}

const JSON_ROWS: &str = "{\"k\": \"a\", \"n\": 1}\n{\"k\": \"a\", \"n\": 2}\n";

#[test]
fn a_byte_order_mark_before_the_first_json_record_of_a_file_is_skipped() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    std::fs::create_dir(dir.join("in")).unwrap();
    std::fs::write(dir.join("in/000.json"), format!("\u{feff}{JSON_ROWS}")).unwrap();
    let source = "type = \"files\"\npath = \"in\"\nformat = \"json\"\nschema = \"k STRING, n BIGINT\"";
    std::fs::write(dir.join("p.toml"), pipeline("micro-batch", source, "")).unwrap();
    assert_ok(&eddy(dir, &["run", "p.toml"]));
    assert_eq!(last_per_key(&rows(dir, "out")), BTreeMap::from([("a".to_string(), (2, Some(3)))]));
    assert!(rows(dir, "dead").is_empty(), "dead letters: {:?}", rows(dir, "dead"));
}

#[test]
fn a_byte_order_mark_before_the_first_json_record_on_stdin_is_skipped() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let source = "type = \"stdin\"\nformat = \"json\"\nschema = \"k STRING, n BIGINT\"";
    std::fs::write(dir.join("p.toml"), pipeline("micro-batch", source, "")).unwrap();
    assert_ok(&eddy_with_stdin(dir, format!("\u{feff}{JSON_ROWS}").as_bytes()));
    assert_eq!(last_per_key(&rows(dir, "out")), BTreeMap::from([("a".to_string(), (2, Some(3)))]));
    assert!(rows(dir, "dead").is_empty(), "dead letters: {:?}", rows(dir, "dead"));
}

#[test]
fn csv_on_stdin_is_decoded_under_its_first_line() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let source = "type = \"stdin\"\nformat = \"csv\"\nschema = \"k STRING, n BIGINT, ts TIMESTAMP\"";
    std::fs::write(dir.join("p.toml"), pipeline("micro-batch", source, "")).unwrap();
    assert_ok(&eddy(dir, &["validate", "p.toml"]));
    let csv = "\u{feff}n,k\n1,A\n2,B\n3,A\n";
    assert_ok(&eddy_with_stdin(dir, csv.as_bytes()));
    let expected = BTreeMap::from([("A".to_string(), (2, Some(4))), ("B".to_string(), (1, Some(2)))]);
    assert_eq!(last_per_key(&rows(dir, "out")), expected);
    assert!(rows(dir, "dead").is_empty(), "dead letters: {:?}", rows(dir, "dead"));
}
