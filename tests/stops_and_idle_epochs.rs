//! The daemon's epochs and stops, end to end through `eddy run`:
//! - an idle real-time pipeline closes no epoch (no barrier, no checkpoint) while nothing
//!   happens, even with `trigger = "0 seconds"`;
//! - two stop signals a millisecond apart (GNU `timeout` signals the child, then its process
//!   group) are one stop request: exit 0 with the last epoch committed;
//! - a graceful stop under the replay clock keeps the epoch boundaries of an uninterrupted run:
//!   an epoch whose boundary the input has not reached yet is not committed, and the restarted
//!   run writes it whole.
//!
//! Expected rows are written by hand: a deduplication emits the first record of each key.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

/// How long a test waits for the daemon to have done something (generous: debug build, busy
/// machine); never a bound on speed, only a guard against hanging.
const PATIENCE: Duration = Duration::from_secs(120);

fn start(dir: &Path, pipeline: &str) -> Child {
    std::fs::write(dir.join("pipeline.toml"), pipeline).unwrap();
    std::fs::create_dir_all(dir.join("input")).unwrap();
    Command::new(env!("CARGO_BIN_EXE_eddy"))
        .arg("run")
        .arg(dir.join("pipeline.toml"))
        .arg("--no-progress")
        .env("EDDY_LOG", "info")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// Sends SIGTERM `times` times to `child`, `gap` apart (the shell's builtin `kill`).
fn sigterm(child: &Child, times: usize, gap: &str) {
    let pid = child.id().to_string();
    let script = vec!["kill -TERM \"$0\""; times].join(&format!("; sleep {gap}; "));
    let status = Command::new("sh").args(["-c", &script, &pid]).status().unwrap();
    assert!(status.success(), "kill failed");
}

fn finish(child: Child) -> Output {
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "exit {:?}, stderr:\n{}", out.status.code(), String::from_utf8_lossy(&out.stderr));
    out
}

/// Writes an input file the way a following source requires: under a hidden name, then renamed.
fn put(dir: &Path, name: &str, lines: &[&str]) {
    let hidden = dir.join("input").join(format!(".{name}"));
    std::fs::write(&hidden, lines.iter().map(|l| format!("{l}\n")).collect::<String>()).unwrap();
    std::fs::rename(&hidden, dir.join("input").join(name)).unwrap();
}

/// Waits until `ready` holds, checked every 20 ms.
fn wait_until(what: &str, mut ready: impl FnMut() -> bool) {
    let t = Instant::now();
    while !ready() {
        assert!(t.elapsed() < PATIENCE, "gave up waiting for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The committed output files' epochs, in order, with their lines sorted.
fn committed(output: &Path) -> Vec<(u64, Vec<String>)> {
    let mut files: Vec<(u64, Vec<String>)> = std::fs::read_dir(output)
        .map(|d| {
            d.flatten()
                .filter_map(|e| {
                    let name = e.file_name().to_string_lossy().to_string();
                    let epoch = name.strip_prefix("batch-")?.strip_suffix(".jsonl")?.parse().ok()?;
                    let mut lines: Vec<String> =
                        std::fs::read_to_string(e.path()).unwrap().lines().map(str::to_owned).collect();
                    lines.sort();
                    Some((epoch, lines))
                })
                .collect()
        })
        .unwrap_or_default();
    files.sort();
    files
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// Rows written so far to the main sink, committed or not (`eddy_records_out_total` on the
/// metrics endpoint at `port`); 0 while the endpoint does not answer.
fn rows_written(port: u16) -> u64 {
    let Ok(mut s) = TcpStream::connect(("127.0.0.1", port)) else { return 0 };
    let _ = s.set_read_timeout(Some(Duration::from_secs(5)));
    if s.write_all(b"GET /metrics HTTP/1.0\r\nHost: localhost\r\n\r\n").is_err() {
        return 0;
    }
    let mut text = String::new();
    let _ = s.read_to_string(&mut text);
    text.lines()
        .find(|l| l.starts_with("eddy_records_out_total"))
        .and_then(|l| l.split_whitespace().last()?.parse::<f64>().ok())
        .map_or(0, |v| v as u64)
}

/// The newest checkpoint's epoch (`ck/<name>/manifest-<epoch>`), if any.
fn newest_checkpoint(ck: &Path) -> Option<u64> {
    std::fs::read_dir(ck)
        .ok()?
        .flatten()
        .filter_map(|e| e.file_name().to_string_lossy().strip_prefix("manifest-")?.parse().ok())
        .max()
}

/// A deduplication of `k`, real-time, following `input/`, with a checkpoint and metrics on `port`.
fn dedup_pipeline(name: &str, trigger: &str, clock: &str, port: u16) -> String {
    format!(
        r#"name = "{name}"
mode = "real-time"
trigger = "{trigger}"
parallelism = 2
{clock}
[source]
type = "files"
path = "input"
follow = true
format = "json"
schema = "k STRING, ts TIMESTAMP, arrival TIMESTAMP"
[watermark]
column = "ts"
delay = "1 hour"
[query]
type = "deduplicate"
columns = ["k"]
[sink]
type = "files"
path = "output"
[checkpoint]
path = "ck"
[metrics]
listen = "127.0.0.1:{port}"
"#
    )
}

fn record(k: &str, second: u32) -> String {
    format!(r#"{{"k": "{k}", "ts": "2024-03-01T12:00:{second:02}Z", "arrival": "2024-03-01T12:00:{second:02}Z"}}"#)
}

fn row(k: &str, second: u32) -> String {
    format!(r#"{{"k": "{k}", "ts": "2024-03-01T12:00:{second:02}Z", "arrival": "2024-03-01T12:00:{second:02}Z"}}"#)
}

#[test]
fn an_idle_real_time_pipeline_closes_no_epoch_while_nothing_happens() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let ck = dir.join("ck/idle");
    let child = start(dir, &dedup_pipeline("idle", "0 seconds", "", free_port()));
    // Idle: nothing to read. (Before, each of these seconds closed hundreds of empty epochs.)
    std::thread::sleep(Duration::from_secs(2));
    // Input: its epoch is closed and committed.
    put(dir, "a.json", &[&record("a", 1), &record("b", 2), &record("a", 3)]);
    wait_until("the input's epoch to be committed", || !committed(&dir.join("output")).is_empty());
    // Idle again.
    std::thread::sleep(Duration::from_secs(2));
    sigterm(&child, 1, "0");
    finish(child);
    let rows: Vec<String> = committed(&dir.join("output")).into_iter().flat_map(|(_, l)| l).collect();
    assert_eq!(rows, vec![row("a", 1), row("b", 2)]);
    // The input's epoch, one or two closed by the rows the barrier itself flushed, and the stop's:
    // far fewer than 10 epochs when nothing else happened in 4 seconds.
    let epochs = newest_checkpoint(&ck).expect("a checkpoint") + 1;
    assert!(epochs <= 10, "{epochs} epochs for one input file in 4 seconds of idling");
}

#[test]
fn two_sigterms_a_millisecond_apart_are_one_stop_request_that_commits_the_last_epoch() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    // One epoch an hour: only the stop closes it.
    let port = free_port();
    let child = start(dir, &dedup_pipeline("twice", "1 hour", "", port));
    put(dir, "a.json", &[&record("a", 1), &record("b", 2), &record("a", 3)]);
    wait_until("the rows to be written", || rows_written(port) == 2);
    sigterm(&child, 2, "0.001");
    finish(child);
    assert_eq!(committed(&dir.join("output")), vec![(0, vec![row("a", 1), row("b", 2)])]);
}

#[test]
fn a_stop_under_the_replay_clock_leaves_an_unfinished_epoch_to_the_restart_which_writes_it_whole() {
    let tmp = tempfile::tempdir().unwrap();
    let dir: PathBuf = tmp.path().to_path_buf();
    let replay = "[clock]\ntype = \"replay\"\ncolumn = \"arrival\"";
    let port = free_port();
    let pipeline = dedup_pipeline("replay-stop", "10 seconds", replay, port);
    // Epoch 0 is [12:00:00, 12:00:10), epoch 1 [12:00:10, 12:00:20), ...
    let child = start(&dir, &pipeline);
    put(&dir, "1.json", &[&record("a", 1), &record("b", 12), &record("c", 14)]);
    // b and c are written to epoch 1, which the input has not finished.
    wait_until("epoch 1's rows", || committed(&dir.join("output")).len() == 1 && rows_written(port) == 3);
    sigterm(&child, 1, "0");
    finish(child);
    assert_eq!(committed(&dir.join("output")), vec![(0, vec![row("a", 1)])], "epoch 1 is not finished: not committed");
    // The restart reads epoch 1 again, and its end.
    let child = start(&dir, &pipeline);
    put(&dir, "2.json", &[&record("d", 18), &record("b", 19), &record("e", 25)]);
    wait_until("epoch 1's commit", || committed(&dir.join("output")).len() == 2);
    sigterm(&child, 1, "0");
    finish(child);
    assert_eq!(
        committed(&dir.join("output")),
        vec![(0, vec![row("a", 1)]), (1, vec![row("b", 12), row("c", 14), row("d", 18)])],
        "epoch 1 whole, as an uninterrupted run writes it"
    );
}
