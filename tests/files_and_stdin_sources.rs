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

const JSON_SOURCE: &str = "type = \"files\"\npath = \"in\"\nformat = \"json\"\nschema = \"k STRING, n BIGINT\"";

/// `text` gzipped.
fn gzip(text: &str) -> Vec<u8> {
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(text.as_bytes()).unwrap();
    gz.finish().unwrap()
}

/// The dead letters whose reason starts with `prefix`.
fn dead_letters(dir: &Path, prefix: &str) -> Vec<serde_json::Value> {
    rows(dir, "dead").into_iter().filter(|d| d["reason"].as_str().unwrap().starts_with(prefix)).collect()
}

#[test]
fn unreadable_gz_files_go_to_the_dead_letters_and_a_restart_reads_nothing_twice() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let input = dir.join("in");
    std::fs::create_dir(&input).unwrap();
    // Lines of varied content, so that the compressed stream has no long repeats.
    let bad: String = (0..3000).map(|i| format!("{{\"k\": \"bad\", \"n\": {}}}\n", i * 7919 % 10007)).collect();
    let whole = gzip(&bad);
    std::fs::write(input.join("a.json"), "{\"k\": \"a\", \"n\": 1}\n{\"k\": \"a\", \"n\": 2}\n").unwrap();
    std::fs::write(input.join("b.json.gz"), &whole[..whole.len() / 2]).unwrap();
    let mut garbled = whole.clone();
    let mid = garbled.len() / 2;
    garbled[mid..mid + 64].fill(0x55);
    std::fs::write(input.join("c.json.gz"), &garbled).unwrap();
    std::fs::write(input.join("d.json"), "{\"k\": \"d\", \"n\": 5}\n").unwrap();
    std::fs::write(dir.join("p.toml"), pipeline("micro-batch", JSON_SOURCE, "[checkpoint]\npath = \"ck\"\n")).unwrap();
    assert_ok(&eddy(dir, &["run", "p.toml"]));
    let last = last_per_key(&rows(dir, "out"));
    assert_eq!((last["a"], last["d"]), ((2, Some(3)), (1, Some(5))));
    let unreadable = dead_letters(dir, "unreadable file");
    let sources: Vec<&str> = unreadable.iter().map(|d| d["source"].as_str().unwrap()).collect();
    assert_eq!(sources.len(), 2, "{unreadable:?}");
    assert!(sources[0].starts_with("b.json.gz:") && sources[0].contains("byte"), "{sources:?}");
    assert!(sources[1].starts_with("c.json.gz:") && sources[1].contains("byte"), "{sources:?}");
    // The lines of the truncated file before the failure were read.
    assert!(last["bad"].0 > 0, "{last:?}");

    // A restart from the checkpoint: nothing is read again, nothing fails again.
    let (out_before, dead_before) = (rows(dir, "out").len(), rows(dir, "dead").len());
    assert_ok(&eddy(dir, &["run", "p.toml"]));
    assert_eq!((rows(dir, "out").len(), rows(dir, "dead").len()), (out_before, dead_before));

    // `on_unreadable_file = "fail"`: exit 1 naming the file.
    std::fs::remove_dir_all(dir.join("ck")).unwrap();
    let out = eddy(dir, &["run", "p.toml", "--set", "source.on_unreadable_file=fail"]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("b.json.gz"), "{stderr}");
}

#[test]
fn a_record_longer_than_max_record_bytes_is_a_dead_letter_of_its_size_and_first_bytes() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    std::fs::create_dir(dir.join("in")).unwrap();
    let long = format!("{{\"k\": \"{}\", \"n\": 1}}", "x".repeat(5000));
    let text = format!("{{\"k\": \"a\", \"n\": 1}}\n{long}\n{{\"k\": \"a\", \"n\": 2}}\n");
    std::fs::write(dir.join("in/000.json"), &text).unwrap();
    std::fs::write(dir.join("p.toml"), pipeline("micro-batch", JSON_SOURCE, "")).unwrap();
    assert_ok(&eddy(dir, &["run", "p.toml", "--set", "source.max_record_bytes=1000"]));
    assert_eq!(last_per_key(&rows(dir, "out")), BTreeMap::from([("a".to_string(), (2, Some(3)))]));
    let dead = rows(dir, "dead");
    assert_eq!(dead.len(), 1, "{dead:?}");
    assert_eq!(dead[0]["source"], "000.json:2");
    assert_eq!(dead[0]["record"].as_str().unwrap(), &long[..1024]);
    let reason = dead[0]["reason"].as_str().unwrap();
    assert!(reason.contains(&long.len().to_string()) && reason.contains("max_record_bytes (1000)"), "{reason}");

    // The same on standard input.
    let stdin = "type = \"stdin\"\nformat = \"json\"\nschema = \"k STRING, n BIGINT\"\nmax_record_bytes = 1000";
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("p.toml"), pipeline("micro-batch", stdin, "")).unwrap();
    assert_ok(&eddy_with_stdin(dir.path(), text.as_bytes()));
    assert_eq!(last_per_key(&rows(dir.path(), "out")), BTreeMap::from([("a".to_string(), (2, Some(3)))]));
    let dead = rows(dir.path(), "dead");
    assert_eq!((dead.len(), &dead[0]["source"]), (1, &serde_json::json!("stdin:2")));
}

#[test]
fn a_malformed_line_among_the_lines_of_a_read_block_is_a_dead_letter_at_its_own_line() {
    // The first line is read alone, the others whole in the read block, in runs of lines (a
    // blank line ends one): each dead letter names its own line, in real-time mode without
    // checkpoints (a run routed whole) and with them (a record at a time, its offset moved), and
    // a restart from the checkpoint reads no line again.
    let line = |n: usize| match n {
        5 | 11 => format!("{{\"k\": \"a\", \"n\": oops{n}}}\n"),
        8 => "\n".to_string(),
        _ => format!("{{\"k\": \"a\", \"n\": {n}}}\n"),
    };
    let text: String = (1..=12).map(line).collect();
    let sum: i64 = [1, 2, 3, 4, 6, 7, 9, 10, 12].iter().sum();
    for extra in ["", "[checkpoint]\npath = \"ck\"\n"] {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();
        std::fs::create_dir(dir.join("in")).unwrap();
        std::fs::write(dir.join("in/000.json"), &text).unwrap();
        std::fs::write(dir.join("p.toml"), pipeline("real-time", JSON_SOURCE, extra)).unwrap();
        assert_ok(&eddy(dir, &["run", "p.toml"]));
        assert_eq!(last_per_key(&rows(dir, "out")), BTreeMap::from([("a".to_string(), (9, Some(sum)))]), "{extra}");
        let dead = rows(dir, "dead");
        let at: Vec<&str> = dead.iter().map(|d| d["source"].as_str().unwrap()).collect();
        assert_eq!(at, ["000.json:5", "000.json:11"], "{extra}");
        assert_eq!(dead[1]["record"], "{\"k\": \"a\", \"n\": oops11}");
        if !extra.is_empty() {
            let (out_before, dead_before) = (rows(dir, "out").len(), rows(dir, "dead").len());
            assert_ok(&eddy(dir, &["run", "p.toml"]));
            assert_eq!((rows(dir, "out").len(), rows(dir, "dead").len()), (out_before, dead_before));
        }
    }
}

#[test]
fn a_csv_record_with_a_newline_in_a_quoted_field_is_one_record() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    std::fs::create_dir(dir.join("in")).unwrap();
    let csv = "k,n,ts\n\"multi\nline\",3,2024-01-15T10:00:00Z\nB,\"1\",2024-01-15T10:00:00Z\n";
    std::fs::write(dir.join("in/000.csv"), csv).unwrap();
    std::fs::write(dir.join("p.toml"), pipeline("micro-batch", CSV_SOURCE, "")).unwrap();
    assert_ok(&eddy(dir, &["run", "p.toml"]));
    let expected = BTreeMap::from([("B".to_string(), (1, Some(1))), ("multi\nline".to_string(), (1, Some(3)))]);
    assert_eq!(last_per_key(&rows(dir, "out")), expected);
    assert!(rows(dir, "dead").is_empty(), "dead letters: {:?}", rows(dir, "dead"));
    // On standard input too.
    let stdin = "type = \"stdin\"\nformat = \"csv\"\nschema = \"k STRING, n BIGINT, ts TIMESTAMP\"";
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("p.toml"), pipeline("micro-batch", stdin, "")).unwrap();
    assert_ok(&eddy_with_stdin(dir.path(), csv.as_bytes()));
    assert_eq!(last_per_key(&rows(dir.path(), "out")), expected);
}

#[test]
fn the_last_line_on_stdin_without_a_newline_is_a_record() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let source = "type = \"stdin\"\nformat = \"json\"\nschema = \"k STRING, n BIGINT\"";
    std::fs::write(dir.join("p.toml"), pipeline("micro-batch", source, "")).unwrap();
    assert_ok(&eddy_with_stdin(dir, b"{\"k\": \"a\", \"n\": 1}\n{\"k\": \"a\", \"n\": 2}"));
    assert_eq!(last_per_key(&rows(dir, "out")), BTreeMap::from([("a".to_string(), (2, Some(3)))]));
}

#[test]
fn lines_appended_in_pieces_to_a_followed_file_are_each_read_once() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    std::fs::create_dir(dir.join("in")).unwrap();
    std::fs::write(dir.join("p.toml"), pipeline("real-time", JSON_SOURCE, "")).unwrap();
    let child = Command::new(env!("CARGO_BIN_EXE_eddy"))
        .args(["run", "p.toml", "--set", "source.follow=true", "--set", "trigger=200 milliseconds"])
        .current_dir(dir)
        .env("EDDY_LOG", "warn")
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // 500 lines, keys by parity, n = line number, cut into pieces of 1 to 37 bytes (a fixed
    // pattern), written over about half a second.
    let text: String = (0..500).map(|i| format!("{{\"k\": \"{}\", \"n\": {i}}}\n", ["even", "odd"][i % 2])).collect();
    let mut file = std::fs::File::create(dir.join("in/events.json")).unwrap();
    let mut at = 0;
    let mut piece = 1;
    while at < text.len() {
        let end = (at + piece).min(text.len());
        file.write_all(&text.as_bytes()[at..end]).unwrap();
        at = end;
        piece = piece * 7 % 37 + 1;
        std::thread::sleep(Duration::from_micros(900));
    }
    let expected = BTreeMap::from([
        ("even".to_string(), (250, Some((0..500).step_by(2).sum::<i64>()))),
        ("odd".to_string(), (250, Some((1..500).step_by(2).sum::<i64>()))),
    ]);
    let started = Instant::now();
    while last_per_key(&rows(dir, "out")) != expected && started.elapsed() < Duration::from_secs(20) {
        std::thread::sleep(Duration::from_millis(50));
    }
    let killed = Command::new("kill").args(["-TERM", &child.id().to_string()]).status().unwrap();
    assert!(killed.success());
    assert_ok(&child.wait_with_output().unwrap());
    assert_eq!(last_per_key(&rows(dir, "out")), expected);
    assert!(rows(dir, "dead").is_empty(), "dead letters: {:?}", rows(dir, "dead"));
}

/// Starts `eddy run p.toml` in `dir` with a followed source, waits until `done` holds of `dir`
/// (at most 20 s), stops it with SIGTERM, checks that it exited 0 and returns its output.
fn run_followed_until(dir: &Path, done: impl Fn(&Path) -> bool) -> Output {
    let child = Command::new(env!("CARGO_BIN_EXE_eddy"))
        .args(["run", "p.toml", "--set", "source.follow=true", "--set", "trigger=200 milliseconds"])
        .current_dir(dir)
        .env("EDDY_LOG", "warn")
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let started = Instant::now();
    while !done(dir) && started.elapsed() < Duration::from_secs(20) {
        std::thread::sleep(Duration::from_millis(50));
    }
    let killed = Command::new("kill").args(["-TERM", &child.id().to_string()]).status().unwrap();
    assert!(killed.success());
    let out = child.wait_with_output().unwrap();
    assert_ok(&out);
    out
}

#[test]
fn a_followed_file_replaced_by_a_longer_one_while_stopped_is_read_from_its_start() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    std::fs::create_dir(dir.join("in")).unwrap();
    let source = format!("{JSON_SOURCE}\npartial_line_timeout = \"1 second\"");
    std::fs::write(dir.join("p.toml"), pipeline("real-time", &source, "[checkpoint]\npath = \"ck\"\n")).unwrap();
    let line = |k: &str, n: i64| format!("{{\"k\": \"{k}\", \"n\": {n}}}\n");
    let old: String = (1..=3).map(|n| line("old", n)).collect();
    put(&dir.join("in"), "a.jsonl", old.as_bytes());
    run_followed_until(dir, |dir| last_per_key(&rows(dir, "out")).get("old") == Some(&(3, Some(6))));
    // Rotated while stopped: renamed away, a new, longer file under the name (a new inode).
    std::fs::rename(dir.join("in/a.jsonl"), dir.join("rotated.jsonl")).unwrap();
    let new: String = (1..=5).map(|n| line("new", n * 10)).collect();
    put(&dir.join("in"), "a.jsonl", new.as_bytes());
    run_followed_until(dir, |dir| last_per_key(&rows(dir, "out")).get("new").is_some_and(|(c, _)| *c >= 5));
    let got = last_per_key(&rows(dir, "out"));
    assert_eq!(got.get("new"), Some(&(5, Some(150))), "rows: {got:?}");
    assert_eq!(got.get("old"), Some(&(3, Some(6))), "rows: {got:?}");
    assert!(rows(dir, "dead").is_empty(), "dead letters: {:?}", rows(dir, "dead"));
}

#[test]
fn a_half_written_gz_in_a_followed_folder_is_logged_with_how_to_write_it_whole() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    std::fs::create_dir(dir.join("in")).unwrap();
    std::fs::write(dir.join("p.toml"), pipeline("real-time", JSON_SOURCE, "")).unwrap();
    // Caught half-written: the first half of a compressed stream.
    let text: String = (0..3000).map(|i| format!("{{\"k\": \"gz\", \"n\": {}}}\n", i * 7919 % 10007)).collect();
    let whole = gzip(&text);
    std::fs::write(dir.join("in/a.json.gz"), &whole[..whole.len() / 2]).unwrap();
    let out = run_followed_until(dir, |dir| !dead_letters(dir, "unreadable file").is_empty());
    assert_eq!(dead_letters(dir, "unreadable file").len(), 1);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("a .gz must appear whole: write it under a hidden name, then rename"), "{stderr}");
}
