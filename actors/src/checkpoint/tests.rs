//! Tests of the checkpointer: round trips, retention, restore with a re-split, corruption.
//!
//! Expected outputs come from an operator that never went through a checkpoint, fed the same
//! records: a restored set of partition actors must emit exactly what it emits.

use std::sync::Arc;

use eddy_engine::operator::{BatchContext, Operator, Output};
use eddy_engine::plan::QueryPlan;
use eddy_engine::value::Value;
use eddy_engine::watermark::BatchWatermarks;
use eddy_engine::{Record, Timestamp};

use super::*;
use crate::routing::Router;

const PIPELINE: &str = r#"
name = "ck-test"
mode = "micro-batch"
[source]
type = "files"
path = "in"
schema = "k STRING, v BIGINT, ts TIMESTAMP"
[query]
type = "window_aggregate"
group_by = ["k"]
output_mode = "update"
measures = [{ agg = "sum", column = "v" }, { agg = "count" }]
[sink]
type = "stdout"
"#;

fn plan() -> QueryPlan {
    QueryPlan::new(&eddy_engine::spec::parse_pipeline_str(PIPELINE).unwrap()).unwrap()
}

fn fingerprint() -> Vec<FingerprintField> {
    manifest::fingerprint(&eddy_engine::spec::parse_pipeline_str(PIPELINE).unwrap())
}

fn record(i: i64) -> Record {
    Record::new(vec![Value::Str(format!("key-{}", i % 37).into()), Value::Long(i), Value::Timestamp(Timestamp(i))])
}

fn ctx(batch_id: u64) -> BatchContext {
    BatchContext { batch_id, watermarks: BatchWatermarks::INITIAL, processing_time: Timestamp(batch_id as i64) }
}

/// Runs one batch of `records` over `ops` routed by `router`; returns the sorted output lines.
fn batch(ops: &mut [Box<dyn Operator>], router: &Router, id: u64, records: &[Record]) -> Vec<String> {
    let mut out = Output::default();
    for op in ops.iter_mut() {
        op.begin_batch(&ctx(id));
    }
    for r in records {
        ops[router.route(r).0].on_record(r, Timestamp::MIN, &mut out);
    }
    for op in ops.iter_mut() {
        op.end_batch(&mut out);
    }
    let mut lines: Vec<String> = out.rows.iter().map(|r| format!("{r:?}")).collect();
    lines.sort();
    lines
}

fn checkpointer(dir: &std::path::Path, keep: usize) -> Checkpointer {
    Checkpointer::new(Arc::new(FolderStore::open(dir).unwrap()), "ck-test", fingerprint(), keep)
}

/// Writes a checkpoint of `ops` at `epoch`.
fn write(ck: &Checkpointer, epoch: u64, ops: &[Box<dyn Operator>]) {
    let n = ops.len() as u32;
    let snapshots =
        ops.iter().enumerate().map(|(i, op)| ck.write_snapshot(epoch, i as u32, n, &op.snapshot()).unwrap()).collect();
    let m = Manifest {
        pipeline: "ck-test".into(),
        epoch,
        fingerprint: ck.fingerprint().to_vec(),
        parallelism: n,
        snapshots,
        source: Some(SavedOffset::Files { done: vec![format!("{epoch:03}.json")], reading: None }),
        driver: DriverState::RealTime { now: 5, max_event_time: Some(7), next_boundary: None },
        more_sources: Vec::new(),
    };
    ck.commit(&m).unwrap();
}

fn fresh(plan: &QueryPlan, n: usize) -> Vec<Box<dyn Operator>> {
    (0..n).map(|_| plan.new_operator()).collect()
}

fn restored(ck: &Checkpointer, n: usize) -> Result<Option<Restored>, CheckpointError> {
    let plan = plan();
    let new_operator = || plan.new_operator();
    restore(ck, n, &new_operator, &Router::new(plan.routing_columns(), n))
}

#[test]
fn a_restored_checkpoint_continues_as_the_uninterrupted_run_with_any_parallelism() {
    let plan = plan();
    let first: Vec<Record> = (0..500).map(record).collect();
    let second: Vec<Record> = (500..900).map(record).collect();
    let one = Router::new(plan.routing_columns(), 1);
    let mut reference = fresh(&plan, 1);
    batch(&mut reference, &one, 0, &first);
    let expected = batch(&mut reference, &one, 1, &second);
    assert!(!expected.is_empty());

    let dir = tempfile::tempdir().unwrap();
    let ck = checkpointer(dir.path(), 3);
    let three = Router::new(plan.routing_columns(), 3);
    let mut ops = fresh(&plan, 3);
    batch(&mut ops, &three, 0, &first);
    write(&ck, 0, &ops);
    for m in [1, 2, 3, 5] {
        let r = restored(&ck, m).unwrap().expect("a checkpoint");
        assert_eq!(r.manifest.epoch, 0);
        assert_eq!(r.operators.len(), m);
        let total: usize = r.operators.iter().map(|o| o.state_len()).sum();
        assert_eq!(total, ops.iter().map(|o| o.state_len()).sum::<usize>(), "parallelism {m}");
        let mut restored_ops = r.operators;
        let got = batch(&mut restored_ops, &Router::new(plan.routing_columns(), m), 1, &second);
        assert_eq!(got, expected, "parallelism 3 -> {m}");
    }
}

#[test]
fn only_the_newest_keep_checkpoints_and_their_snapshots_remain() {
    let plan = plan();
    let dir = tempfile::tempdir().unwrap();
    let ck = checkpointer(dir.path(), 2);
    let ops = fresh(&plan, 2);
    // An in-flight snapshot of a later epoch must survive pruning.
    ck.write_snapshot(9, 0, 2, &ops[0].snapshot()).unwrap();
    for e in 0..5 {
        write(&ck, e, &ops);
    }
    assert_eq!(ck.manifests().unwrap(), vec![3, 4]);
    let mut names = ck.store().list().unwrap();
    names.sort();
    let expected: Vec<String> = vec![
        manifest_name(3),
        manifest_name(4),
        snapshot_name(3, 0),
        snapshot_name(3, 1),
        snapshot_name(4, 0),
        snapshot_name(4, 1),
        snapshot_name(9, 0),
    ];
    let mut expected = expected;
    expected.sort();
    assert_eq!(names, expected);
}

/// Two checkpoints (epochs 0 and 1) of different states, in `dir`.
fn two_checkpoints(dir: &std::path::Path) -> Checkpointer {
    let plan = plan();
    let ck = checkpointer(dir, 3);
    let router = Router::new(plan.routing_columns(), 2);
    let mut ops = fresh(&plan, 2);
    batch(&mut ops, &router, 0, &(0..10).map(record).collect::<Vec<_>>());
    write(&ck, 0, &ops);
    batch(&mut ops, &router, 1, &(10..100).map(record).collect::<Vec<_>>());
    write(&ck, 1, &ops);
    ck
}

fn damage(dir: &std::path::Path, name: &str, f: impl FnOnce(&mut Vec<u8>)) {
    let path = dir.join(name);
    let mut bytes = std::fs::read(&path).unwrap();
    f(&mut bytes);
    std::fs::write(&path, bytes).unwrap();
}

#[test]
fn a_damaged_newest_checkpoint_falls_back_to_the_one_before() {
    type Damage = Box<dyn Fn(&std::path::Path)>;
    let cases: Vec<(&str, Damage)> = vec![
        ("truncated snapshot", Box::new(|d| damage(d, &snapshot_name(1, 1), |b| b.truncate(b.len() / 2)))),
        ("flipped snapshot byte", Box::new(|d| damage(d, &snapshot_name(1, 0), |b| *b.last_mut().unwrap() ^= 1))),
        ("flipped manifest byte", Box::new(|d| damage(d, &manifest_name(1), |b| b[40] ^= 0x10))),
        ("missing snapshot", Box::new(|d| std::fs::remove_file(d.join(snapshot_name(1, 0))).unwrap())),
        ("missing manifest", Box::new(|d| std::fs::remove_file(d.join(manifest_name(1))).unwrap())),
    ];
    for (what, f) in cases {
        let dir = tempfile::tempdir().unwrap();
        let ck = two_checkpoints(dir.path());
        f(dir.path());
        let r = restored(&ck, 2).unwrap().unwrap_or_else(|| panic!("{what}: nothing restored"));
        assert_eq!(r.manifest.epoch, 0, "{what}");
        assert_eq!(r.operators.iter().map(|o| o.state_len()).sum::<usize>(), 10, "{what}: epoch 0 holds 10 keys");
        assert_eq!(ck.manifests().unwrap(), vec![0], "{what}: the unusable newer manifest is gone");
    }
}

#[test]
fn no_usable_checkpoint_is_an_error_naming_each_reason_and_none_is_a_first_start() {
    let dir = tempfile::tempdir().unwrap();
    let ck = two_checkpoints(dir.path());
    damage(dir.path(), &snapshot_name(1, 0), |b| b.truncate(10));
    damage(dir.path(), &manifest_name(0), |b| b.truncate(10));
    let err = restored(&ck, 2).unwrap_err().to_string();
    assert!(err.contains("no usable checkpoint") && err.contains("epoch 1") && err.contains("epoch 0"), "{err}");
    let empty = tempfile::tempdir().unwrap();
    assert!(restored(&checkpointer(empty.path(), 3), 2).unwrap().is_none());
}

#[test]
fn a_changed_query_is_refused_naming_the_field() {
    let dir = tempfile::tempdir().unwrap();
    two_checkpoints(dir.path());
    let changed = PIPELINE.replace(r#"{ agg = "count" }"#, r#"{ agg = "max", column = "v" }"#);
    let p = eddy_engine::spec::parse_pipeline_str(&changed).unwrap();
    let ck =
        Checkpointer::new(Arc::new(FolderStore::open(dir.path()).unwrap()), "ck-test", manifest::fingerprint(&p), 3);
    let plan = QueryPlan::new(&p).unwrap();
    let new_operator = || plan.new_operator();
    let err = restore(&ck, 2, &new_operator, &Router::new(plan.routing_columns(), 2)).unwrap_err();
    assert!(matches!(err, CheckpointError::Incompatible { epoch: 1, .. }), "{err}");
    let msg = err.to_string();
    assert!(msg.contains(r#"query.measures[1].agg: the checkpoint has "count", the pipeline has "max""#), "{msg}");
    assert!(msg.contains(r#"query.measures[1].column: the checkpoint has "*", the pipeline has "v""#), "{msg}");
}

const SQL_PIPELINE: &str = r#"
name = "ck-sql"
mode = "micro-batch"
[[source]]
name = "events"
type = "files"
path = "in"
schema = "user_id STRING, ts_ms BIGINT, amount BIGINT, status STRING"
filter = "status <> 'test'"
select = ["*", "timestamp_millis(ts_ms) AS ts", "amount * 10 AS amount_x10"]
watermark = { column = "ts", delay = "5 seconds" }
[query]
sql = """
SELECT window(ts, '10 seconds') AS window, user_id, sum(amount_x10) AS total
FROM events WHERE amount > 0 GROUP BY 1, 2
"""
output_mode = "append"
[sink]
type = "stdout"
"#;

fn sql_fingerprint(text: &str) -> Vec<FingerprintField> {
    manifest::fingerprint(&eddy_sql::parse_pipeline_str(text).unwrap_or_else(|e| panic!("{e}")))
}

#[test]
fn an_unchanged_sql_pipeline_with_a_source_select_matches_its_checkpoint() {
    let written = sql_fingerprint(SQL_PIPELINE);
    assert_eq!(manifest::differences(&written, &sql_fingerprint(SQL_PIPELINE)), Vec::<String>::new());
    // the source's steps as written: one filter and one select (the query's WHERE and
    // projection are not the source's)
    let count = |field: &str| written.iter().filter(|f| f.field == field).count();
    assert_eq!((count("source.filter"), count("source.select")), (1, 1), "{written:?}");
}

#[test]
fn a_changed_sql_where_is_refused_naming_query_sql() {
    let changed = SQL_PIPELINE.replace("WHERE amount > 0", "WHERE amount > 1");
    let changes = manifest::differences(&sql_fingerprint(SQL_PIPELINE), &sql_fingerprint(&changed));
    assert_eq!(changes.len(), 1, "{changes:?}");
    assert!(changes[0].starts_with("query.sql: the checkpoint has \"SELECT"), "{changes:?}");
    assert!(changes[0].contains("amount > 1"), "{changes:?}");
}

/// A version-1 file (the layout of the envelope's documentation): the header with the CRC-32 of
/// the payload at offset 24, then the payload.
fn v1_file(kind: u16, payload: &[u8]) -> Vec<u8> {
    let mut f = vec![0u8; envelope::HEADER_LEN];
    f[0..8].copy_from_slice(b"EDDYCKPT");
    f[8..10].copy_from_slice(&1u16.to_le_bytes());
    f[10..12].copy_from_slice(&kind.to_le_bytes());
    f[16..24].copy_from_slice(&(payload.len() as u64).to_le_bytes());
    f[24..28].copy_from_slice(&crc32fast::hash(payload).to_le_bytes());
    f.extend_from_slice(payload);
    f
}

#[test]
fn a_checkpoint_written_in_format_version_1_still_restores() {
    let plan = plan();
    let first: Vec<Record> = (0..300).map(record).collect();
    let second: Vec<Record> = (300..600).map(record).collect();
    let two = Router::new(plan.routing_columns(), 2);
    let mut ops = fresh(&plan, 2);
    batch(&mut ops, &two, 0, &first);
    let mut reference = fresh(&plan, 2);
    batch(&mut reference, &two, 0, &first);
    let expected = batch(&mut reference, &two, 1, &second);

    let dir = tempfile::tempdir().unwrap();
    let ck = checkpointer(dir.path(), 3);
    let mut snapshots = Vec::new();
    for (i, op) in ops.iter().enumerate() {
        let file = SnapshotFile { epoch: 4, partition: i as u32, parallelism: 2, state: op.snapshot() };
        let bytes = v1_file(1, &rkyv::to_bytes::<rancor::Error>(&file).unwrap());
        ck.store().put(&snapshot_name(4, i as u32), &[&bytes]).unwrap();
        snapshots.push(SnapshotMeta { partition: i as u32, bytes: bytes.len() as u64, crc32: crc32fast::hash(&bytes) });
    }
    let m = manifest::v2::Manifest {
        pipeline: "ck-test".into(),
        epoch: 4,
        fingerprint: ck.fingerprint().to_vec(),
        parallelism: 2,
        snapshots,
        source: Some(manifest::v2::SavedOffset2::Files { file: "b.json".into(), line: 3 }),
        driver: DriverState::RealTime { now: 5, max_event_time: None, next_boundary: None },
    };
    ck.store().put(&manifest_name(4), &[&v1_file(2, &rkyv::to_bytes::<rancor::Error>(&m).unwrap())]).unwrap();
    for n in [2, 3] {
        let r = restored(&ck, n).unwrap().expect("the version-1 checkpoint");
        assert_eq!(r.manifest, Manifest::from(m.clone()));
        assert_eq!(r.manifest.source, Some(SavedOffset::FilesInNameOrder { file: "b.json".into(), line: 3 }));
        let mut restored_ops = r.operators;
        assert_eq!(batch(&mut restored_ops, &Router::new(plan.routing_columns(), n), 1, &second), expected, "2 -> {n}");
    }
}

#[test]
fn a_manifest_written_in_format_version_2_still_restores_with_its_files_offset() {
    let plan = plan();
    let dir = tempfile::tempdir().unwrap();
    let ck = checkpointer(dir.path(), 3);
    let ops = fresh(&plan, 1);
    let snapshots = vec![ck.write_snapshot(2, 0, 1, &ops[0].snapshot()).unwrap()];
    let m = manifest::v2::Manifest {
        pipeline: "ck-test".into(),
        epoch: 2,
        fingerprint: ck.fingerprint().to_vec(),
        parallelism: 1,
        snapshots,
        source: Some(manifest::v2::SavedOffset2::Files { file: "002.json".into(), line: u64::MAX }),
        driver: DriverState::RealTime { now: 5, max_event_time: Some(7), next_boundary: None },
    };
    // A version-2 file: the version-3 layout with version 2 in its header.
    let payload = rkyv::to_bytes::<rancor::Error>(&m).unwrap();
    let mut file = envelope::header(envelope::Kind::Manifest, payload.len() as u64).to_vec();
    file[8..10].copy_from_slice(&2u16.to_le_bytes());
    file.extend_from_slice(&payload);
    file.extend_from_slice(&envelope::trailer(crc32fast::hash(&payload)));
    ck.store().put(&manifest_name(2), &[&file]).unwrap();
    let r = restored(&ck, 1).unwrap().expect("the version-2 checkpoint");
    assert_eq!(r.manifest.source, Some(SavedOffset::FilesInNameOrder { file: "002.json".into(), line: u64::MAX }));
    assert_eq!(r.manifest.driver, m.driver);
}

#[test]
fn a_manifest_written_in_format_version_3_still_restores_as_one_source() {
    let plan = plan();
    let dir = tempfile::tempdir().unwrap();
    let ck = checkpointer(dir.path(), 3);
    let ops = fresh(&plan, 1);
    let snapshots = vec![ck.write_snapshot(3, 0, 1, &ops[0].snapshot()).unwrap()];
    let m = manifest::v3::Manifest {
        pipeline: "ck-test".into(),
        epoch: 3,
        fingerprint: ck.fingerprint().to_vec(),
        parallelism: 1,
        snapshots,
        source: Some(SavedOffset::Files { done: vec!["001.json".into()], reading: None }),
        driver: DriverState::RealTime { now: 5, max_event_time: Some(7), next_boundary: None },
    };
    // A version-3 file: the version-4 envelope with version 3 in its header.
    let payload = rkyv::to_bytes::<rancor::Error>(&m).unwrap();
    let mut file = envelope::header(envelope::Kind::Manifest, payload.len() as u64).to_vec();
    file[8..10].copy_from_slice(&3u16.to_le_bytes());
    file.extend_from_slice(&payload);
    file.extend_from_slice(&envelope::trailer(crc32fast::hash(&payload)));
    ck.store().put(&manifest_name(3), &[&file]).unwrap();
    let r = restored(&ck, 1).unwrap().expect("the version-3 checkpoint");
    assert_eq!(r.manifest.source, m.source);
    assert_eq!(r.manifest.driver, m.driver);
    assert!(r.manifest.more_sources.is_empty(), "{:?}", r.manifest.more_sources);
}

#[test]
fn a_manifest_keeps_each_further_source_offset_and_event_time() {
    let plan = plan();
    let dir = tempfile::tempdir().unwrap();
    let ck = checkpointer(dir.path(), 3);
    let ops = fresh(&plan, 1);
    let snapshots = vec![ck.write_snapshot(1, 0, 1, &ops[0].snapshot()).unwrap()];
    let more = vec![manifest::SavedSource {
        name: "slow".into(),
        offset: Some(SavedOffset::Files {
            done: vec!["a.json".into()],
            reading: Some(manifest::SavedFileLines { file: "b.json".into(), line: 2 }),
        }),
        max_event_time: Some(42),
    }];
    let m = Manifest {
        pipeline: "ck-test".into(),
        epoch: 1,
        fingerprint: ck.fingerprint().to_vec(),
        parallelism: 1,
        snapshots,
        source: Some(SavedOffset::Files { done: vec!["x.json".into()], reading: None }),
        driver: DriverState::RealTime { now: 5, max_event_time: Some(7), next_boundary: None },
        more_sources: more.clone(),
    };
    ck.commit(&m).unwrap();
    let r = restored(&ck, 1).unwrap().expect("the checkpoint");
    assert_eq!(r.manifest.more_sources, more);
}

#[test]
fn the_application_id_is_created_with_the_checkpoint_and_kept_by_later_runs() {
    let dir = tempfile::tempdir().unwrap();
    let first = {
        let ck = checkpointer(dir.path(), 3);
        let id = ck.application_id().unwrap();
        assert!(uuid::Uuid::parse_str(&id).is_ok(), "{id}");
        assert_eq!(ck.application_id().unwrap(), id);
        id
    };
    // a later run of the same checkpoint folder reads the same id; it survives retention
    let ck = checkpointer(dir.path(), 1);
    let ops = fresh(&plan(), 1);
    for epoch in 0..3 {
        write(&ck, epoch, &ops);
    }
    assert_eq!(ck.application_id().unwrap(), first);
    // another checkpoint folder: another id
    let other = tempfile::tempdir().unwrap();
    assert_ne!(checkpointer(other.path(), 3).application_id().unwrap(), first);
    // a damaged id is an error naming the blob, not a new id
    std::fs::write(dir.path().join("application-id"), b"not a uuid").unwrap();
    let e = ck.application_id().unwrap_err();
    assert!(e.to_string().contains("application-id"), "{e}");
}

#[test]
fn a_manifest_keeps_where_the_round_robin_over_several_sources_stood() {
    let plan = plan();
    let dir = tempfile::tempdir().unwrap();
    let ck = checkpointer(dir.path(), 3);
    let ops = fresh(&plan, 1);
    let snapshots = vec![ck.write_snapshot(1, 0, 1, &ops[0].snapshot()).unwrap()];
    let driver = DriverState::RealTimeSources {
        now: 5,
        max_event_time: Some(7),
        next_boundary: Some(10),
        next_source: 1,
        rest_of_poll: 3,
    };
    let m = Manifest {
        pipeline: "ck-test".into(),
        epoch: 1,
        fingerprint: ck.fingerprint().to_vec(),
        parallelism: 1,
        snapshots,
        source: Some(SavedOffset::Files { done: vec!["x.json".into()], reading: None }),
        driver: driver.clone(),
        more_sources: Vec::new(),
    };
    ck.commit(&m).unwrap();
    let r = restored(&ck, 1).unwrap().expect("the checkpoint");
    assert_eq!(r.manifest.driver, driver);
}

#[test]
fn the_archived_driver_state_keeps_the_size_it_had_before_the_round_robin_variant() {
    // The variant added last is no larger than `MicroBatch`, so manifests written before it
    // (whose `Manifest` layout includes this size) keep their layout.
    assert_eq!(std::mem::size_of::<manifest::ArchivedDriverState>(), DRIVER_STATE_ARCHIVED_BYTES);
}

/// `size_of::<ArchivedDriverState>()` of the manifests written before
/// `DriverState::RealTimeSources` existed: its largest variant, `MicroBatch` (the tag padded to
/// 8, four 8-byte integers, an archived `Option<i64>` of 16 and an `Option<[i64; 2]>` of 24).
const DRIVER_STATE_ARCHIVED_BYTES: usize = 80;
