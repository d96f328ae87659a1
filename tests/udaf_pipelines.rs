//! User aggregates (`Registry::register_udaf`) end to end: the geometric mean of
//! `examples/rolling_geomean/geomean.rs` in a SQL query (GROUP BY a tumbling `window(...)` and a
//! `session_window(...)`) and as rolling-window measures (bounded with retract, bounded without
//! it, lifetime), in both modes, with one partition actor and four, and across a restart from a
//! checkpoint. Expected values come from a brute-force reference written here from the rules
//! (the geometric mean of the positive amounts; SEMANTICS.md's windows, sessions and rolling
//! ranges), never from the engine.

mod common;
use common::json_lines;

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use eddy::{Job, Registry};
use serde_json::json;

#[path = "../examples/rolling_geomean/geomean.rs"]
mod geomean;

const S: i64 = 1_000_000;
/// 2024-03-01T12:00:00Z in µs.
const T0: i64 = 1_709_294_400 * S;

fn registry() -> Registry {
    let mut r = Registry::new();
    r.register_udaf("geomean", Arc::new(geomean::GeoMean)).unwrap();
    r.register_udaf("geomean_rescan", Arc::new(geomean::GeoMeanRescan)).unwrap();
    r
}

/// The reference: the geometric mean of the positive values, NULL when there is none.
fn geo(values: &[f64]) -> Option<f64> {
    let logs: Vec<f64> = values.iter().filter(|x| **x > 0.0).map(|x| x.ln()).collect();
    (!logs.is_empty()).then(|| (logs.iter().sum::<f64>() / logs.len() as f64).exp())
}

/// One reading: sensor, value, event time (µs), strictly increasing over the input.
struct Reading {
    sensor: String,
    value: f64,
    ts: i64,
}

/// Three sensors, values from -5 to 995 (some not positive), 1 to 40 s apart (gaps of more
/// than 30 s close sessions).
fn readings() -> Vec<Reading> {
    let mut seed = 11u64;
    let mut next = |n: u64| {
        seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
        (seed >> 33) % n
    };
    let mut ts = T0;
    (0..240)
        .map(|_| {
            let spread = if next(6) == 0 { 40 } else { 8 };
            ts += S * (1 + next(spread) as i64);
            let sensor = ["a", "b", "c"][next(3) as usize].to_string();
            Reading { sensor, value: next(1000) as f64 - 5.0 + 0.25, ts }
        })
        .collect()
}

fn iso(ts: i64) -> String {
    let secs = ts.div_euclid(S);
    assert_eq!(secs.div_euclid(86_400), 19_783, "the input stays on 2024-03-01");
    let rem = secs.rem_euclid(86_400);
    format!("2024-03-01T{:02}:{:02}:{:02}Z", rem / 3600, rem / 60 % 60, rem % 60)
}

/// `iso`'s inverse, for the frontiers the engine writes.
fn parse_iso(text: &str) -> i64 {
    let hms = text.strip_prefix("2024-03-01T").and_then(|t| t.strip_suffix('Z')).unwrap_or_else(|| panic!("{text}"));
    let p: Vec<i64> = hms.split(':').map(|x| x.parse().unwrap_or_else(|e| panic!("{text}: {e}"))).collect();
    T0 + ((p[0] - 12) * 3600 + p[1] * 60 + p[2]) * S
}

fn input_line(r: &Reading) -> String {
    json!({"sensor": r.sensor, "value": r.value, "ts": iso(r.ts)}).to_string()
}

/// Writes the input (files of 40 lines) and the pipeline into `dir`.
fn prepare(dir: &Path, pipeline: &str, mode: &str) {
    std::fs::create_dir_all(dir.join("input")).unwrap();
    for (i, chunk) in readings().chunks(40).enumerate() {
        let text: String = chunk.iter().map(|r| input_line(r) + "\n").collect();
        std::fs::write(dir.join(format!("input/{i:03}.json")), text).unwrap();
    }
    std::fs::write(dir.join("p.toml"), pipeline.replace("MODE", mode)).unwrap();
}

fn run_in(dir: &Path, parallelism: usize, stop_after: Option<u64>) {
    let set = [("parallelism".to_string(), parallelism.to_string())];
    let job = Job::from_file_with_in(dir.join("p.toml"), &set, &registry()).unwrap();
    match stop_after {
        Some(id) => job.stop_after(id).run().unwrap(),
        None => job.run().unwrap(),
    };
}

/// Asserts that `got` is `expected` within a relative 1e-9 (sums of logarithms in another
/// order, and retractions, round differently).
fn close(got: &serde_json::Value, expected: Option<f64>, what: &str) {
    match (got.as_f64(), expected) {
        (None, None) => assert!(got.is_null(), "{what}: {got}"),
        (Some(g), Some(e)) => assert!((g - e).abs() <= 1e-9 * e.abs(), "{what}: {g} != {e}"),
        _ => panic!("{what}: {got} != {expected:?}"),
    }
}

const WINDOWS: &str = r#"
name = "udaf-windows"
mode = "MODE"
[source]
type = "files"
path = "input"
format = "json"
schema = "sensor STRING, value DOUBLE, ts TIMESTAMP"
[watermark]
column = "ts"
delay = "0 seconds"
[query]
sql = """
SELECT sensor, window.start AS minute, geomean(value) AS g, count(*) AS n
FROM source GROUP BY sensor, window(ts, '1 minute')
"""
output_mode = "append"
[sink]
type = "files"
path = "out"
"#;

#[test]
fn a_udaf_in_a_sql_window_aggregate_is_the_geometric_mean_of_each_window() {
    let rs = readings();
    let last = rs.last().unwrap().ts;
    let mut groups: BTreeMap<(String, i64), Vec<f64>> = BTreeMap::new();
    for r in &rs {
        groups.entry((r.sensor.clone(), r.ts - r.ts.rem_euclid(60 * S))).or_default().push(r.value);
    }
    // append mode: windows whose end the watermark (latest event time) reached
    let expected: BTreeMap<(String, String), (Option<f64>, usize)> = groups
        .iter()
        .filter(|((_, m), _)| m + 60 * S <= last)
        .map(|((s, m), vs)| ((s.clone(), iso(*m)), (geo(vs), vs.len())))
        .collect();
    assert!(expected.len() > 20, "{} windows", expected.len());
    for mode in ["micro-batch", "real-time"] {
        for parallelism in [1, 4] {
            let tmp = tempfile::tempdir().unwrap();
            prepare(tmp.path(), WINDOWS, mode);
            run_in(tmp.path(), parallelism, None);
            let rows = json_lines(&tmp.path().join("out"));
            let mut seen = BTreeMap::new();
            for row in &rows {
                let key = (row["sensor"].as_str().unwrap().to_string(), row["minute"].as_str().unwrap().to_string());
                let (g, n) = expected.get(&key).unwrap_or_else(|| panic!("{mode} x{parallelism}: unexpected {row}"));
                close(&row["g"], *g, &format!("{mode} x{parallelism} {key:?}"));
                assert_eq!(row["n"].as_u64(), Some(*n as u64), "{mode} x{parallelism} {key:?}");
                assert!(seen.insert(key, ()).is_none(), "{mode} x{parallelism}: a window written twice");
            }
            assert_eq!(seen.len(), expected.len(), "{mode} x{parallelism}");
        }
    }
}

const SESSIONS: &str = r#"
name = "udaf-sessions"
mode = "MODE"
[source]
type = "files"
path = "input"
format = "json"
schema = "sensor STRING, value DOUBLE, ts TIMESTAMP"
[watermark]
column = "ts"
delay = "0 seconds"
[query]
sql = """
SELECT sensor, session_window.start AS started, geomean(value) AS g, count(*) AS n, session_window.end AS ended
FROM source GROUP BY sensor, session_window(ts, '30 seconds')
"""
output_mode = "append"
[sink]
type = "files"
path = "out"
"#;

#[test]
fn a_udaf_in_a_sql_session_window_merges_states_as_the_reference() {
    let rs = readings();
    let last = rs.last().unwrap().ts;
    let gap = 30 * S;
    // per sensor: sessions of readings at most `gap` apart; closed once W >= last + gap
    let mut by_sensor: BTreeMap<String, Vec<(i64, f64)>> = BTreeMap::new();
    for r in &rs {
        by_sensor.entry(r.sensor.clone()).or_default().push((r.ts, r.value));
    }
    let mut expected: BTreeMap<(String, String), (Option<f64>, usize, String)> = BTreeMap::new();
    for (sensor, items) in &by_sensor {
        let mut session: Vec<(i64, f64)> = Vec::new();
        let mut flush = |session: &mut Vec<(i64, f64)>| {
            if let (Some(first), Some(end)) = (session.first(), session.last().map(|l| l.0 + gap))
                && end <= last
            {
                let vs: Vec<f64> = session.iter().map(|x| x.1).collect();
                expected.insert((sensor.clone(), iso(first.0)), (geo(&vs), vs.len(), iso(end)));
            }
            session.clear();
        };
        for &(t, v) in items {
            // spans [t, t + gap) that overlap or touch merge (SEMANTICS.md)
            if session.last().is_some_and(|l| t > l.0 + gap) {
                flush(&mut session);
            }
            session.push((t, v));
        }
        flush(&mut session);
    }
    assert!(expected.len() > 10, "{} sessions", expected.len());
    for mode in ["micro-batch", "real-time"] {
        for parallelism in [1, 4] {
            let tmp = tempfile::tempdir().unwrap();
            prepare(tmp.path(), SESSIONS, mode);
            run_in(tmp.path(), parallelism, None);
            let rows = json_lines(&tmp.path().join("out"));
            for row in &rows {
                let key = (row["sensor"].as_str().unwrap().to_string(), row["started"].as_str().unwrap().to_string());
                let (g, n, end) =
                    expected.get(&key).unwrap_or_else(|| panic!("{mode} x{parallelism}: unexpected {row}"));
                let at = format!("{mode} x{parallelism} {key:?}");
                assert_eq!((row["n"].as_u64(), row["ended"].as_str()), (Some(*n as u64), Some(end.as_str())), "{at}");
                close(&row["g"], *g, &at);
            }
            assert_eq!(rows.len(), expected.len(), "{mode} x{parallelism}");
        }
    }
}

const ROLLING: &str = r#"
name = "udaf-rolling"
mode = "MODE"
[source]
type = "files"
path = "input"
format = "json"
schema = "sensor STRING, value DOUBLE, ts TIMESTAMP"
[clock]
type = "replay"
column = "ts"
[query]
type = "rolling_window"
partition_by = ["sensor"]
order_by = "ts"
frontier = { delay = "0 seconds" }
measures = [
  { agg = "geomean", column = "value", over = "30 seconds", alias = "g30" },
  { agg = "geomean_rescan", column = "value", over = "30 seconds", alias = "r30" },
  { agg = "GeoMean", column = "value" },
]
[sink]
type = "files"
path = "out"
[checkpoint]
path = "ckpt"
"#;

/// Checks the rolling rows in `dir`: the last row of each (sensor, frontier) holds the
/// geometric means of the sensor's readings with event time in `(F - 30 s, F]` (both bounded
/// measures) and `<= F` (lifetime); in real-time mode every reading's own frontier has a row
/// (micro-batch writes one row per key and batch).
fn check_rolling(dir: &Path, what: &str, real_time: bool) {
    let rs = readings();
    let rows = json_lines(&dir.join("out"));
    let mut last: BTreeMap<(String, i64), &serde_json::Value> = BTreeMap::new();
    for row in &rows {
        let key = (row["sensor"].as_str().unwrap().to_string(), parse_iso(row["__frontier"].as_str().unwrap()));
        last.insert(key, row);
    }
    let sensors: std::collections::BTreeSet<&str> = rs.iter().map(|r| r.sensor.as_str()).collect();
    assert!(sensors.iter().all(|s| last.keys().any(|(k, _)| k == s)), "{what}: a sensor without rows");
    for r in rs.iter().filter(|_| real_time) {
        assert!(last.contains_key(&(r.sensor.clone(), r.ts)), "{what}: no row for {} at {}", r.sensor, iso(r.ts));
    }
    for ((sensor, f), row) in &last {
        let of = |lo: i64| -> Vec<f64> {
            rs.iter().filter(|r| &r.sensor == sensor && r.ts > lo && r.ts <= *f).map(|r| r.value).collect()
        };
        let at = format!("{what} {sensor} at {}", iso(*f));
        close(&row["g30"], geo(&of(f - 30 * S)), &format!("{at} g30"));
        close(&row["r30"], geo(&of(f - 30 * S)), &format!("{at} r30"));
        close(&row["geomean(value)"], geo(&of(i64::MIN)), &format!("{at} lifetime"));
    }
}

#[test]
fn udafs_as_rolling_measures_with_and_without_retract_match_the_reference() {
    for mode in ["micro-batch", "real-time"] {
        for parallelism in [1, 4] {
            let tmp = tempfile::tempdir().unwrap();
            prepare(tmp.path(), ROLLING, mode);
            run_in(tmp.path(), parallelism, None);
            check_rolling(tmp.path(), &format!("{mode} x{parallelism}"), mode == "real-time");
        }
    }
}

#[test]
fn udaf_states_survive_a_restart_from_a_checkpoint() {
    for mode in ["micro-batch", "real-time"] {
        let tmp = tempfile::tempdir().unwrap();
        prepare(tmp.path(), ROLLING, mode);
        // stop after the second epoch / batch, then go on from its checkpoint at another
        // parallelism: the lifetime state (restored, not recomputed) must still be right
        run_in(tmp.path(), 4, Some(1));
        let first = json_lines(&tmp.path().join("out")).len();
        run_in(tmp.path(), 1, None);
        let all = json_lines(&tmp.path().join("out")).len();
        assert!(0 < first && first < all, "{mode}: the first run stopped midway ({first} of {all} rows)");
        check_rolling(tmp.path(), &format!("{mode} restarted"), mode == "real-time");
    }
}
