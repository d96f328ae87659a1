//! Memory of an idle `eddy run`: each partition actor is a thread, and with transparent huge
//! pages every thread's first allocations would fault in a 2 MiB page of the allocator's arena
//! (925 MB of RSS for one record at parallelism 1024). `eddy` turns them off for its process
//! (`PR_SET_THP_DISABLE`) before its actors start, as the kernel reports in `/proc/<pid>/status`.

#![cfg(target_os = "linux")]

use std::io::Write;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const STDIN_PIPELINE: &str = r#"
name = "memory"
mode = "real-time"
parallelism = 4
[source]
type = "stdin"
format = "json"
schema = "k STRING, ts TIMESTAMP, v DOUBLE"
[watermark]
column = "ts"
delay = "10 seconds"
[query]
type = "window_aggregate"
group_by = ["k"]
window = { type = "tumbling", column = "ts", size = "5 seconds" }
measures = [{ agg = "sum", column = "v" }]
[sink]
type = "stdout"
"#;

/// The `THP_enabled:` value of `/proc/<pid>/status`; `None` when the kernel does not report it.
fn thp_enabled(pid: u32) -> Option<String> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status.lines().find_map(|l| l.strip_prefix("THP_enabled:")).map(|v| v.trim().to_string())
}

#[test]
fn a_running_pipeline_has_transparent_huge_pages_off() {
    if thp_enabled(std::process::id()).is_none() {
        // Kernels before 6.1 have no such line: nothing to read here.
        let _ = writeln!(
            std::io::stderr(),
            "\n!!!!!!!! SKIPPED: this kernel does not report THP_enabled in /proc/<pid>/status !!!!!!!!\n"
        );
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("p.toml"), STDIN_PIPELINE).unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_eddy"))
        .args(["run", "p.toml", "--no-progress"])
        .current_dir(tmp.path())
        .env("EDDY_LOG", "warn")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(b"{\"k\": \"a\", \"ts\": \"2024-01-01T00:00:01Z\", \"v\": 1.5}\n").unwrap();
    // Set at the start of `main`: read until it shows (a read right after `exec` may come
    // first), for 10 s at most.
    let deadline = Instant::now() + Duration::from_secs(10);
    let seen = loop {
        let seen = thp_enabled(child.id());
        if seen.as_deref() == Some("0") || Instant::now() > deadline {
            break seen;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    drop(stdin);
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(seen.as_deref(), Some("0"), "transparent huge pages are on in eddy run");
}
