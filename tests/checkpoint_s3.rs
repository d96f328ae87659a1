//! Checkpoints in S3-compatible object storage (`[checkpoint] path = "s3://bucket/prefix"`, the
//! `s3` feature) end to end, against a real S3 server (moto, `tests/common/moto.rs`; each test
//! is skipped, saying so, only when moto is not installed and `CI` is unset):
//! - golden cases (micro-batch and real-time) stopped in the middle (the test-only
//!   `EDDY_TEST_STOP_AFTER`) with their checkpoint on S3 and restarted with another
//!   `parallelism` write the same batches as an uninterrupted run, and the expected output; the
//!   checkpoint is in the bucket, and nothing of it on the local disk;
//! - a store that cannot be reached ends the run with exit 1 after the bound
//!   (`EDDY_CHECKPOINT_UNREACHABLE_TIMEOUT_MS`), naming the store, with a warning per attempt;
//! - a malformed bound is exit 2 at `checkpoint.path`;
//! - a shared Kafka group (issue 26) moves partitions between processes through its checkpoint
//!   on S3 (with the real test broker, `tests/kafka_common`).

mod common;
mod kafka_common;
#[path = "common/moto.rs"]
mod moto;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Output};

use common::{compare_all, copy_dir, root};
use eddy_actors::checkpoint::CheckpointStore;
use eddy_actors::checkpoint::object::{ObjectCheckpointStore, ObjectStoreOptions};
use moto::Moto;

/// `eddy run` of the case copy in `dir` with its checkpoint at `checkpoint` (none: `None`),
/// `parallelism` partition actors, the test-only stop after batch / epoch `stop_after`, and
/// these extra environment variables.
fn run(
    dir: &Path,
    checkpoint: Option<&str>,
    parallelism: usize,
    stop_after: Option<u64>,
    env: &[(&str, String)],
) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_eddy"));
    cmd.arg("run").arg(dir.join("pipeline.toml")).args([
        "--no-progress",
        "--set",
        &format!("parallelism={parallelism}"),
    ]);
    if let Some(ck) = checkpoint {
        cmd.args(["--set", &format!("checkpoint.path={ck}")]);
    }
    if let Some(k) = stop_after {
        cmd.env("EDDY_TEST_STOP_AFTER", k.to_string());
    }
    cmd.env("EDDY_LOG", "info").envs(env.iter().cloned()).output().unwrap()
}

/// The lines of each committed batch / epoch file in `output`, sorted, by file name.
fn batches(output: &Path) -> BTreeMap<String, Vec<String>> {
    std::fs::read_dir(output)
        .unwrap()
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().to_string();
            name.starts_with("batch-").then_some(())?;
            let mut lines: Vec<String> = std::fs::read_to_string(e.path())
                .unwrap()
                .lines()
                .filter(|l| !l.trim().is_empty())
                .map(String::from)
                .collect();
            lines.sort();
            Some((name, lines))
        })
        .collect()
}

/// The pipeline's `name` (its checkpoint's sub-prefix): the first top-level `name = "..."`.
fn pipeline_name(case: &Path) -> String {
    let text = std::fs::read_to_string(case.join("pipeline.toml")).unwrap();
    text.lines()
        .take_while(|l| !l.trim_start().starts_with('['))
        .find_map(|l| {
            Some(l.trim().strip_prefix("name")?.trim().strip_prefix('=')?.trim().trim_matches('"').to_string())
        })
        .expect("a top-level name")
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn cases_stopped_and_restarted_from_an_s3_checkpoint_write_what_an_uninterrupted_run_writes() {
    let Some(moto) =
        Moto::start_or_skip("cases_stopped_and_restarted_from_an_s3_checkpoint_write_what_an_uninterrupted_run_writes")
    else {
        return;
    };
    // micro-batch: session windows (append), deduplication with state expiry, update mode;
    // real-time: deduplication
    let cases = [
        root().join("../shared/cases/session-merge-append"),
        root().join("tests/cases/dedup-within-watermark-expiry"),
        root().join("../shared/cases/tumbling-update"),
        root().join("tests/realtime/dedup-within-watermark"),
    ];
    let mut failures = Vec::new();
    for case in &cases {
        let name = case.file_name().unwrap().to_string_lossy().to_string();
        let tmp = tempfile::tempdir().unwrap();
        let whole = tmp.path().join("whole");
        copy_dir(case, &whole);
        let out = run(&whole, None, 2, None, &[]);
        assert!(out.status.success(), "{name}, uninterrupted: {}", stderr(&out));
        let uninterrupted = batches(&whole.join("output"));
        let last = uninterrupted
            .keys()
            .last()
            .and_then(|n| n.strip_prefix("batch-")?.strip_suffix(".jsonl")?.parse::<u64>().ok());
        let middle = last.unwrap_or(0) / 2;
        for (stop_after, before, after) in [(0, 1, 3), (middle, 3, 2)] {
            let url = format!("s3://eddy/{name}-{stop_after}/checkpoints");
            let dir = tmp.path().join(format!("stop-{stop_after}"));
            copy_dir(case, &dir);
            let what = format!("{name}, stop after {stop_after}, parallelism {before} -> {after}");
            let first = run(&dir, Some(&url), before, Some(stop_after), &moto.env());
            if !first.status.success() {
                failures.push(format!("{what}: the first run: exit {:?}: {}", first.status.code(), stderr(&first)));
                continue;
            }
            let store = ObjectCheckpointStore::open_s3(
                &format!("{url}/{}", pipeline_name(case)),
                ObjectStoreOptions { s3: moto.options(), ..ObjectStoreOptions::default() },
            )
            .unwrap();
            let names = store.list().unwrap();
            if !names.iter().any(|n| n.starts_with("manifest-")) {
                failures.push(format!("{what}: no manifest in {}: {names:?}", store.location()));
            }
            let second = run(&dir, Some(&url), after, None, &moto.env());
            if !second.status.success() {
                failures.push(format!("{what}: the restart: exit {:?}: {}", second.status.code(), stderr(&second)));
                continue;
            }
            let restored = stderr(&second);
            if !(restored.contains("restored checkpoint") && restored.contains(&store.location())) {
                failures.push(format!("{what}: the restart did not restore from {}: {restored}", store.location()));
            }
            let output = dir.join("output");
            if batches(&output) != uninterrupted {
                failures.push(format!(
                    "{what}: the batches differ from an uninterrupted run's:\n{:?}\n{:?}",
                    batches(&output),
                    uninterrupted
                ));
            }
            if let Err(report) = compare_all(&dir.join("expected"), &output) {
                failures.push(format!("{what}: not the expected output:\n{report}"));
            }
            let local: Vec<String> =
                std::fs::read_dir(&dir).unwrap().flatten().map(|e| e.file_name().to_string_lossy().into()).collect();
            if local.iter().any(|n| n == "s3:" || n == "checkpoints" || n == "ck") {
                failures.push(format!("{what}: a checkpoint folder on the local disk: {local:?}"));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn an_unreachable_s3_checkpoint_store_ends_the_run_with_exit_1_naming_it() {
    // A closed port: every connection is refused (no moto needed).
    let endpoint = format!("http://127.0.0.1:{}", moto::free_port());
    let mut env = moto::env_for(&endpoint);
    env.push(("EDDY_CHECKPOINT_UNREACHABLE_TIMEOUT_MS", "1500".into()));
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("case");
    copy_dir(&root().join("../shared/cases/tumbling-update"), &dir);
    let started = std::time::Instant::now();
    let out = run(&dir, Some("s3://eddy/unreachable"), 1, None, &env);
    let took = started.elapsed();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    let store = format!("s3://eddy/unreachable/{}", pipeline_name(&dir));
    assert!(err.contains(&format!("the checkpoint store {store} is unreachable")), "{err}");
    assert!(err.contains("EDDY_CHECKPOINT_UNREACHABLE_TIMEOUT_MS"), "{err}");
    assert!(err.matches("retrying in").count() >= 3, "a warning per failed attempt: {err}");
    assert!(took < std::time::Duration::from_secs(20), "gave up after {took:?}");
}

#[test]
fn a_malformed_unreachable_bound_is_a_usage_error_at_checkpoint_path() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("case");
    copy_dir(&root().join("../shared/cases/tumbling-update"), &dir);
    let out = run(&dir, Some("s3://eddy/ck"), 1, None, &[("EDDY_CHECKPOINT_UNREACHABLE_TIMEOUT_MS", "soon".into())]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("checkpoint.path") && err.contains("EDDY_CHECKPOINT_UNREACHABLE_TIMEOUT_MS"), "{err}");
}

/// A shared Kafka group (issue 26) whose checkpoint is on S3: one process reads every input
/// partition, a second joins mid-run (the first checkpoints the partitions that move to S3, the
/// second restores them from there), then both stop; every key's final lifetime count and sum
/// equal the input's, no row is written twice, and each input partition has its own folder of
/// manifests in the bucket, beside the query's fingerprint. The input, partitioned otherwise
/// than by the query's key as Kafka's default partitioner places it, is reported as such.
#[test]
fn a_shared_group_moves_partitions_through_an_s3_checkpoint() {
    if !kafka_common::broker_or_skip("a_shared_group_moves_partitions_through_an_s3_checkpoint") {
        return;
    }
    let Some(moto) = Moto::start_or_skip("a_shared_group_moves_partitions_through_an_s3_checkpoint") else { return };
    let broker = kafka_common::Broker::start();
    broker.create_topic("in", 4);
    broker.create_topic("out", 1);
    let tmp = tempfile::tempdir().unwrap();
    let pipeline = tmp.path().join("group.toml");
    std::fs::write(
        &pipeline,
        format!(
            "name = \"s3-group\"\nmode = \"real-time\"\n\
             [source]\ntype = \"kafka\"\nbootstrap_servers = \"{b}\"\ntopic = \"in\"\nstarting_offsets = \"earliest\"\n\
             format = \"json\"\nschema = \"k STRING, v BIGINT, ts TIMESTAMP\"\nshared_group = true\n\
             properties = {{ \"eddy.resume\" = \"beginning\", \"session.timeout.ms\" = \"6000\", \"heartbeat.interval.ms\" = \"500\" }}\n\
             [query]\ntype = \"rolling_window\"\npartition_by = [\"k\"]\norder_by = \"ts\"\nfrontier = {{ delay = \"0 seconds\" }}\n\
             measures = [{{ agg = \"count\", column = \"v\", alias = \"n\" }}, {{ agg = \"sum\", column = \"v\", alias = \"total\" }}]\n\
             [sink]\ntype = \"kafka\"\nbootstrap_servers = \"{b}\"\ntopic = \"out\"\n\
             [checkpoint]\npath = \"s3://eddy/groups\"\n",
            b = broker.bootstrap()
        ),
    )
    .unwrap();
    let start = |i: usize| {
        Command::new(env!("CARGO_BIN_EXE_eddy"))
            .args(["run", "--no-progress"])
            .arg(&pipeline)
            .env("EDDY_LOG", "info")
            .envs(moto.env())
            .stdout(std::process::Stdio::null())
            .stderr(std::fs::File::create(tmp.path().join(format!("p{i}.log"))).unwrap())
            .spawn()
            .unwrap()
    };
    let record =
        |i: usize| format!("{{\"k\": \"u{}\", \"v\": {}, \"ts\": \"2024-05-01T00:00:{:02}Z\"}}", i % 12, i % 7, i / 50);
    let rows = |want: usize| {
        let started = std::time::Instant::now();
        loop {
            let got = broker.consume("out", Some(want + 1), 3.0);
            if got.len() >= want || started.elapsed() > std::time::Duration::from_secs(90) {
                return got;
            }
        }
    };
    let mut first = start(1);
    broker.produce("in", &(0..600).map(record).collect::<Vec<_>>(), Some("k"));
    assert_eq!(rows(600).len(), 600, "the first process's rows");
    let mut second = start(2);
    // the second joins (the group moves partitions to it) while more input arrives
    std::thread::sleep(std::time::Duration::from_secs(4));
    broker.produce("in", &(600..1200).map(record).collect::<Vec<_>>(), Some("k"));
    let out = rows(1200);
    for p in [&mut first, &mut second] {
        // SIGTERM: the process checkpoints, leaves the group and exits 0
        let killed = Command::new("kill").args(["-TERM", &p.id().to_string()]).status().unwrap();
        assert!(killed.success());
    }
    for (i, p) in [&mut first, &mut second].into_iter().enumerate() {
        let status = p.wait().unwrap();
        assert!(status.success(), "process {} exited {status}", i + 1);
    }
    let logs: Vec<String> =
        (1..=2).map(|i| std::fs::read_to_string(tmp.path().join(format!("p{i}.log"))).unwrap()).collect();
    assert!(
        logs[1].contains("shared group: a run over the assigned partitions starts"),
        "the second process got partitions:\n{}",
        logs[1]
    );
    let mut want: BTreeMap<String, (i64, i64)> = BTreeMap::new();
    for i in 0..1200 {
        let e = want.entry(format!("u{}", i % 12)).or_default();
        e.0 += 1;
        e.1 += (i % 7) as i64;
    }
    let mut finals: BTreeMap<String, (i64, i64)> = BTreeMap::new();
    let mut seen = std::collections::BTreeSet::new();
    for m in &out {
        let v: serde_json::Value = serde_json::from_str(m.value.as_deref().unwrap()).unwrap();
        let (k, n, total) =
            (v["k"].as_str().unwrap().to_string(), v["n"].as_i64().unwrap(), v["total"].as_i64().unwrap());
        assert!(seen.insert((k.clone(), n)), "row n = {n} of {k} written twice (no process was killed)");
        let f = finals.entry(k).or_default();
        *f = (*f).max((n, total));
    }
    assert_eq!(finals, want, "final per-key count and sum; logs:\n{}", logs.join("\n-----\n"));
    // kc's producer partitions by librdkafka's default (CRC-32 of the key `"u3"`), not by Kafka's
    // default partitioner over the key Eddy's sink writes (`{"k": "u3"}`): the check says so
    // (each key still stays in one partition, so the results hold).
    assert!(
        logs[0].contains("the input is not partitioned by the query's key"),
        "the misrouted-key warning:\n{}",
        logs[0]
    );
    let store = ObjectCheckpointStore::open_s3(
        "s3://eddy/groups/s3-group",
        ObjectStoreOptions { s3: moto.options(), ..ObjectStoreOptions::default() },
    )
    .unwrap();
    assert!(store.get("group-fingerprint").is_ok(), "the query's fingerprint in the shared prefix");
    for p in 0..4 {
        let part = ObjectCheckpointStore::open_s3(
            &format!("s3://eddy/groups/s3-group/partition-in-{p:05}"),
            ObjectStoreOptions { s3: moto.options(), ..ObjectStoreOptions::default() },
        )
        .unwrap();
        let names = part.list().unwrap();
        assert!(names.iter().any(|n| n.starts_with("manifest-")), "partition {p}'s manifests: {names:?}");
    }
}
