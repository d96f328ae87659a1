//! `current_timestamp()` / `now()` (SQL.md "time": the engine's processing time, the replay
//! clock's under a replay clock), end to end through the `eddy` binary.
//!
//! Spark returns the wall clock, so the expected rows cannot come from the oracle: under the
//! replay clock they come from a brute-force reference written here from PIPELINE.md "Replay
//! clock" (real-time: the clock moves to each record's column value, never back; micro-batch:
//! a batch, one file here, is processed at the largest column value in it, or the batch
//! before's when none is larger) and SEMANTICS.md (a query without aggregation emits each kept
//! record once; an update-mode aggregation emits a key's new row for each record in real-time
//! mode, once per batch in micro-batch mode). It never reads the engine's output to decide.

mod common;
use common::json_lines;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use serde_json::{Value, json};

const SECOND: i64 = 1_000_000;
/// 2024-01-15 10:00:00 UTC, µs.
const T0: i64 = 1_705_312_800 * SECOND;

/// One input record: key, value, arrival (the replay clock's column) and event time, in µs.
#[derive(Clone, Copy)]
struct Rec {
    k: &'static str,
    v: i64,
    arrival: i64,
    ts: i64,
}

/// Three files of 40 records: arrivals mostly rising, some a little earlier than the one
/// before (the clock then stays), event times up to 30 s before arrival.
fn input() -> Vec<Vec<Rec>> {
    let keys = ["a", "b", "c", "d"];
    let mut seed: u64 = 0x2545_f491_4f6c_dd1d;
    let mut next = move |n: u64| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed % n
    };
    let mut arrival = T0;
    (0..3)
        .map(|_| {
            (0..40)
                .map(|i| {
                    arrival += next(3_000) as i64 * 1_000;
                    let early = if i % 7 == 3 { 5 * SECOND } else { 0 };
                    let at = arrival - early;
                    Rec {
                        k: keys[next(4) as usize],
                        v: next(100) as i64,
                        arrival: at,
                        ts: at - next(30_000) as i64 * 1_000,
                    }
                })
                .collect()
        })
        .collect()
}

/// `YYYY-MM-DDTHH:MM:SS[.f]Z` as SEMANTICS.md "Output timestamps" writes a TIMESTAMP (the
/// fraction only when not zero, trailing zeros trimmed).
fn iso(us: i64) -> String {
    let secs = us.div_euclid(SECOND);
    let frac = us.rem_euclid(SECOND);
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    // civil from days (Howard Hinnant's algorithm)
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    let base = format!("{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}", rem / 3600, rem % 3600 / 60, rem % 60);
    match frac {
        0 => format!("{base}Z"),
        f => format!("{base}.{}Z", format!("{f:06}").trim_end_matches('0')),
    }
}

fn write_input(dir: &Path, files: &[Vec<Rec>]) {
    std::fs::create_dir_all(dir.join("input")).unwrap();
    for (i, f) in files.iter().enumerate() {
        let lines: String = f
            .iter()
            .map(|r| {
                format!(
                    "{}\n",
                    json!({"k": r.k, "v": r.v, "arrival": iso(r.arrival).replace('T', " ").replace('Z', ""), "ts": iso(r.ts)})
                )
            })
            .collect();
        std::fs::write(dir.join(format!("input/{i:03}.json")), lines).unwrap();
    }
}

fn pipeline(mode: &str, parallelism: usize, clock: &str, query: &str, sink_select: &str) -> String {
    format!(
        r#"
name = "processing-time"
mode = "{mode}"
parallelism = {parallelism}
[source]
type = "files"
path = "input"
format = "json"
schema = "k STRING, v BIGINT, arrival TIMESTAMP, ts TIMESTAMP"
{clock}
[query]
{query}
[sink]
type = "files"
path = "out"
{sink_select}
"#
    )
}

const REPLAY: &str = "[clock]\ntype = \"replay\"\ncolumn = \"arrival\"";

fn eddy(dir: &Path, args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_eddy")).args(args).current_dir(dir).env("EDDY_LOG", "error").output().unwrap()
}

fn run(pipeline: &str, files: &[Vec<Rec>]) -> Vec<Value> {
    let tmp = tempfile::tempdir().unwrap();
    write_input(tmp.path(), files);
    std::fs::write(tmp.path().join("p.toml"), pipeline).unwrap();
    let out = eddy(tmp.path(), &["run", "p.toml", "--no-progress"]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    sorted(json_lines(&tmp.path().join("out")))
}

fn sorted(mut rows: Vec<Value>) -> Vec<Value> {
    rows.sort_by_key(|r| r.to_string());
    rows
}

/// The processing time of each record, file by file: real-time, the clock as that record
/// moves it; micro-batch, its batch's.
fn processing_times(files: &[Vec<Rec>], real_time: bool) -> Vec<Vec<i64>> {
    let mut clock = i64::MIN;
    files
        .iter()
        .map(|f| {
            if real_time {
                f.iter()
                    .map(|r| {
                        clock = clock.max(r.arrival);
                        clock
                    })
                    .collect()
            } else {
                clock = f.iter().map(|r| r.arrival).fold(clock, i64::max);
                vec![clock; f.len()]
            }
        })
        .collect()
}

const FILTERED: &str = r#"sql = """
SELECT k, v, current_timestamp() AS seen_at
FROM source
WHERE ts > current_timestamp() - INTERVAL 15 SECONDS AND v >= 0""""#;
const FILTERED_SINK: &str = r#"select = ["k", "v", "seen_at", "unix_micros(now()) - unix_micros(seen_at) AS lag_us"]"#;

/// The rows of [`FILTERED`] with [`FILTERED_SINK`]: each record whose event time is within 15 s
/// before its processing time, with that time; the sink's `now()` is the same instant.
fn filtered_expected(files: &[Vec<Rec>], real_time: bool) -> Vec<Value> {
    let times = processing_times(files, real_time);
    let mut expected = Vec::new();
    for (file, times) in files.iter().zip(&times) {
        for (r, now) in file.iter().zip(times) {
            if r.ts > now - 15 * SECOND {
                expected.push(json!({"k": r.k, "v": r.v, "seen_at": iso(*now), "lag_us": 0}));
            }
        }
    }
    sorted(expected)
}

#[test]
fn under_the_replay_clock_where_select_and_sink_select_read_the_records_processing_time() {
    let files = input();
    for (mode, real_time) in [("real-time", true), ("micro-batch", false)] {
        let expected = filtered_expected(&files, real_time);
        assert!(expected.len() >= 5 && expected.len() < 110, "{mode}: a filter that keeps some: {}", expected.len());
        for parallelism in [1, 4] {
            let got = run(&pipeline(mode, parallelism, REPLAY, FILTERED, FILTERED_SINK), &files);
            assert_eq!(got, expected, "{mode} x{parallelism}");
        }
    }
}

#[test]
fn under_the_replay_clock_an_update_aggregation_stamps_each_row_with_when_it_was_made() {
    let files = input();
    let query = "sql = \"SELECT k, count(*) AS n, sum(v) AS total, current_timestamp() AS at FROM source GROUP BY k\"\noutput_mode = \"update\"";
    let sink = r#"select = ["k", "n", "total", "at", "date_format(now(), 'HH:mm') AS minute"]"#;
    for (mode, real_time) in [("real-time", true), ("micro-batch", false)] {
        let times = processing_times(&files, real_time);
        let mut counts: BTreeMap<&str, (i64, i64)> = BTreeMap::new();
        let mut expected = Vec::new();
        for (f, file) in files.iter().enumerate() {
            let mut changed: BTreeMap<&str, i64> = BTreeMap::new();
            for (r, now) in file.iter().zip(&times[f]) {
                let c = counts.entry(r.k).or_default();
                c.0 += 1;
                c.1 += r.v;
                if real_time {
                    expected.push((r.k, *c, *now));
                } else {
                    changed.insert(r.k, *now);
                }
            }
            expected.extend(changed.into_iter().map(|(k, now)| (k, counts[k], now)));
        }
        let expected = sorted(
            expected
                .into_iter()
                .map(|(k, (n, total), now)| {
                    let minute = &iso(now)[11..16];
                    json!({"k": k, "n": n, "total": total, "at": iso(now), "minute": minute})
                })
                .collect(),
        );
        for parallelism in [1, 4] {
            let got = run(&pipeline(mode, parallelism, REPLAY, query, sink), &files);
            assert_eq!(got, expected, "{mode} x{parallelism}");
        }
    }
}

#[test]
fn under_the_system_clock_it_is_the_wall_clock_in_the_source_filter_and_the_output() {
    let files = input();
    // every event time is in January 2024, long before the run: the filter keeps them all
    let query = "sql = \"SELECT k, v, now() AS seen_at FROM source\"";
    let sink = r#"select = ["k", "v", "unix_micros(seen_at) AS seen_us", "unix_micros(current_timestamp()) - unix_micros(seen_at) AS lag_us"]"#;
    for mode in ["real-time", "micro-batch"] {
        let p = pipeline(mode, 2, "", query, sink)
            .replace("[source]\n", "[source]\nfilter = \"ts < current_timestamp() - INTERVAL 1 DAY AND v < 90\"\n");
        let before = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_micros() as i64;
        let got = run(&p, &files);
        let after = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_micros() as i64;
        let kept = files.iter().flatten().filter(|r| r.v < 90).count();
        assert_eq!(got.len(), kept, "{mode}");
        for row in &got {
            let seen = row["seen_us"].as_i64().unwrap();
            assert!((before..=after).contains(&seen), "{mode}: {row} not within {before}..={after}");
            let lag = row["lag_us"].as_i64().unwrap();
            match mode {
                // a micro-batch's rows all have the batch's processing time
                "micro-batch" => assert_eq!(lag, 0, "{row}"),
                // real-time: the sink's select reads the clock when the row is written, the
                // query's select list when the record was processed, never later
                _ => assert!((0..after - before).contains(&lag), "{row}"),
            }
        }
    }
    // a filter against the wall clock that no record of 2024 passes
    let p = pipeline("micro-batch", 1, "", query, "")
        .replace("[source]\n", "[source]\nfilter = \"ts > now() - INTERVAL 1 HOUR\"\n");
    assert_eq!(run(&p, &files), Vec::<Value>::new());
}

#[test]
fn under_the_replay_clock_current_timestamp_before_the_clock_moves_is_refused_with_its_position() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::create_dir(tmp.path().join("input")).unwrap();
    let cases = [
        (
            pipeline("real-time", 1, REPLAY, "sql = \"SELECT k FROM source\"", "")
                .replace("[source]\n", "[source]\nfilter = \"ts > now() - INTERVAL 1 HOUR\"\n"),
            vec!["source.filter", "at 1:6", "replay clock", "the sink's select"],
        ),
        (
            pipeline("micro-batch", 1, REPLAY, "sql = \"SELECT k FROM source\"", "").replace(
                "[source]\n",
                "[source]\nselect = [\"k\", \"ts\", \"arrival\", \"hour(current_timestamp()) AS h\"]\n",
            ),
            vec!["source.select[3]", "at 1:6", "replay clock"],
        ),
        (
            pipeline(
                "micro-batch",
                1,
                REPLAY,
                "sql = \"\"\"\nSELECT date_trunc('HOUR', current_timestamp()) AS h, count(*) AS n\nFROM source GROUP BY 1\"\"\"\noutput_mode = \"update\"",
                "",
            ),
            vec!["query.sql", "at 1:27", "replay clock"],
        ),
    ];
    for (p, words) in cases {
        std::fs::write(tmp.path().join("p.toml"), &p).unwrap();
        let out = eddy(tmp.path(), &["validate", "p.toml"]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{p}\n{err}");
        for w in words {
            assert!(err.contains(w), "{w:?} not in: {err}");
        }
    }
    // the same query's WHERE reads it after the clock has moved: accepted
    let ok = pipeline("micro-batch", 1, REPLAY, FILTERED, FILTERED_SINK);
    std::fs::write(tmp.path().join("p.toml"), ok).unwrap();
    let out = eddy(tmp.path(), &["validate", "p.toml"]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
}

#[test]
fn stopped_after_a_checkpoint_and_restarted_at_another_parallelism_the_rows_are_the_same() {
    let files = input();
    for (mode, real_time) in [("micro-batch", false), ("real-time", true)] {
        let expected = filtered_expected(&files, real_time);
        for stop_after in [0, 1] {
            let tmp = tempfile::tempdir().unwrap();
            write_input(tmp.path(), &files);
            // real-time: an epoch every 20 s of replay time
            let p = pipeline(mode, 1, REPLAY, FILTERED, FILTERED_SINK)
                .replace("[source]\n", "trigger = \"20 seconds\"\n[checkpoint]\npath = \"ck\"\n[source]\n");
            std::fs::write(tmp.path().join("p.toml"), p).unwrap();
            let first = Command::new(env!("CARGO_BIN_EXE_eddy"))
                .args(["run", "p.toml", "--no-progress"])
                .current_dir(tmp.path())
                .env("EDDY_LOG", "error")
                .env("EDDY_TEST_STOP_AFTER", stop_after.to_string())
                .output()
                .unwrap();
            assert_eq!(first.status.code(), Some(0), "{}", String::from_utf8_lossy(&first.stderr));
            let part = json_lines(&tmp.path().join("out")).len();
            assert!(part < expected.len(), "{mode}: the first run stopped before the end ({part} rows)");
            let again = eddy(tmp.path(), &["run", "p.toml", "--no-progress", "--set", "parallelism=4"]);
            assert_eq!(again.status.code(), Some(0), "{}", String::from_utf8_lossy(&again.stderr));
            assert_eq!(sorted(json_lines(&tmp.path().join("out"))), expected, "{mode}, stopped after {stop_after}");
        }
    }
}

/// Window start (µs) of `ts` in tumbling windows of `size` µs.
fn window_start(ts: i64, size: i64) -> i64 {
    ts.div_euclid(size) * size
}

/// The rows of a real-time append count per 10-second window and key, watermark 5 s, as
/// (window start, key, count, instant made). SEMANTICS.md: real-time append emits a window's
/// row when W >= its end; a record whose window end <= W (as W stood when it arrived) is late.
/// W = the largest event time so far - 5 s, moved by each record once it counts; the row is
/// made when W moved, at the clock of the record that moved it, whichever partition actor
/// holds the window.
fn append_windows(files: &[Vec<Rec>]) -> Vec<(i64, &'static str, i64, i64)> {
    let size = 10 * SECOND;
    let delay = 5 * SECOND;
    let mut clock = i64::MIN;
    let mut max_event = i64::MIN;
    let mut open: BTreeMap<(i64, &str), i64> = BTreeMap::new();
    let mut rows = Vec::new();
    for r in files.iter().flatten() {
        clock = clock.max(r.arrival);
        let w_before = max_event.saturating_sub(delay);
        let start = window_start(r.ts, size);
        if max_event == i64::MIN || start + size > w_before {
            *open.entry((start, r.k)).or_default() += 1;
        }
        max_event = max_event.max(r.ts);
        let w = max_event - delay;
        let due: Vec<(i64, &str)> = open.keys().filter(|(s, _)| s + size <= w).copied().collect();
        for key in due {
            let n = open.remove(&key).unwrap();
            rows.push((key.0, key.1, n, clock));
        }
    }
    rows
}

const WATERMARK: &str = "[watermark]\ncolumn = \"ts\"\ndelay = \"5 seconds\"\n[query]";

#[test]
fn real_time_rows_the_watermark_finalises_carry_the_instant_it_moved_at_any_parallelism() {
    let files = input();
    let expected = sorted(
        append_windows(&files)
            .into_iter()
            .map(|(start, k, n, at)| json!({"start": iso(start), "k": k, "n": n, "at": iso(at)}))
            .collect(),
    );
    assert!(expected.len() > 20, "{}", expected.len());
    let query = r#"sql = "SELECT window(ts, '10 seconds') AS w, k, count(*) AS n, current_timestamp() AS at FROM source GROUP BY 1, 2"
output_mode = "append""#;
    let sink = r#"select = ["w.start AS start", "k", "n", "at"]"#;
    for parallelism in [1, 2, 4] {
        let p = pipeline("real-time", parallelism, REPLAY, query, sink).replace("[query]", WATERMARK);
        assert_eq!(run(&p, &files), expected, "x{parallelism}");
    }
}

#[test]
fn after_a_real_time_exchange_rows_carry_the_instant_the_watermark_moved() {
    // Nexmark q5's shape: counts per window and key, then per window (keyed otherwise: at
    // parallelism > 1 the inner rows cross the exchange). The outer window closes at the same
    // watermark move as its inner windows, so at the same instant.
    let files = input();
    let mut outer: BTreeMap<i64, (i64, i64, i64, i64)> = BTreeMap::new();
    for (start, _, n, at) in append_windows(&files) {
        let o = outer.entry(start).or_insert((0, 0, 0, at));
        *o = (o.0.max(n), o.1 + 1, o.2 + n, at);
    }
    let expected = sorted(
        outer
            .into_iter()
            .map(|(start, (m, keys, total, at))| {
                json!({"start": iso(start), "m": m, "keys": keys, "total": total, "at": iso(at)})
            })
            .collect(),
    );
    let query = r#"sql = """
SELECT window, max(n) AS m, count(*) AS keys, sum(n) AS total, current_timestamp() AS at
FROM (SELECT window(ts, '10 seconds') AS window, k, count(*) AS n FROM source GROUP BY 1, 2)
GROUP BY window"""
output_mode = "append""#;
    let sink = r#"select = ["window.start AS start", "m", "keys", "total", "at"]"#;
    for parallelism in [1, 2, 4] {
        let p = pipeline("real-time", parallelism, REPLAY, query, sink).replace("[query]", WATERMARK);
        assert_eq!(run(&p, &files), expected, "x{parallelism}");
    }
}

#[test]
fn a_rolling_windows_timer_rows_are_made_at_the_timers_instant() {
    // a record leaving the 20-second range makes a row whose frontier is exactly when it left
    // (SEMANTICS.md "Rolling window"); frontier = processing time - delay
    let files = input();
    let query = r#"type = "rolling_window"
partition_by = ["k"]
order_by = "ts"
frontier = { delay = "3 seconds" }
measures = [{ agg = "count", alias = "n", over = "20 seconds" }]"#;
    let sink =
        r#"select = ["k", "__frontier", "n", "current_timestamp() - INTERVAL 3 SECONDS = __frontier AS at_frontier"]"#;
    let mut outputs = Vec::new();
    for parallelism in [1, 4] {
        let rows = run(&pipeline("real-time", parallelism, REPLAY, query, sink), &files);
        assert!(rows.len() > 120, "x{parallelism}: {} rows", rows.len());
        // rows a timer made: the count fell (a record left its range) or the key emptied
        assert!(rows.iter().any(|r| r["n"] == json!(0)), "x{parallelism}: no key emptied");
        for r in &rows {
            assert_eq!(r["at_frontier"], json!(true), "x{parallelism}: {r}");
        }
        outputs.push(rows);
    }
    assert_eq!(outputs[0], outputs[1]);
}

#[test]
fn a_micro_batch_over_two_sources_has_one_processing_time() {
    let files = input();
    let tmp = tempfile::tempdir().unwrap();
    for (name, part) in [("a", &files[..2]), ("b", &files[2..])] {
        let dir = tmp.path().join(name);
        write_input(&dir, part);
    }
    let p = r#"
name = "two-sources"
mode = "micro-batch"
parallelism = 2
[[source]]
name = "a"
type = "files"
path = "a/input"
max_files_per_trigger = 2
format = "json"
schema = "k STRING, v BIGINT, arrival TIMESTAMP, ts TIMESTAMP"
select = ["k", "v", "current_timestamp() AS pt"]
[[source]]
name = "b"
type = "files"
path = "b/input"
format = "json"
schema = "k STRING, v BIGINT, arrival TIMESTAMP, ts TIMESTAMP"
select = ["k", "v", "now() AS pt"]
[query]
sql = "SELECT k, v, pt, current_timestamp() AS q FROM (SELECT * FROM a UNION ALL SELECT * FROM b) u"
[sink]
type = "files"
path = "out"
select = ["k", "pt", "q", "now() AS s"]
"#;
    std::fs::write(tmp.path().join("p.toml"), p).unwrap();
    let out = eddy(tmp.path(), &["run", "p.toml", "--no-progress"]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let mut rows = 0;
    for f in std::fs::read_dir(tmp.path().join("out")).unwrap().flatten() {
        let lines: Vec<Value> =
            std::fs::read_to_string(f.path()).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
        rows += lines.len();
        // every row of the batch, from either source, at one instant, the query's and the sink's
        let first = &lines[0]["pt"];
        for r in &lines {
            assert!(r["pt"] == *first && r["q"] == *first && r["s"] == *first, "{f:?}: {r} vs {first}");
        }
    }
    assert_eq!(rows, 120);
}
