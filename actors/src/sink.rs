//! The sink actor: writes output rows (main sink), late records (`late_sink`) and dead letters
//! (`dead_letter`), and commits a batch / epoch on every sink once each producer (every partition
//! actor, and the source) has ended it. Batches commit in order.

use std::collections::BTreeMap;
use std::time::Instant;

use crossbeam_channel::{Receiver, Sender};

use eddy_connectors::{ConnectorError, Sink};
use eddy_engine::output::{row_to_json_line, write_row};

use crate::messages::{ToCoordinator, ToSink};
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
        while done < self.producers {
            let Ok(msg) = self.input.recv() else { break };
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
                    // Commit every fully ended batch, in order.
                    while let Some((&first, &count)) = ends.first_key_value() {
                        if count < self.producers {
                            break;
                        }
                        ends.remove(&first);
                        self.commit(first, rows_in.remove(&first).unwrap_or(0))?;
                    }
                }
                ToSink::Done => done += 1,
            }
        }
        // Whatever was written after the last end (a drain) is committed now.
        let mut pending: Vec<u64> = ends.keys().copied().chain(rows_in.keys().copied()).collect();
        pending.sort_unstable();
        pending.dedup();
        for id in pending {
            self.commit(id, rows_in.remove(&id).unwrap_or(0))?;
        }
        Ok(())
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
