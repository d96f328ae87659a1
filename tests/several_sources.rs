//! Pipelines of several `[[source]]` tables (PIPELINE.md "Several sources, static tables,
//! expressions and SQL", SEMANTICS.md "Several sources (union)"): wrong files exit 2 naming the
//! field, and in real-time mode a quiet source holds the watermark back unless it has an
//! `idle_timeout`, checked against a brute-force reference written from SEMANTICS.md.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Output};

fn eddy(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_eddy")).args(args).current_dir(dir).env("EDDY_LOG", "warn").output().unwrap()
}

/// Two files sources `a` (columns k, v, ts) and `b` (the same, in another order), a tumbling
/// count; `extra` goes at the top, `b_extra` into `b`'s table.
fn two_sources(extra: &str, b_schema: &str, b_extra: &str) -> String {
    format!(
        r#"name = "union"
mode = "micro-batch"
{extra}
[[source]]
name = "a"
type = "files"
path = "in_a"
format = "json"
schema = "k STRING, v BIGINT, ts TIMESTAMP"
watermark = {{ column = "ts", delay = "2 seconds" }}

[[source]]
name = "b"
type = "files"
path = "in_b"
format = "json"
schema = "{b_schema}"
{b_extra}

[query]
type = "window_aggregate"
group_by = ["k"]
window = {{ type = "tumbling", column = "ts", size = "10 seconds" }}
measures = [{{ agg = "count" }}]

[sink]
type = "files"
path = "out"
"#
    )
}

fn setup(pipeline: &str) -> tempfile::TempDir {
    let tmp = tempfile::tempdir().unwrap();
    for s in ["in_a", "in_b"] {
        std::fs::create_dir(tmp.path().join(s)).unwrap();
    }
    std::fs::write(tmp.path().join("p.toml"), pipeline).unwrap();
    tmp
}

/// `eddy validate` and `eddy run` both exit 2 naming every one of `words`, and nothing starts.
fn refused(pipeline: &str, words: &[&str]) {
    let tmp = setup(pipeline);
    for cmd in ["validate", "run"] {
        let out = eddy(tmp.path(), &[cmd, "p.toml"]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{cmd}: stderr: {err}");
        for w in words {
            assert!(err.contains(w), "{cmd}: stderr does not name {w:?}: {err}");
        }
    }
    assert!(!tmp.path().join("out").exists(), "nothing may start: the output folder was created");
}

#[test]
fn two_sources_of_one_name_are_refused_naming_the_second() {
    let p = two_sources("", "ts TIMESTAMP, v BIGINT, k STRING", "").replace("name = \"b\"", "name = \"a\"");
    refused(&p, &["source[1].name", "\"a\"", "source[0]"]);
}

#[test]
fn a_top_level_watermark_beside_several_sources_is_refused_saying_to_move_it() {
    let p = two_sources("", "ts TIMESTAMP, v BIGINT, k STRING", "")
        + "\n[watermark]\ncolumn = \"ts\"\ndelay = \"1 second\"\n";
    refused(&p, &["watermark", "move [watermark] into its source"]);
}

#[test]
fn several_sources_each_need_a_name() {
    let p = two_sources("", "ts TIMESTAMP, v BIGINT, k STRING", "").replacen("name = \"a\"\n", "", 1);
    refused(&p, &["source[0].name"]);
}

#[test]
fn a_source_without_a_column_of_the_union_is_refused_naming_the_column() {
    refused(&two_sources("", "ts TIMESTAMP, k STRING", ""), &["source[1].schema", "no column \"v\"", "v BIGINT"]);
}

#[test]
fn a_source_whose_column_has_another_type_is_refused_naming_the_column() {
    refused(
        &two_sources("", "ts TIMESTAMP, v DOUBLE, k STRING", ""),
        &["source[1].schema", "\"v\" of type DOUBLE", "BIGINT"],
    );
}

#[test]
fn a_source_with_a_column_the_union_lacks_is_refused_naming_the_column() {
    refused(&two_sources("", "ts TIMESTAMP, v BIGINT, k STRING, extra STRING", ""), &["source[1].schema", "\"extra\""]);
}

#[test]
fn an_unknown_field_of_a_later_source_is_named_with_its_index() {
    refused(&two_sources("", "ts TIMESTAMP, v BIGINT, k STRING", "colour = \"red\""), &["source[1].colour"]);
}

#[test]
fn a_wrong_field_of_a_later_source_is_named_with_its_index() {
    refused(
        &two_sources("", "ts TIMESTAMP, v BIGINT, k STRING", "idle_timeout = \"0 seconds\""),
        &["source[1].idle_timeout"],
    );
    refused(
        &two_sources("", "ts TIMESTAMP, v BIGINT, k STRING", "watermark = { column = \"v\", delay = \"1 second\" }"),
        &["source[1].watermark.column", "TIMESTAMP"],
    );
}

#[test]
fn an_unknown_watermark_policy_is_refused() {
    refused(
        &two_sources("watermark_policy = \"avg\"", "ts TIMESTAMP, v BIGINT, k STRING", ""),
        &["watermark_policy", "\"min\", \"max\""],
    );
}

/// Event time (and replay-clock arrival) in seconds after 2024-01-15T10:00:00Z.
fn at(s: i64) -> String {
    let (m, s) = (s / 60, s % 60);
    format!("2024-01-15T10:{m:02}:{s:02}Z")
}

/// What SEMANTICS.md says a real-time run computes, record by record: `records` are (source,
/// event time in seconds) in the order the sources deliver them, each arriving at its event
/// time on the replay clock (which never moves back); every source has a watermark of `delay`
/// seconds; source `s`'s W is its largest event time minus the delay (below everything before
/// its first record); the pipeline W, as it stands when a record arrives, is the minimum over
/// the sources not left out (a source with `idle_timeout` is left out after that long without
/// a record, counted from the first processing time when it never delivered), and never moves
/// back. A record is late when its 10-second window ends at or before W. Returns each window's
/// count (by start) and the late records' event times.
fn reference(
    records: &[(usize, i64)],
    sources: usize,
    delay: i64,
    idle: &[Option<i64>],
) -> (BTreeMap<i64, u64>, Vec<i64>) {
    let mut max_et: Vec<Option<i64>> = vec![None; sources];
    let mut last: Vec<Option<i64>> = vec![None; sources];
    let (mut now, mut start, mut w) = (i64::MIN, None, i64::MIN);
    let (mut counts, mut late) = (BTreeMap::new(), Vec::new());
    for &(s, t) in records {
        now = now.max(t);
        let begun = *start.get_or_insert(now);
        let candidates: Vec<i64> = (0..sources)
            .filter(|&i| idle[i].is_none_or(|timeout| now - last[i].unwrap_or(begun) < timeout))
            .map(|i| max_et[i].map_or(i64::MIN, |m| m - delay))
            .collect();
        if let Some(min) = candidates.into_iter().min() {
            w = w.max(min);
        }
        let window = t.div_euclid(10) * 10;
        if window + 10 <= w {
            late.push(t);
        } else {
            *counts.entry(window).or_insert(0) += 1;
        }
        max_et[s] = Some(max_et[s].map_or(t, |m| m.max(t)));
        last[s] = Some(now);
    }
    (counts, late)
}

/// Runs a real-time union of a quiet source (one record at 0 s) and a busy one under the replay
/// clock; returns the last count of each window (by start second) and the late records' times.
fn run_quiet_and_busy(quiet: &[i64], busy: &[i64], idle_timeout: Option<&str>) -> (BTreeMap<i64, u64>, Vec<i64>) {
    let idle = idle_timeout.map(|t| format!("idle_timeout = \"{t}\"")).unwrap_or_default();
    let pipeline = format!(
        r#"name = "quiet-busy"
mode = "real-time"
parallelism = 1

[clock]
type = "replay"
column = "ts"

[[source]]
name = "quiet"
type = "files"
path = "in_a"
format = "json"
schema = "k STRING, ts TIMESTAMP"
watermark = {{ column = "ts", delay = "2 seconds" }}
{idle}

[[source]]
name = "busy"
type = "files"
path = "in_b"
format = "json"
schema = "ts TIMESTAMP, k STRING"
watermark = {{ column = "ts", delay = "2 seconds" }}

[query]
type = "window_aggregate"
group_by = ["k"]
window = {{ type = "tumbling", column = "ts", size = "10 seconds" }}
output_mode = "update"
measures = [{{ agg = "count", alias = "n" }}]

[sink]
type = "files"
path = "out"

[late_sink]
type = "files"
path = "late"
"#
    );
    let tmp = setup(&pipeline);
    let lines =
        |ts: &[i64]| ts.iter().map(|t| format!("{{\"k\": \"x\", \"ts\": \"{}\"}}\n", at(*t))).collect::<String>();
    std::fs::write(tmp.path().join("in_a/000.json"), lines(quiet)).unwrap();
    std::fs::write(tmp.path().join("in_b/000.json"), lines(busy)).unwrap();
    let out = eddy(tmp.path(), &["run", "p.toml", "--no-progress"]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let rows = |folder: &str| -> Vec<serde_json::Value> {
        let mut files: Vec<_> = std::fs::read_dir(tmp.path().join(folder))
            .map(|d| d.flatten().map(|e| e.path()).collect())
            .unwrap_or_default();
        files.sort();
        files
            .iter()
            .flat_map(|f| {
                std::fs::read_to_string(f)
                    .unwrap()
                    .lines()
                    .map(|l| serde_json::from_str(l).unwrap())
                    .collect::<Vec<_>>()
            })
            .collect()
    };
    let seconds = |s: &str| {
        let hms = &s[11..19];
        hms[3..5].parse::<i64>().unwrap() * 60 + hms[6..8].parse::<i64>().unwrap()
    };
    let mut counts = BTreeMap::new();
    for row in rows("out") {
        // update mode: the last row of a window is its count
        counts.insert(seconds(row["window"]["start"].as_str().unwrap()), row["n"].as_u64().unwrap());
    }
    let late = rows("late").iter().map(|r| seconds(r["ts"].as_str().unwrap())).collect();
    (counts, late)
}

const QUIET: &[i64] = &[0];
/// The busy source's records; 8 s arrives when the clock is at 25 s.
const BUSY: &[i64] = &[1, 5, 12, 18, 25, 8, 31, 42];

fn expected(idle: Option<i64>) -> (BTreeMap<i64, u64>, Vec<i64>) {
    // the quiet source is read first (it is the first source), then the busy one
    let records: Vec<(usize, i64)> = QUIET.iter().map(|t| (0, *t)).chain(BUSY.iter().map(|t| (1, *t))).collect();
    reference(&records, 2, 2, &[idle, None])
}

#[test]
fn a_quiet_source_holds_the_watermark_back_in_real_time() {
    let (counts, late) = run_quiet_and_busy(QUIET, BUSY, None);
    let (want_counts, want_late) = expected(None);
    assert!(want_late.is_empty(), "the reference drops nothing while the quiet source holds W back");
    assert_eq!(counts, want_counts);
    assert_eq!(late, want_late);
}

#[test]
fn a_quiet_source_with_an_idle_timeout_is_left_out_of_the_watermark_in_real_time() {
    let (counts, late) = run_quiet_and_busy(QUIET, BUSY, Some("5 seconds"));
    let (want_counts, want_late) = expected(Some(5));
    assert_eq!(want_late, vec![8], "the reference drops 8 s once the quiet source is left out");
    assert_eq!(counts, want_counts);
    assert_eq!(late, want_late);
}

/// Two sources `a` (k, v, ts) and `b` (ts, v, k) and the SQL query `sql`.
fn sql_pipeline(sql: &str) -> String {
    two_sources("", "ts TIMESTAMP, v BIGINT, k STRING", "")
        .replace(
            "[query]\ntype = \"window_aggregate\"\ngroup_by = [\"k\"]\nwindow = { type = \"tumbling\", column = \"ts\", size = \"10 seconds\" }\nmeasures = [{ agg = \"count\" }]",
            &format!("[query]\nsql = \"\"\"\n{sql}\n\"\"\""),
        )
}

#[test]
fn the_sql_fixture_runs() {
    let tmp = setup(&sql_pipeline("SELECT k, v, ts FROM a UNION ALL SELECT k, v, ts FROM b"));
    let out = eddy(tmp.path(), &["validate", "p.toml"]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
}

#[test]
fn a_union_reading_an_unknown_source_is_refused_at_its_line_and_column() {
    refused(
        &sql_pipeline("SELECT k, v, ts FROM a\nUNION ALL\nSELECT k, v, ts FROM nope"),
        &["query.sql", "FROM nope", "at 3:22", "a, b"],
    );
}

#[test]
fn a_union_of_queries_with_other_column_counts_is_refused() {
    refused(
        &sql_pipeline("SELECT k, v, ts FROM a UNION ALL SELECT k, ts FROM b"),
        &["query.sql", "query 2 of the union with 2 columns", "3 columns"],
    );
}

#[test]
fn a_union_of_columns_whose_types_do_not_meet_is_refused_naming_the_column() {
    // (BIGINT with DOUBLE widens to DOUBLE, as Spark: `tests/cases-sql/sql-union-widened-*`)
    refused(
        &sql_pipeline("SELECT k, v, ts FROM a UNION ALL SELECT k, v > 2, ts FROM b"),
        &["query.sql", "column 2", "of type BOOLEAN", "at 1:44", "compatible with BIGINT"],
    );
}

#[test]
fn a_sql_query_that_does_not_read_every_source_is_refused() {
    refused(&sql_pipeline("SELECT k, count(*) AS n FROM a GROUP BY k"), &["query.sql", "FROM a", "every [[source]]"]);
}

#[test]
fn a_source_read_twice_by_a_union_is_refused() {
    refused(&sql_pipeline("SELECT k, v, ts FROM a UNION ALL SELECT k, v, ts FROM A"), &["query.sql", "a second time"]);
}

#[test]
fn a_distinct_union_under_an_aggregation_is_refused() {
    refused(
        &sql_pipeline(
            "SELECT k, count(*) AS n FROM (SELECT k, v, ts FROM a UNION SELECT k, v, ts FROM b) u GROUP BY k",
        ),
        &["query.sql", "UNION (distinct) under an outer query"],
    );
}

#[test]
fn a_distinct_union_in_append_mode_runs_with_a_watermark_and_is_refused_without_one() {
    // Spark runs UNION as an aggregation over every column: append needs the watermark on one
    // of them (`tests/cases-sql/sql-union-distinct-append`), else Spark refuses it
    let append = |p: String| p.replace("\n\"\"\"\n", "\n\"\"\"\noutput_mode = \"append\"\n");
    let p = append(sql_pipeline("SELECT k, v, ts FROM a UNION SELECT k, v, ts FROM b"));
    let tmp = setup(&p);
    let out = eddy(tmp.path(), &["validate", "p.toml"]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let unwatermarked = p.replace("watermark = { column = \"ts\", delay = \"2 seconds\" }\n", "");
    refused(&unwatermarked, &["query.output_mode", "a UNION without a watermark", "without watermark"]);
}

#[test]
fn append_over_a_union_needs_the_watermark_of_its_first_source() {
    // Spark's union carries its first child's watermark only: with it on `b` alone, a window
    // over the union has none (`tests/cases-sql/sql-union-first-branch-without-watermark`), and
    // append is refused; a first branch reading `b` carries it
    let on_b_only = |p: String| {
        p.replacen("watermark = { column = \"ts\", delay = \"2 seconds\" }\n", "", 1).replace(
            "schema = \"ts TIMESTAMP, v BIGINT, k STRING\"\n",
            "schema = \"ts TIMESTAMP, v BIGINT, k STRING\"\nwatermark = { column = \"ts\", delay = \"2 seconds\" }\n",
        )
    };
    let append = |sql: &str| on_b_only(sql_pipeline(sql)).replace("\n\"\"\"\n", "\n\"\"\"\noutput_mode = \"append\"\n");
    let window = "SELECT window(ts, '10 seconds') AS w, k, count(*) AS n FROM";
    let a_first =
        append(&format!("{window} (SELECT k, v, ts FROM a UNION ALL SELECT k, v, ts FROM b) u GROUP BY 1, 2"));
    assert_eq!(a_first.matches("watermark = ").count(), 1, "{a_first}");
    refused(&a_first, &["query.output_mode", "the union's first source, a, has no watermark", "UNSUPPORTED_OPERATION"]);
    let b_first =
        append(&format!("{window} (SELECT k, v, ts FROM b UNION ALL SELECT k, v, ts FROM a) u GROUP BY 1, 2"));
    let tmp = setup(&b_first);
    let out = eddy(tmp.path(), &["validate", "p.toml"]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    // the structured union by name: the first source in the file
    let structured = on_b_only(two_sources("", "ts TIMESTAMP, v BIGINT, k STRING", ""))
        .replace("measures = [{ agg = \"count\" }]", "measures = [{ agg = \"count\" }]\noutput_mode = \"append\"");
    refused(&structured, &["query.output_mode", "the union's first source, a, has no watermark"]);
}

#[test]
fn two_stdin_sources_are_refused() {
    let p = two_sources("", "ts TIMESTAMP, v BIGINT, k STRING", "")
        .replace("type = \"files\"\npath = \"in_a\"", "type = \"stdin\"")
        .replace("type = \"files\"\npath = \"in_b\"", "type = \"stdin\"");
    refused(&p, &["source[1].type", "one stdin source at most"]);
}

#[test]
fn a_checkpoint_of_other_sources_is_not_restored() {
    let tmp = setup(&two_sources("", "ts TIMESTAMP, v BIGINT, k STRING", ""));
    std::fs::write(tmp.path().join("in_a/000.json"), "{\"k\": \"x\", \"v\": 1, \"ts\": \"2024-01-15T10:00:01Z\"}\n")
        .unwrap();
    let with_ck = ["run", "p.toml", "--no-progress", "--set", "checkpoint.path=ck"];
    let out = eddy(tmp.path(), &with_ck);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    // the second source's schema changes: its offsets and state no longer fit
    let changed = two_sources("", "ts TIMESTAMP, v BIGINT, k STRING, w BIGINT", "select = [\"ts\", \"v\", \"k\"]");
    std::fs::write(tmp.path().join("p.toml"), changed).unwrap();
    let out = eddy(tmp.path(), &with_ck);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("checkpoint.path") && err.contains("source[1]"), "{err}");
}

#[test]
fn two_generated_sources_feed_one_query_in_real_time() {
    let tmp = setup(
        r#"name = "nexmark-union"
mode = "real-time"
parallelism = 2
[[source]]
name = "bids_a"
type = "nexmark"
events = 100
seed = 1
[[source]]
name = "bids_b"
type = "nexmark"
events = 100
seed = 2
[query]
type = "window_aggregate"
group_by = []
measures = [{ agg = "count", alias = "n" }]
[sink]
type = "files"
path = "out"
"#,
    );
    let out = eddy(tmp.path(), &["run", "p.toml", "--no-progress"]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let mut last = 0;
    for f in std::fs::read_dir(tmp.path().join("out")).unwrap().flatten() {
        for line in std::fs::read_to_string(f.path()).unwrap().lines() {
            let row: serde_json::Value = serde_json::from_str(line).unwrap();
            last = last.max(row["n"].as_u64().unwrap());
        }
    }
    // 100 events of each generator hold 92 bids (person : auction : bid = 1 : 3 : 46)
    assert_eq!(last, 2 * 92);
}

#[test]
fn a_union_selecting_no_watermarked_column_runs_and_one_selecting_some_is_refused() {
    // both sources watermarked on `ts`
    let both = |sql: &str| {
        sql_pipeline(sql).replace(
            "schema = \"ts TIMESTAMP, v BIGINT, k STRING\"\n",
            "schema = \"ts TIMESTAMP, v BIGINT, k STRING\"\nwatermark = { column = \"ts\", delay = \"2 seconds\" }\n",
        )
    };
    // neither `ts` selected: no event time, as in Spark (tests/cases-sql/sql-union-all-without-time-column)
    let neither = both("SELECT k, count(*) AS n FROM (SELECT k, v FROM a UNION ALL SELECT k, v FROM b) u GROUP BY k");
    assert_eq!(neither.matches("watermark = ").count(), 2, "{neither}");
    let tmp = setup(&neither);
    let out = eddy(tmp.path(), &["validate", "p.toml"]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    // and the plan says so: no watermark at the union or at the aggregation
    let out = eddy(tmp.path(), &["explain", "p.toml"]);
    let plan = String::from_utf8_lossy(&out.stdout);
    assert!(plan.contains("(polled in turn), no watermark\n"), "{plan}");
    assert!(!plan.contains("combined watermark") && !plan.contains("pipeline watermark"), "{plan}");
    // `a`'s selected, `b`'s not: Spark's watermark would still be the minimum of both
    let some = both("SELECT k, v, ts FROM a UNION ALL SELECT k, v, ts + INTERVAL 1 SECOND FROM b");
    refused(
        &some,
        &["source[1].watermark.column", "a column the union's branch FROM b (query.sql at 1:75) selects as it is"],
    );
    // with three branches, the one at fault: here the third (`c` reads b's folder)
    let three = both(
        "SELECT k, v, ts FROM a UNION ALL SELECT k, v, ts FROM b\nUNION ALL SELECT k, v, ts + INTERVAL 1 SECOND FROM c",
    )
    .replace(
        "[query]",
        "[[source]]\nname = \"c\"\ntype = \"files\"\npath = \"in_b\"\nformat = \"json\"\nschema = \"k STRING, v BIGINT, ts TIMESTAMP\"\nwatermark = { column = \"ts\", delay = \"2 seconds\" }\n\n[query]",
    );
    refused(
        &three,
        &["source[2].watermark.column", "a column the union's branch FROM c (query.sql at 2:52) selects as it is"],
    );
}

#[test]
fn a_dead_letter_names_the_source_its_record_came_from() {
    // the same file name in both folders: only the source's name tells the lines apart
    let p = two_sources("", "ts TIMESTAMP, v BIGINT, k STRING", "")
        + "\n[dead_letter]\ntype = \"files\"\npath = \"dead\"\n";
    let tmp = setup(&p);
    let good = |k: &str| format!("{{\"k\": \"{k}\", \"v\": 1, \"ts\": \"2024-01-15T10:00:01Z\"}}\n");
    std::fs::write(tmp.path().join("in_a/000.json"), good("x") + "not json a\n").unwrap();
    std::fs::write(tmp.path().join("in_b/000.json"), good("y") + &good("z") + "{\"k\": \"q\", \"v\": \"no\"}\n")
        .unwrap();
    let out = eddy(tmp.path(), &["run", "p.toml"]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let mut dead = Vec::new();
    for f in std::fs::read_dir(tmp.path().join("dead")).unwrap() {
        for line in std::fs::read_to_string(f.unwrap().path()).unwrap().lines() {
            let v: serde_json::Value = serde_json::from_str(line).unwrap();
            dead.push((v["source"].as_str().unwrap().to_string(), v["record"].as_str().unwrap().to_string()));
        }
    }
    dead.sort();
    assert_eq!(
        dead,
        [
            ("a: 000.json:2".to_string(), "not json a".to_string()),
            ("b: 000.json:3".to_string(), "{\"k\": \"q\", \"v\": \"no\"}".to_string())
        ]
    );
}

#[test]
fn append_over_a_union_that_carries_no_watermark_says_why() {
    // both sources watermarked on `ts`, but each branch selects `ts + INTERVAL ...`: the union's
    // `t` carries no watermark, so a session window over it cannot run in append mode
    let p = sql_pipeline(
        "SELECT k, session_window(t, '5 seconds') AS w, count(*) AS n\nFROM (SELECT k, ts + INTERVAL 1 SECOND AS t FROM a UNION ALL SELECT k, ts + INTERVAL 1 SECOND AS t FROM b) u\nGROUP BY k, session_window(t, '5 seconds')",
    )
    .replace("schema = \"ts TIMESTAMP, v BIGINT, k STRING\"\n", "schema = \"ts TIMESTAMP, v BIGINT, k STRING\"\nwatermark = { column = \"ts\", delay = \"2 seconds\" }\n")
    .replace("\n\"\"\"\n", "\n\"\"\"\noutput_mode = \"append\"\n");
    refused(
        &p,
        &[
            "query.output_mode",
            "the union carries no watermark: no branch selects its source's watermark column as it is",
            "each branch selects its source's watermark column as it is",
        ],
    );
}

#[test]
fn a_distinct_union_branch_is_refused_naming_distinct() {
    refused(
        &sql_pipeline("SELECT DISTINCT k, v, ts FROM a UNION ALL SELECT k, v, ts FROM b"),
        &["query.sql", "GROUP BY or SELECT DISTINCT in a query of a union at 1:17"],
    );
}
