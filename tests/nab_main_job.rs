//! The main job (`examples/nab-monitoring.toml`) on all 145,768 real NAB measurements, checked
//! for several metrics against a brute-force reference written from SEMANTICS.md "Rolling
//! window" (not from the engine): with the replay clock on `event_time` and frontier delay 0,
//! each measurement arrives visible at F = its time and gives a row; it leaves the 1-hour range
//! at exactly F = time + 1 hour, giving a row when the clock passes that instant (before the
//! rows of records arriving at that instant); rows at one instant from the clock's advance are
//! one row.

use std::collections::BTreeMap;
use std::io::Read;
use std::path::PathBuf;
use std::process::Command;

const HOUR_US: i64 = 3_600_000_000;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn parse_ts(s: &str) -> i64 {
    eddy_engine::time::parse_timestamp(s).expect("timestamp").0
}

#[derive(Debug, Clone)]
struct Expected {
    frontier: i64,
    avg: Option<f64>,
    max: Option<f64>,
    stddev: Option<f64>,
    count: i64,
}

/// Rows for one metric: `all` is the whole input (event time, metric, value) in input order.
fn reference(all: &[(i64, String, f64)], metric: &str, until: i64) -> Vec<Expected> {
    let mut arrived: Vec<(i64, f64)> = Vec::new();
    let mut rows = Vec::new();
    let mut clock = i64::MIN;
    let row_at = |arrived: &[(i64, f64)], x: i64, include_at_x: bool| -> Expected {
        // `arrived` is in event-time order (the input is sorted by event time).
        let lo = arrived.partition_point(|(t, _)| *t <= x - HOUR_US);
        let hi = arrived.partition_point(|(t, _)| *t < x || (include_at_x && *t == x));
        let vals: Vec<f64> = arrived[lo..hi.max(lo)].iter().map(|(_, v)| *v).collect();
        let n = vals.len() as f64;
        let avg = (!vals.is_empty()).then(|| vals.iter().sum::<f64>() / n);
        let max = vals.iter().copied().reduce(f64::max);
        let stddev = (vals.len() >= 2).then(|| {
            let m = avg.unwrap_or(0.0);
            (vals.iter().map(|v| (v - m) * (v - m)).sum::<f64>() / (n - 1.0)).sqrt()
        });
        Expected { frontier: x, avg, max, stddev, count: arrived.len() as i64 }
    };
    let advance = |arrived: &[(i64, f64)], from: i64, to: i64, rows: &mut Vec<Expected>| {
        // Expiry instants in (from, to], in order; one row per instant.
        let lo = arrived.partition_point(|(t, _)| t.saturating_add(HOUR_US) <= from);
        let hi = arrived.partition_point(|(t, _)| t.saturating_add(HOUR_US) <= to);
        let mut due: Vec<i64> = arrived[lo..hi].iter().map(|(t, _)| t + HOUR_US).collect();
        due.sort_unstable();
        due.dedup();
        for x in due {
            rows.push(row_at(arrived, x, false));
        }
    };
    for (t, m, v) in all {
        if *t > clock {
            advance(&arrived, clock, *t, &mut rows);
            clock = *t;
        }
        if m == metric {
            arrived.push((*t, *v));
            rows.push(row_at(&arrived, *t, true));
        }
    }
    advance(&arrived, clock, until, &mut rows);
    rows
}

fn close(a: Option<f64>, b: Option<f64>) -> bool {
    match (a, b) {
        (None, None) => true,
        (Some(x), Some(y)) => (x - y).abs() <= 1e-6 * x.abs().max(y.abs()).max(1.0),
        _ => false,
    }
}

#[test]
fn main_job_matches_the_brute_force_reference_on_several_metrics() {
    let out = tempfile::tempdir().unwrap();
    let status = Command::new(env!("CARGO_BIN_EXE_eddy"))
        .arg("run")
        .arg(root().join("examples/nab-monitoring.toml"))
        .args(["--no-progress", "--set"])
        .arg(format!("sink.path={}", out.path().join("rows").display()))
        .arg("--set")
        .arg(format!("dead_letter.path={}", out.path().join("dead").display()))
        .env("EDDY_LOG", "warn")
        .status()
        .unwrap();
    assert!(status.success(), "eddy run failed: {status}");

    // The input, in order.
    let mut gz = String::new();
    flate2::read::MultiGzDecoder::new(std::fs::File::open(root().join("../shared/data/nab/events.jsonl.gz")).unwrap())
        .read_to_string(&mut gz)
        .unwrap();
    let all: Vec<(i64, String, f64)> = gz
        .lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            (
                parse_ts(v["event_time"].as_str().unwrap()),
                v["metric"].as_str().unwrap().to_string(),
                v["value"].as_f64().unwrap(),
            )
        })
        .collect();
    assert_eq!(all.len(), 145_768);

    // The engine's rows, per metric, in file order (files are epochs, in order).
    let mut files: Vec<PathBuf> =
        std::fs::read_dir(out.path().join("rows")).unwrap().flatten().map(|e| e.path()).collect();
    files.sort();
    let mut actual: BTreeMap<String, Vec<serde_json::Value>> = BTreeMap::new();
    for f in files {
        for line in std::fs::read_to_string(f).unwrap().lines() {
            let v: serde_json::Value = serde_json::from_str(line).unwrap();
            actual.entry(v["metric"].as_str().unwrap().to_string()).or_default().push(v);
        }
    }
    assert_eq!(actual.len(), 29, "29 metrics");
    let dead = std::fs::read_dir(out.path().join("dead")).map(|d| d.count()).unwrap_or(0);
    assert_eq!(dead, 0, "no dead letters expected on the real data");

    let until = parse_ts("2015-09-18T00:00:00Z");
    for metric in ["ec2_cpu_utilization_24ae8d", "machine_temperature_system_failure", "TravelTime_451", "nyc_taxi"] {
        let expected = reference(&all, metric, until);
        let got = &actual[metric];
        assert_eq!(got.len(), expected.len(), "{metric}: row count");
        for (i, (g, e)) in got.iter().zip(&expected).enumerate() {
            let f = parse_ts(g["__frontier"].as_str().unwrap());
            let ok = f == e.frontier
                && close(g["avg_1h"].as_f64(), e.avg)
                && close(g["max_1h"].as_f64(), e.max)
                && close(g["stddev_1h"].as_f64(), e.stddev)
                && g["measurements"].as_i64() == Some(e.count);
            assert!(ok, "{metric} row {i}: engine {g} vs reference {e:?}");
        }
    }
}
