//! The page-view sessions example (`examples/sessions_per_user.rs`, a stateful processor with an
//! event-time timer) run through the `eddy` library over its own pipeline file and data, under the
//! replay clock, in both modes and at parallelism 1 and 2, against session rows written by hand
//! from the rule "a session ends after 30 minutes of event time without a view".

#[path = "../examples/sessions_per_user.rs"]
mod sessions_per_user;

use std::path::Path;

/// `(user_id, views, first_ts, last_ts)` of every session the example's data closes, worked out
/// by hand from `examples/data/page-views` (times on 2026-03-01, UTC).
///
/// - alice: 09:00 09:05 09:12 09:16 09:20 | 40 min | 10:00 10:10 10:25 (29 min) 10:54 11:02 |
///   31 min | 11:33 11:40, closed once the watermark (12:30 - 2 min) passes 11:40 + 30 min.
/// - bob: 09:03 | 37 min | 09:40 09:45 (29 min) 10:14 10:20 10:43, closed by the watermark
///   12:28 (from carol's 12:30) passing 11:13.
/// - carol: 09:10 09:30 (29 min) 09:59 | 32 min | 10:31 10:33 10:35 | 12:30: that last session
///   stays open (nothing moves the watermark past 13:00), so it is not emitted.
const EXPECTED: [(&str, i64, &str, &str); 7] = [
    ("alice", 2, "2026-03-01T11:33:00Z", "2026-03-01T11:40:00Z"),
    ("alice", 5, "2026-03-01T09:00:00Z", "2026-03-01T09:20:00Z"),
    ("alice", 5, "2026-03-01T10:00:00Z", "2026-03-01T11:02:00Z"),
    ("bob", 1, "2026-03-01T09:03:00Z", "2026-03-01T09:03:00Z"),
    ("bob", 5, "2026-03-01T09:40:00Z", "2026-03-01T10:43:00Z"),
    ("carol", 3, "2026-03-01T09:10:00Z", "2026-03-01T09:59:00Z"),
    ("carol", 3, "2026-03-01T10:31:00Z", "2026-03-01T10:35:00Z"),
];

/// Runs the example's pipeline file with `mode` and `parallelism`, writing to a fresh folder, and
/// returns its rows as `(user_id, views, first_ts, last_ts)`, sorted.
fn run_sessions(mode: &str, parallelism: usize) -> Vec<(String, i64, String, String)> {
    let out = tempfile::tempdir().expect("a temporary folder");
    let pipeline = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/sessions-per-user.toml");
    let overrides = [
        ("mode".to_string(), mode.to_string()),
        ("parallelism".to_string(), parallelism.to_string()),
        ("sink.path".to_string(), out.path().display().to_string()),
    ];
    let summary = eddy::Job::from_file_with_in(&pipeline, &overrides, &sessions_per_user::registry())
        .and_then(|job| job.run())
        .unwrap_or_else(|e| panic!("{mode} at parallelism {parallelism}: {e}"));
    assert_eq!(summary.records, 25, "{mode}: every page view is read");
    assert_eq!(summary.late, 0, "{mode}: the data is in event-time order, nothing is late");
    let mut rows = Vec::new();
    let mut files: Vec<_> =
        std::fs::read_dir(out.path()).expect("the sink's folder").map(|e| e.unwrap().path()).collect();
    files.sort();
    for file in files {
        for line in std::fs::read_to_string(&file).expect("a batch file").lines() {
            let row: serde_json::Value = serde_json::from_str(line).expect("a JSON row");
            let text = |column: &str| row[column].as_str().unwrap_or_else(|| panic!("{column} in {line}")).to_string();
            let views = row["views"].as_i64().unwrap_or_else(|| panic!("views in {line}"));
            rows.push((text("user_id"), views, text("first_ts"), text("last_ts")));
        }
    }
    rows.sort();
    rows
}

fn expected() -> Vec<(String, i64, String, String)> {
    let mut rows: Vec<_> = EXPECTED
        .iter()
        .map(|&(user, views, first, last)| (user.to_string(), views, first.to_string(), last.to_string()))
        .collect();
    rows.sort();
    rows
}

#[test]
fn sessions_close_after_thirty_minutes_of_event_time_in_micro_batch_mode() {
    for parallelism in [1, 2] {
        assert_eq!(run_sessions("micro-batch", parallelism), expected(), "parallelism {parallelism}");
    }
}

#[test]
fn sessions_close_after_thirty_minutes_of_event_time_in_real_time_mode() {
    for parallelism in [1, 2] {
        assert_eq!(run_sessions("real-time", parallelism), expected(), "parallelism {parallelism}");
    }
}
