//! The sink actor and the row writers.
//!
//! Rows are written on the partition actors' threads through a [`RowWriter`] each: a row is
//! formatted as JSON outside any lock, then appended to the main sink under a short mutex (the
//! sink is shared, [`SharedSink`]). This chains the sink to the operator, as Flink chains a sink
//! to the task before it: one thread hand-off fewer per record in real-time mode (source ->
//! partition, instead of source -> partition -> sink), and formatting spread over the partition
//! actors. A slow sink still slows the source: a partition actor blocked in a write stops
//! taking records, its bounded queue fills, and the source waits.
//!
//! The sink actor keeps the rest: late records (`late_sink`), dead letters (`dead_letter`), and
//! the commit of each batch / epoch in two phases: once every producer (every partition actor,
//! and the source) has ended it, it is prepared on every sink (durable, not visible) and
//! reported to the coordinator ([`ToCoordinator::Prepared`]); it is committed (made visible)
//! when the coordinator says so ([`SinkCommand::Commit`]: after its checkpoint, or at once
//! without checkpoints). Batches commit in order; rows of later batches keep being written
//! meanwhile. A producer writes a batch's rows before it ends the batch (same thread, then a
//! channel send), so a prepare never misses rows.

use std::collections::{BTreeMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Instant;

use crossbeam_channel::{Receiver, Sender, select};

use eddy_connectors::{ConnectorError, Sink};
use eddy_engine::Row;
use eddy_engine::output::{RowFormat, row_to_json_line, write_string};

use crate::messages::{SinkCommand, ToCoordinator, ToSink};
use crate::metrics::{LATENCY_SAMPLE_EVERY, Metrics};

/// The main sink, shared by the row writers (appends) and the sink actor (prepare, commit).
pub type SharedSink = Arc<Mutex<Box<dyn Sink>>>;

/// Locks the shared sink; a writer that panicked while holding it leaves it unusable (error).
fn lock(sink: &SharedSink) -> Result<MutexGuard<'_, Box<dyn Sink>>, ConnectorError> {
    sink.lock().map_err(|_| ConnectorError::External("the sink's lock was poisoned by a failed writer".into()))
}

/// Latency samples of rows whose records carried a creation instant.
/// Shared by the row writers of every partition actor.
pub trait LatencyRecorder: Send + Sync {
    /// Records one source-to-sink latency in nanoseconds.
    fn record_ns(&self, ns: u64);
}

/// Writes a partition actor's output rows to the main sink (see the module documentation).
pub struct RowWriter {
    sink: SharedSink,
    names: Arc<[String]>,
    /// The rows' JSON layout (over `names`).
    format: RowFormat,
    /// Output column indexes of the message key (empty: no key), and the key's JSON layout.
    key: Vec<usize>,
    key_format: RowFormat,
    /// The formatted rows of one call, one after the other, and where each ends.
    lines: String,
    line_ends: Vec<usize>,
    keys: String,
    /// Where each row's key ends in `keys`; `None`: the row has no key.
    key_ends: Vec<Option<usize>>,
    key_values: Row,
    /// Output columns that are the message itself (Kafka).
    message: MessageColumns,
    latency: Option<Arc<dyn LatencyRecorder>>,
    metrics: Metrics,
    /// Rows seen so far with creation instants (latency sampling).
    sampled: usize,
    /// A forEach sink: this partition's writer takes the rows instead of `sink`.
    foreach: Option<crate::foreach::ForeachTarget>,
}

/// Output columns that a Kafka sink writes as the message itself (PIPELINE.md, as Spark's Kafka
/// sink): `value` is the message value as it is (the other columns are not written) and `key`
/// the message key (in place of the JSON of the `key` list). Both are STRING columns (checked
/// at validation). A NULL `value` is written as an empty message, a NULL `key` as no key.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MessageColumns {
    /// The `value` column's index, if the rows have one.
    pub value: Option<usize>,
    /// The `key` column's index, if the rows have one.
    pub key: Option<usize>,
}

impl std::fmt::Debug for RowWriter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RowWriter").field("names", &self.names).field("key", &self.key).finish()
    }
}

impl RowWriter {
    /// A writer of rows with output columns `names` (in order), keyed by the columns at
    /// indexes `key` (empty: no message key).
    ///
    /// # Panics
    /// If an index in `key` is not below `names.len()` (the plan derives both).
    pub fn new(
        sink: SharedSink,
        names: Arc<[String]>,
        key: Vec<usize>,
        latency: Option<Arc<dyn LatencyRecorder>>,
        metrics: Metrics,
    ) -> RowWriter {
        let key_names: Vec<String> = key.iter().map(|&k| names[k].clone()).collect();
        RowWriter {
            sink,
            format: RowFormat::new(&names),
            key_format: RowFormat::new(&key_names),
            names,
            key,
            lines: String::new(),
            line_ends: Vec::new(),
            keys: String::new(),
            key_ends: Vec::new(),
            key_values: Vec::new(),
            message: MessageColumns::default(),
            latency,
            metrics,
            sampled: 0,
            foreach: None,
        }
    }

    /// This writer giving its rows to the forEach writer `target` instead of the shared sink.
    pub fn with_foreach(mut self, target: crate::foreach::ForeachTarget) -> RowWriter {
        self.foreach = Some(target);
        self
    }

    /// The producer ends batch / epoch `id` (before telling the sink actor): a forEach writer
    /// with `id` open is closed.
    pub fn end(&mut self, id: u64) {
        if let Some(f) = &mut self.foreach {
            f.end(id);
        }
    }

    /// This writer with the message columns `message` (Kafka sinks).
    pub fn with_message_columns(mut self, message: MessageColumns) -> RowWriter {
        self.message = message;
        self
    }

    /// Appends `rows` to batch / epoch `id`: formats them, then writes them under the sink's
    /// lock. `created_ns[i]` is the creation instant (monotonic ns, 0: unknown) of the record
    /// that produced row `i`, for latency; it may be shorter than `rows` or empty.
    ///
    /// # Errors
    /// The sink's error for the first row it cannot write (the run then fails with exit 1).
    pub fn write(&mut self, id: u64, rows: &[Row], created_ns: &[u64]) -> Result<(), ConnectorError> {
        let started = self.metrics.enabled().then(Instant::now);
        if let Some(f) = &mut self.foreach {
            f.write(id, &self.names, rows)?;
            if started.is_some() {
                self.metrics.records_out.increment(rows.len() as u64);
            }
            return Ok(());
        }
        self.lines.clear();
        self.line_ends.clear();
        self.keys.clear();
        self.key_ends.clear();
        for row in rows {
            match self.message.value {
                None => self.format.write(&mut self.lines, row),
                Some(v) => {
                    if let Some(text) = row[v].as_str() {
                        self.lines.push_str(text);
                    }
                }
            }
            self.line_ends.push(self.lines.len());
            if let Some(k) = self.message.key {
                let end = row[k].as_str().map(|text| {
                    self.keys.push_str(text);
                    self.keys.len()
                });
                self.key_ends.push(end);
            } else if !self.key.is_empty() {
                self.key_values.clear();
                self.key_values.extend(self.key.iter().map(|&k| row[k].clone()));
                self.key_format.write(&mut self.keys, &self.key_values);
                self.key_ends.push(Some(self.keys.len()));
            }
        }
        {
            let mut sink = lock(&self.sink)?;
            let (mut from, mut key_from) = (0, 0);
            for (i, &end) in self.line_ends.iter().enumerate() {
                let key = self.key_ends.get(i).copied().flatten().map(|e| {
                    let k = &self.keys[key_from..e];
                    key_from = e;
                    k
                });
                sink.write(id, &self.lines[from..end], key)?;
                from = end;
                if let (Some(rec), Some(&c)) = (self.latency.as_ref(), created_ns.get(i))
                    && c != 0
                {
                    rec.record_ns(eddy_connectors::monotonic_ns().saturating_sub(c));
                }
            }
            sink.written()?;
        }
        if let Some(t) = started {
            self.metrics.records_out.increment(rows.len() as u64);
            let now = eddy_connectors::monotonic_ns();
            // One row in LATENCY_SAMPLE_EVERY, counted across calls.
            let skip = (LATENCY_SAMPLE_EVERY - self.sampled % LATENCY_SAMPLE_EVERY) % LATENCY_SAMPLE_EVERY;
            for &c in created_ns.iter().skip(skip).step_by(LATENCY_SAMPLE_EVERY).filter(|&&c| c != 0) {
                self.metrics.source_to_sink_latency.record(now.saturating_sub(c) as f64 / 1e9);
            }
            self.sampled = self.sampled.wrapping_add(created_ns.len());
            self.metrics.stage_sink.record(t.elapsed().as_secs_f64());
        }
        Ok(())
    }
}

/// The dead letter of a record the operator refused: `{"reason": ..., "source": "query",
/// "record": ...}` as a malformed record's (PIPELINE.md), the record being the JSON line of its
/// columns (the late sink's form), as a string; an output row on which an output step failed
/// has the field of that step (`"source": "query.sql"` for a SQL query's HAVING or select list,
/// `"sink.select"` for the sink's) and the row before the output steps.
fn rejected_line(names: &[String], source: &str, r: &eddy_engine::operator::Rejected) -> String {
    let record = row_to_json_line(names, &r.record.values);
    let mut line = String::with_capacity(record.len() + r.reason.len() + 48);
    line.push_str("{\"reason\": ");
    write_string(&mut line, &r.reason);
    line.push_str(", \"source\": ");
    write_string(&mut line, source);
    line.push_str(", \"record\": ");
    write_string(&mut line, record.trim_end());
    line.push('}');
    line
}

/// The sink actor's wiring.
pub struct SinkActor {
    /// The main sink (rows are appended by the partition actors' [`RowWriter`]s).
    pub sink: SharedSink,
    /// Where late records go, with the input column names.
    pub late: Option<(Box<dyn Sink>, Vec<String>)>,
    /// Where dead letters go.
    pub dead_letter: Option<Box<dyn Sink>>,
    /// The query's input column names (records the operator refused are written with them).
    pub input_names: Vec<String>,
    /// The query's output column names before the sink's `select` (rows whose select failed
    /// are written with them).
    pub query_output_names: Vec<String>,
    /// Producers that end each batch / epoch (partition actors + the source).
    pub producers: usize,
    /// Input.
    pub input: Receiver<ToSink>,
    /// Commits are reported here.
    pub coordinator: Sender<ToCoordinator>,
    /// Metric handles (no-ops without `[metrics]`): late records and commit times.
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
        f.debug_struct("SinkActor").field("producers", &self.producers).finish()
    }
}

impl SinkActor {
    /// Runs until every producer is done; reports a failure to the coordinator.
    pub fn run(mut self) {
        if let Err((output, e)) = self.run_inner() {
            // The coordinator may be gone when the whole run is stopping anyway.
            let _ = self.coordinator.send(ToCoordinator::Failed(format!("{output}: {e}")));
        }
        // As above: a missing coordinator means the run is over.
        let _ = self.coordinator.send(ToCoordinator::SinkDone);
    }

    fn run_inner(&mut self) -> Result<(), Failure> {
        let mut ends: BTreeMap<u64, usize> = BTreeMap::new();
        let mut rows_in: BTreeMap<u64, u64> = BTreeMap::new();
        let mut done = 0usize;
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
                ToSink::Late { id, records } => {
                    self.metrics.records_late.increment(records.len() as u64);
                    if let Some(c) = &self.counters {
                        c.late.fetch_add(records.len() as u64, std::sync::atomic::Ordering::Relaxed);
                    }
                    if let Some((sink, names)) = self.late.as_mut() {
                        for r in &records {
                            let l = row_to_json_line(names, &r.values);
                            sink.write(id, l.trim_end(), None).map_err(at("late_sink"))?;
                        }
                        sink.written().map_err(at("late_sink"))?;
                    }
                }
                ToSink::Rejected { id, fields, records } => {
                    // Counted with the malformed records (`eddy_records_malformed_total`, the run's
                    // `malformed=`), as SQL.md counts a record whose expression fails.
                    if let Some(c) = &self.counters {
                        c.malformed.fetch_add(records.len() as u64, std::sync::atomic::Ordering::Relaxed);
                    }
                    if let Some(first) = records.first() {
                        tracing::warn!(
                            records = records.len(),
                            first_reason = %first.reason,
                            dead_letter = self.dead_letter.is_some(),
                            "records refused by the query (sent to the dead letters when the pipeline has a [dead_letter])"
                        );
                    }
                    if let Some(sink) = self.dead_letter.as_mut() {
                        // output rows carry the field of the step that failed; the operator's
                        // refusals are the query's
                        let names = if fields.is_empty() { &self.input_names } else { &self.query_output_names };
                        for (i, r) in records.iter().enumerate() {
                            let source = fields.get(i).map_or("query", |f| &**f);
                            sink.write(id, &rejected_line(names, source, r), None).map_err(at("dead_letter"))?;
                        }
                        sink.written().map_err(at("dead_letter"))?;
                    }
                }
                ToSink::ChainRejected { id, lines } => {
                    // counted as ToSink::Rejected's records are
                    if let Some(c) = &self.counters {
                        c.malformed.fetch_add(lines.len() as u64, std::sync::atomic::Ordering::Relaxed);
                    }
                    if let Some(first) = lines.first() {
                        tracing::warn!(
                            rows = lines.len(),
                            first = %first,
                            dead_letter = self.dead_letter.is_some(),
                            "rows a chained query could not take between its aggregations (sent to the dead letters \
                             when the pipeline has a [dead_letter])"
                        );
                    }
                    if let Some(sink) = self.dead_letter.as_mut() {
                        for l in &lines {
                            sink.write(id, l, None).map_err(at("dead_letter"))?;
                        }
                        sink.written().map_err(at("dead_letter"))?;
                    }
                }
                ToSink::DeadLetters { id, lines } => {
                    if let Some(sink) = self.dead_letter.as_mut() {
                        for l in &lines {
                            sink.write(id, l, None).map_err(at("dead_letter"))?;
                        }
                        sink.written().map_err(at("dead_letter"))?;
                    }
                }
                ToSink::End { id, rows } => {
                    *rows_in.entry(id).or_default() += rows;
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
                ToSink::Done { leftovers } => {
                    for (id, rows) in leftovers {
                        *rows_in.entry(id).or_default() += rows;
                    }
                    done += 1;
                }
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
    ) -> Result<(), Failure> {
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
    fn prepare(&mut self, id: u64, rows: u64, awaiting: &mut VecDeque<(u64, u64)>) -> Result<(), Failure> {
        // The wait (Kafka: the broker's acknowledgements) runs without the sink's lock, so the
        // partition actors go on writing the next epoch's rows meanwhile.
        let wait = lock(&self.sink).and_then(|mut s| s.prepare_begin(id)).map_err(at("sink"))?;
        if let Some(wait) = wait {
            wait().map_err(at("sink"))?;
        }
        if let Some((s, _)) = self.late.as_mut() {
            s.prepare(id).map_err(at("late_sink"))?;
        }
        if let Some(s) = self.dead_letter.as_mut() {
            s.prepare(id).map_err(at("dead_letter"))?;
        }
        awaiting.push_back((id, rows));
        // A missing coordinator means the run is over; the batch then stays prepared only.
        let _ = self.coordinator.send(ToCoordinator::Prepared { id, rows });
        Ok(())
    }

    /// Second phase: commits the prepared batches up to `id`; `false` on [`SinkCommand::Abort`].
    fn on_command(&mut self, cmd: SinkCommand, awaiting: &mut VecDeque<(u64, u64)>) -> Result<bool, Failure> {
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

    fn commit(&mut self, id: u64, rows: u64) -> Result<(), Failure> {
        let started = self.metrics.enabled().then(Instant::now);
        lock(&self.sink).and_then(|mut s| s.commit(id)).map_err(at("sink"))?;
        if let Some((s, _)) = self.late.as_mut() {
            s.commit(id).map_err(at("late_sink"))?;
        }
        if let Some(s) = self.dead_letter.as_mut() {
            s.commit(id).map_err(at("dead_letter"))?;
        }
        if let Some(t) = started {
            self.metrics.stage_commit.record(t.elapsed().as_secs_f64());
        }
        // The coordinator may have stopped first during a failure; the commit itself is done.
        let _ = self.coordinator.send(ToCoordinator::Committed { id, rows });
        Ok(())
    }
}

/// A failure of the sink actor: the output that failed (`sink`, `late_sink`, `dead_letter`, the
/// pipeline's section) and its error.
type Failure = (&'static str, ConnectorError);

/// Tags an error of `output` (see [`Failure`]).
fn at(output: &'static str) -> impl Fn(ConnectorError) -> Failure {
    move |e| (output, e)
}

#[cfg(test)]
mod tests {
    //! The sinks here are test doubles inside a unit test: a recording sink and a failing one.
    use super::*;
    use eddy_engine::Value;

    /// One write: (batch, line, key).
    type Write = (u64, String, Option<String>);

    /// Keeps every write.
    #[derive(Default)]
    struct Recording(Arc<Mutex<Vec<Write>>>);

    impl Sink for Recording {
        fn write(&mut self, batch_id: u64, line: &str, key: Option<&str>) -> Result<(), ConnectorError> {
            self.0.lock().unwrap().push((batch_id, line.to_owned(), key.map(str::to_owned)));
            Ok(())
        }
        fn commit(&mut self, _batch_id: u64) -> Result<(), ConnectorError> {
            Ok(())
        }
    }

    struct Failing;

    impl Sink for Failing {
        fn write(&mut self, _batch_id: u64, _line: &str, _key: Option<&str>) -> Result<(), ConnectorError> {
            Err(ConnectorError::External("disk full".into()))
        }
        fn commit(&mut self, _batch_id: u64) -> Result<(), ConnectorError> {
            Ok(())
        }
    }

    fn names() -> Arc<[String]> {
        vec!["user".to_owned(), "n".to_owned()].into()
    }

    #[test]
    fn rows_from_several_writers_all_reach_the_shared_sink_with_their_keys() {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let sink: SharedSink = Arc::new(Mutex::new(Box::new(Recording(seen.clone()))));
        let threads: Vec<_> = (0..3i64)
            .map(|t| {
                let mut w = RowWriter::new(sink.clone(), names(), vec![0], None, Metrics::disabled(3));
                std::thread::spawn(move || {
                    for i in 0..100i64 {
                        let row = vec![Value::Str(format!("u{t}").into()), Value::Long(i)];
                        w.write(7, &[row], &[]).unwrap();
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        let seen = seen.lock().unwrap();
        assert_eq!(seen.len(), 300);
        for t in 0..3 {
            // Each writer's rows arrive whole and in its order, keyed by the `user` column.
            let mine: Vec<_> = seen.iter().filter(|(_, l, _)| l.contains(&format!("\"u{t}\""))).collect();
            let expected: Vec<String> = (0..100).map(|i| format!("{{\"user\": \"u{t}\", \"n\": {i}}}")).collect();
            assert_eq!(mine.iter().map(|(_, l, _)| l.clone()).collect::<Vec<_>>(), expected);
            assert!(mine.iter().all(|(b, _, k)| *b == 7 && k.as_deref() == Some(&*format!("{{\"user\": \"u{t}\"}}"))));
        }
    }

    #[test]
    fn a_failing_sink_is_an_error_for_the_writer() {
        let sink: SharedSink = Arc::new(Mutex::new(Box::new(Failing)));
        let mut w = RowWriter::new(sink, names(), Vec::new(), None, Metrics::disabled(1));
        let e = w.write(0, &[vec![Value::Str("a".into()), Value::Long(1)]], &[]).unwrap_err();
        assert!(e.to_string().contains("disk full"), "{e}");
    }
}
