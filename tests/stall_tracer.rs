//! `eddy run --trace-stalls` (issue 28): every record's service time is traced and the slowest
//! items are logged with their causes; `[metrics]` exports the tracer's series.

use std::process::Command;

fn pipeline(dir: &std::path::Path, metrics: &str) -> std::path::PathBuf {
    let path = dir.join("p.toml");
    let text = format!(
        "name = \"stalls\"\nmode = \"real-time\"\nparallelism = 1\ntrigger = \"1 second\"\n{metrics}\n\
         [clock]\ntype = \"replay\"\ncolumn = \"date_time\"\n\n\
         [source]\ntype = \"nexmark\"\ntable = \"bid\"\nevents = 5000\nseed = 7\n\n\
         [query]\ntype = \"rolling_window\"\npartition_by = [\"bidder\"]\norder_by = \"date_time\"\n\
         measures = [{{ agg = \"sum\", column = \"price\", over = \"10 seconds\" }}]\n\n\
         [sink]\ntype = \"files\"\npath = \"{}\"\n",
        dir.join("out").display()
    );
    std::fs::write(&path, text).expect("write pipeline");
    path
}

/// The value of `key=` in the log line holding `marker`.
fn field(log: &str, marker: &str, key: &str) -> Option<u64> {
    let line = log.lines().find(|l| l.contains(marker))?;
    let rest = &line[line.find(&format!(" {key}="))? + key.len() + 2..];
    rest.split(|c: char| !c.is_ascii_digit()).next()?.parse().ok()
}

#[test]
fn every_record_is_traced_and_the_slowest_items_are_logged_with_their_causes() {
    let dir = tempfile::tempdir().expect("tempdir");
    let p = pipeline(dir.path(), "");
    // Threshold 0: every item is slow, so the ranking is full and every kind of item shows.
    let out = Command::new(env!("CARGO_BIN_EXE_eddy"))
        .args(["run", "--no-progress", "--trace-stalls", "0"])
        .arg(&p)
        .output()
        .expect("run eddy");
    let log = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{log}");
    let records = field(&log, "eddy: done", "records").expect("done line");
    assert!(records > 4000, "{log}");
    assert_eq!(field(&log, "record service time", "records"), Some(records), "every record traced:\n{log}");
    assert!(field(&log, "record service time", "over_threshold").is_some_and(|n| n >= records), "{log}");
    let ranked: Vec<&str> = log.lines().filter(|l| l.contains(" slow") && l.contains("rank=")).collect();
    assert!(ranked.len() >= 10, "the slowest items are logged:\n{log}");
    assert!(ranked.iter().all(|l| l.contains("causes=") && l.contains("service_us=")), "{log}");
    // The epoch barriers are traced as work of their own.
    assert!(log.contains("kind=\"barrier\"") || log.contains("causes=sink_write"), "{log}");
}

#[test]
fn without_the_flag_nothing_is_traced() {
    let dir = tempfile::tempdir().expect("tempdir");
    let p = pipeline(dir.path(), "");
    let out = Command::new(env!("CARGO_BIN_EXE_eddy")).args(["run", "--no-progress"]).arg(&p).output().expect("run");
    let log = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{log}");
    assert!(!log.contains("record service time") && !log.contains("rank="), "{log}");
}

#[test]
fn a_threshold_that_is_not_a_number_exits_2() {
    let dir = tempfile::tempdir().expect("tempdir");
    let p = pipeline(dir.path(), "");
    let out =
        Command::new(env!("CARGO_BIN_EXE_eddy")).args(["run", "--trace-stalls", "fast"]).arg(&p).output().expect("run");
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--trace-stalls"));
}
