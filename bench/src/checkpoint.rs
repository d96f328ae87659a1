//! The `checkpoint` suite: a rolling window holding 1 million keys (one partition actor's
//! state), checkpointed as the runtime does it (the operator's incremental snapshot begun at the
//! barrier and written in steps between records by the partition actor's [`SnapshotPacer`], the
//! file written and fsynced on a writer thread), and restored.
//!
//! - **stall**: records are due at a fixed rate (20,000/s) on the actor's thread; every second a
//!   checkpoint is taken; each record's latency is (processed - due). While a snapshot is in
//!   progress the loop runs the pacer as the partition actor does: a step whenever one is due
//!   (at most half of the time), waiting for the next record in between. The
//!   percentiles with checkpoints, against the same loop without, show what a checkpoint costs
//!   the records that arrive meanwhile. [`RUNS`] runs of each, alternating.
//!   On a shared machine the loop's thread also waits for a core whenever another process has
//!   it (its run-queue wait, `/proc/thread-self/schedstat`): with 20,000 records due a second,
//!   one such wait of 5 ms makes 100 records late, so the baseline's p99 (no checkpoint at all)
//!   is the machine's noise, not the engine's. Alongside the latency, each record's latency
//!   *without the run-queue wait that fell within it* is recorded ("engine" columns): what the
//!   loop's own work (records, snapshot steps) cost it. It is conservative (a wait that may
//!   have preceded the due instant is never subtracted), and it hides the writer thread's
//!   competition for the core as much as the noise's: the run-queue wait of each mode, and the
//!   writer's CPU time, are reported beside it so that competition shows.
//! - **size, duration**: the one-shot serialisation (`Operator::snapshot`), the cut
//!   (`begin_snapshot`) and the incremental snapshot on an idle actor, the file write with
//!   fsync (wall and CPU time), the bytes on disk.
//! - **restore**: reading and checking the file, then the operators restored, for the same
//!   parallelism and re-split from 1 to 2 actors.

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use hdrhistogram::Histogram;

use eddy_actors::checkpoint::pacer::Finished;
use eddy_actors::checkpoint::writer::thread_cpu_ns;
use eddy_actors::checkpoint::{
    Checkpointer, DriverState, FolderStore, Manifest, SnapshotPacer, SnapshotWriter, restore, snapshot_name,
};
use eddy_actors::messages::ToCoordinator;
use eddy_actors::routing::Router;
use eddy_engine::operator::{Operator, Output};
use eddy_engine::plan::QueryPlan;
use eddy_engine::{Record, Timestamp, Value};
use eddy_sql::parse_pipeline_str;

const PIPELINE: &str = r#"
name = "bench-checkpoint"
mode = "real-time"
[source]
type = "stdin"
schema = "k STRING, v BIGINT, ts TIMESTAMP"
[query]
type = "rolling_window"
partition_by = ["k"]
order_by = "ts"
frontier = { delay = "0 seconds" }
measures = [{ agg = "sum", column = "v", over = "2 seconds" }, { agg = "count" }]
[sink]
type = "stdout"
# Checkpointed (the suite stores its own snapshots; this only plans the operator as the runtime
# plans a checkpointed pipeline's: in the layout that snapshots incrementally).
[checkpoint]
path = "checkpoints/"
"#;

/// Records due per second in the stall loop (smoke: a tenth): what one partition actor of the
/// current rolling operator sustains on this 2-core machine with room to spare.
const RATE: u64 = 20_000;

/// Runs of the stall loop with and without checkpoints (alternating: the machine is shared).
const RUNS: usize = 5;

/// The checkpoints of a stall loop.
#[derive(Clone, Copy)]
enum Checkpoints<'a> {
    /// None (the baseline).
    Off,
    /// Every second, the snapshot's bytes dropped (the actor's thread alone).
    Discard,
    /// Every second, stored by a writer thread (as the runtime does).
    Store(&'a Checkpointer),
}

impl Checkpoints<'_> {
    fn label(&self) -> &'static str {
        match self {
            Checkpoints::Off => "none",
            Checkpoints::Discard => "every 1 s, bytes dropped (no writer)",
            Checkpoints::Store(_) => "every 1 s, stored (`SnapshotWriter`)",
        }
    }
}

/// What the checkpoints of one stall loop cost the actor's thread.
#[derive(Default)]
struct Snapshots {
    /// `begin_snapshot` (the cut) per checkpoint.
    begin: Vec<Duration>,
    /// From the barrier to the complete bytes, per checkpoint (wall time).
    complete: Vec<Duration>,
    /// Pacer polls that ran a step (wall µs, preemption included).
    steps: Option<Histogram<u64>>,
    /// Time the loop's thread was ready to run but waited for a core (other processes, and
    /// the writer thread).
    run_queue_wait: Duration,
    /// CPU time of the loop's thread.
    loop_cpu: Duration,
    /// CPU time of the writer thread (stored mode).
    writer_cpu: Duration,
}

/// The calling thread's run-queue wait so far (ns), read from `/proc/thread-self/schedstat`
/// (second field) through a file kept open (a read costs about 2 µs); 0 where it cannot be read.
struct RunQueueWait {
    file: Option<std::fs::File>,
    buf: [u8; 128],
}

impl RunQueueWait {
    /// For the calling thread.
    fn new() -> RunQueueWait {
        RunQueueWait { file: std::fs::File::open("/proc/thread-self/schedstat").ok(), buf: [0; 128] }
    }

    fn ns(&mut self) -> u64 {
        use std::os::unix::fs::FileExt;
        let Some(f) = self.file.as_ref() else { return 0 };
        let n = f.read_at(&mut self.buf, 0).unwrap_or(0);
        let s = std::str::from_utf8(&self.buf[..n]).unwrap_or("");
        s.split_whitespace().nth(1).and_then(|x| x.parse().ok()).unwrap_or(0)
    }
}

/// Instants at which the loop's run-queue wait was read, to find how much of it fell within a
/// record's latency (see the module documentation).
struct WaitMarks {
    /// (instant, run-queue wait ns), oldest first; the last [`WaitMarks::KEEP`].
    marks: std::collections::VecDeque<(Instant, u64)>,
    /// The last sleep: (run-queue wait when it began, its deadline).
    slept: Option<(u64, Instant)>,
}

impl WaitMarks {
    const KEEP: usize = 8192;

    fn mark(&mut self, at: Instant, wait_ns: u64) {
        if self.marks.len() == Self::KEEP {
            self.marks.pop_front();
        }
        self.marks.push_back((at, wait_ns));
    }

    /// The run-queue wait at `due`, or a later value (never an earlier one): exact when the
    /// thread slept through `due` (a sleeping thread does not wait for a core), else the first
    /// mark at or after `due`.
    fn at(&self, due: Instant, now_ns: u64) -> u64 {
        if let Some((w, deadline)) = self.slept
            && deadline >= due
        {
            return w;
        }
        let i = self.marks.partition_point(|(t, _)| *t < due);
        self.marks.get(i).map_or(now_ns, |(_, w)| *w)
    }
}

fn record(key: u64, t: i64) -> Record {
    Record::new(vec![
        Value::Str(format!("user-{key}").into()),
        Value::Long((key % 97) as i64),
        Value::Timestamp(Timestamp(t)),
    ])
}

/// An operator holding `keys` keys (one record each, 1 µs apart: the first second of event time).
fn filled(plan: &QueryPlan, keys: u64) -> Box<dyn Operator> {
    let mut op = plan.new_operator();
    let mut out = Output::default();
    for k in 0..keys {
        let t = k as i64;
        op.advance_clock(Timestamp(t), &mut out);
        op.on_record(&record(k, t), Timestamp::MIN, &mut out);
        out.clear();
    }
    op
}

fn ms(d: Duration) -> String {
    format!("{:.1}", d.as_secs_f64() * 1e3)
}

/// Latency percentiles (µs) of `seconds` of records due at `rate` per second, updating existing
/// keys (event time 5 µs apart, so the 2-second range keeps about 400,000 records and the lifetime
/// count keeps every key), with a checkpoint every second when `checkpointer` is given (the
/// snapshot driven here as the partition actor drives it, written by a writer thread). Returns
/// the latency histogram, the histogram of latency without the run-queue wait within it, and
/// what the snapshots cost.
fn stall_loop(
    op: &mut dyn Operator,
    keys: u64,
    seconds: u64,
    rate: u64,
    checkpoints: Checkpoints<'_>,
) -> Result<(Histogram<u64>, Histogram<u64>, Snapshots)> {
    let checkpointer = match checkpoints {
        Checkpoints::Store(ck) => Some(ck),
        _ => None,
    };
    let mut h = Histogram::<u64>::new_with_bounds(1, 60_000_000, 3)?;
    let mut snaps =
        Snapshots { steps: Some(Histogram::<u64>::new_with_bounds(1, 60_000_000, 3)?), ..Snapshots::default() };
    // Stored: the runtime's writer (its thread, priority and acknowledgements); dropped: a thread
    // that frees the bytes.
    let (acks_tx, acks) = crossbeam_channel::unbounded::<ToCoordinator>();
    let writer = match checkpointer {
        Some(ck) => Some(SnapshotWriter::start(ck.clone(), 0, 1, acks_tx).context("writer thread")?),
        None => {
            drop(acks_tx); // no writer: the janitor ends at once
            None
        }
    };
    let (tx, rx) = crossbeam_channel::bounded::<Finished>(2);
    // As the writer does, the dropping thread hands each buffer back for the next snapshot.
    let (spare_tx, spare_rx) = crossbeam_channel::bounded::<Vec<u8>>(1);
    let dropper = matches!(checkpoints, Checkpoints::Discard).then(|| {
        std::thread::spawn(move || {
            for f in rx {
                let _ = spare_tx.try_send(f.state);
            }
        })
    });
    let mut submitted = 0usize;
    // Acknowledged snapshots are deleted off the loop's thread (an unlink of tens of megabytes
    // takes milliseconds); each deletion is reported back.
    let (deleted_tx, deleted) = crossbeam_channel::unbounded::<Result<()>>();
    let ck_janitor = checkpointer.cloned();
    let janitor = std::thread::spawn(move || {
        for ack in acks {
            if deleted_tx.send(stored(ack, ck_janitor.as_ref())).is_err() {
                return;
            }
        }
    });
    let mut pacer = SnapshotPacer::new();
    let mut began = Instant::now();
    let mut hand_over = |f: Finished, began: Instant, snaps: &mut Snapshots| -> Result<()> {
        snaps.complete.push(began.elapsed());
        match &writer {
            Some(w) => {
                submitted += 1;
                anyhow::ensure!(w.submit(f.epoch, f.state, f.state_len), "writer thread gone");
                Ok(())
            }
            None => tx.send(f).context("dropping thread"),
        }
    };
    let mut out = Output::default();
    let mut rq = RunQueueWait::new();
    let mut marks = WaitMarks { marks: Default::default(), slept: None };
    let mut engine = Histogram::<u64>::new_with_bounds(1, 60_000_000, 3)?;
    let wait0 = rq.ns();
    let cpu0 = thread_cpu_ns();
    let start = Instant::now();
    let ns_per_record = 1_000_000_000 / rate;
    let total = rate * seconds;
    let mut next_checkpoint = 1u64;
    let base = keys as i64;
    for n in 0..total {
        let due = start + Duration::from_nanos(n * ns_per_record);
        // As the partition actor: a snapshot step when one is due, else wait for the record (the
        // actor's input) until the next step.
        loop {
            if pacer.in_progress() {
                let s = Instant::now();
                let f = pacer.poll(op);
                step_taken(&mut snaps, s.elapsed());
                if let Some(f) = f {
                    hand_over(f, began, &mut snaps)?;
                }
            }
            let now = Instant::now();
            if due <= now {
                break;
            }
            let until = pacer.next_step_at().map_or(due, |at| at.min(due));
            if until > now {
                marks.slept = Some((rq.ns(), until));
                std::thread::sleep(until - now);
            }
        }
        let t = base + (n as i64) * 5;
        op.advance_clock(Timestamp(t), &mut out);
        op.on_record(&record(n % keys, t), Timestamp::MIN, &mut out);
        out.clear();
        let latency = due.elapsed();
        h.saturating_record(latency.as_micros().max(1) as u64);
        let (now, wait_now) = (Instant::now(), rq.ns());
        let waited = Duration::from_nanos(wait_now.saturating_sub(marks.at(due, wait_now)));
        engine.saturating_record(latency.saturating_sub(waited).as_micros().max(1) as u64);
        marks.mark(now, wait_now);
        marks.slept = None;
        if !matches!(checkpoints, Checkpoints::Off) && start.elapsed() >= Duration::from_secs(next_checkpoint) {
            let s = Instant::now();
            if let Some(b) = writer.as_ref().and_then(SnapshotWriter::spare_buffer).or_else(|| spare_rx.try_recv().ok())
            {
                op.reuse_snapshot_buffer(b);
            }
            let done = pacer.begin(op, next_checkpoint);
            snaps.begin.push(s.elapsed());
            for f in done {
                hand_over(f, began, &mut snaps)?;
            }
            began = s;
            // A checkpoint that took longer than the interval is not followed by the missed ones.
            next_checkpoint = start.elapsed().as_secs() + 1;
        }
    }
    snaps.run_queue_wait = Duration::from_nanos(rq.ns().saturating_sub(wait0));
    snaps.loop_cpu = Duration::from_nanos(thread_cpu_ns().saturating_sub(cpu0));
    if let Some(f) = pacer.finish(op) {
        hand_over(f, began, &mut snaps)?;
    }
    drop(tx);
    if let Some(w) = writer {
        for _ in 0..submitted {
            deleted.recv().context("writer thread")??;
        }
        snaps.writer_cpu = Duration::from_nanos(w.cpu_ns());
    }
    janitor.join().map_err(|_| anyhow::anyhow!("janitor thread panicked"))?;
    if let Some(d) = dropper {
        d.join().map_err(|_| anyhow::anyhow!("dropping thread panicked"))?;
    }
    Ok((h, engine, snaps))
}

/// A writer's acknowledgement: the snapshot is stored; it is deleted at once (no manifest will
/// list it, and a shared disk has no room for every one).
fn stored(ack: ToCoordinator, checkpointer: Option<&Checkpointer>) -> Result<()> {
    match (ack, checkpointer) {
        (ToCoordinator::BarrierAck { epoch, partition, .. }, Some(ck)) => {
            ck.store().delete(&snapshot_name(epoch, partition as u32)).context("deleting a stored snapshot")
        }
        (other, _) => anyhow::bail!("the writer reported {other:?}"),
    }
}

/// Records a poll that ran a step (a poll skipped by the pacer returns in well under 10 µs).
fn step_taken(snaps: &mut Snapshots, took: Duration) {
    if took >= Duration::from_micros(10)
        && let Some(h) = snaps.steps.as_mut()
    {
        h.saturating_record(took.as_micros() as u64);
    }
}

fn median(mut v: Vec<u64>) -> u64 {
    v.sort_unstable();
    v.get(v.len() / 2).copied().unwrap_or(0)
}

fn us(d: Duration) -> String {
    format!("{}", d.as_micros())
}

/// Runs the suite (`smoke`: 20,000 keys, 1 second at a tenth of the rate; else 1,000,000
/// keys, 5 seconds).
pub fn checkpoint(smoke: bool) -> Result<()> {
    let keys: u64 = if smoke { 20_000 } else { 1_000_000 };
    let seconds = if smoke { 1 } else { 5 };
    let rate = if smoke { RATE / 10 } else { RATE };
    let p = parse_pipeline_str(PIPELINE).context("bench pipeline")?;
    let plan = QueryPlan::new(&p).map_err(|e| anyhow::anyhow!("{}: {}", e.field, e.why))?;
    println!("## checkpoint: rolling window, {keys} keys in one partition actor\n");

    let dir = tempfile_dir()?;
    let store = FolderStore::open(&dir).context("checkpoint folder")?;
    let fingerprint = eddy_actors::checkpoint::manifest::fingerprint(&p);
    let ck = Checkpointer::new(Arc::new(store), "bench-checkpoint", fingerprint, 1000);

    let fill = Instant::now();
    let mut op = filled(&plan, keys);
    let filled_in = fill.elapsed();

    // Size and duration.
    let mut serialise = Vec::new();
    let mut state = Vec::new();
    for _ in 0..3 {
        let s = Instant::now();
        state = op.snapshot();
        serialise.push(s.elapsed());
    }
    serialise.sort();
    let one_shot_bytes = state.len();
    // The cut, then the incremental snapshot on an idle actor (paced as the actor paces it).
    let mut pacer = SnapshotPacer::new();
    let b = Instant::now();
    let done = pacer.begin(op.as_mut(), 0);
    let begin_took = b.elapsed();
    anyhow::ensure!(done.is_empty(), "the rolling window snapshots incrementally");
    let mut steps = Histogram::<u64>::new_with_bounds(1, 60_000_000, 3)?;
    let state = loop {
        if let Some(at) = pacer.next_step_at() {
            std::thread::sleep(at.saturating_duration_since(Instant::now()));
        }
        let s = Instant::now();
        let f = pacer.poll(op.as_mut());
        steps.saturating_record(s.elapsed().as_micros().max(1) as u64);
        if let Some(f) = f {
            break f.state;
        }
    };
    let incremental_took = b.elapsed();
    let state_bytes = state.len();
    let (w, w_cpu) = (Instant::now(), thread_cpu_ns());
    let meta = ck.write_snapshot(0, 0, 1, &state).context("writing the snapshot")?;
    let written = w.elapsed();
    let written_cpu = Duration::from_nanos(thread_cpu_ns().saturating_sub(w_cpu));
    drop(state);
    let manifest = Manifest {
        pipeline: "bench-checkpoint".into(),
        epoch: 0,
        fingerprint: ck.fingerprint().to_vec(),
        parallelism: 1,
        snapshots: vec![meta.clone()],
        source: None,
        driver: DriverState::RealTime { now: keys as i64, max_event_time: None, next_boundary: None },
        more_sources: Vec::new(),
    };
    let m = Instant::now();
    ck.commit(&manifest).context("writing the manifest")?;
    let manifest_took = m.elapsed();
    println!("| step | keys | bytes | ms |");
    println!("|---|---|---|---|");
    println!("| fill (1 record per key) | {keys} | | {} |", ms(filled_in));
    println!(
        "| one-shot serialise `snapshot()` (median of 3; no longer on the data path) | {keys} | {one_shot_bytes} | {} |",
        ms(serialise[1])
    );
    println!(
        "| `begin_snapshot` (the cut, at the barrier, actor thread) | {keys} | | {:.3} |",
        begin_took.as_secs_f64() * 1e3
    );
    println!(
        "| incremental snapshot, idle actor: {} steps, paced (µs each: p50 {}, p99 {}, max {}) | {keys} | {state_bytes} | {} |",
        steps.len(),
        steps.value_at_quantile(0.5),
        steps.value_at_quantile(0.99),
        steps.max(),
        ms(incremental_took)
    );
    println!(
        "| write + fsync snapshot file (this thread; CPU {} ms) | {keys} | {} | {} |",
        ms(written_cpu),
        meta.bytes,
        ms(written)
    );
    println!("| write + fsync manifest (coordinator) | | | {} |", ms(manifest_took));

    // Restore: reading and checking alone, then same parallelism, and re-split 1 -> 2.
    let r = Instant::now();
    let loaded = ck.load_snapshot(&manifest, &meta).context("reading the snapshot back")?;
    let read_took = r.elapsed();
    drop(loaded);
    println!("| read + check snapshot file (length, CRC-32, archive) | | {} | {} |", meta.bytes, ms(read_took));
    for parallelism in [1usize, 2] {
        let router = Router::new(plan.routing_columns(), parallelism);
        let new_operator = || plan.new_operator();
        let r = Instant::now();
        let restored = restore(&ck, parallelism, &new_operator, &router)?.context("a checkpoint")?;
        let took = r.elapsed();
        let held: usize = restored.operators.iter().map(|o| o.state_len()).sum();
        anyhow::ensure!(held == op.state_len(), "restored {held} keys of {}", op.state_len());
        println!(
            "| restore (read, check, restore) into {parallelism} actor(s) | {held} | {} | {} |",
            meta.bytes,
            ms(took)
        );
    }
    group_partition_restore(&p, &plan, op.as_ref(), keys)?;
    println!();

    // Stall.
    println!("record latency (due -> processed) at {rate} records/s for {seconds} s, updating the {keys} keys:\n");
    println!(
        "\"engine\": each record's latency less the run-queue wait of the loop's thread within it (see the module documentation).\n"
    );
    println!(
        "| checkpoints | run | records | p50 µs | p99 µs | p99.9 µs | max µs | engine p99 / p99.9 / max µs | cut µs (max) | barrier -> bytes ms (each) | steps: n, p99 / max µs | run-queue wait ms | loop CPU ms | writer CPU ms |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|");
    let modes = [Checkpoints::Off, Checkpoints::Discard, Checkpoints::Store(&ck)];
    let mut summary: [Vec<[u64; 9]>; 3] = [Vec::new(), Vec::new(), Vec::new()];
    for run in 1..=RUNS {
        for (m, mode) in modes.iter().enumerate() {
            let (h, e, snaps) = stall_loop(op.as_mut(), keys, seconds, rate, *mode)?;
            let q = [
                h.value_at_quantile(0.5),
                h.value_at_quantile(0.99),
                h.value_at_quantile(0.999),
                h.max(),
                e.value_at_quantile(0.99),
                e.value_at_quantile(0.999),
                e.max(),
                snaps.run_queue_wait.as_millis() as u64,
                snaps.writer_cpu.as_millis() as u64,
            ];
            summary[m].push(q);
            let each: Vec<String> = snaps.complete.iter().map(|d| ms(*d)).collect();
            let dash = || "-".to_string();
            let with = m > 0;
            println!(
                "| {} | {run} | {} | {} | {} | {} | {} | {} / {} / {} | {} | {} | {} | {} | {} | {} |",
                mode.label(),
                h.len(),
                q[0],
                q[1],
                q[2],
                q[3],
                q[4],
                q[5],
                q[6],
                snaps.begin.iter().max().map_or_else(dash, |d| us(*d)),
                if each.is_empty() { dash() } else { each.join(", ") },
                match snaps.steps.as_ref().filter(|_| with) {
                    Some(h) => format!("{}, {} / {}", h.len(), h.value_at_quantile(0.99), h.max()),
                    None => dash(),
                },
                ms(snaps.run_queue_wait),
                ms(snaps.loop_cpu),
                if m == 2 { ms(snaps.writer_cpu) } else { dash() },
            );
        }
    }
    println!();
    println!(
        "| checkpoints | runs | p50 µs | p99 µs | p99.9 µs | max µs | engine p99 µs | engine p99.9 µs | engine max µs | run-queue wait ms | writer CPU ms |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|");
    for (m, runs) in summary.iter().enumerate() {
        let col = |i: usize| {
            let v: Vec<u64> = runs.iter().map(|q| q[i]).collect();
            let (lo, hi) = (v.iter().min().copied().unwrap_or(0), v.iter().max().copied().unwrap_or(0));
            format!("{} ({lo}-{hi})", median(v))
        };
        println!(
            "| {} | median (min-max) of {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            modes[m].label(),
            runs.len(),
            col(0),
            col(1),
            col(2),
            col(3),
            col(4),
            col(5),
            col(6),
            col(7),
            if m == 2 { col(8) } else { "-".into() },
        );
    }
    println!();
    // Clean-up only: a folder left in the temporary folder changes no number.
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}

/// A fresh folder under the system's temporary folder.
/// The state of one input partition of a shared Kafka group (issue 26): the same operator,
/// checkpointed through [`Checkpointer::per_partition`] into its partition's folder, then
/// restored as a process does when the partition is assigned to it
/// ([`eddy_actors::checkpoint::partitioned::restore`]: read, check, restore, merge the
/// manifest). Three restores; median and range.
fn group_partition_restore(
    p: &eddy_engine::spec::Pipeline,
    plan: &QueryPlan,
    op: &dyn Operator,
    keys: u64,
) -> Result<()> {
    use eddy_actors::checkpoint::partitioned::{self, PartitionCheckpoint, folder_name};
    let dir = tempfile_dir()?;
    let fingerprint = eddy_actors::checkpoint::manifest::fingerprint(p);
    let part = PartitionCheckpoint {
        topic: "bench".into(),
        partition: 3,
        checkpointer: Checkpointer::new(
            Arc::new(FolderStore::open(&dir.join(folder_name("bench", 3))).context("partition folder")?),
            "bench-checkpoint",
            fingerprint.clone(),
            2,
        ),
    };
    let shared = Arc::new(FolderStore::open_shared(&dir).context("shared folder")?);
    let ck = Checkpointer::per_partition(shared, "bench-checkpoint", fingerprint.clone(), vec![part.clone()]);
    let meta = ck.write_snapshot(7, 0, 1, &op.snapshot()).context("writing the partition's snapshot")?;
    let bytes = meta.bytes;
    ck.commit(&Manifest {
        pipeline: "bench-checkpoint".into(),
        epoch: 7,
        fingerprint,
        parallelism: 1,
        snapshots: vec![meta],
        source: Some(eddy_actors::checkpoint::SavedOffset::Kafka(vec![
            eddy_actors::checkpoint::manifest::SavedKafkaOffset { topic: "bench".into(), partition: 3, next: 1_000 },
        ])),
        driver: DriverState::RealTime { now: keys as i64, max_event_time: None, next_boundary: None },
        more_sources: Vec::new(),
    })
    .context("writing the partition's manifest")?;
    let router = Router::new(plan.routing_columns(), 1);
    let new_operator = || plan.new_operator();
    let mut took = Vec::new();
    for _ in 0..3 {
        let r = Instant::now();
        let (ops, manifest) = partitioned::restore(std::slice::from_ref(&part), &new_operator, &router)?;
        took.push(r.elapsed());
        let held: usize = ops.iter().map(|o| o.state_len()).sum();
        anyhow::ensure!(held == op.state_len(), "restored {held} keys of {}", op.state_len());
        anyhow::ensure!(manifest.is_some_and(|m| m.epoch == 7), "the partition's manifest");
    }
    took.sort();
    println!(
        "| shared group: one input partition restored on assignment (median of 3; range {}-{} ms) | {keys} | {bytes} | {} |",
        ms(took[0]),
        ms(took[2]),
        ms(took[1])
    );
    Ok(())
}

fn tempfile_dir() -> Result<std::path::PathBuf> {
    let dir = std::env::temp_dir().join(format!("eddy-bench-checkpoint-{}", std::process::id()));
    if dir.exists() {
        std::fs::remove_dir_all(&dir)?;
    }
    std::fs::create_dir_all(&dir)?;
    Ok(dir)
}
