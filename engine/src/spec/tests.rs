//! Tests of parsing, the pipeline-level rules, sources, sinks, overrides and the golden cases.
//! Query rules and output schemas are in `tests_query.rs`.

use std::path::{Path, PathBuf};

use super::*;
use crate::schema::DataType;

/// A valid micro-batch pipeline that the tests bend, one field at a time, with `--set`.
pub(super) const BASE: &str = r#"
name = "t"
mode = "micro-batch"

[source]
type = "files"
path = "in"
schema = "k STRING, ts TIMESTAMP, v DOUBLE, n BIGINT, i INT, b BOOLEAN, g STRING, at TIMESTAMP"

[watermark]
column = "ts"
delay = "10 seconds"

[query]
type = "window_aggregate"
group_by = ["k"]
window = { type = "tumbling", column = "ts", size = "10 seconds" }
measures = [{ agg = "count" }]

[sink]
type = "stdout"
"#;

/// `--set` pairs from `FIELD=VALUE` strings.
pub(super) fn sets(pairs: &[&str]) -> Vec<(String, String)> {
    pairs.iter().map(|p| parse_set_arg(p).expect("test --set is well formed")).collect()
}

/// The pipeline BASE with these overrides.
pub(super) fn ok(pairs: &[&str]) -> Pipeline {
    parse_pipeline_with_overrides(BASE, &sets(pairs)).unwrap_or_else(|e| panic!("{pairs:?}: {e}"))
}

/// The error of BASE with these overrides.
pub(super) fn err(pairs: &[&str]) -> SpecError {
    match parse_pipeline_with_overrides(BASE, &sets(pairs)) {
        Ok(p) => panic!("{pairs:?} should be refused, got {p:?}"),
        Err(e) => e,
    }
}

/// The error of `text`.
pub(super) fn err_text(text: &str) -> SpecError {
    match parse_pipeline_str(text) {
        Ok(p) => panic!("should be refused: {text}\ngot {p:?}"),
        Err(e) => e,
    }
}

/// BASE without the lines starting with `prefix`.
pub(super) fn base_without(prefix: &str) -> String {
    BASE.lines().filter(|l| !l.starts_with(prefix)).collect::<Vec<_>>().join("\n")
}

const EXAMPLE: &str = r#"
name = "rolling-revenue"          # [a-z0-9_-]+; metric label and checkpoint sub-folder
mode = "real-time"                # "real-time" (default) | "micro-batch"
trigger = "1 second"              # micro-batch: batch interval; real-time: epoch (checkpoint) interval

[source]
type = "kafka"
bootstrap_servers = "127.0.0.1:9092"
topic = "events"
group_id = "rolling-revenue"      # default: the pipeline name
starting_offsets = "earliest"     # earliest | latest (first start only; later starts resume)
format = "json"
schema = "user_id STRING, revenue DOUBLE, event_time TIMESTAMP"   # Spark DDL

[watermark]
column = "event_time"
delay = "5 seconds"

[query]
type = "rolling_window"
partition_by = ["user_id"]
order_by = "event_time"
frontier = { delay = "0 seconds", alias = "frontier" }
measures = [
  { agg = "sum", column = "revenue", over = "1 hour", alias = "rolling_revenue" },
  { agg = "count", column = "revenue" },                       # lifetime: no `over`
]

[sink]
type = "kafka"
bootstrap_servers = "127.0.0.1:9092"
topic = "rolling-revenue"
key = ["user_id"]                 # message key: these columns, JSON-encoded; default none
format = "json"

[late_sink]                       # optional; same shape as [sink]: records dropped as late
type = "files"
path = "late/"

[dead_letter]                     # optional; same shape as [sink]: records that could not be decoded
type = "files"
path = "dead-letter/"

[checkpoint]                      # optional; without it nothing survives a restart
path = "checkpoints/"

[metrics]                         # optional
listen = "127.0.0.1:9464"         # Prometheus text format at /metrics; /healthz, /readyz
"#;

#[test]
fn pipeline_md_example_parses() {
    let p = parse_pipeline_str(EXAMPLE).unwrap();
    assert_eq!(p.name, "rolling-revenue");
    assert_eq!(p.mode, Mode::RealTime);
    assert_eq!(p.trigger, Duration::from_secs(1));
    assert_eq!(p.parallelism, None);
    assert_eq!(p.clock, ClockSpec::System);
    assert_eq!(
        p.source.kind,
        SourceKind::Kafka {
            bootstrap_servers: "127.0.0.1:9092".into(),
            topics: vec!["events".into()],
            group_id: "rolling-revenue".into(),
            starting_offsets: StartingOffsets::Earliest,
            properties: Default::default(),
            shared_group: false,
        }
    );
    assert_eq!(
        p.watermark,
        Some(WatermarkSpec { column: "event_time".into(), index: 2, delay: Duration::from_secs(5) })
    );
    let QuerySpec::RollingWindow { partition_by, order_by, frontier_delay, frontier_alias, measures } = &p.query else {
        panic!("a rolling window: {:?}", p.query)
    };
    assert_eq!(partition_by, &["user_id"]);
    assert_eq!(order_by, "event_time");
    assert_eq!(*frontier_delay, Duration::ZERO);
    assert_eq!(frontier_alias, "frontier");
    assert_eq!(measures[0].over, Some(Duration::from_secs(3600)));
    assert_eq!(measures[1].over, None);
    let names: Vec<(String, DataType)> = p.output_schema().into_iter().map(|f| (f.name, f.data_type)).collect();
    assert_eq!(
        names,
        vec![
            ("user_id".into(), DataType::String),
            ("frontier".into(), DataType::Timestamp),
            ("rolling_revenue".into(), DataType::Double),
            ("count(revenue)".into(), DataType::Long),
        ]
    );
    assert!(
        matches!(&p.sink, SinkSpec::Kafka { topic, key, exactly_once: false, .. } if topic == "rolling-revenue" && key == &["user_id"])
    );
    assert_eq!(p.late_sink, Some(SinkSpec::Files { path: "late/".into() }));
    assert_eq!(p.dead_letter, Some(SinkSpec::Files { path: "dead-letter/".into() }));
    assert_eq!(p.checkpoint, Some(CheckpointSpec { path: "checkpoints/".into(), keep: 3 }));
    assert_eq!(p.metrics.unwrap().listen.to_string(), "127.0.0.1:9464");
}

fn cases_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/cases")
}

#[test]
fn every_golden_case_pipeline_validates() {
    let mut n = 0;
    for entry in std::fs::read_dir(cases_dir()).expect("shared/cases beside the repository") {
        let dir = entry.unwrap().path();
        let file = dir.join("pipeline.toml");
        if !file.exists() {
            continue;
        }
        let p = load_pipeline(&file, &[]).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        assert_eq!(p.mode, Mode::MicroBatch, "{}", file.display());
        assert_eq!(p.trigger, Duration::ZERO);
        let SourceKind::Files { path, max_files_per_trigger: 1, follow: false, .. } = &p.source.kind else {
            panic!("{}: files source {:?}", file.display(), p.source.kind)
        };
        assert_eq!(path, &dir.join("input"));
        assert_eq!(p.sink, SinkSpec::Files { path: dir.join("output") });
        n += 1;
    }
    assert!(n >= 10, "found {n} cases");
}

/// The column names Spark wrote in a case's expected output (the oracle sorts keys, so a set).
fn spark_columns(dir: &Path) -> Option<std::collections::BTreeSet<String>> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir.join("expected")).ok()?.map(|e| e.unwrap().path()).collect();
    files.sort();
    for f in files {
        let text = std::fs::read_to_string(&f).unwrap();
        if let Some(line) = text.lines().find(|l| !l.trim().is_empty()) {
            let row: serde_json::Map<String, serde_json::Value> = serde_json::from_str(line).unwrap();
            return Some(row.keys().cloned().collect());
        }
    }
    None
}

#[test]
fn output_names_match_what_spark_wrote_in_every_case() {
    let mut checked = 0;
    for entry in std::fs::read_dir(cases_dir()).unwrap() {
        let dir = entry.unwrap().path();
        let file = dir.join("pipeline.toml");
        let (true, Some(spark)) = (file.exists(), spark_columns(&dir)) else {
            continue;
        };
        let p = load_pipeline(&file, &[]).unwrap();
        let ours: std::collections::BTreeSet<String> = p.output_schema().into_iter().map(|f| f.name).collect();
        assert_eq!(ours, spark, "{}", dir.display());
        checked += 1;
    }
    assert!(checked >= 5, "checked {checked} cases");
}

#[test]
fn toml_syntax_error_names_line_and_column() {
    let e = err_text("name = \"t\"\nmode = \"micro-batch\nx = 1\n");
    assert!(e.field.starts_with("line 2, column "), "{e}");
    assert!(e.given.contains("mode"), "{e}");
    assert!(e.allowed.starts_with("valid TOML"), "{e}");
}

#[test]
fn unknown_top_level_field_is_named_with_its_position() {
    let e = err_text(&format!("{BASE}\n[metrics]\nlisten = \"127.0.0.1:1\"\n\n  paralelism = 4\n"));
    assert_eq!(e.field, "metrics.paralelism");
    let line = BASE.lines().count() + 5;
    assert_eq!(e.given, format!("4, an unknown field (line {line}, column 3)"));
    assert_eq!(e.allowed, "listen");
    let e = err_text(&format!("paralelism = 4\n{BASE}"));
    assert_eq!((e.field.as_str(), e.given.as_str()), ("paralelism", "4, an unknown field (line 1, column 1)"));
    assert!(e.allowed.contains("parallelism") && e.allowed.contains("late_sink"), "{e}");
    // the internal key of several `[[source]]` tables is not offered
    assert!(e.allowed.contains("source") && !e.allowed.contains("source_list"), "{e}");
}

#[test]
fn unknown_field_in_a_measure_is_named_with_its_index() {
    let e = err(&["query.measures=[{ agg = \"count\" }, { agg = \"sum\", colum = \"v\" }]"]);
    assert_eq!(e.field, "query.measures[1].colum");
    assert!(e.given.contains("\"v\", an unknown field"), "{e}");
    assert!(e.given.ends_with("(from --set)"), "{e}");
    assert!(e.allowed.contains("column") && e.allowed.contains("percentage"), "{e}");
}

#[test]
fn unknown_field_in_a_written_window_gives_its_line() {
    let text = BASE.replace("size = \"10 seconds\" }", "size = \"10 seconds\", sise = \"1 s\" }");
    let e = err_text(&text);
    assert_eq!(e.field, "query.window.sise");
    let line = BASE.lines().position(|l| l.starts_with("window =")).unwrap() + 1;
    assert!(e.given.contains(&format!("(line {line}, column ")), "{e}");
    assert_eq!(e.allowed, "type, column, size, start");
}

#[test]
fn unknown_field_of_a_typed_section_lists_the_fields_of_its_type() {
    let text = BASE.replace("path = \"in\"", "path = \"in\"\ntopc = \"x\"");
    let line = BASE.lines().position(|l| l.starts_with("path =")).unwrap() + 2;
    assert_eq!(
        err_text(&text).to_string(),
        format!(
            "source.topc: given \"x\", not a field of source type \"files\" (line {line}, column 1); allowed: type, path, max_files_per_trigger, follow, partial_line_timeout, on_unreadable_file, max_record_bytes, format, schema, timestamp_unit"
        )
    );
    let e = err(&["sink.paht=out"]);
    assert_eq!((e.field.as_str(), e.allowed.as_str()), ("sink.paht", "type, format"));
    let e = err(&["query.window.sise=1 s"]);
    assert_eq!((e.field.as_str(), e.allowed.as_str()), ("query.window.sise", "type, column, size, start"));
}

#[test]
fn wrong_toml_type_is_named_in_plain_words() {
    let e = err(&["parallelism=\"4\""]);
    assert_eq!((e.field.as_str(), e.allowed.as_str()), ("parallelism", "an integer"));
    assert!(e.given.starts_with("\"4\""), "{e}");
    let e = err(&["query.group_by=\"k\""]);
    assert_eq!((e.field.as_str(), e.allowed.as_str()), ("query.group_by", "a list"));
    let e = err(&["source.follow=1"]);
    assert_eq!((e.field.as_str(), e.allowed.as_str()), ("source.follow", "true or false"));
    let e = err(&["sink=5"]);
    assert_eq!((e.field.as_str(), e.allowed.as_str()), ("sink", "a table"));
}

#[test]
fn name_is_required_and_restricted() {
    assert_eq!(err_text(&base_without("name")).field, "name");
    let e = err(&["name=My Pipeline"]);
    assert_eq!(e.to_string(), "name: given \"My Pipeline\"; allowed: a name matching [a-z0-9_-]+");
    assert_eq!(err(&["name=\"\""]).field, "name");
    assert_eq!(ok(&["name=a-b_9"]).name, "a-b_9");
}

#[test]
fn mode_defaults_to_real_time_and_is_one_of_two() {
    assert_eq!(parse_pipeline_str(&base_without("mode")).unwrap().mode, Mode::RealTime);
    let e = err(&["mode=batch"]);
    assert_eq!((e.field.as_str(), e.allowed.as_str()), ("mode", "\"real-time\", \"micro-batch\""));
}

#[test]
fn trigger_defaults_by_mode_and_must_be_a_duration() {
    assert_eq!(ok(&[]).trigger, Duration::ZERO);
    assert_eq!(ok(&["mode=real-time"]).trigger, Duration::from_secs(1));
    assert_eq!(ok(&["trigger=250 ms"]).trigger, Duration::from_millis(250));
    assert_eq!(err(&["trigger=1 month"]).field, "trigger");
    assert_eq!(err(&["trigger=soon"]).field, "trigger");
}

#[test]
fn parallelism_is_between_one_and_the_bound() {
    assert_eq!(ok(&["parallelism=4"]).parallelism, Some(4));
    assert_eq!(ok(&[&format!("parallelism={MAX_PARALLELISM}")]).parallelism, Some(MAX_PARALLELISM));
    for bad in ["0", "-1", &(MAX_PARALLELISM + 1).to_string()] {
        let e = err(&[&format!("parallelism={bad}")]);
        assert_eq!((e.field.as_str(), e.given.as_str()), ("parallelism", bad));
    }
}

#[test]
fn parallelism_above_256_is_refused_naming_the_bound() {
    assert_eq!(ok(&["parallelism=256"]).parallelism, Some(256));
    let e = err(&["parallelism=1024"]);
    assert_eq!((e.field.as_str(), e.given.as_str()), ("parallelism", "1024"));
    assert!(e.allowed.starts_with("an integer from 1 to 256"), "{e}");
}

#[test]
fn resolve_paths_joins_relative_paths_only() {
    let mut p = ok(&[
        "sink.type=files",
        "sink.path=out",
        "late_sink.type=files",
        "late_sink.path=/abs/late",
        "checkpoint.path=ck",
    ]);
    p.resolve_paths(Path::new("/base"));
    assert!(matches!(&p.source.kind, SourceKind::Files { path, .. } if path == Path::new("/base/in")));
    assert_eq!(p.sink, SinkSpec::Files { path: "/base/out".into() });
    assert_eq!(p.late_sink, Some(SinkSpec::Files { path: "/abs/late".into() }));
    assert_eq!(p.checkpoint.unwrap().path, PathBuf::from("/base/ck"));
}

/// `[SECTION] type = "files", path = PATH` as `--set` pairs.
fn files_at(section: &str, path: &str) -> [String; 2] {
    [format!("{section}.type=files"), format!("{section}.path={path}")]
}

/// The error of BASE with these `--set` pairs (owned strings).
fn err_owned(pairs: &[String]) -> SpecError {
    err(&pairs.iter().map(String::as_str).collect::<Vec<_>>())
}

#[test]
fn two_outputs_may_not_share_a_folder() {
    // The same folder, however it is spelled: exit 2 at the later field, naming the earlier one.
    for (a, b) in [("out", "out"), ("out", "./out/"), ("out", "x/../out"), ("/abs/out", "/abs//out/.")] {
        let e = err_owned(&[files_at("sink", a), files_at("dead_letter", b)].concat());
        assert_eq!(e.field, "dead_letter.path", "{a} {b}: {e}");
        assert!(e.given.contains("the same folder as sink.path"), "{e}");
    }
    let e = err_owned(&[files_at("sink", "out"), files_at("late_sink", "out")].concat());
    assert_eq!(e.field, "late_sink.path", "{e}");
    let e = err_owned(&[files_at("late_sink", "late"), files_at("dead_letter", "late")].concat());
    assert_eq!(e.field, "dead_letter.path", "{e}");
    assert!(e.given.contains("late_sink.path"), "{e}");
    // One inside the other.
    let e = err_owned(&[files_at("sink", "out"), files_at("dead_letter", "out/dead")].concat());
    assert_eq!(e.field, "dead_letter.path", "{e}");
    assert!(e.given.contains("inside sink.path"), "{e}");
    let e = err_owned(&[files_at("sink", "out/rows"), files_at("late_sink", "out")].concat());
    assert_eq!(e.field, "late_sink.path", "{e}");
    assert!(e.given.contains("holds sink.path"), "{e}");
    // The checkpoint folder (one sub-folder per pipeline name) is an output folder too.
    for ck in ["out", "out/ck", "."] {
        let mut pairs = files_at("sink", "out").to_vec();
        pairs.push(format!("checkpoint.path={ck}"));
        assert_eq!(err_owned(&pairs).field, "checkpoint.path", "{ck}");
    }
    let mut pairs = files_at("sink", "ck/t").to_vec();
    pairs.push("checkpoint.path=ck".into());
    assert_eq!(err_owned(&pairs).field, "checkpoint.path");
    // Siblings, even with a common name prefix, are fine; so are outputs that are not folders.
    let p = ok(&[
        files_at("sink", "out/rows"),
        files_at("late_sink", "out/rows-late"),
        files_at("dead_letter", "out/rows-dead"),
        ["checkpoint.path=ck".into(), "trigger=1 second".into()],
    ]
    .concat()
    .iter()
    .map(String::as_str)
    .collect::<Vec<_>>());
    assert!(p.checkpoint.is_some());
    ok(&["dead_letter.type=stdout", "late_sink.type=stdout"]);
}

#[test]
fn output_folders_are_compared_as_resolved_against_the_pipeline_file() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("p.toml");
    let text = BASE.replace("type = \"stdout\"", "type = \"files\"\npath = \"out\"");
    std::fs::write(&file, &text).unwrap();
    assert!(load_pipeline(&file, &[]).is_ok());
    // An absolute path naming the folder that the relative `out` resolves to, given by --set.
    let abs = dir.path().join("out");
    let pairs = files_at("dead_letter", &abs.display().to_string());
    let e = load_pipeline(&file, &sets(&pairs.iter().map(String::as_str).collect::<Vec<_>>())).unwrap_err();
    assert_eq!(e.field, "dead_letter.path", "{e}");
    assert!(e.given.contains("the same folder as sink.path"), "{e}");
    // The same absolute folder, once inside the pipeline's folder and once not, is not a clash.
    let other = tempfile::tempdir().unwrap();
    let pairs = files_at("dead_letter", &other.path().join("out").display().to_string());
    assert!(load_pipeline(&file, &sets(&pairs.iter().map(String::as_str).collect::<Vec<_>>())).is_ok());
}

#[test]
fn load_pipeline_names_an_unreadable_file() {
    let e = load_pipeline(Path::new("/no/such/pipeline.toml"), &[]).unwrap_err();
    assert_eq!(e.field, "/no/such/pipeline.toml");
    assert!(e.given.contains("cannot be read"), "{e}");
}

#[test]
fn overrides_replace_values_and_create_tables() {
    let p = ok(&["source.path=other/", "trigger=2 seconds", "checkpoint.path=ck", "query.measures[0].alias=n"]);
    assert!(matches!(&p.source.kind, SourceKind::Files { path, .. } if path == Path::new("other/")));
    assert_eq!(p.trigger, Duration::from_secs(2));
    assert_eq!(p.checkpoint, Some(CheckpointSpec { path: "ck".into(), keep: 3 }));
    assert_eq!(p.query.measures()[0].output_name, "n");
    // A value that is valid TOML is typed: an array, an inline table, a quoted string.
    let p = ok(&[
        "query.group_by=[\"k\", \"g\"]",
        "query.window={ type = \"sliding\", column = \"ts\", size = \"10 s\", slide = \"5 s\" }",
    ]);
    assert!(
        matches!(&p.query, QuerySpec::WindowAggregate { group_by, window: Some(WindowSpec::Sliding { .. }), .. } if group_by.len() == 2)
    );
    assert_eq!(ok(&["name=\"quoted\""]).name, "quoted");
    // Overrides apply in order; the last wins.
    assert_eq!(ok(&["name=a", "name=b"]).name, "b");
}

#[test]
fn override_errors_name_the_field() {
    let e = err(&["name.x=1"]);
    assert_eq!(e.field, "name");
    assert_eq!(err(&["query.measures[5].alias=x"]).field, "query.measures[5]");
    assert_eq!(parse_pipeline_with_overrides(BASE, &[("a b".into(), "1".into())]).unwrap_err().field, "--set");
    let e = err(&["query.window.size=0 seconds"]);
    assert_eq!(e.to_string(), "query.window.size: given \"0 seconds\"; allowed: a duration > 0 (e.g. \"10 seconds\")");
}
