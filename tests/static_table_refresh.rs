//! A static table (`[[table]]`) is re-read when its files change, checked every `refresh`
//! (SEMANTICS.md "Joins"): a record joined after the change sees the new version, one joined
//! before keeps the old; a version that cannot be read keeps the previous one (and is logged).
//! Both modes, through `eddy run` with a followed files source. Expected rows written by hand.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn pipeline(mode: &str) -> String {
    format!(
        r#"
name = "refresh"
mode = "{mode}"
trigger = "200 milliseconds"
[[source]]
name = "orders"
type = "files"
path = "in"
follow = true
schema = "order_id STRING, sku STRING"
[[table]]
name = "prices"
type = "files"
path = "prices.json"
schema = "sku STRING, price DOUBLE"
refresh = "100 milliseconds"
[query]
sql = "SELECT o.order_id, p.price FROM orders o LEFT JOIN prices p ON o.sku = p.sku"
[sink]
type = "files"
path = "out"
"#
    )
}

/// The committed output rows as (order_id, price).
fn rows(dir: &Path) -> Vec<(String, Option<f64>)> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir.join("out")).map(|d| d.flatten().collect::<Vec<_>>()).unwrap_or_default() {
        let name = e.file_name().to_string_lossy().to_string();
        if name.starts_with('.') || !name.ends_with(".jsonl") {
            continue;
        }
        for line in std::fs::read_to_string(e.path()).unwrap_or_default().lines() {
            let v: serde_json::Value = serde_json::from_str(line).unwrap();
            out.push((v["order_id"].as_str().unwrap_or_default().to_string(), v["price"].as_f64()));
        }
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

/// Writes `content` to `dir/name` through a hidden temporary file and a rename, so that a
/// reader never sees it half-written.
fn put(dir: &Path, name: &str, content: &str) {
    let tmp = dir.join(format!(".{name}.tmp"));
    std::fs::write(&tmp, content).unwrap();
    std::fs::rename(tmp, dir.join(name)).unwrap();
}

/// Waits (at most 20 s) until the output holds `n` rows.
fn wait_rows(dir: &Path, n: usize) {
    let started = Instant::now();
    while rows(dir).len() < n && started.elapsed() < Duration::from_secs(20) {
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn check(mode: &str) {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    std::fs::create_dir(dir.join("in")).unwrap();
    std::fs::write(dir.join("p.toml"), pipeline(mode)).unwrap();
    put(dir, "prices.json", "{\"sku\": \"A\", \"price\": 1.0}\n");
    let child = Command::new(env!("CARGO_BIN_EXE_eddy"))
        .args(["run", "p.toml", "--no-progress"])
        .current_dir(dir)
        .env("EDDY_LOG", "warn")
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    put(&dir.join("in"), "000.json", "{\"order_id\": \"o1\", \"sku\": \"A\"}\n");
    wait_rows(dir, 1);
    // a new version: A costs 2.0, B appears
    put(dir, "prices.json", "{\"sku\": \"A\", \"price\": 2.0}\n{\"sku\": \"B\", \"price\": 5.0}\n");
    std::thread::sleep(Duration::from_millis(500));
    put(
        &dir.join("in"),
        "001.json",
        "{\"order_id\": \"o2\", \"sku\": \"A\"}\n{\"order_id\": \"o3\", \"sku\": \"B\"}\n",
    );
    wait_rows(dir, 3);
    // a version that cannot be read: the previous one is kept
    put(dir, "prices.json", "{\"sku\": \"A\", \"price\": \"not a number\"}\n");
    std::thread::sleep(Duration::from_millis(500));
    put(&dir.join("in"), "002.json", "{\"order_id\": \"o4\", \"sku\": \"A\"}\n");
    wait_rows(dir, 4);
    let killed = Command::new("kill").args(["-TERM", &child.id().to_string()]).status().unwrap();
    assert!(killed.success());
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{mode}: {stderr}");
    let expected = vec![
        ("o1".to_string(), Some(1.0)),
        ("o2".to_string(), Some(2.0)),
        ("o3".to_string(), Some(5.0)),
        ("o4".to_string(), Some(2.0)),
    ];
    assert_eq!(rows(dir), expected, "{mode}");
    assert!(
        stderr.contains("cannot be read again") && stderr.contains("prices"),
        "{mode}: the failed re-read is logged: {stderr}"
    );
}

#[test]
fn a_changed_table_applies_from_the_next_micro_batch_and_a_broken_one_keeps_the_old() {
    check("micro-batch");
}

#[test]
fn a_changed_table_applies_from_the_next_record_in_real_time_and_a_broken_one_keeps_the_old() {
    check("real-time");
}

#[test]
fn a_table_row_whose_join_key_fails_is_named_by_its_file_and_line() {
    // a folder table: the key `CAST(code AS BIGINT)` fails on the second row of b.json
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    std::fs::create_dir_all(dir.join("in")).unwrap();
    std::fs::create_dir_all(dir.join("prices")).unwrap();
    std::fs::write(dir.join("in/000.json"), "{\"order_id\": \"o1\", \"sku\": \"1\"}\n").unwrap();
    std::fs::write(dir.join("prices/a.json"), "{\"code\": \"1\", \"price\": 2}\n").unwrap();
    std::fs::write(dir.join("prices/b.json"), "{\"code\": \"2\", \"price\": 3}\n\n{\"code\": \"x\", \"price\": 4}\n")
        .unwrap();
    let p = pipeline("micro-batch")
        .replace("follow = true\n", "")
        .replace(
            "path = \"prices.json\"\nschema = \"sku STRING, price DOUBLE\"",
            "path = \"prices\"\nschema = \"code STRING, price DOUBLE\"",
        )
        .replace("ON o.sku = p.sku", "ON CAST(o.sku AS BIGINT) = CAST(p.code AS BIGINT)");
    std::fs::write(dir.join("p.toml"), p).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_eddy")).args(["run", "p.toml"]).current_dir(dir).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("table prices") && err.contains("b.json:3: its join key failed"), "{err}");
}
