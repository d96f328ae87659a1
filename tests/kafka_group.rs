//! Several `eddy run` processes in one Kafka consumer group (`[source] shared_group = true`,
//! issue 26), on a real broker.
//!
//! - Two processes of each of two pipelines (a rolling window with lifetime count and sum per
//!   key, one row per record; a tumbling window aggregate in update mode), the second joining
//!   while the input (8 partitions, 40 keys, partitioned by Kafka's default partitioner over
//!   the key the Kafka sink writes, `{"k": "u3"}`) is produced at a steady rate: the final
//!   per-key results equal a brute-force count over the input, with no row twice (graceful
//!   rebalances checkpoint before they hand a partition over). Then one process of each is
//!   killed with SIGKILL mid-run: the survivor holds all 8 partitions within the session timeout
//!   (plus a margin for a loaded machine); another joins and gets partitions; the final results
//!   still equal the brute-force count and a single-process run's. Nothing is lost (every
//!   rolling row `n = 1..count` of every key is there, with its running sum); rows are repeated
//!   only for keys of the killed process's partitions, one contiguous run of `n` per key (what
//!   it wrote after its partitions' last checkpoints, read again by their next owner).
//!   Epochs are not compared one by one as scripts/crash-test-kafka.sh does: each process
//!   numbers its own epochs (from the largest it restored), so an epoch number names no one cut
//!   of the input across processes; the rows are compared per key instead.
//! - The same with three processes, then a fourth (issue 26's acceptance). The test broker,
//!   tansu 0.6.0, runs the group protocol otherwise than Kafka in three ways the tests work
//!   around (README "Running several instances"): with three members the pipelines use an eager
//!   assignment strategy (`roundrobin`: tansu gives the leader the other members' metadata of
//!   their first join, so a cooperative assignor sees no partition as owned; with two, the
//!   default cooperative-sticky, whose leader's own view is the whole truth); the process killed is not the group's
//!   leader (tansu keeps a dead leader); and with three processes the fourth joins once the
//!   killed one's session is over, without waiting for its partitions to move first (tansu
//!   drops an expired member without a new generation for the others, so its partitions move
//!   at the next join; with two the survivor, the leader, rejoins, which the two-process test
//!   checks).
//! - Bad input: a second process with the pipeline's name and checkpoint path but another query
//!   exits 2 naming the change; `eddy validate` refuses `shared_group` with a files sink,
//!   without a checkpoint and with `parallelism`.

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

mod kafka_common;
use kafka_common::{Broker, Eddy, broker_or_skip, free_port, wait_for};

const KEYS: usize = 40;
const PARTITIONS: u32 = 8;
/// Records per half of the input (the first before the kill, the second around it).
const HALF: usize = 2000;
/// Input records per second (the producer's rate): each half takes ~20 s.
const RATE: u32 = 100;
const SESSION_TIMEOUT: Duration = Duration::from_secs(6);
/// What a loaded two-core machine may add to the session timeout before partitions move.
const MARGIN: Duration = Duration::from_secs(30);
/// The longest wait for a join, or for the output to catch up.
const LONG: Duration = Duration::from_secs(120);

/// The two pipelines, each run by several processes.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Query {
    /// Lifetime count and sum per key, one output row per record.
    Rolling,
    /// Count and sum per key and 10-second tumbling window, update mode.
    Window,
}

impl Query {
    fn name(self) -> &'static str {
        match self {
            Query::Rolling => "rolling",
            Query::Window => "window",
        }
    }

    fn text(self) -> &'static str {
        match self {
            Query::Rolling => {
                "[query]\ntype = \"rolling_window\"\npartition_by = [\"k\"]\norder_by = \"ts\"\n\
                 frontier = { delay = \"0 seconds\" }\n\
                 measures = [{ agg = \"count\", column = \"v\", alias = \"n\" }, { agg = \"sum\", column = \"v\", alias = \"total\" }]\n"
            }
            // A watermark far behind: no record is late, whichever partition is read behind.
            Query::Window => {
                "[watermark]\ncolumn = \"ts\"\ndelay = \"10 minutes\"\n\
                 [query]\ntype = \"window_aggregate\"\ngroup_by = [\"k\"]\n\
                 window = { type = \"tumbling\", column = \"ts\", size = \"10 seconds\" }\noutput_mode = \"update\"\n\
                 measures = [{ agg = \"count\", alias = \"n\" }, { agg = \"sum\", column = \"v\", alias = \"total\" }]\n"
            }
        }
    }

    /// The group of a record (`k`, `ts`) or of an output row: the key, or key and window start.
    fn group(self, k: &str, window_start: &str) -> String {
        match self {
            Query::Rolling => k.to_string(),
            Query::Window => format!("{k}@{window_start}"),
        }
    }
}

/// The group's assignment strategy.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Strategy {
    /// The default: cooperative-sticky.
    CooperativeSticky,
    /// An eager one, `roundrobin`: what tansu 0.6.0 needs with three members or more (the
    /// module documentation).
    RoundRobin,
}

/// A pipeline file running `query` from `input` to `output`: one of a shared group whose
/// checkpoints are under `checkpoint` (Some) with `strategy`, or a plain single process (None).
fn pipeline(
    dir: &Path,
    name: &str,
    query: Query,
    bootstrap: &str,
    topics: (&str, &str),
    checkpoint: Option<&Path>,
    strategy: Strategy,
) -> PathBuf {
    let (input, output) = topics;
    let group = match checkpoint {
        // The test broker needs `eddy.resume` (connectors/src/kafka/mod.rs); a short session
        // timeout moves a killed process's partitions soon.
        Some(_) => format!(
            "shared_group = true\nproperties = {{ \"eddy.resume\" = \"beginning\", \"session.timeout.ms\" = \"{}\", \"heartbeat.interval.ms\" = \"500\"{} }}\n",
            SESSION_TIMEOUT.as_millis(),
            match strategy {
                Strategy::CooperativeSticky => "",
                Strategy::RoundRobin => ", \"partition.assignment.strategy\" = \"roundrobin\"",
            }
        ),
        None => String::new(),
    };
    let ck = match checkpoint {
        Some(p) => format!("[checkpoint]\npath = \"{}\"\n", p.display()),
        None => String::new(),
    };
    let text = format!(
        "name = \"{name}\"\nmode = \"real-time\"\n\
         [source]\ntype = \"kafka\"\nbootstrap_servers = \"{bootstrap}\"\ntopic = \"{input}\"\n\
         starting_offsets = \"earliest\"\nformat = \"json\"\nschema = \"k STRING, v BIGINT, ts TIMESTAMP\"\n{group}\n\
         {}\n[sink]\ntype = \"kafka\"\nbootstrap_servers = \"{bootstrap}\"\ntopic = \"{output}\"\nkey = [\"k\"]\n\n\
         {ck}\n[metrics]\nlisten = \"127.0.0.1:9464\"\n",
        query.text()
    );
    let path = dir.join(format!("{name}.toml"));
    std::fs::write(&path, text).unwrap();
    path
}

/// Records `from..to` of the input: keys `u0`..`u39`, values from a fixed formula, event times
/// 10 ms apart from 2024-05-01T00:00:00Z.
fn records(from: usize, to: usize) -> Vec<String> {
    (from..to)
        .map(|i| {
            let k = (i * 7 + i / 3) % KEYS;
            let v = (i * 7919) % 101;
            let ms = i * 10;
            format!(
                "{{\"k\": \"u{k}\", \"v\": {v}, \"ts\": \"2024-05-01T00:{:02}:{:02}.{:03}Z\"}}",
                ms / 60_000,
                ms / 1000 % 60,
                ms % 1000
            )
        })
        .collect()
}

/// The start of the 10-second window of a record's `ts` text, as the engine writes it.
fn window_start(ts: &str) -> String {
    // "2024-05-01T00:MM:SS.fffZ"
    let (minute, second) = (&ts[14..16], &ts[17..19]);
    let s: u32 = second.parse().unwrap();
    format!("2024-05-01T00:{minute}:{:02}Z", s / 10 * 10)
}

/// Brute force: (count, sum) per group of `query` over `input`.
fn expected(query: Query, input: &[String]) -> BTreeMap<String, (i64, i64)> {
    let mut out: BTreeMap<String, (i64, i64)> = BTreeMap::new();
    for l in input {
        let v: serde_json::Value = serde_json::from_str(l).unwrap();
        let g = query.group(v["k"].as_str().unwrap(), &window_start(v["ts"].as_str().unwrap()));
        let e = out.entry(g).or_default();
        e.0 += 1;
        e.1 += v["v"].as_i64().unwrap();
    }
    out
}

/// Starts producing `lines` to `topic` at `RATE` per second, each keyed by `{"k": ...}` (the key
/// text Eddy's Kafka sink writes for `key = ["k"]`) and partitioned by librdkafka's
/// `murmur2_random`, the Java client's default partitioner: an implementation independent of
/// Eddy's, which the processes check the input against (`eddy_kafka_misrouted_records_total`).
fn produce(broker: &Broker, dir: &Path, topic: &str, lines: &[String]) -> Child {
    let file = dir.join(format!("input-{}.jsonl", free_port()));
    std::fs::write(&file, lines.join("\n") + "\n").unwrap();
    let script = "import json, sys, time\nfrom confluent_kafka import Producer\n\
                  boot, topic, path, rate = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4])\n\
                  p = Producer({'bootstrap.servers': boot, 'enable.idempotence': True, 'linger.ms': 5, 'partitioner': 'murmur2_random'})\n\
                  t0 = time.perf_counter()\n\
                  for n, line in enumerate(open(path), 1):\n    \
                  line = line.strip()\n    \
                  key = json.dumps({'k': json.loads(line)['k']})\n    \
                  p.produce(topic, value=line.encode(), key=key.encode())\n    \
                  w = t0 + n / rate - time.perf_counter()\n    \
                  if w > 0:\n        time.sleep(w)\n    \
                  p.poll(0)\n\
                  sys.exit(1 if p.flush(30) else 0)\n";
    Command::new(kafka_common::tools_home().join("venv/bin/python"))
        .args(["-c", script, &broker.bootstrap(), topic])
        .arg(&file)
        .arg(RATE.to_string())
        .stdin(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("python producer")
}

fn finish_producing(child: Child) {
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "producer: {}", String::from_utf8_lossy(&out.stderr));
}

/// Output rows of `query` in topic `topic` as (group, n, total): everything there after 3 s
/// without a new message.
fn rows(broker: &Broker, query: Query, topic: &str) -> Vec<(String, i64, i64)> {
    broker
        .consume(topic, None, 3.0)
        .iter()
        .map(|m| {
            let v: serde_json::Value = serde_json::from_str(m.value.as_deref().expect("a value")).unwrap();
            let start = v["window"]["start"].as_str().unwrap_or_default();
            (query.group(v["k"].as_str().unwrap(), start), v["n"].as_i64().unwrap(), v["total"].as_i64().unwrap())
        })
        .collect()
}

/// The final result per group: its row of the largest count (counts only grow, so a repeated
/// row of an epoch in flight does not hide it).
fn finals(rows: &[(String, i64, i64)]) -> BTreeMap<String, (i64, i64)> {
    let mut out: BTreeMap<String, (i64, i64)> = BTreeMap::new();
    for (g, n, total) in rows {
        let e = out.entry(g.clone()).or_default();
        if *n > e.0 {
            *e = (*n, *total);
        }
    }
    out
}

/// Reads `topic` until its final results equal `want` (a shared group's output catches up with
/// the input), panicking with the difference after `LONG`: the rows.
fn wait_for_results(
    broker: &Broker,
    query: Query,
    topic: &str,
    want: &BTreeMap<String, (i64, i64)>,
    procs: &mut [Eddy],
) -> Vec<(String, i64, i64)> {
    let started = Instant::now();
    loop {
        let got = rows(broker, query, topic);
        let f = finals(&got);
        if &f == want {
            return got;
        }
        for p in procs.iter_mut() {
            assert!(p.running(), "{}: a process exited:\n{}", query.name(), p.log());
        }
        if started.elapsed() > LONG {
            let diff: Vec<_> = want
                .iter()
                .filter(|(g, w)| f.get(*g) != Some(w))
                .map(|(g, w)| format!("{g}: want {w:?}, got {:?}", f.get(g)))
                .take(10)
                .collect();
            panic!(
                "{}: the output did not reach the expected results within {LONG:?} ({} groups differ; first: {diff:#?}); logs:\n{}",
                query.name(),
                want.iter().filter(|(g, w)| f.get(*g) != Some(w)).count(),
                procs.iter().map(|p| p.log()).collect::<Vec<_>>().join("\n-----\n")
            );
        }
    }
}

/// Rolling window rows: every `n` of `1..=count` of every key is there (nothing lost), repeats
/// carry the same sum (a repeat of one record's row); returns the repeated (key, n).
fn repeats(rows: &[(String, i64, i64)], want: &BTreeMap<String, (i64, i64)>) -> BTreeMap<String, Vec<i64>> {
    let mut seen: BTreeMap<(String, i64), (i64, usize)> = BTreeMap::new();
    for (k, n, total) in rows {
        let e = seen.entry((k.clone(), *n)).or_insert((*total, 0));
        assert_eq!(e.0, *total, "key {k}: row n = {n} written twice with different sums");
        e.1 += 1;
    }
    for (k, (count, _)) in want {
        let missing: Vec<i64> = (1..=*count).filter(|n| !seen.contains_key(&(k.clone(), *n))).collect();
        assert!(missing.is_empty(), "key {k}: the rows of n = {missing:?} are lost");
    }
    let mut out: BTreeMap<String, Vec<i64>> = BTreeMap::new();
    for ((k, n), (_, times)) in seen {
        if times > 1 {
            out.entry(k).or_default().push(n);
        }
    }
    out
}

fn metrics_addr() -> SocketAddr {
    format!("127.0.0.1:{}", free_port()).parse().unwrap()
}

/// Starts one process of a pipeline file, on its own metrics port.
fn start(path: &Path) -> Eddy {
    let addr = metrics_addr();
    Eddy::start(path, addr, &[format!("metrics.listen={addr}")])
}

/// The partitions a process holds now (0: none, or its endpoint not up yet).
fn assigned(p: &Eddy) -> u32 {
    p.metric("eddy_kafka_assigned_partitions").unwrap_or(0.0) as u32
}

/// Waits until the running processes `procs` hold all partitions between them, each some.
fn wait_spread(what: &str, procs: &mut [Eddy], timeout: Duration) {
    let started = Instant::now();
    loop {
        let held: Vec<u32> = procs.iter().map(assigned).collect();
        if held.iter().sum::<u32>() == PARTITIONS && held.iter().all(|&h| h > 0) {
            return;
        }
        for p in procs.iter_mut() {
            assert!(p.running(), "{what}: a process exited:\n{}", p.log());
        }
        assert!(
            started.elapsed() < timeout,
            "{what}: partitions held {held:?} after {timeout:?}; logs:\n{}",
            procs.iter().map(|p| p.log()).collect::<Vec<_>>().join("\n-----\n")
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// A process's count of records whose key Eddy's partitioner puts in another partition than
/// the one they came from (the counter is exported from the start, at 0).
fn misrouted_records(p: &Eddy) -> f64 {
    p.metric("eddy_kafka_misrouted_records_total")
        .unwrap_or_else(|| panic!("no eddy_kafka_misrouted_records_total at {}:\n{}", p.metrics, p.log()))
}

/// The partitions of the last run a process's log announces ("in/0,in/5").
fn last_partitions(log: &str) -> BTreeSet<i32> {
    let plain = strip_ansi(log);
    let line = plain
        .lines()
        .rfind(|l| l.contains("shared group: a run over the assigned partitions starts"))
        .unwrap_or_else(|| panic!("no run started in the log:\n{plain}"));
    let list = line.split("partitions=").nth(1).unwrap_or_default().split_whitespace().next().unwrap_or_default();
    list.split(',').filter_map(|tp| tp.rsplit_once('/')).map(|(_, p)| p.trim_matches('"').parse().unwrap()).collect()
}

fn strip_ansi(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            for c in chars.by_ref() {
                if c.is_ascii_alphabetic() {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// The scenario with `processes` processes of each pipeline at first, then one killed and
/// one more started (the module documentation).
fn share_kill_and_join(processes: usize) {
    // cooperative-sticky with two processes; tansu needs an eager strategy with more
    let strategy = if processes == 2 { Strategy::CooperativeSticky } else { Strategy::RoundRobin };
    let t0 = Instant::now();
    let broker = Broker::start();
    let tmp = tempfile::tempdir().unwrap();
    let ck = tmp.path().join("ck");
    broker.create_topic("in", PARTITIONS);
    let queries = [Query::Rolling, Query::Window];
    let mut paths = Vec::new();
    for q in queries {
        broker.create_topic(&format!("out-{}", q.name()), 1);
        broker.create_topic(&format!("single-{}", q.name()), 1);
        let group = pipeline(
            tmp.path(),
            &format!("group-{}", q.name()),
            q,
            &broker.bootstrap(),
            ("in", &format!("out-{}", q.name())),
            Some(&ck),
            strategy,
        );
        paths.push(group);
    }
    let (first, second) = (records(0, HALF), records(HALF, 2 * HALF));

    // The processes of each pipeline, joining one after the other while the input arrives.
    let mut procs: Vec<Vec<Eddy>> = paths.iter().map(|p| vec![start(p)]).collect();
    let producer = produce(&broker, tmp.path(), "in", &first);
    for n in 2..=processes {
        for (q, ps) in queries.iter().zip(procs.iter_mut()) {
            wait_spread(&format!("{} with {} processes", q.name(), n - 1), ps, LONG);
        }
        for (ps, p) in procs.iter_mut().zip(&paths) {
            ps.push(start(p));
        }
    }
    for (q, ps) in queries.iter().zip(procs.iter_mut()) {
        wait_spread(&format!("{} with {processes} processes", q.name()), ps, LONG);
    }
    let joined = t0.elapsed();
    finish_producing(producer);
    for (q, ps) in queries.iter().zip(procs.iter_mut()) {
        let want = expected(*q, &first);
        let got = wait_for_results(&broker, *q, &format!("out-{}", q.name()), &want, ps);
        if *q == Query::Rolling {
            let twice = repeats(&got, &want);
            assert!(twice.is_empty(), "rolling: rows written twice with no process killed: {twice:?}");
        }
    }
    let first_half = t0.elapsed();

    // The partition of each key, as the broker holds the input.
    let mut partition_of: BTreeMap<String, i64> = BTreeMap::new();
    for m in broker.consume("in", Some(HALF), 5.0) {
        let v: serde_json::Value = serde_json::from_str(m.value.as_deref().unwrap()).unwrap();
        let k = v["k"].as_str().unwrap().to_string();
        let old = partition_of.insert(k.clone(), m.partition);
        assert!(old.is_none_or(|p| p == m.partition), "key {k} in partitions {old:?} and {}", m.partition);
    }
    assert_eq!(partition_of.len(), KEYS);

    // Kill -9 the second process of each pipeline mid-run: the others take its partitions. Not
    // the first, the group's leader: tansu 0.6.0 keeps a dead leader in the group (it answers
    // every JoinGroup with it as the leader, which never assigns), so the group would stall.
    let producer = produce(&broker, tmp.path(), "in", &second);
    let before: Vec<f64> = procs.iter().map(|ps| ps[0].consumed()).collect();
    for (ps, b) in procs.iter_mut().zip(&before) {
        let p = &mut ps[0];
        wait_for("records of the second half", LONG, || p.consumed() >= b + 300.0);
    }
    let mut killed_partitions = Vec::new();
    let mut misrouted = 0.0;
    for ps in procs.iter_mut() {
        let victim = ps.remove(1);
        misrouted += misrouted_records(&victim);
        killed_partitions.push(last_partitions(&victim.kill()));
    }
    let killed_at = Instant::now();
    if processes == 2 {
        for (q, ps) in queries.iter().zip(procs.iter_mut()) {
            wait_spread(&format!("{} after the kill", q.name()), ps, SESSION_TIMEOUT + MARGIN);
        }
    } else {
        // tansu 0.6.0 drops a member whose session expired without starting a new generation
        // for the others (with two members the survivor, the leader, rejoins anyway): the dead
        // process's partitions move at the next join. The fourth joins once the session is over.
        std::thread::sleep(SESSION_TIMEOUT + Duration::from_secs(2));
    }
    let moved_after_kill = killed_at.elapsed();

    // One more joins: partitions move to it.
    for (ps, p) in procs.iter_mut().zip(&paths) {
        ps.push(start(p));
    }
    let joins_at = Instant::now();
    for (q, ps) in queries.iter().zip(procs.iter_mut()) {
        wait_spread(&format!("{} with one more process", q.name()), ps, LONG);
    }
    let moved_to_new = joins_at.elapsed();
    finish_producing(producer);

    let all: Vec<String> = first.iter().chain(&second).cloned().collect();
    let mut group_finals = Vec::new();
    let mut repeated = 0;
    for ((q, ps), killed) in queries.iter().zip(procs.iter_mut()).zip(&killed_partitions) {
        let want = expected(*q, &all);
        let got = wait_for_results(&broker, *q, &format!("out-{}", q.name()), &want, ps);
        if *q == Query::Rolling {
            let twice = repeats(&got, &want);
            repeated = twice.values().map(Vec::len).sum::<usize>();
            for (k, ns) in twice {
                let p = partition_of[&k];
                assert!(
                    killed.contains(&(p as i32)),
                    "rolling: key {k} (partition {p}) has rows twice ({ns:?}), but the killed process held {killed:?}"
                );
                assert_eq!(
                    ns.last().unwrap() - ns[0] + 1,
                    ns.len() as i64,
                    "rolling: key {k}: the rows repeated are one run of the epochs in flight: {ns:?}"
                );
            }
        }
        group_finals.push(finals(&got));
        for p in ps.iter() {
            misrouted += misrouted_records(p);
        }
    }
    assert_eq!(misrouted, 0.0, "records Eddy's partitioner would put elsewhere than librdkafka's murmur2_random");
    for ps in procs.drain(..) {
        for p in ps {
            let (status, log) = p.terminate();
            assert!(status.success(), "eddy exited {status}:\n{log}");
        }
    }
    let group_done = t0.elapsed();

    // A single process over the same input: the same final results.
    for (q, group) in queries.iter().zip(&group_finals) {
        let topic = format!("single-{}", q.name());
        let path =
            pipeline(tmp.path(), &topic, *q, &broker.bootstrap(), ("in", &topic), None, Strategy::CooperativeSticky);
        let mut single = start(&path);
        single.wait_consumed(all.len(), LONG);
        let got = wait_for_results(&broker, *q, &topic, group, std::slice::from_mut(&mut single));
        assert_eq!(finals(&got), *group, "{}: a single process's results", q.name());
        let (status, log) = single.terminate();
        assert!(status.success(), "eddy exited {status}:\n{log}");
    }
    // The timings, past the harness's capture (as broker_or_skip's notice); a failed write to
    // stderr changes nothing the test checks.
    let _ = writeln!(
        std::io::stderr(),
        "kafka_group, {processes} processes: all joined at {joined:?}, first half checked at {first_half:?}; \
         {repeated} rolling rows repeated after the kill; \
         partitions moved {moved_after_kill:?} after the kill, {moved_to_new:?} after one more started; \
         group checked at {group_done:?}, single process at {:?}",
        t0.elapsed()
    );
}

#[test]
fn two_processes_share_the_partitions_survive_a_kill_and_a_join_with_the_single_process_results() {
    if !broker_or_skip("kafka_group") {
        return;
    }
    share_kill_and_join(2);
}

/// Issue 26's acceptance: three processes, one killed, a fourth (the module documentation says
/// what the test broker changes in it).
#[test]
fn three_processes_share_the_partitions_survive_a_kill_and_a_fourth_with_the_single_process_results() {
    if !broker_or_skip("kafka_group") {
        return;
    }
    share_kill_and_join(3);
}

#[test]
fn a_process_running_another_query_in_the_shared_checkpoint_folder_exits_2_naming_the_change() {
    if !broker_or_skip("kafka_group") {
        return;
    }
    let broker = Broker::start();
    broker.create_topic("in", PARTITIONS);
    broker.create_topic("out", 1);
    let tmp = tempfile::tempdir().unwrap();
    let ck = tmp.path().join("ck");
    let other = tmp.path().join("other");
    std::fs::create_dir(&other).unwrap();
    // One pipeline name and checkpoint path, two queries.
    let first = pipeline(
        tmp.path(),
        "same",
        Query::Rolling,
        &broker.bootstrap(),
        ("in", "out"),
        Some(&ck),
        Strategy::CooperativeSticky,
    );
    let second = pipeline(
        &other,
        "same",
        Query::Window,
        &broker.bootstrap(),
        ("in", "out"),
        Some(&ck),
        Strategy::CooperativeSticky,
    );
    let mut running = vec![start(&first)];
    wait_spread("the first process", &mut running, LONG);

    let addr = metrics_addr();
    let out = Command::new(env!("CARGO_BIN_EXE_eddy"))
        .args(["run", "--no-progress", "--set", &format!("metrics.listen={addr}")])
        .arg(&second)
        .stdin(Stdio::null())
        .output()
        .expect("eddy");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "the second process: {}\n{stderr}", out.status);
    assert!(
        stderr.contains("written by a different query") && stderr.contains("query.type"),
        "the second process names the change:\n{stderr}"
    );
    let (status, log) = running.remove(0).terminate();
    assert!(status.success(), "the first process, unaffected, exited {status}:\n{log}");
}

#[test]
fn validate_refuses_a_shared_group_with_a_files_sink_without_a_checkpoint_or_with_parallelism() {
    let tmp = tempfile::tempdir().unwrap();
    let ck = tmp.path().join("ck");
    let good = pipeline(
        tmp.path(),
        "good",
        Query::Rolling,
        "127.0.0.1:9",
        ("in", "out"),
        Some(&ck),
        Strategy::CooperativeSticky,
    );
    let validate = |path: &Path| {
        let out = Command::new(env!("CARGO_BIN_EXE_eddy")).arg("validate").arg(path).output().expect("eddy validate");
        (out.status.code(), String::from_utf8_lossy(&out.stderr).to_string() + &String::from_utf8_lossy(&out.stdout))
    };
    let (code, text) = validate(&good);
    assert_eq!(code, Some(0), "the shared-group pipeline itself is valid:\n{text}");

    let text = std::fs::read_to_string(&good).unwrap();
    let sink = text.find("[sink]").unwrap();
    let sink_end = text[sink..].find("\n\n").unwrap() + sink;
    let cases = [
        ("sink.type", text[..sink].to_string() + "[sink]\ntype = \"files\"\npath = \"out\"" + &text[sink_end..]),
        ("checkpoint", text.replace(&format!("[checkpoint]\npath = \"{}\"\n", ck.display()), "")),
        ("parallelism", text.replacen("mode = \"real-time\"\n", "mode = \"real-time\"\nparallelism = 2\n", 1)),
    ];
    for (field, bad) in cases {
        assert_ne!(bad, text, "{field}: the case changes the file");
        let path = tmp.path().join(format!("bad-{}.toml", field.replace('.', "-")));
        std::fs::write(&path, bad).unwrap();
        let (code, out) = validate(&path);
        assert_eq!(code, Some(2), "{field}: eddy validate exits 2:\n{out}");
        assert!(out.contains(field) && out.contains("shared_group"), "{field}: the message names the field:\n{out}");
    }
}
