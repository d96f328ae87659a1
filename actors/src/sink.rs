//! The sink actor: writes output rows (main sink), late records (`late_sink`) and dead letters
//! (`dead_letter`), and commits each batch / epoch in two phases: once every producer (every
//! partition actor, and the source) has ended it, it is prepared on every sink (durable, not
//! visible) and reported to the coordinator ([`ToCoordinator::Prepared`]); it is committed
//! (made visible) when the coordinator says so ([`SinkCommand::Commit`]: after its checkpoint,
//! or at once without checkpoints). Batches commit in order; rows of later batches keep being
//! written meanwhile.

use std::collections::{BTreeMap, VecDeque};
use std::time::Instant;

use crossbeam_channel::{Receiver, Sender, select};

use eddy_connectors::{ConnectorError, Sink};
use eddy_engine::output::{row_to_json_line, write_row};

use crate::messages::{SinkCommand, ToCoordinator, ToSink};
use crate::metrics::{LATENCY_SAMPLE_EVERY, Metrics};

/// Latency samples of rows whose records carried a creation instant.
pub trait LatencyRecorder: Send {
    /// Records one source-to-sink latency in nanoseconds.
    fn record_ns(&mut self, ns: u64);
}

/// The sink actor's wiring.
pub struct SinkActor {
    /// The main sink.
    pub sink: Box<dyn Sink>,
    /// Output column names.
    pub names: Vec<String>,
    /// Output column indexes of the message key (empty: no key).
    pub key: Vec<usize>,
    /// Where late records go, with the input column names.
    pub late: Option<(Box<dyn Sink>, Vec<String>)>,
    /// Where dead letters go.
    pub dead_letter: Option<Box<dyn Sink>>,
    /// Producers that end each batch / epoch (partition actors + the source).
    pub producers: usize,
    /// Input.
    pub input: Receiver<ToSink>,
    /// Commits are reported here.
    pub coordinator: Sender<ToCoordinator>,
    /// Optional latency recorder (benchmarks).
    pub latency: Option<Box<dyn LatencyRecorder>>,
    /// Metric handles (no-ops without `[metrics]`): rows out, late records, write and commit
    /// times, and the source-to-sink latency of one row in [`LATENCY_SAMPLE_EVERY`] among those
    /// whose records carry a creation instant (one clock read per message, after its rows are
    /// written).
    pub metrics: Metrics,
    /// Counters shared with the caller (late records).
    pub counters: Option<std::sync::Arc<crate::source::SourceCounters>>,
    /// The coordinator's commit decisions.
    pub commands: Receiver<SinkCommand>,
    /// Whether batches are checkpointed: rows left in batches that not every producer ended
    /// (a stop after a failure) are then discarded rather than committed, as no checkpoint
    /// covers them.
    pub checkpointed: bool,
}

impl std::fmt::Debug for SinkActor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SinkActor").field("names", &self.names).field("producers", &self.producers).finish()
    }
}

impl SinkActor {
    /// Runs until every producer is done; reports a failure to the coordinator.
    pub fn run(mut self) {
        if let Err(e) = self.run_inner() {
            // The coordinator may be gone when the whole run is stopping anyway.
            let _ = self.coordinator.send(ToCoordinator::Failed(format!("sink: {e}")));
        }
        // As above: a missing coordinator means the run is over.
        let _ = self.coordinator.send(ToCoordinator::SinkDone);
    }

    fn run_inner(&mut self) -> Result<(), ConnectorError> {
        let mut ends: BTreeMap<u64, usize> = BTreeMap::new();
        let mut rows_in: BTreeMap<u64, u64> = BTreeMap::new();
        let mut done = 0usize;
        let mut line = String::with_capacity(256);
        let mut key = String::new();
        // Rows seen so far with creation instants (latency sampling).
        let mut sampled = 0usize;
        // Prepared batches waiting for the coordinator's commit, in order, with their rows.
        let mut awaiting: VecDeque<(u64, u64)> = VecDeque::new();
        let mut input_open = true;
        loop {
            if !input_open || done >= self.producers {
                if input_open {
                    input_open = false;
                    self.end_leftovers(&mut ends, &mut rows_in, &mut awaiting)?;
                }
                if awaiting.is_empty() {
                    return Ok(());
                }
                match self.commands.recv() {
                    Ok(cmd) => {
                        if !self.on_command(cmd, &mut awaiting)? {
                            return Ok(());
                        }
                    }
                    Err(_) => return Ok(()),
                }
                continue;
            }
            let msg = select! {
                recv(self.input) -> m => match m {
                    Ok(m) => m,
                    Err(_) => {
                        input_open = false;
                        self.end_leftovers(&mut ends, &mut rows_in, &mut awaiting)?;
                        continue;
                    }
                },
                recv(self.commands) -> c => {
                    match c {
                        Ok(cmd) => {
                            if !self.on_command(cmd, &mut awaiting)? {
                                return Ok(());
                            }
                        }
                        // The coordinator is gone: nothing will be committed any more.
                        Err(_) => return Ok(()),
                    }
                    continue;
                },
            };
            match msg {
                ToSink::Rows { id, rows, created_ns } => {
                    let started = self.metrics.enabled().then(Instant::now);
                    *rows_in.entry(id).or_default() += rows.len() as u64;
                    for (i, row) in rows.iter().enumerate() {
                        line.clear();
                        write_row(&mut line, &self.names, row);
                        let k = if self.key.is_empty() {
                            None
                        } else {
                            key.clear();
                            let names: Vec<String> = self.key.iter().map(|&k| self.names[k].clone()).collect();
                            let vals: Vec<_> = self.key.iter().map(|&k| row[k].clone()).collect();
                            write_row(&mut key, &names, &vals);
                            Some(key.as_str())
                        };
                        self.sink.write(id, &line, k)?;
                        if let (Some(rec), Some(&c)) = (self.latency.as_mut(), created_ns.get(i))
                            && c != 0
                        {
                            rec.record_ns(eddy_connectors::monotonic_ns().saturating_sub(c));
                        }
                    }
                    if let Some(t) = started {
                        self.metrics.records_out.increment(rows.len() as u64);
                        let now = eddy_connectors::monotonic_ns();
                        // One row in LATENCY_SAMPLE_EVERY, counted across messages.
                        let skip = (LATENCY_SAMPLE_EVERY - sampled % LATENCY_SAMPLE_EVERY) % LATENCY_SAMPLE_EVERY;
                        for &c in created_ns.iter().skip(skip).step_by(LATENCY_SAMPLE_EVERY).filter(|&&c| c != 0) {
                            self.metrics.source_to_sink_latency.record(now.saturating_sub(c) as f64 / 1e9);
                        }
                        sampled = sampled.wrapping_add(created_ns.len());
                        self.metrics.stage_sink.record(t.elapsed().as_secs_f64());
                    }
                }
                ToSink::Late { id, records } => {
                    self.metrics.records_late.increment(records.len() as u64);
                    if let Some(c) = &self.counters {
                        c.late.fetch_add(records.len() as u64, std::sync::atomic::Ordering::Relaxed);
                    }
                    if let Some((sink, names)) = self.late.as_mut() {
                        for r in &records {
                            let l = row_to_json_line(names, &r.values);
                            sink.write(id, l.trim_end(), None)?;
                        }
                    }
                }
                ToSink::DeadLetters { id, lines } => {
                    if let Some(sink) = self.dead_letter.as_mut() {
                        for l in &lines {
                            sink.write(id, l, None)?;
                        }
                    }
                }
                ToSink::End { id } => {
                    let n = ends.entry(id).or_default();
                    *n += 1;
                    // Prepare every fully ended batch, in order.
                    while let Some((&first, &count)) = ends.first_key_value() {
                        if count < self.producers {
                            break;
                        }
                        ends.remove(&first);
                        self.prepare(first, rows_in.remove(&first).unwrap_or(0), &mut awaiting)?;
                    }
                }
                ToSink::Done => done += 1,
            }
        }
    }

    /// The input ended: batches that not every producer ended (a drain after a failure) are
    /// prepared like the others without checkpoints, discarded with them.
    fn end_leftovers(
        &mut self,
        ends: &mut BTreeMap<u64, usize>,
        rows_in: &mut BTreeMap<u64, u64>,
        awaiting: &mut VecDeque<(u64, u64)>,
    ) -> Result<(), ConnectorError> {
        let mut pending: Vec<u64> = ends.keys().copied().chain(rows_in.keys().copied()).collect();
        pending.sort_unstable();
        pending.dedup();
        ends.clear();
        for id in pending {
            let rows = rows_in.remove(&id).unwrap_or(0);
            if self.checkpointed {
                tracing::debug!(batch = id, rows, "rows of an unfinished batch discarded (no checkpoint covers them)");
            } else {
                self.prepare(id, rows, awaiting)?;
            }
        }
        Ok(())
    }

    /// First phase: makes batch `id` durable on every sink and tells the coordinator.
    fn prepare(&mut self, id: u64, rows: u64, awaiting: &mut VecDeque<(u64, u64)>) -> Result<(), ConnectorError> {
        self.sink.prepare(id)?;
        if let Some((s, _)) = self.late.as_mut() {
            s.prepare(id)?;
        }
        if let Some(s) = self.dead_letter.as_mut() {
            s.prepare(id)?;
        }
        awaiting.push_back((id, rows));
        // A missing coordinator means the run is over; the batch then stays prepared only.
        let _ = self.coordinator.send(ToCoordinator::Prepared { id, rows });
        Ok(())
    }

    /// Second phase: commits the prepared batches up to `id`; `false` on [`SinkCommand::Abort`].
    fn on_command(&mut self, cmd: SinkCommand, awaiting: &mut VecDeque<(u64, u64)>) -> Result<bool, ConnectorError> {
        match cmd {
            SinkCommand::Commit(id) => {
                while let Some(&(first, rows)) = awaiting.front() {
                    if first > id {
                        break;
                    }
                    awaiting.pop_front();
                    self.commit(first, rows)?;
                }
                Ok(true)
            }
            SinkCommand::Abort => Ok(false),
        }
    }

    fn commit(&mut self, id: u64, rows: u64) -> Result<(), ConnectorError> {
        let started = self.metrics.enabled().then(Instant::now);
        self.sink.commit(id)?;
        if let Some((s, _)) = self.late.as_mut() {
            s.commit(id)?;
        }
        if let Some(s) = self.dead_letter.as_mut() {
            s.commit(id)?;
        }
        if let Some(t) = started {
            self.metrics.stage_commit.record(t.elapsed().as_secs_f64());
        }
        // The coordinator may have stopped first during a failure; the commit itself is done.
        let _ = self.coordinator.send(ToCoordinator::Committed { id, rows });
        Ok(())
    }
}
