//! Tests of the source, watermark, clock, sink, checkpoint and metrics rules.

use super::tests::{BASE, base_without, err, err_text, ok, sets};
use super::*;
use crate::schema::DataType;
use crate::time::parse_timestamp;

#[test]
fn source_fields_of_another_type_are_named_with_the_type() {
    let e = err(&["source.topic=events"]);
    assert_eq!(
        e.to_string(),
        "source.topic: given \"events\" (not a field of source type \"files\"); allowed: type, path, max_files_per_trigger, follow, partial_line_timeout, on_unreadable_file, max_record_bytes, format, schema, timestamp_unit"
    );
    assert_eq!(err(&["source.type=stdin"]).field, "source.path");
    assert_eq!(err(&["source.type=kafka", "source.path=x"]).field, "source.path");
}

#[test]
fn source_type_is_required_and_known() {
    assert_eq!(err_text(&BASE.replace("type = \"files\"\n", "")).field, "source.type");
    let e = err(&["source.type=file"]);
    assert_eq!(e.field, "source.type");
    assert_eq!(e.allowed, "\"files\", \"stdin\", \"kafka\", \"nexmark\"");
    assert_eq!(err_text("name = \"t\"\n[query]\ntype = \"deduplicate\"\n[sink]\ntype = \"stdout\"\n").field, "source");
}

#[test]
fn files_source_needs_a_path_and_takes_its_options() {
    assert_eq!(err_text(&base_without("path")).field, "source.path");
    let p =
        ok(&["source.max_files_per_trigger=5", "source.follow=true", "source.format=csv", "source.timestamp_unit=us"]);
    let defaults = (Duration(DEFAULT_PARTIAL_LINE_TIMEOUT_US), OnUnreadableFile::DeadLetter);
    let SourceKind::Files { path, max_files_per_trigger: 5, follow: true, partial_line_timeout, on_unreadable_file } =
        &p.source.kind
    else {
        panic!("{:?}", p.source.kind)
    };
    assert_eq!((path.as_path(), (*partial_line_timeout, *on_unreadable_file)), (Path::new("in"), defaults));
    assert_eq!((p.source.format, p.source.timestamp_unit), (Format::Csv, TimeUnit::Us));
    assert_eq!(ok(&[]).source.timestamp_unit, TimeUnit::Ms);
    assert_eq!(err(&["source.max_files_per_trigger=0"]).field, "source.max_files_per_trigger");
    assert_eq!(err(&["source.format=parquet"]).field, "source.format");
    assert_eq!(err(&["source.timestamp_unit=ns"]).field, "source.timestamp_unit");
}

#[test]
fn files_and_stdin_sources_take_record_and_file_failure_options() {
    let p =
        ok(&["source.partial_line_timeout=2 seconds", "source.on_unreadable_file=fail", "source.max_record_bytes=100"]);
    let SourceKind::Files { partial_line_timeout, on_unreadable_file, .. } = &p.source.kind else {
        panic!("{:?}", p.source.kind)
    };
    assert_eq!((*partial_line_timeout, *on_unreadable_file), (Duration(2_000_000), OnUnreadableFile::Fail));
    assert_eq!(p.source.max_record_bytes, 100);
    assert_eq!(ok(&[]).source.max_record_bytes, 16 * 1024 * 1024);
    let stdin = base_without("path").replace("type = \"files\"", "type = \"stdin\"");
    let p = parse_pipeline_with_overrides(&stdin, &sets(&["source.max_record_bytes=7"])).unwrap();
    assert_eq!((&p.source.kind, p.source.max_record_bytes), (&SourceKind::Stdin, 7));
    let e = parse_pipeline_with_overrides(&stdin, &sets(&["source.on_unreadable_file=fail"])).unwrap_err();
    assert_eq!(e.field, "source.on_unreadable_file");
    assert_eq!(err(&["source.partial_line_timeout=0 seconds"]).field, "source.partial_line_timeout");
    assert_eq!(err(&["source.partial_line_timeout=soon"]).field, "source.partial_line_timeout");
    let e = err(&["source.on_unreadable_file=skip"]);
    assert_eq!((e.field.as_str(), e.given.as_str()), ("source.on_unreadable_file", "\"skip\""));
    assert_eq!(err(&["source.max_record_bytes=0"]).field, "source.max_record_bytes");
}

#[test]
fn schema_is_required_and_must_be_spark_ddl() {
    assert_eq!(err_text(&base_without("schema")).field, "source.schema");
    let e = err(&["source.schema=k STRING, ts BLOB"]);
    assert_eq!(e.field, "source.schema");
    assert!(e.given.contains("BLOB"), "{e}");
}

#[test]
fn schema_column_names_are_spark_identifiers() {
    // Spark's table-schema DDL is `name TYPE`; `name: TYPE` is STRUCT<...> field syntax only.
    let e = err(&["source.schema=k: STRING, ts TIMESTAMP"]);
    assert_eq!(e.field, "source.schema", "{e}");
    assert!(e.given.contains("\"k:\""), "{e}");
    assert!(e.given.contains("colon"), "{e}");
    for ddl in ["`k`: STRING, ts TIMESTAMP", "k :STRING, ts TIMESTAMP", "k-1 STRING, ts TIMESTAMP"] {
        assert_eq!(err(&[&format!("source.schema={ddl}")]).field, "source.schema", "{ddl}");
    }
    // Backticks quote any name.
    let p = ok(&["source.schema=`k-1` STRING, ts TIMESTAMP", "query.group_by=[\"k-1\"]"]);
    assert_eq!(p.source.schema.names(), "k-1, ts");
}

#[test]
fn schema_column_names_differing_only_in_case_are_refused() {
    let e = err(&["source.schema=k STRING, ts TIMESTAMP, Amount DOUBLE, amount DOUBLE"]);
    assert_eq!(e.field, "source.schema", "{e}");
    assert!(e.given.contains("\"amount\"") && e.given.contains("\"Amount\""), "{e}");
}

#[test]
fn fractional_durations_follow_spark() {
    // Spark's interval strings take a fraction on seconds only.
    let p = ok(&["query.window.size=1.5 seconds"]);
    let QuerySpec::WindowAggregate { window: Some(WindowSpec::Tumbling { size, .. }), .. } = p.query else { panic!() };
    assert_eq!(size, Duration(1_500_000));
    let refused = [("1.5 hours", "only seconds"), ("0.5 us", "only seconds"), ("0.0000005 seconds", "microsecond")];
    for (bad, why) in refused {
        let e = err(&[&format!("query.window.size={bad}")]);
        assert_eq!(e.field, "query.window.size", "{e}");
        assert!(e.given.contains(why) && !e.given.contains("missing unit"), "{bad}: {e}");
    }
}

#[test]
fn stdin_source_needs_only_a_schema() {
    let text = base_without("path").replace("type = \"files\"", "type = \"stdin\"");
    let p = parse_pipeline_str(&text).unwrap();
    assert_eq!((p.source.kind, p.source.format), (SourceKind::Stdin, Format::Json));
}

/// BASE with a kafka source whose other lines are `extra`.
fn kafka(extra: &str) -> Result<Pipeline, SpecError> {
    let text = base_without("path")
        .replace("type = \"files\"", &format!("type = \"kafka\"\nbootstrap_servers = \"b:9092\"\n{extra}"));
    parse_pipeline_str(&text)
}

#[test]
fn kafka_source_defaults_and_rules() {
    let p = kafka("topic = \"e\"").unwrap();
    assert_eq!(
        p.source.kind,
        SourceKind::Kafka {
            bootstrap_servers: "b:9092".into(),
            topics: vec!["e".into()],
            group_id: "t".into(),
            starting_offsets: StartingOffsets::Latest,
            properties: Default::default(),
            shared_group: false,
        }
    );
    let p = kafka("topics = [\"a\", \"b\"]\nproperties = { \"fetch.min.bytes\" = 1, \"enable.idempotence\" = true, \"client.id\" = \"x\" }").unwrap();
    let SourceKind::Kafka { topics, properties, .. } = p.source.kind else { panic!() };
    assert_eq!(topics, ["a", "b"]);
    assert_eq!(properties.get("fetch.min.bytes").map(String::as_str), Some("1"));
    assert_eq!(properties.get("enable.idempotence").map(String::as_str), Some("true"));
    assert_eq!(properties.get("client.id").map(String::as_str), Some("x"));
    assert_eq!(kafka("topic = \"a\"\ntopics = [\"b\"]").unwrap_err().field, "source.topics");
    assert_eq!(kafka("").unwrap_err().field, "source.topic");
    assert_eq!(kafka("topics = []").unwrap_err().field, "source.topics");
    assert_eq!(kafka("topics = [\"a\", \"\"]").unwrap_err().field, "source.topics[1]");
    assert_eq!(kafka("topic = \"e\"\nstarting_offsets = \"beginning\"").unwrap_err().field, "source.starting_offsets");
    assert_eq!(kafka("topic = \"e\"\nproperties = { a = [1] }").unwrap_err().field, "source.properties.a");
    assert_eq!(kafka("topic = \"e\"\nfollow = true").unwrap_err().field, "source.follow");
    let text = base_without("path").replace("type = \"files\"", "type = \"kafka\"\ntopic = \"e\"");
    assert_eq!(err_text(&text).field, "source.bootstrap_servers");
}

/// A nexmark pipeline with these source lines (a deduplicate query over the bid table).
fn nexmark(extra: &str) -> Result<Pipeline, SpecError> {
    parse_pipeline_str(&format!(
        "name = \"nx\"\n[source]\ntype = \"nexmark\"\n{extra}\n[query]\ntype = \"deduplicate\"\n[sink]\ntype = \"stdout\"\n"
    ))
}

#[test]
fn nexmark_schema_is_implied_by_its_table() {
    let p = nexmark("").unwrap();
    assert_eq!(p.source.kind, SourceKind::Nexmark { table: NexmarkTable::Bid, events: None, rate: None, seed: 0 });
    assert_eq!(p.input_schema().names(), "auction, bidder, price, channel, url, date_time, extra");
    assert_eq!(p.input_schema().field("date_time").unwrap().data_type, DataType::Timestamp);
    let p = nexmark("table = \"person\"\nevents = 1000\nrate = 500.0\nseed = 7").unwrap();
    assert_eq!(
        p.source.kind,
        SourceKind::Nexmark { table: NexmarkTable::Person, events: Some(1000), rate: Some(500.0), seed: 7 }
    );
    assert_eq!(p.input_schema().names(), "id, name, email_address, credit_card, city, state, date_time, extra");
    let p = nexmark("table = \"auction\"").unwrap();
    assert_eq!(p.input_schema().len(), 10);
    assert_eq!(p.input_schema().field("expires").unwrap().data_type, DataType::Timestamp);
    assert_eq!(nexmark("schema = \"a STRING\"").unwrap_err().field, "source.schema");
    assert_eq!(nexmark("table = \"bids\"").unwrap_err().field, "source.table");
    assert_eq!(nexmark("rate = 0").unwrap_err().field, "source.rate");
    assert_eq!(nexmark("events = -1").unwrap_err().field, "source.events");
    assert_eq!(nexmark("seed = -1").unwrap_err().field, "source.seed");
}

#[test]
fn nexmark_ddl_constants_parse() {
    for t in [NexmarkTable::Bid, NexmarkTable::Auction, NexmarkTable::Person] {
        assert!(Schema::parse_ddl(t.ddl()).is_ok(), "{t:?}");
    }
}

#[test]
fn watermark_column_must_be_a_timestamp_of_the_schema() {
    let p = ok(&[]);
    assert_eq!(p.watermark, Some(WatermarkSpec { column: "ts".into(), index: 1, delay: Duration::from_secs(10) }));
    let e = err(&["watermark.column=k", "query.window.column=ts"]);
    assert_eq!(
        e.to_string(),
        "watermark.column: given \"k\" (a STRING column); allowed: a TIMESTAMP column of the schema: ts, at"
    );
    let e = err(&["watermark.column=nope"]);
    assert_eq!((e.field.as_str(), e.given.as_str()), ("watermark.column", "\"nope\""));
    assert_eq!(err_text(&BASE.replace("column = \"ts\"\ndelay", "delay")).field, "watermark.column");
    assert_eq!(err_text(&BASE.replace("delay = \"10 seconds\"\n", "")).field, "watermark.delay");
}

#[test]
fn watermark_delay_may_be_zero_but_not_negative() {
    assert_eq!(ok(&["watermark.delay=0 seconds"]).watermark.unwrap().delay, Duration::ZERO);
    assert_eq!(err(&["watermark.delay=-1 seconds"]).field, "watermark.delay");
    assert_eq!(err(&["watermark.delay=2 years"]).field, "watermark.delay");
}

#[test]
fn replay_clock_reads_a_timestamp_column_until_a_timestamp() {
    let p = ok(&["clock.type=replay", "clock.column=at", "clock.until=2024-01-15T12:00:00Z"]);
    let until = parse_timestamp("2024-01-15T12:00:00Z").unwrap();
    assert_eq!(p.clock, ClockSpec::Replay { column: "at".into(), index: 7, until: Some(until) });
    let text = format!("{BASE}\n[clock]\ntype = \"replay\"\ncolumn = \"at\"\nuntil = 2024-01-15T12:00:00Z\n");
    assert_eq!(
        parse_pipeline_str(&text).unwrap().clock,
        ClockSpec::Replay { column: "at".into(), index: 7, until: Some(until) }
    );
    assert_eq!(ok(&["clock.type=system"]).clock, ClockSpec::System);
    assert_eq!(err(&["clock.type=replay"]).field, "clock.column");
    assert_eq!(err(&["clock.type=replay", "clock.column=v"]).field, "clock.column");
    assert_eq!(err(&["clock.type=replay", "clock.column=at", "clock.until=noon"]).field, "clock.until");
    assert_eq!(err(&["clock.type=replay", "clock.column=at", "clock.until=5"]).field, "clock.until");
    assert_eq!(err(&["clock.type=system", "clock.column=at"]).field, "clock.column");
    assert_eq!(err(&["clock.type=wall"]).field, "clock.type");
}

#[test]
fn sink_is_required_and_typed() {
    assert_eq!(err_text(BASE.split("[sink]").next().unwrap()).field, "sink");
    assert_eq!(err_text(&BASE.replace("type = \"stdout\"", "")).field, "sink.type");
    assert_eq!(err(&["sink.type=s3"]).field, "sink.type");
    let e = err(&["sink.path=out"]);
    assert_eq!(e.to_string(), "sink.path: given \"out\" (not a field of sink type \"stdout\"); allowed: type, format");
    assert_eq!(err(&["sink.type=files"]).field, "sink.path");
    assert_eq!(ok(&["sink.type=files", "sink.path=out"]).sink, SinkSpec::Files { path: "out".into() });
    assert_eq!(err(&["sink.format=csv"]).field, "sink.format");
    assert_eq!(ok(&["sink.format=json"]).sink, SinkSpec::Stdout);
}

#[test]
fn foreach_sink_names_a_writer_and_takes_the_main_sink_only() {
    assert_eq!(ok(&["sink.type=foreach", "sink.name=alerts"]).sink, SinkSpec::Foreach { name: "alerts".into() });
    assert_eq!(err(&["sink.type=foreach"]).field, "sink.name");
    assert_eq!(err(&["sink.type=foreach", "sink.name= "]).field, "sink.name");
    assert_eq!(err(&["sink.type=foreach", "sink.name=a", "sink.path=out"]).field, "sink.path");
    assert_eq!(err(&["late_sink.type=foreach", "late_sink.name=a"]).field, "late_sink.type");
    assert_eq!(err(&["dead_letter.type=foreach", "dead_letter.name=a"]).field, "dead_letter.type");
}

#[test]
fn kafka_sink_key_columns_are_output_columns() {
    let base = ["sink.type=kafka", "sink.bootstrap_servers=b:1", "sink.topic=o"];
    let with = |extra: &[&'static str]| base.iter().copied().chain(extra.iter().copied()).collect::<Vec<_>>();
    let p = ok(&with(&[
        "sink.key=[\"window\", \"k\"]",
        "sink.exactly_once=true",
        "sink.properties={ \"acks\" = \"all\" }",
    ]));
    let SinkSpec::Kafka { key, exactly_once, properties, .. } = p.sink else { panic!() };
    assert_eq!((key, exactly_once), (vec!["window".to_string(), "k".to_string()], true));
    assert_eq!(properties.get("acks").map(String::as_str), Some("all"));
    let e = err(&with(&["sink.key=[\"ts\"]"]));
    assert_eq!(e.to_string(), "sink.key[0]: given \"ts\"; allowed: an output column: window, k, count(1)");
    assert_eq!(err(&with(&["sink.key=[\"k\", \"k\"]"])).field, "sink.key[1]");
    assert_eq!(err(&["sink.type=kafka", "sink.topic=o"]).field, "sink.bootstrap_servers");
    assert_eq!(err(&["sink.type=kafka", "sink.bootstrap_servers=b:1"]).field, "sink.topic");
}

#[test]
fn delta_sink_takes_a_path_and_output_partition_columns() {
    let delta = ["sink.type=delta", "sink.path=out", "query.output_mode=append"];
    let with = |extra: &[&'static str]| delta.iter().copied().chain(extra.iter().copied()).collect::<Vec<_>>();
    assert_eq!(ok(&delta).sink, SinkSpec::Delta { path: "out".into(), partition_by: vec![] });
    // names resolve ignoring case and take the column's spelling
    let p = ok(&with(&["sink.partition_by=[\"K\"]"]));
    assert_eq!(p.sink, SinkSpec::Delta { path: "out".into(), partition_by: vec!["k".into()] });
    assert_eq!(
        ok(&with(&["query.output_mode=complete"])).sink,
        SinkSpec::Delta { path: "out".into(), partition_by: vec![] }
    );
    assert_eq!(err(&["sink.type=delta", "query.output_mode=append"]).field, "sink.path");
    assert_eq!(err(&with(&["sink.topic=t"])).field, "sink.topic");
    let e = err(&with(&["sink.partition_by=[\"ts\"]"]));
    assert_eq!(e.to_string(), "sink.partition_by[0]: given \"ts\"; allowed: an output column: window, k, count(1)");
    assert_eq!(err(&with(&["sink.partition_by=[\"k\", \"K\"]"])).field, "sink.partition_by[1]");
    let e = err(&with(&["sink.partition_by=[\"window\"]"]));
    assert_eq!(e.field, "sink.partition_by[0]");
    assert!(e.to_string().contains("scalar type"), "{e}");
    // the late and dead-letter sinks append records: their own columns, any output mode
    let p = ok(&["late_sink.type=delta", "late_sink.path=late", "late_sink.partition_by=[\"k\"]"]);
    assert_eq!(p.late_sink, Some(SinkSpec::Delta { path: "late".into(), partition_by: vec!["k".into()] }));
    assert!(
        ok(&["dead_letter.type=delta", "dead_letter.path=dl", "dead_letter.partition_by=[\"reason\"]"])
            .dead_letter
            .is_some()
    );
    assert_eq!(
        err(&["late_sink.type=delta", "late_sink.path=late", "late_sink.partition_by=[\"x\"]"]).field,
        "late_sink.partition_by[0]"
    );
}

#[test]
fn delta_sink_takes_an_s3_url_as_written_and_refuses_other_urls_rather_than_making_a_folder_of_them() {
    let p = ok(&["sink.type=delta", "sink.path=s3://bucket/tables/t", "query.output_mode=append"]);
    assert_eq!(p.sink, SinkSpec::Delta { path: "s3://bucket/tables/t".into(), partition_by: vec![] });
    let p = ok(&["late_sink.type=delta", "late_sink.path=s3://b"]);
    assert_eq!(p.late_sink, Some(SinkSpec::Delta { path: "s3://b".into(), partition_by: vec![] }));
    for url in ["gs://b/t", "az://c/t", "file:///tmp/t", "s3:///no-bucket", "S3+x://b/t"] {
        let set = format!("sink.path={url}");
        let e = err(&["sink.type=delta", &set, "query.output_mode=append"]);
        assert_eq!(e.field, "sink.path", "{url}");
        assert!(e.allowed.contains("s3://bucket/prefix") && e.allowed.contains("not supported"), "{e}");
    }
    let e = err(&["late_sink.type=delta", "late_sink.path=gs://b/late"]);
    assert_eq!(e.field, "late_sink.path");
    // a folder whose name holds a colon is still a folder
    assert_eq!(
        ok(&["sink.type=delta", "sink.path=out/a:b", "query.output_mode=append"]).sink,
        SinkSpec::Delta { path: "out/a:b".into(), partition_by: vec![] }
    );
    assert_eq!(url_scheme(Path::new("s3://b/t")), Some("s3"));
    assert_eq!(url_scheme(Path::new("out/a:b")), None);
    assert_eq!(url_scheme(Path::new("1x://b")), None);
}

#[test]
fn an_s3_url_is_not_joined_to_the_pipeline_folder_and_a_local_path_is() {
    let mut p = ok(&[
        "sink.type=delta",
        "sink.path=s3://bucket/t",
        "query.output_mode=append",
        "late_sink.type=delta",
        "late_sink.path=late",
    ]);
    p.resolve_paths(Path::new("/base"));
    assert_eq!(p.sink, SinkSpec::Delta { path: "s3://bucket/t".into(), partition_by: vec![] });
    assert_eq!(p.late_sink, Some(SinkSpec::Delta { path: "/base/late".into(), partition_by: vec![] }));
}

#[test]
fn delta_sink_refuses_update_mode_with_the_reason() {
    let e = err(&["sink.type=delta", "sink.path=out"]);
    assert_eq!(e.field, "query.output_mode");
    assert_eq!(e.given, "\"update\"");
    assert!(e.allowed.contains("Spark's Delta sink refuses update mode"), "{e}");
    let e = err(&["sink.type=delta", "sink.path=out", "query.output_mode=update"]);
    assert_eq!(e.field, "query.output_mode");
}

#[test]
fn late_and_dead_letter_sinks_have_the_sink_shape_and_their_own_keys() {
    let p = ok(&["late_sink.type=files", "late_sink.path=late", "dead_letter.type=stdout"]);
    assert_eq!((p.late_sink, p.dead_letter), (Some(SinkSpec::Files { path: "late".into() }), Some(SinkSpec::Stdout)));
    let kafka = |s: &str, key: &str| {
        vec![
            format!("{s}.type=kafka"),
            format!("{s}.bootstrap_servers=b"),
            format!("{s}.topic=x"),
            format!("{s}.key=[\"{key}\"]"),
        ]
    };
    let run =
        |v: Vec<String>| parse_pipeline_with_overrides(BASE, &sets(&v.iter().map(String::as_str).collect::<Vec<_>>()));
    assert!(run(kafka("late_sink", "ts")).is_ok());
    assert_eq!(run(kafka("late_sink", "count(1)")).unwrap_err().field, "late_sink.key[0]");
    assert!(run(kafka("dead_letter", "source")).is_ok());
    assert_eq!(run(kafka("dead_letter", "k")).unwrap_err().field, "dead_letter.key[0]");
    assert_eq!(err(&["late_sink.type=files"]).field, "late_sink.path");
}

#[test]
fn checkpoint_keep_is_at_least_one() {
    assert_eq!(ok(&["checkpoint.path=ck"]).checkpoint, Some(CheckpointSpec { path: "ck".into(), keep: 3 }));
    assert_eq!(ok(&["checkpoint.path=ck", "checkpoint.keep=1"]).checkpoint.unwrap().keep, 1);
    assert_eq!(err(&["checkpoint.path=ck", "checkpoint.keep=0"]).field, "checkpoint.keep");
    assert_eq!(err(&["checkpoint.keep=2"]).field, "checkpoint.path");
}

#[test]
fn checkpoint_path_may_be_an_s3_url_and_is_not_made_relative() {
    let mut p = ok(&["checkpoint.path=s3://bucket/checkpoints"]);
    p.resolve_paths(std::path::Path::new("/pipelines"));
    assert_eq!(p.checkpoint.unwrap().path, std::path::PathBuf::from("s3://bucket/checkpoints"));
    let mut p = ok(&["checkpoint.path=ck"]);
    p.resolve_paths(std::path::Path::new("/pipelines"));
    assert_eq!(p.checkpoint.unwrap().path, std::path::PathBuf::from("/pipelines/ck"));
    for bad in ["gs://bucket/ck", "s3:///ck", "file:///tmp/ck"] {
        let e = err(&[&format!("checkpoint.path={bad}")]);
        assert_eq!(e.field, "checkpoint.path", "{bad}");
        assert!(e.to_string().contains("s3://bucket/prefix"), "{bad}: {e}");
    }
}

#[test]
fn metrics_listen_is_a_socket_address() {
    let text = format!("{BASE}\n[metrics]\n");
    assert_eq!(parse_pipeline_str(&text).unwrap().metrics.unwrap().listen.to_string(), "127.0.0.1:9464");
    assert_eq!(ok(&["metrics.listen=0.0.0.0:9000"]).metrics.unwrap().listen.port(), 9000);
    assert_eq!(ok(&["metrics.listen=[::1]:9464"]).metrics.unwrap().listen.to_string(), "[::1]:9464");
    assert_eq!(err(&["metrics.listen=localhost"]).field, "metrics.listen");
}

#[test]
fn a_sql_field_is_refused_by_a_reader_without_a_sql_front_end() {
    let text = "name = \"p\"\n[source]\ntype = \"stdin\"\nschema = \"a BIGINT\"\nfilter = \"a > 0\"\n[query]\ntype = \"deduplicate\"\n[sink]\ntype = \"stdout\"\n";
    let e = crate::spec::parse_pipeline_str(text).err().map(|e| (e.field, e.given));
    assert_eq!(e, Some(("source.filter".to_string(), "\"a > 0\"".to_string())));
}
